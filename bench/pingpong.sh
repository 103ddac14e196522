#!/usr/bin/env bash
# pingpong.sh - PIO against a plain TCP socket on loopback: latency and bandwidth per size.
# SPDX-License-Identifier: BSD-3-Clause
#
# Starts a piod pair on loopback with one channel (tests/lib/piod.bash), runs
# pio-perf ping-pong over SIZES (default 8 B .. 64 MiB, powers of two) and a
# 64 MiB stream, then the same with bench/tcp_pingpong over 127.0.0.1 (the
# plain-socket baseline, TCP_NODELAY, measured in the same run). Prints one
# table with both and the ratios, checks the targets (PASS/MISS lines), and
# writes bench/results/pingpong.csv and pingpong.png.
#
# Targets: small-message (smallest size) RTT <= 4 x plain socket;
#          64 MiB one-way bandwidth (stream) >= 0.6 x plain socket.
# Exit status: 0 when every run completed (a MISS is reported, not an
# error); 1 when a run failed. Never sends anything off loopback.
#
# Environment: BUILD (build folder, relative to the repo root or absolute;
# default build/default), PINGPONG_SIZES (default 8:64M), PINGPONG_STREAM
# (default 64M), PINGPONG_ROUNDS (stream runs of each, taking turns; the
# medians are compared; default 3), PIO_BENCH_RESULTS (default bench/results).
set -u
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
PERF=$BUILD/bin/pio-perf
TCPPP=$BUILD/bench/tcp_pingpong
SIZES=${PINGPONG_SIZES:-8:64M}
STREAM=${PINGPONG_STREAM:-64M}
ROUNDS=${PINGPONG_ROUNDS:-3}
K=1

bench_need "$PERF" "$TCPPP" "$BUILD/sbin/piod" || exit 1
bench_work

fail=0
# run NAME SERVER_CMD... -- CLIENT_CMD...: server in the background, client in
# the foreground (its table on stdout); both must exit 0.
run() {
  local name=$1; shift
  local srv=() cli=()
  while [ "$1" != "--" ]; do srv+=("$1"); shift; done
  shift; cli=("$@")
  "${srv[@]}" >"$work/$name.srv.log" 2>&1 &
  local sp=$! rc src
  daemons+=("$sp")
  "${cli[@]}"
  rc=$?
  if [ $rc -ne 0 ]; then kill "$sp" 2>/dev/null; fi
  wait "$sp"; src=$?
  if [ $rc -ne 0 ] || [ $src -ne 0 ]; then
    echo "pingpong.sh: $name failed (client exit $rc, server exit $src); server log:" >&2
    sed 's/^/  | /' "$work/$name.srv.log" >&2
    fail=1
    return 1
  fi
}

bench_banner ", loopback, K=$K"
echo "-- starting a piod pair on loopback (K=$K)"
if ! pio_pair_loopback "$work/pair" "$K"; then
  echo "pingpong.sh: the piod pair did not come up" >&2
  exit 1
fi

echo "-- PIO ping-pong, sizes $SIZES"
run pio-pingpong env PIO_SOCKET="$PIO_SOCK_B" "$PERF" --server -q -- \
  env PIO_SOCKET="$PIO_SOCK_A" "$PERF" -t pingpong -s "$SIZES" -b USER -k "$K" --csv "$work/pio.csv"
port=$(_pio_port)
echo "-- plain TCP ping-pong (127.0.0.1:$port), sizes $SIZES"
run tcp-pingpong "$TCPPP" --server -B 127.0.0.1 -p "$port" -- \
  "$TCPPP" -t pingpong -s "$SIZES" -p "$port" --csv "$work/tcp.csv" 127.0.0.1
# The stream is short (about 0.5 s) and this machine is shared: run it, and
# the smallest ping-pong, $ROUNDS more times, PIO and TCP taking turns, and
# compare the medians.
small=${SIZES%%[:,]*}
for ((round = 1; round <= ROUNDS; round++)); do
  echo "-- PIO and plain TCP ping-pong, $small B (round $round of $ROUNDS)"
  run pio-small env PIO_SOCKET="$PIO_SOCK_B" "$PERF" --server -q -- \
    env PIO_SOCKET="$PIO_SOCK_A" "$PERF" -t pingpong -s "$small" -b USER -k "$K" -q \
    --csv "$work/pio.csv"
  port=$(_pio_port)
  run tcp-small "$TCPPP" --server -B 127.0.0.1 -p "$port" -- \
    "$TCPPP" -t pingpong -s "$small" -p "$port" --csv "$work/tcp.csv" 127.0.0.1 >/dev/null
  echo "-- PIO stream, $STREAM (round $round of $ROUNDS)"
  run pio-stream env PIO_SOCKET="$PIO_SOCK_B" "$PERF" --server -q -- \
    env PIO_SOCKET="$PIO_SOCK_A" "$PERF" -t stream -s "$STREAM" -b USER -k "$K" --csv "$work/pio.csv"
  port=$(_pio_port)
  echo "-- plain TCP stream (127.0.0.1:$port), $STREAM (round $round of $ROUNDS)"
  run tcp-stream "$TCPPP" --server -B 127.0.0.1 -p "$port" -- \
    "$TCPPP" -t stream -s "$STREAM" -p "$port" --csv "$work/tcp.csv" 127.0.0.1
