/* chan.c - data channels: authenticated TCP connections carrying chunks.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Outgoing (tx) channel i to a peer is opened from our link address i to the
 * peer's link address i, so K channels use K links. Its sender thread
 * connects, proves the peer's channel key (C_HELLO, C_CHALLENGE, C_PROOF,
 * C_ACCEPT), then writes C_DATA frames from its queue with one writev each,
 * header and payload straight from the source process' pool. An ack-reader
 * thread per connection turns C_ACK frames into events and drops acked
 * chunks. When the connection dies, every queued and unacked chunk goes back
 * to the main thread (PIOD_EV_REQUEUE), which resends it on the channels that
 * are up; then the sender reconnects with back-off.
 *
 * Incoming channels are accepted on every data listen address; the receiver
 * thread authenticates the opener, then reads each C_DATA payload straight
 * into the pool range the grant table names, answers C_ACK, and posts
 * PIOD_EV_ARRIVED. A chunk with no grant (a duplicate after a resend) is read
 * into scratch, dropped, and still acknowledged.
 *
 * The data port faces the network before anyone has proved anything, so an
 * accepted connection is a stranger until its C_PROOF checks out: it has
 * CHAN_HS_TIMEOUT_MS to finish the handshake (the main thread's tick shuts
 * slower ones down, piod_rx_watchdog), at most CHAN_HS_PER_ADDR strangers
 * may be in their handshake at once from one remote address, and every
 * refusal is logged with the remote address and the reason. A stranger never
 * gets a byte of pool or a grant: C_DATA is only read after C_ACCEPT.
 *
 * Locks: ch->mtx (one tx channel), d->grant_mtx (grant table), d->key_mtx
 * (peer keys and rx slots), d->rxlist_mtx (accepted channels). Leaves only:
 * no two are held together, none across a send or receive.
 */
#include "piod.h"
#include "relay.h"
#include "log.h"
#include "seal.h"
#include "err.h"
#include "mono.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHAN_IO_TIMEOUT_MS 5000
#define CHAN_HS_TIMEOUT_MS 5000  /* an opener has this long from connect to C_PROOF */
#define CHAN_HS_PER_ADDR   8     /* unfinished handshakes at once from one remote address */
#define CHAN_AGAIN_WARN_MS 10000 /* a peer says "not yet" this long: warn */

uint64_t piod_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t piod_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

void piod_proc_ref(struct piod_proc *p)
{
    atomic_fetch_add(&p->refs, 1);
}

/* unmapped: 0 mapped, 1 being unmapped (by the CAS winner), 2 gone (slot reusable) */
void piod_proc_unmap(struct piod_proc *p)
{
    int expect = 0;
    if (atomic_compare_exchange_strong(&p->unmapped, &expect, 1)) {
        pio_shm_close(NULL, p->base, p->size, 0);
        atomic_store(&p->unmapped, 2);
    }
}

void piod_proc_unref(struct piod *d, struct piod_proc *p)
{
    (void)d;
    /* refs only grow on the main thread, so 0 here is final until it reuses the slot */
    if (atomic_fetch_sub(&p->refs, 1) == 1 && atomic_load(&p->gone))
        piod_proc_unmap(p);
}

/* ---- grant table ---- */

static size_t grant_hash(struct piod *d, int peer, uint64_t msgid, uint64_t off)
{
    uint64_t h =
        msgid * 0x9E3779B97F4A7C15ull ^ (off >> 16) * 0xC2B2AE3D27D4EB4Full ^ (uint64_t)(peer + 1);
    return (size_t)(h % d->ngrant_buckets);
}

void piod_grant_add(struct piod *d, struct piod_grant *g)
{
    piod_proc_ref(g->proc);
    g->holder = NULL;
    pthread_mutex_lock(&d->grant_mtx);
    size_t h = grant_hash(d, g->peer, g->msgid, g->off);
    g->next = d->grants[h];
    d->grants[h] = g;
    pthread_mutex_unlock(&d->grant_mtx);
}

/* The slot that points at the grant (peer, msgid, off), or NULL (grant_mtx held). */
static struct piod_grant **grant_slot(struct piod *d, int peer, uint64_t msgid, uint64_t off)
{
    struct piod_grant **pp = &d->grants[grant_hash(d, peer, msgid, off)];
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->peer == peer && (*pp)->msgid == msgid && (*pp)->off == off)
            return pp;
    return NULL;
}

/* Take a grant out of the table (grant_mtx held). A receiver thread that is
 * filling it right now is stopped first: its connection is shut down (the
 * sender only sends a chunk again once it gave that channel up) and we wait
 * until it lets go, so no thread ever writes into pool space it lost. */
static struct piod_grant *grant_take_locked(struct piod *d, int peer, uint64_t msgid, uint64_t off)
{
    for (;;) {
        struct piod_grant **pp = grant_slot(d, peer, msgid, off);
        if (!pp)
            return NULL;
        struct piod_grant *g = *pp;
        if (g->holder) {
            d->tp->shutdown(g->holder->conn);
            pthread_cond_wait(&d->grant_cv, &d->grant_mtx);
            continue; /* g may be gone now: look again */
        }
        *pp = g->next;
        return g;
    }
}

/* Takes the grant out of the table: the caller owns it (and its pool ref). */
struct piod_grant *piod_grant_take(struct piod *d, int peer, uint64_t msgid, uint64_t off)
{
    pthread_mutex_lock(&d->grant_mtx);
    struct piod_grant *g = grant_take_locked(d, peer, msgid, off);
    pthread_mutex_unlock(&d->grant_mtx);
    return g;
}

void piod_grants_drop_proc(struct piod *d, struct piod_proc *p)
{
    struct piod_grant *dead = NULL;
    pthread_mutex_lock(&d->grant_mtx);
    for (size_t h = 0; h < d->ngrant_buckets; h++) {
        struct piod_grant *g = d->grants[h];
        while (g) {
            if (g->proc != p) {
                g = g->next;
                continue;
            }
            struct piod_grant *t = grant_take_locked(d, g->peer, g->msgid, g->off);
            if (t) {
                t->next = dead;
                dead = t;
            }
            g = d->grants[h]; /* the bucket may have changed while we waited */
        }
    }
    pthread_mutex_unlock(&d->grant_mtx);
    while (dead) {
        struct piod_grant *n = dead->next;
        piod_proc_unref(d, dead->proc);
        free(dead);
        dead = n;
    }
}

/* ---- frames on a channel ---- */

static int chan_send_frame(struct piod *d, struct pio_tp_conn *c, const struct pio_frame *f)
{
    uint8_t buf[512];
    size_t len;
    int rc = pio_wire_encode(f, buf, sizeof(buf), &len);
    if (rc != PIO_OK)
        return rc;
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    return d->tp->sendv(c, &iov, 1);
}

/* A C_ACK on a sealed channel: the frame, then its tag (the frame is the
 * associated data). */
static int chan_send_sealed(struct piod *d, struct pio_tp_conn *c, struct pio_frame *f,
                            struct piod_seal *s)
{
    uint8_t buf[PIO_WIRE_HDR + 16 + PIO_WIRE_MAX_RANGES * 16 + 64], tag[PIOD_SEAL_TAG];
    size_t len;
    f->flags |= PIO_WH_SEAL;
    int rc = pio_wire_encode(f, buf, sizeof(buf), &len);
    if (rc != PIO_OK)
        return rc;
    if (piod_seal_data(s, buf, len, NULL, NULL, 0, tag) != 0)
        return PIO_ENOMEM;
    struct iovec iov[2] = {{buf, len}, {tag, sizeof(tag)}};
    return d->tp->sendv(c, iov, 2);
}

