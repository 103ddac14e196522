/* win.c - one-sided access: windows, get, put, atomics (PIO_Win_*, pio.h).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Built on a one-sided backend (transport/rma.h, "rdma": UCX) for the data
 * and on libpio's own messages (tag PIO_TAG_WIN, through the piods) for the
 * control: the address of a process's context and the key of its memory
 * travel from libpio to libpio, and the application never sees them.
 *
 * Windows are published on demand: the first operation of a process on
 * window k of process q asks q (ASK); q's window thread answers with DESC
 * when the window's access lets the asker in (judged on the asker's
 * application and uid as the piods stamped them, PIO_Status; else DENIED:
 * the asker gets PIO_EACCES and never learns the key)
 * (context address, base, size, packed key) once q has created window k
 * (an ASK that comes earlier waits at q until then; the asker gives up after
 * WAIT_S with PIO_ENOWIN). So the owner knows every process that may
 * access each of its windows, which is what makes freeing safe:
 * PIO_Win_free sends FREED to each of them and waits (up to WAIT_S each)
 * for FREED_ACK before it deregisters the memory. A process that gets
 * FREED marks its descriptor freed (new operations fail with
 * PIO_EWINFREED), waits until its operations in flight on that window are
 * complete (they too report PIO_EWINFREED), releases the key, then
 * answers. No operation reads or writes a window's memory after
 * PIO_Win_free returns, and none can touch memory the transport no longer
 * serves.
 *
 * Operations complete at the target before they complete here: a put is
 * followed by a flush of its endpoint; gets and atomics carry their answer.
 * Blocking calls wait on a condition; PIO_Iget / PIO_Iput complete a
 * PIO_Request of the message core (sendrecv.c, pio_req_ext_*).
 *
 * Threads and locks: one mutex (W.mtx) guards all state here; it is never
 * held while calling libpio (PIO_Send, PIO_Recv) or a backend op that may
 * call back (the backend's callbacks take W.mtx themselves). The window
 * thread receives the control messages and answers them; it runs from the
 * first PIO_Win_create until pio_win_exit.
 * Thread-safety: every public function is thread-safe.
 */
#include "pio.h"
#include "partner.h"
#include "rma.h"
#include "win.h"
#include "winctl.h"
#include "mono.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WAIT_S     10  /* ASK and FREED_ACK waits */
#define RECV_SLICE 200 /* ms: the window thread looks at its stop flag this often */
#define SPIN_US    50  /* a blocking operation progresses the transport itself this long */

/* a process that asked for one of our windows */
struct knower {
    int partner, proc;
};

struct pio_win {
    int id;
    int access; /* PIO_WIN_APP, ... */
    void *base;
    size_t size;
    struct pio_rma_mem *mem; /* NULL for an empty window */
    void *rkey;              /* packed, malloc'd */
    size_t rkey_len;
    int freeing;
    struct knower *knows;
    int nknows, capknows;
    int acks_wanted; /* FREED sent, FREED_ACK not yet back */
    int remote;      /* PIO_Win_remote: a number only, no memory of ours */
};

/* another process, as an endpoint of our context */
struct peer {
    struct peer *next;
    int partner, proc;
    struct pio_rma_ep *ep;
    int dead; /* an operation failed on it (the process left or ran again): ask anew */
};

enum { R_NONE = 0, R_ASKED = 1, R_KNOWN = 2, R_FREED = 3 }; /* NONE: ask (again) */

/* a window of another process */
struct rwin {
    struct rwin *next;
    int partner, proc, id;
    int state;
    struct peer *peer;
    uint64_t base, size;
    struct pio_rma_rkey *rk;
    int inflight;
    int err; /* the DESC came but could not be used (connect, key): for the asker */
};

/* who asks, as the piods stamped it */
struct asker {
    unsigned uid;
    int named; /* its application is one we named (pio_partner_named) */
    char app[PIO_NAME_MAX];
};

/* an ASK that came before its window */
struct pending {
    struct pending *next;
    int partner, proc, id;
    struct asker who;
};

static struct {
    pthread_mutex_t mtx;
    pthread_cond_t cv;
    const struct pio_rma_ops *ops;
    struct pio_rma *ctx;
    const void *addr; /* our context's address */
    size_t addr_len;
    int self; /* this application as a partner */
    char app[PIO_NAME_MAX];
    int my_proc;
    struct pio_win **wins; /* by id; NULL once freed */
    int nwins, capwins;
    struct peer *peers;
    struct rwin *rwins;
    struct pending *pend;
    pthread_t thread;
    int running, stop;
} W = {.mtx = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .self = -1};