done
pio_piods_stop

if [ $fail -ne 0 ] || [ ! -s "$work/pio.csv" ] || [ ! -s "$work/tcp.csv" ]; then
  echo "pingpong.sh: FAILED: not every run completed" >&2
  exit 1
fi

bench_summary "pingpong.csv pingpong.png" "$work/pio.csv" "$work/tcp.csv" "$RESULTS/pingpong.csv" "$RESULTS/pingpong.png" <<'EOF'
import csv, sys
pio_f, tcp_f, out_csv, out_png = sys.argv[1:5]

def load(path, tool):
    with open(path) as f:
        return [dict(r, tool=tool) for r in csv.DictReader(f)]

rows = load(pio_f, "pio") + load(tcp_f, "tcp")
with open(out_csv, "w", newline="") as f:
    cols = ["tool", "test", "size", "iters", "balance", "mode", "usec_per_op", "MBps"]
    w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)

def pick(tool, test):
    """size -> row; where a size ran several times, the row of median MB/s."""
    by = {}
    for r in rows:
        if r["tool"] == tool and r["test"] == test:
            by.setdefault(int(r["size"]), []).append(r)
    return {s: sorted(rs, key=lambda r: float(r["MBps"]))[len(rs) // 2] for s, rs in by.items()}

pp, tp = pick("pio", "pingpong"), pick("tcp", "pingpong")
ps, ts = pick("pio", "stream"), pick("tcp", "stream")
sizes = sorted(set(pp) & set(tp))
mb = lambda v: "%.3f" % v if v < 10 else "%.1f" % v
print()
print("Ping-pong on loopback, 1 channel (usec: half round trip; MB/s: 10^6 B/s)")
print("%12s %10s %10s %9s %10s %10s %9s" % ("size", "PIO usec", "TCP usec", "RTT x", "PIO MB/s",
                                            "TCP MB/s", "BW x"))
for s in sizes:
    pu, tu = float(pp[s]["usec_per_op"]), float(tp[s]["usec_per_op"])
    pb, tb = float(pp[s]["MBps"]), float(tp[s]["MBps"])
    print("%12d %10.2f %10.2f %9.2f %10s %10s %9.2f" % (s, pu, tu, pu / tu if tu else 0, mb(pb),
                                                        mb(tb), pb / tb if tb else 0))
for s in sorted(set(ps) & set(ts)):
    pb, tb = float(ps[s]["MBps"]), float(ts[s]["MBps"])
    print("%12s %10s %10s %9s %10s %10s %9.2f" % ("stream %dM" % (s >> 20) if s >= 1 << 20 else
                                                  "stream %d" % s, "", "", "", mb(pb), mb(tb),
                                                  pb / tb if tb else 0))
print()
print("Targets (ratios PIO / plain TCP):")
if sizes:
    s = sizes[0]
    r = float(pp[s]["usec_per_op"]) / float(tp[s]["usec_per_op"])
    print("%s: small-message RTT (%d B): PIO/TCP = %.2f, target <= 4" %
          ("PASS" if r <= 4 else "MISS", s, r))
big = max(set(ps) & set(ts), default=None)
if big is not None:
    r = float(ps[big]["MBps"]) / float(ts[big]["MBps"])
    print("%s: %d MiB one-way bandwidth (stream): PIO/TCP = %.2f, target >= 0.6" %
          ("PASS" if r >= 0.6 else "MISS", big >> 20, r))
if sizes and sizes[-1] >= 1 << 20:
    s = sizes[-1]
    r = float(pp[s]["MBps"]) / float(tp[s]["MBps"])
    print("info: %d MiB ping-pong bandwidth: PIO/TCP = %.2f" % (s >> 20, r))

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("note: no matplotlib for %s: %s not drawn (apt-get install python3-matplotlib)" %
          (sys.executable, out_png))
    sys.exit(0)
fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
for tool, lab, st, col in (("pio", "PIO (piod pair, 1 channel)", "o-", "C0"),
                           ("tcp", "plain TCP socket", "s--", "C1")):
    d = pick(tool, "pingpong")
    xs = sorted(d)
    a1.loglog(xs, [float(d[x]["usec_per_op"]) for x in xs], st, color=col, label=lab)
    a2.loglog(xs, [float(d[x]["MBps"]) for x in xs], st, color=col, label=lab + ", ping-pong")
    st_ = pick(tool, "stream")
    for x in st_:
        a2.loglog([x], [float(st_[x]["MBps"])], "*" if tool == "pio" else "X", ms=12, color=col,
                  mec="black", label="%s stream of %d MiB messages" % (tool.upper(), x >> 20))
a1.set_xlabel("message size (bytes)"); a1.set_ylabel("half round trip (usec)")
a1.set_title("Latency, loopback"); a1.grid(True, which="both", alpha=0.3); a1.legend()
a2.set_xlabel("message size (bytes)"); a2.set_ylabel("bandwidth (MB/s, 10^6 B/s)")
a2.set_title("Bandwidth, loopback"); a2.grid(True, which="both", alpha=0.3); a2.legend(fontsize=8)
fig.tight_layout()
fig.savefig(out_png, dpi=110)
EOF
