/* preload.c - libpgas.so: the LD_PRELOAD library that sends `pgas:` paths to
 * the GAS dispatcher over its Unix socket (wire.h).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * What. With LD_PRELOAD=libpgas.so every path that begins with "pgas:"
 * (GAS_PREFIX) names a file of the parallel file system: "pgas:/dir/file" is
 * the pfs path "/dir/file", "pgas:file" is "/file". Opening one gives a real
 * descriptor, a placeholder, and the library serves every call on it by
 * asking the dispatcher. Every other path and descriptor goes straight to
 * libc (dlsym(RTLD_NEXT), resolved once): the fast path of a hook on a
 * descriptor is one atomic load of fd's slot in gas_pl_fds and a compare, on
 * a path a 5-byte prefix compare. The library's own I/O (socket, eventfd,
 * stderr) uses send/recv/ppoll, which are not hooked, or the real functions.
 * What libanco.so does alike lives in common/interpose.c, compiled into both
 * libraries hidden: libc's functions behind the hooks (PIO_IP_REAL), the
 * descriptor table, open's and fcntl's optional arguments, the fopencookie
 * streams, the one-line messages on stderr (pio_ip_say).
 *
 * Files. The hooks come from the one list in common/interpose.h
 * (PIO_IP_READ_HOOKS, PIO_IP_WRITE_HOOKS); this file defines the serve_op
 * functions they call, and what runs at fork and exit. preload_file.c is
 * what a pgas file means (the descriptor table, positions, writes, opening,
 * dup), preload_conn.c the connection to the dispatcher (its I/O thread,
 * and what happens when the dispatcher goes away); preload.h is what they
 * share, and the order of their locks.
 *
 * Why. Programs built without PIO (cp, cat, dd, python3, gfortran programs)
 * can then read and write the parallel file system, and the dispatcher can
 * gather the small writes of every process of the host into large ones.
 *
 * What a reader elsewhere sees. Write-only opens (O_WRONLY) are relaxed:
 * write and pwrite queue a WRITE frame (id 0, no reply) and return at once;
 * other processes see the bytes once the writer's fsync or close returned
 * (both wait until every earlier request of this process is applied at the
 * servers). An error in applying a queued write comes back from the next
 * fsync or close of the file (-1, errno mapped, "pgas: PATH: why" on
 * stderr). Other opens (O_RDONLY, O_RDWR) are synchronous: each write
 * returns once applied (GAS_F_SYNC), each read asks the dispatcher. O_APPEND
 * writes go at the size the dispatcher reports just before (FSTAT). The file
 * position lives here: lseek makes no system call (SEEK_END asks FSTAT).
 *
 *
 * Descriptors. The placeholder is /dev/null opened O_PATH (with O_CLOEXEC
 * when the caller asked): isatty() is false on it as on /dev/null, and any
 * call this library does not serve (stdio's internal writes, a program after
 * exec, fchmod, mmap, ...) fails with EBADF instead of silently reading
 * nothing or writing into /dev/null (and fchmod cannot change /dev/null).
 * dup, dup2, dup3 and fcntl(F_DUPFD*) share the pgas_file, as descriptors
 * share a kernel open file description (one position); the CLOSE goes with
 * the last descriptor. They have to work: dd opens its files and dup2()s
 * them onto 0 and 1, and bash does the same for redirections. Descriptors at
 * or above PIO_IP_FD_MAX (65536) cannot be pgas files (EMFILE).
 *
 * fork. A pthread_atfork child handler makes the child start with no
 * connection and no pgas descriptors: the inherited placeholders stay open
 * (I/O on them fails with EBADF) but their table entries are dropped; the
 * child's own pgas opens make its own connection. A vfork child (Python's
 * subprocess) shares our memory without the handler: close and dup calls
 * from any process but the one that made the connection leave the table
 * alone. At exit (not _exit), stdio is flushed and every pgas file still
 * open is closed, waiting for the dispatcher; errors then go to stderr only.
 *
 * Not served. fchmod/fchown/futimens and mmap on a pgas descriptor fail
 * (EBADF, from the placeholder); fcntl locks succeed and do nothing; a pgas
 * file has no extended attributes; readdir of a pgas directory fails (the
 * protocol has no listing), but openat/fstatat/unlinkat relative to a pgas
 * directory descriptor work (cp FILE pgas:/dir/). The umask is read once,
 * when connecting; PGAS_FLUSH_US and PGAS_BATCH that are not integers in
 * range are ignored. Shell redirections to pgas: paths do not work: bash's
 * builtins write through stdio (libc's internal write, which no preload
 * library sees) and an exec'd program gets the bare placeholder.
 * fopen/fdopen of a pgas file give a stdio stream made with fopencookie (its
 * fileno is -1).
 *
 * Why each hook exists: nm -D --undefined-only on Debian 12 (glibc 2.36),
 * the imports this library defines ("also": imported, not hooked):
 *   cp       open openat read write close lseek fstat fstatat stat lstat
 *            faccessat unlinkat ftruncate copy_file_range posix_fadvise
 *            fcntl ioctl (also fchmod fchown futimens fallocate)
 *   cat      open read write close lseek fstat copy_file_range
 *            posix_fadvise ioctl
 *   dd       open read write close lseek fstat ftruncate fsync fdatasync
 *            dup2 fcntl posix_fadvise
 *   python3  open64 __open64_2 openat64 read write readv writev pread64
 *            pwrite64 preadv64v2 pwritev64v2 lseek64 fsync fdatasync close
 *            close_range fstat64 fstatat64 stat64 lstat64 access faccessat
 *            unlink unlinkat ftruncate64 copy_file_range sendfile64
 *            posix_fadvise64 dup dup2 dup3 fcntl64 ioctl fopen64 fdopen
 *            getxattr lgetxattr fgetxattr listxattr llistxattr flistxattr
 *            (also isatty splice posix_fallocate64 fchmod fchown futimens)
 *   libgfortran.so.5  open read write writev lseek close fstat stat lstat
 *            access unlink ftruncate dup fcntl (also isatty mmap)
 *   bash     open read write close lseek fstat stat lstat access faccessat
 *            unlink dup dup2 fcntl fopen fdopen ioctl (also fchmod isatty)
 *   ls       stat statx lseek faccessat ioctl getxattr (libselinux: lgetxattr)
 * (strace: cp opens the target O_PATH|O_DIRECTORY first, tries
 * ioctl(FICLONE) and copy_file_range, then reads and writes; dd opens and
 * dup2()s onto 0/1, seeks with lseek(SEEK_CUR), truncates with ftruncate;
 * libc's fstat is newfstatat(fd, "", AT_EMPTY_PATH) inside libc, so only
 * the exported names matter.)
 * The others cover the same calls under their other names: the 64 twins,
 * the fortified __open*_2/__read_chk/__pread*_chk, the pre-2.33 stat ABI
 * (__xstat, __fxstat, __lxstat, __fxstatat and their 64 twins), statx (ls,
 * newer coreutils), creat, preadv/pwritev, closefrom, sendfile. isatty,
 * mmap, fchmod and the like are not hooked: the placeholder answers them.
 */
