#!/usr/bin/env bats
# security.bats - one host, many users: real local users against each other (issue 28).
# SPDX-License-Identifier: BSD-3-Clause
#
# Users made here with useradd (pio-sa, pio-sb, pio-sc; removed at the end)
# run tests/prog/pio-check, pio-win, pcp, pfs and pfs-check through one piod
# pair on loopback whose sockets every user may reach. Each case shows that
# the other user is refused and that the owner's own action works. The
# programs the users run are copied to a folder they may enter (a checkout,
# as CI's, may sit in a folder only root enters).

bats_require_minimum_version 1.5.0
load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

USER_PROGS="tests/prog/pio-check tests/prog/pio-win bin/pcp bin/pfs tests/prog/pfs-check
  sbin/gas-dispatcher lib/libpgas.so"
CHECK=${SEC_BIN:-}/pio-check
WIN=${SEC_BIN:-}/pio-win
PCP=${SEC_BIN:-}/pcp
PFS=${SEC_BIN:-}/pfs
PFSCHECK=${SEC_BIN:-}/pfs-check

setup_file() {
  [ "$(id -u)" -eq 0 ] || return 0
  local u p
  for u in pio-sa pio-sb pio-sc; do
    id -u "$u" >/dev/null 2>&1 && continue
    # a group left by an interrupted run (useradd made it, not the user yet)
    if getent group "$u" >/dev/null; then
      useradd --system --no-create-home --gid "$u" --shell /usr/sbin/nologin "$u"
    else
      useradd --system --no-create-home --user-group --shell /usr/sbin/nologin "$u"
    fi
  done
  SEC_BIN=$(mktemp -d /tmp/pio-security-bin.XXXXXX)
  chmod 755 "$SEC_BIN"
  for p in $USER_PROGS; do install -m 755 "$PIO_BUILD/$p" "$SEC_BIN/"; done
  export SEC_BIN
}

teardown_file() {
  [ "$(id -u)" -eq 0 ] || return 0
  local u
  for u in pio-sa pio-sb pio-sc; do
    userdel "$u" >/dev/null 2>&1 || true
    groupdel "$u" >/dev/null 2>&1 || true
  done
  if [ -n "${SEC_BIN:-}" ]; then rm -rf "$SEC_BIN"; fi
}

setup() {
  pio_need_root
  # a folder every user may enter (Bats' own temp folders are 0700)
  W=$(mktemp -d /tmp/pio-security.XXXXXX)
  chmod 755 "$W"
}

# pair_up [PIOD FLAGS...]: a piod pair on loopback that every user can reach
pair_up() {
  PIO_PIOD_FLAGS="$*" pio_pair_loopback "$W/p" 1
  chmod 755 "$W/p"
}

teardown() {
  pio_cleanup
  if [ -n "${W:-}" ]; then rm -rf "$W"; fi
}

# on SOCKET USER CMD...: CMD as that user (uid and its own group only),
# joining through the piod of SOCKET
on() {
  local sock=$1 u=$2
  shift 2
  env PIO_SOCKET="$sock" setpriv --reuid="$u" --regid="$u" --clear-groups "$@"
}

# as USER CMD... / as_b USER CMD...: on piod A / on piod B
as() { on "$PIO_SOCK_A" "$@"; }
as_b() { on "$PIO_SOCK_B" "$@"; }

# joins USER APP RANK NPROCS: USER's process RANK of NPROCS joins as APP
joins() {
  run as "$1" "$CHECK" send hold -a "$2" -r "$3" -P "$4" -n 0
  assert_success
  assert_output --partial "OK hold"
}

# refused USER APP RANK NPROCS: USER's process may not join as APP
refused() {
  run as "$1" "$CHECK" send hold -a "$2" -r "$3" -P "$4" -n 0
  assert_failure
  assert_output --partial "PIO_EACCES"
}

