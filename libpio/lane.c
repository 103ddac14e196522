/* lane.c - direct lanes: small messages straight to a process of another
 * host, on a TCP connection the two piods brokered (piod/dlane.c).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A send of at most $PIO_LANE_MAX bytes (default 1 MiB; 0: no lanes) that
 * is not synchronous, names no channel and is not a block of an array may
 * take a lane to its destination process when that process joined another
 * host's piod. Lanes are for conversations, whose every turn waits for the
 * last: such a send of at least $PIO_LANE_MIN bytes (default 0: at
 * every size one hop beats the piods' three on a quiet host) that is the
 * $PIO_LANE_TURNS'th turn (default 2: two such sends in a row that each
 * came after a message from that process) asks the piod for one (P_LANE_REQ)
 * and goes through the piods. A stream keeps the bundle: it gains nothing
 * from a lane (its messages overlap the hops) and loses the balancing
 * over every link and the piods' fair shares among many senders. Once the
 * lane is up every such send takes it, small ones too, so that a mix of
 * sizes never pays for switching paths; the piod hands the lane's end over (P_LANE, the
 * socket attached), and so does the destination's piod to the destination.
 *
 * Order. Messages from one sender to one receiver stay in send order across
 * the two paths:
 *  - piods -> lane: before the first lane message (and again after any
 *    message took the piods' path) the sender sends a fence through the
 *    piods, a synchronous zero-byte-like message with tag PIO_TAG_LANE, and
 *    waits until the receiver's libpio took it: everything the sender sent
 *    through the piods before is then in the receiver's list. Other sends
 *    to that receiver wait meanwhile.
 *  - lane -> piods: before a message takes the piods' path while the lane
 *    is up, the sender asks for an acknowledgement (L_FLUSH) and waits until
 *    the receiver took every lane message (L_ACK).
 * No acknowledged byte is lost: a lane send completes once its frame is in
 * the socket (or queued for it), and the sender keeps a copy until the
 * receiver acknowledges it (every 64 messages or 1 MiB, or when asked).
 * When the lane breaks, the sender asks the receiver through the piods
 * which message it took last (a query; the receiver closes its end first,
 * so nothing more comes in), and sends the rest again through the piods, in
 * order, before anything new. A lane that broke stays down for the life of
 * the process (its sends go through the piods).
 * Identity: a lane message carries the sender's uid, gid, user and system as
 * the sender's piod stamped them when it brokered the lane.
 * Sealing: when the piods' connection is sealed (the default), every lane
 * frame travels inside a C_SEALED frame under the keys and counters the
 * piods derived and handed over (seal.h); libpio runs the AEAD with
 * libsodium.
 * Lanes are never freed before PIO_Exit (a pointer to one stays valid while
 * pio_g.mtx is dropped); all state is guarded by pio_g.mtx.
 */
#include "lane.h"
#include "pio.h"
#include "pio_int.h"
#include "err.h"
#include "fstream.h"
#include "seal.h"
#include "types.h"
#include "wire/wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define LANE_MAX_DEFAULT   (1u << 20) /* $PIO_LANE_MAX: larger messages gain from the bundle */
#define LANE_MIN_DEFAULT   0u         /* $PIO_LANE_MIN: every size asks (design notes) */
#define LANE_TURNS_DEFAULT 2          /* $PIO_LANE_TURNS: turns before a lane is asked for */
#define TURN_HEARD         0x80       /* partner.turn[]: heard from since our last send */
#define LANE_ACK_EVERY     64         /* messages taken before an L_ACK goes */
#define LANE_ACK_BYTES     (1u << 20) /* ... or bytes */
#define LANE_WINDOW        (8u << 20) /* unacknowledged bytes a sender keeps before it waits */

enum {
    LANE_OPENING = 1, /* out: asked the piod */
    LANE_READY,       /* out: a fence must go before the next lane message */
    LANE_FENCING,     /* out: the fence is on its way */
    LANE_UP,          /* out: messages go on it; in: messages come on it */
    LANE_RECOVER,     /* out: broke; the query is on its way */
    LANE_DOWN,        /* closed for good */
};

enum { CTL_FENCE = 1, CTL_QUERY = 2, CTL_ANSWER = 3 };

#define LANE_HEADROOM 128 /* before a copy's bytes: its L_MSG head goes there */

struct lane_copy {
    struct lane_copy *next;
    size_t cap; /* bytes data[] has room for after LANE_HEADROOM (and a seal's tag) */
    uint64_t seq, count, size;
    int tag, datatype;
    int sealed;     /* data[] holds the sealed frame (C_SEALED head before pay) */
    size_t hlen;    /* ... whose L_MSG head is hlen bytes */
    uint64_t nonce; /* ... sealed with this counter */
    uint8_t *pay;   /* data + LANE_HEADROOM: the message's bytes */
    uint8_t data[];
};

