#!/usr/bin/env bash
# anco.sh - the published experiments of anco (issues 12 and 31), reproduced
# on the test bed: reader processes on H compute hosts read a file that
# lives behind one 100 Mbit/s link (the storage bottleneck), with plain
# POSIX reads, through anco (the job's pooled cache) and, for the strided
# pattern, through MPI-IO collective reads.
# SPDX-License-Identifier: BSD-3-Clause
#
# Bed (tests/testbed/pio-testbed, one link per host, all on one switch):
#   h2       the storage host: piod B exporting the folder of the files (its
#            file service), an sshd; its one link is shaped to
#            ANCO_BENCH_RATE (100mbit) each way: every byte of the file, for
#            every compute host, crosses that ONE link (the storage
#            bottleneck, shared by all hosts).
#   h1, h3, h4, ... the compute hosts (as many as the largest H): their
#            links run at ANCO_BENCH_NET (1gbit), the job's network. piod A
#            runs in h1.
# The storage link's ceiling is measured in the same run: iperf3, one TCP
# stream h2 -> h1 (-R: the way the file's bytes go); the compute network's
# (h3 -> h1) is printed for reference.
#   POSIX    seq: each compute host mounts h2's folder with its own sshfs, at
#            sshfs's defaults as a user would (no direct_io: the host's page
#            cache is shared by its processes); each host's readers
#            open(2) and pread(2) through their host's mount. So the file
#            crosses the storage link once per host. random and strided (one
#            host, h1): one sshfs mount with direct_io and sshfs's caches off
#            (SSHFS_OPTS; the published setting: each process acts as a
#            separate node with a cold cache). `pio-testbed exec` gives each
#            command a mount namespace of its own, so one shell per host
#            mounts, starts that host's readers and unmounts.
#   anco     the readers open pio://B/FILE: the file on B's PIO file
#            service (PIO_Rfile over the storage link, the slow backing
#            store); the cache windows are read with one-sided gets between
#            the readers. seq: the readers of every host run with
#            UCX_TLS=tcp, so a get between hosts crosses both hosts' links
#            (UCX would otherwise take shared memory between namespaces of
#            one machine: ENVIRONMENT.md); and so does a get between two
#            processes of one host (loopback tcp: pessimistic for a real
#            node, which would use shared memory). random and strided (one
#            host): UCX_TLS=sm,tcp (ANCO_BENCH_UCX_TLS): shared memory
#            among the readers, tcp to h2. The piods, and so the file
#            service, run with UCX_TLS=tcp. Every reader joins piod A through
#            its Unix socket (shared by the namespaces, like the file
#            system): piod routes a message to an application that has a
#            process on its own host to this host only, so a job whose
#            processes joined one piod per host could not send its window
#            requests (ASK/DESC) to its processes on other hosts. Only those
#            few control messages use A's socket; every get and atomic
#            crosses the links (docs/design-notes.md, "Issue 31, anco across
#            hosts").
#   MPI-IO   `mpirun --mca io romio321 -np N bench/anco-read-mpi` in h1 over
#            the direct_io sshfs mount: MPI_File_read_at_all (ROMIO's
#            two-phase collective buffering, romio_cb_read=enable).
# One process = one rank; rank r runs on compute host r % H (round robin,
# mpirun's --map-by node). The processes are started at once: they open
# the file, then wait for a start file that appears when all N have opened
# (anco: then also anco_barrier). Aggregate bandwidth = the bytes delivered
# to all processes / (the last process's end - the first process's start),
# in MB/s (10^6 B/s, as iperf3; one clock: one machine). Every read is
# checked word by word against the file's pattern (anco-read gen); a wrong
# byte fails the run and the script (exit 1). The bytes h2 sent over its
# link are counted for every run ("link x file": / the file's size), and
# the machine's CPU busy fraction during it (/proc/stat; 1.00 = both cores
# all the time), the measured reason beside a MISS.
#
# Experiments:
#   seq      (H, N) in ANCO_BENCH_SEQ ("2:2 2:4 4:4 4:8 8:8 8:16 2:16",
#            H:N): N processes on H hosts, N / H per host, all read the whole
#            file from its start in 256 KiB reads: POSIX (per-host sshfs),
#            anco with 1 group and with H groups (one per host: group = rank
#            % H = the host), anco's default cache (64 MiB per process).
#            Targets, PASS/MISS per anco run: aggregate >= 0.8 x N x the
#            storage link's ceiling, and file-system reads per block
#            (anco's fs + uncached counts summed over the processes, / the
#            file's blocks) <= the number of groups.
#   random   one host (h1), N = 8, 1 MiB reads at whole 1 MiB units chosen
#            at random, ANCO_BENCH_UNITS (32) per process, a cache of 8 MiB
#            per process (64 MiB in all) over files of 16, 64 and 256 MiB
#            (0.25x, 1x, 4x the aggregate cache; ANCO_BENCH_RANDOM_MIB), the
#            singlet ratio swept 0, 0.25, 0.5, 0.75, 0.9 (1 group); POSIX
#            once per file. The hit mix (local / remote / file system, from
#            anco_print_stats) per run.
#   strided  one host (h1), IOR-like: N = 8, transfers of 16 KiB, 256 KiB and
#            4 MiB; process i reads transfers i, i + N, i + 2N ... of the seq
#            file (once in all): anco 1 and 4 groups, POSIX over sshfs,
#            MPI-IO collective over sshfs.
#
# Scaled down: the issue's file is 1 GiB; at 100 Mbit/s one read of it takes
# 90 s, and POSIX reads it once per host. The default file is 128 MiB
# (ANCO_BENCH_MB; ANCO_BENCH_MB=1024 is the full-size run, about 8 x
# longer), which keeps the whole script near 20 min on 2 cores.
#
# Output: a table per experiment, PASS/MISS lines; bench/results/anco_seq.csv,
# anco_random.csv, anco_strided.csv and anco_seq.png, anco_random.png,
# anco_strided.png. Needs root (skipped otherwise).
# Exit status: 0 when every run completed and read the right bytes (a MISS
# is reported, not an error) or when skipped; 1 otherwise.
# Environment: BUILD (build/default), ANCO_BENCH_MB (128), ANCO_BENCH_RATE
# (100mbit: the storage link), ANCO_BENCH_NET (1gbit: the compute hosts'
# links), ANCO_BENCH_PARTS ("seq random strided"), ANCO_BENCH_SEQ (H:N
# pairs, above), ANCO_BENCH_MODES ("posix anco mpiio": a quick look at
# some; the tables then hold those only), ANCO_BENCH_SEQ_CACHE (anco's
# default), ANCO_BENCH_RANDOM_MIB ("16 64 256"), ANCO_BENCH_SINGLETS ("0 0.25
# 0.5 0.75 0.9"), ANCO_BENCH_UNITS (32), ANCO_BENCH_RANDOM_CACHE (8M),
# ANCO_BENCH_XFERS ("16K 256K 4M"), ANCO_BENCH_UCX_TLS (sm,tcp: one-host
# runs), SSHFS_OPTS (the direct_io mount's options after the key),
# ANCO_BENCH_SEQ_SSHFS (the per-host mounts' options, default none),
# PIO_BENCH_RESULTS (bench/results), PIO_PIOD_FLAGS (extra piod flags).
set -u
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
MB=${ANCO_BENCH_MB:-128}
RATE=${ANCO_BENCH_RATE:-100mbit}
NET=${ANCO_BENCH_NET:-1gbit}
PARTS=" ${ANCO_BENCH_PARTS:-seq random strided} "
MODES=" ${ANCO_BENCH_MODES:-posix anco mpiio} "
SEQ_HN=${ANCO_BENCH_SEQ:-2:2 2:4 4:4 4:8 8:8 8:16 2:16}
SEQ_CACHE=${ANCO_BENCH_SEQ_CACHE:-}
RAND_MIB=${ANCO_BENCH_RANDOM_MIB:-16 64 256}
SINGLETS=${ANCO_BENCH_SINGLETS:-0 0.25 0.5 0.75 0.9}
UNITS=${ANCO_BENCH_UNITS:-32}
RAND_CACHE=${ANCO_BENCH_RANDOM_CACHE:-8M}
XFERS=${ANCO_BENCH_XFERS:-16K 256K 4M}
UCX_TLS_BENCH=${ANCO_BENCH_UCX_TLS:-sm,tcp}
SSHFS_OPTS=${SSHFS_OPTS:-direct_io,dir_cache=no,Ciphers=aes128-gcm@openssh.com,Compression=no}
SEQ_SSHFS=${ANCO_BENCH_SEQ_SSHFS:-}
STRIDE_CACHE=32M # the strided runs' anco cache per process (as before)
NRAND=8          # processes of the random experiment
NSTRIDE=8        # and of the strided one
G4=4             # the strided "4 groups" runs
READ=$BUILD/bench/anco-read
READ_MPI=$BUILD/bench/anco-read-mpi
want() { [[ $PARTS == *" $1 "* ]]; }
mode_on() { [[ $MODES == *" $1 "* ]]; }

