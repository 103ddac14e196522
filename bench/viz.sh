#!/usr/bin/env bash
# viz.sh - a live visualization feed: what it costs the simulation, in time
# and in CPU per byte at the sender, and what it delivers, against writing
# the steps to a local HDF5 file.
# SPDX-License-Identifier: BSD-3-Clause
#
# A test bed of 2 hosts with 4 links at RATE (default 100mbit). h1 runs the
# simulation, examples/heat3d with NP (8) MPI ranks on an N^3 grid (N in
# SIZES, default "64 128 256"; each step feeds a double and an int32 field:
# 12 N^3 bytes); h2 runs pio-vizd. Everything runs at its defaults: the
# piods (no pool settings: each process's pool is 64M, its send region
# half of it, so two 128^3 steps fit (3.1 MB a rank each) and a 256^3 step
# (25 MB a rank) goes alone, as the feed itself decides), pio-vizd (2
# receiving threads, 1024 MB, no output: the live policy, newest step only)
# and mpirun (8 ranks on 2 cores need --oversubscribe, with which Open MPI
# yields when idle and binds nothing by itself). What only this benchmark
# sets is printed in the table's header: the link rate, heat3d --stats,
# pio-vizd --status-file (and PIO_PIOD_FLAGS if given). In one run:
#   ceiling    4 iperf3 at once, one per link, summed (bench/lib.bash);
# and for each N:
#   alone      heat3d --no-feed (no PIO at all): the simulation's own time
#              per step;
#   feed       pio-vizd in h2 and heat3d offering every step: rank 0 plans a
#              step a few steps ahead whenever fewer than 2 are
#              unacknowledged and tells the other ranks through piod A, every
#              rank sends the planned steps and skips the others without
#              packing them (PIO_Feed_sending), so the links stay full and
#              the simulation never waits. Time per step with the feed, and
#              the bytes delivered per second against the ceiling: the piece
#              bytes pio-vizd received from its first piece to its last
#              completed step (its status), and, stricter, the complete
#              steps' bytes only over the same time;
#   cpu        the feed's CPU cost per byte delivered (ns/B) at the sender:
#              piod A's user + system time (/proc/PID/stat, the getrusage
#              figures of the whole process) from the start of heat3d until
#              pio-vizd has every byte the ranks sent, less piod A's idle
#              rate measured over the alone run just before; the ranks'
#              (heat3d --stats, all ranks summed): the CPU in the feed's
#              calls plus the growth of their other threads' CPU per step
#              over the alone run (libpio's progress thread); divided by the
#              bytes pio-vizd received. From it, the least the feed must add
#              to the step time on h1's cores when the ranks keep them busy
#              (every CPU second the sender spends is then taken from them):
#              sender CPU per step / (cores x the alone step time). h2's CPU
#              (piod B less its idle rate, pio-vizd) likewise;
#   hdf5       heat3d writing the same number of steps (--every K, K = the
#              steps offered / the steps the feed delivered) to a local HDF5
#              file with parallel HDF5 (collective, one dataset per step, on
#              this machine's disk): its time per step.
# The runs are sized to about RUN_S seconds (default 8), or the time 8 steps
# take over the links if longer, from a short calibration run: long enough
# that what every run pays once (the first touch of each pool page, some
# 50 MB a run at 128^3, at ~20 us a page on the test VM) stays near 1 % of
# the cores' time. The machine is shared and the wall time of 8 ranks that
# yield-spin on 2 cores is noisy (rounds of one run spread from -15 % to
# +46 %), so alone and feed run ROUNDS times each as pairs, alone first in
# odd rounds and second in even ones (VIZ_ROUNDS, default 3; 21 at 128^3,
# the size of the target), and the table shows the medians; the CSV has
# every round and the medians. Time per step is heat3d's own (rank 0, a
# barrier on each side of the loop). The verdict on the target (the feed
# adds <= 5% to the time per step at 128^3 x 8 ranks, as a user places it)
# uses the quiet rounds only: those in which the ranks alone, and the
# ranks, the sender and h2 with the feed, kept at least 95 % of the cores
# busy (what else ran on the machine took under 5 %); it is the median of
# their feed / alone - 1 with its distribution-free 95 % interval (order
# statistics), PASS when the interval lies at or below +5 %, MISS when it
# lies above, "MISS: NOT RESOLVED" otherwise (and with too few quiet
# rounds: not shown to be met, so a MISS for bench/run-all.sh). Every
# round is printed, quiet or not (design notes, "Issue 31, item 4: the
# feed's sender, cheaper"). Also PASS/MISS for delivered bytes/s >= 0.9 x
# the ceiling, with the CPU figures beside them; writes
# bench/results/viz.csv and viz.png. Root only.
#
# Where things run (VIZ_PIN). 0 or user (the default): as a user runs it,
# nothing pinned: h1's ranks and piod A share both cores, the scheduler
# decides. h2 (piod B, pio-vizd) is another machine in a real set-up; on
# this VM it can only share the same 2 cores, so its CPU is measured and
# shown (% of the 2 cores, ns/B), with the feed's +% less that share
# beside the measured one; the target's verdict is on the measured +%, h2
# included. 1: the old comparison, the ranks on core 0 and all the daemons
# (piod A, piod B, pio-vizd) on core 1, as a node that keeps a core for
# its daemons (Slurm's core specialization). host: h1 (ranks, piod A) on
# core 0, h2 on core 1: a 1-core h1 and a separate h2.
# Environment: BUILD (build/default), VIZ_SIZES ("64 128 256"), VIZ_NP (8),
# VIZ_RATE (100mbit), VIZ_RUN_S (8), VIZ_ROUNDS (3), VIZ_PIN (0),
# PIO_PIOD_FLAGS (none), PIO_BENCH_RESULTS (bench/results).
set -u
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
SIZES=${VIZ_SIZES:-64 128 256}
NP=${VIZ_NP:-8}
RATE=${VIZ_RATE:-100mbit}
RUN_S=${VIZ_RUN_S:-8}
ROUNDS=${VIZ_ROUNDS:-3}
PIN=${VIZ_PIN:-0}
[ "$PIN" = user ] && PIN=0
case $PIN in 0 | 1 | host) ;; *) echo "viz.sh: VIZ_PIN is 0 (user), 1 or host" >&2; exit 2 ;; esac
K=4
HEAT=$BUILD/examples/heat3d
VIZD=$BUILD/bin/pio-vizd

