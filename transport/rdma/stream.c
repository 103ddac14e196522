/* stream.c - the "rdma" stream transport: transport.h's byte streams over UCX streams.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * One UCX worker per process (rs_ctx, made on first use, kept until exit),
 * progressed by ucx.c's thread. A listener is a ucp_listener (a TCP socket
 * UCX's connection manager accepts on, so addresses and ports mean what they
 * mean for tcp); a connection is a client-server ucp_ep in peer error mode.
 * Bytes travel with ucp_stream_send_nbx; control messages (hello, credit,
 * fin, fin-ack) are UCX active messages. UCX may pick shared memory or tcp
 * for the bytes; the addresses are those of the connection manager's socket.
 *
 * Receiving: the progress thread keeps one non-WAITALL ucp_stream_recv_nbx
 * posted into each connection's ring buffer (capacity: the rcvbuf option of
 * connect, or of listen for accepted connections; default 4 MiB), and recv
 * copies out of the ring. Draining eagerly means bytes that arrived before
 * the peer closed are ours even if UCX then tears the endpoint down, and a
 * blocked recv needs no UCX request cancelled (UCX 1.13 cannot cancel a
 * stream receive).
 * Flow control: UCX streams have none (the receiver buffers without limit),
 * so a sender may have at most the peer's ring capacity unread; the reader
 * returns credit (bytes consumed) every quarter ring. So sendv blocks when
 * the peer reads nothing, like a full socket buffer.
 * Closing: shutdown sends FIN(bytes sent); the peer reads up to that count,
 * then gets PIO_ECLOSED, and answers FIN-ACK once it has received them all.
 * close hands the connection to the progress thread, which keeps the
 * endpoint until FIN-ACK, the peer's loss, or RS_LINGER_MS, then closes it
 * and frees the connection (TCP's linger, without blocking the caller).
 * A peer that dies is seen by UCX's error handler (connection manager socket
 * closed, or keepalive); bytes already in the ring are still delivered.
 * Addresses: IPv4 only, and a local address must be one an interface has
 * (UCX 1.13's limits, see rs_sockaddr and rs_is_if_addr); fd is -1.
 * At exit an atexit handler closes the endpoints and lets UCX free its state.
 *
 * Locks: rs_once_mtx (rs_the and the flag that one thread is making it),
 * then x->mtx (the lists of connections and listeners, ids, the source
 * addresses being bound, a connection's lsn), then l->mtx (a listener's
 * queues), then c->mtx (a connection's state); never taken in the other
 * order. UCX runs our callbacks under its worker lock and they take x->mtx,
 * l->mtx and c->mtx, so no lock of ours is ever held across a UCX call: the
 * context is made with rs_once_mtx released (others wait on rs_once_cv), and
 * a connect reserves its source address in x->resv instead of holding a
 * lock while the endpoint binds it. Connections are freed only by the
 * progress thread, so a UCX callback always finds its connection alive.
 */
#include "ucx.h"
#include "transport.h"
#include "err.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RS_AM_ID        0x5049 /* "PI" */
#define RS_WIN_DEFAULT  (4u << 20)
#define RS_WIN_MIN      4096u
#define RS_SEND_MAX     (1u << 20) /* one stream send at most */
#define RS_LINGER_MS    10000
#define RS_KEEPALIVE_MS 1000

enum { RS_HELLO = 1, RS_HELLO_ACK, RS_CREDIT, RS_FIN, RS_FINACK };

/* A control message (the data of one active message). dest: the
 * receiver's connection id (0 in HELLO: found by the endpoint). */
struct rs_msg {
    uint32_t type;
    uint32_t win;           /* HELLO, HELLO_ACK: the sender's ring capacity */
    uint64_t dest;          /* id of the connection at the receiver */
    uint64_t src;           /* id of the connection at the sender */
    uint64_t n;             /* CREDIT: bytes consumed; FIN: bytes sent */
    char addr[PIO_TP_ADDR]; /* HELLO: the listener as the client sees it;
                               HELLO_ACK: the client as the server sees it */
};

/* A source address a connect chose and is binding (in ucp_ep_create). */
struct rs_resv {
    struct sockaddr_storage ss;
    struct rs_resv *next;
};

struct rs_ctx {
    struct pio_ucx *_Atomic u; /* NULL once torn down at exit (a late wake is then none) */
    pthread_mutex_t mtx;       /* conns, lsns, next_id, resv, every c->lsn */
    struct pio_tp_conn *conns;
    struct pio_tp_listener *lsns;
    uint64_t next_id;
    struct rs_resv *resv; /* on the stacks of the connects that hold them */
    pid_t pid;            /* the process that made it */
    int dead;             /* torn down at exit */
};

struct pio_tp_listener {
    struct rs_ctx *x;
    struct pio_tp_listener *next; /* x->lsns */
    ucp_listener_h ul;
    size_t win; /* ring capacity of accepted connections (listen's rcvbuf) */
    char addr[PIO_TP_ADDR];
    pthread_mutex_t mtx; /* everything below */
    pthread_cond_t cv;
    int down, closed, busy;
    ucp_conn_request_h *reqs; /* from the conn handler, for the progress thread */
    size_t nreq, capreq;
    struct pio_tp_conn *q, **qtail; /* open, waiting for accept */
};

struct pio_tp_conn {
    struct rs_ctx *x;
    struct pio_tp_conn *prev, *next; /* x->conns */
    struct pio_tp_conn *qnext;       /* l->q */
    struct pio_tp_listener *lsn;     /* server side until accepted (x->mtx) */
    uint64_t id;
    ucp_ep_h ep;
    int server;
    pthread_mutex_t mtx; /* everything below */
    pthread_cond_t cv;
    int open;   /* hello exchanged: peer_id, peer_win known */
    int failed; /* UCX reported the endpoint lost */
    ucs_status_t fail_st;
    int shut, app_closed, abandon;
    int peer_fin;
    uint64_t fin_n;
    int send_hello_ack, fin_sent, finack_sent, finack_got;
    int ep_closing, ep_closed;
    int rx_posted, sends; /* UCX requests in flight that point into us */
    uint8_t *ring;
    size_t cap;
    uint64_t rx_got, rx_read, credit_sent;
    uint64_t tx_posted, tx_credit, peer_win, peer_id;
    struct timespec linger_end;
    char local[PIO_TP_ADDR], remote[PIO_TP_ADDR], seen[PIO_TP_ADDR];
};

