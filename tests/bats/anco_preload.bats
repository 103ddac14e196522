#!/usr/bin/env bats
# anco_preload.bats - libanco.so (LD_PRELOAD): unmodified programs (md5sum,
# cat, dd, cp, python3, a plain-POSIX MPI reader) read the files under
# $ANCO_PATHS through anco, the job's cooperative read cache.
# SPDX-License-Identifier: BSD-3-Clause
#
# Each test that needs a piod starts a loopback pair (tests/lib/piod.bash)
# and joins system A ($PIO_SOCK_A). With ANCO_STATS=1 every process that
# joined the cache prints at exit one line "anco: rank R: local L remote M
# fs F ..." on stderr: a process that never served a file prints none, and
# F > 0 shows the cache read the file (not libc). Every program runs under
# timeout. The served folder is $D, an unserved one $U. dd's block sizes
# are multiples of 4 KiB: its buffer comes from aligned_alloc(4096, bs),
# which ASan (preloaded in a sanitizer build) refuses for other sizes.

load "$BATS_TEST_DIRNAME/../lib/helpers"
load "$BATS_TEST_DIRNAME/../lib/piod"

LIB=$PIO_BUILD/lib/libanco.so
READER=$PIO_BUILD/tests/mpi/anco-mpi-read
PY=/usr/bin/python3
MIB=$((1 << 20))
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 --bind-to none)

# In a sanitizer build libanco.so carries the sanitizer, and the programs it
# is preloaded into (coreutils, python3) do not: the runtime goes first in
# LD_PRELOAD, ASan is told not to insist on being first in the link order
# nor to report the uninstrumented programs' leaks, and UCX's memory hooks
# are off under TSan (they crash it at thread exit).
SAN_PRELOAD=
SAN_VARS=()
case $PIO_BUILD in
  *asan*)
    SAN_PRELOAD=$(gcc -print-file-name=libasan.so):
    export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0
    SAN_VARS=(-x ASAN_OPTIONS) ;;
  *tsan*)
    SAN_PRELOAD=$(gcc -print-file-name=libtsan.so):
    export UCX_MEM_EVENTS=n TSAN_OPTIONS="suppressions=$PIO_SRC/tests/lib/tsan.supp ${TSAN_OPTIONS:-}"
    SAN_VARS=(-x UCX_MEM_EVENTS -x TSAN_OPTIONS) ;;
  *ubsan*)
    SAN_PRELOAD=$(gcc -print-file-name=libubsan.so): ;;
esac
PRELOAD=$SAN_PRELOAD$LIB

setup() {
  [ -f "$LIB" ] && [ -x "$READER" ] || fail "not built: run make ($LIB, $READER)"
  W=$BATS_TEST_TMPDIR
  D=$W/served
  U=$W/other
  mkdir -p "$D" "$U"
}

teardown() {
  pio_cleanup
}

# ap CMD...: CMD with libanco.so preloaded, serving $D, counters on, on piod A
ap() {
  timeout 120 env LD_PRELOAD="$PRELOAD" PIO_SOCKET="${PIO_SOCK_A:-}" ANCO_PATHS="$D" ANCO_STATS=1 "$@"
}

# fs_reads: the sum of the "fs" counters of the stats lines on stdin
fs_reads() {
  awk '/^anco: rank [0-9]+:/ { for (i = 1; i < NF; i++) if ($i == "fs") s += $(i + 1) }
       END { print s + 0 }'
}

# stats_lines FILE: how many stats lines FILE has
stats_lines() {
  grep -cE '^anco: rank [0-9]+:' "$1" || true
}

digest() {
  md5sum <"$1" | cut -d' ' -f1
}

