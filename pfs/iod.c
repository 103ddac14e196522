/* iod.c - pfs-iod, the I/O server of pfs: keeps the stripe objects of files
 * in a storage backend (store.h) and serves them by service class (qos.h).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A PIO application (one process, "pfs.iod.HOST" by default). Protocol: the
 * I/O server ops of proto.h.
 *
 * Threads:
 *   receivers  one per request tag PFS_TAG_REQ + c, c = 0..PFS_CLASS_MAX-1.
 *              The receiver of a configured class c (c < number of classes)
 *              queues into class c; the tags of classes this server does not
 *              have queue into class 0 (as an unknown class name gets the
 *              first class), so a client that asks for more classes than we
 *              have is served, not left hanging. A receiver waits while --queue
 *              requests of its tag are received and not yet taken by a service
 *              thread, then posts the next receive (200 ms at a time, to see
 *              the stop flag). QSTAT and DF are answered by the receiver
 *              itself, at once: they must not wait behind data requests.
 *   service    --threads of them, dealt to the classes by share (qos.c):
 *              pop a request, run it against the store, reply, give the
 *              buffer back. Reads and writes run in 256 KiB steps; between
 *              steps a thread serving a borrowed request gives it back when
 *              its own class has work (it goes to the head of its class's
 *              queue and the next thread of that class resumes it), so an
 *              owner waits one step, not one 1 MiB request.
 *   main       waits for SIGTERM / SIGINT (only it takes signals), then stops
 *              the receivers, lets the queued requests drain (2 s at most),
 *              stops the queues, joins everyone and leaves PIO.
 *
 * Why one receiver per class: a receive names one tag; with one receiver for
 * every class, a class whose queue is full would stop the receiver, and the
 * requests of every other class would wait in piod behind it. With one per
 * class, a full staging queue holds back only staging.
 *
 * Class indexes: the tag of a request carries its class index, in the order
 * of --qos. Clients learn the order from QSTAT: its lines come in class index
 * order (line i = class i).
 *
 * Permissions: before a data request first runs, its caller (as the piods
 * stamped it) must be let do it: the metadata server (--mds) answers
 * ACCESS for (file, caller, read or write), and the verdict is kept for
 * PFS_ACCESS_TTL_MS (access_cache). A DESTROY of a file that no longer
 * exists passes (its entry was removed: the objects go with it).
 *
 * Buffers: a request record (its qos item, the decoded message, and a
 * PFS_MSG_MAX buffer the message points into) is taken from a per-tag free
 * list and goes back to it after the reply; at most --queue + --threads + 1
 * records of one tag exist at once. READ data is read into the request's own
 * buffer (a READ carries no data), so a resumed read keeps what it has.
 */
#include "cli.h"
#include "iostat.h"
#include "proto.h"
#include "qos.h"
#include "mono.h"
#include "parse.h"
#include "sdnotify.h"
#include "srv.h"
#include "store.h"
#include "store_posix.h"
#include "pio.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <xxhash.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RECV_MS  200 /* a receive or a pop waits this long before looking at the stop flag */
#define FREE_MAX 16  /* request records kept for reuse per tag */
#define DRAIN_MS 2000

struct req {
    struct pfs_qos_item it; /* first: the item is the record */
    int tag;                /* the receiver it came from */
    int popped;             /* taken from the queue once (counted out of pending) */
    uint64_t done;          /* WRITE / READ: bytes done before a yield */
    int allowed;            /* its caller may do it (checked once: access_check) */
    struct pfs_msg m;
    struct req *next_free;
    uint8_t buf[]; /* PFS_MSG_MAX: m.data points in here */
};

static struct pfs_qos *q;
static const struct pfs_store_ops *ops;
static struct pfs_store *store;
static struct pfs_iostat iostat; /* requests, bytes, seeks (QSTAT's "io" line) */
static int queue_max = 64;
static atomic_int stopping;
static const char *mds_name = "pfs.mds"; /* --mds: who judges permissions */
static char my_app[PFS_NAME_MAX];

/* ---- permissions: ACCESS verdicts of the metadata server, kept a while ---- */

