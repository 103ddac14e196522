#!/usr/bin/env bats
# build.bats - the build system: sanitizer choice, verbose mode, install, pkg-config, deps.
# SPDX-License-Identifier: BSD-3-Clause

load "$BATS_TEST_DIRNAME/../lib/helpers"

setup() { cd "$PIO_SRC"; }

@test "an unknown SANITIZER stops the build with a clear message" {
  run make SANITIZER=bogus
  assert_failure
  assert_output --partial "unknown SANITIZER 'bogus'"
}

@test "make V=1 shows full compiler commands, quiet mode does not" {
  run make V=1 WERROR=1 "$BATS_TEST_TMPDIR/b1/lib/libpio.a" B="$BATS_TEST_TMPDIR/b1"
  assert_success
  assert_output --regexp "gcc .*-std=c11 .*-Werror.*-c -o"
  run make "$BATS_TEST_TMPDIR/b2/lib/libpio.a" B="$BATS_TEST_TMPDIR/b2"
  assert_success
  assert_output --partial "  CC     common/error.c"
  refute_output --partial "-std=c11"
}

@test "-Werror only with WERROR=1; CC, CXX and FC come from the environment; a bad switch stops make" {
  local b=$BATS_TEST_TMPDIR/b
  run env -u WERROR make -n V=1 B="$b" "$b/common/error.o"
  assert_success
  assert_output --regexp "gcc .*-std=c11 .*-c -o"
  refute_output --partial "-Werror"
  # the compilers the environment names
  run env CC=clang make -n V=1 WERROR=1 B="$b" "$b/common/error.o"
  assert_success
  assert_output --regexp "(^|[[:space:]])clang .*-std=c11 .*-Werror"
  run env CXX=clang++ make -n V=1 B="$b" "$b/viz/pub.o"
  assert_success
  assert_output --regexp "(^|[[:space:]])clang\+\+ .*-std=c\+\+17"
  run env FC=gfortran-12 make -n V=1 B="$b" "$b/bindings/fortran/pio.o"
  assert_success
  assert_output --regexp "(^|[[:space:]])gfortran-12 .*-std=f2018"
  run make -n WITH_VIZ=maybe B="$b"
  assert_failure
  assert_output --partial "WITH_VIZ=maybe: give 0 or 1"
}

@test "make install puts the library, pio.h and pio.pc under PREFIX and a program builds with pkg-config" {
  prefix=$BATS_TEST_TMPDIR/prefix
  mapfile -t args < <(pio_make_args)
  run make "${args[@]}" install PREFIX="$prefix"
  assert_success
  [ -f "$prefix/include/pio.h" ]
  [ -f "$prefix/lib/libpio.a" ]
  [ -L "$prefix/lib/libpio.so" ]
  [ -f "$prefix/lib/pkgconfig/pio.pc" ]
  # only the public headers are installed: pio.h, the Fortran module,
  # pfs.h (libpfs, the parallel file system's client library) and anco.h
  [ "$(ls "$prefix/include" | tr '\n' ' ')" = "anco.h pfs.h pio.h pio.mod pio_mpi.h " ]
  [ -f "$prefix/lib/libpiof.a" ]
  [ -f "$prefix/lib/libpfs.a" ]
  cat >"$BATS_TEST_TMPDIR/p.c" <<'C'
#include <pio.h>
#include <stdio.h>
int main(void) { printf("%s\n", PIO_Strerror(PIO_ETIMEDOUT)); return 0; }
C
  export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
  # under `make test SANITIZER=...` (MAKEFLAGS reaches this make) the
  # installed library is sanitized: the program links its runtime too
  san=$(pio_san_flags)
  run bash -c "cc $san -o '$BATS_TEST_TMPDIR/p' '$BATS_TEST_TMPDIR/p.c' \$(pkg-config --cflags --libs pio) -Wl,-rpath,'$prefix/lib' && '$BATS_TEST_TMPDIR/p'"
  assert_success
  assert_output "timed out"
  # pio.pc is the C library alone (the Fortran binding has pio-fortran.pc)
  run pkg-config --libs pio
  assert_success
  refute_output --partial "-lpiof"
  [ -L "$prefix/lib/libpfs.so" ]
  # a pfs client builds from the installed pfs.h and libpfs alone
  cat >"$BATS_TEST_TMPDIR/f.c" <<'C'
#include <pfs.h>
#include <pio.h>
#include <stdio.h>
int main(void) { pfs_fs *fs; printf("%s\n", PIO_Strerror(pfs_mount(NULL, NULL, &fs))); return 0; }
C
  run bash -c "cc $san -o '$BATS_TEST_TMPDIR/f' '$BATS_TEST_TMPDIR/f.c' \$(pkg-config --cflags --libs pfs) -Wl,-rpath,'$prefix/lib' && '$BATS_TEST_TMPDIR/f'"
  assert_success
  assert_output --partial "PIO is not initialized"
}

@test "make deps is quiet when everything is installed" {
  run mk/deps.sh
  assert_success
  assert_output ""
}

@test "make deps as non-root with a missing package prints the exact apt-get line and fails" {
  run env PIO_DEPS_EXTRA="pio-no-such-package" setpriv --reuid=65534 --regid=65534 --clear-groups mk/deps.sh
  assert_failure
  assert_output --partial "missing Debian packages: pio-no-such-package"
  assert_output --partial "apt-get install -y --no-remove pio-no-such-package"
}