struct pio_lane {
    struct pio_lane *next;
    int out; /* 1: we send on it; 0: we receive */
    int state;
    int partner; /* handle, or -1 (a receiver's lane from a process it never named) */
    uint32_t proc;
    char app[PIO_WIRE_NAME];
    uint64_t lane_id, req;
    int fd;
    int sealed;
    struct pio_seal so, si;
    struct pio_fin in;
    struct pio_fout q;
    uint8_t *wbuf;
    size_t wcap;
    /* out */
    uint64_t next_seq, acked, flushed;
    struct lane_copy *copies, *copies_tail;
    size_t copy_bytes;
    struct pio_request *pend, *pend_tail; /* sends waiting their turn, in order */
    struct pio_request *fence_r;          /* the fence on its way (LANE_FENCING) */
    /* in */
    uint64_t rx_seq, rx_acked;
    size_t rx_unacked_bytes;
    uint32_t uid, gid;
    char user[PIO_WIRE_NAME], system[PIO_WIRE_NAME];
};

struct replay { /* a message sent again through the piods, until its send completes */
    struct replay *next;
    struct pio_request *r;
    struct lane_copy *c;
};

static struct {
    struct pio_lane *all;
    uint64_t max;            /* $PIO_LANE_MAX */
    uint64_t min;            /* $PIO_LANE_MIN */
    unsigned turns;          /* $PIO_LANE_TURNS */
    uint64_t rx_held;        /* bytes of lane messages no receive took yet (pio_lane_held) */
    struct lane_copy *spare; /* copies whose message was acknowledged, for reuse */
    size_t spare_bytes;
    int nspare;
    uint64_t next_req;
    struct replay *replays;
} L;

static FILE *lane_trace(void)
{
    static FILE *f;
    static int tried;
    if (!tried) {
        tried = 1;
        const char *p = getenv("PIO_LANE_TRACE");
        if (p && *p)
            f = fopen(p, "a");
        if (f)
            setvbuf(f, NULL, _IOLBF, 0);
    }
    return f;
}

#define TRACE(...)                                                                                 \
    do {                                                                                           \
        FILE *tf_ = lane_trace();                                                                  \
        if (tf_)                                                                                   \
            fprintf(tf_, __VA_ARGS__);                                                             \
    } while (0)

void pio_lane_init(void)
{
    const char *v = getenv("PIO_LANE_MAX");
    L.max = v && *v ? strtoull(v, NULL, 0) : LANE_MAX_DEFAULT;
    if (L.max > PIO_WIRE_MAX_BODY - 4096)
        L.max = PIO_WIRE_MAX_BODY - 4096;
    v = getenv("PIO_LANE_MIN");
    L.min = v && *v ? strtoull(v, NULL, 0) : LANE_MIN_DEFAULT;
    v = getenv("PIO_LANE_TURNS");
    unsigned long t = v && *v ? strtoul(v, NULL, 0) : LANE_TURNS_DEFAULT;
    L.turns = t < TURN_HEARD - 1 ? (unsigned)t : TURN_HEARD - 1;
}

void pio_lane_heard(int partner, uint32_t proc)
{
    if (partner < 0 || partner >= pio_g.npartners)
        return;
    struct partner *p = &pio_g.partners[partner];
    if (p->turn && proc < p->nprocs)
        p->turn[proc] |= TURN_HEARD;
}

/* A send to (partner, proc) that a lane could carry (fits: eligible and at
 * least $PIO_LANE_MIN) or not: the turns taken in a row with it so far,
 * this one counted. It is a turn when it fits and a message from that
 * process came since our last send; else the count starts again (a
 * conversation of messages the lane would not take gains nothing from
 * one). */
static unsigned turn_count(int partner, uint32_t proc, int fits)
{
    struct partner *p = &pio_g.partners[partner];
    if (!p->turn || proc >= p->nprocs)
        return 0;
    uint8_t t = p->turn[proc];
    unsigned n = fits && (t & TURN_HEARD) ? (t & (TURN_HEARD - 1)) + 1u : 0u;
    if (n > TURN_HEARD - 1)
        n = TURN_HEARD - 1;
    p->turn[proc] = (uint8_t)n;
    return n;
}

uint64_t pio_lane_max(void)
{
    return L.max;
}

static struct pio_lane *find_out(int partner, uint32_t proc)
{
    for (struct pio_lane *l = L.all; l; l = l->next)
        if (l->out && l->partner == partner && l->proc == proc)
            return l;
    return NULL;
}

static struct pio_lane *find_in(const char *app, uint32_t proc, uint64_t lane_id)
{
    for (struct pio_lane *l = L.all; l; l = l->next)
        if (!l->out && l->lane_id == lane_id && l->proc == proc && strcmp(l->app, app) == 0)
            return l;
    return NULL;
}

static struct pio_lane *lane_new(int out, int partner, uint32_t proc, const char *app)
{
    struct pio_lane *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->out = out;
    l->partner = partner;
    l->proc = proc;
    l->fd = -1;
    l->next_seq = 1;
    snprintf(l->app, sizeof(l->app), "%s", app);
    pio_fin_init(&l->in, PIO_WIRE_HDR + (size_t)PIO_WIRE_MAX_BODY);
    l->next = L.all;
    L.all = l;
    return l;
}

static void copies_unseal(struct pio_lane *l);

