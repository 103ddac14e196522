/* reader.c - libpio's reader role: the thread that waits reads the socket
 * to the piod when nobody else does, handles every frame that comes (for
 * every thread) and runs the copies out of the pool; the progress thread
 * takes the role while no API thread wants it. Split from pio.c, whose head
 * comment describes the message core.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The reader holds pio_g.mtx but for the socket's poll and read and the
 * copies (run_jobs); nothing here calls into the application.
 */
#include "pio.h"
#include "pio_int.h"
#include "lane.h"
#include "fstream.h"
#include "pool.h"
#include "types.h"
#include "wire/wire.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define READER_SLICE_MS  20 /* an API reader re-checks its own condition this often */
#define PROGRESS_IDLE_MS 10 /* the progress thread looks for an idle reader role this often */

/* Kick the reader out of its poll (any thread; pio_g.mtx need not be held). */
void pio_wake_reader(void)
{
    uint64_t one = 1;
    ssize_t w = write(pio_g.evfd, &one, sizeof(one));
    (void)w;
}

static void reader_pass(int timeout_ms);

/* Wait (pio_g.mtx held) for something to change, up to the deadline (NULL:
 * none): read the socket ourselves when nobody does, else sleep on pio_g.cv.
 * Callers loop on their own condition. Returns PIO_ETIMEDOUT once the
 * deadline has passed. */
int pio_wait_until(const struct timespec *dl)
{
    if (pio_g.reader == READER_NONE && !pio_g.closed && pio_g.fd >= 0) {
        int ms = pio_ms_until(dl);
        pio_g.reader = READER_API;
        reader_pass(ms < 0 || ms > READER_SLICE_MS ? READER_SLICE_MS : ms);
        pio_g.reader = READER_NONE;
        pthread_cond_broadcast(&pio_g.cv);
        return dl && pio_ms_until(dl) == 0 ? PIO_ETIMEDOUT : PIO_OK;
    }
    int r, wanted = pio_g.reader == READER_PROGRESS;
    if (wanted) {
        pio_g.want++;
        pio_wake_reader(); /* the progress thread hands the role over */
    }
    if (!dl)
        r = pthread_cond_wait(&pio_g.cv, &pio_g.mtx);
    else
        r = pthread_cond_timedwait(&pio_g.cv, &pio_g.mtx, dl);
    if (wanted)
        pio_g.want--;
    return r == ETIMEDOUT ? PIO_ETIMEDOUT : PIO_OK;
}

static FILE *trace_file; /* $PIO_TRACE: one line per frame from the piod */

/* Open the file $PIO_TRACE names, once (PIO_Init). */
void pio_trace_open(void)
{
    const char *tr = getenv("PIO_TRACE");
    if (tr && *tr && !trace_file)
        trace_file = fopen(tr, "w");
    if (trace_file)
        setvbuf(trace_file, NULL, _IOLBF, 0);
}

