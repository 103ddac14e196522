/* seal.h - encryption of data channels and express lanes (piod.conf
 * `encrypt`, on by default).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A sealed channel encrypts each C_DATA payload with an AEAD and
 * authenticates each C_ACK; a sealed express lane carries every H_* frame
 * encrypted inside a C_SEALED frame. Two AEADs, chosen at the channel's
 * handshake (docs/protocol.md, "Sealing"):
 *   AES-256-GCM        when both piods take it (by default: a CPU with AES-NI
 *                      and carry-less multiply);
 *   ChaCha20-Poly1305  (IETF) otherwise.
 * A backend runs the AEAD (seal_be.h): intel-ipsec-mb for AES-256-GCM
 * where it is built and the CPU has AES-NI (VAES and AVX-512 where present),
 * libcrypto (OpenSSL EVP) otherwise and for ChaCha20-Poly1305; both are
 * several times faster here than libsodium's (design-notes.md, "Sealed by
 * default"). libsodium still does the key derivation. The key is new for every
 * connection:
 *   key = BLAKE2b-256(key = chan_key, label | challenge | index (u32 LE) | system)
 * label "PIO-SEAL-1" for ChaCha20-Poly1305, "PIO-SEAL-AES256GCM-1" for
 * AES-256-GCM; chan_key, challenge, index and system are those of the
 * channel's proof: only the two piods know chan_key (it travelled over
 * CURVE), and the challenge is fresh, so no two connections share a key.
 * Nonces (96 bits) are a counter per direction (opener -> acceptor: C_DATA
 * and C_SEALED, high bit clear; acceptor -> opener: C_ACK, high bit set),
 * 64 bits LE then 4 zero bytes; TCP keeps both in order, so the receiver
 * counts too and never reads a nonce off the wire. The associated data
 * binds the frame to its payload: msgid, off, len of the C_DATA (u64, u64,
 * u32 LE), the whole encoded C_ACK frame, or the C_SEALED header's first 12
 * bytes.
 * Thread-safety: a pio_seal belongs to one direction of one connection;
 * its owner serializes calls (the channel's sender thread, its receiver
 * thread, or the main loop for an express lane). A pio_seal may be moved
 * (copied) to another owner before first use or between uses.
 * Lifecycle: pio_seal_init, any number of pio_seal_data/open, then
 * pio_seal_fini (also on a state that was only zeroed: a no-op). */
#ifndef PIO_SEAL_H
#define PIO_SEAL_H

#include <stddef.h>
#include <stdint.h>

#define PIO_SEAL_TAG 16 /* bytes of the tag after each sealed payload */
#define PIO_SEAL_KEY 32

/* piod.conf `cipher`: which AEAD this piod offers (seal.c). */
enum pio_cipher {
    PIO_CIPHER_AUTO = 0,   /* AES-256-GCM where the CPU has AES-NI, else ChaCha20-Poly1305 */
    PIO_CIPHER_AES = 1,    /* AES-256-GCM whenever the peer takes it */
    PIO_CIPHER_CHACHA = 2, /* ChaCha20-Poly1305 always */
};

struct pio_seal_backend;
struct pio_seal {
    const struct pio_seal_backend *be; /* who runs the AEAD (seal_be.h) */
    void *ctx;                         /* the backend's state, made at the first use */
    int cipher;                        /* PIO_CIPHER_AES or PIO_CIPHER_CHACHA */
    int dir;                           /* what ctx is set up for: 0 none yet, 1 seal, 2 open */
    uint8_t key[PIO_SEAL_KEY];
    uint64_t n;    /* the next nonce's counter */
    uint64_t high; /* 0 (opener -> acceptor) or 1 << 63 (acceptor -> opener) */
};

/* pio_seal_has_aesni - 1 when this CPU has AES-NI and carry-less multiply
 * (AES-256-GCM runs fast), else 0. */
int pio_seal_has_aesni(void);

/* pio_seal_wants_aes - 1 when a piod configured with cipher (enum
 * pio_cipher) offers AES-256-GCM at the handshake. The AEAD of a
 * connection is AES-256-GCM when both ends offer it, else ChaCha20-Poly1305. */
