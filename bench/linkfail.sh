#!/usr/bin/env bash
# linkfail.sh - PIO throughput over time while one link of a 4-link bundle is cut and restored.
# SPDX-License-Identifier: BSD-3-Clause
#
# A test bed (tests/testbed/pio-testbed) of 2 hosts with LINKS links (4) at
# RATE (100mbit) each way. Then, in this order and in the same run:
#   ceiling  LINKS iperf3 processes at once, one per link: client in h1 bound
#            to 198.18.k.1, server in h2 on 198.18.k.2; the sum of the
#            receiver-side rates. The ceiling with link CUT gone is taken as
#            (LINKS-1)/LINKS of it (the links are equal);
#   PIO      a piod pair on the bed (h1 = system A, h2 = system B, one channel
#            per link) and one long one-way transfer with DYNAMIC balancing:
#            tests/prog/pio-check `send sizes -S <N>M -c DYNAMIC` on A and its
#            receiver on B, which checks every byte of the message. N is
#            chosen from the measured ceiling so that the transfer lasts
#            about SECONDS with the cut. While it runs, piod A's channels
#            (`pio-info --json`: tx_bytes, state, downs, resent) are sampled
#            every 250 ms; t = 0 is the first sample after the bytes start to
#            flow. Right after the sample at t = CUT_AT link CUT of h1 is cut
#            (`pio-testbed link BED h1 CUT down`), after the one at
#            t = RESTORE_AT it is restored.
# Rates are tx byte counters of piod A (bytes written to the channels'
# sockets, resent chunks included) over each sample interval; they move in
# whole 1 MiB chunks (4.2 MB/s per channel per 250 ms). Phases (means from
# the counters at the phase's first and last sample):
#   before cut     t = 1 s (at the start every socket takes its first chunks
#                  at once: a burst in the counters, not on the wire) .. the
#                  cut; against the LINKS-link ceiling;
#   during cut     3 s after the cut (the channel watchdog declares the link
#                  dead after stall-ms plus 3 chunks at the channel's
#                  measured rate: under 1 s here, and the chunks it held go
#                  out again on the others) .. the restore; against the
#                  (LINKS-1)-link ceiling;
#   after restore  from the first sample after the restore that shows
#                  channel CUT up (and, if it was declared dead, back from
#                  it) .. the last sample at which the transfer still moved;
#                  against the LINKS-link ceiling.
# Prints a table (phase, window, PIO MB/s, ceiling, ratio), when channel CUT
# was up and carrying again after the restore, the final downs / resent
# counters, and PASS/MISS lines for: during cut >= 0.9 x the (LINKS-1)-link
# ceiling; after restore >= 0.9 x the LINKS-link ceiling; the transfer
# completed intact (the receiver verified every byte). Writes
# bench/results/linkfail.csv (per interval: time, per-channel and total MB/s,
# state of channel CUT), linkfail-summary.csv (one row: the figures above)
# and linkfail.png (throughput over time, cut and restore, both ceilings).
# The bed is torn down on exit (trap), also on failure or interruption; the
# link is restored by the sampler whatever happens. Needs root (skipped with
# a note otherwise). Traffic stays on the bed's 198.18/15 addresses inside
# its namespaces.
#
# Exit status: 0 when every measurement completed (a MISS on the rates is
# reported, not an error) or when skipped for want of root; 1 when one
# failed or the transfer did not arrive intact.
# Environment: BUILD (default build/default, relative to the repo root or
# absolute), LINKFAIL_LINKS (4), LINKFAIL_RATE (100mbit), LINKFAIL_CUT (link
# to cut, 2), LINKFAIL_CUT_AT (4), LINKFAIL_RESTORE_AT (8), LINKFAIL_SECONDS
# (about how long the transfer lasts, 14), LINKFAIL_CEIL_SECONDS (iperf3 run,
# 8), PIO_BENCH_RESULTS (default bench/results), PIO_PIOD_FLAGS (extra piod
# flags).
set -u
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
CHECK=$BUILD/tests/prog/pio-check
K=${LINKFAIL_LINKS:-4}
RATE=${LINKFAIL_RATE:-100mbit}
CUT=${LINKFAIL_CUT:-2}
CUT_AT=${LINKFAIL_CUT_AT:-4}
RESTORE_AT=${LINKFAIL_RESTORE_AT:-8}
SECS=${LINKFAIL_SECONDS:-14}
CSECS=${LINKFAIL_CEIL_SECONDS:-8}

