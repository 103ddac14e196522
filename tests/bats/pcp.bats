#!/usr/bin/env bats
# pcp.bats - pcp and the file service on the test bed: 2 hosts x 2 links.
# SPDX-License-Identifier: BSD-3-Clause
#
# A (h1) exports nothing; B (h2) exports $EXP (its piod runs pio-files).
# pcp runs on A. Links run at 1 Gbit/s (the resume test slows them down).

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"
# shellcheck disable=SC2154 # $stderr is set by run --separate-stderr
bats_require_minimum_version 1.5.0 # run --separate-stderr

PCP=$PIO_BUILD/bin/pcp

# start_b: B's piod (again, after the resume test killed it)
start_b() {
  local a0 a1 b0 b1
  a0=$("$PIO_TESTBED" addr "$BED" h1 0) a1=$("$PIO_TESTBED" addr "$BED" h1 1)
  b0=$("$PIO_TESTBED" addr "$BED" h2 0) b1=$("$PIO_TESTBED" addr "$BED" h2 1)
  _pio_start B "$DIR" "$("$PIO_TESTBED" ns "$BED" h2)" -- --listen "$b0" --listen "$b1" \
    --peer "A=$a0,$a1" --export "$EXP"
}

setup_file() {
  [ "$(id -u)" -eq 0 ] || return 0
  export BED DIR EXP SOCK_A SOCK_B
  BED=$(pio_unique_name pcp)
  pio_bed_up "$BED" --hosts 2 --links 2 --rate 1gbit >/dev/null
  DIR=$BATS_FILE_TMPDIR/pair
  EXP=$BATS_FILE_TMPDIR/export
  mkdir -p "$DIR" "$EXP"
  _pio_keys "$DIR" A B
  local a0 a1 b0 b1
  a0=$("$PIO_TESTBED" addr "$BED" h1 0) a1=$("$PIO_TESTBED" addr "$BED" h1 1)
  b0=$("$PIO_TESTBED" addr "$BED" h2 0) b1=$("$PIO_TESTBED" addr "$BED" h2 1)
  _pio_start A "$DIR" "$("$PIO_TESTBED" ns "$BED" h1)" -- --listen "$a0" --listen "$a1" \
    --peer "B=$b0,$b1" --link-timeout 5
  start_b
  SOCK_A=$DIR/A.sock SOCK_B=$DIR/B.sock
  _pio_wait_sock "$SOCK_A" && _pio_wait_sock "$SOCK_B" &&
    pio_wait_channels "$SOCK_A" 2 && pio_wait_channels "$SOCK_B" 2
}

teardown_file() {
  pio_cleanup
}

setup() {
  pio_need_root
  export PIO_SOCKET=$SOCK_A
  W=$BATS_TEST_TMPDIR
}

# a pcp (or file service) a test stopped (SIGSTOP) and left behind on failure: let it go
teardown() {
  local p
  if [ -f "$W/fs-stopped" ]; then kill -CONT "$(cat "$W/fs-stopped")" 2>/dev/null || true; fi
  [ -f "$W/pids" ] || return 0
  while read -r p; do
    kill -CONT "$p" 2>/dev/null || true
    kill -KILL "$p" 2>/dev/null || true
  done <"$W/pids"
  "$PIO_TESTBED" rate "$BED" h1 0 1gbit 2>/dev/null || true
  "$PIO_TESTBED" rate "$BED" h1 1 1gbit 2>/dev/null || true
}

@test "send and fetch: 0 B, 1 B, 1 GiB and a sparse file, identical, modes and mtimes kept" {
  : >"$W/empty"
  printf x >"$W/one"
  head -c $((1 << 30)) /dev/urandom >"$W/big"
  truncate -s 64M "$W/sparse" && printf tail | dd of="$W/sparse" bs=1 seek=$((40 << 20)) conv=notrunc 2>/dev/null
  chmod 600 "$W/empty"; chmod 640 "$W/one"; chmod 751 "$W/big"; chmod 604 "$W/sparse"
  touch -d '2001-02-03 04:05:06' "$W/one"
  run "$PCP" -q "$W/empty" "$W/one" "$W/big" "$W/sparse" B:
  echo "$output"
  assert_success
  for f in empty one big sparse; do
    cmp "$W/$f" "$EXP/$f"
    [ "$(stat -c %a "$W/$f")" = "$(stat -c %a "$EXP/$f")" ]
  done
  [ "$(stat -c %Y "$EXP/one")" = "$(stat -c %Y "$W/one")" ]
  # the holes stay holes: 64 MiB long, a few KiB on disk
  [ "$(stat -c %s "$EXP/sparse")" -eq $((64 << 20)) ]
  [ "$(du -k "$EXP/sparse" | cut -f1)" -le 64 ]
  mkdir "$W/back"
  run "$PCP" -q B:empty B:one B:big B:sparse "$W/back"
  assert_success
  for f in empty one big sparse; do
    cmp "$W/$f" "$W/back/$f"
    [ "$(stat -c %a "$W/$f")" = "$(stat -c %a "$W/back/$f")" ]
  done
  [ "$(du -k "$W/back/sparse" | cut -f1)" -le 64 ]
  # a dense file of zeros stays dense (only sources with holes are copied sparse)
  head -c $((8 << 20)) /dev/zero >"$W/zeros"
  run "$PCP" -q "$W/zeros" B:
  assert_success
  [ "$(du -k "$EXP/zeros" | cut -f1)" -ge 8192 ]
  # no part file left anywhere
  [ -z "$(find "$EXP" "$W/back" -name '*.pcp-part')" ]
}