static void lane_close_fd(struct pio_lane *l)
{
    if (l->fd >= 0) {
        shutdown(l->fd, SHUT_RDWR);
        close(l->fd);
    }
    l->fd = -1;
    pio_fout_clear(&l->q);
    copies_unseal(l); /* while the key is there: they may go again, in the clear */
    pio_seal_fini(&l->so);
    pio_seal_fini(&l->si);
}

/* ---- control messages through the piods ---- */

static void ctl_encode(uint8_t b[24], uint32_t kind, uint64_t lane_id, uint64_t seq)
{
    memset(b, 0, 24);
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)(kind >> (8 * i));
    for (int i = 0; i < 8; i++) {
        b[8 + i] = (uint8_t)(lane_id >> (8 * i));
        b[16 + i] = (uint8_t)(seq >> (8 * i));
    }
}

static int ctl_send(int partner, uint32_t proc, uint32_t kind, uint64_t lane_id, uint64_t seq,
                    int sync, struct pio_request **out)
{
    uint8_t b[24];
    ctl_encode(b, kind, lane_id, seq);
    return pio_send_internal(partner, (int)proc, PIO_TAG_LANE, b, 24, PIO_BYTE, 24, sync, out);
}

/* ---- writing frames ---- */

static void lane_broke(struct pio_lane *l, const char *why);

/* The bytes of whole frames onto l's socket (or its queue), in order. */
static int lane_send_bytes(struct pio_lane *l, const uint8_t *b, size_t n)
{
    int rc = pio_fout_send(&l->q, l->fd, b, n);
    if (rc == PIO_OK && l->q.queued)
        pio_wake_reader(); /* the reader polls for room */
    return rc;
}

/* The encoded frame fr (len bytes) onto l: sealed from where it is into
 * l's buffer when l is sealed, else as it is. In order. */
static int lane_write_raw(struct pio_lane *l, const uint8_t *fr, size_t len)
{
    const uint8_t *out = fr;
    size_t n = len;
    if (l->sealed) {
        size_t need = PIO_WIRE_HDR + len + PIO_SEAL_TAG;
        if (need > l->wcap) {
            uint8_t *nb = realloc(l->wbuf, need);
            if (!nb)
                return PIO_ENOMEM;
            l->wbuf = nb;
            l->wcap = need;
        }
        int rc = pio_wire_sealed_wrap(l->wbuf, len + PIO_SEAL_TAG);
        if (rc != PIO_OK)
            return rc;
        if (pio_seal_data(&l->so, l->wbuf, 12, fr, l->wbuf + PIO_WIRE_HDR, len,
                          l->wbuf + PIO_WIRE_HDR + len) != 0)
            return PIO_ENOMEM;
        out = l->wbuf;
        n = need;
    }
    return lane_send_bytes(l, out, n);
}

/* f onto l (sealed when l is), in order. */
static int lane_write(struct pio_lane *l, const struct pio_frame *f)
{
    uint8_t buf[256];
    size_t len;
    int rc = pio_wire_encode(f, buf, sizeof(buf), &len);
    return rc == PIO_OK ? lane_write_raw(l, buf, len) : rc;
}

/* ---- the sender's side ---- */

/* Copies are reused: a fresh block per message costs more in page faults
 * than its bytes do (glibc gives it back and takes it again). At most
 * SPARE_MAX copies, SPARE_BYTES in all, wait for reuse: as many as an
 * acknowledgement may cover (LANE_ACK_EVERY) and as many again, so that a
 * conversation of small messages reuses every copy (with 16, 48 of every
 * 64 copies of 32 KiB came fresh: 139 instead of 34 us a half round trip). */
#define SPARE_MAX   (2 * LANE_ACK_EVERY)
#define SPARE_BYTES LANE_WINDOW

static struct lane_copy *copy_get(uint64_t size)
{
    for (struct lane_copy **pp = &L.spare; *pp; pp = &(*pp)->next) {
        struct lane_copy *c = *pp;
        /* big enough, and not so big that a small message pins it */
        if (c->cap >= size && c->cap / 4 <= size + (64u << 10)) {
            *pp = c->next;
            L.spare_bytes -= c->cap;
            L.nspare--;
            return c;
        }
    }
    struct lane_copy *c = malloc(sizeof(*c) + LANE_HEADROOM + size + PIO_SEAL_TAG);
    if (c)
        c->cap = size;
    return c;
}

/* Where the smallest spare copy is linked (NULL: no spares). */
static struct lane_copy **spare_smallest(void)
{
    struct lane_copy **best = NULL;
    for (struct lane_copy **pp = &L.spare; *pp; pp = &(*pp)->next)
        if (!best || (*pp)->cap < (*best)->cap)
            best = pp;
    return best;
}

static void copy_put(struct lane_copy *c)
{
    if (!c)
        return;
    /* full: smaller spares make room for a larger one (after a run of
     * small messages, sixteen small spares would otherwise send every
     * larger copy back to the allocator, whose fresh pages cost a fault
     * each: 2.5 ms per 512 KiB message on the test VM) */
    while (L.nspare >= SPARE_MAX || L.spare_bytes + c->cap > SPARE_BYTES) {
        struct lane_copy **pp = spare_smallest();
        if (!pp || (*pp)->cap >= c->cap) {
            free(c);
            return;
        }
        struct lane_copy *s = *pp;
        *pp = s->next;
        L.spare_bytes -= s->cap;
        L.nspare--;
        free(s);
    }
    c->next = L.spare;
    L.spare = c;
    L.spare_bytes += c->cap;
    L.nspare++;
}

