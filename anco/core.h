/* core.h - anco's acquire and give-up paths over the directories (dir.h)
 * and the cache entries (entry.h), written against callbacks for the
 * one-sided operations and the backing store, so that one process's code
 * runs the same over PIO windows (anco.c, to come) and over a fake job of
 * threads in the unit tests. Thread-safety: one anco_node per process; its
 * functions are called under the process's cache lock.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Acquire block id into my entry idx (the caller took idx off its lists):
 *   read the block's representative row (one get of G cells) and look at
 *   my group's cell:
 *     loaded by another member: copy from it (anco_entry_read); a stale
 *       copy (the holder gave it up meanwhile) sends us back to the row;
 *     loading: poll the row until it is loaded (or invalid again);
 *     invalid: CAS it to loading(me, idx): I am my group's representative.
 *       Copy from another group's loaded cell if the row has one, else
 *       read the backing store; fill my entry; CAS my cell to loaded.
 *   A lost CAS (another member was faster) sends us back to the row.
 *   The block ends in my entry idx either way, so a later local read hits.
 * Give up my entry idx holding id: if my group's cell names it, CAS the
 * cell to invalid; then clear the entry (entry.h's order).
 * So when all processes want one block at once, the backing store is read
 * at most once per group. */
#ifndef ANCO_CORE_H
#define ANCO_CORE_H

#include "anco/anco.h"
#include "anco/entry.h"

#include <stddef.h>
#include <stdint.h>

struct anco_ops {
    struct anco_rma cache; /* gets from a rank's cache window */
    int (*dir_get)(void *ctx, uint32_t rank, uint64_t disp, void *buf, size_t len);
    int (*dir_cas)(void *ctx, uint32_t rank, uint64_t disp, uint64_t compare, uint64_t swap,
                   uint64_t *old);
    int (*store_read)(void *ctx, uint64_t id, void *buf, size_t len); /* the file system */
    void (*pause)(void *ctx); /* between polls of a loading cell */
    void *ctx;
};

struct anco_node {
    uint32_t rank, size, groups;
    uint64_t block; /* bytes of a block */
    uint8_t *cache; /* my cache window's memory */
    uint64_t token; /* the last token used (tokens start at 1, never reused) */
    struct anco_ops ops;
    anco_stats st;
};

/* Where a block came from. */
enum anco_from { ANCO_FROM_GROUP = 1, ANCO_FROM_OTHER_GROUP, ANCO_FROM_STORE };

/* anco_acquire - block id (len bytes of it, len <= block) into my entry idx
 * and into out. *from [out]: where it came from. Returns 0 or -1 (an
 * operation failed). */
int anco_acquire(struct anco_node *n, uint64_t id, uint32_t idx, void *out, size_t len,
                 enum anco_from *from);

/* anco_give_up - my entry idx, holding id, is being reused. */
int anco_give_up(struct anco_node *n, uint64_t id, uint32_t idx);

#endif
