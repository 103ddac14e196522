/* interpose.h - what the LD_PRELOAD libraries (libpgas.so, libanco.so) share:
 * the one list of the hooks, libc's functions behind them, the descriptor
 * table, the optional arguments of open and fcntl, stdio streams through
 * the hooks.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Not part of libpio.a or libpio.so: each preload library compiles
 * interpose.c into itself, position-independent, and every name declared
 * here is hidden (the pragma below), so it never meets a program's own
 * symbols nor the other library's copy. Nothing here allocates but
 * fopencookie.
 * Thread-safety: every function is thread-safe; the table's mutex guards its
 * updates and its records' reference counts, and is only ever held alone
 * (never across a call into libc's I/O or a library's own work). */
#ifndef PIO_INTERPOSE_H
#define PIO_INTERPOSE_H

#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/types.h>

/* Entry points glibc exports but declares only under _FORTIFY_SOURCE; the
 * libraries hook them (default visibility: these are the hooks). */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen);

#pragma GCC visibility push(hidden)

#define PIO_IP_NOT_OURS (-2)  /* a hook helper's "not served here: ask libc" */
#define PIO_IP_FD_MAX   65536 /* descriptors at or above it are never in a table */

/* ---- the hooks --------------------------------------------------------- */

/* One list of every libc entry point a preload library may hook, two
 * halves: PIO_IP_READ_HOOKS, what a library that serves reads of files it
 * picks hooks (libanco.so), and PIO_IP_WRITE_HOOKS, what a library that
 * serves a whole file system adds: writes, attributes, names (libpgas.so
 * hooks both). One entry is
 *   X(shape, ret, name, (params), (args), op, (op_args))
 * ret name(params) is the hook (variadic ones: the fixed parameters, the
 * last named flags for open's mode, cmd for fcntl's and ioctl's argument);
 * args calls libc's name with them; op names the library's serve_op, a
 * static function it defines before expanding the list with PIO_IP_HOOK,
 * called with op_args (what the hook means, e.g. lstat64 is stat of
 * (AT_FDCWD, path, 0)). The shape says what the hook does around it:
 *   CALL   r = serve_op(op_args); PIO_IP_NOT_OURS: libc's name(args)
 *   CHK    the same when n <= buflen (a fortified read); else libc, which
 *          aborts
 *   OPEN   r = serve_open(op_args); PIO_IP_NOT_OURS: libc's name(args),
 *          whose result goes through serve_opened(op_args, fd)
 *   OPENV  OPEN with open's optional mode (PIO_IP_OPEN_MODE)
 *   PASS   serve_op(op_args, libc's name) does it all, libc included
 *   ARGV   PASS with fcntl's or ioctl's optional argument (PIO_IP_OPT_ARG)
 *   OWN    nothing made: each library writes the hook itself
 * Every entry has its libc slot (PIO_IP_REAL), one per library, in
 * interpose.c: reachable from each of a library's files. */
