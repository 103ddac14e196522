#!/usr/bin/env bash
# deps.sh - install the Debian 12 packages PIO needs (make deps).
# SPDX-License-Identifier: BSD-3-Clause
#
# Idempotent and quiet when everything is present. As root it installs what
# is missing with apt-get (running `apt-get update` once if a package cannot
# be found); otherwise it prints the exact apt-get line and fails. The list
# below is the single source of truth for the project's system packages;
# docs/design-notes.md says why each one is there.
#
# It never removes a package the user has: apt-get runs with --no-remove (it
# stops instead, saying which package conflicts). VTK for pio-vizd: where
# ParaView is installed (Debian's paraview, whose python3-paraview conflicts
# with python3-vtk9, which libvtk9-dev needs), the VTK that paraview-dev
# ships beside it; otherwise libvtk9-dev. viz/module.mk finds either.
set -u

PKGS=(
  # toolchain
  gcc g++ gfortran make pkg-config clang libclang-rt-14-dev clang-format
  # runtime libraries (see DESIGN.md "Dependencies")
  libzmq3-dev libsodium-dev libssl-dev libxxhash-dev xxhash
  libucx-dev ucx-utils libibverbs-dev
  openmpi-bin libopenmpi-dev
  libhdf5-openmpi-dev libhdf5-dev hdf5-tools python3-h5py
  xvfb xauth cmake
  libmicrohttpd-dev libsqlite3-dev
  # the commands' JSON output (--json; common/cli_json.c)
  libjson-c-dev
  # tests
  libcmocka-dev bats bats-assert bats-support bats-file
  # test bed and baselines
  iproute2 iperf3 procps psmisc openssh-client openssh-server rsync sshfs faketime
  globus-gridftp-server-progs globus-gass-copy-progs
  # viz tests (the live page in headless Chromium, PNG checks, the event feed)
  chromium curl python3-pil python3-zmq
  # docs and plots
  go-md2man python3 python3-matplotlib
  # the Python package (bindings/python: cffi builds it; pip into a venv) and
  # its tests (tests/python, pytest; numpy arrays; mpi4py ranks)
  python3-dev python3-cffi python3-venv python3-pip python3-numpy python3-mpi4py python3-pytest
  # packages and services (tests/bats/packaging.bats)
  debhelper dpkg-dev systemd
  # a real Slurm on the test bed (tests/bats/slurm.bats, which runs its own
  # daemons; the packages' services find no /etc/slurm/slurm.conf and stay down)
  slurm-wlm munge
)

installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }
# VTK: ParaView's own where ParaView is installed (or libvtk9-dev cannot be)
if installed paraview || installed python3-paraview; then
  PKGS+=(paraview-dev)
else
  PKGS+=(libvtk9-dev)
fi

# AES-GCM's fastest sealing backend (piod/seal_imb.c) exists for x86-64 only
[ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ] && PKGS+=(libipsec-mb-dev)
[ -n "${PIO_DEPS_EXTRA:-}" ] && PKGS+=($PIO_DEPS_EXTRA)  # for tests of this script
missing=()
for p in "${PKGS[@]}"; do
  installed "$p" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

line="apt-get install -y --no-remove ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "make deps: missing Debian packages: ${missing[*]}" >&2
  echo "make deps: run as root:  $line" >&2
  exit 1
fi

echo "make deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
install() { apt-get install -y -q --no-remove "${missing[@]}" >"$log" 2>&1; }
log=$(mktemp /tmp/pio-deps.XXXXXX)
# refused: apt would have had to remove a package the user has
removals() {
  grep -q 'remove is disabled' "$log" || return 1
  echo "make deps: not done: installing ${missing[*]} would remove packages you have:" >&2
  apt-get -s install -y "${missing[@]}" 2>/dev/null | sed -n 's/^Remv \([^ ]*\).*/  \1/p' >&2
  echo "make deps: install what is missing by hand, or build without that part (WITH_VIZ=0, ...)" >&2
  exit 1
}
if ! install; then
  removals
  echo "make deps: a package was not found; running apt-get update once"
  if ! apt-get update -q >>"$log" 2>&1 || ! install; then
    removals
    tail -n 20 "$log" >&2
    echo "make deps: failed: $line (log: $log)" >&2
    exit 1
  fi
fi
rm -f "$log"
echo "make deps: done"
