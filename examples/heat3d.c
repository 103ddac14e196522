/* heat3d.c - an MPI heat-diffusion simulation that feeds pio-vizd.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 *   mpirun -np 4 heat3d [--n N] [--steps S] [--viz APP | --no-feed] [--ref FILE]
 *                       [--every K] [--sleep MS] [--stats] [--h5 FILE]
 *
 * An N^3 grid (default 64) on the unit cube, split over the ranks in a 3-D
 * block decomposition (MPI_Dims_create). Two hot spheres start at 1.0 in a
 * field at 0; each step is an explicit 7-point diffusion update with fixed
 * 0 boundaries and a halo exchange. Every K steps (default 1) each rank
 * puts its block of "temperature" (double) and "rank" (int32, the owner)
 * into the feed to application APP (default vizd; PIO_Feed_*): only when
 * the feed sends that step (PIO_Feed_sending), and the temperature straight
 * from its array with ghost layers (PIO_Feed_put_sub, no packing). The update
 * of a point depends only on its neighbours' old values, so the field is
 * bit for bit the same whatever the decomposition: --ref FILE (with -np 1)
 * writes every fed step's temperature (N^3 doubles, x fastest) to FILE, to
 * compare with what the receiver assembled. --sleep adds compute time per
 * step; --stats prints each rank's time per step and the feed's counters,
 * and the CPU time of all ranks per step: in all, in the feed's calls, in
 * the main threads and in the other threads (libpio's progress thread,
 * MPI's), with the bytes the feed sent (the visualization benchmark's cost
 * per byte at the sender).
 * --h5 FILE writes each fed step's temperature to a local HDF5 file instead
 * (dataset /step_NNNNNN, parallel HDF5, collective): the baseline the
 * visualization benchmark compares the feed with. --no-feed: no PIO at all
 * (the simulation alone, the benchmark's reference).
 */
#include <mpi.h>
#include <hdf5.h>
#include <pio.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != PIO_OK) {                                                                       \
            fprintf(stderr, "rank %d: %s: %s\n", rank, #call, PIO_Strerror(rc_));                  \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
        }                                                                                          \
    } while (0)

static int rank, nprocs;

