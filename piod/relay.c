/* relay.c - a system of several hosts: relayed channels and load reports.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A system's links are numbered across its member hosts (piod_config_links):
 * channel k of every bundle uses the system's link k, whichever member owns
 * it. So one active host can use every link of the system.
 *
 * Outbound: a member that opens channel k on a link it does not own connects
 * to the owner's relay port on the internal network and asks for RELAY_OUT;
 * the owner connects from its own address on link k to the peer's data port
 * and then copies bytes both ways. The channel's handshake (C_HELLO,
 * challenge, proof) runs end to end through the copy, so the relay holds no
 * key and cannot forge a channel.
 * Inbound: a peer opening channel k to a member reaches link k's owner. The
 * C_HELLO names the host meant (target); when that is another member, the
 * owner connects to the member's relay port (RELAY_IN), sends the C_HELLO on,
 * and copies bytes both ways; the member authenticates the channel as if it
 * had accepted it itself.
 * Load reports: every LOAD_MS each member sends H_LOAD (its channels' state,
 * queued bytes, measured rate, counters) in one UDP datagram to every other
 * member; pio-info shows the whole system from the latest reports. Each
 * datagram ends with a 32-byte MAC (keyed BLAKE2b) under a key that only the
 * two members share: derived from the X25519 agreement of one's secret key
 * and the other's public key (the CURVE keys in the key directory). A
 * datagram with a wrong MAC, or none, is dropped (and counted, and logged
 * once per member), whatever its source address says.
 * The relay port takes connections and datagrams only from the members'
 * internal addresses, and RELAY_OUT connects only to a configured peer
 * address on that peer's data port: the relay is not an open proxy.
 * Threads: one accept thread; per relayed connection a handler thread that
 * copies one way and a helper that copies the other. Lock: d->relay_mtx (a
 * leaf) guards the list of relayed connections, so stop can shut them all.
 */
#include "relay.h"
#include "relayhdr.h"
#include "log.h"
#include "err.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sodium.h>
#include <zmq.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define RELAY_HDR        PIOD_RELAY_HDR
#define RELAY_TIMEOUT_MS 5000
#define RELAY_BUF        (256 * 1024)
#define LOAD_MS          250
#define LOAD_STALE_MS    3000 /* a member silent this long shows as unknown */

struct piod_splice {
    struct piod_splice *next;
    struct pio_tp_conn *a, *b;
};

/* "a.b.c.d:port" or "[v6]:port" -> the address part */
static void addr_part(const char *ap, char *out, size_t cap)
{
    const char *s = ap, *e;
    if (*s == '[') {
        s++;
        e = strchr(s, ']');
    } else {
        e = strrchr(s, ':');
    }
    size_t n = e ? (size_t)(e - s) : strlen(s);
    if (n >= cap)
        n = cap - 1;
    memcpy(out, s, n);
    out[n] = '\0';
}

static int same_addr(const char *a, const char *b)
{
    unsigned char x[16], y[16];
    int fa = strchr(a, ':') ? AF_INET6 : AF_INET, fb = strchr(b, ':') ? AF_INET6 : AF_INET;
    if (fa != fb || inet_pton(fa, a, x) != 1 || inet_pton(fb, b, y) != 1)
        return strcmp(a, b) == 0;
    return memcmp(x, y, fa == AF_INET ? 4 : 16) == 0;
}

/* The member whose internal address is addr, or -1. */
static int member_at(const struct piod *d, const char *addr)
{
    for (int m = 0; m < d->cfg.nmembers; m++)
        if (same_addr(d->cfg.members[m].internal, addr))
            return m;
    return -1;
}

int piod_member_by_name(const struct piod *d, const char *name)
{
    for (int m = 0; m < d->cfg.nmembers; m++)
        if (strcmp(d->cfg.members[m].name, name) == 0)
            return m;
    return -1;
}

/* ---- copying both ways ---- */

