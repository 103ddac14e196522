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
 *               is full, older than --interval, or a barrier asks, arranges
 *               it and writes it with pfs_batch_write (16 requests in
 *               flight), so the servers are written in parallel while the
 *               connections fill the other half of each double buffer.
 *
 * Generations: each server's filling buffer has a generation number; the
 * flusher publishes the generation it finished (done). A barrier on a file
 * asks every server of the file's layout to flush what it holds and waits
 * until done reaches the generation that held the connection's last piece,
 * so every earlier write of that process to that file is applied at the
 * servers. Writes of a write-only open are acknowledged by nothing but the
 * barrier of its fsync or close; a write that failed at a server marks its
 * file, and the file's next barrier reports it (sticky: the bytes are lost).
 *
 * Locks: srv.mtx guards one server's buffers and generations; files_mtx the
 * table of open files; file.mtx one file's pfs handle and sizes. Order:
 * files_mtx, then file.mtx; srv.mtx is never held with either, nor across a
 * PIO call.
 */
#include "arrange.h"
#include "wire.h"
#include "layout.h"
#include "pfs.h"
#include "capture.h"
#include "mono.h"
#include "parse.h"
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
    uint64_t sub_buffer; /* bytes of one sub-buffer */
    uint64_t block;      /* writes are cut at block boundaries */
    int64_t interval_ns; /* a sub-buffer older than this is flushed */
    int arrange;
    int any_user;
} cfg = {.sub_buffer = 64u << 10, .block = 4096, .interval_ns = 100000000, .arrange = 1};

static struct {
    atomic_uint_fast64_t received, bytes, pieces, sent, sent_bytes, merged, flushes, full, timer,
        sync, errors, conns;
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
    int refs; /* handles on it, over all connections (files_mtx) */
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
    size_t used;
};

struct server {
    int idx;
    pthread_mutex_t mtx;
    pthread_cond_t work;    /* the flusher waits for a full, old or wanted buffer */
    pthread_cond_t room;    /* writers wait for the full buffer to be swapped out */
    pthread_cond_t done_cv; /* barriers wait for done to advance */
    struct sbuf fill;       /* connections append here */
    uint64_t gen;           /* generation of fill */
    uint64_t done;          /* every generation <= done is applied */
    int64_t first_ns;       /* when fill got its first piece */
    int want;               /* flush fill now: a barrier or a full buffer asks */
    int full;               /* ... because it was full */
    pthread_t th;
};

static struct server *srvs;
static int nsrv;

static int sbuf_init(struct sbuf *b)
{
    b->capreq = cfg.sub_buffer / 8 + 16; /* room for 8-byte pieces */
    b->req = malloc(b->capreq * sizeof(*b->req));
    b->data = malloc(cfg.sub_buffer);
    b->nreq = b->used = 0;
    return b->req && b->data ? 0 : -1;
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
    while (s->fill.used + len > cfg.sub_buffer || s->fill.nreq == s->fill.capreq) {
        s->want = s->full = 1;
        pthread_cond_signal(&s->work); /* only the flusher waits there */
        pthread_cond_wait(&s->room, &s->mtx);
    }
    struct sbuf *b = &s->fill;
    if (b->nreq == 0)
        s->first_ns = pfs_now_ns();
    memcpy(b->data + b->used, p, len);
    b->req[b->nreq++] = (struct gas_req){.file = fid,
                                         .off = off,
                                         .len = len,
                                         .seq = atomic_fetch_add(&next_seq, 1),
                                         .data = b->data + b->used};
    b->used += len;
    uint64_t gen = s->gen;
    if (b->used == cfg.sub_buffer) { /* exactly full: go now */
        s->want = s->full = 1;
        pthread_cond_signal(&s->work);
    }
    pthread_mutex_unlock(&s->mtx);
    return gen;
}

/* server_barrier - wait until generation gen of s is applied, asking for a
 * flush if it is still filling. */
