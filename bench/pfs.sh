#!/usr/bin/env bash
# pfs.sh - the published staging experiment, reproduced on pfs: a staging job
# writes large files while a front-end probe writes 1 MiB to every I/O server
# every second; per-server probe latency over time, staging time and bytes
# per server, for 3 stripe settings x 4 QoS settings.
# SPDX-License-Identifier: BSD-3-Clause
#
# Bed (tests/lib/pfs.bash): h1..h4 one I/O server each, behind a link of
# PFS_IOD_LINK (200mbit); h5 the metadata server and the front-end probe;
# h6 and h7 the staging clients (1gbit links). Each I/O server runs 10
# service threads over an emulated device of PFS_DISK_RATE (20M) bytes/s
# with 10 lanes (a 1 MiB request takes 0.5 s; pfs-iod --disk-rate), so the
# servers, not the links, are the bottleneck, as the object storage targets
# were in the published system.
#
# The staging job: PFS_STAGERS (2) `pfs stage-out -j 8` processes on h6
# and as many on h7 (32 copies in flight, up to 8 MiB of each: a backlog
# of requests builds up at the servers, as under a real staging job), each
# of PFS_SIZES (MiB) files, in class "staging"; with stripe
# count 1 (-c 1), the policy (min(ceil(size/16 MiB), 32, 4)), and the
# maximum (-c 32, capped at 4 servers). The probe (pfs-check probe-all, h5,
# class "interactive") writes 1 MiB to a 1-stripe file on each server every
# second (a thread per server, as the published probe ran dd per target);
# 6 s of probing before the job give the idle latency.
# QoS: off (one FIFO class), 10:90, 20:80, 30:70 (interactive:staging
# thread shares, borrowing unlimited). The I/O servers restart for each.
#
# Baselines in the same run: iperf3 over one I/O server's link (h6 -> h1,
# one TCP stream: that link's ceiling), and one `pfs put -c 1` of 64 MiB
# alone (one server's ceiling: device and link together).
#
# Output: a table; bench/results/pfs.csv (one row per run), pfs_probe.csv
# (every probe write), pfs_heatmap.png (per-server probe latency over time,
# one panel per run, like the published heat maps), pfs_summary.png (staging
# time, probe p99 / idle, bytes per server). PASS/MISS lines for the targets:
# with the policy and QoS 20:80, probe p99 <= 2 x idle while staging's rate
# >= 0.9 x the policy's without QoS, at piod's default pool (issue 31); stripe count 1 shows the imbalance of bytes
# per server that the policy removes (busiest server >= 1.10 x the mean with
# count 1, <= 1.05 with the policy; QoS-off runs).
#
# Exit status: 0 when every run completed (a MISS is reported, not an error)
# or when skipped for want of root; 1 when something failed.
# Environment: BUILD (build/default), PFS_SIZES ("16 24 32 48 64 80 96 128"),
# PFS_JOBS (8: files in flight per stager), PFS_STAGERS (2 per client host),
# PFS_DISK_RATE (20M), PFS_DISK_LANES (10), PFS_THREADS (10), PFS_IOD_LINK
# (200mbit), PFS_QOS ("off 10:90 20:80 30:70"), PFS_STRIPES ("1 policy max"),
# PFS_PROC_POOL (piod proc-pool; default empty: piod's default, issue 31;
# it was 256M), PIO_BENCH_RESULTS (bench/results).
set -u
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
SIZES=${PFS_SIZES:-16 24 32 48 64 80 96 128}
JOBS=${PFS_JOBS:-8}
STAGERS=${PFS_STAGERS:-2}
DISK_RATE=${PFS_DISK_RATE:-20M}
DISK_LANES=${PFS_DISK_LANES:-10}
THREADS=${PFS_THREADS:-10}
IOD_LINK=${PFS_IOD_LINK:-200mbit}
QOS_LIST=${PFS_QOS:-off 10:90 20:80 30:70}
STRIPE_LIST=${PFS_STRIPES:-1 policy max}
IDLE_S=6
# each process's piod buffer: the I/O servers' piods hold queued staging
# messages there; at the tests' 32M, the probe's message waited for space
# behind them (probe p99 3.5 x idle with QoS 20:80, against 2.2 x at 256M)
export PFS_PROC_POOL=${PFS_PROC_POOL-} # empty: piod's default pool

bench_root skip "network namespaces"

