/* pio.c - libpio: the PIO API of an application process.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The message core lives in three files, which share pio_int.h:
 *   pio.c       the connection to the piod: init and exit, frames out,
 *               look-ups, partners, information
 *   reader.c    the reader role: waiting, reading and dispatching the
 *               piod's frames, the copies out of the pool, the progress
 *               thread
 *   sendrecv.c  requests and messages: sends pumped into the pool,
 *               receives matched with announced messages, wait and test
 * What follows describes them together.
 *
 * A process talks to its local piod through one Unix stream socket (wire
 * frames, fstream.h) and one shared-memory pool. The pool's send region is
 * ours to allocate: a large send copies chunk after chunk into it
 * (P_SEND_DATA) as fast as the piod releases ranges (P_RELEASE); a blocking
 * send returns when its last byte is in the pool. The receive region is the
 * piod's: incoming chunks land there (P_MSG_DATA), we copy them into the
 * user's buffer, converting byte order, and free them (P_FREE). Small
 * messages travel inline in the frames.
 *
 * No thread stands between the API and the socket: a thread that sends
 * writes its frame itself (what the socket has no room for waits in
 * pio_g.out), and a thread that waits reads the socket itself when nobody
 * else does (the reader role, pio_g.reader): it handles every frame that
 * comes, for every thread, and broadcasts pio_g.cv. So a small message costs
 * one wake-up here, the waiting thread's. A progress thread takes the reader
 * role only while no API thread wants it (so asynchronous work moves on
 * while the application computes) and hands it over at once when one does
 * (pio_g.want, pio_g.evfd). All shared state is guarded by pio_g.mtx; pool
 * copies run without it, by the reader (a matched message is owned by its
 * request until the request completes).
 * Thread-safety: every public function is thread-safe; PIO_Init and
 * PIO_Exit must not race each other.
 */
#include "pio.h"
#include "pio_int.h"
#include "lane.h"
#include "err.h"
#include "fstream.h"
#include "partner.h"
#include "pool.h"
#include "win.h"
#include "wire/wire.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_SOCKET     "/run/pio/piod.sock"
#define WELCOME_TIMEOUT_MS 5000

struct pio_core pio_g = {
    .mtx = PTHREAD_MUTEX_INITIALIZER, .fd = -1, .evfd = -1, .cfd = -1, .gen = 1};

static pthread_mutex_t init_mtx = PTHREAD_MUTEX_INITIALIZER;

/* ---- small helpers ---- */

