/* pio-hostile.c - a hostile client and peer for tests/bats/hostile.bats.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * It crafts valid frames with the wire encoder (common/wire/wire.c), then
 * breaks them (lying lengths, huge counts, unknown types, bad magic, another
 * version) and sends them to a piod's process socket or data port; it
 * floods a piod with requests without reading the answers; it sits between
 * two piods on a data link (mitm) to replay a recorded channel proof; and,
 * through libpio, it sends to a partner that never receives, or never
 * receives itself.
 *
 * Usage (PIO_SOCKET names the piod's process socket):
 *   pio-hostile proc CASE [-j APP]        a raw process-plane client
 *   pio-hostile data ADDR PORT CASE [-s SYSTEM] [-b FROM]  a raw data-channel opener
 *   pio-hostile mitm LADDR LPORT TADDR TPORT OUT [-i CASE,...]  forward a link; replay
 *                                         the first data channel's proof, or (-i) break
 *                                         one accepted data channel per CASE (huge-chunk,
 *                                         ack, or a CASE of data) by writing into it
 *   pio-hostile flood-info N [-t S]       N P_INFO_REQ, never reading, then hold S s
 *   pio-hostile flood-send N [-j APP] [-p PARTNER] [-t S]  join, N eager P_SEND, never read
 *   pio-hostile flood-partner N [-j APP] [-t S]  join, N P_PARTNER for absent apps, hold
 *   pio-hostile hold-conns N [-t S]       N connections that never join, held S s
 *   pio-hostile idle-many ADDR PORT N [-t S]  N silent data connections from one address
 *   pio-hostile noread APP [-t S]         join and never read the socket
 *   pio-hostile spray APP PARTNER SIZE N MS [FIRST_MS]
 *                                         libpio: N sends of SIZE, each waited MS ms
 *                                         (and a pause of FIRST_MS after the first)
 *   pio-hostile sink APP                  libpio: join, never receive
 *   pio-hostile last-words PARTNER [-j APP] [-t S]  join, flood P_INFO_REQ unread until
 *                                         the piod stops reading us (-t: or just wait S s),
 *                                         then one eager message to PARTNER:0 (1000 bytes of
 *                                         pio-check's message 0, tag 1), P_BYE, and close
 *   pio-hostile churn N [TAGS]            N pairs of fresh names, one joined on PIO_SOCKET
 *                                         and one on PIO_SOCKET2: TAGS eager messages each
 *                                         way (one per tag), then both leave
 *   pio-hostile load ADDR PORT HOST [-b FROM]  one H_LOAD datagram (UDP) claiming to be
 *                                         member HOST's load report, without the members'
 *                                         MAC (32 zero bytes), one row rx_bytes 4242424242
 * CASE (proc and data): long-len short-len over-limit huge-count unknown-type
 * bad-magic bad-version bad-check; data also: skip-handshake bad-proof idle.
 * The raw modes print one line "RESULT ..." saying what the piod did:
 * "closed" (it hung up), "open" (still connected after the wait; for proc
 * followed by "resync ok" when a P_INFO_REQ sent after the bad frame is
 * answered), "welcome STATUS" / "accept STATUS" (its verdict frame).
 * Exit 0 when the exchange ran (the test judges the result), 2 on usage or
 * set-up errors, 3 for spray when a send timed out (back-pressure).
 */
#include "pio.h"
#include "common/wire/wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define CHECK_SEED 0x70696Fu
#define WAIT_MS    3000

static const char *opt_app = "hostile", *opt_partner = "nobody", *opt_system = "A", *opt_bind,
                  *opt_inject;
static int opt_hold = 0, opt_join = 0;

static void die(const char *what)
{
    fprintf(stderr, "pio-hostile: %s: %s\n", what, strerror(errno));
    exit(2);
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* recompute the header check over header bytes 0..11 and blen body bytes */
static void reseal(uint8_t *b, size_t blen)
{
    put32(b + 12, (uint32_t)XXH3_64bits_withSeed(b + PIO_WIRE_HDR, blen,
                                                 XXH3_64bits_withSeed(b, 12, CHECK_SEED)));
}

static size_t encode(const struct pio_frame *f, uint8_t *buf, size_t cap)
{
    size_t len;
    if (pio_wire_encode(f, buf, cap, &len) != PIO_OK) {
        fprintf(stderr, "pio-hostile: cannot encode %s\n", pio_wire_type_name(f->type));
        exit(2);
    }
    return len;
}

static void send_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* the piod hung up: the caller sees it when it reads */
        p += n;
        len -= (size_t)n;
    }
}

/* Read one frame (header + body) within ms. Returns 1, 0 on EOF/reset, -1 on timeout. */
static int recv_frame(int fd, uint8_t *buf, size_t cap, int ms, struct pio_frame *f)
{
    size_t have = 0, need = PIO_WIRE_HDR;
    while (have < need) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = poll(&p, 1, ms);
        if (n == 0)
            return -1;
        if (n < 0 && errno == EINTR)
            continue;
        ssize_t r = recv(fd, buf + have, need - have, 0);
        if (r <= 0)
            return 0;
        have += (size_t)r;
        if (have == PIO_WIRE_HDR && need == PIO_WIRE_HDR) {
            need += get32(buf + 8);
            if (need > cap) {
                fprintf(stderr, "pio-hostile: frame of %zu bytes is too big\n", need);
                exit(2);
            }
        }
    }
    if (f && pio_wire_decode(buf, have, f, NULL) != PIO_OK) {
        fprintf(stderr, "pio-hostile: the piod sent a frame we cannot decode\n");
        exit(2);
    }
    return 1;
}

