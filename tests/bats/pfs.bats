#!/usr/bin/env bats
# pfs.bats - the parallel file system on a test bed of 7 hosts.
# SPDX-License-Identifier: BSD-3-Clause
#
# h1..h4 are I/O-server hosts, h5 the metadata host, h6 and h7 clients (one
# 1 Gbit/s link each; tests/lib/pfs.bash). Three file systems share the bed:
#   "pfs.mds"  32 I/O servers, 8 per I/O host (pfs.iod.H.K): enough servers
#              for the policy's 7 stripes of a 100 MiB file and the cap of 32
#   "pfs.even" 4 I/O servers, one per I/O host (pfs.e.H): evenness
#   "pfs.qmds" 1 I/O server (pfs.q, h1) on an emulated slow disk: QoS
# The fault tests kill and restart servers of "pfs.mds".

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"
source "$BATS_TEST_DIRNAME/../lib/pfs.bash"

CHECK=$PIO_BUILD/tests/prog/pfs-check
MIB=$((1 << 20))

iods_main() {
  local h k names=()
  for h in 1 2 3 4; do for k in 1 2 3 4 5 6 7 8; do names+=("pfs.iod.$h.$k"); done; done
  local IFS=,
  echo "${names[*]}"
}

setup_file() {
  [ "$(id -u)" -eq 0 ] || return 0
  export BED DIR
  BED=$(pio_unique_name pfs)
  DIR=$BATS_FILE_TMPDIR/pfs
  pfs_cluster_up "$DIR" "$BED" 1gbit
  local h k
  for h in 1 2 3 4; do
    for k in 1 2 3 4 5 6 7 8; do pfs_iod_start "$DIR" "$h" "pfs.iod.$h.$k" --threads 4; done
    pfs_iod_start "$DIR" "$h" "pfs.e.$h" --threads 2 --mds pfs.even
  done
  pfs_mds_start "$DIR" pfs.mds "$DIR/main.db" "$(iods_main)"
  pfs_mds_start "$DIR" pfs.even "$DIR/even.db" pfs.e.1,pfs.e.2,pfs.e.3,pfs.e.4
  pfs_ready 6 pfs.mds 90
  pfs_ready 6 pfs.even 30
}

teardown_file() {
  pio_cleanup
}

setup() {
  pio_need_root
  W=$BATS_TEST_TMPDIR
}

# stripe_field PATH FIELD: a field of `pfs getstripe PATH` on h6
stripe_field() {
  pfs_on 6 pfs getstripe "$1" | awk -v f="$2:" '$1 == f { $1 = ""; sub(/^ /, ""); print }'
}

@test "policy: 100 MiB gets 7 stripes, -c 1 gets 1, -c 64 is capped at 32; objects sit on the named servers" {
  head -c $((100 * MIB)) /dev/urandom >"$W/big"
  run pfs_on 6 pfs put "$W/big" /policy
  assert_success
  [ "$(stripe_field /policy stripe_count)" = 7 ]
  run pfs_on 6 pfs put -c 1 "$W/big" /one
  assert_success
  [ "$(stripe_field /one stripe_count)" = 1 ]
  run pfs_on 6 pfs put -c 64 "$W/big" /capped
  assert_success
  [ "$(stripe_field /capped stripe_count)" = 32 ]
  # every server's bytes of each file: the layout's servers hold exactly the
  # stripe sizes the layout gives, every other server nothing; checked on
  # the servers' disks too (each object a file named by the file id)
  local f
  for f in /policy /one /capped; do
    run pfs_on 6 pfs getstripe -b "$f"
    assert_success
    echo "$output" | python3 "$BATS_TEST_DIRNAME/../lib/pfs_objects.py" "$DIR" "$f" $((100 * MIB))
  done
  # bytes read back equal what was written
  run pfs_on 7 pfs get /policy "$W/back"
  assert_success
  cmp "$W/big" "$W/back"
}

