#!/usr/bin/env bats
# fortran.bats - the Fortran binding (module pio): types, errors, merged output, feeds, MPI, install.
# SPDX-License-Identifier: BSD-3-Clause
#
# Fortran programs (tests/prog/pio-f*.f90, examples/fortran/) talk to C ones
# (tests/prog/pio-fpartner.c, examples/) through a pair of piods on loopback
# (tests/lib/piod.bash): the Fortran side joins system A ($PIO_SOCK_A), the C
# side system B ($PIO_SOCK_B); a Fortran feed goes to pio-vizd on B.
# Everything runs under `timeout`.

load "$BATS_TEST_DIRNAME/../lib/helpers"
# Open MPI's components leak at exit by design (see mpi.bats).
case $PIO_BUILD in *asan*) export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 ;; esac
load "$BATS_TEST_DIRNAME/../lib/piod"

PROG=$PIO_BUILD/tests/prog
FEX=$PIO_BUILD/examples/fortran
MPIRUN=(mpirun --oversubscribe --mca mpi_yield_when_idle 1)

setup() {
  [ -x "$PROG/pio-ftypes" ] && [ -x "$PROG/pio-fpartner" ] || fail "Fortran tests not built: run make"
}

teardown() {
  pio_cleanup
}

# pair: two piods, two channels each, and the exported folder $EXP on B.
pair() {
  EXP=$BATS_TEST_TMPDIR/export
  mkdir -p "$EXP"
  PIO_PIOD_FLAGS="${PIO_PIOD_FLAGS:-} --export $EXP" pio_pair_loopback "$BATS_TEST_TMPDIR" 2
}

@test "types: 1-D, 2-D, 3-D arrays of every Fortran type go to a C program and back, exact" {
  pair
  # through the piods (no direct lane: pio_lane.bats covers those), as
  # pio-ftypes checks that both channels carried its arrays
  bg_start "$BATS_TEST_TMPDIR/c.out" env PIO_SOCKET="$PIO_SOCK_B" PIO_LANE_MAX=0 timeout 120 "$PROG/pio-fpartner" types
  local cpid=$BG_PID
  run env PIO_SOCKET="$PIO_SOCK_A" PIO_LANE_MAX=0 timeout 120 "$PROG/pio-ftypes"
  local f_rc=$status f_out=$output
  bg_wait "$cpid"
  run cat "$BATS_TEST_TMPDIR/c.out"
  echo "Fortran side: $f_out"
  echo "C side: $output"
  [ "$f_rc" -eq 0 ] || fail "pio-ftypes exited $f_rc"
  [ "$BG_RC" -eq 0 ] || fail "pio-fpartner exited $BG_RC"
  assert_output "OK pio-fpartner types: 29 messages checked and answered"
  [[ $f_out == *"OK pio-ftypes: 29 arrays of 7 types went to C and back, exact"* ]]
  [[ $f_out == *"info: partner cpartner on system B, processes 1"* ]]
  [[ $f_out == *"info: me fortran, process 0"* ]]
  [[ $f_out == *"info: host A, system A"* ]]
  [[ $f_out == *"info: channel 1 up T 127.1.1.1:"*" -> 127.2.1.1:"* ]]
}

@test "types: a C side that answers wrong values is caught (the check can fail)" {
  pair
  # the C side answers the first array with its tag only: the Fortran side
  # must report the values, not pass
  cat >"$BATS_TEST_TMPDIR/liar.c" <<'C'
#include <pio.h>
#include <stdio.h>
int main(void)
{
    int p, buf[1000] = {0};
    PIO_Status st;
    if (PIO_Init("cpartner", 0, 1) || PIO_Setpartner("fortran", &p))
        return 1;
    if (PIO_Recv(p, 0, 101, buf, PIO_INT32, 1000, 60000, PIO_BLOCKING, &st))
        return 1;
    for (int i = 0; i < 1000; i++)
        buf[i] = ~buf[i];
    buf[500] ^= 1; /* one bit wrong */
    PIO_Send(p, 0, 101, PIO_DYNAMIC, buf, PIO_INT32, 1000, PIO_BLOCKING);
    PIO_Exit();
    return 0;
}
C
  # libpio.a needs the libraries of the Makefile's PKG_DEPS (libzmq, ucx, ...)
  local deps args
  mapfile -t args < <(pio_make_args)
  deps=$(make -s --no-print-directory -C "$PIO_SRC" "${args[@]}" pkg-deps)
  [ -n "$deps" ] || fail "make pkg-deps printed nothing"
  local more
  more=$(make -s --no-print-directory -C "$PIO_SRC" "${args[@]}" pkg-libs)
  cc -I"$PIO_SRC/libpio" -o "$BATS_TEST_TMPDIR/liar" "$BATS_TEST_TMPDIR/liar.c" \
    "$PIO_BUILD/lib/libpio.a" $(pkg-config --libs $deps) $more -lrt -pthread \
    $(grep -o -- '-fsanitize=[a-z]*' "$PIO_BUILD/.make-settings" | head -n 1)
  bg_start "$BATS_TEST_TMPDIR/c.out" env PIO_SOCKET="$PIO_SOCK_B" timeout 60 "$BATS_TEST_TMPDIR/liar"
  # the Fortran side then waits for answers that never come: the receive of
  # the next array times out (PIO_Recv without ierr stops the program)
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 120 "$PROG/pio-ftypes"
  echo "$output"
  assert_failure
  assert_output --partial "FAIL pio-ftypes: integer: answer differs from NOT of what was sent"
}