/* Bind fd to the -b address, if one was given (exits on failure). */
static void bind_from(int fd)
{
    if (!opt_bind)
        return;
    struct sockaddr_in me;
    memset(&me, 0, sizeof(me));
    me.sin_family = AF_INET;
    if (inet_pton(AF_INET, opt_bind, &me.sin_addr) != 1 ||
        bind(fd, (struct sockaddr *)&me, sizeof(me)) != 0)
        die("bind -b");
}

/* Wait until fd is closed by the other end (1) or ms pass (0), discarding input. */
static int wait_closed(int fd, int ms)
{
    uint8_t junk[65536];
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        int left = ms - (int)((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
        if (left <= 0)
            return 0;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, left) <= 0)
            continue;
        ssize_t r = recv(fd, junk, sizeof(junk), MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
            return 1;
    }
}

static int unix_connect_env(const char *var)
{
    const char *path = getenv(var);
    if (!path) {
        fprintf(stderr, "pio-hostile: set %s\n", var);
        exit(2);
    }
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
        die(var);
    return fd;
}

static int unix_connect(void)
{
    return unix_connect_env("PIO_SOCKET");
}

static int tcp_connect_to(const char *addr, int port)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
        fprintf(stderr, "pio-hostile: bad address %s\n", addr);
        exit(2);
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die("socket");
    bind_from(fd);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
        die("connect to the data port");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

/* Join as app:0 of 1 with a raw P_HELLO; exits unless welcomed. */
static void join_as(int fd, const char *app)
{
    struct pio_frame f;
    uint8_t buf[4096];
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_HELLO;
    f.u.p_hello.proto = PIO_WIRE_VERSION;
    f.u.p_hello.nprocs = 1;
    f.u.p_hello.pid = (uint32_t)getpid();
    snprintf(f.u.p_hello.app, sizeof(f.u.p_hello.app), "%s", app);
    send_all(fd, buf, encode(&f, buf, sizeof(buf)));
    if (recv_frame(fd, buf, sizeof(buf), 10000, &f) != 1 || f.type != PIO_F_P_WELCOME ||
        f.u.p_welcome.status != PIO_OK) {
        fprintf(stderr, "pio-hostile: %s not welcomed\n", app);
        exit(2);
    }
}

static void raw_join(int fd)
{
    join_as(fd, opt_app);
}

/* Look partner up (P_PARTNER, 10 s) on a joined fd; exits unless it is known. */
static void await_partner(int fd, const char *partner)
{
    static uint8_t buf[1 << 17];
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_PARTNER;
    f.u.p_partner.req = 1;
    f.u.p_partner.timeout_ms = 10000;
    snprintf(f.u.p_partner.app, sizeof(f.u.p_partner.app), "%s", partner);
    send_all(fd, buf, encode(&f, buf, sizeof(buf)));
    while (recv_frame(fd, buf, sizeof(buf), 15000, &f) == 1)
        if (f.type == PIO_F_P_PARTNER_INFO) {
            if (f.u.p_partner_info.status == PIO_OK)
                return;
            break;
        }
    fprintf(stderr, "pio-hostile: partner %s not found\n", partner);
    exit(2);
}

/* Encode an eager message of len bytes for partner:0 with tag into buf. */
static size_t eager_frame(uint8_t *buf, size_t cap, uint64_t sid, const char *partner, int32_t tag,
                          const uint8_t *payload, size_t len)
{
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_SEND;
    f.u.p_send.sid = sid;
    f.u.p_send.size = len;
    f.u.p_send.count = len;
    f.u.p_send.tag = tag;
    f.u.p_send.datatype = PIO_BYTE;
    f.u.p_send.conn = PIO_WCONN_DYNAMIC;
    f.u.p_send.flags = PIO_WF_EAGER;
    f.u.p_send.payload = payload;
    snprintf(f.u.p_send.partner, sizeof(f.u.p_send.partner), "%s", partner);
    return encode(&f, buf, cap);
}

static size_t bye_frame(uint8_t *buf, size_t cap)
{
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_BYE;
    return encode(&f, buf, cap);
}

/* A broken frame for CASE, built from a valid one of the plane's first type.
 * Returns its length in buf. */
