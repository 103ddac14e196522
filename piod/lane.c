/* lane.c - the numbered, acknowledged stream of H_* frames to one peer piod.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Sending keeps a FIFO of encoded H_SEQ frames (oldest first) until a
 * cumulative ack covers them. Receiving keeps rx_next and a ring of
 * PIOD_LSEQ_HOLD slots (indexed by seq % PIOD_LSEQ_HOLD) for frames that
 * came before an earlier one. Contract and use: lane.h. Main thread only.
 */
#include "lane.h"
#include "err.h"
#include "wire/wire.h"

#include <stdlib.h>
#include <string.h>

void piod_lseq_init(struct piod_lseq *l)
{
    memset(l, 0, sizeof(*l));
    l->tx_next = 1;
    l->rx_next = 1;
    l->rto_ms = PIOD_LSEQ_RTO_MS;
}

static void lseq_drop_held(struct piod_lseq *l)
{
    if (l->held)
        for (size_t i = 0; i < PIOD_LSEQ_HOLD; i++) {
            free(l->held[i].inner);
            l->held[i] = (struct piod_lseq_held){0};
        }
    l->held_n = l->held_bytes = 0;
}

void piod_lseq_reset(struct piod_lseq *l, uint64_t peer_epoch,
                     void (*lost)(void *arg, const struct piod_lseq_ent *e), void *arg)
{
    while (l->head) {
        struct piod_lseq_ent *e = l->head;
        l->head = e->next;
        if (lost)
            lost(arg, e);
        if (l->freed)
            l->freed(l->freed_arg, e);
        free(e);
    }
    struct piod_lseq_held *held = l->held;
    lseq_drop_held(l);
    uint64_t resent = l->resent, dups = l->dups, stale = l->stale, hd = l->held_dropped,
             lostn = l->lost;
    void (*freed)(void *, const struct piod_lseq_ent *) = l->freed;
    void *freed_arg = l->freed_arg;
    piod_lseq_init(l);
    l->freed = freed;
    l->freed_arg = freed_arg;
    l->held = held;
    l->peer_epoch = peer_epoch;
    l->resent = resent;
    l->dups = dups;
    l->stale = stale;
    l->held_dropped = hd;
    l->lost = lostn;
}

struct piod_lseq_ent *piod_lseq_new(size_t inner_cap)
{
    if (inner_cap > PIO_WIRE_MAX_BODY)
        return NULL;
    struct piod_lseq_ent *e = malloc(sizeof(*e) + PIO_WIRE_SEQ_HDR + inner_cap);
    if (e) {
        e->len = PIO_WIRE_SEQ_HDR + inner_cap; /* the room, until pushed */
        e->owner = -1;
    }
    return e;
}

int piod_lseq_push(struct piod_lseq *l, struct piod_lseq_ent *e, uint64_t my_epoch,
                   size_t inner_len, int src, uint64_t sid, uint64_t now)
{
    if (inner_len > UINT32_MAX) {
        free(e);
        return PIO_EINVAL;
    }
    struct pio_h_seq h = {.src_epoch = my_epoch,
                          .dst_epoch = l->peer_epoch,
                          .seq = l->tx_next,
                          .ack = l->rx_next - 1,
                          .len = (uint32_t)inner_len};
    int rc = pio_wire_seq_wrap(e->frame, e->len, &h, &e->len);
    if (rc != PIO_OK) {
        free(e);
        return rc;
    }
    e->next = NULL;
    e->seq = l->tx_next++;
    e->sent_ms = 0;
    e->via = PIOD_VIA_NONE;
    e->src = src;
    e->sid = sid;
    if (!l->head) {
        l->head = e;
        l->progress_ms = now; /* the resend clock starts with the first frame kept */
        l->ack_ms = now;
    } else {
        l->tail->next = e;
    }
    l->tail = e;
    l->unacked_n++;
    l->unacked_bytes += e->len;
    /* the ack rides in this frame too, but ack_told is left alone: the
     * frame may wait behind others, and a standalone H_ACK costs little */
    return PIO_OK;
}

int piod_lseq_wrap(struct piod_lseq *l, uint64_t my_epoch, const uint8_t *inner, size_t len,
                   int src, uint64_t sid, uint64_t now, struct piod_lseq_ent **out)
{
    struct piod_lseq_ent *e = piod_lseq_new(len);
    if (!e)
        return len > PIO_WIRE_MAX_BODY ? PIO_EINVAL : PIO_ENOMEM;
    memcpy(piod_lseq_inner(e), inner, len);
    int rc = piod_lseq_push(l, e, my_epoch, len, src, sid, now);
    if (rc == PIO_OK)
        *out = e;
    return rc;
}

