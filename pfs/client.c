/* client.c - libpfs: the client side of pfs (pfs.h).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A mount is a partner handle for the metadata server plus, looked up on
 * first use, one per I/O server. Every call is request / reply over PIO:
 * the request goes on tag PFS_TAG_REQ + class, the reply comes back on
 * PFS_TAG_REP + rid (rid unique per mount), so several threads and several
 * requests in flight never take each other's replies.
 *
 * Striped I/O: a range is cut into pieces (pfs_map: one stripe unit, at most
 * PFS_IO_MAX bytes); up to PIPE pieces are in flight at once, each its own
 * request to the server of its stripe, so a write reaches all servers of the
 * layout in parallel. Reads of PFS_READ_DIRECT bytes or more go one-sided:
 * the file's window (PIPE slots of PFS_IO_MAX) is registered once, and each
 * server puts its piece into a slot (PIO_Put) before answering; smaller
 * reads come back in the reply. A server whose put failed sends the bytes
 * in the reply instead (a link cut can break the one-sided path while PIO
 * messages go on over the links still up), and the file's reads then go in
 * replies for INDIRECT_S, so that each piece does not wait out the same
 * failure at the server.
 *
 * The size of a file lives at the metadata server; a writer reports the
 * end of what it wrote on fsync and close (SETSIZE, grow-only). A reader
 * that reaches the size it knew asks again (another writer may have grown
 * the file meanwhile).
 *
 * Locks: fs->mtx guards the partner and class tables only; it is never held
 * across a PIO call that waits.
 */
#include "pfs.h"
#include "layout.h"
#include "proto.h"
#include "pio.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define PIPE       16 /* pieces in flight per call */
#define RPC_BUF    (PFS_HDR_MAX + 4096)
#define TIMEOUT_MS 120000
#define INDIRECT_S 30 /* s of reads in replies after a failed put (the piods' link-timeout) */

struct pfs_fs {
    int mds;
    char app[PIO_NAME_MAX];
    uint32_t proc;
    char user[PFS_USER_MAX];
    char cls[PFS_NAME_MAX];
    atomic_uint_fast64_t next_rid;
    int timeout_ms;
    pthread_mutex_t mtx;
    int nservers;
    char **names; /* nservers */
    int *part;    /* partner handles, -1 until looked up */
    int *clsidx;  /* class index of cls at each server, -1 until asked */
    char *names_buf;
};

struct pfs_file {
    pfs_fs *fs;
    char path[PFS_PATH_MAX];
    struct pfs_attr attr;
    struct pfs_layout lay;
    int flags;
    uint64_t pos;
    uint64_t size;  /* the largest size we know of */
    uint64_t wrote; /* end of what we wrote (0: nothing) */
    int dirty;
    PIO_Win win;
    uint8_t *winbuf;
    struct xfer *wx, *rx; /* striped transfer state, kept for reuse */
    double indirect;      /* CLOCK_MONOTONIC s: until then reads go in replies */
};

static _Thread_local char errtext[512];

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *pfs_errtext(void)
{
    return errtext;
}

static int fail(int st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errtext, sizeof(errtext), fmt, ap);
    va_end(ap);
    return st;
}

/* ---- requests --------------------------------------------------------------- */

static void req_init(pfs_fs *fs, struct pfs_msg *m, uint32_t op)
{
    memset(m, 0, sizeof(*m));
    m->op = op;
    m->wid = -1;
    m->proc = fs->proc;
    m->rid = atomic_fetch_add(&fs->next_rid, 1);
    snprintf(m->client, sizeof(m->client), "%s", fs->app);
    snprintf(m->user, sizeof(m->user), "%s", fs->user);
}

/* One request in flight: its buffers and PIO requests. */
struct call {
    uint8_t *sbuf;
    size_t scap;
    uint8_t *rbuf;
    size_t rcap;
    PIO_Request sreq, rreq;
    uint64_t rid;
    int server; /* -1: the metadata server */
    int leak;   /* the reply's receive was abandoned: rbuf must never be freed */
};

/* call_post_raw - post the reply's receive, then send c->sbuf[0..n). */
static int call_post_raw(struct call *c, int partner, int cls, uint64_t rid, size_t n)
{
    c->rid = rid;
    int rc = PIO_Irecv(partner, 0, PFS_TAG_REP + (int)(rid % PFS_RID_SPAN), c->rbuf, PIO_BYTE,
                       c->rcap, PIO_BLOCKING, &c->rreq);
    if (rc != PIO_OK)
        return rc;
    rc = PIO_Isend(partner, 0, PFS_TAG_REQ + cls, PIO_DYNAMIC, c->sbuf, PIO_BYTE, n, PIO_BLOCKING,
                   &c->sreq);
    if (rc != PIO_OK) {
        /* nothing will answer: drop the receive (a late reply is discarded with it) */
        PIO_Wait(&c->rreq, 0, NULL);
        c->rreq = NULL;
    }
    return rc;
}

static int call_post(struct call *c, int partner, int cls, const struct pfs_msg *m)
{
    size_t n = pfs_msg_encode(m, c->sbuf, c->scap);
    if (!n)
        return fail(PIO_EINVAL, "request too large");
    return call_post_raw(c, partner, cls, m->rid, n);
}

static const char *who(pfs_fs *fs, int server)
{
    return server < 0 ? "metadata server" : fs->names[server];
}

/* part_of - server's partner handle (another thread may be filling it in). */
static int part_of(pfs_fs *fs, int server)
{
    pthread_mutex_lock(&fs->mtx);
    int part = fs->part[server];
    pthread_mutex_unlock(&fs->mtx);
    return part;
}

