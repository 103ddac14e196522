/* conn.c - the process socket: one Unix stream connection per local client.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Processes (libpio) and tools (pio-info) connect to a Unix stream socket at
 * cfg.socket and exchange wire frames (fstream.h); bulk bytes never come
 * this way (they are in the process' pool). Not SOCK_SEQPACKET: the kernel
 * lets only max_dgram_qlen (10) datagrams wait on such a socket.
 * Every connection is owned by the main thread: it polls the fds itself, so
 * a frame from a process costs exactly one wake-up (the main thread's), and
 * a frame to a process is one non-blocking send. When the socket is full the
 * frame waits in the connection's queue, in order, until POLLOUT.
 *
 * A connection is named by a cid: generation << 32 | slot, never 0, so a
 * stale cid (a process that left, a slot reused) never reaches a newcomer.
 * The kernel tells us who connected (SO_PEERCRED): the pid we watch and the
 * uid that will own the process' pool.
 *
 * The socket is open to every local user (mode 0666), so a client costs a
 * bounded amount whatever it does: answers it leaves unread stop us reading
 * its requests (CONN_READ_PAUSE: back-pressure, its own sends block), frames
 * we owe it beyond conn_queue_max (its proc-pool, at least CONN_QUEUE_MIN)
 * get it disconnected, a client that has not joined must finish a frame it
 * began within CONN_PARTIAL_MS, and when every slot is taken the oldest
 * connection that never joined makes room for the newcomer. (A joined
 * process may sit on half a frame, e.g. stopped in a debugger: it holds only
 * its own connection, and its death is noticed by its pid.)
 * Thread-safety: main thread only.
 */
#include "piod.h"
#include "log.h"
#include "err.h"
#include "fstream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define CONN_SNDBUF      (4 << 20)
#define CONN_QUEUE_MIN   ((size_t)16 << 20)  /* conn_queue_max is never below this */
#define CONN_READ_PAUSE  ((size_t)1 << 20)   /* this much unread: stop reading its requests */
#define CONN_READ_RESUME ((size_t)256 << 10) /* read again once it is down to this */
#define CONN_PARTIAL_MS  5000 /* a client that has not joined finishes a frame by then */

static int in_use(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int used = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno == EAGAIN;
    close(fd);
    return used;
}

int piod_conn_listen(struct piod *d)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    if (strlen(d->cfg.socket) >= sizeof(sa.sun_path)) {
        PIOD_ERR("process socket path %s is too long (at most %zu bytes)", d->cfg.socket,
                 sizeof(sa.sun_path) - 1);
        return PIO_ECONFIG;
    }
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", d->cfg.socket);
    if (in_use(d->cfg.socket)) {
        PIOD_ERR("another piod already serves %s", d->cfg.socket);
        return PIO_EBUSY;
    }
    /* what a process may leave unread is as much as its pool again */
    d->conn_queue_max =
        d->cfg.proc_pool > CONN_QUEUE_MIN ? (size_t)d->cfg.proc_pool : CONN_QUEUE_MIN;
    d->nconns = d->nprocs_max + 64;
    d->conns = calloc((size_t)d->nconns, sizeof(*d->conns));
    if (!d->conns)
        return PIO_ENOMEM;
    for (int i = 0; i < d->nconns; i++)
        d->conns[i].fd = -1;
    d->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (d->lfd < 0)
        return pio_from_errno(errno);
    /* The socket appears at its path only once it listens: bound under a
     * name of our own, then renamed into place (which also replaces a stale
     * one). Bound at the path itself, a client that saw the path between
     * bind and listen was refused ("no piod"): piod_cli.bats met it under
     * load. A path too long for the extra suffix is bound in place. */
    char tmp[sizeof(sa.sun_path)];
    int n = snprintf(tmp, sizeof(tmp), "%s.%d", d->cfg.socket, (int)getpid());
    int staged = n > 0 && (size_t)n < sizeof(tmp);
    if (staged)
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", tmp);
    unlink(sa.sun_path);
    if (bind(d->lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(d->lfd, 128) != 0 ||
        chmod(sa.sun_path, 0666) != 0 || (staged && rename(tmp, d->cfg.socket) != 0)) {
        int e = errno;
        PIOD_ERR("cannot bind the process socket %s: %s", d->cfg.socket, strerror(e));
        if (staged)
            unlink(tmp);
        return PIO_EADDR;
    }
    d->sock_bound = 1;
    return PIO_OK;
}

