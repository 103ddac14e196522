/* mdb.c - the pfs metadata database over SQLite (mdb.h).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Schema (version 2; a version 1 database gets the gid column, 0, when it
 * is opened):
 *   meta(key, value)     "schema" = 2; "next_server" = the placement counter
 *   servers(idx, name)   the ordered I/O servers; rows are only ever appended
 *   nodes(id, parent, name, type, mode, uid, size, mtime, ctime,
 *         stripe_size, count, servers, gid)
 * The tree is stored as entries keyed by (parent id, name), unique: a path
 * is resolved one component at a time from the root (id 1, parent 0, name
 * ""), a directory is listed by a range scan of that key in name order, and
 * a rename changes one row whatever the size of the subtree it moves. id is
 * AUTOINCREMENT, so ids (the fids) are never reused, not even the newest
 * after it is removed. For a file, stripe_size / count / servers are its
 * layout (servers as text, "3,0,1"); for a directory, stripe_size / count
 * are its default stripe and servers is "".
 *
 * Each mutating call is one BEGIN IMMEDIATE transaction (the write lock is
 * taken up front, so it cannot fail half way with SQLITE_BUSY): it reads the
 * rows it needs, changes them in C, writes them back and commits before it
 * returns; any failure rolls everything back. Reads run in a deferred
 * transaction so that they see one snapshot. Statements are prepared once
 * at open and reset right after each use, so no read transaction stays open
 * between calls (WAL checkpoints are never held back by this connection).
 */
#include "mdb.h"
#include "layout.h"
#include "err.h"

#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MDB_SCHEMA  2
#define MDB_ROOT    1     /* id of "/" */
#define MDB_BUSY_MS 10000 /* wait this long for another connection's lock */
#define MDB_SS_MAX  (4ull << 30)

#define NODE_COLS                                                                                  \
    "id, parent, type, mode, uid, size, mtime, ctime, stripe_size, count, servers, gid"

enum mdb_sid {
    S_GET,
    S_CHILD,
    S_INSERT,
    S_PUT,
    S_MOVE,
    S_DELETE,
    S_HASCHILD,
    S_LIST,
    S_META_GET,
    S_META_SET,
    S_SRV_LIST,
    S_SRV_ADD,
    S_STATFS,
    S_COUNT
};

static const char *const mdb_sql[S_COUNT] = {
    [S_GET] = "SELECT " NODE_COLS " FROM nodes WHERE id = ?1",
    [S_CHILD] = "SELECT " NODE_COLS " FROM nodes WHERE parent = ?1 AND name = ?2",
    [S_INSERT] =
        "INSERT INTO nodes (parent, name, type, mode, uid, size, mtime, ctime, "
        "stripe_size, count, servers, gid) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
        "?12)",
    [S_PUT] = "UPDATE nodes SET mode = ?2, uid = ?3, size = ?4, mtime = ?5, ctime = ?6, gid = ?10, "
              "stripe_size = ?7, count = ?8, servers = ?9 WHERE id = ?1",
    [S_MOVE] = "UPDATE nodes SET parent = ?2, name = ?3, ctime = ?4 WHERE id = ?1",
    [S_DELETE] = "DELETE FROM nodes WHERE id = ?1",
    [S_HASCHILD] = "SELECT 1 FROM nodes WHERE parent = ?1 LIMIT 1",
    [S_LIST] = "SELECT name, type, mode, size, mtime FROM nodes WHERE parent = ?1 "
               "ORDER BY name LIMIT -1 OFFSET ?2",
    [S_META_GET] = "SELECT value FROM meta WHERE key = ?1",
    [S_META_SET] = "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
    [S_SRV_LIST] = "SELECT idx, name FROM servers ORDER BY idx",
    [S_SRV_ADD] = "INSERT INTO servers (idx, name) VALUES (?1, ?2)",
    [S_STATFS] = "SELECT count(*), coalesce(sum(size), 0) FROM nodes WHERE type = 1",
};

static const char mdb_schema[] =
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS servers (idx INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);"
    "CREATE TABLE IF NOT EXISTS nodes ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " parent INTEGER NOT NULL,"
    " name TEXT NOT NULL,"
    " type INTEGER NOT NULL,"
    " mode INTEGER NOT NULL,"
    " uid INTEGER NOT NULL,"
    " size INTEGER NOT NULL DEFAULT 0,"
    " mtime INTEGER NOT NULL,"
    " ctime INTEGER NOT NULL,"
    " stripe_size INTEGER NOT NULL DEFAULT 0,"
    " count INTEGER NOT NULL DEFAULT 0,"
    " servers TEXT NOT NULL DEFAULT '',"
    " gid INTEGER NOT NULL DEFAULT 0,"
    " UNIQUE (parent, name));";

/* One row of nodes. */
struct mdb_node {
    int64_t id, parent;
    uint32_t type, mode, uid, gid;
    uint64_t size;
    int64_t mtime, ctime;
    uint64_t stripe_size;
    uint32_t count;
    uint32_t servers[PFS_STRIPES_MAX];
};

struct pfs_mdb {
    sqlite3 *sql;
    sqlite3_stmt *st[S_COUNT];
    int nservers;
    char (*names)[PFS_NAME_MAX]; /* nservers names, in server order */
    char err[256];               /* words for the last failure */
};

static _Thread_local char mdb_open_err[1024];