bench_root skip
bench_need "$READ" "$READ_MPI" "$BUILD/sbin/piod" "$BUILD/sbin/pio-files" "$BUILD/bin/pio-info" mpirun iperf3 sshd sshfs \
  fusermount3 mountpoint || exit 1
[[ $MB =~ ^[0-9]+$ ]] && [ "$MB" -ge 16 ] && [ $((MB % 16)) -eq 0 ] ||
  { echo "$SCRIPT: ANCO_BENCH_MB=$MB: a whole number of MiB, a multiple of 16" >&2; exit 1; }
HMAX=1
if want seq; then
  for p in $SEQ_HN; do
    [[ $p =~ ^([0-9]+):([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -ge 1 ] && [ "${BASH_REMATCH[1]}" -le 32 ] &&
      [ "${BASH_REMATCH[2]}" -ge "${BASH_REMATCH[1]}" ] ||
      { echo "$SCRIPT: ANCO_BENCH_SEQ: '$p' is not H:N with 1 <= H <= 32 and N >= H" >&2; exit 1; }
    [ "${BASH_REMATCH[1]}" -gt "$HMAX" ] && HMAX=${BASH_REMATCH[1]}
  done
fi
# the compute hosts: h1, then h3, h4, ... (h2 is the storage host)
CHOSTS=(h1)
for ((i = 3; i <= HMAX + 1; i++)); do CHOSTS+=("h$i"); done

t_start=$(date +%s)
bench_work
cleanup() {
  # an sshfs lives in the mount namespace of its `pio-testbed exec`:
  # ending it unmounts
  local f
  for f in "$work"/sshfs.*.pid; do [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
  bench_cleanup
}
trap cleanup EXIT

bench_banner "; compute hosts ${CHOSTS[*]} (links at $NET) <- h2 (storage) over ONE link at $RATE"
echo "   SCALED DOWN: the sequential and strided file is $MB MiB (the issue: 1 GiB;" \
  "ANCO_BENCH_MB=1024 for the full size, ~8 x longer)"
bench_bed_up anc $((HMAX + 1)) 1 "$NET" || exit 1
"$TB" rate "$bed" h2 0 "$RATE" || exit 1
# UCX and sshfs want the link's carrier up when a process starts
for h in h2 "${CHOSTS[@]}"; do
  for ((i = 0; i < 100; i++)); do
    [ "$("$TB" exec "$bed" "$h" cat /sys/class/net/eth0/carrier 2>/dev/null)" = 1 ] && break
    sleep 0.1
  done
done
mkdir -p "$work/exp" "$work/mnt"
"$READ" gen "$work/exp/seq.bin" "$MB" || exit 1
if want random; then
  for m in $RAND_MIB; do "$READ" gen "$work/exp/r$m.bin" "$m" || exit 1; done
fi

echo "-- the storage link's ceiling: iperf3, 1 TCP stream h2 -> h1, 8 s"
iperf_servers 0 || exit 1
"$TB" exec "$bed" h1 timeout 60 iperf3 -J -R -t 8 -B "$("$TB" addr "$bed" h1 0)" \
  -c "$("$TB" addr "$bed" h2 0)" -p 5201 >"$work/ceil.json" 2>"$work/ceil.err"
LINK=$(iperf_rate "$work/ceil.json") || { cat "$work/ceil.err" >&2; exit 1; }
echo "   ceiling: $LINK MB/s"
NETRATE=-
if [ "$HMAX" -gt 1 ]; then
  echo "-- the compute network (for reference): iperf3, 1 TCP stream h3 -> h1, 4 s"
  a1=$("$TB" addr "$bed" h1 0)
  "$TB" exec "$bed" h1 iperf3 -s -1 -D -B "$a1" -p 5301 && bench_wait_listen h1 "$a1" 5301 &&
    "$TB" exec "$bed" h3 timeout 60 iperf3 -J -t 4 -c "$a1" -p 5301 >"$work/net.json" 2>"$work/net.err" &&
    NETRATE=$(iperf_rate "$work/net.json") || { cat "$work/net.err" >&2; exit 1; }
  echo "   compute network: $NETRATE MB/s"
fi

# the piods, and so B's file service, use UCX over tcp only: whatever the
# readers allow, the file's bytes from h2 cannot take shared memory
export UCX_TLS=tcp
bench_piods "$work/pio" 1 "$work/exp" || { echo "$SCRIPT: the piods did not come up" >&2; exit 1; }
sshd_start "$work" || { echo "$SCRIPT: sshd failed" >&2; exit 1; }
echo "   piods: A in h1 (every reader joins it), B in h2 exporting $work/exp; sshd in h2 on" \
  "$SSH_ADDR:2222"

# The launcher, run in one compute host by one `pio-testbed exec` per host:
# $1 scratch folder, $2 run tag, $3 N (0: run the command once: mpirun),
# $4 this host's ranks (comma-separated), $5 host name, $6 sshfs source
# ("" : no mount), $7 sshfs options ("": sshfs's defaults), then ssh
# options, --, the command. With N > 0 it starts the command for each of
# its ranks with --rank R --size N --start-file, output in TAG.R.out;
# creates the start file once all N (of every host) have opened their file;
# a copy that fails ends this host's others and creates TAG.start.fail,
# which ends every other host's copies too.
# shellcheck disable=SC2016
launch='w=$1 tag=$2 n=$3 ranks=$4 host=$5 src=$6 opts=$7
  shift 7
  ssho=()
  while [ "$1" != -- ]; do ssho+=("$1"); shift; done
  shift
  if [ -n "$src" ]; then
    [ -n "$opts" ] && ssho+=(-o "$opts")
    sshfs "$src" "$w/mnt" -f -p 2222 "${ssho[@]}" </dev/null &
    echo $! >"$w/sshfs.$host.pid"
    for i in $(seq 100); do mountpoint -q "$w/mnt" && break; sleep 0.1; done
    mountpoint -q "$w/mnt" || { echo "sshfs did not mount $src in $host"; kill "$(cat "$w/sshfs.$host.pid")"; touch "$w/$tag.start.fail"; exit 1; }
  fi
  rc=0
  if [ "$n" = 0 ]; then
    "$@" >"$w/$tag.0.out" 2>&1 </dev/null || rc=1
  else
    st=$w/$tag.start
    pids=()
    for r in ${ranks//,/ }; do
      "$@" --rank "$r" --size "$n" --start-file "$st" >"$w/$tag.$r.out" 2>&1 </dev/null &
      pids+=($!)
    done
    while [ "$(ls "$st".ready.* 2>/dev/null | wc -l)" -lt "$n" ] && [ ! -e "$st.fail" ]; do
      alive=0
      for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
      [ "$alive" -lt ${#pids[@]} ] && break
      sleep 0.01
    done
    touch "$st"
    left=("${pids[@]}")
    while [ ${#left[@]} -gt 0 ]; do
      rest=()
      for p in "${left[@]}"; do
        if kill -0 "$p" 2>/dev/null; then rest+=("$p"); elif ! wait "$p"; then rc=1; fi
      done
      left=("${rest[@]}")
      [ "$rc" != 0 ] && touch "$st.fail"
      [ -e "$st.fail" ] && [ ${#left[@]} -gt 0 ] && kill "${left[@]}" 2>/dev/null
      sleep 0.1
    done
  fi
  if [ -n "$src" ]; then
    fusermount3 -u "$w/mnt" || rc=1
    wait
  fi
  exit $rc'

# summary TAG N: "seconds bytes local remote fs retries stale evictions
# polls uncached" over the N outputs TAG.R.out (the first start to the last
# end; anco's counters summed); fails if an output lacks its OK line.
summary() {
  "$PY" - "$work" "$1" "$2" <<'EOF'
import re, sys
w, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
t0, t1, tot = [], [], 0
st = [0] * 8
for r in range(n):
    txt = open("%s/%s.%d.out" % (w, tag, r)).read()
    m = re.search(r"^OK anco-read .*bytes=(\d+) .*t0=([\d.]+) t1=([\d.]+)", txt, re.M)
    if not m:
        sys.exit("%s rank %d: no OK line" % (tag, r))
    tot += int(m.group(1)); t0.append(float(m.group(2))); t1.append(float(m.group(3)))
    m = re.search(r"^anco: rank \d+: local (\d+) remote (\d+) fs (\d+) retries (\d+) stale (\d+) "
                  r"evictions (\d+) polls (\d+) uncached (\d+)", txt, re.M)
    if m:
        st = [a + int(b) for a, b in zip(st, m.groups())]
print("%.6f %d %s" % (max(t1) - min(t0), tot, " ".join(map(str, st))))
EOF
}

# cpu_ticks: "busy total" jiffies of the whole machine so far (/proc/stat:
# every process of every host: readers, piods, sshfs, the kernel's tcp)
cpu_ticks() { awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t }' /proc/stat; }

# tx_bytes: the bytes h2 (the storage host) has sent over its link so far
# (what crossed it toward the compute hosts: the file's bytes and the
# protocols' own)
tx_bytes() { "$TB" exec "$bed" h2 cat /sys/class/net/eth0/statistics/tx_bytes; }

fail=0
runno=0
# run EXP MODE GROUPS H N FILEBYTES XFER SINGLET PATTERN-ARGS...: one run of
# N readers over the first H compute hosts (rank r on host r % H); prints a
# line and appends it to $work/rows. MODE posix or anco. POSIX: seq mounts
# sshfs per host at ANCO_BENCH_SEQ_SSHFS, the others at SSHFS_OPTS; anco:
# seq with UCX_TLS=tcp, the others with ANCO_BENCH_UCX_TLS.
run() {
  local exp=$1 mode=$2 g=$3 nh=$4 n=$5 fbytes=$6 xfer=$7 sing=$8 tag rc s src="" opts cmd tx0 tx j r
  local ranks lp=() tls=$UCX_TLS_BENCH c0 c1 busy
  shift 8
  mode_on "$mode" || return 0
  runno=$((runno + 1))
  tag=r$runno
  opts=$SSHFS_OPTS
  if [ "$exp" = seq ]; then opts=$SEQ_SSHFS tls=tcp; fi
  if [ "$mode" = posix ]; then
    src=root@$SSH_ADDR:$work/exp
    cmd=(env -u UCX_TLS timeout -k 5 1800 "$READ" --mode posix "$@")
  else
    cmd=(env PIO_SOCKET="$work/pio/A.sock" UCX_TLS="$tls" ANCO_BARRIER_TIMEOUT=120
      timeout -k 5 1800 "$READ" --mode anco --app "anco$runno" --groups "$g" "$@")
  fi
  tx0=$(tx_bytes)
  c0=$(cpu_ticks)
  rc=0
  for ((j = 0; j < nh; j++)); do
    ranks=""
    for ((r = j; r < n; r += nh)); do ranks+="${ranks:+,}$r"; done
    "$TB" exec "$bed" "${CHOSTS[j]}" bash -c "$launch" launch "$work" "$tag" "$n" "$ranks" "${CHOSTS[j]}" \
      "$src" "$opts" "${SSHO[@]}" -- "${cmd[@]}" </dev/null &
    lp+=($!)
  done
  for j in "${lp[@]}"; do wait "$j" || rc=1; done
  c1=$(cpu_ticks)
  tx=$(($(tx_bytes) - tx0))
  busy=$("$PY" -c "import sys; a, b, c, d = map(int, sys.argv[1:]); print('%.2f' % ((c - a) / max(d - b, 1)))" \
    $c0 $c1)
  if [ "$rc" -ne 0 ] || ! s=$(summary "$tag" "$n"); then
    echo "FAIL: $exp $mode groups=$g H=$nh N=$n xfer=$xfer singlet=$sing: a reader failed (exit $rc):" >&2
    for ((r = 0; r < n; r++)); do grep -H -v '^OK\|^anco: rank' "$work/$tag.$r.out" >&2; done
    echo "  (piod logs: $work/pio/A.log, B.log)" >&2
    tail -n 5 "$work/pio/A.log" "$work/pio/B.log" >&2
    fail=1
    return 1
  fi
  read -r secs bytes rest <<<"$s"
  printf '   %-8s %-6s H=%-2s g=%-2s N=%-3s %4d MiB xfer %-5s singlet %-4s %7.2f s %8.2f MB/s link %6.1f MB cpu %s  [l r fs ret stale ev polls unc: %s]\n' \
    "$exp" "$mode" "$nh" "$g" "$n" $((fbytes >> 20)) "$xfer" "$sing" "$secs" "$("$PY" -c "print($bytes / $secs / 1e6)")" \
    "$("$PY" -c "print($tx / 1e6)")" "$busy" "$rest"
  echo "$exp $mode $g $n $fbytes $xfer $sing $tx $s $nh $busy" >>"$work/rows"
  rm -f "$work/$tag".*
}

# run_mpi XFER: the strided pattern by anco-read-mpi in h1 over the sshfs mount
run_mpi() {
  local x=$1 tag line tx0 tx
  mode_on mpiio || return 0
  runno=$((runno + 1))
  tag=r$runno
  tx0=$(tx_bytes)
  "$TB" exec "$bed" h1 bash -c "$launch" launch "$work" "$tag" 0 0 h1 "root@$SSH_ADDR:$work/exp" "$SSHFS_OPTS" \
    "${SSHO[@]}" -- env -u UCX_TLS timeout -k 5 1800 mpirun --allow-run-as-root --oversubscribe --mca io romio321 \
    --mca mpi_yield_when_idle 1 -np "$NSTRIDE" "$READ_MPI" --xfer "$x" "$work/mnt/seq.bin" </dev/null
  tx=$(($(tx_bytes) - tx0))
  line=$(grep -m1 '^OK anco-read-mpi' "$work/$tag.0.out")
  if [[ ! $line =~ bytes=([0-9]+).*seconds=([0-9.]+) ]]; then
    echo "FAIL: strided mpiio xfer=$x:" >&2
    sed 's/^/  | /' "$work/$tag.0.out" >&2
    fail=1
    return 1
  fi
  printf '   %-8s %-6s H=%-2s g=%-2s N=%-3s %4d MiB xfer %-5s singlet %-4s %7.2f s %8.2f MB/s link %6.1f MB\n' \
    strided mpiio 1 - "$NSTRIDE" "$MB" "$x" - "${BASH_REMATCH[2]}" \
    "$("$PY" -c "print(${BASH_REMATCH[1]} / ${BASH_REMATCH[2]} / 1e6)")" "$("$PY" -c "print($tx / 1e6)")"
  echo "strided mpiio 0 $NSTRIDE $((MB << 20)) $x - $tx ${BASH_REMATCH[2]} ${BASH_REMATCH[1]} 0 0 0 0 0 0 0 0 1 -" \
    >>"$work/rows"
  rm -f "$work/$tag".*
}

: >"$work/rows"
SEQ=$((MB << 20))
seq_cache=()
SEQ_CACHE_TXT="anco's default (64 MiB)"
[ -n "$SEQ_CACHE" ] && seq_cache=(--cache "$SEQ_CACHE") SEQ_CACHE_TXT=$SEQ_CACHE
if want seq; then
  echo "-- sequential shared read: $MB MiB from the start in 256 KiB reads by each of N processes on" \
    "H hosts; anco cache $SEQ_CACHE_TXT per process, UCX_TLS=tcp"
  for p in $SEQ_HN; do
    nh=${p%:*} n=${p#*:}
    run seq posix 0 "$nh" "$n" "$SEQ" 256K - --pattern seq --xfer 256K "$work/mnt/seq.bin" || exit 1
    gs=1
    [ "$nh" -gt 1 ] && gs="1 $nh"
    for g in $gs; do
      run seq anco "$g" "$nh" "$n" "$SEQ" 256K - --pattern seq --xfer 256K "${seq_cache[@]}" \
        pio://B/seq.bin || exit 1
    done
  done
fi
if want random; then
  echo "-- random read (h1): N=$NRAND, $UNITS reads of 1 MiB units each, cache $RAND_CACHE per process," \
    "1 group; files $RAND_MIB MiB"
  for m in $RAND_MIB; do
    run random posix 0 1 "$NRAND" $((m << 20)) 1M - --pattern random --xfer 1M --units "$UNITS" \
      "$work/mnt/r$m.bin" || exit 1
    for s in $SINGLETS; do
      run random anco 1 1 "$NRAND" $((m << 20)) 1M "$s" --pattern random --xfer 1M --units "$UNITS" \
        --cache "$RAND_CACHE" --singlet "$s" "pio://B/r$m.bin" || exit 1
    done
  done
fi
if want strided; then
  echo "-- strided read (IOR-like, h1): N=$NSTRIDE, process i reads transfers i, i+N, ... of the" \
    "$MB MiB file; anco cache $STRIDE_CACHE per process"
  for x in $XFERS; do
    run strided posix 0 1 "$NSTRIDE" "$SEQ" "$x" - --pattern strided --xfer "$x" "$work/mnt/seq.bin" || exit 1
    run_mpi "$x" || exit 1
    for g in 1 "$G4"; do
      run strided anco "$g" 1 "$NSTRIDE" "$SEQ" "$x" - --pattern strided --xfer "$x" --cache "$STRIDE_CACHE" \
        pio://B/seq.bin || exit 1
    done
  done
fi
[ $fail -eq 0 ] || { echo "$SCRIPT: FAILED: not every run completed" >&2; exit 1; }

mkdir -p "$RESULTS"
"$PY" - "$work/rows" "$RESULTS" "$LINK" "$RATE" "$MB" "$SEQ_CACHE_TXT" "$RAND_CACHE" "$UNITS" \
  "$SSHFS_OPTS" "$NET" "$NETRATE" "${SEQ_SSHFS:-(sshfs defaults)}" "$STRIDE_CACHE" <<'EOF'
import csv, os, sys
(rows_f, out, link, rate, mb, seq_cache, rand_cache, units, sshfs_opts, net, netrate, seq_sshfs,
 stride_cache) = sys.argv[1:14]
link, mb = float(link), int(mb)
BLOCK = 1 << 20  # anco's default block
STATS = ["local", "remote", "fs", "retries", "stale", "evictions", "polls", "uncached"]
rows = []
for l in open(rows_f):
    p = l.split()
    r = dict(exp=p[0], mode=p[1], groups=int(p[2]), n=int(p[3]), fbytes=int(p[4]), xfer=p[5],
             singlet=p[6], link_bytes=int(p[7]), s=float(p[8]), bytes=int(p[9]), hosts=int(p[18]),
             cpu=p[19] if len(p) > 19 else "-")
    r.update(zip(STATS, map(int, p[10:18])))
    r["x_file"] = r["link_bytes"] / r["fbytes"]
    r["mbs"] = r["bytes"] / r["s"] / 1e6
    rows.append(r)

def label(r):
    return {"posix": "POSIX (sshfs)", "mpiio": "MPI-IO coll."}.get(
        r["mode"], "anco %d group%s" % (r["groups"], "" if r["groups"] == 1 else "s"))

def mix(r):
    t = r["local"] + r["remote"] + r["fs"]
    return "%5.1f%% %5.1f%% %5.1f%%" % tuple(100.0 * r[k] / t for k in ("local", "remote", "fs")) \
        if t else "%6s %6s %6s" % ("-", "-", "-")

written = []

def write_csv(name, rs, extra):
    written.append(name)
    with open(os.path.join(out, name), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mode", "hosts", "groups", "procs", "file_bytes", "xfer", "singlet", "seconds",
                    "bytes", "aggregate_MBps", "link_MBps", "x_link", "link_tx_bytes", "cpu_busy"] + extra
                   + STATS)
        for r in rs:
            w.writerow([r["mode"], r["hosts"], r["groups"], r["n"], r["fbytes"], r["xfer"],
                        r["singlet"], "%.3f" % r["s"], r["bytes"], "%.3f" % r["mbs"], "%.3f" % link,
                        "%.3f" % (r["mbs"] / link), r["link_bytes"], r["cpu"]] +
                       [r.get(k, "") for k in extra] + [r[k] for k in STATS])

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    plt = None
    print("note: no matplotlib: plots not drawn")

print()
print("anco benchmark: compute hosts (links at %s; h3 -> h1 iperf3 %s MB/s) <- h2 (storage) over "
      "ONE link at %s; its ceiling (iperf3, 1 TCP stream) %.2f MB/s; MB/s = 10^6 B/s"
      % (net, netrate, rate, link))
print("SCALED DOWN: sequential/strided file %d MiB (the issue: 1024 MiB; ANCO_BENCH_MB=1024 for "
      "the full size)" % mb)

seq = [r for r in rows if r["exp"] == "seq"]
if seq:
    print()
    print("Sequential shared read: N processes on H hosts (rank r on host r %% H) each read the "
          "whole %d MiB file in 256 KiB reads" % mb)
    print("benchmark settings: anco cache %s per process, block 1 MiB (default), groups 1 and H "
          "(group = host), UCX_TLS=tcp for every reader; POSIX: one sshfs mount per host, -o %s "
          "(page cache on)" % (seq_cache, seq_sshfs))
    hdr = "%3s %4s %-16s %9s %10s %8s %10s %12s %9s %5s   %-22s" % (
        "H", "N", "mode", "seconds", "agg. MB/s", "x link", "x N link", "link x file",
        "fs/block", "CPU", "local  remote  fs")
    print(hdr)
    print("-" * len(hdr))
    blocks = (mb << 20) // BLOCK
    for r in seq:
        r["x_n_link"] = "%.3f" % (r["mbs"] / (r["n"] * link))
        r["link_x_file"] = "%.2f" % r["x_file"]
        r["fs_per_block"] = "%.3f" % ((r["fs"] + r["uncached"]) / blocks) if r["mode"] == "anco" else ""
        print("%3d %4d %-16s %9.2f %10.2f %8.2f %10s %12s %9s %5s   %s" % (
            r["hosts"], r["n"], label(r), r["s"], r["mbs"], r["mbs"] / link, r["x_n_link"],
            r["link_x_file"], r["fs_per_block"] or "-", r["cpu"], mix(r)))
    print("(link x file: the bytes h2 sent over the storage link / the file's size; fs/block: "
          "anco's file-system reads (fs + uncached, summed over the processes) / the file's %d "
          "blocks; CPU: the machine's 2 cores busy during the run, 1.00 = both all the time)" % blocks)
    write_csv("anco_seq.csv", seq, ["x_n_link", "link_x_file", "fs_per_block"])
    for r in seq:
        if r["mode"] != "anco":
            continue
        x = float(r["x_n_link"])
        print("%s: sequential shared read, H=%d hosts, N=%d, anco %d group%s: %.2f MB/s = %.3f x N "
              "x link (target >= 0.8; %.2f s against the link's %.2f s for the file, link x file "
              "%s, CPU busy %s)" % ("PASS" if x >= 0.8 else "MISS", r["hosts"], r["n"], r["groups"],
                                    "" if r["groups"] == 1 else "s", r["mbs"], x, r["s"],
                                    r["fbytes"] / 1e6 / link, r["link_x_file"], r["cpu"]))
        f = float(r["fs_per_block"])
        print("%s: sequential shared read, H=%d hosts, N=%d, anco %d group%s: file-system reads per "
              "block %.3f (target <= %d, the groups)" % ("PASS" if f <= r["groups"] else "MISS",
                                                         r["hosts"], r["n"], r["groups"],
                                                         "" if r["groups"] == 1 else "s", f,
                                                         r["groups"]))
    p = [r for r in seq if r["mode"] == "posix"]
    if p:
        print("note: POSIX (per-host sshfs, page cache): %s x link for (H, N) = %s; link x file %s"
              % (", ".join("%.2f" % (r["mbs"] / link) for r in p),
                 ", ".join("(%d, %d)" % (r["hosts"], r["n"]) for r in p),
                 ", ".join(r["link_x_file"] for r in p)))
    if plt:
        cases = []
        for r in seq:
            if (r["hosts"], r["n"]) not in cases:
                cases.append((r["hosts"], r["n"]))
        keys = [("posix", "POSIX (sshfs per host, page cache)"), ("anco1", "anco, 1 group"),
                ("ancoH", "anco, H groups (one per host)")]
        fig, ax = plt.subplots(figsize=(9, 4.8))
        wd = 0.8 / len(keys)
        for j, (k, lab) in enumerate(keys):
            xs, ys = [], []
            for i, c in enumerate(cases):
                for r in seq:
                    if (r["hosts"], r["n"]) != c:
                        continue
                    kk = "posix" if r["mode"] == "posix" else ("anco1" if r["groups"] == 1 else "ancoH")
                    if kk == k:
                        xs.append(i + j * wd)
                        ys.append(r["mbs"] / link)
            if xs:
                ax.bar(xs, ys, wd, label=lab)
        mid = [i + wd * (len(keys) - 1) / 2 for i in range(len(cases))]
        ax.plot(mid, [0.8 * n for _, n in cases], "k_", ms=28, mew=2, ls="none",
                label="target 0.8 x N x link")
        ax.plot(mid, [n for _, n in cases], "_", color="grey", ms=28, mew=1, ls="none",
                label="N x link")
        ax.set_xticks(mid)
        ax.set_xticklabels(["H=%d\nN=%d" % c for c in cases])
        ax.set_ylabel("aggregate / storage link's ceiling")
        ax.set_title("anco across hosts: sequential shared read of %d MiB, storage link %s "
                     "(%.1f MB/s)" % (mb, rate, link), fontsize=10)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "anco_seq.png"), dpi=100)
        written.append("anco_seq.png")

rnd = [r for r in rows if r["exp"] == "random"]
if rnd:
    agg = 8 * (int(rand_cache.rstrip("Mm")) if rand_cache[-1] in "Mm" else int(rand_cache) >> 20)
    print()
    print("Random read, one host (h1): N=8, %s reads of 1 MiB units each; anco cache %s per process "
          "(%d MiB in all), 1 group, UCX_TLS=sm,tcp; POSIX: sshfs -o %s" % (units, rand_cache, agg,
                                                                             sshfs_opts))
    hdr = "%8s %7s %-14s %8s %9s %10s %8s %8s   %-22s %8s" % (
        "file MiB", "x cache", "mode", "singlet", "seconds", "agg. MB/s", "x link", "link MB",
        "local  remote  fs", "evict.")
    print(hdr)
    print("-" * len(hdr))
    for r in rnd:
        r["file_x_cache"] = "%.2f" % (r["fbytes"] / 2**20 / agg)
        print("%8d %7s %-14s %8s %9.2f %10.2f %8.2f %8.1f   %s %8s" % (
            r["fbytes"] >> 20, r["file_x_cache"], label(r), r["singlet"], r["s"], r["mbs"],
            r["mbs"] / link, r["link_bytes"] / 1e6, mix(r),
            r["evictions"] if r["mode"] == "anco" else "-"))
    print("(link MB: bytes h2 sent over the storage link; each run reads %d x 8 MiB = %d MiB in all)"
          % (int(units), int(units) * 8))
    write_csv("anco_random.csv", rnd, ["file_x_cache"])
    files = sorted({r["fbytes"] for r in rnd})
    for fb in files:
        a = [r for r in rnd if r["fbytes"] == fb and r["mode"] == "anco"]
        if a:
            b = max(a, key=lambda r: r["mbs"])
            print("note: %d MiB file: the best singlet ratio %s (%.2f MB/s; the published optimum 0.5)"
                  % (fb >> 20, b["singlet"], b["mbs"]))
    if plt:
        fig, ax = plt.subplots(1, 2, figsize=(12, 4.5))
        for i, fb in enumerate(files):
            a = [r for r in rnd if r["fbytes"] == fb and r["mode"] == "anco"]
            p = [r for r in rnd if r["fbytes"] == fb and r["mode"] == "posix"]
            line = ax[0].plot([float(r["singlet"]) for r in a], [r["mbs"] for r in a], "o-",
                              label="anco, %d MiB (%.2g x cache)" % (fb >> 20, fb / 2**20 / agg))
            if p:
                ax[0].axhline(p[0]["mbs"], ls="--", color=line[0].get_color(), lw=0.8,
                              label="POSIX, %d MiB" % (fb >> 20))
        ax[0].set_xlabel("singlet ratio")
        ax[0].set_ylabel("aggregate MB/s")
        ax[0].set_title("random 1 MiB reads, N=8, %d MiB cache in all" % agg)
        ax[0].legend(fontsize=7)
        a = [r for r in rnd if r["mode"] == "anco"]
        xs = range(len(a))
        tot = [max(r["local"] + r["remote"] + r["fs"], 1) for r in a]
        bottom = [0.0] * len(a)
        for k, c in (("local", "#4a7"), ("remote", "#47a"), ("fs", "#a74")):
            v = [100.0 * r[k] / t for r, t in zip(a, tot)]
            ax[1].bar(xs, v, bottom=bottom, color=c, label=k)
            bottom = [b + x for b, x in zip(bottom, v)]
        ax[1].set_xticks(list(xs))
        ax[1].set_xticklabels(["%dM s=%s" % (r["fbytes"] >> 20, r["singlet"]) for r in a],
                              rotation=60, ha="right", fontsize=7)
        ax[1].set_ylabel("% of blocks read")
        ax[1].set_title("hit mix")
        ax[1].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "anco_random.png"), dpi=100)
        written.append("anco_random.png")

st = [r for r in rows if r["exp"] == "strided"]
if st:
    print()
    print("Strided read (IOR-like), one host (h1): N=8, process i reads transfers i, i+8, ... of the "
          "%d MiB file; anco cache %s per process, UCX_TLS=sm,tcp; POSIX and MPI-IO: sshfs -o %s"
          % (mb, stride_cache, sshfs_opts))
    hdr = "%8s %-16s %9s %10s %8s %12s   %-22s" % ("xfer", "mode", "seconds", "agg. MB/s", "x link",
                                                  "link x file", "local  remote  fs")
    print(hdr)
    print("-" * len(hdr))
    for r in st:
        r["link_x_file"] = "%.2f" % r["x_file"]
        print("%8s %-16s %9.2f %10.2f %8.2f %12s   %s" % (
            r["xfer"], label(r), r["s"], r["mbs"], r["mbs"] / link, r["link_x_file"],
            mix(r) if r["mode"] == "anco" else ""))
    print("(link x file: the bytes h2 sent over the storage link / the file's size)")
    write_csv("anco_strided.csv", st, ["link_x_file"])
    if plt:
        xfers = []
        for r in st:
            if r["xfer"] not in xfers:
                xfers.append(r["xfer"])
        keys = []
        for r in st:
            if label(r) not in keys:
                keys.append(label(r))
        fig, ax = plt.subplots(figsize=(8, 4.5))
        wd = 0.8 / len(keys)
        for j, k in enumerate(keys):
            v = [next((r["mbs"] for r in st if r["xfer"] == x and label(r) == k), 0) for x in xfers]
            ax.bar([i + j * wd for i in range(len(xfers))], v, wd, label=k)
        ax.axhline(link, color="black", lw=0.8, label="link (iperf3)")
        ax.set_xticks([i + wd * (len(keys) - 1) / 2 for i in range(len(xfers))])
        ax.set_xticklabels(xfers)
        ax.set_xlabel("transfer size")
        ax.set_ylabel("aggregate MB/s")
        ax.set_title("strided read, N=8, %d MiB file, %s link" % (mb, rate))
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "anco_strided.png"), dpi=100)
        written.append("anco_strided.png")
print()
print("wrote %s" % ", ".join(written))
EOF
echo "anco.sh: $(($(date +%s) - t_start)) s in all"
