/* test_seal.c - sealed data channels (common/seal.h): keys, nonces, tampering.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Both ends derive the same key from the proof's inputs and nothing else
 * gives it; a payload, its header (associated data), its tag, its order and
 * its direction are each protected: change any one and the receiver refuses.
 * Every case runs once per cipher (AES-256-GCM and ChaCha20-Poly1305), and
 * what libcrypto seals is checked against libsodium's independent
 * implementation of the same AEAD (so both ends agree with the standard,
 * not only with each other).
 */
#include "common/seal.h"
#include "common/seal_be.h"
#include "tests/lib/unit.h"

#include <sodium.h>

static uint8_t chan_key[32], challenge[32];
static int cipher; /* set by each case's setup */

static int use_aes(void **state)
{
    (void)state;
    cipher = PIO_CIPHER_AES;
    return 0;
}

static int use_chacha(void **state)
{
    (void)state;
    cipher = PIO_CIPHER_CHACHA;
    return 0;
}

static void pair(struct pio_seal *tx, struct pio_seal *rx, int ack)
{
    assert_true(sodium_init() >= 0);
    for (int i = 0; i < 32; i++)
        chan_key[i] = (uint8_t)(i * 7 + 1), challenge[i] = (uint8_t)(255 - i);
    pio_seal_init(tx, cipher, chan_key, challenge, 3, "sysA", ack);
    pio_seal_init(rx, cipher, chan_key, challenge, 3, "sysA", ack);
}

static void test_roundtrip_in_order(void **state)
{
    (void)state;
    struct pio_seal tx, rx;
    pair(&tx, &rx, 0);
    static uint8_t src[1 << 16], wire[1 << 16];
    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (uint8_t)(i * 31 + 5);
    for (int k = 0; k < 50; k++) {
        uint8_t ad[20], tag[PIO_SEAL_TAG];
        size_t len = (size_t)(k * 1237) % sizeof(src);
        pio_seal_chunk_ad(ad, 42, (uint64_t)k * 65536, (uint32_t)len);
        assert_int_equal(pio_seal_data(&tx, ad, sizeof(ad), src, wire, len, tag), 0);
        if (len > 16)
            assert_memory_not_equal(wire, src, len); /* really encrypted */
        assert_int_equal(pio_seal_open(&rx, ad, sizeof(ad), wire, len, tag), 0);
        assert_memory_equal(wire, src, len);
    }
    /* the source is never written (it stays in the pool for a resend) */
    for (size_t i = 0; i < sizeof(src); i++)
        assert_int_equal(src[i], (uint8_t)(i * 31 + 5));
    pio_seal_fini(&tx);
    pio_seal_fini(&rx);
}

/* What we seal opens with libsodium's own implementation of the cipher,
 * under the key and nonce seal.h describes (counter LE, then 4 zero bytes),
 * and what libsodium seals opens with ours. */
static void test_matches_libsodium(void **state)
{
    (void)state;
    struct pio_seal tx, rx;
    pair(&tx, &rx, 0);
    if (cipher == PIO_CIPHER_AES && !crypto_aead_aes256gcm_is_available()) {
        /* libsodium has no software AES-GCM: nothing to compare against here */
        assert_int_equal(pio_seal_has_aesni(), 0);
        pio_seal_fini(&tx);
        pio_seal_fini(&rx);
        return;
    }
    uint8_t src[3000], wire[3000], back[3000], ad[20], tag[PIO_SEAL_TAG], nonce[12] = {0};
    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (uint8_t)(i ^ (i >> 3));
    for (int k = 0; k < 3; k++) { /* nonces 0, 1, 2 */
        nonce[0] = (uint8_t)k;
        pio_seal_chunk_ad(ad, 9, (uint64_t)k, sizeof(src));
        assert_int_equal(pio_seal_data(&tx, ad, sizeof(ad), src, wire, sizeof(src), tag), 0);
        int ok = cipher == PIO_CIPHER_AES
                     ? crypto_aead_aes256gcm_decrypt_detached(back, NULL, wire, sizeof(src), tag,
                                                              ad, sizeof(ad), nonce, tx.key)
                     : crypto_aead_chacha20poly1305_ietf_decrypt_detached(
                           back, NULL, wire, sizeof(src), tag, ad, sizeof(ad), nonce, tx.key);
        assert_int_equal(ok, 0);
        assert_memory_equal(back, src, sizeof(src));
        /* libsodium seals, we open */
        if (cipher == PIO_CIPHER_AES)
            crypto_aead_aes256gcm_encrypt_detached(wire, tag, NULL, src, sizeof(src), ad,
                                                   sizeof(ad), NULL, nonce, tx.key);
        else
            crypto_aead_chacha20poly1305_ietf_encrypt_detached(wire, tag, NULL, src, sizeof(src),
                                                               ad, sizeof(ad), NULL, nonce, tx.key);
        assert_int_equal(pio_seal_open(&rx, ad, sizeof(ad), wire, sizeof(src), tag), 0);
        assert_memory_equal(wire, src, sizeof(src));
    }
    pio_seal_fini(&tx);
    pio_seal_fini(&rx);
}

