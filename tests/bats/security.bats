#!/usr/bin/env bats
# security.bats - one host, many users: real local users against each other (issue 28).
# SPDX-License-Identifier: BSD-3-Clause
#
# Two users made here with useradd (pio-sa, pio-sb; removed at the end) run
# tests/prog/pio-check through one piod pair on loopback whose sockets every
# user may reach. Each case shows that the other user is refused and that
# the owner's own action works.

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

CHECK=$PIO_BUILD/tests/prog/pio-check

setup_file() {
  [ "$(id -u)" -eq 0 ] || return 0
  local u
  for u in pio-sa pio-sb; do
    id -u "$u" >/dev/null 2>&1 || useradd --system --no-create-home --user-group \
      --shell /usr/sbin/nologin "$u"
  done
}

teardown_file() {
  [ "$(id -u)" -eq 0 ] || return 0
  userdel pio-sa >/dev/null 2>&1 || true
  userdel pio-sb >/dev/null 2>&1 || true
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

# as USER CMD...: CMD as that user (uid and its own group only), on piod A
as() {
  local u=$1
  shift
  env PIO_SOCKET="$PIO_SOCK_A" setpriv --reuid="$u" --regid="$u" --clear-groups "$@"
}

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
