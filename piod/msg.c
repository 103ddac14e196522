/* msg.c - messages in flight: lookup, the sender side (chunks to
 * channels), the receiver side (announce in stream order, grant receive
 * space, destinations served in turn). Split from core.c; main thread only.
 * SPDX-License-Identifier: BSD-3-Clause */
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
#include "core_int.h"

/* ---- message lookup ---- */

static uint64_t omsg_sid_hash(int src, uint64_t sid)
{
    return piod_hash64((uint64_t)src, sid);
}

struct piod_omsg *omsg_find(struct piod *d, uint64_t msgid)
{
    for (struct piod_hlink *l = piod_htab_first(&d->omsg_id, msgid); l; l = piod_htab_next(l)) {
        struct piod_omsg *m = PIOD_CONTAINER(l, struct piod_omsg, h_id);
        if (m->msgid == msgid)
            return m;
    }
    return NULL;
}

struct piod_omsg *omsg_by_sid(struct piod *d, int src, uint64_t sid)
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

struct piod_imsg *imsg_find(struct piod *d, int peer, uint64_t msgid)
{
    uint64_t h = imsg_id_hash(peer, msgid);
    for (struct piod_hlink *l = piod_htab_first(&d->imsg_id, h); l; l = piod_htab_next(l)) {
        struct piod_imsg *m = PIOD_CONTAINER(l, struct piod_imsg, h_id);
        if (m->peer == peer && m->msgid == msgid)
            return m;
    }
    return NULL;
}

struct piod_imsg *imsg_by_key(struct piod *d, int dst, uint64_t key)
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
int omsg_link(struct piod *d, struct piod_omsg *m)
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

void omsg_free(struct piod *d, struct piod_omsg *m)
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

void imsg_free(struct piod *d, struct piod_imsg *m)
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
void omsg_finish(struct piod *d, struct piod_omsg *m, int status)
{
    m->outcome = 1;
    if (!m->done_sent && !d->procs[m->src].gone && ((m->flags & PIO_WF_SYNC) || status != PIO_OK)) {
        send_done(d, m->src, PIO_F_P_SEND_DONE, m->sid, status);
        m->done_sent = 1;
    }
}

/* Free m once nothing of it is on a channel any more and it has its outcome. */
void omsg_maybe_free(struct piod *d, struct piod_omsg *m, int have_outcome)
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

int chunk_queue(struct piod *d, struct piod_omsg *m, uint32_t i, int resend)
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

/* ---- receiver side: announce and grant ---- */

uint32_t chunk_len(uint64_t size, uint32_t chunk, uint32_t i)
{
    uint64_t off = (uint64_t)i * chunk;
    return (uint32_t)(size - off < chunk ? size - off : chunk);
}

/* Copy one chunk of a local message from the sender's pool to the receiver's. */
void local_copy(struct piod *d, struct piod_imsg *im, uint32_t i)
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

void ua_del(struct piod *d, struct piod_imsg *m)
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

/* Announce every message whose process is here, in each stream's send order
 * (seq, per source process, destination process and tag); a message waiting
 * for its process to join holds back only the later messages to that same
 * process. */
void announce_all(struct piod *d)
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
                    if (!(m->flags & PIO_WF_FRESH) && app_proc_left(d, m->dst_app, m->dst_proc))
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

/* Bytes granted on one channel and not yet arrived: about 0.25 s of its
 * rate, and at least 4 of the peer's chunks. */
