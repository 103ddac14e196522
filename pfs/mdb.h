/* mdb.h - the metadata database of pfs: the name space, file attributes and
 * layouts, and the list of I/O servers, kept in one SQLite file.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Used by pfs-mds (and its unit test). Every mutating call is one SQLite
 * transaction, committed (WAL, synchronous=FULL) before the call returns: an
 * answer sent after it describes a change that survives kill -9 and power
 * loss. Every call returns a PIO status (pio.h). Paths are absolute,
 * normalised pfs paths (pfs_path_ok); any other gives PIO_EINVAL.
 *
 * Thread-safety: a struct pfs_mdb is one SQLite connection and is NOT
 * thread-safe: one thread uses it at a time (pfs-mds is single-threaded).
 * Different handles, even on one file, are independent.
 *
 * Common errors of every call besides those listed: PIO_EINVAL (bad path or
 * argument), PIO_EBUSY (the file stayed locked by another connection beyond
 * the busy timeout), PIO_ENOSPC (disk full), PIO_ENOMEM, PIO_EIO (any other
 * SQLite failure: pfs_mdb_errmsg says which). On failure nothing changed and
 * the [out] arguments are unspecified. */
#ifndef PFS_MDB_H
#define PFS_MDB_H

#include "proto.h"

#include <stddef.h>
#include <stdint.h>

struct pfs_mdb;

/* pfs_mdb_open - open (creating if needed) the database file and its schema;
 * a new database holds the root directory "/" (mode 0755) and no servers.
 * file [in]: path of the SQLite file (its -wal and -shm files go beside it).
 * db [out]: the handle, owned by the caller until pfs_mdb_close; NULL on
 *   failure.
 * Returns PIO_OK; PIO_EINVAL (NULL arguments); PIO_ECONFIG (the file holds
 * another schema version); PIO_EIO (cannot open, not a database, WAL mode
 * refused), PIO_EPERM: pfs_mdb_open_error says why. */
int pfs_mdb_open(const char *file, struct pfs_mdb **db);

/* pfs_mdb_open_error - words for the calling thread's last pfs_mdb_open
 * failure ("" when none); the thread's own buffer, valid until its next
 * pfs_mdb_open. */
const char *pfs_mdb_open_error(void);

/* pfs_mdb_close - close db and free it (NULL is fine). */
void pfs_mdb_close(struct pfs_mdb *db);

/* pfs_mdb_errmsg - words for the failure of the last call on db, beyond its
 * status: SQLite's message, or what was wrong with an argument or the
 * server list; "" when the status says it all (PIO_ENOENT, ...). Owned by db,
 * valid until the next call on it. */
const char *pfs_mdb_errmsg(struct pfs_mdb *db);

/* ---- I/O servers ---------------------------------------------------------- */

/* pfs_mdb_servers - fix the ordered list of I/O servers (PIO application
 * names). Layouts name servers by their index in this list, so it can only
 * grow: the first call on a new database stores names[0..n-1]; a later one
 * must give the stored list, or the stored list followed by more names
 * (which are appended). n = 0: keep the stored list.
 * names [in]: n strings, copied (each 1..PFS_NAME_MAX-1 bytes, distinct).
 * Returns PIO_OK; PIO_ECONFIG (a list that is not the stored one or an
 * extension of it, duplicate names, n = 0 with nothing stored, more than
 * PFS_SERVERS_MAX); PIO_EINVAL (n < 0, NULL or bad names). */
int pfs_mdb_servers(struct pfs_mdb *db, const char *const *names, int n);

/* pfs_mdb_nservers - number of I/O servers known (0 before the first list). */
int pfs_mdb_nservers(const struct pfs_mdb *db);

/* pfs_mdb_server - name of server i (owned by db, valid until the next
 * pfs_mdb_servers or close), NULL when i is out of range. */
const char *pfs_mdb_server(const struct pfs_mdb *db, int i);

/* ---- Name space -------------------------------------------------------------
 * attr [out]: fid (files and directories alike: the entry's id, unique and
 * never reused), type, mode, uid, gid, size (0 for directories), mtime_ns,
 * ctime_ns (CLOCK_REALTIME). layout [out]: a file's layout; for a directory
 * its default stripe in count / stripe_size (0 = none) and servers all 0.
 * attr and layout may be NULL where not wanted. */

/* pfs_mdb_lookup - attributes of path. Errors: PIO_ENOENT (path or a parent
 * missing), PIO_ENOTDIR (a parent is a file). */
int pfs_mdb_lookup(struct pfs_mdb *db, const char *path, struct pfs_attr *attr,
                   struct pfs_layout *layout);

/* pfs_mdb_create - create the file path, or open an existing one.
 * mode [in]: permission bits (& 07777). uid, gid [in]: owner and group.
 * flags [in]: PFS_F_EXCL (an existing file is an error), PFS_F_TRUNC (an
 *   existing file's size becomes 0; the caller truncates its objects).
 * size_hint [in]: expected size, 0 = unknown.
 * wish_count, wish_stripe_size [in]: the caller's layout, 0 = choose.
 * The layout of a new file: count = pfs_policy_count(size_hint, wish_count,
 * the parent directory's default count, nservers); stripe size = the wish,
 * else the parent's default, else PFS_STRIPE_SIZE_DEFAULT; servers placed by
 * pfs_layout_place from a persistent counter advanced in the same
 * transaction, so that stripes spread evenly over the servers.
 * Errors: PIO_EEXIST (exists, with EXCL); PIO_EISDIR (a directory is there,
 * "/" included); PIO_ENOENT, PIO_ENOTDIR (the parent); PIO_EINVAL (wish
 * stripe size not a multiple of 4 KiB or over 4 GiB); PIO_ECONFIG (no
 * servers). */
