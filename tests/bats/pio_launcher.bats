#!/usr/bin/env bats
# pio_launcher.bats - PIO_Init takes rank and size from the launcher (issue 32, item 2),
# and PIO_Init_comm from an MPI communicator (C and Fortran).
# SPDX-License-Identifier: BSD-3-Clause
#
# One pair of loopback piods serves the file; processes join A. The
# launcher's variables are set by hand, as srun, a PMIx launcher or a batch
# script would set them, with every other launcher's variables removed
# (env -u), and `pio-check local hold` joins with PIO_Init(app, -1, 0), that
# is "from the environment". What the piod shows for the application
# (pio-info --json: nprocs and joined) is what the processes believed.
# PIO_Init_comm is checked with programs compiled here the way a user
# compiles them (mpicc / mpif90 against the build's headers and libraries).

load "$BATS_TEST_DIRNAME/../lib/helpers"
case $PIO_BUILD in *asan*) export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 ;; esac
source "$BATS_TEST_DIRNAME/../lib/piod.bash"

CHECK=$PIO_BUILD/tests/prog/pio-check
# every launcher variable PIO_Init looks at, removed before each test sets its own
UNSET=(-u PIO_PROCESS -u PIO_NPROCS -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE
  -u PMIX_RANK -u PMIX_SIZE -u SLURM_PROCID -u SLURM_NTASKS -u SLURM_STEP_ID
  -u PMI_RANK -u PMI_SIZE)

setup_file() {
  export PAIR_DIR=$BATS_FILE_TMPDIR/pair
  mkdir -p "$PAIR_DIR"
  pio_pair_loopback "$PAIR_DIR" 1
  export PIO_SOCK_A PIO_SOCK_B
}

teardown_file() {
  pio_cleanup
}

# app_shows APP NPROCS JOINED: piod A's registry shows APP so.
app_shows() {
  PIO_SOCKET=$PIO_SOCK_A "$PIO_INFO" --json |
    grep -q "\"name\": \"$1\", \"system\": \"A\", \"nprocs\": $2, \"joined\": $3"
}

# hold APP N VAR=VALUE...: start N processes of APP (%i in the values is
# the process' index), each joined from the environment for 20 s; sets
# HOLD_PIDS.
hold() {
  local app=$1 n=$2 i; shift 2
  HOLD_PIDS=()
  for ((i = 0; i < n; i++)); do
    bg_start "$BATS_TEST_TMPDIR/$app.$i.out" env "${UNSET[@]}" PIO_SOCKET="$PIO_SOCK_A" \
      "${@//%i/$i}" timeout 60 "$CHECK" local hold -a "$app" -r -1 -P 0 -n 20
    HOLD_PIDS+=("$BG_PID")
  done
}

# release: stop the held processes (they would leave after 20 s anyway).
release() {
  local p
  for p in "${HOLD_PIDS[@]}"; do pio_stop "$p" 3 || true; done
}

# one APP ARGS... -- VAR=VALUE...: one process joined with pio-check's -r/-P ARGS.
one() {
  local app=$1 args=() ; shift
  while [ "$1" != "--" ]; do args+=("$1"); shift; done
  shift
  env "${UNSET[@]}" PIO_SOCKET="$PIO_SOCK_A" "$@" timeout 30 "$CHECK" local hold -a "$app" \
    "${args[@]}" -n 0
}

@test "srun: SLURM_PROCID and SLURM_NTASKS in a job step give 4 ranks of 4 processes" {
  hold srun4 4 SLURM_STEP_ID=0 SLURM_PROCID=%i SLURM_NTASKS=4
  run pio_wait_until 15 app_shows srun4 4 4
  release
  assert_success
}

@test "PMIx: PMIX_RANK and PMIX_SIZE give 4 ranks of 4 processes" {
  hold pmix4 4 PMIX_RANK=%i PMIX_SIZE=4
  run pio_wait_until 15 app_shows pmix4 4 4
  release
  assert_success
}

@test "PMIX_RANK with srun's size (srun --mpi=pmix sets no PMIX_SIZE): 3 of 3" {
  hold mix3 3 PMIX_RANK=%i SLURM_STEP_ID=7 SLURM_PROCID=0 SLURM_NTASKS=3
  run pio_wait_until 15 app_shows mix3 3 3
  release
  assert_success
}

@test "a batch script's own SLURM_PROCID and SLURM_NTASKS (no job step) are not a rank: process 0 of 1" {
  hold batch1 1 SLURM_PROCID=2 SLURM_NTASKS=4
  run pio_wait_until 15 app_shows batch1 1 1
  release
  assert_success
}

@test "arguments win over the environment; PIO_PROCESS wins over the launcher's" {
  hold pio2 2 PIO_PROCESS=%i PIO_NPROCS=2 SLURM_STEP_ID=0 SLURM_PROCID=3 SLURM_NTASKS=9
  run pio_wait_until 15 app_shows pio2 2 2
  release
  assert_success
  run one args1 -r 0 -P 1 -- PMIX_RANK=5 PMIX_SIZE=9
  assert_success
  assert_output --partial "OK hold"
}

