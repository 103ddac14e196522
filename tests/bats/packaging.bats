#!/usr/bin/env bats
# packaging.bats - services and packages: systemd units, install/uninstall,
# a build without the optional parts, sd_notify readiness, make deps beside
# ParaView, and the Debian packages (issue 32, items 4 to 6).
# SPDX-License-Identifier: BSD-3-Clause
#
# Every make here runs with the build's own settings (pio_make_args), so it
# reuses $PIO_BUILD's objects. The Debian test builds the packages from a
# copy of the tree (dpkg-buildpackage -b: under a minute here), installs them
# with dpkg -i, runs piod --version from /usr/sbin and purges them; it skips
# where a PIO package or /etc/pio is already on the machine (it never
# overwrites what it did not put). PIO_TEST_DEB=0 skips it.

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

UNITS="piod.service pfs-mds.service pfs-iod@.service gas-dispatcher.service pio-vizd.service"
DEB_PKGS="libpio0 libpio-dev pio pio-vizd python3-pio"

setup() {
  cd "$PIO_SRC"
  mapfile -t MARGS < <(pio_make_args)
  W=$BATS_TEST_TMPDIR
}

teardown() {
  pio_cleanup
  # the Debian test's packages, also after a failure in the middle
  if [ -f "$W/deb-installed" ]; then
    # shellcheck disable=SC2086 # package names are words
    dpkg --purge $DEB_PKGS >/dev/null 2>&1 || true
  fi
  # /run/pio, made by the packages' tmpfiles entry, goes when it was not there
  if [ -f "$W/run-pio-made" ]; then rmdir /run/pio 2>/dev/null || true; fi
}

# ---- units ---------------------------------------------------------------------

@test "units: every unit install writes passes systemd-analyze verify; a broken one does not" {
  command -v systemd-analyze >/dev/null || skip "no systemd-analyze (make deps installs systemd)"
  local p=$W/prefix u
  run make "${MARGS[@]}" install PREFIX="$p"
  assert_success
  cd "$p/lib/systemd/system"
  for u in $UNITS; do
    [ -f "$u" ] || fail "make install did not write $u"
  done
  # units name the paths of this install; man pages from this install too
  run grep -h '^ExecStart=' $UNITS
  assert_output --partial "ExecStart=$p/sbin/piod --foreground --config $p/etc/pio/piod.conf"
  run bash -c "cat $UNITS | grep -c '^Type=notify$'"
  assert_output "5"
  run env MANPATH="$p/share/man" systemd-analyze verify piod.service pfs-mds.service \
    pfs-iod@pfs.iod.n1.service gas-dispatcher.service pio-vizd.service
  assert_success
  assert_output ""
  # the check can fail: a wrong type and a missing program are reported
  sed -e 's/^Type=notify/Type=notifyy/' -e "s|$p/sbin/piod|$p/sbin/no-piod|" piod.service >"$W/bad.service"
  run env MANPATH="$p/share/man" systemd-analyze verify "$W/bad.service"
  assert_failure
  assert_output --partial "Failed to parse service type"
  assert_output --partial "no-piod is not executable"
  # tmpfiles: /run/pio
  run cat "$p/lib/tmpfiles.d/pio.conf"
  assert_output --regexp "(^|$(printf '\n'))d /run/pio 0755 root root -"
}

# ---- install / uninstall ---------------------------------------------------------

