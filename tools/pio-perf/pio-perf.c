/* pio-perf.c - PIO latency and bandwidth test between two applications (like ucx_perftest).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * One process runs as the server (--server, application perf-srv), one as
 * the client (application perf-cli); each joins its own piod ($PIO_SOCKET)
 * as process 0 of a one-process application. Only the client takes test
 * options: before every round it sends the server a small control message
 * (tag PERF_TAG_CTRL, ten PIO_UINT64) naming the test, size, warm-up and
 * iteration counts, balancing and mode; the server answers READY and then
 * plays its part. A round is either
 *   pingpong: the client sends `size` bytes, the server receives them and
 *             sends the same bytes back; reported: half the round trip;
 *   stream:   the client sends N messages, the server receives them all and
 *             answers with a 1-byte ack (tag PERF_TAG_ACK); reported: N x size
 *             over the time from the first send to the ack;
 *   oneway:   a stream, but usec/op is the time the sending application
 *             spends in the send call per message (when it may continue: the
 *             original PIO's experiment 2); MB/s as for stream. With mode
 *             nonblocking the client posts PIO_Isend (up to PERF_WINDOW
 *             outstanding, each with its own buffer) and waits at the end.
 * Data is checked cheaply: the send buffer is filled with a pattern once;
 * each message carries a per-message stamp in its first (up to) 8 bytes;
 * the receiver poisons, then checks, the first 8, the middle and the last
 * byte. A mismatch is a loud failure (exit 1).
 *
 * Single-threaded apart from a watchdog thread that only reads the progress
 * clock (atomic) and ends the process when nothing completed for --timeout
 * seconds (PIO_Send has no timeout of its own). Never sends a byte outside
 * PIO.
 */
#include "cli.h"
#include "cli_json.h"
#include "pio.h"
#include "perf_loop.h"
#include "perf_sizes.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define PERF_TAG_DATA  1
#define PERF_TAG_ACK   2
#define PERF_TAG_CTRL  0x50455246                   /* "PERF": reserved for control messages */
#define PERF_MAGIC     UINT64_C(0x50494f5045524631) /* "PIOPERF1" */
#define PERF_NCTRL     10
#define PERF_MAX_SIZES 256

enum { OP_RUN = 1, OP_QUIT = 2 };
enum { T_PINGPONG = 0, T_STREAM = 1, T_ONEWAY = 2 };
enum { M_BLOCKING = PIO_BLOCKING, M_SYNC = PIO_SYNC, M_NONBLOCKING = 2 };
#define PERF_WINDOW 8 /* nonblocking oneway: sends outstanding at most */
enum { B_USER = 0, B_STATIC = 1, B_DYNAMIC = 2 };

/* control message: ten u64 in this order */
enum { C_MAGIC, C_OP, C_TEST, C_SIZE, C_WARMUP, C_ITERS, C_BAL, C_K, C_MODE, C_ROUND };

static const char *const test_names[] = {"pingpong", "stream", "oneway"};
static const char *const bal_names[] = {"USER", "STATIC", "DYNAMIC"};
static const char *const mode_names[] = {"blocking", "sync", "nonblocking"};

static struct {
    int server, test, bal, k, mode, quiet, json;
    long iters, warmup; /* < 0: adapt */
    int timeout_s;
    const char *app, *partner, *csv;
    size_t sizes[PERF_MAX_SIZES];
    int nsizes;
} opt = {.test = T_PINGPONG,
         .bal = B_USER,
         .k = 0,
         .mode = PIO_BLOCKING,
         .iters = -1,
         .warmup = -1,
         .timeout_s = 60};

static int partner_h;
static uint8_t *sbuf, *rbuf; /* sbuf: pattern + stamps; rbuf: receive target */
static size_t buf_size;
static uint64_t msg_counter;       /* stamps: unique per message in this run */
static uint8_t *wbuf[PERF_WINDOW]; /* nonblocking oneway: one buffer per outstanding send */