@test "-r copies a tree there and back, with --json counting files and bytes" {
  mkdir -p "$W/tree/a/b" "$W/tree/c"
  for i in 1 2 3; do head -c $((i * 100000)) /dev/urandom >"$W/tree/a/f$i"; done
  echo hello >"$W/tree/a/b/deep"
  : >"$W/tree/c/empty"
  run "$PCP" -r -q --json "$W/tree" B:trees
  echo "$output"
  assert_success
  assert_output --partial '"files": 5'
  assert_output --partial '"ok": true'
  diff -r "$W/tree" "$EXP/trees/tree"
  run "$PCP" -r -q B:trees/tree "$W/got"
  assert_success
  diff -r "$W/tree" "$W/got"
}

@test "-n 1 and -n 2 round-robin messages over the named channels; -b static and user work" {
  head -c $((32 << 20)) /dev/urandom >"$W/f"
  for opt in "-n 1" "-n 2" "-b static" "-b user" "--no-verify" "--chunk 1M"; do
    # shellcheck disable=SC2086
    run "$PCP" -q $opt "$W/f" B:f.out
    assert_success
    cmp "$W/f" "$EXP/f.out"
  done
}

# bytes piod A has sent on each channel to B, in channel order
chan_tx() {
  pio-info --json | python3 -c '
import json, sys
c = sorted((c for c in json.load(sys.stdin)["channels"] if c["peer"] == "B"), key=lambda c: c["index"])
print(" ".join(str(x["tx_bytes"]) for x in c))'
}

@test "-n 2 gives each named channel the same bytes of a file that is no multiple of a round (pcp_plan)" {
  # 40 MiB + 12345 B in 8 MiB blocks was 24 MiB on channel 0 and 16 MiB on
  # channel 1: the channel that carried more ended last. Rounds of one
  # message per channel, of one size each, share it evenly.
  head -c $(((40 << 20) + 12345)) /dev/urandom >"$W/f"
  before=$(chan_tx)
  run "$PCP" -q -n 2 "$W/f" B:f.even
  assert_success
  cmp "$W/f" "$EXP/f.even"
  after=$(chan_tx)
  run python3 - "$before" "$after" $(((40 << 20) + 12345)) <<'PY'
import sys
b, a = ([int(x) for x in s.split()] for s in sys.argv[1:3])
size = int(sys.argv[3])
d = [y - x for x, y in zip(b, a)]
print("per channel: %s bytes of a %d-byte file" % (d, size))
# (a message of 64 KiB or less goes eager, on no channel)
assert len(d) == 2 and sum(d) >= size - 2 * 65536, "the channels carried %s" % d
assert abs(d[0] - d[1]) <= size // 100, "channels uneven by %d bytes" % abs(d[0] - d[1])
PY
  echo "$output"
  assert_success
  assert_output --partial "per channel:"
}

@test "an interrupted copy leaves no file under its name; --resume finishes without resending" {
  "$PIO_TESTBED" rate "$BED" h1 0 100mbit; "$PIO_TESTBED" rate "$BED" h1 1 100mbit
  head -c $((160 << 20)) /dev/urandom >"$W/r"
  "$PCP" -q "$W/r" B:r.out >"$W/pcp1.log" 2>&1 &
  p=$!
  sleep 3 # about 70 MB at 2 x 100 Mbit/s
  kill -KILL "$(cat "$DIR/B.pid")"
  rc=0; wait "$p" || rc=$?
  cat "$W/pcp1.log"
  [ "$rc" -ne 0 ]
  [ ! -e "$EXP/r.out" ]
  part=$(stat -c %s "$EXP/.r.out.pcp-part")
  echo "part file: $part bytes"
  [ "$part" -gt $((10 << 20)) ]
  start_b
  pio_wait_channels "$SOCK_B" 2 && pio_wait_channels "$SOCK_A" 2
  run "$PCP" -q --resume --json "$W/r" B:r.out
  "$PIO_TESTBED" rate "$BED" h1 0 1gbit; "$PIO_TESTBED" rate "$BED" h1 1 1gbit
  echo "$output"
  assert_success
  cmp "$W/r" "$EXP/r.out"
  resumed=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1].splitlines()[-1])["resumed_bytes"])' "$output")
  [ "$resumed" -ge $((part - (8 << 20))) ]
  [ "$resumed" -gt 0 ]
}

@test "paths that leave the export root are refused, symlinks out included" {
  ln -sfn /etc "$EXP/etc-link"
  for p in ../x /etc/passwd etc-link/passwd a/../../x; do
    run "$PCP" -q B:"$p" "$W/x"
    assert_failure
    assert_output --regexp "leaves the export root|No such file"
    [ ! -e "$W/x" ]
  done
  printf data >"$W/s"
  run "$PCP" -q "$W/s" B:etc-link/pwned
  assert_failure
  assert_output --partial "leaves the export root"
  [ ! -e /etc/pwned ]
  rm -f "$EXP/etc-link"
}

