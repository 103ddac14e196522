/* dlane.c - direct lanes: a TCP connection between two processes of two
 * hosts, brokered by their piods (docs/protocol.md, "Direct lanes"; design
 * notes, "The direct lane").
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A process asks its piod (P_LANE_REQ) for a lane to a process that joined a
 * peer. The piod opens a connection over one of its links (the up ones in
 * turn, lane by lane) to the peer's data port
 * on a thread of its own (dlane_open_main), proves its key for index
 * PIOD_DLANE_INDEX as a data channel does (chan_open), and says on it whose
 * lane it is (C_LANE, sealed when the connection is). The peer's receiver
 * thread takes the proof and the C_LANE (chan_rx.c) and posts the
 * connection to its main loop, which checks that the destination joined
 * there, answers C_ACCEPT and hands the socket to that process (P_LANE with
 * SCM_RIGHTS: the sender's identity as its piod stamped it, and the seals of
 * both directions with their counters). The opener's thread reads that
 * C_ACCEPT and posts the connection to its main loop, which hands it to the
 * asking process. From then on the piods hold nothing of the lane: the two
 * processes talk on it (libpio/lane.c), and a lane that breaks is the
 * processes' business (they fall back on the piods).
 * Threads: dlane_open_main runs alone with its job (d->dlane_threads counts
 * them; piod_dlane_stop waits); everything else runs on the main thread.
 * At most DLANE_OPENING lanes are opened at once; the others wait their
 * turn in arrival order (the peer takes at most CHAN_HS_PER_ADDR unfinished
 * handshakes from one address and closes the rest: 32 processes asking at
 * once got PIO_ECLOSED for 22 of their lanes).
 */
#include "dlane.h"
#include "piod.h"
#include "chan_int.h"
#include "core_int.h"
#include "err.h"
#include "log.h"
#include "seal.h"
#include "wire/wire.h"

#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define DLANE_OPENING 4 /* lanes opened at once (below the peer's CHAN_HS_PER_ADDR) */

/* One lane on its way: made by the opener's main loop (or the acceptor's
 * receiver thread), carried by a PIOD_EV_DLANE to the main loop. */
struct piod_dlane {
    struct piod_dlane *next; /* d->dlane_wait */
    struct piod *d;
    int peer;
    int pi;       /* the asking process (opener) */
    uint64_t cid; /* ... its connection, to tell it from a later one in slot pi */
    uint64_t req;
    struct pio_c_lane cl;
    int link; /* the opener connects over it (dlane_link) */
    int status;
    struct chan_open_out o;
};

static void dlane_free(struct piod *d, struct piod_dlane *j)
{
    if (j->o.conn)
        d->tp->close(j->o.conn);
    pio_seal_fini(&j->o.seal_data);
    pio_seal_fini(&j->o.seal_ack);
    free(j);
}

void piod_dlane_discard(struct piod *d, struct piod_ev *ev)
{
    if (ev->dlane)
        dlane_free(d, ev->dlane);
    ev->dlane = NULL;
}

/* f inside a C_SEALED frame sealed with s, or as it is (s NULL), on c. */
static int dlane_send(struct piod *d, struct pio_tp_conn *c, struct pio_seal *s,
                      const struct pio_frame *f)
{
    uint8_t inner[1024], out[PIO_WIRE_HDR + sizeof(inner) + PIO_SEAL_TAG];
    size_t len;
    int rc = pio_wire_encode(f, inner, sizeof(inner), &len);
    if (rc != PIO_OK)
        return rc;
    struct iovec iov = {.iov_base = inner, .iov_len = len};
    if (s) {
        if ((rc = pio_wire_sealed_wrap(out, len + PIO_SEAL_TAG)) != PIO_OK)
            return rc;
        if (pio_seal_data(s, out, 12, inner, out + PIO_WIRE_HDR, len, out + PIO_WIRE_HDR + len))
            return PIO_ENOMEM;
        iov.iov_base = out;
        iov.iov_len = PIO_WIRE_HDR + len + PIO_SEAL_TAG;
    }
    return d->tp->sendv(c, &iov, 1);
}