/* The clear bytes of every copy again, from the frame as it went (a lane
 * that closes: what the receiver did not take goes through the piods). */
static void copies_unseal(struct pio_lane *l)
{
    for (struct lane_copy *c = l->copies; c; c = c->next) {
        uint8_t *fr = c->pay - c->hlen - PIO_WIRE_HDR;
        if (c->sealed && pio_seal_reopen(&l->so, c->nonce, fr, 12, fr + PIO_WIRE_HDR,
                                         c->hlen + c->size, c->pay + c->size) == 0)
            c->sealed = 0;
    }
}

static void copies_drop_upto(struct pio_lane *l, uint64_t seq)
{
    while (l->copies && l->copies->seq <= seq) {
        struct lane_copy *c = l->copies;
        l->copies = c->next;
        l->copy_bytes -= c->size;
        copy_put(c);
    }
    if (!l->copies)
        l->copies_tail = NULL;
}

static void replays_reap(void)
{
    for (struct replay **pp = &L.replays; *pp;) {
        struct replay *x = *pp;
        if (x->r && !x->r->done) {
            pp = &x->next;
            continue;
        }
        *pp = x->next;
        free(x->r);
        copy_put(x->c);
        free(x);
    }
}

static void request(int partner, uint32_t proc)
{
    const struct partner *p = &pio_g.partners[partner];
    struct pio_lane *l = lane_new(1, partner, proc, p->name);
    if (!l)
        return;
    l->state = LANE_OPENING;
    l->req = ++L.next_req;
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_LANE_REQ;
    f.u.p_lane_req.req = l->req;
    f.u.p_lane_req.proc = proc;
    snprintf(f.u.p_lane_req.app, sizeof(f.u.p_lane_req.app), "%s", p->name);
    if (pio_out_frame(&f) != PIO_OK)
        l->state = LANE_DOWN;
}

struct pio_lane *pio_lane_route(int partner, int proc, int eligible, uint64_t size)
{
    if (!L.max || partner < 0 || proc < 0)
        return NULL;
    if (L.replays)
        replays_reap();
    struct pio_lane *l = find_out(partner, (uint32_t)proc);
    if (!l) {
        /* a conversation with a process of another system only: this
         * host's piod is the shortest way to its own processes */
        int fits = eligible && size >= L.min;
        if (turn_count(partner, (uint32_t)proc, fits) >= L.turns && fits &&
            strcmp(pio_g.partners[partner].system, pio_g.w.system) != 0)
            request(partner, (uint32_t)proc);
        return NULL;
    }
    if (l->state == LANE_OPENING || (l->state == LANE_DOWN && !l->pend))
        return NULL;
    /* a lane message, or a piods' message that must wait its turn behind
     * what the lane has (pio_lane_submit: the request says which) */
    if (eligible || l->pend || l->state != LANE_READY)
        return l;
    return NULL; /* nothing on the lane before it: the piods straight away */
}

static int lane_send_msg(struct pio_lane *l, int tag, int datatype, uint64_t count, uint64_t size,
                         const void *buf)
{
    /* the copy kept for a resend, with room for the frame's head before it
     * and the seal's tag after: the frame is one piece, sent from there */
    struct lane_copy *c = copy_get(size);
    if (!c)
        return PIO_ENOMEM;
    c->next = NULL;
    c->seq = l->next_seq++;
    c->count = count;
    c->size = size;
    c->tag = tag;
    c->datatype = datatype;
    c->pay = c->data + LANE_HEADROOM;
    c->sealed = 0;
    if (l->copies_tail)
        l->copies_tail->next = c;
    else
        l->copies = c;
    l->copies_tail = c;
    l->copy_bytes += size;
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_L_MSG;
    f.u.l_msg =
        (struct pio_l_msg){.seq = c->seq,
                           .size = size,
                           .count = count,
                           .tag = tag,
                           .datatype = (uint32_t)datatype,
                           .flags = PIO_WF_EAGER | (pio_host_bigendian() ? PIO_WF_BIGEND : 0),
                           .payload = size ? c->pay : NULL};
    uint8_t head[LANE_HEADROOM];
    size_t hlen = 0, flen = 0;
    int rc = pio_wire_encode_head(&f, head, sizeof(head), &hlen, &flen);
    if (rc == PIO_OK && hlen + PIO_WIRE_HDR > LANE_HEADROOM)
        rc = PIO_EINTERNAL;
    if (rc == PIO_OK && l->sealed) {
        /* sealed straight from the caller's buffer into the copy, which
         * then holds the frame as it went (recover() opens it again) */
        uint8_t *fr = c->pay - hlen - PIO_WIRE_HDR;
        rc = pio_wire_sealed_wrap(fr, flen + PIO_SEAL_TAG);
        c->nonce = pio_seal_nonces(&l->so);
        c->hlen = hlen;
        c->sealed = 1;
        if (rc == PIO_OK && pio_seal_data2(&l->so, fr, 12, head, hlen, buf, size, fr + PIO_WIRE_HDR,
                                           c->pay + size) != 0)
            rc = PIO_ENOMEM;
        if (rc == PIO_OK)
            rc = lane_send_bytes(l, fr, PIO_WIRE_HDR + flen + PIO_SEAL_TAG);
    } else if (rc == PIO_OK) {
        if (size)
            memcpy(c->pay, buf, size);
        memcpy(c->pay - hlen, head, hlen);
        rc = lane_send_bytes(l, c->pay - hlen, flen);
    }
    if (rc == PIO_ENOMEM)
        return rc;
    if (rc != PIO_OK)
        lane_broke(l, PIO_Strerror(rc)); /* the copy goes through the piods */
    return PIO_OK;
}