@test "an application name belongs to the uid of its joined processes: another user gets PIO_EACCES, the owner's next process joins" {
  pair_up
  bg_start "$W/a0" as pio-sa "$CHECK" send hold -a owned -r 0 -P 2 -n 120
  pio_wait_until 10 grep -q "OK hold" "$W/a0"
  # user B can take neither a free process number of A's application nor a
  # joined one (that one is not "already joined" to B: it is not B's)
  refused pio-sb owned 1 2
  refused pio-sb owned 0 2
  run grep -c "refused: application owned belongs to uid $(id -u pio-sa)" "$W/p/A.log"
  assert_output 2
  # the owner's second process joins
  joins pio-sa owned 1 2
  # root is another user too
  refused root owned 1 2
  # once every process of A's has left, the name is free again
  pkill -f "send hold -a owned -r 0 -P 2 -n 120"
  pio_wait_until 20 grep -q "process owned:0 (pid [0-9]*) left" "$W/p/A.log"
  joins pio-sb owned 0 2
}

@test "[application NAME] owner = USER in piod.conf: only that user's processes join, even while none is" {
  printf '[application cfgown]\nowner = pio-sa\n' >"$W/piod.conf"
  pair_up --config "$W/piod.conf"
  refused pio-sb cfgown 0 1
  run grep -c "refused: application cfgown belongs to uid $(id -u pio-sa) (\[application cfgown\]" \
    "$W/p/A.log"
  assert_output 1
  joins pio-sa cfgown 0 1
  # and after the owner's process has left, still only the owner
  refused pio-sb cfgown 0 1
  # names without a section stay first come, first served
  joins pio-sb freename 0 1
  # a section whose owner is no user of this host stops piod at start
  printf '[application x]\nowner = no-such-user-pio\n' >"$W/bad.conf"
  run "$PIO_BUILD/sbin/piod" --config "$W/bad.conf" --check-config
  assert_failure
  assert_output --partial "unknown user 'no-such-user-pio' as owner of [application x]"
}

@test "every message carries its sender's uid, gid and system, stamped by the piods from the kernel's word" {
  pair_up
  local ua ga
  ua=$(id -u pio-sa) ga=$(id -g pio-sa)
  # across systems: A's piod stamps pio-sa's uid and gid, B's piod adds that
  # it came from system A; inline and chunked messages alike
  bg_start "$W/r1" as_b pio-sb "$CHECK" recv sizes -a stamp-r -p stamp-s -S 100,3M
  local r1=$BG_PID
  run as pio-sa "$CHECK" send sizes -a stamp-s -p stamp-r -S 100,3M
  assert_success
  bg_wait "$r1"
  run cat "$W/r1"
  assert_equal "$BG_RC" 0
  assert_output "OK sizes: 2 messages (100,3M) from uid $ua gid $ga system A user pio-sa"
  # on one host: the same piod stamps and delivers
  bg_start "$W/r2" as pio-sb "$CHECK" recv sizes -a stamp-r2 -p stamp-s2 -S 100,3M
  local r2=$BG_PID
  run as root "$CHECK" send sizes -a stamp-s2 -p stamp-r2 -S 100,3M
  assert_success
  bg_wait "$r2"
  run cat "$W/r2"
  assert_equal "$BG_RC" 0
  assert_output "OK sizes: 2 messages (100,3M) from uid 0 gid 0 system A user root"
}

@test "PIO_SENDERS=owner: a process takes messages only from senders of its own uid; another user's fail with PIO_EACCES" {
  pair_up
  local ub gb
  ub=$(id -u pio-sb) gb=$(id -g pio-sb)
  # B's receiver takes only pio-sb's messages; a bad value is refused
  run as_b pio-sb env PIO_SENDERS=nobody "$CHECK" send hold -a own-r -n 0
  assert_failure
  assert_output --partial "PIO_EINVAL"
  bg_start "$W/r" as_b pio-sb env PIO_SENDERS=owner "$CHECK" recv sizes -a own-r -p own-s \
    -S 100,3M
  local r=$BG_PID
  # pio-sa's messages (inline and chunked) are refused at B: its sync sends
  # fail, and nothing reaches the receiver (which waits for own-s: a
  # process it waits for that leaves would fail its receive, PIO_EGONE)
  run as pio-sa "$CHECK" send sizes -a own-x -p own-r -S 100 -m sync
  assert_failure
  assert_output --partial "PIO_EACCES"
  run as pio-sa "$CHECK" send sizes -a own-x -p own-r -S 3M -m sync
  assert_failure
  assert_output --partial "PIO_EACCES"
  run grep -c "process own-r:0 takes messages only from uid $ub: refused one from own-x:0 (uid $(id -u pio-sa) of system A)" "$W/p/B.log"
  assert_output 1
  # the receiver's own user's messages arrive
  run as pio-sb "$CHECK" send sizes -a own-s -p own-r -S 100,3M -m sync
  assert_success
  bg_wait "$r"
  run cat "$W/r"
  assert_equal "$BG_RC" 0
  assert_output "OK sizes: 2 messages (100,3M) from uid $ub gid $gb system A user pio-sb"
}

