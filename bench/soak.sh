#!/usr/bin/env bash
# soak.sh - the soak run: every PIO client at once for a long time, over a
# bundle whose links are cut at random, every byte checked, throughput and
# each daemon's resident memory sampled; memory must not grow after warm-up.
# SPDX-License-Identifier: BSD-3-Clause
#
# A test bed (tests/testbed/pio-testbed) of 3 hosts with LINKS links (3) at
# RATE (100mbit) each way, one PIO system per host, each a peer of the
# others, one channel per link:
#   h1  system A: every client below runs here;
#   h2  system B: exports a folder (its piod runs the file service
#       pio-files, application pio.files.B), the pio-check receiver,
#       pio-vizd (--archive: every step kept, so the feed is lossless), and
#       I/O server pfs.iod.2;
#   h3  system C: the pfs metadata server pfs.mds (SQLite) and I/O server
#       pfs.iod.1.
# For DURATION seconds, five client loops run at once, one iteration after
# the other, each iteration checked byte for byte:
#   msg    tests/prog/pio-check `sizes`: 9 messages of 0 B .. 16 MiB (33 MiB)
#          from A to B, DYNAMIC, STATIC, DYNAMIC, then USER(i mod LINKS) in
#          turn; the receiver checks every byte of every message and its
#          status; a message the sender delivered to its piod that never
#          arrives is a loss;
#   pcp    a fresh random file of PCP_MB MiB sent to B (`pcp`, then `-n
#          LINKS`, then `-b static` in turn), then fetched back, in
#          alternate iterations; each copy compared with cmp;
#   merge  remote merged output, mpirun -np 4 in h1 into B's export: the 1 MB
#          block layout (examples/merged_output --blocks MERGE_BLOCKS),
#          random blocks of 1 B .. 64 KiB at random offsets (--random, a new
#          seed each time), and one HDF5 dataset (examples/merged_dataset,
#          read back with h5py) in turn; the raw files compared with the
#          copy each rank wrote locally (--local);
#   viz    examples/heat3d, mpirun -np 4, VIZ_N^3 grid, VIZ_STEPS steps fed
#          to pio-vizd; every archived step (.vti) read back with VTK and
#          compared bit for bit with a reference run (heat3d -np 1 --ref),
#          the rank field holding ranks 0..3; every step all ranks sent
#          must be in the archive (a step the feed skipped was never sent,
#          and is reported, not a loss); a step pio-vizd dropped is a loss;
#   pfs    a fresh random file of PFS_MB MiB: `pfs put` (-c 1, -c 2, the
#          policy in turn), `pfs get`, cmp, `pfs rm`.
# Meanwhile every CUT_EVERY (15-45, uniform) seconds one link of one host,
# chosen at random, is cut for CUT_FOR (2-10) seconds (`pio-testbed link BED
# HOST LINK down`, then `up`): one link at a time, so no host ever loses all
# its links. Each cut is logged.
#
# What counts as a FAILURE (each is logged with its time and details, the
# run goes on, all are listed at the end): a byte that differs, a message or
# step that does not arrive, a client that fails or hangs (every command has
# a 180 s timeout: a hang, never retried), a daemon that exits or restarts.
# When the time is up, iterations under way get 60 s to finish, then they
# are stopped (a failure only if one had run more than 90 s: a hang). One exception: a client
# error (never a mismatch) in an iteration that overlapped a cut (from the
# cut to 10 s after the restore) is retried once when no link is down and
# every channel is up again; when the retry passes it counts as "retried",
# not as a failure (e.g. PIO_USER(i) naming the cut channel fails with
# PIO_ECHANNEL, as PIO_Send(3) says); the summary lists each.
#
# Every SAMPLE (10) seconds: each daemon's VmRSS, RssAnon and RssShmem
# (/proc/PID/status: piod A, B, C, pio-files, pfs-mds, both pfs-iods,
# pio-vizd) and the bytes the piods wrote to their channels. A row is
# printed per sample, one sample late (so that iterations running across
# an interval's end are counted): per client MB/s (10^6 B/s; an iteration's
# verified bytes spread evenly over its start..end), their total, the wire
# (the piods' channel tx counters), each daemon's RSS in MiB and the link
# then cut. The report is computed again at the end from everything.
#
# Memory: after WARMUP (20 % of DURATION, at least 60 s), each daemon's
# private memory (VmRSS - RssShmem: the shared-memory pool, bounded by
# --pool and touched as processes come and go, is reported but not judged)
# must stay flat: its growth, the median of the last 10 % (at least 3) of
# the samples after warm-up minus the median of the first 10 %, and the least-squares
# slope over every post-warm-up sample times their span, must both stay
# within max(2 MiB, min(8 MiB, 10 % of the warm-up level)). PASS, else MISS
# with the daemon's name (docs/design-notes.md, "the soak run", says why). Each sample also
# splits each daemon's private anonymous memory by mapping kind (smaps:
# heap, thread arenas, thread stacks, other): the report shows each kind at
# warm-up and at the end, so a MISS says where the memory went.
#
# Output: the table as it goes; a closing summary (duration, iterations
# and bytes per client, cuts, failures, per daemon RSS at warm-up end / max
# / end, growth, verdict); bench/results/soak.csv (one row per sample),
# soak-iterations.csv (every iteration), soak-cuts.csv, soak-smaps.csv, soak.png
# (throughput per client and RSS per daemon over time, cuts shaded); on
# failure or MISS, the failed iterations' logs and the daemons' logs under
# bench/results/soak-logs/. The bed is always torn down (trap), also on
# Ctrl-C. Needs root. Traffic stays on the bed's 198.18/15 addresses.
#
# Exit status: 0 when there was no failure and no memory MISS; 1 when there
# was either (or the run was interrupted); 2 when the soak could not run
# (not root, something missing, bad settings, the bed or a server did not
# come up).
# Environment: BUILD (build/default), SOAK_DURATION (1800 seconds; also
# 90s, 30m, 1h, 1h30m), SOAK_SAMPLE (10), SOAK_WARMUP (max(60, DURATION/5)),
# SOAK_LINKS (3, 2..8), SOAK_RATE (100mbit), SOAK_CUT_EVERY (15-45),
# SOAK_CUT_FOR (2-10), SOAK_SEED (random; printed: the cut schedule and the
# data follow from it), SOAK_CLIENTS ("msg pcp merge viz pfs"), SOAK_PCP_MB
# (24), SOAK_PFS_MB (16), SOAK_MERGE_BLOCKS (6: MB per rank), SOAK_VIZ_N (48),
# SOAK_VIZ_STEPS (12), SOAK_KEEP (1: keep the scratch folder),
# PIO_BENCH_RESULTS (bench/results), PIO_PIOD_FLAGS (extra piod flags).
set -u
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
SAMPLE=${SOAK_SAMPLE:-10}
K=${SOAK_LINKS:-3}
RATE=${SOAK_RATE:-100mbit}
CUT_EVERY=${SOAK_CUT_EVERY:-15-45}
CUT_FOR=${SOAK_CUT_FOR:-2-10}
CLIENTS=${SOAK_CLIENTS:-msg pcp merge viz pfs}
PCP_MB=${SOAK_PCP_MB:-24}
PFS_MB=${SOAK_PFS_MB:-16}
MERGE_BLOCKS=${SOAK_MERGE_BLOCKS:-6}
VIZ_N=${SOAK_VIZ_N:-48}
VIZ_STEPS=${SOAK_VIZ_STEPS:-12}
VIZ_NP=4
MERGE_NP=4
MSG_SIZES=0,1,65535,65536,65537,1048576,4194305,8388605,16777216
ITER_TIMEOUT=180 # seconds: a command that takes longer hangs
END_GRACE=60     # seconds after the end for the iterations under way
GRACE=10         # seconds after a restore that still count as "during the cut"
CHECK=$BUILD/tests/prog/pio-check
PCP=$BUILD/bin/pcp
PFS=$BUILD/bin/pfs
HEAT=$BUILD/examples/heat3d
MO=$BUILD/examples/merged_output
MD=$BUILD/examples/merged_dataset
VIZD=$BUILD/bin/pio-vizd
SYSPY=/usr/bin/python3 # Debian's: h5py and VTK's Python modules (mk/deps.sh)

