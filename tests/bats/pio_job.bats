#!/usr/bin/env bats
# pio_job.bats - pio-job start|stop|status on the namespace test bed (issue 32, item 1),
# and piod.conf's listen patterns (an interface glob, a CIDR) on emulated hosts.
# SPDX-License-Identifier: BSD-3-Clause
#
# One bed of 3 hosts (h1..h3), 2 links each (eth0, eth1: 198.18.k.h), no
# rate limit, serves the file. pio-job runs here as it would on a job's
# head node; its --launch override runs a node's command inside that
# host's namespace with the host's own TMPDIR (a node-local folder, as on
# a cluster), which is how the socket of each node is found. A job is
# started with --listen 'eth*' (each node resolves the glob itself), so
# every piod has 2 channels to each of the 2 others; a 3-process
# application split over the nodes (each process joined to its own node's
# piod, as srun's tasks would) passes messages between them; stop leaves
# no piod, socket or key behind. Two jobs at once on the same nodes do not
# clash. Node lists are expanded as Slurm, PBS and mpirun give them.

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

JOBCMD=$PIO_SRC/tools/pio-job/pio-job
SPLIT=$PIO_BUILD/tests/prog/pio-split
CHECK=$PIO_BUILD/tests/prog/pio-check

setup_file() {
  [ "$(id -u)" -eq 0 ] || return 0
  export BED
  BED=$(pio_unique_name job)
  pio_bed_up "$BED" --hosts 3 --links 2 >/dev/null
  export NODETMP=$BATS_FILE_TMPDIR/nodes
  mkdir -p "$NODETMP"/h1 "$NODETMP"/h2 "$NODETMP"/h3
  # the launcher: NODE CMD... inside NODE's namespace, with its own TMPDIR
  export LAUNCHER=$BATS_FILE_TMPDIR/launch
  cat >"$LAUNCHER" <<EOF
#!/bin/bash
node=\$1; shift
exec env TMPDIR="$NODETMP/\$node" ip netns exec "\$("$PIO_TESTBED" ns "$BED" "\$node")" "\$@"
EOF
  chmod +x "$LAUNCHER"
}

teardown_file() {
  pio_cleanup
}

setup() {
  pio_need_root
}

teardown() {
  local j
  for j in "$BATS_TEST_TMPDIR"/job-*; do
    [ -d "$j" ] && "$JOBCMD" stop -q --dir "$j" --launch "$LAUNCHER" --job "${j##*/job-}"
  done
  return 0
}

# job ID ARGS...: pio-job on the bed's three hosts, job ID, folder in the test's.
job() {
  local cmd=$1 id=$2; shift 2
  "$JOBCMD" "$cmd" --job "$id" --dir "$BATS_TEST_TMPDIR/job-$id" --nodes 'h[1-3]' \
    --launch "$LAUNCHER" "$@"
}

sock() { echo "$NODETMP/$1/pio-job-$2/piod.sock"; }

# joined_at SOCK APP SYSTEM: the piod at SOCK knows a joined process of APP at SYSTEM.
joined_at() {
  PIO_SOCKET=$1 "$PIO_INFO" --json | grep -q "\"name\": \"$2\", \"system\": \"$3\", \"nprocs\": 2, \"joined\": 1"
}

@test "listen = eth* and listen = 198.18.1.0/24 resolve on each emulated host; --check-config says so" {
  run "$PIO_TESTBED" exec "$BED" h2 "$PIOD" --check-config --name h2 --listen 'eth*'
  assert_success
  assert_line "piod: link 0: listen = eth* on eth0: 198.18.0.2"
  assert_line "piod: link 1: listen = eth* on eth1: 198.18.1.2"
  run "$PIO_TESTBED" exec "$BED" h3 "$PIOD" --check-config -v --name h3 --listen 198.18.1.0/24
  assert_success
  assert_line "listen = 198.18.1.3"
  refute_line "listen = 198.18.0.3"
  printf 'name = h1\nlisten = ib*\n' >"$BATS_TEST_TMPDIR/ib.conf"
  run "$PIO_TESTBED" exec "$BED" h1 "$PIOD" --check-config --config "$BATS_TEST_TMPDIR/ib.conf"
  assert_failure
  assert_output --partial "ib.conf:2: listen = ib*: no interface of this host with an IPv4 address matches (interfaces: lo, eth0, eth1)"
}