/* The next send of l's queue may go: take it off. */
static struct pio_request *pend_pop(struct pio_lane *l)
{
    struct pio_request *r = l->pend;
    l->pend = r->lane_next;
    if (!l->pend)
        l->pend_tail = NULL;
    r->lane_next = NULL;
    return r;
}

static void pend_through_piods(struct pio_request *r)
{
    int rc = pio_send_req_piods(r);
    if (rc != PIO_OK)
        pio_req_complete(r, rc);
}

/* Move l's queue on as far as it can go now (never waits): the fence's
 * outcome, lane messages within the window, a piods' message once the
 * receiver took every lane message before it (then a fence is due again). */
static void lane_pump(struct pio_lane *l)
{
    while (l->pend && !pio_g.closed) {
        if (l->state == LANE_FENCING) {
            if (!l->fence_r->done)
                return;
            int rc = l->fence_r->status;
            free(l->fence_r);
            l->fence_r = NULL;
            if (rc == PIO_OK) {
                l->state = LANE_UP;
                TRACE("lane %llu to %s:%u up\n", (unsigned long long)l->lane_id, l->app, l->proc);
            } else {
                TRACE("lane %llu to %s:%u: fence failed (%s): down\n",
                      (unsigned long long)l->lane_id, l->app, l->proc, PIO_Errname(rc));
                lane_close_fd(l);
                l->state = LANE_DOWN;
            }
            continue;
        }
        if (l->state == LANE_RECOVER)
            return; /* the answer sends what the lane lost first */
        struct pio_request *r = l->pend;
        if (l->state == LANE_DOWN) { /* everything through the piods, in order */
            pend_through_piods(pend_pop(l));
            continue;
        }
        if (r->lane_piods) {
            if (l->acked + 1 < l->next_seq) { /* the lane's messages first */
                if (l->flushed < l->next_seq - 1) {
                    struct pio_frame f = {.type = PIO_F_L_FLUSH, .u.l_ack.seq = l->next_seq - 1};
                    if (lane_write(l, &f) != PIO_OK) {
                        lane_broke(l, "closed");
                        continue;
                    }
                    l->flushed = l->next_seq - 1;
                }
                return;
            }
            if (l->state == LANE_UP)
                l->state = LANE_READY; /* a fence before the next lane message */
            pend_through_piods(pend_pop(l));
            continue;
        }
        if (l->state == LANE_READY) {
            l->state = LANE_FENCING;
            int rc = ctl_send(l->partner, l->proc, CTL_FENCE, l->lane_id, 0, 1, &l->fence_r);
            if (rc != PIO_OK) {
                l->fence_r = NULL;
                lane_close_fd(l);
                l->state = LANE_DOWN;
            }
            continue;
        }
        /* UP: within the window (one message always goes) */
        if (l->copy_bytes && l->copy_bytes + r->size > LANE_WINDOW)
            return;
        pend_pop(l);
        int rc = lane_send_msg(l, r->st.tag, r->st.datatype, r->st.count, r->size, r->sbuf);
        r->next_off = r->size;
        r->copied_all = 1;
        pio_req_complete(r, rc);
    }
}

int pio_lane_submit(struct pio_lane *l, struct pio_request *r)
{
    r->lane_next = NULL;
    if (l->pend_tail)
        l->pend_tail->lane_next = r;
    else
        l->pend = r;
    l->pend_tail = r;
    lane_pump(l);
    return PIO_OK;
}

void pio_lane_pump_all(void)
{
    for (struct pio_lane *l = L.all; l; l = l->next)
        if (l->out && l->pend)
            lane_pump(l);
}

/* l (ours) broke: ask the receiver what it took; the answer sends the rest
 * again (ctl ANSWER). */
static void lane_broke(struct pio_lane *l, const char *why)
{
    if (!l->out) {
        TRACE("lane %llu from %s:%u broke (%s)\n", (unsigned long long)l->lane_id, l->app, l->proc,
              why);
        lane_close_fd(l);
        l->state = LANE_DOWN;
        return;
    }
    if (l->state == LANE_RECOVER || l->state == LANE_DOWN)
        return;
    TRACE("lane %llu to %s:%u broke (%s): %zu bytes to resend at most\n",
          (unsigned long long)l->lane_id, l->app, l->proc, why, l->copy_bytes);
    lane_close_fd(l);
    if (!l->copies) {
        l->state = LANE_DOWN;
        pthread_cond_broadcast(&pio_g.cv);
        return;
    }
    l->state = LANE_RECOVER;
    if (ctl_send(l->partner, l->proc, CTL_QUERY, l->lane_id, 0, 0, NULL) != PIO_OK) {
        l->state = LANE_DOWN; /* the piods are gone too: nothing can go */
        copies_drop_upto(l, UINT64_MAX);
    }
    pthread_cond_broadcast(&pio_g.cv);
}