/* Receive one frame (not C_DATA payload) into buf; decode into f. Bytes
 * that are not a frame we take are logged with who (the channel or the
 * remote address) and the reason; the caller closes the connection, since
 * nothing after them on the stream can be trusted. */
static int chan_recv_frame(struct piod *d, struct pio_tp_conn *c, uint8_t *buf, size_t cap,
                           struct pio_frame *f, const char *who)
{
    uint8_t type, ver;
    uint32_t blen;
    int rc = d->tp->recv(c, buf, PIO_WIRE_HDR);
    if (rc != PIO_OK)
        return rc;
    rc = pio_wire_peek(buf, PIO_WIRE_HDR, &type, &blen, &ver);
    if (rc == PIO_EVERSION) {
        PIOD_WARN("data channel %s speaks protocol version %u, we speak %u", who, ver,
                  PIO_WIRE_VERSION);
        return rc;
    }
    if (rc != PIO_OK) {
        int magic = buf[0] == 'P' && buf[1] == 'I' && buf[2] == 'O' && buf[3] == '1';
        PIOD_WARN("data channel %s: %s: closed", who,
                  magic ? "a frame length over the 16 MiB limit" : "bytes that are not PIO frames");
        return rc;
    }
    if (PIO_WIRE_HDR + (size_t)blen > cap) {
        PIOD_WARN("data channel %s: %s frame of %u bytes, more than a channel frame can be: closed",
                  who, pio_wire_type_name(type), blen);
        return PIO_EPROTO;
    }
    rc = d->tp->recv(c, buf + PIO_WIRE_HDR, blen);
    if (rc != PIO_OK)
        return rc;
    rc = pio_wire_decode(buf, PIO_WIRE_HDR + blen, f, NULL);
    if (rc != PIO_OK && pio_wire_type_name(type)[0] == '?')
        PIOD_WARN("data channel %s: frame of unknown type %u: closed", who, type);
    else if (rc != PIO_OK)
        PIOD_WARN("data channel %s: malformed %s frame (bad check, a count over its bound or a "
                  "bad body): closed",
                  who, pio_wire_type_name(type));
    return rc;
}

static void chan_mac(uint8_t out[PIO_WIRE_KEY], const uint8_t key[PIO_WIRE_KEY],
                     const uint8_t challenge[PIO_WIRE_KEY], uint32_t index, const char *system)
{
    crypto_generichash_state st;
    uint8_t ib[4] = {(uint8_t)index, (uint8_t)(index >> 8), (uint8_t)(index >> 16),
                     (uint8_t)(index >> 24)};
    crypto_generichash_init(&st, key, PIO_WIRE_KEY, PIO_WIRE_KEY);
    crypto_generichash_update(&st, challenge, PIO_WIRE_KEY);
    crypto_generichash_update(&st, ib, sizeof(ib));
    crypto_generichash_update(&st, (const uint8_t *)system, strlen(system));
    crypto_generichash_final(&st, out, PIO_WIRE_KEY);
}

/* ---- tx side ---- */

void piod_tx_enqueue(struct piod_txchan *ch, struct piod_chunk *c)
{
    c->next = NULL;
    pthread_mutex_lock(&ch->mtx);
    if (ch->queued_bytes == 0)
        ch->last_progress_ms = piod_now_ms(); /* the stall clock starts with the work */
    if (ch->q_tail)
        ch->q_tail->next = c;
    else
        ch->q = c;
    ch->q_tail = c;
    ch->queued_bytes += c->len;
    if (c->len > ch->max_chunk)
        ch->max_chunk = c->len;
    pthread_cond_signal(&ch->cv);
    pthread_mutex_unlock(&ch->mtx);
}

int piod_tx_state(struct piod_txchan *ch, uint64_t *queued)
{
    pthread_mutex_lock(&ch->mtx);
    int s = ch->state;
    if (queued)
        *queued = ch->queued_bytes;
    pthread_mutex_unlock(&ch->mtx);
    return s;
}

/* A link can die silently (a cut cable, a dead switch port): TCP then
 * retries for minutes. A channel with bytes in flight that has had no
 * acknowledgement for stall-ms (default 400) plus the time 3 of its chunks
 * take at its measured acknowledged rate is closed, and its chunks go out
 * again on the other channels: on a loaded link acks come once a chunk, so
 * a healthy channel is never that late, and a slow one (a measured low
 * rate) gets longer. Until the rate is measured, 2 MB/s is assumed. */
#define CHAN_RATE_GUESS 2e6

/* piod_tx_stall_limit - ms without an ack before ch counts as stalled. */
uint64_t piod_tx_stall_limit(const struct piod *d, const struct piod_txchan *ch)
{
    double rate = ch->ack_rate > 0 ? ch->ack_rate : CHAN_RATE_GUESS;
    uint32_t chunk = ch->max_chunk ? ch->max_chunk : d->cfg.chunk;
    return (uint64_t)d->cfg.stall_ms + (uint64_t)(3.0 * chunk * 1000.0 / rate);
}

void piod_tx_watchdog(struct piod *d, struct piod_txchan *ch, uint64_t now)
{
    pthread_mutex_lock(&ch->mtx);
    /* the acknowledged rate, from the ticks that saw acks while busy */
    if (ch->state != PIO_WCHAN_UP || (ch->queued_bytes == 0 && ch->acked_bytes == ch->wd_acked)) {
        ch->wd_ms = 0; /* idle or down: the next busy time starts a new window */
        ch->wd_acked = ch->acked_bytes;
    } else if (!ch->wd_ms) {
        ch->wd_ms = now;
        ch->wd_acked = ch->acked_bytes;
    } else if (ch->acked_bytes > ch->wd_acked && now > ch->wd_ms) {
        /* a window closes at a tick that saw acks: it spans the ticks
         * without, so a slow link's rate is not overstated */
        double sample =
            (double)(ch->acked_bytes - ch->wd_acked) * 1000.0 / (double)(now - ch->wd_ms);
        ch->ack_rate = ch->ack_rate > 0 ? 0.7 * ch->ack_rate + 0.3 * sample : sample;
        ch->wd_ms = ch->queued_bytes > 0 ? now : 0;
        ch->wd_acked = ch->acked_bytes;
    }
    uint64_t limit = piod_tx_stall_limit(d, ch);
    if (ch->state == PIO_WCHAN_UP && ch->conn && ch->queued_bytes > 0 &&
        now > ch->last_progress_ms + limit) {
        PIOD_WARN("channel %d to %s: no acknowledgement for %llu ms (limit %llu ms) with %llu "
                  "bytes in flight: closing it, resending on the others",
                  ch->index, d->peers[ch->peer].cfg->name,
                  (unsigned long long)(now - ch->last_progress_ms), (unsigned long long)limit,
                  (unsigned long long)ch->queued_bytes);
        d->tp->shutdown(ch->conn);
        ch->conn_dead = 1;
        pthread_cond_signal(&ch->cv);
        ch->last_progress_ms = now;
    }
    pthread_mutex_unlock(&ch->mtx);
}

static void tx_set_state(struct piod_txchan *ch, int state)
{
    pthread_mutex_lock(&ch->mtx);
    int old = ch->state;
    ch->state = state;
    if (old == PIO_WCHAN_UP && state != PIO_WCHAN_UP)
        ch->downs++;
    if (state == PIO_WCHAN_UP)
        ch->last_progress_ms = piod_now_ms();
    pthread_mutex_unlock(&ch->mtx);
    if (old != state) {
        struct piod_ev *ev = calloc(1, sizeof(*ev));
        if (ev) {
            ev->kind = PIOD_EV_CHAN;
            ev->peer = ch->peer;
            ev->index = ch->index;
            ev->state = state;
            piod_post(ch->d, ev);
        }
    }
}