bench_root skip
bench_need "$CHECK" "$BUILD/sbin/piod" "$BUILD/bin/pio-info" "$TB" iperf3 || exit 1
if [ "$CUT" -ge "$K" ] || [ "$K" -lt 2 ]; then
  echo "linkfail.sh: LINKFAIL_CUT=$CUT must name one of LINKFAIL_LINKS=$K (>= 2) links" >&2; exit 1
fi

bench_work

bench_banner "; 2 hosts x $K links at $RATE;" \
  "link $CUT cut at t=${CUT_AT}s, restored at t=${RESTORE_AT}s"
fail=0
if ! bench_bed_up lf 2 "$K" "$RATE"; then
  echo "linkfail.sh: the bed $bed did not come up" >&2
  bed=""; exit 1
fi
echo "-- bed $bed"

ceil=""
if iperf_servers $(links "$K") && iperf_clients "$work/ceil" "$CSECS" $(links "$K") &&
  ceil=$(iperf_rate "$work"/ceil.*.json); then
  echo "   ceiling ($K x iperf3, one per link, ${CSECS}s): $ceil MB/s"
else
  echo "linkfail.sh: ceiling measurement failed" >&2
  cat "$work"/ceil.*.err >&2 2>/dev/null; fail=1
fi

# the message: about SECONDS at the ceiling, less what the cut costs (one
# link's share of the bundle for CUT_AT..RESTORE_AT, about 0.5 s of recovery)
mib=$("$PY" -c '
import sys
c, k, secs, cut, res = (float(sys.argv[1] or 12.0 * int(sys.argv[2])), int(sys.argv[2]),
                        float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]))
full = secs - (res - cut) / k - 0.5
print(max(16, int(c * 1e6 * full / 1048576)))' "${ceil:-}" "$K" "$SECS" "$CUT_AT" "$RESTORE_AT")

ok_pio=0
if pio_pair_testbed "$work/pair" "$bed" "$K"; then
  echo "   PIO: pio-check sizes, 1 message of $mib MiB, DYNAMIC, every byte checked by the receiver"
  rm -f "$work/recv.rc" "$work/send.rc"
  ( PIO_SOCKET=$PIO_SOCK_B timeout 180 "$CHECK" recv sizes -a lf-r -p lf-s -S "${mib}M" \
      >"$work/recv.log" 2>&1
    echo $? >"$work/recv.rc" ) &
  rp=$!; daemons+=("$rp")
  ( PIO_SOCKET=$PIO_SOCK_A timeout 180 "$CHECK" send sizes -a lf-s -p lf-r -S "${mib}M" -c DYNAMIC \
      >"$work/send.log" 2>&1
    echo $? >"$work/send.rc" ) &
  sp=$!; daemons+=("$sp")
  # the sampler: drives the cut and the restore, stops when the receiver is done
  "$PY" - "$PIO_SOCK_A" "$PIO_INFO" "$TB" "$bed" "$CUT" "$CUT_AT" "$RESTORE_AT" \
    "$work" "$K" <<'EOF'
import csv, json, os, subprocess, sys, threading, time
sock, info, tb, bed, cut, cut_at, restore_at, work, k = sys.argv[1:10]
cut, cut_at, restore_at, k = int(cut), float(cut_at), float(restore_at), int(k)
env = dict(os.environ, PIO_SOCKET=sock)
TICK, START_LIMIT, LIMIT = 0.25, 60.0, 150.0
events = {}

def sample():
    t1 = time.monotonic()
    r = subprocess.run([info, "--json", "--timeout", "2000"], env=env, capture_output=True,
                       text=True)
    t2 = time.monotonic()
    if r.returncode != 0:
        return None
    chans = {c["index"]: c for c in json.loads(r.stdout)["channels"] if c["peer"] == "B"}
    return (t1 + t2) / 2, [chans[i] for i in range(k)]

