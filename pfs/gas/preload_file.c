/* preload_file.c - what a pgas file is to libpgas.so: the descriptor table,
 * the position, reads and writes (queued or synchronous), attributes and
 * names, opening, closing and duplicating (preload.h).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A pgas_file is shared by the descriptors dup'ed from one open, counted
 * by the table's references; the last one sends CLOSE, which waits until
 * every earlier request of this process is applied. A write-only file's
 * writes are queued on the connection (WRITE frames with id 0, no reply);
 * any other file's writes and every read wait for their reply. The
 * position lives here, under pgas_file.mtx; the request goes out to the
 * dispatcher through preload_conn.c. Placeholders are opened and closed
 * with libc's functions, never through the hooks. */
#include "preload.h"
#include "pio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define PGAS_BLKSIZE    (128 * 1024)
#define PGAS_DEV        ((dev_t)0x67617331) /* made up, fixed: "gas1" */
#define PGAS_PREFIX_LEN (sizeof(GAS_PREFIX) - 1)

struct pio_ip_fds gas_pl_fds = {.mtx = PTHREAD_MUTEX_INITIALIZER};

/* ---- small helpers ----------------------------------------------------- */

static uint64_t pgas_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */

    while (*s) {
        h ^= (unsigned char)*s++;
        h *= 1099511628211ull;
    }
    return h ? h : 1;
}

/* ---- the descriptor table ---------------------------------------------- */

/* gas_pl_get - fd's pgas_file with a reference the caller drops with
 * pgas_put or gas_pl_release, or NULL when fd is not a pgas descriptor. */
struct pgas_file *gas_pl_get(int fd)
{
    return (struct pgas_file *)pio_ip_get(&gas_pl_fds, fd);
}

static void pgas_ref(struct pgas_file *f)
{
    pio_ip_ref(&gas_pl_fds, &f->rec);
}

/* pgas_install - put f (NULL: nothing) in fd's slot, taking over the
 * caller's reference; returns what was there, whose reference the caller
 * now holds. fd < PIO_IP_FD_MAX. */
static struct pgas_file *pgas_install(int fd, struct pgas_file *f)
{
    return (struct pgas_file *)pio_ip_install(&gas_pl_fds, fd, f ? &f->rec : NULL);
}

static int pgas_file_end(struct pgas_file *f);

/* pgas_put - drop a reference; the last one closes the handle (CLOSE) and
 * frees f. Returns 0, or -1 with errno when that CLOSE failed. */
static int pgas_put(struct pgas_file *f)
{
    return pio_ip_unref(&gas_pl_fds, &f->rec) ? pgas_file_end(f) : 0;
}

/* gas_pl_release - pgas_put, errno kept (the caller's result stands). */
void gas_pl_release(struct pgas_file *f)
{
    int e = errno;

    (void)pgas_put(f);
    errno = e;
}

/* gas_pl_forget - drop fd's slot after a close behind our back (fd is new). */
int gas_pl_forget(int fd)
{
    struct pgas_file *old;

    if (fd < 0 || !gas_pl_slot(fd) || !gas_pl_mine())
        return fd;
    old = pgas_install(fd, NULL);
    if (old)
        gas_pl_release(old);
    return fd;
}

/* ---- requests about a file --------------------------------------------- */

int gas_pl_file_rpc(struct pgas_file *f, unsigned op, uint64_t off, struct pgas_attr *a, int loud)
{
    return gas_pl_handle_rpc(f->conn, f->handle, f->path, op, off, a, loud);
}

static int pgas_size(struct pgas_file *f, off_t *size)
{
    struct pgas_attr a;

    if (gas_pl_file_rpc(f, GAS_OP_FSTAT, 0, &a, 0) < 0)
        return -1;
    *size = (off_t)a.size;
    return 0;
}

