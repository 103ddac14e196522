# piod.bash - start piods for tests and benchmarks: a pair on loopback or on a test bed.
# SPDX-License-Identifier: BSD-3-Clause
#
# Source it after helpers.bash (Bats) or on its own (scripts: set PIO_SRC and
# PIO_BUILD first). Every piod started here is recorded for pio_cleanup when
# helpers.bash is loaded; scripts call pio_piods_stop.
#
#   pio_pair_loopback DIR K        two systems A and B on loopback, K channels each
#                                  (pio_pair_loopback_start: the same, not waiting
#                                  for the channels; PIO_PIOD_FLAGS_A/_B per side):
#                                  A listens on 127.1.i.1, B on 127.2.i.1 (i = 0..K-1),
#                                  unique ports; exports PIO_SOCK_A, PIO_SOCK_B
#   pio_pair_testbed DIR BED K     A on host h1, B on host h2 of an existing bed,
#                                  one channel per link; exports PIO_SOCK_A, PIO_SOCK_B
#   pio_start_conf NAME DIR NS CONF  a piod from a config file (systems of several hosts)
#   pio_wait_channels SOCK N [S]   wait (S s, default 20) until N channels are up both ways
#   pio_piods_stop                 SIGTERM every piod started here, wait for it
# Extra piod flags: PIO_PIOD_FLAGS (e.g. "--pool 2G --log-level debug").

