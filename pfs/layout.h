/* layout.h - the stripe-count policy, the choice of servers, and the mapping
 * of file ranges onto stripe objects. Pure functions: thread-safe.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A file of layout L keeps stripe unit u (bytes [u*S, (u+1)*S) of the file,
 * S = L.stripe_size) in stripe u % L.count, on server L.servers[u % count],
 * at offset (u / count) * S of that server's object of the file. */
#ifndef PFS_LAYOUT_H
#define PFS_LAYOUT_H

#include "proto.h"

#include <stdint.h>

#define PFS_STRIPE_SIZE_DEFAULT (1u << 20)  /* 1 MiB */
#define PFS_POLICY_BYTES        (16u << 20) /* one stripe per 16 MiB of size */

/* pfs_policy_count - the stripe count of a new file: the wish when not 0
 * (capped at PFS_STRIPES_MAX and nservers), else the directory's default when
 * not 0 (same caps), else for a known size min(ceil(size / 16 MiB), 32,
 * nservers), at least 1; for an unknown size (0), 1. */
uint32_t pfs_policy_count(uint64_t size_hint, uint32_t wish, uint32_t dir_default,
                          uint32_t nservers);

/* pfs_layout_place - fill l->servers for l->count stripes over nservers,
 * starting at server *next, which advances by count (mod nservers): over
 * many files every server holds its share of stripes +- 1. */
void pfs_layout_place(struct pfs_layout *l, uint32_t nservers, uint32_t *next);

/* pfs_layout_valid - 1 when l is usable with nservers servers: stripe size a
 * positive multiple of 4 KiB up to 4 GiB, count 1..PFS_STRIPES_MAX, servers
 * distinct and below nservers. */
int pfs_layout_valid(const struct pfs_layout *l, uint32_t nservers);

/* One piece of a file range on one stripe. */
struct pfs_piece {
    uint32_t stripe;  /* index into layout.servers */
    uint64_t obj_off; /* offset in that server's object */
    uint64_t file_off;
    uint64_t len;
};

/* pfs_map - the first piece of [off, off + len) (len > 0): it ends at the
 * stripe unit's end or at off + len, and at most max bytes (0 = no limit). */
struct pfs_piece pfs_map(const struct pfs_layout *l, uint64_t off, uint64_t len, uint64_t max);

/* pfs_object_size - bytes of stripe's object for a file of size bytes. */
uint64_t pfs_object_size(const struct pfs_layout *l, uint32_t stripe, uint64_t size);

#endif
