/* gas_rwmix.c - a seeded random mix of writes, reads, seeks, fstat and
 * ftruncate on one file, mirrored on a local model file; every read is
 * compared with the model.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Usage: gas_rwmix [--seed S] [--ops N] FILE MODEL
 *        gas_rwmix --pair [--seed S] [--rounds R] [--ops N] FILE MODEL
 * No PIO calls: plain system calls only, so that run under
 * LD_PRELOAD=libpgas.so with FILE a pgas: path it exercises libpgas's
 * write-behind and its read-your-writes rule. MODEL must be a plain local
 * path (libpgas passes it to the C library). Both are opened
 * O_RDWR|O_CREAT|O_TRUNC.
 *
 * One process (default): N operations (default 2000), each done on FILE and
 * then the same way on MODEL: pwrite, lseek+write, write at the position,
 * pread, lseek+read, read at the position, lseek SEEK_END (with an offset),
 * lseek SEEK_CUR, fstat's size, ftruncate growing or shrinking. Lengths run
 * from 1 byte to 200 KiB, offsets up to about 2 MiB, a quarter of them
 * close to a multiple of 64 KiB (the test bed's stripe unit), some at or
 * past the end (holes). Every return value is compared with the model's,
 * every byte read too. At the end the sizes and the whole file are
 * compared, and close must succeed.
 *
 * --pair: two processes of the host (fork before any open, so each makes
 * its own connection to the dispatcher), A the parent and B the child, and
 * R rounds (default 6) of N operations (default 150). In each round one of
 * them is the writer (A in even rounds, B in odd ones): it makes N writes
 * (pwrite, lseek+write, write, now and then an ftruncate) on FILE and on
 * MODEL, makes one round trip (fstat, whose size it checks), and sends the
 * other process, over a pipe, the ranges it wrote; the reader preads each
 * range, does N random reads, seeks and fstats, reads the whole file, and
 * answers; then the roles swap. Both processes mirror on the same MODEL
 * (each with its own descriptor and position). At the end each process
 * compares the whole file, closes it, and A prints the totals.
 *
 * Output on success: one line "gas_rwmix: ok seed=S ops=N writes=W
 * bytes=B size=Z" (--pair: "gas_rwmix: pair ok seed=S rounds=R ops=N
 * writes=W bytes=B size=Z"; W and B count both processes' write calls and
 * bytes). On the first difference: a line naming the seed, the process,
 * the operation's number and kind, its offset and length, what differed
 * (return value, or the first differing byte, its offset and both values)
 * and the command to repeat it; exit 1. Usage errors exit 2. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define STRIPE  (64 * 1024)
#define MAXLEN  (200 * 1024)         /* longest single write or read */
#define MAXFILE (2048 * 1024 + 4096) /* offsets stay below this */
#define MAXRANG 4096                 /* ranges one writer's batch may send */

struct range {
    int64_t off, len;
};

struct ctx {
    int fd, mfd;               /* FILE, MODEL */
    const char *who;           /* "" in one process mode, "A " or "B " */
    uint64_t seed, rng;        /* the command line's seed, the stream */
    long op;                   /* the current operation's number (from 1) */
    long nops, rounds;         /* the command line's, for the repeat line */
    int pair;                  /* --pair */
    long writes;               /* write calls on FILE */
    uint64_t wbytes;           /* their bytes */
    unsigned char *buf, *mbuf; /* FILE's and MODEL's read buffers */
    unsigned char *wbuf;       /* the data of a write */
    struct range rg[MAXRANG];  /* --pair: the ranges of this batch */
    long nrg;
};