#include "interpose.h"
#include "preload.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

_Static_assert(sizeof(off_t) == 8 && sizeof(long) == 8, "libpgas.so is for LP64 targets");
_Static_assert(sizeof(struct stat) == sizeof(struct stat64), "stat and stat64 differ");

/* Entry points glibc 2.36 does not declare: the pre-2.33 stat ABI (the
 * fortified ones are in interpose.h). */
int __fxstat(int ver, int fd, struct stat *st);
int __fxstat64(int ver, int fd, struct stat64 *st);
int __xstat(int ver, const char *path, struct stat *st);
int __xstat64(int ver, const char *path, struct stat64 *st);
int __lxstat(int ver, const char *path, struct stat *st);
int __lxstat64(int ver, const char *path, struct stat64 *st);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags);

/* ---- fork and exit ----------------------------------------------------- */

static void pgas_atfork_child(void)
{
    pio_ip_forget_all(&gas_pl_fds); /* the files stay the parent's */
    gas_pl_conn_forget();
}

__attribute__((constructor)) static void pgas_init(void)
{
    (void)PIO_IP_REAL(open);
    (void)PIO_IP_REAL(read);
    (void)PIO_IP_REAL(write);
    (void)PIO_IP_REAL(close);
    pthread_atfork(NULL, NULL, pgas_atfork_child);
}

/* pgas_fini - at exit: flush stdio (pgas streams write through us), then
 * close every pgas file still open, so that queued writes are applied. */
