/* gas_ipc.c - how fast can processes hand small write requests to a local dispatcher?
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * usage: gas-ipc [--frames N] [--seconds T] [--repeat R] [--csv FILE]
 *
 * The GAS issue asks to measure, then choose, between a Unix socket and a
 * shared-memory ring from each process to the dispatcher. Here P producer
 * processes (1 and 4) send WRITE-like frames, each a 48-byte header and a
 * 40-byte payload (88 bytes, the size of pfs/gas/wire.h's WRITE of one BTIO
 * record; dummy bytes, this file does not depend on wire.h), to one consumer
 * (the parent) that, as the dispatcher would, decodes each header and copies
 * the payload into a sub-buffer. The header carries the frame's sequence
 * number, which the consumer checks (a lost, doubled or torn frame fails).
 *
 *   socket: one connected AF_UNIX SOCK_STREAM pair per producer (socketpair;
 *           the same kernel path as accept/connect). The producer packs
 *           frames into a buffer and sends it when the next frame would not
 *           fit in `batch` bytes (batch 88 = one send per frame, as a preload
 *           library with no buffering would do). The consumer poll()s all its
 *           sockets and reads up to 256 KiB at a time, keeping a partial
 *           frame for the next read.
 *   ring:   one single-producer single-consumer byte ring (1 MiB) per
 *           producer in a memfd mapped shared; C11 atomics head (producer)
 *           and tail (consumer) on separate cache lines. The producer
 *           publishes head once `batch` bytes are pending (88: every frame)
 *           and sched_yield()s while the ring is full; the consumer polls its
 *           rings in turn and sched_yield()s when all are empty.
 *
 * Each case sends --frames frames in all (default 2000000, split evenly) or
 * stops after --seconds (default 2) of the producers' clock. Measured by the
 * consumer: from the start barrier (the parent closes the "go" pipe) to the
 * last frame copied out. Each case runs --repeat times (default 3) and the
 * run with the median frames/s is reported (the batched cases take only tens
 * of milliseconds at 2 million frames). MB/s counts frame bytes (88 per
 * frame), 1 MB = 1e6.
 * Prints a table "transport producers batch frames/s MB/s"; --csv FILE also
 * writes it as CSV. Exits 1 if any case loses or damages a frame.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define IPC_HDR       48
#define IPC_PAYLOAD   40
#define IPC_FRAME     (IPC_HDR + IPC_PAYLOAD)
#define IPC_MAGIC     0x31534147u /* "GAS1", as wire.h's */
#define IPC_OP_WRITE  2
#define IPC_READ_BUF  (256 * 1024)
#define IPC_RING_SIZE (1u << 20) /* power of two */
#define IPC_SUBBUF    (4u << 20) /* the consumer's copy-out area, reused cyclically */
#define IPC_MAX_PROD  64

/* The header's fields as the consumer decodes them (the layout of wire.h's
 * struct gas_hdr: magic, op, flags, id, handle, status, plen, off, len, aux). */
struct ipc_hdr {
    uint32_t magic;
    uint16_t op;
    uint16_t flags;
    uint32_t id;
    uint32_t handle;
    int32_t status;
    uint32_t plen;
    uint64_t off;
    uint64_t len;
    uint64_t aux; /* here: the frame's sequence number in its producer */
};
_Static_assert(sizeof(struct ipc_hdr) == IPC_HDR, "header is 48 bytes");

struct ipc_ring {
    _Alignas(64) _Atomic uint64_t head; /* bytes ever published by the producer */
    _Alignas(64) _Atomic uint64_t tail; /* bytes ever consumed */
    _Alignas(64) _Atomic int closed;    /* producer is done (set after its last head) */
    _Alignas(64) uint8_t data[IPC_RING_SIZE];
};

enum ipc_transport { IPC_SOCKET, IPC_RING };

struct ipc_case {
    enum ipc_transport transport;
    int producers;
    int batch;
};

struct ipc_result {
    uint64_t frames;
    double seconds;
    int ok;
};

static uint64_t ipc_opt_frames = 2000000;
static double ipc_opt_seconds = 2.0;
static int ipc_opt_repeat = 3;

