/* conformance.c - the transport conformance checks, written once against the ops table.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Each check takes the transport from its case state (pio_conf_setup looks
 * it up by name in the registry) and calls it only through
 * const struct pio_transport_ops *, so the same code runs over every stream
 * transport (nng's NUTS, libzmq's test_spec_*). What a check expects is the
 * contract written in transport/transport.h; where a check asks more
 * than the contract says (numeric addresses, ports in 0..65535), its comment
 * says so.
 *
 * Threads: a check that needs a blocked call or two directions at once runs
 * the transport calls in helper threads that only record what happened; the
 * cmocka assertions run on the case's own thread (cmocka's longjmp must not
 * cross threads). A helper thread still blocked when the check gives up is
 * left behind: each case is its own process (tests/run), so it dies with it.
 * SIGPIPE keeps its default action in every case, so a transport that lets
 * one through kills the case, which tests/run reports as a failure.
 * Network: the first setup in a process moves it into a network namespace
 * of its own (conf_netns), before any transport starts a thread (a
 * thread keeps the namespace it was born in).
 */
#include "conformance.h"
#include "pio.h"
#include "transport/transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define CONF_MIB        (1024 * 1024)
#define CONF_ACCEPT_MS  10000 /* accepts in helpers: a hang becomes a named failure */
#define CONF_PROMPT_S   1.0   /* "promptly": a blocked call returns within this */
#define CONF_BIG        (64 * CONF_MIB)
#define CONF_PORT_FIRST 20000 /* source-port ranges: below the kernel's ephemeral range */
#define CONF_PORT_LAST  32000
#define CONF_NLOCAL     5 /* chosen local addresses: conf_local(.., 0 .. CONF_NLOCAL-1) */

struct conf_ctx {
    const struct pio_transport_ops *t;
    const char *name;
    unsigned caps; /* what the instantiation expects (PIO_TP_CAP_*) */
};

/* ---- small tools --------------------------------------------------------- */

#define CONF_RC(expr, want)                                                                        \
    do {                                                                                           \
        int conf_rc_ = (expr);                                                                     \
        if (conf_rc_ != (want))                                                                    \
            fail_msg("%s: got %s (%s), want %s", #expr, PIO_Errname(conf_rc_),                     \
                     PIO_Strerror(conf_rc_), PIO_Errname(want));                                   \
    } while (0)

static const struct pio_transport_ops *conf_tp(void **state)
{
    return ((struct conf_ctx *)*state)->t;
}

static double conf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void conf_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* A chosen local address, which: 0 .. CONF_NLOCAL-1. conf_netns gives each
 * to an interface, in a namespace private to this process, so source ports chosen
 * here never meet those of another run (a sanitizer build's suite may run
 * at the same time). */
static void conf_local(char *out, size_t n, int which)
{
    snprintf(out, n, "127.64.0.%d", 1 + which);
}

/* The port of an "a.b.c.d:port" or "[v6]:port" address text, or -1. */
static int conf_port_of(const char *addr)
{
    const char *c = strrchr(addr, ':');
    return c ? atoi(c + 1) : -1;
}

/* The byte at offset i of test stream `seed`: depends on the position, so a
 * lost, doubled or reordered piece shows as a mismatch at its offset. */
static inline uint8_t conf_pat(unsigned seed, uint64_t i)
{
    uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull + seed;
    return (uint8_t)((x >> 29) ^ (x >> 47) ^ (i >> 12));
}

static void conf_fill(uint8_t *buf, size_t len, unsigned seed, uint64_t off)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = conf_pat(seed, off + i);
}

/* Offset of the first byte of buf that is not stream seed at off, or -1. */
static int64_t conf_mismatch(const uint8_t *buf, size_t len, unsigned seed, uint64_t off)
{
    for (size_t i = 0; i < len; i++)
        if (buf[i] != conf_pat(seed, off + i))
            return (int64_t)(off + i);
    return -1;
}

/* ---- threads ------------------------------------------------------------- */

static void conf_start(pthread_t *th, void *(*fn)(void *), void *arg)
{
    if (pthread_create(th, NULL, fn, arg) != 0)
        fail_msg("pthread_create failed");
}

/* Join th, failing the case if it is still running after limit seconds. */
static void conf_join(pthread_t th, double limit, const char *what)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = ts.tv_nsec + (long)((limit - (double)(long)limit) * 1e9);
    ts.tv_sec += (time_t)limit + ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    int e = pthread_timedjoin_np(th, NULL, &ts);
    if (e == ETIMEDOUT)
        fail_msg("%s: still blocked after %.1f s", what, limit);
    if (e != 0)
        fail_msg("%s: pthread_timedjoin_np: %s", what, strerror(e));
}

struct conf_accept {
    const struct pio_transport_ops *t;
    struct pio_tp_listener *l;
    struct pio_tp_opts o;
    struct pio_tp_conn *c;
    int rc;
    double t_end;
    atomic_int finished; /* set last: rc, c and t_end may be read once it is */
};

static void *conf_accept_main(void *arg)
{
    struct conf_accept *a = arg;
    a->rc = a->t->accept(a->l, &a->o, &a->c);
    a->t_end = conf_now();
    atomic_store(&a->finished, 1);
    return NULL;
}

/* One direction of a byte stream: a sender writes `total` bytes of stream
 * seed in sendv calls of `piece` bytes cut into `niov` iovecs; a receiver
 * reads them in pieces whose sizes cycle through an odd list, checking each
 * piece's position and the whole stream's XXH64. */
struct conf_stream {
    const struct pio_transport_ops *t;
    struct pio_tp_conn *c;
    unsigned seed;
    size_t total, piece;
    int niov;
    int rc;
    size_t done;
    int64_t bad_at; /* receiver: first wrong offset, or -1 */
    uint64_t hash;
    double t_end;
};

static void *conf_sender_main(void *arg)
{
    struct conf_stream *s = arg;
    uint8_t *buf = malloc(s->piece);
    XXH64_state_t *h = XXH64_createState();
    s->rc = buf && h ? PIO_OK : PIO_ENOMEM;
    if (h)
        XXH64_reset(h, 0);
    while (s->rc == PIO_OK && s->done < s->total) {
        size_t len = s->total - s->done < s->piece ? s->total - s->done : s->piece;
        conf_fill(buf, len, s->seed, s->done);
        XXH64_update(h, buf, len);
        struct iovec iov[16];
        int n = s->niov < 1 ? 1 : s->niov > 16 ? 16 : s->niov;
        size_t at = 0;
        for (int i = 0; i < n; i++) { /* uneven cuts: 1/2, 1/4, ... the rest last */
            size_t cut = i == n - 1 ? len - at : (len - at) / 2 + (size_t)(i % 3);
            if (cut > len - at)
                cut = len - at;
            iov[i].iov_base = buf + at;
            iov[i].iov_len = cut;
            at += cut;
        }
        s->rc = s->t->sendv(s->c, iov, n);
        if (s->rc == PIO_OK)
            s->done += len;
    }
    s->hash = h ? XXH64_digest(h) : 0;
    XXH64_freeState(h);
    free(buf);
    s->t_end = conf_now();
    return NULL;
}

static const size_t conf_odd[] = {1, 7, 4093, 65537, 3, 1000003, 262147, 13, 524309};

