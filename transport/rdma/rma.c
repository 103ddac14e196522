/* rma.c - the "rdma" one-sided backend: UCX get, put, 64-bit atomics and flush (rma.h).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * One pio_ucx (ucx.c) per context: its progress thread serves the requests
 * UCX emulates with active messages (get and atomics over tcp) while the
 * owner does nothing, and runs the completions. A UCX callback (on that
 * thread, under UCX's worker lock) only records the outcome and queues the
 * operation on x->done; the hook then runs the user callbacks with no lock
 * held (nng's aio completion list). An operation UCX completes at once has
 * its callback run on the caller's thread before the call returns.
 * x->mtx guards only x->done. Keepalive is set to 1 s (unless UCX_KEEPALIVE_INTERVAL
 * is set) so a peer that died is noticed: its endpoint's error handler marks
 * it failed, UCX fails what was in flight, and later calls fail at once.
 */
#include "rma.h"
#include "ucx.h"
#include "err.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RMA_KEEPALIVE_MS 1000

struct rma_op {
    struct rma_op *next;
    pio_rma_cb cb;
    void *arg;
    int status;
    uint64_t operand, reply; /* atomics: what UCX reads and writes */
    uint64_t *old;           /* where reply goes on success, or NULL */
    struct pio_rma *x;
};

struct pio_rma {
    struct pio_ucx *u;
    ucp_address_t *addr;
    size_t addr_len;
    pthread_mutex_t mtx;         /* guards done */
    struct rma_op *done, **tail; /* completed by UCX, callbacks not run yet */
};

struct pio_rma_ep {
    struct pio_rma *x;
    ucp_ep_h ep;
    atomic_int failed; /* 0, or the PIO code of the error UCX reported on ep */
};

struct pio_rma_mem {
    struct pio_rma *x;
    ucp_mem_h mh;
};

struct pio_rma_rkey {
    ucp_rkey_h rk;
};

/* ---- blocking helper (rma.h) ---- */

void pio_rma_wait_init(struct pio_rma_wait *w)
{
    pthread_mutex_init(&w->mtx, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    w->done = 0;
    w->status = PIO_OK;
}

void pio_rma_wait_cb(void *arg, int status)
{
    struct pio_rma_wait *w = arg;
    pthread_mutex_lock(&w->mtx);
    w->status = status;
    w->done = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mtx);
}

int pio_rma_wait_for(struct pio_rma_wait *w, int ms)
{
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    if (ms >= 0) {
        end.tv_sec += ms / 1000;
        end.tv_nsec += (long)(ms % 1000) * 1000000L;
        if (end.tv_nsec >= 1000000000L) {
            end.tv_sec++;
            end.tv_nsec -= 1000000000L;
        }
    }
    int rc = PIO_OK;
    pthread_mutex_lock(&w->mtx);
    while (!w->done && rc == PIO_OK) {
        if (ms < 0)
            pthread_cond_wait(&w->cv, &w->mtx);
        else if (pthread_cond_timedwait(&w->cv, &w->mtx, &end) == ETIMEDOUT && !w->done)
            rc = PIO_ETIMEDOUT;
    }
    if (w->done)
        rc = w->status;
    pthread_mutex_unlock(&w->mtx);
    return rc;
}

void pio_rma_wait_destroy(struct pio_rma_wait *w)
{
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mtx);
}

/* ---- completions ---- */

static void rma_deliver(struct rma_op *op)
{
    if (op->status == PIO_OK && op->old)
        *op->old = op->reply;
    op->cb(op->arg, op->status);
    free(op);
}

/* UCX's callback (progress thread, UCX's lock held): record and queue. */
static void rma_ucp_cb(void *request, ucs_status_t status, void *user_data)
{
    struct rma_op *op = user_data;
    struct pio_rma *x = op->x;
    op->status = pio_ucx_err(status);
    ucp_request_free(request);
    pthread_mutex_lock(&x->mtx);
    op->next = NULL;
    *x->tail = op;
    x->tail = &op->next;
    pthread_mutex_unlock(&x->mtx);
}

/* The progress thread's hook: run the queued user callbacks, no lock held. */
static int rma_hook(void *arg)
{
    struct pio_rma *x = arg;
    pthread_mutex_lock(&x->mtx);
    struct rma_op *list = x->done;
    x->done = NULL;
    x->tail = &x->done;
    pthread_mutex_unlock(&x->mtx);
    while (list) {
        struct rma_op *next = list->next;
        rma_deliver(list);
        list = next;
    }
    return -1;
}