static int64_t mdb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The PIO status for SQLite result code src; keeps SQLite's words in db->err. */
static int mdb_status(struct pfs_mdb *db, int src)
{
    int rc;
    switch (src & 0xff) {
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE: return PIO_OK;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: rc = PIO_EBUSY; break;
    case SQLITE_FULL: rc = PIO_ENOSPC; break;
    case SQLITE_NOMEM: rc = PIO_ENOMEM; break;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH: rc = PIO_EPERM; break;
    case SQLITE_CONSTRAINT: /* a unique key: the checks before should have caught it */
        rc = PIO_EEXIST;
        break;
    default: rc = PIO_EIO; break;
    }
    snprintf(db->err, sizeof(db->err), "sqlite: %s", sqlite3_errmsg(db->sql));
    return rc;
}

/* Record words for a failure found by the checks here, and return st. */
static int mdb_fail(struct pfs_mdb *db, int st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int mdb_fail(struct pfs_mdb *db, int st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(db->err, sizeof(db->err), fmt, ap);
    va_end(ap);
    return st;
}

/* Start of every call on db: forget the last failure's words, check path
 * (NULL: none to check). */
static int mdb_enter(struct pfs_mdb *db, const char *path)
{
    db->err[0] = '\0';
    if (path && !pfs_path_ok(path))
        return mdb_fail(db, PIO_EINVAL, "not an absolute, normalised pfs path");
    return PIO_OK;
}

static int mdb_exec(struct pfs_mdb *db, const char *sql)
{
    return mdb_status(db, sqlite3_exec(db->sql, sql, NULL, NULL, NULL));
}

/* Reset a statement after use: its read lock goes, its bindings too. */
static void mdb_done(sqlite3_stmt *st)
{
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

/* Step a statement that returns no rows, then reset it. */
static int mdb_run(struct pfs_mdb *db, sqlite3_stmt *st)
{
    int src = sqlite3_step(st);
    int rc = src == SQLITE_DONE || src == SQLITE_ROW ? PIO_OK : mdb_status(db, src);
    mdb_done(st);
    return rc;
}

static int tx_begin(struct pfs_mdb *db, int write)
{
    return mdb_exec(db, write ? "BEGIN IMMEDIATE" : "BEGIN");
}

/* End the transaction: commit when rc is PIO_OK, else roll back. Returns
 * rc, or the commit's failure. */
static int tx_end(struct pfs_mdb *db, int rc)
{
    if (rc == PIO_OK)
        rc = mdb_exec(db, "COMMIT");
    if (rc != PIO_OK && !sqlite3_get_autocommit(db->sql))
        sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* ---- rows ------------------------------------------------------------------ */

static void node_read(sqlite3_stmt *st, struct mdb_node *n)
{
    memset(n, 0, sizeof(*n));
    n->id = sqlite3_column_int64(st, 0);
    n->parent = sqlite3_column_int64(st, 1);
    n->type = (uint32_t)sqlite3_column_int(st, 2);
    n->mode = (uint32_t)sqlite3_column_int64(st, 3);
    n->uid = (uint32_t)sqlite3_column_int64(st, 4);
    n->size = (uint64_t)sqlite3_column_int64(st, 5);
    n->mtime = sqlite3_column_int64(st, 6);
    n->ctime = sqlite3_column_int64(st, 7);
    n->stripe_size = (uint64_t)sqlite3_column_int64(st, 8);
    n->count = (uint32_t)sqlite3_column_int64(st, 9);
    if (n->count > PFS_STRIPES_MAX)
        n->count = PFS_STRIPES_MAX;
    n->gid = (uint32_t)sqlite3_column_int64(st, 11);
    const char *s = (const char *)sqlite3_column_text(st, 10);
    for (uint32_t i = 0; s && *s && i < PFS_STRIPES_MAX; i++) {
        char *e;
        n->servers[i] = (uint32_t)strtoul(s, &e, 10);
        s = *e == ',' ? e + 1 : e;
    }
}

/* "3,0,1": the servers of a file's layout as stored. */
static void node_servers_text(const struct mdb_node *n, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; n->type == PFS_T_FILE && i < n->count && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%u", i ? "," : "", n->servers[i]);
}

/* One row from st (bound by the caller), then reset: PIO_OK, PIO_ENOENT. */
static int node_fetch(struct pfs_mdb *db, sqlite3_stmt *st, struct mdb_node *n)
{
    int src = sqlite3_step(st), rc;
    if (src == SQLITE_ROW) {
        node_read(st, n);
        rc = PIO_OK;
    } else if (src == SQLITE_DONE) {
        rc = PIO_ENOENT;
    } else {
        rc = mdb_status(db, src);
    }
    mdb_done(st);
    return rc;
}

static int node_get(struct pfs_mdb *db, int64_t id, struct mdb_node *n)
{
    sqlite3_stmt *st = db->st[S_GET];
    sqlite3_bind_int64(st, 1, id);
    return node_fetch(db, st, n);
}

/* The entry name (len bytes, -1: NUL-terminated) of directory parent. */
static int node_child(struct pfs_mdb *db, int64_t parent, const char *name, int len,
                      struct mdb_node *n)
{
    sqlite3_stmt *st = db->st[S_CHILD];
    sqlite3_bind_int64(st, 1, parent);
    sqlite3_bind_text(st, 2, name, len, SQLITE_STATIC);
    return node_fetch(db, st, n);
}

/* Walk path from the root into *n. With last != NULL, stop before the last
 * component: *n is then its parent directory and *last its name (path must
 * not be "/"). PIO_ENOENT: a component is missing; PIO_ENOTDIR: a component
 * before the last is a file. */
static int node_resolve(struct pfs_mdb *db, const char *path, struct mdb_node *n, const char **last)
{
    if (last && strcmp(path, "/") == 0)
        return PIO_EINVAL;
    int rc = node_get(db, MDB_ROOT, n);
    if (rc == PIO_ENOENT)
        return mdb_fail(db, PIO_EIO, "the root directory is missing from the database");
    if (rc != PIO_OK)
        return rc;
    const char *p = path + 1;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (!e && last) {
            *last = p;
            break;
        }
        if (n->type != PFS_T_DIR)
            return PIO_ENOTDIR;
        PIO_TRY(node_child(db, n->id, p, (int)len, n), rc, out);
        p += len + (e ? 1 : 0);
    }
    if (last && n->type != PFS_T_DIR)
        return PIO_ENOTDIR;
out:
    return rc;
}

/* Insert *n (parent, type and attributes set) as name; sets n->id. */
static int node_insert(struct pfs_mdb *db, struct mdb_node *n, const char *name)
{
    char servers[8 * PFS_STRIPES_MAX];
    node_servers_text(n, servers, sizeof(servers));
    sqlite3_stmt *st = db->st[S_INSERT];
    sqlite3_bind_int64(st, 1, n->parent);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, (int)n->type);
    sqlite3_bind_int64(st, 4, n->mode);
    sqlite3_bind_int64(st, 5, n->uid);
    sqlite3_bind_int64(st, 6, (int64_t)n->size);
    sqlite3_bind_int64(st, 7, n->mtime);
    sqlite3_bind_int64(st, 8, n->ctime);
    sqlite3_bind_int64(st, 9, (int64_t)n->stripe_size);
    sqlite3_bind_int64(st, 10, n->count);
    sqlite3_bind_text(st, 11, servers, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 12, n->gid);
    int rc = mdb_run(db, st);
    if (rc == PIO_OK)
        n->id = sqlite3_last_insert_rowid(db->sql);
    return rc;
}

/* Write back every attribute of *n (not its place in the tree). */
static int node_put(struct pfs_mdb *db, const struct mdb_node *n)
{
    char servers[8 * PFS_STRIPES_MAX];
    node_servers_text(n, servers, sizeof(servers));
    sqlite3_stmt *st = db->st[S_PUT];
    sqlite3_bind_int64(st, 1, n->id);
    sqlite3_bind_int64(st, 2, n->mode);
    sqlite3_bind_int64(st, 3, n->uid);
    sqlite3_bind_int64(st, 4, (int64_t)n->size);
    sqlite3_bind_int64(st, 5, n->mtime);
    sqlite3_bind_int64(st, 6, n->ctime);
    sqlite3_bind_int64(st, 7, (int64_t)n->stripe_size);
    sqlite3_bind_int64(st, 8, n->count);
    sqlite3_bind_text(st, 9, servers, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 10, n->gid);
    return mdb_run(db, st);
}

static int node_delete(struct pfs_mdb *db, int64_t id)
{
    sqlite3_stmt *st = db->st[S_DELETE];
    sqlite3_bind_int64(st, 1, id);
    return mdb_run(db, st);
}

/* A directory's mtime and ctime become now (an entry came or went). */
static int node_touch(struct pfs_mdb *db, struct mdb_node *dir, int64_t now)
{
    dir->mtime = dir->ctime = now;
    return node_put(db, dir);
}

/* PIO_OK when directory id has no entries, PIO_ENOTEMPTY when it has. */
static int node_check_empty(struct pfs_mdb *db, int64_t id)
{
    sqlite3_stmt *st = db->st[S_HASCHILD];
    sqlite3_bind_int64(st, 1, id);
    int src = sqlite3_step(st);
    int rc = src == SQLITE_ROW ? PIO_ENOTEMPTY : src == SQLITE_DONE ? PIO_OK : mdb_status(db, src);
    mdb_done(st);
    return rc;
}

static void node_out(const struct mdb_node *n, struct pfs_attr *a, struct pfs_layout *l)
{
    if (a) {
        memset(a, 0, sizeof(*a));
        a->fid = (uint64_t)n->id;
        a->type = n->type;
        a->mode = n->mode;
        a->uid = n->uid;
        a->gid = n->gid;
        a->size = n->type == PFS_T_FILE ? n->size : 0;
        a->mtime_ns = n->mtime;
        a->ctime_ns = n->ctime;
    }
    if (l) {
        memset(l, 0, sizeof(*l));
        l->stripe_size = n->stripe_size;
        l->count = n->count;
        if (n->type == PFS_T_FILE)
            memcpy(l->servers, n->servers, sizeof(l->servers));
    }
}

/* ---- meta and placement ----------------------------------------------------- */

static int meta_get(struct pfs_mdb *db, const char *key, int64_t *v)
{
    sqlite3_stmt *st = db->st[S_META_GET];
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int src = sqlite3_step(st), rc = PIO_OK;
    *v = 0;
    if (src == SQLITE_ROW)
        *v = sqlite3_column_int64(st, 0);
    else if (src != SQLITE_DONE)
        rc = mdb_status(db, src);
    mdb_done(st);
    return rc;
}

static int meta_set(struct pfs_mdb *db, const char *key, int64_t v)
{
    sqlite3_stmt *st = db->st[S_META_SET];
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, v);
    return mdb_run(db, st);
}