static void *conf_receiver_main(void *arg)
{
    struct conf_stream *s = arg;
    size_t cap = 1000003;
    uint8_t *buf = malloc(cap);
    XXH64_state_t *h = XXH64_createState();
    s->rc = buf && h ? PIO_OK : PIO_ENOMEM;
    s->bad_at = -1;
    if (h)
        XXH64_reset(h, 0);
    for (size_t k = 0; s->rc == PIO_OK && s->done < s->total; k++) {
        size_t len = conf_odd[k % (sizeof(conf_odd) / sizeof(conf_odd[0]))];
        if (len > s->total - s->done)
            len = s->total - s->done;
        s->rc = s->t->recv(s->c, buf, len);
        if (s->rc != PIO_OK)
            break;
        XXH64_update(h, buf, len);
        if (s->bad_at < 0)
            s->bad_at = conf_mismatch(buf, len, s->seed, s->done);
        s->done += len;
    }
    s->hash = h ? XXH64_digest(h) : 0;
    XXH64_freeState(h);
    free(buf);
    s->t_end = conf_now();
    return NULL;
}

/* What the receiver of one stream must have seen. */
static void conf_check_stream(const struct conf_stream *snd, const struct conf_stream *rcv,
                              const char *what)
{
    if (snd->rc != PIO_OK)
        fail_msg("%s: sendv failed after %zu bytes: %s", what, snd->done, PIO_Errname(snd->rc));
    if (rcv->rc != PIO_OK)
        fail_msg("%s: recv failed after %zu bytes: %s", what, rcv->done, PIO_Errname(rcv->rc));
    if (rcv->bad_at >= 0)
        fail_msg("%s: byte %lld arrived wrong (lost, doubled or out of order)", what,
                 (long long)rcv->bad_at);
    assert_int_equal(rcv->done, snd->total);
    if (snd->hash != rcv->hash)
        fail_msg("%s: checksum differs: sent %016llx, received %016llx", what,
                 (unsigned long long)snd->hash, (unsigned long long)rcv->hash);
}

/* ---- connection pairs ---------------------------------------------------- */

struct conf_pair {
    struct pio_tp_listener *l;
    struct pio_tp_conn *cli, *srv;
    int port;
};

/* Listen on 127.0.0.1 (any port), connect from local (NULL: any), accept.
 * The accept runs in a thread, so a transport whose connect waits for the
 * accept works too. o: options of both ends (NULL: defaults). */
static void conf_pair_open(const struct pio_transport_ops *t, const char *local,
                           const struct pio_tp_opts *o, struct conf_pair *p)
{
    struct pio_tp_opts dflt = {.timeout_ms = CONF_ACCEPT_MS};
    const struct pio_tp_opts *use = o ? o : &dflt;
    memset(p, 0, sizeof(*p));
    CONF_RC(t->listen("127.0.0.1", 0, use, &p->l, &p->port), PIO_OK);
    assert_true(p->port > 0 && p->port < 65536);
    struct conf_accept a = {.t = t, .l = p->l, .o = *use};
    a.o.timeout_ms = CONF_ACCEPT_MS;
    pthread_t th;
    conf_start(&th, conf_accept_main, &a);
    int rc = t->connect(local, "127.0.0.1", p->port, use, &p->cli);
    conf_join(th, CONF_ACCEPT_MS / 1000.0 + 2, "accept");
    if (rc != PIO_OK)
        fail_msg("connect from %s to 127.0.0.1:%d: %s", local ? local : "(any)", p->port,
                 PIO_Errname(rc));
    if (a.rc != PIO_OK)
        fail_msg("accept: %s", PIO_Errname(a.rc));
    p->srv = a.c;
}

static void conf_pair_close(const struct pio_transport_ops *t, struct conf_pair *p)
{
    if (p->cli)
        t->close(p->cli);
    if (p->srv)
        t->close(p->srv);
    if (p->l)
        t->listener_close(p->l);
    memset(p, 0, sizeof(*p));
}

/* Send len bytes of stream seed from c in one sendv. */
static int conf_send_pat(const struct pio_transport_ops *t, struct pio_tp_conn *c, size_t len,
                         unsigned seed, uint64_t off)
{
    uint8_t *buf = malloc(len ? len : 1);
    assert_non_null(buf);
    conf_fill(buf, len, seed, off);
    struct iovec iov = {buf, len};
    int rc = t->sendv(c, &iov, 1);
    free(buf);
    return rc;
}

/* Receive exactly len bytes on c and check they are stream seed at off. */
static void conf_recv_pat(const struct pio_transport_ops *t, struct pio_tp_conn *c, size_t len,
                          unsigned seed, uint64_t off)
{
    uint8_t *buf = malloc(len ? len : 1);
    assert_non_null(buf);
    CONF_RC(t->recv(c, buf, len), PIO_OK);
    int64_t bad = conf_mismatch(buf, len, seed, off);
    free(buf);
    if (bad >= 0)
        fail_msg("byte %lld of the stream arrived wrong", (long long)bad);
}

/* ---- the network namespace ---------------------------------------------- */

/* One rtnetlink request under construction, with nested attributes. */
struct conf_nlreq {
    union {
        struct nlmsghdr h;
        char buf[512];
    } u;
};

static void *conf_nl_put(struct conf_nlreq *r, unsigned short type, const void *data, size_t len)
{
    assert_true(NLMSG_ALIGN(r->u.h.nlmsg_len) + RTA_SPACE(len) <= sizeof(r->u.buf));
    struct rtattr *rta = (struct rtattr *)(r->u.buf + NLMSG_ALIGN(r->u.h.nlmsg_len));
    rta->rta_type = type;
    rta->rta_len = (unsigned short)RTA_LENGTH(len);
    if (data) /* else zeroes: a nested attribute's header, or its ifinfomsg */
        memcpy(RTA_DATA(rta), data, len);
    r->u.h.nlmsg_len = NLMSG_ALIGN(r->u.h.nlmsg_len) + RTA_ALIGN(rta->rta_len);
    return rta;
}

/* Close a nested attribute opened by conf_nl_put(r, type, NULL, 0). */
static void conf_nl_end(struct conf_nlreq *r, void *nest)
{
    ((struct rtattr *)nest)->rta_len = (unsigned short)(r->u.buf + r->u.h.nlmsg_len - (char *)nest);
}

/* Send r and read its acknowledgement: 0 or an errno. */
static int conf_nl_talk(int nl, struct conf_nlreq *r)
{
    r->u.h.nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
    if (send(nl, r->u.buf, r->u.h.nlmsg_len, 0) < 0)
        return errno;
    char buf[1024];
    ssize_t n = recv(nl, buf, sizeof(buf), 0);
    if (n < 0)
        return errno;
    struct nlmsghdr *h = (struct nlmsghdr *)buf;
    if ((size_t)n < NLMSG_LENGTH(sizeof(struct nlmsgerr)) || h->nlmsg_type != NLMSG_ERROR)
        return EPROTO;
    return -((struct nlmsgerr *)NLMSG_DATA(h))->error;
}

