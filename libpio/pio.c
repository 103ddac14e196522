/* pio.c - libpio: the PIO API of an application process.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A process talks to its local piod through one Unix stream socket (wire
 * frames, fstream.h) and one shared-memory pool. The pool's send region is
 * ours to allocate: a large send copies chunk after chunk into it
 * (P_SEND_DATA) as fast as the piod releases ranges (P_RELEASE); a blocking
 * send returns when its last byte is in the pool. The receive region is the
 * piod's: incoming chunks land there (P_MSG_DATA), we copy them into the
 * user's buffer, converting byte order, and free them (P_FREE). Small
 * messages travel inline in the frames.
 *
 * No thread stands between the API and the socket: a thread that sends
 * writes its frame itself (what the socket has no room for waits in g.out),
 * and a thread that waits reads the socket itself when nobody else does (the
 * reader role, g.reader): it handles every frame that comes, for every
 * thread, and broadcasts g.cv. So a small message costs one wake-up here,
 * the waiting thread's. A progress thread takes the reader role only while
 * no API thread wants it (so asynchronous work moves on while the
 * application computes) and hands it over at once when one does (g.want,
 * g.evfd). All shared state is guarded by g.mtx; pool copies run without it,
 * by the reader (a matched message is owned by its request until the
 * request completes).
 * Thread-safety: every public function is thread-safe; PIO_Init and
 * PIO_Exit must not race each other.
 */
#include "pio.h"
#include "err.h"
#include "fstream.h"
#include "partner.h"
#include "pool.h"
#include "types.h"
#include "win.h"
#include "wire/wire.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_SOCKET     "/run/pio/piod.sock"
#define WELCOME_TIMEOUT_MS 5000
#define MAX_PARTNERS       64
#define READER_SLICE_MS    20 /* an API reader re-checks its own condition this often */
#define PROGRESS_IDLE_MS   10 /* the progress thread looks for an idle reader role this often */

enum { READER_NONE = 0, READER_API = 1, READER_PROGRESS = 2 };

enum { REQ_SEND = 1, REQ_RECV = 2, REQ_EXT = 3 /* completed by win.c */ };

struct chunk_note { /* an arrived chunk not copied yet */
    struct chunk_note *next;
    uint64_t msg_off, pool_off, len;
};

struct inmsg {
    struct inmsg *next;
    uint64_t key;
    int partner; /* handle, or -1 */
    char src_app[PIO_WIRE_NAME];
    char src_system[PIO_WIRE_NAME];
    char src_user[PIO_WIRE_NAME];
    uint32_t src_uid, src_gid; /* stamped by the sender's piod */
    uint32_t src_proc;
    int32_t tag;
    uint32_t datatype, flags;
    uint64_t size, count;
    uint8_t *eager;
    struct chunk_note *chunks;
    uint64_t arrived; /* bytes the piod said are in the pool (P_MSG_DATA) */
    uint64_t copied;
    struct pio_request *req; /* the receive it matched */
    int canceled;
};

struct pio_request {
    struct pio_request *next; /* in g.sends or g.recvs */
    int kind;
    int done, status;
    PIO_Status st;
    /* send */
    uint64_t sid, size, next_off;
    const uint8_t *sbuf;
    /* sbuf is the first byte of a block inside a larger array (sub_row > 0):
     * rows of sub_row bytes, sub_ny rows a plane, sub_py bytes from row to
     * row and sub_pz from plane to plane in memory (pio_send_sub) */
    uint64_t sub_row, sub_ny, sub_py, sub_pz;
    int sync, copied_all, done_recv, pumping;
    int verdict; /* a large PIO_USER send waits for the piod to accept its channel */
    /* recv */
    int partner, src, tag, datatype;
    uint8_t *rbuf;
    size_t count;
    struct inmsg *msg;
};

struct copy_job {
    struct copy_job *next;
    struct inmsg *m;
    uint64_t msg_off, pool_off, len;
};

struct partner {
    int named; /* by the application (PIO_Setpartner, PIO_Addpartner) */
    char name[PIO_WIRE_NAME];
    char system[PIO_WIRE_NAME];
    uint32_t nprocs, channels;
    uint8_t *left;
};

struct lookup { /* a pending P_PARTNER or P_INFO_REQ */
    struct lookup *next;
    uint64_t req;
    int done;
    struct pio_frame *f;
};

static struct {
    pthread_mutex_t mtx;
    pthread_cond_t cv;
    int inited, closed;
    int fd;              /* the socket to the piod */
    int evfd;            /* interrupts the reader's poll */
    int reader, want;    /* who reads the socket; API threads waiting for the role */
    int in_pass;         /* the reader is handling frames (it runs the copies after) */
    long spin_us;        /* $PIO_SPIN_US: a reader looks this long before it sleeps */
    struct pio_fin in;   /* the reader's */
    struct pio_fout out; /* frames the socket had no room for */
    pthread_t thr;
    volatile int stop;
    char app[PIO_WIRE_NAME];
    int proc, nprocs;
    struct pio_p_welcome w;
    int have_welcome;
    uint8_t *base;
    size_t size;
    struct pio_ralloc send;
    struct partner partners[MAX_PARTNERS];
    int npartners;
    struct inmsg *msgs, *msgs_tail;
    struct pio_request *recvs, *sends;
    struct copy_job *jobs, *jobs_tail;
    int copying; /* the reader runs copies without the lock (run_jobs) */
    struct lookup *lookups;
    uint64_t next_sid, next_req;
} g = {.mtx = PTHREAD_MUTEX_INITIALIZER, .fd = -1, .evfd = -1};

static pthread_mutex_t init_mtx = PTHREAD_MUTEX_INITIALIZER;

/* ---- small helpers ---- */

