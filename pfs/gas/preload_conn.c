/* preload_conn.c - libpgas.so's one connection to the GAS dispatcher: the
 * batch of frames, the I/O thread, requests and their replies (preload.h).
 * SPDX-License-Identifier: BSD-3-Clause
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
 * Dispatcher gone. On EOF or an error on the socket the connection is dead:
 * every waiter wakes, and every later call on a pgas descriptor, and every
 * new pgas open, fails with EIO (close still releases the descriptor);
 * stderr says so once per process. There is no reconnection: queued writes
 * may have been lost, and the program should hear about it.
 *
 * The connection's statics (its pointer, the mutex that makes it, the
 * said-once flags) are this file's own; the other files reach it through
 * gas_pl_conn. Its socket and eventfd are closed with libc's close. */
#include "preload.h"
#include "pio.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define PGAS_WHY_EOF (-1) /* reasons a connection dies, besides an errno */
#define PGAS_WHY_BAD (-2)

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
        size_t d = gas_pl_min(k, v->iov_len);

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

/* gas_pl_send - queue frame h (+ h->plen payload bytes) after every frame
 * queued before; now: send the batch at once. 0, or -1 when the connection
 * is dead or failed (the caller says "gone"). */
int gas_pl_send(struct pgas_conn *c, const struct gas_hdr *h, const void *payload, int now)
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

/* gas_pl_gone - the dispatcher went away: say so once, errno EIO, -1. */
int gas_pl_gone(struct pgas_conn *c)
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

/* gas_pl_rpc - send request h (+ payload) and wait for its reply, in w
 * (w->buf, w->cap: where a successful reply's payload goes). Returns 0, or
 * -1 with errno EIO when the dispatcher is gone. */
int gas_pl_rpc(struct pgas_conn *c, struct gas_hdr *h, const void *payload, struct pgas_waiter *w)
{
    int lost = 1;

    w->done = w->lost = 0;
    w->msg[0] = '\0';
    pthread_cond_init(&w->cv, NULL);
    if (pgas_wait_add(c, w, h) == 0) {
        (void)gas_pl_send(c, h, payload, 1); /* if it fails, the I/O thread wakes w */
        pthread_mutex_lock(&c->wait_mtx);
        while (!w->done)
            pthread_cond_wait(&w->cv, &c->wait_mtx);
        pthread_mutex_unlock(&c->wait_mtx);
        lost = w->lost;
    }
    pthread_cond_destroy(&w->cv);
    return lost ? gas_pl_gone(c) : 0;
}

/* gas_pl_check - 0 when w's reply is PIO_OK; else -1 with errno mapped and,
 * when loud or the status has no errno of its own, "pgas: PATH: why". */
int gas_pl_check(const char *path, const struct pgas_waiter *w, int loud)
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
        size_t k = gas_pl_min(n, sizeof(junk));

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
        keep = gas_pl_min(h->plen, sizeof(w->msg) - 1);
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
    pio_ip_own(&gas_pl_fds);
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

/* gas_pl_conn - the process' connection, made on first use. NULL with errno. */
struct pgas_conn *gas_pl_conn(void)
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

void gas_pl_hdr(struct gas_hdr *h, unsigned op, uint32_t handle)
{
    memset(h, 0, sizeof(*h));
    h->op = (uint16_t)op;
    h->handle = handle;
}

void gas_pl_attr_of(const struct gas_hdr *rep, struct pgas_attr *a)
{
    a->size = rep->off;
    a->mode = rep->len;
    a->mtime_ns = rep->aux;
}

/* gas_pl_path_rpc - a request about a path (STAT, UNLINK); attributes of the
 * reply into a (may be NULL). */
int gas_pl_path_rpc(unsigned op, uint16_t flags, const char *pfs, struct pgas_attr *a)
{
    struct pgas_conn *c = gas_pl_conn();
    struct pgas_waiter w = {0};
    struct gas_hdr h;

    if (!c)
        return -1;
    gas_pl_hdr(&h, op, 0);
    h.flags = flags;
    h.plen = (uint32_t)strlen(pfs);
    if (gas_pl_rpc(c, &h, pfs, &w) < 0 || gas_pl_check(pfs, &w, 0) < 0)
        return -1;
    if (a)
        gas_pl_attr_of(&w.rep, a);
    return 0;
}

/* gas_pl_handle_rpc - a request about handle (FSYNC, CLOSE, FSTAT, TRUNC
 * with off) of path; the reply's attributes into a (may be NULL); loud: a
 * failure goes to stderr. */
int gas_pl_handle_rpc(struct pgas_conn *c, uint32_t handle, const char *path, unsigned op,
                      uint64_t off, struct pgas_attr *a, int loud)
{
    struct pgas_waiter w = {0};
    struct gas_hdr h;

    gas_pl_hdr(&h, op, handle);
    h.off = off;
    if (gas_pl_rpc(c, &h, NULL, &w) < 0 || gas_pl_check(path, &w, loud) < 0)
        return -1;
    if (a)
        gas_pl_attr_of(&w.rep, a);
    return 0;
}

/* ---- fork -------------------------------------------------------------- */

int gas_pl_conn_made(void)
{
    return atomic_load(&pgas_conn_p) != NULL;
}

void gas_pl_conn_forget(void)
{
    struct pgas_conn *c = atomic_load(&pgas_conn_p);

    atomic_store(&pgas_conn_p, NULL);
    atomic_store(&pgas_told_gone, 0);
    atomic_store(&pgas_told_unreachable, 0);
    pgas_init_mtx = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    if (c && c->sock >= 0)
        PIO_IP_REAL(close)(c->sock);
    if (c && c->evfd >= 0)
        PIO_IP_REAL(close)(c->evfd);
}
