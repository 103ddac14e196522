! pio-ferrors.f90 - errors seen from Fortran: with ierr, and without it.
! SPDX-License-Identifier: BSD-3-Clause
!
! Usage: pio-ferrors MODE
!   ierr       every failure below returns its code in ierr, and PIO_Strerror
!              gives its words; prints one line per case,
!              "CASE: CODE NAME: words", then "OK pio-ferrors ierr". Needs a
!              piod ($PIO_SOCKET) and pio-fpartner in mode "errors" (10
!              doubles on tag 1), and PIO_PARTNER_TIMEOUT=1 for the unknown
!              partner case.
!   strerror   every status code as "code|name|words" (pio-fpartner strerror
!              prints the same from C).
!   stop-init  PIO_Init without ierr, with no piod: stops (PIO_ENOPIOD).
!   stop-recv  PIO_Recv without ierr that times out: stops (PIO_ETIMEDOUT).
!   stop-count PIO_Send without ierr, count larger than the buffer: stops
!              (PIO_EINVAL) and says why.
!   stop-ok    calls without ierr that succeed: no stop; "OK stop-ok".
! A failing check prints "FAIL ..." and stops with ERROR STOP 1 (status 1),
! which no stop-* case uses for its own code except PIO_EINVAL = 1: the
! stop-count case is told apart by its message.
program pio_ferrors
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64
  use pio
  implicit none
  character(len=32) :: mode
  integer :: i

  call get_command_argument(1, mode)
  select case (mode)
  case ('ierr')
    call with_ierr()
  case ('strerror')
    i = -1
    do ! up to the first code past the list
      print '(i0,a,a,a,a)', i, '|', PIO_Errname(i), '|', PIO_Strerror(i)
      i = i + 1
      if (i > 0) then
        if (PIO_Errname(i - 1) == 'PIO_E?') exit
      end if
    end do
  case ('stop-init')
    call PIO_Init('fortran', 0, 1)
    print '(a)', 'FAIL stop-init: PIO_Init returned'
  case ('stop-recv')
    call stop_recv()
  case ('stop-count')
    call stop_count()
  case ('stop-ok')
    call stop_ok()
  case default
    print '(a)', 'usage: pio-ferrors ierr|strerror|stop-init|stop-recv|stop-count|stop-ok'
    error stop 2
  end select

