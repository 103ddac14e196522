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
 * descriptor is one atomic load of fd's slot in pgas_fds and a compare, on
 * a path a 5-byte prefix compare. The library's own I/O (socket, eventfd,
 * stderr) uses send/recv/ppoll, which are not hooked, or the real functions.
 * What libanco.so does alike lives in libpio/interpose.c, compiled into both
 * libraries hidden: libc's functions behind the hooks (PIO_IP_REAL), the
 * descriptor table, open's and fcntl's optional arguments, the fopencookie
 * streams, the one-line messages on stderr (pio_ip_say).
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
 * Threads. One connection per process, made on the first pgas call; with it
 * an I/O thread (every signal blocked) that sends the pending batch of
 * frames once it is older than PGAS_FLUSH_US microseconds (default 2000) and
 * reads every reply, handing it to the thread that waits for its id. Callers
 * append frames to the batch (PGAS_BATCH bytes, default 256 KiB); a caller
 * whose frame does not fit sends the batch first, a frame larger than the
 * batch goes out on its own, and a caller that waits for a reply sends the
 * batch at once. The I/O thread is the only reader of the socket and never
 * blocks on a send (what the socket does not take now waits for POLLOUT) nor
 * on the send lock (trylock), so replies are always drained and the
 * dispatcher can never be stuck writing a reply to us while we write to it.
 * Payloads over GAS_PAYLOAD_MAX are split into several frames.
 *
 * Locks, in the order they may be taken (never leftwards):
 *   pgas_file.mtx  the file position, held across the requests that use it
 *   conn.send_mtx  the batch and every send on the socket (a stream: two
 *                  senders' bytes never interleave)
 *   conn.wait_mtx  the waiters, the dead flag's reason
 * pgas_fds.mtx (the reference counts of pgas_file and table updates) and
 * pgas_init_mtx (making the connection) are only held alone.
 *
 * Dispatcher gone. On EOF or an error on the socket the connection is dead:
 * every waiter wakes, and every later call on a pgas descriptor, and every
 * new pgas open, fails with EIO (close still releases the descriptor);
 * stderr says so once per process. There is no reconnection: queued writes
 * may have been lost, and the program should hear about it.
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
#include "libpio/interpose.h"
#include "pfs/gas/wire.h"
#include "pio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <time.h>
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

#define PGAS_BLKSIZE    (128 * 1024)
#define PGAS_DEV        ((dev_t)0x67617331) /* made up, fixed: "gas1" */
#define PGAS_MSG_MAX    256
#define PGAS_WHY_EOF    (-1) /* reasons a connection dies, besides an errno */
#define PGAS_WHY_BAD    (-2)
#define PGAS_PREFIX_LEN (sizeof(GAS_PREFIX) - 1)

/* ---- state ------------------------------------------------------------- */

/* One request waiting for its reply; on the caller's stack. */
struct pgas_waiter {
    struct pgas_waiter *next;
    uint32_t id;
    int done, lost; /* under wait_mtx; lost: the dispatcher went away */
    pthread_cond_t cv;
    struct gas_hdr rep;     /* the reply's header */
    void *buf;              /* a successful reply's payload goes here (or NULL) */
    size_t cap;             /* buf's size: a longer payload kills the connection */
    char msg[PGAS_MSG_MAX]; /* a failed reply's text */
};

/* The process' one connection to the dispatcher (never freed: a dead one
 * stays, so that every file that points to it can say so). */
struct pgas_conn {
    char sockpath[sizeof(((struct sockaddr_un *)0)->sun_path)];
    int sock; /* -1 once dead and closed (under send_mtx) */
    int evfd; /* wakes the I/O thread when the batch stops being empty */
    mode_t umask;
    long long flush_ns;
    atomic_uint next_id;
    atomic_int dead;
    pthread_mutex_t send_mtx;
    uint8_t *batch; /* whole frames, [bsent, blen) not sent yet */
    size_t bcap, blen, bsent;
    _Atomic long long bfirst; /* CLOCK_MONOTONIC ns of the batch's oldest frame; 0: empty */
    int io_busy, io_wantout;  /* the I/O thread's own */
    pthread_mutex_t wait_mtx;
    struct pgas_waiter *waiters;
    char reason[128]; /* why it died; set once */
};

/* One open pgas file; shared by the descriptors dup'ed from one open. */
struct pgas_file {
    struct pio_ip_rec rec; /* first: the references, under pgas_fds.mtx */
    struct pgas_conn *conn;
    uint32_t handle;
    int accmode;       /* O_RDONLY, O_WRONLY (asynchronous writes) or O_RDWR */
    atomic_int append; /* O_APPEND */
    pthread_mutex_t mtx;
    off_t pos; /* under mtx */
    uint64_t ino;
    char path[]; /* the pfs path */
};

/* What OPEN, FSTAT and STAT replies say. */
struct pgas_attr {
    uint64_t size, mode, mtime_ns;
};

/* owner: the process that made pgas_conn_p */
static struct pio_ip_fds pgas_fds = {.mtx = PTHREAD_MUTEX_INITIALIZER};
static struct pgas_conn *_Atomic pgas_conn_p;
static pthread_mutex_t pgas_init_mtx = PTHREAD_MUTEX_INITIALIZER;
static atomic_int pgas_told_gone, pgas_told_unreachable;

/* ---- small helpers ----------------------------------------------------- */

static long long pgas_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* pgas_env - the integer in environment variable name, dflt when unset or
 * not an integer in [lo, hi]. */
static long long pgas_env(const char *name, long long dflt, long long lo, long long hi)
{
    const char *s = getenv(name);
    char *end;
    long long v;

    if (!s || !*s)
        return dflt;
    errno = 0;
    v = strtoll(s, &end, 10);
    return errno || *end || v < lo || v > hi ? dflt : v;
}

static uint64_t pgas_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */

    while (*s) {
        h ^= (unsigned char)*s++;
        h *= 1099511628211ull;
    }
    return h ? h : 1;
}

