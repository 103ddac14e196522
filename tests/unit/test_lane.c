/* test_lane.c - the numbered H_* stream (piod/lane.c): once, in order, whatever the paths do.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A sender's piod_lseq and a receiver's are joined by a simulated network
 * that loses, duplicates and reorders H_SEQ frames (as a reset express lane
 * and ZeroMQ beside it can); the sender sends everything again when the
 * resend clock says so. Whatever the network does, the receiver hands on
 * every frame exactly once, in number order, and the acks free what the
 * sender kept. */
#include "piod/lane.h"
#include "common/err.h"
#include "common/wire/wire.h"
#include "tests/lib/unit.h"

#define N_MSG 3000

static uint64_t rnd_state = 0x243F6A8885A308D3ull;
static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

/* inner frame i: an H_DONE whose msgid is i */
static size_t inner_frame(uint64_t i, uint8_t *buf, size_t cap)
{
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_H_DONE;
    f.u.h_done.msgid = i;
    size_t len = 0;
    assert_int_equal(pio_wire_encode(&f, buf, cap, &len), PIO_OK);
    return len;
}

struct sink {
    uint64_t next; /* msgid expected next */
    uint64_t got;
};

static void deliver(void *arg, const uint8_t *inner, size_t len)
{
    struct sink *s = arg;
    struct pio_frame f;
    assert_int_equal(pio_wire_decode(inner, len, &f, NULL), PIO_OK);
    assert_int_equal(f.type, PIO_F_H_DONE);
    assert_int_equal(f.u.h_done.msgid, s->next); /* once, in order */
    s->next++;
    s->got++;
}

/* A frame on the simulated network: a copy of an H_SEQ. */
struct wire_copy {
    uint8_t *b;
    size_t len;
};

static void net_put(struct wire_copy *net, size_t *n, const struct piod_lseq_ent *e)
{
    net[*n].b = malloc(e->len);
    assert_non_null(net[*n].b);
    memcpy(net[*n].b, e->frame, e->len);
    net[*n].len = e->len;
    (*n)++;
}

static void rx_one(struct piod_lseq *r, const struct wire_copy *c, uint64_t my_epoch,
                   uint64_t peer_epoch, struct sink *s)
{
    struct pio_frame f;
    assert_int_equal(pio_wire_decode(c->b, c->len, &f, NULL), PIO_OK);
    assert_int_equal(f.type, PIO_F_H_SEQ);
    assert_int_equal(f.u.h_seq.src_epoch, peer_epoch);
    assert_int_equal(f.u.h_seq.dst_epoch, my_epoch);
    piod_lseq_rx(r, f.u.h_seq.seq, f.u.h_seq.inner, f.u.h_seq.len, deliver, s);
}