bench_root fail
bench_need "$CHECK" "$PCP" "$PFS" "$HEAT" "$MO" "$MD" "$VIZD" "$BUILD/sbin/piod" "$BUILD/sbin/pio-files" \
  "$BUILD/sbin/pfs-mds" "$BUILD/sbin/pfs-iod" "$PIO_INFO" mpirun cmp || exit 2

# soak_seconds SPEC: 1800, 90s, 30m, 1h, 1h30m in seconds
DURATION=$("$PY" -c '
import re, sys
s = sys.argv[1].strip().lower()
m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s?)?", s)
if not s or not m or not any(m.groups()):
    sys.exit(1)
h, mi, se = (int(x) if x else 0 for x in m.groups())
print(h * 3600 + mi * 60 + se)' "${SOAK_DURATION:-1800}") ||
  { echo "soak.sh: SOAK_DURATION=${SOAK_DURATION:-}: seconds, or like 90s, 30m, 1h30m" >&2; exit 2; }
WARMUP=${SOAK_WARMUP:-$((DURATION / 5 > 60 ? DURATION / 5 : 60))}
range_ok() { [[ $1 =~ ^([0-9]+)-([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -ge 1 ] &&
  [ "${BASH_REMATCH[1]}" -le "${BASH_REMATCH[2]}" ]; }
for v in "$SAMPLE" "$WARMUP" "$PCP_MB" "$PFS_MB" "$MERGE_BLOCKS" "$VIZ_N" "$VIZ_STEPS" "$K"; do
  [[ $v =~ ^[0-9]+$ ]] && [ "$v" -gt 0 ] || { echo "soak.sh: '$v' is not a positive number" >&2; exit 2; }
done
[ "$K" -ge 2 ] && [ "$K" -le 8 ] || { echo "soak.sh: SOAK_LINKS=$K: 2 .. 8 (a cut leaves a link up)" >&2; exit 2; }
range_ok "$CUT_EVERY" && range_ok "$CUT_FOR" ||
  { echo "soak.sh: SOAK_CUT_EVERY / SOAK_CUT_FOR: LO-HI seconds, 1 <= LO <= HI" >&2; exit 2; }
[ "$DURATION" -ge $((2 * SAMPLE)) ] || { echo "soak.sh: SOAK_DURATION must be >= 2 samples" >&2; exit 2; }
[ "$WARMUP" -lt "$DURATION" ] || { echo "soak.sh: SOAK_WARMUP=$WARMUP must be below the duration" >&2; exit 2; }
for c in $CLIENTS; do
  case $c in msg | pcp | merge | viz | pfs) ;; *) echo "soak.sh: unknown client '$c'" >&2; exit 2 ;; esac
done
want() { [[ " $CLIENTS " == *" $1 "* ]]; }
want merge && { bench_need "$SYSPY" || exit 2; }
want viz && { "$SYSPY" -c 'import vtkmodules.vtkIOXML, numpy' 2>/dev/null ||
  { echo "soak.sh: $SYSPY cannot import VTK's Python modules (python3-vtk9)" >&2; exit 2; }; }
SEED=${SOAK_SEED:-$(((RANDOM << 15 | RANDOM) % 1000000))}

bench_work
loops=()
cutter=""
sampler=""
cleanup() {
  local p
  trap - INT TERM
  touch "$work/stop" 2>/dev/null
  for p in $cutter $sampler "${loops[@]}"; do kill "$p" 2>/dev/null; done
  # the commands of the iterations that were running (timeout(1) passes
  # the signal on)
  cat "$work"/pids.* 2>/dev/null | while read -r p; do
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = timeout ] && kill "$p" 2>/dev/null
  done
  for p in $cutter $sampler "${loops[@]}"; do wait "$p" 2>/dev/null; done
  pio_piods_stop
  [ -n "$bed" ] && "$TB" down "$bed" >/dev/null 2>&1
  if [ "${SOAK_KEEP:-0}" = 1 ]; then echo "soak.sh: scratch folder kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'echo "soak.sh: interrupted" >&2; exit 1' INT TERM

now() { date +%s.%N; }
# ev CLIENT ITER T0 T1 BYTES STATUS DETAIL: one line of the iteration log
# (one write(2) of a short line: atomic among the loops)
ev() {
  local d=${7//,/;}
  d=${d//$'\n'/ | }
  printf '%s,%s,%s,%s,%s,%s,%s\n' "$1" "$2" "$3" "$4" "$5" "$6" "${d:0:400}" >>"$work/events.csv"
}
stopping() { [ -e "$work/stop" ]; }

# ---- the bed and the servers -------------------------------------------------
bench_banner "; 3 hosts x $K links at $RATE;" \
  "${DURATION} s (warm-up $WARMUP s), sample ${SAMPLE} s, seed $SEED"
echo "   clients: $CLIENTS; a link cut every $CUT_EVERY s for $CUT_FOR s"
bench_bed_up soak 3 "$K" "$RATE" || { echo "soak.sh: the bed did not come up" >&2; exit 2; }
NS1=$("$TB" ns "$bed" h1) NS2=$("$TB" ns "$bed" h2) NS3=$("$TB" ns "$bed" h3)
P=$work/pio
mkdir -p "$P" "$work/exp/soak" "$work/viz" "$work/fail" "$work/c/pfs.iod.1" "$work/c/pfs.iod.2"
chmod 777 "$work/exp" "$work/exp/soak"
: >"$work/events.csv"
: >"$work/cuts.csv"
addrs() { local h=$1 i a=(); for i in $(links "$K"); do a+=("$("$TB" addr "$bed" "$h" "$i")"); done; (IFS=,; echo "${a[*]}"); }
listen() { local i; for i in $(links "$K"); do printf -- '--listen %s ' "$("$TB" addr "$bed" "$1" "$i")"; done; }
_pio_keys "$P" A B C || exit 2
# shellcheck disable=SC2046
_pio_start A "$P" "$NS1" -- $(listen h1) --peer "B=$(addrs h2)" --peer "C=$(addrs h3)"
# shellcheck disable=SC2046
_pio_start B "$P" "$NS2" -- $(listen h2) --peer "A=$(addrs h1)" --peer "C=$(addrs h3)" --export "$work/exp"
# shellcheck disable=SC2046
_pio_start C "$P" "$NS3" -- $(listen h3) --peer "A=$(addrs h1)" --peer "B=$(addrs h2)"
for s in A B C; do _pio_wait_sock "$P/$s.sock" || exit 2; done
for s in A B C; do pio_wait_channels "$P/$s.sock" $((2 * K)) 30 || exit 2; done
for ((n = 0; n < 100; n++)); do
  PIO_SOCKET=$P/A.sock "$PIO_INFO" 2>/dev/null | grep -q '^pio\.files\.B ' && break
  sleep 0.1
done
[ "$n" -lt 100 ] || { echo "soak.sh: B's file service did not show at A; B's log:" >&2; cat "$P/B.log" >&2; exit 2; }
echo "-- bed $bed: piods A (h1), B (h2, exports $work/exp), C (h3), $K channels to each peer"

# on HOST CMD...: CMD in the namespace of h1, h2 or h3, joined to its piod
declare -A NSOF=([h1]=$NS1 [h2]=$NS2 [h3]=$NS3) SOCKOF=([h1]=$P/A.sock [h2]=$P/B.sock [h3]=$P/C.sock)
on() {
  local h=$1
  shift
  ip netns exec "${NSOF[$h]}" env PIO_SOCKET="${SOCKOF[$h]}" "$@"
}
# daemon NAME HOST CMD...: a server in HOST, pid in $P/NAME.pid, log $P/NAME.log
daemon() {
  local name=$1 h=$2
  shift 2
  _pio_launch "$name" "$P" "${NSOF[$h]}" env PIO_SOCKET="${SOCKOF[$h]}" "$@"
}

if want pfs; then
  daemon pfs.iod.1 h3 "$BUILD/sbin/pfs-iod" --dir "$work/c/pfs.iod.1" --name pfs.iod.1 --threads 4
  daemon pfs.iod.2 h2 "$BUILD/sbin/pfs-iod" --dir "$work/c/pfs.iod.2" --name pfs.iod.2 --threads 4
  daemon pfs.mds h3 "$BUILD/sbin/pfs-mds" --db "$work/c/mds.db" --name pfs.mds --iods pfs.iod.1,pfs.iod.2
  for ((n = 0; n < 300; n++)); do
    PIO_PARTNER_TIMEOUT=2 on h1 "$PFS" --mds pfs.mds df >/dev/null 2>&1 && break
    sleep 0.2
  done
  [ "$n" -lt 300 ] && on h1 "$PFS" --mds pfs.mds mkdir /soak >/dev/null ||
    { echo "soak.sh: pfs did not come up:" >&2; tail -n 20 "$P"/pfs.*.log >&2; exit 2; }
  echo "-- pfs: pfs.mds and pfs.iod.1 on h3, pfs.iod.2 on h2"
fi
if want viz; then
  daemon pio-vizd h2 env -u DISPLAY PIO_VIZD_DEBUG=1 "$VIZD" --app vizd --threads 2 --archive "$work/viz" --memory 256 \
    --status-file "$work/vizd.json"
  for ((n = 0; n < 200; n++)); do grep -q "receiving threads" "$P/pio-vizd.log" && break; sleep 0.1; done
  [ "$n" -lt 200 ] || { echo "soak.sh: pio-vizd did not start:" >&2; cat "$P/pio-vizd.log" >&2; exit 2; }
  # the reference: the same steps from one process (no receiver: none sent)
  on h1 timeout 300 mpirun --allow-run-as-root -np 1 "$HEAT" --n "$VIZ_N" --steps "$VIZ_STEPS" --viz nobody \
    --ref "$work/viz.ref" >"$work/viz.ref.log" 2>&1 </dev/null ||
    { echo "soak.sh: the viz reference failed:" >&2; cat "$work/viz.ref.log" >&2; exit 2; }
  echo "-- pio-vizd on h2 (--archive: lossless); reference of $VIZ_STEPS steps of $VIZ_N^3"
fi
# the daemons whose memory is sampled: NAME PID, or NAME child:PARENT:COMM
{
  for s in A B C; do echo "piod.$s $(cat "$P/$s.pid")"; done
  echo "pio-files child:$(cat "$P/B.pid"):pio-files"
  for d in pfs.mds pfs.iod.1 pfs.iod.2 pio-vizd; do [ -f "$P/$d.pid" ] && echo "$d $(cat "$P/$d.pid")"; done
} >"$work/daemons"

# ---- the clients ---------------------------------------------------------------
# Each iteration function returns 0 (verified; BYTES set), 1 (the client
# failed: ERR says how) or 2 (data lost or wrong: ERR says what). LOG is the
# iteration's log. A command runs under timeout(1) (ip netns exec and env
# exec it: the pid is timeout's, which passes a SIGTERM on to the command);
# the pids of the running iteration are in $work/pids.CLIENT, so that the
# clean-up can end them.
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 --bind-to none)

# run_bg OUT HOST CMD...: start CMD in HOST in the background (pid in $!)
run_bg() {
  local out=$1 h=$2
  shift 2
  ip netns exec "${NSOF[$h]}" env PIO_SOCKET="${SOCKOF[$h]}" "$@" >"$out" 2>&1 </dev/null &
  echo $! >>"$work/pids.$CLIENT"
}
# run OUT HOST CMD...: the same, waited for; returns CMD's status
run() {
  run_bg "$@"
  wait $!
}
# firstfail LOG: the line of LOG that says what went wrong (else its last line)
firstfail() {
  { grep -m1 -E 'FAIL|rror|failed|differ|timed out|Terminated|^pfs: |^pcp: ' "$1" || grep -v '^== ' "$1" | tail -1; } |
    cut -c1-300
}

it_msg() {
  local i=$1 conn rp rs=0 rr=0
  case $((i % 4)) in 1) conn=DYNAMIC ;; 2) conn=STATIC ;; 3) conn=DYNAMIC ;; 0) conn=USER:$((i / 4 % K)) ;; esac
  # new names each time: a receiver must never take the sender of the
  # last iteration (gone, under the same name) for this one's
  run_bg "$LOG.recv" h2 timeout "$ITER_TIMEOUT" "$CHECK" recv sizes -a "soak-r.$i.$RETRY" -p "soak-s.$i.$RETRY" \
    -S "$MSG_SIZES"
  rp=$!
  run "$LOG.send" h1 timeout "$ITER_TIMEOUT" "$CHECK" send sizes -a "soak-s.$i.$RETRY" -p "soak-r.$i.$RETRY" \
    -S "$MSG_SIZES" -c "$conn" || rs=$?
  # a sender that failed leaves its receiver waiting for the rest
  [ $rs -ne 0 ] && kill "$rp" 2>/dev/null
  wait "$rp" || rr=$?
  { echo "== $conn: send exit $rs, recv exit $rr"; sed 's/^/send | /' "$LOG.send"; sed 's/^/recv | /' "$LOG.recv"; } >"$LOG"
  rm -f "$LOG.send" "$LOG.recv"
  if [ $rs -eq 0 ] && [ $rr -eq 0 ] && grep -q '^recv | OK sizes: 9 messages' "$LOG"; then
    BYTES=$(tr ',' '\n' <<<"$MSG_SIZES" | awk '{s += $1} END {print s}')
    return 0
  fi
  if grep -q '^recv | FAIL.*\(byte\|status\)' "$LOG"; then
    ERR="$conn: wrong data: $(grep -m1 '^recv | FAIL' "$LOG" | cut -c8-300)"
    return 2
  fi
  if [ $rs -eq 0 ]; then # every send returned PIO_OK, the receiver did not get it all
    ERR="$conn: message lost: the sender delivered all 9, the receiver: $(grep -m1 '^recv | ' "$LOG" | cut -c8-300)"
    ERR+=" (exit $rr)"
    return 2
  fi
  ERR="$conn: send exit $rs: $(grep -m1 '^send | ' "$LOG" | cut -c8-300)"
  return 1
}

