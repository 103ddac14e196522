/* anco-job.c - one process of an anco test job (tests/bats/anco.bats).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 *   anco-job MODE FILE RANK SIZE [ARG]
 *
 * Every process runs anco_init (which joins PIO as $ANCO_APP), opens FILE
 * through the cache and checks every byte it reads against the file read
 * directly; it prints its counters (anco_print_stats) and "anco-job: rank R:
 * N bytes checked" and exits 0, or prints what differed and exits 1.
 * Modes:
 *   random [READS]  READS (default 100) reads of random offsets and lengths
 *                   (up to 2.5 blocks).
 *   same   [BLOCKS] every process reads blocks 0 .. BLOCKS-1 (default 16)
 *                   in order, with an anco_barrier before each: all want
 *                   the same block at once.
 *   seq             every process reads the whole file from its start in
 *                   256 KiB preads, each continuing the last (a sequential
 *                   shared read: anco reads ahead), all starting together
 *                   after an anco_barrier.
 *   strided [XFER]  IOR-like: transfers of XFER KiB (default 256) at a
 *                   stride of SIZE transfers, process R reading transfers
 *                   R, R + SIZE, ... to the end of the file (the whole file
 *                   once in all).
 *   race1 | race2 DIR   two processes. Rank 0 reads block 3 (from the file
 *                   system); then rank 1 reads it from rank 0's cache, and
 *                   in the middle of that read (rank 1 runs with
 *                   ANCO_TEST_RACE_DIR=DIR: its hook creates DIR/go and
 *                   waits for DIR/done) rank 0 gives the entry up and fills
 *                   it again: with block 5 (race1), or with block 3 again,
 *                   a new token (race2).
 * FILE may be pio://HOST/PATH (a file service's file); the bytes are then
 * checked against the local file $ANCO_JOB_LOCAL. */
#include "anco/anco.h"
#include "anco/internal.h"
#include "pio.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int fd = -1;
static unsigned rank;
static unsigned long long checked;

static int fail(const char *what, int rc)
{
    fprintf(stderr, "anco-job: rank %u: %s: %s\n", rank, what, PIO_Strerror(rc));
    return 1;
}

/* check - read [off, off + len) through anco and directly; 0 when equal */
static int check(anco_file *f, uint64_t off, size_t len, uint64_t size)
{
    char *a = malloc(len ? len : 1), *b = malloc(len ? len : 1);
    size_t got = 0;
    int rc = anco_pread(f, a, len, off, &got), bad = 0;
    if (rc != PIO_OK) {
        bad = fail("anco_pread", rc);
    } else {
        size_t want = off >= size ? 0 : (size - off < len ? (size_t)(size - off) : len);
        ssize_t n = pread(fd, b, len, (off_t)off);
        if (got != want || n != (ssize_t)want || memcmp(a, b, want) != 0) {
            fprintf(stderr, "anco-job: rank %u: %zu bytes at %llu differ from the file (got %zu)\n",
                    rank, len, (unsigned long long)off, got);
            bad = 1;
        }
        checked += got;
    }
    free(a);
    free(b);
    return bad;
}

static void wait_file(const char *dir, const char *name)
{
    char p[4096];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    for (int i = 0; i < 30000 && stat(p, &st) != 0; i++)
        usleep(1000);
}

static void touch(const char *dir, const char *name)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (f)
        fclose(f);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr,
                "usage: anco-job random|same|seq|strided|race1|race2 FILE RANK SIZE [ARG]\n");
        return 2;
    }
    const char *mode = argv[1], *path = argv[2];
    rank = (unsigned)atoi(argv[3]);
    int size = atoi(argv[4]);
    const char *local = getenv("ANCO_JOB_LOCAL") ? getenv("ANCO_JOB_LOCAL") : path;
    if ((fd = open(local, O_RDONLY)) < 0) {
        perror(local);
        return 1;
    }
    anco *a;
    anco_file *f;
    uint64_t fsize;
    int rc = anco_init(NULL, (int)rank, size, &a), bad = 0;
    if (rc != PIO_OK)
        return fail("anco_init", rc);
    if ((rc = anco_open(a, path, &f, &fsize)) != PIO_OK) {
        fail("anco_open", rc);
        anco_finalize(a); /* every rank fails the same open: they leave together */
        return 1;
    }
    const uint64_t blk = 1 << 20; /* the tests run with the default block */
    if (!strcmp(mode, "random")) {
        int reads = argc > 5 ? atoi(argv[5]) : 100;
        unsigned seed = 12345u + rank * 7919u;
        anco_barrier(a);
        for (int i = 0; i < reads && !bad; i++) {
            uint64_t off = ((uint64_t)rand_r(&seed) << 16 ^ (uint64_t)rand_r(&seed)) % fsize;
            size_t len = (size_t)rand_r(&seed) % (5 * blk / 2) + 1;
            bad = check(f, off, len, fsize);
        }
    } else if (!strcmp(mode, "same")) {
        int blocks = argc > 5 ? atoi(argv[5]) : 16;
        for (int b = 0; b < blocks && !bad; b++) {
            if ((rc = anco_barrier(a)) != PIO_OK)
                return fail("anco_barrier", rc);
            bad = check(f, (uint64_t)b * blk, blk, fsize);
        }
    } else if (!strcmp(mode, "seq")) {
        anco_barrier(a);
        for (uint64_t off = 0; off < fsize && !bad; off += 256 << 10)
            bad = check(f, off, 256 << 10, fsize);
    } else if (!strcmp(mode, "strided")) {
        uint64_t xfer = (uint64_t)(argc > 5 ? atoi(argv[5]) : 256) << 10;
        anco_barrier(a);
        for (uint64_t off = rank * xfer; off < fsize && !bad; off += (uint64_t)size * xfer)
            bad = check(f, off, (size_t)xfer, fsize);
    } else if ((!strcmp(mode, "race1") || !strcmp(mode, "race2")) && argc > 5 && size == 2) {
        const char *dir = argv[5];
        if (rank == 0)
            bad = check(f, 3 * blk, blk, fsize);
        anco_barrier(a);
        if (rank == 1) {
            bad |= check(f, 3 * blk, blk, fsize); /* the hook fires in here */
        } else {
            wait_file(dir, "go");
            rc = anco_test_replace(f, 3, !strcmp(mode, "race1") ? 5 : 3);
            touch(dir, "done");
            if (rc != PIO_OK)
                bad = fail("anco_test_replace", rc);
        }
        anco_barrier(a);
        bad |= check(f, 3 * blk, blk, fsize); /* the cache is consistent afterwards */
        if (rank == 0)
            bad |= check(f, 5 * blk, blk, fsize);
    } else {
        fprintf(stderr, "anco-job: unknown mode %s (or race without DIR, size 2)\n", mode);
        return 2;
    }
    anco_print_stats(a, stdout);
    printf("anco-job: rank %u: %llu bytes checked%s\n", rank, checked, bad ? ", MISMATCH" : "");
    fflush(stdout);
    anco_close(f);
    if ((rc = anco_finalize(a)) != PIO_OK)
        return fail("anco_finalize", rc);
    close(fd);
    return bad;
}
