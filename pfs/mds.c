/* mds.c - pfs-mds, the metadata server of pfs: a PIO application that
 * answers the metadata ops of proto.h (LOOKUP .. STATFS) from its database.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * One thread, one loop: receive a request of class 0, run it against the
 * database (mdb.h) as one transaction, reply, repeat. A request is never
 * answered before its transaction has committed, so whatever a client was
 * told survives a kill -9 of the server or a power cut. A request that
 * cannot be decoded is dropped by pfs_srv_recv; one that fails gets an
 * error reply with words for people ("/a/b: no such file or directory");
 * an op the server does not know gets PIO_ENOSYS. Nothing a client sends
 * stops the loop; SIGINT / SIGTERM do, between requests.
 *
 * Why SQLite, in WAL mode: pfs-mds is the only writer, and a single writer
 * is what SQLite does best; a commit appends to the write-ahead log and
 * syncs it (synchronous=FULL), so it is crash-safe without a recovery step
 * of our own; readers (a backup, sqlite3 for inspection) never block the
 * server; and it is mature, packaged everywhere, and needs no server of its
 * own. The tree is stored as rows keyed by (parent, name), so a rename of a
 * large directory is one row.
 *
 * The I/O servers are named once, in order (--iods); the database keeps the
 * list, so a restart needs no --iods, and a longer list with the same start
 * adds servers. Any other change is refused (exit 2): layouts refer to
 * servers by their position in the list.
 *
 * Permissions: every request is judged (mds_check, before it runs) on the
 * identity the piods stamped on it, as POSIX does: search on each directory
 * of the path, write and search on the directory an entry is made in or
 * removed from (and the sticky bit), read or write on a file as the open
 * asks, owner for a mode change; new entries belong to the caller's uid and
 * gid. With --root-squash, root of any system is nobody. The I/O servers
 * ask ACCESS for the data requests they get (only listed servers may).
 */
#include "cli.h"
#include "layout.h"
#include "mdb.h"
#include "perm.h"
#include "proto.h"
#include "sdnotify.h"
#include "srv.h"
#include "pio.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MDS_RECV_MS 200 /* the stop flag is looked at this often */

static volatile sig_atomic_t mds_stop;
static int root_squash; /* --root-squash: uid 0 is nobody */

static void mds_usage(FILE *out)
{
    fprintf(out, "usage: pfs-mds --db FILE [--iods NAME,NAME,...] [--name APP] [--root-squash]\n"
                 "  --db FILE     the metadata database (SQLite; created if missing)\n"
                 "  --iods LIST   the I/O servers' PIO application names, in order; needed on\n"
                 "                the first start, optional later (the database keeps them);\n"
                 "                a longer list with the same start adds servers\n"
                 "  --name APP    this server's PIO application name (default pfs.mds)\n"
                 "  --root-squash root (uid 0) of any system is nobody (65534) here\n"
                 "  -h, --help    this text\n"
                 "The piod is found through $PIO_SOCKET.\n");
}

/* Errno-like words for the name-space errors, PIO's words for the rest. */
static const char *mds_words(int st)
{
    switch (st) {
    case PIO_ENOENT: return "no such file or directory";
    case PIO_EEXIST: return "file exists";
    case PIO_ENOTDIR: return "not a directory";
    case PIO_EISDIR: return "is a directory";
    case PIO_ENOTEMPTY: return "directory not empty";
    case PIO_EPERM: return "permission denied";
    default: return PIO_Strerror(st);
    }
}

/* What a failed request was about, for its error text. */
static void mds_subject(const struct pfs_msg *q, char *buf, size_t cap)
{
    switch (q->op) {
    case PFS_OP_RENAME: snprintf(buf, cap, "%.400s -> %.400s", q->path, q->path2); break;
    case PFS_OP_SETSIZE: snprintf(buf, cap, "file id %llu", (unsigned long long)q->fid); break;
    case PFS_OP_STATFS: snprintf(buf, cap, "statfs"); break;
    default: snprintf(buf, cap, "%.800s", q->path); break;
    }
}

