/* anco.c - anco's public interface (anco.h) over PIO windows: the process's
 * cache array, its local map and lists, and the one-sided operations the
 * acquire and give-up paths (core.c) call.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Windows, created by every process in this order (PIO numbers windows by
 * creation order, as MPI does): 0 the cache array (entries of a 16-byte
 * header and a block), 1 this process's rows of the representative
 * directory, 2 this process's slots of its group's alternative directory,
 * 3 the barrier's counters (only rank 0's is used). All are zeroed
 * memory: an empty cache and empty directories.
 *
 * A read (anco_pread) takes the process's lock and, block by block: a
 * block in the local map is copied from the local array (a local hit, to
 * the general list's head); else an entry is taken (a free one, or the
 * lists' victim, given up first: anco_give_up) and filled by anco_acquire
 * from another process's cache or the store. The lock is held across the
 * one-sided operations (down the layers, never up: no callback runs under
 * it); other threads of the process wait, other processes never do.
 *
 * Read-ahead: each open file remembers where this process's last pread
 * ended, the last block it read and how many blocks in a row followed each
 * other. In a pread that starts where the last one ended, from the third
 * block of such a run (one block read in pieces counts once), the process,
 * after serving the block, looks at the next ra_blocks blocks it has not
 * looked at yet and loads those that no process holds or is loading
 * (anco_ahead: the same claims, so still one store read per group). Why:
 * on demand, the loader of block b + 1 first had to get block b, so the
 * store (a slow shared link) idled between loads while claims, copies and
 * the reader's own work went on; with claims a few blocks ahead some load
 * is always under way. Random and strided readers do not start it: their
 * preads do not continue each other (a strided one leaves gaps; one large
 * random pread over three blocks continues nothing), and whole-block random
 * preads would need three neighbours in a row. ra_blocks is at most a
 * quarter of the cache, so the blocks loaded ahead do not push out the ones
 * being read.
 *
 * Block IDs: a file is known by a 64-bit hash of its path and size, a
 * block by mix(file hash + index); 0 is no block. Two different blocks
 * with one ID would mix data: at 64 bits that needs about 2^32 blocks in
 * one job before it is likely.
 *
 * The barrier (anco_barrier): every process adds 1 to rank 0's arrival
 * word (fetch-and-add) and polls it with gets until it reaches size x the
 * number of barriers so far. anco_finalize's order is explained there. */
#include "anco.h"

#include "core.h"
#include "dir.h"
#include "entry.h"
#include "internal.h"
#include "lists.h"
#include "store.h"
#include "err.h"
#include "parse.h"
#include "pio.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEF_BLOCK    (1u << 20)
#define DEF_CACHE    (64ull << 20)
#define DEF_ROWS     65536
#define DEF_AHEAD    4   /* blocks read ahead (ANCO_READAHEAD) */
#define AHEAD_RUN    2   /* neighbouring blocks after the first that start it */
#define PAUSE_US     200 /* between polls of a loading cell or the barrier */
#define LOAD_WAIT_S  60  /* a loading cell this long: read around it */
#define BARRIER_WAIT 600 /* seconds (ANCO_BARRIER_TIMEOUT) */
#define BAR_ARRIVE   0   /* rank 0's barrier window: arrivals */
#define BAR_LEFT     8   /* departures (anco_finalize) */
#define BAR_SEEN     16  /* departures seen by ranks other than 0 */
#define BAR_BYTES    64
#define RACE_WAIT_NS 30000000000 /* the test hook's wait for the other side */

struct anco {
    pthread_mutex_t mtx;
    uint32_t rank, size;
    uint64_t block;
    uint32_t nent, rows;
    uint32_t ra_blocks; /* read-ahead: blocks past the one read (0: off) */
    int joined;         /* anco_init called PIO_Init */
    void *mem[ANCO_WINS];
    size_t len[ANCO_WINS];
    PIO_Win win[ANCO_WINS];
    struct anco_node node;
    struct anco_lists lists;
    uint64_t *ids;           /* nent: the block each entry holds (0: none) */
    int32_t *bucket, *chain; /* the local map: id -> entry, chained */
    uint32_t nbucket;
    uint8_t *bounce;   /* one block: acquire's output */
    uint64_t barriers; /* barriers passed */
    int barrier_s;
    char *race_dir; /* $ANCO_TEST_RACE_DIR: the fault hook (tests only) */
};