void piod_conn_accept(struct piod *d)
{
    for (;;) {
        int fd = accept4(d->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        int slot = -1;
        for (int i = 0; i < d->nconns && slot < 0; i++)
            if (d->conns[i].fd < 0)
                slot = i;
        if (slot < 0) {
            /* every slot taken: a connection that has not joined (a tool,
             * or someone holding slots) gives way, the oldest first */
            int old = -1;
            for (int i = 0; i < d->nconns; i++)
                if (!d->conns[i].joined &&
                    (old < 0 || d->conns[i].opened_ms < d->conns[old].opened_ms))
                    old = i;
            if (old >= 0) {
                PIOD_WARN("too many local clients (%d): dropping the connection of pid %d, "
                          "which has not joined in %llu s",
                          d->nconns, (int)d->conns[old].pid,
                          (unsigned long long)((piod_now_ms() - d->conns[old].opened_ms) / 1000));
                piod_conn_close(d, &d->conns[old]);
                slot = old;
            }
        }
        if (slot < 0) {
            PIOD_WARN("too many local clients (%d): connection refused", d->nconns);
            close(fd);
            continue;
        }
        struct piod_conn *c = &d->conns[slot];
        struct ucred cr;
        socklen_t crl = sizeof(cr);
        memset(&cr, 0, sizeof(cr));
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crl) != 0) {
            cr.pid = 0;
            cr.uid = (uid_t)-1;
            cr.gid = (gid_t)-1;
        }
        int sb = CONN_SNDBUF;
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sb, sizeof(sb));
        c->fd = fd;
        c->gen++;
        if (c->gen == 0)
            c->gen = 1;
        c->pid = cr.pid;
        c->uid = cr.uid;
        c->gid = cr.gid;
        c->joined = 0;
        c->pi = -1;
        c->paused = 0;
        c->warned_pause = 0;
        c->dropped = 0;
        c->warned_partner = 0;
        c->opened_ms = piod_now_ms();
        c->partial_since_ms = 0;
        pio_fin_init(&c->in, d->scratch_len);
    }
}

struct piod_conn *piod_conn_get(struct piod *d, uint64_t cid)
{
    uint32_t slot = (uint32_t)cid, gen = (uint32_t)(cid >> 32);
    if (gen == 0 || slot >= (uint32_t)d->nconns)
        return NULL;
    struct piod_conn *c = &d->conns[slot];
    return c->fd >= 0 && c->gen == gen ? c : NULL;
}

uint64_t piod_conn_cid(struct piod *d, struct piod_conn *c)
{
    return (uint64_t)c->gen << 32 | (uint64_t)(c - d->conns);
}

void piod_conn_close(struct piod *d, struct piod_conn *c)
{
    (void)d;
    if (c->fd < 0)
        return;
    close(c->fd);
    c->fd = -1;
    pio_fin_fini(&c->in);
    pio_fout_clear(&c->out);
}

int piod_conn_send(struct piod *d, uint64_t cid, const void *buf, size_t len)
{
    struct piod_conn *c = piod_conn_get(d, cid);
    if (!c)
        return PIO_EGONE;
    if (c->dropped)
        return PIO_EGONE;
    if (c->out.queued + len > d->conn_queue_max) {
        PIOD_ERR("client pid %d does not read its socket (%zu bytes waiting, the limit is its "
                 "proc-pool): disconnected",
                 (int)c->pid, c->out.queued);
        shutdown(c->fd, SHUT_RDWR); /* the main loop sees the hang-up and cleans up */
        c->dropped = 1;
        return PIO_EGONE;
    }
    int rc = pio_fout_send(&c->out, c->fd, buf, len);
    return rc == PIO_ECLOSED ? PIO_EGONE : rc;
}

int piod_conn_send_fd(struct piod *d, uint64_t cid, const void *buf, size_t len, int pass_fd)
{
    struct piod_conn *c = piod_conn_get(d, cid);
    if (!c || c->dropped) {
        close(pass_fd);
        return PIO_EGONE;
    }
    int rc = pio_fout_send_fd(&c->out, c->fd, buf, len, pass_fd);
    return rc == PIO_ECLOSED ? PIO_EGONE : rc;
}

int piod_conn_reading(struct piod *d, struct piod_conn *c)
{
    (void)d;
    if (!c->paused && c->out.queued >= CONN_READ_PAUSE) {
        c->paused = 1;
        if (!c->warned_pause) /* once per connection: a slow reader would fill the log */
            PIOD_WARN("client pid %d does not read its socket (%zu bytes waiting): what it "
                      "sends waits until it does",
                      (int)c->pid, c->out.queued);
        c->warned_pause = 1;
    } else if (c->paused && c->out.queued <= CONN_READ_RESUME) {
        c->paused = 0;
    }
    return !c->paused;
}

int piod_conn_stalled(struct piod *d, struct piod_conn *c, uint64_t now)
{
    (void)d;
    if (c->fd < 0 || c->joined || c->paused || c->in.len == c->in.start) {
        c->partial_since_ms = 0;
        return 0;
    }
    if (!c->partial_since_ms)
        c->partial_since_ms = now;
    if (now - c->partial_since_ms < CONN_PARTIAL_MS)
        return 0;
    PIOD_WARN("client pid %d began a frame and sent no more of it for %d s (%zu bytes of it "
              "came): disconnected",
              (int)c->pid, CONN_PARTIAL_MS / 1000, c->in.len - c->in.start);
    return 1;
}

void piod_conn_fini(struct piod *d)
{
    for (int i = 0; d->conns && i < d->nconns; i++)
        piod_conn_close(d, &d->conns[i]);
    free(d->conns);
    d->conns = NULL;
    if (d->lfd >= 0)
        close(d->lfd);
    d->lfd = -1;
}