/* The server list as STATFS's data: each name followed by a NUL. */
static size_t mds_server_names(struct pfs_mdb *db, uint8_t *buf, size_t cap)
{
    size_t used = 0;
    for (int i = 0; i < pfs_mdb_nservers(db); i++) {
        const char *s = pfs_mdb_server(db, i);
        size_t n = strlen(s) + 1;
        if (used + n > cap)
            break;
        memcpy(buf + used, s, n);
        used += n;
    }
    return used;
}

/* Search (x) on every directory from "/" down to path's parent, as c; its
 * parent's attributes in *dir. PIO_OK, PIO_EPERM, or the lookup's error
 * (the op then says it again, in its words). */
static int mds_walk(struct pfs_mdb *db, const struct pfs_cred *c, const char *path,
                    struct pfs_attr *dir)
{
    char pre[PFS_PATH_MAX];
    int rc = pfs_mdb_lookup(db, "/", dir, NULL);
    for (const char *p = path + 1; rc == PIO_OK;) {
        if (dir->type != PFS_T_DIR)
            return PIO_ENOTDIR;
        if (!pfs_may(c, dir, PFS_MAY_X))
            return PIO_EPERM;
        const char *slash = strchr(p, '/');
        if (!slash)
            return PIO_OK;
        size_t n = (size_t)(slash - path);
        memcpy(pre, path, n);
        pre[n] = '\0';
        rc = pfs_mdb_lookup(db, pre, dir, NULL);
        p = slash + 1;
    }
    return rc;
}

/* The open's intent of a LOOKUP or CREATE (flags PFS_F_RD, _WR, _TRUNC). */
static int mds_intent(uint32_t flags)
{
    return ((flags & PFS_F_RD) ? PFS_MAY_R : 0) |
           ((flags & (PFS_F_WR | PFS_F_TRUNC)) ? PFS_MAY_W : 0);
}

/* May c run q? PIO_OK, or PIO_EPERM; a request about a path that is not
 * there (or not well formed) passes, for the op to answer in its words. */
