/* htab.h - an intrusive hash table of 64-bit hashes (chained buckets).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The main loop finds a message, a process or a stream by its identity in
 * O(1) whatever the number in flight: each object embeds a piod_hlink and is
 * linked under the hash of its identity. Several objects may share a hash;
 * the caller walks the ones with its hash (piod_htab_first / _next) and
 * compares the identity itself. The table doubles its buckets when it holds
 * twice as many entries as buckets. Not thread-safe (the main thread's).
 */
#ifndef PIOD_HTAB_H
#define PIOD_HTAB_H

#include <stddef.h>
#include <stdint.h>

struct piod_hlink {
    struct piod_hlink *next;
    uint64_t h;
};

struct piod_htab {
    struct piod_hlink **b;
    size_t nb, n;
};

/* piod_hash64 - a 64-bit mix of a and b (for identities of two numbers). */
uint64_t piod_hash64(uint64_t a, uint64_t b);

/* piod_htab_add - link l under hash h. Returns 0, or -1 when memory is short
 * (l is then not linked). */
int piod_htab_add(struct piod_htab *t, struct piod_hlink *l, uint64_t h);

/* piod_htab_del - unlink l (linked by piod_htab_add; a no-op otherwise). */
void piod_htab_del(struct piod_htab *t, struct piod_hlink *l);

/* piod_htab_first - the first entry linked under h (NULL: none); then
 * piod_htab_next(l) for the following ones with the same h. */
struct piod_hlink *piod_htab_first(const struct piod_htab *t, uint64_t h);
struct piod_hlink *piod_htab_next(const struct piod_hlink *l);

/* piod_htab_free - the bucket array (the entries are the caller's). */
void piod_htab_free(struct piod_htab *t);

#define PIOD_CONTAINER(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

#endif
