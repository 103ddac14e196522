# pfs.bash - a pfs cluster on a test bed, for tests and benchmarks.
# SPDX-License-Identifier: BSD-3-Clause
#
# Source after helpers.bash (Bats) or, in scripts, after setting PIO_SRC and
# PIO_BUILD; needs piod.bash. The bed: hosts h1..h4 run I/O servers, h5 the
# metadata server, h6 and h7 are clients; one link each (shaped by the bed's
# rate). Every host is its own PIO system nK with a piod, and a peer of every
# other, so any process reaches any server over the links.
#
#   pfs_cluster_up DIR BED [RATE]   bed + piods (no pfs servers yet)
#   pfs_iod_start DIR H NAME [ARGS...]   an I/O server on host H (1..7): PIO
#                                   application NAME, objects under DIR/NAME
#   pfs_mds_start DIR NAME DB IODS [ARGS...]   a metadata server on h5
#   pfs_on H CMD...                 run CMD on host H with its piod's socket
#   pfs_ready H MDS [SECONDS]       wait until `pfs df` works from host H
#   pfs_kill9 PIDFILE               SIGKILL the process of PIDFILE and reap it
# Processes started here write DIR/NAME.pid and DIR/NAME.log.

PFS_HOSTS=7

pfs_cluster_up() {
  local dir=$1 bed=$2 rate=${3:-1gbit} h j
  local tb="$PIO_SRC/tests/testbed/pio-testbed"
  mkdir -p "$dir"
  export PFS_BED=$bed PFS_DIR=$dir
  if declare -F pio_bed_up >/dev/null; then
    pio_bed_up "$bed" --hosts $PFS_HOSTS --links 1 --rate "$rate" >/dev/null || return 1
  else
    "$tb" up "$bed" --hosts $PFS_HOSTS --links 1 --rate "$rate" >/dev/null || return 1
  fi
  local names=()
  for ((h = 1; h <= PFS_HOSTS; h++)); do names+=("n$h"); done
  _pio_keys "$dir" "${names[@]}" || return 1
  for ((h = 1; h <= PFS_HOSTS; h++)); do
    {
      echo "name = n$h"
      echo "system = n$h"
      echo "listen = $("$tb" addr "$bed" "h$h" 0)"
      # PFS_PROC_POOL unset: 32M (small, for the tests); set empty: piod's default
      if [ -n "${PFS_PROC_POOL-32M}" ]; then echo "proc-pool = ${PFS_PROC_POOL-32M}"; fi
      for ((j = 1; j <= PFS_HOSTS; j++)); do
        [ "$j" = "$h" ] && continue
        echo "[peer n$j]"
        echo "addr = $("$tb" addr "$bed" "h$j" 0)"
      done
    } >"$dir/n$h.conf"
    pio_start_conf "n$h" "$dir" "$("$tb" ns "$bed" "h$h")" "$dir/n$h.conf" || return 1
  done
  for ((h = 1; h <= PFS_HOSTS; h++)); do _pio_wait_sock "$dir/n$h.sock" || return 1; done
  for ((h = 1; h <= PFS_HOSTS; h++)); do
    pio_wait_channels "$dir/n$h.sock" $((PFS_HOSTS - 1)) 60 || return 1
  done
}

# pfs_on H CMD...: CMD in host H's namespace, joined to its piod.
pfs_on() {
  local h=$1; shift
  ip netns exec "$("$PIO_SRC/tests/testbed/pio-testbed" ns "$PFS_BED" "h$h")" \
    env PIO_SOCKET="$PFS_DIR/n$h.sock" PATH="$PIO_BUILD/bin:$PIO_BUILD/sbin:$PATH" "$@"
}

# _pfs_launch NAME H CMD...: CMD on host H in the background (its pid is the
# daemon's: ip netns exec and env exec, no shell in between).
_pfs_launch() {
  local name=$1 h=$2; shift 2
  ip netns exec "$("$PIO_SRC/tests/testbed/pio-testbed" ns "$PFS_BED" "h$h")" \
    env PIO_SOCKET="$PFS_DIR/n$h.sock" "$@" >"$PFS_DIR/$name.log" 2>&1 </dev/null 3>&- &
  local pid=$!
  if declare -F _pio_registry >/dev/null; then echo "pid $pid" >>"$(_pio_registry)"; fi
  _PIO_PIDS+=("$pid")
  echo "$pid" >"$PFS_DIR/$name.pid"
}

pfs_iod_start() {
  local dir=$1 h=$2 name=$3; shift 3
  mkdir -p "$dir/$name"
  _pfs_launch "$name" "$h" "$PIO_BUILD/sbin/pfs-iod" --dir "$dir/$name" --name "$name" "$@"
}

pfs_mds_start() {
  local dir=$1 name=$2 db=$3 iods=$4; shift 4
  _pfs_launch "$name" 5 "$PIO_BUILD/sbin/pfs-mds" --db "$db" --name "$name" --iods "$iods" "$@"
}

pfs_ready() {
  local h=$1 mds=$2 limit=${3:-60} i
  for ((i = 0; i < limit * 5; i++)); do
    PIO_PARTNER_TIMEOUT=2 pfs_on "$h" pfs --mds "$mds" df >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "pfs with metadata server $mds not ready after ${limit}s from h$h" >&2
  PIO_PARTNER_TIMEOUT=2 pfs_on "$h" pfs --mds "$mds" df >&2
  tail -n 20 "$PFS_DIR"/*.log >&2
  return 1
}

pfs_kill9() {
  local pid i
  pid=$(cat "$1")
  kill -KILL "$pid" 2>/dev/null
  # gone, or a zombie whose parent has not reaped it yet: either way dead
  for ((i = 0; i < 200; i++)); do
    [ -e "/proc/$pid" ] || break
    [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && break
    sleep 0.05
  done
}

# pfs_ns H: the network namespace of host H
pfs_ns() {
  "$PIO_SRC/tests/testbed/pio-testbed" ns "$PFS_BED" "h$1"
}
