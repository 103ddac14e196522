/* pio_f.c - the C half of the Fortran binding: the calls that take a buffer.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Module pio (pio.f90) takes every buffer as TYPE(*), DIMENSION(..), which
 * gfortran hands to C as a descriptor (ISO_Fortran_binding.h, CFI_cdesc_t).
 * The specifics of the generics that take a buffer (PIO_Send, PIO_Recv,
 * PIO_Isend, PIO_Irecv, PIO_File_write_at, PIO_File_write_slab,
 * PIO_Feed_put, PIO_Win_create, PIO_Get, PIO_Put, PIO_Iget, PIO_Iput,
 * PIO_Rfile_pread) are
 * the C functions here, bound directly: a Fortran procedure in between
 * would have to receive the descriptor itself, and gfortran 12 mishandles
 * that (a non-BIND(C) one loses a CHARACTER argument's length; a BIND(C)
 * one reads past a scalar's descriptor, which AddressSanitizer reports).
 *
 * f_buffer is the one place that reads a descriptor: the address, the
 * number of elements, the element size and the Fortran type. It checks that
 * count items of a PIO datatype fit in the buffer and that the buffer's
 * Fortran type can hold that datatype, so a wrong count or kind is a clear
 * PIO_EINVAL instead of a read past the end of an array. A strided section
 * (a(2, :)) is packed into a copy for a blocking call and, for a receive
 * a get or a remote read, scattered back afterwards, as a compiler's copy-in/copy-out would do (a
 * CONTIGUOUS dummy would ask the compiler for that, but gfortran 12 crashes
 * when an assumed-rank argument is passed on to one). Then the pio.h call;
 * then ierr, or without it pio_f_stop (Fortran) ends the program: this file
 * never exits by itself. The other calls of the binding are Fortran, but
 * for pio_f_comm_info (PIO_Init_comm), which reaches the Fortran MPI
 * library through weak references so that libpiof.a needs no MPI.
 *
 * Thread-safe: no state.
 */
#include "pio_f.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* flags of f_buffer */
#define PIO_F_CONTIGUOUS 1 /* refuse a strided buffer (non-blocking calls use it later) */
#define PIO_F_EXACT      2 /* the buffer must hold exactly count items (slabs) */
#define PIO_F_WINDOW     4 /* refuse a strided buffer: it becomes a window's memory */

struct f_datatype {
    const char *name;
    size_t bytes;
};

#define F_DATATYPE_(name, code, bytes) [code] = {#name, bytes},
static const struct f_datatype f_datatypes[] = {PIO_DATATYPES(F_DATATYPE_)};
#undef F_DATATYPE_
#define F_NDATATYPES ((int)(sizeof f_datatypes / sizeof f_datatypes[0]))

/* The Fortran category (CFI_type_Integer, ...) that holds datatype t, or 0
 * for PIO_BYTE (anything). CHAR, CHARACTER, INT8 and UINT8 are one byte and
 * also fit CHARACTER or INTEGER(1); the others need their category and size. */
static int f_category(int t)
{
    switch (t) {
    case PIO_BYTE: return 0;
    case PIO_CHAR:
    case PIO_CHARACTER: return CFI_type_Character;
    case PIO_FLOAT:
    case PIO_DOUBLE:
    case PIO_REAL:
    case PIO_DOUBLE_PRECISION: return CFI_type_Real;
    case PIO_COMPLEX:
    case PIO_DOUBLE_COMPLEX: return CFI_type_Complex;
    case PIO_LOGICAL: return CFI_type_Logical;
    default: return CFI_type_Integer;
    }
}

/* "REAL(8)", "CHARACTER(LEN=5)", "derived type", ... for messages. */
static void f_describe(const CFI_cdesc_t *d, char *out, size_t len)
{
    int cat = d->type & CFI_type_mask;
    size_t k = d->elem_len;
    switch (d->type < 0 ? -1 : cat) {
    case CFI_type_Integer: snprintf(out, len, "INTEGER(%zu)", k); break;
    case CFI_type_Logical: snprintf(out, len, "LOGICAL(%zu)", k); break;
    case CFI_type_Real: snprintf(out, len, "REAL(%zu)", k); break;
    case CFI_type_Complex: snprintf(out, len, "COMPLEX(%zu)", k / 2); break;
    case CFI_type_Character: snprintf(out, len, "CHARACTER(LEN=%zu)", k); break;
    default: snprintf(out, len, "%zu-byte", k); break;
    }
}

/* 1 when a buffer of Fortran type d may hold items of datatype t. Buffers of
 * a derived type, TYPE(C_PTR) or an unknown type are taken by size only. */
