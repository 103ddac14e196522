/* sendrecv.c - libpio's requests and messages: sends pumped into the pool's
 * send region, announced messages matched with receives, what the piod says
 * about them, and the send, receive, wait and test calls. Split from pio.c,
 * whose head comment describes the message core.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The public calls take pio_g.mtx; the rest runs with it held, but for the
 * copies into the pool (pump drops it around each). A request is on
 * pio_g.sends or pio_g.recvs until it completes (a receive: until it takes
 * a message); whoever waits for it frees it (wait_req, req_collect).
 *
 * The completion fd (PIO_Getfd) is level-triggered: pio_g.ready counts the
 * application's requests that are complete and not yet collected by a wait
 * or test call, and the eventfd holds a value exactly while it is above 0
 * (written when it leaves 0, read empty when it comes back). Both happen
 * with pio_g.mtx held, the lock every completion and collection holds, so
 * the fd cannot miss a completion nor stay readable with nothing to
 * collect; an eventfd write never blocks and calls nothing (as
 * pio_wake_reader), so holding the lock over it is safe.
 */
#include "pio.h"
#include "pio_int.h"
#include "lane.h"
#include "partner.h"
#include "err.h"
#include "pool.h"
#include "types.h"
#include "win.h"
#include "wire/wire.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* ---- the completion fd (PIO_Getfd) ---- */

/* The application's request r is complete: count it (pio_g.mtx held). */
static void ready_add(struct pio_request *r)
{
    r->ready_gen = pio_g.gen;
    if (pio_g.ready++ == 0 && pio_g.cfd >= 0) {
        uint64_t one = 1;
        ssize_t w = write(pio_g.cfd, &one, sizeof(one));
        (void)w; /* cannot fail: the counter stays far below its limit */
    }
}

/* r is collected (freed next): uncount it (pio_g.mtx held). */
static void ready_drop(struct pio_request *r)
{
    if (!r->ready_gen || r->ready_gen != pio_g.gen)
        return; /* not counted, or counted before a PIO_Exit */
    r->ready_gen = 0;
    if (--pio_g.ready == 0 && pio_g.cfd >= 0) {
        uint64_t v;
        ssize_t n = read(pio_g.cfd, &v, sizeof(v)); /* empty again: not readable */
        (void)n;
    }
}

void pio_ready_reset(void)
{
    if (pio_g.cfd >= 0)
        close(pio_g.cfd);
    pio_g.cfd = -1;
    pio_g.ready = 0;
    if (++pio_g.gen == 0) /* requests of this session count no more */
        pio_g.gen = 1;
}

/* r becomes the application's (returned by PIO_Isend, PIO_Irecv). */
static void req_expose(struct pio_request *r)
{
    r->user = 1;
    if (r->done)
        ready_add(r);
}

/* Free a request that is complete or never will be (pio_g.mtx held). */
static void req_free(struct pio_request *r)
{
    ready_drop(r);
    free(r);
}

/* Complete r with status, once, and wake its waiter. */
void pio_req_complete(struct pio_request *r, int status)
{
    if (r->done)
        return;
    r->done = 1;
    r->status = status;
    r->st.error = status;
    if (r->user)
        ready_add(r);
    pthread_cond_broadcast(&pio_g.cv);
}

static void list_remove_req(struct pio_request **list, struct pio_request *r)
{
    for (struct pio_request **pp = list; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            return;
        }
}

static void msg_remove(struct inmsg *m)
{
    struct inmsg *prev = NULL;
    for (struct inmsg *x = pio_g.msgs; x; prev = x, x = x->next)
        if (x == m) {
            if (prev)
                prev->next = m->next;
            else
                pio_g.msgs = m->next;
            if (pio_g.msgs_tail == m)
                pio_g.msgs_tail = prev;
            return;
        }
}

/* A message whose eager bytes are still the caller's (pio_on_msg_new with
 * borrow: a lane's input buffer); NULL once it is freed. */
static struct inmsg *lent;

/* Free an incoming message and its notes (unlinked already). */
void pio_msg_free(struct inmsg *m)
{
    while (m->chunks) {
        struct chunk_note *c = m->chunks;
        m->chunks = c->next;
        free(c);
    }
    if (m == lent)
        lent = NULL; /* its bytes were the caller's */
    else
        free(m->eager);
    if (m->lane_held)
        pio_lane_held(-(int64_t)m->size);
    free(m);
}

/* ---- matching ---- */

static int msg_matches(const struct inmsg *m, const struct pio_request *r)
{
    return !m->req && !m->canceled && (r->partner == PIO_ANY_PARTNER || m->partner == r->partner) &&
           (r->src == PIO_ANY_PROCESS || (int)m->src_proc == r->src) &&
           (r->tag == PIO_ANY_TAG ? m->tag < PIO_TAG_RESERVED : m->tag == r->tag);
}

static void push_job(struct inmsg *m, uint64_t msg_off, uint64_t pool_off, uint64_t len)
{
    struct copy_job *j = malloc(sizeof(*j));
    if (!j)
        return;
    j->next = NULL;
    j->m = m;
    j->msg_off = msg_off;
    j->pool_off = pool_off;
    j->len = len;
    if (pio_g.jobs_tail)
        pio_g.jobs_tail->next = j;
    else
        pio_g.jobs = j;
    pio_g.jobs_tail = j;
    if (!pio_g.in_pass)
        pio_wake_reader(); /* the reader runs the copies */
}

/* Every byte of r's message is in r's buffer: fill its status, free the
 * message, complete r. */
