/* pio-check.c - end-to-end checks of the PIO API, run as a sender and a receiver.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Usage: pio-check ROLE TEST [-a APP] [-p PARTNER] [-n N] [-r RANK] [-P NPROCS]
 *                  [-m blocking|sync] [-c USER:i|STATIC|DYNAMIC] [-S sizes] [-T threads]
 * ROLE is send or recv; the two halves of a TEST run as two applications
 * (usually through two piods). Every payload is a pattern derived from
 * (message index, byte offset), so the receiver checks every byte without
 * the sender telling it anything. Exit 0 and a line "OK ..." on success;
 * exit 1 with "FAIL ..." on any mismatch or unexpected status.
 */
#include "pio.h"
#include "tests/lib/prog.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *app = NULL, *partner_name = NULL;
static int nmsg = 0, rank = 0, nprocs = 1, mode = PIO_BLOCKING, conn = PIO_DYNAMIC, nthreads = 8;
static const char *sizes_arg = NULL;
static int partner;

#define EXPECT(call, want)                                                                         \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != (want))                                                                         \
            FAIL("%s -> %s, expected %s", #call, PIO_Errname(rc_), PIO_Errname(want));             \
    } while (0)

static uint8_t pat(uint64_t msg, uint64_t off)
{
    uint64_t x = (msg + 1) * 0x9E3779B97F4A7C15ull ^ (off >> 3) * 0xBF58476D1CE4E5B9ull;
    return (uint8_t)((x >> 29) ^ off);
}

static void fill(uint8_t *b, size_t n, uint64_t msg)
{
    for (size_t i = 0; i < n; i++)
        b[i] = pat(msg, i);
}

static void verify_from(const uint8_t *b, size_t from, size_t n, uint64_t msg)
{
    for (size_t i = from; i < n; i++)
        if (b[i] != pat(msg, i))
            FAIL("message %llu byte %zu of %zu: got %u want %u", (unsigned long long)msg, i, n,
                 b[i], pat(msg, i));
}

static void verify(const uint8_t *b, size_t n, uint64_t msg)
{
    verify_from(b, 0, n, msg);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (*end == 'K' || *end == 'k')
        v *= 1024;
    else if (*end == 'M' || *end == 'm')
        v *= 1024 * 1024;
    else if (*end == 'G' || *end == 'g')
        v *= 1024.0 * 1024 * 1024;
    return (size_t)v;
}

static int parse_sizes(size_t *out, int max)
{
    PIO_Hostinfo h;
    CHECK(PIO_Gethostinfo(&h));
    const char *s = sizes_arg;
    char dflt[256];
    if (!s) {
        snprintf(dflt, sizeof(dflt), "0,1,%zu,%zu,%zu,1M", h.eager_limit - 1, h.eager_limit,
                 h.eager_limit + 1);
        s = dflt;
    }
    int n = 0;
    char *copy = strdup(s), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save))
        out[n++] = parse_size(t);
    free(copy);
    return n;
}

/* ---- tests ---- */

/* 60 s, times $PIO_TEST_MULT (tests/run sets it for sanitized builds) */
static int recv_ms(void)
{
    const char *m = getenv("PIO_TEST_MULT");
    int k = m ? atoi(m) : 1;
    return 60000 * (k >= 1 && k <= 20 ? k : 1);
}

static void t_sizes(int send)
{
    PIO_Status last = {.uid = (unsigned)-1, .gid = (unsigned)-1};
    size_t sz[64];
    int n = parse_sizes(sz, 64);
    for (int i = 0; i < n; i++) {
        uint8_t *b = malloc(sz[i] ? sz[i] : 1);
        if (!b)
            FAIL("malloc %zu", sz[i]);
        if (send) {
            fill(b, sz[i], (uint64_t)i);
            CHECK(PIO_Send(partner, 0, 1, conn, b, PIO_BYTE, sz[i], mode));
        } else {
            PIO_Status st;
            memset(b, 0xEE, sz[i]);
            CHECK(PIO_Recv(partner, 0, 1, b, PIO_BYTE, sz[i], recv_ms(), mode, &st));
            if (st.bytes != sz[i] || st.count != sz[i] || st.tag != 1 || st.source != 0)
                FAIL("status: bytes %zu count %zu tag %d source %d for size %zu", st.bytes,
                     st.count, st.tag, st.source, sz[i]);
            verify(b, sz[i], (uint64_t)i);
            if (i > 0 &&
                (st.uid != last.uid || st.gid != last.gid || strcmp(st.system, last.system) != 0))
                FAIL("status: message %d from uid %u gid %u system %s, message %d from uid %u "
                     "gid %u system %s",
                     i, st.uid, st.gid, st.system, i - 1, last.uid, last.gid, last.system);
            last = st;
        }
        free(b);
    }
    if (send)
        printf("OK sizes: %d messages (%s)\n", n, sizes_arg ? sizes_arg : "default");
    else /* who the piods say sent them */
        printf("OK sizes: %d messages (%s) from uid %u gid %u system %s user %s\n", n,
               sizes_arg ? sizes_arg : "default", last.uid, last.gid, last.system, last.user);
}

/* Typed values: element i of datatype t, written in host order. */
static void typed_fill(int t, void *buf, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        int64_t v = (int64_t)(i * 2654435761u) - 1000000;
        switch (t) {
        case PIO_BYTE:
        case PIO_CHAR:
        case PIO_INT8:
        case PIO_UINT8:
        case PIO_CHARACTER: ((uint8_t *)buf)[i] = (uint8_t)v; break;
        case PIO_INT16:
        case PIO_UINT16: ((uint16_t *)buf)[i] = (uint16_t)v; break;
        case PIO_INT32:
        case PIO_UINT32:
        case PIO_INTEGER:
        case PIO_LOGICAL: ((uint32_t *)buf)[i] = (uint32_t)v; break;
        case PIO_INT64:
        case PIO_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v * 977; break;
        case PIO_FLOAT:
        case PIO_REAL: ((float *)buf)[i] = (float)v / 7.0f; break;
        case PIO_DOUBLE:
        case PIO_DOUBLE_PRECISION: ((double *)buf)[i] = (double)v / 7.0; break;
        case PIO_COMPLEX:
            ((float *)buf)[2 * i] = (float)v;
            ((float *)buf)[2 * i + 1] = -(float)v / 3;
            break;
        case PIO_DOUBLE_COMPLEX:
            ((double *)buf)[2 * i] = (double)v;
            ((double *)buf)[2 * i + 1] = -(double)v / 3;
            break;
        }
    }
}