static size_t pgas_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* pgas_errno - a PIO status as an errno. */
static int pgas_errno(int status)
{
    switch (status) {
    case PIO_ENOENT: return ENOENT;
    case PIO_EEXIST: return EEXIST;
    case PIO_EISDIR: return EISDIR;
    case PIO_ENOTDIR: return ENOTDIR;
    case PIO_ENOTEMPTY: return ENOTEMPTY;
    case PIO_ENOSPC: return ENOSPC;
    case PIO_EINVAL: return EINVAL;
    case PIO_ENOMEM: return ENOMEM;
    case PIO_EPERM: return EACCES;
    default: return EIO;
    }
}

/* ---- the descriptor table ---------------------------------------------- */

/* pgas_slot - whether fd is a pgas descriptor now (the hooks' fast path). */
static int pgas_slot(int fd)
{
    return pio_ip_has(&pgas_fds, fd);
}

/* pgas_get - fd's pgas_file with a reference the caller drops with
 * pgas_put or pgas_release, or NULL when fd is not a pgas descriptor. */
static struct pgas_file *pgas_get(int fd)
{
    return (struct pgas_file *)pio_ip_get(&pgas_fds, fd);
}

static void pgas_ref(struct pgas_file *f)
{
    pio_ip_ref(&pgas_fds, &f->rec);
}

/* pgas_install - put f (NULL: nothing) in fd's slot, taking over the
 * caller's reference; returns what was there, whose reference the caller
 * now holds. fd < PIO_IP_FD_MAX. */
static struct pgas_file *pgas_install(int fd, struct pgas_file *f)
{
    return (struct pgas_file *)pio_ip_install(&pgas_fds, fd, f ? &f->rec : NULL);
}

static int pgas_file_end(struct pgas_file *f);

/* pgas_put - drop a reference; the last one closes the handle (CLOSE) and
 * frees f. Returns 0, or -1 with errno when that CLOSE failed. */
static int pgas_put(struct pgas_file *f)
{
    return pio_ip_unref(&pgas_fds, &f->rec) ? pgas_file_end(f) : 0;
}

/* pgas_release - pgas_put, errno kept (the caller's result stands). */
static void pgas_release(struct pgas_file *f)
{
    int e = errno;

    (void)pgas_put(f);
    errno = e;
}

/* pgas_mine - whether this process owns the table (not a vfork child). */
static int pgas_mine(void)
{
    return pio_ip_mine(&pgas_fds);
}

/* pgas_forget - drop fd's slot after a close behind our back (fd is new). */
static int pgas_forget(int fd)
{
    struct pgas_file *old;

    if (fd < 0 || !pgas_slot(fd) || !pgas_mine())
        return fd;
    old = pgas_install(fd, NULL);
    if (old)
        pgas_release(old);
    return fd;
}

/* ---- the batch and the socket ------------------------------------------ */

static void pgas_set_reason(struct pgas_conn *c, int why)
{
    char tmp[96];

    if (c->reason[0])
        return;
    if (why == PGAS_WHY_EOF)
        snprintf(c->reason, sizeof(c->reason), "it closed the connection");
    else if (why == PGAS_WHY_BAD)
        snprintf(c->reason, sizeof(c->reason), "malformed reply");
    else
        snprintf(c->reason, sizeof(c->reason), "%s", strerror_r(why, tmp, sizeof(tmp)));
}

/* pgas_fail - a send failed: remember why and shut the socket down, so
 * that the I/O thread sees it and wakes every waiter. send_mtx held. */
static void pgas_fail(struct pgas_conn *c, int err)
{
    pthread_mutex_lock(&c->wait_mtx);
    pgas_set_reason(c, err);
    pthread_mutex_unlock(&c->wait_mtx);
    shutdown(c->sock, SHUT_RDWR);
}

/* pgas_iov_skip - advance m's iovecs past k sent bytes and empty ones. */
static void pgas_iov_skip(struct msghdr *m, size_t k)
{
    while (m->msg_iovlen > 0 && (k > 0 || m->msg_iov->iov_len == 0)) {
        struct iovec *v = m->msg_iov;
        size_t d = pgas_min(k, v->iov_len);

        v->iov_base = (char *)v->iov_base + d;
        v->iov_len -= d;
        k -= d;
        if (v->iov_len == 0) {
            m->msg_iov++;
            m->msg_iovlen--;
        }
    }
}

/* pgas_send_all - send every byte of iov[n] (blocking). 0 or -1/errno. */
static int pgas_send_all(int sock, struct iovec *iov, int n)
{
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};

    pgas_iov_skip(&m, 0);
    while (m.msg_iovlen > 0) {
        ssize_t k = sendmsg(sock, &m, MSG_NOSIGNAL);

        if (k < 0 && errno != EINTR)
            return -1;
        pgas_iov_skip(&m, k < 0 ? 0 : (size_t)k);
    }
    return 0;
}

static void pgas_batch_empty(struct pgas_conn *c)
{
    c->blen = c->bsent = 0;
    atomic_store(&c->bfirst, 0);
}

/* pgas_flush - send the whole batch now (blocking). send_mtx held. */
static int pgas_flush(struct pgas_conn *c)
{
    struct iovec v = {c->batch + c->bsent, c->blen - c->bsent};
    int rc = pgas_send_all(c->sock, &v, 1);

    if (rc < 0)
        pgas_fail(c, errno);
    pgas_batch_empty(c);
    return rc;
}

/* pgas_flush_some - the I/O thread's flush: what the socket takes now.
 * send_mtx held. */
static void pgas_flush_some(struct pgas_conn *c)
{
    while (c->bsent < c->blen) {
        ssize_t k =
            send(c->sock, c->batch + c->bsent, c->blen - c->bsent, MSG_DONTWAIT | MSG_NOSIGNAL);

        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            c->io_wantout = 1;
            return;
        }
        if (k < 0 && errno != EINTR) {
            pgas_fail(c, errno);
            return;
        }
        c->bsent += k < 0 ? 0 : (size_t)k;
    }
    pgas_batch_empty(c);
}

