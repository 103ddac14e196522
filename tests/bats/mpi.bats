#!/usr/bin/env bats
# mpi.bats - the examples over a loopback piod pair: hello, and two MPI jobs coupled by PIO.
# SPDX-License-Identifier: BSD-3-Clause
#
# Each test starts its own pair of piods (systems A and B, two channels, on
# loopback; tests/lib/piod.bash) and stops them in teardown. Application
# processes of system A join through $PIO_SOCK_A, those of B through
# $PIO_SOCK_B. Everything runs under `timeout`, so a hang is a failure with
# the logs printed, not a stuck run.

load "$BATS_TEST_DIRNAME/../lib/helpers"

# Open MPI's dynamically loaded components leak at exit by design (they are
# unloaded before LeakSanitizer reports, so no suppression can name them);
# leak checking stays on for every other test.
case $PIO_BUILD in *asan*) export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 ;; esac
load "$BATS_TEST_DIRNAME/../lib/piod"

EX=$PIO_BUILD/examples

setup() {
  [ -x "$EX/hello" ] && [ -x "$EX/mpi_sim_viz" ] || fail "examples not built: run make"
  pio_pair_loopback "$BATS_TEST_TMPDIR" 2
}

teardown() {
  pio_cleanup
}

@test "hello: one sender and one receiver exchange the greeting" {
  bg_start "$BATS_TEST_TMPDIR/recv.out" env PIO_SOCKET="$PIO_SOCK_B" timeout 60 "$EX/hello" recv
  local rpid=$BG_PID
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 60 "$EX/hello" send
  assert_success
  assert_output 'hello-send: sent "hello from PIO"'
  bg_wait "$rpid"
  run cat "$BATS_TEST_TMPDIR/recv.out"
  [ "$BG_RC" -eq 0 ] || fail "receiver exited $BG_RC: $output"
  assert_output 'hello-recv: received "hello from PIO" (15 bytes) from process 0'
}

@test "hello: a partner that never joins is named in the error" {
  run env PIO_SOCKET="$PIO_SOCK_A" PIO_PARTNER_TIMEOUT=1 timeout 60 "$EX/hello" send
  assert_failure 1
  assert_output --partial "PIO_Setpartner(hello-recv): unknown partner application"
}

@test "mpi_sim_viz: 4 sim ranks send 3 steps to 2 viz ranks, all 12 messages correct" {
  bg_start "$BATS_TEST_TMPDIR/viz.out" env PIO_SOCKET="$PIO_SOCK_B" \
    timeout 120 mpirun --oversubscribe -np 2 "$EX/mpi_sim_viz" viz
  local vpid=$BG_PID
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 120 mpirun --oversubscribe -np 4 "$EX/mpi_sim_viz" sim
  local sim_rc=$status sim_out=$output
  bg_wait "$vpid"
  run cat "$BATS_TEST_TMPDIR/viz.out"
  [ "$sim_rc" -eq 0 ] || fail "sim exited $sim_rc: $sim_out; viz said: $output"
  [ "$BG_RC" -eq 0 ] || fail "viz exited $BG_RC: $output"
  assert_output --partial "viz: received 12 of 12 messages, all correct"
  [[ $sim_out == *"sim: sent 12 of 12 messages"* ]] || fail "sim said: $sim_out"
  # the bundle carried the data: bytes went out on A's channels to B
  run env PIO_SOCKET="$PIO_SOCK_A" "$PIO_BUILD/bin/pio-info" --json
  assert_success
  assert_output --regexp '"tx_bytes": [1-9][0-9]{6,}'
}
