#!/usr/bin/env bash
# skew.sh - the original PIO's "experiment 3", skewed load: STATIC time : DYNAMIC time.
# SPDX-License-Identifier: BSD-3-Clause
#
# A test bed (tests/testbed/pio-testbed) of 2 hosts with 16 links, each
# limited to RATE each way. Then, in this order and in the same run:
#   ceiling  16 iperf3 processes at once, one per link: client in h1 bound to
#            198.18.k.1, server in h2 on 198.18.k.2; the sum of the
#            receiver-side rates is the bundle's capacity;
#   PIO      a piod pair on the bed (h1 = system A, h2 = system B, one channel
#            per link) and, once per balance (STATIC, then DYNAMIC), one
#            receiver (bench/skew recv, process 0 of 1, on B) and 16 senders
#            (bench/skew send, processes 0..15 of 16, on A) started at once.
#            Sender i sends amount_i to the receiver's process 0 as 1 MiB
#            messages, amount_i proportional to 16^(i/15) rounded to whole
#            MiB and summing to TOTAL (512 MiB: 6 .. 91 MiB, 16x apart).
#            STATIC maps (source + destination) mod 16 to a channel, so sender
#            i rides channel i alone and the run lasts as long as the largest
#            amount takes on one link; DYNAMIC spreads every sender over the
#            whole bundle. The receiver checks every byte.
# The senders join first (PIO_Init, PIO_Setpartner) and wait at a start
# barrier; the time of a run is from the barrier's release to the receiver's
# end (it has every byte); the receiver's own first-to-last-message time is
# shown too. The ideal time is TOTAL / the measured bundle ceiling.
# Prints a table with PASS/MISS lines for DYNAMIC <= 1.05 x ideal (issue 31; was 1.07) and
# STATIC : DYNAMIC >= 2.13 (the original measured 16 : 7.5), and writes
# bench/results/skew.csv and skew.png. The bed and the piods are torn down on
# exit (trap), also on failure or interruption. Needs root (skipped with a
# note otherwise). Traffic stays on the bed's 198.18/15 addresses.
#
# Exit status: 0 when every measurement completed (a MISS is reported, not an
# error) or when skipped for want of root; 1 when one failed.
# Environment: BUILD (default build/default, relative to the repo root or
# absolute), SKEW_RATE (25mbit, each link each way), SKEW_TOTAL (512M: bytes,
# K/M/G binary suffixes, whole MiB), PIO_BENCH_RESULTS (default
# bench/results), PIO_PIOD_FLAGS (extra piod flags).
set -u
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
SKEW=$BUILD/bench/skew
RATE=${SKEW_RATE:-25mbit}
TOTAL_ARG=${SKEW_TOTAL:-512M}
K=16
SECS=8 # iperf3 ceiling run
T_IDEAL=1.05
T_RATIO=2.13

bench_root skip
bench_need "$SKEW" "$BUILD/sbin/piod" "$BUILD/bin/pio-info" "$TB" iperf3 || exit 1

# amounts in MiB, one a line: proportional to 16^(i/15), largest remainder
# rounding to whole MiB summing to the total.
if ! amounts=$("$PY" - "$TOTAL_ARG" "$K" <<'EOF'
import re, sys
m = re.fullmatch(r"([0-9]+)([kKmMgG]?)", sys.argv[1])
if not m:
    sys.exit("skew.sh: SKEW_TOTAL=%s: use bytes with an optional K, M or G suffix" % sys.argv[1])
b = int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]
k = int(sys.argv[2])
if b % (1 << 20) or b >> 20 < k:
    sys.exit("skew.sh: SKEW_TOTAL=%s: must be whole MiB, at least %d MiB" % (sys.argv[1], k))
tot = b >> 20
w = [16 ** (i / (k - 1)) for i in range(k)]
exact = [tot * x / sum(w) for x in w]
a = [int(e) for e in exact]
for i in sorted(range(k), key=lambda i: exact[i] - a[i], reverse=True)[: tot - sum(a)]:
    a[i] += 1
for i in range(k):
    if a[i] == 0:  # tiny totals: every sender sends at least 1 MiB
        j = a.index(max(a)); a[j] -= 1; a[i] = 1
print("\n".join(map(str, a)))
EOF
); then
  exit 1
fi
mapfile -t AMT <<<"$amounts"
TOTAL_MIB=0
for a in "${AMT[@]}"; do TOTAL_MIB=$((TOTAL_MIB + a)); done
TOTAL=$((TOTAL_MIB << 20))

bench_work

# ceiling: K iperf3 at once, one per link; prints the summed MB/s.
ceiling() {
  local i files=()
  for ((i = 0; i < K; i++)); do files+=("$work/ceil.$i.json"); done
  if ! { iperf_servers $(links "$K") && iperf_clients "$work/ceil" "$SECS" $(links "$K") &&
    iperf_rate "${files[@]}" 2>"$work/ceil.rate.err"; }; then
    cat "$work"/ceil.*.err >&2 2>/dev/null
    return 1
  fi
}

