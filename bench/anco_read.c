/* anco_read.c - one reader process of the anco benchmark (bench/anco.sh):
 * reads a file in the sequential, random or strided pattern, with plain
 * POSIX preads or through anco, checks every byte and prints its times.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 *  usage: anco-read gen FILE MIB
 *         anco-read --mode posix|anco --rank R --size N --pattern P [options] PATH
 *
 * gen writes MIB MiB of the pattern: the 8-byte word number w of the file
 * (at byte 8w) holds anco_pat(w), a 64-bit mix of w, so a byte read from the
 * wrong place, a stale cache entry or a torn copy is seen (native byte
 * order: the file is made and read on this machine).
 *
 * A reader is process R of N (bench/anco.sh starts N of them at once):
 *   --pattern seq      the whole file from the start in --xfer reads
 *                      (default 256 KiB), as every process does;
 *   --pattern random   --units U reads (default 32) of --xfer bytes
 *                      (default 1 MiB) at whole units chosen at random
 *                      (xorshift seeded from --seed and R);
 *   --pattern strided  IOR-like: transfers of --xfer bytes, process R reads
 *                      transfers R, R + N, R + 2N, ... to the end of the file.
 * --mode posix: open(2) and pread(2) on PATH (the benchmark's sshfs mount).
 * --mode anco: anco_init(cfg, R, N) (it joins PIO as application --app,
 * default anco-bench, through $PIO_SOCKET), anco_open(PATH: a local path or
 * pio://HOST/PATH), anco_pread. Cache settings: --cache BYTES, --groups G,
 * --singlet RATIO, --block BYTES; what is not given comes from the
 * environment (ANCO_CACHE, ...), as anco_config_default says.
 *
 * Start: after the open the process creates START.ready.R and waits until
 * START (--start-file) exists, so the script starts all N together; anco
 * mode then also meets at anco_barrier. t0 is taken after that, t1 after
 * the last read (before anco_finalize). Sizes take a K, M or G suffix.
 *
 * Prints one line, then in anco mode anco_print_stats's line:
 *   OK anco-read rank=R size=N mode=M pattern=P bytes=B reads=K t0=S t1=S
 * (t0 and t1 in seconds of CLOCK_REALTIME: one clock for every process of
 * the machine, so the script takes the first t0 and the last t1). A word
 * that differs from the pattern, a short read or any error: a FAIL line on
 * stderr and exit 1.
 */
