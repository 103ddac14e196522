/* seal.c - per-connection AEAD for data channels (seal.h).
 * SPDX-License-Identifier: BSD-3-Clause
 * Stateless but for each direction's nonce counter; libsodium does the
 * cryptography (sodium_init is called once by piod's main). */
#include "piod/seal.h"

#include <sodium.h>
#include <string.h>

static void seal_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void piod_seal_init(struct piod_seal *s, const uint8_t chan_key[32], const uint8_t challenge[32],
                    uint32_t index, const char *system, int ack_direction)
{
    static const char label[] = "PIO-SEAL-1";
    crypto_generichash_state st;
    uint8_t ib[4] = {(uint8_t)index, (uint8_t)(index >> 8), (uint8_t)(index >> 16),
                     (uint8_t)(index >> 24)};
    crypto_generichash_init(&st, chan_key, 32, PIOD_SEAL_KEY);
    crypto_generichash_update(&st, (const uint8_t *)label, sizeof(label) - 1);
    crypto_generichash_update(&st, challenge, 32);
    crypto_generichash_update(&st, ib, sizeof(ib));
    crypto_generichash_update(&st, (const uint8_t *)system, strlen(system));
    crypto_generichash_final(&st, s->key, PIOD_SEAL_KEY);
    s->n = 0;
    s->high = ack_direction ? (uint64_t)1 << 63 : 0;
}

static void seal_nonce(struct piod_seal *s,
                       uint8_t npub[crypto_aead_chacha20poly1305_IETF_NPUBBYTES])
{
    memset(npub, 0, crypto_aead_chacha20poly1305_IETF_NPUBBYTES);
    seal_le64(npub, s->high | s->n++);
}

/* libsodium declares its buffers non-null even for 0 bytes (a tag over
 * associated data only): stand in for them */
static uint8_t seal_none[1];

void piod_seal_data(struct piod_seal *s, const uint8_t *ad, size_t adlen, const uint8_t *in,
                    uint8_t *out, size_t len, uint8_t tag[PIOD_SEAL_TAG])
{
    uint8_t npub[crypto_aead_chacha20poly1305_IETF_NPUBBYTES];
    seal_nonce(s, npub);
    if (len == 0)
        in = out = seal_none;
    crypto_aead_chacha20poly1305_ietf_encrypt_detached(out, tag, NULL, in, len, ad, adlen, NULL,
                                                       npub, s->key);
}

int piod_seal_open(struct piod_seal *s, const uint8_t *ad, size_t adlen, uint8_t *buf, size_t len,
                   const uint8_t tag[PIOD_SEAL_TAG])
{
    uint8_t npub[crypto_aead_chacha20poly1305_IETF_NPUBBYTES];
    seal_nonce(s, npub);
    uint8_t none[1];
    if (len == 0)
        buf = none;
    return crypto_aead_chacha20poly1305_ietf_decrypt_detached(buf, NULL, buf, len, tag, ad, adlen,
                                                              npub, s->key) == 0
               ? 0
               : -1;
}

void piod_seal_chunk_ad(uint8_t ad[20], uint64_t msgid, uint64_t off, uint32_t len)
{
    seal_le64(ad, msgid);
    seal_le64(ad + 8, off);
    for (int i = 0; i < 4; i++)
        ad[16 + i] = (uint8_t)(len >> (8 * i));
}
