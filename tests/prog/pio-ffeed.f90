! pio-ffeed.f90 - a visualization feed from Fortran: known fields to pio-vizd, and errors.
! SPDX-License-Identifier: BSD-3-Clause
!
! Usage: pio-ffeed feed RECEIVER NSTEPS | errors [kind | block | name]
! Application "ffeed"; run it as N processes (mpirun -np N, no MPI calls:
! PIO_Init takes the rank and size from the launcher).
!   feed    steps 1 .. NSTEPS (time 0.5 step) of a grid of 6 x 5 x 4 points
!           (origin (0.5, -1, 2), spacing (0.25, 0.5, 1)) to RECEIVER, three
!           fields of f(i, j, k), i along x:
!             1 temperature  REAL(8)  100 i + 10 j + k + 0.5 step
!             2 owner        INTEGER  100000 rank + 1000 step + 100 i + 10 j + k
!             3 density      REAL     i + 0.5 j + 0.25 k + step
!           Process r puts the y planes j = r 5 / N + 1 .. (r + 1) 5 / N:
!           temperature as two blocks (k = 1 .. 2, k = 3 .. 4), strided
!           sections t(:, j0:j1, k0:k1) of the whole field; owner from a
!           contiguous array of its own; density as the section d(:, j0:j1,
!           :) with INTEGER(8) start and count. Odd steps are numbered with
!           a default INTEGER, even ones with an INTEGER(8). Waits for
!           RECEIVER to appear first (PIO_Addpartner), so that every step
!           goes to it.
!   errors  what the binding and libpio refuse, with ierr ("CASE: CODE
!           NAME: words"), then a call without ierr that stops the program
!           (exit status 1, PIO_EINVAL): a PIO_Feed_put of a REAL buffer into
!           a REAL(8) field (kind, the default), of a block past the grid
!           (block), or a PIO_Feed_open with a name too long (name). The
!           receiver "nobody" is never there: steps are skipped.
! Prints "OK pio-ffeed MODE: ..." on success.
program pio_ffeed
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64
  use pio
  implicit none
  integer, parameter :: nx = 6, ny = 5, nz = 4
  character(len=256) :: mode, receiver, arg
  type(PIO_Appinfo) :: me
  type(PIO_Feed) :: feed
  type(PIO_Feedinfo) :: info
  type(PIO_Grid) :: grid
  real(c_double) :: t(nx, ny, nz)
  real(c_float) :: d(nx, ny, nz)

  call get_command_argument(1, mode)
  call get_command_argument(2, receiver)
  call get_command_argument(3, arg)
  call PIO_Init('ffeed')
  call PIO_Getappinfo(PIO_SELF, me)
  select case (mode)
  case ('feed')
    call feed_steps()
  case ('errors')
    call errors()
  case default
    print '(a)', 'usage: pio-ffeed feed RECEIVER NSTEPS | errors [kind | block | name]'
    error stop 2
  end select
  call PIO_Exit()

contains

  subroutine feed_steps()
    integer(c_int), allocatable :: own(:, :, :)
    integer :: i, j, k, s, r, j0, j1, nsteps, partner
    r = me%process_ID
    j0 = r * ny / me%nprocs + 1
    j1 = (r + 1) * ny / me%nprocs
    read (arg, *) nsteps
    allocate (own(nx, j1 - j0 + 1, nz))
    call PIO_Addpartner(receiver, partner)
    grid = PIO_Grid([nx, ny, nz], [0.5d0, -1d0, 2d0], [0.25d0, 0.5d0, 1d0])
    call PIO_Feed_open(receiver, grid, 3, [character(len=12) :: 'temperature', 'owner', 'density'], &
                       [PIO_DOUBLE_PRECISION, PIO_INTEGER, PIO_REAL], feed)
    do s = 1, nsteps
      do k = 1, nz
        do j = 1, ny
          do i = 1, nx
            t(i, j, k) = 100 * i + 10 * j + k + 0.5d0 * s
            d(i, j, k) = i + 0.5 * j + 0.25 * k + s
            if (j >= j0 .and. j <= j1) own(i, j - j0 + 1, k) = 100000 * r + 1000 * s + 100 * i + 10 * j + k
          end do
        end do
      end do
      if (mod(s, 2) == 1) then
        call PIO_Feed_begin_step(feed, s, 0.5d0 * s)
      else
        call PIO_Feed_begin_step(feed, int(s, int64), 0.5d0 * s)
      end if
      call PIO_Feed_put(feed, 1, [1, j0, 1], [nx, j1 - j0 + 1, 2], t(:, j0:j1, 1:2))
      call PIO_Feed_put(feed, 1, [1, j0, 3], [nx, j1 - j0 + 1, nz - 2], t(:, j0:j1, 3:nz))
      call PIO_Feed_put(feed, 2, [1, j0, 1], shape(own), own)
      if (.not. PIO_Feed_sending(feed)) then ! a lossless receiver gets every step
        print '(a,i0)', 'FAIL pio-ffeed feed: PIO_Feed_sending false at step ', s
        error stop 1
      end if
      if (mod(s, 2) == 1) then ! a section (no copy-in), or the whole array and where the block is
        call PIO_Feed_put(feed, 3, [1_int64, int(j0, int64), 1_int64], &
                          int([nx, j1 - j0 + 1, nz], int64), d(:, j0:j1, :))
      else
        call PIO_Feed_put_sub(feed, 3, [1, j0, 1], [nx, j1 - j0 + 1, nz], d, [1, j0, 1])
      end if
      call PIO_Feed_end_step(feed)
    end do
    call PIO_Feed_info(feed, info)
    call PIO_Feed_close(feed)
    if (info%steps_sent /= nsteps .or. info%lossless /= 1 .or. info%receiver_present /= 1) then
      print '(a,i0,a,i0,a,i0,a,i0)', 'FAIL pio-ffeed feed: sent ', info%steps_sent, ' skipped ', &
        info%steps_skipped, ' lossless ', info%lossless, ' present ', info%receiver_present
      error stop 1
    end if
    print '(a,i0,a,i0,a,i0,a,i0,a,i0,a)', 'OK pio-ffeed feed: process ', r, ' of ', me%nprocs, &
      ' sent ', info%steps_sent, ' steps of planes y ', j0, ' .. ', j1, ' (lossless)'
  end subroutine feed_steps

  ! show - "what: CODE NAME: words"
  subroutine show(what, ierr)
    character(len=*), intent(in) :: what
    integer, intent(in) :: ierr
    print '(a,a,i0,a,a,a,a)', what, ': ', ierr, ' ', PIO_Errname(ierr), ': ', PIO_Strerror(ierr)
  end subroutine show

  subroutine errors()
    integer :: ierr
    character(len=5) :: two(2)
    t = 1
    d = 1
    grid%dims = [nx, ny, nz]
    two = [character(len=5) :: 'a', 'b']
    call PIO_Feed_open('nobody', grid, 0, two, [PIO_REAL, PIO_REAL], feed, ierr)
    call show('open with 0 fields', ierr)
    call PIO_Feed_open('nobody', grid, 2, [character(len=5) :: 'a', ' '], [PIO_REAL, PIO_REAL], &
                       feed, ierr)
    call show('open with a blank name', ierr)
    call PIO_Feed_open('nobody', grid, 2, [character(len=5) :: 'a', 'a'], [PIO_REAL, PIO_REAL], &
                       feed, ierr)
    call show('open with a name twice', ierr)
    call PIO_Feed_open('nobody', grid, 2, two, [PIO_REAL, PIO_COMPLEX], feed, ierr)
    call show('open with a COMPLEX field', ierr)
    call PIO_Feed_open('nobody', grid, 3, two, [PIO_REAL, PIO_REAL], feed, ierr)
    call show('open with 3 fields and 2 names', ierr)
    call PIO_Feed_open('nobody', PIO_Grid(), 2, two, [PIO_REAL, PIO_REAL], feed, ierr)
    call show('open with an empty grid', ierr)
    call PIO_Feed_put(feed, 1, [1, 1, 1], [1, 1, 1], t(1, 1, 1), ierr)
    call show('put on a feed never opened', ierr)
    call PIO_Feed_open('nobody', grid, 2, two, [PIO_DOUBLE, PIO_REAL], feed, ierr)
    call show('open a (double), b (REAL)', ierr)
    call PIO_Feed_put(feed, 1, [1, 1, 1], [nx, ny, nz], t, ierr)
    call show('put before begin_step', ierr)
    call PIO_Feed_begin_step(feed, -1, 0d0, ierr)
    call show('begin_step -1', ierr)
    call PIO_Feed_begin_step(feed, 7, 3.5d0, ierr)
    call show('begin_step 7', ierr)
    call PIO_Feed_begin_step(feed, 8, 4d0, ierr)
    call show('begin_step 8 within step 7', ierr)
    call PIO_Feed_put(feed, 0, [1, 1, 1], [nx, ny, nz], t, ierr)
    call show('put field 0', ierr)
    call PIO_Feed_put(feed, 3, [1, 1, 1], [nx, ny, nz], t, ierr)
    call show('put field 3 of 2', ierr)
    call PIO_Feed_put(feed, 1, [1, 1, 1], [nx, ny, nz], d, ierr)
    call show('put REAL into the double field', ierr)
    call PIO_Feed_put(feed, 2, [1, 1, 1], [nx, ny, nz], t, ierr)
    call show('put REAL(8) into the REAL field', ierr)
    call PIO_Feed_put(feed, 1, [1, 1, 1], [nx, ny, 2], t, ierr)
    call show('put a block of 2 planes from 4', ierr)
    call PIO_Feed_put(feed, 1, [0, 1, 1], [nx, ny, nz], t, ierr)
    call show('put from x 0', ierr)
    call PIO_Feed_put(feed, 1, [2, 1, 1], [nx, ny, nz], t, ierr)
    call show('put past the grid', ierr)
    call PIO_Feed_put(feed, 1, [1, 1, 1], [nx, ny, 0], t(:, :, 1:0), ierr)
    call show('put 0 points', ierr)
    call PIO_Feed_put(feed, 1, [1, 1], [nx, ny], t(:, :, 1), ierr)
    call show('put with 2 coordinates', ierr)
    call PIO_Feed_put(feed, 1, [1, 1, 2], [nx, ny, 1], t(:, :, 2), ierr)
    call show('put plane 2', ierr)
    call PIO_Feed_put(feed, 2, [2, 1, 1], [1, ny, nz], d(2, :, :), ierr)
    call show('put the section d(2, :, :)', ierr)
    call PIO_Feed_end_step(feed, ierr)
    call show('end_step', ierr)
    call PIO_Feed_end_step(feed, ierr)
    call show('end_step again', ierr)
    call PIO_Feed_begin_step(feed, 7_int64, 5d0, ierr)
    call show('begin_step 7 again', ierr)
    call PIO_Feed_info(feed, info, ierr)
    call show('info', ierr)
    print '(a,i0,a,i0,a,i0)', 'info: sent ', info%steps_sent, ' skipped ', info%steps_skipped, &
      ' present ', info%receiver_present
    call PIO_Feed_close(feed, ierr)
    call show('close', ierr)
    call PIO_Feed_close(feed, ierr)
    call show('close again', ierr)
    call PIO_Feed_put(feed, 1, [1, 1, 1], [nx, ny, nz], t, ierr)
    call show('put after close', ierr)
    print '(a)', 'OK pio-ffeed errors: now without ierr'
    flush (6)
    if (receiver == 'name') then
      call PIO_Feed_open('nobody', grid, 2, [character(len=40) :: 'a', repeat('n', 32)], &
                         [PIO_DOUBLE, PIO_REAL], feed)
    end if
    call PIO_Feed_open('nobody', grid, 2, two, [PIO_DOUBLE, PIO_REAL], feed)
    call PIO_Feed_begin_step(feed, 1, 0d0)
    if (receiver == 'block') then
      call PIO_Feed_put(feed, 2, [1, 4, 1], [nx, 3, nz], d(:, 1:3, :))
    else
      call PIO_Feed_put(feed, 1, [1, 1, 1], [nx, ny, nz], d)
    end if
    print '(a)', 'FAIL pio-ffeed errors: the call returned'
  end subroutine errors

end program pio_ffeed
