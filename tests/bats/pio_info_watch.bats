#!/usr/bin/env bats
# pio_info_watch.bats - pio-info --watch: live rates from the piod's counters.
# SPDX-License-Identifier: BSD-3-Clause
#
# Non-interactive (stdout a file or pipe): one table per refresh, a blank
# line between, --count ends it. A loopback pair with two channels; pio-perf
# streams from A to B while the tables are taken, and is checked to be still
# streaming after the last one, so every refresh fell inside the transfer.
# Under a pseudo-terminal (script(1)) the escapes that redraw in place and
# restore the cursor are checked. Usage errors come before any connection.

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

PERF=$PIO_BUILD/bin/pio-perf

teardown() {
  pio_piods_stop
  pio_cleanup
}

# tx_sum SOCK: bytes sent on all channels, from pio-info --json
tx_sum() {
  PIO_SOCKET=$1 "$PIO_INFO" --json |
    python3 -c 'import json,sys; print(sum(c["tx_bytes"] for c in json.load(sys.stdin)["channels"]))'
}

# tables: the --watch output on stdin as JSON, one list per table of its
# channel rows {peer, ch, state, tx, rx} (rates in B/s, null for "-")
tables() {
  python3 -c '
import json, re, sys
units = {"B/s": 1, "kB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9, "TB/s": 1e12}
rate = r"(-|[0-9.]+ [kMGT]?B/s)"
row = re.compile(r"^(\S+)\s+([0-9]+)\s+(\S+)\s+\S+\s+\S+\s+" + rate + r"\s+" + rate + r"\s")
def val(s):
    if s == "-":
        return None
    n, u = s.split()
    return float(n) * units[u]
out = []
for t in sys.stdin.read().split("\n\npio-info --watch"):
    rows = []
    for l in t.splitlines():
        m = row.match(l)
        if m:
            rows.append({"peer": m[1], "ch": int(m[2]), "state": m[3], "tx": val(m[4]), "rx": val(m[5])})
    out.append(rows)
print(json.dumps(out))'
}

@test "--watch 0.5 --count 6 during a stream: 6 tables, both channels up, the sender's tx rate > 0" {
  pio_pair_loopback "$BATS_TEST_TMPDIR/pair" 2
  PIO_SOCKET=$PIO_SOCK_B pio_spawn "$BATS_TEST_TMPDIR/srv.log" "$PERF" --server --timeout 60 >/dev/null
  # 1 MiB messages, far more than a test lasts: stopped by pio_cleanup
  local cp
  cp=$(PIO_SOCKET=$PIO_SOCK_A pio_spawn "$BATS_TEST_TMPDIR/cli.log" "$PERF" --timeout 60 -t stream \
    -s 1M -n 10000000 -w 2)
  pio_wait_until 20 eval '[ "$(tx_sum "$PIO_SOCK_A")" -gt 0 ]'
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 30 "$PIO_INFO" --watch 0.5 --count 6
  assert_success
  local watched=$output
  # the transfer went on during every refresh
  run kill -0 "$cp"
  assert_success
  run tables <<<"$watched"
  assert_success
  run python3 -c '
import json, sys
t = json.loads(sys.argv[1])
assert len(t) == 6, "%d tables" % len(t)
for i, rows in enumerate(t):
    chans = sorted((r["peer"], r["ch"], r["state"]) for r in rows)
    assert chans == [("B", 0, "up"), ("B", 1, "up")], "table %d: %s" % (i + 1, chans)
assert all(r["tx"] is None for r in t[0]), "first table: rates before a second answer"
assert all(r["tx"] is not None for rows in t[1:] for r in rows), "later tables: every rate known"
best = max(r["tx"] for rows in t[1:] for r in rows)
assert best > 0, "no refresh showed data leaving A: %s" % t
print("best tx rate", best)' "$output"
  assert_success
  assert_output --partial "best tx rate"
}

@test "--watch: tables separated by one blank line, per-peer and host totals, the applications" {
  pio_pair_loopback "$BATS_TEST_TMPDIR/pair" 2
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 30 "$PIO_INFO" --watch 0.2 --count 3
  assert_success
  run grep -c '^pio-info --watch 0.2: host A, system A, refresh [123] at ' <<<"$output"
  assert_output 3
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 30 "$PIO_INFO" --watch 0.2 --count 2
  assert_success
  # a blank line ends each table but the last, before the next header
  run awk 'prev == "" && /^pio-info --watch/ && NR > 1 { n++ } { prev = $0 } END { print n + 0 }' <<<"$output"
  assert_output 1
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 30 "$PIO_INFO" --watch 0.2 --count 2
  assert_line --regexp '^B +all +2/2 up '
  assert_line --regexp '^total +all +2/2 up '
  assert_line --regexp '^application +system +nprocs +joined$'
  refute_line --partial "(no peers configured)"
}

@test "--watch on a terminal: redraws in place, hides the cursor and shows it again" {
  pio_pair_loopback "$BATS_TEST_TMPDIR/pair" 1
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 30 script -qec "$PIO_INFO --watch 0.2 --count 2" /dev/null
  assert_success
  # the cursor hidden first, home + clear before each table, the cursor shown
  # and line wrap back on at the end
  run python3 -c '
import sys
o = sys.argv[1]
assert o.startswith("\x1b[?25l\x1b[?7l"), repr(o[:20])
assert o.count("\x1b[H\x1b[2J") == 2, o.count("\x1b[H\x1b[2J")
assert o.rstrip().endswith("\x1b[?7h\x1b[?25h"), repr(o[-20:])
assert "refresh 2 at" in o' "$output"
  assert_success
}

@test "--watch until SIGTERM or SIGINT: exits 0" {
  pio_pair_loopback "$BATS_TEST_TMPDIR/pair" 1
  local sig
  for sig in TERM INT; do
    PIO_SOCKET=$PIO_SOCK_A bg_start "$BATS_TEST_TMPDIR/w.$sig" "$PIO_INFO" --watch 0.2
    pio_wait_until 20 grep -q 'refresh 2 at' "$BATS_TEST_TMPDIR/w.$sig"
    kill -"$sig" "$BG_PID"
    bg_wait "$BG_PID"
    assert_equal "$sig $BG_RC" "$sig 0"
  done
}

@test "--watch: a piod that goes away ends it with a message and status 1" {
  pio_pair_loopback "$BATS_TEST_TMPDIR/pair" 1
  PIO_SOCKET=$PIO_SOCK_A bg_start "$BATS_TEST_TMPDIR/w.log" "$PIO_INFO" --watch 0.2
  local wp=$BG_PID
  pio_wait_until 20 grep -q 'refresh 2 at' "$BATS_TEST_TMPDIR/w.log"
  local ap
  ap=$(cat "$BATS_TEST_TMPDIR/pair/A.pid")
  kill -TERM "$ap"
  pio_wait_until 20 eval '! kill -0 '"$ap"
  pio_wait_until 20 eval '! kill -0 '"$wp"
  bg_wait "$wp"
  assert_equal "$BG_RC" 1
  run cat "$BATS_TEST_TMPDIR/w.log"
  assert_line --regexp "^pio-info: the piod at $PIO_SOCK_A went away \\(.+\\)$"
}

@test "--watch with no piod: a clear message and status 1" {
  run "$PIO_INFO" --watch 0.5 --count 2 --socket "$BATS_TEST_TMPDIR/none.sock"
  assert_failure 1
  assert_output "pio-info: no piod at $BATS_TEST_TMPDIR/none.sock (is piod running? is PIO_SOCKET right?)"
}

@test "--watch: a bad interval or count is a usage error (status 2)" {
  local v
  for v in 0 -1 abc 0.01 1e9 nan; do
    run "$PIO_INFO" --watch "$v" --count 1 --socket "$BATS_TEST_TMPDIR/none.sock"
    assert_failure 2
    assert_output "pio-info: --watch $v: the interval is seconds, 0.1 to 86400"
  done
  run "$PIO_INFO" --watch=abc --socket "$BATS_TEST_TMPDIR/none.sock"
  assert_failure 2
  for v in 0 -3 x; do
    run "$PIO_INFO" --watch 1 --count "$v" --socket "$BATS_TEST_TMPDIR/none.sock"
    assert_failure 2
    assert_output --partial "--count $v: a number of refreshes"
  done
  run "$PIO_INFO" --count 2 --socket "$BATS_TEST_TMPDIR/none.sock"
  assert_failure 2
  assert_output "pio-info: --count goes with --watch"
  run "$PIO_INFO" --watch --json --socket "$BATS_TEST_TMPDIR/none.sock"
  assert_failure 2
  assert_output --partial "--watch prints a table"
}