/* pgas_append - copy frame h + payload into the batch (it fits). */
static void pgas_append(struct pgas_conn *c, const struct gas_hdr *h, const void *payload)
{
    gas_hdr_encode(h, c->batch + c->blen);
    if (h->plen)
        memcpy(c->batch + c->blen + GAS_HDR_SIZE, payload, h->plen);
    c->blen += GAS_HDR_SIZE + (size_t)h->plen;
    if (atomic_load(&c->bfirst) == 0) {
        atomic_store(&c->bfirst, pgas_now());
        (void)eventfd_write(c->evfd, 1);
    }
}

/* pgas_send_big - a frame larger than the batch, on its own. */
static int pgas_send_big(struct pgas_conn *c, const struct gas_hdr *h, const void *payload)
{
    uint8_t raw[GAS_HDR_SIZE];
    struct iovec v[2] = {{raw, GAS_HDR_SIZE}, {(void *)payload, h->plen}};

    gas_hdr_encode(h, raw);
    if (pgas_send_all(c->sock, v, 2) == 0)
        return 0;
    pgas_fail(c, errno);
    return -1;
}

/* pgas_send - queue frame h (+ h->plen payload bytes) after every frame
 * queued before; now: send the batch at once. 0, or -1 when the connection
 * is dead or failed (the caller says "gone"). */
static int pgas_send(struct pgas_conn *c, const struct gas_hdr *h, const void *payload, int now)
{
    size_t need = GAS_HDR_SIZE + (size_t)h->plen;
    int rc = -1;

    pthread_mutex_lock(&c->send_mtx);
    if (atomic_load(&c->dead) || c->sock < 0)
        goto unlock;
    rc = 0;
    if (c->blen + need > c->bcap)
        rc = pgas_flush(c);
    if (rc == 0 && need > c->bcap)
        rc = pgas_send_big(c, h, payload);
    else if (rc == 0)
        pgas_append(c, h, payload);
    if (rc == 0 && now && c->blen > c->bsent)
        rc = pgas_flush(c);
unlock:
    pthread_mutex_unlock(&c->send_mtx);
    return rc;
}

/* ---- waiting for replies ----------------------------------------------- */

/* pgas_gone - the dispatcher went away: say so once, errno EIO, -1. */
static int pgas_gone(struct pgas_conn *c)
{
    char why[sizeof(c->reason)];

    pthread_mutex_lock(&c->wait_mtx);
    snprintf(why, sizeof(why), "%s", c->reason[0] ? c->reason : "no reason given");
    pthread_mutex_unlock(&c->wait_mtx);
    if (!atomic_exchange(&pgas_told_gone, 1))
        pio_ip_say("pgas: the GAS dispatcher at %s went away (%s); writes not yet confirmed by "
                   "fsync or close may be lost",
                   c->sockpath, why);
    return pio_ip_fail(EIO);
}

/* pgas_wait_add - give h an id and register w for its reply. -1 when the
 * connection is dead (nobody would wake w). */
static int pgas_wait_add(struct pgas_conn *c, struct pgas_waiter *w, struct gas_hdr *h)
{
    int ok;

    pthread_mutex_lock(&c->wait_mtx);
    ok = !atomic_load(&c->dead);
    if (ok) {
        do
            w->id = atomic_fetch_add(&c->next_id, 1);
        while (w->id == 0);
        h->id = w->id;
        w->next = c->waiters;
        c->waiters = w;
    }
    pthread_mutex_unlock(&c->wait_mtx);
    return ok ? 0 : -1;
}

/* pgas_wait_take - unlink and return the waiter for id (NULL: none). */
static struct pgas_waiter *pgas_wait_take(struct pgas_conn *c, uint32_t id)
{
    struct pgas_waiter **pp, *w = NULL;

    pthread_mutex_lock(&c->wait_mtx);
    for (pp = &c->waiters; *pp; pp = &(*pp)->next) {
        if ((*pp)->id == id) {
            w = *pp;
            *pp = w->next;
            break;
        }
    }
    pthread_mutex_unlock(&c->wait_mtx);
    return w;
}

static void pgas_wait_done(struct pgas_conn *c, struct pgas_waiter *w, int lost)
{
    pthread_mutex_lock(&c->wait_mtx);
    w->done = 1;
    w->lost = lost;
    pthread_cond_signal(&w->cv); /* under the lock: w may go once we unlock */
    pthread_mutex_unlock(&c->wait_mtx);
}

/* pgas_rpc - send request h (+ payload) and wait for its reply, in w
 * (w->buf, w->cap: where a successful reply's payload goes). Returns 0, or
 * -1 with errno EIO when the dispatcher is gone. */
static int pgas_rpc(struct pgas_conn *c, struct gas_hdr *h, const void *payload,
                    struct pgas_waiter *w)
{
    int lost = 1;

    w->done = w->lost = 0;
    w->msg[0] = '\0';
    pthread_cond_init(&w->cv, NULL);
    if (pgas_wait_add(c, w, h) == 0) {
        (void)pgas_send(c, h, payload, 1); /* if it fails, the I/O thread wakes w */
        pthread_mutex_lock(&c->wait_mtx);
        while (!w->done)
            pthread_cond_wait(&w->cv, &c->wait_mtx);
        pthread_mutex_unlock(&c->wait_mtx);
        lost = w->lost;
    }
    pthread_cond_destroy(&w->cv);
    return lost ? pgas_gone(c) : 0;
}

/* pgas_check - 0 when w's reply is PIO_OK; else -1 with errno mapped and,
 * when loud or the status has no errno of its own, "pgas: PATH: why". */
static int pgas_check(const char *path, const struct pgas_waiter *w, int loud)
{
    char tmp[96];
    int e;

    if (w->rep.status == PIO_OK)
        return 0;
    e = pgas_errno(w->rep.status);
    if (loud || e == EIO)
        pio_ip_say("pgas: %s: %s", path, w->msg[0] ? w->msg : strerror_r(e, tmp, sizeof(tmp)));
    return pio_ip_fail(e);
}

/* ---- the I/O thread ---------------------------------------------------- */

/* pgas_recv_all - n bytes. 0, PGAS_WHY_EOF or an errno. */
static int pgas_recv_all(int sock, void *buf, size_t n)
{
    size_t got = 0;

    while (got < n) {
        ssize_t k = recv(sock, (char *)buf + got, n - got, 0);

        if (k == 0)
            return PGAS_WHY_EOF;
        if (k < 0 && errno != EINTR)
            return errno;
        got += k < 0 ? 0 : (size_t)k;
    }
    return 0;
}