static size_t craft(const char *kase, int plane_data, uint8_t *buf, size_t cap)
{
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    if (plane_data) {
        f.type = PIO_F_C_HELLO;
        f.u.c_hello.proto = PIO_WIRE_VERSION;
        snprintf(f.u.c_hello.system, sizeof(f.u.c_hello.system), "%s", opt_system);
        snprintf(f.u.c_hello.host, sizeof(f.u.c_hello.host), "%s", opt_system);
    } else {
        f.type = PIO_F_P_HELLO;
        f.u.p_hello.proto = PIO_WIRE_VERSION;
        f.u.p_hello.nprocs = 1;
        f.u.p_hello.pid = (uint32_t)getpid();
        snprintf(f.u.p_hello.app, sizeof(f.u.p_hello.app), "%s", opt_app);
    }
    size_t len = encode(&f, buf, cap);
    size_t blen = len - PIO_WIRE_HDR;
    if (strcmp(kase, "long-len") == 0) { /* says 1000 bytes more than follow */
        put32(buf + 8, (uint32_t)(blen + 1000));
        reseal(buf, blen);
    } else if (strcmp(kase, "short-len") == 0) { /* says 4: the rest looks like a new frame */
        put32(buf + 8, 4);
        reseal(buf, 4);
    } else if (strcmp(kase, "over-limit") == 0) {
        put32(buf + 8, PIO_WIRE_MAX_BODY + 1);
        len = PIO_WIRE_HDR;
    } else if (strcmp(kase, "huge-count") == 0) {
        /* a valid list frame whose count field says 2^32 - 1 elements */
        memset(&f, 0, sizeof(f));
        if (plane_data) {
            f.type = PIO_F_C_ACK;
            f.u.c_ack.n = 1;
        } else {
            f.type = PIO_F_P_SEND_DATA;
            f.u.p_ranges.n = 1;
        }
        len = encode(&f, buf, cap);
        /* the count: C_ACK's first field; P_SEND_DATA's after id and msg_off */
        put32(buf + PIO_WIRE_HDR + (plane_data ? 0 : 16), 0xFFFFFFFFu);
        reseal(buf, len - PIO_WIRE_HDR);
    } else if (strcmp(kase, "unknown-type") == 0) {
        buf[5] = 99;
        reseal(buf, blen);
    } else if (strcmp(kase, "bad-magic") == 0) {
        memcpy(buf, "HTTP", 4);
        reseal(buf, blen);
    } else if (strcmp(kase, "bad-version") == 0) {
        buf[4] = PIO_WIRE_VERSION + 7;
        reseal(buf, blen);
    } else if (strcmp(kase, "bad-check") == 0) {
        buf[len - 1] ^= 0x55;
    } else {
        fprintf(stderr, "pio-hostile: unknown case %s\n", kase);
        exit(2);
    }
    return len;
}

static void result_proc(int fd, int joined)
{
    uint8_t buf[1 << 17];
    struct pio_frame f;
    /* what came back first: a verdict, nothing (in a second), or the end */
    int r = recv_frame(fd, buf, sizeof(buf), 1000, &f);
    if (r == 0) {
        printf("RESULT closed\n");
        return;
    }
    if (r == 1 && f.type == PIO_F_P_WELCOME) {
        printf("RESULT welcome %s\n", PIO_Errname(f.u.p_welcome.status));
        if (f.u.p_welcome.status != PIO_OK || joined) {
            printf("RESULT %s\n", wait_closed(fd, WAIT_MS) ? "closed" : "open");
            return;
        }
    }
    /* still connected: is the stream still in step? */
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_INFO_REQ;
    f.u.p_info_req.req = 4242;
    f.u.p_info_req.what = 7;
    send_all(fd, buf, encode(&f, buf, sizeof(buf)));
    for (;;) {
        r = recv_frame(fd, buf, sizeof(buf), WAIT_MS, &f);
        if (r != 1)
            break;
        if (f.type == PIO_F_P_INFO && f.u.p_info.req == 4242) {
            printf("RESULT open\nRESULT resync ok\n");
            return;
        }
    }
    printf("RESULT %s\n", r == 0 ? "closed" : "open");
}

static int m_proc(int argc, char **argv)
{
    if (argc < 1)
        return 2;
    const char *kase = argv[0];
    int fd = unix_connect();
    int joined = 0;
    if (opt_join) {
        raw_join(fd);
        joined = 1;
    }
    uint8_t buf[4096];
    size_t len = craft(kase, 0, buf, sizeof(buf));
    if (strcmp(kase, "short-len") == 0) {
        /* header says 4 body bytes: all of the real body follows anyway */
        send_all(fd, buf, len);
    } else if (strcmp(kase, "long-len") == 0) {
        send_all(fd, buf, len); /* 1000 bytes short: the piod waits, a while */
        printf("RESULT %s\n",
               wait_closed(fd, opt_hold ? opt_hold * 1000 : WAIT_MS) ? "closed" : "open");
        close(fd);
        return 0;
    } else {
        send_all(fd, buf, len);
    }
    result_proc(fd, joined);
    close(fd);
    return 0;
}

