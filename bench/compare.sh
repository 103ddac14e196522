#!/usr/bin/env bash
# compare.sh - two builds measured in turns: throughput.sh and pingpong.sh, before against after.
# SPDX-License-Identifier: BSD-3-Clause
#
# Usage: BEFORE=BUILD_DIR AFTER=BUILD_DIR bench/compare.sh
# (each a build folder, absolute or relative to the repo root, e.g. a
# worktree of an older commit built with `make`; the scripts and the method
# are this checkout's, only the binaries differ).
#
# Each of COMPARE_ROUNDS rounds runs throughput.sh and then pingpong.sh with
# one build and then the other, the order alternating from round to round,
# so that both see the same moments of a shared machine. Every run's results
# go to $RESULTS/compare/WHICH-ROUND/. A run that fails is listed as FAILED
# and counted, never dropped silently.
#
# The ratios compared are those the two scripts print, each against its own
# baseline measured in the same run (so the noise of the machine mostly
# cancels): for K = 1 2 4 8 the bundle's rate over the iperf3 ceiling; the
# 8 B round trip over a plain TCP socket's (lower is better); the 64 MiB
# one-way stream and the 64 MiB ping-pong bandwidth over the socket's.
# Prints every run's ratio and the medians, and after/before of the medians
# with a verdict: no regression when a bandwidth ratio's median is at least
# 0.97 x before and the round trip's at most 1.10 x before (the bounds are
# printed in the table's header). Writes $RESULTS/compare.csv (which, round,
# metric, value) and compare.png.
#
# Exit status: 0 when the table was made (a regression is reported, not an
# error); 1 when a build is missing or no run of one build completed; 2 when
# not root. Environment: BEFORE, AFTER, COMPARE_ROUNDS (default 3),
# THROUGHPUT_KS (default "1 2 4 8"), PIO_BENCH_RESULTS (default bench/results).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
bench_root fail

ROUNDS=${COMPARE_ROUNDS:-3}
KS=${THROUGHPUT_KS:-1 2 4 8}
declare -A BDIR
for w in before after; do
  n=${w^^}
  v=${!n:-}
  [ -n "$v" ] || { echo "compare.sh: set BEFORE and AFTER to two build folders" >&2; exit 1; }
  case $v in /*) ;; *) v=$ROOT/$v ;; esac
  for b in "$v/bin/pio-perf" "$v/sbin/piod" "$v/bench/tcp_pingpong"; do
    [ -x "$b" ] || { echo "compare.sh: $b is missing: build that tree first" >&2; exit 1; }
  done
  BDIR[$w]=$v
done
bench_work
out=$RESULTS/compare
rm -rf "$out"
mkdir -p "$out"
csv=$RESULTS/compare.csv
echo "which,round,metric,value" >"$csv"

bench_banner ", builds: before ${BDIR[before]}, after ${BDIR[after]}, $ROUNDS rounds"
for ((r = 1; r <= ROUNDS; r++)); do
  order="before after"
  [ $((r % 2)) -eq 0 ] && order="after before"
  for w in $order; do
    d=$out/$w-$r
    mkdir -p "$d"
    echo "-- round $r: $w (throughput.sh, then pingpong.sh)"
    if PIO_BENCH_RESULTS=$d BUILD=${BDIR[$w]} THROUGHPUT_KS=$KS "$ROOT/bench/throughput.sh" \
      >"$d/throughput.out" 2>&1; then
      tail -n +2 "$d/throughput.csv" | while IFS=, read -r k _ _ _ ratio; do
        echo "$w,$r,K=$k PIO/ceiling,$ratio"
      done >>"$csv"
    else
      echo "   throughput.sh FAILED ($w, round $r): see $d/throughput.out"
      echo "$w,$r,throughput,FAILED" >>"$csv"
    fi
    if PIO_BENCH_RESULTS=$d BUILD=${BDIR[$w]} PINGPONG_PLACES=loopback PINGPONG_ROUNDS=1 \
      PINGPONG_SIZES=8,64K,4M "$ROOT/bench/pingpong.sh" >"$d/pingpong.out" 2>&1; then
      sed -nE 's/^(PASS|MISS): loopback: 8 B half round trip: PIO \/ socket = ([0-9.]+).*/8 B RTT PIO\/TCP,\2/p;
        s/^(PASS|MISS): loopback: stream of 64 Mi: PIO \/ socket = ([0-9.]+).*/64 MiB stream PIO\/TCP,\2/p;
        s/^(PASS|MISS): loopback: 64 Ki half round trip: PIO \/ socket = ([0-9.]+).*/64 KiB RTT PIO\/TCP,\2/p' \
        "$d/pingpong.out" | sed "s/^/$w,$r,/" >>"$csv"
    else
      echo "   pingpong.sh FAILED ($w, round $r): see $d/pingpong.out"
      echo "$w,$r,pingpong,FAILED" >>"$csv"
    fi
  done
done

bench_summary "compare.csv compare.png" "$csv" "$RESULTS/compare.png" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
failed = [r for r in rows if r["value"] == "FAILED"]
rows = [r for r in rows if r["value"] != "FAILED"]
metrics = list(dict.fromkeys(r["metric"] for r in rows))
lower_better = {"8 B RTT PIO/TCP", "64 KiB RTT PIO/TCP"}
print()
print("Before against after: every run's ratio (each against its own baseline, same run)")
print("no regression: a bandwidth ratio's median >= 0.97 x before; the 8 B RTT's <= 1.10 x before")
print(f"{'metric':<24} {'build':<7} {'runs':<40} {'median':>7} {'after/before':>13}")
verdicts, med = [], {}
for m in metrics:
    for w in ("before", "after"):
        v = [float(r["value"]) for r in rows if r["metric"] == m and r["which"] == w]
        med[(m, w)] = statistics.median(v) if v else None
        runs = " ".join(f"{x:.3f}" for x in v)
        cell = f"{med[(m, w)]:.3f}" if v else "-"
        ratio = ""
        if w == "after" and med[(m, "before")] and v:
            q = med[(m, "after")] / med[(m, "before")]
            ratio = f"{q:.3f}"
            ok = q <= 1.10 if m in lower_better else q >= 0.97
            verdicts.append((m, q, ok))
        print(f"{m:<24} {w:<7} {runs:<40} {cell:>7} {ratio:>13}")
for r in failed:
    print(f"FAILED run: {r['which']} round {r['round']} ({r['metric']})")
print()
for m, q, ok in verdicts:
    print(f"{'PASS' if ok else 'MISS'}: {m}: after/before of medians = {q:.3f}")
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit(0)
fig, ax = plt.subplots(figsize=(9, 4.5))
for i, m in enumerate(metrics):
    for j, (w, c) in enumerate((("before", "tab:gray"), ("after", "tab:blue"))):
        v = [float(r["value"]) for r in rows if r["metric"] == m and r["which"] == w]
        ax.scatter([i + (j - 0.5) * 0.3] * len(v), v, color=c, s=18,
                   label=w if i == 0 else None)
        if v:
            ax.hlines(statistics.median(v), i + (j - 0.5) * 0.3 - 0.12, i + (j - 0.5) * 0.3 + 0.12,
                      color=c)
ax.set_xticks(range(len(metrics)))
ax.set_xticklabels(metrics, rotation=20, ha="right", fontsize=8)
ax.set_ylabel("ratio to the same run's baseline")
ax.set_title("before against after (dots: runs, bars: medians)")
ax.legend()
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
PY