static int mds_check(struct pfs_mdb *db, const struct pfs_msg *q, const struct pfs_cred *c)
{
    struct pfs_attr dir, e, dir2, e2;
    int rc;
    memset(&e, 0, sizeof(e));
    memset(&dir, 0, sizeof(dir));
    if (q->op <= PFS_OP_SETSTRIPE && q->op != PFS_OP_SETSIZE) { /* about a path */
        if (!pfs_path_ok(q->path))
            return PIO_OK;
        if (strcmp(q->path, "/") == 0) { /* its own parent */
            if (pfs_mdb_lookup(db, "/", &e, NULL) != PIO_OK)
                return PIO_OK;
            dir = e;
        } else {
            if ((rc = mds_walk(db, c, q->path, &dir)) != PIO_OK)
                return rc == PIO_EPERM ? rc : PIO_OK;
            if (pfs_mdb_lookup(db, q->path, &e, NULL) != PIO_OK)
                e.type = 0; /* not there */
        }
    }
    switch (q->op) {
    case PFS_OP_LOOKUP: return !e.type || pfs_may(c, &e, mds_intent(q->flags)) ? PIO_OK : PIO_EPERM;
    case PFS_OP_CREATE:
        if (e.type == PFS_T_FILE && !(q->flags & PFS_F_EXCL))
            return pfs_may(c, &e, mds_intent(q->flags)) ? PIO_OK : PIO_EPERM;
        return e.type || pfs_may(c, &dir, PFS_MAY_W | PFS_MAY_X) ? PIO_OK : PIO_EPERM;
    case PFS_OP_MKDIR:
        return e.type || pfs_may(c, &dir, PFS_MAY_W | PFS_MAY_X) ? PIO_OK : PIO_EPERM;
    case PFS_OP_READDIR: return !e.type || pfs_may(c, &e, PFS_MAY_R) ? PIO_OK : PIO_EPERM;
    case PFS_OP_UNLINK:
        return !e.type || (pfs_may(c, &dir, PFS_MAY_W | PFS_MAY_X) && pfs_may_remove(c, &dir, &e))
                   ? PIO_OK
                   : PIO_EPERM;
    case PFS_OP_RENAME:
        if (!e.type || !pfs_path_ok(q->path2))
            return PIO_OK;
        if ((rc = mds_walk(db, c, q->path2, &dir2)) != PIO_OK)
            return rc == PIO_EPERM ? rc : PIO_OK;
        if (!pfs_may(c, &dir, PFS_MAY_W | PFS_MAY_X) || !pfs_may_remove(c, &dir, &e) ||
            !pfs_may(c, &dir2, PFS_MAY_W | PFS_MAY_X))
            return PIO_EPERM;
        return pfs_mdb_lookup(db, q->path2, &e2, NULL) != PIO_OK || pfs_may_remove(c, &dir2, &e2)
                   ? PIO_OK
                   : PIO_EPERM;
    case PFS_OP_SETSIZE:
        return pfs_mdb_stat(db, q->fid, &e) != PIO_OK || pfs_may(c, &e, PFS_MAY_W) ? PIO_OK
                                                                                   : PIO_EPERM;
    case PFS_OP_SETATTR:
        if (!e.type)
            return PIO_OK;
        if ((q->flags & PFS_F_MODE) && c->uid != 0 && c->uid != e.uid)
            return PIO_EPERM; /* only the owner changes the mode */
        return !(q->flags & PFS_F_MTIME) || c->uid == 0 || c->uid == e.uid ||
                       pfs_may(c, &e, PFS_MAY_W)
                   ? PIO_OK
                   : PIO_EPERM;
    case PFS_OP_SETSTRIPE:
        if (!e.type)
            return PIO_OK;
        return c->uid == 0 || c->uid == e.uid || (e.type == PFS_T_FILE && pfs_may(c, &e, PFS_MAY_W))
                   ? PIO_OK
                   : PIO_EPERM;
    default: return PIO_OK;
    }
}

/* ACCESS from I/O server q->client: may the caller it names (attr.uid,
 * attr.gid, user name in text) do q->flags to file q->fid? */
static int mds_access(struct pfs_mdb *db, const struct pfs_msg *q)
{
    int listed = 0;
    for (int i = 0; i < pfs_mdb_nservers(db) && !listed; i++)
        listed = strcmp(pfs_mdb_server(db, i), q->client) == 0;
    if (!listed) {
        static int warned;
        if (!warned++)
            pfs_log("ACCESS from %s, which is no I/O server of ours: refused (said once)",
                    q->client);
        return PIO_EPERM;
    }
    struct pfs_cred who;
    struct pfs_attr e;
    pfs_cred_make(q->attr.uid, q->attr.gid, q->text, root_squash, &who);
    int rc = pfs_mdb_stat(db, q->fid, &e);
    if (rc != PIO_OK)
        return rc;
    return e.type == PFS_T_FILE && pfs_may(&who, &e, mds_intent(q->flags)) ? PIO_OK : PIO_EPERM;
}

/* Run request q against db and answer it. data: PFS_IO_MAX bytes for the
 * reply's data. */
