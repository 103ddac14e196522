#!/usr/bin/env bats
# pio_errors.bats - errors that need special piods: a peer that refuses our key, a full pool.
# SPDX-License-Identifier: BSD-3-Clause

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

CHECK=$PIO_BUILD/tests/prog/pio-check

teardown() {
  pio_cleanup
}

@test "a peer holding a stale key for us refuses us: logged on both sides, PIO_EREFUSED to the application" {
  a=$BATS_TEST_TMPDIR/a b=$BATS_TEST_TMPDIR/b old=$BATS_TEST_TMPDIR/old
  _pio_keys "$a" A B
  _pio_keys "$old" A                               # A's key before it was regenerated
  mkdir -p "$b/keys"
  cp "$a/keys/B.key" "$a/keys/B.pub" "$old/keys/A.pub" "$b/keys/"
  read -r cp dp < <(pio_free_port 2)
  _pio_start A "$a" "" -- --listen 127.3.0.1 --peer B=127.4.0.1 --control-port "$cp" --data-port "$dp"
  _pio_start B "$b" "" -- --listen 127.4.0.1 --peer A=127.3.0.1 --control-port "$cp" --data-port "$dp"
  _pio_wait_sock "$a/A.sock"
  _pio_wait_sock "$b/B.sock"
  run env PIO_SOCKET="$a/A.sock" PIO_PARTNER_TIMEOUT=3 timeout 30 "$CHECK" send sizes -a ra -p rb
  assert_failure
  assert_output --partial "PIO_EREFUSED"
  pio_wait_until 10 grep -q "refused control connection from" "$b/B.log"
  grep -q "peer B refused our control connection" "$a/A.log"
  # and no data channel was ever accepted from the refused peer
  ! grep -q "channel 0 from A accepted" "$b/B.log"
}

@test "a piod whose pool is full refuses the next process with PIO_EPOOL" {
  d=$BATS_TEST_TMPDIR/p
  _pio_keys "$d" P
  read -r cp dp < <(pio_free_port 2)
  _pio_start P "$d" "" -- --listen 127.5.0.1 --control-port "$cp" --data-port "$dp" \
    --pool 64M --proc-pool 32M
  _pio_wait_sock "$d/P.sock"
  PIO_SOCKET=$d/P.sock "$CHECK" send hold -a h1 -n 20 >"$BATS_TEST_TMPDIR/h1" 2>&1 &
  PIO_SOCKET=$d/P.sock "$CHECK" send hold -a h2 -n 20 >"$BATS_TEST_TMPDIR/h2" 2>&1 &
  pio_wait_until 10 grep -q "OK hold" "$BATS_TEST_TMPDIR/h1"
  pio_wait_until 10 grep -q "OK hold" "$BATS_TEST_TMPDIR/h2"
  run env PIO_SOCKET="$d/P.sock" timeout 30 "$CHECK" send hold -a h3 -n 0
  assert_failure
  assert_output --partial "PIO_EPOOL"
  # the piod keeps serving: the same process id may join once a slot frees
  run env PIO_SOCKET="$d/P.sock" pio-info --json
  assert_success
  assert_output --partial '"joined": 1'
}

@test "the same process of an application cannot join twice (PIO_EEXIST)" {
  d=$BATS_TEST_TMPDIR/q
  _pio_keys "$d" Q
  read -r cp dp < <(pio_free_port 2)
  _pio_start Q "$d" "" -- --listen 127.6.0.1 --control-port "$cp" --data-port "$dp"
  _pio_wait_sock "$d/Q.sock"
  PIO_SOCKET=$d/Q.sock "$CHECK" send hold -a dup -n 20 >"$BATS_TEST_TMPDIR/d1" 2>&1 &
  pio_wait_until 10 grep -q "OK hold" "$BATS_TEST_TMPDIR/d1"
  run env PIO_SOCKET="$d/Q.sock" timeout 30 "$CHECK" send hold -a dup -n 0
  assert_failure
  assert_output --partial "PIO_EEXIST"
}

@test "a data channel to a port where nothing listens says so and names data-port" {
  d=$BATS_TEST_TMPDIR/np
  mkdir -p "$d"
  _pio_keys "$d" A B
  read -r cp dp wrong < <(pio_free_port 3)
  printf 'name = A\nlisten = 127.1.0.1\ncontrol-port = %s\ndata-port = %s\n[peer B]\naddr = 127.2.0.1\ndata-port = %s\n' \
    "$cp" "$dp" "$wrong" >"$d/A.conf"
  printf 'name = B\nlisten = 127.2.0.1\ncontrol-port = %s\ndata-port = %s\n[peer A]\naddr = 127.1.0.1\n' \
    "$cp" "$dp" >"$d/B.conf"
  pio_start_conf A "$d" "" "$d/A.conf"
  pio_start_conf B "$d" "" "$d/B.conf"
  for _ in $(seq 100); do grep -q "nothing listens" "$d/A.log" && break; sleep 0.1; done
  cat "$d/A.log"
  grep -q "channel 0 to B: nothing listens on 127.2.0.1 port $wrong (is piod running there? does its data-port say $wrong?)" "$d/A.log"
  # said once, not at every retry
  [ "$(grep -c "channel 0 to B: nothing listens" "$d/A.log")" -eq 1 ]
}