void pio_recv_finish(struct pio_request *r)
{
    struct inmsg *m = r->msg;
    r->st.partner = m->partner;
    r->st.source = (int)m->src_proc;
    r->st.uid = m->src_uid;
    r->st.gid = m->src_gid;
    snprintf(r->st.system, sizeof(r->st.system), "%s", m->src_system);
    snprintf(r->st.app, sizeof(r->st.app), "%s", m->src_app);
    snprintf(r->st.user, sizeof(r->st.user), "%s", m->src_user);
    r->st.tag = m->tag;
    r->st.datatype = (int)m->datatype;
    r->st.bytes = m->size;
    size_t es = pio_type_size(r->datatype);
    r->st.count = es ? m->size / es : 0;
    if ((m->flags & PIO_WF_SYNC) && (m->flags & PIO_WF_EAGER))
        pio_out_done(PIO_F_P_CONSUMED, m->key);
    msg_remove(m);
    pio_msg_free(m);
    r->msg = NULL;
    pio_req_complete(r, PIO_OK);
}

/* Bind message m to receive r, or fail r (m stays) when they do not fit. */
static void bind_msg(struct pio_request *r, struct inmsg *m)
{
    list_remove_req(&pio_g.recvs, r);
    if (!pio_type_compatible((int)m->datatype, r->datatype)) {
        r->st.datatype = (int)m->datatype;
        pio_req_complete(r, PIO_ETYPE);
        return;
    }
    size_t es = pio_type_size(r->datatype);
    if (m->size > (uint64_t)r->count * es) {
        r->st.bytes = m->size;
        pio_req_complete(r, PIO_ETRUNC);
        return;
    }
    m->req = r;
    r->msg = m;
    if (m->flags & PIO_WF_EAGER) {
        int big = (m->flags & PIO_WF_BIGEND) != 0;
        if (r->datatype == PIO_BYTE || m->size == 0)
            memcpy(r->rbuf, m->eager, m->size);
        else
            pio_convert(r->rbuf, m->eager, m->size, pio_type_swap_unit((int)m->datatype), big);
        pio_recv_finish(r);
        return;
    }
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_CLAIM;
    f.u.p_done.id = m->key;
    pio_out_frame(&f);
    while (m->chunks) {
        struct chunk_note *c = m->chunks;
        m->chunks = c->next;
        push_job(m, c->msg_off, c->pool_off, c->len);
        free(c);
    }
    if (m->size == 0)
        pio_recv_finish(r);
}

/* A receive with nothing to match that can never match: its source left. */
static int recv_hopeless(const struct pio_request *r)
{
    if (r->partner < 0 || r->src < 0 || r->partner >= pio_g.npartners)
        return 0;
    const struct partner *p = &pio_g.partners[r->partner];
    return (uint32_t)r->src < p->nprocs && p->left && p->left[r->src];
}

static void try_match_recv(struct pio_request *r)
{
    for (struct inmsg *m = pio_g.msgs; m; m = m->next)
        if (msg_matches(m, r)) {
            bind_msg(r, m);
            return;
        }
    if (recv_hopeless(r)) {
        list_remove_req(&pio_g.recvs, r);
        pio_req_complete(r, PIO_EGONE);
    }
}

/* ---- sends ---- */

/* Copy len bytes of r's message from msg_off into the pool at dst. */
static void copy_out(const struct pio_request *r, uint8_t *dst, uint64_t msg_off, uint64_t len)
{
    if (!r->sub_row) {
        memcpy(dst, r->sbuf + msg_off, len);
        return;
    }
    while (len > 0) {
        uint64_t row = msg_off / r->sub_row, in = msg_off % r->sub_row;
        uint64_t n = r->sub_row - in < len ? r->sub_row - in : len;
        memcpy(dst, r->sbuf + (row / r->sub_ny) * r->sub_pz + (row % r->sub_ny) * r->sub_py + in,
               n);
        dst += n;
        msg_off += n;
        len -= n;
    }
}

/* ---- the send region: copies ahead of the piod ----
 *
 * Sends copy into the send region oldest first, in chunks, while the bytes
 * there that the piod has not released stay within pio_g.send_ahead (pio.c
 * send_ahead says why it is small). The bound must never stop progress:
 *  - when the oldest send waits at it, each next send (as many as the
 *    partner has channels) may keep KEEP_CHUNKS chunks there (held bytes
 *    are tracked per range), so one message that the piod cannot move yet
 *    (no receive claimed it, past the receiver's share) does not hold back
 *    the one the receiver waits for, nor does a message on one named
 *    channel idle the others (pio_pump_all);
 *  - when no release came for SEND_STALL_MS while sends wait (every byte held
 *    belongs to messages the receiver does not want yet), the oldest send
 *    copies one chunk past the bound, and again each SEND_STALL_MS, up to the
 *    region as before the bound (pio_pump_stalled). */
#define SEND_STALL_MS 200

/* [off, off+len) holds bytes of send sid until the piod releases it. */
static int held_add(uint64_t off, uint64_t len, uint64_t sid)
{
    if (pio_g.nheld == pio_g.held_cap) {
        uint32_t cap = pio_g.held_cap ? 2 * pio_g.held_cap : 64;
        struct held_range *n = realloc(pio_g.held, cap * sizeof(*n));
        if (!n)
            return PIO_ENOMEM;
        pio_g.held = n;
        pio_g.held_cap = cap;
    }
    pio_g.held[pio_g.nheld++] = (struct held_range){off, len, sid};
    return PIO_OK;
}

