/* fstream.h - wire frames over a non-blocking byte stream (Unix or TCP socket).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Two halves, used by libpio (its socket to the piod), the piod (one per
 * local client) and between piods (the express lane):
 *  - pio_fin: an input buffer. fill() reads what the socket has; next()
 *    returns the complete frames in it, one by one, using the length in each
 *    header. A frame stays valid until the next fill().
 *  - pio_fout: an output queue. send() writes straight to the socket when
 *    nothing waits before it, and keeps what the socket had no room for (a
 *    whole frame or the rest of one), in order, for flush() on POLLOUT.
 *  - Descriptors (Unix sockets only): send_fd() sends a frame with one
 *    descriptor attached to its first byte (SCM_RIGHTS); an input buffer
 *    that asked for them (pio_fin_want_fds) keeps what arrives, in order,
 *    and take_fd() hands out the oldest. The kernel delivers a descriptor
 *    with the read that reads the first byte it came with, and a read
 *    never goes past bytes that came with descriptors, so the descriptor
 *    of a frame is in the queue by the time its frame is complete. An
 *    input buffer that did not ask closes what comes (a peer cannot make
 *    it hold descriptors).
 * Thread-safety: none; the owner serializes calls on one buffer.
 */
#ifndef PIO_FSTREAM_H
#define PIO_FSTREAM_H

#include <stddef.h>
#include <stdint.h>

#define PIO_FIN_FDS 16 /* descriptors an input buffer holds before it drops more */

struct pio_fin {
    uint8_t *buf;
    size_t start, len, cap;     /* frames in buf[start, len) */
    size_t max;                 /* largest frame accepted */
    int drained;                /* the last fill read less than it had room for */
    int want_fds;               /* keep descriptors that come (else close them) */
    int fds[PIO_FIN_FDS], nfds; /* received, oldest first */
};

struct pio_fout_item;
struct pio_fout {
    struct pio_fout_item *head, *tail;
    size_t queued; /* bytes waiting */
};

/* pio_fin_init - an empty buffer taking frames of at most max bytes;
 * pio_fin_fini frees it and closes descriptors nobody took. */
void pio_fin_init(struct pio_fin *in, size_t max);
void pio_fin_fini(struct pio_fin *in);

/* pio_fin_want_fds - keep descriptors that come with the bytes (at most
 * PIO_FIN_FDS waiting: more are closed) for pio_fin_take_fd. */
void pio_fin_want_fds(struct pio_fin *in);

/* pio_fin_take_fd - the oldest descriptor received and not taken yet, now
 * the caller's, or -1. */
int pio_fin_take_fd(struct pio_fin *in);

/* pio_fin_fill - read what fd has (one recv). in->drained says whether the
 * socket had less than the room we gave (so another fill would most likely
 * find nothing: a caller can save that system call). Returns PIO_OK (bytes came),
 * PIO_EAGAIN (none now), PIO_ECLOSED (the other end closed or reset),
 * PIO_ENOMEM. */
int pio_fin_fill(struct pio_fin *in, int fd);

/* pio_fin_next - the next complete frame. *frame, *len [out]. Returns PIO_OK,
 * PIO_EAGAIN (no complete frame yet), PIO_EPROTO (a header that is not ours,
 * or a frame over max: the stream cannot be trusted any more), PIO_EVERSION
 * (another protocol version; *ver says which, may be NULL). */
int pio_fin_next(struct pio_fin *in, const uint8_t **frame, size_t *len, uint8_t *ver);

/* pio_fout_send - send buf[0..len) on fd, or queue it (copied) behind what
 * waits. Returns PIO_OK (sent or queued), PIO_ECLOSED (the other end is
 * gone), PIO_ENOMEM. Never raises SIGPIPE. */
int pio_fout_send(struct pio_fout *out, int fd, const void *buf, size_t len);

/* pio_fout_send_fd - pio_fout_send of one frame with descriptor pass_fd
 * attached to its first byte (a Unix socket's SCM_RIGHTS). The queue owns
 * pass_fd from the call on: it is closed once sent, or when the queue is
 * cleared, or here on an error. Returns as pio_fout_send. */
int pio_fout_send_fd(struct pio_fout *out, int fd, const void *buf, size_t len, int pass_fd);

/* pio_fout_flush - send what waits, as far as the socket takes it. Returns
 * PIO_OK (possibly with bytes still waiting: out->queued), PIO_ECLOSED. */
int pio_fout_flush(struct pio_fout *out, int fd);

/* pio_fout_clear - drop what waits. */
void pio_fout_clear(struct pio_fout *out);

/* pio_fout_salvage - the socket died: hand every waiting frame we still hold
 * whole to each(arg, frame, len), in order, then drop what waits. For a
 * queue fed one whole frame per pio_fout_send. The other end cannot have
 * had any of them whole: the socket never took all their bytes (a head
 * flushed before the death is a piece it throws away with the connection).
 * A frame whose head went out in pio_fout_send itself is dropped: only its
 * tail was queued. Returns how many frames were handed on. */
size_t pio_fout_salvage(struct pio_fout *out,
                        void (*each)(void *arg, const uint8_t *frame, size_t len), void *arg);

/* pio_unix_connect - connect to a piod's process socket at path; *fd [out]
 * is non-blocking, close-on-exec. Returns PIO_OK, PIO_ENOPIOD (nothing
 * listens there), PIO_EACCES or another converted errno. */
int pio_unix_connect(const char *path, int *fd);

#endif
