/* srv.h - what the metadata server and the I/O servers share: receiving
 * requests, answering them, logging. Thread-safe: all of it.
 * SPDX-License-Identifier: BSD-3-Clause */
#ifndef PFS_SRV_H
#define PFS_SRV_H

#include "proto.h"
#include "pio.h"

#include <stddef.h>
#include <stdint.h>

/* pfs_log - one line on stderr: "WHO: text" (WHO set by pfs_log_name). */
void pfs_log_name(const char *who);
void pfs_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* pfs_srv_recv - wait up to timeout ms for a request of class cls
 * (tag PFS_TAG_REQ + cls) into buf (cap bytes, at least PFS_MSG_MAX) and
 * decode it into m (m->data points into buf). A malformed or oversized
 * message is logged and dropped (the loop goes on). Returns PIO_OK,
 * PIO_ETIMEDOUT, or a PIO error of the receive (PIO_ECLOSED: piod gone). */
int pfs_srv_recv(int cls, uint8_t *buf, size_t cap, int timeout, struct pfs_msg *m);

/* pfs_srv_partner - the PIO partner handle of application name, looked up
 * once and cached (up to PIO's 64 partners). */
int pfs_srv_partner(const char *name, int *partner);

/* pfs_srv_partner_forget - drop name's cached handle partner (it answered
 * PIO_EGONE: that process left, and a new one may have taken its name). */
void pfs_srv_partner_forget(const char *name, int partner);

/* pfs_srv_reply - send rep (op, rid and proc are set from req) to req's
 * sender, with rep->data / dlen as data; a cached partner handle that
 * turns out stale is looked up again once. Returns a PIO status. */
int pfs_srv_reply(const struct pfs_msg *req, struct pfs_msg *rep);

/* pfs_srv_fail - reply to req with status st and text made by fmt. */
int pfs_srv_fail(const struct pfs_msg *req, int st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* pfs_srv_signals - SIGINT / SIGTERM set *stop (a volatile sig_atomic_t *
 * cast); SIGPIPE ignored. */
void pfs_srv_signals(volatile int *stop);

/* pfs_now_ns - CLOCK_MONOTONIC in nanoseconds. */
int64_t pfs_now_ns(void);

#endif
