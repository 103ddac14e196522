/* core.c - piod's main thread: processes, peers, the 3-way handshake, grants.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * One thread owns every ZeroMQ socket and all message state; it polls (plain
 * poll(2)) the process socket and each process' connection (conn.c), the
 * express lanes, the control socket (tcp ROUTER, CURVE server, clients
 * checked by our ZAP handler against the key directory), the ZAP socket and
 * the eventfd through which channel threads report. To a peer we send on
 * our express lane when it is up, else through our DEALER to its control
 * ROUTER (send_peer).
 *
 * A message travels: P_SEND (+ P_SEND_DATA ranges of the sender's pool) ->
 * H_REQUEST -> the receiver announces it (P_MSG_NEW, in seq order per
 * stream) and grants chunks into the destination's receive region, choosing
 * a channel for each (H_REPLY) -> C_DATA on that channel straight into the
 * pool -> C_ACK (sender releases the pool range: P_RELEASE) and P_MSG_DATA
 * to the process, which copies and frees (P_FREE). Eager messages ride whole
 * in H_REQUEST and P_MSG_NEW. Local partners get the same path with a memcpy
 * in place of the channel.
 *
 * Back-pressure: grants exist only for allocated receive-region space, and a
 * message no receive has claimed yet may hold at most a quarter of the region
 * (all unclaimed ones, half), so an unexpected large message cannot starve
 * the one a process is waiting for.
 * Locks: this file takes d->ev_mtx (event queue) and d->key_mtx (keys, rx
 * slots) briefly, never together and never across a send.
 */
#include "piod/piod.h"
#include "piod/relay.h"
#include "piod/log.h"
#include "err.h"
#include "memtrim.h"
#include "tsan.h"
#include "types.h"

#include <errno.h>
#include <pwd.h>
#include <fcntl.h>
#include <dirent.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <zmq.h>

#define TICK_MS             100
#define RATE_SAMPLE_MS      400                /* busy time behind one rate sample (at least) */
#define PARTNER_WAIT_MAX    64                 /* partner look-ups one process may have waiting */
#define LANE_PAUSE          ((size_t)4 << 20)  /* an express lane this full: processes wait */
#define LANE_RESUME         ((size_t)1 << 20)  /* ... until it is down to this */
#define LANE_UNACKED_PAUSE  ((size_t)16 << 20) /* numbered frames a peer has not acked: wait */
#define LANE_UNACKED_RESUME ((size_t)8 << 20)  /* ... until down to this */

static int proc_index(struct piod *d, uint64_t cid);
static void gq_add(struct piod *d, struct piod_imsg *m);
static void gq_del(struct piod *d, struct piod_imsg *m);
static void ua_del(struct piod *d, struct piod_imsg *m);

/* ---- sending frames ---- */

static int enc(struct piod *d, const struct pio_frame *f, size_t *len)
{
    size_t need = pio_wire_encoded_size(f);
    if (need > d->scratch_len) {
        uint8_t *n = realloc(d->scratch, need);
        if (!n)
            return PIO_ENOMEM;
        d->scratch = n;
        d->scratch_len = need;
    }
    int rc = pio_wire_encode(f, d->scratch, d->scratch_len, len);
    if (rc != PIO_OK)
        PIOD_ERR("cannot encode %s: %s", pio_wire_type_name(f->type), PIO_Strerror(rc));
    return rc;
}

static int send_cid(struct piod *d, uint64_t cid, const struct pio_frame *f)
{
    size_t len;
    int rc = enc(d, f, &len);
    if (rc != PIO_OK)
        return rc;
    return piod_conn_send(d, cid, d->scratch, len);
}

static int send_proc(struct piod *d, int pi, const struct pio_frame *f)
{
    if (d->cfg.log_level >= PIOD_LOG_DEBUG)
        PIOD_DEBUG("to proc %d: %s", pi, pio_wire_type_name(f->type));
    struct piod_proc *p = &d->procs[pi];
    if (p->gone)
        return PIO_EGONE;
    return send_cid(d, p->cid, f);
}

static void express_out_down(struct piod *d, int peer, const char *why);

/* One frame onto our express lane: as it is, or, on a sealed lane, inside a
 * C_SEALED frame (seal.h). Frames are sealed in the order they enter xo,
 * which is the order the peer reads them: the nonces agree. Returns what
 * pio_fout_send does, or PIO_ENOMEM / PIO_EINVAL (the lane must go down). */
static int express_send(struct piod_peer_st *p, const uint8_t *buf, size_t len)
{
    if (!p->xo_sealed)
        return pio_fout_send(&p->xo, p->xout_fd, buf, len);
    size_t body = len + PIOD_SEAL_TAG, need = PIO_WIRE_HDR + body;
    if (need > p->xcap) {
        uint8_t *nb = realloc(p->xbuf, need);
        if (!nb)
            return PIO_ENOMEM;
        p->xbuf = nb;
        p->xcap = need;
    }
    int rc = pio_wire_sealed_wrap(p->xbuf, body);
    if (rc != PIO_OK)
        return rc;
    if (piod_seal_data(&p->xo_seal, p->xbuf, 12, buf, p->xbuf + PIO_WIRE_HDR, len,
                       p->xbuf + PIO_WIRE_HDR + len) != 0)
        return PIO_ENOMEM;
    return pio_fout_send(&p->xo, p->xout_fd, p->xbuf, need);
}

/* One kept frame out now: on our express lane while it is up (and, for a
 * frame sent again, has nothing waiting), else through our DEALER. A path
 * that fails or is full only delays it: lane.h keeps it until acked. */
static int lane_xmit(struct piod *d, int peer, struct piod_lseq_ent *e, int again)
{
    struct piod_peer_st *p = &d->peers[peer];
    if (p->xout && !(again && p->xo.queued)) {
        int rc = express_send(p, e->frame, e->len);
        if (rc == PIO_OK) {
            e->via = PIOD_VIA_LANE;
            e->sent_ms = piod_now_ms();
            return 1;
        }
        express_out_down(d, peer, PIO_Strerror(rc)); /* sends e again, on ZeroMQ */
        return 1;
    }
    if (p->xout)
        return 0; /* the lane still works through its queue: e is in it or went */
    if (zmq_send(p->dealer, e->frame, e->len, ZMQ_DONTWAIT) < 0) {
        e->via = PIOD_VIA_NONE; /* its queue is full: the resend clock brings it */
        return 0;
    }
    e->via = PIOD_VIA_ZMQ;
    e->sent_ms = piod_now_ms();
    return 1;
}

/* Every kept frame to peer goes again (after a lane failure: on ZeroMQ,
 * since xout is gone; after the resend clock: whichever path is up). */
static void lane_replay(struct piod *d, int peer)
{
    struct piod_lseq *l = &d->peers[peer].lq;
    for (struct piod_lseq_ent *e = l->head; e; e = e->next)
        l->resent += (uint64_t)lane_xmit(d, peer, e, 1);
}

/* An unnumbered frame (H_HELLO, H_ACK): ZeroMQ for H_HELLO; the lane when it
 * is up and empty for H_ACK (an ack must not wait behind a full lane). */
static int send_peer_raw(struct piod *d, int peer, const uint8_t *buf, size_t len, int type)
{
    struct piod_peer_st *p = &d->peers[peer];
    if (type != PIO_F_H_HELLO && p->xout && !p->xo.queued) {
        int rc = express_send(p, buf, len);
        if (rc == PIO_OK)
            return PIO_OK;
        express_out_down(d, peer, PIO_Strerror(rc));
    }
    if (zmq_send(p->dealer, buf, len, ZMQ_DONTWAIT) < 0) {
        PIOD_ERR("control queue to %s is full (%s): frame %s dropped", p->cfg->name,
                 zmq_strerror(errno), pio_wire_type_name(type));
        return PIO_EAGAIN;
    }
    return PIO_OK;
}

/* Send f to peer: numbered and kept until the peer acknowledges it (every
 * type but H_HELLO). src/sid: the process and send id of an eager message
 * that waits for no outcome, told if the frame is lost with the peer's run
 * (src -1 otherwise). Fails only when f cannot be kept (PIO_ENOMEM,
 * PIO_EINVAL): a broken path delays a kept frame, it never loses it. */
static int send_peer_msg(struct piod *d, int peer, const struct pio_frame *f, int src, uint64_t sid,
                         int owner)
{
    size_t len;
    int rc;
    if (f->type == PIO_F_H_HELLO) {
        if ((rc = enc(d, f, &len)) != PIO_OK)
            return rc;
        return send_peer_raw(d, peer, d->scratch, len, f->type);
    }
    /* encoded straight into the entry kept for replay, behind the room for
     * its H_SEQ header: the frame is wrapped without a copy */
    size_t need = pio_wire_encoded_size(f);
    struct piod_lseq_ent *e = need ? piod_lseq_new(need) : NULL;
    rc = !need ? PIO_EINVAL : !e ? PIO_ENOMEM : PIO_OK;
    if (rc == PIO_OK && (rc = pio_wire_encode(f, piod_lseq_inner(e), need, &len)) != PIO_OK)
        free(e);
    if (rc == PIO_OK) {
        e->owner = owner;
        rc = piod_lseq_push(&d->peers[peer].lq, e, d->epoch, len, src, sid, piod_now_ms());
    }
    if (rc == PIO_OK && owner >= 0)
        d->procs[owner].lane_bytes += e->len; /* lane_freed takes it off */
    if (rc != PIO_OK) {
        PIOD_ERR("cannot keep %s for %s: %s", pio_wire_type_name(f->type), d->peers[peer].cfg->name,
                 PIO_Strerror(rc));
        return rc;
    }
    (void)lane_xmit(d, peer, e, 0);
    return PIO_OK;
}

static int send_peer(struct piod *d, int peer, const struct pio_frame *f)
{
    return send_peer_msg(d, peer, f, -1, 0, -1);
}

/* A kept frame is freed: its process' share of the lanes shrinks. */
static void lane_freed(void *arg, const struct piod_lseq_ent *e)
{
    struct piod *d = arg;
    if (e->owner < 0 || e->owner >= d->nprocs_max)
        return;
    struct piod_proc *p = &d->procs[e->owner];
    p->lane_bytes = p->lane_bytes > e->len ? p->lane_bytes - e->len : 0;
}

/* Tell peer how far its numbered frames have come, when it is due (force:
 * whatever moved since the last ack; the tick). */
static void lane_ack(struct piod *d, int peer, int force)
{
    struct piod_lseq *l = &d->peers[peer].lq;
    uint64_t ack = piod_lseq_ack_due(l, force);
    if (!ack || !d->peers[peer].hello_seen)
        return;
    struct pio_frame f;
    f.type = PIO_F_H_ACK;
    f.flags = 0;
    f.u.h_ack = (struct pio_h_ack){.src_epoch = d->epoch, .dst_epoch = l->peer_epoch, .ack = ack};
    size_t len;
    if (enc(d, &f, &len) == PIO_OK && send_peer_raw(d, peer, d->scratch, len, f.type) == PIO_OK)
        piod_lseq_ack_told(l, ack);
}

static void send_ranges(struct piod *d, int pi, int type, uint64_t id, uint64_t msg_off,
                        uint64_t off, uint64_t len)
{
    struct pio_frame f; /* hot (per chunk): only the fields encoded are set */
    pio_wire_ranges1(&f, type, id, msg_off, off, len);
    send_proc(d, pi, &f);
}

static void send_done_flags(struct piod *d, int pi, int type, uint16_t flags, uint64_t id,
                            int status)
{
    struct pio_frame f;
    memset(&f.u.p_done, 0, sizeof(f.u.p_done));
    f.type = (uint8_t)type;
    f.flags = flags;
    f.u.p_done.id = id;
    f.u.p_done.status = status;
    send_proc(d, pi, &f);
}

static void send_done(struct piod *d, int pi, int type, uint64_t id, int status)
{
    send_done_flags(d, pi, type, 0, id, status);
}

/* P_SEND_DONE with PIO_WSD_CANCELLED: an incoming message (key) was cancelled. */
static void send_cancel(struct piod *d, int pi, uint64_t key, int status)
{
    send_done_flags(d, pi, PIO_F_P_SEND_DONE, PIO_WSD_CANCELLED, key, status);
}

static void send_h_done(struct piod *d, int peer, uint64_t msgid, int status)
{
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_H_DONE;
    f.u.h_done.msgid = msgid;
    f.u.h_done.status = status;
    send_peer(d, peer, &f);
}

/* ---- event queue (any thread -> main) ---- */

void piod_post(struct piod *d, struct piod_ev *ev)
{
    ev->next = NULL;
    pthread_mutex_lock(&d->ev_mtx);
    if (d->ev_tail)
        d->ev_tail->next = ev;
    else
        d->ev_head = ev;
    d->ev_tail = ev;
    pthread_mutex_unlock(&d->ev_mtx);
    uint64_t one = 1;
    ssize_t w = write(d->evfd, &one, sizeof(one));
    (void)w;
}

/* ---- registry ---- */

/* Applications of a peer that have left and are still remembered (so that
 * a send to one fails with PIO_EGONE rather than waiting for it): the most
 * recent ones, as many as the local left_ring. Names that differ per run
 * (a pid, a counter) would otherwise grow the table, and every look-up that
 * walks it, for as long as the piods run. */
#define REMOTE_LEFT_MAX 1024

/* Forget the application of p that left longest ago, if REMOTE_LEFT_MAX have left. */
static void remote_apps_trim(struct piod_peer_st *p)
{
    int nleft = 0, oldest = -1;
    for (int i = 0; i < p->napps; i++)
        if (p->apps[i].njoined == 0) {
            nleft++;
            if (oldest < 0 || p->apps[i].left_at < p->apps[oldest].left_at)
                oldest = i;
        }
    if (nleft < REMOTE_LEFT_MAX)
        return;
    free(p->apps[oldest].joined);
    p->apps[oldest] = p->apps[--p->napps];
}

static struct piod_remote_app *remote_app(struct piod_peer_st *p, const char *app, uint32_t nprocs,
                                          int create)
{
    for (int i = 0; i < p->napps; i++)
        if (strcmp(p->apps[i].app, app) == 0)
            return &p->apps[i];
    if (!create || nprocs == 0 || nprocs > (1u << 24))
        return NULL;
    remote_apps_trim(p);
    struct piod_remote_app *n = realloc(p->apps, (size_t)(p->napps + 1) * sizeof(*n));
    if (!n)
        return NULL;
    p->apps = n;
    struct piod_remote_app *a = &p->apps[p->napps];
    memset(a, 0, sizeof(*a));
    snprintf(a->app, sizeof(a->app), "%s", app);
    a->nprocs = nprocs;
    a->joined = calloc(nprocs, 1);
    if (!a->joined)
        return NULL;
    p->napps++;
    return a;
}

static void remote_apps_clear(struct piod_peer_st *p)
{
    for (int i = 0; i < p->napps; i++)
        free(p->apps[i].joined);
    free(p->apps);
    p->apps = NULL;
    p->napps = 0;
}

/* ---- joined processes by name ---- */

static uint64_t name_hash(const char *app)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const unsigned char *c = (const unsigned char *)app; *c; c++)
        h = (h ^ *c) * 1099511628211ull;
    return h;
}

static void proc_names_add(struct piod *d, int pi)
{
    struct piod_proc *p = &d->procs[pi];
    uint64_t h = name_hash(p->app);
    if (piod_htab_add(&d->proc_app, &p->h_app, h) != 0)
        return;
    if (piod_htab_add(&d->proc_name, &p->h_name, piod_hash64(h, p->proc)) != 0) {
        piod_htab_del(&d->proc_app, &p->h_app);
        return;
    }
    p->named = 1;
}

static void proc_names_del(struct piod *d, int pi)
{
    struct piod_proc *p = &d->procs[pi];
    if (!p->named)
        return;
    piod_htab_del(&d->proc_app, &p->h_app);
    piod_htab_del(&d->proc_name, &p->h_name);
    p->named = 0;
}

/* The joined process app:proc here (index in d->procs), or -1. */
static int proc_by_name(struct piod *d, const char *app, uint32_t proc)
{
    uint64_t h = piod_hash64(name_hash(app), proc);
    for (struct piod_hlink *l = piod_htab_first(&d->proc_name, h); l; l = piod_htab_next(l)) {
        struct piod_proc *p = PIOD_CONTAINER(l, struct piod_proc, h_name);
        if (p->used && !p->gone && p->proc == proc && strcmp(p->app, app) == 0)
            return (int)(p - d->procs);
    }
    return -1;
}

/* A joined process of app here, or NULL. */
static struct piod_proc *proc_of_app(struct piod *d, const char *app)
{
    uint64_t h = name_hash(app);
    for (struct piod_hlink *l = piod_htab_first(&d->proc_app, h); l; l = piod_htab_next(l)) {
        struct piod_proc *p = PIOD_CONTAINER(l, struct piod_proc, h_app);
        if (p->used && !p->gone && strcmp(p->app, app) == 0)
            return p;
    }
    return NULL;
}

/* Where is application app? *peer = -1 for this host; returns nprocs or 0. */
static uint32_t left_nprocs(const char *app, int *peer);

static uint32_t find_app(struct piod *d, const char *app, int *peer)
{
    struct piod_proc *lp = proc_of_app(d, app);
    if (lp) {
        *peer = -1;
        return lp->nprocs;
    }
    for (int p = 0; p < d->npeers; p++) {
        struct piod_remote_app *a = remote_app(&d->peers[p], app, 0, 0);
        if (a && a->njoined > 0) {
            *peer = p;
            return a->nprocs;
        }
    }
    /* An application that has left is still known: a partner may name it
     * after its last messages arrived (they are delivered), and sends to it
     * then fail with PIO_EGONE instead of waiting for it to appear. */
    for (int p = 0; p < d->npeers; p++) {
        struct piod_remote_app *a = remote_app(&d->peers[p], app, 0, 0);
        if (a) {
            *peer = p;
            return a->nprocs;
        }
    }
    return left_nprocs(app, peer);
}

static void send_registry(struct piod *d, int peer, int only_proc, uint32_t state)
{
    struct pio_frame *f = calloc(1, sizeof(*f));
    if (!f)
        return;
    f->type = PIO_F_H_REGISTRY;
    f->u.h_registry.full = only_proc < 0;
    for (int i = 0; i < d->nprocs_max; i++) {
        struct piod_proc *p = &d->procs[i];
        if (!p->used || (only_proc >= 0 && i != only_proc) || (only_proc < 0 && p->gone))
            continue;
        struct pio_reg_entry *e = &f->u.h_registry.e[f->u.h_registry.n++];
        snprintf(e->app, sizeof(e->app), "%s", p->app);
        e->nprocs = p->nprocs;
        e->proc = p->proc;
        e->state = only_proc >= 0 ? state : PIO_WREG_JOINED;
        if (f->u.h_registry.n == PIO_WIRE_MAX_REG) {
            send_peer(d, peer, f);
            f->u.h_registry.n = 0;
            f->u.h_registry.full = 0;
        }
    }
    if (f->u.h_registry.n > 0 || f->u.h_registry.full)
        send_peer(d, peer, f);
    free(f);
}