static void deadline_after(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static void wake_reader(void)
{
    uint64_t one = 1;
    ssize_t w = write(g.evfd, &one, sizeof(one));
    (void)w;
}

static int ms_until(const struct timespec *dl)
{
    if (!dl)
        return -1;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long ms = (long long)(dl->tv_sec - now.tv_sec) * 1000 +
                   (dl->tv_nsec - now.tv_nsec + 999999) / 1000000;
    return ms < 0 ? 0 : (ms > 1 << 30 ? 1 << 30 : (int)ms);
}

static void reader_pass(int timeout_ms);

/* Wait (g.mtx held) for something to change, up to the deadline (NULL:
 * none): read the socket ourselves when nobody does, else sleep on g.cv.
 * Callers loop on their own condition. Returns PIO_ETIMEDOUT once the
 * deadline has passed. */
static int wait_until(const struct timespec *dl)
{
    if (g.reader == READER_NONE && !g.closed && g.fd >= 0) {
        int ms = ms_until(dl);
        g.reader = READER_API;
        reader_pass(ms < 0 || ms > READER_SLICE_MS ? READER_SLICE_MS : ms);
        g.reader = READER_NONE;
        pthread_cond_broadcast(&g.cv);
        return dl && ms_until(dl) == 0 ? PIO_ETIMEDOUT : PIO_OK;
    }
    int r, wanted = g.reader == READER_PROGRESS;
    if (wanted) {
        g.want++;
        wake_reader(); /* the progress thread hands the role over */
    }
    if (!dl)
        r = pthread_cond_wait(&g.cv, &g.mtx);
    else
        r = pthread_cond_timedwait(&g.cv, &g.mtx, dl);
    if (wanted)
        g.want--;
    return r == ETIMEDOUT ? PIO_ETIMEDOUT : PIO_OK;
}

/* Send a frame to the piod now, or queue it behind what waits (g.mtx held). */
static int out_frame(const struct pio_frame *f)
{
    uint8_t small[4096], *buf = small;
    size_t need = pio_wire_encoded_size(f), len;
    if (need > sizeof(small) && !(buf = malloc(need)))
        return PIO_ENOMEM;
    int rc = pio_wire_encode(f, buf, need, &len);
    if (rc == PIO_OK)
        rc = g.fd < 0 ? PIO_ECLOSED : pio_fout_send(&g.out, g.fd, buf, len);
    if (buf != small)
        free(buf);
    if (rc == PIO_OK && g.out.queued)
        wake_reader(); /* the reader polls for room */
    return rc;
}

static void out_ranges(int type, uint64_t id, uint64_t msg_off, uint64_t off, uint64_t len)
{
    struct pio_frame *f = calloc(1, sizeof(*f));
    if (!f)
        return;
    pio_wire_ranges1(f, type, id, msg_off, off, len);
    out_frame(f);
    free(f);
}

static void out_done(int type, uint64_t id)
{
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = (uint8_t)type;
    f.u.p_done.id = id;
    out_frame(&f);
}

static int partner_by_name(const char *name)
{
    for (int i = 0; i < g.npartners; i++)
        if (strcmp(g.partners[i].name, name) == 0)
            return i;
    return -1;
}

static void req_complete(struct pio_request *r, int status)
{
    if (r->done)
        return;
    r->done = 1;
    r->status = status;
    r->st.error = status;
    pthread_cond_broadcast(&g.cv);
}

static void list_remove_req(struct pio_request **list, struct pio_request *r)
{
    for (struct pio_request **pp = list; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            return;
        }
}

static void msg_remove(struct inmsg *m)
{
    struct inmsg *prev = NULL;
    for (struct inmsg *x = g.msgs; x; prev = x, x = x->next)
        if (x == m) {
            if (prev)
                prev->next = m->next;
            else
                g.msgs = m->next;
            if (g.msgs_tail == m)
                g.msgs_tail = prev;
            return;
        }
}

static void msg_free(struct inmsg *m)
{
    while (m->chunks) {
        struct chunk_note *c = m->chunks;
        m->chunks = c->next;
        free(c);
    }
    free(m->eager);
    free(m);
}

/* ---- matching ---- */

static int msg_matches(const struct inmsg *m, const struct pio_request *r)
{
    return !m->req && !m->canceled && (r->partner == PIO_ANY_PARTNER || m->partner == r->partner) &&
           (r->src == PIO_ANY_PROCESS || (int)m->src_proc == r->src) &&
           (r->tag == PIO_ANY_TAG ? m->tag < PIO_TAG_RESERVED : m->tag == r->tag);
}

static void push_job(struct inmsg *m, uint64_t msg_off, uint64_t pool_off, uint64_t len)
{
    struct copy_job *j = malloc(sizeof(*j));
    if (!j)
        return;
    j->next = NULL;
    j->m = m;
    j->msg_off = msg_off;
    j->pool_off = pool_off;
    j->len = len;
    if (g.jobs_tail)
        g.jobs_tail->next = j;
    else
        g.jobs = j;
    g.jobs_tail = j;
    if (!g.in_pass)
        wake_reader(); /* the reader runs the copies */
}

static void recv_finish(struct pio_request *r)
{
    struct inmsg *m = r->msg;
    r->st.partner = m->partner;
    r->st.source = (int)m->src_proc;
    r->st.uid = m->src_uid;
    r->st.gid = m->src_gid;
    snprintf(r->st.system, sizeof(r->st.system), "%s", m->src_system);
    snprintf(r->st.app, sizeof(r->st.app), "%s", m->src_app);
    snprintf(r->st.user, sizeof(r->st.user), "%s", m->src_user);
    r->st.tag = m->tag;
    r->st.datatype = (int)m->datatype;
    r->st.bytes = m->size;
    size_t es = pio_type_size(r->datatype);
    r->st.count = es ? m->size / es : 0;
    if ((m->flags & PIO_WF_SYNC) && (m->flags & PIO_WF_EAGER))
        out_done(PIO_F_P_CONSUMED, m->key);
    msg_remove(m);
    msg_free(m);
    r->msg = NULL;
    req_complete(r, PIO_OK);
}

/* Bind message m to receive r, or fail r (m stays) when they do not fit. */
static void bind_msg(struct pio_request *r, struct inmsg *m)
{
    list_remove_req(&g.recvs, r);
    if (!pio_type_compatible((int)m->datatype, r->datatype)) {
        r->st.datatype = (int)m->datatype;
        req_complete(r, PIO_ETYPE);
        return;
    }
    size_t es = pio_type_size(r->datatype);
    if (m->size > (uint64_t)r->count * es) {
        r->st.bytes = m->size;
        req_complete(r, PIO_ETRUNC);
        return;
    }
    m->req = r;
    r->msg = m;
    if (m->flags & PIO_WF_EAGER) {
        int big = (m->flags & PIO_WF_BIGEND) != 0;
        if (r->datatype == PIO_BYTE || m->size == 0)
            memcpy(r->rbuf, m->eager, m->size);
        else
            pio_convert(r->rbuf, m->eager, m->size, pio_type_swap_unit((int)m->datatype), big);
        recv_finish(r);
        return;
    }
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_CLAIM;
    f.u.p_done.id = m->key;
    out_frame(&f);
    while (m->chunks) {
        struct chunk_note *c = m->chunks;
        m->chunks = c->next;
        push_job(m, c->msg_off, c->pool_off, c->len);
        free(c);
    }
    if (m->size == 0)
        recv_finish(r);
}

/* A receive with nothing to match that can never match: its source left. */
static int recv_hopeless(const struct pio_request *r)
{
    if (r->partner < 0 || r->src < 0 || r->partner >= g.npartners)
        return 0;
    const struct partner *p = &g.partners[r->partner];
    return (uint32_t)r->src < p->nprocs && p->left && p->left[r->src];
}

static void try_match_recv(struct pio_request *r)
{
    for (struct inmsg *m = g.msgs; m; m = m->next)
        if (msg_matches(m, r)) {
            bind_msg(r, m);
            return;
        }
    if (recv_hopeless(r)) {
        list_remove_req(&g.recvs, r);
        req_complete(r, PIO_EGONE);
    }
}

/* ---- sends ---- */

/* Copy len bytes of r's message from msg_off into the pool at dst. */
static void copy_out(const struct pio_request *r, uint8_t *dst, uint64_t msg_off, uint64_t len)
{
    if (!r->sub_row) {
        memcpy(dst, r->sbuf + msg_off, len);
        return;
    }
    while (len > 0) {
        uint64_t row = msg_off / r->sub_row, in = msg_off % r->sub_row;
        uint64_t n = r->sub_row - in < len ? r->sub_row - in : len;
        memcpy(dst, r->sbuf + (row / r->sub_ny) * r->sub_pz + (row % r->sub_ny) * r->sub_py + in,
               n);
        dst += n;
        msg_off += n;
        len -= n;
    }
}

/* Copy as much of r as the send region allows (g.mtx held on entry and exit;
 * dropped around each copy). */
static void pump(struct pio_request *r)
{
    if (r->pumping || r->done)
        return;
    r->pumping = 1;
    while (r->next_off < r->size && !g.closed) {
        uint64_t len = r->size - r->next_off;
        if (len > g.w.chunk)
            len = g.w.chunk;
        uint64_t off;
        if (pio_ralloc_get(&g.send, len, &off) != PIO_OK)
            break;
        uint64_t msg_off = r->next_off;
        r->next_off += len;
        pthread_mutex_unlock(&g.mtx);
        copy_out(r, g.base + off, msg_off, len);
        pthread_mutex_lock(&g.mtx);
        out_ranges(PIO_F_P_SEND_DATA, r->sid, msg_off, off, len);
    }
    r->pumping = 0;
    if (r->next_off == r->size && !r->copied_all) {
        r->copied_all = 1;
        if ((!r->sync || r->done_recv) && !r->verdict) {
            list_remove_req(&g.sends, r);
            req_complete(r, r->done_recv ? r->status : PIO_OK);
        } else {
            pthread_cond_broadcast(&g.cv);
        }
    }
}

static void pump_all(void)
{
    for (struct pio_request *r = g.sends; r; r = r->next)
        if (!r->copied_all) {
            pump(r);
            return; /* oldest first: later sends wait for it */
        }
}

/* ---- frames from the piod (progress thread, g.mtx held) ---- */

/* Data came for m, which no receive holds. A receive that holds a message
 * of another source with no data yet may take m instead (the held one goes
 * back to the unmatched): a receive open to several sources then completes
 * with what has arrived, instead of waiting for the first announced message
 * while arrived ones hold the piod's buffer space (head-of-line blocking).
 * Order per source is kept: m must be its source's oldest unheld message,
 * and the receive gives up only a message of another source. */
static void steal_for(struct inmsg *m)
{
    for (struct inmsg *e = g.msgs; e && e != m; e = e->next)
        if (!e->req && !e->canceled && e->partner == m->partner && e->src_proc == m->src_proc)
            return; /* an older message of m's source comes first */
    for (struct inmsg *h = g.msgs; h; h = h->next) {
        struct pio_request *r = h->req;
        if (!r || h->arrived || (h->flags & PIO_WF_EAGER) || h->copied ||
            (h->partner == m->partner && h->src_proc == m->src_proc))
            continue;
        h->req = NULL; /* test the receive against m as if it were free */
        r->msg = NULL;
        int fits = msg_matches(m, r) && pio_type_compatible((int)m->datatype, r->datatype) &&
                   m->size <= (uint64_t)r->count * pio_type_size(r->datatype);
        if (!fits) {
            h->req = r;
            r->msg = h;
            continue;
        }
        bind_msg(r, m);
        for (struct pio_request *o = g.recvs; o; o = o->next) /* h is free again */
            if (msg_matches(h, o)) {
                bind_msg(o, h);
                break;
            }
        return;
    }
}

static void on_msg_new(struct pio_p_msg_new *n)
{
    struct inmsg *m = calloc(1, sizeof(*m));
    if (!m)
        return;
    m->key = n->key;
    snprintf(m->src_app, sizeof(m->src_app), "%s", n->src_app);
    snprintf(m->src_system, sizeof(m->src_system), "%s", n->src_system);
    snprintf(m->src_user, sizeof(m->src_user), "%s", n->src_user);
    m->src_uid = n->src_uid;
    m->src_gid = n->src_gid;
    m->partner = partner_by_name(n->src_app);
    m->src_proc = n->src_proc;
    /* a message from that process: it is there (a new run of it may be
     * heard from before the piod's join notice reaches us) */
    if (m->partner >= 0 && g.partners[m->partner].left &&
        n->src_proc < g.partners[m->partner].nprocs)
        g.partners[m->partner].left[n->src_proc] = 0;
    m->tag = n->tag;
    m->datatype = n->datatype;
    m->flags = n->flags;
    m->size = n->size;
    m->count = n->count;
    if (n->flags & PIO_WF_EAGER) {
        m->eager = malloc(n->size ? n->size : 1);
        if (!m->eager) {
            free(m);
            return;
        }
        if (n->size)
            memcpy(m->eager, n->payload, n->size);
        m->arrived = n->size;
    }
    if (g.msgs_tail)
        g.msgs_tail->next = m;
    else
        g.msgs = m;
    g.msgs_tail = m;
    for (struct pio_request *r = g.recvs; r; r = r->next)
        if (msg_matches(m, r)) {
            bind_msg(r, m);
            return;
        }
    if (m->flags & PIO_WF_EAGER)
        steal_for(m); /* complete already: a receive waiting on an empty message may take it */
}

static void on_msg_data(struct pio_p_ranges *pr)
{
    struct inmsg *m;
    for (m = g.msgs; m; m = m->next)
        if (m->key == pr->id)
            break;
    uint64_t msg_off = pr->msg_off;
    for (uint32_t i = 0; i < pr->n; i++) {
        uint64_t off = pr->r[i].off, len = pr->r[i].len;
        if (!m || off < g.w.recv_off || off + len > g.w.recv_off + g.w.recv_len ||
            msg_off + len > m->size) {
            out_ranges(PIO_F_P_FREE, pr->id, msg_off, off, len);
        } else if (m->req) {
            m->arrived += len;
            push_job(m, msg_off, off, len);
        } else {
            m->arrived += len;
            struct chunk_note *c = malloc(sizeof(*c));
            if (c) {
                c->msg_off = msg_off;
                c->pool_off = off;
                c->len = len;
                c->next = m->chunks;
                m->chunks = c;
            }
        }
        msg_off += len;
    }
    if (m && !m->req && !m->canceled && m->arrived)
        steal_for(m);
}

static void on_send_done(struct pio_frame *f)
{
    if (f->flags & PIO_WSD_CANCELLED) { /* an incoming message was cancelled */
        for (struct inmsg *m = g.msgs; m; m = m->next)
            if (m->key == f->u.p_done.id) {
                m->canceled = 1;
                if (m->req) {
                    struct pio_request *r = m->req;
                    r->msg = NULL;
                    m->req = NULL;
                    req_complete(r, f->u.p_done.status);
                }
                while (m->chunks) {
                    struct chunk_note *c = m->chunks;
                    m->chunks = c->next;
                    out_ranges(PIO_F_P_FREE, m->key, c->msg_off, c->pool_off, c->len);
                    free(c);
                }
                break;
            }
        return;
    }
    for (struct pio_request *r = g.sends; r; r = r->next)
        if (r->sid == f->u.p_done.id && (f->flags & PIO_WSD_CHANNEL_OK) &&
            f->u.p_done.status == PIO_OK) {
            r->verdict = 0; /* the piod took the named channel */
            if (r->copied_all && (!r->sync || r->done_recv)) {
                list_remove_req(&g.sends, r);
                req_complete(r, r->done_recv ? r->status : PIO_OK);
            }
            return;
        } else if (r->sid == f->u.p_done.id) {
            r->done_recv = 1;
            r->status = f->u.p_done.status;
            if (r->copied_all || f->u.p_done.status != PIO_OK) {
                list_remove_req(&g.sends, r);
                req_complete(r, f->u.p_done.status);
            }
            return;
        }
}

static void on_event(struct pio_p_event *e)
{
    int p = partner_by_name(e->app);
    if (p < 0 || !g.partners[p].left || e->proc >= g.partners[p].nprocs)
        return;
    g.partners[p].left[e->proc] = e->kind == 2;
    if (e->kind == 2)
        for (struct pio_request *r = g.recvs, *next; r; r = next) {
            next = r->next;
            try_match_recv(r);
        }
}

static FILE *trace_file; /* $PIO_TRACE: one line per frame from the piod */

static void on_frame(const uint8_t *buf, size_t len)
{
    struct pio_frame *f = malloc(sizeof(*f));
    if (!f)
        return;
    if (pio_wire_decode(buf, len, f, NULL) != PIO_OK) {
        if (trace_file)
            fprintf(trace_file, "undecodable frame of %zu bytes\n", len);
        free(f);
        return;
    }
    if (trace_file)
        fprintf(trace_file, "%s id %llu off %llu n %u r0 %llu+%llu\n", pio_wire_type_name(f->type),
                (unsigned long long)(f->type == PIO_F_P_MSG_NEW ? f->u.p_msg_new.key
                                                                : f->u.p_ranges.id),
                (unsigned long long)f->u.p_ranges.msg_off, f->u.p_ranges.n,
                (unsigned long long)f->u.p_ranges.r[0].off,
                (unsigned long long)f->u.p_ranges.r[0].len);
    switch (f->type) {
    case PIO_F_P_WELCOME:
        g.w = f->u.p_welcome;
        g.have_welcome = 1;
        break;
    case PIO_F_P_PARTNER_INFO:
    case PIO_F_P_INFO: {
        uint64_t req = f->type == PIO_F_P_INFO ? f->u.p_info.req : f->u.p_partner_info.req;
        for (struct lookup *l = g.lookups; l; l = l->next)
            if (l->req == req && !l->done) {
                l->f = f;
                l->done = 1;
                f = NULL;
                break;
            }
        break;
    }
    case PIO_F_P_RELEASE:
        for (uint32_t i = 0; i < f->u.p_ranges.n; i++)
            pio_ralloc_put(&g.send, f->u.p_ranges.r[i].off, f->u.p_ranges.r[i].len);
        pump_all();
        break;
    case PIO_F_P_SEND_DONE: on_send_done(f); break;
    case PIO_F_P_MSG_NEW: on_msg_new(&f->u.p_msg_new); break;
    case PIO_F_P_MSG_DATA: on_msg_data(&f->u.p_ranges); break;
    case PIO_F_P_EVENT: on_event(&f->u.p_event); break;
    default: break;
    }
    free(f);
    pthread_cond_broadcast(&g.cv);
}

/* Run the queued copies without the lock, then account for them. */
static void run_jobs(void)
{
    struct copy_job *jobs = g.jobs;
    g.jobs = g.jobs_tail = NULL;
    if (!jobs)
        return;
    g.copying = 1;
    pthread_mutex_unlock(&g.mtx);
    for (struct copy_job *j = jobs; j; j = j->next) {
        struct inmsg *m = j->m;
        struct pio_request *r = m->req;
        if (!r)
            continue;
        const uint8_t *src = g.base + j->pool_off;
        uint8_t *dst = r->rbuf + j->msg_off;
        if (r->datatype == PIO_BYTE)
            memcpy(dst, src, j->len);
        else
            pio_convert(dst, src, j->len, pio_type_swap_unit((int)m->datatype),
                        (m->flags & PIO_WF_BIGEND) != 0);
    }
    pthread_mutex_lock(&g.mtx);
    g.copying = 0;
    pthread_cond_broadcast(&g.cv); /* fail_everything may wait for us */
    while (jobs) {
        struct copy_job *j = jobs;
        jobs = j->next;
        struct inmsg *m = j->m;
        out_ranges(PIO_F_P_FREE, m->key, j->msg_off, j->pool_off, j->len);
        m->copied += j->len;
        if (m->req && m->copied == m->size)
            recv_finish(m->req);
        free(j);
    }
}

/* g.mtx held. Waits first for copies the reader runs without the lock: it
 * still writes into the receives' buffers, which their owners may free as
 * soon as they are completed here (PIO_Exit from another thread; TSan, then
 * a SEGV, in pcp). The reader itself (lost()) never has copies running. */
static void fail_everything(int status)
{
    while (g.copying)
        pthread_cond_wait(&g.cv, &g.mtx);
    g.closed = 1;
    for (struct pio_request *r = g.recvs; r; r = r->next)
        req_complete(r, status);
    g.recvs = NULL;
    for (struct pio_request *r = g.sends; r; r = r->next)
        req_complete(r, status);
    g.sends = NULL;
    for (struct inmsg *m = g.msgs; m; m = m->next)
        if (m->req) {
            req_complete(m->req, status);
            m->req->msg = NULL;
            m->req = NULL;
        }
    for (struct lookup *l = g.lookups; l; l = l->next)
        l->done = 1;
    pthread_cond_broadcast(&g.cv);
}

/* The connection to the piod is gone: everything pending fails. */
static void lost(void)
{
    if (!g.closed)
        fail_everything(PIO_ECLOSED);
}

/* Holding the reader role (g.mtx held): wait up to timeout_ms for the socket
 * (or a kick on g.evfd), send what waits, handle every frame that came, then
 * run the copies they made ready. */
static void reader_pass(int timeout_ms)
{
    struct pollfd p[2] = {{g.fd, (short)(POLLIN | (g.out.head ? POLLOUT : 0)), 0},
                          {g.evfd, POLLIN, 0}};
    int n = 1;
    if (timeout_ms != 0 && !g.jobs) {
        pthread_mutex_unlock(&g.mtx);
        n = 0;
        if (g.spin_us > 0) { /* look without sleeping for a moment first */
            struct timespec t0, t;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            do {
                if ((n = poll(p, 2, 0)) != 0)
                    break;
                sched_yield();
                clock_gettime(CLOCK_MONOTONIC, &t);
            } while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 <
                     g.spin_us);
        }
        if (n == 0)
            n = poll(p, 2, timeout_ms);
        if (n > 0 && (p[1].revents & POLLIN)) {
            uint64_t v;
            ssize_t r = read(g.evfd, &v, sizeof(v));
            (void)r;
        }
        pthread_mutex_lock(&g.mtx);
    }
    if (g.out.head && pio_fout_flush(&g.out, g.fd) != PIO_OK)
        lost();
    g.in_pass = 1;
    for (int k = 0; n > 0 && !g.closed && k < 64; k++) {
        pthread_mutex_unlock(&g.mtx);
        int rc = pio_fin_fill(&g.in, g.fd); /* g.in is the reader's alone */
        pthread_mutex_lock(&g.mtx);
        if (rc == PIO_EAGAIN)
            break;
        if (rc != PIO_OK) {
            lost();
            break;
        }
        const uint8_t *fr;
        size_t len;
        while ((rc = pio_fin_next(&g.in, &fr, &len, NULL)) == PIO_OK)
            on_frame(fr, len);
        if (rc != PIO_EAGAIN) {
            if (trace_file)
                fprintf(trace_file, "the piod sent bytes that are not frames: %s\n",
                        PIO_Strerror(rc));
            lost();
        }
        if (g.in.drained)
            break;
    }
    g.in_pass = 0;
    run_jobs();
}