static int f_fits(const CFI_cdesc_t *d, int t)
{
    int cat = d->type & CFI_type_mask, want = f_category(t);
    if (want == 0 || d->type < 0 || cat < CFI_type_Integer || cat > CFI_type_Character)
        return 1;
    if (f_datatypes[t].bytes == 1)
        return (cat == CFI_type_Character && d->type == CFI_type_char) ||
               (cat == CFI_type_Integer && d->elem_len == 1);
    return cat == want && d->elem_len == f_datatypes[t].bytes;
}

/* Elements described by d (1 for a scalar), or -1 for an assumed-size array. */
static int64_t f_elements(const CFI_cdesc_t *d)
{
    int64_t n = 1;
    for (int i = 0; i < d->rank; i++) {
        if (d->dim[i].extent < 0)
            return -1;
        n *= d->dim[i].extent;
    }
    return n;
}

static int f_contiguous(const CFI_cdesc_t *d)
{
    CFI_index_t want = (CFI_index_t)d->elem_len;
    if (f_elements(d) == 0)
        return 1;
    for (int i = 0; i < d->rank; i++) {
        if (d->dim[i].extent > 1 && d->dim[i].sm != want)
            return 0;
        want *= d->dim[i].extent;
    }
    return 1;
}

/* f_copy - gather the elements of a strided buffer into packed (to_packed),
 * or scatter packed back into it. Strides may be negative (a(n:1:-1)). */
static void f_copy(const CFI_cdesc_t *d, unsigned char *packed, int to_packed)
{
    CFI_index_t idx[CFI_MAX_RANK] = {0};
    int64_t n = f_elements(d);
    size_t len = d->elem_len;
    for (int64_t e = 0; e < n; e++) {
        CFI_index_t off = 0;
        for (int i = 0; i < d->rank; i++)
            off += idx[i] * d->dim[i].sm;
        unsigned char *p = (unsigned char *)d->base_addr + off;
        if (to_packed)
            memcpy(packed + (size_t)e * len, p, len);
        else
            memcpy(p, packed + (size_t)e * len, len);
        for (int i = 0; i < d->rank && ++idx[i] == d->dim[i].extent; i++)
            idx[i] = 0;
    }
}

/* f_buffer - check a Fortran buffer for count items of datatype, and give
 * C memory for it.
 * buf [in]: the descriptor gfortran passes for TYPE(*), DIMENSION(..).
 * flags [in]: PIO_F_CONTIGUOUS or PIO_F_WINDOW (refuse a strided buffer,
 *   saying why for a non-blocking call or a window), PIO_F_EXACT.
 * addr [out]: the buffer itself when it is contiguous; else a packed copy of
 *   its elements, owned by the caller, who must hand it to f_release.
 * bytes [out]: the buffer's size in bytes.
 * why [out]: on failure, one line saying which check failed (NUL-terminated,
 *   at most whylen bytes); untouched on success.
 * Returns PIO_OK, PIO_EINVAL, or PIO_ENOMEM (no room for the copy); on
 * failure *addr is NULL and nothing is to be released. */
static int f_buffer(const CFI_cdesc_t *buf, int datatype, int64_t count, int flags, void **addr,
                    int64_t *bytes, char *why, size_t whylen)
{
    char what[48];
    int64_t n = f_elements(buf);
    f_describe(buf, what, sizeof what);
    *addr = NULL;
    *bytes = n < 0 ? -1 : n * (int64_t)buf->elem_len;
    if (datatype <= 0 || datatype >= F_NDATATYPES || f_datatypes[datatype].bytes == 0) {
        snprintf(why, whylen, "datatype %d is not a PIO datatype", datatype);
        return PIO_EINVAL;
    }
    const struct f_datatype *t = &f_datatypes[datatype];
    if (count < 0) {
        snprintf(why, whylen, "count %" PRId64 " is negative", count);
        return PIO_EINVAL;
    }
    if (n < 0) {
        snprintf(why, whylen, "an assumed-size array has no known size: pass a section a(1:n)");
        return PIO_EINVAL;
    }
    if (!f_fits(buf, datatype)) {
        snprintf(why, whylen,
                 "%s does not fit a buffer of %s elements: use the PIO type of the "
                 "buffer's kind, or PIO_BYTE",
                 t->name, what);
        return PIO_EINVAL;
    }
    if (count > INT64_MAX / (int64_t)t->bytes || count * (int64_t)t->bytes > *bytes) {
        snprintf(why, whylen,
                 "count %" PRId64 " of %s is more than the buffer holds (%" PRId64
                 " %s elements, %" PRId64 " bytes)",
                 count, t->name, n, what, *bytes);
        return PIO_EINVAL;
    }
    if ((flags & PIO_F_EXACT) && count * (int64_t)t->bytes != *bytes) {
        snprintf(why, whylen,
                 "the buffer holds %" PRId64 " bytes, %" PRId64 " items of %s are %" PRId64, *bytes,
                 count, t->name, count * (int64_t)t->bytes);
        return PIO_EINVAL;
    }
    if (f_contiguous(buf)) {
        *addr = buf->base_addr;
        return PIO_OK;
    }
    if (flags & PIO_F_WINDOW) {
        snprintf(why, whylen,
                 "the window's memory is not contiguous: a window needs contiguous "
                 "memory (an array, or a section without strides), which other processes "
                 "read and write until PIO_Win_free");
        return PIO_EINVAL;
    }
    if (flags & PIO_F_CONTIGUOUS) {
        snprintf(why, whylen,
                 "the buffer is not contiguous: a non-blocking call needs contiguous "
                 "memory (an array, or a section without strides), which it uses until "
                 "PIO_Wait or PIO_Test completes it");
        return PIO_EINVAL;
    }
    /* A strided section: a packed copy, as the compiler's copy-in would make. */
    unsigned char *copy = malloc((size_t)*bytes);
    if (!copy) {
        snprintf(why, whylen, "no memory for a packed copy of a %" PRId64 "-byte section", *bytes);
        return PIO_ENOMEM;
    }
    f_copy(buf, copy, 1);
    *addr = copy;
    return PIO_OK;
}

