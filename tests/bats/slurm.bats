#!/usr/bin/env bats
# slurm.bats - PIO under a real Slurm (Debian's slurm-wlm and munge) on the test bed (issue 32, item 6).
# SPDX-License-Identifier: BSD-3-Clause
#
# One bed of 2 hosts (h1, h2), 2 links each (198.18.k.h, 1 gbit/s), serves
# the file. slurmctld runs in h1's namespace and one slurmd per host in its
# host's, named after it (docs/design-notes.md "Issue 32, items 6 and 7"
# says why each piece of the set-up is as it is); every Slurm command runs
# in h1's namespace, where the controller's address is. One munged (user
# munge, /etc/munge/munge.key) serves them all through its Unix socket; the
# file starts it when none runs, and then stops it at the end.
#
# Node-local $TMPDIR: the namespaces share one file system, so each slurmd
# runs in a mount namespace of its own where $S/tmp is its host's folder
# $S/node/hN: the same path on every node, a different folder on each, as a
# node's local disk is on a cluster. Jobs get TMPDIR=$S/tmp.
#
# pio-job runs as a user runs it, launching the piods with srun inside the
# allocation: an salloc whose srun -N 2 -n 4 tasks each take their rank and
# size from srun, and the batch script of docs/batch-jobs.md
# (examples/slurm/pio-job.sbatch, submitted as it is) with pio-perf, pcp
# and a 4-rank application between the nodes.

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

SCRIPT=$PIO_SRC/examples/slurm/pio-job.sbatch
CHECK=$PIO_BUILD/tests/prog/pio-check

# have_slurm: the commands this file needs (make deps installs them)
have_slurm() {
  local c
  for c in slurmctld slurmd srun sbatch salloc munged munge runuser unshare nsenter; do
    command -v "$c" >/dev/null || return 1
  done
}

# munge_up: a munged serving /run/munge (the key is made first when missing);
# one that runs already is used, and not stopped at the end.
munge_up() {
  local key=/etc/munge/munge.key
  if [ ! -e "$key" ]; then
    install -d -o munge -g munge -m 0700 /etc/munge || return 1
    mungekey --create --keyfile="$key" || return 1
    chown munge:munge "$key" && chmod 0400 "$key" || return 1
  fi
  if munge -n </dev/null | unmunge >/dev/null 2>&1; then return 0; fi
  install -d -o munge -g munge -m 0755 /run/munge || return 1
  runuser -u munge -- munged || return 1
  cp /run/munge/munged.pid "$S/munged.pid" || return 1
  pio_wait_until 10 munge_works
}
munge_works() { munge -n </dev/null | unmunge; }

# four_ranks_on_two_nodes: $output has each of processes 0..3 of 4 once,
# 0 and 1 joined at h1's piod, 2 and 3 at h2's (srun's block distribution)
four_ranks_on_two_nodes() {
  local r
  for r in 0 1 2 3; do
    assert_equal "$(grep -c "^OK hold: process $r of 4, joined at h$((r / 2 + 1))\$" <<<"$output")" 1
  done
}

# sl CMD...: a Slurm command where the controller's address is (h1's namespace)
sl() { ip netns exec "$NS1" "$@"; }

# nodes_idle: sinfo shows both nodes idle
nodes_idle() {
  [ "$(sl sinfo -h -N -o '%N %t' | sort | tr '\n' ' ')" = "h1 idle h2 idle " ]
}

# no_jobs: squeue lists no job
no_jobs() {
  [ -z "$(sl squeue -h -o %i)" ]
}

