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
# alone), then heat3d with the feed for FEED_S seconds (steps from a
# calibration run); piod A, piod B and pio-vizd's user + system CPU from
# /proc/PID/stat until pio-vizd counts every byte sent. Prints per round and
# per build: ns per byte pio-vizd received for piod A (less its idle rate),
# the ranks (their feed calls; their other threads over alone), the sender
# (both), piod B (less idle), pio-vizd; then the medians per build. CPU
# figures grow with the machine's load (cache and scheduler contention), so
# only builds measured in the same interleaved session compare.
# Usage: bench/viz_cpu.sh BUILD... (absolute or relative to the repo; default
# build/default). Environment: VIZ_N (128), VIZ_NP (8), VIZ_RATE (100mbit),
# VIZ_ROUNDS (3), VIZ_FEED_S (6), VIZ_ALONE_S (3); VIZ_PERF=DIR: profile the
# feed runs (perf record -g, cpu-clock: the ranks with mpirun, the daemons by
# pid) into DIR, which inflates that run's figures; VIZ_FAULTS=1: count the
# page faults of mpirun and the ranks (perf stat). Root only.
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
json() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
delivered() {
  local last=-1 b same=0 i
  for ((i = 0; i < 240; i++)); do
    b=$(json "$1" bytes 2>/dev/null) || b=0
    [ "$b" -ge "$2" ] && return 0
    if [ "$b" = "$last" ]; then same=$((same + 1)); else same=0; fi
    [ "$same" -ge 12 ] && return 0
    last=$b
    sleep 0.25
  done
}
# heat B LOG ARGS...: heat3d of build B in h1; prints "WALL FEED MAIN OTHER SENT"
heat() {
  local b=$1 log=$2 perf=()
  shift 2
  [ -n "${PERF_OUT:-}" ] && perf=(perf record -q ${VIZ_PERF_CG:--g -F 1999} -e cpu-clock -o "$PERF_OUT" --)
  [ -n "${VIZ_FAULTS:-}" ] && perf=(perf stat -x, -e page-faults -o "$log.pf" --)
  "$TB" exec "$bed" h1 env PIO_SOCKET="$SA" timeout 600 "${perf[@]}" "${MPIRUN[@]}" "$b/examples/heat3d" --stats "$@" \
    >"$log" 2>&1 </dev/null || { echo "viz_cpu.sh: heat3d $* failed:" >&2; tail -20 "$log" >&2; return 1; }
  awk '/^wall /{w = $2; f = $(NF - 1)} /^cpu of all ranks: /{m = $7; o = $11; s = $15}
       END {print w, f, m, o, s}' "$log"
}
echo "build,round,steps,ta,tf,f_feed,a_other,f_other,sent,got,cpu_a,idle_a,cpu_b,idle_b,cpu_v,win" >"$work/rows"
read -r t _ <<<"$(SA=/nonexistent heat "${BUILDS[0]}" "$work/cal" --n "$N" --steps 100 --no-feed)" || exit 1
steps_f=$("$PY" -c "print(max(20, int($FEED_S / $t)))")
steps_a=$("$PY" -c "print(max(20, int($ALONE_S / $t)))")
echo "-- $N^3: $steps_a steps alone, $steps_f with the feed (alone ${t} s/step in the calibration)"
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
    rm -f "$work/st.json"
    "$TB" exec "$bed" h2 env PIO_SOCKET="$SB" "$b/bin/pio-vizd" --status-file "$work/st.json" \
      >"$work/vizd.log" 2>&1 &
    vp=$!
    for _ in $(seq 100); do grep -q "receiving threads" "$work/vizd.log" && break; sleep 0.1; done
    a0=$(cpu_s "$PIDA") b0=$(cpu_s "$PIDB") v0=$(cpu_s "$vp") w0=$(now)
    pp=""
    if [ -n "${VIZ_PERF:-}" ]; then
      mkdir -p "$VIZ_PERF"
      perf record -q -g -e cpu-clock -F 1999 -p "$PIDA,$PIDB,$vp" -o "$VIZ_PERF/daemons.$i.$r.data" &
      pp=$!
    fi
    read -r tf f_feed _ f_other sent <<<"$(PERF_OUT=${VIZ_PERF:+$VIZ_PERF/ranks.$i.$r.data} heat "$b" "$work/feed" --n "$N" --steps "$steps_f")" || exit 1
    delivered "$work/st.json" "$sent"
    [ -n "$pp" ] && { kill -INT "$pp"; wait "$pp"; }
    a1=$(cpu_s "$PIDA") b1=$(cpu_s "$PIDB") v1=$(cpu_s "$vp") w1=$(now)
    [ -n "${VIZ_FAULTS:-}" ] && echo "   page faults of mpirun and the ranks: alone $(grep page-faults "$work/alone.pf" | cut -d, -f1) ($steps_a steps), with the feed $(grep page-faults "$work/feed.pf" | cut -d, -f1) ($steps_f steps, $sent B sent)"
    kill "$vp" 2>/dev/null
    wait "$vp" 2>/dev/null
    got=$(json "$work/st.json" bytes)
    pio_piods_stop
    echo "$i,$r,$steps_f,$ta,$tf,$f_feed,$a_other,$f_other,$sent,$got,$(echo "$a1 - $a0" | bc -l),$idle_a,$(echo "$b1 - $b0" | bc -l),$idle_b,$(echo "$v1 - $v0" | bc -l),$(echo "$w1 - $w0" | bc -l)" >>"$work/rows"
    tail -1 "$work/rows" | "$PY" -c '
