#!/usr/bin/env bats
# faults.bats - faults on the test bed: links cut and restored, piods killed
# and restarted, a full disk at the receiver, the wall clock jumping.
# SPDX-License-Identifier: BSD-3-Clause
#
# Every case checks the same rule: no acknowledged byte lost (what completes
# is compared byte for byte), no partial file under a final name, and a
# clear error where the operation cannot complete.
#
# The bed: 2 hosts x 2 links at 100 Mbit/s (a 48 MiB copy takes about 2 s).
# A (h1) runs the clients' piod; B (h2) exports $EXP (its piod runs the file
# service pio-files) and hosts the receivers (pio-vizd, pfs servers). Both
# piods give a peer up after --link-timeout 5 s with no channel. A message
# over the bundle is covered by pio_testbed.bats (link cut, every link cut);
# here are the other kinds of transfer, kills, full disks and clock jumps.
# See docs/faults-notes.md for what each fault showed and what was fixed.

load "$BATS_TEST_DIRNAME/../lib/helpers"
case $PIO_BUILD in *asan*) export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 ;; esac
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

PCP=$PIO_BUILD/bin/pcp
CHECK=$PIO_BUILD/tests/prog/pio-check
FCHECK=$PIO_BUILD/tests/prog/pio-filecheck
EX=$PIO_BUILD/examples
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1)
LINK_TIMEOUT=5
FAKETIME_LIB=/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1

# start_piod A|B [ENV...]: the piod of host h1 (A) or h2 (B), again after a
# kill; ENV (NAME=VALUE words) runs it under env, e.g. with libfaketime.
start_piod() {
  local who=$1 me peer h; shift
  if [ "$who" = A ]; then me=1 peer=2 h=h1; else me=2 peer=1 h=h2; fi
  local other=A; [ "$who" = A ] && other=B
  local m0 m1 p0 p1 extra=()
  m0=$("$PIO_TESTBED" addr "$BED" "h$me" 0) m1=$("$PIO_TESTBED" addr "$BED" "h$me" 1)
  p0=$("$PIO_TESTBED" addr "$BED" "h$peer" 0) p1=$("$PIO_TESTBED" addr "$BED" "h$peer" 1)
  [ "$who" = B ] && extra=(--export "${EXPORT_DIR:-$EXP}")
  rm -f "$DIR/$who.sock"
  # shellcheck disable=SC2086
  _pio_launch "$who" "$DIR" "$("$PIO_TESTBED" ns "$BED" "$h")" env "$@" "$PIOD" -f --name "$who" \
    --system "$who" --keys "$DIR/keys" --socket "$DIR/$who.sock" ${PIO_PIOD_FLAGS:-} \
    --listen "$m0" --listen "$m1" --peer "$other=$p0,$p1" --link-timeout "$LINK_TIMEOUT" \
    "${extra[@]}"
  _pio_wait_sock "$DIR/$who.sock"
}

# bundle_up: both piods see both channels up (after a restart or a cut)
bundle_up() {
  pio_wait_channels "$SOCK_A" 2 60 && pio_wait_channels "$SOCK_B" 2 60
}

setup_file() {
  [ "$(id -u)" -eq 0 ] || return 0
  export BED DIR EXP SOCK_A SOCK_B
  BED=$(pio_unique_name flt)
  pio_bed_up "$BED" --hosts 2 --links 2 --rate 100mbit >/dev/null
  DIR=$BATS_FILE_TMPDIR/pair
  EXP=$BATS_FILE_TMPDIR/export
  mkdir -p "$DIR" "$EXP"
  _pio_keys "$DIR" A B
  SOCK_A=$DIR/A.sock SOCK_B=$DIR/B.sock
  start_piod A && start_piod B && bundle_up
}

teardown_file() {
  pio_cleanup
}

setup() {
  pio_need_root
  export PIO_SOCKET=$SOCK_A
  W=$BATS_TEST_TMPDIR
  # a case that killed a piod or cut links left the bundle to the next one
  # whole: both piods running, every link up, both channels up
  for h in h1 h2; do for l in 0 1; do "$PIO_TESTBED" link "$BED" "$h" "$l" up; done; done
  kill -0 "$(cat "$DIR/A.pid")" 2>/dev/null || start_piod A
  kill -0 "$(cat "$DIR/B.pid")" 2>/dev/null || start_piod B
  bundle_up
}