/* The receiver took every message up to seq: the rest goes through the
 * piods, in order, before anything new. */
static void recover(struct pio_lane *l, uint64_t seq)
{
    copies_drop_upto(l, seq);
    int n = 0;
    while (l->copies) {
        struct lane_copy *c = l->copies;
        l->copies = c->next;
        l->copy_bytes -= c->size;
        if (c->sealed) { /* copies_unseal could not open it (no memory) */
            TRACE("lane %llu to %s:%u: message %llu could not be opened again: lost\n",
                  (unsigned long long)l->lane_id, l->app, l->proc, (unsigned long long)c->seq);
            copy_put(c);
            continue;
        }
        struct replay *x = calloc(1, sizeof(*x));
        struct pio_request *r = NULL;
        int rc = x ? pio_send_internal(l->partner, (int)l->proc, c->tag, c->pay, (size_t)c->count,
                                       c->datatype, c->size, 0, &r)
                   : PIO_ENOMEM;
        if (rc != PIO_OK || !x) {
            free(x);
            copy_put(c);
            continue;
        }
        x->r = r;
        x->c = c;
        x->next = L.replays;
        L.replays = x;
        n++;
    }
    l->copies_tail = NULL;
    TRACE("lane %llu to %s:%u: the receiver took up to %llu; %d sent again through the piods\n",
          (unsigned long long)l->lane_id, l->app, l->proc, (unsigned long long)seq, n);
    l->state = LANE_DOWN;
    lane_pump(l); /* what waited goes through the piods, after them */
    pthread_cond_broadcast(&pio_g.cv);
}

/* ---- the receiver's side ---- */

static void send_ack(struct pio_lane *l)
{
    if (l->rx_acked == l->rx_seq || l->fd < 0)
        return;
    struct pio_frame f = {.type = PIO_F_L_ACK, .u.l_ack.seq = l->rx_seq};
    if (lane_write(l, &f) == PIO_OK) {
        l->rx_acked = l->rx_seq;
        l->rx_unacked_bytes = 0;
    }
}

static void on_lane_msg(struct pio_lane *l, const struct pio_l_msg *m)
{
    if (m->seq != l->rx_seq + 1) {
        lane_broke(l, "a message out of sequence");
        return;
    }
    l->rx_seq = m->seq;
    struct pio_p_msg_new n;
    memset(&n, 0, sizeof(n));
    n.size = m->size;
    n.count = m->count;
    n.src_proc = l->proc;
    n.tag = m->tag;
    n.datatype = m->datatype;
    n.flags = m->flags & (PIO_WF_EAGER | PIO_WF_BIGEND);
    n.src_uid = l->uid;
    n.src_gid = l->gid;
    snprintf(n.src_app, sizeof(n.src_app), "%s", l->app);
    snprintf(n.src_system, sizeof(n.src_system), "%s", l->system);
    snprintf(n.src_user, sizeof(n.src_user), "%s", l->user);
    n.payload = m->payload;
    pio_on_msg_new_lent(&n); /* straight into a waiting receive's buffer */
    l->rx_unacked_bytes += m->size;
    if (l->rx_seq - l->rx_acked >= LANE_ACK_EVERY || l->rx_unacked_bytes >= LANE_ACK_BYTES)
        send_ack(l);
}

static void on_lane_frame(struct pio_lane *l, const uint8_t *fr, size_t len)
{
    if (l->sealed) {
        uint8_t *body = (uint8_t *)(uintptr_t)fr + PIO_WIRE_HDR;
        size_t n = len - PIO_WIRE_HDR;
        if (fr[5] != PIO_F_C_SEALED || n < PIO_WIRE_HDR + PIO_SEAL_TAG ||
            pio_seal_open(&l->si, fr, 12, body, n - PIO_SEAL_TAG, body + n - PIO_SEAL_TAG) != 0) {
            lane_broke(l, "a frame failed its seal check");
            return;
        }
        fr = body;
        len = n - PIO_SEAL_TAG;
    }
    struct pio_frame *f = malloc(sizeof(*f));
    if (!f)
        return;
    if (pio_wire_decode(fr, len, f, NULL) != PIO_OK) {
        free(f);
        lane_broke(l, "a frame that does not decode");
        return;
    }
    if (!l->out && f->type == PIO_F_L_MSG)
        on_lane_msg(l, &f->u.l_msg);
    else if (!l->out && f->type == PIO_F_L_FLUSH)
        send_ack(l);
    else if (l->out && f->type == PIO_F_L_ACK && f->u.l_ack.seq < l->next_seq) {
        if (f->u.l_ack.seq > l->acked)
            l->acked = f->u.l_ack.seq;
        copies_drop_upto(l, l->acked);
        lane_pump(l);
        pthread_cond_broadcast(&pio_g.cv);
    } else {
        lane_broke(l, pio_wire_type_name(f->type));
    }
    free(f);
}

