/* pfs.h - libpfs, the client library of the PIO parallel file system.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A pfs file system is one metadata server (a PIO application, "pfs.mds" by
 * default) and N I/O servers, each a PIO application on its own host. A
 * client is a PIO application too: it calls PIO_Init first, then pfs_mount.
 * Files are striped: stripe unit u of a file (stripe_size bytes) lives on
 * server layout.servers[u % count]. Writes go to all servers of a range in
 * parallel; reads of PFS_READ_DIRECT bytes or more are put by the servers
 * straight into a window of the client (one-sided), smaller ones come back
 * as messages.
 *
 * Every piece of every read and write is checked end to end: the server
 * returns the XXH3-64 of the bytes it received or read, and a mismatch
 * fails the call with PIO_EIO.
 *
 * Every function returns a PIO status (pio.h: PIO_OK = 0; PIO_Strerror gives
 * the words); pfs_errtext gives the server's own words for the last failure
 * of the calling thread. Thread-safety: a pfs_fs may be used by several
 * threads at once; a pfs_file by one thread at a time.
 *
 * Service class: each request carries one (e.g. "interactive", "staging").
 * The mount's class comes from pfs_mount's argument, else $PFS_CLASS, else
 * "interactive"; pfs_set_class changes it. The I/O servers map names to their
 * configured classes (an unknown name gets the first class).
 */
#ifndef PFS_H
#define PFS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
/* libpfs is built with hidden visibility: what this header declares is
 * what libpfs.so exports (pfs/libpfs.map), and nothing else. */
#if defined(__GNUC__) && __GNUC__ >= 4
#pragma GCC visibility push(default)
#endif

typedef struct pfs_fs pfs_fs;
typedef struct pfs_file pfs_file;

#define PFS_STRIPES_LIMIT 32
#define PFS_READ_DIRECT   (256u << 10) /* reads this big go one-sided */

typedef struct pfs_stripe {
    uint64_t stripe_size;                /* bytes (0 = default 1 MiB) */
    uint32_t count;                      /* stripes (0 = policy) */
    uint32_t servers[PFS_STRIPES_LIMIT]; /* getstripe: the servers, in stripe order */
} pfs_stripe;

typedef struct pfs_stat {
    uint64_t fid;
    int is_dir;
    uint32_t mode;
    uint32_t uid, gid; /* owner and group (the creator's, as the piods stamped it) */
    uint64_t size;
    int64_t mtime_ns;
    pfs_stripe stripe; /* files: the layout; directories: the default (count 0: none) */
} pfs_stat;

typedef struct pfs_entry {
    char name[256];
    int is_dir;
    uint32_t mode;
    uint64_t size;
    int64_t mtime_ns;
} pfs_entry;

/* pfs_mount - connect to the file system whose metadata server is the PIO
 * application mds (NULL: $PFS_MDS, else "pfs.mds"). cls: service class name
 * (NULL: $PFS_CLASS, else "interactive"). PIO_Init must have been called.
 * *fs [out]: free with pfs_umount. Returns PIO_OK, PIO_ENOTINIT,
 * PIO_EPARTNER (no such server), PIO_ENOMEM, or the server's answer. */
int pfs_mount(const char *mds, const char *cls, pfs_fs **fs);

/* pfs_umount - forget fs (files still open must be closed first). */
int pfs_umount(pfs_fs *fs);

/* pfs_set_class - the service class of fs's later requests (copied). */
int pfs_set_class(pfs_fs *fs, const char *cls);

/* pfs_nservers - the number of I/O servers; name [out, may be NULL]: the
 * PIO application of server i (valid until pfs_umount). */
int pfs_nservers(pfs_fs *fs);
const char *pfs_server_name(pfs_fs *fs, int i);

/* Open flags (O_* values are not used, to keep the header free of fcntl.h). */
#define PFS_RDONLY 0x0
#define PFS_WRONLY 0x1
#define PFS_RDWR   0x2
#define PFS_CREAT  0x40
#define PFS_EXCL   0x80
#define PFS_TRUNC  0x200

/* pfs_open - open path (absolute, e.g. "/a/b"). flags: PFS_RDONLY, WRONLY or
 * RDWR, | PFS_CREAT, PFS_EXCL, PFS_TRUNC; mode: permission bits when created.
 * *f [out]. Returns PIO_OK, PIO_ENOENT, PIO_EEXIST, PIO_EISDIR, PIO_EINVAL. */
int pfs_open(pfs_fs *fs, const char *path, int flags, uint32_t mode, pfs_file **f);

/* pfs_create - create path for writing with a layout: stripe (NULL or count
 * 0: the directory's default, else the policy for size_hint bytes, 0 =
 * unknown) and replace an existing file (its old objects are removed), so the
 * new file gets a fresh layout. Returns as pfs_open. */
int pfs_create(pfs_fs *fs, const char *path, uint32_t mode, const pfs_stripe *stripe,
               uint64_t size_hint, pfs_file **f);