it_pcp() {
  local i=$1 opt=() rc=0 dst=$work/exp/soak/pcp.bin
  case $((((i + 1) / 2) % 3)) in 1) ;; 2) opt=(-n "$K") ;; 0) opt=(-b static) ;; esac
  [ "${RETRY:-0}" = 1 ] && opt+=(--resume)
  if [ $((i % 2)) -eq 1 ] || [ ! -f "$dst" ]; then
    head -c $((PCP_MB << 20)) /dev/urandom >"$work/pcp.src"
    rm -f "$dst"
    run "$LOG" h1 timeout "$ITER_TIMEOUT" "$PCP" "${opt[@]}" "$work/pcp.src" B:soak/pcp.bin || rc=$?
    echo "== pcp ${opt[*]} send: exit $rc" >>"$LOG"
    [ $rc -eq 0 ] || { ERR="send ${opt[*]}: exit $rc: $(firstfail "$LOG")"; return 1; }
    cmp "$work/pcp.src" "$dst" >>"$LOG" 2>&1 || { ERR="send ${opt[*]}: the copy at B differs: $(tail -1 "$LOG")"; return 2; }
  else
    rm -f "$work/pcp.back"
    run "$LOG" h1 timeout "$ITER_TIMEOUT" "$PCP" "${opt[@]}" B:soak/pcp.bin "$work/pcp.back" || rc=$?
    echo "== pcp ${opt[*]} fetch: exit $rc" >>"$LOG"
    [ $rc -eq 0 ] || { ERR="fetch ${opt[*]}: exit $rc: $(firstfail "$LOG")"; return 1; }
    cmp "$work/pcp.src" "$work/pcp.back" >>"$LOG" 2>&1 ||
      { ERR="fetch ${opt[*]}: the fetched copy differs: $(tail -1 "$LOG")"; return 2; }
  fi
  BYTES=$((PCP_MB << 20))
}

