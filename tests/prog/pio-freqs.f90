! pio-freqs.f90 - several requests from Fortran: PIO_Waitany, PIO_Waitall, PIO_Testany, PIO_Getfd.
! SPDX-License-Identifier: BSD-3-Clause
!
! Application "fortran" (one process) and tests/prog/pio-fpartner.c in mode
! "reqs" (application "cpartner"). The C side sends each message only when
! told to, so what is complete at each check never depends on timing:
! null arrays, PIO_Testany with nothing complete, a PIO_Waitany timeout,
! then two receives of which only the second gets a message (index 2, from
! 1), then PIO_Waitall over a pending receive, a new receive and a send.
! Prints "OK pio-freqs" and exits 0; else "FAIL ..." and ERROR STOP 1.
program pio_freqs
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: output_unit
  use pio
  implicit none
  type(PIO_Request) :: reqs(2), all3(3)
  type(PIO_Status) :: st, sts(3)
  integer(c_int) :: partner, idx, ierr, fd, fd2, i
  integer(c_int) :: a(4), b(4), c(4), out(4)
  logical :: done
  character(len=1) :: go = 'g'

  call PIO_Init('fortran', 0, 1)
  call PIO_Setpartner('cpartner', partner)

  ! all null: at once, index PIO_UNDEFINED
  call PIO_Waitany(reqs, idx, PIO_WAIT_FOREVER, st, ierr)
  call expect('PIO_Waitany over nulls', ierr, PIO_OK)
  if (idx /= PIO_UNDEFINED) call fail('PIO_Waitany over nulls: an index')
  call PIO_Testany(reqs, idx, done, st, ierr)
  call expect('PIO_Testany over nulls', ierr, PIO_OK)
  if (.not. done .or. idx /= PIO_UNDEFINED) call fail('PIO_Testany over nulls: not done')
  call PIO_Waitall(reqs, 0, sts, ierr)
  call expect('PIO_Waitall over nulls', ierr, PIO_OK)
  call PIO_Waitall(reqs, 0, sts(1:1), ierr)
  call expect('PIO_Waitall with too few statuses', ierr, PIO_EINVAL)
  call PIO_Getfd(fd)
  call PIO_Getfd(fd2)
  if (fd < 0 .or. fd /= fd2) call fail('PIO_Getfd: not one descriptor')

  ! nothing complete: PIO_Testany says so, PIO_Waitany times out
  call PIO_Irecv(partner, 0, 11, a, PIO_INTEGER, 4, PIO_BLOCKING, reqs(1))
  call PIO_Irecv(partner, 0, 12, b, PIO_INTEGER, 4, PIO_BLOCKING, reqs(2))
  call PIO_Testany(reqs, idx, done, st, ierr)
  call expect('PIO_Testany with nothing sent', ierr, PIO_OK)
  if (done .or. idx /= PIO_UNDEFINED) call fail('PIO_Testany with nothing sent: done')
  call PIO_Waitany(reqs, idx, 100, st, ierr)
  call expect('PIO_Waitany with nothing sent', ierr, PIO_ETIMEDOUT)

  ! the C side sends tag 12 only: index 2
  call PIO_Send(partner, 0, 1, PIO_DYNAMIC, go, PIO_CHARACTER, 1, PIO_BLOCKING)
  call PIO_Waitany(reqs, idx, 60000, st)
  if (idx /= 2 .or. st%tag /= 12) call fail('PIO_Waitany: not the second request')
  if (any(b /= [(1200 + i, i = 0, 3)])) call fail('PIO_Waitany: values of tag 12')

  ! PIO_Waitall: the pending receive of tag 11, a receive of tag 13, a send of tag 30
  out = [(3000 + i, i = 0, 3)]
  all3(1) = reqs(1)
  call PIO_Irecv(partner, 0, 13, c, PIO_INTEGER, 4, PIO_BLOCKING, all3(2))
  call PIO_Isend(partner, 0, 30, PIO_DYNAMIC, out, PIO_INTEGER, 4, PIO_BLOCKING, all3(3))
  call PIO_Waitall(all3, 60000, sts)
  if (sts(1)%tag /= 11 .or. sts(2)%tag /= 13) call fail('PIO_Waitall: the tags')
  if (any(a /= [(1100 + i, i = 0, 3)]) .or. any(c /= [(1300 + i, i = 0, 3)])) &
    call fail('PIO_Waitall: the values')
  call PIO_Waitany(all3, idx, 0, st, ierr)
  call expect('PIO_Waitany after PIO_Waitall (all null)', ierr, PIO_OK)
  if (idx /= PIO_UNDEFINED) call fail('PIO_Waitall left a request')
  call PIO_Send(partner, 0, 2, PIO_DYNAMIC, go, PIO_CHARACTER, 1, PIO_BLOCKING)
  call PIO_Exit()
  write (output_unit, '(a)') 'OK pio-freqs'

contains

  subroutine fail(msg)
    character(len=*), intent(in) :: msg
    write (output_unit, '(a)') 'FAIL pio-freqs: ' // msg
    flush (output_unit)
    error stop 1
  end subroutine fail

  subroutine expect(what, got, want)
    character(len=*), intent(in) :: what
    integer(c_int), intent(in) :: got, want
    if (got /= want) call fail(what // ': ' // PIO_Errname(got) // ', expected ' // &
                               PIO_Errname(want))
  end subroutine expect

end program pio_freqs
