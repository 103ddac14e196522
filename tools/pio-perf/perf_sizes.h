/* perf_sizes.h - size lists and the data pattern of pio-perf and its baseline.
 * SPDX-License-Identifier: BSD-3-Clause
 * Thread-safe: all of it (no state). */
#ifndef PERF_SIZES_H
#define PERF_SIZES_H

#include <stddef.h>
#include <stdint.h>

/* perf_parse_sizes - SIZES: comma-separated items, each a size (digits, an
 * optional K/M/G binary suffix, optional +N/-N, e.g. 64K+1) or A:B (A, 2A,
 * 4A ... up to B; from 0: 0, 1, 2, 4 ...). sizes [out]: up to max entries;
 * *n [out]: how many. Returns 0, or -1 for bad syntax or too many sizes. */
int perf_parse_sizes(const char *arg, size_t *sizes, int max, int *n);

/* perf_pat - byte i of every benchmark message before its stamp. */
static inline uint8_t perf_pat(size_t i)
{
    return (uint8_t)(i * 131u + (i >> 8) * 7u + (i >> 16) * 3u + 0x5a);
}

#endif