/* ---- messages: winctl.c ---- */

/* Send c to process proc of partner (no lock held). */
static int ctl_send(int partner, int proc, const struct pio_winctl *c)
{
    uint8_t *buf = malloc(PIO_WINCTL_MAX);
    if (!buf)
        return PIO_ENOMEM;
    struct pio_winctl m = *c;
    pthread_mutex_lock(&W.mtx);
    memcpy(m.app, W.app, sizeof(m.app));
    pthread_mutex_unlock(&W.mtx);
    size_t n = pio_winctl_encode(&m, buf);
    int rc = n ? PIO_Send(partner, proc, PIO_TAG_WIN, PIO_DYNAMIC, buf, PIO_BYTE, n, PIO_BLOCKING)
               : PIO_EINVAL;
    free(buf);
    return rc;
}

/* ---- helpers (W.mtx held) ---- */

static void deadline(struct timespec *ts, int seconds)
{
    pio_deadline_mono(ts, (int64_t)seconds * 1000000000);
}

/* W.cv waits on CLOCK_MONOTONIC (mono.h); a static initializer cannot say
 * so, and nothing may wait on it before this runs: at load time. */
__attribute__((constructor)) static void win_cv_init(void)
{
    pthread_cond_destroy(&W.cv);
    pio_cond_init_mono(&W.cv);
}

static struct peer *peer_find(int partner, int proc)
{
    for (struct peer *p = W.peers; p; p = p->next)
        if (p->partner == partner && p->proc == proc && !p->dead)
            return p;
    return NULL;
}

static struct rwin *rwin_find(int partner, int proc, int id)
{
    for (struct rwin *r = W.rwins; r; r = r->next)
        if (r->partner == partner && r->proc == proc && r->id == id)
            return r;
    return NULL;
}

static int knower_add(struct pio_win *w, int partner, int proc)
{
    for (int i = 0; i < w->nknows; i++)
        if (w->knows[i].partner == partner && w->knows[i].proc == proc)
            return 0;
    if (w->nknows == w->capknows) {
        int cap = w->capknows ? 2 * w->capknows : 8;
        struct knower *k = realloc(w->knows, sizeof(*k) * (size_t)cap);
        if (!k)
            return -1;
        w->knows = k;
        w->capknows = cap;
    }
    w->knows[w->nknows++] = (struct knower){partner, proc};
    return 0;
}

/* The DESC of our window w (W.mtx held while filling; sent without). */
static void desc_of(const struct pio_win *w, struct pio_winctl *c)
{
    memset(c, 0, sizeof(*c));
    c->kind = PIO_WC_DESC;
    c->id = (uint32_t)w->id;
    c->base = (uint64_t)(uintptr_t)w->base;
    c->size = w->size;
    c->addr = W.addr;
    c->addr_len = (uint32_t)W.addr_len;
    c->rkey = w->rkey;
    c->rkey_len = (uint32_t)w->rkey_len;
}

/* ---- the window thread ---- */

/* May who use window w? (W.mtx held: who->named was looked up before, as
 * libpio's lock is never taken under W.mtx) */
static int may_use(const struct pio_win *w, const struct asker *who)
{
    if (strcmp(who->app, W.app) == 0)
        return 1; /* our own application: every access lets it in */
    switch (w->access) {
    case PIO_WIN_PARTNERS: return who->named;
    case PIO_WIN_UID: return who->uid == (unsigned)getuid();
    case PIO_WIN_ANYONE: return 1;
    default: return 0;
    }
}

/* An ASK from (partner, proc) for window id: answer it, or keep it until
 * the window exists. */