/* ---- addresses ---- */

static int rs_sockaddr(const char *addr, int port, struct sockaddr_storage *ss, socklen_t *len)
{
    int rc = pio_tp_sockaddr(addr, port, ss, len);
    /* IPv6: well formed, but UCX 1.13 cannot carry it (its tcp transport
     * overflows a sockaddr_in with the peer's IPv6 address, and its async
     * layer asserts without tcp), so it is refused as an unusable address. */
    return rc == PIO_OK && ss->ss_family != AF_INET ? PIO_EADDR : rc;
}

/* Whether ss's address is one an interface has exactly: UCX 1.13's
 * connection manager names the interface of a connection's local address
 * (ucs_sockaddr_get_ifname) and stalls when none has it, though the kernel
 * lets a socket bind any 127/8 address. */
static int rs_is_if_addr(const struct sockaddr_storage *ss)
{
    struct ifaddrs *all;
    int found = 0;
    if (getifaddrs(&all) != 0)
        return 1; /* cannot tell: let UCX try */
    for (struct ifaddrs *i = all; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != ss->ss_family)
            continue;
        if (ss->ss_family == AF_INET)
            found = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr ==
                    ((const struct sockaddr_in *)ss)->sin_addr.s_addr;
        else
            found = memcmp(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
                           &((const struct sockaddr_in6 *)ss)->sin6_addr, 16) == 0;
    }
    freeifaddrs(all);
    return found;
}

static int rs_port_of(const struct sockaddr_storage *ss)
{
    return ss->ss_family == AF_INET ? ntohs(((const struct sockaddr_in *)ss)->sin_port)
                                    : ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
}

static void rs_set_port(struct sockaddr_storage *ss, int port)
{
    if (ss->ss_family == AF_INET)
        ((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
}

/* Whether a socket could bind ss now (no SO_REUSEADDR: a port anyone holds,
 * listening, connected or in TIME_WAIT, is refused). The source port the
 * connection manager then binds is chosen this way, reserved in x->resv. */
static int rs_can_bind(const struct sockaddr_storage *ss, socklen_t sl, int *err)
{
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *err = errno;
        return 0;
    }
    int ok = bind(fd, (const struct sockaddr *)ss, sl) == 0;
    *err = ok ? 0 : errno;
    close(fd);
    return ok;
}

/* ---- time ---- */

static struct timespec rs_deadline(int ms)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

static long rs_ms_left(const struct timespec *end)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long)(end->tv_sec - now.tv_sec) * 1000 + (end->tv_nsec - now.tv_nsec) / 1000000L;
}

static void rs_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}

/* ---- the context ---- */

static pthread_mutex_t rs_once_mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rs_once_cv = PTHREAD_COND_INITIALIZER;
static struct rs_ctx *rs_the;
static int rs_making; /* a thread is making rs_the, without rs_once_mtx */
static int rs_atfork_done;

static int rs_atexit_done;

/* At exit: close every endpoint and listener, stop the progress thread and
 * let UCX free its state (so leak checkers see nothing of it). Our own
 * structures stay (a thread still blocked in recv may sleep on them); calls
 * after this fail with PIO_ECLOSED. */
static void rs_atexit(void)
{
    pthread_mutex_lock(&rs_once_mtx);
    struct rs_ctx *x = rs_the;
    int mine = x && x->pid == getpid() && !rs_making;
    pthread_mutex_unlock(&rs_once_mtx);
    if (!mine)
        return;
    pthread_mutex_lock(&x->mtx);
    if (x->dead) { /* once */
        pthread_mutex_unlock(&x->mtx);
        return;
    }
    x->dead = 1;
    size_t nl = 0;
    for (struct pio_tp_listener *l = x->lsns; l; l = l->next) {
        pthread_mutex_lock(&l->mtx);
        l->closed = l->down = 1;
        pthread_cond_broadcast(&l->cv);
        pthread_mutex_unlock(&l->mtx);
        nl++;
    }
    for (struct pio_tp_conn *c = x->conns; c; c = c->next) {
        pthread_mutex_lock(&c->mtx);
        c->shut = 1;
        c->abandon = 1; /* the progress thread force-closes the endpoint */
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mtx);
    }
    /* the listeners' UCX handles, destroyed below with no lock held */
    ucp_listener_h *uls = nl ? calloc(nl, sizeof(*uls)) : NULL;
    size_t k = 0;
    for (struct pio_tp_listener *l = x->lsns; l && uls; l = l->next)
        uls[k++] = l->ul;
    pthread_mutex_unlock(&x->mtx);
    for (int i = 0; i < 100; i++) { /* up to a second for the closes */
        int open = 0;
        pthread_mutex_lock(&x->mtx);
        for (struct pio_tp_conn *c = x->conns; c; c = c->next) {
            pthread_mutex_lock(&c->mtx);
            open += c->ep && !c->ep_closed;
            pthread_mutex_unlock(&c->mtx);
        }
        pthread_mutex_unlock(&x->mtx);
        if (!open)
            break;
        pio_ucx_wake(x->u);
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    if (uls || nl == 0) { /* without the list, UCX's state stays: no harm at exit */
        for (size_t i = 0; i < k; i++)
            ucp_listener_destroy(uls[i]);
        struct pio_ucx *u = x->u;
        x->u = NULL;
        pio_ucx_close(u);
    }
    free(uls);
}

