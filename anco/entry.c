/* entry.c - the cache entry's fill, give-up and checked remote read
 * (entry.h). The owner's stores are C11 atomics with release order, so a
 * reader's get (the network or the progress thread copying the memory)
 * never sees an ID before the token and data it stands for.
 * SPDX-License-Identifier: BSD-3-Clause */
#include "entry.h"

#include <stdatomic.h>
#include <string.h>

static _Atomic uint64_t *word(uint8_t *base, uint64_t block, uint32_t i, int k)
{
    return (_Atomic uint64_t *)(void *)(base + anco_entry_disp(i, block) + 8 * (size_t)k);
}

void anco_entry_fill(uint8_t *base, uint64_t block, uint32_t i, uint64_t id, uint64_t token,
                     const void *data, size_t len)
{
    memcpy(base + anco_entry_disp(i, block) + ANCO_ENTRY_HDR, data, len);
    atomic_store_explicit(word(base, block, i, 1), token, memory_order_release);
    atomic_store_explicit(word(base, block, i, 0), id, memory_order_release);
}

void anco_entry_clear(uint8_t *base, uint64_t block, uint32_t i)
{
    atomic_store_explicit(word(base, block, i, 0), 0, memory_order_release);
    atomic_store_explicit(word(base, block, i, 1), 0, memory_order_release);
}

static int header(const struct anco_rma *rma, uint32_t rank, uint64_t disp, uint64_t h[2])
{
    uint8_t b[ANCO_ENTRY_HDR];
    if (rma->get(rma->ctx, rank, disp, b, sizeof(b)) != 0)
        return -1;
    memcpy(h, b, sizeof(b)); /* the owner's byte order: a job runs on one architecture */
    return 0;
}

int anco_entry_read(const struct anco_rma *rma, uint32_t rank, uint64_t block, uint32_t i,
                    uint64_t id, void *out, size_t len, int tries, uint32_t *retries)
{
    uint64_t disp = anco_entry_disp(i, block), before[2], after[2];
    if (retries)
        *retries = 0;
    for (int t = 0; t < tries; t++) {
        if (header(rma, rank, disp, before) != 0)
            return -1;
        if (before[0] != id || before[1] == 0)
            return ANCO_STALE; /* not (or no longer, or not yet) this block */
        if (rma->get(rma->ctx, rank, disp + ANCO_ENTRY_HDR, out, len) != 0)
            return -1;
        if (header(rma, rank, disp, after) != 0)
            return -1;
        if (after[0] != id)
            return ANCO_STALE; /* race 1: replaced by another block meanwhile */
        if (after[1] == before[1])
            return 0;
        if (retries) /* race 2: given up and filled again with the same block */
            (*retries)++;
    }
    return ANCO_STALE;
}
