#!/usr/bin/env bats
# perf.bats - pio-perf: ping-pong and stream over a loopback piod pair, and clear failures.
# SPDX-License-Identifier: BSD-3-Clause
#
# Quick (well under 40 s): short runs (-n 20) on loopback pairs with one or
# two channels; the numbers are not judged, only that the table is sane and
# that the data checks passed (exit 0). Benchmarks proper live in bench/.

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

PERF=$PIO_BUILD/bin/pio-perf
SIZES="0,8,64K+1,1M"
NSIZES=4

setup() {
  [ -x "$PERF" ] || fail "$PERF is missing: run make"
}

teardown() {
  pio_piods_stop
  pio_cleanup
}

# perf CLIENT_ARGS...: a pio-perf server on B in the background, the client
# on A under `run`; then waits for the server (its status in $srv_status).
perf() {
  PIO_SOCKET=$PIO_SOCK_B "$PERF" --server --timeout 20 >"$BATS_TEST_TMPDIR/srv.log" 2>&1 </dev/null &
  local sp=$!
  echo "pid $sp" >>"$(_pio_registry)"
  PIO_SOCKET=$PIO_SOCK_A run timeout 30 "$PERF" --timeout 20 "$@"
  srv_status=0
  wait "$sp" || srv_status=$?
}

# sane_table TEST ITERS: one data row per size of $SIZES, in order, with the
# test name, the iterations, a positive time and a bandwidth > 0 for size > 0.
sane_table() {
  local t=$1 n=$2
  local rows
  rows=$(printf '%s\n' "${lines[@]}" | grep -v '^#')
  assert_equal "$(wc -l <<<"$rows")" "$NSIZES"
  awk -v t="$t" -v n="$n" -v want="0 8 65537 1048576" '
    BEGIN { split(want, w, " ") }
    { i++
      if ($1 != t) { print "row " i ": test " $1 ", expected " t; bad = 1 }
      if ($2 != w[i]) { print "row " i ": size " $2 ", expected " w[i]; bad = 1 }
      if ($3 != n) { print "row " i ": iters " $3 ", expected " n; bad = 1 }
      if (!($6 > 0)) { print "row " i ": usec/op " $6 " not > 0"; bad = 1 }
      if ($2 > 0 && !($7 > 0)) { print "row " i ": MB/s " $7 " not > 0"; bad = 1 }
    }
    END { exit bad }' <<<"$rows" || fail "bad table: $output"
}

@test "pingpong over one channel: sizes 0, 8, 64K+1, 1M; data checked; sane table" {
  pio_pair_loopback "$BATS_TEST_TMPDIR/pair" 1
  perf -t pingpong -s "$SIZES" -n 20 -w 2
  assert_success
  assert_output --partial "# pio-perf"
  assert_output --partial "1 MB = 10^6 bytes"
  sane_table pingpong 20
  assert_equal "$srv_status" 0
}

@test "--json: the client's run and rows (named as the CSV columns), the server's rounds" {
  pio_pair_loopback "$BATS_TEST_TMPDIR/pair" 2
  PIO_SOCKET=$PIO_SOCK_B "$PERF" --server --json --timeout 20 >"$BATS_TEST_TMPDIR/srv.json" \
    2>"$BATS_TEST_TMPDIR/srv.err" </dev/null &
  local sp=$!
  echo "pid $sp" >>"$(_pio_registry)"
  PIO_SOCKET=$PIO_SOCK_A run timeout 30 "$PERF" --json --timeout 20 -t stream -s "$SIZES" -n 20 -w 2 -b USER -k 2
  assert_success
  local client=$output rc=0
  # (not `run wait`: run's subshell cannot wait for this shell's child)
  wait "$sp" || rc=$?
  cat "$BATS_TEST_TMPDIR/srv.err" # shown on failure
  [ "$rc" -eq 0 ]
  run python3 -c '
import json, sys
c = json.loads(sys.argv[1])
s = json.load(open(sys.argv[2]))
rows = c["rows"]
assert [r["size"] for r in rows] == [0, 8, 65537, 1048576], rows
assert all(r["iters"] == 20 and r["usec_per_op"] > 0 for r in rows), rows
assert all(r["MBps"] > 0 for r in rows if r["size"]), rows
print(c["test"], c["balance"], c["k"], c["mode"], c["channels"], c["up"], s["role"], s["rounds"])' \
    "$client" "$BATS_TEST_TMPDIR/srv.json"
  assert_output "stream USER 2 blocking 2 2 server 4"
}