void pio_send_released(uint64_t off, uint64_t len)
{
    pio_ralloc_put(&pio_g.send, off, len);
    for (uint32_t i = 0; i < pio_g.nheld; i++) {
        if (pio_g.held[i].off != off)
            continue;
        uint64_t sid = pio_g.held[i].sid, hl = pio_g.held[i].len;
        pio_g.held[i] = pio_g.held[--pio_g.nheld];
        for (struct pio_request *r = pio_g.sends; r; r = r->next)
            if (r->sid == sid) { /* gone once all copied and complete: nothing to count */
                r->held -= hl < r->held ? hl : r->held;
                break;
            }
        return;
    }
}

enum { PUMP_AHEAD, PUMP_ONE }; /* within the send-ahead; one chunk past it */

/* Channels of the bundle to r's partner (0: not known). */
static uint32_t partner_channels(const struct pio_request *r)
{
    return r->st.partner >= 0 && r->st.partner < pio_g.npartners
               ? pio_g.partners[r->st.partner].channels
               : 0;
}

/* The send-ahead for r: at the default, two chunks per channel of the bundle
 * to r's partner if that is more (each channel's next chunk is in the pool
 * when its grant comes: 16 links want 32 MiB, 2 want the default's 4). */
static uint64_t ahead_for(const struct pio_request *r)
{
    uint64_t a = pio_g.send_ahead;
    if (!pio_g.send_ahead_set) {
        uint64_t want = 2ull * partner_channels(r) * pio_g.w.chunk;
        a = want > a ? want : a;
    }
    return a < pio_g.send.len ? a : pio_g.send.len;
}

/* Copy what the mode allows of r into the send region. pio_g.mtx held on
 * entry and exit, dropped around each copy. */
static void pump(struct pio_request *r, int mode)
{
    if (r->pumping || r->done)
        return;
    r->pumping = 1;
    while (r->next_off < r->size && !pio_g.closed) {
        uint64_t len = r->size - r->next_off;
        if (len > pio_g.w.chunk)
            len = pio_g.w.chunk;
        uint64_t off;
        if (mode == PUMP_AHEAD && pio_g.send.used > 0 && pio_g.send.used + len > ahead_for(r))
            break; /* far enough ahead of the piod: on at its next release */
        if (pio_ralloc_get(&pio_g.send, len, &off) != PIO_OK)
            break;
        if (held_add(off, len, r->sid) != PIO_OK) {
            pio_ralloc_put(&pio_g.send, off, len);
            break; /* tried again at the next release */
        }
        r->held += len;
        uint64_t msg_off = r->next_off;
        r->next_off += len;
        pthread_mutex_unlock(&pio_g.mtx);
        copy_out(r, pio_g.base + off, msg_off, len);
        pthread_mutex_lock(&pio_g.mtx);
        pio_out_ranges(PIO_F_P_SEND_DATA, r->sid, msg_off, off, len);
        if (mode == PUMP_ONE)
            break;
    }
    r->pumping = 0;
    if (r->next_off == r->size && !r->copied_all) {
        r->copied_all = 1;
        if ((!r->sync || r->done_recv) && !r->verdict) {
            list_remove_req(&pio_g.sends, r);
            pio_req_complete(r, r->done_recv ? r->status : PIO_OK);
        } else {
            pthread_cond_broadcast(&pio_g.cv);
        }
    }
}

static struct pio_request *first_pending(struct pio_request *r)
{
    while (r && r->copied_all)
        r = r->next;
    return r;
}

#define KEEP_CHUNKS 2 /* chunks each waiting send keeps in the region */

/* The i'th send with bytes left after the oldest (0: the oldest). */
static struct pio_request *nth_pending(unsigned i)
{
    struct pio_request *r = first_pending(pio_g.sends);
    while (r && i--)
        r = first_pending(r->next);
    return r;
}

/* The oldest send with bytes left copies within the send-ahead; each of the
 * next ones, as many as the oldest one's partner has channels, keeps
 * KEEP_CHUNKS chunks in the region. So a send waiting behind the oldest
 * (to another receiver, or on another named channel: pcp -n 4 sends each
 * channel's message in turn) has its next chunks in the pool when its
 * grant comes, instead of its link idling until the oldest is all copied.
 * The lock is dropped in each pump: every look starts again. */
void pio_pump_all(void)
{
    struct pio_request *r = first_pending(pio_g.sends);
    if (!r)
        return;
    pump(r, PUMP_AHEAD);
    r = first_pending(pio_g.sends);
    unsigned keep = r && partner_channels(r) > 1 ? partner_channels(r) : 1;
    for (unsigned i = 1; i <= keep; i++) {
        for (int k = 0; k < KEEP_CHUNKS; k++) {
            struct pio_request *n = nth_pending(i);
            if (!n || n->pumping || n->held >= KEEP_CHUNKS * pio_g.w.chunk)
                break;
            uint64_t used = pio_g.send.used;
            pump(n, PUMP_ONE);
            if (pio_g.send.used <= used)
                return; /* the region is full (or n is done): on at the next release */
        }
    }
}

void pio_pump_stalled(void)
{
    struct pio_request *r = first_pending(pio_g.sends);
    if (!r || r->pumping || pio_g.send.used + pio_g.w.chunk <= ahead_for(r))
        return;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t ms = (int64_t)(now.tv_sec - pio_g.send_moved.tv_sec) * 1000 +
                 (now.tv_nsec - pio_g.send_moved.tv_nsec) / 1000000;
    if (ms < SEND_STALL_MS)
        return;
    pio_g.send_moved = now;
    pump(r, PUMP_ONE);
}

/* ---- frames from the piod about messages (the reader, pio_g.mtx held) ---- */