static int m_data(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    const char *addr = argv[0], *kase = argv[2];
    int fd = tcp_connect_to(addr, atoi(argv[1]));
    uint8_t buf[4096];
    struct pio_frame f;
    if (strcmp(kase, "idle") == 0) { /* connect and say nothing */
        printf("RESULT %s\n", wait_closed(fd, opt_hold * 1000) ? "closed" : "open");
        return 0;
    }
    if (strcmp(kase, "skip-handshake") == 0) { /* C_DATA with a payload, no C_HELLO */
        memset(&f, 0, sizeof(f));
        f.type = PIO_F_C_DATA;
        f.u.c_data.msgid = 1;
        f.u.c_data.len = 4096;
        size_t len = encode(&f, buf, sizeof(buf));
        send_all(fd, buf, len);
        memset(buf, 0xAB, sizeof(buf));
        send_all(fd, buf, sizeof(buf));
    } else if (strcmp(kase, "bad-proof") == 0) { /* a real system's name, a wrong MAC */
        memset(&f, 0, sizeof(f));
        f.type = PIO_F_C_HELLO;
        f.u.c_hello.proto = PIO_WIRE_VERSION;
        snprintf(f.u.c_hello.system, sizeof(f.u.c_hello.system), "%s", opt_system);
        snprintf(f.u.c_hello.host, sizeof(f.u.c_hello.host), "%s", opt_system);
        send_all(fd, buf, encode(&f, buf, sizeof(buf)));
        if (recv_frame(fd, buf, sizeof(buf), WAIT_MS, &f) != 1 || f.type != PIO_F_C_CHALLENGE) {
            printf("RESULT no-challenge\n");
            return 0;
        }
        memset(&f, 0, sizeof(f));
        f.type = PIO_F_C_PROOF;
        for (int i = 0; i < PIO_WIRE_KEY; i++)
            f.u.c_key.b[i] = (uint8_t)(i * 37 + 11);
        send_all(fd, buf, encode(&f, buf, sizeof(buf)));
    } else {
        size_t len = craft(kase, 1, buf, sizeof(buf));
        send_all(fd, buf, len);
    }
    int r = recv_frame(fd, buf, sizeof(buf), opt_hold ? opt_hold * 1000 : WAIT_MS, &f);
    if (r == 1 && f.type == PIO_F_C_ACCEPT) {
        printf("RESULT accept %s\n", PIO_Errname(f.u.c_accept.status));
        r = wait_closed(fd, WAIT_MS) ? 0 : -1;
    } else if (r == 1) {
        printf("RESULT got %s\n", pio_wire_type_name(f.type));
        r = wait_closed(fd, WAIT_MS) ? 0 : -1;
    }
    printf("RESULT %s\n", r == 0 ? "closed" : "open");
    close(fd);
    return 0;
}

/* ---- mitm: forward a link, record the opener's C_HELLO and C_PROOF ---- */

struct rec {
    uint8_t hello[1024], proof[256];
    size_t hello_len, proof_len;
    uint32_t index;
    int accepted; /* the target's C_ACCEPT said PIO_OK */
};

/* Parse frames of the handshake as they pass (only the first four). */
struct scan {
    uint8_t buf[1024];
    size_t have;
    int nframes;
};

static void scan_bytes(struct scan *s, const uint8_t *p, size_t n, struct rec *r, int from_opener)
{
    while (n > 0 && s->nframes < 2) {
        size_t need = PIO_WIRE_HDR;
        if (s->have >= PIO_WIRE_HDR)
            need += get32(s->buf + 8);
        if (need > sizeof(s->buf)) {
            s->nframes = 2;
            return;
        }
        size_t k = need - s->have < n ? need - s->have : n;
        memcpy(s->buf + s->have, p, k);
        s->have += k;
        p += k;
        n -= k;
        if (s->have < PIO_WIRE_HDR || s->have < PIO_WIRE_HDR + get32(s->buf + 8))
            continue;
        struct pio_frame f;
        if (pio_wire_decode(s->buf, s->have, &f, NULL) == PIO_OK) {
            if (from_opener && f.type == PIO_F_C_HELLO) {
                memcpy(r->hello, s->buf, s->have);
                r->hello_len = s->have;
                r->index = f.u.c_hello.index;
            } else if (from_opener && f.type == PIO_F_C_PROOF) {
                memcpy(r->proof, s->buf, s->have);
                r->proof_len = s->have;
            } else if (!from_opener && f.type == PIO_F_C_ACCEPT) {
                r->accepted = f.u.c_accept.status == PIO_OK;
            }
        }
        s->have = 0;
        s->nframes++;
    }
}

/* Replay r's C_HELLO and C_PROOF on a fresh connection; the verdict to out. */
static void replay(const char *taddr, int tport, const struct rec *r, const char *out)
{
    int fd = tcp_connect_to(taddr, tport);
    uint8_t buf[4096];
    struct pio_frame f;
    send_all(fd, r->hello, r->hello_len);
    const char *verdict = "no-challenge";
    char v[128];
    if (recv_frame(fd, buf, sizeof(buf), WAIT_MS, &f) == 1 && f.type == PIO_F_C_CHALLENGE) {
        send_all(fd, r->proof, r->proof_len);
        int rr = recv_frame(fd, buf, sizeof(buf), WAIT_MS, &f);
        if (rr == 1 && f.type == PIO_F_C_ACCEPT) {
            snprintf(v, sizeof(v), "accept %s", PIO_Errname(f.u.c_accept.status));
            verdict = v;
        } else {
            verdict = rr == 0 ? "closed" : "no-verdict";
        }
    }
    int closed = wait_closed(fd, WAIT_MS);
    close(fd);
    FILE *o = fopen(out, "w");
    if (o) {
        fprintf(o, "RESULT replay index %u %s\nRESULT %s\n", r->index, verdict,
                closed ? "closed" : "open");
        fclose(o);
    }
}

/* Break an authenticated data channel: write KASE's bytes to the acceptor
 * where C_DATA should come, and append what it did to out. */
static void inject(int b, const char *kase, const char *out)
{
    uint8_t buf[65536];
    size_t len = 0;
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    if (strcmp(kase, "huge-chunk") == 0) { /* a chunk of ~4 GiB nobody granted */
        f.type = PIO_F_C_DATA;
        f.u.c_data.msgid = 777;
        f.u.c_data.len = 0xF0000000u;
        len = encode(&f, buf, sizeof(buf));
    } else if (strcmp(kase, "ack") == 0) { /* only C_DATA may come this way */
        f.type = PIO_F_C_ACK;
        f.u.c_ack.n = 1;
        len = encode(&f, buf, sizeof(buf));
    } else {
        len = craft(kase, 1, buf, sizeof(buf));
    }
    send_all(b, buf, len);
    if (strcmp(kase, "huge-chunk") == 0) { /* and 256 MiB of it, if it reads them */
        memset(buf, 0x77, sizeof(buf));
        for (int i = 0; i < 4096; i++) {
            ssize_t n = send(b, buf, sizeof(buf), MSG_NOSIGNAL);
            if (n <= 0)
                break;
        }
    }
    int closed = wait_closed(b, WAIT_MS);
    FILE *o = fopen(out, "a");
    if (o) {
        fprintf(o, "RESULT inject %s %s\n", kase, closed ? "closed" : "open");
        fclose(o);
    }
}

