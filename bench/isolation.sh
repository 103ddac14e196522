#!/usr/bin/env bash
# isolation.sh - three pairs' rate with a fourth receiver stopped, against their rate alone (issue 26).
# SPDX-License-Identifier: BSD-3-Clause
#
# A piod pair on loopback (A 127.1.0.1, B 127.2.0.1, one channel, default
# settings). Three pairs of tests/prog/pio-check "order" (ROUNDS x N mixed
# messages each: 70 % up to 1 KiB, 25 % up to 70 KiB, 5 % up to 3 MiB, every
# byte and the order checked) run at once from A to B:
#   alone    nothing else;
#   stalled  a fourth receiver on B has joined and is stopped (SIGSTOP: it
#            reads nothing, neither its socket nor its pool), and its sender
#            on A streams the same mix to it until it can no longer (its
#            messages take the eager path, fill the stopped process' queue
#            and its share of the receive region, and then wait).
# The two kinds of round alternate (alone, stalled, alone, ...), ROUNDS of
# each; the figure is each kind's median time, and the ratio is the rate
# stalled / alone (= median time alone / median time stalled). Target: at
# least 0.9. Also reported: piod CPU per round (user + system ticks of A and
# B from /proc), which shows whether the stopped process costs the daemons
# work. Writes bench/results/isolation.csv (every round) and isolation.png.
# Environment: BUILD, ISO_ROUNDS (5), ISO_N (20000), PIO_BENCH_RESULTS.
set -u
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
ROUNDS=${ISO_ROUNDS:-5}
N=${ISO_N:-20000}
CHECK=$BUILD/tests/prog/pio-check
bench_need "$CHECK" || exit 1
bench_work
bench_helpers
mkdir -p "$RESULTS"

D=$work/pair
mkdir -p "$D"
_pio_keys "$D" A B
CP=$(pio_free_port) DP=$(pio_free_port)
_pio_start A "$D" "" -- --listen 127.1.0.1 --peer B=127.2.0.1 --control-port "$CP" --data-port "$DP"
_pio_start B "$D" "" -- --listen 127.2.0.1 --peer A=127.1.0.1 --control-port "$CP" --data-port "$DP"
_pio_wait_sock "$D/A.sock" && _pio_wait_sock "$D/B.sock" &&
  pio_wait_channels "$D/A.sock" 1 >/dev/null && pio_wait_channels "$D/B.sock" 1 >/dev/null ||
  { echo "isolation.sh: the piods did not come up" >&2; exit 1; }
cpu() { awk '{ print $14 + $15 }' "/proc/$(cat "$D/$1.pid")/stat"; }

bench_banner "; loopback, one channel, default" \
  "settings; 3 pairs x $N messages, $ROUNDS rounds of each kind"
echo "round,kind,seconds,cpu_a_ticks,cpu_b_ticks,ok" >"$RESULTS/isolation.csv"
fail=0
# pairs KIND ROUND: the three pairs; appends a row, prints its seconds
pairs() {
  local kind=$1 k=$2 pids=() t0 t1 a0 b0 ok i
  for i in 1 2 3; do
    PIO_SOCKET=$D/B.sock "$CHECK" recv order -n "$N" -a "is-r$i" -p "is-s$i" >"$work/r$i" 2>&1 &
    pids+=($!)
  done
  pio_wait_until 10 grep -q "process is-r3:0 of 1 joined" "$D/B.log" >/dev/null
  a0=$(cpu A) b0=$(cpu B) t0=$(date +%s.%N)
  for i in 1 2 3; do
    PIO_SOCKET=$D/A.sock "$CHECK" send order -n "$N" -a "is-s$i" -p "is-r$i" >"$work/s$i" 2>&1 &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i"; done
  t1=$(date +%s.%N)
  ok=$(cat "$work"/r1 "$work"/r2 "$work"/r3 | grep -c '^OK order')
  [ "$ok" -eq 3 ] || { echo "round $k ($kind): only $ok of 3 receivers OK" >&2; fail=1; }
  echo "$k,$kind,$(echo "$t1 - $t0" | bc),$(($(cpu A) - a0)),$(($(cpu B) - b0)),$ok" \
    >>"$RESULTS/isolation.csv"
  # the pairs' streams end with their processes: B forgets them
  sleep 1
}
for ((k = 1; k <= ROUNDS; k++)); do
  pairs alone "$k"
  PIO_SOCKET=$D/B.sock "$CHECK" recv order -n 100000000 -a "is-x$k" -p "is-y$k" >"$work/x" 2>&1 &
  xp=$!
  pio_wait_until 10 grep -q "process is-x$k:0 of 1 joined" "$D/B.log" >/dev/null
  PIO_SOCKET=$D/A.sock "$CHECK" send order -n 100000000 -a "is-y$k" -p "is-x$k" >"$work/y" 2>&1 &
  yp=$!
  sleep 1
  kill -STOP "$xp"
  sleep 3 # its sender fills what the stopped process may hold, then waits
  pairs stalled "$k"
  kill -CONT "$xp"
  kill "$xp" "$yp" 2>/dev/null
  wait "$xp" "$yp" 2>/dev/null
  sleep 2
done

"$PY" - "$RESULTS/isolation.csv" "$RESULTS/isolation.png" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
t = {k: [float(r["seconds"]) for r in rows if r["kind"] == k] for k in ("alone", "stalled")}
c = {k: [int(r["cpu_a_ticks"]) + int(r["cpu_b_ticks"]) for r in rows if r["kind"] == k]
     for k in ("alone", "stalled")}
print("%-8s %8s %8s %8s %10s" % ("kind", "median s", "min s", "max s", "piod ticks"))
for k in ("alone", "stalled"):
    print("%-8s %8.2f %8.2f %8.2f %10d" % (k, statistics.median(t[k]), min(t[k]), max(t[k]),
                                          statistics.median(c[k])))
ratio = statistics.median(t["alone"]) / statistics.median(t["stalled"])
print("rate with a stopped receiver / rate alone: %.3f" % ratio)
print(("PASS" if ratio >= 0.9 else "MISS") + ": isolation: three pairs keep %.3f of their rate "
      "alone with a fourth receiver stopped (>= 0.9)" % ratio)
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    for k, m in (("alone", "o"), ("stalled", "s")):
        rs = [r for r in rows if r["kind"] == k]
        ax.plot([int(r["round"]) for r in rs], [float(r["seconds"]) for r in rs], m + "-", label=k)
    ax.set_xlabel("round")
    ax.set_ylabel("seconds for 3 pairs")
    ax.set_ylim(bottom=0)
    ax.set_title("3 pairs alone vs with a 4th receiver stopped: rate ratio %.3f" % ratio)
    ax.legend()
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=90)
except ImportError:
    pass
EOF
exit "$fail"
