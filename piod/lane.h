/* lane.h - the numbered, acknowledged stream of H_* frames to one peer piod.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Every H_* frame but H_HELLO travels inside an H_SEQ that numbers it within
 * one pair of runs (our epoch, the peer's epoch): 1, 2, ... The sender keeps
 * each H_SEQ until the peer's cumulative acknowledgement (H_ACK, or the ack
 * field of the peer's own H_SEQ) covers it, and sends it again after the
 * express lane failed or when no acknowledgement came for a while; it may go
 * on the express lane or on the ZeroMQ control plane, the two can overtake
 * each other, and either can lose what it held when it breaks. The receiver
 * hands the inner frames on strictly in number order, holds those that came
 * early, and drops those it already has. So within a pair of runs every
 * frame is delivered once, in order, whatever broke in between; a new epoch
 * (the peer restarted) is the only place where frames can be lost, and there
 * the caller learns which (piod_lseq_reset's callback).
 *
 * No I/O here: core.c encodes, sends and decodes. Thread-safety: main thread
 * only (like every piod_peer_st field); no locks.
 */
#ifndef PIOD_LANE_H
#define PIOD_LANE_H

#include "wire/wire.h"

#include <stddef.h>
#include <stdint.h>

#define PIOD_LSEQ_HOLD      4096         /* frames that may wait for an earlier one */
#define PIOD_LSEQ_HOLD_MAX  (64u << 20)  /* ... and their bytes */
#define PIOD_LSEQ_RTO_MS    500          /* first resend after this long without an ack */
#define PIOD_LSEQ_RTO_MAX   8000         /* resends back off up to this */
#define PIOD_LSEQ_ACK_EVERY 32           /* frames received before an ack goes at once */
#define PIOD_LSEQ_ACK_BYTES (256u << 10) /* ... or bytes */

enum piod_via { PIOD_VIA_NONE = 0, PIOD_VIA_LANE = 1, PIOD_VIA_ZMQ = 2 };

/* One numbered frame kept until acknowledged. */
struct piod_lseq_ent {
    struct piod_lseq_ent *next;
    uint64_t seq;
    uint64_t sent_ms; /* last time it went out (0: it never did) */
    int via;          /* enum piod_via of that last time */
    int src;          /* an eager message that waits for no outcome: its process (-1: none) */
    int owner;        /* the process whose message it carries (-1: the piod's own frame) */
    uint64_t sid;     /* ... and its send id */
    size_t len;
    uint8_t frame[]; /* the whole encoded H_SEQ */
};

struct piod_lseq_held {
    uint64_t seq; /* 0: free */
    uint32_t len;
    uint8_t *inner;
};

struct piod_lseq {
    uint64_t peer_epoch; /* the peer run we number for (0: none known yet) */
    /* sending */
    uint64_t tx_next;  /* number of the next frame */
    uint64_t tx_acked; /* the peer has every frame up to this one */
    struct piod_lseq_ent *head, *tail;
    size_t unacked_n, unacked_bytes;
    uint64_t progress_ms; /* last ack that moved (or the first frame after idle) */
    uint64_t ack_ms;      /* the same, untouched by the resend clock (the lane watchdog) */
    int wd_tripped;       /* the lane watchdog fired; again only after an ack */
    uint64_t rto_ms;
    /* receiving */
    uint64_t rx_next; /* number we hand on next */
    struct piod_lseq_held *held;
    size_t held_n, held_bytes;
    uint64_t ack_told;       /* the highest ack we sent */
    size_t rx_bytes_unacked; /* bytes handed on since that ack */
    /* counters (piod_dump, P_INFO) */
    uint64_t resent, dups, stale, held_dropped, lost;
    /* called for every kept entry as it is freed (acked, or dropped by a
     * reset), before the free; kept across resets; NULL: none */
    void (*freed)(void *arg, const struct piod_lseq_ent *e);
    void *freed_arg;
};

/* piod_lseq_init - an empty stream (no epoch known). */
void piod_lseq_init(struct piod_lseq *l);

