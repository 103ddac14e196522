#!/usr/bin/env bats
# merge.bats - remote merged output (PIO_File_*): MPI ranks write blocks, one
# file appears on the other host, through its file service.
# SPDX-License-Identifier: BSD-3-Clause
#
# A piod pair on loopback; B exports a folder. examples/merged_output runs
# under mpirun on A's side.

load "$BATS_TEST_DIRNAME/../lib/helpers"
case $PIO_BUILD in *asan*) export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 ;; esac
load "$BATS_TEST_DIRNAME/../lib/piod"

EX=$PIO_BUILD/examples

setup() {
  [ -x "$EX/merged_output" ] || fail "examples not built: run make"
  EXP=$BATS_TEST_TMPDIR/export
  mkdir -p "$EXP"
  PIO_PIOD_FLAGS="${PIO_PIOD_FLAGS:-} --export $EXP" pio_pair_loopback "$BATS_TEST_TMPDIR" 2
  export PIO_SOCKET=$PIO_SOCK_A
}

teardown() {
  local p
  # writers a test left running (they sleep 60 s): end them first
  if [ -f "$BATS_TEST_TMPDIR/pids" ]; then
    while read -r p; do kill -KILL "$p" 2>/dev/null || true; done <"$BATS_TEST_TMPDIR/pids"
  fi
  pio_cleanup
}

@test "8 ranks x 100 blocks of random sizes at random offsets: the remote file equals the local one" {
  mkdir "$EXP/out"
  run timeout 120 mpirun --oversubscribe --mca mpi_yield_when_idle 1 -np 8 "$EX/merged_output" B out/merged.bin \
    --random 42 --blocks 100 --local "$BATS_TEST_TMPDIR/local.bin" </dev/null
  echo "$output"
  assert_success
  assert_output --partial "OK merged_output: 8 processes, 800 blocks"
  cmp "$BATS_TEST_TMPDIR/local.bin" "$EXP/out/merged.bin"
  [ -z "$(find "$EXP" -name '*.pcp-part')" ]
}

@test "the original experiment: 4 processes write a 1 MB block 10 times, one 40 MB file" {
  run timeout 120 mpirun --oversubscribe --mca mpi_yield_when_idle 1 -np 4 "$EX/merged_output" B exp.bin \
    --local "$BATS_TEST_TMPDIR/exp.local" </dev/null
  echo "$output"
  assert_success
  [ "$(stat -c %s "$EXP/exp.bin")" -eq 40000000 ]
  cmp "$BATS_TEST_TMPDIR/exp.local" "$EXP/exp.bin"
}

@test "a path out of the export is refused on every rank" {
  run timeout 60 mpirun --oversubscribe --mca mpi_yield_when_idle 1 -np 2 "$EX/merged_output" B ../escape.bin </dev/null
  assert_failure
  assert_output --partial "permission denied (B: ../escape.bin: the path leaves the export root)"
  [ ! -e "$BATS_TEST_TMPDIR/escape.bin" ]
}

@test "a folder that does not exist there: a clear error on every rank, nothing written" {
  run timeout 60 mpirun --oversubscribe --mca mpi_yield_when_idle 1 -np 2 "$EX/merged_output" B nodir/merged.bin </dev/null
  assert_failure
  assert_output --partial "PIO_File_open(host, path, PIO_FILE_RAW, &fh): no such file, object or name (B: nodir/merged.bin: No such file or directory)"
  [ -z "$(ls -A "$EXP")" ]
}


# ---- HDF5 mode -------------------------------------------------------------
# Debian's h5py lives with Debian's python (not a pyenv one that may be first).
H5PY=/usr/bin/python3

# check_dataset FILE NAME D0 D1 D2 DTYPE: h5py reads every element as A[i][j][k] = i*1e6+j*1e3+k
check_dataset() {
  "$H5PY" - "$@" <<'PY'
import sys, h5py, numpy as np
path, name, d0, d1, d2, dt = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6]), sys.argv[6]
with h5py.File(path, "r") as f:
    a = f[name][...]