static size_t tsize(int t)
{
#define TS_(name, code, bytes)                                                                     \
    if (t == code)                                                                                 \
        return bytes;
    PIO_DATATYPES(TS_)
#undef TS_
    return 0;
}

static void t_types(int send)
{
    const size_t counts[2] = {100, 300000}; /* eager and large */
    int types[] = {
#define TL_(name, code, bytes) code,
        PIO_DATATYPES(TL_)
#undef TL_
    };
    int nt = (int)(sizeof(types) / sizeof(types[0]));
    int msgs = 0;
    for (int c = 0; c < 2; c++)
        for (int k = 0; k < nt; k++) {
            int t = types[k];
            size_t n = counts[c], bytes = n * tsize(t);
            uint8_t *want = malloc(bytes), *got = malloc(bytes);
            typed_fill(t, want, n);
            if (send) {
                CHECK(PIO_Send(partner, 0, 100 + t, conn, want, t, n, mode));
            } else {
                PIO_Status st;
                memset(got, 0, bytes);
                CHECK(PIO_Recv(partner, 0, 100 + t, got, t, n, 60000, mode, &st));
                if (memcmp(got, want, bytes) != 0 || st.datatype != t || st.count != n)
                    FAIL("type %d count %zu: data or status wrong", t, n);
            }
            msgs++;
            free(want);
            free(got);
        }
    /* compatible pairs, raw bytes, and refusals that keep the message */
    static const int pairs[][2] = {{PIO_INT32, PIO_INTEGER},
                                   {PIO_FLOAT, PIO_REAL},
                                   {PIO_DOUBLE, PIO_DOUBLE_PRECISION},
                                   {PIO_DOUBLE, PIO_BYTE}};
    for (int c = 0; c < 2; c++)
        for (int k = 0; k < 4; k++) {
            int ts = pairs[k][0], tr = pairs[k][1];
            size_t n = counts[c], bytes = n * tsize(ts);
            uint8_t *want = malloc(bytes), *got = malloc(bytes);
            typed_fill(ts, want, n);
            if (send) {
                CHECK(PIO_Send(partner, 0, 200 + k, conn, want, ts, n, mode));
            } else {
                size_t rn = bytes / tsize(tr);
                CHECK(PIO_Recv(partner, 0, 200 + k, got, tr, rn, 60000, mode, NULL));
                if (memcmp(got, want, bytes) != 0)
                    FAIL("compatible pair %d -> %d count %zu: data wrong", ts, tr, n);
            }
            msgs++;
            free(want);
            free(got);
        }
    for (int c = 0; c < 2; c++) {
        size_t n = counts[c], bytes = n * 4;
        int32_t *want = malloc(bytes), *got = malloc(bytes);
        typed_fill(PIO_INT32, want, n);
        if (send) {
            CHECK(PIO_Send(partner, 0, 300, conn, want, PIO_INT32, n, mode));
        } else {
            PIO_Status st;
            EXPECT(PIO_Recv(partner, 0, 300, got, PIO_FLOAT, n, 60000, mode, &st), PIO_ETYPE);
            EXPECT(PIO_Recv(partner, 0, 300, got, PIO_INT32, n - 1, 60000, mode, &st), PIO_ETRUNC);
            CHECK(PIO_Recv(partner, 0, 300, got, PIO_INT32, n + 5, 60000, mode, &st));
            if (memcmp(got, want, bytes) != 0 || st.count != n)
                FAIL("message kept after ETYPE/ETRUNC (count %zu): wrong data", n);
        }
        msgs++;
        free(want);
        free(got);
    }
    printf("OK types: %d messages, %d datatypes, eager and chunked\n", msgs, nt);
}

/* n senders (ranks of one application) x 3 tags; the receiver uses wildcards. */
static void t_wild(int send)
{
    int per = 3;
    if (send) {
        for (int k = 0; k < per; k++) {
            size_t len = 100 + (size_t)k * 40000;
            uint8_t *b = malloc(len);
            fill(b, len, (uint64_t)(rank * 10 + k));
            CHECK(PIO_Send(partner, 0, 10 + k, conn, b, PIO_BYTE, len, mode));
            free(b);
        }
        printf("OK wild: rank %d sent %d\n", rank, per);
        return;
    }
    int senders = nmsg > 0 ? nmsg : 2;
    int seen[64][8];
    memset(seen, 0, sizeof(seen));
    uint8_t *b = malloc(1 << 20);
    for (int i = 0; i < senders * per; i++) {
        PIO_Status st;
        CHECK(PIO_Recv(PIO_ANY_PARTNER, PIO_ANY_PROCESS, PIO_ANY_TAG, b, PIO_BYTE, 1 << 20, 60000,
                       mode, &st));
        if (st.source < 0 || st.source >= senders || st.tag < 10 || st.tag >= 10 + per)
            FAIL("status source %d tag %d", st.source, st.tag);
        if (st.partner != partner)
            FAIL("status partner %d, expected %d", st.partner, partner);
        int k = st.tag - 10;
        if (seen[st.source][k]++)
            FAIL("duplicate source %d tag %d", st.source, st.tag);
        if (st.bytes != 100 + (size_t)k * 40000)
            FAIL("size %zu for tag %d", st.bytes, st.tag);
        verify(b, st.bytes, (uint64_t)(st.source * 10 + k));
    }
    /* a specific source with any tag, nothing left: it times out, or says the
     * source is gone once that sender has left */
    int rc = PIO_Recv(partner, 0, PIO_ANY_TAG, b, PIO_BYTE, 16, 200, mode, NULL);
    if (rc != PIO_ETIMEDOUT && rc != PIO_EGONE)
        FAIL("receive with nothing left -> %s", PIO_Errname(rc));
    free(b);
    printf("OK wild: %d messages from %d senders via wildcards\n", senders * per, senders);
}