bench_root skip
bench_need "$HEAT" "$VIZD" "$BUILD/sbin/piod" mpirun iperf3 || exit 1

bench_work
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe -np "$NP")
NCPU=$(nproc)

bench_banner ", $K links at $RATE, $NP ranks, sizes $SIZES"
bench_bed_up viz 2 "$K" "$RATE" || exit 1
echo "-- ceiling: $K x iperf3 at once, one per link"
files=()
for i in $(links "$K"); do files+=("$work/ceil.$i.json"); done
# shellcheck disable=SC2046
if iperf_servers $(links "$K") && iperf_clients "$work/ceil" 8 $(links "$K") &&
  ceil=$(iperf_rate "${files[@]}"); then
  echo "   ceiling: $ceil MB/s"
else
  echo "viz.sh: the iperf3 ceiling failed" >&2
  exit 1
fi
mkdir -p "$work/exp"
bench_piods "$work/pio" "$K" "$work/exp" || { echo "viz.sh: the piods did not come up" >&2; exit 1; }
SA=$work/pio/A.sock SB=$work/pio/B.sock
PIDA=$(cat "$work/pio/A.pid") PIDB=$(cat "$work/pio/B.pid")
# the placement (VIZ_PIN, see the head comment); CORES: the cores h1's
# ranks run on, over which the sender's CPU is spread in the bound
# and whether piod A and h2 share them
CPU_A=() CPU_B=() CORES=$NCPU A_SHARES=1 H2_SHARES=1
if [ "$PIN" != 0 ] && [ "$NCPU" -ge 2 ]; then
  CPU_A=(taskset -c 0) CPU_B=(taskset -c 1) CORES=1 H2_SHARES=0
  [ "$PIN" = 1 ] && A_SHARES=0
  taskset -a -p -c "$([ "$PIN" = host ] && echo 0 || echo 1)" "$PIDA" >/dev/null
  taskset -a -p -c 1 "$PIDB" >/dev/null