struct copy_arg {
    struct piod *d;
    struct pio_tp_conn *from, *to;
};

static void copy_loop(struct piod *d, struct pio_tp_conn *from, struct pio_tp_conn *to)
{
    uint8_t *buf = malloc(RELAY_BUF);
    int in = d->tp->fd(from);
    while (buf) {
        ssize_t r = read(in, buf, RELAY_BUF);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        struct iovec iov = {.iov_base = buf, .iov_len = (size_t)r};
        if (d->tp->sendv(to, &iov, 1) != PIO_OK)
            break;
    }
    free(buf);
    /* either end gone: make the other direction's read return too */
    d->tp->shutdown(from);
    d->tp->shutdown(to);
}

static void *copy_thread(void *arg)
{
    struct copy_arg *c = arg;
    copy_loop(c->d, c->from, c->to);
    return NULL;
}

/* Copy a <-> b until either closes; then close both. Runs in the caller's
 * thread plus one helper. */
static void splice_run(struct piod *d, struct pio_tp_conn *a, struct pio_tp_conn *b)
{
    struct piod_splice *s = calloc(1, sizeof(*s));
    struct copy_arg back = {d, b, a};
    pthread_t t;
    if (!s || d->stopping || pthread_create(&t, NULL, copy_thread, &back) != 0) {
        free(s);
        d->tp->close(a);
        d->tp->close(b);
        return;
    }
    s->a = a;
    s->b = b;
    pthread_mutex_lock(&d->relay_mtx);
    s->next = d->splices;
    d->splices = s;
    d->nsplices++;
    pthread_mutex_unlock(&d->relay_mtx);
    copy_loop(d, a, b);
    pthread_join(t, NULL);
    pthread_mutex_lock(&d->relay_mtx);
    for (struct piod_splice **pp = &d->splices; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    d->nsplices--;
    pthread_mutex_unlock(&d->relay_mtx);
    free(s);
    d->tp->close(a);
    d->tp->close(b);
}

/* ---- the relay header: relayhdr.c ---- */

static void hdr_put(uint8_t *h, int kind, int link, int port, const char *addr)
{
    struct piod_relay_hdr r = {.kind = kind, .link = link, .port = port};
    if (addr)
        snprintf(r.addr, sizeof(r.addr), "%s", addr);
    piod_relay_hdr_put(h, &r);
}

static int status_send(struct piod *d, struct pio_tp_conn *c, int rc)
{
    uint8_t s[4] = {(uint8_t)((uint32_t)rc >> 24), (uint8_t)((uint32_t)rc >> 16),
                    (uint8_t)((uint32_t)rc >> 8), (uint8_t)rc};
    struct iovec iov = {.iov_base = s, .iov_len = 4};
    return d->tp->sendv(c, &iov, 1);
}

/* Connect to member m's relay port and send a header. */
static int member_connect(struct piod *d, int m, const uint8_t *hdr, struct pio_tp_conn **out)
{
    struct pio_tp_opts o = d->tpo;
    o.timeout_ms = RELAY_TIMEOUT_MS;
    o.src_port_lo = o.src_port_hi = 0;
    struct pio_tp_conn *c = NULL;
    int rc = d->tp->connect(d->cfg.internal, d->cfg.members[m].internal, d->cfg.relay_port, &o, &c);
    if (rc != PIO_OK)
        return rc;
    struct iovec iov = {.iov_base = (void *)hdr, .iov_len = RELAY_HDR};
    if ((rc = d->tp->sendv(c, &iov, 1)) != PIO_OK) {
        d->tp->close(c);
        return rc;
    }
    *out = c;
    return PIO_OK;
}

int piod_relay_out(struct piod *d, int link, const char *remote, int port, struct pio_tp_conn **out)
{
    int m = d->cfg.link_owner[link];
    if (m < 0)
        return PIO_EINVAL;
    uint8_t hdr[RELAY_HDR], st[4];
    hdr_put(hdr, PIOD_RELAY_OUT, link, port, remote);
    struct pio_tp_conn *c;
    int rc = member_connect(d, m, hdr, &c);
    if (rc != PIO_OK)
        return rc;
    if ((rc = d->tp->recv(c, st, 4)) == PIO_OK)
        rc = (int)((uint32_t)st[0] << 24 | (uint32_t)st[1] << 16 | (uint32_t)st[2] << 8 | st[3]);
    if (rc != PIO_OK) {
        d->tp->close(c);
        return rc;
    }
    *out = c;
    return PIO_OK;
}

void piod_relay_in(struct piod *d, struct pio_tp_conn *c, int m, const struct pio_frame *hello)
{
    uint8_t hdr[RELAY_HDR], buf[512];
    size_t len;
    struct pio_tp_conn *to = NULL;
    hdr_put(hdr, PIOD_RELAY_IN, 0, 0, NULL);
    int rc = pio_wire_encode(hello, buf, sizeof(buf), &len);
    if (rc == PIO_OK)
        rc = member_connect(d, m, hdr, &to);
    if (rc == PIO_OK) {
        struct iovec iov = {.iov_base = buf, .iov_len = len};
        rc = d->tp->sendv(to, &iov, 1);
    }
    if (rc != PIO_OK) {
        PIOD_WARN("cannot relay a channel for %s to its host: %s", d->cfg.members[m].name,
                  PIO_Strerror(rc));
        if (to)
            d->tp->close(to);
        d->tp->close(c);
        return;
    }
    splice_run(d, c, to);
}

/* Is addr:port a configured peer's data address? */
static int peer_data_addr(const struct piod *d, const char *addr, int port)
{
    for (int i = 0; i < d->cfg.npeers; i++) {
        const struct piod_peer *p = &d->cfg.peers[i];
        int dp = p->data_port ? p->data_port : d->cfg.data_port;
        for (int a = 0; a < p->naddr; a++)
            if (dp == port && same_addr(p->addr[a], addr))
                return 1;
    }
    return 0;
}

struct handler_arg {
    struct piod *d;
    struct pio_tp_conn *c;
    char from[PIO_TP_ADDR];
};

static void *handler_thread(void *arg)
{
    struct handler_arg *h = arg;
    struct piod *d = h->d;
    struct pio_tp_conn *c = h->c;
    uint8_t hdr[RELAY_HDR];
    struct piod_relay_hdr r;
    int rc = d->tp->recv(c, hdr, RELAY_HDR);
    if (rc != PIO_OK || piod_relay_hdr_get(hdr, &r) != 0) {
        PIOD_WARN("relay: %s sent no relay header: closed", h->from);
        d->tp->close(c);
        goto out;
    }
    if (r.kind == PIOD_RELAY_IN) { /* a channel for us, accepted by a member */
        /* handed to the main thread, which runs a receiver on it: the relay
         * never calls into the channels (chan_tx.c and chan_rx.c call the relay) */
        struct piod_ev *ev = calloc(1, sizeof(*ev));
        if (!ev) {
            d->tp->close(c);
            goto out;
        }
        ev->kind = PIOD_EV_ADOPT;
        ev->conn = c;
        piod_post(d, ev);
        goto out;
    }
    int link = r.link, port = r.port;
    const char *dst = r.addr;
    struct pio_tp_conn *out = NULL;
    if (link >= d->cfg.nlinks || d->cfg.link_owner[link] != -1) {
        rc = PIO_EINVAL;
    } else if (!peer_data_addr(d, dst, port)) {
        PIOD_WARN("relay: %s asked for %s port %d, not a peer's data address: refused", h->from,
                  dst, port);
        rc = PIO_EPERM;
    } else {
        struct pio_tp_opts o = d->tpo;
        o.timeout_ms = RELAY_TIMEOUT_MS;
        rc = d->tp->connect(d->cfg.listen[d->cfg.link_local[link]], dst, port, &o, &out);
    }
    if (status_send(d, c, rc) != PIO_OK || rc != PIO_OK) {
        if (out)
            d->tp->close(out);
        d->tp->close(c);
        goto out;
    }
    splice_run(d, c, out);
out:
    free(h);
    pthread_mutex_lock(&d->relay_mtx);
    d->nhandlers--;
    pthread_mutex_unlock(&d->relay_mtx);
    return NULL;
}

static void *accept_thread(void *arg)
{
    struct piod *d = arg;
    struct pio_tp_opts o = d->tpo;
    o.timeout_ms = -1;
    for (;;) {
        struct pio_tp_conn *c;
        int rc = d->tp->accept(d->relay_l, &o, &c);
        if (rc == PIO_ECLOSED || d->stopping) {
            if (rc == PIO_OK) /* accepted as we stop */
                d->tp->close(c);
            break;
        }
        if (rc != PIO_OK)
            continue;
        char remote[PIO_TP_ADDR], addr[PIOD_ADDR_MAX];
        d->tp->addrs(c, NULL, remote);
        addr_part(remote, addr, sizeof(addr));
        if (member_at(d, addr) < 0) {
            PIOD_WARN("relay: connection from %s, not a member of system %s: closed", remote,
                      d->cfg.system);
            d->tp->close(c);
            continue;
        }
        struct handler_arg *h = calloc(1, sizeof(*h));
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (h) {
            h->d = d;
            h->c = c;
            snprintf(h->from, sizeof(h->from), "%s", remote);
            pthread_mutex_lock(&d->relay_mtx);
            d->nhandlers++;
            pthread_mutex_unlock(&d->relay_mtx);
        }
        if (!h || pthread_create(&t, &at, handler_thread, h) != 0) {
            if (h) {
                pthread_mutex_lock(&d->relay_mtx);
                d->nhandlers--;
                pthread_mutex_unlock(&d->relay_mtx);
            }
            free(h);
            d->tp->close(c);
        }
        pthread_attr_destroy(&at);
    }
    return NULL;
}

/* ---- load reports ---- */

static int udp_sockaddr(const char *addr, int port, struct sockaddr_storage *ss, socklen_t *sl)
{
    memset(ss, 0, sizeof(*ss));
    if (strchr(addr, ':')) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        *sl = sizeof(*s6);
        return inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1 ? 0 : -1;
    }
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    s4->sin_family = AF_INET;
    s4->sin_port = htons((uint16_t)port);
    *sl = sizeof(*s4);
    return inet_pton(AF_INET, addr, &s4->sin_addr) == 1 ? 0 : -1;
}