/* f_release - after the C call: when addr is a packed copy made by
 * f_buffer, scatter it back into buf if copy_out (receives), and free it.
 * Nothing to do for a contiguous buffer or a NULL addr. */
static void f_release(const CFI_cdesc_t *buf, void *addr, int copy_out)
{
    if (!addr || addr == buf->base_addr)
        return;
    if (copy_out)
        f_copy(buf, addr, 0);
    free(addr);
}

/* f_done - hand rc to ierr, or stop the program on failure without ierr.
 * why: the binding's own reason when it refused the call ("" when libpio
 * answered). file: a PIO_File_* or PIO_Rfile_* call: one refused here clears
 * PIO_File_error_text (an earlier call's remote text would be wrong), by a
 * PIO_File_* call that fails locally. */
static void f_done(int rc, int *ierr, const char *call, const char *why, int file)
{
    if (file && rc != PIO_OK && why[0] != '\0')
        (void)PIO_File_close(NULL);
    if (ierr)
        *ierr = rc;
    else if (rc != PIO_OK)
        pio_f_stop(rc, call, why, file);
}

#define WHY_LEN 256

void pio_f_send_c8(int partner, int process_ID, int tag, int connection, const CFI_cdesc_t *buf,
                   int datatype, int64_t count, int mode, int *ierr)
{
    char why[WHY_LEN] = "";
    void *addr;
    int64_t bytes;
    int rc = f_buffer(buf, datatype, count, 0, &addr, &bytes, why, sizeof why);
    if (rc == PIO_OK) {
        rc = PIO_Send(partner, process_ID, tag, connection, addr, datatype, (size_t)count, mode);
        f_release(buf, addr, 0);
    }
    f_done(rc, ierr, "PIO_Send", why, 0);
}

void pio_f_send_c4(int partner, int process_ID, int tag, int connection, const CFI_cdesc_t *buf,
                   int datatype, int count, int mode, int *ierr)
{
    pio_f_send_c8(partner, process_ID, tag, connection, buf, datatype, count, mode, ierr);
}

void pio_f_recv_c8(int partner, int process_ID, int tag, CFI_cdesc_t *buf, int datatype,
                   int64_t count, int timeout, int mode, PIO_Status *status, int *ierr)
{
    char why[WHY_LEN] = "";
    void *addr;
    int64_t bytes;
    int rc = f_buffer(buf, datatype, count, 0, &addr, &bytes, why, sizeof why);
    if (rc == PIO_OK) {
        rc = PIO_Recv(partner, process_ID, tag, addr, datatype, (size_t)count, timeout, mode,
                      status);
        f_release(buf, addr, 1);
    }
    f_done(rc, ierr, "PIO_Recv", why, 0);
}

void pio_f_recv_c4(int partner, int process_ID, int tag, CFI_cdesc_t *buf, int datatype, int count,
                   int timeout, int mode, PIO_Status *status, int *ierr)
{
    pio_f_recv_c8(partner, process_ID, tag, buf, datatype, count, timeout, mode, status, ierr);
}

void pio_f_isend_c8(int partner, int process_ID, int tag, int connection, const CFI_cdesc_t *buf,
                    int datatype, int64_t count, int mode, PIO_Request *req, int *ierr)
{
    char why[WHY_LEN] = "";
    void *addr;
    int64_t bytes;
    *req = NULL;
    int rc = f_buffer(buf, datatype, count, PIO_F_CONTIGUOUS, &addr, &bytes, why, sizeof why);
    if (rc == PIO_OK)
        rc = PIO_Isend(partner, process_ID, tag, connection, addr, datatype, (size_t)count, mode,
                       req);
    f_done(rc, ierr, "PIO_Isend", why, 0);
}

