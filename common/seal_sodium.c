/* seal_sodium.c - the libsodium backend of seal.h: both ciphers, for
 * libpio's direct lanes (libpio links libsodium already, not libcrypto).
 * SPDX-License-Identifier: BSD-3-Clause
 * Stateless: libsodium's one-shot detached AEADs with the key in s->key.
 * AES-256-GCM runs only where libsodium has it (AES-NI and carry-less
 * multiply); the lane's cipher is the one its two piods agreed on, both of
 * which run on hosts of the lane's ends, so a process finds what its piod
 * offered. */
#include "seal_be.h"

#include <sodium.h>

static int sodium_runs(int cipher)
{
    if (sodium_init() < 0)
        return 0;
    if (cipher == PIO_CIPHER_AES)
        return crypto_aead_aes256gcm_is_available();
    return cipher == PIO_CIPHER_CHACHA;
}

/* libsodium's arguments are declared non-null even for no bytes */
static uint8_t sodium_none[1];

static int sodium_seal(struct pio_seal *s, const uint8_t nonce[PIO_SEAL_NONCE], const uint8_t *ad,
                       size_t adlen, const uint8_t *in, uint8_t *out, size_t len,
                       uint8_t tag[PIO_SEAL_TAG])
{
    unsigned long long tl = 0;
    if (!len)
        in = out = sodium_none;
    int rc = s->cipher == PIO_CIPHER_AES
                 ? crypto_aead_aes256gcm_encrypt_detached(out, tag, &tl, in, len, ad, adlen, NULL,
                                                          nonce, s->key)
                 : crypto_aead_chacha20poly1305_ietf_encrypt_detached(out, tag, &tl, in, len, ad,
                                                                      adlen, NULL, nonce, s->key);
    return rc == 0 && tl == PIO_SEAL_TAG ? 0 : -1;
}

static int sodium_open(struct pio_seal *s, const uint8_t nonce[PIO_SEAL_NONCE], const uint8_t *ad,
                       size_t adlen, uint8_t *buf, size_t len, const uint8_t tag[PIO_SEAL_TAG])
{
    if (!len)
        buf = sodium_none;
    return s->cipher == PIO_CIPHER_AES
               ? crypto_aead_aes256gcm_decrypt_detached(buf, NULL, buf, len, tag, ad, adlen, nonce,
                                                        s->key)
               : crypto_aead_chacha20poly1305_ietf_decrypt_detached(buf, NULL, buf, len, tag, ad,
                                                                    adlen, nonce, s->key);
}

const struct pio_seal_backend pio_seal_sodium = {
    .name = "libsodium",
    .runs = sodium_runs,
    .seal = sodium_seal,
    .open = sodium_open,
    .fini = NULL,
};