int piod_relay_start(struct piod *d)
{
    d->load_fd = -1;
    if (d->cfg.nmembers == 0)
        return PIO_OK;
    d->members = calloc((size_t)d->cfg.nmembers, sizeof(*d->members));
    if (!d->members)
        return PIO_ENOMEM;
    int rc = d->tp->listen(d->cfg.internal, d->cfg.relay_port, &d->tpo, &d->relay_l, NULL);
    if (rc != PIO_OK) {
        PIOD_ERR("cannot listen for relays on %s port %d: %s", d->cfg.internal, d->cfg.relay_port,
                 PIO_Strerror(rc));
        return rc;
    }
    if (pthread_create(&d->relay_thr, NULL, accept_thread, d) != 0) {
        d->tp->listener_close(d->relay_l);
        d->relay_l = NULL;
        return PIO_ENOMEM;
    }
    struct sockaddr_storage ss;
    socklen_t sl;
    udp_sockaddr(d->cfg.internal, d->cfg.relay_port, &ss, &sl);
    d->load_fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (d->load_fd < 0 || bind(d->load_fd, (struct sockaddr *)&ss, sl) != 0) {
        PIOD_ERR("cannot bind the load-report socket %s port %d (udp): %s", d->cfg.internal,
                 d->cfg.relay_port, strerror(errno));
        return pio_from_errno(errno);
    }
    PIOD_INFO("system %s: %d link(s) over %d host(s); relays and load reports on %s port %d",
              d->cfg.system, d->cfg.nlinks, d->cfg.nmembers + 1, d->cfg.internal,
              d->cfg.relay_port);
    return PIO_OK;
}

