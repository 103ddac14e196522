/* core.h - anco's acquire and give-up paths over the directories (dir.h)
 * and the cache entries (entry.h), written against callbacks for the
 * one-sided operations and the backing store, so that one process's code
 * runs the same over PIO windows (anco.c) and over a fake job of threads in
 * the unit tests. Thread-safety: one anco_node per process; its functions
 * are called under the process's cache lock.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Acquire block id into my entry idx (the caller took idx off its lists):
 *   find the block's representative row (claiming a free one), read it with
 *   one get, and look at my group's cell:
 *     loaded: copy from a loaded cell of the row chosen at random (spreads
 *       the readers of a popular block over its holders); a stale copy (the
 *       holder gave it up meanwhile) sends us back to the row, a holder that
 *       cannot be reached (it left) has its cell invalidated;
 *     loading: poll the row until it is loaded (or invalid again);
 *     invalid: when another group is loading the block and none has it
 *       loaded, poll too (one file-system read serves every group; the
 *       published design reads once per group here); else CAS my cell to
 *       loading(me, idx): I am my group's representative. When lower groups
 *       claimed it at the same moment (each saw the row all invalid), wait
 *       for their load (the lowest group never waits: no circle). Copy from
 *       another group's loaded cell if the row has one, else read the backing store;
 *       fill my entry; CAS my cell to loaded.
 *   A lost CAS (another member was faster) sends us back to the row. Every
 *   copy I fill is noted in my group's alternative directory (collisions
 *   overwrite). The block ends in my entry idx either way, so a later local
 *   read hits. When the block has no row (ANCO_PROBES rows all taken by
 *   other blocks), or a loading cell stays loading for poll_limit polls
 *   (its loader is stuck or gone), the block is read from the store around
 *   the directories (ANCO_FROM_AROUND, counted as uncached) into my entry.
 * Give up my entry idx holding id: if my group's cell names it, CAS the
 * cell to the copy the alternative directory names in my group (checked
 * against that entry's header first), else to invalid; forget my
 * alternative slot; then clear the entry (entry.h's order).
 * Singlet: no other cell of the row and no alternative slot of my group
 * names a copy of the block but mine.
 * Read-ahead (anco_ahead): a block that no group holds or loads (its row
 * all invalid) is claimed with the same compare-and-swap on my group's cell
 * and loaded from the store into my entry idx; a block anyone else has or
 * is at is left to the on-demand path. It never waits for another process,
 * so a process that holds read-ahead claims is never in a circle of
 * waiters. When two groups claim it at once the lower keeps its claim and
 * the higher gives its own back (the on-demand rule, without the wait).
 * So when all processes want one block at once, the backing store is read
 * at most once per group. */
#ifndef ANCO_CORE_H
#define ANCO_CORE_H

#include "anco.h"
#include "entry.h"

#include <stddef.h>
#include <stdint.h>

/* The windows every process creates, in this order. */
enum anco_win {
    ANCO_WIN_CACHE = 0,
    ANCO_WIN_DIR = 1,
    ANCO_WIN_ALT = 2,
    ANCO_WIN_BAR = 3, /* anco.c's barrier (core.c never uses it) */
    ANCO_WINS = 4
};

struct anco_ops {
    /* one-sided operations on window w of rank: 0, or -1 (failed, or the
     * process is gone) */
    int (*get)(void *ctx, enum anco_win w, uint32_t rank, uint64_t disp, void *buf, size_t len);
    int (*put)(void *ctx, enum anco_win w, uint32_t rank, uint64_t disp, const void *buf,
               size_t len);
    int (*cas)(void *ctx, enum anco_win w, uint32_t rank, uint64_t disp, uint64_t compare,
               uint64_t swap, uint64_t *old);
    /* len bytes of block id of file src from the backing store: 0 or -1 */
    int (*store_read)(void *ctx, const void *src, uint64_t id, void *buf, size_t len);
    void (*pause)(void *ctx); /* between polls of a loading cell */
    void *ctx;
};

struct anco_node {
    uint32_t rank, size, groups;
    uint32_t rows;       /* representative rows per process */
    uint32_t slots;      /* alternative-directory slots per process */
    uint32_t poll_limit; /* polls of one loading cell before reading around it */
    uint64_t block;      /* bytes of a block */
    uint8_t *cache;      /* my cache window's memory */
    uint64_t token;      /* the last token used (tokens start at 1, never reused) */
    uint64_t rng;        /* xorshift state for the random choice of a holder */
    struct anco_ops ops;
    anco_stats st;
};

/* Where a block came from. */
enum anco_from { ANCO_FROM_GROUP = 1, ANCO_FROM_OTHER_GROUP, ANCO_FROM_STORE, ANCO_FROM_AROUND };

/* anco_acquire - block id of file src (len bytes of it, len <= block) into
 * my entry idx and into out. *from [out]: where it came from. Returns 0 or
 * -1 (the store failed: entry idx is unchanged and free to reuse). */
int anco_acquire(struct anco_node *n, uint64_t id, uint32_t idx, const void *src, void *out,
                 size_t len, enum anco_from *from);

/* anco_ahead_free - 1 when block id is one for anco_ahead: no group holds
 * it or is loading it (its row all invalid, or no row yet), else 0. One
 * get: the caller asks before it gives an entry up for the block. */
int anco_ahead_free(struct anco_node *n, uint64_t id);

/* anco_ahead - read-ahead: block id of file src (len bytes) into my entry
 * idx when no group holds or loads it (above). Returns 1 (loaded: entry idx
 * holds it, my group's cell names it, counted in fs_reads and ahead), 0
 * (left alone: another process has it or is at it, or it has no row; entry
 * idx unchanged), or -1 (the store failed: my claim is invalid again, entry
 * idx unchanged). */
int anco_ahead(struct anco_node *n, uint64_t id, uint32_t idx, const void *src, void *out,
               size_t len);

/* anco_is_singlet - 1 when my entry idx holding id is the job's only copy
 * that the directories know of, else 0. */
int anco_is_singlet(struct anco_node *n, uint64_t id, uint32_t idx);

/* anco_give_up - my entry idx, holding id, is being reused. Best effort on
 * the directories (a failed operation leaves a cell that readers find
 * stale); the entry is always cleared. */
void anco_give_up(struct anco_node *n, uint64_t id, uint32_t idx);

#endif
