#!/usr/bin/env bats
# bench_report.bats - bench/report.py: one make bench run's verdicts into docs/performance.md.
# SPDX-License-Identifier: BSD-3-Clause

load "$BATS_TEST_DIRNAME/../lib/helpers"

setup() {
  cd "$PIO_SRC"
  doc=$BATS_TEST_TMPDIR/performance.md
  cp docs/performance.md "$doc"
  sum=$BATS_TEST_TMPDIR/summary.txt
  cat >"$sum" <<'S'
# commit 1a2b3c4
# date 2026-11-27 10:00 to 11:10 UTC
# host testhost, 2 cores
PASS: K=16: one-way = 1.000 x the ceiling (K iperf3 at once), target >= 0.95  [channels]
MISS: loopback: 64 Ki half round trip: PIO / socket = 3.19 [2.71, 19.49], target <= 2  [pingpong]
SKIP: throughput: needs root
FAILED: bench/viz.sh exited 1
S
}

@test "the run's section is generated between the markers, with the commit and date, a MISS kept a MISS" {
  run python3 bench/report.py "$sum" "$doc"
  assert_success
  assert_output --partial "4 verdicts of 1a2b3c4"
  run sed -n '/<!-- bench:run:begin -->/,/<!-- bench:run:end -->/p' "$doc"
  assert_success
  assert_output --partial 'Commit **`1a2b3c4`**, **2026-11-27 10:00 to 11:10 UTC**'
  assert_output --partial "1 PASS, 1 MISS, 1 FAIL, 1 SKIP"
  assert_output --partial "| channels | PASS | K=16: one-way = 1.000 x the ceiling"
  assert_output --partial "| pingpong | **MISS** | loopback: 64 Ki half round trip: PIO / socket = 3.19"
  assert_output --partial "| - | **FAIL** | bench/viz.sh exited 1 |"
  # outside the markers nothing changed
  run diff <(sed '/<!-- bench:run:begin -->/,/<!-- bench:run:end -->/d' docs/performance.md) \
    <(sed '/<!-- bench:run:begin -->/,/<!-- bench:run:end -->/d' "$doc")
  assert_success
}

@test "a second run on the same summary leaves the file as it was" {
  run python3 bench/report.py "$sum" "$doc"
  assert_success
  cp "$doc" "$BATS_TEST_TMPDIR/first.md"
  run python3 bench/report.py "$sum" "$doc"
  assert_success
  run cmp "$BATS_TEST_TMPDIR/first.md" "$doc"
  assert_success
}

@test "a summary without its commit, without verdicts, or a file without the markers: exit 2, a reason, nothing written" {
  printf 'PASS: x  [y]\n' >"$BATS_TEST_TMPDIR/nohead.txt"
  run python3 bench/report.py "$BATS_TEST_TMPDIR/nohead.txt" "$doc"
  assert_failure 2
  assert_output --partial "no '# commit' or '# date' line"
  printf '# commit 1\n# date d\n' >"$BATS_TEST_TMPDIR/empty.txt"
  run python3 bench/report.py "$BATS_TEST_TMPDIR/empty.txt" "$doc"
  assert_failure 2
  assert_output --partial "nothing to report"
  printf '# no markers\n' >"$BATS_TEST_TMPDIR/plain.md"
  run python3 bench/report.py "$sum" "$BATS_TEST_TMPDIR/plain.md"
  assert_failure 2
  assert_output --partial "markers"
  run cmp docs/performance.md "$doc"
  assert_success
}
