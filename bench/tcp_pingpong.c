/* tcp_pingpong.c - plain TCP socket ping-pong and stream: the baseline for pio-perf.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The same tests, size syntax, data checks and output columns as
 * tools/pio-perf, over one TCP connection with TCP_NODELAY and nothing else:
 * no pool, no daemon, no handshake. Before every round the client sends a
 * 48-byte header (six u64: magic, test, size, warm-up, iterations, round);
 * the server answers with the same header and then plays its part:
 *   pingpong: read `size` bytes, write them back; reported: half round trip;
 *   stream:   read N messages, write a 1-byte ack; reported: N x size over
 *             the time from the first write to the ack;
 *   reqrep:   read an 8-byte request, write `size` bytes; reported: the
 *             whole round trip (the "IP" baseline of a one-sided get).
 * The server serves one client and exits when it closes the connection.
 * Single-threaded; blocking sockets with SO_RCVTIMEO/SO_SNDTIMEO (--timeout).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "perf_loop.h"
#include "perf_sizes.h"

#define TP_MAGIC     UINT64_C(0x5443505050494f31) /* "TCPPPIO1" */
#define TP_MAX_SIZES 256

enum { T_PINGPONG = 0, T_STREAM = 1, T_REQREP = 2 };
enum { H_MAGIC, H_TEST, H_SIZE, H_WARMUP, H_ITERS, H_ROUND, H_N };

static const char *const test_names[] = {"pingpong", "stream", "reqrep"};

static struct {
    int server, test, timeout_s;
    long iters, warmup;
    const char *host, *port, *bind, *csv;
    size_t sizes[TP_MAX_SIZES];
    int nsizes;
} opt = {.test = T_PINGPONG, .timeout_s = 60, .iters = -1, .warmup = -1, .port = "7799"};

static int fd = -1;
static uint8_t *sbuf, *rbuf;
static size_t buf_size;
static uint64_t msg_counter;

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tcp_pingpong: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- sizes and data pattern: shared with pio-perf ---- */

static int parse_sizes(const char *arg)
{
    return perf_parse_sizes(arg, opt.sizes, TP_MAX_SIZES, &opt.nsizes);
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
    buf_size = n;
}

static void verify(const uint8_t *buf, size_t size, uint64_t st, const char *who)
{
    long bad = perf_verify(buf, size, st);
    if (bad >= 0)
        die("data check failed (%s): message %" PRIu64 " of %zu bytes: byte %ld is 0x%02x, "
            "expected 0x%02x",
            who, st, size, bad, buf[bad], perf_expect((size_t)bad, st));
}

/* ---- socket I/O ---- */

/* Returns 0, or 1 when the peer closed before the first byte (clean end). */
static int read_full(void *buf, size_t n, int eof_ok)
{
    uint8_t *p = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r == 0) {
            if (eof_ok && got == 0)
                return 1;
            die("connection closed by the peer after %zu of %zu bytes", got, n);
        }
        if (r < 0) {
            if (errno == EINTR)
                continue;
            die("read: %s", errno == EAGAIN ? "timed out (--timeout)" : strerror(errno));
        }
        got += (size_t)r;
    }
    return 0;
}

static void write_full(const void *buf, size_t n)
{
    const uint8_t *p = buf;
    size_t put = 0;
    while (put < n) {
        ssize_t r = send(fd, p + put, n - put, MSG_NOSIGNAL);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            die("write: %s", errno == EAGAIN ? "timed out (--timeout)" : strerror(errno));
        }
        put += (size_t)r;
    }
}

static void tune(int s)
{
    int one = 1;
    struct timeval tv = {.tv_sec = opt.timeout_s};
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static struct addrinfo *resolve(const char *host, int passive)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    if (passive)
        hints.ai_flags = AI_PASSIVE;
    int rc = getaddrinfo(host, opt.port, &hints, &ai);
    if (rc != 0)
        die("%s port %s: %s", host ? host : "*", opt.port, gai_strerror(rc));
    return ai;
}

/* ---- server ---- */