/* call_wait - the reply of c into rep (rep->data points into c->rbuf). */
static int call_wait(pfs_fs *fs, struct call *c, struct pfs_msg *rep)
{
    PIO_Status st;
    int rc = PIO_OK;
    if (c->sreq)
        rc = PIO_Wait(&c->sreq, fs->timeout_ms, NULL);
    c->sreq = NULL;
    int rc2 = c->rreq ? PIO_Wait(&c->rreq, fs->timeout_ms, &st) : PIO_ECANCELED;
    if (rc2 == PIO_ETIMEDOUT) /* PIO cannot cancel a receive: abandon it with its buffer */
        c->leak = 1;
    c->rreq = NULL;
    if (rc == PIO_OK)
        rc = rc2;
    if (rc != PIO_OK)
        return fail(rc, "%s (%s): %s", who(fs, c->server), c->server < 0 ? "request" : "I/O",
                    PIO_Strerror(rc));
    if (pfs_msg_decode(c->rbuf, st.bytes, rep) != 0 || rep->op != PFS_OP_REPLY ||
        rep->rid != c->rid)
        return fail(PIO_EPROTO, "%s: malformed reply", who(fs, c->server));
    if (rep->err != PIO_OK)
        return fail(rep->err, "%s: %s", who(fs, c->server),
                    rep->text[0] ? rep->text : PIO_Strerror(rep->err));
    errtext[0] = '\0';
    return PIO_OK;
}

/* rpc - one request to partner and its reply; rbuf/rcap hold the reply
 * (RPC_BUF bytes if NULL: no data expected beyond 4 KiB). */
static int rpc(pfs_fs *fs, int server, int cls, struct pfs_msg *m, struct pfs_msg *rep,
               uint8_t *rbuf, size_t rcap)
{
    uint8_t sbuf[RPC_BUF];
    uint8_t *small = rbuf ? NULL : malloc(RPC_BUF);
    if (!rbuf && !small)
        return PIO_ENOMEM;
    struct call c = {.sbuf = sbuf,
                     .scap = sizeof(sbuf),
                     .rbuf = rbuf ? rbuf : small,
                     .rcap = rbuf ? rcap : RPC_BUF,
                     .server = server};
    int partner = server < 0 ? fs->mds : part_of(fs, server);
    int rc = call_post(&c, partner, cls, m);
    if (rc != PIO_OK)
        rc = fail(rc, "%s: %s", who(fs, server), PIO_Strerror(rc));
    else
        rc = call_wait(fs, &c, rep);
    if (small && rc == PIO_OK && rep->dlen) /* the caller cannot see small[] */
        rep->data = NULL, rep->dlen = 0;
    if (!c.leak)
        free(small);
    return rc;
}

static int mds_rpc(pfs_fs *fs, struct pfs_msg *m, struct pfs_msg *rep)
{
    return rpc(fs, -1, 0, m, rep, NULL, 0);
}

/* ---- servers and classes --------------------------------------------------------- */

/* server_ready - partner handle and class index of server i. */
static int server_ready(pfs_fs *fs, int i, int *cls)
{
    char want[PFS_NAME_MAX]; /* pfs_set_class may change fs->cls meanwhile */
    pthread_mutex_lock(&fs->mtx);
    int part = fs->part[i], ci = fs->clsidx[i];
    memcpy(want, fs->cls, sizeof(want));
    pthread_mutex_unlock(&fs->mtx);
    if (part < 0) {
        int rc = PIO_Addpartner(fs->names[i], &part);
        if (rc != PIO_OK)
            return fail(rc, "I/O server %s: %s", fs->names[i], PIO_Strerror(rc));
        pthread_mutex_lock(&fs->mtx);
        fs->part[i] = part;
        pthread_mutex_unlock(&fs->mtx);
    }
    if (ci < 0) {
        char text[4096];
        int rc = pfs_qos(fs, i, 0, text, sizeof(text));
        if (rc != PIO_OK)
            return rc;
        ci = 0;
        int k = 0;
        for (char *l = text; l && *l; k++) {
            char name[PFS_NAME_MAX];
            if (sscanf(l, "class %63s", name) == 1 && strcmp(name, want) == 0) {
                ci = k;
                break;
            }
            l = strchr(l, '\n');
            if (l)
                l++;
        }
        pthread_mutex_lock(&fs->mtx);
        fs->clsidx[i] = ci;
        pthread_mutex_unlock(&fs->mtx);
    }
    *cls = ci;
    return PIO_OK;
}

int pfs_mount(const char *mds, const char *cls, pfs_fs **out)
{
    *out = NULL;
    PIO_Appinfo me;
    int rc = PIO_Getappinfo(PIO_SELF, &me);
    if (rc != PIO_OK)
        return fail(rc, "PIO: %s", PIO_Strerror(rc));
    pfs_fs *fs = calloc(1, sizeof(*fs));
    if (!fs)
        return PIO_ENOMEM;
    pthread_mutex_init(&fs->mtx, NULL);
    snprintf(fs->app, sizeof(fs->app), "%s", me.name);
    fs->proc = (uint32_t)me.process_ID;
    const char *u = getenv("USER");
    snprintf(fs->user, sizeof(fs->user), "%s", u && *u ? u : "nobody");
    if (!cls)
        cls = getenv("PFS_CLASS");
    snprintf(fs->cls, sizeof(fs->cls), "%s", cls && *cls ? cls : "interactive");
    const char *t = getenv("PFS_TIMEOUT");
    fs->timeout_ms = t && atoi(t) > 0 ? atoi(t) * 1000 : TIMEOUT_MS;
    atomic_init(&fs->next_rid, (uint64_t)getpid() << 24);
    if (!mds)
        mds = getenv("PFS_MDS");
    if (!mds || !*mds)
        mds = "pfs.mds";
    rc = PIO_Addpartner(mds, &fs->mds);
    if (rc != PIO_OK) {
        free(fs);
        return fail(rc, "metadata server %s: %s", mds, PIO_Strerror(rc));
    }
    struct pfs_msg m, rep;
    uint8_t *rbuf = malloc(PFS_MSG_MAX);
    if (!rbuf) {
        free(fs);
        return PIO_ENOMEM;
    }
    req_init(fs, &m, PFS_OP_STATFS);
    rc = rpc(fs, -1, 0, &m, &rep, rbuf, PFS_MSG_MAX);
    if (rc == PIO_OK && (rep.len == 0 || rep.len > PFS_SERVERS_MAX))
        rc = fail(PIO_ECONFIG, "metadata server %s lists %llu I/O servers", mds,
                  (unsigned long long)rep.len);
    if (rc == PIO_OK) {
        fs->nservers = (int)rep.len;
        fs->names_buf = malloc(rep.dlen + 1);
        fs->names = calloc((size_t)fs->nservers, sizeof(char *));
        fs->part = malloc(sizeof(int) * (size_t)fs->nservers);
        fs->clsidx = malloc(sizeof(int) * (size_t)fs->nservers);
        if (!fs->names_buf || !fs->names || !fs->part || !fs->clsidx)
            rc = PIO_ENOMEM;
    }
    if (rc == PIO_OK) {
        memcpy(fs->names_buf, rep.data, rep.dlen);
        fs->names_buf[rep.dlen] = '\0';
        size_t pos = 0;
        for (int i = 0; i < fs->nservers; i++) {
            if (pos >= rep.dlen) {
                rc = fail(PIO_EPROTO, "metadata server: short server list");
                break;
            }
            fs->names[i] = fs->names_buf + pos;
            pos += strlen(fs->names[i]) + 1;
            fs->part[i] = -1;
            fs->clsidx[i] = -1;
        }
    }
    if (rc != PIO_ETIMEDOUT) /* else PIO may still write into it */
        free(rbuf);
    if (rc != PIO_OK) {
        pfs_umount(fs);
        return rc;
    }
    *out = fs;
    return PIO_OK;
}