@test "unaligned reads and writes crossing stripe boundaries equal a local mirror" {
  head -c $((9 * MIB + 12345)) /dev/urandom >"$W/src"
  run pfs_on 6 pfs put -c 4 -S 64K "$W/src" /unaligned
  assert_success
  [ "$(stripe_field /unaligned stripe_size)" = 65536 ]
  cp "$W/src" "$W/mirror"
  run pfs_on 7 "$CHECK" random-io /unaligned "$W/mirror" 150 42
  echo "$output"
  assert_success
  assert_output --partial "ok 150 operations"
  # and the default 1 MiB stripes over 7 servers
  run pfs_on 6 pfs put -c 7 "$W/src" /unaligned7
  assert_success
  cp "$W/src" "$W/mirror7"
  run pfs_on 6 "$CHECK" random-io /unaligned7 "$W/mirror7" 150 7
  assert_success
}

@test "directories: mkdir, ls, setstripe inheritance, rename, rm, clear errors" {
  run pfs_on 6 pfs mkdir -p /d/sub
  assert_success
  run pfs_on 6 pfs setstripe -c 3 -S 2M /d
  assert_success
  run pfs_on 6 pfs mkdir /d/inherit
  assert_success
  [ "$(stripe_field /d/inherit stripe_count)" = 3 ]
  head -c $((40 * MIB)) /dev/urandom >"$W/f"
  run pfs_on 6 pfs put "$W/f" /d/inherit/x
  assert_success
  [ "$(stripe_field /d/inherit/x stripe_count)" = 3 ]
  [ "$(stripe_field /d/inherit/x stripe_size)" = $((2 * MIB)) ]
  run pfs_on 6 pfs ls -l /d/inherit
  assert_success
  assert_output --regexp "-0644 +41943040 .* x"
  run pfs_on 6 pfs stat /d/inherit/x
  assert_output --partial "size: 41943040"
  # rename a directory: its files move with it
  run pfs_on 7 pfs mv /d/inherit /d/moved
  assert_success
  run pfs_on 7 pfs get /d/moved/x "$W/x"
  assert_success
  cmp "$W/f" "$W/x"
  run pfs_on 7 pfs stat /d/inherit
  assert_failure
  run pfs_on 6 "$CHECK" verify /nonexistent 1
  assert_failure 3
  assert_output --partial "no such file"
  run pfs_on 6 pfs rm /d
  assert_failure
  assert_output --partial "not empty"
  run pfs_on 6 pfs ls /missing
  assert_failure
  assert_output --partial "/missing"
  run pfs_on 6 pfs rm -r /d
  assert_success
  run pfs_on 6 pfs ls /
  refute_output --partial "d/"
  # a bad path is refused before it reaches a server
  run pfs_on 6 pfs ls relative/path
  assert_failure
  assert_output --partial "not an absolute pfs path"
}

@test "evenness: 24 files x 3 stripes over 4 servers leave every server within one stripe of the mean" {
  head -c $((3 * MIB)) /dev/urandom >"$W/s"
  local i
  for i in $(seq 1 24); do
    pfs_on 6 pfs --mds pfs.even put -c 3 "$W/s" "/f$i" || fail "put $i"
  done
  run pfs_on 6 pfs --mds pfs.even df
  assert_success
  echo "$output"
  echo "$output" | python3 -c '
import sys
rows = [l.split() for l in sys.stdin if l.split() and l.split()[0].isdigit()]
objs = [int(r[4]) for r in rows]
assert len(objs) == 4 and sum(objs) == 72, objs
mean = sum(objs) / 4
assert all(abs(o - mean) <= 1 for o in objs), objs
print("objects per server", objs)'
}

