#!/usr/bin/env bats
# anco.bats - anco, the cooperative read cache, with a job of 8 processes of
# one PIO application on one piod (tests/prog/anco-job.c): random reads of
# a 64 MiB file through 4 MiB caches, every byte checked against the file;
# all processes wanting one block at once (file-system reads per block at
# most the group count); a sequential shared read (blocks loaded ahead,
# file-system reads per block still at most the group count); the two
# published races injected between the
# header and the data of a remote read; a file on another system's file
# service (pio://) as the backing store; bad configuration.
# SPDX-License-Identifier: BSD-3-Clause

load "$BATS_TEST_DIRNAME/../lib/helpers"
load "$BATS_TEST_DIRNAME/../lib/piod"

JOB=$PIO_BUILD/tests/prog/anco-job

setup() {
  [ -x "$JOB" ] || fail "not built: run make"
  W=$BATS_TEST_TMPDIR
  mkdir -p "$W/export"
  head -c $((64 << 20)) /dev/urandom >"$W/export/f64"
  PIO_PIOD_FLAGS="${PIO_PIOD_FLAGS:-} --export $W/export" pio_pair_loopback "$W" 1
  export PIO_SOCKET=$PIO_SOCK_A ANCO_CACHE=4M
}

teardown() {
  pio_cleanup
}

# job NP APP MODE FILE [ARG]: NP processes of application APP; all output in
# $W/APP.out; fails when one process fails
job() {
  local np=$1 app=$2 mode=$3 file=$4 r rc=0
  shift 4
  local pids=()
  for ((r = 0; r < np; r++)); do
    ANCO_APP=$app timeout 240 "$JOB" "$mode" "$file" "$r" "$np" "$@" >"$W/$app.$r" 2>&1 &
    pids+=($!)
  done
  for r in "${pids[@]}"; do wait "$r" || rc=1; done
  cat "$W/$app".[0-9]* >"$W/$app.out"
  cat "$W/$app.out"
  return $rc
}

# total FIELD FILE: the sum of a counter over the processes' stats lines
total() {
  awk -v f="$1" '/^anco: rank/ { for (i = 4; i < NF; i++) if ($i == f) s += $(i + 1) } END { print s + 0 }' "$2"
}

@test "8 processes, random reads of a 64 MiB file through 4 MiB caches: every byte equals the file" {
  job 8 rnd random "$W/export/f64" 100
  [ "$(grep -c 'bytes checked$' "$W/rnd.out")" -eq 8 ]
  refute grep -q MISMATCH "$W/rnd.out"
  # the caches served each other, and evicted (8 x 4 MiB < 64 MiB)
  [ "$(total remote "$W/rnd.out")" -gt 0 ]
  [ "$(total fs "$W/rnd.out")" -gt 0 ]
  [ "$(total evictions "$W/rnd.out")" -gt 0 ]
  [ "$(total uncached "$W/rnd.out")" -eq 0 ]
}

@test "all 8 want the same block at once: file-system reads per block <= groups (1, 2, 4)" {
  local g fs
  for g in 1 2 4; do
    # on demand only: read-ahead would load blocks 16.. past the 16 read
    # (and its own claims are the next test's)
    ANCO_READAHEAD=0 ANCO_GROUPS=$g job 8 same$g same "$W/export/f64" 16
    [ "$(grep -c 'bytes checked$' "$W/same$g.out")" -eq 8 ]
    fs=$(total fs "$W/same$g.out")
    echo "groups $g: $fs file-system reads for 16 blocks"
    [ "$fs" -ge 16 ]
    [ "$fs" -le $((16 * g)) ]
    # everything else came from another process's cache
    [ "$(total remote "$W/same$g.out")" -eq $((8 * 16 - fs)) ]
  done
}