/* Loss, duplicates and reordering, with resends on the clock. */
static void test_lossy_network_delivers_once_in_order(void **state)
{
    (void)state;
    struct piod_lseq snd, rcv;
    piod_lseq_init(&snd);
    piod_lseq_init(&rcv);
    piod_lseq_reset(&snd, 0xB0B, NULL, NULL);
    piod_lseq_reset(&rcv, 0xA11CE, NULL, NULL);
    size_t cap = 4 * N_MSG + 64;
    struct wire_copy *net = calloc(cap, sizeof(*net));
    assert_non_null(net);
    size_t n = 0;
    struct sink s = {.next = 1};
    uint8_t buf[256];
    uint64_t now = 1000, sent = 0;
    int rounds = 0;
    while (s.got < N_MSG) {
        assert_true(++rounds < 100000);
        /* send a few new ones */
        for (int k = 0; k < 8 && sent < N_MSG && n + 8 < cap; k++) {
            struct piod_lseq_ent *e;
            size_t len = inner_frame(++sent, buf, sizeof(buf));
            assert_int_equal(piod_lseq_wrap(&snd, 0xA11CE, buf, len, -1, 0, now, &e), PIO_OK);
            if (rnd() % 10 != 0) /* 10 % lost */
                net_put(net, &n, e);
        }
        now += 10;
        /* the resend clock: everything kept goes again (into the network) */
        if (piod_lseq_resend_due(&snd, now))
            for (struct piod_lseq_ent *e = snd.head; e && n + 1 < cap; e = e->next)
                if (rnd() % 4 != 0)
                    net_put(net, &n, e);
        /* the network hands over some frames in any order, some twice */
        size_t take = n ? 1 + rnd() % n : 0;
        for (size_t k = 0; k < take && n > 0; k++) {
            size_t i = rnd() % n;
            rx_one(&rcv, &net[i], 0xB0B, 0xA11CE, &s);
            if (rnd() % 8 == 0)
                continue; /* a duplicate stays in the network */
            free(net[i].b);
            net[i] = net[--n];
        }
        /* the receiver's ack (sometimes lost) */
        uint64_t ack = piod_lseq_ack_due(&rcv, 1);
        if (ack && rnd() % 5 != 0) {
            piod_lseq_acked(&snd, ack, now);
            piod_lseq_ack_told(&rcv, ack);
        }
    }
    assert_int_equal(s.got, N_MSG);
    assert_true(rcv.dups > 0); /* the network did duplicate */
    /* the last acks free everything */
    piod_lseq_acked(&snd, rcv.rx_next - 1, now);
    assert_null(snd.head);
    assert_int_equal(snd.unacked_n, 0);
    assert_int_equal(snd.unacked_bytes, 0);
    for (size_t i = 0; i < n; i++) { /* late copies: all dropped */
        uint64_t before = s.got;
        rx_one(&rcv, &net[i], 0xB0B, 0xA11CE, &s);
        assert_int_equal(s.got, before);
        free(net[i].b);
    }
    free(net);
    piod_lseq_fini(&snd);
    piod_lseq_fini(&rcv);
}

static void test_ack_rules(void **state)
{
    (void)state;
    struct piod_lseq l;
    piod_lseq_init(&l);
    piod_lseq_reset(&l, 7, NULL, NULL);
    uint8_t buf[256];
    struct piod_lseq_ent *e;
    for (uint64_t i = 1; i <= 5; i++)
        assert_int_equal(piod_lseq_wrap(&l, 9, buf, inner_frame(i, buf, sizeof(buf)), -1, 0, 0, &e),
                         PIO_OK);
    assert_int_equal(l.unacked_n, 5);
    assert_int_equal(piod_lseq_acked(&l, 9, 1), 0); /* beyond what was sent: ignored */
    assert_int_equal(piod_lseq_acked(&l, 3, 1), 3);
    assert_int_equal(piod_lseq_acked(&l, 2, 1), 0); /* older: nothing */
    assert_int_equal(l.head->seq, 4);
    /* the resend clock: rto, then doubled, reset by an ack that moves */
    assert_false(piod_lseq_resend_due(&l, 1 + PIOD_LSEQ_RTO_MS - 1));
    assert_true(piod_lseq_resend_due(&l, 1 + PIOD_LSEQ_RTO_MS));
    assert_int_equal(l.rto_ms, 2 * PIOD_LSEQ_RTO_MS);
    assert_false(piod_lseq_resend_due(&l, 1 + 2 * PIOD_LSEQ_RTO_MS));
    piod_lseq_acked(&l, 4, 5000);
    assert_int_equal(l.rto_ms, PIOD_LSEQ_RTO_MS);
    /* receiving: acks are due after PIOD_LSEQ_ACK_EVERY frames, or forced */
    struct sink s = {.next = 1};
    for (uint64_t i = 1; i < PIOD_LSEQ_ACK_EVERY; i++) {
        size_t len = inner_frame(i, buf, sizeof(buf));
        assert_int_equal(piod_lseq_rx(&l, i, buf, len, deliver, &s), PIOD_LSEQ_DELIVERED);
    }
    assert_int_equal(piod_lseq_ack_due(&l, 0), 0);
    assert_int_equal(piod_lseq_ack_due(&l, 1), PIOD_LSEQ_ACK_EVERY - 1);
    size_t len = inner_frame(PIOD_LSEQ_ACK_EVERY, buf, sizeof(buf));
    piod_lseq_rx(&l, PIOD_LSEQ_ACK_EVERY, buf, len, deliver, &s);
    assert_int_equal(piod_lseq_ack_due(&l, 0), PIOD_LSEQ_ACK_EVERY);
    piod_lseq_ack_told(&l, PIOD_LSEQ_ACK_EVERY);
    assert_int_equal(piod_lseq_ack_due(&l, 1), 0);
    piod_lseq_fini(&l);
}

