# chaos.bash - the chaos run on the test bed, shared by tests/bats/chaos.bats and bench/chaos.sh.
# SPDX-License-Identifier: BSD-3-Clause
#
# Two emulated hosts with CHAOS_LINKS (4) links of CHAOS_RATE (100mbit); piod
# A on h1, B on h2. Four senders (application chs, ranks 0-3, on A) stream
# mixed sizes (tests/prog/pio-chaos.c) to four receivers (chr 0-3, on B),
# each with its own balancing: rank 0 PIO_USER(1), rank 1 PIO_STATIC, ranks
# 2 and 3 PIO_DYNAMIC; rank 3 sends PIO_SYNC, because its receiver is the
# one the driver kills and restarts (a standard send to a process that is
# killed is lost with it, and its sender has already been told PIO_OK: that
# is what PIO_SYNC is for). Meanwhile chaos_driver injects, at random
# intervals: a link cut and restored; a reset (ss -K) of every connection
# from A to B on one link (the express lane lives on link 0, the data
# channels on each); piod B stopped for up to 3 s; receiver 3 killed (-9)
# and restarted. Every injection is a line of $CD/faults.log. Afterwards
# tests/lib/chaos_check.py matches the ledgers.
#
# Needs: helpers.bash and piod.bash loaded, root, $PIO_BUILD.

CHAOS_BIN=${PIO_BUILD}/tests/prog/pio-chaos
CHAOS_LINKS=${CHAOS_LINKS:-4}
CHAOS_RATE=${CHAOS_RATE:-100mbit}

# chaos_bed_up DIR: the bed and both piods; sets CBED, CD, CSOCK_A, CSOCK_B.
chaos_bed_up() {
  CD=$1
  mkdir -p "$CD"
  CBED=$(pio_unique_name chb)
  pio_bed_up "$CBED" --hosts 2 --links "$CHAOS_LINKS" --rate "$CHAOS_RATE" >/dev/null
  _pio_keys "$CD" A B
  chaos_piod A
  chaos_piod B
  CSOCK_A=$CD/A.sock CSOCK_B=$CD/B.sock
  pio_wait_channels "$CSOCK_A" "$CHAOS_LINKS" 60
  pio_wait_channels "$CSOCK_B" "$CHAOS_LINKS" 60
}

# chaos_piod WHO: piod A (h1) or B (h2) on every link of the bed.
chaos_piod() {
  local who=$1 me=1 peer=2 other=B k
  [ "$who" = B ] && me=2 peer=1 other=A
  local listen=() paddr=()
  for ((k = 0; k < CHAOS_LINKS; k++)); do
    listen+=(--listen "$("$PIO_TESTBED" addr "$CBED" "h$me" "$k")")
    paddr+=("$("$PIO_TESTBED" addr "$CBED" "h$peer" "$k")")
  done
  local peers
  peers=$(IFS=,; echo "${paddr[*]}")
  _pio_launch "$who" "$CD" "$("$PIO_TESTBED" ns "$CBED" "h$me")" "$PIOD" -f --name "$who" \
    --system "$who" --keys "$CD/keys" --socket "$CD/$who.sock" "${listen[@]}" \
    --peer "$other=$peers"
  _pio_wait_sock "$CD/$who.sock"
}

# chaos_recv RANK: start (or restart) receiver RANK; its pid in CRECV[RANK].
chaos_recv() {
  local r=$1
  bg_start "$CD/recv$r.out" env PIO_SOCKET="$CSOCK_B" "$CHAOS_BIN" recv -a chr -r "$r" -P 4 \
    -p chs -s "$CHAOS_SEED" -B "$CHAOS_BIG" -l "$CD/recv$r.ledger"
  CRECV[$r]=$BG_PID
}