/* Data came for m, which no receive holds. A receive that holds a message
 * of another source with no data yet may take m instead (the held one goes
 * back to the unmatched): a receive open to several sources then completes
 * with what has arrived, instead of waiting for the first announced message
 * while arrived ones hold the piod's buffer space (head-of-line blocking).
 * Order per source is kept: m must be its source's oldest unheld message,
 * and the receive gives up only a message of another source. */
static void steal_for(struct inmsg *m)
{
    for (struct inmsg *e = pio_g.msgs; e && e != m; e = e->next)
        if (!e->req && !e->canceled && e->partner == m->partner && e->src_proc == m->src_proc)
            return; /* an older message of m's source comes first */
    for (struct inmsg *h = pio_g.msgs; h; h = h->next) {
        struct pio_request *r = h->req;
        if (!r || h->arrived || (h->flags & PIO_WF_EAGER) || h->copied ||
            (h->partner == m->partner && h->src_proc == m->src_proc))
            continue;
        h->req = NULL; /* test the receive against m as if it were free */
        r->msg = NULL;
        int fits = msg_matches(m, r) && pio_type_compatible((int)m->datatype, r->datatype) &&
                   m->size <= (uint64_t)r->count * pio_type_size(r->datatype);
        if (!fits) {
            h->req = r;
            r->msg = h;
            continue;
        }
        bind_msg(r, m);
        for (struct pio_request *o = pio_g.recvs; o; o = o->next) /* h is free again */
            if (msg_matches(h, o)) {
                bind_msg(o, h);
                break;
            }
        return;
    }
}

static void msg_new(struct pio_p_msg_new *n, int borrow);

/* P_MSG_NEW: a message for us; a receive waiting for it takes it. */
void pio_on_msg_new(struct pio_p_msg_new *n)
{
    msg_new(n, 0);
}

void pio_on_msg_new_lent(struct pio_p_msg_new *n)
{
    msg_new(n, 1);
}

/* borrow: n's eager bytes are copied only when no receive takes them at
 * once (a receive waiting for them copies straight from them). */
static void msg_new(struct pio_p_msg_new *n, int borrow)
{
    if (n->tag == PIO_TAG_LANE) { /* between lane ends (lane.c): never an application's */
        if ((n->flags & PIO_WF_SYNC) && (n->flags & PIO_WF_EAGER))
            pio_out_done(PIO_F_P_CONSUMED, n->key);
        pio_lane_on_ctl(n);
        return;
    }
    struct inmsg *m = calloc(1, sizeof(*m));
    if (!m)
        return;
    m->key = n->key;
    snprintf(m->src_app, sizeof(m->src_app), "%s", n->src_app);
    snprintf(m->src_system, sizeof(m->src_system), "%s", n->src_system);
    snprintf(m->src_user, sizeof(m->src_user), "%s", n->src_user);
    m->src_uid = n->src_uid;
    m->src_gid = n->src_gid;
    m->partner = pio_partner_by_name(n->src_app);
    m->src_proc = n->src_proc;
    /* a message from that process: it is there (a new run of it may be
     * heard from before the piod's join notice reaches us) */
    if (m->partner >= 0 && pio_g.partners[m->partner].left &&
        n->src_proc < pio_g.partners[m->partner].nprocs)
        pio_g.partners[m->partner].left[n->src_proc] = 0;
    pio_lane_heard(m->partner, n->src_proc);
    m->tag = n->tag;
    m->datatype = n->datatype;
    m->flags = n->flags;
    m->size = n->size;
    m->count = n->count;
    if ((n->flags & PIO_WF_EAGER) && borrow) {
        m->eager = (uint8_t *)(uintptr_t)n->payload;
        m->arrived = n->size;
        lent = m;
    } else if (n->flags & PIO_WF_EAGER) {
        m->eager = malloc(n->size ? n->size : 1);
        if (!m->eager) {
            free(m);
            return;
        }
        if (n->size)
            memcpy(m->eager, n->payload, n->size);
        m->arrived = n->size;
    }
    if (pio_g.msgs_tail)
        pio_g.msgs_tail->next = m;
    else
        pio_g.msgs = m;
    pio_g.msgs_tail = m;
    int matched = 0;
    for (struct pio_request *r = pio_g.recvs; r && !matched; r = r->next)
        if (msg_matches(m, r)) {
            bind_msg(r, m); /* m may be gone now */
            matched = 1;
        }
    if (!matched && (m->flags & PIO_WF_EAGER))
        steal_for(m); /* complete already: a receive waiting on an empty message may take it */
    if (borrow && lent == m) { /* nobody took it: its bytes become its own */
        lent = NULL;
        uint8_t *own = malloc(m->size ? m->size : 1);
        if (own) {
            if (m->size)
                memcpy(own, m->eager, m->size);
            m->lane_held = 1; /* a lane's reader stops past a limit of these */
            pio_lane_held((int64_t)m->size);
        } else {
            m->canceled = 1; /* no memory: nothing takes it */
        }
        m->eager = own;
    }
}

/* P_MSG_DATA: ranges of a message are in the pool. */
void pio_on_msg_data(struct pio_p_ranges *pr)
{
    struct inmsg *m;
    for (m = pio_g.msgs; m; m = m->next)
        if (m->key == pr->id)
            break;
    uint64_t msg_off = pr->msg_off;
    for (uint32_t i = 0; i < pr->n; i++) {
        uint64_t off = pr->r[i].off, len = pr->r[i].len;
        if (!m || off < pio_g.w.recv_off || off + len > pio_g.w.recv_off + pio_g.w.recv_len ||
            msg_off + len > m->size) {
            pio_out_ranges(PIO_F_P_FREE, pr->id, msg_off, off, len);
        } else if (m->req) {
            m->arrived += len;
            push_job(m, msg_off, off, len);
        } else {
            m->arrived += len;
            struct chunk_note *c = malloc(sizeof(*c));
            if (c) {
                c->msg_off = msg_off;
                c->pool_off = off;
                c->len = len;
                c->next = m->chunks;
                m->chunks = c;
            }
        }
        msg_off += len;
    }
    if (m && !m->req && !m->canceled && m->arrived)
        steal_for(m);
}