@test "make format-check passes on the committed sources" {
  run make format-check
  assert_success
}

@test "libpio.so exports the API of pio.h and nothing else (nm -D)" {
  run nm -D --defined-only "$PIO_BUILD/lib/libpio.so"
  assert_success
  exported=$(awk '$2 ~ /^[A-Z]$/ { print $3 }' <<<"$output" | sort)
  others=$(grep -v '^PIO_' <<<"$exported" || true)
  [ -z "$others" ] || fail "libpio.so exports more than the API: $(echo $others)"
  # every function pio.h declares is exported
  declared=$(grep -oE '^[A-Za-z_][A-Za-z0-9_ ]*[ *](PIO_[A-Za-z0-9_]+)\(' libpio/pio.h |
    grep -oE 'PIO_[A-Za-z0-9_]+\($' | tr -d '(' | sort -u)
  [ "$(wc -l <<<"$declared")" -ge 40 ] || fail "pio.h declares only: $declared"
  missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
  [ -z "$missing" ] || fail "declared in pio.h, not exported: $(echo $missing)"
}

@test "libpfs.so exports the API of pfs.h and nothing else (nm -D)" {
  run nm -D --defined-only "$PIO_BUILD/lib/libpfs.so"
  assert_success
  exported=$(awk '$2 ~ /^[A-Z]$/ { print $3 }' <<<"$output" | sort)
  declared=$(grep -oE '\bpfs_[a-z0-9_]+\(' pfs/pfs.h | tr -d '(' | sort -u)
  [ "$(wc -l <<<"$declared")" -ge 30 ] || fail "pfs.h declares only: $declared"
  # exactly the functions pfs.h declares: none missing, nothing more (the
  # message codec, the layout and the capture hook inside stay hidden)
  run comm -3 <(echo "$declared") <(echo "$exported")
  assert_success
  assert_output ""
  run readelf -d "$PIO_BUILD/lib/libpfs.so"
  assert_success
  assert_output --partial "Shared library: [libpio.so.0]"
}

# probe HEADER: a throw-away source file that includes HEADER
probe() { printf '#include "%s"\nint pio_probe_ok;\n' "$1" >"$BATS_TEST_TMPDIR/probe.c"; }

@test "each layer's include path: a forbidden include stops the build, an allowed one compiles" {
  b=$BATS_TEST_TMPDIR/b
  # a client (pfs) sees pio.h, libpio's second tier and the shared base ...
  for h in pio.h pio_svc.h capture.h parse.h wire/pcp_proto.h; do
    probe "$h"
    run make -s inc-check B="$b" SRC=pfs/client.c PROBE="$BATS_TEST_TMPDIR/probe.c"
    assert_success
  done
  # ... and nothing private of libpio, the transports or piod
  for h in win.h partner.h transport.h rma.h piod.h core_int.h; do
    probe "$h"
    run make -s inc-check B="$b" SRC=pfs/client.c PROBE="$BATS_TEST_TMPDIR/probe.c"
    assert_failure
    assert_output --partial "$h: No such file or directory"
  done
  # the same for the tools (pio-info once included rma.h)
  probe rma.h
  run make -s inc-check B="$b" SRC=tools/pio-info/pio-info.c PROBE="$BATS_TEST_TMPDIR/probe.c"
  assert_failure
  assert_output --partial "rma.h: No such file or directory"
  # transports see the shared base only: not libpio's second tier, not piod
  probe capture.h
  run make -s inc-check B="$b" SRC=transport/tcp/tcp.c PROBE="$BATS_TEST_TMPDIR/probe.c"
  assert_success
  for h in pio_svc.h win.h piod.h; do
    probe "$h"
    run make -s inc-check B="$b" SRC=transport/tcp/tcp.c PROBE="$BATS_TEST_TMPDIR/probe.c"
    assert_failure
    assert_output --partial "$h: No such file or directory"
  done
  # piod sees the transports but no client (pfs's qos.h) and not libpio's
  probe transport.h
  run make -s inc-check B="$b" SRC=piod/core.c PROBE="$BATS_TEST_TMPDIR/probe.c"
  assert_success
  for h in qos.h win.h; do
    probe "$h"
    run make -s inc-check B="$b" SRC=piod/core.c PROBE="$BATS_TEST_TMPDIR/probe.c"
    assert_failure
    assert_output --partial "$h: No such file or directory"
  done
  # an example sees the public header alone
  probe pio.h
  run make -s inc-check B="$b" SRC=examples/hello.c PROBE="$BATS_TEST_TMPDIR/probe.c"
  assert_success
  # (not err.h for the probe: glibc has one of that name)
  probe capture.h
  run make -s inc-check B="$b" SRC=examples/hello.c PROBE="$BATS_TEST_TMPDIR/probe.c"
  assert_failure
  assert_output --partial "capture.h: No such file or directory"
}

@test "no source reaches another folder's header by a relative path" {
  # a quoted include is looked up beside its file first: "../x.h" would get
  # around the include paths, so none is allowed outside the tests
  run grep -rnE '^\s*#\s*include\s+"[^"]*\.\./' common transport libpio piod pfs anco viz tools bench \
    examples bindings
  assert_failure 1
  assert_output ""
}