#define ACCESS_SLOTS 1024
static struct access_entry {
    uint64_t fid;
    uint32_t uid, gid, want;
    int verdict; /* PIO_OK, PIO_EPERM, PIO_ENOENT */
    int64_t at_ns;
} access_cache[ACCESS_SLOTS];
static pthread_mutex_t access_mtx = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint_fast64_t access_rid;

/* Ask the metadata server whether m's caller may do want to m->fid. */
static int access_ask(const struct pfs_msg *m, uint32_t want)
{
    int mds;
    int rc = pfs_srv_partner(mds_name, &mds);
    if (rc != PIO_OK)
        return rc;
    struct pfs_msg q, rep;
    memset(&q, 0, sizeof(q));
    q.op = PFS_OP_ACCESS;
    q.rid = atomic_fetch_add(&access_rid, 1) + 1;
    q.fid = m->fid;
    q.flags = want;
    q.attr.uid = m->from_uid;
    q.attr.gid = m->from_gid;
    snprintf(q.text, sizeof(q.text), "%s", m->from_user);
    snprintf(q.client, sizeof(q.client), "%s", my_app);
    uint8_t *sbuf = malloc(PFS_HDR_MAX), *rbuf = malloc(PFS_HDR_MAX);
    size_t n = sbuf ? pfs_msg_encode(&q, sbuf, PFS_HDR_MAX) : 0;
    int tag = PFS_TAG_REP + (int)(q.rid % PFS_RID_SPAN);
    rc = !sbuf || !rbuf ? PIO_ENOMEM : !n ? PIO_EINTERNAL : PIO_OK;
    if (rc == PIO_OK) /* an answer that comes first waits in libpio for the receive */
        rc = PIO_Send(mds, 0, PFS_TAG_REQ, PIO_DYNAMIC, sbuf, PIO_BYTE, n, PIO_BLOCKING);
    PIO_Status st;
    if (rc == PIO_OK)
        rc = PIO_Recv(mds, 0, tag, rbuf, PIO_BYTE, PFS_HDR_MAX, 10000, PIO_BLOCKING, &st);
    if (rc == PIO_OK)
        rc = pfs_msg_decode(rbuf, st.bytes, &rep) != 0 ? PIO_EPROTO : rep.err;
    free(sbuf);
    free(rbuf);
    if (rc != PIO_OK && rc != PIO_EPERM && rc != PIO_ENOENT)
        pfs_log("ACCESS of file 0x%016" PRIx64 " for uid %u at %s: %s", m->fid, m->from_uid,
                mds_name, PIO_Strerror(rc));
    return rc;
}

/* May m's caller run m? PIO_OK, or why not (a verdict of the last
 * PFS_ACCESS_TTL_MS is reused). */
static int access_check(const struct pfs_msg *m)
{
    uint32_t want = m->op == PFS_OP_READ || m->op == PFS_OP_OSTAT ? PFS_F_RD : PFS_F_WR;
    size_t k = (size_t)((m->fid * 0x9E3779B97F4A7C15ull) ^ m->from_uid ^ ((uint64_t)want << 40)) %
               ACCESS_SLOTS;
    int64_t now = pfs_now_ns();
    pthread_mutex_lock(&access_mtx);
    struct access_entry e = access_cache[k];
    pthread_mutex_unlock(&access_mtx);
    int verdict;
    if (e.at_ns && e.fid == m->fid && e.uid == m->from_uid && e.gid == m->from_gid &&
        e.want == want && now - e.at_ns < (int64_t)PFS_ACCESS_TTL_MS * 1000000) {
        verdict = e.verdict;
    } else {
        verdict = access_ask(m, want);
        if (verdict == PIO_OK || verdict == PIO_EPERM || verdict == PIO_ENOENT) {
            pthread_mutex_lock(&access_mtx);
            access_cache[k] =
                (struct access_entry){m->fid, m->from_uid, m->from_gid, want, verdict, now};
            pthread_mutex_unlock(&access_mtx);
        }
    }
    if (verdict == PIO_ENOENT && m->op == PFS_OP_DESTROY)
        return PIO_OK; /* the entry is gone: its objects go too */
    return verdict;
}

/* per tag: requests received and not yet popped, free records */
static pthread_mutex_t tag_mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tag_cv; /* CLOCK_MONOTONIC (mono.h): made in main */
static int pending[PFS_CLASS_MAX];
static struct req *free_list[PFS_CLASS_MAX];
static int nfree[PFS_CLASS_MAX];

