/* pfs-check.c - what the pfs tests and benchmark drive through libpfs.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 *   pfs-check [--mds APP] [--class C] CMD ARGS
 *   random-io PATH LOCAL N SEED   N random unaligned preads and pwrites on PATH,
 *                                 mirrored on the local file LOCAL (which holds
 *                                 PATH's bytes at the start); every read is
 *                                 compared, then the whole file
 *   ackwrite PATH MIB [COUNT]     write MIB MiB of a pattern, 1 MiB per pwrite,
 *                                 printing "acked BYTES" after each success;
 *                                 on failure print the error, close, exit 3
 *   verify PATH BYTES             the first BYTES of PATH hold the pattern
 *   mkfiles DIR N                 create DIR/f0..f(N-1), "acked K" after each
 *   load PATH MIB SECONDS         rewrite MIB MiB (1 stripe) in a loop
 *   probe PATH COUNT MS           every MS ms write 1 MiB at offset 0, print
 *                                 "latency_us N" per write
 *   probe-setup DIR               DIR/s0.. one 1-stripe file per I/O server
 *                                 (created back to back, so round-robin
 *                                 placement puts each on another server)
 *   probe-all DIR SECONDS MS      every MS ms write 1 MiB to each DIR/sK (a
 *                                 thread each, on its own clock), for
 *                                 SECONDS; print
 *                                 "T SERVER LATENCY_US" per write (T = s since
 *                                 start, SERVER = the file's server index)
 *   overwrite-fid PATH            write 4 KiB of zeros at offset 0 of PATH's
 *                                 first object straight to its I/O server
 *                                 (pfs_batch_write by fid: no open, so no
 *                                 check at the metadata server), print
 *                                 "overwrote" or the error
 * Exit: 0 success, 1 mismatch, 2 usage, 3 pfs error.
 */
#include "pfs/pfs.h"
#include "pio.h"

#include <fcntl.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIB (1u << 20)

static pfs_fs *fs;

static int perr(const char *what, int rc)
{
    const char *t = pfs_errtext();
    fprintf(stderr, "pfs-check: %s: %s\n", what, t && *t ? t : PIO_Strerror(rc));
    return 3;
}

static uint64_t rnd_state;
static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