static void broadcast_event(struct piod *d, const char *app, uint32_t proc, uint32_t nprocs,
                            uint32_t kind)
{
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_EVENT;
    f.u.p_event.kind = kind;
    f.u.p_event.proc = proc;
    f.u.p_event.nprocs = nprocs;
    snprintf(f.u.p_event.app, sizeof(f.u.p_event.app), "%s", app);
    for (int i = 0; i < d->nprocs_max; i++)
        if (d->procs[i].used && !d->procs[i].gone && strcmp(d->procs[i].app, app) != 0)
            send_proc(d, i, &f);
}

static void answer_partner(struct piod *d, struct piod_pending_partner *pp, int status)
{
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_PARTNER_INFO;
    f.u.p_partner_info.req = pp->req;
    int peer = -1;
    uint32_t n = find_app(d, pp->app, &peer);
    f.u.p_partner_info.status = n ? PIO_OK : status;
    f.u.p_partner_info.nprocs = n;
    if (n && peer >= 0) {
        f.u.p_partner_info.channels = (uint32_t)d->peers[peer].nchan;
        const struct piod_peer *pc = d->peers[peer].cfg;
        snprintf(f.u.p_partner_info.system, sizeof(f.u.p_partner_info.system), "%s",
                 pc->system[0] ? pc->system : pc->name);
        snprintf(f.u.p_partner_info.host, sizeof(f.u.p_partner_info.host), "%s",
                 d->peers[peer].host);
    } else if (n) {
        snprintf(f.u.p_partner_info.system, sizeof(f.u.p_partner_info.system), "%s", d->cfg.system);
        snprintf(f.u.p_partner_info.host, sizeof(f.u.p_partner_info.host), "%s", d->cfg.name);
    }
    send_cid(d, pp->cid, &f);
}

/* Answer pending partner look-ups that can be answered now (or timed out). */
static void pending_partners(struct piod *d, uint64_t now)
{
    struct piod_pending_partner **pp = &d->pending;
    while (*pp) {
        struct piod_pending_partner *x = *pp;
        int peer;
        if (find_app(d, x->app, &peer) || now >= x->deadline_ms) {
            int refused = 0;
            for (int k = 0; k < d->npeers; k++)
                refused |= d->peers[k].refused;
            answer_partner(d, x, refused ? PIO_EREFUSED : PIO_EPARTNER);
            *pp = x->next;
            free(x);
        } else {
            pp = &x->next;
        }
    }
}

/* ---- streams (ordering) ---- */

static uint64_t stream_hash(int peer, const char *src_app, uint32_t src_proc, const char *dst_app,
                            uint32_t dst_proc, int32_t tag)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    uint32_t nums[4] = {(uint32_t)peer, src_proc, dst_proc, (uint32_t)tag};
    const uint8_t *p = (const uint8_t *)nums;
    for (size_t i = 0; i < sizeof(nums); i++)
        h = (h ^ p[i]) * 1099511628211ull;
    for (const char *c = src_app; *c; c++)
        h = (h ^ (uint8_t)*c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull; /* "ab"+"c" differs from "a"+"bc" */
    for (const char *c = dst_app; *c; c++)
        h = (h ^ (uint8_t)*c) * 1099511628211ull;
    return h;
}

/* streams_grow - double t's buckets (the first call makes 1024). */
static int streams_grow(struct piod_streams *t)
{
    size_t nb = t->nb ? t->nb * 2 : 1024;
    struct piod_stream **b = calloc(nb, sizeof(*b));
    if (!b)
        return -1;
    for (size_t i = 0; i < t->nb; i++)
        while (t->b[i]) {
            struct piod_stream *s = t->b[i];
            t->b[i] = s->next;
            s->next = b[s->hash % nb];
            b[s->hash % nb] = s;
        }
    free(t->b);
    t->b = b;
    t->nb = nb;
    return 0;
}

/* stream_find - the stream of that tuple in t, NULL if there is none. */
static struct piod_stream *stream_find(struct piod_streams *t, int peer, const char *src_app,
                                       uint32_t src_proc, const char *dst_app, uint32_t dst_proc,
                                       int32_t tag)
{
    uint64_t h = stream_hash(peer, src_app, src_proc, dst_app, dst_proc, tag);
    if (t->nb)
        for (struct piod_stream *s = t->b[h % t->nb]; s; s = s->next)
            if (s->hash == h && s->peer == peer && s->src_proc == src_proc &&
                s->dst_proc == dst_proc && s->tag == tag && strcmp(s->src_app, src_app) == 0 &&
                strcmp(s->dst_app, dst_app) == 0)
                return s;
    return NULL;
}

/* stream_get - the stream of that tuple in t, made (next_seq 0) if new;
 * NULL out of memory. */
static struct piod_stream *stream_get(struct piod_streams *t, int peer, const char *src_app,
                                      uint32_t src_proc, const char *dst_app, uint32_t dst_proc,
                                      int32_t tag)
{
    struct piod_stream *found = stream_find(t, peer, src_app, src_proc, dst_app, dst_proc, tag);
    if (found)
        return found;
    uint64_t h = stream_hash(peer, src_app, src_proc, dst_app, dst_proc, tag);
    if ((t->n >= 2 * t->nb) && streams_grow(t) != 0)
        return NULL;
    struct piod_stream *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->hash = h;
    s->peer = peer;
    snprintf(s->src_app, sizeof(s->src_app), "%s", src_app);
    snprintf(s->dst_app, sizeof(s->dst_app), "%s", dst_app);
    s->src_proc = src_proc;
    s->dst_proc = dst_proc;
    s->tag = tag;
    s->next = t->b[h % t->nb];
    t->b[h % t->nb] = s;
    t->n++;
    return s;
}

/* streams_drop - forget the streams of peer (every stream if peer < 0;
 * then the buckets go too). */
static void streams_drop(struct piod_streams *t, int peer)
{
    for (size_t i = 0; i < t->nb; i++)
        for (struct piod_stream **sp = &t->b[i]; *sp;) {
            if (peer < 0 || (*sp)->peer == peer) {
                struct piod_stream *s = *sp;
                *sp = s->next;
                free(s);
                t->n--;
            } else {
                sp = &(*sp)->next;
            }
        }
    if (peer < 0) {
        free(t->b);
        t->b = NULL;
        t->nb = t->n = 0;
    }
}

/* A stream's numbers live as long as both its ends: when the source or the
 * destination process leaves, both piods forget the stream (the sender's
 * when its process leaves or the peer says the destination did, the
 * receiver's when its process leaves or the peer says the source did), and
 * a later process of the same name starts again from 0 on both sides. So
 * the tables hold what is live, not every name that ever sent (pcp and pfs
 * clients carry their pid in their name, pfs gives each request its own
 * reply tag). A receiver's stream with a request still waiting to be
 * announced in order is kept, marked gone, until none waits. */
enum { STREAM_SRC = 1, STREAM_DST = 2 };

/* An incoming request of stream s waits to be announced (rx streams). */
static int stream_waiting(struct piod *d, const struct piod_stream *s)
{
    for (struct piod_imsg *m = d->imsgs; m; m = m->next)
        if (!m->announced && m->peer == s->peer && m->src_proc == s->src_proc &&
            m->dst_proc == s->dst_proc && m->tag == s->tag && strcmp(m->src_app, s->src_app) == 0 &&
            strcmp(m->dst_app, s->dst_app) == 0)
            return 1;
    return 0;
}

/* streams_forget - drop the streams of t whose end (STREAM_SRC or
 * STREAM_DST) is process app:proc of peer (-2: of any peer). */
static void streams_forget(struct piod *d, struct piod_streams *t, int peer, int end,
                           const char *app, uint32_t proc)
{
    for (size_t i = 0; i < t->nb; i++)
        for (struct piod_stream **sp = &t->b[i]; *sp;) {
            struct piod_stream *s = *sp;
            int match = (peer == -2 || s->peer == peer) &&
                        (end == STREAM_SRC ? s->src_proc == proc && strcmp(s->src_app, app) == 0
                                           : s->dst_proc == proc && strcmp(s->dst_app, app) == 0);
            if (!match) {
                sp = &s->next;
                continue;
            }
            if (t == &d->rx_streams && stream_waiting(d, s)) {
                d->streams_gone++;
                s->gone = 1;
                sp = &s->next;
                continue;
            }
            *sp = s->next;
            free(s);
            t->n--;
        }
}

/* streams_sweep - drop the rx streams marked gone that no request waits on
 * any more (each tick while there are some: rare, and then few). The count
 * is taken afresh, so a peer's reset (streams_drop) cannot leave it wrong. */
static void streams_sweep(struct piod *d)
{
    struct piod_streams *t = &d->rx_streams;
    if (d->streams_gone == 0)
        return;
    size_t still = 0;
    for (size_t i = 0; i < t->nb; i++)
        for (struct piod_stream **sp = &t->b[i]; *sp;) {
            struct piod_stream *s = *sp;
            if (!s->gone || stream_waiting(d, s)) {
                still += s->gone;
                sp = &s->next;
                continue;
            }
            *sp = s->next;
            free(s);
            t->n--;
        }
    d->streams_gone = still;
}

/* ---- message lookup ---- */

static uint64_t omsg_sid_hash(int src, uint64_t sid)
{
    return piod_hash64((uint64_t)src, sid);
}

static struct piod_omsg *omsg_find(struct piod *d, uint64_t msgid)
{
    for (struct piod_hlink *l = piod_htab_first(&d->omsg_id, msgid); l; l = piod_htab_next(l)) {
        struct piod_omsg *m = PIOD_CONTAINER(l, struct piod_omsg, h_id);
        if (m->msgid == msgid)
            return m;
    }
    return NULL;
}

static struct piod_omsg *omsg_by_sid(struct piod *d, int src, uint64_t sid)
{
    uint64_t h = omsg_sid_hash(src, sid);
    for (struct piod_hlink *l = piod_htab_first(&d->omsg_sid, h); l; l = piod_htab_next(l)) {
        struct piod_omsg *m = PIOD_CONTAINER(l, struct piod_omsg, h_sid);
        if (m->src == src && m->sid == sid)
            return m;
    }
    return NULL;
}

static uint64_t imsg_id_hash(int peer, uint64_t msgid)
{
    return piod_hash64((uint64_t)(int64_t)peer, msgid);
}

static struct piod_imsg *imsg_find(struct piod *d, int peer, uint64_t msgid)
{
    uint64_t h = imsg_id_hash(peer, msgid);
    for (struct piod_hlink *l = piod_htab_first(&d->imsg_id, h); l; l = piod_htab_next(l)) {
        struct piod_imsg *m = PIOD_CONTAINER(l, struct piod_imsg, h_id);
        if (m->peer == peer && m->msgid == msgid)
            return m;
    }
    return NULL;
}

static struct piod_imsg *imsg_by_key(struct piod *d, int dst, uint64_t key)
{
    uint64_t h = piod_hash64((uint64_t)dst, key);
    for (struct piod_hlink *l = piod_htab_first(&d->imsg_key, h); l; l = piod_htab_next(l)) {
        struct piod_imsg *m = PIOD_CONTAINER(l, struct piod_imsg, h_key);
        if (m->dst == dst && m->key == key)
            return m;
    }
    return NULL;
}

/* m has its destination process and key (announce_all): findable by them */
static void imsg_keyed(struct piod *d, struct piod_imsg *m)
{
    if (piod_htab_add(&d->imsg_key, &m->h_key, piod_hash64((uint64_t)m->dst, m->key)) == 0)
        m->keyed = 1;
}

/* m is a new outgoing message: in the list and the tables */
static int omsg_link(struct piod *d, struct piod_omsg *m)
{
    if (piod_htab_add(&d->omsg_id, &m->h_id, m->msgid) != 0)
        return PIO_ENOMEM;
    if (piod_htab_add(&d->omsg_sid, &m->h_sid, omsg_sid_hash(m->src, m->sid)) != 0) {
        piod_htab_del(&d->omsg_id, &m->h_id);
        return PIO_ENOMEM;
    }
    m->prev = NULL;
    m->next = d->omsgs;
    if (d->omsgs)
        d->omsgs->prev = m;
    d->omsgs = m;
    return PIO_OK;
}

static void omsg_free(struct piod *d, struct piod_omsg *m)
{
    PIOD_DEBUG("out msg %llu done: %u of %u chunks acked", (unsigned long long)m->msgid, m->nacked,
               m->nchunks);
    if (m->prev)
        m->prev->next = m->next;
    else
        d->omsgs = m->next;
    if (m->next)
        m->next->prev = m->prev;
    piod_htab_del(&d->omsg_id, &m->h_id);
    piod_htab_del(&d->omsg_sid, &m->h_sid);
    if (m->local)
        m->local->local = NULL;
    piod_proc_unref(d, &d->procs[m->src]);
    free(m->data_off);
    free(m->grant);
    free(m->state);
    free(m);
}

static void imsg_free(struct piod *d, struct piod_imsg *m)
{
    if (m->prev)
        m->prev->next = m->next;
    else
        d->imsgs = m->next;
    if (m->next)
        m->next->prev = m->prev;
    else
        d->imsgs_tail = m->prev;
    piod_htab_del(&d->imsg_id, &m->h_id);
    if (m->keyed)
        piod_htab_del(&d->imsg_key, &m->h_key);
    ua_del(d, m);
    gq_del(d, m);
    if (m->local)
        m->local->local = NULL;
    free(m->eager);
    free(m->pool_off);
    free(m->state);
    free(m->chan);
    free(m);
}

static int imsg_append(struct piod *d, struct piod_imsg *m)
{
    if (piod_htab_add(&d->imsg_id, &m->h_id, imsg_id_hash(m->peer, m->msgid)) != 0)
        return PIO_ENOMEM;
    m->next = NULL;
    m->prev = d->imsgs_tail;
    if (d->imsgs_tail)
        d->imsgs_tail->next = m;
    else
        d->imsgs = m;
    d->imsgs_tail = m;
    return PIO_OK;
}

/* The sender-side outcome of a message: tell the sending process (sync
 * sends wait for it; failures are reported either way). */
static void omsg_finish(struct piod *d, struct piod_omsg *m, int status)
{
    m->outcome = 1;
    if (!m->done_sent && !d->procs[m->src].gone && ((m->flags & PIO_WF_SYNC) || status != PIO_OK)) {
        send_done(d, m->src, PIO_F_P_SEND_DONE, m->sid, status);
        m->done_sent = 1;
    }
}

/* Free m once nothing of it is on a channel any more and it has its outcome. */
static void omsg_maybe_free(struct piod *d, struct piod_omsg *m, int have_outcome)
{
    for (uint32_t i = 0; i < m->nchunks; i++)
        if (m->state[i] == PIOD_OC_QUEUED)
            return;
    if (m->nacked < m->nchunks && !have_outcome)
        return;
    if ((m->flags & PIO_WF_SYNC) && !have_outcome)
        return;
    omsg_free(d, m);
}

/* ---- sender side: chunks to channels ---- */

/* Choose a live tx channel near the one granted: the grant's if it is up,
 * else the up channel with the fewest queued bytes; -1 if none is up. */
static int tx_pick(struct piod *d, int peer, int granted)
{
    struct piod_peer_st *p = &d->peers[peer];
    if (granted >= 0 && granted < p->nchan && p->tx[granted] &&
        piod_tx_state(p->tx[granted], NULL) == PIO_WCHAN_UP)
        return granted;
    int best = -1;
    uint64_t best_q = 0;
    for (int i = 0; i < p->nchan; i++) {
        uint64_t q;
        if (!p->tx[i] || piod_tx_state(p->tx[i], &q) != PIO_WCHAN_UP)
            continue;
        if (best < 0 || q < best_q) {
            best = i;
            best_q = q;
        }
    }
    return best;
}

static int chunk_queue(struct piod *d, struct piod_omsg *m, uint32_t i, int resend)
{
    int ch = tx_pick(d, m->peer, m->grant[i]);
    if (ch < 0) {
        d->tx_waiting = 1; /* retried when a channel comes up, and by tick */
        return PIO_ELINK;
    }
    struct piod_chunk *c = calloc(1, sizeof(*c));
    if (!c) {
        d->tx_waiting = 1;
        return PIO_ENOMEM;
    }
    struct piod_proc *src = &d->procs[m->src];
    c->msgid = m->msgid;
    c->off = (uint64_t)i * m->chunk;
    c->len = (uint32_t)((m->size - c->off) < m->chunk ? (m->size - c->off) : m->chunk);
    c->resend = (uint32_t)resend;
    c->data = src->base + m->data_off[i];
    c->proc = src;
    piod_proc_ref(src);
    m->state[i] = PIOD_OC_QUEUED;
    PIOD_DEBUG("chunk %llu+%llu queued on channel %d", (unsigned long long)c->msgid,
               (unsigned long long)c->off, ch);
    piod_tx_enqueue(d->peers[m->peer].tx[ch], c);
    return PIO_OK;
}

/* Queue every chunk of m that has both its data and its grant. */
static void omsg_pump(struct piod *d, struct piod_omsg *m);

/* ---- receiver side: announce and grant ---- */

static uint32_t chunk_len(uint64_t size, uint32_t chunk, uint32_t i)
{
    uint64_t off = (uint64_t)i * chunk;
    return (uint32_t)(size - off < chunk ? size - off : chunk);
}

static void imsg_fail(struct piod *d, struct piod_imsg *m, int status);

/* Copy one chunk of a local message from the sender's pool to the receiver's. */
static void local_copy(struct piod *d, struct piod_imsg *im, uint32_t i)
{
    struct piod_omsg *om = im->local;
    uint32_t len = chunk_len(im->size, im->chunk, i);
    struct piod_proc *dst = &d->procs[im->dst], *src = &d->procs[om->src];
    memcpy(dst->base + im->pool_off[i], src->base + om->data_off[i], len);
    im->state[i] = PIOD_IC_ARRIVED;
    im->narrived++;
    om->state[i] = PIOD_OC_ACKED;
    om->nacked++;
    if (!src->gone)
        send_ranges(d, om->src, PIO_F_P_RELEASE, 0, 0, om->data_off[i], len);
    send_ranges(d, im->dst, PIO_F_P_MSG_DATA, im->key, (uint64_t)i * im->chunk, im->pool_off[i],
                len);
    omsg_maybe_free(d, om, 0);
}

static void ua_add(struct piod *d, struct piod_imsg *m)
{
    m->ua_next = NULL;
    m->ua_prev = d->ua_tail;
    if (d->ua_tail)
        d->ua_tail->ua_next = m;
    else
        d->ua_head = m;
    d->ua_tail = m;
    m->in_ua = 1;
}

static void ua_del(struct piod *d, struct piod_imsg *m)
{
    if (!m->in_ua)
        return;
    if (m->ua_prev)
        m->ua_prev->ua_next = m->ua_next;
    else
        d->ua_head = m->ua_next;
    if (m->ua_next)
        m->ua_next->ua_prev = m->ua_prev;
    else
        d->ua_tail = m->ua_prev;
    m->in_ua = 0;
}

