# lib.bash - what the benchmarks share: their start-up (the build, the root
# check, a scratch folder and its clean-up, the banner, the summary), a python
# with matplotlib, the iperf3 ceiling measurement, and for the test-bed
# benchmarks the bed's set-up and tear-down, a piod pair whose B exports a
# folder and an sshd in h2. Sourced first by every bench/*.sh (after `set -u`;
# a script with piod flags of its own sets PIO_PIOD_FLAGS before). Sourcing it
# sets ROOT (the repo), BUILD (absolute; default build/default, relative to
# ROOT), TB (the pio-testbed tool), RESULTS ($PIO_BENCH_RESULTS, default
# bench/results), SCRIPT (the script's file name, for messages) and PY;
# exports PIO_SRC, PIO_BUILD and PIO_PIOD_FLAGS; and sources
# tests/lib/piod.bash. $bed names the current bed (hosts h1 -> h2).
# SPDX-License-Identifier: BSD-3-Clause

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-build/default}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
export PIO_SRC=$ROOT PIO_BUILD=$BUILD PIO_PIOD_FLAGS=${PIO_PIOD_FLAGS:-}
TB=$ROOT/tests/testbed/pio-testbed
RESULTS=${PIO_BENCH_RESULTS:-$ROOT/bench/results}
SCRIPT=$(basename "$0")
# shellcheck source=../tests/lib/piod.bash
source "$ROOT/tests/lib/piod.bash"

# PY: a python3 that has matplotlib if any has (plots are skipped otherwise).
PY=python3
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import matplotlib' 2>/dev/null; then PY=$p; break; fi
done

# ---- start-up: every benchmark ----
# The scripts keep the pids of the daemons they start in the array daemons;
# bench_work's EXIT trap (bench_cleanup) ends them.
bed=""
daemons=()

# bench_root skip|fail [WHY]: unless root, say so and end the script: skip
# (a SKIP: line, exit 0) or fail (exit 2). WHY: what root is needed for
# (default: network namespaces for the test bed).
bench_root() {
  [ "$(id -u)" -eq 0 ] && return 0
  local why=${2:-network namespaces for the test bed}
  if [ "$1" = skip ]; then
    echo "SKIP: ${SCRIPT%.sh}: needs root ($why)"
    exit 0
  fi
  echo "$SCRIPT: needs root ($why)" >&2
  exit 2
}

# bench_need PROG...: every PROG (a path, or a command in PATH or /usr/sbin)
# is there, else say which is missing and fail.
bench_need() {
  local b
  for b in "$@"; do
    command -v "$b" >/dev/null || [ -x "$b" ] || [ -x "/usr/sbin/$b" ] ||
      { echo "$SCRIPT: $b is missing: run 'make deps' and 'make' first" >&2; return 1; }
  done
}

# bench_work: a scratch folder work (in $BENCH_TMPDIR, default /tmp; readable
# by all: the bed's daemons may run as another user), removed on exit by
# bench_cleanup (trap on EXIT; INT and TERM exit 130). A script with more to
# undo sets its own EXIT trap afterwards, a function that ends in
# bench_cleanup.
bench_work() {
  work=$(mktemp -d "${BENCH_TMPDIR:-/tmp}/pio-bench-${SCRIPT%.sh}.XXXXXX") || exit 1
  chmod 755 "$work"
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM
}

# bench_helpers: the tests' helpers (tests/lib/helpers.bash: pio_wait_until,
# pio_cleanup ...) outside Bats; their clean-up registry lives in $work.
bench_helpers() {
  export BATS_FILE_TMPDIR=$work
  load() { :; } # helpers.bash loads Bats libraries we do not need
  # shellcheck source=../tests/lib/helpers.bash
  source "$ROOT/tests/lib/helpers.bash"
}

# bench_cleanup: end the daemons and piods started here (and what the tests'
# helpers recorded), tear the bed down, remove the scratch folder.
bench_cleanup() {
  local p
  for p in "${daemons[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${daemons[@]}"; do wait "$p" 2>/dev/null; done
  pio_piods_stop
  declare -F pio_cleanup >/dev/null && pio_cleanup >/dev/null 2>&1
  [ -n "$bed" ] && "$TB" down "$bed" >/dev/null 2>&1
  rm -rf "${work:-}"
}

# bench_banner [TEXT...]: set date_s (now, UTC) and print the run's first
# line, "== SCRIPT: date on host, N cores" and TEXT (its own separator first;
# several words are joined by spaces, as echo does).
bench_banner() {
  date_s=$(date -u '+%Y-%m-%d %H:%M UTC')
  echo "== $SCRIPT: $date_s on $(hostname), $(nproc) cores$*"
}