@test "errors: no piod, unknown host, no export, missing source, no space, permission denied" {
  printf data >"$W/s"
  # no connection: 10
  PIO_SOCKET=/nonexistent/sock run "$PCP" -q "$W/s" B:
  assert_failure 10
  assert_output --partial "cannot reach this host's piod"
  run "$PCP" -q "$W/s" C:
  assert_failure 10
  assert_output --partial "C: unknown host"
  PIO_SOCKET=$SOCK_B run "$PCP" -q "$W/s" A:
  assert_failure 10
  assert_output --partial "serves no files: set \`export = DIR\`"
  # a local source missing: 3; a remote one (a file not copied): 23
  run "$PCP" -q "$W/missing" B:
  assert_failure 3
  assert_output --partial "missing: No such file or directory"
  run "$PCP" -q B:missing "$W/m"
  assert_failure 23
  assert_output --partial "No such file or directory"
  [ ! -e "$W/m" ]
  # no space: a 1 MiB tmpfs inside the export, mounted where the file
  # service sees it (its mount namespace, made by `ip netns exec`)
  mkdir -p "$EXP/small"
  fs=$(pgrep -P "$(cat "$DIR/B.pid")" pio-files)
  nsenter -t "$fs" -m mount -t tmpfs -o size=1m tmpfs "$EXP/small"
  head -c $((4 << 20)) /dev/urandom >"$W/4m"
  run "$PCP" -q "$W/4m" B:small/
  nsenter -t "$fs" -m umount "$EXP/small"
  assert_failure 23
  assert_output --partial "No space left on device"
  # permission denied: a user who may not write where the copy should land
  mkdir -p "$W/locked" && chmod 755 "$W/locked"
  printf keep >"$EXP/k"
  # (bats' temp folders are 0700: nobody reaches A's socket through a hard link in /tmp)
  ln -f "$SOCK_A" /tmp/pcp-test-$$.sock
  PIO_SOCKET=/tmp/pcp-test-$$.sock run setpriv --reuid nobody --regid nogroup --clear-groups \
    "$PCP" -q B:k "$W/locked/k"
  rm -f /tmp/pcp-test-$$.sock
  assert_failure 3 # (a local destination folder: checked before piod is asked)
  assert_output --partial "Permission denied"
  [ ! -e "$W/locked/k" ]
}

# wait_for FILE: until it exists (10 s)
wait_for() {
  local i
  for ((i = 0; i < 1000; i++)); do [ -e "$1" ] && return 0; sleep 0.01; done
  return 1
}

@test "a source that shrinks under the copy: a clear error both ways, the old destination kept" {
  head -c $((256 << 20)) /dev/urandom >"$W/v"
  printf old >"$EXP/v"
  # send: pcp is stopped as soon as the service made its part file
  "$PCP" -q "$W/v" B:v >"$W/send.out" 2>&1 &
  p=$!
  wait_for "$EXP/.v.pcp-part"
  kill -STOP $p
  truncate -s 1M "$W/v"
  kill -CONT $p
  rc=0 && wait $p || rc=$?
  cat "$W/send.out"
  [ "$rc" -eq 23 ] # partial: the file not copied
  grep -q "v: read: the file shrank while being sent" "$W/send.out"
  [ "$(cat "$EXP/v")" = old ]
  # fetch: the file service is stopped as soon as pcp made its part file
  head -c $((256 << 20)) /dev/urandom >"$EXP/w"
  printf old >"$W/w"
  fs=$(pgrep -P "$(cat "$DIR/B.pid")" pio-files)
  "$PCP" -q B:w "$W/w" >"$W/fetch.out" 2>&1 &
  p=$!
  wait_for "$W/.w.pcp-part"
  kill -STOP "$fs"
  truncate -s 1M "$EXP/w"
  kill -CONT "$fs"
  rc=0 && wait $p || rc=$?
  cat "$W/fetch.out"
  [ "$rc" -eq 23 ] # partial: the file not copied
  grep -q "B:w: read: the file shrank while being sent" "$W/fetch.out"
  [ "$(cat "$W/w")" = old ]
}

@test "bad usage exits 1 (rsync's syntax error) with a message, before looking at any file" {
  run "$PCP" a b
  assert_failure 1
  assert_output --partial "give local sources and a remote HOST:DST"
  run "$PCP" -n 0 a B:
  assert_failure 1
  assert_output --partial "-n 0: give a number of channels from 1 to 64"
  run "$PCP" --chunk 1 a B:
  assert_failure 1
  assert_output --partial "--chunk 1: give 4K to 64M"
  run "$PCP" --no-such-option a B:
  assert_failure 1
  assert_output --partial "usage: pcp"
  run "$PCP" --exclude '' a B:
  assert_failure 1
  assert_output --partial "--exclude: give a pattern"
}

@test "a channel that cannot reconnect says that nothing answers, and which ports to open" {
  # cut link 1 under a copy: its channel stalls, is given up, and its
  # reconnects get no answer (the cut drops packets, as a firewall would)
  b1=$("$PIO_TESTBED" addr "$BED" h2 1)
  "$PIO_TESTBED" link "$BED" h1 1 down
  head -c $((48 << 20)) /dev/urandom >"$W/c"
  run "$PCP" -q "$W/c" B:c.out
  for _ in $(seq 100); do grep -q "no answer from $b1" "$DIR/A.log" && break; sleep 0.2; done
  "$PIO_TESTBED" link "$BED" h1 1 up
  assert_success
  cmp "$W/c" "$EXP/c.out"
  grep -E "channel 1 |no answer|nothing listens" "$DIR/A.log" | tail -n 20 || true
  grep "channel 1 to B: no answer from $b1 port 7701 (" "$DIR/A.log" |
    grep -q "a firewall dropping packets, or the link down? open data-port 7701 between the hosts"
  pio_wait_channels "$SOCK_A" 2
}

