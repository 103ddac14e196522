#!/usr/bin/env bash
# unequal.sh - PIO over two links of unequal speed (100 + 400 Mbit/s): USER, STATIC, DYNAMIC.
# SPDX-License-Identifier: BSD-3-Clause
#
# A test bed (tests/testbed/pio-testbed) of 2 hosts with 2 links: link 0 at
# SLOW, link 1 at FAST, each way (`pio-testbed rate` on both hosts' end of
# link 1, so both directions of the path h1 -> h2 are shaped). Then, in this
# order and in the same run:
#   ceiling  2 iperf3 processes at once, one per link: client in h1 bound to
#            198.18.k.1, server in h2 on 198.18.k.2; the sum of the
#            receiver-side rates;
#   alone    one iperf3 TCP stream on link 0 alone, then on link 1 alone;
#   PIO      a piod pair on the bed (h1 = system A, h2 = system B, one channel
#            per link), pio-perf stream of 1 MiB messages, once per balance:
#              DYNAMIC      the receiver picks, per chunk, the channel whose
#                           queue drains first (measured rates);
#              STATIC       the fixed process map: processes 0 -> 0 map to
#                           channel (0 + 0) mod 2 = 0, the slow link;
#              USER -k 2    channel i round-robin over the two channels (each
#                           link gets half of the messages).
#            Each run carries about SECONDS of data at the rate that balance
#            can reach on this bed (DYNAMIC: the summed ceiling; STATIC: link
#            0 alone; USER: twice link 0 alone, the slow link sets the pace),
#            so that each lasts about SECONDS. piod A's per-channel tx byte
#            counters (pio-info --json) are read before and after each run:
#            "fast share" is link 1's part of the bytes the run sent.
# Prints a table (mode, MB/s, ratio to the summed ceiling, share on the fast
# link) with a PASS/MISS line for DYNAMIC >= 0.93 x the summed ceiling, and
# writes bench/results/unequal.csv and unequal.png. The ideal share on the
# fast link is FAST / (SLOW + FAST), 0.8 at the defaults (the ceiling row
# shows the measured one). The bed is torn down on exit (trap), also on
# failure or interruption. Needs root (skipped with a note otherwise).
# Traffic stays on the bed's 198.18/15 addresses inside its namespaces.
#
# Exit status: 0 when every measurement completed (a MISS is reported, not an
# error) or when skipped for want of root; 1 when one failed.
# Environment: BUILD (default build/default, relative to the repo root or
# absolute), UNEQUAL_SECONDS (8), UNEQUAL_SLOW (100mbit, link 0),
# UNEQUAL_FAST (400mbit, link 1), PIO_BENCH_RESULTS (default bench/results),
# PIO_PIOD_FLAGS (extra piod flags).
set -u
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
PERF=$BUILD/bin/pio-perf
SECS=${UNEQUAL_SECONDS:-8}
SLOW=${UNEQUAL_SLOW:-100mbit}
FAST=${UNEQUAL_FAST:-400mbit}
TARGET=0.93

bench_root skip
bench_need "$PERF" "$BUILD/sbin/piod" "$BUILD/bin/pio-info" "$TB" iperf3 || exit 1

bench_work

# iperf_run NAME LINK...: servers, then clients at once; prints the summed MB/s.
iperf_run() {
  local name=$1
  shift
  local i files=()
  for i in "$@"; do files+=("$work/$name.$i.json"); done
  if ! { iperf_servers "$@" && iperf_clients "$work/$name" "$SECS" "$@" &&
    iperf_rate "${files[@]}" 2>"$work/$name.rate.err"; }; then
    cat "$work/$name".*.err >&2 2>/dev/null
    return 1
  fi
}

# chan_tx: piod A's tx byte counters of its channels to B, "link0 link1".
chan_tx() {
  PIO_SOCKET=$PIO_SOCK_A "$PIO_INFO" --json | "$PY" -c '
import json, sys
ch = {c["index"]: c["tx_bytes"] for c in json.load(sys.stdin)["channels"] if c["peer"] == "B"}
print(ch.get(0, 0), ch.get(1, 0))'
}

# mb_of RATE: nominal tc rate (e.g. 100mbit) in MB/s x 0.956 (what TCP gets).
mb_of() {
  "$PY" -c '
import re, sys
m = re.fullmatch(r"([0-9.]+)([kmg]?)(bit|bps)?", sys.argv[1].lower())
v = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]
v = v * 8 if m.group(3) == "bps" else v
print("%.3f" % (v / 8e6 * 0.956))' "$1"
}

