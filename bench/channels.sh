#!/usr/bin/env bash
# channels.sh - latency and one-way transfer over 1..16 channels (the original PIO's experiments 1 and 2).
# SPDX-License-Identifier: BSD-3-Clause
#
# For each K in CHANNELS_KS (default 1 2 4 8 16): a test bed of 2 hosts with
# K links at CHANNELS_RATE (default 100mbit) each way, a piod pair on it, and
#   - ping-pong of 8 B and 1 MiB (pio-perf, USER round-robin over the K
#     channels): half round trip;
#   - one-way 16 MiB messages with DYNAMIC (pio-perf -t oneway), blocking
#     and non-blocking (PIO_Isend): the one-way rate, and the time the
#     sending application spends in the send call per message (when it may
#     go on: the original experiment 2).
# Baselines, measured in the same run: a plain TCP socket (bench/tcp_pingpong)
# between the same hosts over link 0 on the first bed: ping-pong 8 B and
# 1 MiB, and a 16 MiB stream; and on every bed the ceiling: K iperf3 at once,
# one per link (issue 31: "K sockets" measured, no longer K x one stream).
# CPU per byte (issue 31, item 7), around the blocking one-way run and the
# ceiling run: /proc/stat's busy time of the whole machine, and of it piod A,
# piod B (/proc/PID/stat) and the two pio-perf processes (getrusage, through
# /usr/bin/time: the application and libpio with its threads); the rest is the
# kernel's network work not charged to a process (softirq). Also the bytes
# per TCP segment received in h2 (nstat): small segments mean the receive
# path handles every packet alone, which costs several times the CPU.
# Target (issue 31): one-way at K = 16 >= 0.95 x the ceiling.
# Prints a table, writes bench/results/channels.csv and channels.png.
# Exit status: 0 when every run completed, 1 when one failed; 0 with a note
# when not root (the test bed needs network namespaces).
#
# Environment: BUILD (default build/default), CHANNELS_KS, CHANNELS_RATE,
# CHANNELS_SECONDS (one-way run length per mode, default 3),
# PIO_BENCH_RESULTS (default bench/results), PIO_PIOD_FLAGS.
set -u
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
PERF=$BUILD/bin/pio-perf
TCPPP=$BUILD/bench/tcp_pingpong
KS=${CHANNELS_KS:-1 2 4 8 16}
RATE=${CHANNELS_RATE:-100mbit}
SECS=${CHANNELS_SECONDS:-3}

bench_root skip
bench_need "$PERF" "$TCPPP" "$BUILD/sbin/piod" "$TB" iperf3 /usr/bin/time || exit 1
HZ=$(getconf CLK_TCK)

bench_work

fail=0
# perf NAME CLIENT_ARGS...: a pio-perf server on B, the client on A (CSV rows
# appended to $work/pio.$K.csv); both must exit 0.
perf() {
  local name=$1; shift
  PIO_SOCKET=$PIO_SOCK_B /usr/bin/time -f "%U %S" -o "$work/$name.srv.time" \
    "$PERF" --server -q --timeout 120 >"$work/$name.srv" 2>&1 &
  local sp=$! rc=0
  daemons+=("$sp")
  cpu_snap >"$work/$name.cpu0"
  PIO_SOCKET=$PIO_SOCK_A /usr/bin/time -f "%U %S" -o "$work/$name.cli.time" \
    "$PERF" --timeout 120 --csv "$work/pio.$K.csv" "$@" >"$work/$name.cli" 2>&1 || rc=$?
  [ $rc -eq 0 ] || kill "$sp" 2>/dev/null
  wait "$sp" || rc=1
  cpu_snap >"$work/$name.cpu1"
  if [ $rc -ne 0 ]; then
    echo "channels.sh: K=$K: $name failed:" >&2
    sed 's/^/  | /' "$work/$name.cli" "$work/$name.srv" >&2
    fail=1
    return 1
  fi
}

