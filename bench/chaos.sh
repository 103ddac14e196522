#!/usr/bin/env bash
# chaos.sh - the long chaos run: 200,000 messages under random faults, every acknowledged one checked.
# SPDX-License-Identifier: BSD-3-Clause
#
# The set-up of tests/bats/chaos.bats (tests/lib/chaos.bash), long: a test
# bed of 2 hosts with CHAOS_LINKS (4) links at CHAOS_RATE (1gbit here, so
# that 200,000 messages of this mix fit in the time; the CI case runs at
# 100mbit); four senders on A (PIO_USER(1), PIO_STATIC, PIO_DYNAMIC,
# PIO_DYNAMIC with PIO_SYNC) send for CHAOS_MINUTES (22) each, sizes 0 B, the eager limit
# -1/0/+1, up to 4 KiB, up to 64 KiB, 1 MiB, up to 4 MiB and, every 20,000th,
# 64 MiB,
# to four receivers on B. A driver injects at random intervals (0.3 to
# 1.9 s apart): a link cut for 0.5-0.9 s, a reset (ss -K) of every
# connection from A to B on one link, piod B stopped for 1-3 s, receiver 3
# killed (-9) and restarted. Every send and receive is in a ledger;
# tests/lib/chaos_check.py matches them.
#
# Prints the faults injected (by kind), a table per stream (sent, PIO_OK,
# delivered, lost, duplicated, reordered, in the hands of a killed
# receiver, failed sends that arrived, restarts), the bytes delivered and
# their rate against the links' sum (CHAOS_LINKS x CHAOS_RATE: the
# faults take links away, so this is no ceiling to reach, only a scale).
# PASS lines: lost 0, duplicated 0, reordered 0; at least 200,000 messages;
# at least 20 minutes. Writes bench/results/chaos.csv (per stream),
# chaos-faults.csv (every fault, with its time) and chaos.png (delivered
# messages per stream, and faults over time).
# Environment: BUILD, CHAOS_MINUTES, CHAOS_LINKS, CHAOS_RATE,
# CHAOS_LIMIT (s, 5400: the driver stops injecting after this),
# PIO_BENCH_RESULTS. Needs root (skipped otherwise).
set -u
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
MINUTES=${CHAOS_MINUTES:-22}
export CHAOS_SECONDS_SEND=${CHAOS_SECONDS_SEND:-$((MINUTES * 60))}
export CHAOS_RATE=${CHAOS_RATE:-1gbit}
LIMIT=${CHAOS_LIMIT:-5400}

bench_root skip
bench_need "$BUILD/tests/prog/pio-chaos" || exit 1
bench_work
bench_helpers
# shellcheck source=../tests/lib/chaos.bash
source "$ROOT/tests/lib/chaos.bash"
mkdir -p "$RESULTS"

bench_banner "; 2 hosts x $CHAOS_LINKS links at" \
  "$CHAOS_RATE; 4 senders (one PIO_SYNC) for $MINUTES min each; default piod settings"
chaos_bed_up "$work/run" || { echo "chaos.sh: the bed or the piods did not come up" >&2; exit 1; }
chaos_start 1 1
cat "$CD/run.txt"
chaos_drive "$LIMIT"
fail=0
[ "$CHAOS_SEND_RC" -eq 0 ] || { echo "a sender exited $CHAOS_SEND_RC"; fail=1; }
[ "$CHAOS_RECV_RC" -eq 0 ] || { echo "a receiver exited $CHAOS_RECV_RC"; fail=1; }
cat "$CD"/send*.out "$CD"/recv*.out

echo
echo "-- faults injected in $CHAOS_SECONDS s"
awk '{ $1 = ""; sub(/^ /, ""); k = $1 " " $2; if ($1 == "pause") k = "pause piod B";
       if ($1 == "kill") k = "kill receiver 3"; n[k]++ } END { for (k in n) printf "%-18s %6d\n", k, n[k] }' \
  "$CD/faults.log" | sort
{
  echo "time_s,fault"
  awk -v t0="$(head -n 1 "$CD/faults.log" | cut -d' ' -f1)" \
    '{ t = $1 - t0; $1 = ""; sub(/^ /, ""); printf "%.3f,%s\n", t, $0 }' "$CD/faults.log"
} >"$RESULTS/chaos-faults.csv"