@test "make install DESTDIR=... then make uninstall DESTDIR=... leaves nothing; an edited configuration stays" {
  local d=$W/dest
  run make "${MARGS[@]}" install DESTDIR="$d"
  assert_success
  # what install put: libraries, headers, pkg-config, commands, units, /etc/pio
  local l=$d/usr/local
  for f in lib/libpio.so.0 lib/libpio.a lib/pkgconfig/pio.pc lib/pkgconfig/pfs.pc \
    lib/pkgconfig/pio-fortran.pc include/anco.h include/pio.h sbin/piod bin/pcp \
    lib/systemd/system/piod.service lib/tmpfiles.d/pio.conf etc/pio/piod.conf etc/pio/services.env \
    share/man/man8/piod.8; do
    [ -e "$l/$f" ] || fail "make install did not put $l/$f"
  done
  # the Python package (where python3 has cffi), linked to the installed libpio
  run find "$l/lib" -path "*dist-packages/pio/_pio*.so"
  assert_output --regexp "_pio.*\.so$"
  run readelf -d "$output"
  assert_output --partial "runpath: [/usr/local/lib]"
  run make "${MARGS[@]}" uninstall DESTDIR="$d"
  assert_success
  run find "$d" -mindepth 1
  assert_success
  assert_output ""
  # a configuration the user changed is kept (and install does not overwrite it)
  run make "${MARGS[@]}" install DESTDIR="$d"
  assert_success
  echo "name = here" >>"$l/etc/pio/piod.conf"
  run make "${MARGS[@]}" install DESTDIR="$d"
  assert_success
  assert_output --partial "kept   $l/etc/pio/piod.conf (present)"
  run tail -n 1 "$l/etc/pio/piod.conf"
  assert_output "name = here"
  run make "${MARGS[@]}" uninstall DESTDIR="$d"
  assert_success
  assert_output --partial "kept   $l/etc/pio/piod.conf (changed since install)"
  run find "$d" -type f
  assert_output "$l/etc/pio/piod.conf"
}

@test "man: after make install every function of pio.h, pfs.h and anco.h has a page, its own or a .so alias to the page that documents it" {
  local d=$W/dest f target
  run make "${MARGS[@]}" install DESTDIR="$d"
  assert_success
  local m=$d/usr/local/share/man
  # the functions, read from the headers here (not through tools/man-aliases)
  {
    sed -nE 's/^[a-z][a-z _*]*[ *]((PIO|pio)_[A-Za-z0-9_]+)\(.*/\1/p' libpio/pio.h
    grep -oE '\bpfs_[a-z0-9_]+\(' pfs/pfs.h | tr -d '('
    grep -oE '^[a-z].*\banco_[a-z0-9_]+\(' anco/anco.h | grep -oE 'anco_[a-z0-9_]+\($' | tr -d '('
  } | sort -u >"$W/funcs"
  [ "$(grep -c '^PIO_' "$W/funcs")" -ge 45 ] || fail "pio.h declares only: $(cat "$W/funcs")"
  run grep -cxE 'PIO_Isend|PIO_Waitany|PIO_Waitall|PIO_Testany|PIO_Getfd|pfs_grow|anco_init' "$W/funcs"
  assert_output 7
  while read -r f; do
    [ -f "$m/man3/$f.3" ] || fail "make install put no page for $f"
    target=man3/$f.3
    if head -n 1 "$m/man3/$f.3" | grep -q '^\.so '; then
      target=$(sed -n '1s/^\.so //p' "$m/man3/$f.3")
      [ -f "$m/$target" ] || fail "$f.3 is an alias to $target, which make install did not put"
      run head -c 4 "$m/$target"
      refute_output ".so "
    fi
    # the page it shows documents f (named in its NAME or SYNOPSIS)
    run grep -c -- "$f" "$m/$target"
    [ "$output" -ge 1 ] || fail "$f.3 shows $target, which does not name $f"
  done <"$W/funcs"
  # man(1) follows an alias: PIO_Isend shows PIO_Send's page
  command -v man >/dev/null || skip "no man(1) to render the pages"
  run env -C "$m" MANWIDTH=200 man -P cat -l man3/PIO_Isend.3
  assert_success
  assert_output --partial "PIO_Send, PIO_Isend - send a message"
  run env -C "$m" MANWIDTH=200 man -P cat -l man3/PIO_Testany.3
  assert_success
  assert_output --partial "PIO_Waitany, PIO_Waitall, PIO_Testany - complete one or all"
}

