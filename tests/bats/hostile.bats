#!/usr/bin/env bats
# hostile.bats - hostile peers and clients: wrong keys, forged channels, broken frames, floods, deaths.
# SPDX-License-Identifier: BSD-3-Clause
#
# Each test starts its own pair of piods A and B on loopback (one channel,
# --pool 32M --proc-pool 8M, so the memory bound means something), lets
# tests/prog/pio-hostile misbehave against one of them, and then checks four
# things: the piod logged it in words, it refused (or reclaimed), a normal
# transfer between two other processes still succeeds byte for byte
# (tests/prog/pio-check verifies every byte), and the piod's peak memory
# (VmHWM) stayed within its pool plus a fixed allowance above what it used
# before (VmRSS). Set HOSTILE_MEM_LOG=FILE to collect the figures.

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

CHECK=$PIO_BUILD/tests/prog/pio-check
HOSTILE=$PIO_BUILD/tests/prog/pio-hostile
POOL_FLAGS="--pool 32M --proc-pool 8M"
POOL_KB=$((32 * 1024))
# Above the pool: one client's unread frames (piod drops it at its
# proc-pool, at least 16 MiB) and 8 MiB for heap, stacks and ZeroMQ.
ALLOW_KB=$((24 * 1024))

teardown() {
  pio_cleanup
}

# hx_pair: piods A (127.1.0.1) and B (127.2.0.1) in $D, one channel, small
# pools; extra piod arguments for B in HX_B_ARGS. Sets D, CP, DP.
hx_pair() {
  D=$BATS_TEST_TMPDIR/pair
  mkdir -p "$D"
  _pio_keys "$D" A B
  read -r CP DP < <(pio_free_port 2)
  _pio_start A "$D" "" -- --listen 127.1.0.1 --peer B=127.2.0.1 --control-port "$CP" \
    --data-port "$DP" $POOL_FLAGS
  _pio_start B "$D" "" -- --listen 127.2.0.1 --peer A=127.1.0.1 --control-port "$CP" \
    --data-port "$DP" $POOL_FLAGS ${HX_B_ARGS:-}
  export PIO_SOCK_A=$D/A.sock PIO_SOCK_B=$D/B.sock
  _pio_wait_sock "$PIO_SOCK_A" && _pio_wait_sock "$PIO_SOCK_B" &&
    pio_wait_channels "$PIO_SOCK_A" 1 && pio_wait_channels "$PIO_SOCK_B" 1
}

# mem NAME: "VmRSS VmHWM" (kB) of piod NAME in $D.
mem() {
  awk '/^VmRSS/ {r = $2} /^VmHWM/ {h = $2} END {print r, h}' "/proc/$(cat "$D/$1.pid")/status"
}

mem_start() {
  local n
  for n in "$@"; do mem "$n" >"$D/$n.mem0"; done
}

# mem_check NAME...: peak since start within the pool plus the allowance.
mem_check() {
  local n r0 h0 r1 h1
  for n in "$@"; do
    read -r r0 h0 <"$D/$n.mem0"
    read -r r1 h1 < <(mem "$n")
    echo "memory $n: VmRSS/VmHWM before $r0/$h0 kB, after $r1/$h1 kB (bound $((r0 + POOL_KB + ALLOW_KB)) kB)"
    if [ -n "${HOSTILE_MEM_LOG:-}" ]; then
      echo "$BATS_TEST_DESCRIPTION | $n | $r0 $h0 | $r1 $h1" >>"$HOSTILE_MEM_LOG"
    fi
    # a sanitizer's allocator (shadow memory, quarantine) says nothing of ours
    case "$PIO_BUILD" in *asan* | *tsan* | *ubsan*) continue ;; esac
    [ "$h1" -le $((r0 + POOL_KB + ALLOW_KB)) ]
  done
}

# transfer NAME [SECONDS]: receiver on B, sender on A, sizes around the eager
# limit and past a chunk; every byte checked. Fails after SECONDS (30).
transfer() {
  local name=ok-$1 limit=${2:-30}
  PIO_SOCKET=$PIO_SOCK_B timeout "$limit" "$CHECK" recv sizes -a "$name-r" -p "$name-s" \
    -S 0,1,65535,65536,65537,1M,3M >"$BATS_TEST_TMPDIR/$name.recv" 2>&1 3>&- &
  local rp=$!
  PIO_SOCKET=$PIO_SOCK_A timeout "$limit" "$CHECK" send sizes -a "$name-s" -p "$name-r" \
    -S 0,1,65535,65536,65537,1M,3M >"$BATS_TEST_TMPDIR/$name.send" 2>&1
  local ss=$?
  wait "$rp"
  local rs=$?
  echo "transfer $name: sender ($ss) $(cat "$BATS_TEST_TMPDIR/$name.send"); receiver ($rs) $(cat "$BATS_TEST_TMPDIR/$name.recv")"
  [ "$ss" -eq 0 ] && [ "$rs" -eq 0 ] && grep -q '^OK' "$BATS_TEST_TMPDIR/$name.recv"
}