static void on_ask(int partner, int proc, uint32_t id, const struct asker *who)
{
    if (getenv("PIO_WIN_DEBUG"))
        fprintf(stderr, "pio: ASK for window %u from process %d of partner %d\n", id, proc,
                partner);
    pthread_mutex_lock(&W.mtx);
    struct pio_win *w = (int)id < W.nwins ? W.wins[id] : NULL;
    if ((int)id >= W.nwins) { /* not created yet: answered by PIO_Win_create */
        struct pending *q = malloc(sizeof(*q));
        if (q) {
            *q = (struct pending){W.pend, partner, proc, (int)id, *who};
            W.pend = q;
        }
        pthread_mutex_unlock(&W.mtx);
        return;
    }
    struct pio_winctl c;
    uint8_t *copy = NULL;
    if (!w || w->freeing) { /* freed: say so */
        memset(&c, 0, sizeof(c));
        c.kind = PIO_WC_FREED;
        c.id = id;
    } else if (!may_use(w, who)) {
        memset(&c, 0, sizeof(c));
        c.kind = PIO_WC_DENIED;
        c.id = id;
    } else {
        knower_add(w, partner, proc);
        desc_of(w, &c);
        /* the key may go with the window once we unlock: send a copy */
        copy = malloc(c.rkey_len + 1);
        if (copy) {
            if (c.rkey_len) /* an empty window has no key (rkey NULL) */
                memcpy(copy, c.rkey, c.rkey_len);
            c.rkey = copy;
        } else {
            c.rkey_len = 0;
        }
    }
    pthread_mutex_unlock(&W.mtx);
    int rc = ctl_send(partner, proc, &c);
    if (rc != PIO_OK && getenv("PIO_WIN_DEBUG"))
        fprintf(stderr, "pio: answer to the ASK for window %u: %s\n", id, PIO_Strerror(rc));
    free(copy);
}

/* A DESC of window id of (partner, proc): connect, unpack the key. */
static void on_desc(int partner, int proc, const struct pio_winctl *c)
{
    pthread_mutex_lock(&W.mtx);
    struct rwin *r = rwin_find(partner, proc, (int)c->id);
    if (!r || r->state != R_ASKED) { /* not asked, or already known */
        pthread_mutex_unlock(&W.mtx);
        return;
    }
    struct peer *p = peer_find(partner, proc);
    pthread_mutex_unlock(&W.mtx);
    /* connecting and unpacking need no lock of ours */
    struct pio_rma_ep *ep = NULL;
    int rc = PIO_OK;
    if (!p)
        rc = W.ops->connect(W.ctx, c->addr, c->addr_len, &ep);
    pthread_mutex_lock(&W.mtx);
    if (!p && rc == PIO_OK) {
        p = peer_find(partner, proc); /* another thread may have made it */
        if (!p && (p = calloc(1, sizeof(*p))) != NULL) {
            *p = (struct peer){W.peers, partner, proc, ep, 0};
            W.peers = p;
            ep = NULL;
        }
    }
    pthread_mutex_unlock(&W.mtx);
    if (ep)
        W.ops->disconnect(ep);
    struct pio_rma_rkey *rk = NULL;
    if (p && c->size > 0)
        rc = W.ops->rkey_unpack(p->ep, c->rkey, c->rkey_len, &rk);
    if (rc != PIO_OK && getenv("PIO_WIN_DEBUG"))
        fprintf(stderr, "pio: window %u of process %d: %s its key: %s\n", c->id, proc,
                p ? "cannot unpack" : "cannot connect for", PIO_Strerror(rc));
    pthread_mutex_lock(&W.mtx);
    r = rwin_find(partner, proc, (int)c->id);
    if (r && r->state == R_ASKED && p && (rc == PIO_OK || c->size == 0)) {
        r->peer = p;
        r->base = c->base;
        r->size = c->size;
        r->rk = rk;
        r->state = R_KNOWN;
        rk = NULL;
    } else if (r && r->state == R_ASKED) {
        /* the asker learns why now, not as "no such window" after WAIT_S */
        r->state = R_NONE;
        r->err = rc != PIO_OK ? rc : PIO_ENOMEM;
    }
    pthread_cond_broadcast(&W.cv);
    pthread_mutex_unlock(&W.mtx);
    if (rk)
        W.ops->rkey_release(rk);
}

/* FREED of window id of (partner, proc): no new operations; wait for those
 * in flight; release the key; answer. */
static void on_freed(int partner, int proc, uint32_t id)
{
    pthread_mutex_lock(&W.mtx);
    struct rwin *r = rwin_find(partner, proc, (int)id);
    struct pio_rma_rkey *rk = NULL;
    if (r) {
        r->state = R_FREED;
        struct timespec dl;
        deadline(&dl, WAIT_S);
        while (r->inflight > 0 && !W.stop)
            if (pthread_cond_timedwait(&W.cv, &W.mtx, &dl) == ETIMEDOUT)
                break;
        if (r->inflight == 0) {
            rk = r->rk;
            r->rk = NULL;
        }
        pthread_cond_broadcast(&W.cv); /* askers waiting for a DESC */
    }
    pthread_mutex_unlock(&W.mtx);
    W.ops->rkey_release(rk);
    struct pio_winctl c = {.kind = PIO_WC_FREED_ACK, .id = id};
    ctl_send(partner, proc, &c);
}