i, j, k = np.meshgrid(np.arange(d0), np.arange(d1), np.arange(d2), indexing="ij")
want = (i * 1e6 + j * 1e3 + k).astype(dt)
assert a.shape == (d0, d1, d2), a.shape
assert a.dtype == np.dtype(dt), a.dtype
bad = np.argwhere(a != want)
assert len(bad) == 0, "%d elements differ, first at %s: %s" % (len(bad), bad[0], a[tuple(bad[0])])
print("h5py: %s %s %s equal" % (name, a.shape, a.dtype))
PY
}

@test "HDF5 mode: 8 ranks write interleaved plane slabs of a 3-D grid; h5py and h5dump read the values" {
  run timeout 120 mpirun --oversubscribe --mca mpi_yield_when_idle 1 -np 8 "$EX/merged_dataset" B grid.h5 \
    --dims 6x40x30 --name /fields/A </dev/null
  echo "$output"
  assert_success
  assert_output --partial "OK merged_dataset: 8 processes"
  run check_dataset "$EXP/grid.h5" /fields/A 6 40 30 float64
  echo "$output"
  assert_success
  run h5dump -H -d /fields/A "$EXP/grid.h5"
  assert_success
  assert_output --partial 'DATASPACE  SIMPLE { ( 6, 40, 30 ) / ( 6, 40, 30 ) }'
  assert_output --partial 'H5T_IEEE_F64LE'
  # one element through h5dump: A[2][3][4] = 2003004
  run h5dump -d /fields/A -s 2,3,4 -c 1,1,1 "$EXP/grid.h5"
  assert_success
  assert_output --partial '(2,3,4): 2.003e+06'
  [ -z "$(find "$EXP" -name '*.pcp-part')" ]
}

@test "HDF5 mode: int32 blocks, one slab per rank (whole block), odd grid" {
  run timeout 120 mpirun --oversubscribe --mca mpi_yield_when_idle 1 -np 6 "$EX/merged_dataset" B ints.h5 \
    --dims 5x31x17 --type int32 --whole </dev/null
  echo "$output"
  assert_success
  run check_dataset "$EXP/ints.h5" /A 5 31 17 int32
  echo "$output"
  assert_success
  run h5dump -d /A -s 4,30,16 -c 1,1,1 "$EXP/ints.h5"
  assert_output --partial '(4,30,16): 4030016'
}

@test "HDF5 mode: one slab of 80 MiB (more than a message) lands whole" {
  run timeout 180 mpirun --oversubscribe --mca mpi_yield_when_idle 1 -np 2 "$EX/merged_dataset" B big.h5 \
    --dims 5x1024x2048 --one </dev/null
  echo "$output"
  assert_success
  run check_dataset "$EXP/big.h5" /A 5 1024 2048 float64
  echo "$output"
  assert_success
}

@test "HDF5 mode: a bad dataset name is a clear error on every rank, nothing left behind" {
  run timeout 60 mpirun --oversubscribe --mca mpi_yield_when_idle 1 -np 2 "$EX/merged_dataset" B bad.h5 \
    --name //// </dev/null
  echo "$output"
  assert_failure
  assert_output --partial "PIO_File_open_dataset"
  assert_output --partial "invalid argument (B: dataset ////: HDF5 cannot create it"
  [ -z "$(ls -A "$EXP")" ]
}

@test "HDF5 mode: what libpio refuses locally; elements nobody wrote read as 0" {
  run timeout 60 "$PIO_BUILD/tests/prog/pio-filecheck" api B part.h5
  echo "$output"
  assert_success
  assert_output "OK api"
  run "$H5PY" -c '
import sys, h5py
a = h5py.File(sys.argv[1], "r")["/d"][...]
assert a.dtype == "int32" and a.shape == (4, 6), (a.dtype, a.shape)
assert a[1].tolist() == [1, 2, 3, 4, 5, 6], a
assert (a[[0, 2, 3]] == 0).all(), a
print("ok")' "$EXP/part.h5"
  echo "$output"
  assert_success
}