/* ---- progress watchdog ---- */

static atomic_llong last_progress_ns;
static const char *volatile doing = "starting";

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void progress(const char *what)
{
    doing = what;
    atomic_store(&last_progress_ns, now_ns());
}

static void *watchdog(void *arg)
{
    (void)arg;
    for (;;) {
        usleep(200000);
        long long idle = now_ns() - atomic_load(&last_progress_ns);
        if (idle > ((long long)opt.timeout_s + 2) * 1000000000LL) {
            fprintf(stderr,
                    "pio-perf: timed out: nothing completed for %d s while %s "
                    "(raise --timeout, or PIO is stuck)\n",
                    opt.timeout_s, doing);
            fflush(stdout);
            _exit(1);
        }
    }
    return NULL;
}

/* ---- errors ---- */

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "pio-perf: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stdout);
    exit(1);
}

static void pio_check(int rc, const char *call, const char *ctx)
{
    if (rc == PIO_OK)
        return;
    die("%s%s%s: %s: %s", call, ctx && *ctx ? " " : "", ctx ? ctx : "", PIO_Errname(rc),
        PIO_Strerror(rc));
}

/* ---- sizes ---- */

static int parse_sizes(const char *arg)
{
    return perf_parse_sizes(arg, opt.sizes, PERF_MAX_SIZES, &opt.nsizes);
}

static void buffers_need(size_t size)
{
    if (size <= buf_size && sbuf)
        return;
    size_t n = size ? size : 1;
    uint8_t *s = realloc(sbuf, n), *r = realloc(rbuf, n);
    if (!s || !r)
        die("cannot allocate two buffers of %zu bytes", n);
    sbuf = s;
    rbuf = r;
    for (size_t i = buf_size; i < n; i++)
        sbuf[i] = perf_pat(i);
    if (opt.mode == M_NONBLOCKING)
        for (int w = 0; w < PERF_WINDOW; w++) {
            uint8_t *b = realloc(wbuf[w], n);
            if (!b)
                die("cannot allocate %d send buffers of %zu bytes", PERF_WINDOW, n);
            wbuf[w] = b;
        }
    buf_size = n;
}

static void verify(const uint8_t *buf, size_t size, uint64_t st, size_t got, const char *who)
{
    if (got != size)
        die("data check failed (%s): message %" PRIu64 " has %zu bytes, expected %zu", who, st, got,
            size);
    long bad = perf_verify(buf, size, st);
    if (bad >= 0)
        die("data check failed (%s): message %" PRIu64 " of %zu bytes: byte %ld is 0x%02x, "
            "expected 0x%02x (lost, stale or reordered data)",
            who, st, size, bad, buf[bad], perf_expect((size_t)bad, st));
}

/* ---- PIO helpers ---- */

static int conn_for(int bal, int k, uint64_t i)
{
    if (bal == B_STATIC)
        return PIO_STATIC;
    if (bal == B_DYNAMIC)
        return PIO_DYNAMIC;
    return PIO_USER((int)(i % (uint64_t)(k > 0 ? k : 1)));
}

static int recv_timeout_ms(void)
{
    return opt.timeout_s * 1000; /* <= 10^9: --timeout is at most 10^6 s */
}

static void send_ctrl(const uint64_t *c, int n, const char *what)
{
    progress(what);
    pio_check(
        PIO_Send(partner_h, 0, PERF_TAG_CTRL, PIO_DYNAMIC, c, PIO_UINT64, (size_t)n, PIO_SYNC),
        "PIO_Send", what);
}

/* Receive a control message; returns its length in u64. */
static size_t recv_ctrl(uint64_t *c, int timeout_ms, const char *what)
{
    PIO_Status st;
    progress(what);
    int rc = PIO_Recv(partner_h, 0, PERF_TAG_CTRL, c, PIO_UINT64, PERF_NCTRL, timeout_ms,
                      PIO_BLOCKING, &st);
    if (rc == PIO_EGONE)
        die("%s: the partner left (PIO_EGONE): see its output", what);
    pio_check(rc, "PIO_Recv", what);
    if (st.count < 3 || c[C_MAGIC] != PERF_MAGIC)
        die("%s: not a pio-perf control message (%zu values): is the partner pio-perf of this "
            "version?",
            what, st.count);
    return st.count;
}