static void *tx_ack_reader(void *arg)
{
    struct piod_txchan *ch = arg;
    struct piod *d = ch->d;
    uint8_t *buf = malloc(PIO_WIRE_HDR + 16 + PIO_WIRE_MAX_RANGES * 16 + 64);
    struct pio_frame *f = malloc(sizeof(*f));
    char who[PIO_WIRE_NAME + 32];
    snprintf(who, sizeof(who), "%d to %s", ch->index, d->peers[ch->peer].cfg->name);
    if (!buf || !f)
        goto out;
    for (;;) {
        int rc = chan_recv_frame(d, ch->conn, buf,
                                 PIO_WIRE_HDR + 16 + PIO_WIRE_MAX_RANGES * 16 + 64, f, who);
        if (rc == PIO_OK && f->type != PIO_F_C_ACK)
            PIOD_WARN("data channel %s sent %s where only C_ACK may come: closed", who,
                      pio_wire_type_name(f->type));
        if (rc != PIO_OK || f->type != PIO_F_C_ACK)
            break;
        if (ch->sealed) { /* the frame is the associated data of the tag after it */
            uint8_t tag[PIOD_SEAL_TAG];
            size_t flen = PIO_WIRE_HDR +
                          (size_t)(buf[8] | buf[9] << 8 | buf[10] << 16 | (uint32_t)buf[11] << 24);
            if (d->tp->recv(ch->conn, tag, sizeof(tag)) != PIO_OK)
                break;
            if (piod_seal_open(&ch->seal_ack, buf, flen, NULL, 0, tag) != 0) {
                PIOD_WARN("data channel %s: an acknowledgement failed its seal check (forged "
                          "or altered on the way): closed",
                          who);
                break;
            }
        }
        for (uint32_t i = 0; i < f->u.c_ack.n; i++) {
            uint64_t msgid = f->u.c_ack.a[i].msgid, off = f->u.c_ack.a[i].off;
            struct piod_chunk *c = NULL, **pp;
            pthread_mutex_lock(&ch->mtx);
            ch->last_progress_ms = piod_now_ms();
            for (pp = &ch->unacked; *pp; pp = &(*pp)->next)
                if ((*pp)->msgid == msgid && (*pp)->off == off) {
                    c = *pp;
                    *pp = c->next;
                    ch->queued_bytes -= c->len;
                    ch->acked_bytes += c->len;
                    break;
                }
            pthread_mutex_unlock(&ch->mtx);
            if (!c)
                continue;
            struct piod_ev *ev = calloc(1, sizeof(*ev));
            if (ev) {
                ev->kind = PIOD_EV_ACK;
                ev->peer = ch->peer;
                ev->index = ch->index;
                ev->msgid = msgid;
                ev->off = off;
                ev->len = c->len;
                piod_post(d, ev);
            }
            piod_proc_unref(d, c->proc);
            free(c);
        }
    }
out:
    d->tp->shutdown(ch->conn); /* wake the sender if it is writing */
    pthread_mutex_lock(&ch->mtx);
    ch->conn_dead = 1; /* and if it is waiting for work */
    pthread_cond_signal(&ch->cv);
    pthread_mutex_unlock(&ch->mtx);
    free(buf);
    free(f);
    return NULL;
}

static int tx_connect(struct piod_txchan *ch)
{
    struct piod *d = ch->d;
    struct piod_peer_st *p = &d->peers[ch->peer];
    int port = p->cfg->data_port ? p->cfg->data_port : d->cfg.data_port;
    struct pio_tp_conn *c = NULL;
    struct pio_frame f;
    uint8_t buf[512], key[PIO_WIRE_KEY];
    struct pio_tp_opts o = d->tpo;
    o.timeout_ms = CHAN_IO_TIMEOUT_MS;
    int link = ch->express ? 0 : ch->index;
    uint32_t index = ch->express ? PIOD_EXPRESS_INDEX : (uint32_t)ch->index;
    int rc = d->cfg.link_owner[link] < 0 ? d->tp->connect(d->cfg.listen[d->cfg.link_local[link]],
                                                          p->cfg->addr[link], port, &o, &c)
                                         : piod_relay_out(d, link, p->cfg->addr[link], port, &c);
    if (rc != PIO_OK)
        return rc;
    char who[PIO_WIRE_NAME + 32];
    if (ch->express)
        snprintf(who, sizeof(who), "(express lane) to %s", p->cfg->name);
    else
        snprintf(who, sizeof(who), "%d to %s", ch->index, p->cfg->name);
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_C_HELLO;
    int encrypt = piod_config_peer_encrypt(&d->cfg, p->cfg);
    int offer_aes = piod_seal_wants_aes(d->cfg.cipher);
    f.flags = encrypt ? PIO_WH_SEAL | (offer_aes ? PIO_WH_AES : 0) : 0;
    f.u.c_hello.proto = PIO_WIRE_VERSION;
    f.u.c_hello.index = index;
    snprintf(f.u.c_hello.system, sizeof(f.u.c_hello.system), "%s", d->cfg.ident);
    snprintf(f.u.c_hello.host, sizeof(f.u.c_hello.host), "%s", d->cfg.name);
    snprintf(f.u.c_hello.target, sizeof(f.u.c_hello.target), "%s", p->cfg->name);
    PIO_TRY(chan_send_frame(d, c, &f), rc, fail);
    PIO_TRY(chan_recv_frame(d, c, buf, sizeof(buf), &f, who), rc, fail);
    PIO_CHECK(f.type != PIO_F_C_CHALLENGE, rc, PIO_EPROTO, fail);
    pthread_mutex_lock(&d->key_mtx);
    memcpy(key, p->their_key, sizeof(key));
    pthread_mutex_unlock(&d->key_mtx);
    uint8_t challenge[PIO_WIRE_KEY];
    memcpy(challenge, f.u.c_key.b, sizeof(challenge));
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_C_PROOF;
    chan_mac(f.u.c_key.b, key, challenge, index, d->cfg.ident);
    PIO_TRY(chan_send_frame(d, c, &f), rc, fail);
    PIO_TRY(chan_recv_frame(d, c, buf, sizeof(buf), &f, who), rc, fail);
    PIO_CHECK(f.type != PIO_F_C_ACCEPT, rc, PIO_EPROTO, fail);
    if (f.u.c_accept.status == PIO_EREFUSED && (f.flags & PIO_WH_SEAL) && !encrypt &&
        ch->last_err != PIO_EREFUSED)
        PIOD_ERR("data channel %s: %s takes encrypted channels only (this piod has encrypt = no "
                 "for it; remove that, or say encrypt = no on both sides)",
                 who, p->cfg->name);
    PIO_CHECK(f.u.c_accept.status != PIO_OK, rc, f.u.c_accept.status, fail);
    if (encrypt && !(f.flags & PIO_WH_SEAL)) {
        if (ch->last_err != PIO_EAUTH)
            PIOD_ERR("data channel %s: %s accepted it without sealing it (a piod that cannot "
                     "encrypt?): closed, nothing sent in the clear",
                     who, p->cfg->name);
        rc = PIO_EAUTH;
        goto fail;
    }
    if (encrypt && (f.flags & PIO_WH_AES) && !offer_aes) {
        PIOD_ERR("data channel %s: %s chose AES-256-GCM, which we did not offer: closed", who,
                 p->cfg->name);
        rc = PIO_EPROTO;
        goto fail;
    }
    ch->sealed = encrypt;
    piod_seal_fini(&ch->seal_data);
    piod_seal_fini(&ch->seal_ack);
    if (ch->sealed) {
        int cipher = (f.flags & PIO_WH_AES) ? PIOD_CIPHER_AES : PIOD_CIPHER_CHACHA;
        piod_seal_init(&ch->seal_data, cipher, key, challenge, index, d->cfg.ident, 0);
        piod_seal_init(&ch->seal_ack, cipher, key, challenge, index, d->cfg.ident, 1);
        ch->cipher = cipher;
    }
    sodium_memzero(key, sizeof(key));
    pthread_mutex_lock(&ch->mtx);
    ch->conn = c;
    ch->conn_dead = 0;
    d->tp->addrs(c, ch->local, ch->remote);
    pthread_mutex_unlock(&ch->mtx);
    return PIO_OK;
fail:
    d->tp->close(c);
    return rc;
}

