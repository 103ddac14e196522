! pio.f90 - module pio: the Fortran 2008 binding of PIO, every call of pio.h.
! SPDX-License-Identifier: BSD-3-Clause
!
! Design (docs/design-notes.md "Fortran binding (issue 7)", pio_fortran(3)):
! * Each call is a subroutine taking the C arguments in the C order, plus an
!   optional last argument ierr. With ierr it receives the status (PIO_OK on
!   success). Without ierr a failure writes "pio: CALL: words (PIO_Exxx)" to
!   standard error and ends the program with ERROR STOP <code>, as mpi_f08's
!   default error handler ends an MPI program. libpio itself never stops.
! * Buffers are TYPE(*), DIMENSION(..): any type, kind and rank, scalars too.
!   Counts are in elements of the datatype, of default or 8-byte integer kind
!   (a generic per call). pio_f.c checks that count items of the datatype fit
!   the buffer and its Fortran type.
! * The specifics that take a buffer are C functions (pio_f.c) bound directly:
!   a Fortran procedure in between would receive the descriptor itself, and
!   gfortran 12 mishandles that (a non-BIND(C) one loses a CHARACTER
!   argument's length, a BIND(C) one reads past a scalar's descriptor).
!   Without ierr, their failures come back to pio_f_stop here.
! * Blocking calls take any array section: pio_f.c packs a strided one into
!   a copy and, for a receive, scatters it back (not CONTIGUOUS dummies: then
!   gfortran 12 crashes compiling a caller that passes an assumed-rank array
!   on). Non-blocking calls use the memory until PIO_Wait / PIO_Test, so they
!   take contiguous memory only (PIO_EINVAL); so does PIO_Win_create, whose
!   memory other processes use until PIO_Win_free.
! * One-sided access: a window's size, and the length of PIO_Get / PIO_Put,
!   are their buffer's size in bytes; disp is a byte offset from 0 (either
!   integer kind), the 64-bit words of the atomics INTEGER(C_INT64_T).
! * Remote file access: PIO_Rfile_pread reads up to all of buf (its size in
!   bytes) at a byte offset from 0 (either integer kind); size and got are
!   INTEGER(C_INT64_T).
! * Names passed in lose their trailing blanks; names handed back are
!   blank-padded fixed-length fields, or allocatable strings of exact length.
! * HDF5 shapes, slab starts and counts are in Fortran order and starts count
!   from 1; the binding reverses them for the C API (C order, from 0). A
!   feed's grid and blocks are (x, y, z) with x fastest in C already, which
!   is Fortran's f(nx, ny, nz): not reversed; block starts and field indices
!   count from 1.
! Thread safety: as pio.h. The module keeps no state.
module pio
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: error_unit, int64
  implicit none
  private

  include 'pio_constants.inc'

  ! ---- types ------------------------------------------------------------

  ! What a completed receive (or send) reports: PIO_Status of pio.h.
  type, bind(C), public :: PIO_Status
    integer(c_int) :: partner = -1       ! partner handle of the source (receives)
    integer(c_int) :: source = -1        ! process_ID of the sender
    integer(c_int) :: tag = -1           ! tag it was sent with
    integer(c_int) :: datatype = 0       ! datatype it was sent as
    integer(c_size_t) :: count = 0       ! elements received
    integer(c_size_t) :: bytes = 0       ! bytes received (PIO_ETRUNC: in the message)
    integer(c_int) :: error = 0          ! PIO_OK or the request's error
    integer(c_int) :: uid = -1           ! the sender's uid, stamped by its piod (receives)
    integer(c_int) :: gid = -1           ! the sender's gid, stamped with it
    character(kind=c_char) :: system(PIO_NAME_MAX) = c_null_char ! the system that stamped them
    character(kind=c_char) :: app(PIO_NAME_MAX) = c_null_char    ! the sending application
    character(kind=c_char) :: user(PIO_NAME_MAX) = c_null_char   ! uid's name where stamped
  end type PIO_Status

  ! A non-blocking operation; null until PIO_Isend / PIO_Irecv, null again
  ! once PIO_Wait or PIO_Test completes it.
  type, bind(C), public :: PIO_Request
    private
    type(c_ptr) :: ptr = c_null_ptr
  end type PIO_Request

  type, public :: PIO_Appinfo
    character(len=PIO_NAME_MAX) :: name = ''
    character(len=PIO_NAME_MAX) :: system = ''  ! where it runs
    integer :: nprocs = 0                        ! processes in the application
    integer :: joined = 0                        ! processes currently joined
    integer :: process_ID = -1                   ! for PIO_SELF: this process; else -1
  end type PIO_Appinfo

  type, public :: PIO_Hostinfo
    character(len=PIO_NAME_MAX) :: host = ''
    character(len=PIO_NAME_MAX) :: system = ''
    integer :: version = 0                       ! piod's protocol version
    integer(int64) :: pool_size = 0              ! this process' pool, bytes
    integer(int64) :: eager_limit = 0            ! bytes: data rides with the request
    integer(int64) :: chunk_size = 0             ! bytes: large messages are cut so
  end type PIO_Hostinfo

  type, public :: PIO_Coninfo
    integer :: index = -1                        ! channel index (PIO_USER(index)), from 0
    logical :: up = .false.                      ! carries data now
    character(len=pio_c_coninfo_addr_len) :: local = '', remote = ''  ! "a.b.c.d:port"
    integer(int64) :: tx_bytes = 0, rx_bytes = 0 ! data bytes carried so far
    integer(int64) :: queued = 0                 ! bytes queued or in flight
    integer(int64) :: rate = 0                   ! recent throughput, bytes/s
    integer(int64) :: tx_chunks = 0, rx_chunks = 0
    integer(int64) :: resent = 0                 ! chunks resent after another channel failed
    integer(int64) :: downs = 0                  ! times it went down after being up
  end type PIO_Coninfo

  ! A remote merged output file. The binding keeps the mode and, for HDF5
  ! mode, the element type and rank, to check buffers and slabs (C:
  ! struct pio_f_file of pio_f.h).
  type, bind(C), public :: PIO_File
    private
    type(c_ptr) :: ptr = c_null_ptr
    integer(c_int) :: mode = -1
    integer(c_int) :: eltype = 0
    integer(c_int) :: ndims = 0
  end type PIO_File

  ! The one dataset of an HDF5-mode file, in Fortran order: dims(1) is the
  ! extent of the fastest-varying index (the file shows them reversed, as
  ! HDF5's own Fortran API does).
  type, public :: PIO_Dataset
    character(len=:), allocatable :: name        ! path in the file, e.g. "/field"
    integer :: type = 0                          ! PIO_INTEGER, PIO_REAL, ... (no complex,
                                                 ! LOGICAL or CHARACTER)
    integer :: ndims = 0                         ! 1 .. PIO_FILE_MAXDIMS
    integer(int64) :: dims(PIO_FILE_MAXDIMS) = 0 ! global shape, Fortran order
  end type PIO_Dataset

  ! ---- visualization feeds ----

  ! PIO_Grid of pio.h: points along x, y, z; point f(i, j, k) of a Fortran
  ! array f(nx, ny, nz) (x fastest, as in C) is at origin + (i - 1, j - 1,
  ! k - 1) * spacing. Not reversed: C's x fastest is Fortran's first index.
  type, bind(C), public :: PIO_Grid
    integer(c_int64_t) :: dims(3) = 0            ! nx, ny, nz (uint64_t in C)
    real(c_double) :: origin(3) = 0
    real(c_double) :: spacing(3) = 1
  end type PIO_Grid

  ! PIO_Feedinfo of pio.h: what a feed did so far (PIO_Feed_info).
  type, bind(C), public :: PIO_Feedinfo
    integer(c_int64_t) :: steps_sent = 0         ! steps this process sent whole
    integer(c_int64_t) :: steps_skipped = 0      ! not sent: receiver absent, or behind
    integer(c_int64_t) :: steps_acked = 0        ! steps the receiver took or dropped
    integer(c_int64_t) :: bytes_sent = 0
    integer(c_int) :: receiver_present = 0       ! 1: at the last step (C int)
    integer(c_int) :: lossless = 0               ! 1: the receiver wants every step
    integer(c_int) :: window = 0                 ! steps in flight before the feed waits or skips
    real(c_double) :: wait_seconds = 0           ! time end_step spent held back (lossless)
    integer(c_int64_t) :: plans_missed = 0       ! planned steps passed before the plan came
  end type PIO_Feedinfo

  ! A feed; null until PIO_Feed_open, null again after PIO_Feed_close. The
  ! binding keeps the fields' types and the grid's shape to check
  ! PIO_Feed_put's blocks and buffers (C: struct pio_f_feed of pio_f.h).
  type, bind(C), public :: PIO_Feed
    private
    type(c_ptr) :: ptr = c_null_ptr
    integer(c_int) :: nfields = 0
    integer(c_int) :: types(PIO_FEED_FIELDS_MAX) = 0
    integer(c_int64_t) :: dims(3) = 0
  end type PIO_Feed

  ! ---- one-sided access ----

  ! A window: null until PIO_Win_create, null again after PIO_Win_free.
  type, bind(C), public :: PIO_Win
    private
    type(c_ptr) :: ptr = c_null_ptr
  end type PIO_Win

  ! ---- remote file access ----

  ! A file of another host's file service open for reading: null until
  ! PIO_Rfile_open, null again after PIO_Rfile_close.
  type, bind(C), public :: PIO_Rfile
    private
    type(c_ptr) :: ptr = c_null_ptr
  end type PIO_Rfile

  ! C layouts of the records pio.h fills in; converted to the types above.
  type, bind(C) :: c_appinfo
    character(kind=c_char) :: name(PIO_NAME_MAX), system(PIO_NAME_MAX)
    integer(c_int) :: nprocs, joined, process_ID
  end type c_appinfo

  type, bind(C) :: c_hostinfo
    character(kind=c_char) :: host(PIO_NAME_MAX), system(PIO_NAME_MAX)
    integer(c_int) :: version
    integer(c_size_t) :: pool_size, eager_limit, chunk_size
  end type c_hostinfo

  type, bind(C) :: c_coninfo
    integer(c_int) :: index, up
    character(kind=c_char) :: local(pio_c_coninfo_addr_len), remote(pio_c_coninfo_addr_len)
    integer(c_int64_t) :: tx_bytes, rx_bytes, queued, rate, tx_chunks, rx_chunks, resent
    integer(c_int) :: downs
  end type c_coninfo

  type, bind(C) :: c_dataset
    type(c_ptr) :: name
    integer(c_int) :: type, ndims
    integer(c_int64_t) :: dims(PIO_FILE_MAXDIMS)
  end type c_dataset

  ! Each BIND(C) type has the size of its C struct, or this module does not
  ! compile ("Division by zero" below means pio.h changed a struct: update
  ! the type above to match).
  integer, parameter :: layout_ok = 1 / merge(1, 0, &
    storage_size(PIO_Status()) / 8 == pio_c_sizeof_status .and. &
    storage_size(PIO_Request()) / 8 == pio_c_sizeof_request .and. &
    storage_size(c_appinfo(' ', ' ', 0, 0, 0)) / 8 == pio_c_sizeof_appinfo .and. &
    storage_size(c_hostinfo(' ', ' ', 0, 0_c_size_t, 0_c_size_t, 0_c_size_t)) / 8 &
      == pio_c_sizeof_hostinfo .and. &
    storage_size(c_coninfo(0, 0, ' ', ' ', 0_c_int64_t, 0_c_int64_t, 0_c_int64_t, &
      0_c_int64_t, 0_c_int64_t, 0_c_int64_t, 0_c_int64_t, 0)) / 8 == pio_c_sizeof_coninfo &
    .and. storage_size(c_dataset(c_null_ptr, 0, 0, 0_c_int64_t)) / 8 == pio_c_sizeof_dataset &
    .and. storage_size(PIO_File()) / 8 == pio_c_sizeof_f_file &
    .and. storage_size(PIO_Grid()) / 8 == pio_c_sizeof_grid &
    .and. storage_size(PIO_Feedinfo()) / 8 == pio_c_sizeof_feedinfo &
    .and. storage_size(PIO_Feed()) / 8 == pio_c_sizeof_f_feed &
    .and. storage_size(PIO_Win()) / 8 == pio_c_sizeof_win &
    .and. storage_size(PIO_Rfile()) / 8 == pio_c_sizeof_rfile)

  ! ---- public procedures --------------------------------------------------

  public :: PIO_Init, PIO_Init_comm, PIO_Exit, PIO_Setpartner, PIO_Addpartner
  public :: PIO_Send, PIO_Recv, PIO_Isend, PIO_Irecv, PIO_Wait, PIO_Test
  public :: PIO_Waitany, PIO_Waitall, PIO_Testany, PIO_Getfd
  public :: PIO_Getappinfo, PIO_Gethostinfo, PIO_Getconinfo, PIO_Setclasses
  public :: PIO_Strerror, PIO_Errname, PIO_USER, PIO_Get_version
  public :: PIO_File_open, PIO_File_open_dataset, PIO_File_write_at, PIO_File_write_slab
  public :: PIO_File_close, PIO_File_error_text
  public :: PIO_Feed_open, PIO_Feed_begin_step, PIO_Feed_put, PIO_Feed_end_step, PIO_Feed_info, &
    PIO_Feed_sending, PIO_Feed_put_sub
  public :: PIO_Feed_close
  public :: PIO_Win_create, PIO_Win_free, PIO_Get, PIO_Put, PIO_Iget, PIO_Iput, &
    PIO_Compare_and_swap, PIO_Fetch_and_add, PIO_Win_flush, PIO_Win_number, PIO_Win_remote
  public :: PIO_Rfile_open, PIO_Rfile_pread, PIO_Rfile_readlist, PIO_Rfile_advise, PIO_Rfile_close

  ! Generics: one specific per kind of the count (default INTEGER or
  ! INTEGER(8)), of the offset, start and count of the file calls, and of
  ! the disp of the window calls and the offset of PIO_Rfile_pread. The specifics that take a buffer are the
  ! C functions of pio_f.c (pio_f.h), bound directly.
  interface PIO_Send
    subroutine pio_send_c4(partner, process_ID, tag, connection, buf, datatype, count, mode, &
        ierr) bind(C, name='pio_f_send_c4')
      import :: c_int
      integer(c_int), value :: partner, process_ID, tag, connection, datatype, count, mode
      type(*), dimension(..), intent(in) :: buf
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_send_c4
    subroutine pio_send_c8(partner, process_ID, tag, connection, buf, datatype, count, mode, &
        ierr) bind(C, name='pio_f_send_c8')
      import :: c_int, c_int64_t
      integer(c_int), value :: partner, process_ID, tag, connection, datatype, mode
      type(*), dimension(..), intent(in) :: buf
      integer(c_int64_t), value :: count
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_send_c8
  end interface PIO_Send

  interface PIO_Recv
    subroutine pio_recv_c4(partner, process_ID, tag, buf, datatype, count, timeout, mode, &
        status, ierr) bind(C, name='pio_f_recv_c4')
      import :: c_int, PIO_Status
      integer(c_int), value :: partner, process_ID, tag, datatype, count, timeout, mode
      type(*), dimension(..) :: buf
      type(PIO_Status), intent(out), optional :: status
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_recv_c4
    subroutine pio_recv_c8(partner, process_ID, tag, buf, datatype, count, timeout, mode, &
        status, ierr) bind(C, name='pio_f_recv_c8')
      import :: c_int, c_int64_t, PIO_Status
      integer(c_int), value :: partner, process_ID, tag, datatype, timeout, mode
      type(*), dimension(..) :: buf
      integer(c_int64_t), value :: count
      type(PIO_Status), intent(out), optional :: status
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_recv_c8
  end interface PIO_Recv

  interface PIO_Isend
    subroutine pio_isend_c4(partner, process_ID, tag, connection, buf, datatype, count, mode, &
        req, ierr) bind(C, name='pio_f_isend_c4')
      import :: c_int, PIO_Request
      integer(c_int), value :: partner, process_ID, tag, connection, datatype, count, mode
      type(*), dimension(..), intent(in), asynchronous :: buf
      type(PIO_Request), intent(out) :: req
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_isend_c4
    subroutine pio_isend_c8(partner, process_ID, tag, connection, buf, datatype, count, mode, &
        req, ierr) bind(C, name='pio_f_isend_c8')
      import :: c_int, c_int64_t, PIO_Request
      integer(c_int), value :: partner, process_ID, tag, connection, datatype, mode
      type(*), dimension(..), intent(in), asynchronous :: buf
      integer(c_int64_t), value :: count
      type(PIO_Request), intent(out) :: req
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_isend_c8
  end interface PIO_Isend

  interface PIO_Irecv
    subroutine pio_irecv_c4(partner, process_ID, tag, buf, datatype, count, mode, req, ierr) &
        bind(C, name='pio_f_irecv_c4')
      import :: c_int, PIO_Request
      integer(c_int), value :: partner, process_ID, tag, datatype, count, mode
      type(*), dimension(..), asynchronous :: buf
      type(PIO_Request), intent(out) :: req
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_irecv_c4
    subroutine pio_irecv_c8(partner, process_ID, tag, buf, datatype, count, mode, req, ierr) &
        bind(C, name='pio_f_irecv_c8')
      import :: c_int, c_int64_t, PIO_Request
      integer(c_int), value :: partner, process_ID, tag, datatype, mode
      type(*), dimension(..), asynchronous :: buf
      integer(c_int64_t), value :: count
      type(PIO_Request), intent(out) :: req
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_irecv_c8
  end interface PIO_Irecv

  ! PIO_File_write_at - write all of buf at byte offset (from 0) of the file.
  interface PIO_File_write_at
    subroutine pio_file_write_at_c4(fh, offset, buf, ierr) bind(C, name='pio_f_file_write_at_c4')
      import :: c_int, PIO_File
      type(PIO_File), intent(in) :: fh
      integer(c_int), value :: offset
      type(*), dimension(..), intent(in) :: buf
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_file_write_at_c4
    subroutine pio_file_write_at_c8(fh, offset, buf, ierr) bind(C, name='pio_f_file_write_at_c8')
      import :: c_int, c_int64_t, PIO_File
      type(PIO_File), intent(in) :: fh
      integer(c_int64_t), value :: offset
      type(*), dimension(..), intent(in) :: buf
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_file_write_at_c8
  end interface PIO_File_write_at

  ! PIO_File_write_slab - HDF5 mode: write buf, which holds exactly the slab
  ! start(i) .. start(i) + count(i) - 1 (Fortran order, from 1).
  interface PIO_File_write_slab
    subroutine pio_file_write_slab_c4(fh, start, count, buf, ierr) &
        bind(C, name='pio_f_file_write_slab_c4')
      import :: c_int, PIO_File
      type(PIO_File), intent(in) :: fh
      integer(c_int), intent(in) :: start(:), count(:)
      type(*), dimension(..), intent(in) :: buf
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_file_write_slab_c4
    subroutine pio_file_write_slab_c8(fh, start, count, buf, ierr) &
        bind(C, name='pio_f_file_write_slab_c8')
      import :: c_int, c_int64_t, PIO_File
      type(PIO_File), intent(in) :: fh
      integer(c_int64_t), intent(in) :: start(:), count(:)
      type(*), dimension(..), intent(in) :: buf
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_file_write_slab_c8
  end interface PIO_File_write_slab

  ! PIO_Feed_put - this process's block of field fidx (names(fidx) of
  ! PIO_Feed_open, from 1): points start(i) .. start(i) + count(i) - 1 along
  ! x, y, z (starts from 1); data holds exactly the block, x fastest (a
  ! Fortran array or section b(cx, cy, cz)), of the field's type and kind.
  interface PIO_Feed_put
    subroutine pio_feed_put_c4(feed, fidx, start, count, data, ierr) &
        bind(C, name='pio_f_feed_put_c4')
      import :: c_int, PIO_Feed
      type(PIO_Feed), intent(in) :: feed
      integer(c_int), value :: fidx
      integer(c_int), intent(in) :: start(:), count(:)
      type(*), dimension(..), intent(in) :: data
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_feed_put_c4
    subroutine pio_feed_put_c8(feed, fidx, start, count, data, ierr) &
        bind(C, name='pio_f_feed_put_c8')
      import :: c_int, c_int64_t, PIO_Feed
      type(PIO_Feed), intent(in) :: feed
      integer(c_int), value :: fidx
      integer(c_int64_t), intent(in) :: start(:), count(:)
      type(*), dimension(..), intent(in) :: data
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_feed_put_c8
  end interface PIO_Feed_put

  ! PIO_Feed_put_sub - as PIO_Feed_put for a block inside a larger local
  ! array: data is that whole array (contiguous, rank 3), the block of
  ! count(:) points starts at mem_off(:) in it (from 1: [2, 2, 2] inside one
  ! ghost layer); libpio copies its rows straight into the pool.
  interface PIO_Feed_put_sub
    subroutine pio_feed_put_sub_c4(feed, fidx, start, count, data, mem_off, ierr) &
        bind(C, name='pio_f_feed_put_sub_c4')
      import :: c_int, PIO_Feed
      type(PIO_Feed), intent(in) :: feed
      integer(c_int), value :: fidx
      integer(c_int), intent(in) :: start(:), count(:)
      type(*), dimension(..), intent(in) :: data
      integer(c_int), intent(in) :: mem_off(:)
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_feed_put_sub_c4
    subroutine pio_feed_put_sub_c8(feed, fidx, start, count, data, mem_off, ierr) &
        bind(C, name='pio_f_feed_put_sub_c8')
      import :: c_int, c_int64_t, PIO_Feed
      type(PIO_Feed), intent(in) :: feed
      integer(c_int), value :: fidx
      integer(c_int64_t), intent(in) :: start(:), count(:)
      type(*), dimension(..), intent(in) :: data
      integer(c_int64_t), intent(in) :: mem_off(:)
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_feed_put_sub_c8
  end interface PIO_Feed_put_sub

  ! PIO_Win_create - register base (any type and rank, contiguous) as this
  ! process's next window; its size in bytes is the window's (a zero-size
  ! array: an empty window). base must not be deallocated or go out of
  ! scope before PIO_Win_free; give it the ASYNCHRONOUS (or VOLATILE)
  ! attribute: other processes write it. access (optional, keyword
  ! access=): PIO_WIN_APP (the default), PIO_WIN_PARTNERS, PIO_WIN_UID or
  ! PIO_WIN_ANYONE, as in C.
  interface PIO_Win_create
    subroutine pio_win_create_c(base, win, ierr, access) bind(C, name='pio_f_win_create')
      import :: c_int, PIO_Win
      type(*), dimension(..), asynchronous :: base
      type(PIO_Win), intent(out) :: win
      integer(c_int), intent(out), optional :: ierr
      integer(c_int), intent(in), optional :: access
    end subroutine pio_win_create_c
  end interface PIO_Win_create

  ! PIO_Get / PIO_Put - all of buf (its size in bytes) from / to byte disp
  ! (from 0) of win's counterpart in process process_ID of partner
  ! (PIO_SELF: this application). Any section (a strided one is packed).
  interface PIO_Get
    subroutine pio_get_c4(win, partner, process_ID, disp, buf, ierr) bind(C, name='pio_f_get_c4')
      import :: c_int, PIO_Win
      type(PIO_Win), intent(in) :: win
      integer(c_int), value :: partner, process_ID, disp
      type(*), dimension(..) :: buf
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_get_c4
    subroutine pio_get_c8(win, partner, process_ID, disp, buf, ierr) bind(C, name='pio_f_get_c8')
      import :: c_int, c_int64_t, PIO_Win
      type(PIO_Win), intent(in) :: win
      integer(c_int), value :: partner, process_ID
      integer(c_int64_t), value :: disp
      type(*), dimension(..) :: buf
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_get_c8
  end interface PIO_Get

  interface PIO_Put
    subroutine pio_put_c4(win, partner, process_ID, disp, buf, ierr) bind(C, name='pio_f_put_c4')
      import :: c_int, PIO_Win
      type(PIO_Win), intent(in) :: win
      integer(c_int), value :: partner, process_ID, disp
      type(*), dimension(..), intent(in) :: buf
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_put_c4
    subroutine pio_put_c8(win, partner, process_ID, disp, buf, ierr) bind(C, name='pio_f_put_c8')
      import :: c_int, c_int64_t, PIO_Win
      type(PIO_Win), intent(in) :: win
      integer(c_int), value :: partner, process_ID
      integer(c_int64_t), value :: disp
      type(*), dimension(..), intent(in) :: buf
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_put_c8
  end interface PIO_Put

  ! PIO_Iget / PIO_Iput - non-blocking forms: buf (contiguous) is used
  ! until PIO_Wait or PIO_Test completes req (status%bytes: its size).
  interface PIO_Iget
    subroutine pio_iget_c4(win, partner, process_ID, disp, buf, req, ierr) &
        bind(C, name='pio_f_iget_c4')
      import :: c_int, PIO_Win, PIO_Request
      type(PIO_Win), intent(in) :: win
      integer(c_int), value :: partner, process_ID, disp
      type(*), dimension(..), asynchronous :: buf
      type(PIO_Request), intent(out) :: req
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_iget_c4
    subroutine pio_iget_c8(win, partner, process_ID, disp, buf, req, ierr) &
        bind(C, name='pio_f_iget_c8')
      import :: c_int, c_int64_t, PIO_Win, PIO_Request
      type(PIO_Win), intent(in) :: win
      integer(c_int), value :: partner, process_ID
      integer(c_int64_t), value :: disp
      type(*), dimension(..), asynchronous :: buf
      type(PIO_Request), intent(out) :: req
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_iget_c8
  end interface PIO_Iget

  interface PIO_Iput
    subroutine pio_iput_c4(win, partner, process_ID, disp, buf, req, ierr) &
        bind(C, name='pio_f_iput_c4')
      import :: c_int, PIO_Win, PIO_Request
      type(PIO_Win), intent(in) :: win
      integer(c_int), value :: partner, process_ID, disp
      type(*), dimension(..), intent(in), asynchronous :: buf
      type(PIO_Request), intent(out) :: req
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_iput_c4
    subroutine pio_iput_c8(win, partner, process_ID, disp, buf, req, ierr) &
        bind(C, name='pio_f_iput_c8')
      import :: c_int, c_int64_t, PIO_Win, PIO_Request
      type(PIO_Win), intent(in) :: win
      integer(c_int), value :: partner, process_ID
      integer(c_int64_t), value :: disp
      type(*), dimension(..), intent(in), asynchronous :: buf
      type(PIO_Request), intent(out) :: req
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_iput_c8
  end interface PIO_Iput

  ! PIO_Rfile_pread - up to all of buf (its size in bytes) from byte offset
  ! (from 0) of the remote file; got: the bytes read, fewer than buf's only
  ! at the end of the file. Any section (a strided one is read into a packed
  ! copy and scattered back).
  interface PIO_Rfile_pread
    subroutine pio_rfile_pread_c4(rf, buf, offset, got, ierr) &
        bind(C, name='pio_f_rfile_pread_c4')
      import :: c_int, c_int64_t, PIO_Rfile
      type(PIO_Rfile), intent(in) :: rf
      type(*), dimension(..) :: buf
      integer(c_int), value :: offset
      integer(c_int64_t), intent(out) :: got
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_rfile_pread_c4
    subroutine pio_rfile_pread_c8(rf, buf, offset, got, ierr) &
        bind(C, name='pio_f_rfile_pread_c8')
      import :: c_int, c_int64_t, PIO_Rfile
      type(PIO_Rfile), intent(in) :: rf
      type(*), dimension(..) :: buf
      integer(c_int64_t), value :: offset
      integer(c_int64_t), intent(out) :: got
      integer(c_int), intent(out), optional :: ierr
    end subroutine pio_rfile_pread_c8
  end interface PIO_Rfile_pread

  ! PIO_Rfile_readlist - n ranges at once (the C call's list, up to 16 READs
  ! in flight): range i is counts(i) bytes at byte offset offsets(i) (from
  ! 0), read into buf one range after the other (buf holds at least
  ! sum(counts) bytes); gots(i): the bytes range i brought (fewer only at
  ! the end of the file).
  interface
    subroutine PIO_Rfile_readlist(rf, buf, n, offsets, counts, gots, ierr) &
        bind(C, name='pio_f_rfile_readlist')
      import :: c_int, c_int64_t, PIO_Rfile
      type(PIO_Rfile), intent(in) :: rf
      type(*), dimension(..) :: buf
      integer(c_int), value :: n
      integer(c_int64_t), intent(in) :: offsets(*), counts(*)
      integer(c_int64_t), intent(out) :: gots(*)
      integer(c_int), intent(out), optional :: ierr
    end subroutine PIO_Rfile_readlist
  end interface

  ! PIO_Compare_and_swap, PIO_Fetch_and_add - disp of either integer kind.
  interface PIO_Compare_and_swap
    module procedure pio_compare_and_swap_c4, pio_compare_and_swap_c8
  end interface PIO_Compare_and_swap

  interface PIO_Fetch_and_add
    module procedure pio_fetch_and_add_c4, pio_fetch_and_add_c8
  end interface PIO_Fetch_and_add

  ! PIO_Feed_begin_step - the step number of either integer kind.
  interface PIO_Feed_begin_step
    module procedure pio_feed_begin_step_c4, pio_feed_begin_step_c8
  end interface PIO_Feed_begin_step

  integer, parameter :: why_len = 256

  ! ---- the C side ---------------------------------------------------------
  interface
    integer(c_size_t) function c_strlen(s) bind(C, name='strlen')
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
    end function c_strlen

    type(c_ptr) function c_strerror(status) bind(C, name='PIO_Strerror')
      import :: c_int, c_ptr
      integer(c_int), value :: status
    end function c_strerror

    type(c_ptr) function c_errname(status) bind(C, name='PIO_Errname')
      import :: c_int, c_ptr
      integer(c_int), value :: status
    end function c_errname

    type(c_ptr) function c_get_version() bind(C, name='PIO_Get_version')
      import :: c_ptr
    end function c_get_version

    integer(c_int) function c_init(app_name, process_ID, nprocs) bind(C, name='PIO_Init')
      import :: c_int, c_char
      character(kind=c_char), intent(in), optional :: app_name(*)
      integer(c_int), value :: process_ID, nprocs
    end function c_init

    integer(c_int) function c_comm_info(comm, rank, size) bind(C, name='pio_f_comm_info')
      import :: c_int
      integer(c_int), value :: comm
      integer(c_int), intent(out) :: rank, size
    end function c_comm_info

    integer(c_int) function c_exit() bind(C, name='PIO_Exit')
      import :: c_int
    end function c_exit

    integer(c_int) function c_setpartner(name, partner) bind(C, name='PIO_Setpartner')
      import :: c_int, c_char
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int), intent(out) :: partner
    end function c_setpartner

    integer(c_int) function c_addpartner(name, partner) bind(C, name='PIO_Addpartner')
      import :: c_int, c_char
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int), intent(out) :: partner
    end function c_addpartner

    integer(c_int) function c_wait(req, timeout, status) bind(C, name='PIO_Wait')
      import :: c_int, PIO_Request, PIO_Status
      type(PIO_Request), intent(inout) :: req
      integer(c_int), value :: timeout
      type(PIO_Status), intent(inout), optional :: status
    end function c_wait

    integer(c_int) function c_test(req, done, status) bind(C, name='PIO_Test')
      import :: c_int, PIO_Request, PIO_Status
      type(PIO_Request), intent(inout) :: req
      integer(c_int), intent(out) :: done
      type(PIO_Status), intent(inout), optional :: status
    end function c_test

    integer(c_int) function c_waitany(count, reqs, index, timeout, status) &
        bind(C, name='PIO_Waitany')
      import :: c_int, PIO_Request, PIO_Status
      integer(c_int), value :: count
      type(PIO_Request), intent(inout) :: reqs(*)
      integer(c_int), intent(out) :: index
      integer(c_int), value :: timeout
      type(PIO_Status), intent(inout), optional :: status
    end function c_waitany

    integer(c_int) function c_waitall(count, reqs, timeout, statuses) bind(C, name='PIO_Waitall')
      import :: c_int, PIO_Request, PIO_Status
      integer(c_int), value :: count
      type(PIO_Request), intent(inout) :: reqs(*)
      integer(c_int), value :: timeout
      type(PIO_Status), intent(inout), optional :: statuses(*)
    end function c_waitall

    integer(c_int) function c_testany(count, reqs, index, done, status) &
        bind(C, name='PIO_Testany')
      import :: c_int, PIO_Request, PIO_Status
      integer(c_int), value :: count
      type(PIO_Request), intent(inout) :: reqs(*)
      integer(c_int), intent(out) :: index, done
      type(PIO_Status), intent(inout), optional :: status
    end function c_testany

    integer(c_int) function c_getfd(fd) bind(C, name='PIO_Getfd')
      import :: c_int
      integer(c_int), intent(out) :: fd
    end function c_getfd

    integer(c_int) function c_getappinfo(partner, info) bind(C, name='PIO_Getappinfo')
      import :: c_int, c_appinfo
      integer(c_int), value :: partner
      type(c_appinfo), intent(out) :: info
    end function c_getappinfo

    integer(c_int) function c_gethostinfo(info) bind(C, name='PIO_Gethostinfo')
      import :: c_int, c_hostinfo
      type(c_hostinfo), intent(out) :: info
    end function c_gethostinfo

    integer(c_int) function c_setclasses(tag0, n, shares) bind(C, name='PIO_Setclasses')
      import :: c_int
      integer(c_int), value :: tag0, n
      integer(c_int), intent(in) :: shares(*)
    end function c_setclasses

    integer(c_int) function c_getconinfo(partner, info, max, n) bind(C, name='PIO_Getconinfo')
      import :: c_int, c_coninfo
      integer(c_int), value :: partner, max
      type(c_coninfo), intent(inout) :: info(*)
      integer(c_int), intent(out) :: n
    end function c_getconinfo

    integer(c_int) function c_file_open(host, path, mode, fh) bind(C, name='PIO_File_open')
      import :: c_int, c_char, c_ptr
      character(kind=c_char), intent(in) :: host(*), path(*)
      integer(c_int), value :: mode
      type(c_ptr), intent(out) :: fh
    end function c_file_open

    integer(c_int) function c_file_open_dataset(host, path, ds, fh) &
        bind(C, name='PIO_File_open_dataset')
      import :: c_int, c_char, c_ptr, c_dataset
      character(kind=c_char), intent(in) :: host(*), path(*)
      type(c_dataset), intent(in) :: ds
      type(c_ptr), intent(out) :: fh
    end function c_file_open_dataset

    integer(c_int) function c_file_close(fh) bind(C, name='PIO_File_close')
      import :: c_int, c_ptr
      type(c_ptr), value :: fh
    end function c_file_close

    type(c_ptr) function c_file_error_text() bind(C, name='PIO_File_error_text')
      import :: c_ptr
    end function c_file_error_text

    integer(c_int) function c_feed_open(receiver, grid, nfields, names, types, feed) &
        bind(C, name='PIO_Feed_open')
      import :: c_int, c_char, c_ptr, PIO_Grid
      character(kind=c_char), intent(in) :: receiver(*)
      type(PIO_Grid), intent(in) :: grid
      integer(c_int), value :: nfields
      type(c_ptr), intent(in) :: names(*)
      integer(c_int), intent(in) :: types(*)
      type(c_ptr), intent(out) :: feed
    end function c_feed_open

    integer(c_int) function c_feed_begin_step(feed, step, time) bind(C, name='PIO_Feed_begin_step')
      import :: c_int, c_int64_t, c_double, c_ptr
      type(c_ptr), value :: feed
      integer(c_int64_t), value :: step
      real(c_double), value :: time
    end function c_feed_begin_step

    integer(c_int) function c_feed_end_step(feed) bind(C, name='PIO_Feed_end_step')
      import :: c_int, c_ptr
      type(c_ptr), value :: feed
    end function c_feed_end_step

    integer(c_int) function c_feed_sending(feed) bind(C, name='PIO_Feed_sending')
      import :: c_int, c_ptr
      type(c_ptr), value :: feed
    end function c_feed_sending

    integer(c_int) function c_feed_info(feed, info) bind(C, name='PIO_Feed_info')
      import :: c_int, c_ptr, PIO_Feedinfo
      type(c_ptr), value :: feed
      type(PIO_Feedinfo), intent(out) :: info
    end function c_feed_info

    integer(c_int) function c_feed_close(feed) bind(C, name='PIO_Feed_close')
      import :: c_int, c_ptr
      type(c_ptr), value :: feed
    end function c_feed_close

    integer(c_int) function c_win_free(win) bind(C, name='PIO_Win_free')
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: win
    end function c_win_free

    integer(c_int) function c_compare_and_swap(win, partner, process_ID, disp, compare, swap, &
        old) bind(C, name='PIO_Compare_and_swap')
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: win
      integer(c_int), value :: partner, process_ID
      integer(c_int64_t), value :: disp, compare, swap ! uint64_t in C
      integer(c_int64_t), intent(out) :: old
    end function c_compare_and_swap

    integer(c_int) function c_fetch_and_add(win, partner, process_ID, disp, add, old) &
        bind(C, name='PIO_Fetch_and_add')
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: win
      integer(c_int), value :: partner, process_ID
      integer(c_int64_t), value :: disp, add ! uint64_t in C
      integer(c_int64_t), intent(out) :: old
    end function c_fetch_and_add

    integer(c_int) function c_win_flush(win, partner, process_ID) bind(C, name='PIO_Win_flush')
      import :: c_int, c_ptr
      type(c_ptr), value :: win
      integer(c_int), value :: partner, process_ID
    end function c_win_flush

    integer(c_int) function c_win_number(win) bind(C, name='PIO_Win_number')
      import :: c_int, c_ptr
      type(c_ptr), value :: win
    end function c_win_number

    integer(c_int) function c_win_remote(number, win) bind(C, name='PIO_Win_remote')
      import :: c_int, c_ptr
      integer(c_int), value :: number
      type(c_ptr), intent(out) :: win
    end function c_win_remote

    integer(c_int) function c_rfile_open(host, path, rf, size) bind(C, name='PIO_Rfile_open')
      import :: c_int, c_int64_t, c_char, c_ptr
      character(kind=c_char), intent(in) :: host(*), path(*)
      type(c_ptr), intent(out) :: rf
      integer(c_int64_t), intent(out), optional :: size ! uint64_t in C
    end function c_rfile_open

    integer(c_int) function c_rfile_close(rf) bind(C, name='PIO_Rfile_close')
      import :: c_int, c_ptr
      type(c_ptr), value :: rf
    end function c_rfile_close

    integer(c_int) function c_rfile_advise(rf, advice) bind(C, name='PIO_Rfile_advise')
      import :: c_int, c_ptr
      type(c_ptr), value :: rf
      integer(c_int), value :: advice
    end function c_rfile_advise
  end interface