# ---- issue 26: concurrent copies, export-root forms, progress ---------------

# wait_for_size FILE BYTES: until FILE holds at least BYTES (60 s)
wait_for_size() {
  local i
  for ((i = 0; i < 6000; i++)); do
    [ "$(stat -c %s "$1" 2>/dev/null || echo 0)" -ge "$2" ] && return 0
    sleep 0.01
  done
  return 1
}

# fs_pid: the file service of B (a child of B's piod)
fs_pid() {
  pgrep -P "$(cat "$DIR/B.pid")" pio-files
}

@test "two copies of one file to one destination, the second interrupted: the first is verified and equal, the second refused busy" {
  # the user's case: A copies 200 MiB to B:f; B copies the same file to B:f
  # while A's part file exists and A has not finished, and is interrupted.
  # A is stopped (SIGSTOP) for B's whole life, so the overlap is certain.
  # (links at 2 x 100 Mbit/s: B, were it let in, would still be copying
  # when it is interrupted)
  "$PIO_TESTBED" rate "$BED" h1 0 100mbit; "$PIO_TESTBED" rate "$BED" h1 1 100mbit
  head -c $((200 << 20)) /dev/urandom >"$W/src"
  "$PCP" -q --json "$W/src" B:f >"$W/a.out" 2>"$W/a.err" 3>&- &
  a=$!
  echo "$a" >>"$W/pids"
  # A is stopped once more than 96 MiB are written (B truncated that part
  # file at its start, and got to about 32 MiB: the user's zeros)
  wait_for_size "$EXP/.f.pcp-part" $((96 << 20))
  kill -STOP "$a"
  [ ! -e "$EXP/f" ] # A has not finished
  "$PCP" -q "$W/src" B:f >"$W/b.out" 2>&1 3>&- &
  b=$!
  echo "$b" >>"$W/pids"
  sleep 1.5
  # (SIGKILL: a background job of a script ignores SIGINT)
  kill -KILL "$b" 2>/dev/null || true
  rc=0 && wait "$b" || rc=$?
  cat "$W/b.out"
  [ "$rc" -ne 0 ]
  run cat "$W/b.out"
  assert_output --partial "B:f: busy: pcp."
  assert_output --partial "is copying to it (part file .f.pcp-part); nothing was written"
  [ ! -e "$EXP/f" ]
  kill -CONT "$a"
  rc=0 && wait "$a" || rc=$?
  "$PIO_TESTBED" rate "$BED" h1 0 1gbit; "$PIO_TESTBED" rate "$BED" h1 1 1gbit
  cat "$W/a.out" "$W/a.err"
  [ "$rc" -eq 0 ]
  run cat "$W/a.out"
  assert_output --partial '"verified": true, "ok": true'
  cmp "$W/src" "$EXP/f"
  [ ! -e "$EXP/.f.pcp-part" ]
  # once A is done, another copy may go: the last complete copy wins
  head -c $((3 << 20)) /dev/urandom >"$W/src2"
  run "$PCP" -q "$W/src2" B:f
  assert_success
  cmp "$W/src2" "$EXP/f"
}

@test "two copies to one destination, both running: the final name only ever holds a complete, verified copy" {
  # B starts while A streams (A is not stopped); B is refused or, if A was
  # already done, wins; whichever pcp says it succeeded left its own bytes,
  # and a watcher never sees anything but the sources under the name
  "$PIO_TESTBED" rate "$BED" h1 0 200mbit; "$PIO_TESTBED" rate "$BED" h1 1 200mbit
  head -c $((96 << 20)) /dev/urandom >"$W/x1"
  head -c $((96 << 20)) /dev/urandom >"$W/x2"
  sum1=$(cksum <"$W/x1") sum2=$(cksum <"$W/x2")
  (
    while [ ! -e "$W/stop" ]; do
      if [ -e "$EXP/g" ]; then
        s=$(cksum <"$EXP/g")
        [ "$s" = "$sum1" ] || [ "$s" = "$sum2" ] || echo "WRONG: $s" >>"$W/watch"
      fi
      sleep 0.02
    done
  ) 3>&- &
  watcher=$!
  "$PCP" -q "$W/x1" B:g >"$W/1.out" 2>&1 3>&- &
  p1=$!
  echo "$p1" >>"$W/pids"
  wait_for "$EXP/.g.pcp-part"
  rc2=0 && "$PCP" -q "$W/x2" B:g >"$W/2.out" 2>&1 || rc2=$?
  rc1=0 && wait "$p1" || rc1=$?
  "$PIO_TESTBED" rate "$BED" h1 0 1gbit; "$PIO_TESTBED" rate "$BED" h1 1 1gbit
  touch "$W/stop"
  wait "$watcher"
  cat "$W/1.out" "$W/2.out"
  [ "$rc1" -eq 0 ]
  [ "$rc2" -ne 0 ]
  grep -q "B:g: busy" "$W/2.out"
  cmp "$W/x1" "$EXP/g"
  [ ! -e "$W/watch" ]
}

