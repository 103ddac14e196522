#!/usr/bin/env bats
# piod_cli.bats - piod's command line: help, version, keys, config checks, start, stop, signals.
# SPDX-License-Identifier: BSD-3-Clause
#
# Every piod here runs on loopback with its own socket, ports (pio_free_port)
# and files under the test's temporary directory, so the tests never touch
# /etc/pio or /run/pio and may run beside other piods. Each one is recorded
# for pio_cleanup, which teardown runs also after a failure.

load "$BATS_TEST_DIRNAME/../lib/helpers"

PIOD=$PIO_BUILD/sbin/piod
PIO_INFO=$PIO_BUILD/bin/pio-info

setup() {
  cd "$PIO_SRC" || return 1
  D=$(pio_tmpdir)
}

teardown() {
  pio_cleanup
}

# gone PID: the process has exited (and been reaped).
gone() { ! kill -0 "$1" 2>/dev/null; }

# two_ports: sets CPORT and DPORT to two different free ports.
two_ports() {
  CPORT=$(pio_free_port)
  DPORT=$(pio_free_port)
  while [ "$DPORT" = "$CPORT" ]; do DPORT=$(pio_free_port); done
}

# keys NAME: a key pair for system NAME in $D/keys.
keys() {
  [ -f "$D/keys/$1.key" ] || "$PIOD" --keygen "$D/keys" --system "$1" >/dev/null
}

# start_fg NAME [ARGS...]: a foreground piod for system NAME on 127.0.0.1
# with socket $D/NAME.sock; waits for the socket. Sets PID and SOCK; its
# stdout and stderr go to $D/NAME.out.
start_fg() {
  local name=$1; shift
  keys "$name"
  two_ports
  SOCK=$D/$name.sock
  "$PIOD" -f --name "$name" --system "$name" --keys "$D/keys" --socket "$SOCK" \
    --listen 127.0.0.1 --control-port "$CPORT" --data-port "$DPORT" "$@" \
    >"$D/$name.out" 2>&1 </dev/null 3>&- &
  PID=$!
  echo "pid $PID" >>"$(_pio_registry)"
  pio_wait_until 10 test -S "$SOCK" || fail "no socket $SOCK after 10 s: $(cat "$D/$name.out")"
}

# stop_wait PID SECONDS: SIGTERM, then wait up to SECONDS for the exit;
# sets RC to the exit status.
stop_wait() {
  kill -TERM "$1"
  pio_wait_until "$2" gone "$1" || fail "piod $1 still running $2 s after SIGTERM"
  RC=0
  wait "$1" || RC=$?
}

@test "--help lists every option and exits 0" {
  run "$PIOD" --help
  assert_success
  assert_line --index 0 "usage: piod [options]"
  local o
  for o in --config --check-config --keygen --foreground --name --system --listen --peer \
    --control --control-port --data-port --source-ports --keys --socket --pool --proc-pool --grant-budget \
    --eager-limit --chunk --pidfile --log --log-level --drain-ms --version --help; do
    assert_output --partial "$o "
  done
}

@test "--version prints the version and the protocol version" {
  run "$PIOD" --version
  assert_success
  assert_output --regexp '^piod [0-9]+\.[0-9]+\.[0-9]+ \(protocol [0-9]+\)$'
  run "$PIOD" -V
  assert_success
}

@test "--keygen DIR --system X writes X.key (0600) and X.pub, and refuses to overwrite" {
  run "$PIOD" --keygen "$D/k" --system X
  assert_success
  [ -f "$D/k/X.key" ]
  [ -f "$D/k/X.pub" ]
  [ "$(stat -c %a "$D/k/X.key")" = 600 ]
  grep -q '^public-key = ' "$D/k/X.pub"
  grep -q '^secret-key = ' "$D/k/X.key"
  if grep -v '^#' "$D/k/X.pub" | grep -q secret; then fail "X.pub holds a secret"; fi
  local before
  before=$(sha256sum "$D/k/X.key" "$D/k/X.pub")
  run "$PIOD" --keygen "$D/k" --system X
  assert_failure 1
  assert_output --partial "refusing to overwrite"
  [ "$(sha256sum "$D/k/X.key" "$D/k/X.pub")" = "$before" ]
}

