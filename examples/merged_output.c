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
 *   mpirun -np 4 merged_output --posix FILE [--blocks N]
 *       the same layout written to FILE with pwrite(2), then fsync(2), and no
 *       PIO at all (the baseline of bench/merge.sh: FILE on an sshfs or NFS
 *       mount). Process 0 creates (truncates) FILE, the others open it after.
 *
 * --blocks N sets the blocks per process in either layout (default 10: with
 * 1 MB blocks, N MB per process). Process 0 prints one line, the time from a
 * barrier before the open to the last process' return from its close, and
 * the rate: "OK merged_output: P processes, B blocks, N bytes in T s (R MB/s)
 * -> WHERE" (bench/merge.sh reads it).
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
            const char *why_ = PIO_File_error_text();                                              \
            fprintf(stderr, "rank %d: %s: %s%s%s%s\n", rank, #call, PIO_Strerror(rc_),             \
                    *why_ ? " (" : "", why_, *why_ ? ")" : "");                                    \
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
    const char *pos[2] = {NULL, NULL}, *local = NULL, *posix = NULL;
    uint64_t seed = 0;
    int blocks = 10, npos = 0, bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strncmp(argv[i], "--", 2) != 0) {
            if (npos < 2)
                pos[npos++] = argv[i];
            else
                bad = 1;
        } else if (!v)
            bad = 1;
        else if (strcmp(argv[i], "--random") == 0)
            seed = strtoull(v, NULL, 10), i++;
        else if (strcmp(argv[i], "--blocks") == 0)
            bad = (blocks = atoi(v)) < 1, i++;
        else if (strcmp(argv[i], "--local") == 0)
            local = v, i++;
        else if (strcmp(argv[i], "--posix") == 0)
            posix = v, i++;
        else
            bad = 1;
    }
    if (bad || (posix ? npos != 0 : npos != 2)) {
        if (rank == 0)
            fprintf(stderr,
                    "usage: merged_output HOST PATH [--random SEED] [--blocks N] [--local "
                    "FILE]\n       merged_output --posix FILE [--random SEED] [--blocks N]\n");
        MPI_Finalize();
        return 2;
    }
    const char *host = pos[0], *path = pos[1];
    const char *app = getenv("PIO_APP") ? getenv("PIO_APP") : "merge";
    if (!posix)
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
    PIO_File fh = NULL;
    int pfd = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (!posix) {
        CHECK(PIO_File_open(host, path, PIO_FILE_RAW, &fh));
    } else {
        /* process 0 creates the file, the others open what it created */
        if (rank == 0)
            pfd = open(posix, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank != 0)
            pfd = open(posix, O_WRONLY);
        if (pfd < 0) {
            perror(posix);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    for (int i = 0; i < n; i++) {
        int b = mine[i];
        for (uint64_t k = 0; k < sz[b]; k++)
            buf[k] = (uint8_t)((off[b] + k) * 2654435761u >> 13);
        if (!posix)
            CHECK(PIO_File_write_at(fh, off[b], buf, sz[b]));
        if ((lfd >= 0 && pwrite(lfd, buf, sz[b], (off_t)off[b]) != (ssize_t)sz[b]) ||
            (pfd >= 0 && pwrite(pfd, buf, sz[b], (off_t)off[b]) != (ssize_t)sz[b])) {
            perror("pwrite");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    if (!posix) {
        CHECK(PIO_File_close(fh));
    } else if (fsync(pfd) != 0 || close(pfd) != 0) {
        perror(posix);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double t = MPI_Wtime() - t0, tmax;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (lfd >= 0)
        close(lfd);
    if (rank == 0)
        printf("OK merged_output: %d processes, %d blocks, %llu bytes in %.3f s (%.2f MB/s) -> "
               "%s%s%s\n",
               nprocs, nb, (unsigned long long)total, tmax, (double)total / tmax / 1e6,
               posix ? "posix " : host, posix ? "" : ":", posix ? posix : path);
    free(buf);
    free(off);
    free(sz);
    free(who);
    free(mine);
    if (!posix)
        PIO_Exit();
    MPI_Finalize();
    return 0;
}
