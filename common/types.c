/* types.c - PIO datatypes: sizes, names, representation classes and byte-order conversion.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Sizes and names come from PIO_DATATYPES in pio.h; the only table written
 * here maps each code to its representation class (C and Fortran spellings of
 * one representation share a class). Two types are compatible when they share
 * a class, or the receiver takes raw bytes (PIO_BYTE). pio_convert runs on
 * every received chunk, so it is plain loops over 2/4/8-byte words with
 * __builtin_bswap* and fixed-size memcpy (which the compiler turns into
 * unaligned loads and stores), or a plain copy when no swap is needed.
 * Constant tables only: no state, no locks.
 */
#include "types.h"
#include "pio.h"

#include <string.h>

enum types_class {
    TC_NONE = 0, /* not a datatype */
    TC_RAW,
    TC_CHAR,
    TC_INT8,
    TC_UINT8,
    TC_INT16,
    TC_UINT16,
    TC_INT32,
    TC_UINT32,
    TC_INT64,
    TC_UINT64,
    TC_FLOAT,
    TC_DOUBLE,
    TC_COMPLEX,
    TC_DOUBLE_COMPLEX,
    TC_LOGICAL,
};

struct types_info {
    const char *name;
    size_t size;
};

#define TYPES_INFO_(name, code, bytes) [code] = {#name, bytes},
static const struct types_info types_tab[] = {PIO_DATATYPES(TYPES_INFO_)};
#undef TYPES_INFO_

#define TYPES_N (sizeof types_tab / sizeof types_tab[0])

static const unsigned char types_class[TYPES_N] = {
    [PIO_BYTE] = TC_RAW,        [PIO_CHAR] = TC_CHAR,
    [PIO_CHARACTER] = TC_CHAR,  [PIO_INT8] = TC_INT8,
    [PIO_UINT8] = TC_UINT8,     [PIO_INT16] = TC_INT16,
    [PIO_UINT16] = TC_UINT16,   [PIO_INT32] = TC_INT32,
    [PIO_INTEGER] = TC_INT32,   [PIO_UINT32] = TC_UINT32,
    [PIO_INT64] = TC_INT64,     [PIO_UINT64] = TC_UINT64,
    [PIO_FLOAT] = TC_FLOAT,     [PIO_REAL] = TC_FLOAT,
    [PIO_DOUBLE] = TC_DOUBLE,   [PIO_DOUBLE_PRECISION] = TC_DOUBLE,
    [PIO_COMPLEX] = TC_COMPLEX, [PIO_DOUBLE_COMPLEX] = TC_DOUBLE_COMPLEX,
    [PIO_LOGICAL] = TC_LOGICAL,
};

int pio_type_known(int t)
{
    return t > 0 && (size_t)t < TYPES_N && types_tab[t].size > 0 && types_class[t] != TC_NONE;
}

size_t pio_type_size(int t)
{
    return pio_type_known(t) ? types_tab[t].size : 0;
}

const char *pio_type_name(int t)
{
    return pio_type_known(t) ? types_tab[t].name : "?";
}

int pio_type_compatible(int sent, int recv)
{
    if (!pio_type_known(sent) || !pio_type_known(recv))
        return 0;
    return recv == PIO_BYTE || types_class[sent] == types_class[recv];
}

size_t pio_type_swap_unit(int t)
{
    if (!pio_type_known(t))
        return 0;
    switch (types_class[t]) {
    case TC_RAW: return 1;
    case TC_COMPLEX: return 4;
    case TC_DOUBLE_COMPLEX: return 8;
    default: return types_tab[t].size;
    }
}

int pio_host_bigendian(void)
{
#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__)
    return __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;
#else
    const union {
        uint16_t u;
        unsigned char c[2];
    } probe = {.u = 1};
    return probe.c[0] == 0;
#endif
}

/* 16-bit swaps four at a time (adjacent bytes of a u64 exchange places):
 * compilers vectorize this form, not a loop of 16-bit rotates. */
static void types_swap16(unsigned char *d, const unsigned char *s, size_t n)
{
    const uint64_t lo = 0x00FF00FF00FF00FFull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, s + i, 8);
        v = ((v & lo) << 8) | ((v >> 8) & lo);
        memcpy(d + i, &v, 8);
    }
    for (; i < n; i += 2) {
        uint16_t v;
        memcpy(&v, s + i, 2);
        v = __builtin_bswap16(v);
        memcpy(d + i, &v, 2);
    }
}

static void types_swap32(unsigned char *d, const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n; i += 4) {
        uint32_t v;
        memcpy(&v, s + i, 4);
        v = __builtin_bswap32(v);
        memcpy(d + i, &v, 4);
    }
}

static void types_swap64(unsigned char *d, const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v;
        memcpy(&v, s + i, 8);
        v = __builtin_bswap64(v);
        memcpy(d + i, &v, 8);
    }
}

/* Any other unit: reverse each group byte by byte (in place safe). */
static void types_swapn(unsigned char *d, const unsigned char *s, size_t n, size_t unit)
{
    for (size_t i = 0; i < n; i += unit) {
        for (size_t a = 0, b = unit - 1; a < b; a++, b--) {
            unsigned char x = s[i + a], y = s[i + b];
            d[i + a] = y;
            d[i + b] = x;
        }
        if (unit % 2 == 1 && d != s)
            d[i + unit / 2] = s[i + unit / 2];
    }
}

int pio_convert(void *dst, const void *src, size_t n, size_t unit, int sender_big)
{
    if (unit == 0 || n % unit != 0)
        return -1;
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (unit == 1 || (sender_big != 0) == (pio_host_bigendian() != 0)) {
        if (d != s && n > 0)
            memmove(d, s, n);
        return 0;
    }
    /* The loops read each word before writing it: in place is safe; a
     * partial overlap is made in place first. */
    if (d != s && d < s + n && s < d + n) {
        memmove(d, s, n);
        s = d;
    }
    switch (unit) {
    case 2: types_swap16(d, s, n); break;
    case 4: types_swap32(d, s, n); break;
    case 8: types_swap64(d, s, n); break;
    default: types_swapn(d, s, n, unit); break;
    }
    return 0;
}