@test "--keygen DIR --name X (as piod.conf(5) says) names the pair after system X" {
  # piod.conf(5): system defaults to the value of name; "make the pair with
  # piod --keygen DIR --name SYSTEM".
  run "$PIOD" --keygen "$D/k" --name nodeX
  assert_success
  [ -f "$D/k/nodeX.key" ] || fail "wrote $(ls "$D/k") instead of nodeX.key"
}

@test "--check-config accepts piod/piod.conf.example" {
  run "$PIOD" --check-config --config piod/piod.conf.example
  assert_success
  assert_output "piod: configuration piod/piod.conf.example is valid"
}

@test "--check-config on a broken file prints FILE:LINE: per problem and exits 1" {
  cat >"$D/bad.conf" <<'EOF'
name = bad name!
listen = 999.1.1.1
pool = 64MB
bogus-key = 1
[peer B]
addr = 198.18.0.2
EOF
  run "$PIOD" --check-config --config "$D/bad.conf"
  assert_failure 1
  assert_line --partial "$D/bad.conf:1: "
  assert_line --partial "$D/bad.conf:2: "
  assert_line --partial "$D/bad.conf:3: "
  assert_line --partial "$D/bad.conf:4: unknown key 'bogus-key'"
  assert_output --partial "problem(s) in the configuration"
}

@test "a bad flag value stops piod with exit 2 and a message naming it" {
  local base=(-f --listen 127.0.0.1 --socket "$D/x.sock" --keys "$D/keys")
  run "$PIOD" "${base[@]}" --control-port 99999
  assert_failure 2
  assert_output --partial "--control-port: '99999' is not a port"
  run "$PIOD" "${base[@]}" --pool 12Q
  assert_failure 2
  assert_output --partial "--pool: '12Q' is not a size"
  run "$PIOD" "${base[@]}" --log-level loud
  assert_failure 2
  assert_output --partial "--log-level: 'loud'"
  run "$PIOD" "${base[@]}" --source-ports 5
  assert_failure 2
  assert_output --partial "--source-ports: '5' is not LO-HI"
  run "$PIOD" "${base[@]}" --listen not-an-address
  assert_failure 2
  assert_output --partial "not-an-address"
  run "$PIOD" --no-such-flag
  assert_failure 2
  assert_output --partial "usage: piod"
  [ ! -e "$D/x.sock" ]
}

@test "a foreground piod answers pio-info; SIGTERM stops it with 0 within 5 s and removes its socket" {
  start_fg fg1
  run "$PIO_INFO" --socket "$SOCK"
  assert_success
  assert_line --index 0 "host fg1, system fg1, protocol 5"
  run "$PIO_INFO" --socket "$SOCK" --count-up
  assert_success
  assert_output 0
  stop_wait "$PID" 5
  [ "$RC" -eq 0 ] || fail "exit $RC: $(cat "$D/fg1.out")"
  [ ! -e "$SOCK" ] || fail "socket $SOCK left behind"
  run cat "$D/fg1.out"
  assert_output --partial "stopped"
}

@test "as a daemon piod returns once ready, its pid file names it, SIGTERM stops it" {
  keys dm1
  two_ports
  SOCK=$D/dm1.sock
  run timeout 20 "$PIOD" --name dm1 --system dm1 --keys "$D/keys" --socket "$SOCK" \
    --listen 127.0.0.1 --control-port "$CPORT" --data-port "$DPORT" \
    --pidfile "$D/run/piod.pid" --log "$D/dm1.log"
  assert_success
  [ -S "$SOCK" ] || fail "returned before its socket existed"
  [ -f "$D/run/piod.pid" ] || fail "no pid file"
  local pid
  pid=$(cat "$D/run/piod.pid")
  [[ $pid =~ ^[0-9]+$ ]] || fail "pid file holds '$pid'"
  echo "pid $pid" >>"$(_pio_registry)"
  kill -0 "$pid" || fail "pid $pid from the pid file is not running"
  [ "$(readlink "/proc/$pid/exe")" = "$(readlink -f "$PIOD")" ] || fail "pid $pid is not piod"
  run "$PIO_INFO" --socket "$SOCK"
  assert_success
  kill -TERM "$pid"
  pio_wait_until 5 gone "$pid" || fail "daemon $pid still running 5 s after SIGTERM"
  [ ! -e "$D/run/piod.pid" ] || fail "pid file left behind"
  [ ! -e "$SOCK" ] || fail "socket left behind"
  grep -q "stopped" "$D/dm1.log"
}