/* Reads for the application while no API thread waits, so that
 * asynchronous sends and receives move on while it computes. */
static void close_socket(void)
{
    if (g.fd >= 0)
        close(g.fd);
    if (g.evfd >= 0)
        close(g.evfd);
    g.fd = g.evfd = -1;
    pio_fin_fini(&g.in);
    pio_fout_clear(&g.out);
}

static void *progress(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g.mtx);
    while (!g.stop) {
        if (g.reader == READER_NONE && !g.want && !g.closed) {
            g.reader = READER_PROGRESS;
            reader_pass(100);
            g.reader = READER_NONE;
            pthread_cond_broadcast(&g.cv);
            if (!g.want)
                continue;
        }
        /* an API thread reads: nothing to do but look again later (the
         * kicks on g.evfd are for the reader, whoever it is) */
        pthread_mutex_unlock(&g.mtx);
        poll(NULL, 0, PROGRESS_IDLE_MS);
        pthread_mutex_lock(&g.mtx);
    }
    pthread_mutex_unlock(&g.mtx);
    return NULL;
}

/* ---- lookups (partner, info): one request, one answer ---- */

static int lookup(struct pio_frame *req, uint64_t id, int timeout_ms, struct pio_frame **answer)
{
    struct lookup l = {.req = id};
    struct timespec dl;
    deadline_after(&dl, timeout_ms);
    l.next = g.lookups;
    g.lookups = &l;
    int rc = out_frame(req);
    while (rc == PIO_OK && !l.done)
        if (wait_until(&dl) == PIO_ETIMEDOUT)
            rc = PIO_ETIMEDOUT;
    for (struct lookup **pp = &g.lookups; *pp; pp = &(*pp)->next)
        if (*pp == &l) {
            *pp = l.next;
            break;
        }
    if (rc == PIO_OK && !l.f)
        rc = PIO_ECLOSED;
    *answer = l.f;
    return rc;
}

