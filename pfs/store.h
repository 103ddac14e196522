/* store.h - the storage backend of an I/O server: a const ops table, chosen
 * by name in one place (pfs_store_find). Objects are named by file id.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Thread-safety: every op may be called by several service threads at once,
 * on the same object too (writes to disjoint ranges). */
#ifndef PFS_STORE_H
#define PFS_STORE_H

#include <stddef.h>
#include <stdint.h>

struct pfs_store; /* a backend's state */

struct pfs_store_ops {
    const char *name;
    /* open - the store rooted at dir (created if missing). Returns a PIO
     * status; *st [out]. */
    int (*open)(const char *dir, struct pfs_store **st);
    void (*close)(struct pfs_store *st);
    /* write - n bytes at off of object fid (created on first write). */
    int (*write)(struct pfs_store *st, uint64_t fid, uint64_t off, const void *buf, size_t n);
    /* read - up to n bytes at off: *got [out] fewer at the object's end; a
     * missing object reads as empty (PIO_OK, *got = 0). */
    int (*read)(struct pfs_store *st, uint64_t fid, uint64_t off, void *buf, size_t n, size_t *got);
    int (*truncate)(struct pfs_store *st, uint64_t fid, uint64_t size);
    int (*destroy)(struct pfs_store *st, uint64_t fid);              /* missing: PIO_OK */
    int (*sync)(struct pfs_store *st, uint64_t fid);                 /* missing: PIO_OK */
    int (*size)(struct pfs_store *st, uint64_t fid, uint64_t *size); /* missing: 0 */
    /* df - bytes used by objects, bytes free on the device, objects. */
    int (*df)(struct pfs_store *st, uint64_t *used, uint64_t *avail, uint64_t *objects);
};

/* pfs_store_find - the backend called name ("posix"); NULL if none. */
const struct pfs_store_ops *pfs_store_find(const char *name);

extern const struct pfs_store_ops pfs_store_posix;

#endif