static void on_frame(const uint8_t *buf, size_t len)
{
    struct pio_frame *f = malloc(sizeof(*f));
    if (!f)
        return;
    if (pio_wire_decode(buf, len, f, NULL) != PIO_OK) {
        if (trace_file)
            fprintf(trace_file, "undecodable frame of %zu bytes\n", len);
        free(f);
        return;
    }
    if (trace_file)
        fprintf(trace_file, "%s id %llu off %llu n %u r0 %llu+%llu\n", pio_wire_type_name(f->type),
                (unsigned long long)(f->type == PIO_F_P_MSG_NEW ? f->u.p_msg_new.key
                                                                : f->u.p_ranges.id),
                (unsigned long long)f->u.p_ranges.msg_off, f->u.p_ranges.n,
                (unsigned long long)f->u.p_ranges.r[0].off,
                (unsigned long long)f->u.p_ranges.r[0].len);
    switch (f->type) {
    case PIO_F_P_WELCOME:
        pio_g.w = f->u.p_welcome;
        pio_g.have_welcome = 1;
        break;
    case PIO_F_P_PARTNER_INFO:
    case PIO_F_P_INFO: {
        uint64_t req = f->type == PIO_F_P_INFO ? f->u.p_info.req : f->u.p_partner_info.req;
        for (struct lookup *l = pio_g.lookups; l; l = l->next)
            if (l->req == req && !l->done) {
                l->f = f;
                l->done = 1;
                f = NULL;
                break;
            }
        break;
    }
    case PIO_F_P_RELEASE:
        for (uint32_t i = 0; i < f->u.p_ranges.n; i++)
            pio_send_released(f->u.p_ranges.r[i].off, f->u.p_ranges.r[i].len);
        clock_gettime(CLOCK_MONOTONIC, &pio_g.send_moved);
        pio_pump_all();
        break;
    case PIO_F_P_SEND_DONE: pio_on_send_done(f); break;
    case PIO_F_P_MSG_NEW: pio_on_msg_new(&f->u.p_msg_new); break;
    case PIO_F_P_MSG_DATA: pio_on_msg_data(&f->u.p_ranges); break;
    case PIO_F_P_EVENT: pio_on_event(&f->u.p_event); break;
    case PIO_F_P_LANE: {
        int fd = f->u.p_lane.status == PIO_OK ? pio_fin_take_fd(&pio_g.in) : -1;
        pio_lane_on_p_lane(&f->u.p_lane, fd);
        break;
    }
    default: break;
    }
    free(f);
    pthread_cond_broadcast(&pio_g.cv);
}

/* Run the queued copies without the lock, then account for them. */
static void run_jobs(void)
{
    struct copy_job *jobs = pio_g.jobs;
    pio_g.jobs = pio_g.jobs_tail = NULL;
    if (!jobs)
        return;
    pio_g.copying = 1;
    pthread_mutex_unlock(&pio_g.mtx);
    for (struct copy_job *j = jobs; j; j = j->next) {
        struct inmsg *m = j->m;
        struct pio_request *r = m->req;
        if (!r)
            continue;
        const uint8_t *src = pio_g.base + j->pool_off;
        uint8_t *dst = r->rbuf + j->msg_off;
        if (r->datatype == PIO_BYTE)
            memcpy(dst, src, j->len);
        else
            pio_convert(dst, src, j->len, pio_type_swap_unit((int)m->datatype),
                        (m->flags & PIO_WF_BIGEND) != 0);
    }
    pthread_mutex_lock(&pio_g.mtx);
    pio_g.copying = 0;
    pthread_cond_broadcast(&pio_g.cv); /* pio_fail_everything may wait for us */
    while (jobs) {
        struct copy_job *j = jobs;
        jobs = j->next;
        struct inmsg *m = j->m;
        pio_out_ranges(PIO_F_P_FREE, m->key, j->msg_off, j->pool_off, j->len);
        m->copied += j->len;
        if (m->req && m->copied == m->size)
            pio_recv_finish(m->req);
        free(j);
    }
}

/* pio_g.mtx held. Waits first for copies the reader runs without the lock: it
 * still writes into the receives' buffers, which their owners may free as
 * soon as they are completed here (PIO_Exit from another thread; TSan, then
 * a SEGV, in pcp). The reader itself (lost()) never has copies running. */
void pio_fail_everything(int status)
{
    while (pio_g.copying)
        pthread_cond_wait(&pio_g.cv, &pio_g.mtx);
    pio_g.closed = 1;
    for (struct pio_request *r = pio_g.recvs; r; r = r->next)
        pio_req_complete(r, status);
    pio_g.recvs = NULL;
    for (struct pio_request *r = pio_g.sends; r; r = r->next)
        pio_req_complete(r, status);
    pio_g.sends = NULL;
    for (struct inmsg *m = pio_g.msgs; m; m = m->next)
        if (m->req) {
            pio_req_complete(m->req, status);
            m->req->msg = NULL;
            m->req = NULL;
        }
    for (struct lookup *l = pio_g.lookups; l; l = l->next)
        l->done = 1;
    pthread_cond_broadcast(&pio_g.cv);
}