/* *ts = now + ms on the monotonic clock (the clock of pio_g.cv). */
void pio_deadline_after(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* Milliseconds left until dl (0 once past), -1 for no deadline (NULL). */
int pio_ms_until(const struct timespec *dl)
{
    if (!dl)
        return -1;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long ms = (long long)(dl->tv_sec - now.tv_sec) * 1000 +
                   (dl->tv_nsec - now.tv_nsec + 999999) / 1000000;
    return ms < 0 ? 0 : (ms > 1 << 30 ? 1 << 30 : (int)ms);
}

/* Send a frame to the piod now, or queue it behind what waits (pio_g.mtx held). */
int pio_out_frame(const struct pio_frame *f)
{
    uint8_t small[4096], *buf = small;
    size_t need = pio_wire_encoded_size(f), len;
    if (need > sizeof(small) && !(buf = malloc(need)))
        return PIO_ENOMEM;
    int rc = pio_wire_encode(f, buf, need, &len);
    if (rc == PIO_OK)
        rc = pio_g.fd < 0 ? PIO_ECLOSED : pio_fout_send(&pio_g.out, pio_g.fd, buf, len);
    if (buf != small)
        free(buf);
    if (rc == PIO_OK && pio_g.out.queued)
        pio_wake_reader(); /* the reader polls for room */
    return rc;
}

/* Send a frame of one range (P_SEND_DATA, P_FREE) to the piod. */
void pio_out_ranges(int type, uint64_t id, uint64_t msg_off, uint64_t off, uint64_t len)
{
    struct pio_frame *f = calloc(1, sizeof(*f));
    if (!f)
        return;
    pio_wire_ranges1(f, type, id, msg_off, off, len);
    pio_out_frame(f);
    free(f);
}

/* Send a frame that names one id (P_CONSUMED) to the piod. */
void pio_out_done(int type, uint64_t id)
{
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = (uint8_t)type;
    f.u.p_done.id = id;
    pio_out_frame(&f);
}

/* The handle of the partner application name, or -1. */
int pio_partner_by_name(const char *name)
{
    for (int i = 0; i < pio_g.npartners; i++)
        if (strcmp(pio_g.partners[i].name, name) == 0)
            return i;
    return -1;
}

/* Close the socket to the piod and the reader's eventfd; drop what waits
 * to be sent. */
static void close_socket(void)
{
    if (pio_g.fd >= 0)
        close(pio_g.fd);
    if (pio_g.evfd >= 0)
        close(pio_g.evfd);
    pio_g.fd = pio_g.evfd = -1;
    pio_fin_fini(&pio_g.in);
    pio_fout_clear(&pio_g.out);
}

/* ---- lookups (partner, info): one request, one answer ---- */

static int lookup(struct pio_frame *req, uint64_t id, int timeout_ms, struct pio_frame **answer)
{
    struct lookup l = {.req = id};
    struct timespec dl;
    pio_deadline_after(&dl, timeout_ms);
    l.next = pio_g.lookups;
    pio_g.lookups = &l;
    int rc = pio_out_frame(req);
    while (rc == PIO_OK && !l.done)
        if (pio_wait_until(&dl) == PIO_ETIMEDOUT)
            rc = PIO_ETIMEDOUT;
    for (struct lookup **pp = &pio_g.lookups; *pp; pp = &(*pp)->next)
        if (*pp == &l) {
            *pp = l.next;
            break;
        }
    if (rc == PIO_OK && !l.f)
        rc = PIO_ECLOSED;
    *answer = l.f;
    return rc;
}

/* ---- public API ---- */

static int env_int(const char *const *names, int dflt)
{
    for (int i = 0; names[i]; i++) {
        const char *v = getenv(names[i]);
        if (v && *v)
            return atoi(v);
    }
    return dflt;
}

/* How far a process copies ahead of its piod: $PIO_SEND_AHEAD bytes (default
 * SEND_AHEAD_DEFAULT; a send to a bundle of more than two channels may go
 * to two chunks per channel, sendrecv.c ahead_for) in the send region not
 * released yet, at least two chunks (one travels while the next is copied),
 * at most the region. Every
 * byte copied ahead is a pool page that the sender and its piod both touch:
 * with whole regions in use, 32 streaming senders kept 2 GiB of pool pages in
 * play, and memory on this VM ran 20-50 x slower past about 512 MiB touched
 * (docs/design-notes.md, "Send-ahead"). */
#define SEND_AHEAD_DEFAULT (4u << 20)
static uint64_t send_ahead(uint64_t chunk, uint64_t region)
{
    const char *v = getenv("PIO_SEND_AHEAD");
    pio_g.send_ahead_set = v && *v;
    uint64_t a = v && *v ? strtoull(v, NULL, 0) : SEND_AHEAD_DEFAULT;
    if (a < 2 * chunk)
        a = 2 * chunk;
    return a < region ? a : region;
}

/* The launchers' (rank, size) variables, most specific first: PIO's own,
 * Open MPI's mpirun, PMIx (srun --mpi=pmix, prterun), Slurm's srun, PMI-1/2
 * (MPICH's hydra). Slurm's are read only inside a job step (SLURM_STEP_ID
 * set): a batch script's own environment holds SLURM_PROCID=0 and the
 * allocation's SLURM_NTASKS too, and a program started there without srun
 * is one process (docs/design-notes.md, issue 32). */
static const char *const init_env[][2] = {
    {"PIO_PROCESS", "PIO_NPROCS"}, {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"PMIX_RANK", "PMIX_SIZE"},    {"SLURM_PROCID", "SLURM_NTASKS"},
    {"PMI_RANK", "PMI_SIZE"},
};

/* init_env_value - *out from the first variable of column col (0 rank, 1
 * size) of init_env that is set, else dflt. Returns 0, or -1 when that
 * variable is not a whole number from lo to INT32_MAX. */
static int init_env_value(int col, int lo, int dflt, int *out)
{
    const char *step = getenv("SLURM_STEP_ID");
    *out = dflt;
    for (size_t i = 0; i < sizeof(init_env) / sizeof(init_env[0]); i++) {
        const char *v = getenv(init_env[i][col]);
        if (!v || !*v || (strncmp(init_env[i][col], "SLURM_", 6) == 0 && (!step || !*step)))
            continue;
        char *end;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno || *end || n < lo || n > INT32_MAX)
            return -1;
        *out = (int)n;
        return 0;
    }
    return 0;
}

