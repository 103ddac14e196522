/* seal.h - optional encryption of data channels (piod.conf `encrypt = yes`).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A sealed channel encrypts each C_DATA payload with
 * ChaCha20-Poly1305 (IETF, libsodium's crypto_aead_chacha20poly1305_ietf)
 * and authenticates each C_ACK. The key is new for every connection:
 *   key = BLAKE2b-256(key = chan_key, "PIO-SEAL-1" | challenge | index (u32 LE) | system)
 * where chan_key, challenge, index and system are those of the channel's
 * proof (docs/protocol.md, "Channel authentication"): only the two piods
 * know chan_key (it travelled over CURVE), and the challenge is fresh, so
 * no two connections share a key. Nonces are a counter per direction
 * (opener -> acceptor: C_DATA, high bit clear; acceptor -> opener: C_ACK,
 * high bit set), 64 bits LE then 4 zero bytes; TCP keeps both in order, so
 * the receiver counts too and never reads a nonce off the wire. The
 * associated data binds the frame to its payload: msgid, off, len of the
 * C_DATA (u64, u64, u32 LE), or the whole encoded C_ACK frame.
 * Thread-safety: a piod_seal belongs to one direction of one connection;
 * its owner serializes calls (the channel's sender thread, its receiver
 * thread). Nothing here allocates. */
#ifndef PIOD_SEAL_H
#define PIOD_SEAL_H

#include <stddef.h>
#include <stdint.h>

#define PIOD_SEAL_TAG 16 /* bytes of the tag after each sealed payload */
#define PIOD_SEAL_KEY 32

struct piod_seal {
    uint8_t key[PIOD_SEAL_KEY];
    uint64_t n;    /* the next nonce's counter */
    uint64_t high; /* 0 (opener -> acceptor) or 1 << 63 (acceptor -> opener) */
};

/* piod_seal_init - the state of one direction of one channel. chan_key and
 * challenge are PIO_WIRE_KEY (32) bytes; ack_direction 0 for C_DATA (the
 * opener seals, the acceptor opens), 1 for C_ACK. */
void piod_seal_init(struct piod_seal *s, const uint8_t chan_key[32], const uint8_t challenge[32],
                    uint32_t index, const char *system, int ack_direction);

/* piod_seal_data - encrypt len bytes of in into out (out may equal in) and
 * write the tag; ad, adlen: the associated data. Uses one nonce. */
void piod_seal_data(struct piod_seal *s, const uint8_t *ad, size_t adlen, const uint8_t *in,
                    uint8_t *out, size_t len, uint8_t tag[PIOD_SEAL_TAG]);

/* piod_seal_open - decrypt buf[0..len) in place if tag is right for it and
 * ad. Returns 0, or -1 (forged, altered, reordered or replayed: buf holds
 * garbage, and the connection must be dropped: its nonce counters no longer
 * agree). Uses one nonce either way. */
int piod_seal_open(struct piod_seal *s, const uint8_t *ad, size_t adlen, uint8_t *buf, size_t len,
                   const uint8_t tag[PIOD_SEAL_TAG]);

/* piod_seal_chunk_ad - the associated data of a C_DATA (20 bytes). */
void piod_seal_chunk_ad(uint8_t ad[20], uint64_t msgid, uint64_t off, uint32_t len);

#endif
