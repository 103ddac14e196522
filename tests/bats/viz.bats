#!/usr/bin/env bats
# viz.bats - a simulation feeds pio-vizd (PIO_Feed_*): steps assembled
# bit-exact from 4 ranks by 2 receiving threads, the archive read back with
# VTK, PNG frames, newest-only steps planned by process 0 that every rank
# sends, slow outputs (live drops, archive holds back) and a
# receiver killed and restarted under a running simulation.
# SPDX-License-Identifier: BSD-3-Clause
#
# A piod pair on loopback: examples/heat3d (MPI) on A, pio-vizd on B.
# Rendering runs with DISPLAY unset: pio-vizd starts its own Xvfb.

load "$BATS_TEST_DIRNAME/../lib/helpers"
case $PIO_BUILD in *asan*) export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 ;; esac
load "$BATS_TEST_DIRNAME/../lib/piod"

HEAT=$PIO_BUILD/examples/heat3d
VIZD=$PIO_BUILD/bin/pio-vizd
CHECK=$PIO_BUILD/viz/test/viz_archive_check
PY=/usr/bin/python3
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1)

setup() {
  [ -x "$HEAT" ] && [ -x "$VIZD" ] && [ -x "$CHECK" ] || fail "not built: run make"
  pio_pair_loopback "$BATS_TEST_TMPDIR" 2
  W=$BATS_TEST_TMPDIR
}

teardown() {
  pio_cleanup
}

# vizd LOG ARGS...: pio-vizd on B (status in $W/st.json); sets VIZD_PID
vizd() {
  local log=$1
  shift
  VIZD_PID=$(pio_spawn "$log" env -u DISPLAY PIO_VIZD_DEBUG=1 PIO_SOCKET="$PIO_SOCK_B" "$VIZD" \
    --status-file "$W/st.json" "$@")
  pio_wait_until 20 grep -q "receiving threads" "$log" || { cat "$log"; return 1; }
}

# heat NP ARGS...: heat3d on A
heat() {
  local np=$1
  shift
  PIO_SOCKET=$PIO_SOCK_A timeout 120 "${MPIRUN[@]}" -np "$np" "$HEAT" "$@" </dev/null
}

# st KEY: a number from pio-vizd's status
st() {
  "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$W/st.json" "$1"
}

@test "4 ranks, 2 receiving threads: every step bit-exact, the .pvd series read back with VTK, a PNG per step" {
  mkdir "$W/arch" "$W/png"
  # the reference: one process computes the same steps (no receiver: all skipped)
  run heat 1 --n 24 --steps 12 --viz nobody --ref "$W/ref.bin"
  assert_success
  vizd "$W/vizd.log" --threads 2 --archive "$W/arch" --png "$W/png" --png-every \
    --png-size 320x240 --steps 12
  run heat 4 --n 24 --steps 12 --stats
  echo "$output"
  assert_success
  assert_output --partial "OK heat3d: 4 processes (2x2x1)"
  pio_wait_until 30 sh -c "! kill -0 $VIZD_PID"
  cat "$W/vizd.log"
  grep -q "12 steps complete, 0 dropped" "$W/vizd.log"
  run "$CHECK" "$W/arch/step.pvd" 24 12 "$W/ref.bin" 4
  echo "$output"
  assert_success
  assert_output --partial "OK 12 steps of 24^3, temperature bit-exact, ranks 0..3"
  # a frame per step, each a valid 320x240 image that is not blank
  [ "$(ls "$W/png"/frame_*.png | wc -l)" -eq 12 ]
  run "$PY" - "$W/png" <<'PY'
import glob, sys
from PIL import Image, ImageStat
for f in sorted(glob.glob(sys.argv[1] + "/frame_*.png")):
    im = Image.open(f).convert("RGB")
    assert im.size == (320, 240), (f, im.size)
    sd = ImageStat.Stat(im).stddev
    assert max(sd) > 10, (f, sd)
    assert len(im.getcolors(1 << 20) or []) > 50, f
print("frames ok")
PY
  echo "$output"
  assert_success
  [ "$(st steps_complete)" -eq 12 ]
}