/* pfs_pread / pfs_pwrite - count bytes at offset. *got [out]: bytes read
 * (fewer only at the end of the file; holes read as zeros). pwrite returns
 * when every server of the range has the bytes. Errors: PIO_EIO with the
 * failing server in pfs_errtext, PIO_EGONE (a server left), PIO_EBADF-like
 * misuse as PIO_EINVAL (reading a write-only file). */
int pfs_pread(pfs_file *f, void *buf, size_t count, uint64_t offset, size_t *got);
int pfs_pwrite(pfs_file *f, const void *buf, size_t count, uint64_t offset);

/* pfs_read / pfs_write - at the file's position, which they advance. */
int pfs_read(pfs_file *f, void *buf, size_t count, size_t *got);
int pfs_write(pfs_file *f, const void *buf, size_t count);

/* pfs_fsync - make every byte written so far durable at the servers and the
 * size known to the metadata server. */
int pfs_fsync(pfs_file *f);

/* pfs_close - record the size (as pfs_fsync, without forcing the data to
 * disk) and free f, whatever the outcome. */
int pfs_close(pfs_file *f);

/* pfs_fstat - what f is: st [out]. */
int pfs_fstat(pfs_file *f, pfs_stat *st);

int pfs_stat_path(pfs_fs *fs, const char *path, pfs_stat *st);
int pfs_mkdir(pfs_fs *fs, const char *path, uint32_t mode);
int pfs_rmdir(pfs_fs *fs, const char *path);
int pfs_unlink(pfs_fs *fs, const char *path);
int pfs_rename(pfs_fs *fs, const char *from, const char *to);
int pfs_set_mtime(pfs_fs *fs, const char *path, int64_t mtime_ns);
/* pfs_chmod - set path's permission bits (mode & 07777); only its owner (or
 * root) may. Returns PIO_OK, PIO_EPERM, PIO_ENOENT, ... */
int pfs_chmod(pfs_fs *fs, const char *path, uint32_t mode);

/* pfs_readdir - the entries of directory path: *ents [out] a malloc'd array
 * of *n entries, sorted by name; the caller frees it with free(). */
int pfs_readdir(pfs_fs *fs, const char *path, pfs_entry **ents, size_t *n);

/* pfs_setstripe - set the default layout of directory path (inherited by new
 * files and subdirectories), or the layout of an empty file. count 0 and
 * stripe_size 0 on a directory remove its default. */
int pfs_setstripe(pfs_fs *fs, const char *path, uint32_t count, uint64_t stripe_size);

/* pfs_getstripe - the layout of a file, or the default of a directory. */
int pfs_getstripe(pfs_fs *fs, const char *path, pfs_stripe *stripe);

/* pfs_qos - the text of server i's class statistics (one line per class:
 * name, share, busy, borrowed, queued, served, wait and service latency
 * percentiles), into buf (cap bytes, NUL-terminated); reset: zero the
 * counters after reading. */
int pfs_qos(pfs_fs *fs, int server, int reset, char *buf, size_t cap);

/* pfs_df - per server: used [out] bytes in objects, avail [out] bytes free
 * on its storage, objects [out]. */
int pfs_df(pfs_fs *fs, int server, uint64_t *used, uint64_t *avail, uint64_t *objects);

/* pfs_server_bytes - bytes of f's object on server i of the file system
 * (0 when it holds none): which servers hold the file's data. */
int pfs_server_bytes(pfs_file *f, int server, uint64_t *bytes);

/* pfs_ftruncate - set f's size to size (cut or extended with a hole) at
 * every server of its layout and at the metadata server. */
int pfs_ftruncate(pfs_file *f, uint64_t size);

/* ---- for aggregators (GAS's dispatcher): writes by object, not by file ---- */

/* One extent of one file's object on one server: len bytes at offset off of
 * the object (the layout maps file ranges to objects: stripe unit u of a
 * file lives on layout server u % count at object offset (u / count) *
 * stripe_size). data stays the caller's. */
typedef struct pfs_extent {
    uint64_t fid;
    uint64_t off;
    uint64_t len;
    const void *data;
} pfs_extent;

typedef struct pfs_batch pfs_batch;

/* pfs_batch_new / pfs_batch_free - the request slots of one writer thread;
 * a batch is used by one thread at a time. */
int pfs_batch_new(pfs_fs *fs, pfs_batch **b);
void pfs_batch_free(pfs_batch *b);

/* pfs_batch_write - write v[0..n) to I/O server `server` (index as in
 * pfs_server_name), one request per extent (cut at 1 MiB), posted in the
 * order given with up to 16 in flight. Returns when every request is
 * acknowledged and checked (XXH3), or the first failure (PIO_EIO with the
 * server in pfs_errtext, PIO_EGONE...). Sizes at the metadata server are the
 * caller's business: pfs_grow. */
int pfs_batch_write(pfs_batch *b, int server, const pfs_extent *v, size_t n);

/* pfs_grow - make the size of file fid at least size at the metadata server
 * (grow-only, as a writer's close does). */
int pfs_grow(pfs_fs *fs, uint64_t fid, uint64_t size);

/* pfs_errtext - the last failure's explanation in the calling thread ("" if
 * none): the server's own words, or which server failed. */
const char *pfs_errtext(void);

#if defined(__GNUC__) && __GNUC__ >= 4
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif
#endif
