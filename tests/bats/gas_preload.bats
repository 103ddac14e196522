#!/usr/bin/env bats
# gas_preload.bats - libpgas.so (LD_PRELOAD) against a stand-in dispatcher.
# SPDX-License-Identifier: BSD-3-Clause
#
# tests/lib/gas_mock.py speaks pfs/gas/wire.h on a Unix socket and applies
# the requests to a local folder ($D: pgas:/x is $D/x), logging one line per
# request ($LOG: "OP id=.. handle=.. off=.. len=.."). No network namespaces,
# no root: each test takes a second or two. Every program runs under timeout.

load "$BATS_TEST_DIRNAME/../lib/helpers"

LIB=$PIO_BUILD/lib/libpgas.so
MOCK=$PIO_SRC/tests/lib/gas_mock.py
PY=/usr/bin/python3

setup() {
  [ -f "$LIB" ] || fail "no $LIB: build it first (make $LIB)"
  W=$BATS_TEST_TMPDIR
  D=$W/root
  LOG=$W/mock.log
  mkdir -p "$D"
  # a short folder for the socket: sun_path holds 108 bytes
  SOCKDIR=$(mktemp -d /tmp/pgas.XXXXXX)
  export GAS_SOCKET=$SOCKDIR/gas.sock
}

teardown() {
  pio_cleanup
  rm -rf "$SOCKDIR"
}

# mock_start [ARGS...]: the stand-in dispatcher, ready; its pid in MOCK_PID
mock_start() {
  bg_start "$W/mock.out" "$PY" "$MOCK" --socket "$GAS_SOCKET" --dir "$D" --log "$LOG" "$@"
  MOCK_PID=$BG_PID
  pio_wait_until 10 test -S "$GAS_SOCKET"
}

# pg CMD...: CMD with libpgas.so preloaded
pg() {
  timeout 60 env LD_PRELOAD="$LIB" "$@"
}

# requests PATTERN: how many lines of the mock's log match the ERE PATTERN
requests() {
  grep -cE "$1" "$LOG" || true
}

# dd_both NAME DD-ARGS...: the same dd into $W/NAME and into pgas:/NAME;
# the two files must be equal
dd_both() {
  local name=$1; shift
  dd "$@" of="$W/$name" status=none
  run pg dd "$@" of="pgas:/$name" status=none
  assert_success
  cmp "$W/$name" "$D/$name"
}

# dd_read NAME DD-ARGS...: dd from $W/NAME and from pgas:/NAME print the same
dd_read() {
  local name=$1; shift
  dd if="$W/$name" "$@" status=none >"$W/want"
  pg dd if="pgas:/$name" "$@" status=none >"$W/got"
  cmp "$W/want" "$W/got"
}

@test "cp a 3 MiB file to pgas: and back, cat it: the bytes are the same" {
  mock_start
  head -c $((3 << 20)) /dev/urandom >"$W/src"
  run pg cp "$W/src" pgas:/x
  assert_success
  cmp "$W/src" "$D/x"
  pg cat pgas:/x >"$W/cat"
  cmp "$W/src" "$W/cat"
  run pg cp pgas:/x "$W/back"
  assert_success
  cmp "$W/src" "$W/back"
  # cp's target is write-only: its writes were queued (id 0), then one CLOSE
  [ "$(requests '^WRITE id=0 handle=.* off=0 ')" -ge 1 ]
  [ "$(requests '^WRITE id=[1-9]')" -eq 0 ]
  [ "$(requests '^READ ')" -ge 24 ] # 3 MiB in reads of at most cat's 128 KiB
}

@test "dd to pgas: (plain, seek=, conv=notrunc, oflag=append, bs over 1 MiB) matches dd to a local file" {
  mock_start
  head -c $((3 << 20)) /dev/urandom >"$W/src"
  dd_both y if="$W/src" bs=4k
  dd_both y if="$W/src" bs=4k seek=10 count=5         # O_RDWR, truncated at 40 KiB
  dd_both y if="$W/src" bs=4k seek=3 count=2 conv=notrunc
  dd_both y if="$W/src" bs=1000 count=7 conv=notrunc  # write-only, unaligned
  dd_both y if="$W/src" bs=4k skip=5 count=3 seek=1 conv=notrunc
  dd_both y if="$W/src" bs=3M count=1 conv=notrunc    # one write, three frames
  dd_both z if="$W/src" bs=1000 count=5 oflag=append conv=notrunc
  dd_both z if="$W/src" bs=1000 count=5 oflag=append conv=notrunc
  dd_both w if="$W/src" bs=1M count=2 conv=fsync
  # the O_RDWR opens (seek= without conv=notrunc) write behind too (issue 30)
  run requests '^WRITE id=[1-9]'
  assert_output 0
  [ "$(requests '^FSYNC ')" -eq 1 ]
}