/* P_SEND_DONE: a send's outcome, the piod's verdict on a named channel,
 * or an incoming message cancelled. */
void pio_on_send_done(struct pio_frame *f)
{
    if (f->flags & PIO_WSD_CANCELLED) { /* an incoming message was cancelled */
        for (struct inmsg *m = pio_g.msgs; m; m = m->next)
            if (m->key == f->u.p_done.id) {
                m->canceled = 1;
                if (m->req) {
                    struct pio_request *r = m->req;
                    r->msg = NULL;
                    m->req = NULL;
                    pio_req_complete(r, f->u.p_done.status);
                }
                while (m->chunks) {
                    struct chunk_note *c = m->chunks;
                    m->chunks = c->next;
                    pio_out_ranges(PIO_F_P_FREE, m->key, c->msg_off, c->pool_off, c->len);
                    free(c);
                }
                break;
            }
        return;
    }
    for (struct pio_request *r = pio_g.sends; r; r = r->next)
        if (r->sid == f->u.p_done.id && (f->flags & PIO_WSD_CHANNEL_OK) &&
            f->u.p_done.status == PIO_OK) {
            r->verdict = 0; /* the piod took the named channel */
            if (r->copied_all && (!r->sync || r->done_recv)) {
                list_remove_req(&pio_g.sends, r);
                pio_req_complete(r, r->done_recv ? r->status : PIO_OK);
            }
            return;
        } else if (r->sid == f->u.p_done.id) {
            r->done_recv = 1;
            r->status = f->u.p_done.status;
            if (r->copied_all || f->u.p_done.status != PIO_OK) {
                list_remove_req(&pio_g.sends, r);
                pio_req_complete(r, f->u.p_done.status);
            }
            return;
        }
}

/* P_EVENT: a process of a partner joined or left. */
void pio_on_event(struct pio_p_event *e)
{
    int p = pio_partner_by_name(e->app);
    if (p < 0 || !pio_g.partners[p].left || e->proc >= pio_g.partners[p].nprocs)
        return;
    pio_g.partners[p].left[e->proc] = e->kind == 2;
    if (e->kind == 2)
        pio_lane_left(p, e->proc);
    if (e->kind == 2)
        for (struct pio_request *r = pio_g.recvs, *next; r; r = next) {
            next = r->next;
            try_match_recv(r);
        }
}

/* A send's request (pio_g.mtx held): sub, when not NULL, is the layout of a
 * block inside a larger array (pio_send_sub; never eager). */
static int isend_sub(int partner, int process_ID, int tag, int connection, const void *addr,
                     int datatype, size_t count, int mode, const struct pio_request *sub,
                     int internal, struct pio_request **out)
{
    size_t es = pio_type_size(datatype);
    if (!es || tag < 0 || (mode != PIO_BLOCKING && mode != PIO_SYNC) || (!addr && count > 0) ||
        process_ID < 0 || connection < PIO_DYNAMIC || count > SIZE_MAX / es)
        return PIO_EINVAL;
    if (!pio_g.inited)
        return PIO_ENOTINIT;
    if (pio_g.closed)
        return PIO_ECLOSED;
    if (partner < 0 || partner >= pio_g.npartners)
        return PIO_EPARTNER;
    struct partner *p = &pio_g.partners[partner];
    if ((uint32_t)process_ID >= p->nprocs)
        return PIO_EINVAL;
    if (connection >= 0 && p->channels > 0 && (uint32_t)connection >= p->channels)
        return PIO_ECHANNEL;
    if (p->left && p->left[process_ID])
        return PIO_EGONE;
    uint64_t size = (uint64_t)count * es;
    /* a direct lane (lane.c) for a small message, or the piods' path, in
     * order with what went the other way; a message on a named channel
     * keeps it, unless it is small enough to travel inline (such messages
     * take no channel on the piods' path either) */
    int lane_ok = mode != PIO_SYNC && !sub && size <= pio_lane_max() &&
                  (connection < 0 || size <= pio_g.w.eager_limit);
    struct pio_lane *lane = internal ? NULL : pio_lane_route(partner, process_ID, lane_ok, size);
    if (pio_g.closed)
        return PIO_ECLOSED;
    struct pio_request *r = calloc(1, sizeof(*r));
    if (!r)
        return PIO_ENOMEM;
    r->kind = REQ_SEND;
    r->sid = ++pio_g.next_sid;
    r->size = size;
    r->sbuf = addr;
    if (sub) {
        r->sub_row = sub->sub_row;
        r->sub_ny = sub->sub_ny;
        r->sub_py = sub->sub_py;
        r->sub_pz = sub->sub_pz;
    }
    r->sync = mode == PIO_SYNC;
    r->st.partner = partner;
    r->st.source = pio_g.proc;
    r->st.tag = tag;
    r->st.datatype = datatype;
    r->st.count = count;
    r->st.bytes = size;
    r->dst_proc = process_ID;
    r->connection = connection;
    r->lane_piods = !lane_ok;
    if (lane) {
        int rc = pio_lane_submit(lane, r); /* sent, or waits for the lane's window */
        if (rc != PIO_OK) {
            free(r);
            return rc;
        }
        *out = r;
        return PIO_OK;
    }
    int rc = pio_send_req_piods(r);
    if (rc != PIO_OK) {
        free(r);
        return rc;
    }
    *out = r;
    return PIO_OK;
}

