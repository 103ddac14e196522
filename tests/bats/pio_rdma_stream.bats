#!/usr/bin/env bats
# pio_rdma_stream.bats - two piods whose channels use the rdma transport (UCX streams).
# SPDX-License-Identifier: BSD-3-Clause
#
# A bed of 2 hosts x 2 links; each piod reads "transport = rdma" from a
# config file (the rest comes from pio_pair_testbed's flags) and UCX moves
# the bytes over tcp (UCX_TLS=tcp: the bed has no RDMA hardware). The
# transport's own behaviour is checked by the conformance suite
# (tests/conformance/, test_conformance_rdma); this file checks that a piod
# runs over it end to end.

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

CHECK=$PIO_BUILD/tests/prog/pio-check

# links_running BED: wait (up to 10 s) until every link of h1 and h2 is up
# (operstate). UCX lists the network devices once, when a process first
# uses it, and never uses one that was not running then; a new bed's links
# take about a second to get their carrier.
links_running() {
  local h d s i
  for h in h1 h2; do
    for d in eth0 eth1; do
      for ((i = 0; i < 100; i++)); do
        s=$("$PIO_TESTBED" exec "$1" "$h" cat "/sys/class/net/$d/operstate") || return 1
        [ "$s" = up ] && break
        sleep 0.1
      done
      [ "$s" = up ] || { echo "link $d of $h is $s after 10 s" >&2; return 1; }
    done
  done
}

setup_file() {
  [ "$(id -u)" -eq 0 ] || return 0
  export BED
  BED=$(pio_unique_name rs)
  pio_bed_up "$BED" --hosts 2 --links 2 --rate 1gbit >/dev/null
  links_running "$BED"
  export PAIR_DIR=$BATS_FILE_TMPDIR/pair
  mkdir -p "$PAIR_DIR"
  printf 'transport = rdma\n' >"$PAIR_DIR/rdma.conf"
  export UCX_TLS=tcp
  PIO_PIOD_FLAGS="${PIO_PIOD_FLAGS:-} --config $PAIR_DIR/rdma.conf" \
    pio_pair_testbed "$PAIR_DIR" "$BED" 2
  export PIO_SOCK_A PIO_SOCK_B
}

teardown_file() {
  pio_cleanup
}

setup() {
  pio_need_root
}

@test "rdma transport: 64 MiB crosses 2 channels pinned to their links and arrives intact" {
  # both piods run the rdma transport, and their channels are up on the links
  grep -q 'transport rdma' "$PAIR_DIR/A.log"
  grep -q 'transport rdma' "$PAIR_DIR/B.log"
  run env PIO_SOCKET="$PIO_SOCK_A" pio-info --json
  assert_success
  for i in 0 1; do
    assert_output --partial "\"local\": \"198.18.$i.1:"
    assert_output --partial "\"remote\": \"198.18.$i.2:"
  done
  [ "$(grep -c '"state": "up"' <<<"$output")" -eq 2 ]

  PIO_SOCKET=$PIO_SOCK_B timeout 120 "$CHECK" recv sizes -a rs-r -p rs-s -S 64M \
    >"$BATS_TEST_TMPDIR/r" 2>&1 &
  rp=$!
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 120 "$CHECK" send sizes -a rs-s -p rs-r -S 64M -c DYNAMIC -m sync
  echo "$output"
  assert_success
  wait "$rp" || { cat "$BATS_TEST_TMPDIR/r"; false; }
  cat "$BATS_TEST_TMPDIR/r"
  grep -q '^OK sizes: 1 messages' "$BATS_TEST_TMPDIR/r"
  # the bytes went over the channels (not the control plane)
  rx=$(PIO_SOCKET=$PIO_SOCK_B pio-info --json | python3 -c '
import json, sys
print(sum(c["rx_bytes"] for c in json.load(sys.stdin)["channels"]))')
  [ "$rx" -ge $((64 << 20)) ]
}

@test "an unknown transport name stops piod at start with a message naming the known ones" {
  printf 'transport = carrier-pigeon\n' >"$BATS_TEST_TMPDIR/bad.conf"
  run timeout 20 "$PIOD" -f --config "$BATS_TEST_TMPDIR/bad.conf" --name X --system X \
    --listen 127.0.0.1 --keys "$BATS_TEST_TMPDIR/keys" --socket "$BATS_TEST_TMPDIR/x.sock"
  echo "$output"
  [ "$status" -ne 0 ]
  [ "$status" -ne 124 ]
  assert_output --partial "bad.conf:1: unknown transport 'carrier-pigeon': expected one of tcp, rdma"
  [ ! -e "$BATS_TEST_TMPDIR/x.sock" ]
}