it_merge() {
  local i=$1 rc=0 what dst args
  rm -f "$work/merge.local" "$work/exp/soak/merge.bin" "$work/exp/soak/merge.h5"
  case $((i % 3)) in
    1) what="1 MB blocks" dst=merge.bin args=("$MO" B soak/merge.bin --blocks "$MERGE_BLOCKS" --local "$work/merge.local") ;;
    2) what="random blocks" dst=merge.bin
       args=("$MO" B soak/merge.bin --random $((SEED + i)) --blocks $((MERGE_BLOCKS * 25)) --local "$work/merge.local") ;;
    0) what="HDF5" dst=merge.h5 args=("$MD" B soak/merge.h5 --dims $((MERGE_BLOCKS * 2))x400x500) ;;
  esac
  run "$LOG" h1 timeout "$ITER_TIMEOUT" "${MPIRUN[@]}" -np "$MERGE_NP" "${args[@]}" || rc=$?
  if [ $rc -ne 0 ] || ! grep -q '^OK merged_' "$LOG"; then
    ERR="$what: exit $rc: $(firstfail "$LOG")"
    return 1
  fi
  if [ "$dst" = merge.h5 ]; then
    "$SYSPY" - "$work/exp/soak/merge.h5" >>"$LOG" 2>&1 <<'PY' || { ERR="$what: $(tail -1 "$LOG")"; return 2; }
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as f:
    d = f["/A"]
    n0, n1, n2 = d.shape
    j, k = np.meshgrid(np.arange(n1), np.arange(n2), indexing="ij")
    for i in range(n0):
        if not (d[i] == i * 1e6 + j * 1e3 + k).all():
            sys.exit("plane %d of /A differs" % i)
print("h5py: /A %s holds the values" % (d.shape,))
PY
    BYTES=$((MERGE_BLOCKS * 2 * 400 * 500 * 8))
  else
    cmp "$work/merge.local" "$work/exp/soak/merge.bin" >>"$LOG" 2>&1 ||
      { ERR="$what: the file at B differs from the local copy: $(tail -1 "$LOG")"; return 2; }
    BYTES=$(sed -n 's/^OK merged_output: .* blocks, \([0-9]*\) bytes.*/\1/p' "$LOG")
  fi
}

# vst KEY...: numbers from pio-vizd's status (outputs[0] for "done")
vst() {
  "$PY" - "$work/vizd.json" "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join(str(d["outputs"][0]["done"] if k == "done" else d[k]) for k in sys.argv[2:]))
PY
}

it_viz() {
  local i=$1 rc=0 c0 x0 d0 c1 x1 d1 sent skipped maxskip want n present
  rm -f "$work/viz"/step_*.vti
  read -r c0 x0 d0 < <(vst steps_complete steps_dropped "done") || { ERR="pio-vizd has no status"; return 1; }
  run "$LOG" h1 timeout "$ITER_TIMEOUT" "${MPIRUN[@]}" -np "$VIZ_NP" "$HEAT" --n "$VIZ_N" --steps "$VIZ_STEPS" --stats || rc=$?
  if [ $rc -ne 0 ] || ! grep -q '^OK heat3d' "$LOG"; then
    ERR="heat3d exit $rc: $(firstfail "$LOG")"
    { echo "== pio-vizd status:"; cat "$work/vizd.json"; } >>"$LOG"
    return 1
  fi
  # per rank "sent S, skipped K, acked A, ... lossless|newest-only"
  sent=$(sed -n 's/^rank [0-9]*: .* sent \([0-9]*\), skipped \([0-9]*\),.*/\1/p' "$LOG" | sort -n | head -1)
  maxskip=$(sed -n 's/^rank [0-9]*: .* skipped \([0-9]*\),.*/\1/p' "$LOG" | sort -n | tail -1)
  [ "$(grep -c '^rank [0-9]*: .*lossless$' "$LOG")" -eq "$VIZ_NP" ] ||
    { ERR="not every rank fed losslessly: $(grep -m1 '^rank .*newest-only' "$LOG")"; return 1; }
  # every step all ranks sent: completed by pio-vizd and written by the archive
  want=$((VIZ_STEPS - maxskip))
  for ((n = 0; n < 300; n++)); do
    read -r c1 x1 d1 < <(vst steps_complete steps_dropped "done")
    [ $((c1 - c0)) -ge "$want" ] && [ $((d1 - d0)) -ge "$want" ] && break
    sleep 0.1
  done
  echo "== pio-vizd: complete +$((c1 - c0)), dropped +$((x1 - x0)), archived +$((d1 - d0)); ranks sent >= $sent, skipped <= $maxskip" >>"$LOG"
  cat "$work/vizd.json" >>"$LOG"
  "$SYSPY" - "$work/viz" "$VIZ_N" "$VIZ_STEPS" "$work/viz.ref" "$VIZ_NP" >>"$LOG" 2>&1 <<'PY'
import glob, os, sys
import numpy as np
from vtkmodules.vtkIOXML import vtkXMLImageDataReader
from vtkmodules.util.numpy_support import vtk_to_numpy
d, n, steps, ref, nranks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
pts = n ** 3
refm = np.fromfile(ref, dtype=np.float64)
present, bad = [], []
for f in sorted(glob.glob(os.path.join(d, "step_*.vti"))):
    s = int(os.path.basename(f)[5:-4])
    r = vtkXMLImageDataReader()
    r.SetFileName(f)
    r.Update()
    img = r.GetOutput()
    t, k = img.GetPointData().GetArray("temperature"), img.GetPointData().GetArray("rank")
    if not 1 <= s <= steps:
        bad.append("step %d is not one of 1..%d" % (s, steps))
    elif img.GetDimensions() != (n, n, n) or t is None or k is None:
        bad.append("step %d: dimensions %s, arrays %s" % (s, img.GetDimensions(), (t is not None, k is not None)))
    else:
        tv, kv = vtk_to_numpy(t), vtk_to_numpy(k)
        want = refm[(s - 1) * pts:s * pts]
        if tv.dtype != np.float64 or tv.tobytes() != want.tobytes():
            diff = np.flatnonzero(tv.view(np.uint64) != want.view(np.uint64)) if tv.dtype == np.float64 else [0]
            bad.append("step %d: temperature differs at %d points, first %d" % (s, len(diff), diff[0]))
        elif set(np.unique(kv).tolist()) != set(range(nranks)):
            bad.append("step %d: the rank field holds %s" % (s, sorted(set(np.unique(kv).tolist()))))
        else:
            present.append(s)
print("archived, bit-exact:", " ".join(map(str, present)))
for b in bad:
    print("BAD", b)
sys.exit(1 if bad else 0)
PY
  rc=$?
  present=$(sed -n 's/^archived, bit-exact: *//p' "$LOG" | wc -w)
  if [ $rc -ne 0 ]; then
    ERR="wrong step in the archive: $(grep -m1 '^BAD\|Error\|Traceback' "$LOG")"
    return 2
  fi
  if [ "$present" -lt "$want" ] || [ $((x1 - x0)) -gt 0 ]; then
    ERR="steps lost: every rank sent $want of $VIZ_STEPS, $present archived; pio-vizd dropped $((x1 - x0))"
    return 2
  fi
  [ "$maxskip" -gt 0 ] && ERR="$maxskip step(s) skipped by the feed (never sent)"
  BYTES=$((present * 12 * VIZ_N * VIZ_N * VIZ_N))
}