# cpu_snap: "busy piodA piodB" in clock ticks: the machine's busy time from
# /proc/stat (user, nice, system, irq, softirq) and the piods' utime + stime.
cpu_snap() {
  local a b
  a=$(awk '{ print $14 + $15 }' "/proc/$(cat "$work/pio$K/A.pid")/stat" 2>/dev/null)
  b=$(awk '{ print $14 + $15 }' "/proc/$(cat "$work/pio$K/B.pid")/stat" 2>/dev/null)
  awk -v a="${a:-0}" -v b="${b:-0}" '/^cpu / { print $2 + $3 + $4 + $7 + $8, a, b }' /proc/stat
}

# segs_in HOST: TCP segments received in HOST's namespace so far (nstat).
segs_in() { "$TB" exec "$bed" "$1" nstat -az TcpInSegs 2>/dev/null | awk '$1 == "TcpInSegs" { print $2 }'; }

# tcp NAME CLIENT_ARGS...: the plain-socket baseline from h1 to h2 over link 0.
tcp() {
  local name=$1 port=$((7790 + RANDOM % 100)); shift
  "$TB" exec "$bed" h2 "$TCPPP" --server -B "$("$TB" addr "$bed" h2 0)" -p "$port" --timeout 60 \
    >"$work/$name.srv" 2>&1 &
  local sp=$! n rc=0
  daemons+=("$sp")
  for ((n = 0; n < 100; n++)); do
    [ -n "$("$TB" exec "$bed" h2 ss -Hltn "sport = :$port")" ] && break
    sleep 0.05
  done
  "$TB" exec "$bed" h1 "$TCPPP" -p "$port" --timeout 60 --csv "$work/tcp.csv" "$@" \
    "$("$TB" addr "$bed" h2 0)" >"$work/$name.cli" 2>&1 || rc=$?
  [ $rc -eq 0 ] || kill "$sp" 2>/dev/null
  wait "$sp" || rc=1
  if [ $rc -ne 0 ]; then
    echo "channels.sh: baseline $name failed:" >&2
    sed 's/^/  | /' "$work/$name.cli" "$work/$name.srv" >&2
    fail=1
    return 1
  fi
}

bench_banner "; 2 hosts x K links at $RATE, K in: $KS"
echo "K,ceiling_MBps,ceil_busy_us,ceil_segs" >"$work/ceil.csv"
echo "K,bytes,busy_us,piod_a_us,piod_b_us,apps_us,segs" >"$work/owcpu.csv"
first=1
for K in $KS; do
  if ! bench_bed_up ch 2 "$K" "$RATE"; then
    echo "channels.sh: K=$K: bed $bed did not come up" >&2
    fail=1; bed=""; continue
  fi
  echo "-- K=$K: bed $bed"
  if [ $first -eq 1 ]; then
    first=0
    echo "   baseline: plain TCP over link 0"
    tcp tcp-pp -t pingpong -s 8,1M
    tcp tcp-st -t stream -s 16M -n 4 -w 1
  fi
  # the ceiling: K iperf3 at once, one per link, with the CPU it took
  c0=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat); g0=$(segs_in h2)
  if iperf_servers $(links "$K") && iperf_clients "$work/ceil.$K" "$SECS" $(links "$K") &&
    ceil=$(iperf_rate "$work"/ceil."$K".*.json); then
    c1=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat); g1=$(segs_in h2)
    echo "$K,$ceil,$(((c1 - c0) * 1000000 / HZ)),$((g1 - g0))" >>"$work/ceil.csv"
    echo "   ceiling ($K x iperf3 at once): $ceil MB/s"
  else
    echo "channels.sh: K=$K: ceiling measurement failed" >&2
    cat "$work"/ceil."$K".*.err >&2 2>/dev/null; fail=1
  fi
  if pio_pair_testbed "$work/pio$K" "$bed" "$K"; then
    perf pp -t pingpong -s 8,1M -b USER -k "$K" && echo "   ping-pong done"
    # enough 16 MiB messages for about SECS seconds at K links' rate
    n=$(( (K * 12000000 * SECS + 16777215) / 16777216 ))
    [ $n -ge 2 ] || n=2
    g0=$(segs_in h2)
    if perf ow -t oneway -s 16M -n "$n" -w 1 -b DYNAMIC; then
      g1=$(segs_in h2)
      read -r b0 a0 p0 <"$work/ow.cpu0"; read -r b1 a1 p1 <"$work/ow.cpu1"
      read -r cu cs <"$work/ow.cli.time"; read -r su ss <"$work/ow.srv.time"
      # microseconds: machine busy, piod A, piod B, the two applications; segments in h2
      echo "$K,$((n * 16777216)),$(((b1 - b0) * 1000000 / HZ)),$(((a1 - a0) * 1000000 / HZ)),$(((p1 - p0) * 1000000 / HZ)),$("$PY" -c "print(int(($cu + $cs + $su + $ss) * 1e6))"),$((g1 - g0))" >>"$work/owcpu.csv"
      echo "   one-way (blocking, $n x 16 MiB) done"
    fi
    perf nb -t oneway -s 16M -n "$n" -w 1 -b DYNAMIC -m nonblocking &&
      echo "   one-way (non-blocking, $n x 16 MiB) done"
  else
    echo "channels.sh: K=$K: the piod pair did not come up on the bed" >&2; fail=1
  fi
  pio_piods_stop
  "$TB" down "$bed" >/dev/null 2>&1
  bed=""
