/* copy_pipe.c - PIO's loopback data path without PIO: the baseline of bench/scale.sh.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Usage: copy-pipe -N PAIRS [-t SECONDS] [-s SIZE_BYTES] [-r RING_BYTES]
 *
 * N pairs of plain processes, each pair one TCP connection on 127.0.0.1.
 * Every message makes the four copies a PIO message makes on loopback, and
 * nothing else: the sender copies it from its own buffer into a ring (the
 * pool) and send()s it from there (the kernel's copy); the receiver recv()s
 * it into its own ring (the kernel's copy) and copies it out into its
 * buffer. No daemon, no handshake, no wake-ups but the sockets'. A ring of
 * RING_BYTES (default 4 MiB: the least that streams) is walked in turn, so
 * RING_BYTES is each process's working set; bench/scale.sh runs it small
 * (the best form) and at the footprint PIO's processes reach.
 * Counted: bytes received between 0.5 s after the common start and 0.5 s
 * before the end. Prints one line:
 *   COPYPIPE pairs=N ring=R size=S aggregate_MBps=X min_share=A max_share=B
 * Exit 0, 1 on a failure (named on stderr), 2 on usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *buf_new(size_t n)
{
    char *b = malloc(n);
    if (b)
        memset(b, 0x5a, n); /* touched: no first-touch faults in the window */
    return b;
}

/* one sender: until t_end, copy into the ring, send from it */
static int sender(int s, size_t size, size_t ring, double t_start, double t_end)
{
    char *src = buf_new(size), *r = buf_new(ring);
    if (!src || !r)
        return 1;
    while (now_s() < t_start)
        usleep(1000);
    size_t slots = ring / size, k = 0;
    while (now_s() < t_end) {
        char *p = r + (k % slots) * size;
        memcpy(src, &k, sizeof(k)); /* each message differs */
        memcpy(p, src, size);
        for (size_t o = 0; o < size;) {
            ssize_t w = send(s, p + o, size - o, 0);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                perror("copy-pipe: send");
                return 1;
            }
            o += (size_t)w;
        }
        k++;
    }
    return 0;
}

/* one receiver: recv into the ring, copy out; *bytes counted in the window */
static int receiver(int s, size_t size, size_t ring, double t_start, double t_end, double *bytes)
{
    char *dst = buf_new(size), *r = buf_new(ring);
    if (!dst || !r)
        return 1;
    size_t slots = ring / size, k = 0;
    for (;;) {
        char *p = r + (k % slots) * size;
        size_t o = 0;
        while (o < size) {
            ssize_t n = recv(s, p + o, size - o, 0);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return o == 0 ? 0 : 1; /* the sender's end, between messages */
            o += (size_t)n;
        }
        memcpy(dst, p, size);
        double t = now_s();
        if (t >= t_start + 0.5 && t < t_end - 0.5)
            *bytes += (double)size;
        k++;
    }
}

int main(int argc, char **argv)
{
    int n = 0, c;
    double secs = 6;
    size_t size = 1 << 20, ring = 4 << 20;
    while ((c = getopt(argc, argv, "N:t:s:r:")) != -1) {
        switch (c) {
        case 'N': n = atoi(optarg); break;
        case 't': secs = atof(optarg); break;
        case 's': size = (size_t)strtoull(optarg, NULL, 0); break;
        case 'r': ring = (size_t)strtoull(optarg, NULL, 0); break;
        default: n = -1; break;
        }
    }
    if (n < 1 || n > 1024 || secs < 2 || size == 0 || ring < size) {
        fprintf(stderr, "usage: copy-pipe -N PAIRS [-t SECONDS>=2] [-s SIZE] [-r RING>=SIZE]\n");
        return 2;
    }
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(ls, 1024) != 0 ||
        getsockname(ls, (struct sockaddr *)&a, &al) != 0) {
        perror("copy-pipe: listen");
        return 1;
    }
    double *res = mmap(NULL, (size_t)n * sizeof(double), PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (res == MAP_FAILED) {
        perror("copy-pipe: mmap");
        return 1;
    }
    double t_start = now_s() + 1.0 + 0.02 * n, t_end = t_start + secs;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        if (p == 0) {
            int s = socket(AF_INET, SOCK_STREAM, 0);
            if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) != 0) {
                perror("copy-pipe: connect");
                _exit(1);
            }
            _exit(sender(s, size, ring, t_start, t_end));
        }
        int cs = p > 0 ? accept(ls, NULL, NULL) : -1;
        if (cs < 0) {
            perror("copy-pipe: fork/accept");
            bad = 1;
            break;
        }
        if (fork() == 0) {
            res[i] = 0;
            _exit(receiver(cs, size, ring, t_start, t_end, &res[i]));
        }
        close(cs);
    }
    int st;
    while (wait(&st) > 0)
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            bad = 1;
    double sum = 0, lo = 0, hi = 0, w = secs - 1.0;
    for (int i = 0; i < n; i++) {
        sum += res[i];
        lo = i == 0 || res[i] < lo ? res[i] : lo;
        hi = res[i] > hi ? res[i] : hi;
    }
    double mean = sum / n;
    printf(
        "COPYPIPE pairs=%d ring=%zu size=%zu aggregate_MBps=%.1f min_share=%.3f max_share=%.3f\n",
        n, ring, size, sum / w / 1e6, mean > 0 ? lo / mean : 0, mean > 0 ? hi / mean : 0);
    return bad;
}
