#!/usr/bin/env bats
# pio_seal.bats - sealed data channels and express lanes (encrypt, on by
# default) on loopback.
# SPDX-License-Identifier: BSD-3-Clause
#
# Each test starts its own pair of piods (A: 127.1.i.1, B: 127.2.i.1, B
# exports a folder for pcp). What crosses loopback is watched with a raw
# AF_PACKET socket on lo (tests/lib/sniff.py): a file of a known text sent
# by pcp (over the data channels) and a small one (over the express lane)
# must show the text on the wire without sealing and never with it.

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

# start_pair_conf LINE_A LINE_B: a pair of 2 links started from config files;
# LINE_A goes into A's [peer B] section, LINE_B into B's [peer A]
start_pair_conf() {
  DIR=$BATS_TEST_TMPDIR/pair EXP=$BATS_TEST_TMPDIR/exp
  mkdir -p "$DIR" "$EXP"
  _pio_keys "$DIR" A B
  local cport dport
  read -r cport dport < <(pio_free_port 2)
  printf '%s\n' "name = A" "system = A" "listen = 127.1.0.1" "listen = 127.1.1.1" \
    "control-port = $cport" "data-port = $dport" "link-timeout = 5" \
    "[peer B]" "addr = 127.2.0.1" "addr = 127.2.1.1" "$1" >"$DIR/A.conf"
  printf '%s\n' "name = B" "system = B" "listen = 127.2.0.1" "listen = 127.2.1.1" \
    "control-port = $cport" "data-port = $dport" "link-timeout = 5" "export = $EXP" \
    "[peer A]" "addr = 127.1.0.1" "addr = 127.1.1.1" "$2" >"$DIR/B.conf"
  pio_start_conf A "$DIR" "" "$DIR/A.conf"
  pio_start_conf B "$DIR" "" "$DIR/B.conf"
  SOCK_A=$DIR/A.sock SOCK_B=$DIR/B.sock
  _pio_wait_sock "$SOCK_A" && _pio_wait_sock "$SOCK_B"
}

# wait_log FILE TEXT: until FILE holds TEXT (10 s)
wait_log() {
  local _
  for _ in $(seq 50); do
    grep -qF -- "$2" "$1" && return 0
    sleep 0.2
  done
  echo "no '$2' in $1:" >&2
  cat "$1" >&2
  return 1
}

# the cipher a pair at default settings agrees on here
default_cipher() {
  if grep -qw aes /proc/cpuinfo && grep -qw pclmulqdq /proc/cpuinfo; then
    echo aes-256-gcm
  else
    echo chacha20-poly1305
  fi
}

# sniffed_pcp SRC: pcp SRC to B while lo is watched; prints the marker count seen
sniffed_pcp() {
  local out=$BATS_TEST_TMPDIR/sniff.count
  rm -f "$out" "$out.ready"
  timeout 60 python3 -S "$SNIFF" lo "$MARK" "$out" &
  local sp=$!
  pio_wait_until 30 test -e "$out.ready"
  PIO_SOCKET=$SOCK_A timeout 60 "$PCP" -q "$1" B: || { kill "$sp"; return 1; }
  sleep 0.3
  kill -INT "$sp"; wait "$sp"
  cat "$out"
}

@test "sealed by default: every channel and the express lane come up sealed with the CPU's cipher; messages of every size arrive intact" {
  pio_need_root
  start_pair 2 "" ""
  pio_wait_channels "$SOCK_A" 2 && pio_wait_channels "$SOCK_B" 2
  cipher=$(default_cipher)
  run grep -c "data channels and express lanes sealed" "$DIR/A.log" "$DIR/B.log"
  assert_output --partial "A.log:1"
  assert_output --partial "B.log:1"
  wait_log "$DIR/A.log" "express lane to B up"
  wait_log "$DIR/B.log" "express lane to A up"
  for side in A B; do
    run grep -E "(channel [01] to|express lane to) [AB] up" "$DIR/$side.log"
    assert_output --partial "(sealed, $cipher)"
    refute_output --partial "not sealed"
  done
  pair sizes sz
  pair channels chn -n 2
}

@test "cipher = chacha20-poly1305 on one side: both directions agree on ChaCha20-Poly1305; messages intact" {
  pio_need_root
  start_pair 2 "--cipher chacha20-poly1305" ""
  pio_wait_channels "$SOCK_A" 2 && pio_wait_channels "$SOCK_B" 2
  wait_log "$DIR/B.log" "express lane to A up"
  for side in A B; do
    run grep -E "(channel [01] (to|from)|express lane (to|from)) [AB] (up|accepted)" "$DIR/$side.log"
    assert_output --partial "(sealed, chacha20-poly1305)"
    refute_output --partial "aes-256-gcm"
    refute_output --partial "not sealed"
  done
  pair sizes sz
}

@test "a big file (data channels) and a small one (express lane) of a known text: in the clear with encrypt = no for the peer, never at default settings" {
  pio_need_root
  marker_file "$BATS_TEST_TMPDIR/big.txt" 4
  python3 -S -c "import sys; sys.stdout.write('$MARK ' * 400)" >"$BATS_TEST_TMPDIR/small.txt"
  start_pair_conf "encrypt = no" "encrypt = no"
  pio_wait_channels "$SOCK_A" 2 && pio_wait_channels "$SOCK_B" 2
  wait_log "$DIR/A.log" "express lane to B up"
  run grep -E "channel [01] to B up" "$DIR/A.log"
  assert_output --partial "(not sealed)"
  clear_big=$(sniffed_pcp "$BATS_TEST_TMPDIR/big.txt")
  clear_small=$(sniffed_pcp "$BATS_TEST_TMPDIR/small.txt")
  cmp "$BATS_TEST_TMPDIR/big.txt" "$EXP/big.txt"
  cmp "$BATS_TEST_TMPDIR/small.txt" "$EXP/small.txt"
  pio_cleanup
  rm -f "$EXP/big.txt" "$EXP/small.txt"
  start_pair 2 "" ""
  pio_wait_channels "$SOCK_A" 2 && pio_wait_channels "$SOCK_B" 2
  wait_log "$DIR/A.log" "express lane to B up"
  sealed_big=$(sniffed_pcp "$BATS_TEST_TMPDIR/big.txt")
  sealed_small=$(sniffed_pcp "$BATS_TEST_TMPDIR/small.txt")
  cmp "$BATS_TEST_TMPDIR/big.txt" "$EXP/big.txt"
  cmp "$BATS_TEST_TMPDIR/small.txt" "$EXP/small.txt"
  echo "# the marker seen on lo: big file $clear_big, small $clear_small times unsealed; $sealed_big, $sealed_small sealed" >&3
  [ "$clear_big" -gt 1000 ]
  [ "$clear_small" -gt 100 ]
  [ "$sealed_big" -eq 0 ]
  [ "$sealed_small" -eq 0 ]
}

@test "a peer speaking the clear protocol is refused where sealing is required; both logs say why; the opener has no channel up" {
  pio_need_root
  start_pair 1 "--no-encrypt" ""
  # B's channel to A is sealed (A accepts sealing when asked); A's to B is refused
  wait_log "$DIR/A.log" "takes encrypted channels only (this piod has encrypt = no"
  wait_log "$DIR/B.log" "is not sealed and this piod takes encrypted channels only"
  run env PIO_SOCKET="$SOCK_A" pio-info --json
  assert_success
  [ "$(grep -c '"state": "up"' <<<"$output")" -eq 0 ] || fail "A has a channel up: $output"
}