static uint64_t rnd(struct ctx *c) /* splitmix64 */
{
    uint64_t z = (c->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void repeat_line(const struct ctx *c)
{
    if (c->pair)
        fprintf(stdout,
                "gas_rwmix: to repeat: gas_rwmix --pair --seed %" PRIu64
                " --rounds %ld --ops %ld FILE MODEL\n",
                c->seed, c->rounds, c->nops);
    else
        fprintf(stdout, "gas_rwmix: to repeat: gas_rwmix --seed %" PRIu64 " --ops %ld FILE MODEL\n",
                c->seed, c->nops);
    fflush(stdout);
}

/* fail: one line naming the seed, the process, the operation and what
 * differed; exit 1 */
static void fail(const struct ctx *c, const char *kind, int64_t off, int64_t len, const char *fmt,
                 ...) __attribute__((format(printf, 5, 6)));

static void fail(const struct ctx *c, const char *kind, int64_t off, int64_t len, const char *fmt,
                 ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    fprintf(stdout,
            "gas_rwmix: MISMATCH seed=%" PRIu64 " %sop %ld (%s) offset %" PRId64 " length %" PRId64
            ": %s\n",
            c->seed, c->who, c->op, kind, off, len, what);
    repeat_line(c);
    exit(1);
}

static int64_t model_size(const struct ctx *c)
{
    struct stat st;
    if (fstat(c->mfd, &st) != 0) {
        fprintf(stdout, "gas_rwmix: fstat of the model: %s\n", strerror(errno));
        exit(1);
    }
    return (int64_t)st.st_size;
}

static size_t pick_len(struct ctx *c)
{
    uint64_t r = rnd(c) % 100;
    if (r < 45)
        return 1 + rnd(c) % 64;
    if (r < 75)
        return 65 + rnd(c) % (8192 - 64);
    if (r < 95)
        return 8193 + rnd(c) % (72 * 1024 - 8192);
    return 72 * 1024 + 1 + rnd(c) % (MAXLEN - 72 * 1024);
}

/* pick_off: an offset for a write or read of a file of SIZE bytes */
static int64_t pick_off(struct ctx *c, int64_t size, size_t len)
{
    int64_t lim = size + STRIPE, o;
    if (lim > MAXFILE - (int64_t)len)
        lim = MAXFILE - (int64_t)len;
    uint64_t r = rnd(c) % 100;
    if (r < 25) { /* a few bytes around a stripe unit's start */
        o = (int64_t)(rnd(c) % (uint64_t)(lim / STRIPE + 1)) * STRIPE - 48 + (int64_t)(rnd(c) % 96);
    } else if (r < 35) {
        o = size;        /* append */
    } else if (r < 45) { /* across the end */
        o = size - (int64_t)(rnd(c) % (len + 1));
    } else {
        o = (int64_t)(rnd(c) % (uint64_t)(lim + 1));
    }
    if (o < 0)
        o = 0;
    if (o > lim)
        o = lim;
    return o;
}

static void fill(struct ctx *c, size_t len)
{
    uint64_t x = rnd(c) | 1;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c->wbuf[i] = (unsigned char)(x >> 24);
    }
}

/* same: FILE's answer N equals the model's M */
static void same(const struct ctx *c, const char *kind, int64_t off, int64_t len, int64_t n,
                 int64_t m, int err)
{
    if (n == m)
        return;
    if (n < 0)
        fail(c, kind, off, len, "failed (%s), the model returned %" PRId64, strerror(err), m);
    fail(c, kind, off, len, "returned %" PRId64 ", the model %" PRId64, n, m);
}

/* compare: the N bytes just read at OFF (-1: unknown, then at the model's
 * position before the read) equal the model's */
static void compare(const struct ctx *c, const char *kind, int64_t off, int64_t len, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (c->buf[i] != c->mbuf[i])
            fail(c, kind, off, len,
                 "first differing byte at offset %" PRId64 " (byte %zu of the read): got 0x%02x, "
                 "the model 0x%02x",
                 off + (int64_t)i, i, c->buf[i], c->mbuf[i]);
}

static void note_range(struct ctx *c, int64_t off, int64_t len)
{
    if (c->pair && c->nrg < MAXRANG)
        c->rg[c->nrg++] = (struct range){off, len};
}

/* ---- the operations ------------------------------------------------------ */

static void op_pwrite(struct ctx *c)
{
    size_t len = pick_len(c);
    int64_t off = pick_off(c, model_size(c), len);
    fill(c, len);
    ssize_t n = pwrite(c->fd, c->wbuf, len, off);
    int err = errno;
    ssize_t m = pwrite(c->mfd, c->wbuf, len, off);
    same(c, "pwrite", off, (int64_t)len, n, m, err);
    c->writes++;
    c->wbytes += len;
    note_range(c, off, (int64_t)len);
}

static void op_seek_write(struct ctx *c, int seek)
{
    const char *kind = seek ? "lseek+write" : "write";
    size_t len = pick_len(c);
    int64_t off;
    if (seek) {
        off = pick_off(c, model_size(c), len);
        off_t p = lseek(c->fd, off, SEEK_SET);
        int err = errno;
        same(c, "lseek SEEK_SET", off, 0, p, lseek(c->mfd, off, SEEK_SET), err);
    } else {
        off = lseek(c->mfd, 0, SEEK_CUR);
        if (off + (int64_t)len > MAXFILE) { /* keep the file small: go back */
            off = (int64_t)(rnd(c) % (MAXFILE - len));
            off_t p = lseek(c->fd, off, SEEK_SET);
            int err = errno;
            same(c, "lseek SEEK_SET", off, 0, p, lseek(c->mfd, off, SEEK_SET), err);
        }
    }
    fill(c, len);
    ssize_t n = write(c->fd, c->wbuf, len);
    int err = errno;
    ssize_t m = write(c->mfd, c->wbuf, len);
    same(c, kind, off, (int64_t)len, n, m, err);
    c->writes++;
    c->wbytes += len;
    note_range(c, off, (int64_t)len);
}

static void op_pread_at(struct ctx *c, const char *kind, int64_t off, size_t len)
{
    ssize_t n = pread(c->fd, c->buf, len, off);
    int err = errno;
    ssize_t m = pread(c->mfd, c->mbuf, len, off);
    same(c, kind, off, (int64_t)len, n, m, err);
    compare(c, kind, off, (int64_t)len, (size_t)n);
}

static void op_pread(struct ctx *c)
{
    size_t len = pick_len(c);
    op_pread_at(c, "pread", pick_off(c, model_size(c), len), len);
}

static void op_seek_read(struct ctx *c, int seek)
{
    const char *kind = seek ? "lseek+read" : "read";
    size_t len = pick_len(c);
    int64_t off;
    if (seek) {
        off = pick_off(c, model_size(c), len);
        off_t p = lseek(c->fd, off, SEEK_SET);
        int err = errno;
        same(c, "lseek SEEK_SET", off, 0, p, lseek(c->mfd, off, SEEK_SET), err);
    } else {
        off = lseek(c->mfd, 0, SEEK_CUR);
    }
    ssize_t n = read(c->fd, c->buf, len);
    int err = errno;
    ssize_t m = read(c->mfd, c->mbuf, len);
    same(c, kind, off, (int64_t)len, n, m, err);
    compare(c, kind, off, (int64_t)len, (size_t)n);
}

/* lseek SEEK_END with an offset (0, back a little, or past the end) */
static void op_seek_end(struct ctx *c)
{
    int64_t size = model_size(c), d;
    uint64_t r = rnd(c) % 3;
    d = r == 0 ? 0 : r == 1 ? -(int64_t)(rnd(c) % (uint64_t)(size + 1)) : (int64_t)(rnd(c) % 5000);
    off_t p = lseek(c->fd, d, SEEK_END);
    int err = errno;
    same(c, "lseek SEEK_END", d, 0, p, lseek(c->mfd, d, SEEK_END), err);
}

static void op_seek_cur(struct ctx *c)
{
    int64_t cur = lseek(c->mfd, 0, SEEK_CUR);
    int64_t d = (int64_t)(rnd(c) % 20000) - 10000;
    if (cur + d < 0)
        d = -cur;
    if (cur + d > MAXFILE - MAXLEN)
        d = -d;
    off_t p = lseek(c->fd, d, SEEK_CUR);
    int err = errno;
    same(c, "lseek SEEK_CUR", d, 0, p, lseek(c->mfd, d, SEEK_CUR), err);
}

static void op_fstat(struct ctx *c)
{
    struct stat st;
    int64_t n = fstat(c->fd, &st) == 0 ? (int64_t)st.st_size : -1;
    same(c, "fstat size", 0, 0, n, model_size(c), errno);
}

static void op_truncate(struct ctx *c)
{
    int64_t size = model_size(c), to;
    if (rnd(c) % 2 && size + MAXLEN < MAXFILE)
        to = size + (int64_t)pick_len(c); /* grow: a hole */
    else if (rnd(c) % 3 == 0)
        to = (size / STRIPE) * STRIPE; /* at a stripe unit */
    else
        to = (int64_t)(rnd(c) % (uint64_t)(size + 1)); /* shrink */
    int n = ftruncate(c->fd, to);
    int err = errno;
    same(c, "ftruncate", to, 0, n, ftruncate(c->mfd, to), err);
    note_range(c, to < size ? to : size, to < size ? 0 : to - size);
}

/* check_all: the sizes, then the whole file in reads of random lengths */
static void check_all(struct ctx *c, const char *kind)
{
    op_fstat(c);
    int64_t size = model_size(c);
    for (int64_t off = 0; off <= size;) {
        size_t len = pick_len(c);
        op_pread_at(c, kind, off, len);
        off += (int64_t)len;
    }
}

/* ---- one process --------------------------------------------------------- */

static void run_one(struct ctx *c)
{
    for (c->op = 1; c->op <= c->nops; c->op++) {
        uint64_t r = rnd(c) % 100;
        if (r < 18)
            op_pwrite(c);
        else if (r < 30)
            op_seek_write(c, 1);
        else if (r < 40)
            op_seek_write(c, 0);
        else if (r < 58)
            op_pread(c);
        else if (r < 70)
            op_seek_read(c, 1);
        else if (r < 78)
            op_seek_read(c, 0);
        else if (r < 85)
            op_seek_end(c);
        else if (r < 89)
            op_seek_cur(c);
        else if (r < 96)
            op_fstat(c);
        else
            op_truncate(c);
    }
    check_all(c, "final pread");
}

/* ---- two processes ------------------------------------------------------- */

static void io_all(const struct ctx *c, int fd, void *p, size_t n, int rd)
{
    for (size_t done = 0; done < n;) {
        ssize_t k =
            rd ? read(fd, (char *)p + done, n - done) : write(fd, (const char *)p + done, n - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            /* the other process stopped: it said why */
            fprintf(stdout, "gas_rwmix: %sthe other process went away (seed %" PRIu64 ")\n", c->who,
                    c->seed);
            exit(1);
        }
        done += (size_t)k;
    }
}

static void writer(struct ctx *c, int out, int in)
{
    c->nrg = 0;
    for (long i = 0; i < c->nops; i++, c->op++) {
        uint64_t r = rnd(c) % 100;
        if (r < 40)
            op_pwrite(c);
        else if (r < 70)
            op_seek_write(c, 1);
        else if (r < 95 || i == c->nops - 1)
            op_seek_write(c, 0);
        else
            op_truncate(c);
    }
    op_fstat(c); /* the round trip: our frames are at the dispatcher */
    c->op++;
    int64_t n = c->nrg;
    io_all(c, out, &n, sizeof(n), 0);
    io_all(c, out, c->rg, (size_t)n * sizeof(c->rg[0]), 0);
    char ack;
    io_all(c, in, &ack, 1, 1);
}

static void reader(struct ctx *c, int out, int in)
{
    int64_t n;
    io_all(c, in, &n, sizeof(n), 1);
    io_all(c, in, c->rg, (size_t)n * sizeof(c->rg[0]), 1);
    for (int64_t i = 0; i < n; i++, c->op++) /* what the writer wrote, as it wrote it */
        op_pread_at(c, "pread of a range the other process wrote", c->rg[i].off,
                    (size_t)c->rg[i].len + 1);
    for (long i = 0; i < c->nops; i++, c->op++) {
        uint64_t r = rnd(c) % 100;
        if (r < 40)
            op_pread(c);
        else if (r < 65)
            op_seek_read(c, 1);
        else if (r < 80)
            op_seek_read(c, 0);
        else if (r < 88)
            op_seek_end(c);
        else if (r < 92)
            op_seek_cur(c);
        else
            op_fstat(c);
    }
    check_all(c, "pread of the whole file");
    c->op++;
    char ack = 'r';
    io_all(c, out, &ack, 1, 0);
}

static int open_both(struct ctx *c, const char *file, const char *model, int flags)
{
    c->fd = open(file, O_RDWR | flags, 0644);
    if (c->fd < 0) {
        fprintf(stdout, "gas_rwmix: %sopen %s: %s\n", c->who, file, strerror(errno));
        return -1;
    }
    c->mfd = open(model, O_RDWR | flags, 0644);
    if (c->mfd < 0) {
        fprintf(stdout, "gas_rwmix: %sopen %s: %s\n", c->who, model, strerror(errno));
        return -1;
    }
    return 0;
}

static void close_both(struct ctx *c)
{
    int n = close(c->fd);
    int err = errno;
    same(c, "close", 0, 0, n, 0, err);
    close(c->mfd);
}

static int run_pair(struct ctx *c, const char *file, const char *model)
{
    int ab[2], ba[2]; /* A to B, B to A */
    if (pipe(ab) != 0 || pipe(ba) != 0) {
        perror("gas_rwmix: pipe");
        return 1;
    }
    /* MODEL and FILE are made empty before B opens them */
    int mfd = open(model, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (mfd < 0) {
        fprintf(stdout, "gas_rwmix: open %s: %s\n", model, strerror(errno));
        return 1;
    }
    close(mfd);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("gas_rwmix: fork");
        return 1;
    }
    int b = pid == 0, in = b ? ab[0] : ba[0], out = b ? ba[1] : ab[1];
    close(b ? ab[1] : ba[1]);
    close(b ? ba[0] : ab[0]);
    c->who = b ? "B " : "A ";
    c->rng = c->seed * 2 + (uint64_t)b; /* each its own stream */
    char go = 'g';
    if (!b) {
        if (open_both(c, file, model, O_CREAT | O_TRUNC) != 0)
            _exit(1); /* B sees the pipe close */
        io_all(c, out, &go, 1, 0);
    } else {
        io_all(c, in, &go, 1, 1);
        if (open_both(c, file, model, 0) != 0)
            _exit(1);
    }
    c->op = 1;
    for (long round = 0; round < c->rounds; round++) {
        if ((round % 2 == 1) == b)
            writer(c, out, in);
        else
            reader(c, out, in);
    }
    check_all(c, "final pread");
    close_both(c);
    int64_t counts[2] = {c->writes, (int64_t)c->wbytes};
    if (b) {
        io_all(c, out, counts, sizeof(counts), 0);
        fflush(stdout);
        _exit(0);
    }
    io_all(c, in, counts, sizeof(counts), 1);
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stdout, "gas_rwmix: B failed\n");
        return 1;
    }
    struct stat st;
    if (stat(model, &st) != 0)
        return 1;
    printf("gas_rwmix: pair ok seed=%" PRIu64 " rounds=%ld ops=%ld writes=%" PRId64
           " bytes=%" PRId64 " size=%lld\n",
           c->seed, c->rounds, c->nops, c->writes + counts[0], (int64_t)c->wbytes + counts[1],
           (long long)st.st_size);
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: gas_rwmix [--pair] [--seed S] [--rounds R] [--ops N] FILE MODEL\n");
    return 2;
}