static struct req *rec_get(int tag)
{
    pthread_mutex_lock(&tag_mtx);
    struct req *r = free_list[tag];
    if (r) {
        free_list[tag] = r->next_free;
        nfree[tag]--;
    }
    pthread_mutex_unlock(&tag_mtx);
    if (!r)
        r = malloc(sizeof(*r) + PFS_MSG_MAX);
    return r;
}

static void rec_put(struct req *r)
{
    int tag = r->tag;
    pthread_mutex_lock(&tag_mtx);
    if (nfree[tag] < FREE_MAX) {
        r->next_free = free_list[tag];
        free_list[tag] = r;
        nfree[tag]++;
        r = NULL;
    }
    pthread_mutex_unlock(&tag_mtx);
    free(r);
}

static void reply_or_log(const struct pfs_msg *req, struct pfs_msg *rep)
{
    int rc = pfs_srv_reply(req, rep);
    if (rc != PIO_OK)
        pfs_log("reply to %s process %u (request %" PRIu64 "): %s", req->client, req->proc,
                req->rid, PIO_Strerror(rc));
}

static void fail(const struct pfs_msg *req, int st, const char *what, const char *detail)
{
    int rc = pfs_srv_fail(req, st, "object 0x%016" PRIx64 ": %s: %s", req->fid, what, detail);
    if (rc != PIO_OK)
        pfs_log("reply to %s process %u (request %" PRIu64 "): %s", req->client, req->proc,
                req->rid, PIO_Strerror(rc));
}

/* A store error: reply with it, and log the ones that say something is wrong
 * with the storage. */
static void store_fail(const struct pfs_msg *req, int st, const char *what)
{
    if (st != PIO_EINVAL)
        pfs_log("object 0x%016" PRIx64 ": %s: %s", req->fid, what, PIO_Strerror(st));
    fail(req, st, what, PIO_Strerror(st));
}

/* ---- requests answered by a receiver ------------------------------------- */

static void do_qstat(const struct pfs_msg *m)
{
    struct pfs_qos_stats st[PFS_CLASS_MAX];
    int n = pfs_qos_stats(q, st, PFS_CLASS_MAX, (m->flags & PFS_F_RESET) != 0);
    char text[PFS_CLASS_MAX * 512 + 256];
    size_t len = pfs_qos_format(st, n, text, sizeof(text) - 256);
    struct pfs_iostat_counts io = pfs_iostat_get(&iostat, (m->flags & PFS_F_RESET) != 0);
    len += pfs_iostat_format(&io, text + len, sizeof(text) - len); /* after the class lines */
    struct pfs_msg rep;
    memset(&rep, 0, sizeof(rep));
    rep.len = (uint64_t)n;
    rep.data = (const uint8_t *)text;
    rep.dlen = len;
    reply_or_log(m, &rep);
}

static void do_df(const struct pfs_msg *m)
{
    uint64_t used, avail, objects;
    int rc = ops->df(store, &used, &avail, &objects);
    if (rc != PIO_OK) {
        pfs_log("df: %s", PIO_Strerror(rc));
        int r2 = pfs_srv_fail(m, rc, "df of the object store: %s", PIO_Strerror(rc));
        if (r2 != PIO_OK)
            pfs_log("reply to %s: %s", m->client, PIO_Strerror(r2));
        return;
    }
    struct pfs_msg rep;
    memset(&rep, 0, sizeof(rep));
    rep.off = used;
    rep.len = avail;
    rep.fid = objects;
    reply_or_log(m, &rep);
}

/* ---- requests run by a service thread ------------------------------------ */

/* Reads and writes go in steps of STEP bytes; between steps a thread that
 * borrowed the request from another class gives it back if its own class
 * has work (pfs_qos_should_yield): another thread resumes it at r->done. */
#define STEP (256u << 10)

/* step_yield - after a step of r with more to do: 1 if thread t gave r
 * back (the caller must not touch r again). */
static int step_yield(struct req *r, int t)
{
    if (!pfs_qos_should_yield(q, t))
        return 0;
    pfs_qos_yield(q, t, &r->it);
    return 1;
}

