/* anco_mpi_read.c - every rank of an MPI job reads one whole file with plain
 * POSIX open and pread, in 1 MiB pieces, and sums it; rank 0 prints the sum.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The reader of tests/bats/anco_preload.bats: it knows nothing about anco.
 * Run under LD_PRELOAD=libanco.so with the file under $ANCO_PATHS, its
 * reads go through the job's cooperative cache; without, to the file system.
 * Both runs must print the same line. The ranks start together (a barrier)
 * and read the pieces in order, from the piece rank * pieces / size when
 * --rotate is given (wrapping around), else from the first. The sum is of
 * the pieces' FNV-1a hashes, each seeded with the piece's index, so it does
 * not depend on the order.
 *
 *   mpirun -np N anco-mpi-read [--rotate] FILE
 *   -> "anco-mpi-read: FILE: BYTES bytes, sum HEX, N ranks agree"
 * Exits 1 when a read fails or the ranks disagree, 2 on bad usage. */
#include <mpi.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PIECE (1u << 20)

static uint64_t amr_hash(const unsigned char *p, size_t n, uint64_t seed)
{
    uint64_t h = 1469598103934665603ull ^ seed; /* FNV-1a */

    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* amr_read - the whole file in pieces from piece first on; *sum, *bytes
 * [out]. 0, or -1 (said on stderr). */
static int amr_read(const char *path, uint64_t first_of, int rank, int size, uint64_t *sum,
                    uint64_t *bytes)
{
    unsigned char *buf = malloc(PIECE);
    struct stat st;
    uint64_t pieces, first;
    int fd = -1, rc = -1;

    *sum = 0;
    *bytes = 0;
    if (!buf)
        goto out;
    fd = open(path, O_RDONLY);
    if (fd < 0 || fstat(fd, &st) < 0) {
        fprintf(stderr, "anco-mpi-read: rank %d: %s: %s\n", rank, path, strerror(errno));
        goto out;
    }
    pieces = ((uint64_t)st.st_size + PIECE - 1) / PIECE;
    first = first_of && pieces ? pieces * (uint64_t)rank / (uint64_t)size : 0;
    for (uint64_t k = 0; k < pieces; k++) {
        uint64_t i = (first + k) % pieces, left = (uint64_t)st.st_size - i * PIECE;
        size_t want = left < PIECE ? (size_t)left : PIECE, got = 0;

        while (got < want) {
            ssize_t r = pread(fd, buf + got, want - got, (off_t)(i * PIECE + got));

            if (r <= 0) {
                fprintf(stderr, "anco-mpi-read: rank %d: %s: piece %" PRIu64 ": %s\n", rank, path,
                        i, r < 0 ? strerror(errno) : "short file");
                goto out;
            }
            got += (size_t)r;
        }
        *sum += amr_hash(buf, want, i);
        *bytes += want;
    }
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    free(buf);
    return rc;
}

int main(int argc, char **argv)
{
    uint64_t sum, bytes, mine[3], *all = NULL;
    int rank, size, rotate = 0, bad = 0, argi = 1;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argi < argc && strcmp(argv[argi], "--rotate") == 0) {
        rotate = 1;
        argi++;
    }
    if (argi != argc - 1) {
        if (rank == 0)
            fprintf(stderr, "usage: anco-mpi-read [--rotate] FILE\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    mine[0] = amr_read(argv[argi], (uint64_t)rotate, rank, size, &sum, &bytes) == 0;
    mine[1] = sum;
    mine[2] = bytes;
    if (rank == 0 && !(all = malloc(sizeof(uint64_t) * 3 * (size_t)size)))
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Gather(mine, 3, MPI_UINT64_T, all, 3, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < size; r++)
            if (!all[3 * r] || all[3 * r + 1] != mine[1] || all[3 * r + 2] != mine[2]) {
                fprintf(stderr,
                        "anco-mpi-read: rank %d read %" PRIu64 " bytes, sum %016" PRIx64
                        "; rank 0 %" PRIu64 " bytes, sum %016" PRIx64 "\n",
                        r, all[3 * r + 2], all[3 * r + 1], mine[2], mine[1]);
                bad = 1;
            }
        if (!bad)
            printf("anco-mpi-read: %s: %" PRIu64 " bytes, sum %016" PRIx64 ", %d ranks agree\n",
                   argv[argi], bytes, sum, size);
        fflush(stdout);
        free(all);
    }
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return bad;
}
