/* pio-filecheck.c - the edges of remote merged output (PIO_File_*), one
 * process of an application per run (no MPI: rank and count are arguments).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Usage: pio-filecheck SCENARIO HOST PATH [RANK NPROCS]
 *   api    (one process) what libpio refuses before anything is sent, then
 *          a 4x6 int32 dataset of which only row 1 is written: the rest
 *          must read back as 0.
 *   shape  (run as 2 processes of app "fcheck") rank r opens a dataset of
 *          shape (4 + r): the two disagree. Prints "open: STATUS" and, when
 *          open succeeded, "close: STATUS", with the remote text.
 *   mixed  (2 processes) rank 0 opens raw, rank 1 HDF5: as shape.
 *   absent (2 processes) rank 1 joins, never opens, and leaves; rank 0's
 *          close must fail (not wait for ever). Prints "close: STATUS TEXT".
 *   idle   (2 processes) rank 1 joins and never opens, but stays (60 s):
 *          rank 0 writes "abc" at 0; its close must fail after PIO_FILE_WAIT.
 *   hold   (2 processes) rank 1 opens, writes "def" at 3, says "rank 1
 *          holds" and waits to be killed; rank 0 writes "abc" at 0 and its
 *          close must fail (the test kills rank 1 with -9).
 * Exit 0 when every expectation of the scenario held ("OK"), 1 otherwise.
 */
#include "pio.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failed;

#define EXPECT(call, want)                                                                         \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != (want)) {                                                                       \
            printf("FAIL line %d: %s = %s, expected %s\n", __LINE__, #call, PIO_Errname(rc_),      \
                   PIO_Errname(want));                                                             \
            failed = 1;                                                                            \
        }                                                                                          \
    } while (0)

static int api(const char *host, const char *path)
{
    PIO_File fh;
    PIO_Dataset ds = {.name = "/d", .type = PIO_COMPLEX, .ndims = 2, .dims = {4, 6}};
    EXPECT(PIO_File_open_dataset(host, path, &ds, &fh), PIO_ENOSYS);
    ds.type = PIO_INT32;
    ds.ndims = 0;
    EXPECT(PIO_File_open_dataset(host, path, &ds, &fh), PIO_EINVAL);
    ds.ndims = PIO_FILE_MAXDIMS + 1;
    EXPECT(PIO_File_open_dataset(host, path, &ds, &fh), PIO_EINVAL);
    ds.ndims = 2;
    ds.dims[1] = 0;
    EXPECT(PIO_File_open_dataset(host, path, &ds, &fh), PIO_EINVAL);
    ds.dims[1] = 6;
    ds.name = "";
    EXPECT(PIO_File_open_dataset(host, path, &ds, &fh), PIO_EINVAL);
    ds.name = "/d";
    EXPECT(PIO_File_open(host, path, PIO_FILE_HDF5, &fh), PIO_EINVAL);
    EXPECT(PIO_File_open(host, path, 7, &fh), PIO_ENOSYS);
    if (failed)
        return 1;
    EXPECT(PIO_File_open_dataset(host, path, &ds, &fh), PIO_OK);
    if (failed)
        return 1;
    int32_t row[6] = {1, 2, 3, 4, 5, 6};
    uint64_t s[2] = {1, 0}, c[2] = {1, 6};
    EXPECT(PIO_File_write_at(fh, 0, row, sizeof(row)), PIO_EINVAL);
    uint64_t bs[2] = {3, 1}, bc[2] = {2, 1}; /* rows 3..4 of 4 */
    EXPECT(PIO_File_write_slab(fh, bs, bc, row), PIO_EINVAL);
    uint64_t zs[2] = {0, 0}, zc[2] = {0, 6};
    EXPECT(PIO_File_write_slab(fh, zs, zc, NULL), PIO_OK);
    EXPECT(PIO_File_write_slab(fh, s, c, row), PIO_OK);
    EXPECT(PIO_File_close(fh), PIO_OK);
    return failed;
}