static int pgas_recv_skip(int sock, size_t n)
{
    char junk[4096];
    int why = 0;

    while (n > 0 && !why) {
        size_t k = pgas_min(n, sizeof(junk));

        why = pgas_recv_all(sock, junk, k);
        n -= k;
    }
    return why;
}

/* pgas_recv_payload - h's payload into w: the data of a success (w->buf),
 * the text of a failure (w->msg); the rest skipped. */
static int pgas_recv_payload(struct pgas_conn *c, struct pgas_waiter *w, const struct gas_hdr *h)
{
    size_t keep = 0;
    int why = 0;

    if (w && h->status == PIO_OK && w->buf) {
        if (h->plen > w->cap)
            return PGAS_WHY_BAD;
        keep = h->plen;
        why = pgas_recv_all(c->sock, w->buf, keep);
    } else if (w && h->status != PIO_OK) {
        keep = pgas_min(h->plen, sizeof(w->msg) - 1);
        why = pgas_recv_all(c->sock, w->msg, keep);
        w->msg[why ? 0 : keep] = '\0';
    }
    return why ? why : pgas_recv_skip(c->sock, h->plen - keep);
}

/* pgas_read_reply - one reply, handed to its waiter. 0 or why it died. */
static int pgas_read_reply(struct pgas_conn *c)
{
    uint8_t raw[GAS_HDR_SIZE];
    struct gas_hdr h;
    struct pgas_waiter *w;
    int why = pgas_recv_all(c->sock, raw, sizeof(raw));

    if (why)
        return why;
    if (gas_hdr_decode(raw, &h) < 0 || h.op != GAS_OP_REPLY)
        return PGAS_WHY_BAD;
    w = pgas_wait_take(c, h.id);
    why = pgas_recv_payload(c, w, &h);
    if (w) {
        w->rep = h;
        pgas_wait_done(c, w, why != 0);
    }
    return why;
}

/* pgas_io_timeout - how long the I/O thread may sleep: until the batch is
 * PGAS_FLUSH_US old; NULL (forever) when it is empty or waits for POLLOUT. */
static struct timespec *pgas_io_timeout(struct pgas_conn *c, struct timespec *ts)
{
    long long first = atomic_load(&c->bfirst), left;

    if (first == 0 || c->io_wantout)
        return NULL;
    if (c->io_busy) /* someone sends: look again later, without spinning */
        left = c->flush_ns > 100000 ? c->flush_ns : 100000;
    else
        left = first + c->flush_ns - pgas_now();
    if (left < 0)
        left = 0;
    ts->tv_sec = left / 1000000000LL;
    ts->tv_nsec = left % 1000000000LL;
    return ts;
}

/* pgas_io_flush - send the batch if it is old enough and nobody else is
 * sending (then they send it, or we come back in PGAS_FLUSH_US). */
static void pgas_io_flush(struct pgas_conn *c)
{
    long long first = atomic_load(&c->bfirst);

    c->io_busy = c->io_wantout = 0;
    if (first == 0 || pgas_now() - first < c->flush_ns)
        return;
    if (pthread_mutex_trylock(&c->send_mtx) != 0) {
        c->io_busy = 1;
        return;
    }
    pgas_flush_some(c);
    pthread_mutex_unlock(&c->send_mtx);
}

/* pgas_io_step - wait for a reply, a POLLOUT, a new batch or the batch's
 * age; act on it. 0, or why the connection died. */
static int pgas_io_step(struct pgas_conn *c)
{
    struct pollfd p[2] = {{.fd = c->sock, .events = POLLIN}, {.fd = c->evfd, .events = POLLIN}};
    struct timespec ts;
    eventfd_t v;
    int why = 0;

    if (c->io_wantout)
        p[0].events |= POLLOUT;
    if (ppoll(p, 2, pgas_io_timeout(c, &ts), NULL) < 0)
        return errno == EINTR ? 0 : errno;
    if (p[1].revents & POLLIN)
        (void)eventfd_read(c->evfd, &v);
    if (p[0].revents & POLLNVAL)
        return EBADF;
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR))
        why = pgas_read_reply(c);
    if (!why)
        pgas_io_flush(c);
    return why;
}

/* pgas_die - mark c dead, wake every waiter, close the socket. */
static void pgas_die(struct pgas_conn *c, int why)
{
    struct pgas_waiter *w;

    pthread_mutex_lock(&c->wait_mtx);
    pgas_set_reason(c, why);
    atomic_store(&c->dead, 1);
    while ((w = c->waiters)) {
        c->waiters = w->next;
        w->done = w->lost = 1;
        pthread_cond_signal(&w->cv);
    }
    pthread_mutex_unlock(&c->wait_mtx);
    shutdown(c->sock, SHUT_RDWR); /* a sender blocked in send returns */
    pthread_mutex_lock(&c->send_mtx);
    PIO_IP_REAL(close)(c->sock);
    PIO_IP_REAL(close)(c->evfd);
    c->sock = c->evfd = -1;
    pgas_batch_empty(c);
    pthread_mutex_unlock(&c->send_mtx);
}

static void *pgas_io_main(void *arg)
{
    struct pgas_conn *c = arg;
    int why = 0;

    while (!why)
        why = pgas_io_step(c);
    pgas_die(c, why);
    return NULL;
}

/* ---- making the connection --------------------------------------------- */

/* pgas_read_umask - the process' umask, from /proc/self/status (022 if
 * that cannot be read): umask() cannot be read without changing it. */
static mode_t pgas_read_umask(void)
{
    char buf[1024];
    const char *p;
    ssize_t n;
    int fd = PIO_IP_REAL(open)("/proc/self/status", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return 022;
    n = PIO_IP_REAL(read)(fd, buf, sizeof(buf) - 1);
    PIO_IP_REAL(close)(fd);
    buf[n > 0 ? n : 0] = '\0';
    p = strstr(buf, "\nUmask:");
    return p ? (mode_t)strtoul(p + 7, NULL, 8) : 022;
}

static int pgas_connect(struct pgas_conn *c)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd, e;

    memcpy(sa.sun_path, c->sockpath, sizeof(sa.sun_path));
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        e = errno;
        PIO_IP_REAL(close)(fd);
        return pio_ip_fail(e);
    }
    c->sock = fd;
    return 0;
}