/* pgas_file_end - the last reference went: CLOSE, then free f. */
static int pgas_file_end(struct pgas_file *f)
{
    int rc = gas_pl_file_rpc(f, GAS_OP_CLOSE, 0, NULL, 1), e = errno;

    pthread_mutex_destroy(&f->mtx);
    free(f);
    errno = e;
    return rc;
}

/* ---- reading and writing ----------------------------------------------- */

/* pgas_write_async - queue WRITE frames (id 0) for n bytes at off. */
static ssize_t pgas_write_async(struct pgas_file *f, const char *buf, size_t n, off_t off)
{
    size_t done = 0;

    while (done < n) {
        struct gas_hdr h;
        size_t k = gas_pl_min(n - done, GAS_PAYLOAD_MAX);

        gas_pl_hdr(&h, GAS_OP_WRITE, f->handle);
        h.off = (uint64_t)off + done;
        h.len = h.plen = (uint32_t)k;
        if (gas_pl_send(f->conn, &h, buf + done, 0) < 0)
            return gas_pl_gone(f->conn);
        done += k;
    }
    return (ssize_t)done;
}

/* pgas_write_sync - WRITEs with GAS_F_SYNC, each waited for. */
static ssize_t pgas_write_sync(struct pgas_file *f, const char *buf, size_t n, off_t off)
{
    size_t done = 0;

    while (done < n) {
        struct pgas_waiter w = {0};
        struct gas_hdr h;
        size_t k = gas_pl_min(n - done, GAS_PAYLOAD_MAX);

        gas_pl_hdr(&h, GAS_OP_WRITE, f->handle);
        h.flags = GAS_F_SYNC;
        h.off = (uint64_t)off + done;
        h.len = h.plen = (uint32_t)k;
        if (gas_pl_rpc(f->conn, &h, buf + done, &w) < 0 || gas_pl_check(f->path, &w, 0) < 0)
            return done ? (ssize_t)done : -1;
        done += k;
    }
    return (ssize_t)done;
}

/* pgas_read_sync - READs of at most GAS_PAYLOAD_MAX; stops at a short one. */
static ssize_t pgas_read_sync(struct pgas_file *f, char *buf, size_t n, off_t off)
{
    size_t done = 0;

    while (done < n) {
        size_t k = gas_pl_min(n - done, GAS_PAYLOAD_MAX);
        struct pgas_waiter w = {.buf = buf + done, .cap = k};
        struct gas_hdr h;

        gas_pl_hdr(&h, GAS_OP_READ, f->handle);
        h.off = (uint64_t)off + done;
        h.len = k;
        if (gas_pl_rpc(f->conn, &h, NULL, &w) < 0 || gas_pl_check(f->path, &w, 0) < 0)
            return done ? (ssize_t)done : -1;
        done += w.rep.plen;
        if (w.rep.plen < k)
            break;
    }
    return (ssize_t)done;
}

static ssize_t pgas_xfer(struct pgas_file *f, void *buf, size_t n, off_t off, int wr)
{
    if (!wr)
        return pgas_read_sync(f, buf, n, off);
    /* write-behind for every open that can write, O_WRONLY and O_RDWR
     * (issue 30): the frames of a connection are queued and served in
     * order, so a later READ, FSTAT (size, SEEK_END) or TRUNC of this
     * process reaches the dispatcher after them, and the dispatcher
     * applies the writes it holds before it answers. O_SYNC and O_DSYNC
     * opens ask for each write to be applied before it returns. */
    if (f->sync)
        return pgas_write_sync(f, buf, n, off);
    return pgas_write_async(f, buf, n, off);
}

/* pgas_vec - iov[cnt] from/to off; stops at the first short transfer. */
static ssize_t pgas_vec(struct pgas_file *f, const struct iovec *iov, int cnt, off_t off, int wr)
{
    ssize_t total = 0, r = 0;

    for (int i = 0; i < cnt; i++) {
        r = pgas_xfer(f, iov[i].iov_base, iov[i].iov_len, off + total, wr);
        if (r > 0)
            total += r;
        if (r < (ssize_t)iov[i].iov_len)
            break;
    }
    return total > 0 || r >= 0 ? total : -1;
}