static double ipc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void ipc_die(const char *what)
{
    fprintf(stderr, "gas-ipc: %s: %s\n", what, strerror(errno));
    _exit(1);
}

/* ipc_make_frame - frame number seq of producer p into out[IPC_FRAME]. */
static void ipc_make_frame(uint8_t *out, int p, uint64_t seq)
{
    struct ipc_hdr h = {
        .magic = IPC_MAGIC,
        .op = IPC_OP_WRITE,
        .handle = (uint32_t)p + 1,
        .plen = IPC_PAYLOAD,
        .off = seq * IPC_PAYLOAD,
        .len = IPC_PAYLOAD,
        .aux = seq,
    };
    uint8_t payload[IPC_PAYLOAD];
    memset(payload, (int)(seq & 0xff), sizeof(payload));
    memcpy(out, &h, IPC_HDR);
    memcpy(out + IPC_HDR, payload, IPC_PAYLOAD);
}

/* The consumer's side of one producer: the next sequence number expected. */
struct ipc_sink {
    uint8_t *subbuf;
    size_t subpos;
    uint64_t frames;
    uint64_t bad;
    uint64_t expect[IPC_MAX_PROD];
};

/* ipc_take - decode one frame from p and copy its payload out. */
static void ipc_take(struct ipc_sink *k, int p, const uint8_t *frame)
{
    struct ipc_hdr h;
    memcpy(&h, frame, IPC_HDR);
    if (h.magic != IPC_MAGIC || h.op != IPC_OP_WRITE || h.plen != IPC_PAYLOAD ||
        h.handle != (uint32_t)p + 1 || h.aux != k->expect[p])
        k->bad++;
    k->expect[p] = h.aux + 1;
    if (k->subpos + h.plen > IPC_SUBBUF)
        k->subpos = 0;
    memcpy(k->subbuf + k->subpos, frame + IPC_HDR, IPC_PAYLOAD);
    k->subpos += IPC_PAYLOAD;
    k->frames++;
}

static uint64_t ipc_quota(int producers, int p)
{
    uint64_t q = ipc_opt_frames / (uint64_t)producers;
    return q + ((uint64_t)p < ipc_opt_frames % (uint64_t)producers);
}

static void ipc_wait_go(int go_r)
{
    char byte;
    while (read(go_r, &byte, 1) < 0 && errno == EINTR)
        ;
    close(go_r);
}

static void ipc_send_all(int fd, const uint8_t *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            ipc_die("send");
        buf += n;
        len -= (size_t)n;
    }
}

static void ipc_socket_producer(int p, int producers, int batch, int fd, int go_r)
{
    const uint64_t quota = ipc_quota(producers, p);
    uint8_t *buf = malloc((size_t)batch);
    size_t used = 0;
    if (buf == NULL)
        ipc_die("malloc");
    ipc_wait_go(go_r);
    const double deadline = ipc_now() + ipc_opt_seconds;
    for (uint64_t seq = 0; seq < quota; seq++) {
        if ((seq & 4095) == 0 && seq > 0 && ipc_now() > deadline)
            break;
        if (used + IPC_FRAME > (size_t)batch) {
            ipc_send_all(fd, buf, used);
            used = 0;
        }
        ipc_make_frame(buf + used, p, seq);
        used += IPC_FRAME;
    }
    ipc_send_all(fd, buf, used);
    close(fd);
    free(buf);
    _exit(0);
}

