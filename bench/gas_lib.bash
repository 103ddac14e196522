# gas_lib.bash - what the GAS benchmarks (bench/gas.sh, bench/gas_apps.sh) share: the
# dispatcher's (re)start, the I/O servers' counters, and the seconds of a run.
# SPDX-License-Identifier: BSD-3-Clause
# Sourced after lib.bash and tests/lib/pfs.bash, once the pfs bed is up. Uses
# the caller's globals: work (the scratch folder; the bed's files in
# $work/c), BUILD, SOCK (the dispatcher's socket on h6) and, for best, REPS.
# Nothing here starts the bed or reads a result file.
# shellcheck shell=bash disable=SC2154 # work, BUILD, SOCK: the caller's

# gas_start ARGS...: (re)start the dispatcher on h6 with ARGS (and --socket
# $SOCK --name gas.bench); returns once it serves, else shows its log and fails
gas_start() {
  local pid i
  if [ -f "$work/c/gas.pid" ]; then
    pid=$(cat "$work/c/gas.pid")
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  _pfs_launch gas 6 "$BUILD/sbin/gas-dispatcher" --socket "$SOCK" --name gas.bench "$@"
  for ((i = 0; i < 100; i++)); do
    grep -q serving "$work/c/gas.log" 2>/dev/null && [ -S "$SOCK" ] && return 0
    sleep 0.1
  done
  cat "$work/c/gas.log" >&2
  return 1
}

# io_sum FIELD: FIELD summed over the servers' "io" lines of pfs qos
io_sum() {
  pfs_on 6 pfs qos | awk -v f="$1" '
    / io / { for (i = 1; i <= NF; i++) if (split($i, kv, "=") == 2 && kv[1] == f) s += kv[2] }
    END { print s + 0 }'
}

# secs OUTPUT: the seconds= of a "btio ..." (or "ior ...") line
secs() { grep -o 'seconds=[0-9.]*' <<<"$1" | head -1 | cut -d= -f2; }

# best CMD...: run CMD REPS times (it prints a btio line), print the fastest seconds
best() {
  local r out s b=""
  for ((r = 0; r < REPS; r++)); do
    out=$("$@" 2>&1) || { echo "$out" >&2; return 1; }
    s=$(secs "$out")
    [ -z "$b" ] || awk -v a="$s" -v b="$b" 'BEGIN { exit !(a < b) }' && b=$s
  done
  echo "$b"
}