@test "sequential shared read by 8 processes: blocks loaded ahead, file-system reads per block <= groups (1, 2, 4)" {
  local g fs ahead
  head -c $((32 << 20)) "$W/export/f64" >"$W/export/f32"
  for g in 1 2 4; do
    # 36 MiB caches hold the whole file (35 entries): nothing is evicted, so
    # no block is loaded twice by one group because its copies went
    ANCO_CACHE=36M ANCO_GROUPS=$g job 8 seq$g seq "$W/export/f32"
    [ "$(grep -c 'rank .: 33554432 bytes checked$' "$W/seq$g.out")" -eq 8 ]
    refute grep -q MISMATCH "$W/seq$g.out"
    [ "$(total evictions "$W/seq$g.out")" -eq 0 ]
    fs=$(total fs "$W/seq$g.out")
    ahead=$(total ahead "$W/seq$g.out")
    echo "groups $g: $fs file-system reads for 32 blocks, $ahead of them ahead"
    [ "$fs" -ge 32 ]
    [ "$fs" -le $((32 * g)) ]
    # Blocks 0..2 make the run and are loaded on demand. Every later block
    # b is looked at for read-ahead by whoever read block b - 1 before that
    # reader can want b, so its first load is always one ahead: whatever
    # the order the processes run in, at least 29 loads are read-ahead.
    [ "$ahead" -ge 29 ]
    [ "$ahead" -le "$fs" ]
    if [ "$g" -eq 1 ]; then
      # one group, no evictions: each block loaded exactly once
      [ "$fs" -eq 32 ]
      [ "$ahead" -eq 29 ]
    fi
    [ "$(total remote "$W/seq$g.out")" -gt 0 ]
  done
  # read-ahead off: nothing ahead, still one load per block with one group
  ANCO_READAHEAD=0 ANCO_CACHE=36M job 8 seq0 seq "$W/export/f32"
  [ "$(total ahead "$W/seq0.out")" -eq 0 ]
  [ "$(total fs "$W/seq0.out")" -eq 32 ]
  # random reads and strided ones (no pread continues the one before; 16
  # KiB transfers touch every block in order, 4 MiB ones four blocks in a
  # row) never read ahead, with the same cache
  ANCO_CACHE=36M job 8 rnd36 random "$W/export/f32" 40
  [ "$(total ahead "$W/rnd36.out")" -eq 0 ]
  local x
  for x in 16 256 4096; do
    ANCO_CACHE=36M job 8 str$x strided "$W/export/f32" $x
    [ "$(grep -c 'bytes checked$' "$W/str$x.out")" -eq 8 ]
    [ "$(total ahead "$W/str$x.out")" -eq 0 ]
    # the file once in all, each block loaded once (one group, no evictions)
    [ "$(total fs "$W/str$x.out")" -eq 32 ]
  done
}

# race MODE: rank 0 loads block 3; rank 1 reads it from rank 0's cache and,
# between the header and the data, rank 0 refills the entry
race() {
  local mode=$1 pid rc=0
  mkdir -p "$W/$mode"
  ANCO_APP=$mode timeout 120 "$JOB" "$mode" "$W/export/f64" 0 2 "$W/$mode" >"$W/$mode.0" 2>&1 &
  pid=$!
  ANCO_TEST_RACE_DIR=$W/$mode ANCO_APP=$mode timeout 120 "$JOB" "$mode" "$W/export/f64" 1 2 \
    "$W/$mode" >"$W/$mode.1" 2>&1 || rc=1
  wait "$pid" || rc=1
  cat "$W/$mode.0" "$W/$mode.1"
  # the hook fired: rank 1 was in the middle of the read when rank 0 refilled
  [ -f "$W/$mode/go" ]
  [ -f "$W/$mode/done" ]
  refute grep -q MISMATCH "$W/$mode.0" "$W/$mode.1"
  return $rc
}

@test "race 1: the entry is replaced by another block during a remote read: detected (stale), right bytes" {
  race race1
  [ "$(total stale "$W/race1.1")" -ge 1 ]
  grep -q 'rank 1: 2097152 bytes checked$' "$W/race1.1"
}

@test "race 2: the entry is given up and refilled with the same block during a remote read: detected (token), read again" {
  race race2
  [ "$(total retries "$W/race2.1")" -ge 1 ]
  [ "$(total stale "$W/race2.1")" -eq 0 ]
  grep -q 'rank 1: 2097152 bytes checked$' "$W/race2.1"
}

@test "backing store on another system's file service (pio://B/...): 4 processes, bytes equal the file" {
  ANCO_JOB_LOCAL=$W/export/f64 job 4 rf random pio://B/f64 40
  [ "$(grep -c 'bytes checked$' "$W/rf.out")" -eq 4 ]
  [ "$(total fs "$W/rf.out")" -gt 0 ]
  ANCO_JOB_LOCAL=$W/export/f64 ANCO_APP=rf2 run timeout 60 "$JOB" random pio://B/nothing 0 1
  assert_failure
  assert_output --partial "anco_open: no such file"
}

@test "bad configuration and paths: clear errors, nothing read" {
  ANCO_BLOCK=lots ANCO_APP=bad1 run timeout 60 "$JOB" random "$W/export/f64" 0 1
  assert_failure
  assert_output --partial "ANCO_BLOCK=lots: want bytes"
  ANCO_SINGLET=2 ANCO_APP=bad2 run timeout 60 "$JOB" random "$W/export/f64" 0 1
  assert_failure
  assert_output --partial "ANCO_SINGLET=2: want a ratio from 0 to 1"
  ANCO_CACHE=1K ANCO_APP=bad3 run timeout 60 "$JOB" random "$W/export/f64" 0 1
  assert_failure
  assert_output --partial "out of range"
  ANCO_APP=bad4 run timeout 60 "$JOB" random "$W/export" 0 1
  assert_failure
  assert_output --partial "anco_open: invalid argument"
  # more groups than processes: as many groups as processes
  ANCO_GROUPS=8 job 2 g8 random "$W/export/f64" 20
  [ "$(grep -c 'bytes checked$' "$W/g8.out")" -eq 2 ]
}