static int disagree(const char *host, const char *path, int rank, int nprocs, int mixed)
{
    PIO_File fh;
    PIO_Dataset ds = {.name = "/d", .type = PIO_DOUBLE, .ndims = 1, .dims = {4 + (uint64_t)rank}};
    int rc = mixed && rank == 0 ? PIO_File_open(host, path, PIO_FILE_RAW, &fh)
                                : PIO_File_open_dataset(host, path, &ds, &fh);
    printf("rank %d/%d open: %s %s\n", rank, nprocs, PIO_Errname(rc), PIO_File_error_text());
    if (rc != PIO_OK)
        return rc == PIO_EPERM ? 0 : 1;
    double v[4] = {1, 2, 3, 4};
    uint64_t s = 0, c = 4;
    rc = mixed && rank == 0 ? PIO_File_write_at(fh, 0, v, sizeof(v))
                            : PIO_File_write_slab(fh, &s, &c, v);
    if (rc != PIO_OK)
        printf("FAIL write: %s\n", PIO_Errname(rc));
    rc = PIO_File_close(fh);
    printf("rank %d/%d close: %s %s\n", rank, nprocs, PIO_Errname(rc), PIO_File_error_text());
    return rc == PIO_EPERM ? 0 : 1;
}

static int absent(const char *host, const char *path, int rank)
{
    if (rank != 0) {
        sleep(1);
        return 0; /* joined, never opens */
    }
    PIO_File fh;
    EXPECT(PIO_File_open(host, path, PIO_FILE_RAW, &fh), PIO_OK);
    if (failed)
        return 1;
    EXPECT(PIO_File_write_at(fh, 0, "abc", 3), PIO_OK);
    int rc = PIO_File_close(fh);
    printf("rank 0 close: %s %s\n", PIO_Errname(rc), PIO_File_error_text());
    return rc == PIO_OK || failed;
}

/* idle, hold: rank 0 writes "abc" at 0 and expects its close to fail */
static int writer0(const char *host, const char *path)
{
    PIO_File fh;
    int rc = PIO_File_open(host, path, PIO_FILE_RAW, &fh);
    if (rc != PIO_OK) {
        printf("rank 0 open: %s %s\n", PIO_Errname(rc), PIO_File_error_text());
        return 1;
    }
    EXPECT(PIO_File_write_at(fh, 0, "abc", 3), PIO_OK);
    rc = PIO_File_close(fh);
    printf("rank 0 close: %s %s\n", PIO_Errname(rc), PIO_File_error_text());
    return rc == PIO_OK || failed;
}

static int idle_or_hold(const char *host, const char *path, int rank, int hold)
{
    if (rank == 0)
        return writer0(host, path);
    if (hold) {
        PIO_File fh;
        EXPECT(PIO_File_open(host, path, PIO_FILE_RAW, &fh), PIO_OK);
        if (failed)
            return 1;
        EXPECT(PIO_File_write_at(fh, 3, "def", 3), PIO_OK);
        printf("rank 1 holds\n");
        fflush(stdout);
    }
    sleep(60); /* joined, never opens (idle), or holds the file open (hold) */
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr,
                "usage: pio-filecheck api|shape|mixed|absent|idle|hold HOST PATH [RANK NPROCS]\n");
        return 2;
    }
    int rank = argc > 5 ? atoi(argv[4]) : 0, nprocs = argc > 5 ? atoi(argv[5]) : 1;
    int rc = PIO_Init("fcheck", rank, nprocs);
    if (rc != PIO_OK) {
        printf("FAIL PIO_Init: %s\n", PIO_Strerror(rc));
        return 1;
    }
    if (strcmp(argv[1], "api") == 0)
        rc = api(argv[2], argv[3]);
    else if (strcmp(argv[1], "absent") == 0)
        rc = absent(argv[2], argv[3], rank);
    else if (strcmp(argv[1], "idle") == 0 || strcmp(argv[1], "hold") == 0)
        rc = idle_or_hold(argv[2], argv[3], rank, strcmp(argv[1], "hold") == 0);
    else
        rc = disagree(argv[2], argv[3], rank, nprocs, strcmp(argv[1], "mixed") == 0);
    PIO_Exit();
    if (rc == 0)
        printf("OK %s\n", argv[1]);
    return rc ? 1 : 0;
}
