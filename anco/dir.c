/* dir.c - the directories' hashing (dir.h).
 * SPDX-License-Identifier: BSD-3-Clause */
#include "dir.h"

uint64_t anco_mix(uint64_t x)
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
    uint64_t s = anco_mix(b) % slots;
    *owner = anco_group_member(g, (uint32_t)(s % n), ngroups);
    *disp = (s / n) * ANCO_SLOT_SIZE;
}

void anco_row_place(uint64_t id, uint32_t p, uint32_t size, uint32_t rows, uint32_t ngroups,
                    uint32_t *owner, uint64_t *disp)
{
    uint64_t r = (anco_mix(id) + p) % ((uint64_t)size * rows);
    *owner = (uint32_t)(r % size);
    *disp = ANCO_DIR_HDR + (r / size) * anco_row_bytes(ngroups);
}