@test "errors with ierr: the code in ierr, the words from PIO_Strerror, the message kept" {
  pair
  bg_start "$BATS_TEST_TMPDIR/c.out" env PIO_SOCKET="$PIO_SOCK_B" timeout 60 "$PROG/pio-fpartner" errors
  local cpid=$BG_PID
  run env PIO_SOCKET="$PIO_SOCK_A" PIO_PARTNER_TIMEOUT=1 timeout 60 "$PROG/pio-ferrors" ierr
  echo "$output"
  assert_success
  assert_line "PIO_Send before PIO_Init: 16 PIO_ENOTINIT: PIO is not initialized: call PIO_Init first"
  assert_line "PIO_Init twice: 17 PIO_EINITED: PIO is already initialized in this process"
  assert_line "PIO_Setclasses with a share of 0: 1 PIO_EINVAL: invalid argument"
  assert_line "PIO_Setclasses: 0 PIO_OK: success"
  assert_line "PIO_Setpartner(nobody): 4 PIO_EPARTNER: unknown partner application: check the name given to PIO_Setpartner"
  assert_line "PIO_Recv with nothing sent: 6 PIO_ETIMEDOUT: timed out"
  assert_line "PIO_Recv of 10 into 5: 10 PIO_ETRUNC: receive buffer too small for the message: the message is kept, retry larger"
  assert_line "PIO_Recv of doubles as PIO_INTEGER: 9 PIO_ETYPE: datatype does not match the message: receive it with the sender's type"
  assert_line "PIO_Recv of 10 into 10: 0 PIO_OK: success"
  assert_line "PIO_Send of REAL(8) as PIO_REAL: 1 PIO_EINVAL: invalid argument"
  assert_line "PIO_Send of 6 characters from hello: 1 PIO_EINVAL: invalid argument"
  assert_line "PIO_Isend of a strided section: 1 PIO_EINVAL: invalid argument"
  assert_line "PIO_Send on channel PIO_USER(7) of 2: 29 PIO_ECHANNEL: the channel named with PIO_USER(i) does not exist or is down: name another one, or use PIO_DYNAMIC"
  assert_line "OK pio-ferrors ierr"
  bg_wait "$cpid"
  [ "$BG_RC" -eq 0 ] || { cat "$BATS_TEST_TMPDIR/c.out"; fail "pio-fpartner exited $BG_RC"; }
}

@test "several requests: PIO_Waitany gives the one that completed (from 1), PIO_Testany, PIO_Waitall, null arrays, a timeout" {
  pair
  bg_start "$BATS_TEST_TMPDIR/c.out" env PIO_SOCKET="$PIO_SOCK_B" timeout 60 "$PROG/pio-fpartner" reqs
  local cpid=$BG_PID
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 60 "$PROG/pio-freqs"
  echo "$output"
  assert_success
  assert_output "OK pio-freqs"
  bg_wait "$cpid"
  run cat "$BATS_TEST_TMPDIR/c.out"
  [ "$BG_RC" -eq 0 ] || fail "pio-fpartner exited $BG_RC: $output"
  assert_output "OK pio-fpartner reqs"
}

@test "errors: every code's name and words are the same from Fortran as from C" {
  run "$PROG/pio-fpartner" strerror
  assert_success
  local c_out=$output
  run "$PROG/pio-ferrors" strerror
  assert_success
  [ "$output" = "$c_out" ] || { diff <(echo "$c_out") <(echo "$output"); fail "the tables differ"; }
  assert_line "6|PIO_ETIMEDOUT|timed out"
  assert_line "-1|PIO_E?|unknown PIO error"
}

