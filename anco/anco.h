/* anco.h - anco, a cooperative read cache across the processes of a job:
 * every process's cache is part of one global cache, read with one-sided
 * gets only (no process handles a message for another's read).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The processes of one PIO application (PIO_Init(app, rank, size) done by
 * the caller, or by anco_init itself) each hold a cache array of cache_bytes in a
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
 * Read-ahead: a process that reads a file's blocks in order (three in a
 * row) also loads the next few blocks that no process of the job holds or
 * is loading ($ANCO_READAHEAD blocks, default 4, at most a quarter of the
 * cache), claimed as above: the store is kept busy instead of idling
 * between one on-demand load and the next, and still read at most once per
 * group.
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
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct anco anco;
typedef struct anco_file anco_file;

typedef struct anco_config {
    size_t block;         /* bytes (0: $ANCO_BLOCK, else 1 MiB) */
    size_t cache_bytes;   /* per process (0: $ANCO_CACHE, else 64 MiB) */
    uint32_t groups;      /* (0: $ANCO_GROUPS, else 1) */
    double singlet_ratio; /* < 0: $ANCO_SINGLET, else 0.5 (0 is a valid ratio) */
    uint32_t dir_rows;    /* directory rows per process (0: $ANCO_DIR_ROWS, else 65536) */
    const char *app;      /* PIO application to join when PIO is not initialized yet
                           * (NULL: $ANCO_APP, else $PIO_APP, else "anco") */
} anco_config;

/* anco_config_default - every field "from the environment" (0, -1, NULL). */
void anco_config_default(anco_config *cfg);

typedef struct anco_stats {
    uint64_t hits_local, hits_remote, fs_reads; /* blocks served from each */
    uint64_t retries;   /* remote reads read again (an entry refilled meanwhile) */
    uint64_t stale;     /* remote copies found replaced: back to the directory */
    uint64_t evictions; /* entries given up */
    uint64_t polls;     /* waits for another member's load */
    uint64_t uncached;  /* blocks read around the cache (directory full, a peer gone) */
    uint64_t ahead;     /* blocks loaded ahead of a sequential read (also in fs_reads) */
} anco_stats;

/* anco_init - this process (rank of size) joins the job's cache: creates
 * its three windows (the cache array, its rows of the representative
 * directory, its slots of the alternative directory). If PIO is not
 * initialized, joins PIO first as process rank of size of application
 * cfg->app (and leaves it at anco_finalize). cfg may be NULL (everything
 * from the environment). Every process of the job calls it with the same
 * size, block, groups and dir_rows (cache_bytes may differ). *a [out].
 * Returns PIO_OK; PIO_EINVAL (bad arguments or environment: the message is
 * printed to stderr); PIO_ENOMEM; any PIO_Init or PIO_Win_create error. */
int anco_init(const anco_config *cfg, int rank, int size, anco **a);

#ifdef MPI_VERSION
/* anco_init_comm - anco_init with this process's rank and size in comm
 * (mpi.h included before anco.h). */
static inline int anco_init_comm(const anco_config *cfg, MPI_Comm comm, anco **a)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    return anco_init(cfg, rank, size, a);
}
#endif

/* anco_open - open path read-only (the same path in every process names
 * the same file): a local path (any POSIX file system), or
 * pio://HOST/PATH: PATH on HOST's PIO file service (PIO_Rfile_open).
 * *f [out]; *size [out, may be NULL]: the file's size. Returns PIO_OK or
 * the store's error (PIO_ENOENT, PIO_EPERM, ...). */
int anco_open(anco *a, const char *path, anco_file **f, uint64_t *size);

/* anco_pread - count bytes at offset through the cache into buf; *got
 * [out] fewer only at the end of the file. Returns PIO_OK or PIO_EIO (the
 * store failed; nothing cached changed). */
int anco_pread(anco_file *f, void *buf, size_t count, uint64_t offset, size_t *got);

/* anco_close - forget f (its blocks stay cached until evicted). */
int anco_close(anco_file *f);

/* anco_barrier - collective: returns when every process of the job has
 * called it (by atomics on rank 0's directory window; no messages).
 * Returns PIO_OK or PIO_ETIMEDOUT (after $ANCO_BARRIER_TIMEOUT seconds,
 * default 600). */
int anco_barrier(anco *a);

/* anco_get_stats - the counters of this process. */
int anco_get_stats(anco *a, anco_stats *st);

/* anco_print_stats - one line of this process's counters to f:
 *   anco: rank R: local L remote M fs F retries T stale S evictions E polls P uncached U
 *   ahead A */
void anco_print_stats(anco *a, FILE *f);

/* anco_finalize - collective: waits (anco_barrier) until every process is
 * done, so no process's cache disappears under another's read, frees the
 * windows and *a; leaves PIO if anco_init joined it. */
int anco_finalize(anco *a);

#ifdef __cplusplus
}
#endif
#endif
