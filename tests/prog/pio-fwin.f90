! pio-fwin.f90 - one-sided access from Fortran: windows, get, put, atomics, errors.
! SPDX-License-Identifier: BSD-3-Clause
!
! Usage: pio-fwin rw | stop create | stop iget
! Application "fwin". rw runs as 2 processes (mpirun -np 2, no MPI calls:
! PIO_Init takes the rank and size from the launcher); barriers are PIO
! messages through process 0; windows are addressed with PIO_SELF (this
! application). Process r, its peer p = 1 - r:
!   rw    window 1 is w(16), INTEGER(8): w(1) the fetch-and-add word (disp
!         0), w(2) the compare-and-swap word (disp 8), w(3:10) = 1000 r +
!         1 .. 8, w(11:16) = -1. Window 2 is v = [7, 8, 9, 10], INTEGER, on
!         process 0 and empty (a zero-size array) on process 1.
!         r gets p's w(3:10) (default INTEGER disp), p's w(6:9) into the
!         strided section g(1:8:2) (INTEGER(8) disp); puts the section
!         100 r + [1, 3, 5, 7] into p's w(11:14) and, with PIO_Iput,
!         100 r + [20, 21] into w(15:16); gets p's w(4:5) with PIO_Iget;
!         flushes; after a barrier checks its own w(11:16). Then 1000
!         PIO_Fetch_and_add(1) each on process 0's w(1), which ends at 2000
!         (process 0 checks its memory, both get it); a compare-and-swap
!         on p's w(2), 0 -> 42 + r (old: 0), then one that must fail (old:
!         42 + r, nothing changed). Process 1 gets v(2:4) of process 0 at
!         disp 4; process 0 gets from process 1's empty window 2
!         (PIO_EINVAL). The binding's and libpio's refusals with ierr
!         ("CASE: CODE NAME: words", printed by process 0, checked by
!         both), then both windows are freed, and a get on a freed window
!         and a second free are refused.
!   stop  one process: a call without ierr that the binding refuses stops
!         the program: PIO_Win_create of a strided section (create), or
!         PIO_Iget into one (iget).
! Prints "OK pio-fwin rw: ..." per process on success; "FAIL ..." and
! exit 1 otherwise.
program pio_fwin
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64
  use pio
  implicit none
  integer(c_int), parameter :: tag_barrier = 901
  character(len=32) :: mode, arg
  type(PIO_Appinfo) :: me
  integer(c_int) :: self, rank

  call get_command_argument(1, mode)
  call get_command_argument(2, arg)
  call PIO_Init('fwin')
  call PIO_Getappinfo(PIO_SELF, me)
  rank = me%process_ID
  select case (mode)
  case ('rw')
    if (me%nprocs /= 2) call fail('rw runs as 2 processes (mpirun -np 2)')
    call PIO_Addpartner('fwin', self)
    call rw()
  case ('stop')
    call stop_without_ierr()
  case default
    print '(a)', 'usage: pio-fwin rw | stop create | stop iget'
    error stop 2
  end select
  call PIO_Exit()

