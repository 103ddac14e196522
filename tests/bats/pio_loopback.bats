#!/usr/bin/env bats
# pio_loopback.bats - the PIO API end to end: two piods on loopback, 4 channels each.
# SPDX-License-Identifier: BSD-3-Clause
#
# One pair of piods serves the whole file (setup_file); each test runs a
# receiver (on B) and a sender (on A) of tests/prog/pio-check with its own
# application names, so tests never see each other's messages.

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

CHECK=$PIO_BUILD/tests/prog/pio-check

setup_file() {
  export PAIR_DIR=$BATS_FILE_TMPDIR/pair
  mkdir -p "$PAIR_DIR"
  pio_pair_loopback "$PAIR_DIR" 4
  export PIO_SOCK_A PIO_SOCK_B
}

teardown_file() {
  pio_cleanup
}

# pair TEST NAME [args...]: receiver on B, sender on A; both must print OK.
pair() {
  local test=$1 name=$2; shift 2
  PIO_SOCKET=$PIO_SOCK_B timeout 120 "$CHECK" recv "$test" -a "$name-r" -p "$name-s" "$@" \
    >"$BATS_TEST_TMPDIR/recv.out" 2>&1 &
  local rp=$!
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 120 "$CHECK" send "$test" -a "$name-s" -p "$name-r" "$@"
  local send_status=$status send_out=$output
  wait "$rp"; local recv_status=$?
  echo "sender: $send_out"
  echo "receiver: $(cat "$BATS_TEST_TMPDIR/recv.out")"
  [ "$send_status" -eq 0 ]
  [ "$recv_status" -eq 0 ]
  grep -q '^OK' "$BATS_TEST_TMPDIR/recv.out"
}

@test "4 channels come up both ways and pio-info shows them" {
  run env PIO_SOCKET="$PIO_SOCK_A" pio-info --json
  assert_success
  [ "$(grep -c '"state": "up"' <<<"$output")" -eq 4 ]
  run env PIO_SOCKET="$PIO_SOCK_B" pio-info --count-up
  assert_output 4
}

@test "0 B, 1 B, eager limit -1/0/+1 and 1 MiB arrive intact (blocking)" {
  pair sizes sz1
}

@test "the same sizes in synchronous mode" {
  pair sizes sz2 -m sync
}

@test "PIO_USER(i) puts a message on channel i only (chunk counters); a channel the bundle lacks gives PIO_ECHANNEL" {
  pair channels chn -n 4
}

@test "PIO_STATIC sends process s to process d on channel (s + d) mod K" {
  PIO_SOCKET=$PIO_SOCK_B timeout 60 "$CHECK" recv channels -a stc-r -p stc-s -n 3 \
    >"$BATS_TEST_TMPDIR/r" 2>&1 &
  local rp=$! r
  for r in 1 2 3; do
    run env PIO_SOCKET="$PIO_SOCK_A" timeout 60 "$CHECK" send channels -a stc-s -p stc-r \
      -r "$r" -P 4 -c STATIC
    assert_success
    assert_output --partial "OK channels: STATIC process $r -> process 0 took channel $r"
  done
  wait "$rp" || { cat "$BATS_TEST_TMPDIR/r"; false; }
}

@test "a 1 GiB message arrives intact" {
  pair sizes big -S 1G
}

@test "every datatype, compatible C/Fortran pairs, and PIO_ETYPE / PIO_ETRUNC keep the message" {
  pair types ty
}

@test "wildcards: PIO_ANY_PARTNER, PIO_ANY_PROCESS and PIO_ANY_TAG report the real source and tag" {
  PIO_SOCKET=$PIO_SOCK_B timeout 60 "$CHECK" recv wild -a wd-r -p wd-s -n 2 >"$BATS_TEST_TMPDIR/r" 2>&1 &
  local rp=$!
  PIO_SOCKET=$PIO_SOCK_A timeout 60 "$CHECK" send wild -a wd-s -p wd-r -r 0 -P 2 &
  local s0=$!
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 60 "$CHECK" send wild -a wd-s -p wd-r -r 1 -P 2
  assert_success
  wait "$s0"
  wait "$rp" || { cat "$BATS_TEST_TMPDIR/r"; false; }
  grep -q '^OK wild: 6 messages' "$BATS_TEST_TMPDIR/r"
}

@test "ordering: 10,000 mixed-size messages under DYNAMIC arrive in send order" {
  pair order ord -c DYNAMIC
}

@test "ordering also holds under STATIC and USER balancing" {
  pair order ords -c STATIC -n 2000
  pair order ordu -c USER:3 -n 2000
}

@test "8 threads sending and 8 receiving at once" {
  pair threads th -T 8
}

@test "non-blocking sends and receives complete out of order" {
  pair nonblock nb
}

@test "a large message no receive wants yet (40 MiB, past the send region) does not hold back a later one the receiver waits for" {
  pair backlog bl
  run cat "$BATS_TEST_TMPDIR/recv.out"
  assert_output --partial "OK backlog"
}

@test "24 x 1 MiB sent and complete that no receive wants yet do not hold back a later message the receiver waits for" {
  pair unwanted uw
  run cat "$BATS_TEST_TMPDIR/recv.out"
  assert_output --partial "OK unwanted"
}

@test "a receive times out after its timeout; PIO_Test and PIO_Wait respect it" {
  pair timeout to
}

@test "PIO_Waitany takes the one that completed, PIO_Waitall completes all (a failure too), PIO_Testany, NULL arrays, timeouts, PIO_Getfd readable only with a complete request" {
  pair reqs rq
  run cat "$BATS_TEST_TMPDIR/recv.out"
  assert_output --partial "OK reqs: Waitany, Waitall, Testany and the completion fd"
}