/* Place n->count stripes on the servers from the stored counter, and store
 * the advanced counter (in the caller's transaction). */
static int mdb_place(struct pfs_mdb *db, struct mdb_node *n)
{
    if (db->nservers <= 0)
        return mdb_fail(db, PIO_ECONFIG, "no I/O servers are configured");
    int64_t next;
    int rc = meta_get(db, "next_server", &next);
    if (rc != PIO_OK)
        return rc;
    struct pfs_layout l;
    memset(&l, 0, sizeof(l));
    l.count = n->count;
    l.stripe_size = n->stripe_size;
    uint32_t nx = (uint32_t)((uint64_t)next % (uint32_t)db->nservers);
    pfs_layout_place(&l, (uint32_t)db->nservers, &nx);
    if (!pfs_layout_valid(&l, (uint32_t)db->nservers))
        return mdb_fail(db, PIO_EINTERNAL, "placement made an invalid layout");
    memcpy(n->servers, l.servers, sizeof(n->servers));
    return meta_set(db, "next_server", nx);
}

/* 0 (none) or a multiple of 4 KiB up to 4 GiB. */
static int stripe_size_ok(uint64_t s)
{
    return s % 4096 == 0 && s <= MDB_SS_MAX;
}

/* ---- open, close, servers ----------------------------------------------------- */