static void rs_atfork_child(void)
{
    rs_the = NULL; /* the parent's worker has no thread here: start afresh */
    rs_making = 0;
    pthread_mutex_init(&rs_once_mtx, NULL);
    pthread_cond_init(&rs_once_cv, NULL);
}

static int rs_hook(void *arg);
static ucs_status_t rs_am_cb(void *arg, const void *header, size_t header_length, void *data,
                             size_t length, const ucp_am_recv_param_t *param);

static int rs_get(struct rs_ctx **xp)
{
    int rc = PIO_OK;
    pthread_mutex_lock(&rs_once_mtx);
    while (rs_making)
        pthread_cond_wait(&rs_once_cv, &rs_once_mtx);
    struct rs_ctx *x = rs_the;
    if (!x)
        rs_making = 1; /* ours to make, with the lock released */
    pthread_mutex_unlock(&rs_once_mtx);
    if (x) {
        pthread_mutex_lock(&x->mtx);
        rc = x->dead ? PIO_ECLOSED : PIO_OK; /* dead: the process is exiting */
        pthread_mutex_unlock(&x->mtx);
        goto done;
    }
    x = calloc(1, sizeof(*x));
    PIO_CHECK(!x, rc, PIO_ENOMEM, made);
    pthread_mutex_init(&x->mtx, NULL);
    x->next_id = 1;
    struct pio_ucx_cfg cfg = {
        .features = UCP_FEATURE_STREAM | UCP_FEATURE_AM,
        .hook = rs_hook,
        .hook_arg = x,
        .keepalive_ms = RS_KEEPALIVE_MS,
        .cm_one_device = 1, /* a connection's bytes take its own link only */
    };
    struct pio_ucx *u = NULL;
    PIO_TRY(pio_ucx_open(&cfg, &u), rc, free);
    x->u = u;
    ucp_am_handler_param_t ap = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                      UCP_AM_HANDLER_PARAM_FIELD_ARG,
        .id = RS_AM_ID,
        .cb = rs_am_cb,
        .arg = x,
    };
    PIO_CHECK(ucp_worker_set_am_recv_handler(pio_ucx_worker(x->u), &ap) != UCS_OK, rc, PIO_EIO,
              close);
    x->pid = getpid();
    goto made;
close:
    pio_ucx_close(x->u);
free:
    pthread_mutex_destroy(&x->mtx);
    free(x);
    x = NULL;
made:
    pthread_mutex_lock(&rs_once_mtx);
    rs_making = 0;
    rs_the = x;
    if (x && !rs_atfork_done)
        rs_atfork_done = pthread_atfork(NULL, NULL, rs_atfork_child) == 0;
    if (x && !rs_atexit_done)
        rs_atexit_done = atexit(rs_atexit) == 0;
    pthread_cond_broadcast(&rs_once_cv);
    pthread_mutex_unlock(&rs_once_mtx);
done:
    if (rc == PIO_OK)
        *xp = x;
    return rc;
}

/* ---- connections ---- */

static struct pio_tp_conn *rs_conn_new(struct rs_ctx *x, int server, size_t cap)
{
    struct pio_tp_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->cap = cap < RS_WIN_MIN ? RS_WIN_MIN : cap;
    c->ring = malloc(c->cap);
    if (!c->ring) {
        free(c);
        return NULL;
    }
    c->x = x;
    c->server = server;
    pthread_mutex_init(&c->mtx, NULL);
    rs_cond_init(&c->cv);
    strcpy(c->local, "?");
    strcpy(c->remote, "?");
    pthread_mutex_lock(&x->mtx);
    c->id = x->next_id++;
    c->next = x->conns;
    if (x->conns)
        x->conns->prev = c;
    x->conns = c;
    pthread_mutex_unlock(&x->mtx);
    return c;
}

/* Progress thread only (or a connection UCX never saw). */
static void rs_conn_free(struct pio_tp_conn *c)
{
    struct rs_ctx *x = c->x;
    pthread_mutex_lock(&x->mtx);
    if (c->prev)
        c->prev->next = c->next;
    else
        x->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&x->mtx);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mtx);
    free(c->ring);
    free(c);
}

/* Find a connection by id (dest != 0) or by endpoint; x->mtx held. */
static struct pio_tp_conn *rs_find(struct rs_ctx *x, uint64_t id, ucp_ep_h ep)
{
    for (struct pio_tp_conn *c = x->conns; c; c = c->next)
        if (id ? c->id == id : (c->ep == ep && c->server))
            return c;
    return NULL;
}

static void rs_am_done(void *request, ucs_status_t status, void *user_data)
{
    (void)status;
    free(user_data);
    ucp_request_free(request);
}

/* Send a control message on c's endpoint (no lock held). */
static void rs_send_ctl(struct pio_tp_conn *c, uint32_t type, uint64_t n, const char *addr)
{
    struct rs_msg *m = calloc(1, sizeof(*m));
    if (!m)
        return;
    m->type = type;
    m->win = (uint32_t)c->cap;
    m->dest = c->peer_id;
    m->src = c->id;
    m->n = n;
    if (addr)
        snprintf(m->addr, sizeof(m->addr), "%s", addr);
    ucp_request_param_t p = {
        .op_attr_mask =
            UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS,
        .cb.send = rs_am_done,
        .user_data = m,
        .flags = type == RS_HELLO ? UCP_AM_SEND_FLAG_REPLY : 0,
    };
    ucs_status_ptr_t r = ucp_am_send_nbx(c->ep, RS_AM_ID, NULL, 0, m, sizeof(*m), &p);
    if (r == NULL || UCS_PTR_IS_ERR(r))
        free(m);
}