int pfs_umount(pfs_fs *fs)
{
    if (!fs)
        return PIO_OK;
    free(fs->names_buf);
    free(fs->names);
    free(fs->part);
    free(fs->clsidx);
    pthread_mutex_destroy(&fs->mtx);
    free(fs);
    return PIO_OK;
}

int pfs_set_class(pfs_fs *fs, const char *cls)
{
    if (!cls || !*cls || strlen(cls) >= PFS_NAME_MAX)
        return PIO_EINVAL;
    pthread_mutex_lock(&fs->mtx);
    snprintf(fs->cls, sizeof(fs->cls), "%s", cls);
    for (int i = 0; i < fs->nservers; i++)
        fs->clsidx[i] = -1;
    pthread_mutex_unlock(&fs->mtx);
    return PIO_OK;
}

int pfs_nservers(pfs_fs *fs)
{
    return fs->nservers;
}

const char *pfs_server_name(pfs_fs *fs, int i)
{
    return i >= 0 && i < fs->nservers ? fs->names[i] : NULL;
}

/* ---- metadata ------------------------------------------------------------------- */

static int path_check(const char *path)
{
    return pfs_path_ok(path) ? PIO_OK : fail(PIO_EINVAL, "%s: not an absolute pfs path", path);
}

static void to_stripe(const struct pfs_layout *l, pfs_stripe *s)
{
    memset(s, 0, sizeof(*s));
    s->stripe_size = l->stripe_size;
    s->count = l->count;
    for (uint32_t i = 0; i < l->count && i < PFS_STRIPES_LIMIT; i++)
        s->servers[i] = l->servers[i];
}

static void to_stat(const struct pfs_msg *rep, pfs_stat *st)
{
    memset(st, 0, sizeof(*st));
    st->fid = rep->attr.fid;
    st->is_dir = rep->attr.type == PFS_T_DIR;
    st->mode = rep->attr.mode;
    st->uid = rep->attr.uid;
    st->gid = rep->attr.gid;
    st->size = rep->attr.size;
    st->mtime_ns = rep->attr.mtime_ns;
    to_stripe(&rep->layout, &st->stripe);
}

/* LOOKUP of path; intent: PFS_F_RD / PFS_F_WR of an open (the server
 * checks the permission), 0 for a stat. */
static int lookup_for(pfs_fs *fs, const char *path, uint32_t intent, struct pfs_msg *rep)
{
    int rc = path_check(path);
    if (rc != PIO_OK)
        return rc;
    struct pfs_msg m;
    req_init(fs, &m, PFS_OP_LOOKUP);
    snprintf(m.path, sizeof(m.path), "%s", path);
    m.flags = intent;
    return mds_rpc(fs, &m, rep);
}

static int lookup(pfs_fs *fs, const char *path, struct pfs_msg *rep)
{
    return lookup_for(fs, path, 0, rep);
}

/* The process' umask (read, not changed: umask(2) would race other
 * threads), 022 when /proc does not say. */
static uint32_t proc_umask(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[128];
    unsigned v = 022;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "Umask: %o", &v) == 1)
            break;
    if (f)
        fclose(f);
    return v & 0777;
}

int pfs_stat_path(pfs_fs *fs, const char *path, pfs_stat *st)
{
    struct pfs_msg rep;
    int rc = lookup(fs, path, &rep);
    if (rc == PIO_OK)
        to_stat(&rep, st);
    return rc;
}

/* simple metadata requests: op on path (and path2) with flags and mode */
static int meta(pfs_fs *fs, uint32_t op, const char *path, const char *path2, uint32_t flags,
                uint32_t mode, struct pfs_msg *rep)
{
    int rc = path_check(path);
    if (rc == PIO_OK && path2)
        rc = path_check(path2);
    if (rc != PIO_OK)
        return rc;
    struct pfs_msg m;
    req_init(fs, &m, op);
    snprintf(m.path, sizeof(m.path), "%s", path);
    if (path2)
        snprintf(m.path2, sizeof(m.path2), "%s", path2);
    m.flags = flags;
    m.attr.mode = mode;
    return mds_rpc(fs, &m, rep);
}

int pfs_mkdir(pfs_fs *fs, const char *path, uint32_t mode)
{
    struct pfs_msg rep;
    return meta(fs, PFS_OP_MKDIR, path, NULL, 0, mode & 07777 & ~proc_umask(), &rep);
}

/* each_object - op (PFS_OP_DESTROY, PFS_OP_TRUNC or PFS_OP_SYNC) on the
 * object of file fid on every server of l, one after the other; TRUNC sets
 * each object to the size it has in a file of size bytes. all: go on after
 * a failure. Returns the first failure. */