/* pgas_start - the I/O thread, detached, every signal blocked. */
static int pgas_start(struct pgas_conn *c)
{
    pthread_attr_t a;
    pthread_t t;
    sigset_t all, old;
    int rc;

    sigfillset(&all);
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&t, &a, pgas_io_main, c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&a);
    return rc ? pio_ip_fail(rc) : 0;
}

/* pgas_conn_setup - everything but the socket and the thread. */
static int pgas_conn_setup(struct pgas_conn *c)
{
    const char *path = getenv("GAS_SOCKET");

    if (!path || !*path)
        path = GAS_SOCKET_DEFAULT;
    if (strlen(path) >= sizeof(c->sockpath))
        return pio_ip_fail(ENAMETOOLONG);
    strcpy(c->sockpath, path);
    c->bcap = (size_t)pgas_env("PGAS_BATCH", 256 << 10, 4096, 1 << 30);
    c->flush_ns = 1000 * pgas_env("PGAS_FLUSH_US", 2000, 0, 60000000);
    c->umask = pgas_read_umask();
    c->sock = -1;
    atomic_init(&c->next_id, 1);
    c->batch = malloc(c->bcap);
    if (!c->batch)
        return -1;
    c->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (c->evfd < 0) {
        free(c->batch);
        return -1;
    }
    pthread_mutex_init(&c->send_mtx, NULL);
    pthread_mutex_init(&c->wait_mtx, NULL);
    return 0;
}

static void pgas_unreachable(const struct pgas_conn *c)
{
    char tmp[96];
    int e = errno;

    if (!atomic_exchange(&pgas_told_unreachable, 1))
        pio_ip_say("pgas: cannot reach the GAS dispatcher at %s: %s", c->sockpath,
                   strerror_r(e, tmp, sizeof(tmp)));
}

/* pgas_conn_new - connect and start the I/O thread. NULL with errno (from
 * connect when the dispatcher cannot be reached; stderr once). */
static struct pgas_conn *pgas_conn_new(void)
{
    struct pgas_conn *c = calloc(1, sizeof(*c));
    int e;

    if (!c)
        return NULL;
    if (pgas_conn_setup(c) < 0)
        goto free_conn;
    if (pgas_connect(c) < 0) {
        pgas_unreachable(c);
        goto close_evfd;
    }
    if (pgas_start(c) < 0)
        goto close_sock;
    pio_ip_own(&pgas_fds);
    return c;
close_sock:
    e = errno;
    PIO_IP_REAL(close)(c->sock);
    errno = e;
close_evfd:
    e = errno;
    PIO_IP_REAL(close)(c->evfd);
    free(c->batch);
    pthread_mutex_destroy(&c->send_mtx);
    pthread_mutex_destroy(&c->wait_mtx);
    errno = e;
free_conn:
    e = errno;
    free(c);
    errno = e;
    return NULL;
}

/* pgas_conn - the process' connection, made on first use. NULL with errno. */
static struct pgas_conn *pgas_conn(void)
{
    struct pgas_conn *c = atomic_load(&pgas_conn_p);

    if (c)
        return c;
    pthread_mutex_lock(&pgas_init_mtx);
    c = atomic_load(&pgas_conn_p);
    if (!c) {
        c = pgas_conn_new();
        atomic_store(&pgas_conn_p, c);
    }
    pthread_mutex_unlock(&pgas_init_mtx);
    return c;
}

/* ---- requests ---------------------------------------------------------- */

static void pgas_hdr(struct gas_hdr *h, unsigned op, uint32_t handle)
{
    memset(h, 0, sizeof(*h));
    h->op = (uint16_t)op;
    h->handle = handle;
}

static void pgas_attr_of(const struct gas_hdr *rep, struct pgas_attr *a)
{
    a->size = rep->off;
    a->mode = rep->len;
    a->mtime_ns = rep->aux;
}

/* pgas_path_rpc - a request about a path (STAT, UNLINK); attributes of the
 * reply into a (may be NULL). */
static int pgas_path_rpc(unsigned op, uint16_t flags, const char *pfs, struct pgas_attr *a)
{
    struct pgas_conn *c = pgas_conn();
    struct pgas_waiter w = {0};
    struct gas_hdr h;

    if (!c)
        return -1;
    pgas_hdr(&h, op, 0);
    h.flags = flags;
    h.plen = (uint32_t)strlen(pfs);
    if (pgas_rpc(c, &h, pfs, &w) < 0 || pgas_check(pfs, &w, 0) < 0)
        return -1;
    if (a)
        pgas_attr_of(&w.rep, a);
    return 0;
}

/* pgas_handle_rpc - a request about handle (FSYNC, CLOSE, FSTAT, TRUNC
 * with off) of path; the reply's attributes into a (may be NULL); loud: a
 * failure goes to stderr. */
static int pgas_handle_rpc(struct pgas_conn *c, uint32_t handle, const char *path, unsigned op,
                           uint64_t off, struct pgas_attr *a, int loud)
{
    struct pgas_waiter w = {0};
    struct gas_hdr h;

    pgas_hdr(&h, op, handle);
    h.off = off;
    if (pgas_rpc(c, &h, NULL, &w) < 0 || pgas_check(path, &w, loud) < 0)
        return -1;
    if (a)
        pgas_attr_of(&w.rep, a);
    return 0;
}

static int pgas_file_rpc(struct pgas_file *f, unsigned op, uint64_t off, struct pgas_attr *a,
                         int loud)
{
    return pgas_handle_rpc(f->conn, f->handle, f->path, op, off, a, loud);
}

static int pgas_size(struct pgas_file *f, off_t *size)
{
    struct pgas_attr a;

    if (pgas_file_rpc(f, GAS_OP_FSTAT, 0, &a, 0) < 0)
        return -1;
    *size = (off_t)a.size;
    return 0;
}