/* A failed put into a client's window, logged at most every 10 s (during a
 * link cut every piece of every reader may fail the same way). */
static void put_failed_log(const struct pfs_msg *m, size_t got, int rc)
{
    static _Atomic uint64_t last_ms;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
    uint64_t prev = atomic_load(&last_ms);
    if (prev && now - prev < 10000)
        return;
    if (!atomic_compare_exchange_strong(&last_ms, &prev, now))
        return;
    pfs_log("read for %s process %u: putting %zu bytes into its window %d failed (%s): the bytes "
            "go in the reply",
            m->client, m->proc, got, m->wid, PIO_Strerror(rc));
}

/* do_read - returns 1 when it yielded. The bytes are read into r->buf (the
 * request itself is decoded into r->m already, and a READ carries no data). */
static int do_read(struct req *r, int t)
{
    const struct pfs_msg *m = &r->m;
    if (m->len > PFS_IO_MAX) {
        char d[96];
        snprintf(d, sizeof(d), "%" PRIu64 " bytes asked, at most %u in one request", m->len,
                 PFS_IO_MAX);
        fail(m, PIO_EINVAL, "read", d);
        return 0;
    }
    uint8_t *io = r->buf;
    int rc = PIO_OK;
    if (r->done == 0) /* not a resumed one */
        pfs_iostat_note(&iostat, m->fid, m->off, m->len, 0);
    while (r->done < m->len) {
        size_t want = m->len - r->done < STEP ? (size_t)(m->len - r->done) : STEP, got = 0;
        rc = ops->read(store, m->fid, m->off + r->done, io + r->done, want, &got);
        if (rc != PIO_OK) {
            store_fail(m, rc, "read");
            return 0;
        }
        r->done += got;
        if (got < want)
            break; /* the object's end */
        if (r->done < m->len && step_yield(r, t))
            return 1;
    }
    size_t got = (size_t)(r->done < m->len ? r->done : m->len);
    struct pfs_msg rep;
    memset(&rep, 0, sizeof(rep));
    rep.len = got;
    rep.off = XXH3_64bits(io, got);
    if (m->wid >= 0) {
        if (got > 0) {
            int partner;
            PIO_Win cw = NULL; /* the client's window, by the number it sent */
            rc = PIO_Win_remote((int)m->wid, &cw);
            if (rc == PIO_OK)
                rc = pfs_srv_partner(m->client, &partner);
            if (rc == PIO_OK)
                rc = PIO_Put(cw, partner, (int)m->proc, m->disp, io, got);
            if (rc == PIO_EGONE) { /* a stale cached handle: once more, looked up afresh */
                pfs_srv_partner_forget(m->client, partner);
                rc = pfs_srv_partner(m->client, &partner);
                if (rc == PIO_OK)
                    rc = PIO_Put(cw, partner, (int)m->proc, m->disp, io, got);
            }
            if (cw)
                PIO_Win_free(&cw);
            if (rc != PIO_OK) {
                /* The one-sided path broke (a link cut: the window's ASK /
                 * DESC exchange waits for the link, the transport's
                 * connection fails), but the request and the reply travel
                 * as PIO messages, which the piods move to the links still
                 * up: the bytes go in the reply. The client reads its next
                 * pieces that way for a while (client.c, INDIRECT_S). */
                put_failed_log(m, got, rc);
                rep.data = io;
                rep.dlen = got;
            }
        }
    } else {
        rep.data = io;
        rep.dlen = got;
    }
    reply_or_log(m, &rep);
    return 0;
}

/* do_write - returns 1 when it yielded. */
static int do_write(struct req *r, int t)
{
    const struct pfs_msg *m = &r->m;
    if (m->dlen > PFS_IO_MAX) {
        fail(m, PIO_EINVAL, "write", "more than PFS_IO_MAX bytes in one request");
        return 0;
    }
    if (r->done == 0)
        pfs_iostat_note(&iostat, m->fid, m->off, m->dlen, 1);
    while (r->done < m->dlen) {
        size_t n = m->dlen - r->done < STEP ? (size_t)(m->dlen - r->done) : STEP;
        int rc = ops->write(store, m->fid, m->off + r->done, m->data + r->done, n);
        if (rc != PIO_OK) {
            store_fail(m, rc, "write");
            return 0;
        }
        r->done += n;
        if (r->done < m->dlen && step_yield(r, t))
            return 1;
    }
    struct pfs_msg rep;
    memset(&rep, 0, sizeof(rep));
    rep.len = m->dlen;
    rep.off = XXH3_64bits(m->data, m->dlen);
    reply_or_log(m, &rep);
    return 0;
}

