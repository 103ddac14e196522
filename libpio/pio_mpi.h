/* pio_mpi.h - PIO_Init_comm: join PIO with the rank and size of an MPI communicator.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A header-only function, so that libpio never depends on MPI: a program
 * that includes this header is an MPI program already (compiled with mpicc,
 * linked with MPI), and a program that does not pays nothing. Include it
 * after <mpi.h>, or on its own (it includes both headers).
 * Thread-safety: as PIO_Init; MPI must be initialized first. */
#ifndef PIO_MPI_H
#define PIO_MPI_H

#include <mpi.h>
#include <pio.h>

/* PIO_Init_comm - PIO_Init(app_name, rank in comm, size of comm).
 * app_name [in]: as PIO_Init (NULL: $PIO_APP); copied.
 * comm [in]: a communicator whose processes form the application, usually
 *   MPI_COMM_WORLD; only read. The launcher's variables are not looked at.
 * Returns what PIO_Init returns; PIO_EINVAL if comm is MPI_COMM_NULL or MPI
 * cannot tell its rank or size (MPI not initialized, a bad handle: MPI's
 * error handler runs first). */
static inline int PIO_Init_comm(const char *app_name, MPI_Comm comm)
{
    int rank = -1, size = 0;
    if (comm == MPI_COMM_NULL || MPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
        MPI_Comm_size(comm, &size) != MPI_SUCCESS || rank < 0 || size < 1)
        return PIO_EINVAL;
    return PIO_Init(app_name, rank, size);
}

#endif