/* Read the stored server list into a new array (*names, *n). */
static int mdb_read_servers(struct pfs_mdb *db, char (**names)[PFS_NAME_MAX], int *n)
{
    char(*v)[PFS_NAME_MAX] = calloc(PFS_SERVERS_MAX, PFS_NAME_MAX);
    if (!v)
        return PIO_ENOMEM;
    sqlite3_stmt *st = db->st[S_SRV_LIST];
    int k = 0, src, rc = PIO_OK;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        const char *s = (const char *)sqlite3_column_text(st, 1);
        if (k >= PFS_SERVERS_MAX || sqlite3_column_int64(st, 0) != k || !s ||
            strlen(s) >= PFS_NAME_MAX) {
            rc = mdb_fail(db, PIO_EIO, "the stored server list is damaged (row %d)", k);
            break;
        }
        snprintf(v[k++], PFS_NAME_MAX, "%s", s);
    }
    if (rc == PIO_OK && src != SQLITE_ROW && src != SQLITE_DONE)
        rc = mdb_status(db, src);
    mdb_done(st);
    if (rc != PIO_OK) {
        free(v);
        return rc;
    }
    *names = v;
    *n = k;
    return PIO_OK;
}

static void mdb_free(struct pfs_mdb *db)
{
    for (int i = 0; i < S_COUNT; i++)
        sqlite3_finalize(db->st[i]);
    sqlite3_close(db->sql);
    free(db->names);
    free(db);
}

/* The schema and the root, in one transaction; PIO_ECONFIG for another
 * schema version. */
static int mdb_init_schema(struct pfs_mdb *db)
{
    int rc;
    sqlite3_stmt *st = NULL;
    PIO_TRY(tx_begin(db, 1), rc, out);
    PIO_TRY(mdb_exec(db, mdb_schema), rc, end);
    PIO_TRY(
        mdb_status(db, sqlite3_prepare_v2(db->sql, "SELECT value FROM meta WHERE key = 'schema'",
                                          -1, &st, NULL)),
        rc, end);
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW) {
        int64_t v = sqlite3_column_int64(st, 0);
        sqlite3_reset(st);
        if (v == 1) /* before groups: every entry's group becomes 0 */
            rc = mdb_exec(db, "ALTER TABLE nodes ADD COLUMN gid INTEGER NOT NULL DEFAULT 0;"
                              "UPDATE meta SET value = 2 WHERE key = 'schema';");
        else if (v != MDB_SCHEMA)
            rc = mdb_fail(db, PIO_ECONFIG, "database schema version %lld, this pfs-mds knows %d",
                          (long long)v, MDB_SCHEMA);
    } else if (src == SQLITE_DONE) {
        char sql[512];
        int64_t now = mdb_now();
        snprintf(sql, sizeof(sql),
                 "INSERT INTO meta (key, value) VALUES ('schema', %d), ('next_server', 0);"
                 "INSERT INTO nodes (id, parent, name, type, mode, uid, mtime, ctime) "
                 "VALUES (%d, 0, '', %d, %d, 0, %lld, %lld);",
                 MDB_SCHEMA, MDB_ROOT, PFS_T_DIR, 0755, (long long)now, (long long)now);
        sqlite3_reset(st);
        rc = mdb_exec(db, sql);
    } else {
        rc = mdb_status(db, src);
    }
end:
    sqlite3_finalize(st);
    rc = tx_end(db, rc);
out:
    return rc;
}