static void test_tampering_refused(void **state)
{
    (void)state;
    uint8_t src[256], wire[256], ad[20], tag[PIO_SEAL_TAG];
    memset(src, 'x', sizeof(src));
    for (int what = 0; what < 4; what++) {
        struct pio_seal tx, rx;
        pair(&tx, &rx, 0);
        pio_seal_chunk_ad(ad, 7, 0, sizeof(src));
        assert_int_equal(pio_seal_data(&tx, ad, sizeof(ad), src, wire, sizeof(src), tag), 0);
        switch (what) {
        case 0: wire[100] ^= 1; break; /* a payload byte */
        case 1: ad[8] ^= 1; break;     /* the chunk's offset in the header */
        case 2: tag[0] ^= 1; break;    /* the tag */
        case 3: break;                 /* untouched: must open */
        }
        assert_int_equal(pio_seal_open(&rx, ad, sizeof(ad), wire, sizeof(src), tag),
                         what == 3 ? 0 : -1);
        pio_seal_fini(&tx);
        pio_seal_fini(&rx);
    }
}

static void test_replay_and_reorder_refused(void **state)
{
    (void)state;
    struct pio_seal tx, rx;
    pair(&tx, &rx, 0);
    uint8_t a[64], b[64], wa[64], wb[64], ta[PIO_SEAL_TAG], tb[PIO_SEAL_TAG], ad[20];
    memset(a, 'a', sizeof(a));
    memset(b, 'b', sizeof(b));
    pio_seal_chunk_ad(ad, 1, 0, 64);
    assert_int_equal(pio_seal_data(&tx, ad, sizeof(ad), a, wa, 64, ta), 0);
    assert_int_equal(pio_seal_data(&tx, ad, sizeof(ad), b, wb, 64, tb), 0);
    /* the second chunk first: its nonce is not the one the receiver expects */
    assert_int_equal(pio_seal_open(&rx, ad, sizeof(ad), wb, 64, tb), -1);
    /* a replay of a chunk already opened */
    struct pio_seal rx2;
    pio_seal_init(&rx2, cipher, chan_key, challenge, 3, "sysA", 0);
    uint8_t copy[64];
    memcpy(copy, wa, sizeof(copy));
    assert_int_equal(pio_seal_open(&rx2, ad, sizeof(ad), wa, 64, ta), 0);
    assert_int_equal(pio_seal_open(&rx2, ad, sizeof(ad), copy, 64, ta), -1);
    pio_seal_fini(&tx);
    pio_seal_fini(&rx);
    pio_seal_fini(&rx2);
}