@test "dd from pgas: with skip= and bs over 1 MiB reads what dd from a local file reads" {
  mock_start
  head -c $((3 << 20)) /dev/urandom >"$W/y"
  cp "$W/y" "$D/y"
  dd_read y bs=4k
  dd_read y bs=4k skip=7 count=20
  dd_read y bs=3000 skip=100 count=3
  dd_read y bs=2M skip=1              # a 2 MiB read is two READs
  dd_read y bs=1M skip=5              # past the end: nothing
  [ "$(requests '^READ .* len=1048576$')" -ge 2 ]
}

@test "paths without pgas: are untouched: no request reaches the dispatcher" {
  mock_start
  head -c 100000 /dev/urandom >"$W/src"
  run pg cp "$W/src" "$W/copy"
  assert_success
  cmp "$W/src" "$W/copy"
  run pg dd if="$W/src" of="$W/dd" bs=4k seek=2 status=none
  assert_success
  pg cat "$W/src" >"$W/cat"
  cmp "$W/src" "$W/cat"
  run pg "$PY" -c 'import shutil, sys; shutil.copyfile(sys.argv[1], sys.argv[2])' "$W/src" "$W/py"
  assert_success
  cmp "$W/src" "$W/py"
  [ ! -s "$LOG" ]
}

@test "no dispatcher listening: cp to pgas: fails naming the socket; a local cp still works" {
  head -c 10000 /dev/urandom >"$W/src"
  run pg cp "$W/src" pgas:/z
  assert_failure
  assert_output --partial "pgas: cannot reach the GAS dispatcher at $GAS_SOCKET: No such file or directory"
  [ "$(grep -c 'cannot reach' <<<"$output")" -eq 1 ] # once per process
  run pg cp "$W/src" "$W/copy"
  assert_success
  cmp "$W/src" "$W/copy"
}

@test "the dispatcher killed under an open write-only file: write/fsync/close fail with EIO, said once" {
  mock_start
  cat >"$W/drv.py" <<'EOF'
import errno, os, sys, time
fd = os.open("pgas:/f", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"a" * 1000)
os.fsync(fd)
open(sys.argv[1], "w").close()
while not os.path.exists(sys.argv[2]):
    time.sleep(0.01)
out = []
for name, call in (("write", lambda: os.write(fd, b"b" * 1000)), ("fsync", lambda: os.fsync(fd)),
                   ("close", lambda: os.close(fd))):
    try:
        call()
        out.append(name + "=ok")
    except OSError as e:
        out.append(name + "=" + errno.errorcode[e.errno])
print(" ".join(out), flush=True)
EOF
  bg_start "$W/drv.out" timeout 60 env LD_PRELOAD="$LIB" "$PY" "$W/drv.py" "$W/ready" "$W/go"
  local drv=$BG_PID
  pio_wait_until 20 test -e "$W/ready"
  kill -9 "$MOCK_PID"
  wait "$MOCK_PID" || true
  touch "$W/go"
  bg_wait "$drv"
  [ "$BG_RC" -eq 0 ]
  run cat "$W/drv.out"
  # the write may still be queued (the I/O thread not yet woken), the rest cannot
  assert_output --regexp "write=(ok|EIO) fsync=EIO close=EIO"
  assert_output --partial "pgas: the GAS dispatcher at $GAS_SOCKET went away ("
  assert_output --partial "writes not yet confirmed by fsync or close may be lost"
  [ "$(grep -c 'went away' "$W/drv.out")" -eq 1 ]
  head -c 1000 /dev/zero | tr '\0' a >"$W/a1000" # what the fsync confirmed is there
  cmp "$W/a1000" "$D/f"
}