@test "--resume after a killed pcp finds its own part file and finishes it" {
  # (256 MiB at 2 x 100 Mbit/s: more than the piods' pools hold, so pcp,
  # killed at 16 MiB written, cannot have handed over the whole file and
  # its END yet: the copy cannot finish without it. "kr": the errors test
  # leaves a file "k" in the export)
  "$PIO_TESTBED" rate "$BED" h1 0 100mbit; "$PIO_TESTBED" rate "$BED" h1 1 100mbit
  head -c $((256 << 20)) /dev/urandom >"$W/kr"
  "$PCP" -q "$W/kr" B:kr >"$W/kr1.out" 2>&1 3>&- &
  p=$!
  wait_for_size "$EXP/.kr.pcp-part" $((16 << 20))
  kill -KILL "$p"
  wait "$p" || true
  "$PIO_TESTBED" rate "$BED" h1 0 1gbit; "$PIO_TESTBED" rate "$BED" h1 1 1gbit
  [ ! -e "$EXP/kr" ]
  # the session of the killed pcp lets the part file go once it sees pcp
  # gone; --resume waits for that (a plain copy would be refused busy)
  SECONDS=0
  run "$PCP" -q --resume --json "$W/kr" B:kr
  echo "$output"
  echo "resumed after $SECONDS s" >&3
  assert_success
  cmp "$W/kr" "$EXP/kr"
  resumed=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1].splitlines()[-1])["resumed_bytes"])' "$output")
  [ "$resumed" -gt 0 ]
}

@test "two fetches to one local destination: the second is refused busy, the first lands whole" {
  head -c $((128 << 20)) /dev/urandom >"$EXP/h"
  "$PCP" -q B:h "$W/h" >"$W/f1.out" 2>&1 3>&- &
  p=$!
  echo "$p" >>"$W/pids"
  wait_for "$W/.h.pcp-part"
  kill -STOP "$p"
  run "$PCP" -q B:h "$W/h"
  kill -CONT "$p"
  assert_failure
  assert_output --partial "h: busy: another pcp is fetching to it"
  rc=0 && wait "$p" || rc=$?
  cat "$W/f1.out"
  [ "$rc" -eq 0 ]
  cmp "$EXP/h" "$W/h"
}

@test "the export root as scp users write it: HOST:, HOST:., HOST:./, HOST:/, HOST:~, HOST:~/DIR" {
  mkdir -p "$W/d/sub"
  printf one >"$W/d/a"
  printf two >"$W/d/sub/b"
  printf three >"$W/file"
  mkdir -p "$EXP/in"
  # shellcheck disable=SC2088 # a literal ~: the remote export root, not our home
  for form in "" . ./ / // "~" "~/"; do
    rm -rf "$EXP/d" "$EXP/file"
    run "$PCP" -q -r "$W/d" "B:$form"
    echo "B:$form -> $output"
    assert_success
    diff -r "$W/d" "$EXP/d"
    run "$PCP" -q "$W/file" "B:$form"
    assert_success
    cmp "$W/file" "$EXP/file"
    rm -f "$W/got"
    run "$PCP" -q "B:$form${form:+/}file" "$W/got"
    echo "B:$form${form:+/}file -> $output"
    assert_success
    cmp "$W/file" "$W/got"
  done
  run "$PCP" -q "$W/file" "B:~/in"
  assert_success
  cmp "$W/file" "$EXP/in/file"
  run "$PCP" -q -r "$W/d" "B:~/in/"
  assert_success
  diff -r "$W/d" "$EXP/in/d"
  # an absolute path is beneath the root (as in a chrooted sftp), as is the
  # root's own path; ".." still leaves it and is refused
  run "$PCP" -q "$W/file" B:/in/abs
  assert_success
  cmp "$W/file" "$EXP/in/abs"
  run "$PCP" -q "$W/file" "B:$EXP/in/abs2"
  assert_success
  cmp "$W/file" "$EXP/in/abs2"
  run "$PCP" -q "$W/file" B:/../abs
  assert_failure
  assert_output --partial "leaves the export root"
  refute_output --partial "Invalid argument"
}

@test "--progress counts the bytes the file service acknowledged, with a smoothed rate and an ETA" {
  "$PIO_TESTBED" rate "$BED" h1 0 100mbit; "$PIO_TESTBED" rate "$BED" h1 1 100mbit
  head -c $((96 << 20)) /dev/urandom >"$W/p"
  "$PCP" --progress "$W/p" B:p >/dev/null 2>"$W/p.err" 3>&- &
  p=$!
  wait_for "$EXP/.p.pcp-part"
  # the service wrote some bytes and pcp heard of some (a loaded machine can
  # take seconds for the first)
  pio_wait_until 60 sh -c "[ \$(stat -c %s '$EXP/.p.pcp-part') -gt 0 ] &&
    grep -q '[1-9][0-9]* of [0-9]* bytes acknowledged' '$W/p.err'"
  fs=$(fs_pid)
  echo "$fs" >>"$W/fs-stopped"
  kill -STOP "$fs"
  sleep 3 # pcp keeps handing data to its piod; nothing more is written
  written=$(stat -c %s "$EXP/.p.pcp-part")
  last=$(grep -c 'acknowledged' "$W/p.err")
  kill -CONT "$fs"
  rc=0 && wait "$p" || rc=$?
  "$PIO_TESTBED" rate "$BED" h1 0 1gbit; "$PIO_TESTBED" rate "$BED" h1 1 1gbit
  tail -n 20 "$W/p.err"
  [ "$rc" -eq 0 ]
  cmp "$W/p" "$EXP/p"
  # the lines printed while the service was stopped never count more than it wrote
  acked=$(head -n "$last" "$W/p.err" | grep 'acknowledged' | tail -n 1 | awk '{print $2}')
  echo "acknowledged $acked, written $written"
  [ "$acked" -gt 0 ]
  [ "$acked" -le "$written" ]
  # a stall lowers the smoothed rate without dropping it to 0, and the ETA stays a number
  run bash -c "head -n $last '$W/p.err' | grep acknowledged | tail -n 1"
  assert_output --regexp ', [1-9][0-9]* B/s, ETA [0-9]+ s$'
  # the count only grows, and ends with the summary line
  run awk '/acknowledged/ { if ($2 < prev) bad = 1; prev = $2 } END { print bad ? "shrank" : "grew" }' "$W/p.err"
  assert_output grew
  run tail -n 1 "$W/p.err"
  assert_output --regexp '/p: 96\.0 MiB in [0-9.]+ s, '
}