/* The connection to the piod is gone: everything pending fails. */
static void lost(void)
{
    if (!pio_g.closed)
        pio_fail_everything(PIO_ECLOSED);
}

/* Holding the reader role (pio_g.mtx held): wait up to timeout_ms for the socket
 * (or a kick on pio_g.evfd), send what waits, handle every frame that came, then
 * run the copies they made ready. */
static void reader_pass(int timeout_ms)
{
    struct pollfd p[2 + PIO_LANE_POLL] = {
        {pio_g.fd, (short)(POLLIN | (pio_g.out.head ? POLLOUT : 0)), 0}, {pio_g.evfd, POLLIN, 0}};
    int np = 2 + pio_lane_poll(p + 2, PIO_LANE_POLL);
    int n = 1;
    for (int i = 2; i < np; i++) /* no poll below: every lane is looked at */
        p[i].revents = p[i].events;
    if (timeout_ms != 0 && !pio_g.jobs) {
        for (int i = 2; i < np; i++)
            p[i].revents = 0;
        pthread_mutex_unlock(&pio_g.mtx);
        n = 0;
        if (pio_g.spin_us > 0) { /* look without sleeping for a moment first */
            struct timespec t0, t;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            do {
                if ((n = poll(p, (nfds_t)np, 0)) != 0)
                    break;
                sched_yield();
                clock_gettime(CLOCK_MONOTONIC, &t);
            } while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 <
                     pio_g.spin_us);
        }
        if (n == 0)
            n = poll(p, (nfds_t)np, timeout_ms);
        if (n > 0 && (p[1].revents & POLLIN)) {
            uint64_t v;
            ssize_t r = read(pio_g.evfd, &v, sizeof(v));
            (void)r;
        }
        pthread_mutex_lock(&pio_g.mtx);
    }
    if (pio_g.out.head && pio_fout_flush(&pio_g.out, pio_g.fd) != PIO_OK)
        lost();
    pio_g.in_pass = 1;
    for (int k = 0; n > 0 && !pio_g.closed && k < 64; k++) {
        pthread_mutex_unlock(&pio_g.mtx);
        int rc = pio_fin_fill(&pio_g.in, pio_g.fd); /* pio_g.in is the reader's alone */
        pthread_mutex_lock(&pio_g.mtx);
        if (rc == PIO_EAGAIN)
            break;
        if (rc != PIO_OK) {
            lost();
            break;
        }
        const uint8_t *fr;
        size_t len;
        while ((rc = pio_fin_next(&pio_g.in, &fr, &len, NULL)) == PIO_OK)
            on_frame(fr, len);
        if (rc != PIO_EAGAIN) {
            if (trace_file)
                fprintf(trace_file, "the piod sent bytes that are not frames: %s\n",
                        PIO_Strerror(rc));
            lost();
        }
        if (pio_g.in.drained)
            break;
    }
    /* the lanes after the piod's frames: what the piod said first is in */
    if (np > 2 && !pio_g.closed)
        pio_lane_io(p + 2, np - 2);
    if (!pio_g.closed)
        pio_lane_pump_all(); /* fences done, acknowledgements come: queued sends go */
    pio_g.in_pass = 0;
    run_jobs();
    pio_pump_stalled();
}

/* Reads for the application while no API thread waits, so that
 * asynchronous sends and receives move on while it computes. */
void *pio_progress(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&pio_g.mtx);
    while (!pio_g.stop) {
        if (pio_g.reader == READER_NONE && !pio_g.want && !pio_g.closed) {
            pio_g.reader = READER_PROGRESS;
            reader_pass(100);
            pio_g.reader = READER_NONE;
            pthread_cond_broadcast(&pio_g.cv);
            if (!pio_g.want)
                continue;
        }
        /* an API thread reads: nothing to do but look again later (the
         * kicks on pio_g.evfd are for the reader, whoever it is) */
        pthread_mutex_unlock(&pio_g.mtx);
        poll(NULL, 0, PROGRESS_IDLE_MS);
        pthread_mutex_lock(&pio_g.mtx);
    }
    pthread_mutex_unlock(&pio_g.mtx);
    return NULL;
}