static struct rma_op *rma_op_new(struct pio_rma_ep *e, pio_rma_cb cb, void *arg)
{
    struct rma_op *op = calloc(1, sizeof(*op));
    if (op) {
        op->cb = cb;
        op->arg = arg;
        op->x = e->x;
    }
    return op;
}

static ucp_request_param_t rma_param(struct rma_op *op)
{
    ucp_request_param_t p = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
        .cb.send = rma_ucp_cb,
        .user_data = op,
    };
    return p;
}

/* What a posting call returned: done at once (callback now), failed (no
 * callback), or in flight (UCX calls rma_ucp_cb later). */
static int rma_started(struct pio_rma_ep *e, struct rma_op *op, ucs_status_ptr_t p)
{
    if (p == NULL) {
        op->status = PIO_OK;
        rma_deliver(op);
        return PIO_OK;
    }
    if (UCS_PTR_IS_ERR(p)) {
        int rc = pio_ucx_err(UCS_PTR_STATUS(p));
        free(op);
        return rc;
    }
    pio_ucx_wake(e->x->u);
    return PIO_OK;
}

/* ---- context ---- */

static int rma_init(struct pio_rma **xp)
{
    int rc = PIO_OK;
    struct pio_rma *x = calloc(1, sizeof(*x));
    PIO_CHECK(!x, rc, PIO_ENOMEM, out);
    pthread_mutex_init(&x->mtx, NULL);
    x->tail = &x->done;
    struct pio_ucx_cfg cfg = {
        .features = UCP_FEATURE_RMA | UCP_FEATURE_AMO64 | UCP_FEATURE_AM | UCP_FEATURE_STREAM,
        .hook = rma_hook,
        .hook_arg = x,
        .keepalive_ms = RMA_KEEPALIVE_MS,
    };
    PIO_TRY(pio_ucx_open(&cfg, &x->u), rc, free);
    ucs_status_t st = ucp_worker_get_address(pio_ucx_worker(x->u), &x->addr, &x->addr_len);
    PIO_CHECK(st != UCS_OK, rc, PIO_EIO, close);
    *xp = x;
    return PIO_OK;
close:
    pio_ucx_close(x->u);
free:
    pthread_mutex_destroy(&x->mtx);
    free(x);
out:
    return rc;
}

static void rma_fini(struct pio_rma *x)
{
    if (!x)
        return;
    ucp_worker_release_address(pio_ucx_worker(x->u), x->addr);
    pio_ucx_close(x->u);
    rma_hook(x); /* completions that came in the last round */
    pthread_mutex_destroy(&x->mtx);
    free(x);
}

static int rma_address(struct pio_rma *x, const void **addr, size_t *len)
{
    if (!x || !addr || !len)
        return PIO_EINVAL;
    *addr = x->addr;
    *len = x->addr_len;
    return PIO_OK;
}

/* ---- endpoints ---- */

static void rma_ep_err(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    struct pio_rma_ep *e = arg;
    (void)ep;
    int rc = pio_ucx_err(status);
    atomic_store(&e->failed, rc == PIO_EIO || rc == PIO_OK ? PIO_EGONE : rc);
}

static int rma_connect(struct pio_rma *x, const void *addr, size_t len, struct pio_rma_ep **ep)
{
    int rc = PIO_OK;
    PIO_CHECK(!x || !addr || len == 0 || !ep, rc, PIO_EINVAL, out);
    struct pio_rma_ep *e = calloc(1, sizeof(*e));
    PIO_CHECK(!e, rc, PIO_ENOMEM, out);
    e->x = x;
    ucp_ep_params_t p = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER,
        .address = addr,
        .err_mode = UCP_ERR_HANDLING_MODE_PEER,
        .err_handler = {.cb = rma_ep_err, .arg = e},
    };
    ucs_status_t st = ucp_ep_create(pio_ucx_worker(x->u), &p, &e->ep);
    PIO_CHECK(st == UCS_ERR_UNREACHABLE, rc, PIO_EADDR, free);
    PIO_CHECK(st != UCS_OK, rc, pio_ucx_err(st), free);
    *ep = e;
    return PIO_OK;
free:
    free(e);
out:
    return rc;
}

static void rma_disconnect(struct pio_rma_ep *e)
{
    if (!e)
        return;
    struct pio_rma_wait w;
    pio_rma_wait_init(&w);
    struct rma_op *op = rma_op_new(e, pio_rma_wait_cb, &w); /* NULL: poll instead */
    ucp_request_param_t p = {.op_attr_mask = 0};
    if (op)
        p = rma_param(op);
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = atomic_load(&e->failed) ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    ucs_status_ptr_t r = ucp_ep_close_nbx(e->ep, &p);
    if (r != NULL && !UCS_PTR_IS_ERR(r)) {
        pio_ucx_wake(e->x->u);
        if (op) {
            pio_rma_wait_for(&w, -1); /* a dead peer fails the flush within the keepalive */
        } else {
            while (ucp_request_check_status(r) == UCS_INPROGRESS) {
                struct timespec ms = {0, 1000000L};
                nanosleep(&ms, NULL);
            }
            ucp_request_free(r);
        }
    } else {
        free(op);
    }
    pio_rma_wait_destroy(&w);
    free(e);
}