@test "errors without ierr: a failing call prints its words and stops with the code as exit status" {
  pair
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 60 "$PROG/pio-ferrors" stop-recv
  echo "$output"
  assert_failure 6 # PIO_ETIMEDOUT
  assert_line "joined"
  assert_line "pio: PIO_Recv: timed out (PIO_ETIMEDOUT)"
  assert_line "ERROR STOP 6"
  refute_output --partial "FAIL"

  run env PIO_SOCKET="$BATS_TEST_TMPDIR/nothing.sock" timeout 60 "$PROG/pio-ferrors" stop-init
  assert_failure 3 # PIO_ENOPIOD
  assert_line "pio: PIO_Init: no piod is running here: start piod or set PIO_SOCKET to its control socket (PIO_ENOPIOD)"

  # the binding's own checks say which one failed
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 60 "$PROG/pio-ferrors" stop-count
  assert_failure 1 # PIO_EINVAL
  assert_line "pio: PIO_Send: invalid argument (PIO_EINVAL): count 5 of PIO_DOUBLE_PRECISION is more than the buffer holds (4 REAL(8) elements, 32 bytes)"
  refute_output --partial "FAIL"

  # and calls that succeed without ierr go on
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 60 "$PROG/pio-ferrors" stop-ok
  assert_success
  assert_output "OK stop-ok: fortran on A"
}

@test "constants: every status code, datatype and numeric #define of pio.h has its C value in module pio" {
  # NAME VALUE from the C X-lists, plus every '#define PIO_NAME number' of pio.h
  {
    "$PROG/pio-fpartner" consts
    sed -nE 's/^#define (PIO_[A-Z0-9_]+)[[:space:]]+\(?(-?[0-9]+)\)?([[:space:]].*)?$/\1 \2/p' \
      "$PIO_SRC/libpio/pio.h"
  } | sort -u >"$BATS_TEST_TMPDIR/c.txt"
  [ "$(wc -l <"$BATS_TEST_TMPDIR/c.txt")" -gt 60 ]
  grep -qx 'PIO_WAIT_FOREVER -1' "$BATS_TEST_TMPDIR/c.txt"
  grep -qx 'PIO_DOUBLE_PRECISION 15' "$BATS_TEST_TMPDIR/c.txt"
  {
    echo "program consts"
    echo "  use pio"
    echo "  implicit none"
    while read -r name value; do
      echo "  print '(a,1x,i0)', '$name', $name"
    done <"$BATS_TEST_TMPDIR/c.txt"
    echo "end program consts"
  } >"$BATS_TEST_TMPDIR/consts.f90"
  gfortran -std=f2018 -I"$PIO_BUILD/bindings/fortran" -o "$BATS_TEST_TMPDIR/consts" \
    "$BATS_TEST_TMPDIR/consts.f90"
  run "$BATS_TEST_TMPDIR/consts"
  assert_success
  diff "$BATS_TEST_TMPDIR/c.txt" <(echo "$output" | sort -u)
}

@test "merged output from Fortran: raw blocks of 2 processes, a strided section and a string, byte exact" {
  pair
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 120 "${MPIRUN[@]}" -np 2 "$PROG/pio-ffile" raw B raw.bin </dev/null
  echo "$output"
  assert_success
  assert_output --partial "OK pio-ffile raw: process 1 of 2"
  run python3 - "$EXP/raw.bin" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
assert len(b) == 256 + 216, len(b)
for r in range(2):
    o = 256 * r
    assert struct.unpack_from("<24d", b, o) == tuple(1000.0 * r + i for i in range(1, 25))
    assert struct.unpack_from("<4i", b, o + 192) == (21, 22, 23, 24)  # b(2, :) of b = 10 i + j
    assert b[o + 208:o + 216] == b"Fortran!"
assert b[216:256] == bytes(40)  # the hole between the blocks
print("raw.bin: both blocks exact")
PY
  echo "$output"
  assert_success
}

@test "merged output from Fortran: an HDF5 dataset in Fortran order, read back by h5py" {
  pair
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 120 "${MPIRUN[@]}" -np 2 "$PROG/pio-ffile" hdf5 B t.h5 </dev/null
  echo "$output"
  assert_success
  assert_output --partial "OK pio-ffile hdf5: process 0 wrote 2 planes"
  # Fortran a(i, j, k), shape (5, 4, 3), is /fortran/T[k-1][j-1][i-1], shape (3, 4, 5)
  run /usr/bin/python3 - "$EXP/t.h5" <<'PY'
import sys, h5py
a = h5py.File(sys.argv[1], "r")["/fortran/T"][...]
assert a.shape == (3, 4, 5) and a.dtype == "float64", (a.shape, a.dtype)
bad = [(i, j, k) for i in range(1, 6) for j in range(1, 5) for k in range(1, 4)
       if a[k - 1, j - 1, i - 1] != 100 * i + 10 * j + k]
assert not bad, bad[:5]
print("h5py: /fortran/T (3, 4, 5) exact")
PY
  echo "$output"
  assert_success
}