/* DENIED for window id of (partner, proc): the asker gets PIO_EACCES. */
static void on_denied(int partner, int proc, uint32_t id)
{
    pthread_mutex_lock(&W.mtx);
    struct rwin *r = rwin_find(partner, proc, (int)id);
    if (r && r->state == R_ASKED) {
        r->state = R_NONE;
        r->err = PIO_EACCES;
        pthread_cond_broadcast(&W.cv);
    }
    pthread_mutex_unlock(&W.mtx);
}

static void on_freed_ack(int partner, int proc, uint32_t id)
{
    pthread_mutex_lock(&W.mtx);
    struct pio_win *w = (int)id < W.nwins ? W.wins[id] : NULL;
    if (w && w->freeing)
        for (int i = 0; i < w->nknows; i++)
            if (w->knows[i].partner == partner && w->knows[i].proc == proc) {
                w->knows[i] = w->knows[--w->nknows];
                w->acks_wanted--;
                pthread_cond_broadcast(&W.cv);
                break;
            }
    pthread_mutex_unlock(&W.mtx);
}

static void *win_thread(void *arg)
{
    (void)arg;
    uint8_t *buf = malloc(PIO_WINCTL_MAX);
    if (!buf)
        return NULL;
    for (;;) {
        pthread_mutex_lock(&W.mtx);
        int stop = W.stop;
        pthread_mutex_unlock(&W.mtx);
        if (stop)
            break;
        PIO_Status st;
        int rc = PIO_Recv(PIO_ANY_PARTNER, PIO_ANY_PROCESS, PIO_TAG_WIN, buf, PIO_BYTE,
                          PIO_WINCTL_MAX, RECV_SLICE, PIO_BLOCKING, &st);
        if (rc == PIO_ETRUNC) { /* not ours: out of the way */
            uint8_t *big = malloc(st.bytes);
            if (big)
                PIO_Recv(st.partner, st.source, PIO_TAG_WIN, big, PIO_BYTE, st.bytes, 0,
                         PIO_BLOCKING, NULL);
            free(big);
            continue;
        }
        if (rc == PIO_ETIMEDOUT)
            continue;
        if (rc != PIO_OK) { /* the piod went away: nothing more will come */
            if (rc == PIO_ECLOSED || rc == PIO_ENOTINIT)
                break;
            continue;
        }
        struct pio_winctl c;
        if (pio_winctl_decode(buf, st.bytes, &c) != 0)
            continue;
        /* who sent it is the piods' word (st.app, st.uid), not c.app's */
        struct asker who = {.uid = st.uid};
        snprintf(who.app, sizeof(who.app), "%s", st.app);
        who.named = c.kind == PIO_WC_ASK && pio_partner_named(st.app);
        /* from an application we never named: it becomes a partner */
        if (st.partner < 0 && pio_partner_find(st.app, 2000, &st.partner) != PIO_OK)
            continue;
        switch (c.kind) {
        case PIO_WC_ASK: on_ask(st.partner, st.source, c.id, &who); break;
        case PIO_WC_DESC: on_desc(st.partner, st.source, &c); break;
        case PIO_WC_FREED: on_freed(st.partner, st.source, c.id); break;
        case PIO_WC_DENIED: on_denied(st.partner, st.source, c.id); break;
        default: on_freed_ack(st.partner, st.source, c.id); break;
        }
    }
    free(buf);
    return NULL;
}

/* ---- setup ---- */

/* The context and the window thread, on the first window (W.mtx held). */
static int win_start(void)
{
    if (W.running)
        return PIO_OK;
    PIO_Appinfo me;
    int rc = PIO_Getappinfo(PIO_SELF, &me);
    if (rc != PIO_OK)
        return rc;
    if (!W.ops && !(W.ops = pio_rma_pick(PIO_RMA_CAP_GETPUT | PIO_RMA_CAP_ATOMICS)))
        return PIO_ENOSYS;
    if ((rc = W.ops->init(&W.ctx)) != PIO_OK)
        return rc;
    if ((rc = W.ops->address(W.ctx, &W.addr, &W.addr_len)) != PIO_OK ||
        (rc = pio_partner_find(me.name, 2000, &W.self)) != PIO_OK) {
        W.ops->fini(W.ctx);
        W.ctx = NULL;
        return rc;
    }
    W.my_proc = me.process_ID;
    snprintf(W.app, sizeof(W.app), "%s", me.name);
    W.stop = 0;
    if (pthread_create(&W.thread, NULL, win_thread, NULL) != 0) {
        W.ops->fini(W.ctx);
        W.ctx = NULL;
        return PIO_ENOMEM;
    }
    W.running = 1;
    return PIO_OK;
}

