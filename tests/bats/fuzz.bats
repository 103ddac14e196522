#!/usr/bin/env bats
# fuzz.bats - the wire decoder, the pcp message and the viz feed decoders survive libFuzzer.
# SPDX-License-Identifier: BSD-3-Clause
#
# `make fuzz` builds into a private build folder (B=...), so this file never
# touches the objects or .make-settings of the build under test.

load "$BATS_TEST_DIRNAME/../lib/helpers"

setup_file() {
  export FUZZ_B="$BATS_FILE_TMPDIR/b"
  cd "$PIO_SRC" || return 1
  make --no-print-directory fuzz B="$FUZZ_B" >"$BATS_FILE_TMPDIR/make.log" 2>&1 \
    || { cat "$BATS_FILE_TMPDIR/make.log" >&3; return 1; }
}

setup() { cd "$PIO_SRC"; }

@test "make fuzz builds the wire fuzzer and the seed generator" {
  [ -x "$FUZZ_B/fuzz/fuzz_wire" ]
  [ -x "$FUZZ_B/fuzz/fuzz_seeds" ]
  # a second make has nothing to do
  run make --no-print-directory fuzz B="$FUZZ_B"
  assert_success
  refute_output --partial "FUZZ"
}

@test "the seed corpus has a valid frame of every type and replays cleanly" {
  corpus="$BATS_TEST_TMPDIR/corpus"
  mkdir -p "$corpus"
  run "$FUZZ_B/fuzz/fuzz_seeds" "$corpus"
  assert_success
  for t in P_HELLO P_WELCOME P_BYE P_PARTNER P_PARTNER_INFO P_SEND P_SEND_DATA P_RELEASE \
           P_SEND_DONE P_MSG_NEW P_MSG_DATA P_CLAIM P_FREE P_CONSUMED P_EVENT P_INFO_REQ \
           P_INFO H_HELLO H_REGISTRY H_REQUEST H_REPLY H_DONE H_BYE C_HELLO C_CHALLENGE \
           C_PROOF C_ACCEPT C_DATA C_ACK; do
    [ -s "$corpus/$t.bin" ] || fail "no seed for $t"
  done
  # files given as arguments are run once each: every seed round-trips
  run "$FUZZ_B/fuzz/fuzz_wire" "$corpus"/*.bin
  assert_success
}

@test "the seeded fuzzer runs 20 s without a finding" {
  corpus="$BATS_TEST_TMPDIR/corpus"
  mkdir -p "$corpus"
  "$FUZZ_B/fuzz/fuzz_seeds" "$corpus" >/dev/null
  run "$FUZZ_B/fuzz/fuzz_wire" -max_total_time=20 -timeout=5 -print_final_stats=1 \
      -artifact_prefix="$BATS_TEST_TMPDIR/" "$corpus"
  echo "$output" | grep -E '^(Done|stat::(number_of_executed|average_exec))' | sed 's/^/# /' >&3 || true
  assert_success
  assert_output --regexp "Done [0-9]+ runs in"
}

@test "1000 random inputs from an empty corpus pass" {
  corpus="$BATS_TEST_TMPDIR/empty"
  mkdir -p "$corpus"
  run "$FUZZ_B/fuzz/fuzz_wire" -runs=1000 -seed=1 -timeout=5 \
      -artifact_prefix="$BATS_TEST_TMPDIR/" "$corpus"
  assert_success
  assert_output --partial "Done 1000 runs"
}

# fuzz_15s TARGET SEED MAGIC: 15 s of TARGET from an empty corpus, no
# finding, and the corpus it grew holds an input with MAGIC (it got past the
# decoder's first check)
fuzz_15s() {
  [ -x "$FUZZ_B/fuzz/$1" ]
  corpus="$BATS_TEST_TMPDIR/$1"
  mkdir -p "$corpus"
  run "$FUZZ_B/fuzz/$1" -max_total_time=15 -timeout=5 -seed="$2" \
      -artifact_prefix="$BATS_TEST_TMPDIR/" "$corpus"
  echo "$output" | grep -E '^Done' | sed 's/^/# /' >&3 || true
  assert_success
  assert_output --regexp "Done [0-9]+ runs in"
  grep -rl "$3" "$corpus" >/dev/null
}

@test "the pcp message decoder: 15 s of fuzzing from an empty corpus, no finding, and it gets past the magic" {
  fuzz_15s fuzz_pcp 7 PCP2
}

@test "the visualization feed's decoders: 15 s of fuzzing from an empty corpus, no finding" {
  fuzz_15s fuzz_viz 11 PVZ1
}

@test "the pfs message decoder: 15 s of fuzzing from an empty corpus, no finding, and it gets past the magic" {
  fuzz_15s fuzz_pfs 13 PFS1
}

@test "the GAS frame decoder: 15 s of fuzzing from an empty corpus, no finding, and it gets past the magic" {
  fuzz_15s fuzz_gas 17 GAS1
}
