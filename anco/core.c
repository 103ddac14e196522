/* core.c - anco's acquire and give-up paths (core.h).
 * SPDX-License-Identifier: BSD-3-Clause */
#include "anco/core.h"

#include "anco/dir.h"

#include <string.h>

#define ROW_MAX    64 /* groups */
#define READ_TRIES 8

/* read_row - the G cells of block id's row. */
static int read_row(struct anco_node *n, uint64_t id, uint64_t *row, uint32_t *owner,
                    uint64_t *disp)
{
    anco_row_place(id, n->size, n->groups, owner, disp);
    return n->ops.dir_get(n->ops.ctx, *owner, *disp, row, n->groups * ANCO_CELL_SIZE);
}

/* copy_from - block id from cell c's holder into out; 0, ANCO_STALE, -1 */
static int copy_from(struct anco_node *n, uint64_t c, uint64_t id, void *out, size_t len)
{
    uint32_t retries = 0;
    int rc = anco_entry_read(&n->ops.cache, anco_cell_rank(c), n->block, anco_cell_index(c), id,
                             out, len, READ_TRIES, &retries);
    n->st.retries += retries;
    if (rc == ANCO_STALE)
        n->st.stale++;
    return rc;
}

int anco_acquire(struct anco_node *n, uint64_t id, uint32_t idx, void *out, size_t len,
                 enum anco_from *from)
{
    uint32_t g = anco_group(n->rank, n->groups);
    if (n->groups > ROW_MAX || len > n->block)
        return -1;
    for (;;) {
        uint64_t row[ROW_MAX], disp;
        uint32_t owner;
        if (read_row(n, id, row, &owner, &disp) != 0)
            return -1;
        uint64_t mine = row[g];
        uint64_t cell_disp = disp + (uint64_t)g * ANCO_CELL_SIZE;
        switch (anco_cell_state(mine)) {
        case ANCO_LOADED: {
            if (anco_cell_rank(mine) == n->rank && anco_cell_index(mine) == idx)
                return -1; /* the caller's lists said idx was free: a bug */
            int rc = copy_from(n, mine, id, out, len);
            if (rc == ANCO_STALE)
                continue;
            if (rc != 0)
                return -1;
            n->st.hits_remote++;
            *from = ANCO_FROM_GROUP;
            break;
        }
        case ANCO_LOADING:
            n->st.polls++;
            if (n->ops.pause)
                n->ops.pause(n->ops.ctx);
            continue;
        default: {
            uint64_t loading = anco_cell(ANCO_LOADING, n->rank, idx), old;
            if (n->ops.dir_cas(n->ops.ctx, owner, cell_disp, 0, loading, &old) != 0)
                return -1;
            if (old != 0)
                continue; /* another member was faster */
            /* I am the group's representative: another group's copy first */
            int got = 0;
            for (uint32_t k = 0; k < n->groups && !got; k++)
                if (k != g && anco_cell_state(row[k]) == ANCO_LOADED &&
                    copy_from(n, row[k], id, out, len) == 0)
                    got = 1;
            if (got) {
                n->st.hits_remote++;
                *from = ANCO_FROM_OTHER_GROUP;
            } else {
                if (n->ops.store_read(n->ops.ctx, id, out, len) != 0) {
                    n->ops.dir_cas(n->ops.ctx, owner, cell_disp, loading, 0, &old);
                    return -1;
                }
                n->st.fs_reads++;
                *from = ANCO_FROM_STORE;
            }
            anco_entry_fill(n->cache, n->block, idx, id, ++n->token, out, len);
            uint64_t loaded = anco_cell(ANCO_LOADED, n->rank, idx);
            if (n->ops.dir_cas(n->ops.ctx, owner, cell_disp, loading, loaded, &old) != 0 ||
                old != loading)
                return -1; /* nobody else may change a loading cell */
            return 0;
        }
        }
        /* copied from my group: keep a copy too (the published design fills
         * the local cache on every miss) */
        anco_entry_fill(n->cache, n->block, idx, id, ++n->token, out, len);
        return 0;
    }
}

int anco_give_up(struct anco_node *n, uint64_t id, uint32_t idx)
{
    uint32_t g = anco_group(n->rank, n->groups), owner;
    uint64_t disp, old, mine = anco_cell(ANCO_LOADED, n->rank, idx);
    anco_row_place(id, n->size, n->groups, &owner, &disp);
    int rc = n->ops.dir_cas(n->ops.ctx, owner, disp + (uint64_t)g * ANCO_CELL_SIZE, mine, 0, &old);
    anco_entry_clear(n->cache, n->block, idx);
    n->st.evictions++;
    return rc == 0 ? 0 : -1;
}