@test "1000 small writes of one process: 1000 WRITE frames with id 0, one CLOSE, the file right" {
  mock_start
  run pg "$PY" -c '
import os
fd = os.open("pgas:/many", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for i in range(1000):
    os.write(fd, b"%039d\n" % i)
os.close(fd)'
  assert_success
  "$PY" -c 'import sys; sys.stdout.buffer.write(b"".join(b"%039d\n" % i for i in range(1000)))' >"$W/want"
  cmp "$W/want" "$D/many"
  [ "$(requests '^WRITE id=0 .* len=40$')" -eq 1000 ]
  [ "$(requests '^WRITE ')" -eq 1000 ]
  [ "$(requests '^CLOSE ')" -eq 1 ]
  [ "$(requests '^(OPEN|WRITE|CLOSE) ')" -eq "$(wc -l <"$LOG")" ]
}

@test "a read-write open writes behind (WRITE id 0) and reads its own writes; O_SYNC writes wait" {
  mock_start
  run pg "$PY" -c '
import os
fd = os.open("pgas:/rw", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
for i in range(100):
    os.write(fd, b"%039d\n" % i)
print(os.fstat(fd).st_size)
print(os.lseek(fd, 0, os.SEEK_END))
os.pwrite(fd, b"X" * 39 + b"\n", 40)
print(os.pread(fd, 40, 40) == b"X" * 39 + b"\n")
os.lseek(fd, 80, os.SEEK_SET)
print(os.read(fd, 39).decode())
os.ftruncate(fd, 120)
print(os.fstat(fd).st_size)
os.close(fd)'
  assert_success
  assert_output "4000
4000
True
000000000000000000000000000000000000002
120"
  printf '%039d\n' 0 >"$W/want"
  printf '%s\n' "$(head -c 39 /dev/zero | tr '\0' X)" >>"$W/want"
  printf '%039d\n' 2 >>"$W/want"
  cmp "$W/want" "$D/rw"
  # every write went behind: 101 WRITE frames, none waiting for a reply
  run requests '^WRITE id=0 '
  assert_output 101
  run requests '^WRITE id=[1-9]'
  assert_output 0
  # O_SYNC asks for each write to be applied before it returns
  run pg "$PY" -c '
import os
fd = os.open("pgas:/rw", os.O_RDWR | os.O_SYNC)
os.write(fd, b"y" * 10)
os.close(fd)'
  assert_success
  run requests '^WRITE id=[1-9]'
  assert_output 1
}

@test "an error in applying a queued write comes back from close, mapped (ENOSPC) and on stderr" {
  mock_start --fail-writes /full
  run pg "$PY" -c '
import os
fd = os.open("pgas:/full", os.O_WRONLY | os.O_CREAT, 0o644)
print("wrote", os.write(fd, b"x" * 100))
try:
    os.close(fd)
except OSError as e:
    print("close", os.strerror(e.errno))'
  assert_success
  assert_output --partial "wrote 100"
  assert_output --partial "close No space left on device"
  assert_output --partial "pgas: /full: no space left on the mock's storage"
  head -c 4096 /dev/zero >"$W/src"
  run pg cp "$W/src" pgas:/full
  assert_failure
  assert_output --partial "failed to close 'pgas:/full': No space left on device"
}

@test "stat, test -e, rm, python's open/seek/read, fork: pgas files behave as files" {
  mock_start
  printf 'hello pgas\n' >"$D/s"
  run pg stat -c '%s %F %a' pgas:/s
  assert_success
  assert_output "11 regular file 644"
  pg bash -c 'test -f pgas:/s && ! test -e pgas:/none'
  run pg "$PY" -c '
import os
with open("pgas:/p", "w") as f:
    f.write("0123456789" * 10)
with open("pgas:/p", "rb") as f:
    f.seek(95)
    print(f.read(), os.path.getsize("pgas:/p"), flush=True)
fd = os.open("pgas:/p", os.O_WRONLY)
if os.fork() == 0:
    try:
        os.write(fd, b"x")           # an inherited pgas descriptor is not one
    except OSError as e:
        print("child", os.strerror(e.errno), flush=True)
    os._exit(0)
os.wait()
os.close(fd)'
  assert_success
  assert_output --partial "b'56789' 100"
  assert_output --partial "child Bad file descriptor"
  run pg rm pgas:/s
  assert_success
  [ ! -e "$D/s" ]
}
