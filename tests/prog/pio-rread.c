/* pio-rread.c - remote file access (PIO_Rfile_*) under test and measured.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 *   pio-rread check HOST REMOTE LOCAL N   N reads of random offsets and sizes
 *                                          (1 B .. 8 MiB, some past the end)
 *                                          compared byte for byte with pread
 *                                          of LOCAL, the same file seen here
 *   pio-rread seq HOST REMOTE BS [LIMIT]  read the file (its first LIMIT
 *                                          bytes) in BS-byte reads; prints
 *                                          "MB/s X"
 *   pio-rread stride HOST REMOTE BS S [LIMIT]  BS-byte reads every S bytes;
 *                                          prints "IOPS X MB/s Y"
 *   pio-rread random HOST REMOTE BS N [QD]  N BS-byte reads at offsets
 *                                          drawn at random (multiples of BS,
 *                                          the same series every run), QD at
 *                                          a time through PIO_Rfile_readlist
 *                                          (remote; default 1: one pread at
 *                                          a time); prints "IOPS X MB/s Y"
 *   HOST "local": the same reads with pread(2) of the local path REMOTE
 *   (the baseline, measured by the same code)
 *   pio-rread error HOST REMOTE           expects the open to fail; prints
 *                                          the error's name and words
 * Joins as application $PIO_APP (default "rread"). Prints "OK ..." or
 * "FAIL ..." (exit 1).
 */
#include "pio.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        printf("FAIL ");                                                                           \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        exit(1);                                                                                   \
    } while (0)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static PIO_Rfile open_remote(const char *host, const char *path, uint64_t *size)
{
    PIO_Rfile rf;
    int rc = PIO_Rfile_open(host, path, &rf, size);
    if (rc != PIO_OK)
        FAIL("PIO_Rfile_open(%s, %s): %s (%s) %s", host, path, PIO_Strerror(rc), PIO_Errname(rc),
             PIO_File_error_text());
    return rf;
}

