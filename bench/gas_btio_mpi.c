/* gas_btio_mpi.c - the BTIO-like pattern of gas-btio written through MPI-IO.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 *  usage: mpirun -np P gas-btio-mpi --grid N --steps S --out PATH
 *            [--collective|--independent] [--show-hints]
 *
 * Same file, byte for byte, as `gas-btio --procs P --grid N --steps S`
 * (see bench/gas_btio.c for the layout, decomposition and values): rank p
 * plays process p. Per step:
 *   --collective (default): one hindexed filetype of the rank's runs (a run =
 *     N/q records contiguous along x in one cell; runs ascend in the file),
 *     MPI_File_set_view at the step's offset, one MPI_File_write_all, with
 *     the hints romio_cb_write=enable and cb_buffer_size=4194304 (ROMIO's
 *     two-phase collective buffering);
 *   --independent: one MPI_File_write_at per 40-byte record.
 * The file is opened (rank 0 first deletes an old one) before an
 * MPI_Barrier; seconds = from that barrier to the return of MPI_File_close,
 * the largest over the ranks. Rank 0 prints
 *   btio procs=P grid=N steps=S records=R bytes=B seconds=T
 * (--show-hints: rank 0 first prints the hints the file ended up with.)
 * Any MPI-IO error: the rank prints it and calls MPI_Abort.
 *
 * Running here (Open MPI 4.1.4, as root, 2 cores; io romio321 is ROMIO 3.2.1,
 * the default io component is ompio; romio_cb_write is a ROMIO hint):
 *   mpirun --allow-run-as-root --oversubscribe --mca io romio321 \
 *       -np 16 build/default/bench/gas-btio-mpi --grid 16 --steps 2 \
 *       --out /tmp/btio.mpi --collective
 * `--mca io_base_verbose 100` shows "Selected io component romio321". Under
 * strace, --collective makes one pwrite of the whole step (163840 bytes at
 * N=16) from the single aggregator (one node: cb_nodes 1), --independent one
 * 40-byte pwrite per record from every rank. Open MPI 4.1's MPI_File_get_info
 * returns the hints as given, so --show-hints does not prove which layer ran.
 */
#include <getopt.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BM_REC_DOUBLES 5
#define BM_REC_BYTES   (BM_REC_DOUBLES * (int)sizeof(double)) /* 40 */

static int bm_rank;