/* Hand every queued and unacked chunk back to the main thread. */
static void tx_requeue_all(struct piod_txchan *ch)
{
    pthread_mutex_lock(&ch->mtx);
    struct piod_chunk *list = ch->unacked;
    ch->unacked = NULL;
    if (ch->q) {
        ch->q_tail->next = list;
        list = ch->q;
    }
    ch->q = ch->q_tail = NULL;
    ch->queued_bytes = 0;
    pthread_mutex_unlock(&ch->mtx);
    if (!list)
        return;
    struct piod_ev *ev = calloc(1, sizeof(*ev));
    if (!ev)
        return; /* cannot happen in practice; the chunks would leak, not corrupt */
    ev->kind = PIOD_EV_REQUEUE;
    ev->peer = ch->peer;
    ev->index = ch->index;
    ev->chunks = list;
    piod_post(ch->d, ev);
}

static void tx_backoff(struct piod_txchan *ch, int ms);

/* Say why a channel cannot connect, in words that point at the fix: nothing
 * listening and no answer at all (a firewall dropping packets) differ. */
static void tx_connect_failed(struct piod_txchan *ch, int rc)
{
    struct piod *d = ch->d;
    struct piod_peer_st *p = &d->peers[ch->peer];
    int link = ch->express ? 0 : ch->index;
    int port = p->cfg->data_port ? p->cfg->data_port : d->cfg.data_port;
    const char *to = p->cfg->addr[link], *who = p->cfg->name;
    char what[24];
    snprintf(what, sizeof(what), ch->express ? "express lane" : "channel %d", ch->index);
    if (rc == PIO_EAGAIN) /* the peer has our proof, not yet our hello: normal at start-up */
        PIOD_DEBUG("%s to %s: the peer has not heard our hello yet: trying again", what, who);
    else if (rc == PIO_EREFUSED)
        PIOD_WARN("%s to %s: nothing listens on %s port %d (is piod running there? does its "
                  "data-port say %d?)",
                  what, who, to, port, port);
    else if (rc == PIO_ETIMEDOUT || rc == PIO_ELINK) /* dropped, or no ARP answer */
        PIOD_WARN("%s to %s: no answer from %s port %d (%s; a firewall dropping packets, or "
                  "the link down? open data-port %d%s between the hosts)",
                  what, who, to, port, rc == PIO_ELINK ? "host unreachable" : "timed out", port,
                  d->cfg.src_port_lo ? " and our source-ports" : "");
    else
        PIOD_WARN("%s to %s (%s port %d): %s", what, who, to, port, PIO_Strerror(rc));
}

static void *tx_thread(void *arg)
{
    struct piod_txchan *ch = arg;
    struct piod *d = ch->d;
    int backoff = 50;
    uint64_t again_ms = 0;   /* since when the peer answers "not yet" (1: said so) */
    uint8_t *sealbuf = NULL; /* sealed chunks are encrypted here */
    size_t sealcap = 0;
    while (!ch->stop) {
        tx_set_state(ch, PIO_WCHAN_CONNECTING);
        int rc = tx_connect(ch);
        if (rc != PIO_OK) {
            tx_set_state(ch, PIO_WCHAN_DOWN);
            if (ch->stop)
                break;
            if (rc != ch->last_err)
                tx_connect_failed(ch, rc);
            /* "not yet" that lasts is no longer start-up: say it once */
            if (rc != PIO_EAGAIN)
                again_ms = 0;
            else if (!again_ms)
                again_ms = piod_now_ms();
            else if (again_ms != 1 && piod_now_ms() - again_ms > CHAN_AGAIN_WARN_MS) {
                PIOD_WARN("channel %d to %s: the peer takes our proof but has not heard our "
                          "hello for %d s (is its control port reachable from here?)",
                          ch->index, d->peers[ch->peer].cfg->name, CHAN_AGAIN_WARN_MS / 1000);
                again_ms = 1;
            }
            ch->last_err = rc;
            /* chunks waiting here must not wait for us: give them back */
            tx_requeue_all(ch);
            tx_backoff(ch, backoff);
            backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
            continue;
        }
        backoff = 50;
        ch->last_err = PIO_OK;
        PIOD_INFO("channel %d to %s up: %s -> %s (%s%s)", ch->index, d->peers[ch->peer].cfg->name,
                  ch->local, ch->remote, ch->sealed ? "sealed, " : "not sealed",
                  ch->sealed ? piod_seal_cipher_name(ch->cipher) : "");
        pthread_t acker;
        if (pthread_create(&acker, NULL, tx_ack_reader, ch) != 0) {
            d->tp->close(ch->conn);
            ch->conn = NULL;
            continue;
        }
        tx_set_state(ch, PIO_WCHAN_UP);
        for (;;) {
            pthread_mutex_lock(&ch->mtx);
            while (!ch->q && !ch->stop && !ch->conn_dead)
                pthread_cond_wait(&ch->cv, &ch->mtx);
            struct piod_chunk *c = ch->q;
            if (c && !ch->stop && !ch->conn_dead) {
                ch->q = c->next;
                if (!ch->q)
                    ch->q_tail = NULL;
                c->next = ch->unacked; /* unacked before the write: an ack may race it */
                ch->unacked = c;
            } else {
                c = NULL;
            }
            pthread_mutex_unlock(&ch->mtx);
            if (!c)
                break;
            struct pio_frame f;
            uint8_t hdr[64], tag[PIOD_SEAL_TAG];
            size_t hl;
            memset(&f, 0, sizeof(f));
            f.type = PIO_F_C_DATA;
            f.flags = ch->sealed ? PIO_WH_SEAL : 0;
            f.u.c_data.msgid = c->msgid;
            f.u.c_data.off = c->off;
            f.u.c_data.len = c->len;
            f.u.c_data.resend = c->resend;
            pio_wire_encode(&f, hdr, sizeof(hdr), &hl);
            uint32_t len = c->len; /* once written, c may be acked and freed any time */
            int resend = c->resend;
            struct iovec iov[3] = {{hdr, hl}, {(void *)c->data, len}, {tag, sizeof(tag)}};
            if (ch->sealed) { /* encrypt into our buffer: the pool's bytes stay for a resend */
                if (sealcap < len) {
                    free(sealbuf);
                    sealcap = 0;
                    if (!(sealbuf = malloc(len)))
                        break;
                    sealcap = len;
                }
                uint8_t ad[20];
                piod_seal_chunk_ad(ad, c->msgid, c->off, len);
                if (piod_seal_data(&ch->seal_data, ad, sizeof(ad), c->data, sealbuf, len, tag) != 0)
                    break;
                iov[1].iov_base = sealbuf;
            }
            if (d->tp->sendv(ch->conn, iov, ch->sealed ? 3 : 2) != PIO_OK)
                break;
            pthread_mutex_lock(&ch->mtx);
            ch->tx_bytes += len;
            ch->tx_chunks++;
            ch->resent += resend != 0;
            pthread_mutex_unlock(&ch->mtx);
        }
        /* connection over (error, peer gone or stop) */
        d->tp->shutdown(ch->conn);
        pthread_join(acker, NULL);
        pthread_mutex_lock(&ch->mtx);
        struct pio_tp_conn *conn = ch->conn;
        ch->conn = NULL;
        pthread_mutex_unlock(&ch->mtx);
        d->tp->close(conn);
        tx_set_state(ch, PIO_WCHAN_DOWN);
        if (!ch->stop)
            PIOD_WARN("channel %d to %s down", ch->index, d->peers[ch->peer].cfg->name);
        tx_requeue_all(ch);
    }
    tx_set_state(ch, PIO_WCHAN_DOWN);
    free(sealbuf);
    piod_seal_fini(&ch->seal_data);
    piod_seal_fini(&ch->seal_ack);
    return NULL;
}