/* Control messages (progress thread, UCX's lock held). */
static ucs_status_t rs_am_cb(void *arg, const void *header, size_t header_length, void *data,
                             size_t length, const ucp_am_recv_param_t *param)
{
    struct rs_ctx *x = arg;
    struct rs_msg m;
    (void)header;
    (void)header_length;
    if (length != sizeof(m) || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV))
        return UCS_OK; /* not ours: ignore */
    memcpy(&m, data, sizeof(m));
    m.addr[sizeof(m.addr) - 1] = '\0';
    int hello = m.type == RS_HELLO;
    ucp_ep_h rep = (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ? param->reply_ep : NULL;
    if (hello && !rep)
        return UCS_OK;
    pthread_mutex_lock(&x->mtx);
    struct pio_tp_conn *c = rs_find(x, hello ? 0 : m.dest, rep);
    if (!c) {
        pthread_mutex_unlock(&x->mtx);
        return UCS_OK;
    }
    struct pio_tp_listener *l = hello ? c->lsn : NULL;
    if (l)
        pthread_mutex_lock(&l->mtx);
    pthread_mutex_lock(&c->mtx);
    switch (m.type) {
    case RS_HELLO:
        if (!c->open) {
            c->peer_id = m.src;
            c->peer_win = m.win;
            if (m.addr[0])
                snprintf(c->seen, sizeof(c->seen), "%s", m.addr);
            c->open = 1;
            c->send_hello_ack = 1;
            if (l && !l->closed) { /* now accept may return it */
                c->qnext = NULL;
                *l->qtail = c;
                l->qtail = &c->qnext;
                pthread_cond_broadcast(&l->cv);
            }
        }
        break;
    case RS_HELLO_ACK:
        if (!c->open) {
            c->peer_id = m.src;
            c->peer_win = m.win;
            snprintf(c->seen, sizeof(c->seen), "%s", m.addr);
            c->open = 1;
        }
        break;
    case RS_CREDIT:
        if (m.n > c->tx_credit)
            c->tx_credit = m.n;
        break;
    case RS_FIN:
        c->peer_fin = 1;
        c->fin_n = m.n;
        break;
    case RS_FINACK: c->finack_got = 1; break;
    default: break;
    }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mtx);
    if (l)
        pthread_mutex_unlock(&l->mtx);
    pthread_mutex_unlock(&x->mtx);
    return UCS_OK;
}

static void rs_ep_err(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    struct pio_tp_conn *c = arg;
    (void)ep;
    pthread_mutex_lock(&c->mtx);
    if (!c->failed) {
        c->failed = 1;
        c->fail_st = status;
    }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mtx);
}

static void rs_recv_cb(void *request, ucs_status_t status, size_t length, void *user_data)
{
    struct pio_tp_conn *c = user_data;
    ucp_request_free(request);
    pthread_mutex_lock(&c->mtx);
    c->rx_posted = 0;
    if (status == UCS_OK)
        c->rx_got += length;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mtx);
}

static void rs_close_cb(void *request, ucs_status_t status, void *user_data)
{
    struct pio_tp_conn *c = user_data;
    (void)status;
    ucp_request_free(request);
    pthread_mutex_lock(&c->mtx);
    c->ep_closed = 1;
    pthread_mutex_unlock(&c->mtx);
}

/* Post the ring's free run as a stream receive (progress thread). */
static void rs_post_recv(struct pio_tp_conn *c, uint8_t *at, size_t len)
{
    for (;;) {
        size_t got = 0;
        ucp_request_param_t p = {
            .op_attr_mask =
                UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS,
            .cb.recv_stream = rs_recv_cb,
            .user_data = c,
            .flags = 0, /* not WAITALL: whatever is there, up to len */
        };
        ucs_status_ptr_t r = ucp_stream_recv_nbx(c->ep, at, len, &got, &p);
        if (r != NULL && !UCS_PTR_IS_ERR(r))
            return; /* rs_recv_cb clears rx_posted */
        pthread_mutex_lock(&c->mtx);
        c->rx_posted = 0;
        if (r == NULL)
            c->rx_got += got;
        pthread_cond_broadcast(&c->cv);
        /* more at once: go on while the ring has room */
        size_t used = (size_t)(c->rx_got - c->rx_read), off = (size_t)(c->rx_got % c->cap);
        int again = r == NULL && got > 0 && used < c->cap && !c->failed && !c->ep_closing;
        if (again) {
            c->rx_posted = 1;
            at = c->ring + off;
            len = c->cap - used < c->cap - off ? c->cap - used : c->cap - off;
        }
        pthread_mutex_unlock(&c->mtx);
        if (!again)
            return;
    }
}

/* One connection's chores (progress thread). Returns 1 when c was freed.
 * *ms: lowered to when it needs a look again. */
