#!/usr/bin/env bash
# run-all.sh - run every PIO benchmark once and sum up their targets (used by `make bench`).
# SPDX-License-Identifier: BSD-3-Clause
#
# Runs bench/pingpong.sh and bench/isolation.sh, bench/scale.sh (loopback, then the bed), then bench/throughput.sh, unequal.sh,
# linkfail.sh, channels.sh, skew.sh, pcp.sh, merge.sh, viz.sh, rdma.sh, pfs.sh, gas.sh, anco.sh, seal.sh, chaos.sh and python.sh (namespace test bed;
# skipped with a note when not root), each printing its own table and
# writing bench/results/*.csv and *.png. Afterwards repeats every PASS/MISS
# line, and writes them with the commit, the date and the host to
# bench/results/summary.txt (PIO_BENCH_RESULTS), which bench/report.py turns
# into the run's section of docs/performance.md (`make bench` does).
# Exit status: non-zero when a script failed (could not measure); a MISS
# is printed clearly but is not a failure of the run.
# BENCH_ONLY="a b": run only those scripts (names without .sh), for a look.
#
# Environment: BUILD (build folder relative to the repo root, or absolute;
# default build/default) is passed on; so are the scripts' own variables.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
export BUILD=${BUILD:-build/default}
logdir=$(mktemp -d /tmp/pio-bench-logs.XXXXXX)
trap 'rm -rf "$logdir"' EXIT

status=0
summary=()
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && commit+="-dirty"
started=$(date -u '+%Y-%m-%d %H:%M UTC')
for s in ${BENCH_ONLY:-pingpong isolation scale throughput unequal linkfail channels skew pcp merge viz rdma pfs gas gas_apps anco seal chaos python}; do
  echo "======== bench/$s.sh ========"
  if [ "$s" = throughput ] && [ "$(id -u)" -ne 0 ]; then
    echo "skip: bench/throughput.sh needs root (network namespaces)"
    summary+=("SKIP: $s: needs root")
    continue
  fi
  bash "bench/$s.sh" 2>&1 | tee "$logdir/$s.log"
  rc=${PIPESTATUS[0]}
  while IFS= read -r line; do summary+=("$line  [$s]"); done \
    < <(grep -E '^(PASS|MISS|FAIL|SKIP):' "$logdir/$s.log")
  if [ "$rc" -ne 0 ]; then
    summary+=("FAILED: bench/$s.sh exited $rc")
    status=1
  fi
  echo
done

echo "======== summary ========"
printf '%s\n' "${summary[@]}"
results=${PIO_BENCH_RESULTS:-$ROOT/bench/results}
mkdir -p "$results"
{
  echo "# commit $commit"
  echo "# date $started to $(date -u '+%H:%M UTC')"
  echo "# host $(hostname), $(nproc) cores"
  printf '%s\n' "${summary[@]}"
} >"$results/summary.txt"
echo "wrote $results/summary.txt"
misses=$(printf '%s\n' "${summary[@]}" | grep -c '^MISS:')
if [ "$status" -ne 0 ]; then
  echo "bench: a benchmark FAILED to run (see above)"
elif [ "$misses" -gt 0 ]; then
  echo "bench: all benchmarks ran; $misses target(s) MISSED"
else
  echo "bench: all benchmarks ran; every target met"
fi
exit $status
