#!/usr/bin/env bash
# pingpong.sh - PIO against a plain TCP socket: latency and bandwidth per size, on loopback and between two hosts.
# SPDX-License-Identifier: BSD-3-Clause
#
# The method (issue 31, item 6: fixed before it was run):
#   places  "loopback": a piod pair on 127.0.0.1 with one channel, the
#           applications beside them; "bed": two test-bed hosts joined by one
#           link at 10 Gbit/s (veth: faster than this machine moves TCP, as in
#           rdma.sh), a piod in each, the applications reaching them through
#           their socket paths. The bed needs root; without it
#           only loopback runs (said so).
#   rounds  PINGPONG_ROUNDS (default 5) rounds per place; in each, PIO's
#           ping-pong over every size, then the plain socket's over the
#           same sizes (bench/tcp_pingpong: TCP_NODELAY, blocking reads, the
#           applications' side of PIO: libpio does not spin by default),
#           then a 64 MiB stream of each. Every round is in the CSV.
#   figures per place and size: the median over the rounds of PIO's and the
#           socket's half round trip, and of the rounds' ratios, with the
#           spread (lowest and highest ratio).
# Targets (issue 31), on each place, on the median ratio:
#   8 B half round trip <= 3 x the socket's;
#   every size from 8 KiB to 512 KiB <= 2 x the socket's;
#   and, kept from before, the 64 MiB stream >= 0.6 x the socket's.
# Prints the tables and PASS/MISS lines, writes bench/results/pingpong.csv
# (place, round, tool, test, size, ...) and pingpong.png.
# Exit status: 0 when every run completed (a MISS is reported, not an
# error); 1 when a run failed. Sends nothing off loopback and the bed.
#
# Environment: BUILD (default build/default), PINGPONG_SIZES (default
# 8,64,512,4K,8K,16K,32K,64K,128K,256K,512K,1M,4M), PINGPONG_STREAM (64M),
# PINGPONG_ROUNDS (5), PINGPONG_PLACES ("loopback bed"), PIO_BENCH_RESULTS,
# PINGPONG_BALANCE (pio-perf -b; default DYNAMIC, the connection pcp and
# the Python package use when the caller names none: with one channel it
# is the same link as USER's; a direct lane, on by default for a
# conversation such as this, takes USER messages only up to the eager
# limit, since they named their channel, DYNAMIC ones up to PIO_LANE_MAX).
# The balance and every PIO_LANE_* setting are said in the banner.
set -u
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
PERF=$BUILD/bin/pio-perf
TCPPP=$BUILD/bench/tcp_pingpong
SIZES=${PINGPONG_SIZES:-8,64,512,4K,8K,16K,32K,64K,128K,256K,512K,1M,4M}
STREAM=${PINGPONG_STREAM:-64M}
ROUNDS=${PINGPONG_ROUNDS:-5}
PLACES=${PINGPONG_PLACES:-loopback bed}

