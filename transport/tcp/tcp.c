/* tcp.c - the tcp transport: one TCP connection pinned to a local and a remote address.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Blocking sockets: the data channels run one sender and one receiver thread
 * per connection, so blocking sendmsg/recv is the simplest correct loop and
 * costs nothing at these message sizes. TCP_NODELAY always; socket buffers as
 * the caller asks. Binding the local address before connect pins the
 * connection to a link (the test bed gives each link its own subnet).
 * shutdown(2) is how another thread unblocks a blocked call. No locks here.
 */
#include "transport.h"
#include "err.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct pio_tp_listener {
    int fd;
    atomic_int down; /* set by listener_shutdown from another thread */
};

struct pio_tp_conn {
    int fd;
};

static void tcp_tune(int fd, const struct pio_tp_opts *o)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (getenv("XPACE")) {
        unsigned int pr = (unsigned int)atoi(getenv("XPACE"));
        setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &pr, sizeof(pr));
    }
    if (o && o->sndbuf > 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &o->sndbuf, sizeof(o->sndbuf));
    if (o && o->rcvbuf > 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &o->rcvbuf, sizeof(o->rcvbuf));
}

static int tcp_listen(const char *addr, int port, const struct pio_tp_opts *o,
                      struct pio_tp_listener **lp, int *port_out)
{
    int rc = PIO_OK, one = 1;
    struct sockaddr_storage ss;
    socklen_t sl;
    struct pio_tp_listener *l = calloc(1, sizeof(*l));
    PIO_CHECK(!l, rc, PIO_ENOMEM, out);
    PIO_TRY(pio_tp_sockaddr(addr, port, &ss, &sl), rc, free);
    l->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    PIO_CHECK(l->fd < 0, rc, pio_from_errno(errno), free);
    setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    tcp_tune(l->fd, o); /* inherited by accepted sockets: buffers before listen */
    PIO_CHECK(bind(l->fd, (struct sockaddr *)&ss, sl) != 0, rc, PIO_EADDR, close);
    PIO_CHECK(listen(l->fd, 128) != 0, rc, pio_from_errno(errno), close);
    if (port_out) {
        sl = sizeof(ss);
        getsockname(l->fd, (struct sockaddr *)&ss, &sl);
        *port_out = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                                  : ((struct sockaddr_in6 *)&ss)->sin6_port);
    }
    *lp = l;
    return PIO_OK;
close:
    close(l->fd);
free:
    free(l);
out:
    return rc;
}

static int tcp_accept(struct pio_tp_listener *l, const struct pio_tp_opts *o,
                      struct pio_tp_conn **cp)
{
    int timeout = o ? o->timeout_ms : -1;
    for (;;) {
        if (l->down)
            return PIO_ECLOSED;
        struct pollfd p = {.fd = l->fd, .events = POLLIN};
        int n = poll(&p, 1, timeout);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return pio_from_errno(errno);
        if (n == 0)
            return PIO_ETIMEDOUT;
        if (l->down)
            return PIO_ECLOSED;
        int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED)
                continue;
            return l->down ? PIO_ECLOSED : pio_from_errno(errno);
        }
        tcp_tune(fd, o);
        struct pio_tp_conn *c = malloc(sizeof(*c));
        if (!c) {
            close(fd);
            return PIO_ENOMEM;
        }
        c->fd = fd;
        *cp = c;
        return PIO_OK;
    }
}

static void tcp_listener_shutdown(struct pio_tp_listener *l)
{
    l->down = 1;
    shutdown(l->fd, SHUT_RDWR); /* wakes a blocked poll/accept on Linux */
}

static void tcp_listener_close(struct pio_tp_listener *l)
{
    if (!l)
        return;
    close(l->fd);
    free(l);
}

static int tcp_bind_src(int fd, const char *local, const struct pio_tp_opts *o)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    int lo = o ? o->src_port_lo : 0, hi = o ? o->src_port_hi : 0;
    if (!local && lo == 0)
        return PIO_OK;
    if (lo == 0) {
        if (pio_tp_sockaddr(local, 0, &ss, &sl) != PIO_OK)
            return PIO_EADDR;
        return bind(fd, (struct sockaddr *)&ss, sl) == 0 ? PIO_OK : PIO_EADDR;
    }
    for (int p = lo; p <= hi; p++) {
        if (pio_tp_sockaddr(local, p, &ss, &sl) != PIO_OK)
            return PIO_EADDR;
        if (bind(fd, (struct sockaddr *)&ss, sl) == 0)
            return PIO_OK;
        if (errno != EADDRINUSE)
            return PIO_EADDR;
    }
    return PIO_EADDR;
}

