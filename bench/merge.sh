#!/usr/bin/env bash
# merge.sh - remote merged output: 4 MPI processes write blocks of one file
# that appears on another host (PIO_File_open / write_at / close), against
# one process over one channel, against sshfs, and the 4-link ceiling.
# SPDX-License-Identifier: BSD-3-Clause
#
# A test bed of 2 hosts with 4 links at RATE (default 100mbit) each way. The
# writers run in h1, the file appears in a folder of h2. In one run:
#   ceiling          4 iperf3 at once, one per link (bench/lib.bash), summed;
#   pio-merged       piods on both hosts, one channel per link (4), B exports
#                    a folder; `mpirun -np 4 examples/merged_output B FILE
#                    --blocks N` in h1: the original experiment's layout
#                    (process r writes 1 MB block i at (i x 4 + r) MB) with
#                    N = MB / 4 blocks per process, through B's file service;
#   pio-hdf5         the HDF5 mode: the same 4 processes write one dataset of
#                    MB x 10^6 bytes of doubles, (MB / 4) x 1000 x 500, each
#                    its quarter (a 2 x 2 grid over the last two dimensions)
#                    plane by plane, planes of 1 MB in a shuffled order
#                    (`examples/merged_dataset --dims ...`), written on h2 by
#                    the file service with libhdf5; checked with h5py;
#   pio-1proc        the same file from one process (`-np 1 --blocks MB`)
#                    over the same 4 channels: what merging adds to one writer;
#   pio-1proc-1chan  one process over one channel: piods started again with a
#                    single link each (link 0), so the bundle is one channel;
#   sshfs            an sshd in h2 (throw-away key, port 2222 on h2's link-0
#                    address: one connection, one link) and h2's folder
#                    mounted with sshfs in h1: `sshfs root@ADDR:DIR MNT -p 2222
#                    -o Ciphers=aes128-gcm@openssh.com,Compression=no` plus
#                    the key and no host-key checks (SSHFS_OPTS overrides the
#                    options after the key); then the 4 processes of
#                    pio-merged write the same layout into MNT/FILE with
#                    pwrite(2), fsync(2) and close (`merged_output --posix`).
#                    `pio-testbed exec` (ip netns exec) gives every command a
#                    mount namespace of its own, so the mount and mpirun run
#                    in one shell in h1; sshfs is unmounted at its end and
#                    killed on exit (its mount goes with its namespace).
# Time and rate are merged_output's own: from a barrier before the open to the
# last process' return from its close (with PIO, the file service has synced
# and renamed the file by then; with sshfs, every process has fsync'd); MPI
# start-up is not included. Every file is compared with a reference written
# locally by the same program (cmp), then removed.
# Prints a table and a PASS/MISS line for the target pio-merged >= 0.9 x the
# ceiling, with pio-merged's ratios to sshfs and to one process over one
# channel (the original PIO: NFS 0.58 MB/s, PIO 6.72 MB/s, 11.6 x), and writes
# bench/results/merge.csv and merge.png. Needs root (skipped otherwise).
#
# Exit status: 0 when every measurement completed (a MISS is reported, not an
# error) or when skipped for want of root; 1 when one failed.
# Environment: BUILD (default build/default), MERGE_MB (400: the file, in
# 10^6 bytes, a multiple of 4), MERGE_RATE (100mbit), MERGE_RUNS (the runs to
# make, default all: ceiling pio-merged pio-hdf5 pio-1proc pio-1proc-1chan
# sshfs),
# SSHFS_OPTS (Ciphers=aes128-gcm@openssh.com,Compression=no),
# PIO_BENCH_RESULTS (default bench/results), PIO_PIOD_FLAGS (extra piod flags).
set -u
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
MB=${MERGE_MB:-400}
RATE=${MERGE_RATE:-100mbit}
SSHFS_OPTS=${SSHFS_OPTS:-Ciphers=aes128-gcm@openssh.com,Compression=no}
K=4  # links
NP=4 # writing processes
RUNS=" ${MERGE_RUNS:-ceiling pio-merged pio-hdf5 pio-1proc pio-1proc-1chan sshfs} "
want() { [[ $RUNS == *" $1 "* ]]; }
MO=$BUILD/examples/merged_output
MD=$BUILD/examples/merged_dataset
H5PY=/usr/bin/python3 # Debian's, which has h5py (mk/deps.sh)

