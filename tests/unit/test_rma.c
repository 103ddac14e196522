/* test_rma.c - the conformance suite of one-sided backends (transport/rma.h)
 * between processes: get, put, atomics, flush, loss.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Every case runs on the backend $PIO_TEST_RMA names (default: the first
 * listed), and the case every_backend runs the whole suite again, in a
 * child, for each other listed backend: each backend must pass it.
 * Every case forks a target process that registers memory, publishes its
 * worker address and key over a socketpair, and then blocks in read(2) on
 * that socket: it never calls the library again while the case works on its
 * memory (only the context's progress thread serves it). Commands on the
 * socket let the case ask the target to check its own memory afterwards, so
 * "it arrived" is judged by the owner, not by reading back through the
 * backend. Worker processes (fadd, the lock) are forked before this
 * process starts UCX. Each case runs twice: over UCX_TLS=tcp (get and
 * atomics emulated with active messages, served by the target's progress
 * thread) and with the transports UCX picks by default (shared memory).
 * Children never use cmocka: they report through their exit status.
 */
#include "pio.h"
#include "transport/rma.h"
#include "common/tsan.h"
#include "tests/lib/unit.h"

#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MIB         (1024u * 1024u)
#define TARGET_LEN  (64u * MIB + 4096u)
#define WAIT_MS     30000
#define FADD_PROCS  8
#define FADD_EACH   10000
#define FADD_WINDOW 32
#define LOCK_PROCS  4
#define LOCK_EACH   150

enum { CMD_EXIT = 1, CMD_CHECK, CMD_READ64, CMD_FILL, CMD_SET64 };

struct cmd {
    uint32_t op, seed;
    uint64_t off, len;
};

/* what the target publishes */
struct target {
    pid_t pid;
    int sock;
    uint8_t addr[4096];
    size_t addr_len;
    uint8_t rkey[4096];
    size_t rkey_len;
    uint64_t base;
};

static const struct pio_rma_ops *R;

/* Under TSan the target's own reads and writes of its window (the commands
 * below) follow the peer's puts by a flush and a message over the
 * socketpair, between processes, which TSan cannot see: every byte would be
 * a (suppressed, UCX is in the other stack) race report, and a report costs
 * a search through every address reported so far, so a 16 MiB fill took
 * minutes. The target tells TSan to ignore its accesses there; everything
 * else in this file stays checked. */

static uint8_t pat(uint32_t seed, uint64_t i)
{
    uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull + seed;
    return (uint8_t)((x >> 29) ^ (x >> 47) ^ (i >> 12));
}

