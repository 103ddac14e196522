/* store.h - anco's backing stores: where a block comes from when no cache
 * in the job holds it. Each store is a const ops table; anco_store_find is
 * the one place a path chooses its store:
 *   pio://HOST/PATH   PATH on HOST's PIO file service (PIO_Rfile), over the
 *                     bundle (the slow I/O-node link of the benchmark);
 *   anything else     a local path (any POSIX file system).
 * Thread-safety: a handle is used under its anco's lock; the tables are
 * constant.
 * SPDX-License-Identifier: BSD-3-Clause */
#ifndef ANCO_STORE_H
#define ANCO_STORE_H

#include <stddef.h>
#include <stdint.h>

struct anco_store_ops {
    const char *name;
    /* open path read-only: *h [out], *size [out]; a PIO status */
    int (*open)(const char *path, void **h, uint64_t *size);
    /* len bytes at off into buf (fewer only at the end); a PIO status */
    int (*pread)(void *h, void *buf, size_t len, uint64_t off, size_t *got);
    void (*close)(void *h);
};

/* anco_store_find - the store that serves path. */
const struct anco_store_ops *anco_store_find(const char *path);

#endif