/* clang-format off */
#define PIO_IP_READ_HOOKS(X) \
    X(OPENV, int, open, (const char *path, int flags), (path, flags, mode), open, (AT_FDCWD, path, flags, mode)) \
    X(OPENV, int, open64, (const char *path, int flags), (path, flags, mode), open, (AT_FDCWD, path, flags, mode)) \
    X(OPENV, int, openat, (int dirfd, const char *path, int flags), (dirfd, path, flags, mode), open, (dirfd, path, flags, mode)) \
    X(OPENV, int, openat64, (int dirfd, const char *path, int flags), (dirfd, path, flags, mode), open, (dirfd, path, flags, mode)) \
    X(OPEN, int, __open_2, (const char *path, int flags), (path, flags), open, (AT_FDCWD, path, flags, 0)) \
    X(OPEN, int, __open64_2, (const char *path, int flags), (path, flags), open, (AT_FDCWD, path, flags, 0)) \
    X(OPEN, int, __openat_2, (int dirfd, const char *path, int flags), (dirfd, path, flags), open, (dirfd, path, flags, 0)) \
    X(OPEN, int, __openat64_2, (int dirfd, const char *path, int flags), (dirfd, path, flags), open, (dirfd, path, flags, 0)) \
    X(PASS, FILE *, fopen, (const char *path, const char *mode), (path, mode), fopen, (path, mode)) \
    X(PASS, FILE *, fopen64, (const char *path, const char *mode), (path, mode), fopen, (path, mode)) \
    X(PASS, FILE *, fdopen, (int fd, const char *mode), (fd, mode), fdopen, (fd, mode)) \
    X(CALL, ssize_t, read, (int fd, void *buf, size_t n), (fd, buf, n), read, (fd, buf, n, 0, 1)) \
    X(CALL, ssize_t, pread, (int fd, void *buf, size_t n, off_t off), (fd, buf, n, off), read, (fd, buf, n, off, 0)) \
    X(CALL, ssize_t, pread64, (int fd, void *buf, size_t n, off64_t off), (fd, buf, n, off), read, (fd, buf, n, off, 0)) \
    X(CHK, ssize_t, __read_chk, (int fd, void *buf, size_t n, size_t buflen), (fd, buf, n, buflen), read, (fd, buf, n, 0, 1)) \
    X(CHK, ssize_t, __pread_chk, (int fd, void *buf, size_t n, off_t off, size_t buflen), (fd, buf, n, off, buflen), read, (fd, buf, n, off, 0)) \
    X(CHK, ssize_t, __pread64_chk, (int fd, void *buf, size_t n, off64_t off, size_t buflen), (fd, buf, n, off, buflen), read, (fd, buf, n, off, 0)) \
    X(CALL, ssize_t, readv, (int fd, const struct iovec *iov, int cnt), (fd, iov, cnt), readv, (fd, iov, cnt, 0, 1)) \
    X(CALL, ssize_t, preadv, (int fd, const struct iovec *iov, int cnt, off_t off), (fd, iov, cnt, off), readv, (fd, iov, cnt, off, 0)) \
    X(CALL, ssize_t, preadv64, (int fd, const struct iovec *iov, int cnt, off64_t off), (fd, iov, cnt, off), readv, (fd, iov, cnt, off, 0)) \
    X(CALL, ssize_t, preadv2, (int fd, const struct iovec *iov, int cnt, off_t off, int flags), (fd, iov, cnt, off, flags), readv, (fd, iov, cnt, off, off == -1)) \
    X(CALL, ssize_t, preadv64v2, (int fd, const struct iovec *iov, int cnt, off64_t off, int flags), (fd, iov, cnt, off, flags), readv, (fd, iov, cnt, off, off == -1)) \
    X(CALL, off_t, lseek, (int fd, off_t off, int whence), (fd, off, whence), lseek, (fd, off, whence)) \
    X(CALL, off64_t, lseek64, (int fd, off64_t off, int whence), (fd, off, whence), lseek, (fd, off, whence)) \
    X(CALL, int, close, (int fd), (fd), close, (fd)) \
    X(PASS, int, close_range, (unsigned lo, unsigned hi, int flags), (lo, hi, flags), close_range, (lo, hi, flags)) \
    X(OWN, void, closefrom, (int lo), (lo), closefrom, (lo)) \
    X(PASS, int, dup, (int fd), (fd), dup, (fd)) \
    X(PASS, int, dup2, (int oldfd, int newfd), (oldfd, newfd), dup2, (oldfd, newfd)) \
    X(PASS, int, dup3, (int oldfd, int newfd, int flags), (oldfd, newfd, flags), dup3, (oldfd, newfd, flags)) \
    X(ARGV, int, fcntl, (int fd, int cmd), (fd, cmd, arg), fcntl, (fd, cmd, arg)) \
    X(ARGV, int, fcntl64, (int fd, int cmd), (fd, cmd, arg), fcntl, (fd, cmd, arg)) \
    X(CALL, ssize_t, copy_file_range, (int in, off64_t *inoff, int out, off64_t *outoff, size_t n, unsigned flags), (in, inoff, out, outoff, n, flags), copy_file_range, (in, out)) \
    X(CALL, ssize_t, sendfile, (int out, int in, off_t *off, size_t n), (out, in, off, n), sendfile, (out, in, off, n)) \
    X(CALL, ssize_t, sendfile64, (int out, int in, off64_t *off, size_t n), (out, in, off, n), sendfile, (out, in, off, n))