/* ---- memory ---- */

static int rma_mem_register(struct pio_rma *x, void *buf, size_t len, struct pio_rma_mem **mp,
                            void **rkey, size_t *rkey_len)
{
    int rc = PIO_OK;
    void *packed = NULL;
    size_t plen = 0;
    PIO_CHECK(!x || !buf || len == 0 || !mp || !rkey || !rkey_len, rc, PIO_EINVAL, out);
    struct pio_rma_mem *m = calloc(1, sizeof(*m));
    PIO_CHECK(!m, rc, PIO_ENOMEM, out);
    m->x = x;
    ucp_mem_map_params_t mp_ = {
        .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
        .address = buf,
        .length = len,
    };
    ucs_status_t st = ucp_mem_map(pio_ucx_context(x->u), &mp_, &m->mh);
    PIO_CHECK(st != UCS_OK, rc, pio_ucx_err(st), free);
    st = ucp_rkey_pack(pio_ucx_context(x->u), m->mh, &packed, &plen);
    PIO_CHECK(st != UCS_OK, rc, pio_ucx_err(st), unmap);
    *rkey = malloc(plen);
    PIO_CHECK(!*rkey, rc, PIO_ENOMEM, release);
    memcpy(*rkey, packed, plen);
    *rkey_len = plen;
    ucp_rkey_buffer_release(packed);
    *mp = m;
    return PIO_OK;
release:
    ucp_rkey_buffer_release(packed);
unmap:
    ucp_mem_unmap(pio_ucx_context(x->u), m->mh);
free:
    free(m);
out:
    return rc;
}

static void rma_mem_deregister(struct pio_rma_mem *m)
{
    if (!m)
        return;
    ucp_mem_unmap(pio_ucx_context(m->x->u), m->mh);
    free(m);
}

static int rma_rkey_unpack(struct pio_rma_ep *e, const void *rkey, size_t len,
                           struct pio_rma_rkey **rkp)
{
    int rc = PIO_OK;
    PIO_CHECK(!e || !rkey || len == 0 || !rkp, rc, PIO_EINVAL, out);
    struct pio_rma_rkey *k = calloc(1, sizeof(*k));
    PIO_CHECK(!k, rc, PIO_ENOMEM, out);
    ucs_status_t st = ucp_ep_rkey_unpack(e->ep, rkey, &k->rk);
    PIO_CHECK(st != UCS_OK, rc, st == UCS_ERR_NO_MEMORY ? PIO_ENOMEM : PIO_EINVAL, free);
    *rkp = k;
    return PIO_OK;
free:
    free(k);
out:
    return rc;
}

static void rma_rkey_release(struct pio_rma_rkey *k)
{
    if (!k)
        return;
    ucp_rkey_destroy(k->rk);
    free(k);
}

/* ---- operations ---- */

/* Common checks: an argument missing, or the endpoint already failed. */
static int rma_pre(struct pio_rma_ep *e, struct pio_rma_rkey *k, pio_rma_cb cb)
{
    if (!e || !k || !cb)
        return PIO_EINVAL;
    return atomic_load(&e->failed);
}

/* get (put 0) into dst, or put (put 1) from it: one UCX call either way. */
static int rma_xfer(struct pio_rma_ep *e, void *buf, size_t len, uint64_t raddr,
                    struct pio_rma_rkey *k, pio_rma_cb cb, void *arg, int put)
{
    int rc = rma_pre(e, k, cb);
    if (rc != PIO_OK || (len > 0 && !buf))
        return rc != PIO_OK ? rc : PIO_EINVAL;
    struct rma_op *op = rma_op_new(e, cb, arg);
    if (!op)
        return PIO_ENOMEM;
    if (len == 0)
        return rma_started(e, op, NULL);
    ucp_request_param_t p = rma_param(op);
    return rma_started(e, op,
                       put ? ucp_put_nbx(e->ep, buf, len, raddr, k->rk, &p)
                           : ucp_get_nbx(e->ep, buf, len, raddr, k->rk, &p));
}