static int rs_conn_work(struct pio_tp_conn *c, long *ms)
{
    pthread_mutex_lock(&c->mtx);
    if (c->ep_closed && !c->rx_posted && c->sends == 0) {
        pthread_mutex_unlock(&c->mtx);
        rs_conn_free(c);
        return 1;
    }
    if (!c->ep || c->ep_closing) {
        pthread_mutex_unlock(&c->mtx);
        return 0;
    }
    /* what to do, decided under the lock, done after it */
    uint8_t *rx_at = NULL;
    size_t rx_len = 0;
    size_t used = (size_t)(c->rx_got - c->rx_read);
    if (!c->rx_posted && !c->failed && used < c->cap) {
        size_t off = (size_t)(c->rx_got % c->cap);
        rx_at = c->ring + off;
        rx_len = c->cap - used < c->cap - off ? c->cap - used : c->cap - off;
        c->rx_posted = 1;
    }
    int hello_ack = c->send_hello_ack && !c->failed;
    c->send_hello_ack = 0;
    char seen[PIO_TP_ADDR];
    snprintf(seen, sizeof(seen), "%s", c->remote);
    uint64_t credit = 0;
    int send_credit = c->open && !c->failed && c->rx_read - c->credit_sent >= c->cap / 4;
    if (send_credit)
        credit = c->credit_sent = c->rx_read;
    int fin = c->open && !c->failed && (c->shut || c->app_closed) && !c->fin_sent;
    uint64_t fin_n = c->tx_posted;
    if (fin)
        c->fin_sent = 1;
    int finack = c->peer_fin && !c->failed && !c->finack_sent && c->rx_got >= c->fin_n;
    if (finack)
        c->finack_sent = 1;
    int close_ep = 0, force = 1;
    if (c->abandon || (c->app_closed && (!c->open || c->failed))) {
        close_ep = 1;
    } else if (c->app_closed && c->fin_sent && (c->finack_got || rs_ms_left(&c->linger_end) <= 0)) {
        close_ep = 1;
        force = 0;
    } else if (c->app_closed) {
        long left = rs_ms_left(&c->linger_end);
        if (left < *ms)
            *ms = left < 10 ? 10 : left;
    }
    if (close_ep)
        c->ep_closing = 1;
    pthread_mutex_unlock(&c->mtx);

    if (hello_ack)
        rs_send_ctl(c, RS_HELLO_ACK, 0, seen);
    if (send_credit)
        rs_send_ctl(c, RS_CREDIT, credit, NULL);
    if (finack)
        rs_send_ctl(c, RS_FINACK, 0, NULL);
    if (fin)
        rs_send_ctl(c, RS_FIN, fin_n, NULL);
    if (rx_at)
        rs_post_recv(c, rx_at, rx_len);
    if (close_ep) {
        ucp_request_param_t p = {
            .op_attr_mask =
                UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS,
            .cb.send = rs_close_cb,
            .user_data = c,
            .flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0,
        };
        ucs_status_ptr_t r = ucp_ep_close_nbx(c->ep, &p);
        if (r == NULL || UCS_PTR_IS_ERR(r)) {
            pthread_mutex_lock(&c->mtx);
            c->ep_closed = 1;
            pthread_mutex_unlock(&c->mtx);
        }
        *ms = 0;
    }
    return 0;
}

/* A listener's new connection requests (progress thread). */
static void rs_accept_reqs(struct rs_ctx *x, struct pio_tp_listener *l, ucp_conn_request_h *reqs,
                           size_t n, int reject)
{
    for (size_t i = 0; i < n; i++) {
        ucp_conn_request_attr_t qa = {.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR};
        struct pio_tp_conn *c = NULL;
        if (reject || ucp_conn_request_query(reqs[i], &qa) != UCS_OK ||
            !(c = rs_conn_new(x, 1, l->win))) {
            ucp_listener_reject(l->ul, reqs[i]);
            continue;
        }
        pio_tp_fmt(&qa.client_address, c->remote);
        snprintf(c->local, sizeof(c->local), "%s", l->addr);
        ucp_ep_params_t p = {
            .field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                          UCP_EP_PARAM_FIELD_ERR_HANDLER,
            .conn_request = reqs[i],
            .err_mode = UCP_ERR_HANDLING_MODE_PEER,
            .err_handler = {.cb = rs_ep_err, .arg = c},
        };
        ucp_ep_h ep;
        if (ucp_ep_create(pio_ucx_worker(x->u), &p, &ep) != UCS_OK) {
            rs_conn_free(c);
            continue;
        }
        pthread_mutex_lock(&x->mtx);
        c->lsn = l;
        pthread_mutex_lock(&c->mtx);
        c->ep = ep;
        pthread_mutex_unlock(&c->mtx);
        pthread_mutex_unlock(&x->mtx);
    }
}

/* The progress thread's hook: listeners' requests, then every connection. */
static int rs_hook(void *arg)
{
    struct rs_ctx *x = arg;
    long ms = 1000000; /* none */
    for (;;) {         /* one listener with requests at a time, x->mtx not held over UCX */
        pthread_mutex_lock(&x->mtx);
        struct pio_tp_listener *l = x->lsns;
        ucp_conn_request_h *reqs = NULL;
        size_t n = 0;
        int reject = 0;
        for (; l; l = l->next) {
            pthread_mutex_lock(&l->mtx);
            if (l->nreq > 0 && !l->busy) {
                reqs = l->reqs;
                n = l->nreq;
                reject = l->closed || l->down;
                l->reqs = NULL;
                l->nreq = l->capreq = 0;
                l->busy = 1;
                pthread_mutex_unlock(&l->mtx);
                break;
            }
            pthread_mutex_unlock(&l->mtx);
        }
        pthread_mutex_unlock(&x->mtx);
        if (!l)
            break;
        rs_accept_reqs(x, l, reqs, n, reject);
        free(reqs);
        pthread_mutex_lock(&l->mtx);
        l->busy = 0;
        pthread_cond_broadcast(&l->cv);
        pthread_mutex_unlock(&l->mtx);
    }
    /* connections: walk by id, since a step may free the one in hand */
    uint64_t after = 0;
    for (;;) {
        pthread_mutex_lock(&x->mtx);
        struct pio_tp_conn *c = NULL;
        for (struct pio_tp_conn *k = x->conns; k; k = k->next)
            if (k->id > after && (!c || k->id < c->id))
                c = k;
        pthread_mutex_unlock(&x->mtx);
        if (!c)
            break;
        after = c->id;
        rs_conn_work(c, &ms);
    }
    return ms >= 1000000 ? -1 : (int)ms;
}

static void rs_conn_handler(ucp_conn_request_h req, void *arg)
{
    struct pio_tp_listener *l = arg;
    pthread_mutex_lock(&l->mtx);
    if (l->closed) {
        pthread_mutex_unlock(&l->mtx);
        ucp_listener_reject(l->ul, req);
        return;
    }
    if (l->nreq == l->capreq) {
        size_t cap = l->capreq ? l->capreq * 2 : 8;
        ucp_conn_request_h *r = realloc(l->reqs, cap * sizeof(*r));
        if (!r) {
            pthread_mutex_unlock(&l->mtx);
            ucp_listener_reject(l->ul, req);
            return;
        }
        l->reqs = r;
        l->capreq = cap;
    }
    l->reqs[l->nreq++] = req;
    pthread_mutex_unlock(&l->mtx);
}