# pool_used SOCK: bytes of pool the piod has out (pio-info).
pool_used() {
  PIO_SOCKET=$1 pio-info --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pool_used"])'
}

# ---- 1. peers with wrong or missing keys --------------------------------------
# (pio_errors.bats covers a peer holding a stale key for us: B refuses A.)

@test "keys: a peer holding a wrong public key for B cannot reach B; both sides log it, A and B keep working" {
  HX_B_ARGS="--peer M=127.3.0.1"
  _pio_keys "$BATS_TEST_TMPDIR/pair" A B M
  hx_pair
  m=$BATS_TEST_TMPDIR/m wrong=$BATS_TEST_TMPDIR/wrong
  mkdir -p "$m/keys"
  _pio_keys "$wrong" B                             # a key pair that is not B's
  cp "$D/keys/M.key" "$D/keys/M.pub" "$wrong/keys/B.pub" "$m/keys/"
  mem_start B
  _pio_start M "$m" "" -- --listen 127.3.0.1 --peer B=127.2.0.1 --control-port "$CP" \
    --data-port "$DP" $POOL_FLAGS
  _pio_wait_sock "$m/M.sock"
  # M cannot even look B's applications up
  bg_start "$BATS_TEST_TMPDIR/sink" env PIO_SOCKET="$PIO_SOCK_B" "$HOSTILE" sink key-r key-m
  run env PIO_SOCKET="$m/M.sock" PIO_PARTNER_TIMEOUT=3 timeout 30 "$CHECK" send sizes -a key-m -p key-r
  assert_failure
  assert_output --regexp 'PIO_EREFUSED|PIO_EPARTNER'
  pio_wait_until 10 grep -q "peer B refused our control connection" "$m/M.log"
  grep "peer B refused our control connection" "$m/M.log"
  # and B, knowing M's real key, is refused by M, which holds the wrong B.pub
  pio_wait_until 10 grep -qE "refused control connection from [0-9.:]+: its key is not in $m/keys" "$m/M.log"
  pio_wait_until 10 grep -q "peer M refused our control connection" "$D/B.log"
  refute grep -q "peer M (host M) says hello" "$D/B.log"
  refute grep -q "from M accepted" "$D/B.log"
  transfer key1
  mem_check B
}

@test "keys: a system B has no key for is refused at the door; a piod missing its peer's key names the file and stops" {
  hx_pair
  m=$BATS_TEST_TMPDIR/m
  _pio_keys "$m" M                                 # M's own key: B has never seen it
  cp "$D/keys/B.pub" "$m/keys/"
  mem_start B
  _pio_start M "$m" "" -- --listen 127.3.0.1 --peer B=127.2.0.1 --control-port "$CP" \
    --data-port "$DP" $POOL_FLAGS
  _pio_wait_sock "$m/M.sock"
  pio_wait_until 10 grep -qE "refused control connection from [0-9.:]+: its key is not in $D/keys" "$D/B.log"
  pio_wait_until 10 grep -q "peer B refused our control connection" "$m/M.log"
  refute grep -q "from M accepted" "$D/B.log"
  # a piod whose directory lacks the peer's public key: says which, exits non-zero
  n=$BATS_TEST_TMPDIR/n
  _pio_keys "$n" N
  run timeout 10 "$PIOD" -f --name N --system N --keys "$n/keys" --socket "$n/N.sock" \
    --listen 127.4.0.1 --peer B=127.2.0.1 --control-port "$CP" --data-port "$DP"
  assert_failure
  assert_output --partial "no public key for peer B in $n/keys: copy B.pub there"
  [ ! -S "$n/N.sock" ]
  transfer key2
  mem_check B
}

@test "keys: a system whose key B holds but which is not B's peer is heard and ignored" {
  _pio_keys "$BATS_TEST_TMPDIR/pair" A B M         # M.pub sits in B's directory
  hx_pair
  m=$BATS_TEST_TMPDIR/m
  mkdir -p "$m/keys"
  cp "$D/keys/M.key" "$D/keys/M.pub" "$D/keys/B.pub" "$m/keys/"
  mem_start B
  _pio_start M "$m" "" -- --listen 127.3.0.1 --peer B=127.2.0.1 --control-port "$CP" \
    --data-port "$DP" $POOL_FLAGS
  pio_wait_until 10 grep -q "control frame from 'M', which is not a configured peer: ignored" "$D/B.log"
  # its hello gave it no channel key of ours: nothing it opens is accepted
  refute grep -q "from M accepted" "$D/B.log"
  refute grep -q "peer M" "$D/B.log"
  transfer key3
  mem_check B
}