import sys
k = "build,round,steps,ta,tf,f_feed,a_other,f_other,sent,got,cpu_a,idle_a,cpu_b,idle_b,cpu_v,win".split(",")
g = dict(zip(k, map(float, sys.stdin.read().split(","))))
ns = lambda c: 1e9 * c / g["got"]
a = ns(g["cpu_a"] - g["idle_a"] * g["win"]); calls = ns(g["f_feed"] * g["steps"])
oth = ns((g["f_other"] - g["a_other"]) * g["steps"]); pb = ns(g["cpu_b"] - g["idle_b"] * g["win"]); v = ns(g["cpu_v"])
print("   round %d, build %d: piod A %.2f, ranks %.2f (calls %.2f, other %.2f), sender %.2f ns/B; piod B %.2f, pio-vizd %.2f; "
      "%.1f MB got of %.1f sent; alone %.5f s/step, feed %.5f" % (g["round"], g["build"], a, calls + oth, calls, oth,
      a + calls + oth, pb, v, g["got"] / 1e6, g["sent"] / 1e6, g["ta"], g["tf"]))'
  done
done
cp "$work/rows" "${VIZ_CPU_CSV:-/dev/null}" 2>/dev/null
"$PY" - "$work/rows" "${BUILDS[@]}" <<'EOF2'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print("medians per build (ns per byte pio-vizd received; rounds in brackets: min-max of the sender)")
print("%-40s %7s %7s %7s %7s %7s %7s %7s" % ("build", "piod A", "ranks", "calls", "other", "sender", "piod B", "vizd"))
for i, b in enumerate(sys.argv[2:]):
    R = []
    for r in rows:
        if int(r["build"]) != i:
            continue
        g = {k: float(v) for k, v in r.items()}
        ns = lambda c: 1e9 * c / g["got"]
        a = ns(g["cpu_a"] - g["idle_a"] * g["win"]); calls = ns(g["f_feed"] * g["steps"])
        oth = ns((g["f_other"] - g["a_other"]) * g["steps"])
        R.append((a, calls + oth, calls, oth, a + calls + oth, ns(g["cpu_b"] - g["idle_b"] * g["win"]), ns(g["cpu_v"])))
    med = [statistics.median(x[j] for x in R) for j in range(7)]
    print("%-40s %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f  (sender %.2f-%.2f)" % (
        b[-40:], *med, min(x[4] for x in R), max(x[4] for x in R)))
EOF2