@test "[application NAME] senders = owner in piod.conf: the same, for every process of that name" {
  printf '[application cfgsend]\nsenders = owner\n' >"$W/piod.conf"
  PIO_PIOD_FLAGS_B="--config $W/piod.conf" pair_up
  bg_start "$W/r" as_b pio-sb "$CHECK" recv sizes -a cfgsend -p cfg-s -S 3M
  local r=$BG_PID
  run as pio-sa "$CHECK" send sizes -a cfg-x -p cfgsend -S 3M -m sync
  assert_failure
  assert_output --partial "PIO_EACCES"
  run as pio-sb "$CHECK" send sizes -a cfg-s -p cfgsend -S 3M -m sync
  assert_success
  bg_wait "$r"
  run cat "$W/r"
  assert_equal "$BG_RC" 0
  assert_output --partial "OK sizes: 1 messages (3M) from uid $(id -u pio-sb)"
}

# win_serve ACCESS: pio-sa serves a 1 MiB window as application winsrv on A
# (UCX over tcp: the two users share no memory)
win_serve() {
  bg_start "$W/srv" as pio-sa env UCX_TLS=tcp PIO_APP=winsrv PIO_WIN_ACCESS="$1" \
    "$WIN" serve $((1 << 20))
}

# win_client USER APP: USER's process of application APP, on B, gets, puts
# and adds into winsrv's window (run: check $status and $output)
win_client() {
  run as_b "$1" env UCX_TLS=tcp PIO_APP="$2" timeout 120 "$WIN" client winsrv $((1 << 20))
}

@test "a window lets in only whom its access names: another user's process gets PIO_EACCES, a process of the owner's uid gets in (PIO_WIN_UID)" {
  pair_up
  # pio-sa serves a window to the processes of its own uid
  win_serve uid
  # another user's process, from the other system, is refused at its first
  # get and never learns the window's key
  win_client pio-sb wincli
  assert_failure
  assert_output --partial "PIO_EACCES"
  # a process of pio-sa, of another application, reads, writes and adds
  win_client pio-sa wincli2
  assert_success
  assert_output --partial "OK client"
  pio_wait_until 20 grep -q "OK serve: word 0 is 4242" "$W/srv"
}

@test "a window of the default access (PIO_WIN_APP) refuses every other application, even of its own user" {
  pair_up
  win_serve app
  win_client pio-sa wincli
  assert_failure
  assert_output --partial "PIO_EACCES"
  # the processes of one application use each other's windows
  # (PIO_WIN_APP is pio-win's default): tests/bats/pio_win.bats
  run as pio-sa env UCX_TLS=tcp PIO_APP=winrw PIO_TEST_RANK=0 PIO_TEST_SIZE=1 timeout 120 \
    "$WIN" rw 65536
  assert_success
  assert_output --partial "OK rw"
}