static void bm_check(int err, const char *call)
{
    if (err == MPI_SUCCESS)
        return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(err, msg, &len);
    fprintf(stderr, "gas-btio-mpi: rank %d: %s: %.*s\n", bm_rank, call, len, msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* bm_record - the 5 doubles of record r of step s (as gas-btio's). */
static void bm_record(int64_t s, int64_t r, double *u)
{
    for (int m = 0; m < BM_REC_DOUBLES; m++)
        u[m] = (double)s * 1e6 + (double)r + m * 0.1;
}

/* bm_show_hints - print the hints the MPI-IO layer reports for fh (which
 * layer: ROMIO reports romio_* and cb_* keys, OMPIO hardly any). */
static void bm_show_hints(MPI_File fh)
{
    MPI_Info used;
    int nkeys = 0;

    bm_check(MPI_File_get_info(fh, &used), "MPI_File_get_info");
    MPI_Info_get_nkeys(used, &nkeys);
    printf("hints:");
    for (int i = 0; i < nkeys; i++) {
        char key[MPI_MAX_INFO_KEY + 1], val[256];
        int flag = 0;
        MPI_Info_get_nthkey(used, i, key);
        MPI_Info_get(used, key, (int)sizeof(val) - 1, val, &flag);
        printf(" %s=%s", key, flag ? val : "?");
    }
    printf("\n");
    fflush(stdout);
    MPI_Info_free(&used);
}

static int bm_parse_int(const char *s, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < 1 || v > 1000000)
        return -1;
    *out = (int)v;
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"grid", required_argument, NULL, 'n'},
        {"steps", required_argument, NULL, 's'},
        {"out", required_argument, NULL, 'o'},
        {"collective", no_argument, NULL, 'c'},
        {"independent", no_argument, NULL, 'i'},
        {"show-hints", no_argument, NULL, 'H'},
        {NULL, 0, NULL, 0},
    };
    int nprocs, grid = 0, steps = 0, collective = 1, show_hints = 0, c, q;
    const char *out = NULL;
    const char *bad = NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &bm_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (bm_parse_int(optarg, &grid) != 0)
                bad = "bad --grid";
            break;
        case 's':
            if (bm_parse_int(optarg, &steps) != 0)
                bad = "bad --steps";
            break;
        case 'o': out = optarg; break;
        case 'c': collective = 1; break;
        case 'i': collective = 0; break;
        case 'H': show_hints = 1; break;
        default: bad = "unknown option"; break;
        }
    }
    for (q = 0; (q + 1) * (q + 1) <= nprocs; q++)
        ;
    if (bad == NULL && (optind != argc || grid == 0 || steps == 0 || out == NULL))
        bad = "usage: mpirun -np P gas-btio-mpi --grid N --steps S --out PATH "
              "[--collective|--independent] [--show-hints]";
    else if (bad == NULL && q * q != nprocs)
        bad = "the number of processes is not a square";
    else if (bad == NULL && grid % q != 0)
        bad = "--grid is not divisible by sqrt(processes)";
    if (bad != NULL) {
        if (bm_rank == 0)
            fprintf(stderr, "gas-btio-mpi: %s\n", bad);
        MPI_Finalize();
        return 2;
    }

    const int64_t n = grid, cell = grid / q;
    const int pi = bm_rank % q, pj = bm_rank / q;
    const int64_t myrec = (int64_t)q * cell * cell * cell; /* records per step */
    const int nruns = q * (int)(cell * cell);
    double *buf = malloc((size_t)myrec * BM_REC_BYTES);
    MPI_Aint *displs = malloc((size_t)nruns * sizeof(*displs));
    int *blocklens = malloc((size_t)nruns * sizeof(*blocklens));
    MPI_Datatype filetype;
    MPI_Info info;
    MPI_File fh;

    if (buf == NULL || displs == NULL || blocklens == NULL) {
        fprintf(stderr, "gas-btio-mpi: rank %d: out of memory\n", bm_rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    /* The runs are the same every step; only the view's displacement moves. */
    int run = 0;
    for (int k = 0; k < q; k++) {
        const int64_t x0 = ((pi + k) % q) * cell, y0 = ((pj + k) % q) * cell, z0 = k * cell;
        for (int64_t z = z0; z < z0 + cell; z++)
            for (int64_t y = y0; y < y0 + cell; y++) {
                displs[run] = (MPI_Aint)((x0 + n * (y + n * z)) * BM_REC_BYTES);
                blocklens[run] = (int)cell * BM_REC_DOUBLES;
                run++;
            }
    }
    MPI_Type_create_hindexed(nruns, blocklens, displs, MPI_DOUBLE, &filetype);
    MPI_Type_commit(&filetype);

    MPI_Info_create(&info);
    if (collective) {
        MPI_Info_set(info, "romio_cb_write", "enable");
        MPI_Info_set(info, "cb_buffer_size", "4194304");
    }
    if (bm_rank == 0)
        MPI_File_delete(out, MPI_INFO_NULL); /* a missing file is fine */
    MPI_Barrier(MPI_COMM_WORLD);
    bm_check(MPI_File_open(MPI_COMM_WORLD, out, MPI_MODE_WRONLY | MPI_MODE_CREATE, info, &fh),
             "MPI_File_open");

    if (show_hints && bm_rank == 0)
        bm_show_hints(fh);

    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int64_t s = 0; s < steps; s++) {
        const int64_t step_off = s * n * n * n * BM_REC_BYTES;
        int64_t i = 0;
        for (int k = 0; k < q; k++) {
            const int64_t x0 = ((pi + k) % q) * cell, y0 = ((pj + k) % q) * cell, z0 = k * cell;
            for (int64_t z = z0; z < z0 + cell; z++)
                for (int64_t y = y0; y < y0 + cell; y++)
                    for (int64_t x = x0; x < x0 + cell; x++) {
                        const int64_t r = x + n * (y + n * z);
                        bm_record(s, r, buf + i * BM_REC_DOUBLES);
                        if (!collective)
                            bm_check(MPI_File_write_at(fh,
                                                       (MPI_Offset)(step_off + r * BM_REC_BYTES),
                                                       buf + i * BM_REC_DOUBLES, BM_REC_DOUBLES,
                                                       MPI_DOUBLE, MPI_STATUS_IGNORE),
                                     "MPI_File_write_at");
                        i++;
                    }
        }
        if (collective) {
            bm_check(
                MPI_File_set_view(fh, (MPI_Offset)step_off, MPI_DOUBLE, filetype, "native", info),
                "MPI_File_set_view");
            bm_check(MPI_File_write_all(fh, buf, (int)(myrec * BM_REC_DOUBLES), MPI_DOUBLE,
                                        MPI_STATUS_IGNORE),
                     "MPI_File_write_all");
        }
    }
    bm_check(MPI_File_close(&fh), "MPI_File_close");
    double elapsed = MPI_Wtime() - t0, longest = 0;
    MPI_Reduce(&elapsed, &longest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    if (bm_rank == 0) {
        const int64_t records = (int64_t)steps * n * n * n;
        printf("btio procs=%d grid=%d steps=%d records=%" PRId64 " bytes=%" PRId64
               " seconds=%.6f\n",
               nprocs, grid, steps, records, records * BM_REC_BYTES, longest);
    }
    MPI_Info_free(&info);
    MPI_Type_free(&filetype);
    free(blocklens);
    free(displs);
    free(buf);
    MPI_Finalize();
    return 0;
}
