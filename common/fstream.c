/* fstream.c - wire frames over a non-blocking byte stream; see fstream.h.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "fstream.h"
#include "capture.h"
#include "err.h"
#include "wire/wire.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define FIN_READ 65536 /* room asked for on each fill */

struct pio_fout_item {
    struct pio_fout_item *next;
    size_t off, len;
    int whole;   /* data is a whole frame: the socket took none of it when queued */
    int pass_fd; /* goes with data[0] (SCM_RIGHTS), or -1 */
    uint8_t data[];
};

void pio_fin_init(struct pio_fin *in, size_t max)
{
    memset(in, 0, sizeof(*in));
    in->max = max;
}

void pio_fin_fini(struct pio_fin *in)
{
    for (int i = 0; i < in->nfds; i++)
        close(in->fds[i]);
    free(in->buf);
    memset(in, 0, sizeof(*in));
}

void pio_fin_want_fds(struct pio_fin *in)
{
    in->want_fds = 1;
}

int pio_fin_take_fd(struct pio_fin *in)
{
    if (in->nfds == 0)
        return -1;
    int fd = in->fds[0];
    memmove(in->fds, in->fds + 1, (size_t)(in->nfds - 1) * sizeof(int));
    in->nfds--;
    return fd;
}

/* One read of up to room bytes; descriptors that came with them go to the
 * queue (or are closed). */
static ssize_t fin_recv(struct pio_fin *in, int fd, size_t room)
{
    if (!in->want_fds)
        return recv(fd, in->buf + in->len, room, MSG_DONTWAIT);
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int) * PIO_FIN_FDS)];
    } ctl;
    struct iovec iov = {in->buf + in->len, room};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b)};
    ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0)
        return n;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int got;
            memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (in->nfds < PIO_FIN_FDS)
                in->fds[in->nfds++] = got;
            else
                close(got);
        }
    }
    return n;
}

int pio_fin_fill(struct pio_fin *in, int fd)
{
    if (in->start > 0) { /* frames handed out are done with: drop them */
        memmove(in->buf, in->buf + in->start, in->len - in->start);
        in->len -= in->start;
        in->start = 0;
    }
    if (in->cap - in->len < FIN_READ) {
        size_t cap = in->cap ? in->cap : FIN_READ;
        while (cap - in->len < FIN_READ)
            cap *= 2;
        uint8_t *b = realloc(in->buf, cap);
        if (!b)
            return PIO_ENOMEM;
        in->buf = b;
        in->cap = cap;
    }
    for (;;) {
        size_t room = in->cap - in->len;
        ssize_t n = fin_recv(in, fd, room);
        if (n > 0) {
            in->len += (size_t)n;
            pio_capture("fstream", in->buf, in->len); /* from a frame's start */
            in->drained = (size_t)n < room;
            return PIO_OK;
        }
        in->drained = 1;
        if (n == 0)
            return PIO_ECLOSED;
        if (errno == EINTR)
            continue;
        return errno == EAGAIN || errno == EWOULDBLOCK ? PIO_EAGAIN : PIO_ECLOSED;
    }
}

int pio_fin_next(struct pio_fin *in, const uint8_t **frame, size_t *len, uint8_t *ver)
{
    size_t have = in->len - in->start;
    if (have < PIO_WIRE_HDR)
        return PIO_EAGAIN;
    uint8_t type, v = 0;
    uint32_t blen;
    int rc = pio_wire_peek(in->buf + in->start, have, &type, &blen, &v);
    if (ver)
        *ver = v;
    if (rc != PIO_OK)
        return rc;
    size_t flen = PIO_WIRE_HDR + (size_t)blen;
    if (flen > in->max)
        return PIO_EPROTO;
    if (have < flen)
        return PIO_EAGAIN;
    *frame = in->buf + in->start;
    *len = flen;
    in->start += flen;
    return PIO_OK;
}

static int send_some(int fd, const uint8_t *buf, size_t len, size_t *sent)
{
    *sent = 0;
    while (*sent < len) {
        ssize_t n = send(fd, buf + *sent, len - *sent, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            *sent += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return PIO_OK;
        return PIO_ECLOSED;
    }
    return PIO_OK;
}

/* The first bytes of buf with descriptor pass_fd: *sent says how many the
 * socket took (0: none, the descriptor did not go either). */
static int send_with_fd(int fd, const uint8_t *buf, size_t len, int pass_fd, size_t *sent)
{
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int))];
    } ctl;
    memset(&ctl, 0, sizeof(ctl));
    struct iovec iov = {(void *)buf, len};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
    *sent = 0;
    for (;;) {
        ssize_t n = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            *sent = (size_t)n;
            return PIO_OK;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return PIO_OK;
        return PIO_ECLOSED;
    }
}

