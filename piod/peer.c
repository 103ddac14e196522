/* peer.c - peers: hellos, registries, requests, replies and outcomes from
 * other piods, the express lane, and ZAP (which CURVE clients may talk to us).
 * Split from core.c; main thread only.
 * SPDX-License-Identifier: BSD-3-Clause */
#include "piod.h"
#include "relay.h"
#include "log.h"
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
#include "core_int.h"

/* ---- peers ---- */

void peer_send_hello(struct piod *d, int peer)
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
void on_peer_monitor(struct piod *d, int peer)
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
void lane_lost(void *arg, const struct piod_lseq_ent *e)
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
    if (p->refused) /* it refused our key, and talks to us now: it may know it (reload.c) */
        piod_peer_reconnect(d, peer);
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
            uint64_t *lv = calloc(e->nprocs, sizeof(*lv));
            if (!j || !lv) {
                free(j);
                free(lv);
                continue;
            }
            free(a->joined);
            free(a->left_ev);
            a->joined = j;
            a->left_ev = lv;
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
            a->left_ev[e->proc] = ++d->events;
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
void on_ctl_frame(struct piod *d, const char *user, const uint8_t *buf, size_t len,
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

/* ---- the express lane (chan_tx.c opens and chan_rx.c authenticates it) ---- */

/* Our lane to a peer failed; frames take ZeroMQ until the lane's thread
 * has opened a new one. What waited in xo, and what the kernel had taken,
 * may be lost with the connection: every frame the peer has not
 * acknowledged goes again now, on ZeroMQ, in order (the peer drops what it
 * already has; lane.h). */
void express_out_down(struct piod *d, int peer, const char *why)
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
    pio_seal_fini(&p->xo_seal);
    piod_express_failed(d, peer); /* its thread closes it and reconnects */
    if (p->lq.head) {
        PIOD_WARN("%zu frame(s) (%zu bytes) to %s not yet acknowledged go again on the control "
                  "plane",
                  p->lq.unacked_n, p->lq.unacked_bytes, p->cfg->name);
        lane_replay(d, peer);
    }
}

void express_in_down(struct piod *d, int peer)
{
    struct piod_peer_st *p = &d->peers[peer];
    if (!p->xin)
        return;
    d->tp->close(p->xin);
    p->xin = NULL;
    p->xin_fd = -1;
    pio_fin_fini(&p->xi);
    p->xi_sealed = 0;
    pio_seal_fini(&p->xi_seal);
}

static int set_nonblocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0 ? 0 : -1;
}

void on_express_event(struct piod *d, struct piod_ev *ev)
{
    struct piod_peer_st *p = &d->peers[ev->peer];
    int fd = d->tp->fd(ev->conn);
    if (ev->state == PIOD_EVS_LANE_OURS) { /* ours, from its thread */
        if (p->xout)
            express_out_down(d, ev->peer, "replaced");
        if (set_nonblocking(fd) != 0) {
            pio_seal_fini(&ev->seal);
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
            pio_seal_fini(&ev->seal);
            d->tp->close(ev->conn);
            return;
        }
        p->xin = ev->conn;
        p->xin_fd = fd;
        p->xi_sealed = ev->sealed;
        p->xi_seal = ev->seal;
        /* a sealed frame is the frame, a header and a tag */
        pio_fin_init(&p->xi, d->scratch_len + PIO_WIRE_HDR + PIO_SEAL_TAG);
    }
}

/* xin readable: handle every complete frame. xout readable means it closed
 * (the peer never writes on our lane); writable, that its queue may move. */
void on_express_ready(struct piod *d, int peer, int out, short revents, struct pio_frame *f)
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
            if (fr[5] != PIO_F_C_SEALED || n < PIO_WIRE_HDR + PIO_SEAL_TAG ||
                pio_seal_open(&p->xi_seal, fr, 12, body, n - PIO_SEAL_TAG,
                              body + n - PIO_SEAL_TAG) != 0) {
                PIOD_WARN("express lane from %s: a frame failed its seal check (%s): closed",
                          p->cfg->name,
                          fr[5] != PIO_F_C_SEALED ? "not sealed" : "forged or altered on the way");
                express_in_down(d, peer);
                return;
            }
            fr = body;
            len = n - PIO_SEAL_TAG;
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

void on_zap(struct piod *d)
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