/* Sleep up to ms on ch->cv unless told to stop (ch->mtx not held). */
static void tx_backoff(struct piod_txchan *ch, int ms)
{
    struct timespec ts;
    pio_deadline_mono(&ts, (int64_t)ms * 1000000);
    pthread_mutex_lock(&ch->mtx);
    if (!ch->stop)
        pthread_cond_timedwait(&ch->cv, &ch->mtx, &ts);
    pthread_mutex_unlock(&ch->mtx);
}

/* The express lane's opener: connect and authenticate like a data channel,
 * hand the connection to the main loop, wait until the main loop says it
 * failed (piod_express_failed), close it and open another. */
static void *express_thread(void *arg)
{
    struct piod_txchan *ch = arg;
    struct piod *d = ch->d;
    int backoff = 50;
    while (!ch->stop) {
        tx_set_state(ch, PIO_WCHAN_CONNECTING);
        if (tx_connect(ch) != PIO_OK) {
            tx_set_state(ch, PIO_WCHAN_DOWN);
            tx_backoff(ch, backoff);
            backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
            continue;
        }
        backoff = 50;
        struct piod_ev *ev = calloc(1, sizeof(*ev));
        if (!ev) {
            d->tp->close(ch->conn);
            ch->conn = NULL;
            continue;
        }
        PIOD_INFO("express lane to %s up: %s -> %s (%s%s)", d->peers[ch->peer].cfg->name, ch->local,
                  ch->remote, ch->sealed ? "sealed, " : "not sealed",
                  ch->sealed ? piod_seal_cipher_name(ch->cipher) : "");
        tx_set_state(ch, PIO_WCHAN_UP);
        ev->kind = PIOD_EV_EXPRESS;
        ev->peer = ch->peer;
        ev->state = PIOD_EVS_LANE_OURS;
        ev->conn = ch->conn;
        ev->sealed = ch->sealed;
        ev->seal = ch->seal_data; /* the main loop seals the lane's frames from now on */
        memset(&ch->seal_data, 0, sizeof(ch->seal_data));
        piod_post(d, ev);
        pthread_mutex_lock(&ch->mtx);
        while (!ch->stop && !ch->conn_dead)
            pthread_cond_wait(&ch->cv, &ch->mtx);
        struct pio_tp_conn *conn = ch->conn;
        ch->conn = NULL;
        int dead = ch->conn_dead;
        pthread_mutex_unlock(&ch->mtx);
        tx_set_state(ch, PIO_WCHAN_DOWN);
        if (!dead) /* stopping: the main loop may still hold it; piod_fini closes */
            break;
        d->tp->close(conn);
        if (!ch->stop)
            PIOD_WARN("express lane to %s down", d->peers[ch->peer].cfg->name);
        tx_backoff(ch, backoff);
    }
    return NULL;
}

void piod_express_failed(struct piod *d, int peer)
{
    struct piod_txchan *ch = d->peers[peer].xtx;
    if (!ch)
        return;
    pthread_mutex_lock(&ch->mtx);
    ch->conn_dead = 1;
    pthread_cond_broadcast(&ch->cv);
    pthread_mutex_unlock(&ch->mtx);
}

static struct piod_txchan *txchan_new(struct piod *d, int peer, int index, int express)
{
    struct piod_txchan *ch = calloc(1, sizeof(*ch));
    if (!ch)
        return NULL;
    ch->d = d;
    ch->peer = peer;
    ch->index = index;
    ch->express = express;
    pthread_mutex_init(&ch->mtx, NULL);
    pio_cond_init_mono(&ch->cv);
    if (pthread_create(&ch->thr, NULL, express ? express_thread : tx_thread, ch) != 0) {
        pthread_mutex_destroy(&ch->mtx);
        pthread_cond_destroy(&ch->cv);
        free(ch);
        return NULL;
    }
    return ch;
}

int piod_txchans_start(struct piod *d, int peer)
{
    struct piod_peer_st *p = &d->peers[peer];
    for (int i = 0; i < p->nchan; i++)
        if (!p->tx[i] && !(p->tx[i] = txchan_new(d, peer, i, 0)))
            return PIO_ENOMEM;
    if (!p->xtx && d->cfg.express && !(p->xtx = txchan_new(d, peer, 0, 1)))
        return PIO_ENOMEM;
    return PIO_OK;
}

/* ---- rx side ---- */

/* The handshake is over, either way: the thread claims the connection back
 * from the watchdog (rx->hs 1 -> 0). Fails when the watchdog got there
 * first (1 -> 2) and shut the connection down for being too slow. */
static int rx_hs_end(struct piod_rxchan *rx)
{
    int one = 1;
    return atomic_compare_exchange_strong(&rx->hs, &one, 0);
}

/* Why a stranger's handshake failed, in words for the log. */
static void rx_auth_refused(struct piod_rxchan *rx, int rc, const char *what)
{
    if (atomic_load(&rx->hs) == 2)
        PIOD_WARN("data channel from %s did not finish its handshake within %d s: closed",
                  rx->remote, CHAN_HS_TIMEOUT_MS / 1000);
    else if (rc == PIO_ECLOSED)
        PIOD_DEBUG("data channel from %s closed %s", rx->remote, what);
    else if (what)
        PIOD_WARN("data channel from %s %s: closed", rx->remote, what);
}