teardown() {
  # mounts made in B's mount namespace by this case
  local m
  for m in "${MOUNTS[@]}"; do
    nsenter -t "$(cat "$DIR/B.pid")" -m umount "$m" 2>/dev/null || true
  done
  MOUNTS=()
  for m in "${ROOT_MOUNTS[@]}"; do
    # B used it as its export root: B goes first (setup starts it again)
    stop_piod B
    umount "$m" 2>/dev/null || true
  done
  ROOT_MOUNTS=()
}

MOUNTS=()
ROOT_MOUNTS=()

cut_all() { "$PIO_TESTBED" link "$BED" h1 0 down; "$PIO_TESTBED" link "$BED" h1 1 down; }
restore_all() { "$PIO_TESTBED" link "$BED" h1 0 up; "$PIO_TESTBED" link "$BED" h1 1 up; }

# size_above FILE N: FILE exists and holds more than N bytes
size_above() {
  [ -e "$1" ] && [ "$(stat -c %s "$1")" -gt "$2" ]
}

# tx_total SOCK: data bytes the piod has sent on all its channels
tx_total() {
  PIO_SOCKET=$1 "$PIO_BUILD/bin/pio-info" --json | python3 -c '
import json, sys
print(sum(c["tx_bytes"] for c in json.load(sys.stdin)["channels"]))'
}

# app_seen SOCK APP: the piod on SOCK lists APP with a process joined (a
# peer's application is known once that peer's registry came: after a cut
# past the link timeout it comes again when the control plane and the lane
# are back, which TCP's back-off can hold for seconds after the channels)
app_seen() {
  PIO_SOCKET=$1 "$PIO_BUILD/bin/pio-info" 2>/dev/null | awk -v a="$2" '$1 == a && $4 > 0 {f = 1} END {exit !f}'
}

tx_above() {
  [ "$(tx_total "$1")" -gt "$2" ]
}

# b_ns CMD...: CMD in B's mount namespace (where its file service writes)
b_ns() {
  nsenter -t "$(cat "$DIR/B.pid")" -m "$@"
}

# b_tmpfs DIR SIZE: a tmpfs of SIZE at DIR, seen by B's piod and file service only
b_tmpfs() {
  mkdir -p "$1"
  b_ns mount -t tmpfs -o "size=$2" tmpfs "$1"
  MOUNTS+=("$1")
}

# b_room DIR KIB: the tmpfs at DIR (as B sees it) has at least KIB free. A
# failed copy's part file is unlinked at once, but its space comes back when
# the file service's session closes it, a moment later.
b_room() {
  [ "$(b_ns df --output=avail -k "$1" | tail -n 1)" -ge "$2" ]
}