/* The next injection case not yet used by another connection, or NULL. */
static const char *inject_claim(const char *out)
{
    static char list[256];
    snprintf(list, sizeof(list), "%s", opt_inject);
    int k = 0;
    for (char *save = NULL, *c = strtok_r(list, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
        char flag[4200];
        snprintf(flag, sizeof(flag), "%s.%d", out, k++);
        FILE *o = fopen(flag, "wx"); /* one connection per case, across forked children */
        if (o) {
            fclose(o);
            return c;
        }
    }
    return NULL;
}

static void forward(int a, int b, const char *taddr, int tport, const char *out)
{
    struct rec r;
    struct scan sa, sb;
    memset(&r, 0, sizeof(r));
    memset(&sa, 0, sizeof(sa));
    memset(&sb, 0, sizeof(sb));
    int replayed = 0;
    uint8_t buf[1 << 16];
    for (;;) {
        struct pollfd p[2] = {{.fd = a, .events = POLLIN}, {.fd = b, .events = POLLIN}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++) {
            if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t n = recv(p[i].fd, buf, sizeof(buf), 0);
            if (n <= 0)
                return;
            scan_bytes(i == 0 ? &sa : &sb, buf, (size_t)n, &r, i == 0);
            send_all(p[1 - i].fd, buf, (size_t)n);
        }
        if (!replayed && r.accepted && r.proof_len && r.index != 0xffffu && opt_inject) {
            replayed = 1;
            const char *kase = inject_claim(out);
            if (kase) {
                inject(b, kase, out);
                return; /* both ends closed: the opener reconnects through us */
            }
        }
        if (!replayed && r.accepted && r.proof_len && r.index != 0xffffu) {
            replayed = 1;
            /* the first data channel to get through: replay it once */
            FILE *o = fopen(out, "wx");
            if (o) {
                fclose(o);
                replay(taddr, tport, &r, out);
            }
        }
    }
}

static int m_mitm(int argc, char **argv)
{
    if (argc < 5)
        return 2;
    const char *laddr = argv[0], *taddr = argv[2], *out = argv[4];
    int lport = atoi(argv[1]), tport = atoi(argv[3]);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)lport);
    inet_pton(AF_INET, laddr, &sa.sin_addr);
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(l, 16) != 0)
        die("mitm listen");
    signal(SIGCHLD, SIG_IGN);
    printf("RESULT listening\n");
    fflush(stdout);
    for (;;) {
        int a = accept(l, NULL, NULL);
        if (a < 0)
            continue;
        if (fork() == 0) {
            close(l);
            int b = tcp_connect_to(taddr, tport);
            int on = 1;
            setsockopt(a, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
            forward(a, b, taddr, tport, out);
            _exit(0);
        }
        close(a);
    }
}

/* ---- floods ---- */

static int m_flood_info(int argc, char **argv)
{
    if (argc < 1)
        return 2;
    long n = atol(argv[0]);
    int fd = unix_connect();
    uint8_t buf[256];
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_INFO_REQ;
    f.u.p_info_req.what = 7;
    size_t len = encode(&f, buf, sizeof(buf));
    long sent = 0;
    /* non-blocking: stop when the piod stops reading us (its back-pressure) */
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (; sent < n; sent++) {
        ssize_t w = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w == (ssize_t)len)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            clock_gettime(CLOCK_MONOTONIC, &t);
            if (t.tv_sec - t0.tv_sec > 5 || poll(&p, 1, 2000) <= 0)
                break; /* it no longer reads what we send: throttled */
            sent--;
            continue;
        }
        if (w < 0) {
            printf("RESULT closed after %ld requests\n", sent);
            return 0;
        }
        send_all(fd, buf + w, len - (size_t)w); /* rare partial write */
    }
    printf("RESULT sent %ld requests\n", sent);
    fflush(stdout);
    printf("RESULT %s\n", wait_closed(fd, opt_hold * 1000) ? "closed" : "open");
    return 0;
}

static int m_flood_send(int argc, char **argv)
{
    if (argc < 1)
        return 2;
    long n = atol(argv[0]);
    int fd = unix_connect();
    raw_join(fd);
    uint8_t payload[512], buf[1024];
    memset(payload, 0x5A, sizeof(payload));
    long sent = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (; sent < n; sent++) {
        struct pio_frame f;
        memset(&f, 0, sizeof(f));
        f.type = PIO_F_P_SEND;
        f.u.p_send.sid = (uint64_t)sent + 1;
        f.u.p_send.size = sizeof(payload);
        f.u.p_send.count = sizeof(payload);
        f.u.p_send.datatype = PIO_BYTE;
        f.u.p_send.conn = PIO_WCONN_DYNAMIC;
        f.u.p_send.flags = PIO_WF_EAGER;
        f.u.p_send.payload = payload;
        snprintf(f.u.p_send.partner, sizeof(f.u.p_send.partner), "%s", opt_partner);
        size_t len = encode(&f, buf, sizeof(buf));
        ssize_t w = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w == (ssize_t)len)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            clock_gettime(CLOCK_MONOTONIC, &t);
            if (t.tv_sec - t0.tv_sec > 5 || poll(&p, 1, 1000) <= 0)
                break;
            sent--;
            continue;
        }
        if (w < 0) {
            printf("RESULT closed after %ld sends\n", sent);
            return 0;
        }
        send_all(fd, buf + w, len - (size_t)w);
    }
    printf("RESULT sent %ld sends\n", sent);
    fflush(stdout);
    printf("RESULT %s\n", wait_closed(fd, opt_hold * 1000) ? "closed" : "open");
    return 0;
}

