! gas_btio_f.f90 - the BTIO-like pattern of gas-btio, written by a Fortran MPI program with direct-access I/O.
! SPDX-License-Identifier: BSD-3-Clause
!
! usage: mpirun -np P gas-btio-f --grid N --steps S --out PATH
!
! The file is byte for byte the one of `gas-btio --procs P --grid N
! --steps S` (bench/gas_btio.c has the layout, decomposition and values;
! `gas-btio --grid N --steps S --verify PATH` checks it): u(5,N,N,N) of
! real(8) per step, one 40-byte record per grid point, record index
! r = x + N*(y + N*z), step s's record r at record s*N^3 + r (Fortran's
! rec= counts from 1: rec = s*N^3 + r + 1), holding s*1e6 + r + m*0.1
! (m = 0..4). P = q*q ranks; rank p = (pi, pj), pi = mod(p, q),
! pj = p / q, owns the multi-partition cells (mod(pi+k, q), mod(pj+k, q), k),
! k = 0..q-1, of (N/q)^3 points; per step it writes its cells in k order,
! in a cell z, y, x (x fastest), one WRITE(u, REC=...) of 5 real(8) per
! record, as NAS BT-IO's "Fortran I/O" (btio_full_mpiio aside) does.
!
! The file is opened as BT's Fortran I/O does: access='direct',
! form='unformatted', recl=40 (gfortran's recl is in bytes). What reaches
! the system is libgfortran's (gfortran 12, under strace): per rank an
! openat and an fstat, then its buffered stream joins the records that
! follow each other in the file (a run of N/q records along x) into one
! lseek + write of the run (320 bytes at N/q = 8), flushed when the next
! record is elsewhere; a close. Nothing here knows of libpgas: the program
! runs unmodified with LD_PRELOAD=libpgas.so and PATH pgas:/...
!
! Creation: only rank 0 creates and truncates. Before the timed part,
! rank 0 opens PATH with status='replace' and closes it (an empty file),
! then all ranks meet at a barrier. Timed: MPI_Barrier, t0 = MPI_Wtime,
! every rank opens PATH with status='old', action='readwrite'; before each
! step (the first too, so no rank's open, whose fstat would make the GAS
! dispatcher apply what it holds of the file, falls among other ranks'
! writes) an MPI_Barrier as BT's time steps keep the ranks in step; the
! writes; close; MPI_Barrier; t1. Rank 0 prints, as gas-btio does,
!     btio procs=P grid=N steps=S records=R bytes=B seconds=T
! with T = t1 - t0. Any I/O error: the rank prints iomsg and calls
! MPI_Abort.
program gas_btio_f
  use, intrinsic :: iso_fortran_env, only: error_unit, output_unit, real64, int64
  use mpi_f08
  implicit none

  integer, parameter :: rec_bytes = 40
  integer :: rank, nprocs, q, grid, steps, cell, pi, pj, u, ios, k, i, nargs
  integer(int64) :: n, s, r, x, y, z, x0, y0, z0, m
  real(real64) :: v(5), t0, t1
  character(len=4096) :: path, arg, val
  character(len=512) :: msg
  character(len=64) :: secs

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)

  grid = 0
  steps = 0
  path = ''
  nargs = command_argument_count()
  i = 1
  do while (i <= nargs)
    call get_command_argument(i, arg)
    if (i + 1 > nargs) call usage('missing value for ' // trim(arg))
    call get_command_argument(i + 1, val)
    select case (trim(arg))
    case ('--grid')
      read (val, *, iostat=ios) grid
      if (ios /= 0 .or. grid < 1) call usage('bad --grid ' // trim(val))
    case ('--steps')
      read (val, *, iostat=ios) steps
      if (ios /= 0 .or. steps < 1) call usage('bad --steps ' // trim(val))
    case ('--out')
      path = val
    case default
      call usage('unknown argument ' // trim(arg))
    end select
    i = i + 2
  end do
  if (grid == 0 .or. steps == 0 .or. len_trim(path) == 0) call usage('--grid, --steps and --out are needed')
  q = 0
  do while ((q + 1) * (q + 1) <= nprocs)
    q = q + 1
  end do
  if (q * q /= nprocs) call usage('the number of processes is not a square')
  if (mod(grid, q) /= 0) call usage('--grid is not divisible by sqrt(processes)')

  n = grid
  cell = grid / q
  pi = mod(rank, q)
  pj = rank / q

  ! only rank 0 creates (and truncates) the file, before the timed part
  if (rank == 0) then
    open (newunit=u, file=trim(path), access='direct', form='unformatted', recl=rec_bytes, &
          status='replace', action='readwrite', iostat=ios, iomsg=msg)
    call check('open (replace)')
    close (u, iostat=ios, iomsg=msg)
    call check('close (replace)')
  end if

  call MPI_Barrier(MPI_COMM_WORLD)
  t0 = MPI_Wtime()
  open (newunit=u, file=trim(path), access='direct', form='unformatted', recl=rec_bytes, &
        status='old', action='readwrite', iostat=ios, iomsg=msg)
  call check('open')
  do s = 0, steps - 1
    call MPI_Barrier(MPI_COMM_WORLD)
    do k = 0, q - 1
      x0 = int(mod(pi + k, q), int64) * cell
      y0 = int(mod(pj + k, q), int64) * cell
      z0 = int(k, int64) * cell
      do z = z0, z0 + cell - 1
        do y = y0, y0 + cell - 1
          do x = x0, x0 + cell - 1
            r = x + n * (y + n * z)
            do m = 0, 4
              ! the order of gas-btio's (double)s * 1e6 + (double)r + m * 0.1
              v(m + 1) = (real(s, real64) * 1.0e6_real64 + real(r, real64)) + real(m, real64) * 0.1_real64
            end do
            write (u, rec=s * n * n * n + r + 1, iostat=ios, iomsg=msg) v
            call check('write')
          end do
        end do
      end do
    end do
  end do
  close (u, iostat=ios, iomsg=msg)
  call check('close')
  call MPI_Barrier(MPI_COMM_WORLD)
  t1 = MPI_Wtime()

  if (rank == 0) then
    write (secs, '(f0.6)') t1 - t0
    if (secs(1:1) == '.') secs = '0' // secs(1:len(secs) - 1)
    write (output_unit, '(a,i0,a,i0,a,i0,a,i0,a,i0,a,a)') 'btio procs=', nprocs, ' grid=', grid, &
      ' steps=', steps, ' records=', int(steps, int64) * n * n * n, ' bytes=', &
      int(steps, int64) * n * n * n * rec_bytes, ' seconds=', trim(secs)
  end if
  call MPI_Finalize()

contains

  ! check - after an I/O statement: on error, say which and abort the job
  subroutine check(what)
    character(len=*), intent(in) :: what
    if (ios == 0) return
    write (error_unit, '(a,i0,a,a,a,a,a,a)') 'gas-btio-f: rank ', rank, ': ', what, ' ', trim(path), ': ', &
      trim(msg)
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end subroutine check

  subroutine usage(why)
    character(len=*), intent(in) :: why
    if (rank == 0) write (error_unit, '(a,a/a)') 'gas-btio-f: ', why, &
      'usage: mpirun -np P gas-btio-f --grid N --steps S --out PATH'
    call MPI_Finalize()
    stop 2
  end subroutine usage
end program gas_btio_f