static void ipc_socket_consumer(int producers, const int *fds, struct ipc_sink *k)
{
    struct pollfd pfd[IPC_MAX_PROD];
    uint8_t *buf[IPC_MAX_PROD];
    size_t have[IPC_MAX_PROD];
    int open_count = producers;

    for (int p = 0; p < producers; p++) {
        pfd[p] = (struct pollfd){.fd = fds[p], .events = POLLIN};
        buf[p] = malloc(IPC_READ_BUF + IPC_FRAME);
        have[p] = 0;
        if (buf[p] == NULL)
            ipc_die("malloc");
    }
    while (open_count > 0) {
        if (poll(pfd, (nfds_t)producers, -1) < 0) {
            if (errno == EINTR)
                continue;
            ipc_die("poll");
        }
        for (int p = 0; p < producers; p++) {
            if (pfd[p].fd < 0 || pfd[p].revents == 0)
                continue;
            ssize_t n = read(pfd[p].fd, buf[p] + have[p], IPC_READ_BUF);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                ipc_die("read");
            if (n == 0) {
                if (have[p] != 0)
                    k->bad++; /* a torn last frame */
                close(pfd[p].fd);
                pfd[p].fd = -1;
                open_count--;
                continue;
            }
            size_t len = have[p] + (size_t)n, pos = 0;
            for (; len - pos >= IPC_FRAME; pos += IPC_FRAME)
                ipc_take(k, p, buf[p] + pos);
            have[p] = len - pos;
            memmove(buf[p], buf[p] + pos, have[p]);
        }
    }
    for (int p = 0; p < producers; p++)
        free(buf[p]);
}

static void ipc_ring_copy_in(struct ipc_ring *r, uint64_t at, const uint8_t *src, size_t len)
{
    const size_t i = (size_t)(at & (IPC_RING_SIZE - 1));
    const size_t first = len < IPC_RING_SIZE - i ? len : IPC_RING_SIZE - i;
    memcpy(r->data + i, src, first);
    memcpy(r->data, src + first, len - first);
}

static void ipc_ring_copy_out(const struct ipc_ring *r, uint64_t at, uint8_t *dst, size_t len)
{
    const size_t i = (size_t)(at & (IPC_RING_SIZE - 1));
    const size_t first = len < IPC_RING_SIZE - i ? len : IPC_RING_SIZE - i;
    memcpy(dst, r->data + i, first);
    memcpy(dst + first, r->data, len - first);
}

static void ipc_ring_producer(int p, int producers, int batch, struct ipc_ring *r, int go_r)
{
    const uint64_t quota = ipc_quota(producers, p);
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t published = head;
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    uint8_t frame[IPC_FRAME];

    ipc_wait_go(go_r);
    const double deadline = ipc_now() + ipc_opt_seconds;
    for (uint64_t seq = 0; seq < quota; seq++) {
        if ((seq & 4095) == 0 && seq > 0 && ipc_now() > deadline)
            break;
        ipc_make_frame(frame, p, seq);
        while (head + IPC_FRAME - tail > IPC_RING_SIZE) {
            if (published != head) { /* full of unpublished bytes: publish first */
                atomic_store_explicit(&r->head, head, memory_order_release);
                published = head;
            }
            tail = atomic_load_explicit(&r->tail, memory_order_acquire);
            if (head + IPC_FRAME - tail > IPC_RING_SIZE)
                sched_yield();
        }
        ipc_ring_copy_in(r, head, frame, IPC_FRAME);
        head += IPC_FRAME;
        if (head - published >= (uint64_t)batch) {
            atomic_store_explicit(&r->head, head, memory_order_release);
            published = head;
        }
    }
    atomic_store_explicit(&r->head, head, memory_order_release);
    atomic_store_explicit(&r->closed, 1, memory_order_release);
    _exit(0);
}

static void ipc_ring_consumer(int producers, struct ipc_ring **rings, struct ipc_sink *k)
{
    int done[IPC_MAX_PROD] = {0};
    int open_count = producers;
    uint8_t frame[IPC_FRAME];

    while (open_count > 0) {
        int moved = 0;
        for (int p = 0; p < producers; p++) {
            struct ipc_ring *r = rings[p];
            if (done[p])
                continue;
            /* read closed before head: a closed ring's head is final */
            const int closed = atomic_load_explicit(&r->closed, memory_order_acquire);
            const uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
            uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
            if (head - tail >= IPC_FRAME) {
                for (; head - tail >= IPC_FRAME; tail += IPC_FRAME) {
                    ipc_ring_copy_out(r, tail, frame, IPC_FRAME);
                    ipc_take(k, p, frame);
                }
                atomic_store_explicit(&r->tail, tail, memory_order_release);
                moved = 1;
            }
            if (closed && head - tail < IPC_FRAME) {
                if (head != tail)
                    k->bad++;
                done[p] = 1;
                open_count--;
            }
        }
        if (!moved && open_count > 0)
            sched_yield();
    }
}