int PIO_Win_create(void *base, size_t size, int access, PIO_Win *win)
{
    if (!win || (!base && size > 0) || access < PIO_WIN_APP || access > PIO_WIN_ANYONE)
        return PIO_EINVAL;
    pthread_mutex_lock(&W.mtx);
    int rc = win_start();
    struct pio_win *w = NULL;
    if (rc == PIO_OK && W.nwins == W.capwins) {
        int cap = W.capwins ? 2 * W.capwins : 8;
        struct pio_win **a = realloc(W.wins, sizeof(*a) * (size_t)cap);
        if (a) {
            W.wins = a;
            W.capwins = cap;
        } else {
            rc = PIO_ENOMEM;
        }
    }
    if (rc == PIO_OK && !(w = calloc(1, sizeof(*w))))
        rc = PIO_ENOMEM;
    pthread_mutex_unlock(&W.mtx);
    if (rc == PIO_OK && size > 0) /* registering may take a while: unlocked */
        rc = W.ops->mem_register(W.ctx, base, size, &w->mem, &w->rkey, &w->rkey_len);
    if (rc != PIO_OK) {
        free(w);
        return rc;
    }
    w->base = base;
    w->size = size;
    w->access = access;
    pthread_mutex_lock(&W.mtx);
    w->id = W.nwins;
    W.wins[W.nwins++] = w;
    /* the ASKs that came before it */
    struct pending *mine = NULL, **pp = &W.pend;
    while (*pp) {
        struct pending *q = *pp;
        if (q->id == w->id) {
            *pp = q->next;
            q->next = mine;
            mine = q;
        } else {
            pp = &q->next;
        }
    }
    pthread_mutex_unlock(&W.mtx);
    while (mine) {
        struct pending *q = mine;
        mine = q->next;
        on_ask(q->partner, q->proc, (uint32_t)q->id, &q->who);
        free(q);
    }
    *win = w;
    return PIO_OK;
}

int PIO_Win_free(PIO_Win *win)
{
    if (!win || !*win)
        return PIO_EINVAL;
    struct pio_win *w = *win;
    if (w->remote) { /* nothing registered, no one told */
        free(w);
        *win = NULL;
        return PIO_OK;
    }
    pthread_mutex_lock(&W.mtx);
    if (w->id >= W.nwins || W.wins[w->id] != w || w->freeing) {
        pthread_mutex_unlock(&W.mtx);
        return PIO_EINVAL;
    }
    w->freeing = 1;
    int n = w->nknows;
    struct knower *k = n ? malloc(sizeof(*k) * (size_t)n) : NULL;
    if (k)
        memcpy(k, w->knows, sizeof(*k) * (size_t)n);
    else
        n = 0;
    w->acks_wanted = n;
    pthread_mutex_unlock(&W.mtx);
    struct pio_winctl c = {.kind = PIO_WC_FREED, .id = (uint32_t)w->id};
    for (int i = 0; i < n; i++)
        if (ctl_send(k[i].partner, k[i].proc, &c) != PIO_OK) { /* gone: no answer to wait for */
            pthread_mutex_lock(&W.mtx);
            w->acks_wanted--;
            pthread_mutex_unlock(&W.mtx);
        }
    free(k);
    pthread_mutex_lock(&W.mtx);
    struct timespec dl;
    deadline(&dl, WAIT_S);
    while (w->acks_wanted > 0 && W.running)
        if (pthread_cond_timedwait(&W.cv, &W.mtx, &dl) == ETIMEDOUT)
            break;
    W.wins[w->id] = NULL;
    pthread_mutex_unlock(&W.mtx);
    W.ops->mem_deregister(w->mem);
    free(w->rkey);
    free(w->knows);
    free(w);
    *win = NULL;
    return PIO_OK;
}

/* ---- operations ---- */

enum { OP_GET, OP_PUT, OP_CAS, OP_FADD };

struct op {
    struct rwin *r;
    int kind, done, status;
    size_t len;
    uint64_t *old;
    struct pio_request *req; /* PIO_Iget / PIO_Iput; NULL: a blocking call waits */
    struct pio_rma_ep *ep;   /* for the flush after a put */
};