struct anco_file {
    anco *a;
    const struct anco_store_ops *ops;
    void *h;
    uint64_t size, fid;
    /* read-ahead: where the last pread ended, the last block read
     * (UINT64_MAX: none), how many blocks in a row before it followed each
     * other, the first block not looked at for read-ahead yet; whether the
     * pread under way continues the last one */
    uint64_t ra_end, ra_last, ra_next;
    uint32_t ra_run;
    int ra_cont;
};

/* what store_read needs to find a block */
struct blk_src {
    anco_file *f;
    uint64_t index;
};

/* ---- configuration ---------------------------------------------------- */

void anco_config_default(anco_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->singlet_ratio = -1;
}

static int env_bytes(const char *name, uint64_t def, uint64_t lo, uint64_t hi, uint64_t *out)
{
    const char *s = getenv(name);
    if (!s || !*s) {
        *out = def;
        return 0;
    }
    if (pio_parse_bytes(s, out) != 0 || *out < lo || *out > hi) {
        fprintf(stderr, "anco: %s=%s: want bytes from %llu to %llu (K, M, G allowed)\n", name, s,
                (unsigned long long)lo, (unsigned long long)hi);
        return -1;
    }
    return 0;
}

static int env_ratio(double *out)
{
    const char *s = getenv("ANCO_SINGLET");
    if (!s || !*s) {
        *out = 0.5;
        return 0;
    }
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    if (errno || end == s || *end || !(*out >= 0 && *out <= 1)) {
        fprintf(stderr, "anco: ANCO_SINGLET=%s: want a ratio from 0 to 1\n", s);
        return -1;
    }
    return 0;
}

/* resolve - cfg with the environment's and the defaults' values filled in */
static int resolve(const anco_config *in, int size, anco_config *c)
{
    anco_config d;
    if (!in) {
        anco_config_default(&d);
        in = &d;
    }
    *c = *in;
    uint64_t v;
    if (!c->block) {
        if (env_bytes("ANCO_BLOCK", DEF_BLOCK, 64, 1ull << 30, &v) != 0)
            return -1;
        c->block = v;
    }
    if (!c->cache_bytes) {
        if (env_bytes("ANCO_CACHE", DEF_CACHE, 1, 1ull << 40, &v) != 0)
            return -1;
        c->cache_bytes = v;
    }
    if (!c->groups) {
        if (env_bytes("ANCO_GROUPS", 1, 1, 64, &v) != 0)
            return -1;
        c->groups = (uint32_t)v;
    }
    if (!c->dir_rows) {
        if (env_bytes("ANCO_DIR_ROWS", DEF_ROWS, 16, 1u << 28, &v) != 0)
            return -1;
        c->dir_rows = (uint32_t)v;
    }
    if (c->singlet_ratio < 0 && env_ratio(&c->singlet_ratio) != 0)
        return -1;
    if (!c->app)
        c->app = getenv("ANCO_APP") && *getenv("ANCO_APP") ? getenv("ANCO_APP")
                 : getenv("PIO_APP") && *getenv("PIO_APP") ? getenv("PIO_APP")
                                                           : "anco";
    if (c->block % 8 || c->block < 64 || c->groups < 1 || c->groups > 64 || c->singlet_ratio > 1 ||
        c->cache_bytes < ANCO_ENTRY_HDR + c->block) {
        fprintf(stderr,
                "anco: block %zu (a multiple of 8, >= 64), groups %u (1..64), singlet ratio "
                "%.2f (0..1), cache %zu (at least one block and its header): out of range\n",
                c->block, c->groups, c->singlet_ratio, c->cache_bytes);
        return -1;
    }
    if (c->groups > (uint32_t)size) /* a group without members holds nothing */
        c->groups = (uint32_t)size;
    return 0;
}

