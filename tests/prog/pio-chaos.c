/* pio-chaos.c - one sender or receiver of the chaos test, keeping a ledger of every message.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Usage: pio-chaos send -a APP -r RANK -P NPROCS -p PARTNER (-n N | -T SECONDS) -l LEDGER
 *                       [-c USER:i|STATIC|DYNAMIC] [-m blocking|sync] [-s SEED] [-B BIG]
 *        pio-chaos recv -a APP -r RANK -P NPROCS -p PARTNER -l LEDGER
 *
 * Sender rank r sends N messages (or as many as it can in SECONDS) to
 * PARTNER's process r on tag 1, then an
 * end mark on the same tag (so it comes after them), retried until it is
 * taken. Message i's size comes from (SEED, r, i): 5 % empty, the eager
 * limit -1, +0 and +1, small ones, 1 MiB, up to 4 MiB, and one of BIG bytes
 * (default 64 MiB) at i = N/2 (with -T: every 20,000th). A message of 16 bytes or more starts with
 * its index and a magic; every byte after is a pattern of (r, i, offset). Every send's outcome goes
 * to the ledger, one line each, appended and flushed at once: S INDEX SIZE XXH64 STATUS (STATUS:
 * PIO_OK or the error's name) The receiver writes, for each message it takes (and a START line each
 * time it starts, so that a checker sees where it was killed):
 *     START PID
 *     R INDEX SIZE XXH64                 (INDEX -1 below 16 bytes)
 *     END N
 * tests/lib/chaos_check.py matches the two ledgers. A failed send waits
 * 100 ms before the next one (a receiver that is down fails them fast).
 * Exit 0 when the run went through (the checker judges), 1 on a broken
 * message (a wrong pattern is reported at once), 2 on usage.
 */
#include "pio.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define TAG          1
#define MAGIC        0x534f414843ull /* "CHAOS" */
#define END_MAGIC    0x444e45ull     /* "END" */
#define MAX_SMALL    4096
#define RECV_WAIT_MS 120000

static const char *app, *partner_name, *ledger_path, *conn_arg = "DYNAMIC";
static int rank, nprocs = 1, nmsg = 1000, mode = PIO_BLOCKING, seconds;
static uint64_t seed = 1;
static size_t big = (size_t)64 << 20;
static size_t eager_limit = 65536;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static size_t msg_size(int i)
{
    if (seconds ? i % 20000 == 19999 : i == nmsg / 2)
        return big;
    uint64_t x = mix(seed ^ ((uint64_t)rank << 40) ^ (uint64_t)i);
    int r = (int)(x % 100);
    if (r < 5)
        return 0;
    if (r < 20)
        return eager_limit - 1 + (x >> 8) % 3; /* the eager limit -1, +0, +1 */
    if (r < 70)
        return 16 + (x >> 8) % MAX_SMALL;
    if (r < 87)
        return 16 + (x >> 8) % (64 << 10);
    if (r < 97)
        return (size_t)1 << 20;
    return 16 + (x >> 8) % ((size_t)4 << 20);
}

static void fill(uint8_t *b, size_t n, int i)
{
    uint64_t x = mix(seed * 31 + (uint64_t)rank * 7 + (uint64_t)i);
    for (size_t k = 0; k < n; k++)
        b[k] = (uint8_t)(x >> ((k & 7) * 8)) ^ (uint8_t)(k >> 3);
    if (n >= 16) {
        uint64_t idx = (uint64_t)i, mg = MAGIC;
        memcpy(b, &idx, 8);
        memcpy(b + 8, &mg, 8);
    }
}

static FILE *ledger;

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(ledger, fmt, ap);
    va_end(ap);
    fflush(ledger);
}

static int conn_code(void)
{
    if (strcmp(conn_arg, "STATIC") == 0)
        return PIO_STATIC;
    if (strcmp(conn_arg, "DYNAMIC") == 0)
        return PIO_DYNAMIC;
    if (strncmp(conn_arg, "USER:", 5) == 0)
        return PIO_USER(atoi(conn_arg + 5));
    fprintf(stderr, "pio-chaos: -c %s: USER:i, STATIC or DYNAMIC\n", conn_arg);
    exit(2);
}

static void pause_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int do_send(int partner)
{
    int conn = conn_code();
    uint8_t *b = malloc(big > ((size_t)4 << 20) + 16 ? big : ((size_t)4 << 20) + 16);
    if (!b)
        return 1;
    int failed = 0, i;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (i = 0;; i++) {
        if (seconds) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            if (t.tv_sec - t0.tv_sec >= seconds)
                break;
        } else if (i >= nmsg) {
            break;
        }
        size_t n = msg_size(i);
        fill(b, n, i);
        int rc = PIO_Send(partner, rank, TAG, conn, b, PIO_BYTE, n, mode);
        note("S %d %zu %016llx %s\n", i, n, (unsigned long long)XXH64(b, n, 0), PIO_Errname(rc));
        if (rc != PIO_OK) {
            failed++;
            pause_ms(100);
        }
    }
    /* the end mark: on the same tag, so it comes after every message */
    nmsg = i;
    uint64_t end[2] = {(uint64_t)nmsg, END_MAGIC};
    int rc = PIO_ETIMEDOUT;
    for (int k = 0; k < 600 && rc != PIO_OK; k++) {
        rc = PIO_Send(partner, rank, TAG, PIO_DYNAMIC, end, PIO_BYTE, sizeof(end), PIO_SYNC);
        if (rc != PIO_OK)
            pause_ms(200);
    }
    note("END %d %s\n", nmsg, PIO_Errname(rc));
    printf("pio-chaos send %s:%d: %d messages, %d failed, end %s\n", app, rank, nmsg, failed,
           PIO_Errname(rc));
    free(b);
    return rc == PIO_OK ? 0 : 1;
}

