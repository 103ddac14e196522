#!/usr/bin/env bats
# python.bats - the Python package pio (bindings/python): installed with pip
# as a user would, then its pytest suite (tests/python) against a piod pair
# on loopback and on the test bed; mpi4py ranks; the coupling example.
# SPDX-License-Identifier: BSD-3-Clause
#
# The package is built once per file into a venv that sees Debian's
# python3-cffi, -numpy, -mpi4py and -pytest (--system-site-packages), from a
# copy of bindings/python (pip writes its build folder beside setup.py).

load "$BATS_TEST_DIRNAME/../lib/helpers"
load "$BATS_TEST_DIRNAME/../lib/piod"

MPIRUN=(mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1)

setup_file() {
  export VENV=$BATS_FILE_TMPDIR/venv
  cp -r "$PIO_SRC/bindings/python" "$BATS_FILE_TMPDIR/pkg"
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
  PIO_BUILD=$PIO_BUILD "$VENV/bin/pip" install --no-index "$BATS_FILE_TMPDIR/pkg" \
    >"$BATS_FILE_TMPDIR/pip.log" 2>&1 || { cat "$BATS_FILE_TMPDIR/pip.log" >&3; return 1; }
}

setup() {
  W=$BATS_TEST_TMPDIR
  mkdir -p "$W/export/py"
  export PIO_EXPORT_B=$W/export PIO_VIZD=$PIO_BUILD/bin/pio-vizd
}

teardown() {
  pio_cleanup
}

@test "pip install ./bindings/python builds against the in-tree libpio; import pio names its version and errors" {
  run grep -E "Successfully installed pio-[0-9.]+" "$BATS_FILE_TMPDIR/pip.log"
  assert_success
  run "$VENV/bin/python" -c 'import pio; print(pio.version(), pio.ERRNAMES[pio.ETIMEDOUT], pio.__file__)'
  assert_success
  assert_output --regexp "^[0-9]+\.[0-9]+\.[0-9]+ PIO_ETIMEDOUT $VENV/"
  # without a piod: a clear error by name, no crash
  PIO_SOCKET=$W/none.sock run "$VENV/bin/python" -c 'import pio
try:
    pio.init("x")
except pio.Error as e:
    print("raised", e.name)'
  assert_success
  assert_output --partial "raised PIO_ENOPIOD"
}

@test "pytest on loopback: typed numpy messages, waitany/waitall/testany, asyncio, errors, info, copy, a feed" {
  PIO_PIOD_FLAGS="${PIO_PIOD_FLAGS:-} --export $W/export" pio_pair_loopback "$W" 2
  run timeout 300 "$VENV/bin/python" -m pytest -p no:cacheprovider -q "$PIO_SRC/tests/python"
  echo "$output"
  assert_success
  assert_output --regexp "[0-9]+ passed"
  refute_output --regexp "failed|error|skipped"
}

@test "pytest on the test bed: the same suite between two hosts over 2 links" {
  pio_need_root
  local bed
  bed=$(pio_unique_name py)
  pio_bed_up "$bed" --hosts 2 --links 2 --rate 1gbit >/dev/null
  PIO_PIOD_FLAGS="${PIO_PIOD_FLAGS:-} --export $W/export" pio_pair_testbed "$W" "$bed" 2
  run timeout 300 "$PIO_TESTBED" exec "$bed" h1 env PIO_SOCK_A="$PIO_SOCK_A" PIO_SOCK_B="$PIO_SOCK_B" \
    "$VENV/bin/python" -m pytest -p no:cacheprovider -q "$PIO_SRC/tests/python"
  echo "$output"
  assert_success
  assert_output --regexp "[0-9]+ passed"
  refute_output --regexp "failed|error|skipped"
}

@test "under mpi4py the rank and size come from the communicator" {
  pio_pair_loopback "$W" 1
  # each rank writes its own file: mpirun may interleave the ranks' output
  PIO_SOCKET=$PIO_SOCK_A run timeout 120 "${MPIRUN[@]}" -np 3 "$VENV/bin/python" -c '
import sys
from mpi4py import MPI
import pio
pio.init("mpy")
me = pio.app_info()
r = MPI.COMM_WORLD.Get_rank()
open("%s/rank.%d" % (sys.argv[1], r), "w").write("rank %d process %d of %d\n" % (r, me["process"], me["nprocs"]))
MPI.COMM_WORLD.Barrier()
pio.exit()' "$W"
  echo "$output"
  assert_success
  run cat "$W/rank.0" "$W/rank.1" "$W/rank.2"
  assert_output "rank 0 process 0 of 3"$'\n'"rank 1 process 1 of 3"$'\n'"rank 2 process 2 of 3"
}

@test "examples: an MPI C simulation (4 ranks) feeds the Python analysis; its sums match the simulation's" {
  pio_pair_loopback "$W" 2
  PIO_SOCKET=$PIO_SOCK_B "$VENV/bin/python" "$PIO_SRC/examples/python/analysis.py" --png "$W" \
    >"$W/ana.out" 2>&1 &
  local ap=$!
  PIO_SOCKET=$PIO_SOCK_A run timeout 120 "${MPIRUN[@]}" -np 4 "$PIO_BUILD/examples/mpi_sim_py" \
    --rows 32 --cols 128 --steps 60 --every 10
  echo "$output"
  assert_success
  local sim=$output rc=0
  wait "$ap" || rc=$?
  cat "$W/ana.out"
  [ "$rc" -eq 0 ]
  # six steps, the same sums to 9 digits
  [ "$(grep -c '^step' <<<"$sim")" -eq 6 ]
  run "$VENV/bin/python" -c '
import sys
sim = {l.split()[1]: float(l.split()[3]) for l in sys.argv[1].splitlines() if l.startswith("step")}
ana = {l.split()[1]: float(l.split()[3]) for l in open(sys.argv[2]) if l.startswith("step")}
assert sorted(sim) == sorted(ana) and len(sim) == 6, (sim, ana)
for s in sim:
    assert abs(sim[s] - ana[s]) <= 1e-9 * abs(sim[s]), (s, sim[s], ana[s])
print("sums match", len(sim))' "$sim" "$W/ana.out"
  assert_success
  assert_output "sums match 6"
  run file "$W/field.png"
  assert_output --partial "PNG image data"
}