# start_daemon NAME PIDFILE: piod NAME as a daemon logging to $D/NAME.log;
# sets PID from the pid file. Fails the test unless it starts.
start_daemon() {
  keys "$1"
  two_ports
  run timeout 20 "$PIOD" --name "$1" --system "$1" --keys "$D/keys" --socket "$D/$1.sock" \
    --listen 127.0.0.1 --control-port "$CPORT" --data-port "$DPORT" --pidfile "$2" \
    --log "$D/$1.log"
  assert_success
  PID=$(cat "$2")
  echo "pid $PID" >>"$(_pio_registry)"
}

@test "a second daemon with the same pid file refuses and says why (terminal or log)" {
  start_daemon dm1 "$D/run/piod.pid"
  local first=$PID
  two_ports
  run timeout 20 "$PIOD" --name dm2 --system dm1 --keys "$D/keys" --socket "$D/dm2.sock" \
    --listen 127.0.0.1 --control-port "$CPORT" --data-port "$DPORT" \
    --pidfile "$D/run/piod.pid" --log "$D/dm2.log"
  assert_failure
  local said="$output $(cat "$D/dm2.log" 2>/dev/null)"
  [[ $said == *"locked by a running piod (pid $first)"* ]] ||
    fail "refused without saying why; terminal: '$output', log: '$(cat "$D/dm2.log" 2>/dev/null)'"
  kill -0 "$first" || fail "the first daemon died"
  [ "$(cat "$D/run/piod.pid")" = "$first" ] || fail "the pid file was changed"
}

@test "a second piod on the same socket refuses to start and says why" {
  start_fg first
  local first=$PID
  two_ports
  run timeout 20 "$PIOD" -f --name second --system first --keys "$D/keys" --socket "$SOCK" \
    --listen 127.0.0.1 --control-port "$CPORT" --data-port "$DPORT"
  assert_failure
  assert_output --partial "another piod already serves $SOCK"
  kill -0 "$first" || fail "the first piod died"
}

@test "a refused second piod leaves the running piod's socket in place" {
  start_fg first
  two_ports
  run timeout 20 "$PIOD" -f --name second --system first --keys "$D/keys" --socket "$SOCK" \
    --listen 127.0.0.1 --control-port "$CPORT" --data-port "$DPORT"
  assert_failure
  [ -S "$SOCK" ] || fail "the refused piod removed $SOCK: the running one is unreachable"
  run "$PIO_INFO" --socket "$SOCK" --timeout 2000
  assert_success
  assert_line --index 0 "host first, system first, protocol 5"
}

@test "SIGHUP makes piod reopen its --log file after it was renamed" {
  start_fg hup --log "$D/piod.log"
  pio_wait_until 5 grep -q serving "$D/piod.log"
  mv "$D/piod.log" "$D/piod.log.1"
  kill -HUP "$PID"
  pio_wait_until 5 test -f "$D/piod.log" || fail "no new log file after SIGHUP"
  pio_wait_until 5 grep -q "log reopened" "$D/piod.log"
  kill -0 "$PID" || fail "SIGHUP stopped piod"
  stop_wait "$PID" 5
  [ "$RC" -eq 0 ]
  grep -q "stopped" "$D/piod.log"
  if grep -q "stopped" "$D/piod.log.1"; then fail "piod still wrote to the renamed file"; fi
}

@test "a pair started 3 times logs no authentication failure: channels that race the peer's hello wait quietly" {
  source "$PIO_SRC/tests/lib/piod.bash"
  local k
  for k in 1 2 3; do
    mkdir -p "$D/p$k"
    pio_pair_loopback "$D/p$k" 4
    pio_piods_stop
    _PIO_PIDS=()
    # a channel whose proof was right but came before the peer's hello used
    # to be refused as "authentication failed" (issue 28)
    run grep -h "authentication failed\|refused data channel" "$D/p$k/A.log" "$D/p$k/B.log"
    assert_output ""
    run grep -c "channel [0-3] to [AB] up" "$D/p$k/A.log" "$D/p$k/B.log"
    assert_output --partial "A.log:4"
    assert_output --partial "B.log:4"
  done
}