/* pgas_io_ok - the access mode allows it and the vector is sane. */
static int pgas_io_ok(const struct pgas_file *f, const struct iovec *iov, int cnt, int wr)
{
    size_t sum = 0;

    if (wr ? f->accmode == O_RDONLY : f->accmode == O_WRONLY)
        return pio_ip_fail(EBADF);
    if (cnt < 0 || cnt > IOV_MAX)
        return pio_ip_fail(EINVAL);
    for (int i = 0; i < cnt; i++) {
        if (iov[i].iov_len > SSIZE_MAX - sum)
            return pio_ip_fail(EINVAL);
        sum += iov[i].iov_len;
    }
    return 0;
}

static ssize_t pgas_io_pos(struct pgas_file *f, const struct iovec *iov, int cnt, int wr)
{
    off_t off = f->pos;
    ssize_t r;

    if (wr && atomic_load(&f->append) && pgas_size(f, &off) < 0)
        return -1;
    r = pgas_vec(f, iov, cnt, off, wr);
    if (r > 0)
        f->pos = off + r;
    return r;
}

/* pgas_io - read or write iov[cnt] at off, or at the position (off < 0). */
static ssize_t pgas_io(struct pgas_file *f, const struct iovec *iov, int cnt, off_t off, int wr)
{
    ssize_t r;

    if (pgas_io_ok(f, iov, cnt, wr) < 0)
        return -1;
    if (off >= 0)
        return pgas_vec(f, iov, cnt, off, wr);
    pthread_mutex_lock(&f->mtx);
    r = pgas_io_pos(f, iov, cnt, wr);
    pthread_mutex_unlock(&f->mtx);
    return r;
}

/* pgas_io_fd - pgas_io on descriptor fd; PIO_IP_NOT_OURS when it is not a
 * pgas descriptor. */
static ssize_t pgas_io_fd(int fd, const struct iovec *iov, int cnt, off_t off, int wr)
{
    struct pgas_file *f = gas_pl_get(fd);
    ssize_t r;

    if (!f)
        return PIO_IP_NOT_OURS;
    r = pgas_io(f, iov, cnt, off, wr);
    gas_pl_release(f);
    return r;
}

/* gas_pl_iov - pgas_io_fd at the position (pos), or at off (< 0: EINVAL). */
ssize_t gas_pl_iov(int fd, const struct iovec *iov, int cnt, off_t off, int pos, int wr)
{
    if (!pos && off < 0)
        return gas_pl_slot(fd) ? pio_ip_fail(EINVAL) : PIO_IP_NOT_OURS;
    return pgas_io_fd(fd, iov, cnt, pos ? -1 : off, wr);
}

/* ---- seeking, sizes, attributes ---------------------------------------- */

static off_t pgas_seek_locked(struct pgas_file *f, off_t off, int whence)
{
    off_t base = 0, to;

    if (whence == SEEK_CUR)
        base = f->pos;
    else if (whence == SEEK_END || whence == SEEK_DATA || whence == SEEK_HOLE) {
        if (pgas_size(f, &base) < 0)
            return -1;
    } else if (whence != SEEK_SET)
        return pio_ip_fail(EINVAL);
    if ((whence == SEEK_DATA || whence == SEEK_HOLE) && (off < 0 || off >= base))
        return pio_ip_fail(ENXIO);
    if (whence == SEEK_DATA || whence == SEEK_HOLE) /* no holes but the one at the end */
        to = whence == SEEK_DATA ? off : base;
    else if (__builtin_add_overflow(base, off, &to))
        return pio_ip_fail(EOVERFLOW);
    if (to < 0)
        return pio_ip_fail(EINVAL);
    f->pos = to;
    return to;
}

