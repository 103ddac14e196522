/* seal_be.h - the AEAD backends behind seal.h (private to common/seal*.c).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A backend runs one or both ciphers; seal.c picks, at pio_seal_init, the
 * first backend of its list (the one registration point) that runs the
 * agreed cipher on this machine. Both backends produce the same bytes (the
 * standard AEADs, checked against libsodium in tests/unit/test_seal.c), so
 * the two ends of a connection need not use the same one.
 * A backend keeps its per-direction state in s->ctx (made at the first use,
 * freed by fini) and must not touch s->n, s->high or s->key.
 * Thread-safety: as seal.h (one owner per pio_seal); runs() and the
 * backend's global set-up are thread-safe. */
#ifndef PIO_SEAL_BE_H
#define PIO_SEAL_BE_H

#include "seal.h"

#define PIO_SEAL_NONCE 12

struct pio_seal_backend {
    const char *name;
    /* 1 when it runs cipher (PIO_CIPHER_AES or _CHACHA) on this machine */
    int (*runs)(int cipher);
    /* the AEAD of seal.h with this nonce; 0 or -1 (no memory: the
     * connection closes) */
    int (*seal)(struct pio_seal *s, const uint8_t nonce[PIO_SEAL_NONCE], const uint8_t *ad,
                size_t adlen, const uint8_t *in, uint8_t *out, size_t len,
                uint8_t tag[PIO_SEAL_TAG]);
    /* optional: seal in1[0..len1) then in2[0..len2) into out as one
     * message (the same bytes as seal over the two joined), reading each
     * byte once; NULL: seal.c joins them in out and seals there */
    int (*seal2)(struct pio_seal *s, const uint8_t nonce[PIO_SEAL_NONCE], const uint8_t *ad,
                 size_t adlen, const uint8_t *in1, size_t len1, const uint8_t *in2, size_t len2,
                 uint8_t *out, uint8_t tag[PIO_SEAL_TAG]);
    /* decrypt buf in place; 0, or -1 when the tag is wrong */
    int (*open)(struct pio_seal *s, const uint8_t nonce[PIO_SEAL_NONCE], const uint8_t *ad,
                size_t adlen, uint8_t *buf, size_t len, const uint8_t tag[PIO_SEAL_TAG]);
    void (*fini)(struct pio_seal *s);
};

extern const struct pio_seal_backend pio_seal_imb;    /* seal_imb.c: AES-256-GCM, x86-64 */
extern const struct pio_seal_backend pio_seal_evp;    /* seal_evp.c: both, anywhere */
extern const struct pio_seal_backend pio_seal_sodium; /* seal_sodium.c: both, libpio's */

/* The program's backends, fastest first, NULL-terminated: its one
 * registration point (seal_list_piod.c for the piods, seal_list_lib.c for
 * libpio). */
extern const struct pio_seal_backend *const pio_seal_backends[];

#endif