int PIO_Init(const char *app_name, int process_ID, int nprocs)
{
    int rc = PIO_OK;
    pthread_mutex_lock(&init_mtx);
    PIO_CHECK(pio_g.inited, rc, PIO_EINITED, out);
    if (!app_name)
        app_name = getenv("PIO_APP");
    PIO_CHECK(!app_name || !*app_name || strlen(app_name) >= PIO_WIRE_NAME, rc, PIO_EINVAL, out);
    if (process_ID < 0)
        PIO_CHECK(init_env_value(0, 0, 0, &process_ID) != 0, rc, PIO_EINVAL, out);
    if (nprocs <= 0)
        PIO_CHECK(init_env_value(1, 1, 1, &nprocs) != 0, rc, PIO_EINVAL, out);
    PIO_CHECK(process_ID < 0 || nprocs <= 0 || process_ID >= nprocs, rc, PIO_EINVAL, out);
    const char *senders = getenv("PIO_SENDERS");
    PIO_CHECK(senders && *senders && strcmp(senders, "owner") != 0 && strcmp(senders, "any") != 0,
              rc, PIO_EINVAL, out);
    const char *path = getenv("PIO_SOCKET");
    if (!path || !*path)
        path = DEFAULT_SOCKET;
    struct stat st;
    PIO_CHECK(stat(path, &st) != 0 || !S_ISSOCK(st.st_mode), rc, PIO_ENOPIOD, out);

    pthread_mutex_lock(&pio_g.mtx);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&pio_g.cv, &ca);
    pthread_condattr_destroy(&ca);
    snprintf(pio_g.app, sizeof(pio_g.app), "%s", app_name);
    pio_g.proc = process_ID;
    pio_g.nprocs = nprocs;
    pio_g.closed = 0;
    pio_g.stop = 0;
    pio_g.have_welcome = 0;
    pio_g.reader = READER_NONE;
    pio_g.want = 0;
    pio_g.spin_us = env_int((const char *const[]){"PIO_SPIN_US", NULL}, 0);
    pio_g.evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    PIO_CHECK(pio_g.evfd < 0, rc, PIO_ENOMEM, unlock);
    PIO_TRY(pio_unix_connect(path, &pio_g.fd), rc, unlock);
    pio_fin_init(&pio_g.in, PIO_WIRE_HDR + (size_t)PIO_WIRE_MAX_BODY);
    pio_fin_want_fds(&pio_g.in); /* direct lanes come as descriptors (P_LANE) */
    pio_lane_init();
    PIO_CHECK(pthread_create(&pio_g.thr, NULL, pio_progress, NULL) != 0, rc, PIO_ENOMEM, unlock);

    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_HELLO;
    f.u.p_hello.proto = PIO_WIRE_VERSION;
    f.u.p_hello.proc = (uint32_t)process_ID;
    f.u.p_hello.nprocs = (uint32_t)nprocs;
    f.u.p_hello.pid = (uint32_t)getpid();
    if (senders && strcmp(senders, "owner") == 0)
        f.u.p_hello.flags |= PIO_HF_OWN_UID;
    snprintf(f.u.p_hello.app, sizeof(f.u.p_hello.app), "%s", app_name);
    pio_out_frame(&f);
    struct timespec dl;
    pio_deadline_after(&dl, WELCOME_TIMEOUT_MS);
    while (!pio_g.have_welcome && rc == PIO_OK)
        if (pio_wait_until(&dl) == PIO_ETIMEDOUT)
            rc = PIO_ENOPIOD;
    if (rc == PIO_OK && pio_g.w.status != PIO_OK)
        rc = pio_g.w.status;
    if (rc == PIO_OK)
        rc = pio_shm_open(pio_g.w.shm, (void **)&pio_g.base, &pio_g.size);
    if (rc == PIO_OK && (pio_g.w.send_off + pio_g.w.send_len > pio_g.size ||
                         pio_g.w.recv_off + pio_g.w.recv_len > pio_g.size || pio_g.w.chunk == 0))
        rc = PIO_EPROTO;
    if (rc == PIO_OK)
        rc = pio_ralloc_init(&pio_g.send, pio_g.w.send_off, pio_g.w.send_len);
    if (rc == PIO_OK) {
        pio_g.send_ahead = send_ahead(pio_g.w.chunk, pio_g.send.len);
        clock_gettime(CLOCK_MONOTONIC, &pio_g.send_moved);
    }
    if (rc != PIO_OK) {
        pio_g.stop = 1;
        pthread_mutex_unlock(&pio_g.mtx);
        pio_wake_reader();
        pthread_join(pio_g.thr, NULL);
        pthread_mutex_lock(&pio_g.mtx);
        goto unlock;
    }
    pio_trace_open();
    pio_g.inited = 1;
    pthread_mutex_unlock(&pio_g.mtx);
    pthread_mutex_unlock(&init_mtx);
    return PIO_OK;
