/* dir.h - where anco's directories live and what their words mean: the
 * cell encoding of the representative directory, the group of a rank, the
 * owner of a directory row, and the alternative directory's slots. Pure
 * functions: thread-safe.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Groups: rank r is in group r % G, so neighbouring ranks (which read
 * neighbouring data) fall in different groups; group g's members are
 * g, g + G, g + 2G, ... (anco_group_size of them).
 *
 * Representative directory: a hash table of rows, one row per block ID,
 * dealt over all processes. Block IDs are sparse (anco.c hashes a file and
 * a block index into 64 bits), so a row is a tag word (the block ID that
 * owns the row; 0: free) and one 64-bit cell per group. Global row
 * r = (mix(id) + probe) % (size x rows), probe 0..ANCO_PROBES-1 (linear
 * probing), lives at rank r % size, row r / size, byte ANCO_DIR_HDR +
 * (r / size) x (1 + G) x 8 of that rank's directory window. A row is
 * claimed for an ID by compare-and-swap on its tag, and never given back
 * (a reader that read the tag could not tell a freed-and-reclaimed row
 * from its own); when all probes hold other IDs, that block is read around
 * the cache (counted as uncached). A whole row is read with one get; a
 * cell changes only by compare-and-swap. A cell is
 *     bits 63..62  state: 0 invalid, 1 loading, 2 loaded
 *     bits 61..32  rank of the holder (30 bits)
 *     bits 31..0   index of the entry in the holder's cache array
 * so the invalid cell is 0 and a cell names its holder completely. The
 * first ANCO_DIR_HDR bytes of a directory window are unused (room for a
 * version word).
 *
 * Alternative directory: per group, a hash table from block ID to a cell
 * (the group's own copy), its slots dealt over the group's members:
 * slot s of group g is slot s / n of member s % n (n members); collisions
 * overwrite (the table is a hint, checked by the reader against the cache
 * entry it points to). A slot is 16 bytes: the block ID, then the cell. */
#ifndef ANCO_DIR_H
#define ANCO_DIR_H

#include <stdint.h>

enum anco_state { ANCO_INVALID = 0, ANCO_LOADING = 1, ANCO_LOADED = 2 };

#define ANCO_RANK_MAX  ((1u << 30) - 1)
#define ANCO_CELL_SIZE 8
#define ANCO_SLOT_SIZE 16

static inline uint64_t anco_cell(enum anco_state st, uint32_t rank, uint32_t index)
{
    return st == ANCO_INVALID
               ? 0
               : ((uint64_t)st << 62) | ((uint64_t)(rank & ANCO_RANK_MAX) << 32) | index;
}

static inline enum anco_state anco_cell_state(uint64_t c)
{
    return (enum anco_state)(c >> 62);
}

static inline uint32_t anco_cell_rank(uint64_t c)
{
    return (uint32_t)(c >> 32) & ANCO_RANK_MAX;
}

static inline uint32_t anco_cell_index(uint64_t c)
{
    return (uint32_t)c;
}

/* anco_group - the group of rank among ngroups. */
static inline uint32_t anco_group(uint32_t rank, uint32_t ngroups)
{
    return rank % ngroups;
}

/* anco_group_size - members of group g when size processes form ngroups. */
static inline uint32_t anco_group_size(uint32_t g, uint32_t size, uint32_t ngroups)
{
    return g < size ? (size - g + ngroups - 1) / ngroups : 0;
}

/* anco_group_member - the rank of group g's k-th member. */
static inline uint32_t anco_group_member(uint32_t g, uint32_t k, uint32_t ngroups)
{
    return g + k * ngroups;
}

#define ANCO_DIR_HDR 64 /* bytes before the rows */
#define ANCO_PROBES  4  /* rows tried for one block ID */

/* anco_mix - a 64-bit mixer (splitmix64's finaliser). */
uint64_t anco_mix(uint64_t x);

/* anco_row_bytes - bytes of one representative row (tag + G cells). */
static inline uint64_t anco_row_bytes(uint32_t ngroups)
{
    return (1 + (uint64_t)ngroups) * ANCO_CELL_SIZE;
}

/* anco_row_place - where probe p (0..ANCO_PROBES-1) of block id's
 * representative row is, with rows rows per process: at rank *owner, byte
 * *disp of its directory window. */
void anco_row_place(uint64_t id, uint32_t p, uint32_t size, uint32_t rows, uint32_t ngroups,
                    uint32_t *owner, uint64_t *disp);

/* anco_alt_place - where block b's slot of group g's alternative directory
 * is (slots_per_member slots per member): rank *owner, byte *disp of its
 * alternative-directory window. */
void anco_alt_place(uint64_t b, uint32_t g, uint32_t size, uint32_t ngroups,
                    uint32_t slots_per_member, uint32_t *owner, uint64_t *disp);

#endif