/* r (a send request, not on any list) through the piods: its P_SEND, then
 * its bytes inline or pumped into the pool. On an error r is the caller's
 * to free. */
int pio_send_req_piods(struct pio_request *r)
{
    const struct partner *p = &pio_g.partners[r->st.partner];
    struct pio_frame *f = calloc(1, sizeof(*f));
    if (!f)
        return PIO_ENOMEM;
    int connection = r->connection;
    f->type = PIO_F_P_SEND;
    struct pio_p_send *s = &f->u.p_send;
    s->sid = r->sid;
    s->size = r->size;
    s->count = r->st.count;
    s->dst_proc = (uint32_t)r->dst_proc;
    s->tag = r->st.tag;
    s->datatype = (uint32_t)r->st.datatype;
    s->conn = connection >= 0 ? PIO_WCONN_USER
                              : (connection == PIO_STATIC ? PIO_WCONN_STATIC : PIO_WCONN_DYNAMIC);
    s->conn_arg = (uint16_t)(connection >= 0 ? connection : 0);
    s->flags = (r->sync ? PIO_WF_SYNC : 0) | (pio_host_bigendian() ? PIO_WF_BIGEND : 0);
    snprintf(s->partner, sizeof(s->partner), "%s", p->name);
    int eager = r->size <= pio_g.w.eager_limit && !r->sub_row;
    /* a large message on a named channel: the piod says whether that channel
     * is up before the send may complete (PIO_ECHANNEL otherwise) */
    r->verdict = !eager && connection >= 0;
    if (eager) {
        s->flags |= PIO_WF_EAGER;
        s->payload = r->sbuf;
    }
    int rc = pio_out_frame(f);
    free(f);
    if (rc != PIO_OK)
        return rc;
    if (eager) {
        r->next_off = r->size;
        r->copied_all = 1;
        if (r->sync) {
            r->next = pio_g.sends;
            pio_g.sends = r;
        } else {
            pio_req_complete(r, PIO_OK);
        }
    } else {
        struct pio_request **pp = &pio_g.sends;
        while (*pp)
            pp = &(*pp)->next;
        *pp = r;
        /* only the oldest unfinished send pumps; the others follow in order */
        pio_pump_all();
    }
    return PIO_OK;
}

static int irecv(int partner, int process_ID, int tag, void *addr, int datatype, size_t count,
                 int mode, struct pio_request **out)
{
    size_t es = pio_type_size(datatype);
    if (!es || tag < PIO_ANY_TAG || process_ID < PIO_ANY_PROCESS ||
        (mode != PIO_BLOCKING && mode != PIO_SYNC) || (!addr && count > 0) || count > SIZE_MAX / es)
        return PIO_EINVAL;
    if (!pio_g.inited)
        return PIO_ENOTINIT;
    if (partner != PIO_ANY_PARTNER && (partner < 0 || partner >= pio_g.npartners))
        return PIO_EPARTNER;
    if (partner >= 0 && process_ID >= 0 && (uint32_t)process_ID >= pio_g.partners[partner].nprocs)
        return PIO_EINVAL;
    struct pio_request *r = calloc(1, sizeof(*r));
    if (!r)
        return PIO_ENOMEM;
    r->kind = REQ_RECV;
    r->partner = partner;
    r->src = process_ID;
    r->tag = tag;
    r->rbuf = addr;
    r->datatype = datatype;
    r->count = count;
    struct pio_request **pp = &pio_g.recvs;
    while (*pp)
        pp = &(*pp)->next;
    *pp = r;
    if (pio_g.closed)
        pio_req_complete(r, PIO_ECLOSED);
    else
        try_match_recv(r);
    *out = r;
    return PIO_OK;
}

/* Wait for r (pio_g.mtx held). On completion unlinks and frees it. */
static int wait_req(struct pio_request *r, int timeout, PIO_Status *status, int *done)
{
    struct timespec dl;
    if (timeout >= 0)
        pio_deadline_after(&dl, timeout);
    while (!r->done) {
        if (timeout == 0 || pio_wait_until(timeout >= 0 ? &dl : NULL) == PIO_ETIMEDOUT) {
            if (!r->done) {
                if (done)
                    *done = 0;
                return PIO_ETIMEDOUT;
            }
        }
    }
    if (status)
        *status = r->st;
    int rc = r->status;
    if (done)
        *done = 1;
    req_free(r);
    return rc;
}

/* A receive timed out: if its message has begun to arrive, the data is
 * already on its way into the buffer, so finish it; else unlink and free it
 * (pio_g.mtx held). Returns the receive's outcome. */
static int recv_timed_out(struct pio_request *r, PIO_Status *status)
{
    if (r->msg)
        return wait_req(r, PIO_WAIT_FOREVER, status, NULL);
    list_remove_req(&pio_g.recvs, r);
    free(r);
    return PIO_ETIMEDOUT;
}

static int isend(int partner, int process_ID, int tag, int connection, const void *addr,
                 int datatype, size_t count, int mode, struct pio_request **out)
{
    return isend_sub(partner, process_ID, tag, connection, addr, datatype, count, mode, NULL, 0,
                     out);
}

