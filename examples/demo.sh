#!/usr/bin/env bash
# demo.sh - make demo: pcp copies a 1 GiB file over 1 link and over 4 links,
# beside scp and the links' ceiling.
# SPDX-License-Identifier: BSD-3-Clause
#
# As root: an emulated cluster (tests/testbed/pio-testbed) of 2 hosts, each
# with 4 links rate-limited to 100 Mbit/s by tc tbf, addresses in
# 198.18.0.0/15 inside network namespaces; two piods (the receiving one
# exports a folder), then bench/pcp.sh with the runs below, every copy
# checked byte for byte. Not root: the same copies between two piods on
# loopback (no rate limit, so only the mechanics show). Everything it starts
# is removed when it ends. DEMO_SIZE (default 1G) sets the file size.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export BUILD=${BUILD:-build/default}
SIZE=${DEMO_SIZE:-1G}
cat <<'TXT'
PIO demo: copying a file to another host over a bundle of ordinary links.
pcp hands the file to this host's piod, which spreads it over every link to
the other host's piod; there the file service writes it, checks its XXH3
checksum (computed on both sides while the bytes stream) and only then puts
it under its name. scp, like any single TCP connection, is held to one link.

TXT
out=$ROOT/build/demo
mkdir -p "$out"
if [ "$(id -u)" -eq 0 ]; then
  PCP_SIZE=$SIZE PCP_RUNS="ceiling pcp-n1 pcp-n4 scp" PIO_BENCH_RESULTS=$out "$ROOT/bench/pcp.sh"
  rc=$?
  [ $rc -eq 0 ] && cat <<TXT

What it shows: over one link pcp goes as fast as scp (the link is the limit);
over four it reaches the four links' ceiling, about four times scp. This
run's table and plot: $out/pcp.csv and $out/pcp.png.
TXT
  exit $rc
fi
echo "(not root: no test bed; two piods on loopback, links not rate-limited)"
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
export PIO_SRC=$ROOT PIO_BUILD=$BUILD
# shellcheck source=../tests/lib/piod.bash
source "$ROOT/tests/lib/piod.bash"
work=$(mktemp -d /tmp/pio-demo.XXXXXX)
trap 'pio_piods_stop; rm -rf "$work"' EXIT
mkdir -p "$work/exp"
PIO_PIOD_FLAGS="--export $work/exp" pio_pair_loopback "$work/pair" 4 || exit 1
sleep 1
head -c "$(python3 -c 'import re,sys; m=re.fullmatch(r"([0-9]+)([kKmMgG]?)", sys.argv[1]); print(int(m.group(1)) << {"":0,"k":10,"m":20,"g":30}[m.group(2).lower()])' "$SIZE")" /dev/urandom >"$work/file"
for n in 1 4; do
  echo "-- pcp -n $n $SIZE file"
  PIO_SOCKET=$PIO_SOCK_A "$BUILD/bin/pcp" -n "$n" "$work/file" "B:copy$n" || exit 1
  cmp "$work/file" "$work/exp/copy$n" && echo "   identical"
done