@test "the file service acts as the calling user: B can neither read nor overwrite A's 0600 file through pcp; A can; new files belong to their writer" {
  # B exports a folder where everyone may make files (sticky, as /tmp)
  mkdir -p "$W/exp/shared"
  chmod 1777 "$W/exp/shared"
  printf 'secret of A\n' >"$W/exp/shared/a.txt"
  chown pio-sa: "$W/exp/shared/a.txt"
  chmod 600 "$W/exp/shared/a.txt"
  printf 'from B\n' >"$W/in.txt"
  chmod 644 "$W/in.txt"
  mkdir "$W/sa" "$W/sb"
  chown pio-sa: "$W/sa"
  chown pio-sb: "$W/sb"
  PIO_PIOD_FLAGS_B="--export $W/exp" pair_up
  # pio-sb, on system A, cannot read A's file on B...
  run as pio-sb "$PCP" -q B:shared/a.txt "$W/sb/got"
  assert_failure 23 # the file service's refusal (3 would be pcp's own, about $W/sb)
  assert_output --partial "Permission denied"
  run ! test -e "$W/sb/got"
  # ...nor overwrite it: refused before anything is written
  run as pio-sb "$PCP" -q "$W/in.txt" B:shared/a.txt
  assert_failure 23
  assert_output --partial "Permission denied"
  run cat "$W/exp/shared/a.txt"
  assert_output "secret of A"
  run ls -A "$W/exp/shared"
  assert_output "a.txt"
  # pio-sa reads its own file and overwrites it
  run as pio-sa "$PCP" -q B:shared/a.txt "$W/sa/got"
  assert_success
  run cat "$W/sa/got"
  assert_output "secret of A"
  run as pio-sa "$PCP" -q "$W/in.txt" B:shared/a.txt
  assert_success
  run cat "$W/exp/shared/a.txt"
  assert_output "from B"
  # a new file belongs to the user who wrote it, not to the service
  run as pio-sb "$PCP" -q "$W/in.txt" B:shared/b.txt
  assert_success
  run stat -c %U "$W/exp/shared/b.txt"
  assert_output pio-sb
}

@test "the file service maps another system's users by name, or as its map says; a user with no account there is refused" {
  mkdir -p "$W/exp"
  printf 'x\n' >"$W/in.txt"
  chmod 644 "$W/in.txt"
  # B's map (the two systems share this host's users, so the map says what
  # B makes of A's): pio-sc has no account on B, every other user of A is
  # pio-sb there
  printf 'A pio-sc = no-such-user-pio\nA * = pio-sb  # the rest\n' >"$W/users.map"
  printf 'export-map = %s\n' "$W/users.map" >"$W/piod-b.conf"
  PIO_PIOD_FLAGS_B="--export $W/exp --config $W/piod-b.conf" pair_up
  chown pio-sb: "$W/exp"
  chmod 700 "$W/exp"
  run as pio-sa "$PCP" -q "$W/in.txt" B:mapped.txt
  assert_success
  run stat -c %U "$W/exp/mapped.txt"
  assert_output pio-sb
  run as pio-sc "$PCP" -q "$W/in.txt" B:sc.txt
  assert_failure
  assert_output --regexp "user pio-sc \(uid [0-9]+\) of system A \(mapped to no-such-user-pio\) has no account here: refused"
  run ! test -e "$W/exp/sc.txt"
}

# pfs_up [MDS FLAGS...]: a pfs (pfs-mds and one pfs-iod, as root) on piod B;
# every user reaches it from A as PFS_MDS=pfs.sec.mds; root makes /shared,
# 1777 (everyone makes files there; only their owners remove them)
pfs_up() {
  mkdir -p "$W/objs"
  bg_start "$W/mds.log" env PIO_SOCKET="$PIO_SOCK_B" "$PIO_BUILD/sbin/pfs-mds" \
    --db "$W/mds.db" --iods pfs.sec.iod --name pfs.sec.mds "$@"
  MDS_PID=$BG_PID
  bg_start "$W/iod.log" env PIO_SOCKET="$PIO_SOCK_B" "$PIO_BUILD/sbin/pfs-iod" \
    --dir "$W/objs" --name pfs.sec.iod --mds pfs.sec.mds --threads 2
  pio_wait_until 30 env PIO_SOCKET="$PIO_SOCK_A" PFS_MDS=pfs.sec.mds "$PFS" df
  run env PIO_SOCKET="$PIO_SOCK_A" PFS_MDS=pfs.sec.mds "$PFS" mkdir /shared
  assert_success
  run env PIO_SOCKET="$PIO_SOCK_A" PFS_MDS=pfs.sec.mds "$PFS" chmod 1777 /shared
  assert_success
}

