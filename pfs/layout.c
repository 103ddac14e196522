/* layout.c - stripe-count policy, placement and range mapping (layout.h).
 * SPDX-License-Identifier: BSD-3-Clause */
#include "layout.h"

static uint32_t cap(uint32_t n, uint32_t nservers)
{
    if (n > PFS_STRIPES_MAX)
        n = PFS_STRIPES_MAX;
    if (n > nservers)
        n = nservers;
    return n ? n : 1;
}

uint32_t pfs_policy_count(uint64_t size_hint, uint32_t wish, uint32_t dir_default,
                          uint32_t nservers)
{
    if (wish)
        return cap(wish, nservers);
    if (dir_default)
        return cap(dir_default, nservers);
    if (!size_hint)
        return 1;
    uint64_t n = (size_hint + PFS_POLICY_BYTES - 1) / PFS_POLICY_BYTES;
    return cap(n > PFS_STRIPES_MAX ? PFS_STRIPES_MAX : (uint32_t)n, nservers);
}

void pfs_layout_place(struct pfs_layout *l, uint32_t nservers, uint32_t *next)
{
    uint32_t start = nservers ? *next % nservers : 0;
    for (uint32_t i = 0; i < l->count; i++)
        l->servers[i] = (start + i) % nservers;
    *next = (start + l->count) % nservers;
}

int pfs_layout_valid(const struct pfs_layout *l, uint32_t nservers)
{
    if (!l->stripe_size || l->stripe_size % 4096 || l->stripe_size > (4ull << 30))
        return 0;
    if (l->count < 1 || l->count > PFS_STRIPES_MAX || l->count > nservers)
        return 0;
    for (uint32_t i = 0; i < l->count; i++) {
        if (l->servers[i] >= nservers)
            return 0;
        for (uint32_t j = 0; j < i; j++)
            if (l->servers[j] == l->servers[i])
                return 0;
    }
    return 1;
}

struct pfs_piece pfs_map(const struct pfs_layout *l, uint64_t off, uint64_t len, uint64_t max)
{
    uint64_t s = l->stripe_size, u = off / s, in = off % s;
    struct pfs_piece p;
    p.stripe = (uint32_t)(u % l->count);
    p.obj_off = (u / l->count) * s + in;
    p.file_off = off;
    p.len = s - in;
    if (p.len > len)
        p.len = len;
    if (max && p.len > max)
        p.len = max;
    return p;
}

uint64_t pfs_object_size(const struct pfs_layout *l, uint32_t stripe, uint64_t size)
{
    uint64_t s = l->stripe_size, units = size / s, rest = size % s;
    /* whole units: stripe gets units / count, plus one if it is among the
     * first units % count; the partial unit goes to stripe units % count */
    uint64_t full = units / l->count + (stripe < units % l->count ? 1 : 0);
    uint64_t n = full * s;
    if (rest && stripe == units % l->count)
        n += rest;
    return n;
}