# ---- 2. data channels that skip or forge the handshake ------------------------

@test "data port: C_DATA with no handshake is refused, logged, and reaches no pool" {
  hx_pair
  bg_start "$BATS_TEST_TMPDIR/sink" env PIO_SOCKET="$PIO_SOCK_B" "$HOSTILE" sink dp-r dp-s
  pio_wait_until 10 grep -q "sink ready" "$BATS_TEST_TMPDIR/sink"
  mem_start B
  run timeout 20 "$HOSTILE" data 127.2.0.1 "$DP" skip-handshake
  assert_success
  assert_output --partial "RESULT closed"
  grep -E "data channel from 127\.0\.0\.1:[0-9]+ sent C_DATA before C_HELLO: closed" "$D/B.log"
  # only the sink's own pool is out, and no byte arrived on any channel
  [ "$(pool_used "$PIO_SOCK_B")" -eq $((8 << 20)) ]
  [ "$(PIO_SOCKET=$PIO_SOCK_B pio-info --json | python3 -c 'import json,sys; print(sum(c["rx_bytes"] for c in json.load(sys.stdin)["channels"]))')" -eq 0 ]
  transfer dp1
  mem_check B
}

@test "data port: a C_HELLO naming a real system with a wrong C_PROOF gets PIO_EAUTH; a recorded proof replayed gets PIO_EAUTH" {
  D=$BATS_TEST_TMPDIR/pair
  mkdir -p "$D"
  _pio_keys "$D" A B
  read -r CP DP MP < <(pio_free_port 3)
  # A reaches B's data port only through pio-hostile mitm, which records
  # the first data channel's C_HELLO and C_PROOF and replays them
  bg_start "$BATS_TEST_TMPDIR/mitm" "$HOSTILE" mitm 127.2.0.1 "$MP" 127.2.0.1 "$DP" \
    "$BATS_TEST_TMPDIR/replay"
  pio_wait_until 10 grep -q listening "$BATS_TEST_TMPDIR/mitm"
  printf 'name = A\nlisten = 127.1.0.1\ncontrol-port = %s\ndata-port = %s\npool = 32M\nproc-pool = 8M\n[peer B]\naddr = 127.2.0.1\ndata-port = %s\n' \
    "$CP" "$DP" "$MP" >"$D/A.conf"
  pio_start_conf A "$D" "" "$D/A.conf"
  _pio_start B "$D" "" -- --listen 127.2.0.1 --peer A=127.1.0.1 --control-port "$CP" \
    --data-port "$DP" $POOL_FLAGS
  export PIO_SOCK_A=$D/A.sock PIO_SOCK_B=$D/B.sock
  _pio_wait_sock "$PIO_SOCK_A"
  _pio_wait_sock "$PIO_SOCK_B"
  pio_wait_channels "$PIO_SOCK_A" 1
  pio_wait_channels "$PIO_SOCK_B" 1
  mem_start B
  # forged: the name of a real peer, a MAC made up
  run timeout 20 "$HOSTILE" data 127.2.0.1 "$DP" bad-proof -s A
  assert_success
  assert_output --partial "RESULT accept PIO_EAUTH"
  assert_output --partial "RESULT closed"
  # replayed: a proof A really sent, on a new connection (a new challenge)
  pio_wait_until 15 grep -q "RESULT closed\|RESULT open" "$BATS_TEST_TMPDIR/replay"
  cat "$BATS_TEST_TMPDIR/replay"
  grep -q "RESULT replay index 0 accept PIO_EAUTH" "$BATS_TEST_TMPDIR/replay"
  grep -q "RESULT closed" "$BATS_TEST_TMPDIR/replay"
  [ "$(grep -c "refused data channel from .* (claims system 'A', channel 0): authentication failed" "$D/B.log")" -ge 2 ]
  # the real channel, through the same man in the middle, still carries data
  transfer dp2
  mem_check B
}

@test "data port: an opener that never finishes its handshake is cut after 5 s; one address holds at most 8 handshakes" {
  hx_pair
  mem_start B
  # one silent connection from 127.0.0.2 ...
  bg_start "$BATS_TEST_TMPDIR/idle" "$HOSTILE" data 127.2.0.1 "$DP" idle -t 9 -b 127.0.0.2
  ip=$BG_PID
  # ... and 20 at once from 127.0.0.1: 12 refused at once, the 8 admitted
  # cut at their deadline; the real peer's channel stays up
  run timeout 30 "$HOSTILE" idle-many 127.2.0.1 "$DP" 20 -t 9
  assert_success
  echo "$output"
  refused=$(sed -n 's/^RESULT refused at once \([0-9]*\) of 20$/\1/p' <<<"$output")
  [ "$refused" -ge 12 ]
  assert_output --partial "RESULT closed later $((20 - refused)) of $((20 - refused))"
  grep -q "data channel from 127.0.0.1:[0-9]* refused: 8 handshakes from that address are unfinished" "$D/B.log"
  bg_wait "$ip"
  cat "$BATS_TEST_TMPDIR/idle"
  grep -qx "RESULT closed" "$BATS_TEST_TMPDIR/idle"
  grep -E "data channel from 127\.0\.0\.2:[0-9]+ did not finish its handshake within 5 s: closed" "$D/B.log"
  transfer dp3
  mem_check B
}

