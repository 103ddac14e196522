/* pool.c - range allocator for pool regions, and shared-memory mapping.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The free list is a sorted array of disjoint, non-adjacent ranges: first fit
 * on get, binary-search insert with coalescing on put. Pools hold tens of
 * ranges in practice (one per chunk in flight), so an array beats a tree.
 * No locks here: each region has a single owner that serializes its calls.
 */
#include "pool.h"
#include "err.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t ra_round(uint64_t len)
{
    return (len + PIO_RALLOC_ALIGN - 1) & ~(uint64_t)(PIO_RALLOC_ALIGN - 1);
}

int pio_ralloc_init(struct pio_ralloc *a, uint64_t base, uint64_t len)
{
    memset(a, 0, sizeof(*a));
    a->base = base;
    a->len = len & ~(uint64_t)(PIO_RALLOC_ALIGN - 1);
    a->cap = 16;
    a->free = malloc(a->cap * sizeof(*a->free));
    if (!a->free)
        return PIO_ENOMEM;
    if (a->len > 0) {
        a->free[0].off = base;
        a->free[0].len = a->len;
        a->n = 1;
    }
    return PIO_OK;
}

void pio_ralloc_fini(struct pio_ralloc *a)
{
    free(a->free);
    memset(a, 0, sizeof(*a));
}

int pio_ralloc_get(struct pio_ralloc *a, uint64_t len, uint64_t *off)
{
    if (len == 0 || len > a->len)
        return PIO_EINVAL;
    len = ra_round(len);
    for (uint32_t i = 0; i < a->n; i++) {
        if (a->free[i].len < len)
            continue;
        *off = a->free[i].off;
        a->free[i].off += len;
        a->free[i].len -= len;
        if (a->free[i].len == 0) {
            memmove(&a->free[i], &a->free[i + 1], (a->n - i - 1) * sizeof(*a->free));
            a->n--;
        }
        a->used += len;
        return PIO_OK;
    }
    return PIO_EAGAIN;
}

int pio_ralloc_put(struct pio_ralloc *a, uint64_t off, uint64_t len)
{
    len = ra_round(len);
    if (len == 0 || off < a->base || off + len > a->base + a->len || off + len < off)
        return PIO_EINVAL;
    /* first free range after off */
    uint32_t lo = 0, hi = a->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (a->free[mid].off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint32_t i = lo;
    if (i > 0 && a->free[i - 1].off + a->free[i - 1].len > off)
        return PIO_EINVAL;
    if (i < a->n && off + len > a->free[i].off)
        return PIO_EINVAL;
    int join_prev = i > 0 && a->free[i - 1].off + a->free[i - 1].len == off;
    int join_next = i < a->n && off + len == a->free[i].off;
    if (join_prev && join_next) {
        a->free[i - 1].len += len + a->free[i].len;
        memmove(&a->free[i], &a->free[i + 1], (a->n - i - 1) * sizeof(*a->free));
        a->n--;
    } else if (join_prev) {
        a->free[i - 1].len += len;
    } else if (join_next) {
        a->free[i].off = off;
        a->free[i].len += len;
    } else {
        if (a->n == a->cap) {
            struct pio_rfree *nf = realloc(a->free, 2 * a->cap * sizeof(*nf));
            if (!nf)
                return PIO_ENOMEM;
            a->free = nf;
            a->cap *= 2;
        }
        memmove(&a->free[i + 1], &a->free[i], (a->n - i) * sizeof(*a->free));
        a->free[i].off = off;
        a->free[i].len = len;
        a->n++;
    }
    a->used -= len;
    return PIO_OK;
}

uint64_t pio_ralloc_largest(const struct pio_ralloc *a)
{
    uint64_t m = 0;
    for (uint32_t i = 0; i < a->n; i++)
        if (a->free[i].len > m)
            m = a->free[i].len;
    return m;
}

int pio_shm_create(const char *name, size_t size, long owner, void **base)
{
    int rc = PIO_OK;
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    PIO_CHECK(fd < 0, rc, pio_from_errno(errno), out);
    PIO_CHECK(owner >= 0 && (uid_t)owner != geteuid() && fchown(fd, (uid_t)owner, (gid_t)-1) != 0,
              rc, pio_from_errno(errno), unlink);
    PIO_CHECK(ftruncate(fd, (off_t)size) != 0, rc, pio_from_errno(errno), unlink);
    /* not populated: zeroing 64 MiB here stalled piod's main loop for tens
     * of milliseconds per join (pio_shm_open does not populate either) */
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    PIO_CHECK(p == MAP_FAILED, rc, pio_from_errno(errno), unlink);
    *base = p;
    close(fd);
    return PIO_OK;
unlink:
    shm_unlink(name);
    close(fd);
out:
    return rc;
}

int pio_shm_open(const char *name, void **base, size_t *size)
{
    int rc = PIO_OK;
    struct stat st;
    int fd = shm_open(name, O_RDWR, 0);
    PIO_CHECK(fd < 0, rc, pio_from_errno(errno), out);
    PIO_CHECK(fstat(fd, &st) != 0, rc, pio_from_errno(errno), close);
    /* not populated either: zeroing the whole pool (64 MiB: 40 ms here)
     * made every join that slow; each page costs its fault once, on first
     * use, and ranges are reused from the bottom (pio_ralloc) */
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    PIO_CHECK(p == MAP_FAILED, rc, pio_from_errno(errno), close);
    *base = p;
    *size = (size_t)st.st_size;
close:
    close(fd);
out:
    return rc;
}

void pio_shm_close(const char *name, void *base, size_t size, int unlink_name)
{
    if (base)
        munmap(base, size);
    if (unlink_name && name)
        shm_unlink(name);
}