static int each_object(pfs_fs *fs, uint64_t fid, const struct pfs_layout *l, uint32_t op,
                       uint64_t size, int all)
{
    int rc = PIO_OK;
    for (uint32_t i = 0; i < l->count && (all || rc == PIO_OK); i++) {
        int s = (int)l->servers[i], cls;
        if (s >= fs->nservers)
            continue;
        int r = server_ready(fs, s, &cls);
        if (r == PIO_OK) {
            struct pfs_msg m, rep;
            req_init(fs, &m, op);
            m.fid = fid;
            if (op == PFS_OP_TRUNC)
                m.off = pfs_object_size(l, i, size);
            r = rpc(fs, s, cls, &m, &rep, NULL, 0);
        }
        if (r != PIO_OK && rc == PIO_OK)
            rc = r;
    }
    return rc;
}

/* destroy - remove the objects of a removed file (the name is gone already:
 * what fails only leaves an orphan object behind). */
static int destroy(pfs_fs *fs, uint64_t fid, const struct pfs_layout *l)
{
    return each_object(fs, fid, l, PFS_OP_DESTROY, 0, 1);
}

int pfs_unlink(pfs_fs *fs, const char *path)
{
    struct pfs_msg rep;
    int rc = meta(fs, PFS_OP_UNLINK, path, NULL, 0, 0, &rep);
    if (rc == PIO_OK && rep.attr.type == PFS_T_FILE)
        destroy(fs, rep.attr.fid, &rep.layout); /* the name is gone: orphans only cost space */
    return rc;
}

int pfs_rmdir(pfs_fs *fs, const char *path)
{
    struct pfs_msg rep;
    return meta(fs, PFS_OP_UNLINK, path, NULL, PFS_F_DIR, 0, &rep);
}

int pfs_rename(pfs_fs *fs, const char *from, const char *to)
{
    struct pfs_msg rep;
    int rc = meta(fs, PFS_OP_RENAME, from, to, 0, 0, &rep);
    if (rc == PIO_OK && (rep.flags & PFS_F_REPLACED))
        destroy(fs, rep.attr.fid, &rep.layout);
    return rc;
}

/* SETATTR of path: flags PFS_F_MTIME and/or PFS_F_MODE with their values */
static int setattr(pfs_fs *fs, const char *path, uint32_t flags, uint32_t mode, int64_t mtime_ns)
{
    int rc = path_check(path);
    if (rc != PIO_OK)
        return rc;
    struct pfs_msg m, rep;
    req_init(fs, &m, PFS_OP_SETATTR);
    snprintf(m.path, sizeof(m.path), "%s", path);
    m.flags = flags;
    m.attr.mode = mode & 07777;
    m.attr.mtime_ns = mtime_ns;
    return mds_rpc(fs, &m, &rep);
}

int pfs_set_mtime(pfs_fs *fs, const char *path, int64_t mtime_ns)
{
    return setattr(fs, path, PFS_F_MTIME, 0, mtime_ns);
}

int pfs_chmod(pfs_fs *fs, const char *path, uint32_t mode)
{
    return setattr(fs, path, PFS_F_MODE, mode, 0);
}

static int entcmp(const void *a, const void *b)
{
    return strcmp(((const pfs_entry *)a)->name, ((const pfs_entry *)b)->name);
}

int pfs_readdir(pfs_fs *fs, const char *path, pfs_entry **ents, size_t *n)
{
    *ents = NULL;
    *n = 0;
    int rc = path_check(path);
    if (rc != PIO_OK)
        return rc;
    uint8_t *rbuf = malloc(PFS_MSG_MAX);
    if (!rbuf)
        return PIO_ENOMEM;
    pfs_entry *v = NULL;
    size_t cnt = 0, cap = 0;
    for (int more = 1; more && rc == PIO_OK;) {
        struct pfs_msg m, rep;
        req_init(fs, &m, PFS_OP_READDIR);
        snprintf(m.path, sizeof(m.path), "%s", path);
        m.off = cnt;
        rc = rpc(fs, -1, 0, &m, &rep, rbuf, PFS_MSG_MAX);
        if (rc != PIO_OK)
            break;
        more = (rep.flags & PFS_F_MORE) != 0;
        size_t pos = 0, before = cnt;
        struct pfs_dirent e;
        int k;
        while ((k = pfs_dirent_next(rep.data, rep.dlen, &pos, &e)) == 1) {
            if (cnt == cap) {
                cap = cap ? 2 * cap : 64;
                pfs_entry *nv = realloc(v, cap * sizeof(*v));
                if (!nv) {
                    rc = PIO_ENOMEM;
                    break;
                }
                v = nv;
            }
            pfs_entry *o = &v[cnt++];
            snprintf(o->name, sizeof(o->name), "%s", e.name);
            o->is_dir = e.type == PFS_T_DIR;
            o->mode = e.mode;
            o->size = e.size;
            o->mtime_ns = e.mtime_ns;
        }
        if (k < 0 && rc == PIO_OK)
            rc = fail(PIO_EPROTO, "metadata server: malformed directory entries");
        if (more && cnt == before && rc == PIO_OK)
            rc = fail(PIO_EPROTO, "metadata server: READDIR made no progress");
    }
    if (rc != PIO_ETIMEDOUT) /* else PIO may still write into it */
        free(rbuf);
    if (rc != PIO_OK) {
        free(v);
        return rc;
    }
    if (cnt)
        qsort(v, cnt, sizeof(*v), entcmp);
    *ents = v;
    *n = cnt;
    return PIO_OK;
}

int pfs_setstripe(pfs_fs *fs, const char *path, uint32_t count, uint64_t stripe_size)
{
    int rc = path_check(path);
    if (rc != PIO_OK)
        return rc;
    struct pfs_msg m, rep;
    req_init(fs, &m, PFS_OP_SETSTRIPE);
    snprintf(m.path, sizeof(m.path), "%s", path);
    m.layout.count = count > PFS_STRIPES_MAX ? PFS_STRIPES_MAX : count;
    m.layout.stripe_size = stripe_size;
    return mds_rpc(fs, &m, &rep);
}