/* Read what l has (every complete frame); closes it on an error. */
/* Bytes of lane messages no receive has taken that a process holds before
 * it stops reading its lanes (TCP then holds their senders back): half its
 * receive region, as its piod holds for it on the piods' path, and at
 * least 4 MiB. */
static uint64_t rx_limit(void)
{
    uint64_t h = pio_g.w.recv_len / 2;
    return h < ((uint64_t)4 << 20) ? (uint64_t)4 << 20 : h;
}

static int rx_full(void)
{
    return L.rx_held >= rx_limit();
}

void pio_lane_held(int64_t delta)
{
    int was = rx_full();
    L.rx_held = (uint64_t)((int64_t)L.rx_held + delta);
    if (was && !rx_full())
        pio_wake_reader(); /* the lanes are read again */
}

/* The complete frames l's buffer holds, as long as the process takes
 * more (an incoming lane stops at the limit, its frames kept). */
static void lane_frames(struct pio_lane *l)
{
    const uint8_t *fr;
    size_t len;
    int rc = PIO_EAGAIN;
    while (l->fd >= 0 && (l->out || !rx_full()) &&
           (rc = pio_fin_next(&l->in, &fr, &len, NULL)) == PIO_OK)
        on_lane_frame(l, fr, len);
    if (l->fd >= 0 && rc != PIO_OK && rc != PIO_EAGAIN)
        lane_broke(l, "bytes that are not frames");
}

/* Read what l has (every complete frame, up to the limit); closes it on an
 * error. */
static void lane_read(struct pio_lane *l)
{
    for (int k = 0; k < 64 && l->fd >= 0; k++) {
        if (!l->out && rx_full())
            return;
        int rc = pio_fin_fill(&l->in, l->fd);
        if (rc == PIO_EAGAIN)
            return;
        if (rc != PIO_OK) {
            lane_broke(l, rc == PIO_ECLOSED ? "the other end closed it" : PIO_Strerror(rc));
            return;
        }
        lane_frames(l);
        if (l->in.drained)
            return;
    }
}

void pio_lane_on_p_lane(const struct pio_p_lane *pl, int fd)
{
    struct pio_lane *l = NULL;
    if (pl->role == 0) {
        for (struct pio_lane *x = L.all; x; x = x->next)
            if (x->out && x->req == pl->req && x->state == LANE_OPENING)
                l = x;
        if (!l || pl->status != PIO_OK || fd < 0) {
            if (l) {
                TRACE("lane to %s:%u refused: %s\n", l->app, l->proc, PIO_Errname(pl->status));
                l->state = LANE_DOWN;
            }
            if (fd >= 0)
                close(fd);
            return;
        }
        l->state = LANE_READY;
    } else {
        if (fd < 0 || pl->status != PIO_OK)
            return;
        l = lane_new(0, pio_partner_by_name(pl->app), pl->proc, pl->app);
        if (!l) {
            close(fd);
            return;
        }
        l->state = LANE_UP;
        l->uid = pl->uid;
        l->gid = pl->gid;
        snprintf(l->user, sizeof(l->user), "%s", pl->user);
        snprintf(l->system, sizeof(l->system), "%s", pl->system);
    }
    l->fd = fd;
    l->lane_id = pl->lane_id;
    l->sealed = pl->sealed != 0;
    if (l->sealed) {
        pio_seal_import(&l->so, (int)pl->cipher, pl->key_out, pl->n_out, l->out ? 0 : 1);
        pio_seal_import(&l->si, (int)pl->cipher, pl->key_in, pl->n_in, l->out ? 1 : 0);
    }
    TRACE("lane %llu %s %s:%u (%s)\n", (unsigned long long)l->lane_id, l->out ? "to" : "from",
          l->app, l->proc, l->sealed ? pio_seal_cipher_name((int)pl->cipher) : "not sealed");
    pthread_cond_broadcast(&pio_g.cv);
}

void pio_lane_on_ctl(const struct pio_p_msg_new *n)
{
    if (!(n->flags & PIO_WF_EAGER) || n->size != 24 || !n->payload)
        return;
    const uint8_t *b = n->payload;
    uint32_t kind = 0;
    uint64_t id = 0, seq = 0;
    for (int i = 3; i >= 0; i--)
        kind = kind << 8 | b[i];
    for (int i = 7; i >= 0; i--) {
        id = id << 8 | b[8 + i];
        seq = seq << 8 | b[16 + i];
    }
    if (kind == CTL_QUERY) { /* the sender lost our lane: say what we took */
        struct pio_lane *l = find_in(n->src_app, n->src_proc, id);
        uint64_t took = 0;
        if (l) {
            if (l->fd >= 0)
                lane_read(l); /* what is here still counts */
            took = l->rx_seq;
            lane_close_fd(l);
            l->state = LANE_DOWN;
        }
        int partner = pio_partner_by_name(n->src_app);
        if (partner >= 0)
            ctl_send(partner, n->src_proc, CTL_ANSWER, id, took, 0, NULL);
    } else if (kind == CTL_ANSWER) {
        int partner = pio_partner_by_name(n->src_app);
        struct pio_lane *l = partner >= 0 ? find_out(partner, n->src_proc) : NULL;
        if (l && l->lane_id == id && l->state == LANE_RECOVER)
            recover(l, seq);
    }
    /* CTL_FENCE: nothing to do; taking it is what the sender waits for */
}