@test "man: tools/man-aliases stops the build for a public function that no page documents" {
  printf 'int PIO_Nowhere(int x);\n' >"$W/extra.h"
  run tools/man-aliases '$(B)/man' libpio/pio.h "$W/extra.h" -- docs/man/*.md
  assert_failure
  assert_output --partial "no man page documents PIO_Nowhere"
  # the same headers and pages without it: a fragment that lists PIO_Isend
  run tools/man-aliases '$(B)/man' libpio/pio.h -- docs/man/*.md
  assert_success
  assert_line '$(B)/man/PIO_Isend.3: MAN_SO := man3/PIO_Send.3'
  assert_line '$(B)/man/PIO_Get.3: MAN_SO := man7/pio_rma.7'
  refute_output --partial '$(B)/man/PIO_Send.3'
}

@test "make install builds nothing of the tests" {
  # a dry run in a fresh build folder lists every command install would run
  run make -n "${MARGS[@]}" B="$W/fresh" install DESTDIR="$W/d"
  assert_success
  assert_output --partial "sbin/piod"
  refute_output --partial "/tests/"
  refute_output --partial "examples/"
  refute_output --partial "cmocka"
}

# ---- the optional parts ------------------------------------------------------------

@test "WITH_VIZ=0 WITH_FORTRAN=0 WITH_UCX=0: libpio, piod and pcp build without VTK, Fortran or UCX, and copy a file" {
  local b=$W/b0
  run make -j2 B="$b" WITH_VIZ=0 WITH_FORTRAN=0 WITH_UCX=0 programs
  [ "$status" -eq 0 ] || { echo "$output" | tail -n 30; fail "the build failed"; }
  [ -x "$b/sbin/piod" ] || fail "no piod"
  [ -x "$b/bin/pcp" ] || fail "no pcp"
  run ls "$b/bin"
  refute_output --partial "pio-vizd"
  run ls "$b/lib"
  refute_output --partial "libpiof.a"
  # nothing of UCX, VTK or gfortran in the programs or the library
  run bash -c "ldd '$b/sbin/piod' '$b/bin/pcp' '$b/lib/libpio.so'"
  assert_success
  refute_output --regexp "libuc[pst]|libvtk|libgfortran"
  run nm "$b/lib/libpio.a"
  refute_output --partial "ucp_"
  # ... and they work: a loopback pair of this build's piods, pcp to B's export
  PIOD=$b/sbin/piod PIO_INFO=$b/bin/pio-info
  mkdir -p "$W/export"
  head -c 3000000 /dev/urandom >"$W/f"
  PIO_PIOD_FLAGS_B="--export $W/export" pio_pair_loopback "$W" 2
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 60 "$b/bin/pcp" -q "$W/f" B:
  assert_success
  run cmp "$W/f" "$W/export/f"
  assert_success
  # and say that one-sided access is not built in
  run "$b/bin/pio-info" --rdma
  assert_failure
  assert_output --partial "this libpio has no one-sided backend"
}

@test "VTK from VTK_DIR (CMake's package folder); a wrong VTK_DIR stops the build and says so" {
  local b=$W/bv dir
  dir=$(ls -d /usr/lib/*/cmake/vtk-9.* /usr/lib/*/cmake/paraview-*/vtk 2>/dev/null | head -n 1)
  [ -n "$dir" ] || skip "no VTK CMake package on this machine"
  run make "${MARGS[@]}" B="$b" VTK_DIR="$dir" "$b/vtk.mk"
  assert_success
  run grep -E '^VTK_(FOUND_DIR|CXXFLAGS|LIBS) :=' "$b/vtk.mk"
  assert_output --partial "VTK_FOUND_DIR := $dir"
  assert_output --regexp "VTK_LIBS := [^ ]*libvtkCommonCore[^ ]*\.so"
  run make "${MARGS[@]}" B="$b" VTK_DIR="$W/no-vtk" "$b/viz/pub.o"
  assert_failure
  assert_output --partial "VTK not usable from $W/no-vtk"
}