@test "errors: not initialized, no piod, bad arguments, unknown partner, double init" {
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 30 "$CHECK" local errors -a er
  echo "$output"
  assert_success
  assert_output --partial "OK errors"
}

@test "a partner process that leaves gives PIO_EGONE to its receiver and sender" {
  pair gone gn
}

@test "a receiver killed and started again: sends while it is away fail, the new one gets every send after it joined" {
  local w=$BATS_TEST_TMPDIR m=${PIO_TEST_MULT:-1} ch=$PIO_BUILD/tests/prog/pio-chaos
  bg_start "$w/r1.out" env PIO_SOCKET="$PIO_SOCK_B" "$ch" recv -a rj-r -r 0 -P 1 -p rj-s -l "$w/led.r1"
  local r1=$BG_PID
  # standard (buffered) sends: eager ones are numbered and sent on even
  # while no receiver is there, and fail at the far end. 10 s of sending:
  # the second receiver joins about 2 s in
  bg_start "$w/s.out" env PIO_SOCKET="$PIO_SOCK_A" timeout $((120 * m)) "$ch" send -a rj-s -r 0 \
    -P 1 -p rj-r -T $((10 * m)) -B 65536 -l "$w/led.s"
  local sp=$BG_PID
  pio_wait_until 20 sh -c "[ \$(grep -c '^R ' '$w/led.r1') -ge 20 ]"
  kill -9 "$r1"
  pio_wait_until 20 sh -c "[ \$(grep -c ' PIO_EGONE\$' '$w/led.s') -ge 5 ]"
  bg_start "$w/r2.out" env PIO_SOCKET="$PIO_SOCK_B" "$ch" recv -a rj-r -r 0 -P 1 -p rj-s -l "$w/led.r2"
  # the new receiver takes what follows: the streams restart at its join
  # (they did not: every later message failed as meant for the old one)
  bg_wait "$sp"
  awk '{print $NF}' "$w/led.s" | uniq -c
  cat "$w/s.out"
  assert_equal "$BG_RC" 0
  run grep -c '^R ' "$w/led.r2"
  refute_output 0
  run grep -c "which never came here" "$PAIR_DIR/B.log"
  assert_output 0
  # from the first message the new receiver took: none lost, doubled or
  # out of order, and the end mark came (what the killed one held in its
  # pool went with it: standard sends promise no more)
  # (messages under 16 bytes carry no index: the window starts at the
  # first one that does)
  local first
  first=$(awk '/^R / && $2 >= 0 {print $2; exit}' "$w/led.r2")
  [ -n "$first" ]
  awk -v f="$first" '$1 != "S" || $2 >= f' "$w/led.s" >"$w/led.s2"
  awk -v f="$first" '/^R / && $2 == f {on = 1} on || !/^R /' "$w/led.r2" >"$w/led.r2b"
  run python3 "$PIO_SRC/tests/lib/chaos_check.py" "$w/led.s2" "$w/led.r2b"
  echo "$output"
  assert_success
  assert_output --partial "chaos_check: PASS"
  run grep -c "^END" "$w/led.r2"
  assert_output 1
}

@test "a new run's sender that starts before its receiver waits for it: the old run's leave fails none of its messages" {
  local w=$BATS_TEST_TMPDIR m=${PIO_TEST_MULT:-1} ch=$PIO_BUILD/tests/prog/pio-chaos
  # the first run of the pair: both join, 5 messages, both leave
  bg_start "$w/r0.out" env PIO_SOCKET="$PIO_SOCK_B" timeout $((60 * m)) "$ch" recv -a nr-r -r 0 -P 1 \
    -p nr-s -l "$w/led.r0"
  local r0=$BG_PID
  run env PIO_SOCKET="$PIO_SOCK_A" timeout $((60 * m)) "$ch" send -a nr-s -r 0 -P 1 -p nr-r -n 5 \
    -m sync -B 65536 -l "$w/led.s0"
  assert_success
  bg_wait "$r0"
  assert_equal "$BG_RC" 0
  # piod A has heard that the old receiver left (it lists applications
  # with a process joined; it knew nr-r, whose receiver took 5 messages)
  pio_wait_until 10 sh -c "PIO_SOCKET='$PIO_SOCK_A' '$PIO_INFO' | awk '\$1 == \"nr-r\" {f = 1} END {exit f}'"
  # the second run: the sender first (synchronous sends wait for delivery)
  : >"$w/led.s"
  bg_start "$w/s.out" env PIO_SOCKET="$PIO_SOCK_A" timeout $((120 * m)) "$ch" send -a nr-s -r 0 \
    -P 1 -p nr-r -n 20 -m sync -B 65536 -l "$w/led.s"
  local sp=$BG_PID
  sleep $((1 * m))
  # no send has an outcome yet: none failed for the old run's leave (each
  # did, with PIO_EGONE, before the sender's piod told a new run's message
  # from one to a process that left while the sender was there)
  run cat "$w/led.s"
  assert_output ''
  bg_start "$w/r1.out" env PIO_SOCKET="$PIO_SOCK_B" timeout $((120 * m)) "$ch" recv -a nr-r -r 0 \
    -P 1 -p nr-s -l "$w/led.r1"
  local rp=$BG_PID
  bg_wait "$sp"
  cat "$w/s.out"
  assert_equal "$BG_RC" 0
  bg_wait "$rp"
  assert_equal "$BG_RC" 0
  run grep -c -v ' PIO_OK$' "$w/led.s"
  assert_output 0
  run python3 "$PIO_SRC/tests/lib/chaos_check.py" "$w/led.s" "$w/led.r1"
  echo "$output"
  assert_success
  assert_output --partial "chaos_check: PASS"
}
