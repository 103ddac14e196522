/* skew.c - the skewed-load benchmark's program (bench/skew.sh): 16 senders, one receiver.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Usage:
 *   skew send -r RANK -P NPROCS -c STATIC|DYNAMIC -b BYTES -a APP -p PARTNER
 *   skew recv -a APP -p PARTNER -n TOTAL_BYTES
 *
 * send joins as process RANK of NPROCS of application APP and sends BYTES to
 * process 0 of PARTNER as messages of 1 MiB (PIO_BYTE, tag 1, PIO_BLOCKING)
 * with the given balancing. PIO_STATIC maps (source + destination) mod K to a
 * channel, so rank r -> process 0 rides channel r mod K: each sender on its
 * own channel. The data is a pattern of (rank, byte offset).
 *
 * recv joins as process 0 of 1, receives from any process of PARTNER until
 * TOTAL_BYTES have arrived, checks every byte against the pattern (the rank
 * from status.source, a per-rank offset) and prints
 *   "elapsed S bytes N first_msg_s F" and "OK"
 * where S is the time from the arrival of the first message to that of the
 * last, F the arrival time of the first message after the receiver joined.
 * BYTES accept a K, M or G suffix (binary). Exit 1 on any error.
 */
#include "pio.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#define MSG       ((size_t)1 << 20)
#define TAG       1
#define MAXRANK   4096
#define RECV_WAIT 300000 /* ms without any message before the receiver gives up */

static void die(const char *what, int rc)
{
    fprintf(stderr, "skew: %s: %s (%s)\n", what, PIO_Strerror(rc), PIO_Errname(rc));
    exit(1);
}

static void usage(void)
{
    fprintf(stderr, "usage: skew send -r RANK -P NPROCS -c STATIC|DYNAMIC -b BYTES -a APP -p "
                    "PARTNER [-g GATE_DIR]\n"
                    "       skew recv -a APP -p PARTNER -n TOTAL_BYTES\n");
    exit(1);
}

static uint64_t parse_bytes(const char *s, const char *opt)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || s[0] == '-') {
        fprintf(stderr, "skew: %s: invalid size '%s'\n", opt, s);
        exit(1);
    }
    unsigned shift = 0;
    switch (*end) {
    case 0: break;
    case 'k':
    case 'K':
        shift = 10;
        end++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        end++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        end++;
        break;
    default: break;
    }
    if (*end != 0 || (shift && v > (UINT64_MAX >> shift))) {
        fprintf(stderr, "skew: %s: invalid size '%s'\n", opt, s);
        exit(1);
    }
    return (uint64_t)v << shift;
}

static int parse_int(const char *s, const char *opt)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != 0 || v < 0 || v > 1000000) {
        fprintf(stderr, "skew: %s: invalid number '%s'\n", opt, s);
        exit(1);
    }
    return (int)v;
}

