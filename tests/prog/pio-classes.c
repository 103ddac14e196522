/* pio-classes.c - receive classes (PIO_Setclasses): a small message of a
 * favoured class overtakes a bulk backlog of another class at the
 * receiving piod's grants.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 *   pio-classes recv on|off [-n N]  app "rcv": classes tag 100 (share 20) and
 *                                   101 (80), or none; posts receives for N
 *                                   (10) bulk messages and one urgent one;
 *                                   when the first two bulk messages are in,
 *                                   tells "urg" to go; prints how many bulk
 *                                   messages completed before the urgent one
 *   pio-classes bulk [-n N]         app "bulk": N x 1 MiB, tag 101, to rcv;
 *                                   the first synchronously (the link's rate
 *                                   is measured, and chunks sized by it,
 *                                   before the backlog is queued)
 *   pio-classes urgent              app "urg": waits for the go, then 256 KiB,
 *                                   tag 100, to rcv
 *   pio-classes args                PIO_Setclasses's errors: PIO_ENOTINIT
 *                                   before PIO_Init, PIO_EINVAL for bad
 *                                   counts and shares; prints "OK args"
 * Every message's bytes are checked. Exit 0, or 1 with a line on stderr.
 * Run with a slow link (the bulk takes seconds), so that while the urgent
 * message waits the receiver's grants are what decides. */