size_t piod_lseq_acked(struct piod_lseq *l, uint64_t ack, uint64_t now)
{
    if (ack <= l->tx_acked || ack >= l->tx_next)
        return 0;
    size_t n = 0;
    while (l->head && l->head->seq <= ack) {
        struct piod_lseq_ent *e = l->head;
        l->head = e->next;
        l->unacked_n--;
        l->unacked_bytes -= e->len;
        if (l->freed)
            l->freed(l->freed_arg, e);
        free(e);
        n++;
    }
    if (!l->head)
        l->tail = NULL;
    l->tx_acked = ack;
    l->progress_ms = now;
    l->ack_ms = now;
    l->wd_tripped = 0;
    l->rto_ms = PIOD_LSEQ_RTO_MS;
    return n;
}

int piod_lseq_rx(struct piod_lseq *l, uint64_t seq, const uint8_t *inner, size_t len,
                 void (*deliver)(void *arg, const uint8_t *inner, size_t len), void *arg)
{
    if (seq < l->rx_next) {
        l->dups++;
        return PIOD_LSEQ_DUP;
    }
    if (seq > l->rx_next) {
        if (seq - l->rx_next >= PIOD_LSEQ_HOLD || l->held_bytes + len > PIOD_LSEQ_HOLD_MAX) {
            l->held_dropped++;
            return PIOD_LSEQ_DROPPED;
        }
        if (!l->held && !(l->held = calloc(PIOD_LSEQ_HOLD, sizeof(*l->held)))) {
            l->held_dropped++;
            return PIOD_LSEQ_DROPPED;
        }
        struct piod_lseq_held *h = &l->held[seq % PIOD_LSEQ_HOLD];
        if (h->seq == seq) {
            l->dups++;
            return PIOD_LSEQ_DUP;
        }
        uint8_t *copy = malloc(len ? len : 1);
        if (!copy) {
            l->held_dropped++;
            return PIOD_LSEQ_DROPPED;
        }
        memcpy(copy, inner, len);
        /* the slot can hold only a frame below rx_next + PIOD_LSEQ_HOLD, so
         * whatever it held is older than rx_next: already handed on */
        free(h->inner);
        if (h->seq)
            l->held_n--, l->held_bytes -= h->len;
        *h = (struct piod_lseq_held){.seq = seq, .len = (uint32_t)len, .inner = copy};
        l->held_n++;
        l->held_bytes += len;
        return PIOD_LSEQ_HELD;
    }
    l->rx_next++;
    l->rx_bytes_unacked += len;
    deliver(arg, inner, len);
    while (l->held_n > 0) {
        struct piod_lseq_held *h = &l->held[l->rx_next % PIOD_LSEQ_HOLD];
        if (h->seq != l->rx_next)
            break;
        struct piod_lseq_held take = *h;
        *h = (struct piod_lseq_held){0};
        l->held_n--;
        l->held_bytes -= take.len;
        l->rx_next++;
        l->rx_bytes_unacked += take.len;
        deliver(arg, take.inner, take.len);
        free(take.inner);
    }
    return PIOD_LSEQ_DELIVERED;
}

uint64_t piod_lseq_ack_due(const struct piod_lseq *l, int force)
{
    uint64_t have = l->rx_next - 1;
    if (have <= l->ack_told)
        return 0;
    if (force || have - l->ack_told >= PIOD_LSEQ_ACK_EVERY ||
        l->rx_bytes_unacked >= PIOD_LSEQ_ACK_BYTES)
        return have;
    return 0;
}

void piod_lseq_ack_told(struct piod_lseq *l, uint64_t ack)
{
    if (ack > l->ack_told)
        l->ack_told = ack;
    l->rx_bytes_unacked = 0;
}

int piod_lseq_resend_due(struct piod_lseq *l, uint64_t now)
{
    if (!l->head || now - l->progress_ms < l->rto_ms)
        return 0;
    l->progress_ms = now;
    l->rto_ms = l->rto_ms * 2 > PIOD_LSEQ_RTO_MAX ? PIOD_LSEQ_RTO_MAX : l->rto_ms * 2;
    return 1;
}

void piod_lseq_fini(struct piod_lseq *l)
{
    piod_lseq_reset(l, 0, NULL, NULL);
    free(l->held);
    l->held = NULL;
}