/* the pattern byte of (rank, offset) */
static inline uint8_t pat(int rank, uint64_t off)
{
    uint64_t x = off * 0x9E3779B97F4A7C15ull + (uint64_t)rank * 0xC2B2AE3D27D4EB4Full;
    x ^= x >> 29;
    return (uint8_t)(x ^ (x >> 17) ^ (off >> 20));
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    const char *role = argv[1];
    int is_send = strcmp(role, "send") == 0;
    if (!is_send && strcmp(role, "recv") != 0)
        usage();
    const char *app = NULL, *partner_name = NULL, *gate = NULL;
    int rank = -1, nprocs = -1, conn = 0, have_conn = 0;
    uint64_t bytes = 0, total = 0;
    int have_bytes = 0, have_total = 0;
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i];
        if (i + 1 >= argc || o[0] != '-' || o[1] == 0 || o[2] != 0)
            usage();
        const char *v = argv[++i];
        switch (o[1]) {
        case 'r': rank = parse_int(v, o); break;
        case 'P': nprocs = parse_int(v, o); break;
        case 'c':
            if (strcmp(v, "STATIC") == 0)
                conn = PIO_STATIC;
            else if (strcmp(v, "DYNAMIC") == 0)
                conn = PIO_DYNAMIC;
            else {
                fprintf(stderr, "skew: -c: use STATIC or DYNAMIC, not '%s'\n", v);
                exit(1);
            }
            have_conn = 1;
            break;
        case 'b':
            bytes = parse_bytes(v, o);
            have_bytes = 1;
            break;
        case 'n':
            total = parse_bytes(v, o);
            have_total = 1;
            break;
        case 'a': app = v; break;
        case 'p': partner_name = v; break;
        case 'g': gate = v; break;
        default: usage();
        }
    }
    if (!app || !partner_name)
        usage();

    uint8_t *buf = malloc(MSG);
    if (!buf) {
        fprintf(stderr, "skew: out of memory\n");
        return 1;
    }
    int rc, partner;

    if (is_send) {
        if (rank < 0 || nprocs < 1 || rank >= nprocs || !have_conn || !have_bytes) {
            fprintf(stderr, "skew send: need -r RANK < -P NPROCS, -c and -b\n");
            return 1;
        }
        if ((rc = PIO_Init(app, rank, nprocs)) != PIO_OK)
            die("PIO_Init", rc);
        if ((rc = PIO_Setpartner(partner_name, &partner)) != PIO_OK)
            die("PIO_Setpartner", rc);
        if (gate) { /* start barrier: say ready, wait for GATE/go (the timing covers only the
                       transfer, not 16 processes joining on 2 cores) */
            char path[4096];
            snprintf(path, sizeof path, "%s/ready.%d", gate, rank);
            FILE *f = fopen(path, "w");
            if (!f) {
                fprintf(stderr, "skew: cannot write %s\n", path);
                return 1;
            }
            fclose(f);
            snprintf(path, sizeof path, "%s/go", gate);
            for (int waited = 0; access(path, F_OK) != 0; waited++) {
                if (waited > 300000) {
                    fprintf(stderr, "skew: no %s after 300 s\n", path);
                    return 1;
                }
                usleep(1000);
            }
        }
        for (uint64_t off = 0; off < bytes;) {
            size_t n = bytes - off < MSG ? (size_t)(bytes - off) : MSG;
            for (size_t j = 0; j < n; j++)
                buf[j] = pat(rank, off + j);
            if ((rc = PIO_Send(partner, 0, TAG, conn, buf, PIO_BYTE, n, PIO_BLOCKING)) != PIO_OK) {
                char what[96];
                snprintf(what, sizeof what, "rank %d: PIO_Send at offset %llu", rank,
                         (unsigned long long)off);
                die(what, rc);
            }
            off += n;
        }
        if ((rc = PIO_Exit()) != PIO_OK)
            die("PIO_Exit", rc);
        free(buf);
        return 0;
    }

    if (!have_total) {
        fprintf(stderr, "skew recv: need -n TOTAL_BYTES\n");
        return 1;
    }
    uint64_t *offs = calloc(MAXRANK, sizeof *offs);
    if (!offs) {
        fprintf(stderr, "skew: out of memory\n");
        return 1;
    }
    if ((rc = PIO_Init(app, 0, 1)) != PIO_OK)
        die("PIO_Init", rc);
    if ((rc = PIO_Setpartner(partner_name, &partner)) != PIO_OK)
        die("PIO_Setpartner", rc);
    double t_join = now(), t_first = 0, t_last = 0;
    uint64_t got = 0;
    while (got < total) {
        PIO_Status st;
        rc = PIO_Recv(partner, PIO_ANY_PROCESS, TAG, buf, PIO_BYTE, MSG, RECV_WAIT, PIO_BLOCKING,
                      &st);
        if (rc != PIO_OK) {
            char what[96];
            snprintf(what, sizeof what, "PIO_Recv after %llu of %llu bytes",
                     (unsigned long long)got, (unsigned long long)total);
            die(what, rc);
        }
        t_last = now();
        if (got == 0)
            t_first = t_last;
        if (st.source < 0 || st.source >= MAXRANK) {
            fprintf(stderr, "skew: message from process %d: out of range 0..%d\n", st.source,
                    MAXRANK - 1);
            return 1;
        }
        uint64_t base = offs[st.source];
        for (size_t j = 0; j < st.bytes; j++) {
            if (buf[j] != pat(st.source, base + j)) {
                fprintf(stderr,
                        "skew: data mismatch from process %d at offset %llu: got 0x%02x, "
                        "expected 0x%02x\n",
                        st.source, (unsigned long long)(base + j), buf[j],
                        pat(st.source, base + j));
                return 1;
            }
        }
        offs[st.source] = base + st.bytes;
        got += st.bytes;
    }
    if (got != total) {
        fprintf(stderr, "skew: received %llu bytes, expected %llu\n", (unsigned long long)got,
                (unsigned long long)total);
        return 1;
    }
    printf("elapsed %.3f bytes %llu first_msg_s %.3f\n", t_last - t_first, (unsigned long long)got,
           t_first - t_join);
    printf("OK\n");
    fflush(stdout);
    if ((rc = PIO_Exit()) != PIO_OK)
        die("PIO_Exit", rc);
    free(offs);
    free(buf);
    return 0;
}
