/* test_seal.c - sealed data channels (piod/seal.h): keys, nonces, tampering.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Both ends derive the same key from the proof's inputs and nothing else
 * gives it; a payload, its header (associated data), its tag, its order and
 * its direction are each protected: change any one and the receiver refuses.
 */
#include "piod/seal.h"
#include "tests/lib/unit.h"

#include <sodium.h>

static uint8_t chan_key[32], challenge[32];

static void pair(struct piod_seal *tx, struct piod_seal *rx, int ack)
{
    assert_true(sodium_init() >= 0);
    for (int i = 0; i < 32; i++)
        chan_key[i] = (uint8_t)(i * 7 + 1), challenge[i] = (uint8_t)(255 - i);
    piod_seal_init(tx, chan_key, challenge, 3, "sysA", ack);
    piod_seal_init(rx, chan_key, challenge, 3, "sysA", ack);
}

static void test_roundtrip_in_order(void **state)
{
    (void)state;
    struct piod_seal tx, rx;
    pair(&tx, &rx, 0);
    static uint8_t src[1 << 16], wire[1 << 16];
    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (uint8_t)(i * 31 + 5);
    for (int k = 0; k < 50; k++) {
        uint8_t ad[20], tag[PIOD_SEAL_TAG];
        size_t len = (size_t)(k * 1237) % sizeof(src);
        piod_seal_chunk_ad(ad, 42, (uint64_t)k * 65536, (uint32_t)len);
        piod_seal_data(&tx, ad, sizeof(ad), src, wire, len, tag);
        if (len > 16)
            assert_memory_not_equal(wire, src, len); /* really encrypted */
        assert_int_equal(piod_seal_open(&rx, ad, sizeof(ad), wire, len, tag), 0);
        assert_memory_equal(wire, src, len);
    }
    /* the source is never written (it stays in the pool for a resend) */
    for (size_t i = 0; i < sizeof(src); i++)
        assert_int_equal(src[i], (uint8_t)(i * 31 + 5));
}

static void test_tampering_refused(void **state)
{
    (void)state;
    uint8_t src[256], wire[256], ad[20], tag[PIOD_SEAL_TAG];
    memset(src, 'x', sizeof(src));
    for (int what = 0; what < 4; what++) {
        struct piod_seal tx, rx;
        pair(&tx, &rx, 0);
        piod_seal_chunk_ad(ad, 7, 0, sizeof(src));
        piod_seal_data(&tx, ad, sizeof(ad), src, wire, sizeof(src), tag);
        switch (what) {
        case 0: wire[100] ^= 1; break; /* a payload byte */
        case 1: ad[8] ^= 1; break;     /* the chunk's offset in the header */
        case 2: tag[0] ^= 1; break;    /* the tag */
        case 3: break;                 /* untouched: must open */
        }
        assert_int_equal(piod_seal_open(&rx, ad, sizeof(ad), wire, sizeof(src), tag),
                         what == 3 ? 0 : -1);
    }
}

static void test_replay_and_reorder_refused(void **state)
{
    (void)state;
    struct piod_seal tx, rx;
    pair(&tx, &rx, 0);
    uint8_t a[64], b[64], wa[64], wb[64], ta[PIOD_SEAL_TAG], tb[PIOD_SEAL_TAG], ad[20];
    memset(a, 'a', sizeof(a));
    memset(b, 'b', sizeof(b));
    piod_seal_chunk_ad(ad, 1, 0, 64);
    piod_seal_data(&tx, ad, sizeof(ad), a, wa, 64, ta);
    piod_seal_data(&tx, ad, sizeof(ad), b, wb, 64, tb);
    /* the second chunk first: its nonce is not the one the receiver expects */
    assert_int_equal(piod_seal_open(&rx, ad, sizeof(ad), wb, 64, tb), -1);
    /* a replay of a chunk already opened */
    struct piod_seal rx2;
    piod_seal_init(&rx2, chan_key, challenge, 3, "sysA", 0);
    uint8_t copy[64];
    memcpy(copy, wa, sizeof(copy));
    assert_int_equal(piod_seal_open(&rx2, ad, sizeof(ad), wa, 64, ta), 0);
    assert_int_equal(piod_seal_open(&rx2, ad, sizeof(ad), copy, 64, ta), -1);
}

static void test_keys_differ(void **state)
{
    (void)state;
    struct piod_seal base, other, ack;
    pair(&base, &other, 0);
    uint8_t c2[32];
    memcpy(c2, challenge, sizeof(c2));
    c2[31] ^= 1;
    piod_seal_init(&other, chan_key, c2, 3, "sysA", 0); /* another connection */
    assert_memory_not_equal(base.key, other.key, PIOD_SEAL_KEY);
    piod_seal_init(&other, chan_key, challenge, 4, "sysA", 0); /* another index */
    assert_memory_not_equal(base.key, other.key, PIOD_SEAL_KEY);
    piod_seal_init(&other, chan_key, challenge, 3, "sysB", 0); /* another system */
    assert_memory_not_equal(base.key, other.key, PIOD_SEAL_KEY);
    /* the two directions share the key but never a nonce: a C_DATA sealed
     * one way does not open as the other direction's message */
    piod_seal_init(&ack, chan_key, challenge, 3, "sysA", 1);
    uint8_t m[32] = {0}, w[32], tag[PIOD_SEAL_TAG], ad[20] = {0};
    piod_seal_data(&base, ad, sizeof(ad), m, w, sizeof(m), tag);
    assert_int_equal(piod_seal_open(&ack, ad, sizeof(ad), w, sizeof(m), tag), -1);
}

/* a C_ACK: a tag over the frame alone (no payload; NULL buffers) */
static void test_ack_tag(void **state)
{
    (void)state;
    struct piod_seal tx, rx;
    pair(&tx, &rx, 1);
    uint8_t frame[48], tag[PIOD_SEAL_TAG];
    for (size_t i = 0; i < sizeof(frame); i++)
        frame[i] = (uint8_t)i;
    piod_seal_data(&tx, frame, sizeof(frame), NULL, NULL, 0, tag);
    assert_int_equal(piod_seal_open(&rx, frame, sizeof(frame), NULL, 0, tag), 0);
    piod_seal_data(&tx, frame, sizeof(frame), NULL, NULL, 0, tag);
    frame[20] ^= 0x40; /* an acknowledged offset changed on the way */
    assert_int_equal(piod_seal_open(&rx, frame, sizeof(frame), NULL, 0, tag), -1);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_ack_tag),           cmocka_unit_test(test_roundtrip_in_order),
    cmocka_unit_test(test_tampering_refused), cmocka_unit_test(test_replay_and_reorder_refused),
    cmocka_unit_test(test_keys_differ),
};
PIO_UNIT_MAIN(tests)
