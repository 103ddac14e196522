/* interpose.h - what the LD_PRELOAD libraries (libpgas.so, libanco.so) share:
 * libc's functions behind our hooks, the descriptor table, the optional
 * arguments of open and fcntl, stdio streams through the hooks.
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

/* ---- the real functions ------------------------------------------------ */

/* PIO_IP_SLOT(name) declares, at file scope, where libc's name is kept;
 * PIO_IP_REAL(name) is libc's name (the next definition after ours), looked
 * up on first use: hooks can run before our constructor does (other
 * libraries' constructors call them). */
#define PIO_IP_SLOT(name) static void *_Atomic pio_ip_sym_##name
#define PIO_IP_REAL(name) ((__typeof__(&name))pio_ip_sym(&pio_ip_sym_##name, #name))

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
