#!/usr/bin/env bats
# chaos.bats - nothing acknowledged is lost: messages under resets of the express lane and the channels, and a stopped piod.
# SPDX-License-Identifier: BSD-3-Clause
#
# A pair of piods on loopback (A 127.1.0.1, B 127.2.0.1, one channel). A
# sender streams messages of mixed sizes (70 % up to 1 KiB: eager, 25 % up
# to 70 KiB, 5 % up to 3 MiB: the 3-way handshake) to a receiver that checks
# each one's number and every byte (tests/prog/pio-check "order"). Meanwhile
# a driver resets the express lane and data channel 0 (`ss -K`, the same
# addresses) every few hundred milliseconds and stops piod B now and then:
# frames the kernel had taken die with the connection. Every message must
# still arrive once, in order, byte for byte (docs/protocol.md, "Numbered
# frames").

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

CHECK=$PIO_BUILD/tests/prog/pio-check

teardown() {
  pio_cleanup
}

chaos_pair() {
  D=$BATS_TEST_TMPDIR/pair
  mkdir -p "$D"
  _pio_keys "$D" A B
  read -r CP DP < <(pio_free_port 2)
  _pio_start A "$D" "" -- --listen 127.1.0.1 --peer B=127.2.0.1 --control-port "$CP" \
    --data-port "$DP" ${CHAOS_A_ARGS:-}
  _pio_start B "$D" "" -- --listen 127.2.0.1 --peer A=127.1.0.1 --control-port "$CP" \
    --data-port "$DP"
  export PIO_SOCK_A=$D/A.sock PIO_SOCK_B=$D/B.sock
  _pio_wait_sock "$PIO_SOCK_A"
  _pio_wait_sock "$PIO_SOCK_B"
  pio_wait_channels "$PIO_SOCK_A" 1
  pio_wait_channels "$PIO_SOCK_B" 1
}

# chaos_run N: N messages from A's ch-s to B's ch-r while the driver
# resets A -> B connections and stops B; both ends must succeed.
chaos_run() {
  local n=$1 m=${PIO_TEST_MULT:-1} resets=0 i=0
  bg_start "$BATS_TEST_TMPDIR/recv" env PIO_SOCKET="$PIO_SOCK_B" timeout $((240 * m)) \
    "$CHECK" recv order -n "$n" -a ch-r -p ch-s
  local rp=$BG_PID
  pio_wait_until 10 grep -q "process ch-r:0 of 1 joined" "$D/B.log"
  bg_start "$BATS_TEST_TMPDIR/send" env PIO_SOCKET="$PIO_SOCK_A" timeout $((240 * m)) \
    "$CHECK" send order -n "$n" -a ch-s -p ch-r
  local sp=$BG_PID
  local bpid
  bpid=$(cat "$D/B.pid")
  # at least 6 resets and 2 stops, then on while the sender runs
  while [ "$i" -lt 6 ] || kill -0 "$sp" 2>/dev/null; do
    i=$((i + 1))
    sleep 0.$((2 + RANDOM % 4))
    ss -K src 127.1.0.1 dst 127.2.0.1 >/dev/null 2>&1 && resets=$((resets + 1))
    if [ $((i % 5)) -eq 2 ]; then
      kill -STOP "$bpid"
      sleep 1.$((RANDOM % 10))
      kill -CONT "$bpid"
    fi
    [ "$i" -lt 200 ] || break
  done
  echo "driver: $i rounds"
  bg_wait "$sp"
  SEND_RC=$BG_RC
  bg_wait "$rp"
  RECV_RC=$BG_RC
  cat "$BATS_TEST_TMPDIR/send" "$BATS_TEST_TMPDIR/recv"
  grep -E "express lane to B (failed|up)|go again|never came|follows" "$D/A.log" "$D/B.log" | tail -n 20
}