# run MODE: receiver, then the K senders at once; sets WALL and RECV (seconds).
run() {
  local mode=$1 i rp sp=() rc=0 t0 t1 app=skewS$mode papp=skewR$mode
  WALL="" RECV=""
  PIO_SOCKET=$PIO_SOCK_B "$SKEW" recv -a "$papp" -p "$app" -n "$TOTAL" \
    >"$work/recv.$mode.out" 2>"$work/recv.$mode.err" &
  rp=$!
  daemons+=("$rp")
  sleep 0.5 # the receiver joins (its PIO_Setpartner then waits for the senders)
  # the senders join first and wait at a start barrier (gate/ready.N, then
  # gate/go): the time is the transfer's, not 16 processes joining on 2 cores
  local gate=$work/gate.$mode n
  mkdir -p "$gate"
  for ((i = 0; i < K; i++)); do
    PIO_SOCKET=$PIO_SOCK_A "$SKEW" send -r "$i" -P "$K" -c "$mode" -b "$((AMT[i] << 20))" \
      -a "$app" -p "$papp" -g "$gate" >"$work/send.$mode.$i.log" 2>&1 &
    sp+=($!)
    daemons+=($!)
  done
  for ((n = 0; n < 1200; n++)); do
    [ "$(find "$gate" -name 'ready.*' | wc -l)" -ge "$K" ] && break
    sleep 0.05
  done
  t0=$(date +%s.%N)
  touch "$gate/go"
  wait "$rp" || rc=$?
  t1=$(date +%s.%N)
  for i in "${sp[@]}"; do
    wait "$i" || { echo "skew.sh: $mode: a sender failed:" >&2; rc=1; }
  done
  daemons=()
  if [ $rc -ne 0 ] || ! grep -qx OK "$work/recv.$mode.out"; then
    echo "skew.sh: $mode: the run failed (receiver exit $rc):" >&2
    sed 's/^/  recv | /' "$work/recv.$mode.out" "$work/recv.$mode.err" >&2
    for ((i = 0; i < K; i++)); do sed "s/^/  send $i | /" "$work/send.$mode.$i.log" >&2; done
    return 1
  fi
  WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
  RECV=$(awk '$1 == "elapsed" { print $2 }' "$work/recv.$mode.out")
}

# chan_tx: piod A's tx byte counters of its K channels to B, space-separated.
chan_tx() {
  PIO_SOCKET=$PIO_SOCK_A "$PIO_INFO" --json | "$PY" -c '
import json, sys
k = int(sys.argv[1])
ch = {c["index"]: c["tx_bytes"] for c in json.load(sys.stdin)["channels"] if c["peer"] == "B"}
print(" ".join(str(ch.get(i, 0)) for i in range(k)))' "$K"
}

bench_banner "; 2 hosts x $K links at $RATE;" \
  "$K senders, $TOTAL_MIB MiB in all"
echo "   amounts (MiB, sender 0..$((K - 1))): ${AMT[*]}"
fail=0
if ! bench_bed_up sk 2 "$K" "$RATE"; then
  echo "skew.sh: the bed $bed did not come up" >&2
  exit 1
fi
echo "-- bed $bed"

ceil=""
if ceil=$(ceiling); then
  echo "   ceiling ($K x iperf3 at once, one per link): $ceil MB/s"
else
  echo "skew.sh: ceiling measurement failed" >&2; fail=1; ceil=""
fi

echo "mode,seconds,recv_seconds,MBps,max_channel_MiB,min_channel_MiB" >"$work/skew.csv"
if pio_pair_testbed "$work/pio" "$bed" "$K"; then
  for mode in STATIC DYNAMIC; do
    before=$(chan_tx) || before=""
    if run "$mode"; then
      after=$(chan_tx) || after=""
      mx="" mn=""
      if [ -n "$before" ] && [ -n "$after" ]; then
        read -r mx mn < <(awk -v b="$before" -v a="$after" 'BEGIN {
          n = split(b, x, " "); split(a, y, " "); mx = -1; mn = -1
          for (i = 1; i <= n; i++) { d = (y[i] - x[i]) / 1048576
            if (mx < 0 || d > mx) mx = d; if (mn < 0 || d < mn) mn = d }
          printf "%.1f %.1f\n", mx, mn }')
      fi
      mbps=$(awk -v t="$WALL" -v b="$TOTAL" 'BEGIN { printf "%.3f", b / t / 1e6 }')
      echo "   PIO $mode: ${WALL} s (receiver first-to-last ${RECV} s), $mbps MB/s;" \
        "per channel ${mn:-?} .. ${mx:-?} MiB"
      echo "$mode,$WALL,$RECV,$mbps,$mx,$mn" >>"$work/skew.csv"
    else
      fail=1
      echo "$mode,,,,," >>"$work/skew.csv"
    fi
  done