/* A veth pair NAME / NAMEp, both up. 0 or an errno. */
static int conf_veth_add(int nl, const char *name)
{
    struct conf_nlreq r;
    char peer[IFNAMSIZ + 1];
    snprintf(peer, sizeof(peer), "%.*sp", IFNAMSIZ - 2, name);
    memset(&r, 0, sizeof(r));
    r.u.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
    r.u.h.nlmsg_type = RTM_NEWLINK;
    r.u.h.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
    conf_nl_put(&r, IFLA_IFNAME, name, strlen(name) + 1);
    void *info = conf_nl_put(&r, IFLA_LINKINFO, NULL, 0);
    conf_nl_put(&r, IFLA_INFO_KIND, "veth", 5);
    void *data = conf_nl_put(&r, IFLA_INFO_DATA, NULL, 0);
    void *vp = conf_nl_put(&r, 1 /* VETH_INFO_PEER */, NULL, sizeof(struct ifinfomsg));
    conf_nl_put(&r, IFLA_IFNAME, peer, strlen(peer) + 1);
    conf_nl_end(&r, vp);
    conf_nl_end(&r, data);
    conf_nl_end(&r, info);
    int e = conf_nl_talk(nl, &r);
    for (int i = 0; i < 2 && e == 0; i++) {
        memset(&r, 0, sizeof(r));
        r.u.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
        r.u.h.nlmsg_type = RTM_NEWLINK;
        struct ifinfomsg *ifi = NLMSG_DATA(&r.u.h);
        ifi->ifi_index = (int)if_nametoindex(i == 0 ? name : peer);
        ifi->ifi_flags = IFF_UP;
        ifi->ifi_change = IFF_UP;
        e = ifi->ifi_index > 0 ? conf_nl_talk(nl, &r) : ENODEV;
    }
    return e;
}

/* Add addr/32 to the interface called dev. 0 or an errno. */
static int conf_addr_add(int nl, const char *dev, const char *addr)
{
    struct conf_nlreq r;
    struct in_addr in;
    int ifindex = (int)if_nametoindex(dev);
    if (ifindex <= 0)
        return ENODEV;
    if (inet_pton(AF_INET, addr, &in) != 1)
        return EINVAL;
    memset(&r, 0, sizeof(r));
    r.u.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg));
    r.u.h.nlmsg_type = RTM_NEWADDR;
    r.u.h.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
    struct ifaddrmsg *ifa = NLMSG_DATA(&r.u.h);
    ifa->ifa_family = AF_INET;
    ifa->ifa_prefixlen = 32;
    ifa->ifa_scope = RT_SCOPE_HOST;
    ifa->ifa_index = (unsigned)ifindex;
    conf_nl_put(&r, IFA_LOCAL, &in, sizeof(in));
    conf_nl_put(&r, IFA_ADDRESS, &in, sizeof(in));
    return conf_nl_talk(nl, &r);
}

/* Once per process: a network namespace (and, for /sys, a mount namespace)
 * of our own, lo up, and each chosen
 * local address as the only address of an interface of its own (confN, one
 * end of a veth pair that nothing is plugged into). Own interfaces, not lo:
 * UCX's tcp transport listens on its interface's first address, which for
 * lo is 127.0.0.1, so a peer answering a connection from 127.64.0.N would
 * find nobody there. Packets between local addresses still go over lo.
 * Returns 0, or -1 after printing why. */
