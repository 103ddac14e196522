#!/usr/bin/env bats
# gas.bats - GAS, the gather-arrange-scatter pipeline: unmodified programs
# write through libpgas.so and a gas-dispatcher to pfs, on a test bed of 7
# hosts (tests/lib/pfs.bash): h1..h4 one I/O server each, h5 the metadata
# server "pfs.gmds", h6 the compute host with three dispatchers (gas.a with
# the defaults; gas.d and gas.n, the latter --no-arrange, for the
# comparison, with flushes that do not depend on scheduling: see there),
# h7 a host that reads with `pfs`.
# SPDX-License-Identifier: BSD-3-Clause

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"
source "$BATS_TEST_DIRNAME/../lib/pfs.bash"

MIB=$((1 << 20))
BTIO=$PIO_BUILD/bench/gas-btio
PGAS=$PIO_BUILD/lib/libpgas.so

# gas_up NAME SOCKET [ARGS...]: a dispatcher on h6 serving SOCKET
gas_up() {
  local name=$1 sock=$2 i; shift 2
  _pfs_launch "$name" 6 "$PIO_BUILD/sbin/gas-dispatcher" --socket "$sock" --mds pfs.gmds \
    --name "$name" "$@"
  for ((i = 0; i < 100; i++)); do
    [ -S "$sock" ] && grep -q serving "$DIR/$name.log" && return 0
    sleep 0.1
  done
  cat "$DIR/$name.log" >&2
  return 1
}

setup_file() {
  [ "$(id -u)" -eq 0 ] || return 0
  export BED DIR
  BED=$(pio_unique_name gas)
  DIR=$BATS_FILE_TMPDIR/gas
  pfs_cluster_up "$DIR" "$BED" 1gbit
  local h
  for h in 1 2 3 4; do pfs_iod_start "$DIR" "$h" "pfs.g.$h" --threads 4 --qos off --mds pfs.gmds; done
  pfs_mds_start "$DIR" pfs.gmds "$DIR/g.db" pfs.g.1,pfs.g.2,pfs.g.3,pfs.g.4
  pfs_ready 6 pfs.gmds 90
  # files under /t are striped over the 4 servers in 64 KiB units
  pfs_on 6 pfs --mds pfs.gmds mkdir /t
  pfs_on 6 pfs --mds pfs.gmds setstripe -c 4 -S 64K /t
  gas_up gas.a "$DIR/gas.sock"
  # a sub-buffer larger than what one server gets and no timer: they flush
  # only when a process's fsync or close asks (see the comparison below)
  gas_up gas.d "$DIR/gas-d.sock" --sub-buffer 1M --interval 3600000
  gas_up gas.n "$DIR/gas-n.sock" --sub-buffer 1M --interval 3600000 --no-arrange
}

teardown_file() {
  pio_cleanup
}

setup() {
  pio_need_root
  W=$BATS_TEST_TMPDIR
}

# gas_on SOCKET CMD...: CMD on h6 with libpgas.so preloaded, talking to SOCKET.
# In a sanitizer build the test programs carry ASan, whose runtime wants to
# be first in the process; libpgas.so (built without, see pfs/module.mk) is
# preloaded before it, which ASan accepts when told so. gas-btio forks its
# writers after its first pgas open started libpgas's I/O thread, which TSan
# refuses unless told (the children only start threads of their own).
gas_on() {
  local sock=$1; shift
  pfs_on 6 env LD_PRELOAD="$PGAS" GAS_SOCKET="$sock" \
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
    TSAN_OPTIONS="${TSAN_OPTIONS:-} die_after_fork=0" "$@"
}

# pget PATH LOCAL: fetch a pfs file from h7 (another host than the writer's)
pget() {
  pfs_on 7 pfs --mds pfs.gmds get "$1" "$2"
}

# io_sum FIELD: FIELD of the servers' "io" lines, summed (pfs qos)
io_sum() {
  pfs_on 7 pfs --mds pfs.gmds qos | awk -v f="$1" '
    / io / { for (i = 1; i <= NF; i++) if (split($i, kv, "=") == 2 && kv[1] == f) s += kv[2] }
    END { print s + 0 }'
}

