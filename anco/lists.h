/* lists.h - anco's replacement lists over a process's cache entries: the
 * singlet list and the general list of the published Anco design.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Every entry (0..cap-1) is free, on the general list, or on the singlet
 * list. The general list is an LRU of local accesses: a hit or a newly
 * filled entry goes to its head. The singlet list is a FIFO of blocks that
 * were about to be evicted while this cache held the only copy in the job
 * (a "singlet"): a hit moves such a block back to the general list's head.
 * The singlet list holds at most ratio x cap entries; when it is longer,
 * its oldest entry is the victim, else the general list's least recently
 * used one (which moves to the singlet list instead when it is a singlet).
 * Not thread-safe: one owner (the caller's lock). */
#ifndef ANCO_LISTS_H
#define ANCO_LISTS_H

#include <stdint.h>

/* Where an entry is: on one of the three lists, or out (the victim being
 * given up, until hit or released). */
enum anco_where { ANCO_FREE = 0, ANCO_GENERAL = 1, ANCO_SINGLET = 2, ANCO_OUT = 3 };

struct anco_lists {
    uint32_t cap;
    uint32_t singlet_max; /* ratio x cap, rounded down */
    int32_t *prev, *next; /* cap each: links within the entry's list (-1: none) */
    uint8_t *where;       /* cap: enum anco_where */
    int32_t head[3], tail[3];
    uint32_t len[3];
};

/* anco_lists_init - cap entries, all free; ratio in [0, 1]: the singlet
 * list's share. Returns 0, or -1 (out of memory, bad arguments). */
int anco_lists_init(struct anco_lists *l, uint32_t cap, double ratio);
void anco_lists_fini(struct anco_lists *l);

/* anco_lists_take_free - a free entry, now on the general list's head;
 * -1 when none is free. */
int32_t anco_lists_take_free(struct anco_lists *l);

/* anco_lists_hit - entry i was read here: to the general list's head
 * (from either list). */
void anco_lists_hit(struct anco_lists *l, int32_t i);

/* anco_lists_release - entry i is free again. */
void anco_lists_release(struct anco_lists *l, int32_t i);

/* anco_lists_victim - the entry to give up next, taken off its list (the
 * caller gives it up, then fills it and calls anco_lists_hit, or releases
 * it): the singlet list's oldest when that list is over its length, else
 * the general list's least recently used that is not a singlet
 * (is_singlet(ctx, i) != 0 moves i to the singlet list's head instead).
 * -1 when every entry is free. */
int32_t anco_lists_victim(struct anco_lists *l, int (*is_singlet)(void *ctx, int32_t i), void *ctx);

#endif