static void announce(struct piod *d, struct piod_imsg *m)
{
    struct pio_frame f;
    memset(&f.u.p_msg_new, 0, sizeof(f.u.p_msg_new));
    f.type = PIO_F_P_MSG_NEW;
    f.flags = 0;
    struct pio_p_msg_new *n = &f.u.p_msg_new;
    n->key = m->key;
    n->size = m->size;
    n->count = m->count;
    n->seq = m->seq;
    n->src_proc = m->src_proc;
    n->tag = m->tag;
    n->datatype = m->datatype;
    n->flags = m->flags;
    n->src_uid = m->src_uid;
    n->src_gid = m->src_gid;
    snprintf(n->src_app, sizeof(n->src_app), "%s", m->src_app);
    snprintf(n->src_system, sizeof(n->src_system), "%s", m->src_system);
    snprintf(n->src_user, sizeof(n->src_user), "%s", m->src_user);
    n->payload = (m->flags & PIO_WF_EAGER) ? m->eager : NULL;
    send_proc(d, m->dst, &f);
    m->announced = 1;
    ua_del(d, m);
    free(m->eager);
    m->eager = NULL;
    if (!(m->flags & PIO_WF_EAGER) && m->nchunks > 0)
        gq_add(d, m);
}

static int app_proc_left(struct piod *d, const char *app, uint32_t proc);

/* Announce every message whose process is here, in each stream's send order
 * (seq, per source process, destination process and tag); a message waiting
 * for its process to join holds back only the later messages to that same
 * process. */
static void announce_all(struct piod *d)
{
    int progress = 1;
    while (progress) {
        progress = 0;
        for (struct piod_imsg *m = d->ua_head; m;) {
            struct piod_imsg *next = m->ua_next;
            /* its process first: a message for one that has left fails
             * without making its stream again (that went with the process) */
            if (m->dst < 0) {
                m->dst = proc_by_name(d, m->dst_app, m->dst_proc);
                if (m->dst < 0) {
                    if (app_proc_left(d, m->dst_app, m->dst_proc))
                        imsg_fail(d, m, PIO_EGONE);
                    m = next;
                    continue;
                }
                m->key = ++d->procs[m->dst].next_key;
                imsg_keyed(d, m);
            }
            /* a peer's requests are announced in their stream's send order
             * (seq), whatever path each took (express lane or ZeroMQ, which
             * can overtake each other when the lane comes or goes) */
            struct piod_stream *st = m->peer >= 0
                                         ? stream_get(&d->rx_streams, m->peer, m->src_app,
                                                      m->src_proc, m->dst_app, m->dst_proc, m->tag)
                                         : NULL;
            if (st && m->seq > st->next_seq) {
                /* The peer's frames come once and in order (lane.h), so
                 * the ones before it will never come: it was numbered for
                 * an earlier process of this name (the destination left
                 * and another joined before the sender heard). It fails at
                 * both ends; it is never delivered past a hole. */
                PIOD_ERR("message %llu of %s:%u -> %s:%u tag %d (msgid %llu from %s) follows "
                         "%llu, which never came here: it was meant for an earlier process "
                         "%s:%u; failed (PIO_EGONE) at both ends",
                         (unsigned long long)m->seq, m->src_app, m->src_proc, m->dst_app,
                         m->dst_proc, m->tag, (unsigned long long)m->msgid,
                         d->peers[m->peer].cfg->name, (unsigned long long)st->next_seq, m->dst_app,
                         m->dst_proc);
                imsg_fail(d, m, PIO_EGONE);
                progress = 1;
                m = next;
                continue;
            }
            struct piod_proc *dp = &d->procs[m->dst];
            if (dp->own_senders && m->src_uid != (uint32_t)dp->uid) {
                if (!dp->warned_senders++)
                    PIOD_WARN("process %s:%u takes messages only from uid %u: refused one from "
                              "%s:%u (uid %u of system %s), and will refuse the like without "
                              "a word (PIO_EACCES at the sender)",
                              dp->app, dp->proc, (unsigned)dp->uid, m->src_app, m->src_proc,
                              (unsigned)m->src_uid, m->src_system);
                imsg_fail(d, m, PIO_EACCES);
                progress = 1;
                m = next;
                continue;
            }
            announce(d, m);
            if (st && m->seq >= st->next_seq)
                st->next_seq = m->seq + 1;
            progress = 1;
            if ((m->flags & PIO_WF_EAGER) && !(m->flags & PIO_WF_SYNC)) {
                if (m->local)
                    omsg_free(d, m->local);
                imsg_free(d, m);
            }
            m = next;
        }
    }
}

static uint64_t chan_cap(struct piod *d, struct piod_rxbal *b)
{
    uint64_t floor = 4ull * d->cfg.chunk;
    uint64_t by_rate = (uint64_t)(b->rate * 0.25);
    return by_rate > floor ? by_rate : floor;
}

/* ---- grants: destinations served in turn ----
 *
 * A message wants grants from its announcement until every chunk has one.
 * It waits in its destination's queue (claimed ones apart: a receive waits
 * for them). Destinations with wanting messages form a ring, served one
 * chunk per turn, so N receivers share what the channels carry equally and
 * a pass costs what it grants, not the number of messages in flight:
 *  - a destination whose own room is gone (region full, or its unclaimed
 *    share) leaves the ring until one of its own events (a free, a claim, a
 *    failed message) gives room back (grant_wake);
 *  - a pass ends as soon as no peer it could grant for has channel room. */

/* what a grant attempt met: granted; the destination's region is full; its
 * unclaimed share is full; this message's own share is; no channel room */
enum { G_OK, G_DST, G_SHARE, G_MSG, G_LINK };

static void ring_add(struct piod *d, int pi)
{
    struct piod_proc *p = &d->procs[pi];
    if (p->in_ring)
        return;
    p->in_ring = 1;
    if (d->ring < 0) {
        p->rg_next = p->rg_prev = pi;
        d->ring = pi;
    } else { /* just behind the cursor: served last in this round */
        struct piod_proc *c = &d->procs[d->ring];
        p->rg_next = d->ring;
        p->rg_prev = c->rg_prev;
        d->procs[c->rg_prev].rg_next = pi;
        c->rg_prev = pi;
    }
    d->ring_n++;
}

static void ring_del(struct piod *d, int pi)
{
    struct piod_proc *p = &d->procs[pi];
    if (!p->in_ring)
        return;
    p->in_ring = 0;
    d->ring_n--;
    if (p->rg_next == pi) {
        d->ring = -1;
        return;
    }
    d->procs[p->rg_prev].rg_next = p->rg_next;
    d->procs[p->rg_next].rg_prev = p->rg_prev;
    if (d->ring == pi)
        d->ring = p->rg_next;
}

static void gq_add(struct piod *d, struct piod_imsg *m)
{
    struct piod_proc *p = &d->procs[m->dst];
    int q = m->claimed ? 1 : 0;
    m->gq_next = NULL;
    m->gq_prev = p->gq_tail[q];
    if (p->gq_tail[q])
        p->gq_tail[q]->gq_next = m;
    else
        p->gq_head[q] = m;
    p->gq_tail[q] = m;
    m->in_gq = 1 + q;
    if (m->peer >= 0)
        d->peers[m->peer].gq_n++;
    else
        d->gq_local++;
    if (!p->g_blocked)
        ring_add(d, m->dst);
}

static void gq_del(struct piod *d, struct piod_imsg *m)
{
    if (!m->in_gq)
        return;
    struct piod_proc *p = &d->procs[m->dst];
    int q = m->in_gq - 1;
    if (m->gq_prev)
        m->gq_prev->gq_next = m->gq_next;
    else
        p->gq_head[q] = m->gq_next;
    if (m->gq_next)
        m->gq_next->gq_prev = m->gq_prev;
    else
        p->gq_tail[q] = m->gq_prev;
    m->in_gq = 0;
    if (m->peer >= 0)
        d->peers[m->peer].gq_n--;
    else
        d->gq_local--;
    if (!p->gq_head[0] && !p->gq_head[1]) {
        ring_del(d, m->dst);
        p->g_blocked = 0;
    }
}

/* Room came back in pi's own region or unclaimed share: on the ring again. */
static void grant_wake(struct piod *d, int pi)
{
    struct piod_proc *p = &d->procs[pi];
    p->g_blocked = 0;
    if (p->gq_head[0] || p->gq_head[1])
        ring_add(d, pi);
}

/* Has peer p's bundle room for another grant? */
static int peer_room(struct piod *d, int peer)
{
    struct piod_peer_st *p = &d->peers[peer];
    for (int k = 0; k < p->nchan; k++)
        if (p->bal[k].up && p->bal[k].outstanding < chan_cap(d, &p->bal[k]))
            return 1;
    return 0;
}

/* Could a pass grant anything at all? Not when every peer with wanting
 * messages lacks channel room and no local message wants a grant. */
static int grants_possible(struct piod *d)
{
    if (d->gq_local > 0)
        return 1;
    for (int p = 0; p < d->npeers; p++)
        if (d->peers[p].gq_n > 0 && peer_room(d, p))
            return 1;
    return 0;
}

/* Grant the next chunk of m (chunks are granted in order: m->ngranted). */
static int grant_chunk(struct piod *d, struct piod_imsg *m)
{
    struct piod_proc *dst = &d->procs[m->dst];
    uint32_t i = m->ngranted;
    uint32_t len = chunk_len(m->size, m->chunk, i);
    uint64_t region = dst->recv_len;
    if (!m->claimed) {
        uint64_t mine = (uint64_t)(m->ngranted - m->nfreed) * m->chunk;
        if (mine + len > region / 4)
            return G_MSG; /* its own share: waits for its frees (or a claim) */
        if (dst->unclaimed_bytes + len > region / 2) {
            if (!dst->warned_unclaimed) /* once per process: back-pressure is normal */
                PIOD_INFO("%s:%u has %llu bytes of messages no receive has claimed (half "
                          "its receive region): more wait until it receives",
                          dst->app, dst->proc, (unsigned long long)dst->unclaimed_bytes);
            dst->warned_unclaimed = 1;
            return G_SHARE;
        }
    }
    int remote = m->peer >= 0, ch = 0;
    struct piod_peer_st *p = remote ? &d->peers[m->peer] : NULL;
    if (remote) {
        struct piod_bal_chan bc[PIOD_MAX_LINKS];
        int any_room = 0;
        for (int k = 0; k < p->nchan; k++) {
            bc[k].up = p->bal[k].up && p->bal[k].outstanding < chan_cap(d, &p->bal[k]);
            bc[k].outstanding = p->bal[k].outstanding;
            bc[k].rate = p->bal[k].rate;
            any_room |= bc[k].up;
        }
        if (!any_room)
            return G_LINK;
        /* hosts of one peer system share its links: count what we granted
         * their channels on the same link too */
        for (int q = 0; p->cfg->system[0] && q < d->npeers; q++) {
            const struct piod_peer_st *o = &d->peers[q];
            if (o != p && strcmp(o->cfg->system, p->cfg->system) == 0)
                for (int k = 0; k < p->nchan && k < o->nchan; k++)
                    bc[k].outstanding += o->bal[k].outstanding;
        }
        if (m->conn == PIO_WCONN_USER) {
            /* the named channel, waiting for room on it unless it is down */
            int i_ch = m->conn_arg;
            if (i_ch < p->nchan && p->bal[i_ch].up && !bc[i_ch].up)
                return G_LINK;
            ch = piod_bal_user(bc, p->nchan, i_ch, len);
        } else if (m->conn == PIO_WCONN_STATIC) {
            int want = (int)(((uint64_t)m->src_proc + m->dst_proc) % (uint64_t)p->nchan);
            if (p->bal[want].up && !bc[want].up)
                return G_LINK;
            ch = piod_bal_static(bc, p->nchan, m->src_proc, m->dst_proc);
        } else {
            ch = piod_bal_dynamic(bc, p->nchan, len);
        }
        if (ch < 0)
            return G_LINK;
    }
    uint64_t off;
    if (pio_ralloc_get(&dst->recv, len, &off) != PIO_OK)
        return G_DST;
    struct piod_grant *g = NULL;
    if (remote && !(g = calloc(1, sizeof(*g)))) {
        pio_ralloc_put(&dst->recv, off, len);
        return G_LINK; /* tried again at the next event */
    }
    m->pool_off[i] = off;
    m->state[i] = PIOD_IC_GRANTED;
    m->chan[i] = (uint8_t)ch;
    m->ngranted++;
    if (!m->claimed)
        dst->unclaimed_bytes += len;
    if (m->ngranted == m->nchunks)
        gq_del(d, m);
    if (!remote) {
        if (m->local && m->local->data_off[i] != UINT64_MAX)
            local_copy(d, m, i);
        return G_OK;
    }
    p->bal[ch].outstanding += len;
    g->peer = m->peer;
    g->msgid = m->msgid;
    g->off = (uint64_t)i * m->chunk;
    g->len = len;
    g->dst = dst->base + off;
    g->proc = dst;
    struct pio_frame f; /* only the fields below are encoded */
    f.type = PIO_F_H_REPLY;
    f.u.h_reply.msgid = m->msgid;
    f.u.h_reply.n = 1;
    struct pio_grant *pg = &f.u.h_reply.g[0];
    pg->off = g->off; /* before the add: from then on a receiver thread owns g */
    piod_grant_add(d, g);
    pg->len = len;
    pg->channel = (uint16_t)ch;
    pg->host = 0;
    send_peer(d, m->peer, &f);
    return G_OK;
}

/* One chunk for destination pi: its claimed messages first, then the
 * unclaimed ones in arrival order. */
static int grant_dst(struct piod *d, int pi)
{
    struct piod_proc *p = &d->procs[pi];
    int link = 0;
    for (int q = 1; q >= 0; q--)
        for (struct piod_imsg *m = p->gq_head[q], *next; m; m = next) {
            next = m->gq_next;
            if (m->peer >= 0 && !peer_room(d, m->peer)) {
                link = 1;
                continue;
            }
            int r = grant_chunk(d, m);
            if (r == G_OK || r == G_DST)
                return r; /* a full region: nothing of pi's goes until it frees */
            if (r == G_LINK)
                link = 1;
            else if (r == G_SHARE)
                break; /* the unclaimed share: the same for every unclaimed one */
        }
    return link ? G_LINK : G_DST;
}

/* Grant what can be granted now: destinations in turn, a chunk each. */
static void grant_all(struct piod *d)
{
    int idle = 0;
    while (d->ring >= 0 && idle < d->ring_n && grants_possible(d)) {
        int pi = d->ring;
        struct piod_proc *p = &d->procs[pi];
        if (p->gone) {
            ring_del(d, pi);
            continue;
        }
        int r = grant_dst(d, pi);
        if (r == G_OK) {
            idle = 0;
            if (p->in_ring)
                d->ring = p->rg_next;
        } else if (r == G_DST) {
            p->g_blocked = 1;
            ring_del(d, pi);
        } else {
            idle++;
            d->ring = p->rg_next;
        }
    }
}

/* The receiver side of m is over: tell the sender when it asked or failed. */
static void imsg_complete(struct piod *d, struct piod_imsg *m, int status)
{
    if ((m->flags & PIO_WF_SYNC) || status != PIO_OK) {
        if (m->peer >= 0)
            send_h_done(d, m->peer, m->msgid, status);
        else if (m->local) {
            omsg_finish(d, m->local, status);
            omsg_maybe_free(d, m->local, 1);
        }
    }
    imsg_free(d, m);
}

static void imsg_fail(struct piod *d, struct piod_imsg *m, int status)
{
    if (m->peer >= 0 && !m->announced) { /* its place in the stream is taken */
        struct piod_stream *st = stream_find(&d->rx_streams, m->peer, m->src_app, m->src_proc,
                                             m->dst_app, m->dst_proc, m->tag);
        if (st && st->next_seq == m->seq)
            st->next_seq++;
    }
    int dsti = m->dst;
    if (m->dst >= 0) {
        struct piod_proc *dst = &d->procs[m->dst];
        for (uint32_t i = 0; i < m->nchunks; i++) {
            if (m->state[i] == PIOD_IC_GRANTED && m->peer >= 0) {
                struct piod_grant *g =
                    piod_grant_take(d, m->peer, m->msgid, (uint64_t)i * m->chunk);
                if (g) {
                    piod_proc_unref(d, g->proc);
                    free(g);
                }
                d->peers[m->peer].bal[m->chan[i]].outstanding -= chunk_len(m->size, m->chunk, i);
            }
            if ((m->state[i] == PIOD_IC_GRANTED || m->state[i] == PIOD_IC_ARRIVED) && !dst->gone) {
                pio_ralloc_put(&dst->recv, m->pool_off[i], chunk_len(m->size, m->chunk, i));
                if (!m->claimed)
                    dst->unclaimed_bytes -= chunk_len(m->size, m->chunk, i);
            }
        }
    }
    imsg_complete(d, m, status);
    if (dsti >= 0 && !d->procs[dsti].gone)
        grant_wake(d, dsti); /* what m held in its region is free */
}

/* Make an incoming message from a request (from a peer, or local). */
static struct piod_imsg *imsg_new(struct piod *d, int peer, const struct pio_h_request *rq)
{
    struct piod_imsg *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->peer = peer;
    m->msgid = rq->msgid;
    m->arrived_ms = piod_now_ms();
    m->dst = -1;
    snprintf(m->src_app, sizeof(m->src_app), "%s", rq->src_app);
    snprintf(m->dst_app, sizeof(m->dst_app), "%s", rq->dst_app);
    /* an admitted peer system stamps its own users (as an NFS client host
     * does with AUTH_SYS); which system it is, is ours to say */
    const struct piod_peer *pc = peer >= 0 ? d->peers[peer].cfg : NULL;
    snprintf(m->src_system, sizeof(m->src_system), "%s",
             !pc             ? d->cfg.system
             : pc->system[0] ? pc->system
                             : pc->name);
    m->src_uid = rq->src_uid;
    m->src_gid = rq->src_gid;
    snprintf(m->src_user, sizeof(m->src_user), "%s", rq->src_user);
    m->src_proc = rq->src_proc;
    m->dst_proc = rq->dst_proc;
    m->tag = rq->tag;
    m->seq = rq->seq;
    m->size = rq->size;
    m->count = rq->count;
    m->datatype = rq->datatype;
    m->flags = rq->flags;
    m->chunk = rq->chunk ? rq->chunk : d->cfg.chunk;
    m->conn = rq->conn;
    m->conn_arg = rq->conn_arg;
    if (rq->flags & PIO_WF_EAGER) {
        m->eager = malloc(rq->size ? rq->size : 1);
        if (!m->eager)
            goto fail;
        if (rq->size)
            memcpy(m->eager, rq->payload, rq->size);
    } else {
        m->nchunks = (uint32_t)((rq->size + m->chunk - 1) / m->chunk);
        m->pool_off = calloc(m->nchunks, sizeof(*m->pool_off));
        m->state = calloc(m->nchunks, 1);
        m->chan = calloc(m->nchunks, 1);
        if (!m->pool_off || !m->state || !m->chan)
            goto fail;
    }
    if (imsg_append(d, m) != PIO_OK)
        goto fail;
    ua_add(d, m);
    return m;
fail:
    free(m->eager);
    free(m->pool_off);
    free(m->state);
    free(m->chan);
    free(m);
    return NULL;
}