@test "cp, cat and dd run unmodified on pgas: paths and give back the source" {
  head -c $((5 * MIB + 123)) /dev/urandom >"$W/src"
  run gas_on "$DIR/gas.sock" cp "$W/src" pgas:/t/cp
  assert_success
  gas_on "$DIR/gas.sock" cat pgas:/t/cp >"$W/cat"
  cmp "$W/src" "$W/cat"
  run gas_on "$DIR/gas.sock" cp pgas:/t/cp "$W/back"
  assert_success
  cmp "$W/src" "$W/back"
  pget /t/cp "$W/h7"
  cmp "$W/src" "$W/h7"

  # dd: whole file in 4 KiB blocks, then a patch in the middle without truncation
  run gas_on "$DIR/gas.sock" dd if="$W/src" of=pgas:/t/dd bs=4k status=none
  assert_success
  cp "$W/src" "$W/dd.local"
  head -c 100000 /dev/urandom >"$W/patch"
  run gas_on "$DIR/gas.sock" dd if="$W/patch" of=pgas:/t/dd bs=1000 seek=777 conv=notrunc status=none
  assert_success
  dd if="$W/patch" of="$W/dd.local" bs=1000 seek=777 conv=notrunc status=none
  pget /t/dd "$W/dd.h7"
  cmp "$W/dd.local" "$W/dd.h7"
  # and reading with skip
  gas_on "$DIR/gas.sock" dd if=pgas:/t/dd of="$W/skip" bs=64k skip=3 status=none
  dd if="$W/dd.local" of="$W/skip.local" bs=64k skip=3 status=none
  cmp "$W/skip.local" "$W/skip"
}

@test "statfs, statvfs and fstatvfs of a pgas: path answer pfs df's space and objects" {
  head -c $((3 * MIB)) /dev/urandom >"$W/s"
  run gas_on "$DIR/gas.sock" cp "$W/s" pgas:/t/sfs
  assert_success
  run pfs_on 7 pfs --mds pfs.gmds df
  assert_success
  total=$(awk '$1 == "total" { print $2, $3, $4 }' <<<"$output")
  read -r used avail objects <<<"$total"
  [ "$objects" -ge 4 ] || fail "pfs df: $output"
  # statfs (stat -f): 4 KiB blocks; used blocks and objects are exact, the
  # free space moves with whatever else writes to the servers' disks
  run gas_on "$DIR/gas.sock" stat -f -c '%S %b %f %a %c %d' pgas:/t
  assert_success
  read -r bs blocks bfree bavail files ffree <<<"$output"
  assert_equal "$bs" 4096
  assert_equal "$((blocks - bfree))" "$((used / 4096))"
  assert_equal "$((files - ffree))" "$objects"
  assert_equal "$bfree" "$bavail"
  [ $(((bavail * 4096 - avail) / MIB)) -le 512 ] || fail "avail $bavail blocks vs pfs df $avail"
  [ $(((avail - bavail * 4096) / MIB)) -le 512 ] || fail "avail $bavail blocks vs pfs df $avail"
  # statvfs and fstatvfs (python's os module)
  run gas_on "$DIR/gas.sock" python3 -c '
import os
s = os.statvfs("pgas:/t/sfs")
fd = os.open("pgas:/t/sfs", os.O_RDONLY)
f = os.fstatvfs(fd)
os.close(fd)
print(s.f_frsize, s.f_blocks - s.f_bfree, s.f_files - s.f_ffree, f.f_blocks - f.f_bfree, f.f_files - f.f_ffree)'
  assert_success
  assert_output "4096 $((used / 4096)) $objects $((used / 4096)) $objects"
  # a missing path: statfs fails with ENOENT, as on any file system
  run ! gas_on "$DIR/gas.sock" stat -f pgas:/t/no-such-file
  assert_output --partial "No such file"
}