source "$ROOT/tests/lib/pfs.bash"
CHECK=$BUILD/tests/prog/pfs-check
bench_need "$BUILD/sbin/pfs-iod" "$BUILD/sbin/pfs-mds" "$BUILD/bin/pfs" "$CHECK" iperf3 || exit 1

bench_work
mkdir -p "$RESULTS"

bench_bed_name pfs
echo "bed $bed: 7 hosts; I/O server links $IOD_LINK, clients 1gbit; device $DISK_RATE/s, $DISK_LANES lanes, $THREADS threads"
pfs_cluster_up "$work/c" "$bed" 1gbit || { echo "FAIL: cluster did not come up" >&2; exit 1; }
for h in 1 2 3 4; do "$TB" rate "$bed" "h$h" 0 "$IOD_LINK" || exit 1; done

IODS=pfs.iod.1,pfs.iod.2,pfs.iod.3,pfs.iod.4

# iods_start QOS: the four I/O servers (again) with that QoS setting
iods_start() {
  local q=$1 h pid spec
  for h in 1 2 3 4; do
    if [ -f "$work/c/pfs.iod.$h.pid" ]; then
      pid=$(cat "$work/c/pfs.iod.$h.pid")
      kill -TERM "$pid" 2>/dev/null
      for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
  done
  [ "$q" = off ] && spec=off || spec="interactive:${q%%:*},staging:${q##*:}"
  for h in 1 2 3 4; do
    pfs_iod_start "$work/c" "$h" "pfs.iod.$h" --threads "$THREADS" --qos "$spec" \
      --disk-rate "$DISK_RATE" --disk-lanes "$DISK_LANES"
  done
  pfs_ready 5 pfs.mds 60
}

pfs_mds_start "$work/c" pfs.mds "$work/c/mds.db" "$IODS"
iods_start off || exit 1
pfs_on 5 pfs mkdir /probe
pfs_on 5 "$CHECK" probe-setup /probe >"$work/probe-setup.txt" 2>&1 ||
  { cat "$work/probe-setup.txt"; echo "FAIL: probe files" >&2; exit 1; }

# the staging data: the same sizes on both client hosts
for h in 6 7; do
  for ((k = 1; k <= STAGERS; k++)); do
    mkdir -p "$work/data/h$h.$k"
    for s in $SIZES; do head -c $((s << 20)) /dev/urandom >"$work/data/h$h.$k/f$s"; done
  done
done
total_mib=$(echo "$SIZES" | awk -v n=$((2 * STAGERS)) '{ for (i = 1; i <= NF; i++) t += $i; print n * t }')

# ---- baselines ---------------------------------------------------------------
echo "baselines: iperf3 h6 -> h1 (one I/O server link), one pfs put of 64 MiB to one server"
"$TB" exec "$bed" h1 iperf3 -s -1 -D -B "$("$TB" addr "$bed" h1 0)" -p 5201
bench_wait_listen h1 "$("$TB" addr "$bed" h1 0)" 5201
"$TB" exec "$bed" h6 iperf3 -J -t 5 -c "$("$TB" addr "$bed" h1 0)" -p 5201 >"$work/iperf.json" 2>&1
link_mbs=$(iperf_rate "$work/iperf.json") || link_mbs=0
head -c $((64 << 20)) /dev/urandom >"$work/one64"
t0=$(date +%s.%N)
pfs_on 6 pfs put -c 1 "$work/one64" /one64 >/dev/null || { echo "FAIL: baseline put" >&2; exit 1; }
t1=$(date +%s.%N)
one_mbs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", 64 * 1.048576 / (b - a) }')
pfs_on 6 pfs rm /one64
echo "  link ceiling (iperf3, 1 stream): $link_mbs MB/s; one server (device + link): $one_mbs MB/s"

# df_used: bytes in objects per server, "u1 u2 u3 u4"
df_used() {
  pfs_on 6 pfs df | awk '$1 ~ /^[0-9]+$/ { printf "%s ", $3 }'
}

