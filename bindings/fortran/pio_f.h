/* pio_f.h - the C half of the Fortran binding: the calls that take a buffer.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Not installed: only pio.f90 (through BIND(C) interfaces) and the binding's
 * build tool use it. Each function is the body of one specific of a generic
 * of module pio (PIO_Send, ...): _c4 takes a default INTEGER count, offset
 * or slab / block coordinates, _c8 an INTEGER(8) one. Buffers arrive as
 * ISO_Fortran_binding descriptors. ierr [out, may be NULL]: the status; when
 * NULL and the call failed, pio_f_stop (Fortran) ends the program.
 * Thread-safe: as the pio.h calls they make; no state.
 */
#ifndef PIO_F_H
#define PIO_F_H

#include "pio.h"

#include <ISO_Fortran_binding.h>
#include <stdint.h>

/* Fortran's TYPE(PIO_File), BIND(C): the handle, and what the binding
 * checks slabs against (pio.f90 mirrors it; its size is checked there). */
struct pio_f_file {
    PIO_File fh;
    int mode;   /* PIO_FILE_RAW, PIO_FILE_HDF5, or -1 before open */
    int eltype; /* HDF5 mode: the dataset's element type */
    int ndims;  /* HDF5 mode: the dataset's rank */
};

/* Fortran's TYPE(PIO_Feed), BIND(C): the handle, and what the binding
 * checks PIO_Feed_put against (pio.f90 mirrors it; its size is checked there). */
struct pio_f_feed {
    PIO_Feed feed;
    int nfields;                    /* 0 before open */
    int types[PIO_FEED_FIELDS_MAX]; /* the fields' C types: PIO_DOUBLE, PIO_FLOAT, PIO_INT32 */
    int64_t dims[3];                /* the grid's points along x, y, z */
};

/* pio_f_stop - implemented in pio.f90: writes "pio: CALL: words (NAME)[:
 * why][: remote text]" to stderr and ends the program with ERROR STOP rc.
 * call, why [in]: C strings. file: append PIO_File_error_text. Never returns. */
void pio_f_stop(int rc, const char *call, const char *why, int file);

/* pio_f_comm_info - the rank and size of Fortran MPI communicator comm,
 * through the program's Fortran MPI library (mpi_comm_rank_ and
 * mpi_comm_size_, weak references: libpiof needs no MPI to link).
 * rank, size [out]. Returns PIO_OK; PIO_ENOSYS when the program is not
 * linked with a Fortran MPI library; PIO_EINVAL when MPI says no. */
int pio_f_comm_info(int comm, int *rank, int *size);

void pio_f_send_c4(int partner, int process_ID, int tag, int connection, const CFI_cdesc_t *buf,
                   int datatype, int count, int mode, int *ierr);
void pio_f_send_c8(int partner, int process_ID, int tag, int connection, const CFI_cdesc_t *buf,
                   int datatype, int64_t count, int mode, int *ierr);
void pio_f_recv_c4(int partner, int process_ID, int tag, CFI_cdesc_t *buf, int datatype, int count,
                   int timeout, int mode, PIO_Status *status, int *ierr);
void pio_f_recv_c8(int partner, int process_ID, int tag, CFI_cdesc_t *buf, int datatype,
                   int64_t count, int timeout, int mode, PIO_Status *status, int *ierr);
void pio_f_isend_c4(int partner, int process_ID, int tag, int connection, const CFI_cdesc_t *buf,
                    int datatype, int count, int mode, PIO_Request *req, int *ierr);
void pio_f_isend_c8(int partner, int process_ID, int tag, int connection, const CFI_cdesc_t *buf,
                    int datatype, int64_t count, int mode, PIO_Request *req, int *ierr);
void pio_f_irecv_c4(int partner, int process_ID, int tag, CFI_cdesc_t *buf, int datatype, int count,
                    int mode, PIO_Request *req, int *ierr);
void pio_f_irecv_c8(int partner, int process_ID, int tag, CFI_cdesc_t *buf, int datatype,
                    int64_t count, int mode, PIO_Request *req, int *ierr);
void pio_f_file_write_at_c4(const struct pio_f_file *fh, int offset, const CFI_cdesc_t *buf,
                            int *ierr);
void pio_f_file_write_at_c8(const struct pio_f_file *fh, int64_t offset, const CFI_cdesc_t *buf,
                            int *ierr);