/* ---- public API ---- */

static int env_int(const char *const *names, int dflt)
{
    for (int i = 0; names[i]; i++) {
        const char *v = getenv(names[i]);
        if (v && *v)
            return atoi(v);
    }
    return dflt;
}

int PIO_Init(const char *app_name, int process_ID, int nprocs)
{
    static const char *const rank_vars[] = {"PIO_PROCESS", "OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                                            "PMI_RANK", NULL};
    static const char *const size_vars[] = {"PIO_NPROCS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", NULL};
    int rc = PIO_OK;
    pthread_mutex_lock(&init_mtx);
    PIO_CHECK(g.inited, rc, PIO_EINITED, out);
    if (!app_name)
        app_name = getenv("PIO_APP");
    PIO_CHECK(!app_name || !*app_name || strlen(app_name) >= PIO_WIRE_NAME, rc, PIO_EINVAL, out);
    if (process_ID < 0)
        process_ID = env_int(rank_vars, 0);
    if (nprocs <= 0)
        nprocs = env_int(size_vars, 1);
    PIO_CHECK(process_ID < 0 || nprocs <= 0 || process_ID >= nprocs, rc, PIO_EINVAL, out);
    const char *senders = getenv("PIO_SENDERS");
    PIO_CHECK(senders && *senders && strcmp(senders, "owner") != 0 && strcmp(senders, "any") != 0,
              rc, PIO_EINVAL, out);
    const char *path = getenv("PIO_SOCKET");
    if (!path || !*path)
        path = DEFAULT_SOCKET;
    struct stat st;
    PIO_CHECK(stat(path, &st) != 0 || !S_ISSOCK(st.st_mode), rc, PIO_ENOPIOD, out);

    pthread_mutex_lock(&g.mtx);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g.cv, &ca);
    pthread_condattr_destroy(&ca);
    snprintf(g.app, sizeof(g.app), "%s", app_name);
    g.proc = process_ID;
    g.nprocs = nprocs;
    g.closed = 0;
    g.stop = 0;
    g.have_welcome = 0;
    g.reader = READER_NONE;
    g.want = 0;
    g.spin_us = env_int((const char *const[]){"PIO_SPIN_US", NULL}, 0);
    g.evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    PIO_CHECK(g.evfd < 0, rc, PIO_ENOMEM, unlock);
    PIO_TRY(pio_unix_connect(path, &g.fd), rc, unlock);
    pio_fin_init(&g.in, PIO_WIRE_HDR + (size_t)PIO_WIRE_MAX_BODY);
    PIO_CHECK(pthread_create(&g.thr, NULL, progress, NULL) != 0, rc, PIO_ENOMEM, unlock);

    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_HELLO;
    f.u.p_hello.proto = PIO_WIRE_VERSION;
    f.u.p_hello.proc = (uint32_t)process_ID;
    f.u.p_hello.nprocs = (uint32_t)nprocs;
    f.u.p_hello.pid = (uint32_t)getpid();
    if (senders && strcmp(senders, "owner") == 0)
        f.u.p_hello.flags |= PIO_HF_OWN_UID;
    snprintf(f.u.p_hello.app, sizeof(f.u.p_hello.app), "%s", app_name);
    out_frame(&f);
    struct timespec dl;
    deadline_after(&dl, WELCOME_TIMEOUT_MS);
    while (!g.have_welcome && rc == PIO_OK)
        if (wait_until(&dl) == PIO_ETIMEDOUT)
            rc = PIO_ENOPIOD;
    if (rc == PIO_OK && g.w.status != PIO_OK)
        rc = g.w.status;
    if (rc == PIO_OK)
        rc = pio_shm_open(g.w.shm, (void **)&g.base, &g.size);
    if (rc == PIO_OK && (g.w.send_off + g.w.send_len > g.size ||
                         g.w.recv_off + g.w.recv_len > g.size || g.w.chunk == 0))
        rc = PIO_EPROTO;
    if (rc == PIO_OK)
        rc = pio_ralloc_init(&g.send, g.w.send_off, g.w.send_len);
    if (rc != PIO_OK) {
        g.stop = 1;
        pthread_mutex_unlock(&g.mtx);
        wake_reader();
        pthread_join(g.thr, NULL);
        pthread_mutex_lock(&g.mtx);
        goto unlock;
    }
    const char *tr = getenv("PIO_TRACE");
    if (tr && *tr && !trace_file)
        trace_file = fopen(tr, "w");
    if (trace_file)
        setvbuf(trace_file, NULL, _IOLBF, 0);
    g.inited = 1;
    pthread_mutex_unlock(&g.mtx);
    pthread_mutex_unlock(&init_mtx);
    return PIO_OK;
unlock:
    if (g.base)
        pio_shm_close(NULL, g.base, g.size, 0);
    g.base = NULL;
    close_socket();
    pthread_mutex_unlock(&g.mtx);
out:
    pthread_mutex_unlock(&init_mtx);
    return rc;
}

