/* transport.h - the transport ops table: how PIO moves bytes over one connection.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A transport is one const struct pio_transport_ops, in its own folder under
 * transport/, listed in registry.c (the one place backends are named;
 * the only place an #ifdef for an optional backend may appear). Core code
 * calls transports only through the table. The conformance suite
 * (tests/conformance/) runs the same checks over every registered stream
 * transport.
 *
 * Model: blocking, ordered, reliable byte streams with an explicit local and
 * remote address, so a channel can be pinned to one link. One thread may send
 * while another receives on the same connection; two concurrent senders (or
 * receivers) on one connection must serialize themselves.
 * Thread-safety: as above; ops on different connections are independent.
 */
#ifndef PIO_TRANSPORT_H
#define PIO_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define PIO_TP_ADDR 64 /* "addr:port" text */

/* Addresses, for the transports (addr.c; thread-safe):
 * pio_tp_sockaddr - numeric IPv4 or IPv6 addr ("" or NULL: any) and port
 * into *ss, *len. Returns PIO_OK, or PIO_EADDR (not a numeric address, a
 * port outside 0..65535).
 * pio_tp_fmt - "a.b.c.d:port" or "[v6]:port" ("?" for another family) into
 * out (PIO_TP_ADDR bytes). */
int pio_tp_sockaddr(const char *addr, int port, struct sockaddr_storage *ss, socklen_t *len);
void pio_tp_fmt(const struct sockaddr_storage *ss, char *out);

struct pio_tp_listener; /* opaque, owned by the backend */
struct pio_tp_conn;     /* opaque, owned by the backend */

struct pio_tp_opts {
    int sndbuf, rcvbuf; /* socket buffer bytes (0: system default / autotuning) */
    int src_port_lo;    /* connect: bind source port in [lo, hi] (0: any) */
    int src_port_hi;
    int timeout_ms; /* connect / accept limit (<0: none) */
};

/* Capabilities (struct pio_transport_ops.caps): what a backend does beyond
 * the mandatory model. Callers test them once, at set-up, instead of
 * probing connections. */
/* numeric IPv6 addresses work; without it every IPv6 address (well formed
 * or not) is PIO_EADDR, at once */
#define PIO_TP_CAP_IPV6 0x1u
/* fd returns a descriptor; without it fd returns -1 */
#define PIO_TP_CAP_FD 0x2u
/* pace limits a connection's send rate; without it pace is NULL */
#define PIO_TP_CAP_PACE 0x4u

struct pio_transport_ops {
    const char *name;
    unsigned caps; /* PIO_TP_CAP_* */

    /* listen - listen on addr:port (port 0: any; *port_out says which).
     * Returns PIO_OK, PIO_EADDR (cannot bind), ... */
    int (*listen)(const char *addr, int port, const struct pio_tp_opts *o,
                  struct pio_tp_listener **l, int *port_out);

    /* accept - wait for the next connection (o->timeout_ms). Returns PIO_OK,
     * PIO_ETIMEDOUT, PIO_ECLOSED once the listener was shut down. */
    int (*accept)(struct pio_tp_listener *l, const struct pio_tp_opts *o, struct pio_tp_conn **c);

    /* listener_shutdown - make a blocked accept return PIO_ECLOSED; never blocks. */
    void (*listener_shutdown)(struct pio_tp_listener *l);

    /* listener_close - free; call after every accept has returned. */
    void (*listener_close)(struct pio_tp_listener *l);

    /* connect - from local address `local` (NULL: any) to remote:port.
     * Returns PIO_OK, PIO_EREFUSED, PIO_ETIMEDOUT, PIO_ELINK, PIO_EADDR. */
    int (*connect)(const char *local, const char *remote, int port, const struct pio_tp_opts *o,
                   struct pio_tp_conn **c);

    /* sendv - send all bytes of iov[0..n) or fail. Returns PIO_OK or
     * PIO_ECLOSED / PIO_ELINK / PIO_EIO; never raises SIGPIPE. */
    int (*sendv)(struct pio_tp_conn *c, const struct iovec *iov, int n);

    /* recv - receive exactly len bytes. Returns PIO_OK, PIO_ECLOSED (peer
     * closed or shutdown called; at a frame boundary or not), PIO_EIO. */
    int (*recv)(struct pio_tp_conn *c, void *buf, size_t len);

    /* shutdown - make blocked sendv/recv on c return PIO_ECLOSED; the peer
     * sees the connection close. Never blocks; safe from any thread. */
    void (*shutdown)(struct pio_tp_conn *c);

    /* close - free c; call after no thread uses it any more. */
    void (*close)(struct pio_tp_conn *c);

    /* addrs - "addr:port" of each end (either may be NULL). */
    void (*addrs)(struct pio_tp_conn *c, char *local, char *remote);

    /* fd - the connection's descriptor, for an owner that drives it from its
     * own poll loop with non-blocking send/recv (the piod's express lane,
     * its relay). The connection keeps owning it: close() closes it.
     * Returns -1 when no descriptor carries the bytes (a backend without
     * PIO_TP_CAP_FD, e.g. UCX over shared memory): the owner must not poll,
     * read or write it, and uses sendv/recv only. */
    int (*fd)(struct pio_tp_conn *c);

    /* pace - send at most rate bytes/s on c from now on (0: no limit of
     * ours; the congestion control still paces as it likes). NULL without
     * PIO_TP_CAP_PACE. Returns PIO_OK or an errno-derived error. Safe from
     * any thread while c is open. */
    int (*pace)(struct pio_tp_conn *c, uint64_t rate);

    /* lost - *segs = the segments c has sent again so far (TCP: its
     * retransmits), the sign that something on the path drops what is sent
     * too fast. NULL without PIO_TP_CAP_PACE. Returns PIO_OK or an
     * errno-derived error. Safe from any thread while c is open. */
    int (*lost)(struct pio_tp_conn *c, uint64_t *segs);
};

/* pio_transport_find - the backend called name ("tcp", ...), or NULL. */
const struct pio_transport_ops *pio_transport_find(const char *name);

/* pio_transport_list - the registered backends, NULL-terminated. */
const struct pio_transport_ops *const *pio_transport_list(void);

#endif
