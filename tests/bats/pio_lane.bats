#!/usr/bin/env bats
# pio_lane.bats - direct lanes: small messages straight from process to
# process on a connection the two piods brokered (libpio/lane.c,
# piod/dlane.c).
# SPDX-License-Identifier: BSD-3-Clause
#
# A pair of piods on loopback (one link). tests/prog/pio-chaos sends
# messages of mixed sizes (empty, around the eager limit, small, 1 MiB and
# up to 4 MiB: some on the lane, some through the piods) and keeps a ledger
# of every send and every message taken; tests/lib/chaos_check.py matches
# the two (none lost, none doubled, in order, every byte). PIO_LANE_TRACE
# has libpio say what its lanes do.

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

CH=$PIO_BUILD/tests/prog/pio-chaos

setup_file() {
  # lanes are on by default, asked for by a conversation (two turns of
  # sends that each came after a message from the other side); pio-chaos
  # and pio-scale stream, so these tests have the first eligible send ask
  # (PIO_LANE_TURNS=0), PIO_LANE_MIN at its default; the last test runs at
  # the defaults
  export PIO_LANE_MAX=$((1 << 20)) PIO_LANE_TURNS=0
  unset PIO_LANE_MIN
  export PAIR_DIR=$BATS_FILE_TMPDIR/pair
  mkdir -p "$PAIR_DIR"
  pio_pair_loopback "$PAIR_DIR" 1
  export PIO_SOCK_A PIO_SOCK_B
}

teardown_file() {
  pio_cleanup
}

# lane_run NAME ARGS...: a receiver NAME-r on B and a sender NAME-s on A
# (ARGS: the sender's -n or -T), each with its lane trace; sets SP to the
# sender's pid and waits for neither.
lane_start() {
  local name=$1 w=$BATS_TEST_TMPDIR; shift
  bg_start "$w/r.out" env PIO_SOCKET="$PIO_SOCK_B" PIO_LANE_TRACE="$w/trace.r" "$CH" recv \
    -a "$name-r" -r 0 -P 1 -p "$name-s" -l "$w/led.r"
  RP=$BG_PID
  bg_start "$w/s.out" env PIO_SOCKET="$PIO_SOCK_A" PIO_LANE_TRACE="$w/trace.s" "$CH" send \
    -a "$name-s" -r 0 -P 1 -p "$name-r" -B $((3 << 20)) -l "$w/led.s" "$@"
  SP=$BG_PID
}

# lane_check: both ends exit 0, and the ledgers match
lane_check() {
  local w=$BATS_TEST_TMPDIR
  bg_wait "$SP"
  cat "$w/s.out"
  assert_equal "$BG_RC" 0
  bg_wait "$RP"
  cat "$w/r.out"
  assert_equal "$BG_RC" 0
  run python3 "$PIO_SRC/tests/lib/chaos_check.py" "$w/led.s" "$w/led.r"
  echo "$output"
  assert_success
  assert_output --partial "chaos_check: PASS"
}

@test "small messages take a direct lane, in order with the large ones through the piods" {
  lane_start ln -n 400
  lane_check
  local w=$BATS_TEST_TMPDIR
  cat "$w/trace.s"
  # the piod handed a sealed lane over, and a fence went before its first
  # message and again after messages that took the piods' path
  run grep -c -E '^lane [0-9]+ to ln-r:0 \((aes-256-gcm|chacha20-poly1305)\)$' "$w/trace.s"
  assert_output 1
  run grep -c -E '^lane [0-9]+ to ln-r:0 up$' "$w/trace.s"
  refute_output --regexp '^[01]$'
  # the receiver's end came from its piod, with the sender's name
  run grep -c -E '^lane [0-9]+ from ln-s:0 \(' "$w/trace.r"
  assert_output 1
  # the lane breaks only when the receiver, done, closes its end: with
  # nothing left to send again
  run grep -E 'broke .*: [1-9][0-9]* bytes to resend' "$w/trace.s"
  assert_failure
}

