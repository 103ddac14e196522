/* core.c - piod's main thread: sending frames, the event queue, and the
 * life cycle (init, the poll loop, fini).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The main thread's work is split in rooms, which share core_int.h:
 *   registry.c  peers' applications, joined processes by name, streams
 *   msg.c       messages in flight: lookup, sender side, announce, grants
 *   proc.c      this host's processes and their frames
 *   peer.c      other piods' frames, the express lane, ZAP
 *   event.c     what channel threads report, and tick
 * What follows describes them together.
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
#include "dlane.h"
#include "piod.h"
#include "core_int.h"
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

int send_cid(struct piod *d, uint64_t cid, const struct pio_frame *f)
{
    size_t len;
    int rc = enc(d, f, &len);
    if (rc != PIO_OK)
        return rc;
    return piod_conn_send(d, cid, d->scratch, len);
}

int send_cid_fd(struct piod *d, uint64_t cid, const struct pio_frame *f, int pass_fd)
{
    size_t len;
    int rc = enc(d, f, &len);
    if (rc != PIO_OK) {
        close(pass_fd);
        return rc;
    }
    return piod_conn_send_fd(d, cid, d->scratch, len, pass_fd);
}

int send_proc(struct piod *d, int pi, const struct pio_frame *f)
{
    if (d->cfg.log_level >= PIOD_LOG_DEBUG)
        PIOD_DEBUG("to proc %d: %s", pi, pio_wire_type_name(f->type));
    struct piod_proc *p = &d->procs[pi];
    if (p->gone)
        return PIO_EGONE;
    return send_cid(d, p->cid, f);
}

/* One frame onto our express lane: as it is, or, on a sealed lane, inside a
 * C_SEALED frame (seal.h). Frames are sealed in the order they enter xo,
 * which is the order the peer reads them: the nonces agree. Returns what
 * pio_fout_send does, or PIO_ENOMEM / PIO_EINVAL (the lane must go down). */
static int express_send(struct piod_peer_st *p, const uint8_t *buf, size_t len)
{
    if (!p->xo_sealed)
        return pio_fout_send(&p->xo, p->xout_fd, buf, len);
    size_t body = len + PIO_SEAL_TAG, need = PIO_WIRE_HDR + body;
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
    if (pio_seal_data(&p->xo_seal, p->xbuf, 12, buf, p->xbuf + PIO_WIRE_HDR, len,
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
void lane_replay(struct piod *d, int peer)
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
int send_peer_msg(struct piod *d, int peer, const struct pio_frame *f, int src, uint64_t sid,
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

int send_peer(struct piod *d, int peer, const struct pio_frame *f)
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
void lane_ack(struct piod *d, int peer, int force)
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

void send_ranges(struct piod *d, int pi, int type, uint64_t id, uint64_t msg_off, uint64_t off,
                 uint64_t len)
{
    struct pio_frame f; /* hot (per chunk): only the fields encoded are set */
    pio_wire_ranges1(&f, type, id, msg_off, off, len);
    send_proc(d, pi, &f);
}

void send_done_flags(struct piod *d, int pi, int type, uint16_t flags, uint64_t id, int status)
{
    struct pio_frame f;
    memset(&f.u.p_done, 0, sizeof(f.u.p_done));
    f.type = (uint8_t)type;
    f.flags = flags;
    f.u.p_done.id = id;
    f.u.p_done.status = status;
    send_proc(d, pi, &f);
}

void send_done(struct piod *d, int pi, int type, uint64_t id, int status)
{
    send_done_flags(d, pi, type, 0, id, status);
}

/* P_SEND_DONE with PIO_WSD_CANCELLED: an incoming message (key) was cancelled. */
void send_cancel(struct piod *d, int pi, uint64_t key, int status)
{
    send_done_flags(d, pi, PIO_F_P_SEND_DONE, PIO_WSD_CANCELLED, key, status);
}

void send_h_done(struct piod *d, int peer, uint64_t msgid, int status)
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

void piod_peer_ctl_ep(const struct piod *d, int i, char *ep, size_t len)
{
    const struct piod_peer *pc = &d->cfg.peers[i];
    int port = pc->control_port ? pc->control_port : d->cfg.control_port;
    /* its control address, or its address on the first link we own */
    int k0 = 0;
    while (k0 < d->cfg.nlinks && k0 < pc->naddr - 1 && d->cfg.link_owner[k0] >= 0)
        k0++;
    const char *a = pc->control[0] ? pc->control : pc->addr[k0];
    snprintf(ep, len, strchr(a, ':') ? "tcp://[%s]:%d" : "tcp://%s:%d", a, port);
}

int piod_peer_open(struct piod *d, int i)
{
    int rc = PIO_OK;
    char ep[PIOD_PATH_MAX + 16];
    struct piod_peer_st *p = &d->peers[i];
    p->cfg = &d->cfg.peers[i];
    randombytes_buf(p->my_key, sizeof(p->my_key));
    piod_lseq_init(&p->lq);
    p->lq.freed = lane_freed;
    p->lq.freed_arg = d;
    const char *server_key = piod_keys_public_of(&d->keys, p->cfg->name);
    if (!server_key) {
        PIOD_ERR("no public key for peer %s in %s: copy %s.pub there", p->cfg->name, d->cfg.keys,
                 p->cfg->name);
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
    piod_peer_ctl_ep(d, i, ep, sizeof(ep));
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
out:
    return rc;
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
                      pio_seal_wants_aes(d->cfg.cipher) ? "AES-256-GCM" : "ChaCha20-Poly1305",
                      pio_seal_backend_name(pio_seal_wants_aes(d->cfg.cipher) ? PIO_CIPHER_AES
                                                                              : PIO_CIPHER_CHACHA));
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
    for (int i = 0; i < d->npeers; i++)
        PIO_TRY(piod_peer_open(d, i), rc, out);
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
        if (*reopen) { /* SIGHUP: the log, then peers and keys (reload.c) */
            *reopen = 0;
            piod_log_reopen();
            PIOD_INFO("log reopened");
            piod_reload(d);
            for (int p = 0; p < d->npeers; p++) /* new peers' handshake monitors */
                mon_fd[p] = d->peers[p].mon ? zsock_fd(d->peers[p].mon) : -1;
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
        pio_seal_fini(&d->peers[i].xo_seal);
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
        if (e->kind == PIOD_EV_DLANE)
            piod_dlane_discard(d, e);
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