int piod_dlane_recv_clane(struct piod *d, struct pio_tp_conn *c, struct pio_seal *s,
                          struct pio_c_lane *cl, const char *who)
{
    uint8_t buf[1024];
    struct pio_frame f;
    int rc = chan_recv_frame(d, c, buf, sizeof(buf), &f, who);
    if (rc != PIO_OK)
        return rc;
    if (s) { /* open the sealed frame in place, then decode what it held */
        if (f.type != PIO_F_C_SEALED || f.u.c_sealed.len < PIO_WIRE_HDR + PIO_SEAL_TAG)
            return PIO_EPROTO;
        uint8_t *body = buf + PIO_WIRE_HDR;
        size_t n = f.u.c_sealed.len - PIO_SEAL_TAG;
        if (pio_seal_open(s, buf, 12, body, n, body + n) != 0)
            return PIO_EAUTH;
        if ((rc = pio_wire_decode(body, n, &f, NULL)) != PIO_OK)
            return rc;
    }
    if (f.type != PIO_F_C_LANE)
        return PIO_EPROTO;
    *cl = f.u.c_lane;
    return PIO_OK;
}

static void dlane_post(struct piod *d, struct piod_dlane *j, int state)
{
    struct piod_ev *ev = calloc(1, sizeof(*ev));
    if (!ev) {
        dlane_free(d, j);
        return;
    }
    ev->kind = PIOD_EV_DLANE;
    ev->state = state;
    ev->peer = j->peer;
    ev->dlane = j;
    piod_post(d, ev);
}

/* The opener's thread: connect, prove, say whose lane it is, read the
 * answer; then the main loop hands the connection over (or the refusal). */
static void *dlane_open_main(void *arg)
{
    struct piod_dlane *j = arg;
    struct piod *d = j->d;
    char who[PIO_WIRE_NAME + 48];
    snprintf(who, sizeof(who), "(direct lane %llu) to %s", (unsigned long long)j->cl.lane_id,
             d->peers[j->peer].cfg->name);
    int rc = chan_open(d, j->peer, j->link, PIOD_DLANE_INDEX, who, 0, &j->o);
    if (rc == PIO_OK)
        rc = dlane_send(d, j->o.conn, j->o.sealed ? &j->o.seal_data : NULL,
                        &(struct pio_frame){.type = PIO_F_C_LANE, .u.c_lane = j->cl});
    if (rc == PIO_OK) {
        uint8_t buf[256];
        struct pio_frame f;
        rc = chan_recv_frame(d, j->o.conn, buf, sizeof(buf), &f, who);
        if (rc == PIO_OK)
            rc = f.type == PIO_F_C_ACCEPT ? f.u.c_accept.status : PIO_EPROTO;
    }
    j->status = rc;
    dlane_post(d, j, PIOD_EVS_LANE_OURS);
    atomic_fetch_sub(&d->dlane_threads, 1);
    return NULL;
}

/* P_LANE to process cid: the status alone, or the connection's end. */
static void dlane_hand(struct piod *d, uint64_t cid, struct piod_dlane *j, int role)
{
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_LANE;
    struct pio_p_lane *l = &f.u.p_lane;
    l->req = role == 0 ? j->req : 0;
    l->status = j->status;
    l->role = (uint32_t)role;
    l->lane_id = j->cl.lane_id;
    if (j->status != PIO_OK || !j->o.conn) {
        if (l->status == PIO_OK)
            l->status = PIO_EINTERNAL;
        send_cid(d, cid, &f);
        return;
    }
    /* the opener seals data and opens acks; the acceptor the other way */
    const struct pio_seal *out = role == 0 ? &j->o.seal_data : &j->o.seal_ack;
    const struct pio_seal *in = role == 0 ? &j->o.seal_ack : &j->o.seal_data;
    l->sealed = (uint32_t)j->o.sealed;
    l->cipher = (uint32_t)j->o.cipher;
    if (j->o.sealed) {
        memcpy(l->key_out, out->key, PIO_WIRE_KEY);
        memcpy(l->key_in, in->key, PIO_WIRE_KEY);
        l->n_out = out->n;
        l->n_in = in->n;
    }
    if (role == 0) {
        snprintf(l->app, sizeof(l->app), "%s", j->cl.dst_app);
        l->proc = j->cl.dst_proc;
    } else {
        const struct piod_peer *pc = d->peers[j->peer].cfg;
        snprintf(l->app, sizeof(l->app), "%s", j->cl.src_app);
        l->proc = j->cl.src_proc;
        l->uid = j->cl.uid;
        l->gid = j->cl.gid;
        snprintf(l->user, sizeof(l->user), "%s", j->cl.user);
        snprintf(l->system, sizeof(l->system), "%s", pc->system[0] ? pc->system : pc->name);
    }
    int fd = dup(d->tp->fd(j->o.conn));
    if (fd < 0) {
        l->status = pio_from_errno(errno);
        memset(l->key_out, 0, sizeof(l->key_out));
        memset(l->key_in, 0, sizeof(l->key_in));
        send_cid(d, cid, &f);
        return;
    }
    send_cid_fd(d, cid, &f, fd);
    sodium_memzero(l, sizeof(*l));
}