static int rma_get(struct pio_rma_ep *e, void *dst, size_t len, uint64_t raddr,
                   struct pio_rma_rkey *k, pio_rma_cb cb, void *arg)
{
    return rma_xfer(e, dst, len, raddr, k, cb, arg, 0);
}

static int rma_put(struct pio_rma_ep *e, const void *src, size_t len, uint64_t raddr,
                   struct pio_rma_rkey *k, pio_rma_cb cb, void *arg)
{
    return rma_xfer(e, (void *)src, len, raddr, k, cb, arg, 1);
}

static int rma_atomic(struct pio_rma_ep *e, ucp_atomic_op_t opc, uint64_t raddr,
                      struct pio_rma_rkey *k, uint64_t operand, uint64_t reply_in, uint64_t *old,
                      int fetch, pio_rma_cb cb, void *arg)
{
    int rc = rma_pre(e, k, cb);
    if (rc != PIO_OK || raddr % 8 != 0)
        return rc != PIO_OK ? rc : PIO_EINVAL;
    struct rma_op *op = rma_op_new(e, cb, arg);
    if (!op)
        return PIO_ENOMEM;
    op->operand = operand;
    op->reply = reply_in;
    op->old = old;
    ucp_request_param_t p = rma_param(op);
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    p.datatype = ucp_dt_make_contig(8);
    if (fetch) {
        p.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        p.reply_buffer = &op->reply;
    }
    return rma_started(e, op, ucp_atomic_op_nbx(e->ep, opc, &op->operand, 1, raddr, k->rk, &p));
}

static int rma_cas64(struct pio_rma_ep *e, uint64_t raddr, struct pio_rma_rkey *k, uint64_t compare,
                     uint64_t swap, uint64_t *old, pio_rma_cb cb, void *arg)
{
    if (!old)
        return PIO_EINVAL;
    return rma_atomic(e, UCP_ATOMIC_OP_CSWAP, raddr, k, compare, swap, old, 1, cb, arg);
}

static int rma_fadd64(struct pio_rma_ep *e, uint64_t raddr, struct pio_rma_rkey *k, uint64_t add,
                      uint64_t *old, pio_rma_cb cb, void *arg)
{
    return rma_atomic(e, UCP_ATOMIC_OP_ADD, raddr, k, add, 0, old, old != NULL, cb, arg);
}

static int rma_flush(struct pio_rma_ep *e, pio_rma_cb cb, void *arg)
{
    if (!e || !cb)
        return PIO_EINVAL;
    int rc = atomic_load(&e->failed);
    if (rc != PIO_OK)
        return rc;
    struct rma_op *op = rma_op_new(e, cb, arg);
    if (!op)
        return PIO_ENOMEM;
    ucp_request_param_t p = rma_param(op);
    return rma_started(e, op, ucp_ep_flush_nbx(e->ep, &p));
}

/* ---- describe ---- */

/* Whether lane line [line, end) has a role token: "am" exactly, or one
 * starting with prefix ("rma#", "rma_bw#", "amo#"). */
static int rma_lane_has(const char *line, const char *end, const char *tok, int prefix)
{
    const char *p = strstr(line, "->");
    size_t tl = strlen(tok);
    while (p && p < end) {
        while (p < end && *p != ' ')
            p++;
        while (p < end && *p == ' ')
            p++;
        const char *q = p;
        while (q < end && *q != ' ')
            q++;
        if ((size_t)(q - p) >= tl && memcmp(p, tok, tl) == 0 && (prefix || (size_t)(q - p) == tl))
            return 1;
        if (q >= end)
            break;
        p = q;
    }
    return 0;
}

/* Which transports/devices UCX's endpoint text gives each operation. */
static void rma_describe_ops(const char *text, FILE *out)
{
    static const char *const names[] = {"stream", "get/put", "atomics"};
    int native_rma = strstr(text, "get[") != NULL;
    fprintf(out, "operations to another process on this host:\n");
    for (int op = 0; op < 3; op++) {
        int found = 0;
        fprintf(out, "  %-8s", names[op]);
        for (const char *line = text; line && *line;) {
            const char *nl = strchr(line, '\n');
            const char *end = nl ? nl : line + strlen(line);
            const char *lane = strstr(line, "lane[");
            if (lane && lane < end) {
                int use = op == 0   ? rma_lane_has(line, end, "am", 0)
                          : op == 1 ? native_rma && (rma_lane_has(line, end, "rma#", 1) ||
                                                     rma_lane_has(line, end, "rma_bw#", 1))
                                    : rma_lane_has(line, end, "amo#", 1);
                const char *tl = strchr(lane, ':');
                if (use && tl && tl < end) { /* "lane[0]:  3:sysv/memory.0 md[2] ..." */
                    tl++;
                    while (tl < end && (*tl == ' ' || (*tl >= '0' && *tl <= '9') || *tl == ':'))
                        tl++;
                    fprintf(out, "%s %.*s", found ? "," : "", (int)strcspn(tl, " \n"), tl);
                    found = 1;
                }
            }
            line = nl ? nl + 1 : NULL;
        }
        if (!found)
            fprintf(out, " emulated with active messages on the stream's lane: the owner's "
                         "progress thread serves them");
        fprintf(out, "\n");
    }
}