done

mkdir -p "$RESULTS"
"$PY" - "$work" "$KS" "$RESULTS/channels.csv" "$RESULTS/channels.png" "$RATE" "$date_s" <<'EOF'
import csv, os, sys
work, ks, out_csv, out_png, rate, date = sys.argv[1:7]
ks = [int(k) for k in ks.split()]

def rows(path):
    return list(csv.DictReader(open(path))) if os.path.exists(path) else []

tcp = rows(os.path.join(work, "tcp.csv"))
def tcp_get(test, size, col):
    for r in tcp:
        if r["test"] == test and int(r["size"]) == size:
            return float(r[col])
    return None

t8 = tcp_get("pingpong", 8, "usec_per_op")
t1m = tcp_get("pingpong", 1 << 20, "usec_per_op")
tst = tcp_get("stream", 16 << 20, "MBps")
import glob, json
ceil = {int(r["K"]): r for r in rows(os.path.join(work, "ceil.csv"))}
owcpu = {int(r["K"]): r for r in rows(os.path.join(work, "owcpu.csv"))}
def ceil_bytes(k):
    n = 0
    for p in glob.glob(os.path.join(work, "ceil.%d.*.json" % k)):
        try:
            n += json.load(open(p))["end"]["sum_received"]["bytes"]
        except Exception:
            return None
    return n or None
