/* pio-win.c - the one-sided API under test (tests/bats/pio_win.bats).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 *   mpirun -np K pio-win MODE [ARGS]     (or with PIO_TEST_RANK/_SIZE set)
 *
 * Every process joins as application $PIO_APP (default "win") with its rank
 * (OMPI_COMM_WORLD_RANK / _SIZE, or PIO_TEST_RANK / _SIZE); barriers are
 * PIO messages through process 0. Modes:
 *   rw MAXBYTES   each process exposes MAXBYTES + 4096 bytes filled with a
 *                 pattern of its rank; gets from the next rank sizes 1 B ..
 *                 MAXBYTES (powers of 2 and odd sizes, odd offsets) and
 *                 checks every byte; puts a pattern of its own into the
 *                 next rank's window (blocking and PIO_Iput); after a
 *                 barrier each checks what was put into its window.
 *   atomics N M   N PIO_Fetch_and_add(1) by each process on one word of
 *                 process 0 (which checks the sum: K * N), then M rounds of
 *                 a lock taken with PIO_Compare_and_swap that protects a
 *                 plain counter (get, +1, put): K * M.
 *   freed BYTES   process 0 exposes BYTES; process 1 starts PIO_Iget of all
 *                 of it, process 0 frees the window meanwhile: process 1's
 *                 get ends with PIO_OK (it finished first) or PIO_EWINFREED,
 *                 and its next get with PIO_EWINFREED; prints what it got.
 *   serve BYTES   (application "winsrv", one process) exposes BYTES with a
 *                 pattern to anyone ($PIO_WIN_ACCESS: app, partners, uid
 *                 or anyone; the other modes' windows default to app),
 *                 waits for a client's "done" message, frees.
 *   client SERVER MAXBYTES  (one process) reads and writes the server's
 *                 window (sizes 1 B .. MAXBYTES), fetch-and-add on its word
 *                 0, then tells it "done".
 *   lat SERVER MAXBYTES  (one process) the time of one PIO_Get of 8 B ..
 *                 MAXBYTES (x4 steps) from the server's window: prints
 *                 "lat SIZE USEC" per size (the median of 5 batches), then
 *                 tells the server "done".
 * Prints "OK ..." on success; "FAIL ..." and exit 1 otherwise.
 */
#include "pio.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TAG_BARRIER 901
#define TAG_DONE    902
/* a barrier waits this long: emulated atomics over UCX tcp in a sanitizer
 * build on a loaded 2-core machine take minutes, not seconds */
#define BARRIER_MS 240000

static int rank, size, self;

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        printf("FAIL rank %d: ", rank);                                                            \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        fflush(stdout);                                                                            \
        exit(1);                                                                                   \
    } while (0)