static void check(const char *host, const char *remote, const char *local, int n)
{
    uint64_t size;
    PIO_Rfile rf = open_remote(host, remote, &size);
    int fd = open(local, O_RDONLY);
    if (fd < 0)
        FAIL("%s: cannot open", local);
    size_t max = 8u << 20;
    uint8_t *a = malloc(max), *b = malloc(max);
    srand(12345);
    uint64_t total = 0, next = 0;
    for (int i = 0; i < n; i++) {
        size_t len = (size_t)1 << (rand() % 24);
        len += (size_t)rand() % len;
        if (len > max)
            len = max;
        uint64_t off = size ? ((uint64_t)rand() * 7919u) % (size + size / 16 + 1) : 0;
        if (rand() % 3 == 0) /* runs that continue: PIO_Rfile reads ahead */
            off = next;
        size_t got = 0;
        memset(a, 0xAB, len);
        int rc = PIO_Rfile_pread(rf, a, len, off, &got);
        if (rc != PIO_OK)
            FAIL("read %d: %zu bytes at %" PRIu64 ": %s", i, len, off, PIO_Strerror(rc));
        ssize_t want = pread(fd, b, len, (off_t)off);
        if (want < 0 || got != (size_t)want)
            FAIL("read %d: %zu bytes at %" PRIu64 ": got %zu, pread %zd", i, len, off, got, want);
        if (memcmp(a, b, got) != 0)
            FAIL("read %d: %zu bytes at %" PRIu64 ": the bytes differ", i, len, off);
        total += got;
        next = off + got;
    }
    /* strided runs (read ahead once three preads keep size and stride), each
     * starting elsewhere, with new sizes and strides; the last one runs past
     * the end of the file */
    static const struct {
        size_t len;
        uint64_t step;
        int n;
    } runs[] = {{4096, 65536, 200},    {4096, 65536, 3},  {1000, 70001, 150},
                {131072, 1 << 20, 40}, {4096, 8192, 300}, {65536, 65536 * 3, 100}};
    int nruns = (int)(sizeof(runs) / sizeof(runs[0]));
    for (int k = 0; k < nruns; k++) {
        uint64_t at = (uint64_t)rand() % (size / 2 + 1);
        if (k == nruns - 1)
            at = size > (uint64_t)runs[k].n / 2 * runs[k].step
                     ? size - (uint64_t)runs[k].n / 2 * runs[k].step
                     : 0;
        for (int i = 0; i < runs[k].n; i++, at += runs[k].step) {
            size_t got = 0, len = runs[k].len;
            memset(a, 0xAB, len);
            int rc = PIO_Rfile_pread(rf, a, len, at, &got);
            ssize_t want = pread(fd, b, len, (off_t)at);
            if (rc != PIO_OK || want < 0 || got != (size_t)want || memcmp(a, b, got) != 0)
                FAIL("strided run %d, read %d: %zu bytes at %" PRIu64 ": %s, got %zu, pread %zd", k,
                     i, len, at, PIO_Strerror(rc), got, want);
            total += got;
        }
    }
    /* lists of ranges (PIO_Rfile_readlist): scattered, some larger than a
     * piece of the list, some empty, some past the end of the file */
    for (int k = 0; k < 40; k++) {
        enum { NL = 24 };
        PIO_Rfile_range l[NL];
        size_t lmax = max / NL;
        uint8_t *la = malloc(lmax * NL);
        for (int i = 0; i < NL; i++) {
            size_t len = (size_t)1 << (rand() % 20);
            len += (size_t)rand() % len;
            if (len > lmax)
                len = lmax;
            if (rand() % 10 == 0)
                len = 0;
            l[i].buf = la + (size_t)i * lmax;
            l[i].count = len;
            l[i].offset = size ? ((uint64_t)rand() * 7919u) % (size + size / 16 + 1) : 0;
            memset(l[i].buf, 0xAB, len);
        }
        int rc = PIO_Rfile_readlist(rf, l, NL);
        if (rc != PIO_OK)
            FAIL("list %d: %s", k, PIO_Strerror(rc));
        for (int i = 0; i < NL; i++) {
            ssize_t want = pread(fd, b, l[i].count, (off_t)l[i].offset);
            if (want < 0 || l[i].got != (size_t)want || memcmp(l[i].buf, b, l[i].got) != 0)
                FAIL("list %d, range %d: %zu bytes at %" PRIu64 ": got %zu, pread %zd", k, i,
                     l[i].count, l[i].offset, l[i].got, want);
            total += l[i].got;
        }
        free(la);
    }
    /* then the whole file in reads that no slot boundary divides */
    uint64_t at = 0;
    for (;;) {
        size_t len = 100003, got = 0;
        int rc = PIO_Rfile_pread(rf, a, len, at, &got);
        ssize_t want = pread(fd, b, len, (off_t)at);
        if (rc != PIO_OK || want < 0 || got != (size_t)want || memcmp(a, b, got) != 0)
            FAIL("sequential read at %" PRIu64 ": %s, got %zu, pread %zd", at, PIO_Strerror(rc),
                 got, want);
        if (got == 0)
            break;
        at += got;
        total += got;
    }
    if (at != size)
        FAIL("the sequential reads ended at %" PRIu64 ", not at the size %" PRIu64, at, size);
    PIO_Rfile_close(rf);
    close(fd);
    printf("OK check: %d reads and 40 lists of 24 ranges, %" PRIu64
           " bytes equal to pread of %s (size %" PRIu64 ")\n",
           n, total, local, size);
    free(a);
    free(b);
}

/* A file to read: remote (PIO_Rfile) or, for host "local", pread(2). */
struct src {
    PIO_Rfile rf;
    int fd;
    uint64_t size;
};

static void src_open(struct src *f, const char *host, const char *path)
{
    memset(f, 0, sizeof(*f));
    f->fd = -1;
    if (strcmp(host, "local") == 0) {
        if ((f->fd = open(path, O_RDONLY)) < 0)
            FAIL("%s: cannot open", path);
        f->size = (uint64_t)lseek(f->fd, 0, SEEK_END);
    } else {
        f->rf = open_remote(host, path, &f->size);
    }
}

static size_t src_read(struct src *f, void *buf, size_t n, uint64_t off)
{
    if (f->fd >= 0) {
        ssize_t r = pread(f->fd, buf, n, (off_t)off);
        if (r < 0)
            FAIL("pread at %" PRIu64, off);
        return (size_t)r;
    }
    size_t got;
    int rc = PIO_Rfile_pread(f->rf, buf, n, off, &got);
    if (rc != PIO_OK)
        FAIL("read at %" PRIu64 ": %s", off, PIO_Strerror(rc));
    return got;
}

static void src_close(struct src *f)
{
    if (f->fd >= 0)
        close(f->fd);
    else
        PIO_Rfile_close(f->rf);
}

static void seq(const char *host, const char *path, size_t bs, uint64_t limit)
{
    struct src f;
    src_open(&f, host, path);
    if (!limit || limit > f.size)
        limit = f.size;
    uint8_t *a = malloc(bs);
    double t0 = now();
    uint64_t off = 0;
    while (off < limit) {
        size_t n = limit - off < bs ? (size_t)(limit - off) : bs;
        size_t got = src_read(&f, a, n, off);
        off += got;
        if (got < n)
            break;
    }
    double t = now() - t0;
    src_close(&f);
    printf("OK seq %zu: %" PRIu64 " bytes in %.3f s MB/s %.3f\n", bs, off, t,
           (double)off / t / 1e6);
    free(a);
}