@test "md5sum of a 64 MiB file under libanco.so: the same digest, and the cache read the file" {
  pio_pair_loopback "$W" 1
  head -c $((64 * MIB)) /dev/urandom >"$D/big"
  local want
  want=$(digest "$D/big")
  ap md5sum "$D/big" >"$W/out" 2>"$W/err" || fail "md5sum failed: $(cat "$W/err")"
  cat "$W/err"
  [ "$(cut -d' ' -f1 "$W/out")" = "$want" ]
  [ "$(stats_lines "$W/err")" -eq 1 ]
  [ "$(fs_reads <"$W/err")" -gt 0 ]
  [ "$(grep -c '^libanco:' "$W/err")" -eq 0 ]
  # a relative path, through ".." and a doubled slash, names the same file
  (cd "$U" && ap md5sum ../served//big) >"$W/out2" 2>"$W/err2"
  [ "$(cut -d' ' -f1 "$W/out2")" = "$want" ]
  [ "$(fs_reads <"$W/err2")" -gt 0 ]
}

@test "outside ANCO_PATHS and writes pass through: cp out of the folder, dd and cat > into it, O_RDWR and O_WRONLY opens" {
  pio_pair_loopback "$W" 1
  head -c $((3 * MIB + 123)) /dev/urandom >"$D/src"
  head -c $((2 * MIB + 7)) /dev/urandom >"$U/other"
  # cp: the served source is read (the process joins the cache), the
  # unserved copy written; identical
  ap cp "$D/src" "$U/copy" 2>"$W/err"
  cmp "$D/src" "$U/copy"
  [ "$(stats_lines "$W/err")" -eq 1 ]
  # an unserved file only: the cache is never joined (no stats line)
  ap md5sum "$U/other" >"$W/out" 2>"$W/err"
  [ "$(cut -d' ' -f1 "$W/out")" = "$(digest "$U/other")" ]
  [ "$(stats_lines "$W/err")" -eq 0 ]
  # writes into the served folder: dd (whole, then a patch without
  # truncation), a shell redirection; none is served
  ap dd if="$U/other" of="$D/dd" bs=64k status=none 2>"$W/err"
  ap dd if="$D/src" of="$D/dd" bs=4k count=12 seek=33333 oflag=seek_bytes conv=notrunc status=none \
    2>>"$W/err"
  cp "$U/other" "$W/dd.want"
  dd if="$D/src" of="$W/dd.want" bs=4k count=12 seek=33333 oflag=seek_bytes conv=notrunc status=none
  cmp "$W/dd.want" "$D/dd"
  ap bash -c 'cat "$1" >"$2"' - "$U/other" "$D/catted" 2>>"$W/err"
  cmp "$U/other" "$D/catted"
  [ "$(stats_lines "$W/err")" -eq 1 ] # only the dd that read $D/src joined
  # O_RDWR and O_WRONLY opens are libc's: what they write is read back at
  # once, by them and by a served read-only open afterwards
  run ap "$PY" -c '
import os, sys
p = sys.argv[1]
fd = os.open(p, os.O_RDWR)
os.pwrite(fd, b"R" * 5000, 100000)
print("rdwr", os.pread(fd, 5000, 100000) == b"R" * 5000)
os.close(fd)
fd = os.open(p, os.O_WRONLY)
os.pwrite(fd, b"W" * 3000, 200000)
os.close(fd)
with open(p, "rb") as f:
    f.seek(99990)
    d = f.read(110000)
print("served", d[10:5010] == b"R" * 5000, d[100010:103010] == b"W" * 3000)' "$D/src"
  echo "$output"
  assert_success
  assert_output --partial "rdwr True"
  assert_output --partial "served True True"
  assert_output --regexp 'anco: rank 0: .* fs [1-9]'
}

@test "cat, dd (its input dup2'ed onto 0, skip=), python3 (lseek, readv, sendfile, fork) read the right bytes through the cache" {
  pio_pair_loopback "$W" 1
  head -c $((5 * MIB + 4321)) /dev/urandom >"$D/f"
  ap cat "$D/f" >"$W/cat" 2>"$W/err"
  cmp "$D/f" "$W/cat"
  ap dd if="$D/f" of="$W/dd" bs=4k skip=231001 iflag=skip_bytes status=none 2>>"$W/err"
  dd if="$D/f" of="$W/dd.want" bs=4k skip=231001 iflag=skip_bytes status=none
  cmp "$W/dd.want" "$W/dd"
  [ "$(stats_lines "$W/err")" -eq 2 ]
  [ "$(grep -E '^anco: rank' "$W/err" | grep -cE ' fs [1-9]')" -eq 2 ]
  run ap "$PY" -c '
import os, shutil, sys
p, cp = sys.argv[1], sys.argv[2]
want = open(p, "rb").read()
fd = os.open(p, os.O_RDONLY)
a = os.read(fd, 1000)
os.lseek(fd, 12345, os.SEEK_SET)
b = bytearray(100); c = bytearray(70000)
n = os.readv(fd, [b, c])
print("readv", a == want[:1000], n == 70100, bytes(b + c) == want[12345:82445],
      os.lseek(fd, 0, os.SEEK_CUR) == 82445, os.lseek(fd, -10, os.SEEK_END) == len(want) - 10)
os.lseek(fd, 500000, os.SEEK_SET)
os.read(fd, 1000)
pid = os.fork()
if pid == 0:   # the child reads on with libc, from the same place
    os.write(1, b"child %r\n" % (os.read(fd, 2000) == want[501000:503000]))
    os._exit(0)
os.waitpid(pid, 0)
shutil.copyfile(p, cp)' "$D/f" "$W/py"
  echo "$output"
  assert_success
  assert_output --partial "readv True True True True True"
  assert_output --partial "child True"
  assert_output --regexp 'anco: rank 0: .* fs [1-9]'
  cmp "$D/f" "$W/py"
}

@test "4 MPI ranks read one file with plain POSIX pread under libanco.so: the same sum, and the ranks shared its blocks" {
  pio_pair_loopback "$W" 1
  local blocks=32 want fs
  head -c $((blocks * MIB)) /dev/urandom >"$D/data"
  run timeout 120 "${MPIRUN[@]}" -np 4 "$READER" "$D/data"
  assert_success
  want=$(grep '^anco-mpi-read:' <<<"$output")
  [ -n "$want" ]
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 300 "${MPIRUN[@]}" -np 4 -x LD_PRELOAD="$PRELOAD" \
    -x ANCO_PATHS="$D" -x ANCO_STATS=1 -x PIO_SOCKET "${SAN_VARS[@]}" "$READER" "$D/data"
  echo "$output"
  assert_success
  assert_output --partial "$want"
  [ "$(grep -cE '^anco: rank [0-3]:' <<<"$output")" -eq 4 ]
  refute_output --partial "libanco:"
  fs=$(fs_reads <<<"$output")
  echo "blocks $blocks, file-system reads of the 4 ranks $fs"
  [ "$fs" -ge "$blocks" ]
  [ "$fs" -lt $((4 * blocks)) ]
}

@test "no piod: md5sum under libanco.so still prints the right digest, and one line says the cache is off" {
  head -c $((5 * MIB)) /dev/urandom >"$D/f"
  local want
  want=$(digest "$D/f")
  PIO_SOCK_A=$W/nobody.sock run ap md5sum "$D/f" "$D/f"
  echo "$output"
  assert_success
  [ "$(grep -c "^$want  $D/f\$" <<<"$output")" -eq 2 ]
  [ "$(grep -c '^libanco:' <<<"$output")" -eq 1 ]
  grep '^libanco: ' <<<"$output" | grep -F "$W/nobody.sock" | grep -q ': serving reads without the cache$'
  [ "$(grep -cE '^anco: rank' <<<"$output")" -eq 0 ]
}