int pio_send_internal(int partner, int proc, int tag, const void *buf, size_t count, int datatype,
                      uint64_t size, int sync, struct pio_request **out)
{
    (void)size;
    struct pio_request *r = NULL;
    int rc = isend_sub(partner, proc, tag, PIO_DYNAMIC, buf, datatype, count,
                       sync ? PIO_SYNC : PIO_BLOCKING, NULL, 1, &r);
    if (rc != PIO_OK)
        return rc;
    if (out)
        *out = r;
    else if (r->done)
        free(r);
    return PIO_OK;
}

int pio_send_sub(int partner, int process_ID, int tag, int connection, const void *base,
                 int datatype, const uint64_t dims[3], const uint64_t off[3],
                 const uint64_t count[3])
{
    size_t es = pio_type_size(datatype);
    if (!es || !base || !dims || !off || !count)
        return PIO_EINVAL;
    uint64_t n = 1;
    for (int i = 0; i < 3; i++) {
        if (count[i] == 0 || off[i] > dims[i] || count[i] > dims[i] - off[i] ||
            dims[i] > (UINT64_C(1) << 32))
            return PIO_EINVAL;
        n *= count[i];
    }
    struct pio_request sub = {0};
    sub.sub_row = count[0] * es;
    sub.sub_ny = count[1];
    sub.sub_py = dims[0] * es;
    sub.sub_pz = dims[0] * dims[1] * es;
    const uint8_t *first =
        (const uint8_t *)base + off[2] * sub.sub_pz + off[1] * sub.sub_py + off[0] * es;
    pthread_mutex_lock(&pio_g.mtx);
    uint64_t eager_limit = pio_g.w.eager_limit;
    pthread_mutex_unlock(&pio_g.mtx);
    if (n * es <= eager_limit) { /* small: packed, and sent inline */
        uint8_t *tmp = malloc(n * es);
        if (!tmp)
            return PIO_ENOMEM;
        sub.sbuf = first;
        copy_out(&sub, tmp, 0, n * es);
        int rc =
            PIO_Send(partner, process_ID, tag, connection, tmp, datatype, (size_t)n, PIO_BLOCKING);
        free(tmp);
        return rc;
    }
    struct pio_request *r;
    pthread_mutex_lock(&pio_g.mtx);
    int rc = isend_sub(partner, process_ID, tag, connection, first, datatype, (size_t)n,
                       PIO_BLOCKING, &sub, 0, &r);
    if (rc == PIO_OK)
        rc = wait_req(r, PIO_WAIT_FOREVER, NULL, NULL);
    pthread_mutex_unlock(&pio_g.mtx);
    return rc;
}

int PIO_Send(int partner, int process_ID, int tag, int connection, const void *addr, int datatype,
             size_t count, int mode)
{
    struct pio_request *r;
    pthread_mutex_lock(&pio_g.mtx);
    int rc = isend(partner, process_ID, tag, connection, addr, datatype, count, mode, &r);
    if (rc == PIO_OK)
        rc = wait_req(r, PIO_WAIT_FOREVER, NULL, NULL);
    pthread_mutex_unlock(&pio_g.mtx);
    return rc;
}

int PIO_Recv(int partner, int process_ID, int tag, void *addr, int datatype, size_t count,
             int timeout, int mode, PIO_Status *status)
{
    struct pio_request *r;
    pthread_mutex_lock(&pio_g.mtx);
    int rc = irecv(partner, process_ID, tag, addr, datatype, count, mode, &r);
    if (rc == PIO_OK) {
        int done = 0;
        rc = wait_req(r, timeout, status, &done);
        if (!done)
            rc = recv_timed_out(r, status);
    }
    pthread_mutex_unlock(&pio_g.mtx);
    return rc;
}

int PIO_Isend(int partner, int process_ID, int tag, int connection, const void *addr, int datatype,
              size_t count, int mode, PIO_Request *req)
{
    if (!req)
        return PIO_EINVAL;
    pthread_mutex_lock(&pio_g.mtx);
    int rc = isend(partner, process_ID, tag, connection, addr, datatype, count, mode, req);
    if (rc == PIO_OK)
        req_expose(*req);
    pthread_mutex_unlock(&pio_g.mtx);
    return rc;
}

int PIO_Irecv(int partner, int process_ID, int tag, void *addr, int datatype, size_t count,
              int mode, PIO_Request *req)
{
    if (!req)
        return PIO_EINVAL;
    pthread_mutex_lock(&pio_g.mtx);
    int rc = irecv(partner, process_ID, tag, addr, datatype, count, mode, req);
    if (rc == PIO_OK)
        req_expose(*req);
    pthread_mutex_unlock(&pio_g.mtx);
    return rc;
}

int PIO_Wait(PIO_Request *req, int timeout, PIO_Status *status)
{
    if (!req || !*req)
        return PIO_EINVAL;
    pthread_mutex_lock(&pio_g.mtx);
    int done = 0;
    int rc = wait_req(*req, timeout, status, &done);
    if (done)
        *req = NULL;
    pthread_mutex_unlock(&pio_g.mtx);
    return rc;
}

int PIO_Test(PIO_Request *req, int *done, PIO_Status *status)
{
    if (!req || !*req || !done)
        return PIO_EINVAL;
    pthread_mutex_lock(&pio_g.mtx);
    int rc = wait_req(*req, 0, status, done);
    if (*done)
        *req = NULL;
    else
        rc = PIO_OK;
    pthread_mutex_unlock(&pio_g.mtx);
    return rc;
}

/* ---- several requests, and the completion fd ---- */

/* What a NULL request reports (MPI's empty status). */
static void status_empty(PIO_Status *st)
{
    memset(st, 0, sizeof(*st));
    st->partner = PIO_ANY_PARTNER;
    st->source = PIO_ANY_PROCESS;
    st->tag = PIO_ANY_TAG;
    st->error = PIO_OK;
}

