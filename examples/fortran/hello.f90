! hello.f90 - the smallest PIO program in Fortran: one process sends a greeting, another receives it.
! SPDX-License-Identifier: BSD-3-Clause
!
! The Fortran twin of ../hello.c, and it speaks the same: the two sides may
! be any mix of the C and the Fortran program. Two applications,
! "hello-send" and "hello-recv", one process each, joined to the piods of
! two systems (or to one piod). Run the receiver and the sender in either
! order:
!
!     PIO_SOCKET=/run/pio/piod.sock hello recv     # on system B
!     PIO_SOCKET=/run/pio/piod.sock hello send     # on system A
!
! Build: mpif90 -o hello hello.f90 $(pkg-config --cflags --libs pio-fortran)
!        (or gfortran: the program uses no MPI)
! Exit status: 0 when the greeting went through, 1 otherwise.
program hello
  use, intrinsic :: iso_fortran_env, only: error_unit
  use pio
  implicit none
  character(len=16) :: role, me, other
  character(len=64) :: buf
  character(len=:), allocatable :: text
  type(PIO_Status) :: st
  integer :: partner, ierr, nul

  call get_command_argument(1, role)
  if (role /= 'send' .and. role /= 'recv') then
    print '(a)', 'usage: hello send|recv'
    stop 2
  end if
  if (role == 'send') then
    me = 'hello-send'
    other = 'hello-recv'
  else
    me = 'hello-recv'
    other = 'hello-send'
  end if

  ! join the local piod as process 0 of a one-process application; no
  ! ierr: a failure here prints why and stops the program
  call PIO_Init(me, 0, 1)

  ! waits (up to $PIO_PARTNER_TIMEOUT s) for the other application to join;
  ! with ierr, the program decides what a failure means
  call PIO_Setpartner(other, partner, ierr)
  if (ierr /= PIO_OK) then
    write (error_unit, '(5a)') trim(me), ': PIO_Setpartner(', trim(other), '): ', &
      PIO_Strerror(ierr)
    call PIO_Exit()
    stop 1
  end if

  if (role == 'send') then
    ! to process 0 of the partner, tag 0, any channel, and with the C
    ! string's NUL so that C prints it as it is; returns once the receiving
    ! process has it (PIO_SYNC). The count is in characters.
    text = 'hello from PIO' // achar(0)
    call PIO_Send(partner, 0, 0, PIO_DYNAMIC, text, PIO_CHARACTER, len(text), PIO_SYNC, ierr)
    if (ierr == PIO_OK) print '(4a)', trim(me), ': sent "', text(1:len(text) - 1), '"'
  else
    ! from any process of the partner, tag 0, waiting up to 30 s; the
    ! status says how many characters came
    call PIO_Recv(partner, PIO_ANY_PROCESS, 0, buf, PIO_CHARACTER, len(buf), 30000, &
                  PIO_BLOCKING, st, ierr)
    if (ierr == PIO_OK) then
      text = buf(1:st%count)
      nul = index(text, achar(0))
      if (nul > 0) text = text(1:nul - 1)
      print '(4a,i0,a,i0)', trim(me), ': received "', text, '" (', st%bytes, &
        ' bytes) from process ', st%source
    end if
  end if
  if (ierr /= PIO_OK) write (error_unit, '(4a)') trim(me), ': ', &
    merge('PIO_Send', 'PIO_Recv', role == 'send'), ': ' // PIO_Strerror(ierr)
  call PIO_Exit()
  if (ierr /= PIO_OK) stop 1
end program hello