static uint64_t chan_cap(struct piod *d, const struct piod_peer_st *p, struct piod_rxbal *b)
{
    uint64_t floor = 4ull * (p->in_chunk ? p->in_chunk : d->cfg.chunk);
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

void ring_del(struct piod *d, int pi)
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

/* The receive class of a message to p (P_QOS): fixed at its first queueing,
 * so the bytes it holds are counted against one class to the end. */
static int msg_class(const struct piod_proc *p, const struct piod_imsg *m)
{
    if (p->ncls <= 0 || m->tag < p->cls_tag0)
        return 0;
    int64_t c = (int64_t)m->tag - p->cls_tag0;
    return c < p->ncls ? (int)c : 0;
}

void gq_add(struct piod *d, struct piod_imsg *m)
{
    struct piod_proc *p = &d->procs[m->dst];
    int q = m->claimed ? 1 : 0;
    if (!m->cls_set) {
        m->cls = msg_class(p, m);
        m->cls_set = 1;
    }
    int c = m->cls;
    m->gq_next = NULL;
    m->gq_prev = p->gq_tail[c][q];
    if (p->gq_tail[c][q])
        p->gq_tail[c][q]->gq_next = m;
    else
        p->gq_head[c][q] = m;
    p->gq_tail[c][q] = m;
    p->gq_count++;
    m->in_gq = 1 + q;
    if (m->peer >= 0)
        d->peers[m->peer].gq_n++;
    else
        d->gq_local++;
    if (!p->g_blocked)
        ring_add(d, m->dst);
}

void gq_del(struct piod *d, struct piod_imsg *m)
{
    if (!m->in_gq)
        return;
    struct piod_proc *p = &d->procs[m->dst];
    int q = m->in_gq - 1, c = m->cls;
    if (m->gq_prev)
        m->gq_prev->gq_next = m->gq_next;
    else
        p->gq_head[c][q] = m->gq_next;
    if (m->gq_next)
        m->gq_next->gq_prev = m->gq_prev;
    else
        p->gq_tail[c][q] = m->gq_prev;
    p->gq_count--;
    m->in_gq = 0;
    if (m->peer >= 0)
        d->peers[m->peer].gq_n--;
    else
        d->gq_local--;
    if (!p->gq_count) {
        ring_del(d, m->dst);
        p->g_blocked = 0;
    }
}

/* Room came back in pi's own region or unclaimed share: on the ring again. */
void grant_wake(struct piod *d, int pi)
{
    struct piod_proc *p = &d->procs[pi];
    p->g_blocked = 0;
    if (p->gq_count)
        ring_add(d, pi);
}

/* Has peer p's bundle room for another grant? */
static int peer_room(struct piod *d, int peer)
{
    struct piod_peer_st *p = &d->peers[peer];
    for (int k = 0; k < p->nchan; k++)
        if (p->bal[k].up && p->bal[k].outstanding < chan_cap(d, p, &p->bal[k]))
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

/* receive-region bytes granted to p and not freed yet */
static uint64_t proc_held(const struct piod_proc *p)
{
    uint64_t n = 0;
    for (int c = 0; c < PIOD_NCLS; c++)
        n += p->cls_held[c];
    return n;
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
            bc[k].up = p->bal[k].up && p->bal[k].outstanding < chan_cap(d, p, &p->bal[k]);
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
    if (d->recv_held + len > d->cfg.grant_budget &&
        (!m->claimed || proc_held(dst) - dst->unclaimed_bytes >= 2 * (uint64_t)m->chunk))
        return G_LINK; /* past the budget only a receive's own message, two chunks */
    uint64_t off;
    if (pio_ralloc_get(&dst->recv, len, &off) != PIO_OK)
        return G_DST;
    struct piod_grant *g = NULL;
    if (remote && !(g = calloc(1, sizeof(*g)))) {
        pio_ralloc_put(&dst->recv, off, len);
        return G_LINK; /* tried again at the next event */
    }
    m->pool_off[i] = off;
    dst->cls_held[m->cls] += len;
    d->recv_held += len;
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

void piod_cls_release(struct piod *d, struct piod_proc *p, const struct piod_imsg *m, uint64_t len)
{
    uint64_t n = len < p->cls_held[m->cls] ? len : p->cls_held[m->cls];
    p->cls_held[m->cls] -= n;
    d->recv_held -= n < d->recv_held ? n : d->recv_held;
}

/* The classes of pi with waiting messages, the least served for its share
 * first (ties: lower class first). Returns how many. */
static int class_order(const struct piod_proc *p, int order[PIOD_NCLS])
{
    int n = 0;
    for (int c = 0; c < PIOD_NCLS; c++) {
        if (!p->gq_head[c][0] && !p->gq_head[c][1])
            continue;
        uint64_t share = c < p->ncls ? p->cls_share[c] : 100;
        double key = (double)p->cls_held[c] / (double)share;
        int j = n++;
        while (j > 0) {
            int o = order[j - 1];
            uint64_t so = o < p->ncls ? p->cls_share[o] : 100;
            if ((double)p->cls_held[o] / (double)so <= key)
                break;
            order[j] = o;
            j--;
        }
        order[j] = c;
    }
    return n;
}

/* One chunk for destination pi: its receive classes by share (class_order),
 * in each the claimed messages first, then the unclaimed ones in arrival
 * order. */
static int grant_dst(struct piod *d, int pi)
{
    struct piod_proc *p = &d->procs[pi];
    int link = 0, order[PIOD_NCLS];
    int ncls = class_order(p, order);
    for (int k = 0; k < ncls; k++) {
        int c = order[k];
        for (int q = 1; q >= 0; q--)
            for (struct piod_imsg *m = p->gq_head[c][q], *next; m; m = next) {
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
    }
    return link ? G_LINK : G_DST;
}

/* Grant what can be granted now: destinations in turn, a chunk each. */
void grant_all(struct piod *d)
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
void imsg_complete(struct piod *d, struct piod_imsg *m, int status)
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

void imsg_fail(struct piod *d, struct piod_imsg *m, int status)
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
                piod_cls_release(d, dst, m, chunk_len(m->size, m->chunk, i));
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
struct piod_imsg *imsg_new(struct piod *d, int peer, const struct pio_h_request *rq)
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
    if (m->peer >= 0 && rq->chunk && !(rq->flags & PIO_WF_EAGER))
        d->peers[m->peer].in_chunk = rq->chunk;
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

void omsg_pump(struct piod *d, struct piod_omsg *m)
{
    if (m->peer < 0)
        return;
    for (uint32_t i = 0; i < m->nchunks; i++)
        if (m->state[i] == PIOD_OC_WAITING && m->grant[i] >= 0 && m->data_off[i] != UINT64_MAX)
            if (chunk_queue(d, m, i, 0) != PIO_OK)
                return;
}