bench_root skip
bench_need "$MO" "$MD" "$BUILD/sbin/pio-files" "$BUILD/sbin/piod" "$BUILD/bin/pio-info" mpirun iperf3 sshd \
  sshfs fusermount3 mountpoint || exit 1
[[ $MB =~ ^[0-9]+$ ]] && [ "$MB" -ge "$NP" ] && [ $((MB % NP)) -eq 0 ] ||
  { echo "merge.sh: MERGE_MB=$MB: a whole number of MB, a multiple of $NP" >&2; exit 1; }

bench_work
cleanup() {
  # sshfs lives in the mount namespace of its `pio-testbed exec`: ending it
  # unmounts (and the namespace goes with the last process in it)
  [ -s "$work/sshfs.pid" ] && kill "$(cat "$work/sshfs.pid")" 2>/dev/null
  bench_cleanup
}
trap cleanup EXIT

bench_banner ", $K links at $RATE, $NP processes x $((MB / NP)) blocks of 1 MB: one $MB MB file"
bench_bed_up mrg 2 "$K" "$RATE" || exit 1
mkdir -p "$work/dst" "$work/mnt"
chmod 777 "$work/dst"
# Open MPI as root, more processes than cores, and ranks that sleep in waits
# (the piods share the two cores); a run is stopped if it takes far longer
# than at 2 MB/s.
MPIRUN=(timeout $((MB / 2 + 120)) mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1)
# the reference: the same bytes written locally, in the root namespace
if ! "${MPIRUN[@]}" -np 1 "$MO" --posix "$work/ref" --blocks "$MB" >"$work/ref.log" 2>&1 </dev/null; then
  echo "merge.sh: the reference file could not be written:" >&2
  cat "$work/ref.log" >&2
  exit 1
fi
fail=0
rows=()

# h5_check FILE: dataset /A of FILE holds A[i][j][k] = i*1e6 + j*1e3 + k
# (merged_dataset's values), plane by plane
h5_check() {
  "$H5PY" - "$1" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as f:
    d = f["/A"]
    n0, n1, n2 = d.shape
    j, k = np.meshgrid(np.arange(n1), np.arange(n2), indexing="ij")
    for i in range(n0):
        if not (d[i] == i * 1e6 + j * 1e3 + k).all():
            sys.exit("plane %d differs" % i)
print("h5py: /A %s holds the values" % (d.shape,))
PY
}

# run NAME FILE CMD...: run CMD (an mpirun of merged_output) in h1, read the
# time and rate it printed, compare FILE (where it wrote) with the reference.
run() {
  local name=$1 file=$2 rc line secs mbs
  shift 2
  rm -f "$file"
  "$TB" exec "$bed" h1 "$@" >"$work/$name.log" 2>&1 </dev/null
  rc=$?
  line=$(grep -m1 '^OK merged_' "$work/$name.log")
  if [[ $rc -ne 0 || ! $line =~ in\ ([0-9.]+)\ s\ \(([0-9.]+)\ MB/s\) ]]; then
    echo "merge.sh: $name failed (exit $rc); log:" >&2
  elif [[ $file == *.h5 ]]; then
    h5_check "$file" >>"$work/$name.log" 2>&1 && rc=ok ||
      echo "merge.sh: $name: the dataset does not hold the values; log:" >&2
  elif ! cmp "$work/ref" "$file" >&2; then
    echo "merge.sh: $name: the file differs from the reference; log:" >&2
  else
    rc=ok
  fi
  if [ "$rc" != ok ]; then
    sed 's/^/  | /' "$work/$name.log" >&2
    fail=1
    return 1
  fi
  secs=${BASH_REMATCH[1]} mbs=${BASH_REMATCH[2]}
  printf '   %-16s %8.2f s  %8.2f MB/s\n' "$name" "$secs" "$mbs"
  rows+=("$name,$secs,$mbs")
  rm -f "$file"
}