int PIO_Exit(void)
{
    pio_win_exit(); /* its thread sends and receives: before anything goes */
    pthread_mutex_lock(&init_mtx);
    pthread_mutex_lock(&g.mtx);
    if (!g.inited) {
        pthread_mutex_unlock(&g.mtx);
        pthread_mutex_unlock(&init_mtx);
        return PIO_ENOTINIT;
    }
    /* sends whose bytes are not all in the pool yet get up to 30 s */
    struct timespec dl;
    deadline_after(&dl, 30000);
    for (;;) {
        int busy = 0;
        for (struct pio_request *r = g.sends; r; r = r->next)
            if (!r->copied_all)
                busy = 1;
        if (!busy || g.closed || wait_until(&dl) == PIO_ETIMEDOUT)
            break;
    }
    fail_everything(PIO_ECANCELED);
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_BYE;
    out_frame(&f);
    /* stop the progress thread, then send what waits (up to 5 s); what is
     * in the socket when we close it still reaches the piod */
    g.stop = 1;
    while (g.reader != READER_NONE) {
        wake_reader();
        pthread_cond_wait(&g.cv, &g.mtx);
    }
    pthread_mutex_unlock(&g.mtx);
    pthread_join(g.thr, NULL);
    pthread_mutex_lock(&g.mtx);
    deadline_after(&dl, 5000);
    while (g.out.head && ms_until(&dl) > 0) {
        struct pollfd p = {g.fd, POLLOUT, 0};
        poll(&p, 1, 100);
        if (pio_fout_flush(&g.out, g.fd) != PIO_OK)
            break;
    }
    close_socket();
    pio_shm_close(NULL, g.base, g.size, 0);
    g.base = NULL;
    pio_ralloc_fini(&g.send);
    while (g.msgs) {
        struct inmsg *m = g.msgs;
        g.msgs = m->next;
        msg_free(m);
    }
    g.msgs_tail = NULL;
    while (g.jobs) {
        struct copy_job *j = g.jobs;
        g.jobs = j->next;
        free(j);
    }
    g.jobs_tail = NULL;
    for (int i = 0; i < g.npartners; i++)
        free(g.partners[i].left);
    g.npartners = 0;
    g.inited = 0;
    pthread_mutex_unlock(&g.mtx);
    pthread_mutex_unlock(&init_mtx);
    return PIO_OK;
}