/* Early frames wait; the hold has a bound; a frame already had is dropped. */
static void test_hold(void **state)
{
    (void)state;
    struct piod_lseq l;
    piod_lseq_init(&l);
    uint8_t buf[256];
    struct sink s = {.next = 1};
    for (uint64_t i = 3; i >= 2; i--) {
        size_t len = inner_frame(i, buf, sizeof(buf));
        assert_int_equal(piod_lseq_rx(&l, i, buf, len, deliver, &s), PIOD_LSEQ_HELD);
    }
    size_t len = inner_frame(3, buf, sizeof(buf));
    assert_int_equal(piod_lseq_rx(&l, 3, buf, len, deliver, &s), PIOD_LSEQ_DUP);
    len = inner_frame(PIOD_LSEQ_HOLD + 1, buf, sizeof(buf));
    assert_int_equal(piod_lseq_rx(&l, PIOD_LSEQ_HOLD + 1, buf, len, deliver, &s),
                     PIOD_LSEQ_DROPPED);
    assert_int_equal(s.got, 0);
    len = inner_frame(1, buf, sizeof(buf));
    assert_int_equal(piod_lseq_rx(&l, 1, buf, len, deliver, &s), PIOD_LSEQ_DELIVERED);
    assert_int_equal(s.got, 3); /* 1, then the held 2 and 3 */
    assert_int_equal(l.held_n, 0);
    assert_int_equal(l.held_bytes, 0);
    assert_int_equal(piod_lseq_rx(&l, 2, buf, len, deliver, &s), PIOD_LSEQ_DUP);
    piod_lseq_fini(&l);
}

struct lost_count {
    int frames, eager;
    uint64_t sids;
};

static void on_lost(void *arg, const struct piod_lseq_ent *e)
{
    struct lost_count *c = arg;
    c->frames++;
    if (e->src >= 0) {
        c->eager++;
        c->sids += e->sid;
    }
}

/* A new run of the peer: what it never acknowledged is reported, and both
 * directions number afresh for the new run. */
static void test_reset_reports_lost(void **state)
{
    (void)state;
    struct piod_lseq l;
    piod_lseq_init(&l);
    piod_lseq_reset(&l, 11, NULL, NULL);
    uint8_t buf[256];
    struct piod_lseq_ent *e;
    for (uint64_t i = 1; i <= 4; i++)
        assert_int_equal(piod_lseq_wrap(&l, 9, buf, inner_frame(i, buf, sizeof(buf)),
                                        i % 2 ? 3 : -1, 100 + i, 0, &e),
                         PIO_OK);
    piod_lseq_acked(&l, 1, 0);
    struct sink s = {.next = 1};
    size_t len = inner_frame(1, buf, sizeof(buf));
    piod_lseq_rx(&l, 1, buf, len, deliver, &s);
    struct lost_count c = {0};
    piod_lseq_reset(&l, 12, on_lost, &c);
    assert_int_equal(c.frames, 3); /* 2, 3, 4 */
    assert_int_equal(c.eager, 1);  /* 3 carried an eager message */
    assert_int_equal(c.sids, 103);
    assert_int_equal(l.peer_epoch, 12);
    assert_int_equal(l.tx_next, 1);
    assert_int_equal(l.rx_next, 1);
    assert_null(l.head);
    assert_int_equal(piod_lseq_wrap(&l, 9, buf, len, -1, 0, 0, &e), PIO_OK);
    assert_int_equal(e->seq, 1);
    piod_lseq_fini(&l);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_lossy_network_delivers_once_in_order),
    cmocka_unit_test(test_ack_rules),
    cmocka_unit_test(test_hold),
    cmocka_unit_test(test_reset_reports_lost),
};
PIO_UNIT_MAIN(tests)
