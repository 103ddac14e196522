#!/usr/bin/env bash
# pcp.sh - copying a file to another host: pcp over 1, 2, 4 channels against
# scp, rsync over ssh, GridFTP and the 4-link ceiling (the original PIO's rcp
# experiment).
# SPDX-License-Identifier: BSD-3-Clause
#
# A test bed of 2 hosts with 4 links at RATE (default 100mbit) each way. In one
# run, h1 -> h2, a file of SIZE (default 1G, random bytes) is copied by:
#   ceiling    4 iperf3 at once, one per link (bench/lib.bash), summed;
#   pcp        piods on both hosts (B exports a folder), `pcp -n 1`, `-n 2`,
#              `-n 4` (a message per channel in turn) and `pcp` (DYNAMIC over
#              all channels), with the checksum on (the default), and DYNAMIC
#              with --no-verify (the cost of the checksum);
#   scp        to an sshd started in h2 for this run (root login with a
#              throw-away key, port 2222, on h2's link-0 address: ssh uses one
#              connection, so one link);
#   scp x 4    scp's best form over 4 links: split the file in 4 (split -n),
#              one scp per part to each of h2's 4 link addresses at once,
#              then cat the parts on h2 (all of it timed);
#   rsync      over the same ssh (`rsync -e ssh`, the destination absent: a
#              whole-file transfer);
#   GridFTP    globus-gridftp-server in h2 (anonymous, as nobody, port 2811,
#              in the foreground: one server per copy), `globus-url-copy -p 1`
#              and `-p 4` (parallel TCP streams) on h2's link-0 address, and
#              GridFTP's best form here: 4 partial transfers at once
#              (`-off`/`-len`, a quarter each), one per link address of h2,
#              each to its own server, into the same file.
# Every copy is checked against the source (cmp). Time is the copy command's
# wall time (start-up and, for pcp, the checksum verification included).
# Prints a table, PASS/MISS lines for the targets (pcp -n 4 and the default
# DYNAMIC, checksum on, each >= 1.0 x GridFTP's best and >= 0.985 x the
# ceiling; verify >= 0.95 x no-verify; pcp -n 4 against scp for the record)
# and writes bench/results/pcp.csv and pcp.png. Needs root.
#
# Exit status: 0 when every measurement completed (a MISS is reported, not an
# error) or when skipped for want of root; 1 when one failed.
# Environment: BUILD (default build/default), PCP_SIZE (1G; K/M/G suffixes),
# PCP_RATE (100mbit), PCP_RUNS (the runs to make, default all: ceiling
# pcp-n1 pcp-n2 pcp-n4 pcp-dynamic pcp-dynamic-noverify scp scp-x4 rsync
# gridftp-p1 gridftp-p4 gridftp-x4; `make demo` makes four), PIO_BENCH_RESULTS (default
# bench/results).
set -u
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
SIZE=${PCP_SIZE:-1G}
RATE=${PCP_RATE:-100mbit}
K=4
RUNS=" ${PCP_RUNS:-ceiling pcp-n1 pcp-n2 pcp-n4 pcp-dynamic pcp-dynamic-noverify scp scp-x4 rsync gridftp-p1 gridftp-p4 gridftp-x4} "
want() { [[ $RUNS == *" $1 "* ]]; }

bench_root skip
bench_need "$BUILD/bin/pcp" "$BUILD/sbin/pio-files" "$BUILD/sbin/piod" scp rsync sshd \
  globus-gridftp-server globus-url-copy iperf3 || exit 1

bench_work
netns_etc=()
cleanup() {
  local p
  for p in "${netns_etc[@]}"; do rm -rf "$p"; done
  bench_cleanup
}
trap cleanup EXIT

bytes=$(bench_bytes "$SIZE") ||
  { echo "pcp.sh: PCP_SIZE=$SIZE: use bytes with K, M or G" >&2; exit 1; }
bench_banner ", $K links at $RATE, file $SIZE"
bench_bed_up pcp 2 "$K" "$RATE" || exit 1
h2a=$("$TB" addr "$bed" h2 0)
mkdir -p "$work/src" "$work/dst"
chmod 777 "$work/dst"
head -c "$bytes" /dev/urandom >"$work/src/file"
fail=0
rows=()

# timed NAME CMD...: run CMD in h1, check the copy at $work/dst/NAME, record MB/s
timed() {
  local name=$1 t0 t1 rc
  shift
  want "$name" || return 0
  rm -f "$work/dst/$name"
  t0=$(date +%s.%N)
  "$TB" exec "$bed" h1 "$@" >"$work/$name.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  if [ $rc -ne 0 ] || ! cmp -s "$work/src/file" "$work/dst/$name"; then
    echo "pcp.sh: $name failed (exit $rc); log:" >&2
    sed 's/^/  | /' "$work/$name.log" >&2
    fail=1
    return 1
  fi
  local mbs
  mbs=$("$PY" -c "print('%.3f' % ($bytes / ($t1 - $t0) / 1e6))")
  printf '   %-22s %8.2f s  %8s MB/s\n' "$name" "$("$PY" -c "print($t1 - $t0)")" "$mbs"
  rows+=("$name,$mbs")
}