/* A full partner table may reuse the slot of an application whose every
 * process has left and that nothing (message, receive) refers to any more:
 * a long-running server (the file service) meets many short-lived clients. */
static int partner_reusable(void)
{
    for (int i = 0; i < g.npartners; i++) {
        const struct partner *p = &g.partners[i];
        int gone = p->left && p->nprocs > 0;
        for (uint32_t k = 0; gone && k < p->nprocs; k++)
            gone = p->left[k];
        for (struct inmsg *m = g.msgs; gone && m; m = m->next)
            gone = m->partner != i;
        for (struct pio_request *r = g.recvs; gone && r; r = r->next)
            gone = r->partner != i;
        if (gone)
            return i;
    }
    return -1;
}

/* $PIO_PARTNER_TIMEOUT seconds (default 30), in ms */
static int partner_timeout(void)
{
    const char *tv = getenv("PIO_PARTNER_TIMEOUT");
    return (tv && *tv ? atoi(tv) : 30) * 1000;
}

static int add_partner(const char *name, int *partner, int reset, int named, int timeout_ms)
{
    if (!name || !*name || strlen(name) >= PIO_WIRE_NAME || !partner)
        return PIO_EINVAL;
    pthread_mutex_lock(&g.mtx);
    int rc = PIO_OK;
    PIO_CHECK(!g.inited, rc, PIO_ENOTINIT, out);
    PIO_CHECK(g.closed, rc, PIO_ECLOSED, out);
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_PARTNER;
    uint64_t id = ++g.next_req;
    f.u.p_partner.req = id;
    f.u.p_partner.timeout_ms = (uint32_t)timeout_ms;
    snprintf(f.u.p_partner.app, sizeof(f.u.p_partner.app), "%s", name);
    struct pio_frame *a = NULL;
    rc = lookup(&f, id, timeout_ms + 5000, &a);
    if (rc == PIO_OK && a->u.p_partner_info.status != PIO_OK)
        rc = a->u.p_partner_info.status;
    if (rc == PIO_OK) {
        if (reset) {
            for (int i = 0; i < g.npartners; i++)
                free(g.partners[i].left);
            g.npartners = 0;
        }
        int h = partner_by_name(name);
        if (h < 0) {
            if (g.npartners == MAX_PARTNERS)
                h = partner_reusable();
            PIO_CHECK(h < 0 && g.npartners == MAX_PARTNERS, rc, PIO_ENOMEM, free);
            if (h < 0)
                h = g.npartners++;
            else
                free(g.partners[h].left);
            memset(&g.partners[h], 0, sizeof(g.partners[h]));
        }
        struct partner *p = &g.partners[h];
        p->named |= named;
        snprintf(p->name, sizeof(p->name), "%s", name);
        snprintf(p->system, sizeof(p->system), "%s", a->u.p_partner_info.system);
        p->channels = a->u.p_partner_info.channels;
        if (!p->left || p->nprocs != a->u.p_partner_info.nprocs) {
            free(p->left);
            p->nprocs = a->u.p_partner_info.nprocs;
            p->left = calloc(p->nprocs, 1);
        } else {
            /* the piod just said the application is there: a name that left
             * and came back (a new process, a reused pid) is no longer gone */
            memset(p->left, 0, p->nprocs);
        }
        for (struct inmsg *m = g.msgs; m; m = m->next)
            if (strcmp(m->src_app, name) == 0)
                m->partner = h;
        *partner = h;
    }
free:
    free(a);
out:
    pthread_mutex_unlock(&g.mtx);
    return rc;
}

int PIO_Setpartner(const char *name, int *partner)
{
    return add_partner(name, partner, 1, 1, partner_timeout());
}

int PIO_Addpartner(const char *name, int *partner)
{
    return add_partner(name, partner, 0, 1, partner_timeout());
}

int pio_partner_find(const char *name, int timeout_ms, int *partner)
{
    return add_partner(name, partner, 0, 0, timeout_ms);
}

int pio_partner_named(const char *name)
{
    pthread_mutex_lock(&g.mtx);
    int h = partner_by_name(name), named = h >= 0 && g.partners[h].named;
    pthread_mutex_unlock(&g.mtx);
    return named;
}

/* A send's request (g.mtx held): sub, when not NULL, is the layout of a
 * block inside a larger array (pio_send_sub; never eager). */
