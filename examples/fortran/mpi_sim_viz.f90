! mpi_sim_viz.f90 - two MPI jobs, a simulation and a visualization, coupled by PIO, in Fortran.
! SPDX-License-Identifier: BSD-3-Clause
!
! The Fortran twin of ../mpi_sim_viz.c, and it speaks the same: a Fortran
! sim feeds a C viz and a C sim feeds a Fortran viz. One program, two roles
! chosen by the first argument; each role is its own MPI job and its own PIO
! application, and the two jobs may run on different systems:
!
!     PIO_SOCKET=$SOCK_B mpirun -np 2 mpi_sim_viz viz &    # system B
!     PIO_SOCKET=$SOCK_A mpirun -np 4 mpi_sim_viz sim      # system A
!
! Every rank joins PIO as process <MPI rank> of <MPI size> of application
! "sim" or "viz" and names the other as its partner. Each step, sim rank r
! sends one array of COUNT DOUBLE PRECISION values to viz rank
! mod(r, viz size) with tag 100 step + r; value i (from 0) is
! 1e8 step + 1e6 r + i, so a receiver can check every element. Each viz rank
! receives the messages meant for it, from any sim process, by tag, and
! checks source, count and values. The ranks of each job add up their
! results with MPI_Reduce; rank 0 prints
!
!     sim: sent 12 of 12 messages
!     viz: received 12 of 12 messages, all correct
!
! and every rank exits non-zero when anything failed anywhere in its job.
! MPI and PIO live side by side: MPI inside a job, PIO between the jobs.
!
! Usage: mpi_sim_viz sim|viz [STEPS [COUNT]]   (defaults 3 and 262144)
! Build: mpif90 -o mpi_sim_viz mpi_sim_viz.f90 $(pkg-config --cflags --libs pio-fortran)
program mpi_sim_viz
  use, intrinsic :: iso_fortran_env, only: error_unit, real64
  use mpi_f08
  use pio
  implicit none
  integer, parameter :: recv_timeout_ms = 120000
  integer :: rank, nranks, provided, partner, steps, n, mine, got, expected
  integer :: total, total_got, ok
  character(len=16) :: role, arg
  type(PIO_Appinfo) :: info
  real(real64), allocatable :: buf(:)

  call MPI_Init_thread(MPI_THREAD_MULTIPLE, provided)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  call get_command_argument(1, role)
  if (role /= 'sim' .and. role /= 'viz') then
    if (rank == 0) write (error_unit, '(a)') 'usage: mpirun -np N mpi_sim_viz sim|viz [STEPS [COUNT]]'
    call MPI_Finalize()
    stop 2
  end if
  steps = 3
  n = 2**18
  if (command_argument_count() >= 2) then
    call get_command_argument(2, arg)
    read (arg, *) steps
  end if
  if (command_argument_count() >= 3) then
    call get_command_argument(3, arg)
    read (arg, *) n
  end if

  ! join the local piod: process <rank> of <size> of application <role>
  call PIO_Init(role, rank, nranks, ok)
  call must(ok, 'PIO_Init')
  if (role == 'sim') then
    call PIO_Setpartner('viz', partner, ierr=ok)
  else
    call PIO_Setpartner('sim', partner, ierr=ok)
  end if
  call must(ok, 'PIO_Setpartner')
  call PIO_Getappinfo(partner, info, ok)
  call must(ok, 'PIO_Getappinfo')

  allocate (buf(0:n - 1))
  got = 0
  if (role == 'sim') then
    mine = run_sim(info%nprocs)
    expected = nranks * steps
  else
    mine = run_viz(info%nprocs)
    expected = info%nprocs * steps
  end if

  call MPI_Reduce(mine, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD)
  call MPI_Reduce(got, total_got, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD)
  if (rank == 0) then
    if (role == 'sim') then
      print '(a,i0,a,i0,a)', 'sim: sent ', total, ' of ', expected, ' messages'
    else if (total == expected) then
      print '(a,i0,a,i0,a)', 'viz: received ', total, ' of ', expected, ' messages, all correct'
    else
      print '(a,i0,a,i0,a,i0,a)', 'viz: received ', total_got, ' of ', expected, ' messages, ', &
        total, ' correct: FAILED'
    end if
    flush (6)
  end if
  ! every rank learns the job's verdict, so the exit status is the same everywhere
  ok = 0
  if (rank == 0 .and. total == expected) ok = 1
  call MPI_Bcast(ok, 1, MPI_INTEGER, 0, MPI_COMM_WORLD)

  deallocate (buf)
  call PIO_Exit() ! a blocking send's data is in the piod's pool: leaving does not lose it
  call MPI_Finalize()
  if (ok /= 1) stop 1