# ---- readiness ---------------------------------------------------------------------

# notify_listen SOCKET WATCH: a datagram socket at SOCKET ("@name":
# abstract) that prints the first notification it gets and whether the
# path WATCH existed when it came; started in the background (BG_PID).
notify_listen() {
  bg_start "$W/notify.out" timeout 30 python3 -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
addr = sys.argv[1]
s.bind("\0" + addr[1:] if addr.startswith("@") else addr)
open(sys.argv[3], "w").close()
msg = s.recv(4096).decode()
print(msg.replace("\n", " "), "|", "serving" if os.path.exists(sys.argv[2]) else "not serving")
' "$1" "$2" "$W/notify.bound"
  pio_wait_until 10 test -f "$W/notify.bound"
}

@test "sd_notify: piod says READY=1 once its socket serves, on a path or an abstract NOTIFY_SOCKET" {
  _pio_keys "$W" A
  read -r cport dport < <(pio_free_port 2)
  notify_listen "$W/notify.sock" "$W/A.sock"
  local lpid=$BG_PID
  NOTIFY_SOCKET=$W/notify.sock _pio_start A "$W" "" -- --listen 127.0.0.1 \
    --control-port "$cport" --data-port "$dport"
  bg_wait "$lpid"
  [ "$BG_RC" -eq 0 ] || fail "no notification (piod log: $(cat "$W/A.log"))"
  run cat "$W/notify.out"
  assert_output "READY=1 | serving"
  # an abstract socket (systemd's own form) works the same
  pio_piods_stop
  rm -f "$W/notify.bound"
  local abstract="@pio-test-$$-$RANDOM"
  notify_listen "$abstract" "$W/A.sock"
  lpid=$BG_PID
  NOTIFY_SOCKET=$abstract _pio_start A "$W" "" -- --listen 127.0.0.1 \
    --control-port "$cport" --data-port "$dport"
  bg_wait "$lpid"
  [ "$BG_RC" -eq 0 ] || fail "no notification on $abstract"
  run cat "$W/notify.out"
  assert_output "READY=1 | serving"
}

@test "sd_notify: pfs-mds, pfs-iod and pio-vizd say READY=1 once they serve" {
  _pio_keys "$W" A
  read -r cport dport < <(pio_free_port 2)
  _pio_start A "$W" "" -- --listen 127.0.0.1 --control-port "$cport" --data-port "$dport"
  _pio_wait_sock "$W/A.sock"
  export PIO_SOCKET=$W/A.sock
  local d
  for d in pfs-mds pfs-iod pio-vizd; do
    rm -f "$W/notify.bound" "$W/notify.sock"
    notify_listen "$W/notify.sock" "$W/A.sock"
    local lpid=$BG_PID args=()
    case $d in
      pfs-mds) args=(--db "$W/mds.db" --iods pfs.iod.t) ;;
      pfs-iod) args=(--dir "$W/iod" --name pfs.iod.t) ;;
      pio-vizd) args=(--app vizt --archive "$W/viz") ;;
    esac
    mkdir -p "$W/iod" "$W/viz"
    pio_spawn "$W/$d.log" env NOTIFY_SOCKET="$W/notify.sock" "$d" "${args[@]}" >"$W/$d.pid"
    bg_wait "$lpid"
    [ "$BG_RC" -eq 0 ] || fail "$d: no notification (log: $(cat "$W/$d.log"))"
    run cat "$W/notify.out"
    assert_output "READY=1 | serving"
    pio_stop "$(cat "$W/$d.pid")" 10 || true
  done
}

# ---- make deps beside ParaView ------------------------------------------------------

