/* seal.c - per-connection AEAD for data channels and express lanes (seal.h).
 * SPDX-License-Identifier: BSD-3-Clause
 * Stateless but for each direction's nonce counter and cipher context.
 * libsodium derives the key (sodium_init is called once by piod's main);
 * libcrypto's EVP interface runs the AEAD: one context per direction, set
 * up with the key once, given a fresh nonce per sealed payload. */
#include "piod/seal.h"

#include <openssl/evp.h>
#include <sodium.h>
#include <string.h>

#define SEAL_NONCE 12

int piod_seal_has_aesni(void)
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

int piod_seal_wants_aes(int cipher)
{
    return cipher == PIOD_CIPHER_AES || (cipher == PIOD_CIPHER_AUTO && piod_seal_has_aesni());
}

const char *piod_seal_cipher_name(int cipher)
{
    switch (cipher) {
    case PIOD_CIPHER_AES: return "aes-256-gcm";
    case PIOD_CIPHER_CHACHA: return "chacha20-poly1305";
    default: return "auto";
    }
}

static void seal_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void piod_seal_init(struct piod_seal *s, int cipher, const uint8_t chan_key[32],
                    const uint8_t challenge[32], uint32_t index, const char *system,
                    int ack_direction)
{
    static const char chacha_label[] = "PIO-SEAL-1", aes_label[] = "PIO-SEAL-AES256GCM-1";
    const char *label = cipher == PIOD_CIPHER_AES ? aes_label : chacha_label;
    crypto_generichash_state st;
    uint8_t ib[4] = {(uint8_t)index, (uint8_t)(index >> 8), (uint8_t)(index >> 16),
                     (uint8_t)(index >> 24)};
    memset(s, 0, sizeof(*s));
    s->cipher = cipher == PIOD_CIPHER_AES ? PIOD_CIPHER_AES : PIOD_CIPHER_CHACHA;
    crypto_generichash_init(&st, chan_key, 32, PIOD_SEAL_KEY);
    crypto_generichash_update(&st, (const uint8_t *)label, strlen(label));
    crypto_generichash_update(&st, challenge, 32);
    crypto_generichash_update(&st, ib, sizeof(ib));
    crypto_generichash_update(&st, (const uint8_t *)system, strlen(system));
    crypto_generichash_final(&st, s->key, PIOD_SEAL_KEY);
    s->high = ack_direction ? (uint64_t)1 << 63 : 0;
}

void piod_seal_fini(struct piod_seal *s)
{
    if (s->ctx)
        EVP_CIPHER_CTX_free(s->ctx);
    sodium_memzero(s, sizeof(*s));
}

/* The context set up for dir (1 seal, 2 open) with the next nonce; NULL
 * when libcrypto cannot make one. */
static EVP_CIPHER_CTX *seal_begin(struct piod_seal *s, int dir)
{
    uint8_t npub[SEAL_NONCE] = {0};
    seal_le64(npub, s->high | s->n++);
    if (!s->ctx && !(s->ctx = EVP_CIPHER_CTX_new()))
        return NULL;
    EVP_CIPHER_CTX *c = s->ctx;
    if (s->dir != dir) {
        const EVP_CIPHER *ci =
            s->cipher == PIOD_CIPHER_AES ? EVP_aes_256_gcm() : EVP_chacha20_poly1305();
        if (EVP_CipherInit_ex(c, ci, NULL, s->key, NULL, dir == 1) != 1) {
            s->dir = 0;
            return NULL;
        }
        s->dir = dir;
    }
    return EVP_CipherInit_ex(c, NULL, NULL, NULL, npub, -1) == 1 ? c : NULL;
}

/* Associated data, then len bytes of in through the cipher into out. */
static int seal_run(EVP_CIPHER_CTX *c, const uint8_t *ad, size_t adlen, const uint8_t *in,
                    uint8_t *out, size_t len)
{
    int n;
    if (adlen && EVP_CipherUpdate(c, NULL, &n, ad, (int)adlen) != 1)
        return -1;
    while (len) {
        int step = len > (size_t)1 << 30 ? 1 << 30 : (int)len;
        if (EVP_CipherUpdate(c, out, &n, in, step) != 1 || n != step)
            return -1;
        in += step;
        out += step;
        len -= (size_t)step;
    }
    return 0;
}

int piod_seal_data(struct piod_seal *s, const uint8_t *ad, size_t adlen, const uint8_t *in,
                   uint8_t *out, size_t len, uint8_t tag[PIOD_SEAL_TAG])
{
    EVP_CIPHER_CTX *c = seal_begin(s, 1);
    uint8_t end[32];
    int n;
    if (!c || seal_run(c, ad, adlen, in, out, len) != 0 || EVP_CipherFinal_ex(c, end, &n) != 1 ||
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, PIOD_SEAL_TAG, tag) != 1) {
        s->dir = 0; /* set it up afresh next time */
        return -1;
    }
    return 0;
}

int piod_seal_open(struct piod_seal *s, const uint8_t *ad, size_t adlen, uint8_t *buf, size_t len,
                   const uint8_t tag[PIOD_SEAL_TAG])
{
    EVP_CIPHER_CTX *c = seal_begin(s, 2);
    uint8_t end[32], t[PIOD_SEAL_TAG];
    int n;
    memcpy(t, tag, sizeof(t));
    if (!c || seal_run(c, ad, adlen, buf, buf, len) != 0 ||
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, PIOD_SEAL_TAG, t) != 1 ||
        EVP_CipherFinal_ex(c, end, &n) != 1) {
        s->dir = 0;
        return -1;
    }
    return 0;
}

void piod_seal_chunk_ad(uint8_t ad[20], uint64_t msgid, uint64_t off, uint32_t len)
{
    seal_le64(ad, msgid);
    seal_le64(ad + 8, off);
    for (int i = 0; i < 4; i++)
        ad[16 + i] = (uint8_t)(len >> (8 * i));
}
