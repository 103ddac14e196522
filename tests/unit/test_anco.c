/* test_anco.c - anco's pure parts: the singlet and general lists, the
 * directory cell encoding, group mapping and directory placement.
 * SPDX-License-Identifier: BSD-3-Clause */
#include "anco/core.h"
#include "anco/dir.h"
#include "anco/entry.h"
#include "anco/lists.h"
#include "tests/lib/unit.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

/* is_singlet callback: entries whose flag is set are singlets */
static int flagged(void *ctx, int32_t i)
{
    return ((const int *)ctx)[i];
}

static void test_lru(void **state)
{
    (void)state;
    struct anco_lists l;
    assert_int_equal(anco_lists_init(&l, 4, 0.5), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(anco_lists_take_free(&l), i);
    assert_int_equal(anco_lists_take_free(&l), -1);
    /* taken in order 0 1 2 3: 0 is least recently used; a hit on 0 saves it */
    anco_lists_hit(&l, 0);
    int none[4] = {0};
    assert_int_equal(anco_lists_victim(&l, flagged, none), 1);
    assert_int_equal(l.where[1], ANCO_OUT);
    anco_lists_hit(&l, 1); /* refilled: now the most recent */
    assert_int_equal(anco_lists_victim(&l, flagged, none), 2);
    anco_lists_release(&l, 2);
    assert_int_equal(l.len[ANCO_FREE], 1);
    assert_int_equal(anco_lists_take_free(&l), 2);
    assert_int_equal(anco_lists_victim(&l, flagged, none), 3);
    anco_lists_fini(&l);
}

static void test_singlet_moves(void **state)
{
    (void)state;
    struct anco_lists l;
    assert_int_equal(anco_lists_init(&l, 4, 0.5), 0); /* at most 2 singlets */
    for (int i = 0; i < 4; i++)
        anco_lists_take_free(&l);
    int single[4] = {1, 0, 0, 0};
    /* the LRU (0) is the only copy in the job: it moves to the singlet list */
    assert_int_equal(anco_lists_victim(&l, flagged, single), 1);
    assert_int_equal(l.where[0], ANCO_SINGLET);
    assert_int_equal(l.len[ANCO_SINGLET], 1);
    /* a hit on a singlet brings it back to the general list's head */
    anco_lists_hit(&l, 0);
    assert_int_equal(l.where[0], ANCO_GENERAL);
    assert_int_equal(l.head[ANCO_GENERAL], 0);
    assert_int_equal(l.len[ANCO_SINGLET], 0);
    anco_lists_fini(&l);
}

static void test_singlet_fifo_limit(void **state)
{
    (void)state;
    struct anco_lists l;
    assert_int_equal(anco_lists_init(&l, 6, 0.5), 0); /* at most 3 singlets */
    for (int i = 0; i < 6; i++)
        anco_lists_take_free(&l);
    int all[6] = {1, 1, 1, 1, 1, 1};
    /* every block a singlet: 0, 1, 2, 3 move aside; with 4 the list is over
     * its length and its oldest (0) goes: FIFO */
    assert_int_equal(anco_lists_victim(&l, flagged, all), 0);
    assert_int_equal(l.len[ANCO_SINGLET], 3);
    assert_int_equal(l.tail[ANCO_SINGLET], 1);
    assert_int_equal(anco_lists_victim(&l, flagged, all), 1);
    anco_lists_fini(&l);
    /* ratio 0: singlets are not kept, the LRU goes */
    assert_int_equal(anco_lists_init(&l, 3, 0.0), 0);
    for (int i = 0; i < 3; i++)
        anco_lists_take_free(&l);
    assert_int_equal(anco_lists_victim(&l, flagged, all), 0);
    assert_int_equal(l.len[ANCO_SINGLET], 0);
    anco_lists_fini(&l);
    assert_int_equal(anco_lists_init(&l, 0, 0.5), -1);
    assert_int_equal(anco_lists_init(&l, 4, 1.5), -1);
}

static void test_lists_random(void **state)
{
    (void)state;
    /* random operations: the three lists and the entries out always add up */
    struct anco_lists l;
    assert_int_equal(anco_lists_init(&l, 64, 0.5), 0);
    int flags[64] = {0};
    unsigned seed = 7;
    int out[64] = {0};
    for (int step = 0; step < 20000; step++) {
        seed = seed * 1103515245u + 12345u;
        int32_t i = (int32_t)((seed >> 8) % 64);
        flags[i] = (seed >> 20) & 1;
        switch ((seed >> 4) % 4) {
        case 0: {
            int32_t f = anco_lists_take_free(&l);
            if (f >= 0)
                assert_int_equal(l.where[f], ANCO_GENERAL);
            break;
        }
        case 1:
            if (l.where[i] != ANCO_FREE) {
                anco_lists_hit(&l, i);
                out[i] = 0;
            }
            break;
        case 2: {
            int32_t v = anco_lists_victim(&l, flagged, flags);
            if (v >= 0) {
                assert_int_equal(l.where[v], ANCO_OUT);
                out[v] = 1;
            }
            break;
        }
        default: anco_lists_release(&l, i); out[i] = 0;
        }
        uint32_t nout = 0;
        for (int k = 0; k < 64; k++) {
            nout += l.where[k] == ANCO_OUT;
            assert_int_equal(l.where[k] == ANCO_OUT, out[k]); /* out until hit or released */
        }
        assert_int_equal(l.len[0] + l.len[1] + l.len[2] + nout, 64);
        assert_true(l.len[ANCO_SINGLET] <= l.singlet_max + 1);
    }
    /* walking each list from its head visits exactly len entries */
    for (int w = 0; w < 3; w++) {
        uint32_t n = 0;
        for (int32_t e = l.head[w]; e >= 0; e = l.next[e])
            n++;
        assert_int_equal(n, l.len[w]);
    }
    anco_lists_fini(&l);
}

static void test_cell(void **state)
{
    (void)state;
    assert_int_equal(anco_cell(ANCO_INVALID, 5, 7), 0);
    uint64_t c = anco_cell(ANCO_LOADING, 12345, 0xfffffffeu);
    assert_int_equal(anco_cell_state(c), ANCO_LOADING);
    assert_int_equal(anco_cell_rank(c), 12345);
    assert_int_equal(anco_cell_index(c), 0xfffffffeu);
    c = anco_cell(ANCO_LOADED, ANCO_RANK_MAX, 0);
    assert_int_equal(anco_cell_state(c), ANCO_LOADED);
    assert_int_equal(anco_cell_rank(c), ANCO_RANK_MAX);
    assert_int_equal(anco_cell_index(c), 0);
    /* loading and loaded of the same holder differ: a CAS tells them apart */
    assert_true(anco_cell(ANCO_LOADING, 3, 4) != anco_cell(ANCO_LOADED, 3, 4));
}

static void test_groups(void **state)
{
    (void)state;
    for (uint32_t size = 1; size <= 40; size++)
        for (uint32_t G = 1; G <= size; G++) {
            int seen[40] = {0};
            uint32_t total = 0;
            for (uint32_t g = 0; g < G; g++) {
                uint32_t n = anco_group_size(g, size, G);
                total += n;
                for (uint32_t k = 0; k < n; k++) {
                    uint32_t r = anco_group_member(g, k, G);
                    assert_true(r < size);
                    assert_int_equal(anco_group(r, G), g);
                    seen[r]++;
                }
            }
            assert_int_equal(total, size);
            for (uint32_t r = 0; r < size; r++)
                assert_int_equal(seen[r], 1);
        }
    /* neighbouring ranks fall in different groups */
    assert_true(anco_group(4, 4) != anco_group(5, 4));
}

static void test_places(void **state)
{
    (void)state;
    uint32_t owner;
    uint64_t disp;
    /* representative rows: on a rank in range, after the header, on a row
     * boundary; probes are consecutive global rows; rows used evenly */
    int rows[4][8];
    memset(rows, 0, sizeof(rows));
    for (uint64_t id = 1; id <= 4096; id++) {
        anco_row_place(id, 0, 4, 8, 3, &owner, &disp);
        assert_true(owner < 4 && disp >= ANCO_DIR_HDR);
        assert_int_equal((disp - ANCO_DIR_HDR) % anco_row_bytes(3), 0);
        uint64_t row = (disp - ANCO_DIR_HDR) / anco_row_bytes(3);
        assert_true(row < 8);
        rows[owner][row]++;
        uint32_t o1;
        uint64_t d1;
        anco_row_place(id, 1, 4, 8, 3, &o1, &d1); /* global row + 1 */
        assert_int_equal((row * 4 + owner + 1) % 32,
                         ((d1 - ANCO_DIR_HDR) / anco_row_bytes(3)) * 4 + o1);
    }
    for (int r = 0; r < 4; r++)
        for (int k = 0; k < 8; k++)
            assert_true(rows[r][k] > 64 && rows[r][k] < 200); /* 128 on average */
    /* alternative directory: the slot is on a member of the group, in range,
     * the same every time; slots are used roughly evenly */
    int use[8][16];
    memset(use, 0, sizeof(use));
    for (uint64_t b = 0; b < 4096; b++) {
        uint32_t g = (uint32_t)(b % 2);
        anco_alt_place(b, g, 8, 2, 16, &owner, &disp);
        assert_int_equal(anco_group(owner, 2), g);
        assert_true(disp < 16 * ANCO_SLOT_SIZE && disp % ANCO_SLOT_SIZE == 0);
        uint32_t o2;
        uint64_t d2;
        anco_alt_place(b, g, 8, 2, 16, &o2, &d2);
        assert_int_equal(o2, owner);
        assert_int_equal(d2, disp);
        use[owner][disp / ANCO_SLOT_SIZE]++;
    }
    for (int r = 0; r < 8; r++)
        for (int s = 0; s < 16; s++)
            assert_true(use[r][s] > 0 && use[r][s] < 80); /* 4096 / 64 = 64 on average */
}

/* ---- the cache entry's checked read, with the two races injected ------ */

#define BLK 64

/* A fake remote process: its cache window, and a fault to inject in the
 * middle of the data get (the second get of a read: header, data, header). */
struct fake {
    uint8_t win[4 * (ANCO_ENTRY_HDR + BLK)];
    int gets;
    int inject_at; /* the get during which the fault happens (0: never) */
    void (*fault)(struct fake *f);
    int faults; /* how many times the fault may still happen */
};

static int fake_get(void *ctx, uint32_t rank, uint64_t disp, void *buf, size_t len)
{
    struct fake *f = ctx;
    (void)rank;
    f->gets++;
    if (f->gets == f->inject_at && f->faults > 0) {
        /* a torn read: the first half before the fault, the rest after */
        memcpy(buf, f->win + disp, len / 2);
        f->faults--;
        f->fault(f);
        memcpy((uint8_t *)buf + len / 2, f->win + disp + len / 2, len - len / 2);
        return 0;
    }
    memcpy(buf, f->win + disp, len);
    return 0;
}

static void fill_with(uint8_t *d, uint8_t v)
{
    memset(d, v, BLK);
}

/* race 1: entry 1 is given up and refilled with another block (ID 99) */
static void replace_other(struct fake *f)
{
    uint8_t d[BLK];
    fill_with(d, 0xEE);
    anco_entry_clear(f->win, BLK, 1);
    anco_entry_fill(f->win, BLK, 1, 99, 1000, d, BLK);
}

/* race 2: entry 1 is given up and filled again with the same block 7, new
 * token; the new fill's bytes differ in this test so a torn read shows */
static void replace_same(struct fake *f)
{
    uint8_t d[BLK];
    fill_with(d, 0xBB);
    anco_entry_clear(f->win, BLK, 1);
    anco_entry_fill(f->win, BLK, 1, 7, 2000, d, BLK);
}

static void test_entry_races(void **state)
{
    (void)state;
    static struct fake f;
    struct anco_rma rma = {fake_get, &f};
    uint8_t d[BLK], out[BLK];
    uint32_t retries;

    /* no fault: the data comes back */
    memset(&f, 0, sizeof(f));
    fill_with(d, 0xAA);
    anco_entry_fill(f.win, BLK, 1, 7, 5, d, BLK);
    assert_int_equal(anco_entry_read(&rma, 3, BLK, 1, 7, out, BLK, 4, &retries), 0);
    assert_memory_equal(out, d, BLK);
    assert_int_equal(retries, 0);
    /* asking for a block the entry does not hold */
    assert_int_equal(anco_entry_read(&rma, 3, BLK, 1, 8, out, BLK, 4, NULL), ANCO_STALE);
    /* an empty entry */
    assert_int_equal(anco_entry_read(&rma, 3, BLK, 0, 7, out, BLK, 4, NULL), ANCO_STALE);

    /* race 1 during the data get: the second header shows another ID */
    f.gets = 0;
    f.inject_at = 2;
    f.fault = replace_other;
    f.faults = 1;
    assert_int_equal(anco_entry_read(&rma, 3, BLK, 1, 7, out, BLK, 4, &retries), ANCO_STALE);
    assert_int_equal(f.faults, 0); /* it did happen */

    /* race 2 during the data get: same ID, new token; the torn first read is
     * thrown away and the retry returns the new fill, whole */
    memset(&f, 0, sizeof(f));
    anco_entry_fill(f.win, BLK, 1, 7, 5, d, BLK);
    f.inject_at = 2;
    f.fault = replace_same;
    f.faults = 1;
    assert_int_equal(anco_entry_read(&rma, 3, BLK, 1, 7, out, BLK, 4, &retries), 0);
    assert_int_equal(f.faults, 0);
    assert_int_equal(retries, 1);
    uint8_t want[BLK];
    fill_with(want, 0xBB);
    assert_memory_equal(out, want, BLK);

    /* an ID check alone would have kept the torn bytes: show they were torn */
    memset(&f, 0, sizeof(f));
    anco_entry_fill(f.win, BLK, 1, 7, 5, d, BLK);
    f.inject_at = 1;
    f.fault = replace_same;
    f.faults = 1;
    uint8_t torn[BLK];
    fake_get(&f, 3, anco_entry_disp(1, BLK) + ANCO_ENTRY_HDR, torn, BLK);
    assert_true(torn[0] == 0xAA && torn[BLK - 1] == 0xBB);

    /* refilled with the same ID on every try: gives up as stale */
    memset(&f, 0, sizeof(f));
    anco_entry_fill(f.win, BLK, 1, 7, 5, d, BLK);
    f.inject_at = 2;
    f.fault = replace_same;
    f.faults = 1;
    assert_int_equal(anco_entry_read(&rma, 3, BLK, 1, 7, out, BLK, 1, &retries), ANCO_STALE);
}

/* ---- the acquire and give-up paths over a fake job of threads ---------- */

#define JOB_RANKS   8
#define JOB_ENTRIES 4
#define JOB_BLK     256
#define JOB_ROWS    16 /* representative rows and alternative slots per rank */
#define JOB_IDS     64 /* block IDs used: 1..JOB_IDS-1 */

struct job {
    uint8_t cache[JOB_RANKS][JOB_ENTRIES * (ANCO_ENTRY_HDR + JOB_BLK)];
    _Atomic uint64_t dir[JOB_RANKS][(ANCO_DIR_HDR + JOB_ROWS * 9 * ANCO_CELL_SIZE) / 8];
    _Atomic uint64_t alt[JOB_RANKS][JOB_ROWS * ANCO_SLOT_SIZE / 8];
    atomic_int store_reads[JOB_IDS];
};

static struct job job;

/* the block's bytes: a function of its ID */
static void block_bytes(uint64_t id, uint8_t *d, size_t len)
{
    for (size_t i = 0; i < len; i++)
        d[i] = (uint8_t)(id * 31 + i * 7);
}

static _Atomic uint64_t *job_words(enum anco_win w, uint32_t rank, uint64_t disp)
{
    switch (w) {
    case ANCO_WIN_DIR: return &job.dir[rank][disp / 8];
    case ANCO_WIN_ALT: return &job.alt[rank][disp / 8];
    default: return (_Atomic uint64_t *)(void *)(job.cache[rank] + disp);
    }
}

static int job_get(void *ctx, enum anco_win w, uint32_t rank, uint64_t disp, void *buf, size_t len)
{
    (void)ctx;
    /* word by word, as a NIC or the progress thread would */
    _Atomic uint64_t *src = job_words(w, rank, disp);
    for (size_t i = 0; i < len / 8; i++) {
        uint64_t v = atomic_load(&src[i]);
        memcpy((uint8_t *)buf + 8 * i, &v, 8);
    }
    return 0;
}

static int job_put(void *ctx, enum anco_win w, uint32_t rank, uint64_t disp, const void *buf,
                   size_t len)
{
    (void)ctx;
    _Atomic uint64_t *dst = job_words(w, rank, disp);
    for (size_t i = 0; i < len / 8; i++) {
        uint64_t v;
        memcpy(&v, (const uint8_t *)buf + 8 * i, 8);
        atomic_store(&dst[i], v);
    }
    return 0;
}

static int job_cas(void *ctx, enum anco_win w, uint32_t rank, uint64_t disp, uint64_t compare,
                   uint64_t swap, uint64_t *old)
{
    (void)ctx;
    uint64_t c = compare;
    atomic_compare_exchange_strong(job_words(w, rank, disp), &c, swap);
    *old = c;
    return 0;
}

static int job_store_read(void *ctx, const void *src, uint64_t id, void *buf, size_t len)
{
    (void)ctx;
    (void)src;
    atomic_fetch_add(&job.store_reads[id], 1);
    block_bytes(id, buf, len);
    sched_yield(); /* a slow file system: let the others find the cell loading */
    return 0;
}

static void job_pause(void *ctx)
{
    (void)ctx;
    sched_yield();
}

static void job_node(struct anco_node *n, uint32_t rank, uint32_t groups)
{
    memset(n, 0, sizeof(*n));
    n->rank = rank;
    n->size = JOB_RANKS;
    n->groups = groups;
    n->rows = JOB_ROWS;
    n->slots = JOB_ROWS;
    n->poll_limit = 1u << 30;
    n->block = JOB_BLK;
    n->cache = job.cache[rank];
    n->ops = (struct anco_ops){job_get, job_put, job_cas, job_store_read, job_pause, NULL};
}

static void test_acquire_sequence(void **state)
{
    (void)state;
    memset(&job, 0, sizeof(job));
    struct anco_node n[JOB_RANKS];
    for (uint32_t r = 0; r < JOB_RANKS; r++)
        job_node(&n[r], r, 2);
    uint8_t out[JOB_BLK], want[JOB_BLK];
    enum anco_from from;
    block_bytes(5, want, JOB_BLK);
    /* rank 0 (group 0): nobody has block 5: the file system; its copy is
     * the job's only one */
    assert_int_equal(anco_acquire(&n[0], 5, 0, NULL, out, JOB_BLK, &from), 0);
    assert_int_equal(from, ANCO_FROM_STORE);
    assert_memory_equal(out, want, JOB_BLK);
    assert_int_equal(anco_is_singlet(&n[0], 5, 0), 1);
    /* rank 1 (group 1): its group's cell is invalid, group 0 has it */
    memset(out, 0, sizeof(out));
    assert_int_equal(anco_acquire(&n[1], 5, 2, NULL, out, JOB_BLK, &from), 0);
    assert_int_equal(from, ANCO_FROM_OTHER_GROUP);
    assert_memory_equal(out, want, JOB_BLK);
    assert_int_equal(anco_is_singlet(&n[0], 5, 0), 0);
    /* rank 2 (group 0): its group has it loaded */
    memset(out, 0, sizeof(out));
    assert_int_equal(anco_acquire(&n[2], 5, 1, NULL, out, JOB_BLK, &from), 0);
    assert_int_equal(from, ANCO_FROM_GROUP);
    assert_memory_equal(out, want, JOB_BLK);
    assert_int_equal(atomic_load(&job.store_reads[5]), 1);
    /* rank 0, group 0's representative, gives it up: the alternative
     * directory names rank 2's copy, which takes the cell over */
    anco_give_up(&n[0], 5, 0);
    memset(out, 0, sizeof(out));
    assert_int_equal(anco_acquire(&n[4], 5, 3, NULL, out, JOB_BLK, &from), 0);
    assert_int_equal(from, ANCO_FROM_GROUP);
    assert_memory_equal(out, want, JOB_BLK);
    /* rank 2 gives up: rank 4 (the last noted) takes over; rank 4 gives up:
     * nobody is left in group 0, its cell is invalid; group 1's rank 1 has
     * the only copy now */
    anco_give_up(&n[2], 5, 1);
    assert_int_equal(anco_is_singlet(&n[4], 5, 3), 0);
    anco_give_up(&n[4], 5, 3);
    assert_int_equal(anco_is_singlet(&n[1], 5, 2), 1);
    /* rank 6 (group 0) becomes the representative, copies from group 1 */
    assert_int_equal(anco_acquire(&n[6], 5, 0, NULL, out, JOB_BLK, &from), 0);
    assert_int_equal(from, ANCO_FROM_OTHER_GROUP);
    assert_int_equal(atomic_load(&job.store_reads[5]), 1);
    /* both groups give up: the next reader goes to the file system again */
    anco_give_up(&n[6], 5, 0);
    anco_give_up(&n[1], 5, 2);
    assert_int_equal(anco_acquire(&n[3], 5, 0, NULL, out, JOB_BLK, &from), 0);
    assert_int_equal(from, ANCO_FROM_STORE);
    assert_int_equal(atomic_load(&job.store_reads[5]), 2);
    assert_memory_equal(out, want, JOB_BLK);
}

/* a block whose rows are all taken by other blocks is read around the
 * directories, correctly */
static void test_directory_full(void **state)
{
    (void)state;
    memset(&job, 0, sizeof(job));
    struct anco_node n;
    job_node(&n, 0, 1);
    /* take every row of every rank */
    for (uint32_t r = 0; r < JOB_RANKS; r++)
        for (uint32_t k = 0; k < JOB_ROWS; k++)
            atomic_store(&job.dir[r][(ANCO_DIR_HDR + k * anco_row_bytes(1)) / 8], 9999);
    uint8_t out[JOB_BLK], want[JOB_BLK];
    enum anco_from from;
    block_bytes(7, want, JOB_BLK);
    assert_int_equal(anco_acquire(&n, 7, 0, NULL, out, JOB_BLK, &from), 0);
    assert_int_equal(from, ANCO_FROM_AROUND);
    assert_memory_equal(out, want, JOB_BLK);
    assert_int_equal(n.st.uncached, 1);
}

/* read-ahead loads a block nobody has, into the loader's entry; leaves
 * alone a block that any group holds or loads; the on-demand readers then
 * copy the block loaded ahead: the store is read once */
static void test_ahead(void **state)
{
    (void)state;
    memset(&job, 0, sizeof(job));
    struct anco_node n[JOB_RANKS];
    for (uint32_t r = 0; r < JOB_RANKS; r++)
        job_node(&n[r], r, 2);
    uint8_t out[JOB_BLK], want[JOB_BLK];
    enum anco_from from;
    block_bytes(9, want, JOB_BLK);
    /* rank 3 (group 1) loads block 9 ahead into its entry 2 */
    assert_int_equal(anco_ahead_free(&n[3], 9), 1);
    assert_int_equal(anco_ahead(&n[3], 9, 2, NULL, out, JOB_BLK), 1);
    assert_memory_equal(out, want, JOB_BLK);
    assert_int_equal(n[3].st.fs_reads, 1);
    assert_int_equal(n[3].st.ahead, 1);
    /* now nobody loads it ahead again, in either group */
    assert_int_equal(anco_ahead_free(&n[1], 9), 0);
    assert_int_equal(anco_ahead_free(&n[0], 9), 0);
    assert_int_equal(anco_ahead(&n[0], 9, 0, NULL, out, JOB_BLK), 0);
    assert_int_equal(anco_ahead(&n[5], 9, 0, NULL, out, JOB_BLK), 0);
    /* on demand: group 1 copies rank 3's entry, group 0 too (another group's) */
    memset(out, 0, sizeof(out));
    assert_int_equal(anco_acquire(&n[1], 9, 0, NULL, out, JOB_BLK, &from), 0);
    assert_int_equal(from, ANCO_FROM_GROUP);
    assert_memory_equal(out, want, JOB_BLK);
    memset(out, 0, sizeof(out));
    assert_int_equal(anco_acquire(&n[0], 9, 0, NULL, out, JOB_BLK, &from), 0);
    assert_int_equal(from, ANCO_FROM_OTHER_GROUP);
    assert_memory_equal(out, want, JOB_BLK);
    assert_int_equal(atomic_load(&job.store_reads[9]), 1);
    /* a block another group is loading on demand is left to it */
    uint32_t owner;
    uint64_t disp;
    anco_row_place(11, 0, JOB_RANKS, JOB_ROWS, 2, &owner, &disp);
    atomic_store(&job.dir[owner][disp / 8], 11);
    atomic_store(&job.dir[owner][disp / 8 + 1], anco_cell(ANCO_LOADING, 6, 1));
    assert_int_equal(anco_ahead_free(&n[1], 11), 0);
    assert_int_equal(anco_ahead(&n[1], 11, 1, NULL, out, JOB_BLK), 0);
    assert_int_equal(atomic_load(&job.store_reads[11]), 0);
    assert_int_equal(atomic_load(&job.dir[owner][disp / 8 + 2]), 0); /* group 1: no claim */
    /* given up by its only holder, the block is free for read-ahead again */
    anco_give_up(&n[3], 9, 2);
    anco_give_up(&n[1], 9, 0);
    anco_give_up(&n[0], 9, 0);
    assert_int_equal(anco_ahead_free(&n[2], 9), 1);
}

struct aheader {
    uint32_t rank, groups;
    int ok;
};

/* every rank reads blocks 1..JOB_ENTRIES-1 in order, trying each next
 * block ahead first (a sequential reader with a window of one) */
static void *aheader_main(void *arg)
{
    struct aheader *r = arg;
    struct anco_node n;
    job_node(&n, r->rank, r->groups);
    uint8_t out[JOB_BLK], want[JOB_BLK];
    enum anco_from from;
    int have[JOB_ENTRIES] = {0};
    r->ok = 1;
    for (uint64_t id = 1; id < JOB_ENTRIES; id++) {
        if (!have[id]) {
            r->ok &= anco_acquire(&n, id, (uint32_t)id, NULL, out, JOB_BLK, &from) == 0;
            block_bytes(id, want, JOB_BLK);
            r->ok &= memcmp(out, want, JOB_BLK) == 0;
        }
        if (id + 1 < JOB_ENTRIES) {
            int rc = anco_ahead(&n, id + 1, (uint32_t)id + 1, NULL, out, JOB_BLK);
            r->ok &= rc >= 0;
            have[id + 1] = rc == 1;
        }
    }
    return NULL;
}

/* read-ahead and on-demand loads of the same blocks at once: the store is
 * read at most once per group, everyone gets the right bytes */
static void test_ahead_at_once(void **state)
{
    (void)state;
    for (uint32_t groups = 1; groups <= 4; groups *= 2)
        for (int round = 0; round < 20; round++) {
            memset(&job, 0, sizeof(job));
            struct aheader r[JOB_RANKS];
            pthread_t th[JOB_RANKS];
            for (uint32_t k = 0; k < JOB_RANKS; k++) {
                r[k] = (struct aheader){.rank = k, .groups = groups};
                assert_int_equal(pthread_create(&th[k], NULL, aheader_main, &r[k]), 0);
            }
            for (uint32_t k = 0; k < JOB_RANKS; k++) {
                pthread_join(th[k], NULL);
                assert_true(r[k].ok);
            }
            for (uint64_t id = 1; id < JOB_ENTRIES; id++) {
                int reads = atomic_load(&job.store_reads[id]);
                assert_true(reads >= 1 && reads <= (int)groups);
            }
        }
}

struct racer {
    uint32_t rank, groups;
    uint64_t id;
    int ok;
};

static void *racer_main(void *arg)
{
    struct racer *r = arg;
    struct anco_node n;
    job_node(&n, r->rank, r->groups);
    uint8_t out[JOB_BLK], want[JOB_BLK];
    enum anco_from from;
    block_bytes(r->id, want, JOB_BLK);
    r->ok = anco_acquire(&n, r->id, 0, NULL, out, JOB_BLK, &from) == 0 &&
            memcmp(out, want, JOB_BLK) == 0;
    return NULL;
}

/* every process wants the same block at once: the file system is read at
 * most once per group, and everyone gets the right bytes */
static void test_acquire_at_once(void **state)
{
    (void)state;
    for (uint32_t groups = 1; groups <= 4; groups *= 2)
        for (int round = 0; round < 20; round++) {
            memset(&job, 0, sizeof(job));
            uint64_t id = 1 + (uint64_t)round;
            struct racer r[JOB_RANKS];
            pthread_t th[JOB_RANKS];
            for (uint32_t k = 0; k < JOB_RANKS; k++) {
                r[k] = (struct racer){.rank = k, .groups = groups, .id = id};
                assert_int_equal(pthread_create(&th[k], NULL, racer_main, &r[k]), 0);
            }
            for (uint32_t k = 0; k < JOB_RANKS; k++) {
                pthread_join(th[k], NULL);
                assert_true(r[k].ok);
            }
            int reads = atomic_load(&job.store_reads[id]);
            assert_true(reads >= 1 && reads <= (int)groups);
        }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_acquire_sequence),
    cmocka_unit_test(test_acquire_at_once),
    cmocka_unit_test(test_directory_full),
    cmocka_unit_test(test_ahead),
    cmocka_unit_test(test_ahead_at_once),
    cmocka_unit_test(test_entry_races),
    cmocka_unit_test(test_lru),
    cmocka_unit_test(test_singlet_moves),
    cmocka_unit_test(test_singlet_fifo_limit),
    cmocka_unit_test(test_lists_random),
    cmocka_unit_test(test_cell),
    cmocka_unit_test(test_groups),
    cmocka_unit_test(test_places),
};

PIO_UNIT_MAIN(tests)
