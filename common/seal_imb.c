/* seal_imb.c - the intel-ipsec-mb backend of seal.h: AES-256-GCM on x86-64.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Intel's multi-buffer crypto library has AES-GCM written for VAES and
 * AVX-512 (and AVX2, AVX, SSE before them; it picks at start-up): here it
 * seals at about 2.3 x libcrypto's speed (docs/design-notes.md, "Sealed by
 * default"), which is what keeps a sealed stream near a clear one when the
 * CPU, not the link, is the limit. Built when the build finds the library
 * (PIO_HAVE_IMB, set by the Makefile); without it this backend runs
 * nothing and libcrypto does AES-GCM.
 * One manager for the whole process, made once: its GCM calls keep no
 * state of their own (the key schedule and the running context are ours),
 * so every thread may use it. Per direction, s->ctx holds the expanded key
 * (made from s->key at the first use) and a context. */
#include "seal_be.h"

#ifdef PIO_HAVE_IMB
#include <intel-ipsec-mb.h>
#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

static IMB_MGR *imb_mgr;
static pthread_once_t imb_once = PTHREAD_ONCE_INIT;

static void imb_setup(void)
{
    IMB_MGR *m = alloc_mb_mgr(0);
    if (!m)
        return;
    IMB_ARCH arch = IMB_ARCH_NONE;
    init_mb_mgr_auto(m, &arch);
    if (arch < IMB_ARCH_SSE || imb_get_errno(m) != 0) { /* no AES-NI: libcrypto does it */
        free_mb_mgr(m);
        return;
    }
    imb_mgr = m;
}

static int imb_runs(int cipher)
{
    if (cipher != PIO_CIPHER_AES)
        return 0;
    pthread_once(&imb_once, imb_setup);
    return imb_mgr != NULL;
}

struct imb_state {
    struct gcm_key_data key; /* 64-byte aligned: the state is aligned_alloc'd */
    struct gcm_context_data ctx;
};

static struct imb_state *imb_state(struct pio_seal *s)
{
    if (s->ctx)
        return s->ctx;
    size_t sz = (sizeof(struct imb_state) + 63) & ~(size_t)63;
    struct imb_state *st = aligned_alloc(64, sz);
    if (!st)
        return NULL;
    IMB_AES256_GCM_PRE(imb_mgr, s->key, &st->key);
    s->ctx = st;
    return st;
}

static int imb_seal(struct pio_seal *s, const uint8_t nonce[PIO_SEAL_NONCE], const uint8_t *ad,
                    size_t adlen, const uint8_t *in, uint8_t *out, size_t len,
                    uint8_t tag[PIO_SEAL_TAG])
{
    struct imb_state *st = imb_state(s);
    if (!st)
        return -1;
    IMB_AES256_GCM_ENC(imb_mgr, &st->key, &st->ctx, out, in, len, nonce, ad, adlen, tag,
                       PIO_SEAL_TAG);
    return 0;
}

static int imb_seal2(struct pio_seal *s, const uint8_t nonce[PIO_SEAL_NONCE], const uint8_t *ad,
                     size_t adlen, const uint8_t *in1, size_t len1, const uint8_t *in2, size_t len2,
                     uint8_t *out, uint8_t tag[PIO_SEAL_TAG])
{
    struct imb_state *st = imb_state(s);
    if (!st)
        return -1;
    /* GCM's update calls carry a partial block from one to the next */
    IMB_AES256_GCM_INIT(imb_mgr, &st->key, &st->ctx, nonce, ad, adlen);
    if (len1)
        IMB_AES256_GCM_ENC_UPDATE(imb_mgr, &st->key, &st->ctx, out, in1, len1);
    if (len2)
        IMB_AES256_GCM_ENC_UPDATE(imb_mgr, &st->key, &st->ctx, out + len1, in2, len2);
    IMB_AES256_GCM_ENC_FINALIZE(imb_mgr, &st->key, &st->ctx, tag, PIO_SEAL_TAG);
    return 0;
}

static int imb_open(struct pio_seal *s, const uint8_t nonce[PIO_SEAL_NONCE], const uint8_t *ad,
                    size_t adlen, uint8_t *buf, size_t len, const uint8_t tag[PIO_SEAL_TAG])
{
    struct imb_state *st = imb_state(s);
    uint8_t want[PIO_SEAL_TAG];
    if (!st)
        return -1;
    IMB_AES256_GCM_DEC(imb_mgr, &st->key, &st->ctx, buf, buf, len, nonce, ad, adlen, want,
                       PIO_SEAL_TAG);
    return sodium_memcmp(want, tag, PIO_SEAL_TAG) == 0 ? 0 : -1;
}

static void imb_fini(struct pio_seal *s)
{
    if (s->ctx) {
        sodium_memzero(s->ctx, sizeof(struct imb_state));
        free(s->ctx);
    }
    s->ctx = NULL;
}

const struct pio_seal_backend pio_seal_imb = {
    .name = "intel-ipsec-mb",
    .runs = imb_runs,
    .seal = imb_seal,
    .seal2 = imb_seal2,
    .open = imb_open,
    .fini = imb_fini,
};

#else /* built without the library */

static int imb_none(int cipher)
{
    (void)cipher;
    return 0;
}

const struct pio_seal_backend pio_seal_imb = {.name = "intel-ipsec-mb (not built)",
                                              .runs = imb_none};
#endif