@test "merged output from Fortran: errors carry the code, the words and the remote side's text" {
  pair
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 60 "$PROG/pio-ffile" errors B
  echo "$output"
  assert_failure 26 # PIO_EPERM, from the call without ierr
  assert_line "open ../escape.bin: 26 PIO_EPERM: permission denied: B: ../escape.bin: the path leaves the export root"
  assert_line "open nodir/x.bin: 21 PIO_ENOENT: no such file, object or name: B: nodir/x.bin: No such file or directory"
  # refused by the binding: no remote text (not the previous call's)
  assert_line "open_dataset without a name: 1 PIO_EINVAL: invalid argument"
  assert_line "open_dataset of COMPLEX: 19 PIO_ENOSYS: operation not supported"
  assert_line "write_slab of 3 elements into 4: 1 PIO_EINVAL: invalid argument"
  assert_line "write_slab of REAL into INTEGER: 1 PIO_EINVAL: invalid argument"
  assert_line "write_slab with 3 dimensions into 2: 1 PIO_EINVAL: invalid argument"
  assert_line "write_slab past the shape: 1 PIO_EINVAL: invalid argument"
  assert_line "write_at on an HDF5 file: 1 PIO_EINVAL: invalid argument"
  assert_line "write_slab of column 6: 0 PIO_OK: success"
  assert_line "close e.h5: 0 PIO_OK: success"
  assert_line "pio: PIO_File_open(B, ../escape.bin): permission denied (PIO_EPERM): B: ../escape.bin: the path leaves the export root"
  refute_output --partial "FAIL"
  # e.h5: column 6 (Fortran) is row 5 (C) of the (6, 4) dataset
  run /usr/bin/python3 -c '
import sys, h5py
a = h5py.File(sys.argv[1], "r")["/d"][...]
assert a.shape == (6, 4) and a.dtype == "int32", (a.shape, a.dtype)
assert (a[5] == 7).all() and (a[:5] == 0).all(), a
print("ok")' "$EXP/e.h5"
  assert_success
}

# ---- visualization feeds ------------------------------------------------------

