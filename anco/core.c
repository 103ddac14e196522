/* core.c - anco's acquire and give-up paths (core.h).
 * SPDX-License-Identifier: BSD-3-Clause */
#include "core.h"

#include "dir.h"

#include <string.h>

#define ROW_MAX    64   /* groups */
#define READ_TRIES 8    /* reads of one entry refilled under us before giving up on it */
#define ROUNDS_MAX 4096 /* trips back to the row before reading around it */

enum { ROW_FOUND = 0, ROW_NONE = 1 };

static int cache_get(void *ctx, uint32_t rank, uint64_t disp, void *buf, size_t len)
{
    struct anco_node *n = ctx;
    return n->ops.get(n->ops.ctx, ANCO_WIN_CACHE, rank, disp, buf, len);
}

static uint64_t rnd(struct anco_node *n)
{
    uint64_t x = n->rng ? n->rng : 0x9e3779b97f4a7c15ull ^ n->rank;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return n->rng = x;
}

/* find_row - block id's representative row into row[0 .. G] (tag, cells),
 * at rank *owner, byte *disp. claim: take a free row on the way. Returns
 * ROW_FOUND, ROW_NONE (no row: all probes taken, or free and !claim), -1. */
static int find_row(struct anco_node *n, uint64_t id, int claim, uint64_t *row, uint32_t *owner,
                    uint64_t *disp)
{
    size_t len = anco_row_bytes(n->groups);
    for (uint32_t p = 0; p < ANCO_PROBES; p++) {
        anco_row_place(id, p, n->size, n->rows, n->groups, owner, disp);
        if (n->ops.get(n->ops.ctx, ANCO_WIN_DIR, *owner, *disp, row, len) != 0)
            return -1;
        if (row[0] == id)
            return ROW_FOUND;
        if (row[0] != 0)
            continue; /* another block's row: probe on */
        if (!claim)
            return ROW_NONE; /* claims go in probe order: id has no later row */
        uint64_t old;
        if (n->ops.cas(n->ops.ctx, ANCO_WIN_DIR, *owner, *disp, 0, id, &old) != 0)
            return -1;
        if (old != 0 && old != id)
            continue; /* taken by another block just now */
        if (n->ops.get(n->ops.ctx, ANCO_WIN_DIR, *owner, *disp, row, len) != 0)
            return -1;
        return ROW_FOUND;
    }
    return ROW_NONE;
}

/* copy_from - block id from cell c's holder into out; 0, ANCO_STALE, -1 */
static int copy_from(struct anco_node *n, uint64_t c, uint64_t id, void *out, size_t len)
{
    struct anco_rma rma = {cache_get, n};
    uint32_t retries = 0;
    int rc = anco_entry_read(&rma, anco_cell_rank(c), n->block, anco_cell_index(c), id, out, len,
                             READ_TRIES, &retries);
    n->st.retries += retries;
    if (rc == ANCO_STALE)
        n->st.stale++;
    return rc;
}

/* copy_any - copy from a loaded cell of row (skipping group skip), trying
 * them from a random start; a holder that cannot be reached has its cell
 * invalidated. Returns 0 (copied), or -1 (none could be copied). */
static int copy_any(struct anco_node *n, const uint64_t *cells, uint32_t skip, uint32_t owner,
                    uint64_t disp, uint64_t id, void *out, size_t len)
{
    uint32_t start = (uint32_t)(rnd(n) % n->groups);
    for (uint32_t j = 0; j < n->groups; j++) {
        uint32_t k = (start + j) % n->groups;
        if (k == skip || anco_cell_state(cells[k]) != ANCO_LOADED)
            continue;
        int rc = copy_from(n, cells[k], id, out, len);
        if (rc == 0)
            return 0;
        /* The holder left (-1), or its entry holds another block (stale).
         * A holder changes its cell before it clears the entry, so a cell
         * that still names a stale entry stays wrong (a representative
         * handed the cell to a member that was giving the block up at that
         * moment): invalidate it unless it changed meanwhile. Invalid is
         * always safe; it costs one more load at most. */
        uint64_t old;
        n->ops.cas(n->ops.ctx, ANCO_WIN_DIR, owner, disp + (1 + (uint64_t)k) * ANCO_CELL_SIZE,
                   cells[k], 0, &old);
    }
    return -1;
}

/* alt_slot - my group's alternative slot for id: rank *owner, byte *disp */
static void alt_place(struct anco_node *n, uint64_t id, uint32_t *owner, uint64_t *disp)
{
    anco_alt_place(id, anco_group(n->rank, n->groups), n->size, n->groups, n->slots, owner, disp);
}

/* alt_note - my group's alternative directory: id is in my entry idx */
static void alt_note(struct anco_node *n, uint64_t id, uint32_t idx)
{
    uint32_t owner;
    uint64_t disp, slot[2] = {id, anco_cell(ANCO_LOADED, n->rank, idx)};
    alt_place(n, id, &owner, &disp);
    n->ops.put(n->ops.ctx, ANCO_WIN_ALT, owner, disp, slot, sizeof(slot)); /* a hint */
}