@test "a lane cut mid-stream loses nothing: what the receiver did not take goes again through the piods" {
  pio_need_root
  local w=$BATS_TEST_TMPDIR m=${PIO_TEST_MULT:-1} bed tb=$PIO_SRC/tests/testbed/pio-testbed
  # two bed hosts joined by one 8 Mbit/s link: the lane's bytes queue in
  # the sender's socket, so a cut always finds messages the receiver has
  # not taken; every message takes the lane (PIO_LANE_MAX above the
  # largest), so the sender never waits for the lane to drain; the first
  # send asks for the lane (PIO_LANE_MIN=0), before the link's queue fills
  # (asked for behind a full 8 Mbit/s queue, it was once not up in 20 s)
  bed=$(pio_unique_name pl)
  pio_bed_up "$bed" --hosts 2 --links 1 --rate 8mbit >/dev/null
  mkdir -p "$w/pair"
  pio_pair_testbed "$w/pair" "$bed" 1
  bg_start "$w/r.out" env PIO_SOCKET="$w/pair/B.sock" PIO_LANE_TRACE="$w/trace.r" "$CH" recv \
    -a lc-r -r 0 -P 1 -p lc-s -l "$w/led.r"
  RP=$BG_PID
  bg_start "$w/s.out" env PIO_SOCKET="$w/pair/A.sock" PIO_LANE_TRACE="$w/trace.s" \
    PIO_LANE_MAX=$((8 << 20)) PIO_LANE_MIN=0 "$CH" send -a lc-s -r 0 -P 1 -p lc-r -B $((3 << 20)) \
    -T $((6 * m)) -l "$w/led.s"
  SP=$BG_PID
  pio_wait_until 20 grep -q -E '^lane [0-9]+ to lc-r:0 up$' "$w/trace.s"
  sleep 2
  # the lane's two ends (the processes reach their piods by Unix sockets,
  # so their TCP connections in the hosts' namespaces are the lane); the
  # receiver's end may reach it later than the sender says "up" (a loaded
  # machine once took over 2 s): wait until both processes hold theirs
  local n=0 addr ns ends=$w/ends
  ns_ends() {
    local ns
    for ns in "$("$tb" ns "$bed" h1)" "$("$tb" ns "$bed" h2)"; do
      ip netns exec "$ns" ss -Htnp state established |
        awk -v ns="$ns" -v s="pid=$SP," -v r="pid=$RP," 'index($0, s) || index($0, r) {print ns, $3}'
    done >"$ends"
    [ "$(wc -l <"$ends")" -ge 2 ]
  }
  pio_wait_until 20 ns_ends || true
  while read -r ns addr; do
    ip netns exec "$ns" ss -K src "${addr%:*}" sport = ":${addr##*:}" >/dev/null 2>&1
    n=$((n + 1))
  done <"$ends"
  echo "cut $n connection(s)"
  [ "$n" -ge 2 ] || fail "the two ends of the lane were not there to cut"
  lane_check
  cat "$w/trace.s"
  run grep -c -E '^lane [0-9]+ to lc-r:0 broke ' "$w/trace.s"
  assert_output 1
  # the receiver said what it took; the rest went again, through the piods
  run grep -E 'the receiver took up to [0-9]+; [1-9][0-9]* sent again through the piods' \
    "$w/trace.s"
  assert_success
}

@test "a piod with direct-lanes = no refuses a lane, and every message goes through the piods" {
  local w=$BATS_TEST_TMPDIR d=$BATS_TEST_TMPDIR/pair2
  mkdir -p "$d"
  PIO_PIOD_FLAGS="--no-direct-lanes" pio_pair_loopback "$d" 1
  bg_start "$w/r.out" env PIO_SOCKET="$d/B.sock" PIO_LANE_TRACE="$w/trace.r" "$CH" recv \
    -a nl-r -r 0 -P 1 -p nl-s -l "$w/led.r"
  RP=$BG_PID
  bg_start "$w/s.out" env PIO_SOCKET="$d/A.sock" PIO_LANE_TRACE="$w/trace.s" "$CH" send \
    -a nl-s -r 0 -P 1 -p nl-r -n 200 -B $((3 << 20)) -l "$w/led.s"
  SP=$BG_PID
  lane_check
  run cat "$w/trace.s"
  assert_output 'lane to nl-r:0 refused: PIO_ENOSYS'
}

@test "lanes off in the process (PIO_LANE_MAX=0): no lane is asked for" {
  local w=$BATS_TEST_TMPDIR
  PIO_LANE_MAX=0 lane_start lo -n 100
  lane_check
  run test -e "$w/trace.s"
  assert_failure
}