if want ceiling; then
echo "-- ceiling: $K x iperf3 at once, one per link"
files=()
for i in $(links "$K"); do files+=("$work/ceil.$i.json"); done
if iperf_servers $(links "$K") && iperf_clients "$work/ceil" 8 $(links "$K") &&
  ceil=$(iperf_rate "${files[@]}"); then
  echo "   ceiling: $ceil MB/s"
  rows+=("ceiling,$ceil")
else
  echo "pcp.sh: the iperf3 ceiling failed" >&2
  exit 1
fi
fi

echo "-- pcp (piods on both hosts, B exports $work/dst)"
bench_piods "$work/pio" "$K" "$work/dst" || { echo "pcp.sh: the piods did not come up" >&2; exit 1; }
for n in 1 2 4; do
  timed "pcp-n$n" env PIO_SOCKET="$work/pio/A.sock" "$BUILD/bin/pcp" -q -n "$n" \
    "$work/src/file" "B:pcp-n$n"
done
timed "pcp-dynamic" env PIO_SOCKET="$work/pio/A.sock" "$BUILD/bin/pcp" -q \
  "$work/src/file" "B:pcp-dynamic"
timed "pcp-dynamic-noverify" env PIO_SOCKET="$work/pio/A.sock" "$BUILD/bin/pcp" -q --no-verify \
  "$work/src/file" "B:pcp-dynamic-noverify"
pio_piods_stop

if want scp || want scp-x4 || want rsync; then
echo "-- scp and rsync over ssh (sshd in h2 on $h2a:2222, one connection: one link; scp x 4: one per link)"
sshd_start "$work" "$K" || { echo "pcp.sh: sshd failed" >&2; exit 1; }
timed scp scp -q "${SSHO[@]}" -P 2222 "$work/src/file" "root@$h2a:$work/dst/scp"
# scp x 4: what a user scripts for 4 links (h1 and h2 share this file system,
# so the parts go to their own folder on h2 and the join reads them there)
addrs=()
for i in $(links "$K"); do addrs+=("$("$TB" addr "$bed" h2 "$i")"); done
mkdir -p "$work/parts" "$work/dst/parts"
cat >"$work/scp-x4.sh" <<SCP
set -e
cd "$work/parts"
split -n $K -d "$work/src/file" part.
pids=()
i=0
for a in ${addrs[*]}; do
  scp -q ${SSHO[*]} -P 2222 part.0\$i "root@\$a:$work/dst/parts/" & pids+=(\$!)
  i=\$((i + 1))
done
for p in "\${pids[@]}"; do wait "\$p"; done
ssh ${SSHO[*]} -p 2222 "root@$h2a" "cat $work/dst/parts/part.* >$work/dst/scp-x4 && rm -f $work/dst/parts/part.*"
rm -f part.*
SCP
timed scp-x4 bash "$work/scp-x4.sh"
timed rsync rsync -e "ssh ${SSHO[*]} -p 2222" "$work/src/file" "root@$h2a:$work/dst/rsync"
fi

if want gridftp-p1 || want gridftp-p4 || want gridftp-x4; then
echo "-- GridFTP (globus-gridftp-server in h2, anonymous, on $h2a:2811)"
# globus looks its addresses up by name and gives up on the resolver's
# "temporary failure" (no DNS inside the bed): give both namespaces an
# /etc/hosts of their own (ip netns exec bind-mounts /etc/netns/NS/hosts).
for h in h1 h2; do
  ns=$("$TB" ns "$bed" "$h")
  mkdir -p "/etc/netns/$ns"
  { echo "127.0.0.1 localhost"
    echo "$("$TB" addr "$bed" "$h" 0) $(hostname)"
    for hh in 1 2; do for i in $(links "$K"); do echo "$("$TB" addr "$bed" "h$hh" "$i") h$hh-$i"; done; done
  } >"/etc/netns/$ns/hosts"
  netns_etc+=("/etc/netns/$ns")
done
# In the foreground (-debug) a server run as root takes one connection: one
# server per copy.
for p in 1 4; do
  want "gridftp-p$p" || continue
  "$TB" exec "$bed" h2 globus-gridftp-server -aa -anonymous-user nobody -anonymous-group nogroup \
    -p 2811 -control-interface "$h2a" -data-interface "$h2a" -debug -home-dir "$work" \
    >"$work/gridftp.$p.log" 2>&1 &
  gp=$!
  daemons+=($gp)
  bench_wait_listen h2 "$h2a" 2811
  timed "gridftp-p$p" globus-url-copy -p "$p" "file://$work/src/file" \
    "ftp://$h2a:2811$work/dst/gridftp-p$p"
  kill "$gp" 2>/dev/null
  wait "$gp" 2>/dev/null
