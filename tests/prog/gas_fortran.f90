! gas_fortran.f90 - plain Fortran unformatted I/O, the way GAS's preload library must carry it.
! SPDX-License-Identifier: BSD-3-Clause
!
! Usage: gas_fortran SEQ_PATH DIRECT_PATH
! No PIO calls: the program only uses Fortran OPEN/WRITE/READ/CLOSE, so that
! run under LD_PRELOAD=libpgas.so with pgas: paths it exercises exactly the
! system calls libgfortran makes; run once on local paths and once on pgas:
! paths, the two pairs of files must be equal byte for byte.
!   SEQ_PATH     unformatted sequential, STATUS='REPLACE': 50 records, record
!                k holds an INTEGER array and a REAL(8) array of lengths
!                that vary with k (record 10 is empty, record 25 holds
!                200000 REAL(8), 1.6 MB, more than libgfortran's buffer:
!                it writes the data, then seeks back to fill in the length
!                marker).
!   DIRECT_PATH  unformatted direct access, RECL of 5 REAL(8) (40 bytes in
!                gfortran), STATUS='REPLACE': the 1000 records written in the
!                scrambled order rec = mod(37 k, 1000) + 1, k = 0..999.
! Both are closed, reopened with ACTION='READ' and every value is checked
! (as is the end of the sequential file). Prints "gas_fortran: ok", or the
! first error and stops with ERROR STOP 1.
program gas_fortran
  use, intrinsic :: iso_fortran_env, only: int32, real64, iostat_end
  implicit none
  integer, parameter :: nseq = 50, ndir = 1000, nval = 5
  character(len=4096) :: seq_path, dir_path
  character(len=256) :: msg
  integer :: u, ios, k, rec, reclen, i, nargs
  integer(int32), allocatable :: ia(:)
  real(real64), allocatable :: ra(:)
  real(real64) :: v(nval)

  msg = ''
  nargs = command_argument_count()
  if (nargs /= 2) then
    write (*, '(a)') 'usage: gas_fortran SEQ_PATH DIRECT_PATH'
    error stop 2
  end if
  call get_command_argument(1, seq_path)
  call get_command_argument(2, dir_path)

  ! (a) unformatted sequential
  open (newunit=u, file=trim(seq_path), action='WRITE', status='REPLACE', &
        form='UNFORMATTED', access='SEQUENTIAL', iostat=ios, iomsg=msg)
  call check(ios, 'open (write) '//trim(seq_path))
  do k = 1, nseq
    call seq_record(k, ia, ra)
    if (k == 10) then
      write (u, iostat=ios, iomsg=msg)
    else
      write (u, iostat=ios, iomsg=msg) ia, ra
    end if
    call check(ios, 'write sequential')
  end do
  close (u, iostat=ios, iomsg=msg)
  call check(ios, 'close '//trim(seq_path))

  ! (b) unformatted direct access, records in a scrambled order
  inquire (iolength=reclen) v
  open (newunit=u, file=trim(dir_path), action='WRITE', status='REPLACE', &
        form='UNFORMATTED', access='DIRECT', recl=reclen, iostat=ios, iomsg=msg)
  call check(ios, 'open (write) '//trim(dir_path))
  do k = 0, ndir - 1
    rec = mod(k * 37, ndir) + 1
    call dir_record(rec, v)
    write (u, rec=rec, iostat=ios, iomsg=msg) v
    call check(ios, 'write direct')
  end do
  close (u, iostat=ios, iomsg=msg)
  call check(ios, 'close '//trim(dir_path))

  ! (c) read both back
  open (newunit=u, file=trim(seq_path), action='READ', status='OLD', &
        form='UNFORMATTED', access='SEQUENTIAL', iostat=ios, iomsg=msg)
  call check(ios, 'open (read) '//trim(seq_path))
  do k = 1, nseq
    block
      integer(int32), allocatable :: want_i(:), got_i(:)
      real(real64), allocatable :: want_r(:), got_r(:)
      call seq_record(k, want_i, want_r)
      allocate (got_i(size(want_i)), got_r(size(want_r)))
      got_i = -1
      got_r = -1.0_real64
      if (k == 10) then
        read (u, iostat=ios, iomsg=msg)
      else
        read (u, iostat=ios, iomsg=msg) got_i, got_r
      end if
      call check(ios, 'read sequential')
      do i = 1, size(want_i)
        if (got_i(i) /= want_i(i)) then
          write (*, '(a,i0,a,i0,a,i0,a,i0)') 'gas_fortran: sequential record ', k, &
            ' integer ', i, ': got ', got_i(i), ' expected ', want_i(i)
          error stop 1
        end if
      end do
      do i = 1, size(want_r)
        if (got_r(i) /= want_r(i)) then
          write (*, '(a,i0,a,i0,a,g0,a,g0)') 'gas_fortran: sequential record ', k, &
            ' real ', i, ': got ', got_r(i), ' expected ', want_r(i)
          error stop 1
        end if
      end do
    end block
  end do
  read (u, iostat=ios)
  if (ios /= iostat_end) then
    write (*, '(a,i0)') 'gas_fortran: no end of file after the last sequential record, iostat ', ios
    error stop 1
  end if
  close (u)

  open (newunit=u, file=trim(dir_path), action='READ', status='OLD', &
        form='UNFORMATTED', access='DIRECT', recl=reclen, iostat=ios, iomsg=msg)
  call check(ios, 'open (read) '//trim(dir_path))
  do rec = 1, ndir
    block
      real(real64) :: want(nval), got(nval)
      call dir_record(rec, want)
      got = -1.0_real64
      read (u, rec=rec, iostat=ios, iomsg=msg) got
      call check(ios, 'read direct')
      do i = 1, nval
        if (got(i) /= want(i)) then
          write (*, '(a,i0,a,i0,a,g0,a,g0)') 'gas_fortran: direct record ', rec, &
            ' value ', i, ': got ', got(i), ' expected ', want(i)
          error stop 1
        end if
      end do
    end block
  end do
  close (u)

  if (allocated(ia)) deallocate (ia) ! the main program's arrays are never freed
  if (allocated(ra)) deallocate (ra) ! otherwise: LeakSanitizer reports them
  write (*, '(a)') 'gas_fortran: ok'

contains

  ! seq_record - the contents of sequential record k (exact in binary).
  subroutine seq_record(k, ia, ra)
    integer, intent(in) :: k
    integer(int32), allocatable, intent(out) :: ia(:)
    real(real64), allocatable, intent(out) :: ra(:)
    integer :: ni, nr, j

    ni = mod(k * 13, 97)
    nr = mod(k * 29, 61)
    if (k == 10) then
      ni = 0
      nr = 0
    else if (k == 25) then
      ni = 3
      nr = 200000
    end if
    allocate (ia(ni), ra(nr))
    do j = 1, ni
      ia(j) = 100000 * k + j
    end do
    do j = 1, nr
      ra(j) = real(k, real64) * 1.0e6_real64 + real(j, real64) * 0.25_real64
    end do
  end subroutine seq_record

  ! dir_record - the 5 values of direct record rec (exact in binary).
  subroutine dir_record(rec, v)
    integer, intent(in) :: rec
    real(real64), intent(out) :: v(nval)
    integer :: m

    do m = 1, nval
      v(m) = real(rec, real64) * 1000.0_real64 + real(m, real64) * 0.125_real64
    end do
  end subroutine dir_record

  subroutine check(ios, what)
    integer, intent(in) :: ios
    character(len=*), intent(in) :: what

    if (ios /= 0) then
      write (*, '(a,a,a,i0,a,a)') 'gas_fortran: ', what, ': iostat ', ios, ': ', trim(msg)
      error stop 1
    end if
  end subroutine check

end program gas_fortran