/* ---- the ops ---- */

static int rs_listen(const char *addr, int port, const struct pio_tp_opts *o,
                     struct pio_tp_listener **lp, int *port_out)
{
    int rc = PIO_OK;
    struct sockaddr_storage ss;
    socklen_t sl;
    struct rs_ctx *x;
    PIO_TRY(rs_sockaddr(addr, port, &ss, &sl), rc, out);
    PIO_TRY(rs_get(&x), rc, out);
    struct pio_tp_listener *l = calloc(1, sizeof(*l));
    PIO_CHECK(!l, rc, PIO_ENOMEM, out);
    l->x = x;
    l->win = o && o->rcvbuf > 0 ? (size_t)o->rcvbuf : RS_WIN_DEFAULT;
    l->qtail = &l->q;
    pthread_mutex_init(&l->mtx, NULL);
    rs_cond_init(&l->cv);
    ucp_listener_params_t p = {
        .field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER,
        .sockaddr = {.addr = (const struct sockaddr *)&ss, .addrlen = sl},
        .conn_handler = {.cb = rs_conn_handler, .arg = l},
    };
    PIO_CHECK(ucp_listener_create(pio_ucx_worker(x->u), &p, &l->ul) != UCS_OK, rc, PIO_EADDR, free);
    ucp_listener_attr_t la = {.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR};
    PIO_CHECK(ucp_listener_query(l->ul, &la) != UCS_OK, rc, PIO_EIO, destroy);
    rs_set_port(&ss, rs_port_of(&la.sockaddr));
    pio_tp_fmt(&ss, l->addr);
    if (port_out)
        *port_out = rs_port_of(&la.sockaddr);
    pthread_mutex_lock(&x->mtx);
    l->next = x->lsns;
    x->lsns = l;
    pthread_mutex_unlock(&x->mtx);
    *lp = l;
    return PIO_OK;
destroy:
    ucp_listener_destroy(l->ul);
free:
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mtx);
    free(l);
out:
    return rc;
}

static int rs_accept(struct pio_tp_listener *l, const struct pio_tp_opts *o,
                     struct pio_tp_conn **cp)
{
    int timeout = o ? o->timeout_ms : -1, rc = PIO_OK;
    struct timespec end = rs_deadline(timeout < 0 ? 0 : timeout);
    pthread_mutex_lock(&l->mtx);
    while (!l->down && !l->q && rc == PIO_OK) {
        if (timeout < 0)
            pthread_cond_wait(&l->cv, &l->mtx);
        else if (pthread_cond_timedwait(&l->cv, &l->mtx, &end) == ETIMEDOUT)
            rc = PIO_ETIMEDOUT;
    }
    struct pio_tp_conn *c = NULL;
    if (l->down) {
        rc = PIO_ECLOSED;
    } else if (l->q) {
        c = l->q;
        l->q = c->qnext;
        if (!l->q)
            l->qtail = &l->q;
        rc = PIO_OK;
    }
    pthread_mutex_unlock(&l->mtx);
    if (!c)
        return rc;
    pthread_mutex_lock(&l->x->mtx);
    c->lsn = NULL;
    pthread_mutex_unlock(&l->x->mtx);
    pthread_mutex_lock(&c->mtx);
    if (c->seen[0] && strncmp(l->addr, "0.0.0.0:", 8) != 0 && strncmp(l->addr, "[::]:", 5) != 0)
        c->seen[0] = '\0';
    if (c->seen[0]) /* a wildcard listener: the address the client reached */
        snprintf(c->local, sizeof(c->local), "%s", c->seen);
    pthread_mutex_unlock(&c->mtx);
    *cp = c;
    return PIO_OK;
}

static void rs_listener_shutdown(struct pio_tp_listener *l)
{
    pthread_mutex_lock(&l->mtx);
    l->down = 1;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mtx);
}

static void rs_app_close(struct pio_tp_conn *c);

static void rs_listener_close(struct pio_tp_listener *l)
{
    if (!l)
        return;
    struct rs_ctx *x = l->x;
    /* no more requests queued; wait for the progress thread to reject the
     * queued ones, then the port is released at once */
    pthread_mutex_lock(&l->mtx);
    l->closed = l->down = 1;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mtx);
    pthread_mutex_lock(&x->mtx);
    int dead = x->dead;
    pthread_mutex_unlock(&x->mtx);
    if (dead) /* after exit's teardown: UCX is gone, only our memory is left */
        return;
    pthread_mutex_lock(&l->mtx);
    while (l->busy || l->nreq > 0) {
        pthread_mutex_unlock(&l->mtx);
        pio_ucx_wake(x->u);
        pthread_mutex_lock(&l->mtx);
        if (l->busy || l->nreq > 0) {
            struct timespec end = rs_deadline(50);
            pthread_cond_timedwait(&l->cv, &l->mtx, &end);
        }
    }
    pthread_mutex_unlock(&l->mtx);
    ucp_listener_destroy(l->ul);
    /* connections nobody accepted: closed like any other */
    for (;;) {
        pthread_mutex_lock(&x->mtx);
        struct pio_tp_conn *c = x->conns;
        while (c && c->lsn != l)
            c = c->next;
        if (c)
            c->lsn = NULL;
        pthread_mutex_unlock(&x->mtx);
        if (!c)
            break;
        rs_app_close(c);
    }
    pthread_mutex_lock(&x->mtx);
    for (struct pio_tp_listener **pp = &x->lsns; *pp; pp = &(*pp)->next)
        if (*pp == l) {
            *pp = l->next;
            break;
        }
    pthread_mutex_unlock(&x->mtx);
    free(l->reqs);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mtx);
    free(l);
}