/* pgas_file_end - the last reference went: CLOSE, then free f. */
static int pgas_file_end(struct pgas_file *f)
{
    int rc = pgas_file_rpc(f, GAS_OP_CLOSE, 0, NULL, 1), e = errno;

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
        size_t k = pgas_min(n - done, GAS_PAYLOAD_MAX);

        pgas_hdr(&h, GAS_OP_WRITE, f->handle);
        h.off = (uint64_t)off + done;
        h.len = h.plen = (uint32_t)k;
        if (pgas_send(f->conn, &h, buf + done, 0) < 0)
            return pgas_gone(f->conn);
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
        size_t k = pgas_min(n - done, GAS_PAYLOAD_MAX);

        pgas_hdr(&h, GAS_OP_WRITE, f->handle);
        h.flags = GAS_F_SYNC;
        h.off = (uint64_t)off + done;
        h.len = h.plen = (uint32_t)k;
        if (pgas_rpc(f->conn, &h, buf + done, &w) < 0 || pgas_check(f->path, &w, 0) < 0)
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
        size_t k = pgas_min(n - done, GAS_PAYLOAD_MAX);
        struct pgas_waiter w = {.buf = buf + done, .cap = k};
        struct gas_hdr h;

        pgas_hdr(&h, GAS_OP_READ, f->handle);
        h.off = (uint64_t)off + done;
        h.len = k;
        if (pgas_rpc(f->conn, &h, NULL, &w) < 0 || pgas_check(f->path, &w, 0) < 0)
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
    if (f->accmode == O_WRONLY)
        return pgas_write_async(f, buf, n, off);
    return pgas_write_sync(f, buf, n, off);
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
    struct pgas_file *f = pgas_get(fd);
    ssize_t r;

    if (!f)
        return PIO_IP_NOT_OURS;
    r = pgas_io(f, iov, cnt, off, wr);
    pgas_release(f);
    return r;
}

/* pgas_iov - pgas_io_fd at the position (pos), or at off (< 0: EINVAL). */
static ssize_t pgas_iov(int fd, const struct iovec *iov, int cnt, off_t off, int pos, int wr)
{
    if (!pos && off < 0)
        return pgas_slot(fd) ? pio_ip_fail(EINVAL) : PIO_IP_NOT_OURS;
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

static off_t pgas_lseek(int fd, off_t off, int whence)
{
    struct pgas_file *f = pgas_get(fd);
    off_t r;

    if (!f)
        return PIO_IP_NOT_OURS;
    if (atomic_load(&f->conn->dead)) {
        r = pgas_gone(f->conn);
    } else {
        pthread_mutex_lock(&f->mtx);
        r = pgas_seek_locked(f, off, whence);
        pthread_mutex_unlock(&f->mtx);
    }
    pgas_release(f);
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

static int pgas_is_path(const char *path)
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

    if (pgas_is_path(path))
        return pgas_join("", path + PGAS_PREFIX_LEN + (path[PGAS_PREFIX_LEN] == '/'), out, cap);
    if (!path || !*path || *path == '/' || dirfd == AT_FDCWD || !(d = pgas_get(dirfd)))
        return 0;
    r = pgas_join(d->path, path, out, cap);
    pgas_release(d);
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
        if (!(f = pgas_get(dirfd)))
            return PIO_IP_NOT_OURS;
        r = pgas_file_rpc(f, GAS_OP_FSTAT, 0, a, 0);
        *ino = f->ino;
        pgas_release(f);
        return r;
    }
    k = pgas_at(dirfd, path, pfs, sizeof(pfs));
    if (k <= 0)
        return k < 0 ? -1 : PIO_IP_NOT_OURS;
    *ino = pgas_hash(pfs);
    return pgas_path_rpc(GAS_OP_STAT, 0, pfs, a);
}

static int pgas_stat_hook(int dirfd, const char *path, int flags, struct stat *st)
{
    struct pgas_attr a;
    uint64_t ino;
    int r = pgas_statat(dirfd, path, flags, &a, &ino);

    if (r == 0)
        pgas_fill_stat(&a, ino, st);
    return r;
}

static int pgas_access(const char *pfs, int mode)
{
    struct pgas_attr a;
    int perm;

    if (pgas_path_rpc(GAS_OP_STAT, 0, pfs, &a) < 0)
        return -1;
    perm = (int)(a.mode >> 6) & 7; /* the process owns every pgas file */
    if (getuid() == 0 || geteuid() == 0)
        perm |= R_OK | W_OK | (a.mode & 0111 ? X_OK : 0);
    return (mode & ~perm & (R_OK | W_OK | X_OK)) ? pio_ip_fail(EACCES) : 0;
}

static int pgas_access_hook(int dirfd, const char *path, int mode)
{
    char pfs[PATH_MAX];
    int k = pgas_at(dirfd, path, pfs, sizeof(pfs));

    if (k <= 0)
        return k < 0 ? -1 : PIO_IP_NOT_OURS;
    return pgas_access(pfs, mode);
}

/* pgas_xattr_hook - a pgas file has no extended attributes: 0 when path
 * is one (it exists), -1 (errno), or PIO_IP_NOT_OURS. */
static int pgas_xattr_hook(const char *path)
{
    char pfs[PATH_MAX];
    int k = pgas_at(AT_FDCWD, path, pfs, sizeof(pfs));

    if (k <= 0)
        return k < 0 ? -1 : PIO_IP_NOT_OURS;
    return pgas_path_rpc(GAS_OP_STAT, 0, pfs, NULL);
}