unlock:
    if (pio_g.base)
        pio_shm_close(NULL, pio_g.base, pio_g.size, 0);
    pio_g.base = NULL;
    close_socket();
    pthread_mutex_unlock(&pio_g.mtx);
out:
    pthread_mutex_unlock(&init_mtx);
    return rc;
}

/* p's per-process arrays, gone (pio_g.mtx held). */
static void partner_procs_free(struct partner *p)
{
    free(p->left);
    free(p->turn);
    p->left = p->turn = NULL;
}

int PIO_Exit(void)
{
    pio_win_exit(); /* its thread sends and receives: before anything goes */
    pthread_mutex_lock(&init_mtx);
    pthread_mutex_lock(&pio_g.mtx);
    if (!pio_g.inited) {
        pthread_mutex_unlock(&pio_g.mtx);
        pthread_mutex_unlock(&init_mtx);
        return PIO_ENOTINIT;
    }
    /* sends whose bytes are not all in the pool yet get up to 30 s */
    struct timespec dl;
    pio_deadline_after(&dl, 30000);
    for (;;) {
        int busy = 0;
        for (struct pio_request *r = pio_g.sends; r; r = r->next)
            if (!r->copied_all)
                busy = 1;
        if (!busy || pio_g.closed || pio_wait_until(&dl) == PIO_ETIMEDOUT)
            break;
    }
    pio_lane_exit(&dl); /* the receivers take what the lanes carry, or it goes again */
    pio_fail_everything(PIO_ECANCELED);
    pio_ready_reset();
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_BYE;
    pio_out_frame(&f);
    /* stop the progress thread, then send what waits (up to 5 s); what is
     * in the socket when we close it still reaches the piod */
    pio_g.stop = 1;
    while (pio_g.reader != READER_NONE) {
        pio_wake_reader();
        pthread_cond_wait(&pio_g.cv, &pio_g.mtx);
    }
    pthread_mutex_unlock(&pio_g.mtx);
    pthread_join(pio_g.thr, NULL);
    pthread_mutex_lock(&pio_g.mtx);
    pio_deadline_after(&dl, 5000);
    while (pio_g.out.head && pio_ms_until(&dl) > 0) {
        struct pollfd p = {pio_g.fd, POLLOUT, 0};
        poll(&p, 1, 100);
        if (pio_fout_flush(&pio_g.out, pio_g.fd) != PIO_OK)
            break;
    }
    close_socket();
    pio_shm_close(NULL, pio_g.base, pio_g.size, 0);
    pio_g.base = NULL;
    pio_ralloc_fini(&pio_g.send);
    free(pio_g.held);
    pio_g.held = NULL;
    pio_g.nheld = pio_g.held_cap = 0;
    while (pio_g.msgs) {
        struct inmsg *m = pio_g.msgs;
        pio_g.msgs = m->next;
        pio_msg_free(m);
    }
    pio_g.msgs_tail = NULL;
    while (pio_g.jobs) {
        struct copy_job *j = pio_g.jobs;
        pio_g.jobs = j->next;
        free(j);
    }
    pio_g.jobs_tail = NULL;
    for (int i = 0; i < pio_g.npartners; i++)
        partner_procs_free(&pio_g.partners[i]);
    pio_g.npartners = 0;
    pio_g.inited = 0;
    pthread_mutex_unlock(&pio_g.mtx);
    pthread_mutex_unlock(&init_mtx);
    return PIO_OK;
}

/* A full partner table may reuse the slot of an application whose every
 * process has left and that nothing (message, receive) refers to any more:
 * a long-running server (the file service) meets many short-lived clients. */
static int partner_reusable(void)
{
    for (int i = 0; i < pio_g.npartners; i++) {
        const struct partner *p = &pio_g.partners[i];
        int gone = p->left && p->nprocs > 0;
        for (uint32_t k = 0; gone && k < p->nprocs; k++)
            gone = p->left[k];
        for (struct inmsg *m = pio_g.msgs; gone && m; m = m->next)
            gone = m->partner != i;
        for (struct pio_request *r = pio_g.recvs; gone && r; r = r->next)
            gone = r->partner != i;
        if (gone)
            return i;
    }
    return -1;
}

