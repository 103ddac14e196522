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
 * Thread-safety: main thread only.
 */
#include "piod/piod.h"
#include "piod/log.h"
#include "err.h"
#include "fstream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define CONN_SNDBUF    (4 << 20)
#define CONN_QUEUE_MAX ((size_t)256 << 20) /* a client that never reads is dropped */

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
    d->nconns = d->nprocs_max + 64;
    d->conns = calloc((size_t)d->nconns, sizeof(*d->conns));
    if (!d->conns)
        return PIO_ENOMEM;
    for (int i = 0; i < d->nconns; i++)
        d->conns[i].fd = -1;
    d->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (d->lfd < 0)
        return pio_from_errno(errno);
    unlink(d->cfg.socket);
    if (bind(d->lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(d->lfd, 128) != 0) {
        int e = errno;
        PIOD_ERR("cannot bind the process socket %s: %s", d->cfg.socket, strerror(e));
        return PIO_EADDR;
    }
    chmod(d->cfg.socket, 0666);
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
        }
        int sb = CONN_SNDBUF;
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sb, sizeof(sb));
        c->fd = fd;
        c->gen++;
        if (c->gen == 0)
            c->gen = 1;
        c->pid = cr.pid;
        c->uid = cr.uid;
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
    if (c->out.queued + len > CONN_QUEUE_MAX) {
        PIOD_ERR("client pid %d does not read its socket (%zu bytes waiting): disconnected",
                 (int)c->pid, c->out.queued);
        shutdown(c->fd, SHUT_RDWR); /* the main loop sees the hang-up and cleans up */
        return PIO_EGONE;
    }
    int rc = pio_fout_send(&c->out, c->fd, buf, len);
    return rc == PIO_ECLOSED ? PIO_EGONE : rc;
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
