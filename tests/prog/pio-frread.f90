! pio-frread.f90 - remote file access from Fortran: PIO_Rfile_open, _pread, _readlist, _advise, _close.
! SPDX-License-Identifier: BSD-3-Clause
!
! Usage: pio-frread read HOST REMOTE LOCAL | errors HOST REMOTE | stop HOST REMOTE
! Application "frread", one process.
!   read    opens REMOTE on HOST's file service (its size must be LOCAL's),
!           reads LOCAL, the same file seen here, with Fortran stream I/O,
!           and compares byte for byte: the whole file in pieces of 1 MiB +
!           3 bytes (default INTEGER offsets; the last piece comes back
!           short, got < count); 12 MiB into one buffer at INTEGER(8) offset
!           1 (got = size - 1); 100 REAL(8) at 8000; the strided section
!           b(1, :) of an INTEGER(1) b(2, 4096) at 12345 (b(2, :) must stay
!           untouched); 64 bytes at size - 10 (got 10, the rest untouched);
!           8 bytes at size (got 0); a list of 4 ranges (PIO_Rfile_readlist,
!           the last one past the end). Prints "read: ..." lines.
!   errors  REMOTE is an existing file. With ierr, printing "CASE: CODE
!           NAME: words[: remote text]": an open of d/nothing.bin, of
!           ../escape.bin, a negative offset, a pread and a close after the
!           close.
!   stop    without ierr, the open of REMOTE (a missing file) stops the
!           program with the code as exit status.
! Prints "OK pio-frread MODE" on success; "FAIL ..." and exit 1 otherwise.
program pio_frread
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int8, int64
  use pio
  implicit none
  character(len=256) :: mode, host, remote, local

  call get_command_argument(1, mode)
  call get_command_argument(2, host)
  call get_command_argument(3, remote)
  call get_command_argument(4, local)
  call PIO_Init('frread')
  select case (mode)
  case ('read')
    call read_compare()
  case ('errors')
    call errors()
  case ('stop')
    call stop_without_ierr()
  case default
    print '(a)', 'usage: pio-frread read HOST REMOTE LOCAL | errors HOST REMOTE | stop HOST REMOTE'
    error stop 2
  end select
  call PIO_Exit()
  print '(a,a)', 'OK pio-frread ', trim(mode)

