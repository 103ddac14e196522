# helpers.bash - shared helpers for Bats tests that start daemons or test beds.
# SPDX-License-Identifier: BSD-3-Clause
#
# load "$BATS_TEST_DIRNAME/../lib/helpers"
#
# Every process started with pio_spawn or bg_start and every bed made with
# pio_bed_up is recorded in a file under $BATS_FILE_TMPDIR; pio_cleanup (call
# it from teardown / teardown_file) stops them all, also after a failed or
# timed-out test. Waiting is by polling a condition (pio_wait_until), never
# a bare sleep.

load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

PIO_SRC=${PIO_SRC:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}
PIO_BUILD=${PIO_BUILD:-$PIO_SRC/build/default}
PIO_TESTBED=$PIO_SRC/tests/testbed/pio-testbed
export PATH="$PIO_BUILD/bin:$PIO_BUILD/sbin:$PATH"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

_pio_registry() { echo "${BATS_FILE_TMPDIR:-/tmp}/pio-cleanup"; }

# pio_tmpdir: a fresh directory private to the current test (removed by Bats).
pio_tmpdir() {
  mktemp -d "${BATS_TEST_TMPDIR:-/tmp}/pio.XXXXXX"
}

# pio_free_port [N]: N distinct free TCP ports (tests/lib/ports.bash)
source "$(dirname "${BASH_SOURCE[0]}")/ports.bash"

# pio_wait_until SECONDS CMD...: poll CMD every 50 ms until it succeeds.
# Fails (status 1, with a message on stderr) when SECONDS pass first;
# SECONDS are multiplied by PIO_TEST_MULT, which tests/run sets for slow
# (sanitized) builds as it does for its own timeouts.
pio_wait_until() {
  local limit=$(( $1 * ${PIO_TEST_MULT:-1} )); shift
  local end=$(( $(date +%s%N) + limit * 1000000000 ))
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s%N)" -ge "$end" ]; then
      echo "pio_wait_until: '$*' still false after ${limit}s" >&2
      return 1
    fi
    sleep 0.05
  done
}

# pio_spawn LOGFILE CMD...: start CMD in the background with its output in
# LOGFILE; prints its pid and records it for pio_cleanup.
pio_spawn() {
  local log=$1; shift
  "$@" >"$log" 2>&1 </dev/null &
  local pid=$!
  echo "pid $pid" >>"$(_pio_registry)"
  echo "$pid"
}

# bg_start LOG CMD...: run CMD in the background (output to LOG, Bats' fd 3
# closed so Bats never waits for it); sets BG_PID and records it for
# pio_cleanup. Unlike pio_spawn, not in $(...): the test's shell is the
# parent, so bg_wait can collect the exit status.
bg_start() {
  local log=$1; shift
  "$@" >"$log" 2>&1 </dev/null 3>&- &
  BG_PID=$!
  echo "pid $BG_PID" >>"$(_pio_registry)"
}

# bg_wait PID: wait for a process started by bg_start; sets BG_RC to its
# exit status (not in $(...): a subshell cannot wait for our children).
bg_wait() {
  BG_RC=0
  wait "$1" || BG_RC=$?
}

# pio_stop PID [SECONDS]: SIGTERM, wait up to SECONDS (default 5), then SIGKILL.
# Returns the process' exit status when it exited on its own.
pio_stop() {
  local pid=$1 limit=${2:-5} i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < limit * 20; i++)); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return $?; }
    sleep 0.05
  done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 137
}

# pio_bed_up NAME ARGS...: make a test bed and record it for pio_cleanup.
pio_bed_up() {
  local name=$1; shift
  echo "bed $name" >>"$(_pio_registry)"
  "$PIO_TESTBED" up "$name" "$@"
}

# pio_unique_name PREFIX: a short name (≤ 8 chars) unlikely to collide.
pio_unique_name() {
  printf '%s%04d' "${1:0:4}" $(( (RANDOM + $$) % 10000 ))
}

# pio_cleanup: stop every recorded process and remove every recorded bed.
pio_cleanup() {
  local reg kind what
  reg=$(_pio_registry)
  [ -f "$reg" ] || return 0
  while read -r kind what; do
    case "$kind" in
      pid) pio_stop "$what" 3 || true ;;
      bed) "$PIO_TESTBED" down "$what" >/dev/null 2>&1 || true ;;
    esac
  done < <(tac "$reg")
  rm -f "$reg"
}

# pio_need_root: skip (saying why) when not root; namespaces need it.
pio_need_root() {
  [ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces (CI runs as root)"
}

# pio_san_flags: the -fsanitize flags of the build under test ($PIO_BUILD),
# for programs a test compiles against it (a sanitized libpio.so needs its
# runtime linked into the program); empty for a plain build.
pio_san_flags() {
  case $PIO_BUILD in
    *asan-ubsan*) echo "-fsanitize=address,undefined" ;;
    *asan*) echo "-fsanitize=address" ;;
    *ubsan*) echo "-fsanitize=undefined" ;;
    *tsan*) echo "-fsanitize=thread" ;;
  esac
}

# pio_make_args: the make arguments of the build under test ($PIO_BUILD), one
# per line (B, CC, OPT, SANITIZER, WERROR, the WITH_ switches), read from its
# .make-settings: a make a test runs with them (install, uninstall, ...)
# reuses that build's objects instead of rebuilding or changing its flags.
# Use: mapfile -t args < <(pio_make_args)
pio_make_args() {
  local settings cc opt san with
  settings=$(cat "$PIO_BUILD/.make-settings") || return 1
  cc=$(sed -E 's/^CC=([^ ]*) .*/\1/' <<<"$settings")
  opt=$(grep -oE -- ' -O[0-9s]( |$)' <<<"$settings" | head -n 1 | tr -d ' ')
  san=$(grep -oE -- '-fsanitize=[a-z]+' <<<"$settings" | head -n 1)
  with=$(grep -oE -- ' WITH=[01]{3} ' <<<"$settings" | tr -dc '01')
  echo "B=${PIO_BUILD#"$PIO_SRC"/}"
  echo "CC=$cc"
  echo "OPT=$opt"
  [ -n "$san" ] && echo "SANITIZER=${san#-fsanitize=}"
  if grep -q -- ' -Werror ' <<<"$settings"; then echo WERROR=1; else echo WERROR=0; fi
  [ ${#with} -eq 3 ] && echo "WITH_VIZ=${with:0:1}" "WITH_FORTRAN=${with:1:1}" "WITH_UCX=${with:2:1}" |
    tr ' ' '\n'
  return 0
}