/* j's opener thread; on failure the refusal goes to the asking process. */
static void dlane_start(struct piod *d, struct piod_dlane *j)
{
    pthread_t t;
    pthread_attr_t at;
    int rc = PIO_ENOMEM;
    if (pthread_attr_init(&at) == 0) {
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        atomic_fetch_add(&d->dlane_threads, 1);
        if (pthread_create(&t, &at, dlane_open_main, j) == 0)
            rc = PIO_OK;
        else
            atomic_fetch_sub(&d->dlane_threads, 1);
        pthread_attr_destroy(&at);
    }
    if (rc == PIO_OK) {
        d->dlane_opening++;
        return;
    }
    j->status = rc;
    dlane_hand(d, j->cid, j, 0);
    dlane_free(d, j);
}

/* An opener is back: the next waiting lanes start. */
static void dlane_next(struct piod *d)
{
    while (d->dlane_wait && d->dlane_opening < DLANE_OPENING) {
        struct piod_dlane *j = d->dlane_wait;
        d->dlane_wait = j->next;
        if (!d->dlane_wait)
            d->dlane_wait_tail = NULL;
        j->next = NULL;
        dlane_start(d, j);
    }
}

/* The link lane n to peer goes over: the peer's up channels' links in
 * turn, so that many lanes spread over the bundle as the piods' chunks do
 * (link 0 when none is up: the open then fails as a channel's would). */
static int dlane_link(struct piod *d, int peer, uint64_t n)
{
    const struct piod_peer_st *p = &d->peers[peer];
    int up[PIOD_MAX_LINKS], nup = 0;
    for (int i = 0; i < p->nchan && i < PIOD_MAX_LINKS; i++)
        if (p->tx[i] && piod_tx_state(p->tx[i], NULL) == PIO_WCHAN_UP)
            up[nup++] = i;
    return nup ? up[n % (uint64_t)nup] : 0;
}

void piod_on_lane_req(struct piod *d, int pi, const struct pio_p_lane_req *r)
{
    struct piod_proc *src = &d->procs[pi];
    struct piod_dlane *j = calloc(1, sizeof(*j));
    if (!j)
        return;
    j->d = d;
    j->pi = pi;
    j->cid = src->cid;
    j->req = r->req;
    j->peer = -1;
    int status = PIO_OK;
    uint32_t nprocs = find_proc(d, r->app, r->proc, &j->peer);
    if (!d->cfg.direct_lanes || !(d->tp->caps & PIO_TP_CAP_FD))
        status = PIO_ENOSYS;
    else if (!nprocs || r->proc >= nprocs)
        status = PIO_EPARTNER;
    else if (j->peer < 0)
        status = PIO_ENOSYS; /* a process of this host: the piod is the shortest way */
    else if (!d->peers[j->peer].hello_seen || d->peers[j->peer].nchan == 0 ||
             d->peers[j->peer].unreachable)
        status = PIO_ELINK;
    if (status == PIO_OK) {
        struct piod_remote_app *a = remote_app(&d->peers[j->peer], r->app, 0, 0);
        if (!a || !a->joined[r->proc])
            status = PIO_EGONE;
    }
    j->cl.lane_id = ++d->dlane_next;
    j->cl.src_proc = src->proc;
    j->cl.dst_proc = r->proc;
    j->cl.uid = (uint32_t)src->uid; /* the kernel's word (SO_PEERCRED) */
    j->cl.gid = (uint32_t)src->gid;
    snprintf(j->cl.src_app, sizeof(j->cl.src_app), "%s", src->app);
    snprintf(j->cl.dst_app, sizeof(j->cl.dst_app), "%s", r->app);
    snprintf(j->cl.user, sizeof(j->cl.user), "%s", src->user);
    if (status == PIO_OK) {
        j->link = dlane_link(d, j->peer, j->cl.lane_id);
        PIOD_DEBUG("direct lane %llu: %s:%u -> %s:%u at %s, opening on link %d",
                   (unsigned long long)j->cl.lane_id, src->app, src->proc, r->app, r->proc,
                   d->peers[j->peer].cfg->name, j->link);
        if (d->dlane_opening < DLANE_OPENING)
            dlane_start(d, j);
        else { /* its turn comes when an opener is back (piod_on_dlane_event) */
            if (d->dlane_wait_tail)
                d->dlane_wait_tail->next = j;
            else
                d->dlane_wait = j;
            d->dlane_wait_tail = j;
        }
        return;
    }
    j->status = status;
    dlane_hand(d, j->cid, j, 0);
    dlane_free(d, j);
}