fi
case $PIN in
  0) PLACE="nothing pinned (as a user runs it): the ranks and piod A share the $NCPU cores; h2 (piod B, pio-vizd) shares them too on this VM, its CPU measured" ;;
  1) PLACE="the ranks on core 0, the daemons (piod A, piod B, pio-vizd) on core 1" ;;
  host) PLACE="h1 (the ranks, piod A) on core 0, h2 (piod B, pio-vizd) on core 1" ;;
esac
# cpu_s PID: user + system CPU seconds of a process (all its threads) so far
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"; }
now() { date +%s.%N; }

# the figures of a round, from a row of $work/rounds: one definition for the
# rounds' lines and the table (vizcalc.derive)
cat >"$work/vizcalc.py" <<'EOF2'
def derive(r, cores, a_shares, h2_shares):
    """A round's figures. cores: the cores h1's ranks run on; a_shares,
    h2_shares: piod A, h2 run on those cores too."""
    g = {k: float(v) for k, v in r.items()}
    n, steps, ta, tf, win, got = int(g["n"]), g["steps"], g["ta"], g["tf"], g["win"], g["got_all"]
    d = dict(n=n, round=int(g["round"]), steps=int(steps), ta=ta, tf=tf, ovh=tf / ta - 1,
             comp=g["complete"], dropped=g["dropped"], sent=g["sent"], got_all=got,
             mbs=g["got"] / g["span"] / 1e6, mbs0=g["complete"] * 12 * n ** 3 / g["span"] / 1e6)
    # CPU seconds of the run: piod A less its idle rate; the ranks' feed
    # calls and the growth of their other threads (libpio's progress
    # thread) over alone; h2: piod B less its idle rate, and pio-vizd
    d["cpu_a"] = g["cpu_a"] - g["idle_a"] * win
    d["cpu_calls"] = g["f_feed"] * steps
    d["cpu_other"] = (g["f_other"] - g["a_other"]) * steps
    d["cpu_r"] = d["cpu_calls"] + d["cpu_other"]
    d["cpu_b"] = g["cpu_b"] - g["idle_b"] * win
    d["cpu_v"] = g["cpu_v"]
    d["cpu_h2"] = d["cpu_b"] + d["cpu_v"]
    nan = float("nan")
    for k in ("a", "r", "calls", "other", "b", "v", "h2"):  # per byte delivered
        d["ns_" + k] = 1e9 * d["cpu_" + k] / got if got > 0 else nan
    d["ns_s"] = d["ns_a"] + d["ns_r"]
    d["pct_a"] = 100 * d["cpu_a"] / win
    # while the feed delivers mbs, the sender needs x cores (ns/B x B/s)
    # and h2 y; when the ranks keep their cores busy (alone_cores), they
    # are left cores - x: the step time grows by at least x / (cores - x)
    d["x_s"] = (d["ns_r"] + (d["ns_a"] if a_shares else 0)) * d["mbs"] * 1e-3
    d["x_h2"] = d["ns_h2"] * d["mbs"] * 1e-3
    d["bound"] = d["x_s"] / (cores - d["x_s"])
    # the measured +% with h2's CPU given back to the ranks (another
    # machine in a real set-up)
    y = d["x_h2"] if h2_shares else 0
    d["h2_share"] = y / cores
    d["ovh_less_h2"] = (1 + d["ovh"]) * (cores - d["x_s"] - y) / (cores - d["x_s"]) - 1
    # the ranks' CPU per second, alone and with the feed
    d["alone_cores"] = (g["a_main"] + g["a_other"]) / ta
    d["feed_cores"] = (g["f_main"] + g["f_other"]) / tf
    # a quiet round: what this run measures kept the cores it shares busy,
    # so little else ran: the ranks alone, and with the feed the ranks, the
    # sender and h2 together, took at least QUIET of them
    d["busy_alone"] = d["alone_cores"] / cores
    d["busy_feed"] = (d["feed_cores"] + d["x_s"] + (d["x_h2"] if h2_shares else 0)) / cores
    d["quiet"] = float(min(d["busy_alone"], d["busy_feed"]) >= QUIET)
    return d


