/* chan.c - data channels: authenticated TCP connections carrying chunks.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The channels live in three files, which share chan_int.h:
 *   chan.c     clocks, pool references, frames on a channel (send, receive
 *              and check, the handshake's proof), and stopping them all
 *   chan_tx.c  the sender side: outgoing channels and the express lane's
 *              opener (connect and prove, C_DATA out, C_ACK in, requeue)
 *   chan_rx.c  the receiver side: listening, strangers' handshakes, the
 *              grant table, C_DATA in straight into the pool, C_ACK out
 * What follows describes them together.
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
#include "dlane.h"
#include "piod.h"
#include "chan_int.h"
#include "log.h"
#include "err.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* ---- frames on a channel ---- */

int chan_send_frame(struct piod *d, struct pio_tp_conn *c, const struct pio_frame *f)
{
    uint8_t buf[512];
    size_t len;
    int rc = pio_wire_encode(f, buf, sizeof(buf), &len);
    if (rc != PIO_OK)
        return rc;
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    return d->tp->sendv(c, &iov, 1);
}

/* Receive one frame (not C_DATA payload) into buf; decode into f. Bytes
 * that are not a frame we take are logged with who (the channel or the
 * remote address) and the reason; the caller closes the connection, since
 * nothing after them on the stream can be trusted. */
int chan_recv_frame(struct piod *d, struct pio_tp_conn *c, uint8_t *buf, size_t cap,
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

/* The proof of a channel key: a keyed hash of the challenge, the channel
 * index and the opener's system name. */
void chan_mac(uint8_t out[PIO_WIRE_KEY], const uint8_t key[PIO_WIRE_KEY],
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

/* ---- stopping, both sides ---- */

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
    piod_dlane_stop(d);
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