/* ---- the reader ---- */

int pio_lane_poll(struct pollfd *p, int max)
{
    int n = 0;
    for (struct pio_lane *l = L.all; l && n < max; l = l->next)
        if (l->fd >= 0) {
            p[n].fd = l->fd;
            p[n].events =
                (short)(((l->out || !rx_full()) ? POLLIN : 0) | (l->q.head ? POLLOUT : 0));
            p[n].revents = 0;
            n++;
        }
    return n;
}

void pio_lane_io(const struct pollfd *p, int n)
{
    for (int i = 0; i < n; i++) {
        if (!p[i].revents)
            continue;
        struct pio_lane *l;
        for (l = L.all; l && l->fd != p[i].fd; l = l->next)
            ;
        if (!l)
            continue;
        if ((p[i].revents & POLLOUT) && l->q.head && pio_fout_flush(&l->q, l->fd) != PIO_OK) {
            lane_broke(l, "the other end closed it");
            continue;
        }
        if (p[i].revents & (POLLIN | POLLHUP | POLLERR))
            lane_read(l);
    }
    for (struct pio_lane *l = L.all; l && !rx_full(); l = l->next) /* frames kept at the limit */
        if (!l->out && l->fd >= 0 && l->in.len > l->in.start)
            lane_frames(l);
    for (struct pio_lane *l = L.all; l; l = l->next) /* a pass ends: what we took is acked */
        if (!l->out && l->fd >= 0 && l->rx_seq != l->rx_acked &&
            (l->rx_seq - l->rx_acked >= LANE_ACK_EVERY || l->rx_unacked_bytes >= LANE_ACK_BYTES))
            send_ack(l);
}

/* A request of ours (the fence) that may still be on the sends' list: freed
 * once it completes. */
static void reap_later(struct pio_request *r)
{
    struct replay *x = calloc(1, sizeof(*x));
    if (!x)
        return; /* leaked rather than freed while listed */
    x->r = r;
    x->next = L.replays;
    L.replays = x;
}

void pio_lane_left(int partner, uint32_t proc)
{
    for (struct pio_lane *l = L.all; l; l = l->next)
        if (l->partner == partner && l->proc == proc && l->state != LANE_DOWN) {
            lane_close_fd(l);
            copies_drop_upto(l, UINT64_MAX); /* what it did not take is gone with it */
            l->state = LANE_DOWN;
            if (l->fence_r)
                reap_later(l->fence_r);
            l->fence_r = NULL;
            while (l->pend)
                pio_req_complete(pend_pop(l), PIO_EGONE);
        }
    pthread_cond_broadcast(&pio_g.cv);
}

void pio_lane_exit(const struct timespec *dl)
{
    /* every queued send goes, and the receivers take what the lanes carry
     * (or it goes again through the piods) */
    for (;;) {
        int busy = 0;
        pio_lane_pump_all();
        for (struct pio_lane *l = L.all; l; l = l->next) {
            if (!l->out)
                continue;
            if (l->pend || l->state == LANE_RECOVER)
                busy = 1;
            if ((l->state == LANE_UP || l->state == LANE_READY) && l->acked + 1 < l->next_seq &&
                l->fd >= 0) {
                busy = 1;
                if (l->flushed < l->next_seq - 1) {
                    struct pio_frame f = {.type = PIO_F_L_FLUSH, .u.l_ack.seq = l->next_seq - 1};
                    if (lane_write(l, &f) != PIO_OK)
                        lane_broke(l, "closed at exit");
                    l->flushed = l->next_seq - 1;
                }
            }
        }
        if (!busy || pio_g.closed || pio_wait_until(dl) == PIO_ETIMEDOUT)
            break;
    }
    for (struct pio_lane *l = L.all; l; l = l->next) {
        while (l->pend)
            pio_req_complete(pend_pop(l), PIO_ECANCELED);
        if (l->fence_r)
            reap_later(l->fence_r);
        l->fence_r = NULL;
    }
    /* replayed messages: their bytes into the pool (sends then complete) */
    for (;;) {
        replays_reap();
        if (!L.replays || pio_g.closed || pio_wait_until(dl) == PIO_ETIMEDOUT)
            break;
    }
    while (L.all) {
        struct pio_lane *l = L.all;
        L.all = l->next;
        lane_close_fd(l);
        copies_drop_upto(l, UINT64_MAX);
        pio_fin_fini(&l->in);
        free(l->wbuf);
        free(l);
    }
    while (L.spare) {
        struct lane_copy *c = L.spare;
        L.spare = c->next;
        free(c);
    }
    L.spare_bytes = 0;
    L.nspare = 0;
}

void pio_lane_count(int *out, int *in)
{
    *out = *in = 0;
    for (struct pio_lane *l = L.all; l; l = l->next)
        if (l->state == LANE_UP)
            (*(l->out ? out : in))++;
}