void piod_relay_stop(struct piod *d)
{
    if (d->relay_l) {
        d->tp->listener_shutdown(d->relay_l);
        pthread_join(d->relay_thr, NULL);
        d->tp->listener_close(d->relay_l);
        d->relay_l = NULL;
    }
    /* shut every relayed connection; their threads end and free them */
    for (int i = 0; i < 200; i++) {
        pthread_mutex_lock(&d->relay_mtx);
        for (struct piod_splice *s = d->splices; s; s = s->next) {
            d->tp->shutdown(s->a);
            d->tp->shutdown(s->b);
        }
        int left = d->nsplices + d->nhandlers;
        pthread_mutex_unlock(&d->relay_mtx);
        if (left == 0)
            break;
        usleep(10000);
    }
    if (d->load_fd >= 0)
        close(d->load_fd);
    d->load_fd = -1;
    free(d->members);
    d->members = NULL;
}

#define LOAD_MAC 32 /* bytes of MAC after each H_LOAD */

/* The MAC key we share with member m: BLAKE2b of the X25519 agreement
 * between our secret key and its public key, with a purpose string and both
 * names in order (so each of the two derives the same key). Returns 0, or
 * -1 when a key is missing (said once). */
static int load_mac_key(struct piod *d, int m)
{
    struct piod_member_st *ms = &d->members[m];
    if (ms->mac_state != 0)
        return ms->mac_state > 0 ? 0 : -1;
    const char *name = d->cfg.members[m].name;
    const char *pub = piod_keys_public_of(&d->keys, name);
    uint8_t sk[32], pk[32], q[32];
    ms->mac_state = -1;
    if (!pub || strlen(d->keys.secret_key) != 40 || !zmq_z85_decode(sk, d->keys.secret_key) ||
        !zmq_z85_decode(pk, pub) || crypto_scalarmult(q, sk, pk) != 0) {
        PIOD_WARN("no MAC key for load reports with member %s (is %s.pub in the key "
                  "directory?): its reports are dropped and ours not sent to it",
                  name, name);
        sodium_memzero(sk, sizeof(sk));
        return -1;
    }
    const char *lo = strcmp(d->cfg.name, name) < 0 ? d->cfg.name : name;
    const char *hi = lo == name ? d->cfg.name : name;
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, sizeof(ms->mac_key));
    crypto_generichash_update(&st, q, sizeof(q));
    crypto_generichash_update(&st, (const uint8_t *)"pio H_LOAD MAC v1", 17);
    crypto_generichash_update(&st, (const uint8_t *)lo, strlen(lo) + 1);
    crypto_generichash_update(&st, (const uint8_t *)hi, strlen(hi) + 1);
    crypto_generichash_final(&st, ms->mac_key, sizeof(ms->mac_key));
    sodium_memzero(sk, sizeof(sk));
    sodium_memzero(q, sizeof(q));
    ms->mac_state = 1;
    return 0;
}