static int xfer(int fd, void *buf, size_t len, int out)
{
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t r = out ? write(fd, p, len) : read(fd, p, len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        len -= (size_t)r;
    }
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the target process ---- */

static int target_main(int sock)
{
    struct pio_rma *x;
    struct pio_rma_mem *m;
    void *rkey;
    size_t rlen;
    const void *a;
    size_t alen;
    uint8_t *buf = aligned_alloc(4096, TARGET_LEN);
    if (!buf)
        return 10;
    /* filled before UCX's threads exist: under TSan their writes into the
     * window then follow ours (else each put is a race report, slow enough
     * to trip UCX's keepalive) */
    for (uint64_t i = 0; i < TARGET_LEN; i++)
        buf[i] = pat(1, i);
    if (R->init(&x) != PIO_OK || R->address(x, &a, &alen) != PIO_OK)
        return 10;
    if (R->mem_register(x, buf, TARGET_LEN, &m, &rkey, &rlen) != PIO_OK)
        return 11;
    uint64_t base = (uint64_t)(uintptr_t)buf;
    if (xfer(sock, &alen, sizeof(alen), 1) || xfer(sock, (void *)a, alen, 1) ||
        xfer(sock, &rlen, sizeof(rlen), 1) || xfer(sock, rkey, rlen, 1) ||
        xfer(sock, &base, sizeof(base), 1))
        return 12;
    free(rkey);
    struct cmd c;
    while (xfer(sock, &c, sizeof(c), 0) == 0) { /* blocked here: calls nothing */
        uint64_t reply = 0;
        if (c.op == CMD_EXIT)
            break;
        if (c.off + (c.op == CMD_SET64 ? 8 : c.len) > TARGET_LEN)
            return 13;
        PIO_TSAN_IGNORE_BEGIN();
        if (c.op == CMD_CHECK) { /* reply: 0, or 1 + the first wrong offset */
            for (uint64_t i = 0; i < c.len && !reply; i++)
                if (buf[c.off + i] != pat(c.seed, c.off + i))
                    reply = 1 + c.off + i;
        } else if (c.op == CMD_READ64) {
            memcpy(&reply, buf + c.off, 8);
        } else if (c.op == CMD_SET64) { /* len is the value */
            memcpy(buf + c.off, &c.len, 8);
        } else if (c.op == CMD_FILL) {
            for (uint64_t i = 0; i < c.len; i++)
                buf[c.off + i] = pat(c.seed, c.off + i);
        }
        PIO_TSAN_IGNORE_END();
        if (xfer(sock, &reply, sizeof(reply), 1))
            return 14;
    }
    R->mem_deregister(m);
    R->fini(x);
    free(buf);
    return 0;
}

static void target_start(struct target *t)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    t->pid = fork();
    assert_true(t->pid >= 0);
    if (t->pid == 0) {
        close(sv[0]);
        _exit(target_main(sv[1]));
    }
    close(sv[1]);
    t->sock = sv[0];
    assert_int_equal(xfer(t->sock, &t->addr_len, sizeof(t->addr_len), 0), 0);
    assert_true(t->addr_len > 0 && t->addr_len <= sizeof(t->addr));
    assert_int_equal(xfer(t->sock, t->addr, t->addr_len, 0), 0);
    assert_int_equal(xfer(t->sock, &t->rkey_len, sizeof(t->rkey_len), 0), 0);
    assert_true(t->rkey_len > 0 && t->rkey_len <= sizeof(t->rkey));
    assert_int_equal(xfer(t->sock, t->rkey, t->rkey_len, 0), 0);
    assert_int_equal(xfer(t->sock, &t->base, sizeof(t->base), 0), 0);
}

static uint64_t target_cmd(struct target *t, uint32_t op, uint64_t off, uint64_t len, uint32_t seed)
{
    struct cmd c = {.op = op, .seed = seed, .off = off, .len = len};
    uint64_t reply = ~0ull;
    assert_int_equal(xfer(t->sock, &c, sizeof(c), 1), 0);
    assert_int_equal(xfer(t->sock, &reply, sizeof(reply), 0), 0);
    return reply;
}

