#!/usr/bin/env bash
# python.sh - the Python package's asyncio transfer against C pio-perf, in
# the same run (issue 33: >= 0.9 x).
# SPDX-License-Identifier: BSD-3-Clause
#
# A test bed of 2 hosts x K links (PYBENCH_K, 4) at each rate of
# PYBENCH_RATES ("100mbit 1gbit": the bundle's rate, then one where the two
# cores, not the links, set the pace), a piod pair on it (A in h1, B in h2).
# Per rate, PYBENCH_ROUNDS rounds (3), each in turn:
#   C        pio-perf -t stream -s 16M (blocking sends, DYNAMIC), the same
#            bytes, the server's side at B; and pio-perf -t oneway -m
#            nonblocking (8 sends in flight): the better of the two is C's
#            best form;
#   Python   examples/python/async_transfer.py: a sender at A and a
#            receiver at B, two Python processes with asyncio, 16 MiB numpy
#            messages, 4 in flight, the receiver checking every message;
#            the rate the receiver measured.
# PYBENCH_MIB (1024) MiB each time. The package is installed into a venv
# with pip (--system-site-packages: Debian's cffi and numpy), as a user would.
# Prints a table, PASS/MISS per rate (Python >= 0.9 x C's best, the median
# of the rounds' ratios), writes bench/results/python.csv and python.png.
# Root only. Environment: BUILD, PYBENCH_K, PYBENCH_RATES, PYBENCH_ROUNDS,
# PYBENCH_MIB, PIO_BENCH_RESULTS.
set -u
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
PERF=$BUILD/bin/pio-perf
K=${PYBENCH_K:-4}
RATES=${PYBENCH_RATES:-100mbit 1gbit}
ROUNDS=${PYBENCH_ROUNDS:-3}
MIB=${PYBENCH_MIB:-1024}
EX=$ROOT/examples/python/async_transfer.py

bench_root fail
bench_need "$PERF" "$BUILD/sbin/piod" "$TB" "$EX" || exit 1
bench_work

venv=$work/venv
/usr/bin/python3 -m venv --system-site-packages "$venv" &&
  cp -r "$ROOT/bindings/python" "$work/pkg" &&
  PIO_SRC=$ROOT PIO_BUILD=$BUILD "$venv/bin/pip" install --no-index "$work/pkg" >"$work/pip.log" 2>&1 ||
  { echo "python.sh: the package did not install:" >&2; cat "$work/pip.log" >&2; exit 1; }
VPY=$venv/bin/python

bench_banner "; 2 hosts x $K links, rates: $RATES; $MIB MiB a transfer, $ROUNDS rounds"
echo "rate,round,c_stream_MBps,c_oneway_MBps,python_MBps" >"$work/py.csv"
n=$((MIB / 16))
fail=0
for RATE in $RATES; do
  bench_bed_up py 2 "$K" "$RATE" || { fail=1; continue; }
  dir=$work/pio.$RATE
  if ! pio_pair_testbed "$dir" "$bed" "$K"; then
    echo "python.sh: the piods did not come up at $RATE" >&2; fail=1; continue
  fi
  for ((r = 1; r <= ROUNDS; r++)); do
    c=()
    for t in "stream -m blocking" "oneway -m nonblocking"; do
      PIO_SOCKET=$PIO_SOCK_B "$PERF" --server -q >"$work/srv.log" 2>&1 &
      sp=$!
      # shellcheck disable=SC2086 # the test's words
      if PIO_SOCKET=$PIO_SOCK_A "$PERF" -t $t -s 16M -n "$n" -w 2 -b DYNAMIC --timeout 120 \
        --csv "$work/c.csv.$r" >"$work/cli.log" 2>&1; then
        wait "$sp"
        c+=("$(awk -F, 'END { print $7 }' "$work/c.csv.$r")")
      else
        echo "python.sh: pio-perf -t $t failed:" >&2; cat "$work/cli.log" >&2
        kill "$sp" 2>/dev/null; wait "$sp"; c+=(""); fail=1
      fi
    done
    PIO_SOCKET=$PIO_SOCK_B timeout 300 "$VPY" "$EX" recv --mib "$MIB" >"$work/recv.log" 2>&1 &
    rp=$!
    PIO_SOCKET=$PIO_SOCK_A timeout 300 "$VPY" "$EX" send --mib "$MIB" >"$work/send.log" 2>&1
    ss=$?
    wait "$rp"
    rs=$?
    py=$(sed -n 's/^OK .*: \([0-9.]*\) MB\/s$/\1/p' "$work/recv.log")
    if [ "$ss" -ne 0 ] || [ "$rs" -ne 0 ] || [ -z "$py" ]; then
      echo "python.sh: the Python transfer failed (send $ss, recv $rs):" >&2
      cat "$work/send.log" "$work/recv.log" >&2; fail=1
    fi
    printf '   %s, round %d: C stream %s MB/s, C oneway nonblocking %s MB/s, Python asyncio %s MB/s\n' \
      "$RATE" "$r" "${c[0]}" "${c[1]}" "$py"
    echo "$RATE,$r,${c[0]},${c[1]},$py" >>"$work/py.csv"
  done
  pio_piods_stop
  "$TB" down "$bed" >/dev/null 2>&1
  bed=""
done

bench_summary "python.csv python.png" "$RESULTS" "$work/py.csv" "$K" "$MIB" <<'PYEOF'
import sys, csv, collections, shutil
res, f, k, mib = sys.argv[1:5]
rows = [r for r in csv.DictReader(open(f))]
shutil.copy(f, res + "/python.csv")
def med(v):
    v = sorted(v); n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
by = collections.OrderedDict()
for r in rows:
    try:
        c = max(float(r["c_stream_MBps"] or 0), float(r["c_oneway_MBps"] or 0))
        p = float(r["python_MBps"])
    except ValueError:
        continue
    by.setdefault(r["rate"], []).append((c, p))
print()
print("Python asyncio (examples/python/async_transfer.py, 16 MiB numpy messages, 4 in flight) vs C pio-perf's best (stream or oneway nonblocking), %s MiB, 2 hosts x %s links" % (mib, k))
print("%10s %12s %12s %10s  %s" % ("rate", "C MB/s", "Python MB/s", "Python/C", "rounds' ratios"))
for rate, v in by.items():
    x = [p / c for c, p in v if c > 0]
    print("%10s %12.2f %12.2f %10.3f  %s" % (rate, med([c for c, _ in v]), med([p for _, p in v]), med(x), ", ".join("%.3f" % y for y in x)))
for rate, v in by.items():
    x = med([p / c for c, p in v if c > 0])
    print("%s: Python asyncio at %s = %.3f x C pio-perf's best (median of %d rounds), target >= 0.9 (issue 33)" % ("PASS" if x >= 0.9 else "MISS", rate, x, len(v)))
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("note: no matplotlib: python.png not drawn"); sys.exit(0)
fig, ax = plt.subplots(figsize=(6, 4))
rates = list(by)
xs = range(len(rates))
ax.bar([i - 0.2 for i in xs], [med([c for c, _ in by[r]]) for r in rates], 0.4, label="C pio-perf (best)")
ax.bar([i + 0.2 for i in xs], [med([p for _, p in by[r]]) for r in rates], 0.4, label="Python asyncio")
ax.set_xticks(list(xs)); ax.set_xticklabels(["%s x %s" % (k, r) for r in rates])
ax.set_ylabel("MB/s"); ax.set_title("%s MiB between two processes, two piods" % mib); ax.legend()
fig.tight_layout(); fig.savefig(res + "/python.png", dpi=100)
PYEOF
[ "$fail" -eq 0 ]