static int conf_netns(void)
{
    static int done; /* the cases of one process run one after another */
    if (done)
        return 0;
    if (unshare(CLONE_NEWNET | CLONE_NEWNS) != 0) {
        int e = errno;
        print_error("the conformance suite runs each case in a network namespace of its own "
                    "and could not make one: unshare(CLONE_NEWNET | CLONE_NEWNS): %s%s\n",
                    strerror(e), e == EPERM ? " (run the suite as root)" : "");
        return -1;
    }
    /* /sys as this namespace sees it (as `ip netns exec` does): UCX finds
     * network devices in /sys/class/net. Private mounts, so the host's
     * /sys stays as it is. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        umount2("/sys", MNT_DETACH) != 0 ||
        mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) {
        print_error("cannot mount /sys for the test's network namespace: %s\n", strerror(errno));
        return -1;
    }
    int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (nl < 0) {
        print_error("cannot open rtnetlink in the test's namespace: %s\n", strerror(errno));
        return -1;
    }
    struct conf_nlreq r;
    memset(&r, 0, sizeof(r));
    r.u.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
    r.u.h.nlmsg_type = RTM_NEWLINK;
    struct ifinfomsg *ifi = NLMSG_DATA(&r.u.h);
    ifi->ifi_index = (int)if_nametoindex("lo");
    ifi->ifi_flags = IFF_UP;
    ifi->ifi_change = IFF_UP;
    int e = conf_nl_talk(nl, &r);
    if (e != 0)
        print_error("cannot bring lo up in the test's namespace: %s\n", strerror(e));
    for (int i = 0; i < CONF_NLOCAL && e == 0; i++) {
        char dev[IFNAMSIZ], a[32];
        snprintf(dev, sizeof(dev), "conf%d", i);
        conf_local(a, sizeof(a), i);
        e = conf_veth_add(nl, dev);
        if (e != 0)
            print_error("cannot make interface %s (veth) in the test's namespace: %s\n", dev,
                        strerror(e));
        else if ((e = conf_addr_add(nl, dev, a)) != 0)
            print_error("cannot add %s/32 to %s: %s\n", a, dev, strerror(e));
    }
    close(nl);
    if (e != 0)
        return -1;
    done = 1;
    return 0;
}

/* ---- setup --------------------------------------------------------------- */

int pio_conf_setup(void **state)
{
    const struct pio_conf_spec *spec = *state;
    const char *name = spec ? spec->name : NULL;
    if (conf_netns() != 0)
        return -1;
    struct conf_ctx *x = calloc(1, sizeof(*x));
    if (!x)
        return -1;
    x->name = name;
    x->caps = spec ? spec->caps : 0;
    x->t = name ? pio_transport_find(name) : NULL;
    if (!x->t) {
        print_error("transport '%s' is not registered (transport/registry.c) or lacks a "
                    "mandatory op\n",
                    name ? name : "(null)");
        free(x);
        return -1;
    }
    signal(SIGPIPE, SIG_DFL); /* a transport that raises SIGPIPE kills the case */
    *state = x;
    return 0;
}

int pio_conf_teardown(void **state)
{
    free(*state);
    *state = NULL;
    return 0;
}

/* ---- the checks ---------------------------------------------------------- */

/* The registry returns this backend under its name with every op present. */
void pio_conf_ops_complete(void **state)
{
    const struct conf_ctx *x = *state;
    const struct pio_transport_ops *t = x->t;
    assert_string_equal(t->name, x->name);
    assert_non_null(t->listen);
    assert_non_null(t->accept);
    assert_non_null(t->listener_shutdown);
    assert_non_null(t->listener_close);
    assert_non_null(t->connect);
    assert_non_null(t->sendv);
    assert_non_null(t->recv);
    assert_non_null(t->shutdown);
    assert_non_null(t->close);
    assert_non_null(t->addrs);
    assert_non_null(t->fd);
    if (((t->caps & PIO_TP_CAP_PACE) != 0) != (t->pace != NULL))
        fail_msg("transport '%s': pace is %s but PIO_TP_CAP_PACE is %s", x->name,
                 t->pace ? "set" : "NULL", (t->caps & PIO_TP_CAP_PACE) ? "declared" : "not");
    if (((t->caps & PIO_TP_CAP_PACE) != 0) != (t->lost != NULL))
        fail_msg("transport '%s': lost is %s but PIO_TP_CAP_PACE is %s", x->name,
                 t->lost ? "set" : "NULL", (t->caps & PIO_TP_CAP_PACE) ? "declared" : "not");
    if (t->caps != x->caps)
        fail_msg("transport '%s' declares capabilities 0x%x, its conformance instantiation "
                 "expects 0x%x (PIO_TP_CAP_*)",
                 x->name, t->caps, x->caps);
    int found = 0;
    for (const struct pio_transport_ops *const *l = pio_transport_list(); *l; l++)
        found += *l == t;
    assert_int_equal(found, 1);
}

/* Listen on 127.0.0.1 port 0, connect from a chosen local address: both
 * ends' addrs report the bound local address and the listening port. */
void pio_conf_listen_connect_addrs(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    char local[32], want[PIO_TP_ADDR], a[PIO_TP_ADDR], b[PIO_TP_ADDR];
    struct conf_pair p;
    conf_local(local, sizeof(local), 0);
    conf_pair_open(t, local, NULL, &p);

    t->addrs(p.cli, a, b);
    snprintf(want, sizeof(want), "127.0.0.1:%d", p.port);
    assert_string_equal(b, want);
    size_t ll = strlen(local);
    if (strncmp(a, local, ll) != 0 || a[ll] != ':')
        fail_msg("connect from %s: addrs says the local end is %s", local, a);
    int cport = conf_port_of(a);
    assert_true(cport > 0 && cport < 65536);

    char sa[PIO_TP_ADDR], sb[PIO_TP_ADDR];
    t->addrs(p.srv, sa, sb);
    assert_string_equal(sa, want);
    assert_string_equal(sb, a);

    t->addrs(p.cli, NULL, b); /* either end may be NULL */
    t->addrs(p.cli, a, NULL);
    conf_pair_close(t, &p);
}

/* local NULL: the system chooses; the pair still works both ways. fd: a
 * descriptor of each end (distinct, and a stream socket) with
 * PIO_TP_CAP_FD, else -1 for both. */
void pio_conf_connect_any_local(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    struct conf_pair p;
    char a[PIO_TP_ADDR], b[PIO_TP_ADDR];
    conf_pair_open(t, NULL, NULL, &p);
    t->addrs(p.cli, a, b);
    assert_memory_equal(a, "127.0.0.1:", 10);
    int fc = t->fd(p.cli), fs = t->fd(p.srv);
    if (t->caps & PIO_TP_CAP_FD) {
        int type = 0;
        socklen_t tl = sizeof(type);
        if (fc < 0 || fs < 0 || fc == fs)
            fail_msg("PIO_TP_CAP_FD, but fd gives %d and %d for the two ends", fc, fs);
        assert_int_equal(getsockopt(fc, SOL_SOCKET, SO_TYPE, &type, &tl), 0);
        assert_int_equal(type, SOCK_STREAM);
    } else if (fc != -1 || fs != -1) {
        fail_msg("no PIO_TP_CAP_FD, but fd gives %d and %d (want -1)", fc, fs);
    }
    CONF_RC(conf_send_pat(t, p.cli, 1000, 3, 0), PIO_OK);
    conf_recv_pat(t, p.srv, 1000, 3, 0);
    CONF_RC(conf_send_pat(t, p.srv, 1000, 4, 0), PIO_OK);
    conf_recv_pat(t, p.cli, 1000, 4, 0);
    conf_pair_close(t, &p);
}

/* Without PIO_TP_CAP_IPV6: every IPv6 address is a clear PIO_EADDR, at
 * once, for listen, connect's remote and connect's local address. */
static void conf_ipv6_refused(const struct pio_transport_ops *t)
{
    static const char *const v6[] = {"::1", "::", "fe80::1", "2001:db8::1"};
    struct pio_tp_opts o = {.timeout_ms = 2000};
    struct pio_tp_listener *l = NULL, *good;
    struct pio_tp_conn *c = NULL;
    int port = 0, gport;
    CONF_RC(t->listen("127.0.0.1", 0, &o, &good, &gport), PIO_OK);
    for (size_t i = 0; i < sizeof(v6) / sizeof(v6[0]); i++) {
        double t0 = conf_now();
        int rc = t->listen(v6[i], 0, &o, &l, &port);
        if (rc != PIO_EADDR)
            fail_msg("no PIO_TP_CAP_IPV6: listen on '%s': %s, want PIO_EADDR", v6[i],
                     PIO_Errname(rc));
        rc = t->connect(NULL, v6[i], gport, &o, &c);
        if (rc != PIO_EADDR)
            fail_msg("no PIO_TP_CAP_IPV6: connect to '%s': %s, want PIO_EADDR", v6[i],
                     PIO_Errname(rc));
        rc = t->connect(v6[i], v6[i], gport, &o, &c);
        if (rc != PIO_EADDR)
            fail_msg("no PIO_TP_CAP_IPV6: connect from '%s': %s, want PIO_EADDR", v6[i],
                     PIO_Errname(rc));
        rc = t->connect(v6[i], "127.0.0.1", gport, &o, &c);
        if (rc != PIO_EADDR)
            fail_msg("no PIO_TP_CAP_IPV6: connect from '%s' to 127.0.0.1: %s, want PIO_EADDR",
                     v6[i], PIO_Errname(rc));
        if (conf_now() - t0 > CONF_PROMPT_S)
            fail_msg("no PIO_TP_CAP_IPV6: refusing '%s' took %.2f s", v6[i], conf_now() - t0);
    }
    /* the refusals left the transport working */
    struct conf_pair p;
    conf_pair_open(t, NULL, NULL, &p);
    CONF_RC(conf_send_pat(t, p.cli, 1000, 6, 0), PIO_OK);
    conf_recv_pat(t, p.srv, 1000, 6, 0);
    conf_pair_close(t, &p);
    t->listener_close(good);
}

/* With PIO_TP_CAP_IPV6, ::1 works like 127.0.0.1, and addrs brackets v6
 * addresses (skipped where the kernel gives lo no ::1: IPv6 disabled).
 * Without it, IPv6 addresses are refused (conf_ipv6_refused). */
void pio_conf_ipv6_loopback(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    if (!(t->caps & PIO_TP_CAP_IPV6)) {
        conf_ipv6_refused(t);
        return;
    }
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 s6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    int ok = fd >= 0 && bind(fd, (struct sockaddr *)&s6, sizeof(s6)) == 0;
    if (fd >= 0)
        close(fd);
    if (!ok) {
        print_message("skipped: this machine has no IPv6 loopback (::1) to bind\n");
        skip();
    }
    struct pio_tp_listener *l;
    struct pio_tp_conn *c, *s;
    struct pio_tp_opts o = {.timeout_ms = CONF_ACCEPT_MS};
    int port;
    CONF_RC(t->listen("::1", 0, &o, &l, &port), PIO_OK);
    CONF_RC(t->connect("::1", "::1", port, &o, &c), PIO_OK);
    CONF_RC(t->accept(l, &o, &s), PIO_OK);
    char a[PIO_TP_ADDR], b[PIO_TP_ADDR], want[PIO_TP_ADDR];
    t->addrs(c, a, b);
    snprintf(want, sizeof(want), "[::1]:%d", port);
    assert_string_equal(b, want);
    assert_memory_equal(a, "[::1]:", 6);
    CONF_RC(conf_send_pat(t, c, 4096, 5, 0), PIO_OK);
    conf_recv_pat(t, s, 4096, 5, 0);
    t->close(c);
    t->close(s);
    t->listener_close(l);
}

/* sendv of nothing (n = 0, or only empty iovecs) succeeds and sends nothing. */
void pio_conf_sendv_empty(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    struct conf_pair p;
    conf_pair_open(t, NULL, NULL, &p);
    char x = 'x', y = 0;
    struct iovec none[3] = {{&x, 0}, {NULL, 0}, {&x, 0}};
    CONF_RC(t->sendv(p.cli, none, 0), PIO_OK);
    CONF_RC(t->sendv(p.cli, none, 3), PIO_OK);
    struct iovec one = {&x, 1};
    CONF_RC(t->sendv(p.cli, &one, 1), PIO_OK);
    CONF_RC(t->recv(p.srv, &y, 1), PIO_OK);
    assert_int_equal(y, 'x');
    conf_pair_close(t, &p);
}

/* One sendv of n iovecs of mixed sizes (empty ones among them) arrives as
 * their concatenation, in order. */
static void conf_sendv_iovecs(void **state, int n)
{
    const struct pio_transport_ops *t = conf_tp(state);
    struct conf_pair p;
    conf_pair_open(t, NULL, NULL, &p);
    struct iovec *iov = calloc((size_t)n, sizeof(*iov));
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += i % 7 == 3 ? 0 : (size_t)((i * 37) % 1500 + 1);
    uint8_t *buf = malloc(total);
    assert_true(iov && buf);
    conf_fill(buf, total, 11, 0);
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        size_t len = i % 7 == 3 ? 0 : (size_t)((i * 37) % 1500 + 1);
        iov[i].iov_base = buf + at;
        iov[i].iov_len = len;
        at += len;
    }
    struct conf_stream rcv = {.t = t, .c = p.srv, .seed = 11, .total = total};
    pthread_t th;
    conf_start(&th, conf_receiver_main, &rcv);
    int rc = t->sendv(p.cli, iov, n);
    if (rc != PIO_OK) {
        t->shutdown(p.srv); /* let the receiver go */
        conf_join(th, 5, "receiver");
        fail_msg("sendv of %d iovecs (%zu bytes): %s (%s)", n, total, PIO_Errname(rc),
                 PIO_Strerror(rc));
    }
    conf_join(th, 20, "receiver");
    struct conf_stream snd = {.total = total, .done = total, .rc = PIO_OK};
    snd.hash = XXH64(buf, total, 0);
    conf_check_stream(&snd, &rcv, "iovecs");
    free(buf);
    free(iov);
    conf_pair_close(t, &p);
}