# ---- 3. frames with lying lengths, huge counts, unknown types, bad magic -------

# expect CASE ARGS RESULT... LOG-REGEX: pio-hostile proc CASE prints every RESULT
# line given, and B's log gains a line matching LOG-REGEX.
expect_proc() {
  local kase=$1 log=$2; shift 2
  local before
  before=$(grep -cE "$log" "$D/B.log" || true)
  run env PIO_SOCKET="$PIO_SOCK_B" timeout 30 "$HOSTILE" proc $kase
  echo "$kase: $output"
  [ "$status" -eq 0 ]
  local want
  for want in "$@"; do grep -qx "RESULT $want" <<<"$output"; done
  pio_wait_until 10 eval "[ \$(grep -cE '$log' '$D/B.log') -gt $before ]"
}

@test "process socket: lying lengths, huge counts, unknown types, bad magic, bad check, another version" {
  hx_pair
  mem_start B
  # a joined process may sit on half a frame (a debugger): it is not cut
  bg_start "$BATS_TEST_TMPDIR/joined" env PIO_SOCKET="$PIO_SOCK_B" "$HOSTILE" proc long-len -j ll -t 7
  jp=$BG_PID
  # a header promising more than comes: a stranger gets 5 s to finish it
  expect_proc "long-len -t 9" "client pid [0-9]+ began a frame and sent no more of it for 5 s" closed
  bg_wait "$jp"
  cat "$BATS_TEST_TMPDIR/joined"
  grep -qx "RESULT open" "$BATS_TEST_TMPDIR/joined"
  grep -q "process ll:0 of 1 joined" "$D/B.log"
  refute grep -q "client pid $jp began a frame" "$D/B.log"
  # a header promising less: the rest is not a frame, nothing after can be trusted
  expect_proc short-len "client pid [0-9]+ sent bytes that are not frames: disconnected" closed
  expect_proc over-limit "client pid [0-9]+ sent bytes that are not frames: disconnected" closed
  expect_proc bad-magic "client pid [0-9]+ sent bytes that are not frames: disconnected" closed
  expect_proc bad-version "client pid [0-9]+ sent another protocol version: disconnected" \
    "welcome PIO_EVERSION" closed
  # well-framed but wrong inside: the frame is dropped, the stream stays in step
  expect_proc "huge-count -j hc" "malformed P_SEND_DATA frame from client pid [0-9]+" open "resync ok"
  expect_proc "unknown-type" "frame of unknown type 99 from client pid [0-9]+" open "resync ok"
  expect_proc "bad-check" "malformed P_HELLO frame from client pid [0-9]+" open "resync ok"
  transfer fr1
  mem_check B
}

expect_data() {
  local kase=$1 log=$2; shift 2
  run timeout 30 "$HOSTILE" data 127.2.0.1 "$DP" $kase
  echo "$kase: $output"
  [ "$status" -eq 0 ]
  local want
  for want in "$@"; do grep -qx "RESULT $want" <<<"$output"; done
  pio_wait_until 10 grep -qE "data channel from 127\.0\.0\.1:[0-9]+:? $log" "$D/B.log"
}

@test "data port: the same broken frames before the handshake are refused and logged" {
  hx_pair
  mem_start B
  expect_data "long-len -t 9" "did not finish its handshake within 5 s: closed" closed
  expect_data over-limit "a frame length over the 16 MiB limit: closed" closed
  expect_data bad-magic "bytes that are not PIO frames: closed" closed
  expect_data bad-version "speaks protocol version [0-9]+, we speak [0-9]+" "accept PIO_EVERSION" closed
  expect_data huge-count "malformed C_ACK frame .*: closed" closed
  expect_data unknown-type "frame of unknown type 99: closed" closed
  expect_data bad-check "malformed C_HELLO frame .*: closed" closed
  expect_data short-len "malformed C_HELLO frame .*: closed" closed
  transfer fr2
  mem_check B
}