@test "32 senders ask for their lanes at once: every lane comes up (the piod opens a few at a time, the peer refuses none)" {
  local w=$BATS_TEST_TMPDIR sc=$PIO_BUILD/tests/prog/pio-scale m=${PIO_TEST_MULT:-1}
  # the peer takes at most 8 unfinished handshakes from one address and
  # closes the rest; of 32 lanes asked for at once, 22 got PIO_ECLOSED;
  # each sender streams 4 s, so that its lane, opened in turn, finds it
  bg_start "$w/recv" env PIO_SOCKET="$PIO_SOCK_B" timeout $((60 * m)) "$sc" recv -N 32 -x ml \
    -s 65536 --check full
  RP=$BG_PID
  pio_wait_until $((30 * m)) grep -q "^READY 32 " "$w/recv"
  bg_start "$w/send" env PIO_SOCKET="$PIO_SOCK_A" PIO_LANE_TRACE="$w/trace.s" \
    timeout $((60 * m)) "$sc" send -N 32 -x ml -s 65536 -t 4
  SP=$BG_PID
  bg_wait "$SP"
  assert_equal "$BG_RC" 0
  bg_wait "$RP"
  cat "$w/recv"
  assert_equal "$BG_RC" 0
  run grep "^SUMMARY" "$w/recv"
  assert_output --partial "SUMMARY pairs=32 ok=32 failed=0 "
  run grep -c -E '^lane [0-9]+ to ml-r[0-9]+:0 up$' "$w/trace.s"
  assert_output 32
  run grep -c 'refused' "$w/trace.s"
  assert_output 0
}

# perf_lanes TRACE_PREFIX CLIENT_ARGS...: pio-perf between A and B at every
# lane default (no PIO_LANE_* setting), each side with its lane trace
perf_lanes() {
  local t=$1 perf=$PIO_BUILD/bin/pio-perf sp; shift
  env -u PIO_LANE_MAX -u PIO_LANE_TURNS -u PIO_LANE_MIN PIO_SOCKET="$PIO_SOCK_B" \
    PIO_LANE_TRACE="$t.srv" "$perf" --server --timeout 30 >"$t.srv.log" 2>&1 </dev/null &
  sp=$!
  echo "pid $sp" >>"$(_pio_registry)"
  run env -u PIO_LANE_MAX -u PIO_LANE_TURNS -u PIO_LANE_MIN PIO_SOCKET="$PIO_SOCK_A" \
    PIO_LANE_TRACE="$t.cli" timeout 60 "$perf" --timeout 30 "$@"
  srv_status=0
  wait "$sp" || srv_status=$?
  cat "$t.srv.log"
}

@test "at default settings a ping-pong takes a lane both ways after two turns; a stream keeps the piods" {
  local w=$BATS_TEST_TMPDIR
  # 64 KiB, DYNAMIC: a lane message (a named channel would keep its
  # channel); the data of every message is checked by pio-perf
  perf_lanes "$w/pp" -b DYNAMIC -t pingpong -s 65536 -n 50 -w 2
  assert_success
  assert_equal "$srv_status" 0
  cat "$w/pp.cli" "$w/pp.srv"
  run grep -c -E '^lane [0-9]+ to [^ ]+:0 up$' "$w/pp.cli"
  assert_output 1
  run grep -c -E '^lane [0-9]+ to [^ ]+:0 up$' "$w/pp.srv"
  assert_output 1
  run cat "$w/pp.cli" "$w/pp.srv"
  refute_output --partial refused
  # a stream of the same messages: the sender never hears from the
  # receiver between two sends, so it asks for no lane. The receiver's
  # 1-byte acks are a conversation of their own (each comes after the
  # client's data) and may take a lane the other way, depending on how
  # quickly the run ends: the client's trace (made at the first thing a
  # lane says) may then name that lane "from perf-srv", never one "to" it.
  perf_lanes "$w/st" -b DYNAMIC -t stream -s 65536 -n 200 -w 2
  assert_success
  assert_equal "$srv_status" 0
  touch "$w/st.cli" "$w/st.srv"
  cat "$w/st.cli" "$w/st.srv"
  run grep -c -E '^lane [0-9]+ to perf-srv:0' "$w/st.cli"
  assert_output 0
  run grep -c -E '^lane [0-9]+ from perf-cli:0' "$w/st.srv"
  assert_output 0
}

