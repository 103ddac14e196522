/* dir.c - the alternative directory's hashing (dir.h).
 * SPDX-License-Identifier: BSD-3-Clause */
#include "anco/dir.h"

/* a 64-bit mixer (splitmix64's finaliser): block IDs are often consecutive */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

void anco_alt_place(uint64_t b, uint32_t g, uint32_t size, uint32_t ngroups,
                    uint32_t slots_per_member, uint32_t *owner, uint64_t *disp)
{
    uint32_t n = anco_group_size(g, size, ngroups);
    uint64_t slots = (uint64_t)n * slots_per_member;
    uint64_t s = mix(b) % slots;
    *owner = anco_group_member(g, (uint32_t)(s % n), ngroups);
    *disp = (s / n) * ANCO_SLOT_SIZE;
}