@test "a launcher variable that is not a number, or a rank not below the size, is PIO_EINVAL" {
  run one bad1 -r -1 -P 0 -- SLURM_STEP_ID=0 SLURM_PROCID=x1 SLURM_NTASKS=4
  assert_failure
  assert_output --partial "PIO_EINVAL"
  run one bad2 -r -1 -P 0 -- PMIX_RANK=4 PMIX_SIZE=4
  assert_failure
  assert_output --partial "PIO_EINVAL"
  run one bad3 -r -1 -P 0 -- PMIX_RANK=1 PMIX_SIZE=0
  assert_failure
  assert_output --partial "PIO_EINVAL"
}

# build_mpi NAME SRC [COMPILER]: compile SRC (C or Fortran) with the MPI
# wrapper (or COMPILER) against the build, as a user would; the program is
# $BATS_TEST_TMPDIR/NAME.
# The build folder holds libpio.so without its soname's link (install
# makes it): the program finds it through a link in the test's folder.
build_mpi() {
  local out=$BATS_TEST_TMPDIR/$1 src=$2 lib=$BATS_TEST_TMPDIR/lib san
  san=$(pio_san_flags)
  mkdir -p "$lib"
  ln -sf "$PIO_BUILD/lib/libpio.so" "$lib/libpio.so.0"
  case $src in
    *.c) mpicc $san -I"$PIO_SRC/libpio" -I"$PIO_BUILD/include" -o "$out" "$src" \
           "$PIO_BUILD/lib/libpio.so" -Wl,-rpath,"$lib" ;;
    *.f90) ${3:-mpif90} $san -I"$PIO_BUILD/bindings/fortran" -o "$out" "$src" \
           "$PIO_BUILD/lib/libpiof.a" "$PIO_BUILD/lib/libpio.so" -Wl,-rpath,"$lib" ;;
  esac
}

@test "PIO_Init_comm (C): two halves of a 4-rank MPI job join as two applications of 2" {
  cat >"$BATS_TEST_TMPDIR/comm.c" <<'C'
#include <pio_mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    int rank, rc, ok = 1;
    MPI_Comm half;
    PIO_Appinfo ai;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    rc = PIO_Init_comm(rank % 2 ? "half1" : "half0", half);
    if (rc != PIO_OK) {
        printf("rank %d: PIO_Init_comm: %s\n", rank, PIO_Errname(rc));
        ok = 0;
    } else if (PIO_Getappinfo(PIO_SELF, &ai) != PIO_OK || ai.nprocs != 2 ||
               ai.process_ID != rank / 2) {
        printf("rank %d: nprocs %d process_ID %d\n", rank, ai.nprocs, ai.process_ID);
        ok = 0;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rc == PIO_OK)
        PIO_Exit();
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s\n", ok ? "OK comm" : "FAIL comm");
    MPI_Comm_free(&half);
    MPI_Finalize();
    return !ok;
}
C
  run build_mpi comm "$BATS_TEST_TMPDIR/comm.c"
  assert_success
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 90 mpirun --oversubscribe -np 4 "$BATS_TEST_TMPDIR/comm"
  assert_success
  assert_output --partial "OK comm"
}

@test "PIO_Init_comm (Fortran): the rank and size of MPI_COMM_WORLD; PIO_ENOSYS without MPI" {
  cat >"$BATS_TEST_TMPDIR/fcomm.f90" <<'F'
program fcomm
  use mpi
  use pio
  implicit none
  integer :: ierr, rank, size, rc
  type(PIO_Appinfo) :: ai
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  call PIO_Init_comm('fcomm', MPI_COMM_WORLD, rc)
  if (rc /= PIO_OK) error stop 'PIO_Init_comm'
  call PIO_Getappinfo(PIO_SELF, ai, rc)
  if (rc /= PIO_OK .or. ai%nprocs /= size .or. ai%process_ID /= rank) error stop 'appinfo'
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call PIO_Exit(rc)
  if (rank == 0) print '(a, i0)', 'OK fcomm ', size
  call MPI_Finalize(ierr)
end program fcomm
F
  cat >"$BATS_TEST_TMPDIR/fnompi.f90" <<'F'
program fnompi
  use pio
  implicit none
  integer :: rc
  call PIO_Init_comm('fnompi', 0, rc)
  if (rc == PIO_ENOSYS) print '(a)', 'OK ENOSYS'
end program fnompi
F
  run build_mpi fcomm "$BATS_TEST_TMPDIR/fcomm.f90"
  assert_success
  run build_mpi fnompi "$BATS_TEST_TMPDIR/fnompi.f90" gfortran
  assert_success
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 90 mpirun --oversubscribe -np 3 "$BATS_TEST_TMPDIR/fcomm"
  assert_success
  assert_output --partial "OK fcomm 3"
  run env PIO_SOCKET="$PIO_SOCK_A" timeout 30 "$BATS_TEST_TMPDIR/fnompi"
  assert_success
  assert_output "OK ENOSYS"
}