int piod_dlane_accepted(struct piod *d, int peer, struct pio_tp_conn *c, int sealed, int cipher,
                        const struct pio_seal *data, const struct pio_seal *ack,
                        const struct pio_c_lane *cl)
{
    struct piod_dlane *j = calloc(1, sizeof(*j));
    if (!j)
        return PIO_ENOMEM;
    j->d = d;
    j->peer = peer;
    j->pi = -1;
    j->cl = *cl;
    j->o.conn = c;
    j->o.sealed = sealed;
    j->o.cipher = cipher;
    if (sealed) {
        j->o.seal_data = *data;
        j->o.seal_ack = *ack;
    }
    dlane_post(d, j, PIOD_EVS_LANE_THEIRS);
    return PIO_OK;
}

void piod_on_dlane_event(struct piod *d, struct piod_ev *ev)
{
    struct piod_dlane *j = ev->dlane;
    ev->dlane = NULL;
    if (!j)
        return;
    if (ev->state == PIOD_EVS_LANE_OURS) {
        d->dlane_opening--;
        dlane_next(d);
        struct piod_proc *p = j->pi >= 0 ? &d->procs[j->pi] : NULL;
        if (p && p->used && !p->gone && p->cid == j->cid) {
            if (j->status != PIO_OK)
                PIOD_INFO("direct lane %llu of %s:%u to %s:%u at %s refused: %s",
                          (unsigned long long)j->cl.lane_id, p->app, p->proc, j->cl.dst_app,
                          j->cl.dst_proc, d->peers[j->peer].cfg->name, PIO_Strerror(j->status));
            else
                PIOD_DEBUG("direct lane %llu up: %s:%u -> %s:%u", (unsigned long long)j->cl.lane_id,
                           p->app, p->proc, j->cl.dst_app, j->cl.dst_proc);
            dlane_hand(d, j->cid, j, 0);
        }
        dlane_free(d, j);
        return;
    }
    /* THEIRS: the destination must have joined here */
    int pi = proc_by_name(d, j->cl.dst_app, j->cl.dst_proc);
    /* a process that declared receive classes (PIO_Setclasses) is served
     * by its classes' shares of the piod's grants, which a lane would pass
     * by: its messages come through the piods */
    int st = pi < 0 ? PIO_EGONE : d->procs[pi].ncls > 0 ? PIO_ENOSYS : PIO_OK;
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_C_ACCEPT;
    f.u.c_accept.status = st;
    int rc = chan_send_frame(d, j->o.conn, &f);
    if (st != PIO_OK)
        PIOD_INFO("direct lane %llu from %s:%u of %s to %s:%u refused: %s",
                  (unsigned long long)j->cl.lane_id, j->cl.src_app, j->cl.src_proc,
                  d->peers[j->peer].cfg->name, j->cl.dst_app, j->cl.dst_proc,
                  st == PIO_ENOSYS ? "it has receive classes" : PIO_Strerror(st));
    if (st == PIO_OK && rc == PIO_OK) {
        j->status = PIO_OK;
        PIOD_DEBUG("direct lane %llu from %s:%u of %s to %s:%u: handed over",
                   (unsigned long long)j->cl.lane_id, j->cl.src_app, j->cl.src_proc,
                   d->peers[j->peer].cfg->name, j->cl.dst_app, j->cl.dst_proc);
        dlane_hand(d, d->procs[pi].cid, j, 1);
    }
    dlane_free(d, j);
}

void piod_dlane_stop(struct piod *d)
{
    while (d->dlane_wait) { /* never started: nothing to wait for */
        struct piod_dlane *j = d->dlane_wait;
        d->dlane_wait = j->next;
        dlane_free(d, j);
    }
    d->dlane_wait_tail = NULL;
    /* each opener ends within its connection's timeouts */
    for (int i = 0; i < 600 && atomic_load(&d->dlane_threads) > 0; i++)
        usleep(50000);
}
