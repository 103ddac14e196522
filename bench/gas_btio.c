/* gas_btio.c - a BTIO-like writer: P processes write the NAS BT-IO "Fortran I/O" pattern.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * usage: gas-btio --procs P --grid N --steps S --out PATH [--api pwrite|seekwrite] [--fsync]
 *                 [--no-step-barrier] [--end-barrier]
 *        gas-btio --grid N --steps S --verify FILE
 *
 * The file holds the solution u(5,N,N,N) of doubles for each of S steps: one
 * 40-byte record (5 doubles, native byte order) per grid point, record index
 * r = x + N*(y + N*z), step s's record r at byte (s*N^3 + r)*40. Record r of
 * step s holds u[m] = s*1e6 + r + m*0.1 (m = 0..4), so the file's bytes
 * depend only on N and S, never on P or on the order the writes land in.
 *
 * Decomposition: BT's multi-partition. P = q*q; the grid is q^3 cells of
 * (N/q)^3 points; process p = (pi, pj), pi = p % q, pj = p / q, owns the q
 * cells ((pi+k)%q, (pj+k)%q, k), k = 0..q-1. Per step, each process writes
 * its cells in k order, and in a cell z, y, x (x fastest), one record per
 * system call: pwrite (--api pwrite), or lseek + write as gfortran's direct
 * access does (--api seekwrite).
 *
 * Steps: as in BT, where the solution is written every few time steps and
 * the computation between keeps the processes in step, every process waits
 * for the others before it writes the next step (a barrier of atomics in
 * shared memory; --no-step-barrier writes all steps back to back). A child
 * that fails raises a flag the others see in the barrier, so none hangs.
 * With --end-barrier each process, after its last write, asks the file's
 * size (lseek SEEK_END: under libpgas a round trip after every queued write
 * of the process, which the dispatcher answers without a flush) and waits
 * for the others before its fsync or close: every record is then in the
 * dispatcher's sub-buffers before the first barrier of the file, so the
 * flushes no longer depend on how the processes were scheduled (gas.bats).
 *
 * Processes: the parent creates (truncates) PATH and forks P children. Each
 * child opens PATH (O_WRONLY|O_CREAT, 0644), says "ready" on a pipe and
 * waits for the start barrier (the parent closes the "go" pipe: every child
 * sees EOF at once). The parent reads the clock just before releasing; each
 * child writes, optionally fsyncs, closes, reads the clock and sends it on
 * the "done" pipe. Reported seconds = the latest child's close minus the
 * release (CLOCK_MONOTONIC, one clock for all processes on a host).
 *
 * The program runs under LD_PRELOAD=libpgas.so with PATH like pgas:/btio.out,
 * so the output file sees only open/pwrite/lseek/write/fsync/close (and
 * --verify only open/pread/close): no stdio, no O_DIRECT, no mmap there.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BT_REC_DOUBLES 5
#define BT_REC_BYTES   (BT_REC_DOUBLES * (int)sizeof(double)) /* 40 */
#define BT_VERIFY_BUF  (1 << 20)

enum bt_api { BT_PWRITE, BT_SEEKWRITE };

struct bt_opts {
    int procs;
    int grid;
    int steps;
    const char *out;
    const char *verify;
    enum bt_api api;
    int fsync;
    int no_step_barrier;
    int end_barrier;
};

/* Shared by the children (MAP_SHARED): the step barrier and the fail flag. */
struct bt_shared {
    atomic_int count;
    atomic_int phase;
    atomic_int failed;
};

static struct bt_shared *bt_sh;

/* bt_step_barrier - wait until all procs arrived; -1 if one failed. */
static int bt_step_barrier(int procs)
{
    int ph = atomic_load(&bt_sh->phase);
    if (atomic_fetch_add(&bt_sh->count, 1) == procs - 1) {
        atomic_store(&bt_sh->count, 0);
        atomic_fetch_add(&bt_sh->phase, 1);
        return 0;
    }
    while (atomic_load(&bt_sh->phase) == ph) {
        if (atomic_load(&bt_sh->failed))
            return -1;
        usleep(200);
    }
    return 0;
}

/* What a child sends on the done pipe once its close returned. */
struct bt_done {
    int32_t rank;
    int32_t pad;
    int64_t end_ns;
};

static int64_t bt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* bt_record - the 5 doubles of record r of step s. */
static void bt_record(int64_t s, int64_t r, double u[BT_REC_DOUBLES])
{
    for (int m = 0; m < BT_REC_DOUBLES; m++)
        u[m] = (double)s * 1e6 + (double)r + m * 0.1;
}

