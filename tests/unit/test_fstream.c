/* test_fstream.c - wire frames over a non-blocking stream: splitting, queuing, refusing.
 * SPDX-License-Identifier: BSD-3-Clause */
#include "common/err.h"
#include "common/fstream.h"
#include "common/wire/wire.h"
#include "tests/lib/unit.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

static void pair(int sv[2])
{
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(fcntl(sv[i], F_SETFL, fcntl(sv[i], F_GETFL) | O_NONBLOCK), 0);
}

/* An eager P_SEND of size bytes (payload byte k = k * 7 + tag), encoded. */
static uint8_t *send_frame(uint32_t size, int tag, size_t *len)
{
    uint8_t *payload = malloc(size ? size : 1);
    assert_non_null(payload);
    for (uint32_t k = 0; k < size; k++)
        payload[k] = (uint8_t)(k * 7 + (uint32_t)tag);
    struct pio_frame *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->type = PIO_F_P_SEND;
    f->u.p_send.size = size;
    f->u.p_send.count = size;
    f->u.p_send.tag = tag;
    f->u.p_send.flags = PIO_WF_EAGER;
    snprintf(f->u.p_send.partner, sizeof(f->u.p_send.partner), "x");
    f->u.p_send.payload = payload;
    size_t need = pio_wire_encoded_size(f);
    uint8_t *buf = malloc(need);
    assert_non_null(buf);
    assert_int_equal(pio_wire_encode(f, buf, need, len), PIO_OK);
    free(payload);
    free(f);
    return buf;
}

static void check_frame(const uint8_t *fr, size_t len, uint32_t size, int tag)
{
    struct pio_frame *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_int_equal(pio_wire_decode(fr, len, f, NULL), PIO_OK);
    assert_int_equal(f->type, PIO_F_P_SEND);
    assert_int_equal(f->u.p_send.size, size);
    assert_int_equal(f->u.p_send.tag, tag);
    for (uint32_t k = 0; k < size; k++)
        assert_int_equal(f->u.p_send.payload[k], (uint8_t)(k * 7 + (uint32_t)tag));
    free(f);
}

/* Frames written one byte at a time come out whole, in order, and only once
 * complete. */
static void test_split_across_reads(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    size_t l1, l2;
    uint8_t *a = send_frame(100, 1, &l1), *b = send_frame(0, 2, &l2);
    struct pio_fin in;
    pio_fin_init(&in, 1 << 20);
    const uint8_t *fr;
    size_t len;
    assert_int_equal(pio_fin_fill(&in, sv[1]), PIO_EAGAIN);
    for (size_t i = 0; i < l1 + l2; i++) {
        uint8_t byte = i < l1 ? a[i] : b[i - l1];
        assert_int_equal(write(sv[0], &byte, 1), 1);
        assert_int_equal(pio_fin_fill(&in, sv[1]), PIO_OK);
        if (i + 1 < l1) {
            assert_int_equal(pio_fin_next(&in, &fr, &len, NULL), PIO_EAGAIN);
        } else if (i + 1 == l1) {
            assert_int_equal(pio_fin_next(&in, &fr, &len, NULL), PIO_OK);
            assert_int_equal(len, l1);
            check_frame(fr, len, 100, 1);
        }
    }
    assert_int_equal(pio_fin_next(&in, &fr, &len, NULL), PIO_OK);
    check_frame(fr, len, 0, 2);
    assert_int_equal(pio_fin_next(&in, &fr, &len, NULL), PIO_EAGAIN);
    close(sv[0]);
    assert_int_equal(pio_fin_fill(&in, sv[1]), PIO_ECLOSED);
    pio_fin_fini(&in);
    close(sv[1]);
    free(a);
    free(b);
}

/* When the socket is full, pio_fout_send keeps the rest in order; flush sends
 * it as room appears, and the reader gets every frame intact. */
static void test_queue_when_full(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    int small = 4096;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    struct pio_fout out = {0};
    struct pio_fin in;
    pio_fin_init(&in, 1 << 20);
    enum { N = 64, SIZE = 60000 };
    for (int t = 0; t < N; t++) {
        size_t l;
        uint8_t *b = send_frame(SIZE, t, &l);
        assert_int_equal(pio_fout_send(&out, sv[0], b, l), PIO_OK);
        free(b);
    }
    assert_true(out.queued > 0); /* 3.8 MB cannot all fit a 4 KiB socket */
    int got = 0;
    while (got < N) {
        assert_int_equal(pio_fout_flush(&out, sv[0]), PIO_OK);
        int rc = pio_fin_fill(&in, sv[1]);
        assert_true(rc == PIO_OK || rc == PIO_EAGAIN);
        const uint8_t *fr;
        size_t len;
        while (pio_fin_next(&in, &fr, &len, NULL) == PIO_OK)
            check_frame(fr, len, SIZE, got++);
    }
    assert_int_equal(out.queued, 0);
    assert_null(out.head);
    pio_fin_fini(&in);
    close(sv[0]);
    close(sv[1]);
}