int pfs_getstripe(pfs_fs *fs, const char *path, pfs_stripe *stripe)
{
    struct pfs_msg rep;
    int rc = lookup(fs, path, &rep);
    if (rc == PIO_OK)
        to_stripe(&rep.layout, stripe);
    return rc;
}

/* ---- files ------------------------------------------------------------------- */

static int file_new(pfs_fs *fs, const char *path, int flags, const struct pfs_msg *rep,
                    pfs_file **out)
{
    if (rep->attr.type == PFS_T_DIR)
        return fail(PIO_EISDIR, "%s: is a directory", path);
    if (!pfs_layout_valid(&rep->layout, (uint32_t)fs->nservers))
        return fail(PIO_EPROTO, "%s: the metadata server gave an unusable layout", path);
    pfs_file *f = calloc(1, sizeof(*f));
    if (!f)
        return PIO_ENOMEM;
    f->fs = fs;
    snprintf(f->path, sizeof(f->path), "%s", path);
    f->attr = rep->attr;
    f->lay = rep->layout;
    f->flags = flags;
    f->size = rep->attr.size;
    *out = f;
    return PIO_OK;
}

static int create_req(pfs_fs *fs, const char *path, uint32_t flags, uint32_t mode,
                      const pfs_stripe *stripe, uint64_t size_hint, struct pfs_msg *rep)
{
    struct pfs_msg m;
    req_init(fs, &m, PFS_OP_CREATE);
    snprintf(m.path, sizeof(m.path), "%s", path);
    m.flags = flags;
    m.attr.mode = mode & 07777 & ~proc_umask();
    m.off = size_hint;
    if (stripe) { /* a wish: the metadata server caps it at the servers there are */
        m.layout.count = stripe->count > PFS_STRIPES_MAX ? PFS_STRIPES_MAX : stripe->count;
        m.layout.stripe_size = stripe->stripe_size;
    }
    return mds_rpc(fs, &m, rep);
}

int pfs_open(pfs_fs *fs, const char *path, int flags, uint32_t mode, pfs_file **f)
{
    *f = NULL;
    int rc = path_check(path);
    if (rc != PIO_OK)
        return rc;
    int acc = flags & 3;
    if (acc == 3)
        return fail(PIO_EINVAL, "%s: bad open flags", path);
    struct pfs_msg rep;
    /* what the open will do: the metadata server checks it */
    uint32_t intent = (acc != PFS_WRONLY ? PFS_F_RD : 0) | (acc != PFS_RDONLY ? PFS_F_WR : 0);
    if (flags & PFS_CREAT) {
        uint32_t fl = ((flags & PFS_EXCL) ? PFS_F_EXCL : 0) |
                      ((flags & PFS_TRUNC) && acc != PFS_RDONLY ? PFS_F_TRUNC : 0);
        rc = create_req(fs, path, fl | intent, mode, NULL, 0, &rep);
    } else {
        rc = lookup_for(fs, path, intent, &rep);
        if (rc == PIO_OK && rep.attr.type == PFS_T_FILE && (flags & PFS_TRUNC) &&
            acc != PFS_RDONLY) {
            struct pfs_msg m, r2;
            req_init(fs, &m, PFS_OP_SETSIZE);
            m.fid = rep.attr.fid;
            m.flags = PFS_F_EXACT;
            rc = mds_rpc(fs, &m, &r2);
            rep.attr.size = 0;
        }
    }
    if (rc != PIO_OK)
        return rc;
    rc = file_new(fs, path, flags, &rep, f);
    if (rc == PIO_OK && (flags & PFS_TRUNC) && acc != PFS_RDONLY &&
        (rc = each_object(fs, (*f)->attr.fid, &(*f)->lay, PFS_OP_TRUNC, 0, 0)) != PIO_OK) {
        free(*f);
        *f = NULL;
    }
    return rc;
}

int pfs_create(pfs_fs *fs, const char *path, uint32_t mode, const pfs_stripe *stripe,
               uint64_t size_hint, pfs_file **f)
{
    *f = NULL;
    int rc = pfs_unlink(fs, path);
    if (rc != PIO_OK && rc != PIO_ENOENT)
        return rc;
    struct pfs_msg rep;
    rc = create_req(fs, path, PFS_F_EXCL | PFS_F_WR, mode, stripe, size_hint, &rep);
    if (rc != PIO_OK)
        return rc;
    return file_new(fs, path, PFS_WRONLY | PFS_CREAT, &rep, f);
}

/* Striped transfer: up to PIPE pieces in flight, one slot each. The pieces
 * come from a file range (xfer_run) or from a list of object extents on one
 * server (pfs_batch_write); either way the oldest piece posted is waited for
 * first. */
struct xfer {
    pfs_fs *fs;
    pfs_file *f; /* NULL for a batch */
    int write;
    int direct; /* reads: the servers put into the window, slot k at k * PFS_IO_MAX */
    struct call c[PIPE];
    struct pfs_piece p[PIPE];
    uint8_t *dst[PIPE];  /* reads: where the piece goes in the caller's buffer */
    uint64_t hash[PIPE]; /* writes: XXH3-64 of the piece sent */
    int busy[PIPE];
    uint64_t fid[PIPE];   /* the file whose object slot k's piece is in */
    uint64_t order[PIPE]; /* when slot k was posted */
    uint64_t posted;
    uint64_t end; /* reads: end of the bytes the servers had */
};

static void xfer_free(struct xfer *x)
{
    if (!x)
        return;
    for (int k = 0; k < PIPE; k++) {
        free(x->c[k].sbuf);
        if (!x->c[k].leak)
            free(x->c[k].rbuf);
    }
    free(x);
}

/* xfer_get - f's transfer state for writes or reads, kept with the file so
 * its buffers are allocated (and faulted in) once, slot by slot as used. */
static struct xfer *xfer_get(pfs_file *f, int write, int direct)
{
    struct xfer **xp = write ? &f->wx : &f->rx;
    if (!*xp && !(*xp = calloc(1, sizeof(**xp))))
        return NULL;
    struct xfer *x = *xp;
    x->fs = f->fs;
    x->f = f;
    x->write = write;
    x->direct = direct;
    x->end = 0;
    return x;
}

