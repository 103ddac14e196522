#!/usr/bin/env bash
# viz.sh - a live visualization feed: what it costs the simulation and what
# it delivers, against writing the steps to a local HDF5 file.
# SPDX-License-Identifier: BSD-3-Clause
#
# A test bed of 2 hosts with 4 links at RATE (default 100mbit). h1 runs the
# simulation, examples/heat3d with NP (8) MPI ranks on an N^3 grid (N in
# SIZES, default "64 128 256"; each step feeds a double and an int32 field:
# 12 N^3 bytes); h2 runs pio-vizd. In one run:
#   ceiling    4 iperf3 at once, one per link, summed (bench/lib.bash);
# and for each N:
#   alone      heat3d --no-feed (no PIO at all): the simulation's own time
#              per step;
#   feed       pio-vizd in h2 (2 receiving threads, no output: the live
#              policy, newest step only; rendering would run on the
#              visualization host, not the simulation's) and heat3d offering
#              every step: rank 0 plans a step a few steps ahead whenever
#              fewer than 2 are unacknowledged and tells the other ranks
#              through piod A, every rank sends the planned steps and skips
#              the others without packing them (PIO_Feed_sending), so the
#              links stay full and the simulation never waits. Time per
#              step with the feed, and the bytes delivered per second
#              against the ceiling: the piece bytes pio-vizd received from
#              its first piece to its last completed step (its status), and,
#              stricter, the complete steps' bytes only over the same time;
#   hdf5       heat3d writing the same number of steps (--every K, K = the
#              steps offered / the steps the feed delivered) to a local HDF5
#              file with parallel HDF5 (collective, one dataset per step, on
#              this machine's disk): its time per step.
# The runs are sized to about RUN_S seconds (default 8), or the time 8 steps
# take over the links if longer, from a short calibration run. The machine
# is shared and identical runs differ by up to 10 %, so alone and feed run
# ROUNDS times each, alternating (VIZ_ROUNDS, default 3; 7 at 128^3, the
# size of the target), and the table shows the medians. Time per step is heat3d's own (rank 0, a barrier on each
# side of the loop). Prints a table and PASS/MISS for the targets (the feed
# adds <= 5% to the time per step at 128^3 x 8 ranks; delivered bytes/s >=
# 0.9 x the ceiling), writes bench/results/viz.csv and viz.png. Root only.
#
# Where things run (VIZ_PIN): 1 (the default) gives the simulation's ranks
# core 0 and the daemons (piod A, piod B, pio-vizd) core 1, as a cluster
# node keeps a core for its daemons (Slurm's core specialization) and the
# receiver is another machine; piod A's CPU time during the feed run is
# reported (% of a core), since on a node without a spare core it would come
# out of the simulation's. "host": h1 (ranks and piod A) core 0, h2 core 1,
# so piod A's sending work slows the ranks. 0: everything on both cores.
# Environment: BUILD (build/default), VIZ_SIZES ("64 128 256"), VIZ_NP (8),
# VIZ_RATE (100mbit), VIZ_RUN_S (8), VIZ_ROUNDS (3), VIZ_PIN (1), PIO_BENCH_RESULTS
# (bench/results).
set -u
# each rank's pool must hold two steps in flight (its send region is half of
# --proc-pool: 2 x 24 MiB per rank at 256^3 on 8 ranks needs 128M)
PIO_PIOD_FLAGS=${PIO_PIOD_FLAGS:---pool 2G --proc-pool 128M}
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
SIZES=${VIZ_SIZES:-64 128 256}
NP=${VIZ_NP:-8}
RATE=${VIZ_RATE:-100mbit}
RUN_S=${VIZ_RUN_S:-8}
ROUNDS=${VIZ_ROUNDS:-3}
K=4
HEAT=$BUILD/examples/heat3d
VIZD=$BUILD/bin/pio-vizd

bench_root skip
bench_need "$HEAT" "$VIZD" "$BUILD/sbin/piod" mpirun iperf3 || exit 1

bench_work
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe --mca mpi_yield_when_idle 1 -np "$NP")

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
# VIZ_PIN=1 (the default): each emulated host gets one of the two cores, h1
# (the ranks and piod A) core 0, h2 (piod B and pio-vizd) core 1, as if they
# were two machines; 0: everything shares both cores
PIN=${VIZ_PIN:-1}
CPU_A=() CPU_B=()
if [ "$PIN" != 0 ] && [ "$(nproc)" -ge 2 ]; then
  CPU_A=(taskset -c 0) CPU_B=(taskset -c 1)
  taskset -a -p -c "$([ "$PIN" = host ] && echo 0 || echo 1)" "$(cat "$work/pio/A.pid")" >/dev/null
  taskset -a -p -c 1 "$(cat "$work/pio/B.pid")" >/dev/null
fi
# cpu_s PID: user + system CPU seconds of a process so far
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"; }
PIDA=$(cat "$work/pio/A.pid")