/* $PIO_PARTNER_TIMEOUT seconds (default 30), in ms */
static int partner_timeout(void)
{
    const char *tv = getenv("PIO_PARTNER_TIMEOUT");
    return (tv && *tv ? atoi(tv) : 30) * 1000;
}

static int add_partner(const char *name, int *partner, int reset, int named, int timeout_ms)
{
    if (!name || !*name || strlen(name) >= PIO_WIRE_NAME || !partner)
        return PIO_EINVAL;
    pthread_mutex_lock(&pio_g.mtx);
    int rc = PIO_OK;
    PIO_CHECK(!pio_g.inited, rc, PIO_ENOTINIT, out);
    PIO_CHECK(pio_g.closed, rc, PIO_ECLOSED, out);
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_PARTNER;
    uint64_t id = ++pio_g.next_req;
    f.u.p_partner.req = id;
    f.u.p_partner.timeout_ms = (uint32_t)timeout_ms;
    snprintf(f.u.p_partner.app, sizeof(f.u.p_partner.app), "%s", name);
    struct pio_frame *a = NULL;
    rc = lookup(&f, id, timeout_ms + 5000, &a);
    if (rc == PIO_OK && a->u.p_partner_info.status != PIO_OK)
        rc = a->u.p_partner_info.status;
    if (rc == PIO_OK) {
        if (reset) {
            for (int i = 0; i < pio_g.npartners; i++)
                partner_procs_free(&pio_g.partners[i]);
            pio_g.npartners = 0;
        }
        int h = pio_partner_by_name(name);
        if (h < 0) {
            if (pio_g.npartners == MAX_PARTNERS)
                h = partner_reusable();
            PIO_CHECK(h < 0 && pio_g.npartners == MAX_PARTNERS, rc, PIO_ENOMEM, free);
            if (h < 0)
                h = pio_g.npartners++;
            else
                partner_procs_free(&pio_g.partners[h]);
            memset(&pio_g.partners[h], 0, sizeof(pio_g.partners[h]));
        }
        struct partner *p = &pio_g.partners[h];
        p->named |= named;
        snprintf(p->name, sizeof(p->name), "%s", name);
        snprintf(p->system, sizeof(p->system), "%s", a->u.p_partner_info.system);
        p->channels = a->u.p_partner_info.channels;
        if (!p->left || p->nprocs != a->u.p_partner_info.nprocs) {
            partner_procs_free(p);
            p->nprocs = a->u.p_partner_info.nprocs;
            p->left = calloc(p->nprocs, 1);
            p->turn = calloc(p->nprocs, 1);
        } else {
            /* the piod just said the application is there: a name that left
             * and came back (a new process, a reused pid) is no longer gone */
            memset(p->left, 0, p->nprocs);
        }
        for (struct inmsg *m = pio_g.msgs; m; m = m->next)
            if (strcmp(m->src_app, name) == 0)
                m->partner = h;
        *partner = h;
    }
free:
    free(a);
out:
    pthread_mutex_unlock(&pio_g.mtx);
    return rc;
}

int PIO_Setpartner(const char *name, int *partner)
{
    return add_partner(name, partner, 1, 1, partner_timeout());
}

int PIO_Addpartner(const char *name, int *partner)
{
    return add_partner(name, partner, 0, 1, partner_timeout());
}

int pio_partner_find(const char *name, int timeout_ms, int *partner)
{
    return add_partner(name, partner, 0, 0, timeout_ms);
}

int pio_partner_named(const char *name)
{
    pthread_mutex_lock(&pio_g.mtx);
    int h = pio_partner_by_name(name), named = h >= 0 && pio_g.partners[h].named;
    pthread_mutex_unlock(&pio_g.mtx);
    return named;
}

int PIO_Gethostinfo(PIO_Hostinfo *info)
{
    if (!info)
        return PIO_EINVAL;
    pthread_mutex_lock(&pio_g.mtx);
    int rc = pio_g.inited ? PIO_OK : PIO_ENOTINIT;
    if (rc == PIO_OK) {
        memset(info, 0, sizeof(*info));
        snprintf(info->host, sizeof(info->host), "%s", pio_g.w.host);
        snprintf(info->system, sizeof(info->system), "%s", pio_g.w.system);
        info->version = PIO_WIRE_VERSION;
        info->pool_size = pio_g.size;
        info->eager_limit = pio_g.w.eager_limit;
        info->chunk_size = pio_g.w.chunk;
    }
    pthread_mutex_unlock(&pio_g.mtx);
    return rc;
}