/* Progress w until request r (may be NULL or an error) is done, for at
 * most ms; free it. */
static void rma_finish_on(ucp_worker_h w, ucs_status_ptr_t r, int ms)
{
    if (r == NULL || UCS_PTR_IS_ERR(r))
        return;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (ucp_request_check_status(r) == UCS_INPROGRESS) {
        ucp_worker_progress(w);
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > ms)
            break;
    }
    if (ucp_request_check_status(r) != UCS_INPROGRESS)
        ucp_request_free(r);
}

/* The lanes UCX picks for an endpoint from x's worker to a second worker of
 * the same context: a peer on this host (never the "self" loopback, which
 * only reaches the same worker). */
static void rma_describe_lanes(struct pio_rma *x, FILE *out)
{
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SINGLE};
    ucp_worker_h w2;
    ucp_address_t *a2;
    size_t l2;
    ucp_ep_h ep;
    char *text = NULL;
    size_t tl = 0;
    if (ucp_worker_create(pio_ucx_context(x->u), &wp, &w2) != UCS_OK) {
        fprintf(out, "(UCX could not make a second worker to ask)\n");
        return;
    }
    if (ucp_worker_get_address(w2, &a2, &l2) != UCS_OK)
        goto worker;
    ucp_ep_params_t p = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS, .address = a2};
    if (ucp_ep_create(pio_ucx_worker(x->u), &p, &ep) != UCS_OK)
        goto address;
    FILE *m = open_memstream(&text, &tl);
    if (m) {
        ucp_ep_print_info(ep, m);
        fclose(m);
    }
    rma_describe_ops(text ? text : "", out);
    fprintf(out, "\nUCX's endpoint configuration:\n%s", text ? text : "");
    free(text);
    /* let the wireup finish (x's thread progresses our side), then close */
    ucp_request_param_t fp = {.op_attr_mask = 0};
    rma_finish_on(w2, ucp_ep_flush_nbx(ep, &fp), 2000);
    ucp_request_param_t cp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS, .flags = 0};
    rma_finish_on(w2, ucp_ep_close_nbx(ep, &cp), 2000);
address:
    ucp_worker_release_address(w2, a2);
worker:
    ucp_worker_destroy(w2);
}

static int rma_describe(struct pio_rma *x, FILE *out)
{
    if (!x || !out)
        return PIO_EINVAL;
    const char *tls = getenv("UCX_TLS"), *dev = getenv("UCX_NET_DEVICES");
    fprintf(out, "UCX %s; UCX_TLS=%s; UCX_NET_DEVICES=%s\n\n", ucp_get_version_string(),
            tls ? tls : "(unset: all)", dev ? dev : "(unset: all)");
    fprintf(out, "transports and devices (UCX's resources):\n");
    fflush(out);
    ucp_context_print_info(pio_ucx_context(x->u), out);
    fprintf(out, "\n");
    rma_describe_lanes(x, out);
    fflush(out);
    return ferror(out) ? PIO_EIO : PIO_OK;
}

/* A waiter's round: progress the worker (UCS_THREAD_MODE_MULTI: beside the
 * progress thread), then deliver what completed, on this thread. */
static void rma_progress(struct pio_rma *x)
{
    while (ucp_worker_progress(pio_ucx_worker(x->u)) != 0)
        ;
    rma_hook(x);
}

const struct pio_rma_ops pio_rma_rdma_ops = {
    .name = "rdma",
    .caps = PIO_RMA_CAP_GETPUT | PIO_RMA_CAP_ATOMICS,
    .init = rma_init,
    .fini = rma_fini,
    .address = rma_address,
    .connect = rma_connect,
    .disconnect = rma_disconnect,
    .mem_register = rma_mem_register,
    .mem_deregister = rma_mem_deregister,
    .rkey_unpack = rma_rkey_unpack,
    .rkey_release = rma_rkey_release,
    .get = rma_get,
    .put = rma_put,
    .cas64 = rma_cas64,
    .fadd64 = rma_fadd64,
    .flush = rma_flush,
    .progress = rma_progress,
    .describe = rma_describe,
};