static uint8_t pattern(uint64_t off)
{
    return (uint8_t)((off * 2654435761u) >> 13);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static int random_io(const char *path, const char *local, int n, uint64_t seed)
{
    rnd_state = seed ? seed : 1;
    int fd = open(local, O_RDWR);
    if (fd < 0) {
        perror(local);
        return 2;
    }
    pfs_file *f;
    int rc = pfs_open(fs, path, PFS_RDWR, 0, &f);
    if (rc != PIO_OK)
        return perr(path, rc);
    pfs_stat st;
    pfs_fstat(f, &st);
    uint64_t size = st.size;
    uint8_t *a = malloc(4 * MIB), *b = malloc(4 * MIB);
    int bad = 0;
    for (int i = 0; i < n && !bad; i++) {
        uint64_t off = size ? rnd() % (size + MIB) : 0;
        size_t len = 1 + rnd() % (3 * MIB);
        if (rnd() % 3 == 0) { /* write: random bytes, unaligned, may extend the file */
            for (size_t k = 0; k < len; k++)
                a[k] = (uint8_t)rnd();
            if ((rc = pfs_pwrite(f, a, len, off)) != PIO_OK)
                return perr(path, rc);
            if (pwrite(fd, a, len, (off_t)off) != (ssize_t)len) {
                perror(local);
                return 2;
            }
            if (off + len > size)
                size = off + len;
            continue;
        }
        size_t got;
        if ((rc = pfs_pread(f, a, len, off, &got)) != PIO_OK)
            return perr(path, rc);
        ssize_t want = pread(fd, b, len, (off_t)off);
        if (want < 0 || (size_t)want != got || memcmp(a, b, got) != 0) {
            fprintf(stderr, "pfs-check: read %zu at %" PRIu64 ": got %zu bytes, local %zd%s\n", len,
                    off, got, want, (size_t)want == got ? " (bytes differ)" : "");
            bad = 1;
        }
    }
    /* the whole file, in 1 MiB + 1 reads */
    for (uint64_t off = 0; !bad && off < size;) {
        size_t got;
        if ((rc = pfs_pread(f, a, MIB + 1, off, &got)) != PIO_OK)
            return perr(path, rc);
        ssize_t want = pread(fd, b, MIB + 1, (off_t)off);
        if (want < 0 || (size_t)want != got || memcmp(a, b, got) != 0 || !got) {
            fprintf(stderr, "pfs-check: whole-file compare differs at %" PRIu64 "\n", off);
            bad = 1;
        }
        off += got;
    }
    rc = pfs_close(f);
    close(fd);
    free(a);
    free(b);
    if (rc != PIO_OK)
        return perr(path, rc);
    if (!bad)
        printf("ok %d operations, %" PRIu64 " bytes compared\n", n, size);
    return bad;
}

static int ackwrite(const char *path, uint64_t mib, uint32_t count)
{
    pfs_file *f;
    pfs_stripe s = {.count = count};
    int rc = pfs_create(fs, path, 0644, &s, mib * MIB, &f);
    if (rc != PIO_OK)
        return perr(path, rc);
    uint8_t *buf = malloc(MIB);
    for (uint64_t i = 0; i < mib; i++) {
        for (uint32_t k = 0; k < MIB; k++)
            buf[k] = pattern(i * MIB + k);
        rc = pfs_pwrite(f, buf, MIB, i * MIB);
        if (rc != PIO_OK) {
            int r = perr(path, rc);
            pfs_close(f);
            free(buf);
            return r;
        }
        printf("acked %" PRIu64 "\n", (i + 1) * MIB);
        fflush(stdout);
    }
    free(buf);
    rc = pfs_close(f);
    return rc == PIO_OK ? 0 : perr(path, rc);
}

static int verify(const char *path, uint64_t bytes)
{
    pfs_file *f;
    int rc = pfs_open(fs, path, PFS_RDONLY, 0, &f);
    if (rc != PIO_OK)
        return perr(path, rc);
    uint8_t *buf = malloc(MIB);
    int bad = 0;
    for (uint64_t off = 0; off < bytes && !bad;) {
        size_t want = bytes - off < MIB ? (size_t)(bytes - off) : MIB, got;
        if ((rc = pfs_pread(f, buf, want, off, &got)) != PIO_OK)
            return perr(path, rc);
        if (got != want) {
            fprintf(stderr, "pfs-check: %s: %zu bytes at %" PRIu64 ", wanted %zu\n", path, got, off,
                    want);
            bad = 1;
        }
        for (size_t k = 0; k < got && !bad; k++)
            if (buf[k] != pattern(off + k)) {
                fprintf(stderr, "pfs-check: %s: byte %" PRIu64 " differs\n", path, off + k);
                bad = 1;
            }
        off += got;
    }
    free(buf);
    pfs_close(f);
    if (!bad)
        printf("ok %" PRIu64 " bytes\n", bytes);
    return bad;
}

static int mkfiles(const char *dir, int n)
{
    for (int i = 0; i < n; i++) {
        char p[1024];
        snprintf(p, sizeof(p), "%s/f%d", dir, i);
        pfs_file *f;
        int rc = pfs_open(fs, p, PFS_WRONLY | PFS_CREAT | PFS_EXCL, 0644, &f);
        if (rc != PIO_OK)
            return perr(p, rc);
        pfs_close(f);
        printf("acked %d\n", i);
        fflush(stdout);
    }
    return 0;
}

static int load(const char *path, uint64_t mib, double secs)
{
    pfs_file *f;
    pfs_stripe s = {.count = 1};
    int rc = pfs_create(fs, path, 0644, &s, mib * MIB, &f);
    if (rc != PIO_OK)
        return perr(path, rc);
    uint8_t *buf = calloc(1, mib * MIB);
    double end = now_s() + secs;
    uint64_t rounds = 0;
    while (now_s() < end) {
        if ((rc = pfs_pwrite(f, buf, mib * MIB, 0)) != PIO_OK)
            return perr(path, rc);
        rounds++;
    }
    free(buf);
    pfs_close(f);
    printf("ok %" PRIu64 " rounds\n", rounds);
    return 0;
}

static int probe(const char *path, int count, int ms)
{
    pfs_file *f;
    pfs_stripe s = {.count = 1};
    int rc = pfs_create(fs, path, 0644, &s, MIB, &f);
    if (rc != PIO_OK)
        return perr(path, rc);
    uint8_t *buf = calloc(1, MIB);
    for (int i = 0; i < count; i++) {
        double t0 = now_s();
        if ((rc = pfs_pwrite(f, buf, MIB, 0)) != PIO_OK)
            return perr(path, rc);
        double dt = now_s() - t0;
        printf("latency_us %.0f\n", dt * 1e6);
        fflush(stdout);
        if (dt * 1000 < ms)
            usleep((useconds_t)((ms - dt * 1000) * 1000));
    }
    free(buf);
    pfs_close(f);
    return 0;
}

static int probe_setup(const char *dir)
{
    int n = pfs_nservers(fs), seen[256] = {0};
    for (int i = 0; i < n && i < 256; i++) {
        char p[1024];
        snprintf(p, sizeof(p), "%s/s%d", dir, i);
        pfs_file *f;
        pfs_stripe s = {.count = 1};
        int rc = pfs_create(fs, p, 0644, &s, MIB, &f);
        if (rc != PIO_OK)
            return perr(p, rc);
        pfs_stat st;
        pfs_fstat(f, &st);
        pfs_close(f);
        if (seen[st.stripe.servers[0]]++) {
            fprintf(stderr, "pfs-check: %s landed on server %u twice: someone else created files\n",
                    p, st.stripe.servers[0]);
            return 1;
        }
        printf("s%d server %u\n", i, st.stripe.servers[0]);
    }
    return 0;
}

/* One probe thread per server: every ms milliseconds, 1 MiB to its file. */
struct probe_one {
    pfs_file *f;
    uint32_t server;
    uint8_t *buf;
    double start, secs;
    int ms, rc;
};

static pthread_mutex_t out_mtx = PTHREAD_MUTEX_INITIALIZER;

static void *probe_loop(void *arg)
{
    struct probe_one *p = arg;
    double next = p->start;
    while (now_s() - p->start < p->secs) {
        double t0 = now_s();
        p->rc = pfs_pwrite(p->f, p->buf, MIB, 0);
        double lat = now_s() - t0;
        if (p->rc != PIO_OK)
            return NULL;
        pthread_mutex_lock(&out_mtx);
        printf("%.3f %u %.0f\n", t0 - p->start, p->server, lat * 1e6);
        fflush(stdout);
        pthread_mutex_unlock(&out_mtx);
        next += p->ms / 1000.0;
        double now = now_s();
        if (next > now)
            usleep((useconds_t)((next - now) * 1e6));
        else
            next = now; /* a write took longer than the interval: the next goes at once */
    }
    return NULL;
}

static int probe_all(const char *dir, double secs, int ms)
{
    int n = pfs_nservers(fs), bad = 0;
    struct probe_one *p = calloc((size_t)n, sizeof(*p));
    pthread_t *th = calloc((size_t)n, sizeof(*th));
    double start = now_s();
    for (int i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/s%d", dir, i);
        int rc = pfs_open(fs, path, PFS_WRONLY, 0, &p[i].f);
        if (rc != PIO_OK)
            return perr(path, rc);
        pfs_stat st;
        pfs_fstat(p[i].f, &st);
        p[i].server = st.stripe.servers[0];
        p[i].buf = malloc(MIB);
        memset(p[i].buf, i, MIB);
        p[i].start = start;
        p[i].secs = secs;
        p[i].ms = ms;
    }
    for (int i = 0; i < n; i++)
        pthread_create(&th[i], NULL, probe_loop, &p[i]);
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        if (p[i].rc != PIO_OK)
            bad = perr("probe", p[i].rc);
        pfs_close(p[i].f);
        free(p[i].buf);
    }
    free(p);
    free(th);
    return bad;
}