void pio_f_isend_c4(int partner, int process_ID, int tag, int connection, const CFI_cdesc_t *buf,
                    int datatype, int count, int mode, PIO_Request *req, int *ierr)
{
    pio_f_isend_c8(partner, process_ID, tag, connection, buf, datatype, count, mode, req, ierr);
}

void pio_f_irecv_c8(int partner, int process_ID, int tag, CFI_cdesc_t *buf, int datatype,
                    int64_t count, int mode, PIO_Request *req, int *ierr)
{
    char why[WHY_LEN] = "";
    void *addr;
    int64_t bytes;
    *req = NULL;
    int rc = f_buffer(buf, datatype, count, PIO_F_CONTIGUOUS, &addr, &bytes, why, sizeof why);
    if (rc == PIO_OK)
        rc = PIO_Irecv(partner, process_ID, tag, addr, datatype, (size_t)count, mode, req);
    f_done(rc, ierr, "PIO_Irecv", why, 0);
}

void pio_f_irecv_c4(int partner, int process_ID, int tag, CFI_cdesc_t *buf, int datatype, int count,
                    int mode, PIO_Request *req, int *ierr)
{
    pio_f_irecv_c8(partner, process_ID, tag, buf, datatype, count, mode, req, ierr);
}

/* PIO_File_write_at: all of buf, at a byte offset from 0 */
void pio_f_file_write_at_c8(const struct pio_f_file *fh, int64_t offset, const CFI_cdesc_t *buf,
                            int *ierr)
{
    char why[WHY_LEN] = "";
    void *addr;
    int64_t bytes;
    int rc = f_buffer(buf, PIO_BYTE, 0, 0, &addr, &bytes, why, sizeof why);
    if (rc == PIO_OK && offset < 0) {
        rc = PIO_EINVAL;
        snprintf(why, sizeof why, "the offset %" PRId64 " is negative", offset);
    }
    if (rc == PIO_OK)
        rc = PIO_File_write_at(fh->fh, (uint64_t)offset, addr, (size_t)bytes);
    f_release(buf, addr, 0);
    f_done(rc, ierr, "PIO_File_write_at", why, 1);
}

void pio_f_file_write_at_c4(const struct pio_f_file *fh, int offset, const CFI_cdesc_t *buf,
                            int *ierr)
{
    pio_f_file_write_at_c8(fh, offset, buf, ierr);
}