@test "mixed sizes arrive once, in order, byte for byte through lane resets and a stopped piod" {
  command -v ss >/dev/null || skip "no ss(8) to reset connections"
  chaos_pair
  chaos_run 30000
  assert_equal "$SEND_RC" 0
  assert_equal "$RECV_RC" 0
  run grep -c "^OK order: 30000 messages" "$BATS_TEST_TMPDIR/recv"
  assert_output 1
  # the resets did hit the lane (A saw it fail at least once) ...
  run grep -c "express lane to B failed" "$D/A.log"
  refute_output 0
  # ... and no stream of B ever had a hole
  run grep -E "never came" "$D/B.log"
  assert_failure
}

@test "with the express lane off, ZeroMQ's lost frames come again too" {
  command -v ss >/dev/null || skip "no ss(8) to reset connections"
  CHAOS_A_ARGS=--no-express chaos_pair
  chaos_run 20000
  assert_equal "$SEND_RC" 0
  assert_equal "$RECV_RC" 0
  run grep -c "^OK order: 20000 messages" "$BATS_TEST_TMPDIR/recv"
  assert_output 1
  run grep -E "never came" "$D/B.log"
  assert_failure
}

# ---- failure detection on the test bed -------------------------------------

# bed_piod WHO: piod A (h1) or B (h2) on the bed's two links.
bed_piod() {
  local who=$1 me=1 peer=2 other=B
  [ "$who" = B ] && me=2 peer=1 other=A
  local m0 m1 p0 p1
  m0=$("$PIO_TESTBED" addr "$BED" "h$me" 0) m1=$("$PIO_TESTBED" addr "$BED" "h$me" 1)
  p0=$("$PIO_TESTBED" addr "$BED" "h$peer" 0) p1=$("$PIO_TESTBED" addr "$BED" "h$peer" 1)
  _pio_launch "$who" "$D" "$("$PIO_TESTBED" ns "$BED" "h$me")" "$PIOD" -f --name "$who" \
    --system "$who" --keys "$D/keys" --socket "$D/$who.sock" \
    --listen "$m0" --listen "$m1" --peer "$other=$p0,$p1"
  _pio_wait_sock "$D/$who.sock"
}

@test "a link cut under load is declared down within 1 s at default settings; the message arrives whole" {
  pio_need_root
  BED=$(pio_unique_name chs)
  pio_bed_up "$BED" --hosts 2 --links 2 --rate 100mbit >/dev/null
  D=$BATS_TEST_TMPDIR/bed
  mkdir -p "$D"
  _pio_keys "$D" A B
  bed_piod A
  bed_piod B
  pio_wait_channels "$D/A.sock" 2 60
  pio_wait_channels "$D/B.sock" 2 60
  local m=${PIO_TEST_MULT:-1}
  bg_start "$BATS_TEST_TMPDIR/recv" env PIO_SOCKET="$D/B.sock" timeout $((120 * m)) \
    "$CHECK" recv sizes -a ch-r -p ch-s -S 64M,64M
  local rp=$BG_PID
  pio_wait_until 10 grep -q "process ch-r:0 of 1 joined" "$D/B.log"
  bg_start "$BATS_TEST_TMPDIR/send" env PIO_SOCKET="$D/A.sock" timeout $((120 * m)) \
    "$CHECK" send sizes -a ch-s -p ch-r -S 64M,64M
  local sp=$BG_PID
  sleep 2 # both links carry the first message's chunks (about 25 MB/s together)
  "$PIO_TESTBED" link "$BED" h1 1 down
  local cut_ms
  cut_ms=$(date +%s%3N)
  pio_wait_until 10 grep -q "channel 1 to B: no acknowledgement" "$D/A.log"
  local line at_ms
  line=$(grep -m1 "channel 1 to B: no acknowledgement" "$D/A.log")
  echo "$line"
  at_ms=$(date -d "${line%% *}" +%s%3N)
  echo "declared down $((at_ms - cut_ms)) ms after the cut"
  [ $((at_ms - cut_ms)) -le 1000 ]
  "$PIO_TESTBED" link "$BED" h1 1 up
  bg_wait "$sp"
  assert_equal "$BG_RC" 0
  bg_wait "$rp"
  assert_equal "$BG_RC" 0
  run cat "$BATS_TEST_TMPDIR/recv"
  assert_output --partial "OK sizes: 2 messages"
}

# ---- the chaos run (tests/lib/chaos.bash) -----------------------------------