# ---- command-line conventions (issue 33): exit codes, skipped files,
# --dry-run, --exclude, per-file --json, the total progress line ----

# xxh3_of FILE: its XXH3-64 digest in hex: xxhsum -H3 (Debian's xxhash)
# when it is installed, else libxxhash itself through python's ctypes
xxh3_of() {
  if command -v xxhsum >/dev/null; then
    xxhsum -H3 "$1" | awk '{ print $NF }'
  else
    python3 -c '
import ctypes, sys
lib = ctypes.CDLL("libxxhash.so.0")
lib.XXH3_64bits.restype = ctypes.c_uint64
lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
d = open(sys.argv[1], "rb").read()
print("%016x" % lib.XXH3_64bits(d, len(d)))' "$1"
  fi
}

# a small tree: a/f1 (1000 B), a/b/deep (6 B), c/x.log (3 B), top (0 B)
small_tree() {
  mkdir -p "$1/a/b" "$1/c"
  head -c 1000 /dev/urandom >"$1/a/f1"
  printf 'deep!\n' >"$1/a/b/deep"
  printf 'log' >"$1/c/x.log"
  : >"$1/top"
}

@test "--version: pcp and pio-files print the shared line, without a piod" {
  PIO_SOCKET=/nonexistent/sock run "$PCP" --version
  assert_success
  assert_output --regexp '^pcp [0-9]+\.[0-9]+\.[0-9]+ \(protocol [0-9]+\)$'
  local line=$output
  run "$PIO_BUILD/sbin/pio-files" --version
  assert_success
  assert_output "pio-files ${line#pcp }"
}

@test "-r skips symbolic links, FIFOs, sockets and devices, naming each and its kind; the rest arrives; exit 23" {
  mkdir -p "$W/sp/sub"
  printf one >"$W/sp/file"
  printf two >"$W/sp/sub/deep"
  ln -s file "$W/sp/link"
  ln -s /etc "$W/sp/dirlink"
  mkfifo "$W/sp/sub/fifo"
  python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$W/sp/sock"
  mknod "$W/sp/null" c 1 3
  run "$PCP" -q -r "$W/sp" B:specials
  assert_failure 23
  assert_line "pcp: skipping non-regular file \"$W/sp/link\" (symbolic link)"
  assert_line "pcp: skipping non-regular file \"$W/sp/dirlink\" (symbolic link)"
  assert_line "pcp: skipping non-regular file \"$W/sp/sub/fifo\" (FIFO)"
  assert_line "pcp: skipping non-regular file \"$W/sp/sock\" (socket)"
  assert_line "pcp: skipping non-regular file \"$W/sp/null\" (character device)"
  run grep -c skipping <<<"$output"
  assert_output 5
  # the regular files and the folder arrived, nothing else
  run ls -A "$EXP/specials/sp" "$EXP/specials/sp/sub"
  assert_output "$EXP/specials/sp:"$'\n'"file"$'\n'"sub"$'\n\n'"$EXP/specials/sp/sub:"$'\n'"deep"
  cmp "$W/sp/file" "$EXP/specials/sp/file"
  cmp "$W/sp/sub/deep" "$EXP/specials/sp/sub/deep"
  # a symbolic link named on the command line is followed, as cp and scp do
  run "$PCP" -q "$W/sp/link" B:followed
  assert_success
  cmp "$W/sp/file" "$EXP/followed"
  mkdir "$W/real"
  printf r >"$W/real/r"
  ln -s real "$W/rlink"
  run "$PCP" -q -r "$W/rlink" B:
  assert_success
  cmp "$W/real/r" "$EXP/rlink/r"
}

@test "-r from a remote tree skips its symbolic links, FIFOs and sockets too, naming each (HOST:path) and its kind; exit 23" {
  mkdir -p "$EXP/rsp/sub"
  printf one >"$EXP/rsp/file"
  printf two >"$EXP/rsp/sub/deep"
  ln -s file "$EXP/rsp/link"
  mkfifo "$EXP/rsp/sub/fifo"
  python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$EXP/rsp/sock"
  mkdir "$W/rback"
  run "$PCP" -q -r --json B:rsp "$W/rback"
  assert_failure 23
  assert_line --partial "pcp: skipping non-regular file \"B:rsp/link\" (symbolic link)"
  assert_line --partial "pcp: skipping non-regular file \"B:rsp/sub/fifo\" (FIFO)"
  assert_line --partial "pcp: skipping non-regular file \"B:rsp/sock\" (socket)"
  run python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.startswith("{")]