PIO_SRC=${PIO_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
PIO_BUILD=${PIO_BUILD:-$PIO_SRC/build/default}
PIOD=$PIO_BUILD/sbin/piod
PIO_INFO=$PIO_BUILD/bin/pio-info
_PIO_PIDS=()

# _pio_port [N]: N distinct free TCP ports (tests/lib/ports.bash)
source "$(dirname "${BASH_SOURCE[0]}")/ports.bash"
_pio_port() {
  pio_free_port "$@"
}

# _pio_start NAME DIR [NETNS] -- piod args...
_pio_start() {
  local name=$1 dir=$2 ns=$3; shift 4
  _pio_launch "$name" "$dir" "$ns" "$PIOD" -f --name "$name" --system "$name" \
    --keys "$dir/keys" --socket "$dir/$name.sock" ${PIO_PIOD_FLAGS:-} "$@"
}

# pio_start_conf NAME DIR NETNS CONF [piod args...]: a piod configured by the
# file CONF (name, system, links, peers, members), socket DIR/NAME.sock.
pio_start_conf() {
  local name=$1 dir=$2 ns=$3 conf=$4; shift 4
  _pio_launch "$name" "$dir" "$ns" "$PIOD" -f --config "$conf" --keys "$dir/keys" \
    --socket "$dir/$name.sock" ${PIO_PIOD_FLAGS:-} "$@"
}

# _pio_launch NAME DIR NETNS CMD...: run CMD in NETNS, log to DIR/NAME.log.
_pio_launch() {
  local name=$1 dir=$2 ns=$3; shift 3
  local cmd=("$@")
  [ -n "$ns" ] && cmd=(ip netns exec "$ns" "${cmd[@]}")
  "${cmd[@]}" >"$dir/$name.log" 2>&1 </dev/null &
  local pid=$!
  _PIO_PIDS+=("$pid")
  if declare -F _pio_registry >/dev/null; then echo "pid $pid" >>"$(_pio_registry)"; fi
  echo "$pid" >"$dir/$name.pid"
}

_pio_keys() {
  local dir=$1; shift
  mkdir -p "$dir/keys"
  local n
  for n in "$@"; do
    [ -f "$dir/keys/$n.key" ] || "$PIOD" --keygen "$dir/keys" --system "$n" >/dev/null || return 1
  done
}

_pio_wait_sock() {
  local i
  for ((i = 0; i < 200; i++)); do [ -S "$1" ] && return 0; sleep 0.05; done
  echo "piod socket $1 did not appear; log:" >&2
  cat "${1%.sock}.log" >&2
  return 1
}

pio_pair_loopback() {
  pio_pair_loopback_start "$1" "$2" &&
    pio_wait_channels "$PIO_SOCK_A" "$2" && pio_wait_channels "$PIO_SOCK_B" "$2"
}

# pio_pair_loopback_start DIR K: pio_pair_loopback without waiting for the
# channels (a test that expects some never to come up); extra flags for one
# side only in PIO_PIOD_FLAGS_A / PIO_PIOD_FLAGS_B (words).
pio_pair_loopback_start() {
  local dir=$1 k=$2 i la=() lb=() cport dport
  _pio_keys "$dir" A B || return 1
  read -r cport dport < <(_pio_port 2)
  for ((i = 0; i < k; i++)); do la+=("127.1.$i.1"); lb+=("127.2.$i.1"); done
  local IFS=,
  local pa="B=${lb[*]}" pb="A=${la[*]}"
  unset IFS
  local args_a=() args_b=()
  for i in "${la[@]}"; do args_a+=(--listen "$i"); done
  for i in "${lb[@]}"; do args_b+=(--listen "$i"); done
  # shellcheck disable=SC2086 # the per-side flags are words
  _pio_start A "$dir" "" -- "${args_a[@]}" --peer "$pa" --control-port "$cport" --data-port "$dport" \
    ${PIO_PIOD_FLAGS_A:-}
  # shellcheck disable=SC2086
  _pio_start B "$dir" "" -- "${args_b[@]}" --peer "$pb" --control-port "$cport" --data-port "$dport" \
    ${PIO_PIOD_FLAGS_B:-}
  export PIO_SOCK_A=$dir/A.sock PIO_SOCK_B=$dir/B.sock
  _pio_wait_sock "$PIO_SOCK_A" && _pio_wait_sock "$PIO_SOCK_B"
}

pio_pair_testbed() {
  local dir=$1 bed=$2 k=$3 i args_a=() args_b=() la=() lb=()
  local tb="$PIO_SRC/tests/testbed/pio-testbed"
  _pio_keys "$dir" A B || return 1
  for ((i = 0; i < k; i++)); do
    la+=("$("$tb" addr "$bed" h1 "$i")"); lb+=("$("$tb" addr "$bed" h2 "$i")")
  done
  for i in "${la[@]}"; do args_a+=(--listen "$i"); done
  for i in "${lb[@]}"; do args_b+=(--listen "$i"); done
  local IFS=,
  local pa="B=${lb[*]}" pb="A=${la[*]}"
  unset IFS
  _pio_start A "$dir" "$("$tb" ns "$bed" h1)" -- "${args_a[@]}" --peer "$pa"
  _pio_start B "$dir" "$("$tb" ns "$bed" h2)" -- "${args_b[@]}" --peer "$pb"
  export PIO_SOCK_A=$dir/A.sock PIO_SOCK_B=$dir/B.sock
  _pio_wait_sock "$PIO_SOCK_A" && _pio_wait_sock "$PIO_SOCK_B" &&
    pio_wait_channels "$PIO_SOCK_A" "$k" && pio_wait_channels "$PIO_SOCK_B" "$k"
}

# Channels up in both directions as pio-info reports them (tx state up and
# an accepted rx channel show as "up" in its --count-up output).
pio_wait_channels() {
  local sock=$1 n=$2 limit=${3:-20} i up
  for ((i = 0; i < limit * 10; i++)); do
    up=$(PIO_SOCKET=$sock "$PIO_INFO" --count-up 2>/dev/null) || up=0
    [ "${up:-0}" -ge "$n" ] && return 0
    sleep 0.1
  done
  echo "only ${up:-0} of $n channels up after ${limit}s at $sock" >&2
  PIO_SOCKET=$sock "$PIO_INFO" >&2 || true
  cat "${sock%.sock}.log" >&2
  return 1
}

pio_piods_stop() {
  local p
  for p in "${_PIO_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${_PIO_PIDS[@]}"; do wait "$p" 2>/dev/null; done
  _PIO_PIDS=()
}
