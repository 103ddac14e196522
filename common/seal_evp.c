/* seal_evp.c - the libcrypto (OpenSSL EVP) backend of seal.h: both ciphers.
 * SPDX-License-Identifier: BSD-3-Clause
 * One EVP_CIPHER_CTX per direction, set up with the key once (for sealing
 * or for opening, whichever comes first), given a fresh nonce per payload. */
#include "seal_be.h"

#include <openssl/evp.h>
#include <string.h>

static int evp_runs(int cipher)
{
    return cipher == PIO_CIPHER_AES || cipher == PIO_CIPHER_CHACHA;
}

/* The context set up for dir (1 seal, 2 open) and nonce; NULL when
 * libcrypto cannot make one. */
static EVP_CIPHER_CTX *evp_begin(struct pio_seal *s, int dir, const uint8_t *nonce)
{
    if (!s->ctx && !(s->ctx = EVP_CIPHER_CTX_new()))
        return NULL;
    EVP_CIPHER_CTX *c = s->ctx;
    if (s->dir != dir) {
        const EVP_CIPHER *ci =
            s->cipher == PIO_CIPHER_AES ? EVP_aes_256_gcm() : EVP_chacha20_poly1305();
        if (EVP_CipherInit_ex(c, ci, NULL, s->key, NULL, dir == 1) != 1) {
            s->dir = 0;
            return NULL;
        }
        s->dir = dir;
    }
    return EVP_CipherInit_ex(c, NULL, NULL, NULL, nonce, -1) == 1 ? c : NULL;
}

/* Associated data, then len bytes of in through the cipher into out. */
static int evp_run(EVP_CIPHER_CTX *c, const uint8_t *ad, size_t adlen, const uint8_t *in,
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

static int evp_seal(struct pio_seal *s, const uint8_t nonce[PIO_SEAL_NONCE], const uint8_t *ad,
                    size_t adlen, const uint8_t *in, uint8_t *out, size_t len,
                    uint8_t tag[PIO_SEAL_TAG])
{
    EVP_CIPHER_CTX *c = evp_begin(s, 1, nonce);
    uint8_t end[32];
    int n;
    if (!c || evp_run(c, ad, adlen, in, out, len) != 0 || EVP_CipherFinal_ex(c, end, &n) != 1 ||
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, PIO_SEAL_TAG, tag) != 1) {
        s->dir = 0; /* set it up afresh next time */
        return -1;
    }
    return 0;
}

static int evp_open(struct pio_seal *s, const uint8_t nonce[PIO_SEAL_NONCE], const uint8_t *ad,
                    size_t adlen, uint8_t *buf, size_t len, const uint8_t tag[PIO_SEAL_TAG])
{
    EVP_CIPHER_CTX *c = evp_begin(s, 2, nonce);
    uint8_t end[32], t[PIO_SEAL_TAG];
    int n;
    memcpy(t, tag, sizeof(t));
    if (!c || evp_run(c, ad, adlen, buf, buf, len) != 0 ||
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, PIO_SEAL_TAG, t) != 1 ||
        EVP_CipherFinal_ex(c, end, &n) != 1) {
        s->dir = 0;
        return -1;
    }
    return 0;
}

static void evp_fini(struct pio_seal *s)
{
    if (s->ctx)
        EVP_CIPHER_CTX_free(s->ctx);
    s->ctx = NULL;
}

const struct pio_seal_backend pio_seal_evp = {
    .name = "libcrypto",
    .runs = evp_runs,
    .seal = evp_seal,
    .open = evp_open,
    .fini = evp_fini,
};