print(sorted(r["path"] for r in rows if r.get("type") == "skipped"))
print(sorted(r["path"] for r in rows if r.get("type") == "file" and r["ok"]))' <<<"$output"
  assert_line "['B:rsp/link', 'B:rsp/sock', 'B:rsp/sub/fifo']"
  assert_line "['B:rsp/file', 'B:rsp/sub/deep']"
  run ls -A "$W/rback/rsp" "$W/rback/rsp/sub"
  assert_output "$W/rback/rsp:"$'\n'"file"$'\n'"sub"$'\n\n'"$W/rback/rsp/sub:"$'\n'"deep"
  cmp "$EXP/rsp/file" "$W/rback/rsp/file"
}

@test "local arguments are checked before piod is asked: a missing source or destination folder exits 3" {
  # no piod at all: the file is what is wrong, and pcp says so
  PIO_SOCKET=/nonexistent/sock run "$PCP" -q nosuchfile B:
  assert_failure 3
  assert_output "pcp: nosuchfile: No such file or directory"
  # several sources, one missing: nothing is copied
  printf data >"$W/here"
  run "$PCP" -q "$W/here" "$W/gone" B:precheck
  assert_failure 3
  assert_output "pcp: $W/gone: No such file or directory"
  [ ! -e "$EXP/precheck" ]
  mkdir "$W/adir"
  PIO_SOCKET=/nonexistent/sock run "$PCP" -q "$W/adir" B:
  assert_failure 3
  assert_output "pcp: $W/adir: is a directory (use -r)"
  mkfifo "$W/pipe"
  PIO_SOCKET=/nonexistent/sock run "$PCP" -q "$W/pipe" B:
  assert_failure 3
  assert_output "pcp: $W/pipe: not a regular file (FIFO)"
  # fetching: the local destination's folder must exist
  PIO_SOCKET=/nonexistent/sock run "$PCP" -q B:whatever "$W/no/such/dir/f"
  assert_failure 3
  assert_output "pcp: $W/no/such/dir: No such file or directory"
  PIO_SOCKET=/nonexistent/sock run "$PCP" -q B:a B:b "$W/here"
  assert_failure 3
  assert_output "pcp: $W/here: Not a directory (several sources go into a directory)"
  # ... and may be written by whoever runs pcp
  local ro
  ro=$(mktemp -d /tmp/pcp-ro.XXXXXX)
  chmod 755 "$ro"
  PIO_SOCKET=/nonexistent/sock run setpriv --reuid nobody --regid nogroup --clear-groups \
    "$PCP" -q B:k "$ro/k"
  rmdir "$ro"
  assert_failure 3
  assert_output "pcp: $ro: Permission denied"
}

@test "--dry-run lists each file with its size and the total, and copies nothing either way" {
  small_tree "$W/dt"
  local want
  want="$W/dt/a/b/deep -> B:dry/dt/a/b/deep (6 bytes)
$W/dt/a/f1 -> B:dry/dt/a/f1 (1000 bytes)
$W/dt/c/x.log -> B:dry/dt/c/x.log (3 bytes)
$W/dt/top -> B:dry/dt/top (0 bytes)
total: 4 files, 1009 bytes (1009 B) would be copied"
  # a send asks nobody: no piod needed
  PIO_SOCKET=/nonexistent/sock run --separate-stderr "$PCP" --dry-run -r "$W/dt" B:dry
  assert_success
  assert_output "$want"
  [ -z "$stderr" ]
  # with the piods up it is the same, and the export is left as it was
  run --separate-stderr "$PCP" --dry-run -r "$W/dt" B:dry
  assert_success
  assert_output "$want"
  [ ! -e "$EXP/dry" ]
  # a fetch lists the remote tree (or asks a file's size) and fetches nothing
  mkdir -p "$EXP/dsrc/s"
  printf 12345 >"$EXP/dsrc/s/five"
  printf ab >"$EXP/dsrc/two"
  run --separate-stderr "$PCP" --dry-run -r B:dsrc "$W/dget"
  assert_success
  assert_line "B:dsrc/s/five -> $W/dget/s/five (5 bytes)"
  assert_line "B:dsrc/two -> $W/dget/two (2 bytes)"
  assert_line --index 2 "total: 2 files, 7 bytes (7 B) would be copied"
  [ ! -e "$W/dget" ]
  run --separate-stderr "$PCP" --dry-run B:dsrc/two "$W/one"
  assert_success
  assert_output "B:dsrc/two -> $W/one (2 bytes)"$'\n'"total: 1 file, 2 bytes (2 B) would be copied"
  [ ! -e "$W/one" ]
  run find "$W" "$EXP/dsrc" -name '*.pcp-part'
  assert_output ""
  # a missing remote file: said, exit 23
  run "$PCP" --dry-run B:dsrc/nothing "$W/one"
  assert_failure 23
  assert_output --partial "No such file or directory"
}

