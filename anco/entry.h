/* entry.h - one entry of a process's anco cache array, as other processes
 * read it with one-sided gets. Thread-safety: anco_entry_fill and
 * anco_entry_clear by the entry's owner only (its cache lock); readers
 * anywhere.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The cache array lives in a registered window: entry i at byte
 * i * (ANCO_ENTRY_HDR + block), a 16-byte header (block ID, acquisition
 * token: two 64-bit words) then the block's bytes. Tokens come from a
 * per-process counter and are never reused (nor 0). The owner
 *   acquires: writes the data, then the token, then the ID;
 *   gives up: clears the ID, then the token.
 * A reader knows the ID it wants (from a directory cell) and reads the
 * header, the data, and the header again; it keeps the data only when both
 * headers show that ID and the same token. Both checks are needed, for the
 * two races of the published design:
 *   1. the block is replaced while the data is read: the second header has
 *      another ID (or 0), and the data may be the new block's: the reader
 *      must go back to the directory (ANCO_STALE);
 *   2. the block is replaced, and replaced again by the same block ID (given
 *      up and re-acquired by the same owner, possibly in another order of
 *      bytes), while the data is read: the ID matches before and after but
 *      the data may mix the two fills; only the token, new at every
 *      acquisition, shows it: the reader reads again (a retry).
 * An ID check alone misses race 2; a token check alone misses nothing, but
 * without the ID the reader cannot tell "replaced by another block" (go
 * back to the directory) from "refilled with mine" (read again). */
#ifndef ANCO_ENTRY_H
#define ANCO_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#define ANCO_ENTRY_HDR 16
#define ANCO_STALE     (-2) /* the entry no longer holds the block */

/* How a reader gets bytes from another process's cache window (PIO_Get in
 * anco, a fake in the tests): 0, or -1 (a failure). */
struct anco_rma {
    int (*get)(void *ctx, uint32_t rank, uint64_t disp, void *buf, size_t len);
    void *ctx;
};

/* anco_entry_disp - byte of entry i in a cache window of block-byte blocks. */
static inline uint64_t anco_entry_disp(uint32_t i, uint64_t block)
{
    return (uint64_t)i * (ANCO_ENTRY_HDR + block);
}

/* anco_entry_fill - entry i of the local array base becomes block id with
 * token (never 0): len bytes of data (len <= block), then the token, then
 * the ID, each store ordered after the one before. */
void anco_entry_fill(uint8_t *base, uint64_t block, uint32_t i, uint64_t id, uint64_t token,
                     const void *data, size_t len);

/* anco_entry_clear - give entry i up: the ID, then the token. */
void anco_entry_clear(uint8_t *base, uint64_t block, uint32_t i);

/* anco_entry_read - len bytes (len <= block) of block id from entry i of
 * rank's cache array into out, checked as above; a header whose token
 * changed is read again, up to tries times. *retries [out, may be NULL]
 * counts them. Returns 0, ANCO_STALE (the entry holds another block, or
 * kept changing), or -1 (rma failed). */
int anco_entry_read(const struct anco_rma *rma, uint32_t rank, uint64_t block, uint32_t i,
                    uint64_t id, void *out, size_t len, int tries, uint32_t *retries);

#endif