/* alt_lookup - the cell my group's alternative slot names for id (0: none) */
static uint64_t alt_lookup(struct anco_node *n, uint64_t id, uint32_t *owner, uint64_t *disp)
{
    uint64_t slot[2];
    alt_place(n, id, owner, disp);
    if (n->ops.get(n->ops.ctx, ANCO_WIN_ALT, *owner, *disp, slot, sizeof(slot)) != 0 ||
        slot[0] != id || anco_cell_state(slot[1]) != ANCO_LOADED)
        return 0;
    return slot[1];
}

int anco_acquire(struct anco_node *n, uint64_t id, uint32_t idx, const void *src, void *out,
                 size_t len, enum anco_from *from)
{
    uint32_t g = anco_group(n->rank, n->groups), polls = 0, owner;
    uint64_t row[1 + ROW_MAX], disp, old;
    const uint64_t *cells = row + 1;
    if (n->groups > ROW_MAX || len > n->block)
        return -1;
    for (int round = 0; round < ROUNDS_MAX; round++) {
        int rc = find_row(n, id, 1, row, &owner, &disp);
        if (rc != ROW_FOUND)
            break;
        uint64_t mine = cells[g], cell_disp = disp + (1 + (uint64_t)g) * ANCO_CELL_SIZE;
        if (anco_cell_state(mine) == ANCO_LOADED) {
            if (copy_any(n, cells, ROW_MAX, owner, disp, id, out, len) != 0)
                continue; /* stale or gone: the row again */
            n->st.hits_remote++;
            *from = ANCO_FROM_GROUP;
            anco_entry_fill(n->cache, n->block, idx, id, ++n->token, out, len);
            alt_note(n, id, idx);
            return 0;
        }
        int other_loaded = 0, other_loading = 0;
        for (uint32_t k = 0; k < n->groups; k++)
            if (k != g) {
                other_loaded |= anco_cell_state(cells[k]) == ANCO_LOADED;
                other_loading |= anco_cell_state(cells[k]) == ANCO_LOADING;
            }
        if (anco_cell_state(mine) == ANCO_LOADING || (!other_loaded && other_loading)) {
            if (++polls > n->poll_limit)
                break; /* the loader is stuck or gone */
            n->st.polls++;
            if (n->ops.pause)
                n->ops.pause(n->ops.ctx);
            continue;
        }
        /* invalid, and no other group is loading it: become the
         * representative */
        uint64_t loading = anco_cell(ANCO_LOADING, n->rank, idx);
        if (n->ops.cas(n->ops.ctx, ANCO_WIN_DIR, owner, cell_disp, 0, loading, &old) != 0)
            break;
        if (old != 0)
            continue; /* another member was faster */
        /* Two groups may have claimed the block at the same moment (each
         * saw the row all invalid): the lower group loads it, the higher
         * waits for that load and copies (the lowest never waits, so
         * nobody waits in a circle) */
        for (uint32_t k = 0; !other_loaded && k < g && polls <= n->poll_limit; k++) {
            while (polls++ <= n->poll_limit) {
                if (n->ops.get(n->ops.ctx, ANCO_WIN_DIR, owner, disp, row,
                               anco_row_bytes(n->groups)) != 0 ||
                    row[0] != id || anco_cell_state(cells[k]) != ANCO_LOADING)
                    break;
                n->st.polls++;
                if (n->ops.pause)
                    n->ops.pause(n->ops.ctx);
            }
            other_loaded = anco_cell_state(cells[k]) == ANCO_LOADED;
        }
        if (other_loaded && copy_any(n, cells, g, owner, disp, id, out, len) == 0) {
            n->st.hits_remote++;
            *from = ANCO_FROM_OTHER_GROUP;
        } else {
            if (n->ops.store_read(n->ops.ctx, src, id, out, len) != 0) {
                n->ops.cas(n->ops.ctx, ANCO_WIN_DIR, owner, cell_disp, loading, 0, &old);
                return -1;
            }
            n->st.fs_reads++;
            *from = ANCO_FROM_STORE;
        }
        anco_entry_fill(n->cache, n->block, idx, id, ++n->token, out, len);
        uint64_t loaded = anco_cell(ANCO_LOADED, n->rank, idx);
        /* nobody else changes a loading cell; a failed CAS leaves it to
         * the pollers' limit */
        n->ops.cas(n->ops.ctx, ANCO_WIN_DIR, owner, cell_disp, loading, loaded, &old);
        alt_note(n, id, idx);
        return 0;
    }
    /* around the directories: a private copy */
    if (n->ops.store_read(n->ops.ctx, src, id, out, len) != 0)
        return -1;
    n->st.uncached++;
    *from = ANCO_FROM_AROUND;
    anco_entry_fill(n->cache, n->block, idx, id, ++n->token, out, len);
    return 0;
}