static size_t order_size(int i)
{
    uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ull;
    x ^= x >> 31;
    int r = (int)(x % 100);
    if (r < 70)
        return 8 + x % 1024;
    if (r < 95)
        return 8 + x % (70 * 1024);
    return 8 + x % (3u << 20);
}

static void t_order(int send)
{
    int n = nmsg > 0 ? nmsg : 10000;
    uint8_t *b = malloc((3u << 20) + 16);
    double t0 = now();
    uint64_t bytes = 0;
    for (int i = 0; i < n; i++) {
        size_t len = order_size(i);
        if (send) {
            fill(b, len, (uint64_t)i);
            memcpy(b, &i, sizeof(i));
            CHECK(PIO_Send(partner, 0, 7, conn, b, PIO_BYTE, len, mode));
        } else {
            PIO_Status st;
            CHECK(PIO_Recv(partner, 0, 7, b, PIO_BYTE, (3u << 20) + 16, 60000, mode, &st));
            int got;
            memcpy(&got, b, sizeof(got));
            if (got != i || st.bytes != len)
                FAIL("message %d arrived as number %d (%zu bytes, want %zu): out of order", i, got,
                     st.bytes, len);
            verify_from(b, sizeof(int), len, (uint64_t)i);
        }
        bytes += len;
    }
    free(b);
    printf("OK order: %d messages, %.1f MB in order in %.2f s\n", n, bytes / 1e6, now() - t0);
}

static int threads_failed;

struct targ {
    int t, send;
};

static void *thread_main(void *arg)
{
    struct targ *a = arg;
    int per = nmsg > 0 ? nmsg : 200;
    uint8_t *b = malloc(300000);
    for (int i = 0; i < per; i++) {
        size_t len = (size_t)((i * 7919 + a->t * 131) % 5 == 0 ? 200000 : 1 + (i * 31) % 3000);
        uint64_t id = (uint64_t)a->t * 100000 + (uint64_t)i;
        if (a->send) {
            fill(b, len, id);
            int rc = PIO_Send(partner, 0, 1000 + a->t, conn, b, PIO_BYTE, len, mode);
            if (rc != PIO_OK) {
                printf("FAIL thread %d send %d: %s\n", a->t, i, PIO_Strerror(rc));
                threads_failed = 1;
                break;
            }
        } else {
            PIO_Status st;
            int rc = PIO_Recv(partner, 0, 1000 + a->t, b, PIO_BYTE, 300000, 60000, mode, &st);
            if (rc != PIO_OK || st.bytes != len) {
                printf("FAIL thread %d recv %d: %s (%zu bytes, want %zu)\n", a->t, i,
                       PIO_Strerror(rc), st.bytes, len);
                threads_failed = 1;
                break;
            }
            for (size_t k = 0; k < len; k++)
                if (b[k] != pat(id, k)) {
                    printf("FAIL thread %d message %d byte %zu\n", a->t, i, k);
                    threads_failed = 1;
                    break;
                }
        }
    }
    free(b);
    return NULL;
}

static void t_threads(int send)
{
    pthread_t th[64];
    struct targ a[64];
    for (int t = 0; t < nthreads; t++) {
        a[t].t = t;
        a[t].send = send;
        pthread_create(&th[t], NULL, thread_main, &a[t]);
    }
    for (int t = 0; t < nthreads; t++)
        pthread_join(th[t], NULL);
    if (threads_failed)
        FAIL("a thread failed");
    printf("OK threads: %d threads x %d messages\n", nthreads, nmsg > 0 ? nmsg : 200);
}

static void t_timeout(int send)
{
    char b[16];
    if (send) { /* stay until the receiver says it is done */
        CHECK(PIO_Recv(partner, 0, 57, b, PIO_BYTE, sizeof(b), 60000, PIO_BLOCKING, NULL));
        printf("OK timeout: sender released\n");
        return;
    }
    double t0 = now();
    EXPECT(PIO_Recv(partner, 0, 55, b, PIO_BYTE, sizeof(b), 300, PIO_BLOCKING, NULL),
           PIO_ETIMEDOUT);
    double el = now() - t0;
    if (el < 0.25 || el > 3.0)
        FAIL("timeout of 300 ms took %.3f s", el);
    t0 = now();
    EXPECT(PIO_Recv(partner, 0, 55, b, PIO_BYTE, sizeof(b), 0, PIO_BLOCKING, NULL), PIO_ETIMEDOUT);
    if (now() - t0 > 0.5)
        FAIL("a zero timeout waited %.3f s", now() - t0);
    PIO_Request r;
    int done = 1;
    CHECK(PIO_Irecv(partner, 0, 56, b, PIO_BYTE, sizeof(b), PIO_BLOCKING, &r));
    CHECK(PIO_Test(&r, &done, NULL));
    if (done)
        FAIL("PIO_Test says done with nothing sent");
    EXPECT(PIO_Wait(&r, 100, NULL), PIO_ETIMEDOUT);
    if (!r)
        FAIL("request freed after a timed-out wait");
    CHECK(PIO_Send(partner, 0, 57, conn, b, PIO_BYTE, 1, PIO_BLOCKING));
    /* PIO_Exit cancels the posted receive; waiting on it then frees it */
    CHECK(PIO_Exit());
    EXPECT(PIO_Wait(&r, 0, NULL), PIO_ECANCELED);
    if (r)
        FAIL("a cancelled request was not freed by PIO_Wait");
    printf("OK timeout: %.3f s for 300 ms\n", el);
    exit(0);
}

/* The sender of the gone test exits without sending; the receiver waits on it. */
static void t_gone(int send)
{
    char b[16] = {0};
    if (send) { /* wait until the receiver knows us, then leave without sending */
        CHECK(PIO_Recv(partner, 0, 9, b, PIO_BYTE, sizeof(b), 60000, PIO_BLOCKING, NULL));
        printf("OK gone: sender leaves without sending\n");
        return;
    }
    CHECK(PIO_Send(partner, 0, 9, conn, b, PIO_BYTE, 1, PIO_BLOCKING));
    double t0 = now();
    EXPECT(PIO_Recv(partner, 0, 5, b, PIO_BYTE, sizeof(b), 30000, PIO_BLOCKING, NULL), PIO_EGONE);
    EXPECT(PIO_Send(partner, 0, 5, conn, b, PIO_BYTE, 4, PIO_BLOCKING), PIO_EGONE);
    printf("OK gone: PIO_EGONE after %.2f s\n", now() - t0);
}