/* run - serve r on thread t; 1 when it yielded (r is queued again). */
static int run(struct req *r, int t)
{
    const struct pfs_msg *m = &r->m;
    struct pfs_msg rep;
    memset(&rep, 0, sizeof(rep));
    int rc;
    if (!r->allowed && m->op >= PFS_OP_WRITE && m->op <= PFS_OP_OSTAT) {
        if ((rc = access_check(m)) != PIO_OK) {
            fail(m, rc, rc == PIO_ENOENT ? "no such file" : "permission denied",
                 rc == PIO_EPERM ? "the metadata server says this user may not" : PIO_Strerror(rc));
            return 0;
        }
        r->allowed = 1;
    }
    switch (m->op) {
    case PFS_OP_WRITE: return do_write(r, t);
    case PFS_OP_READ: return do_read(r, t);
    case PFS_OP_TRUNC:
        if ((rc = ops->truncate(store, m->fid, m->off)) != PIO_OK) {
            store_fail(m, rc, "truncate");
            return 0;
        }
        break;
    case PFS_OP_DESTROY:
        if ((rc = ops->destroy(store, m->fid)) != PIO_OK) {
            store_fail(m, rc, "destroy");
            return 0;
        }
        break;
    case PFS_OP_SYNC:
        if ((rc = ops->sync(store, m->fid)) != PIO_OK) {
            store_fail(m, rc, "sync");
            return 0;
        }
        break;
    case PFS_OP_OSTAT:
        if ((rc = ops->size(store, m->fid, &rep.off)) != PIO_OK) {
            store_fail(m, rc, "stat");
            return 0;
        }
        break;
    default: {
        int r2 = pfs_srv_fail(m, PIO_ENOSYS, "operation %u is not one an I/O server serves", m->op);
        if (r2 != PIO_OK)
            pfs_log("reply to %s: %s", m->client, PIO_Strerror(r2));
        return 0;
    }
    }
    reply_or_log(m, &rep);
    return 0;
}

/* ---- threads ------------------------------------------------------------- */

static void *receiver(void *arg)
{
    int tag = (int)(intptr_t)arg;
    int cls = tag < pfs_qos_nclasses(q) ? tag : 0;
    int errs = 0;
    while (!atomic_load(&stopping)) {
        pthread_mutex_lock(&tag_mtx);
        while (pending[tag] >= queue_max && !atomic_load(&stopping)) {
            struct timespec dl;
            pio_deadline_mono(&dl, (int64_t)RECV_MS * 1000000);
            pthread_cond_timedwait(&tag_cv, &tag_mtx, &dl);
        }
        pthread_mutex_unlock(&tag_mtx);
        if (atomic_load(&stopping))
            break;
        struct req *r = rec_get(tag);
        if (!r) {
            pfs_log("no memory for a request buffer (class tag %d); trying again", tag);
            usleep(100000);
            continue;
        }
        r->tag = tag;
        int rc = pfs_srv_recv(tag, r->buf, PFS_MSG_MAX, RECV_MS, &r->m);
        if (rc != PIO_OK) {
            rec_put(r);
            if (rc == PIO_ETIMEDOUT)
                continue;
            if (rc == PIO_ECLOSED || rc == PIO_ENOTINIT) {
                pfs_log("receiving requests: %s: stopping", PIO_Strerror(rc));
                atomic_store(&stopping, 1); /* main sees it within 100 ms */
                break;
            }
            if (errs++ < 10)
                pfs_log("receiving requests (class tag %d): %s", tag, PIO_Strerror(rc));
            usleep(100000);
            continue;
        }
        errs = 0;
        if (r->m.op == PFS_OP_QSTAT || r->m.op == PFS_OP_DF) {
            if (r->m.op == PFS_OP_QSTAT)
                do_qstat(&r->m);
            else
                do_df(&r->m);
            rec_put(r);
            continue;
        }
        memset(&r->it, 0, sizeof(r->it));
        r->it.cls = cls;
        r->popped = 0;
        r->done = 0;
        r->allowed = 0;
        snprintf(r->it.user, sizeof(r->it.user), "%s", r->m.user);
        pthread_mutex_lock(&tag_mtx);
        pending[tag]++;
        pthread_mutex_unlock(&tag_mtx);
        pfs_qos_push(q, &r->it);
    }
    return NULL;
}