@test "data channel, after the handshake: a chunk nobody granted of 4 GiB, garbage, a C_ACK written in on the way are refused and logged; the channel comes back intact" {
  D=$BATS_TEST_TMPDIR/pair
  mkdir -p "$D"
  _pio_keys "$D" A B
  read -r CP DP MP < <(pio_free_port 3)
  # A's data channel to B passes pio-hostile mitm, which writes into the
  # first three accepted ones (the channel is authenticated, not sealed)
  bg_start "$BATS_TEST_TMPDIR/mitm" "$HOSTILE" mitm 127.2.0.1 "$MP" 127.2.0.1 "$DP" \
    "$BATS_TEST_TMPDIR/inject" -i huge-chunk,bad-magic,ack
  pio_wait_until 10 grep -q listening "$BATS_TEST_TMPDIR/mitm"
  printf 'name = A\nlisten = 127.1.0.1\ncontrol-port = %s\ndata-port = %s\npool = 32M\nproc-pool = 8M\n[peer B]\naddr = 127.2.0.1\ndata-port = %s\n' \
    "$CP" "$DP" "$MP" >"$D/A.conf"
  _pio_start B "$D" "" -- --listen 127.2.0.1 --peer A=127.1.0.1 --control-port "$CP" \
    --data-port "$DP" $POOL_FLAGS
  export PIO_SOCK_A=$D/A.sock PIO_SOCK_B=$D/B.sock
  _pio_wait_sock "$PIO_SOCK_B"
  mem_start B
  pio_start_conf A "$D" "" "$D/A.conf"
  _pio_wait_sock "$PIO_SOCK_A"
  pio_wait_until 20 eval '[ "$(grep -c "RESULT inject" "$BATS_TEST_TMPDIR/inject" 2>/dev/null)" -ge 3 ]'
  cat "$BATS_TEST_TMPDIR/inject"
  grep -qx "RESULT inject huge-chunk closed" "$BATS_TEST_TMPDIR/inject"
  grep -qx "RESULT inject bad-magic closed" "$BATS_TEST_TMPDIR/inject"
  grep -qx "RESULT inject ack closed" "$BATS_TEST_TMPDIR/inject"
  grep "data channel 0 from A: chunk 777+0 of 4026531840 bytes, longer than any grant we make: closed" "$D/B.log"
  grep "data channel 0 from A: bytes that are not PIO frames: closed" "$D/B.log"
  grep "data channel 0 from A sent C_ACK where only C_DATA may come: closed" "$D/B.log"
  # the fourth connection is left alone: the channel is up again and carries
  pio_wait_channels "$PIO_SOCK_A" 1
  pio_wait_channels "$PIO_SOCK_B" 1
  transfer inj
  mem_check B
}

# ---- 4. a client killed while it holds pool space ------------------------------

@test "a sender killed (-9) in the middle of a large message: its pool is reclaimed, a new process joins and sends" {
  hx_pair
  mem_start A B
  bg_start "$BATS_TEST_TMPDIR/sink" env PIO_SOCKET="$PIO_SOCK_B" "$HOSTILE" sink kill-r kill-s
  pio_wait_until 10 grep -q "sink ready" "$BATS_TEST_TMPDIR/sink"
  # 24 MB through a 4 MiB send region: it is mid-message when killed
  bg_start "$BATS_TEST_TMPDIR/spray" env PIO_SOCKET="$PIO_SOCK_A" "$HOSTILE" spray kill-s kill-r 24000000 1 60000
  sp=$BG_PID
  pio_wait_until 10 grep -q started "$BATS_TEST_TMPDIR/spray"
  pio_wait_until 10 eval '[ $(PIO_SOCKET=$PIO_SOCK_B pio-info --json | python3 -c "import json,sys; print(sum(c[\"rx_bytes\"] for c in json.load(sys.stdin)[\"channels\"]))") -gt 0 ]'
  [ "$(pool_used "$PIO_SOCK_A")" -eq $((8 << 20)) ]
  kill -9 "$sp"
  pio_wait_until 10 grep -qE "process kill-s:0 \(pid $sp\) left" "$D/A.log"
  grep -E "message [0-9]+ of kill-s:0 lost its sender before all its bytes came" "$D/A.log"
  pio_wait_until 10 eval '[ "$(pool_used "$PIO_SOCK_A")" -eq 0 ]'
  # the same process name joins again and sends, every byte checked
  PIO_SOCKET=$PIO_SOCK_B timeout 30 "$CHECK" recv sizes -a kill-r2 -p kill-s -S 1,1M,9M \
    >"$BATS_TEST_TMPDIR/r2" 2>&1 3>&- &
  rp=$!
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 30 "$CHECK" send sizes -a kill-s -p kill-r2 -S 1,1M,9M
  assert_success
  wait "$rp"
  grep -q '^OK' "$BATS_TEST_TMPDIR/r2"
  transfer kill
  mem_check A B
}

# ---- 5. floods ---------------------------------------------------------------