/* ipc_run - one case: fork the producers, consume, time, reap. */
static struct ipc_result ipc_run(const struct ipc_case *c)
{
    struct ipc_result res = {0};
    struct ipc_sink *k = calloc(1, sizeof(*k));
    struct ipc_ring *rings[IPC_MAX_PROD] = {0};
    int fds[IPC_MAX_PROD];
    pid_t pids[IPC_MAX_PROD];
    int go[2];

    if (k == NULL || (k->subbuf = malloc(IPC_SUBBUF)) == NULL)
        ipc_die("malloc");
    if (pipe(go) != 0)
        ipc_die("pipe");
    for (int p = 0; p < c->producers; p++) {
        if (c->transport == IPC_SOCKET) {
            int sv[2];
            if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
                ipc_die("socketpair");
            fds[p] = sv[0];
            pids[p] = fork();
            if (pids[p] < 0)
                ipc_die("fork");
            if (pids[p] == 0) {
                close(go[1]);
                close(sv[0]);
                for (int i = 0; i < p; i++)
                    close(fds[i]);
                ipc_socket_producer(p, c->producers, c->batch, sv[1], go[0]);
            }
            close(sv[1]);
        } else {
            int mfd = memfd_create("gas-ipc-ring", MFD_CLOEXEC);
            if (mfd < 0)
                ipc_die("memfd_create");
            if (ftruncate(mfd, sizeof(struct ipc_ring)) != 0)
                ipc_die("ftruncate");
            rings[p] =
                mmap(NULL, sizeof(struct ipc_ring), PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
            if (rings[p] == MAP_FAILED)
                ipc_die("mmap");
            close(mfd); /* a real producer would get it over the socket (SCM_RIGHTS) */
            atomic_init(&rings[p]->head, 0);
            atomic_init(&rings[p]->tail, 0);
            atomic_init(&rings[p]->closed, 0);
            memset(rings[p]->data, 0, IPC_RING_SIZE); /* fault the pages in now */
            pids[p] = fork();
            if (pids[p] < 0)
                ipc_die("fork");
            if (pids[p] == 0) {
                close(go[1]);
                ipc_ring_producer(p, c->producers, c->batch, rings[p], go[0]);
            }
        }
    }
    close(go[0]);

    const double t0 = ipc_now();
    close(go[1]); /* release the producers */
    if (c->transport == IPC_SOCKET)
        ipc_socket_consumer(c->producers, fds, k);
    else
        ipc_ring_consumer(c->producers, rings, k);
    res.seconds = ipc_now() - t0;
    res.frames = k->frames;
    res.ok = k->bad == 0;

    for (int p = 0; p < c->producers; p++) {
        int st;
        while (waitpid(pids[p], &st, 0) < 0 && errno == EINTR)
            ;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            res.ok = 0;
        if (rings[p] != NULL)
            munmap(rings[p], sizeof(struct ipc_ring));
    }
    if (k->bad != 0)
        fprintf(stderr, "gas-ipc: %" PRIu64 " bad frames\n", k->bad);
    /* use the copied bytes, so the copy cannot be optimised away */
    if (k->subpos > 0 && k->subbuf[k->subpos - 1] == 0xff && k->subbuf[0] == 0xfe)
        fputc('\0', stderr);
    free(k->subbuf);
    free(k);
    return res;
}

static int ipc_cmp_rate(const void *a, const void *b)
{
    const struct ipc_result *x = a, *y = b;
    const double rx = (double)x->frames / x->seconds, ry = (double)y->frames / y->seconds;
    return (rx > ry) - (rx < ry);
}

/* ipc_median - run the case ipc_opt_repeat times; the median run (ok only
 * if every run was). */
static struct ipc_result ipc_median(const struct ipc_case *c)
{
    struct ipc_result runs[99];
    int ok = 1;

