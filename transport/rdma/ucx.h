/* ucx.h - one UCX context, one worker and the thread that progresses it (private to rdma/).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The users of UCX in libpio (the one-sided backend, rma.c; the stream
 * transport over UCX streams, stream.c) get their worker here. The worker runs in
 * UCS_THREAD_MODE_MULTI, so any thread may post operations on it; only the
 * progress thread calls ucp_worker_progress, so every UCX callback runs
 * there. Between rounds the thread sleeps in poll(2) on the worker's event
 * descriptor (ucp_worker_get_efd / ucp_worker_arm): incoming data, emulated
 * get/atomic requests over tcp and completions wake it; a thread that posts
 * an operation that UCX could not complete at once wakes it with
 * pio_ucx_wake (ucp_worker_signal). It also wakes at least once a second so
 * UCX's keepalive and the users' timers run.
 *
 * Locks: UCX holds its worker lock while it runs our callbacks, and a
 * callback may take a user's own mutex; so no user may call UCX while
 * holding a mutex a callback takes (the order is: UCX's lock, then ours).
 * Thread-safety: every function here is thread-safe except pio_ucx_close,
 * which must be the last call on u and never runs on the progress thread.
 */
#ifndef PIO_RDMA_UCX_H
#define PIO_RDMA_UCX_H

#include <stdint.h>
#include <ucp/api/ucp.h>

struct pio_ucx;

struct pio_ucx_cfg {
    uint64_t features; /* UCP_FEATURE_* wanted; UCP_FEATURE_WAKEUP is added */
    /* hook - runs on the progress thread after each progress round, with no
     * lock held (it may call UCX). Returns how many ms the thread may sleep
     * before it must run again: -1 no limit, 0 run again at once. NULL: none. */
    int (*hook)(void *arg);
    void *hook_arg;
    /* keepalive_ms > 0: UCX's peer keepalive interval, unless the user set
     * UCX_KEEPALIVE_INTERVAL (a dead peer is then noticed in about that). */
    int keepalive_ms;
    /* cm_one_device: a client-server endpoint (ucp_listener / sockaddr
     * connect) uses only the device its connection was made on
     * (UCX_CM_USE_ALL_DEVICES=n), unless the user set UCX_CM_USE_ALL_DEVICES:
     * a stream pinned to one link stays on it. */
    int cm_one_device;
};

/* pio_ucx_open - read UCX's configuration from the environment (UCX_TLS,
 * ...), create the context and worker, start the progress thread.
 * Returns PIO_OK, PIO_ENOMEM, PIO_EIO (UCX would not start; UCX says why on
 * stderr). */
int pio_ucx_open(const struct pio_ucx_cfg *cfg, struct pio_ucx **u);

/* pio_ucx_close - stop and join the progress thread, destroy the worker and
 * the context. Endpoints, listeners and registrations must be gone. */
void pio_ucx_close(struct pio_ucx *u);

ucp_context_h pio_ucx_context(struct pio_ucx *u);
ucp_worker_h pio_ucx_worker(struct pio_ucx *u);

/* pio_ucx_wake - make the progress thread run a round now (never blocks). */
void pio_ucx_wake(struct pio_ucx *u);

/* pio_ucx_on_thread - nonzero when the caller is u's progress thread. */
int pio_ucx_on_thread(struct pio_ucx *u);

/* pio_ucx_err - the PIO status for a UCX status: the peer gone (reset,
 * unreachable, endpoint time-out, not connected) -> PIO_EGONE, UCS_ERR_TIMED_OUT ->
 * PIO_ETIMEDOUT, unsupported -> PIO_ENOSYS, canceled -> PIO_ECANCELED, no
 * memory -> PIO_ENOMEM, invalid parameter -> PIO_EINVAL, the rest -> PIO_EIO. */
int pio_ucx_err(ucs_status_t st);

#endif
