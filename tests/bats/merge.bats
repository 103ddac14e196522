#!/usr/bin/env bats
# merge.bats - remote merged output (PIO_File_*): MPI ranks write blocks, one
# file appears on the other host, through its file service.
# SPDX-License-Identifier: BSD-3-Clause
#
# A piod pair on loopback; B exports a folder. examples/merged_output runs
# under mpirun on A's side.

load "$BATS_TEST_DIRNAME/../lib/helpers"
case $PIO_BUILD in *asan*) export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 ;; esac
load "$BATS_TEST_DIRNAME/../lib/piod"

EX=$PIO_BUILD/examples

setup() {
  [ -x "$EX/merged_output" ] || fail "examples not built: run make"
  EXP=$BATS_TEST_TMPDIR/export
  mkdir -p "$EXP"
  PIO_PIOD_FLAGS="${PIO_PIOD_FLAGS:-} --export $EXP" pio_pair_loopback "$BATS_TEST_TMPDIR" 2
  export PIO_SOCKET=$PIO_SOCK_A
}

teardown() {
  pio_cleanup
}

@test "8 ranks x 100 blocks of random sizes at random offsets: the remote file equals the local one" {
  mkdir "$EXP/out"
  run timeout 120 mpirun --oversubscribe --mca mpi_yield_when_idle 1 -np 8 "$EX/merged_output" B out/merged.bin \
    --random 42 --blocks 100 --local "$BATS_TEST_TMPDIR/local.bin" </dev/null
  echo "$output"
  assert_success
  assert_output --partial "OK merged_output: 8 processes, 800 blocks"
  cmp "$BATS_TEST_TMPDIR/local.bin" "$EXP/out/merged.bin"
  [ -z "$(find "$EXP" -name '*.pcp-part')" ]
}

@test "the original experiment: 4 processes write a 1 MB block 10 times, one 40 MB file" {
  run timeout 120 mpirun --oversubscribe --mca mpi_yield_when_idle 1 -np 4 "$EX/merged_output" B exp.bin \
    --local "$BATS_TEST_TMPDIR/exp.local" </dev/null
  echo "$output"
  assert_success
  [ "$(stat -c %s "$EXP/exp.bin")" -eq 40000000 ]
  cmp "$BATS_TEST_TMPDIR/exp.local" "$EXP/exp.bin"
}

@test "a path out of the export is refused on every rank" {
  run timeout 60 mpirun --oversubscribe --mca mpi_yield_when_idle 1 -np 2 "$EX/merged_output" B ../escape.bin </dev/null
  assert_failure
  assert_output --partial "permission denied"
  [ ! -e "$BATS_TEST_TMPDIR/escape.bin" ]
}

@test "a folder that does not exist there: a clear error on every rank, nothing written" {
  run timeout 60 mpirun --oversubscribe --mca mpi_yield_when_idle 1 -np 2 "$EX/merged_output" B nodir/merged.bin </dev/null
  assert_failure
  assert_output --partial "PIO_File_open(host, path, PIO_FILE_RAW, &fh): no such file"
  [ -z "$(ls -A "$EXP")" ]
}