/* Non-blocking: several outstanding sends and receives completed out of order. */
static void t_nonblock(int send)
{
    enum { N = 6 };
    size_t len[N] = {10, 70000, 2000000, 3, 1 << 20, 65536};
    uint8_t *b[N];
    PIO_Request r[N];
    for (int i = 0; i < N; i++) {
        b[i] = malloc(len[i]);
        if (send) {
            fill(b[i], len[i], (uint64_t)i + 500);
            CHECK(PIO_Isend(partner, 0, 60 + i, conn, b[i], PIO_BYTE, len[i], mode, &r[i]));
        } else {
            CHECK(PIO_Irecv(partner, 0, 60 + i, b[i], PIO_BYTE, len[i], mode, &r[i]));
        }
    }
    for (int i = N - 1; i >= 0; i--) {
        PIO_Status st;
        CHECK(PIO_Wait(&r[i], 60000, &st));
        if (r[i])
            FAIL("request not freed");
        if (!send)
            verify(b[i], len[i], (uint64_t)i + 500);
        free(b[i]);
    }
    printf("OK nonblock: %d requests\n", N);
}

/* A large message no receive wants yet must not hold back the one the
 * receiver waits for: the sender posts 40 MiB (tag 70, more than its whole
 * send region) and then 3 MiB (tag 71); the receiver, a moment later, takes
 * tag 71 first and tag 70 after it. Each must arrive whole. */
static void t_backlog(int send)
{
    const size_t big = 40u << 20, small = 3u << 20;
    uint8_t *b1 = malloc(big), *b2 = malloc(small);
    double t0 = now(), t_small;
    if (send) {
        PIO_Request r[2];
        fill(b1, big, 70);
        fill(b2, small, 71);
        CHECK(PIO_Isend(partner, 0, 70, conn, b1, PIO_BYTE, big, mode, &r[0]));
        CHECK(PIO_Isend(partner, 0, 71, conn, b2, PIO_BYTE, small, mode, &r[1]));
        CHECK(PIO_Wait(&r[1], 60000, NULL));
        t_small = now() - t0;
        CHECK(PIO_Wait(&r[0], 60000, NULL));
    } else {
        PIO_Status st;
        usleep(500000); /* the sender's region fills with tag 70 first */
        CHECK(PIO_Recv(partner, 0, 71, b2, PIO_BYTE, small, 60000, mode, &st));
        t_small = now() - t0;
        if (st.bytes != small)
            FAIL("tag 71: %zu bytes, want %zu", st.bytes, small);
        verify(b2, small, 71);
        CHECK(PIO_Recv(partner, 0, 70, b1, PIO_BYTE, big, 60000, mode, &st));
        if (st.bytes != big)
            FAIL("tag 70: %zu bytes, want %zu", st.bytes, big);
        verify(b1, big, 70);
    }
    free(b1);
    free(b2);
    printf("OK backlog: 3 MiB past 40 MiB unclaimed after %.2f s, all after %.2f s\n", t_small,
           now() - t0);
}

/* The same with many messages: 24 x 1 MiB (tag 80) that no receive wants
 * yet, sent and complete (copied) before the 1 MiB of tag 81 the receiver
 * waits for. The piods take half the receiver's region of them; the rest
 * hold the sender's send-ahead, and only its stall rule lets tag 81 by. */
static void t_unwanted(int send)
{
    enum { N = 24 };
    const size_t len = 1u << 20;
    uint8_t *b = malloc(len);
    double t0 = now(), t_last = 0;
    for (int i = 0; i <= N && send; i++) {
        fill(b, len, (uint64_t)(i < N ? 800 + i : 81));
        CHECK(PIO_Send(partner, 0, i < N ? 80 : 81, conn, b, PIO_BYTE, len, mode));
    }
    if (!send) {
        PIO_Status st;
        usleep(500000);
        CHECK(PIO_Recv(partner, 0, 81, b, PIO_BYTE, len, 60000, mode, &st));
        t_last = now() - t0;
        verify(b, len, 81);
        for (int i = 0; i < N; i++) {
            CHECK(PIO_Recv(partner, 0, 80, b, PIO_BYTE, len, 60000, mode, &st));
            verify(b, len, (uint64_t)(800 + i));
        }
    }
    free(b);
    printf("OK unwanted: 1 MiB past %d x 1 MiB unclaimed after %.2f s, all after %.2f s\n", N,
           t_last, now() - t0);
}

/* The completion fd is readable (want 1) or not (want 0) within ms. */
static void fd_readable(int fd, int ms, int want, const char *when)
{
    struct pollfd p = {fd, POLLIN, 0};
    int n = poll(&p, 1, ms);
    if (n < 0)
        FAIL("poll: %s", strerror(errno));
    int got = n > 0 && (p.revents & POLLIN);
    if (got != want)
        FAIL("the completion fd is %s %s", got ? "readable" : "not readable", when);
}

static void expect_empty(const PIO_Status *st, const char *what)
{
    if (st->error != PIO_OK || st->source != PIO_ANY_PROCESS || st->tag != PIO_ANY_TAG ||
        st->partner != PIO_ANY_PARTNER || st->bytes != 0 || st->count != 0)
        FAIL("%s: not an empty status (error %d source %d tag %d bytes %zu)", what, st->error,
             st->source, st->tag, st->bytes);
}

/* PIO_Waitany, PIO_Waitall, PIO_Testany and PIO_Getfd. The receiver drives:
 * the sender sends each message only when told to (tags 79, 78, 77, 76),
 * so what is complete at each check never depends on timing. */
