#!/usr/bin/env bats
# pio_balance.bats - DYNAMIC balancing over links of unequal speed: 2 hosts x 2 links, 100 + 400 Mbit/s.
# SPDX-License-Identifier: BSD-3-Clause
#
# Link 0 is limited to 100 Mbit/s and link 1 to 400 Mbit/s, each way (tc tbf,
# `pio-testbed rate` on both hosts' end of link 1). The piods run inside the
# bed's namespaces, one channel per link; the applications reach their piod
# through its socket file. A DYNAMIC transfer should put bytes on each
# channel in proportion to its measured rate: ideally 400 / 500 = 80% on the
# fast link; the test accepts 70-90%.

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

CHECK=$PIO_BUILD/tests/prog/pio-check

setup_file() {
  [ "$(id -u)" -eq 0 ] || return 0
  export BED
  BED=$(pio_unique_name pbal)
  pio_bed_up "$BED" --hosts 2 --links 2 --rate 100mbit >/dev/null
  "$PIO_TESTBED" rate "$BED" h1 1 400mbit
  "$PIO_TESTBED" rate "$BED" h2 1 400mbit
  export PAIR_DIR=$BATS_FILE_TMPDIR/pair
  mkdir -p "$PAIR_DIR"
  # fixed 1 MiB chunks: the any-source case needs a first chunk whose time
  # on the slowed link is known (chunks sized by the rate would be small)
  PIO_PIOD_FLAGS="${PIO_PIOD_FLAGS:-} --chunk-ms 0" pio_pair_testbed "$PAIR_DIR" "$BED" 2
  export PIO_SOCK_A PIO_SOCK_B
}

teardown_file() {
  pio_cleanup
}

setup() {
  pio_need_root
}

# bytes carried per channel to peer B, in channel order, from pio-info --json:
# FIELD (tx_bytes|rx_bytes)
channel_bytes() {
  PIO_SOCKET=$1 pio-info --json | python3 -c '
import json, sys
info = json.load(sys.stdin)
chans = sorted((c for c in info["channels"] if c["peer"] in ("A", "B")), key=lambda c: c["index"])
print(" ".join(str(c[sys.argv[1]]) for c in chans))' "$2"
}

@test "256 MiB with PIO_DYNAMIC over 100 + 400 Mbit/s links: 70-90% on the fast link, intact" {
  # the bed is what the test says: link 0 slow, link 1 fast, on both hosts
  run "$PIO_TESTBED" status "$BED"
  assert_success
  [ "$(grep -cE '^h[12] +0 .* 100Mbit ' <<<"$output")" -eq 2 ]
  [ "$(grep -cE '^h[12] +1 .* 400Mbit ' <<<"$output")" -eq 2 ]

  before=$(channel_bytes "$PIO_SOCK_A" tx_bytes)
  rx_before=$(channel_bytes "$PIO_SOCK_B" rx_bytes)
  PIO_SOCKET=$PIO_SOCK_B timeout 60 "$CHECK" recv sizes -a bal-r -p bal-s -S 256M \
    >"$BATS_TEST_TMPDIR/r" 2>&1 &
  rp=$!
  start=$(date +%s.%N)
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 60 "$CHECK" send sizes -a bal-s -p bal-r -S 256M \
    -c DYNAMIC -m sync
  end=$(date +%s.%N)
  echo "$output"
  assert_success
  # pio-check recv checks every byte of the message against the pattern
  wait "$rp" || { cat "$BATS_TEST_TMPDIR/r"; false; }
  grep -q '^OK sizes: 1 messages (256M)' "$BATS_TEST_TMPDIR/r"
  after=$(channel_bytes "$PIO_SOCK_A" tx_bytes)
  rx_after=$(channel_bytes "$PIO_SOCK_B" rx_bytes)
  python3 - "$before" "$after" "$rx_before" "$rx_after" "$start" "$end" <<'PY'
import sys
b, a, rb, ra = ([int(x) for x in s.split()] for s in sys.argv[1:5])
d = [y - x for x, y in zip(b, a)]
rx = [y - x for x, y in zip(rb, ra)]
total = sum(d)
secs = float(sys.argv[6]) - float(sys.argv[5])
share = d[1] / total if total else 0.0
print("piod A sent per channel (MiB): link 0 (100 Mbit/s) %.1f, link 1 (400 Mbit/s) %.1f;"
      " fast-link share %.1f%%; %.1f MiB in %.1f s = %.1f MB/s"
      % (d[0] / 2**20, d[1] / 2**20, 100 * share, total / 2**20, secs, total / secs / 1e6))
assert len(d) == 2, "expected 2 channels, got %d" % len(d)
assert total >= 256 * 2**20, "less than 256 MiB crossed the channels"
assert sum(rx) >= 256 * 2**20, "piod B counted only %d bytes received" % sum(rx)
assert 0.70 <= share <= 0.90, "the fast link carried %.1f%% of the bytes, not 70-90%%" % (100 * share)
PY
}

@test "a receive open to any process completes with the message whose data came first" {
  # process 0 of any-s sends 4 MiB on link 0, slowed to 10 Mbit/s (a 1 MiB
  # chunk takes 0.84 s); process 1 sends 256 KiB on the 400 Mbit/s link 0.3 s
  # later, and its data is complete long before process 0's first chunk
  "$PIO_TESTBED" rate "$BED" h1 0 10mbit
  "$PIO_TESTBED" rate "$BED" h2 0 10mbit
  PIO_SOCKET=$PIO_SOCK_B timeout 60 "$CHECK" recv anysource -a any-r -p any-s \
    >"$BATS_TEST_TMPDIR/r" 2>&1 &
  rp=$!
  for r in 0 1; do
    PIO_SOCKET=$PIO_SOCK_A timeout 60 "$CHECK" send anysource -a any-s -p any-r -P 2 -r "$r" \
      >"$BATS_TEST_TMPDIR/s$r" 2>&1 &
    sp[$r]=$!
  done
  for r in 0 1; do wait "${sp[$r]}" || { cat "$BATS_TEST_TMPDIR/s$r"; false; }; done
  rc=0
  wait "$rp" || rc=$?
  "$PIO_TESTBED" rate "$BED" h1 0 100mbit
  "$PIO_TESTBED" rate "$BED" h2 0 100mbit
  cat "$BATS_TEST_TMPDIR/r"
  [ "$rc" -eq 0 ]
  grep -q '^OK anysource: the small message completed first' "$BATS_TEST_TMPDIR/r"
}