int pfs_mdb_open(const char *file, struct pfs_mdb **dbp)
{
    int rc;
    mdb_open_err[0] = '\0';
    if (!file || !dbp)
        return PIO_EINVAL;
    *dbp = NULL;
    struct pfs_mdb *db = calloc(1, sizeof(*db));
    if (!db)
        return PIO_ENOMEM;
    int src = sqlite3_open_v2(file, &db->sql, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (src != SQLITE_OK) {
        rc = db->sql ? mdb_status(db, src) : PIO_ENOMEM;
        if (rc == PIO_OK)
            rc = PIO_EIO;
        goto fail;
    }
    sqlite3_busy_timeout(db->sql, MDB_BUSY_MS);

    /* WAL: readers never block the writer and a commit is one append to
     * the log; synchronous=FULL syncs the log at every commit */
    sqlite3_stmt *st = NULL;
    PIO_TRY(mdb_status(db, sqlite3_prepare_v2(db->sql, "PRAGMA journal_mode=WAL", -1, &st, NULL)),
            rc, fail);
    src = sqlite3_step(st);
    const char *mode = src == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
    if (!mode || strcmp(mode, "wal") != 0) {
        rc = src == SQLITE_ROW
                 ? mdb_fail(db, PIO_EIO, "the database refused WAL mode (%s)", mode ? mode : "?")
                 : mdb_status(db, src);
        if (rc == PIO_OK)
            rc = PIO_EIO;
        sqlite3_finalize(st);
        goto fail;
    }
    sqlite3_finalize(st);
    PIO_TRY(mdb_exec(db, "PRAGMA synchronous=FULL"), rc, fail);
    PIO_TRY(mdb_init_schema(db), rc, fail);
    for (int i = 0; i < S_COUNT; i++)
        PIO_TRY(mdb_status(db, sqlite3_prepare_v3(db->sql, mdb_sql[i], -1,
                                                  SQLITE_PREPARE_PERSISTENT, &db->st[i], NULL)),
                rc, fail);
    PIO_TRY(mdb_read_servers(db, &db->names, &db->nservers), rc, fail);
    *dbp = db;
    return PIO_OK;

fail:
    snprintf(mdb_open_err, sizeof(mdb_open_err), "%s: %s", file,
             db->err[0] ? db->err : PIO_Strerror(rc));
    mdb_free(db);
    return rc;
}

const char *pfs_mdb_open_error(void)
{
    return mdb_open_err;
}

void pfs_mdb_close(struct pfs_mdb *db)
{
    if (db)
        mdb_free(db);
}

const char *pfs_mdb_errmsg(struct pfs_mdb *db)
{
    return db ? db->err : "";
}

int pfs_mdb_servers(struct pfs_mdb *db, const char *const *names, int n)
{
    if (!db || n < 0 || (n > 0 && !names))
        return PIO_EINVAL;
    mdb_enter(db, NULL);
    if (n > PFS_SERVERS_MAX)
        return mdb_fail(db, PIO_ECONFIG, "%d I/O servers: at most %d", n, PFS_SERVERS_MAX);
    for (int i = 0; i < n; i++) {
        if (!names[i] || !names[i][0] || strlen(names[i]) >= PFS_NAME_MAX)
            return mdb_fail(db, PIO_EINVAL, "I/O server %d: a name of 1 to %d bytes is needed", i,
                            PFS_NAME_MAX - 1);
        for (int j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0)
                return mdb_fail(db, PIO_ECONFIG, "I/O server %s is listed twice", names[i]);
    }
    char(*have)[PFS_NAME_MAX] = NULL;
    int k = 0, rc;
    PIO_TRY(tx_begin(db, 1), rc, out);
    PIO_TRY(mdb_read_servers(db, &have, &k), rc, end);
    if (n == 0 && k == 0) {
        rc = mdb_fail(db, PIO_ECONFIG, "no I/O servers are stored yet: list them");
        goto end;
    }
    if (n > 0 && n < k) {
        rc = mdb_fail(db, PIO_ECONFIG,
                      "%d I/O servers given, the database has %d: servers can only be added", n, k);
        goto end;
    }
    for (int i = 0; i < k && i < n; i++)
        if (strcmp(have[i], names[i]) != 0) {
            rc = mdb_fail(db, PIO_ECONFIG,
                          "I/O server %d is %s in the database, %s given: the list may only "
                          "grow at its end",
                          i, have[i], names[i]);
            goto end;
        }
    for (int i = k; i < n; i++) {
        sqlite3_stmt *st = db->st[S_SRV_ADD];
        sqlite3_bind_int(st, 1, i);
        sqlite3_bind_text(st, 2, names[i], -1, SQLITE_STATIC);
        PIO_TRY(mdb_run(db, st), rc, end);
        snprintf(have[i], PFS_NAME_MAX, "%s", names[i]);
    }
    if (n > k)
        k = n;
end:
    rc = tx_end(db, rc);
    if (rc == PIO_OK) {
        free(db->names);
        db->names = have;
        db->nservers = k;
    } else {
        free(have);
    }
out:
    return rc;
}

int pfs_mdb_nservers(const struct pfs_mdb *db)
{
    return db ? db->nservers : 0;
}

const char *pfs_mdb_server(const struct pfs_mdb *db, int i)
{
    return db && i >= 0 && i < db->nservers ? db->names[i] : NULL;
}

/* ---- name space ---------------------------------------------------------------- */

/* One entry, by path (path != NULL) or by id, in a read transaction. */
static int node_read_tx(struct pfs_mdb *db, const char *path, int64_t id, struct pfs_attr *attr,
                        struct pfs_layout *layout)
{
    struct mdb_node n;
    int rc;
    PIO_TRY(tx_begin(db, 0), rc, out);
    rc = path ? node_resolve(db, path, &n, NULL) : node_get(db, id, &n);
    rc = tx_end(db, rc);
    if (rc == PIO_OK)
        node_out(&n, attr, layout);
out:
    return rc;
}

int pfs_mdb_lookup(struct pfs_mdb *db, const char *path, struct pfs_attr *attr,
                   struct pfs_layout *layout)
{
    if (!db || !path)
        return PIO_EINVAL;
    if (mdb_enter(db, path) != PIO_OK)
        return PIO_EINVAL;
    return node_read_tx(db, path, 0, attr, layout);
}

int pfs_mdb_stat(struct pfs_mdb *db, uint64_t fid, struct pfs_attr *attr)
{
    if (!db || fid > INT64_MAX)
        return PIO_EINVAL;
    mdb_enter(db, NULL);
    return node_read_tx(db, NULL, (int64_t)fid, attr, NULL);
}

int pfs_mdb_create(struct pfs_mdb *db, const char *path, uint32_t mode, uint32_t uid, uint32_t gid,
                   uint32_t flags, uint64_t size_hint, uint32_t wish_count,
                   uint64_t wish_stripe_size, struct pfs_attr *attr, struct pfs_layout *layout)
{
    if (!db || !path)
        return PIO_EINVAL;
    if (mdb_enter(db, path) != PIO_OK)
        return PIO_EINVAL;
    if (strcmp(path, "/") == 0)
        return PIO_EISDIR;
    if (!stripe_size_ok(wish_stripe_size))
        return mdb_fail(db, PIO_EINVAL, "stripe size %llu: a multiple of 4 KiB up to 4 GiB",
                        (unsigned long long)wish_stripe_size);
    struct mdb_node parent, n;
    const char *name = NULL;
    int64_t now = mdb_now();
    int rc;
    PIO_TRY(tx_begin(db, 1), rc, out);
    PIO_TRY(node_resolve(db, path, &parent, &name), rc, end);
    rc = node_child(db, parent.id, name, -1, &n);
    if (rc == PIO_OK) { /* it exists */
        if (n.type == PFS_T_DIR)
            rc = PIO_EISDIR;
        else if (flags & PFS_F_EXCL)
            rc = PIO_EEXIST;
        else if ((flags & PFS_F_TRUNC) && n.size != 0) {
            n.size = 0;
            n.mtime = n.ctime = now;
            rc = node_put(db, &n);
        }
        goto end;
    }
    if (rc != PIO_ENOENT)
        goto end;
    memset(&n, 0, sizeof(n));
    n.parent = parent.id;
    n.type = PFS_T_FILE;
    n.mode = mode & 07777;
    n.uid = uid;
    n.gid = gid;
    n.mtime = n.ctime = now;
    n.count = pfs_policy_count(size_hint, wish_count, parent.count, (uint32_t)db->nservers);
    n.stripe_size = wish_stripe_size     ? wish_stripe_size
                    : parent.stripe_size ? parent.stripe_size
                                         : PFS_STRIPE_SIZE_DEFAULT;
    PIO_TRY(mdb_place(db, &n), rc, end);
    PIO_TRY(node_insert(db, &n, name), rc, end);
    rc = node_touch(db, &parent, now);
end:
    rc = tx_end(db, rc);
    if (rc == PIO_OK)
        node_out(&n, attr, layout);
out:
    return rc;
}

int pfs_mdb_mkdir(struct pfs_mdb *db, const char *path, uint32_t mode, uint32_t uid, uint32_t gid,
                  struct pfs_attr *attr)
{
    if (!db || !path)
        return PIO_EINVAL;
    if (mdb_enter(db, path) != PIO_OK)
        return PIO_EINVAL;
    if (strcmp(path, "/") == 0)
        return PIO_EEXIST;
    struct mdb_node parent, n;
    const char *name = NULL;
    int64_t now = mdb_now();
    int rc;
    PIO_TRY(tx_begin(db, 1), rc, out);
    PIO_TRY(node_resolve(db, path, &parent, &name), rc, end);
    rc = node_child(db, parent.id, name, -1, &n);
    if (rc == PIO_OK)
        rc = PIO_EEXIST;
    if (rc != PIO_ENOENT)
        goto end;
    memset(&n, 0, sizeof(n));
    n.parent = parent.id;
    n.type = PFS_T_DIR;
    n.mode = mode & 07777;
    n.uid = uid;
    n.gid = gid;
    n.mtime = n.ctime = now;
    n.count = parent.count; /* the default stripe is inherited */
    n.stripe_size = parent.stripe_size;
    PIO_TRY(node_insert(db, &n, name), rc, end);
    rc = node_touch(db, &parent, now);
end:
    rc = tx_end(db, rc);
    if (rc == PIO_OK)
        node_out(&n, attr, NULL);
out:
    return rc;
}

int pfs_mdb_readdir(struct pfs_mdb *db, const char *path, uint64_t start, uint8_t *buf, size_t cap,
                    size_t *used, int *more)
{
    if (!db || !path || (!buf && cap) || !used || !more)
        return PIO_EINVAL;
    if (mdb_enter(db, path) != PIO_OK)
        return PIO_EINVAL;
    *used = 0;
    *more = 0;
    struct mdb_node dir;
    int rc;
    PIO_TRY(tx_begin(db, 0), rc, out);
    PIO_TRY(node_resolve(db, path, &dir, NULL), rc, end);
    if (dir.type != PFS_T_DIR) {
        rc = PIO_ENOTDIR;
        goto end;
    }
    sqlite3_stmt *st = db->st[S_LIST];
    sqlite3_bind_int64(st, 1, dir.id);
    sqlite3_bind_int64(st, 2, start > INT64_MAX ? INT64_MAX : (int64_t)start);
    int src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        struct pfs_dirent e;
        memset(&e, 0, sizeof(e));
        const char *name = (const char *)sqlite3_column_text(st, 0);
        int len = sqlite3_column_bytes(st, 0);
        if (len >= (int)sizeof(e.name))
            len = (int)sizeof(e.name) - 1;
        memcpy(e.name, name ? name : "", name ? (size_t)len : 0);
        e.type = (uint32_t)sqlite3_column_int(st, 1);
        e.mode = (uint32_t)sqlite3_column_int64(st, 2);
        e.size = e.type == PFS_T_FILE ? (uint64_t)sqlite3_column_int64(st, 3) : 0;
        e.mtime_ns = sqlite3_column_int64(st, 4);
        if (pfs_dirent_put(buf, cap, used, &e) != 0) {
            *more = 1;
            break;
        }
    }
    if (src != SQLITE_ROW && src != SQLITE_DONE)
        rc = mdb_status(db, src);
    mdb_done(st);
    if (rc == PIO_OK && *more && *used == 0)
        rc = mdb_fail(db, PIO_ETRUNC, "%zu bytes cannot hold one directory entry", cap);
end:
    rc = tx_end(db, rc);
out:
    return rc;
}