if want ceiling; then
  echo "-- ceiling: $K x iperf3 at once, one per link"
  files=()
  for i in $(links "$K"); do files+=("$work/ceil.$i.json"); done
  # shellcheck disable=SC2046
  if iperf_servers $(links "$K") && iperf_clients "$work/ceil" 8 $(links "$K") &&
    ceil=$(iperf_rate "${files[@]}"); then
    echo "   ceiling: $ceil MB/s"
    rows+=("ceiling,,$ceil")
  else
    echo "merge.sh: the iperf3 ceiling failed" >&2
    exit 1
  fi
fi

if want pio-merged || want pio-hdf5 || want pio-1proc; then
  echo "-- PIO over $K channels (piods on both hosts, B exports $work/dst)"
  bench_piods "$work/pio4" "$K" "$work/dst" || { echo "merge.sh: the piods did not come up" >&2; exit 1; }
  want pio-merged && run pio-merged "$work/dst/merged.bin" env PIO_SOCKET="$work/pio4/A.sock" \
    "${MPIRUN[@]}" -np "$NP" "$MO" B merged.bin --blocks $((MB / NP))
  want pio-hdf5 && run pio-hdf5 "$work/dst/merged.h5" env PIO_SOCKET="$work/pio4/A.sock" \
    "${MPIRUN[@]}" -np "$NP" "$MD" B merged.h5 --dims $((MB / 4))x1000x500
  want pio-1proc && run pio-1proc "$work/dst/1proc.bin" env PIO_SOCKET="$work/pio4/A.sock" \
    "${MPIRUN[@]}" -np 1 "$MO" B 1proc.bin --blocks "$MB"
  pio_piods_stop
fi

if want pio-1proc-1chan; then
  echo "-- PIO over 1 channel (piods on link 0 only)"
  bench_piods "$work/pio1" 1 "$work/dst" || { echo "merge.sh: the piods did not come up" >&2; exit 1; }
  run pio-1proc-1chan "$work/dst/1chan.bin" env PIO_SOCKET="$work/pio1/A.sock" \
    "${MPIRUN[@]}" -np 1 "$MO" B 1chan.bin --blocks "$MB"
  pio_piods_stop
fi

if want sshfs; then
  sshd_start "$work" || { echo "merge.sh: sshd failed" >&2; exit 1; }
  echo "-- sshfs (sshd in h2 on $SSH_ADDR:2222: one link), -o $SSHFS_OPTS"
  # In h1: mount, wait for it, run the writers, unmount; one shell, so one
  # mount namespace. $1 = scratch folder, $2 = sshfs source, $3 = options,
  # then the ssh options, --, the command.
  # shellcheck disable=SC2016
  mount_and_run='w=$1 src=$2 opts=$3
    shift 3
    ssho=()
    while [ "$1" != -- ]; do ssho+=("$1"); shift; done
    shift
    sshfs "$src" "$w/mnt" -f -p 2222 "${ssho[@]}" -o "$opts" </dev/null &
    echo $! >"$w/sshfs.pid"
    for i in $(seq 100); do mountpoint -q "$w/mnt" && break; sleep 0.1; done
    mountpoint -q "$w/mnt" || { echo "sshfs did not mount $src"; exit 1; }
    "$@"
    rc=$?
    fusermount3 -u "$w/mnt" || rc=1
    wait
    exit $rc'
  run sshfs "$work/dst/sshfs.bin" bash -c "$mount_and_run" mount-and-run "$work" "root@$SSH_ADDR:$work/dst" \
    "$SSHFS_OPTS" "${SSHO[@]}" -- "${MPIRUN[@]}" -np "$NP" "$MO" --posix "$work/mnt/sshfs.bin" \
    --blocks $((MB / NP))
  rm -f "$work/sshfs.pid"