/* The operation is complete (any thread; takes W.mtx). */
static void op_finish(struct op *o, int status)
{
    pthread_mutex_lock(&W.mtx);
    struct rwin *r = o->r;
    if (status == PIO_OK && r->state == R_FREED)
        status = PIO_EWINFREED; /* freed while in flight */
    if ((status == PIO_EIO || status == PIO_EGONE || status == PIO_ECANCELED) && r->peer)
        r->peer->dead = 1; /* the next operation asks the process again */
    r->inflight--;
    pthread_cond_broadcast(&W.cv);
    struct pio_request *req = o->req;
    size_t len = o->len;
    if (req) {
        pthread_mutex_unlock(&W.mtx);
        free(o);
        pio_req_ext_done(req, status, status == PIO_OK ? len : 0);
        return;
    }
    o->status = status;
    o->done = 1;
    pthread_mutex_unlock(&W.mtx);
}

static void op_flushed(void *arg, int status)
{
    op_finish(arg, status);
}

static void op_cb(void *arg, int status)
{
    struct op *o = arg;
    /* a put is done when it is in the target's memory: flush after it */
    if (status == PIO_OK && o->kind == OP_PUT && W.ops->flush(o->ep, op_flushed, o) == PIO_OK)
        return;
    op_finish(o, status);
}

/* The descriptor of window id of (partner, proc), asking its owner the
 * first time (W.mtx held; released while sending and waiting). */
static int resolve(int partner, int proc, int id, struct rwin **out)
{
    struct rwin *r = rwin_find(partner, proc, id);
    if (!r) {
        if (!(r = calloc(1, sizeof(*r))))
            return PIO_ENOMEM;
        *r = (struct rwin){W.rwins, partner, proc, id, R_NONE, NULL, 0, 0, NULL, 0, 0};
        W.rwins = r;
    }
    if (r->state == R_KNOWN && r->peer && r->peer->dead && r->inflight == 0) {
        /* that process may be another incarnation: forget what we knew */
        struct pio_rma_rkey *rk = r->rk;
        r->rk = NULL;
        r->peer = NULL;
        r->state = R_NONE;
        pthread_mutex_unlock(&W.mtx);
        W.ops->rkey_release(rk);
        pthread_mutex_lock(&W.mtx);
    }
    if (r->state == R_FREED && r->inflight == 0)
        r->state = R_NONE; /* ask again: its owner may have run again since (a new
                            * incarnation's window); the old one answers FREED again */
    if (r->state == R_NONE) {
        r->state = R_ASKED;
        r->err = 0;
        pthread_mutex_unlock(&W.mtx);
        struct pio_winctl c = {.kind = PIO_WC_ASK, .id = (uint32_t)id};
        int rc = ctl_send(partner, proc, &c);
        pthread_mutex_lock(&W.mtx);
        if (rc != PIO_OK) {
            if (r->state == R_ASKED)
                r->state = R_NONE;
            return rc == PIO_EGONE || rc == PIO_EPARTNER ? rc : PIO_ENOWIN;
        }
    }
    struct timespec dl;
    deadline(&dl, WAIT_S);
    while (r->state == R_ASKED && W.running)
        if (pthread_cond_timedwait(&W.cv, &W.mtx, &dl) == ETIMEDOUT)
            break;
    if (r->state == R_ASKED) { /* no answer: a later call asks again */
        r->state = R_NONE;
        return PIO_ENOWIN;
    }
    if (r->state == R_NONE && r->err != PIO_OK) { /* a DESC we could not use */
        int e = r->err;
        r->err = 0;
        return e;
    }
    if (r->state != R_KNOWN)
        return r->state == R_FREED ? PIO_EWINFREED : PIO_ENOWIN;
    *out = r;
    return PIO_OK;
}

/* PIO_SELF and handles to a partner handle (a bad handle fails the ASK:
 * no lookup per operation) */
static int target(int partner, int *p)
{
    if (partner == PIO_SELF) {
        *p = W.self;
        return PIO_OK;
    }
    if (partner < 0)
        return PIO_EPARTNER;
    *p = partner;
    return PIO_OK;
}