/* slot_buffers - slot k's buffers, allocated on first use; a slot whose
 * reply was abandoned gets a fresh receive buffer. */
static int slot_buffers(struct xfer *x, int k)
{
    struct call *c = &x->c[k];
    size_t scap = x->write ? PFS_MSG_MAX : RPC_BUF, rcap = x->write ? RPC_BUF : PFS_MSG_MAX;
    if (c->leak) {
        c->rbuf = NULL;
        c->leak = 0;
    }
    if (!c->sbuf && !(c->sbuf = malloc(scap)))
        return PIO_ENOMEM;
    c->scap = scap;
    if (!c->rbuf && !(c->rbuf = malloc(rcap)))
        return PIO_ENOMEM;
    c->rcap = rcap;
    return PIO_OK;
}

/* slot_post - post piece pc of file fid's object on server s in slot k
 * (writes: its bytes are src). */
static int slot_post(struct xfer *x, int k, int s, uint64_t fid, struct pfs_piece pc,
                     const uint8_t *src)
{
    pfs_fs *fs = x->fs;
    int cls;
    int rc = server_ready(fs, s, &cls);
    if (rc != PIO_OK)
        return rc;
    if ((rc = slot_buffers(x, k)) != PIO_OK)
        return rc;
    struct call *c = &x->c[k];
    struct pfs_msg m;
    req_init(fs, &m, x->write ? PFS_OP_WRITE : PFS_OP_READ);
    m.fid = fid;
    m.off = pc.obj_off;
    m.len = pc.len;
    m.cls = (uint32_t)cls;
    c->server = s;
    x->p[k] = pc;
    x->fid[k] = fid;
    size_t n;
    if (x->write) {
        m.dlen = (size_t)pc.len;
        n = pfs_msg_encode_head(&m, c->sbuf, c->scap);
        if (!n || c->scap - n < pc.len)
            return fail(PIO_EINTERNAL, "piece too large");
        memcpy(c->sbuf + n, src, (size_t)pc.len);
        x->hash[k] = XXH3_64bits(src, (size_t)pc.len);
        n += (size_t)pc.len;
    } else {
        if (x->direct) {
            m.wid = PIO_Win_number(x->f->win);
            m.disp = (uint64_t)k * PFS_IO_MAX;
        }
        n = pfs_msg_encode(&m, c->sbuf, c->scap);
        if (!n)
            return fail(PIO_EINTERNAL, "request too large");
    }
    rc = call_post_raw(c, part_of(fs, s), cls, m.rid, n);
    if (rc != PIO_OK)
        return fail(rc, "I/O server %s: %s", fs->names[s], PIO_Strerror(rc));
    x->busy[k] = 1;
    x->order[k] = x->posted++;
    return PIO_OK;
}

/* damaged - the failure of a piece whose checksum did not match. */
static int damaged(struct xfer *x, int k, uint64_t bytes)
{
    const char *srv = x->fs->names[x->c[k].server];
    if (x->f)
        return fail(PIO_EIO,
                    "I/O server %s: the %" PRIu64 " bytes at %" PRIu64
                    " of %s arrived damaged (checksum)",
                    srv, bytes, x->p[k].file_off, x->f->path);
    return fail(PIO_EIO,
                "I/O server %s: the %" PRIu64 " bytes at %" PRIu64 " of object 0x%016" PRIx64
                " arrived damaged (checksum)",
                srv, bytes, x->p[k].obj_off, x->fid[k]);
}

static int slot_finish(struct xfer *x, int k)
{
    struct pfs_msg rep;
    x->busy[k] = 0;
    int rc = call_wait(x->fs, &x->c[k], &rep);
    if (rc != PIO_OK)
        return rc;
    struct pfs_piece *pc = &x->p[k];
    const char *srv = x->fs->names[x->c[k].server];
    if (x->write)
        return rep.len != pc->len || rep.off != x->hash[k] ? damaged(x, k, pc->len) : PIO_OK;
    uint64_t got = rep.len < pc->len ? rep.len : pc->len;
    if (x->direct && got > 0 && rep.dlen > 0) /* the server could not put: in the reply */
        x->f->indirect = mono_s() + INDIRECT_S;
    if (x->direct && rep.dlen == 0)
        memcpy(x->dst[k], x->f->winbuf + (size_t)k * PFS_IO_MAX, (size_t)got);
    else if (rep.dlen >= got)
        memcpy(x->dst[k], rep.data, (size_t)got);
    else
        return fail(PIO_EPROTO, "I/O server %s: short read reply", srv);
    if (XXH3_64bits(x->dst[k], (size_t)got) != rep.off)
        return damaged(x, k, got);
    memset(x->dst[k] + got, 0, (size_t)(pc->len - got)); /* a hole, or past the object's end */
    if (got && pc->file_off + got > x->end)
        x->end = pc->file_off + got;
    return PIO_OK;
}

/* The next piece of a transfer: on server s, of file fid's object. */
struct next_piece {
    int s;
    uint64_t fid;
    struct pfs_piece pc;
    uint8_t *buf; /* its bytes (writes) or where they go (reads) */
};

/* xfer_pump - post the pieces next() gives (it returns 0 when there are no
 * more) with up to PIPE in flight, waiting for the oldest when all slots
 * are busy; stops posting at the first failure and returns it once the
 * pieces in flight are in. */
static int xfer_pump(struct xfer *x, int (*next)(void *ctx, struct next_piece *np), void *ctx)
{
    int rc = PIO_OK, inflight = 0, more = 1;
    char first[sizeof(errtext)] = ""; /* the words of rc: later pieces' calls overwrite errtext */
    while (more || inflight > 0) {
        int k = -1;
        for (int i = 0; i < PIPE && k < 0; i++)
            if (!x->busy[i])
                k = i;
        if (rc == PIO_OK && more && k >= 0) {
            struct next_piece np;
            if (!(more = next(ctx, &np)))
                continue;
            x->dst[k] = np.buf;
            rc = slot_post(x, k, np.s, np.fid, np.pc, np.buf);
            if (rc == PIO_OK) {
                inflight++;
                continue;
            }
            snprintf(first, sizeof(first), "%s", errtext);
        }
        if (rc != PIO_OK && inflight == 0)
            break;
        int o = -1; /* the oldest piece in flight */
        for (int i = 0; i < PIPE; i++)
            if (x->busy[i] && (o < 0 || x->order[i] < x->order[o]))
                o = i;
        if (o < 0)
            break;
        int r = slot_finish(x, o);
        inflight--;
        if (r != PIO_OK && rc == PIO_OK) {
            rc = r;
            snprintf(first, sizeof(first), "%s", errtext);
        }
    }
    if (rc != PIO_OK)
        snprintf(errtext, sizeof(errtext), "%s", first);
    return rc;
}

