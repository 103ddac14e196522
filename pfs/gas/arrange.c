/* arrange.c - sort, merge and split of GAS requests (arrange.h).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Merge in two passes over the sorted requests: first find each run of
 * requests whose ranges overlap or touch (the run's end grows with each
 * member), then lay its bytes down in issue order (seq), so that where
 * ranges overlap the last writer's bytes stay. A run's members are sorted
 * by seq in place (they are contiguous in v after the first sort). */
#include "arrange.h"

#include <stdlib.h>
#include <string.h>

static int by_file_off(const void *a, const void *b)
{
    const struct gas_req *x = a, *y = b;
    if (x->file != y->file)
        return x->file < y->file ? -1 : 1;
    if (x->off != y->off)
        return x->off < y->off ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int by_seq(const void *a, const void *b)
{
    const struct gas_req *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int gas_arrange(struct gas_req *v, size_t n, struct gas_extent *out, size_t *nout, uint8_t *buf,
                size_t cap)
{
    *nout = 0;
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(*v), by_file_off);
    size_t pos = 0;
    for (size_t i = 0; i < n;) {
        uint64_t start = v[i].off, end = v[i].off + v[i].len;
        size_t j = i + 1;
        while (j < n && v[j].file == v[i].file && v[j].off <= end) {
            if (v[j].off + v[j].len > end)
                end = v[j].off + v[j].len;
            j++;
        }
        uint64_t len = end - start;
        if (len > cap - pos)
            return -1;
        qsort(v + i, j - i, sizeof(*v), by_seq); /* last writer last */
        uint32_t count = 0;
        for (size_t k = i; k < j; k++) {
            if (v[k].len)
                memcpy(buf + pos + (v[k].off - start), v[k].data, (size_t)v[k].len);
            count += v[k].count ? v[k].count : 1;
        }
        out[*nout] = (struct gas_extent){
            .file = v[i].file, .off = start, .len = len, .pos = pos, .nreq = count};
        (*nout)++;
        pos += (size_t)len;
        i = j;
    }
    return 0;
}

void gas_whole_blocks(uint64_t off, uint64_t len, uint64_t block, uint64_t *lo, uint64_t *hi)
{
    uint64_t end = off + len;
    *lo = (off + block - 1) / block * block;
    *hi = end / block * block;
    if (*lo >= *hi)
        *lo = *hi = off; /* no whole block */
}

struct pfs_piece gas_split(const struct pfs_layout *l, uint64_t block, uint64_t off, uint64_t len)
{
    uint64_t max = 0;
    if (block) {
        max = block - off % block;
        if (max > len)
            max = len;
    }
    return pfs_map(l, off, len, max);
}