/* The contract says "all bytes of iov[0..n)": no limit on n, so more than
 * IOV_MAX (1024 on Linux) must work too. */
void pio_conf_sendv_many_iovecs(void **state)
{
    conf_sendv_iovecs(state, 1500);
}

void pio_conf_sendv_16_iovecs(void **state)
{
    conf_sendv_iovecs(state, 16);
}

/* 64 MiB in sendv calls of 8 MiB (several iovecs each) arrives intact and
 * in order while the peer reads in odd-sized pieces. */
void pio_conf_sendv_64mib_odd_reads(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    struct conf_pair p;
    conf_pair_open(t, NULL, NULL, &p);
    struct conf_stream snd = {
        .t = t, .c = p.cli, .seed = 21, .total = CONF_BIG, .piece = 8 * CONF_MIB, .niov = 5};
    struct conf_stream rcv = {.t = t, .c = p.srv, .seed = 21, .total = CONF_BIG};
    pthread_t ts, tr;
    conf_start(&tr, conf_receiver_main, &rcv);
    conf_start(&ts, conf_sender_main, &snd);
    conf_join(ts, 60, "sender of 64 MiB");
    conf_join(tr, 60, "receiver of 64 MiB");
    conf_check_stream(&snd, &rcv, "64 MiB");
    conf_pair_close(t, &p);
}

struct conf_dribble {
    const struct pio_transport_ops *t;
    struct pio_tp_conn *c;
    int rc;
};

/* Writes stream 31 in pieces of 1, 2, 3, 1000, 50000 and the rest of
 * 100000 bytes with pauses between them, then one marker byte 0xAB. */
static void *conf_dribble_main(void *arg)
{
    struct conf_dribble *d = arg;
    static const size_t cuts[] = {1, 2, 3, 1000, 50000};
    size_t off = 0;
    d->rc = PIO_OK;
    for (size_t i = 0; i <= sizeof(cuts) / sizeof(cuts[0]) && d->rc == PIO_OK; i++) {
        size_t len = i < sizeof(cuts) / sizeof(cuts[0]) ? cuts[i] : 100000 - off;
        d->rc = conf_send_pat(d->t, d->c, len, 31, off);
        off += len;
        conf_sleep_ms(20);
    }
    uint8_t mark = 0xAB;
    struct iovec iov = {&mark, 1};
    if (d->rc == PIO_OK)
        d->rc = d->t->sendv(d->c, &iov, 1);
    return NULL;
}

/* One recv of 100000 bytes returns only when all of them are there, though
 * they were written in six pieces; it takes no byte beyond them. */
void pio_conf_recv_exact_across_partial_writes(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    struct conf_pair p;
    conf_pair_open(t, NULL, NULL, &p);
    struct conf_dribble d = {.t = t, .c = p.cli};
    pthread_t th;
    conf_start(&th, conf_dribble_main, &d);
    conf_recv_pat(t, p.srv, 100000, 31, 0);
    uint8_t mark = 0;
    CONF_RC(t->recv(p.srv, &mark, 1), PIO_OK);
    assert_int_equal(mark, 0xAB);
    conf_join(th, 10, "dribbling sender");
    CONF_RC(d.rc, PIO_OK);
    conf_pair_close(t, &p);
}

/* Frames written in one sendv come out one exact recv at a time. */
void pio_conf_recv_exact_frames(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    struct conf_pair p;
    conf_pair_open(t, NULL, NULL, &p);
    uint32_t l1 = 5, l2 = 3;
    struct iovec iov[4] = {{&l1, 4}, {"hello", 5}, {&l2, 4}, {"abc", 3}};
    CONF_RC(t->sendv(p.cli, iov, 4), PIO_OK);
    uint32_t len = 0;
    char body[8] = {0};
    CONF_RC(t->recv(p.srv, &len, 4), PIO_OK);
    assert_int_equal(len, 5);
    CONF_RC(t->recv(p.srv, body, len), PIO_OK);
    assert_memory_equal(body, "hello", 5);
    CONF_RC(t->recv(p.srv, &len, 4), PIO_OK);
    assert_int_equal(len, 3);
    memset(body, 0, sizeof(body));
    CONF_RC(t->recv(p.srv, body, len), PIO_OK);
    assert_string_equal(body, "abc");
    conf_pair_close(t, &p);
}

/* Both directions at once, a sender and a receiver thread on each end, with
 * small socket buffers: neither direction waits for the other. */
void pio_conf_both_directions_at_once(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    struct pio_tp_opts o = {.sndbuf = 64 * 1024, .rcvbuf = 64 * 1024, .timeout_ms = CONF_ACCEPT_MS};
    struct conf_pair p;
    conf_pair_open(t, NULL, &o, &p);
    size_t total = 32 * CONF_MIB;
    struct conf_stream s1 = {
        .t = t, .c = p.cli, .seed = 41, .total = total, .piece = CONF_MIB, .niov = 3};
    struct conf_stream s2 = {
        .t = t, .c = p.srv, .seed = 42, .total = total, .piece = CONF_MIB, .niov = 2};
    struct conf_stream r1 = {.t = t, .c = p.srv, .seed = 41, .total = total};
    struct conf_stream r2 = {.t = t, .c = p.cli, .seed = 42, .total = total};
    pthread_t th[4];
    double t0 = conf_now();
    conf_start(&th[0], conf_sender_main, &s1);
    conf_start(&th[1], conf_sender_main, &s2);
    conf_start(&th[2], conf_receiver_main, &r1);
    conf_start(&th[3], conf_receiver_main, &r2);
    for (int i = 0; i < 4; i++)
        conf_join(th[i], 60, "one of the four stream threads");
    conf_check_stream(&s1, &r1, "client to server");
    conf_check_stream(&s2, &r2, "server to client");
    /* 32 MiB through 64 KiB buffers: a transport that made one direction
     * wait for the other (a lock held across a blocking call) would stall
     * above, and conf_join would name it. */
    print_message("client->server %.2f s, server->client %.2f s\n", r1.t_end - t0, r2.t_end - t0);
    conf_pair_close(t, &p);
}