setup_file() {
  [ "$(id -u)" -eq 0 ] || return 0
  have_slurm || return 0
  export BED S NS1 SLURM_CONF
  BED=$(pio_unique_name slurm)
  pio_bed_up "$BED" --hosts 2 --links 2 --rate 1gbit >/dev/null
  NS1=$("$PIO_TESTBED" ns "$BED" h1)
  S=$BATS_FILE_TMPDIR/slurm
  mkdir -p "$S/state" "$S/spool" "$S/tmp" "$S/node/h1" "$S/node/h2"
  munge_up || { echo "cannot start munged" >&2; return 1; }
  # ports: below pio-job's (20000 up) and the ephemeral range, new each run
  local port=$((10000 + (RANDOM + $$) % 4000 * 2))
  SLURM_CONF=$S/slurm.conf
  cat >"$SLURM_CONF" <<EOF
ClusterName=pio$BED
SlurmctldHost=h1($("$PIO_TESTBED" addr "$BED" h1 0))
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
KillWait=5
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool/%n
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd-%n.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd-%n.log
NodeName=h1 NodeAddr=$("$PIO_TESTBED" addr "$BED" h1 0) CPUs=2 State=UNKNOWN
NodeName=h2 NodeAddr=$("$PIO_TESTBED" addr "$BED" h2 0) CPUs=2 State=UNKNOWN
PartitionName=bed Nodes=h1,h2 Default=YES MaxTime=INFINITE State=UP
EOF
  # slurmd needs a cgroup plugin even with proctrack/linuxproc and task/none,
  # and autodetect refuses the hybrid mount of these machines
  if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
    printf 'CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\n' >"$S/cgroup.conf"
  else
    echo "CgroupPlugin=cgroup/v1" >"$S/cgroup.conf"
  fi
  bg_start "$S/slurmctld.out" ip netns exec "$NS1" unshare -u sh -c 'hostname h1 && exec slurmctld -D -i'
  local h
  for h in h1 h2; do
    bg_start "$S/slurmd-$h.out" unshare -u -m nsenter --net="/run/netns/$("$PIO_TESTBED" ns "$BED" "$h")" \
      sh -c "mount --bind '$S/node/$h' '$S/tmp' && hostname $h && exec slurmd -D -N $h"
  done
  pio_wait_until 60 nodes_idle ||
    { tail -n 20 "$S"/*.log "$S"/*.out >&2; sl sinfo >&2; return 1; }
}

teardown_file() {
  local pid i
  pio_cleanup # the slurmds, slurmctld, then the bed (and what runs in it)
  pid=$(cat "$S/munged.pid" 2>/dev/null) || return 0
  kill -TERM "$pid" 2>/dev/null
  for ((i = 0; i < 100; i++)); do
    grep -qv '^[0-9]* ([^)]*) Z' "/proc/$pid/stat" 2>/dev/null || break
    sleep 0.05
  done
  return 0
}

setup() {
  pio_need_root
  have_slurm || skip "needs slurm-wlm and munge (make deps installs them)"
}

teardown() {
  [ -n "${NS1:-}" ] || return 0
  sl scancel --user=root 2>/dev/null
  pio_wait_until 30 no_jobs || true
}

# job_env: what every job here gets: PIO's commands on PATH (pio-job from
# the source tree), the node-local TMPDIR, the job folders in the test's
job_env() {
  echo "PATH=$PIO_SRC/tools/pio-job:$PATH"
  echo "TMPDIR=$S/tmp"
  echo "PIO_JOB_DIR=$BATS_TEST_TMPDIR/job"
  echo "CHECK=$CHECK"
}

@test "salloc -N 2: pio-job starts a piod per node with srun; srun -N 2 -n 4 tasks are processes 0..3 of 4" {
  cat >"$BATS_TEST_TMPDIR/alloc" <<'EOF'
#!/bin/bash
eval "$(pio-job start --listen 'eth*')" || exit 1
squeue -h -s -j "$SLURM_JOB_ID" -o 'step %i %N %j'
srun -N 2 -n 4 "$CHECK" local hold -a ranks -r -1 -P 0 -n 0
rc=$?
pio-job stop
exit $rc
EOF
  chmod +x "$BATS_TEST_TMPDIR/alloc"
  local envs
  mapfile -t envs < <(job_env)
  run sl env "${envs[@]}" timeout $((120 * ${PIO_TEST_MULT:-1})) salloc -N 2 --ntasks-per-node=2 "$BATS_TEST_TMPDIR/alloc"
  assert_success
  assert_output --partial "2 piod(s) up, every channel up"
  assert_output --partial "stopped 2 piod(s)"
  # each piod is a step of the allocation on its node (pio-job node-run)
  assert_line --regexp '^step [0-9]+\.[0-9]+ h1 pio-job$'
  assert_line --regexp '^step [0-9]+\.[0-9]+ h2 pio-job$'
  # block distribution: two tasks on each node, each joined to its own node's piod
  four_ranks_on_two_nodes
  assert_equal "$(grep -c '^OK hold' <<<"$output")" 4
  run pgrep -f "$S/tmp/pio-job-"
  assert_failure
  run find "$S/node" -mindepth 2
  refute_output
}

@test "sbatch examples/slurm/pio-job.sbatch: pio-perf and pcp between the nodes, 4 ranks, COMPLETED" {
  local envs id
  head -c 3145728 /dev/urandom >"$BATS_TEST_TMPDIR/input.dat"
  cat >"$BATS_TEST_TMPDIR/app" <<'EOF'
#!/bin/sh
"$CHECK" local hold -a sim -r -1 -P 0 -n 0 || exit 1
cmp "$STAGED_INPUT" "$INPUT" && echo "$SLURMD_NODENAME: input identical"
EOF
  chmod +x "$BATS_TEST_TMPDIR/app"
  mapfile -t envs < <(job_env)
  run sl env "${envs[@]}" PIO_LISTEN=198.18.0.0/15 INPUT="$BATS_TEST_TMPDIR/input.dat" \
    timeout $((180 * ${PIO_TEST_MULT:-1})) sbatch --wait -o "$BATS_TEST_TMPDIR/job.out" -D "$BATS_TEST_TMPDIR" \
    "$SCRIPT" "$BATS_TEST_TMPDIR/app"
  cat "$BATS_TEST_TMPDIR/job.out" >&2 # shown when the test fails
  assert_success
  assert_line --regexp '^Submitted batch job [0-9]+$'
  id=$(sed -n 's/^Submitted batch job //p' <<<"$output")
  run sl scontrol show job "$id"
  assert_output --partial "JobState=COMPLETED"
  assert_output --partial "ExitCode=0:0"
  run cat "$BATS_TEST_TMPDIR/job.out"
  assert_line "pio-job: job $id: 2 piod(s) up, every channel up"
  # pio-perf: the second node's piod over both links, a row of figures
  assert_line --partial "perf-cli -> perf-srv (system h2, 2 channels, 2 up)"
  assert_line --regexp '^stream +1048576 +100 +USER +blocking +[0-9]+\.[0-9]+ +[0-9]+\.[0-9]+$'
  # pcp to h2's local disk; pio-job status: both of h1's channels carried data
  assert_line --regexp '^/.*/input\.dat: 3\.0 MiB in [0-9.]+ s, [0-9.]+ [KMG]iB/s$'
  assert_line --regexp '^h2 +0 +up +198\.18\.0\.1:[0-9]+ +198\.18\.0\.2:[0-9]+ +[0-9.]+ MiB '
  assert_line --regexp '^h2 +1 +up +198\.18\.1\.1:[0-9]+ +198\.18\.1\.2:[0-9]+ +[0-9.]+ MiB '
  # the application: ranks 0, 1 joined h1's piod, 2, 3 h2's; each node's copy of the input is the file
  four_ranks_on_two_nodes
  assert_equal "$(grep -c '^h1: input identical$' <<<"$output")" 2
  assert_equal "$(grep -c '^h2: input identical$' <<<"$output")" 2
  assert_line "pio-job: job $id: stopped 2 piod(s)"
  # nothing left: no piod, no socket or scratch folder on the nodes, no job folder
  run pgrep -f "$S/tmp/pio-job-"
  assert_failure
  run find "$S/node" -mindepth 2
  refute_output
  run test -e "$BATS_TEST_TMPDIR/job"
  assert_failure
}

@test "two jobs on the same nodes at once: each its own piods, ports and application of the same name" {
  local envs a b id
  mkdir "$BATS_TEST_TMPDIR/meet" "$BATS_TEST_TMPDIR/home"
  cat >"$BATS_TEST_TMPDIR/twin" <<'EOF'
#!/bin/bash
# meet NAME: say this job got to NAME, wait (30 s at most) for the other job
meet() {
  local i
  touch "$MEET/$SLURM_JOB_ID.$1"
  for ((i = 0; i < 300; i++)); do
    if [ "$(find "$MEET" -name "*.$1" | wc -l)" -ge 2 ]; then echo "met at $1"; return 0; fi
    sleep 0.1
  done
  echo "alone at $1"
}
set -eu
eval "$(pio-job start --listen 'eth*')"
trap 'pio-job stop' EXIT
meet up
srun -N 2 -n 2 "$CHECK" local hold -a twin -r -1 -P 0 -n 0
meet done
EOF
  chmod +x "$BATS_TEST_TMPDIR/twin"
  mapfile -t envs < <(job_env)
  run sl env "${envs[@]}" MEET="$BATS_TEST_TMPDIR/meet" PIO_JOB_DIR= HOME="$BATS_TEST_TMPDIR/home" sbatch --parsable -N 2 --ntasks-per-node=1 \
    -o "$BATS_TEST_TMPDIR/%j.out" -D "$BATS_TEST_TMPDIR" "$BATS_TEST_TMPDIR/twin"
  assert_success
  a=$output
  run sl env "${envs[@]}" MEET="$BATS_TEST_TMPDIR/meet" PIO_JOB_DIR= HOME="$BATS_TEST_TMPDIR/home" sbatch --parsable -N 2 --ntasks-per-node=1 \
    -o "$BATS_TEST_TMPDIR/%j.out" -D "$BATS_TEST_TMPDIR" "$BATS_TEST_TMPDIR/twin"
  assert_success
  b=$output
  run pio_wait_until 120 no_jobs
  assert_success
  for id in "$a" "$b"; do
    run sl scontrol show job "$id"
    assert_output --partial "JobState=COMPLETED"
    assert_output --partial "ExitCode=0:0"
    run cat "$BATS_TEST_TMPDIR/$id.out"
    assert_line "met at up"
    assert_line "met at done"
    assert_line "OK hold: process 0 of 2, joined at h1"
    assert_line "OK hold: process 1 of 2, joined at h2"
    assert_line "pio-job: job $id: 2 node(s), ports $((20000 + 3 * id))-$((20002 + 3 * id)), folder $BATS_TEST_TMPDIR/home/.pio/job-$id"
    assert_line "pio-job: job $id: stopped 2 piod(s)"
  done
  run find "$BATS_TEST_TMPDIR/home" "$S/node" -mindepth 2
  refute_output
}

@test "docs/batch-jobs.md and pio-batch(7) show examples/slurm/pio-job.sbatch byte for byte" {
  local doc
  for doc in "$PIO_SRC/docs/batch-jobs.md" "$PIO_SRC/docs/man/pio-batch.7.md"; do
    # the fenced block whose second line names the script
    awk '!on && /^```/ { on = 1; n = 0; next }
         on && /^```$/ { on = 0; if (b[2] ~ /^# pio-job\.sbatch - /) { for (i = 1; i <= n; i++) print b[i]; exit } next }
         on { b[++n] = $0 }' "$doc" >"$BATS_TEST_TMPDIR/shown"
    run cmp "$BATS_TEST_TMPDIR/shown" "$SCRIPT"
    assert_success
  done
}
