#!/usr/bin/env bats
# pio_split.bats - one application whose processes joined different piods (issue 31):
# a message goes to the host where its destination process joined.
# SPDX-License-Identifier: BSD-3-Clause
#
# One pair of piods A and B on loopback (2 channels) serves the whole file. In
# each test, process 0 of a 2-process application joins A and process 1 joins
# B, as the ranks of a job on a cluster join the piod of their own host. The
# test waits until each piod's registry shows the other's process (a message
# sent before that waits where some process of the application is, as it
# always did) and then checks, with tests/prog/pio-split, that process 1
# reaches process 0 and 0 replies through the application's own handle, and
# that a third application reaches each process, from A and from B.

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

SPLIT=$PIO_BUILD/tests/prog/pio-split

setup_file() {
  export PAIR_DIR=$BATS_FILE_TMPDIR/pair
  mkdir -p "$PAIR_DIR"
  pio_pair_loopback "$PAIR_DIR" 2
  export PIO_SOCK_A PIO_SOCK_B
}

teardown_file() {
  pio_cleanup
}

# joined_at SOCK APP SYSTEM: the piod at SOCK knows a joined process of APP
# (2 processes) at its peer SYSTEM.
joined_at() {
  PIO_SOCKET=$1 "$PIO_INFO" --json |
    grep -q "\"name\": \"$2\", \"system\": \"$3\", \"nprocs\": 2, \"joined\": 1"
}

# joined_or_done SOCK APP SYSTEM PID: joined_at, or process PID has already
# exited (the two members can finish their exchange, and leave, before the
# next look at the piod: the join was heard, or the exchange would not have
# gone through)
joined_or_done() {
  joined_at "$1" "$2" "$3" && return 0
  kill -0 "$4" 2>/dev/null && return 1
  return 0
}

# split_members APP [-o OTHER]: process 0 of APP on A, process 1 on B, each
# joined where the other's piod has heard of it; sets M0 and M1 (pids).
split_members() {
  local app=$1; shift
  local m=${PIO_TEST_MULT:-1}
  bg_start "$BATS_TEST_TMPDIR/m0.out" env PIO_SOCKET="$PIO_SOCK_A" timeout $((90 * m)) \
    "$SPLIT" member 0 -a "$app" "$@"
  M0=$BG_PID
  pio_wait_until 10 joined_at "$PIO_SOCK_B" "$app" A
  bg_start "$BATS_TEST_TMPDIR/m1.out" env PIO_SOCKET="$PIO_SOCK_B" timeout $((90 * m)) \
    "$SPLIT" member 1 -a "$app" "$@"
  M1=$BG_PID
  pio_wait_until 10 joined_or_done "$PIO_SOCK_A" "$app" B "$M1"
}

# split_check APP [OTHER]: both members exit 0 and say OK.
split_check() {
  local app=$1 other=${2:-}
  bg_wait "$M0"
  local rc0=$BG_RC
  bg_wait "$M1"
  local rc1=$BG_RC
  run cat "$BATS_TEST_TMPDIR/m0.out" "$BATS_TEST_TMPDIR/m1.out"
  echo "process 0 (rc $rc0), process 1 (rc $rc1): $output"
  assert_output --partial "OK member 0 of $app${other:+, and from $other}"
  assert_output --partial "OK member 1 of $app${other:+, and from $other}"
  [ "$rc0" -eq 0 ]
  [ "$rc1" -eq 0 ]
}

@test "process 1 (joined to B) reaches process 0 (joined to A) of its own application, and 0 replies" {
  split_members sp1
  split_check sp1
}

@test "a third application on A reaches process 0 here and process 1 on B" {
  split_members sp2 -o sp2-o
  run env PIO_SOCKET="$PIO_SOCK_A" timeout $((60 * ${PIO_TEST_MULT:-1})) "$SPLIT" other -a sp2-o \
    -p sp2
  echo "$output"
  assert_success
  assert_output --partial "OK other"
  split_check sp2 sp2-o
}

@test "a third application on B reaches process 0 on A and process 1 here" {
  split_members sp3 -o sp3-o
  run env PIO_SOCKET="$PIO_SOCK_B" timeout $((60 * ${PIO_TEST_MULT:-1})) "$SPLIT" other -a sp3-o \
    -p sp3
  echo "$output"
  assert_success
  assert_output --partial "OK other"
  split_check sp3 sp3-o
}

@test "one-sided: process 0 on A and process 1 on B get and put each other's windows (control messages routed per process)" {
  local m=${PIO_TEST_MULT:-1} w=$PIO_BUILD/tests/prog/pio-win
  bg_start "$BATS_TEST_TMPDIR/w0.out" env UCX_TLS=tcp PIO_APP=spw PIO_TEST_RANK=0 PIO_TEST_SIZE=2 \
    PIO_SOCKET="$PIO_SOCK_A" timeout $((120 * m)) "$w" rw $((1 << 20))
  local w0=$BG_PID
  pio_wait_until 10 joined_at "$PIO_SOCK_B" spw A
  run env UCX_TLS=tcp PIO_APP=spw PIO_TEST_RANK=1 PIO_TEST_SIZE=2 PIO_SOCKET="$PIO_SOCK_B" \
    timeout $((120 * m)) "$w" rw $((1 << 20))
  echo "process 1: $output"
  assert_success
  assert_output --partial "OK rw"
  bg_wait "$w0"
  local rc0=$BG_RC
  run cat "$BATS_TEST_TMPDIR/w0.out"
  echo "process 0 (rc $rc0): $output"
  assert_output --partial "OK rw"
  [ "$rc0" -eq 0 ]
}