static int isend_sub(int partner, int process_ID, int tag, int connection, const void *addr,
                     int datatype, size_t count, int mode, const struct pio_request *sub,
                     struct pio_request **out)
{
    size_t es = pio_type_size(datatype);
    if (!es || tag < 0 || (mode != PIO_BLOCKING && mode != PIO_SYNC) || (!addr && count > 0) ||
        process_ID < 0 || connection < PIO_DYNAMIC || count > SIZE_MAX / es)
        return PIO_EINVAL;
    if (!g.inited)
        return PIO_ENOTINIT;
    if (g.closed)
        return PIO_ECLOSED;
    if (partner < 0 || partner >= g.npartners)
        return PIO_EPARTNER;
    struct partner *p = &g.partners[partner];
    if ((uint32_t)process_ID >= p->nprocs)
        return PIO_EINVAL;
    if (connection >= 0 && p->channels > 0 && (uint32_t)connection >= p->channels)
        return PIO_ECHANNEL;
    if (p->left && p->left[process_ID])
        return PIO_EGONE;
    struct pio_request *r = calloc(1, sizeof(*r));
    if (!r)
        return PIO_ENOMEM;
    uint64_t size = (uint64_t)count * es;
    r->kind = REQ_SEND;
    r->sid = ++g.next_sid;
    r->size = size;
    r->sbuf = addr;
    if (sub) {
        r->sub_row = sub->sub_row;
        r->sub_ny = sub->sub_ny;
        r->sub_py = sub->sub_py;
        r->sub_pz = sub->sub_pz;
    }
    r->sync = mode == PIO_SYNC;
    r->st.partner = partner;
    r->st.source = g.proc;
    r->st.tag = tag;
    r->st.datatype = datatype;
    r->st.count = count;
    r->st.bytes = size;
    struct pio_frame *f = calloc(1, sizeof(*f));
    if (!f) {
        free(r);
        return PIO_ENOMEM;
    }
    f->type = PIO_F_P_SEND;
    struct pio_p_send *s = &f->u.p_send;
    s->sid = r->sid;
    s->size = size;
    s->count = count;
    s->dst_proc = (uint32_t)process_ID;
    s->tag = tag;
    s->datatype = (uint32_t)datatype;
    s->conn = connection >= 0 ? PIO_WCONN_USER
                              : (connection == PIO_STATIC ? PIO_WCONN_STATIC : PIO_WCONN_DYNAMIC);
    s->conn_arg = (uint16_t)(connection >= 0 ? connection : 0);
    s->flags = (r->sync ? PIO_WF_SYNC : 0) | (pio_host_bigendian() ? PIO_WF_BIGEND : 0);
    snprintf(s->partner, sizeof(s->partner), "%s", p->name);
    int eager = size <= g.w.eager_limit && !sub;
    /* a large message on a named channel: the piod says whether that channel
     * is up before the send may complete (PIO_ECHANNEL otherwise) */
    r->verdict = !eager && connection >= 0;
    if (eager) {
        s->flags |= PIO_WF_EAGER;
        s->payload = addr;
    }
    int rc = out_frame(f);
    free(f);
    if (rc != PIO_OK) {
        free(r);
        return rc;
    }
    if (eager) {
        r->next_off = r->size;
        r->copied_all = 1;
        if (r->sync) {
            r->next = g.sends;
            g.sends = r;
        } else {
            req_complete(r, PIO_OK);
        }
    } else {
        struct pio_request **pp = &g.sends;
        while (*pp)
            pp = &(*pp)->next;
        *pp = r;
        /* only the oldest unfinished send pumps; the others follow in order */
        pump_all();
    }
    *out = r;
    return PIO_OK;
}

static int irecv(int partner, int process_ID, int tag, void *addr, int datatype, size_t count,
                 int mode, struct pio_request **out)
{
    size_t es = pio_type_size(datatype);
    if (!es || tag < PIO_ANY_TAG || process_ID < PIO_ANY_PROCESS ||
        (mode != PIO_BLOCKING && mode != PIO_SYNC) || (!addr && count > 0) || count > SIZE_MAX / es)
        return PIO_EINVAL;
    if (!g.inited)
        return PIO_ENOTINIT;
    if (partner != PIO_ANY_PARTNER && (partner < 0 || partner >= g.npartners))
        return PIO_EPARTNER;
    if (partner >= 0 && process_ID >= 0 && (uint32_t)process_ID >= g.partners[partner].nprocs)
        return PIO_EINVAL;
    struct pio_request *r = calloc(1, sizeof(*r));
    if (!r)
        return PIO_ENOMEM;
    r->kind = REQ_RECV;
    r->partner = partner;
    r->src = process_ID;
    r->tag = tag;
    r->rbuf = addr;
    r->datatype = datatype;
    r->count = count;
    struct pio_request **pp = &g.recvs;
    while (*pp)
        pp = &(*pp)->next;
    *pp = r;
    if (g.closed)
        req_complete(r, PIO_ECLOSED);
    else
        try_match_recv(r);
    *out = r;
    return PIO_OK;
}

/* Wait for r (g.mtx held). On completion unlinks and frees it. */
static int wait_req(struct pio_request *r, int timeout, PIO_Status *status, int *done)
{
    struct timespec dl;
    if (timeout >= 0)
        deadline_after(&dl, timeout);
    while (!r->done) {
        if (timeout == 0 || wait_until(timeout >= 0 ? &dl : NULL) == PIO_ETIMEDOUT) {
            if (!r->done) {
                if (done)
                    *done = 0;
                return PIO_ETIMEDOUT;
            }
        }
    }
    if (status)
        *status = r->st;
    int rc = r->status;
    if (done)
        *done = 1;
    free(r);
    return rc;
}

/* A receive timed out: if its message has begun to arrive, the data is
 * already on its way into the buffer, so finish it; else unlink and free it
 * (g.mtx held). Returns the receive's outcome. */
static int recv_timed_out(struct pio_request *r, PIO_Status *status)
{
    if (r->msg)
        return wait_req(r, PIO_WAIT_FOREVER, status, NULL);
    list_remove_req(&g.recvs, r);
    free(r);
    return PIO_ETIMEDOUT;
}

static int isend(int partner, int process_ID, int tag, int connection, const void *addr,
                 int datatype, size_t count, int mode, struct pio_request **out)
{
    return isend_sub(partner, process_ID, tag, connection, addr, datatype, count, mode, NULL, out);
}

int pio_send_sub(int partner, int process_ID, int tag, int connection, const void *base,
                 int datatype, const uint64_t dims[3], const uint64_t off[3],
                 const uint64_t count[3])
{
    size_t es = pio_type_size(datatype);
    if (!es || !base || !dims || !off || !count)
        return PIO_EINVAL;
    uint64_t n = 1;
    for (int i = 0; i < 3; i++) {
        if (count[i] == 0 || off[i] > dims[i] || count[i] > dims[i] - off[i] ||
            dims[i] > (UINT64_C(1) << 32))
            return PIO_EINVAL;
        n *= count[i];
    }
    struct pio_request sub = {0};
    sub.sub_row = count[0] * es;
    sub.sub_ny = count[1];
    sub.sub_py = dims[0] * es;
    sub.sub_pz = dims[0] * dims[1] * es;
    const uint8_t *first =
        (const uint8_t *)base + off[2] * sub.sub_pz + off[1] * sub.sub_py + off[0] * es;
    pthread_mutex_lock(&g.mtx);
    uint64_t eager_limit = g.w.eager_limit;
    pthread_mutex_unlock(&g.mtx);
    if (n * es <= eager_limit) { /* small: packed, and sent inline */
        uint8_t *tmp = malloc(n * es);
        if (!tmp)
            return PIO_ENOMEM;
        sub.sbuf = first;
        copy_out(&sub, tmp, 0, n * es);
        int rc =
            PIO_Send(partner, process_ID, tag, connection, tmp, datatype, (size_t)n, PIO_BLOCKING);
        free(tmp);
        return rc;
    }
    struct pio_request *r;
    pthread_mutex_lock(&g.mtx);
    int rc = isend_sub(partner, process_ID, tag, connection, first, datatype, (size_t)n,
                       PIO_BLOCKING, &sub, &r);
    if (rc == PIO_OK)
        rc = wait_req(r, PIO_WAIT_FOREVER, NULL, NULL);
    pthread_mutex_unlock(&g.mtx);
    return rc;
}

int PIO_Send(int partner, int process_ID, int tag, int connection, const void *addr, int datatype,
             size_t count, int mode)
{
    struct pio_request *r;
    pthread_mutex_lock(&g.mtx);
    int rc = isend(partner, process_ID, tag, connection, addr, datatype, count, mode, &r);
    if (rc == PIO_OK)
        rc = wait_req(r, PIO_WAIT_FOREVER, NULL, NULL);
    pthread_mutex_unlock(&g.mtx);
    return rc;
}