static void server_barrier(struct server *s, uint64_t gen)
{
    pthread_mutex_lock(&s->mtx);
    if (gen == s->gen && s->fill.nreq > 0) {
        s->want = 1;
        pthread_cond_signal(&s->work);
    }
    while (s->done < gen && !(gen == s->gen && s->fill.nreq == 0))
        pthread_cond_wait(&s->done_cv, &s->mtx);
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

/* flush_out - arrange b (unless --no-arrange) and write it to server s. */
static void flush_out(struct server *s, pfs_batch *batch, struct sbuf *b, struct gas_extent *ext,
                      pfs_extent *out, uint8_t *merged)
{
    size_t n = 0;
    if (cfg.arrange) {
        if (gas_arrange(b->req, b->nreq, ext, &n, merged, cfg.sub_buffer) != 0)
            n = 0; /* cannot happen: the merged bytes never exceed the pieces' */
        for (size_t i = 0; i < n; i++)
            out[i] = (pfs_extent){.fid = ext[i].file,
                                  .off = ext[i].off,
                                  .len = ext[i].len,
                                  .data = merged + ext[i].pos};
    } else {
        for (size_t i = 0; i < b->nreq; i++)
            out[i] = (pfs_extent){.fid = b->req[i].file,
                                  .off = b->req[i].off,
                                  .len = b->req[i].len,
                                  .data = b->req[i].data};
        n = b->nreq;
    }
    atomic_fetch_add(&ctr.sent, n);
    atomic_fetch_add(&ctr.sent_bytes, b->used);
    atomic_fetch_add(&ctr.merged, b->nreq - n);
    atomic_fetch_add(&ctr.flushes, 1);
    int rc = pfs_batch_write(batch, s->idx, out, n);
    if (rc == PIO_OK)
        return;
    atomic_fetch_add(&ctr.errors, 1);
    char text[256];
    snprintf(text, sizeof(text), "%s", pfs_errtext()[0] ? pfs_errtext() : PIO_Strerror(rc));
    pfs_log("writing to I/O server %s: %s", pfs_server_name(fs, s->idx), text);
    for (size_t i = 0; i < b->nreq;
         i++) /* every file of the buffer: which part failed is unknown */
        if (i == 0 || b->req[i].file != b->req[i - 1].file)
            file_fail(b->req[i].file, rc, text);
}

static void *flusher(void *arg)
{
    struct server *s = arg;
    struct sbuf out;
    pfs_batch *batch = NULL;
    size_t cap = cfg.sub_buffer / 8 + 16;
    struct gas_extent *ext = malloc(cap * sizeof(*ext));
    pfs_extent *pe = malloc(cap * sizeof(*pe));
    uint8_t *merged = malloc(cfg.sub_buffer);
    if (sbuf_init(&out) != 0 || !ext || !pe || !merged || pfs_batch_new(fs, &batch) != PIO_OK) {
        pfs_log("server %d: out of memory: its writes will not go out", s->idx);
        atomic_store(&stopping, 1);
        return NULL;
    }
    pthread_mutex_lock(&s->mtx);
    for (;;) {
        int64_t now = pfs_now_ns();
        int expired = s->fill.nreq > 0 && now - s->first_ns >= cfg.interval_ns;
        if (s->fill.nreq > 0 && (s->want || expired || atomic_load(&stopping))) {
            struct sbuf t = s->fill; /* swap: the connections fill the other half */
            s->fill = out;
            out = t;
            uint64_t gen = s->gen++;
            atomic_fetch_add(s->full ? &ctr.full : s->want ? &ctr.sync : &ctr.timer, 1);
            s->want = s->full = 0;
            pthread_cond_broadcast(&s->room);
            pthread_mutex_unlock(&s->mtx);
            flush_out(s, batch, &out, ext, pe, merged);
            out.nreq = out.used = 0;
            pthread_mutex_lock(&s->mtx);
            s->done = gen;
            pthread_cond_broadcast(&s->done_cv);
            continue;
        }
        if (atomic_load(&stopping) && s->fill.nreq == 0)
            break;
        struct timespec ts;
        int64_t wait = s->fill.nreq > 0 ? s->first_ns + cfg.interval_ns - now : 200000000;
        if (wait > 200000000)
            wait = 200000000;
        pio_deadline_mono(&ts, wait > 0 ? wait : 0);
        pthread_cond_timedwait(&s->work, &s->mtx, &ts);
    }
    pthread_mutex_unlock(&s->mtx);
    pfs_batch_free(batch);
    sbuf_free(&out);
    free(ext);
    free(pe);
    free(merged);
    return NULL;
}

/* ---- one connection ----------------------------------------------------------- */

struct handle {
    struct dfile *f; /* NULL: a directory (dir holds its path) */
    char *dir;
    int acc; /* GAS_O_RDONLY / WRONLY / RDWR */
    int append;
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
    snprintf(buf, cap,
             "gas received=%llu bytes=%llu pieces=%llu sent=%llu sent_bytes=%llu merged=%llu "
             "flushes=%llu full=%llu timer=%llu sync=%llu errors=%llu connections=%llu "
             "arrange=%s sub_buffer=%llu block=%llu interval_ms=%lld servers=%d",
             C(received), C(bytes), C(pieces), C(sent), C(sent_bytes), C(merged), C(flushes),
             C(full), C(timer), C(sync), C(errors), C(conns), cfg.arrange ? "on" : "off",
             (unsigned long long)cfg.sub_buffer, (unsigned long long)cfg.block,
             (long long)(cfg.interval_ns / 1000000), nsrv);
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
    fprintf(o,
            "usage: gas-dispatcher [OPTIONS]\n"
            "  --socket PATH      where processes connect (default $GAS_SOCKET, else %s)\n"
            "  --mds APP          the pfs metadata server (default $PFS_MDS, else pfs.mds)\n"
            "  --class NAME       service class of our requests (default $PFS_CLASS)\n"
            "  --name APP         our PIO application name (default gas.HOST)\n"
            "  --sub-buffer SIZE  bytes of one I/O server's sub-buffer (default 64K; 4K..64M)\n"
            "  --block SIZE       writes are cut at block boundaries (default 4K)\n"
            "  --interval MS      a sub-buffer older than this is flushed (default 100)\n"
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
                                       {"block", required_argument, NULL, 'k'},
                                       {"interval", required_argument, NULL, 'i'},
                                       {"no-arrange", no_argument, NULL, 'A'},
                                       {"any-user", no_argument, NULL, 'U'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
    int o;
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
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc)
        return bad("argument", argv[optind]);
    if (cfg.block > cfg.sub_buffer) {
        fprintf(stderr, "gas-dispatcher: --block must not exceed --sub-buffer\n");
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
        if (sbuf_init(&s->fill) != 0 || pthread_create(&s->th, NULL, flusher, s) != 0)
            break;
    }
    if (started < nsrv) {
        fprintf(stderr, "gas-dispatcher: cannot start the flushers (out of memory?)\n");
        atomic_store(&stopping, 1);
    } else {
        pfs_log("serving %s: %d I/O servers, sub-buffer %llu, block %llu, interval %lld ms%s",
                cfg.socket, nsrv, (unsigned long long)cfg.sub_buffer, (unsigned long long)cfg.block,
                (long long)(cfg.interval_ns / 1000000), cfg.arrange ? "" : ", no arrangement");
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