/* (struct stat *): the library asserts that stat and stat64 are the same */
#define PIO_IP_WRITE_HOOKS(X) \
    X(OPEN, int, creat, (const char *path, mode_t mode), (path, mode), open, (AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode)) \
    X(OPEN, int, creat64, (const char *path, mode_t mode), (path, mode), open, (AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode)) \
    X(CALL, ssize_t, write, (int fd, const void *buf, size_t n), (fd, buf, n), write, (fd, buf, n, 0, 1)) \
    X(CALL, ssize_t, pwrite, (int fd, const void *buf, size_t n, off_t off), (fd, buf, n, off), write, (fd, buf, n, off, 0)) \
    X(CALL, ssize_t, pwrite64, (int fd, const void *buf, size_t n, off64_t off), (fd, buf, n, off), write, (fd, buf, n, off, 0)) \
    X(CALL, ssize_t, writev, (int fd, const struct iovec *iov, int cnt), (fd, iov, cnt), writev, (fd, iov, cnt, 0, 1)) \
    X(CALL, ssize_t, pwritev, (int fd, const struct iovec *iov, int cnt, off_t off), (fd, iov, cnt, off), writev, (fd, iov, cnt, off, 0)) \
    X(CALL, ssize_t, pwritev64, (int fd, const struct iovec *iov, int cnt, off64_t off), (fd, iov, cnt, off), writev, (fd, iov, cnt, off, 0)) \
    X(CALL, ssize_t, pwritev2, (int fd, const struct iovec *iov, int cnt, off_t off, int flags), (fd, iov, cnt, off, flags), writev, (fd, iov, cnt, off, off == -1)) \
    X(CALL, ssize_t, pwritev64v2, (int fd, const struct iovec *iov, int cnt, off64_t off, int flags), (fd, iov, cnt, off, flags), writev, (fd, iov, cnt, off, off == -1)) \
    X(CALL, int, fsync, (int fd), (fd), fsync, (fd)) \
    X(CALL, int, fdatasync, (int fd), (fd), fsync, (fd)) \
    X(CALL, int, ftruncate, (int fd, off_t len), (fd, len), ftruncate, (fd, len)) \
    X(CALL, int, ftruncate64, (int fd, off64_t len), (fd, len), ftruncate, (fd, len)) \
    X(CALL, int, fstat, (int fd, struct stat *st), (fd, st), stat, (fd, "", AT_EMPTY_PATH, st)) \
    X(CALL, int, fstat64, (int fd, struct stat64 *st), (fd, st), stat, (fd, "", AT_EMPTY_PATH, (struct stat *)st)) \
    X(CALL, int, __fxstat, (int ver, int fd, struct stat *st), (ver, fd, st), stat, (fd, "", AT_EMPTY_PATH, st)) \
    X(CALL, int, __fxstat64, (int ver, int fd, struct stat64 *st), (ver, fd, st), stat, (fd, "", AT_EMPTY_PATH, (struct stat *)st)) \
    X(CALL, int, fstatat, (int dirfd, const char *path, struct stat *st, int flags), (dirfd, path, st, flags), stat, (dirfd, path, flags, st)) \
    X(CALL, int, fstatat64, (int dirfd, const char *path, struct stat64 *st, int flags), (dirfd, path, st, flags), stat, (dirfd, path, flags, (struct stat *)st)) \
    X(CALL, int, __fxstatat, (int ver, int dirfd, const char *path, struct stat *st, int flags), (ver, dirfd, path, st, flags), stat, (dirfd, path, flags, st)) \
    X(CALL, int, __fxstatat64, (int ver, int dirfd, const char *path, struct stat64 *st, int flags), (ver, dirfd, path, st, flags), stat, (dirfd, path, flags, (struct stat *)st)) \
    X(CALL, int, stat, (const char *path, struct stat *st), (path, st), stat, (AT_FDCWD, path, 0, st)) \
    X(CALL, int, stat64, (const char *path, struct stat64 *st), (path, st), stat, (AT_FDCWD, path, 0, (struct stat *)st)) \
    X(CALL, int, lstat, (const char *path, struct stat *st), (path, st), stat, (AT_FDCWD, path, 0, st)) \
    X(CALL, int, lstat64, (const char *path, struct stat64 *st), (path, st), stat, (AT_FDCWD, path, 0, (struct stat *)st)) \
    X(CALL, int, __xstat, (int ver, const char *path, struct stat *st), (ver, path, st), stat, (AT_FDCWD, path, 0, st)) \
    X(CALL, int, __xstat64, (int ver, const char *path, struct stat64 *st), (ver, path, st), stat, (AT_FDCWD, path, 0, (struct stat *)st)) \
    X(CALL, int, __lxstat, (int ver, const char *path, struct stat *st), (ver, path, st), stat, (AT_FDCWD, path, 0, st)) \
    X(CALL, int, __lxstat64, (int ver, const char *path, struct stat64 *st), (ver, path, st), stat, (AT_FDCWD, path, 0, (struct stat *)st)) \
    X(CALL, int, statx, (int dirfd, const char *path, int flags, unsigned mask, struct statx *sx), (dirfd, path, flags, mask, sx), statx, (dirfd, path, flags, sx)) \
    X(CALL, int, statfs, (const char *path, struct statfs *sf), (path, sf), statfs, (-1, path, sf)) \
    X(CALL, int, statfs64, (const char *path, struct statfs64 *sf), (path, sf), statfs, (-1, path, (struct statfs *)sf)) \
    X(CALL, int, fstatfs, (int fd, struct statfs *sf), (fd, sf), statfs, (fd, NULL, sf)) \
    X(CALL, int, fstatfs64, (int fd, struct statfs64 *sf), (fd, sf), statfs, (fd, NULL, (struct statfs *)sf)) \
    X(CALL, int, statvfs, (const char *path, struct statvfs *sv), (path, sv), statvfs, (-1, path, sv)) \
    X(CALL, int, statvfs64, (const char *path, struct statvfs64 *sv), (path, sv), statvfs, (-1, path, (struct statvfs *)sv)) \
    X(CALL, int, fstatvfs, (int fd, struct statvfs *sv), (fd, sv), statvfs, (fd, NULL, sv)) \
    X(CALL, int, fstatvfs64, (int fd, struct statvfs64 *sv), (fd, sv), statvfs, (fd, NULL, (struct statvfs *)sv)) \
    X(CALL, int, access, (const char *path, int mode), (path, mode), access, (AT_FDCWD, path, mode)) \
    X(CALL, int, faccessat, (int dirfd, const char *path, int mode, int flags), (dirfd, path, mode, flags), access, (dirfd, path, mode)) \
    X(CALL, int, unlink, (const char *path), (path), unlink, (AT_FDCWD, path, 0)) \
    X(CALL, int, unlinkat, (int dirfd, const char *path, int flags), (dirfd, path, flags), unlink, (dirfd, path, flags)) \
    X(CALL, int, posix_fadvise, (int fd, off_t off, off_t len, int advice), (fd, off, len, advice), fadvise, (fd)) \
    X(CALL, int, posix_fadvise64, (int fd, off64_t off, off64_t len, int advice), (fd, off, len, advice), fadvise, (fd)) \
    X(ARGV, int, ioctl, (int fd, unsigned long cmd), (fd, cmd, arg), ioctl, (fd, cmd, arg)) \
    X(CALL, ssize_t, getxattr, (const char *path, const char *name, void *value, size_t size), (path, name, value, size), getxattr, (path)) \
    X(CALL, ssize_t, lgetxattr, (const char *path, const char *name, void *value, size_t size), (path, name, value, size), getxattr, (path)) \
    X(CALL, ssize_t, fgetxattr, (int fd, const char *name, void *value, size_t size), (fd, name, value, size), fgetxattr, (fd)) \
    X(CALL, ssize_t, listxattr, (const char *path, char *list, size_t size), (path, list, size), listxattr, (path)) \
    X(CALL, ssize_t, llistxattr, (const char *path, char *list, size_t size), (path, list, size), listxattr, (path)) \
    X(CALL, ssize_t, flistxattr, (int fd, char *list, size_t size), (fd, list, size), flistxattr, (fd))