int pfs_mdb_unlink(struct pfs_mdb *db, const char *path, int is_dir, struct pfs_attr *attr,
                   struct pfs_layout *layout)
{
    if (!db || !path)
        return PIO_EINVAL;
    if (mdb_enter(db, path) != PIO_OK)
        return PIO_EINVAL;
    if (strcmp(path, "/") == 0)
        return is_dir ? mdb_fail(db, PIO_EBUSY, "the root directory cannot be removed")
                      : PIO_EISDIR;
    struct mdb_node parent, n;
    const char *name = NULL;
    int rc;
    PIO_TRY(tx_begin(db, 1), rc, out);
    PIO_TRY(node_resolve(db, path, &parent, &name), rc, end);
    PIO_TRY(node_child(db, parent.id, name, -1, &n), rc, end);
    if (n.type == PFS_T_DIR && !is_dir)
        rc = PIO_EISDIR;
    else if (n.type != PFS_T_DIR && is_dir)
        rc = PIO_ENOTDIR;
    else if (n.type == PFS_T_DIR)
        rc = node_check_empty(db, n.id);
    if (rc != PIO_OK)
        goto end;
    PIO_TRY(node_delete(db, n.id), rc, end);
    rc = node_touch(db, &parent, mdb_now());
end:
    rc = tx_end(db, rc);
    if (rc == PIO_OK)
        node_out(&n, attr, layout);
out:
    return rc;
}

