/* dispatcher.c - gas-dispatcher, the gather-arrange-scatter (GAS) server of
 * one compute host: local processes (through libpgas.so) hand it their file
 * requests over a Unix socket (wire.h); it gathers the writes in one
 * sub-buffer per pfs I/O server, arranges each full or expired sub-buffer
 * (arrange.h: sorted by file and offset, contiguous and overlapping writes
 * merged, the later bytes winning) and scatters the sub-buffers to their
 * servers in parallel. It is a PIO application and a pfs client (pfs.h).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Threads:
 *   main        accepts connections (polling 200 ms at a time for the stop
 *               flag), starts one thread per connection.
 *   connection  reads its process's frames in order and serves them: a
 *               WRITE is cut at block and stripe-unit boundaries
 *               (gas_split) and each piece copied into its server's
 *               sub-buffer; the other requests wait for the "barrier" of
 *               their file (below), then run against pfs directly.
 *   flusher     one per I/O server: swaps the filling sub-buffer out when it
 *               is full, when no write came for --interval, or when a
 *               barrier asks, arranges it and writes it with
 *               pfs_batch_write (16 requests in flight), so the servers are
 *               written in parallel while the connections fill the other
 *               half of each double buffer.
 *
 * What goes out: a barrier's flush writes everything. A full or idle
 * buffer writes only its runs of whole units (--unit, 64 KiB of an object)
 * and holds the partial units back for the next flush, where later writes
 * may complete them: how a server's requests are cut then depends on the
 * bytes, not on when the buffer happened to fill (16 processes' 40-byte
 * records, or 4 ranks' interleaved 4 KiB transfers, complete each unit in
 * any order). Held bytes go out at the latest after --max-age. Sizes
 * adapt: a sub-buffer starts at --sub-buffer and doubles after a full
 * flush whose requests merged at least 2 to 1 or whose held bytes filled
 * half of it, up to --sub-buffer-max (within --memory over all servers);
 * after 10 s without a write it returns to the start size.
 *
 * Generations: each server's filling buffer has a generation number; the
 * flusher publishes the generation it finished (done): every generation up
 * to done is applied, so while bytes of generation g are held back, done
 * stays below g. A barrier on a file asks every server of the file's
 * layout to flush what it holds (everything, held bytes too) and waits
 * until done reaches the generation that held the connection's last piece,
 * so every earlier write of that process to that file is applied at the
 * servers. Writes are acknowledged by nothing but the barrier of an fsync,
 * a close or a read; a write that failed at a server marks its file, and
 * the file's next barrier reports it (sticky: the bytes are lost).
 *
 * Locks: srv.mtx guards one server's buffers and generations; files_mtx the
 * table of open files; file.mtx one file's pfs handle and sizes. Order:
 * files_mtx, then file.mtx; srv.mtx is never held with either, nor across a
 * PIO call.
 */
#include "cli.h"
#include "arrange.h"
#include "wire.h"
#include "layout.h"
#include "pfs.h"
#include "capture.h"
#include "mono.h"
#include "parse.h"
#include "sdnotify.h"
#include "srv.h"
#include "pio.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define HANDLES_MAX 1024 /* open files per connection */
#define RDBUF       (GAS_HDR_SIZE + GAS_PAYLOAD_MAX + (256u << 10))

/* ---- configuration and counters ------------------------------------------ */

static struct {
    const char *socket;
    const char *mds;
    const char *cls;
    char name[PIO_NAME_MAX];
    uint64_t sub_buffer;     /* a server's sub-buffer starts with this many bytes */
    uint64_t sub_buffer_max; /* ... and grows while its writes merge, up to this */
    uint64_t memory;         /* ... within this for all servers' buffers */
    uint64_t block;          /* writes are cut at block boundaries */
    uint64_t unit;           /* full and idle flushes write whole units, hold the rest */
    int64_t interval_ns;     /* a sub-buffer without a new write for this long goes out */
    int64_t max_age_ns;      /* partial units are held back at most this long */
    int64_t close_wait_ns;   /* a close waits this long at most for the file's other writers */
    int arrange;
    int any_user;
} cfg = {.sub_buffer = 64u << 10,
         .sub_buffer_max = 8u << 20,
         .memory = 256u << 20,
         .block = 4096,
         .unit = 64u << 10,
         .interval_ns = 100000000,
         .max_age_ns = 30000000000LL,
         .close_wait_ns = 1000000000LL,
         .arrange = 1};

static struct {
    atomic_uint_fast64_t received, bytes, pieces, sent, sent_bytes, pieces_out, held, grown,
        flushes, full, timer, sync, errors, conns;
} ctr;

static pfs_fs *fs;
static volatile int sig_stop;
static atomic_int stopping;
static atomic_uint_fast64_t next_seq;

/* ---- open files ------------------------------------------------------------ */

struct dfile {
    uint64_t fid;
    char path[PFS_PATH_MAX];
    struct pfs_layout lay;
    pthread_mutex_t mtx;
    pfs_file *pf;       /* reads, fsync, truncate */
    uint64_t end;       /* the end of the bytes written through us */
    uint64_t published; /* the size we told the metadata server */
    int err;            /* a write failed at a server: sticky */
    char errtext[256];
    int refs;              /* handles on it, over all connections (files_mtx) */
    int writers;           /* handles that may write and are not closing */
    int64_t last_write_ns; /* when the last write to it came */
    pthread_cond_t quiet;  /* a writer's close: the others re-check */
    struct dfile *next;
};

static pthread_mutex_t files_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct dfile *files;

/* file_fail - remember that a write of file fid failed (the flusher). */
static void file_fail(uint64_t fid, int st, const char *text)
{
    pthread_mutex_lock(&files_mtx);
    for (struct dfile *f = files; f; f = f->next)
        if (f->fid == fid) {
            pthread_mutex_lock(&f->mtx);
            if (!f->err) {
                f->err = st;
                snprintf(f->errtext, sizeof(f->errtext), "%s", text);
            }
            pthread_mutex_unlock(&f->mtx);
        }
    pthread_mutex_unlock(&files_mtx);
}

/* ---- sub-buffers, one per I/O server ----------------------------------------- */

struct sbuf {
    struct gas_req *req;
    size_t nreq, capreq;
    uint8_t *data;
    size_t used, cap;
};

struct server {
    int idx;
    pthread_mutex_t mtx;
    pthread_cond_t work;    /* the flusher waits for a full, idle or wanted buffer */
    pthread_cond_t room;    /* writers wait for the full buffer to be swapped out */
    pthread_cond_t done_cv; /* barriers wait for done to advance */
    struct sbuf fill;       /* connections append here */
    uint64_t gen;           /* generation of fill */
    uint64_t done;          /* every generation <= done is applied */
    uint64_t held_gen;      /* 0, or the oldest generation with bytes held back (below) */
    int64_t last_ns;        /* when fill got its last piece */
    int want;               /* flush everything now: a barrier asks */
    int full;               /* fill is full: flush its whole units */
    atomic_size_t size;     /* bytes of a sub-buffer now (it grows; for gas-stat) */
    pthread_t th;
};