fi

[ $fail -eq 0 ] || { echo "merge.sh: FAILED: not every run completed" >&2; exit 1; }
mkdir -p "$RESULTS"
printf '%s\n' "${rows[@]}" >"$work/rows"
"$PY" - "$RESULTS/merge.csv" "$RESULTS/merge.png" "$RATE" "$MB" "$NP" "$work/rows" "$SSHFS_OPTS" <<'EOF'
import sys
out_csv, out_png, rate, mb, np_, rows, sshfs_opts = sys.argv[1:8]
r, t = {}, {}
for line in open(rows):
    k, s, v = line.strip().split(",")
    r[k] = float(v)
    t[k] = s
order = [k for k in ["ceiling", "pio-merged", "pio-hdf5", "pio-1proc", "pio-1proc-1chan", "sshfs"]
         if k in r]
ceil, sshfs, one = r.get("ceiling"), r.get("sshfs"), r.get("pio-1proc-1chan")
ratio = lambda a, b, f="%.3f": f % (a / b) if b else ""
with open(out_csv, "w") as f:
    f.write("run,seconds,MBps,x_ceiling,x_sshfs,x_1proc_1chan\n")
    for k in order:
        f.write("%s,%s,%.3f,%s,%s,%s\n" % (k, t[k], r[k], ratio(r[k], ceil), ratio(r[k], sshfs),
                                          ratio(r[k], one)))
print()
print("Merged output: one %s MB file from %s processes, h1 -> h2, 4 links at %s (MB/s = 10^6 B/s)"
      % (mb, np_, rate))
print("%-16s %9s %9s %10s %8s %14s" % ("run", "seconds", "MB/s", "x ceiling", "x sshfs", "x 1proc-1chan"))
for k in order:
    print("%-16s %9s %9.2f %10s %8s %14s" % (k, t[k], r[k], ratio(r[k], ceil), ratio(r[k], sshfs, "%.2f"),
                                           ratio(r[k], one, "%.2f")))
print("(sshfs -o %s)" % sshfs_opts)
print()
m = r.get("pio-merged")
if m and ceil:
    print("%s: merged output = %.3f x ceiling, target >= 0.9" % ("PASS" if m / ceil >= 0.9 else "MISS", m / ceil))
h = r.get("pio-hdf5")
if h and ceil:
    print("%s: merged output in HDF5 mode = %.3f x ceiling, target >= 0.9"
          % ("PASS" if h / ceil >= 0.9 else "MISS", h / ceil))
if m and sshfs:
    print("note: merged output = %.2f x sshfs (the original PIO: 11.6 x NFS)" % (m / sshfs))
if m and one:
    print("note: merged output = %.2f x one process over one channel" % (m / one))
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("note: no matplotlib: %s not drawn" % out_png)
    sys.exit(0)
fig, ax = plt.subplots(figsize=(8, 4.2))
cols = ["C7" if k == "ceiling" else "C0" if k.startswith("pio") else "C1" for k in order]
ax.bar(range(len(order)), [r[k] for k in order], color=cols)
for i, k in enumerate(order):
    if ceil and k != "ceiling":
        ax.text(i, r[k], "%.2f x" % (r[k] / ceil), ha="center", va="bottom", fontsize=8)
ax.set_xticks(range(len(order)))
ax.set_xticklabels(order, rotation=20, ha="right")
ax.set_ylabel("MB/s")
ax.set_title("Merged output: one %s MB file from %s processes, 4 x %s links" % (mb, np_, rate))
fig.tight_layout()
fig.savefig(out_png, dpi=100)
print("wrote %s and %s" % (out_csv, out_png))
EOF
