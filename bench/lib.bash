# lib.bash - what the test-bed benchmarks share: a python with matplotlib and
# the iperf3 ceiling measurement. Sourced by bench/*.sh after they set TB (the
# pio-testbed tool) and while $bed names the current bed (hosts h1 -> h2).
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
  local i a n
  for i in "$@"; do
    a=$("$TB" addr "$bed" h2 "$i")
    "$TB" exec "$bed" h2 iperf3 -s -1 -D -B "$a" -p $((5201 + i)) || return 1
  done
  for i in "$@"; do
    a=$("$TB" addr "$bed" h2 "$i")
    for ((n = 0; n < 100; n++)); do
      [ -n "$("$TB" exec "$bed" h2 ss -Hltn "src $a:$((5201 + i))")" ] && break
      sleep 0.05
    done
    [ $n -lt 100 ] || { echo "iperf3 server on $a did not start" >&2; return 1; }
  done
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