int PIO_Setclasses(int tag0, int n, const int *shares)
{
    if (n < 0 || n > PIO_MAX_CLASSES || n > PIO_WIRE_MAX_CLASSES || (n > 0 && !shares))
        return PIO_EINVAL;
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_QOS;
    f.u.p_qos.tag0 = tag0;
    f.u.p_qos.n = (uint32_t)n;
    for (int i = 0; i < n; i++) {
        if (shares[i] < 1 || shares[i] > 100)
            return PIO_EINVAL;
        f.u.p_qos.share[i] = (uint32_t)shares[i];
    }
    pthread_mutex_lock(&pio_g.mtx);
    int rc = pio_g.inited ? pio_out_frame(&f) : PIO_ENOTINIT;
    pthread_mutex_unlock(&pio_g.mtx);
    return rc;
}

static int get_info(struct pio_frame **a)
{
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_INFO_REQ;
    uint64_t id = ++pio_g.next_req;
    f.u.p_info_req.req = id;
    f.u.p_info_req.what = 7;
    return lookup(&f, id, 5000, a);
}

int PIO_Getappinfo(int partner, PIO_Appinfo *info)
{
    if (!info)
        return PIO_EINVAL;
    pthread_mutex_lock(&pio_g.mtx);
    int rc = PIO_OK;
    struct pio_frame *a = NULL;
    PIO_CHECK(!pio_g.inited, rc, PIO_ENOTINIT, out);
    PIO_CHECK(partner != PIO_SELF && (partner < 0 || partner >= pio_g.npartners), rc, PIO_EPARTNER,
              out);
    memset(info, 0, sizeof(*info));
    const char *name = partner == PIO_SELF ? pio_g.app : pio_g.partners[partner].name;
    snprintf(info->name, sizeof(info->name), "%s", name);
    info->process_ID = partner == PIO_SELF ? pio_g.proc : -1;
    info->nprocs = partner == PIO_SELF ? pio_g.nprocs : (int)pio_g.partners[partner].nprocs;
    snprintf(info->system, sizeof(info->system), "%s",
             partner == PIO_SELF ? pio_g.w.system : pio_g.partners[partner].system);
    PIO_TRY(get_info(&a), rc, out);
    for (uint32_t i = 0; i < a->u.p_info.napp; i++)
        if (strcmp(a->u.p_info.app[i].app, name) == 0) {
            info->joined = (int)a->u.p_info.app[i].joined;
            snprintf(info->system, sizeof(info->system), "%s", a->u.p_info.app[i].system);
        }
out:
    free(a);
    pthread_mutex_unlock(&pio_g.mtx);
    return rc;
}

int PIO_Getconinfo(int partner, PIO_Coninfo *info, int max, int *n)
{
    if (!n || max < 0 || (!info && max > 0))
        return PIO_EINVAL;
    pthread_mutex_lock(&pio_g.mtx);
    int rc = PIO_OK;
    struct pio_frame *a = NULL;
    *n = 0;
    PIO_CHECK(!pio_g.inited, rc, PIO_ENOTINIT, out);
    PIO_CHECK(partner < 0 || partner >= pio_g.npartners, rc, PIO_EPARTNER, out);
    PIO_TRY(get_info(&a), rc, out);
    for (uint32_t i = 0; i < a->u.p_info.nchan && *n < max; i++) {
        struct pio_chan_info *c = &a->u.p_info.chan[i];
        if (strcmp(c->peer, pio_g.partners[partner].system) != 0)
            continue;
        PIO_Coninfo *o = &info[(*n)++];
        memset(o, 0, sizeof(*o));
        o->index = (int)c->index;
        o->up = c->state == PIO_WCHAN_UP;
        snprintf(o->local, sizeof(o->local), "%s", c->local);
        snprintf(o->remote, sizeof(o->remote), "%s", c->remote);
        o->tx_bytes = c->tx_bytes;
        o->rx_bytes = c->rx_bytes;
        o->queued = c->queued;
        o->rate = c->rate;
        o->tx_chunks = c->tx_chunks;
        o->rx_chunks = c->rx_chunks;
        o->resent = c->resent;
        o->downs = c->downs;
    }
out:
    free(a);
    pthread_mutex_unlock(&pio_g.mtx);
    return rc;
}