# bench_summary "FILE..." ARG...: make RESULTS, run the python summary on
# stdin (table, CSV, plot) with ARG...; fail the script if it fails, else say
# it wrote the FILEs (names in RESULTS; none: say nothing).
bench_summary() {
  local files=() f i out=""
  read -ra files <<<"$1"
  shift
  mkdir -p "$RESULTS"
  "$PY" - "$@" || { echo "$SCRIPT: the summary failed" >&2; exit 1; }
  [ ${#files[@]} -gt 0 ] || return 0
  for ((i = 0; i < ${#files[@]}; i++)); do
    f=$RESULTS/${files[i]}
    if [ "$i" -eq 0 ]; then out=$f; elif [ "$i" -eq $((${#files[@]} - 1)) ]; then out+=" and $f"; else out+=", $f"; fi
  done
  echo "wrote $out"
}

# iperf_rate JSON...: sum of receiver-side rates in MB/s (10^6 B/s); fails
# (with the reason) if a file holds no result.
iperf_rate() {
  "$PY" - "$@" <<'EOF'
import json, sys
tot = 0.0
for p in sys.argv[1:]:
    try:
        d = json.load(open(p))
        tot += d["end"]["sum_received"]["bits_per_second"] / 8e6
    except Exception as e:
        msg = d.get("error") if isinstance(d, dict) and "error" in d else repr(e)
        sys.exit("iperf3 result %s: %s" % (p, msg))
print("%.3f" % tot)
EOF
}

# iperf_servers LINK...: one-off iperf3 servers in h2, on each given link's
# address (port 5201 + link); returns once they all listen.
iperf_servers() {
  local i a
  for i in "$@"; do
    a=$("$TB" addr "$bed" h2 "$i")
    "$TB" exec "$bed" h2 iperf3 -s -1 -D -B "$a" -p $((5201 + i)) || return 1
  done
  for i in "$@"; do
    a=$("$TB" addr "$bed" h2 "$i")
    bench_wait_listen h2 "$a" $((5201 + i)) || { echo "iperf3 server on $a did not start" >&2; return 1; }
  done
}

# bench_wait_listen HOST ADDR PORT: wait (5 s at most) until a TCP socket
# listens on ADDR:PORT in HOST's namespace.
bench_wait_listen() {
  local n
  for ((n = 0; n < 100; n++)); do
    [ -n "$("$TB" exec "$bed" "$1" ss -Hltn "src $2:$3")" ] && return 0
    sleep 0.05
  done
  return 1
}

# iperf_clients OUTPREFIX SECONDS LINK...: one client per given link at once,
# bound to h1's address of that link; results in OUTPREFIX.LINK.json (.err).
iperf_clients() {
  local out=$1 secs=$2 i cp=() rc=0
  shift 2
  for i in "$@"; do
    "$TB" exec "$bed" h1 timeout $((secs + 30)) iperf3 -J -t "$secs" \
      -B "$("$TB" addr "$bed" h1 "$i")" -c "$("$TB" addr "$bed" h2 "$i")" -p $((5201 + i)) \
      >"$out.$i.json" 2>"$out.$i.err" &
    cp+=($!)
  done
  for i in "${cp[@]}"; do wait "$i" || rc=1; done
  return $rc
}

# links K: 0 1 .. K-1
links() { seq 0 $(($1 - 1)); }

# ---- the test bed: bed, piods, sshd ----

# bench_bytes SIZE: SIZE (digits with an optional K, M or G, binary) in bytes;
# fails on anything else.
bench_bytes() {
  "$PY" -c 'import re,sys; m=re.fullmatch(r"([0-9]+)([kKmMgG]?)", sys.argv[1]); print(int(m.group(1)) << {"":0,"k":10,"m":20,"g":30}[m.group(2).lower()])' "$1" 2>/dev/null
}

# bench_bed_name PREFIX: set bed to PREFIX and digits of this shell's pid (8
# characters in all), or, while the bed list holds that name (`up` would tear
# that bed down), random digits.
bench_bed_name() {
  local w=$((8 - ${#1})) n
  bed=$(printf '%s%0*d' "$1" "$w" $(($$ % 10 ** w)))
  for ((n = 0; n < 50; n++)); do
    "$TB" list 2>/dev/null | grep -qx "$bed" || return 0
    bed=$(printf '%s%0*d' "$1" "$w" $(((RANDOM * 32768 + RANDOM) % 10 ** w)))
  done
}

# bench_bed_up PREFIX HOSTS LINKS [RATE]: bring up a bed (links at RATE, or
# at pio-testbed's default, 100mbit) named by bench_bed_name PREFIX, its log
# in $work/up.log (shown on failure).
bench_bed_up() {
  local rate=()
  bench_bed_name "$1"
  [ -n "${4:-}" ] && rate=(--rate "$4")
  "$TB" up "$bed" --hosts "$2" --links "$3" "${rate[@]}" >"$work/up.log" 2>&1 ||
    { cat "$work/up.log" >&2; return 1; }
}

# bench_piods DIR K EXPORT: a piod pair over links 0 .. K-1 of the bed, one
# channel per link: A in h1, B in h2 exporting the folder EXPORT (its file
# service is the application pio.files.B). Sockets DIR/A.sock and DIR/B.sock,
# logs DIR/A.log and DIR/B.log. Returns once the K channels are up both ways
# and A lists B's file service; pio_piods_stop ends them.
bench_piods() {
  local dir=$1 k=$2 exp=$3 i n la=() lb=() args_a=() args_b=()
  for i in $(links "$k"); do
    la+=("$("$TB" addr "$bed" h1 "$i")")
    lb+=("$("$TB" addr "$bed" h2 "$i")")
    args_a+=(--listen "${la[-1]}")
    args_b+=(--listen "${lb[-1]}")
  done
  mkdir -p "$dir"
  _pio_keys "$dir" A B || return 1
  _pio_start A "$dir" "$("$TB" ns "$bed" h1)" -- "${args_a[@]}" --peer "B=$(IFS=,; echo "${lb[*]}")"
  _pio_start B "$dir" "$("$TB" ns "$bed" h2)" -- "${args_b[@]}" --peer "A=$(IFS=,; echo "${la[*]}")" \
    --export "$exp"
  { _pio_wait_sock "$dir/A.sock" && _pio_wait_sock "$dir/B.sock" &&
    pio_wait_channels "$dir/A.sock" "$k" && pio_wait_channels "$dir/B.sock" "$k"; } || return 1
  for ((n = 0; n < 100; n++)); do
    PIO_SOCKET=$dir/A.sock "$PIO_INFO" 2>/dev/null | grep -q '^pio\.files\.B ' && return 0
    sleep 0.1
  done
  echo "B's file service (pio.files.B) did not show at A; B's log:" >&2
  cat "$dir/B.log" >&2
  return 1
}

# sshd_start DIR [N]: an sshd in h2 for this run, on h2's link-0 address (so
# one connection, one link; with N, on the addresses of links 0..N-1 too, for
# one connection per link), port 2222, root login with a throw-away key made in
# DIR (no password, no PAM); its pid goes to daemons, its log to DIR/sshd.log.
# Sets SSH_ADDR (that address) and SSHO, a client's ssh options (the key, no
# host-key checks, batch mode) as -o NAME=VALUE pairs, which ssh, scp and
# sshfs all take.
sshd_start() {
  local dir=$1 nlisten=${2:-1} i extra=""
  SSH_ADDR=$("$TB" addr "$bed" h2 0)
  for ((i = 1; i < nlisten; i++)); do extra+="ListenAddress $("$TB" addr "$bed" h2 "$i")"$'\n'; done
  { ssh-keygen -q -t ed25519 -N '' -f "$dir/hostkey" && ssh-keygen -q -t ed25519 -N '' -f "$dir/id"; } ||
    return 1
  cp "$dir/id.pub" "$dir/authorized_keys"
  cat >"$dir/sshd_config" <<SSHD
Port 2222
ListenAddress $SSH_ADDR
${extra}HostKey $dir/hostkey
PermitRootLogin yes
AuthorizedKeysFile $dir/authorized_keys
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PidFile $dir/sshd.pid
Subsystem sftp internal-sftp
SSHD
  mkdir -p /run/sshd
  "$TB" exec "$bed" h2 "$(command -v sshd || echo /usr/sbin/sshd)" -D -e -f "$dir/sshd_config" \
    >"$dir/sshd.log" 2>&1 </dev/null &
  daemons+=($!)
  SSHO=(-o IdentityFile="$dir/id" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
    -o BatchMode=yes -o LogLevel=error)
  bench_wait_listen h2 "$SSH_ADDR" 2222 ||
    { echo "sshd did not start; log:" >&2; cat "$dir/sshd.log" >&2; return 1; }
}