out = []
for k in ks:
    rs = rows(os.path.join(work, "pio.%d.csv" % k))
    def get(test, size, mode, col):
        for r in rs:
            if r["test"] == test and int(r["size"]) == size and r["mode"] == mode:
                return float(r[col])
        return None
    c, o, cb = ceil.get(k), owcpu.get(k), ceil_bytes(k)
    nsb = lambda us, by: float(us) * 1000.0 / float(by) if us not in (None, "") and by else None
    ob = float(o["bytes"]) if o else None
    out.append(dict(K=k, pio_8_us=get("pingpong", 8, "blocking", "usec_per_op"),
                    pio_1m_us=get("pingpong", 1 << 20, "blocking", "usec_per_op"),
                    oneway_MBps=get("oneway", 16 << 20, "blocking", "MBps"),
                    call_block_us=get("oneway", 16 << 20, "blocking", "usec_per_op"),
                    oneway_nb_MBps=get("oneway", 16 << 20, "nonblocking", "MBps"),
                    call_nonblock_us=get("oneway", 16 << 20, "nonblocking", "usec_per_op"),
                    tcp_8_us=t8, tcp_1m_us=t1m, tcp_stream_MBps=tst,
                    ceiling_MBps=float(c["ceiling_MBps"]) if c else None,
                    ceil_ns_per_B=nsb(c["ceil_busy_us"], cb) if c else None,
                    ceil_B_per_seg=cb / float(c["ceil_segs"]) if c and cb and float(c["ceil_segs"]) else None,
                    pio_ns_per_B=nsb(o["busy_us"], ob) if o else None,
                    piod_a_ns_per_B=nsb(o["piod_a_us"], ob) if o else None,
                    piod_b_ns_per_B=nsb(o["piod_b_us"], ob) if o else None,
                    apps_ns_per_B=nsb(o["apps_us"], ob) if o else None,
                    pio_B_per_seg=ob / float(o["segs"]) if o and float(o["segs"]) else None))
    r = out[-1]
    parts = [r[x] for x in ("piod_a_ns_per_B", "piod_b_ns_per_B", "apps_ns_per_B")]
    r["rest_ns_per_B"] = r["pio_ns_per_B"] - sum(parts) if r["pio_ns_per_B"] is not None and None not in parts else None
    r["oneway_over_ceiling"] = (r["oneway_MBps"] / r["ceiling_MBps"]
                                if r["oneway_MBps"] and r["ceiling_MBps"] else None)
cols = ["K", "pio_8_us", "tcp_8_us", "pio_1m_us", "tcp_1m_us", "oneway_MBps", "oneway_nb_MBps",
        "tcp_stream_MBps", "call_block_us", "call_nonblock_us", "ceiling_MBps", "oneway_over_ceiling",
        "pio_ns_per_B", "piod_a_ns_per_B", "piod_b_ns_per_B", "apps_ns_per_B", "rest_ns_per_B",
        "pio_B_per_seg", "ceil_ns_per_B", "ceil_B_per_seg"]
with open(out_csv, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=cols)
    w.writeheader()
    for r in out:
        w.writerow({c: ("%.3f" % r[c] if isinstance(r[c], float) else r[c]) for c in cols})

fmt = lambda v, p="%.1f": (p % v) if v is not None else "-"
print()
print("Over K channels, 2 hosts x K links at %s (%s)" % (rate, date))
print("baseline, plain TCP over link 0: 8 B half RTT %s us, 1 MiB half RTT %s us, 16 MiB stream %s MB/s"
      % (fmt(t8), fmt(t1m), fmt(tst, "%.2f")))
print("%3s %9s %6s %10s %8s %11s %10s %8s %11s %11s %8s" % (
    "K", "8B us", "x TCP", "1MiB us", "x TCP", "1way MB/s", "ceiling", "ratio", "call blk us",
    "call nb us", "nb MB/s"))
for r in out:
    k = r["K"]
    print("%3d %9s %6s %10s %8s %11s %10s %8s %11s %11s %8s" % (
        k, fmt(r["pio_8_us"]), fmt(r["pio_8_us"] / t8 if t8 and r["pio_8_us"] else None, "%.2f"),
        fmt(r["pio_1m_us"]), fmt(r["pio_1m_us"] / t1m if t1m and r["pio_1m_us"] else None, "%.2f"),
        fmt(r["oneway_MBps"], "%.2f"), fmt(r["ceiling_MBps"], "%.2f"),
        fmt(r["oneway_over_ceiling"], "%.3f"),
        fmt(r["call_block_us"], "%.0f"), fmt(r["call_nonblock_us"], "%.0f"),
        fmt(r["oneway_nb_MBps"], "%.2f")))
print("(x TCP: PIO / plain socket, lower is better; ceiling: K x iperf3 at once, one per link;")
print(" ratio: one-way / ceiling; call: microseconds the sender spends in PIO_Send (blk) /")
print(" PIO_Isend (nb) per 16 MiB message)")
print()
print("CPU per byte moved, ns/B of the whole machine (2 cores), blocking one-way run and ceiling run")
print("%3s %8s %8s %8s %8s %8s %11s %10s %11s" % (
    "K", "PIO", "piod A", "piod B", "apps", "kernel", "B/segment", "iperf3", "B/segment"))