struct range_src {
    pfs_file *f;
    uint8_t *buf;
    uint64_t off, len, done;
};

static int range_next(void *ctx, struct next_piece *np)
{
    struct range_src *r = ctx;
    if (r->done >= r->len)
        return 0;
    np->pc = pfs_map(&r->f->lay, r->off + r->done, r->len - r->done, PFS_IO_MAX);
    np->s = (int)r->f->lay.servers[np->pc.stripe];
    np->fid = r->f->attr.fid;
    np->buf = r->buf + r->done;
    r->done += np->pc.len;
    return 1;
}

/* xfer_run - move [off, off + len) between buf and the servers. */
static int xfer_run(struct xfer *x, uint8_t *buf, uint64_t off, uint64_t len)
{
    struct range_src r = {.f = x->f, .buf = buf, .off = off, .len = len};
    return xfer_pump(x, range_next, &r);
}

static int ensure_window(pfs_file *f)
{
    if (f->win)
        return PIO_OK;
    if (posix_memalign((void **)&f->winbuf, 4096, (size_t)PIPE * PFS_IO_MAX) != 0)
        return PIO_ENOMEM;
    /* the servers we named (PIO_Addpartner) move the data in and out */
    int rc = PIO_Win_create(f->winbuf, (size_t)PIPE * PFS_IO_MAX, PIO_WIN_PARTNERS, &f->win);
    if (rc != PIO_OK) {
        free(f->winbuf);
        f->winbuf = NULL;
        f->win = NULL;
        return fail(rc, "one-sided window: %s", PIO_Strerror(rc));
    }
    return PIO_OK;
}

/* refresh_size - ask the metadata server for f's size (another writer may
 * have grown it). */
static int refresh_size(pfs_file *f)
{
    struct pfs_msg rep;
    int rc = lookup(f->fs, f->path, &rep);
    if (rc == PIO_OK && rep.attr.fid == f->attr.fid && rep.attr.size > f->size)
        f->size = rep.attr.size;
    return rc == PIO_ENOENT ? PIO_OK : rc; /* renamed or removed: keep what we know */
}

int pfs_pread(pfs_file *f, void *buf, size_t count, uint64_t offset, size_t *got)
{
    *got = 0;
    if ((f->flags & 3) == PFS_WRONLY)
        return fail(PIO_EINVAL, "%s: opened write-only", f->path);
    if (!count)
        return PIO_OK;
    if (offset + count > f->size) {
        int rc = refresh_size(f);
        if (rc != PIO_OK)
            return rc;
    }
    if (offset >= f->size)
        return PIO_OK;
    uint64_t len = f->size - offset < count ? f->size - offset : count;
    int direct = len >= PFS_READ_DIRECT && mono_s() >= f->indirect;
    int rc = direct ? ensure_window(f) : PIO_OK;
    if (rc != PIO_OK)
        return rc;
    struct xfer *x = xfer_get(f, 0, direct);
    if (!x)
        return PIO_ENOMEM;
    rc = xfer_run(x, buf, offset, len);
    if (rc == PIO_OK)
        *got = (size_t)len;
    return rc;
}

int pfs_pwrite(pfs_file *f, const void *buf, size_t count, uint64_t offset)
{
    if ((f->flags & 3) == PFS_RDONLY)
        return fail(PIO_EINVAL, "%s: opened read-only", f->path);
    if (!count)
        return PIO_OK;
    struct xfer *x = xfer_get(f, 1, 0);
    if (!x)
        return PIO_ENOMEM;
    int rc = xfer_run(x, (uint8_t *)buf, offset, count);
    if (rc == PIO_OK) {
        if (offset + count > f->wrote)
            f->wrote = offset + count;
        if (f->wrote > f->size)
            f->size = f->wrote;
        f->dirty = 1;
    }
    return rc;
}

int pfs_read(pfs_file *f, void *buf, size_t count, size_t *got)
{
    int rc = pfs_pread(f, buf, count, f->pos, got);
    f->pos += *got;
    return rc;
}

int pfs_write(pfs_file *f, const void *buf, size_t count)
{
    int rc = pfs_pwrite(f, buf, count, f->pos);
    if (rc == PIO_OK)
        f->pos += count;
    return rc;
}

/* publish_size - tell the metadata server how far we wrote (grow-only). */
static int publish_size(pfs_file *f)
{
    if (!f->dirty)
        return PIO_OK;
    struct pfs_msg m, rep;
    req_init(f->fs, &m, PFS_OP_SETSIZE);
    m.fid = f->attr.fid;
    m.off = f->wrote;
    int rc = mds_rpc(f->fs, &m, &rep);
    if (rc == PIO_OK)
        f->dirty = 0;
    return rc;
}

int pfs_fsync(pfs_file *f)
{
    int rc = each_object(f->fs, f->attr.fid, &f->lay, PFS_OP_SYNC, 0, 0);
    return rc == PIO_OK ? publish_size(f) : rc;
}

int pfs_close(pfs_file *f)
{
    if (!f)
        return PIO_OK;
    int rc = publish_size(f);
    if (f->win)
        PIO_Win_free(&f->win);
    free(f->winbuf);
    xfer_free(f->wx);
    xfer_free(f->rx);
    free(f);
    return rc;
}

int pfs_fstat(pfs_file *f, pfs_stat *st)
{
    memset(st, 0, sizeof(*st));
    st->fid = f->attr.fid;
    st->mode = f->attr.mode;
    st->uid = f->attr.uid;
    st->size = f->size;
    st->mtime_ns = f->attr.mtime_ns;
    to_stripe(&f->lay, &st->stripe);
    return PIO_OK;
}