/* Whether a connect in progress has reserved source address ss; x->mtx held. */
static int rs_reserved(struct rs_ctx *x, const struct sockaddr_storage *ss)
{
    for (struct rs_resv *r = x->resv; r; r = r->next) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&r->ss;
        const struct sockaddr_in *b = (const struct sockaddr_in *)ss;
        if (r->ss.ss_family == AF_INET && ss->ss_family == AF_INET &&
            a->sin_addr.s_addr == b->sin_addr.s_addr && a->sin_port == b->sin_port)
            return 1; /* IPv4 only, as rs_sockaddr */
    }
    return 0;
}

/* How a failed connect reads: refused, unless it was a time-out. */
static int rs_connect_err(ucs_status_t st)
{
    if (st == UCS_ERR_TIMED_OUT || st == UCS_ERR_ENDPOINT_TIMEOUT)
        return PIO_ETIMEDOUT;
    return PIO_EREFUSED;
}

static int rs_connect(const char *local, const char *remote, int port, const struct pio_tp_opts *o,
                      struct pio_tp_conn **cp)
{
    int rc = PIO_OK, err = 0;
    struct sockaddr_storage rs, ls;
    socklen_t rl, ll = 0;
    struct rs_ctx *x;
    int lo = o ? o->src_port_lo : 0, hi = o ? o->src_port_hi : 0;
    PIO_TRY(rs_sockaddr(remote, port, &rs, &rl), rc, out);
    if (local || lo > 0)
        PIO_TRY(rs_sockaddr(local, 0, &ls, &ll), rc, out);
    PIO_CHECK(ll && ls.ss_family != rs.ss_family, rc, PIO_EADDR, out);
    PIO_CHECK(lo < 0 || hi > 65535 || (lo > 0 && hi < lo), rc, PIO_EADDR, out);
    PIO_TRY(rs_get(&x), rc, out);
    struct pio_tp_conn *c =
        rs_conn_new(x, 0, o && o->rcvbuf > 0 ? (size_t)o->rcvbuf : RS_WIN_DEFAULT);
    PIO_CHECK(!c, rc, PIO_ENOMEM, out);
    pio_tp_fmt(&rs, c->remote);

    PIO_CHECK(ll && !rs_is_if_addr(&ls), rc, PIO_EADDR, free);
    struct rs_resv me = {.next = NULL};
    if (ll) { /* choose the source address, and reserve it until UCX has bound it */
        pthread_mutex_lock(&x->mtx);
        int p = lo > 0 ? lo : 0, last = lo > 0 ? hi : 0, ok = 0;
        for (; p <= last && !ok; p++) { /* lo > 0: the first port of the range nobody holds */
            rs_set_port(&ls, p);
            if (p > 0 && rs_reserved(x, &ls))
                continue;
            ok = rs_can_bind(&ls, ll, &err);
            if (!ok && err != EADDRINUSE)
                break;
        }
        if (ok) {
            me.ss = ls;
            me.next = x->resv;
            x->resv = &me;
        }
        pthread_mutex_unlock(&x->mtx);
        PIO_CHECK(!ok, rc, PIO_EADDR, free);
    }
    ucp_ep_params_t p = {
        .field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER |
                      (ll ? UCP_EP_PARAM_FIELD_LOCAL_SOCK_ADDR : 0),
        .flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER,
        .sockaddr = {.addr = (const struct sockaddr *)&rs, .addrlen = rl},
        .local_sockaddr = {.addr = (const struct sockaddr *)&ls, .addrlen = ll},
        .err_mode = UCP_ERR_HANDLING_MODE_PEER,
        .err_handler = {.cb = rs_ep_err, .arg = c},
    };
    ucp_ep_h ep;
    ucs_status_t st = ucp_ep_create(pio_ucx_worker(x->u), &p, &ep);
    if (ll) { /* bound now (or failed): the next connect's rs_can_bind sees it */
        pthread_mutex_lock(&x->mtx);
        for (struct rs_resv **pp = &x->resv; *pp; pp = &(*pp)->next)
            if (*pp == &me) {
                *pp = me.next;
                break;
            }
        pthread_mutex_unlock(&x->mtx);
    }
    PIO_CHECK(st != UCS_OK, rc, st == UCS_ERR_UNREACHABLE ? PIO_EREFUSED : PIO_EADDR, free);
    pthread_mutex_lock(&c->mtx);
    c->ep = ep;
    pthread_mutex_unlock(&c->mtx);
    rs_send_ctl(c, RS_HELLO, 0, c->remote);
    pio_ucx_wake(x->u);

    int timeout = o ? o->timeout_ms : -1;
    struct timespec end = rs_deadline(timeout < 0 ? 0 : timeout);
    pthread_mutex_lock(&c->mtx);
    while (!c->open && !c->failed && rc == PIO_OK) {
        if (timeout < 0)
            pthread_cond_wait(&c->cv, &c->mtx);
        else if (pthread_cond_timedwait(&c->cv, &c->mtx, &end) == ETIMEDOUT)
            rc = PIO_ETIMEDOUT;
    }
    if (c->open && !c->failed)
        rc = PIO_OK;
    else if (c->failed)
        rc = rs_connect_err(c->fail_st);
    if (rc != PIO_OK)
        c->abandon = 1; /* the progress thread closes and frees it */
    pthread_mutex_unlock(&c->mtx);
    if (rc != PIO_OK) {
        pio_ucx_wake(x->u);
        return rc;
    }
    ucp_ep_attr_t ea = {.field_mask = UCP_EP_ATTR_FIELD_LOCAL_SOCKADDR};
    pthread_mutex_lock(&c->mtx);
    snprintf(c->local, sizeof(c->local), "%s", c->seen);
    pthread_mutex_unlock(&c->mtx);
    if (ucp_ep_query(ep, &ea) == UCS_OK && ea.local_sockaddr.ss_family != 0) {
        pthread_mutex_lock(&c->mtx);
        pio_tp_fmt(&ea.local_sockaddr, c->local);
        pthread_mutex_unlock(&c->mtx);
    }
    *cp = c;
    return PIO_OK;
free: /* UCX never saw it; the progress thread frees it (it may hold it now) */
    pthread_mutex_lock(&c->mtx);
    c->ep_closed = 1;
    pthread_mutex_unlock(&c->mtx);
    pio_ucx_wake(x->u);
out:
    return rc;
}