int PIO_Recv(int partner, int process_ID, int tag, void *addr, int datatype, size_t count,
             int timeout, int mode, PIO_Status *status)
{
    struct pio_request *r;
    pthread_mutex_lock(&g.mtx);
    int rc = irecv(partner, process_ID, tag, addr, datatype, count, mode, &r);
    if (rc == PIO_OK) {
        int done = 0;
        rc = wait_req(r, timeout, status, &done);
        if (!done)
            rc = recv_timed_out(r, status);
    }
    pthread_mutex_unlock(&g.mtx);
    return rc;
}

int PIO_Isend(int partner, int process_ID, int tag, int connection, const void *addr, int datatype,
              size_t count, int mode, PIO_Request *req)
{
    if (!req)
        return PIO_EINVAL;
    pthread_mutex_lock(&g.mtx);
    int rc = isend(partner, process_ID, tag, connection, addr, datatype, count, mode, req);
    pthread_mutex_unlock(&g.mtx);
    return rc;
}

int PIO_Irecv(int partner, int process_ID, int tag, void *addr, int datatype, size_t count,
              int mode, PIO_Request *req)
{
    if (!req)
        return PIO_EINVAL;
    pthread_mutex_lock(&g.mtx);
    int rc = irecv(partner, process_ID, tag, addr, datatype, count, mode, req);
    pthread_mutex_unlock(&g.mtx);
    return rc;
}

int PIO_Wait(PIO_Request *req, int timeout, PIO_Status *status)
{
    if (!req || !*req)
        return PIO_EINVAL;
    pthread_mutex_lock(&g.mtx);
    int done = 0;
    int rc = wait_req(*req, timeout, status, &done);
    if (done)
        *req = NULL;
    pthread_mutex_unlock(&g.mtx);
    return rc;
}

int PIO_Test(PIO_Request *req, int *done, PIO_Status *status)
{
    if (!req || !*req || !done)
        return PIO_EINVAL;
    pthread_mutex_lock(&g.mtx);
    int rc = wait_req(*req, 0, status, done);
    if (*done)
        *req = NULL;
    else
        rc = PIO_OK;
    pthread_mutex_unlock(&g.mtx);
    return rc;
}

struct pio_request *pio_req_ext_new(void)
{
    struct pio_request *r = calloc(1, sizeof(*r));
    if (r)
        r->kind = REQ_EXT;
    return r;
}

void pio_req_ext_done(struct pio_request *r, int status, size_t bytes)
{
    pthread_mutex_lock(&g.mtx);
    r->st.bytes = bytes;
    r->st.count = bytes;
    req_complete(r, status);
    wake_reader(); /* a waiter may be the reader, in poll */
    pthread_mutex_unlock(&g.mtx);
}

int pio_send_room(uint64_t *free, uint64_t *total)
{
    pthread_mutex_lock(&g.mtx);
    int rc = g.inited ? PIO_OK : PIO_ENOTINIT;
    if (rc == PIO_OK) {
        *total = g.send.len;
        *free = g.send.len - g.send.used;
    }
    pthread_mutex_unlock(&g.mtx);
    return rc;
}

int PIO_Gethostinfo(PIO_Hostinfo *info)
{
    if (!info)
        return PIO_EINVAL;
    pthread_mutex_lock(&g.mtx);
    int rc = g.inited ? PIO_OK : PIO_ENOTINIT;
    if (rc == PIO_OK) {
        memset(info, 0, sizeof(*info));
        snprintf(info->host, sizeof(info->host), "%s", g.w.host);
        snprintf(info->system, sizeof(info->system), "%s", g.w.system);
        info->version = PIO_WIRE_VERSION;
        info->pool_size = g.size;
        info->eager_limit = g.w.eager_limit;
        info->chunk_size = g.w.chunk;
    }
    pthread_mutex_unlock(&g.mtx);
    return rc;
}

static int get_info(struct pio_frame **a)
{
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_INFO_REQ;
    uint64_t id = ++g.next_req;
    f.u.p_info_req.req = id;
    f.u.p_info_req.what = 7;
    return lookup(&f, id, 5000, a);
}

int PIO_Getappinfo(int partner, PIO_Appinfo *info)
{
    if (!info)
        return PIO_EINVAL;
    pthread_mutex_lock(&g.mtx);
    int rc = PIO_OK;
    struct pio_frame *a = NULL;
    PIO_CHECK(!g.inited, rc, PIO_ENOTINIT, out);
    PIO_CHECK(partner != PIO_SELF && (partner < 0 || partner >= g.npartners), rc, PIO_EPARTNER,
              out);
    memset(info, 0, sizeof(*info));
    const char *name = partner == PIO_SELF ? g.app : g.partners[partner].name;
    snprintf(info->name, sizeof(info->name), "%s", name);
    info->process_ID = partner == PIO_SELF ? g.proc : -1;
    info->nprocs = partner == PIO_SELF ? g.nprocs : (int)g.partners[partner].nprocs;
    snprintf(info->system, sizeof(info->system), "%s",
             partner == PIO_SELF ? g.w.system : g.partners[partner].system);
    PIO_TRY(get_info(&a), rc, out);
    for (uint32_t i = 0; i < a->u.p_info.napp; i++)
        if (strcmp(a->u.p_info.app[i].app, name) == 0) {
            info->joined = (int)a->u.p_info.app[i].joined;
            snprintf(info->system, sizeof(info->system), "%s", a->u.p_info.app[i].system);
        }
out:
    free(a);
    pthread_mutex_unlock(&g.mtx);
    return rc;
}

int PIO_Getconinfo(int partner, PIO_Coninfo *info, int max, int *n)
{
    if (!n || max < 0 || (!info && max > 0))
        return PIO_EINVAL;
    pthread_mutex_lock(&g.mtx);
    int rc = PIO_OK;
    struct pio_frame *a = NULL;
    *n = 0;
    PIO_CHECK(!g.inited, rc, PIO_ENOTINIT, out);
    PIO_CHECK(partner < 0 || partner >= g.npartners, rc, PIO_EPARTNER, out);
    PIO_TRY(get_info(&a), rc, out);
    for (uint32_t i = 0; i < a->u.p_info.nchan && *n < max; i++) {
        struct pio_chan_info *c = &a->u.p_info.chan[i];
        if (strcmp(c->peer, g.partners[partner].system) != 0)
            continue;
        PIO_Coninfo *o = &info[(*n)++];
        memset(o, 0, sizeof(*o));
        o->index = (int)c->index;
        o->up = c->state == PIO_WCHAN_UP;
        snprintf(o->local, sizeof(o->local), "%s", c->local);
        snprintf(o->remote, sizeof(o->remote), "%s", c->remote);
        o->tx_bytes = c->tx_bytes;
        o->rx_bytes = c->rx_bytes;
        o->queued = c->queued;
        o->rate = c->rate;
        o->tx_chunks = c->tx_chunks;
        o->rx_chunks = c->rx_chunks;
        o->resent = c->resent;
        o->downs = c->downs;
    }
out:
    free(a);
    pthread_mutex_unlock(&g.mtx);
    return rc;
}