static void omsg_pump(struct piod *d, struct piod_omsg *m)
{
    if (m->peer < 0)
        return;
    for (uint32_t i = 0; i < m->nchunks; i++)
        if (m->state[i] == PIOD_OC_WAITING && m->grant[i] >= 0 && m->data_off[i] != UINT64_MAX)
            if (chunk_queue(d, m, i, 0) != PIO_OK)
                return;
}

/* ---- processes ---- */

struct left_entry {
    char app[PIO_WIRE_NAME];
    uint32_t proc, nprocs;
};
static struct left_entry left_ring[1024];
static unsigned left_n;

static int app_proc_left(struct piod *d, const char *app, uint32_t proc)
{
    (void)d;
    unsigned n = left_n < 1024 ? left_n : 1024;
    for (unsigned i = 0; i < n; i++)
        if (left_ring[i].proc == proc && strcmp(left_ring[i].app, app) == 0)
            return 1;
    return 0;
}

/* nprocs of a local application that has left (0 if none did), *peer = -1. */
static uint32_t left_nprocs(const char *app, int *peer)
{
    unsigned n = left_n < 1024 ? left_n : 1024;
    for (unsigned i = 0; i < n; i++)
        if (strcmp(left_ring[i].app, app) == 0) {
            *peer = -1;
            return left_ring[i].nprocs;
        }
    return 0;
}

static void left_forget(const char *app, uint32_t proc)
{
    unsigned n = left_n < 1024 ? left_n : 1024;
    for (unsigned i = 0; i < n; i++)
        if (left_ring[i].proc == proc && strcmp(left_ring[i].app, app) == 0)
            left_ring[i].app[0] = 0;
}

static int proc_index(struct piod *d, uint64_t cid)
{
    struct piod_conn *c = piod_conn_get(d, cid);
    if (!c || c->pi < 0 || c->pi >= d->nprocs_max)
        return -1;
    struct piod_proc *p = &d->procs[c->pi];
    return p->used && !p->gone && p->cid == cid ? c->pi : -1;
}

/* Give up an outgoing message: the receiver is told (status), the sender
 * too if it still waits, and m goes once no chunk of it is on a channel. */
static void omsg_abandon(struct piod *d, struct piod_omsg *m, int status)
{
    if (m->peer >= 0)
        send_h_done(d, m->peer, m->msgid, status);
    else if (m->local)
        imsg_fail(d, m->local, status);
    omsg_finish(d, m, status);
    for (uint32_t i = 0; i < m->nchunks; i++)
        if (m->state[i] != PIOD_OC_QUEUED)
            m->state[i] = PIOD_OC_ACKED;
    omsg_maybe_free(d, m, 1);
}

/* Tell our processes that every joined process of the peer's applications
 * has left (kind 2) or is there again (kind 1): a receive waiting on one of
 * them ends with PIO_EGONE instead of waiting for ever. */
static void remote_apps_announce(struct piod *d, int peer, uint32_t kind)
{
    struct piod_peer_st *p = &d->peers[peer];
    for (int i = 0; i < p->napps; i++)
        for (uint32_t j = 0; j < p->apps[i].nprocs; j++)
            if (p->apps[i].joined && p->apps[i].joined[j])
                broadcast_event(d, p->apps[i].app, j, p->apps[i].nprocs, kind);
}

/* A peer none of whose channels has been up for link-timeout seconds: every
 * message to it that has not all arrived fails with PIO_ELINK, so does every
 * message from it that has not all arrived (it cannot come: a peer that was
 * killed never finishes it), and its applications count as gone until a
 * channel is up again. While one channel is up the others' chunks go on it
 * and nothing fails. */
static void links_watch(struct piod *d, uint64_t now)
{
    for (int k = 0; k < d->npeers; k++) {
        struct piod_peer_st *p = &d->peers[k];
        int up = 0;
        for (int i = 0; i < p->nchan && !up; i++)
            up = p->tx[i] && piod_tx_state(p->tx[i], NULL) == PIO_WCHAN_UP;
        if (up && p->unreachable) {
            PIOD_INFO("a channel to %s is up again: its applications are reachable", p->cfg->name);
            p->unreachable = 0;
            remote_apps_announce(d, k, 1);
        }
        if (up || !p->hello_seen || p->nchan == 0) {
            p->none_up_ms = 0;
            continue;
        }
        if (!p->none_up_ms)
            p->none_up_ms = now;
        if (now - p->none_up_ms < (uint64_t)d->cfg.link_timeout * 1000)
            continue;
        if (!p->unreachable) {
            PIOD_WARN("no channel to %s has been up for %u s: its applications count as gone "
                      "until one is back",
                      p->cfg->name, d->cfg.link_timeout);
            p->unreachable = 1;
            for (struct piod_imsg *m = d->imsgs; m;) {
                struct piod_imsg *next = m->next;
                if (m->peer == k && m->narrived < m->nchunks) {
                    if (m->dst >= 0 && m->announced)
                        send_cancel(d, m->dst, m->key, PIO_ELINK);
                    imsg_fail(d, m, PIO_ELINK);
                }
                m = next;
            }
            remote_apps_announce(d, k, 2);
        }
        for (struct piod_omsg *m = d->omsgs; m;) {
            struct piod_omsg *next = m->next;
            if (m->peer == k && !m->outcome && m->nacked < m->nchunks) {
                PIOD_WARN("no channel to %s has been up for %u s: message %llu (%llu bytes) fails "
                          "with PIO_ELINK",
                          p->cfg->name, d->cfg.link_timeout, (unsigned long long)m->msgid,
                          (unsigned long long)m->size);
                omsg_abandon(d, m, PIO_ELINK);
            }
            m = next;
        }
    }
}

static void proc_leave(struct piod *d, int pi, const char *why)
{
    struct piod_proc *p = &d->procs[pi];
    if (p->gone)
        return;
    PIOD_INFO("process %s:%u (pid %d) left: %s", p->app, p->proc, (int)p->pid, why);
    atomic_store(&p->gone, 1);
    proc_names_del(d, pi);
    ring_del(d, pi);
    shm_unlink(p->shm);
    struct left_entry *le = &left_ring[left_n++ % 1024];
    snprintf(le->app, sizeof(le->app), "%s", p->app);
    le->proc = p->proc;
    le->nprocs = p->nprocs;
    /* messages to it fail; their grants go */
    for (struct piod_imsg *m = d->imsgs; m;) {
        struct piod_imsg *next = m->next;
        if (m->dst == pi)
            imsg_fail(d, m, PIO_EGONE);
        m = next;
    }
    piod_grants_drop_proc(d, p);
    /* its messages whose bytes will never all come: cancel at the receiver */
    for (struct piod_omsg *m = d->omsgs; m;) {
        struct piod_omsg *next = m->next;
        if (m->src == pi) {
            int complete = 1;
            for (uint32_t i = 0; i < m->nchunks; i++)
                if (m->data_off[i] == UINT64_MAX)
                    complete = 0;
            if (!complete) {
                PIOD_WARN("message %llu of %s:%u lost its sender before all its bytes came",
                          (unsigned long long)m->msgid, p->app, p->proc);
                omsg_abandon(d, m, PIO_EGONE);
            }
        }
        m = next;
    }
    for (int k = 0; k < d->npeers; k++)
        if (d->peers[k].hello_seen)
            send_registry(d, k, pi, PIO_WREG_LEFT);
    broadcast_event(d, p->app, p->proc, p->nprocs, 2);
    /* its streams, both ways (before a process of the same name can join) */
    streams_forget(d, &d->tx_streams, -2, STREAM_SRC, p->app, p->proc);
    streams_forget(d, &d->tx_streams, -1, STREAM_DST, p->app, p->proc);
    streams_forget(d, &d->rx_streams, -2, STREAM_DST, p->app, p->proc);
    pio_ralloc_fini(&p->recv);
    if (atomic_load(&p->refs) == 0)
        piod_proc_unmap(p);
}

/* uid's user name on this host into buf ("" when it has none). At a join
 * only: a name service may take a moment. */
static void piod_user_name(uid_t uid, char *buf, size_t cap)
{
    struct passwd pw, *res = NULL;
    char tmp[4096];
    buf[0] = '\0';
    if (getpwuid_r(uid, &pw, tmp, sizeof(tmp), &res) == 0 && res && strlen(pw.pw_name) < cap)
        snprintf(buf, cap, "%s", pw.pw_name);
}

static void on_hello(struct piod *d, uint64_t cid, struct pio_p_hello *h)
{
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_WELCOME;
    struct pio_p_welcome *w = &f.u.p_welcome;
    int slot = -1;
    struct piod_conn *c = piod_conn_get(d, cid);
    struct piod_proc *owner;
    long cfg_owner;
    w->status = PIO_OK;
    if (h->proto != PIO_WIRE_VERSION) {
        PIOD_WARN("process %s:%u speaks protocol version %u, we speak %u: refused", h->app, h->proc,
                  h->proto, PIO_WIRE_VERSION);
        w->status = PIO_EVERSION;
    } else if (d->stopping || h->app[0] == 0 || h->nprocs == 0 || h->proc >= h->nprocs) {
        w->status = d->stopping ? PIO_EBUSY : PIO_EINVAL;
    } else if (c && (cfg_owner = piod_config_app_owner(&d->cfg, h->app)) >= 0 &&
               (long)c->uid != cfg_owner) {
        PIOD_WARN("process %s:%u (pid %d, uid %u) refused: application %s belongs to uid %ld "
                  "([application %s] in the configuration) (PIO_EACCES)",
                  h->app, h->proc, (int)c->pid, (unsigned)c->uid, h->app, cfg_owner, h->app);
        w->status = PIO_EACCES;
    } else if (c && (owner = proc_of_app(d, h->app)) && owner->uid != c->uid) {
        /* the name belongs to the uid of its joined processes (never to
         * what a hello says: the uid is the kernel's, SO_PEERCRED) */
        PIOD_WARN("process %s:%u (pid %d, uid %u) refused: application %s belongs to uid %u, "
                  "whose processes are joined (PIO_EACCES)",
                  h->app, h->proc, (int)c->pid, (unsigned)c->uid, h->app, (unsigned)owner->uid);
        w->status = PIO_EACCES;
    } else {
        int old = proc_by_name(d, h->app, h->proc);
        if (old >= 0) {
            if (kill(d->procs[old].pid, 0) == 0 || errno != ESRCH)
                w->status = PIO_EEXIST;
            else
                proc_leave(d, old, "replaced by a new process of the same name (old one died)");
        }
        for (int i = 0; w->status == PIO_OK && i < d->nprocs_max && slot < 0; i++) {
            struct piod_proc *p = &d->procs[i];
            if (!p->used ||
                (p->gone && atomic_load(&p->unmapped) == 2 && atomic_load(&p->refs) == 0))
                slot = i;
        }
        if (w->status == PIO_OK && slot < 0)
            w->status = PIO_EPOOL;
    }
    if (w->status == PIO_OK) {
        struct piod_proc *p = &d->procs[slot];
        memset(p, 0, sizeof(*p));
        p->cid = cid;
        snprintf(p->app, sizeof(p->app), "%s", h->app);
        p->proc = h->proc;
        p->nprocs = h->nprocs;
        /* the kernel's word on who connected beats what the hello says */
        p->pid = c && c->pid > 0 ? c->pid : (pid_t)h->pid;
        p->uid = c ? c->uid : geteuid();
        p->gid = c ? c->gid : getegid();
        piod_user_name(p->uid, p->user, sizeof(p->user));
        p->own_senders =
            (h->flags & PIO_HF_OWN_UID) || piod_config_app_own_senders(&d->cfg, h->app);
        p->size = d->cfg.proc_pool;
        static unsigned serial;
        snprintf(p->shm, sizeof(p->shm), "/pio-%d-%u", (int)getpid(), ++serial);
        int rc = pio_shm_create(p->shm, p->size, c ? (long)c->uid : -1, (void **)&p->base);
        if (rc == PIO_EEXIST) {
            /* the name carries our pid: a piod that had it before us died
             * without unlinking its pools. That object is stale. */
            PIOD_WARN("pool %s was left by a dead piod with our pid: replacing it", p->shm);
            shm_unlink(p->shm);
            rc = pio_shm_create(p->shm, p->size, c ? (long)c->uid : -1, (void **)&p->base);
        }
        if (rc == PIO_OK)
            rc = pio_ralloc_init(&p->recv, p->size / 2, p->size - p->size / 2);
        if (rc != PIO_OK) {
            PIOD_ERR("cannot create the pool of %s:%u: %s", h->app, h->proc, PIO_Strerror(rc));
            if (p->base) {
                pio_shm_close(p->shm, p->base, p->size, 1);
                p->base = NULL;
            }
            w->status = rc;
        } else {
            p->used = 1;
            p->send_off = 0;
            p->send_len = p->size / 2;
            p->recv_off = p->size / 2;
            p->recv_len = p->size - p->size / 2;
            w->eager_limit = d->cfg.eager_limit;
            w->chunk = d->cfg.chunk;
            w->send_off = p->send_off;
            w->send_len = p->send_len;
            w->recv_off = p->recv_off;
            w->recv_len = p->recv_len;
            snprintf(w->shm, sizeof(w->shm), "%s", p->shm);
            left_forget(p->app, p->proc);
            if (c) {
                c->joined = 1;
                c->pi = slot;
            }
            proc_names_add(d, slot);
            PIOD_INFO("process %s:%u of %u joined (pid %u, pool %s)", p->app, p->proc, p->nprocs,
                      h->pid, p->shm);
        }
    }
    snprintf(w->host, sizeof(w->host), "%s", d->cfg.name);
    snprintf(w->system, sizeof(w->system), "%s", d->cfg.system);
    send_cid(d, cid, &f);
    if (w->status != PIO_OK)
        return;
    for (int k = 0; k < d->npeers; k++)
        if (d->peers[k].hello_seen)
            send_registry(d, k, slot, PIO_WREG_JOINED);
    broadcast_event(d, h->app, h->proc, h->nprocs, 1);
    announce_all(d);
    grant_all(d);
    pending_partners(d, piod_now_ms());
}

/* PIO_USER(i) must name a channel of the bundle that is up now. */
static int user_channel_up(struct piod *d, int peer, uint32_t i)
{
    struct piod_peer_st *p = &d->peers[peer];
    uint64_t q;
    return i < (uint32_t)p->nchan && p->tx[i] && piod_tx_state(p->tx[i], &q) == PIO_WCHAN_UP;
}

static void on_send(struct piod *d, int pi, struct pio_p_send *s)
{
    struct piod_proc *src = &d->procs[pi];
    int peer = -1;
    uint32_t nprocs = find_app(d, s->partner, &peer);
    int status = PIO_OK;
    if (!nprocs)
        status = PIO_EPARTNER;
    else if (s->dst_proc >= nprocs || !pio_type_known((int)s->datatype))
        status = PIO_EINVAL;
    else if (peer >= 0 && s->conn == PIO_WCONN_USER &&
             ((s->flags & PIO_WF_EAGER) ? s->conn_arg >= (uint32_t)d->peers[peer].nchan
                                        : !user_channel_up(d, peer, s->conn_arg)))
        status = PIO_ECHANNEL; /* an eager message uses no channel: it need only exist */
    if (status != PIO_OK) {
        struct piod_omsg tmp = {.sid = s->sid, .src = pi};
        omsg_finish(d, &tmp, status);
        return;
    }
    if (s->conn == PIO_WCONN_USER && !(s->flags & PIO_WF_EAGER)) /* libpio waits for this */
        send_done_flags(d, pi, PIO_F_P_SEND_DONE, PIO_WSD_CHANNEL_OK, s->sid, PIO_OK);
    struct pio_h_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.msgid = ++d->next_msgid;
    struct piod_stream *st =
        stream_get(&d->tx_streams, peer, src->app, src->proc, s->partner, s->dst_proc, s->tag);
    if (!st) {
        struct piod_omsg tmp = {.sid = s->sid, .src = pi};
        omsg_finish(d, &tmp, PIO_ENOMEM);
        return;
    }
    rq.seq = st->next_seq++;
    rq.size = s->size;
    rq.count = s->count;
    rq.src_proc = src->proc;
    rq.dst_proc = s->dst_proc;
    rq.tag = s->tag;
    rq.datatype = s->datatype;
    rq.flags = s->flags;
    rq.chunk = d->cfg.chunk;
    rq.conn = s->conn;
    rq.conn_arg = s->conn_arg;
    rq.src_uid = (uint32_t)src->uid; /* the kernel's word (SO_PEERCRED), never the process' */
    rq.src_gid = (uint32_t)src->gid;
    snprintf(rq.src_user, sizeof(rq.src_user), "%s", src->user);
    snprintf(rq.src_app, sizeof(rq.src_app), "%s", src->app);
    snprintf(rq.dst_app, sizeof(rq.dst_app), "%s", s->partner);
    rq.payload = s->payload;

    struct piod_omsg *m = NULL;
    if (!(s->flags & PIO_WF_EAGER) || (s->flags & PIO_WF_SYNC)) {
        m = calloc(1, sizeof(*m));
        if (!m)
            goto nomem;
        m->msgid = rq.msgid;
        m->sid = s->sid;
        m->src = pi;
        m->peer = peer;
        m->size = s->size;
        m->chunk = d->cfg.chunk;
        m->flags = s->flags;
        m->conn = s->conn;
        m->conn_arg = s->conn_arg;
        m->src_proc = src->proc;
        m->dst_proc = s->dst_proc;
        m->nchunks =
            (s->flags & PIO_WF_EAGER) ? 0 : (uint32_t)((s->size + m->chunk - 1) / m->chunk);
        m->data_off = malloc((m->nchunks + 1) * sizeof(*m->data_off));
        m->grant = malloc((m->nchunks + 1) * sizeof(*m->grant));
        m->state = calloc(m->nchunks + 1, 1);
        if (!m->data_off || !m->grant || !m->state) {
            free(m->data_off);
            free(m->grant);
            free(m->state);
            free(m);
            goto nomem;
        }
        for (uint32_t i = 0; i < m->nchunks; i++) {
            m->data_off[i] = UINT64_MAX;
            m->grant[i] = -1;
        }
        if (omsg_link(d, m) != PIO_OK) {
            free(m->data_off);
            free(m->grant);
            free(m->state);
            free(m);
            goto nomem;
        }
        piod_proc_ref(src);
    }
    if (peer >= 0) {
        struct pio_frame f;
        memset(&f, 0, sizeof(f));
        f.type = PIO_F_H_REQUEST;
        f.u.h_request = rq;
        /* an eager message that waits for no outcome is told if it is lost
         * with the peer's run (lane_lost) */
        int rc = send_peer_msg(d, peer, &f, m ? -1 : pi, s->sid, pi);
        if (rc != PIO_OK && m) {
            omsg_finish(d, m, rc);
            omsg_free(d, m);
        } else if (rc != PIO_OK) {
            struct piod_omsg tmp = {.sid = s->sid, .src = pi};
            omsg_finish(d, &tmp, rc);
        }
        return;
    }
    struct piod_imsg *im = imsg_new(d, -1, &rq);
    if (!im) {
        if (m)
            omsg_free(d, m);
        goto nomem;
    }
    if (m) {
        m->local = im;
        im->local = m;
    }
    announce_all(d);
    grant_all(d);
    return;
nomem : {
    struct piod_omsg tmp = {.sid = s->sid, .src = pi};
    omsg_finish(d, &tmp, PIO_ENOMEM);
}
}