static void target_stop(struct target *t)
{
    struct cmd c = {.op = CMD_EXIT};
    int st;
    xfer(t->sock, &c, sizeof(c), 1);
    close(t->sock);
    assert_int_equal(waitpid(t->pid, &st, 0), t->pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("the target process ended with status %#x", st);
}

/* ---- the case's side ---- */

struct side {
    struct pio_rma *x;
    struct pio_rma_ep *ep;
    struct pio_rma_rkey *rk;
};

static int side_open(struct side *s, const struct target *t)
{
    int rc = R->init(&s->x);
    if (rc == PIO_OK)
        rc = R->connect(s->x, t->addr, t->addr_len, &s->ep);
    if (rc == PIO_OK)
        rc = R->rkey_unpack(s->ep, t->rkey, t->rkey_len, &s->rk);
    return rc;
}

static void side_close(struct side *s)
{
    R->rkey_release(s->rk);
    R->disconnect(s->ep);
    R->fini(s->x);
}

/* Blocking forms: post with (pio_rma_wait_cb, w), then wait for the callback.
 * After a time-out w is left alone (the case fails; its process ends). */
static int finish(int rc, struct pio_rma_wait *w)
{
    if (rc == PIO_OK)
        rc = pio_rma_wait_for(w, WAIT_MS);
    if (rc != PIO_ETIMEDOUT)
        pio_rma_wait_destroy(w);
    return rc;
}

static int get_b(struct side *s, void *dst, size_t len, uint64_t raddr)
{
    struct pio_rma_wait w;
    pio_rma_wait_init(&w);
    return finish(R->get(s->ep, dst, len, raddr, s->rk, pio_rma_wait_cb, &w), &w);
}

static int put_b(struct side *s, const void *src, size_t len, uint64_t raddr)
{
    struct pio_rma_wait w;
    pio_rma_wait_init(&w);
    return finish(R->put(s->ep, src, len, raddr, s->rk, pio_rma_wait_cb, &w), &w);
}

static int flush_b(struct side *s)
{
    struct pio_rma_wait w;
    pio_rma_wait_init(&w);
    return finish(R->flush(s->ep, pio_rma_wait_cb, &w), &w);
}

static int cas_b(struct side *s, uint64_t raddr, uint64_t cmp, uint64_t swp, uint64_t *old)
{
    struct pio_rma_wait w;
    pio_rma_wait_init(&w);
    return finish(R->cas64(s->ep, raddr, s->rk, cmp, swp, old, pio_rma_wait_cb, &w), &w);
}

static int fadd_b(struct side *s, uint64_t raddr, uint64_t add, uint64_t *old)
{
    struct pio_rma_wait w;
    pio_rma_wait_init(&w);
    return finish(R->fadd64(s->ep, raddr, s->rk, add, old, pio_rma_wait_cb, &w), &w);
}

#define RC(expr, want)                                                                             \
    do {                                                                                           \
        int rc__ = (expr);                                                                         \
        if (rc__ != (want))                                                                        \
            fail_msg("%s: %s, want %s", #expr, PIO_Errname(rc__), PIO_Errname(want));              \
    } while (0)

/* Each case sets the transports before anything forks or starts UCX. */
/* the backend under test: $PIO_TEST_RMA, else the first listed */
static const struct pio_rma_ops *backend(void)
{
    const char *want = getenv("PIO_TEST_RMA");
    for (const struct pio_rma_ops *const *b = pio_rma_list(); *b; b++)
        if ((!want || strcmp((*b)->name, want) == 0) && pio_rma_complete(*b))
            return *b;
    return NULL;
}

static int setup_tcp(void **state)
{
    (void)state;
    setenv("UCX_TLS", "tcp", 1);
    R = backend();
    return R ? 0 : -1;
}

static int setup_default(void **state)
{
    (void)state;
    R = backend();
    return R ? 0 : -1;
}

/* Every listed backend is complete, one of them serves windows (get, put
 * and atomics), and each other one passes this suite (in a child running
 * every case with PIO_TEST_RMA set to it). */
static void test_every_backend(void **state)
{
    (void)state;
    int n = 0;
    for (const struct pio_rma_ops *const *b = pio_rma_list(); *b; b++, n++) {
        assert_true(pio_rma_complete(*b));
        assert_non_null((*b)->name);
        if (b == pio_rma_list() || getenv("PIO_TEST_RMA"))
            continue; /* the first one is what the other cases run on; a
                       * child checks only its own backend */
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            setenv("PIO_TEST_RMA", (*b)->name, 1);
            execl("/proc/self/exe", "test_rma", (char *)NULL);
            _exit(127);
        }
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail_msg("backend %s fails the one-sided conformance suite", (*b)->name);
    }
    assert_true(n >= 1);
    const struct pio_rma_ops *w = pio_rma_pick(PIO_RMA_CAP_GETPUT | PIO_RMA_CAP_ATOMICS);
    assert_non_null(w);
    setenv("PIO_RMA", "no-such-backend", 1);
    assert_null(pio_rma_pick(PIO_RMA_CAP_GETPUT));
    setenv("PIO_RMA", w->name, 1);
    assert_ptr_equal(pio_rma_pick(PIO_RMA_CAP_GETPUT), w);
    unsetenv("PIO_RMA");
}

/* ---- the checks ---- */

/* get and put of 1 B .. 64 MiB at odd offsets: the data got is the owner's,
 * and the data put is in the owner's memory (the owner checks it). */
static void check_get_put_sizes(void **state)
{
    (void)state;
    static const size_t sizes[] = {1, 7, 8, 4093, 65536, 65537, MIB + 3, 16 * MIB, 64 * MIB};
    struct target t;
    struct side s = {0};
    target_start(&t);
    RC(side_open(&s, &t), PIO_OK);
    uint8_t *buf = malloc(64 * MIB + 64);
    assert_non_null(buf);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t len = sizes[i];
        uint64_t off = (i * 4099) % (TARGET_LEN - len);
        memset(buf, 0, len);
        double t0 = now_s();
        RC(get_b(&s, buf, len, t.base + off), PIO_OK);
        double t1 = now_s();
        for (size_t k = 0; k < len; k++)
            if (buf[k] != pat(1, off + k))
                fail_msg("get of %zu bytes at %llu: byte %zu wrong", len, (unsigned long long)off,
                         k);
        uint32_t seed = 100 + (uint32_t)i;
        for (size_t k = 0; k < len; k++)
            buf[k] = pat(seed, off + k);
        double t2 = now_s();
        RC(put_b(&s, buf, len, t.base + off), PIO_OK);
        RC(flush_b(&s), PIO_OK);
        double t3 = now_s();
        uint64_t bad = target_cmd(&t, CMD_CHECK, off, len, seed);
        if (bad)
            fail_msg("put of %zu bytes at %llu: the owner has byte %llu wrong", len,
                     (unsigned long long)off, (unsigned long long)(bad - 1));
        if (len >= MIB)
            print_message("%8zu bytes: get %.1f MB/s, put+flush %.1f MB/s\n", len,
                          (double)len / (t1 - t0) / 1e6, (double)len / (t3 - t2) / 1e6);
        target_cmd(&t, CMD_FILL, off, len, 1); /* back to the owner's pattern */
    }
    RC(get_b(&s, buf, 0, t.base), PIO_OK); /* nothing to do: done at once */
    free(buf);
    side_close(&s);
    target_stop(&t);
}