static void test_keys_differ(void **state)
{
    (void)state;
    struct pio_seal base, other, ack;
    pair(&base, &other, 0);
    uint8_t c2[32];
    memcpy(c2, challenge, sizeof(c2));
    c2[31] ^= 1;
    pio_seal_init(&other, cipher, chan_key, c2, 3, "sysA", 0); /* another connection */
    assert_memory_not_equal(base.key, other.key, PIO_SEAL_KEY);
    pio_seal_init(&other, cipher, chan_key, challenge, 4, "sysA", 0); /* another index */
    assert_memory_not_equal(base.key, other.key, PIO_SEAL_KEY);
    pio_seal_init(&other, cipher, chan_key, challenge, 3, "sysB", 0); /* another system */
    assert_memory_not_equal(base.key, other.key, PIO_SEAL_KEY);
    /* the other cipher: another key, so one key never serves two AEADs */
    pio_seal_init(&other, cipher == PIO_CIPHER_AES ? PIO_CIPHER_CHACHA : PIO_CIPHER_AES, chan_key,
                  challenge, 3, "sysA", 0);
    assert_memory_not_equal(base.key, other.key, PIO_SEAL_KEY);
    /* the two directions share the key but never a nonce: a C_DATA sealed
     * one way does not open as the other direction's message */
    pio_seal_init(&ack, cipher, chan_key, challenge, 3, "sysA", 1);
    uint8_t m[32] = {0}, w[32], tag[PIO_SEAL_TAG], ad[20] = {0};
    assert_int_equal(pio_seal_data(&base, ad, sizeof(ad), m, w, sizeof(m), tag), 0);
    assert_int_equal(pio_seal_open(&ack, ad, sizeof(ad), w, sizeof(m), tag), -1);
    pio_seal_fini(&base);
    pio_seal_fini(&other);
    pio_seal_fini(&ack);
}

/* a C_ACK or an express-lane header: a tag over the frame alone (no
 * payload; NULL buffers) */
static void test_ack_tag(void **state)
{
    (void)state;
    struct pio_seal tx, rx;
    pair(&tx, &rx, 1);
    uint8_t frame[48], tag[PIO_SEAL_TAG];
    for (size_t i = 0; i < sizeof(frame); i++)
        frame[i] = (uint8_t)i;
    assert_int_equal(pio_seal_data(&tx, frame, sizeof(frame), NULL, NULL, 0, tag), 0);
    assert_int_equal(pio_seal_open(&rx, frame, sizeof(frame), NULL, 0, tag), 0);
    assert_int_equal(pio_seal_data(&tx, frame, sizeof(frame), NULL, NULL, 0, tag), 0);
    frame[20] ^= 0x40; /* an acknowledged offset changed on the way */
    assert_int_equal(pio_seal_open(&rx, frame, sizeof(frame), NULL, 0, tag), -1);
    pio_seal_fini(&tx);
    pio_seal_fini(&rx);
}

/* Every backend that runs the cipher here opens what every other sealed:
 * the two ends of a connection may use different ones (libsodium's is
 * libpio's, for direct lanes, whose frames a piod seals first). */
static void test_backends_agree(void **state)
{
    (void)state;
    const struct pio_seal_backend *all[] = {&pio_seal_imb, &pio_seal_evp, &pio_seal_sodium}, *be[3];
    int n = 0;
    for (int i = 0; i < 3; i++)
        if (all[i]->runs(cipher))
            be[n++] = all[i];
    assert_true(n >= 1);                               /* libcrypto runs both ciphers everywhere */
    assert_ptr_equal(pio_seal_backend(cipher), be[0]); /* the fastest is picked */
    uint8_t src[5000], wire[5000], ad[20], tag[PIO_SEAL_TAG];
    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (uint8_t)(i * 13);
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            struct pio_seal tx, rx;
            pair(&tx, &rx, 0);
            tx.be = be[a];
            rx.be = be[b];
            for (int k = 0; k < 3; k++) {
                size_t len = k == 0 ? 0 : k == 1 ? 17 : sizeof(src);
                pio_seal_chunk_ad(ad, 5, (uint64_t)k, (uint32_t)len);
                assert_int_equal(pio_seal_data(&tx, ad, sizeof(ad), len ? src : NULL,
                                               len ? wire : NULL, len, tag),
                                 0);
                assert_int_equal(pio_seal_open(&rx, ad, sizeof(ad), len ? wire : NULL, len, tag),
                                 0);
                if (len)
                    assert_memory_equal(wire, src, len);
            }
            wire[3] ^= 1; /* and each refuses a forgery */
            assert_int_equal(pio_seal_data(&tx, ad, sizeof(ad), src, wire, 64, tag), 0);
            wire[3] ^= 1;
            assert_int_equal(pio_seal_open(&rx, ad, sizeof(ad), wire, 64, tag), -1);
            pio_seal_fini(&tx);
            pio_seal_fini(&rx);
        }
}