struct rs_send_op {
    struct pio_tp_conn *c;
    int pending, err;
};

static void rs_send_cb(void *request, ucs_status_t status, void *user_data)
{
    struct rs_send_op *op = user_data;
    struct pio_tp_conn *c = op->c;
    ucp_request_free(request);
    pthread_mutex_lock(&c->mtx);
    c->sends--;
    op->pending--;
    if (status != UCS_OK)
        op->err = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mtx); /* op may be gone from here on */
}

static int rs_sendv(struct pio_tp_conn *c, const struct iovec *iov, int n)
{
    struct rs_send_op op = {.c = c};
    int rc = PIO_OK;
    pthread_mutex_lock(&c->mtx);
    for (int i = 0; i < n && rc == PIO_OK; i++) {
        const uint8_t *base = iov[i].iov_base;
        size_t len = iov[i].iov_len, off = 0;
        while (off < len) {
            if (c->shut || c->failed || c->peer_fin || op.err) {
                rc = PIO_ECLOSED;
                break;
            }
            uint64_t out = c->tx_posted - c->tx_credit;
            if (!c->open || out >= c->peer_win) {
                pthread_cond_wait(&c->cv, &c->mtx);
                continue;
            }
            size_t k = len - off;
            if (k > c->peer_win - out)
                k = (size_t)(c->peer_win - out);
            if (k > RS_SEND_MAX)
                k = RS_SEND_MAX;
            c->tx_posted += k;
            c->sends++;
            op.pending++;
            pthread_mutex_unlock(&c->mtx);
            ucp_request_param_t p = {
                .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
                .cb.send = rs_send_cb,
                .user_data = &op,
            };
            ucs_status_ptr_t r = ucp_stream_send_nbx(c->ep, base + off, k, &p);
            if (r != NULL && !UCS_PTR_IS_ERR(r))
                pio_ucx_wake(c->x->u);
            pthread_mutex_lock(&c->mtx);
            if (r == NULL || UCS_PTR_IS_ERR(r)) {
                c->sends--;
                op.pending--;
                if (r != NULL)
                    op.err = 1;
            }
            off += k;
        }
    }
    while (op.pending > 0) /* UCX must be done with the caller's buffers */
        pthread_cond_wait(&c->cv, &c->mtx);
    if (rc == PIO_OK && op.err)
        rc = PIO_ECLOSED;
    pthread_mutex_unlock(&c->mtx);
    return rc;
}

static int rs_recv(struct pio_tp_conn *c, void *buf, size_t len)
{
    uint8_t *p = buf;
    size_t done = 0;
    int rc = PIO_OK, wake = 0;
    pthread_mutex_lock(&c->mtx);
    while (done < len) {
        size_t avail = (size_t)(c->rx_got - c->rx_read);
        if (c->shut) {
            rc = PIO_ECLOSED;
            break;
        }
        if (avail > 0) {
            size_t off = (size_t)(c->rx_read % c->cap), k = len - done;
            if (k > avail)
                k = avail;
            if (k > c->cap - off)
                k = c->cap - off;
            memcpy(p + done, c->ring + off, k);
            c->rx_read += k;
            done += k;
            if (c->rx_read - c->credit_sent >= c->cap / 4 || !c->rx_posted)
                wake = 1; /* credit to return, or room to receive into */
            continue;
        }
        if ((c->peer_fin && c->rx_got >= c->fin_n) || c->failed) {
            rc = PIO_ECLOSED;
            break;
        }
        if (wake) {
            pthread_mutex_unlock(&c->mtx);
            pio_ucx_wake(c->x->u);
            wake = 0;
            pthread_mutex_lock(&c->mtx);
            continue;
        }
        pthread_cond_wait(&c->cv, &c->mtx);
    }
    pthread_mutex_unlock(&c->mtx);
    if (wake)
        pio_ucx_wake(c->x->u);
    return rc;
}

static void rs_shutdown(struct pio_tp_conn *c)
{
    pthread_mutex_lock(&c->mtx);
    c->shut = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mtx);
    pio_ucx_wake(c->x->u);
}

/* Hand c to the progress thread: FIN, linger for FIN-ACK, close, free. */
static void rs_app_close(struct pio_tp_conn *c)
{
    struct rs_ctx *x = c->x; /* c may be freed as soon as the lock is released */
    pthread_mutex_lock(&c->mtx);
    c->shut = c->app_closed = 1;
    c->linger_end = rs_deadline(RS_LINGER_MS);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mtx);
    pio_ucx_wake(x->u);
}

static void rs_close(struct pio_tp_conn *c)
{
    if (c)
        rs_app_close(c);
}

static void rs_addrs(struct pio_tp_conn *c, char *local, char *remote)
{
    pthread_mutex_lock(&c->mtx);
    if (local)
        snprintf(local, PIO_TP_ADDR, "%s", c->local);
    if (remote)
        snprintf(remote, PIO_TP_ADDR, "%s", c->remote);
    pthread_mutex_unlock(&c->mtx);
}

/* No descriptor carries the bytes (UCX may use shared memory). */
static int rs_fd(struct pio_tp_conn *c)
{
    (void)c;
    return -1;
}

const struct pio_transport_ops pio_rdma_ops = {
    .name = "rdma",
    .caps = 0, /* IPv4 only (rs_sockaddr); no descriptor (rs_fd) */
    .listen = rs_listen,
    .accept = rs_accept,
    .listener_shutdown = rs_listener_shutdown,
    .listener_close = rs_listener_close,
    .connect = rs_connect,
    .sendv = rs_sendv,
    .recv = rs_recv,
    .shutdown = rs_shutdown,
    .close = rs_close,
    .addrs = rs_addrs,
    .fd = rs_fd,
};