@test "live output slower than the simulation: steps dropped, the simulation not held back, memory under the limit" {
  mkdir "$W/png"
  vizd "$W/vizd.log" --threads 2 --png "$W/png" --delay-png 400 --memory 4
  # 32^3 doubles + ints: 384 KiB a step; 4 MB hold at most 10
  run heat 4 --n 32 --steps 40 --sleep 20 --stats
  echo "$output"
  assert_success
  # no rank waited for the receiver
  refute_output --regexp "waited [1-9]"
  assert_output --partial "newest-only"
  pio_wait_until 10 sh -c "[ \$($PY -c 'import json;print(json.load(open(\"$W/st.json\"))[\"outputs\"][0][\"skipped\"])' ) -gt 0 ]"
  cat "$W/st.json"
  [ "$(st memory_peak)" -le "$(st memory_limit)" ]
  # far fewer frames than steps: only the newest step is rendered. The
  # renderer goes on with the newest step after the run (a loaded machine
  # may have finished only the first frame by now): wait for the second
  pio_wait_until 20 sh -c "[ \$($PY -c 'import json;print(json.load(open(\"$W/st.json\"))[\"outputs\"][0][\"done\"])' ) -ge 2 ]"
  frames=$(ls "$W/png"/frame_*.png | wc -l)
  [ "$frames" -ge 2 ] && [ "$frames" -lt 30 ]
}

@test "newest-only: every rank sends exactly the steps process 0 planned; no step is torn or lost to disagreement" {
  vizd "$W/vizd.log" --threads 2
  # 32^3: 384 KiB a step; 2 ms a step, many steps offered for each one sent
  run heat 4 --n 32 --steps 400 --sleep 2 --stats
  echo "$output"
  assert_success
  assert_output --partial "newest-only"
  refute_output --regexp "waited [1-9]"
  sent=$(sed -n 's/.*sent \([0-9]*\), skipped.*/\1/p' <<<"$output" | sort -n)
  missed=$(sed -n 's/.*plans missed \([0-9]*\),.*/\1/p' <<<"$output" | awk '{s += $1} END {print s}')
  [ "$(wc -l <<<"$sent")" -eq 4 ]
  lo=$(head -1 <<<"$sent") hi=$(tail -1 <<<"$sent")
  # every step sent is resolved (complete or dropped) by the receiver
  pio_wait_until 20 sh -c "[ \$($PY -c 'import json;d=json.load(open(\"$W/st.json\"));print(d[\"steps_complete\"]+d[\"steps_dropped\"])') -ge $hi ]"
  cat "$W/st.json"
  complete=$(st steps_complete) dropped=$(st steps_dropped)
  echo "sent $lo..$hi, missed $missed, complete $complete, dropped $dropped"
  [ "$complete" -ge 5 ]
  # the ranks agree: a rank sent a step the others did not only when a plan
  # reached one of them too late (SKIP), and only such steps were dropped.
  # One more: the plan of one of the run's last steps may reach a process
  # even after its PIO_Feed_info (which counts every plan come by then)
  [ $((hi - lo)) -le $((missed + 1)) ]
  [ "$dropped" -le $((missed + 1)) ]
  # the window holds the feed back (on loopback about every other step goes)
  [ "$hi" -lt 400 ]
}

@test "archive output slower than the simulation: no step lost, the simulation held back, memory under the limit" {
  mkdir "$W/arch"
  vizd "$W/vizd.log" --threads 2 --archive "$W/arch" --delay-archive 150 --memory 2 --steps 20
  # 384 KiB a step, 2 MB: the receiver holds 5 steps, then waits
  SECONDS=0
  run heat 4 --n 32 --steps 20 --stats
  echo "$output"
  assert_success
  assert_output --partial "lossless"
  # 20 steps at 150 ms each: the simulation had to wait for the receiver
  assert_output --regexp "waited [1-9]"
  pio_wait_until 30 sh -c "! kill -0 $VIZD_PID"
  cat "$W/vizd.log"
  grep -q "20 steps complete, 0 dropped" "$W/vizd.log"
  [ "$(ls "$W/arch"/step_*.vti | wc -l)" -eq 20 ]
  [ "$(st memory_peak)" -le "$(st memory_limit)" ]
}