# pfs_as USER CMD...: CMD as USER on A, with the pfs of pfs_up
pfs_as() {
  local u=$1
  shift
  as "$u" env PFS_MDS=pfs.sec.mds "$@"
}

@test "pfs enforces POSIX permissions on the piods' stamp: B can neither read nor write A's 0600 file through pfs, libpfs or straight to its I/O server; A can" {
  pair_up
  pfs_up
  head -c 300000 /dev/urandom >"$W/a.bin"
  chmod 600 "$W/a.bin"
  chown pio-sa: "$W/a.bin"
  mkdir "$W/sa" "$W/sb"
  chown pio-sa: "$W/sa"
  chown pio-sb: "$W/sb"
  # pio-sa's file: 0600, owned by pio-sa and its group (the stamp, not a claim)
  run pfs_as pio-sa "$PFS" put "$W/a.bin" /shared/a
  assert_success
  run pfs_as pio-sb "$PFS" stat /shared/a
  assert_success
  assert_output --partial "mode: 0600"
  assert_output --partial "owner: $(id -u pio-sa) $(id -g pio-sa)"
  # pio-sb: no read through pfs or libpfs...
  run pfs_as pio-sb "$PFS" get /shared/a "$W/sb/a"
  assert_failure
  assert_output --partial "permission denied"
  run pfs_as pio-sb "$PFSCHECK" --mds pfs.sec.mds verify /shared/a 1
  assert_failure 3
  assert_output --partial "permission denied"
  # ...no write: not over it, not around the metadata server to the I/O
  # server by file id, not by removing it from the sticky folder
  head -c 1000 /dev/zero >"$W/z"
  chmod 644 "$W/z"
  run pfs_as pio-sb "$PFS" put "$W/z" /shared/a
  assert_failure
  assert_output --partial "permission denied"
  run pfs_as pio-sb "$PFSCHECK" --mds pfs.sec.mds overwrite-fid /shared/a
  assert_failure 3
  assert_output --partial "permission denied"
  run pfs_as pio-sb "$PFS" rm /shared/a
  assert_failure
  assert_output --partial "permission denied"
  run pfs_as pio-sb "$PFS" chmod 666 /shared/a
  assert_failure
  assert_output --partial "permission denied"
  # the file is whole, and pio-sa reads it
  run pfs_as pio-sa "$PFS" get /shared/a "$W/sa/a"
  assert_success
  cmp "$W/a.bin" "$W/sa/a"
  # once pio-sa lets its group and others read, pio-sb reads (and still
  # cannot write)
  run pfs_as pio-sa "$PFS" chmod 644 /shared/a
  assert_success
  run pfs_as pio-sb "$PFS" get /shared/a "$W/sb/a"
  assert_success
  cmp "$W/a.bin" "$W/sb/a"
  run pfs_as pio-sb "$PFSCHECK" --mds pfs.sec.mds overwrite-fid /shared/a
  assert_failure 3
  assert_output --partial "permission denied"
}

# pgas_as USER CMD...: CMD as USER on A under libpgas.so, through USER's own
# GAS dispatcher (started by the first call; the default serves its own uid)
pgas_as() {
  local u=$1 sock=$W/gas-$1/gas.sock
  shift
  if [ ! -S "$sock" ]; then
    mkdir -p "$W/gas-$u"
    chown "$u": "$W/gas-$u"
    bg_start "$W/gas-$u.log" env PIO_SOCKET="$PIO_SOCK_A" setpriv --reuid="$u" --regid="$u" \
      --clear-groups "$SEC_BIN/gas-dispatcher" --socket "$sock" --mds pfs.sec.mds --name "gas.$u"
    pio_wait_until 20 test -S "$sock"
  fi
  as "$u" env LD_PRELOAD="$SEC_BIN/libpgas.so" GAS_SOCKET="$sock" \
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" "$@"
}