static int run_server(void)
{
    struct addrinfo *ai = resolve(opt.bind, 1);
    int ls = socket(ai->ai_family, SOCK_STREAM, 0), one = 1;
    if (ls < 0)
        die("socket: %s", strerror(errno));
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(ls, ai->ai_addr, ai->ai_addrlen) != 0 || listen(ls, 1) != 0)
        die("bind/listen on %s port %s: %s", opt.bind ? opt.bind : "*", opt.port, strerror(errno));
    freeaddrinfo(ai);
    struct timeval tv = {.tv_sec = opt.timeout_s};
    setsockopt(ls, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    fd = accept(ls, NULL, NULL);
    if (fd < 0)
        die("accept: %s", errno == EAGAIN ? "no client within --timeout" : strerror(errno));
    close(ls);
    tune(fd);
    for (;;) {
        uint64_t h[H_N];
        if (read_full(h, sizeof(h), 1))
            break;
        if (h[H_MAGIC] != TP_MAGIC || h[H_TEST] > T_REQREP || h[H_SIZE] > (uint64_t)SIZE_MAX / 2)
            die("bad round header from the client (not tcp_pingpong of this version?)");
        size_t size = (size_t)h[H_SIZE];
        buffers_need(size);
        write_full(h, sizeof(h));
        if (h[H_TEST] == T_PINGPONG) {
            for (uint64_t i = 0; i < h[H_WARMUP] + h[H_ITERS]; i++) {
                uint64_t st = ++msg_counter;
                perf_poison(rbuf, size, st);
                read_full(rbuf, size, 0);
                verify(rbuf, size, st, "server, ping");
                write_full(rbuf, size);
            }
        } else if (h[H_TEST] == T_REQREP) {
            for (uint64_t i = 0; i < h[H_WARMUP] + h[H_ITERS]; i++) {
                uint64_t req;
                read_full(&req, sizeof(req), 0);
                perf_stamp(sbuf, size, req);
                write_full(sbuf, size);
            }
        } else {
            uint64_t phases[2] = {h[H_WARMUP], h[H_ITERS]};
            for (int ph = 0; ph < 2; ph++) {
                if (ph == 0 && phases[0] == 0)
                    continue;
                for (uint64_t i = 0; i < phases[ph]; i++) {
                    uint64_t st = ++msg_counter;
                    perf_poison(rbuf, size, st);
                    read_full(rbuf, size, 0);
                    verify(rbuf, size, st, "server, stream");
                }
                uint8_t ack = 'K';
                write_full(&ack, 1);
            }
        }
    }
    close(fd);
    return 0;
}

/* ---- client ---- */

static uint64_t round_id;

/* One round (perf_round_fn): the header both ways, then the test. */
static double client_round(void *ctx, size_t size, uint64_t warmup, uint64_t iters, double *op_usec)
{
    (void)ctx;
    (void)op_usec;
    uint64_t h[H_N] = {TP_MAGIC, (uint64_t)opt.test, size, warmup, iters, ++round_id}, r[H_N];
    write_full(h, sizeof(h));
    read_full(r, sizeof(r), 0);
    if (memcmp(h, r, sizeof(h)) != 0)
        die("the server did not echo the round header");
    long long t0 = 0, t1 = 0;
    if (opt.test == T_PINGPONG) {
        for (uint64_t i = 0; i < warmup + iters; i++) {
            if (i == warmup)
                t0 = now_ns();
            uint64_t st = ++msg_counter;
            perf_stamp(sbuf, size, st);
            perf_poison(rbuf, size, st);
            write_full(sbuf, size);
            read_full(rbuf, size, 0);
            verify(rbuf, size, st, "client, pong");
        }
        t1 = now_ns();
    } else if (opt.test == T_REQREP) {
        for (uint64_t i = 0; i < warmup + iters; i++) {
            if (i == warmup)
                t0 = now_ns();
            uint64_t st = ++msg_counter;
            perf_poison(rbuf, size, st);
            write_full(&st, sizeof(st));
            read_full(rbuf, size, 0);
            verify(rbuf, size, st, "client, reply");
        }
        t1 = now_ns();
    } else {
        uint64_t phases[2] = {warmup, iters};
        for (int ph = 0; ph < 2; ph++) {
            if (ph == 0 && warmup == 0)
                continue;
            if (ph == 1)
                t0 = now_ns();
            for (uint64_t i = 0; i < phases[ph]; i++) {
                perf_stamp(sbuf, size, ++msg_counter);
                write_full(sbuf, size);
            }
            uint8_t ack = 0;
            read_full(&ack, 1, 0);
            if (ack != 'K')
                die("stream ack is 0x%02x, expected 'K'", ack);
            if (ph == 1)
                t1 = now_ns();
        }
    }
    return (double)(t1 - t0) / 1e9;
}