int pfs_server_bytes(pfs_file *f, int server, uint64_t *bytes)
{
    *bytes = 0;
    if (server < 0 || server >= f->fs->nservers)
        return PIO_EINVAL;
    int mine = 0;
    for (uint32_t i = 0; i < f->lay.count; i++)
        mine |= (int)f->lay.servers[i] == server;
    int cls, rc = server_ready(f->fs, server, &cls);
    if (rc != PIO_OK)
        return rc;
    struct pfs_msg m, rep;
    req_init(f->fs, &m, PFS_OP_OSTAT);
    m.fid = f->attr.fid;
    rc = rpc(f->fs, server, cls, &m, &rep, NULL, 0);
    if (rc == PIO_OK)
        *bytes = rep.off;
    (void)mine; /* asked even when not in the layout: a stray object would show */
    return rc;
}

/* ---- servers' state -------------------------------------------------------------- */

int pfs_qos(pfs_fs *fs, int server, int reset, char *buf, size_t cap)
{
    if (server < 0 || server >= fs->nservers || !cap)
        return PIO_EINVAL;
    buf[0] = '\0';
    pthread_mutex_lock(&fs->mtx);
    int part = fs->part[server];
    pthread_mutex_unlock(&fs->mtx);
    if (part < 0) {
        int rc = PIO_Addpartner(fs->names[server], &part);
        if (rc != PIO_OK)
            return fail(rc, "I/O server %s: %s", fs->names[server], PIO_Strerror(rc));
        pthread_mutex_lock(&fs->mtx);
        fs->part[server] = part;
        pthread_mutex_unlock(&fs->mtx);
    }
    uint8_t *rbuf = malloc(PFS_HDR_MAX + 65536);
    if (!rbuf)
        return PIO_ENOMEM;
    struct pfs_msg m, rep;
    req_init(fs, &m, PFS_OP_QSTAT);
    m.flags = reset ? PFS_F_RESET : 0;
    int rc = rpc(fs, server, 0, &m, &rep, rbuf, PFS_HDR_MAX + 65536);
    if (rc == PIO_OK) {
        size_t n = rep.dlen < cap - 1 ? rep.dlen : cap - 1;
        memcpy(buf, rep.data, n);
        buf[n] = '\0';
    }
    if (rc != PIO_ETIMEDOUT)
        free(rbuf);
    return rc;
}

int pfs_df(pfs_fs *fs, int server, uint64_t *used, uint64_t *avail, uint64_t *objects)
{
    if (server < 0 || server >= fs->nservers)
        return PIO_EINVAL;
    int cls, rc = server_ready(fs, server, &cls);
    if (rc != PIO_OK)
        return rc;
    struct pfs_msg m, rep;
    req_init(fs, &m, PFS_OP_DF);
    rc = rpc(fs, server, 0, &m, &rep, NULL, 0);
    if (rc == PIO_OK) {
        *used = rep.off;
        *avail = rep.len;
        *objects = rep.fid;
    }
    return rc;
}

/* ---- batches of object extents (aggregators) ------------------------------------ */

struct pfs_batch {
    struct xfer x;
};

int pfs_batch_new(pfs_fs *fs, pfs_batch **b)
{
    *b = calloc(1, sizeof(**b));
    if (!*b)
        return PIO_ENOMEM;
    (*b)->x.fs = fs;
    (*b)->x.write = 1;
    return PIO_OK;
}

void pfs_batch_free(pfs_batch *b)
{
    if (!b)
        return;
    for (int k = 0; k < PIPE; k++) {
        free(b->x.c[k].sbuf);
        if (!b->x.c[k].leak)
            free(b->x.c[k].rbuf);
    }
    free(b);
}

struct extent_src {
    int server;
    const pfs_extent *v;
    size_t n, i;
    uint64_t done; /* bytes of v[i] posted */
};

static int extent_next(void *ctx, struct next_piece *np)
{
    struct extent_src *e = ctx;
    while (e->i < e->n && e->done >= e->v[e->i].len) {
        e->i++;
        e->done = 0;
    }
    if (e->i >= e->n)
        return 0;
    const pfs_extent *v = &e->v[e->i];
    uint64_t left = v->len - e->done;
    np->s = e->server;
    np->fid = v->fid;
    np->pc = (struct pfs_piece){.obj_off = v->off + e->done,
                                .file_off = v->off + e->done,
                                .len = left < PFS_IO_MAX ? left : PFS_IO_MAX};
    np->buf = (uint8_t *)v->data + e->done;
    e->done += np->pc.len;
    return 1;
}

int pfs_batch_write(pfs_batch *b, int server, const pfs_extent *v, size_t n)
{
    if (server < 0 || server >= b->x.fs->nservers)
        return fail(PIO_EINVAL, "no I/O server %d", server);
    struct extent_src e = {.server = server, .v = v, .n = n};
    return xfer_pump(&b->x, extent_next, &e);
}

int pfs_grow(pfs_fs *fs, uint64_t fid, uint64_t size)
{
    struct pfs_msg m, rep;
    req_init(fs, &m, PFS_OP_SETSIZE);
    m.fid = fid;
    m.off = size;
    return mds_rpc(fs, &m, &rep);
}

int pfs_ftruncate(pfs_file *f, uint64_t size)
{
    if ((f->flags & 3) == PFS_RDONLY)
        return fail(PIO_EINVAL, "%s: opened read-only", f->path);
    int rc = each_object(f->fs, f->attr.fid, &f->lay, PFS_OP_TRUNC, size, 0);
    if (rc != PIO_OK)
        return rc;
    struct pfs_msg m, rep;
    req_init(f->fs, &m, PFS_OP_SETSIZE);
    m.fid = f->attr.fid;
    m.off = size;
    m.flags = PFS_F_EXACT;
    rc = mds_rpc(f->fs, &m, &rep);
    if (rc == PIO_OK) {
        f->size = size;
        if (f->wrote > size)
            f->wrote = size;
    }
    return rc;
}