@test "setstripe -c -1 stripes over every I/O server; ls, getstripe, df and qos --json; df -h" {
  local E=(pfs --mds pfs.even)
  run pfs_on 6 "${E[@]}" mkdir /wide
  assert_success
  run pfs_on 6 "${E[@]}" setstripe -c -1 /wide
  assert_success
  head -c $((4 * MIB)) /dev/urandom >"$W/w"
  run pfs_on 6 "${E[@]}" put "$W/w" /wide/f
  assert_success
  # the directory's default and the file: all 4 servers, 1 MiB on each
  run pfs_on 6 "${E[@]}" getstripe -b --json /wide /wide/f
  assert_success
  run python3 -c '
import json, sys
d, f = json.loads(sys.argv[1])
assert (d["path"], d["type"], d["stripe_count"]) == ("/wide", "directory", 4), d
assert (f["path"], f["type"], f["stripe_count"]) == ("/wide/f", "file", 4), f
assert sorted(f["servers"]) == [0, 1, 2, 3], f
assert sorted(f["server_names"]) == ["pfs.e.1", "pfs.e.2", "pfs.e.3", "pfs.e.4"], f
assert [o["bytes"] for o in f["objects"]] == [1 << 20] * 4, f["objects"]
print("ok")' "$output"
  assert_output ok
  run pfs_on 6 "${E[@]}" --json ls /wide
  assert_success
  run python3 -c '
import json, sys
(e,) = json.loads(sys.argv[1])
print(e["path"], e["name"], e["type"], e["size"], oct(e["mode"]), e["mtime_ns"] > 0)' "$output"
  assert_output "/wide/f f file $((4 * MIB)) 0o644 True"
  # df --json: 4 servers whose counts add up to the total; df -h gives the
  # same total used as df -h would (powers of 1024, rounded up)
  run pfs_on 6 "${E[@]}" df --json
  assert_success
  local json=$output
  run python3 -c '
import json, sys, math
d = json.loads(sys.argv[1])
s = d["servers"]
assert [r["index"] for r in s] == [0, 1, 2, 3], s
for k in ("used", "avail", "objects"):
    assert sum(r[k] for r in s) == d["total"][k], (k, d)
assert d["total"]["objects"] >= 4 and d["total"]["used"] >= 4 << 20, d
u, n = d["total"]["used"], 0
while u >= 1024 and n < 6:
    u /= 1024; n += 1
t = math.ceil(u * 10) / 10 if u < 10 else math.ceil(u)
print(("%.1f" % t if u < 10 else "%d" % t) + " KMGTPE"[n].strip())' "$json"
  assert_success
  local want=$output
  run pfs_on 6 "${E[@]}" df -h
  assert_success
  run awk '$1 == "total" { print $2 }' <<<"$output"
  assert_output "$want"
  # qos --json: every server, its classes with their counters as numbers
  run pfs_on 6 "${E[@]}" qos --json
  assert_success
  run python3 -c '
import json, sys
q = json.loads(sys.argv[1])
assert [r["server"] for r in q] == ["pfs.e.1", "pfs.e.2", "pfs.e.3", "pfs.e.4"], q
for r in q:
    names = [c["class"] for c in r["classes"]]
    assert names and all(isinstance(c["threads"], int) and c["threads"] > 0 for c in r["classes"]), r
    assert sum(c["served"] for c in r["classes"]) > 0, r
    assert r["io"]["writes"] > 0 and r["io"]["bytes_written"] >= 1 << 20, r
print(" ".join(names))' "$output"
  assert_success
  assert_output --regexp "interactive"
  run pfs_on 6 "${E[@]}" rm -r /wide
  assert_success
}

# qos_field SERVER_LINE_CLASS FIELD: from `pfs qos` output in $output
qos_field() {
  echo "$output" | awk -v c="$1" -v f="$2" '$4 == "class" && $5 == c {
    for (i = 6; i <= NF; i++) { split($i, kv, "="); if (kv[1] == f) print kv[2] } }'
}