# heat LOG ARGS...: heat3d in h1; prints its seconds per step
heat() {
  local log=$1
  shift
  "$TB" exec "$bed" h1 "${CPU_A[@]}" env PIO_SOCKET="$SA" timeout 600 "${MPIRUN[@]}" --bind-to none \
    "$HEAT" --stats "$@" \
    >"$log" 2>&1 </dev/null || { echo "viz.sh: heat3d $* failed:" >&2; tail -20 "$log" >&2; return 1; }
  awk '/^wall /{print $2}' "$log"
}

# median of the arguments
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# json FILE KEY: a number from pio-vizd's status file
json() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

rows=()
for n in $SIZES; do
  echo "-- $n^3, $NP ranks ($((12 * n * n * n / 1000000)) MB a step)"
  t=$(heat "$work/cal.$n" --n "$n" --steps 100 --no-feed) || exit 1
  # about RUN_S seconds, and long enough for 8 steps to cross the links
  steps=$("$PY" -c "print(max(20, int(max($RUN_S, 8 * 12 * $n ** 3 / ($ceil * 1e6)) / $t)))")
  rounds=$ROUNDS
  [ "$n" = 128 ] && [ -z "${VIZ_ROUNDS:-}" ] && rounds=7
  T_ALONE=() T_FEED=() MBS=() MBS0=() CPUA=() COMPLETE=() OVH=()
  for ((r = 1; r <= rounds; r++)); do
    ta=$(heat "$work/alone.$n.$r" --n "$n" --steps "$steps" --no-feed) || exit 1
    rm -f "$work/st.json"
    "$TB" exec "$bed" h2 "${CPU_B[@]}" env PIO_SOCKET="$SB" "$VIZD" --threads 2 --memory 4096 \
      --status-file "$work/st.json" >"$work/vizd.$n.$r.log" 2>&1 &
    vp=$!
    for _ in $(seq 100); do grep -q "receiving threads" "$work/vizd.$n.$r.log" && break; sleep 0.1; done
    c0=$(cpu_s "$PIDA") w0=$(date +%s.%N)
    tf=$(heat "$work/feed.$n.$r" --n "$n" --steps "$steps") || exit 1
    cpua=$("$PY" -c "print('%.1f' % (100 * ($(cpu_s "$PIDA") - $c0) / ($(date +%s.%N) - $w0)))")
    sleep 1
    kill "$vp" 2>/dev/null
    wait "$vp" 2>/dev/null
    complete=$(json "$work/st.json" steps_complete)
    dropped=$(json "$work/st.json" steps_dropped)
    span=$(json "$work/st.json" receiving_seconds)
    got=$(json "$work/st.json" bytes_by_last_complete)
    [ "$complete" -ge 3 ] || { echo "viz.sh: fewer than 3 steps delivered at $n^3" >&2; cat "$work/vizd.$n.$r.log" >&2; exit 1; }
    # from pio-vizd's first piece to its last completed step (its clock):
    # delivered = the piece bytes received meanwhile (two steps are in
    # flight, so the next step's pieces cross while one completes); mbs0 =
    # only the bytes of the complete steps (less by the part of the step
    # after the last one that had arrived: up to a step, in a short run)
    mbs=$("$PY" -c "print('%.3f' % ($got / $span / 1e6))")
    mbs0=$("$PY" -c "print('%.3f' % ($complete * 12 * $n ** 3 / $span / 1e6))")
    printf '   round %d, %d steps: alone %.5f s/step, with feed %.5f (%+.1f%%); %d steps complete, %d dropped, %s MB/s (complete steps only %s); piod A %s%% of a core\n' \
      "$r" "$steps" "$ta" "$tf" "$("$PY" -c "print(100 * ($tf / $ta - 1))")" "$complete" "$dropped" "$mbs" "$mbs0" "$cpua"
    T_ALONE+=("$ta") T_FEED+=("$tf") MBS+=("$mbs") MBS0+=("$mbs0") CPUA+=("$cpua") COMPLETE+=("$complete")
    OVH+=("$("$PY" -c "print($tf / $ta - 1)")")
  done
  t_alone=$(median "${T_ALONE[@]}") t_feed=$(median "${T_FEED[@]}") mbs=$(median "${MBS[@]}")
  cpua=$(median "${CPUA[@]}") complete=$(median "${COMPLETE[@]}") ovh=$(median "${OVH[@]}") mbs0=$(median "${MBS0[@]}")
  every=$("$PY" -c "print(max(1, round($steps / $complete)))")
  t_h5=$(heat "$work/h5.$n" --n "$n" --steps "$steps" --every "$every" --h5 "$work/steps.h5") || exit 1
  rm -f "$work/steps.h5"
  printf '   medians of %d rounds: alone %.5f s/step, with feed %.5f, feed/alone - 1 %+.1f%%; with HDF5 (every %d) %.5f; delivered %s MB/s\n' \
    "$rounds" "$t_alone" "$t_feed" "$("$PY" -c "print(100 * $ovh)")" "$every" "$t_h5" "$mbs"
  rows+=("$n,$steps,$t_alone,$t_feed,$every,$t_h5,$complete,$mbs,$cpua,$rounds,$ovh,$mbs0")