contains

  ! ---- helpers --------------------------------------------------------------

  ! finish - hand rc to ierr, or, without ierr, stop the program on failure.
  ! why: the binding's own reason, if it refused the call before C saw it.
  ! file: present for PIO_File_* and PIO_Rfile_* calls: append what the
  ! remote host said (PIO_File_error_text).
  subroutine finish(rc, call, ierr, why, file)
    integer(c_int), intent(in) :: rc
    character(len=*), intent(in) :: call
    integer(c_int), intent(out), optional :: ierr
    character(kind=c_char), intent(in), optional :: why(:)
    logical, intent(in), optional :: file
    character(len=:), allocatable :: extra
    integer(c_int) :: ignored
    if (rc == PIO_OK) then
      if (present(ierr)) ierr = rc
      return
    end if
    extra = ''
    if (present(why)) extra = from_chars(why)
    ! Refused by the binding before libpio saw it: PIO_File_error_text must
    ! then say '' (failed locally), so clear it with a call that fails here.
    if (present(file) .and. len(extra) > 0) ignored = c_file_close(c_null_ptr)
    if (present(ierr)) then
      ierr = rc
      return
    end if
    call stop_program(rc, call, extra, present(file))
  end subroutine finish

  ! stop_program - "pio: CALL: words (NAME)[: why][: remote text]" on
  ! stderr, then ERROR STOP rc (the exit status is the code).
  subroutine stop_program(rc, call, why, file)
    integer(c_int), intent(in) :: rc
    character(len=*), intent(in) :: call, why
    logical, intent(in) :: file
    character(len=:), allocatable :: msg, remote
    msg = 'pio: ' // call // ': ' // PIO_Strerror(rc) // ' (' // PIO_Errname(rc) // ')'
    if (len(why) > 0) msg = msg // ': ' // why
    if (file) then
      remote = PIO_File_error_text()
      if (len(remote) > 0) msg = msg // ': ' // remote
    end if
    write (error_unit, '(a)') msg
    flush (error_unit)
    error stop rc
  end subroutine stop_program

  ! pio_f_stop - stop_program for the calls whose body is C (pio_f.c, pio_f.h):
  ! call and why are C strings.
  subroutine pio_f_stop(rc, call, why, file) bind(C, name='pio_f_stop')
    integer(c_int), value :: rc, file
    type(c_ptr), value :: call, why
    call stop_program(rc, from_cptr(call), from_cptr(why), file /= 0)
  end subroutine pio_f_stop

  ! A Fortran name as a C string: trailing blanks dropped, NUL added.
  pure function c_string(s) result(c)
    character(len=*), intent(in) :: s
    character(kind=c_char, len=len_trim(s) + 1) :: c
    c = trim(s) // c_null_char
  end function c_string

  ! The characters of a C array up to its first NUL.
  pure function from_chars(a) result(s)
    character(kind=c_char), intent(in) :: a(:)
    character(len=:), allocatable :: s
    integer :: i, n
    n = size(a)
    do i = 1, size(a)
      if (a(i) == c_null_char) then
        n = i - 1
        exit
      end if
    end do
    allocate (character(len=n) :: s)
    do i = 1, n
      s(i:i) = a(i)
    end do
  end function from_chars

  ! A C string (const char *) as an allocatable Fortran string.
  function from_cptr(p) result(s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: a(:)
    if (.not. c_associated(p)) then
      s = ''
      return
    end if
    call c_f_pointer(p, a, [c_strlen(p)])
    s = from_chars(a)
  end function from_cptr

  ! ---- words ------------------------------------------------------------------

  ! PIO_Strerror - the words for a status code ("unknown PIO error" for others).
  function PIO_Strerror(status) result(text)
    integer(c_int), intent(in) :: status
    character(len=:), allocatable :: text
    text = from_cptr(c_strerror(status))
  end function PIO_Strerror

  ! PIO_Errname - the code's name, e.g. "PIO_ETIMEDOUT".
  function PIO_Errname(status) result(text)
    integer(c_int), intent(in) :: status
    character(len=:), allocatable :: text
    text = from_cptr(c_errname(status))
  end function PIO_Errname

  ! PIO_Get_version - libpio's version, "MAJOR.MINOR.PATCH".
  function PIO_Get_version() result(text)
    character(len=:), allocatable :: text
    text = from_cptr(c_get_version())
  end function PIO_Get_version

  ! PIO_USER(i) - the connection argument that names channel i (from 0).
  elemental integer(c_int) function PIO_USER(i)
    integer(c_int), intent(in) :: i
    PIO_USER = i
  end function PIO_USER

  ! ---- joining ------------------------------------------------------------------

  ! PIO_Init - join this process to its local piod. Every argument may be
  ! left out: app_name ($PIO_APP), process_ID and nprocs (the launcher's).
  subroutine PIO_Init(app_name, process_ID, nprocs, ierr)
    character(len=*), intent(in), optional :: app_name
    integer(c_int), intent(in), optional :: process_ID, nprocs
    integer(c_int), intent(out), optional :: ierr
    integer(c_int) :: id, np, rc
    id = -1
    np = 0
    if (present(process_ID)) id = process_ID
    if (present(nprocs)) np = nprocs
    if (present(app_name)) then
      if (len_trim(app_name) > 0) then
        rc = c_init(c_string(app_name), id, np)
      else
        rc = c_init(process_ID=id, nprocs=np)
      end if
    else
      rc = c_init(process_ID=id, nprocs=np)
    end if
    call finish(rc, 'PIO_Init', ierr)
  end subroutine PIO_Init

  ! PIO_Init_comm - PIO_Init with the rank and size of an MPI communicator:
  ! comm is a Fortran MPI handle (the INTEGER of `use mpi` or mpif.h; with
  ! `use mpi_f08`, pass comm%MPI_VAL). The binding asks MPI through the
  ! Fortran MPI library of the program (MPI_COMM_RANK, MPI_COMM_SIZE), so
  ! module pio needs no MPI to build; a program not linked with MPI gets
  ! PIO_ENOSYS. app_name as in PIO_Init.
  subroutine PIO_Init_comm(app_name, comm, ierr)
    character(len=*), intent(in), optional :: app_name
    integer, intent(in) :: comm
    integer(c_int), intent(out), optional :: ierr
    integer(c_int) :: rank, size, rc
    rc = c_comm_info(int(comm, c_int), rank, size)
    if (rc == PIO_OK) then
      call PIO_Init(app_name, rank, size, ierr)
    else
      call finish(rc, 'PIO_Init_comm', ierr)
    end if
  end subroutine PIO_Init_comm

  subroutine PIO_Exit(ierr)
    integer(c_int), intent(out), optional :: ierr
    call finish(c_exit(), 'PIO_Exit', ierr)
  end subroutine PIO_Exit

  subroutine PIO_Setpartner(name, partner, ierr)
    character(len=*), intent(in) :: name
    integer(c_int), intent(out) :: partner
    integer(c_int), intent(out), optional :: ierr
    call finish(c_setpartner(c_string(name), partner), 'PIO_Setpartner(' // trim(name) // ')', ierr)
  end subroutine PIO_Setpartner

  subroutine PIO_Addpartner(name, partner, ierr)
    character(len=*), intent(in) :: name
    integer(c_int), intent(out) :: partner
    integer(c_int), intent(out), optional :: ierr
    call finish(c_addpartner(c_string(name), partner), 'PIO_Addpartner(' // trim(name) // ')', ierr)
  end subroutine PIO_Addpartner

  ! ---- messages (PIO_Send, PIO_Recv, PIO_Isend, PIO_Irecv: pio_f.c) -----------

  ! PIO_Wait - wait up to timeout ms for req; on completion req becomes null
  ! and ierr is the operation's status.
  subroutine PIO_Wait(req, timeout, status, ierr)
    type(PIO_Request), intent(inout) :: req
    integer(c_int), intent(in) :: timeout
    type(PIO_Status), intent(out), optional :: status
    integer(c_int), intent(out), optional :: ierr
    call finish(c_wait(req, timeout, status), 'PIO_Wait', ierr)
  end subroutine PIO_Wait

  ! PIO_Test - done is .true. and the rest as PIO_Wait when req is complete;
  ! else done is .false. and ierr PIO_OK.
  subroutine PIO_Test(req, done, status, ierr)
    type(PIO_Request), intent(inout) :: req
    logical, intent(out) :: done
    type(PIO_Status), intent(out), optional :: status
    integer(c_int), intent(out), optional :: ierr
    integer(c_int) :: d, rc
    d = 0
    rc = c_test(req, d, status)
    done = d /= 0
    call finish(rc, 'PIO_Test', ierr)
  end subroutine PIO_Test

  ! PIO_Waitany - wait up to timeout ms until one request of reqs completes:
  ! index is its place in reqs (from 1, as MPI_Waitany in Fortran), that
  ! request becomes null and ierr is its outcome. Null requests are
  ! skipped; all null: index = PIO_UNDEFINED at once. PIO_ETIMEDOUT:
  ! index = PIO_UNDEFINED, nothing changes.
  subroutine PIO_Waitany(reqs, index, timeout, status, ierr)
    type(PIO_Request), intent(inout) :: reqs(:)
    integer(c_int), intent(out) :: index
    integer(c_int), intent(in) :: timeout
    type(PIO_Status), intent(out), optional :: status
    integer(c_int), intent(out), optional :: ierr
    integer(c_int) :: i, rc
    i = PIO_UNDEFINED
    rc = c_waitany(int(size(reqs), c_int), reqs, i, timeout, status)
    index = PIO_UNDEFINED
    if (i >= 0) index = i + 1
    call finish(rc, 'PIO_Waitany', ierr)
  end subroutine PIO_Waitany

  ! PIO_Waitall - wait up to timeout ms until every request of reqs is
  ! complete; then all become null, statuses(i) tells each one's outcome
  ! (statuses needs size(reqs) elements), and ierr is the first failure in
  ! array order (PIO_OK if none). PIO_ETIMEDOUT: nothing changes.
  subroutine PIO_Waitall(reqs, timeout, statuses, ierr)
    type(PIO_Request), intent(inout) :: reqs(:)
    integer(c_int), intent(in) :: timeout
    type(PIO_Status), intent(out), optional :: statuses(:)
    integer(c_int), intent(out), optional :: ierr
    integer(c_int) :: rc
    character(kind=c_char) :: why(why_len)
    if (present(statuses)) then
      if (size(statuses) < size(reqs)) then
        call set_why(why, 'statuses has fewer elements than reqs')
        call finish(PIO_EINVAL, 'PIO_Waitall', ierr, why)
        return
      end if
    end if
    rc = c_waitall(int(size(reqs), c_int), reqs, timeout, statuses)
    call finish(rc, 'PIO_Waitall', ierr)
  end subroutine PIO_Waitall

  ! PIO_Testany - PIO_Waitany without waiting: done is .true. and the rest
  ! as PIO_Waitany when a request is complete (or all are null); else done
  ! is .false., index PIO_UNDEFINED and ierr PIO_OK.
  subroutine PIO_Testany(reqs, index, done, status, ierr)
    type(PIO_Request), intent(inout) :: reqs(:)
    integer(c_int), intent(out) :: index
    logical, intent(out) :: done
    type(PIO_Status), intent(out), optional :: status
    integer(c_int), intent(out), optional :: ierr
    integer(c_int) :: i, d, rc
    i = PIO_UNDEFINED
    d = 0
    rc = c_testany(int(size(reqs), c_int), reqs, i, d, status)
    done = d /= 0
    index = PIO_UNDEFINED
    if (i >= 0) index = i + 1
    call finish(rc, 'PIO_Testany', ierr)
  end subroutine PIO_Testany

  ! PIO_Getfd - fd: libpio's completion descriptor (pio.h, PIO_Getfd(3)):
  ! readable while a request is complete and not yet collected. Poll it
  ! (through C's poll(2)); never read or close it.
  subroutine PIO_Getfd(fd, ierr)
    integer(c_int), intent(out) :: fd
    integer(c_int), intent(out), optional :: ierr
    fd = -1
    call finish(c_getfd(fd), 'PIO_Getfd', ierr)
  end subroutine PIO_Getfd

  ! ---- facts ----------------------------------------------------------------------

  subroutine PIO_Getappinfo(partner, info, ierr)
    integer(c_int), intent(in) :: partner
    type(PIO_Appinfo), intent(out) :: info
    integer(c_int), intent(out), optional :: ierr
    type(c_appinfo) :: c
    integer(c_int) :: rc
    rc = c_getappinfo(partner, c)
    if (rc == PIO_OK) then
      info%name = from_chars(c%name)
      info%system = from_chars(c%system)
      info%nprocs = c%nprocs
      info%joined = c%joined
      info%process_ID = c%process_ID
    end if
    call finish(rc, 'PIO_Getappinfo', ierr)
  end subroutine PIO_Getappinfo

  subroutine PIO_Gethostinfo(info, ierr)
    type(PIO_Hostinfo), intent(out) :: info
    integer(c_int), intent(out), optional :: ierr
    type(c_hostinfo) :: c
    integer(c_int) :: rc
    rc = c_gethostinfo(c)
    if (rc == PIO_OK) then
      info%host = from_chars(c%host)
      info%system = from_chars(c%system)
      info%version = c%version
      info%pool_size = c%pool_size
      info%eager_limit = c%eager_limit
      info%chunk_size = c%chunk_size
    end if
    call finish(rc, 'PIO_Gethostinfo', ierr)
  end subroutine PIO_Gethostinfo

  ! PIO_Setclasses - share this process's receive space among the classes
  ! of the messages sent to it: tag tag0 + c is class c (0 .. size(shares)
  ! - 1), any other tag class 0; shares(c + 1) percent each (pio.h). An
  ! empty shares ends the classes.
  subroutine PIO_Setclasses(tag0, shares, ierr)
    integer(c_int), intent(in) :: tag0
    integer(c_int), intent(in) :: shares(:)
    integer(c_int), intent(out), optional :: ierr
    integer(c_int) :: rc, one(1)
    one = 0
    if (size(shares) > 0) then
      rc = c_setclasses(tag0, int(size(shares), c_int), shares)
    else
      rc = c_setclasses(tag0, 0_c_int, one)
    end if
    call finish(rc, 'PIO_Setclasses', ierr)
  end subroutine PIO_Setclasses

  ! PIO_Getconinfo - the channels to partner's system: up to size(info)
  ! records in info(1:n).
  subroutine PIO_Getconinfo(partner, info, n, ierr)
    integer(c_int), intent(in) :: partner
    type(PIO_Coninfo), intent(out) :: info(:)
    integer(c_int), intent(out) :: n
    integer(c_int), intent(out), optional :: ierr
    type(c_coninfo), allocatable :: c(:)
    integer(c_int) :: rc, i
    allocate (c(max(1, size(info))))
    n = 0
    rc = c_getconinfo(partner, c, int(size(info), c_int), n)
    if (rc == PIO_OK) then
      do i = 1, min(n, int(size(info), c_int))
        info(i)%index = c(i)%index
        info(i)%up = c(i)%up /= 0
        info(i)%local = from_chars(c(i)%local)
        info(i)%remote = from_chars(c(i)%remote)
        info(i)%tx_bytes = c(i)%tx_bytes
        info(i)%rx_bytes = c(i)%rx_bytes
        info(i)%queued = c(i)%queued
        info(i)%rate = c(i)%rate
        info(i)%tx_chunks = c(i)%tx_chunks
        info(i)%rx_chunks = c(i)%rx_chunks
        info(i)%resent = c(i)%resent
        info(i)%downs = iand(int(c(i)%downs, int64), int(z'FFFFFFFF', int64))
      end do
    end if
    call finish(rc, 'PIO_Getconinfo', ierr)
  end subroutine PIO_Getconinfo

  ! ---- remote merged output ----------------------------------------------------

  ! PIO_File_open - collective: every process opens path on host (raw mode).
  subroutine PIO_File_open(host, path, mode, fh, ierr)
    character(len=*), intent(in) :: host, path
    integer(c_int), intent(in) :: mode
    type(PIO_File), intent(out) :: fh
    integer(c_int), intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_file_open(c_string(host), c_string(path), mode, fh%ptr)
    if (rc == PIO_OK) fh%mode = mode
    call finish(rc, 'PIO_File_open(' // trim(host) // ', ' // trim(path) // ')', ierr, file=.true.)
  end subroutine PIO_File_open

  ! PIO_File_open_dataset - as PIO_File_open, in HDF5 mode: one dataset ds,
  ! whose shape is given in Fortran order.
  subroutine PIO_File_open_dataset(host, path, ds, fh, ierr)
    character(len=*), intent(in) :: host, path
    type(PIO_Dataset), intent(in) :: ds
    type(PIO_File), intent(out) :: fh
    integer(c_int), intent(out), optional :: ierr
    character(kind=c_char), allocatable, target :: name(:)
    type(c_dataset) :: c
    integer(c_int) :: rc
    integer :: i, nd
    character(kind=c_char) :: why(why_len)
    why = c_null_char
    nd = ds%ndims
    rc = PIO_EINVAL
    if (.not. allocated(ds%name)) then
      call set_why(why, 'the dataset has no name')
    else if (nd < 1 .or. nd > PIO_FILE_MAXDIMS) then
      call set_why(why, 'ndims must be 1 .. PIO_FILE_MAXDIMS')
    else
      allocate (name(len_trim(ds%name) + 1))
      do i = 1, len_trim(ds%name)
        name(i) = ds%name(i:i)
      end do
      name(size(name)) = c_null_char
      c%name = c_loc(name)
      c%type = ds%type
      c%ndims = nd
      c%dims = 0
      c%dims(1:nd) = ds%dims(nd:1:-1)
      rc = c_file_open_dataset(c_string(host), c_string(path), c, fh%ptr)
    end if
    if (rc == PIO_OK) then
      fh%mode = PIO_FILE_HDF5
      fh%eltype = ds%type
      fh%ndims = nd
    end if
    call finish(rc, 'PIO_File_open_dataset(' // trim(host) // ', ' // trim(path) // ')', ierr, &
                why, file=.true.)
  end subroutine PIO_File_open_dataset

  subroutine set_why(why, text)
    character(kind=c_char), intent(out) :: why(:)
    character(len=*), intent(in) :: text
    integer :: i
    why = c_null_char
    do i = 1, min(len(text), size(why) - 1)
      why(i) = text(i:i)
    end do
  end subroutine set_why

  ! (PIO_File_write_at, PIO_File_write_slab: pio_f.c)

  ! PIO_File_close - collective; returns when the file is complete on the
  ! remote host, or why not. fh is null afterwards, whatever the outcome.
  subroutine PIO_File_close(fh, ierr)
    type(PIO_File), intent(inout) :: fh
    integer(c_int), intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_file_close(fh%ptr)
    fh = PIO_File()
    call finish(rc, 'PIO_File_close', ierr, file=.true.)
  end subroutine PIO_File_close

  ! PIO_File_error_text - what the remote host said about this thread's
  ! last PIO_File_* call that failed there ('' when none, or it failed here).
  function PIO_File_error_text() result(text)
    character(len=:), allocatable :: text
    text = from_cptr(c_file_error_text())
  end function PIO_File_error_text

  ! ---- visualization feeds --------------------------------------------------

  ! PIO_Feed_open - this process's side of a feed to application receiver:
  ! fields names(1:nfields) (trailing blanks dropped) of types
  ! types(1:nfields) on grid. A field's type is PIO_DOUBLE_PRECISION,
  ! PIO_REAL or PIO_INTEGER, or the C names PIO_DOUBLE, PIO_FLOAT, PIO_INT32
  ! of the same types.
  subroutine PIO_Feed_open(receiver, grid, nfields, names, types, feed, ierr)
    character(len=*), intent(in) :: receiver
    type(PIO_Grid), intent(in) :: grid
    integer(c_int), intent(in) :: nfields
    character(len=*), intent(in) :: names(:)
    integer(c_int), intent(in) :: types(:)
    type(PIO_Feed), intent(out) :: feed
    integer(c_int), intent(out), optional :: ierr
    character(kind=c_char), allocatable, target :: cnames(:, :)
    type(c_ptr) :: ptrs(PIO_FEED_FIELDS_MAX)
    integer(c_int) :: ctypes(PIO_FEED_FIELDS_MAX), rc
    character(len=why_len) :: text
    character(kind=c_char) :: why(why_len)
    integer :: f, g, i, n
    why = c_null_char
    text = ''
    ctypes = 0
    if (nfields < 1 .or. nfields > PIO_FEED_FIELDS_MAX) then
      write (text, '(a,i0,a,i0)') 'nfields is ', nfields, ': a feed has 1 .. ', PIO_FEED_FIELDS_MAX
    else if (size(names) < nfields .or. size(types) < nfields) then
      write (text, '(a,i0,a,i0,a,i0)') 'names and types need ', nfields, ' entries, not ', &
        size(names), ' and ', size(types)
    else
      do f = 1, nfields
        n = len_trim(names(f))
        ctypes(f) = feed_type(types(f))
        if (n == 0 .or. n >= PIO_FEED_NAME_MAX) then
          write (text, '(a,i0,a,i0,a)') 'names(', f, ') must have 1 .. ', PIO_FEED_NAME_MAX - 1, &
            ' characters'
        else if (ctypes(f) == 0) then
          write (text, '(a,i0,a,i0,a)') 'types(', f, ') is ', types(f), ': a field is ' // &
            'PIO_DOUBLE_PRECISION, PIO_REAL or PIO_INTEGER (PIO_DOUBLE, PIO_FLOAT, PIO_INT32)'
        end if
        do g = 1, f - 1
          if (names(g) == names(f)) write (text, '(a,i0,a,i0,a)') 'names(', g, ') and names(', &
            f, ') are the same'
        end do
        if (len_trim(text) > 0) exit
      end do
    end if
    if (len_trim(text) > 0) then
      rc = PIO_EINVAL
      call set_why(why, trim(text))
    else
      allocate (cnames(PIO_FEED_NAME_MAX, nfields))
      cnames = c_null_char
      do f = 1, nfields
        do i = 1, len_trim(names(f))
          cnames(i, f) = names(f)(i:i)
        end do
        ptrs(f) = c_loc(cnames(1, f))
      end do
      rc = c_feed_open(c_string(receiver), grid, nfields, ptrs, ctypes, feed%ptr)
    end if
    if (rc == PIO_OK) then
      feed%nfields = nfields
      feed%types = ctypes
      feed%dims = grid%dims
    end if
    call finish(rc, 'PIO_Feed_open(' // trim(receiver) // ')', ierr, why)
  end subroutine PIO_Feed_open

  ! The C type of a field of type t (Fortran's names are the same types), or 0.
  elemental integer(c_int) function feed_type(t)
    integer(c_int), intent(in) :: t
    select case (t)
    case (PIO_DOUBLE_PRECISION, PIO_DOUBLE)
      feed_type = PIO_DOUBLE
    case (PIO_REAL, PIO_FLOAT)
      feed_type = PIO_FLOAT
    case (PIO_INTEGER, PIO_INT32)
      feed_type = PIO_INT32
    case default
      feed_type = 0
    end select
  end function feed_type

  ! PIO_Feed_begin_step - start step (numbers increase, from 0 up) at
  ! simulation time.
  subroutine pio_feed_begin_step_c8(feed, step, time, ierr)
    type(PIO_Feed), intent(in) :: feed
    integer(c_int64_t), intent(in) :: step
    real(c_double), intent(in) :: time
    integer(c_int), intent(out), optional :: ierr
    integer(c_int) :: rc
    character(kind=c_char) :: why(why_len)
    character(len=64) :: text
    why = c_null_char
    if (step < 0) then
      write (text, '(a,i0,a)') 'step ', step, ' is negative'
      call set_why(why, trim(text))
      rc = PIO_EINVAL
    else
      rc = c_feed_begin_step(feed%ptr, step, time)
    end if
    call finish(rc, 'PIO_Feed_begin_step', ierr, why)
  end subroutine pio_feed_begin_step_c8

  subroutine pio_feed_begin_step_c4(feed, step, time, ierr)
    type(PIO_Feed), intent(in) :: feed
    integer(c_int), intent(in) :: step
    real(c_double), intent(in) :: time
    integer(c_int), intent(out), optional :: ierr
    call pio_feed_begin_step_c8(feed, int(step, c_int64_t), time, ierr)
  end subroutine pio_feed_begin_step_c4

  ! (PIO_Feed_put: pio_f.c)

  subroutine PIO_Feed_end_step(feed, ierr)
    type(PIO_Feed), intent(in) :: feed
    integer(c_int), intent(out), optional :: ierr
    call finish(c_feed_end_step(feed%ptr), 'PIO_Feed_end_step', ierr)
  end subroutine PIO_Feed_end_step

  ! PIO_Feed_sending - .true. when the step just begun is being sent (the
  ! blocks need preparing), .false. when it is skipped.
  logical function PIO_Feed_sending(feed)
    type(PIO_Feed), intent(in) :: feed
    PIO_Feed_sending = c_feed_sending(feed%ptr) /= 0
  end function PIO_Feed_sending

  subroutine PIO_Feed_info(feed, info, ierr)
    type(PIO_Feed), intent(in) :: feed
    type(PIO_Feedinfo), intent(out) :: info
    integer(c_int), intent(out), optional :: ierr
    call finish(c_feed_info(feed%ptr, info), 'PIO_Feed_info', ierr)
  end subroutine PIO_Feed_info

  ! PIO_Feed_close - end this process's side; feed is null afterwards.
  subroutine PIO_Feed_close(feed, ierr)
    type(PIO_Feed), intent(inout) :: feed
    integer(c_int), intent(out), optional :: ierr
    integer(c_int) :: rc
    rc = c_feed_close(feed%ptr)
    feed = PIO_Feed()
    call finish(rc, 'PIO_Feed_close', ierr)
  end subroutine PIO_Feed_close

  ! ---- one-sided access (PIO_Win_create, PIO_Get, PIO_Put, PIO_Iget, PIO_Iput: pio_f.c)

  ! PIO_Win_free - withdraw the window (every process that knew it is told);
  ! win is null afterwards.
  subroutine PIO_Win_free(win, ierr)
    type(PIO_Win), intent(inout) :: win
    integer(c_int), intent(out), optional :: ierr
    character(kind=c_char) :: why(why_len)
    integer(c_int) :: rc
    rc = win_check(win, 0_c_int64_t, .false., why)
    if (rc == PIO_OK) rc = c_win_free(win%ptr)
    call finish(rc, 'PIO_Win_free', ierr, why)
  end subroutine PIO_Win_free

  ! PIO_Compare_and_swap - atomically: the 64-bit word at byte disp (a
  ! multiple of 8) becomes swap if it equals compare; old is its value before.
  subroutine pio_compare_and_swap_c8(win, partner, process_ID, disp, compare, swap, old, ierr)
    type(PIO_Win), intent(in) :: win
    integer(c_int), intent(in) :: partner, process_ID
    integer(c_int64_t), intent(in) :: disp, compare, swap
    integer(c_int64_t), intent(out) :: old
    integer(c_int), intent(out), optional :: ierr
    character(kind=c_char) :: why(why_len)
    integer(c_int) :: rc
    old = 0
    rc = win_check(win, disp, .true., why)
    if (rc == PIO_OK) &
      rc = c_compare_and_swap(win%ptr, partner, process_ID, disp, compare, swap, old)
    call finish(rc, 'PIO_Compare_and_swap', ierr, why)
  end subroutine pio_compare_and_swap_c8

  subroutine pio_compare_and_swap_c4(win, partner, process_ID, disp, compare, swap, old, ierr)
    type(PIO_Win), intent(in) :: win
    integer(c_int), intent(in) :: partner, process_ID, disp
    integer(c_int64_t), intent(in) :: compare, swap
    integer(c_int64_t), intent(out) :: old
    integer(c_int), intent(out), optional :: ierr
    call pio_compare_and_swap_c8(win, partner, process_ID, int(disp, c_int64_t), compare, swap, &
                                 old, ierr)
  end subroutine pio_compare_and_swap_c4

  ! PIO_Fetch_and_add - atomically adds add to the 64-bit word at byte disp
  ! (a multiple of 8); old is its value before.
  subroutine pio_fetch_and_add_c8(win, partner, process_ID, disp, add, old, ierr)
    type(PIO_Win), intent(in) :: win
    integer(c_int), intent(in) :: partner, process_ID
    integer(c_int64_t), intent(in) :: disp, add
    integer(c_int64_t), intent(out) :: old
    integer(c_int), intent(out), optional :: ierr
    character(kind=c_char) :: why(why_len)
    integer(c_int) :: rc
    old = 0
    rc = win_check(win, disp, .true., why)
    if (rc == PIO_OK) rc = c_fetch_and_add(win%ptr, partner, process_ID, disp, add, old)
    call finish(rc, 'PIO_Fetch_and_add', ierr, why)
  end subroutine pio_fetch_and_add_c8

  subroutine pio_fetch_and_add_c4(win, partner, process_ID, disp, add, old, ierr)
    type(PIO_Win), intent(in) :: win
    integer(c_int), intent(in) :: partner, process_ID, disp
    integer(c_int64_t), intent(in) :: add
    integer(c_int64_t), intent(out) :: old
    integer(c_int), intent(out), optional :: ierr
    call pio_fetch_and_add_c8(win, partner, process_ID, int(disp, c_int64_t), add, old, ierr)
  end subroutine pio_fetch_and_add_c4

  ! PIO_Win_flush - wait until every operation this process started on win
  ! to process_ID of partner (PIO_ANY_PROCESS, PIO_ANY_PARTNER: all) is
  ! complete at the target.
  subroutine PIO_Win_flush(win, partner, process_ID, ierr)
    type(PIO_Win), intent(in) :: win
    integer(c_int), intent(in) :: partner, process_ID
    integer(c_int), intent(out), optional :: ierr
    character(kind=c_char) :: why(why_len)
    integer(c_int) :: rc
    rc = win_check(win, 0_c_int64_t, .false., why)
    if (rc == PIO_OK) rc = c_win_flush(win%ptr, partner, process_ID)
    call finish(rc, 'PIO_Win_flush', ierr, why)
  end subroutine PIO_Win_flush

  ! win_check - the binding's checks before C: a null window, a negative
  ! disp, and for the atomics (word) a disp not a multiple of 8. Returns
  ! PIO_OK (why empty) or PIO_EINVAL with why.
  ! PIO_Win_number - the number of win, a window of this process (from 0, in
  ! creation order); -1 for a null window or a PIO_Win_remote handle.
  integer(c_int) function PIO_Win_number(win) result(n)
    type(PIO_Win), intent(in) :: win
    n = c_win_number(win%ptr)
  end function PIO_Win_number

  ! PIO_Win_remote - win: a handle for window number `number` of whichever
  ! process an operation names, with no memory of this process behind it;
  ! free it with PIO_Win_free.
  subroutine PIO_Win_remote(number, win, ierr)
    integer(c_int), intent(in) :: number
    type(PIO_Win), intent(out) :: win
    integer(c_int), intent(out), optional :: ierr
    character(kind=c_char) :: why(why_len)
    call set_why(why, '')
    call finish(c_win_remote(number, win%ptr), 'PIO_Win_remote', ierr, why)
  end subroutine PIO_Win_remote

  integer(c_int) function win_check(win, disp, word, why) result(rc)
    type(PIO_Win), intent(in) :: win
    integer(c_int64_t), intent(in) :: disp
    logical, intent(in) :: word
    character(kind=c_char), intent(out) :: why(:)
    character(len=why_len) :: text
    text = ''
    if (.not. c_associated(win%ptr)) then
      text = 'the window is null: not created (PIO_Win_create), or freed'
    else if (disp < 0) then
      write (text, '(a,i0,a)') 'disp ', disp, ' is negative: it counts bytes from 0'
    else if (word .and. mod(disp, 8_c_int64_t) /= 0) then
      write (text, '(a,i0,a)') 'disp ', disp, ' is not a multiple of 8: the atomics work on ' // &
        'aligned 64-bit words'
    end if
    rc = PIO_OK
    if (len_trim(text) > 0) rc = PIO_EINVAL
    call set_why(why, trim(text))
  end function win_check

  ! ---- remote file access (PIO_Rfile_pread: pio_f.c) --------------------------

  ! PIO_Rfile_open - open path (relative to the export root of host's file
  ! service) for reading; size: the file's size in bytes.
  subroutine PIO_Rfile_open(host, path, rf, size, ierr)
    character(len=*), intent(in) :: host, path
    type(PIO_Rfile), intent(out) :: rf
    integer(c_int64_t), intent(out), optional :: size
    integer(c_int), intent(out), optional :: ierr
    integer(c_int) :: rc
    if (present(size)) size = 0
    rc = c_rfile_open(c_string(host), c_string(path), rf%ptr, size)
    call finish(rc, 'PIO_Rfile_open(' // trim(host) // ', ' // trim(path) // ')', ierr, file=.true.)
  end subroutine PIO_Rfile_open

  ! PIO_Rfile_advise - how rf will be read: PIO_RFILE_NORMAL (the default:
  ! a read that continues the last one starts reading ahead) or
  ! PIO_RFILE_RANDOM (never read ahead).
  subroutine PIO_Rfile_advise(rf, advice, ierr)
    type(PIO_Rfile), intent(in) :: rf
    integer(c_int), intent(in) :: advice
    integer(c_int), intent(out), optional :: ierr
    character(kind=c_char) :: why(why_len)
    integer(c_int) :: rc
    why = c_null_char
    rc = PIO_EINVAL
    if (c_associated(rf%ptr)) then
      rc = c_rfile_advise(rf%ptr, advice)
    else
      call set_why(why, 'the file is null: not opened (PIO_Rfile_open), or closed')
    end if
    call finish(rc, 'PIO_Rfile_advise', ierr, why)
  end subroutine PIO_Rfile_advise

  ! PIO_Rfile_close - end the session; rf is null afterwards.
  subroutine PIO_Rfile_close(rf, ierr)
    type(PIO_Rfile), intent(inout) :: rf
    integer(c_int), intent(out), optional :: ierr
    character(kind=c_char) :: why(why_len)
    integer(c_int) :: rc
    why = c_null_char
    rc = PIO_EINVAL
    if (c_associated(rf%ptr)) then
      rc = c_rfile_close(rf%ptr)
    else
      call set_why(why, 'the file is null: not opened (PIO_Rfile_open), or closed')
    end if
    rf = PIO_Rfile()
    call finish(rc, 'PIO_Rfile_close', ierr, why)
  end subroutine PIO_Rfile_close

end module pio