static int pgas_unlink_hook(int dirfd, const char *path, int flags)
{
    char pfs[PATH_MAX];
    int k = pgas_at(dirfd, path, pfs, sizeof(pfs));

    if (k <= 0)
        return k < 0 ? -1 : PIO_IP_NOT_OURS;
    return pgas_path_rpc(GAS_OP_UNLINK, flags & AT_REMOVEDIR ? GAS_F_DIR : 0, pfs, NULL);
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

    pgas_hdr(&h, GAS_OP_OPEN, 0);
    h.flags = pgas_open_flags(flags);
    h.aux = mode & ~c->umask & 07777;
    h.plen = (uint32_t)strlen(pfs);
    if (pgas_rpc(c, &h, pfs, &w) < 0 || pgas_check(pfs, &w, 0) < 0)
        return -1;
    *handle = w.rep.handle;
    pgas_attr_of(&w.rep, a);
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
    (void)pgas_handle_rpc(c, *handle, pfs, GAS_OP_CLOSE, 0, NULL, 0);
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
    if (!(c = pgas_conn()))
        return -1;
    if (atomic_load(&c->dead))
        return pgas_gone(c);
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
        (void)pgas_handle_rpc(c, handle, pfs, GAS_OP_CLOSE, 0, NULL, 0);
        errno = e;
        goto close_fd;
    }
    old = pgas_install(fd, f); /* a stale slot: closed behind our back */
    if (old)
        pgas_release(old);
    return fd;
close_fd:
    e = errno;
    PIO_IP_REAL(close)(fd);
    return pio_ip_fail(e);
}

/* pgas_open_hook - the open family: PIO_IP_NOT_OURS, or the pgas open. */
static int pgas_open_hook(int dirfd, const char *path, int flags, mode_t mode)
{
    char pfs[PATH_MAX];
    int k = pgas_at(dirfd, path, pfs, sizeof(pfs));

    if (k <= 0)
        return k < 0 ? -1 : PIO_IP_NOT_OURS;
    return pgas_open(pfs, flags, mode);
}

/* ---- descriptors: close, dup ------------------------------------------- */

static int pgas_close(int fd)
{
    struct pgas_file *f;

    if (!pgas_slot(fd) || !pgas_mine())
        return PIO_IP_NOT_OURS;
    f = pgas_install(fd, NULL);
    if (!f)
        return PIO_IP_NOT_OURS;
    PIO_IP_REAL(close)(fd);
    return pgas_put(f);
}

/* pgas_drop_range - forget the slots of [lo, hi] (closed by libc). */
static void pgas_drop_range(unsigned lo, unsigned hi)
{
    unsigned end = (unsigned)atomic_load(&pgas_fds.hw);

    if (end == 0 || !pgas_mine())
        return;
    for (unsigned fd = lo; fd < end && fd <= hi; fd++)
        pgas_forget((int)fd);
}

/* pgas_dup_to - make new descriptor nfd (a dup of f's placeholder, or
 * -1) share f. Returns nfd or -1. */
static int pgas_dup_to(struct pgas_file *f, int nfd)
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
        pgas_release(old);
    return nfd;
}

/* pgas_dup2 - dup2 (flags < 0) or dup3 when oldfd or newfd is ours. */
static int pgas_dup2(int oldfd, int newfd, int flags)
{
    struct pgas_file *f, *old;
    int r;

    if (newfd >= PIO_IP_FD_MAX && pgas_slot(oldfd))
        return pio_ip_fail(EMFILE);
    f = pgas_get(oldfd);
    r = flags < 0 ? PIO_IP_REAL(dup2)(oldfd, newfd) : PIO_IP_REAL(dup3)(oldfd, newfd, flags);
    if (r >= 0 && oldfd != newfd && newfd < PIO_IP_FD_MAX) {
        if (f)
            pgas_ref(f);
        old = pgas_install(newfd, f); /* newfd's old file was closed by dup2 */
        if (old)
            pgas_release(old);
    }
    if (f)
        pgas_release(f);
    return r;
}

/* ---- fcntl, fopen ------------------------------------------------------ */