@test "a client flooding P_INFO_REQ without reading is throttled; others' transfers complete within 30 s" {
  hx_pair
  mem_start B
  bg_start "$BATS_TEST_TMPDIR/flood" env PIO_SOCKET="$PIO_SOCK_B" "$HOSTILE" flood-info 300000 -t 20
  fp=$BG_PID
  pio_wait_until 10 grep -q "does not read its socket" "$D/B.log"
  grep -E "client pid $fp does not read its socket \([0-9]+ bytes waiting\): what it sends waits until it does" "$D/B.log"
  # while it floods (and never reads), B serves the others
  start=$(date +%s)
  transfer fl1 30
  echo "transfer took $(($(date +%s) - start)) s during the flood"
  # it could not push 300,000 requests into a piod that stopped reading it
  pio_wait_until 15 grep -q "RESULT sent" "$BATS_TEST_TMPDIR/flood"
  cat "$BATS_TEST_TMPDIR/flood"
  refute grep -q "RESULT sent 300000 requests" "$BATS_TEST_TMPDIR/flood"
  kill -0 "$fp" # still connected, still not reading
  mem_check B
}

@test "a process flooding eager sends to a partner that never reads: the lane holds back the flood, the non-reader is dropped" {
  hx_pair
  mem_start A B
  bg_start "$BATS_TEST_TMPDIR/noread" env PIO_SOCKET="$PIO_SOCK_B" "$HOSTILE" noread fl-r -t 30
  pio_wait_until 10 grep -q joined "$BATS_TEST_TMPDIR/noread"
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 60 "$HOSTILE" flood-send 200000 -j fl-s -p fl-r -t 2
  echo "$output"
  assert_success
  # B drops the process that reads nothing once it owes it its proc-pool
  pio_wait_until 10 grep -q "RESULT closed" "$BATS_TEST_TMPDIR/noread"
  grep -E "client pid [0-9]+ does not read its socket \([0-9]+ bytes waiting, the limit is its proc-pool\): disconnected" "$D/B.log"
  [ "$(grep -c "does not read its socket .*disconnected" "$D/B.log")" -eq 1 ]
  grep -q "process fl-r:0 (pid [0-9]*) left" "$D/B.log"
  transfer fl2
  mem_check A B
}

@test "a process flooding P_PARTNER look-ups is capped; thousands of connections that never join cannot lock processes out" {
  hx_pair
  mem_start B
  run env PIO_SOCKET="$PIO_SOCK_B" timeout 60 "$HOSTILE" flood-partner 5000 -j fp
  echo "$output"
  assert_success
  assert_output --partial "RESULT 5000 look-ups, 4936 answered at once, 4936 PIO_EBUSY"
  grep -E "process fp:0 \(pid [0-9]+\) waits for 64 partner look-ups already: more are answered PIO_EBUSY" "$D/B.log"
  # every slot of B's process socket taken by connections that say nothing
  bg_start "$BATS_TEST_TMPDIR/hold" env PIO_SOCKET="$PIO_SOCK_B" "$HOSTILE" hold-conns 68 -t 20
  pio_wait_until 10 grep -q "holding 68" "$BATS_TEST_TMPDIR/hold"
  transfer fl3
  grep -E "too many local clients \([0-9]+\): dropping the connection of pid [0-9]+, which has not joined" "$D/B.log"
  mem_check B
}

# ---- 6. a receiver that never receives ----------------------------------------

@test "a receiver that never receives: B holds no more than its pool, the sender times out with PIO_ETIMEDOUT, others still work" {
  hx_pair
  mem_start A B
  bg_start "$BATS_TEST_TMPDIR/sink" env PIO_SOCKET="$PIO_SOCK_B" "$HOSTILE" sink nr-r nr-s
  pio_wait_until 10 grep -q "sink ready" "$BATS_TEST_TMPDIR/sink"
  # 100 x 1 MiB, each send given 3 s to reach A's pool; through the piods
  # (no direct lane: the next case has one), whose bounds this case checks
  run env PIO_SOCKET="$PIO_SOCK_A" PIO_LANE_MAX=0 timeout 120 "$HOSTILE" spray nr-s nr-r 1048576 100 3000
  echo "$output"
  [ "$status" -eq 3 ]
  assert_output --regexp "RESULT blocked after [0-9]+ sends: PIO_ETIMEDOUT \(timed out\)"
  n=$(sed -n 's/^RESULT blocked after \([0-9]*\) sends.*/\1/p' <<<"$output")
  [ "$n" -lt 100 ]
  grep -E "nr-r:0 has [0-9]+ bytes of messages no receive has claimed \(half its receive region\): more wait until it receives" "$D/B.log"
  # B has lent the sink's receive region only: one process pool is out
  [ "$(pool_used "$PIO_SOCK_B")" -eq $((8 << 20)) ]
  transfer nr
  mem_check A B
}

