#!/usr/bin/env bash
# demo.sh - make demo: one PIO transfer over 1 link and over 4 links, beside the ceiling.
# SPDX-License-Identifier: BSD-3-Clause
#
# Builds an emulated cluster (tests/testbed/pio-testbed): 2 hosts, each with K
# links rate-limited to 100 Mbit/s by tc tbf, addresses in 198.18.0.0/15 inside
# network namespaces. For K = 1 and K = 4 it measures the physical ceiling (K
# iperf3 streams, one per link, at once), one TCP stream, and PIO (two piods, one
# channel per link, DYNAMIC balancing, 1 MiB messages), then prints them side by
# side. Everything it starts is removed when it ends. Needs root.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export BUILD=${BUILD:-build/default}
if [ "$(id -u)" -ne 0 ]; then
  echo "make demo: needs root (it builds network namespaces); run it as root" >&2
  exit 2
fi
cat <<'TXT'
PIO demo: two hosts joined by a bundle of ordinary 100 Mbit/s links.
A sender application on host h1 streams 1 MiB messages to a receiver application
on host h2 with PIO_Send / PIO_Recv; the two piods spread them over every link.
For each bundle size the same run also measures the ceiling (one iperf3 per link,
all at once) and a single TCP stream, so the numbers compare like with like.

TXT
out=$ROOT/build/demo
mkdir -p "$out"
THROUGHPUT_KS="1 4" THROUGHPUT_SECONDS=${DEMO_SECONDS:-5} PIO_BENCH_RESULTS=$out \
  "$ROOT/bench/throughput.sh"
rc=$?
[ $rc -eq 0 ] && cat <<TXT

What it shows: one TCP stream is held to one link whatever you do; PIO moves
the same data over all four links at once and reaches the four-link ceiling.
This run's table and plot: $out/throughput.csv and $out/throughput.png.
TXT
exit $rc