@test "QoS: staging borrows idle threads; with staging saturating them, interactive starts within one request-time" {
  # one I/O server, 10 threads (2 interactive, 8 staging), an emulated disk of
  # 10 lanes at 4 MB/s each: a 1 MiB request takes about 0.26 s
  pfs_iod_start "$DIR" 1 pfs.q --threads 10 --qos interactive:20,staging:80 \
    --disk-rate 40M --disk-lanes 10 --mds pfs.qmds
  pfs_mds_start "$DIR" pfs.qmds "$DIR/q.db" pfs.q
  pfs_ready 6 pfs.qmds 30
  # staging alone: 16 requests in flight keep all 10 threads busy, 2 borrowed
  _pfs_launch load1 6 "$CHECK" --mds pfs.qmds --class staging load /load1 16 5
  sleep 1
  run pfs_on 7 pfs --mds pfs.qmds qos --reset
  assert_success
  sleep 3
  run pfs_on 7 pfs --mds pfs.qmds qos
  echo "$output"
  [ "$(qos_field staging busy_max)" -eq 10 ]
  [ "$(qos_field staging borrowed_max)" -eq 2 ]
  [ "$(qos_field interactive borrowed_max)" -eq 0 ]
  wait "$(cat "$DIR/load1.pid")"
  # staging saturating every thread, and interactive 1 MiB writes arriving
  _pfs_launch load2 6 "$CHECK" --mds pfs.qmds --class staging load /load2 16 8
  sleep 1.5
  run pfs_on 7 pfs --mds pfs.qmds qos --reset
  assert_success
  run pfs_on 7 "$CHECK" --mds pfs.qmds --class interactive probe /probe 10 300
  assert_success
  run pfs_on 7 pfs --mds pfs.qmds qos
  echo "$output"
  local served wait_max svc
  served=$(qos_field interactive served)
  wait_max=$(qos_field interactive wait_max_us)
  svc=$(qos_field staging svc_p50_us)
  [ "$(qos_field staging busy_max)" -eq 10 ] # staging kept every thread busy meanwhile
  [ "$served" -ge 10 ]
  echo "# interactive wait max ${wait_max} us, one staging request takes ${svc} us" >&3
  # "within one request-time" (+ 20 % for timer and scheduling slack)
  [ "$wait_max" -le $((svc * 12 / 10)) ]
  # and the borrowed threads gave staging requests back between steps
  [ "$(qos_field staging yielded)" -gt 0 ]
  wait "$(cat "$DIR/load2.pid")"
}

# make_tree DIR N: N files in 10 subdirectories, sizes 0..96 KiB and a few of
# several MiB, random bytes, assorted modes
make_tree() {
  python3 - "$1" "$2" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
random.seed(5)
for i in range(n):
    d = os.path.join(root, "d%d" % (i % 10), "e%d" % (i % 3))
    os.makedirs(d, exist_ok=True)
    size = random.choice([0, 1, 4095, 4096, 65537]) if i % 7 == 0 else random.randint(0, 96 << 10)
    if i % 250 == 3:
        size = (3 << 20) + 17
    p = os.path.join(d, "f%04d" % i)
    with open(p, "wb") as f:
        f.write(os.urandom(size))
    os.chmod(p, random.choice([0o644, 0o600, 0o755]))
PY
}

@test "staging: a tree of 1,000 files goes out and comes back equal; a second stage-out skips them all" {
  make_tree "$W/tree" 1000
  run pfs_on 6 pfs stage-out -j 4 "$W/tree" /stage
  echo "$output"
  assert_success
  assert_output --partial "1000 files copied, 0 already staged, 0 failed"
  run pfs_on 7 pfs stage-in -j 4 /stage "$W/back"
  echo "$output"
  assert_success
  assert_output --partial "1000 files copied"
  diff -r "$W/tree" "$W/back"
  # modes and mtimes came back too
  [ "$(cd "$W/tree" && find . -type f -printf '%p %m %T@\n' | sort | md5sum)" = \
    "$(cd "$W/back" && find . -type f -printf '%p %m %T@\n' | sort | md5sum)" ]
  run pfs_on 6 pfs stage-out -j 4 "$W/tree" /stage
  assert_success
  assert_output --partial "0 files copied, 1000 already staged"
  # the staging class was used: the servers counted staging requests
  run pfs_on 6 pfs qos
  assert_output --regexp "class staging .*served=[1-9]"
}

