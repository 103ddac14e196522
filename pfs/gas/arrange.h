/* arrange.h - the "arrange" step of gather-arrange-scatter (GAS): a
 * dispatcher's sub-buffer of write requests for one I/O server, sorted by
 * (file, offset) and merged into as few extents as the bytes allow; and the
 * split of one request at block and stripe boundaries. Pure functions:
 * thread-safe on distinct arguments.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Merging: requests of one file that overlap or touch form one extent; where
 * they overlap, the bytes of the later request (higher seq) win, as they
 * would on a file written in that order. Requests of different files never
 * merge. The output is sorted by (file, offset), so the I/O server sees each
 * object written front to back: no seek between extents of one object that
 * the input order would have caused. */
#ifndef GAS_ARRANGE_H
#define GAS_ARRANGE_H

#include "layout.h"

#include <stddef.h>
#include <stdint.h>

/* One write as a local process issued it. */
struct gas_req {
    uint64_t file; /* the file (its pfs fid) */
    uint64_t off;  /* offset in the object (or the file: the caller's choice, one per buffer) */
    uint64_t len;
    uint64_t seq; /* issue order: a later write has a higher seq */
    const uint8_t *data;
    uint32_t count; /* the writes it stands for (a held-back extent: several; 0 counts as 1) */
};

/* One merged extent: its bytes are in the caller's output buffer at pos. */
struct gas_extent {
    uint64_t file;
    uint64_t off;
    uint64_t len;
    size_t pos;
    uint32_t nreq; /* requests merged into it (the sum of their counts) */
};

/* gas_arrange - sort v (n requests; reordered in place) and merge it into
 * out (room for n extents: there are never more extents than requests),
 * copying the bytes into buf (cap bytes: the sum of the requests' lengths is
 * always enough). *nout [out] extents. Returns 0, or -1 when buf is too
 * small (nothing usable in out). */
int gas_arrange(struct gas_req *v, size_t n, struct gas_extent *out, size_t *nout, uint8_t *buf,
                size_t cap);

/* gas_whole_blocks - the whole blocks of `block` bytes inside [off,
 * off + len): *lo and *hi (lo <= hi) bound the largest block-aligned range
 * in it; lo == hi when it holds no whole block. The bytes before lo and
 * after hi are the extent's partial blocks. */
void gas_whole_blocks(uint64_t off, uint64_t len, uint64_t block, uint64_t *lo, uint64_t *hi);

/* gas_split - the first piece of a write of len bytes at file offset off
 * (len > 0) that stays within one block of `block` bytes of the file (0:
 * no block limit) and within one stripe unit of layout l: the piece's
 * stripe, object offset and length (pfs_map's, cut at the block end). */
struct pfs_piece gas_split(const struct pfs_layout *l, uint64_t block, uint64_t off, uint64_t len);

#endif
