/* iostat.h - an I/O server's request counters: requests, bytes, and seeks
 * (a request whose offset is not where the previous request on the same
 * object ended), the measure GAS's arrangement is judged by. Thread-safe:
 * every function, on one pfs_iostat shared by the service threads.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The end of the last request on each object is kept in a fixed table
 * hashed by object id (PFS_IOSTAT_SLOTS entries, one object per entry: a
 * colliding object takes the entry over). An object with no entry counts as
 * ending at 0, so the first request on a new object at offset 0 is not a
 * seek; after a collision a request may count as a seek it was not. */
#ifndef PFS_IOSTAT_H
#define PFS_IOSTAT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define PFS_IOSTAT_SLOTS 65536

struct pfs_iostat_counts {
    uint64_t writes, reads;
    uint64_t bytes_written, bytes_read;
    uint64_t seeks;
};

struct pfs_iostat {
    pthread_mutex_t mtx;
    struct pfs_iostat_counts c;
    struct {
        uint64_t fid; /* 0: empty (pfs fids start at 1) */
        uint64_t end;
    } * last; /* PFS_IOSTAT_SLOTS */
};

/* pfs_iostat_init - 0, or -1 out of memory. pfs_iostat_fini frees. */
int pfs_iostat_init(struct pfs_iostat *s);
void pfs_iostat_fini(struct pfs_iostat *s);

/* pfs_iostat_note - one request on object fid: len bytes at off. */
void pfs_iostat_note(struct pfs_iostat *s, uint64_t fid, uint64_t off, uint64_t len, int write);

/* pfs_iostat_get - the counts so far; reset: zero them (the objects' ends
 * are kept). */
struct pfs_iostat_counts pfs_iostat_get(struct pfs_iostat *s, int reset);

/* pfs_iostat_format - c as one text line "io requests=N writes=N reads=N
 * bytes_written=N bytes_read=N seeks=N\n" into buf (cap bytes); the length. */
size_t pfs_iostat_format(const struct pfs_iostat_counts *c, char *buf, size_t cap);

#endif
