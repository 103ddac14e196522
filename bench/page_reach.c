/* page_reach.c - how fast memory is when many processes each touch a large
 * shared region: the probe behind libpio's send-ahead and piod's grant budget.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Usage: page-reach -p PROCS -m MIB [-t SECONDS]
 *
 * One MAP_SHARED anonymous region of MIB MiB, touched once by the parent;
 * PROCS forked processes then copy 1 MiB from a private buffer into 1 MiB
 * slots of it picked at random, for SECONDS (default 2). The pages are
 * resident throughout: what changes with PROCS x MIB is only how many page
 * translations are in play (each process maps the region on its own). On
 * the VMs this project is built on, copies ran at 30-40 GB/s up to about
 * 256 MiB of translations in all and fell 20-50 x past 512 MiB
 * (docs/design-notes.md, "Send-ahead and the grant budget"). Prints one line:
 *   PAGEREACH procs=P mib=M touched_mib=P*M MBps=X
 * Exit 0, 1 on a failure (named on stderr), 2 on usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    int procs = 0, mib = 0, opt;
    double secs = 2;
    while ((opt = getopt(argc, argv, "p:m:t:")) != -1) {
        switch (opt) {
        case 'p': procs = atoi(optarg); break;
        case 'm': mib = atoi(optarg); break;
        case 't': secs = atof(optarg); break;
        default: procs = 0;
        }
    }
    if (procs < 1 || procs > 1024 || mib < 1 || secs <= 0) {
        fprintf(stderr, "usage: page-reach -p PROCS (1-1024) -m MIB (>= 1) [-t SECONDS]\n");
        return 2;
    }
    size_t size = (size_t)mib << 20;
    char *region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    long *count =
        mmap(NULL, (size_t)procs * 64, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED || count == MAP_FAILED) {
        perror("page-reach: mmap");
        return 1;
    }
    memset(region, 1, size);
    double t0 = now();
    for (int p = 0; p < procs; p++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("page-reach: fork");
            return 1;
        }
        if (pid == 0) {
            char *src = malloc(1u << 20);
            if (!src)
                _exit(1);
            memset(src, p, 1u << 20);
            unsigned s = (unsigned)p * 7919u + 1;
            long n = 0;
            while (now() - t0 < secs) {
                s = s * 1103515245u + 12345u;
                memcpy(region + ((size_t)((s >> 8) % (unsigned)mib) << 20), src, 1u << 20);
                n++;
            }
            count[p * 8] = n;
            _exit(0);
        }
    }
    int bad = 0, st;
    while (wait(&st) > 0)
        bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    if (bad) {
        fprintf(stderr, "page-reach: a worker failed\n");
        return 1;
    }
    long total = 0;
    for (int p = 0; p < procs; p++)
        total += count[p * 8];
    printf("PAGEREACH procs=%d mib=%d touched_mib=%ld MBps=%.0f\n", procs, mib, (long)procs * mib,
           (double)total * 1.048576 / secs);
    return 0;
}