@test "a receiver that never receives, on a direct lane: it holds at most half its receive region, the sender times out, others still work" {
  hx_pair
  local w=$BATS_TEST_TMPDIR sk r0 h0 r1 h1
  bg_start "$w/sink" env PIO_SOCKET="$PIO_SOCK_B" PIO_LANE_TRACE="$w/trace.r" "$HOSTILE" sink nl-r nl-s
  sk=$BG_PID
  pio_wait_until 10 grep -q "sink ready" "$w/sink"
  read -r r0 h0 < <(awk '/^VmRSS/ {r = $2} /^VmHWM/ {h = $2} END {print r, h}' "/proc/$sk/status")
  # the same 100 x 1 MiB with lanes asked for at the first send (a stream
  # asks for none by default: PIO_LANE_TURNS=0): after the first, they take a lane, which the receiver stops
  # reading once it holds half its 8 MiB receive region; TCP then holds the
  # sender back, whose sends wait once its 8 MiB window of copies is full
  # (the first send, through the piods, asks for the lane; the sender
  # pauses 2 s after it so that the lane is handed over while the piods
  # still pass the fence: with the sink's half region full of messages
  # through the piods first, the fence would wait behind them for ever)
  run env PIO_SOCKET="$PIO_SOCK_A" PIO_LANE_TRACE="$w/trace.s" PIO_LANE_MAX=1048576 PIO_LANE_TURNS=0 \
    timeout 120 "$HOSTILE" spray nl-s nl-r 1048576 100 3000 2000
  echo "$output"
  cat "$w/trace.s" "$w/trace.r"
  [ "$status" -eq 3 ]
  assert_output --regexp "RESULT blocked after [0-9]+ sends: PIO_ETIMEDOUT \(timed out\)"
  n=$(sed -n 's/^RESULT blocked after \([0-9]*\) sends.*/\1/p' <<<"$output")
  [ "$n" -lt 40 ]
  run grep -c -E '^lane [0-9]+ to nl-r:0 up$' "$w/trace.s"
  assert_output 1
  # the sink took in 4 MiB of lane messages, the frame it stopped at and
  # its input buffer (2 MiB): some 9 MiB here; with no bound it would take
  # and acknowledge all 100 MiB
  read -r r1 h1 < <(awk '/^VmRSS/ {r = $2} /^VmHWM/ {h = $2} END {print r, h}' "/proc/$sk/status")
  echo "sink VmRSS/VmHWM before $r0/$h0 kB, after $r1/$h1 kB"
  case "$PIO_BUILD" in *asan* | *tsan* | *ubsan*) ;; *) [ "$h1" -le $((r0 + 16 * 1024)) ] ;; esac
  transfer nl
}

# ---- 7. a client that exits while the piod is not reading it ------------------

@test "a client paused for not reading sends a message and P_BYE and closes at once: the message arrives" {
  hx_pair
  mem_start A
  bg_start "$BATS_TEST_TMPDIR/recv" env PIO_SOCKET="$PIO_SOCK_B" timeout 60 "$CHECK" recv sizes \
    -a lw-r -p lw-s -S 1000
  rp=$BG_PID
  pio_wait_until 10 grep -q "process lw-r:0 of 1 joined" "$D/B.log"
  # lw-s floods P_INFO_REQ unread until A stops reading it (its answers
  # owed pass 1 MiB), then its last words: one eager message, P_BYE, close.
  # A read none of them before it saw the hang-up.
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 60 "$HOSTILE" last-words lw-r -j lw-s
  echo "$output"
  assert_success
  assert_output --regexp "RESULT paused after [0-9]+ batches of [0-9]+ requests"
  assert_output --partial "RESULT last words sent"
  grep -E "client pid [0-9]+ does not read its socket \([0-9]+ bytes waiting\): what it sends waits until it does" "$D/A.log"
  bg_wait "$rp"
  cat "$BATS_TEST_TMPDIR/recv"
  [ "$BG_RC" -eq 0 ]
  grep -q '^OK sizes: 1 messages' "$BATS_TEST_TMPDIR/recv"
  grep -q "process lw-s:0 (pid [0-9]*) left: PIO_Exit" "$D/A.log"
  transfer lw
  mem_check A
}

# ---- 8. names that come and go -------------------------------------------------

# private_kb NAME: piod NAME's private memory in kB (VmRSS less RssShmem:
# the pools it maps are shared memory, bounded by --pool, and come and go)
private_kb() {
  awk '/^VmRSS/ {r = $2} /^RssShmem/ {s = $2} END {print r - s}' "/proc/$(cat "$D/$1.pid")/status"
}