QUIET = 0.95


def median_ci(v, level=0.95):
    """The median of v and its distribution-free confidence interval (order
    statistics: the binomial(n, 1/2) tails), or None when n is too small."""
    from math import comb
    v, n = sorted(v), len(v)
    k, tail = 0, 0.0
    while True:  # the largest k with P(B <= k - 1) <= (1 - level) / 2
        p = tail + comb(n, k) / 2 ** n
        if p > (1 - level) / 2:
            break
        tail, k = p, k + 1
    if k == 0:
        return None
    return v[k - 1], v[n - k]
EOF2

# heat LOG ARGS...: heat3d --stats in h1 (output in LOG); prints "WALL
# FEED MAIN OTHER SENT": seconds per step; CPU seconds per step of all
# ranks in the feed's calls, in their main threads, in their other threads;
# the bytes the feed sent
heat() {
  local log=$1
  shift
  "$TB" exec "$bed" h1 "${CPU_A[@]}" env PIO_SOCKET="$SA" timeout 600 "${MPIRUN[@]}" \
    "$HEAT" --stats "$@" \
    >"$log" 2>&1 </dev/null || { echo "viz.sh: heat3d $* failed:" >&2; tail -20 "$log" >&2; return 1; }
  awk '/^wall /{w = $2; f = $(NF - 1)} /^cpu of all ranks: /{m = $7; o = $11; s = $15}
       END {print w, f, m, o, s}' "$log"
}

# median of the arguments
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# shellcheck source=viz_lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/viz_lib.bash"
f6() { "$PY" -c "import sys; print('%.6f' % eval(sys.argv[1]))" "$1"; }

# alone_run: heat3d --no-feed for round $r of size $n, and the piods' idle
# CPU meanwhile; sets ta a_feed a_main a_other idle_a idle_b
alone_run() {
  local a0 b0 w0 a1 b1 w1 al
  a0=$(cpu_s "$PIDA") b0=$(cpu_s "$PIDB") w0=$(now)
  al=$(heat "$work/alone.$n.$r" --n "$n" --steps "$steps" --no-feed) || return 1
  a1=$(cpu_s "$PIDA") b1=$(cpu_s "$PIDB") w1=$(now)
  read -r ta a_feed a_main a_other _ <<<"$al"
  idle_a=$(f6 "($a1 - $a0) / ($w1 - $w0)") idle_b=$(f6 "($b1 - $b0) / ($w1 - $w0)")
}

