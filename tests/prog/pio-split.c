/* pio-split.c - one application whose processes joined different piods, and a third
 * application that sends to each of them (tests/bats/pio_split.bats).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Usage: pio-split member RANK -a APP [-o OTHER]
 *        pio-split other -a OTHER -p APP
 * A member is process RANK of the 2 processes of APP; the test bed decides
 * which piod each joins ($PIO_SOCKET). Process 1 sends to process 0 through
 * the handle of its own application; process 0 checks it and replies. With
 * -o, each member then takes the messages of application OTHER, which sends
 * to process 0 and to process 1. Every message is sent twice, once eager and
 * once in chunks (over the eager limit), and every byte is a pattern of
 * (sender, receiver, size, offset), so a message delivered to the wrong
 * process or cut short fails. Exit 0 and a line "OK ..." on success; exit 1
 * with "FAIL ..." on a wrong byte or status, or a receive that times out
 * (the message went to a host where its process is not).
 */
#include "pio.h"
#include "tests/lib/prog.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPROCS     2
#define RECV_MS    20000 /* a misrouted message never comes: fail, do not hang */
#define TAG_TO_0   1     /* process 1 -> process 0 */
#define TAG_REPLY  2     /* process 0 -> process 1 */
#define TAG_OTHER  3     /* OTHER -> each process */
#define SRC_OTHER  7     /* the pattern's source number of OTHER's messages */
#define SIZE_LARGE (1u << 20)

static const size_t sizes[] = {100, SIZE_LARGE};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static uint8_t pat(int src, int dst, size_t size, size_t off)
{
    uint64_t x = ((uint64_t)src * 31 + (uint64_t)dst * 7 + size) * 0x9E3779B97F4A7C15ull;
    return (uint8_t)((x >> 29) ^ off ^ (off >> 8));
}

static uint8_t *buf_get(void)
{
    uint8_t *b = malloc(SIZE_LARGE);
    if (!b)
        FAIL("out of memory");
    return b;
}

static void send_all(int partner, int dst, int tag, int src, uint8_t *b)
{
    for (size_t k = 0; k < NSIZES; k++) {
        for (size_t i = 0; i < sizes[k]; i++)
            b[i] = pat(src, dst, sizes[k], i);
        CHECK(PIO_Send(partner, dst, tag, PIO_DYNAMIC, b, PIO_BYTE, sizes[k], PIO_BLOCKING));
    }
}

/* Receive the messages send_all(..., me, tag, src, ...) sent, in order. */
static void recv_all(int partner, int src_proc, int tag, int src, int me, uint8_t *b)
{
    for (size_t k = 0; k < NSIZES; k++) {
        PIO_Status st;
        memset(b, 0, sizes[k]);
        CHECK(
            PIO_Recv(partner, src_proc, tag, b, PIO_BYTE, SIZE_LARGE, RECV_MS, PIO_BLOCKING, &st));
        if (st.count != sizes[k] || st.source != src_proc || st.tag != tag)
            FAIL("message %zu with tag %d: %zu bytes from process %d, expected %zu from %d", k, tag,
                 (size_t)st.count, st.source, sizes[k], src_proc);
        for (size_t i = 0; i < sizes[k]; i++)
            if (b[i] != pat(src, me, sizes[k], i))
                FAIL("message %zu with tag %d: byte %zu is %u, expected %u", k, tag, i, b[i],
                     pat(src, me, sizes[k], i));
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: pio-split member RANK -a APP [-o OTHER]\n"
                    "       pio-split other -a OTHER -p APP\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *app = NULL, *partner_name = NULL, *other = NULL;
    int rank = 0, i = 2;
    if (argc < 2)
        usage();
    int member = strcmp(argv[1], "member") == 0;
    if (!member && strcmp(argv[1], "other") != 0)
        usage();
    if (member) {
        if (argc < 3)
            usage();
        rank = atoi(argv[2]);
        i = 3;
        if (rank < 0 || rank >= NPROCS)
            usage();
    }
    for (; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "-a") == 0)
            app = argv[i + 1];
        else if (strcmp(argv[i], "-p") == 0)
            partner_name = argv[i + 1];
        else if (strcmp(argv[i], "-o") == 0)
            other = argv[i + 1];
        else
            usage();
    }
    if (i != argc || !app || (!member && !partner_name))
        usage();
    uint8_t *b = buf_get();
    if (!member) {
        int p;
        CHECK(PIO_Init(app, 0, 1));
        CHECK(PIO_Setpartner(partner_name, &p));
        for (int dst = 0; dst < NPROCS; dst++)
            send_all(p, dst, TAG_OTHER, SRC_OTHER, b);
        CHECK(PIO_Exit());
        printf("OK other: sent to processes 0 and 1 of %s\n", partner_name);
        free(b);
        return 0;
    }
    /* the handle of its own application: how one process reaches another */
    int self, op = -1;
    CHECK(PIO_Init(app, rank, NPROCS));
    CHECK(PIO_Addpartner(app, &self));
    if (rank == 1) {
        send_all(self, 0, TAG_TO_0, 1, b);
        recv_all(self, 0, TAG_REPLY, 0, 1, b);
    } else {
        recv_all(self, 1, TAG_TO_0, 1, 0, b);
        send_all(self, 1, TAG_REPLY, 0, b);
    }
    if (other) {
        CHECK(PIO_Addpartner(other, &op));
        recv_all(op, 0, TAG_OTHER, SRC_OTHER, rank, b);
    }
    CHECK(PIO_Exit());
    printf("OK member %d of %s%s%s\n", rank, app, other ? ", and from " : "", other ? other : "");
    free(b);
    return 0;
}