/* ---- the one-sided operations core.c calls ---------------------------- */

static void race_hook(anco *a);

static int op_get(void *ctx, enum anco_win w, uint32_t rank, uint64_t disp, void *buf, size_t len)
{
    anco *a = ctx;
    if (w == ANCO_WIN_CACHE && len > ANCO_ENTRY_HDR && a->race_dir)
        race_hook(a); /* in the middle of a checked read: header, [here] data, header */
    return PIO_Get(a->win[w], PIO_SELF, (int)rank, disp, buf, len) == PIO_OK ? 0 : -1;
}

static int op_put(void *ctx, enum anco_win w, uint32_t rank, uint64_t disp, const void *buf,
                  size_t len)
{
    anco *a = ctx;
    return PIO_Put(a->win[w], PIO_SELF, (int)rank, disp, buf, len) == PIO_OK ? 0 : -1;
}

static int op_cas(void *ctx, enum anco_win w, uint32_t rank, uint64_t disp, uint64_t compare,
                  uint64_t swap, uint64_t *old)
{
    anco *a = ctx;
    return PIO_Compare_and_swap(a->win[w], PIO_SELF, (int)rank, disp, compare, swap, old) == PIO_OK
               ? 0
               : -1;
}

static int op_store_read(void *ctx, const void *src, uint64_t id, void *buf, size_t len)
{
    (void)ctx;
    (void)id;
    const struct blk_src *s = src;
    size_t got = 0;
    int rc = s->f->ops->pread(s->f->h, buf, len, s->index * s->f->a->block, &got);
    return rc == PIO_OK && got == len ? 0 : -1;
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static void op_pause(void *ctx)
{
    (void)ctx;
    sleep_us(PAUSE_US);
}

/* race_hook - tests only ($ANCO_TEST_RACE_DIR=D): the first checked remote
 * read of this process, between its header and its data, creates D/go and
 * waits until D/done exists (the test's other process replaces the entry
 * meanwhile), then goes on. Once. */
static void race_hook(anco *a)
{
    char go[4096], done[4096];
    snprintf(go, sizeof(go), "%s/go", a->race_dir);
    snprintf(done, sizeof(done), "%s/done", a->race_dir);
    free(a->race_dir);
    a->race_dir = NULL;
    FILE *f = fopen(go, "w");
    if (f)
        fclose(f);
    struct stat st;
    for (long long waited = 0; stat(done, &st) != 0 && waited < RACE_WAIT_NS; waited += 1000000)
        sleep_us(1000);
}

/* ---- the local map -------------------------------------------------------- */

static uint32_t map_hash(const anco *a, uint64_t id)
{
    return (uint32_t)(anco_mix(id) & (a->nbucket - 1));
}

static int32_t map_find(const anco *a, uint64_t id)
{
    for (int32_t e = a->bucket[map_hash(a, id)]; e >= 0; e = a->chain[e])
        if (a->ids[e] == id)
            return e;
    return -1;
}

static void map_add(anco *a, int32_t e, uint64_t id)
{
    uint32_t h = map_hash(a, id);
    a->ids[e] = id;
    a->chain[e] = a->bucket[h];
    a->bucket[h] = e;
}

static void map_del(anco *a, int32_t e)
{
    int32_t *p = &a->bucket[map_hash(a, a->ids[e])];
    while (*p >= 0 && *p != e)
        p = &a->chain[*p];
    if (*p == e)
        *p = a->chain[e];
    a->ids[e] = 0;
}

/* ---- init and finalize ---------------------------------------------------- */

static void *zeroed(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* destroy - windows and memory; PIO_Exit when anco_init joined (it
 * deregisters the windows left, so they are not freed one by one) */
static void destroy(anco *a)
{
    for (int w = ANCO_WINS - 1; w >= 0; w--)
        if (a->win[w] && !a->joined)
            PIO_Win_free(&a->win[w]);
    if (a->joined)
        PIO_Exit();
    for (int w = 0; w < ANCO_WINS; w++)
        if (a->mem[w])
            munmap(a->mem[w], a->len[w]);
    anco_lists_fini(&a->lists);
    free(a->ids);
    free(a->bucket);
    free(a->chain);
    free(a->bounce);
    free(a->race_dir);
    pthread_mutex_destroy(&a->mtx);
    free(a);
}

int anco_init(const anco_config *cfg, int rank, int size, anco **out)
{
    anco_config c;
    int rc = PIO_OK;
    if (!out || size < 1 || rank < 0 || rank >= size || (uint32_t)size > ANCO_RANK_MAX)
        return PIO_EINVAL;
    if (resolve(cfg, size, &c) != 0)
        return PIO_EINVAL;
    anco *a = calloc(1, sizeof(*a));
    if (!a)
        return PIO_ENOMEM;
    pthread_mutex_init(&a->mtx, NULL);
    a->rank = (uint32_t)rank;
    a->size = (uint32_t)size;
    a->block = c.block;
    a->rows = c.dir_rows;
    uint64_t nent = c.cache_bytes / (ANCO_ENTRY_HDR + c.block);
    PIO_CHECK(nent > INT32_MAX / 2, rc, PIO_EINVAL, fail);
    a->nent = (uint32_t)nent;
    for (a->nbucket = 1; a->nbucket < 2 * a->nent; a->nbucket <<= 1)
        ;
    a->ids = calloc(a->nent, sizeof(*a->ids));
    a->chain = calloc(a->nent, sizeof(*a->chain));
    a->bucket = malloc(a->nbucket * sizeof(*a->bucket));
    a->bounce = malloc(c.block);
    PIO_CHECK(!a->ids || !a->chain || !a->bucket || !a->bounce, rc, PIO_ENOMEM, fail);
    memset(a->bucket, 0xff, a->nbucket * sizeof(*a->bucket)); /* -1: empty */
    PIO_CHECK(anco_lists_init(&a->lists, a->nent, c.singlet_ratio) != 0, rc, PIO_ENOMEM, fail);
    const char *race = getenv("ANCO_TEST_RACE_DIR");
    if (race && *race)
        PIO_CHECK(!(a->race_dir = strdup(race)), rc, PIO_ENOMEM, fail);
    a->barrier_s = BARRIER_WAIT;
    const char *bw = getenv("ANCO_BARRIER_TIMEOUT");
    long v;
    if (bw && *bw) {
        if (pio_parse_int(bw, 1, 86400, &v) != 0) {
            fprintf(stderr, "anco: ANCO_BARRIER_TIMEOUT=%s: want seconds (1..86400)\n", bw);
            rc = PIO_EINVAL;
            goto fail;
        }
        a->barrier_s = (int)v;
    }
    long ahead = DEF_AHEAD;
    const char *ra = getenv("ANCO_READAHEAD");
    if (ra && *ra && pio_parse_int(ra, 0, 1024, &ahead) != 0) {
        fprintf(stderr, "anco: ANCO_READAHEAD=%s: want blocks (0..1024, 0: off)\n", ra);
        rc = PIO_EINVAL;
        goto fail;
    }
    /* a quarter of the cache at most: the blocks loaded ahead go to the
     * LRU's head and must not push out the ones the reader is on */
    a->ra_blocks = (uint32_t)ahead < a->nent / 4 ? (uint32_t)ahead : a->nent / 4;

    PIO_Hostinfo hi;
    if (PIO_Gethostinfo(&hi) == PIO_ENOTINIT) {
        PIO_TRY(PIO_Init(c.app, rank, size), rc, fail);
        a->joined = 1;
    }
    a->len[ANCO_WIN_CACHE] = (size_t)nent * (ANCO_ENTRY_HDR + c.block);
    a->len[ANCO_WIN_DIR] = ANCO_DIR_HDR + (size_t)c.dir_rows * anco_row_bytes(c.groups);
    a->len[ANCO_WIN_ALT] = (size_t)c.dir_rows * ANCO_SLOT_SIZE;
    a->len[ANCO_WIN_BAR] = BAR_BYTES;
    for (int w = 0; w < ANCO_WINS; w++) {
        PIO_CHECK(!(a->mem[w] = zeroed(a->len[w])), rc, PIO_ENOMEM, fail);
        /* the job's own processes only: they are one application */
        PIO_TRY(PIO_Win_create(a->mem[w], a->len[w], PIO_WIN_APP, &a->win[w]), rc, fail);
    }

    struct anco_node *n = &a->node;
    n->rank = a->rank;
    n->size = a->size;
    n->groups = c.groups;
    n->rows = c.dir_rows;
    n->slots = c.dir_rows;
    n->poll_limit = LOAD_WAIT_S * (1000000 / PAUSE_US);
    n->block = c.block;
    n->cache = a->mem[ANCO_WIN_CACHE];
    n->rng = anco_mix(((uint64_t)rank << 32) ^ (uint64_t)time(NULL));
    n->ops = (struct anco_ops){op_get, op_put, op_cas, op_store_read, op_pause, a};
    *out = a;
    return PIO_OK;
fail:
    destroy(a);
    return rc;
}

/* bar_wait - poll rank 0's word at disp until it reaches want */
static int bar_wait(anco *a, uint64_t disp, uint64_t want)
{
    long long waited = 0, limit = (long long)a->barrier_s * 1000000;
    for (long pause = 20;; pause = pause < 2000 ? pause * 2 : pause) {
        uint64_t now;
        int rc = PIO_Get(a->win[ANCO_WIN_BAR], PIO_SELF, 0, disp, &now, sizeof(now));
        if (rc != PIO_OK)
            return rc;
        if (now >= want)
            return PIO_OK;
        if (waited >= limit)
            return PIO_ETIMEDOUT;
        sleep_us(pause);
        waited += pause;
    }
}

int anco_barrier(anco *a)
{
    if (!a)
        return PIO_EINVAL;
    uint64_t old;
    pthread_mutex_lock(&a->mtx);
    uint64_t k = ++a->barriers;
    int rc = PIO_Fetch_and_add(a->win[ANCO_WIN_BAR], PIO_SELF, 0, BAR_ARRIVE, 1, &old);
    if (rc == PIO_OK)
        rc = bar_wait(a, BAR_ARRIVE, k * a->size);
    pthread_mutex_unlock(&a->mtx);
    return rc;
}

int anco_finalize(anco *a)
{
    if (!a)
        return PIO_EINVAL;
    /* PIO_Win_free waits (up to 10 s) for every process that knows the
     * window to acknowledge, so each is freed while those processes are
     * here: all pass a barrier and free their cache and directory windows;
     * all count themselves out on rank 0's barrier window and wait until
     * everyone has (rank 0 until the others have seen it). The barrier windows go last: with
     * PIO_Exit when anco joined PIO for the job (it deregisters without telling anyone), else freed
     * (the others are still in PIO to acknowledge). */
    int rc = anco_barrier(a);
    uint64_t old;
    for (int w = ANCO_WIN_CACHE; w < ANCO_WIN_BAR; w++)
        PIO_Win_free(&a->win[w]);
    if (rc == PIO_OK)
        rc = PIO_Fetch_and_add(a->win[ANCO_WIN_BAR], PIO_SELF, 0, BAR_LEFT, 1, &old);
    if (rc == PIO_OK)
        rc = bar_wait(a, BAR_LEFT, a->size);
    /* rank 0 stays until every other process has seen the count (its last
     * access to rank 0) */
    if (rc == PIO_OK && a->rank != 0)
        rc = PIO_Fetch_and_add(a->win[ANCO_WIN_BAR], PIO_SELF, 0, BAR_SEEN, 1, &old);
    else if (rc == PIO_OK)
        rc = bar_wait(a, BAR_SEEN, a->size - 1);
    destroy(a);
    return rc;
}

/* ---- files and reads ---------------------------------------------------- */

int anco_open(anco *a, const char *path, anco_file **out, uint64_t *size)
{
    if (!a || !path || !*path || !out)
        return PIO_EINVAL;
    anco_file *f = calloc(1, sizeof(*f));
    if (!f)
        return PIO_ENOMEM;
    f->a = a;
    f->ops = anco_store_find(path);
    int rc = f->ops->open(path, &f->h, &f->size);
    if (rc != PIO_OK) {
        free(f);
        return rc;
    }
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a of the path, then the size */
    for (const char *p = path; *p; p++)
        h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
    f->fid = anco_mix(h ^ anco_mix(f->size));
    f->ra_end = f->ra_last = UINT64_MAX;
    if (size)
        *size = f->size;
    *out = f;
    return PIO_OK;
}

int anco_close(anco_file *f)
{
    if (!f)
        return PIO_EINVAL;
    f->ops->close(f->h);
    free(f);
    return PIO_OK;
}

static uint64_t block_id(const anco_file *f, uint64_t index)
{
    uint64_t id = anco_mix(f->fid + index);
    return id ? id : 1;
}

static int is_singlet(void *ctx, int32_t i)
{
    anco *a = ctx;
    return anco_is_singlet(&a->node, a->ids[i], (uint32_t)i);
}

/* take_entry - a free entry, or the victim given up */
static int32_t take_entry(anco *a)
{
    int32_t e = anco_lists_take_free(&a->lists);
    if (e >= 0)
        return e;
    e = anco_lists_victim(&a->lists, is_singlet, a);
    if (e < 0)
        return -1;
    anco_give_up(&a->node, a->ids[e], (uint32_t)e);
    map_del(a, e);
    return e;
}

/* read_ahead - block index of f was just read: follow the run, and when it
 * is long enough, load the blocks up to ra_blocks past index that were not
 * looked at yet and that nobody holds or loads. Best effort: a block that
 * cannot be loaded ahead is read on demand later. */
static void read_ahead(anco_file *f, uint64_t index)
{
    anco *a = f->a;
    if (index == f->ra_last)
        return; /* the same block again, in smaller reads */
    if (f->ra_last != UINT64_MAX && index == f->ra_last + 1) {
        f->ra_run++;
    } else {
        f->ra_run = 0;
        f->ra_next = 0;
    }
    f->ra_last = index;
    if (f->ra_run < AHEAD_RUN || !f->ra_cont || !a->ra_blocks)
        return;
    uint64_t blocks = (f->size + a->block - 1) / a->block, end = index + 1 + a->ra_blocks;
    if (end > blocks)
        end = blocks;
    for (uint64_t b = f->ra_next > index + 1 ? f->ra_next : index + 1; b < end; b++) {
        f->ra_next = b + 1; /* looked at: the next block read looks further on */
        uint64_t id = block_id(f, b), start = b * a->block;
        if (map_find(a, id) >= 0 || !anco_ahead_free(&a->node, id))
            continue;
        int32_t e = take_entry(a);
        if (e < 0)
            return;
        size_t blen = (size_t)(f->size - start < a->block ? f->size - start : a->block);
        struct blk_src src = {f, b};
        int rc = anco_ahead(&a->node, id, (uint32_t)e, &src, a->bounce, blen);
        if (rc == 1) {
            map_add(a, e, id);
            anco_lists_hit(&a->lists, e);
            continue;
        }
        anco_lists_release(&a->lists, e);
        if (rc < 0)
            return; /* the store failed: the on-demand read will say so */
    }
}

/* read_block - bytes [off, off + n) of block index of f into buf */
static int read_block(anco_file *f, uint64_t index, uint64_t off, void *buf, size_t n)
{
    anco *a = f->a;
    uint64_t id = block_id(f, index), start = index * a->block;
    size_t blen = (size_t)(f->size - start < a->block ? f->size - start : a->block);
    int32_t e = map_find(a, id);
    if (e >= 0) {
        memcpy(buf, a->node.cache + anco_entry_disp((uint32_t)e, a->block) + ANCO_ENTRY_HDR + off,
               n);
        anco_lists_hit(&a->lists, e);
        a->node.st.hits_local++;
        read_ahead(f, index);
        return PIO_OK;
    }
    if ((e = take_entry(a)) < 0)
        return PIO_EIO;
    struct blk_src src = {f, index};
    enum anco_from from;
    if (anco_acquire(&a->node, id, (uint32_t)e, &src, a->bounce, blen, &from) != 0) {
        anco_lists_release(&a->lists, e);
        return PIO_EIO;
    }
    map_add(a, e, id);
    anco_lists_hit(&a->lists, e);
    memcpy(buf, a->bounce + off, n); /* before read_ahead reuses the bounce buffer */
    read_ahead(f, index);
    return PIO_OK;
}

int anco_pread(anco_file *f, void *buf, size_t count, uint64_t offset, size_t *got)
{
    if (!f || (!buf && count) || !got)
        return PIO_EINVAL;
    anco *a = f->a;
    int rc = PIO_OK;
    size_t done = 0;
    pthread_mutex_lock(&a->mtx);
    f->ra_cont = offset == f->ra_end;
    while (done < count && offset + done < f->size) {
        uint64_t pos = offset + done, index = pos / a->block, off = pos % a->block;
        uint64_t left = f->size - pos;
        size_t n = (size_t)(a->block - off);
        if (n > count - done)
            n = count - done;
        if (n > left)
            n = (size_t)left;
        if ((rc = read_block(f, index, off, (char *)buf + done, n)) != PIO_OK)
            break;
        done += n;
    }
    f->ra_end = offset + done;
    pthread_mutex_unlock(&a->mtx);
    *got = done;
    return rc;
}

/* ---- statistics ----------------------------------------------------------- */

int anco_get_stats(anco *a, anco_stats *st)
{
    if (!a || !st)
        return PIO_EINVAL;
    pthread_mutex_lock(&a->mtx);
    *st = a->node.st;
    pthread_mutex_unlock(&a->mtx);
    return PIO_OK;
}

void anco_print_stats(anco *a, FILE *f)
{
    anco_stats s;
    if (anco_get_stats(a, &s) != PIO_OK)
        return;
    fprintf(f,
            "anco: rank %u: local %llu remote %llu fs %llu retries %llu stale %llu evictions "
            "%llu polls %llu uncached %llu ahead %llu\n",
            a->rank, (unsigned long long)s.hits_local, (unsigned long long)s.hits_remote,
            (unsigned long long)s.fs_reads, (unsigned long long)s.retries,
            (unsigned long long)s.stale, (unsigned long long)s.evictions,
            (unsigned long long)s.polls, (unsigned long long)s.uncached,
            (unsigned long long)s.ahead);
}

/* ---- tests only (internal.h) ------------------------------------------------ */

int anco_test_replace(anco_file *f, uint64_t from, uint64_t to)
{
    anco *a = f->a;
    int rc = PIO_OK;
    pthread_mutex_lock(&a->mtx);
    int32_t e = map_find(a, block_id(f, from));
    if (e < 0 || to * a->block >= f->size) {
        rc = PIO_EINVAL;
    } else {
        anco_give_up(&a->node, a->ids[e], (uint32_t)e);
        map_del(a, e);
        uint64_t id = block_id(f, to), start = to * a->block;
        size_t blen = (size_t)(f->size - start < a->block ? f->size - start : a->block);
        struct blk_src src = {f, to};
        enum anco_from where;
        if (anco_acquire(&a->node, id, (uint32_t)e, &src, a->bounce, blen, &where) != 0) {
            anco_lists_release(&a->lists, e);
            rc = PIO_EIO;
        } else {
            map_add(a, e, id);
        }
    }
    pthread_mutex_unlock(&a->mtx);
    return rc;
}