static int m_flood_partner(int argc, char **argv)
{
    if (argc < 1)
        return 2;
    long n = atol(argv[0]), answered = 0, busy = 0;
    int fd = unix_connect();
    raw_join(fd);
    uint8_t buf[4096];
    for (long i = 0; i < n; i++) { /* each names an application that never comes */
        struct pio_frame f;
        memset(&f, 0, sizeof(f));
        f.type = PIO_F_P_PARTNER;
        f.u.p_partner.req = (uint64_t)i + 1;
        f.u.p_partner.timeout_ms = 600000;
        snprintf(f.u.p_partner.app, sizeof(f.u.p_partner.app), "never-%ld", i);
        send_all(fd, buf, encode(&f, buf, sizeof(buf)));
    }
    /* count the answers that come at once (refusals), without waiting for the rest */
    struct pio_frame f;
    while (recv_frame(fd, buf, sizeof(buf), 1000, &f) == 1)
        if (f.type == PIO_F_P_PARTNER_INFO) {
            answered++;
            busy += f.u.p_partner_info.status == PIO_EBUSY;
        }
    printf("RESULT %ld look-ups, %ld answered at once, %ld PIO_EBUSY\n", n, answered, busy);
    printf("RESULT %s\n", wait_closed(fd, opt_hold * 1000) ? "closed" : "open");
    return 0;
}

static int m_hold_conns(int argc, char **argv)
{
    if (argc < 1)
        return 2;
    int n = atoi(argv[0]), closed = 0;
    int *fds = calloc((size_t)n, sizeof(*fds));
    if (!fds)
        return 2;
    for (int i = 0; i < n; i++)
        fds[i] = unix_connect();
    printf("RESULT holding %d\n", n);
    fflush(stdout);
    for (int t = 0; t < opt_hold * 10; t++)
        usleep(100000);
    for (int i = 0; i < n; i++) {
        struct pollfd p = {.fd = fds[i], .events = POLLIN};
        char c;
        if (poll(&p, 1, 0) > 0 && recv(fds[i], &c, 1, MSG_DONTWAIT) == 0)
            closed++;
    }
    printf("RESULT %d of %d closed by the piod\n", closed, n);
    free(fds);
    return 0;
}

/* N data connections from one address that say nothing: how many the piod
 * refuses at once, and whether it closes the rest (within -t seconds). */
static int m_idle_many(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    int n = atoi(argv[2]), early = 0, late = 0;
    int *fds = calloc((size_t)n, sizeof(*fds));
    if (!fds)
        return 2;
    for (int i = 0; i < n; i++)
        fds[i] = tcp_connect_to(argv[0], atoi(argv[1]));
    usleep(500000);
    for (int i = 0; i < n; i++)
        if (wait_closed(fds[i], 1)) {
            early++;
            close(fds[i]);
            fds[i] = -1;
        }
    printf("RESULT refused at once %d of %d\n", early, n);
    fflush(stdout);
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0 && wait_closed(fds[i], opt_hold * 1000))
            late++;
    printf("RESULT closed later %d of %d\n", late, n - early);
    free(fds);
    return 0;
}

static int m_noread(int argc, char **argv)
{
    if (argc < 1)
        return 2;
    opt_app = argv[0];
    int fd = unix_connect();
    raw_join(fd);
    printf("RESULT joined\n");
    fflush(stdout);
    /* never read: only notice (by a zero-byte poll for hang-up) that the piod dropped us */
    for (int i = 0; i < opt_hold * 10; i++) {
        struct pollfd p = {.fd = fd, .events = 0};
        if (poll(&p, 1, 100) > 0 && (p.revents & (POLLHUP | POLLERR))) {
            printf("RESULT closed\n");
            return 0;
        }
    }
    printf("RESULT open\n");
    return 0;
}

/* pio-check's pattern (tests/prog/pio-check.c pat): byte off of message msg */
static uint8_t check_pat(uint64_t msg, uint64_t off)
{
    uint64_t x = (msg + 1) * 0x9E3779B97F4A7C15ull ^ (off >> 3) * 0xBF58476D1CE4E5B9ull;
    return (uint8_t)((x >> 29) ^ off);
}

/* Unread bytes we wrote to fd (the piod has not read them yet). */
static int unread(int fd)
{
    int q = 0;
    return ioctl(fd, SIOCOUTQ, &q) == 0 ? q : -1;
}

/* One eager message to partner:0 (1000 bytes of pio-check's message 0, tag
 * 1), P_BYE, and close: at once, or (at_once 0) after half a second, having
 * seen whether the piod read them. */