static int tcp_connect(const char *local, const char *remote, int port, const struct pio_tp_opts *o,
                       struct pio_tp_conn **cp)
{
    int rc = PIO_OK, one = 1;
    struct sockaddr_storage ss;
    socklen_t sl;
    struct pio_tp_conn *c = malloc(sizeof(*c));
    PIO_CHECK(!c, rc, PIO_ENOMEM, out);
    PIO_TRY(pio_tp_sockaddr(remote, port, &ss, &sl), rc, free);
    c->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    PIO_CHECK(c->fd < 0, rc, pio_from_errno(errno), free);
    if (!o || o->src_port_lo == 0)
        setsockopt(c->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    tcp_tune(c->fd, o);
    PIO_TRY(tcp_bind_src(c->fd, local, o), rc, close);
    /* connect with a time limit: non-blocking connect, poll, back to blocking */
    int fl = fcntl(c->fd, F_GETFL);
    fcntl(c->fd, F_SETFL, fl | O_NONBLOCK);
    if (connect(c->fd, (struct sockaddr *)&ss, sl) != 0) {
        PIO_CHECK(errno != EINPROGRESS, rc, pio_from_errno(errno), close);
        struct pollfd p = {.fd = c->fd, .events = POLLOUT};
        int n;
        do
            n = poll(&p, 1, o ? o->timeout_ms : -1);
        while (n < 0 && errno == EINTR);
        PIO_CHECK(n == 0, rc, PIO_ETIMEDOUT, close);
        int err = 0;
        socklen_t el = sizeof(err);
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
        PIO_CHECK(err != 0, rc, pio_from_errno(err), close);
    }
    fcntl(c->fd, F_SETFL, fl);
    *cp = c;
    return PIO_OK;
close:
    close(c->fd);
free:
    free(c);
out:
    return rc;
}

static int tcp_sendv(struct pio_tp_conn *c, const struct iovec *iov_in, int n)
{
    struct iovec iov[64];
    size_t skip = 0; /* bytes of iov_in[0] already sent */
    while (n > 0) {
        int k = n < 64 ? n : 64;
        memcpy(iov, iov_in, (size_t)k * sizeof(*iov));
        iov[0].iov_base = (char *)iov[0].iov_base + skip;
        iov[0].iov_len -= skip;
        struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)k};
        ssize_t w = sendmsg(c->fd, &m, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno == EPIPE || errno == ECONNRESET || errno == EBADF ? PIO_ECLOSED
                                                                           : pio_from_errno(errno);
        }
        size_t left = (size_t)w + skip;
        skip = 0;
        while (n > 0 && left >= iov_in->iov_len) {
            left -= iov_in->iov_len;
            iov_in++;
            n--;
        }
        skip = left;
    }
    return PIO_OK;
}

static int tcp_recv(struct pio_tp_conn *c, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t r = recv(c->fd, p, len, 0);
        if (r == 0)
            return PIO_ECLOSED;
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return errno == ECONNRESET || errno == EBADF ? PIO_ECLOSED : pio_from_errno(errno);
        }
        p += r;
        len -= (size_t)r;
    }
    return PIO_OK;
}

static void tcp_shutdown(struct pio_tp_conn *c)
{
    shutdown(c->fd, SHUT_RDWR);
}

static void tcp_close(struct pio_tp_conn *c)
{
    if (!c)
        return;
    close(c->fd);
    free(c);
}

static void tcp_addrs(struct pio_tp_conn *c, char *local, char *remote)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (local) {
        if (getsockname(c->fd, (struct sockaddr *)&ss, &sl) == 0)
            pio_tp_fmt(&ss, local);
        else
            strcpy(local, "?");
    }
    sl = sizeof(ss);
    if (remote) {
        if (getpeername(c->fd, (struct sockaddr *)&ss, &sl) == 0)
            pio_tp_fmt(&ss, remote);
        else
            strcpy(remote, "?");
    }
}

static int tcp_fd(struct pio_tp_conn *c)
{
    return c->fd;
}

/* SO_MAX_PACING_RATE: the kernel's pacing (TCP's internal pacing, or the
 * fq qdisc) sends no faster; a 64-bit value where the kernel takes one. */
static int tcp_pace(struct pio_tp_conn *c, uint64_t rate)
{
    uint64_t r = rate ? rate : UINT64_MAX;
    if (setsockopt(c->fd, SOL_SOCKET, SO_MAX_PACING_RATE, &r, sizeof(r)) == 0)
        return PIO_OK;
    unsigned int r32 = r > UINT32_MAX ? UINT32_MAX : (unsigned int)r;
    return setsockopt(c->fd, SOL_SOCKET, SO_MAX_PACING_RATE, &r32, sizeof(r32)) == 0
               ? PIO_OK
               : pio_from_errno(errno);
}

/* TCP_INFO's count of retransmitted segments over the connection's life */
static int tcp_lost(struct pio_tp_conn *c, uint64_t *segs)
{
    struct tcp_info ti;
    socklen_t len = sizeof(ti);
    memset(&ti, 0, sizeof(ti));
    if (getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
        return pio_from_errno(errno);
    *segs = ti.tcpi_total_retrans;
    return PIO_OK;
}

const struct pio_transport_ops pio_tcp_ops = {
    .name = "tcp",
    .caps = PIO_TP_CAP_IPV6 | PIO_TP_CAP_FD | PIO_TP_CAP_PACE,
    .listen = tcp_listen,
    .accept = tcp_accept,
    .listener_shutdown = tcp_listener_shutdown,
    .listener_close = tcp_listener_close,
    .connect = tcp_connect,
    .sendv = tcp_sendv,
    .recv = tcp_recv,
    .shutdown = tcp_shutdown,
    .close = tcp_close,
    .addrs = tcp_addrs,
    .fd = tcp_fd,
    .pace = tcp_pace,
    .lost = tcp_lost,
};