off_t gas_pl_lseek(int fd, off_t off, int whence)
{
    struct pgas_file *f = gas_pl_get(fd);
    off_t r;

    if (!f)
        return PIO_IP_NOT_OURS;
    if (atomic_load(&f->conn->dead)) {
        r = gas_pl_gone(f->conn);
    } else {
        pthread_mutex_lock(&f->mtx);
        r = pgas_seek_locked(f, off, whence);
        pthread_mutex_unlock(&f->mtx);
    }
    gas_pl_release(f);
    return r;
}

static struct timespec pgas_ts(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};

    return ts;
}

static mode_t pgas_mode(const struct pgas_attr *a)
{
    return (a->mode & GAS_MODE_DIR ? S_IFDIR : S_IFREG) | (mode_t)(a->mode & 07777);
}

static void pgas_fill_stat(const struct pgas_attr *a, uint64_t ino, struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_dev = PGAS_DEV;
    st->st_ino = ino;
    st->st_mode = pgas_mode(a);
    st->st_nlink = 1;
    st->st_uid = getuid();
    st->st_gid = getgid();
    st->st_size = (off_t)a->size;
    st->st_blksize = PGAS_BLKSIZE;
    st->st_blocks = (blkcnt_t)((a->size + 511) / 512);
    st->st_mtim = st->st_atim = st->st_ctim = pgas_ts(a->mtime_ns);
}

static struct statx_timestamp pgas_sxts(uint64_t ns)
{
    struct statx_timestamp t = {.tv_sec = (int64_t)(ns / 1000000000u),
                                .tv_nsec = (uint32_t)(ns % 1000000000u)};

    return t;
}

static void pgas_fill_statx(const struct pgas_attr *a, uint64_t ino, struct statx *sx)
{
    memset(sx, 0, sizeof(*sx));
    sx->stx_mask = STATX_BASIC_STATS;
    sx->stx_blksize = PGAS_BLKSIZE;
    sx->stx_nlink = 1;
    sx->stx_uid = getuid();
    sx->stx_gid = getgid();
    sx->stx_mode = (uint16_t)pgas_mode(a);
    sx->stx_ino = ino;
    sx->stx_size = a->size;
    sx->stx_blocks = (a->size + 511) / 512;
    sx->stx_atime = sx->stx_ctime = sx->stx_mtime = pgas_sxts(a->mtime_ns);
    sx->stx_dev_major = major(PGAS_DEV);
    sx->stx_dev_minor = minor(PGAS_DEV);
}

/* ---- paths ------------------------------------------------------------- */

int gas_pl_is_path(const char *path)
{
    return path && strncmp(path, GAS_PREFIX, PGAS_PREFIX_LEN) == 0;
}

/* pgas_join - out = dir "/" name. 1, or -1 (ENAMETOOLONG). */
static int pgas_join(const char *dir, const char *name, char *out, size_t cap)
{
    const char *sep = *dir && dir[strlen(dir) - 1] == '/' ? "" : "/";
    int n = snprintf(out, cap, "%s%s%s", dir, sep, name);

    return n < 0 || (size_t)n >= cap ? pio_ip_fail(ENAMETOOLONG) : 1;
}

/* pgas_at - the pfs path of (dirfd, path) into out[cap]: path a pgas:
 * path ("pgas:x" means "/x"), or relative to a pgas directory descriptor.
 * 1: ours; 0: not ours; -1: ours but too long (errno). */
static int pgas_at(int dirfd, const char *path, char *out, size_t cap)
{
    struct pgas_file *d;
    int r;

    if (gas_pl_is_path(path))
        return pgas_join("", path + PGAS_PREFIX_LEN + (path[PGAS_PREFIX_LEN] == '/'), out, cap);
    if (!path || !*path || *path == '/' || dirfd == AT_FDCWD || !(d = gas_pl_get(dirfd)))
        return 0;
    r = pgas_join(d->path, path, out, cap);
    gas_pl_release(d);
    return r;
}