/* clang-format on */

/* PIO_IP_HOOK - the X of a list: defines the hook as its shape says. */
#define PIO_IP_HOOK(shape, ret, name, params, args, op, op_args)                                   \
    PIO_IP_HOOK_##shape(ret, name, params, args, op, op_args)

#define PIO_IP_HOOK_CALL(ret, name, params, args, op, op_args)                                     \
    ret name params                                                                                \
    {                                                                                              \
        ret r_ = serve_##op op_args;                                                               \
                                                                                                   \
        return r_ != PIO_IP_NOT_OURS ? r_ : PIO_IP_REAL(name) args;                                \
    }

#define PIO_IP_HOOK_CHK(ret, name, params, args, op, op_args)                                      \
    ret name params                                                                                \
    {                                                                                              \
        ret r_ = n <= buflen ? serve_##op op_args : PIO_IP_NOT_OURS;                               \
                                                                                                   \
        return r_ != PIO_IP_NOT_OURS ? r_ : PIO_IP_REAL(name) args;                                \
    }

#define PIO_IP_HOOK_OPEN(ret, name, params, args, op, op_args)                                     \
    ret name params                                                                                \
    {                                                                                              \
        ret r_ = serve_##op op_args;                                                               \
                                                                                                   \
        if (r_ != PIO_IP_NOT_OURS)                                                                 \
            return r_;                                                                             \
        return serve_opened(PIO_IP_UNPACK op_args, PIO_IP_REAL(name) args);                        \
    }