static void t_reqs(int send)
{
    enum { BIG = 1 << 20, MID = 200000 };
    static const size_t wlen[5] = {10, BIG, MID, BIG, 3}; /* tags 80 81 82 90 91 */
    static const int wtag[5] = {80, 81, 82, 90, 91};
    uint8_t *wb[5];
    for (int i = 0; i < 5; i++)
        if (!(wb[i] = malloc(wlen[i])))
            FAIL("out of memory");
    char g[4] = "go", b0[16], b1[16];
    PIO_Status st, sts[8];
    if (send) {
        CHECK(PIO_Recv(partner, 0, 79, g, PIO_BYTE, sizeof(g), recv_ms(), PIO_BLOCKING, NULL));
        CHECK(PIO_Send(partner, 0, 71, conn, "tag71", PIO_BYTE, 5, PIO_BLOCKING));
        CHECK(PIO_Recv(partner, 0, 78, g, PIO_BYTE, sizeof(g), recv_ms(), PIO_BLOCKING, NULL));
        CHECK(PIO_Send(partner, 0, 72, conn, "tag72", PIO_BYTE, 5, PIO_BLOCKING));
        /* the mirror of the receiver's PIO_Waitall: it sends 80 81 82, takes 90 91 */
        PIO_Request w[8];
        uint8_t big84[100] = {0};
        for (int i = 0; i < 5; i++) {
            if (wtag[i] < 90) {
                fill(wb[i], wlen[i], (uint64_t)wtag[i]);
                CHECK(PIO_Isend(partner, 0, wtag[i], conn, wb[i], PIO_BYTE, wlen[i], mode, &w[i]));
            } else {
                CHECK(PIO_Irecv(partner, 0, wtag[i], wb[i], PIO_BYTE, wlen[i], mode, &w[i]));
            }
        }
        CHECK(PIO_Isend(partner, 0, 70, conn, "tag70", PIO_BYTE, 5, mode, &w[5]));
        CHECK(PIO_Isend(partner, 0, 84, conn, big84, PIO_BYTE, sizeof(big84), mode, &w[6]));
        CHECK(PIO_Isend(partner, 0, 85, conn, "tag85", PIO_BYTE, 5, mode, &w[7]));
        CHECK(PIO_Waitall(8, w, recv_ms(), sts));
        for (int i = 0; i < 8; i++)
            if (w[i])
                FAIL("PIO_Waitall left request %d", i);
        for (int i = 3; i < 5; i++) {
            if (sts[i].tag != wtag[i] || sts[i].bytes != wlen[i])
                FAIL("status %d: tag %d bytes %zu", i, sts[i].tag, sts[i].bytes);
            verify(wb[i], wlen[i], (uint64_t)wtag[i]);
        }
        CHECK(PIO_Recv(partner, 0, 77, g, PIO_BYTE, sizeof(g), recv_ms(), PIO_BLOCKING, NULL));
        CHECK(PIO_Send(partner, 0, 96, conn, "tag96", PIO_BYTE, 5, PIO_BLOCKING));
        CHECK(PIO_Recv(partner, 0, 76, g, PIO_BYTE, sizeof(g), recv_ms(), PIO_BLOCKING, NULL));
        CHECK(PIO_Send(partner, 0, 95, conn, "tag95", PIO_BYTE, 5, PIO_BLOCKING));
        for (int i = 0; i < 5; i++)
            free(wb[i]);
        printf("OK reqs: sender\n");
        return;
    }

    /* all NULL, count 0, bad arguments */
    PIO_Request r[4] = {NULL, NULL, NULL, NULL};
    int idx = 7, done = 0, fd = -1, fd2 = -2;
    CHECK(PIO_Waitany(4, r, &idx, PIO_WAIT_FOREVER, &st));
    if (idx != PIO_UNDEFINED)
        FAIL("PIO_Waitany over NULLs: index %d", idx);
    expect_empty(&st, "PIO_Waitany over NULLs");
    idx = 7;
    CHECK(PIO_Testany(4, r, &idx, &done, &st));
    if (!done || idx != PIO_UNDEFINED)
        FAIL("PIO_Testany over NULLs: done %d index %d", done, idx);
    CHECK(PIO_Waitall(4, r, 0, NULL));
    CHECK(PIO_Waitall(4, r, 0, sts));
    expect_empty(&sts[3], "PIO_Waitall over NULLs");
    idx = 7;
    CHECK(PIO_Waitany(0, NULL, &idx, 0, NULL));
    if (idx != PIO_UNDEFINED)
        FAIL("PIO_Waitany of 0 requests: index %d", idx);
    EXPECT(PIO_Waitany(-1, r, &idx, 0, NULL), PIO_EINVAL);
    EXPECT(PIO_Waitany(2, r, NULL, 0, NULL), PIO_EINVAL);
    EXPECT(PIO_Testany(2, r, &idx, NULL, NULL), PIO_EINVAL);
    EXPECT(PIO_Waitall(1, NULL, 0, NULL), PIO_EINVAL);
    EXPECT(PIO_Getfd(NULL), PIO_EINVAL);
    CHECK(PIO_Getfd(&fd));
    CHECK(PIO_Getfd(&fd2));
    if (fd < 0 || fd != fd2)
        FAIL("PIO_Getfd gave %d, then %d", fd, fd2);
    fd_readable(fd, 0, 0, "with no request");

    /* none complete: PIO_Testany says so, PIO_Waitany times out, the fd stays quiet */
    CHECK(PIO_Irecv(partner, 0, 70, b0, PIO_BYTE, sizeof(b0), PIO_BLOCKING, &r[0]));
    CHECK(PIO_Irecv(partner, 0, 71, b1, PIO_BYTE, sizeof(b1), PIO_BLOCKING, &r[1]));
    done = 1;
    idx = 7;
    CHECK(PIO_Testany(2, r, &idx, &done, &st));
    if (done || idx != PIO_UNDEFINED || !r[0] || !r[1])
        FAIL("PIO_Testany with nothing sent: done %d index %d", done, idx);
    double t0 = now();
    idx = 7;
    EXPECT(PIO_Waitany(2, r, &idx, 200, &st), PIO_ETIMEDOUT);
    double el = now() - t0;
    if (el < 0.19)
        FAIL("PIO_Waitany's 200 ms timeout came after %.3f s", el);
    if (idx != PIO_UNDEFINED || !r[0] || !r[1])
        FAIL("a timed-out PIO_Waitany changed the requests (index %d)", idx);
    fd_readable(fd, 200, 0, "before anything was sent");

    /* the sender sends tag 71 only: the fd wakes, PIO_Testany takes index 1 */
    CHECK(PIO_Send(partner, 0, 79, conn, g, PIO_BYTE, 1, PIO_BLOCKING));
    fd_readable(fd, recv_ms(), 1, "after a message came for a pending receive");
    fd_readable(fd, 0, 1, "a second time before the request is collected");
    CHECK(PIO_Testany(2, r, &idx, &done, &st));
    if (!done || idx != 1 || r[1] || !r[0] || st.tag != 71 || st.bytes != 5 ||
        memcmp(b1, "tag71", 5) != 0)
        FAIL("PIO_Testany: done %d index %d tag %d bytes %zu", done, idx, st.tag, st.bytes);
    fd_readable(fd, 0, 0, "once the complete request was collected");

    /* PIO_Waitany returns the one that completed: index 1 again */
    CHECK(PIO_Irecv(partner, 0, 72, b1, PIO_BYTE, sizeof(b1), PIO_BLOCKING, &r[1]));
    CHECK(PIO_Send(partner, 0, 78, conn, g, PIO_BYTE, 1, PIO_BLOCKING));
    CHECK(PIO_Waitany(2, r, &idx, recv_ms(), &st));
    if (idx != 1 || r[1] || !r[0] || st.tag != 72 || memcmp(b1, "tag72", 5) != 0)
        FAIL("PIO_Waitany: index %d tag %d", idx, st.tag);

    /* PIO_Waitall over receives, sends, the old receive of tag 70 and a NULL */
    PIO_Request w[7];
    for (int i = 0; i < 5; i++) {
        if (wtag[i] < 90) {
            memset(wb[i], 0xEE, wlen[i]);
            CHECK(PIO_Irecv(partner, 0, wtag[i], wb[i], PIO_BYTE, wlen[i], mode, &w[i]));
        } else {
            fill(wb[i], wlen[i], (uint64_t)wtag[i]);
            CHECK(PIO_Isend(partner, 0, wtag[i], conn, wb[i], PIO_BYTE, wlen[i], mode, &w[i]));
        }
    }
    w[5] = r[0];
    r[0] = NULL;
    w[6] = NULL;
    CHECK(PIO_Waitall(7, w, recv_ms(), sts));
    for (int i = 0; i < 7; i++)
        if (w[i])
            FAIL("PIO_Waitall left request %d", i);
    for (int i = 0; i < 3; i++) {
        if (sts[i].tag != wtag[i] || sts[i].bytes != wlen[i] || sts[i].error != PIO_OK)
            FAIL("status %d: tag %d bytes %zu error %d", i, sts[i].tag, sts[i].bytes, sts[i].error);
        verify(wb[i], wlen[i], (uint64_t)wtag[i]);
    }
    if (sts[5].tag != 70 || memcmp(b0, "tag70", 5) != 0)
        FAIL("status 5: tag %d", sts[5].tag);
    expect_empty(&sts[6], "PIO_Waitall's NULL entry");
    fd_readable(fd, 0, 0, "after PIO_Waitall collected everything");

    /* a failing request: PIO_Waitall still completes and frees the others */
    char small[10], b85[16];
    PIO_Request t[2];
    CHECK(PIO_Irecv(partner, 0, 84, small, PIO_BYTE, sizeof(small), PIO_BLOCKING, &t[0]));
    CHECK(PIO_Irecv(partner, 0, 85, b85, PIO_BYTE, sizeof(b85), PIO_BLOCKING, &t[1]));
    EXPECT(PIO_Waitall(2, t, recv_ms(), sts), PIO_ETRUNC);
    if (t[0] || t[1] || sts[0].error != PIO_ETRUNC || sts[1].error != PIO_OK || sts[1].bytes != 5 ||
        memcmp(b85, "tag85", 5) != 0)
        FAIL("PIO_Waitall with a failure: left %p %p, errors %d %d", (void *)t[0], (void *)t[1],
             sts[0].error, sts[1].error);
    uint8_t big84[100];
    CHECK(PIO_Recv(partner, 0, 84, big84, PIO_BYTE, sizeof(big84), recv_ms(), PIO_BLOCKING, &st));
    if (st.bytes != 100)
        FAIL("the message PIO_ETRUNC kept has %zu bytes", st.bytes);

    /* PIO_Waitall times out while one request is pending: nothing is freed,
     * not even the one that is complete */
    CHECK(PIO_Irecv(partner, 0, 95, b0, PIO_BYTE, sizeof(b0), PIO_BLOCKING, &t[0]));
    CHECK(PIO_Irecv(partner, 0, 96, b1, PIO_BYTE, sizeof(b1), PIO_BLOCKING, &t[1]));
    CHECK(PIO_Send(partner, 0, 77, conn, g, PIO_BYTE, 1, PIO_BLOCKING));
    fd_readable(fd, recv_ms(), 1, "after tag 96 came"); /* t[1] is complete */
    EXPECT(PIO_Waitall(2, t, 200, sts), PIO_ETIMEDOUT);
    if (!t[0] || !t[1])
        FAIL("a timed-out PIO_Waitall freed a request");
    fd_readable(fd, 0, 1, "after a timed-out PIO_Waitall (nothing collected)");
    CHECK(PIO_Send(partner, 0, 76, conn, g, PIO_BYTE, 1, PIO_BLOCKING));
    CHECK(PIO_Waitall(2, t, recv_ms(), sts));
    if (t[0] || t[1] || sts[0].tag != 95 || sts[1].tag != 96)
        FAIL("PIO_Waitall: tags %d %d", sts[0].tag, sts[1].tag);
    fd_readable(fd, 0, 0, "at the end");
    for (int i = 0; i < 5; i++)
        free(wb[i]);
    printf("OK reqs: Waitany, Waitall, Testany and the completion fd\n");
}