mkdir -p "$RESULTS"
echo "n,round,steps,ta,tf,a_feed,a_main,a_other,f_feed,f_main,f_other,sent,got_all,complete,dropped,span,got,cpu_a,idle_a,cpu_b,idle_b,cpu_v,win" >"$work/rounds"
: >"$work/h5rows"
for n in $SIZES; do
  echo "-- $n^3, $NP ranks ($((12 * n * n * n / 1000000)) MB a step)"
  read -r t _ <<<"$(heat "$work/cal.$n" --n "$n" --steps 100 --no-feed)" || exit 1
  [ -n "$t" ] || exit 1
  # about RUN_S seconds, and long enough for 8 steps to cross the links
  steps=$("$PY" -c "print(max(20, int(max($RUN_S, 8 * 12 * $n ** 3 / ($ceil * 1e6)) / $t)))")
  rounds=$ROUNDS
  [ "$n" = 128 ] && [ -z "${VIZ_ROUNDS:-}" ] && rounds=21
  COMPLETE=()
  for ((r = 1; r <= rounds; r++)); do
    # alone first in odd rounds, second in even ones (ABBA: a drift in the
    # machine's load weighs on both alike)
    [ $((r % 2)) = 1 ] && { alone_run || exit 1; }
    # with the feed
    rm -f "$work/st.json"
    "$TB" exec "$bed" h2 "${CPU_B[@]}" env PIO_SOCKET="$SB" "$VIZD" \
      --status-file "$work/st.json" >"$work/vizd.$n.$r.log" 2>&1 &
    vp=$!
    for _ in $(seq 100); do grep -q "receiving threads" "$work/vizd.$n.$r.log" && break; sleep 0.1; done
    grep -q "receiving threads" "$work/vizd.$n.$r.log" || { echo "viz.sh: pio-vizd did not start" >&2; cat "$work/vizd.$n.$r.log" >&2; exit 1; }
    a0=$(cpu_s "$PIDA") b0=$(cpu_s "$PIDB") v0=$(cpu_s "$vp") w0=$(now)
    fd=$(heat "$work/feed.$n.$r" --n "$n" --steps "$steps") || exit 1
    read -r tf f_feed f_main f_other sent <<<"$fd"
    # piod A goes on sending what is in its pool after heat3d ends
    delivered "$work/st.json" "$sent"
    a1=$(cpu_s "$PIDA") b1=$(cpu_s "$PIDB") v1=$(cpu_s "$vp") w1=$(now)
    kill "$vp" 2>/dev/null
    wait "$vp" 2>/dev/null
    complete=$(json "$work/st.json" steps_complete)
    dropped=$(json "$work/st.json" steps_dropped)
    span=$(json "$work/st.json" receiving_seconds)
    got=$(json "$work/st.json" bytes_by_last_complete)
    got_all=$(json "$work/st.json" bytes)
    [ "$complete" -ge 3 ] || { echo "viz.sh: fewer than 3 steps delivered at $n^3" >&2; cat "$work/vizd.$n.$r.log" >&2; exit 1; }
    [ $((r % 2)) = 0 ] && { alone_run || exit 1; }
    echo "$n,$r,$steps,$ta,$tf,$a_feed,$a_main,$a_other,$f_feed,$f_main,$f_other,$sent,$got_all,$complete,$dropped,$span,$got,$(f6 "$a1 - $a0"),$idle_a,$(f6 "$b1 - $b0"),$idle_b,$(f6 "$v1 - $v0"),$(f6 "$w1 - $w0")" >>"$work/rounds"
    # the round's line, from the same figures as the table
    "$PY" - "$work" "$CORES" "$A_SHARES" "$H2_SHARES" <<'EOF2'
import csv, sys
sys.path.insert(0, sys.argv[1])
from vizcalc import derive
cores = float(sys.argv[2])
d = derive(list(csv.DictReader(open(sys.argv[1] + "/rounds")))[-1], cores, sys.argv[3] == "1", sys.argv[4] == "1")
print("   round %d, %d steps: alone %.5f s/step, with feed %.5f (%+.1f%%); %d steps complete, %d dropped, "
      "%.3f MB/s (complete steps only %.3f)" % (d["round"], d["steps"], d["ta"], d["tf"], 100 * d["ovh"],
                                                 d["comp"], d["dropped"], d["mbs"], d["mbs0"]))
print("      CPU per byte delivered: piod A %.2f ns/B, ranks %.2f (calls %.2f, other threads %.2f), sender %.2f:"
      " %.3f cores, at least %+.1f%% on %g; h2 %.2f ns/B (piod B %.2f, pio-vizd %.2f; %.3f cores; +%% without"
      " it %+.1f%%); the ranks used %.2f cores alone, %.2f with the feed; busy %.0f%% / %.0f%% of the cores (%s)" % (
          d["ns_a"], d["ns_r"], d["ns_calls"], d["ns_other"], d["ns_s"], d["x_s"], 100 * d["bound"], cores,
          d["ns_h2"], d["ns_b"], d["ns_v"], d["x_h2"], 100 * d["ovh_less_h2"], d["alone_cores"], d["feed_cores"],
          100 * d["busy_alone"], 100 * d["busy_feed"], "quiet" if d["quiet"] else "not quiet"))
EOF2
    COMPLETE+=("$complete")
  done
  complete=$(median "${COMPLETE[@]}")
  every=$("$PY" -c "print(max(1, round($steps / $complete)))")
  read -r t_h5 _ <<<"$(heat "$work/h5.$n" --n "$n" --steps "$steps" --every "$every" --h5 "$work/steps.h5")" || exit 1
  [ -n "$t_h5" ] || exit 1
  rm -f "$work/steps.h5"
  echo "$n,$every,$t_h5" >>"$work/h5rows"
