#!/usr/bin/env bats
# pio_seal.bats - sealed data channels (encrypt = yes, --encrypt) on loopback.
# SPDX-License-Identifier: BSD-3-Clause
#
# Each test starts its own pair of piods (A: 127.1.i.1, B: 127.2.i.1, B
# exports a folder for pcp). What crosses loopback is watched with a raw
# AF_PACKET socket on lo (tests/lib/sniff.py): a file of a known text sent
# by pcp must show the text on the wire without sealing and never with it.

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

CHECK=$PIO_BUILD/tests/prog/pio-check
PCP=$PIO_BUILD/bin/pcp
SNIFF=$PIO_SRC/tests/lib/sniff.py
MARK=PIO-SEAL-TEST-MARKER-7f3a91

teardown() {
  pio_cleanup
}

# start_pair K FLAGS_A FLAGS_B: a pair on loopback; B exports $BATS_TEST_TMPDIR/exp
start_pair() {
  DIR=$BATS_TEST_TMPDIR/pair EXP=$BATS_TEST_TMPDIR/exp
  mkdir -p "$DIR" "$EXP"
  PIO_PIOD_FLAGS_A="--link-timeout 5 $2" PIO_PIOD_FLAGS_B="--link-timeout 5 --export $EXP $3" \
    pio_pair_loopback_start "$DIR" "$1"
  SOCK_A=$PIO_SOCK_A SOCK_B=$PIO_SOCK_B
}

# pair TEST NAME [args]: pio-check receiver on B, sender on A, both OK
pair() {
  local test=$1 name=$2; shift 2
  PIO_SOCKET=$SOCK_B timeout 120 "$CHECK" recv "$test" -a "$name-r" -p "$name-s" "$@" \
    >"$BATS_TEST_TMPDIR/recv.out" 2>&1 &
  local rp=$!
  run env PIO_SOCKET="$SOCK_A" timeout 120 "$CHECK" send "$test" -a "$name-s" -p "$name-r" "$@"
  local send_status=$status
  wait "$rp"; local recv_status=$?
  echo "sender: $output"; echo "receiver: $(cat "$BATS_TEST_TMPDIR/recv.out")"
  [ "$send_status" -eq 0 ] && [ "$recv_status" -eq 0 ] && grep -q '^OK' "$BATS_TEST_TMPDIR/recv.out"
}

# marker_file PATH MiB: a file of the marker text, repeated
marker_file() {
  python3 -S -c "import sys; sys.stdout.write(('$MARK ' * 40 + '\n') * (${2} * 1024 * 1024 // 1200))" >"$1"
}

# sniffed_pcp SRC: pcp SRC to B while lo is watched; prints the marker count seen
sniffed_pcp() {
  local out=$BATS_TEST_TMPDIR/sniff.count
  rm -f "$out"
  timeout 60 python3 -S "$SNIFF" lo "$MARK" "$out" &
  local sp=$!
  sleep 0.5
  PIO_SOCKET=$SOCK_A timeout 60 "$PCP" -q "$1" B: || { kill "$sp"; return 1; }
  sleep 0.3
  kill -INT "$sp"; wait "$sp"
  cat "$out"
}

@test "sealed pair: every channel comes up sealed, both logs say so, messages of every size arrive intact" {
  pio_need_root
  start_pair 2 --encrypt --encrypt
  pio_wait_channels "$SOCK_A" 2 && pio_wait_channels "$SOCK_B" 2
  grep -q "data channels sealed" "$DIR/A.log"
  grep -q "data channels sealed" "$DIR/B.log"
  pair sizes sz
  pair channels chn -n 2
}

@test "a file of a known text: on the wire in the clear without sealing, never with it; intact both ways" {
  pio_need_root
  marker_file "$BATS_TEST_TMPDIR/plain.txt" 4
  start_pair 2 "" ""
  pio_wait_channels "$SOCK_A" 2 && pio_wait_channels "$SOCK_B" 2
  clear=$(sniffed_pcp "$BATS_TEST_TMPDIR/plain.txt")
  cmp "$BATS_TEST_TMPDIR/plain.txt" "$EXP/plain.txt"
  pio_cleanup
  rm -f "$EXP/plain.txt"
  start_pair 2 --encrypt --encrypt
  pio_wait_channels "$SOCK_A" 2 && pio_wait_channels "$SOCK_B" 2
  sealed=$(sniffed_pcp "$BATS_TEST_TMPDIR/plain.txt")
  cmp "$BATS_TEST_TMPDIR/plain.txt" "$EXP/plain.txt"
  echo "# the marker seen on lo: $clear times unsealed, $sealed times sealed" >&3
  [ "$clear" -gt 1000 ]
  [ "$sealed" -eq 0 ]
}

@test "a sealed acceptor refuses an unsealed opener; both logs say why; the opener has no channel up" {
  pio_need_root
  start_pair 1 "" --encrypt
  # B's channel to A is sealed (A accepts sealing); A's to B is refused
  for _ in $(seq 50); do
    grep -q "takes encrypted channels only (set encrypt = yes" "$DIR/A.log" && break
    sleep 0.2
  done
  grep -q "takes encrypted channels only (set encrypt = yes" "$DIR/A.log"
  grep -q "is not sealed and this piod takes encrypted channels only" "$DIR/B.log"
  run env PIO_SOCKET="$SOCK_A" pio-info --json
  [ "$(grep -c '"state": "up"' <<<"$output")" -eq 0 ] || fail "A has a channel up: $output"
}