contains

  subroutine fail(text)
    character(len=*), intent(in) :: text
    print '(a,a)', 'FAIL pio-frread: ', text
    error stop 1
  end subroutine fail

  ! same - fail unless got == want and a(1:got) == ref(off + 1:off + got).
  subroutine same(what, a, got, want, ref, off)
    character(len=*), intent(in) :: what
    integer(int8), intent(in) :: a(:), ref(:)
    integer(int64), intent(in) :: got, want, off
    character(len=200) :: text
    if (got /= want) then
      write (text, '(a,a,i0,a,i0)') what, ': got ', got, ' bytes, not ', want
      call fail(trim(text))
    end if
    if (any(a(1:got) /= ref(off + 1:off + got))) call fail(what // ': the bytes differ')
    write (text, '(a,a,i0,a,i0)') what, ': ', got, ' bytes equal at ', off
    print '(a,a)', 'read: ', trim(text)
  end subroutine same

  subroutine read_compare()
    type(PIO_Rfile) :: rf
    integer(int64) :: size, lsize, got, total
    integer(int8), allocatable :: ref(:), piece(:), big(:)
    integer(int8) :: b(2, 4096), tail(64), none(8)
    real(8) :: r(100)
    integer :: u, off, n
    integer(c_int) :: ierr
    character(len=200) :: text

    open (newunit=u, file=trim(local), access='stream', form='unformatted', action='read', &
          status='old')
    inquire (unit=u, size=lsize)
    allocate (ref(lsize))
    read (u) ref
    close (u)

    print '(a,a)', 'read: libpio ', PIO_Get_version()
    call PIO_Rfile_open(host, remote, rf, size)
    if (size /= lsize) then
      write (text, '(a,i0,a,i0)') 'PIO_Rfile_open: size ', size, ', the local file has ', lsize
      call fail(trim(text))
    end if
    write (text, '(a,a,a,i0,a)') 'open ', trim(remote), ': ', size, ' bytes'
    print '(a,a)', 'read: ', trim(text)

    ! read-ahead off, and a bad advice refused with its code
    call PIO_Rfile_advise(rf, PIO_RFILE_RANDOM)
    call PIO_Rfile_advise(rf, 7, ierr)
    if (ierr /= PIO_EINVAL) call fail('PIO_Rfile_advise(7) did not give PIO_EINVAL')
    call PIO_Rfile_advise(rf, PIO_RFILE_NORMAL)

    ! the whole file in pieces, default INTEGER offsets; the last one short
    n = 2**20 + 3
    allocate (piece(n))
    off = 0
    total = 0
    do
      call PIO_Rfile_pread(rf, piece, off, got)
      if (got > 0) then
        if (any(piece(1:got) /= ref(off + 1:off + got))) call fail('piece: the bytes differ')
      end if
      total = total + got
      off = off + int(got)
      if (got < n) exit
    end do
    if (total /= lsize) call fail('pieces: the total is not the size')
    write (text, '(a,i0,a,i0,a,i0)') 'pieces of ', n, ': ', total, ' bytes equal, the last ', got
    print '(a,a)', 'read: ', trim(text)

    ! 12 MiB, INTEGER(8) offset: past the end, in staging-window pieces
    allocate (big(12 * 2**20))
    call PIO_Rfile_pread(rf, big, 1_int64, got)
    call same('12 MiB at 1', big, got, lsize - 1, ref, 1_int64)

    ! REAL(8): bytes are bytes
    call PIO_Rfile_pread(rf, r, 8000, got)
    call same('100 REAL(8) at 8000', transfer(r, [0_int8], 800), got, 800_int64, ref, 8000_int64)

    ! a strided section, packed and scattered back
    b = -1
    call PIO_Rfile_pread(rf, b(1, :), 12345_int64, got)
    call same('b(1, :) at 12345', b(1, :), got, 4096_int64, ref, 12345_int64)
    if (any(b(2, :) /= -1)) call fail('b(2, :) changed')

    ! past the end
    tail = -1
    call PIO_Rfile_pread(rf, tail, lsize - 10, got)
    call same('64 bytes at size - 10', tail, got, 10_int64, ref, lsize - 10)
    if (any(tail(11:) /= -1)) call fail('tail(11:) changed')
    none = -1
    call PIO_Rfile_pread(rf, none, lsize, got)
    if (got /= 0 .or. any(none /= -1)) call fail('8 bytes at size: something came')
    print '(a)', 'read: 8 bytes at size: got 0'

    ! a list of ranges at once, packed into one buffer: 3 of 4096 bytes at
    ! scattered offsets and 100 at size - 40 (40 come)
    block
      integer(int64) :: offs(4), cnts(4), gots(4), at
      integer(int8) :: lbuf(3 * 4096 + 100)
      integer :: i
      offs = [777777_int64, 5_int64, 3000000_int64, lsize - 40]
      cnts = [4096_int64, 4096_int64, 4096_int64, 100_int64]
      lbuf = -1
      call PIO_Rfile_readlist(rf, lbuf, 4, offs, cnts, gots)
      at = 0
      do i = 1, 4
        call same('list range', lbuf(at + 1:at + cnts(i)), gots(i), min(cnts(i), lsize - offs(i)), &
                  ref, offs(i))
        at = at + cnts(i)
      end do
    end block

    call PIO_Rfile_close(rf)
  end subroutine read_compare

  ! report - "what: CODE NAME: words[: remote text]"; fails unless ierr is want.
  subroutine report(what, ierr, want, file)
    character(len=*), intent(in) :: what
    integer(c_int), intent(in) :: ierr, want
    logical, intent(in) :: file
    character(len=:), allocatable :: line
    character(len=12) :: code
    write (code, '(i0)') ierr
    line = what // ': ' // trim(code) // ' ' // PIO_Errname(ierr) // ': ' // PIO_Strerror(ierr)
    if (file) then
      if (len(PIO_File_error_text()) > 0) line = line // ': ' // PIO_File_error_text()
    end if
    print '(a)', line
    if (ierr /= want) call fail(what // ': ' // PIO_Errname(ierr) // ', not ' // PIO_Errname(want))
  end subroutine report

  subroutine errors()
    type(PIO_Rfile) :: rf
    integer(int64) :: size, got
    integer(int8) :: buf(16)
    integer(c_int) :: ierr

    size = -1
    call PIO_Rfile_open(host, 'd/nothing.bin', rf, size, ierr)
    call report('open d/nothing.bin', ierr, PIO_ENOENT, .true.)
    if (size /= 0) call fail('size is not 0 after a failed open')
    call PIO_Rfile_open(host, '../escape.bin', rf, ierr=ierr)
    if (ierr == PIO_EINVAL) then
      call report('open ../escape.bin', ierr, PIO_EINVAL, .true.)
    else
      call report('open ../escape.bin', ierr, PIO_EPERM, .true.)
    end if
    call PIO_Rfile_pread(rf, buf, 0, got, ierr)
    call report('pread of a file not opened', ierr, PIO_EINVAL, .true.)

    call PIO_Rfile_open(host, remote, rf, ierr=ierr)
    call report('open ' // trim(remote), ierr, PIO_OK, .false.)
    call PIO_Rfile_pread(rf, buf, -8, got, ierr)
    call report('pread at offset -8', ierr, PIO_EINVAL, .true.)
    call PIO_Rfile_pread(rf, buf, 0_int64, got, ierr)
    call report('pread of 16 bytes at 0', ierr, PIO_OK, .false.)
    if (got /= 16) call fail('pread of 16 bytes: got is not 16')
    call PIO_Rfile_close(rf, ierr)
    call report('close', ierr, PIO_OK, .false.)
    call PIO_Rfile_pread(rf, buf, 0, got, ierr)
    call report('pread after close', ierr, PIO_EINVAL, .true.)
    call PIO_Rfile_close(rf, ierr)
    call report('close again', ierr, PIO_EINVAL, .false.)
  end subroutine errors

  subroutine stop_without_ierr()
    type(PIO_Rfile) :: rf
    call PIO_Rfile_open(host, remote, rf)
    call fail('PIO_Rfile_open of ' // trim(remote) // ' returned')
  end subroutine stop_without_ierr

end program pio_frread
