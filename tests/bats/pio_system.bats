#!/usr/bin/env bats
# pio_system.bats - a system of several hosts: 2 sender hosts (2 links each)
# and 1 receiver host (4 links) on a test bed with an internal network.
# SPDX-License-Identifier: BSD-3-Clause
#
# Bed: h1 = s1 and h2 = s2 form system S; h3 = R. Every link runs at
# 100 Mbit/s. s1 owns S's links 0 and 1, s2 owns links 2 and 3: the test cuts
# h1's links 2, 3 and h2's links 0, 1 at the switch, so the only way for s1
# to use links 2 and 3 is through s2 (a relay over the unshaped internal
# network). R knows s1 and s2 as two peers of one system S, each with S's four
# link addresses.

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

CHECK=$PIO_BUILD/tests/prog/pio-check

# write_conf FILE NAME: the config of host NAME (s1, s2 or R)
write_conf() {
  local f=$1 n=$2 a k
  local -A host=([s1]=1 [s2]=2 [R]=3)
  local h=${host[$n]}
  {
    echo "name = $n"
    if [ "$n" = R ]; then
      echo "system = R"
      for k in 0 1 2 3; do echo "listen = $(addr 3 "$k")"; done
      for a in s1 s2; do
        echo "[peer $a]"
        echo "system = S"
        echo "control = $(addr "${host[$a]}" "$([ $a = s1 ] && echo 0 || echo 2)")"
        for k in 0 1; do echo "addr = $(addr 1 "$k")"; done
        for k in 2 3; do echo "addr = $(addr 2 "$k")"; done
      done
    else
      local other=s2 oh=2 mine=(0 1) theirs=(2 3)
      [ "$n" = s2 ] && other=s1 oh=1 mine=(2 3) theirs=(0 1)
      echo "system = S"
      echo "internal = $(addr "$h" int)"
      for k in "${mine[@]}"; do echo "listen = $(addr "$h" "$k")"; done
      echo "[member $other]"
      echo "internal = $(addr "$oh" int)"
      for k in "${theirs[@]}"; do echo "addr = $(addr "$oh" "$k")"; done
      echo "[peer R]"
      for k in 0 1 2 3; do echo "addr = $(addr 3 "$k")"; done
    fi
  } >"$f"
}

addr() { "$PIO_TESTBED" addr "$BED" "h$1" "$2"; }

setup_file() {
  [ "$(id -u)" -eq 0 ] || return 0
  export BED DIR
  BED=$(pio_unique_name psys)
  pio_bed_up "$BED" --hosts 3 --links 4 --rate 100mbit --internal >/dev/null
  for k in 2 3; do "$PIO_TESTBED" link "$BED" h1 "$k" down; done
  for k in 0 1; do "$PIO_TESTBED" link "$BED" h2 "$k" down; done
  DIR=$BATS_FILE_TMPDIR/sys
  mkdir -p "$DIR"
  _pio_keys "$DIR" s1 s2 R
  local n
  for n in s1 s2 R; do write_conf "$DIR/$n.conf" "$n"; done
  pio_start_conf s1 "$DIR" "$("$PIO_TESTBED" ns "$BED" h1)" "$DIR/s1.conf"
  pio_start_conf s2 "$DIR" "$("$PIO_TESTBED" ns "$BED" h2)" "$DIR/s2.conf"
  pio_start_conf R "$DIR" "$("$PIO_TESTBED" ns "$BED" h3)" "$DIR/R.conf"
  export S1=$DIR/s1.sock S2=$DIR/s2.sock R=$DIR/R.sock
  _pio_wait_sock "$S1" && _pio_wait_sock "$S2" && _pio_wait_sock "$R"
  # each sender host: 4 channels to R (2 relayed); R: 4 to each sender host
  pio_wait_channels "$S1" 4 30 && pio_wait_channels "$S2" 4 30 && pio_wait_channels "$R" 8 30
}

teardown_file() {
  pio_cleanup
}

setup() {
  pio_need_root
}

# COLUMN of pio-info --json rows matching a python condition on c, index order
rows() {
  PIO_SOCKET=$1 pio-info --json | python3 -c '
import json, sys
info = json.load(sys.stdin)
cond = eval("lambda c: " + sys.argv[1])
chans = sorted((c for c in info["channels"] if cond(c)), key=lambda c: c["index"])
print(" ".join(str(c[sys.argv[2]]) for c in chans))' "$2" "$3"
}

@test "the configs are valid and each host derives S's four links in the same order" {
  run "$PIOD" --check-config -v --config "$DIR/s1.conf" --keys "$DIR/keys"
  assert_success
  assert_output --partial "[member s2]"
  run "$PIOD" --check-config --config "$DIR/R.conf" --keys "$DIR/keys"
  assert_success
  grep -q "system S: 4 link(s) over 2 host(s)" "$DIR/s1.log"
  grep -q "system S: 4 link(s) over 2 host(s)" "$DIR/s2.log"
}