static int rx_auth(struct piod_rxchan *rx, uint8_t *buf, size_t cap)
{
    struct piod *d = rx->d;
    struct pio_frame f;
    char who[PIO_TP_ADDR + 8];
    snprintf(who, sizeof(who), "from %s", rx->remote);
    int rc = chan_recv_frame(d, rx->conn, buf, cap, &f, who);
    if (rc == PIO_EVERSION) {
        memset(&f, 0, sizeof(f));
        f.type = PIO_F_C_ACCEPT;
        f.u.c_accept.status = PIO_EVERSION;
        chan_send_frame(d, rx->conn, &f);
        rx_hs_end(rx);
        return rc;
    }
    if (rc != PIO_OK) {
        rx_auth_refused(rx, rc, rc == PIO_ECLOSED ? "before its C_HELLO" : NULL);
        rx_hs_end(rx);
        return rc;
    }
    if (f.type != PIO_F_C_HELLO) {
        char what[64];
        snprintf(what, sizeof(what), "sent %s before C_HELLO", pio_wire_type_name(f.type));
        rx_auth_refused(rx, PIO_EPROTO, what);
        rx_hs_end(rx);
        return PIO_EPROTO;
    }
    if (f.u.c_hello.target[0] && strcmp(f.u.c_hello.target, d->cfg.ident) != 0) {
        /* meant for another host of our system: it came in on a link we own */
        int m = piod_member_by_name(d, f.u.c_hello.target);
        if (m < 0) {
            PIOD_WARN("data channel from %s is for '%s', neither us nor a member: refused",
                      rx->remote, f.u.c_hello.target);
            rx_hs_end(rx);
            return PIO_EAUTH;
        }
        if (!rx_hs_end(rx)) { /* the watchdog shut it: nothing to hand on */
            rx_auth_refused(rx, PIO_ETIMEDOUT, NULL);
            return PIO_ETIMEDOUT;
        }
        struct pio_tp_conn *c = rx->conn;
        rx->conn = NULL;
        piod_relay_in(d, c, m, &f);
        return PIO_ECANCELED; /* relayed: nothing more for this receiver */
    }
    int peer = -1;
    for (int i = 0; i < d->npeers; i++)
        if (strcmp(d->peers[i].cfg->name, f.u.c_hello.system) == 0)
            peer = i;
    uint32_t index = f.u.c_hello.index;
    int sealed = (f.flags & PIO_WH_SEAL) != 0;
    int aes = sealed && (f.flags & PIO_WH_AES) && piod_seal_wants_aes(d->cfg.cipher);
    char system[PIO_WIRE_NAME];
    snprintf(system, sizeof(system), "%s", f.u.c_hello.system);
    uint8_t challenge[PIO_WIRE_KEY], expect[PIO_WIRE_KEY], key[PIO_WIRE_KEY];
    randombytes_buf(challenge, sizeof(challenge));
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_C_CHALLENGE;
    memcpy(f.u.c_key.b, challenge, sizeof(challenge));
    PIO_TRY(chan_send_frame(d, rx->conn, &f), rc, out);
    PIO_TRY(chan_recv_frame(d, rx->conn, buf, cap, &f, who), rc, out);
    if (f.type != PIO_F_C_PROOF) {
        char what[64];
        snprintf(what, sizeof(what), "sent %s where C_PROOF was due", pio_wire_type_name(f.type));
        rx_auth_refused(rx, PIO_EPROTO, what);
        rx_hs_end(rx);
        return PIO_EPROTO;
    }
    rc = PIO_EAUTH;
    if (peer >= 0) {
        /* nchan too is the main thread's, written under key_mtx (core.c) */
        pthread_mutex_lock(&d->key_mtx);
        int hello = d->peers[peer].hello_seen;
        int ok = index < (uint32_t)d->peers[peer].nchan || index == PIOD_EXPRESS_INDEX;
        memcpy(key, d->peers[peer].my_key, sizeof(key));
        pthread_mutex_unlock(&d->key_mtx);
        chan_mac(expect, key, challenge, index, system);
        /* The proof is checked first: our key is ours from the start. A
         * right proof from a peer whose H_HELLO has not reached us yet (it
         * heard ours first, and its channels race its hello) is "not yet"
         * (PIO_EAGAIN: the opener tries again, nothing is logged as a
         * failure); a wrong proof is an authentication failure. */
        if (sodium_memcmp(expect, f.u.c_key.b, PIO_WIRE_KEY) == 0)
            rc = !hello ? PIO_EAGAIN : ok ? PIO_OK : PIO_EAUTH;
    }
    if (rc == PIO_OK && !sealed && piod_config_peer_encrypt(&d->cfg, d->peers[peer].cfg)) {
        PIOD_WARN("data channel from %s (system '%s', channel %u) is not sealed and this piod "
                  "takes encrypted channels only from it (encrypt = yes, the default): refused",
                  rx->remote, system, index);
        rc = PIO_EREFUSED;
    }
    if (rc == PIO_OK && sealed) {
        int cipher = aes ? PIOD_CIPHER_AES : PIOD_CIPHER_CHACHA;
        rx->sealed = 1;
        rx->cipher = cipher;
        piod_seal_init(&rx->seal_data, cipher, key, challenge, index, system, 0);
        piod_seal_init(&rx->seal_ack, cipher, key, challenge, index, system, 1);
    }
    sodium_memzero(key, sizeof(key));
    if (!rx_hs_end(rx)) { /* too late, even with the right proof */
        rx_auth_refused(rx, PIO_ETIMEDOUT, NULL);
        return PIO_ETIMEDOUT;
    }
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_C_ACCEPT;
    f.flags = (rc == PIO_OK && sealed) || rc == PIO_EREFUSED ? PIO_WH_SEAL : 0;
    if (rc == PIO_OK && sealed && aes)
        f.flags |= PIO_WH_AES;
    f.u.c_accept.status = rc;
    if (chan_send_frame(d, rx->conn, &f) != PIO_OK && rc == PIO_OK)
        rc = PIO_ECLOSED;
    if (rc == PIO_OK) {
        rx->peer = peer;
        rx->index = (int)index;
    } else if (rc == PIO_EAGAIN) {
        PIOD_DEBUG("data channel from %s (system '%s', channel %u): right proof, but no hello "
                   "from that system yet: it tries again",
                   rx->remote, system, index);
    } else if (rc != PIO_EREFUSED) {
        PIOD_WARN("refused data channel from %s (claims system '%s', channel %u): %s", rx->remote,
                  system, index, PIO_Strerror(rc));
    }
    return rc;
out:
    rx_auth_refused(rx, rc, "during its handshake");
    rx_hs_end(rx);
    return rc;
}

static void rx_post_arrived(struct piod *d, int peer, int index, uint64_t msgid, uint64_t off,
                            uint32_t len)
{
    struct piod_ev *ev = calloc(1, sizeof(*ev));
    if (!ev)
        return;
    ev->kind = PIOD_EV_ARRIVED;
    ev->peer = peer;
    ev->index = index;
    ev->msgid = msgid;
    ev->off = off;
    ev->len = len;
    piod_post(d, ev);
}

/* A sealed chunk's payload is in buf: read its tag and decrypt it in place.
 * PIO_EAUTH (logged) when it does not check: the channel must close. */
static int rx_open(struct piod_rxchan *rx, const struct pio_c_data *cd, uint8_t *buf,
                   const char *who)
{
    uint8_t tag[PIOD_SEAL_TAG], ad[20];
    int rc = rx->d->tp->recv(rx->conn, tag, sizeof(tag));
    if (rc != PIO_OK)
        return rc;
    piod_seal_chunk_ad(ad, cd->msgid, cd->off, cd->len);
    if (piod_seal_open(&rx->seal_data, ad, sizeof(ad), buf, cd->len, tag) == 0)
        return PIO_OK;
    PIOD_WARN("data channel %s: chunk %llu+%llu failed its seal check (forged or altered on the "
              "way): closed; it will be sent again",
              who, (unsigned long long)cd->msgid, (unsigned long long)cd->off);
    return PIO_EAUTH;
}

