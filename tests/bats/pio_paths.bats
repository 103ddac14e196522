#!/usr/bin/env bats
# pio_paths.bats - the paths a message takes: process socket, express lane, control plane.
# SPDX-License-Identifier: BSD-3-Clause
#
# Each test starts its own piod pair on loopback (different flags), so the
# tests are independent of pio_loopback.bats's shared pair.

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

CHECK=$PIO_BUILD/tests/prog/pio-check

teardown() {
  pio_cleanup
  if [ -n "${OWN_DIR:-}" ]; then rm -rf "$OWN_DIR"; fi
}

# order_pair NAME N [args]: N mixed-size messages B <- A must arrive in order.
order_pair() {
  local name=$1 n=$2; shift 2
  PIO_SOCKET=$PIO_SOCK_B timeout 120 "$CHECK" recv order -a "$name-r" -p "$name-s" -n "$n" "$@" \
    >"$BATS_TEST_TMPDIR/r" 2>&1 &
  local rp=$!
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 120 "$CHECK" send order -a "$name-s" -p "$name-r" \
    -n "$n" -c DYNAMIC "$@"
  echo "sender: $output"
  wait "$rp" || { cat "$BATS_TEST_TMPDIR/r"; false; }
  assert_success
  grep -q '^OK' "$BATS_TEST_TMPDIR/r"
}

@test "the express lane comes up both ways and messages keep their order over it" {
  pio_pair_loopback "$BATS_TEST_TMPDIR/x" 2
  d=$BATS_TEST_TMPDIR/x
  pio_wait_until 10 grep -q "express lane to B up" "$d/A.log"
  pio_wait_until 10 grep -q "express lane to A up" "$d/B.log"
  grep -q "express lane from A accepted" "$d/B.log"
  grep -q "express lane from B accepted" "$d/A.log"
  order_pair xl 2000
  # nothing fell back to the control plane
  run grep "express lane to . failed" "$d/A.log" "$d/B.log"
  assert_failure
}

@test "with --no-express the control plane carries every frame, in order" {
  PIO_PIOD_FLAGS=--no-express pio_pair_loopback "$BATS_TEST_TMPDIR/n" 2
  d=$BATS_TEST_TMPDIR/n
  # fewer messages: under ThreadSanitizer every ZeroMQ hop costs dozens of
  # (suppressed) reports, so this path is slow there
  order_pair nx 400
  # no lane opened or accepted (the start-up line about sealing names lanes too)
  run grep -E "express lane (to|from) " "$d/A.log" "$d/B.log"
  assert_failure
}

@test "a process of another user gets a pool that user owns (mode 0600), not the piod's" {
  pio_need_root
  # somewhere nobody can reach the socket (bats' own temp folders are 0700)
  d=$(mktemp -d /tmp/pio-paths-own.XXXXXX)
  OWN_DIR=$d
  chmod 755 "$d"
  pio_pair_loopback "$d/u" 1
  chmod 755 "$d/u"
  d=$d/u
  PIO_SOCKET=$PIO_SOCK_A setpriv --reuid=nobody --regid=nogroup --clear-groups \
    "$CHECK" send hold -a own -n 20 >"$BATS_TEST_TMPDIR/h" 2>&1 &
  pio_wait_until 10 grep -q "OK hold" "$BATS_TEST_TMPDIR/h"
  pool=$(sed -n 's/.*process own:0 of 1 joined (pid [0-9]*, pool \(\/pio-[0-9-]*\)).*/\1/p' "$d/A.log")
  [ -n "$pool" ]
  run stat -c '%U %a' "/dev/shm$pool"
  assert_output "nobody 600"
}

@test "a client that sends garbage is dropped; the piod keeps serving the others" {
  pio_pair_loopback "$BATS_TEST_TMPDIR/g" 1
  d=$BATS_TEST_TMPDIR/g
  # not frames: an HTTP request on the process socket
  timeout 5 python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
s.recv(100)' "$PIO_SOCK_A" || true
  pio_wait_until 10 grep -q "sent bytes that are not frames: disconnected" "$d/A.log"
  order_pair gb 500
}

@test "a piod removes the pools that piods which died left in /dev/shm" {
  # a pool name of a dead piod (that pid does not run)
  pid=4000000
  while kill -0 "$pid" 2>/dev/null; do pid=$((pid + 1)); done
  head -c 4096 /dev/zero >"/dev/shm/pio-$pid-1"
  d=$BATS_TEST_TMPDIR/sweep
  pio_pair_loopback "$d" 1
  [ ! -e "/dev/shm/pio-$pid-1" ]
  grep -q "removed [0-9]* pool(s) left in /dev/shm by piods that are gone" "$d/A.log" "$d/B.log"
}