struct salvaged {
    int n, first;
};

static void salvaged_one(void *arg, const uint8_t *frame, size_t len)
{
    struct salvaged *sv = arg;
    check_frame(frame, len, 60000, sv->first + sv->n);
    sv->n++;
}

/* The other end dies with frames waiting: every frame queued whole comes back
 * in order (the express lane sends them on ZeroMQ); the one whose head the
 * socket took in pio_fout_send, of which only the tail waits, does not. */
static void test_salvage_after_death(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    int small = 4096;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    struct pio_fout out = {0};
    enum { N = 16 };
    int first = -1;
    for (int t = 0; t < N; t++) {
        size_t l;
        uint8_t *b = send_frame(60000, t, &l);
        int had = out.head != NULL;
        assert_int_equal(pio_fout_send(&out, sv[0], b, l), PIO_OK);
        if (!had && out.head)
            first = t; /* partly written: its tail waits */
        free(b);
    }
    assert_true(first >= 0);
    close(sv[1]);
    assert_int_equal(pio_fout_flush(&out, sv[0]), PIO_ECLOSED);
    struct salvaged got = {.first = first + 1};
    assert_int_equal(pio_fout_salvage(&out, salvaged_one, &got), N - first - 1);
    assert_int_equal(got.n, N - first - 1);
    assert_null(out.head);
    assert_int_equal(out.queued, 0);
    close(sv[0]);
}

/* Bytes that are not a frame, and a frame over the limit, are refused: the
 * stream cannot be trusted past them. */
static void test_refuses_garbage_and_oversize(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    struct pio_fin in;
    pio_fin_init(&in, 1024);
    const uint8_t *fr;
    size_t len;
    size_t l;
    uint8_t *big = send_frame(2000, 3, &l);
    assert_int_equal(write(sv[0], big, PIO_WIRE_HDR), PIO_WIRE_HDR);
    assert_int_equal(pio_fin_fill(&in, sv[1]), PIO_OK);
    assert_int_equal(pio_fin_next(&in, &fr, &len, NULL), PIO_EPROTO); /* over max */
    pio_fin_fini(&in);
    pio_fin_init(&in, 1 << 20);
    static const char junk[] = "GET / HTTP/1.1\r\n\r\n";
    assert_int_equal(write(sv[0], junk, sizeof(junk)), (ssize_t)sizeof(junk));
    assert_int_equal(pio_fin_fill(&in, sv[1]), PIO_OK);
    int rc = pio_fin_next(&in, &fr, &len, NULL);
    assert_true(rc == PIO_EPROTO || rc == PIO_EVERSION);
    pio_fin_fini(&in);
    free(big);
    close(sv[0]);
    close(sv[1]);
}

/* A peer that went away: send says so (no SIGPIPE), and nothing is queued. */
static void test_send_to_closed(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    close(sv[1]);
    struct pio_fout out = {0};
    size_t l;
    uint8_t *b = send_frame(10, 4, &l);
    assert_int_equal(pio_fout_send(&out, sv[0], b, l), PIO_ECLOSED);
    assert_int_equal(out.queued, 0);
    free(b);
    close(sv[0]);
}

static void test_connect_nothing_there(void **state)
{
    (void)state;
    int fd = -1;
    assert_int_equal(pio_unix_connect("/nonexistent/pio-test.sock", &fd), PIO_ENOPIOD);
    assert_int_equal(fd, -1);
}

/* A pipe whose write end travels: the reader of fds[0] sees EOF once every
 * copy of the write end is closed, and sees "x" when one is written to. */
static void pipe_pair(int fds[2])
{
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK), 0);
}

/* 1 when every write end of the pipe is closed (EOF), 0 when one is open. */
static int pipe_closed(int rd)
{
    char c;
    ssize_t n = read(rd, &c, 1);
    return n == 0;
}

/* Descriptors go with their frames, in order, directly or after waiting in
 * the queue: A (none), B (pipe 1), C (pipe 2) arrive as A, B, C with
 * take_fd giving pipe 1's then pipe 2's write end, and they work. */