@test "pgas: B can neither read nor overwrite A's 0600 pfs file through its own GAS dispatcher; A can" {
  pair_up
  pfs_up
  head -c 200000 /dev/urandom >"$W/a.bin"
  head -c 5000 /dev/zero >"$W/z"
  chmod 644 "$W/a.bin" "$W/z"
  mkdir "$W/sa" "$W/sb"
  chown pio-sa: "$W/sa"
  chown pio-sb: "$W/sb"
  # pio-sa writes its file through pgas:, then makes it 0600
  run pgas_as pio-sa cp "$W/a.bin" pgas:/shared/g
  assert_success
  run pfs_as pio-sa "$PFS" chmod 600 /shared/g
  assert_success
  run pfs_as pio-sb "$PFS" stat /shared/g
  assert_success
  assert_output --partial "owner: $(id -u pio-sa) $(id -g pio-sa)"
  # pio-sb, through its own dispatcher: no read, no overwrite, no write in place
  run pgas_as pio-sb cat pgas:/shared/g
  assert_failure
  assert_output --partial "Permission denied"
  refute_output --partial "$(head -c 64 "$W/a.bin" | od -An -tx1 | head -1)"
  run pgas_as pio-sb cp "$W/z" pgas:/shared/g
  assert_failure
  assert_output --partial "Permission denied"
  run pgas_as pio-sb dd if="$W/z" of=pgas:/shared/g bs=1000 seek=7 conv=notrunc status=none
  assert_failure
  assert_output --partial "Permission denied"
  # the file is whole, and pio-sa reads it back through pgas: as well
  run pfs_as pio-sa "$PFS" get /shared/g "$W/sa/g"
  assert_success
  cmp "$W/a.bin" "$W/sa/g"
  pgas_as pio-sa cat pgas:/shared/g >"$W/sa/g2"
  cmp "$W/a.bin" "$W/sa/g2"
  # the permitted action for pio-sb: its own file in the same folder
  run pgas_as pio-sb cp "$W/z" pgas:/shared/gb
  assert_success
  pgas_as pio-sb cat pgas:/shared/gb >"$W/sb/gb"
  cmp "$W/z" "$W/sb/gb"
}

@test "pfs: new files get the umask, and root of another system is nobody with --root-squash" {
  pair_up
  pfs_up
  # the metadata server again, squashing root (/shared was made by root)
  pio_stop "$MDS_PID" # (not in run: the test's shell is its parent)
  bg_start "$W/mds2.log" env PIO_SOCKET="$PIO_SOCK_B" "$PIO_BUILD/sbin/pfs-mds" \
    --db "$W/mds.db" --name pfs.sec.mds --root-squash
  pio_wait_until 30 env PIO_SOCKET="$PIO_SOCK_A" PFS_MDS=pfs.sec.mds "$PFS" df
  printf 'x' >"$W/x"
  chmod 666 "$W/x"
  run pfs_as pio-sa sh -c "umask 027 && exec '$PFS' put '$W/x' /shared/x"
  assert_success
  run pfs_as pio-sa "$PFS" stat /shared/x
  assert_output --partial "mode: 0640"
  run pfs_as pio-sa "$PFS" chmod 600 /shared/x
  assert_success
  # root, squashed to nobody: cannot read pio-sa's 0600 file, cannot make
  # files in / (root's own folder, 0755)
  run env PIO_SOCKET="$PIO_SOCK_A" PFS_MDS=pfs.sec.mds "$PFS" get /shared/x "$W/r"
  assert_failure
  assert_output --partial "permission denied"
  run env PIO_SOCKET="$PIO_SOCK_A" PFS_MDS=pfs.sec.mds "$PFS" mkdir /rootdir
  assert_failure
  assert_output --partial "permission denied"
  # it makes files where everyone may, owned by nobody
  run env PIO_SOCKET="$PIO_SOCK_A" PFS_MDS=pfs.sec.mds "$PFS" put "$W/x" /shared/r
  assert_success
  run env PIO_SOCKET="$PIO_SOCK_A" PFS_MDS=pfs.sec.mds "$PFS" stat /shared/r
  assert_output --partial "owner: 65534 65534"
}