#define PIO_IP_HOOK_OPENV(ret, name, params, args, op, op_args)                                    \
    ret name(PIO_IP_UNPACK params, ...)                                                            \
    {                                                                                              \
        mode_t mode;                                                                               \
        ret r_;                                                                                    \
                                                                                                   \
        PIO_IP_OPEN_MODE(flags, mode);                                                             \
        r_ = serve_##op op_args;                                                                   \
        if (r_ != PIO_IP_NOT_OURS)                                                                 \
            return r_;                                                                             \
        return serve_opened(PIO_IP_UNPACK op_args, PIO_IP_REAL(name) args);                        \
    }

#define PIO_IP_HOOK_PASS(ret, name, params, args, op, op_args)                                     \
    ret name params                                                                                \
    {                                                                                              \
        return serve_##op(PIO_IP_UNPACK op_args, PIO_IP_REAL(name));                               \
    }

#define PIO_IP_HOOK_ARGV(ret, name, params, args, op, op_args)                                     \
    ret name(PIO_IP_UNPACK params, ...)                                                            \
    {                                                                                              \
        void *arg;                                                                                 \
                                                                                                   \
        PIO_IP_OPT_ARG(cmd, arg);                                                                  \
        return serve_##op(PIO_IP_UNPACK op_args, PIO_IP_REAL(name));                               \
    }

#define PIO_IP_HOOK_OWN(ret, name, params, args, op, op_args)

#define PIO_IP_UNPACK(...) __VA_ARGS__

/* ---- the real functions ------------------------------------------------ */

/* PIO_IP_REAL(name) is libc's name (the next definition after ours), looked
 * up on first use and kept in the library's slot pio_ip_sym_name: hooks can
 * run before our constructor does (other libraries' constructors call
 * them). Only names in the lists above have a slot. */
#define PIO_IP_REAL(name) ((__typeof__(&name))pio_ip_sym(&pio_ip_sym_##name, #name))

#define PIO_IP_SLOT_DECLARE(shape, ret, name, params, args, op, op_args)                           \
    extern void *_Atomic pio_ip_sym_##name;
PIO_IP_READ_HOOKS(PIO_IP_SLOT_DECLARE)
PIO_IP_WRITE_HOOKS(PIO_IP_SLOT_DECLARE)

/* pio_ip_sym - *slot, or dlsym(RTLD_NEXT, name) kept there. */
void *pio_ip_sym(void *_Atomic *slot, const char *name);

/* ---- optional arguments ------------------------------------------------ */

/* PIO_IP_OPEN_MODE - in a hook of the open family, open's optional mode
 * argument (0 when flags ask for none) into mode. */
#define PIO_IP_OPEN_MODE(flags, mode)                                                              \
    do {                                                                                           \
        (mode) = 0;                                                                                \
        if (((flags)&O_CREAT) || ((flags)&O_TMPFILE) == O_TMPFILE) {                               \
            va_list ap_;                                                                           \
            va_start(ap_, flags);                                                                  \
            (mode) = (mode_t)va_arg(ap_, int);                                                     \
            va_end(ap_);                                                                           \
        }                                                                                          \
    } while (0)

