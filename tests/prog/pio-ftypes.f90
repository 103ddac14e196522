! pio-ftypes.f90 - every Fortran type, 1-D to 3-D, to a C program and back, values exact.
! SPDX-License-Identifier: BSD-3-Clause
!
! Application "fortran" (one process) and tests/prog/pio-fpartner.c in mode
! "types" (application "cpartner"), usually through two piods. For each of
! INTEGER, REAL, DOUBLE PRECISION, COMPLEX, DOUBLE COMPLEX, LOGICAL and
! CHARACTER(LEN=3), it sends a 1-D (1000), a 2-D (7 x 13), a 3-D (5 x 4 x 3)
! and a large 3-D (40 x 40 x 40) array whose values follow a formula of the
! element's position in memory (column-major), special REALs included. The
! partner checks every value as its C type and answers with a transform of
! each (NOT, sign flip, conjugate, .NOT., next character); this program
! compares the answer bit for bit. The four sets use four ways to move data:
! Send/Recv, Irecv + SYNC Send on channel PIO_USER(1) + Test, Isend + Wait
! with PIO_STATIC, and 8-byte counts. Then a strided section goes out and a
! strided section receives the answer. Info calls are checked on the way.
! Prints "OK pio-ftypes: ..." and exits 0 when all is exact; else "FAIL ..."
! lines and ERROR STOP 1. The formulas match pio-fpartner.c.
module ftypes_lib
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int32, int64, output_unit
  use pio
  implicit none
  integer, parameter :: nsets = 4
  integer, parameter :: set_rank(nsets) = [1, 2, 3, 3]
  integer, parameter :: set_dims(3, nsets) = reshape([1000, 1, 1, 7, 13, 1, 5, 4, 3, 40, 40, &
                                                      40], [3, nsets])
  integer :: partner = -1, failures = 0, messages = 0

  interface
    integer(c_int) function usleep(us) bind(C, name='usleep')
      import :: c_int
      integer(c_int), value :: us
    end function usleep
  end interface