done

mkdir -p "$RESULTS"
printf '%s\n' "${rows[@]}" >"$work/rows"
"$PY" - "$RESULTS/viz.csv" "$RESULTS/viz.png" "$ceil" "$NP" "$RATE" "$work/rows" "$PIN" <<'EOF'
import sys
out_csv, out_png, ceil, np_, rate, rows = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
pin = sys.argv[7]
R = []
for line in open(rows):
    n, steps, ta, tf, every, th, comp, mbs, cpua, rounds, ovh, mbs0 = line.strip().split(",")
    R.append(dict(n=int(n), steps=int(steps), ta=float(ta), tf=float(tf), every=int(every),
                  th=float(th), comp=float(comp), mbs=float(mbs), cpua=float(cpua), rounds=int(rounds),
                  ovh=float(ovh), mbs0=float(mbs0)))
with open(out_csv, "w") as f:
    f.write("n,ranks,steps,alone_s_per_step,feed_s_per_step,feed_overhead,hdf5_every,hdf5_s_per_step,"
            "hdf5_overhead,steps_delivered,steps_per_s,delivered_MBps,x_ceiling,piod_a_cpu_pct,pin,rounds,complete_steps_MBps\n")
    for r in R:
        f.write("%d,%s,%d,%.6f,%.6f,%.4f,%d,%.6f,%.4f,%g,%.3f,%.3f,%.3f,%.1f,%s,%d,%.3f\n" % (
            r["n"], np_, r["steps"], r["ta"], r["tf"], r["ovh"], r["every"], r["th"],
            r["th"] / r["ta"] - 1, r["comp"], r["mbs"] * 1e6 / (12 * r["n"] ** 3), r["mbs"], r["mbs"] / ceil,
            r["cpua"], pin, r["rounds"], r["mbs0"]))
print()
print("Live feed from %s ranks, h1 -> h2, 4 links at %s; ceiling %.2f MB/s (MB = 10^6 B); %s" % (np_, rate, ceil,
      {"1": "ranks on core 0, the daemons on core 1", "host": "h1 (ranks, piod A) on core 0, h2 on core 1"}.get(
          pin, "everything on both cores")))
print("%6s %6s %11s %11s %9s %11s %9s %9s %9s %9s %11s %9s" % ("grid", "steps", "alone s/st", "feed s/st", "feed +%",
      "HDF5 s/st", "HDF5 +%", "steps/s", "MB/s", "x ceil", "x ceil(0)", "piod A %"))
for r in R:
    print("%5d³ %6d %11.5f %11.5f %8.1f%% %11.5f %8.1f%% %9.2f %9.2f %9.3f %11.3f %8.1f%%" % (
        r["n"], r["steps"], r["ta"], r["tf"], 100 * (r["ovh"]), r["th"],
        100 * (r["th"] / r["ta"] - 1), r["mbs"] * 1e6 / (12 * r["n"] ** 3), r["mbs"], r["mbs"] / ceil,
        r["mbs0"] / ceil, r["cpua"]))
print("(medians of alternating rounds (%s); feed +%%: the median of each round's feed / alone - 1;" % ", ".join(
    "%d at %d³" % (r["rounds"], r["n"]) for r in R))
print(" MB/s: piece bytes pio-vizd received from its first piece to its last completed step; x ceil(0):")
print(" the complete steps' bytes only, over the same time; HDF5: the same number of steps as delivered, every")
print(" K-th step to a local file; piod A %: the sending piod's CPU time in the feed run, % of one core)")
print()
for r in R:
    if r["n"] == 128:
        o = r["ovh"]
        print("%s: the feed adds %.1f%% to the step time at 128^3 x %s ranks, target <= 5%%" % ("PASS" if o <= 0.05 else "MISS", 100 * o, np_))
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
fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
x = range(len(R))
lab = ["%d³" % r["n"] for r in R]
w = 0.27
a1.bar([i - w for i in x], [r["ta"] * 1e3 for r in R], w, label="alone", color="C7")
a1.bar([i for i in x], [r["tf"] * 1e3 for r in R], w, label="with the feed", color="C0")
a1.bar([i + w for i in x], [r["th"] * 1e3 for r in R], w, label="with local HDF5", color="C1")
a1.set_xticks(list(x)); a1.set_xticklabels(lab); a1.set_ylabel("ms per step"); a1.legend()
a1.set_title("simulation's time per step (%s ranks)" % np_)
a2.bar(list(x), [r["mbs"] for r in R], color="C0")
a2.axhline(ceil, color="C3", ls="--", label="4-link ceiling")
a2.set_xticks(list(x)); a2.set_xticklabels(lab); a2.set_ylabel("MB/s delivered"); a2.legend()
a2.set_title("steps delivered to pio-vizd")
fig.tight_layout()
fig.savefig(out_png, dpi=100)
print("wrote %s and %s" % (out_csv, out_png))
EOF