struct svc_arg {
    int t;
};

static void *service(void *arg)
{
    int t = ((struct svc_arg *)arg)->t;
    for (;;) {
        struct pfs_qos_item *it = pfs_qos_pop(q, t, RECV_MS);
        if (!it) {
            if (atomic_load(&stopping) == 2)
                break;
            continue;
        }
        struct req *r = (struct req *)it;
        if (!r->popped) { /* a resumed request was counted out already */
            r->popped = 1;
            pthread_mutex_lock(&tag_mtx);
            pending[r->tag]--;
            pthread_cond_broadcast(&tag_cv);
            pthread_mutex_unlock(&tag_mtx);
        }
        if (run(r, t))
            continue; /* given back to its class: another thread finishes it */
        pfs_qos_done(q, t, it);
        rec_put(r);
    }
    return NULL;
}

/* ---- options ------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: pfs-iod --dir DIR [--name APP] [--mds APP] [--threads N] [--qos SPEC|off]\n"
               "               [--borrow N] [--user-cap N] [--queue N] [--store NAME]\n"
               "               [--disk-rate BYTES[K|M|G] [--disk-lanes N]]\n"
               "The I/O server of pfs: keeps file objects under DIR and serves them by\n"
               "service class (see pfs-iod(8)).\n"
               "  --dir DIR        object store directory (created if missing)\n"
               "  --name APP       PIO application name (default pfs.iod.HOST)\n"
               "  --mds APP        the metadata server that judges permissions (default pfs.mds)\n"
               "  --threads N      service threads (default 10)\n"
               "  --qos SPEC       classes NAME:SHARE,... (default interactive:20,staging:80);\n"
               "                   off: one FIFO class\n"
               "  --borrow N       most threads a class may borrow at once (default -1: no limit)\n"
               "  --user-cap N     most requests of one user in service at once (default 0: none)\n"
               "  --queue N        most requests of one class received and waiting (default 64)\n"
               "  --store NAME     storage backend (default posix)\n"
               "  --disk-rate R    emulate a device of R bytes/s (K, M, G: powers of 1024)\n"
               "  --disk-lanes N   requests the emulated device serves at once (default 1)\n");
}

static int bad(const char *fmt, const char *arg)
{
    fprintf(stderr, "pfs-iod: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (pfs-iod --help)\n");
    return 2;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"dir", required_argument, 0, 'd'},        {"name", required_argument, 0, 'n'},
        {"mds", required_argument, 0, 'm'},        {"threads", required_argument, 0, 't'},
        {"qos", required_argument, 0, 'q'},        {"borrow", required_argument, 0, 'b'},
        {"user-cap", required_argument, 0, 'u'},   {"queue", required_argument, 0, 'Q'},
        {"store", required_argument, 0, 's'},      {"disk-rate", required_argument, 0, 'r'},
        {"disk-lanes", required_argument, 0, 'l'}, {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'},          {0, 0, 0, 0}};
    const char *dir = NULL, *name = NULL, *qos_spec = "interactive:20,staging:80";
    const char *store_name = "posix";
    long nthreads = 10, borrow = -1, user_cap = 0, qmax = 64, lanes = 1;
    uint64_t rate = 0;
    int lanes_given = 0, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'd': dir = optarg; break;
        case 'n': name = optarg; break;
        case 'm': mds_name = optarg; break;
        case 't':
            if (pio_parse_int(optarg, 1, 4096, &nthreads) != 0)
                return bad("--threads %s: give a whole number 1..4096", optarg);
            break;
        case 'q': qos_spec = optarg; break;
        case 'b':
            if (pio_parse_int(optarg, -1, 4096, &borrow) != 0)
                return bad("--borrow %s: give -1 (no limit) or a whole number 0..4096", optarg);
            break;
        case 'u':
            if (pio_parse_int(optarg, 0, 1000000, &user_cap) != 0)
                return bad("--user-cap %s: give 0 (none) or a whole number of requests", optarg);
            break;
        case 'Q':
            if (pio_parse_int(optarg, 1, 65536, &qmax) != 0)
                return bad("--queue %s: give a whole number 1..65536", optarg);
            break;
        case 's': store_name = optarg; break;
        case 'r':
            if (pio_parse_bytes(optarg, &rate) != 0)
                return bad("--disk-rate %s: give bytes per second, e.g. 200M (K, M, G: powers "
                           "of 1024; 0: no limit)",
                           optarg);
            break;
        case 'l':
            if (pio_parse_int(optarg, 1, 1024, &lanes) != 0)
                return bad("--disk-lanes %s: give a whole number 1..1024", optarg);
            lanes_given = 1;
            break;
        case 'h': usage(stdout); return 0;
        case 'V': return pio_cli_version("pfs-iod");
        case ':': return bad("%s needs a value", argv[optind - 1]);
        default: return bad("unknown option %s", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return bad("unexpected argument %s", argv[optind]);
    if (!dir)
        return bad("%s", "--dir DIR is required");
    if (lanes_given && rate == 0)
        return bad("%s", "--disk-lanes needs --disk-rate");
    struct pfs_qos_class_cfg cfg[PFS_CLASS_MAX];
    const char *perr = NULL;
    int ncls = pfs_qos_parse(qos_spec, cfg, PFS_CLASS_MAX, &perr);
    if (ncls < 0) {
        fprintf(stderr, "pfs-iod: --qos %s: %s%s (pfs-iod --help)\n", qos_spec, perr,
                strstr(perr, "too many") ? " (at most 8)" : "");
        return 2;
    }
    ops = pfs_store_find(store_name);
    if (!ops)
        return bad("--store %s: no such storage backend (there is: posix)", store_name);
    if (rate && ops != &pfs_store_posix)
        return bad("--disk-rate: the %s backend cannot emulate a device speed", store_name);
    char app[PFS_NAME_MAX];
    if (name) {
        if (strlen(name) >= PFS_NAME_MAX)
            return bad("--name %s: longer than 63 characters", name);
        snprintf(app, sizeof(app), "%s", name);
    } else {
        char host[256];
        if (gethostname(host, sizeof(host)) != 0 || !host[0])
            snprintf(host, sizeof(host), "localhost");
        host[sizeof(host) - 1] = '\0';
        if (snprintf(app, sizeof(app), "pfs.iod.%s", host) >= (int)sizeof(app)) {
            fprintf(stderr,
                    "pfs-iod: the host name %s makes too long an application name: "
                    "give --name\n",
                    host);
            return 2;
        }
    }
    static char who[PFS_NAME_MAX + 16];
    snprintf(who, sizeof(who), "pfs-iod %s", app);
    pfs_log_name(who);
    queue_max = (int)qmax;

    q = pfs_qos_new(cfg, ncls, (int)nthreads, (int)borrow, (int)user_cap);
    if (!q || pfs_iostat_init(&iostat) != 0) {
        fprintf(stderr, "pfs-iod: cannot set up the service classes (out of memory?)\n");
        return 1;
    }
    int rc = ops->open(dir, &store);
    if (rc != PIO_OK) {
        fprintf(stderr, "pfs-iod: object store %s: %s\n", dir, PIO_Strerror(rc));
        pfs_qos_free(q);
        return 1;
    }
    if (rate)
        pfs_store_posix_throttle(store, rate, (int)lanes);

    /* only the main thread takes SIGTERM / SIGINT */
    static volatile int sig_stop;
    pfs_srv_signals(&sig_stop);
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, &old);

    snprintf(my_app, sizeof(my_app), "%s", app);
    rc = PIO_Init(app, 0, 1);
    if (rc != PIO_OK) {
        fprintf(stderr, "pfs-iod: PIO_Init(%s): %s\n", app, PIO_Strerror(rc));
        ops->close(store);
        pfs_qos_free(q);
        return 1;
    }
    /* the piod grants this server's receive space by the same shares: a
     * class's requests do not wait in the pool behind another's */
    if (ncls > 1) {
        int shares[PFS_CLASS_MAX];
        for (int k = 0; k < ncls; k++)
            shares[k] = cfg[k].share < 1 ? 1 : cfg[k].share > 100 ? 100 : (int)cfg[k].share;
        if ((rc = PIO_Setclasses(PFS_TAG_REQ, ncls, shares)) != PIO_OK)
            pfs_log("receive classes: %s (requests share the pool in arrival order)",
                    PIO_Strerror(rc));
    }

    pthread_t rth[PFS_CLASS_MAX];
    pthread_t *sth = calloc((size_t)nthreads, sizeof(*sth));
    struct svc_arg *sarg = calloc((size_t)nthreads, sizeof(*sarg));
    if (!sth || !sarg) {
        fprintf(stderr, "pfs-iod: out of memory\n");
        PIO_Exit();
        return 1;
    }
    int nsvc = 0, nrecv = 0;
    pio_cond_init_mono(&tag_cv);
    for (; nsvc < nthreads; nsvc++) {
        sarg[nsvc].t = nsvc;
        if (pthread_create(&sth[nsvc], NULL, service, &sarg[nsvc]) != 0)
            break;
    }
    for (; nrecv < PFS_CLASS_MAX; nrecv++)
        if (pthread_create(&rth[nrecv], NULL, receiver, (void *)(intptr_t)nrecv) != 0)
            break;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (nsvc < nthreads || nrecv < PFS_CLASS_MAX) {
        pfs_log("cannot start threads (%d of %ld service, %d of %d receivers): stopping", nsvc,
                nthreads, nrecv, PFS_CLASS_MAX);
        atomic_store(&stopping, 1);
    } else {
        char line[PFS_CLASS_MAX * (PFS_NAME_MAX + 16)];
        size_t used = 0;
        line[0] = '\0';
        int counts[PFS_CLASS_MAX] = {0};
        for (int t = 0; t < nthreads; t++)
            counts[pfs_qos_home(q, t)]++;
        for (int k = 0; k < pfs_qos_nclasses(q) && used < sizeof(line); k++)
            used += (size_t)snprintf(line + used, sizeof(line) - used, "%s[%d] %s: %d thread%s",
                                     k ? ", " : "", k, pfs_qos_class_name(q, k), counts[k],
                                     counts[k] == 1 ? "" : "s");
        char dev[96] = "";
        if (rate)
            snprintf(dev, sizeof(dev), "; emulated device %" PRIu64 " bytes/s over %ld lane(s)",
                     rate, lanes);
        pfs_log("serving %s (store %s) with %ld threads, classes %s; borrow %ld, user cap %ld, "
                "queue %ld%s",
                dir, ops->name, nthreads, line, borrow, user_cap, qmax, dev);
        pio_sd_ready();
    }

    while (!sig_stop && !atomic_load(&stopping))
        usleep(100000);
    pfs_log("stopping");
    atomic_store(&stopping, 1);
    for (int i = 0; i < nrecv; i++)
        pthread_join(rth[i], NULL);
    /* let what was received be served, for a while */
    for (int waited = 0; waited < DRAIN_MS; waited += 50) {
        int left = 0;
        pthread_mutex_lock(&tag_mtx);
        for (int i = 0; i < PFS_CLASS_MAX; i++)
            left += pending[i];
        pthread_mutex_unlock(&tag_mtx);
        if (!left || nsvc == 0)
            break;
        usleep(50000);
    }
    atomic_store(&stopping, 2);
    pfs_qos_stop(q);
    for (int i = 0; i < nsvc; i++)
        pthread_join(sth[i], NULL);
    /* what the drain left queued is never served: its records go */
    for (struct pfs_qos_item *it = pfs_qos_drain(q), *nx; it; it = nx) {
        nx = it->next;
        free(it); /* the item is the start of its struct req */
    }
    PIO_Exit();
    ops->close(store);
    pfs_qos_free(q);
    pfs_iostat_fini(&iostat);
    for (int i = 0; i < PFS_CLASS_MAX; i++)
        while (free_list[i]) {
            struct req *r = free_list[i];
            free_list[i] = r->next_free;
            free(r);
        }
    free(sth);
    free(sarg);
    return 0;
}