# chaos_start N [NSYNC]: four receivers, then three senders of N messages
# each and the PIO_SYNC one of NSYNC (default N): a sync send waits for its
# receiver, a round trip through links full of the others' data. With
# CHAOS_SECONDS_SEND set, every sender sends for that long instead.
chaos_start() {
  local n=$1 nsync=${2:-$1} r
  declare -g -a CRECV CSEND
  CHAOS_SEED=${CHAOS_SEED:-$RANDOM} CHAOS_BIG=${CHAOS_BIG:-67108864}
  if [ -n "${CHAOS_SECONDS_SEND:-}" ]; then
    echo "seed $CHAOS_SEED, every sender for $CHAOS_SECONDS_SEND s, largest $CHAOS_BIG bytes"
  else
    echo "seed $CHAOS_SEED, $n messages from senders 0-2 and $nsync from sender 3 (PIO_SYNC)," \
      "largest $CHAOS_BIG bytes"
  fi >"$CD/run.txt"
  : >"$CD/faults.log"
  for r in 0 1 2 3; do chaos_recv "$r"; done
  pio_wait_until 20 grep -q "process chr:3 of 4 joined" "$CD/B.log"
  local conn=(USER:1 STATIC DYNAMIC DYNAMIC) mode=(blocking blocking blocking sync)
  local count=("$n" "$n" "$n" "$nsync")
  for r in 0 1 2 3; do
    bg_start "$CD/send$r.out" env PIO_SOCKET="$CSOCK_A" "$CHAOS_BIN" send -a chs -r "$r" -P 4 \
      -p chr ${CHAOS_SECONDS_SEND:+-T "$CHAOS_SECONDS_SEND"} -n "${count[$r]}" -c "${conn[$r]}" -m "${mode[$r]}" -s "$CHAOS_SEED" \
      -B "$CHAOS_BIG" -l "$CD/send$r.ledger"
    CSEND[$r]=$BG_PID
  done
}

# chaos_fault: one random fault, logged; waits for it to be over.
chaos_fault() {
  local kind=$((RANDOM % 4)) k=$((RANDOM % CHAOS_LINKS)) t
  local ns
  ns=$("$PIO_TESTBED" ns "$CBED" h1)
  case $kind in
    0)
      t=0.$((5 + RANDOM % 5))
      echo "$(date +%s.%N) cut link $k for ${t}s" >>"$CD/faults.log"
      "$PIO_TESTBED" link "$CBED" h1 "$k" down
      sleep "$t"
      "$PIO_TESTBED" link "$CBED" h1 "$k" up
      ;;
    1)
      echo "$(date +%s.%N) reset link $k" >>"$CD/faults.log"
      ip netns exec "$ns" ss -K dst "$("$PIO_TESTBED" addr "$CBED" h2 "$k")" >/dev/null 2>&1 || true
      ;;
    2)
      t=$((1 + RANDOM % 3))
      echo "$(date +%s.%N) pause piod B for ${t}s" >>"$CD/faults.log"
      kill -STOP "$(cat "$CD/B.pid")"
      sleep "$t"
      kill -CONT "$(cat "$CD/B.pid")"
      ;;
    3)
      if kill -0 "${CRECV[3]}" 2>/dev/null; then
        echo "$(date +%s.%N) kill receiver 3" >>"$CD/faults.log"
        kill -9 "${CRECV[3]}"
        bg_wait "${CRECV[3]}"
        sleep 1
        chaos_recv 3
      fi
      ;;
  esac
}

# chaos_drive SECONDS: faults at random intervals (0.3 to 1.5 s apart) while
# any sender runs, for at most SECONDS; then waits for every process.
# Sets CHAOS_SEND_RC and CHAOS_RECV_RC (the first non-zero exit, or 0).
chaos_drive() {
  local limit=$1 start now r
  start=$(date +%s)
  while :; do
    local any=0
    for r in 0 1 2 3; do kill -0 "${CSEND[$r]}" 2>/dev/null && any=1; done
    now=$(date +%s)
    [ "$any" -eq 1 ] && [ $((now - start)) -lt "$limit" ] || break
    sleep "$((RANDOM % 2)).$((3 + RANDOM % 7))"
    chaos_fault
  done
  CHAOS_SEND_RC=0 CHAOS_RECV_RC=0
  for r in 0 1 2 3; do
    bg_wait "${CSEND[$r]}"
    [ "$BG_RC" -eq 0 ] || CHAOS_SEND_RC=$BG_RC
  done
  for r in 0 1 2 3; do
    bg_wait "${CRECV[$r]}"
    [ "$BG_RC" -eq 0 ] || CHAOS_RECV_RC=$BG_RC
  done
  CHAOS_SECONDS=$(($(date +%s) - start))
}

# chaos_check [--csv FILE]: the ledgers' verdict (exit status) and table.
chaos_check() {
  python3 "$PIO_SRC/tests/lib/chaos_check.py" "$@" \
    "$CD/send0.ledger" "$CD/recv0.ledger" "$CD/send1.ledger" "$CD/recv1.ledger" \
    "$CD/send2.ledger" "$CD/recv2.ledger" "$CD/send3.ledger" "$CD/recv3.ledger"
}
