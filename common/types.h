/* types.h - PIO datatypes: codes, sizes, representation classes, byte order.
 * SPDX-License-Identifier: BSD-3-Clause
 * Thread-safe: all of it (constant tables, no state). */
#ifndef PIO_TYPES_H
#define PIO_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* pio_type_size - bytes of one element of datatype code t (pio.h PIO_CHAR,
 * ...), or 0 for an unknown code. */
size_t pio_type_size(int t);

/* pio_type_known - 1 if t is a datatype code, else 0. */
int pio_type_known(int t);

/* pio_type_compatible - 1 when data sent as type `sent` may be received as
 * type `recv`: the same representation (e.g. PIO_INT32 and Fortran
 * PIO_INTEGER, PIO_FLOAT and PIO_REAL), or recv is PIO_BYTE (raw bytes). */
int pio_type_compatible(int sent, int recv);

/* pio_type_swap_unit - the byte-swap unit of t: element size, except complex
 * types whose two halves swap separately (8-byte COMPLEX swaps by 4). 1 means
 * never swapped. */
size_t pio_type_swap_unit(int t);

/* pio_host_bigendian - 1 on a big-endian host. */
int pio_host_bigendian(void);

/* pio_convert - copy n bytes from src to dst (may be the same buffer),
 * swapping every `unit`-byte group when the sender's byte order differs from
 * this host's (sender_big != pio_host_bigendian()). n must be a multiple of
 * unit. Returns 0, or -1 if n is not a multiple of unit. */
int pio_convert(void *dst, const void *src, size_t n, size_t unit, int sender_big);

/* pio_type_name - "PIO_INT32", ... or "?" (static). */
const char *pio_type_name(int t);

#endif