bench_banner "; 2 hosts x 2 links: link 0 at $SLOW, link 1 at $FAST"
fail=0
bench_bed_name ue
echo "-- bed $bed"
if ! { "$TB" up "$bed" --hosts 2 --links 2 --rate "$SLOW" &&
  "$TB" rate "$bed" h1 1 "$FAST" && "$TB" rate "$bed" h2 1 "$FAST"; } >"$work/up.log" 2>&1; then
  echo "unequal.sh: the bed did not come up:" >&2
  cat "$work/up.log" >&2
  exit 1
fi
"$TB" status "$bed" | sed -n '3,$p' | awk '{ print "   | " $1, "link " $2, $5, $7 }'

ceil="" l0="" l1=""
if ceil=$(iperf_run ceil 0 1); then
  echo "   ceiling (2 x iperf3 at once, one per link): $ceil MB/s"
else
  echo "unequal.sh: ceiling measurement failed" >&2; fail=1
fi
if l0=$(iperf_run l0 0); then
  echo "   link 0 alone (1 x iperf3): $l0 MB/s"
else
  echo "unequal.sh: link 0 measurement failed" >&2; fail=1
fi
if l1=$(iperf_run l1 1); then
  echo "   link 1 alone (1 x iperf3): $l1 MB/s"
else
  echo "unequal.sh: link 1 measurement failed" >&2; fail=1
fi
# per-link ceilings for the ceiling row (from the joint run)
c0="" c1=""
if [ -n "$ceil" ]; then
  c0=$(iperf_rate "$work/ceil.0.json") c1=$(iperf_rate "$work/ceil.1.json")
fi

# messages of 1 MiB for about SECS at RATE MB/s
nmsg() { awk -v r="$1" -v s="$SECS" 'BEGIN { n = int(r * 1e6 * s / 1048576 + 0.5); print (n < 8 ? 8 : n) }'; }
r_sum=${ceil:-$(awk -v a="$(mb_of "$SLOW")" -v b="$(mb_of "$FAST")" 'BEGIN { print a + b }')}
r_slow=${l0:-$(mb_of "$SLOW")}

cshare=""
[ -n "$ceil" ] && cshare=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.3f", b / (a + b) }')
{
  echo "mode,MBps,over_ceiling,fast_share,link0_bytes,link1_bytes,messages"
  echo "ceiling,${ceil},${ceil:+1.000},${cshare},,,"
  echo "link0 alone,${l0},,,,,"
  echo "link1 alone,${l1},,,,,"
} >"$work/ue.csv"

if pio_pair_testbed "$work/pio" "$bed" 2; then
  for mode in DYNAMIC STATIC USER; do
    case $mode in
      DYNAMIC) n=$(nmsg "$r_sum"); bal=(-b DYNAMIC); label=DYNAMIC ;;
      STATIC) n=$(nmsg "$r_slow"); bal=(-b STATIC); label=STATIC ;;
      USER) n=$(nmsg "$(awk -v r="$r_slow" 'BEGIN { print 2 * r }')"); bal=(-b USER -k 2)
        label="USER -k 2" ;;
    esac
    PIO_SOCKET=$PIO_SOCK_B "$PERF" --server -q >"$work/srv.$mode.log" 2>&1 &
    sp=$!; daemons+=("$sp")
    before=$(chan_tx) || before=""
    pio=""
    if PIO_SOCKET=$PIO_SOCK_A "$PERF" -t stream -s 1M -n "$n" -w 2 "${bal[@]}" \
      --timeout 120 --csv "$work/pio.$mode.csv" >"$work/cli.$mode.log" 2>&1; then
      wait "$sp" || echo "unequal.sh: $mode: pio-perf server exit $?" >&2
      pio=$(awk -F, 'NR == 2 { print $7 }' "$work/pio.$mode.csv")
    else
      echo "unequal.sh: $mode: pio-perf failed:" >&2
      sed 's/^/  | /' "$work/cli.$mode.log" >&2
      kill "$sp" 2>/dev/null; wait "$sp"
      sed 's/^/  srv | /' "$work/srv.$mode.log" >&2
      fail=1
    fi
    after=$(chan_tx) || after=""
    b0="" b1="" share=""
    if [ -n "$before" ] && [ -n "$after" ]; then
      read -r x0 x1 <<<"$before"
      read -r y0 y1 <<<"$after"
      b0=$((y0 - x0)) b1=$((y1 - x1))
      [ $((b0 + b1)) -gt 0 ] && share=$(awk -v a="$b0" -v b="$b1" 'BEGIN { printf "%.3f", b / (a + b) }')
    else
      echo "unequal.sh: $mode: could not read piod A's channel counters" >&2; fail=1
    fi
    over=""
    [ -n "$pio" ] && [ -n "$ceil" ] && over=$(awk -v p="$pio" -v c="$ceil" 'BEGIN { printf "%.3f", p / c }')
    echo "   PIO $label ($n x 1 MiB): ${pio:-failed} MB/s; piod A sent $((${b0:-0} >> 20)) MiB on link 0," \
      "$((${b1:-0} >> 20)) MiB on link 1 (fast share ${share:--})"
    echo "$label,${pio},${over},${share},${b0},${b1},$n" >>"$work/ue.csv"
  done
