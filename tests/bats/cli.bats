#!/usr/bin/env bats
# cli.bats - the command-line conventions every PIO command shares: --version,
# JSON that stays valid whatever the names, usage errors before connecting,
# bash completion.
# SPDX-License-Identifier: BSD-3-Clause
#
# pfs, gas-stat, pio-perf and pcp --json are checked where their servers
# run (pfs.bats, gas.bats, perf.bats, pcp.bats).

load "$BATS_TEST_DIRNAME/../lib/helpers"
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

teardown() {
  pio_cleanup
}

# the version pio.h gives (PIO_VERSION_MAJOR.MINOR.PATCH)
header_version() {
  local p=$PIO_SRC/libpio/pio.h
  printf '%s.%s.%s' "$(awk '$2 == "PIO_VERSION_MAJOR" { print $3 }' "$p")" \
    "$(awk '$2 == "PIO_VERSION_MINOR" { print $3 }' "$p")" \
    "$(awk '$2 == "PIO_VERSION_PATCH" { print $3 }' "$p")"
}

@test "--version: every program make install installs prints 'NAME VERSION (protocol N)'" {
  local v proto d=$BATS_TEST_TMPDIR/stage args n=0 p name
  v=$(header_version)
  # the shared library's files carry the same version
  run grep -E '^PIO_VERSION +:= ' "$PIO_SRC/libpio/module.mk"
  assert_output "PIO_VERSION   := $v"
  proto=$(awk '$2 == "PIO_WIRE_VERSION" { print $3 }' "$PIO_SRC/common/wire/wire.h")
  [[ $proto =~ ^[0-9]+$ ]] || fail "no PIO_WIRE_VERSION in common/wire/wire.h"
  mapfile -t args < <(pio_make_args)
  run make -C "$PIO_SRC" "${args[@]}" install DESTDIR="$d" PREFIX=/usr
  assert_success
  for p in "$d"/usr/bin/* "$d"/usr/sbin/*; do
    name=$(basename "$p")
    # pio-job asks the piod it starts: the staged one
    run env PATH="$d/usr/sbin:$PATH" "$p" --version
    assert_success
    assert_output "$name $v (protocol $proto)"
    n=$((n + 1))
  done
  # pio-info pio-perf pio-job pfs gas-stat pcp (pio-vizd) piod pfs-mds pfs-iod
  # gas-dispatcher pio-files
  [ "$n" -ge 11 ] || fail "only $n programs checked"
  [ -x "$d/usr/bin/pcp" ] || fail "no pcp installed"
  [ -x "$d/usr/sbin/pio-files" ] || fail "no pio-files installed"
}

@test "--version: piod's line is pio.h's version, and pio-info's the same but for the name" {
  run "$PIO_BUILD/sbin/piod" --version
  assert_success
  assert_output --regexp "^piod $(header_version) \(protocol [0-9]+\)$"
  local piod_line=$output
  run "$PIO_BUILD/bin/pio-info" --version
  assert_output "pio-info ${piod_line#piod }"
}

@test "pio-info --json: an application named with a quote and a backslash is valid JSON with the exact name" {
  local d=$BATS_TEST_TMPDIR name cport dport
  name='we"ird\app'
  _pio_keys "$d" C
  read -r cport dport < <(_pio_port 2)
  _pio_start C "$d" "" -- --listen 127.3.0.1 --control-port "$cport" --data-port "$dport"
  _pio_wait_sock "$d/C.sock"
  PIO_SOCKET=$d/C.sock timeout 60 "$PIO_BUILD/tests/prog/pio-check" local hold -a "$name" -n 50 \
    >"$d/hold.out" 2>&1 &
  echo "pid $!" >>"$(_pio_registry)"
  pio_wait_until 20 grep -q '^OK hold' "$d/hold.out"
  run env PIO_SOCKET="$d/C.sock" "$PIO_BUILD/bin/pio-info" --json
  assert_success
  run python3 -c '
import json, sys
info = json.loads(sys.argv[1])
print("\n".join(a["name"] for a in info["applications"] if a["joined"] == 1))' "$output"
  assert_success
  assert_output "$name"
}

@test "pfs: a usage error of a command is reported as such before joining piod (exit 2)" {
  local nosock=$BATS_TEST_TMPDIR/no.sock
  run env PIO_SOCKET="$nosock" "$PIO_BUILD/bin/pfs" getstripe
  assert_failure 2
  assert_output --partial "usage: getstripe"
  refute_output --partial "piod"
  run env PIO_SOCKET="$nosock" "$PIO_BUILD/bin/pfs" df -x
  assert_failure 2
  assert_output --partial "usage: df [-h] [--json]"
  run env PIO_SOCKET="$nosock" "$PIO_BUILD/bin/pfs" setstripe -c -1
  assert_failure 2
  assert_output --partial "usage: setstripe"
  # well-formed arguments get as far as joining: the missing piod is the error
  run env PIO_SOCKET="$nosock" "$PIO_BUILD/bin/pfs" getstripe /x
  assert_failure 1
  assert_output --partial "no piod"
}

# complete FILE FUNCTION WORD...: the completions bash offers for the last
# WORD (COMP_WORDS/COMP_CWORD as bash sets them), one a line
complete_words() {
  local file=$1 fn=$2; shift 2
  bash -c 'source "$1"; fn=$2; shift 2; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); "$fn"
           printf "%s\n" "${COMPREPLY[@]}"' _ "$PIO_SRC/tools/completion/$file" "$fn" "$@"
}

@test "bash completion: pfs, pio-info and pcp complete their commands and options" {
  run complete_words pfs _pio_pfs pfs set
  assert_success
  assert_output "setstripe"
  run complete_words pfs _pio_pfs pfs --mds pfs.even get
  assert_output "get"$'\n'"getstripe"
  run complete_words pfs _pio_pfs pfs df -
  assert_output "-h"$'\n'"--json"
  run complete_words pfs _pio_pfs pfs --v
  assert_output "--verbose"$'\n'"--version"
  run complete_words pio-info _pio_info pio-info --co
  assert_output "--count-up"$'\n'"--count"
  run complete_words pcp _pio_pcp pcp -b st
  assert_output "static"
  run complete_words pcp _pio_pcp pcp --no
  assert_output "--no-verify"
  # each file registers its function for its command
  run bash -c 'for f in pfs pio-info pcp; do source "$1/$f"; done; complete -p pfs pio-info pcp' _ \
    "$PIO_SRC/tools/completion"
  assert_success
  assert_line "complete -F _pio_pfs pfs"
  assert_line "complete -F _pio_info pio-info"
  assert_line "complete -F _pio_pcp pcp"
}