/* pgas_statat - stat of (dirfd, path) (AT_EMPTY_PATH: of descriptor
 * dirfd) into the attributes and inode number. PIO_IP_NOT_OURS, 0 or -1. */
static int pgas_statat(int dirfd, const char *path, int flags, struct pgas_attr *a, uint64_t *ino)
{
    char pfs[PATH_MAX];
    struct pgas_file *f;
    int k, r;

    if (path && !*path && (flags & AT_EMPTY_PATH)) {
        if (!(f = gas_pl_get(dirfd)))
            return PIO_IP_NOT_OURS;
        r = gas_pl_file_rpc(f, GAS_OP_FSTAT, 0, a, 0);
        *ino = f->ino;
        gas_pl_release(f);
        return r;
    }
    k = pgas_at(dirfd, path, pfs, sizeof(pfs));
    if (k <= 0)
        return k < 0 ? -1 : PIO_IP_NOT_OURS;
    *ino = pgas_hash(pfs);
    return gas_pl_path_rpc(GAS_OP_STAT, 0, pfs, a);
}

int gas_pl_stat_hook(int dirfd, const char *path, int flags, struct stat *st)
{
    struct pgas_attr a;
    uint64_t ino;
    int r = pgas_statat(dirfd, path, flags, &a, &ino);

    if (r == 0)
        pgas_fill_stat(&a, ino, st);
    return r;
}

int gas_pl_statx_hook(int dirfd, const char *path, int flags, struct statx *sx)
{
    struct pgas_attr a;
    uint64_t ino;
    int r = pgas_statat(dirfd, path, flags, &a, &ino);

    if (r == 0)
        pgas_fill_statx(&a, ino, sx);
    return r;
}

#define PGAS_FS_MAGIC 0x50474153 /* "PGAS": f_type of a pgas file system */
#define PGAS_FS_BLOCK 4096u

int gas_pl_statfs_hook(int fd, const char *path, struct statfs *sf)
{
    char pfs[PATH_MAX];
    struct pgas_attr a;

    if (!path) {
        struct pgas_file *f = gas_pl_get(fd);
        if (!f)
            return PIO_IP_NOT_OURS;
        snprintf(pfs, sizeof(pfs), "%s", f->path);
        gas_pl_release(f);
    } else {
        int k = pgas_at(AT_FDCWD, path, pfs, sizeof(pfs));
        if (k <= 0)
            return k < 0 ? -1 : PIO_IP_NOT_OURS;
    }
    if (gas_pl_path_rpc(GAS_OP_STATFS, 0, pfs, &a) < 0)
        return -1;
    /* the reply: size = bytes used, mode = bytes available, mtime_ns = objects */
    memset(sf, 0, sizeof(*sf));
    sf->f_type = PGAS_FS_MAGIC;
    sf->f_bsize = sf->f_frsize = PGAS_FS_BLOCK;
    sf->f_bfree = sf->f_bavail = a.mode / PGAS_FS_BLOCK;
    sf->f_blocks = a.size / PGAS_FS_BLOCK + sf->f_bfree;
    sf->f_ffree = sf->f_bfree; /* a free block can hold another object */
    sf->f_files = a.mtime_ns + sf->f_ffree;
    sf->f_namelen = 255;
    return 0;
}

static int pgas_access(const char *pfs, int mode)
{
    struct pgas_attr a;
    int perm;

    if (gas_pl_path_rpc(GAS_OP_STAT, 0, pfs, &a) < 0)
        return -1;
    perm = (int)(a.mode >> 6) & 7; /* the process owns every pgas file */
    if (getuid() == 0 || geteuid() == 0)
        perm |= R_OK | W_OK | (a.mode & 0111 ? X_OK : 0);
    return (mode & ~perm & (R_OK | W_OK | X_OK)) ? pio_ip_fail(EACCES) : 0;
}

