/* pool.h - the range allocator of a shared-memory pool region, and the pool mapping.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A process' pool is one shared-memory object with two regions: the send
 * region, allocated only by the process (libpio), and the receive region,
 * allocated only by its piod. Each region has exactly one allocator, so the
 * allocator itself needs no shared lock; the owner returns ranges when the
 * other side says (P_RELEASE, P_FREE) that it is done with them.
 * Thread-safety: a pio_ralloc is not thread-safe; its owner serializes calls.
 * pio_shm_* are thread-safe. */
#ifndef PIO_POOL_H
#define PIO_POOL_H

#include <stddef.h>
#include <stdint.h>

#define PIO_RALLOC_ALIGN 64 /* every range starts on a cache line */

struct pio_ralloc {
    uint64_t base, len; /* the region, in pool offsets */
    uint64_t used;      /* bytes allocated */
    uint32_t n, cap;    /* free ranges, sorted by offset, never adjacent */
    struct pio_rfree {
        uint64_t off, len;
    } * free;
};

/* pio_ralloc_init - manage [base, base+len). Returns PIO_OK or PIO_ENOMEM. */
int pio_ralloc_init(struct pio_ralloc *a, uint64_t base, uint64_t len);
void pio_ralloc_fini(struct pio_ralloc *a);

/* pio_ralloc_get - first fit of len bytes (rounded up to PIO_RALLOC_ALIGN).
 * *off [out]. Returns PIO_OK, PIO_EAGAIN (no room now), PIO_EINVAL (len 0 or
 * larger than the region), PIO_ENOMEM. */
int pio_ralloc_get(struct pio_ralloc *a, uint64_t len, uint64_t *off);

/* pio_ralloc_put - give back a range returned by pio_ralloc_get with the same
 * len. Returns PIO_OK, or PIO_EINVAL when the range is outside the region or
 * overlaps a free range (a double free: nothing is changed). */
int pio_ralloc_put(struct pio_ralloc *a, uint64_t off, uint64_t len);

/* pio_ralloc_largest - the largest range pio_ralloc_get could return now. */
uint64_t pio_ralloc_largest(const struct pio_ralloc *a);

/* pio_shm_create - create a new shared-memory object named name (shm_open,
 * O_EXCL, mode 0600), size it and map it. owner >= 0: make that uid its
 * owner (only root can; a failure to do so fails the call). *base [out].
 * The mapping is not populated: pages are allocated on first touch.
 * Returns PIO_OK or a converted errno. */
int pio_shm_create(const char *name, size_t size, long owner, void **base);

/* pio_shm_open - map an existing object read-write. *base, *size [out]. */
int pio_shm_open(const char *name, void **base, size_t *size);

/* pio_shm_close - unmap; unlink the name too when unlink_name. */
void pio_shm_close(const char *name, void *base, size_t size, int unlink_name);

#endif