static int pgas_fcntl_f(struct pgas_file *f, int fd, int cmd, void *arg)
{
    switch (cmd) {
    case F_DUPFD:
    case F_DUPFD_CLOEXEC: return pgas_dup_to(f, PIO_IP_REAL(fcntl)(fd, cmd, arg));
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

static int pgas_fcntl(int fd, int cmd, void *arg)
{
    struct pgas_file *f;
    int r;

    if (!pgas_slot(fd) || !pgas_mine() || !(f = pgas_get(fd)))
        return PIO_IP_NOT_OURS;
    r = pgas_fcntl_f(f, fd, cmd, arg);
    pgas_release(f);
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

/* pgas_fopen - fopen of a pgas path: glibc's fopen opens with its internal
 * open, which no preload library sees, so the stream is one of ours. */
static FILE *pgas_fopen(const char *path, const char *mode)
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

/* ---- fork and exit ----------------------------------------------------- */

static void pgas_atfork_child(void)
{
    struct pgas_conn *c = atomic_load(&pgas_conn_p);

    pio_ip_forget_all(&pgas_fds); /* the files stay the parent's */
    atomic_store(&pgas_conn_p, NULL);
    atomic_store(&pgas_told_gone, 0);
    atomic_store(&pgas_told_unreachable, 0);
    pgas_init_mtx = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    if (c && c->sock >= 0)
        PIO_IP_REAL(close)(c->sock);
    if (c && c->evfd >= 0)
        PIO_IP_REAL(close)(c->evfd);
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
    struct pgas_conn *c = atomic_load(&pgas_conn_p);
    int hw = atomic_load(&pgas_fds.hw);

    if (!c || !pgas_mine())
        return;
    fflush(NULL);
    for (int fd = 0; fd < hw; fd++)
        if (pgas_slot(fd))
            (void)pgas_close(fd);
}

/* ---- the hooks (PIO_IP_READ_HOOKS, PIO_IP_WRITE_HOOKS) ----------------- */

/* the open family, creat: PIO_IP_NOT_OURS, or the pgas open */
static int serve_open(int dirfd, const char *path, int flags, mode_t mode)
{
    return pgas_open_hook(dirfd, path, flags, mode);
}

/* libc opened fd: a slot of that number is stale */
static int serve_opened(int dirfd, const char *path, int flags, mode_t mode, int fd)
{
    (void)dirfd, (void)path, (void)flags, (void)mode;
    return pgas_forget(fd);
}

static FILE *serve_fopen(const char *path, const char *mode,
                         FILE *(*real)(const char *, const char *))
{
    return pgas_is_path(path) ? pgas_fopen(path, mode) : real(path, mode);
}

static FILE *serve_fdopen(int fd, const char *mode, FILE *(*real)(int, const char *))
{
    return pgas_slot(fd) ? pio_ip_stream(fd, mode) : real(fd, mode);
}

/* the read and write families: at the position (pos) or at off; preadv2,
 * pwritev2: off -1 means the position, the RWF_* flags are ignored */
static ssize_t serve_readv(int fd, const struct iovec *iov, int cnt, off_t off, int pos)
{
    return pgas_iov(fd, iov, cnt, off, pos, 0);
}

static ssize_t serve_writev(int fd, const struct iovec *iov, int cnt, off_t off, int pos)
{
    return pgas_iov(fd, iov, cnt, off, pos, 1);
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
    return pgas_lseek(fd, off, whence);
}

/* serve_fsync - FSYNC: every earlier request applied and durable. */
static int serve_fsync(int fd)
{
    struct pgas_file *f = pgas_get(fd);
    int r;

    if (!f)
        return PIO_IP_NOT_OURS;
    r = pgas_file_rpc(f, GAS_OP_FSYNC, 0, NULL, 1);
    pgas_release(f);
    return r;
}

static int serve_close(int fd)
{
    return pgas_close(fd);
}

static int serve_close_range(unsigned lo, unsigned hi, int flags,
                             int (*real)(unsigned, unsigned, int))
{
    int r = real(lo, hi, flags);

    if (r == 0 && !(flags & CLOSE_RANGE_CLOEXEC))
        pgas_drop_range(lo, hi);
    return r;
}

static int serve_ftruncate(int fd, off_t len)
{
    struct pgas_file *f = pgas_get(fd);
    int r = -1;

    if (!f)
        return PIO_IP_NOT_OURS;
    if (len < 0 || f->accmode == O_RDONLY)
        errno = EINVAL;
    else
        r = pgas_file_rpc(f, GAS_OP_TRUNC, (uint64_t)len, NULL, 0);
    pgas_release(f);
    return r;
}

static int serve_stat(int dirfd, const char *path, int flags, struct stat *st)
{
    return pgas_stat_hook(dirfd, path, flags, st);
}

static int serve_statx(int dirfd, const char *path, int flags, struct statx *sx)
{
    struct pgas_attr a;
    uint64_t ino;
    int r = pgas_statat(dirfd, path, flags, &a, &ino);

    if (r == 0)
        pgas_fill_statx(&a, ino, sx);
    return r;
}

static int serve_access(int dirfd, const char *path, int mode)
{
    return pgas_access_hook(dirfd, path, mode);
}

static int serve_unlink(int dirfd, const char *path, int flags)
{
    return pgas_unlink_hook(dirfd, path, flags);
}

/* copy_file_range, sendfile: the kernel would copy into the placeholder.
 * EXDEV makes cp and cat fall back to read/write; Python's shutil falls
 * back on EINVAL from its first sendfile. */
static ssize_t serve_copy_file_range(int in, int out)
{
    return pgas_slot(in) || pgas_slot(out) ? pio_ip_fail(EXDEV) : PIO_IP_NOT_OURS;
}

static ssize_t serve_sendfile(int out, int in, off_t *off, size_t n)
{
    (void)off, (void)n;
    return pgas_slot(in) || pgas_slot(out) ? pio_ip_fail(EINVAL) : PIO_IP_NOT_OURS;
}

static int serve_fadvise(int fd)
{
    return pgas_slot(fd) ? 0 : PIO_IP_NOT_OURS;
}

static int serve_dup(int fd, int (*real)(int))
{
    struct pgas_file *f;
    int r;

    if (!pgas_slot(fd) || !pgas_mine() || !(f = pgas_get(fd)))
        return real(fd);
    r = pgas_dup_to(f, real(fd));
    pgas_release(f);
    return r;
}

static int serve_dup2(int oldfd, int newfd, int (*real)(int, int))
{
    if ((!pgas_slot(oldfd) && !pgas_slot(newfd)) || !pgas_mine())
        return real(oldfd, newfd);
    return pgas_dup2(oldfd, newfd, -1);
}

static int serve_dup3(int oldfd, int newfd, int flags, int (*real)(int, int, int))
{
    if ((!pgas_slot(oldfd) && !pgas_slot(newfd)) || !pgas_mine() || flags < 0)
        return real(oldfd, newfd, flags);
    return pgas_dup2(oldfd, newfd, flags);
}

static int serve_fcntl(int fd, int cmd, void *arg, int (*real)(int, int, ...))
{
    int r = pgas_fcntl(fd, cmd, arg);

    return r != PIO_IP_NOT_OURS ? r : real(fd, cmd, arg);
}

/* ioctl: no pgas file is a terminal, nor clones (cp's FICLONE). */
static int serve_ioctl(int fd, unsigned long cmd, void *arg, int (*real)(int, unsigned long, ...))
{
    if (pgas_slot(fd))
        return pio_ip_fail(ENOTTY);
    return real(fd, cmd, arg);
}

/* Extended attributes: none on a pgas file (ls asks for the SELinux label). */
static ssize_t serve_getxattr(const char *path)
{
    int r = pgas_xattr_hook(path);

    if (r == PIO_IP_NOT_OURS)
        return r;
    return r < 0 ? -1 : pio_ip_fail(ENODATA);
}

static ssize_t serve_fgetxattr(int fd)
{
    return pgas_slot(fd) ? pio_ip_fail(ENODATA) : PIO_IP_NOT_OURS;
}

static ssize_t serve_listxattr(const char *path)
{
    return pgas_xattr_hook(path);
}

static ssize_t serve_flistxattr(int fd)
{
    return pgas_slot(fd) ? 0 : PIO_IP_NOT_OURS;
}

PIO_IP_READ_HOOKS(PIO_IP_HOOK)
PIO_IP_WRITE_HOOKS(PIO_IP_HOOK)

void closefrom(int lo)
{
    PIO_IP_REAL(closefrom)(lo);
    if (lo >= 0)
        pgas_drop_range((unsigned)lo, UINT_MAX);
}