@test "staging: an interrupted stage-out resumes where it stopped and ends equal" {
  python3 -c '
import os, sys
for i in range(60):
    d = os.path.join(sys.argv[1], "r%d" % (i % 4)); os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "g%02d" % i), "wb").write(os.urandom(4 << 20))' "$W/src"
  # h6's link at 100 Mbit/s: the 240 MiB take 20 s, so the kill lands mid-way
  "$PIO_TESTBED" rate "$BED" h6 0 100mbit
  _pfs_launch stage1 6 pfs stage-out -j 2 "$W/src" /resume
  # wait until some files are complete, then kill the stager outright
  pio_wait_until 60 bash -c "[ \$(find '$W/src' -type f | wc -l) -eq 60 ] &&
    [ \$(PIO_SOCKET='$DIR/n6.sock' ip netns exec $(pfs_ns 6) '$PIO_BUILD/bin/pfs' ls /resume/r0 2>/dev/null | grep -vc pfs-part) -ge 4 ]"
  pfs_kill9 "$DIR/stage1.pid"
  "$PIO_TESTBED" rate "$BED" h6 0 1gbit
  run pfs_on 6 pfs stage-out -j 2 "$W/src" /resume
  echo "$output"
  assert_success
  local skipped
  skipped=$(echo "$output" | sed -n 's/.* \([0-9]*\) already staged.*/\1/p')
  [ "$skipped" -ge 4 ]
  [ "$skipped" -lt 60 ]
  run pfs_on 7 pfs stage-in /resume "$W/back"
  assert_success
  diff -r "$W/src" "$W/back"
}

@test "an I/O server killed mid-write: the writer gets a clear error, acknowledged bytes survive its restart" {
  _pfs_launch ackw 6 "$CHECK" ackwrite /acked 600 4
  pio_wait_until 60 grep -q "^acked $((48 * MIB))$" "$DIR/ackw.log"
  local victim
  victim=$(stripe_field /acked server_names | awk '{print $2}')
  [ -n "$victim" ]
  pfs_kill9 "$DIR/$victim.pid"
  local pid rc=0
  pid=$(cat "$DIR/ackw.pid")
  wait "$pid" || rc=$?
  cat "$DIR/ackw.log"
  [ "$rc" -eq 3 ]
  grep -q "$victim" "$DIR/ackw.log" # the error names the server
  local acked
  acked=$(grep '^acked' "$DIR/ackw.log" | tail -n 1 | awk '{print $2}')
  [ "$acked" -ge $((48 * MIB)) ]
  [ "$acked" -lt $((600 * MIB)) ]
  local h=${victim#pfs.iod.}
  pfs_iod_start "$DIR" "${h%%.*}" "$victim" --threads 4
  run pfs_on 7 "$CHECK" verify /acked "$acked"
  echo "$output"
  assert_success
  assert_output --partial "ok $acked bytes"
}

@test "the metadata server killed with kill -9 loses nothing acknowledged" {
  run pfs_on 6 pfs mkdir /many
  assert_success
  _pfs_launch mkf 6 "$CHECK" mkfiles /many 100000
  pio_wait_until 60 grep -q "^acked 200$" "$DIR/mkf.log"
  pfs_kill9 "$DIR/pfs.mds.pid"
  local pid rc=0
  pid=$(cat "$DIR/mkf.pid")
  wait "$pid" || rc=$?
  [ "$rc" -eq 3 ]
  local last
  last=$(grep '^acked' "$DIR/mkf.log" | tail -n 1 | awk '{print $2}')
  pfs_mds_start "$DIR" pfs.mds "$DIR/main.db" "$(iods_main)"
  pfs_ready 6 pfs.mds 30
  run pfs_on 6 pfs ls /many
  assert_success
  local i
  for ((i = 0; i <= last; i++)); do
    echo "$output" | grep -qx "f$i" || fail "acknowledged file f$i lost (last acknowledged f$last)"
  done
  echo "# $((last + 1)) acknowledged creates, all there after kill -9" >&3
}