contains

  ! A PIO call that must work: on failure say which, on which rank, and stop
  ! the whole job (the other ranks would wait for this one forever).
  subroutine must(ierr, what)
    integer, intent(in) :: ierr
    character(len=*), intent(in) :: what
    if (ierr == PIO_OK) return
    write (error_unit, '(a,a,i0,a,a,a,a,a,a)') trim(role), ' rank ', rank, ': ', what, ': ', &
      PIO_Strerror(ierr), ' ', PIO_Errname(ierr)
    call MPI_Abort(MPI_COMM_WORLD, 2)
  end subroutine must

  ! the values of one step's field of sim rank src: 1e8 step + 1e6 src + i
  subroutine field(step, src, f)
    integer, intent(in) :: step, src
    real(real64), intent(out) :: f(0:)
    integer :: i
    do i = 0, ubound(f, 1)
      f(i) = step * 1d8 + src * 1d6 + i
    end do
  end subroutine field

  ! sim: each step, one message to viz rank mod(rank, viz_size). Returns
  ! the number of messages sent.
  integer function run_sim(viz_size) result(sent)
    integer, intent(in) :: viz_size
    integer :: step, ierr
    sent = 0
    do step = 0, steps - 1
      call field(step, rank, buf)
      call PIO_Send(partner, mod(rank, viz_size), step * 100 + rank, PIO_DYNAMIC, buf, &
                    PIO_DOUBLE_PRECISION, n, PIO_BLOCKING, ierr)
      if (ierr == PIO_OK) then
        sent = sent + 1
      else
        write (error_unit, '(a,i0,a,i0,a,a)') 'sim rank ', rank, ': step ', step, ': PIO_Send: ', &
          PIO_Strerror(ierr)
      end if
    end do
  end function run_sim

  ! viz: each step, the message of every sim rank src with mod(src, size)
  ! == rank. Returns the number received correct; got counts those received.
  integer function run_viz(sim_size) result(good)
    integer, intent(in) :: sim_size
    real(real64), allocatable :: want(:)
    type(PIO_Status) :: st
    integer :: step, src, ierr, bad
    allocate (want(0:n - 1))
    good = 0
    do step = 0, steps - 1
      do src = rank, sim_size - 1, nranks
        buf = 0
        call PIO_Recv(partner, PIO_ANY_PROCESS, step * 100 + src, buf, PIO_DOUBLE_PRECISION, &
                      n, recv_timeout_ms, PIO_BLOCKING, st, ierr)
        if (ierr /= PIO_OK) then
          write (error_unit, '(a,i0,a,i0,a,i0,a,a)') 'viz rank ', rank, ': step ', step, &
            ' from sim ', src, ': PIO_Recv: ', PIO_Strerror(ierr)
          cycle
        end if
        got = got + 1
        call field(step, src, want)
        bad = count(buf /= want)
        if (st%source /= src .or. st%count /= n .or. bad > 0) then
          write (error_unit, '(a,i0,a,i0,a,i0,a,i0,a,i0,a,i0,a,i0,a)') 'viz rank ', rank, &
            ': step ', step, ': message tagged for sim ', src, ' came from ', st%source, &
            ' with ', st%count, ' of ', n, ' values, ', bad, ' wrong'
          cycle
        end if
        good = good + 1
      end do
    end do
  end function run_viz

end program mpi_sim_viz