int main(int argc, char **argv)
{
    static struct ctx c = {.who = "", .seed = 1, .nops = -1, .rounds = 6};
    int i;
    for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
        if (!strcmp(argv[i], "--pair"))
            c.pair = 1;
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            c.seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--ops") && i + 1 < argc)
            c.nops = strtol(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            c.rounds = strtol(argv[++i], NULL, 0);
        else
            return usage();
    }
    if (argc - i != 2 || c.rounds < 1)
        return usage();
    if (c.nops < 0)
        c.nops = c.pair ? 150 : 2000;
    if (c.nops < 1 || (c.pair && c.nops > MAXRANG - 1))
        return usage();
    c.buf = malloc(MAXLEN + 1);
    c.mbuf = malloc(MAXLEN + 1);
    c.wbuf = malloc(MAXLEN);
    if (!c.buf || !c.mbuf || !c.wbuf)
        return 1;
    int rc;
    if (c.pair) {
        rc = run_pair(&c, argv[i], argv[i + 1]);
    } else {
        c.rng = c.seed * 2;
        if (open_both(&c, argv[i], argv[i + 1], O_CREAT | O_TRUNC) != 0)
            return 1;
        run_one(&c);
        int64_t size = model_size(&c);
        close_both(&c);
        printf("gas_rwmix: ok seed=%" PRIu64 " ops=%ld writes=%ld bytes=%" PRIu64 " size=%" PRId64
               "\n",
               c.seed, c.nops, c.writes, c.wbytes, size);
        rc = 0;
    }
    free(c.buf);
    free(c.mbuf);
    free(c.wbuf);
    return rc;
}