int gas_pl_access_hook(int dirfd, const char *path, int mode)
{
    char pfs[PATH_MAX];
    int k = pgas_at(dirfd, path, pfs, sizeof(pfs));

    if (k <= 0)
        return k < 0 ? -1 : PIO_IP_NOT_OURS;
    return pgas_access(pfs, mode);
}

/* gas_pl_xattr_hook - a pgas file has no extended attributes: 0 when path
 * is one (it exists), -1 (errno), or PIO_IP_NOT_OURS. */
int gas_pl_xattr_hook(const char *path)
{
    char pfs[PATH_MAX];
    int k = pgas_at(AT_FDCWD, path, pfs, sizeof(pfs));

    if (k <= 0)
        return k < 0 ? -1 : PIO_IP_NOT_OURS;
    return gas_pl_path_rpc(GAS_OP_STAT, 0, pfs, NULL);
}

int gas_pl_unlink_hook(int dirfd, const char *path, int flags)
{
    char pfs[PATH_MAX];
    int k = pgas_at(dirfd, path, pfs, sizeof(pfs));

    if (k <= 0)
        return k < 0 ? -1 : PIO_IP_NOT_OURS;
    return gas_pl_path_rpc(GAS_OP_UNLINK, flags & AT_REMOVEDIR ? GAS_F_DIR : 0, pfs, NULL);
}

/* ---- opening ----------------------------------------------------------- */

static uint16_t pgas_open_flags(int flags)
{
    int acc = flags & O_ACCMODE;
    uint16_t g = acc == O_WRONLY ? GAS_O_WRONLY : acc == O_RDWR ? GAS_O_RDWR : GAS_O_RDONLY;

    g |= flags & O_CREAT ? GAS_O_CREAT : 0;
    g |= flags & O_EXCL ? GAS_O_EXCL : 0;
    g |= flags & O_TRUNC ? GAS_O_TRUNC : 0;
    g |= flags & O_APPEND ? GAS_O_APPEND : 0;
    return g;
}

/* pgas_open_rpc - OPEN pfs; the handle and the attributes. */
static int pgas_open_rpc(struct pgas_conn *c, const char *pfs, int flags, mode_t mode,
                         uint32_t *handle, struct pgas_attr *a)
{
    struct pgas_waiter w = {0};
    struct gas_hdr h;

    gas_pl_hdr(&h, GAS_OP_OPEN, 0);
    h.flags = pgas_open_flags(flags);
    h.aux = mode & ~c->umask & 07777;
    h.plen = (uint32_t)strlen(pfs);
    if (gas_pl_rpc(c, &h, pfs, &w) < 0 || gas_pl_check(pfs, &w, 0) < 0)
        return -1;
    *handle = w.rep.handle;
    gas_pl_attr_of(&w.rep, a);
    return 0;
}

/* pgas_open_mismatch - the errno when what was opened is not what flags
 * asked for (a directory to write, a file for O_DIRECTORY), else 0. */
static int pgas_open_mismatch(int flags, const struct pgas_attr *a)
{
    int dir = (a->mode & GAS_MODE_DIR) != 0;

    if ((flags & O_DIRECTORY) && !dir)
        return ENOTDIR;
    if (dir && (flags & O_ACCMODE) != O_RDONLY)
        return EISDIR;
    return 0;
}

static struct pgas_file *pgas_file_new(struct pgas_conn *c, const char *pfs, int flags,
                                       uint32_t handle)
{
    size_t n = strlen(pfs) + 1;
    struct pgas_file *f = malloc(sizeof(*f) + n);

    if (!f)
        return NULL;
    f->conn = c;
    f->handle = handle;
    f->accmode = flags & O_PATH ? O_RDONLY : flags & O_ACCMODE;
    f->sync = (flags & (O_SYNC | O_DSYNC)) != 0;
    atomic_init(&f->append, (flags & O_APPEND) != 0);
    f->rec.refs = 1;
    pthread_mutex_init(&f->mtx, NULL);
    f->pos = 0;
    f->ino = pgas_hash(pfs);
    memcpy(f->path, pfs, n);
    return f;
}