int pio_fout_flush(struct pio_fout *out, int fd)
{
    while (out->head) {
        struct pio_fout_item *q = out->head;
        size_t sent;
        if (q->pass_fd >= 0) { /* its first byte carries the descriptor */
            int rc = send_with_fd(fd, q->data, q->len, q->pass_fd, &sent);
            if (rc != PIO_OK)
                return rc;
            if (sent == 0)
                return PIO_OK;
            close(q->pass_fd);
            q->pass_fd = -1;
            q->off = sent;
            out->queued -= sent;
            continue;
        }
        int rc = send_some(fd, q->data + q->off, q->len - q->off, &sent);
        q->off += sent;
        out->queued -= sent;
        if (rc != PIO_OK)
            return rc;
        if (q->off < q->len)
            return PIO_OK;
        out->head = q->next;
        if (!out->head)
            out->tail = NULL;
        free(q);
    }
    return PIO_OK;
}

int pio_fout_send(struct pio_fout *out, int fd, const void *buf, size_t len)
{
    size_t sent = 0;
    if (!out->head) {
        int rc = send_some(fd, buf, len, &sent);
        if (rc != PIO_OK)
            return rc;
        if (sent == len)
            return PIO_OK;
    }
    struct pio_fout_item *q = malloc(sizeof(*q) + len - sent);
    if (!q)
        return PIO_ENOMEM;
    q->next = NULL;
    q->off = 0;
    q->pass_fd = -1;
    q->whole = sent == 0;
    q->len = len - sent;
    memcpy(q->data, (const uint8_t *)buf + sent, q->len);
    if (out->tail)
        out->tail->next = q;
    else
        out->head = q;
    out->tail = q;
    out->queued += q->len;
    return PIO_OK;
}

int pio_fout_send_fd(struct pio_fout *out, int fd, const void *buf, size_t len, int pass_fd)
{
    size_t sent = 0;
    if (len == 0) {
        close(pass_fd);
        return PIO_EINVAL;
    }
    if (!out->head) {
        int rc = send_with_fd(fd, buf, len, pass_fd, &sent);
        if (rc != PIO_OK) {
            close(pass_fd);
            return rc;
        }
        if (sent > 0) { /* the descriptor went with those bytes */
            close(pass_fd);
            pass_fd = -1;
            if (sent == len)
                return PIO_OK;
            int rc2 = pio_fout_send(out, fd, (const uint8_t *)buf + sent, len - sent);
            if (rc2 == PIO_OK && out->tail)
                out->tail->whole = 0; /* only a frame's tail */
            return rc2;
        }
    }
    struct pio_fout_item *q = malloc(sizeof(*q) + len);
    if (!q) {
        close(pass_fd);
        return PIO_ENOMEM;
    }
    q->next = NULL;
    q->off = 0;
    q->pass_fd = pass_fd;
    q->whole = 1;
    q->len = len;
    memcpy(q->data, buf, len);
    if (out->tail)
        out->tail->next = q;
    else
        out->head = q;
    out->tail = q;
    out->queued += len;
    return PIO_OK;
}

void pio_fout_clear(struct pio_fout *out)
{
    while (out->head) {
        struct pio_fout_item *q = out->head;
        out->head = q->next;
        if (q->pass_fd >= 0)
            close(q->pass_fd);
        free(q);
    }
    out->tail = NULL;
    out->queued = 0;
}

size_t pio_fout_salvage(struct pio_fout *out,
                        void (*each)(void *arg, const uint8_t *frame, size_t len), void *arg)
{
    size_t n = 0;
    for (struct pio_fout_item *q = out->head; q; q = q->next)
        if (q->whole) {
            each(arg, q->data, q->len);
            n++;
        }
    pio_fout_clear(out);
    return n;
}

int pio_unix_connect(const char *path, int *fd)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(sa.sun_path))
        return PIO_EINVAL;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return pio_from_errno(errno);
    if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        int e = errno;
        close(s);
        return e == ENOENT || e == ECONNREFUSED || e == ENOTSOCK ? PIO_ENOPIOD : pio_from_errno(e);
    }
    int fl = fcntl(s, F_GETFL);
    if (fl < 0 || fcntl(s, F_SETFL, fl | O_NONBLOCK) != 0) {
        int e = errno;
        close(s);
        return pio_from_errno(e);
    }
    *fd = s;
    return PIO_OK;
}