static void mds_handle(struct pfs_mdb *db, const struct pfs_msg *q, uint8_t *data)
{
    struct pfs_msg r;
    memset(&r, 0, sizeof(r));
    int rc, rep = 0, more = 0;
    size_t used = 0;
    uint64_t files = 0, bytes = 0;
    struct pfs_cred c; /* the caller, as the piods stamped it */
    pfs_cred_make(q->from_uid, q->from_gid, q->from_user, root_squash, &c);

    if (q->op != PFS_OP_ACCESS && (rc = mds_check(db, q, &c)) != PIO_OK)
        goto answer;
    switch (q->op) {
    case PFS_OP_LOOKUP: rc = pfs_mdb_lookup(db, q->path, &r.attr, &r.layout); break;
    case PFS_OP_CREATE:
        rc = pfs_mdb_create(db, q->path, q->attr.mode, c.uid, c.gid,
                            q->flags & (PFS_F_EXCL | PFS_F_TRUNC), q->off, q->layout.count,
                            q->layout.stripe_size, &r.attr, &r.layout);
        break;
    case PFS_OP_MKDIR: rc = pfs_mdb_mkdir(db, q->path, q->attr.mode, c.uid, c.gid, &r.attr); break;
    case PFS_OP_ACCESS: rc = mds_access(db, q); break;
    case PFS_OP_READDIR:
        rc = pfs_mdb_readdir(db, q->path, q->off, data, PFS_IO_MAX, &used, &more);
        r.data = data;
        r.dlen = used;
        if (more)
            r.flags |= PFS_F_MORE;
        break;
    case PFS_OP_UNLINK:
        rc = pfs_mdb_unlink(db, q->path, (q->flags & PFS_F_DIR) != 0, &r.attr, &r.layout);
        break;
    case PFS_OP_RENAME:
        rc = pfs_mdb_rename(db, q->path, q->path2, &rep, &r.attr, &r.layout);
        if (rep)
            r.flags |= PFS_F_REPLACED;
        break;
    case PFS_OP_SETSIZE:
        rc = pfs_mdb_setsize(db, q->fid, q->off, (q->flags & PFS_F_EXACT) != 0, &r.attr);
        break;
    case PFS_OP_SETATTR:
        rc = pfs_mdb_setattr(db, q->path, q->flags & (PFS_F_MODE | PFS_F_MTIME), q->attr.mode,
                             q->attr.mtime_ns, &r.attr);
        break;
    case PFS_OP_SETSTRIPE:
        rc = pfs_mdb_setstripe(db, q->path, q->layout.count, q->layout.stripe_size, &r.attr,
                               &r.layout);
        break;
    case PFS_OP_STATFS:
        rc = pfs_mdb_statfs(db, &files, &bytes);
        r.len = (uint64_t)pfs_mdb_nservers(db);
        r.off = files;
        r.attr.size = bytes;
        r.dlen = mds_server_names(db, data, PFS_IO_MAX);
        r.data = data;
        break;
    default: rc = PIO_ENOSYS; break;
    }

answer:;
    int sent;
    if (rc == PIO_OK) {
        sent = pfs_srv_reply(q, &r);
    } else if (rc == PIO_ENOSYS) {
        sent = pfs_srv_fail(q, rc, "operation %u is not supported by the metadata server",
                            (unsigned)q->op);
    } else {
        char subject[1024];
        const char *why = pfs_mdb_errmsg(db);
        mds_subject(q, subject, sizeof(subject));
        sent = pfs_srv_fail(q, rc, "%s: %s", subject, why[0] ? why : mds_words(rc));
        /* the database's own trouble is the operator's business too */
        if (rc == PIO_EIO || rc == PIO_ENOSPC || rc == PIO_ENOMEM || rc == PIO_EBUSY ||
            rc == PIO_EINTERNAL || rc == PIO_EPERM)
            pfs_log("op %u from %s: %s: %s", (unsigned)q->op, q->client, subject,
                    why[0] ? why : PIO_Strerror(rc));
    }
    if (sent != PIO_OK)
        pfs_log("cannot answer %s process %u (op %u): %s", q->client, (unsigned)q->proc,
                (unsigned)q->op, PIO_Strerror(sent));
}

/* Split "a,b,c" into names (pointers into list, which is modified).
 * Returns the count, or -1 for an empty name or too many. */