/* Channels: PIO_USER(i) goes on channel i (its chunk counter moves, the
 * others' do not), a channel the bundle lacks fails with PIO_ECHANNEL, and
 * with -c USER:i a send on channel i must fail with PIO_ECHANNEL (it is
 * down). The receiver takes -n messages. */
static void t_channels(int send)
{
    enum { SIZE = 1 << 20 };
    uint8_t *b = malloc(SIZE);
    if (!b)
        FAIL("out of memory");
    if (!send) {
        for (int i = 0; i < nmsg; i++) {
            PIO_Status st;
            CHECK(
                PIO_Recv(partner, PIO_ANY_PROCESS, 3, b, PIO_BYTE, SIZE, 60000, PIO_BLOCKING, &st));
            if (st.bytes != SIZE || b[0] != b[SIZE - 1])
                FAIL("message %d: %llu bytes, wrong contents", i, (unsigned long long)st.bytes);
        }
        printf("OK channels: %d messages\n", nmsg);
        free(b);
        return;
    }
    PIO_Coninfo before[16], after[16];
    int n, n2;
    CHECK(PIO_Getconinfo(partner, before, 16, &n));
    if (n < 1)
        FAIL("no channels");
    EXPECT(PIO_Send(partner, 0, 3, PIO_USER(n + 3), b, PIO_BYTE, 8, PIO_BLOCKING), PIO_ECHANNEL);
    if (conn == PIO_STATIC) { /* this process (rank) to process 0: channel rank mod n */
        int want = rank % n;
        memset(b, rank, SIZE);
        CHECK(PIO_Send(partner, 0, 3, PIO_STATIC, b, PIO_BYTE, SIZE, PIO_SYNC));
        double t0 = now();
        do {
            CHECK(PIO_Getconinfo(partner, after, 16, &n2));
            if (after[want].tx_bytes >= before[want].tx_bytes + SIZE)
                break;
            usleep(10000);
        } while (now() - t0 < 2);
        /* the message's chunks (one or more: their size follows the link's
         * rate) all went on channel want, none on the others */
        for (int k = 0; k < n; k++)
            if ((k == want) != (after[k].tx_chunks > before[k].tx_chunks))
                FAIL("STATIC %d -> 0: channel %d sent %llu chunks, %llu before (want channel %d)",
                     rank, k, (unsigned long long)after[k].tx_chunks,
                     (unsigned long long)before[k].tx_chunks, want);
        if (after[want].tx_bytes < before[want].tx_bytes + SIZE)
            FAIL("STATIC %d -> 0: channel %d carried %llu bytes of %d", rank, want,
                 (unsigned long long)(after[want].tx_bytes - before[want].tx_bytes), SIZE);
        printf("OK channels: STATIC process %d -> process 0 took channel %d\n", rank, want);
        free(b);
        return;
    }
    if (conn >= 0) { /* -c USER:i: that channel is down */
        EXPECT(PIO_Send(partner, 0, 3, PIO_USER(conn), b, PIO_BYTE, SIZE, PIO_BLOCKING),
               PIO_ECHANNEL);
        printf("OK channels: channel %d refused\n", conn);
        free(b);
        return;
    }
    for (int i = 0; i < n && i < nmsg; i++) {
        CHECK(PIO_Getconinfo(partner, before, 16, &n));
        memset(b, i, SIZE);
        CHECK(PIO_Send(partner, 0, 3, PIO_USER(i), b, PIO_BYTE, SIZE, PIO_SYNC));
        double t0 = now();
        for (;;) { /* the sender thread counts just after its write */
            CHECK(PIO_Getconinfo(partner, after, 16, &n2));
            if (after[i].tx_bytes >= before[i].tx_bytes + SIZE || now() - t0 > 2)
                break;
            usleep(10000);
        }
        for (int k = 0; k < n; k++)
            if ((k == i) != (after[k].tx_chunks > before[k].tx_chunks))
                FAIL("USER(%d): channel %d sent %llu chunks, %llu before", i, k,
                     (unsigned long long)after[k].tx_chunks,
                     (unsigned long long)before[k].tx_chunks);
        if (after[i].tx_bytes < before[i].tx_bytes + SIZE)
            FAIL("USER(%d): its byte counter did not move", i);
    }
    printf("OK channels: %d channels, each carried its USER message\n", n);
    free(b);
}

