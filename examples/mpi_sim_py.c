/* mpi_sim_py.c - an MPI simulation coupled to a Python analysis through PIO.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 *   mpirun -np 4 mpi_sim_py [--rows R] [--cols C] [--steps S] [--every E]
 *   python3 examples/python/analysis.py          (on another host, or here)
 *
 * Each rank holds R rows x C columns of a 2-D heat field (rank r: the rows
 * r*R .. r*R+R-1) and steps an explicit diffusion, with halo rows through
 * MPI. Every E steps each rank sends its block to process 0 of application
 * "analysis" as one typed message (PIO_DOUBLE, tag = the step + 1), after a
 * first header per rank (PIO_INT64, tag 0: rank, R, C, S, E). The field's
 * sum at each sent step is printed by rank 0 ("step S sum X"), so the
 * analysis's own sums can be compared with it. Rank and size come from
 * MPI (PIO_Init_comm); the analysis is found by name.
 */
#include <pio_mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != PIO_OK) {                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, PIO_Strerror(rc_));      \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    int rows = 64, cols = 256, steps = 100, every = 10;
    MPI_Init(&argc, &argv);
    for (int i = 1; i + 1 < argc; i += 2) {
        int v = atoi(argv[i + 1]);
        if (strcmp(argv[i], "--rows") == 0)
            rows = v;
        else if (strcmp(argv[i], "--cols") == 0)
            cols = v;
        else if (strcmp(argv[i], "--steps") == 0)
            steps = v;
        else if (strcmp(argv[i], "--every") == 0)
            every = v;
    }
    if (rows < 1 || cols < 3 || steps < 1 || every < 1) {
        fprintf(stderr, "usage: mpi_sim_py [--rows R] [--cols C] [--steps S] [--every E]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int rank, size, ana;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(PIO_Init_comm("simulation", MPI_COMM_WORLD));
    CHECK(PIO_Setpartner("analysis", &ana));
    /* u with a halo row above and below */
    size_t n = (size_t)(rows + 2) * (size_t)cols;
    double *u = calloc(n, sizeof(double)), *v = calloc(n, sizeof(double));
    for (int i = 1; i <= rows; i++)
        for (int j = 0; j < cols; j++) { /* a hot spot in each rank's block */
            int gi = rank * rows + i - 1;
            u[(size_t)i * cols + j] = (gi % 17 == 3 && j % 23 == 5) ? 100.0 + rank : 0.0;
        }
    int64_t hdr[5] = {rank, rows, cols, steps, every};
    CHECK(PIO_Send(ana, 0, 0, PIO_DYNAMIC, hdr, PIO_INT64, 5, PIO_BLOCKING));
    int up = rank > 0 ? rank - 1 : MPI_PROC_NULL, down = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    for (int s = 1; s <= steps; s++) {
        MPI_Sendrecv(u + cols, cols, MPI_DOUBLE, up, 0, u + (size_t)(rows + 1) * cols, cols,
                     MPI_DOUBLE, down, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(u + (size_t)rows * cols, cols, MPI_DOUBLE, down, 1, u, cols, MPI_DOUBLE, up, 1,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 1; i <= rows; i++)
            for (int j = 1; j < cols - 1; j++) {
                size_t k = (size_t)i * cols + j;
                v[k] = u[k] + 0.1 * (u[k - 1] + u[k + 1] + u[k - cols] + u[k + cols] - 4 * u[k]);
            }
        for (int i = 1; i <= rows; i++)
            memcpy(u + (size_t)i * cols + 1, v + (size_t)i * cols + 1,
                   sizeof(double) * (size_t)(cols - 2));
        if (s % every)
            continue;
        /* the block without its halo: one message, straight from u */
        CHECK(PIO_Send(ana, 0, s + 1, PIO_DYNAMIC, u + cols, PIO_DOUBLE, (size_t)rows * cols,
                       PIO_BLOCKING));
        double mine = 0, all = 0;
        for (size_t k = (size_t)cols; k < (size_t)(rows + 1) * cols; k++)
            mine += u[k];
        MPI_Reduce(&mine, &all, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0)
            printf("step %d sum %.9e\n", s, all);
    }
    fflush(stdout);
    free(u);
    free(v);
    CHECK(PIO_Exit());
    MPI_Finalize();
    return 0;
}