int pio_seal_wants_aes(int cipher);

/* pio_seal_cipher_name - "aes-256-gcm", "chacha20-poly1305" or "auto". */
const char *pio_seal_cipher_name(int cipher);

/* pio_seal_backend - the backend that runs cipher here (seal_be.h);
 * pio_seal_backend_name - its name, "intel-ipsec-mb" or "libcrypto". */
const struct pio_seal_backend *pio_seal_backend(int cipher);
const char *pio_seal_backend_name(int cipher);

/* pio_seal_init - the state of one direction of one connection. cipher:
 * PIO_CIPHER_AES or PIO_CIPHER_CHACHA (the one agreed at the handshake);
 * chan_key and challenge are PIO_WIRE_KEY (32) bytes; ack_direction 0 for
 * C_DATA and C_SEALED (the opener seals, the acceptor opens), 1 for C_ACK.
 * Allocates nothing (the cipher context comes at the first use). */
void pio_seal_init(struct pio_seal *s, int cipher, const uint8_t chan_key[32],
                   const uint8_t challenge[32], uint32_t index, const char *system,
                   int ack_direction);

/* pio_seal_import - the state of one direction handed over by its piod (a
 * direct lane's end, P_LANE): the derived key, the next nonce's counter n
 * and the direction (0 C_DATA/C_SEALED, 1 C_ACK). Allocates nothing. */
void pio_seal_import(struct pio_seal *s, int cipher, const uint8_t key[PIO_SEAL_KEY], uint64_t n,
                     int ack_direction);

/* pio_seal_fini - forget the key and free the cipher context. */
void pio_seal_fini(struct pio_seal *s);

/* pio_seal_data - encrypt len bytes of in into out (out may equal in) and
 * write the tag; ad, adlen: the associated data. Uses one nonce. Returns 0,
 * or -1 when libcrypto fails (out of memory): the connection must close. */
int pio_seal_data(struct pio_seal *s, const uint8_t *ad, size_t adlen, const uint8_t *in,
                  uint8_t *out, size_t len, uint8_t tag[PIO_SEAL_TAG]);

/* pio_seal_data2 - pio_seal_data over in1[0..len1) followed by
 * in2[0..len2), into out[0..len1 + len2) (which overlaps neither): the
 * same bytes and tag as sealing the two joined, without joining them
 * first where the backend can (one pass over the bytes). Uses one nonce.
 * Returns 0 or -1 as pio_seal_data. */
int pio_seal_data2(struct pio_seal *s, const uint8_t *ad, size_t adlen, const uint8_t *in1,
                   size_t len1, const uint8_t *in2, size_t len2, uint8_t *out,
                   uint8_t tag[PIO_SEAL_TAG]);

/* pio_seal_nonces - the next nonce's counter (the one the next call uses). */
uint64_t pio_seal_nonces(const struct pio_seal *s);

/* pio_seal_reopen - decrypt in place, as pio_seal_open, what this side
 * sealed itself with counter n (from pio_seal_nonces before that seal);
 * s is left as it was (its counter does not move). For a sender that keeps
 * what it sealed and needs the clear bytes again. Returns 0, or -1 when
 * the bytes or tag are not what was sealed (or no memory). */
int pio_seal_reopen(const struct pio_seal *s, uint64_t n, const uint8_t *ad, size_t adlen,
                    uint8_t *buf, size_t len, const uint8_t tag[PIO_SEAL_TAG]);

/* pio_seal_open - decrypt buf[0..len) in place if tag is right for it and
 * ad. Returns 0, or -1 (forged, altered, reordered or replayed: buf holds
 * garbage, and the connection must be dropped: its nonce counters no longer
 * agree). Uses one nonce either way. */
int pio_seal_open(struct pio_seal *s, const uint8_t *ad, size_t adlen, uint8_t *buf, size_t len,
                  const uint8_t tag[PIO_SEAL_TAG]);

/* pio_seal_chunk_ad - the associated data of a C_DATA (20 bytes). */
void pio_seal_chunk_ad(uint8_t ad[20], uint64_t msgid, uint64_t off, uint32_t len);

#endif
