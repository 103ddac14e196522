/* chan_tx.c - the sender side of the data channels: one sender thread and
 * one acknowledgement reader per outgoing channel, and the express lane's
 * opener. Split from chan.c, whose head comment describes the channels.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A sender thread connects and proves the peer's channel key (tx_connect),
 * writes its queue's chunks as C_DATA (sealed into its own buffer, so the
 * pool's bytes stay for a resend), and hands every chunk back to the main
 * thread when the connection dies. Locks: ch->mtx guards one channel's
 * queue, state and counters; d->key_mtx is taken alone, to copy a key.
 */
#include "piod.h"
#include "chan_int.h"
#include "relay.h"
#include "log.h"
#include "seal.h"
#include "err.h"
#include "mono.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHAN_IO_TIMEOUT_MS 5000
#define CHAN_AGAIN_WARN_MS 10000 /* a peer says "not yet" this long: warn */

void piod_tx_enqueue(struct piod_txchan *ch, struct piod_chunk *c)
{
    c->next = NULL;
    pthread_mutex_lock(&ch->mtx);
    if (ch->queued_bytes == 0) {
        ch->last_progress_ms = piod_now_ms(); /* the stall clock starts with the work */
        ch->busy_mark_us = piod_now_us();     /* and the busy time */
    }
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

double piod_tx_rate(struct piod_txchan *ch)
{
    pthread_mutex_lock(&ch->mtx);
    double r = ch->state == PIO_WCHAN_UP && ch->ack_rate > 0 ? ch->ack_rate : 0;
    pthread_mutex_unlock(&ch->mtx);
    return r;
}

/* A data channel sends at most pace % of its acknowledged rate (ch->mtx
 * held). TCP's own pacing follows its congestion control's estimate of the
 * path, and BBR's estimate of a channel that a chunk at a time keeps busy
 * can run far above the link (1.5 Gbit/s measured on a 100 Mbit/s link):
 * the burst fills the shaper's queue, and the sender is then clocked by
 * single freed packets, one segment at a time, which at 16 links cost the
 * whole machine (design notes, "Pacing at the measured rate"). The limit
 * follows the rate: a link that speeds up is let through pace % more each
 * window, so it is found again in a few ticks. Only slow channels (a chunk
 * takes chunk-ms or more) whose path drops (a segment sent again) are
 * paced; see the comment below. */
static void tx_pace(struct piod *d, struct piod_txchan *ch)
{
    /* a sample: the acked bytes over the time with bytes queued, once that
     * is 20 ms or more (an idle gap between bursts is not counted, so a
     * burst measures the link, less one round trip) */
    uint64_t now_us = piod_now_us();
    if (ch->busy_mark_us && ch->queued_bytes == 0)
        ch->busy_mark_us = 0; /* the chunks went elsewhere (reconnect) */
    if (ch->busy_mark_us && now_us > ch->busy_mark_us) {
        ch->busy_us += now_us - ch->busy_mark_us;
        ch->busy_mark_us = now_us;
    }
    if (ch->busy_us >= 20000) {
        ch->dlv[ch->dlv_i++ % PIOD_DLV_SAMPLES] = (double)ch->dlv_bytes * 1e6 / (double)ch->busy_us;
        ch->busy_us = ch->dlv_bytes = 0;
    }
    double rate = 0;
    for (int i = 0; i < PIOD_DLV_SAMPLES; i++)
        if (ch->dlv[i] > rate)
            rate = ch->dlv[i];
    if (!d->cfg.pace || ch->express || !ch->conn || rate <= 0 || !d->tp->pace)
        return;
    /* Only a slow channel whose path drops is limited. Slow: a chunk at
     * its rate takes chunk-ms (50) or more, so chunks are sized by the
     * link; there the host can outrun the link, and BBR's bursts overrun
     * a rate limiter's queue. A fast channel (the largest chunk takes less)
     * is bounded by the hosts: loopback, a 10 Gbit/s link. There a limit
     * only holds back the catch-up after a stall of the receiver, and TCP
     * paces by BBR alone: a cap at 125 % of the samples cost a loopback
     * stream 15 %, and even a loopback drops a segment now and then
     * (backlog overflow), so the loss alone does not tell. */
    double ms = d->cfg.chunk_ms ? d->cfg.chunk_ms : 50;
    if (rate * ms / 1000.0 >= d->cfg.chunk) {
        if (ch->pace_rate && d->tp->pace(ch->conn, 0) == PIO_OK)
            ch->pace_rate = 0;
        return;
    }
    /* Drops: once the connection sent a segment again, the channel stays
     * paced (a path that drops nothing needs no limit). */
    if (!ch->lossy) {
        uint64_t segs = 0;
        if (d->tp->lost(ch->conn, &segs) != PIO_OK || segs == 0)
            return;
        ch->lossy = 1;
    }
    uint64_t want = (uint64_t)(rate * d->cfg.pace / 100.0);
    if (ch->pace_rate && want < ch->pace_rate + ch->pace_rate / 16 &&
        want + ch->pace_rate / 16 > ch->pace_rate)
        return; /* within 1/16 of what is set: no call */
    if (d->tp->pace(ch->conn, want) == PIO_OK)
        ch->pace_rate = want;
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
    tx_pace(d, ch);
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
            uint8_t tag[PIO_SEAL_TAG];
            size_t flen = PIO_WIRE_HDR +
                          (size_t)(buf[8] | buf[9] << 8 | buf[10] << 16 | (uint32_t)buf[11] << 24);
            if (d->tp->recv(ch->conn, tag, sizeof(tag)) != PIO_OK)
                break;
            if (pio_seal_open(&ch->seal_ack, buf, flen, NULL, 0, tag) != 0) {
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
                    ch->dlv_bytes += c->len;
                    uint64_t now_us = piod_now_us();
                    if (ch->busy_mark_us && now_us > ch->busy_mark_us)
                        ch->busy_us += now_us - ch->busy_mark_us;
                    ch->busy_mark_us = ch->queued_bytes > 0 ? now_us : 0;
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

/* chan_open - connect to peer over link and prove our key for index (a
 * data channel's, PIOD_EXPRESS_INDEX or PIOD_DLANE_INDEX); on PIO_OK *o
 * holds the connection and, when it is sealed, the seal of each
 * direction. who names the connection in messages; last_err is the error
 * the caller saw last (a refusal is logged once per kind). Blocking (up to
 * CHAN_IO_TIMEOUT_MS per step): a channel thread's or a lane opener's. */
int chan_open(struct piod *d, int peer, int link, uint32_t index, const char *who, int last_err,
              struct chan_open_out *o)
{
    struct piod_peer_st *p = &d->peers[peer];
    int port = p->cfg->data_port ? p->cfg->data_port : d->cfg.data_port;
    struct pio_tp_conn *c = NULL;
    struct pio_frame f;
    uint8_t buf[512], key[PIO_WIRE_KEY];
    struct pio_tp_opts to = d->tpo;
    to.timeout_ms = CHAN_IO_TIMEOUT_MS;
    memset(o, 0, sizeof(*o));
    int rc = d->cfg.link_owner[link] < 0 ? d->tp->connect(d->cfg.listen[d->cfg.link_local[link]],
                                                          p->cfg->addr[link], port, &to, &c)
                                         : piod_relay_out(d, link, p->cfg->addr[link], port, &c);
    if (rc != PIO_OK)
        return rc;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_C_HELLO;
    int encrypt = piod_config_peer_encrypt(&d->cfg, p->cfg);
    int offer_aes = pio_seal_wants_aes(d->cfg.cipher);
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
        last_err != PIO_EREFUSED)
        PIOD_ERR("data channel %s: %s takes encrypted channels only (this piod has encrypt = no "
                 "for it; remove that, or say encrypt = no on both sides)",
                 who, p->cfg->name);
    PIO_CHECK(f.u.c_accept.status != PIO_OK, rc, f.u.c_accept.status, fail);
    if (encrypt && !(f.flags & PIO_WH_SEAL)) {
        if (last_err != PIO_EAUTH)
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
    o->sealed = encrypt;
    if (o->sealed) {
        o->cipher = (f.flags & PIO_WH_AES) ? PIO_CIPHER_AES : PIO_CIPHER_CHACHA;
        pio_seal_init(&o->seal_data, o->cipher, key, challenge, index, d->cfg.ident, 0);
        pio_seal_init(&o->seal_ack, o->cipher, key, challenge, index, d->cfg.ident, 1);
    }
    sodium_memzero(key, sizeof(key));
    o->conn = c;
    return PIO_OK;
fail:
    sodium_memzero(key, sizeof(key));
    d->tp->close(c);
    return rc;
}

static int tx_connect(struct piod_txchan *ch)
{
    struct piod *d = ch->d;
    struct piod_peer_st *p = &d->peers[ch->peer];
    char who[PIO_WIRE_NAME + 32];
    if (ch->express)
        snprintf(who, sizeof(who), "(express lane) to %s", p->cfg->name);
    else
        snprintf(who, sizeof(who), "%d to %s", ch->index, p->cfg->name);
    struct chan_open_out o;
    int rc =
        chan_open(d, ch->peer, ch->express ? 0 : ch->index,
                  ch->express ? PIOD_EXPRESS_INDEX : (uint32_t)ch->index, who, ch->last_err, &o);
    if (rc != PIO_OK)
        return rc;
    ch->sealed = o.sealed;
    pio_seal_fini(&ch->seal_data);
    pio_seal_fini(&ch->seal_ack);
    if (ch->sealed) {
        ch->seal_data = o.seal_data;
        ch->seal_ack = o.seal_ack;
        ch->cipher = o.cipher;
    }
    pthread_mutex_lock(&ch->mtx);
    ch->conn = o.conn;
    ch->pace_rate = 0; /* a new socket: no limit until the next tick sets one */
    ch->conn_dead = 0;
    d->tp->addrs(o.conn, ch->local, ch->remote);
    pthread_mutex_unlock(&ch->mtx);
    return PIO_OK;
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
                  ch->sealed ? pio_seal_cipher_name(ch->cipher) : "");
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
            uint8_t hdr[64], tag[PIO_SEAL_TAG];
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
                pio_seal_chunk_ad(ad, c->msgid, c->off, len);
                if (pio_seal_data(&ch->seal_data, ad, sizeof(ad), c->data, sealbuf, len, tag) != 0)
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
    pio_seal_fini(&ch->seal_data);
    pio_seal_fini(&ch->seal_ack);
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
                  ch->sealed ? pio_seal_cipher_name(ch->cipher) : "");
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