#define CALL(x)                                                                                    \
    do {                                                                                           \
        int rc_ = (x);                                                                             \
        if (rc_ != PIO_OK)                                                                         \
            FAIL("%s: %s (%s)", #x, PIO_Strerror(rc_), PIO_Errname(rc_));                          \
    } while (0)

static int env_int(const char *a, const char *b, int dflt)
{
    const char *v = getenv(a);
    if (!v)
        v = getenv(b);
    return v ? atoi(v) : dflt;
}

/* the access of our windows: $PIO_WIN_ACCESS (app, partners, uid or
 * anyone), else dflt */
static int win_access(int dflt)
{
    const char *v = getenv("PIO_WIN_ACCESS");
    if (!v || !*v)
        return dflt;
    static const char *const names[] = {"app", "partners", "uid", "anyone"};
    static const int codes[] = {PIO_WIN_APP, PIO_WIN_PARTNERS, PIO_WIN_UID, PIO_WIN_ANYONE};
    for (int i = 0; i < 4; i++)
        if (strcmp(v, names[i]) == 0)
            return codes[i];
    return -1; /* PIO_Win_create says PIO_EINVAL */
}

static uint8_t pat(int who, uint64_t off)
{
    return (uint8_t)(who * 31 + off * 7 + (off >> 11));
}

static void barrier(void)
{
    int x = 0;
    if (rank == 0) {
        for (int i = 1; i < size; i++)
            CALL(PIO_Recv(self, PIO_ANY_PROCESS, TAG_BARRIER, &x, PIO_INT32, 1, BARRIER_MS,
                          PIO_BLOCKING, NULL));
        for (int i = 1; i < size; i++)
            CALL(PIO_Send(self, i, TAG_BARRIER, PIO_DYNAMIC, &x, PIO_INT32, 1, PIO_BLOCKING));
    } else {
        CALL(PIO_Send(self, 0, TAG_BARRIER, PIO_DYNAMIC, &x, PIO_INT32, 1, PIO_BLOCKING));
        CALL(PIO_Recv(self, 0, TAG_BARRIER, &x, PIO_INT32, 1, BARRIER_MS, PIO_BLOCKING, NULL));
    }
}

/* sizes 1 .. max: powers of two and a few odd ones */
static size_t next_size(size_t s, size_t max)
{
    if (s == 0)
        return 1;
    size_t n = s * 2 + (s % 3 == 0 ? 1 : 0);
    return s < max && n > max ? max : n;
}

static void check(const uint8_t *b, size_t len, int who, uint64_t off, const char *what)
{
    for (size_t i = 0; i < len; i++)
        if (b[i] != pat(who, off + i))
            FAIL("%s: byte %zu of %zu (offset %" PRIu64 ") is %u, not %u", what, i, len, off + i,
                 b[i], pat(who, off + i));
}

static void mode_rw(size_t max)
{
    size_t wsize = max + 4096;
    uint8_t *mem = malloc(wsize), *buf = malloc(max);
    if (!mem || !buf)
        FAIL("no memory");
    for (size_t i = 0; i < wsize; i++)
        mem[i] = pat(rank, i);
    PIO_Win win;
    CALL(PIO_Win_create(mem, wsize, win_access(PIO_WIN_APP), &win));
    barrier();
    int peer = (rank + 1) % size;
    int n = 0;
    for (size_t s = 1; s <= max; s = next_size(s, max)) {
        uint64_t off = (s * 13) % 4097;
        memset(buf, 0, s);
        CALL(PIO_Get(win, PIO_SELF, peer, off, buf, s));
        check(buf, s, peer, off, "get");
        n++;
        if (s == max)
            break;
    }
    /* out of bounds: refused, nothing sent */
    if (PIO_Get(win, PIO_SELF, peer, wsize - 1, buf, 2) != PIO_EINVAL)
        FAIL("a get past the end of the window was not refused");
    barrier(); /* everyone has read: now write */
    size_t half = max / 2 ? max / 2 : 1;
    for (size_t i = 0; i < half; i++)
        buf[i] = pat(100 + rank, i);
    CALL(PIO_Put(win, PIO_SELF, peer, 0, buf, half));
    PIO_Request rq;
    uint8_t *tail = malloc(half);
    for (size_t i = 0; i < half; i++)
        tail[i] = pat(100 + rank, half + i);
    /* the second half goes through a handle for the window's number, as a
     * service puts into a client's buffer (PIO_Win_number, PIO_Win_remote) */
    PIO_Win byno = NULL;
    if (PIO_Win_number(win) != 0)
        FAIL("the first window's number is %d, not 0", PIO_Win_number(win));
    if (PIO_Win_remote(-1, &byno) != PIO_EINVAL)
        FAIL("PIO_Win_remote took a negative number");
    CALL(PIO_Win_remote(PIO_Win_number(win), &byno));
    if (PIO_Win_number(byno) != -1)
        FAIL("a remote handle has a number of ours: %d", PIO_Win_number(byno));
    CALL(PIO_Iput(byno, PIO_SELF, peer, half, tail, half, &rq));
    CALL(PIO_Win_free(&byno)); /* the put in flight keeps the number */
    if (byno)
        FAIL("PIO_Win_free left the remote handle set");
    PIO_Status st;
    CALL(PIO_Wait(&rq, 60000, &st));
    if (st.bytes != half)
        FAIL("PIO_Iput's status says %zu bytes, not %zu", (size_t)st.bytes, half);
    CALL(PIO_Win_flush(win, PIO_SELF, PIO_ANY_PROCESS));
    barrier();
    int from = (rank + size - 1) % size;
    check(mem, 2 * half, 100 + from, 0, "what was put");
    barrier();
    CALL(PIO_Win_free(&win));
    printf("OK rw rank %d: %d gets up to %zu bytes, %zu put\n", rank, n, max, 2 * half);
    free(tail);
    free(mem);
    free(buf);
}

static void mode_atomics(int n, int m)
{
    /* word 0: fetch-and-add; word 1: the lock; word 2: the counter it guards */
    uint64_t *mem = calloc(3, sizeof(uint64_t));
    PIO_Win win;
    CALL(PIO_Win_create(mem, 3 * sizeof(uint64_t), win_access(PIO_WIN_APP), &win));
    barrier();
    uint64_t old, seen_max = 0;
    for (int i = 0; i < n; i++) {
        CALL(PIO_Fetch_and_add(win, PIO_SELF, 0, 0, 1, &old));
        if (old + 1 > seen_max)
            seen_max = old + 1;
    }
    barrier();
    if (rank == 0 && mem[0] != (uint64_t)size * (uint64_t)n)
        FAIL("fetch-and-add: the word is %" PRIu64 ", not %d x %d", mem[0], size, n);
    /* a lock (word 1: 0 free, rank+1 held) protecting a plain counter (word 2) */
    int spins = 0;
    for (int i = 0; i < m; i++) {
        for (;;) {
            CALL(PIO_Compare_and_swap(win, PIO_SELF, 0, 8, 0, (uint64_t)rank + 1, &old));
            if (old == 0)
                break;
            spins++;
        }
        uint64_t c;
        CALL(PIO_Get(win, PIO_SELF, 0, 16, &c, 8));
        c++;
        CALL(PIO_Put(win, PIO_SELF, 0, 16, &c, 8));
        CALL(PIO_Compare_and_swap(win, PIO_SELF, 0, 8, (uint64_t)rank + 1, 0, &old));
        if (old != (uint64_t)rank + 1)
            FAIL("the lock was %" PRIu64 " while rank %d held it", old, rank);
    }
    barrier();
    if (rank == 0) {
        if (mem[2] != (uint64_t)size * (uint64_t)m)
            FAIL("the counter under the lock is %" PRIu64 ", not %d x %d", mem[2], size, m);
        printf("OK atomics: fetch-and-add sum %" PRIu64 " = %d x %d; locked counter %" PRIu64
               " = %d x %d\n",
               mem[0], size, n, mem[2], size, m);
    }
    barrier();
    CALL(PIO_Win_free(&win));
    printf("OK atomics rank %d: %d spins on the lock\n", rank, spins);
    free(mem);
}

static void mode_freed(size_t bytes)
{
    uint8_t *mem = rank == 0 ? malloc(bytes) : NULL, *buf = rank == 1 ? malloc(bytes) : NULL;
    if (rank == 0)
        memset(mem, 0x5a, bytes);
    PIO_Win win;
    CALL(PIO_Win_create(mem, rank == 0 ? bytes : 0, win_access(PIO_WIN_APP), &win));
    if (rank == 1) { /* learn the window first, then start the long get */
        uint8_t one;
        CALL(PIO_Get(win, PIO_SELF, 0, 0, &one, 1));
    }
    barrier();
    if (rank == 0) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
        CALL(PIO_Win_free(&win)); /* while process 1's get is in flight */
        memset(mem, 0xEE, bytes);
        free(mem);
        printf("OK freed rank 0: window freed\n");
    } else if (rank == 1) {
        PIO_Request rq;
        CALL(PIO_Iget(win, PIO_SELF, 0, 0, buf, bytes, &rq));
        int rc = PIO_Wait(&rq, 60000, NULL);
        if (rc != PIO_OK && rc != PIO_EWINFREED)
            FAIL("the get in flight ended with %s", PIO_Errname(rc));
        if (rc == PIO_OK)
            for (size_t i = 0; i < bytes; i++)
                if (buf[i] != 0x5a)
                    FAIL("the get said PIO_OK but byte %zu is %#x", i, buf[i]);
        int rc2 = PIO_Get(win, PIO_SELF, 0, 0, buf, 8);
        if (rc2 != PIO_EWINFREED)
            FAIL("a get after the free ended with %s, not PIO_EWINFREED", PIO_Errname(rc2));
        printf("OK freed rank 1: the get in flight ended with %s, the next with %s\n",
               PIO_Errname(rc), PIO_Errname(rc2));
        CALL(PIO_Win_free(&win));
    } else {
        CALL(PIO_Win_free(&win));
    }
    barrier();
    free(buf);
}

