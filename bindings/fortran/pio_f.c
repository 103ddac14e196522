/* pio_f.c - the C half of the Fortran binding: what a Fortran buffer is, and does it fit.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Module pio (pio.f90) takes every buffer as TYPE(*), DIMENSION(..), which
 * gfortran hands to C as a descriptor (ISO_Fortran_binding.h, CFI_cdesc_t).
 * This file is the one place that reads such a descriptor: the address, the
 * number of elements, the element size and the Fortran type. pio_f_buffer
 * checks that count items of a PIO datatype fit in the buffer and that the
 * buffer's Fortran type can hold that datatype, so a wrong count or kind is
 * a clear PIO_EINVAL instead of a read past the end of an array. A strided
 * section (a(2, :)) is packed into a copy for the call and, for a receive,
 * scattered back afterwards, as a compiler's copy-in/copy-out would do: the
 * module cannot ask the compiler for that (CONTIGUOUS), because gfortran 12
 * crashes when an assumed-rank argument reaches a CONTIGUOUS assumed-rank
 * dummy. Everything else in the binding is Fortran calling pio.h directly.
 *
 * Thread-safe: no state.
 */
#include "pio.h"

#include <ISO_Fortran_binding.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* flags of pio_f_buffer */
#define PIO_F_CONTIGUOUS 1 /* refuse a strided buffer (non-blocking calls use it later) */
#define PIO_F_EXACT      2 /* the buffer must hold exactly count items (slabs) */

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

/* pio_f_buffer - check a Fortran buffer for count items of datatype, and
 * give C memory for it.
 * buf [in]: the descriptor gfortran passes for TYPE(*), DIMENSION(..).
 * flags [in]: PIO_F_CONTIGUOUS (refuse a strided buffer), PIO_F_EXACT.
 * addr [out]: the buffer itself when it is contiguous; else a packed copy of
 *   its elements, owned by the caller, who must hand it to pio_f_release.
 * bytes [out]: the buffer's size in bytes.
 * why [out]: on failure, one line saying which check failed (NUL-terminated,
 *   at most whylen bytes); untouched on success.
 * Returns PIO_OK, PIO_EINVAL, or PIO_ENOMEM (no room for the copy); on
 * failure *addr is NULL and nothing is to be released. Fortran only. */
int pio_f_buffer(const CFI_cdesc_t *buf, int datatype, int64_t count, int flags, void **addr,
                 int64_t *bytes, char *why, size_t whylen);

int pio_f_buffer(const CFI_cdesc_t *buf, int datatype, int64_t count, int flags, void **addr,
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

/* pio_f_release - after the C call: when addr is a packed copy made by
 * pio_f_buffer, scatter it back into buf if copy_out (receives), and free
 * it. Nothing to do for a contiguous buffer or a NULL addr. Fortran only. */
void pio_f_release(CFI_cdesc_t *buf, void *addr, int copy_out);

void pio_f_release(CFI_cdesc_t *buf, void *addr, int copy_out)
{
    if (!addr || addr == buf->base_addr)
        return;
    if (copy_out)
        f_copy(buf, addr, 0);
    free(addr);
}