/* The peer closes: recv returns PIO_ECLOSED, and keeps returning it. */
void pio_conf_peer_close_recv_closed(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    struct conf_pair p;
    conf_pair_open(t, NULL, NULL, &p);
    CONF_RC(conf_send_pat(t, p.srv, 10, 51, 0), PIO_OK);
    t->close(p.srv);
    p.srv = NULL;
    conf_recv_pat(t, p.cli, 10, 51, 0); /* what was sent before the close still arrives */
    char x;
    CONF_RC(t->recv(p.cli, &x, 1), PIO_ECLOSED);
    CONF_RC(t->recv(p.cli, &x, 1), PIO_ECLOSED);
    conf_pair_close(t, &p);
}

/* The peer closes in the middle of a frame: the recv that wanted more than
 * there was returns PIO_ECLOSED. */
void pio_conf_peer_close_mid_frame(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    struct conf_pair p;
    conf_pair_open(t, NULL, NULL, &p);
    CONF_RC(conf_send_pat(t, p.srv, 10, 52, 0), PIO_OK);
    t->close(p.srv);
    p.srv = NULL;
    char buf[20];
    CONF_RC(t->recv(p.cli, buf, sizeof(buf)), PIO_ECLOSED);
    conf_pair_close(t, &p);
}

/* The peer closes: sendv soon returns PIO_ECLOSED, not PIO_EIO, and never
 * raises SIGPIPE (its default action would kill this case). */
void pio_conf_peer_close_sendv_closed(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    struct conf_pair p;
    conf_pair_open(t, NULL, NULL, &p);
    t->close(p.srv);
    p.srv = NULL;
    size_t len = 64 * 1024;
    uint8_t *buf = calloc(1, len);
    assert_non_null(buf);
    struct iovec iov = {buf, len};
    int rc = PIO_OK, calls = 0;
    double end = conf_now() + 5;
    while (rc == PIO_OK && conf_now() < end) {
        rc = t->sendv(p.cli, &iov, 1);
        calls++;
        conf_sleep_ms(5);
    }
    if (rc == PIO_OK)
        fail_msg("sendv still succeeds %d calls after the peer closed", calls);
    CONF_RC(rc, PIO_ECLOSED);
    CONF_RC(t->sendv(p.cli, &iov, 1), PIO_ECLOSED);
    free(buf);
    conf_pair_close(t, &p);
}

struct conf_blocked {
    const struct pio_transport_ops *t;
    struct pio_tp_conn *c;
    int rc;
    size_t sent;
    double t_end;
    atomic_int finished; /* set last: the rest may be read once it is */
};

static void *conf_blocked_recv_main(void *arg)
{
    struct conf_blocked *b = arg;
    char buf[16];
    b->rc = b->t->recv(b->c, buf, sizeof(buf));
    b->t_end = conf_now();
    atomic_store(&b->finished, 1);
    return NULL;
}

/* Sends until a call fails (the peer never reads, so it blocks first). */
static void *conf_blocked_send_main(void *arg)
{
    struct conf_blocked *b = arg;
    size_t len = CONF_MIB;
    uint8_t *buf = calloc(1, len);
    struct iovec iov = {buf, len};
    b->rc = buf ? PIO_OK : PIO_ENOMEM;
    while (b->rc == PIO_OK && b->sent < 1024u * CONF_MIB) {
        b->rc = b->t->sendv(b->c, &iov, 1);
        if (b->rc == PIO_OK)
            b->sent += len;
    }
    free(buf);
    b->t_end = conf_now();
    atomic_store(&b->finished, 1);
    return NULL;
}

/* shutdown from another thread unblocks a recv blocked on the same
 * connection promptly with PIO_ECLOSED; the peer sees the close. */
void pio_conf_shutdown_unblocks_recv(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    struct conf_pair p;
    conf_pair_open(t, NULL, NULL, &p);
    struct conf_blocked b = {.t = t, .c = p.cli, .rc = -1};
    pthread_t th;
    conf_start(&th, conf_blocked_recv_main, &b);
    conf_sleep_ms(200);
    if (atomic_load(&b.finished)) /* it must still be blocked: nothing was sent */
        fail_msg("recv returned %s with nothing sent", PIO_Errname(b.rc));
    double t0 = conf_now();
    t->shutdown(p.cli);
    double t1 = conf_now();
    conf_join(th, 5, "recv after shutdown");
    CONF_RC(b.rc, PIO_ECLOSED);
    if (t1 - t0 > 0.5)
        fail_msg("shutdown blocked for %.2f s", t1 - t0);
    if (b.t_end - t0 > CONF_PROMPT_S)
        fail_msg("recv returned %.2f s after shutdown", b.t_end - t0);
    char x;
    CONF_RC(t->recv(p.srv, &x, 1), PIO_ECLOSED);
    conf_pair_close(t, &p);
}

/* shutdown unblocks a sendv blocked because the peer does not read. */
void pio_conf_shutdown_unblocks_sendv(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    struct pio_tp_opts o = {.sndbuf = 64 * 1024, .rcvbuf = 64 * 1024, .timeout_ms = CONF_ACCEPT_MS};
    struct conf_pair p;
    conf_pair_open(t, NULL, &o, &p);
    struct conf_blocked b = {.t = t, .c = p.cli, .rc = -1};
    pthread_t th;
    conf_start(&th, conf_blocked_send_main, &b);
    conf_sleep_ms(300);
    if (atomic_load(&b.finished))
        fail_msg("sendv did not block: %zu bytes went to a peer that reads nothing (%s)", b.sent,
                 PIO_Errname(b.rc));
    double t0 = conf_now();
    t->shutdown(p.cli);
    conf_join(th, 5, "sendv after shutdown");
    CONF_RC(b.rc, PIO_ECLOSED);
    if (b.t_end - t0 > CONF_PROMPT_S)
        fail_msg("sendv returned %.2f s after shutdown", b.t_end - t0);
    conf_pair_close(t, &p);
}

/* listener_shutdown from another thread makes a blocked accept (no time
 * limit) return PIO_ECLOSED promptly; later accepts return it at once. */
void pio_conf_listener_shutdown_unblocks_accept(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    struct pio_tp_opts o = {.timeout_ms = -1};
    struct conf_accept a = {.t = t, .o = o, .rc = -1};
    int port;
    CONF_RC(t->listen("127.0.0.1", 0, &o, &a.l, &port), PIO_OK);
    pthread_t th;
    conf_start(&th, conf_accept_main, &a);
    conf_sleep_ms(200);
    if (atomic_load(&a.finished)) /* it must still be blocked: nobody connected */
        fail_msg("accept returned %s with nobody connecting", PIO_Errname(a.rc));
    double t0 = conf_now();
    t->listener_shutdown(a.l);
    double t1 = conf_now();
    conf_join(th, 5, "accept after listener_shutdown");
    CONF_RC(a.rc, PIO_ECLOSED);
    if (t1 - t0 > 0.5)
        fail_msg("listener_shutdown blocked for %.2f s", t1 - t0);
    if (a.t_end - t0 > CONF_PROMPT_S)
        fail_msg("accept returned %.2f s after listener_shutdown", a.t_end - t0);
    struct pio_tp_conn *c = NULL;
    o.timeout_ms = 2000;
    t0 = conf_now();
    CONF_RC(t->accept(a.l, &o, &c), PIO_ECLOSED);
    assert_true(conf_now() - t0 < CONF_PROMPT_S);
    t->listener_close(a.l);
}