/* A receive open to any process takes the message whose data came first,
 * not the one announced first: process 0 sends a big message on channel 0
 * (slow: its first chunk takes most of a second), process 1 a small one on
 * channel 1 (fast) 300 ms later. The receive posted before either arrives
 * must complete with process 1's. */
static void t_anysource(int send)
{
    const size_t big = 4u << 20, small = 256u << 10;
    uint8_t *b = malloc(big);
    if (!b)
        FAIL("out of memory");
    if (send) {
        size_t n = rank == 0 ? big : small;
        fill(b, n, (uint64_t)rank);
        if (rank == 1)
            usleep(300000); /* process 0's message is announced first */
        CHECK(PIO_Send(partner, 0, 5, PIO_USER(rank), b, PIO_BYTE, n, PIO_SYNC));
        printf("OK anysource: process %d sent %zu bytes\n", rank, n);
    } else {
        PIO_Status st[2];
        for (int k = 0; k < 2; k++) {
            CHECK(PIO_Recv(partner, PIO_ANY_PROCESS, 5, b, PIO_BYTE, big, 60000, mode, &st[k]));
            size_t n = st[k].source == 0 ? big : small;
            if (st[k].bytes != n)
                FAIL("message of process %d: %zu bytes, expected %zu", st[k].source, st[k].bytes,
                     n);
            for (size_t i = 0; i < n; i++)
                if (b[i] != pat((uint64_t)st[k].source, i))
                    FAIL("message of process %d: byte %zu differs", st[k].source, i);
        }
        if (st[0].source != 1 || st[1].source != 0)
            FAIL("received from process %d first, then %d: expected 1 (its data came first), "
                 "then 0",
                 st[0].source, st[1].source);
        printf("OK anysource: the small message completed first, then the big one\n");
    }
    free(b);
}