#include "pio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BULK   (1 << 20)
#define URGENT (256 << 10) /* above the eager limit: it needs grants */
#define TAG_GO 7

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        int rc_ = (x);                                                                             \
        if (rc_ != PIO_OK) {                                                                       \
            fprintf(stderr, "pio-classes: %s: %s\n", #x, PIO_Errname(rc_));                        \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static int nbulk = 10;

static void fill(unsigned char *b, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(seed * 31 + i * 7);
}

static int same(const unsigned char *b, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != (unsigned char)(seed * 31 + i * 7))
            return 0;
    return 1;
}

static int do_recv(int classes)
{
    CHECK(PIO_Init("rcv", 0, 1));
    if (classes) {
        int shares[2] = {20, 80};
        CHECK(PIO_Setclasses(100, 2, shares));
    }
    int bulk, urg;
    CHECK(PIO_Addpartner("bulk", &bulk));
    CHECK(PIO_Addpartner("urg", &urg));
    unsigned char *b = malloc((size_t)nbulk * BULK), *u = malloc(URGENT);
    PIO_Request *rq = calloc((size_t)nbulk + 1, sizeof(*rq));
    if (!b || !u || !rq)
        return fprintf(stderr, "pio-classes: out of memory\n"), 1;
    for (int i = 0; i < nbulk; i++)
        CHECK(PIO_Irecv(bulk, 0, 101, b + (size_t)i * BULK, PIO_BYTE, BULK, PIO_BLOCKING, &rq[i]));
    CHECK(PIO_Irecv(urg, 0, 100, u, PIO_BYTE, URGENT, PIO_BLOCKING, &rq[nbulk]));
    /* the first two bulk messages in: the backlog is there; the urgent one goes */
    CHECK(PIO_Wait(&rq[0], 60000, NULL));
    CHECK(PIO_Wait(&rq[1], 60000, NULL));
    int done_bulk = 2, urgent_after = -1;
    char go = 1;
    CHECK(PIO_Send(urg, 0, TAG_GO, PIO_DYNAMIC, &go, PIO_BYTE, 1, PIO_BLOCKING));
    for (int left = nbulk - 1; left > 0;) {
        for (int i = 2; i <= nbulk; i++) {
            int done = 0;
            if (!rq[i])
                continue;
            CHECK(PIO_Test(&rq[i], &done, NULL));
            if (!done)
                continue;
            left--;
            if (i == nbulk)
                urgent_after = done_bulk;
            else
                done_bulk++;
        }
        usleep(1000);
    }
    for (int i = 0; i < nbulk; i++)
        if (!same(b + (size_t)i * BULK, BULK, i))
            return fprintf(stderr, "pio-classes: bulk message %d: wrong bytes\n", i), 1;
    if (!same(u, URGENT, 99))
        return fprintf(stderr, "pio-classes: urgent message: wrong bytes\n"), 1;
    printf("urgent after %d of %d bulk\n", urgent_after, nbulk);
    PIO_Exit();
    return 0;
}

static int do_bulk(void)
{
    CHECK(PIO_Init("bulk", 0, 1));
    int rcv;
    CHECK(PIO_Setpartner("rcv", &rcv));
    unsigned char *b = malloc(BULK);
    if (!b)
        return 1;
    for (int i = 0; i < nbulk; i++) {
        fill(b, BULK, i);
        CHECK(PIO_Send(rcv, 0, 101, PIO_DYNAMIC, b, PIO_BYTE, BULK, i ? PIO_BLOCKING : PIO_SYNC));
        if (i == 0)
            usleep(300000); /* a few of piod's ticks: its rate sample is taken */
    }
    CHECK(PIO_Exit());
    return 0;
}

static int do_urgent(void)
{
    CHECK(PIO_Init("urg", 0, 1));
    int rcv;
    CHECK(PIO_Setpartner("rcv", &rcv));
    char go;
    CHECK(PIO_Recv(rcv, 0, TAG_GO, &go, PIO_BYTE, 1, 60000, PIO_BLOCKING, NULL));
    unsigned char *u = malloc(URGENT);
    if (!u)
        return 1;
    fill(u, URGENT, 99);
    CHECK(PIO_Send(rcv, 0, 100, PIO_DYNAMIC, u, PIO_BYTE, URGENT, PIO_BLOCKING));
    CHECK(PIO_Exit());
    return 0;
}

#define EXPECT(x, want)                                                                            \
    do {                                                                                           \
        int rc_ = (x);                                                                             \
        if (rc_ != (want)) {                                                                       \
            fprintf(stderr, "pio-classes: %s: %s, want %s\n", #x, PIO_Errname(rc_),                \
                    PIO_Errname(want));                                                            \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static int do_args(void)
{
    int ok[2] = {20, 80}, zero[2] = {0, 80}, big[2] = {20, 101},
        nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    EXPECT(PIO_Setclasses(100, 2, ok), PIO_ENOTINIT);
    CHECK(PIO_Init("args", 0, 1));
    EXPECT(PIO_Setclasses(100, 9, nine), PIO_EINVAL);
    EXPECT(PIO_Setclasses(100, -1, ok), PIO_EINVAL);
    EXPECT(PIO_Setclasses(100, 2, zero), PIO_EINVAL);
    EXPECT(PIO_Setclasses(100, 2, big), PIO_EINVAL);
    EXPECT(PIO_Setclasses(100, 1, NULL), PIO_EINVAL);
    CHECK(PIO_Setclasses(100, PIO_MAX_CLASSES, nine));
    CHECK(PIO_Setclasses(0, 0, NULL)); /* no classes again */
    CHECK(PIO_Setclasses(100, 2, ok));
    CHECK(PIO_Exit());
    printf("OK args\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        goto usage;
    const char *role = argv[1];
    int classes = 0, a = 2;
    if (strcmp(role, "recv") == 0) {
        if (argc < 3 || (strcmp(argv[2], "on") && strcmp(argv[2], "off")))
            goto usage;
        classes = strcmp(argv[2], "on") == 0;
        a = 3;
    }
    for (; a < argc; a++) {
        if (strcmp(argv[a], "-n") == 0 && a + 1 < argc && atoi(argv[a + 1]) > 1)
            nbulk = atoi(argv[++a]);
        else
            goto usage;
    }
    if (strcmp(role, "recv") == 0)
        return do_recv(classes);
    if (strcmp(role, "bulk") == 0)
        return do_bulk();
    if (strcmp(role, "urgent") == 0)
        return do_urgent();
    if (strcmp(role, "args") == 0)
        return do_args();
usage:
    fprintf(stderr, "usage: pio-classes recv on|off [-n N] | bulk [-n N] | urgent | args\n");
    return 2;
}