@test "make deps never removes a package: python3-paraview (conflicts with python3-vtk9) is refused, nothing removed" {
  pio_need_root
  dpkg-query -W -f='${Status}' python3-vtk9 2>/dev/null | grep -q "install ok installed" ||
    skip "python3-vtk9 is not installed here"
  run dpkg-query -W -f='${Status}' python3-paraview
  [ "$output" != "install ok installed" ] || skip "python3-paraview is installed here"
  run env PIO_DEPS_EXTRA=python3-paraview mk/deps.sh
  assert_failure
  assert_output --partial "would remove packages you have"
  assert_output --partial "python3-vtk9"
  run dpkg-query -W -f='${Status}' python3-vtk9 libvtk9-dev
  assert_output "install ok installedinstall ok installed"
}

# ---- Debian packages ------------------------------------------------------------------

@test "debian: dpkg-buildpackage -b builds the packages; dpkg -i installs them; piod --version runs from them" {
  pio_need_root
  [ "${PIO_TEST_DEB:-1}" = 1 ] || skip "PIO_TEST_DEB=0"
  local p
  for p in $DEB_PKGS; do
    run dpkg-query -W -f='${Status}' "$p"
    [ "$output" != "install ok installed" ] || skip "package $p is installed here: not touching it"
  done
  [ ! -e /etc/pio ] || skip "/etc/pio exists here: not touching it"
  # a copy of the tree (what git knows, committed or not): the packages land beside it
  mkdir -p "$W/deb/src"
  git ls-files -co --exclude-standard -z | xargs -0 tar cf - | tar xf - -C "$W/deb/src"
  cd "$W/deb/src"
  run timeout 900 dpkg-buildpackage -b -us -uc -j2
  [ "$status" -eq 0 ] || { echo "$output" | tail -n 40; fail "dpkg-buildpackage failed"; }
  cd "$W/deb"
  for p in $DEB_PKGS; do
    [ -f "${p}_${PIO_DEB_VERSION:-0.1.0}_$(dpkg --print-architecture).deb" ] || fail "no package $p"
  done
  run dpkg-deb -c "pio_0.1.0_$(dpkg --print-architecture).deb"
  assert_output --partial "./usr/sbin/piod"
  assert_output --partial "./lib/systemd/system/piod.service"
  assert_output --partial "./etc/pio/piod.conf"
  [ -e /run/pio ] || touch "$W/run-pio-made"
  touch "$W/deb-installed"
  # shellcheck disable=SC2046 # file names without spaces
  run dpkg -i $(for p in $DEB_PKGS; do echo "${p}_0.1.0_$(dpkg --print-architecture).deb"; done)
  [ "$status" -eq 0 ] || { echo "$output" | tail -n 30; fail "dpkg -i failed"; }
  run /usr/sbin/piod --version
  assert_success
  assert_output --regexp "^piod [0-9]+\.[0-9]+\.[0-9]+ \(protocol [0-9]+\)$"
  # the services are installed, not enabled (piod.conf needs editing first)
  [ -f /lib/systemd/system/piod.service ] || fail "no piod.service"
  run systemctl is-enabled piod.service
  refute_output "enabled"
  # the tmpfiles entry made /run/pio; pio.pc names the Debian library folder
  [ -d /run/pio ] || fail "postinst did not make /run/pio"
  run pkg-config --libs pio
  assert_success
  assert_output --partial "-lpio"
  # the Python package from python3-pio, with the system's python3
  run /usr/bin/python3 -c 'import pio; print(pio.version(), pio.__file__)'
  assert_success
  assert_output --regexp "^[0-9]+\.[0-9]+\.[0-9]+ /usr/lib/python3/dist-packages/pio/__init__.py$"
  run dpkg --purge $DEB_PKGS
  assert_success
  rm -f "$W/deb-installed"
  [ ! -e /usr/sbin/piod ] || fail "/usr/sbin/piod is still there after purge"
  [ ! -e /etc/pio ] || fail "/etc/pio is still there after purge"
}