static void on_send_data(struct piod *d, int pi, struct pio_p_ranges *r)
{
    struct piod_omsg *m = omsg_by_sid(d, pi, r->id);
    uint64_t msg_off = r->msg_off;
    for (uint32_t j = 0; j < r->n; j++) {
        uint64_t off = r->r[j].off, len = r->r[j].len;
        struct piod_proc *p = &d->procs[pi];
        int bad = !m || off < p->send_off || off + len > p->send_off + p->send_len ||
                  msg_off % m->chunk != 0 || msg_off / m->chunk >= m->nchunks ||
                  len != chunk_len(m->size, m->chunk, (uint32_t)(msg_off / m->chunk)) ||
                  m->data_off[msg_off / m->chunk] != UINT64_MAX;
        if (bad) {
            /* not ours to keep (a cancelled message, or a confused process) */
            PIOD_DEBUG("P_SEND_DATA sid %llu off %llu len %llu refused (%s)",
                       (unsigned long long)r->id, (unsigned long long)msg_off,
                       (unsigned long long)len, m ? "bad range" : "no such message");
            send_ranges(d, pi, PIO_F_P_RELEASE, 0, 0, off, len);
            msg_off += len;
            continue;
        }
        uint32_t i = (uint32_t)(msg_off / m->chunk);
        m->data_off[i] = off;
        if (m->peer < 0) {
            if (m->local && m->local->state[i] == PIOD_IC_GRANTED)
                local_copy(d, m->local, i);
        } else if (m->grant[i] >= 0 && m->state[i] == PIOD_OC_WAITING) {
            chunk_queue(d, m, i, 0);
        }
        msg_off += len;
    }
}

static void on_free(struct piod *d, int pi, struct pio_p_ranges *r)
{
    struct piod_imsg *m = imsg_by_key(d, pi, r->id);
    struct piod_proc *p = &d->procs[pi];
    if (!m)
        return;
    uint64_t msg_off = r->msg_off;
    for (uint32_t j = 0; j < r->n; j++, msg_off += r->r[j - 1].len) {
        if (msg_off % m->chunk != 0 || msg_off / m->chunk >= m->nchunks)
            continue;
        uint32_t i = (uint32_t)(msg_off / m->chunk);
        if (m->state[i] != PIOD_IC_ARRIVED || m->pool_off[i] != r->r[j].off)
            continue;
        uint32_t len = chunk_len(m->size, m->chunk, i);
        pio_ralloc_put(&p->recv, m->pool_off[i], len);
        if (!m->claimed)
            p->unclaimed_bytes -= len;
        m->state[i] = PIOD_IC_FREED;
        m->nfreed++;
    }
    if (m->nfreed == m->nchunks)
        imsg_complete(d, m, PIO_OK);
    grant_wake(d, pi);
    grant_all(d);
}

static void on_claim(struct piod *d, int pi, uint64_t key)
{
    struct piod_imsg *m = imsg_by_key(d, pi, key);
    if (!m || m->claimed)
        return;
    int queued = m->in_gq != 0;
    gq_del(d, m);
    m->claimed = 1;
    for (uint32_t i = 0; i < m->nchunks; i++)
        if (m->state[i] == PIOD_IC_GRANTED || m->state[i] == PIOD_IC_ARRIVED)
            d->procs[pi].unclaimed_bytes -= chunk_len(m->size, m->chunk, i);
    if (queued)
        gq_add(d, m); /* among the claimed: served first */
    grant_wake(d, pi);
    grant_all(d);
}

static void on_consumed(struct piod *d, int pi, uint64_t key)
{
    struct piod_imsg *m = imsg_by_key(d, pi, key);
    if (m && (m->flags & PIO_WF_EAGER))
        imsg_complete(d, m, PIO_OK);
}

void piod_chan_rows(struct piod *d, struct pio_chan_info *rows, uint32_t max, uint32_t *n)
{
    for (int p = 0; p < d->npeers; p++) {
        struct piod_peer_st *ps = &d->peers[p];
        for (int k = 0; k < ps->nchan && *n < max; k++) {
            struct pio_chan_info *c = &rows[(*n)++];
            snprintf(c->peer, sizeof(c->peer), "%s", ps->cfg->name);
            c->index = (uint32_t)k;
            struct piod_txchan *ch = ps->tx[k];
            if (ch) {
                pthread_mutex_lock(&ch->mtx);
                c->state = (uint32_t)ch->state;
                c->tx_bytes = ch->tx_bytes;
                c->tx_chunks = ch->tx_chunks;
                c->resent = ch->resent;
                c->downs = ch->downs;
                c->queued = ch->queued_bytes;
                snprintf(c->local, sizeof(c->local), "%s",
                         ch->state == PIO_WCHAN_UP ? ch->local : "");
                snprintf(c->remote, sizeof(c->remote), "%s",
                         ch->state == PIO_WCHAN_UP ? ch->remote : "");
                pthread_mutex_unlock(&ch->mtx);
            }
            if (!c->local[0] || d->cfg.link_owner[k] >= 0) /* relayed: the link's owner */
                snprintf(c->local, sizeof(c->local), "%s", d->cfg.link_addr[k]);
            if (!c->remote[0])
                snprintf(c->remote, sizeof(c->remote), "%s", ps->cfg->addr[k]);
            c->rx_bytes = atomic_load(&ps->rx_bytes[k]);
            c->rx_chunks = atomic_load(&ps->rx_chunks[k]);
            c->rate = (uint64_t)ps->bal[k].rate;
        }
    }
}

static void on_info(struct piod *d, uint64_t cid, uint64_t req)
{
    struct pio_frame *f = calloc(1, sizeof(*f));
    if (!f)
        return;
    f->type = PIO_F_P_INFO;
    struct pio_p_info *in = &f->u.p_info;
    in->req = req;
    in->version = PIO_WIRE_VERSION;
    snprintf(in->host, sizeof(in->host), "%s", d->cfg.name);
    snprintf(in->system, sizeof(in->system), "%s", d->cfg.system);
    piod_chan_rows(d, in->chan, PIO_WIRE_MAX_CHANNELS, &in->nchan);
    piod_relay_rows(d, in->chan, PIO_WIRE_MAX_CHANNELS, &in->nchan);
    for (int i = 0; i < d->nprocs_max && in->napp < PIO_WIRE_MAX_REG; i++) {
        struct piod_proc *p = &d->procs[i];
        if (!p->used || p->gone)
            continue;
        uint32_t k;
        for (k = 0; k < in->napp; k++)
            if (strcmp(in->app[k].app, p->app) == 0 &&
                strcmp(in->app[k].system, d->cfg.system) == 0)
                break;
        if (k == in->napp) {
            in->napp++;
            snprintf(in->app[k].app, sizeof(in->app[k].app), "%s", p->app);
            snprintf(in->app[k].system, sizeof(in->app[k].system), "%s", d->cfg.system);
            in->app[k].nprocs = p->nprocs;
        }
        in->app[k].joined++;
    }
    /* pools still mapped, including those of processes that left while a
     * channel or a message still held them: what the pool really has out */
    for (int i = 0; i < d->nprocs_max; i++)
        if (d->procs[i].used && atomic_load(&d->procs[i].unmapped) != 2)
            in->pool_used += d->procs[i].size;
    for (int p = 0; p < d->npeers; p++)
        for (int a = 0; a < d->peers[p].napps && in->napp < PIO_WIRE_MAX_REG; a++) {
            struct piod_remote_app *ra = &d->peers[p].apps[a];
            if (ra->njoined == 0)
                continue;
            struct pio_app_info *ai = &in->app[in->napp++];
            snprintf(ai->app, sizeof(ai->app), "%s", ra->app);
            snprintf(ai->system, sizeof(ai->system), "%s", d->peers[p].cfg->name);
            ai->nprocs = ra->nprocs;
            ai->joined = ra->njoined;
        }
    in->pool_size = d->cfg.pool;
    send_cid(d, cid, f);
    free(f);
}

static void on_proc_frame(struct piod *d, uint64_t cid, const uint8_t *buf, size_t len,
                          struct pio_frame *f)
{
    if (d->cfg.log_level >= PIOD_LOG_DEBUG && len >= 6)
        PIOD_DEBUG("proc frame %s (%zu bytes)", pio_wire_type_name(buf[5]), len);
    uint8_t ver = 0, type;
    uint32_t blen;
    int rc = pio_wire_peek(buf, len, &type, &blen, &ver);
    if (rc == PIO_OK)
        rc = pio_wire_decode(buf, len, f, NULL);
    if (rc != PIO_OK) {
        struct piod_conn *cc = piod_conn_get(d, cid);
        int cpid = cc ? (int)cc->pid : 0;
        if (rc == PIO_EVERSION)
            PIOD_WARN("client pid %d speaks protocol version %u, we speak %u", cpid, ver,
                      PIO_WIRE_VERSION);
        else if (len >= PIO_WIRE_HDR && pio_wire_type_name(buf[5])[0] == '?')
            PIOD_WARN("frame of unknown type %u from client pid %d (%zu bytes): ignored", buf[5],
                      cpid, len);
        else
            PIOD_WARN("malformed %s frame from client pid %d (%zu bytes: bad check, a count over "
                      "its bound or a bad body): ignored",
                      len >= PIO_WIRE_HDR ? pio_wire_type_name(buf[5]) : "?", cpid, len);
        if (rc == PIO_EVERSION) {
            struct pio_frame w;
            memset(&w, 0, sizeof(w));
            w.type = PIO_F_P_WELCOME;
            w.u.p_welcome.status = PIO_EVERSION;
            send_cid(d, cid, &w);
        }
        return;
    }
    if (f->type == PIO_F_P_HELLO) {
        on_hello(d, cid, &f->u.p_hello);
        return;
    }
    if (f->type == PIO_F_P_INFO_REQ) {
        on_info(d, cid, f->u.p_info_req.req);
        return;
    }
    int pi = proc_index(d, cid);
    if (pi < 0) {
        PIOD_DEBUG("%s from a process that has not joined: ignored", pio_wire_type_name(f->type));
        return;
    }
    switch (f->type) {
    case PIO_F_P_BYE: proc_leave(d, pi, "PIO_Exit"); break;
    case PIO_F_P_PARTNER: {
        /* a process waits for a few partners at once; thousands are a flood
         * that would grow the list every tick walks */
        int waiting = 0;
        for (struct piod_pending_partner *x = d->pending; x; x = x->next)
            waiting += x->cid == cid;
        if (waiting >= PARTNER_WAIT_MAX) {
            struct piod_conn *cc = piod_conn_get(d, cid);
            if (cc && !cc->warned_partner)
                PIOD_WARN("process %s:%u (pid %d) waits for %d partner look-ups already: more "
                          "are answered PIO_EBUSY",
                          d->procs[pi].app, d->procs[pi].proc, (int)d->procs[pi].pid, waiting);
            if (cc)
                cc->warned_partner = 1;
            struct piod_pending_partner busy = {.cid = cid, .req = f->u.p_partner.req};
            snprintf(busy.app, sizeof(busy.app), "%s", f->u.p_partner.app);
            answer_partner(d, &busy, PIO_EBUSY);
            break;
        }
        struct piod_pending_partner *pp = calloc(1, sizeof(*pp));
        if (!pp)
            break;
        pp->cid = cid;
        pp->req = f->u.p_partner.req;
        snprintf(pp->app, sizeof(pp->app), "%s", f->u.p_partner.app);
        pp->deadline_ms = piod_now_ms() + f->u.p_partner.timeout_ms;
        pp->next = d->pending;
        d->pending = pp;
        pending_partners(d, piod_now_ms());
        break;
    }
    case PIO_F_P_SEND:
        PIOD_DEBUG("P_SEND sid %llu size %llu", (unsigned long long)f->u.p_send.sid,
                   (unsigned long long)f->u.p_send.size);
        on_send(d, pi, &f->u.p_send);
        break;
    case PIO_F_P_SEND_DATA: on_send_data(d, pi, &f->u.p_ranges); break;
    case PIO_F_P_FREE: on_free(d, pi, &f->u.p_ranges); break;
    case PIO_F_P_CLAIM: on_claim(d, pi, f->u.p_done.id); break;
    case PIO_F_P_CONSUMED: on_consumed(d, pi, f->u.p_done.id); break;
    default:
        PIOD_WARN("unexpected %s from process %s:%u", pio_wire_type_name(f->type), d->procs[pi].app,
                  d->procs[pi].proc);
    }
}

/* A client hung up: a process that had not said P_BYE left (exit or death:
 * either way every frame it sent was read before the hang-up). */
static void conn_closed(struct piod *d, struct piod_conn *c)
{
    uint64_t cid = piod_conn_cid(d, c);
    int pi = proc_index(d, cid);
    if (pi >= 0)
        proc_leave(d, pi, "its connection closed (the process exited or died)");
    piod_conn_close(d, c);
}

/* Send what waits for a client, then handle what it sent (one read, so
 * one client cannot starve the others). */
static void on_conn_ready(struct piod *d, struct piod_conn *c, short revents, struct pio_frame *f)
{
    /* A client that hung up while we were not reading it (back-pressure:
     * POLLIN was not asked for) still has frames in its socket: its last
     * sends, its P_BYE. They are read and handled, all of them (the socket's
     * buffer bounds them), before the connection closes: a process that
     * sent and exited has its messages delivered, as if we had been reading. */
    int hung_up = (revents & (POLLHUP | POLLERR)) && !(revents & POLLIN) &&
                  (c->paused || (d->lanes_paused && c->joined));
    /* A client that exits with our frames unread in its socket makes our
     * sends fail at once (EPIPE): that is the same hang-up, seen first from
     * the writing side (a client paused for not reading always has frames
     * waiting here), and what it sent before it went is still to be read. */
    if ((revents & POLLOUT) && pio_fout_flush(&c->out, c->fd) != PIO_OK) {
        pio_fout_clear(&c->out);
        hung_up = 1;
    }
    if (!hung_up && !(revents & (POLLIN | POLLERR | POLLHUP)))
        return;
    uint64_t cid = piod_conn_cid(d, c);
    int rc;
    do {
        rc = pio_fin_fill(&c->in, c->fd);
        if (rc == PIO_EAGAIN && !hung_up)
            return;
        if (rc != PIO_OK) {
            conn_closed(d, c);
            return;
        }
        const uint8_t *fr;
        size_t len;
        uint8_t ver;
        while (c->fd >= 0 && piod_conn_get(d, cid) == c &&
               (rc = pio_fin_next(&c->in, &fr, &len, &ver)) == PIO_OK)
            on_proc_frame(d, cid, fr, len, f);
    } while (hung_up && rc == PIO_EAGAIN && c->fd >= 0 && piod_conn_get(d, cid) == c);
    if (rc == PIO_EPROTO || rc == PIO_EVERSION) {
        PIOD_WARN("client pid %d sent %s: disconnected", (int)c->pid,
                  rc == PIO_EVERSION ? "another protocol version" : "bytes that are not frames");
        if (rc == PIO_EVERSION) {
            struct pio_frame w;
            memset(&w, 0, sizeof(w));
            w.type = PIO_F_P_WELCOME;
            w.u.p_welcome.status = PIO_EVERSION;
            send_cid(d, cid, &w);
        }
        conn_closed(d, c);
    }
}

/* ---- peers ---- */

static void peer_send_hello(struct piod *d, int peer)
{
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_H_HELLO;
    f.u.h_hello.proto = PIO_WIRE_VERSION;
    f.u.h_hello.nchan = (uint32_t)d->cfg.nlinks;
    snprintf(f.u.h_hello.system, sizeof(f.u.h_hello.system), "%s", d->cfg.ident);
    snprintf(f.u.h_hello.host, sizeof(f.u.h_hello.host), "%s", d->cfg.name);
    memcpy(f.u.h_hello.chan_key, d->peers[peer].my_key, PIO_WIRE_KEY);
    f.u.h_hello.epoch = d->epoch;
    send_peer(d, peer, &f);
}

/* A peer restarted (new session): what was in flight with it is lost. */
static void peer_reset(struct piod *d, int peer)
{
    remote_apps_announce(d, peer, 2); /* they went with it */
    remote_apps_clear(&d->peers[peer]);
    for (struct piod_imsg *m = d->imsgs; m;) {
        struct piod_imsg *next = m->next;
        if (m->peer == peer) {
            if (m->dst >= 0 && m->announced)
                send_cancel(d, m->dst, m->key, PIO_EGONE);
            m->flags &= ~(uint32_t)PIO_WF_SYNC;
            imsg_fail(d, m, PIO_EGONE);
        }
        m = next;
    }
    for (struct piod_omsg *m = d->omsgs; m;) {
        struct piod_omsg *next = m->next;
        if (m->peer == peer) {
            omsg_finish(d, m, PIO_EGONE);
            for (uint32_t i = 0; i < m->nchunks; i++)
                if (m->state[i] != PIOD_OC_QUEUED) {
                    if (m->data_off[i] != UINT64_MAX && m->state[i] != PIOD_OC_ACKED)
                        send_ranges(d, m->src, PIO_F_P_RELEASE, 0, 0, m->data_off[i],
                                    chunk_len(m->size, m->chunk, i));
                    m->state[i] = PIOD_OC_ACKED;
                }
            omsg_maybe_free(d, m, 1);
        }
        m = next;
    }
    /* both ends number every stream afresh: the new piod starts from 0 */
    streams_drop(&d->rx_streams, peer);
    streams_drop(&d->tx_streams, peer);
}

/* Our DEALER's handshakes with a peer: a CURVE refusal means the peer's key
 * directory does not hold our public key. Remembered so that a partner
 * look-up that times out can say PIO_EREFUSED instead of PIO_EPARTNER. */