/* An operation on window wid of (partner, proc); req NULL: wait for it. */
static int start_op(int wid, int partner, int proc, int kind, uint64_t disp, void *buf, size_t len,
                    uint64_t compare, uint64_t value, uint64_t *old, PIO_Request *req)
{
    if (req)
        *req = NULL;
    if (wid < 0 || proc < 0 || (!buf && len > 0 && (kind == OP_GET || kind == OP_PUT)))
        return PIO_EINVAL;
    if ((kind == OP_CAS || kind == OP_FADD) && (disp % 8 != 0 || !old))
        return PIO_EINVAL;
    int p;
    pthread_mutex_lock(&W.mtx);
    int rc = win_start(); /* a PIO_Win_remote handle may be the first use */
    pthread_mutex_unlock(&W.mtx);
    if (rc != PIO_OK)
        return rc;
    rc = target(partner, &p);
    if (rc != PIO_OK)
        return rc;
    pthread_mutex_lock(&W.mtx);
    struct rwin *r = NULL;
    rc = resolve(p, proc, wid, &r);
    if (rc == PIO_OK && (disp > r->size || len > r->size - disp))
        rc = PIO_EINVAL; /* beyond the remote window: never sent */
    struct op *o = NULL;
    if (rc == PIO_OK && !(o = calloc(1, sizeof(*o))))
        rc = PIO_ENOMEM;
    struct pio_request *rq = NULL;
    if (rc == PIO_OK && req && !(rq = pio_req_ext_new()))
        rc = PIO_ENOMEM;
    if (rc != PIO_OK) {
        pthread_mutex_unlock(&W.mtx);
        free(o);
        free(rq);
        return rc;
    }
    r->inflight++;
    *o = (struct op){r, kind, 0, 0, len, old, rq, r->peer->ep};
    struct pio_rma_rkey *rk = r->rk;
    uint64_t at = r->base + disp;
    pthread_mutex_unlock(&W.mtx);
    if (len == 0 && (kind == OP_GET || kind == OP_PUT)) {
        rc = PIO_OK;
        op_finish(o, PIO_OK);
    } else if (kind == OP_GET)
        rc = W.ops->get(o->ep, buf, len, at, rk, op_cb, o);
    else if (kind == OP_PUT)
        rc = W.ops->put(o->ep, buf, len, at, rk, op_cb, o);
    else if (kind == OP_CAS)
        rc = W.ops->cas64(o->ep, at, rk, compare, value, old, op_cb, o);
    else
        rc = W.ops->fadd64(o->ep, at, rk, value, old, op_cb, o);
    if (rc != PIO_OK) { /* the callback will not run */
        pthread_mutex_lock(&W.mtx);
        if ((rc == PIO_EIO || rc == PIO_EGONE || rc == PIO_ECANCELED) && r->peer)
            r->peer->dead = 1;
        r->inflight--;
        pthread_cond_broadcast(&W.cv);
        pthread_mutex_unlock(&W.mtx);
        free(o);
        free(rq);
        return rc;
    }
    if (req) {
        *req = rq;
        return PIO_OK;
    }
    pthread_mutex_lock(&W.mtx);
    /* a short operation's answer is due within microseconds: look for it
     * here for a moment before sleeping until the progress thread runs it */
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!o->done && W.ops->progress) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 > SPIN_US)
            break;
        pthread_mutex_unlock(&W.mtx);
        W.ops->progress(W.ctx);
        pthread_mutex_lock(&W.mtx);
    }
    while (!o->done)
        pthread_cond_wait(&W.cv, &W.mtx);
    rc = o->status;
    pthread_mutex_unlock(&W.mtx);
    free(o);
    return rc;
}

int PIO_Get(PIO_Win win, int partner, int process_ID, uint64_t disp, void *buf, size_t len)
{
    return start_op(win ? win->id : -1, partner, process_ID, OP_GET, disp, buf, len, 0, 0, NULL,
                    NULL);
}

int PIO_Put(PIO_Win win, int partner, int process_ID, uint64_t disp, const void *buf, size_t len)
{
    return start_op(win ? win->id : -1, partner, process_ID, OP_PUT, disp, (void *)buf, len, 0, 0,
                    NULL, NULL);
}

int PIO_Iget(PIO_Win win, int partner, int process_ID, uint64_t disp, void *buf, size_t len,
             PIO_Request *req)
{
    if (!req)
        return PIO_EINVAL;
    return start_op(win ? win->id : -1, partner, process_ID, OP_GET, disp, buf, len, 0, 0, NULL,
                    req);
}

int PIO_Iput(PIO_Win win, int partner, int process_ID, uint64_t disp, const void *buf, size_t len,
             PIO_Request *req)
{
    if (!req)
        return PIO_EINVAL;
    return start_op(win ? win->id : -1, partner, process_ID, OP_PUT, disp, (void *)buf, len, 0, 0,
                    NULL, req);
}