: >"$work/runs.txt"
: >"$work/probe.txt"
: >"$work/qos.txt"
for stripe in $STRIPE_LIST; do
  case $stripe in 1) copt=(-c 1) ;; max) copt=(-c 32) ;; *) copt=() ;; esac
  for q in $QOS_LIST; do
    echo "run: stripe $stripe, QoS $q"
    iods_start "$q" || { echo "FAIL: I/O servers did not restart" >&2; exit 1; }
    pfs_on 6 pfs mkdir /stage || { echo "FAIL: mkdir /stage" >&2; exit 1; }
    before=$(df_used)
    _pfs_launch probe 5 "$CHECK" --class interactive probe-all /probe 3600 1000
    sleep "$IDLE_S"
    pfs_on 6 pfs qos --reset >/dev/null
    t0=$(date +%s.%N)
    pids=()
    for h in 6 7; do
      for ((k = 1; k <= STAGERS; k++)); do
        pfs_on "$h" pfs stage-out -j "$JOBS" "${copt[@]}" "$work/data/h$h.$k" "/stage/h$h.$k" \
          >"$work/stage.h$h.$k.log" 2>&1 &
        pids+=($!)
      done
    done
    ok=1
    for p in "${pids[@]}"; do wait "$p" || ok=0; done
    t1=$(date +%s.%N)
    pfs_on 6 pfs qos | awk -v s="$stripe" -v q="$q" '{ print s, q, $0 }' >>"$work/qos.txt"
    sleep 1
    kill -TERM "$(cat "$work/c/probe.pid")" 2>/dev/null
    wait "$(cat "$work/c/probe.pid")" 2>/dev/null
    if [ $ok -ne 1 ]; then
      cat "$work"/stage.h*.log >&2
      echo "FAIL: staging failed (stripe $stripe, QoS $q)" >&2
      exit 1
    fi
    after=$(df_used)
    stage_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
    echo "$stripe $q $stage_s $IDLE_S $before| $after" >>"$work/runs.txt"
    awk -v s="$stripe" -v q="$q" '{ print s, q, $0 }' "$work/c/probe.log" >>"$work/probe.txt"
    echo "  staging ${stage_s} s"
    pfs_on 6 pfs rm -r /stage >/dev/null || { echo "FAIL: cleaning /stage" >&2; exit 1; }
  done
done

bench_summary "" "$work/runs.txt" "$work/probe.txt" "$RESULTS" "$total_mib" "$link_mbs" "$one_mbs" \
  "$DISK_RATE" "$IOD_LINK" "$work/qos.txt" <<'EOF'
import csv, os, sys
runs_f, probe_f, out, total_mib, link_mbs, one_mbs, disk, link, qos_f = sys.argv[1:10]
# the servers' own view (pfs qos at the end of each run): the probe's class
# (interactive, or the one class with QoS off): wait p99 and max over servers
srv = {}
for l in open(qos_f):
    p = l.split()
    if len(p) < 7 or p[5] != "class":
        continue
    kv = dict(x.split("=") for x in p[7:] if "=" in x)
    key = (p[0], p[1])
    if p[1] == "off" or p[6] == "interactive":
        d = srv.setdefault(key, dict(wait_p99=0, wait_max=0, svc=0))
        d["wait_p99"] = max(d["wait_p99"], int(kv["wait_p99_us"]) / 1000)
        d["wait_max"] = max(d["wait_max"], int(kv["wait_max_us"]) / 1000)
    if p[1] == "off" or p[6] == "staging":
        d = srv.setdefault(key, dict(wait_p99=0, wait_max=0, svc=0))
        d["svc"] = max(d["svc"], int(kv["svc_p50_us"]) / 1000)
runs = []
for l in open(runs_f):
    head, tail = l.split("|")
    h = head.split()
    stripe, q, stage_s, idle_s = h[0], h[1], float(h[2]), float(h[3])
    before = [int(x) for x in h[4:8]]
    after = [int(x) for x in tail.split()]
    runs.append(dict(stripe=stripe, qos=q, stage_s=stage_s, idle_s=idle_s,
                     bytes=[a - b for a, b in zip(after, before)]))
probes = {}
for l in open(probe_f):
    p = l.split()
    if len(p) != 5:
        continue
    probes.setdefault((p[0], p[1]), []).append((float(p[2]), int(p[3]), float(p[4]) / 1000))

def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")

rows = []
for r in runs:
    pr = probes.get((r["stripe"], r["qos"]), [])
    idle = [lat for t, s, lat in pr if t < r["idle_s"] - 0.5]
    busy = [lat for t, s, lat in pr if r["idle_s"] <= t <= r["idle_s"] + r["stage_s"]]
    b = r["bytes"]
    mean = sum(b) / len(b) if b else 0
    r.update(idle_p50=pct(idle, 0.5), p50=pct(busy, 0.5), p99=pct(busy, 0.99),
             nprobe=len(busy), imbalance=(max(b) / mean) if mean else float("nan"))
    r["p99_idle"] = r["p99"] / r["idle_p50"] if r["idle_p50"] else float("nan")
    v = srv.get((r["stripe"], r["qos"]), dict(wait_p99=float("nan"), wait_max=float("nan"), svc=float("nan")))
    r.update(srv_wait_p99=v["wait_p99"], srv_wait_max=v["wait_max"], svc_p50=v["svc"])
    rows.append(r)
