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
 */
#include "pfs/layout.h"
#include "pfs/mdb.h"
#include "pfs/proto.h"
#include "pfs/srv.h"
#include "pio.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MDS_RECV_MS 200 /* the stop flag is looked at this often */

static volatile sig_atomic_t mds_stop;

static void mds_usage(FILE *out)
{
    fprintf(out, "usage: pfs-mds --db FILE [--iods NAME,NAME,...] [--name APP]\n"
                 "  --db FILE     the metadata database (SQLite; created if missing)\n"
                 "  --iods LIST   the I/O servers' PIO application names, in order; needed on\n"
                 "                the first start, optional later (the database keeps them);\n"
                 "                a longer list with the same start adds servers\n"
                 "  --name APP    this server's PIO application name (default pfs.mds)\n"
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

/* Run request q against db and answer it. data: PFS_IO_MAX bytes for the
 * reply's data. */
static void mds_handle(struct pfs_mdb *db, const struct pfs_msg *q, uint8_t *data)
{
    struct pfs_msg r;
    memset(&r, 0, sizeof(r));
    int rc, rep = 0, more = 0;
    size_t used = 0;
    uint64_t files = 0, bytes = 0;

    switch (q->op) {
    case PFS_OP_LOOKUP: rc = pfs_mdb_lookup(db, q->path, &r.attr, &r.layout); break;
    case PFS_OP_CREATE:
        rc = pfs_mdb_create(db, q->path, q->attr.mode, q->attr.uid,
                            q->flags & (PFS_F_EXCL | PFS_F_TRUNC), q->off, q->layout.count,
                            q->layout.stripe_size, &r.attr, &r.layout);
        break;
    case PFS_OP_MKDIR: rc = pfs_mdb_mkdir(db, q->path, q->attr.mode, q->attr.uid, &r.attr); break;
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
        {"help", no_argument, NULL, 'h'},
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
        case 'h': mds_usage(stdout); return 0;
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
