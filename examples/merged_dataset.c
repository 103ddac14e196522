/* merged_dataset.c - many MPI processes write slabs of one 3-D array; one HDF5
 * dataset appears on another host (remote merged output, HDF5 mode,
 * PIO_File_open_dataset(3)).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 *   mpirun -np 8 merged_dataset HOST PATH [--dims D0xD1xD2] [--type double|int32]
 *          [--name /DATASET] [--whole] [--one]
 *
 * The array A[D0][D1][D2] (default 6 x 40 x 30) holds A[i][j][k] =
 * i * 1e6 + j * 1e3 + k. The processes form a grid over dimensions 1 and 2;
 * each writes its block of every plane i as one slab, planes in a random
 * order: non-contiguous hyperslabs, interleaved between processes. --whole:
 * each process writes its block of all planes as one slab. --one: process 0
 * writes the whole array in one call (the others nothing): a slab bigger
 * than one message, which libpio cuts up. Rank 0 prints "OK", the dataset,
 * and the time from a barrier before the open to the last close (the values
 * are computed before); read it with h5dump or h5py on HOST.
 */
#include <mpi.h>
#include <pio.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != PIO_OK) {                                                                       \
            const char *why_ = PIO_File_error_text();                                              \
            fprintf(stderr, "rank %d: %s: %s%s%s%s\n", rank, #call, PIO_Strerror(rc_),             \
                    *why_ ? " (" : "", why_, *why_ ? ")" : "");                                    \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
        }                                                                                          \
    } while (0)

static double value(uint64_t i, uint64_t j, uint64_t k)
{
    return (double)i * 1e6 + (double)j * 1e3 + (double)k;
}

/* fill a slab (start, count) of A into buf, as the type */
static void fill(void *buf, int type, const uint64_t *s, const uint64_t *c)
{
    size_t n = 0;
    for (uint64_t i = s[0]; i < s[0] + c[0]; i++)
        for (uint64_t j = s[1]; j < s[1] + c[1]; j++)
            for (uint64_t k = s[2]; k < s[2] + c[2]; k++, n++) {
                if (type == PIO_DOUBLE)
                    ((double *)buf)[n] = value(i, j, k);
                else
                    ((int32_t *)buf)[n] = (int32_t)value(i, j, k);
            }
}

int main(int argc, char **argv)
{
    int rank, nprocs;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 3) {
        if (rank == 0)
            fprintf(stderr, "usage: merged_dataset HOST PATH [--dims D0xD1xD2] "
                            "[--type double|int32] [--name /DATASET] [--whole] [--one]\n");
        MPI_Finalize();
        return 2;
    }
    PIO_Dataset ds = {.name = "/A", .type = PIO_DOUBLE, .ndims = 3, .dims = {6, 40, 30}};
    int whole = 0, one = 0;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--whole") == 0)
            whole = 1;
        else if (strcmp(argv[i], "--one") == 0)
            one = 1;
        else if (i + 1 < argc && strcmp(argv[i], "--name") == 0)
            ds.name = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--type") == 0)
            ds.type = strcmp(argv[++i], "int32") == 0 ? PIO_INT32 : PIO_DOUBLE;
        else if (i + 1 < argc && strcmp(argv[i], "--dims") == 0) {
            unsigned long long a, b, c;
            if (sscanf(argv[++i], "%llux%llux%llu", &a, &b, &c) != 3) {
                if (rank == 0)
                    fprintf(stderr, "--dims %s: give D0xD1xD2\n", argv[i]);
                MPI_Finalize();
                return 2;
            }
            ds.dims[0] = a, ds.dims[1] = b, ds.dims[2] = c;
        }
    }
    const char *app = getenv("PIO_APP") ? getenv("PIO_APP") : "mergeds";
    CHECK(PIO_Init(app, rank, nprocs));

    /* my block: a px x py grid over dimensions 1 and 2 */
    int px = 1;
    for (int d = 1; d * d <= nprocs; d++)
        if (nprocs % d == 0)
            px = d;
    int py = nprocs / px, gx = rank / py, gy = rank % py;
    uint64_t s[3] = {0, ds.dims[1] * (uint64_t)gx / (uint64_t)px,
                     ds.dims[2] * (uint64_t)gy / (uint64_t)py};
    uint64_t c[3] = {ds.dims[0], ds.dims[1] * (uint64_t)(gx + 1) / (uint64_t)px - s[1],
                     ds.dims[2] * (uint64_t)(gy + 1) / (uint64_t)py - s[2]};
    if (one) {
        s[1] = s[2] = 0;
        c[1] = ds.dims[1], c[2] = ds.dims[2];
        c[0] = rank == 0 ? ds.dims[0] : 0;
    }
    /* the block's values, computed before the clock starts: plane i of the
     * block is contiguous at i * c[1] * c[2] elements */
    size_t es = ds.type == PIO_DOUBLE ? 8 : 4, plane = (size_t)(c[1] * c[2]) * es;
    uint8_t *buf = malloc(c[0] * plane + 1);
    if (!buf) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    fill(buf, ds.type, s, c);
    uint64_t n = c[0], *order = malloc((n + 1) * sizeof(*order)), x = 88172645463325252ull + rank;
    for (uint64_t i = 0; i < n; i++) /* planes in an order of our own */
        order[i] = i;
    for (uint64_t i = n; i > 1; i--) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t j = x % i, t = order[i - 1];
        order[i - 1] = order[j], order[j] = t;
    }

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    PIO_File fh;
    CHECK(PIO_File_open_dataset(argv[1], argv[2], &ds, &fh));
    if (whole || one || n == 0) {
        CHECK(PIO_File_write_slab(fh, s, c, buf));
    } else {
        for (uint64_t i = 0; i < n; i++) {
            uint64_t ps[3] = {order[i], s[1], s[2]}, pc[3] = {1, c[1], c[2]};
            CHECK(PIO_File_write_slab(fh, ps, pc, buf + order[i] * plane));
        }
    }
    CHECK(PIO_File_close(fh));
    double t = MPI_Wtime() - t0, tmax;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    free(order);
    free(buf);
    uint64_t total = ds.dims[0] * ds.dims[1] * ds.dims[2] * es;
    if (rank == 0)
        printf("OK merged_dataset: %d processes, dataset %s %llux%llux%llu %s, %llu bytes in "
               "%.3f s (%.2f MB/s) -> %s:%s\n",
               nprocs, ds.name, (unsigned long long)ds.dims[0], (unsigned long long)ds.dims[1],
               (unsigned long long)ds.dims[2], ds.type == PIO_DOUBLE ? "double" : "int32",
               (unsigned long long)total, tmax, (double)total / tmax / 1e6, argv[1], argv[2]);
    PIO_Exit();
    MPI_Finalize();
    return 0;
}