static void send_data(const void *buf, size_t size, int conn, int mode, const char *what)
{
    progress(what);
    int rc = PIO_Send(partner_h, 0, PERF_TAG_DATA, conn, buf, PIO_BYTE, size, mode);
    if (rc != PIO_OK) {
        char ctx[96];
        snprintf(ctx, sizeof(ctx), "(%s, %zu bytes)", what, size);
        pio_check(rc, "PIO_Send", ctx);
    }
}

static size_t recv_data(int tag, void *buf, size_t size, int mode, const char *what)
{
    PIO_Status st;
    progress(what);
    int rc = PIO_Recv(partner_h, 0, tag, buf, PIO_BYTE, size, recv_timeout_ms(), mode, &st);
    if (rc == PIO_EGONE)
        die("%s: the partner left (PIO_EGONE): see its output", what);
    if (rc != PIO_OK) {
        char ctx[96];
        snprintf(ctx, sizeof(ctx), "(%s, %zu bytes)", what, size);
        pio_check(rc, "PIO_Recv", ctx);
    }
    return st.bytes;
}

static void join(const char *app, const char *partner)
{
    const char *sock = getenv("PIO_SOCKET");
    char ctx[1200];
    snprintf(ctx, sizeof(ctx), "(%s at %s)", app, sock && *sock ? sock : "/run/pio/piod.sock");
    progress("joining the piod (PIO_Init)");
    pio_check(PIO_Init(app, 0, 1), "PIO_Init", ctx);
    if (!getenv("PIO_PARTNER_TIMEOUT")) {
        char v[32];
        snprintf(v, sizeof(v), "%d", opt.timeout_s);
        setenv("PIO_PARTNER_TIMEOUT", v, 0);
    }
    snprintf(ctx, sizeof(ctx), "(%s): is pio-perf %s running on the other side?", partner,
             opt.server ? "(the client)" : "--server");
    progress("waiting for the partner (PIO_Setpartner)");
    pio_check(PIO_Setpartner(partner, &partner_h), "PIO_Setpartner", ctx);
    /* A partner of the same name that has left (the previous run's, when
     * runs follow each other) is known to the piods and named at once, and
     * a send to it fails with PIO_EGONE: wait until a process of it is
     * joined, so a client and a server started together find each other
     * in either order. */
    progress("waiting for the partner to be joined (PIO_Getappinfo)");
    for (long waited_ms = 0;; waited_ms += 10) {
        PIO_Appinfo ai;
        pio_check(PIO_Getappinfo(partner_h, &ai), "PIO_Getappinfo", ctx);
        if (ai.joined > 0)
            break;
        if (waited_ms >= (long)opt.timeout_s * 1000)
            die("%s: the partner has left and did not join again in %d s %s", partner,
                opt.timeout_s, ctx);
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* ---- server ---- */

static void serve_pingpong(const uint64_t *c)
{
    size_t size = (size_t)c[C_SIZE];
    uint64_t total = c[C_WARMUP] + c[C_ITERS];
    int mode = (int)c[C_MODE], bal = (int)c[C_BAL], k = (int)c[C_K];
    for (uint64_t i = 0; i < total; i++) {
        uint64_t st = ++msg_counter;
        perf_poison(rbuf, size, st);
        size_t got = recv_data(PERF_TAG_DATA, rbuf, size, mode, "server: receiving a ping");
        verify(rbuf, size, st, got, "server, ping");
        send_data(rbuf, size, conn_for(bal, k, i), mode, "server: sending a pong");
    }
}

static void serve_stream(const uint64_t *c)
{
    size_t size = (size_t)c[C_SIZE];
    int mode = (int)c[C_MODE], bal = (int)c[C_BAL], k = (int)c[C_K];
    if (mode == M_NONBLOCKING) /* the client's business: we receive as usual */
        mode = PIO_BLOCKING;
    uint64_t phases[2] = {c[C_WARMUP], c[C_ITERS]};
    for (int ph = 0; ph < 2; ph++) {
        if (ph == 0 && phases[0] == 0)
            continue;
        for (uint64_t i = 0; i < phases[ph]; i++) {
            uint64_t st = ++msg_counter;
            perf_poison(rbuf, size, st);
            size_t got = recv_data(PERF_TAG_DATA, rbuf, size, mode, "server: receiving a stream");
            verify(rbuf, size, st, got, "server, stream");
        }
        uint8_t ack = 'K';
        progress("server: sending the stream ack");
        pio_check(
            PIO_Send(partner_h, 0, PERF_TAG_ACK, conn_for(bal, k, 0), &ack, PIO_BYTE, 1, mode),
            "PIO_Send", "(stream ack)");
    }
}

static int run_server(void)
{
    join(opt.app ? opt.app : "perf-srv", opt.partner ? opt.partner : "perf-cli");
    if (!opt.quiet && !opt.json)
        printf("pio-perf server: %s ready, partner %s\n", opt.app ? opt.app : "perf-srv",
               opt.partner ? opt.partner : "perf-cli");
    fflush(stdout);
    int rounds = 0;
    for (;;) {
        uint64_t c[PERF_NCTRL] = {0};
        size_t n = recv_ctrl(c, recv_timeout_ms(), "server: waiting for the client's next test");
        if (c[C_OP] == OP_QUIT)
            break;
        uint64_t reply[3] = {PERF_MAGIC, PIO_OK, 0};
        if (n < PERF_NCTRL || c[C_OP] != OP_RUN || c[C_TEST] > T_ONEWAY || c[C_BAL] > B_DYNAMIC ||
            c[C_MODE] > M_NONBLOCKING || c[C_SIZE] > (uint64_t)SIZE_MAX / 2)
            reply[1] = PIO_EINVAL;
        reply[2] = n >= PERF_NCTRL ? c[C_ROUND] : 0;
        if (reply[1] == PIO_OK)
            buffers_need((size_t)c[C_SIZE]);
        send_ctrl(reply, 3, "server: answering READY");
        if (reply[1] != PIO_OK)
            continue;
        if (c[C_TEST] == T_PINGPONG)
            serve_pingpong(c);
        else
            serve_stream(c);
        rounds++;
    }
    pio_check(PIO_Exit(), "PIO_Exit", NULL);
    if (opt.json) {
        json_object *o = json_object_new_object();
        pio_cli_json_str(o, "role", "server");
        pio_cli_json_str(o, "app", opt.app ? opt.app : "perf-srv");
        pio_cli_json_str(o, "partner", opt.partner ? opt.partner : "perf-cli");
        pio_cli_json_u64(o, "rounds", (uint64_t)rounds);
        return pio_cli_json_print("pio-perf", o);
    }
    if (!opt.quiet)
        printf("pio-perf server: done, %d rounds\n", rounds);
    return 0;
}

/* ---- client ---- */

static uint64_t round_id;

/* Run one round on both sides (perf_round_fn); returns the seconds of its
 * timed part; oneway: *op_usec is the mean time in the send call. */
static double client_round(void *ctx, size_t size, uint64_t warmup, uint64_t iters, double *op_usec)
{
    (void)ctx;
    uint64_t c[PERF_NCTRL] = {
        PERF_MAGIC,        OP_RUN,          (uint64_t)opt.test, size,      warmup, iters,
        (uint64_t)opt.bal, (uint64_t)opt.k, (uint64_t)opt.mode, ++round_id};
    send_ctrl(c, PERF_NCTRL, "client: sending a test's parameters");
    uint64_t r[PERF_NCTRL];
    recv_ctrl(r, recv_timeout_ms(), "client: waiting for the server's READY");
    if ((int)r[1] != PIO_OK)
        die("the server refused the test: %s: %s", PIO_Errname((int)r[1]), PIO_Strerror((int)r[1]));
    if (r[2] != round_id)
        die("the server answered round %" PRIu64 ", expected %" PRIu64 " (another client?)", r[2],
            round_id);

    long long t0 = 0, t1;
    if (opt.test == T_PINGPONG) {
        for (uint64_t i = 0; i < warmup + iters; i++) {
            if (i == warmup)
                t0 = now_ns();
            uint64_t st = ++msg_counter;
            perf_stamp(sbuf, size, st);
            perf_poison(rbuf, size, st);
            send_data(sbuf, size, conn_for(opt.bal, opt.k, i), opt.mode, "client: sending a ping");
            size_t got =
                recv_data(PERF_TAG_DATA, rbuf, size, opt.mode, "client: waiting for a pong");
            verify(rbuf, size, st, got, "client, pong");
        }
        t1 = now_ns();
    } else if (opt.test == T_ONEWAY) {
        uint64_t phases[2] = {warmup, iters};
        PIO_Request req[PERF_WINDOW] = {0};
        long long in_call = 0;
        t1 = 0;
        for (int ph = 0; ph < 2; ph++) {
            if (ph == 0 && warmup == 0)
                continue;
            if (ph == 1)
                t0 = now_ns();
            in_call = 0;
            for (uint64_t i = 0; i < phases[ph]; i++) {
                uint64_t st = ++msg_counter;
                int conn = conn_for(opt.bal, opt.k, i);
                if (opt.mode != M_NONBLOCKING) {
                    perf_stamp(sbuf, size, st);
                    long long a = now_ns();
                    send_data(sbuf, size, conn, opt.mode, "client: sending one-way");
                    in_call += now_ns() - a;
                    continue;
                }
                int w = (int)(i % PERF_WINDOW);
                if (req[w]) { /* its buffer is reused: that send must be done */
                    progress("client: waiting for an earlier PIO_Isend");
                    pio_check(PIO_Wait(&req[w], PIO_WAIT_FOREVER, NULL), "PIO_Wait", "(oneway)");
                }
                memcpy(wbuf[w], sbuf, size);
                perf_stamp(wbuf[w], size, st);
                progress("client: posting one-way");
                long long a = now_ns();
                pio_check(PIO_Isend(partner_h, 0, PERF_TAG_DATA, conn, wbuf[w], PIO_BYTE, size,
                                    PIO_BLOCKING, &req[w]),
                          "PIO_Isend", "(oneway)");
                in_call += now_ns() - a;
            }
            for (int w = 0; w < PERF_WINDOW; w++)
                if (req[w]) {
                    progress("client: waiting for the last PIO_Isends");
                    pio_check(PIO_Wait(&req[w], PIO_WAIT_FOREVER, NULL), "PIO_Wait", "(oneway)");
                }
            uint8_t ack = 0;
            size_t got = recv_data(PERF_TAG_ACK, &ack, 1, PIO_BLOCKING,
                                   "client: waiting for the one-way ack");
            if (got != 1 || ack != 'K')
                die("one-way ack is %zu bytes, value 0x%02x: expected 1 byte 'K'", got, ack);
            if (ph == 1)
                t1 = now_ns();
        }
        *op_usec = iters ? (double)in_call / 1e3 / (double)iters : 0;
    } else {
        uint64_t phases[2] = {warmup, iters};
        t1 = 0;
        for (int ph = 0; ph < 2; ph++) {
            if (ph == 0 && warmup == 0)
                continue;
            if (ph == 1)
                t0 = now_ns();
            for (uint64_t i = 0; i < phases[ph]; i++) {
                uint64_t st = ++msg_counter;
                perf_stamp(sbuf, size, st);
                send_data(sbuf, size, conn_for(opt.bal, opt.k, i), opt.mode,
                          "client: sending a stream");
            }
            uint8_t ack = 0;
            size_t got =
                recv_data(PERF_TAG_ACK, &ack, 1, opt.mode, "client: waiting for the stream ack");
            if (got != 1 || ack != 'K')
                die("stream ack is %zu bytes, value 0x%02x: expected 1 byte 'K'", got, ack);
            if (ph == 1)
                t1 = now_ns();
        }
    }
    return (double)(t1 - t0) / 1e9;
}

/* json_row - --json: one measured size as an object of ctx's array, the keys
 * those of the --csv columns. */
static void json_row(void *ctx, size_t size, uint64_t iters, double usec, double mbps)
{
    json_object *r = json_object_new_object();
    pio_cli_json_str(r, "test", test_names[opt.test]);
    pio_cli_json_u64(r, "size", size);
    pio_cli_json_u64(r, "iters", iters);
    pio_cli_json_str(r, "balance", bal_names[opt.bal]);
    pio_cli_json_str(r, "mode", mode_names[opt.mode]);
    json_object_object_add(r, "usec_per_op", json_object_new_double(usec));
    json_object_object_add(r, "MBps", json_object_new_double(mbps));
    json_object_array_add((json_object *)ctx, r);
}

static int run_client(void)
{
    const char *app = opt.app ? opt.app : "perf-cli",
               *partner = opt.partner ? opt.partner : "perf-srv";
    join(app, partner);

    PIO_Coninfo ci[64];
    int nch = 0, up = 0;
    PIO_Appinfo ai;
    pio_check(PIO_Getconinfo(partner_h, ci, 64, &nch), "PIO_Getconinfo", NULL);
    for (int i = 0; i < nch; i++)
        up += ci[i].up;
    pio_check(PIO_Getappinfo(partner_h, &ai), "PIO_Getappinfo", NULL);
    if (opt.k <= 0)
        opt.k = nch > 0 ? nch : 1;
    if (opt.bal == B_USER && nch > 0 && opt.k > nch)
        die("-k %d: the bundle to %s has only %d channels", opt.k, ai.system, nch);

    buffers_need(perf_max_size(opt.sizes, opt.nsizes));

    FILE *csv = NULL;
    if (opt.csv && !(csv = perf_csv_open(opt.csv)))
        die("--csv %s: %s", opt.csv, strerror(errno));

    json_object *doc = NULL, *rows = NULL;
    if (opt.json) {
        /* one document at the end: the run's labels, and rows named like
         * the --csv columns */
        doc = json_object_new_object();
        rows = json_object_new_array();
        pio_cli_json_str(doc, "version", PIO_Get_version());
        pio_cli_json_str(doc, "test", test_names[opt.test]);
        pio_cli_json_str(doc, "app", app);
        pio_cli_json_str(doc, "partner", partner);
        pio_cli_json_str(doc, "system", ai.system);
        pio_cli_json_u64(doc, "channels", (uint64_t)nch);
        pio_cli_json_u64(doc, "up", (uint64_t)up);
        pio_cli_json_str(doc, "balance", bal_names[opt.bal]);
        if (opt.bal == B_USER)
            pio_cli_json_u64(doc, "k", (uint64_t)opt.k);
        pio_cli_json_str(doc, "mode", mode_names[opt.mode]);
        json_object_object_add(doc, "rows", json_object_get(rows));
    } else {
        printf("# pio-perf %s: %s, %s -> %s (system %s, %d channel%s, %d up), balance %s",
               PIO_Get_version(), test_names[opt.test], app, partner, ai.system, nch,
               nch == 1 ? "" : "s", up, bal_names[opt.bal]);
        if (opt.bal == B_USER)
            printf(" over %d channel%s", opt.k, opt.k == 1 ? "" : "s");
        printf(", mode %s\n", mode_names[opt.mode]);
        printf("# usec/op: %s; MB/s: 1 MB = 10^6 bytes\n",
               opt.test == T_PINGPONG ? "half the round trip; MB/s = size / (usec/op)"
               : opt.test == T_ONEWAY ? "time in the send call per message (until the application "
                                        "may continue); MB/s: messages x size / (first send to ack)"
                                      : "stream time (first send to ack) / messages");
    }
    struct perf_loop loop = {.sizes = opt.sizes,
                             .nsizes = opt.nsizes,
                             .iters = opt.iters,
                             .warmup = opt.warmup,
                             .half = opt.test == T_PINGPONG,
                             .test = test_names[opt.test],
                             .balance = bal_names[opt.bal],
                             .mode = mode_names[opt.mode],
                             .csv = csv,
                             .round = client_round,
                             .row = rows ? json_row : NULL,
                             .row_ctx = rows};
    perf_loop_run(&loop);
    json_object_put(rows);
    uint64_t q[PERF_NCTRL] = {PERF_MAGIC, OP_QUIT};
    send_ctrl(q, PERF_NCTRL, "client: telling the server to stop");
    if (csv && fclose(csv) != 0)
        die("--csv %s: %s", opt.csv, strerror(errno));
    pio_check(PIO_Exit(), "PIO_Exit", NULL);
    return doc ? pio_cli_json_print("pio-perf", doc) : 0;
}

/* ---- command line ---- */

static void usage(FILE *out)
{
    fprintf(out, "usage: pio-perf --server [--app NAME] [--partner NAME] [--timeout S]\n"
                 "       pio-perf [-t pingpong|stream|oneway] [-s SIZES] [-n ITERS] [-w WARMUP]\n"
                 "                [-b USER|STATIC|DYNAMIC] [-k K] [-m blocking|sync|nonblocking]\n"
                 "                [--csv FILE] [--app NAME] [--partner NAME] [--timeout S]\n"
                 "Measures PIO latency (pingpong: half round trip) and bandwidth (stream) between\n"
                 "a client (app perf-cli) and a server (app perf-srv), each joined to the piod at\n"
                 "$PIO_SOCKET. Only the client takes test options; it sends them to the server.\n"
                 "  -t, --test T       pingpong (default), stream, or oneway (a stream whose\n"
                 "                     usec/op is the time spent in the send call)\n"
                 "  -s, --sizes LIST   sizes in bytes: 8,64K,1M or ranges 8:64M (powers of two);\n"
                 "                     K/M/G are binary, 64K+1 adds (default 8:1M)\n"
                 "  -n, --iters N      messages per size (default: about 0.5 s per size, >= 3)\n"
                 "  -w, --warmup N     untimed messages first (default 10, 2 from 1 MiB)\n"
                 "  -b, --balance B    USER (channel i round-robin over -k), STATIC, DYNAMIC\n"
                 "  -k, --channels K   channels for USER (default: all of the bundle)\n"
                 "  -m, --mode M       blocking (default), sync, or nonblocking (oneway only:\n"
                 "                     PIO_Isend, up to 8 outstanding)\n"
                 "      --csv FILE     append rows test,size,iters,balance,mode,usec_per_op,MBps\n"
                 "      --json         one JSON document at the end (client: the run and its\n"
                 "                     rows, named as the CSV columns; server: its rounds)\n"
                 "      --app NAME     this application's name (perf-cli / perf-srv)\n"
                 "      --partner NAME the other side's name (perf-srv / perf-cli)\n"
                 "      --timeout S    give up when nothing completes for S seconds (default 60)\n"
                 "      --server       play the server\n"
                 "  -q, --quiet        server: print nothing on success\n"
                 "  -h, --help         this text\n"
                 "      --version      the version line\n");
}

static int pick(const char *v, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcasecmp(v, names[i]) == 0)
            return i;
    return -1;
}

static long count_arg(const char *o, const char *v, long min, long max)
{
    char *e;
    errno = 0;
    long n = strtol(v, &e, 10);
    if (errno || *v == 0 || *e || n < min || n > max) {
        fprintf(stderr, "pio-perf: %s: '%s' is not a number from %ld to %ld\n", o, v, min, max);
        exit(2);
    }
    return n;
}

int main(int argc, char **argv)
{
    enum { O_CSV = 256, O_APP, O_PARTNER, O_TIMEOUT, O_SERVER, O_JSON, O_VERSION };
    static const struct option opts[] = {{"test", required_argument, 0, 't'},
                                         {"sizes", required_argument, 0, 's'},
                                         {"iters", required_argument, 0, 'n'},
                                         {"warmup", required_argument, 0, 'w'},
                                         {"balance", required_argument, 0, 'b'},
                                         {"channels", required_argument, 0, 'k'},
                                         {"mode", required_argument, 0, 'm'},
                                         {"csv", required_argument, 0, O_CSV},
                                         {"app", required_argument, 0, O_APP},
                                         {"partner", required_argument, 0, O_PARTNER},
                                         {"timeout", required_argument, 0, O_TIMEOUT},
                                         {"server", no_argument, 0, O_SERVER},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {"json", no_argument, 0, O_JSON},
                                         {"version", no_argument, 0, O_VERSION},
                                         {0, 0, 0, 0}};
    int c;
    parse_sizes("8:1M");
    while ((c = getopt_long(argc, argv, "t:s:n:w:b:k:m:qh", opts, NULL)) != -1) {
        switch (c) {
        case 't':
            if ((opt.test = pick(optarg, test_names, 3)) < 0) {
                fprintf(stderr, "pio-perf: -t: '%s': use pingpong, stream or oneway\n", optarg);
                return 2;
            }
            break;
        case 's':
            if (parse_sizes(optarg) != 0) {
                fprintf(stderr,
                        "pio-perf: -s: '%s' is not a size list (e.g. 8,64K,1M or 8:64M, at most "
                        "%d sizes)\n",
                        optarg, PERF_MAX_SIZES);
                return 2;
            }
            break;
        case 'n': opt.iters = count_arg("-n", optarg, 1, 1000000000L); break;
        case 'w': opt.warmup = count_arg("-w", optarg, 0, 1000000000L); break;
        case 'b':
            if ((opt.bal = pick(optarg, bal_names, 3)) < 0) {
                fprintf(stderr, "pio-perf: -b: '%s': use USER, STATIC or DYNAMIC\n", optarg);
                return 2;
            }
            break;
        case 'k': opt.k = (int)count_arg("-k", optarg, 1, 65535); break;
        case 'm':
            if ((opt.mode = pick(optarg, mode_names, 3)) < 0) {
                fprintf(stderr, "pio-perf: -m: '%s': use blocking, sync or nonblocking\n", optarg);
                return 2;
            }
            break;
        case O_CSV: opt.csv = optarg; break;
        case O_APP: opt.app = optarg; break;
        case O_PARTNER: opt.partner = optarg; break;
        case O_TIMEOUT: opt.timeout_s = (int)count_arg("--timeout", optarg, 1, 1000000); break;
        case O_SERVER: opt.server = 1; break;
        case 'q': opt.quiet = 1; break;
        case 'h': usage(stdout); return 0;
        case O_JSON: opt.json = 1; break;
        case O_VERSION: return pio_cli_version("pio-perf");
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "pio-perf: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    progress("starting");
    pthread_t wd;
    if (pthread_create(&wd, NULL, watchdog, NULL) != 0)
        die("cannot start the watchdog thread");
    pthread_detach(wd);
    if (opt.mode == M_NONBLOCKING && opt.test != T_ONEWAY) {
        fprintf(stderr, "pio-perf: -m nonblocking goes with -t oneway only\n");
        return 2;
    }
    int rc = opt.server ? run_server() : run_client();
    free(sbuf);
    free(rbuf);
    return rc;
}
