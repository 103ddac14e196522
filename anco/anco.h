/* anco.h - anco, a cooperative read cache across the processes of a job:
 * every process's cache is part of one global cache, read with one-sided
 * gets only (no process handles a message for another's read).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * STATUS: the interface of issue 12; the implementation is in progress (the
 * lists, the directory encoding and the cache entry are done: lists.h,
 * dir.h, entry.h). Nothing here is installed yet.
 *
 * The processes of one PIO application (PIO_Init(app, rank, size) done by
 * the caller, or anco_init_mpi) each hold a cache array of cache_bytes in a
 * window, and between them two directories (dir.h): which group member
 * holds which block. A read of a block (block bytes of a file, default
 * 1 MiB) is served
 *   - from this process's cache (a local hit),
 *   - else from a loaded copy in this process's group (a remote hit: one
 *     get), or, when the group has none, from another group's copy,
 *   - else from the file system, by the one process of the group that
 *     marked itself the block's representative (loading); the others of the
 *     group poll the cell until it is loaded.
 * So when every process of a job reads the same block at once, the file
 * system serves it at most once per group.
 *
 * Block IDs: a file is known by a 24-bit hash of its path (the same path in
 * every process) and a block by its index (40 bits): id = hash << 40 | index
 * + 1 (0 is no block).
 *
 * Thread-safety: an anco handle and its files may be used by several
 * threads of a process (one lock per process cache).
 */
#ifndef ANCO_H
#define ANCO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct anco anco;
typedef struct anco_file anco_file;

typedef struct anco_config {
    size_t block;         /* bytes (0: $ANCO_BLOCK, else 1 MiB) */
    size_t cache_bytes;   /* per process (0: $ANCO_CACHE, else 64 MiB) */
    uint32_t groups;      /* (0: $ANCO_GROUPS, else 1) */
    double singlet_ratio; /* < 0: $ANCO_SINGLET, else 0.5 */
} anco_config;

typedef struct anco_stats {
    uint64_t hits_local, hits_remote, fs_reads; /* blocks served from each */
    uint64_t retries;   /* remote reads read again (an entry refilled meanwhile) */
    uint64_t stale;     /* remote copies found replaced: back to the directory */
    uint64_t evictions; /* entries given up */
    uint64_t polls;     /* waits for another member's load */
} anco_stats;

/* anco_init - this process (rank of size, the PIO application's processes)
 * joins the job's cache. cfg may be NULL (everything from the environment).
 * Collective: every process calls it. *a [out]. Returns a PIO status. */
int anco_init(const anco_config *cfg, int rank, int size, anco **a);

/* anco_open - open path (the same path in every process) read-only. */
int anco_open(anco *a, const char *path, anco_file **f);

/* anco_pread - count bytes at offset through the cache; *got [out] fewer
 * only at the end of the file. */
int anco_pread(anco_file *f, void *buf, size_t count, uint64_t offset, size_t *got);

int anco_close(anco_file *f);

/* anco_get_stats - the counters of this process. */
int anco_get_stats(anco *a, anco_stats *st);

/* anco_finalize - collective: leave the cache (windows freed). */
int anco_finalize(anco *a);

#ifdef __cplusplus
}
#endif
#endif
