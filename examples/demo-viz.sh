#!/usr/bin/env bash
# demo-viz.sh - make demo-viz: a 4-rank MPI heat simulation (examples/heat3d)
# feeds pio-vizd live; frames and a time series ParaView opens are left in
# build/demo-viz/.
# SPDX-License-Identifier: BSD-3-Clause
#
# Two piods on loopback (the simulation's host A, the receiver's host B);
# pio-vizd on B with 2 receiving threads writes every step (the archive:
# .vti files and a .pvd) and renders a PNG frame of every step (isosurface
# and slice, offscreen: it starts its own Xvfb when there is no display),
# and serves the live page on 127.0.0.1:$DEMO_VIZ_PORT while it runs.
# DEMO_VIZ_STEPS (20), DEMO_VIZ_N (64: the grid is N^3), DEMO_VIZ_PORT (8099).
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-build/default}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
export PIO_SRC=$ROOT PIO_BUILD=$BUILD
STEPS=${DEMO_VIZ_STEPS:-20} N=${DEMO_VIZ_N:-64} PORT=${DEMO_VIZ_PORT:-8099}
out=$ROOT/build/demo-viz
rm -rf "$out"
mkdir -p "$out/series" "$out/frames"
# shellcheck source=../tests/lib/piod.bash
source "$ROOT/tests/lib/piod.bash"
work=$(mktemp -d /tmp/pio-demo-viz.XXXXXX)
vizd_pid=""
cleanup() {
  [ -n "$vizd_pid" ] && kill "$vizd_pid" 2>/dev/null && wait "$vizd_pid" 2>/dev/null
  pio_piods_stop
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cat <<TXT
PIO demo: a parallel simulation (4 MPI ranks, a ${N}^3 heat-diffusion grid)
streams each step to pio-vizd, which assembles the ranks' blocks, keeps every
step as a time series and renders each one offscreen. The live page is at
http://127.0.0.1:$PORT/ while it runs.

TXT
pio_pair_loopback "$work" 2 >/dev/null || { echo "demo-viz: the piods did not start" >&2; exit 1; }
PIO_SOCKET=$PIO_SOCK_B "$BUILD/bin/pio-vizd" --threads 2 --archive "$out/series" \
  --archive-name heat --png "$out/frames" --png-every --png-size 800x600 --http "$PORT" \
  --steps "$STEPS" --status-file "$out/status.json" >"$out/pio-vizd.log" 2>&1 &
vizd_pid=$!
for _ in $(seq 200); do grep -q "receiving threads" "$out/pio-vizd.log" && break; sleep 0.1; done
grep -q "receiving threads" "$out/pio-vizd.log" || { cat "$out/pio-vizd.log" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
PIO_SOCKET=$PIO_SOCK_A mpirun --oversubscribe --mca mpi_yield_when_idle 1 -np 4 \
  "$BUILD/examples/heat3d" --n "$N" --steps "$STEPS" --stats </dev/null || exit 1
wait "$vizd_pid"
rc=$?
vizd_pid=""
cat "$out/pio-vizd.log"
[ $rc -eq 0 ] || exit $rc
nf=$(ls "$out/frames"/frame_*.png 2>/dev/null | wc -l)
nv=$(ls "$out/series"/heat_*.vti 2>/dev/null | wc -l)
cat <<TXT

Left in $out:
  series/heat.pvd       the time series ($nv steps): paraview $out/series/heat.pvd
  frames/frame_*.png    $nf rendered frames; the last: $(ls "$out/frames"/frame_*.png | tail -1)
  status.json           pio-vizd's counters at the end
TXT
[ "$nf" -eq "$STEPS" ] && [ "$nv" -eq "$STEPS" ]