static void *rx_thread(void *arg)
{
    struct piod_rxchan *rx = arg;
    struct piod *d = rx->d;
    const size_t cap = 4096;
    uint8_t *buf = malloc(cap);
    uint8_t *scratch = NULL;
    size_t scratch_len = 0;
    struct piod_rxchan *old = NULL;
    if (!buf || rx_auth(rx, buf, cap) != PIO_OK)
        goto out;
    if ((uint32_t)rx->index == PIOD_EXPRESS_INDEX) { /* the main loop reads it from now on */
        struct piod_ev *xe = calloc(1, sizeof(*xe));
        if (!xe)
            goto out;
        PIOD_INFO("express lane from %s accepted: %s <- %s (%s%s)", d->peers[rx->peer].cfg->name,
                  rx->local, rx->remote, rx->sealed ? "sealed, " : "not sealed",
                  rx->sealed ? piod_seal_cipher_name(rx->cipher) : "");
        xe->kind = PIOD_EV_EXPRESS;
        xe->peer = rx->peer;
        xe->state = PIOD_EVS_LANE_THEIRS;
        xe->conn = rx->conn;
        xe->sealed = rx->sealed;
        xe->seal = rx->seal_data; /* the main loop opens the lane's frames from now on */
        memset(&rx->seal_data, 0, sizeof(rx->seal_data));
        rx->conn = NULL;
        piod_post(d, xe);
        goto out;
    }
    /* this channel replaces any earlier one of the same peer and index; old
     * is touched only under key_mtx: rx_adopt's reaper frees a dead
     * receiver once it has cleared (or found replaced) its slot under that
     * lock (TSan saw this read after the free) */
    pthread_mutex_lock(&d->key_mtx);
    old = d->peers[rx->peer].rx[rx->index];
    d->peers[rx->peer].rx[rx->index] = rx;
    if (old && !atomic_load(&old->dead))
        d->tp->shutdown(old->conn); /* shutdown(2): never blocks, calls nothing up */
    pthread_mutex_unlock(&d->key_mtx);
    struct piod_ev *ev = calloc(1, sizeof(*ev));
    if (ev) {
        ev->kind = PIOD_EV_CHAN;
        ev->peer = rx->peer;
        ev->index = rx->index;
        ev->state = PIOD_EVS_RX_UP;
        ev->gen = rx->gen;
        piod_post(d, ev);
    }
    PIOD_INFO("channel %d from %s accepted: %s <- %s (%s%s)", rx->index,
              d->peers[rx->peer].cfg->name, rx->local, rx->remote,
              rx->sealed ? "sealed, " : "not sealed",
              rx->sealed ? piod_seal_cipher_name(rx->cipher) : "");
    char who[PIO_WIRE_NAME + 32];
    snprintf(who, sizeof(who), "%d from %s", rx->index, d->peers[rx->peer].cfg->name);
    for (;;) {
        struct pio_frame f;
        int rc = chan_recv_frame(d, rx->conn, buf, cap, &f, who);
        if (rc == PIO_OK && f.type != PIO_F_C_DATA)
            PIOD_WARN("data channel %s sent %s where only C_DATA may come: closed", who,
                      pio_wire_type_name(f.type));
        if (rc != PIO_OK || f.type != PIO_F_C_DATA)
            break;
        struct pio_c_data cd = f.u.c_data;
        /* hold the grant while its payload streams straight into the pool */
        pthread_mutex_lock(&d->grant_mtx);
        struct piod_grant **pp = grant_slot(d, rx->peer, cd.msgid, cd.off);
        struct piod_grant *g = pp ? *pp : NULL;
        int bad_len = g && g->len != cd.len;
        int direct = g && !bad_len && !g->holder;
        if (direct)
            g->holder = rx;
        pthread_mutex_unlock(&d->grant_mtx);
        if (bad_len) {
            PIOD_WARN("chunk %llu+%llu: length %u but %u granted; channel closed",
                      (unsigned long long)cd.msgid, (unsigned long long)cd.off, cd.len, g->len);
            break;
        }
        /* no grant: a duplicate, which is never longer than a receive
         * region (we grant nothing longer); a length beyond it would only
         * make us allocate it (the channel is authenticated, not sealed:
         * the bytes may be anyone's on the way) */
        if (!g && cd.len > d->cfg.proc_pool - d->cfg.proc_pool / 2) {
            PIOD_WARN("data channel %s: chunk %llu+%llu of %u bytes, longer than any grant we "
                      "make: closed",
                      who, (unsigned long long)cd.msgid, (unsigned long long)cd.off, cd.len);
            break;
        }
        if (direct) {
            rc = d->tp->recv(rx->conn, g->dst, cd.len);
            if (rc == PIO_OK && rx->sealed)
                rc = rx_open(rx, &cd, g->dst, who);
            pthread_mutex_lock(&d->grant_mtx);
            g->holder = NULL;
            if (rc == PIO_OK)
                *grant_slot(d, rx->peer, cd.msgid, cd.off) = g->next;
            pthread_cond_broadcast(&d->grant_cv);
            pthread_mutex_unlock(&d->grant_mtx);
            if (rc != PIO_OK)
                break; /* not arrived: the grant stays for the resend */
        } else {
            /* no grant (a duplicate), or another channel is filling it (this
             * is a resend): read it aside, then place it if still wanted */
            if (scratch_len < cd.len) {
                free(scratch);
                scratch = malloc(cd.len);
                scratch_len = scratch ? cd.len : 0;
                if (!scratch)
                    break;
            }
            if (d->tp->recv(rx->conn, scratch, cd.len) != PIO_OK ||
                (rx->sealed && rx_open(rx, &cd, scratch, who) != PIO_OK))
                break;
            g = NULL;
            if (pp) {
                pthread_mutex_lock(&d->grant_mtx);
                g = grant_take_locked(d, rx->peer, cd.msgid, cd.off);
                pthread_mutex_unlock(&d->grant_mtx);
            }
            if (g)
                memcpy(g->dst, scratch, cd.len);
        }
        atomic_fetch_add(&d->peers[rx->peer].rx_bytes[rx->index], cd.len);
        atomic_fetch_add(&d->peers[rx->peer].rx_chunks[rx->index], 1);
        PIOD_DEBUG("channel %d: chunk %llu+%llu (%u bytes)%s", rx->index,
                   (unsigned long long)cd.msgid, (unsigned long long)cd.off, cd.len,
                   g ? "" : " without grant: dropped");
        if (g) {
            piod_proc_unref(d, g->proc);
            free(g);
            rx_post_arrived(d, rx->peer, rx->index, cd.msgid, cd.off, cd.len);
        }
        memset(&f, 0, sizeof(f));
        f.type = PIO_F_C_ACK;
        f.u.c_ack.n = 1;
        f.u.c_ack.a[0].msgid = cd.msgid;
        f.u.c_ack.a[0].off = cd.off;
        if ((rx->sealed ? chan_send_sealed(d, rx->conn, &f, &rx->seal_ack)
                        : chan_send_frame(d, rx->conn, &f)) != PIO_OK)
            break;
    }
    ev = calloc(1, sizeof(*ev));
    if (ev) {
        ev->kind = PIOD_EV_CHAN;
        ev->peer = rx->peer;
        ev->index = rx->index;
        ev->state = PIOD_EVS_RX_DOWN;
        ev->gen = rx->gen;
        piod_post(d, ev);
    }
out:
    free(buf);
    free(scratch);
    piod_seal_fini(&rx->seal_data);
    piod_seal_fini(&rx->seal_ack);
    if (rx->conn)
        d->tp->shutdown(rx->conn);
    atomic_store(&rx->dead, 1);
    return NULL;
}

struct accept_arg {
    struct piod *d;
    int i;
};

/* "a.b.c.d:port" or "[v6]:port": the same address, whatever the port. */
static int rx_same_host(const char *a, const char *b)
{
    const char *ca = strrchr(a, ':'), *cb = strrchr(b, ':');
    size_t la = ca ? (size_t)(ca - a) : strlen(a), lb = cb ? (size_t)(cb - b) : strlen(b);
    return la == lb && memcmp(a, b, la) == 0;
}

void piod_rx_watchdog(struct piod *d, uint64_t now)
{
    pthread_mutex_lock(&d->rxlist_mtx);
    for (int k = 0; k < d->nrx; k++) {
        struct piod_rxchan *r = d->rxlist[k];
        int one = 1;
        if (atomic_load(&r->hs) == 1 && now >= r->hs_deadline_ms &&
            atomic_compare_exchange_strong(&r->hs, &one, 2))
            d->tp->shutdown(r->conn); /* its thread logs it and ends */
    }
    pthread_mutex_unlock(&d->rxlist_mtx);
}

