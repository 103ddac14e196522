/* merged_output.c - many MPI processes write blocks, one file appears on
 * another host (remote merged output, PIO_File_open(3)).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 *   mpirun -np 4 merged_output HOST PATH            the original PIO experiment:
 *       each process writes a 1 MB block 10 times, interleaved (block i of
 *       process r at (i * nprocs + r) MB): one 40 MB file on HOST
 *   mpirun -np 8 merged_output HOST PATH --random SEED --blocks N --local FILE
 *       N blocks per process of random sizes (1 B .. 64 KiB) at random,
 *       non-overlapping offsets, written in random order; each process also
 *       writes its blocks to the local FILE, so the two can be compared.
 *
 * The application's name is "merge" (PIO_APP overrides it); its process
 * number and count come from MPI. HOST's piod must export a folder
 * (`export = DIR`); PATH is relative to it.
 */
#include <mpi.h>
#include <pio.h>

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != PIO_OK) {                                                                       \
            fprintf(stderr, "rank %d: %s: %s\n", rank, #call, PIO_Strerror(rc_));                  \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
        }                                                                                          \
    } while (0)

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

int main(int argc, char **argv)
{
    int rank, nprocs;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 3) {
        if (rank == 0)
            fprintf(stderr, "usage: merged_output HOST PATH [--random SEED --blocks N --local "
                            "FILE]\n");
        MPI_Finalize();
        return 2;
    }
    const char *host = argv[1], *path = argv[2], *local = NULL;
    uint64_t seed = 0;
    int blocks = 10;
    for (int i = 3; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--random") == 0)
            seed = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--blocks") == 0)
            blocks = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--local") == 0)
            local = argv[i + 1];
    }
    const char *app = getenv("PIO_APP") ? getenv("PIO_APP") : "merge";
    CHECK(PIO_Init(app, rank, nprocs));
    /* the layout: nb blocks, block b of size sz[b] at off[b], written by who[b] */
    int nb = blocks * nprocs;
    uint64_t *off = calloc((size_t)nb, sizeof(*off)), *sz = calloc((size_t)nb, sizeof(*sz));
    int *who = calloc((size_t)nb, sizeof(*who));
    uint64_t s = seed ? seed : 1, total = 0;
    for (int b = 0; b < nb; b++) {
        sz[b] = seed ? 1 + rnd(&s) % 65536 : 1000000;
        who[b] = seed ? (int)(rnd(&s) % (uint64_t)nprocs) : b % nprocs;
        off[b] = total;
        total += sz[b];
    }
    /* my blocks, in random order (the original: in order) */
    int *mine = calloc((size_t)nb, sizeof(*mine)), n = 0;
    for (int b = 0; b < nb; b++)
        if (who[b] == rank)
            mine[n++] = b;
    uint64_t ms = s + (uint64_t)rank * 7919;
    for (int i = n - 1; seed && i > 0; i--) {
        int j = (int)(rnd(&ms) % (uint64_t)(i + 1)), t = mine[i];
        mine[i] = mine[j], mine[j] = t;
    }
    int lfd = -1;
    if (local && (lfd = open(local, O_WRONLY | O_CREAT, 0644)) < 0) {
        perror(local);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    uint8_t *buf = malloc(seed ? 65536 : 1000000);
    PIO_File fh;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    CHECK(PIO_File_open(host, path, PIO_FILE_RAW, &fh));
    for (int i = 0; i < n; i++) {
        int b = mine[i];
        for (uint64_t k = 0; k < sz[b]; k++)
            buf[k] = (uint8_t)((off[b] + k) * 2654435761u >> 13);
        CHECK(PIO_File_write_at(fh, off[b], buf, sz[b]));
        if (lfd >= 0 && pwrite(lfd, buf, sz[b], (off_t)off[b]) != (ssize_t)sz[b]) {
            perror("pwrite");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    CHECK(PIO_File_close(fh));
    double t = MPI_Wtime() - t0, tmax;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (lfd >= 0)
        close(lfd);
    if (rank == 0)
        printf("OK merged_output: %d processes, %d blocks, %llu bytes in %.3f s (%.2f MB/s) -> "
               "%s:%s\n",
               nprocs, nb, (unsigned long long)total, tmax, (double)total / tmax / 1e6, host, path);
    free(buf);
    free(off);
    free(sz);
    free(who);
    free(mine);
    PIO_Exit();
    MPI_Finalize();
    return 0;
}