/* start, count: rank-1 INTEGER (c4) or INTEGER(8) (c8) arrays, Fortran order, starts from 1 */
void pio_f_file_write_slab_c4(const struct pio_f_file *fh, const CFI_cdesc_t *start,
                              const CFI_cdesc_t *count, const CFI_cdesc_t *buf, int *ierr);
void pio_f_file_write_slab_c8(const struct pio_f_file *fh, const CFI_cdesc_t *start,
                              const CFI_cdesc_t *count, const CFI_cdesc_t *buf, int *ierr);
/* PIO_Feed_put: fidx from 1 (names(fidx) of PIO_Feed_open); start, count:
 * rank-1 INTEGER (c4) or INTEGER(8) (c8) arrays of 3, (x, y, z) = Fortran's
 * (i, j, k), starts from 1. data must hold exactly the block, x fastest. */
void pio_f_feed_put_c4(const struct pio_f_feed *feed, int fidx, const CFI_cdesc_t *start,
                       const CFI_cdesc_t *count, const CFI_cdesc_t *data, int *ierr);
void pio_f_feed_put_c8(const struct pio_f_feed *feed, int fidx, const CFI_cdesc_t *start,
                       const CFI_cdesc_t *count, const CFI_cdesc_t *data, int *ierr);
/* PIO_Feed_put_sub: as above; data is the whole local array (rank 3,
 * contiguous) and the block starts at mem_off (from 1) in it. */
void pio_f_feed_put_sub_c4(const struct pio_f_feed *feed, int fidx, const CFI_cdesc_t *start,
                           const CFI_cdesc_t *count, const CFI_cdesc_t *data,
                           const CFI_cdesc_t *mem_off, int *ierr);
void pio_f_feed_put_sub_c8(const struct pio_f_feed *feed, int fidx, const CFI_cdesc_t *start,
                           const CFI_cdesc_t *count, const CFI_cdesc_t *data,
                           const CFI_cdesc_t *mem_off, int *ierr);

/* One-sided access. win: Fortran's TYPE(PIO_Win), BIND(C), which is the
 * handle itself. disp: a byte offset from 0 (c4: default INTEGER, c8:
 * INTEGER(8); negative is PIO_EINVAL). The length is buf's size in bytes.
 * The window's memory (PIO_Win_create) and the buffer of PIO_Iget /
 * PIO_Iput must be contiguous: libpio uses them after the call returns.
 * The blocking PIO_Get / PIO_Put take any section (packed into a copy). */
void pio_f_win_create(const CFI_cdesc_t *base, PIO_Win *win, int *ierr, const int *access);
void pio_f_get_c4(const PIO_Win *win, int partner, int process_ID, int disp, CFI_cdesc_t *buf,
                  int *ierr);
void pio_f_get_c8(const PIO_Win *win, int partner, int process_ID, int64_t disp, CFI_cdesc_t *buf,
                  int *ierr);
void pio_f_put_c4(const PIO_Win *win, int partner, int process_ID, int disp, const CFI_cdesc_t *buf,
                  int *ierr);
void pio_f_put_c8(const PIO_Win *win, int partner, int process_ID, int64_t disp,
                  const CFI_cdesc_t *buf, int *ierr);
void pio_f_iget_c4(const PIO_Win *win, int partner, int process_ID, int disp, CFI_cdesc_t *buf,
                   PIO_Request *req, int *ierr);
void pio_f_iget_c8(const PIO_Win *win, int partner, int process_ID, int64_t disp, CFI_cdesc_t *buf,
                   PIO_Request *req, int *ierr);
void pio_f_iput_c4(const PIO_Win *win, int partner, int process_ID, int disp,
                   const CFI_cdesc_t *buf, PIO_Request *req, int *ierr);
void pio_f_iput_c8(const PIO_Win *win, int partner, int process_ID, int64_t disp,
                   const CFI_cdesc_t *buf, PIO_Request *req, int *ierr);

/* Remote file access. rf: Fortran's TYPE(PIO_Rfile), BIND(C), which is the
 * handle itself. PIO_Rfile_pread reads up to buf's size in bytes at byte
 * offset (c4: default INTEGER, c8: INTEGER(8); negative is PIO_EINVAL);
 * *got [out]: the bytes read. Any section (a strided one is read into a
 * packed copy, scattered back). */
void pio_f_rfile_pread_c4(const PIO_Rfile *rf, CFI_cdesc_t *buf, int offset, int64_t *got,
                          int *ierr);
void pio_f_rfile_pread_c8(const PIO_Rfile *rf, CFI_cdesc_t *buf, int64_t offset, int64_t *got,
                          int *ierr);

#endif