static void test_pass_fds_in_order(void **state)
{
    (void)state;
    int sv[2], p1[2], p2[2];
    pair(sv);
    pipe_pair(p1);
    pipe_pair(p2);
    int small = 4096;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    struct pio_fout out = {0};
    struct pio_fin in;
    pio_fin_init(&in, 1 << 20);
    pio_fin_want_fds(&in);
    size_t la, lb, lc;
    uint8_t *a = send_frame(200000, 1, &la), *b = send_frame(10, 2, &lb),
            *c = send_frame(0, 3, &lc);
    assert_int_equal(pio_fout_send(&out, sv[0], a, la), PIO_OK);
    assert_true(out.queued > 0); /* A waits: B and C (and their descriptors) queue behind */
    assert_int_equal(pio_fout_send_fd(&out, sv[0], b, lb, p1[1]), PIO_OK);
    assert_int_equal(pio_fout_send_fd(&out, sv[0], c, lc, p2[1]), PIO_OK);
    int got = 0;
    for (int spins = 0; got < 3 && spins < 100000; spins++) {
        assert_int_equal(pio_fout_flush(&out, sv[0]), PIO_OK);
        int rc = pio_fin_fill(&in, sv[1]);
        assert_true(rc == PIO_OK || rc == PIO_EAGAIN);
        const uint8_t *fr;
        size_t len;
        while (pio_fin_next(&in, &fr, &len, NULL) == PIO_OK) {
            got++;
            if (got == 1) {
                check_frame(fr, len, 200000, 1);
                assert_int_equal(in.nfds, 0); /* no descriptor came with A */
            } else if (got == 2) {
                check_frame(fr, len, 10, 2);
                int w = pio_fin_take_fd(&in);
                assert_true(w >= 0);
                assert_int_equal(write(w, "x", 1), 1); /* pipe 1's write end */
                char ch = 0;
                assert_int_equal(read(p1[0], &ch, 1), 1);
                assert_int_equal(ch, 'x');
                close(w);
            } else {
                check_frame(fr, len, 0, 3);
                int w = pio_fin_take_fd(&in);
                assert_true(w >= 0);
                close(w);
            }
        }
    }
    assert_int_equal(got, 3);
    assert_int_equal(pio_fin_take_fd(&in), -1);
    assert_int_equal(out.queued, 0);
    /* the sender's copies were closed once sent, the receiver closed its own */
    assert_true(pipe_closed(p1[0]));
    assert_true(pipe_closed(p2[0]));
    pio_fin_fini(&in);
    close(sv[0]);
    close(sv[1]);
    close(p1[0]);
    close(p2[0]);
    free(a);
    free(b);
    free(c);
}

/* A reader that did not ask for descriptors closes them (a peer cannot make
 * it hold any); a queue cleared before sending closes its own; a reader
 * that asked but never took them closes them at fini. */
static void test_fds_never_leak(void **state)
{
    (void)state;
    int sv[2], p[2];
    size_t l;
    uint8_t *f = send_frame(16, 4, &l);
    struct pio_fin in;
    const uint8_t *fr;
    size_t len;

    pair(sv);
    pipe_pair(p);
    struct pio_fout out = {0};
    pio_fin_init(&in, 1 << 20); /* not asking */
    assert_int_equal(pio_fout_send_fd(&out, sv[0], f, l, p[1]), PIO_OK);
    assert_int_equal(pio_fin_fill(&in, sv[1]), PIO_OK);
    assert_int_equal(pio_fin_next(&in, &fr, &len, NULL), PIO_OK);
    check_frame(fr, len, 16, 4);
    assert_true(pipe_closed(p[0]));
    pio_fin_fini(&in);
    close(p[0]);

    pipe_pair(p);
    struct pio_fout q = {0};
    int small = 4096;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    size_t lbig;
    uint8_t *big = send_frame(200000, 5, &lbig);
    assert_int_equal(pio_fout_send(&q, sv[0], big, lbig), PIO_OK);
    assert_int_equal(pio_fout_send_fd(&q, sv[0], f, l, p[1]), PIO_OK); /* waits behind */
    assert_false(pipe_closed(p[0]));
    pio_fout_clear(&q);
    assert_true(pipe_closed(p[0]));
    close(p[0]);
    close(sv[0]);
    close(sv[1]);

    pair(sv);
    pipe_pair(p);
    struct pio_fout r = {0};
    pio_fin_init(&in, 1 << 20);
    pio_fin_want_fds(&in);
    assert_int_equal(pio_fout_send_fd(&r, sv[0], f, l, p[1]), PIO_OK);
    assert_int_equal(pio_fin_fill(&in, sv[1]), PIO_OK);
    assert_int_equal(in.nfds, 1);
    assert_false(pipe_closed(p[0])); /* held by the reader */
    pio_fin_fini(&in);
    assert_true(pipe_closed(p[0]));
    close(p[0]);
    close(sv[0]);
    close(sv[1]);
    free(f);
    free(big);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_split_across_reads),
    cmocka_unit_test(test_queue_when_full),
    cmocka_unit_test(test_refuses_garbage_and_oversize),
    cmocka_unit_test(test_send_to_closed),
    cmocka_unit_test(test_connect_nothing_there),
    cmocka_unit_test(test_salvage_after_death),
    cmocka_unit_test(test_pass_fds_in_order),
    cmocka_unit_test(test_fds_never_leak),
};
PIO_UNIT_MAIN(tests)