static void mode_serve(size_t bytes)
{
    uint8_t *mem = malloc(bytes);
    for (size_t i = 0; i < bytes; i++)
        mem[i] = pat(7, i);
    PIO_Win win;
    CALL(PIO_Win_create(mem, bytes, win_access(PIO_WIN_ANYONE), &win)); /* for any client */
    printf("serving %zu bytes\n", bytes);
    fflush(stdout);
    char done[8];
    PIO_Status st;
    CALL(PIO_Recv(PIO_ANY_PARTNER, PIO_ANY_PROCESS, TAG_DONE, done, PIO_BYTE, sizeof(done),
                  PIO_WAIT_FOREVER, PIO_BLOCKING, &st));
    uint64_t w0;
    memcpy(&w0, mem, 8);
    CALL(PIO_Win_free(&win));
    printf("OK serve: word 0 is %" PRIu64 "\n", w0);
    free(mem);
}

static void mode_client(const char *server, size_t max)
{
    int srv;
    CALL(PIO_Addpartner(server, &srv));
    PIO_Win win;
    CALL(PIO_Win_create(NULL, 0, PIO_WIN_APP, &win)); /* window 0 names the server's window 0 */
    uint8_t *buf = malloc(max);
    int n = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t s = 1; s <= max; s = next_size(s, max)) {
        uint64_t off = 8 + (s * 13) % 4089;
        if (off + s > max)
            off = max - s;
        CALL(PIO_Get(win, srv, 0, off, buf, s));
        check(buf, s, 7, off, "remote get");
        n++;
        if (s == max)
            break;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    /* put then get back */
    for (size_t i = 0; i < 65536 && i < max; i++)
        buf[i] = pat(9, i);
    size_t pl = max < 65536 ? max : 65536;
    CALL(PIO_Put(win, srv, 0, max - pl, buf, pl));
    memset(buf, 0, pl);
    CALL(PIO_Get(win, srv, 0, max - pl, buf, pl));
    check(buf, pl, 9, 0, "put, got back");
    /* word 0: make it 1000 + the adds */
    uint64_t old, zero = 0;
    CALL(PIO_Put(win, srv, 0, 0, &zero, 8));
    for (int i = 0; i < 1000; i++)
        CALL(PIO_Fetch_and_add(win, srv, 0, 0, 1, &old));
    CALL(PIO_Compare_and_swap(win, srv, 0, 0, 1000, 4242, &old));
    if (old != 1000)
        FAIL("after 1000 fetch-and-adds word 0 was %" PRIu64, old);
    CALL(PIO_Send(srv, 0, TAG_DONE, PIO_DYNAMIC, "done", PIO_BYTE, 5, PIO_BLOCKING));
    CALL(PIO_Win_free(&win));
    printf("OK client: %d gets up to %zu bytes in %.3f s, put/get back, 1000 fetch-and-adds\n", n,
           max, (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
    free(buf);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void mode_lat(const char *server, size_t max)
{
    int srv;
    CALL(PIO_Addpartner(server, &srv));
    PIO_Win win;
    CALL(PIO_Win_create(NULL, 0, PIO_WIN_APP, &win));
    uint8_t *buf = malloc(max);
    CALL(PIO_Get(win, srv, 0, 0, buf, 8)); /* learn the window, connect */
    for (size_t s = 8; s <= max; s *= 4) {
        /* batches of about 20 ms each, the median of 5 */
        int n = 1;
        struct timespec t0, t1;
        for (;;) {
            clock_gettime(CLOCK_MONOTONIC, &t0);
            for (int i = 0; i < n; i++)
                CALL(PIO_Get(win, srv, 0, 0, buf, s));
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double t = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
            if (t > 0.02 || n > 100000)
                break;
            n *= 4;
        }
        double us[5];
        for (int b = 0; b < 5; b++) {
            clock_gettime(CLOCK_MONOTONIC, &t0);
            for (int i = 0; i < n; i++)
                CALL(PIO_Get(win, srv, 0, 0, buf, s));
            clock_gettime(CLOCK_MONOTONIC, &t1);
            us[b] =
                ((double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-3) /
                n;
        }
        qsort(us, 5, sizeof(double), cmp_d);
        printf("lat %zu %.3f\n", s, us[2]);
        if (s > max / 4)
            break;
    }
    CALL(PIO_Send(srv, 0, TAG_DONE, PIO_DYNAMIC, "done", PIO_BYTE, 5, PIO_BLOCKING));
    CALL(PIO_Win_free(&win));
    printf("OK lat\n");
    free(buf);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 3) {
        fprintf(stderr, "usage: pio-win rw|atomics|freed|serve|client ARGS\n");
        return 2;
    }
    rank = env_int("OMPI_COMM_WORLD_RANK", "PIO_TEST_RANK", 0);
    size = env_int("OMPI_COMM_WORLD_SIZE", "PIO_TEST_SIZE", 1);
    const char *app = getenv("PIO_APP") ? getenv("PIO_APP") : "win";
    CALL(PIO_Init(app, rank, size));
    CALL(PIO_Addpartner(app, &self));
    const char *m = argv[1];
    if (strcmp(m, "rw") == 0)
        mode_rw((size_t)strtoull(argv[2], NULL, 0));
    else if (strcmp(m, "atomics") == 0 && argc > 3)
        mode_atomics(atoi(argv[2]), atoi(argv[3]));
    else if (strcmp(m, "freed") == 0)
        mode_freed((size_t)strtoull(argv[2], NULL, 0));
    else if (strcmp(m, "serve") == 0)
        mode_serve((size_t)strtoull(argv[2], NULL, 0));
    else if (strcmp(m, "lat") == 0 && argc > 3)
        mode_lat(argv[2], (size_t)strtoull(argv[3], NULL, 0));
    else if (strcmp(m, "client") == 0 && argc > 3)
        mode_client(argv[2], (size_t)strtoull(argv[3], NULL, 0));
    else {
        fprintf(stderr, "pio-win: unknown mode %s\n", m);
        return 2;
    }
    PIO_Exit();
    return 0;
}
