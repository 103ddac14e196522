! pio-ffile.f90 - remote merged output from Fortran: raw blocks, an HDF5 dataset, errors.
! SPDX-License-Identifier: BSD-3-Clause
!
! Usage: pio-ffile raw HOST PATH | hdf5 HOST PATH | errors HOST
! Application "ffile"; run it as N processes (mpirun -np N, no MPI calls:
! PIO_Init takes the rank and size from the launcher). HOST's piod exports
! the folder the file appears in.
!   raw    process r writes, in the 256-byte block r: a REAL(8) a(4, 3, 2)
!          with a = 1000 r + its column-major position (1..24) at 0, the
!          strided section b(2, :) of an INTEGER b(3, 4) = 10 i + j at 192,
!          and 'Fortran!' at 208.
!   hdf5   dataset /fortran/T, DOUBLE PRECISION, Fortran shape (5, 4, 3):
!          process r writes the planes k = r + 1, r + 1 + N, ... as slabs
!          (1, 1, k) + (5, 4, 1) of a(i, j, k) = 100 i + 10 j + k. The file
!          shows the shape reversed, (3, 4, 5), as HDF5's Fortran API does.
!   errors what the binding, libpio and the remote side refuse, with ierr
!          ("CASE: CODE NAME: words[: remote text]"), then a PIO_File_open
!          without ierr that stops the program.
! Prints "OK pio-ffile MODE: ..." on success.
program pio_ffile
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64
  use pio
  implicit none
  character(len=256) :: mode, host, path
  type(PIO_Appinfo) :: me

  call get_command_argument(1, mode)
  call get_command_argument(2, host)
  call get_command_argument(3, path)
  call PIO_Init('ffile')
  call PIO_Getappinfo(PIO_SELF, me)
  select case (mode)
  case ('raw')
    call raw()
  case ('hdf5')
    call hdf5()
  case ('errors')
    call errors()
  case default
    print '(a)', 'usage: pio-ffile raw HOST PATH | hdf5 HOST PATH | errors HOST'
    error stop 2
  end select
  call PIO_Exit()

contains

  subroutine raw()
    type(PIO_File) :: fh
    real(c_double) :: a(4, 3, 2)
    integer(c_int32_t) :: b(3, 4)
    integer :: i, j, r
    integer(int64) :: base
    r = me%process_ID
    a = reshape([(1000 * r + i, i = 1, 24)], shape(a))
    b = reshape([((10 * i + j, i = 1, 3), j = 1, 4)], shape(b))
    base = 256_int64 * r
    call PIO_File_open(host, path, PIO_FILE_RAW, fh)
    call PIO_File_write_at(fh, base, a)                      ! an INTEGER(8) offset
    call PIO_File_write_at(fh, int(base) + 192, b(2, :))     ! a default one, a strided section
    call PIO_File_write_at(fh, base + 208, 'Fortran!')
    call PIO_File_close(fh)
    print '(a,i0,a,i0)', 'OK pio-ffile raw: process ', r, ' of ', me%nprocs
  end subroutine raw

  subroutine hdf5()
    type(PIO_File) :: fh
    type(PIO_Dataset) :: ds
    real(c_double) :: a(5, 4, 3)
    integer :: i, j, k, planes
    do k = 1, 3
      do j = 1, 4
        do i = 1, 5
          a(i, j, k) = 100 * i + 10 * j + k
        end do
      end do
    end do
    ds%name = '/fortran/T'
    ds%type = PIO_DOUBLE_PRECISION
    ds%ndims = 3
    ds%dims(1:3) = [5, 4, 3]
    call PIO_File_open_dataset(host, path, ds, fh)
    planes = 0
    do k = me%process_ID + 1, 3, me%nprocs
      if (mod(k, 2) == 1) then
        call PIO_File_write_slab(fh, [1, 1, k], [5, 4, 1], a(:, :, k))
      else ! the INTEGER(8) specific
        call PIO_File_write_slab(fh, [1_int64, 1_int64, int(k, int64)], [5_int64, 4_int64, 1_int64], &
                                 a(:, :, k))
      end if
      planes = planes + 1
    end do
    call PIO_File_close(fh)
    print '(a,i0,a,i0,a)', 'OK pio-ffile hdf5: process ', me%process_ID, ' wrote ', planes, ' planes'
  end subroutine hdf5

  ! show - "what: CODE NAME: words[: remote text]"
  subroutine show(what, ierr)
    character(len=*), intent(in) :: what
    integer, intent(in) :: ierr
    character(len=:), allocatable :: remote
    remote = PIO_File_error_text()
    if (len(remote) > 0) remote = ': ' // remote
    print '(a,a,i0,a,a,a,a,a)', what, ': ', ierr, ' ', PIO_Errname(ierr), ': ', &
      PIO_Strerror(ierr), remote
  end subroutine show

  subroutine errors()
    type(PIO_File) :: fh
    type(PIO_Dataset) :: ds
    integer :: ierr, ints(4, 6), three(3)
    real(c_float) :: reals(4)
    ints = 7
    three = 1
    reals = 1
    call PIO_File_open(host, '../escape.bin', PIO_FILE_RAW, fh, ierr)
    call show('open ../escape.bin', ierr)
    call PIO_File_open(host, 'nodir/x.bin', PIO_FILE_RAW, fh, ierr)
    call show('open nodir/x.bin', ierr)
    call PIO_File_open_dataset(host, 'e.h5', ds, fh, ierr)
    call show('open_dataset without a name', ierr)
    ds%name = '/d'
    ds%type = PIO_COMPLEX
    ds%ndims = 2
    ds%dims(1:2) = [4, 6]
    call PIO_File_open_dataset(host, 'e.h5', ds, fh, ierr)
    call show('open_dataset of COMPLEX', ierr)
    ds%type = PIO_INTEGER
    call PIO_File_open_dataset(host, 'e.h5', ds, fh, ierr)
    call show('open_dataset /d INTEGER (4, 6)', ierr)
    call PIO_File_write_slab(fh, [1, 1], [4, 1], three, ierr)
    call show('write_slab of 3 elements into 4', ierr)
    call PIO_File_write_slab(fh, [1, 1], [4, 1], reals, ierr)
    call show('write_slab of REAL into INTEGER', ierr)
    call PIO_File_write_slab(fh, [1, 1, 1], [4, 1, 1], ints(:, 1), ierr)
    call show('write_slab with 3 dimensions into 2', ierr)
    call PIO_File_write_slab(fh, [1, 6], [4, 2], ints(:, 1:2), ierr)
    call show('write_slab past the shape', ierr)
    call PIO_File_write_at(fh, 0, ints, ierr)
    call show('write_at on an HDF5 file', ierr)
    call PIO_File_write_slab(fh, [1, 6], [4, 1], ints(:, 6), ierr)
    call show('write_slab of column 6', ierr)
    call PIO_File_close(fh, ierr)
    call show('close e.h5', ierr)
    print '(a)', 'OK pio-ffile errors: now without ierr'
    flush (6)
    call PIO_File_open(host, '../escape.bin', PIO_FILE_RAW, fh)
    print '(a)', 'FAIL pio-ffile errors: PIO_File_open returned'
  end subroutine errors

end program pio_ffile