int anco_ahead_free(struct anco_node *n, uint64_t id)
{
    uint64_t row[1 + ROW_MAX], disp;
    uint32_t owner;
    if (n->groups > ROW_MAX)
        return 0;
    int rc = find_row(n, id, 0, row, &owner, &disp);
    if (rc == ROW_NONE)
        return 1; /* no row yet (or none to be had: anco_ahead leaves it) */
    if (rc != ROW_FOUND)
        return 0;
    for (uint32_t k = 0; k < n->groups; k++)
        if (row[1 + k] != 0)
            return 0;
    return 1;
}

int anco_ahead(struct anco_node *n, uint64_t id, uint32_t idx, const void *src, void *out,
               size_t len)
{
    uint32_t g = anco_group(n->rank, n->groups), owner;
    uint64_t row[1 + ROW_MAX], disp, old;
    if (n->groups > ROW_MAX || len > n->block)
        return 0;
    if (find_row(n, id, 1, row, &owner, &disp) != ROW_FOUND)
        return 0;
    /* a group that has it or is at it: the readers get it on demand (from
     * its copy, or by waiting for its load), so the store is not read for
     * it again */
    for (uint32_t k = 0; k < n->groups; k++)
        if (row[1 + k] != 0)
            return 0;
    uint64_t cell_disp = disp + (1 + (uint64_t)g) * ANCO_CELL_SIZE;
    uint64_t loading = anco_cell(ANCO_LOADING, n->rank, idx);
    if (n->ops.cas(n->ops.ctx, ANCO_WIN_DIR, owner, cell_disp, 0, loading, &old) != 0 || old != 0)
        return 0; /* another member of my group was faster */
    /* A lower group that claimed it at the same moment keeps it; mine goes
     * back to invalid (whoever polled it finds invalid and asks the row
     * again). The on-demand path would wait for that load instead; read-
     * ahead never waits, so that a process holding claims ahead is never
     * one of a circle of waiters. */
    int lower =
        n->ops.get(n->ops.ctx, ANCO_WIN_DIR, owner, disp, row, anco_row_bytes(n->groups)) != 0;
    for (uint32_t k = 0; !lower && k < g; k++)
        lower = row[1 + k] != 0;
    if (lower || n->ops.store_read(n->ops.ctx, src, id, out, len) != 0) {
        n->ops.cas(n->ops.ctx, ANCO_WIN_DIR, owner, cell_disp, loading, 0, &old);
        return lower ? 0 : -1;
    }
    n->st.fs_reads++;
    n->st.ahead++;
    anco_entry_fill(n->cache, n->block, idx, id, ++n->token, out, len);
    /* nobody else changes a loading cell (as in anco_acquire) */
    n->ops.cas(n->ops.ctx, ANCO_WIN_DIR, owner, cell_disp, loading,
               anco_cell(ANCO_LOADED, n->rank, idx), &old);
    alt_note(n, id, idx);
    return 1;
}

int anco_is_singlet(struct anco_node *n, uint64_t id, uint32_t idx)
{
    uint64_t row[1 + ROW_MAX], disp, mine = anco_cell(ANCO_LOADED, n->rank, idx);
    uint32_t owner;
    if (find_row(n, id, 0, row, &owner, &disp) == ROW_FOUND)
        for (uint32_t k = 0; k < n->groups; k++)
            if (row[1 + k] != 0 && row[1 + k] != mine)
                return 0; /* another group has it, or another member of mine */
    uint64_t alt = alt_lookup(n, id, &owner, &disp);
    return !(alt != 0 && alt != mine);
}

void anco_give_up(struct anco_node *n, uint64_t id, uint32_t idx)
{
    uint32_t g = anco_group(n->rank, n->groups), owner, aowner;
    uint64_t row[1 + ROW_MAX], disp, adisp, old, mine = anco_cell(ANCO_LOADED, n->rank, idx);
    uint64_t alt = alt_lookup(n, id, &aowner, &adisp);
    if (find_row(n, id, 0, row, &owner, &disp) == ROW_FOUND && row[1 + g] == mine) {
        /* I am my group's representative: hand the cell to the copy the
         * alternative directory knows, if it still holds the block */
        uint64_t repl = 0, hdr[2];
        if (alt != 0 && alt != mine &&
            n->ops.get(n->ops.ctx, ANCO_WIN_CACHE, anco_cell_rank(alt),
                       anco_entry_disp(anco_cell_index(alt), n->block), hdr, sizeof(hdr)) == 0 &&
            hdr[0] == id)
            repl = alt;
        n->ops.cas(n->ops.ctx, ANCO_WIN_DIR, owner, disp + (1 + (uint64_t)g) * ANCO_CELL_SIZE, mine,
                   repl, &old);
    }
    if (alt == mine) /* the slot's cell word, atomically: another member may note meanwhile */
        n->ops.cas(n->ops.ctx, ANCO_WIN_ALT, aowner, adisp + 8, mine, 0, &old);
    anco_entry_clear(n->cache, n->block, idx);
    n->st.evictions++;
}