int pfs_mdb_rename(struct pfs_mdb *db, const char *from, const char *to, int *replaced,
                   struct pfs_attr *attr, struct pfs_layout *layout)
{
    if (!db || !from || !to)
        return PIO_EINVAL;
    if (mdb_enter(db, from) != PIO_OK || mdb_enter(db, to) != PIO_OK)
        return PIO_EINVAL;
    if (strcmp(from, "/") == 0 || strcmp(to, "/") == 0)
        return mdb_fail(db, PIO_EBUSY, "the root directory cannot be renamed or replaced");
    struct mdb_node sparent, src, dparent, dst;
    const char *sname = NULL, *dname = NULL;
    int rep = 0, rc;
    int64_t now = mdb_now();
    PIO_TRY(tx_begin(db, 1), rc, out);
    PIO_TRY(node_resolve(db, from, &sparent, &sname), rc, end);
    PIO_TRY(node_child(db, sparent.id, sname, -1, &src), rc, end);
    if (strcmp(from, to) == 0)
        goto end; /* nothing to do */
    size_t lf = strlen(from);
    if (src.type == PFS_T_DIR && strncmp(to, from, lf) == 0 && to[lf] == '/') {
        rc = mdb_fail(db, PIO_EINVAL, "%s cannot move into its own subtree (%s)", from, to);
        goto end;
    }
    PIO_TRY(node_resolve(db, to, &dparent, &dname), rc, end);
    rc = node_child(db, dparent.id, dname, -1, &dst);
    if (rc == PIO_OK) { /* something is at to: replace it, if allowed */
        if (src.type == PFS_T_FILE && dst.type == PFS_T_DIR)
            rc = PIO_EISDIR;
        else if (src.type == PFS_T_DIR && dst.type != PFS_T_DIR)
            rc = PIO_ENOTDIR;
        else if (dst.type == PFS_T_DIR)
            rc = node_check_empty(db, dst.id);
        if (rc != PIO_OK)
            goto end;
        PIO_TRY(node_delete(db, dst.id), rc, end);
        rep = dst.type == PFS_T_FILE;
    } else if (rc != PIO_ENOENT) {
        goto end;
    }
    sqlite3_stmt *st = db->st[S_MOVE];
    sqlite3_bind_int64(st, 1, src.id);
    sqlite3_bind_int64(st, 2, dparent.id);
    sqlite3_bind_text(st, 3, dname, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, now);
    PIO_TRY(mdb_run(db, st), rc, end);
    PIO_TRY(node_touch(db, &sparent, now), rc, end);
    if (dparent.id != sparent.id)
        rc = node_touch(db, &dparent, now);
end:
    rc = tx_end(db, rc);
    if (rc == PIO_OK) {
        if (replaced)
            *replaced = rep;
        if (rep) {
            node_out(&dst, attr, layout);
        } else {
            if (attr)
                memset(attr, 0, sizeof(*attr));
            if (layout)
                memset(layout, 0, sizeof(*layout));
        }
    }
out:
    return rc;
}