static int last_words(int fd, const char *partner, int at_once)
{
    uint8_t payload[1000], out[4096];
    for (size_t i = 0; i < sizeof(payload); i++)
        payload[i] = check_pat(0, i);
    size_t len = eager_frame(out, sizeof(out), 1, partner, 1, payload, sizeof(payload));
    len += bye_frame(out + len, sizeof(out) - len);
    ssize_t w = send(fd, out, len, MSG_DONTWAIT | MSG_NOSIGNAL);
    int left = -1;
    if (!at_once) {
        usleep(500000);
        left = unread(fd);
        /* read what the piod told us (events), as libpio's reader would have:
         * a socket closed with input unread looks reset to the piod, not hung up */
        uint8_t junk[65536];
        while (recv(fd, junk, sizeof(junk), MSG_DONTWAIT) > 0)
            ;
    }
    close(fd); /* our answers unread */
    printf("RESULT last words %s", w == (ssize_t)len ? "sent" : "not sent");
    if (!at_once)
        printf(", %d bytes unread after 0.5 s", left);
    printf("\n");
    return 0;
}

static int m_last_words(int argc, char **argv)
{
    if (argc < 1)
        return 2;
    int fd = unix_connect();
    raw_join(fd);
    await_partner(fd, argv[0]);
    if (opt_hold > 0) { /* -t S: the piod stops reading us for its own reasons (a full lane) */
        printf("RESULT ready\n");
        fflush(stdout);
        sleep((unsigned)opt_hold);
        return last_words(fd, argv[0], 0);
    }
    /* requests in batches, until one batch stays unread: the piod owes us
     * too many answers and stopped reading us (its back-pressure). The
     * socket still has room for our last words. */
    static uint8_t batch[256 * 64];
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_INFO_REQ;
    f.u.p_info_req.what = 7;
    size_t one = encode(&f, batch, sizeof(batch)), blen = one;
    while (blen + one <= sizeof(batch)) {
        memcpy(batch + blen, batch, one);
        blen += one;
    }
    long batches = 0;
    for (int paused = 0; !paused; batches++) {
        if (batches > 100000) {
            printf("RESULT never paused\n");
            return 0;
        }
        ssize_t w = send(fd, batch, blen, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w != (ssize_t)blen) {
            printf("RESULT the socket filled before the pause\n");
            return 0;
        }
        /* unread after half a second: it is not reading us any more */
        for (int t = 0; t < 50 && unread(fd) > 0; t++)
            usleep(10000);
        paused = unread(fd) > 0;
    }
    printf("RESULT paused after %ld batches of %zu requests\n", batches, blen / one);
    return last_words(fd, argv[0], 1);
}

static int m_churn(int argc, char **argv)
{
    if (argc < 1)
        return 2;
    long n = atol(argv[0]);
    int tags = argc > 1 ? atoi(argv[1]) : 1;
    static uint8_t buf[1 << 17];
    uint8_t payload[64];
    memset(payload, 0xA5, sizeof(payload));
    for (long i = 0; i < n; i++) {
        char name[2][PIO_WIRE_NAME];
        int fd[2];
        snprintf(name[0], sizeof(name[0]), "churn-%d-%ld-s", (int)getpid(), i);
        snprintf(name[1], sizeof(name[1]), "churn-%d-%ld-r", (int)getpid(), i);
        fd[1] = unix_connect_env("PIO_SOCKET2");
        join_as(fd[1], name[1]);
        fd[0] = unix_connect();
        join_as(fd[0], name[0]);
        /* one way, then back: streams and remote applications on both piods */
        for (int dir = 0; dir < 2; dir++) {
            int from = fd[dir], to = fd[!dir];
            await_partner(from, name[!dir]);
            size_t len = 0;
            for (int t = 0; t < tags; t++)
                len += eager_frame(buf + len, sizeof(buf) - len, (uint64_t)t + 1, name[!dir], t,
                                   payload, sizeof(payload));
            send_all(from, buf, len);
            struct pio_frame f;
            int got = 0;
            while (got < tags && recv_frame(to, buf, sizeof(buf), 10000, &f) == 1)
                got += f.type == PIO_F_P_MSG_NEW;
            if (got < tags) {
                printf("RESULT pair %ld: %d of %d messages came\n", i, got, tags);
                return 1;
            }
        }
        for (int k = 0; k < 2; k++) {
            send_all(fd[k], buf, bye_frame(buf, sizeof(buf)));
            close(fd[k]);
        }
    }
    printf("RESULT churn %ld pairs\n", n);
    return 0;
}