base = {r["stripe"]: r["stage_s"] for r in rows if r["qos"] == "off"}
for r in rows:
    r["stage_rel"] = r["stage_s"] / base[r["stripe"]] if r["stripe"] in base else float("nan")

print()
print("pfs staging experiment: %s MiB staged per run; servers: device %s/s, link %s"
      % (total_mib, disk, link))
print("baselines: one server link (iperf3, 1 TCP stream) %s MB/s; one server alone (pfs put -c 1) %s MB/s"
      % (link_mbs, one_mbs))
print("piod settings: %s" % ("proc-pool = " + os.environ["PFS_PROC_POOL"] if os.environ.get("PFS_PROC_POOL")
                            else "defaults (proc-pool 64M)"))
hdr = "%-7s %-6s %8s %8s %8s %7s %7s %8s %6s %9s %8s  %s" % (
    "stripe", "QoS", "stage s", "x no-QoS", "idle p50", "p50 ms", "p99 ms", "p99/idle", "probes",
    "wait p99", "svc p50", "MiB per server (max/mean)")
print(hdr)
print("-" * len(hdr))
for r in rows:
    print("%-7s %-6s %8.2f %8.3f %8.0f %7.0f %7.0f %8.2f %6d %9.0f %8.0f  %s (%.2f)" % (
        r["stripe"], r["qos"], r["stage_s"], r["stage_rel"], r["idle_p50"], r["p50"], r["p99"],
        r["p99_idle"], r["nprobe"], r["srv_wait_p99"], r["svc_p50"],
        " ".join("%d" % (x >> 20) for x in r["bytes"]), r["imbalance"]))
print("(ms; wait p99: the probe's class at the servers, arrival to start, worst server; svc p50:")
print(" a staging request's service time; MiB per server: bytes the run staged on each)")

with open(os.path.join(out, "pfs.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["stripe", "qos", "staging_s", "staging_vs_noqos", "probe_idle_p50_ms",
                "probe_p50_ms", "probe_p99_ms", "p99_over_idle", "probes", "bytes_s0",
                "bytes_s1", "bytes_s2", "bytes_s3", "bytes_max_over_mean", "link_ceiling_MBps",
                "one_server_MBps", "server_wait_p99_ms", "server_wait_max_ms", "staging_svc_p50_ms"])
    for r in rows:
        w.writerow([r["stripe"], r["qos"], "%.3f" % r["stage_s"], "%.3f" % r["stage_rel"],
                    "%.1f" % r["idle_p50"], "%.1f" % r["p50"], "%.1f" % r["p99"],
                    "%.3f" % r["p99_idle"], r["nprobe"]] + r["bytes"] +
                   ["%.3f" % r["imbalance"], link_mbs, one_mbs, "%.1f" % r["srv_wait_p99"],
                    "%.1f" % r["srv_wait_max"], "%.1f" % r["svc_p50"]])