static void stride(const char *host, const char *path, size_t bs, uint64_t step, uint64_t limit)
{
    struct src f;
    src_open(&f, host, path);
    if (!limit || limit > f.size)
        limit = f.size;
    uint8_t *a = malloc(bs);
    double t0 = now();
    uint64_t n = 0;
    for (uint64_t off = 0; off + bs <= limit; off += step, n++)
        if (src_read(&f, a, bs, off) != bs)
            FAIL("short read at %" PRIu64, off);
    double t = now() - t0;
    src_close(&f);
    printf("OK stride %zu/%" PRIu64 ": %" PRIu64 " reads in %.3f s IOPS %.1f MB/s %.3f\n", bs, step,
           n, t, (double)n / t, (double)n * (double)bs / t / 1e6);
    free(a);
}

/* n reads at random offsets; qd > 1 (remote only): qd of them at a time
 * through PIO_Rfile_readlist, as a program that knows its next reads
 * (lio_listio's way) */
static void randread(const char *host, const char *path, size_t bs, uint64_t n, int qd)
{
    struct src f;
    src_open(&f, host, path);
    if (f.size < bs)
        FAIL("the file is smaller than one read");
    if (qd < 1 || !f.rf)
        qd = 1;
    uint8_t *a = malloc(bs * (size_t)qd);
    PIO_Rfile_range *l = calloc((size_t)qd, sizeof(*l));
    uint64_t x = 88172645463325252ull, slots = f.size / bs; /* xorshift64: the same series */
    double t0 = now();
    for (uint64_t i = 0; i < n; i += (uint64_t)qd) {
        int k = 0;
        for (; k < qd && i + (uint64_t)k < n; k++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            l[k] = (PIO_Rfile_range){a + (size_t)k * bs, bs, x % slots * bs, 0};
        }
        if (qd == 1) {
            if (src_read(&f, a, bs, l[0].offset) != bs)
                FAIL("short read at %" PRIu64, l[0].offset);
            continue;
        }
        int rc = PIO_Rfile_readlist(f.rf, l, k);
        for (int j = 0; j < k; j++)
            if (rc != PIO_OK || l[j].got != bs)
                FAIL("list read at %" PRIu64 ": %s, got %zu", l[j].offset, PIO_Strerror(rc),
                     l[j].got);
    }
    double t = now() - t0;
    src_close(&f);
    printf("OK random %zu x%d: %" PRIu64 " reads in %.3f s IOPS %.1f MB/s %.3f\n", bs, qd, n, t,
           (double)n / t, (double)n * (double)bs / t / 1e6);
    free(l);
    free(a);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 4) {
        fprintf(stderr, "usage: pio-rread check|seq|stride|random|error HOST REMOTE ...\n");
        return 2;
    }
    const char *m = argv[1], *host = argv[2], *remote = argv[3];
    int local = strcmp(host, "local") == 0, rc = PIO_OK;
    if (!local && (rc = PIO_Init(getenv("PIO_APP") ? getenv("PIO_APP") : "rread", 0, 1)) != PIO_OK)
        FAIL("PIO_Init: %s", PIO_Strerror(rc));
    if (strcmp(m, "check") == 0 && argc > 5)
        check(host, remote, argv[4], atoi(argv[5]));
    else if (strcmp(m, "seq") == 0 && argc > 4)
        seq(host, remote, (size_t)strtoull(argv[4], NULL, 0),
            argc > 5 ? strtoull(argv[5], NULL, 0) : 0);
    else if (strcmp(m, "random") == 0 && argc > 5)
        randread(host, remote, (size_t)strtoull(argv[4], NULL, 0), strtoull(argv[5], NULL, 0),
                 argc > 6 ? atoi(argv[6]) : 1);
    else if (strcmp(m, "stride") == 0 && argc > 5)
        stride(host, remote, (size_t)strtoull(argv[4], NULL, 0), strtoull(argv[5], NULL, 0),
               argc > 6 ? strtoull(argv[6], NULL, 0) : 0);
    else if (strcmp(m, "error") == 0) {
        PIO_Rfile rf;
        rc = PIO_Rfile_open(host, remote, &rf, NULL);
        if (rc == PIO_OK)
            FAIL("PIO_Rfile_open(%s, %s) succeeded", host, remote);
        printf("OK error: %s: %s; %s\n", PIO_Errname(rc), PIO_Strerror(rc), PIO_File_error_text());
    } else {
        fprintf(stderr, "pio-rread: bad arguments\n");
        return 2;
    }
    if (!local)
        PIO_Exit();
    return 0;
}