static struct server *srvs;
static int nsrv;
static size_t size_max; /* a sub-buffer grows up to this: --sub-buffer-max within --memory */

/* grow - make room for want items of sz bytes at *p (capacity *cap). */
static int grow(void **p, size_t *cap, size_t want, size_t sz)
{
    if (want <= *cap)
        return 0;
    size_t n = *cap ? *cap : 256;
    while (n < want)
        n *= 2;
    void *q = realloc(*p, n * sz);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

/* sbuf_size - give the empty buffer b cap bytes of data. */
static int sbuf_size(struct sbuf *b, size_t cap)
{
    if (b->cap == cap)
        return 0;
    if (cap == 0) {
        free(b->data);
        b->data = NULL;
        b->cap = 0;
        return 0;
    }
    uint8_t *d = realloc(b->data, cap);
    if (!d)
        return -1;
    b->data = d;
    b->cap = cap;
    return 0;
}

static void sbuf_free(struct sbuf *b)
{
    free(b->req);
    free(b->data);
}

/* server_append - copy one piece into server s's sub-buffer, waiting while
 * it is full and the flusher has not taken it yet. Returns the generation
 * the piece went into. */
static uint64_t server_append(struct server *s, uint64_t fid, uint64_t off, const uint8_t *p,
                              size_t len)
{
    pthread_mutex_lock(&s->mtx);
    struct sbuf *b = &s->fill;
    while (b->used + len > b->cap ||
           grow((void **)&b->req, &b->capreq, b->nreq + 1, sizeof(*b->req)) != 0) {
        s->full = 1;
        pthread_cond_signal(&s->work); /* only the flusher waits there */
        pthread_cond_wait(&s->room, &s->mtx);
    }
    s->last_ns = pfs_now_ns();
    memcpy(b->data + b->used, p, len);
    b->req[b->nreq++] = (struct gas_req){.file = fid,
                                         .off = off,
                                         .len = len,
                                         .seq = atomic_fetch_add(&next_seq, 1),
                                         .data = b->data + b->used,
                                         .count = 1};
    b->used += len;
    uint64_t gen = s->gen;
    if (b->used == b->cap) { /* exactly full: go now */
        s->full = 1;
        pthread_cond_signal(&s->work);
    }
    pthread_mutex_unlock(&s->mtx);
    return gen;
}

/* server_barrier - wait until generation gen of s is applied, asking for a
 * flush of everything while gen's pieces are still filling or held back. */
static void server_barrier(struct server *s, uint64_t gen)
{
    pthread_mutex_lock(&s->mtx);
    while (s->done < gen) {
        int filling = gen == s->gen && s->fill.nreq > 0;
        int held = s->held_gen && s->held_gen <= gen;
        if (gen == s->gen && !filling && !held)
            break; /* nothing of gen is here */
        if ((filling || held) && !s->want) {
            s->want = 1;
            pthread_cond_signal(&s->work);
        }
        pthread_cond_wait(&s->done_cv, &s->mtx);
    }
    pthread_mutex_unlock(&s->mtx);
}

/* server_flush - wait until everything s holds now is applied. */
static void server_flush(struct server *s)
{
    pthread_mutex_lock(&s->mtx);
    uint64_t gen = s->fill.nreq > 0 ? s->gen : s->gen - 1;
    pthread_mutex_unlock(&s->mtx);
    server_barrier(s, gen);
}

/* What one flusher owns: the buffer it writes, the bytes it holds back, and
 * the arrays of the arrange step (grown to the largest flush seen). */
struct flusher {
    struct sbuf out;  /* the swapped-out sub-buffer */
    struct sbuf held; /* partial units held back for later writes to complete */
    int64_t held_ns;  /* when the oldest held bytes were written (about) */
    struct gas_req *v;
    struct gas_extent *ext;
    pfs_extent *pe;
    size_t capv, capext, cappe;
    uint8_t *merged;
    size_t capm;
    size_t size; /* the sub-buffer size now */
    pfs_batch *batch;
};

/* hold - keep bytes [off, off + len) of file fid (at p) for the next flush;
 * they stand for count writes. The room was made beforehand. */
static void hold(struct flusher *fl, uint64_t fid, uint64_t off, uint64_t len, const uint8_t *p,
                 uint32_t count)
{
    struct sbuf *h = &fl->held;
    memcpy(h->data + h->used, p, (size_t)len);
    /* seq 0: older than every write still to come, and held extents never overlap */
    h->req[h->nreq++] = (struct gas_req){
        .file = fid, .off = off, .len = len, .seq = 0, .data = h->data + h->used, .count = count};
    h->used += (size_t)len;
}

/* flush_out - write fl->out (and what fl->held kept) to server s. Arranged,
 * a flush that is not `all` (a full or idle buffer) writes only the runs of
 * whole units and holds the partial units back: a later write may complete
 * them, so how the requests are cut does not depend on when the flush came.
 * Returns 1 when the sub-buffer should grow (its requests keep merging, or
 * held bytes fill half of it). */
static int flush_out(struct server *s, struct flusher *fl, int all)
{
    struct sbuf *b = &fl->out, *h = &fl->held;
    size_t nin = h->nreq + b->nreq, n = 0, k = 0, nheld = 0;
    uint64_t pieces = 0, bytes = 0, partial = 0;
    int grow_it = 0;
    if (!cfg.arrange) { /* gathering off: every piece its own request, in order */
        if (grow((void **)&fl->pe, &fl->cappe, b->nreq + 1, sizeof(*fl->pe)) != 0)
            goto nomem;
        for (size_t i = 0; i < b->nreq; i++)
            fl->pe[i] = (pfs_extent){.fid = b->req[i].file,
                                     .off = b->req[i].off,
                                     .len = b->req[i].len,
                                     .data = b->req[i].data};
        k = b->nreq;
        pieces = b->nreq;
        bytes = b->used;
        goto write;
    }
    if (grow((void **)&fl->v, &fl->capv, nin, sizeof(*fl->v)) != 0 ||
        grow((void **)&fl->ext, &fl->capext, nin, sizeof(*fl->ext)) != 0 ||
        grow((void **)&fl->pe, &fl->cappe, 2 * nin + 1, sizeof(*fl->pe)) != 0 ||
        grow((void **)&fl->merged, &fl->capm, h->used + b->used, 1) != 0)
        goto nomem;
    memcpy(fl->v, h->req, h->nreq * sizeof(*fl->v));
    memcpy(fl->v + h->nreq, b->req, b->nreq * sizeof(*fl->v));
    if (gas_arrange(fl->v, nin, fl->ext, &n, fl->merged, fl->capm) != 0)
        goto nomem;        /* cannot happen: the merged bytes never exceed the pieces' */
    h->nreq = h->used = 0; /* its bytes are in merged now */
    if (!all) {
        for (size_t i = 0; i < n; i++) {
            uint64_t lo, hi;
            gas_whole_blocks(fl->ext[i].off, fl->ext[i].len, cfg.unit, &lo, &hi);
            partial += fl->ext[i].len - (hi - lo);
        }
        if (partial > fl->size / 2) {
            if (fl->size < size_max)
                grow_it = 1;
            else
                all = 1; /* as large as it gets: no more holding back */
        }
    }
    if (!all && (grow((void **)&h->req, &h->capreq, 2 * n, sizeof(*h->req)) != 0 ||
                 (h->cap < partial && sbuf_size(h, (size_t)partial) != 0)))
        all = 1; /* no memory to hold: write it all */
    for (size_t i = 0; i < n; i++) {
        const struct gas_extent *e = &fl->ext[i];
        const uint8_t *p = fl->merged + e->pos;
        uint64_t lo = e->off, hi = e->off + e->len;
        if (!all)
            gas_whole_blocks(e->off, e->len, cfg.unit, &lo, &hi);
        if (hi == lo) { /* no whole unit: held back, all of it */
            hold(fl, e->file, e->off, e->len, p, e->nreq);
            nheld++;
            continue;
        }
        fl->pe[k++] =
            (pfs_extent){.fid = e->file, .off = lo, .len = hi - lo, .data = p + (lo - e->off)};
        pieces += e->nreq;
        bytes += hi - lo;
        if (lo > e->off) /* the partial units at its ends stand for no write of their own */
            hold(fl, e->file, e->off, lo - e->off, p, 0), nheld++;
        if (hi < e->off + e->len)
            hold(fl, e->file, hi, e->off + e->len - hi, p + (hi - e->off), 0), nheld++;
    }
    /* merging pays: a larger buffer would merge more */
    if (!all && nin >= 2 * (k + nheld) && fl->size < size_max)
        grow_it = 1;
write:
    atomic_fetch_add(&ctr.sent, k);
    atomic_fetch_add(&ctr.sent_bytes, bytes);
    atomic_fetch_add(&ctr.pieces_out, pieces);
    atomic_fetch_add(&ctr.held, nheld);
    atomic_fetch_add(&ctr.flushes, 1);
    int rc = k ? pfs_batch_write(fl->batch, s->idx, fl->pe, k) : PIO_OK;
    if (rc == PIO_OK)
        return grow_it;
    atomic_fetch_add(&ctr.errors, 1);
    char text[256];
    snprintf(text, sizeof(text), "%s", pfs_errtext()[0] ? pfs_errtext() : PIO_Strerror(rc));
    pfs_log("writing to I/O server %s: %s", pfs_server_name(fs, s->idx), text);
    for (size_t i = 0; i < k; i++) /* every file of the flush: which part failed is unknown */
        if (i == 0 || fl->pe[i].fid != fl->pe[i - 1].fid)
            file_fail(fl->pe[i].fid, rc, text);
    return 0;
nomem:
    /* out of memory for the arrange step: the pieces go as they are */
    atomic_fetch_add(&ctr.errors, 1);
    pfs_log("server %d: out of memory arranging a sub-buffer: its writes fail", s->idx);
    for (size_t i = 0; i < b->nreq; i++)
        if (i == 0 || b->req[i].file != b->req[i - 1].file)
            file_fail(b->req[i].file, PIO_ENOMEM, "out of memory in the dispatcher");
    for (size_t i = 0; i < h->nreq; i++)
        file_fail(h->req[i].file, PIO_ENOMEM, "out of memory in the dispatcher");
    h->nreq = h->used = 0;
    return 0;
}

/* flusher_free - the flusher's arrays and buffers (keeping none). */
static void flusher_free(struct flusher *fl)
{
    sbuf_free(&fl->out);
    sbuf_free(&fl->held);
    free(fl->v);
    free(fl->ext);
    free(fl->pe);
    free(fl->merged);
    pfs_batch_free(fl->batch);
    memset(fl, 0, sizeof(*fl));
}

#define QUIET_SHRINK_NS                                                                            \
    (10 * 1000000000LL) /* after this long without a write: back to the start size */

static void *flusher(void *arg)
{
    struct server *s = arg;
    struct flusher fl = {.size = (size_t)cfg.sub_buffer};
    if (sbuf_size(&fl.out, fl.size) != 0 || pfs_batch_new(fs, &fl.batch) != PIO_OK) {
        pfs_log("server %d: out of memory: its writes will not go out", s->idx);
        flusher_free(&fl);
        atomic_store(&stopping, 1);
        return NULL;
    }
    pthread_mutex_lock(&s->mtx);
    for (;;) {
        int64_t now = pfs_now_ns();
        int filled = s->fill.nreq > 0, held = fl.held.nreq > 0;
        int idle = (filled || held) && now - s->last_ns >= cfg.interval_ns;
        int aged = held && now - fl.held_ns >= cfg.max_age_ns;
        int all = s->want || aged || atomic_load(&stopping);
        if ((filled && (s->full || idle || all)) || (held && all)) {
            struct sbuf t = s->fill; /* swap: the connections fill the other half */
            s->fill = fl.out;
            fl.out = t;
            uint64_t gen = s->gen++;
            atomic_fetch_add(s->want ? &ctr.sync : all || !s->full ? &ctr.timer : &ctr.full, 1);
            s->want = s->full = 0;
            pthread_cond_broadcast(&s->room);
            pthread_mutex_unlock(&s->mtx);
            int more = flush_out(s, &fl, all);
            fl.out.nreq = fl.out.used = 0;
            if (fl.held.nreq > 0 && !held)
                fl.held_ns = now;
            if (more && fl.size < size_max) {
                fl.size = fl.size * 2 < size_max ? fl.size * 2 : size_max;
                atomic_store(&s->size, fl.size);
                atomic_fetch_add(&ctr.grown, 1);
            }
            sbuf_size(&fl.out, fl.size); /* on failure it keeps its old size */
            pthread_mutex_lock(&s->mtx);
            if (fl.held.nreq == 0) {
                s->held_gen = 0;
                s->done = gen;
            } else {
                if (!s->held_gen)
                    s->held_gen = gen; /* else an older one may still be held */
                s->done = s->held_gen - 1;
            }
            pthread_cond_broadcast(&s->done_cv);
            continue;
        }
        if (atomic_load(&stopping) && !filled && !held)
            break;
        s->want = 0; /* asked while the last flush took everything: nothing left to do */
        if (!filled && !held && fl.size > cfg.sub_buffer && now - s->last_ns >= QUIET_SHRINK_NS) {
            fl.size = (size_t)cfg.sub_buffer; /* quiet: give the memory back */
            atomic_store(&s->size, fl.size);
            sbuf_size(&fl.out, fl.size);
            free(fl.merged), fl.merged = NULL, fl.capm = 0;
            sbuf_size(&fl.held, 0);
        }
        int64_t wait = 200000000;
        if (filled)
            wait = s->last_ns + cfg.interval_ns - now;
        if (held && fl.held_ns + cfg.max_age_ns - now < wait)
            wait = fl.held_ns + cfg.max_age_ns - now;
        if (wait > 200000000)
            wait = 200000000;
        struct timespec ts;
        pio_deadline_mono(&ts, wait > 0 ? wait : 0);
        pthread_cond_timedwait(&s->work, &s->mtx, &ts);
    }
    pthread_mutex_unlock(&s->mtx);
    flusher_free(&fl);
    return NULL;
}

/* ---- one connection ----------------------------------------------------------- */

struct handle {
    struct dfile *f; /* NULL: a directory (dir holds its path) */
    char *dir;
    int acc; /* GAS_O_RDONLY / WRONLY / RDWR */
    int append;
    int writer;                    /* counted in f->writers */
    uint64_t gen[PFS_STRIPES_MAX]; /* per stripe: generation of our last piece there */
    int dirty;
};

struct conn {
    int fd;
    uint8_t *rb;
    size_t pos, end;
    struct handle *h[HANDLES_MAX];
    uint8_t *out; /* reply payloads (reads) */
};

/* need - make n bytes available at c->rb + c->pos: 0, or -1 at EOF / error. */
static int need(struct conn *c, size_t n)
{
    if (c->end - c->pos >= n)
        return 0;
    if (c->pos > 0) {
        memmove(c->rb, c->rb + c->pos, c->end - c->pos);
        c->end -= c->pos;
        c->pos = 0;
    }
    while (c->end < n) {
        ssize_t k = read(c->fd, c->rb + c->end, RDBUF - c->end);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c->end += (size_t)k;
    }
    return 0;
}

static int send_all(int fd, struct iovec *iov, int n)
{
    while (n > 0) {
        ssize_t k = writev(fd, iov, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        while (n > 0 && (size_t)k >= iov->iov_len) {
            k -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (uint8_t *)iov->iov_base + k;
            iov->iov_len -= (size_t)k;
        }
    }
    return 0;
}

/* send_reply - rep (op, id, status and plen set here) and its payload. */
static int send_reply(struct conn *c, const struct gas_hdr *q, struct gas_hdr *rep, int status,
                      const void *payload, size_t plen)
{
    if (q->id == 0)
        return 0; /* an asynchronous write: nobody waits */
    rep->op = GAS_OP_REPLY;
    rep->id = q->id;
    rep->status = status;
    rep->plen = (uint32_t)plen;
    uint8_t hdr[GAS_HDR_SIZE];
    gas_hdr_encode(rep, hdr);
    struct iovec iov[2] = {{hdr, sizeof(hdr)}, {(void *)payload, plen}};
    return send_all(c->fd, iov, plen ? 2 : 1);
}

/* reply - answer request q: rep's fields, status, and payload (or, on
 * failure, the text: pfs's own words when it has some). */
static int reply(struct conn *c, const struct gas_hdr *q, struct gas_hdr *rep, int status,
                 const void *payload, size_t plen)
{
    char text[320];
    if (status != PIO_OK) {
        const char *why = pfs_errtext();
        snprintf(text, sizeof(text), "%s", why[0] ? why : PIO_Strerror(status));
        payload = text;
        plen = strlen(text);
    }
    return send_reply(c, q, rep, status, payload, plen);
}

/* fail_text - answer q with status and a text of our own. */
static int fail_text(struct conn *c, const struct gas_hdr *q, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail_text(struct conn *c, const struct gas_hdr *q, int status, const char *fmt, ...)
{
    char text[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    struct gas_hdr rep = {0};
    return send_reply(c, q, &rep, status, text, strlen(text));
}

/* barrier - every earlier write of handle h applied at the servers; then
 * the file's sticky error, if any (text into *why). */
static int barrier(struct handle *h, char *why, size_t cap)
{
    struct dfile *f = h->f;
    if (h->dirty) {
        for (uint32_t i = 0; i < f->lay.count; i++)
            server_barrier(&srvs[f->lay.servers[i]], h->gen[i]);
        h->dirty = 0;
    }
    pthread_mutex_lock(&f->mtx);
    int err = f->err;
    snprintf(why, cap, "%s", f->errtext);
    pthread_mutex_unlock(&f->mtx);
    return err;
}

/* close_together - a writer closes file f while other processes of the
 * host still write it (MPI ranks closing a shared file one after the
 * other): wait until they close it too, or it has had no write for
 * --interval, at most --close-wait, so that one barrier flushes the units
 * they complete together instead of the first close cutting them. */
static void close_together(struct handle *h)
{
    struct dfile *f = h->f;
    if (!h->writer)
        return;
    pthread_mutex_lock(&f->mtx);
    f->writers--;
    h->writer = 0;
    pthread_cond_broadcast(&f->quiet);
    int64_t until = pfs_now_ns() + cfg.close_wait_ns;
    for (;;) {
        int64_t now = pfs_now_ns(), end = f->last_write_ns + cfg.interval_ns;
        if (f->writers == 0 || now >= end || now >= until)
            break;
        struct timespec ts;
        pio_deadline_mono(&ts, (end < until ? end : until) - now);
        pthread_cond_timedwait(&f->quiet, &f->mtx, &ts);
    }
    pthread_mutex_unlock(&f->mtx);
}

/* publish - tell the metadata server the size we wrote to (grow-only). */
static int publish(struct dfile *f)
{
    pthread_mutex_lock(&f->mtx);
    uint64_t end = f->end;
    int rc = PIO_OK;
    if (end > f->published && (rc = pfs_grow(fs, f->fid, end)) == PIO_OK)
        f->published = end;
    pthread_mutex_unlock(&f->mtx);
    return rc;
}

static void file_put(struct dfile *f)
{
    pthread_mutex_lock(&files_mtx);
    if (--f->refs > 0) {
        pthread_mutex_unlock(&files_mtx);
        return;
    }
    for (struct dfile **p = &files; *p; p = &(*p)->next)
        if (*p == f) {
            *p = f->next;
            break;
        }
    pthread_mutex_unlock(&files_mtx);
    pfs_close(f->pf);
    pthread_mutex_destroy(&f->mtx);
    pthread_cond_destroy(&f->quiet);
    free(f);
}

/* open_dir - a read-only handle on directory path (cp opens its target
 * directory to write into it by name). */
static int open_dir(struct conn *c, const struct gas_hdr *q, const char *path, int slot)
{
    pfs_stat st;
    struct gas_hdr rep = {0};
    int rc = pfs_stat_path(fs, path, &st);
    if (rc != PIO_OK)
        return reply(c, q, &rep, rc, NULL, 0);
    struct handle *h = calloc(1, sizeof(*h));
    if (!h || !(h->dir = strdup(path))) {
        free(h);
        return fail_text(c, q, PIO_ENOMEM, "out of memory");
    }
    c->h[slot] = h;
    rep.handle = (uint32_t)slot;
    rep.len = GAS_MODE_DIR | (st.mode & 07777);
    rep.aux = (uint64_t)st.mtime_ns;
    return reply(c, q, &rep, PIO_OK, NULL, 0);
}

/* handle_free - forget handle i of c (closing its file if it has one). */
static void handle_free(struct conn *c, int i)
{
    struct handle *h = c->h[i];
    c->h[i] = NULL;
    if (h->f && h->writer) {
        pthread_mutex_lock(&h->f->mtx);
        h->f->writers--;
        pthread_cond_broadcast(&h->f->quiet);
        pthread_mutex_unlock(&h->f->mtx);
    }
    if (h->f)
        file_put(h->f);
    free(h->dir);
    free(h);
}

/* do_dir - a request on a directory handle. */
static int do_dir(struct conn *c, const struct gas_hdr *q, struct handle *h)
{
    struct gas_hdr rep = {0};
    pfs_stat st;
    int rc;
    switch (q->op) {
    case GAS_OP_CLOSE: handle_free(c, (int)q->handle); return reply(c, q, &rep, PIO_OK, NULL, 0);
    case GAS_OP_FSYNC: return reply(c, q, &rep, PIO_OK, NULL, 0);
    case GAS_OP_FSTAT:
        if ((rc = pfs_stat_path(fs, h->dir, &st)) == PIO_OK) {
            rep.len = GAS_MODE_DIR | (st.mode & 07777);
            rep.aux = (uint64_t)st.mtime_ns;
        }
        return reply(c, q, &rep, rc, NULL, 0);
    default: return fail_text(c, q, PIO_EISDIR, "%s: is a directory", h->dir);
    }
}

/* do_open - open or create q's path; the file is shared with the other
 * handles on it (keyed by fid). */
static int do_open(struct conn *c, const struct gas_hdr *q, const char *path)
{
    int slot = -1;
    for (int i = 1; i < HANDLES_MAX && slot < 0; i++)
        if (!c->h[i])
            slot = i;
    if (slot < 0)
        return fail_text(c, q, PIO_EBUSY, "%s: more than %d files open", path, HANDLES_MAX - 1);
    int acc = q->flags & 3;
    /* our handle reads and writes whatever the process may do: the
     * process's access mode is checked here, per request */
    int fl = PFS_RDWR | (q->flags & GAS_O_CREAT ? PFS_CREAT : 0) |
             (q->flags & GAS_O_EXCL ? PFS_EXCL : 0) |
             (q->flags & GAS_O_TRUNC && acc != GAS_O_RDONLY ? PFS_TRUNC : 0);
    pfs_file *pf;
    int rc = pfs_open(fs, path, fl, (uint32_t)q->aux, &pf);
    struct gas_hdr rep = {0};
    if (rc == PIO_EISDIR && acc == GAS_O_RDONLY)
        return open_dir(c, q, path, slot);
    if (rc != PIO_OK)
        return reply(c, q, &rep, rc, NULL, 0);
    pfs_stat st;
    pfs_fstat(pf, &st);
    struct handle *h = calloc(1, sizeof(*h));
    if (!h) {
        pfs_close(pf);
        return fail_text(c, q, PIO_ENOMEM, "out of memory");
    }
    pthread_mutex_lock(&files_mtx);
    struct dfile *f = files;
    while (f && f->fid != st.fid)
        f = f->next;
    if (f) {
        f->refs++;
        pthread_mutex_unlock(&files_mtx);
        if (fl & PFS_TRUNC) { /* the objects were cut: so is what we knew */
            pthread_mutex_lock(&f->mtx);
            f->end = f->published = 0;
            pthread_mutex_unlock(&f->mtx);
        }
        pfs_close(pf);
    } else if ((f = calloc(1, sizeof(*f)))) {
        f->fid = st.fid;
        snprintf(f->path, sizeof(f->path), "%s", path);
        f->lay.stripe_size = st.stripe.stripe_size;
        f->lay.count = st.stripe.count;
        memcpy(f->lay.servers, st.stripe.servers, sizeof(f->lay.servers));
        pthread_mutex_init(&f->mtx, NULL);
        pio_cond_init_mono(&f->quiet);
        f->pf = pf;
        f->end = f->published = st.size;
        f->refs = 1;
        f->next = files;
        files = f;
        pthread_mutex_unlock(&files_mtx);
    } else {
        pthread_mutex_unlock(&files_mtx);
        pfs_close(pf);
        free(h);
        return fail_text(c, q, PIO_ENOMEM, "out of memory");
    }
    h->f = f;
    h->acc = acc;
    if (acc != GAS_O_RDONLY) {
        h->writer = 1;
        pthread_mutex_lock(&f->mtx);
        f->writers++;
        pthread_mutex_unlock(&f->mtx);
    }
    h->append = (q->flags & GAS_O_APPEND) != 0;
    c->h[slot] = h;
    rep.handle = (uint32_t)slot;
    rep.off = st.size;
    rep.len = st.mode & 07777;
    rep.aux = (uint64_t)st.mtime_ns;
    return reply(c, q, &rep, PIO_OK, NULL, 0);
}

/* do_write - gather the bytes into the sub-buffers of their servers. */
static void do_write(struct handle *h, uint64_t off, const uint8_t *p, uint64_t len)
{
    struct dfile *f = h->f;
    atomic_fetch_add(&ctr.received, 1);
    atomic_fetch_add(&ctr.bytes, len);
    for (uint64_t done = 0; done < len;) {
        struct pfs_piece pc = gas_split(&f->lay, cfg.block, off + done, len - done);
        h->gen[pc.stripe] =
            server_append(&srvs[f->lay.servers[pc.stripe]], f->fid, pc.obj_off, p + done, pc.len);
        atomic_fetch_add(&ctr.pieces, 1);
        done += pc.len;
    }
    h->dirty = 1;
    pthread_mutex_lock(&f->mtx);
    f->last_write_ns = pfs_now_ns();
    if (off + len > f->end)
        f->end = off + len;
    pthread_mutex_unlock(&f->mtx);
}

static void attrs(struct dfile *f, struct gas_hdr *rep, int *rc)
{
    pfs_stat st;
    pthread_mutex_lock(&f->mtx);
    *rc = pfs_fstat(f->pf, &st);
    pthread_mutex_unlock(&f->mtx);
    pfs_stat now;
    if (pfs_stat_path(fs, f->path, &now) == PIO_OK && now.fid == f->fid)
        st = now; /* another host may have grown it */
    pthread_mutex_lock(&f->mtx);
    rep->off = st.size > f->end ? st.size : f->end;
    pthread_mutex_unlock(&f->mtx);
    rep->len = st.mode & 07777;
    rep->aux = (uint64_t)st.mtime_ns;
}

static void stats_text(char *buf, size_t cap, int reset)
{
#define C(x) (unsigned long long)(reset ? atomic_exchange(&ctr.x, 0) : atomic_load(&ctr.x))
    unsigned long long sent = C(sent), out = C(pieces_out);
    size_t now = 0;
    for (int i = 0; i < nsrv; i++)
        if (atomic_load(&srvs[i].size) > now)
            now = atomic_load(&srvs[i].size);
    /* merged: the pieces that reached a server inside another's request */
    snprintf(buf, cap,
             "gas received=%llu bytes=%llu pieces=%llu sent=%llu sent_bytes=%llu merged=%llu "
             "held=%llu grown=%llu flushes=%llu full=%llu timer=%llu sync=%llu errors=%llu "
             "connections=%llu arrange=%s sub_buffer=%llu sub_buffer_max=%llu sub_buffer_now=%llu "
             "block=%llu unit=%llu interval_ms=%lld servers=%d",
             C(received), C(bytes), C(pieces), sent, C(sent_bytes), out > sent ? out - sent : 0,
             C(held), C(grown), C(flushes), C(full), C(timer), C(sync), C(errors), C(conns),
             cfg.arrange ? "on" : "off", (unsigned long long)cfg.sub_buffer,
             (unsigned long long)size_max, (unsigned long long)now, (unsigned long long)cfg.block,
             (unsigned long long)cfg.unit, (long long)(cfg.interval_ns / 1000000), nsrv);
#undef C
}

/* serve - one request (its payload at p). Returns -1 when the connection
 * must end (the peer is gone). */
static int serve(struct conn *c, const struct gas_hdr *q, const uint8_t *p)
{
    struct gas_hdr rep = {0};
    char path[PFS_PATH_MAX], why[256];
    int rc = PIO_OK;
    if (q->op == GAS_OP_OPEN || q->op == GAS_OP_STAT || q->op == GAS_OP_UNLINK ||
        q->op == GAS_OP_STATFS) {
        if (q->plen == 0 || q->plen >= sizeof(path) || p[0] != '/' || memchr(p, 0, q->plen))
            return fail_text(c, q, PIO_EINVAL, "bad path");
        memcpy(path, p, q->plen);
        path[q->plen] = '\0';
        if (q->op == GAS_OP_OPEN)
            return do_open(c, q, path);
        if (q->op == GAS_OP_UNLINK)
            return reply(c, q, &rep,
                         q->flags & GAS_F_DIR ? pfs_rmdir(fs, path) : pfs_unlink(fs, path), NULL,
                         0);
        pfs_stat st;
        rc = pfs_stat_path(fs, path, &st);
        if (rc == PIO_OK && q->op == GAS_OP_STATFS) {
            /* the space of every I/O server, as `pfs df` sums it */
            for (int i = 0; i < pfs_nservers(fs) && rc == PIO_OK; i++) {
                uint64_t u = 0, a = 0, o = 0;
                rc = pfs_df(fs, i, &u, &a, &o);
                rep.off += u, rep.len += a, rep.aux += o;
            }
            return reply(c, q, &rep, rc, NULL, 0);
        }
        if (rc == PIO_OK) {
            rep.off = st.size;
            rep.len = (st.is_dir ? GAS_MODE_DIR : 0) | (st.mode & 07777);
            rep.aux = (uint64_t)st.mtime_ns;
        }
        return reply(c, q, &rep, rc, NULL, 0);
    }
    if (q->op == GAS_OP_STATS) {
        char text[1024];
        stats_text(text, sizeof(text), (q->flags & GAS_F_RESET) != 0);
        return reply(c, q, &rep, PIO_OK, text, strlen(text));
    }
    if (q->op == GAS_OP_REPLY)
        return fail_text(c, q, PIO_EPROTO, "a reply is not a request");
    struct handle *h = q->handle < HANDLES_MAX ? c->h[q->handle] : NULL;
    if (!h)
        return fail_text(c, q, PIO_EINVAL, "no open file with handle %u", q->handle);
    if (!h->f)
        return do_dir(c, q, h);
    struct dfile *f = h->f;
    switch (q->op) {
    case GAS_OP_WRITE:
        if (h->acc == GAS_O_RDONLY)
            return fail_text(c, q, PIO_EINVAL, "%s: opened read-only", f->path);
        do_write(h, q->off, p, q->len);
        if (!(q->flags & GAS_F_SYNC))
            return q->id ? reply(c, q, &rep, PIO_OK, NULL, 0) : 0;
        rc = barrier(h, why, sizeof(why));
        return rc ? fail_text(c, q, rc, "%s: %s", f->path, why)
                  : reply(c, q, &rep, PIO_OK, NULL, 0);
    case GAS_OP_READ: {
        if (h->acc == GAS_O_WRONLY)
            return fail_text(c, q, PIO_EINVAL, "%s: opened write-only", f->path);
        rc = barrier(h, why, sizeof(why));
        if (rc)
            return fail_text(c, q, rc, "%s: %s", f->path, why);
        /* other handles' writes on this host count too: flush the file's servers */
        for (uint32_t i = 0; i < f->lay.count; i++)
            server_flush(&srvs[f->lay.servers[i]]);
        size_t want = q->len < GAS_PAYLOAD_MAX ? (size_t)q->len : GAS_PAYLOAD_MAX, got = 0;
        if ((rc = publish(f)) == PIO_OK) {
            pthread_mutex_lock(&f->mtx);
            rc = pfs_pread(f->pf, c->out, want, q->off, &got);
            pthread_mutex_unlock(&f->mtx);
        }
        rep.off = got;
        return reply(c, q, &rep, rc, c->out, rc == PIO_OK ? got : 0);
    }
    case GAS_OP_FSYNC:
    case GAS_OP_CLOSE:
    case GAS_OP_TRUNC:
        if (q->op == GAS_OP_CLOSE)
            close_together(h);
        rc = barrier(h, why, sizeof(why));
        if (rc) {
            snprintf(path, sizeof(path), "%s", f->path);
            if (q->op == GAS_OP_CLOSE)
                handle_free(c, (int)q->handle);
            return fail_text(c, q, rc, "%s: %s", path, why);
        }
        if (q->op == GAS_OP_TRUNC) {
            if (h->acc == GAS_O_RDONLY)
                return fail_text(c, q, PIO_EINVAL, "%s: opened read-only", f->path);
            pthread_mutex_lock(&f->mtx);
            rc = pfs_ftruncate(f->pf, q->off);
            if (rc == PIO_OK)
                f->end = f->published = q->off;
            pthread_mutex_unlock(&f->mtx);
        } else if (q->op == GAS_OP_FSYNC) {
            pthread_mutex_lock(&f->mtx);
            rc = pfs_fsync(f->pf);
            pthread_mutex_unlock(&f->mtx);
        }
        if (rc == PIO_OK)
            rc = publish(f);
        if (q->op == GAS_OP_CLOSE)
            handle_free(c, (int)q->handle);
        return reply(c, q, &rep, rc, NULL, 0);
    case GAS_OP_FSTAT: attrs(f, &rep, &rc); return reply(c, q, &rep, rc, NULL, 0);
    default: return fail_text(c, q, PIO_ENOSYS, "%s is not a request", gas_op_name(q->op));
    }
}

static void *connection(void *arg)
{
    struct conn *c = arg;
    atomic_fetch_add(&ctr.conns, 1);
    for (;;) {
        struct gas_hdr q;
        if (need(c, GAS_HDR_SIZE) != 0)
            break;
        if (gas_hdr_decode(c->rb + c->pos, &q) != 0) {
            pfs_log("a process sent something that is not a GAS frame: connection closed");
            break;
        }
        if (need(c, GAS_HDR_SIZE + q.plen) != 0)
            break;
        pio_capture("gas", c->rb + c->pos, GAS_HDR_SIZE + q.plen);
        const uint8_t *p = c->rb + c->pos + GAS_HDR_SIZE;
        c->pos += GAS_HDR_SIZE + q.plen;
        if (serve(c, &q, p) != 0)
            break;
    }
    /* the process is gone (or misbehaved): its writes still go out, its files close */
    for (int i = 1; i < HANDLES_MAX; i++)
        if (c->h[i]) {
            char why[256];
            if (c->h[i]->f) {
                barrier(c->h[i], why, sizeof(why));
                publish(c->h[i]->f);
            }
            handle_free(c, i);
        }
    close(c->fd);
    free(c->rb);
    free(c->out);
    free(c);
    return NULL;
}

/* ---- main ----------------------------------------------------------------- */

static void usage(FILE *o)
{
    fprintf(
        o,
        "usage: gas-dispatcher [OPTIONS]\n"
        "  --socket PATH      where processes connect (default $GAS_SOCKET, else %s)\n"
        "  --mds APP          the pfs metadata server (default $PFS_MDS, else pfs.mds)\n"
        "  --class NAME       service class of our requests (default $PFS_CLASS)\n"
        "  --name APP         our PIO application name (default gas.HOST)\n"
        "  --sub-buffer SIZE  an I/O server's sub-buffer starts this large (default 64K; 4K..64M)\n"
        "  --sub-buffer-max SIZE  it grows while its writes merge, up to this (default 8M)\n"
        "  --memory SIZE      all sub-buffers together stay within this (default 256M)\n"
        "  --block SIZE       writes are cut at block boundaries (default 4K)\n"
        "  --unit SIZE        full and idle flushes write whole units, hold the rest (default "
        "64K)\n"
        "  --interval MS      a sub-buffer without a new write this long goes out (default 100)\n"
        "  --max-age MS       partial units are held back at most this long (default 30000)\n"
        "  --close-wait MS    a close waits for the file's other active writers (default 1000)\n"
        "  --no-arrange       send requests as they came (no sort, no merge)\n"
        "  --any-user         accept processes of every user (default: our own only)\n",
        GAS_SOCKET_DEFAULT);
}

static int bad(const char *what, const char *arg)
{
    fprintf(stderr, "gas-dispatcher: bad %s '%s' (gas-dispatcher --help)\n", what, arg);
    return 2;
}

static int parse(int argc, char **argv)
{
    static const struct option lo[] = {{"socket", required_argument, NULL, 's'},
                                       {"mds", required_argument, NULL, 'm'},
                                       {"class", required_argument, NULL, 'c'},
                                       {"name", required_argument, NULL, 'n'},
                                       {"sub-buffer", required_argument, NULL, 'b'},
                                       {"sub-buffer-max", required_argument, NULL, 'B'},
                                       {"memory", required_argument, NULL, 'M'},
                                       {"max-age", required_argument, NULL, 'a'},
                                       {"close-wait", required_argument, NULL, 'w'},
                                       {"block", required_argument, NULL, 'k'},
                                       {"unit", required_argument, NULL, 'u'},
                                       {"interval", required_argument, NULL, 'i'},
                                       {"no-arrange", no_argument, NULL, 'A'},
                                       {"any-user", no_argument, NULL, 'U'},
                                       {"help", no_argument, NULL, 'h'},
                                       {"version", no_argument, NULL, 'V'},
                                       {NULL, 0, NULL, 0}};
    int o, max_set = 0;
    long v;
    while ((o = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (o) {
        case 's': cfg.socket = optarg; break;
        case 'm': cfg.mds = optarg; break;
        case 'c': cfg.cls = optarg; break;
        case 'n': snprintf(cfg.name, sizeof(cfg.name), "%s", optarg); break;
        case 'b':
            if (pio_parse_bytes(optarg, &cfg.sub_buffer) != 0 || cfg.sub_buffer < 4096 ||
                cfg.sub_buffer > (64u << 20))
                return bad("--sub-buffer", optarg);
            break;
        case 'B':
            if (pio_parse_bytes(optarg, &cfg.sub_buffer_max) != 0 || cfg.sub_buffer_max < 4096 ||
                cfg.sub_buffer_max > (1u << 30))
                return bad("--sub-buffer-max", optarg);
            max_set = 1;
            break;
        case 'M':
            if (pio_parse_bytes(optarg, &cfg.memory) != 0 || cfg.memory < (1u << 20))
                return bad("--memory", optarg);
            break;
        case 'a':
            if (pio_parse_int(optarg, 1, 86400000, &v) != 0)
                return bad("--max-age", optarg);
            cfg.max_age_ns = v * 1000000;
            break;
        case 'u':
            if (pio_parse_bytes(optarg, &cfg.unit) != 0 || cfg.unit < 8 || cfg.unit > (64u << 20))
                return bad("--unit", optarg);
            break;
        case 'w':
            if (pio_parse_int(optarg, 0, 3600000, &v) != 0)
                return bad("--close-wait", optarg);
            cfg.close_wait_ns = v * 1000000;
            break;
        case 'k':
            if (pio_parse_bytes(optarg, &cfg.block) != 0 || cfg.block < 8 ||
                cfg.block > (64u << 20))
                return bad("--block", optarg);
            break;
        case 'i':
            if (pio_parse_int(optarg, 1, 3600000, &v) != 0)
                return bad("--interval", optarg);
            cfg.interval_ns = v * 1000000;
            break;
        case 'A': cfg.arrange = 0; break;
        case 'U': cfg.any_user = 1; break;
        case 'h': usage(stdout); exit(0);
        case 'V': exit(pio_cli_version("gas-dispatcher"));
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc)
        return bad("argument", argv[optind]);
    if (cfg.block > cfg.sub_buffer) {
        fprintf(stderr, "gas-dispatcher: --block must not exceed --sub-buffer\n");
        return 2;
    }
    if (cfg.unit % cfg.block != 0) {
        fprintf(stderr, "gas-dispatcher: --unit must be a multiple of --block\n");
        return 2;
    }
    if (!max_set && cfg.sub_buffer_max < cfg.sub_buffer)
        cfg.sub_buffer_max = cfg.sub_buffer; /* a larger start than the default limit */
    if (cfg.sub_buffer_max < cfg.sub_buffer) {
        fprintf(stderr, "gas-dispatcher: --sub-buffer-max must not be below --sub-buffer\n");
        return 2;
    }
    if (!cfg.socket)
        cfg.socket = getenv("GAS_SOCKET") ? getenv("GAS_SOCKET") : GAS_SOCKET_DEFAULT;
    if (!cfg.name[0]) {
        char host[64];
        gethostname(host, sizeof(host));
        host[sizeof(host) - 1] = '\0';
        snprintf(cfg.name, sizeof(cfg.name), "gas.%.40s", host);
    }
    return 0;
}

static int listen_on(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path)) {
        fprintf(stderr, "gas-dispatcher: socket path too long: %s\n", path);
        return -1;
    }
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    /* a socket file nobody answers on is a leftover of a dispatcher that died */
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
        fprintf(stderr, "gas-dispatcher: another dispatcher is serving %s\n", path);
        close(fd);
        return -1;
    }
    unlink(path);
    mode_t old = umask(cfg.any_user ? 0 : 077);
    int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (rc != 0 || listen(fd, 128) != 0) {
        fprintf(stderr, "gas-dispatcher: %s: %s\n", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* accept_one - a connection from a process of ours (or anyone's with
 * --any-user), served by its own thread. */
static void accept_one(int lfd)
{
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return;
    struct ucred cr;
    socklen_t len = sizeof(cr);
    if (!cfg.any_user &&
        (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || cr.uid != getuid())) {
        pfs_log("refused a process of another user (uid %d): --any-user admits them", (int)cr.uid);
        close(fd);
        return;
    }
    struct conn *c = calloc(1, sizeof(*c));
    if (c) {
        c->rb = malloc(RDBUF);
        c->out = malloc(GAS_PAYLOAD_MAX);
    }
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (!c || !c->rb || !c->out || (c->fd = fd, pthread_create(&th, &at, connection, c) != 0)) {
        pfs_log("cannot serve a new process: out of memory or threads");
        if (c) {
            free(c->rb);
            free(c->out);
        }
        free(c);
        close(fd);
    }
    pthread_attr_destroy(&at);
}

int main(int argc, char **argv)
{
    int rc = parse(argc, argv);
    if (rc)
        return rc;
    pfs_log_name("gas-dispatcher");
    pfs_srv_signals(&sig_stop);
    if ((rc = PIO_Init(cfg.name, 0, 1)) != PIO_OK) {
        fprintf(stderr, "gas-dispatcher: PIO_Init(%s): %s\n", cfg.name, PIO_Strerror(rc));
        return 1;
    }
    if ((rc = pfs_mount(cfg.mds, cfg.cls, &fs)) != PIO_OK) {
        fprintf(stderr, "gas-dispatcher: mount: %s\n",
                pfs_errtext()[0] ? pfs_errtext() : PIO_Strerror(rc));
        PIO_Exit();
        return 1;
    }
    nsrv = pfs_nservers(fs);
    /* three buffers of a server at its largest: the one filling, the one
     * going out and the arranged copy (plus what is held back, at most half) */
    size_max = (size_t)cfg.sub_buffer_max;
    if (nsrv > 0 && cfg.memory / (4u * (uint64_t)nsrv) < size_max)
        size_max = (size_t)(cfg.memory / (4u * (uint64_t)nsrv));
    if (size_max < cfg.sub_buffer)
        size_max = (size_t)cfg.sub_buffer;
    srvs = calloc((size_t)nsrv, sizeof(*srvs));
    int lfd = srvs ? listen_on(cfg.socket) : -1;
    if (lfd < 0) {
        pfs_umount(fs);
        PIO_Exit();
        return 1;
    }
    int started = 0;
    for (; started < nsrv; started++) {
        struct server *s = &srvs[started];
        s->idx = started;
        s->gen = 1;
        pthread_mutex_init(&s->mtx, NULL);
        pio_cond_init_mono(&s->work);
        pthread_cond_init(&s->room, NULL);
        pthread_cond_init(&s->done_cv, NULL);
        atomic_store(&s->size, (size_t)cfg.sub_buffer);
        if (sbuf_size(&s->fill, (size_t)cfg.sub_buffer) != 0 ||
            pthread_create(&s->th, NULL, flusher, s) != 0)
            break;
    }
    if (started < nsrv) {
        fprintf(stderr, "gas-dispatcher: cannot start the flushers (out of memory?)\n");
        atomic_store(&stopping, 1);
    } else {
        pfs_log("serving %s: %d I/O servers, sub-buffer %llu growing to %llu, block %llu, "
                "interval %lld ms%s",
                cfg.socket, nsrv, (unsigned long long)cfg.sub_buffer, (unsigned long long)size_max,
                (unsigned long long)cfg.block, (long long)(cfg.interval_ns / 1000000),
                cfg.arrange ? "" : ", no arrangement");
        pio_sd_ready();
    }
    while (!sig_stop && !atomic_load(&stopping)) {
        struct pollfd pf = {.fd = lfd, .events = POLLIN};
        if (poll(&pf, 1, 200) > 0)
            accept_one(lfd);
    }
    close(lfd);
    unlink(cfg.socket);
    /* what is gathered goes out; connections still open are cut by exit */
    atomic_store(&stopping, 1);
    for (int i = 0; i < started; i++) {
        pthread_mutex_lock(&srvs[i].mtx);
        pthread_cond_signal(&srvs[i].work);
        pthread_mutex_unlock(&srvs[i].mtx);
        pthread_join(srvs[i].th, NULL);
    }
    pfs_log("stopped");
    PIO_Exit();
    return 0;
}
