/* chan_rx.c - the receiver side of the data channels: listening, the
 * handshake of every opener (a stranger until its proof checks out), the
 * grant table, and one receiver thread per incoming channel. Split from
 * chan.c, whose head comment describes the channels.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The main thread adds and takes grants (msg.c); a receiver thread holds a
 * grant (g->holder) while it reads a payload straight into its pool range,
 * and takes it out when the chunk is in. Locks: d->grant_mtx (the grant
 * table; d->grant_cv signals a holder letting go), d->key_mtx (peer keys,
 * rx slots), d->rxlist_mtx (accepted channels); never two at once.
 */
#include "dlane.h"
#include "piod.h"
#include "chan_int.h"
#include "relay.h"
#include "log.h"
#include "seal.h"
#include "err.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define CHAN_HS_TIMEOUT_MS 5000 /* an opener has this long from connect to C_PROOF */
#define CHAN_HS_PER_ADDR   8    /* unfinished handshakes at once from one remote address */

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

/* A C_ACK on a sealed channel: the frame, then its tag (the frame is the
 * associated data). */
static int chan_send_sealed(struct piod *d, struct pio_tp_conn *c, struct pio_frame *f,
                            struct pio_seal *s)
{
    uint8_t buf[PIO_WIRE_HDR + 16 + PIO_WIRE_MAX_RANGES * 16 + 64], tag[PIO_SEAL_TAG];
    size_t len;
    f->flags |= PIO_WH_SEAL;
    int rc = pio_wire_encode(f, buf, sizeof(buf), &len);
    if (rc != PIO_OK)
        return rc;
    if (pio_seal_data(s, buf, len, NULL, NULL, 0, tag) != 0)
        return PIO_ENOMEM;
    struct iovec iov[2] = {{buf, len}, {tag, sizeof(tag)}};
    return d->tp->sendv(c, iov, 2);
}

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
    int aes = sealed && (f.flags & PIO_WH_AES) && pio_seal_wants_aes(d->cfg.cipher);
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
        int ok = index < (uint32_t)d->peers[peer].nchan || index == PIOD_EXPRESS_INDEX ||
                 index == PIOD_DLANE_INDEX;
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
        int cipher = aes ? PIO_CIPHER_AES : PIO_CIPHER_CHACHA;
        rx->sealed = 1;
        rx->cipher = cipher;
        pio_seal_init(&rx->seal_data, cipher, key, challenge, index, system, 0);
        pio_seal_init(&rx->seal_ack, cipher, key, challenge, index, system, 1);
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
    uint8_t tag[PIO_SEAL_TAG], ad[20];
    int rc = rx->d->tp->recv(rx->conn, tag, sizeof(tag));
    if (rc != PIO_OK)
        return rc;
    pio_seal_chunk_ad(ad, cd->msgid, cd->off, cd->len);
    if (pio_seal_open(&rx->seal_data, ad, sizeof(ad), buf, cd->len, tag) == 0)
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
    if ((uint32_t)rx->index == PIOD_DLANE_INDEX) { /* whose lane, then to the main loop */
        char who[PIO_WIRE_NAME + 48];
        snprintf(who, sizeof(who), "(direct lane) from %s", d->peers[rx->peer].cfg->name);
        struct pio_c_lane cl;
        if (piod_dlane_recv_clane(d, rx->conn, rx->sealed ? &rx->seal_data : NULL, &cl, who) !=
                PIO_OK ||
            piod_dlane_accepted(d, rx->peer, rx->conn, rx->sealed, rx->cipher, &rx->seal_data,
                                &rx->seal_ack, &cl) != PIO_OK)
            goto out;
        rx->conn = NULL; /* the main loop's now, and the seals with it */
        memset(&rx->seal_data, 0, sizeof(rx->seal_data));
        memset(&rx->seal_ack, 0, sizeof(rx->seal_ack));
        goto out;
    }
    if ((uint32_t)rx->index == PIOD_EXPRESS_INDEX) { /* the main loop reads it from now on */
        struct piod_ev *xe = calloc(1, sizeof(*xe));
        if (!xe)
            goto out;
        PIOD_INFO("express lane from %s accepted: %s <- %s (%s%s)", d->peers[rx->peer].cfg->name,
                  rx->local, rx->remote, rx->sealed ? "sealed, " : "not sealed",
                  rx->sealed ? pio_seal_cipher_name(rx->cipher) : "");
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
              rx->sealed ? pio_seal_cipher_name(rx->cipher) : "");
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
    pio_seal_fini(&rx->seal_data);
    pio_seal_fini(&rx->seal_ack);
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