contains

  subroutine fail(text)
    character(len=*), intent(in) :: text
    print '(a,i0,a,a)', 'FAIL pio-fwin process ', rank, ': ', text
    error stop 1
  end subroutine fail

  ! expect - "what: CODE NAME: words" from process 0; fails unless ierr is want.
  subroutine expect(what, ierr, want)
    character(len=*), intent(in) :: what
    integer(c_int), intent(in) :: ierr, want
    if (rank == 0) print '(a,a,i0,a,a,a,a)', what, ': ', ierr, ' ', PIO_Errname(ierr), ': ', &
      PIO_Strerror(ierr)
    if (ierr /= want) call fail(what // ': ' // PIO_Errname(ierr) // ', not ' // PIO_Errname(want))
  end subroutine expect

  subroutine barrier()
    integer(c_int) :: x(1), i
    x = 0
    if (rank == 0) then
      do i = 1, me%nprocs - 1
        call PIO_Recv(self, PIO_ANY_PROCESS, tag_barrier, x, PIO_INTEGER, 1, 60000, PIO_BLOCKING)
      end do
      do i = 1, me%nprocs - 1
        call PIO_Send(self, i, tag_barrier, PIO_DYNAMIC, x, PIO_INTEGER, 1, PIO_BLOCKING)
      end do
    else
      call PIO_Send(self, 0, tag_barrier, PIO_DYNAMIC, x, PIO_INTEGER, 1, PIO_BLOCKING)
      call PIO_Recv(self, 0, tag_barrier, x, PIO_INTEGER, 1, 60000, PIO_BLOCKING)
    end if
  end subroutine barrier

  ! "NAME v1 v2 ..." of INTEGER(8) values, for the checks and the output.
  function words(v) result(s)
    integer(int64), intent(in) :: v(:)
    character(len=:), allocatable :: s
    character(len=24) :: one
    integer :: i
    s = ''
    do i = 1, size(v)
      write (one, '(i0)') v(i)
      s = s // ' ' // trim(one)
    end do
  end function words

  subroutine rw()
    ! the windows' memory: other processes write it, so every read here
    ! must go to memory (VOLATILE)
    integer(int64), volatile :: w(16)
    integer(c_int32_t), volatile :: v(4), none(0)
    integer(int64) :: got(8), want(8), c, old, olds(1000)
    integer(int64), asynchronous :: g(8), two(2), ig(2)
    integer(c_int32_t) :: three(3), one(1)
    type(PIO_Win) :: win, win2, win3
    type(PIO_Request) :: req
    type(PIO_Status) :: st
    integer(c_int) :: p, i, ierr
    p = 1 - rank
    w(1:2) = 0
    w(3:10) = [(1000_int64 * rank + i, i = 1, 8)]
    w(11:16) = -1
    v = [7, 8, 9, 10]
    call PIO_Win_create(w, win)
    if (rank == 0) then
      call PIO_Win_create(v, win2)
    else
      call PIO_Win_create(none, win2) ! an empty window: process 1 only reads window 2
    end if
    call barrier()

    ! get: contiguous (default INTEGER disp), then into a strided section (INTEGER(8))
    got = 0
    call PIO_Get(win, PIO_SELF, p, 16, got)
    want = [(1000_int64 * p + i, i = 1, 8)]
    if (any(got /= want)) call fail('PIO_Get of w(3:10) gave' // words(got))
    print '(a,i0,a,a,a,i0)', 'process ', rank, ' got', words(got), ' from process ', p
    g = 0
    call PIO_Get(win, PIO_SELF, p, 40_int64, g(1:8:2))
    if (any(g /= [want(4), 0_int64, want(5), 0_int64, want(6), 0_int64, want(7), 0_int64])) &
      call fail('PIO_Get into g(1:8:2) gave' // words(g))

    ! put a strided section, PIO_Iput, PIO_Iget, flush
    got = [(100_int64 * rank + i, i = 1, 8)]
    call PIO_Put(win, PIO_SELF, p, 80_int64, got(1:8:2))
    two = 100_int64 * rank + [20, 21]
    call PIO_Iput(win, PIO_SELF, p, 112, two, req)
    call PIO_Wait(req, 60000, st)
    if (st%bytes /= 16) call fail('PIO_Iput: status%bytes is not 16')
    ig = 0
    call PIO_Iget(win, PIO_SELF, p, 24_int64, ig, req)
    call PIO_Wait(req, 60000, st)
    if (st%bytes /= 16 .or. any(ig /= want(2:3))) call fail('PIO_Iget gave' // words(ig))
    call PIO_Win_flush(win, PIO_SELF, PIO_ANY_PROCESS)
    call barrier()
    want(1:6) = 100_int64 * p + [1, 3, 5, 7, 20, 21]
    if (any(w(11:16) /= want(1:6))) call fail('w(11:16) after the puts is' // words(w(11:16)))
    print '(a,i0,a,i0,a,a)', 'process ', rank, ': process ', p, ' put', words(w(11:16))
    call barrier()

    ! 1000 fetch-and-adds each on process 0's word 0
    do i = 1, 1000
      call PIO_Fetch_and_add(win, PIO_SELF, 0, 0, 1_int64, olds(i))
    end do
    if (any(olds < 0 .or. olds > 1999) .or. any(olds(2:) <= olds(:999))) &
      call fail('the values before the fetch-and-adds are not increasing in 0 .. 1999')
    call barrier()
    if (rank == 0 .and. w(1) /= 2000) call fail('process 0''s word is' // words([w(1)]))
    c = -1
    call PIO_Get(win, PIO_SELF, 0, 0, c) ! a scalar buffer
    if (c /= 2000) call fail('process 0''s word, got, is' // words([c]))
    print '(a,i0,a,i0)', 'process ', rank, ': fetch-and-add word of process 0 is ', c

    ! compare-and-swap on the peer's word 1: succeeds, then fails
    call PIO_Compare_and_swap(win, PIO_SELF, p, 8_int64, 0_int64, 42_int64 + rank, old)
    if (old /= 0) call fail('the first compare-and-swap saw' // words([old]))
    call PIO_Compare_and_swap(win, PIO_SELF, p, 8, 0_int64, 7_int64, old)
    if (old /= 42 + rank) call fail('the second compare-and-swap saw' // words([old]))
    call barrier()
    if (w(2) /= 42 + p) call fail('the compare-and-swap word is' // words([w(2)]))
    print '(a,i0,a,i0,a,i0,a,i0)', 'process ', rank, ': compare-and-swap 0 -> ', 42 + rank, &
      ' then refused (old ', old, '); own word ', w(2)

    ! window 2: bytes 4 .. 15 of process 0's, nothing in process 1's
    if (rank == 1) then
      call PIO_Get(win2, PIO_SELF, 0, 4, three)
      if (any(three /= [8, 9, 10])) call fail('PIO_Get of v(2:4) gave' // words(int(three, int64)))
      print '(a,a)', 'process 1 got v(2:4) of process 0:', words(int(three, int64))
    else
      call PIO_Get(win2, PIO_SELF, 1, 0, one, ierr)
      call expect('get from an empty window', ierr, PIO_EINVAL)
    end if

    ! refused, with ierr
    call PIO_Get(win, PIO_SELF, p, 120, got(1:2), ierr)
    call expect('get of 16 bytes at 120 of a 128-byte window', ierr, PIO_EINVAL)
    call PIO_Put(win, PIO_SELF, p, -8, got(1), ierr)
    call expect('put at disp -8', ierr, PIO_EINVAL)
    call PIO_Fetch_and_add(win, PIO_SELF, 0, 4_int64, 1_int64, old, ierr)
    call expect('fetch-and-add at disp 4', ierr, PIO_EINVAL)
    call PIO_Iget(win, PIO_SELF, p, 0, g(1:8:2), req, ierr)
    call expect('iget into a strided section', ierr, PIO_EINVAL)
    call PIO_Win_create(g(1:8:2), win3, ierr)
    call expect('window of a strided section', ierr, PIO_EINVAL)
    call PIO_Get(win, PIO_SELF, p, 0, c, ierr)
    call expect('get of 8 bytes at 0', ierr, PIO_OK)

    call barrier() ! nobody uses the windows any more
    call PIO_Win_free(win2)
    call PIO_Win_free(win)
    call PIO_Get(win, PIO_SELF, p, 0, c, ierr)
    call expect('get on a freed window', ierr, PIO_EINVAL)
    call PIO_Win_free(win, ierr)
    call expect('free again', ierr, PIO_EINVAL)
    call barrier()
    print '(a,i0,a,i0)', 'OK pio-fwin rw: process ', rank, ' of ', me%nprocs
  end subroutine rw

  subroutine stop_without_ierr()
    integer(int64), asynchronous :: a(8)
    type(PIO_Win) :: win
    type(PIO_Request) :: req
    a = 0
    if (arg == 'create') then
      call PIO_Win_create(a(1:8:2), win)
    else
      call PIO_Win_create(a, win)
      call PIO_Iget(win, PIO_SELF, 0, 0, a(1:8:2), req)
    end if
    call fail('the call without ierr returned')
  end subroutine stop_without_ierr

end program pio_fwin