bench_need "$PERF" "$TCPPP" "$BUILD/sbin/piod" || exit 1
bench_work
if [ "$(id -u)" -ne 0 ] && [[ " $PLACES " == *" bed "* ]]; then
  echo "pingpong.sh: not root: the bed (network namespaces) is left out; loopback only"
  PLACES=${PLACES//bed/}
fi

fail=0
# run NAME SERVER_CMD... -- CLIENT_CMD...: server in the background, client in
# the foreground; both must exit 0.
run() {
  local name=$1; shift
  local srv=() cli=()
  while [ "$1" != "--" ]; do srv+=("$1"); shift; done
  shift; cli=("$@")
  "${srv[@]}" >"$work/$name.srv.log" 2>&1 &
  local sp=$! rc src
  daemons+=("$sp")
  "${cli[@]}" >"$work/$name.cli.log" 2>&1
  rc=$?
  if [ $rc -ne 0 ]; then kill "$sp" 2>/dev/null; fi
  wait "$sp"; src=$?
  if [ $rc -ne 0 ] || [ $src -ne 0 ]; then
    echo "pingpong.sh: $name failed (client exit $rc, server exit $src):" >&2
    sed 's/^/  | /' "$work/$name.cli.log" "$work/$name.srv.log" >&2
    fail=1
    return 1
  fi
}

# tcp_server_cmd / tcp_client_cmd PORT: the socket baseline at this place.
tcp_run() {
  local name=$1 port; shift
  port=$(_pio_port)
  if [ "$place" = loopback ]; then
    run "$name" "$TCPPP" --server -B 127.0.0.1 -p "$port" -- \
      "$TCPPP" -p "$port" --csv "$work/tcp.csv" "$@" 127.0.0.1
  else
    local a
    a=$("$TB" addr "$bed" h2 0)
    run "$name" "$TB" exec "$bed" h2 "$TCPPP" --server -B "$a" -p "$port" -- \
      "$TB" exec "$bed" h1 "$TCPPP" -p "$port" --csv "$work/tcp.csv" "$@" "$a"
  fi
}

pio_run() {
  local name=$1; shift
  run "$name" env PIO_SOCKET="$PIO_SOCK_B" "$PERF" --server -q -- \
    env PIO_SOCKET="$PIO_SOCK_A" "$PERF" -b "$BALANCE" -k 1 --csv "$work/pio.csv" "$@"
}

# settings a run may change from the defaults, said in the banner
BALANCE=${PINGPONG_BALANCE:-DYNAMIC}
extra=", balance $BALANCE"
for v in PIO_LANE_MAX PIO_LANE_MIN PIO_LANE_TURNS PIO_SPIN_US; do
  [ -n "${!v:-}" ] && extra+=", $v=${!v} (not the default)"
done
bench_banner ", places: $PLACES, $ROUNDS rounds$extra"
echo "place,round,tool,test,size,iters,balance,mode,usec_per_op,MBps" >"$work/all.csv"
for place in $PLACES; do
  if [ "$place" = loopback ]; then
    echo "-- $place: a piod pair on 127.0.0.1, one channel"
    pio_pair_loopback "$work/pair-$place" 1 || { echo "pingpong.sh: the piod pair did not come up" >&2; exit 1; }
  else
    bench_bed_up pp 2 1 10gbit || { echo "pingpong.sh: the bed did not come up" >&2; exit 1; }
    echo "-- $place: bed $bed, two hosts, one link at 10 Gbit/s"
    pio_pair_testbed "$work/pair-$place" "$bed" 1 || { echo "pingpong.sh: the piod pair did not come up on the bed" >&2; exit 1; }
  fi
  for ((round = 1; round <= ROUNDS; round++)); do
    rm -f "$work/pio.csv" "$work/tcp.csv"
    echo "   round $round of $ROUNDS: PIO ping-pong, socket ping-pong, PIO stream, socket stream"
    pio_run "pio-pp-$place-$round" -t pingpong -s "$SIZES" -q
    tcp_run "tcp-pp-$place-$round" -t pingpong -s "$SIZES"
    pio_run "pio-st-$place-$round" -t stream -s "$STREAM" -q
    tcp_run "tcp-st-$place-$round" -t stream -s "$STREAM"
    for t in pio tcp; do
      [ -s "$work/$t.csv" ] && tail -n +2 "$work/$t.csv" | sed "s/^/$place,$round,$t,/" >>"$work/all.csv"
    done
  done
  pio_piods_stop
  if [ -n "$bed" ]; then "$TB" down "$bed" >/dev/null 2>&1; bed=""; fi
done

if [ $fail -ne 0 ]; then
  echo "pingpong.sh: FAILED: not every run completed" >&2
  exit 1
fi

bench_summary "pingpong.csv pingpong.png" "$work/all.csv" "$RESULTS/pingpong.csv" "$RESULTS/pingpong.png" "$date_s" <<'EOF'
import csv, shutil, sys
src, out_csv, out_png, date = sys.argv[1:5]
shutil.copyfile(src, out_csv)
rows = list(csv.DictReader(open(src)))

def med(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2

def by(place, tool, test):
    """size -> {round: row}"""
    d = {}
    for r in rows:
        if r["place"] == place and r["tool"] == tool and r["test"] == test:
            d.setdefault(int(r["size"]), {})[r["round"]] = r
    return d

def human(s):
    for u, k in (("Mi", 20), ("Ki", 10)):
        if s >= 1 << k and s % (1 << k) == 0:
            return "%d %s" % (s >> k, u)
    return "%d" % s

places = [p for p in ("loopback", "bed") if any(r["place"] == p for r in rows)]
verdicts, table = [], {}
for place in places:
    pp, tp = by(place, "pio", "pingpong"), by(place, "tcp", "pingpong")
    ps, ts = by(place, "pio", "stream"), by(place, "tcp", "stream")
    print()
    print("Ping-pong, %s (half round trip, usec; %s; medians of the rounds, ratio: median of the rounds' PIO / socket, [lowest, highest])" % (place, date))
    print("%10s %10s %10s %8s %17s %6s" % ("size", "PIO us", "socket us", "x socket", "spread", "rounds"))
    table[place] = []
    for s in sorted(set(pp) & set(tp)):
        rs = sorted(set(pp[s]) & set(tp[s]))
        if not rs:
            continue
        pu = [float(pp[s][k]["usec_per_op"]) for k in rs]
        tu = [float(tp[s][k]["usec_per_op"]) for k in rs]
        x = [a / b for a, b in zip(pu, tu)]
        table[place].append((s, med(pu), med(tu), med(x), min(x), max(x)))
        print("%10s %10.2f %10.2f %8.2f %17s %6d" % (human(s), med(pu), med(tu), med(x),
                                                   "[%.2f, %.2f]" % (min(x), max(x)), len(rs)))
    for s in sorted(set(ps) & set(ts)):
        rs = sorted(set(ps[s]) & set(ts[s]))
        pb = [float(ps[s][k]["MBps"]) for k in rs]
        tb = [float(ts[s][k]["MBps"]) for k in rs]
        x = [a / b for a, b in zip(pb, tb)]
        print("stream of %s messages: PIO %.1f MB/s, socket %.1f MB/s, %.2f x [%.2f, %.2f], %d rounds" %
              (human(s), med(pb), med(tb), med(x), min(x), max(x), len(rs)))
        verdicts.append("%s: %s: stream of %s: PIO / socket = %.2f, target >= 0.6" %
                        ("PASS" if med(x) >= 0.6 else "MISS", place, human(s), med(x)))
    for s, pu, tu, x, lo, hi in table[place]:
        if s == 8:
            verdicts.append("%s: %s: 8 B half round trip: PIO / socket = %.2f [%.2f, %.2f], target <= 3" %
                            ("PASS" if x <= 3 else "MISS", place, x, lo, hi))
        elif 8 << 10 <= s <= 512 << 10:
            verdicts.append("%s: %s: %s half round trip: PIO / socket = %.2f [%.2f, %.2f], target <= 2" %
                            ("PASS" if x <= 2 else "MISS", place, human(s), x, lo, hi))
print()
for v in verdicts:
    print(v)

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("note: no matplotlib: %s not drawn" % out_png)
    sys.exit(0)
fig, axs = plt.subplots(1, len(places), figsize=(5.5 * len(places), 4.2), squeeze=False)
for ax, place in zip(axs[0], places):
    t = table[place]
    xs = [r[0] for r in t]
    ax.loglog(xs, [r[1] for r in t], "o-", label="PIO (piod pair, 1 channel)")
    ax.loglog(xs, [r[2] for r in t], "s--", label="plain TCP socket")
    ax.fill_between(xs, [r[2] * r[4] for r in t], [r[2] * r[5] for r in t], alpha=0.2,
                    label="PIO, lowest to highest round")
    ax.set_xlabel("message size (bytes)"); ax.set_ylabel("half round trip (usec)")
    ax.set_title("%s (%s)" % (place, date)); ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(out_png, dpi=110)
EOF