/* accept with a time limit and nobody connecting: PIO_ETIMEDOUT on time. */
void pio_conf_accept_timeout(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    struct pio_tp_opts o = {.timeout_ms = 200};
    struct pio_tp_listener *l;
    struct pio_tp_conn *c = NULL;
    int port;
    CONF_RC(t->listen("127.0.0.1", 0, &o, &l, &port), PIO_OK);
    double t0 = conf_now();
    CONF_RC(t->accept(l, &o, &c), PIO_ETIMEDOUT);
    double dt = conf_now() - t0;
    if (dt < 0.15 || dt > 2)
        fail_msg("accept with a 200 ms limit returned after %.3f s", dt);
    t->listener_close(l);
}

/* A port nobody listens on: PIO_EREFUSED (not a time-out). */
void pio_conf_connect_refused(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    struct pio_tp_opts o = {.timeout_ms = 5000};
    struct pio_tp_listener *l;
    struct pio_tp_conn *c = NULL;
    int port;
    CONF_RC(t->listen("127.0.0.1", 0, &o, &l, &port), PIO_OK);
    t->listener_close(l); /* the port is free again, and nobody listens */
    double t0 = conf_now();
    CONF_RC(t->connect(NULL, "127.0.0.1", port, &o, &c), PIO_EREFUSED);
    assert_true(conf_now() - t0 < 2);
    char local[32];
    conf_local(local, sizeof(local), 1);
    CONF_RC(t->connect(local, "127.0.0.1", port, &o, &c), PIO_EREFUSED);
}

/* A connect whose SYN goes unanswered ends with PIO_ETIMEDOUT after
 * o->timeout_ms. No netem here: the black hole is a listener whose accept
 * queue is full (backlog 0, one connection never accepted), for which Linux
 * drops further SYNs. Skipped if this kernel answers them anyway. */
void pio_conf_connect_timeout_blackhole(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    int lfd = socket(AF_INET, SOCK_STREAM, 0), fill[8], nfill = 0, hole = 0;
    assert_true(lfd >= 0);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sl), 0);
    assert_int_equal(listen(lfd, 0), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
    while (!hole && nfill < 8) { /* fill the queue until a connect hangs */
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        assert_true(fd >= 0);
        fill[nfill++] = fd;
        if (connect(fd, (struct sockaddr *)&sa, sl) == 0)
            continue;
        assert_int_equal(errno, EINPROGRESS);
        struct pollfd pf = {.fd = fd, .events = POLLOUT};
        hole = poll(&pf, 1, 300) == 0;
    }
    if (hole) {
        struct pio_tp_opts o = {.timeout_ms = 300};
        struct pio_tp_conn *c = NULL;
        double t0 = conf_now();
        int rc = t->connect(NULL, "127.0.0.1", ntohs(sa.sin_port), &o, &c);
        double dt = conf_now() - t0;
        if (rc == PIO_OK)
            t->close(c);
        for (int i = 0; i < nfill; i++)
            close(fill[i]);
        close(lfd);
        CONF_RC(rc, PIO_ETIMEDOUT);
        if (dt < 0.25 || dt > 2.5)
            fail_msg("connect with a 300 ms limit returned after %.3f s", dt);
        return;
    }
    for (int i = 0; i < nfill; i++)
        close(fill[i]);
    close(lfd);
    print_message("skipped: the kernel answered every connection attempt, so no black hole "
                  "could be made for the connect time limit\n");
    skip(); /* no black hole to be had on this kernel */
}

/* Listening where another listener already is: PIO_EADDR. */
void pio_conf_listen_addr_in_use(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    struct pio_tp_listener *l, *l2 = NULL;
    int port, port2 = -1;
    CONF_RC(t->listen("127.0.0.1", 0, NULL, &l, &port), PIO_OK);
    CONF_RC(t->listen("127.0.0.1", port, NULL, &l2, &port2), PIO_EADDR);
    t->listener_close(l);
}

/* Addresses are numeric IPv4 or IPv6 text; anything else, or an address
 * this host does not have, is PIO_EADDR for listen, for connect's remote and
 * for connect's local address. */
void pio_conf_bad_address_strings(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    static const char *const bad[] = {
        "not-an-address", "localhost",  "127.0.0.1:80", "300.1.2.3",   "1.2.3",
        "127.0.0.1 ",     " 127.0.0.1", "::g",          "[::1]",       "1.2.3.4.5",
        "127.0.0.1/8",    "0x7f.1",     "fe80::1%nope", "127.0.0.1\n",
    };
    struct pio_tp_opts o = {.timeout_ms = 2000};
    struct pio_tp_listener *l = NULL, *good;
    struct pio_tp_conn *c = NULL;
    int port = 0, gport;
    CONF_RC(t->listen("127.0.0.1", 0, &o, &good, &gport), PIO_OK);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = t->listen(bad[i], 0, &o, &l, &port);
        if (rc != PIO_EADDR)
            fail_msg("listen on '%s': %s, want PIO_EADDR", bad[i], PIO_Errname(rc));
        rc = t->connect(NULL, bad[i], gport, &o, &c);
        if (rc != PIO_EADDR)
            fail_msg("connect to '%s': %s, want PIO_EADDR", bad[i], PIO_Errname(rc));
        rc = t->connect(bad[i], "127.0.0.1", gport, &o, &c);
        if (rc != PIO_EADDR)
            fail_msg("connect from '%s': %s, want PIO_EADDR", bad[i], PIO_Errname(rc));
    }
    /* well formed, but not an address of this host (TEST-NET-1, RFC 5737) */
    CONF_RC(t->listen("192.0.2.1", 0, &o, &l, &port), PIO_EADDR);
    CONF_RC(t->connect("192.0.2.1", "127.0.0.1", gport, &o, &c), PIO_EADDR);
    t->listener_close(good);
}

/* Ports outside 0..65535 are refused, never taken modulo 65536. */
void pio_conf_bad_ports(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    struct pio_tp_opts o = {.timeout_ms = 2000};
    struct pio_tp_listener *l = NULL, *good;
    struct pio_tp_conn *c = NULL;
    int port = 0, gport;
    CONF_RC(t->listen("127.0.0.1", 0, &o, &good, &gport), PIO_OK);
    const int bad[] = {-1, 65536, 65536 + gport, 1 << 20};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = t->listen("127.0.0.1", bad[i], &o, &l, &port);
        if (rc == PIO_OK) {
            t->listener_close(l);
            fail_msg("listen on port %d succeeded (bound port %d)", bad[i], port);
        }
        rc = t->connect(NULL, "127.0.0.1", bad[i], &o, &c);
        if (rc == PIO_OK) {
            char a[PIO_TP_ADDR], b[PIO_TP_ADDR];
            t->addrs(c, a, b);
            t->close(c);
            fail_msg("connect to port %d succeeded (connected to %s)", bad[i], b);
        }
    }
    t->listener_close(good);
}

/* lo..lo+n-1: n consecutive ports that nobody holds on address addr now. */
static int conf_free_range(const struct pio_transport_ops *t, const char *addr, int n)
{
    int span = CONF_PORT_LAST - CONF_PORT_FIRST - n;
    int start = CONF_PORT_FIRST + (int)((unsigned)getpid() * 7919u % (unsigned)span);
    for (int k = 0; k < 200; k++) {
        int lo = CONF_PORT_FIRST + (start - CONF_PORT_FIRST + k * 17) % span, ok = 1;
        for (int p = lo; p < lo + n && ok; p++) {
            struct pio_tp_listener *l;
            int got;
            ok = t->listen(addr, p, NULL, &l, &got) == PIO_OK;
            if (ok)
                t->listener_close(l);
        }
        if (ok)
            return lo;
    }
    fail_msg("no %d free consecutive ports on %s", n, addr);
    return -1;
}