/* Errors that need no partner. */
static void t_errors(void)
{
    char b[8] = {0};
    EXPECT(PIO_Send(0, 0, 0, PIO_DYNAMIC, b, PIO_BYTE, 1, PIO_BLOCKING), PIO_ENOTINIT);
    EXPECT(PIO_Exit(), PIO_ENOTINIT);
    const char *sock = getenv("PIO_SOCKET");
    setenv("PIO_SOCKET", "/nonexistent/piod.sock", 1);
    EXPECT(PIO_Init("e", 0, 1), PIO_ENOPIOD);
    setenv("PIO_SOCKET", sock, 1);
    EXPECT(PIO_Init(NULL, 0, 1), getenv("PIO_APP") ? PIO_OK : PIO_EINVAL);
    EXPECT(PIO_Init(app, 3, 2), PIO_EINVAL);
    CHECK(PIO_Init(app, 0, 1));
    EXPECT(PIO_Init(app, 0, 1), PIO_EINITED);
    int p;
    setenv("PIO_PARTNER_TIMEOUT", "1", 1);
    EXPECT(PIO_Setpartner("no-such-application", &p), PIO_EPARTNER);
    EXPECT(PIO_Setpartner(NULL, &p), PIO_EINVAL);
    EXPECT(PIO_Send(7, 0, 0, PIO_DYNAMIC, b, PIO_BYTE, 1, PIO_BLOCKING), PIO_EPARTNER);
    EXPECT(PIO_Recv(7, 0, 0, b, PIO_BYTE, 1, 10, PIO_BLOCKING, NULL), PIO_EPARTNER);
    EXPECT(PIO_Recv(PIO_ANY_PARTNER, 0, 0, b, 999, 1, 10, PIO_BLOCKING, NULL), PIO_EINVAL);
    EXPECT(PIO_Recv(PIO_ANY_PARTNER, 0, 0, NULL, PIO_BYTE, 1, 10, PIO_BLOCKING, NULL), PIO_EINVAL);
    EXPECT(PIO_Recv(PIO_ANY_PARTNER, 0, -5, b, PIO_BYTE, 1, 10, PIO_BLOCKING, NULL), PIO_EINVAL);
    EXPECT(PIO_Recv(PIO_ANY_PARTNER, 0, 0, b, PIO_BYTE, 1, 10, 9, NULL), PIO_EINVAL);
    EXPECT(PIO_Wait(NULL, 0, NULL), PIO_EINVAL);
    PIO_Hostinfo h;
    CHECK(PIO_Gethostinfo(&h));
    if (h.eager_limit == 0 || h.chunk_size == 0 || h.pool_size == 0 || !h.host[0])
        FAIL("host info incomplete");
    PIO_Appinfo ai;
    CHECK(PIO_Getappinfo(PIO_SELF, &ai));
    if (strcmp(ai.name, app) != 0 || ai.joined != 1 || ai.nprocs != 1)
        FAIL("self info: %s joined %d nprocs %d", ai.name, ai.joined, ai.nprocs);
    CHECK(PIO_Exit());
    EXPECT(PIO_Exit(), PIO_ENOTINIT);
    printf("OK errors\n");
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: pio-check send|recv|local TEST [options]\n");
        return 2;
    }
    const char *role = argv[1], *test = argv[2];
    int send = strcmp(role, "send") == 0;
    int c;
    optind = 3;
    while ((c = getopt(argc, argv, "a:p:n:r:P:m:c:S:T:")) != -1) {
        switch (c) {
        case 'a': app = optarg; break;
        case 'p': partner_name = optarg; break;
        case 'n': nmsg = atoi(optarg); break;
        case 'r': rank = atoi(optarg); break;
        case 'P': nprocs = atoi(optarg); break;
        case 'm': mode = strcmp(optarg, "sync") == 0 ? PIO_SYNC : PIO_BLOCKING; break;
        case 'c':
            conn = strcmp(optarg, "STATIC") == 0    ? PIO_STATIC
                   : strcmp(optarg, "DYNAMIC") == 0 ? PIO_DYNAMIC
                                                    : atoi(optarg + 5);
            break;
        case 'S': sizes_arg = optarg; break;
        case 'T': nthreads = atoi(optarg); break;
        default: return 2;
        }
    }
    if (!app)
        app = send ? "chk-send" : "chk-recv";
    if (!partner_name)
        partner_name = send ? "chk-recv" : "chk-send";
    if (strcmp(test, "errors") == 0) {
        t_errors();
        return 0;
    }
    CHECK(PIO_Init(app, rank, nprocs));
    if (strcmp(test, "hold") == 0) { /* join, stay -n seconds, leave */
        PIO_Appinfo self;
        PIO_Hostinfo host;
        CHECK(PIO_Getappinfo(PIO_SELF, &self));
        CHECK(PIO_Gethostinfo(&host));
        printf("OK hold: process %d of %d, joined at %s\n", self.process_ID, self.nprocs,
               host.host);
        fflush(stdout);
        sleep((unsigned)nmsg);
        CHECK(PIO_Exit());
        return 0;
    }
    CHECK(PIO_Setpartner(partner_name, &partner));
    if (strcmp(test, "sizes") == 0)
        t_sizes(send);
    else if (strcmp(test, "types") == 0)
        t_types(send);
    else if (strcmp(test, "wild") == 0)
        t_wild(send);
    else if (strcmp(test, "order") == 0)
        t_order(send);
    else if (strcmp(test, "threads") == 0)
        t_threads(send);
    else if (strcmp(test, "timeout") == 0) {
        t_timeout(send);
    } else if (strcmp(test, "gone") == 0)
        t_gone(send);
    else if (strcmp(test, "nonblock") == 0)
        t_nonblock(send);
    else if (strcmp(test, "backlog") == 0)
        t_backlog(send);
    else if (strcmp(test, "unwanted") == 0)
        t_unwanted(send);
    else if (strcmp(test, "channels") == 0)
        t_channels(send);
    else if (strcmp(test, "anysource") == 0)
        t_anysource(send);
    else if (strcmp(test, "reqs") == 0)
        t_reqs(send);
    else
        FAIL("unknown test %s", test);
    CHECK(PIO_Exit());
    return 0;
}
