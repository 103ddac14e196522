! gas_fortran_rw.f90 - a Fortran direct-access file written, read back and
! rewritten while open ACTION='READWRITE', the way GAS's preload library must
! carry it.
! SPDX-License-Identifier: BSD-3-Clause
!
! Usage: gas_fortran_rw PATH
! No PIO calls: only Fortran OPEN/WRITE/READ/CLOSE, so that run under
! LD_PRELOAD=libpgas.so with a pgas: path it exercises the system calls
! libgfortran makes (lseek, read, write through its own buffer); run once on
! a local path and once on a pgas: path, the two files must be equal.
!   1. OPEN unformatted, ACCESS='DIRECT', RECL=40 (5 REAL(8)),
!      ACTION='READWRITE', STATUS='REPLACE'; write the 2000 records in the
!      scrambled order rec = mod(37 k, 2000) + 1, k = 0..1999 (version 1).
!   2. Still open: read every third record back, in the scrambled order
!      mod(1013 k, 2000) + 1, and check it (libgfortran must write out what
!      its buffer holds before it reads; libpgas must give it back).
!   3. Still open: rewrite every seventh record and the first and the last
!      (version 2), from the last to the first; read each back with its
!      neighbours and check them.
!   4. CLOSE; OPEN again with ACTION='READ', STATUS='OLD'; check all 2000.
! Prints "gas_fortran_rw: ok", or the first mismatch and stops with
! ERROR STOP 1.
program gas_fortran_rw
  use, intrinsic :: iso_fortran_env, only: real64
  implicit none
  integer, parameter :: nrec = 2000, nval = 5, recl = 40
  character(len=4096) :: path
  character(len=256) :: msg
  integer :: u, ios, k, rec, r, reclen
  real(real64) :: v(nval)

  msg = ''
  if (command_argument_count() /= 1) then
    write (*, '(a)') 'usage: gas_fortran_rw PATH'
    error stop 2
  end if
  call get_command_argument(1, path)
  inquire (iolength=reclen) v
  if (reclen /= recl) then
    write (*, '(a,i0,a,i0)') 'gas_fortran_rw: iolength of 5 real(8) is ', reclen, ', not ', recl
    error stop 1
  end if

  ! 1. every record, version 1, scrambled
  open (newunit=u, file=trim(path), action='READWRITE', status='REPLACE', &
        form='UNFORMATTED', access='DIRECT', recl=recl, iostat=ios, iomsg=msg)
  call check(ios, 'open (readwrite) '//trim(path))
  do k = 0, nrec - 1
    rec = mod(k * 37, nrec) + 1
    call record(rec, 1, v)
    write (u, rec=rec, iostat=ios, iomsg=msg) v
    call check(ios, 'write')
  end do

  ! 2. read every third one back before closing
  do k = 0, nrec - 1
    rec = mod(k * 1013, nrec) + 1
    if (mod(rec, 3) == 0) call expect(u, rec, 1, 'read back before close')
  end do

  ! 3. rewrite every seventh (and the first and the last), then read them
  !    and their neighbours
  do rec = nrec, 1, -1
    if (rewritten(rec)) then
      call record(rec, 2, v)
      write (u, rec=rec, iostat=ios, iomsg=msg) v
      call check(ios, 'rewrite')
    end if
  end do
  do rec = 1, nrec
    if (.not. rewritten(rec)) cycle
    do r = max(1, rec - 1), min(nrec, rec + 1)
      call expect(u, r, version(r), 'read back after rewriting')
    end do
  end do
  close (u, iostat=ios, iomsg=msg)
  call check(ios, 'close '//trim(path))

  ! 4. reopen read-only: everything
  open (newunit=u, file=trim(path), action='READ', status='OLD', &
        form='UNFORMATTED', access='DIRECT', recl=recl, iostat=ios, iomsg=msg)
  call check(ios, 'open (read) '//trim(path))
  do rec = 1, nrec
    call expect(u, rec, version(rec), 'read after reopening')
  end do
  close (u)
  write (*, '(a)') 'gas_fortran_rw: ok'

contains

  logical function rewritten(rec)
    integer, intent(in) :: rec
    rewritten = mod(rec, 7) == 0 .or. rec == 1 .or. rec == nrec
  end function rewritten

  integer function version(rec)
    integer, intent(in) :: rec
    version = 1
    if (rewritten(rec)) version = 2
  end function version

  ! record - the 5 values of record rec in version ver (exact in binary)
  subroutine record(rec, ver, v)
    integer, intent(in) :: rec, ver
    real(real64), intent(out) :: v(nval)
    integer :: m

    do m = 1, nval
      v(m) = real(rec, real64) * 1000.0_real64 + real(m, real64) * 0.125_real64
      if (ver == 2) v(m) = -v(m) - 0.5_real64
    end do
  end subroutine record

  ! expect - read record rec of unit u and compare it with version ver
  subroutine expect(u, rec, ver, what)
    integer, intent(in) :: u, rec, ver
    character(len=*), intent(in) :: what
    real(real64) :: want(nval), got(nval)
    integer :: m

    call record(rec, ver, want)
    got = -1.0_real64
    read (u, rec=rec, iostat=ios, iomsg=msg) got
    call check(ios, what)
    do m = 1, nval
      if (got(m) /= want(m)) then
        write (*, '(a,a,a,i0,a,i0,a,g0,a,g0,a,i0,a)') 'gas_fortran_rw: ', what, ': record ', rec, &
          ' value ', m, ': got ', got(m), ' expected ', want(m), ' (version ', ver, ')'
        error stop 1
      end if
    end do
  end subroutine expect

  subroutine check(ios, what)
    integer, intent(in) :: ios
    character(len=*), intent(in) :: what

    if (ios /= 0) then
      write (*, '(a,a,a,i0,a,a)') 'gas_fortran_rw: ', what, ': iostat ', ios, ': ', trim(msg)
      error stop 1
    end if
  end subroutine check

end program gas_fortran_rw