for r in out:
    print("%3d %8s %8s %8s %8s %8s %11s %10s %11s" % (
        r["K"], fmt(r["pio_ns_per_B"], "%.2f"), fmt(r["piod_a_ns_per_B"], "%.2f"),
        fmt(r["piod_b_ns_per_B"], "%.2f"), fmt(r["apps_ns_per_B"], "%.2f"),
        fmt(r["rest_ns_per_B"], "%.2f"), fmt(r["pio_B_per_seg"], "%.0f"),
        fmt(r["ceil_ns_per_B"], "%.2f"), fmt(r["ceil_B_per_seg"], "%.0f")))
print("(apps: both pio-perf processes, libpio and its threads included; kernel: the rest of the")
print(" machine's busy time, the network stack's softirq work; B/segment: bytes per TCP segment")
print(" received in h2, about 1448 when every packet is handled alone)")
big = [r for r in out if r["K"] == 16]
for r in big:
    x = r["oneway_over_ceiling"]
    if x is None:
        print("FAIL: K=16: no one-way or ceiling measurement")
    else:
        print("%s: K=16: one-way = %.3f x the ceiling (K iperf3 at once), target >= 0.95; "
              "PIO %s ns/B against iperf3's %s" % ("PASS" if x >= 0.95 else "MISS", x,
                                                    fmt(r["pio_ns_per_B"], "%.2f"),
                                                    fmt(r["ceil_ns_per_B"], "%.2f")))
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))
    K = [r["K"] for r in out]
    def series(key):
        return [r[key] for r in out]
    ax[0].plot(K, series("pio_8_us"), "o-", label="PIO 8 B")
    ax[0].plot(K, series("pio_1m_us"), "s-", label="PIO 1 MiB")
    if t8: ax[0].axhline(t8, ls="--", color="C0", label="TCP 8 B")
    if t1m: ax[0].axhline(t1m, ls="--", color="C1", label="TCP 1 MiB")
    ax[0].set_xscale("log", base=2); ax[0].set_yscale("log")
    ax[0].set_xlabel("channels K"); ax[0].set_ylabel("half round trip (us)")
    ax[0].set_title("ping-pong (USER round-robin)"); ax[0].legend(fontsize=8)
    ax[1].plot(K, series("oneway_MBps"), "o-", label="PIO blocking")
    ax[1].plot(K, series("oneway_nb_MBps"), "^-", label="PIO non-blocking")
    ax[1].plot(K, series("ceiling_MBps"), "k--", label="ceiling: K x iperf3 at once")
    ax[1].set_xscale("log", base=2)
    ax[1].set_xlabel("channels K"); ax[1].set_ylabel("MB/s (10^6 B/s)")
    ax[1].set_title("one-way 16 MiB messages, DYNAMIC"); ax[1].legend(fontsize=8)
    ax[2].plot(K, [v / 1000 if v else None for v in series("call_block_us")], "o-",
               label="PIO_Send (blocking)")
    ax[2].plot(K, [v / 1000 if v else None for v in series("call_nonblock_us")], "^-",
               label="PIO_Isend (non-blocking)")
    ax[2].set_xscale("log", base=2)
    ax[2].set_xlabel("channels K"); ax[2].set_ylabel("ms in the call per 16 MiB message")
    ax[2].set_title("until the sender may continue"); ax[2].legend(fontsize=8)
    fig.suptitle("PIO over K channels at %s each (%s)" % (rate, date))
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)
    print("wrote %s and %s" % (out_csv, out_png))
except ImportError:
    print("wrote %s (matplotlib missing: no plot)" % out_csv)
EOF
[ $? -eq 0 ] || fail=1
exit $fail