int pfs_mdb_setsize(struct pfs_mdb *db, uint64_t fid, uint64_t size, int exact,
                    struct pfs_attr *attr)
{
    if (!db)
        return PIO_EINVAL;
    mdb_enter(db, NULL);
    if (size > INT64_MAX)
        return mdb_fail(db, PIO_EINVAL, "size %llu is too large", (unsigned long long)size);
    if (fid == 0 || fid > INT64_MAX)
        return PIO_ENOENT;
    struct mdb_node n;
    int rc;
    PIO_TRY(tx_begin(db, 1), rc, out);
    PIO_TRY(node_get(db, (int64_t)fid, &n), rc, end);
    if (n.type != PFS_T_FILE) {
        rc = PIO_EISDIR;
        goto end;
    }
    if (exact || size > n.size)
        n.size = size;
    n.mtime = n.ctime = mdb_now();
    rc = node_put(db, &n);
end:
    rc = tx_end(db, rc);
    if (rc == PIO_OK)
        node_out(&n, attr, NULL);
out:
    return rc;
}

int pfs_mdb_setattr(struct pfs_mdb *db, const char *path, uint32_t flags, uint32_t mode,
                    int64_t mtime_ns, struct pfs_attr *attr)
{
    if (!db || !path)
        return PIO_EINVAL;
    if (mdb_enter(db, path) != PIO_OK)
        return PIO_EINVAL;
    struct mdb_node n;
    int rc;
    PIO_TRY(tx_begin(db, 1), rc, out);
    PIO_TRY(node_resolve(db, path, &n, NULL), rc, end);
    if (flags & PFS_F_MODE)
        n.mode = mode & 07777;
    if (flags & PFS_F_MTIME)
        n.mtime = mtime_ns;
    n.ctime = mdb_now();
    rc = node_put(db, &n);
end:
    rc = tx_end(db, rc);
    if (rc == PIO_OK)
        node_out(&n, attr, NULL);
out:
    return rc;
}

int pfs_mdb_setstripe(struct pfs_mdb *db, const char *path, uint32_t count, uint64_t stripe_size,
                      struct pfs_attr *attr, struct pfs_layout *layout)
{
    if (!db || !path)
        return PIO_EINVAL;
    if (mdb_enter(db, path) != PIO_OK)
        return PIO_EINVAL;
    if (count > PFS_STRIPES_MAX || !stripe_size_ok(stripe_size))
        return mdb_fail(db, PIO_EINVAL,
                        "stripe count %u, size %llu: the count is 0 to %d, the size a multiple "
                        "of 4 KiB up to 4 GiB",
                        count, (unsigned long long)stripe_size, PFS_STRIPES_MAX);
    struct mdb_node n;
    int rc;
    PIO_TRY(tx_begin(db, 1), rc, out);
    PIO_TRY(node_resolve(db, path, &n, NULL), rc, end);
    if (n.type == PFS_T_DIR) { /* the default: both 0 clears it */
        n.count = count;
        n.stripe_size = stripe_size;
    } else {
        if (n.size != 0) {
            rc = mdb_fail(db, PIO_EBUSY, "%s has data: its layout can no longer change", path);
            goto end;
        }
        if (count)
            n.count = pfs_policy_count(0, count, 0, (uint32_t)db->nservers);
        if (stripe_size)
            n.stripe_size = stripe_size;
        PIO_TRY(mdb_place(db, &n), rc, end);
    }
    n.ctime = mdb_now();
    rc = node_put(db, &n);
end:
    rc = tx_end(db, rc);
    if (rc == PIO_OK)
        node_out(&n, attr, layout);
out:
    return rc;
}

int pfs_mdb_statfs(struct pfs_mdb *db, uint64_t *files, uint64_t *bytes)
{
    if (!db)
        return PIO_EINVAL;
    mdb_enter(db, NULL);
    int rc;
    PIO_TRY(tx_begin(db, 0), rc, out);
    sqlite3_stmt *st = db->st[S_STATFS];
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW) {
        if (files)
            *files = (uint64_t)sqlite3_column_int64(st, 0);
        if (bytes)
            *bytes = (uint64_t)sqlite3_column_int64(st, 1);
    } else {
        rc = mdb_status(db, src);
        if (rc == PIO_OK)
            rc = mdb_fail(db, PIO_EIO, "statfs: no result");
    }
    mdb_done(st);
    rc = tx_end(db, rc);
out:
    return rc;
}
