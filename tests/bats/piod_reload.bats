#!/usr/bin/env bats
# piod_reload.bats - SIGHUP reloads peers, keys and owners from the config file (issue 32, item 3)
# without dropping applications or messages in flight.
# SPDX-License-Identifier: BSD-3-Clause
#
# Systems A and B run from config files on loopback (A on 127.1.0.1, B on
# 127.2.0.1, one channel). While a stream of messages flows from A to B
# (pio-check order: every message checked for order and content), a third
# system C is made: its key is generated only now (so A's key directory
# did not hold it at start, and A refuses C's first control connection),
# it starts with A as its peer, and [peer C] is appended to A's file. A is
# sent SIGHUP (twice, the second while nothing changed); the A -> B stream
# is still running after the reload (40000 messages, 3.3 GB: several
# seconds); then A's channel to C comes up, a message stream from C to A
# arrives whole, and the A -> B stream ends with every message in order.
# A file with a mistake is refused as a whole by the next SIGHUP, and the
# log is still reopened on SIGHUP.

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

CHECK=$PIO_BUILD/tests/prog/pio-check

setup() {
  D=$BATS_TEST_TMPDIR
  _pio_keys "$D" A B
  read -r CPORT DPORT < <(_pio_port 2)
  conf A 127.1.0.1 B 127.2.0.1 >"$D/A.conf"
  conf B 127.2.0.1 A 127.1.0.1 >"$D/B.conf"
  pio_start_conf A "$D" "" "$D/A.conf"
  pio_start_conf B "$D" "" "$D/B.conf"
  _pio_wait_sock "$D/A.sock"
  _pio_wait_sock "$D/B.sock"
  pio_wait_channels "$D/A.sock" 1
  pio_wait_channels "$D/B.sock" 1
}

teardown() {
  pio_cleanup
}

# conf NAME ADDR PEER PEERADDR: a piod.conf for NAME with one peer.
conf() {
  printf 'name = %s\nlisten = %s\ncontrol-port = %s\ndata-port = %s\nlog-level = info\n' \
    "$1" "$2" "$CPORT" "$DPORT"
  printf '\n[peer %s]\naddr = %s\n' "$3" "$4"
}

# peer_up SOCK PEER: the piod at SOCK shows a channel to PEER that is up.
peer_up() {
  PIO_SOCKET=$1 "$PIO_INFO" --json | grep -q "\"peer\": \"$2\", \"index\": 0, \"state\": \"up\""
}

# log_says NAME TEXT: NAME's log holds TEXT.
log_says() {
  grep -qF -- "$2" "$D/$1.log"
}

@test "SIGHUP adds a peer (and its new key) while messages flow; every message arrives" {
  local m=${PIO_TEST_MULT:-1}
  bg_start "$D/recv.out" env PIO_SOCKET="$D/B.sock" timeout $((120 * m)) \
    "$CHECK" recv order -a ab-recv -p ab-send -n 40000
  local rpid=$BG_PID
  bg_start "$D/send.out" env PIO_SOCKET="$D/A.sock" timeout $((120 * m)) \
    "$CHECK" send order -a ab-send -p ab-recv -n 40000
  local spid=$BG_PID

  # C: a key A has never seen, a piod that knows A
  run "$PIOD" --keygen "$D/keys" --system C
  assert_success
  conf C 127.3.0.1 A 127.1.0.1 >"$D/C.conf"
  pio_start_conf C "$D" "" "$D/C.conf"
  _pio_wait_sock "$D/C.sock"
  printf '\n[peer C]\naddr = 127.3.0.1\n' >>"$D/A.conf"

  # the stream is going when A reloads
  run pio_wait_until 20 log_says B "process ab-recv:0 of 1 joined"
  assert_success
  run pio_wait_until 20 log_says A "process ab-send:0 of 1 joined"
  assert_success
  kill -HUP "$(cat "$D/A.pid")"
  run pio_wait_until 10 log_says A "reload: new peer C"
  assert_success
  run kill -0 "$rpid" # messages still flow after the reload
  assert_success
  kill -HUP "$(cat "$D/A.pid")"
  run pio_wait_until 20 peer_up "$D/A.sock" C
  assert_success
  run pio_wait_until 20 peer_up "$D/C.sock" A
  assert_success

  # the new peer carries messages both ways (C -> A, checked at A)
  bg_start "$D/crecv.out" env PIO_SOCKET="$D/A.sock" timeout $((60 * m)) \
    "$CHECK" recv order -a ca-recv -p ca-send -n 300
  local cr=$BG_PID
  run env PIO_SOCKET="$D/C.sock" timeout $((60 * m)) "$CHECK" send order -a ca-send -p ca-recv -n 300
  assert_success
  bg_wait "$cr"
  run cat "$D/crecv.out"
  assert_output --partial "OK order: 300 messages"
  [ "$BG_RC" -eq 0 ]

  # the A -> B stream lost nothing
  bg_wait "$spid"
  local src=$BG_RC
  bg_wait "$rpid"
  run cat "$D/send.out" "$D/recv.out"
  assert_output --partial "OK order: 40000 messages"
  [ "$src" -eq 0 ]
  [ "$BG_RC" -eq 0 ]
  run grep -c "log reopened" "$D/A.log"
  assert_output 2
  run grep -E "ERROR|WARN.*reload" "$D/A.log"
  assert_failure
}

@test "SIGHUP with a mistake in the file changes nothing and says what is wrong" {
  printf '\n[peer D]\naddr = not-an-address\n' >>"$D/A.conf"
  kill -HUP "$(cat "$D/A.pid")"
  run pio_wait_until 10 log_says A "nothing changed"
  assert_success
  run grep -F "bad address 'not-an-address'" "$D/A.log"
  assert_success
  run grep -F "new peer D" "$D/A.log"
  assert_failure
  # A and B still talk
  run peer_up "$D/A.sock" B
  assert_success
  bg_start "$D/r.out" env PIO_SOCKET="$D/B.sock" timeout 60 "$CHECK" recv order -a r2 -p s2 -n 50
  local r=$BG_PID
  run env PIO_SOCKET="$D/A.sock" timeout 60 "$CHECK" send order -a s2 -p r2 -n 50
  assert_success
  bg_wait "$r"
  [ "$BG_RC" -eq 0 ]
}

@test "SIGHUP: a peer removed or changed in the file is kept until a restart, and the log says so" {
  conf A 127.1.0.1 B 127.2.0.9 >"$D/A.conf"
  kill -HUP "$(cat "$D/A.pid")"
  run pio_wait_until 10 log_says A "reload: peer B changed"
  assert_success
  run peer_up "$D/A.sock" B
  assert_success
  printf 'name = A\nlisten = 127.1.0.1\ncontrol-port = %s\ndata-port = %s\n' "$CPORT" "$DPORT" \
    >"$D/A.conf"
  kill -HUP "$(cat "$D/A.pid")"
  run pio_wait_until 10 log_says A "reload: peer B is not in"
  assert_success
  run peer_up "$D/A.sock" B
  assert_success
}
