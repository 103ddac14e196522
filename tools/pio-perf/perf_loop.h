/* perf_loop.h - the measuring loop of pio-perf and its baseline bench/tcp_pingpong.
 * SPDX-License-Identifier: BSD-3-Clause
 * Thread-safety: none; one loop runs at a time in a process (the programs
 * are single-threaded). */
#ifndef PERF_LOOP_H
#define PERF_LOOP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* perf_round_fn - one round over the transport: `warmup` untimed messages of
 * `size` bytes, then `iters` timed ones. ctx [in]: the caller's, passed through.
 * *op_usec [out]: left alone (< 0) for the usual usec/op (timed seconds per
 * message); a test that reports another time per message (pio-perf oneway:
 * time in the send call) sets it. Returns the seconds of the timed part; a
 * failure ends the process (the programs' die()). */
typedef double perf_round_fn(void *ctx, size_t size, uint64_t warmup, uint64_t iters,
                             double *op_usec);

/* What one loop measures and how its rows are labelled. */
struct perf_loop {
    const size_t *sizes; /* in: the message sizes, in order */
    int nsizes;
    long iters, warmup; /* < 0: adapt (about PERF_TARGET_S per size; 10, or 2 from 1 MiB) */
    int half;           /* 1: usec/op is half the round's time per message (ping-pong) */
    const char *test, *balance, *mode; /* the row's first, fourth and fifth columns */
    FILE *csv;                         /* NULL, or rows appended here too (not closed) */
    perf_round_fn *round;
    void *ctx;
    /* NULL, or each row goes here instead of stdout (no header is printed
     * either): pio-perf --json collects them. row_ctx is passed through. */
    void (*row)(void *row_ctx, size_t size, uint64_t iters, double usec, double mbps);
    void *row_ctx;
};

#define PERF_TARGET_S 0.5 /* default: each size takes about this long */

/* perf_csv_open - open PATH for appending rows, writing the column names
 * first when it is empty. Returns the stream (the caller closes it), or NULL
 * with errno set. */
FILE *perf_csv_open(const char *path);

/* perf_max_size - the largest of n sizes (0 for none). */
size_t perf_max_size(const size_t *sizes, int n);

/* perf_loop_run - print the column header on stdout (unless l->row), then for each size: the
 * warm-up and iteration counts (probing 1, 10, 100 ... messages until a round
 * takes 20 ms, then scaling to PERF_TARGET_S, unless l->iters is set), the
 * timed round, and its row on stdout or to l->row (and l->csv). l [in]: read only. */
void perf_loop_run(const struct perf_loop *l);

/* ---- the data pattern and its checks: every message is stamped ---- */

/* perf_expect - the byte at position p of a message stamped `stamp`: the
 * pattern (perf_pat), its first 8 bytes xor-ed with the stamp. */
uint8_t perf_expect(size_t p, uint64_t stamp);

/* perf_stamp - write the stamp into the first (up to) 8 bytes of buf, which
 * holds the pattern. */
void perf_stamp(uint8_t *buf, size_t size, uint64_t stamp);

/* perf_poison - make the bytes perf_verify checks wrong for `stamp`, so a
 * receive that writes nothing cannot pass. */
void perf_poison(uint8_t *buf, size_t size, uint64_t stamp);

/* perf_verify - check the first 8 bytes, the middle and the last byte of a
 * message. Returns -1 when they are right, else the first wrong position. */
long perf_verify(const uint8_t *buf, size_t size, uint64_t stamp);

#endif