# stop_piod A|B [SIGNAL]: signal the piod (default TERM) and wait until it
# is gone (or a zombie: it may be a child of another shell of Bats')
stop_piod() {
  local pid i
  pid=$(cat "$DIR/$1.pid")
  kill "-${2:-TERM}" "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 300; i++)); do
    [ -e "/proc/$pid" ] || return 0
    [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && return 0
    sleep 0.05
  done
  kill -KILL "$pid" 2>/dev/null || true
}

kill9() {
  stop_piod "$1" KILL
}

# ---- 1. links cut and restored ----------------------------------------------

@test "pcp: every link cut for 2 s under a copy each way; both complete, byte for byte" {
  head -c $((48 << 20)) /dev/urandom >"$W/src"
  "$PCP" -q "$W/src" B:cut.out >"$W/put.log" 2>&1 &
  p=$!
  pio_wait_until 30 size_above "$EXP/.cut.out.pcp-part" $((8 << 20))
  cut_all; sleep 2; restore_all
  rc=0; wait $p || rc=$?
  cat "$W/put.log"
  [ "$rc" -eq 0 ]
  cmp "$W/src" "$EXP/cut.out"
  # the other way: B sends, the cut is on the same links
  "$PCP" -q B:cut.out "$W/back" >"$W/get.log" 2>&1 &
  p=$!
  pio_wait_until 30 size_above "$W/.back.pcp-part" $((8 << 20))
  cut_all; sleep 2; restore_all
  rc=0; wait $p || rc=$?
  cat "$W/get.log"
  [ "$rc" -eq 0 ]
  cmp "$W/src" "$W/back"
  [ -z "$(find "$EXP" "$W" -name '*.pcp-part')" ]
}

@test "pcp: every link down past the link timeout: a clear error in seconds, no file under its name; restored, --resume finishes" {
  head -c $((48 << 20)) /dev/urandom >"$W/src"
  "$PCP" -q "$W/src" B:down.out >"$W/put.log" 2>&1 &
  p=$!
  pio_wait_until 30 size_above "$EXP/.down.out.pcp-part" $((8 << 20))
  cut_all
  SECONDS=0
  rc=0; wait $p || rc=$?
  took=$SECONDS
  restore_all
  cat "$W/put.log"
  echo "pcp ended after $took s with the links down"
  [ "$rc" -eq 12 ] # the connection broke during the copy
  [ "$took" -le $((LINK_TIMEOUT + 20)) ]
  # said where pcp was when the bundle went: waiting for the service, or
  # sending the file's data
  grep -q -E "B: the file service stopped answering|$W/src: no usable link: every channel to the peer is down" "$W/put.log"
  [ ! -e "$EXP/down.out" ]
  grep -q "no channel to B has been up for $LINK_TIMEOUT s" "$DIR/A.log"
  bundle_up
  run "$PCP" -q --resume --json "$W/src" B:down.out
  echo "$output"
  assert_success
  cmp "$W/src" "$EXP/down.out"
}

# up_count SOCK: channels the piod has up
up_count() {
  PIO_SOCKET=$1 "$PIO_BUILD/bin/pio-info" --count-up 2>/dev/null
}

# a_sees_one_down: piod A has given channel 1 up (an idle channel over a cut
# link looks fine until it has to carry)
a_sees_one_down() {
  [ "$(up_count "$SOCK_A")" -le 1 ]
}

@test "pcp: link 1 cut: -n 2, -b static, -b user and -b dynamic copy over link 0; -n says which channel it skips" {
  head -c $((24 << 20)) /dev/urandom >"$W/src"
  "$PIO_TESTBED" link "$BED" h1 1 down
  # -n 2 while channel 1 still looks up: its messages there stall, piod A
  # gives the channel up and sends them again on channel 0; pcp sees it
  # down and names only channel 0 from then on (it used to stop with
  # PIO_ECHANNEL, at times without a word)
  local how name
  for how in "-n 2" "-b static" "-b user" "-b dynamic"; do
    name=cut${how// /}
    run timeout 120 "$PCP" -q --chunk 1M $how "$W/src" "B:$name"
    echo "pcp $how: exit $status"
    echo "$output"
    [ "$status" -eq 0 ]
    cmp "$W/src" "$EXP/$name"
    pio_wait_until 20 a_sees_one_down
  done
  # the -b user run started with channel 1 down: it said so
  run timeout 120 "$PCP" -q --chunk 1M -n 2 "$W/src" B:cut-n2-again
  echo "$output"
  assert_success
  assert_output --partial "channel 1 to B is down: the copy goes on over the other channels of -n 2"
  cmp "$W/src" "$EXP/cut-n2-again"
}

# merged NP PATH ARGS...: examples/merged_output on A (an application "merge")
merged() {
  local np=$1; shift
  timeout 120 "${MPIRUN[@]}" -np "$np" "$EX/merged_output" B "$@" </dev/null
}

@test "merged output: every link cut for 2 s while 4 ranks write; the remote file equals the local one" {
  mkdir -p "$EXP/m"
  merged 4 m/cut.bin --blocks 16 --local "$W/local.bin" >"$W/m.log" 2>&1 &
  p=$!
  t0=$(tx_total "$SOCK_A")
  pio_wait_until 30 tx_above "$SOCK_A" $((t0 + (8 << 20)))
  cut_all; sleep 2; restore_all
  rc=0; wait $p || rc=$?
  cat "$W/m.log"
  [ "$rc" -eq 0 ]
  grep -q "OK merged_output: 4 processes, 64 blocks" "$W/m.log"
  cmp "$W/local.bin" "$EXP/m/cut.bin"
  [ -z "$(find "$EXP" -name '*.pcp-part')" ]
}

@test "merged output: every link down past the link timeout: every rank fails with a clear error, no file under its name" {
  mkdir -p "$EXP/m"
  merged 4 m/down.bin --blocks 16 >"$W/m.log" 2>&1 &
  p=$!
  t0=$(tx_total "$SOCK_A")
  pio_wait_until 30 tx_above "$SOCK_A" $((t0 + (8 << 20)))
  cut_all
  SECONDS=0
  rc=0; wait $p || rc=$?
  took=$SECONDS
  restore_all
  cat "$W/m.log"
  echo "merged_output ended after $took s with the links down (exit $rc)"
  [ "$rc" -ne 0 ]
  [ "$rc" -ne 124 ]
  [ "$took" -le $((LINK_TIMEOUT + 30)) ]
  grep -Eq "rank [0-9]: PIO_File_(write|close).*(gone away|no usable link)" "$W/m.log"
  [ ! -e "$EXP/m/down.bin" ]
}

@test "viz: every link cut for 2 s under a lossless (archive) feed; every step arrives bit-exact" {
  local vizd=$PIO_BUILD/bin/pio-vizd vcheck=$PIO_BUILD/viz/test/viz_archive_check
  mkdir "$W/arch"
  run timeout 120 "${MPIRUN[@]}" -np 1 "$EX/heat3d" --n 32 --steps 16 --viz nobody --ref "$W/ref.bin" </dev/null
  assert_success
  vp=$(pio_spawn "$W/vizd.log" env -u DISPLAY PIO_SOCKET="$SOCK_B" "$vizd" --threads 2 \
    --archive "$W/arch" --steps 16)
  pio_wait_until 20 grep -q "receiving threads" "$W/vizd.log"
  # A knows the receiver before the feed looks (a feed skips the steps
  # before its receiver is there, and the archive waits for step 0)
  pio_wait_until 20 app_seen "$SOCK_A" vizd
  # 32^3 x 12 bytes = 384 KiB a step, 100 ms apart: the cut falls mid-run
  timeout 120 "${MPIRUN[@]}" -np 4 "$EX/heat3d" --n 32 --steps 16 --sleep 200 --stats \
    </dev/null >"$W/heat.log" 2>&1 &
  hp=$!
  pio_wait_until 30 sh -c "ls '$W/arch'/step_00000*.vti"
  cut_all; sleep 2; restore_all
  rc=0; wait $hp || rc=$?
  cat "$W/heat.log"
  [ "$rc" -eq 0 ]
  pio_wait_until 60 sh -c "! kill -0 $vp"
  cat "$W/vizd.log"
  grep -q "16 steps complete, 0 dropped" "$W/vizd.log"
  run "$vcheck" "$W/arch/step.pvd" 32 16 "$W/ref.bin" 4
  echo "$output"
  assert_success
}

@test "viz: link 0 (control plane, express lane) cut as a lossless feed starts: every rank learns the mode through the cut and sends every step" {
  local vizd=$PIO_BUILD/bin/pio-vizd
  mkdir "$W/arch"
  vp=$(pio_spawn "$W/vizd.log" env -u DISPLAY PIO_SOCKET="$SOCK_B" "$vizd" --threads 2 \
    --archive "$W/arch" --steps 12)
  pio_wait_until 20 grep -q "receiving threads" "$W/vizd.log"
  pio_wait_until 20 app_seen "$SOCK_A" vizd
  # the feed's question (HELLO) and the receiver's answer are small messages
  # on link 0: they wait out the cut and TCP's back-off. The feed used to
  # give up after 5 s and skip every step of the run (12 fast steps)
  "$PIO_TESTBED" link "$BED" h1 0 down
  timeout 120 "${MPIRUN[@]}" -np 4 "$EX/heat3d" --n 32 --steps 12 --stats </dev/null \
    >"$W/heat.log" 2>&1 &
  hp=$!
  sleep 7
  "$PIO_TESTBED" link "$BED" h1 0 up
  rc=0; wait $hp || rc=$?
  cat "$W/heat.log"
  [ "$rc" -eq 0 ]
  [ "$(grep -c "sent 12, skipped 0, .* lossless" "$W/heat.log")" -eq 4 ]
  pio_wait_until 60 sh -c "! kill -0 $vp"
  cat "$W/vizd.log"
  grep -q "12 steps complete, 0 dropped" "$W/vizd.log"
  [ "$(find "$W/arch" -name 'step_*.vti' | wc -l)" -eq 12 ]
}

@test "pfs: every link cut for 2 s under a striped write; the file reads back byte for byte" {
  mkdir -p "$W/iod1" "$W/iod2"
  pio_spawn "$W/iod1.log" env PIO_SOCKET="$SOCK_B" "$PIO_BUILD/sbin/pfs-iod" --dir "$W/iod1" \
    --name flt.iod.1 --mds flt.mds --threads 2 >/dev/null
  pio_spawn "$W/iod2.log" env PIO_SOCKET="$SOCK_B" "$PIO_BUILD/sbin/pfs-iod" --dir "$W/iod2" \
    --name flt.iod.2 --mds flt.mds --threads 2 >/dev/null
  pio_spawn "$W/mds.log" env PIO_SOCKET="$SOCK_B" "$PIO_BUILD/sbin/pfs-mds" --db "$W/mds.db" \
    --name flt.mds --iods flt.iod.1,flt.iod.2 >/dev/null
  pio_wait_until 30 env PIO_PARTNER_TIMEOUT=2 "$PIO_BUILD/bin/pfs" --mds flt.mds df
  head -c $((48 << 20)) /dev/urandom >"$W/src"
  timeout 120 "$PIO_BUILD/bin/pfs" --mds flt.mds put -c 2 "$W/src" /cut >"$W/put.log" 2>&1 &
  p=$!
  t0=$(tx_total "$SOCK_A")
  pio_wait_until 30 tx_above "$SOCK_A" $((t0 + (8 << 20)))
  cut_all; sleep 2; restore_all
  rc=0; wait $p || rc=$?
  cat "$W/put.log"
  [ "$rc" -eq 0 ]
  run timeout 120 "$PIO_BUILD/bin/pfs" --mds flt.mds get /cut "$W/back"
  assert_success
  cmp "$W/src" "$W/back"
}

@test "pfs: I/O servers whose one-sided puts fail (as a cut link breaks them) still serve a get: the bytes come in the replies" {
  # In the soak a get during a link cut failed with "no such window" or "gone
  # away": the servers' puts into the reader's window broke (the window's
  # ASK / DESC exchange or the transport's connection) while PIO messages
  # went on over the links up. Here the servers' one-sided transport has no
  # device at all (UCX_NET_DEVICES names none), so every put fails at once.
  # Names of their own: the servers of the case before may still run.
  mkdir -p "$W/iod1" "$W/iod2"
  local nodev=(UCX_TLS=tcp UCX_NET_DEVICES=nosuch0)
  pio_spawn "$W/iod1.log" env PIO_SOCKET="$SOCK_B" "${nodev[@]}" "$PIO_BUILD/sbin/pfs-iod" \
    --dir "$W/iod1" --name nod.iod.1 --mds nod.mds --threads 2 >/dev/null
  pio_spawn "$W/iod2.log" env PIO_SOCKET="$SOCK_B" "${nodev[@]}" "$PIO_BUILD/sbin/pfs-iod" \
    --dir "$W/iod2" --name nod.iod.2 --mds nod.mds --threads 2 >/dev/null
  pio_spawn "$W/mds.log" env PIO_SOCKET="$SOCK_B" "$PIO_BUILD/sbin/pfs-mds" --db "$W/mds.db" \
    --name nod.mds --iods nod.iod.1,nod.iod.2 >/dev/null
  pio_wait_until 30 env PIO_PARTNER_TIMEOUT=2 "$PIO_BUILD/bin/pfs" --mds nod.mds df
  head -c $((16 << 20)) /dev/urandom >"$W/src"
  run timeout 120 "$PIO_BUILD/bin/pfs" --mds nod.mds put -c 2 "$W/src" /nop
  assert_success
  run timeout 120 "$PIO_BUILD/bin/pfs" --mds nod.mds get /nop "$W/back"
  echo "$output"
  assert_success
  cmp "$W/src" "$W/back"
  grep -h "the bytes go in the reply" "$W/iod1.log" "$W/iod2.log"
}

# ---- 2. piod killed and restarted -------------------------------------------

@test "pcp: the receiving piod (B) killed mid-copy: a clear error, no file under its name; restarted, --resume finishes and new copies work" {
  head -c $((64 << 20)) /dev/urandom >"$W/src"
  "$PCP" -q "$W/src" B:kb.out >"$W/put.log" 2>&1 &
  p=$!
  pio_wait_until 30 size_above "$EXP/.kb.out.pcp-part" $((16 << 20))
  kill9 B
  SECONDS=0
  rc=0; wait $p || rc=$?
  cat "$W/put.log"
  [ "$rc" -eq 12 ] # the connection broke during the copy
  [ "$SECONDS" -le $((LINK_TIMEOUT + 20)) ]
  grep -Eq "^pcp: .*(gone away|no usable link)" "$W/put.log"
  [ ! -e "$EXP/kb.out" ]
  start_piod B
  bundle_up
  run "$PCP" -q --resume --json "$W/src" B:kb.out
  echo "$output"
  assert_success
  cmp "$W/src" "$EXP/kb.out"
  run "$PCP" -q "$W/src" B:kb2.out
  assert_success
  cmp "$W/src" "$EXP/kb2.out"
}

@test "pcp: the sending piod (A) killed mid-copy: a clear error at once; restarted, --resume finishes" {
  head -c $((64 << 20)) /dev/urandom >"$W/src"
  "$PCP" -q "$W/src" B:ka.out >"$W/put.log" 2>&1 &
  p=$!
  pio_wait_until 30 size_above "$EXP/.ka.out.pcp-part" $((16 << 20))
  kill9 A
  rc=0; wait $p || rc=$?
  cat "$W/put.log"
  [ "$rc" -eq 12 ] # the connection broke during the copy
  grep -q "this host's piod went away" "$W/put.log"
  [ ! -e "$EXP/ka.out" ]
  start_piod A
  bundle_up
  run "$PCP" -q --resume --json "$W/src" B:ka.out
  echo "$output"
  assert_success
  cmp "$W/src" "$EXP/ka.out"
}

@test "pcp fetch: the sending piod (B) killed mid-copy: a clear error within the link timeout, no local file under its name; restarted, --resume finishes" {
  head -c $((64 << 20)) /dev/urandom >"$EXP/kf"
  "$PCP" -q B:kf "$W/kf" >"$W/get.log" 2>&1 &
  p=$!
  pio_wait_until 30 size_above "$W/.kf.pcp-part" $((16 << 20))
  kill9 B
  SECONDS=0
  rc=0; wait $p || rc=$?
  cat "$W/get.log"
  [ "$rc" -eq 12 ] # the connection broke during the copy
  [ "$SECONDS" -le $((LINK_TIMEOUT + 20)) ]
  grep -q "B:kf: data stopped at" "$W/get.log"
  [ ! -e "$W/kf" ]
  start_piod B
  bundle_up
  run "$PCP" -q --resume --json B:kf "$W/kf"
  echo "$output"
  assert_success
  cmp "$EXP/kf" "$W/kf"
}

# msg_pair NAME SIZE: pio-check sizes, receiver on B and sync sender on A, in
# the background (pids RP, SP; output $W/NAME.r, $W/NAME.s)
msg_pair() {
  PIO_SOCKET=$SOCK_B timeout 120 "$CHECK" recv sizes -a "$1-r" -p "$1-s" -S "$2" \
    >"$W/$1.r" 2>&1 &
  RP=$!
  PIO_SOCKET=$SOCK_A timeout 120 "$CHECK" send sizes -a "$1-s" -p "$1-r" -S "$2" -m sync \
    >"$W/$1.s" 2>&1 &
  SP=$!
}

@test "a message: the receiving piod (B) killed mid-message: both ends fail with an error, neither says OK; restarted, a new message arrives whole" {
  t0=$(tx_total "$SOCK_A")
  msg_pair kb 128M
  pio_wait_until 30 tx_above "$SOCK_A" $((t0 + (16 << 20)))
  kill9 B
  SECONDS=0
  s=0; wait $SP || s=$?
  r=0; wait $RP || r=$?
  cat "$W/kb.s" "$W/kb.r"
  echo "sender $s, receiver $r, after $SECONDS s"
  [ "$s" -eq 1 ]
  [ "$r" -eq 1 ]
  grep -Eq "PIO_E(GONE|LINK)" "$W/kb.s"
  grep -q "PIO_ECLOSED" "$W/kb.r"
  refute grep -q "^OK" "$W/kb.s" "$W/kb.r"
  start_piod B
  bundle_up
  msg_pair kb2 32M
  wait $SP || { cat "$W/kb2.s"; false; }
  wait $RP || { cat "$W/kb2.r"; false; }
  grep -q "^OK sizes: 1 messages" "$W/kb2.r"
}

@test "a message: the sending piod (A) killed mid-message: both ends fail with an error within the link timeout; restarted, a new message arrives whole" {
  t0=$(tx_total "$SOCK_A")
  msg_pair ka 128M
  pio_wait_until 30 tx_above "$SOCK_A" $((t0 + (16 << 20)))
  kill9 A
  SECONDS=0
  s=0; wait $SP || s=$?
  r=0; wait $RP || r=$?
  cat "$W/ka.s" "$W/ka.r"
  echo "sender $s, receiver $r, after $SECONDS s"
  [ "$s" -eq 1 ]
  [ "$r" -eq 1 ]
  [ "$SECONDS" -le $((LINK_TIMEOUT + 20)) ]
  grep -q "PIO_ECLOSED" "$W/ka.s"
  grep -Eq "PIO_E(GONE|LINK)" "$W/ka.r"
  start_piod A
  bundle_up
  msg_pair ka2 32M
  wait $SP || { cat "$W/ka2.s"; false; }
  wait $RP || { cat "$W/ka2.r"; false; }
  grep -q "^OK sizes: 1 messages" "$W/ka2.r"
}

# ---- 3. disk full at the receiver -------------------------------------------

@test "disk full: pcp into an 8 MiB tmpfs under B's export: No space left on device, no file under its name, B serves on" {
  b_tmpfs "$EXP/full" 8m
  head -c $((24 << 20)) /dev/urandom >"$W/src"
  run timeout 120 "$PCP" -q "$W/src" B:full/big
  echo "$output"
  assert_failure 23 # a file not copied (the service's error), the connection fine
  assert_output --partial "No space left on device"
  run b_ns ls -A "$EXP/full"
  echo "left there: $output"
  refute_output --regexp "(^|[[:space:]])big($|[[:space:]])"
  # B still serves: a copy that fits (once the part's space is back), and
  # one to the roomy export
  pio_wait_until 20 b_room "$EXP/full" 4096
  head -c $((2 << 20)) /dev/urandom >"$W/small"
  run timeout 60 "$PCP" -q "$W/small" B:full/small
  assert_success
  b_ns cmp "$W/small" "$EXP/full/small"
  run timeout 60 "$PCP" -q "$W/src" B:roomy
  assert_success
  cmp "$W/src" "$EXP/roomy"
}

@test "disk full: B's whole export root an 8 MiB tmpfs: a send fails with ENOSPC words, no file under its name, B serves on" {
  # B restarted with its export root on a small file system (a private
  # mount in the root namespace, made before B starts so that B's mount
  # namespace holds it too; removed by teardown)
  stop_piod B
  mkdir -p "$W/root8m"
  mount -t tmpfs -o size=8m tmpfs "$W/root8m"
  ROOT_MOUNTS+=("$W/root8m")
  EXPORT_DIR=$W/root8m start_piod B
  bundle_up
  head -c $((12 << 20)) /dev/urandom >"$W/src"
  run timeout 120 "$PCP" -q "$W/src" B:
  echo "$output"
  assert_failure
  assert_output --partial "No space left on device"
  [ ! -e "$W/root8m/src" ]
  head -c 1000 /dev/urandom >"$W/tiny"
  run timeout 60 "$PCP" -q "$W/tiny" B:
  assert_success
  cmp "$W/tiny" "$W/root8m/tiny"
  stop_piod B
}

@test "disk full: a fetch into an 8 MiB local tmpfs: No space left on device, no file under its name" {
  head -c $((24 << 20)) /dev/urandom >"$EXP/fetchme"
  mkdir -p "$W/small"
  # a private mount namespace: the tmpfs goes with it
  run unshare -m --propagation private sh -c '
    mount -t tmpfs -o size=8m tmpfs "$1" || exit 9
    timeout 120 "$2" -q B:fetchme "$1/got"; echo "pcp exit $?"
    ls -A "$1"' sh "$W/small" "$PCP"
  echo "$output"
  assert_output --partial "No space left on device"
  assert_output --partial "pcp exit 23" # partial: the file not copied
  refute_output --regexp "(^|[[:space:]])got($|[[:space:]])"
  [ -z "$(ls -A "$W/small")" ]
}

@test "disk full: merged output into an 8 MiB tmpfs: every rank fails with ENOSPC words, no file under its name, B serves on" {
  b_tmpfs "$EXP/mfull" 8m
  run merged 4 mfull/m.bin --blocks 4
  echo "$output"
  assert_failure
  [ "$status" -ne 124 ]
  assert_output --partial "No space left on device"
  run b_ns ls -A "$EXP/mfull"
  refute_output --regexp "(^|[[:space:]])m\.bin($|[[:space:]])"
  run merged 2 mfull/ok.bin --blocks 2 --local "$W/ok.local"
  echo "$output"
  assert_success
  b_ns cmp "$W/ok.local" "$EXP/mfull/ok.bin"
}

# ---- 4. the wall clock jumps ------------------------------------------------
# What is faked: libfaketime (LD_PRELOAD, Debian's faketime package) gives
# both piods, and the file services they start, a CLOCK_REALTIME (time(),
# gettimeofday, clock_gettime(CLOCK_REALTIME)) that follows the offset in the
# file $CLOCK, re-read at most once a second: writing "+1d" or "-1d" there
# makes their wall clock jump a day. CLOCK_MONOTONIC is left real
# (FAKETIME_DONT_FAKE_MONOTONIC), as when an administrator or NTP steps the
# clock: every timeout must run on it.

# faked_piods: restart both piods under libfaketime, offset +0. Not with an
# ASan or TSan build: libfaketime's clock hooks deadlock those runtimes'
# start-up (the piod hangs before main, even with the runtime first in
# LD_PRELOAD); the plain and UBSan runs cover the case.
faked_piods() {
  case $PIO_BUILD in
    *asan* | *tsan*) skip "libfaketime hangs the ASan/TSan runtime at start: covered by the plain run" ;;
  esac
  [ -e "$FAKETIME_LIB" ] || fail "libfaketime missing: run make deps (package faketime)"
  CLOCK=$BATS_FILE_TMPDIR/clock
  echo "+0" >"$CLOCK"
  stop_piod A
  stop_piod B
  local fake=(LD_PRELOAD="$FAKETIME_LIB" FAKETIME_TIMESTAMP_FILE="$CLOCK" FAKETIME_CACHE_DURATION=1
    FAKETIME_DONT_FAKE_MONOTONIC=1 FAKETIME_DONT_RESET=1)
  start_piod A "${fake[@]}" && start_piod B "${fake[@]}" && bundle_up
}

# real_piods: back to piods on the real clock (for the cases after)
real_piods() {
  stop_piod A
  stop_piod B
  start_piod A && start_piod B && bundle_up
}

@test "clock jumps a day forward, then back, under a message with a link cut: it arrives whole, no timeout fires early or late" {
  faked_piods
  t0=$(tx_total "$SOCK_A")
  PIO_SOCKET=$SOCK_B timeout 120 "$CHECK" recv sizes -a clk-r -p clk-s -S 96M >"$W/r" 2>&1 &
  rp=$!
  PIO_SOCKET=$SOCK_A timeout 120 "$CHECK" send sizes -a clk-s -p clk-r -S 96M -c DYNAMIC -m sync \
    >"$W/s" 2>&1 &
  sp=$!
  pio_wait_until 30 tx_above "$SOCK_A" $((t0 + (8 << 20)))
  echo "+1d" >"$CLOCK"
  "$PIO_TESTBED" link "$BED" h1 1 down
  sleep 1.5
  echo "-1d" >"$CLOCK"
  sleep 1.5
  "$PIO_TESTBED" link "$BED" h1 1 up
  wait $sp || { cat "$W/s"; false; }
  wait $rp || { cat "$W/r"; false; }
  grep -q "^OK sizes: 1 messages (96M)" "$W/r"
  # no peer was given up: the link timeout (5 s) did not fire on a jump
  refute grep -q "no channel to" "$DIR/A.log" "$DIR/B.log"
  # the cut channel came back (its reconnect back-off survived the jump)
  pio_wait_channels "$SOCK_A" 2 30
  # and the piods' clocks were really faked: their log stamps jumped back a day
  grep -q "$(date -u -d '-1 day' +%Y-%m-%d)T" "$DIR/A.log"
  real_piods
}
