/* ucx.c - one UCX context and worker, progressed by one thread that sleeps on the event fd.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * See ucx.h for the model. The progress thread's round: progress the worker
 * until it has nothing left, run the user's hook (which may post work and
 * names its next deadline), arm the worker (UCS_ERR_BUSY: more arrived, go
 * again), then sleep in poll(2) on the event fd for at most a second. No
 * mutex of ours is held anywhere in this file; u->stop is an atomic.
 */
#include "ucx.h"
#include "err.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UCX_MAX_SLEEP_MS 1000   /* keepalive and users' timers run at least this often */
#define UCX_TCP_SEG      "512k" /* UCX_TCP_TX_SEG_SIZE and UCX_TCP_RX_SEG_SIZE unless set */

struct pio_ucx {
    ucp_context_h ctx;
    ucp_worker_h worker;
    int efd;
    pthread_t th;
    atomic_int stop;
    int (*hook)(void *arg);
    void *hook_arg;
};

int pio_ucx_err(ucs_status_t st)
{
    switch (st) {
    case UCS_OK: return PIO_OK;
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_REJECTED: return PIO_EGONE;
    case UCS_ERR_TIMED_OUT: return PIO_ETIMEDOUT;
    case UCS_ERR_UNSUPPORTED:
    case UCS_ERR_NOT_IMPLEMENTED: return PIO_ENOSYS;
    case UCS_ERR_CANCELED: return PIO_ECANCELED;
    case UCS_ERR_NO_MEMORY: return PIO_ENOMEM;
    case UCS_ERR_INVALID_PARAM:
    case UCS_ERR_INVALID_ADDR: return PIO_EINVAL;
    default: return PIO_EIO;
    }
}

static void *ucx_progress_main(void *arg)
{
    struct pio_ucx *u = arg;
    while (!atomic_load(&u->stop)) {
        while (ucp_worker_progress(u->worker) != 0)
            ;
        int ms = u->hook ? u->hook(u->hook_arg) : -1;
        if (ms == 0)
            continue;
        if (ms < 0 || ms > UCX_MAX_SLEEP_MS)
            ms = UCX_MAX_SLEEP_MS;
        ucs_status_t st = ucp_worker_arm(u->worker);
        if (st == UCS_ERR_BUSY)
            continue;
        if (st != UCS_OK && ms > 10)
            ms = 10; /* cannot arm: keep going, but gently */
        if (atomic_load(&u->stop))
            break;
        struct pollfd p = {.fd = u->efd, .events = POLLIN};
        if (poll(&p, 1, ms) < 0 && errno != EINTR)
            break;
    }
    return NULL;
}

int pio_ucx_open(const struct pio_ucx_cfg *cfg, struct pio_ucx **up)
{
    int rc = PIO_OK;
    ucp_config_t *conf = NULL;
    struct pio_ucx *u = calloc(1, sizeof(*u));
    PIO_CHECK(!u, rc, PIO_ENOMEM, out);
    u->hook = cfg->hook;
    u->hook_arg = cfg->hook_arg;
    PIO_CHECK(ucp_config_read(NULL, NULL, &conf) != UCS_OK, rc, PIO_EIO, free);
    if (cfg->keepalive_ms > 0 && !getenv("UCX_KEEPALIVE_INTERVAL")) {
        char v[32];
        snprintf(v, sizeof(v), "%dms", cfg->keepalive_ms);
        ucp_config_modify(conf, "KEEPALIVE_INTERVAL", v); /* best effort */
    }
    if (cfg->cm_one_device && !getenv("UCX_CM_USE_ALL_DEVICES"))
        ucp_config_modify(conf, "CM_USE_ALL_DEVICES", "n"); /* best effort */
    /* UCX's tcp moves a message in segments of 8 KiB by default: on a
     * loaded host that caps a put near 300 MB/s; 512 KiB doubles it (see
     * docs/design-notes.md). A user's UCX_TCP_*_SEG_SIZE wins. */
    if (!getenv("UCX_TCP_TX_SEG_SIZE") && !getenv("UCX_TCP_RX_SEG_SIZE")) {
        /* transport keys go without their prefix; best effort */
        ucp_config_modify(conf, "RX_SEG_SIZE", UCX_TCP_SEG);
        ucp_config_modify(conf, "TX_SEG_SIZE", UCX_TCP_SEG);
    }
    ucp_params_t pp = {
        .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
        .features = cfg->features | UCP_FEATURE_WAKEUP,
        .mt_workers_shared = 1,
    };
    ucs_status_t st = ucp_init(&pp, conf, &u->ctx);
    ucp_config_release(conf);
    PIO_CHECK(st != UCS_OK, rc, pio_ucx_err(st) == PIO_ENOMEM ? PIO_ENOMEM : PIO_EIO, free);
    ucp_worker_params_t wp = {
        .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE | UCP_WORKER_PARAM_FIELD_EVENTS,
        .thread_mode = UCS_THREAD_MODE_MULTI,
        .events = UCP_WAKEUP_RMA | UCP_WAKEUP_AMO | UCP_WAKEUP_TAG_SEND | UCP_WAKEUP_TAG_RECV |
                  UCP_WAKEUP_TX | UCP_WAKEUP_RX,
    };
    st = ucp_worker_create(u->ctx, &wp, &u->worker);
    PIO_CHECK(st != UCS_OK, rc, PIO_EIO, cleanup);
    ucp_worker_attr_t wa = {.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE};
    st = ucp_worker_query(u->worker, &wa);
    PIO_CHECK(st != UCS_OK || wa.thread_mode != UCS_THREAD_MODE_MULTI, rc, PIO_EIO, worker);
    PIO_CHECK(ucp_worker_get_efd(u->worker, &u->efd) != UCS_OK, rc, PIO_EIO, worker);
    PIO_CHECK(pthread_create(&u->th, NULL, ucx_progress_main, u) != 0, rc, PIO_ENOMEM, worker);
    *up = u;
    return PIO_OK;
worker:
    ucp_worker_destroy(u->worker);
cleanup:
    ucp_cleanup(u->ctx);
free:
    free(u);
out:
    return rc;
}

void pio_ucx_close(struct pio_ucx *u)
{
    if (!u)
        return;
    atomic_store(&u->stop, 1);
    ucp_worker_signal(u->worker);
    pthread_join(u->th, NULL);
    ucp_worker_destroy(u->worker);
    ucp_cleanup(u->ctx);
    free(u);
}

ucp_context_h pio_ucx_context(struct pio_ucx *u)
{
    return u->ctx;
}

ucp_worker_h pio_ucx_worker(struct pio_ucx *u)
{
    return u->worker;
}

void pio_ucx_wake(struct pio_ucx *u)
{
    if (u)
        ucp_worker_signal(u->worker);
}

int pio_ucx_on_thread(struct pio_ucx *u)
{
    return pthread_equal(pthread_self(), u->th);
}