done
if want gridftp-x4; then
  # GridFTP's best form: K partial transfers at once, one per link address,
  # each to its own server (one connection each), into the same file
  gps=()
  part=$(((bytes + K - 1) / K))
  echo 'pids=()' >"$work/gridftp-x4.sh"
  for i in $(links "$K"); do
    a=$("$TB" addr "$bed" h2 "$i")
    "$TB" exec "$bed" h2 globus-gridftp-server -aa -anonymous-user nobody -anonymous-group nogroup \
      -p 2811 -control-interface "$a" -data-interface "$a" -debug -home-dir "$work" \
      >"$work/gridftp.x4.$i.log" 2>&1 &
    gps+=($!)
    daemons+=($!)
    bench_wait_listen h2 "$a" 2811
    len=$part
    [ $((i * part + len)) -le "$bytes" ] || len=$((bytes - i * part))
    echo "globus-url-copy -off $((i * part)) -len $len file://$work/src/file" \
      "ftp://$a:2811$work/dst/gridftp-x4 & pids+=(\$!)" >>"$work/gridftp-x4.sh"
  done
  echo 'rc=0; for p in "${pids[@]}"; do wait "$p" || rc=1; done; exit $rc' >>"$work/gridftp-x4.sh"
  timed gridftp-x4 bash "$work/gridftp-x4.sh"
  for gp in "${gps[@]}"; do kill "$gp" 2>/dev/null; wait "$gp" 2>/dev/null; done
fi
fi

[ $fail -eq 0 ] || { echo "pcp.sh: FAILED: not every copy completed" >&2; exit 1; }
mkdir -p "$RESULTS"
printf '%s\n' "${rows[@]}" >"$work/rows"
"$PY" - "$RESULTS/pcp.csv" "$RESULTS/pcp.png" "$RATE" "$SIZE" "$work/rows" <<'EOF'
import sys
out_csv, out_png, rate, size, rows = sys.argv[1:6]
r = {}
for line in open(rows):
    k, v = line.strip().split(",")
    r[k] = float(v)
order = [k for k in ["ceiling", "pcp-n1", "pcp-n2", "pcp-n4", "pcp-dynamic",
                     "pcp-dynamic-noverify", "scp", "scp-x4", "rsync", "gridftp-p1", "gridftp-p4",
                     "gridftp-x4"] if k in r]
ceil, scp = r.get("ceiling"), r.get("scp")
ratio = lambda a, b: "%.3f" % (a / b) if b else ""
with open(out_csv, "w") as f:
    f.write("tool,MBps,x_ceiling,x_scp\n")
    for k in order:
        f.write("%s,%.3f,%s,%s\n" % (k, r[k], ratio(r[k], ceil), ratio(r[k], scp)))
print()
print("Copy of a %s file, h1 -> h2, 4 links at %s (MB/s = 10^6 B/s)" % (size, rate))
print("%-22s %9s %10s %8s" % ("tool", "MB/s", "x ceiling", "x scp"))
for k in order:
    print("%-22s %9.2f %10s %8s" % (k, r[k], ratio(r[k], ceil), ratio(r[k], scp)))
print()
n4 = r.get("pcp-n4")
g = {k: r[k] for k in ("gridftp-p1", "gridftp-p4", "gridftp-x4") if k in r}
gbest = max(g, key=g.get) if g else None
if n4 and scp:
    print("info: pcp -n 4 = %.2f x scp (one link)" % (n4 / scp))
if n4 and "scp-x4" in r:
    print("info: pcp -n 4 = %.2f x scp x 4 (one per link)" % (n4 / r["scp-x4"]))
for name in ("pcp-n4", "pcp-dynamic"):
    v = r.get(name)
    if not v:
        continue
    if ceil:
        print("%s: %s = %.3f x ceiling, target >= 0.985" % ("PASS" if v / ceil >= 0.985 else "MISS", name, v / ceil))
    if gbest:
        print("%s: %s = %.3f x GridFTP's best (%s, %.2f MB/s), target >= 1.0" % (
            "PASS" if v >= g[gbest] else "MISS", name, v / g[gbest], gbest, g[gbest]))
if "pcp-dynamic" in r and "pcp-dynamic-noverify" in r:
    ver = r["pcp-dynamic"] / r["pcp-dynamic-noverify"]
    print("%s: pcp verify on = %.3f x --no-verify, target >= 0.95" % ("PASS" if ver >= 0.95 else "MISS", ver))
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("note: no matplotlib: %s not drawn" % out_png)
    sys.exit(0)
fig, ax = plt.subplots(figsize=(9, 4.2))
cols = ["C7" if k == "ceiling" else "C0" if k.startswith("pcp") else "C2" if k.startswith("grid") else "C1" for k in order]
ax.bar(range(len(order)), [r[k] for k in order], color=cols)
ax.set_xticks(range(len(order)))
ax.set_xticklabels(order, rotation=30, ha="right")
ax.set_ylabel("MB/s")
ax.set_title("Copying a %s file over 4 x %s links" % (size, rate))
fig.tight_layout()
fig.savefig(out_png, dpi=100)
print("wrote %s and %s" % (out_csv, out_png))
EOF