@test "pio-job start: one piod per node, every channel up, PIO_SOCKET printed; a split application talks; stop removes it all" {
  run job start 101 --listen 'eth*'
  assert_success
  assert_line "export PIO_SOCKET=${TMPDIR:-/tmp}/pio-job-101/piod.sock"
  assert_line "export PIO_JOB=101"
  local n
  for n in h1 h2 h3; do
    run env PIO_SOCKET="$(sock "$n" 101)" "$PIO_INFO" --count-up
    assert_output 4
  done
  run job status 101
  assert_success
  assert_output --partial "== h3"
  assert_output --partial "198.18.1.3"

  # process 0 on h1, process 1 on h3 (each joined to its own node's piod)
  bg_start "$BATS_TEST_TMPDIR/m0.out" env PIO_SOCKET="$(sock h1 101)" timeout 60 "$SPLIT" member 0 -a jsplit
  local m0=$BG_PID
  run pio_wait_until 15 joined_at "$(sock h3 101)" jsplit h1
  assert_success
  run env PIO_SOCKET="$(sock h3 101)" timeout 60 "$SPLIT" member 1 -a jsplit
  assert_success
  assert_output --partial "OK member 1 of jsplit"
  bg_wait "$m0"
  run cat "$BATS_TEST_TMPDIR/m0.out"
  assert_output --partial "OK member 0 of jsplit"
  [ "$BG_RC" -eq 0 ]

  run job stop 101
  assert_success
  assert_output --partial "stopped 3 piod(s)"
  run pgrep -f "pio-job-101/piod.sock"
  assert_failure
  for n in h1 h2 h3; do
    run test -e "$NODETMP/$n/pio-job-101"
    assert_failure
  done
  run test -e "$BATS_TEST_TMPDIR/job-101"
  assert_failure
}

@test "two jobs on the same nodes at once: own ports, sockets and keys; stopping one leaves the other" {
  run job start 201 --listen 198.18.0.0/24
  assert_success
  run job start 202 --listen 'eth*'
  assert_success
  run env PIO_SOCKET="$(sock h2 201)" "$PIO_INFO" --count-up
  assert_output 2
  run env PIO_SOCKET="$(sock h2 202)" "$PIO_INFO" --count-up
  assert_output 4
  run grep -h "control-port" "$BATS_TEST_TMPDIR/job-201/h1.conf" "$BATS_TEST_TMPDIR/job-202/h1.conf"
  assert_line "control-port = 20603"
  assert_line "control-port = 20606"
  run job stop 201
  assert_success
  bg_start "$BATS_TEST_TMPDIR/r.out" env PIO_SOCKET="$(sock h3 202)" timeout 60 "$CHECK" recv order -a j-recv -p j-send -n 100
  local r=$BG_PID
  run env PIO_SOCKET="$(sock h1 202)" timeout 60 "$CHECK" send order -a j-send -p j-recv -n 100
  assert_success
  bg_wait "$r"
  run cat "$BATS_TEST_TMPDIR/r.out"
  assert_output --partial "OK order: 100 messages"
  [ "$BG_RC" -eq 0 ]
  run job stop 202
  assert_success
}

@test "pio-job start refuses a job that runs already, and stops what it started when a node fails" {
  run job start 301 --listen 'eth*'
  assert_success
  run job start 301 --listen 'eth*'
  assert_failure
  assert_output --partial "job 301 runs already"
  run job stop 301
  assert_success
  run job start 302 --listen 'nosuch*'
  assert_failure
  assert_output --partial "no link address"
  run test -e "$BATS_TEST_TMPDIR/job-302/nodes"
  assert_failure
}

@test "node lists: Slurm's compressed form (scontrol or not), PBS_NODEFILE, an mpirun hostfile" {
  run env -u SLURM_JOB_NODELIST -u PBS_NODEFILE PATH=/usr/bin:/bin "$JOBCMD" nodes --nodes 'h[1-3,07],gpu[01-02]-ib,n5'
  assert_success
  assert_output "$(printf '%s\n' h1 h2 h3 h07 gpu01-ib gpu02-ib n5)"
  run env -u PBS_NODEFILE SLURM_JOB_NODELIST='a[8-10],b' PATH=/usr/bin:/bin "$JOBCMD" nodes
  assert_success
  assert_output "$(printf '%s\n' a8 a9 a10 b)"
  printf 'n2\nn1\nn2\nn1\n' >"$BATS_TEST_TMPDIR/pbs"
  run env -u SLURM_JOB_NODELIST PBS_NODEFILE="$BATS_TEST_TMPDIR/pbs" "$JOBCMD" nodes
  assert_success
  assert_output "$(printf '%s\n' n2 n1)"
  printf '# hosts\nc1 slots=4\nc2 slots=4\n\nc1\n' >"$BATS_TEST_TMPDIR/hf"
  run env -u SLURM_JOB_NODELIST -u PBS_NODEFILE "$JOBCMD" nodes --hostfile "$BATS_TEST_TMPDIR/hf"
  assert_success
  assert_output "$(printf '%s\n' c1 c2)"
  run env -u SLURM_JOB_NODELIST -u PBS_NODEFILE "$JOBCMD" nodes
  assert_failure
  assert_output --partial "no nodes"
}