/* The complete request *req: fill status, free it, *req = NULL (pio_g.mtx
 * held). Returns its outcome. */
static int req_collect(PIO_Request *req, PIO_Status *status)
{
    struct pio_request *r = *req;
    if (status)
        *status = r->st;
    int rc = r->status;
    req_free(r);
    *req = NULL;
    return rc;
}

/* PIO_Waitany's core (pio_g.mtx held): *done [out] = 1 when a request was
 * collected (*index its place) or none was left (*index PIO_UNDEFINED);
 * else 0 and PIO_ETIMEDOUT. Sleeps on pio_g.cv (or reads the socket) like
 * wait_req: every completion broadcasts it, so nothing polls. */
static int waitany(int count, PIO_Request reqs[], int *index, int timeout, PIO_Status *status,
                   int *done)
{
    struct timespec dl;
    if (timeout >= 0)
        pio_deadline_after(&dl, timeout);
    int expired = 0;
    *index = PIO_UNDEFINED;
    *done = 0;
    for (;;) {
        int live = 0;
        for (int i = 0; i < count; i++) {
            if (!reqs[i])
                continue;
            live++;
            if (reqs[i]->done) {
                *index = i;
                *done = 1;
                return req_collect(&reqs[i], status);
            }
        }
        if (!live) {
            if (status)
                status_empty(status);
            *done = 1;
            return PIO_OK;
        }
        if (timeout == 0 || expired)
            return PIO_ETIMEDOUT;
        expired = pio_wait_until(timeout >= 0 ? &dl : NULL) == PIO_ETIMEDOUT;
    }
}

int PIO_Waitany(int count, PIO_Request reqs[], int *index, int timeout, PIO_Status *status)
{
    if (count < 0 || (count > 0 && !reqs) || !index)
        return PIO_EINVAL;
    int done;
    pthread_mutex_lock(&pio_g.mtx);
    int rc = waitany(count, reqs, index, timeout, status, &done);
    pthread_mutex_unlock(&pio_g.mtx);
    return rc;
}

int PIO_Testany(int count, PIO_Request reqs[], int *index, int *done, PIO_Status *status)
{
    if (count < 0 || (count > 0 && !reqs) || !index || !done)
        return PIO_EINVAL;
    pthread_mutex_lock(&pio_g.mtx);
    int rc = waitany(count, reqs, index, 0, status, done);
    if (!*done)
        rc = PIO_OK;
    pthread_mutex_unlock(&pio_g.mtx);
    return rc;
}

int PIO_Waitall(int count, PIO_Request reqs[], int timeout, PIO_Status statuses[])
{
    if (count < 0 || (count > 0 && !reqs))
        return PIO_EINVAL;
    struct timespec dl;
    if (timeout >= 0)
        pio_deadline_after(&dl, timeout);
    int expired = 0, rc = PIO_OK;
    pthread_mutex_lock(&pio_g.mtx);
    for (;;) { /* all complete first: a timeout leaves every request as it was */
        int pending = 0;
        for (int i = 0; i < count && !pending; i++)
            pending = reqs[i] && !reqs[i]->done;
        if (!pending)
            break;
        if (timeout == 0 || expired) {
            pthread_mutex_unlock(&pio_g.mtx);
            return PIO_ETIMEDOUT;
        }
        expired = pio_wait_until(timeout >= 0 ? &dl : NULL) == PIO_ETIMEDOUT;
    }
    for (int i = 0; i < count; i++) {
        PIO_Status *st = statuses ? &statuses[i] : NULL;
        if (!reqs[i]) {
            if (st)
                status_empty(st);
            continue;
        }
        int one = req_collect(&reqs[i], st);
        if (rc == PIO_OK)
            rc = one; /* the first failure in array order */
    }
    pthread_mutex_unlock(&pio_g.mtx);
    return rc;
}

int PIO_Getfd(int *fd)
{
    if (!fd)
        return PIO_EINVAL;
    int rc = PIO_OK;
    pthread_mutex_lock(&pio_g.mtx);
    if (!pio_g.inited) {
        rc = PIO_ENOTINIT;
    } else if (pio_g.cfd < 0) {
        pio_g.cfd = eventfd(pio_g.ready > 0 ? 1 : 0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (pio_g.cfd < 0)
            rc = pio_from_errno(errno);
    }
    if (rc == PIO_OK)
        *fd = pio_g.cfd;
    pthread_mutex_unlock(&pio_g.mtx);
    return rc;
}

struct pio_request *pio_req_ext_new(void)
{
    struct pio_request *r = calloc(1, sizeof(*r));
    if (r) { /* PIO_Iget / PIO_Iput: the application's; completed later (pio_req_ext_done) */
        r->kind = REQ_EXT;
        r->user = 1;
    }
    return r;
}

void pio_req_ext_done(struct pio_request *r, int status, size_t bytes)
{
    pthread_mutex_lock(&pio_g.mtx);
    r->st.bytes = bytes;
    r->st.count = bytes;
    pio_req_complete(r, status);
    pio_wake_reader(); /* a waiter may be the reader, in poll */
    pthread_mutex_unlock(&pio_g.mtx);
}

int pio_send_room(uint64_t *free, uint64_t *total)
{
    pthread_mutex_lock(&pio_g.mtx);
    int rc = pio_g.inited ? PIO_OK : PIO_ENOTINIT;
    if (rc == PIO_OK) {
        *total = pio_g.send.len;
        *free = pio_g.send.len - pio_g.send.used;
    }
    pthread_mutex_unlock(&pio_g.mtx);
    return rc;
}
