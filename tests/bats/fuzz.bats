#!/usr/bin/env bats
# fuzz.bats - every decoder of outside bytes survives libFuzzer: the committed
# corpora (tests/fuzz/corpus, from real traffic: make fuzz-corpus) and every
# crash found so far (tests/fuzz/crashes) replay cleanly, and each target
# fuzzes a while without a finding.
# SPDX-License-Identifier: BSD-3-Clause
#
# `make fuzz-build` builds into a private build folder (B=...), so this file
# never touches the objects or .make-settings of the build under test.

load "$BATS_TEST_DIRNAME/../lib/helpers"

setup_file() {
  export FUZZ_B="$BATS_FILE_TMPDIR/b"
  cd "$PIO_SRC" || return 1
  make --no-print-directory fuzz-build B="$FUZZ_B" >"$BATS_FILE_TMPDIR/make.log" 2>&1 \
    || { cat "$BATS_FILE_TMPDIR/make.log" >&3; return 1; }
}

setup() { cd "$PIO_SRC"; }

FUZZ_ALL="wire fstream win config relay pcp pfs gas viz"

@test "make fuzz-build builds every fuzz target and the seed generator" {
  for t in $FUZZ_ALL seeds; do
    [ -x "$FUZZ_B/fuzz/fuzz_$t" ] || fail "no fuzz_$t"
  done
  # a second make has nothing to do
  run make --no-print-directory fuzz-build B="$FUZZ_B"
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
           P_INFO P_QOS H_HELLO H_REGISTRY H_REQUEST H_REPLY H_DONE H_BYE C_HELLO C_CHALLENGE \
           C_PROOF C_ACCEPT C_DATA C_ACK; do
    [ -s "$corpus/$t.bin" ] || fail "no seed for $t"
  done
  # files given as arguments are run once each: every seed round-trips
  run "$FUZZ_B/fuzz/fuzz_wire" "$corpus"/*.bin
  assert_success
}

@test "the seeded fuzzer runs 10 s without a finding" {
  corpus="$BATS_TEST_TMPDIR/corpus"
  mkdir -p "$corpus"
  "$FUZZ_B/fuzz/fuzz_seeds" "$corpus" >/dev/null
  run "$FUZZ_B/fuzz/fuzz_wire" -max_total_time=10 -timeout=5 -print_final_stats=1 \
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

# fuzz_10s TARGET SEED MAGIC: 10 s of TARGET from an empty corpus, no
# finding, and the corpus it grew holds an input with MAGIC (it got past the
# decoder's first check)
fuzz_10s() {
  [ -x "$FUZZ_B/fuzz/$1" ]
  corpus="$BATS_TEST_TMPDIR/$1"
  mkdir -p "$corpus"
  run "$FUZZ_B/fuzz/$1" -max_total_time=10 -timeout=5 -seed="$2" \
      -artifact_prefix="$BATS_TEST_TMPDIR/" "$corpus"
  echo "$output" | grep -E '^Done' | sed 's/^/# /' >&3 || true
  assert_success
  assert_output --regexp "Done [0-9]+ runs in"
  grep -rl "$3" "$corpus" >/dev/null
}

@test "the pcp message decoder: 10 s of fuzzing from an empty corpus, no finding, and it gets past the magic" {
  fuzz_10s fuzz_pcp 7 PCP2
}

@test "the visualization feed's decoders: 10 s of fuzzing from an empty corpus, no finding" {
  fuzz_10s fuzz_viz 11 PVZ1
}

@test "the pfs message decoder: 10 s of fuzzing from an empty corpus, no finding, and it gets past the magic" {
  fuzz_10s fuzz_pfs 13 PFS1
}

@test "the GAS frame decoder: 10 s of fuzzing from an empty corpus, no finding, and it gets past the magic" {
  fuzz_10s fuzz_gas 17 GAS1
}

# replay TARGET MIN: the committed corpus of TARGET holds at least MIN inputs
# and, with every crash input kept so far, runs through the target cleanly
replay() {
  local t=$1 min=$2 corpus="$PIO_SRC/tests/fuzz/corpus/$1" crashes="$PIO_SRC/tests/fuzz/crashes/$1"
  local n
  n=$(find "$corpus" -type f 2>/dev/null | wc -l)
  [ "$n" -ge "$min" ] || fail "corpus of $t has $n inputs (want >= $min): make fuzz-corpus"
  local files=("$corpus"/*)
  [ -d "$crashes" ] && [ -n "$(ls -A "$crashes")" ] && files+=("$crashes"/*)
  run "$FUZZ_B/fuzz/fuzz_$t" -runs=0 -timeout=10 "${files[@]}"
  echo "# $t: ${#files[@]} inputs replayed" >&3
  assert_success
  [ "$(grep -c '^Running: ' <<<"$output")" -eq "${#files[@]}" ] || fail "not every input ran"
}

@test "corpus replay: wire (control, express lane, data-channel frames and handshake)" { replay wire 20; }
@test "corpus replay: fstream (the process plane and express lane streams)" { replay fstream 10; }
@test "corpus replay: win (one-sided window control messages)" { replay win 3; }
@test "corpus replay: config (piod.conf files)" { replay config 2; }
@test "corpus replay: relay (members' relay headers)" { replay relay 1; }
@test "corpus replay: pcp (the file service and pcp)" { replay pcp 5; }
@test "corpus replay: pfs (metadata and I/O server requests)" { replay pfs 10; }
@test "corpus replay: gas (the GAS dispatcher's frames)" { replay gas 2; }
@test "corpus replay: viz (the visualization feed)" { replay viz 2; }

# fuzz_corpus_6s TARGET: 6 s from the committed corpus, no finding
fuzz_corpus_6s() {
  local work="$BATS_TEST_TMPDIR/$1"
  mkdir -p "$work"
  run "$FUZZ_B/fuzz/fuzz_$1" -max_total_time=6 -timeout=5 -seed=3 \
      -artifact_prefix="$BATS_TEST_TMPDIR/" "$work" "$PIO_SRC/tests/fuzz/corpus/$1"
  echo "$output" | grep -E '^Done' | sed "s/^/# $1: /" >&3 || true
  assert_success
  assert_output --regexp "Done [0-9]+ runs in"
}

@test "the config parsers: 6 s of fuzzing from the corpus, no finding" { fuzz_corpus_6s config; }
@test "the window control messages: 6 s of fuzzing from the corpus, no finding" { fuzz_corpus_6s win; }
@test "the relay header: 6 s of fuzzing from the corpus, no finding" { fuzz_corpus_6s relay; }
@test "the frame stream: 6 s of fuzzing from the corpus, no finding" { fuzz_corpus_6s fstream; }