static void load_mac(const struct piod *d, int m, const uint8_t *msg, size_t len,
                     uint8_t mac[LOAD_MAC])
{
    crypto_generichash(mac, LOAD_MAC, msg, len, d->members[m].mac_key,
                       sizeof(d->members[m].mac_key));
}

void piod_relay_load_in(struct piod *d, struct pio_frame *f)
{
    /* its own buffer, the largest datagram: d->rbuf keeps the size
     * scratch_len had at start, and scratch_len grows */
    static uint8_t buf[65536];
    for (int k = 0; k < 16; k++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        ssize_t n = recvfrom(d->load_fd, buf, sizeof(buf), 0, (struct sockaddr *)&ss, &sl);
        if (n < 0)
            return;
        char addr[INET6_ADDRSTRLEN];
        if (ss.ss_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, addr, sizeof(addr));
        else
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, addr, sizeof(addr));
        int m = member_at(d, addr);
        if (m < 0)
            continue; /* not from a member: ignored */
        uint8_t mac[LOAD_MAC];
        int keyed = load_mac_key(d, m) == 0;
        if (keyed && n > LOAD_MAC)
            load_mac(d, m, buf, (size_t)n - LOAD_MAC, mac);
        if (!keyed || n <= LOAD_MAC || sodium_memcmp(mac, buf + n - LOAD_MAC, LOAD_MAC) != 0) {
            if (d->members[m].bad_mac++ == 0)
                PIOD_WARN("load report from %s (member %s's address) dropped: its MAC is wrong "
                          "or missing (not from a holder of %s's key; said once)",
                          addr, d->cfg.members[m].name, d->cfg.members[m].name);
            continue;
        }
        if (pio_wire_decode(buf, (size_t)n - LOAD_MAC, f, NULL) != PIO_OK ||
            f->type != PIO_F_H_LOAD || strcmp(f->u.h_load.host, d->cfg.members[m].name) != 0)
            continue; /* not a load report of that member: ignored */
        d->members[m].load = f->u.h_load;
        d->members[m].at_ms = piod_now_ms();
    }
}

