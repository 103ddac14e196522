# lib.bash - what the test-bed benchmarks share: a python with matplotlib, the
# iperf3 ceiling measurement, and for the file benchmarks (pcp.sh, merge.sh)
# the bed's set-up and tear-down, a piod pair whose B exports a folder and an
# sshd in h2. Sourced by bench/*.sh after they set TB (the pio-testbed tool)
# and, for the piods, after tests/lib/piod.bash; $bed names the current bed
# (hosts h1 -> h2).
# SPDX-License-Identifier: BSD-3-Clause

# PY: a python3 that has matplotlib if any has (plots are skipped otherwise).
PY=python3
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import matplotlib' 2>/dev/null; then PY=$p; break; fi
done

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

# ---- the file benchmarks (pcp.sh, merge.sh): bed, piods, sshd, clean-up ----
# They set SCRIPT (their name, for messages) and work (a scratch folder), keep
# the pids of the daemons they start in the array daemons, and call
# bench_cleanup from their EXIT trap.
bed=${bed:-}
declare -p daemons >/dev/null 2>&1 || daemons=()

# bench_need PROG...: every PROG (a path, or a command in PATH or /usr/sbin)
# is there, else say which is missing and fail.
bench_need() {
  local b
  for b in "$@"; do
    command -v "$b" >/dev/null || [ -x "$b" ] || [ -x "/usr/sbin/$b" ] ||
      { echo "$SCRIPT: $b is missing: run 'make deps' and 'make' first" >&2; return 1; }
  done
}

# bench_bytes SIZE: SIZE (digits with an optional K, M or G, binary) in bytes;
# fails on anything else.
bench_bytes() {
  "$PY" -c 'import re,sys; m=re.fullmatch(r"([0-9]+)([kKmMgG]?)", sys.argv[1]); print(int(m.group(1)) << {"":0,"k":10,"m":20,"g":30}[m.group(2).lower()])' "$1" 2>/dev/null
}

# bench_bed_up PREFIX HOSTS LINKS [RATE]: bring up a bed (links unshaped without RATE) named PREFIX and this
# shell's pid (8 characters in all: unique while the script runs) and set bed.
bench_bed_up() {
  local w=$((8 - ${#1})) rate=()
  bed=$(printf '%s%0*d' "$1" "$w" $(($$ % 10 ** w)))
  [ -n "${4:-}" ] && rate=(--rate "$4")
  "$TB" up "$bed" --hosts "$2" --links "$3" "${rate[@]}" >"$work/up.log" 2>&1 ||
    { cat "$work/up.log" >&2; return 1; }
}

# bench_cleanup: end the daemons and piods started here, tear the bed down,
# remove the scratch folder.
bench_cleanup() {
  local p
  for p in "${daemons[@]}"; do kill "$p" 2>/dev/null; done
  pio_piods_stop
  [ -n "$bed" ] && "$TB" down "$bed" >/dev/null 2>&1
  rm -rf "$work"
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

# sshd_start DIR: an sshd in h2 for this run, on h2's link-0 address (so one
# connection, one link), port 2222, root login with a throw-away key made in
# DIR (no password, no PAM); its pid goes to daemons, its log to DIR/sshd.log.
# Sets SSH_ADDR (that address) and SSHO, a client's ssh options (the key, no
# host-key checks, batch mode) as -o NAME=VALUE pairs, which ssh, scp and
# sshfs all take.
sshd_start() {
  local dir=$1
  SSH_ADDR=$("$TB" addr "$bed" h2 0)
  { ssh-keygen -q -t ed25519 -N '' -f "$dir/hostkey" && ssh-keygen -q -t ed25519 -N '' -f "$dir/id"; } ||
    return 1
  cp "$dir/id.pub" "$dir/authorized_keys"
  cat >"$dir/sshd_config" <<SSHD
Port 2222
ListenAddress $SSH_ADDR
HostKey $dir/hostkey
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