done

SETTINGS="links tc tbf $RATE; heat3d --stats; pio-vizd --status-file (otherwise its defaults); mpirun --oversubscribe -np $NP; piod ${PIO_PIOD_FLAGS:-at its defaults}"
"$PY" - "$RESULTS/viz.csv" "$RESULTS/viz.png" "$ceil" "$NP" "$RATE" "$work" "$PIN" "$PLACE" "$CORES" \
  "$A_SHARES" "$H2_SHARES" "$SETTINGS" <<'EOF2'
import csv, statistics, sys
out_csv, out_png, ceil, np_, rate, work, pin, place = sys.argv[1:9]
ceil, cores = float(ceil), float(sys.argv[9])
a_shares, h2_shares, settings = sys.argv[10] == "1", sys.argv[11] == "1", sys.argv[12]
sys.path.insert(0, work)
from vizcalc import derive, median_ci, QUIET
rounds = [derive(r, cores, a_shares, h2_shares) for r in csv.DictReader(open(work + "/rounds"))]
h5 = {int(n): (int(e), float(t)) for n, e, t in (l.strip().split(",") for l in open(work + "/h5rows"))}
keys = [k for k in rounds[0] if k not in ("n", "round")]
R = []
for n in sorted({r["n"] for r in rounds}):
    rr = [r for r in rounds if r["n"] == n]
    m = {k: statistics.median(r[k] for r in rr) for k in keys}
    m.update(n=n, round="median", rounds=len(rr), every=h5[n][0], th=h5[n][1], all=rr)
    R.append(m)
cols = [("n", "%d"), ("round", "%s"), ("steps", "%d"), ("ta", "%.6f"), ("tf", "%.6f"), ("ovh", "%.4f"),
        ("comp", "%g"), ("dropped", "%g"), ("sent", "%.0f"), ("got_all", "%.0f"), ("mbs", "%.3f"),
        ("xceil", "%.3f"), ("mbs0", "%.3f"), ("cpu_a", "%.3f"), ("cpu_calls", "%.3f"), ("cpu_other", "%.3f"),
        ("cpu_h2", "%.3f"), ("ns_a", "%.3f"), ("ns_r", "%.3f"), ("ns_s", "%.3f"), ("ns_h2", "%.3f"),
        ("pct_a", "%.1f"), ("x_s", "%.4f"), ("bound", "%.4f"), ("x_h2", "%.4f"), ("ovh_less_h2", "%.4f"),
        ("alone_cores", "%.3f"), ("ns_calls", "%.3f"), ("ns_other", "%.3f"), ("ns_b", "%.3f"), ("ns_v", "%.3f"),
        ("feed_cores", "%.3f"), ("busy_alone", "%.3f"), ("busy_feed", "%.3f"), ("quiet", "%g")]
names = ("n,round,steps,alone_s_per_step,feed_s_per_step,feed_overhead,steps_delivered,steps_dropped,"
         "sent_bytes,delivered_bytes,delivered_MBps,x_ceiling,complete_steps_MBps,piod_a_cpu_s,ranks_feed_calls_cpu_s,"
         "ranks_other_threads_cpu_s,h2_cpu_s,piod_a_ns_per_B,ranks_ns_per_B,sender_ns_per_B,h2_ns_per_B,"
         "piod_a_pct_core,sender_cores,feed_overhead_min,h2_cores,feed_overhead_less_h2,ranks_alone_cores,"
         "ranks_calls_ns_per_B,ranks_other_threads_ns_per_B,piod_b_ns_per_B,vizd_ns_per_B,ranks_feed_cores,"
         "busy_alone,busy_feed,quiet")
with open(out_csv, "w") as f:
    f.write("%s,ranks,placement,rounds,hdf5_every,hdf5_s_per_step,hdf5_overhead\n" % names)
    for m in R:
        for r in m["all"] + [m]:
            r = dict(r, xceil=r["mbs"] / ceil)
            h = ("%d,%.6f,%.4f" % (m["every"], m["th"], m["th"] / m["ta"] - 1)) if r["round"] == "median" else ",,"
            f.write(",".join(fmt % r[k] for k, fmt in cols) + ",%s,%s,%d,%s\n" % (np_, pin if pin != "0" else "user",
                                                                                  m["rounds"], h))