def link(state, key):
    events[key + "_start"] = time.monotonic()
    r = subprocess.run([tb, "link", bed, "h1", str(cut), state], capture_output=True, text=True)
    events[key] = time.monotonic()
    if r.returncode != 0:
        events[key + "_error"] = r.stderr.strip()

# The samples lie on a 250 ms grid from t0; the cut and the restore are
# started (in a thread, the sampling goes on) right after the grid sample
# nearest to CUT_AT and RESTORE_AT, so that every interval lies wholly
# before or after a command's start. "cut_sample" / "restore_sample" are
# those samples' times.
def fault(state, key, t):
    events[key + "_sample"] = t
    th = threading.Thread(target=link, args=(state, key))
    th.start()
    return th

done = lambda name: os.path.exists(os.path.join(work, name))
rows, t0, base, err = [], None, None, None
cut_thr = restore_thr = None
begin = time.monotonic()
nxt = begin
try:
    while True:
        s = sample()
        now = time.monotonic()
        if s is not None:
            t, ch = s
            tot = sum(c["tx_bytes"] for c in ch)
            if base is None:
                base = tot
            if t0 is None and tot > base:
                t0 = t
            if t0 is not None:
                rows.append([t - t0] + [c["tx_bytes"] for c in ch] + [c["state"] for c in ch] +
                            [c["downs"] for c in ch] + [c["resent"] for c in ch])
                if cut_thr is None and t - t0 >= cut_at - TICK / 2:
                    cut_thr = fault("down", "cut", t)
                elif (restore_thr is None and cut_thr is not None and
                      t - t0 >= restore_at - TICK / 2):
                    cut_thr.join()
                    restore_thr = fault("up", "restore", t)
        if t0 is None:
            if done("recv.rc") or done("send.rc"):
                err = "the transfer ended before its bytes were seen flowing"; break
            if now - begin > START_LIMIT:
                err = "no bytes flowed within %.0f s" % START_LIMIT; break
        else:
            if done("recv.rc"):
                if "restore" not in events:
                    err = "the transfer ended %.1f s after it started, before the restore" % (
                        now - t0)
                break
            if now - t0 > LIMIT:
                err = "the transfer did not end within %.0f s" % LIMIT; break
        nxt += TICK
        time.sleep(max(0.0, nxt - time.monotonic()))
finally:
    # whatever happened, the link is up again when the sampler leaves
    if cut_thr is not None:
        cut_thr.join()
        if restore_thr is None:
            restore_thr = fault("up", "restore", None)
        restore_thr.join()