# two processes of one application that disagree about the file: one is
# refused at open, the other's close fails; the file is not kept
disagree() {
  local p0 p1
  timeout 60 "$PIO_BUILD/tests/prog/pio-filecheck" "$1" B dis.h5 0 2 >"$BATS_TEST_TMPDIR/r0" 2>&1 &
  p0=$!
  timeout 60 "$PIO_BUILD/tests/prog/pio-filecheck" "$1" B dis.h5 1 2 >"$BATS_TEST_TMPDIR/r1" 2>&1 &
  p1=$!
  wait $p0 || { cat "$BATS_TEST_TMPDIR/r0"; return 1; }
  wait $p1 || { cat "$BATS_TEST_TMPDIR/r1"; return 1; }
  cat "$BATS_TEST_TMPDIR/r0" "$BATS_TEST_TMPDIR/r1"
}

@test "HDF5 mode: processes that open different datasets: one refused, the other's close fails, no file" {
  run disagree shape
  echo "$output"
  assert_success
  assert_output --partial "open: PIO_EPERM B: dis.h5: process"
  assert_output --partial "opened it with another dataset than the others"
  assert_output --regexp "close: PIO_EPERM B: dis.h5: process"
  [ -z "$(ls -A "$EXP")" ]
}

@test "HDF5 mode: a raw and an HDF5 opener of one file: refused the same way" {
  run disagree mixed
  echo "$output"
  assert_success
  assert_output --partial "opened it with another mode than the others"
  [ -z "$(ls -A "$EXP")" ]
}

@test "a process that joins but never opens, then leaves: the others' close fails instead of waiting for ever" {
  SECONDS=0
  run disagree absent
  echo "$output"
  assert_success
  assert_output --partial "rank 0 close: PIO_"
  assert_output --partial "B: dis.h5: 1 process(es) of fcheck left without opening it (not opened: 1): not renamed, kept as .dis.h5.pcp-part"
  [ "$SECONDS" -lt 40 ]
  echo "took $SECONDS s" >&3
  # what was written is kept under the part name, never renamed into place
  [ ! -e "$EXP/dis.h5" ]
  [ "$(ls -A "$EXP")" = .dis.h5.pcp-part ]
}

# ---- issue 26: the bounded wait (PIO_FILE_WAIT) ----------------------------

# fcheck_bg SCENARIO PATH RANK OUT: one writer of 2 in the background (pid
# in $!, the program's own: kill -9 must reach it, not a wrapper; it ends
# by itself after 60 s at most, and teardown kills what is left)
fcheck_bg() {
  "$PIO_BUILD/tests/prog/pio-filecheck" "$1" B "$2" "$3" 2 >"$4" 2>&1 3>&- &
  echo $! >>"$BATS_TEST_TMPDIR/pids"
}

@test "a writer that joins, never opens and stays: the others' close fails after PIO_FILE_WAIT, naming it" {
  export PIO_FILE_WAIT=3
  fcheck_bg idle idle.bin 1 "$BATS_TEST_TMPDIR/r1"
  sleep 0.5
  SECONDS=0
  run timeout 60 "$PIO_BUILD/tests/prog/pio-filecheck" idle B idle.bin 0 2
  echo "$output"
  assert_success
  assert_output --partial "rank 0 close: PIO_ETIMEDOUT B: idle.bin: waited 3 s for process(es) of fcheck: never opened it: 1: not renamed, kept as .idle.bin.pcp-part"
  echo "took $SECONDS s" >&3
  [ "$SECONDS" -ge 3 ]
  [ "$SECONDS" -lt 15 ]
  [ ! -e "$EXP/idle.bin" ]
  [ "$(cat "$EXP/.idle.bin.pcp-part")" = abc ]
}

