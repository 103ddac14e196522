/* mpi_sim_viz.c - two MPI jobs, a simulation and a visualization, coupled by PIO.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * One program, two roles chosen by argv[1]; each role is its own MPI job and
 * its own PIO application, and the two jobs may run on different systems:
 *
 *     PIO_SOCKET=$SOCK_B mpirun -np 2 mpi_sim_viz viz &    # system B
 *     PIO_SOCKET=$SOCK_A mpirun -np 4 mpi_sim_viz sim      # system A
 *
 * Every rank joins PIO as process <MPI rank> of <MPI size> of application
 * "sim" or "viz" and names the other as its partner. Each step, sim rank r
 * sends one array of COUNT doubles to viz rank r % (viz size) with tag
 * step * 100 + r; value i is step * 1e8 + r * 1e6 + i, so a receiver can
 * check every element. Each viz rank receives the messages meant for it,
 * from any sim process, by tag, and checks source, count and values. The
 * ranks of each job add up their results with MPI_Reduce; rank 0 prints
 *
 *     sim: sent 12 of 12 messages
 *     viz: received 12 of 12 messages, all correct
 *
 * and every rank exits non-zero when anything failed anywhere in its job.
 * MPI and PIO live side by side: MPI inside a job, PIO between the jobs.
 *
 * Usage: mpi_sim_viz sim|viz [STEPS [COUNT]]   (defaults 3 and 262144)
 * Build: mpicc -o mpi_sim_viz mpi_sim_viz.c $(pkg-config --cflags --libs pio)
 */
#include <mpi.h>
#include <pio.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECV_TIMEOUT_MS 120000

static int rank, size;
static const char *role;

/* A PIO call that must work: on failure say which, on which rank, and stop
 * the whole job (the other ranks would wait for this one forever). */
static void must(int rc, const char *what)
{
    if (rc == PIO_OK)
        return;
    fprintf(stderr, "%s rank %d: %s: %s (%s)\n", role, rank, what, PIO_Strerror(rc),
            PIO_Errname(rc));
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static double value(int step, int src, size_t i)
{
    return step * 1e8 + src * 1e6 + (double)i;
}

/* sim: each step, one message to viz rank rank % viz_size. Returns the
 * number of messages sent. */
static int run_sim(int partner, int viz_size, int steps, size_t count, double *buf)
{
    int sent = 0;
    for (int step = 0; step < steps; step++) {
        for (size_t i = 0; i < count; i++) /* this step's field */
            buf[i] = value(step, rank, i);
        int rc = PIO_Send(partner, rank % viz_size, step * 100 + rank, PIO_DYNAMIC, buf, PIO_DOUBLE,
                          count, PIO_BLOCKING);
        if (rc == PIO_OK)
            sent++;
        else
            fprintf(stderr, "sim rank %d: step %d: PIO_Send: %s\n", rank, step, PIO_Strerror(rc));
    }
    return sent;
}

/* viz: each step, the message of every sim rank r with r % size == rank.
 * Returns the number received correct; *got counts those received. */
static int run_viz(int partner, int sim_size, int steps, size_t count, double *buf, int *got)
{
    int good = 0;
    *got = 0;
    for (int step = 0; step < steps; step++) {
        for (int src = rank; src < sim_size; src += size) {
            PIO_Status st;
            memset(buf, 0, count * sizeof(*buf));
            int rc = PIO_Recv(partner, PIO_ANY_PROCESS, step * 100 + src, buf, PIO_DOUBLE, count,
                              RECV_TIMEOUT_MS, PIO_BLOCKING, &st);
            if (rc != PIO_OK) {
                fprintf(stderr, "viz rank %d: step %d from sim %d: PIO_Recv: %s\n", rank, step, src,
                        PIO_Strerror(rc));
                continue;
            }
            (*got)++;
            size_t bad = 0;
            for (size_t i = 0; i < count; i++)
                bad += buf[i] != value(step, src, i);
            if (st.source != src || st.count != count || bad) {
                fprintf(stderr,
                        "viz rank %d: step %d: message tagged for sim %d came from %d with "
                        "%zu of %zu values, %zu wrong\n",
                        rank, step, src, st.source, st.count, count, bad);
                continue;
            }
            good++;
        }
    }
    return good;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    role = argc > 1 ? argv[1] : "";
    if (strcmp(role, "sim") != 0 && strcmp(role, "viz") != 0) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np N %s sim|viz [STEPS [COUNT]]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    if (provided < MPI_THREAD_MULTIPLE && rank == 0) /* PIO is thread-safe either way */
        fprintf(stderr, "%s: note: MPI gives thread level %d, not MPI_THREAD_MULTIPLE\n", role,
                provided);
    int steps = argc > 2 ? atoi(argv[2]) : 3;
    size_t count = argc > 3 ? (size_t)strtoull(argv[3], NULL, 10) : (size_t)1 << 18;
    int is_sim = strcmp(role, "sim") == 0;
    const char *other = is_sim ? "viz" : "sim";

    /* join the local piod: process <rank> of <size> of application <role> */
    must(PIO_Init(role, rank, size), "PIO_Init");
    int partner;
    must(PIO_Setpartner(other, &partner), "PIO_Setpartner");
    PIO_Appinfo info;
    must(PIO_Getappinfo(partner, &info), "PIO_Getappinfo");

    double *buf = malloc(count * sizeof(*buf));
    if (!buf && count) {
        fprintf(stderr, "%s rank %d: out of memory\n", role, rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int mine, got = 0, expected;
    if (is_sim) {
        mine = run_sim(partner, info.nprocs, steps, count, buf);
        expected = size * steps;
    } else {
        mine = run_viz(partner, info.nprocs, steps, count, buf, &got);
        expected = info.nprocs * steps;
    }

    int total = 0, total_got = 0;
    MPI_Reduce(&mine, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&got, &total_got, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (is_sim)
            printf("sim: sent %d of %d messages\n", total, expected);
        else if (total == expected)
            printf("viz: received %d of %d messages, all correct\n", total, expected);
        else
            printf("viz: received %d of %d messages, %d correct: FAILED\n", total_got, expected,
                   total);
        fflush(stdout);
    }
    /* every rank learns the job's verdict, so the exit status is the same everywhere */
    int ok = rank == 0 ? total == expected : 0;
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);

    free(buf);
    PIO_Exit(); /* a blocking send's data is in the piod's pool: leaving does not lose it */
    MPI_Finalize();
    return ok ? 0 : 1;
}