/* With src_port_lo/hi, the connection leaves from a port in the range and
 * from the chosen local address; the peer sees that port. */
void pio_conf_src_port_in_range(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    char local[32], a[PIO_TP_ADDR], b[PIO_TP_ADDR];
    conf_local(local, sizeof(local), 2);
    int lo = conf_free_range(t, local, 3);
    struct pio_tp_opts o = {.timeout_ms = CONF_ACCEPT_MS, .src_port_lo = lo, .src_port_hi = lo + 2};
    struct conf_pair p;
    conf_pair_open(t, local, &o, &p);
    t->addrs(p.cli, a, b);
    int sp = conf_port_of(a);
    if (sp < lo || sp > lo + 2)
        fail_msg("source port %d is outside %d-%d (local end %s)", sp, lo, lo + 2, a);
    assert_memory_equal(a, local, strlen(local));
    t->addrs(p.srv, a, b);
    assert_int_equal(conf_port_of(b), sp);
    conf_pair_close(t, &p);
}

/* Three connections to one listener from a range of three ports take the
 * three ports; a fourth finds the range used up: PIO_EADDR. */
void pio_conf_src_port_range_distinct(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    char local[32], a[PIO_TP_ADDR], b[PIO_TP_ADDR];
    conf_local(local, sizeof(local), 3);
    int lo = conf_free_range(t, local, 3), port, used[3];
    struct pio_tp_opts o = {.timeout_ms = 5000, .src_port_lo = lo, .src_port_hi = lo + 2};
    struct pio_tp_listener *l;
    struct pio_tp_conn *c[4] = {NULL}, *s[3] = {NULL};
    CONF_RC(t->listen("127.0.0.1", 0, &o, &l, &port), PIO_OK);
    for (int i = 0; i < 3; i++) {
        int rc = t->connect(local, "127.0.0.1", port, &o, &c[i]);
        if (rc != PIO_OK)
            fail_msg("connection %d of 3 from ports %d-%d: %s, want PIO_OK", i + 1, lo, lo + 2,
                     PIO_Errname(rc));
        CONF_RC(t->accept(l, &o, &s[i]), PIO_OK);
        t->addrs(c[i], a, b);
        used[i] = conf_port_of(a);
        if (used[i] < lo || used[i] > lo + 2)
            fail_msg("source port %d is outside %d-%d", used[i], lo, lo + 2);
        for (int j = 0; j < i; j++)
            assert_int_not_equal(used[i], used[j]);
    }
    CONF_RC(t->connect(local, "127.0.0.1", port, &o, &c[3]), PIO_EADDR);
    for (int i = 0; i < 3; i++) {
        t->close(c[i]);
        t->close(s[i]);
    }
    t->listener_close(l);
}

/* Every port of the range held by someone else (listeners here): PIO_EADDR;
 * free one and the next connect takes exactly that one. */
void pio_conf_src_port_range_exhausted(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    char local[32], a[PIO_TP_ADDR], b[PIO_TP_ADDR];
    conf_local(local, sizeof(local), 4);
    int lo = conf_free_range(t, local, 3), port, got;
    struct pio_tp_opts o = {.timeout_ms = 5000, .src_port_lo = lo, .src_port_hi = lo + 2};
    struct pio_tp_listener *l, *hold[3];
    struct pio_tp_conn *c = NULL, *s = NULL;
    CONF_RC(t->listen("127.0.0.1", 0, &o, &l, &port), PIO_OK);
    for (int i = 0; i < 3; i++)
        CONF_RC(t->listen(local, lo + i, NULL, &hold[i], &got), PIO_OK);
    CONF_RC(t->connect(local, "127.0.0.1", port, &o, &c), PIO_EADDR);
    t->listener_close(hold[1]);
    CONF_RC(t->connect(local, "127.0.0.1", port, &o, &c), PIO_OK);
    CONF_RC(t->accept(l, &o, &s), PIO_OK);
    t->addrs(c, a, b);
    assert_int_equal(conf_port_of(a), lo + 1);
    t->close(c);
    t->close(s);
    t->listener_close(hold[0]);
    t->listener_close(hold[2]);
    t->listener_close(l);
}

/* pace: 1 MiB on a connection paced at 2 MB/s takes about 0.5 s, and at
 * least 0.25 s whatever the scheduler does (pacing only delays; the
 * kernel lets a first window through at once); after
 * pace(0) 16 MiB takes less than the 8 s it would at that pace. The bytes
 * arrive whole either way. lost counts nothing on a new connection, and
 * after 17 MiB over a loopback that drops nothing at most a few tail-loss
 * probes (a count of every segment sent would be hundreds). A transport without
 * PIO_TP_CAP_PACE: nothing to check beyond ops_complete. */
void pio_conf_pace_limits_rate(void **state)
{
    const struct pio_transport_ops *t = conf_tp(state);
    if (!(t->caps & PIO_TP_CAP_PACE))
        return;
    struct conf_pair p;
    conf_pair_open(t, NULL, NULL, &p);
    uint64_t lost = UINT64_MAX;
    CONF_RC(t->lost(p.cli, &lost), PIO_OK);
    if (lost != 0)
        fail_msg("a new connection counts %llu segments sent again", (unsigned long long)lost);
    CONF_RC(t->pace(p.cli, 2000000), PIO_OK);
    struct conf_stream snd = {
        .t = t, .c = p.cli, .seed = 5, .total = CONF_MIB, .piece = 65536, .niov = 1};
    struct conf_stream rcv = {.t = t, .c = p.srv, .seed = 5, .total = CONF_MIB};
    double t0 = conf_now();
    pthread_t ts, tr;
    conf_start(&tr, conf_receiver_main, &rcv);
    conf_start(&ts, conf_sender_main, &snd);
    conf_join(ts, 30, "paced sender");
    conf_join(tr, 30, "paced receiver");
    conf_check_stream(&snd, &rcv, "paced at 2 MB/s");
    double paced = rcv.t_end - t0;
    if (paced < 0.25)
        fail_msg("1 MiB paced at 2 MB/s arrived in %.3f s (at least 0.25 s expected)", paced);
    CONF_RC(t->pace(p.cli, 0), PIO_OK);
    struct conf_stream snd2 = {
        .t = t, .c = p.cli, .seed = 6, .total = 16 * CONF_MIB, .piece = CONF_MIB, .niov = 2};
    struct conf_stream rcv2 = {.t = t, .c = p.srv, .seed = 6, .total = 16 * CONF_MIB};
    t0 = conf_now();
    conf_start(&tr, conf_receiver_main, &rcv2);
    conf_start(&ts, conf_sender_main, &snd2);
    conf_join(ts, 30, "unpaced sender");
    conf_join(tr, 30, "unpaced receiver");
    conf_check_stream(&snd2, &rcv2, "pace lifted");
    if (rcv2.t_end - t0 >= 8.0)
        fail_msg("16 MiB after pace(0) took %.3f s: the limit stayed", rcv2.t_end - t0);
    lost = UINT64_MAX;
    CONF_RC(t->lost(p.cli, &lost), PIO_OK);
    if (lost >= 16)
        fail_msg("17 MiB over a loopback that drops nothing: %llu segments sent again",
                 (unsigned long long)lost);
    conf_pair_close(t, &p);
}