static void on_peer_monitor(struct piod *d, int peer)
{
    struct piod_peer_st *p = &d->peers[peer];
    for (;;) {
        zmq_msg_t ev, addr;
        zmq_msg_init(&ev);
        zmq_msg_init(&addr);
        if (zmq_msg_recv(&ev, p->mon, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&ev);
            zmq_msg_close(&addr);
            return;
        }
        if (zmq_msg_more(&ev))
            zmq_msg_recv(&addr, p->mon, 0);
        uint16_t event = 0;
        if (zmq_msg_size(&ev) >= 2)
            memcpy(&event, zmq_msg_data(&ev), 2);
        if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
            if (p->refused)
                PIOD_INFO("peer %s now accepts our control connection", p->cfg->name);
            p->refused = 0;
        } else if (event & (ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                            ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)) {
            if (!p->refused)
                PIOD_ERR("peer %s refused our control connection: does its key directory hold "
                         "%s.pub? (and does ours hold the right %s.pub?)",
                         p->cfg->name, d->cfg.ident, p->cfg->name);
            p->refused = 1;
        }
        zmq_msg_close(&ev);
        zmq_msg_close(&addr);
    }
}

struct lane_lost {
    struct piod *d;
    int peer;
    size_t frames, eager;
};

/* A numbered frame to a peer run that is gone. Messages with an outcome to
 * wait for (large ones, sync ones) failed in peer_reset; an eager one that
 * waits for none is told to its process here (P_SEND_DONE, PIO_EGONE). */
static void lane_lost(void *arg, const struct piod_lseq_ent *e)
{
    struct lane_lost *ll = arg;
    ll->frames++;
    ll->d->peers[ll->peer].lq.lost++;
    if (e->src < 0)
        return;
    ll->eager++;
    struct piod_omsg tmp = {.sid = e->sid, .src = e->src};
    if (ll->d->procs[e->src].used)
        omsg_finish(ll->d, &tmp, PIO_EGONE);
}

static void on_peer_hello(struct piod *d, int peer, struct pio_h_hello *h)
{
    struct piod_peer_st *p = &d->peers[peer];
    if (h->proto != PIO_WIRE_VERSION) {
        PIOD_ERR("peer %s speaks protocol version %u, we speak %u: ignored", p->cfg->name, h->proto,
                 PIO_WIRE_VERSION);
        return;
    }
    if (h->epoch == 0) {
        PIOD_WARN("hello from %s without an epoch: ignored", p->cfg->name);
        return;
    }
    int fresh = h->epoch != p->lq.peer_epoch || memcmp(p->their_key, h->chan_key, PIO_WIRE_KEY);
    if (!fresh)
        return;
    if (p->hello_seen) {
        PIOD_WARN("peer %s restarted: failing what was in flight with it", p->cfg->name);
        peer_reset(d, peer);
    }
    /* a new run of the peer: our frames numbered for its last run go with it */
    struct lane_lost ll = {.d = d, .peer = peer};
    piod_lseq_reset(&p->lq, h->epoch, lane_lost, &ll);
    if (ll.frames)
        PIOD_WARN("%zu frame(s) to the last run of %s were never acknowledged: %zu eager "
                  "message(s) among them fail with PIO_EGONE",
                  ll.frames, p->cfg->name, ll.eager);
    int nchan = (int)h->nchan;
    if (nchan > p->cfg->naddr)
        nchan = p->cfg->naddr;
    if (nchan > d->cfg.nlinks)
        nchan = d->cfg.nlinks;
    pthread_mutex_lock(&d->key_mtx);
    memcpy(p->their_key, h->chan_key, PIO_WIRE_KEY);
    p->hello_seen = 1;
    if (p->nchan == 0 || nchan < p->nchan)
        p->nchan = nchan;
    pthread_mutex_unlock(&d->key_mtx);
    snprintf(p->host, sizeof(p->host), "%s", h->host);
    PIOD_INFO("peer %s (host %s) says hello: %d channel(s)", p->cfg->name, h->host, p->nchan);
    peer_send_hello(d, peer);
    send_registry(d, peer, -1, PIO_WREG_JOINED);
    piod_txchans_start(d, peer);
}

static void on_peer_registry(struct piod *d, int peer, struct pio_h_registry *r)
{
    struct piod_peer_st *p = &d->peers[peer];
    if (r->full)
        remote_apps_clear(p);
    for (uint32_t i = 0; i < r->n; i++) {
        struct pio_reg_entry *e = &r->e[i];
        struct piod_remote_app *a = remote_app(p, e->app, e->nprocs, 1);
        if (a && a->nprocs != e->nprocs && a->njoined == 0 && e->nprocs > 0 &&
            e->nprocs <= (1u << 24)) {
            /* a new run of an application that has left, with another
             * process count: it replaces the old one's entry */
            uint8_t *j = calloc(e->nprocs, 1);
            if (!j)
                continue;
            free(a->joined);
            a->joined = j;
            a->nprocs = e->nprocs;
        }
        if (!a || e->proc >= a->nprocs || a->nprocs != e->nprocs)
            continue;
        uint8_t was = a->joined[e->proc];
        a->joined[e->proc] = e->state == PIO_WREG_JOINED;
        a->njoined += (uint32_t)(a->joined[e->proc] - was);
        if (was != a->joined[e->proc]) {
            broadcast_event(d, e->app, e->proc, e->nprocs, e->state);
            /* What we send it is numbered afresh when it leaves and again
             * when a process of its name joins: the peer expects 0 from a
             * new process, and what we numbered while none was there
             * failed there without moving that stream on. */
            streams_forget(d, &d->tx_streams, peer, STREAM_DST, e->app, e->proc);
        }
        if (was && !a->joined[e->proc]) { /* its streams to us go with it */
            streams_forget(d, &d->rx_streams, peer, STREAM_SRC, e->app, e->proc);
            if (a->njoined == 0)
                a->left_at = ++p->apps_left;
        }
    }
    pending_partners(d, piod_now_ms());
}

static void on_peer_request(struct piod *d, int peer, struct pio_h_request *rq)
{
    if (!pio_type_known((int)rq->datatype) || (rq->chunk == 0 && !(rq->flags & PIO_WF_EAGER)) ||
        ((rq->flags & PIO_WF_EAGER) && rq->size > PIO_WIRE_MAX_BODY)) {
        send_h_done(d, peer, rq->msgid, PIO_EPROTO);
        return;
    }
    if (imsg_find(d, peer, rq->msgid))
        return; /* a duplicate */
    if (!imsg_new(d, peer, rq)) {
        send_h_done(d, peer, rq->msgid, PIO_ENOMEM);
        return;
    }
    announce_all(d);
    grant_all(d);
}

static void on_peer_reply(struct piod *d, int peer, struct pio_h_reply *r)
{
    struct piod_omsg *m = omsg_find(d, r->msgid);
    if (!m || m->peer != peer)
        return;
    for (uint32_t j = 0; j < r->n; j++) {
        struct pio_grant *g = &r->g[j];
        if (g->off % m->chunk != 0 || g->off / m->chunk >= m->nchunks)
            continue;
        uint32_t i = (uint32_t)(g->off / m->chunk);
        if (g->len != chunk_len(m->size, m->chunk, i))
            continue;
        m->grant[i] = (int16_t)g->channel;
    }
    omsg_pump(d, m);
}

static void on_peer_done(struct piod *d, int peer, struct pio_h_done *h)
{
    struct piod_omsg *m = omsg_find(d, h->msgid);
    if (m && m->peer == peer) {
        omsg_finish(d, m, h->status);
        if (h->status != PIO_OK)
            for (uint32_t i = 0; i < m->nchunks; i++)
                if (m->state[i] == PIOD_OC_WAITING || m->state[i] == PIOD_OC_RESEND) {
                    if (m->data_off[i] != UINT64_MAX)
                        send_ranges(d, m->src, PIO_F_P_RELEASE, 0, 0, m->data_off[i],
                                    chunk_len(m->size, m->chunk, i));
                    m->state[i] = PIOD_OC_ACKED;
                }
        omsg_maybe_free(d, m, 1);
        return;
    }
    /* the sender cancels a message it cannot finish */
    struct piod_imsg *im = imsg_find(d, peer, h->msgid);
    if (im && h->status != PIO_OK) {
        if (im->dst >= 0 && im->announced)
            send_cancel(d, im->dst, im->key, h->status);
        im->flags &= ~(uint32_t)PIO_WF_SYNC;
        imsg_fail(d, im, h->status);
    }
}

/* One H_* frame from peer, in its turn (numbered frames: in number order). */
static void on_peer_inner(struct piod *d, int peer, struct pio_frame *f)
{
    const char *user = d->peers[peer].cfg->name;
    switch (f->type) {
    case PIO_F_H_REGISTRY: on_peer_registry(d, peer, &f->u.h_registry); break;
    case PIO_F_H_REQUEST: on_peer_request(d, peer, &f->u.h_request); break;
    case PIO_F_H_REPLY: on_peer_reply(d, peer, &f->u.h_reply); break;
    case PIO_F_H_DONE: on_peer_done(d, peer, &f->u.h_done); break;
    case PIO_F_H_BYE:
        PIOD_INFO("peer %s is stopping", user);
        remote_apps_announce(d, peer, 2);
        remote_apps_clear(&d->peers[peer]);
        break;
    default: PIOD_WARN("unexpected %s from peer %s", pio_wire_type_name(f->type), user);
    }
}

struct inner_ctx {
    struct piod *d;
    int peer;
    struct pio_frame *f;
};

static void deliver_inner(void *arg, const uint8_t *inner, size_t len)
{
    struct inner_ctx *c = arg;
    uint8_t type = 0;
    int rc = pio_wire_peek(inner, len, &type, NULL, NULL);
    if (rc == PIO_OK)
        rc = pio_wire_decode(inner, len, c->f, NULL);
    if (rc == PIO_OK && (type == PIO_F_H_HELLO || type == PIO_F_H_SEQ || type == PIO_F_H_ACK))
        rc = PIO_EPROTO;
    if (rc != PIO_OK) {
        PIOD_WARN("malformed numbered frame from %s: %s", c->d->peers[c->peer].cfg->name,
                  PIO_Strerror(rc));
        return;
    }
    on_peer_inner(c->d, c->peer, c->f);
}

static void on_peer_frame(struct piod *d, int peer, const uint8_t *buf, size_t len,
                          struct pio_frame *f)
{
    struct piod_peer_st *p = &d->peers[peer];
    const char *user = p->cfg->name;
    uint8_t ver = 0, type;
    uint32_t blen;
    int rc = pio_wire_peek(buf, len, &type, &blen, &ver);
    if (rc == PIO_OK)
        rc = pio_wire_decode(buf, len, f, NULL);
    if (rc != PIO_OK) {
        if (rc == PIO_EVERSION)
            PIOD_ERR("peer %s speaks protocol version %u, we speak %u", user, ver,
                     PIO_WIRE_VERSION);
        else
            PIOD_WARN("malformed control frame from %s: %s", user, PIO_Strerror(rc));
        return;
    }
    if (f->type == PIO_F_H_HELLO) {
        on_peer_hello(d, peer, &f->u.h_hello);
        return;
    }
    if (!p->hello_seen) {
        PIOD_DEBUG("%s from %s before its hello: ignored", pio_wire_type_name(f->type), user);
        return;
    }
    if (f->type != PIO_F_H_SEQ && f->type != PIO_F_H_ACK) {
        PIOD_WARN("unnumbered %s from peer %s: ignored", pio_wire_type_name(f->type), user);
        return;
    }
    /* both carry (sender's run, the run it meant): a frame of an earlier
     * run of either side is stale (ZeroMQ keeps queues across reconnects) */
    uint64_t src_epoch = f->type == PIO_F_H_SEQ ? f->u.h_seq.src_epoch : f->u.h_ack.src_epoch;
    uint64_t dst_epoch = f->type == PIO_F_H_SEQ ? f->u.h_seq.dst_epoch : f->u.h_ack.dst_epoch;
    if (src_epoch != p->lq.peer_epoch || dst_epoch != d->epoch) {
        p->lq.stale++;
        PIOD_DEBUG("%s from %s of another run: ignored", pio_wire_type_name(f->type), user);
        return;
    }
    uint64_t now = piod_now_ms();
    if (f->type == PIO_F_H_ACK) {
        piod_lseq_acked(&p->lq, f->u.h_ack.ack, now);
        return;
    }
    struct pio_h_seq sq = f->u.h_seq;
    piod_lseq_acked(&p->lq, sq.ack, now);
    struct inner_ctx c = {.d = d, .peer = peer, .f = f};
    piod_lseq_rx(&p->lq, sq.seq, sq.inner, sq.len, deliver_inner, &c);
    lane_ack(d, peer, 0);
}

/* A frame on the control ROUTER: CURVE (our ZAP handler) named the peer. */
static void on_ctl_frame(struct piod *d, const char *user, const uint8_t *buf, size_t len,
                         struct pio_frame *f)
{
    for (int i = 0; i < d->npeers; i++)
        if (user && strcmp(d->peers[i].cfg->name, user) == 0) {
            on_peer_frame(d, i, buf, len, f);
            return;
        }
    PIOD_WARN("control frame from '%s', which is not a configured peer: ignored",
              user ? user : "?");
}

/* ---- the express lane (chan.c opens and authenticates it) ---- */

/* Our lane to a peer failed; frames take ZeroMQ until the lane's thread
 * has opened a new one. What waited in xo, and what the kernel had taken,
 * may be lost with the connection: every frame the peer has not
 * acknowledged goes again now, on ZeroMQ, in order (the peer drops what it
 * already has; lane.h). */
static void express_out_down(struct piod *d, int peer, const char *why)
{
    struct piod_peer_st *p = &d->peers[peer];
    if (!p->xout)
        return;
    PIOD_WARN("express lane to %s failed (%s): frames take the control plane until it is back",
              p->cfg->name, why);
    pio_fout_clear(&p->xo);
    p->xout = NULL;
    p->xout_fd = -1;
    p->xo_sealed = 0;
    piod_seal_fini(&p->xo_seal);
    piod_express_failed(d, peer); /* its thread closes it and reconnects */
    if (p->lq.head) {
        PIOD_WARN("%zu frame(s) (%zu bytes) to %s not yet acknowledged go again on the control "
                  "plane",
                  p->lq.unacked_n, p->lq.unacked_bytes, p->cfg->name);
        lane_replay(d, peer);
    }
}

static void express_in_down(struct piod *d, int peer)
{
    struct piod_peer_st *p = &d->peers[peer];
    if (!p->xin)
        return;
    d->tp->close(p->xin);
    p->xin = NULL;
    p->xin_fd = -1;
    pio_fin_fini(&p->xi);
    p->xi_sealed = 0;
    piod_seal_fini(&p->xi_seal);
}

static int set_nonblocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0 ? 0 : -1;
}

static void on_express_event(struct piod *d, struct piod_ev *ev)
{
    struct piod_peer_st *p = &d->peers[ev->peer];
    int fd = d->tp->fd(ev->conn);
    if (ev->state == PIOD_EVS_LANE_OURS) { /* ours, from its thread */
        if (p->xout)
            express_out_down(d, ev->peer, "replaced");
        if (set_nonblocking(fd) != 0) {
            piod_seal_fini(&ev->seal);
            piod_express_failed(d, ev->peer);
            return;
        }
        p->xout = ev->conn;
        p->xout_fd = fd;
        p->xo_sealed = ev->sealed;
        p->xo_seal = ev->seal; /* moved: ours now */
    } else {                   /* the peer's, from a receiver thread */
        express_in_down(d, ev->peer);
        if (set_nonblocking(fd) != 0) {
            piod_seal_fini(&ev->seal);
            d->tp->close(ev->conn);
            return;
        }
        p->xin = ev->conn;
        p->xin_fd = fd;
        p->xi_sealed = ev->sealed;
        p->xi_seal = ev->seal;
        /* a sealed frame is the frame, a header and a tag */
        pio_fin_init(&p->xi, d->scratch_len + PIO_WIRE_HDR + PIOD_SEAL_TAG);
    }
}

/* xin readable: handle every complete frame. xout readable means it closed
 * (the peer never writes on our lane); writable, that its queue may move. */
static void on_express_ready(struct piod *d, int peer, int out, short revents, struct pio_frame *f)
{
    struct piod_peer_st *p = &d->peers[peer];
    if (out) {
        if (revents & (POLLIN | POLLERR | POLLHUP)) {
            char b[64];
            ssize_t n = recv(p->xout_fd, b, sizeof(b), MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                express_out_down(d, peer, "closed by the peer");
                return;
            }
        }
        if ((revents & POLLOUT) && pio_fout_flush(&p->xo, p->xout_fd) != PIO_OK)
            express_out_down(d, peer, "send failed");
        return;
    }
    int rc = pio_fin_fill(&p->xi, p->xin_fd);
    if (rc == PIO_EAGAIN)
        return;
    if (rc != PIO_OK) {
        express_in_down(d, peer);
        return;
    }
    const uint8_t *fr;
    size_t len;
    while (p->xin && (rc = pio_fin_next(&p->xi, &fr, &len, NULL)) == PIO_OK) {
        if (p->xi_sealed) { /* open it in place: the buffer is ours until the next fill */
            uint8_t *body = (uint8_t *)(uintptr_t)fr + PIO_WIRE_HDR;
            size_t n = len - PIO_WIRE_HDR;
            if (fr[5] != PIO_F_C_SEALED || n < PIO_WIRE_HDR + PIOD_SEAL_TAG ||
                piod_seal_open(&p->xi_seal, fr, 12, body, n - PIOD_SEAL_TAG,
                               body + n - PIOD_SEAL_TAG) != 0) {
                PIOD_WARN("express lane from %s: a frame failed its seal check (%s): closed",
                          p->cfg->name,
                          fr[5] != PIO_F_C_SEALED ? "not sealed" : "forged or altered on the way");
                express_in_down(d, peer);
                return;
            }
            fr = body;
            len = n - PIOD_SEAL_TAG;
        }
        on_peer_frame(d, peer, fr, len, f);
    }
    if (p->xin && rc != PIO_EAGAIN) {
        PIOD_WARN("express lane from %s carries bytes that are not frames (%s): closed",
                  p->cfg->name, PIO_Strerror(rc));
        express_in_down(d, peer);
    }
}

/* ---- ZAP: which CURVE clients may talk to us ---- */