@test "thousands of applications with fresh names join, exchange messages on 8 tags and leave: the piods' private memory stays level" {
  # small pools: a pool is mapped with MAP_POPULATE, 8000 of 8 MiB take a minute
  POOL_FLAGS="--pool 32M --proc-pool 1M --chunk 256K"
  hx_pair
  # warm-up: heaps, the left-application rings and the stream tables' buckets
  run env PIO_SOCKET="$PIO_SOCK_A" PIO_SOCKET2="$PIO_SOCK_B" timeout 60 "$HOSTILE" churn 1200 8
  assert_success
  a0=$(private_kb A) b0=$(private_kb B)
  start=$(date +%s)
  run env PIO_SOCKET="$PIO_SOCK_A" PIO_SOCKET2="$PIO_SOCK_B" timeout 120 "$HOSTILE" churn 4000 8
  echo "$output"
  assert_success
  assert_output --partial "RESULT churn 4000 pairs"
  a1=$(private_kb A) b1=$(private_kb B)
  echo "4000 pairs in $(($(date +%s) - start)) s; private memory A $a0 -> $a1 kB, B $b0 -> $b1 kB"
  if [ -n "${HOSTILE_MEM_LOG:-}" ]; then
    echo "$BATS_TEST_DESCRIPTION | A $a0 $a1 | B $b0 $b1" >>"$HOSTILE_MEM_LOG"
  fi
  transfer churn
  case "$PIO_BUILD" in *asan* | *tsan* | *ubsan*) return 0 ;; esac
  # what the live processes need, not what every name that ever came left:
  # 1 MiB is the allocator's step, far below the 64,000 streams and 8,000
  # application entries a leak would keep (some 12 MiB)
  [ $((a1 - a0)) -le 1024 ]
  [ $((b1 - b0)) -le 1024 ]
}

# ---- 9. the express lane dies with frames waiting ------------------------------

@test "the express lane is reset while frames wait for it: an eager message among them still arrives" {
  command -v ss >/dev/null || skip "no ss(8) to reset the lane"
  hx_pair
  bg_start "$BATS_TEST_TMPDIR/sink" env PIO_SOCKET="$PIO_SOCK_B" "$HOSTILE" sink xr-f
  pio_wait_until 10 grep -q "sink ready" "$BATS_TEST_TMPDIR/sink"
  local m=${PIO_TEST_MULT:-1} # sanitized builds: B takes longer over the 7000 frames
  bg_start "$BATS_TEST_TMPDIR/recv" env PIO_SOCKET="$PIO_SOCK_B" timeout $((90 * m)) "$CHECK" recv sizes \
    -a xr-r -p xr-s -S 1000
  rp=$BG_PID
  pio_wait_until 10 grep -q "process xr-r:0 of 1 joined" "$D/B.log"
  # xr-s finds xr-r now and speaks in 8 s, when A's lane to B is full
  bg_start "$BATS_TEST_TMPDIR/lw" env PIO_SOCKET="$PIO_SOCK_A" "$HOSTILE" last-words xr-r -j xr-s -t 8
  lwp=$BG_PID
  pio_wait_until 10 grep -q "RESULT ready" "$BATS_TEST_TMPDIR/lw"
  bpid=$(cat "$D/B.pid")
  kill -STOP "$bpid"
  # B reads nothing: an eager flood fills the lane's socket, then its queue
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 30 "$HOSTILE" flood-send 200000 -j xr-fs -p xr-f
  echo "$output"
  assert_success
  assert_output --partial "RESULT"
  bg_wait "$lwp"
  cat "$BATS_TEST_TMPDIR/lw"
  pio_wait_until 10 grep -q "process xr-s:0 (pid [0-9]*) left: PIO_Exit" "$D/A.log"
  # the lane (and channel 0: the same addresses) reset under A's feet
  ss -K src 127.1.0.1 dst 127.2.0.1 dport = ":$DP" >/dev/null 2>&1 || true
  pio_wait_until 10 grep -q "express lane to B failed" "$D/A.log"
  sleep 1 # what waited for the lane is handed over (7000 frames: some 70 ms)
  kill -CONT "$bpid"
  bg_wait "$rp"
  cat "$BATS_TEST_TMPDIR/recv"
  grep "express lane to B" "$D/A.log"
  [ "$BG_RC" -eq 0 ]
  grep -q '^OK sizes: 1 messages' "$BATS_TEST_TMPDIR/recv"
  # every frame B had not acknowledged went again; B took each once, in
  # order: no stream of the flood has a hole (lane.h)
  grep -E "[1-9][0-9]* frame\(s\) \([0-9]+ bytes\) to B not yet acknowledged go again on the control plane" "$D/A.log"
  run grep -E "never came" "$D/B.log"
  assert_failure
  pio_wait_channels "$PIO_SOCK_A" 1
  transfer xr
}