it_pfs() {
  local i=$1 rc=0 c=()
  case $((i % 3)) in 1) c=(-c 1) ;; 2) c=(-c 2) ;; 0) ;; esac
  head -c $((PFS_MB << 20)) /dev/urandom >"$work/pfs.src"
  rm -f "$work/pfs.back"
  run "$LOG" h1 timeout "$ITER_TIMEOUT" "$PFS" --mds pfs.mds put "${c[@]}" "$work/pfs.src" "/soak/f$i" || rc=$?
  [ $rc -eq 0 ] || { ERR="put ${c[*]}: exit $rc: $(firstfail "$LOG")"; return 1; }
  run "$LOG.get" h1 timeout "$ITER_TIMEOUT" "$PFS" --mds pfs.mds get "/soak/f$i" "$work/pfs.back" || rc=$?
  cat "$LOG.get" >>"$LOG"
  rm -f "$LOG.get"
  [ $rc -eq 0 ] || { ERR="get ${c[*]}: exit $rc: $(firstfail "$LOG")"; return 1; }
  cmp "$work/pfs.src" "$work/pfs.back" >>"$LOG" 2>&1 ||
    { ERR="put ${c[*]} / get: the file read back differs: $(tail -1 "$LOG")"; return 2; }
  run "$LOG.rm" h1 timeout "$ITER_TIMEOUT" "$PFS" --mds pfs.mds rm "/soak/f$i" || rc=$?
  cat "$LOG.rm" >>"$LOG"
  rm -f "$LOG.rm"
  [ $rc -eq 0 ] || { ERR="rm: exit $rc: $(firstfail "$LOG")"; return 1; }
  BYTES=$((2 * (PFS_MB << 20)))
}

# in_cut T0 T1: a cut overlapped T0..T1 (from its start to GRACE s after its
# restore), or one is going on
in_cut() {
  [ -s "$work/cut.active" ] ||
    awk -F, -v a="$1" -v b="$2" -v g="$GRACE" '$1 <= b && $2 + g >= a { f = 1 } END { exit !f }' "$work/cuts.csv"
}

# all_up S: wait (S s at most) until every piod has all its channels up
all_up() {
  local n s up
  for ((n = 0; n < $1 * 2; n++)); do
    for s in A B C; do
      up=$(PIO_SOCKET=$P/$s.sock "$PIO_INFO" --count-up 2>/dev/null) || up=0
      [ "${up:-0}" -ge $((2 * K)) ] || break
    done
    [ "${up:-0}" -ge $((2 * K)) ] && return 0
    sleep 0.5
  done
  return 1
}

# app_gone NAME: wait (30 s at most) until no process of application NAME
# is joined at piod A (after a command was killed, before the next run)
app_gone() {
  local n
  for ((n = 0; n < 60; n++)); do
    PIO_SOCKET=$P/A.sock "$PIO_INFO" --json 2>/dev/null | "$PY" -c '
import json, sys
a = [x for x in json.load(sys.stdin)["applications"] if x["name"] == sys.argv[1] and x["joined"] > 0]
sys.exit(1 if a else 0)' "$1" && return 0
    sleep 0.5
  done
  return 1
}

# loop CLIENT: iterations until told to stop; each logged to events.csv.
# A command killed by its timeout is a hang: a failure, never retried. An
# iteration still running END_GRACE s after the end is stopped: a failure
# (a hang) if it had run longer than ITER_TIMEOUT / 2, else only noted.
loop() {
  local c=$1 i=0 t0 t1 rc
  CLIENT=$c
  while ! stopping; do
    i=$((i + 1))
    : >"$work/pids.$c"
    LOG=$work/$c.$i.log BYTES=0 ERR="" RETRY=0
    t0=$(now)
    "it_$c" "$i"
    rc=$?
    t1=$(now)
    if [ $rc -ne 0 ] && [ -e "$work/killed" ]; then
      if awk -v a="$t0" -v b="$t1" -v m=$((ITER_TIMEOUT / 2)) 'BEGIN { exit !(b - a > m) }'; then
        ev "$c" "$i" "$t0" "$t1" 0 fail "HANG: still running when the soak ended: $ERR"
        mv "$LOG" "$work/fail/$c.$i.log" 2>/dev/null
      else
        ev "$c" "$i" "$t0" "$t1" 0 stopped "still running when the soak ended"
      fi
      break
    fi
    [[ $ERR == *"exit 124"* ]] && ERR="HANG: $ERR" # timeout(1)'s status
    case $c in merge) [ $rc -ne 0 ] && app_gone merge ;; viz) [ $rc -ne 0 ] && app_gone heat3d ;; esac
    if [ $rc -eq 1 ] && [[ $ERR != HANG:* ]] && in_cut "$t0" "$t1"; then
      ev "$c" "$i" "$t0" "$t1" 0 expected "during a cut: $ERR"
      cp "$LOG" "$work/fail/$c.$i.expected.log" 2>/dev/null
      # retry once, when no link is down and every channel is up again
      while [ -s "$work/cut.active" ] && ! stopping; do sleep 0.5; done
      all_up 60
      LOG=$work/$c.$i.retry.log BYTES=0 ERR="" RETRY=1
      t0=$(now)
      "it_$c" "$i"
      rc=$?
      t1=$(now)
      [[ $ERR == *"exit 124"* ]] && ERR="HANG: $ERR"
      [ $rc -eq 0 ] && ERR="retried after an error during a cut${ERR:+; $ERR}"
    fi
    if [ $rc -eq 0 ]; then
      ev "$c" "$i" "$t0" "$t1" "$BYTES" ok "$ERR"
      rm -f "$LOG"
    else
      ev "$c" "$i" "$t0" "$t1" 0 fail "$([ $rc -eq 2 ] && echo "DATA: ")$ERR"
      mv "$LOG" "$work/fail/$c.$i.log" 2>/dev/null
      echo "   $(date -u +%T) FAILURE $c iteration $i: $([ $rc -eq 2 ] && echo "DATA: ")$ERR" >&2
    fi
  done
}