static void bt_usage(FILE *f)
{
    fprintf(f, "usage: gas-btio --procs P --grid N --steps S --out PATH\n"
               "                [--api pwrite|seekwrite] [--fsync] [--no-step-barrier]\n"
               "                [--end-barrier]\n"
               "       gas-btio --grid N --steps S --verify FILE\n"
               "P must be a square q*q and N divisible by q.\n");
}

static int bt_isqrt(int p)
{
    int q = 0;
    while ((q + 1) * (q + 1) <= p)
        q++;
    return q;
}

static int bt_parse_int(const char *name, const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 1 || v > 1000000) {
        fprintf(stderr, "gas-btio: bad --%s '%s'\n", name, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int bt_parse(int argc, char **argv, struct bt_opts *o)
{
    static const struct option longopts[] = {
        {"procs", required_argument, NULL, 'p'},
        {"grid", required_argument, NULL, 'n'},
        {"steps", required_argument, NULL, 's'},
        {"out", required_argument, NULL, 'o'},
        {"api", required_argument, NULL, 'a'},
        {"verify", required_argument, NULL, 'v'},
        {"fsync", no_argument, NULL, 'f'},
        {"no-step-barrier", no_argument, NULL, 'B'},
        {"end-barrier", no_argument, NULL, 'E'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;

    memset(o, 0, sizeof(*o));
    o->api = BT_PWRITE;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (bt_parse_int("procs", optarg, &o->procs) != 0)
                return -1;
            break;
        case 'n':
            if (bt_parse_int("grid", optarg, &o->grid) != 0)
                return -1;
            break;
        case 's':
            if (bt_parse_int("steps", optarg, &o->steps) != 0)
                return -1;
            break;
        case 'o': o->out = optarg; break;
        case 'v': o->verify = optarg; break;
        case 'f': o->fsync = 1; break;
        case 'B': o->no_step_barrier = 1; break;
        case 'E': o->end_barrier = 1; break;
        case 'a':
            if (strcmp(optarg, "pwrite") == 0) {
                o->api = BT_PWRITE;
            } else if (strcmp(optarg, "seekwrite") == 0) {
                o->api = BT_SEEKWRITE;
            } else {
                fprintf(stderr, "gas-btio: bad --api '%s'\n", optarg);
                return -1;
            }
            break;
        case 'h': bt_usage(stdout); exit(0);
        default: bt_usage(stderr); return -1;
        }
    }
    if (optind != argc || o->grid == 0 || o->steps == 0 || (o->verify == NULL && o->out == NULL)) {
        bt_usage(stderr);
        return -1;
    }
    if (o->verify == NULL && o->procs == 0) {
        bt_usage(stderr);
        return -1;
    }
    if (o->procs != 0) {
        int q = bt_isqrt(o->procs);
        if (q * q != o->procs) {
            fprintf(stderr, "gas-btio: --procs %d is not a square\n", o->procs);
            return -1;
        }
        if (o->grid % q != 0) {
            fprintf(stderr, "gas-btio: --grid %d is not divisible by sqrt(procs) = %d\n", o->grid,
                    q);
            return -1;
        }
    }
    return 0;
}

static void bt_fail(int rank, const char *call, int err)
{
    fprintf(stderr, "gas-btio: rank %d: %s: %s\n", rank, call, strerror(err));
}

/* bt_write_record - one record at off; a short write continues. Returns 0 or
 * -1 with *call naming the call that failed and errno set. */
static int bt_write_record(int fd, enum bt_api api, const char *buf, off_t off, const char **call)
{
    size_t done = 0;

    if (api == BT_SEEKWRITE && lseek(fd, off, SEEK_SET) == (off_t)-1) {
        *call = "lseek";
        return -1;
    }
    while (done < (size_t)BT_REC_BYTES) {
        ssize_t n;
        if (api == BT_PWRITE) {
            *call = "pwrite";
            n = pwrite(fd, buf + done, BT_REC_BYTES - done, off + (off_t)done);
        } else {
            *call = "write";
            n = write(fd, buf + done, BT_REC_BYTES - done);
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0) {
            errno = EIO;
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}

/* bt_child - rank's part; never returns. ready_w/go_r/done_w are its pipe ends. */
static void bt_child(const struct bt_opts *o, int rank, int ready_w, int go_r, int done_w)
{
    const int q = bt_isqrt(o->procs);
    const int c = o->grid / q;
    const int pi = rank % q, pj = rank / q;
    const int64_t n = o->grid;
    const char *call = "open";
    double u[BT_REC_DOUBLES];
    char byte = 'r';
    struct bt_done done = {.rank = rank};

    int fd = open(o->out, O_WRONLY | O_CREAT, 0644);
    if (fd < 0)
        goto fail;
    if (write(ready_w, &byte, 1) != 1) {
        call = "write(ready pipe)";
        goto fail;
    }
    close(ready_w);
    while (read(go_r, &byte, 1) < 0 && errno == EINTR)
        ; /* EOF: the barrier is released */
    close(go_r);

    for (int64_t s = 0; s < o->steps; s++) {
        if (s > 0 && !o->no_step_barrier && bt_step_barrier(o->procs) != 0) {
            call = "step barrier (another process failed)";
            errno = ECANCELED;
            goto fail;
        }
        for (int k = 0; k < q; k++) {
            const int64_t x0 = (int64_t)((pi + k) % q) * c;
            const int64_t y0 = (int64_t)((pj + k) % q) * c;
            const int64_t z0 = (int64_t)k * c;
            for (int64_t z = z0; z < z0 + c; z++)
                for (int64_t y = y0; y < y0 + c; y++)
                    for (int64_t x = x0; x < x0 + c; x++) {
                        const int64_t r = x + n * (y + n * z);
                        bt_record(s, r, u);
                        if (bt_write_record(fd, o->api, (const char *)u,
                                            (off_t)((s * n * n * n + r) * BT_REC_BYTES),
                                            &call) != 0)
                            goto fail;
                    }
        }
    }
    if (o->end_barrier) {
        call = "lseek(SEEK_END)";
        if (lseek(fd, 0, SEEK_END) == (off_t)-1)
            goto fail;
        if (bt_step_barrier(o->procs) != 0) {
            call = "end barrier (another process failed)";
            errno = ECANCELED;
            goto fail;
        }
    }
    if (o->fsync && fsync(fd) != 0) {
        call = "fsync";
        goto fail;
    }
    if (close(fd) != 0) {
        fd = -1;
        call = "close";
        goto fail;
    }
    done.end_ns = bt_now_ns();
    if (write(done_w, &done, sizeof(done)) != (ssize_t)sizeof(done)) {
        call = "write(done pipe)";
        goto fail_noclose;
    }
    _exit(0);

fail:
    atomic_store(&bt_sh->failed, 1);
    bt_fail(rank, call, errno);
    if (fd >= 0)
        close(fd);
    _exit(1);
fail_noclose:
    atomic_store(&bt_sh->failed, 1);
    bt_fail(rank, call, errno);
    _exit(1);
}

static int bt_run(const struct bt_opts *o)
{
    const int64_t n = o->grid;
    const int64_t records = (int64_t)o->steps * n * n * n;
    int ready[2], go[2], done[2];
    int failed = 0, nready = 0, ndone = 0;
    int64_t start_ns, end_ns = 0;
    pid_t *pids;
    char byte;
    ssize_t got;

    int fd = open(o->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        fprintf(stderr, "gas-btio: open %s: %s\n", o->out, strerror(errno));
        return 1;
    }
    if (close(fd) != 0) {
        fprintf(stderr, "gas-btio: close %s: %s\n", o->out, strerror(errno));
        return 1;
    }
    bt_sh = mmap(NULL, sizeof(*bt_sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (bt_sh == MAP_FAILED) {
        fprintf(stderr, "gas-btio: mmap: %s\n", strerror(errno));
        return 1;
    }
    atomic_init(&bt_sh->count, 0);
    atomic_init(&bt_sh->phase, 0);
    atomic_init(&bt_sh->failed, 0);
    pids = calloc((size_t)o->procs, sizeof(*pids));
    if (pids == NULL || pipe(ready) != 0 || pipe(go) != 0 || pipe(done) != 0) {
        fprintf(stderr, "gas-btio: setup: %s\n", strerror(errno));
        return 1;
    }
    fflush(NULL);
    for (int p = 0; p < o->procs; p++) {
        pids[p] = fork();
        if (pids[p] < 0) {
            fprintf(stderr, "gas-btio: fork: %s\n", strerror(errno));
            failed = 1;
            break;
        }
        if (pids[p] == 0) {
            close(ready[0]);
            close(go[1]);
            close(done[0]);
            bt_child(o, p, ready[1], go[0], done[1]);
        }
    }
    close(ready[1]);
    close(go[0]);
    close(done[1]);

    /* EOF on "ready" once every child said ready or died */
    while ((got = read(ready[0], &byte, 1)) > 0 || (got < 0 && errno == EINTR))
        nready += got > 0;
    close(ready[0]);
    start_ns = bt_now_ns();
    close(go[1]); /* release the barrier */

    for (;;) {
        struct bt_done d;
        got = read(done[0], &d, sizeof(d));
        if (got < 0 && errno == EINTR)
            continue;
        if (got != (ssize_t)sizeof(d))
            break;
        ndone++;
        if (d.end_ns > end_ns)
            end_ns = d.end_ns;
    }
    close(done[0]);

    for (int p = 0; p < o->procs && pids[p] > 0; p++) {
        int st;
        while (waitpid(pids[p], &st, 0) < 0) {
            if (errno != EINTR) {
                st = 1;
                break;
            }
        }
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            failed = 1;
    }
    free(pids);
    if (failed || nready != o->procs || ndone != o->procs) {
        fprintf(stderr, "gas-btio: %d of %d processes failed\n", o->procs - ndone, o->procs);
        return 1;
    }
    printf("btio procs=%d grid=%d steps=%d records=%" PRId64 " bytes=%" PRId64 " seconds=%.6f\n",
           o->procs, o->grid, o->steps, records, records * BT_REC_BYTES,
           (double)(end_ns - start_ns) / 1e9);
    return 0;
}

/* bt_verify - compare path's bytes with the expected content, in
 * BT_VERIFY_BUF chunks read with pread. */
static int bt_verify(const struct bt_opts *o)
{
    const int64_t n = o->grid;
    const int64_t records = (int64_t)o->steps * n * n * n;
    const int64_t size = records * BT_REC_BYTES;
    const int64_t per_chunk = BT_VERIFY_BUF / BT_REC_BYTES;
    char *have = malloc((size_t)per_chunk * BT_REC_BYTES + 1); /* +1: see want_len */
    char *want = malloc((size_t)per_chunk * BT_REC_BYTES);
    int fd = -1, rc = 1;

    if (have == NULL || want == NULL) {
        fprintf(stderr, "gas-btio: out of memory\n");
        goto free;
    }
    fd = open(o->verify, O_RDONLY);
    if (fd < 0) {
        fprintf(stderr, "gas-btio: open %s: %s\n", o->verify, strerror(errno));
        goto free;
    }
    for (int64_t rec0 = 0;; rec0 += per_chunk) {
        const int64_t nrec = records - rec0 < per_chunk ? records - rec0 : per_chunk;
        const int64_t off = rec0 * BT_REC_BYTES;
        /* ask for one byte more than expected at the end to catch a long file */
        const size_t want_len = (size_t)(nrec * BT_REC_BYTES) + (rec0 + nrec == records);
        size_t len = 0;

        while (len < want_len) {
            ssize_t got = pread(fd, have + len, want_len - len, (off_t)(off + (int64_t)len));
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0) {
                fprintf(stderr, "gas-btio: pread %s: %s\n", o->verify, strerror(errno));
                goto close;
            }
            if (got == 0)
                break;
            len += (size_t)got;
        }
        for (int64_t i = 0; i < nrec; i++) {
            const int64_t rec = rec0 + i;
            bt_record(rec / (n * n * n), rec % (n * n * n), (double *)(want + i * BT_REC_BYTES));
        }
        const size_t cmp_len =
            len < (size_t)(nrec * BT_REC_BYTES) ? len : (size_t)(nrec * BT_REC_BYTES);
        for (size_t i = 0; i < cmp_len; i++) {
            if (have[i] != want[i]) {
                printf("verify: first difference at offset %" PRId64 " (record %" PRId64 ")\n",
                       off + (int64_t)i, (off + (int64_t)i) / BT_REC_BYTES);
                goto close;
            }
        }
        if (len < (size_t)(nrec * BT_REC_BYTES)) {
            printf("verify: first difference at offset %" PRId64 " (file ends, %" PRId64
                   " bytes expected)\n",
                   off + (int64_t)len, size);
            goto close;
        }
        if (len > (size_t)(nrec * BT_REC_BYTES)) {
            printf("verify: first difference at offset %" PRId64 " (file longer than %" PRId64
                   " bytes)\n",
                   size, size);
            goto close;
        }
        if (rec0 + nrec == records)
            break;
    }
    printf("verify ok\n");
    rc = 0;
close:
    close(fd);
free:
    free(have);
    free(want);
    return rc;
}

int main(int argc, char **argv)
{
    struct bt_opts o;

    if (bt_parse(argc, argv, &o) != 0)
        return 2;
    return o.verify != NULL ? bt_verify(&o) : bt_run(&o);
}