@test "16 processes' interleaved 40-byte records equal their local file; after close h7 reads them" {
  gas_on "$DIR/gas.sock" gas-stat --socket "$DIR/gas.sock" --reset >/dev/null
  run gas_on "$DIR/gas.sock" "$BTIO" --procs 16 --grid 16 --steps 3 --out pgas:/t/btio
  assert_success
  assert_output --partial "btio procs=16"
  # no fsync: close returning is the promise; h7 reads right away
  pget /t/btio "$W/btio.h7"
  "$BTIO" --procs 16 --grid 16 --steps 3 --out "$W/btio.local"
  cmp "$W/btio.local" "$W/btio.h7"
  run "$BTIO" --procs 16 --grid 16 --steps 3 --verify "$W/btio.h7"
  assert_output --partial "verify ok"
  # the dispatcher gathered 16 x 16^3 x 3 / 16 records per process and merged most
  run gas_on "$DIR/gas.sock" gas-stat --socket "$DIR/gas.sock"
  assert_output --regexp "received=12288 "
  local sent merged
  sent=$(grep -o 'sent=[0-9]*' <<<"$output" | cut -d= -f2)
  merged=$(grep -o 'merged=[0-9]*' <<<"$output" | cut -d= -f2)
  [ "$sent" -gt 0 ]
  [ "$merged" -gt $((12288 / 2)) ]
  # --json: the same counters, numbers as numbers
  run gas_on "$DIR/gas.sock" gas-stat --socket "$DIR/gas.sock" --json
  assert_success
  run python3 -c '
import json, sys
d = json.loads(sys.argv[1])
print(d["received"], d["sent"] == int(sys.argv[2]), d["merged"] == int(sys.argv[3]))' \
    "$output" "$sent" "$merged"
  assert_output "12288 True True"
}

# gas_stat SOCKET FIELD: one counter of the dispatcher at SOCKET (gas-stat)
gas_stat() {
  gas_on "$1" gas-stat --socket "$1" | grep -o " $2=[0-9a-z]*" | cut -d= -f2
}

@test "arranged vs --no-arrange: the same bytes, one request per server instead of one per record" {
  local d=$DIR/gas-d.sock n=$DIR/gas-n.sock req_a seek_a req_n seek_n
  # gas.d and gas.n flush only on a barrier (1 MiB sub-buffers, no timer),
  # and gas-btio --end-barrier lets no process close before every process's
  # writes are in the dispatcher's sub-buffers: the first close flushes each
  # server's records at once, whatever order the 16 processes' records came
  # in, and the counts below are the same on every run
  gas_on "$d" gas-stat --socket "$d" --reset >/dev/null
  pfs_on 7 pfs --mds pfs.gmds qos --reset >/dev/null
  run gas_on "$d" "$BTIO" --procs 16 --grid 16 --steps 2 --end-barrier --out pgas:/t/arr
  assert_success
  req_a=$(io_sum writes) seek_a=$(io_sum seeks)
  gas_on "$d" gas-stat --socket "$d"
  gas_on "$n" gas-stat --socket "$n" --reset >/dev/null
  pfs_on 7 pfs --mds pfs.gmds qos --reset >/dev/null
  run gas_on "$n" "$BTIO" --procs 16 --grid 16 --steps 2 --end-barrier --out pgas:/t/noarr
  assert_success
  req_n=$(io_sum writes) seek_n=$(io_sum seeks)
  gas_on "$n" gas-stat --socket "$n"
  echo "arranged: $req_a requests, $seek_a seeks; not arranged: $req_n requests, $seek_n seeks" >&3
  pget /t/arr "$W/a"
  pget /t/noarr "$W/n"
  cmp "$W/a" "$W/n"
  # 8192 records of 40 bytes, 320 KiB: five 64 KiB stripe units over the 4
  # servers (the first server holds units 0 and 4, one range of its object)
  [ "$(gas_stat "$d" received)" -eq 8192 ]
  # the flushes were what the settings promise: one per server, on a barrier
  [ "$(gas_stat "$d" flushes)" -eq 4 ]
  [ "$(gas_stat "$d" full)" -eq 0 ]
  [ "$(gas_stat "$d" timer)" -eq 0 ]
  # arranged: each server's records, sorted and merged, are one request
  [ "$(gas_stat "$d" sent)" -eq 4 ]
  [ "$req_a" -eq 4 ]
  # not arranged: every piece (a record, or part of one cut at a 4 KiB
  # block or a stripe unit) is a request
  [ "$(gas_stat "$n" received)" -eq 8192 ]
  [ "$(gas_stat "$n" merged)" -eq 0 ]
  [ "$req_n" -eq "$(gas_stat "$n" pieces)" ]
  [ "$req_n" -ge 8192 ]
  # and the seeks between them: at most one per request arranged
  [ "$seek_a" -le 4 ]
  [ $((seek_a * 2)) -le "$seek_n" ]
}

