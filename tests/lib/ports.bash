# ports.bash - free TCP ports for servers that tests and benchmarks start.
# SPDX-License-Identifier: BSD-3-Clause
# Sourced by helpers.bash and piod.bash (no Bats needed).

# pio_free_port [N]: N (default 1) distinct TCP ports free now, on one line.
# They come from below the kernel's ephemeral range (20000 up to it), where
# no outgoing connection can take one between this pick and the server's
# bind: a port the kernel picked could become some connection's source port
# meanwhile (fresh-ci: a piod's data port "cannot bind").
pio_free_port() {
  python3 - "${1:-1}" <<'PY'
import random, socket, sys
want, got, lo, hi = int(sys.argv[1]), [], 20000, 32767
try:
    hi = min(hi, int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0]) - 1)
except (OSError, ValueError, IndexError):
    pass
while len(got) < want:
    p = random.randint(lo, hi)
    s = socket.socket()
    try:
        if p not in got:
            s.bind(("0.0.0.0", p))  # free on every address
            got.append(p)
    except OSError:
        pass
    finally:
        s.close()
print(" ".join(map(str, got)))
PY
}