static int mds_split(char *list, const char **names, int max)
{
    int n = 0;
    char *s = list;
    for (;;) {
        char *c = strchr(s, ',');
        if (c)
            *c = '\0';
        if (!*s || n == max)
            return -1;
        names[n++] = s;
        if (!c)
            return n;
        s = c + 1;
    }
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, 'd'},
        {"iods", required_argument, NULL, 'i'},
        {"name", required_argument, NULL, 'n'},
        {"root-squash", no_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    const char *dbfile = NULL, *app = "pfs.mds";
    char *iods = NULL;
    int c;
    pfs_log_name("pfs-mds");
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'd': dbfile = optarg; break;
        case 'i': iods = optarg; break;
        case 'n': app = optarg; break;
        case 'r': root_squash = 1; break;
        case 'h': mds_usage(stdout); return 0;
        case 'V': return pio_cli_version("pfs-mds");
        default: mds_usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        pfs_log("unexpected argument '%s'", argv[optind]);
        mds_usage(stderr);
        return 2;
    }
    if (!dbfile || !*dbfile) {
        pfs_log("--db FILE is required");
        mds_usage(stderr);
        return 2;
    }
    if (!*app || strlen(app) >= PIO_NAME_MAX) {
        pfs_log("--name: a name of 1 to %d bytes is needed", PIO_NAME_MAX - 1);
        return 2;
    }
    static const char *names[PFS_SERVERS_MAX];
    int nnames = 0;
    if (iods) {
        nnames = mds_split(iods, names, PFS_SERVERS_MAX);
        if (nnames < 0) {
            pfs_log("--iods: a comma-separated list of 1 to %d non-empty names is needed",
                    PFS_SERVERS_MAX);
            return 2;
        }
    }

    struct pfs_mdb *db;
    int rc = pfs_mdb_open(dbfile, &db);
    if (rc != PIO_OK) {
        pfs_log("cannot open the database %s", pfs_mdb_open_error());
        return rc == PIO_ECONFIG ? 2 : 1;
    }
    int before = pfs_mdb_nservers(db);
    rc = pfs_mdb_servers(db, names, nnames);
    if (rc != PIO_OK) {
        const char *why = pfs_mdb_errmsg(db);
        pfs_log("%s: I/O servers: %s", dbfile, why[0] ? why : PIO_Strerror(rc));
        pfs_mdb_close(db);
        return rc == PIO_ECONFIG || rc == PIO_EINVAL ? 2 : 1;
    }
    int nservers = pfs_mdb_nservers(db);

    uint8_t *buf = malloc(PFS_MSG_MAX), *data = malloc(PFS_IO_MAX);
    if (!buf || !data) {
        pfs_log("out of memory");
        free(buf);
        free(data);
        pfs_mdb_close(db);
        return 1;
    }
    rc = PIO_Init(app, 0, 1);
    if (rc != PIO_OK) {
        pfs_log("cannot join the piod as %s: %s", app, PIO_Strerror(rc));
        free(buf);
        free(data);
        pfs_mdb_close(db);
        return 1;
    }
    pfs_srv_signals((volatile int *)&mds_stop);
    pfs_log("serving %s as %s: %d I/O server%s%s", dbfile, app, nservers, nservers == 1 ? "" : "s",
            nservers > before && before ? " (some added)" : "");
    pio_sd_ready();

    int status = 0;
    while (!mds_stop) {
        struct pfs_msg q;
        rc = pfs_srv_recv(0, buf, PFS_MSG_MAX, MDS_RECV_MS, &q);
        if (rc == PIO_ETIMEDOUT)
            continue;
        if (rc == PIO_ECLOSED || rc == PIO_ENOTINIT) {
            pfs_log("the piod went away: %s", PIO_Strerror(rc));
            status = 1;
            break;
        }
        if (rc != PIO_OK) {
            pfs_log("receive: %s", PIO_Strerror(rc));
            usleep(100 * 1000); /* do not spin on a lasting failure */
            continue;
        }
        mds_handle(db, &q, data);
    }
    if (mds_stop)
        pfs_log("stopping");
    PIO_Exit();
    pfs_mdb_close(db);
    free(buf);
    free(data);
    return status;
}
