#!/usr/bin/env bats
# pio_classes.bats - receive classes (PIO_Setclasses): the receiving piod
# grants its process's receive space by class share, so a message of one
# class does not wait behind another class's backlog (issue 31, item 3).
# SPDX-License-Identifier: BSD-3-Clause
#
# 2 hosts, 1 link at 8 Mbit/s (1 MB/s): a bulk sender on A sends 1 MiB
# (the link's rate is measured), then queues 9 x 1 MiB (9 s of link) for a
# receiver on B that has posted every receive; once two are in, an urgent
# sender on A sends 256 KiB of the other class. With classes 20:80 the
# urgent message gets a fifth of the grants at once (about 1.5 s, so 1 or 2
# more bulk messages complete first); without, it waits for every bulk
# message ahead of it (the control, which shows the test tells the two
# apart).

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

PROG=$PIO_BUILD/tests/prog/pio-classes

setup_file() {
  [ "$(id -u)" -eq 0 ] || return 0
  export BED
  BED=$(pio_unique_name pq)
  pio_bed_up "$BED" --hosts 2 --links 1 --rate 8mbit >/dev/null
  export PAIR_DIR=$BATS_FILE_TMPDIR/pair
  mkdir -p "$PAIR_DIR"
  pio_pair_testbed "$PAIR_DIR" "$BED" 1
  export PIO_SOCK_A PIO_SOCK_B
}

teardown_file() {
  pio_cleanup
}

setup() {
  pio_need_root
}

# run_classes on|off: the three processes; prints the receiver's line
run_classes() {
  local w=$BATS_TEST_TMPDIR rp bp up
  PIO_SOCKET=$PIO_SOCK_B timeout 60 "$PROG" recv "$1" >"$w/r" 2>&1 &
  rp=$!
  # the bulk sender copies its whole backlog ahead (PIO_SEND_AHEAD: its send
  # region), so all 10 requests wait at B before the urgent one: at the
  # default 4 MiB ahead only 4 or 5 would, and the control would show less
  PIO_SOCKET=$PIO_SOCK_A PIO_LANE_MAX=${CLASSES_LANE_MAX:-0} PIO_LANE_TURNS=0 \
    PIO_SEND_AHEAD=$((32 << 20)) timeout 60 "$PROG" bulk >"$w/b" 2>&1 &
  bp=$!
  PIO_SOCKET=$PIO_SOCK_A timeout 60 "$PROG" urgent >"$w/u" 2>&1 &
  up=$!
  local rc=0
  wait "$rp" || rc=1
  wait "$bp" || rc=1
  wait "$up" || rc=1
  cat "$w/r" "$w/b" "$w/u"
  return $rc
}

@test "with receive classes an urgent message overtakes another class's backlog" {
  # the bulk sender would take a direct lane (lanes on for it)
  CLASSES_LANE_MAX=1048576
  run run_classes on
  assert_success
  assert_output --regexp 'urgent after [234] of 10 bulk'
  grep -q 'rcv:0: 2 receive classes from tag 100' "$PAIR_DIR/B.log"
  # with lanes on the bulk messages would take a direct lane, which
  # passes the piods' grants by: B refuses one to a process with
  # classes (the bulk sender's first send, synchronous, completed after the
  # receiver declared them; the sender may have left by the time the
  # refusal is back, its messages in its piod's hands)
  pio_wait_until 10 grep -q 'direct lane [0-9]* from bulk:0 of A to rcv:0 refused: it has receive classes' \
    "$PAIR_DIR/B.log"
  run grep -c 'direct lane [0-9]* from bulk:0 of A to rcv:0 refused: it has receive classes' \
    "$PAIR_DIR/B.log"
  assert_output 1
}

@test "without receive classes the same urgent message waits behind the backlog (control)" {
  # through the piods, granting in arrival order (on direct lanes, with
  # no classes to refuse them, the two senders would share the link)
  export PIO_LANE_MAX=0
  run run_classes off
  assert_success
  assert_output --regexp 'urgent after ([89]|10) of 10 bulk'
}

@test "PIO_Setclasses refuses bad counts and shares, and needs PIO_Init" {
  run env PIO_SOCKET="$PIO_SOCK_A" "$PROG" args
  assert_success
  assert_output 'OK args'
}
