/* perf_sizes.c - the size syntax pio-perf and bench/tcp_pingpong share.
 * SPDX-License-Identifier: BSD-3-Clause
 * One parser, so that the PIO benchmark and its plain-socket baseline always
 * measure the same sizes. No state. */
#include "perf_sizes.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* One size: digits with an optional K/M/G (binary) suffix, optionally
 * followed by +N or -N (same syntax), e.g. 64K+1. Returns 0 on success. */
static int sz_one(const char *s, const char **end, uint64_t *out)
{
    char *e;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &e, 10);
    if (errno)
        return -1;
    uint64_t mul = 1;
    switch (*e) {
    case 'k':
    case 'K':
        mul = 1ULL << 10;
        e++;
        break;
    case 'm':
    case 'M':
        mul = 1ULL << 20;
        e++;
        break;
    case 'g':
    case 'G':
        mul = 1ULL << 30;
        e++;
        break;
    default: break;
    }
    if (*e == 'i' || *e == 'B') /* KiB, MB: binary either way */
        e += (*e == 'i' && e[1] == 'B') ? 2 : 1;
    if (v > UINT64_MAX / mul)
        return -1;
    *out = v * mul;
    *end = e;
    return 0;
}

static int sz_size(const char *s, const char **end, uint64_t *out)
{
    if (sz_one(s, &s, out) != 0)
        return -1;
    while (*s == '+' || *s == '-') {
        char op = *s;
        uint64_t d;
        if (sz_one(s + 1, &s, &d) != 0)
            return -1;
        if (op == '-' && d > *out)
            return -1;
        *out = op == '+' ? *out + d : *out - d;
    }
    *end = s;
    return 0;
}

/* SIZES: comma-separated items, each a size or A:B (A, 2A, 4A ... up to B;
 * from 0: 0, 1, 2, 4 ...). */
int perf_parse_sizes(const char *arg, size_t *sizes, int max, int *n)
{
    const char *s = arg;
    *n = 0;
    while (*s) {
        uint64_t a, b;
        if (sz_size(s, &s, &a) != 0)
            return -1;
        b = a;
        if (*s == ':' && sz_size(s + 1, &s, &b) != 0)
            return -1;
        if (b < a || b > (uint64_t)SIZE_MAX / 2)
            return -1;
        for (uint64_t v = a;;) {
            if (*n == max)
                return -1;
            sizes[(*n)++] = (size_t)v;
            uint64_t next = v ? v * 2 : 1;
            if (next > b || v == b)
                break;
            v = next;
        }
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return *n ? 0 : -1;
}