/* ---- through libpio ---- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static int m_spray(int argc, char **argv)
{
    if (argc < 5)
        return 2;
    size_t size = (size_t)atol(argv[2]);
    long n = atol(argv[3]);
    int ms = atoi(argv[4]), first_ms = argc > 5 ? atoi(argv[5]) : 0, partner, rc;
    uint8_t *b = malloc(size ? size : 1);
    if (!b)
        return 2;
    memset(b, 0xC3, size);
    if ((rc = PIO_Init(argv[0], 0, 1)) != PIO_OK ||
        (rc = PIO_Setpartner(argv[1], &partner)) != PIO_OK) {
        printf("FAIL %s\n", PIO_Errname(rc));
        return 1;
    }
    printf("RESULT started\n");
    fflush(stdout);
    for (long i = 0; i < n; i++) {
        PIO_Request req;
        PIO_Status st;
        double t0 = now_s();
        rc = PIO_Isend(partner, 0, 7, PIO_DYNAMIC, b, PIO_BYTE, size, PIO_BLOCKING, &req);
        if (rc == PIO_OK)
            rc = PIO_Wait(&req, ms, &st);
        if (rc == PIO_ETIMEDOUT) {
            printf("RESULT blocked after %ld sends: %s (%s) after %.1f s\n", i, PIO_Errname(rc),
                   PIO_Strerror(rc), now_s() - t0);
            fflush(stdout);
            _exit(3); /* the request is still the piod's: leave without PIO_Exit */
        }
        if (rc != PIO_OK) {
            printf("FAIL send %ld: %s\n", i, PIO_Errname(rc));
            return 1;
        }
        printf("RESULT sent %ld\n", i + 1);
        fflush(stdout);
        if (i == 0 && first_ms > 0)
            usleep((useconds_t)first_ms * 1000); /* e.g. a direct lane comes up meanwhile */
    }
    PIO_Exit();
    return 0;
}

static int m_sink(int argc, char **argv)
{
    if (argc < 1)
        return 2;
    int rc = PIO_Init(argv[0], 0, 1); /* the sender looks us up; we never look back */
    if (rc != PIO_OK) {
        printf("FAIL %s\n", PIO_Errname(rc));
        return 1;
    }
    printf("RESULT sink ready\n");
    fflush(stdout);
    for (;;)
        pause(); /* never calls PIO_Recv */
}

/* load ADDR PORT HOST: one H_LOAD datagram claiming to be member HOST's
 * report, with one channel row marked rx_bytes = 4242424242 and 32 zero
 * bytes where the members' MAC goes (we hold no system key). */
static int m_load(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    struct pio_frame *f = calloc(1, sizeof(*f));
    if (!f)
        die("calloc");
    f->type = PIO_F_H_LOAD;
    snprintf(f->u.h_load.host, sizeof(f->u.h_load.host), "%s", argv[2]);
    f->u.h_load.seq = 1000000;
    f->u.h_load.nchan = 1;
    struct pio_chan_info *c = &f->u.h_load.chan[0];
    snprintf(c->peer, sizeof(c->peer), "SPOOF");
    c->state = 2;
    c->rx_bytes = 4242424242ull;
    size_t cap = pio_wire_encoded_size(f) + 32, len;
    uint8_t *b = calloc(1, cap);
    if (!b || pio_wire_encode(f, b, cap - 32, &len) != PIO_OK)
        die("encode H_LOAD");
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)atoi(argv[1]));
    if (inet_pton(AF_INET, argv[0], &sa.sin_addr) != 1)
        return 2;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die("socket");
    bind_from(fd); /* a member's address */
    ssize_t n = sendto(fd, b, len + 32, 0, (struct sockaddr *)&sa, sizeof(sa));
    printf("RESULT sent %zd bytes\n", n);
    close(fd);
    free(b);
    free(f);
    return n == (ssize_t)(len + 32) ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: pio-hostile proc|data|mitm|flood-info|flood-send|flood-partner|"
                        "hold-conns|idle-many|noread|spray|sink|last-words|churn|load ...\n");
        return 2;
    }
    const char *mode = argv[1];
    /* options anywhere after the mode: -j APP -p PARTNER -s SYSTEM -t SECONDS -b ADDR */
    char *pos[16];
    int npos = 0;
    for (int i = 2; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1] && !argv[i][2] && i + 1 < argc) {
            switch (argv[i][1]) {
            case 'j':
                opt_app = argv[++i];
                opt_join = 1;
                continue;
            case 'p': opt_partner = argv[++i]; continue;
            case 's': opt_system = argv[++i]; continue;
            case 't': opt_hold = atoi(argv[++i]); continue;
            case 'b': opt_bind = argv[++i]; continue;
            case 'i': opt_inject = argv[++i]; continue;
            default: break;
            }
        }
        if (npos < 16)
            pos[npos++] = argv[i];
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    int rc = 2;
    if (strcmp(mode, "proc") == 0)
        rc = m_proc(npos, pos);
    else if (strcmp(mode, "data") == 0)
        rc = m_data(npos, pos);
    else if (strcmp(mode, "mitm") == 0)
        rc = m_mitm(npos, pos);
    else if (strcmp(mode, "flood-info") == 0)
        rc = m_flood_info(npos, pos);
    else if (strcmp(mode, "flood-send") == 0)
        rc = m_flood_send(npos, pos);
    else if (strcmp(mode, "flood-partner") == 0)
        rc = m_flood_partner(npos, pos);
    else if (strcmp(mode, "hold-conns") == 0)
        rc = m_hold_conns(npos, pos);
    else if (strcmp(mode, "idle-many") == 0)
        rc = m_idle_many(npos, pos);
    else if (strcmp(mode, "noread") == 0)
        rc = m_noread(npos, pos);
    else if (strcmp(mode, "spray") == 0)
        rc = m_spray(npos, pos);
    else if (strcmp(mode, "sink") == 0)
        rc = m_sink(npos, pos);
    else if (strcmp(mode, "last-words") == 0)
        rc = m_last_words(npos, pos);
    else if (strcmp(mode, "churn") == 0)
        rc = m_churn(npos, pos);
    else if (strcmp(mode, "load") == 0)
        rc = m_load(npos, pos);
    if (rc == 2)
        fprintf(stderr, "pio-hostile: bad arguments for %s\n", mode);
    return rc;
}