# cutter: one random link of one random host down for a while, then up
cutter_loop() {
  local lo=${CUT_EVERY%-*} hi=${CUT_EVERY#*-} flo=${CUT_FOR%-*} fhi=${CUT_FOR#*-} wait_s len h l t0 t1 end
  RANDOM=$SEED
  while ! stopping; do
    wait_s=$((lo + RANDOM % (hi - lo + 1)))
    end=$(($(date +%s) + wait_s))
    while [ "$(date +%s)" -lt "$end" ]; do stopping && return; sleep 0.5; done
    h=h$((1 + RANDOM % 3)) l=$((RANDOM % K)) len=$((flo + RANDOM % (fhi - flo + 1)))
    t0=$(now)
    echo "$t0 $h $l" >"$work/cut.active"
    "$TB" link "$bed" "$h" "$l" down >>"$work/cutter.log" 2>&1
    echo "   $(date -u +%T) cut: $h link $l down for $len s"
    sleep "$len"
    "$TB" link "$bed" "$h" "$l" up >>"$work/cutter.log" 2>&1 ||
      "$TB" link "$bed" "$h" "$l" up >>"$work/cutter.log" 2>&1
    t1=$(now)
    echo "$t0,$t1,$h,$l" >>"$work/cuts.csv"
    : >"$work/cut.active"
  done
}

# ---- the sampler and the report (one Python program, two modes) ------------
cat >"$work/soak.py" <<'EOF'
import csv, json, math, os, shutil, subprocess, sys, time

CLIENTS = ["msg", "pcp", "merge", "viz", "pfs"]
MiB = 1048576.0


def events(work):
    out = []
    try:
        for r in csv.reader(open(os.path.join(work, "events.csv"))):
            if len(r) >= 7:
                out.append(dict(client=r[0], iter=r[1], t0=float(r[2]), t1=float(r[3]), bytes=int(r[4] or 0),
                                status=r[5], detail=",".join(r[6:])))
    except FileNotFoundError:
        pass
    return out


def cuts(work):
    out = []
    for r in csv.reader(open(os.path.join(work, "cuts.csv"))):
        if len(r) == 4:
            out.append(dict(t0=float(r[0]), t1=float(r[1]), host=r[2], link=r[3]))
    try:
        a = open(os.path.join(work, "cut.active")).read().split()
        if len(a) == 3:
            out.append(dict(t0=float(a[0]), t1=None, host=a[1], link=a[2]))
    except FileNotFoundError:
        pass
    return out


def spread(evs, a, b):
    """Verified bytes per client moved in a..b (epoch s), each iteration's
    bytes spread evenly over its start..end."""
    r = {c: 0.0 for c in CLIENTS}
    for e in evs:
        if e["status"] != "ok" or e["bytes"] <= 0 or e["client"] not in r:
            continue
        lo, hi = max(a, e["t0"]), min(b, e["t1"])
        if hi > lo:
            r[e["client"]] += e["bytes"] * (hi - lo) / max(e["t1"] - e["t0"], 1e-6)
    return r


def cut_in(cl, a, b):
    return ["%s:%s" % (c["host"], c["link"]) for c in cl if c["t0"] < b and (c["t1"] is None or c["t1"] > a)]


def header(daemons, clients):
    h = "%7s " % "t (s)" + " ".join("%6s" % c for c in clients) + " %6s %6s |" % ("total", "wire")
    h += " ".join("%9s" % d[-9:] for d in daemons) + " | cut"
    return h


def row(t, rates, tot, wire, rss, cut, clients):
    s = "%7.0f " % t + " ".join("%6.2f" % rates[c] for c in clients) + " %6.2f %6s |" % (
        tot, "%.2f" % wire if wire is not None else "-")
    s += " ".join("%9s" % ("%.1f" % v if v is not None else "gone") for v in rss) + " | " + " ".join(cut)
    return s


def read_status(pid):
    v = {}
    try:
        for line in open("/proc/%d/status" % pid):
            k, _, rest = line.partition(":")
            if k in ("VmRSS", "RssAnon", "RssFile", "RssShmem", "State"):
                v[k] = rest.split()[0]
    except (FileNotFoundError, ProcessLookupError, ValueError):
        return None
    if v.get("State") == "Z" or "VmRSS" not in v:
        return None
    return {k: int(v.get(k, 0)) for k in ("VmRSS", "RssAnon", "RssFile", "RssShmem")}


SMAPS_KINDS = ("heap", "arenas", "stacks", "anon_other")


def smaps_kinds(pid):
    """Private anonymous memory by mapping kind, kB: the [heap], glibc's
    thread arenas (64 MiB-aligned anonymous heaps), 8 MiB thread stacks
    (glibc's default size) and other anonymous mappings (big malloc blocks,
    library pools). Files and shared memory are left out."""
    kb = dict.fromkeys(SMAPS_KINDS, 0)
    cur = None
    try:
        for line in open("/proc/%d/smaps" % pid):
            p = line.split()
            if not p:
                continue
            if "-" in p[0] and not p[0].endswith(":"):
                a, b = (int(x, 16) for x in p[0].split("-"))
                name = p[5] if len(p) > 5 else ""
                if name == "[heap]":
                    cur = "heap"
                elif name:
                    cur = None
                elif abs((b - a) - (8 << 20)) <= 64 << 10:  # with or without its guard page
                    cur = "stacks"
                elif a % (64 << 20) == 0:
                    cur = "arenas"
                else:
                    cur = "anon_other"
            elif p[0] == "Rss:" and cur:
                kb[cur] += int(p[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return kb


def children(ppid, comm):
    try:
        for task in os.listdir("/proc/%d/task" % ppid):
            for c in open("/proc/%d/task/%s/children" % (ppid, task)).read().split():
                try:
                    if open("/proc/%s/comm" % c).read().strip() == comm:
                        return int(c)
                except FileNotFoundError:
                    pass
    except FileNotFoundError:
        pass
    return None


def sample_mode(work, period, t_start, info, socks, clients):
    daemons = [l.split() for l in open(os.path.join(work, "daemons")) if l.strip()]
    names = [d[0] for d in daemons]
    last_pid, gone = {}, set()
    f = open(os.path.join(work, "samples.csv"), "w", newline="")
    w = csv.writer(f)
    w.writerow(["t", "wire_bytes"] + ["%s_%s" % (n, k) for n in names for k in ("pid", "rss", "anon", "shmem")])
    samples = []
    fk = open(os.path.join(work, "smaps.csv"), "w", newline="")
    wk = csv.writer(fk)
    wk.writerow(["t", "daemon"] + list(SMAPS_KINDS))
    print("   (MB/s = 10^6 B/s of verified bytes; wire: the piods' channel tx; RSS in MiB (VmRSS);"
          " each row one sample late)")
    print(header(names, clients))
    sys.stdout.flush()
    k = 0
    stop = os.path.join(work, "sampler.stop")
    while True:
        final = os.path.exists(stop)
        if not final:
            nxt = t_start + k * period
            while time.time() < nxt and not os.path.exists(stop):
                time.sleep(min(0.2, max(0.0, nxt - time.time())))
            final = os.path.exists(stop)
        t = time.time()
        wire = 0
        for s in socks:
            try:
                r = subprocess.run([info, "--json", "--timeout", "3000"], env=dict(os.environ, PIO_SOCKET=s),
                                   capture_output=True, text=True, timeout=10)
                wire += sum(c["tx_bytes"] for c in json.loads(r.stdout)["channels"])
            except Exception:
                wire = None
                break
        vals = []
        for d in daemons:
            name, spec = d[0], d[1]
            if spec.startswith("child:"):
                _, ppid, comm = spec.split(":")
                pid = children(int(ppid), comm)
            else:
                pid = int(spec)
            st = read_status(pid) if pid else None
            if st is None:
                if name not in gone:
                    gone.add(name)
                    with open(os.path.join(work, "events.csv"), "a") as e:
                        e.write("daemon:%s,-,%.3f,%.3f,0,fail,DAEMON: %s (pid %s) is gone\n" % (name, t, t, name, pid))
                    print("   %s FAILURE: daemon %s (pid %s) is gone" % (time.strftime("%H:%M:%S", time.gmtime(t)),
                                                                        name, pid), file=sys.stderr)
            else:
                if name in last_pid and last_pid[name] != pid:
                    with open(os.path.join(work, "events.csv"), "a") as e:
                        e.write("daemon:%s,-,%.3f,%.3f,0,fail,DAEMON: %s restarted (pid %s -> %s)\n" % (
                            name, t, t, name, last_pid[name], pid))
                    print("   FAILURE: daemon %s restarted (pid %s -> %s)" % (name, last_pid[name], pid),
                          file=sys.stderr)
                last_pid[name] = pid
                gone.discard(name)
            vals.append((pid, st))
            kinds = smaps_kinds(pid) if st else None
            if kinds:
                wk.writerow(["%.3f" % (t - t_start), name] + [kinds[x] for x in SMAPS_KINDS])
        fk.flush()
        w.writerow(["%.3f" % (t - t_start), wire if wire is not None else ""] +
                   [x for pid, st in vals for x in ((pid or ""),) + ((st["VmRSS"], st["RssAnon"], st["RssShmem"])
                                                                      if st else ("", "", ""))])
        f.flush()
        samples.append((t, wire, [st["VmRSS"] / 1024.0 if st else None for _, st in vals]))
        # print the row of the interval before the last one (its iterations
        # have mostly ended by now); at the end, the last ones too
        evs, cl = events(work), cuts(work)
        todo = [len(samples) - 2] if not final else list(range(max(1, len(samples) - 2), len(samples)))
        for j in todo:
            if j < 1:
                continue
            (a, wa, _), (b, wb, rss) = samples[j - 1], samples[j]
            rates = {c: v / (b - a) / 1e6 for c, v in spread(evs, a, b).items()}
            tot = sum(rates[c] for c in clients)
            wr = (wb - wa) / (b - a) / 1e6 if wa is not None and wb is not None else None
            print(row(b - t_start, rates, tot, wr, rss, cut_in(cl, a, b), clients))
        sys.stdout.flush()
        if final:
            break
        k += 1
    f.close()
    fk.close()


def fit(ts, ys):
    n = len(ts)
    mt, my = sum(ts) / n, sum(ys) / n
    sxx = sum((t - mt) ** 2 for t in ts)
    return sum((t - mt) * (y - my) for t, y in zip(ts, ys)) / sxx if sxx > 0 else 0.0


def med(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def smaps_report(work, results, names, warmup):
    """Where the private memory is, by mapping kind: the medians of the first
    and the last 10 % of the samples after warm-up, as for the verdict (a
    diagnostic: the verdict is on the totals)."""
    path = os.path.join(work, "smaps.csv")
    if not os.path.exists(path):
        return
    rows = list(csv.reader(open(path)))[1:]
    shutil.copy(path, os.path.join(results, "soak-smaps.csv"))
    print("private anonymous memory by kind (MiB, warm-up -> end; smaps; soak-smaps.csv):")
    print("%-10s " % "daemon" + " ".join("%17s" % k for k in SMAPS_KINDS))
    for n in names:
        pts = [r for r in rows if r[1] == n and float(r[0]) >= warmup]
        if len(pts) < 4:
            continue
        m = max(3, int(round(0.1 * len(pts))))
        cells = []
        for i, k in enumerate(SMAPS_KINDS):
            a = med([int(r[2 + i]) for r in pts[:m]]) / 1024.0
            b = med([int(r[2 + i]) for r in pts[-m:]]) / 1024.0
            cells.append("%5.1f -> %5.1f" % (a, b))
        print("%-10s " % n + " ".join("%17s" % c for c in cells))
    print()


def report_mode(work, results, t_start, t_end, duration, warmup, clients, settings):
    evs, cl = events(work), cuts(work)
    rows = list(csv.reader(open(os.path.join(work, "samples.csv"))))
    hdr, data = rows[0], rows[1:]
    names = [h[:-4] for h in hdr if h.endswith("_pid")]
    T = [float(r[0]) for r in data]
    wire = [float(r[1]) if r[1] else None for r in data]
    col = {h: i for i, h in enumerate(hdr)}

    def series(name, key):
        return [float(r[col["%s_%s" % (name, key)]]) / 1024.0 if r[col["%s_%s" % (name, key)]] else None for r in data]

    rss = {n: series(n, "rss") for n in names}
    anon = {n: series(n, "anon") for n in names}
    shm = {n: series(n, "shmem") for n in names}
    priv = {n: [r - s if r is not None else None for r, s in zip(rss[n], shm[n])] for n in names}
    # per interval: client MB/s, total, wire
    iv = []
    for j in range(1, len(T)):
        a, b = t_start + T[j - 1], t_start + T[j]
        r = {c: v / (b - a) / 1e6 for c, v in spread(evs, a, b).items()}
        wr = (wire[j] - wire[j - 1]) / (b - a) / 1e6 if wire[j] is not None and wire[j - 1] is not None else None
        iv.append((T[j], r, sum(r[c] for c in clients), wr, cut_in(cl, a, b)))
    os.makedirs(results, exist_ok=True)
    with open(os.path.join(results, "soak.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t_s"] + ["%s_MBps" % c for c in clients] + ["total_MBps", "wire_MBps"] +
                   ["%s_rss_MiB" % n for n in names] + ["%s_private_MiB" % n for n in names] +
                   ["%s_shmem_MiB" % n for n in names] + ["cut"])
        for j, (t, r, tot, wr, cut) in enumerate(iv, 1):
            fm = lambda v: "%.2f" % v if v is not None else ""
            w.writerow(["%.1f" % t] + ["%.3f" % r[c] for c in clients] + ["%.3f" % tot, fm(wr)] +
                       [fm(rss[n][j]) for n in names] + [fm(priv[n][j]) for n in names] +
                       [fm(shm[n][j]) for n in names] + [" ".join(cut)])
    with open(os.path.join(results, "soak-iterations.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["client", "iteration", "start_s", "end_s", "bytes", "status", "detail"])
        for e in sorted(evs, key=lambda e: e["t0"]):
            w.writerow([e["client"], e["iter"], "%.2f" % (e["t0"] - t_start), "%.2f" % (e["t1"] - t_start),
                        e["bytes"], e["status"], e["detail"]])
    with open(os.path.join(results, "soak-cuts.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["host", "link", "down_s", "up_s", "seconds"])
        for c in cl:
            if c["t1"] is not None:
                w.writerow([c["host"], c["link"], "%.2f" % (c["t0"] - t_start), "%.2f" % (c["t1"] - t_start),
                            "%.2f" % (c["t1"] - c["t0"])])

    # ---- summary
    span = t_end - t_start
    print()
    print("Soak summary: %s" % settings)
    print("ran %.0f s of traffic (asked %d s; warm-up %d s), %d samples" % (span, duration, warmup, len(T)))
    print()
    print("%-7s %6s %6s %8s %7s %10s %8s" % ("client", "iters", "ok", "retried", "failed", "MB", "MB/s"))
    for c in clients:
        e = [x for x in evs if x["client"] == c]
        ok = [x for x in e if x["status"] == "ok"]
        ret = [x for x in ok if x["detail"].startswith("retried")]
        fl = [x for x in e if x["status"] == "fail"]
        mb = sum(x["bytes"] for x in ok) / 1e6
        print("%-7s %6d %6d %8d %7d %10.1f %8.2f" % (c, len(ok) + len(fl), len(ok), len(ret), len(fl), mb,
                                                   mb / span if span > 0 else 0))
    tot = sum(x["bytes"] for x in evs if x["status"] == "ok") / 1e6
    wires = [x for x in wire if x is not None]
    print("%-7s %6s %6s %8s %7s %10.1f %8.2f   (wire: %.1f MB, %.2f MB/s)" % (
        "all", "", "", "", "", tot, tot / span if span > 0 else 0,
        (wires[-1] - wires[0]) / 1e6 if len(wires) > 1 else 0,
        (wires[-1] - wires[0]) / 1e6 / span if len(wires) > 1 and span > 0 else 0))
    skipped = [x for x in evs if x["status"] == "ok" and "skipped by the feed" in x["detail"]]
    if skipped:
        print("note: viz: %d iteration(s) had steps the feed skipped (never sent, not a loss)" % len(skipped))
    done_cuts = [c for c in cl if c["t1"] is not None]
    print()
    print("link cuts: %d, %.0f s down in all%s" % (
        len(done_cuts), sum(c["t1"] - c["t0"] for c in done_cuts),
        (": " + ", ".join("%s:%s@%.0fs/%.0fs" % (c["host"], c["link"], c["t0"] - t_start, c["t1"] - c["t0"])
                          for c in done_cuts)) if done_cuts else ""))
    exp = [x for x in evs if x["status"] == "expected"]
    if exp:
        print("errors during a cut, retried (not failures): %d" % len(exp))
        for x in exp:
            print("   %7.1f s %s #%s: %s" % (x["t0"] - t_start, x["client"], x["iter"], x["detail"]))
    stopped = [x for x in evs if x["status"] == "stopped"]
    if stopped:
        print("stopped at the end (not failures): %s" % ", ".join("%s #%s" % (x["client"], x["iter"]) for x in stopped))
    fails = sorted([x for x in evs if x["status"] == "fail"], key=lambda x: x["t1"])
    print("failures: %d" % len(fails))
    for x in fails:
        print("   %7.1f s %s #%s (%s UTC): %s" % (x["t1"] - t_start, x["client"], x["iter"],
                                                 time.strftime("%H:%M:%S", time.gmtime(x["t1"])), x["detail"]))

    # ---- memory
    print()
    print("memory (MiB): private = VmRSS - RssShmem, judged; VmRSS and the pool's RssShmem shown")
    print("%-10s %9s %9s %9s %8s %8s %8s %9s %9s  %s" % (
        "daemon", "warm-up", "max", "end", "growth", "fit", "allowed", "VmRSS end", "shm end", "verdict"))
    miss = []
    mem = {}
    for n in names:
        pts = [(t, v) for t, v in zip(T, priv[n]) if v is not None and t >= warmup]
        allv = [v for v in priv[n] if v is not None]
        if len(pts) < 4:
            print("%-10s %s" % (n, "too few samples after warm-up (%d): not judged" % len(pts)))
            continue
        m = max(3, int(round(0.1 * len(pts))))
        warm, end = med([v for _, v in pts[:m]]), med([v for _, v in pts[-m:]])
        slope = fit([t for t, _ in pts], [v for _, v in pts])
        fitg = slope * (pts[-1][0] - pts[0][0])
        allowed = max(2.0, min(8.0, 0.10 * warm))
        ok = end - warm <= allowed and fitg <= allowed
        rs = [v for v in rss[n] if v is not None]
        ss = [v for v in shm[n] if v is not None]
        mem[n] = (warm, max(allv), end, end - warm, fitg, allowed, ok)
        if not ok:
            miss.append(n)
        print("%-10s %9.1f %9.1f %9.1f %+8.1f %+8.1f %8.1f %9.1f %9.1f  %s" % (
            n, warm, max(allv), end, end - warm, fitg, allowed, rs[-1] if rs else float("nan"),
            ss[-1] if ss else float("nan"), "PASS" if ok else "MISS"))
    print("(warm-up and end: medians of the first and of the last 10 % (at least 3) of the samples after")
    print(" warm-up; growth: end - warm-up; fit: the least-squares slope over the samples after warm-up")
    print(" times their span; allowed: max(2, min(8, 10 % of the warm-up level)); a daemon passes when")
    print(" growth and fit both stay within it)")
    print()
    for n in miss:
        warm, mx, end, g, fg, al, _ = mem[n]
        print("MISS: memory: %s grew %+.1f MiB after warm-up (fit %+.1f MiB), allowed %.1f MiB" % (n, g, fg, al))
    if not miss:
        print("PASS: memory: no daemon grew after warm-up (%d judged)" % len(mem))
    smaps_report(work, results, names, warmup)
    print("%s: data: %d failure(s) (every iteration verified byte for byte)" % ("PASS" if not fails else "FAIL",
                                                                            len(fails)))
    verdict = not fails and not miss and mem
    print("soak verdict: %s" % ("PASS" if verdict else "FAIL"))

    # ---- plot
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("note: no matplotlib: soak.png not drawn")
        return 0 if verdict else 1
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(11, 8), sharex=True)
    tt = [x[0] for x in iv]
    for c in clients:
        a1.step(tt, [x[1][c] for x in iv], where="pre", label=c, lw=1.2)
    a1.step(tt, [x[2] for x in iv], where="pre", label="total (verified)", color="black", lw=1.8)
    a1.step(tt, [x[3] if x[3] is not None else float("nan") for x in iv], where="pre", label="wire (piods' tx)",
            color="gray", ls="--", lw=1)
    a1.set_ylabel("MB/s (10^6 B/s)")
    a1.set_title("Soak: %s" % settings, fontsize=9)
    a1.legend(fontsize=7, ncol=4, loc="upper right")
    a1.set_ylim(bottom=0)
    for n in names:
        a2.plot(T, priv[n], lw=1.5, label="%s%s" % (n, " (MISS)" if n in miss else ""))
    a2.set_ylabel("MiB private (VmRSS - RssShmem)")
    a2.set_xlabel("s since the clients started")
    a2.set_yscale("log")
    a2.legend(fontsize=7, ncol=4, loc="upper left")
    for ax in (a1, a2):
        for i, c in enumerate(cl):
            ax.axvspan(c["t0"] - t_start, (c["t1"] if c["t1"] else t_end) - t_start, color="tab:red", alpha=0.15,
                       lw=0, label="link cut" if (ax is a1 and i == 0) else None)
        ax.axvline(warmup, color="tab:blue", ls=":", lw=1)
        ax.grid(True, alpha=0.3)
    a1.text(warmup, a1.get_ylim()[1] * 0.97, " end of warm-up", color="tab:blue", fontsize=7, va="top")
    if fails:
        a1.plot([x["t1"] - t_start for x in fails], [a1.get_ylim()[1] * 0.99] * len(fails), "v", color="red",
                ms=5, ls="none", label="failure (%d)" % len(fails))
    a1.legend(fontsize=7, ncol=4, loc="upper right")
    fig.tight_layout()
    fig.savefig(os.path.join(results, "soak.png"), dpi=100)
    print("wrote %s/soak.csv, soak-iterations.csv, soak-cuts.csv and soak.png" % results)
    return 0 if verdict else 1


if __name__ == "__main__":
    if sys.argv[1] == "sample":
        work, period, t_start, info = sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
        socks, clients = sys.argv[6].split(","), sys.argv[7].split()
        sample_mode(work, period, t_start, info, socks, clients)
    else:
        work, results, t_start, t_end, duration, warmup = sys.argv[2], sys.argv[3], float(sys.argv[4]), \
            float(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
        sys.exit(report_mode(work, results, t_start, t_end, duration, warmup, sys.argv[8].split(), sys.argv[9]))
EOF

# ---- the run --------------------------------------------------------------------
mkdir -p "$RESULTS"
T_START=$(now)
"$PY" "$work/soak.py" sample "$work" "$SAMPLE" "$T_START" "$PIO_INFO" "$P/A.sock,$P/B.sock,$P/C.sock" "$CLIENTS" &
sampler=$!
for c in $CLIENTS; do
  loop "$c" &
  loops+=($!)
done
cutter_loop &
cutter=$!
echo "-- soak started $(date -u +%T) UTC: ${#loops[@]} client loops, cutter, sampler every $SAMPLE s"
END=$(($(date +%s) + DURATION))
while [ "$(date +%s)" -lt "$END" ]; do sleep 1; done
touch "$work/stop"
echo "-- $(date -u +%T) UTC: time is up; the clients finish their iterations"
wait "$cutter"
cutter=""
# the iterations under way get END_GRACE s, then they are stopped
for ((n = 0; n < END_GRACE; n++)); do
  alive=0
  for p in "${loops[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
  [ $alive -eq 0 ] && break
  sleep 1
done
if [ $alive -eq 1 ]; then
  echo "-- $(date -u +%T) UTC: stopping the iterations still under way"
  touch "$work/killed"
  cat "$work"/pids.* 2>/dev/null | while read -r p; do
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = timeout ] && kill "$p" 2>/dev/null
  done
fi
lp=("${loops[@]}")
for p in "${lp[@]}"; do wait "$p"; done
loops=()
T_END=$(now)
touch "$work/sampler.stop"
wait "$sampler"
sampler=""

settings="3 hosts x $K links at $RATE, $CLIENTS, cut every $CUT_EVERY s for $CUT_FOR s, seed $SEED, $date_s"
"$PY" "$work/soak.py" report "$work" "$RESULTS" "$T_START" "$T_END" "$DURATION" "$WARMUP" "$CLIENTS" "$settings"
rc=$?
if [ $rc -ne 0 ]; then
  rm -rf "$RESULTS/soak-logs"
  mkdir -p "$RESULTS/soak-logs"
  cp "$work"/fail/* "$P"/*.log "$RESULTS/soak-logs/" 2>/dev/null
  echo "logs of the failed iterations and of the daemons: $RESULTS/soak-logs/"
  exit 1
fi
exit 0