else
  echo "unequal.sh: the piod pair did not come up on the bed" >&2; fail=1
  for mode in DYNAMIC STATIC "USER -k 2"; do echo "$mode,,,,,," >>"$work/ue.csv"; done
fi
pio_piods_stop
"$TB" down "$bed" >/dev/null 2>&1
bed=""

bench_summary "unequal.csv unequal.png" "$work/ue.csv" "$RESULTS/unequal.csv" "$RESULTS/unequal.png" "$SLOW" "$FAST" "$TARGET" \
  "$date_s" <<'EOF'
import csv, sys
src, out_csv, out_png, slow, fast, target, date = sys.argv[1:8]
target = float(target)
rows = list(csv.DictReader(open(src)))
f = lambda v: float(v) if v else None
fm = lambda v, p="%.2f": p % v if v is not None else "-"
print()
print("Unequal links, 2 hosts x 2 links: link 0 at %s, link 1 (fast) at %s (MB/s = 10^6 B/s)"
      % (slow, fast))
print("%-12s %10s %14s %16s" % ("mode", "MB/s", "x ceiling", "fast-link share"))
for r in rows:
    print("%-12s %10s %14s %16s" % (r["mode"], fm(f(r["MBps"])), fm(f(r["over_ceiling"]), "%.3f"),
                                     fm(f(r["fast_share"]), "%.3f")))
print("(ceiling = both links' iperf3 at once, summed; its share is link 1's part of it)")
print()
dyn = next((r for r in rows if r["mode"] == "DYNAMIC"), None)
ratio = f(dyn["over_ceiling"]) if dyn else None
if ratio is None:
    print("FAIL: unequal: DYNAMIC: no measurement")
else:
    print("%s: unequal: DYNAMIC/ceiling = %.3f, target >= %.2f (%s + %s links)"
          % ("PASS" if ratio >= target else "MISS", ratio, target, slow, fast))
with open(out_csv, "w", newline="") as fo:
    w = csv.DictWriter(fo, fieldnames=list(rows[0].keys()))
    w.writeheader()
    w.writerows(rows)
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("note: no matplotlib for %s: %s not drawn" % (sys.executable, out_png))
    sys.exit(0)
names = [r["mode"] for r in rows]
vals = [f(r["MBps"]) or 0 for r in rows]
colors = ["#7f7f7f" if r["mode"] in ("ceiling", "link0 alone", "link1 alone") else "#1f77b4"
          for r in rows]
fig, ax = plt.subplots(figsize=(8, 4.5))
bars = ax.bar(range(len(rows)), vals, 0.6, color=colors)
for b, r, v in zip(bars, rows, vals):
    s = f(r["fast_share"])
    lab = "%.1f" % v + ("\nfast %.0f%%" % (100 * s) if s is not None else "")
    ax.annotate(lab, (b.get_x() + b.get_width() / 2, v), ha="center", va="bottom", fontsize=8)
c = f(rows[0]["MBps"])
if c:
    ax.axhline(target * c, color="#d62728", ls="--", lw=1,
               label="target: DYNAMIC >= %.2f x ceiling" % target)
    ax.legend(fontsize=8, loc="upper right")
ax.set_xticks(range(len(rows)))
ax.set_xticklabels(["iperf3 ceiling\n(both links)" if n == "ceiling" else
                    "iperf3\n" + n if n.endswith("alone") else "PIO\n" + n for n in names],
                   fontsize=8)
ax.set_ylabel("MB/s (10^6 B/s)")
ax.set_ylim(0, max(vals + [1]) * 1.25)
ax.set_title("PIO stream (1 MiB) over %s + %s links (%s)" % (slow, fast, date), fontsize=10)
ax.grid(True, axis="y", alpha=0.3)
fig.tight_layout()
fig.savefig(out_png, dpi=110)
EOF
[ $fail -eq 0 ] || { echo "unequal.sh: FAILED: not every measurement completed" >&2; exit 1; }