__attribute__((destructor)) static void pgas_fini(void)
{
    int made = gas_pl_conn_made(), hw = atomic_load(&gas_pl_fds.hw);

    if (!made || !gas_pl_mine())
        return;
    fflush(NULL);
    for (int fd = 0; fd < hw; fd++)
        if (gas_pl_slot(fd))
            (void)gas_pl_close(fd);
}

/* ---- the hooks (PIO_IP_READ_HOOKS, PIO_IP_WRITE_HOOKS) ----------------- */

/* the open family, creat: PIO_IP_NOT_OURS, or the pgas open */
static int serve_open(int dirfd, const char *path, int flags, mode_t mode)
{
    return gas_pl_open_hook(dirfd, path, flags, mode);
}

/* libc opened fd: a slot of that number is stale */
static int serve_opened(int dirfd, const char *path, int flags, mode_t mode, int fd)
{
    (void)dirfd, (void)path, (void)flags, (void)mode;
    return gas_pl_forget(fd);
}

static FILE *serve_fopen(const char *path, const char *mode,
                         FILE *(*real)(const char *, const char *))
{
    return gas_pl_is_path(path) ? gas_pl_fopen(path, mode) : real(path, mode);
}

static FILE *serve_fdopen(int fd, const char *mode, FILE *(*real)(int, const char *))
{
    return gas_pl_slot(fd) ? pio_ip_stream(fd, mode) : real(fd, mode);
}

/* the read and write families: at the position (pos) or at off; preadv2,
 * pwritev2: off -1 means the position, the RWF_* flags are ignored */
static ssize_t serve_readv(int fd, const struct iovec *iov, int cnt, off_t off, int pos)
{
    return gas_pl_iov(fd, iov, cnt, off, pos, 0);
}

static ssize_t serve_writev(int fd, const struct iovec *iov, int cnt, off_t off, int pos)
{
    return gas_pl_iov(fd, iov, cnt, off, pos, 1);
}

static ssize_t serve_read(int fd, void *buf, size_t n, off_t off, int pos)
{
    struct iovec v = {buf, n};

    return serve_readv(fd, &v, 1, off, pos);
}

static ssize_t serve_write(int fd, const void *buf, size_t n, off_t off, int pos)
{
    struct iovec v = {(void *)buf, n};

    return serve_writev(fd, &v, 1, off, pos);
}

static off_t serve_lseek(int fd, off_t off, int whence)
{
    return gas_pl_lseek(fd, off, whence);
}

/* serve_fsync - FSYNC: every earlier request applied and durable. */
static int serve_fsync(int fd)
{
    struct pgas_file *f = gas_pl_get(fd);
    int r;

    if (!f)
        return PIO_IP_NOT_OURS;
    r = gas_pl_file_rpc(f, GAS_OP_FSYNC, 0, NULL, 1);
    gas_pl_release(f);
    return r;
}

static int serve_close(int fd)
{
    return gas_pl_close(fd);
}

static int serve_close_range(unsigned lo, unsigned hi, int flags,
                             int (*real)(unsigned, unsigned, int))
{
    int r = real(lo, hi, flags);

    if (r == 0 && !(flags & CLOSE_RANGE_CLOEXEC))
        gas_pl_drop_range(lo, hi);
    return r;
}

static int serve_ftruncate(int fd, off_t len)
{
    struct pgas_file *f = gas_pl_get(fd);
    int r = -1;

    if (!f)
        return PIO_IP_NOT_OURS;
    if (len < 0 || f->accmode == O_RDONLY)
        errno = EINVAL;
    else
        r = gas_pl_file_rpc(f, GAS_OP_TRUNC, (uint64_t)len, NULL, 0);
    gas_pl_release(f);
    return r;
}

static int serve_stat(int dirfd, const char *path, int flags, struct stat *st)
{
    return gas_pl_stat_hook(dirfd, path, flags, st);
}

static int serve_statfs(int fd, const char *path, struct statfs *sf)
{
    return gas_pl_statfs_hook(fd, path, sf);
}

/* statvfs is statfs in other words (glibc's own statvfs does not go
 * through statfs's symbol, so both are hooked) */