static int run_client(void)
{
    struct addrinfo *ai = resolve(opt.host, 0);
    long long deadline = now_ns() + (long long)opt.timeout_s * 1000000000LL;
    for (;;) { /* the server may still be starting: retry for --timeout */
        fd = socket(ai->ai_family, SOCK_STREAM, 0);
        if (fd < 0)
            die("socket: %s", strerror(errno));
        if (opt.bind) {
            struct addrinfo *b = NULL,
                            hints = {.ai_family = ai->ai_family, .ai_socktype = SOCK_STREAM};
            if (getaddrinfo(opt.bind, NULL, &hints, &b) != 0 ||
                bind(fd, b->ai_addr, b->ai_addrlen) != 0)
                die("bind to %s: %s", opt.bind, strerror(errno));
            freeaddrinfo(b);
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        int e = errno;
        close(fd);
        if (now_ns() > deadline)
            die("connect to %s port %s: %s", opt.host, opt.port, strerror(e));
        usleep(50000);
    }
    freeaddrinfo(ai);
    tune(fd);

    buffers_need(perf_max_size(opt.sizes, opt.nsizes));

    FILE *csv = NULL;
    if (opt.csv && !(csv = perf_csv_open(opt.csv)))
        die("--csv %s: %s", opt.csv, strerror(errno));
    printf("# tcp_pingpong: %s, plain TCP to %s port %s (TCP_NODELAY)\n", test_names[opt.test],
           opt.host, opt.port);
    printf("# usec/op: %s; MB/s: 1 MB = 10^6 bytes\n",
           opt.test == T_PINGPONG ? "half the round trip; MB/s = size / (usec/op)"
           : opt.test == T_REQREP ? "the round trip (8-byte request, size-byte reply)"
                                  : "stream time (first send to ack) / messages");
    struct perf_loop loop = {.sizes = opt.sizes,
                             .nsizes = opt.nsizes,
                             .iters = opt.iters,
                             .warmup = opt.warmup,
                             .half = opt.test == T_PINGPONG,
                             .test = test_names[opt.test],
                             .balance = "tcp",
                             .mode = "blocking",
                             .csv = csv,
                             .round = client_round};
    perf_loop_run(&loop);
    if (csv && fclose(csv) != 0)
        die("--csv %s: %s", opt.csv, strerror(errno));
    close(fd);
    return 0;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tcp_pingpong --server [-B ADDR] [-p PORT] [--timeout S]\n"
            "       tcp_pingpong [-t pingpong|stream|reqrep] [-s SIZES] [-n ITERS] [-w WARMUP]\n"
            "                    [-B ADDR] [-p PORT] [--csv FILE] [--timeout S] HOST\n"
            "Plain TCP (TCP_NODELAY) ping-pong and stream, the baseline for pio-perf:\n"
            "same sizes syntax (8,64K+1,1M or 8:64M), same checks, same columns.\n"
            "  -p, --port P      TCP port (default 7799)\n"
            "  -B, --bind ADDR   server: listen address; client: source address\n"
            "  --timeout S       give up after S seconds without progress (default 60)\n");
}

static long count_arg(const char *o, const char *v, long min, long max)
{
    char *e;
    errno = 0;
    long n = strtol(v, &e, 10);
    if (errno || *v == 0 || *e || n < min || n > max) {
        fprintf(stderr, "tcp_pingpong: %s: '%s' is not a number from %ld to %ld\n", o, v, min, max);
        exit(2);
    }
    return n;
}

int main(int argc, char **argv)
{
    enum { O_CSV = 256, O_TIMEOUT, O_SERVER };
    static const struct option opts[] = {{"test", required_argument, 0, 't'},
                                         {"sizes", required_argument, 0, 's'},
                                         {"iters", required_argument, 0, 'n'},
                                         {"warmup", required_argument, 0, 'w'},
                                         {"port", required_argument, 0, 'p'},
                                         {"bind", required_argument, 0, 'B'},
                                         {"csv", required_argument, 0, O_CSV},
                                         {"timeout", required_argument, 0, O_TIMEOUT},
                                         {"server", no_argument, 0, O_SERVER},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    parse_sizes("8:1M");
    while ((c = getopt_long(argc, argv, "t:s:n:w:p:B:h", opts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (strcasecmp(optarg, "pingpong") == 0)
                opt.test = T_PINGPONG;
            else if (strcasecmp(optarg, "stream") == 0)
                opt.test = T_STREAM;
            else if (strcasecmp(optarg, "reqrep") == 0)
                opt.test = T_REQREP;
            else {
                fprintf(stderr, "tcp_pingpong: -t: '%s': use pingpong, stream or reqrep\n", optarg);
                return 2;
            }
            break;
        case 's':
            if (parse_sizes(optarg) != 0) {
                fprintf(stderr, "tcp_pingpong: -s: '%s' is not a size list\n", optarg);
                return 2;
            }
            break;
        case 'n': opt.iters = count_arg("-n", optarg, 1, 1000000000L); break;
        case 'w': opt.warmup = count_arg("-w", optarg, 0, 1000000000L); break;
        case 'p': opt.port = optarg; break;
        case 'B': opt.bind = optarg; break;
        case O_CSV: opt.csv = optarg; break;
        case O_TIMEOUT: opt.timeout_s = (int)count_arg("--timeout", optarg, 1, 1000000); break;
        case O_SERVER: opt.server = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    for (int i = 0; i < opt.nsizes && !opt.server; i++)
        if (opt.sizes[i] == 0) {
            fprintf(stderr, "tcp_pingpong: -s: size 0 means nothing on a TCP byte stream\n");
            return 2;
        }
    if (!opt.server) {
        if (optind != argc - 1) {
            usage(stderr);
            return 2;
        }
        opt.host = argv[optind];
    } else if (optind != argc) {
        usage(stderr);
        return 2;
    }
    int rc = opt.server ? run_server() : run_client();
    free(sbuf);
    free(rbuf);
    return rc;
}