struct fadd_win {
    pthread_mutex_t mtx;
    pthread_cond_t cv;
    int inflight, bad;
};

static void fadd_cb(void *arg, int status)
{
    struct fadd_win *w = arg;
    pthread_mutex_lock(&w->mtx);
    w->inflight--;
    if (status != PIO_OK)
        w->bad++;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mtx);
}

/* One fadd worker: FADD_EACH fetch-and-adds of 1, FADD_WINDOW in flight,
 * each old value stored in olds[]. Exit status: 0 or what failed. */
static int fadd_worker(const struct target *t, uint64_t *olds)
{
    struct side s = {0};
    if (side_open(&s, t) != PIO_OK)
        return 20;
    struct fadd_win w = {.inflight = 0};
    pthread_mutex_init(&w.mtx, NULL);
    pthread_cond_init(&w.cv, NULL);
    for (int i = 0; i < FADD_EACH; i++) {
        pthread_mutex_lock(&w.mtx);
        while (w.inflight >= FADD_WINDOW)
            pthread_cond_wait(&w.cv, &w.mtx);
        w.inflight++;
        pthread_mutex_unlock(&w.mtx);
        int rc = R->fadd64(s.ep, t->base + 8, s.rk, 1, &olds[i], fadd_cb, &w);
        if (rc != PIO_OK)
            return 21;
    }
    pthread_mutex_lock(&w.mtx);
    while (w.inflight > 0)
        pthread_cond_wait(&w.cv, &w.mtx);
    pthread_mutex_unlock(&w.mtx);
    if (w.bad)
        return 22;
    side_close(&s);
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* 8 processes x 10,000 fadd64 on one word: the owner's word ends at the
 * exact sum, and the old values the adders got are exactly 0 .. sum-1. */
static void check_fadd_8_processes(void **state)
{
    (void)state;
    struct target t;
    target_start(&t);
    uint64_t start = target_cmd(&t, CMD_READ64, 8, 8, 0);
    size_t n = (size_t)FADD_PROCS * FADD_EACH;
    uint64_t *olds = mmap(NULL, n * 8, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(olds != MAP_FAILED);
    pid_t pids[FADD_PROCS];
    double t0 = now_s();
    for (int p = 0; p < FADD_PROCS; p++) {
        pids[p] = fork();
        assert_true(pids[p] >= 0);
        if (pids[p] == 0)
            _exit(fadd_worker(&t, olds + (size_t)p * FADD_EACH));
    }
    for (int p = 0; p < FADD_PROCS; p++) {
        int st;
        assert_int_equal(waitpid(pids[p], &st, 0), pids[p]);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail_msg("fadd process %d ended with status %#x", p, st);
    }
    double dt = now_s() - t0;
    uint64_t end = target_cmd(&t, CMD_READ64, 8, 8, 0);
    print_message("%zu fadd64 from %d processes in %.2f s (%.0f/s)\n", n, FADD_PROCS, dt,
                  (double)n / dt);
    assert_int_equal(end - start, n);
    qsort(olds, n, 8, cmp_u64);
    for (size_t i = 0; i < n; i++)
        if (olds[i] != start + i)
            fail_msg("the old values are not each of start..start+%zu once: #%zu is %llu", n, i,
                     (unsigned long long)(olds[i] - start));
    munmap(olds, n * 8);
    target_stop(&t);
}

/* One lock worker: LOCK_EACH times take the lock (cas64 0 -> id), add one
 * to a plain counter with get and put, release (cas64 id -> 0). */
static int lock_worker(const struct target *t, uint64_t id, uint64_t lock, uint64_t counter)
{
    struct side s = {0};
    if (side_open(&s, t) != PIO_OK)
        return 30;
    for (int i = 0; i < LOCK_EACH; i++) {
        uint64_t old = 1;
        for (int spins = 0; old != 0; spins++) {
            if (cas_b(&s, lock, 0, id, &old) != PIO_OK)
                return 31;
            if (old != 0 && spins > 200000)
                return 32;
        }
        uint64_t v = 0;
        if (get_b(&s, &v, 8, counter) != PIO_OK)
            return 33;
        v++;
        if (put_b(&s, &v, 8, counter) != PIO_OK || flush_b(&s) != PIO_OK)
            return 34;
        if (cas_b(&s, lock, id, 0, &old) != PIO_OK)
            return 35;
        if (old != id)
            return 36; /* someone else held "our" lock */
    }
    side_close(&s);
    return 0;
}

/* cas64 as a lock around a read-modify-write of a plain word: no update is
 * lost, and the lock is free at the end. */
static void check_cas_lock(void **state)
{
    (void)state;
    struct target t;
    target_start(&t);
    uint64_t lock = 64, counter = 4096; /* offsets: different cache lines */
    pid_t pids[LOCK_PROCS];
    target_cmd(&t, CMD_SET64, lock, 0, 0);
    target_cmd(&t, CMD_SET64, counter, 0, 0);
    assert_int_equal(target_cmd(&t, CMD_READ64, lock, 8, 0), 0);
    assert_int_equal(target_cmd(&t, CMD_READ64, counter, 8, 0), 0);
    for (int p = 0; p < LOCK_PROCS; p++) {
        pids[p] = fork();
        assert_true(pids[p] >= 0);
        if (pids[p] == 0)
            _exit(lock_worker(&t, (uint64_t)p + 1, t.base + lock, t.base + counter));
    }
    for (int p = 0; p < LOCK_PROCS; p++) {
        int st;
        assert_int_equal(waitpid(pids[p], &st, 0), pids[p]);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail_msg("lock process %d ended with status %#x", p, st);
    }
    assert_int_equal(target_cmd(&t, CMD_READ64, counter, 8, 0), LOCK_PROCS * LOCK_EACH);
    assert_int_equal(target_cmd(&t, CMD_READ64, lock, 8, 0), 0);
    target_stop(&t);
}

struct count {
    pthread_mutex_t mtx;
    int n, bad;
};

static void count_cb(void *arg, int status)
{
    struct count *c = arg;
    pthread_mutex_lock(&c->mtx);
    c->n++;
    c->bad += status != PIO_OK;
    pthread_mutex_unlock(&c->mtx);
}

/* 2000 puts posted without waiting, then one flush: when its callback runs,
 * every put is in the owner's memory (checked by the owner). */
static void check_flush(void **state)
{
    (void)state;
    enum { N = 2000, PIECE = 1000 };
    struct target t;
    struct side s = {0};
    target_start(&t);
    RC(side_open(&s, &t), PIO_OK);
    uint8_t *src = malloc((size_t)N * PIECE);
    assert_non_null(src);
    for (size_t k = 0; k < (size_t)N * PIECE; k++)
        src[k] = pat(9, 12345 + k);
    struct count c = {.n = 0};
    pthread_mutex_init(&c.mtx, NULL);
    for (int i = 0; i < N; i++)
        RC(R->put(s.ep, src + (size_t)i * PIECE, PIECE, t.base + 12345 + (uint64_t)i * PIECE, s.rk,
                  count_cb, &c),
           PIO_OK);
    RC(flush_b(&s), PIO_OK);
    uint64_t bad = target_cmd(&t, CMD_CHECK, 12345, (uint64_t)N * PIECE, 9);
    if (bad)
        fail_msg("after the flush the owner has byte %llu wrong", (unsigned long long)(bad - 1));
    pthread_mutex_lock(&c.mtx); /* every put's callback ran, each once, each OK */
    assert_int_equal(c.n, N);
    assert_int_equal(c.bad, 0);
    pthread_mutex_unlock(&c.mtx);
    free(src);
    side_close(&s);
    target_stop(&t);
}

static double proc_cpu_s(pid_t pid)
{
    char path[64], line[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *ok = fgets(line, sizeof(line), f);
    fclose(f);
    char *p = ok ? strrchr(line, ')') : NULL;
    unsigned long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* The owner sleeps in read(2) and never calls the library: gets, puts and
 * atomics on its memory still complete (its progress thread serves them),
 * and while nothing is asked of it, it uses no CPU (that thread sleeps on
 * the event fd, it does not spin). */
static void check_target_sleeps(void **state)
{
    (void)state;
    struct target t;
    struct side s = {0};
    target_start(&t); /* from here on the target is blocked in read() */
    RC(side_open(&s, &t), PIO_OK);
    uint8_t *buf = malloc(MIB);
    assert_non_null(buf);
    RC(get_b(&s, buf, MIB, t.base + 777), PIO_OK);
    for (size_t k = 0; k < MIB; k++)
        if (buf[k] != pat(1, 777 + k))
            fail_msg("byte %zu of the get is wrong", k);
    uint64_t old = 0;
    RC(fadd_b(&s, t.base + 4096, 5, &old), PIO_OK);
    uint64_t w0;
    memcpy(&w0,
           (uint8_t[8]){pat(1, 4096), pat(1, 4097), pat(1, 4098), pat(1, 4099), pat(1, 4100),
                        pat(1, 4101), pat(1, 4102), pat(1, 4103)},
           8);
    assert_int_equal(old, w0);
    RC(cas_b(&s, t.base + 4096, w0 + 5, 42, &old), PIO_OK);
    assert_int_equal(old, w0 + 5);
    RC(get_b(&s, &old, 8, t.base + 4096), PIO_OK);
    assert_int_equal(old, 42);
    /* idle: the target's whole process should use (almost) no CPU */
    double c0 = proc_cpu_s(t.pid);
    struct timespec one = {1, 0};
    nanosleep(&one, NULL);
    double c1 = proc_cpu_s(t.pid);
    assert_true(c0 >= 0 && c1 >= 0);
    print_message("idle target used %.3f s of CPU in 1 s\n", c1 - c0);
    if (c1 - c0 > 0.2)
        fail_msg("an idle target used %.2f s of CPU in 1 s: its progress thread spins", c1 - c0);
    RC(get_b(&s, buf, 4096, t.base), PIO_OK); /* and wakes up for the next request */
    assert_int_equal(buf[100], pat(1, 100));
    free(buf);
    side_close(&s);
    target_stop(&t);
}

/* A target that has exited: operations end with an error (PIO_EGONE),
 * through the call or its callback, within seconds, never a hang. */
static void check_peer_exited(void **state)
{
    (void)state;
    struct target t;
    struct side s = {0};
    target_start(&t);
    RC(side_open(&s, &t), PIO_OK);
    uint8_t buf[64];
    RC(get_b(&s, buf, sizeof(buf), t.base), PIO_OK); /* connected and working */
    kill(t.pid, SIGKILL);
    int st;
    assert_int_equal(waitpid(t.pid, &st, 0), t.pid);
    close(t.sock);
    double t0 = now_s();
    int rc = PIO_OK, tries = 0;
    while (rc == PIO_OK && now_s() - t0 < 20) {
        uint64_t old;
        rc = get_b(&s, buf, sizeof(buf), t.base);
        if (rc == PIO_OK)
            rc = fadd_b(&s, t.base + 8, 1, &old);
        if (rc == PIO_OK)
            rc = flush_b(&s);
        tries++;
    }
    double dt = now_s() - t0;
    print_message("after the peer died: %s after %.2f s (%d rounds)\n", PIO_Errname(rc), dt, tries);
    if (rc == PIO_OK)
        fail_msg("every operation still succeeds %.1f s after the peer died", dt);
    assert_int_equal(rc, PIO_EGONE);
    RC(get_b(&s, buf, 8, t.base), PIO_EGONE); /* and stays gone, at once */
    side_close(&s);
}

/* The line of describe's text that starts with "  name". */
static void describe_line(const char *text, const char *name, char *out, size_t n)
{
    char key[32];
    snprintf(key, sizeof(key), "\n  %s ", name);
    const char *p = strstr(text, key);
    if (!p) {
        fail_msg("describe has no line for %s:\n%s", name, text);
        return; /* not reached: for the compiler, which cannot know */
    }
    p += 2;
    size_t len = strcspn(p, "\n");
    snprintf(out, n, "%.*s", (int)len, p);
}

/* describe names UCX, the resources, and a transport for every operation;
 * under UCX_TLS=tcp the stream goes over tcp and get/put and atomics are
 * said to be emulated (tcp has no native one-sided operations). */
static void check_describe(void **state)
{
    (void)state;
    struct pio_rma *x;
    RC(R->init(&x), PIO_OK);
    char *text = NULL, line[512];
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    assert_non_null(m);
    RC(R->describe(x, m), PIO_OK);
    fclose(m);
    R->fini(x);
    assert_non_null(strstr(text, "UCX 1."));
    assert_non_null(strstr(text, "resource 0"));
    assert_non_null(strstr(text, "operations to another process on this host:"));
    const char *tls = getenv("UCX_TLS");
    int tcp = tls && strcmp(tls, "tcp") == 0;
    describe_line(text, "stream", line, sizeof(line));
    assert_non_null(strchr(line, '/')); /* "stream   tl/device" */
    if (tcp && !strstr(line, "tcp/"))
        fail_msg("UCX_TLS=tcp, but describe says: %s", line);
    describe_line(text, "get/put", line, sizeof(line));
    if (tcp && !strstr(line, "emulated"))
        fail_msg("UCX_TLS=tcp, but describe says: %s", line);
    describe_line(text, "atomics", line, sizeof(line));
    if (tcp && !strstr(line, "emulated"))
        fail_msg("UCX_TLS=tcp, but describe says: %s", line);
    free(text);
}

#define BOTH(fn)                                                                                   \
    cmocka_unit_test_setup(fn##_tcp, setup_tcp), cmocka_unit_test_setup(fn##_default, setup_default)
#define VARIANTS(fn)                                                                               \
    static void fn##_tcp(void **s)                                                                 \
    {                                                                                              \
        check_##fn(s);                                                                             \
    }                                                                                              \
    static void fn##_default(void **s)                                                             \
    {                                                                                              \
        check_##fn(s);                                                                             \
    }
VARIANTS(get_put_sizes)
VARIANTS(fadd_8_processes)
VARIANTS(cas_lock)
VARIANTS(flush)
VARIANTS(target_sleeps)
VARIANTS(peer_exited)
VARIANTS(describe)

static const struct CMUnitTest tests[] = {
    BOTH(get_put_sizes), BOTH(fadd_8_processes),
    BOTH(cas_lock),      BOTH(flush),
    BOTH(target_sleeps), BOTH(peer_exited),
    BOTH(describe),      cmocka_unit_test(test_every_backend),
};

PIO_UNIT_MAIN(tests)