@test "at default settings, arranged: at most one request per 64 KiB unit and one per object, whatever the order" {
  local a=$DIR/gas.sock n=$DIR/gas-n.sock req_a seek_a req_n
  # gas.a runs at the defaults: 64 KiB sub-buffers that grow while their
  # requests merge, and the idle timer. Whenever a buffer fills or idles
  # while the 16 processes write, the flush writes only runs of whole 64 KiB
  # units of an object and holds the rest back; each such request is at
  # least one unit and no unit is written twice, so there are at most 5
  # (the file's 320 KiB: two units on the first server, one on each other).
  # --end-barrier: the first close comes after every record is in, and
  # writes the rest: per object at most one extent more than the runs
  # written before. So at most 5 + 4 requests, in any order and at any speed
  # of the processes (held bytes would wait 30 s).
  gas_on "$a" gas-stat --socket "$a" --reset >/dev/null
  pfs_on 7 pfs --mds pfs.gmds qos --reset >/dev/null
  run gas_on "$a" "$BTIO" --procs 16 --grid 16 --steps 2 --end-barrier --out pgas:/t/def
  assert_success
  req_a=$(io_sum writes) seek_a=$(io_sum seeks)
  gas_on "$a" gas-stat --socket "$a"
  gas_on "$n" gas-stat --socket "$n" --reset >/dev/null
  pfs_on 7 pfs --mds pfs.gmds qos --reset >/dev/null
  run gas_on "$n" "$BTIO" --procs 16 --grid 16 --steps 2 --end-barrier --out pgas:/t/defn
  assert_success
  req_n=$(io_sum writes)
  echo "defaults: $req_a requests, $seek_a seeks; not arranged: $req_n requests" >&3
  pget /t/def "$W/a"
  run "$BTIO" --grid 16 --steps 2 --verify "$W/a"
  assert_output --partial "verify ok"
  [ "$(gas_stat "$a" received)" -eq 8192 ]
  [ "$req_a" -ge 4 ]
  [ "$req_a" -le 9 ]
  [ "$seek_a" -le "$req_a" ]
  # not arranged, every piece is a request: 8192 and more; arranged -95 % or better
  [ "$req_n" -ge 8192 ]
  [ $((req_a * 20)) -le "$req_n" ]
  # what the servers got is what gas.a says it sent
  [ "$(gas_stat "$a" sent)" -eq "$req_a" ]
}

@test "a close waits for the file's other active writers at most --close-wait; the bytes are right" {
  # A writes a record of its own every 10 ms for 4 s; B opens the same file
  # meanwhile, writes one record and closes: B's close may wait for A (it is
  # still writing) but not past the 1 s limit, and both records survive
  run gas_on "$DIR/gas.sock" timeout 60 /usr/bin/python3 -c '
import os, time
pid = os.fork()
if pid == 0:
    fd = os.open("pgas:/t/cw", os.O_WRONLY | os.O_CREAT, 0o644)
    end, i = time.monotonic() + 4, 0
    while time.monotonic() < end:
        os.pwrite(fd, b"a" * 40, 40 * (i % 100))
        i += 1
        time.sleep(0.01)
    os.close(fd)
    os._exit(0)
time.sleep(0.5)
fd = os.open("pgas:/t/cw", os.O_WRONLY | os.O_CREAT, 0o644)
os.pwrite(fd, b"b" * 40, 4000)
t = time.monotonic()
os.close(fd)
dt = time.monotonic() - t
_, st = os.waitpid(pid, 0)
print("close %d ms, writer %d" % (dt * 1000, st))'
  assert_success
  echo "$output" >&3
  assert_output --regexp "^close [0-9]+ ms, writer 0$"
  local ms=${output#close }
  ms=${ms%% *}
  [ "$ms" -le 2500 ]
  pget /t/cw "$W/cw"
  { head -c 4000 /dev/zero | tr '\0' a; head -c 40 /dev/zero | tr '\0' b; } >"$W/want"
  cmp "$W/want" "$W/cw"
}

@test "gfortran unformatted sequential and direct access through the hook equal local files" {
  local prog=$PIO_BUILD/tests/prog/gas_fortran
  run gas_on "$DIR/gas.sock" "$prog" pgas:/t/f.seq pgas:/t/f.dir
  assert_success
  assert_output --partial "gas_fortran: ok"
  (cd "$W" && "$prog" "$W/seq.local" "$W/dir.local")
  pget /t/f.seq "$W/seq.h7"
  pget /t/f.dir "$W/dir.h7"
  cmp "$W/seq.local" "$W/seq.h7"
  cmp "$W/dir.local" "$W/dir.h7"
}

@test "a process sending garbage is cut off; the dispatcher serves the others" {
  run pfs_on 6 python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b"GET / HTTP/1.0\r\n" * 10 + bytes(range(256)) * 4)
s.settimeout(10)
print("closed" if s.recv(100) == b"" else "answered")' "$DIR/gas.sock"
  assert_output "closed"
  grep -q "not a GAS frame" "$DIR/gas.a.log"
  head -c 300000 /dev/urandom >"$W/src"
  run gas_on "$DIR/gas.sock" cp "$W/src" pgas:/t/after
  assert_success
  pget /t/after "$W/back"
  cmp "$W/src" "$W/back"
}

