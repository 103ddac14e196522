#!/usr/bin/env bash
# corpus.sh - grow the fuzz corpora from real traffic (make fuzz-corpus).
# SPDX-License-Identifier: BSD-3-Clause
#
# Usage: FUZZ_DIR=build/default/fuzz BUILD=build/default tests/fuzz/corpus.sh TARGET...
# Runs the test suites that move real bytes (loopback, test bed, pcp, merged
# output, viz, pfs, GAS, anco, MPI, Fortran) with PIO_CAPTURE_DIR set: every
# decoder writes each input it is given once (common/capture.h). Then each
# TARGET's captures (and, for wire, a valid frame of every type from
# fuzz_seeds) are merged into tests/fuzz/corpus/TARGET with libFuzzer's
# -merge=1, which keeps an input only when it adds coverage. Prints the
# counts. The suites' own result does not matter here, only their traffic;
# piod.conf.example is added to the config captures.
set -u
cd "$(dirname "$0")/../.." || exit 2
FUZZ_DIR=${FUZZ_DIR:-build/default/fuzz}
BUILD=${BUILD:-build/default}
SUITES=${FUZZ_CORPUS_SUITES:-'unit/test_(wire|config|fstream)|bats/(pio_|piod_cli|pcp|merge|viz|pfs|gas|anco|mpi|fortran)'}
cap=$(mktemp -d /tmp/pio-capture.XXXXXX)
chmod 0777 "$cap"
echo "-- capturing decoder inputs of the suites matching $SUITES into $cap"
PIO_CAPTURE_DIR=$cap BUILD=$BUILD tests/run "$SUITES" | tail -n 3
mkdir -p "$cap/config" "$cap/wire"
cp piod/piod.conf.example "$cap/config/piod.conf.example"
"$FUZZ_DIR/fuzz_seeds" "$cap/wire" >/dev/null
printf '%-9s %9s %12s %12s\n' target captured corpus_before corpus_after
for t in "$@"; do
  corpus=tests/fuzz/corpus/$t
  mkdir -p "$corpus" "$cap/$t"
  before=$(ls "$corpus" | wc -l)
  "$FUZZ_DIR/fuzz_$t" -merge=1 -timeout=10 -rss_limit_mb=4096 -artifact_prefix="$cap/" "$corpus" "$cap/$t" \
    >"$FUZZ_DIR/$t.merge.log" 2>&1 || { echo "$t: merge failed, see $FUZZ_DIR/$t.merge.log"; exit 1; }
  printf '%-9s %9s %12s %12s\n' "$t" "$(ls "$cap/$t" | wc -l)" "$before" "$(ls "$corpus" | wc -l)"
done
rm -rf "$cap"