print()
print("Live feed from %s ranks, h1 -> h2, 4 links at %s; ceiling %.2f MB/s (MB = 10^6 B)" % (np_, rate, ceil))
print("placement: %s" % place)
print("set by this benchmark only: %s" % settings)
print("%6s %6s %6s %11s %11s %8s %11s %8s %8s %8s %7s %9s" % ("grid", "rounds", "steps", "alone s/st", "feed s/st",
      "feed +%", "HDF5 s/st", "HDF5 +%", "steps/s", "MB/s", "x ceil", "x ceil(0)"))
for m in R:
    print("%5d³ %6d %6d %11.5f %11.5f %7.1f%% %11.5f %7.1f%% %8.2f %8.2f %7.3f %9.3f" % (
        m["n"], m["rounds"], m["steps"], m["ta"], m["tf"], 100 * m["ovh"], m["th"], 100 * (m["th"] / m["ta"] - 1),
        m["mbs"] * 1e6 / (12 * m["n"] ** 3), m["mbs"], m["mbs"] / ceil, m["mbs0"] / ceil))
print()
print("CPU per byte delivered (ns/B) and what it takes from %g core%s" % (cores, "s" if cores != 1 else ""))
print("%6s %8s %8s %8s %8s %9s %9s %8s %8s %10s %11s" % ("grid", "piod A", "ranks", "sender", "piod A%", "sender",
      "least +%", "h2", "h2", "+% w/o h2", "ranks alone"))
print("%6s %8s %8s %8s %8s %9s %9s %8s %8s %10s %11s" % ("", "ns/B", "ns/B", "ns/B", "a core", "cores", "", "ns/B",
      "cores", "", "cores"))
for m in R:
    print("%5d³ %8.2f %8.2f %8.2f %7.1f%% %9.3f %8.1f%% %8.2f %8.3f %9.1f%% %11.2f" % (
        m["n"], m["ns_a"], m["ns_r"], m["ns_s"], m["pct_a"], m["x_s"], 100 * m["bound"], m["ns_h2"], m["x_h2"],
        100 * m["ovh_less_h2"], m["alone_cores"]))