/* pgas_open_handle - OPEN and check; the handle, or -1 with errno. */
static int pgas_open_handle(struct pgas_conn *c, const char *pfs, int flags, mode_t mode,
                            uint32_t *handle)
{
    struct pgas_attr a;
    int e;

    if (pgas_open_rpc(c, pfs, flags, mode, handle, &a) < 0)
        return -1;
    e = pgas_open_mismatch(flags, &a);
    if (!e)
        return 0;
    (void)gas_pl_handle_rpc(c, *handle, pfs, GAS_OP_CLOSE, 0, NULL, 0);
    return pio_ip_fail(e);
}

/* pgas_open - open pfs path: a placeholder descriptor and a pgas_file. */
static int pgas_open(const char *pfs, int flags, mode_t mode)
{
    struct pgas_conn *c;
    struct pgas_file *f, *old;
    uint32_t handle;
    int fd, e;

    if ((flags & O_TMPFILE) == O_TMPFILE || (flags & O_ACCMODE) == O_ACCMODE)
        return pio_ip_fail((flags & O_ACCMODE) == O_ACCMODE ? EINVAL : EOPNOTSUPP);
    if (!(c = gas_pl_conn()))
        return -1;
    if (atomic_load(&c->dead))
        return gas_pl_gone(c);
    fd = PIO_IP_REAL(open)("/dev/null", O_PATH | (flags & O_CLOEXEC));
    if (fd < 0)
        return -1;
    if (fd >= PIO_IP_FD_MAX) {
        errno = EMFILE;
        goto close_fd;
    }
    if (pgas_open_handle(c, pfs, flags, mode, &handle) < 0)
        goto close_fd;
    if (!(f = pgas_file_new(c, pfs, flags, handle))) {
        e = errno;
        (void)gas_pl_handle_rpc(c, handle, pfs, GAS_OP_CLOSE, 0, NULL, 0);
        errno = e;
        goto close_fd;
    }
    old = pgas_install(fd, f); /* a stale slot: closed behind our back */
    if (old)
        gas_pl_release(old);
    return fd;
close_fd:
    e = errno;
    PIO_IP_REAL(close)(fd);
    return pio_ip_fail(e);
}

/* gas_pl_open_hook - the open family: PIO_IP_NOT_OURS, or the pgas open. */
int gas_pl_open_hook(int dirfd, const char *path, int flags, mode_t mode)
{
    char pfs[PATH_MAX];
    int k = pgas_at(dirfd, path, pfs, sizeof(pfs));

    if (k <= 0)
        return k < 0 ? -1 : PIO_IP_NOT_OURS;
    return pgas_open(pfs, flags, mode);
}

/* ---- descriptors: close, dup ------------------------------------------- */

int gas_pl_close(int fd)
{
    struct pgas_file *f;

    if (!gas_pl_slot(fd) || !gas_pl_mine())
        return PIO_IP_NOT_OURS;
    f = pgas_install(fd, NULL);
    if (!f)
        return PIO_IP_NOT_OURS;
    PIO_IP_REAL(close)(fd);
    return pgas_put(f);
}

/* gas_pl_drop_range - forget the slots of [lo, hi] (closed by libc). */
void gas_pl_drop_range(unsigned lo, unsigned hi)
{
    unsigned end = (unsigned)atomic_load(&gas_pl_fds.hw);

    if (end == 0 || !gas_pl_mine())
        return;
    for (unsigned fd = lo; fd < end && fd <= hi; fd++)
        gas_pl_forget((int)fd);
}

/* gas_pl_dup_to - make new descriptor nfd (a dup of f's placeholder, or
 * -1) share f. Returns nfd or -1. */