# killed SECONDS [SIGNAL]: a writer holding held.bin gets SIGNAL (KILL); the
# other's close fails; prints the other's output
killed() {
  export PIO_FILE_WAIT=$1
  fcheck_bg hold held.bin 1 "$BATS_TEST_TMPDIR/r1"
  holder=$!
  for _ in $(seq 200); do grep -q "rank 1 holds" "$BATS_TEST_TMPDIR/r1" && break; sleep 0.05; done
  grep -q "rank 1 holds" "$BATS_TEST_TMPDIR/r1" || { echo "rank 1 never held the file:"; cat "$BATS_TEST_TMPDIR/r1"; return 1; }
  fcheck_bg hold held.bin 0 "$BATS_TEST_TMPDIR/r0"
  writer=$!
  # both writes are on disk before the holder dies
  for _ in $(seq 200); do [ "$(stat -c %s "$EXP/.held.bin.pcp-part" 2>/dev/null)" = 6 ] && break; sleep 0.05; done
  kill -"${2:-KILL}" "$holder"
  rc=0 && wait "$writer" || rc=$?
  cat "$BATS_TEST_TMPDIR/r0"
  [ "$rc" -eq 0 ] || { echo "rank 0 exited $rc"; return 1; }
  [ ! -e "$EXP/held.bin" ] || { echo "renamed into place"; return 1; }
  [ "$(cat "$EXP/.held.bin.pcp-part")" = abcdef ] || { echo "part file lost bytes"; return 1; }
}

@test "a writer killed with -9 while it holds the file: the others' close fails after the short PIO_FILE_WAIT or sooner, naming it; what was written is kept" {
  SECONDS=0
  run killed 5
  echo "$output"
  assert_success
  # (whichever comes first: its session hears of the departure, or the
  # wait runs out; each names it)
  assert_output --regexp "rank 0 close: PIO_E[A-Z]+ B: held.bin: (process 1 of fcheck went away before closing it|waited 5 s for process\(es\) of fcheck: opened it, never closed it: 1): not renamed, kept as .held.bin.pcp-part"
  echo "took $SECONDS s" >&3
  [ "$SECONDS" -lt 20 ]
}

@test "a writer killed with -9 while it holds the file: found gone within seconds, long before a 60 s PIO_FILE_WAIT" {
  SECONDS=0
  run killed 60
  echo "$output"
  assert_success
  # (its session hears of the departure: libpio fails the receive)
  assert_output --partial "rank 0 close: PIO_ECLOSED B: held.bin: process 1 of fcheck went away before closing it: not renamed, kept as .held.bin.pcp-part"
  echo "took $SECONDS s" >&3
  [ "$SECONDS" -lt 20 ]
}

@test "a writer that holds the file and hangs (SIGSTOP): the others' close fails after PIO_FILE_WAIT, naming it" {
  SECONDS=0
  run killed 3 STOP
  echo "$output"
  assert_success
  assert_output --partial "rank 0 close: PIO_ETIMEDOUT B: held.bin: waited 3 s for process(es) of fcheck: opened it, never closed it: 1: not renamed, kept as .held.bin.pcp-part"
  echo "took $SECONDS s" >&3
  [ "$SECONDS" -lt 15 ]
}

@test "PIO_FILE_WAIT that is no number of seconds: a clear error at open" {
  PIO_FILE_WAIT=soon run timeout 30 "$PIO_BUILD/tests/prog/pio-filecheck" idle B w.bin 0 1
  echo "$output"
  assert_failure
  assert_output --partial "rank 0 open: PIO_EINVAL PIO_FILE_WAIT=soon: give the seconds a close may wait (> 0, default 60)"
  [ -z "$(ls -A "$EXP")" ]
}