static void on_zap(struct piod *d)
{
    zmq_msg_t part[8];
    int n = 0, more = 1;
    while (more && n < 8) {
        zmq_msg_init(&part[n]);
        if (zmq_msg_recv(&part[n], d->zap_sock, 0) < 0) {
            zmq_msg_close(&part[n]);
            break;
        }
        more = zmq_msg_more(&part[n]);
        n++;
    }
    while (more) { /* drain an over-long request */
        zmq_msg_t x;
        zmq_msg_init(&x);
        zmq_msg_recv(&x, d->zap_sock, 0);
        more = zmq_msg_more(&x);
        zmq_msg_close(&x);
    }
    const char *status = "400", *text = "unknown key";
    char name[64] = "";
    char addr[64] = "?";
    if (n >= 7 && zmq_msg_size(&part[5]) == 5 && memcmp(zmq_msg_data(&part[5]), "CURVE", 5) == 0 &&
        zmq_msg_size(&part[6]) == 32) {
        char z85[41];
        zmq_z85_encode(z85, zmq_msg_data(&part[6]), 32);
        const char *who = piod_keys_find(&d->keys, z85);
        if (who) {
            status = "200";
            text = "OK";
            snprintf(name, sizeof(name), "%s", who);
        }
    }
    if (n >= 4) {
        size_t al = zmq_msg_size(&part[3]) < 63 ? zmq_msg_size(&part[3]) : 63;
        memcpy(addr, zmq_msg_data(&part[3]), al);
        addr[al] = 0;
    }
    if (status[0] != '2')
        PIOD_WARN("refused control connection from %s: its key is not in %s", addr, d->cfg.keys);
    if (n >= 2) {
        zmq_send(d->zap_sock, "1.0", 3, ZMQ_SNDMORE);
        zmq_send(d->zap_sock, zmq_msg_data(&part[1]), zmq_msg_size(&part[1]), ZMQ_SNDMORE);
        zmq_send(d->zap_sock, status, 3, ZMQ_SNDMORE);
        zmq_send(d->zap_sock, text, strlen(text), ZMQ_SNDMORE);
        zmq_send(d->zap_sock, name, strlen(name), ZMQ_SNDMORE);
        zmq_send(d->zap_sock, "", 0, 0);
    }
    for (int i = 0; i < n; i++)
        zmq_msg_close(&part[i]);
}

/* ---- events from channel threads ---- */

static void on_events(struct piod *d)
{
    uint64_t v;
    ssize_t r = read(d->evfd, &v, sizeof(v));
    (void)r;
    pthread_mutex_lock(&d->ev_mtx);
    struct piod_ev *ev = d->ev_head;
    d->ev_head = d->ev_tail = NULL;
    pthread_mutex_unlock(&d->ev_mtx);
    int regrant = 0;
    while (ev) {
        struct piod_ev *next = ev->next;
        switch (ev->kind) {
        case PIOD_EV_EXPRESS: on_express_event(d, ev); break;
        case PIOD_EV_ACK: {
            struct piod_omsg *m = omsg_find(d, ev->msgid);
            if (m && m->peer == ev->peer) {
                uint32_t i = (uint32_t)(ev->off / m->chunk);
                if (i < m->nchunks && m->state[i] == PIOD_OC_QUEUED) {
                    m->state[i] = PIOD_OC_ACKED;
                    m->nacked++;
                    if (!d->procs[m->src].gone)
                        send_ranges(d, m->src, PIO_F_P_RELEASE, 0, 0, m->data_off[i],
                                    chunk_len(m->size, m->chunk, i));
                    omsg_maybe_free(d, m, m->outcome);
                }
            }
            break;
        }
        case PIOD_EV_REQUEUE: {
            struct piod_chunk *c = ev->chunks;
            while (c) {
                struct piod_chunk *cn = c->next;
                struct piod_omsg *m = omsg_find(d, c->msgid);
                piod_proc_unref(d, c->proc);
                if (m) {
                    uint32_t i = (uint32_t)(c->off / m->chunk);
                    if (i < m->nchunks && m->state[i] == PIOD_OC_QUEUED)
                        m->state[i] = m->outcome ? PIOD_OC_ACKED
                                                 : PIOD_OC_RESEND; /* an abandoned one stays put */
                    if (m->outcome)
                        omsg_maybe_free(d, m, 1);
                }
                free(c);
                c = cn;
            }
            for (struct piod_omsg *m = d->omsgs; m; m = m->next)
                if (m->peer == ev->peer)
                    for (uint32_t i = 0; i < m->nchunks; i++)
                        if (m->state[i] == PIOD_OC_RESEND && chunk_queue(d, m, i, 1) != PIO_OK)
                            break;
            break;
        }
        case PIOD_EV_CHAN:
            if (ev->state == PIOD_EVS_RX_UP || ev->state == PIOD_EVS_RX_DOWN) {
                /* a replaced connection's "down" can come after its
                 * successor's "up": only the current one's counts */
                struct piod_rxbal *b = &d->peers[ev->peer].bal[ev->index];
                if (ev->state == PIOD_EVS_RX_UP) {
                    b->up = 1;
                    b->rx_gen = ev->gen;
                } else if (ev->gen == b->rx_gen) {
                    b->up = 0;
                }
                regrant = 1;
            } else if (ev->state == PIO_WCHAN_UP) {
                /* a channel came up: chunks that found none can go now */
                for (struct piod_omsg *m = d->omsgs; m; m = m->next)
                    if (m->peer == ev->peer) {
                        for (uint32_t i = 0; i < m->nchunks; i++)
                            if (m->state[i] == PIOD_OC_RESEND)
                                chunk_queue(d, m, i, 1);
                        omsg_pump(d, m);
                    }
            }
            break;
        case PIOD_EV_ARRIVED: {
            struct piod_imsg *m = imsg_find(d, ev->peer, ev->msgid);
            PIOD_DEBUG("event: chunk %llu+%llu arrived", (unsigned long long)ev->msgid,
                       (unsigned long long)ev->off);
            struct piod_rxbal *b = &d->peers[ev->peer].bal[ev->index];
            b->window_bytes += ev->len;
            if (!m) {
                PIOD_DEBUG("arrived %llu+%llu: no such message", (unsigned long long)ev->msgid,
                           (unsigned long long)ev->off);
                break;
            }
            uint32_t i = (uint32_t)(ev->off / m->chunk);
            if (i >= m->nchunks || m->state[i] != PIOD_IC_GRANTED) {
                PIOD_DEBUG("arrived %llu+%llu: chunk state %d", (unsigned long long)ev->msgid,
                           (unsigned long long)ev->off, i < m->nchunks ? m->state[i] : -1);
                break;
            }
            m->state[i] = PIOD_IC_ARRIVED;
            m->narrived++;
            d->peers[ev->peer].bal[m->chan[i]].outstanding -= ev->len;
            send_ranges(d, m->dst, PIO_F_P_MSG_DATA, m->key, ev->off, m->pool_off[i], ev->len);
            regrant = 1;
            break;
        }
        }
        free(ev);
        ev = next;
    }
    if (regrant)
        grant_all(d);
}

static void tick(struct piod *d, uint64_t now)
{
    piod_relay_tick(d, now);
    piod_files_tick(d, now);
    pio_mem_trim_tick();
    uint64_t dt = now - d->last_tick_ms;
    if (dt < TICK_MS)
        return;
    d->last_tick_ms = now;
    for (int p = 0; p < d->npeers; p++)
        for (int k = 0; k < d->peers[p].nchan; k++) {
            /* A rate sample is bytes over busy time, taken once there is
             * RATE_SAMPLE_MS of it and a few chunks' worth of bytes: a
             * slow link's chunk can take longer than a tick, and per-tick
             * samples of 0 or 1 chunk would differ wildly between equal
             * links (and so would DYNAMIC's queues). Idle time restarts it. */
            struct piod_rxbal *b = &d->peers[p].bal[k];
            if (b->busy || b->outstanding > 0) {
                b->acc_bytes += b->window_bytes;
                b->acc_ms += dt;
            } else {
                b->acc_bytes = b->acc_ms = 0;
            }
            if (b->acc_ms >= RATE_SAMPLE_MS &&
                (b->acc_bytes >= 2ull * d->cfg.chunk || b->acc_ms >= 5 * RATE_SAMPLE_MS)) {
                b->rate = piod_bal_ewma(b->rate, (double)b->acc_bytes * 1000.0 / (double)b->acc_ms);
                b->acc_bytes = b->acc_ms = 0;
            }
            b->window_bytes = 0;
            b->busy = b->outstanding > 0;
        }
    for (int p = 0; p < d->npeers; p++)
        for (int k = 0; k < d->peers[p].nchan; k++)
            if (d->peers[p].tx[k])
                piod_tx_watchdog(d, d->peers[p].tx[k], now);
    /* numbered frames: acks that are owed, and frames no ack came for */
    for (int p = 0; p < d->npeers; p++) {
        struct piod_peer_st *ps = &d->peers[p];
        if (!ps->hello_seen)
            continue;
        lane_ack(d, p, 1);
        /* the lane's watchdog: the peer acks at least every tick while it
         * reads, so frames kept past stall-ms + 2 ticks mean a stalled link
         * (or peer): the frames take the control plane, once per stall */
        if (ps->xout && ps->lq.head && !ps->lq.wd_tripped &&
            now - ps->lq.ack_ms > (uint64_t)d->cfg.stall_ms + 2 * TICK_MS) {
            char why[96];
            snprintf(why, sizeof(why), "no acknowledgement for %llu ms",
                     (unsigned long long)(now - ps->lq.ack_ms));
            ps->lq.wd_tripped = 1;
            express_out_down(d, p, why);
        }
        if (piod_lseq_resend_due(&ps->lq, now)) {
            PIOD_INFO("no acknowledgement from %s for a while: %zu frame(s) go again (next "
                      "time after %llu ms)",
                      ps->cfg->name, ps->lq.unacked_n, (unsigned long long)ps->lq.rto_ms);
            lane_replay(d, p);
        }
    }
    piod_rx_watchdog(d, now);
    for (int i = 0; i < d->nconns; i++)
        if (d->conns[i].fd >= 0 && piod_conn_stalled(d, &d->conns[i], now))
            conn_closed(d, &d->conns[i]);
    /* a process that died without its connection closing (it is shared
     * with a child, say): a tenth of them each tick, so each every second */
    d->ticks++;
    for (int i = (int)(d->ticks % 10); i < d->nprocs_max; i += 10) {
        struct piod_proc *p = &d->procs[i];
        if (!p->used || p->gone || kill(p->pid, 0) == 0 || errno != ESRCH)
            continue;
        /* Its last frames (up to P_BYE) may still be on their way through
         * ZeroMQ: give them a moment before calling it dead. */
        if (!p->dead_since_ms)
            p->dead_since_ms = now;
        else if (now - p->dead_since_ms > 2000)
            proc_leave(d, i, "the process died");
    }
    pending_partners(d, now);
    links_watch(d, now);
    announce_all(d); /* requests held behind a gap that has timed out */
    streams_sweep(d);
    if (d->tx_waiting) { /* chunks that found no channel (or memory) before */
        d->tx_waiting = 0;
        for (struct piod_omsg *m = d->omsgs; m; m = m->next)
            if (m->peer >= 0) {
                for (uint32_t i = 0; i < m->nchunks; i++)
                    if (m->state[i] == PIOD_OC_RESEND && chunk_queue(d, m, i, 1) != PIO_OK)
                        break;
                omsg_pump(d, m);
            }
    }
    grant_all(d);
}

/* Back-pressure from the peers to the processes. Eager messages and
 * requests go to a peer as fast as our processes hand them over; when the
 * peer reads its express lane slower than that, what it has not taken
 * waits in p->xo, in our memory. Past LANE_PAUSE we stop reading joined
 * processes (their frames wait in their sockets, and their sends block)
 * until every lane is down to LANE_RESUME. Tools (not joined) are still
 * answered, and nothing here stops us reading peers, so the lanes drain. */
static int lanes_congested(struct piod *d)
{
    size_t most = 0, unacked = 0;
    int who = -1;
    for (int p = 0; p < d->npeers; p++) {
        if (d->peers[p].xout && d->peers[p].xo.queued > most) {
            most = d->peers[p].xo.queued;
            who = p;
        }
        if (d->peers[p].lq.unacked_bytes > unacked) {
            unacked = d->peers[p].lq.unacked_bytes;
            if (unacked >= LANE_UNACKED_PAUSE && most < LANE_PAUSE)
                who = p;
        }
    }
    /* what the peer has not acknowledged counts too: we keep it (lane.h) */
    if (unacked >= LANE_UNACKED_PAUSE)
        most = most > LANE_PAUSE ? most : LANE_PAUSE;
    else if (unacked > LANE_UNACKED_RESUME && most <= LANE_RESUME)
        most = LANE_RESUME + 1;
    if (!d->lanes_paused && most >= LANE_PAUSE) {
        d->lanes_paused = 1;
        if (!d->lanes_warned)
            PIOD_WARN("express lane to %s has %zu bytes waiting (the peer reads slower than our "
                      "processes send): their requests wait until it drains",
                      d->peers[who].cfg->name, most);
        d->lanes_warned = 1; /* once: a flood would otherwise fill the log */
    } else if (d->lanes_paused && most <= LANE_RESUME) {
        d->lanes_paused = 0;
    }
    return d->lanes_paused;
}

/* A full lane stops only the processes whose messages fill it: those with
 * at least the mean of the unacknowledged bytes that processes put there
 * (lane_share). A process with less, or none (it receives, or sends large
 * messages whose bytes take the channels), is read on, so one flood cannot
 * stall its neighbours. Computed only while a lane is full. */
static size_t lane_share(struct piod *d)
{
    size_t total = 0, n = 0;
    for (int i = 0; i < d->nprocs_max; i++)
        if (d->procs[i].used && d->procs[i].lane_bytes > 0) {
            total += d->procs[i].lane_bytes;
            n++;
        }
    return n ? total / n : 0;
}

static int lane_heavy(struct piod *d, struct piod_conn *c, size_t share)
{
    int pi = proc_index(d, piod_conn_cid(d, c));
    if (pi < 0)
        return 1; /* joined, but not (or no longer) a process: as before */
    size_t b = d->procs[pi].lane_bytes;
    return b > 0 && b >= share;
}

/* ---- life cycle ---- */

static int zsock_opt_int(void *s, int opt, int v)
{
    return zmq_setsockopt(s, opt, &v, sizeof(v));
}

static void mkdir_parent(const char *path)
{
    char dir[PIOD_PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return;
    *slash = 0;
    for (char *q = dir + 1; *q; q++)
        if (*q == '/') {
            *q = 0;
            mkdir(dir, 0755);
            *q = '/';
        }
    mkdir(dir, 0755);
}

/* Pools of piods that died without unlinking them (SIGKILL, a crash) stay
 * in /dev/shm: remove those whose piod is gone, so they neither fill the
 * memory nor collide with a later piod's names. */
static void sweep_stale_pools(void)
{
    DIR *dir = opendir("/dev/shm");
    if (!dir)
        return;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(dir))) {
        int pid;
        unsigned serial;
        char tail;
        if (sscanf(e->d_name, "pio-%d-%u%c", &pid, &serial, &tail) != 2 || pid <= 0 ||
            pid == (int)getpid() || kill(pid, 0) == 0 || errno != ESRCH)
            continue;
        char name[300];
        snprintf(name, sizeof(name), "/%s", e->d_name);
        if (shm_unlink(name) == 0)
            n++;
    }
    closedir(dir);
    if (n)
        PIOD_INFO("removed %d pool(s) left in /dev/shm by piods that are gone", n);
}

