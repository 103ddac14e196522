/* copy_rotate.c - what N processes' own buffers cost to copy on this machine: a bound for
 * bench/scale.sh. SPDX-License-Identifier: BSD-3-Clause
 *
 * Usage: copy-rotate -w WORKERS [-k TOKENS] [-t SECONDS] [-s SIZE_BYTES]
 *
 * WORKERS processes sit in a ring of pipes; TOKENS tokens (default: the
 * online cores) go round it. A worker that holds a token copies SIZE bytes
 * (default 1 MiB) from its own source buffer into its own destination
 * buffer, changes one byte of the source, and passes the token on. So at
 * most TOKENS copies run at once, each between two buffers that belong to
 * one process, and the processes take turns on the cores as the processes
 * of N pairs do: each application process of a PIO pair copies its own
 * message buffer once per message (the sender into the pool, the receiver
 * out of it). Nothing else happens: no daemon, no sockets but the token's.
 * Run with WORKERS = 2N + 2 it says how fast those two copies can be when
 * that many processes share the cores, whatever carries the bytes between.
 * Counted: copies started between 0.5 s after the common start and
 * SECONDS later. Prints one line:
 *   COPYROT workers=W tokens=K size=S GBps=X
 * Exit 0, 1 on a failure (named on stderr), 2 on usage.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int put(int fd, char c)
{
    for (;;) {
        ssize_t w = write(fd, &c, 1);
        if (w == 1)
            return 0;
        if (w < 0 && errno == EINTR)
            continue;
        return -1;
    }
}

/* one worker: take a token from in, copy, pass it to out; 'q' ends the ring */
static int worker(int in, int out, size_t size, double t0, double t1, long *copies)
{
    char *src = malloc(size), *dst = malloc(size);
    if (!src || !dst)
        return 1;
    memset(src, 0x5a, size); /* touched: no first-touch faults in the window */
    memset(dst, 0xa5, size);
    for (size_t k = 0;; k++) {
        char c;
        ssize_t r = read(in, &c, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r != 1)
            return 1;
        if (c != 'q') {
            double t = now_s();
            memcpy(dst, src, size);
            src[k % size]++;
            if (t >= t0 && t < t1)
                (*copies)++;
            if (t >= t1)
                c = 'q'; /* the window is over: this token ends the ring */
        }
        if (put(out, c) != 0)
            return c == 'q' ? 0 : 1; /* the next worker may be gone already */
        if (c == 'q')
            return 0;
    }
}

int main(int argc, char **argv)
{
    int w = 0, k = (int)sysconf(_SC_NPROCESSORS_ONLN), c;
    double secs = 3;
    size_t size = 1 << 20;
    while ((c = getopt(argc, argv, "w:k:t:s:")) != -1) {
        switch (c) {
        case 'w': w = atoi(optarg); break;
        case 'k': k = atoi(optarg); break;
        case 't': secs = atof(optarg); break;
        case 's': size = (size_t)strtoull(optarg, NULL, 0); break;
        default: w = -1; break;
        }
    }
    if (w < 1 || w > 4096 || k < 1 || k > w || secs <= 0 || size == 0) {
        fprintf(stderr, "usage: copy-rotate -w WORKERS [-k TOKENS<=WORKERS] [-t SECONDS] "
                        "[-s SIZE]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    int(*p)[2] = malloc(sizeof(*p) * (size_t)w);
    long *copies = mmap(NULL, (size_t)w * sizeof(long), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (!p || copies == MAP_FAILED) {
        perror("copy-rotate: memory");
        return 1;
    }
    for (int i = 0; i < w; i++)
        if (pipe(p[i]) != 0) {
            perror("copy-rotate: pipe");
            return 1;
        }
    double t0 = now_s() + 0.5 + 0.002 * w, t1 = t0 + secs;
    for (int i = 0; i < w; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("copy-rotate: fork");
            return 1;
        }
        if (pid == 0)
            _exit(worker(p[i][0], p[(i + 1) % w][1], size, t0, t1, &copies[i]));
    }
    for (int i = 0; i < k; i++)
        if (put(p[(int)((long)i * w / k)][1], 'x') != 0) {
            perror("copy-rotate: token");
            return 1;
        }
    for (int i = 0; i < w; i++) /* the workers hold the ends now */
        close(p[i][1]);
    int st, bad = 0;
    while (wait(&st) > 0)
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            bad = 1;
    long total = 0;
    for (int i = 0; i < w; i++)
        total += copies[i];
    if (bad)
        fprintf(stderr, "copy-rotate: a worker failed\n");
    printf("COPYROT workers=%d tokens=%d size=%zu GBps=%.2f\n", w, k, size,
           (double)total * (double)size / secs / 1e9);
    return bad;
}
