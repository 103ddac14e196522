#!/usr/bin/env bats
# anco_hosts.bats - anco across test-bed hosts (issue 31): one job of 4
# processes, 2 on h1 and 2 on h3, reads a file on h2's file service
# (pio://B/...) through the pooled cache; the one-sided gets between the
# hosts go over UCX on tcp (UCX_TLS=tcp: UCX would otherwise take shared
# memory between namespaces of one machine) and so cross the links.
# SPDX-License-Identifier: BSD-3-Clause
#
# Bed: 3 hosts, one 1 Gbit/s link each; piod A in h1, piod B in h2
# exporting the file. Every process joins A through its socket (a job's
# processes on several piods cannot reach each other yet: see
# docs/design-notes.md, "Issue 31, anco across hosts"). Rank r runs on h1
# when r is even, on h3 when odd, so group r % 2 is the host.

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

JOB=$PIO_BUILD/tests/prog/anco-job

# carrier_up HOST: HOST's link has its carrier
carrier_up() { [ "$("$PIO_TESTBED" exec "$BED" "$1" cat /sys/class/net/eth0/carrier 2>/dev/null)" = 1 ]; }

setup_file() {
  [ "$(id -u)" -eq 0 ] || return 0
  export BED EXP PAIR_DIR
  BED=$(pio_unique_name anch)
  pio_bed_up "$BED" --hosts 3 --links 1 --rate 1gbit >/dev/null
  # UCX leaves out an interface without carrier when a process starts
  # ("Destination is unreachable"): wait for every host's link
  local h
  for h in h1 h2 h3; do
    pio_wait_until 10 carrier_up "$h"
  done
  EXP=$BATS_FILE_TMPDIR/export
  PAIR_DIR=$BATS_FILE_TMPDIR/pair
  mkdir -p "$EXP" "$PAIR_DIR"
  head -c $((32 << 20)) /dev/urandom >"$EXP/f32"
  PIO_PIOD_FLAGS="${PIO_PIOD_FLAGS:-} --export $EXP" pio_pair_testbed "$PAIR_DIR" "$BED" 1
  export PIO_SOCK_A PIO_SOCK_B
  pio_wait_until 20 sh -c "PIO_SOCKET=$PIO_SOCK_A $PIO_INFO | grep -q '^pio\.files\.B '"
}

teardown_file() {
  pio_cleanup
}

setup() {
  pio_need_root
  [ -x "$JOB" ] || fail "not built: run make"
  W=$BATS_TEST_TMPDIR
}

# hostjob APP MODE ARG: 4 processes of anco-job on h1 and h3 reading
# pio://B/f32; all output in $W/APP.out; fails when one process fails
hostjob() {
  local app=$1 mode=$2 arg=$3 r h rc=0 pids=()
  for r in 0 1 2 3; do
    h=h1
    [ $((r % 2)) -eq 1 ] && h=h3
    "$PIO_TESTBED" exec "$BED" "$h" env UCX_TLS=tcp PIO_SOCKET="$PIO_SOCK_A" ANCO_APP="$app" \
      ANCO_JOB_LOCAL="$EXP/f32" timeout 240 "$JOB" "$mode" pio://B/f32 "$r" 4 "$arg" \
      >"$W/$app.$r" 2>&1 &
    pids+=($!)
  done
  for r in "${pids[@]}"; do wait "$r" || rc=1; done
  cat "$W/$app".[0-9]* >"$W/$app.out"
  cat "$W/$app.out"
  return $rc
}

# total FIELD FILE: the sum of a counter over the processes' stats lines
total() {
  awk -v f="$1" '/^anco: rank/ { for (i = 4; i < NF; i++) if ($i == f) s += $(i + 1) } END { print s + 0 }' "$2"
}

h3_rx() { "$PIO_TESTBED" exec "$BED" h3 cat /sys/class/net/eth0/statistics/rx_bytes; }

@test "4 processes on 2 hosts, random reads over tcp: every byte equals the file" {
  hostjob hrnd random 40
  [ "$(grep -c 'bytes checked$' "$W/hrnd.out")" -eq 4 ]
  [ "$(total remote "$W/hrnd.out")" -gt 0 ]
}

@test "all 4 on 2 hosts want the same block at once: file-system reads per block <= groups (1, 2)" {
  local g fs rx0 rx
  for g in 1 2; do
    rx0=$(h3_rx)
    # on demand only: read-ahead would load blocks 16.. past the 16 read
    ANCO_READAHEAD=0 ANCO_GROUPS=$g hostjob hsame$g same 16
    rx=$(($(h3_rx) - rx0))
    [ "$(grep -c 'bytes checked$' "$W/hsame$g.out")" -eq 4 ]
    fs=$(total fs "$W/hsame$g.out")
    echo "groups $g: $fs file-system reads for 16 blocks; h3 received $rx bytes"
    [ "$fs" -ge 16 ]
    [ "$fs" -le $((16 * g)) ]
    [ "$(total remote "$W/hsame$g.out")" -eq $((4 * 16 - fs)) ]
    # h3's processes hold all 16 blocks: each came in over h3's link at least once
    [ "$rx" -ge $((16 << 20)) ]
  done
}