@test "the dispatcher killed: the next call fails clearly; what fsync acknowledged survives" {
  head -c $((2 * MIB)) /dev/urandom >"$W/a"
  cat >"$W/writer.py" <<'EOF'
import os, sys, time
fd = os.open("pgas:/t/killed", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
data = open(sys.argv[1], "rb").read()
for i in range(0, len(data), 40):
    os.write(fd, data[i:i + 40])
os.fsync(fd)
print("synced", flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)
try:
    for i in range(1000):
        os.write(fd, b"x" * 40)
    os.fsync(fd)
    print("no error")
except OSError as e:
    print("error:", e.strerror)
EOF
  gas_on "$DIR/gas.sock" python3 "$W/writer.py" "$W/a" "$W/go" >"$W/out" 2>"$W/err" &
  local pid=$! i
  for ((i = 0; i < 600; i++)); do grep -q synced "$W/out" && break; sleep 0.1; done
  grep -q synced "$W/out"
  pfs_kill9 "$DIR/gas.a.pid"
  touch "$W/go"
  wait "$pid" || true
  cat "$W/out" "$W/err"
  grep -q "error: Input/output error" "$W/out"
  grep -q "went away" "$W/err"
  # everything before the acknowledged fsync is there, from another host
  pget /t/killed "$W/got"
  cmp -n $((2 * MIB)) "$W/a" "$W/got"
  # a new dispatcher takes over the socket (the old one left it behind)
  gas_up gas.a2 "$DIR/gas.sock"
  run gas_on "$DIR/gas.sock" cp "$W/a" pgas:/t/again
  assert_success
}

# A random mix on read-write pgas: files (tests/prog/gas_rwmix.c) through
# the dispatcher with the defaults on $DIR/gas.sock (gas.a, or gas.a2 when
# the case above has run), every read compared with a local model file.
# Each write call is one WRITE frame (none is above 1 MiB), so gas-stat's
# received and bytes grow by exactly the program's write calls and bytes.
# That the writes went behind (returned before the dispatcher had them)
# is not visible in those counters, and its sync flushes depend on the
# timer: gas_preload.bats checks the frames themselves. The last case
# runs the mix through a dispatcher of its own that holds the writes until
# a read asks, where the counters are deterministic.

# rwmix_counts: "WRITES BYTES" from gas_rwmix's last line in $output
rwmix_counts() {
  sed -n 's/^gas_rwmix: .*ok .* writes=\([0-9]*\) bytes=\([0-9]*\) .*/\1 \2/p' <<<"$output"
}

@test "a random mix of writes, reads, seeks, fstat and ftruncate on a read-write file reads its own writes" {
  local prog=$PIO_BUILD/tests/prog/gas_rwmix sock=$DIR/gas.sock seed r0 b0 writes bytes
  for seed in 1 2 3; do
    r0=$(gas_stat "$sock" received) b0=$(gas_stat "$sock" bytes)
    run gas_on "$sock" "$prog" --seed "$seed" --ops 2000 "pgas:/t/rwmix.$seed" "$W/model.$seed"
    assert_success
    assert_output --regexp "^gas_rwmix: ok seed=$seed ops=2000 writes=[0-9]+ bytes=[0-9]+ size=[0-9]+$"
    read -r writes bytes < <(rwmix_counts)
    assert_equal "$(($(gas_stat "$sock" received) - r0))" "$writes"
    assert_equal "$(($(gas_stat "$sock" bytes) - b0))" "$bytes"
    # closed: another host reads what the model holds
    pget "/t/rwmix.$seed" "$W/h7.$seed"
    cmp "$W/model.$seed" "$W/h7.$seed"
  done
}

@test "two processes of h6 take turns writing and reading one read-write file; each reads the other's writes" {
  local prog=$PIO_BUILD/tests/prog/gas_rwmix sock=$DIR/gas.sock r0 b0 writes bytes
  r0=$(gas_stat "$sock" received) b0=$(gas_stat "$sock" bytes)
  # 6 rounds, the writer making one fstat round trip before it tells the
  # reader (over a pipe) which ranges it wrote: A writes in rounds 0, 2, 4
  # and B reads, B writes in rounds 1, 3, 5 and A reads
  run gas_on "$sock" "$prog" --pair --seed 11 --rounds 6 --ops 150 pgas:/t/rwpair "$W/pair.model"
  assert_success
  assert_output --regexp "gas_rwmix: pair ok seed=11 rounds=6 ops=150 writes=[0-9]+ bytes=[0-9]+ size=[0-9]+$"
  read -r writes bytes < <(rwmix_counts)
  assert_equal "$(($(gas_stat "$sock" received) - r0))" "$writes"
  assert_equal "$(($(gas_stat "$sock" bytes) - b0))" "$bytes"
  pget /t/rwpair "$W/pair.h7"
  cmp "$W/pair.model" "$W/pair.h7"
}

@test "gfortran direct access ACTION='READWRITE': records read back before close and after rewriting equal a local file's" {
  local prog=$PIO_BUILD/tests/prog/gas_fortran_rw
  run gas_on "$DIR/gas.sock" "$prog" pgas:/t/f.rw
  assert_success
  assert_output "gas_fortran_rw: ok"
  run "$prog" "$W/rw.local"
  assert_success
  assert_output "gas_fortran_rw: ok"
  # read back through the hook from h6, and with pfs from h7
  run gas_on "$DIR/gas.sock" cp pgas:/t/f.rw "$W/rw.h6"
  assert_success
  cmp "$W/rw.local" "$W/rw.h6"
  pget /t/f.rw "$W/rw.h7"
  cmp "$W/rw.local" "$W/rw.h7"
  run stat -c %s "$W/rw.h7"
  assert_output 80000
}

@test "a dispatcher holding every write until a read asks: one process, two processes and gfortran read what it holds" {
  local prog=$PIO_BUILD/tests/prog/gas_rwmix sock=$DIR/gas-h.sock w1 b1 w2 b2
  # its own dispatcher, with 1 MiB sub-buffers and no timer (an hour):
  # what the processes wrote since the last read, fstat, ftruncate or close
  # is still in the dispatcher when the next one comes (unless a server's
  # 1 MiB filled), and that one must apply it first
  gas_up gas.h "$sock" --sub-buffer 1M --interval 3600000
  run gas_on "$sock" "$prog" --seed 21 --ops 1000 pgas:/t/rwheld "$W/held.model"
  assert_success
  assert_output --regexp "^gas_rwmix: ok seed=21 ops=1000 writes=[0-9]+ bytes=[0-9]+ size=[0-9]+$"
  read -r w1 b1 < <(rwmix_counts)
  run gas_on "$sock" "$prog" --pair --seed 22 --rounds 4 --ops 150 pgas:/t/rwheld2 "$W/held2.model"
  assert_success
  assert_output --regexp "gas_rwmix: pair ok seed=22 rounds=4 ops=150 writes=[0-9]+ bytes=[0-9]+ size=[0-9]+$"
  read -r w2 b2 < <(rwmix_counts)
  pget /t/rwheld "$W/held.h7"
  cmp "$W/held.model" "$W/held.h7"
  pget /t/rwheld2 "$W/held2.h7"
  cmp "$W/held2.model" "$W/held2.h7"
  # nothing went out on the timer; reads, fstats and closes made it flush
  [ "$(gas_stat "$sock" timer)" -eq 0 ]
  [ "$(gas_stat "$sock" sync)" -gt 0 ]
  assert_equal "$(gas_stat "$sock" received)" "$((w1 + w2))"
  assert_equal "$(gas_stat "$sock" bytes)" "$((b1 + b2))"
  # and gfortran's read-write direct-access file, read back before its close
  run gas_on "$sock" "$PIO_BUILD/tests/prog/gas_fortran_rw" pgas:/t/f.rwheld
  assert_success
  assert_output "gas_fortran_rw: ok"
  run "$PIO_BUILD/tests/prog/gas_fortran_rw" "$W/rwheld.local"
  assert_success
  pget /t/f.rwheld "$W/rwheld.h7"
  cmp "$W/rwheld.local" "$W/rwheld.h7"
}