int pfs_mdb_create(struct pfs_mdb *db, const char *path, uint32_t mode, uint32_t uid, uint32_t gid,
                   uint32_t flags, uint64_t size_hint, uint32_t wish_count,
                   uint64_t wish_stripe_size, struct pfs_attr *attr, struct pfs_layout *layout);

/* pfs_mdb_mkdir - create the directory path; it inherits its parent's
 * default stripe. Errors: PIO_EEXIST (anything there), PIO_ENOENT,
 * PIO_ENOTDIR (the parent). */
int pfs_mdb_mkdir(struct pfs_mdb *db, const char *path, uint32_t mode, uint32_t uid, uint32_t gid,
                  struct pfs_attr *attr);

/* pfs_mdb_stat - attributes of entry fid. Errors: PIO_ENOENT (no such id:
 * never made, or removed). */
int pfs_mdb_stat(struct pfs_mdb *db, uint64_t fid, struct pfs_attr *attr);

/* pfs_mdb_readdir - entries of directory path, sorted by name (bytewise),
 * from index start on, encoded with pfs_dirent_put into buf.
 * buf [out]: cap bytes (PFS_IO_MAX in a reply). used [out]: bytes written.
 * more [out]: 1 when entries remain after the ones written (ask again with
 * start + entries read).
 * Errors: PIO_ENOENT, PIO_ENOTDIR (path is a file); PIO_ETRUNC (cap too small
 * for even the first entry). */
int pfs_mdb_readdir(struct pfs_mdb *db, const char *path, uint64_t start, uint8_t *buf, size_t cap,
                    size_t *used, int *more);

/* pfs_mdb_unlink - remove path: a file, or with is_dir an empty directory.
 * attr, layout [out]: what was removed (the caller destroys a file's
 * objects). Errors: PIO_ENOENT; PIO_ENOTDIR (a file given with is_dir, or a
 * parent is a file); PIO_EISDIR (a directory without is_dir); PIO_ENOTEMPTY;
 * PIO_EBUSY (the root). */
int pfs_mdb_unlink(struct pfs_mdb *db, const char *path, int is_dir, struct pfs_attr *attr,
                   struct pfs_layout *layout);

/* pfs_mdb_rename - move from to to (a directory with its whole subtree: one
 * row changes). An existing file at to is replaced by a file: its attr and
 * layout come back and *replaced = 1 (the caller destroys its objects);
 * otherwise *replaced = 0 and attr / layout are zeroed. An empty directory
 * at to is replaced by a directory. from == to does nothing.
 * replaced [out, may be NULL]. Errors: PIO_ENOENT (from, or to's parent);
 * PIO_ENOTDIR (a directory onto a file, or a parent is a file); PIO_EISDIR
 * (a file onto a directory); PIO_ENOTEMPTY (onto a non-empty directory);
 * PIO_EINVAL (a directory into its own subtree); PIO_EBUSY (the root). */
int pfs_mdb_rename(struct pfs_mdb *db, const char *from, const char *to, int *replaced,
                   struct pfs_attr *attr, struct pfs_layout *layout);

/* pfs_mdb_setsize - set the size of file fid after a write or truncate:
 * exact = 0: only grows (a smaller size leaves it); exact = 1: sets it.
 * mtime and ctime become now either way. attr [out, may be NULL]: after.
 * Errors: PIO_ENOENT (no such fid), PIO_EISDIR (fid is a directory),
 * PIO_EINVAL (size over INT64_MAX). */
int pfs_mdb_setsize(struct pfs_mdb *db, uint64_t fid, uint64_t size, int exact,
                    struct pfs_attr *attr);

/* pfs_mdb_setattr - set path's mode (flags PFS_F_MODE, mode & 07777) and/or
 * mtime (PFS_F_MTIME, mtime_ns); ctime becomes now. attr [out]: after.
 * Errors: PIO_ENOENT, PIO_ENOTDIR (a parent). */
int pfs_mdb_setattr(struct pfs_mdb *db, const char *path, uint32_t flags, uint32_t mode,
                    int64_t mtime_ns, struct pfs_attr *attr);

/* pfs_mdb_setstripe - a directory: set its default stripe (count 0..32,
 * stripe_size 0 or a multiple of 4 KiB up to 4 GiB; both 0 clears it),
 * inherited by files and directories created in it later. An empty file
 * (size 0): give it a new layout, count (capped by the servers; 0 keeps its
 * count) stripes of stripe_size (0 keeps it), servers placed anew from the
 * counter. attr, layout [out]: after.
 * Errors: PIO_EBUSY (a file with data), PIO_EINVAL (values), PIO_ENOENT,
 * PIO_ENOTDIR, PIO_ECONFIG (a file, no servers). */
int pfs_mdb_setstripe(struct pfs_mdb *db, const char *path, uint32_t count, uint64_t stripe_size,
                      struct pfs_attr *attr, struct pfs_layout *layout);

/* pfs_mdb_statfs - files [out]: number of files; bytes [out]: sum of their
 * sizes (either may be NULL). Scans the table: O(entries). */
int pfs_mdb_statfs(struct pfs_mdb *db, uint64_t *files, uint64_t *bytes);

#endif