int gas_pl_dup_to(struct pgas_file *f, int nfd)
{
    struct pgas_file *old;

    if (nfd < 0)
        return -1;
    if (nfd >= PIO_IP_FD_MAX) {
        PIO_IP_REAL(close)(nfd);
        return pio_ip_fail(EMFILE);
    }
    pgas_ref(f);
    old = pgas_install(nfd, f);
    if (old)
        gas_pl_release(old);
    return nfd;
}

/* gas_pl_dup2 - dup2 (flags < 0) or dup3 when oldfd or newfd is ours. */
int gas_pl_dup2(int oldfd, int newfd, int flags)
{
    struct pgas_file *f, *old;
    int r;

    if (newfd >= PIO_IP_FD_MAX && gas_pl_slot(oldfd))
        return pio_ip_fail(EMFILE);
    f = gas_pl_get(oldfd);
    r = flags < 0 ? PIO_IP_REAL(dup2)(oldfd, newfd) : PIO_IP_REAL(dup3)(oldfd, newfd, flags);
    if (r >= 0 && oldfd != newfd && newfd < PIO_IP_FD_MAX) {
        if (f)
            pgas_ref(f);
        old = pgas_install(newfd, f); /* newfd's old file was closed by dup2 */
        if (old)
            gas_pl_release(old);
    }
    if (f)
        gas_pl_release(f);
    return r;
}

/* ---- fcntl, fopen ------------------------------------------------------ */

static int pgas_fcntl_f(struct pgas_file *f, int fd, int cmd, void *arg)
{
    switch (cmd) {
    case F_DUPFD:
    case F_DUPFD_CLOEXEC: return gas_pl_dup_to(f, PIO_IP_REAL(fcntl)(fd, cmd, arg));
    case F_GETFL: return f->accmode | (atomic_load(&f->append) ? O_APPEND : 0);
    case F_SETFL: atomic_store(&f->append, ((int)(intptr_t)arg & O_APPEND) != 0); return 0;
    case F_GETLK:
    case F_OFD_GETLK: ((struct flock *)arg)->l_type = F_UNLCK; return 0;
    case F_SETLK:
    case F_SETLKW:
    case F_OFD_SETLK:
    case F_OFD_SETLKW: return 0;
    default: return PIO_IP_REAL(fcntl)(fd, cmd, arg);
    }
}

int gas_pl_fcntl(int fd, int cmd, void *arg)
{
    struct pgas_file *f;
    int r;

    if (!gas_pl_slot(fd) || !gas_pl_mine() || !(f = gas_pl_get(fd)))
        return PIO_IP_NOT_OURS;
    r = pgas_fcntl_f(f, fd, cmd, arg);
    gas_pl_release(f);
    return r;
}

/* pgas_stdio_flags - fopen's mode as open flags; -1 (EINVAL) when bad. */
static int pgas_stdio_flags(const char *mode)
{
    int plus = strchr(mode, '+') != NULL, fl;

    if (mode[0] == 'r')
        fl = plus ? O_RDWR : O_RDONLY;
    else if (mode[0] == 'w')
        fl = (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC;
    else if (mode[0] == 'a')
        fl = (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_APPEND;
    else
        return pio_ip_fail(EINVAL);
    fl |= strchr(mode, 'e') ? O_CLOEXEC : 0;
    fl |= strchr(mode, 'x') ? O_EXCL : 0;
    return fl;
}

/* gas_pl_fopen - fopen of a pgas path: glibc's fopen opens with its internal
 * open, which no preload library sees, so the stream is one of ours. */
FILE *gas_pl_fopen(const char *path, const char *mode)
{
    char pfs[PATH_MAX];
    int flags = pgas_stdio_flags(mode), fd;

    if (flags < 0 || pgas_at(AT_FDCWD, path, pfs, sizeof(pfs)) < 0)
        return NULL;
    fd = pgas_open(pfs, flags, 0666);
    if (fd < 0)
        return NULL;
    return pio_ip_stream_or_close(fd, mode);
}