/* PIO_IP_OPT_ARG - in a hook of fcntl or ioctl, the third argument (an int
 * or a pointer) after last into arg, a void *: passed on as a pointer, as
 * glibc's own wrappers do. */
#define PIO_IP_OPT_ARG(last, arg)                                                                  \
    do {                                                                                           \
        va_list ap_;                                                                               \
        va_start(ap_, last);                                                                       \
        (arg) = va_arg(ap_, void *);                                                               \
        va_end(ap_);                                                                               \
    } while (0)

/* ---- small helpers ----------------------------------------------------- */

/* pio_ip_say - one line on stderr, through libc's write (a hook may serve
 * descriptor 2); longer than 1 KiB is cut. errno kept. */
__attribute__((format(printf, 1, 2))) void pio_ip_say(const char *fmt, ...);

/* pio_ip_fail - errno = e; returns -1. */
int pio_ip_fail(int e);

/* ---- the descriptor table ---------------------------------------------- */

/* The head of a library's record of one open file (its first member): the
 * references are the table's slots that hold it plus the calls in
 * progress, counted under the table's mutex. */
struct pio_ip_rec {
    int refs;
};

/* descriptor -> record, one table per library: static, its mtx
 * PTHREAD_MUTEX_INITIALIZER, the rest zero */
struct pio_ip_fds {
    struct pio_ip_rec *_Atomic slot[PIO_IP_FD_MAX];
    atomic_int hw;    /* one past the highest descriptor ever in the table */
    atomic_int owner; /* pid of the process whose table it is (pio_ip_own) */
    pthread_mutex_t mtx;
};

/* pio_ip_has - whether fd has a record now: the hooks' fast path, one
 * relaxed load (whoever then uses the record takes it with pio_ip_get). */
static inline int pio_ip_has(struct pio_ip_fds *t, int fd)
{
    return (unsigned)fd < PIO_IP_FD_MAX &&
           atomic_load_explicit(&t->slot[fd], memory_order_relaxed) != NULL;
}

/* pio_ip_get - fd's record with a reference the caller drops with
 * pio_ip_unref, or NULL when fd has none. */
struct pio_ip_rec *pio_ip_get(struct pio_ip_fds *t, int fd);

/* pio_ip_ref - one more reference to r (the caller holds one). */
void pio_ip_ref(struct pio_ip_fds *t, struct pio_ip_rec *r);

/* pio_ip_unref - drop a reference to r: 1 when it was the last one (the
 * caller then ends and frees r), else 0. */
int pio_ip_unref(struct pio_ip_fds *t, struct pio_ip_rec *r);

/* pio_ip_install - put r (NULL: nothing) in fd's slot, taking over the
 * caller's reference; returns what was there, whose reference the caller
 * now holds. 0 <= fd < PIO_IP_FD_MAX. */
struct pio_ip_rec *pio_ip_install(struct pio_ip_fds *t, int fd, struct pio_ip_rec *r);

/* pio_ip_own - this process owns the table from now on. pio_ip_mine -
 * whether it does (a vfork child shares our memory, not our pid). */
void pio_ip_own(struct pio_ip_fds *t);
int pio_ip_mine(struct pio_ip_fds *t);

/* pio_ip_forget_all - in a pthread_atfork child: an empty table owned by
 * nobody, its mutex new; the records (and their references) stay the
 * parent's. */
void pio_ip_forget_all(struct pio_ip_fds *t);

/* ---- stdio ------------------------------------------------------------- */

/* pio_ip_stream - a stdio stream on descriptor fd whose reads, writes,
 * seeks and close call read, write, lseek and close, which are our hooks
 * (glibc's stdio calls the kernel by internal names no preload library
 * sees). mode: a stdio mode ("r", "w", "a", with or without "+"). The
 * stream owns fd; NULL (errno) leaves fd the caller's.
 * pio_ip_stream_or_close - the same for a descriptor the caller just
 * opened: on failure it is closed (errno kept). Either stream's fileno is
 * -1. */
FILE *pio_ip_stream(int fd, const char *mode);
FILE *pio_ip_stream_or_close(int fd, const char *mode);

#pragma GCC visibility pop

#endif