/* Entry i (from 0) of a rank-1 INTEGER or INTEGER(8) array. */
static int64_t f_index(const CFI_cdesc_t *a, CFI_index_t i)
{
    const char *p = (const char *)a->base_addr + i * a->dim[0].sm;
    if (a->elem_len == 4) {
        int32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    int64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* f_coords - n coordinates from Fortran: start and count are rank-1 INTEGER
 * or INTEGER(8) arrays of n entries, starts from 1. cstart, ccount [out]:
 * from 0, in the same order, or reversed when reverse (HDF5's C order).
 * elems [out]: the product of the counts (-1 when it overflows). what [in]:
 * the end of the message when the arrays do not have n entries. Returns
 * PIO_OK, or PIO_EINVAL with why. */
static int f_coords(const CFI_cdesc_t *start, const CFI_cdesc_t *count, int n, int reverse,
                    const char *what, uint64_t *cstart, uint64_t *ccount, int64_t *elems, char *why,
                    size_t whylen)
{
    if (start->rank != 1 || count->rank != 1 || start->dim[0].extent != n ||
        count->dim[0].extent != n) {
        snprintf(why, whylen, "start and count need %d entries, %s", n, what);
        return PIO_EINVAL;
    }
    *elems = 1;
    for (int i = 0; i < n; i++) {
        int64_t s = f_index(start, i), c = f_index(count, i);
        if (s < 1 || c < 0) {
            snprintf(why, whylen,
                     "start(%d) is %" PRId64 ", count(%d) is %" PRId64
                     ": starts count from 1, counts from 0",
                     i + 1, s, i + 1, c);
            return PIO_EINVAL;
        }
        int to = reverse ? n - 1 - i : i;
        cstart[to] = (uint64_t)(s - 1);
        ccount[to] = (uint64_t)c;
        *elems = *elems < 0 || (c > 0 && *elems > INT64_MAX / c) ? -1 : *elems * c;
    }
    return PIO_OK;
}

/* PIO_File_write_slab: start and count in Fortran order, starts from 1;
 * pio.h wants C order from 0. buf holds exactly the slab. */
static void f_write_slab(const struct pio_f_file *fh, const CFI_cdesc_t *start,
                         const CFI_cdesc_t *count, const CFI_cdesc_t *buf, int *ierr)
{
    char why[WHY_LEN] = "";
    void *addr = NULL;
    int64_t bytes, elems;
    uint64_t cstart[PIO_FILE_MAXDIMS], ccount[PIO_FILE_MAXDIMS];
    int nd = fh->ndims, rc = PIO_EINVAL;
    if (fh->mode != PIO_FILE_HDF5)
        snprintf(why, sizeof why, "not an HDF5-mode file: use PIO_File_write_at");
    else if (nd <= PIO_FILE_MAXDIMS)
        rc = f_coords(start, count, nd, 1, "one per dimension of the dataset", cstart, ccount,
                      &elems, why, sizeof why);
    if (rc == PIO_OK)
        rc = f_buffer(buf, fh->eltype, elems, PIO_F_EXACT, &addr, &bytes, why, sizeof why);
    if (rc == PIO_OK)
        rc = PIO_File_write_slab(fh->fh, cstart, ccount, addr);
    f_release(buf, addr, 0);
    f_done(rc, ierr, "PIO_File_write_slab", why, 1);
}

void pio_f_file_write_slab_c8(const struct pio_f_file *fh, const CFI_cdesc_t *start,
                              const CFI_cdesc_t *count, const CFI_cdesc_t *buf, int *ierr)
{
    f_write_slab(fh, start, count, buf, ierr);
}

void pio_f_file_write_slab_c4(const struct pio_f_file *fh, const CFI_cdesc_t *start,
                              const CFI_cdesc_t *count, const CFI_cdesc_t *buf, int *ierr)
{
    f_write_slab(fh, start, count, buf, ierr);
}

/* f_feed_field - is the feed open and fidx (from 1) one of its fields?
 * Else says why and returns 0. */
static int f_feed_field(const struct pio_f_feed *fd, int fidx, char *why, size_t whylen)
{
    if (!fd->feed)
        snprintf(why, whylen, "the feed is not open (PIO_Feed_open)");
    else if (fidx < 1 || fidx > fd->nfields)
        snprintf(why, whylen, "fidx %d is not a field of the feed: fields are 1 .. %d", fidx,
                 fd->nfields);
    else
        return 1;
    return 0;
}

/* f_section3 - is buf a rank-3 section that is a block of a larger array
 * (unit stride along x, whole rows and planes apart), with the extents of
 * the block count[]? Then mdims [out] is that array's shape as seen from
 * the section's first element, and 1 is returned; else 0 (contiguous
 * arrays too: they need no help). */
static int f_section3(const CFI_cdesc_t *buf, const uint64_t count[3], uint64_t mdims[3])
{
    if (buf->rank != 3 || f_contiguous(buf) || buf->elem_len == 0)
        return 0;
    const CFI_dim_t *d = buf->dim;
    size_t e = buf->elem_len;
    for (int i = 0; i < 3; i++)
        if (d[i].extent < 1 || (uint64_t)d[i].extent != count[i] || d[i].sm <= 0)
            return 0;
    if ((size_t)d[0].sm != e || d[1].sm % (CFI_index_t)e != 0 || d[2].sm % d[1].sm != 0)
        return 0;
    mdims[0] = (uint64_t)(d[1].sm / (CFI_index_t)e);
    mdims[1] = (uint64_t)(d[2].sm / d[1].sm);
    mdims[2] = count[2];
    return mdims[0] >= count[0] && mdims[1] >= count[1];
}

/* PIO_Feed_put: field fidx from 1; the block start(i) .. start(i) + count(i)
 * - 1 along x, y, z (i = 1, 2, 3: Fortran's own index order, so no
 * reversal), starts from 1; data holds exactly the block, of the field's
 * type and kind. */
static void f_feed_put(const struct pio_f_feed *fd, int fidx, const CFI_cdesc_t *start,
                       const CFI_cdesc_t *count, const CFI_cdesc_t *data, int *ierr)
{
    static const char axis[3] = {'x', 'y', 'z'};
    char why[WHY_LEN] = "";
    void *addr = NULL;
    int64_t bytes, elems;
    uint64_t cstart[3], ccount[3];
    int rc = PIO_EINVAL;
    if (f_feed_field(fd, fidx, why, sizeof why))
        rc = f_coords(start, count, 3, 0, "along x, y, z", cstart, ccount, &elems, why, sizeof why);
    for (int i = 0; i < 3 && rc == PIO_OK; i++) {
        rc = PIO_EINVAL;
        if (ccount[i] == 0)
            snprintf(why, sizeof why, "count(%d) is 0: a block has points along x, y and z", i + 1);
        else if (cstart[i] + ccount[i] > (uint64_t)fd->dims[i])
            snprintf(why, sizeof why,
                     "the block's %c, %" PRIu64 " .. %" PRIu64
                     ", is not inside the grid's 1 .. %" PRId64,
                     axis[i], cstart[i] + 1, cstart[i] + ccount[i], fd->dims[i]);
        else
            rc = PIO_OK;
    }
    if (rc == PIO_OK && !f_fits(data, fd->types[fidx - 1])) {
        /* f_buffer would say it too, but advise another datatype */
        int t = fd->types[fidx - 1];
        char what[48];
        f_describe(data, what, sizeof what);
        rc = PIO_EINVAL;
        snprintf(why, sizeof why,
                 "field %d is %s(%zu) (%s): a buffer of %s elements does not fit it", fidx,
                 t == PIO_INT32 ? "INTEGER" : "REAL", f_datatypes[t].bytes, f_datatypes[t].name,
                 what);
    }
    uint64_t mdims[3];
    if (rc == PIO_OK && f_section3(data, ccount, mdims)) {
        /* t(1:nx, 1:ny, 1:nz) of an array with ghost layers: no copy-in,
         * libpio copies the rows straight into the pool */
        const uint64_t zero[3] = {0, 0, 0};
        rc = PIO_Feed_put_sub(fd->feed, fidx - 1, cstart, ccount, data->base_addr, mdims, zero);
        f_done(rc, ierr, "PIO_Feed_put", why, 0);
        return;
    }
    if (rc == PIO_OK)
        rc =
            f_buffer(data, fd->types[fidx - 1], elems, PIO_F_EXACT, &addr, &bytes, why, sizeof why);
    if (rc == PIO_OK)
        rc = PIO_Feed_put(fd->feed, fidx - 1, cstart, ccount, addr);
    f_release(data, addr, 0);
    f_done(rc, ierr, "PIO_Feed_put", why, 0);
}

/* PIO_Feed_put_sub: data is the whole local array (rank 3, contiguous, any
 * bounds); the block of count() points starts at mem_off() in it (from 1,
 * e.g. [2, 2, 2] inside one ghost layer). */
static void f_feed_put_sub(const struct pio_f_feed *fd, int fidx, const CFI_cdesc_t *start,
                           const CFI_cdesc_t *count, const CFI_cdesc_t *data,
                           const CFI_cdesc_t *mem_off, int *ierr)
{
    char why[WHY_LEN] = "";
    uint64_t cstart[3], ccount[3], moff[3], mdims[3];
    int64_t elems;
    int rc = PIO_EINVAL;
    if (!f_feed_field(fd, fidx, why, sizeof why))
        rc = PIO_EINVAL;
    else if (data->rank != 3 || !f_contiguous(data))
        snprintf(why, sizeof why,
                 "data must be the whole local array (rank 3, contiguous) the block lies in");
    else if (!f_fits(data, fd->types[fidx - 1]))
        snprintf(why, sizeof why, "field %d's type does not fit data's elements", fidx);
    else if ((rc = f_coords(start, count, 3, 0, "along x, y, z", cstart, ccount, &elems, why,
                            sizeof why)) == PIO_OK &&
             (rc = f_coords(mem_off, count, 3, 0, "along x, y, z (mem_off)", moff, ccount, &elems,
                            why, sizeof why)) == PIO_OK) {
        for (int i = 0; i < 3; i++)
            mdims[i] = (uint64_t)data->dim[i].extent;
        rc = PIO_Feed_put_sub(fd->feed, fidx - 1, cstart, ccount, data->base_addr, mdims, moff);
        if (rc == PIO_EINVAL)
            snprintf(why, sizeof why,
                     "the block (start, count) is not inside the grid, or (mem_off, count) not "
                     "inside data");
    }
    f_done(rc, ierr, "PIO_Feed_put_sub", why, 0);
}

void pio_f_feed_put_sub_c4(const struct pio_f_feed *feed, int fidx, const CFI_cdesc_t *start,
                           const CFI_cdesc_t *count, const CFI_cdesc_t *data,
                           const CFI_cdesc_t *mem_off, int *ierr)
{
    f_feed_put_sub(feed, fidx, start, count, data, mem_off, ierr);
}

void pio_f_feed_put_sub_c8(const struct pio_f_feed *feed, int fidx, const CFI_cdesc_t *start,
                           const CFI_cdesc_t *count, const CFI_cdesc_t *data,
                           const CFI_cdesc_t *mem_off, int *ierr)
{
    f_feed_put_sub(feed, fidx, start, count, data, mem_off, ierr);
}

void pio_f_feed_put_c8(const struct pio_f_feed *feed, int fidx, const CFI_cdesc_t *start,
                       const CFI_cdesc_t *count, const CFI_cdesc_t *data, int *ierr)
{
    f_feed_put(feed, fidx, start, count, data, ierr);
}

void pio_f_feed_put_c4(const struct pio_f_feed *feed, int fidx, const CFI_cdesc_t *start,
                       const CFI_cdesc_t *count, const CFI_cdesc_t *data, int *ierr)
{
    f_feed_put(feed, fidx, start, count, data, ierr);
}

/* ---- one-sided access ---- */

/* PIO_Win_create: all of base (contiguous: libpio and the other processes
 * use it until PIO_Win_free); a zero-size array makes an empty window. */
void pio_f_win_create(const CFI_cdesc_t *base, PIO_Win *win, int *ierr, const int *access)
{
    char why[WHY_LEN] = "";
    void *addr;
    int64_t bytes;
    *win = NULL;
    int rc = f_buffer(base, PIO_BYTE, 0, PIO_F_WINDOW, &addr, &bytes, why, sizeof why);
    if (rc == PIO_OK)
        rc = PIO_Win_create(bytes > 0 ? addr : NULL, (size_t)bytes, access ? *access : PIO_WIN_APP,
                            win);
    f_done(rc, ierr, "PIO_Win_create", why, 0);
}

/* f_rma - PIO_Get (put 0) and PIO_Put (put 1) of all of buf at byte disp
 * of win's counterpart in process_ID of partner; with req, their
 * non-blocking forms (contiguous buf only). A get into a strided section
 * lands in a packed copy, scattered back when it succeeded. */
static void f_rma(const PIO_Win *win, int partner, int process_ID, int64_t disp,
                  const CFI_cdesc_t *buf, int put, PIO_Request *req, int *ierr)
{
    static const char *const names[2][2] = {{"PIO_Get", "PIO_Put"}, {"PIO_Iget", "PIO_Iput"}};
    char why[WHY_LEN] = "";
    void *addr = NULL;
    int64_t bytes;
    int rc = PIO_EINVAL;
    if (req)
        *req = NULL;
    if (!*win)
        snprintf(why, sizeof why, "the window is null: not created (PIO_Win_create), or freed");
    else if (disp < 0)
        snprintf(why, sizeof why, "disp %" PRId64 " is negative: it counts bytes from 0", disp);
    else
        rc = f_buffer(buf, PIO_BYTE, 0, req ? PIO_F_CONTIGUOUS : 0, &addr, &bytes, why, sizeof why);
    if (rc == PIO_OK) {
        if (req && put)
            rc = PIO_Iput(*win, partner, process_ID, (uint64_t)disp, addr, (size_t)bytes, req);
        else if (req)
            rc = PIO_Iget(*win, partner, process_ID, (uint64_t)disp, addr, (size_t)bytes, req);
        else if (put)
            rc = PIO_Put(*win, partner, process_ID, (uint64_t)disp, addr, (size_t)bytes);
        else
            rc = PIO_Get(*win, partner, process_ID, (uint64_t)disp, addr, (size_t)bytes);
    }
    f_release(buf, addr, !put && rc == PIO_OK);
    f_done(rc, ierr, names[req != NULL][put], why, 0);
}

void pio_f_get_c8(const PIO_Win *win, int partner, int process_ID, int64_t disp, CFI_cdesc_t *buf,
                  int *ierr)
{
    f_rma(win, partner, process_ID, disp, buf, 0, NULL, ierr);
}

void pio_f_get_c4(const PIO_Win *win, int partner, int process_ID, int disp, CFI_cdesc_t *buf,
                  int *ierr)
{
    f_rma(win, partner, process_ID, disp, buf, 0, NULL, ierr);
}

void pio_f_put_c8(const PIO_Win *win, int partner, int process_ID, int64_t disp,
                  const CFI_cdesc_t *buf, int *ierr)
{
    f_rma(win, partner, process_ID, disp, buf, 1, NULL, ierr);
}

void pio_f_put_c4(const PIO_Win *win, int partner, int process_ID, int disp, const CFI_cdesc_t *buf,
                  int *ierr)
{
    f_rma(win, partner, process_ID, disp, buf, 1, NULL, ierr);
}

void pio_f_iget_c8(const PIO_Win *win, int partner, int process_ID, int64_t disp, CFI_cdesc_t *buf,
                   PIO_Request *req, int *ierr)
{
    f_rma(win, partner, process_ID, disp, buf, 0, req, ierr);
}

void pio_f_iget_c4(const PIO_Win *win, int partner, int process_ID, int disp, CFI_cdesc_t *buf,
                   PIO_Request *req, int *ierr)
{
    f_rma(win, partner, process_ID, disp, buf, 0, req, ierr);
}

void pio_f_iput_c8(const PIO_Win *win, int partner, int process_ID, int64_t disp,
                   const CFI_cdesc_t *buf, PIO_Request *req, int *ierr)
{
    f_rma(win, partner, process_ID, disp, buf, 1, req, ierr);
}

void pio_f_iput_c4(const PIO_Win *win, int partner, int process_ID, int disp,
                   const CFI_cdesc_t *buf, PIO_Request *req, int *ierr)
{
    f_rma(win, partner, process_ID, disp, buf, 1, req, ierr);
}

/* ---- remote file access ---- */

/* PIO_Rfile_pread: up to all of buf (its size in bytes) at byte offset of
 * the remote file; *got [out]: the bytes read (fewer only at the end of the
 * file; on a failure, those that arrived before it). A strided section is
 * read into a packed copy, scattered back when bytes arrived (the copy
 * holds buf's own values past them). */
static void f_rfile_pread(const PIO_Rfile *rf, CFI_cdesc_t *buf, int64_t offset, int64_t *got,
                          int *ierr)
{
    char why[WHY_LEN] = "";
    void *addr = NULL;
    int64_t bytes;
    size_t n = 0;
    int rc = PIO_EINVAL;
    if (!*rf)
        snprintf(why, sizeof why, "the file is null: not opened (PIO_Rfile_open), or closed");
    else if (offset < 0)
        snprintf(why, sizeof why, "offset %" PRId64 " is negative: it counts bytes from 0", offset);
    else
        rc = f_buffer(buf, PIO_BYTE, 0, 0, &addr, &bytes, why, sizeof why);
    if (rc == PIO_OK)
        rc = PIO_Rfile_pread(*rf, addr, (size_t)bytes, (uint64_t)offset, &n);
    f_release(buf, addr, n > 0);
    *got = (int64_t)n;
    f_done(rc, ierr, "PIO_Rfile_pread", why, 1);
}

void pio_f_rfile_pread_c8(const PIO_Rfile *rf, CFI_cdesc_t *buf, int64_t offset, int64_t *got,
                          int *ierr)
{
    f_rfile_pread(rf, buf, offset, got, ierr);
}

void pio_f_rfile_pread_c4(const PIO_Rfile *rf, CFI_cdesc_t *buf, int offset, int64_t *got,
                          int *ierr)
{
    f_rfile_pread(rf, buf, offset, got, ierr);
}

/* PIO_Rfile_readlist: n ranges (counts[i] bytes at offsets[i]) into buf one
 * after the other; gots[i] [out]. */
void pio_f_rfile_readlist(const PIO_Rfile *rf, CFI_cdesc_t *buf, int n, const int64_t *offsets,
                          const int64_t *counts, int64_t *gots, int *ierr)
{
    char why[WHY_LEN] = "";
    void *addr = NULL;
    int64_t bytes = 0, sum = 0;
    int rc = PIO_EINVAL;
    PIO_Rfile_range *l = NULL;
    for (int i = 0; i < n; i++) {
        gots[i] = 0;
        if (offsets[i] < 0 || counts[i] < 0) {
            snprintf(why, sizeof why,
                     "range %d: offset %" PRId64 ", count %" PRId64 ": both count bytes from 0",
                     i + 1, offsets[i], counts[i]);
            break;
        }
        sum += counts[i];
    }
    if (why[0]) {
        /* a bad range, said above */
    } else if (!*rf)
        snprintf(why, sizeof why, "the file is null: not opened (PIO_Rfile_open), or closed");
    else if (n < 0)
        snprintf(why, sizeof why, "n = %d ranges: it must be 0 or more", n);
    else if ((rc = f_buffer(buf, PIO_BYTE, 0, 0, &addr, &bytes, why, sizeof why)) == PIO_OK &&
             bytes < sum) {
        rc = PIO_EINVAL;
        snprintf(why, sizeof why, "buf holds %" PRId64 " bytes, the ranges %" PRId64, bytes, sum);
    } else if (rc == PIO_OK && !(l = calloc((size_t)n + 1, sizeof(*l)))) {
        rc = PIO_ENOMEM;
    }
    int got_any = 0;
    if (rc == PIO_OK) {
        int64_t at = 0;
        for (int i = 0; i < n; at += counts[i], i++)
            l[i] = (PIO_Rfile_range){(char *)addr + at, (size_t)counts[i], (uint64_t)offsets[i], 0};
        rc = PIO_Rfile_readlist(*rf, l, n);
        for (int i = 0; i < n; i++) {
            gots[i] = (int64_t)l[i].got;
            got_any |= l[i].got > 0;
        }
    }
    f_release(buf, addr, got_any);
    free(l);
    f_done(rc, ierr, "PIO_Rfile_readlist", why, 1);
}

/* ---- PIO_Init_comm: the Fortran MPI library, if the program has one ---- */

/* The Fortran MPI entry points (gfortran's names; Open MPI and MPICH export
 * them): weak, so that they are NULL in a program without MPI. */
extern void mpi_comm_rank_(const int *comm, int *rank, int *ierr) __attribute__((weak));
extern void mpi_comm_size_(const int *comm, int *size, int *ierr) __attribute__((weak));

int pio_f_comm_info(int comm, int *rank, int *size)
{
    int e1 = -1, e2 = -1;
    *rank = -1;
    *size = 0;
    if (!mpi_comm_rank_ || !mpi_comm_size_)
        return PIO_ENOSYS;
    mpi_comm_rank_(&comm, rank, &e1);
    mpi_comm_size_(&comm, size, &e2);
    return e1 == 0 && e2 == 0 && *rank >= 0 && *size > 0 ? PIO_OK : PIO_EINVAL;
}
