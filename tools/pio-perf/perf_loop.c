/* perf_loop.c - the measuring loop pio-perf and bench/tcp_pingpong share.
 * SPDX-License-Identifier: BSD-3-Clause
 * One loop (warm-up, probing for the iteration count, the timed round, the
 * row) and one data check, so that the PIO benchmark and its plain-socket
 * baseline always measure the same way; only the round itself, a callback,
 * differs. No state of its own. */
#include "perf_loop.h"

#include "perf_sizes.h"

#include <inttypes.h>

FILE *perf_csv_open(const char *path)
{
    FILE *f = fopen(path, "a");
    if (f && ftell(f) == 0)
        fprintf(f, "test,size,iters,balance,mode,usec_per_op,MBps\n");
    return f;
}

size_t perf_max_size(const size_t *sizes, int n)
{
    size_t max = 0;
    for (int i = 0; i < n; i++)
        if (sizes[i] > max)
            max = sizes[i];
    return max;
}

static void print_row(const struct perf_loop *l, FILE *f, int csv, size_t size, uint64_t iters,
                      double usec, double mbps)
{
    if (csv)
        fprintf(f, "%s,%zu,%" PRIu64 ",%s,%s,%.3f,%.3f\n", l->test, size, iters, l->balance,
                l->mode, usec, mbps);
    else
        fprintf(f, "%-9s %12zu %9" PRIu64 " %-8s %-9s %12.3f %12.3f\n", l->test, size, iters,
                l->balance, l->mode, usec, mbps);
}

void perf_loop_run(const struct perf_loop *l)
{
    if (!l->row) {
        printf("%-9s %12s %9s %-8s %-9s %12s %12s\n", "#test", "size", "iters", "balance", "mode",
               "usec/op", "MB/s");
        fflush(stdout);
    }
    for (int s = 0; s < l->nsizes; s++) {
        size_t size = l->sizes[s];
        uint64_t warmup = l->warmup >= 0 ? (uint64_t)l->warmup : (size < (1u << 20) ? 10 : 2);
        uint64_t iters;
        double op_usec = -1;
        if (l->iters > 0) {
            iters = (uint64_t)l->iters;
        } else {
            /* probe: 1, 10, 100 ... until a round takes 20 ms, then scale */
            uint64_t probe = 1;
            double t = l->round(l->ctx, size, warmup, probe, &op_usec);
            warmup = 0;
            while (t < 0.02 && probe < 1000000) {
                probe *= 10;
                t = l->round(l->ctx, size, 0, probe, &op_usec);
            }
            double n = t > 0 ? PERF_TARGET_S * (double)probe / t : 1e6;
            iters = n < 3 ? 3 : n > 1e7 ? 10000000 : (uint64_t)n;
        }
        op_usec = -1;
        double sec = l->round(l->ctx, size, warmup, iters, &op_usec);
        double usec = sec * 1e6 / (double)iters / (l->half ? 2.0 : 1.0);
        double mbps = usec > 0 ? (double)size / usec : 0.0; /* bytes per usec = MB/s */
        if (op_usec >= 0)
            usec = op_usec; /* MB/s stays the rate of the whole round */
        if (l->row) {
            l->row(l->row_ctx, size, iters, usec, mbps);
        } else {
            print_row(l, stdout, 0, size, iters, usec, mbps);
            fflush(stdout);
        }
        if (l->csv) {
            print_row(l, l->csv, 1, size, iters, usec, mbps);
            fflush(l->csv);
        }
    }
}

uint8_t perf_expect(size_t p, uint64_t stamp)
{
    return p < 8 ? (uint8_t)(stamp >> (8 * p)) ^ perf_pat(p) : perf_pat(p);
}

void perf_stamp(uint8_t *buf, size_t size, uint64_t stamp)
{
    for (size_t p = 0; p < size && p < 8; p++)
        buf[p] = perf_expect(p, stamp);
}

void perf_poison(uint8_t *buf, size_t size, uint64_t stamp)
{
    if (!size)
        return;
    for (size_t p = 0; p < size && p < 8; p++)
        buf[p] = (uint8_t)~perf_expect(p, stamp);
    buf[size / 2] = (uint8_t)~perf_expect(size / 2, stamp);
    buf[size - 1] = (uint8_t)~perf_expect(size - 1, stamp);
}

long perf_verify(const uint8_t *buf, size_t size, uint64_t stamp)
{
    if (!size)
        return -1;
    size_t pos[10];
    int n = 0;
    for (size_t p = 0; p < size && p < 8; p++)
        pos[n++] = p;
    pos[n++] = size / 2;
    pos[n++] = size - 1;
    for (int i = 0; i < n; i++)
        if (buf[pos[i]] != perf_expect(pos[i], stamp))
            return (long)pos[i];
    return -1;
}