@test "chaos: 4 senders, 4 receivers, 5,050 mixed messages under cuts, resets, a stopped piod and a killed receiver; every acknowledged one arrives once, in order" {
  pio_need_root
  source "$BATS_TEST_DIRNAME/../lib/chaos.bash"
  CHAOS_BIG=$((16 << 20))
  chaos_bed_up "$BATS_TEST_TMPDIR/chaos"
  chaos_start 1550 400
  chaos_drive 90
  cat "$CD/faults.log" "$CD"/send*.out "$CD"/recv*.out
  echo "$CHAOS_SECONDS s"
  assert_equal "$CHAOS_SEND_RC" 0
  assert_equal "$CHAOS_RECV_RC" 0
  run chaos_check
  echo "$output"
  assert_success
  assert_output --partial "chaos_check: PASS"
  # the driver did inject faults of every kind but, by chance, perhaps not all
  run grep -c . "$CD/faults.log"
  refute_output 0
}

@test "chaos_check flags a lost, a duplicated and a reordered message, and lets one in hand at a restart go" {
  local d=$BATS_TEST_TMPDIR
  printf 'S 0 100 aa PIO_OK\nS 1 0 e PIO_EGONE\nS 2 0 e PIO_OK\nS 3 50 bb PIO_OK\n' >"$d/s"
  # an empty message that may be the failed one or the acknowledged one
  printf 'START 1\nR 0 100 aa\nR -1 0 e\nR 3 50 bb\nEND 4\n' >"$d/ok"
  run python3 "$PIO_SRC/tests/lib/chaos_check.py" "$d/s" "$d/ok"
  assert_success
  assert_output --partial "chaos_check: PASS"
  printf 'START 1\nR 0 100 aa\nR 3 50 bb\nEND 4\n' >"$d/lost"
  run python3 "$PIO_SRC/tests/lib/chaos_check.py" "$d/s" "$d/lost"
  assert_failure
  assert_output --partial "sent (PIO_OK) and never arrived"
  printf 'START 1\nR 0 100 aa\nR 3 50 bb\nR 3 50 bb\nR -1 0 e\nEND 4\n' >"$d/dup"
  run python3 "$PIO_SRC/tests/lib/chaos_check.py" "$d/s" "$d/dup"
  assert_failure
  assert_output --partial "message 3 (50 bytes) arrived twice"
  assert_output --partial "message 2 arrived after later ones"
  printf 'S 0 100 aa PIO_OK\nS 1 0 e PIO_OK\nS 2 70 cc PIO_OK\nS 3 50 bb PIO_OK\n' >"$d/s2"
  printf 'START 1\nR 0 100 aa\nR -1 0 e\nSTART 2\nR 3 50 bb\nEND 4\n' >"$d/hand"
  run python3 "$PIO_SRC/tests/lib/chaos_check.py" "$d/s2" "$d/hand"
  assert_success
  assert_output --partial "chaos_check: PASS"
  printf 'START 1\nR 0 100 aa\nR -1 0 e\nR 3 50 bb\nEND 4\n' >"$d/nohand"
  run python3 "$PIO_SRC/tests/lib/chaos_check.py" "$d/s2" "$d/nohand"
  assert_failure
}

# ---- isolation -----------------------------------------------------------------

