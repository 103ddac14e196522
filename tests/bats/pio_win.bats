#!/usr/bin/env bats
# pio_win.bats - one-sided access (PIO_Win_*, PIO_Get/Put, atomics) between
# processes of one host, over UCX's default transports (shared memory) and
# over UCX's tcp (get and atomics emulated, served by libpio's progress
# thread), and between two test-bed hosts; a window freed under a get.
# SPDX-License-Identifier: BSD-3-Clause

load "$BATS_TEST_DIRNAME/../lib/helpers"
load "$BATS_TEST_DIRNAME/../lib/piod"

WIN=$PIO_BUILD/tests/prog/pio-win
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 --bind-to none)

setup() {
  [ -x "$WIN" ] || fail "not built: run make"
}

teardown() {
  pio_cleanup
}

# win NP ARGS...: pio-win with NP processes on piod A
win() {
  local np=$1
  shift
  PIO_SOCKET=$PIO_SOCK_A timeout 300 "${MPIRUN[@]}" -np "$np" "$WIN" "$@" </dev/null
}

@test "4 processes, shared memory: get and put of 1 B .. 64 MiB, every byte checked; past the end refused" {
  pio_pair_loopback "$BATS_TEST_TMPDIR" 1
  run win 4 rw $((64 << 20))
  echo "$output"
  assert_success
  [ "$(grep -c '^OK rw' <<<"$output")" -eq 4 ]
  refute_output --partial FAIL
}

@test "2 processes over UCX's tcp (emulated get: the owner never calls anything): 1 B .. 64 MiB" {
  pio_pair_loopback "$BATS_TEST_TMPDIR" 1
  UCX_TLS=tcp run win 2 rw $((64 << 20))
  echo "$output"
  assert_success
  [ "$(grep -c '^OK rw' <<<"$output")" -eq 2 ]
}

@test "8 processes x 10,000 fetch-and-add on one word end at the exact sum; a compare-and-swap lock guards a counter" {
  pio_pair_loopback "$BATS_TEST_TMPDIR" 1
  run win 8 atomics 10000 300
  echo "$output"
  assert_success
  assert_output --partial "OK atomics: fetch-and-add sum 80000 = 8 x 10000; locked counter 2400 = 8 x 300"
  UCX_TLS=tcp run win 4 atomics 2000 100
  echo "$output"
  assert_success
  assert_output --partial "OK atomics: fetch-and-add sum 8000 = 4 x 2000; locked counter 400 = 4 x 100"
}

@test "a window freed while a get of it is in flight: the getter gets PIO_EWINFREED (or the whole data), never stale bytes or a crash" {
  pio_pair_loopback "$BATS_TEST_TMPDIR" 1
  UCX_TLS=tcp run win 2 freed $((64 << 20))
  echo "$output"
  assert_success
  assert_output --partial "OK freed rank 0: window freed"
  assert_output --regexp "OK freed rank 1: the get in flight ended with PIO_(OK|EWINFREED), the next with PIO_EWINFREED"
}

@test "two test-bed hosts (UCX over tcp on the links): a client reads, writes and adds into a server's window" {
  local bed
  bed=$(pio_unique_name pw)
  pio_bed_up "$bed" --hosts 2 --links 1 >/dev/null
  pio_pair_testbed "$BATS_TEST_TMPDIR" "$bed" 1
  # UCX lists only interfaces that are up and running when a process
  # starts: on a fresh bed the link's carrier can lag, and a client that
  # saw only lo failed ("no active messages transport ... tcp/lo")
  local h
  for h in h1 h2; do
    pio_wait_until 20 "$PIO_TESTBED" exec "$bed" "$h" grep -qx 1 /sys/class/net/eth0/carrier
  done
  # UCX_TLS=tcp: UCX would otherwise take shared memory between the
  # namespaces and bypass the links
  pio_spawn "$BATS_TEST_TMPDIR/srv.log" "$PIO_TESTBED" exec "$bed" h2 env UCX_TLS=tcp \
    PIO_APP=winsrv PIO_SOCKET="$PIO_SOCK_B" "$WIN" serve $((64 << 20)) >/dev/null
  pio_wait_until 20 grep -q serving "$BATS_TEST_TMPDIR/srv.log"
  run "$PIO_TESTBED" exec "$bed" h1 env UCX_TLS=tcp PIO_APP=wincli PIO_SOCKET="$PIO_SOCK_A" \
    timeout 300 "$WIN" client winsrv $((64 << 20))
  echo "$output"
  assert_success
  assert_output --partial "OK client"
  pio_wait_until 20 grep -q "OK serve: word 0 is 4242" "$BATS_TEST_TMPDIR/srv.log"
}

@test "remote pread (PIO_Rfile): 300 random offsets and sizes, and lists of ranges read at once, equal a local pread, byte for byte; errors are clear" {
  local exp=$BATS_TEST_TMPDIR/export
  mkdir -p "$exp/d"
  head -c $((96 << 20)) /dev/urandom >"$exp/d/data.bin"
  PIO_PIOD_FLAGS="${PIO_PIOD_FLAGS:-} --export $exp" pio_pair_loopback "$BATS_TEST_TMPDIR" 2
  RREAD=$PIO_BUILD/tests/prog/pio-rread
  for tls in tcp all; do
    UCX_TLS=$tls PIO_SOCKET=$PIO_SOCK_A run timeout 300 "$RREAD" check B d/data.bin "$exp/d/data.bin" 300
    echo "UCX_TLS=$tls: $output"
    assert_success
    assert_output --partial "OK check: 300 reads and 40 lists of 24 ranges"
  done
  # 4 KiB reads at random offsets, 16 at a time through PIO_Rfile_readlist
  PIO_SOCKET=$PIO_SOCK_A UCX_TLS=tcp run timeout 120 "$RREAD" random B d/data.bin 4096 800 16
  echo "$output"
  assert_success
  assert_output --partial "OK random 4096 x16: 800 reads"
  PIO_SOCKET=$PIO_SOCK_A UCX_TLS=tcp run timeout 120 "$RREAD" seq B d/data.bin $((128 << 10))
  echo "$output"
  assert_success
  assert_output --partial "OK seq 131072: $((96 << 20)) bytes"
  PIO_SOCKET=$PIO_SOCK_A run timeout 60 "$RREAD" error B d/nothing.bin
  assert_output --partial "OK error: PIO_ENOENT"
  PIO_SOCKET=$PIO_SOCK_A run timeout 60 "$RREAD" error B ../../etc/passwd
  assert_output --regexp "OK error: PIO_E(PERM|INVAL).*leaves the export root"
  PIO_SOCKET=$PIO_SOCK_A run timeout 60 "$RREAD" error B d
  assert_output --partial "is a directory"
}