static int serve_statvfs(int fd, const char *path, struct statvfs *sv)
{
    struct statfs sf;
    int r = gas_pl_statfs_hook(fd, path, &sf);
    if (r != 0)
        return r;
    memset(sv, 0, sizeof(*sv));
    sv->f_bsize = (unsigned long)sf.f_bsize;
    sv->f_frsize = (unsigned long)sf.f_frsize;
    sv->f_blocks = sf.f_blocks;
    sv->f_bfree = sf.f_bfree;
    sv->f_bavail = sf.f_bavail;
    sv->f_files = sf.f_files;
    sv->f_ffree = sf.f_ffree;
    sv->f_favail = sf.f_ffree;
    sv->f_namemax = (unsigned long)sf.f_namelen;
    return 0;
}

static int serve_statx(int dirfd, const char *path, int flags, struct statx *sx)
{
    return gas_pl_statx_hook(dirfd, path, flags, sx);
}

static int serve_access(int dirfd, const char *path, int mode)
{
    return gas_pl_access_hook(dirfd, path, mode);
}

static int serve_unlink(int dirfd, const char *path, int flags)
{
    return gas_pl_unlink_hook(dirfd, path, flags);
}

/* copy_file_range, sendfile: the kernel would copy into the placeholder.
 * EXDEV makes cp and cat fall back to read/write; Python's shutil falls
 * back on EINVAL from its first sendfile. */
static ssize_t serve_copy_file_range(int in, int out)
{
    return gas_pl_slot(in) || gas_pl_slot(out) ? pio_ip_fail(EXDEV) : PIO_IP_NOT_OURS;
}

static ssize_t serve_sendfile(int out, int in, off_t *off, size_t n)
{
    (void)off, (void)n;
    return gas_pl_slot(in) || gas_pl_slot(out) ? pio_ip_fail(EINVAL) : PIO_IP_NOT_OURS;
}

static int serve_fadvise(int fd)
{
    return gas_pl_slot(fd) ? 0 : PIO_IP_NOT_OURS;
}

static int serve_dup(int fd, int (*real)(int))
{
    struct pgas_file *f;
    int r;

    if (!gas_pl_slot(fd) || !gas_pl_mine() || !(f = gas_pl_get(fd)))
        return real(fd);
    r = gas_pl_dup_to(f, real(fd));
    gas_pl_release(f);
    return r;
}

static int serve_dup2(int oldfd, int newfd, int (*real)(int, int))
{
    if ((!gas_pl_slot(oldfd) && !gas_pl_slot(newfd)) || !gas_pl_mine())
        return real(oldfd, newfd);
    return gas_pl_dup2(oldfd, newfd, -1);
}

static int serve_dup3(int oldfd, int newfd, int flags, int (*real)(int, int, int))
{
    if ((!gas_pl_slot(oldfd) && !gas_pl_slot(newfd)) || !gas_pl_mine() || flags < 0)
        return real(oldfd, newfd, flags);
    return gas_pl_dup2(oldfd, newfd, flags);
}

static int serve_fcntl(int fd, int cmd, void *arg, int (*real)(int, int, ...))
{
    int r = gas_pl_fcntl(fd, cmd, arg);

    return r != PIO_IP_NOT_OURS ? r : real(fd, cmd, arg);
}

/* ioctl: no pgas file is a terminal, nor clones (cp's FICLONE). */
static int serve_ioctl(int fd, unsigned long cmd, void *arg, int (*real)(int, unsigned long, ...))
{
    if (gas_pl_slot(fd))
        return pio_ip_fail(ENOTTY);
    return real(fd, cmd, arg);
}

/* Extended attributes: none on a pgas file (ls asks for the SELinux label). */
static ssize_t serve_getxattr(const char *path)
{
    int r = gas_pl_xattr_hook(path);

    if (r == PIO_IP_NOT_OURS)
        return r;
    return r < 0 ? -1 : pio_ip_fail(ENODATA);
}

static ssize_t serve_fgetxattr(int fd)
{
    return gas_pl_slot(fd) ? pio_ip_fail(ENODATA) : PIO_IP_NOT_OURS;
}

static ssize_t serve_listxattr(const char *path)
{
    return gas_pl_xattr_hook(path);
}

static ssize_t serve_flistxattr(int fd)
{
    return gas_pl_slot(fd) ? 0 : PIO_IP_NOT_OURS;
}

PIO_IP_READ_HOOKS(PIO_IP_HOOK)
PIO_IP_WRITE_HOOKS(PIO_IP_HOOK)

void closefrom(int lo)
{
    PIO_IP_REAL(closefrom)(lo);
    if (lo >= 0)
        gas_pl_drop_range((unsigned)lo, UINT_MAX);
}