@test "feed: 2 Fortran processes feed 4 steps of three fields to pio-vizd, archived exact with x fastest" {
  local W=$BATS_TEST_TMPDIR VIZD=$PIO_BUILD/bin/pio-vizd
  [ -x "$VIZD" ] || fail "pio-vizd not built: run make"
  pio_pair_loopback "$W" 2
  mkdir "$W/arch"
  bg_start "$W/vizd.log" env -u DISPLAY PIO_SOCKET="$PIO_SOCK_B" timeout 120 "$VIZD" \
    --threads 2 --status-file "$W/st.json" --archive "$W/arch" --steps 4
  local vpid=$BG_PID
  pio_wait_until 20 grep -q "receiving threads" "$W/vizd.log" || { cat "$W/vizd.log"; fail "pio-vizd did not start"; }
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 120 "${MPIRUN[@]}" -np 2 "$PROG/pio-ffeed" feed vizd 4 </dev/null
  echo "$output"
  assert_success
  assert_line "OK pio-ffeed feed: process 0 of 2 sent 4 steps of planes y 1 .. 2 (lossless)"
  assert_line "OK pio-ffeed feed: process 1 of 2 sent 4 steps of planes y 3 .. 5 (lossless)"
  bg_wait "$vpid"
  cat "$W/vizd.log"
  [ "$BG_RC" -eq 0 ] || fail "pio-vizd exited $BG_RC"
  grep -q "4 steps complete, 0 dropped" "$W/vizd.log"
  [ "$(ls "$W/arch"/step_*.vti | wc -l)" -eq 4 ]
  # each .vti (raw appended binary) holds the whole grid; Fortran's f(i, j, k)
  # is point (i-1) + 6 (j-1) + 30 (k-1): x fastest, as the program put it
  run /usr/bin/python3 - "$W/arch" 4 2 <<'PY'
import re, struct, sys
arch, nsteps, nprocs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
nx, ny, nz = 6, 5, 4
# the series: each step's file with its time (in any order: with several
# receiving threads, pio-vizd may complete a step before the one before it)
pvd = re.findall(r'timestep="([^"]*)"[^>]*file="([^"]*)"', open(arch + "/step.pvd").read())
assert sorted((f, float(t)) for t, f in pvd) == \
    [("step_%06d.vti" % s, 0.5 * s) for s in range(1, nsteps + 1)], pvd
def rank_of(j):  # the process that put plane y = j
    return [r for r in range(nprocs) if r * ny // nprocs < j <= (r + 1) * ny // nprocs][0]
code = {"Float64": "d", "Float32": "f", "Int32": "i"}
for s in range(1, nsteps + 1):
    b = open("%s/step_%06d.vti" % (arch, s), "rb").read()
    head, raw = b.split(b'<AppendedData encoding="raw">', 1)
    head, raw = head.decode(), raw[raw.index(b"_") + 1:]
    size = {"UInt32": "<I", "UInt64": "<Q"}[re.search(r'header_type="(\w+)"', head).group(1)]
    for attr in ('WholeExtent="0 5 0 4 0 3"', 'Origin="0.5 -1 2"', 'Spacing="0.25 0.5 1"'):
        assert attr in head, (s, attr)
    arrays = {m.group(2): (m.group(1), int(m.group(3))) for m in re.finditer(
        r'<DataArray type="(\w+)" Name="(\w+)" format="appended"[^>]*offset="(\d+)"', head)}
    assert sorted(arrays) == ["density", "owner", "temperature"], arrays
    def values(name, vtype):
        t, off = arrays[name]
        assert t == vtype, (s, name, t)
        n = struct.unpack_from(size, raw, off)[0] // struct.calcsize(code[t])
        assert n == nx * ny * nz, (s, name, n)
        return struct.unpack_from("<%d%s" % (n, code[t]), raw, off + struct.calcsize(size))
    T, O, D = values("temperature", "Float64"), values("owner", "Int32"), values("density", "Float32")
    for k in range(1, nz + 1):
        for j in range(1, ny + 1):
            for i in range(1, nx + 1):
                p = (i - 1) + nx * (j - 1) + nx * ny * (k - 1)
                want = (100 * i + 10 * j + k + 0.5 * s,
                        100000 * rank_of(j) + 1000 * s + 100 * i + 10 * j + k,
                        i + 0.5 * j + 0.25 * k + s)
                assert (T[p], O[p], D[p]) == want, (s, i, j, k, (T[p], O[p], D[p]), want)
print("%d steps of %d x %d x %d: temperature, owner, density exact" % (nsteps, nx, ny, nz))
PY
  echo "$output"
  assert_success
  assert_output "4 steps of 6 x 5 x 4: temperature, owner, density exact"
}

@test "feed errors: the binding's and libpio's checks with ierr; without it, a stop that says why" {
  pio_pair_loopback "$BATS_TEST_TMPDIR" 2
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 60 "$PROG/pio-ffeed" errors
  echo "$output"
  assert_failure 1 # PIO_EINVAL, from the call without ierr
  local line
  while IFS= read -r line; do
    assert_line "$line"
  done <<'LINES'
open with 0 fields: 1 PIO_EINVAL: invalid argument
open with a blank name: 1 PIO_EINVAL: invalid argument
open with a name twice: 1 PIO_EINVAL: invalid argument
open with a COMPLEX field: 1 PIO_EINVAL: invalid argument
open with 3 fields and 2 names: 1 PIO_EINVAL: invalid argument
open with an empty grid: 1 PIO_EINVAL: invalid argument
put on a feed never opened: 1 PIO_EINVAL: invalid argument
open a (double), b (REAL): 0 PIO_OK: success
put before begin_step: 1 PIO_EINVAL: invalid argument
begin_step -1: 1 PIO_EINVAL: invalid argument
begin_step 7: 0 PIO_OK: success
begin_step 8 within step 7: 1 PIO_EINVAL: invalid argument
put field 0: 1 PIO_EINVAL: invalid argument
put field 3 of 2: 1 PIO_EINVAL: invalid argument
put REAL into the double field: 1 PIO_EINVAL: invalid argument
put REAL(8) into the REAL field: 1 PIO_EINVAL: invalid argument
put a block of 2 planes from 4: 1 PIO_EINVAL: invalid argument
put from x 0: 1 PIO_EINVAL: invalid argument
put past the grid: 1 PIO_EINVAL: invalid argument
put 0 points: 1 PIO_EINVAL: invalid argument
put with 2 coordinates: 1 PIO_EINVAL: invalid argument
put plane 2: 0 PIO_OK: success
put the section d(2, :, :): 0 PIO_OK: success
end_step: 0 PIO_OK: success
end_step again: 1 PIO_EINVAL: invalid argument
begin_step 7 again: 1 PIO_EINVAL: invalid argument
info: 0 PIO_OK: success
info: sent 0 skipped 1 present 0
close: 0 PIO_OK: success
close again: 1 PIO_EINVAL: invalid argument
put after close: 1 PIO_EINVAL: invalid argument
pio: PIO_Feed_put: invalid argument (PIO_EINVAL): field 1 is REAL(8) (PIO_DOUBLE): a buffer of REAL(4) elements does not fit it
LINES
  refute_output --partial "FAIL"
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 60 "$PROG/pio-ffeed" errors block
  assert_failure 1
  assert_line "pio: PIO_Feed_put: invalid argument (PIO_EINVAL): the block's y, 4 .. 6, is not inside the grid's 1 .. 5"
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 60 "$PROG/pio-ffeed" errors name
  assert_failure 1
  assert_line "pio: PIO_Feed_open(nobody): invalid argument (PIO_EINVAL): names(2) must have 1 .. 31 characters"
}

# ---- one-sided access ---------------------------------------------------------

@test "windows from Fortran: 2 processes get, put, add and swap in each other's windows (PIO_SELF), exact" {
  pio_pair_loopback "$BATS_TEST_TMPDIR" 1
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 120 "${MPIRUN[@]}" -np 2 "$PROG/pio-fwin" rw </dev/null
  echo "$output"
  assert_success
  refute_output --partial "FAIL"
  local line
  while IFS= read -r line; do
    assert_line "$line"
  done <<'LINES'
process 0 got 1001 1002 1003 1004 1005 1006 1007 1008 from process 1
process 1 got 1 2 3 4 5 6 7 8 from process 0
process 0: process 1 put 101 103 105 107 120 121
process 1: process 0 put 1 3 5 7 20 21
process 0: fetch-and-add word of process 0 is 2000
process 1: fetch-and-add word of process 0 is 2000
process 0: compare-and-swap 0 -> 42 then refused (old 42); own word 43
process 1: compare-and-swap 0 -> 43 then refused (old 43); own word 42
process 1 got v(2:4) of process 0: 8 9 10
get from an empty window: 1 PIO_EINVAL: invalid argument
get of 16 bytes at 120 of a 128-byte window: 1 PIO_EINVAL: invalid argument
put at disp -8: 1 PIO_EINVAL: invalid argument
fetch-and-add at disp 4: 1 PIO_EINVAL: invalid argument
iget into a strided section: 1 PIO_EINVAL: invalid argument
window of a strided section: 1 PIO_EINVAL: invalid argument
get of 8 bytes at 0: 0 PIO_OK: success
get on a freed window: 1 PIO_EINVAL: invalid argument
free again: 1 PIO_EINVAL: invalid argument
OK pio-fwin rw: process 0 of 2
OK pio-fwin rw: process 1 of 2
LINES
}

@test "windows from Fortran: without ierr, a strided window or non-blocking buffer stops the program, saying why" {
  pio_pair_loopback "$BATS_TEST_TMPDIR" 1
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 60 "$PROG/pio-fwin" stop create
  echo "$output"
  assert_failure 1 # PIO_EINVAL
  assert_line "pio: PIO_Win_create: invalid argument (PIO_EINVAL): the window's memory is not contiguous: a window needs contiguous memory (an array, or a section without strides), which other processes read and write until PIO_Win_free"
  refute_output --partial "FAIL"
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 60 "$PROG/pio-fwin" stop iget
  echo "$output"
  assert_failure 1
  assert_line "pio: PIO_Iget: invalid argument (PIO_EINVAL): the buffer is not contiguous: a non-blocking call needs contiguous memory (an array, or a section without strides), which it uses until PIO_Wait or PIO_Test completes it"
  refute_output --partial "FAIL"
}

# ---- remote file access --------------------------------------------------------

@test "remote pread from Fortran (PIO_Rfile): pieces, past the end, a strided section equal a local read; ENOENT" {
  pair
  mkdir -p "$EXP/d"
  # 9 MiB + 17 bytes: more than libpio's 4 MiB staging window, not a multiple of a piece
  head -c $(((9 << 20) + 17)) /dev/urandom >"$EXP/d/data.bin"
  local tls
  for tls in tcp all; do
    run env UCX_TLS=$tls PIO_SOCKET="$PIO_SOCK_A" timeout 120 "$PROG/pio-frread" read B d/data.bin "$EXP/d/data.bin"
    echo "UCX_TLS=$tls: $output"
    assert_success
    refute_output --partial "FAIL"
    assert_line "read: libpio $(pio-info --version | sed -E 's/^pio-info ([0-9.]+) .*/\1/')"
    assert_line "read: open d/data.bin: $(((9 << 20) + 17)) bytes"
    assert_line "read: pieces of 1048579: $(((9 << 20) + 17)) bytes equal, the last 1048569"
    assert_line "read: 12 MiB at 1: $(((9 << 20) + 16)) bytes equal at 1"
    assert_line "read: 100 REAL(8) at 8000: 800 bytes equal at 8000"
    assert_line "read: b(1, :) at 12345: 4096 bytes equal at 12345"
    assert_line "read: 64 bytes at size - 10: 10 bytes equal at $(((9 << 20) + 7))"
    assert_line "read: 8 bytes at size: got 0"
    assert_line "read: list range: 4096 bytes equal at 777777"
    assert_line "read: list range: 4096 bytes equal at 5"
    assert_line "read: list range: 4096 bytes equal at 3000000"
    assert_line "read: list range: 40 bytes equal at $(((9 << 20) + 17 - 40))"
    assert_line "OK pio-frread read"
  done
  run env UCX_TLS=tcp PIO_SOCKET="$PIO_SOCK_A" timeout 60 "$PROG/pio-frread" errors B d/data.bin
  echo "$output"
  assert_success
  assert_line "open d/nothing.bin: 21 PIO_ENOENT: no such file, object or name: B: d/nothing.bin: No such file or directory"
  assert_line --regexp "^open \.\./escape\.bin: (26 PIO_EPERM|1 PIO_EINVAL): .*leaves the export root"
  # refused by the binding: no remote text (not the previous call's)
  assert_line "pread of a file not opened: 1 PIO_EINVAL: invalid argument"
  assert_line "open d/data.bin: 0 PIO_OK: success"
  assert_line "pread at offset -8: 1 PIO_EINVAL: invalid argument"
  assert_line "pread of 16 bytes at 0: 0 PIO_OK: success"
  assert_line "close: 0 PIO_OK: success"
  assert_line "pread after close: 1 PIO_EINVAL: invalid argument"
  assert_line "close again: 1 PIO_EINVAL: invalid argument"
  assert_line "OK pio-frread errors"
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 60 "$PROG/pio-frread" stop B d/nothing.bin
  echo "$output"
  assert_failure 21 # PIO_ENOENT
  assert_line "pio: PIO_Rfile_open(B, d/nothing.bin): no such file, object or name (PIO_ENOENT): B: d/nothing.bin: No such file or directory"
  refute_output --partial "FAIL"
}

@test "coverage: every function pio.h declares is a public procedure of module pio" {
  # 'int PIO_Send(' ... at the start of a line: the declarations of pio.h
  sed -nE 's/^[a-z][a-z _*]*[ *](PIO_[A-Za-z_]+)\(.*/\1/p' "$PIO_SRC/libpio/pio.h" | sort -u \
    >"$BATS_TEST_TMPDIR/calls.txt"
  [ "$(wc -l <"$BATS_TEST_TMPDIR/calls.txt")" -ge 21 ]
  grep -qx PIO_File_error_text "$BATS_TEST_TMPDIR/calls.txt"
  {
    echo "program calls"
    sed 's/.*/  use pio, only: &/' "$BATS_TEST_TMPDIR/calls.txt"
    echo "  implicit none"
    echo "end program calls"
  } >"$BATS_TEST_TMPDIR/calls.f90"
  run gfortran -std=f2018 -fsyntax-only -I"$PIO_BUILD/bindings/fortran" "$BATS_TEST_TMPDIR/calls.f90"
  [ "$status" -eq 0 ] || fail "module pio lacks: $(grep -oE "‘pio_[^’]+’" <<<"$output" | sort -u | tr '\n' ' ')"
}

# ---- examples/fortran ------------------------------------------------------

@test "hello: the Fortran and the C hello greet each other, both ways" {
  [ -x "$FEX/hello" ] || fail "examples/fortran not built: run make"
  pio_pair_loopback "$BATS_TEST_TMPDIR" 2
  local EX=$PIO_BUILD/examples send recv
  for pair in "$FEX/hello $EX/hello" "$EX/hello $FEX/hello"; do
    read -r send recv <<<"$pair"
    bg_start "$BATS_TEST_TMPDIR/recv.out" env PIO_SOCKET="$PIO_SOCK_B" timeout 60 "$recv" recv
    local rpid=$BG_PID
    run env PIO_SOCKET="$PIO_SOCK_A" timeout 60 "$send" send
    assert_success
    assert_output 'hello-send: sent "hello from PIO"'
    bg_wait "$rpid"
    run cat "$BATS_TEST_TMPDIR/recv.out"
    [ "$BG_RC" -eq 0 ] || fail "$recv exited $BG_RC: $output"
    assert_output 'hello-recv: received "hello from PIO" (15 bytes) from process 0'
  done
}

@test "hello: a partner that never joins is named in the Fortran hello's error" {
  pio_pair_loopback "$BATS_TEST_TMPDIR" 2
  run env PIO_SOCKET="$PIO_SOCK_A" PIO_PARTNER_TIMEOUT=1 timeout 60 "$FEX/hello" send
  assert_failure 1
  assert_output --partial "hello-send: PIO_Setpartner(hello-recv): unknown partner application"
}

# run_sim_viz SIM VIZ NSIM NVIZ: the two MPI jobs, sim on system A, viz on B
run_sim_viz() {
  local sim=$1 viz=$2 nsim=$3 nviz=$4
  pio_pair_loopback "$BATS_TEST_TMPDIR" 2
  bg_start "$BATS_TEST_TMPDIR/viz.out" env PIO_SOCKET="$PIO_SOCK_B" \
    timeout 120 "${MPIRUN[@]}" -np "$nviz" "$viz" viz
  local vpid=$BG_PID
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 120 "${MPIRUN[@]}" -np "$nsim" "$sim" sim
  local sim_rc=$status sim_out=$output
  bg_wait "$vpid"
  run cat "$BATS_TEST_TMPDIR/viz.out"
  [ "$sim_rc" -eq 0 ] || fail "sim exited $sim_rc: $sim_out; viz said: $output"
  [ "$BG_RC" -eq 0 ] || fail "viz exited $BG_RC: $output"
  [[ $sim_out == *"sim: sent $((nsim * 3)) of $((nsim * 3)) messages"* ]] || fail "sim said: $sim_out"
  assert_output --partial "viz: received $((nsim * 3)) of $((nsim * 3)) messages, all correct"
  # the bundle carried the data: bytes went out on A's channels to B
  run env PIO_SOCKET="$PIO_SOCK_A" "$PIO_BUILD/bin/pio-info" --json
  assert_output --regexp '"tx_bytes": [1-9][0-9]{6,}'
}

@test "mpi_sim_viz: a Fortran MPI sim (4 ranks) streams 3 steps to a C viz (2 ranks), all correct" {
  [ -x "$FEX/mpi_sim_viz" ] || fail "examples/fortran not built: run make"
  run_sim_viz "$FEX/mpi_sim_viz" "$PIO_BUILD/examples/mpi_sim_viz" 4 2
}

@test "mpi_sim_viz: a C sim (4 ranks) streams 3 steps to a Fortran MPI viz (4 ranks), all correct" {
  run_sim_viz "$PIO_BUILD/examples/mpi_sim_viz" "$FEX/mpi_sim_viz" 4 4
}

# ---- install ------------------------------------------------------------------

@test "install: examples/fortran build with mpif90 and only pkg-config --cflags --libs pio-fortran, and run" {
  local prefix=$BATS_TEST_TMPDIR/prefix settings san args
  # make install with this build's own settings, so that nothing rebuilds
  # (a different flag would rewrite $PIO_BUILD/.make-settings: checked below)
  settings=$(cat "$PIO_BUILD/.make-settings")
  san=$(grep -oE -- '-fsanitize=[a-z]+' <<<"$settings" | head -n 1)
  mapfile -t args < <(pio_make_args)
  run make -C "$PIO_SRC" "${args[@]}" install PREFIX="$prefix"
  [ "$status" -eq 0 ] || { echo "$output" | tail -n 30; fail "make install failed"; }
  [ "$(cat "$PIO_BUILD/.make-settings")" = "$settings" ] || fail "make install changed the build settings"
  [ -f "$prefix/include/pio.mod" ]
  [ -f "$prefix/lib/libpiof.a" ]
  [ -f "$prefix/include/pio.h" ]

  export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
  run pkg-config --cflags --libs pio-fortran
  assert_success
  # -I for pio.mod (and pio.h), then the libraries; the private
  # requirements' -I flags (libzmq's) may sit between
  [[ ${output% } == "-I$prefix/include "*" -L$prefix/lib -lpiof -lpio" ]] || fail "pkg-config said: $output"
  local flags=$output
  cd "$BATS_TEST_TMPDIR"
  cp "$PIO_SRC/examples/fortran/hello.f90" "$PIO_SRC/examples/fortran/mpi_sim_viz.f90" .
  # exactly the README's commands ($san: a sanitizer build's libpio needs its runtime)
  run mpif90 -o hello hello.f90 $flags $san
  assert_success
  run mpif90 -o mpi_sim_viz mpi_sim_viz.f90 $flags $san
  assert_success
  # they run with the installed shared libpio
  export LD_LIBRARY_PATH=$prefix/lib
  run ldd ./mpi_sim_viz
  assert_output --regexp "libpio\.so\.0 => $prefix/lib/libpio\.so\.0"
  # ... and a C program built the same way takes nothing from libpiof.a
  printf '#include <pio.h>\nint main(void) { return PIO_OK; }\n' >c.c
  run bash -c "cc -o c c.c $flags $san && ldd ./c"
  assert_success
  refute_output --partial "libgfortran"

  MPIRUN+=(-x LD_LIBRARY_PATH)
  run_sim_viz "$BATS_TEST_TMPDIR/mpi_sim_viz" "$PIO_BUILD/examples/mpi_sim_viz" 4 2
  bg_start "$BATS_TEST_TMPDIR/recv.out" env PIO_SOCKET="$PIO_SOCK_B" timeout 60 "$PIO_BUILD/examples/hello" recv
  local rpid=$BG_PID
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 60 ./hello send
  assert_success
  assert_output 'hello-send: sent "hello from PIO"'
  bg_wait "$rpid"
  [ "$BG_RC" -eq 0 ]
}