void piod_relay_tick(struct piod *d, uint64_t now)
{
    if (d->load_fd < 0 || now - d->last_load_ms < LOAD_MS)
        return;
    d->last_load_ms = now;
    struct pio_frame *f = calloc(1, sizeof(*f));
    if (!f)
        return;
    f->type = PIO_F_H_LOAD;
    struct pio_h_load *l = &f->u.h_load;
    snprintf(l->host, sizeof(l->host), "%s", d->cfg.name);
    l->seq = ++d->load_seq;
    piod_chan_rows(d, l->chan, PIO_WIRE_MAX_LOAD, &l->nchan);
    size_t len, cap = pio_wire_encoded_size(f) + LOAD_MAC;
    uint8_t *b = malloc(cap);
    if (b && pio_wire_encode(f, b, cap - LOAD_MAC, &len) == PIO_OK) {
        for (int m = 0; m < d->cfg.nmembers; m++) {
            struct sockaddr_storage ss;
            socklen_t sl;
            if (load_mac_key(d, m) != 0)
                continue;
            load_mac(d, m, b, len, b + len);
            if (udp_sockaddr(d->cfg.members[m].internal, d->cfg.relay_port, &ss, &sl) == 0)
                sendto(d->load_fd, b, len + LOAD_MAC, MSG_DONTWAIT, (struct sockaddr *)&ss, sl);
        }
    }
    free(b);
    free(f);
}

void piod_relay_rows(struct piod *d, struct pio_chan_info *rows, uint32_t max, uint32_t *n)
{
    uint64_t now = piod_now_ms();
    for (int m = 0; m < d->cfg.nmembers && d->members; m++) {
        const struct pio_h_load *l = &d->members[m].load;
        int stale = d->members[m].at_ms == 0 || now - d->members[m].at_ms > LOAD_STALE_MS;
        for (uint32_t i = 0; i < l->nchan && *n < max; i++) {
            struct pio_chan_info *c = &rows[(*n)++];
            *c = l->chan[i];
            snprintf(c->host, sizeof(c->host), "%s", d->cfg.members[m].name);
            if (stale)
                c->state = PIO_WCHAN_UNKNOWN; /* no recent report */
        }
        if (l->nchan == 0 && *n < max) { /* a member never heard of: one row says so */
            struct pio_chan_info *c = &rows[(*n)++];
            memset(c, 0, sizeof(*c));
            snprintf(c->host, sizeof(c->host), "%s", d->cfg.members[m].name);
            c->state = PIO_WCHAN_UNKNOWN;
        }
    }
}