@test "the receiver killed and restarted mid-run: the simulation runs on, the new receiver takes the next steps" {
  mkdir "$W/arch1" "$W/arch2"
  vizd "$W/vizd1.log" --threads 2 --archive "$W/arch1"
  PIO_SOCKET=$PIO_SOCK_A timeout $((120 * ${PIO_TEST_MULT:-1})) "${MPIRUN[@]}" -np 4 "$HEAT" --n 24 --steps 60 --sleep 50 \
    --stats </dev/null >"$W/heat.out" 2>&1 &
  hp=$!
  pio_wait_until 30 sh -c "ls $W/arch1/step_00001*.vti"
  kill -9 "$VIZD_PID"
  sleep 1
  vizd "$W/vizd2.log" --threads 2 --archive "$W/arch2"
  rc=0 && wait $hp || rc=$?
  cat "$W/heat.out"
  [ "$rc" -eq 0 ]
  grep -q "OK heat3d" "$W/heat.out"
  # some steps were skipped while no receiver was there
  grep -q "skipped [1-9]" "$W/heat.out"
  # the second receiver archived later steps, in order, each complete
  n2=$(ls "$W/arch2"/step_*.vti | wc -l)
  [ "$n2" -ge 5 ]
  first1=$(ls "$W/arch1"/step_*.vti | head -1) last1=$(ls "$W/arch1"/step_*.vti | tail -1)
  first2=$(ls "$W/arch2"/step_*.vti | head -1)
  [[ $(basename "$first2") > $(basename "$last1") ]]
  [ -n "$first1" ]
}

@test "the receiver killed and restarted at once, before the simulation looked again: it asks, learns the receiver is new, runs on" {
  mkdir "$W/arch1" "$W/arch2"
  # an archive slower than the simulation, 1 MB for steps (166 KB each): the
  # receiver stops taking steps, so the ranks wait for acks when it dies
  vizd "$W/vizd1.log" --threads 2 --archive "$W/arch1" --delay-archive 100 --memory 1
  PIO_SOCKET=$PIO_SOCK_A timeout $((120 * ${PIO_TEST_MULT:-1})) "${MPIRUN[@]}" -np 4 "$HEAT" --n 24 --steps 150 --sleep 20 \
    --stats </dev/null >"$W/heat.out" 2>&1 &
  hp=$!
  pio_wait_until 30 sh -c "ls $W/arch1/step_00001*.vti"
  kill -9 "$VIZD_PID"
  vizd "$W/vizd2.log" --threads 2 --archive "$W/arch2"
  rc=0 && wait $hp || rc=$?
  cat "$W/heat.out"
  [ "$rc" -eq 0 ]
  run grep -c "OK heat3d" "$W/heat.out"
  assert_output 1
  # the first receiver held the simulation back before it died
  grep -q "waited [0-9]*\.[0-9]*[1-9]" "$W/heat.out"
  # the new receiver took the steps after the restart, each complete
  n2=$(ls "$W/arch2"/step_*.vti | wc -l)
  [ "$n2" -ge 5 ]
}

@test "pio-vizd --status prints the running receiver's counters; bad options exit 2" {
  vizd "$W/vizd.log" --threads 1
  pio_wait_until 10 test -s "$W/st.json"
  run "$VIZD" --status --status-file "$W/st.json"
  assert_success
  assert_output --partial '"steps_complete":0'
  run "$VIZD" --threads 0
  [ "$status" -eq 2 ]
  assert_output --partial "--threads 0: not understood"
  run "$VIZD" --status --status-file "$W/none.json"
  [ "$status" -eq 1 ]
  assert_output --partial "no status at"
}