/* piod_lseq_reset - start numbering for the peer's run peer_epoch (0: none):
 * every kept frame is dropped, and lost(arg, e) is called for each first
 * (before it is freed; e is not kept); held frames are dropped. lost may be
 * NULL. Used at a new hello (the peer restarted) and at shutdown. */
void piod_lseq_reset(struct piod_lseq *l, uint64_t peer_epoch,
                     void (*lost)(void *arg, const struct piod_lseq_ent *e), void *arg);

/* piod_lseq_new - an entry with room for an encoded frame of up to
 * inner_cap bytes at piod_lseq_inner(e), to be filled and then pushed (or
 * freed with free()); e->owner is -1 until the caller says otherwise.
 * NULL: out of memory, or inner_cap over a body. */
struct piod_lseq_ent *piod_lseq_new(size_t inner_cap);

/* piod_lseq_inner - where e's frame goes (after the H_SEQ header). */
static inline uint8_t *piod_lseq_inner(struct piod_lseq_ent *e)
{
    return e->frame + PIO_WIRE_SEQ_HDR;
}

/* piod_lseq_push - number e, whose inner_len bytes at piod_lseq_inner(e)
 * hold one encoded H_* frame, wrap it in its H_SEQ (no copy) and keep it.
 * src/sid as for piod_lseq_wrap. On success l owns e; on failure e is
 * freed. Returns PIO_OK or PIO_EINVAL. */
int piod_lseq_push(struct piod_lseq *l, struct piod_lseq_ent *e, uint64_t my_epoch,
                   size_t inner_len, int src, uint64_t sid, uint64_t now);

/* piod_lseq_wrap - number inner[0..len) (one encoded H_* frame) and keep it.
 * my_epoch: our run. src/sid: the eager message it carries that waits for no
 * outcome (src -1 otherwise). now: for the resend clock. *out [out]: the
 * kept entry (owned by l; send e->frame[0..e->len)).
 * Returns PIO_OK, PIO_ENOMEM, or PIO_EINVAL (inner too big for a frame). */
int piod_lseq_wrap(struct piod_lseq *l, uint64_t my_epoch, const uint8_t *inner, size_t len,
                   int src, uint64_t sid, uint64_t now, struct piod_lseq_ent **out);

/* piod_lseq_acked - the peer has every frame up to ack: free those.
 * Returns how many were freed. An ack beyond what we sent is ignored
 * (returns 0). */
size_t piod_lseq_acked(struct piod_lseq *l, uint64_t ack, uint64_t now);

/* Outcome of piod_lseq_rx. */
enum { PIOD_LSEQ_DELIVERED = 0, PIOD_LSEQ_DUP = 1, PIOD_LSEQ_HELD = 2, PIOD_LSEQ_DROPPED = 3 };

/* piod_lseq_rx - frame number seq (inner[0..len)) arrived. In order: it and
 * every held frame that follows it are handed to deliver(arg, inner, len),
 * in number order. Early: it is copied and held (or dropped when the hold is
 * full: the sender sends it again). Already had: dropped. deliver may send
 * (piod_lseq_wrap on the same l) but must not reset l. */
int piod_lseq_rx(struct piod_lseq *l, uint64_t seq, const uint8_t *inner, size_t len,
                 void (*deliver)(void *arg, const uint8_t *inner, size_t len), void *arg);

/* piod_lseq_ack_due - the ack to send now, or 0 when none is due. force:
 * send whatever moved since the last one (the tick); otherwise only after
 * PIOD_LSEQ_ACK_EVERY frames or PIOD_LSEQ_ACK_BYTES bytes. */
uint64_t piod_lseq_ack_due(const struct piod_lseq *l, int force);

/* piod_lseq_ack_told - ack went to the peer (H_ACK or a piggyback). */
void piod_lseq_ack_told(struct piod_lseq *l, uint64_t ack);

/* piod_lseq_resend_due - whether the kept frames should go again now (no
 * ack moved for rto_ms); if so the clock restarts with a doubled rto. */
int piod_lseq_resend_due(struct piod_lseq *l, uint64_t now);

/* piod_lseq_fini - free everything (no callbacks). */
void piod_lseq_fini(struct piod_lseq *l);

#endif
