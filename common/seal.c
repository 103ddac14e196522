/* seal.c - per-connection AEAD for data channels and express lanes (seal.h).
 * SPDX-License-Identifier: BSD-3-Clause
 * Stateless but for each direction's nonce counter and backend state.
 * libsodium derives the key (sodium_init is called once by piod's main);
 * a backend (seal_be.h: intel-ipsec-mb or libcrypto) runs the AEAD. */
#include "seal.h"
#include "seal_be.h"

#include <sodium.h>
#include <string.h>

int pio_seal_has_aesni(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("aes") && __builtin_cpu_supports("pclmul");
#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRYPTO)
    return 1;
#else
    return 0;
#endif
}

int pio_seal_wants_aes(int cipher)
{
    return cipher == PIO_CIPHER_AES || (cipher == PIO_CIPHER_AUTO && pio_seal_has_aesni());
}

const char *pio_seal_cipher_name(int cipher)
{
    switch (cipher) {
    case PIO_CIPHER_AES: return "aes-256-gcm";
    case PIO_CIPHER_CHACHA: return "chacha20-poly1305";
    default: return "auto";
    }
}

/* The backends, fastest first, come from the program's registration point
 * (seal_list_piod.c or seal_list_lib.c); the last one is the fallback. */
const struct pio_seal_backend *pio_seal_backend(int cipher)
{
    cipher = cipher == PIO_CIPHER_AES ? PIO_CIPHER_AES : PIO_CIPHER_CHACHA;
    size_t i;
    for (i = 0; pio_seal_backends[i]; i++)
        if (pio_seal_backends[i]->runs(cipher))
            return pio_seal_backends[i];
    return pio_seal_backends[i - 1];
}

const char *pio_seal_backend_name(int cipher)
{
    return pio_seal_backend(cipher)->name;
}

static void seal_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void pio_seal_init(struct pio_seal *s, int cipher, const uint8_t chan_key[32],
                   const uint8_t challenge[32], uint32_t index, const char *system,
                   int ack_direction)
{
    static const char chacha_label[] = "PIO-SEAL-1", aes_label[] = "PIO-SEAL-AES256GCM-1";
    const char *label = cipher == PIO_CIPHER_AES ? aes_label : chacha_label;
    crypto_generichash_state st;
    uint8_t ib[4] = {(uint8_t)index, (uint8_t)(index >> 8), (uint8_t)(index >> 16),
                     (uint8_t)(index >> 24)};
    memset(s, 0, sizeof(*s));
    s->cipher = cipher == PIO_CIPHER_AES ? PIO_CIPHER_AES : PIO_CIPHER_CHACHA;
    crypto_generichash_init(&st, chan_key, 32, PIO_SEAL_KEY);
    crypto_generichash_update(&st, (const uint8_t *)label, strlen(label));
    crypto_generichash_update(&st, challenge, 32);
    crypto_generichash_update(&st, ib, sizeof(ib));
    crypto_generichash_update(&st, (const uint8_t *)system, strlen(system));
    crypto_generichash_final(&st, s->key, PIO_SEAL_KEY);
    s->high = ack_direction ? (uint64_t)1 << 63 : 0;
    s->be = pio_seal_backend(s->cipher);
}

void pio_seal_import(struct pio_seal *s, int cipher, const uint8_t key[PIO_SEAL_KEY], uint64_t n,
                     int ack_direction)
{
    memset(s, 0, sizeof(*s));
    s->cipher = cipher == PIO_CIPHER_AES ? PIO_CIPHER_AES : PIO_CIPHER_CHACHA;
    memcpy(s->key, key, PIO_SEAL_KEY);
    s->n = n;
    s->high = ack_direction ? (uint64_t)1 << 63 : 0;
    s->be = pio_seal_backend(s->cipher);
}

void pio_seal_fini(struct pio_seal *s)
{
    if (s->be && s->be->fini)
        s->be->fini(s);
    sodium_memzero(s, sizeof(*s));
}

static void seal_nonce(struct pio_seal *s, uint8_t npub[PIO_SEAL_NONCE])
{
    memset(npub, 0, PIO_SEAL_NONCE);
    seal_le64(npub, s->high | s->n++);
}

int pio_seal_data(struct pio_seal *s, const uint8_t *ad, size_t adlen, const uint8_t *in,
                  uint8_t *out, size_t len, uint8_t tag[PIO_SEAL_TAG])
{
    uint8_t npub[PIO_SEAL_NONCE];
    seal_nonce(s, npub);
    return s->be->seal(s, npub, ad, adlen, in, out, len, tag);
}

int pio_seal_data2(struct pio_seal *s, const uint8_t *ad, size_t adlen, const uint8_t *in1,
                   size_t len1, const uint8_t *in2, size_t len2, uint8_t *out,
                   uint8_t tag[PIO_SEAL_TAG])
{
    if (s->be->seal2) {
        uint8_t npub[PIO_SEAL_NONCE];
        seal_nonce(s, npub);
        return s->be->seal2(s, npub, ad, adlen, in1, len1, in2, len2, out, tag);
    }
    if (len1)
        memcpy(out, in1, len1);
    if (len2)
        memcpy(out + len1, in2, len2);
    return pio_seal_data(s, ad, adlen, out, out, len1 + len2, tag);
}

uint64_t pio_seal_nonces(const struct pio_seal *s)
{
    return s->n;
}

int pio_seal_reopen(const struct pio_seal *s, uint64_t n, const uint8_t *ad, size_t adlen,
                    uint8_t *buf, size_t len, const uint8_t tag[PIO_SEAL_TAG])
{
    /* a state of its own: the key, that counter, the direction */
    struct pio_seal t;
    pio_seal_import(&t, s->cipher, s->key, n, s->high != 0);
    int rc = pio_seal_open(&t, ad, adlen, buf, len, tag);
    pio_seal_fini(&t);
    return rc;
}

int pio_seal_open(struct pio_seal *s, const uint8_t *ad, size_t adlen, uint8_t *buf, size_t len,
                  const uint8_t tag[PIO_SEAL_TAG])
{
    uint8_t npub[PIO_SEAL_NONCE];
    seal_nonce(s, npub);
    return s->be->open(s, npub, ad, adlen, buf, len, tag);
}

void pio_seal_chunk_ad(uint8_t ad[20], uint64_t msgid, uint64_t off, uint32_t len)
{
    seal_le64(ad, msgid);
    seal_le64(ad + 8, off);
    for (int i = 0; i < 4; i++)
        ad[16 + i] = (uint8_t)(len >> (8 * i));
}