#include "anco.h"
#include "pio.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* anco_pat - the pattern's word number w (splitmix64's finalizer of w + 1). */
static uint64_t anco_pat(uint64_t w)
{
    uint64_t z = (w + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int rank = -1;

__attribute__((format(printf, 1, 2), noreturn)) static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL anco-read rank=%d: ", rank);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

/* parse_size - digits with an optional K, M or G suffix (binary); -1 if bad. */
static long long parse_size(const char *s)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || v < 0)
        return -1;
    int shift = 0;
    switch (*end) {
    case 'k':
    case 'K':
        shift = 10;
        end++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        end++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        end++;
        break;
    default: break;
    }
    if (*end || v > (LLONG_MAX >> shift))
        return -1;
    return v << shift;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int gen(const char *path, const char *mib_s)
{
    long long mib = parse_size(mib_s);
    if (mib <= 0)
        fail("gen: %s: not a size in MiB", mib_s);
    FILE *f = fopen(path, "wb");
    if (!f)
        fail("gen: cannot create %s: %s", path, strerror(errno));
    static uint64_t buf[1 << 17]; /* 1 MiB */
    uint64_t w = 0;
    for (long long m = 0; m < mib; m++) {
        for (size_t k = 0; k < sizeof(buf) / 8; k++)
            buf[k] = anco_pat(w++);
        if (fwrite(buf, 1, sizeof(buf), f) != sizeof(buf))
            fail("gen: write to %s: %s", path, strerror(errno));
    }
    if (fclose(f) != 0)
        fail("gen: close of %s: %s", path, strerror(errno));
    return 0;
}

/* check - buf holds len bytes read at off (both multiples of 8): every word
 * is the pattern, else FAIL with the first difference. */
static void check(const uint8_t *buf, size_t len, uint64_t off)
{
    for (size_t k = 0; k < len / 8; k++) {
        uint64_t got, want = anco_pat(off / 8 + k);
        memcpy(&got, buf + 8 * k, 8);
        if (got != want) {
            fprintf(stderr,
                    "FAIL anco-read rank=%d: wrong data at byte %" PRIu64
                    " (read of %zu at %" PRIu64 "): %016" PRIx64 ", the file has %016" PRIx64 "\n",
                    rank, off + 8 * k, len, off, got, want);
            exit(1);
        }
    }
}

struct reader {
    int fd;        /* posix */
    anco_file *af; /* anco */
};

/* rd - len bytes at off, all of them (the patterns never read past the end). */
static void rd(struct reader *r, uint8_t *buf, size_t len, uint64_t off)
{
    size_t got = 0;
    if (r->af) {
        int rc = anco_pread(r->af, buf, len, off, &got);
        if (rc != PIO_OK)
            fail("anco_pread of %zu at %" PRIu64 ": %s", len, off, PIO_Strerror(rc));
    } else {
        while (got < len) {
            ssize_t n = pread(r->fd, buf + got, len - got, (off_t)(off + got));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                fail("pread of %zu at %" PRIu64 ": %s", len - got, off + got,
                     n < 0 ? strerror(errno) : "the end of the file");
            got += (size_t)n;
        }
    }
    if (got != len)
        fail("anco_pread of %zu at %" PRIu64 ": %zu bytes", len, off, got);
    check(buf, len, off);
}

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: anco-read gen FILE MIB\n"
            "       anco-read --mode posix|anco --rank R --size N --pattern seq|random|strided\n"
            "                 [--xfer BYTES] [--units U] [--seed S] [--start-file PATH]\n"
            "                 [--cache BYTES] [--groups G] [--singlet RATIO] [--block BYTES]\n"
            "                 [--app NAME] PATH\n");
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "gen") == 0)
        return gen(argv[2], argv[3]);

    const char *mode = NULL, *pattern = NULL, *start = NULL;
    long long size = -1, xfer = 0, units = 32, seed = 1;
    anco_config cfg;
    anco_config_default(&cfg);
    cfg.app = "anco-bench";
    static const struct option opts[] = {{"mode", 1, 0, 'm'},    {"rank", 1, 0, 'r'},
                                         {"size", 1, 0, 'n'},    {"pattern", 1, 0, 'p'},
                                         {"xfer", 1, 0, 'x'},    {"units", 1, 0, 'u'},
                                         {"seed", 1, 0, 's'},    {"start-file", 1, 0, 'S'},
                                         {"cache", 1, 0, 'c'},   {"groups", 1, 0, 'g'},
                                         {"singlet", 1, 0, 't'}, {"block", 1, 0, 'b'},
                                         {"app", 1, 0, 'a'},     {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        long long v =
            o == 'm' || o == 'p' || o == 'S' || o == 't' || o == 'a' ? 0 : parse_size(optarg);
        if (v < 0)
            usage();
        switch (o) {
        case 'm': mode = optarg; break;
        case 'r': rank = (int)v; break;
        case 'n': size = v; break;
        case 'p': pattern = optarg; break;
        case 'x': xfer = v; break;
        case 'u': units = v; break;
        case 's': seed = v; break;
        case 'S': start = optarg; break;
        case 'c': cfg.cache_bytes = (size_t)v; break;
        case 'g': cfg.groups = (uint32_t)v; break;
        case 't': cfg.singlet_ratio = atof(optarg); break;
        case 'b': cfg.block = (size_t)v; break;
        case 'a': cfg.app = optarg; break;
        default: usage();
        }
    }
    if (optind != argc - 1 || !mode || !pattern || rank < 0 || size < 1 || rank >= size)
        usage();
    int use_anco = strcmp(mode, "anco") == 0;
    if (!use_anco && strcmp(mode, "posix") != 0)
        usage();
    int pat = strcmp(pattern, "seq") == 0       ? 0
              : strcmp(pattern, "random") == 0  ? 1
              : strcmp(pattern, "strided") == 0 ? 2
                                                : -1;
    if (pat < 0)
        usage();
    if (!xfer)
        xfer = pat == 0 ? 256 << 10 : 1 << 20;
    if (xfer % 8)
        fail("--xfer %lld: not a multiple of 8", xfer);
    const char *path = argv[optind];

    anco *a = NULL;
    struct reader r = {.fd = -1, .af = NULL};
    uint64_t fsize = 0;
    int rc;
    if (use_anco) {
        if ((rc = anco_init(&cfg, rank, (int)size, &a)) != PIO_OK)
            fail("anco_init: %s", PIO_Strerror(rc));
        if ((rc = anco_open(a, path, &r.af, &fsize)) != PIO_OK)
            fail("anco_open %s: %s", path, PIO_Strerror(rc));
    } else {
        if ((r.fd = open(path, O_RDONLY)) < 0)
            fail("open %s: %s", path, strerror(errno));
        struct stat st;
        if (fstat(r.fd, &st) != 0)
            fail("fstat %s: %s", path, strerror(errno));
        fsize = (uint64_t)st.st_size;
    }
    if (fsize % 8 || fsize < (uint64_t)xfer)
        fail("%s: the file's size (%" PRIu64 ") is not a multiple of 8 of at least one transfer",
             path, fsize);
    uint8_t *buf = malloc((size_t)xfer);
    if (!buf)
        fail("malloc(%lld)", xfer);

    if (start) {
        char ready[4096];
        snprintf(ready, sizeof(ready), "%s.ready.%d", start, rank);
        int fd = open(ready, O_WRONLY | O_CREAT, 0644);
        if (fd < 0)
            fail("cannot create %s: %s", ready, strerror(errno));
        close(fd);
        for (double t = now(); access(start, F_OK) != 0; usleep(1000))
            if (now() - t > 600)
                fail("%s did not appear in 600 s", start);
    }
    if (use_anco && (rc = anco_barrier(a)) != PIO_OK)
        fail("anco_barrier: %s", PIO_Strerror(rc));

    uint64_t bytes = 0, reads = 0, x = (uint64_t)xfer;
    double t0 = now();
    if (pat == 0) {
        for (uint64_t off = 0; off + x <= fsize; off += x, reads++)
            rd(&r, buf, x, off);
    } else if (pat == 1) {
        uint64_t s = anco_pat((uint64_t)seed << 20 | (uint64_t)rank) | 1, nunits = fsize / x;
        for (long long k = 0; k < units; k++, reads++)
            rd(&r, buf, x, xorshift(&s) % nunits * x);
    } else {
        for (uint64_t t = (uint64_t)rank; (t + 1) * x <= fsize; t += (uint64_t)size, reads++)
            rd(&r, buf, x, t * x);
    }
    double t1 = now();
    bytes = reads * x;

    printf("OK anco-read rank=%d size=%lld mode=%s pattern=%s bytes=%" PRIu64 " reads=%" PRIu64
           " t0=%.6f t1=%.6f\n",
           rank, size, mode, pattern, bytes, reads, t0, t1);
    if (use_anco) {
        anco_print_stats(a, stdout);
        fflush(stdout);
        if ((rc = anco_close(r.af)) != PIO_OK)
            fail("anco_close: %s", PIO_Strerror(rc));
        if ((rc = anco_finalize(a)) != PIO_OK)
            fail("anco_finalize: %s", PIO_Strerror(rc));
    } else {
        close(r.fd);
    }
    free(buf);
    return 0;
}