@test "a member is not a peer and needs an internal address: clear errors" {
  printf 'name = x\nlisten = 127.0.0.1\n[member y]\naddr = 127.0.0.2\n' >"$BATS_TEST_TMPDIR/bad.conf"
  run "$PIOD" --check-config --config "$BATS_TEST_TMPDIR/bad.conf"
  assert_failure
  assert_output --partial "member 'y' needs 'internal = ADDR'"
  assert_output --partial "a system of several hosts needs 'internal = ADDR'"
}

@test "pio-info on one host shows the whole system: its own channels and the member's" {
  sleep 1 # a load report every 250 ms
  run env PIO_SOCKET="$S1" pio-info
  assert_success
  echo "$output"
  # the host column appears, with rows of both hosts, every channel up
  assert_output --regexp "host +peer"
  [ "$(grep -cE '^s1 +R +[0-3] +up' <<<"$output")" -eq 4 ]
  [ "$(grep -cE '^s2 +R +[0-3] +up' <<<"$output")" -eq 4 ]
}

@test "a load report without the members' MAC is dropped, even from a member's address; the real ones keep coming" {
  local h2
  h2=$(addr 2 int)
  run "$PIO_TESTBED" exec "$BED" h2 "$PIO_BUILD/tests/prog/pio-hostile" load "$(addr 1 int)" 7702 s2 \
    -b "$h2"
  assert_success
  assert_output --partial "RESULT sent"
  pio_wait_until 10 grep -q "load report from $h2 (member s2's address) dropped: its MAC is wrong" \
    "$DIR/s1.log"
  # s1 shows s2's real channels, fresh, and nothing of the forged row
  sleep 1
  run rows "$S1" 'c.get("host") == "s2"' state
  assert_output "up up up up"
  run rows "$S1" 'c["rx_bytes"] == 4242424242 or c["peer"] == "SPOOF"' peer
  assert_output ""
}

@test "one active sender host uses all 4 receiver links (2 of them relayed by its idle member)" {
  before=$(rows "$R" 'c["peer"] == "s1"' rx_bytes)
  PIO_SOCKET=$R timeout 90 "$CHECK" recv sizes -a sys-r -p sys-s -S 128M \
    >"$BATS_TEST_TMPDIR/r" 2>&1 &
  rp=$!
  start=$(date +%s.%N)
  run env PIO_SOCKET="$S1" timeout 90 "$CHECK" send sizes -a sys-s -p sys-r -S 128M \
    -c DYNAMIC -m sync
  end=$(date +%s.%N)
  echo "$output"
  assert_success
  wait "$rp" || { cat "$BATS_TEST_TMPDIR/r"; false; }
  grep -q '^OK sizes: 1 messages (128M)' "$BATS_TEST_TMPDIR/r"
  after=$(rows "$R" 'c["peer"] == "s1"' rx_bytes)
  python3 - "$before" "$after" "$start" "$end" "${PIO_TEST_MULT:-1}" <<'PY'
import sys
b, a = ([int(x) for x in s.split()] for s in sys.argv[1:3])
slow = int(sys.argv[5]) > 1  # a sanitized build: its speed is not the code's
d = [y - x for x, y in zip(b, a)]
total = sum(d)
secs = float(sys.argv[4]) - float(sys.argv[3])
print("R received from s1 per link (MiB): " + ", ".join("%d: %.1f" % (i, x / 2**20) for i, x in enumerate(d)))
print("%.1f MiB in %.1f s = %.1f MB/s (one 100 Mbit/s link: 12.5 MB/s)" % (total / 2**20, secs, total / secs / 1e6))
assert len(d) == 4, d
# every receiver link carries a fair share (ideal 25% each)
assert all(x >= 0.15 * total for x in d), "a link was left out"
# and the transfer ran faster than the two links s1 owns could carry it (2 x 12.5 MB/s)
assert slow or total / secs > 30e6, "not faster than the two links s1 owns"
PY
}

@test "the idle member relays: s2 counts nothing sent of its own, s1's relayed channels carried data" {
  run rows "$S1" 'c["host"] == "s1" and c["index"] >= 2' tx_bytes
  echo "$output"
  assert_success
  [ -n "$output" ]
  for x in $output; do [ "$x" -gt $((10 * 1024 * 1024)) ]; done
  run rows "$S2" 'c["host"] == "s2"' tx_bytes
  echo "$output"
  assert_success
  [ -n "$output" ]
  for x in $output; do [ "$x" -eq 0 ]; done
}