with open(os.path.join(work, "samples.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["t"] + ["tx%d" % i for i in range(k)] + ["state%d" % i for i in range(k)] +
               ["downs%d" % i for i in range(k)] + ["resent%d" % i for i in range(k)])
    w.writerows(rows)
ev = {key: (v - t0 if isinstance(v, float) and t0 is not None else v)
      for key, v in events.items()}
json.dump(ev, open(os.path.join(work, "events.json"), "w"))
for key in ("cut_error", "restore_error"):
    if key in ev:
        print("linkfail.sh: pio-testbed link: %s" % ev[key], file=sys.stderr)
if err:
    sys.exit("linkfail.sh: sampler: " + err)
if "cut_error" in ev or "restore_error" in ev:
    sys.exit(1)
EOF
  src=$?
  wait "$sp"; wait "$rp"
  s_rc=$(cat "$work/send.rc" 2>/dev/null || echo none)
  r_rc=$(cat "$work/recv.rc" 2>/dev/null || echo none)
  if [ "$s_rc" = 0 ] && [ "$r_rc" = 0 ] && grep -q '^OK sizes: 1 messages' "$work/recv.log"; then
    ok_pio=1
    echo "   receiver: $(grep '^OK' "$work/recv.log")"
  else
    echo "linkfail.sh: the transfer failed (sender exit $s_rc, receiver exit $r_rc):" >&2
    sed 's/^/  send | /' "$work/send.log" >&2
    sed 's/^/  recv | /' "$work/recv.log" >&2
    fail=1
  fi
  [ "$src" -eq 0 ] || fail=1
  # piod A's channels at the end (and its log lines about the cut)
  PIO_SOCKET=$PIO_SOCK_A "$PIO_INFO" >"$work/info.txt" 2>&1 &&
    sed -n "4,$((4 + K))p" "$work/info.txt" | sed 's/^/   | /'
  grep -E "channel $CUT to B" "$work/pair/A.log" | sed 's/^/   A.log | /'
  grep -E "channel $CUT from A" "$work/pair/B.log" | sed 's/^/   B.log | /'
else
  echo "linkfail.sh: the piod pair did not come up on the bed" >&2; fail=1
fi
pio_piods_stop
"$TB" down "$bed" >/dev/null 2>&1
bed=""

[ -f "$work/samples.csv" ] || {
  echo "linkfail.sh: FAILED: no samples" >&2; exit 1; }
bench_summary "linkfail.csv linkfail-summary.csv linkfail.png" "$work/samples.csv" "$work/events.json" "${ceil:-}" "$ok_pio" "$K" "$CUT" "$RATE" \
  "$date_s" "$mib" "$RESULTS/linkfail.csv" "$RESULTS/linkfail-summary.csv" \
  "$RESULTS/linkfail.png" <<'EOF'
import csv, json, sys
(samples, events, ceil, ok_pio, k, cut, rate, date, mib, out_csv, out_sum,
 out_png) = sys.argv[1:13]
k, cut, ok_pio = int(k), int(cut), ok_pio == "1"
ceil = float(ceil) if ceil else None
ceil3 = ceil * (k - 1) / k if ceil else None
ev = json.load(open(events))
rows = list(csv.DictReader(open(samples)))
t = [float(r["t"]) for r in rows]
tx = [[int(r["tx%d" % i]) for i in range(k)] for r in rows]
tot = [sum(x) for x in tx]
st = [r["state%d" % cut] for r in rows]
MB = 1e6
# The cut and the restore were started right after a grid sample (*_sample);
# each `pio-testbed link` takes a moment (it waits for the host to see the
# carrier change), so the link is cut / restored for sure once it returned.
t_cut, t_res = ev.get("cut"), ev.get("restore")
t_cut0, t_res0 = ev.get("cut_start", t_cut), ev.get("restore_start", t_res)
TICK, SETTLE, START = 0.25, 3.0, 1.0
downs_c = [int(r["downs%d" % cut]) for r in rows]
# per interval rates, stamped with the end of the interval
rates = []
for j in range(1, len(rows)):
    dt = t[j] - t[j - 1]
    per = [(tx[j][i] - tx[j - 1][i]) / dt / MB for i in range(k)]
    rates.append([t[j]] + per + [sum(per), st[j]])
with open(out_csv, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["t_s"] + ["ch%d_MBps" % i for i in range(k)] + ["total_MBps",
                                                                "ch%d_state" % cut])
    for r in rates:
        w.writerow(["%.3f" % r[0]] + ["%.3f" % v for v in r[1:k + 2]] + [r[k + 2]])

def mean(a, b):
    """Mean total rate over samples a..b (indices), from the byte counters."""
    if a is None or b is None or b <= a:
        return None
    return (tot[b] - tot[a]) / (t[b] - t[a]) / MB

def first(cond):
    return next((j for j in range(len(t)) if cond(j)), None)

def last(cond):
    return next((j for j in reversed(range(len(t))) if cond(j)), None)

def nearest(x):
    return min(range(len(t)), key=lambda j: abs(t[j] - x)) if x is not None and t else None

final = tot[-1] if tot else 0
i_end = last(lambda j: tot[j] < final)           # still moving up to here
i_cut, i_res = nearest(ev.get("cut_sample")), nearest(ev.get("restore_sample"))
win = {}
# before: from 1 s in (at the start each channel's socket takes its first
# chunks at once, which its tx counter shows as an instant burst) to the cut
if i_cut is not None:
    win["before"] = (first(lambda j: t[j] >= START - TICK / 2), i_cut)
# during: from 3 s after the cut (the watchdog's time) to the restore
if i_cut is not None and i_res is not None:
    win["during"] = (first(lambda j: j > i_cut and t[j] >= t[i_cut] + SETTLE - TICK / 2), i_res)
# the cut channel declared dead: its state is not "up" or its downs counter
# went up (a reconnect within 250 ms shows only in the counter)
down_i = first(lambda j: i_cut is not None and j > i_cut and
               (st[j] != "up" or downs_c[j] > downs_c[i_cut]))
# up again: the first "up" after the restore and after the last sample that
# showed it not up; if it never went down, the first sample after the restore
up_i = None
if i_res is not None:
    nu = last(lambda j: down_i is not None and j >= down_i and st[j] != "up")
    up_i = first(lambda j: j > i_res and st[j] == "up" and (nu is None or j > nu) and
                 (down_i is None or j >= down_i))
carry_i = first(lambda j: i_res is not None and j > i_res and tx[j][cut] > tx[j - 1][cut])
if up_i is not None:
    win["after"] = (up_i, i_end)

res = {}
print()
span = lambda a, b: "%.2f-%.2f" % (a, b) if a is not None and b is not None else "-"
print("Link cut, 2 hosts x %d links at %s: link %d cut at t=%s s, restored at t=%s s"
      % (k, rate, cut, span(t_cut0, t_cut), span(t_res0, t_res)))
print("(piod A's tx byte counters every 250 ms; MB/s = 10^6 B/s; t = 0 when the bytes flow;")
print(" the cut / restore spans are the `pio-testbed link` command, start to return)")
print("%-14s %14s %10s %22s %7s" % ("phase", "window (s)", "PIO MB/s", "ceiling MB/s", "ratio"))
for name, label, c, cl in (("before", "before cut", ceil, "%d links" % k),
                           ("during", "during cut", ceil3, "%d links" % (k - 1)),
                           ("after", "after restore", ceil, "%d links" % k)):
    a, b = win.get(name, (None, None))
    m = mean(a, b)
    ratio = m / c if m is not None and c else None
    res[name] = (m, ratio, t[a] if a is not None else None, t[b] if b is not None else None)
    print("%-14s %14s %10s %22s %7s" % (
        label, "%.2f-%.2f" % (t[a], t[b]) if m is not None else "-",
        "%.2f" % m if m is not None else "-",
        "%.2f (%s)" % (c, cl) if c else "- (%s)" % cl,
        "%.3f" % ratio if ratio is not None else "-"))
up_after = t[up_i] - t_res if up_i is not None else None
carry_after = t[carry_i] - t_res if carry_i is not None else None   # 250 ms resolution
print()
if down_i is not None:
    print("channel %d: declared down by t=%.2f s (%.2f s after the cut, %s the restore)" % (
        cut, t[down_i], t[down_i] - t_cut,
        "before" if t_res is None or t[down_i] < t_res else "after"))
elif i_cut is None:
    print("channel %d: the link was not cut (the transfer ended first)" % cut)
else:
    print("channel %d: never seen down (its TCP connection resumed before the watchdog fired)"
          % cut)
print("channel %d: up again %s, carrying again %s after the restore (sampled every 250 ms)" % (
    cut, "%.2f s" % up_after if up_after is not None else "never",
    "%.2f s" % carry_after if carry_after is not None else "never"))
downs = [int(rows[-1]["downs%d" % i]) for i in range(k)] if rows else []
resent = [int(rows[-1]["resent%d" % i]) for i in range(k)] if rows else []
print("final counters (piod A, channels 0..%d): downs %s, resent chunks %s (total %d)" % (
    k - 1, " ".join(map(str, downs)), " ".join(map(str, resent)), sum(resent)))
dur = t[i_end + 1] if i_end is not None and i_end + 1 < len(t) else None
print("transfer: 1 message of %s MiB, %s MB sent by piod A (resends included), done by t=%s s;"
      " receiver %s" % (mib, "%.1f" % (final / MB), "%.2f" % dur if dur else "-",
                        "verified every byte" if ok_pio else "did NOT confirm the data"))
print()
v = []
for name, what, n in (("during", "during the cut", k - 1), ("after", "after the restore", k)):
    r = res[name][1]
    if r is None:
        v.append("FAIL: linkfail: %s: no measurement" % what)
    else:
        v.append("%s: linkfail: %s PIO / %d-link ceiling = %.3f, target >= 0.9" % (
            "PASS" if r >= 0.9 else "MISS", what, n, r))
v.append("%s: linkfail: the transfer completed intact (receiver checked every byte)" % (
    "PASS" if ok_pio else "MISS"))
print("\n".join(v))
fm = lambda x, f="%.3f": f % x if x is not None else ""
with open(out_sum, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["links", "rate", "cut_link", "t_cut_s", "t_restore_s", "ceiling_MBps",
                "ceiling_minus1_MBps", "before_MBps", "before_ratio", "during_MBps",
                "during_ratio", "after_MBps", "after_ratio", "cut_up_after_restore_s",
                "cut_carrying_after_restore_s", "downs", "resent", "message_MiB", "intact"])
    w.writerow([k, rate, cut, fm(t_cut), fm(t_res), fm(ceil), fm(ceil3),
                fm(res["before"][0]), fm(res["before"][1]), fm(res["during"][0]),
                fm(res["during"][1]), fm(res["after"][0]), fm(res["after"][1]),
                fm(up_after, "%.2f"), fm(carry_after, "%.2f"), " ".join(map(str, downs)),
                " ".join(map(str, resent)), mib, int(ok_pio)])
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("note: no matplotlib for %s: %s not drawn" % (sys.executable, out_png))
    sys.exit(0)
fig, ax = plt.subplots(figsize=(9, 5.6))
tt = [r[0] for r in rates]
# each rate holds for the interval that ends at its time stamp
ax.step(tt, [r[k + 1] for r in rates], where="pre", color="black", lw=1.5,
        label="PIO total (250 ms)")
# 1 s mean of the total (per 250 ms a channel moves whole 1 MiB chunks: steps of 4.2 MB/s)
sm = [(t[j], (tot[j] - tot[j - 4]) / (t[j] - t[j - 4]) / MB) for j in range(4, len(t))]
ax.plot([x - 0.5 for x, _ in sm], [y for _, y in sm], color="tab:gray", lw=2.5, alpha=0.7,
        label="PIO total, 1 s mean")
for i in range(k):
    ax.step(tt, [r[1 + i] for r in rates], where="pre", lw=1,
            ls="-" if i == cut else "--", label="channel %d%s" % (i, " (cut)" if i == cut else ""))
if ceil:
    ax.axhline(ceil, color="tab:green", ls=":", lw=1.5,
               label="ceiling, %d links (%.1f)" % (k, ceil))
    ax.axhline(ceil3, color="tab:olive", ls=":", lw=1.5,
               label="ceiling, %d links (%.1f)" % (k - 1, ceil3))
if t_cut is not None:
    ax.axvline(t_cut, color="tab:red", lw=1.2)
    ax.text(t_cut, ax.get_ylim()[1] * 0.97, " cut", color="tab:red", va="top", fontsize=8)
    ax.axvspan(t_cut, t_cut + 3.0, color="tab:red", alpha=0.07, lw=0)
if down_i is not None:
    ax.axvline(t[down_i], color="tab:gray", lw=1, ls="--")
    ax.text(t[down_i], ax.get_ylim()[1] * 0.90, " ch %d down" % cut, color="tab:gray",
            va="top", fontsize=8)
if t_res is not None:
    ax.axvline(t_res, color="tab:blue", lw=1.2)
    ax.text(t_res, ax.get_ylim()[1] * 0.97, " restore", color="tab:blue", va="top", fontsize=8)
lab = "phase means (table)"
for name in ("before", "during", "after"):
    m, _, a, b = res[name]
    if m is not None:
        ax.hlines(m, a, b, color="tab:purple", lw=3, alpha=0.7, label=lab)
        lab = None
ax.set_xlabel("s since the transfer started")
ax.set_ylabel("MB/s (10^6 B/s), piod A tx")
ax.set_title("PIO DYNAMIC over %d x %s, link %d cut and restored (%s)" % (k, rate, cut, date),
             fontsize=10)
ax.set_ylim(bottom=0)
ax.grid(True, alpha=0.3)
ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=4)
fig.tight_layout()
fig.savefig(out_png, dpi=110)
EOF
[ $fail -eq 0 ] || { echo "linkfail.sh: FAILED: not every measurement completed" >&2; exit 1; }
exit 0
