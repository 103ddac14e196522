/* anco_read_mpi.c - the MPI-IO baseline of the anco benchmark's strided
 * read (bench/anco.sh): IOR-like collective reads of a file made by
 * `anco-read gen`, every byte checked.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 *  usage: mpirun -np N anco-read-mpi --xfer BYTES [--independent] PATH
 *
 * Rank i of N reads transfers i, i + N, i + 2N, ... of --xfer bytes to the
 * end of the file, as `anco-read --pattern strided` does: round k is one
 * MPI_File_read_at_all per rank (rank i at (kN + i) x xfer; 0 bytes for a
 * rank whose transfer is past the end in the last round), so each round
 * reads N x xfer contiguous bytes and ROMIO's two-phase collective
 * buffering (hint romio_cb_read=enable) has its aggregator read them in
 * large pieces and hand each rank its part. --independent: MPI_File_read_at
 * instead (no collective buffering). Run with `--mca io romio321` (ROMIO;
 * see bench/gas_btio_mpi.c for why).
 *
 * The file is opened, then an MPI_Barrier; each rank times its reads from
 * that barrier; rank 0 prints the first start and the last end over the
 * ranks (MPI_Wtime is this machine's one clock: MPI_WTIME_IS_GLOBAL is not
 * needed for processes of one host):
 *   OK anco-read-mpi procs=N xfer=X bytes=B reads=K seconds=S
 * Every word read is compared with the pattern (anco_pat, the same as
 * bench/anco_read.c's); a difference, a short read or an MPI-IO error:
 * a FAIL line and MPI_Abort (exit non-zero).
 */
#include <getopt.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank;

/* anco_pat - word number w of the file (bench/anco_read.c's pattern). */
static uint64_t anco_pat(uint64_t w)
{
    uint64_t z = (w + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void check_mpi(int err, const char *call)
{
    if (err == MPI_SUCCESS)
        return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(err, msg, &len);
    fprintf(stderr, "FAIL anco-read-mpi rank %d: %s: %.*s\n", rank, call, len, msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static long long parse_size(const char *s)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    int shift = *end == 'K' || *end == 'k'   ? 10
                : *end == 'M' || *end == 'm' ? 20
                : *end == 'G' || *end == 'g' ? 30
                                             : 0;
    if (shift)
        end++;
    return end == s || *end || v <= 0 ? -1 : v << shift;
}

int main(int argc, char **argv)
{
    int nprocs, independent = 0;
    long long xfer = -1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    static const struct option opts[] = {
        {"xfer", 1, 0, 'x'}, {"independent", 0, 0, 'i'}, {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (o == 'x')
            xfer = parse_size(optarg);
        else if (o == 'i')
            independent = 1;
        else
            xfer = -1, optind = argc;
    }
    if (optind != argc - 1 || xfer <= 0 || xfer % 8 || xfer > (1 << 30)) {
        if (rank == 0)
            fprintf(stderr,
                    "usage: mpirun -np N anco-read-mpi --xfer BYTES [--independent] PATH\n");
        MPI_Finalize();
        return 2;
    }
    const char *path = argv[optind];

    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "romio_cb_read", independent ? "disable" : "enable");
    MPI_File fh;
    check_mpi(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, info, &fh), "MPI_File_open");
    MPI_Info_free(&info);
    MPI_Offset fsize;
    check_mpi(MPI_File_get_size(fh, &fsize), "MPI_File_get_size");
    /* rounds: every transfer that fits in the file; in the last round a
     * rank whose transfer does not fit reads 0 bytes (the call is collective) */
    uint64_t x = (uint64_t)xfer, ntr = (uint64_t)fsize / x, round = x * (uint64_t)nprocs;
    uint64_t rounds = (ntr + (uint64_t)nprocs - 1) / (uint64_t)nprocs, bytes = 0, reads = 0;
    uint8_t *buf = malloc(x);
    if (!buf) {
        fprintf(stderr, "FAIL anco-read-mpi rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (uint64_t k = 0; k < rounds; k++) {
        uint64_t off = k * round + (uint64_t)rank * x, len = off + x <= ntr * x ? x : 0;
        MPI_Status st;
        int count = 0;
        if (independent && len)
            check_mpi(MPI_File_read_at(fh, (MPI_Offset)off, buf, (int)len, MPI_BYTE, &st),
                      "MPI_File_read_at");
        else if (!independent)
            check_mpi(MPI_File_read_at_all(fh, (MPI_Offset)off, buf, (int)len, MPI_BYTE, &st),
                      "MPI_File_read_at_all");
        if (len)
            MPI_Get_count(&st, MPI_BYTE, &count);
        if ((uint64_t)count != len) {
            fprintf(stderr,
                    "FAIL anco-read-mpi rank %d: short read at %" PRIu64 ": %d of %" PRIu64 "\n",
                    rank, off, count, len);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        bytes += len;
        reads += len > 0;
        for (uint64_t w = 0; w < len / 8; w++) {
            uint64_t got, want = anco_pat(off / 8 + w);
            memcpy(&got, buf + 8 * w, 8);
            if (got != want) {
                fprintf(stderr,
                        "FAIL anco-read-mpi rank %d: wrong data at byte %" PRIu64 ": %016" PRIx64
                        ", the file has %016" PRIx64 "\n",
                        rank, off + 8 * w, got, want);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
    }
    double t1 = MPI_Wtime(), first, last;
    uint64_t tot[2] = {bytes, reads}, sum[2];
    MPI_Reduce(&t0, &first, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&t1, &last, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(tot, sum, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    check_mpi(MPI_File_close(&fh), "MPI_File_close");
    if (rank == 0)
        printf("OK anco-read-mpi procs=%d xfer=%" PRIu64 " bytes=%" PRIu64 " reads=%" PRIu64
               " seconds=%.6f\n",
               nprocs, x, sum[0], sum[1], last - first);
    free(buf);
    MPI_Finalize();
    return 0;
}