/* Run a receiver on c. limit_strangers: c was accepted from the network
 * (not handed over by our relay), so CHAN_HS_PER_ADDR applies. */
static void rx_adopt(struct piod *d, struct pio_tp_conn *c, int limit_strangers)
{
    struct piod_rxchan *rx = calloc(1, sizeof(*rx));
    if (!rx) {
        d->tp->close(c);
        return;
    }
    static atomic_uint_fast64_t next_gen;
    rx->d = d;
    rx->peer = -1;
    rx->gen = atomic_fetch_add(&next_gen, 1) + 1;
    rx->conn = c;
    atomic_store(&rx->hs, 1);
    rx->hs_deadline_ms = piod_now_ms() + CHAN_HS_TIMEOUT_MS;
    d->tp->addrs(c, rx->local, rx->remote);
    /* reap finished receivers, remember this one */
    pthread_mutex_lock(&d->rxlist_mtx);
    for (int k = 0; k < d->nrx;) {
        struct piod_rxchan *r = d->rxlist[k];
        if (atomic_load(&r->dead)) {
            pthread_join(r->thr, NULL);
            pthread_mutex_lock(&d->key_mtx);
            if (r->peer >= 0 && r->index < PIOD_MAX_LINKS && d->peers[r->peer].rx[r->index] == r)
                d->peers[r->peer].rx[r->index] = NULL;
            pthread_mutex_unlock(&d->key_mtx);
            if (r->conn)
                d->tp->close(r->conn);
            free(r);
            d->rxlist[k] = d->rxlist[--d->nrx];
        } else {
            k++;
        }
    }
    int full = d->nrx >= (int)(sizeof(d->rxlist) / sizeof(d->rxlist[0]));
    /* strangers from one address: a peer opens at most a channel per link
     * and its express lane at once; more is someone filling our slots */
    int same = 0;
    for (int k = 0; limit_strangers && k < d->nrx; k++)
        if (atomic_load(&d->rxlist[k]->hs) == 1 && rx_same_host(d->rxlist[k]->remote, rx->remote))
            same++;
    if (!full && limit_strangers && same >= CHAN_HS_PER_ADDR) {
        uint64_t now = piod_now_ms();
        if (now - d->rx_refused_log_ms >= 1000) { /* said at most once a second */
            PIOD_WARN("data channel from %s refused: %d handshakes from that address are "
                      "unfinished",
                      rx->remote, same);
            d->rx_refused_log_ms = now;
        }
        pthread_mutex_unlock(&d->rxlist_mtx);
        d->tp->close(c);
        free(rx);
        return;
    }
    if (!full)
        d->rxlist[d->nrx++] = rx;
    pthread_mutex_unlock(&d->rxlist_mtx);
    if (full || pthread_create(&rx->thr, NULL, rx_thread, rx) != 0) {
        PIOD_WARN("too many data channels; refusing %s", rx->remote);
        if (!full) {
            pthread_mutex_lock(&d->rxlist_mtx);
            d->nrx--;
            pthread_mutex_unlock(&d->rxlist_mtx);
        }
        d->tp->close(c);
        free(rx);
    }
}

void piod_rx_adopt(struct piod *d, struct pio_tp_conn *c)
{
    rx_adopt(d, c, 0);
}

static void *accept_thread(void *arg)
{
    struct accept_arg *a = arg;
    struct piod *d = a->d;
    int i = a->i;
    free(a);
    struct pio_tp_opts o = d->tpo;
    o.timeout_ms = -1;
    for (;;) {
        struct pio_tp_conn *c;
        int rc = d->tp->accept(d->listeners[i], &o, &c);
        if (rc == PIO_ECLOSED || d->stopping) {
            if (rc == PIO_OK) /* accepted as we stop: LeakSanitizer saw it left open */
                d->tp->close(c);
            break;
        }
        if (rc != PIO_OK)
            continue;
        rx_adopt(d, c, 1);
    }
    return NULL;
}

int piod_chan_start(struct piod *d)
{
    for (int i = 0; i < d->cfg.nlisten; i++) {
        int rc = d->tp->listen(d->cfg.listen[i], d->cfg.data_port, &d->tpo, &d->listeners[i], NULL);
        if (rc != PIO_OK) {
            PIOD_ERR("cannot listen for data channels on %s port %d: %s", d->cfg.listen[i],
                     d->cfg.data_port, PIO_Strerror(rc));
            return rc;
        }
        d->nlisten = i + 1;
        struct accept_arg *a = malloc(sizeof(*a));
        if (!a)
            return PIO_ENOMEM;
        a->d = d;
        a->i = i;
        if (pthread_create(&d->accept_thr[i], NULL, accept_thread, a) != 0) {
            free(a);
            return PIO_ENOMEM;
        }
    }
    return PIO_OK;
}

void piod_chan_stop(struct piod *d)
{
    d->stopping = 1;
    for (int i = 0; i < d->nlisten; i++)
        d->tp->listener_shutdown(d->listeners[i]);
    for (int i = 0; i < d->nlisten; i++) {
        pthread_join(d->accept_thr[i], NULL);
        d->tp->listener_close(d->listeners[i]);
    }
    d->nlisten = 0;
    for (int p = 0; p < d->npeers; p++)
        for (int i = 0; i < PIOD_MAX_LINKS; i++) {
            struct piod_txchan *ch = d->peers[p].tx[i];
            if (!ch)
                continue;
            pthread_mutex_lock(&ch->mtx);
            ch->stop = 1;
            if (ch->conn)
                d->tp->shutdown(ch->conn);
            pthread_cond_broadcast(&ch->cv);
            pthread_mutex_unlock(&ch->mtx);
        }
    for (int p = 0; p < d->npeers; p++)
        for (int i = 0; i < PIOD_MAX_LINKS; i++) {
            struct piod_txchan *ch = d->peers[p].tx[i];
            if (!ch)
                continue;
            pthread_join(ch->thr, NULL);
            for (struct piod_chunk *c = ch->q; c;) {
                struct piod_chunk *n = c->next;
                piod_proc_unref(d, c->proc);
                free(c);
                c = n;
            }
            pthread_mutex_destroy(&ch->mtx);
            pthread_cond_destroy(&ch->cv);
            free(ch);
            d->peers[p].tx[i] = NULL;
        }
    for (int p = 0; p < d->npeers; p++) {
        struct piod_txchan *ch = d->peers[p].xtx;
        if (!ch)
            continue;
        pthread_mutex_lock(&ch->mtx);
        ch->stop = 1;
        pthread_cond_broadcast(&ch->cv);
        pthread_mutex_unlock(&ch->mtx);
        pthread_join(ch->thr, NULL);
        /* a lane still open belongs to the main loop now (piod_fini closes it) */
        pthread_mutex_destroy(&ch->mtx);
        pthread_cond_destroy(&ch->cv);
        free(ch);
        d->peers[p].xtx = NULL;
    }
    pthread_mutex_lock(&d->rxlist_mtx);
    for (int k = 0; k < d->nrx; k++)
        if (d->rxlist[k]->conn)
            d->tp->shutdown(d->rxlist[k]->conn);
    for (int k = 0; k < d->nrx; k++) {
        pthread_join(d->rxlist[k]->thr, NULL);
        if (d->rxlist[k]->conn)
            d->tp->close(d->rxlist[k]->conn);
        free(d->rxlist[k]);
    }
    d->nrx = 0;
    pthread_mutex_unlock(&d->rxlist_mtx);
}