static double cpu_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* local block with one ghost layer: (nx+2) x (ny+2) x (nz+2), x fastest */
#define IDX(i, j, k)                                                                               \
    ((size_t)(k) * (size_t)(ny + 2) * (size_t)(nx + 2) + (size_t)(j) * (size_t)(nx + 2) +          \
     (size_t)(i))

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    int n = 64, steps = 20, every = 1, sleep_ms = 0, stats = 0, use_pio = 1;
    const char *viz = "vizd", *ref = NULL, *h5 = NULL;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--n") == 0)
            n = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--steps") == 0)
            steps = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--every") == 0)
            every = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--viz") == 0)
            viz = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--ref") == 0)
            ref = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--sleep") == 0)
            sleep_ms = atoi(argv[++i]);
        else if (strcmp(argv[i], "--stats") == 0)
            stats = 1;
        else if (strcmp(argv[i], "--no-feed") == 0)
            use_pio = 0;
        else if (i + 1 < argc && strcmp(argv[i], "--h5") == 0)
            h5 = argv[++i];
        else {
            if (rank == 0)
                fprintf(stderr, "usage: heat3d [--n N] [--steps S] [--viz APP | --no-feed] "
                                "[--ref FILE] [--every K] [--sleep MS] [--stats] [--h5 FILE]\n");
            MPI_Finalize();
            return 2;
        }
    }
    if (n < 4 || steps < 1 || every < 1 || (ref && nprocs != 1)) {
        if (rank == 0)
            fprintf(stderr, "heat3d: --n >= 4, --steps >= 1, --every >= 1; --ref with -np 1\n");
        MPI_Finalize();
        return 2;
    }
    int dims[3] = {0, 0, 0}, periods[3] = {0, 0, 0}, coords[3];
    MPI_Dims_create(nprocs, 3, dims);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart);
    MPI_Cart_coords(cart, rank, 3, coords);
    /* dims[0] splits x, dims[1] y, dims[2] z */
    uint64_t start[3], count[3];
    for (int d = 0; d < 3; d++) {
        start[d] = (uint64_t)n * (uint64_t)coords[d] / (uint64_t)dims[d];
        count[d] = (uint64_t)n * (uint64_t)(coords[d] + 1) / (uint64_t)dims[d] - start[d];
    }
    int nx = (int)count[0], ny = (int)count[1], nz = (int)count[2];
    size_t vol = (size_t)(nx + 2) * (size_t)(ny + 2) * (size_t)(nz + 2);
    double *u = calloc(vol, sizeof(double)), *v = calloc(vol, sizeof(double));
    double *out = malloc((size_t)nx * (size_t)ny * (size_t)nz * sizeof(double));
    int32_t *owner = malloc((size_t)nx * (size_t)ny * (size_t)nz * sizeof(int32_t));
    double h = 1.0 / (n - 1);
    for (int k = 1; k <= nz; k++)
        for (int j = 1; j <= ny; j++)
            for (int i = 1; i <= nx; i++) {
                double x = (double)(start[0] + (uint64_t)i - 1) * h,
                       y = (double)(start[1] + (uint64_t)j - 1) * h,
                       z = (double)(start[2] + (uint64_t)k - 1) * h;
                double d1 = (x - .3) * (x - .3) + (y - .35) * (y - .35) + (z - .4) * (z - .4);
                double d2 = (x - .7) * (x - .7) + (y - .6) * (y - .6) + (z - .65) * (z - .65);
                u[IDX(i, j, k)] = d1 < .04 || d2 < .025 ? 1.0 : 0.0;
            }
    for (size_t p = 0; p < (size_t)nx * (size_t)ny * (size_t)nz; p++)
        owner[p] = rank;
    /* halo exchange types: one face per direction */
    MPI_Datatype face[3];
    int full[3] = {nx + 2, ny + 2, nz + 2};
    for (int d = 0; d < 3; d++) {
        int sub[3] = {full[0], full[1], full[2]};
        sub[d] = 1;
        int fsz[3] = {full[2], full[1], full[0]}, fsub[3] = {sub[2], sub[1], sub[0]};
        int zero[3] = {0, 0, 0};
        MPI_Type_create_subarray(3, fsz, fsub, zero, MPI_ORDER_C, MPI_DOUBLE, &face[d]);
        MPI_Type_commit(&face[d]);
    }
    PIO_Feed feed = NULL;
    if (use_pio && !h5) {
        CHECK(PIO_Init(getenv("PIO_APP") ? getenv("PIO_APP") : "heat3d", rank, nprocs));
        PIO_Grid grid = {{(uint64_t)n, (uint64_t)n, (uint64_t)n}, {0, 0, 0}, {h, h, h}};
        const char *names[2] = {"temperature", "rank"};
        int types[2] = {PIO_DOUBLE, PIO_INT32};
        CHECK(PIO_Feed_open(viz, &grid, 2, names, types, &feed));
    }
    hid_t hf = -1;
    if (h5) {
        hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
        H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
        hf = H5Fcreate(h5, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        H5Pclose(fapl);
        if (hf < 0) {
            fprintf(stderr, "rank %d: %s: HDF5 cannot create it\n", rank, h5);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    FILE *rf = ref ? fopen(ref, "wb") : NULL;
    if (ref && !rf) {
        perror(ref);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const double alpha = 1.0 / 8.0; /* stable for the 7-point stencil (< 1/6) */
    double t_compute = 0, t_feed = 0, c_feed = 0, c_proc0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID),
           c_main0 = cpu_s(CLOCK_THREAD_CPUTIME_ID);
    MPI_Barrier(MPI_COMM_WORLD);
    double t_start = MPI_Wtime();
    for (int s = 1; s <= steps; s++) {
        double t0 = MPI_Wtime();
        /* halo exchange, one dimension at a time */
        for (int d = 0; d < 3; d++) {
            int lo, hi;
            MPI_Cart_shift(cart, d, 1, &lo, &hi);
            int off_send_lo[3] = {0, 0, 0}, off_send_hi[3] = {0, 0, 0}, off_recv_lo[3] = {0, 0, 0},
                off_recv_hi[3] = {0, 0, 0};
            off_send_lo[d] = 1;
            off_send_hi[d] = full[d] - 2;
            off_recv_lo[d] = 0;
            off_recv_hi[d] = full[d] - 1;
#define AT(o) (u + IDX((o)[0], (o)[1], (o)[2]))
            MPI_Sendrecv(AT(off_send_hi), 1, face[d], hi, 10 + d, AT(off_recv_lo), 1, face[d], lo,
                         10 + d, cart, MPI_STATUS_IGNORE);
            MPI_Sendrecv(AT(off_send_lo), 1, face[d], lo, 20 + d, AT(off_recv_hi), 1, face[d], hi,
                         20 + d, cart, MPI_STATUS_IGNORE);
#undef AT
        }
        for (int k = 1; k <= nz; k++)
            for (int j = 1; j <= ny; j++)
                for (int i = 1; i <= nx; i++) {
                    uint64_t gi = start[0] + (uint64_t)i - 1, gj = start[1] + (uint64_t)j - 1,
                             gk = start[2] + (uint64_t)k - 1;
                    if (gi == 0 || gj == 0 || gk == 0 || gi == (uint64_t)n - 1 ||
                        gj == (uint64_t)n - 1 || gk == (uint64_t)n - 1) {
                        v[IDX(i, j, k)] = 0.0; /* fixed boundary */
                        continue;
                    }
                    double c = u[IDX(i, j, k)];
                    double lap = u[IDX(i - 1, j, k)] + u[IDX(i + 1, j, k)] + u[IDX(i, j - 1, k)] +
                                 u[IDX(i, j + 1, k)] + u[IDX(i, j, k - 1)] + u[IDX(i, j, k + 1)] -
                                 6.0 * c;
                    v[IDX(i, j, k)] = c + alpha * lap;
                }
        double *t = u;
        u = v;
        v = t;
        if (sleep_ms > 0) {
            struct timespec ts = {sleep_ms / 1000, (long)(sleep_ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
        double t1 = MPI_Wtime(), c1 = cpu_s(CLOCK_THREAD_CPUTIME_ID);
        t_compute += t1 - t0;
        if (s % every == 0) {
            int sending = 0;
            if (feed) {
                CHECK(PIO_Feed_begin_step(feed, (uint64_t)s, s * alpha * h * h));
                sending = PIO_Feed_sending(feed);
            }
            size_t p = 0;
            if (hf >= 0 || rf)
                for (int k = 1; k <= nz; k++)
                    for (int j = 1; j <= ny; j++)
                        for (int i = 1; i <= nx; i++)
                            out[p++] = u[IDX(i, j, k)];
            if (hf >= 0) { /* the baseline: this step into the local HDF5 file */
                char name[32];
                snprintf(name, sizeof(name), "/step_%06d", s);
                hsize_t gd[3] = {(hsize_t)n, (hsize_t)n, (hsize_t)n},
                        st[3] = {start[2], start[1], start[0]},
                        ct[3] = {count[2], count[1], count[0]};
                hid_t fs = H5Screate_simple(3, gd, NULL), ms = H5Screate_simple(3, ct, NULL);
                hid_t ds = H5Dcreate2(hf, name, H5T_NATIVE_DOUBLE, fs, H5P_DEFAULT, H5P_DEFAULT,
                                      H5P_DEFAULT);
                hid_t xp = H5Pcreate(H5P_DATASET_XFER);
                H5Pset_dxpl_mpio(xp, H5FD_MPIO_COLLECTIVE);
                H5Sselect_hyperslab(fs, H5S_SELECT_SET, st, NULL, ct, NULL);
                if (ds < 0 || H5Dwrite(ds, H5T_NATIVE_DOUBLE, ms, fs, xp, out) < 0) {
                    fprintf(stderr, "rank %d: %s: HDF5 cannot write %s\n", rank, h5, name);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
                H5Pclose(xp);
                H5Dclose(ds);
                H5Sclose(ms);
                H5Sclose(fs);
                H5Fflush(hf, H5F_SCOPE_LOCAL);
            } else if (feed) {
                if (sending) { /* the interior of u, straight from its ghosted array */
                    uint64_t mdims[3] = {(uint64_t)nx + 2, (uint64_t)ny + 2, (uint64_t)nz + 2},
                             moff[3] = {1, 1, 1};
                    CHECK(PIO_Feed_put_sub(feed, 0, start, count, u, mdims, moff));
                    CHECK(PIO_Feed_put(feed, 1, start, count, owner));
                }
                CHECK(PIO_Feed_end_step(feed));
            }
            if (rf && fwrite(out, sizeof(double), p, rf) != p) {
                perror(ref);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
        t_feed += MPI_Wtime() - t1;
        c_feed += cpu_s(CLOCK_THREAD_CPUTIME_ID) - c1;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t_wall = MPI_Wtime() - t_start;
    PIO_Feedinfo fi = {0};
    if (feed)
        CHECK(PIO_Feed_info(feed, &fi));
    /* CPU time of all ranks: in the feed's calls (with the packing), in
     * all (every thread, the libraries' too), in the main threads (this
     * loop's) and in the others (libpio's progress thread, MPI's); and the
     * bytes the feed sent */
    double c_main = cpu_s(CLOCK_THREAD_CPUTIME_ID) - c_main0;
    double c_all = cpu_s(CLOCK_PROCESS_CPUTIME_ID) - c_proc0, sum[4],
           mine[4] = {c_feed, c_all, c_main, (double)fi.bytes_sent};
    MPI_Reduce(mine, sum, 4, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (stats && rank == 0) {
        printf("wall %.6f s/step over %d steps (%.3f s); cpu of all ranks %.6f s/step, in the "
               "feed %.6f s/step\n",
               t_wall / steps, steps, t_wall, sum[1] / steps, sum[0] / steps);
        printf("cpu of all ranks: main threads %.6f s/step, other threads %.6f s/step; feed "
               "sent %.0f bytes\n",
               sum[2] / steps, (sum[1] - sum[2]) / steps, sum[3]);
    }
    if (stats && feed)
        printf("rank %d: %d steps, compute %.6f s/step, feed %.6f s/step; sent %llu, skipped "
               "%llu, acked %llu, plans missed %llu, waited %.3f s, %s\n",
               rank, steps, t_compute / steps, t_feed / steps, (unsigned long long)fi.steps_sent,
               (unsigned long long)fi.steps_skipped, (unsigned long long)fi.steps_acked,
               (unsigned long long)fi.plans_missed, fi.wait_seconds,
               fi.lossless ? "lossless" : "newest-only");
    if (feed)
        CHECK(PIO_Feed_close(feed));
    if (rf)
        fclose(rf);
    if (hf >= 0)
        H5Fclose(hf);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("OK heat3d: %d processes (%dx%dx%d), %d^3, %d steps, %s %s\n", nprocs, dims[0],
               dims[1], dims[2], n, steps,
               h5     ? "written to"
               : feed ? "fed to"
                      : "no feed",
               h5     ? h5
               : feed ? viz
                      : "");
    for (int d = 0; d < 3; d++)
        MPI_Type_free(&face[d]);
    free(u);
    free(v);
    free(out);
    free(owner);
    if (use_pio && !h5)
        PIO_Exit();
    MPI_Finalize();
    return 0;
}