print("(medians of alternating rounds; feed +%: the median of each round's feed / alone - 1; MB/s: piece bytes")
print(" pio-vizd received from its first piece to its last completed step; x ceil(0): the complete steps' bytes")
print(" only; HDF5: the same number of steps as delivered, every K-th step to a local file. ns/B: CPU (user +")
print(" system) per byte pio-vizd received: piod A from the start of heat3d until pio-vizd had every byte, less")
print(" its idle rate; ranks: in the feed's calls plus their other threads' growth over alone; sender = both;")
print(" h2 = piod B (less idle) + pio-vizd. cores: ns/B x MB/s, the CPU it needs while the links are full;")
print(" least +%%: sender cores / (%g - sender cores), what the ranks lose when they keep their cores busy; +%% w/o" % cores)
print(" h2: the measured +% with h2's cores given back to the ranks; ranks alone: their CPU per second alone)")
print()
target = pin == "0"
for m in R:
    if m["n"] != 128:
        continue
    o, b = m["ovh"], m["bound"]
    # the verdict (design notes, "Issue 31, item 4: the feed's sender,
    # cheaper"): the quiet rounds' median overhead and its 95 % interval;
    # PASS when the interval lies at or below 5 %, MISS when above, else
    # not resolved
    q = [r["ovh"] for r in m["all"] if r["quiet"]]
    ci = median_ci(q) if q else None
    if not target:
        word = "(not the target's placement):"
    elif ci is None:  # not shown to be met: a MISS for bench/run-all.sh, marked unresolved
        word = "MISS: NOT RESOLVED;"
    else:
        word = "PASS:" if ci[1] <= 0.05 else "MISS:" if ci[0] > 0.05 else "MISS: NOT RESOLVED;"
    print("%s the feed adds %s to the step time at 128^3 x %s ranks%s, target <= 5%%" % (
        word, ("%+.1f%% (95%% interval %+.1f .. %+.1f%%, median of %d quiet rounds of %d)" % (
            100 * statistics.median(q), 100 * ci[0], 100 * ci[1], len(q), len(m["all"]))) if ci else
        ("%+.1f%% (%d quiet rounds of %d: too few for an interval)" % (100 * o, len(q), len(m["all"]))),
        np_, ", as a user places it" if target else " (VIZ_PIN=%s)" % pin))
    print("   every round (quiet ones marked *; quiet: the ranks alone, and the ranks + sender + h2 with the feed,"
          " kept >= %d%% of the %g cores busy): %s" % (100 * QUIET, cores, ", ".join(
              "%+.1f%%%s" % (100 * r["ovh"], "*" if r["quiet"] else "") for r in m["all"])))
    print("   CPU at the sender: piod A %.2f + ranks %.2f = %.2f ns/B; at %.2f MB/s that is %.3f cores, so on %g cores"
          " the feed adds at least %.3f / (%g - %.3f) = %+.1f%%%s" % (
              m["ns_a"], m["ns_r"], m["ns_s"], m["mbs"], m["x_s"], cores, m["x_s"], cores, m["x_s"], 100 * b,
              (": %g cores cannot hold it within 5%%" % cores) if b > 0.05 else " (the sender alone fits in 5%)"))
    if h2_shares:
        print("   h2 (another machine in a real set-up) took %.3f cores here (piod B %.2f + pio-vizd %.2f = %.2f ns/B);"
              " with them given back the feed would add %+.1f%%" % (m["x_h2"], m["ns_b"], m["ns_v"], m["ns_h2"],
                                                                   100 * m["ovh_less_h2"]))
    print("   the ranks used %.2f cores alone and %.2f with the feed (medians)" % (m["alone_cores"], m["feed_cores"]))
best = max(R, key=lambda r: r["mbs"])
print("%s: delivered %.2f MB/s = %.3f x ceiling (at %d^3), target >= 0.9" % (
    "PASS" if best["mbs"] / ceil >= 0.9 else "MISS", best["mbs"], best["mbs"] / ceil, best["n"]))
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("note: no matplotlib: %s not drawn" % out_png)
    sys.exit(0)
fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(14, 4))
x = range(len(R))
lab = ["%d³" % r["n"] for r in R]
w = 0.27
a1.bar([i - w for i in x], [r["ta"] * 1e3 for r in R], w, label="alone", color="C7")
a1.bar([i for i in x], [r["tf"] * 1e3 for r in R], w, label="with the feed", color="C0")
a1.bar([i + w for i in x], [r["th"] * 1e3 for r in R], w, label="with local HDF5", color="C1")
a1.set_xticks(list(x)); a1.set_xticklabels(lab); a1.set_ylabel("ms per step"); a1.legend()
a1.set_title("time per step (%s ranks, %s)" % (np_, "user placement" if target else "VIZ_PIN=%s" % pin))
a2.bar(list(x), [r["mbs"] for r in R], color="C0")
a2.axhline(ceil, color="C3", ls="--", label="4-link ceiling")
a2.set_xticks(list(x)); a2.set_xticklabels(lab); a2.set_ylabel("MB/s delivered"); a2.legend()
a2.set_title("steps delivered to pio-vizd")
w = 0.38
a3.bar([i - w / 2 for i in x], [r["ns_a"] for r in R], w, label="piod A", color="C0")
a3.bar([i - w / 2 for i in x], [r["ns_r"] for r in R], w, bottom=[r["ns_a"] for r in R], label="ranks", color="C2")
a3.bar([i + w / 2 for i in x], [r["ns_h2"] for r in R], w, label="h2: piod B + pio-vizd", color="C7")
a3.set_xticks(list(x)); a3.set_xticklabels(lab); a3.set_ylabel("CPU ns per byte delivered"); a3.legend()
a3.set_title("the feed's CPU per byte")
fig.tight_layout()
fig.savefig(out_png, dpi=100)
print("wrote %s and %s" % (out_csv, out_png))
EOF2