static int do_recv(int partner)
{
    size_t cap = big > ((size_t)4 << 20) + 16 ? big : ((size_t)4 << 20) + 16;
    uint8_t *b = malloc(cap), *want = malloc(cap);
    int ret = 1;
    if (!b || !want)
        goto out;
    note("START %d\n", (int)getpid());
    long got = 0;
    for (;;) {
        PIO_Status st;
        int rc = PIO_Recv(partner, rank, TAG, b, PIO_BYTE, cap, RECV_WAIT_MS, PIO_BLOCKING, &st);
        if (rc != PIO_OK) {
            if (rc == PIO_EGONE || rc == PIO_ECANCELED || rc == PIO_ELINK) {
                note("ERR %s\n", PIO_Errname(rc)); /* a message that failed on its way */
                continue;
            }
            printf("pio-chaos recv %s:%d: PIO_Recv: %s after %ld messages\n", app, rank,
                   PIO_Errname(rc), got);
            goto out;
        }
        size_t n = st.bytes;
        uint64_t idx = 0, mg = 0;
        if (n == 16) {
            memcpy(&idx, b, 8);
            memcpy(&mg, b + 8, 8);
            if (mg == END_MAGIC) {
                note("END %llu\n", (unsigned long long)idx);
                printf("pio-chaos recv %s:%d: %ld messages, end %llu\n", app, rank, got,
                       (unsigned long long)idx);
                ret = 0;
                goto out;
            }
        }
        long index = -1;
        if (n >= 16) {
            memcpy(&idx, b, 8);
            memcpy(&mg, b + 8, 8);
            if (mg != MAGIC) {
                printf("pio-chaos recv %s:%d: a %zu-byte message without its magic\n", app, rank,
                       n);
                goto out;
            }
            index = (long)idx;
            fill(want, n, (int)idx);
            if (memcmp(want, b, n) != 0) {
                printf("pio-chaos recv %s:%d: message %ld (%zu bytes) has wrong bytes\n", app, rank,
                       index, n);
                goto out;
            }
        }
        note("R %ld %zu %016llx\n", index, n, (unsigned long long)XXH64(b, n, 0));
        got++;
    }
out:
    free(b);
    free(want);
    return ret;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: pio-chaos send|recv -a APP -r RANK -P NPROCS -p PARTNER -l "
                        "LEDGER [-n N] [-c CONN] [-m blocking|sync] [-s SEED] [-B BYTES]\n");
        return 2;
    }
    int send = strcmp(argv[1], "send") == 0;
    int c;
    optind = 2;
    while ((c = getopt(argc, argv, "a:r:P:p:n:T:l:c:m:s:B:")) != -1) {
        switch (c) {
        case 'a': app = optarg; break;
        case 'r': rank = atoi(optarg); break;
        case 'P': nprocs = atoi(optarg); break;
        case 'p': partner_name = optarg; break;
        case 'n': nmsg = atoi(optarg); break;
        case 'T': seconds = atoi(optarg); break;
        case 'l': ledger_path = optarg; break;
        case 'c': conn_arg = optarg; break;
        case 'm': mode = strcmp(optarg, "sync") == 0 ? PIO_SYNC : PIO_BLOCKING; break;
        case 's': seed = strtoull(optarg, NULL, 0); break;
        case 'B': big = (size_t)strtoull(optarg, NULL, 0); break;
        default: return 2;
        }
    }
    if (!app || !partner_name || !ledger_path || nmsg < 1) {
        fprintf(stderr, "pio-chaos: -a, -p, -l and -n >= 1 are needed\n");
        return 2;
    }
    ledger = fopen(ledger_path, "a");
    if (!ledger) {
        perror(ledger_path);
        return 2;
    }
    int rc = PIO_Init(app, rank, nprocs);
    if (rc != PIO_OK) {
        printf("pio-chaos %s:%d: PIO_Init: %s\n", app, rank, PIO_Errname(rc));
        return 1;
    }
    PIO_Hostinfo h;
    if (PIO_Gethostinfo(&h) == PIO_OK)
        eager_limit = h.eager_limit;
    int partner;
    if ((rc = PIO_Setpartner(partner_name, &partner)) != PIO_OK) {
        printf("pio-chaos %s:%d: PIO_Setpartner %s: %s\n", app, rank, partner_name,
               PIO_Errname(rc));
        PIO_Exit();
        return 1;
    }
    int ret = send ? do_send(partner) : do_recv(partner);
    PIO_Exit();
    fclose(ledger);
    return ret;
}