echo
echo "-- ledgers (tests/lib/chaos_check.py)"
chaos_check --csv "$RESULTS/chaos.csv" | tee "$work/check.txt"
check_rc=${PIPESTATUS[0]}
bytes=$(cat "$CD"/recv*.ledger | awk '$1 == "R" { s += $3 } END { printf "%.0f", s }')
rate_mb=$(awk -v b="$bytes" -v t="$CHAOS_SECONDS" 'BEGIN { printf "%.2f", b / 1e6 / t }')
case $CHAOS_RATE in
  *gbit) rate_mbit=$((${CHAOS_RATE%gbit} * 1000)) ;;
  *) rate_mbit=${CHAOS_RATE%mbit} ;;
esac
links_mb=$(awk -v k="$CHAOS_LINKS" -v r="$rate_mbit" 'BEGIN { printf "%.2f", k * r / 8 }')
echo
printf "delivered %.1f MB in %d s: %s MB/s, %.2f of the links' sum (%s MB/s, faults included)\n" \
  "$(awk -v b="$bytes" 'BEGIN { print b / 1e6 }')" "$CHAOS_SECONDS" "$rate_mb" \
  "$(awk -v a="$rate_mb" -v b="$links_mb" 'BEGIN { print a / b }')" "$links_mb"
all=$(grep '^all ' "$work/check.txt")
read -r _ sent ok delivered lost dup reord _ <<<"$all"
echo
for what in "lost $lost" "duplicated $dup" "reordered $reord"; do
  set -- $what
  if [ "$2" -eq 0 ]; then echo "PASS: chaos: $1 messages: 0"; else echo "MISS: chaos: $1 messages: $2"; fi
done
if [ "$sent" -ge 200000 ]; then echo "PASS: chaos: $sent messages sent (>= 200000)"
else echo "MISS: chaos: $sent messages sent (< 200000)"; fi
if [ "$CHAOS_SECONDS" -ge 1200 ]; then echo "PASS: chaos: ran $CHAOS_SECONDS s (>= 20 min)"
else echo "MISS: chaos: ran $CHAOS_SECONDS s (< 20 min)"; fi
[ "$check_rc" -eq 0 ] || fail=1
echo "$date_s,$CHAOS_SECONDS,$sent,$ok,$delivered,$lost,$dup,$reord,$bytes,$rate_mb,$links_mb" \
  >"$RESULTS/chaos-summary.csv.new"
{ echo "date,seconds,sent,ok,delivered,lost,duplicated,reordered,bytes,mb_s,links_mb_s"
  cat "$RESULTS/chaos-summary.csv.new"; } >"$RESULTS/chaos-summary.csv"
rm -f "$RESULTS/chaos-summary.csv.new"

"$PY" - "$RESULTS/chaos.csv" "$RESULTS/chaos-faults.csv" "$RESULTS/chaos.png" <<'EOF' || true
import csv, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["stream"] != "all"]
faults = list(csv.DictReader(open(sys.argv[2])))
fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
names = [r["stream"].replace(".ledger", "") for r in rows]
x = range(len(rows))
a.bar([i - 0.2 for i in x], [int(r["ok"]) for r in rows], 0.4, label="sent, PIO_OK")
a.bar([i + 0.2 for i in x], [int(r["delivered"]) for r in rows], 0.4, label="delivered")
a.set_xticks(list(x))
a.set_xticklabels(names)
a.set_title("lost %d, duplicated %d, reordered %d" % tuple(
    sum(int(r[k]) for r in rows) for k in ("lost", "duplicated", "reordered")))
a.legend()
kinds = sorted({f["fault"].split(" ")[0] for f in faults})
for i, k in enumerate(kinds):
    ts = [float(f["time_s"]) for f in faults if f["fault"].startswith(k)]
    b.plot(ts, [i] * len(ts), "|", markersize=12, label=k)
b.set_yticks(range(len(kinds)))
b.set_yticklabels(kinds)
b.set_xlabel("s")
b.set_title("faults injected")
fig.tight_layout()
fig.savefig(sys.argv[3], dpi=90)
EOF
exit "$fail"
