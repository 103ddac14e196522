/* seal_be.h - the AEAD backends behind seal.h (private to piod/seal*.c).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A backend runs one or both ciphers; seal.c picks, at piod_seal_init, the
 * first backend of its list (the one registration point) that runs the
 * agreed cipher on this machine. Both backends produce the same bytes (the
 * standard AEADs, checked against libsodium in tests/unit/test_seal.c), so
 * the two ends of a connection need not use the same one.
 * A backend keeps its per-direction state in s->ctx (made at the first use,
 * freed by fini) and must not touch s->n, s->high or s->key.
 * Thread-safety: as seal.h (one owner per piod_seal); runs() and the
 * backend's global set-up are thread-safe. */
#ifndef PIOD_SEAL_BE_H
#define PIOD_SEAL_BE_H

#include "seal.h"

#define PIOD_SEAL_NONCE 12

struct piod_seal_backend {
    const char *name;
    /* 1 when it runs cipher (PIOD_CIPHER_AES or _CHACHA) on this machine */
    int (*runs)(int cipher);
    /* the AEAD of seal.h with this nonce; 0 or -1 (no memory: the
     * connection closes) */
    int (*seal)(struct piod_seal *s, const uint8_t nonce[PIOD_SEAL_NONCE], const uint8_t *ad,
                size_t adlen, const uint8_t *in, uint8_t *out, size_t len,
                uint8_t tag[PIOD_SEAL_TAG]);
    /* decrypt buf in place; 0, or -1 when the tag is wrong */
    int (*open)(struct piod_seal *s, const uint8_t nonce[PIOD_SEAL_NONCE], const uint8_t *ad,
                size_t adlen, uint8_t *buf, size_t len, const uint8_t tag[PIOD_SEAL_TAG]);
    void (*fini)(struct piod_seal *s);
};

extern const struct piod_seal_backend piod_seal_imb; /* seal_imb.c: AES-256-GCM, x86-64 */
extern const struct piod_seal_backend piod_seal_evp; /* seal_evp.c: both, anywhere */

#endif