@test "a stopped receiver does not stall the others: three pairs finish while it sleeps, and it then gets its stream whole" {
  chaos_pair
  local m=${PIO_TEST_MULT:-1} i pids=()
  # the receiver that stops, and a sender that streams to it
  bg_start "$BATS_TEST_TMPDIR/x" env PIO_SOCKET="$PIO_SOCK_B" "$CHECK" recv order -n 4000 \
    -a is-x -p is-y
  local xp=$BG_PID
  pio_wait_until 10 grep -q "process is-x:0 of 1 joined" "$D/B.log"
  # stopped before its sender starts: on a fast machine 4000 messages
  # otherwise all arrive before the stop (fresh-ci: kill found no process)
  kill -STOP "$xp"
  bg_start "$BATS_TEST_TMPDIR/y" env PIO_SOCKET="$PIO_SOCK_A" "$CHECK" send order -n 4000 \
    -a is-y -p is-x
  local yp=$BG_PID
  sleep 2 # its sender fills what it may hold, then waits
  for i in 1 2 3; do
    bg_start "$BATS_TEST_TMPDIR/r$i" env PIO_SOCKET="$PIO_SOCK_B" timeout $((120 * m)) \
      "$CHECK" recv order -n 3000 -a "is-r$i" -p "is-s$i"
    pids+=("$BG_PID")
  done
  pio_wait_until 10 grep -q "process is-r3:0 of 1 joined" "$D/B.log"
  for i in 1 2 3; do
    bg_start "$BATS_TEST_TMPDIR/s$i" env PIO_SOCKET="$PIO_SOCK_A" timeout $((120 * m)) \
      "$CHECK" send order -n 3000 -a "is-s$i" -p "is-r$i"
    pids+=("$BG_PID")
  done
  local bad=0
  for i in "${pids[@]}"; do
    bg_wait "$i"
    [ "$BG_RC" -eq 0 ] || bad=$((bad + 1))
  done
  cat "$BATS_TEST_TMPDIR"/r1 "$BATS_TEST_TMPDIR"/r2 "$BATS_TEST_TMPDIR"/r3
  assert_equal "$bad" 0
  run grep -c "^OK order: 3000 messages" "$BATS_TEST_TMPDIR/r1" "$BATS_TEST_TMPDIR/r2" \
    "$BATS_TEST_TMPDIR/r3"
  assert_output --partial "r1:1"
  assert_output --partial "r2:1"
  assert_output --partial "r3:1"
  # the stopped one was neither dropped nor given up: awake, it gets every message
  run kill -0 "$yp"
  assert_success
  kill -CONT "$xp"
  bg_wait "$yp"
  assert_equal "$BG_RC" 0
  bg_wait "$xp"
  assert_equal "$BG_RC" 0
  run cat "$BATS_TEST_TMPDIR/x"
  assert_output --partial "OK order: 4000 messages"
}

@test "a flood that fills the express lane to a stopped peer holds back only the flooder: another process joins, finds its partner and sends" {
  chaos_pair
  local hostile=$PIO_BUILD/tests/prog/pio-hostile m=${PIO_TEST_MULT:-1}
  bg_start "$BATS_TEST_TMPDIR/sink" env PIO_SOCKET="$PIO_SOCK_B" "$hostile" sink fl-sink
  pio_wait_until 10 grep -q "sink ready" "$BATS_TEST_TMPDIR/sink"
  bg_start "$BATS_TEST_TMPDIR/lr" env PIO_SOCKET="$PIO_SOCK_B" "$CHECK" recv sizes -a lt-r -p lt-s -S 8
  local lr=$BG_PID
  pio_wait_until 10 grep -q "process lt-r:0 of 1 joined" "$D/A.log" "$D/B.log"
  pio_wait_until 10 sh -c 'PIO_SOCKET="$1" "$2" | grep -q lt-r' _ "$PIO_SOCK_A" "$PIO_BUILD/bin/pio-info"
  local bpid
  bpid=$(cat "$D/B.pid")
  kill -STOP "$bpid"
  # B reads nothing: the flood fills A's lane to B, and A stops reading the flooder
  bg_start "$BATS_TEST_TMPDIR/flood" env PIO_SOCKET="$PIO_SOCK_A" "$hostile" flood-send 400000 \
    -j fl-src -p fl-sink -t 60
  pio_wait_until $((20 * m)) grep -q "express lane to B has [0-9]* bytes waiting" "$D/A.log"
  # a process that put nothing in the lane is read on: it joins, looks its
  # partner up and sends (an eager message: it returns once A has it)
  run timeout $((20 * m)) env PIO_SOCKET="$PIO_SOCK_A" "$CHECK" send sizes -a lt-s -p lt-r -S 8
  kill -CONT "$bpid"
  assert_success
  assert_output --partial "OK sizes: 1 messages"
  bg_wait "$lr"
  assert_equal "$BG_RC" 0
  run cat "$BATS_TEST_TMPDIR/lr"
  assert_output --partial "OK sizes: 1 messages"
}