int piod_init(struct piod *d)
{
    sweep_stale_pools();
    int rc = PIO_OK;
    char ep[PIOD_PATH_MAX + 16];
    d->lfd = -1;
    PIO_CHECK(sodium_init() < 0, rc, PIO_EINTERNAL, out);
    /* the channels' transport (transport = ..., validated with the config) */
    d->tp = pio_transport_find(d->cfg.transport);
    if (!d->tp)
        PIOD_ERR("unknown transport '%s'", d->cfg.transport);
    PIO_CHECK(!d->tp, rc, PIO_EINVAL, out);
    if (!(d->tp->caps & PIO_TP_CAP_FD)) { /* no descriptor to poll (transport.h, fd) */
        if (d->cfg.nmembers > 0)
            PIOD_ERR("transport %s cannot relay between the hosts of a system (the relay copies "
                     "from a descriptor it polls): use transport = tcp",
                     d->tp->name);
        PIO_CHECK(d->cfg.nmembers > 0, rc, PIO_EINVAL, out);
        if (d->cfg.express)
            PIOD_INFO("transport %s: no express lane (the main loop polls its descriptor); "
                      "control frames stay on the control plane",
                      d->tp->name);
        d->cfg.express = 0;
    }
    {
        int plain = 0;
        for (int i = 0; i < d->cfg.npeers; i++)
            plain += !piod_config_peer_encrypt(&d->cfg, &d->cfg.peers[i]);
        if (plain < d->cfg.npeers || d->cfg.npeers == 0)
            PIOD_INFO("data channels and express lanes sealed%s (offering %s, run by %s; "
                      "ChaCha20-Poly1305 if the peer does not take it)",
                      plain ? " but to peers with encrypt = no" : "",
                      piod_seal_wants_aes(d->cfg.cipher) ? "AES-256-GCM" : "ChaCha20-Poly1305",
                      piod_seal_backend_name(piod_seal_wants_aes(d->cfg.cipher)
                                                 ? PIOD_CIPHER_AES
                                                 : PIOD_CIPHER_CHACHA));
        else
            PIOD_INFO("encrypt = no: data channels and express lanes are not sealed (for links "
                      "you trust; the control plane stays CURVE)");
    }
    d->tpo.sndbuf = 4 << 20;
    d->tpo.rcvbuf = 4 << 20;
    d->tpo.src_port_lo = d->cfg.src_port_lo;
    d->tpo.src_port_hi = d->cfg.src_port_hi;
    pthread_mutex_init(&d->ev_mtx, NULL);
    pthread_mutex_init(&d->grant_mtx, NULL);
    pthread_cond_init(&d->grant_cv, NULL);
    pthread_mutex_init(&d->key_mtx, NULL);
    pthread_mutex_init(&d->rxlist_mtx, NULL);
    pthread_mutex_init(&d->relay_mtx, NULL);
    d->load_fd = -1;
    d->ring = -1;
    d->nprocs_max = (int)(d->cfg.pool / d->cfg.proc_pool);
    if (d->nprocs_max < 1)
        d->nprocs_max = 1;
    d->procs = calloc((size_t)d->nprocs_max, sizeof(*d->procs));
    d->ngrant_buckets = 4096;
    d->grants = calloc(d->ngrant_buckets, sizeof(*d->grants));
    d->scratch_len = d->cfg.eager_limit + 65536;
    d->scratch = malloc(d->scratch_len);
    PIO_CHECK(!d->procs || !d->grants || !d->scratch, rc, PIO_ENOMEM, out);
    d->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    PIO_CHECK(d->evfd < 0, rc, pio_from_errno(errno), out);

    d->zctx = zmq_ctx_new();
    PIO_CHECK(!d->zctx, rc, PIO_ENOMEM, out);
    d->zap_sock = zmq_socket(d->zctx, ZMQ_REP);
    PIO_CHECK(!d->zap_sock || zmq_bind(d->zap_sock, "inproc://zeromq.zap.01") != 0, rc,
              PIO_EINTERNAL, out);

    /* processes: the seqpacket socket (conn.c) */
    mkdir_parent(d->cfg.socket);
    PIO_TRY(piod_conn_listen(d), rc, out);

    /* peers: tcp ROUTER, CURVE server */
    d->ctl_sock = zmq_socket(d->zctx, ZMQ_ROUTER);
    PIO_CHECK(!d->ctl_sock, rc, PIO_ENOMEM, out);
    zsock_opt_int(d->ctl_sock, ZMQ_CURVE_SERVER, 1);
    zmq_setsockopt(d->ctl_sock, ZMQ_CURVE_SECRETKEY, d->keys.secret_key, 40);
    zmq_setsockopt(d->ctl_sock, ZMQ_ZAP_DOMAIN, "pio", 3);
    zsock_opt_int(d->ctl_sock, ZMQ_RCVHWM, 0);
    zsock_opt_int(d->ctl_sock, ZMQ_LINGER, 0);
    /* the control plane listens on the control address, or on every link
     * address (a peer reaches us over whichever link it has) */
    const char *caddr = d->cfg.control_addr[0] ? d->cfg.control_addr : d->cfg.listen[0];
    for (int i = 0; i < (d->cfg.control_addr[0] ? 1 : d->cfg.nlisten); i++) {
        const char *a = d->cfg.control_addr[0] ? d->cfg.control_addr : d->cfg.listen[i];
        snprintf(ep, sizeof(ep), strchr(a, ':') ? "tcp://[%s]:%d" : "tcp://%s:%d", a,
                 d->cfg.control_port);
        if (zmq_bind(d->ctl_sock, ep) != 0) {
            PIOD_ERR("cannot bind the control plane on %s: %s", ep, zmq_strerror(errno));
            rc = PIO_EADDR;
            goto out;
        }
    }

    do /* this run, told in H_HELLO: frames of another run are told apart */
        randombytes_buf(&d->epoch, sizeof(d->epoch));
    while (d->epoch == 0);
    d->npeers = d->cfg.npeers;
    for (int i = 0; i < d->npeers; i++) {
        struct piod_peer_st *p = &d->peers[i];
        p->cfg = &d->cfg.peers[i];
        randombytes_buf(p->my_key, sizeof(p->my_key));
        piod_lseq_init(&p->lq);
        p->lq.freed = lane_freed;
        p->lq.freed_arg = d;
        const char *server_key = piod_keys_public_of(&d->keys, p->cfg->name);
        if (!server_key) {
            PIOD_ERR("no public key for peer %s in %s: copy %s.pub there", p->cfg->name,
                     d->cfg.keys, p->cfg->name);
            rc = PIO_ECONFIG;
            goto out;
        }
        p->dealer = zmq_socket(d->zctx, ZMQ_DEALER);
        PIO_CHECK(!p->dealer, rc, PIO_ENOMEM, out);
        zmq_setsockopt(p->dealer, ZMQ_CURVE_SERVERKEY, server_key, 40);
        zmq_setsockopt(p->dealer, ZMQ_CURVE_PUBLICKEY, d->keys.public_key, 40);
        zmq_setsockopt(p->dealer, ZMQ_CURVE_SECRETKEY, d->keys.secret_key, 40);
        zsock_opt_int(p->dealer, ZMQ_SNDHWM, 100000);
        zsock_opt_int(p->dealer, ZMQ_LINGER, 0);
        zsock_opt_int(p->dealer, ZMQ_RECONNECT_IVL, 100);
        zsock_opt_int(p->dealer, ZMQ_RECONNECT_IVL_MAX, 1000);
        int port = p->cfg->control_port ? p->cfg->control_port : d->cfg.control_port;
        /* its control address, or its address on the first link we own */
        int k0 = 0;
        while (k0 < d->cfg.nlinks && k0 < p->cfg->naddr - 1 && d->cfg.link_owner[k0] >= 0)
            k0++;
        const char *a = p->cfg->control[0] ? p->cfg->control : p->cfg->addr[k0];
        snprintf(ep, sizeof(ep), strchr(a, ':') ? "tcp://[%s]:%d" : "tcp://%s:%d", a, port);
        char mon_ep[64];
        snprintf(mon_ep, sizeof(mon_ep), "inproc://piod-peer-%d", i);
        if (zmq_socket_monitor(p->dealer, mon_ep,
                               ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                                   ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                   ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) == 0) {
            p->mon = zmq_socket(d->zctx, ZMQ_PAIR);
            if (p->mon && zmq_connect(p->mon, mon_ep) != 0) {
                zmq_close(p->mon);
                p->mon = NULL;
            }
        }
        PIO_CHECK(zmq_connect(p->dealer, ep) != 0, rc, PIO_EADDR, out);
        p->nchan = 0;
    }
    PIO_TRY(piod_chan_start(d), rc, out);
    PIO_TRY(piod_relay_start(d), rc, out);
    for (int i = 0; i < d->npeers; i++)
        peer_send_hello(d, i);
    PIOD_INFO("piod %s (system %s) serving %s; control %s:%d, data port %d, %d link(s), %d "
              "peer(s)",
              d->cfg.name, d->cfg.system, d->cfg.socket, caddr, d->cfg.control_port,
              d->cfg.data_port, d->cfg.nlisten, d->npeers);
out:
    return rc;
}

/* Log every message in flight (SIGUSR1): what an operator needs to see a stall. */
void piod_dump(struct piod *d)
{
    int n = 0;
    for (struct piod_omsg *m = d->omsgs; m; m = m->next, n++) {
        uint32_t st[4] = {0, 0, 0, 0}, nodata = 0, nogrant = 0;
        for (uint32_t i = 0; i < m->nchunks; i++) {
            st[m->state[i] & 3]++;
            nodata += m->data_off[i] == UINT64_MAX;
            nogrant += m->grant[i] < 0;
        }
        PIOD_INFO("out msg %llu sid %llu to %d: %llu B, %u chunks: %u waiting (%u without data, "
                  "%u without grant), %u queued, %u acked, %u to resend",
                  (unsigned long long)m->msgid, (unsigned long long)m->sid, m->peer,
                  (unsigned long long)m->size, m->nchunks, st[0], nodata, nogrant, st[1], st[2],
                  st[3]);
    }
    for (struct piod_imsg *m = d->imsgs; m; m = m->next, n++)
        PIOD_INFO("in msg %llu key %llu from %d for proc %d: %llu B, %u chunks, %u granted, %u "
                  "arrived, %u freed, %s, %s",
                  (unsigned long long)m->msgid, (unsigned long long)m->key, m->peer, m->dst,
                  (unsigned long long)m->size, m->nchunks, m->ngranted, m->narrived, m->nfreed,
                  m->announced ? "announced" : "not announced",
                  m->claimed ? "claimed" : "unclaimed");
    for (int p = 0; p < d->npeers; p++)
        for (int k = 0; k < d->peers[p].nchan; k++) {
            uint64_t q = 0;
            int s = d->peers[p].tx[k] ? piod_tx_state(d->peers[p].tx[k], &q) : -1;
            PIOD_INFO("peer %s channel %d: tx state %d queued %llu; rx %s outstanding %llu rate "
                      "%.0f",
                      d->peers[p].cfg->name, k, s, (unsigned long long)q,
                      d->peers[p].bal[k].up ? "up" : "down",
                      (unsigned long long)d->peers[p].bal[k].outstanding, d->peers[p].bal[k].rate);
        }
    for (int i = 0; i < d->nprocs_max; i++)
        if (d->procs[i].used && !d->procs[i].gone)
            PIOD_INFO("process %s:%u: recv region %llu of %llu used, unclaimed %llu",
                      d->procs[i].app, d->procs[i].proc, (unsigned long long)d->procs[i].recv.used,
                      (unsigned long long)d->procs[i].recv_len,
                      (unsigned long long)d->procs[i].unclaimed_bytes);
    PIOD_INFO("%d message(s) in flight", n);
}

static int zsock_fd(void *s)
{
    int fd = -1;
    size_t l = sizeof(fd);
    return zmq_getsockopt(s, ZMQ_FD, &fd, &l) == 0 ? fd : -1;
}

static int zsock_readable(void *s)
{
    int ev = 0;
    size_t l = sizeof(ev);
    return zmq_getsockopt(s, ZMQ_EVENTS, &ev, &l) == 0 && (ev & ZMQ_POLLIN);
}

int piod_run(struct piod *d, volatile int *stop, volatile int *reopen, int drain_ms)
{
    struct pio_frame *f = malloc(sizeof(*f));
    if (!f)
        return PIO_ENOMEM;
    size_t nmax = (size_t)(6 + 3 * PIOD_MAX_PEERS + d->nconns);
    struct pollfd *it = calloc(nmax, sizeof(*it));
    int *itc = calloc(nmax, sizeof(*itc));
    int ctl_fd = zsock_fd(d->ctl_sock), zap_fd = zsock_fd(d->zap_sock), zcheck = 1;
    int mon_fd[PIOD_MAX_PEERS];
    for (int p = 0; p < d->npeers; p++)
        mon_fd[p] = d->peers[p].mon ? zsock_fd(d->peers[p].mon) : -1;
    uint64_t last_zcheck = 0, last_busy_us = 0;
    uint64_t spin_us = (uint64_t)d->cfg.spin_us;
    uint8_t *rbuf = malloc(d->scratch_len);
    /* control frames are copied (adopted) under TSan only (tsan.h) */
    size_t zcap = pio_tsan_enabled() ? d->scratch_len : 1;
    uint8_t *zbuf = malloc(zcap);
    if (!it || !itc || !rbuf || !zbuf) {
        free(it);
        free(itc);
        free(rbuf);
        free(zbuf);
        free(f);
        return PIO_ENOMEM;
    }
    d->rbuf = rbuf;
    uint64_t drain_deadline = 0;
    for (;;) {
        if (d->dump) {
            d->dump = 0;
            piod_dump(d);
        }
        if (*reopen) {
            *reopen = 0;
            piod_log_reopen();
            PIOD_INFO("log reopened");
        }
        if (*stop && !drain_deadline) {
            d->stopping = 1;
            drain_deadline = piod_now_ms() + (uint64_t)drain_ms;
            PIOD_INFO("stopping: draining messages in flight (up to %d ms)", drain_ms);
        }
        if (drain_deadline) {
            int busy = 0;
            for (struct piod_omsg *m = d->omsgs; m; m = m->next)
                if (m->peer >= 0)
                    busy = 1;
            if (!busy || piod_now_ms() >= drain_deadline) {
                if (busy)
                    PIOD_WARN("drain time over with messages still in flight");
                break;
            }
        }
        /* ZeroMQ sockets take part through their ZMQ_FD, which only says
         * "look at ZMQ_EVENTS": we look when it fires, after a batch that hit
         * its limit, and every TICK_MS anyway. So a frame on a process
         * socket or an express lane costs one poll() and no ZeroMQ call. */
        int nfix = 3 + d->npeers, nit = nfix;
        it[0] = (struct pollfd){d->lfd, POLLIN, 0};
        it[1] = (struct pollfd){ctl_fd, POLLIN, 0};
        it[2] = (struct pollfd){zap_fd, POLLIN, 0};
        for (int p = 0; p < d->npeers; p++)
            it[3 + p] = (struct pollfd){mon_fd[p], POLLIN, 0};
        int lanes_full = lanes_congested(d);
        size_t share = lanes_full ? lane_share(d) : 0;
        for (int i = 0; i < d->nconns; i++)
            if (d->conns[i].fd >= 0) {
                itc[nit] = i;
                short in =
                    piod_conn_reading(d, &d->conns[i]) && !(lanes_full && d->conns[i].joined &&
                                                            lane_heavy(d, &d->conns[i], share))
                        ? POLLIN
                        : 0;
                it[nit++] = (struct pollfd){d->conns[i].fd,
                                            (short)(in | (d->conns[i].out.head ? POLLOUT : 0)), 0};
            }
        int nconn_end = nit;
        for (int p = 0; p < d->npeers; p++) {
            struct piod_peer_st *ps = &d->peers[p];
            if (ps->xout) {
                itc[nit] = p;
                it[nit++] =
                    (struct pollfd){ps->xout_fd, (short)(POLLIN | (ps->xo.head ? POLLOUT : 0)), 0};
            }
            if (ps->xin) {
                itc[nit] = PIOD_MAX_PEERS + p;
                it[nit++] = (struct pollfd){ps->xin_fd, POLLIN, 0};
            }
        }
        int iev = nit, iload = -1;
        itc[nit] = -1;
        it[nit++] = (struct pollfd){d->evfd, POLLIN, 0};
        if (d->load_fd >= 0) {
            iload = nit;
            itc[nit] = -1;
            it[nit++] = (struct pollfd){d->load_fd, POLLIN, 0};
        }
        /* After activity, look again without sleeping for a little while
         * (yielding the CPU between looks): the answer to what we just
         * forwarded usually comes within tens of microseconds, and waking a
         * sleeping thread costs more than that on a virtual machine. */
        int n = 0;
        if (spin_us > 0 && !zcheck) {
            uint64_t t0 = piod_now_us();
            while ((n = poll(it, (nfds_t)nit, 0)) == 0 && piod_now_us() - last_busy_us < spin_us &&
                   piod_now_us() - t0 < spin_us)
                sched_yield();
        }
        if (n == 0)
            n = poll(it, (nfds_t)nit, zcheck ? 0 : TICK_MS);
        if (n > 0)
            last_busy_us = piod_now_us();
        if (n < 0 && errno != EINTR) {
            PIOD_ERR("poll: %s", strerror(errno));
            break;
        }
        uint64_t now = piod_now_ms();
        if (now - last_zcheck >= TICK_MS) {
            zcheck = 1;
            last_zcheck = now;
        }
        if (n > 0 && (it[iev].revents & POLLIN))
            on_events(d);
        if (n > 0 && iload >= 0 && (it[iload].revents & POLLIN))
            piod_relay_load_in(d, f);
        for (int k = nconn_end; n > 0 && k < iev; k++)
            if (it[k].revents)
                on_express_ready(d, itc[k] % PIOD_MAX_PEERS, itc[k] < PIOD_MAX_PEERS, it[k].revents,
                                 f);
        for (int k = nfix; n > 0 && k < nconn_end; k++)
            if (it[k].revents)
                on_conn_ready(d, &d->conns[itc[k]], it[k].revents, f);
        if (n > 0 && (it[0].revents & POLLIN))
            piod_conn_accept(d);
        int zall = zcheck;
        zcheck = 0;
        for (int p = 0; p < d->npeers; p++)
            if (d->peers[p].mon && (zall || it[3 + p].revents))
                on_peer_monitor(d, p);
        if (zall || it[2].revents)
            for (int k = 0; k < 64 && zsock_readable(d->zap_sock); k++)
                on_zap(d);
        if (zall || it[1].revents) {
            for (int k = 0; k < 256; k++) {
                zmq_msg_t id, body;
                zmq_msg_init(&id);
                zmq_msg_init(&body);
                if (zmq_msg_recv(&id, d->ctl_sock, ZMQ_DONTWAIT) < 0) {
                    zmq_msg_close(&id);
                    zmq_msg_close(&body);
                    break;
                }
                if (zmq_msg_more(&id) && zmq_msg_recv(&body, d->ctl_sock, 0) >= 0)
                    on_ctl_frame(
                        d, zmq_msg_gets(&body, "User-Id"),
                        pio_tsan_adopt(zmq_msg_data(&body), zmq_msg_size(&body), zbuf, zcap),
                        zmq_msg_size(&body), f);
                while (zmq_msg_more(&body)) {
                    zmq_msg_close(&body);
                    zmq_msg_init(&body);
                    zmq_msg_recv(&body, d->ctl_sock, 0);
                }
                zmq_msg_close(&id);
                zmq_msg_close(&body);
            }
            /* reading ZMQ_EVENTS re-arms ZMQ_FD; more left: look again at once */
            if (zsock_readable(d->ctl_sock) || zsock_readable(d->zap_sock))
                zcheck = 1;
        }
        tick(d, piod_now_ms());
    }
    free(f);
    free(it);
    free(itc);
    free(rbuf);
    free(zbuf);
    d->rbuf = NULL;
    return PIO_OK;
}

void piod_fini(struct piod *d)
{
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_H_BYE;
    for (int i = 0; i < d->npeers; i++)
        if (d->peers[i].dealer && d->peers[i].hello_seen)
            send_peer(d, i, &f);
    piod_files_stop(d);
    piod_relay_stop(d);
    piod_chan_stop(d);
    for (int i = 0; i < d->npeers; i++) {
        express_in_down(d, i);
        if (d->peers[i].xout)
            d->tp->close(d->peers[i].xout);
        d->peers[i].xout = NULL;
        pio_fout_clear(&d->peers[i].xo);
        piod_seal_fini(&d->peers[i].xo_seal);
        free(d->peers[i].xbuf);
        d->peers[i].xbuf = NULL;
        piod_lseq_fini(&d->peers[i].lq);
    }
    for (int i = 0; i < d->nprocs_max && d->procs; i++)
        if (d->procs[i].used && !d->procs[i].gone)
            proc_leave(d, i, "piod stopping");
    for (int i = 0; i < d->nprocs_max && d->procs; i++)
        if (d->procs[i].used && !atomic_load(&d->procs[i].unmapped))
            piod_proc_unmap(&d->procs[i]);
    while (d->omsgs) {
        struct piod_omsg *m = d->omsgs;
        d->omsgs = m->next;
        free(m->data_off);
        free(m->grant);
        free(m->state);
        free(m);
    }
    while (d->imsgs)
        imsg_free(d, d->imsgs);
    piod_htab_free(&d->omsg_id);
    piod_htab_free(&d->omsg_sid);
    piod_htab_free(&d->imsg_id);
    piod_htab_free(&d->imsg_key);
    piod_htab_free(&d->proc_app);
    piod_htab_free(&d->proc_name);
    while (d->pending) {
        struct piod_pending_partner *p = d->pending;
        d->pending = p->next;
        free(p);
    }
    streams_drop(&d->tx_streams, -1);
    streams_drop(&d->rx_streams, -1);
    for (size_t h = 0; d->grants && h < d->ngrant_buckets; h++)
        while (d->grants[h]) {
            struct piod_grant *g = d->grants[h];
            d->grants[h] = g->next;
            free(g);
        }
    while (d->ev_head) {
        struct piod_ev *e = d->ev_head;
        d->ev_head = e->next;
        if (e->kind == PIOD_EV_EXPRESS && e->conn)
            d->tp->close(e->conn);
        while (e->chunks) {
            struct piod_chunk *c = e->chunks;
            e->chunks = c->next;
            free(c);
        }
        free(e);
    }
    for (int i = 0; i < d->npeers; i++) {
        if (d->peers[i].mon)
            zmq_close(d->peers[i].mon);
        if (d->peers[i].dealer)
            zmq_close(d->peers[i].dealer);
        remote_apps_clear(&d->peers[i]);
    }
    piod_conn_fini(d);
    if (d->ctl_sock)
        zmq_close(d->ctl_sock);
    if (d->zap_sock)
        zmq_close(d->zap_sock);
    if (d->zctx)
        zmq_ctx_term(d->zctx);
    if (d->sock_bound)
        unlink(d->cfg.socket); /* only ours: a refused second piod leaves the first's alone */
    if (d->evfd > 0)
        close(d->evfd);
    free(d->procs);
    free(d->grants);
    free(d->scratch);
}