with open(os.path.join(out, "pfs_probe.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["stripe", "qos", "t_s", "server", "latency_ms"])
    for (s, q), v in probes.items():
        for t, srv, lat in v:
            w.writerow([s, q, "%.3f" % t, srv, "%.1f" % lat])

def find(stripe, q):
    for r in rows:
        if r["stripe"] == stripe and r["qos"] == q:
            return r
pol, off = find("policy", "20:80"), find("policy", "off")
if pol and off:
    ok = pol["p99_idle"] <= 2.0 and off["stage_s"] / pol["stage_s"] >= 0.9
    print("%s: policy + QoS 20:80: probe p99 = %.2f x idle (target <= 2), staging rate = %.3f x no QoS "
          "(target >= 0.9)" % ("PASS" if ok else "MISS", pol["p99_idle"], off["stage_s"] / pol["stage_s"]))
    print("  without QoS (policy): probe p99 = %.2f x idle" % off["p99_idle"])
one, po = find("1", "off"), find("policy", "off")
if one and po:
    # "shows the imbalance": the busiest server 10 % or more above the mean
    # with count 1, within 5 % with the policy
    ok = one["imbalance"] >= 1.10 and po["imbalance"] <= 1.05
    print("%s: stripe count 1 leaves the busiest server %.2f x the mean bytes (target >= 1.10), the policy "
          "%.2f (<= 1.05); staging takes %.2f x the policy's" % ("PASS" if ok else "MISS", one["imbalance"],
          po["imbalance"], one["stage_s"] / po["stage_s"]))

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm
    import numpy as np
except ImportError:
    print("(matplotlib missing: no plots)")
    sys.exit(0)
stripes = list(dict.fromkeys(r["stripe"] for r in rows))
qoss = list(dict.fromkeys(r["qos"] for r in rows))
fig, axes = plt.subplots(len(stripes), len(qoss), figsize=(3.6 * len(qoss), 2.7 * len(stripes)),
                         squeeze=False, sharey=True)
fig.subplots_adjust(hspace=0.55, wspace=0.12, right=0.86)
idle_all = [r["idle_p50"] for r in rows if r["idle_p50"] == r["idle_p50"]]
vmin = min(idle_all) * 0.8 if idle_all else 1
vmax = max([lat for v in probes.values() for _, _, lat in v] + [vmin * 10])
im = None
for i, s in enumerate(stripes):
    for j, q in enumerate(qoss):
        ax = axes[i][j]
        pr = probes.get((s, q), [])
        if not pr:
            ax.set_axis_off()
            continue
        # each second shows the latency of the probe write in progress then
        # (a write slower than a second covers the seconds it took)
        tmax = int(max(t + lat / 1000 for t, _, lat in pr)) + 1
        grid = np.full((4, tmax), np.nan)
        for t, srv, lat in sorted(pr):
            if 0 <= srv < 4:
                for sec in range(int(t), min(tmax, int(t + lat / 1000) + 1)):
                    grid[srv][sec] = lat
        im = ax.imshow(grid, aspect="auto", cmap="inferno", norm=LogNorm(vmin=vmin, vmax=vmax),
                       interpolation="nearest")
        r = find(s, q)
        ax.axvline(r["idle_s"], color="cyan", lw=0.8)
        ax.axvline(r["idle_s"] + r["stage_s"], color="cyan", lw=0.8)
        ax.set_title("stripe %s, QoS %s" % (s, q), fontsize=8)
        ax.set_yticks(range(4))
        ax.set_yticklabels(["srv %d" % k for k in range(4)], fontsize=7)
        ax.tick_params(axis="x", labelsize=7)
        if i == len(stripes) - 1:
            ax.set_xlabel("time (s); cyan: staging start and end", fontsize=7)
if im is not None:
    fig.colorbar(im, cax=fig.add_axes([0.89, 0.15, 0.015, 0.7]),
                 label="probe 1 MiB write latency (ms)")
fig.suptitle("pfs: front-end probe latency per I/O server during staging", fontsize=10)
fig.savefig(os.path.join(out, "pfs_heatmap.png"), dpi=110)

fig, ax = plt.subplots(1, 3, figsize=(14, 4))
x = np.arange(len(qoss))
wdt = 0.8 / len(stripes)
for k, s in enumerate(stripes):
    rs = [find(s, q) for q in qoss]
    ax[0].bar(x + k * wdt, [r["stage_s"] for r in rs], wdt, label="stripe %s" % s)
    ax[1].bar(x + k * wdt, [r["p99_idle"] for r in rs], wdt, label="stripe %s" % s)
for a, t in ((ax[0], "staging time (s)"), (ax[1], "probe p99 / idle p50")):
    a.set_xticks(x + wdt * (len(stripes) - 1) / 2)
    a.set_xticklabels(["QoS " + q for q in qoss])
    a.set_ylabel(t)
    a.legend(fontsize=8)
ax[1].axhline(2, color="k", ls="--", lw=0.8)
for k, s in enumerate(stripes):
    r = find(s, "off") or find(s, qoss[0])
    ax[2].bar(np.arange(4) + k * wdt, [b / 2**20 for b in r["bytes"]], wdt, label="stripe %s" % s)
ax[2].set_xticks(np.arange(4) + wdt * (len(stripes) - 1) / 2)
ax[2].set_xticklabels(["server %d" % k for k in range(4)])
ax[2].set_ylabel("MiB staged (QoS off run)")
ax[2].legend(fontsize=8)
fig.suptitle("pfs staging: time, probe tail latency and bytes per server")
fig.tight_layout()
fig.savefig(os.path.join(out, "pfs_summary.png"), dpi=110)
print("wrote %s/pfs.csv, pfs_probe.csv, pfs_heatmap.png, pfs_summary.png" % out)
EOF