static int overwrite_fid(const char *path)
{
    pfs_stat st;
    pfs_batch *b = NULL;
    static const uint8_t zeros[4096];
    int rc = pfs_stat_path(fs, path, &st);
    if (rc == PIO_OK)
        rc = pfs_batch_new(fs, &b);
    if (rc == PIO_OK) {
        pfs_extent e = {.fid = st.fid, .off = 0, .len = sizeof(zeros), .data = zeros};
        rc = pfs_batch_write(b, (int)st.stripe.servers[0], &e, 1);
        pfs_batch_free(b);
    }
    if (rc != PIO_OK)
        return perr(path, rc);
    printf("overwrote\n");
    return 0;
}

int main(int argc, char **argv)
{
    const char *mds = NULL, *cls = NULL;
    int i = 1;
    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (!strcmp(argv[i], "--mds"))
            mds = argv[i + 1];
        else if (!strcmp(argv[i], "--class"))
            cls = argv[i + 1];
        else
            break;
    }
    if (i >= argc) {
        fprintf(stderr, "usage: pfs-check [--mds APP] [--class C] CMD ARGS (see the source)\n");
        return 2;
    }
    char app[64];
    snprintf(app, sizeof(app), "pfs-check.%d", (int)getpid());
    int rc = PIO_Init(app, 0, 1);
    if (rc != PIO_OK) {
        fprintf(stderr, "pfs-check: PIO_Init: %s\n", PIO_Strerror(rc));
        return 3;
    }
    if ((rc = pfs_mount(mds, cls, &fs)) != PIO_OK) {
        int r = perr("mount", rc);
        PIO_Exit();
        return r;
    }
    const char *cmd = argv[i];
    char **a = argv + i + 1;
    int na = argc - i - 1, r = 2;
    if (!strcmp(cmd, "random-io") && na == 4)
        r = random_io(a[0], a[1], atoi(a[2]), strtoull(a[3], NULL, 0));
    else if (!strcmp(cmd, "ackwrite") && (na == 2 || na == 3))
        r = ackwrite(a[0], strtoull(a[1], NULL, 0), na == 3 ? (uint32_t)atoi(a[2]) : 0);
    else if (!strcmp(cmd, "verify") && na == 2)
        r = verify(a[0], strtoull(a[1], NULL, 0));
    else if (!strcmp(cmd, "mkfiles") && na == 2)
        r = mkfiles(a[0], atoi(a[1]));
    else if (!strcmp(cmd, "load") && na == 3)
        r = load(a[0], strtoull(a[1], NULL, 0), atof(a[2]));
    else if (!strcmp(cmd, "probe-setup") && na == 1)
        r = probe_setup(a[0]);
    else if (!strcmp(cmd, "probe-all") && na == 3)
        r = probe_all(a[0], atof(a[1]), atoi(a[2]));
    else if (!strcmp(cmd, "overwrite-fid") && na == 1)
        r = overwrite_fid(a[0]);
    else if (!strcmp(cmd, "probe") && na == 3)
        r = probe(a[0], atoi(a[1]), atoi(a[2]));
    else
        fprintf(stderr, "pfs-check: bad command or arguments: %s\n", cmd);
    pfs_umount(fs);
    PIO_Exit();
    return r;
}