@test "stream over two channels, USER round-robin, and a CSV" {
  pio_pair_loopback "$BATS_TEST_TMPDIR/pair" 2
  perf -t stream -s "$SIZES" -n 20 -w 2 -b USER -k 2 --csv "$BATS_TEST_TMPDIR/out.csv"
  assert_success
  assert_output --partial "2 channels"
  sane_table stream 20
  assert_equal "$srv_status" 0
  run cat "$BATS_TEST_TMPDIR/out.csv"
  assert_line --index 0 "test,size,iters,balance,mode,usec_per_op,MBps"
  assert_line --index 4 --regexp '^stream,1048576,20,USER,blocking,[0-9.]+,[0-9.]+$'
  assert_equal "${#lines[@]}" 5
}

@test "sync mode with DYNAMIC and STATIC balancing" {
  pio_pair_loopback "$BATS_TEST_TMPDIR/pair" 2
  perf -t pingpong -s "$SIZES" -n 20 -w 2 -b DYNAMIC -m sync
  assert_success
  sane_table pingpong 20
  assert_output --partial "DYNAMIC  sync"
  perf -t stream -s "$SIZES" -n 20 -w 2 -b STATIC -m sync
  assert_success
  sane_table stream 20
}

@test "oneway, blocking and nonblocking (PIO_Isend): data checked; sane table" {
  pio_pair_loopback "$BATS_TEST_TMPDIR/pair" 2
  perf -t oneway -s "$SIZES" -n 20 -w 2 -b DYNAMIC
  assert_success
  assert_output --partial "time in the send call per message"
  sane_table oneway 20
  assert_equal "$srv_status" 0
  perf -t oneway -s "$SIZES" -n 20 -w 2 -b DYNAMIC -m nonblocking
  assert_success
  sane_table oneway 20
  assert_output --partial "DYNAMIC  nonblocking"
  assert_equal "$srv_status" 0
  # nonblocking is for oneway only
  run "$PERF" -t stream -m nonblocking
  assert_failure 2
  assert_output --partial "-m nonblocking goes with -t oneway only"
}

@test "without a piod pio-perf fails with a clear message" {
  PIO_SOCKET=$BATS_TEST_TMPDIR/none.sock run "$PERF" -s 8
  assert_failure 1
  assert_output --partial "PIO_Init"
  assert_output --partial "no piod is running here"
  assert_output --partial "$BATS_TEST_TMPDIR/none.sock"
  PIO_SOCKET=$BATS_TEST_TMPDIR/none.sock run "$PERF" --server
  assert_failure 1
  assert_output --partial "no piod is running here"
}

@test "without a server the client names what is missing; bad options exit 2" {
  pio_pair_loopback "$BATS_TEST_TMPDIR/pair" 1
  PIO_SOCKET=$PIO_SOCK_A PIO_PARTNER_TIMEOUT=1 run timeout 20 "$PERF" -s 8 --timeout 10
  assert_failure 1
  assert_output --partial "PIO_Setpartner"
  assert_output --partial "pio-perf --server"
  run "$PERF" -s 8:x
  assert_failure 2
  assert_output --partial "not a size list"
  run "$PERF" -b SOMETIMES
  assert_failure 2
  run "$PERF" -t latency
  assert_failure 2
}
