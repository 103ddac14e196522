#!/usr/bin/env bash
# viz_cpu.sh - the live feed's CPU per byte (ns/B) at the sender and at h2,
# for one or more builds, their rounds interleaved on one test bed.
# SPDX-License-Identifier: BSD-3-Clause
#
# The CPU side of bench/viz.sh, short, to compare builds: the same test bed
# (h1 -> h2, 4 links at VIZ_RATE, default 100mbit), the same heat3d (NP
# ranks, an N^3 grid, --stats) and pio-vizd (its defaults, --status-file),
# everything else at its defaults, nothing pinned. For each round and each
# build in turn (piods restarted from that build): heat3d --no-feed for
# ALONE_S seconds (piod A's and B's idle rate, the ranks' other threads
# alone), then heat3d with the feed for each of the FEED_S lengths in
# seconds (steps from a calibration run; pio-vizd started afresh for each);
# piod A, piod B and pio-vizd's user + system CPU from /proc/PID/stat until
# pio-vizd counts every byte sent. Prints per run: ns per byte pio-vizd
# received for piod A (less its idle rate), the ranks (their feed calls;
# their other threads over alone), the sender (both), piod B (less idle),
# pio-vizd, and the load average; then the medians per build and length.
# With two lengths or more, also the steady state: the longest run less the
# shortest (CPU over bytes), which leaves out what every run pays once (the
# first touch of each pool page, pio-vizd's first steps' buffers). CPU
# figures grow with the machine's load (cache and scheduler contention,
# other traffic's softirqs charged to whoever runs), so only builds measured
# in the same interleaved session compare.
# Usage: bench/viz_cpu.sh BUILD... (absolute or relative to the repo;
# default build/default). Environment: VIZ_N (128), VIZ_NP (8), VIZ_RATE
# (100mbit), VIZ_ROUNDS (3), VIZ_FEED_S ("6"; e.g. "3 12"), VIZ_ALONE_S (3),
# VIZ_CPU_CSV (a file for the rows); VIZ_PERF=DIR: profile the feed runs
# (perf record, cpu-clock: the ranks with mpirun, the daemons by pid; call
# graphs as VIZ_PERF_CG says, default "-g -F 1999") into DIR, which
# inflates those runs' figures; VIZ_FAULTS=1: count the page faults of
# mpirun and the ranks (perf stat). Root only.
set -u
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
N=${VIZ_N:-128}
NP=${VIZ_NP:-8}
RATE=${VIZ_RATE:-100mbit}
ROUNDS=${VIZ_ROUNDS:-3}
FEED_S=${VIZ_FEED_S:-6}
ALONE_S=${VIZ_ALONE_S:-3}
K=4
BUILDS=()
for b in "${@:-$BUILD}"; do
  case $b in /*) ;; *) b=$ROOT/$b ;; esac
  BUILDS+=("$b")
done
bench_root skip
for b in "${BUILDS[@]}"; do
  bench_need "$b/examples/heat3d" "$b/bin/pio-vizd" "$b/sbin/piod" mpirun || exit 1
done
bench_work
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe -np "$NP")
bench_banner ", $K links at $RATE, $NP ranks, $N^3, builds: ${BUILDS[*]}"
echo "set by this benchmark only: links tc tbf $RATE; heat3d --stats; pio-vizd --status-file; mpirun --oversubscribe -np $NP; piod ${PIO_PIOD_FLAGS:-at its defaults}"
bench_bed_up vizc 2 "$K" "$RATE" || exit 1
mkdir -p "$work/exp"
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"; }
now() { date +%s.%N; }
# shellcheck source=viz_lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/viz_lib.bash"
# heat B LOG ARGS...: heat3d of build B in h1; prints "WALL FEED MAIN OTHER SENT"
heat() {
  local b=$1 log=$2 perf=()
  shift 2
  # shellcheck disable=SC2206 # VIZ_PERF_CG is several words
  [ -n "${PERF_OUT:-}" ] && perf=(perf record -q ${VIZ_PERF_CG:--g -F 1999} -e cpu-clock -o "$PERF_OUT" --)
  # shellcheck disable=SC2054 # -x, is perf's separator
  [ -n "${VIZ_FAULTS:-}" ] && perf=(perf stat -x, -e page-faults -o "$log.pf" --)
  "$TB" exec "$bed" h1 env PIO_SOCKET="$SA" timeout 600 "${perf[@]}" "${MPIRUN[@]}" "$b/examples/heat3d" --stats "$@" \
    >"$log" 2>&1 </dev/null || { echo "viz_cpu.sh: heat3d $* failed:" >&2; tail -20 "$log" >&2; return 1; }
  awk '/^wall /{w = $2; f = $(NF - 1)} /^cpu of all ranks: /{m = $7; o = $11; s = $15}
       END {print w, f, m, o, s}' "$log"
}
COLS=build,round,len,steps,ta,tf,f_feed,a_other,f_other,sent,got,cpu_a,idle_a,cpu_b,idle_b,cpu_v,win
echo "$COLS" >"$work/rows"
read -r t _ <<<"$(SA=/nonexistent heat "${BUILDS[0]}" "$work/cal" --n "$N" --steps 100 --no-feed)" || exit 1
steps_a=$("$PY" -c "print(max(20, int($ALONE_S / $t)))")
STEPS_F=()
for s in $FEED_S; do STEPS_F+=("$("$PY" -c "print(max(20, int($s / $t)))")"); done
echo "-- $N^3: $steps_a steps alone, ${STEPS_F[*]} with the feed (alone ${t} s/step in the calibration)"
# the figures of a row (ns per byte pio-vizd received)
cat >"$work/calc.py" <<'EOF2'
def ns(g):
    n = lambda c: 1e9 * c / g["got"]
    a = n(g["cpu_a"] - g["idle_a"] * g["win"])
    calls = n(g["f_feed"] * g["steps"])
    oth = n((g["f_other"] - g["a_other"]) * g["steps"])
    return dict(a=a, ranks=calls + oth, calls=calls, other=oth, sender=a + calls + oth,
                b=n(g["cpu_b"] - g["idle_b"] * g["win"]), v=n(g["cpu_v"]))
EOF2
for ((r = 1; r <= ROUNDS; r++)); do
  for ((i = 0; i < ${#BUILDS[@]}; i++)); do
    b=${BUILDS[$i]}
    PIOD=$b/sbin/piod PIO_INFO=$b/bin/pio-info
    rm -rf "$work/pio"
    bench_piods "$work/pio" "$K" "$work/exp" || { echo "viz_cpu.sh: the piods did not come up" >&2; exit 1; }
    SA=$work/pio/A.sock SB=$work/pio/B.sock
    PIDA=$(cat "$work/pio/A.pid") PIDB=$(cat "$work/pio/B.pid")
    a0=$(cpu_s "$PIDA") b0=$(cpu_s "$PIDB") w0=$(now)
    read -r ta _ _ a_other _ <<<"$(heat "$b" "$work/alone" --n "$N" --steps "$steps_a" --no-feed)" || exit 1
    a1=$(cpu_s "$PIDA") b1=$(cpu_s "$PIDB") w1=$(now)
    idle_a=$("$PY" -c "print(($a1 - $a0) / ($w1 - $w0))") idle_b=$("$PY" -c "print(($b1 - $b0) / ($w1 - $w0))")
    for ((l = 0; l < ${#STEPS_F[@]}; l++)); do
      steps_f=${STEPS_F[$l]}
      rm -f "$work/st.json"
      "$TB" exec "$bed" h2 env PIO_SOCKET="$SB" "$b/bin/pio-vizd" --status-file "$work/st.json" \
        >"$work/vizd.log" 2>&1 &
      vp=$!
      for _ in $(seq 100); do grep -q "receiving threads" "$work/vizd.log" && break; sleep 0.1; done
      a0=$(cpu_s "$PIDA") b0=$(cpu_s "$PIDB") v0=$(cpu_s "$vp") w0=$(now)
      pp=""
      if [ -n "${VIZ_PERF:-}" ]; then
        mkdir -p "$VIZ_PERF"
        perf record -q -g -e cpu-clock -F 1999 -p "$PIDA,$PIDB,$vp" -o "$VIZ_PERF/daemons.$i.$r.$l.data" &
        pp=$!
      fi
      read -r tf f_feed _ f_other sent <<<"$(PERF_OUT=${VIZ_PERF:+$VIZ_PERF/ranks.$i.$r.$l.data} heat "$b" "$work/feed" --n "$N" --steps "$steps_f")" || exit 1
      delivered "$work/st.json" "$sent"
      [ -n "$pp" ] && { kill -INT "$pp"; wait "$pp"; }
      a1=$(cpu_s "$PIDA") b1=$(cpu_s "$PIDB") v1=$(cpu_s "$vp") w1=$(now)
      [ -n "${VIZ_FAULTS:-}" ] && echo "   page faults of mpirun and the ranks: alone $(grep page-faults "$work/alone.pf" | cut -d, -f1) ($steps_a steps), with the feed $(grep page-faults "$work/feed.pf" | cut -d, -f1) ($steps_f steps, $sent B sent)"
      kill "$vp" 2>/dev/null
      wait "$vp" 2>/dev/null
      got=$(json "$work/st.json" bytes)
      echo "$i,$r,$l,$steps_f,$ta,$tf,$f_feed,$a_other,$f_other,$sent,$got,$(echo "$a1 - $a0" | bc -l),$idle_a,$(echo "$b1 - $b0" | bc -l),$idle_b,$(echo "$v1 - $v0" | bc -l),$(echo "$w1 - $w0" | bc -l)" >>"$work/rows"
      tail -1 "$work/rows" | "$PY" -c '
import sys
sys.path.insert(0, sys.argv[1])
from calc import ns
k = sys.argv[2].split(",")
g = dict(zip(k, map(float, sys.stdin.read().split(","))))
x = ns(g)
print("   round %d, build %d, %d steps: piod A %.2f, ranks %.2f (calls %.2f, other %.2f), sender %.2f ns/B; piod B %.2f, "
      "pio-vizd %.2f; %.1f MB got of %.1f sent; alone %.5f s/step, feed %.5f" % (g["round"], g["build"], g["steps"],
      x["a"], x["ranks"], x["calls"], x["other"], x["sender"], x["b"], x["v"], g["got"] / 1e6, g["sent"] / 1e6,
      g["ta"], g["tf"]))' "$work" "$COLS"
      echo "      load average: $(cut -d' ' -f1-3 /proc/loadavg)"
    done
    pio_piods_stop
  done
done
[ -n "${VIZ_CPU_CSV:-}" ] && cp "$work/rows" "$VIZ_CPU_CSV"
"$PY" - "$work" "${BUILDS[@]}" <<'EOF2'
import csv, statistics, sys
sys.path.insert(0, sys.argv[1])
from calc import ns
rows = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(open(sys.argv[1] + "/rows"))]
K = ("a", "ranks", "calls", "other", "sender", "b", "v")
print("medians per build and run length (ns per byte pio-vizd received; the sender's rounds min-max)")
print("%-34s %6s %7s %7s %7s %7s %7s %7s %7s" % ("build", "steps", "piod A", "ranks", "calls", "other", "sender",
                                                 "piod B", "vizd"))
for i, b in enumerate(sys.argv[2:]):
    for l in sorted({r["len"] for r in rows}):
        R = [ns(r) for r in rows if r["build"] == i and r["len"] == l]
        st = [r["steps"] for r in rows if r["build"] == i and r["len"] == l][0]
        print("%-34s %6d %s  (%.2f-%.2f)" % (b[-34:], st, " ".join("%7.2f" % statistics.median(x[k] for x in R) for k in K),
                                           min(x["sender"] for x in R), max(x["sender"] for x in R)))
lens = sorted({r["len"] for r in rows})
if len(lens) > 1:
    print("steady state: the longest run less the shortest, per round (CPU difference / bytes difference, ns/B), medians")
    for i, b in enumerate(sys.argv[2:]):
        M = []
        for rd in sorted({r["round"] for r in rows}):
            lo = [r for r in rows if r["build"] == i and r["round"] == rd and r["len"] == lens[0]][0]
            hi = [r for r in rows if r["build"] == i and r["round"] == rd and r["len"] == lens[-1]][0]
            d = dict(hi)
            for k in ("got", "cpu_a", "cpu_b", "cpu_v", "win"):
                d[k] = hi[k] - lo[k]
            # CPU per step in calls and other threads are per-run averages: use totals
            d["f_feed"] = (hi["f_feed"] * hi["steps"] - lo["f_feed"] * lo["steps"])
            d["f_other"] = (hi["f_other"] * hi["steps"] - lo["f_other"] * lo["steps"])
            d["a_other"] = hi["a_other"] * (hi["steps"] - lo["steps"])
            d["steps"] = 1
            M.append(ns(d))
        print("%-34s %6s %s  (%s)" % (b[-34:], "diff", " ".join("%7.2f" % statistics.median(x[k] for x in M) for k in K),
                                     ", ".join("%.2f" % x["sender"] for x in M)))
EOF2