else
  echo "skew.sh: the piod pair did not come up on the bed" >&2; fail=1
  printf '%s,,,,,\n' STATIC DYNAMIC >>"$work/skew.csv"
fi
pio_piods_stop
"$TB" down "$bed" >/dev/null 2>&1
bed=""

bench_summary "skew.csv skew.png" "$work/skew.csv" "$RESULTS/skew.csv" "$RESULTS/skew.png" "$RATE" "$TOTAL" "$ceil" \
  "$T_IDEAL" "$T_RATIO" "$date_s" "${AMT[*]}" <<'EOF'
import csv, sys
src, out_csv, out_png, rate, total, ceil, t_ideal, t_ratio, date, amts = sys.argv[1:11]
total, t_ideal, t_ratio = int(total), float(t_ideal), float(t_ratio)
ceil = float(ceil) if ceil else None
rows = {r["mode"]: r for r in csv.DictReader(open(src))}
f = lambda v: float(v) if v else None
st = f(rows["STATIC"]["seconds"])
dy = f(rows["DYNAMIC"]["seconds"])
ideal = total / (ceil * 1e6) if ceil else None
ratio = st / dy if st and dy else None
over = dy / ideal if dy and ideal else None
fm = lambda v, p="%.2f": p % v if v is not None else "-"
print()
print("Skewed load (experiment 3): 2 hosts x 16 links at %s, 16 senders -> 1 receiver,"
      " %d MiB in all (%s MiB)" % (rate, total >> 20, amts.replace(" ", ",")))
print("%-22s %10s %10s" % ("", "seconds", "MB/s"))
print("%-22s %10s %10s" % ("ideal (total/ceiling)", fm(ideal), fm(ceil)))
for m in ("STATIC", "DYNAMIC"):
    r = rows[m]
    print("%-22s %10s %10s" % ("PIO " + m, fm(f(r["seconds"])), fm(f(r["MBps"]))))
print("STATIC : DYNAMIC  = %s : 1   (original PIO: 16 : 7.5 = 2.13 : 1)" % fm(ratio))
print("DYNAMIC / ideal   = %s" % fm(over, "%.3f"))
print("(seconds: senders' start to the receiver holding every byte; ceiling = 16 x iperf3"
      " at once, summed, MB/s = 10^6 B/s)")
print()
if over is None:
    print("FAIL: skew: DYNAMIC/ideal: no measurement")
else:
    print("%s: skew: DYNAMIC = %.3f x ideal, target <= %.2f"
          % ("PASS" if over <= t_ideal else "MISS", over, t_ideal))
if ratio is None:
    print("FAIL: skew: STATIC:DYNAMIC: no measurement")
else:
    print("%s: skew: STATIC:DYNAMIC = %.2f, target >= %.2f"
          % ("PASS" if ratio >= t_ratio else "MISS", ratio, t_ratio))
with open(out_csv, "w", newline="") as fo:
    w = csv.writer(fo)
    w.writerow(["mode", "seconds", "recv_seconds", "MBps", "max_channel_MiB", "min_channel_MiB",
                "over_ideal"])
    w.writerow(["ideal", fm(ideal, "%.3f") if ideal else "", "", ceil or "", "", "", "1.000"])
    for m in ("STATIC", "DYNAMIC"):
        r = rows[m]
        s = f(r["seconds"])
        w.writerow([m, r["seconds"], r["recv_seconds"], r["MBps"], r["max_channel_MiB"],
                    r["min_channel_MiB"], "%.3f" % (s / ideal) if s and ideal else ""])
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("note: no matplotlib for %s: %s not drawn" % (sys.executable, out_png))
    sys.exit(0)
names = ["ideal\n(total / ceiling)", "PIO STATIC", "PIO DYNAMIC"]
vals = [ideal or 0, st or 0, dy or 0]
fig, ax = plt.subplots(figsize=(7, 4.5))
bars = ax.bar(range(3), vals, 0.6, color=["#7f7f7f", "#ff7f0e", "#1f77b4"])
for b, v in zip(bars, vals):
    ax.annotate("%.1f s" % v, (b.get_x() + b.get_width() / 2, v), ha="center", va="bottom",
                fontsize=9)
if ideal:
    ax.axhline(t_ideal * ideal, color="#d62728", ls="--", lw=1,
               label="target: DYNAMIC <= %.2f x ideal" % t_ideal)
    ax.legend(fontsize=8, loc="upper right")
ax.set_xticks(range(3))
ax.set_xticklabels(names, fontsize=9)
ax.set_ylabel("seconds (lower is better)")
ax.set_ylim(0, max(vals + [1]) * 1.2)
ax.set_title("Skewed load, 16 senders over 16 x %s links: STATIC:DYNAMIC = %s (%s)"
             % (rate, fm(ratio), date), fontsize=9)
ax.grid(True, axis="y", alpha=0.3)
fig.tight_layout()
fig.savefig(out_png, dpi=110)
EOF
[ $fail -eq 0 ] || { echo "skew.sh: FAILED: not every measurement completed" >&2; exit 1; }
