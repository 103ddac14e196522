#!/usr/bin/env bash
# run.sh - run fuzz targets for a while each and report (make fuzz).
# SPDX-License-Identifier: BSD-3-Clause
#
# Usage: FUZZ_DIR=build/default/fuzz FUZZ_TIME=60 tests/fuzz/run.sh TARGET...
# Each target NAME runs $FUZZ_DIR/fuzz_NAME for FUZZ_TIME seconds over a
# working corpus ($FUZZ_DIR/work/NAME, new inputs go there) and the
# committed one (tests/fuzz/corpus/NAME, read only). A crash, leak, timeout
# or out-of-memory input is written to tests/fuzz/crashes/NAME/. Prints a
# table (runs, exec/s, corpus, coverage, crashes) and writes it as CSV to
# $FUZZ_DIR/results.csv. Exit 1 when any target found something.
set -u
cd "$(dirname "$0")/../.." || exit 2
FUZZ_DIR=${FUZZ_DIR:-build/default/fuzz}
T=${FUZZ_TIME:-60}
csv=$FUZZ_DIR/results.csv
echo "target,seconds,runs,exec_per_s,corpus_in,corpus_out,cov,ft,crashes" >"$csv"
printf '%-9s %7s %12s %9s %10s %11s %7s %7s %8s\n' target seconds runs exec/s corpus_in corpus_out cov ft crashes
bad=0
for t in "$@"; do
  bin=$FUZZ_DIR/fuzz_$t
  [ -x "$bin" ] || { echo "no $bin: run make fuzz-build" >&2; bad=1; continue; }
  work=$FUZZ_DIR/work/$t crashes=tests/fuzz/crashes/$t corpus=tests/fuzz/corpus/$t
  mkdir -p "$work" "$crashes" "$corpus"
  before=$(ls "$crashes" | wc -l)
  in=$(( $(ls "$work" | wc -l) + $(ls "$corpus" | wc -l) ))
  log=$FUZZ_DIR/$t.log
  "$bin" -max_total_time="$T" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$crashes/" "$work" "$corpus" >"$log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -n 1 | cut -d' ' -f2)
  ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -n 1 | cut -d' ' -f2)
  found=$(( $(ls "$crashes" | wc -l) - before ))
  [ $rc -ne 0 ] && [ "$found" -eq 0 ] && found=1   # died without an artifact: count it
  out=$(( $(ls "$work" | wc -l) + $(ls "$corpus" | wc -l) ))
  printf '%-9s %7s %12s %9s %10s %11s %7s %7s %8s\n' "$t" "$T" "${runs:-?}" "${eps:-?}" "$in" "$out" \
    "${cov:-?}" "${ft:-?}" "$found"
  echo "$t,$T,${runs:-},${eps:-},$in,$out,${cov:-},${ft:-},$found" >>"$csv"
  if [ "$found" -gt 0 ]; then
    bad=1
    grep -E 'ERROR|SUMMARY|Test unit written' "$log" | sed 's/^/    /' | head -n 5
  fi
done
echo "results: $csv"
exit $bad