    for (int i = 0; i < ipc_opt_repeat; i++) {
        fflush(NULL);
        runs[i] = ipc_run(c);
        ok &= runs[i].ok;
    }
    qsort(runs, (size_t)ipc_opt_repeat, sizeof(runs[0]), ipc_cmp_rate);
    struct ipc_result r = runs[ipc_opt_repeat / 2];
    r.ok = ok;
    return r;
}

static void ipc_usage(FILE *f)
{
    fprintf(f, "usage: gas-ipc [--frames N] [--seconds T] [--repeat R] [--csv FILE]\n");
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"frames", required_argument, NULL, 'n'}, {"seconds", required_argument, NULL, 't'},
        {"repeat", required_argument, NULL, 'r'}, {"csv", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    static const int prods[] = {1, 4};
    static const int sock_batches[] = {IPC_FRAME, 4096, 65536, 262144};
    static const int ring_batches[] = {IPC_FRAME, 4096, 65536};
    const char *csv_path = NULL;
    FILE *csv = NULL;
    int c, failed = 0;
    char *end;

    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'n':
            ipc_opt_frames = strtoull(optarg, &end, 10);
            if (*end != '\0' || ipc_opt_frames < 4) {
                fprintf(stderr, "gas-ipc: bad --frames '%s'\n", optarg);
                return 2;
            }
            break;
        case 't':
            ipc_opt_seconds = strtod(optarg, &end);
            if (*end != '\0' || !(ipc_opt_seconds > 0)) {
                fprintf(stderr, "gas-ipc: bad --seconds '%s'\n", optarg);
                return 2;
            }
            break;
        case 'r':
            ipc_opt_repeat = (int)strtol(optarg, &end, 10);
            if (*end != '\0' || ipc_opt_repeat < 1 || ipc_opt_repeat > 99) {
                fprintf(stderr, "gas-ipc: bad --repeat '%s'\n", optarg);
                return 2;
            }
            break;
        case 'c': csv_path = optarg; break;
        case 'h': ipc_usage(stdout); return 0;
        default: ipc_usage(stderr); return 2;
        }
    }
    if (optind != argc) {
        ipc_usage(stderr);
        return 2;
    }
    if (csv_path != NULL) {
        csv = fopen(csv_path, "w");
        if (csv == NULL) {
            fprintf(stderr, "gas-ipc: %s: %s\n", csv_path, strerror(errno));
            return 1;
        }
        fprintf(csv, "transport,producers,batch,frames,seconds,frames_per_s,mb_per_s\n");
    }

    printf("%-9s %9s %7s %12s %9s\n", "transport", "producers", "batch", "frames/s", "MB/s");
    for (size_t pi = 0; pi < sizeof(prods) / sizeof(prods[0]); pi++) {
        for (int t = IPC_SOCKET; t <= IPC_RING; t++) {
            const int *batches = t == IPC_SOCKET ? sock_batches : ring_batches;
            const size_t nb = t == IPC_SOCKET ? sizeof(sock_batches) / sizeof(int)
                                              : sizeof(ring_batches) / sizeof(int);
            for (size_t bi = 0; bi < nb; bi++) {
                const struct ipc_case cs = {(enum ipc_transport)t, prods[pi], batches[bi]};
                const char *name = t == IPC_SOCKET ? "socket" : "ring";
                struct ipc_result r = ipc_median(&cs);
                const double fps = (double)r.frames / r.seconds;
                const double mbs = fps * IPC_FRAME / 1e6;
                printf("%-9s %9d %7d %12.0f %9.1f%s\n", name, cs.producers, cs.batch, fps, mbs,
                       r.ok ? "" : "  FAILED");
                if (csv != NULL)
                    fprintf(csv, "%s,%d,%d,%" PRIu64 ",%.6f,%.0f,%.1f\n", name, cs.producers,
                            cs.batch, r.frames, r.seconds, fps, mbs);
                failed |= !r.ok;
            }
        }
    }
    if (csv != NULL && fclose(csv) != 0) {
        fprintf(stderr, "gas-ipc: %s: %s\n", csv_path, strerror(errno));
        return 1;
    }
    return failed;
}