int PIO_Compare_and_swap(PIO_Win win, int partner, int process_ID, uint64_t disp, uint64_t compare,
                         uint64_t swap, uint64_t *old)
{
    return start_op(win ? win->id : -1, partner, process_ID, OP_CAS, disp, NULL, 8, compare, swap,
                    old, NULL);
}

int PIO_Fetch_and_add(PIO_Win win, int partner, int process_ID, uint64_t disp, uint64_t add,
                      uint64_t *old)
{
    return start_op(win ? win->id : -1, partner, process_ID, OP_FADD, disp, NULL, 8, 0, add, old,
                    NULL);
}

int PIO_Win_number(PIO_Win win)
{
    return win && !win->remote ? win->id : -1;
}

int PIO_Win_remote(int number, PIO_Win *win)
{
    if (!win || number < 0)
        return PIO_EINVAL;
    struct pio_win *w = calloc(1, sizeof(*w));
    if (!w)
        return PIO_ENOMEM;
    w->id = number;
    w->remote = 1;
    *win = w;
    return PIO_OK;
}

int PIO_Win_flush(PIO_Win win, int partner, int process_ID)
{
    if (!win || process_ID < PIO_ANY_PROCESS)
        return PIO_EINVAL;
    int p = PIO_ANY_PARTNER;
    if (partner != PIO_ANY_PARTNER) {
        int rc = target(partner, &p);
        if (rc != PIO_OK)
            return rc;
    }
    /* every operation here completes at the target before it completes:
     * flushing is waiting for those in flight */
    pthread_mutex_lock(&W.mtx);
    for (;;) {
        int busy = 0;
        for (struct rwin *r = W.rwins; r; r = r->next)
            if (r->id == win->id && (p == PIO_ANY_PARTNER || r->partner == p) &&
                (process_ID == PIO_ANY_PROCESS || r->proc == process_ID) && r->inflight > 0)
                busy = 1;
        if (!busy || !W.running)
            break;
        pthread_cond_wait(&W.cv, &W.mtx);
    }
    pthread_mutex_unlock(&W.mtx);
    return PIO_OK;
}

/* ---- the end ---- */

void pio_win_exit(void)
{
    pthread_mutex_lock(&W.mtx);
    if (!W.running) {
        pthread_mutex_unlock(&W.mtx);
        return;
    }
    W.stop = 1;
    pthread_cond_broadcast(&W.cv);
    pthread_mutex_unlock(&W.mtx);
    pthread_join(W.thread, NULL);
    /* our windows: nobody will be told any more */
    pthread_mutex_lock(&W.mtx);
    W.running = 0;
    pthread_cond_broadcast(&W.cv);
    for (int i = 0; i < W.nwins; i++)
        if (W.wins[i] && W.wins[i]->freeing)
            W.wins[i] = NULL; /* its PIO_Win_free is returning: it frees it */
    /* wait for operations in flight (their callbacks take W.mtx) */
    struct timespec dl;
    deadline(&dl, WAIT_S);
    for (;;) {
        int busy = 0;
        for (struct rwin *r = W.rwins; r; r = r->next)
            busy |= r->inflight > 0;
        if (!busy || pthread_cond_timedwait(&W.cv, &W.mtx, &dl) == ETIMEDOUT)
            break;
    }
    struct rwin *rw = W.rwins;
    struct peer *pe = W.peers;
    struct pending *pq = W.pend;
    W.rwins = NULL;
    W.peers = NULL;
    W.pend = NULL;
    pthread_mutex_unlock(&W.mtx);
    while (rw) {
        struct rwin *n = rw->next;
        W.ops->rkey_release(rw->rk);
        free(rw);
        rw = n;
    }
    while (pe) {
        struct peer *n = pe->next;
        W.ops->disconnect(pe->ep);
        free(pe);
        pe = n;
    }
    while (pq) {
        struct pending *n = pq->next;
        free(pq);
        pq = n;
    }
    for (int i = 0; i < W.nwins; i++)
        if (W.wins[i]) {
            W.ops->mem_deregister(W.wins[i]->mem);
            free(W.wins[i]->rkey);
            free(W.wins[i]->knows);
            free(W.wins[i]);
        }
    free(W.wins);
    W.wins = NULL;
    W.nwins = W.capwins = 0;
    W.ops->fini(W.ctx);
    W.ctx = NULL;
    W.self = -1;
}