/* pio_seal_data2 (two pieces sealed as one, libpio's lane messages: the
 * frame's head, then the caller's bytes) gives the bytes and tag of sealing
 * the two joined, on every backend, for pieces that split a GCM block
 * anywhere; pio_seal_reopen opens what this side sealed, with the counter it
 * was sealed under, and leaves the state's counter where it was. */
static void test_two_pieces_and_reopen(void **state)
{
    (void)state;
    const struct pio_seal_backend *all[] = {&pio_seal_imb, &pio_seal_evp, &pio_seal_sodium};
    static uint8_t src[70000], joined[70000], two[70000];
    uint8_t ad[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, t1[PIO_SEAL_TAG], t2[PIO_SEAL_TAG];
    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (uint8_t)(i * 29 + 3);
    static const size_t splits[][2] = {{0, 0},  {0, 100}, {52, 0},     {52, 65536},
                                       {1, 15}, {16, 16}, {17, 69000}, {68, 31}};
    for (int b = 0; b < 3; b++) {
        if (!all[b]->runs(cipher))
            continue;
        for (size_t k = 0; k < sizeof(splits) / sizeof(splits[0]); k++) {
            size_t l1 = splits[k][0], l2 = splits[k][1];
            struct pio_seal a, c, rx;
            pair(&a, &rx, 0);
            pio_seal_init(&c, cipher, chan_key, challenge, 3, "sysA", 0);
            a.be = c.be = all[b];
            assert_int_equal(pio_seal_data(&a, ad, sizeof(ad), src, joined, l1 + l2, t1), 0);
            uint64_t n = pio_seal_nonces(&c);
            assert_int_equal(pio_seal_data2(&c, ad, sizeof(ad), src, l1, src + l1, l2, two, t2), 0);
            assert_int_equal(pio_seal_nonces(&c), n + 1);
            assert_memory_equal(t1, t2, PIO_SEAL_TAG);
            if (l1 + l2)
                assert_memory_equal(joined, two, l1 + l2);
            /* the sender opens its own frame again; its counter stays */
            assert_int_equal(pio_seal_reopen(&c, n, ad, sizeof(ad), two, l1 + l2, t2), 0);
            assert_int_equal(pio_seal_nonces(&c), n + 1);
            if (l1 + l2)
                assert_memory_equal(two, src, l1 + l2);
            /* a wrong counter is refused */
            assert_int_equal(pio_seal_data2(&c, ad, sizeof(ad), src, l1, src + l1, l2, two, t2), 0);
            assert_int_equal(pio_seal_reopen(&c, n, ad, sizeof(ad), two, l1 + l2, t2), -1);
            pio_seal_fini(&a);
            pio_seal_fini(&c);
            pio_seal_fini(&rx);
        }
    }
}

/* The handshake's choice: AES only when asked for or when the CPU has it. */
static void test_cipher_choice(void **state)
{
    (void)state;
    assert_int_equal(pio_seal_wants_aes(PIO_CIPHER_AES), 1);
    assert_int_equal(pio_seal_wants_aes(PIO_CIPHER_CHACHA), 0);
    assert_int_equal(pio_seal_wants_aes(PIO_CIPHER_AUTO), pio_seal_has_aesni());
    assert_string_equal(pio_seal_cipher_name(PIO_CIPHER_AES), "aes-256-gcm");
    assert_string_equal(pio_seal_cipher_name(PIO_CIPHER_CHACHA), "chacha20-poly1305");
}

#define BOTH(t) cmocka_unit_test_setup(t, use_aes), cmocka_unit_test_setup(t, use_chacha)
static const struct CMUnitTest tests[] = {
    BOTH(test_ack_tag),
    BOTH(test_roundtrip_in_order),
    BOTH(test_matches_libsodium),
    BOTH(test_tampering_refused),
    BOTH(test_replay_and_reorder_refused),
    BOTH(test_keys_differ),
    BOTH(test_backends_agree),
    BOTH(test_two_pieces_and_reopen),
    cmocka_unit_test(test_cipher_choice),
};
PIO_UNIT_MAIN(tests)