@test "--exclude leaves out what matches the path below the source or the name, both ways" {
  small_tree "$W/dt"
  printf tmp >"$W/dt/a/skip.tmp"
  run "$PCP" -q -r --exclude '*.log' --exclude 'a/b' --exclude skip.tmp "$W/dt" B:ex
  assert_success
  run bash -c "cd '$EXP/ex/dt' && find . | sort"
  assert_output ".
./a
./a/f1
./c
./top"
  cmp "$W/dt/a/f1" "$EXP/ex/dt/a/f1"
  # the source itself goes by its name; a path pattern matches below it
  run --separate-stderr "$PCP" --dry-run -r --exclude 'dt' "$W/dt" B:ex2
  assert_success
  assert_output "total: 0 files, 0 bytes (0 B) would be copied"
  run --separate-stderr "$PCP" --dry-run -r --exclude '*/b' "$W/dt" B:ex2
  assert_success
  refute_output --partial "deep"
  assert_line --partial "a/f1 -> "
  # fetching: a remote tree's entries, and what is under an excluded folder
  run "$PCP" -q -r --exclude f1 --exclude c B:ex/dt "$W/exback"
  assert_success
  run bash -c "cd '$W/exback' && find . | sort"
  assert_output ".
./a
./top"
}

@test "--json: a line per file with its size, bytes, seconds and XXH3-64 digest (as xxhsum -H3), then a summary" {
  mkdir -p "$W/js/d"
  head -c 300000 /dev/urandom >"$W/js/big"
  printf x >"$W/js/d/one"
  : >"$W/js/d/empty"
  ln -s big "$W/js/ln"
  run --separate-stderr "$PCP" -q -r --json "$W/js" B:json
  assert_failure 23 # the symbolic link
  printf '%s\n' "$output" >"$W/json.out"
  # shellcheck disable=SC2016
  local py='
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["type"] == "file":
        print(r["path"], r["dest"], r["size"], r["bytes"], r["xxh3"], r["ok"], r["verified"],
              type(r["seconds"]).__name__, r["resumed_bytes"])
    elif r["type"] == "skipped":
        print("skipped", r["path"], r["kind"])
    else:
        print("summary", r["files"], r["bytes"], r["failed"], r["skipped"], r["ok"], r["exit"])'
  run python3 -c "$py" "$W/json.out"
  assert_success
  assert_output "skipped $W/js/ln symbolic link
$W/js/big B:json/js/big 300000 300000 $(xxh3_of "$W/js/big") True True float 0
$W/js/d/empty B:json/js/d/empty 0 0 $(xxh3_of "$W/js/d/empty") True True float 0
$W/js/d/one B:json/js/d/one 1 1 $(xxh3_of "$W/js/d/one") True True float 0
summary 3 300001 0 1 False 23"
  # fetching, without verification: the digest is still the file's
  run --separate-stderr "$PCP" -q --json --no-verify B:json/js/big "$W/back"
  assert_success
  printf '%s\n' "$output" >"$W/json.out"
  run python3 -c "$py" "$W/json.out"
  assert_output "B:json/js/big $W/back 300000 300000 $(xxh3_of "$W/js/big") True False float 0
summary 1 300000 0 0 True 0"
  cmp "$W/js/big" "$W/back"
  # a file that fails: ok false, its error, no digest
  run --separate-stderr "$PCP" -q --json B:json/nothing "$W/nothing"
  assert_failure 23
  run python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.argv[1].splitlines()]
print(rows[0]["ok"], rows[0]["xxh3"], "No such file or directory" in rows[0]["error"], rows[1]["exit"])' "$output"
  assert_output "False None True 23"
}

@test "-r on a terminal: one total progress line (bytes, files, rate, ETA) updated in place; elsewhere a line per file" {
  mkdir -p "$W/pt/x"
  local i
  for i in 1 2 3 4 5; do head -c $((i << 20)) /dev/urandom >"$W/pt/x/f$i"; done
  # script(1) gives pcp a terminal
  script -qec "'$PCP' -r '$W/pt' B:prog" /dev/null >"$W/tty.out"
  # the last state of the line; newlines: only the one at the end
  run python3 -c '
import re, sys
t = open(sys.argv[1], newline="").read().replace("\x1b[K", "")
parts = [p for p in re.split(r"[\r\n]", t) if p.strip()]
print(parts[-1].strip())
print(t.count("\n"))' "$W/tty.out"
  assert_line --index 0 --regexp '^100% +15\.0 MiB / 15\.0 MiB +5 / 5 files +[0-9.]+ [KMG]?i?B/s ETA +[0-9]+s$'
  assert_line --index 1 1
  refute_output --partial "pt/x/f"
  for i in 1 2 3 4 5; do cmp "$W/pt/x/f$i" "$EXP/prog/pt/x/f$i"; done
  # standard error no terminal: a line per file when it is done, as before
  run "$PCP" -r "$W/pt" B:prog2
  assert_success
  for i in 1 2 3 4 5; do assert_line --regexp "^$W/pt/x/f$i: $i\.0 MiB in [0-9.]+ s, "; done
  refute_output --partial "files"
}

@test "bash completion offers --dry-run and --exclude" {
  run bash -c 'source "$1"; COMP_WORDS=(pcp --dr); COMP_CWORD=1; _pio_pcp; printf "%s\n" "${COMPREPLY[@]}"' _ \
    "$PIO_SRC/tools/completion/pcp"
  assert_output "--dry-run"
  run bash -c 'source "$1"; COMP_WORDS=(pcp --ex); COMP_CWORD=1; _pio_pcp; printf "%s\n" "${COMPREPLY[@]}"' _ \
    "$PIO_SRC/tools/completion/pcp"
  assert_output "--exclude"
}