contains

  ! expect - the line "what: CODE NAME: words"; a FAIL line and stop when
  ! ierr is not the code wanted.
  subroutine expect(what, ierr, want)
    character(len=*), intent(in) :: what
    integer, intent(in) :: ierr, want
    print '(a,a,i0,a,a,a,a)', what, ': ', ierr, ' ', PIO_Errname(ierr), ': ', PIO_Strerror(ierr)
    if (ierr /= want) then
      print '(a,a,a,a)', 'FAIL ', what, ': expected ', PIO_Errname(want)
      error stop 1
    end if
  end subroutine expect

  subroutine check(what, ok)
    character(len=*), intent(in) :: what
    logical, intent(in) :: ok
    if (.not. ok) then
      print '(a,a)', 'FAIL ', what
      error stop 1
    end if
  end subroutine check

  subroutine with_ierr()
    integer :: ierr, p, ints(20), k
    real(c_double) :: d(10), small(5)
    real(c_float) :: f(10)
    type(PIO_Status) :: st
    type(PIO_Request) :: req
    type(PIO_File) :: fh
    logical :: done

    ! before PIO_Init
    call PIO_Send(0, 0, 0, PIO_DYNAMIC, d, PIO_DOUBLE_PRECISION, 10, PIO_BLOCKING, ierr)
    call expect('PIO_Send before PIO_Init', ierr, PIO_ENOTINIT)
    call PIO_Exit(ierr)
    call expect('PIO_Exit before PIO_Init', ierr, PIO_ENOTINIT)

    call PIO_Init('fortran', 0, 1, ierr)
    call expect('PIO_Init', ierr, PIO_OK)
    call PIO_Init('fortran', 0, 1, ierr)
    call expect('PIO_Init twice', ierr, PIO_EINITED)
    call PIO_Setclasses(100, [20, 0], ierr)
    call expect('PIO_Setclasses with a share of 0', ierr, PIO_EINVAL)
    call PIO_Setclasses(100, [20, 80], ierr)
    call expect('PIO_Setclasses', ierr, PIO_OK)
    call PIO_Setpartner('nobody', p, ierr)
    call expect('PIO_Setpartner(nobody)', ierr, PIO_EPARTNER)
    call PIO_Setpartner('cpartner', p, ierr)
    call expect('PIO_Setpartner(cpartner)', ierr, PIO_OK)

    call PIO_Recv(p, 0, 5, d, PIO_DOUBLE_PRECISION, 10, 100, PIO_BLOCKING, st, ierr)
    call expect('PIO_Recv with nothing sent', ierr, PIO_ETIMEDOUT)

    ! the partner's 10 doubles on tag 1: too small a count, then the wrong
    ! type; each time the message waits, and then arrives whole
    call PIO_Recv(p, 0, 1, small, PIO_DOUBLE_PRECISION, 5, 30000, PIO_BLOCKING, st, ierr)
    call expect('PIO_Recv of 10 into 5', ierr, PIO_ETRUNC)
    call check('PIO_ETRUNC status says the message has 80 bytes', st%bytes == 80)
    call PIO_Recv(p, 0, 1, ints, PIO_INTEGER, 20, 30000, PIO_BLOCKING, st, ierr)
    call expect('PIO_Recv of doubles as PIO_INTEGER', ierr, PIO_ETYPE)
    call check('PIO_ETYPE status names PIO_DOUBLE', st%datatype == PIO_DOUBLE)
    d = 0
    call PIO_Recv(p, 0, 1, d, PIO_DOUBLE_PRECISION, 10, 30000, PIO_BLOCKING, st, ierr)
    call expect('PIO_Recv of 10 into 10', ierr, PIO_OK)
    call check('the 10 values', all(d == [(real(k, c_double), k = 1, 10)]) .and. st%count == 10)

    ! what the binding refuses before C sees the call
    call PIO_Send(p, 0, 3, PIO_DYNAMIC, d, PIO_DOUBLE_PRECISION, 11, PIO_BLOCKING, ierr)
    call expect('PIO_Send of 11 from 10', ierr, PIO_EINVAL)
    call PIO_Recv(p, 0, 3, d, PIO_DOUBLE_PRECISION, 11, 0, PIO_BLOCKING, st, ierr)
    call expect('PIO_Recv of 11 into 10', ierr, PIO_EINVAL)
    call PIO_Send(p, 0, 3, PIO_DYNAMIC, d, PIO_REAL, 10, PIO_BLOCKING, ierr)
    call expect('PIO_Send of REAL(8) as PIO_REAL', ierr, PIO_EINVAL)
    call PIO_Send(p, 0, 3, PIO_DYNAMIC, f, PIO_DOUBLE_PRECISION, 5, PIO_BLOCKING, ierr)
    call expect('PIO_Send of REAL(4) as PIO_DOUBLE_PRECISION', ierr, PIO_EINVAL)
    call PIO_Send(p, 0, 3, PIO_DYNAMIC, ints, PIO_LOGICAL, 20, PIO_BLOCKING, ierr)
    call expect('PIO_Send of INTEGER as PIO_LOGICAL', ierr, PIO_EINVAL)
    call PIO_Send(p, 0, 3, PIO_DYNAMIC, 'hello', PIO_CHARACTER, 6, PIO_BLOCKING, ierr)
    call expect('PIO_Send of 6 characters from hello', ierr, PIO_EINVAL)
    call PIO_Send(p, 0, 3, PIO_DYNAMIC, d, PIO_DOUBLE_PRECISION, -1, PIO_BLOCKING, ierr)
    call expect('PIO_Send of a negative count', ierr, PIO_EINVAL)
    call PIO_Send(p, 0, 3, PIO_DYNAMIC, d, 999, 1, PIO_BLOCKING, ierr)
    call expect('PIO_Send of datatype 999', ierr, PIO_EINVAL)
    call PIO_Isend(p, 0, 3, PIO_DYNAMIC, d(1:10:2), PIO_DOUBLE_PRECISION, 5, PIO_BLOCKING, req, ierr)
    call expect('PIO_Isend of a strided section', ierr, PIO_EINVAL)
    call PIO_Irecv(p, 0, 3, d(10:1:-1), PIO_DOUBLE_PRECISION, 10, PIO_BLOCKING, req, ierr)
    call expect('PIO_Irecv into a reversed section', ierr, PIO_EINVAL)
    call PIO_Wait(req, 0, st, ierr)
    call expect('PIO_Wait on a null request', ierr, PIO_EINVAL)
    call PIO_Test(req, done, st, ierr)
    call expect('PIO_Test on a null request', ierr, PIO_EINVAL)
    call PIO_File_write_at(fh, 0, d, ierr)
    call expect('PIO_File_write_at on a file never opened', ierr, PIO_EINVAL)
    call PIO_File_close(fh, ierr)
    call expect('PIO_File_close on a file never opened', ierr, PIO_EINVAL)

    ! what C refuses
    call PIO_Send(999, 0, 3, PIO_DYNAMIC, d, PIO_DOUBLE_PRECISION, 10, PIO_BLOCKING, ierr)
    call expect('PIO_Send to partner 999', ierr, PIO_EPARTNER)
    call PIO_Send(p, 0, -5, PIO_DYNAMIC, d, PIO_DOUBLE_PRECISION, 10, PIO_BLOCKING, ierr)
    call expect('PIO_Send with tag -5', ierr, PIO_EINVAL)
    call PIO_Send(p, 0, 3, PIO_USER(7), d, PIO_DOUBLE_PRECISION, 10, PIO_BLOCKING, ierr)
    call expect('PIO_Send on channel PIO_USER(7) of 2', ierr, PIO_ECHANNEL)

    ! a scalar literal as the buffer: the partner's last word
    call PIO_Send(p, 0, 2, PIO_DYNAMIC, 1, PIO_INTEGER, 1, PIO_SYNC, ierr)
    call expect('PIO_Send of the scalar 1', ierr, PIO_OK)
    call PIO_Exit(ierr)
    call expect('PIO_Exit', ierr, PIO_OK)
    print '(a)', 'OK pio-ferrors ierr'
  end subroutine with_ierr

  subroutine stop_recv()
    real(c_double) :: d(4)
    call PIO_Init('fortran', 0, 1)
    print '(a)', 'joined'
    call PIO_Recv(PIO_ANY_PARTNER, PIO_ANY_PROCESS, 5, d, PIO_DOUBLE_PRECISION, 4, 200, &
                  PIO_BLOCKING)
    print '(a)', 'FAIL stop-recv: PIO_Recv returned'
  end subroutine stop_recv

  subroutine stop_count()
    real(c_double) :: d(4)
    call PIO_Init('fortran', 0, 1)
    d = 0
    call PIO_Send(0, 0, 0, PIO_DYNAMIC, d, PIO_DOUBLE_PRECISION, 5, PIO_BLOCKING)
    print '(a)', 'FAIL stop-count: PIO_Send returned'
  end subroutine stop_count

  subroutine stop_ok()
    type(PIO_Hostinfo) :: host
    type(PIO_Appinfo) :: me
    call PIO_Init('fortran', 0, 1)
    call PIO_Gethostinfo(host)
    call PIO_Getappinfo(PIO_SELF, me)
    call PIO_Exit()
    print '(a,a,a,a)', 'OK stop-ok: ', trim(me%name), ' on ', trim(host%system)
  end subroutine stop_ok

end program pio_ferrors