contains

  subroutine fail(msg)
    character(len=*), intent(in) :: msg
    write (output_unit, '(a)') 'FAIL pio-ftypes: ' // msg
    flush (output_unit)
    failures = failures + 1
  end subroutine fail

  pure integer function nelem(s)
    integer, intent(in) :: s
    nelem = product(set_dims(:, s))
  end function nelem

  ! h - the 32-bit hash of item k of set s, in [0, 2**32)
  integer(int64) function h(k, s)
    integer(int64), intent(in) :: k
    integer, intent(in) :: s
    h = modulo(k * 2654435761_int64 + s * 40503_int64, 4294967296_int64)
  end function h

  integer(int32) function gen_int(k, s)
    integer(int64), intent(in) :: k
    integer, intent(in) :: s
    integer(int64) :: v
    v = h(k, s)
    if (v >= 2147483648_int64) v = v - 4294967296_int64
    gen_int = int(v, int32)
  end function gen_int

  ! huge, tiny, -0.0, smallest denormal, +Inf, quiet NaN with a payload
  real(c_float) function gen_real(k, s)
    integer(int64), intent(in) :: k
    integer, intent(in) :: s
    integer(int32), parameter :: special(0:5) = [int(z'7F7FFFFF', int32), &
      int(z'00800000', int32), ibset(0_int32, 31), 1_int32, int(z'7F800000', int32), &
      int(z'7FC00001', int32)]
    if (k < 6) then
      gen_real = transfer(special(k), gen_real)
    else
      gen_real = real(int(mod(h(k, s), 2001_int64)) - 1000, c_float) / 7.0_c_float
    end if
  end function gen_real

  real(c_double) function gen_double(k, s)
    integer(int64), intent(in) :: k
    integer, intent(in) :: s
    integer(int64), parameter :: special(0:5) = [int(z'7FEFFFFFFFFFFFFF', int64), &
      int(z'0010000000000000', int64), ibset(0_int64, 63), 1_int64, &
      int(z'7FF0000000000000', int64), int(z'7FF8000000000001', int64)]
    if (k < 6) then
      gen_double = transfer(special(k), gen_double)
    else
      gen_double = real(mod(h(k, s), 2000001_int64) - 1000000_int64, c_double) / 7.0_c_double
    end if
  end function gen_double

  complex(c_float_complex) function gen_complex(k, s)
    integer(int64), intent(in) :: k
    integer, intent(in) :: s
    gen_complex = cmplx(real(int(mod(h(k, s), 2001_int64)) - 1000, c_float) / 7.0_c_float, &
                        real(int(mod(h(k, s), 997_int64)) + 1, c_float) / 3.0_c_float, &
                        kind=c_float_complex)
  end function gen_complex

  complex(c_double_complex) function gen_dcomplex(k, s)
    integer(int64), intent(in) :: k
    integer, intent(in) :: s
    gen_dcomplex = cmplx(real(mod(h(k, s), 2000001_int64) - 1000000_int64, c_double) / 7.0_c_double, &
                         real(mod(h(k, s), 99991_int64) + 1_int64, c_double) / 3.0_c_double, &
                         kind=c_double_complex)
  end function gen_dcomplex

  logical function gen_logical(k, s)
    integer(int64), intent(in) :: k
    integer, intent(in) :: s
    gen_logical = btest(h(k, s), 7)
  end function gen_logical

  character function gen_char(k, s)
    integer(int64), intent(in) :: k
    integer, intent(in) :: s
    gen_char = achar(32 + mod(h(k, s), 95_int64))
  end function gen_char

  ! exchange - send sbuf (n items of ftype) with tag, receive the answer
  ! (as ctype from the C side) into rbuf, by the method of set s. BIND(C):
  ! with gfortran 12, a wrapper that passes TYPE(*), DIMENSION(..) buffers
  ! on keeps CHARACTER lengths only then (pio_fortran(3)); it gets arrays
  ! only (a BIND(C) Fortran procedure reads past a scalar's descriptor).
  subroutine exchange(s, tag, sbuf, rbuf, ftype, ctype, n) bind(C)
    integer(c_int), intent(in) :: s, tag, ftype, ctype, n
    type(*), dimension(..), intent(in), asynchronous :: sbuf
    type(*), dimension(..), asynchronous :: rbuf
    type(PIO_Status) :: st, sst
    type(PIO_Request) :: req
    logical :: done
    integer(c_int) :: ierr, polls
    character(len=80) :: what
    write (what, '(a,i0,a,i0)') 'tag ', tag, ' set ', s
    select case (s)
    case (1) ! blocking send over any channel, blocking receive
      call PIO_Send(partner, 0, tag, PIO_DYNAMIC, sbuf, ftype, n, PIO_BLOCKING)
      call PIO_Recv(partner, 0, tag, rbuf, ftype, n, 60000, PIO_BLOCKING, st)
    case (2) ! receive posted first; synchronous send on channel 1; Test until done
      call PIO_Irecv(partner, 0, tag, rbuf, ftype, n, PIO_BLOCKING, req)
      call PIO_Send(partner, 0, tag, PIO_USER(1), sbuf, ftype, n, PIO_SYNC)
      polls = 0
      do
        call PIO_Test(req, done, st, ierr)
        if (ierr /= PIO_OK) call fail(trim(what) // ': PIO_Test: ' // PIO_Strerror(ierr))
        if (done .or. ierr /= PIO_OK) exit
        polls = polls + 1
        if (polls > 60000) then
          call fail(trim(what) // ': PIO_Test never completed')
          exit
        end if
        ierr = usleep(1000)
      end do
    case default ! non-blocking send with the static map and an 8-byte count, then Wait
      call PIO_Isend(partner, 0, tag, PIO_STATIC, sbuf, ftype, int(n, int64), PIO_BLOCKING, req)
      call PIO_Wait(req, 60000, sst)
      call PIO_Recv(partner, 0, tag, rbuf, ftype, int(n, int64), 60000, PIO_BLOCKING, st)
    end select
    if (st%datatype /= ctype .or. st%count /= n .or. st%source /= 0 .or. st%tag /= tag &
        .or. st%error /= PIO_OK) then
      call fail(trim(what) // ': the status of the answer is wrong')
      print '(a,5i8)', '  datatype, count, source, tag, error:', st%datatype, st%count, &
        st%source, st%tag, st%error
    end if
    messages = messages + 1
  end subroutine exchange

  ! Each test_TYPE sends the four sets of its type and checks the answers.
  ! The arrays of every rank are reshaped from one flat list of values, so
  ! element (i, j, k) holds the value of its column-major position.

  subroutine test_integer()
    integer(int32), allocatable :: v(:), back(:), a1(:), a2(:, :), a3(:, :, :), &
      b1(:), b2(:, :), b3(:, :, :)
    integer :: s, n, d(3)
    integer(int64) :: k
    do s = 1, nsets
      n = nelem(s)
      d = set_dims(:, s)
      allocate (v(n), back(n))
      do k = 0, n - 1
        v(k + 1) = gen_int(k, s)
      end do
      select case (set_rank(s))
      case (1)
        allocate (a1(n), b1(n))
        a1 = v
        b1 = 0
        call exchange(s, 100 + s, a1, b1, PIO_INTEGER, PIO_INT32, n)
        back = b1
      case (2)
        allocate (a2(d(1), d(2)), b2(d(1), d(2)))
        a2 = reshape(v, d(1:2))
        b2 = 0
        call exchange(s, 100 + s, a2, b2, PIO_INTEGER, PIO_INT32, n)
        back = reshape(b2, [n])
      case default
        allocate (a3(d(1), d(2), d(3)), b3(d(1), d(2), d(3)))
        a3 = reshape(v, d)
        b3 = 0
        call exchange(s, 100 + s, a3, b3, PIO_INTEGER, PIO_INT32, n)
        back = reshape(b3, [n])
      end select
      if (any(back /= not(v))) call fail('integer: answer differs from NOT of what was sent')
      deallocate (v, back)
      if (allocated(a1)) deallocate (a1, b1)
      if (allocated(a2)) deallocate (a2, b2)
      if (allocated(a3)) deallocate (a3, b3)
    end do
  end subroutine test_integer

  subroutine test_real()
    real(c_float), allocatable :: v(:), back(:), a1(:), a2(:, :), a3(:, :, :), &
      b1(:), b2(:, :), b3(:, :, :)
    integer :: s, n, d(3)
    integer(int64) :: k
    do s = 1, nsets
      n = nelem(s)
      d = set_dims(:, s)
      allocate (v(n), back(n))
      do k = 0, n - 1
        v(k + 1) = gen_real(k, s)
      end do
      select case (set_rank(s))
      case (1)
        allocate (a1(n), b1(n))
        a1 = v
        b1 = 0
        call exchange(s, 200 + s, a1, b1, PIO_REAL, PIO_FLOAT, n)
        back = b1
      case (2)
        allocate (a2(d(1), d(2)), b2(d(1), d(2)))
        a2 = reshape(v, d(1:2))
        b2 = 0
        call exchange(s, 200 + s, a2, b2, PIO_REAL, PIO_FLOAT, n)
        back = reshape(b2, [n])
      case default
        allocate (a3(d(1), d(2), d(3)), b3(d(1), d(2), d(3)))
        a3 = reshape(v, d)
        b3 = 0
        call exchange(s, 200 + s, a3, b3, PIO_REAL, PIO_FLOAT, n)
        back = reshape(b3, [n])
      end select
      ! bit for bit: the sign bit flipped, NaN payload and -0.0 included
      if (any(transfer(back, 0_int32, n) /= ieor(transfer(v, 0_int32, n), ibset(0_int32, 31)))) &
        call fail('real: answer differs from -x bit for bit')
      deallocate (v, back)
      if (allocated(a1)) deallocate (a1, b1)
      if (allocated(a2)) deallocate (a2, b2)
      if (allocated(a3)) deallocate (a3, b3)
    end do
  end subroutine test_real

  subroutine test_double()
    real(c_double), allocatable :: v(:), back(:), a1(:), a2(:, :), a3(:, :, :), &
      b1(:), b2(:, :), b3(:, :, :)
    integer :: s, n, d(3)
    integer(int64) :: k
    do s = 1, nsets
      n = nelem(s)
      d = set_dims(:, s)
      allocate (v(n), back(n))
      do k = 0, n - 1
        v(k + 1) = gen_double(k, s)
      end do
      select case (set_rank(s))
      case (1)
        allocate (a1(n), b1(n))
        a1 = v
        b1 = 0
        call exchange(s, 300 + s, a1, b1, PIO_DOUBLE_PRECISION, PIO_DOUBLE, n)
        back = b1
      case (2)
        allocate (a2(d(1), d(2)), b2(d(1), d(2)))
        a2 = reshape(v, d(1:2))
        b2 = 0
        call exchange(s, 300 + s, a2, b2, PIO_DOUBLE_PRECISION, PIO_DOUBLE, n)
        back = reshape(b2, [n])
      case default
        allocate (a3(d(1), d(2), d(3)), b3(d(1), d(2), d(3)))
        a3 = reshape(v, d)
        b3 = 0
        call exchange(s, 300 + s, a3, b3, PIO_DOUBLE_PRECISION, PIO_DOUBLE, n)
        back = reshape(b3, [n])
      end select
      if (any(transfer(back, 0_int64, n) /= ieor(transfer(v, 0_int64, n), ibset(0_int64, 63)))) &
        call fail('double precision: answer differs from -x bit for bit')
      deallocate (v, back)
      if (allocated(a1)) deallocate (a1, b1)
      if (allocated(a2)) deallocate (a2, b2)
      if (allocated(a3)) deallocate (a3, b3)
    end do
  end subroutine test_double

  subroutine test_complex()
    complex(c_float_complex), allocatable :: v(:), back(:), a1(:), a2(:, :), a3(:, :, :), &
      b1(:), b2(:, :), b3(:, :, :)
    integer(int32) :: want(2 * nelem(nsets))
    integer :: s, n, d(3)
    integer(int64) :: k
    do s = 1, nsets
      n = nelem(s)
      d = set_dims(:, s)
      allocate (v(n), back(n))
      do k = 0, n - 1
        v(k + 1) = gen_complex(k, s)
      end do
      select case (set_rank(s))
      case (1)
        allocate (a1(n), b1(n))
        a1 = v
        b1 = 0
        call exchange(s, 400 + s, a1, b1, PIO_COMPLEX, PIO_COMPLEX, n)
        back = b1
      case (2)
        allocate (a2(d(1), d(2)), b2(d(1), d(2)))
        a2 = reshape(v, d(1:2))
        b2 = 0
        call exchange(s, 400 + s, a2, b2, PIO_COMPLEX, PIO_COMPLEX, n)
        back = reshape(b2, [n])
      case default
        allocate (a3(d(1), d(2), d(3)), b3(d(1), d(2), d(3)))
        a3 = reshape(v, d)
        b3 = 0
        call exchange(s, 400 + s, a3, b3, PIO_COMPLEX, PIO_COMPLEX, n)
        back = reshape(b3, [n])
      end select
      ! the conjugate: (re, im) pairs with the sign bit of each im flipped
      want(1:2 * n) = transfer(v, 0_int32, 2 * n)
      want(2:2 * n:2) = ieor(want(2:2 * n:2), ibset(0_int32, 31))
      if (any(transfer(back, 0_int32, 2 * n) /= want(1:2 * n))) &
        call fail('complex: answer differs from the conjugate bit for bit')
      deallocate (v, back)
      if (allocated(a1)) deallocate (a1, b1)
      if (allocated(a2)) deallocate (a2, b2)
      if (allocated(a3)) deallocate (a3, b3)
    end do
  end subroutine test_complex

  subroutine test_dcomplex()
    complex(c_double_complex), allocatable :: v(:), back(:), a1(:), a2(:, :), a3(:, :, :), &
      b1(:), b2(:, :), b3(:, :, :)
    integer(int64) :: want(2 * nelem(nsets))
    integer :: s, n, d(3)
    integer(int64) :: k
    do s = 1, nsets
      n = nelem(s)
      d = set_dims(:, s)
      allocate (v(n), back(n))
      do k = 0, n - 1
        v(k + 1) = gen_dcomplex(k, s)
      end do
      select case (set_rank(s))
      case (1)
        allocate (a1(n), b1(n))
        a1 = v
        b1 = 0
        call exchange(s, 500 + s, a1, b1, PIO_DOUBLE_COMPLEX, PIO_DOUBLE_COMPLEX, n)
        back = b1
      case (2)
        allocate (a2(d(1), d(2)), b2(d(1), d(2)))
        a2 = reshape(v, d(1:2))
        b2 = 0
        call exchange(s, 500 + s, a2, b2, PIO_DOUBLE_COMPLEX, PIO_DOUBLE_COMPLEX, n)
        back = reshape(b2, [n])
      case default
        allocate (a3(d(1), d(2), d(3)), b3(d(1), d(2), d(3)))
        a3 = reshape(v, d)
        b3 = 0
        call exchange(s, 500 + s, a3, b3, PIO_DOUBLE_COMPLEX, PIO_DOUBLE_COMPLEX, n)
        back = reshape(b3, [n])
      end select
      want(1:2 * n) = transfer(v, 0_int64, 2 * n)
      want(2:2 * n:2) = ieor(want(2:2 * n:2), ibset(0_int64, 63))
      if (any(transfer(back, 0_int64, 2 * n) /= want(1:2 * n))) &
        call fail('double complex: answer differs from the conjugate bit for bit')
      deallocate (v, back)
      if (allocated(a1)) deallocate (a1, b1)
      if (allocated(a2)) deallocate (a2, b2)
      if (allocated(a3)) deallocate (a3, b3)
    end do
  end subroutine test_dcomplex

  subroutine test_logical()
    logical, allocatable :: v(:), back(:), a1(:), a2(:, :), a3(:, :, :), &
      b1(:), b2(:, :), b3(:, :, :)
    integer :: s, n, d(3)
    integer(int64) :: k
    do s = 1, nsets
      n = nelem(s)
      d = set_dims(:, s)
      allocate (v(n), back(n))
      do k = 0, n - 1
        v(k + 1) = gen_logical(k, s)
      end do
      select case (set_rank(s))
      case (1)
        allocate (a1(n), b1(n))
        a1 = v
        b1 = .false.
        call exchange(s, 600 + s, a1, b1, PIO_LOGICAL, PIO_LOGICAL, n)
        back = b1
      case (2)
        allocate (a2(d(1), d(2)), b2(d(1), d(2)))
        a2 = reshape(v, d(1:2))
        b2 = .false.
        call exchange(s, 600 + s, a2, b2, PIO_LOGICAL, PIO_LOGICAL, n)
        back = reshape(b2, [n])
      case default
        allocate (a3(d(1), d(2), d(3)), b3(d(1), d(2), d(3)))
        a3 = reshape(v, d)
        b3 = .false.
        call exchange(s, 600 + s, a3, b3, PIO_LOGICAL, PIO_LOGICAL, n)
        back = reshape(b3, [n])
      end select
      if (any(back .eqv. v)) call fail('logical: answer differs from .NOT. of what was sent')
      ! and the C side wrote 0 and 1
      if (any(transfer(back, 0_int32, n) /= merge(1_int32, 0_int32, back))) &
        call fail('logical: answer is not made of 0 and 1')
      deallocate (v, back)
      if (allocated(a1)) deallocate (a1, b1)
      if (allocated(a2)) deallocate (a2, b2)
      if (allocated(a3)) deallocate (a3, b3)
    end do
  end subroutine test_logical

  subroutine test_character()
    character(len=3), allocatable :: v(:), back(:), a1(:), a2(:, :), a3(:, :, :), &
      b1(:), b2(:, :), b3(:, :, :)
    integer :: e, p
    integer :: s, n, d(3)
    integer(int64) :: k
    do s = 1, nsets
      n = nelem(s)
      d = set_dims(:, s)
      allocate (v(n), back(n))
      do e = 1, n ! character p of element e is item 3 (e - 1) + p - 1
        do p = 1, 3
          v(e)(p:p) = gen_char(int(3 * (e - 1) + p - 1, int64), s)
        end do
      end do
      select case (set_rank(s))
      case (1)
        allocate (a1(n), b1(n))
        a1 = v
        b1 = ''
        call exchange(s, 700 + s, a1, b1, PIO_CHARACTER, PIO_CHAR, 3 * n)
        back = b1
      case (2)
        allocate (a2(d(1), d(2)), b2(d(1), d(2)))
        a2 = reshape(v, d(1:2))
        b2 = ''
        call exchange(s, 700 + s, a2, b2, PIO_CHARACTER, PIO_CHAR, 3 * n)
        back = reshape(b2, [n])
      case default
        allocate (a3(d(1), d(2), d(3)), b3(d(1), d(2), d(3)))
        a3 = reshape(v, d)
        b3 = ''
        call exchange(s, 700 + s, a3, b3, PIO_CHARACTER, PIO_CHAR, 3 * n)
        back = reshape(b3, [n])
      end select
      k = 0
      do e = 1, n
        do p = 1, 3
          if (back(e)(p:p) /= achar(32 + mod(iachar(v(e)(p:p)) - 32 + 1, 95))) k = k + 1
        end do
      end do
      if (k > 0) call fail('character: answer differs from the next character')
      deallocate (v, back)
      if (allocated(a1)) deallocate (a1, b1)
      if (allocated(a2)) deallocate (a2, b2)
      if (allocated(a3)) deallocate (a3, b3)
    end do
  end subroutine test_character

end module ftypes_lib

program pio_ftypes
  use ftypes_lib
  implicit none
  type(PIO_Appinfo) :: app, me
  type(PIO_Hostinfo) :: host
  type(PIO_Coninfo) :: con(8)
  type(PIO_Status) :: st
  integer :: ncon, i, j
  integer(int64) :: tx
  real(c_double) :: a(6, 5), b(4, 5)

  call PIO_Init('fortran', 0, 1)
  call PIO_Setpartner('cpartner', partner)

  ! facts, in Fortran types
  call PIO_Getappinfo(partner, app)
  call PIO_Getappinfo(PIO_SELF, me)
  call PIO_Gethostinfo(host)
  print '(a,a,a,a,a,i0)', 'info: partner ', trim(app%name), ' on system ', trim(app%system), &
    ', processes ', app%nprocs
  print '(a,a,a,i0)', 'info: me ', trim(me%name), ', process ', me%process_ID
  print '(a,a,a,a)', 'info: host ', trim(host%host), ', system ', trim(host%system)
  if (app%name /= 'cpartner' .or. app%nprocs /= 1 .or. app%process_ID /= -1) &
    call fail('PIO_Getappinfo(partner) is wrong')
  if (me%name /= 'fortran' .or. me%process_ID /= 0 .or. me%nprocs /= 1) &
    call fail('PIO_Getappinfo(PIO_SELF) is wrong')
  if (host%pool_size <= 0 .or. host%chunk_size <= 0 .or. host%version <= 0) &
    call fail('PIO_Gethostinfo is wrong')

  call test_integer()
  call test_real()
  call test_double()
  call test_complex()
  call test_dcomplex()
  call test_logical()
  call test_character()

  ! a strided section out (row 2 of a), a strided section in (row 3 of b)
  do j = 1, 5
    do i = 1, 6
      a(i, j) = 10 * i + j
    end do
  end do
  b = -1
  call PIO_Send(partner, 0, 900, PIO_DYNAMIC, a(2, :), PIO_DOUBLE_PRECISION, 5, PIO_BLOCKING)
  call PIO_Recv(partner, 0, 900, b(3, :), PIO_DOUBLE_PRECISION, 5, 60000, PIO_BLOCKING, st)
  if (any(b(3, :) /= 2 * a(2, :)) .or. any(b(1:2, :) /= -1) .or. any(b(4, :) /= -1) &
      .or. st%count /= 5) call fail('sections: wrong values or neighbours overwritten')
  messages = messages + 1

  ! the bundle carried it: both channels up, bytes sent on them
  call PIO_Getconinfo(partner, con, ncon)
  tx = 0
  do i = 1, ncon
    print '(a,i0,a,l1,a,a,a,a,a,i0)', 'info: channel ', con(i)%index, ' up ', con(i)%up, ' ', &
      trim(con(i)%local), ' -> ', trim(con(i)%remote), ' tx_bytes ', con(i)%tx_bytes
    tx = tx + con(i)%tx_bytes
  end do
  if (ncon /= 2 .or. .not. all(con(1:2)%up) .or. tx < 1000000) &
    call fail('PIO_Getconinfo: expected 2 channels up that carried the arrays')

  call PIO_Send(partner, 0, 999, PIO_DYNAMIC, 1, PIO_INTEGER, 1, PIO_SYNC) ! a scalar
  call PIO_Exit()
  if (failures > 0) then
    print '(a,i0,a)', 'FAIL pio-ftypes: ', failures, ' check(s) failed'
    error stop 1
  end if
  print '(a,i0,a)', 'OK pio-ftypes: ', messages, ' arrays of 7 types went to C and back, exact'
end program pio_ftypes
