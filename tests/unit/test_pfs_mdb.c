/* test_pfs_mdb.c - the pfs metadata database (pfs/mdb.h) without PIO: the
 * stripe policy through create, directory defaults, even placement, readdir
 * order and paging, unlink / rename rules, sizes, the server list,
 * persistence, and durability of acknowledged creates across kill -9.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Each case gets its own temporary directory (mkdtemp) holding its
 * database files, removed by the teardown. */
#include "pfs/layout.h"
#include "pfs/mdb.h"
#include "pio.h"
#include "tests/lib/unit.h"

#include <dirent.h>
#include <sqlite3.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

struct fx {
    char dir[64];
    char file[128];
    struct pfs_mdb *db;
};

static int fx_setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    snprintf(f->dir, sizeof(f->dir), "/tmp/test_pfs_mdb.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->file, sizeof(f->file), "%s/mds.db", f->dir);
    assert_int_equal(pfs_mdb_open(f->file, &f->db), PIO_OK);
    *state = f;
    return 0;
}

static int fx_teardown(void **state)
{
    struct fx *f = *state;
    pfs_mdb_close(f->db);
    DIR *d = opendir(f->dir);
    if (d) {
        struct dirent *e;
        char p[512];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(p, sizeof(p), "%s/%s", f->dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(f->dir);
    free(f);
    return 0;
}

/* Give db n servers named iod0 .. iod(n-1). */
static int set_servers(struct pfs_mdb *db, int n)
{
    static char names[PFS_SERVERS_MAX][16];
    const char *v[PFS_SERVERS_MAX];
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof(names[i]), "iod%d", i);
        v[i] = names[i];
    }
    return pfs_mdb_servers(db, v, n);
}

/* Another database in the case's directory, with n servers. */
static struct pfs_mdb *open_other(struct fx *f, const char *name, int n)
{
    char p[256];
    struct pfs_mdb *db = NULL;
    snprintf(p, sizeof(p), "%s/%s", f->dir, name);
    assert_int_equal(pfs_mdb_open(p, &db), PIO_OK);
    assert_int_equal(set_servers(db, n), PIO_OK);
    return db;
}

static void create_ok(struct pfs_mdb *db, const char *path, uint64_t hint, uint32_t wish,
                      uint64_t wish_ss, struct pfs_attr *a, struct pfs_layout *l)
{
    int rc = pfs_mdb_create(db, path, 0644, 0, 0, PFS_F_EXCL, hint, wish, wish_ss, a, l);
    if (rc != PIO_OK)
        fail_msg("create %s: %s (%s)", path, PIO_Errname(rc), pfs_mdb_errmsg(db));
    assert_int_equal(a->type, PFS_T_FILE);
    assert_true(pfs_layout_valid(l, (uint32_t)pfs_mdb_nservers(db)));
}

static void test_policy(void **state)
{
    struct fx *f = *state;
    struct pfs_attr a;
    struct pfs_layout l;
    assert_int_equal(set_servers(f->db, 4), PIO_OK);

    create_ok(f->db, "/big", 100u << 20, 0, 0, &a, &l);
    assert_int_equal(l.count, 4); /* ceil(100 / 16) = 7, capped by 4 servers */
    assert_int_equal(l.stripe_size, PFS_STRIPE_SIZE_DEFAULT);
    assert_int_equal(a.size, 0);
    assert_int_equal(a.mode, 0644);
    uint64_t fid1 = a.fid;
    create_ok(f->db, "/one", 100u << 20, 1, 0, &a, &l);
    assert_int_equal(l.count, 1);
    assert_true(a.fid != fid1);
    create_ok(f->db, "/unknown", 0, 0, 0, &a, &l);
    assert_int_equal(l.count, 1);
    create_ok(f->db, "/small", 20u << 20, 0, 65536, &a, &l);
    assert_int_equal(l.count, 2);
    assert_int_equal(l.stripe_size, 65536);
    assert_int_equal(pfs_mdb_create(f->db, "/bad", 0644, 0, 0, 0, 0, 0, 1000, &a, &l), PIO_EINVAL);
    assert_int_equal(pfs_mdb_lookup(f->db, "/bad", &a, &l), PIO_ENOENT);

    struct pfs_mdb *db = open_other(f, "forty.db", 40);
    create_ok(db, "/big", 100u << 20, 0, 0, &a, &l);
    assert_int_equal(l.count, 7);
    create_ok(db, "/huge", 10ull << 30, 0, 0, &a, &l);
    assert_int_equal(l.count, 32);
    create_ok(db, "/one", 100u << 20, 1, 0, &a, &l);
    assert_int_equal(l.count, 1);
    create_ok(db, "/wide", 0, 64, 0, &a, &l);
    assert_int_equal(l.count, 32);
    /* the lookup gives back the same layout */
    struct pfs_layout l2;
    assert_int_equal(pfs_mdb_lookup(db, "/wide", &a, &l2), PIO_OK);
    assert_memory_equal(&l, &l2, sizeof(l));
    pfs_mdb_close(db);
}

static void test_bad_paths(void **state)
{
    struct fx *f = *state;
    struct pfs_attr a;
    assert_int_equal(set_servers(f->db, 2), PIO_OK);
    const char *bad[] = {"", "a", "/a/", "/a//b", "/a/./b", "/a/../b", "//"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(pfs_mdb_lookup(f->db, bad[i], &a, NULL), PIO_EINVAL);
        assert_int_equal(pfs_mdb_create(f->db, bad[i], 0644, 0, 0, 0, 0, 0, 0, &a, NULL),
                         PIO_EINVAL);
        assert_int_equal(pfs_mdb_mkdir(f->db, bad[i], 0755, 0, 0, &a), PIO_EINVAL);
    }
    assert_int_equal(pfs_mdb_lookup(f->db, "/", &a, NULL), PIO_OK);
    assert_int_equal(a.type, PFS_T_DIR);
    assert_int_equal(a.mode, 0755);
}

static void test_dir_default(void **state)
{
    struct fx *f = *state;
    struct pfs_attr a;
    struct pfs_layout l;
    assert_int_equal(set_servers(f->db, 4), PIO_OK);
    assert_int_equal(pfs_mdb_mkdir(f->db, "/d", 0755, 0, 0, &a), PIO_OK);
    assert_int_equal(a.type, PFS_T_DIR);
    assert_int_equal(pfs_mdb_setstripe(f->db, "/d", 2, 256 << 10, &a, &l), PIO_OK);
    assert_int_equal(pfs_mdb_lookup(f->db, "/d", &a, &l), PIO_OK);
    assert_int_equal(l.count, 2);
    assert_int_equal(l.stripe_size, 256 << 10);

    create_ok(f->db, "/d/f", 0, 0, 0, &a, &l);
    assert_int_equal(l.count, 2);
    assert_int_equal(l.stripe_size, 256 << 10);
    create_ok(f->db, "/d/g", 100u << 20, 0, 0, &a, &l); /* the default beats the size */
    assert_int_equal(l.count, 2);
    create_ok(f->db, "/d/w", 0, 3, 0, &a, &l); /* a wish beats the default */
    assert_int_equal(l.count, 3);
    assert_int_equal(l.stripe_size, 256 << 10);

    /* a subdirectory inherits the default when made, and keeps it */
    assert_int_equal(pfs_mdb_mkdir(f->db, "/d/sub", 0755, 0, 0, &a), PIO_OK);
    assert_int_equal(pfs_mdb_setstripe(f->db, "/d", 0, 0, &a, &l), PIO_OK);
    assert_int_equal(pfs_mdb_lookup(f->db, "/d", &a, &l), PIO_OK);
    assert_int_equal(l.count, 0);
    assert_int_equal(l.stripe_size, 0);
    assert_int_equal(pfs_mdb_lookup(f->db, "/d/sub", &a, &l), PIO_OK);
    assert_int_equal(l.count, 2);
    assert_int_equal(l.stripe_size, 256 << 10);
    create_ok(f->db, "/d/sub/h", 0, 0, 0, &a, &l);
    assert_int_equal(l.count, 2);
    assert_int_equal(l.stripe_size, 256 << 10);
    create_ok(f->db, "/d/x", 0, 0, 0, &a, &l); /* the default is gone from /d */
    assert_int_equal(l.count, 1);
    assert_int_equal(l.stripe_size, PFS_STRIPE_SIZE_DEFAULT);
    /* only the parent counts: the root has no default */
    create_ok(f->db, "/top", 0, 0, 0, &a, &l);
    assert_int_equal(l.count, 1);

    /* validation */
    assert_int_equal(pfs_mdb_setstripe(f->db, "/d", 33, 0, &a, &l), PIO_EINVAL);
    assert_int_equal(pfs_mdb_setstripe(f->db, "/d", 2, 1000, &a, &l), PIO_EINVAL);
    assert_int_equal(pfs_mdb_setstripe(f->db, "/nope", 2, 0, &a, &l), PIO_ENOENT);

    /* an empty file takes a new layout; one with data does not */
    assert_int_equal(pfs_mdb_setstripe(f->db, "/d/x", 3, 65536, &a, &l), PIO_OK);
    assert_int_equal(l.count, 3);
    assert_int_equal(l.stripe_size, 65536);
    assert_true(pfs_layout_valid(&l, 4));
    struct pfs_layout l2;
    assert_int_equal(pfs_mdb_lookup(f->db, "/d/x", &a, &l2), PIO_OK);
    assert_memory_equal(&l, &l2, sizeof(l));
    assert_int_equal(pfs_mdb_setsize(f->db, a.fid, 10, 0, &a), PIO_OK);
    assert_int_equal(pfs_mdb_setstripe(f->db, "/d/x", 2, 0, &a, &l), PIO_EBUSY);
    assert_int_equal(pfs_mdb_lookup(f->db, "/d/x", &a, &l2), PIO_OK);
    assert_int_equal(l2.count, 3);
}

/* Create n files of count stripes over nservers; per[i] = stripes on server i. */
static void spread(struct pfs_mdb *db, int n, uint32_t count, int *per)
{
    for (int i = 0; i < n; i++) {
        char p[32];
        struct pfs_attr a;
        struct pfs_layout l;
        snprintf(p, sizeof(p), "/f%d", i);
        create_ok(db, p, 0, count, 0, &a, &l);
        assert_int_equal(l.count, count);
        for (uint32_t s = 0; s < l.count; s++)
            per[l.servers[s]]++;
    }
}

static void test_evenness(void **state)
{
    struct fx *f = *state;
    int per[4] = {0};
    assert_int_equal(set_servers(f->db, 4), PIO_OK);
    spread(f->db, 24, 3, per);
    for (int s = 0; s < 4; s++)
        assert_int_equal(per[s], 18);

    struct pfs_mdb *db = open_other(f, "five.db", 4);
    int per5[4] = {0}, total = 0;
    spread(db, 5, 3, per5);
    for (int s = 0; s < 4; s++) {
        total += per5[s];
        /* mean 15 / 4 = 3.75: every server holds 3 or 4 (|4 * n - 15| <= 4) */
        assert_true(abs(4 * per5[s] - 15) <= 4);
    }
    assert_int_equal(total, 15);
    pfs_mdb_close(db);
}

static int list_all(struct pfs_mdb *db, const char *dir, size_t cap, char names[][16], int max,
                    int *pages)
{
    uint8_t *buf = malloc(cap);
    assert_non_null(buf);
    int n = 0, more = 1;
    *pages = 0;
    while (more) {
        size_t used, pos = 0;
        int rc = pfs_mdb_readdir(db, dir, (uint64_t)n, buf, cap, &used, &more);
        assert_int_equal(rc, PIO_OK);
        (*pages)++;
        struct pfs_dirent e;
        int got = 0, r;
        while ((r = pfs_dirent_next(buf, used, &pos, &e)) == 1) {
            assert_true(n < max);
            assert_true(strlen(e.name) < 16);
            memcpy(names[n++], e.name, strlen(e.name) + 1);
            got++;
        }
        assert_int_equal(r, 0);
        if (more)
            assert_true(got > 0);
        assert_true(*pages < 1000);
    }
    free(buf);
    return n;
}

static void test_readdir(void **state)
{
    struct fx *f = *state;
    struct pfs_attr a;
    struct pfs_layout l;
    assert_int_equal(set_servers(f->db, 2), PIO_OK);
    assert_int_equal(pfs_mdb_mkdir(f->db, "/d", 0755, 0, 0, &a), PIO_OK);
    /* 30 files made in a scrambled order, a directory and an upper-case name */
    for (int i = 0; i < 30; i++) {
        char p[32];
        snprintf(p, sizeof(p), "/d/f%02d", (i * 7) % 30);
        create_ok(f->db, p, 0, 0, 0, &a, &l);
    }
    assert_int_equal(pfs_mdb_mkdir(f->db, "/d/m", 0700, 0, 0, &a), PIO_OK);
    create_ok(f->db, "/d/Z", 0, 0, 0, &a, &l);
    assert_int_equal(pfs_mdb_setsize(f->db, a.fid, 1234, 0, &a), PIO_OK);

    char want[32][16], got[40][16];
    snprintf(want[0], 16, "Z");
    for (int i = 0; i < 30; i++)
        snprintf(want[1 + i], 16, "f%02d", i);
    snprintf(want[31], 16, "m");

    /* one call holds all */
    uint8_t buf[4096];
    size_t used, pos = 0;
    int more = 7;
    assert_int_equal(pfs_mdb_readdir(f->db, "/d", 0, buf, sizeof(buf), &used, &more), PIO_OK);
    assert_int_equal(more, 0);
    struct pfs_dirent e;
    int n = 0;
    while (pfs_dirent_next(buf, used, &pos, &e) == 1) {
        assert_true(n < 32);
        assert_string_equal(e.name, want[n]);
        if (n == 0) {
            assert_int_equal(e.type, PFS_T_FILE);
            assert_int_equal(e.size, 1234);
        }
        if (n == 31) {
            assert_int_equal(e.type, PFS_T_DIR);
            assert_int_equal(e.mode, 0700);
        }
        n++;
    }
    assert_int_equal(n, 32);

    /* pages of two entries (each 26 bytes here) */
    int pages;
    n = list_all(f->db, "/d", 60, got, 40, &pages);
    assert_int_equal(n, 32);
    assert_int_equal(pages, 16);
    for (int i = 0; i < 32; i++)
        assert_string_equal(got[i], want[i]);
    /* a start past the end: nothing, no more */
    assert_int_equal(pfs_mdb_readdir(f->db, "/d", 32, buf, sizeof(buf), &used, &more), PIO_OK);
    assert_int_equal(used, 0);
    assert_int_equal(more, 0);

    assert_int_equal(pfs_mdb_readdir(f->db, "/d/m", 0, buf, sizeof(buf), &used, &more), PIO_OK);
    assert_int_equal(used, 0);
    assert_int_equal(more, 0);
    assert_int_equal(pfs_mdb_readdir(f->db, "/d", 0, buf, 10, &used, &more), PIO_ETRUNC);
    assert_int_equal(pfs_mdb_readdir(f->db, "/d/f01", 0, buf, sizeof(buf), &used, &more),
                     PIO_ENOTDIR);
    assert_int_equal(pfs_mdb_readdir(f->db, "/nope", 0, buf, sizeof(buf), &used, &more),
                     PIO_ENOENT);
    /* the root lists its own entries, not itself */
    assert_int_equal(pfs_mdb_readdir(f->db, "/", 0, buf, sizeof(buf), &used, &more), PIO_OK);
    pos = 0;
    assert_int_equal(pfs_dirent_next(buf, used, &pos, &e), 1);
    assert_string_equal(e.name, "d");
    assert_int_equal(pfs_dirent_next(buf, used, &pos, &e), 0);
}

static void test_create_rules(void **state)
{
    struct fx *f = *state;
    struct pfs_attr a, b;
    struct pfs_layout l, l2;
    assert_int_equal(set_servers(f->db, 3), PIO_OK);
    create_ok(f->db, "/f", 0, 0, 0, &a, &l);
    assert_int_equal(pfs_mdb_create(f->db, "/f", 0644, 0, 0, PFS_F_EXCL, 0, 0, 0, &b, &l2),
                     PIO_EEXIST);
    /* without EXCL: the existing file, layout and all */
    assert_int_equal(pfs_mdb_create(f->db, "/f", 0600, 0, 0, 0, 0, 5, 0, &b, &l2), PIO_OK);
    assert_int_equal(b.fid, a.fid);
    assert_int_equal(b.mode, 0644);
    assert_memory_equal(&l, &l2, sizeof(l));
    assert_int_equal(pfs_mdb_setsize(f->db, a.fid, 5000, 0, &b), PIO_OK);
    assert_int_equal(pfs_mdb_create(f->db, "/f", 0644, 0, 0, 0, 0, 0, 0, &b, &l2), PIO_OK);
    assert_int_equal(b.size, 5000);
    assert_int_equal(pfs_mdb_create(f->db, "/f", 0644, 0, 0, PFS_F_TRUNC, 0, 0, 0, &b, &l2),
                     PIO_OK);
    assert_int_equal(b.size, 0);
    assert_int_equal(pfs_mdb_lookup(f->db, "/f", &b, NULL), PIO_OK);
    assert_int_equal(b.size, 0);

    assert_int_equal(pfs_mdb_mkdir(f->db, "/d", 0755, 0, 0, &b), PIO_OK);
    assert_int_equal(pfs_mdb_create(f->db, "/d", 0644, 0, 0, 0, 0, 0, 0, &b, &l2), PIO_EISDIR);
    assert_int_equal(pfs_mdb_create(f->db, "/", 0644, 0, 0, 0, 0, 0, 0, &b, &l2), PIO_EISDIR);
    assert_int_equal(pfs_mdb_create(f->db, "/no/x", 0644, 0, 0, 0, 0, 0, 0, &b, &l2), PIO_ENOENT);
    assert_int_equal(pfs_mdb_create(f->db, "/f/x", 0644, 0, 0, 0, 0, 0, 0, &b, &l2), PIO_ENOTDIR);
    assert_int_equal(pfs_mdb_lookup(f->db, "/f/x", &b, NULL), PIO_ENOTDIR);
    assert_int_equal(pfs_mdb_lookup(f->db, "/no/x", &b, NULL), PIO_ENOENT);
    assert_int_equal(pfs_mdb_mkdir(f->db, "/d", 0755, 0, 0, &b), PIO_EEXIST);
    assert_int_equal(pfs_mdb_mkdir(f->db, "/f", 0755, 0, 0, &b), PIO_EEXIST);
    assert_int_equal(pfs_mdb_mkdir(f->db, "/", 0755, 0, 0, &b), PIO_EEXIST);
    assert_int_equal(pfs_mdb_mkdir(f->db, "/f/d", 0755, 0, 0, &b), PIO_ENOTDIR);
    assert_int_equal(pfs_mdb_mkdir(f->db, "/no/d", 0755, 0, 0, &b), PIO_ENOENT);

    /* fids are never reused, not even the newest one after it is removed */
    create_ok(f->db, "/g", 0, 0, 0, &a, &l);
    assert_int_equal(pfs_mdb_unlink(f->db, "/g", 0, &b, NULL), PIO_OK);
    create_ok(f->db, "/h", 0, 0, 0, &b, &l);
    assert_true(b.fid > a.fid);
}

static void test_unlink_rules(void **state)
{
    struct fx *f = *state;
    struct pfs_attr a, b;
    struct pfs_layout l, l2;
    assert_int_equal(set_servers(f->db, 4), PIO_OK);
    create_ok(f->db, "/f", 0, 3, 0, &a, &l);
    assert_int_equal(pfs_mdb_setsize(f->db, a.fid, 77, 1, NULL), PIO_OK);
    assert_int_equal(pfs_mdb_mkdir(f->db, "/d", 0755, 0, 0, &b), PIO_OK);
    assert_int_equal(pfs_mdb_mkdir(f->db, "/d/e", 0755, 0, 0, &b), PIO_OK);

    assert_int_equal(pfs_mdb_unlink(f->db, "/f", 1, &b, &l2), PIO_ENOTDIR);
    assert_int_equal(pfs_mdb_unlink(f->db, "/d/e", 0, &b, &l2), PIO_EISDIR);
    assert_int_equal(pfs_mdb_unlink(f->db, "/d", 1, &b, &l2), PIO_ENOTEMPTY);
    assert_int_equal(pfs_mdb_unlink(f->db, "/", 1, &b, &l2), PIO_EBUSY);
    assert_int_equal(pfs_mdb_unlink(f->db, "/", 0, &b, &l2), PIO_EISDIR);
    assert_int_equal(pfs_mdb_unlink(f->db, "/nope", 0, &b, &l2), PIO_ENOENT);
    assert_int_equal(pfs_mdb_unlink(f->db, "/f/x", 0, &b, &l2), PIO_ENOTDIR);

    /* a file: what was removed comes back for the objects to be destroyed */
    assert_int_equal(pfs_mdb_unlink(f->db, "/f", 0, &b, &l2), PIO_OK);
    assert_int_equal(b.fid, a.fid);
    assert_int_equal(b.size, 77);
    assert_memory_equal(&l, &l2, sizeof(l));
    assert_int_equal(pfs_mdb_lookup(f->db, "/f", &b, NULL), PIO_ENOENT);
    assert_int_equal(pfs_mdb_unlink(f->db, "/f", 0, &b, &l2), PIO_ENOENT);

    assert_int_equal(pfs_mdb_unlink(f->db, "/d/e", 1, &b, &l2), PIO_OK);
    assert_int_equal(b.type, PFS_T_DIR);
    assert_int_equal(pfs_mdb_unlink(f->db, "/d", 1, &b, &l2), PIO_OK);
    assert_int_equal(pfs_mdb_lookup(f->db, "/d", &b, NULL), PIO_ENOENT);
    uint64_t files = 9, bytes = 9;
    assert_int_equal(pfs_mdb_statfs(f->db, &files, &bytes), PIO_OK);
    assert_int_equal(files, 0);
    assert_int_equal(bytes, 0);
}

static void test_rename_rules(void **state)
{
    struct fx *f = *state;
    struct pfs_attr a, b, c;
    struct pfs_layout l, lb, lc;
    int rep = 7;
    assert_int_equal(set_servers(f->db, 4), PIO_OK);
    create_ok(f->db, "/a", 0, 2, 0, &a, &l);
    assert_int_equal(pfs_mdb_rename(f->db, "/a", "/b", &rep, &c, &lc), PIO_OK);
    assert_int_equal(rep, 0);
    assert_int_equal(c.fid, 0);
    assert_int_equal(pfs_mdb_lookup(f->db, "/a", &c, NULL), PIO_ENOENT);
    assert_int_equal(pfs_mdb_lookup(f->db, "/b", &c, &lc), PIO_OK);
    assert_int_equal(c.fid, a.fid);
    assert_memory_equal(&l, &lc, sizeof(l));
    assert_int_equal(pfs_mdb_rename(f->db, "/b", "/b", &rep, &c, &lc), PIO_OK);
    assert_int_equal(rep, 0);
    assert_int_equal(pfs_mdb_lookup(f->db, "/b", &c, NULL), PIO_OK);

    /* replacing a file gives it back */
    create_ok(f->db, "/c", 0, 3, 0, &b, &lb);
    assert_int_equal(pfs_mdb_rename(f->db, "/b", "/c", &rep, &c, &lc), PIO_OK);
    assert_int_equal(rep, 1);
    assert_int_equal(c.fid, b.fid);
    assert_memory_equal(&lb, &lc, sizeof(lb));
    assert_int_equal(pfs_mdb_lookup(f->db, "/c", &c, NULL), PIO_OK);
    assert_int_equal(c.fid, a.fid);
    assert_int_equal(pfs_mdb_lookup(f->db, "/b", &c, NULL), PIO_ENOENT);

    /* a directory moves with its subtree */
    assert_int_equal(pfs_mdb_mkdir(f->db, "/d", 0755, 0, 0, &c), PIO_OK);
    assert_int_equal(pfs_mdb_mkdir(f->db, "/d/e", 0755, 0, 0, &c), PIO_OK);
    create_ok(f->db, "/d/e/f", 0, 0, 0, &b, &lb);
    assert_int_equal(pfs_mdb_mkdir(f->db, "/x", 0755, 0, 0, &c), PIO_OK);
    assert_int_equal(pfs_mdb_rename(f->db, "/d", "/x/d2", &rep, &c, &lc), PIO_OK);
    assert_int_equal(rep, 0);
    assert_int_equal(pfs_mdb_lookup(f->db, "/x/d2/e/f", &c, NULL), PIO_OK);
    assert_int_equal(c.fid, b.fid);
    assert_int_equal(pfs_mdb_lookup(f->db, "/d/e/f", &c, NULL), PIO_ENOENT);
    assert_int_equal(pfs_mdb_lookup(f->db, "/d", &c, NULL), PIO_ENOENT);

    /* into its own subtree, or onto itself from below */
    assert_int_equal(pfs_mdb_rename(f->db, "/x", "/x/d2/y", &rep, &c, &lc), PIO_EINVAL);
    assert_int_equal(pfs_mdb_rename(f->db, "/x", "/x/y", &rep, &c, &lc), PIO_EINVAL);
    /* a directory onto a file, a file onto a directory, onto a non-empty one */
    assert_int_equal(pfs_mdb_rename(f->db, "/x", "/c", &rep, &c, &lc), PIO_ENOTDIR);
    assert_int_equal(pfs_mdb_rename(f->db, "/c", "/x", &rep, &c, &lc), PIO_EISDIR);
    assert_int_equal(pfs_mdb_mkdir(f->db, "/y", 0755, 0, 0, &c), PIO_OK);
    assert_int_equal(pfs_mdb_rename(f->db, "/y", "/x", &rep, &c, &lc), PIO_ENOTEMPTY);
    /* onto an empty directory: replaced, nothing to destroy */
    assert_int_equal(pfs_mdb_mkdir(f->db, "/z", 0755, 0, 0, &c), PIO_OK);
    assert_int_equal(pfs_mdb_rename(f->db, "/x", "/z", &rep, &c, &lc), PIO_OK);
    assert_int_equal(rep, 0);
    assert_int_equal(pfs_mdb_lookup(f->db, "/z/d2/e/f", &c, NULL), PIO_OK);
    assert_int_equal(pfs_mdb_lookup(f->db, "/x", &c, NULL), PIO_ENOENT);
    /* missing source or target parent, the root */
    assert_int_equal(pfs_mdb_rename(f->db, "/nope", "/q", &rep, &c, &lc), PIO_ENOENT);
    assert_int_equal(pfs_mdb_rename(f->db, "/c", "/nope/q", &rep, &c, &lc), PIO_ENOENT);
    assert_int_equal(pfs_mdb_rename(f->db, "/c", "/c/q", &rep, &c, &lc), PIO_ENOTDIR);
    assert_int_equal(pfs_mdb_rename(f->db, "/", "/q", &rep, &c, &lc), PIO_EBUSY);
    assert_int_equal(pfs_mdb_rename(f->db, "/y", "/", &rep, &c, &lc), PIO_EBUSY);
    assert_int_equal(pfs_mdb_lookup(f->db, "/c", &c, NULL), PIO_OK);
    assert_int_equal(pfs_mdb_lookup(f->db, "/y", &c, NULL), PIO_OK);
}

static void test_setsize_setattr(void **state)
{
    struct fx *f = *state;
    struct pfs_attr a, b;
    struct pfs_layout l;
    assert_int_equal(set_servers(f->db, 2), PIO_OK);
    create_ok(f->db, "/f", 0, 0, 0, &a, &l);
    assert_int_equal(pfs_mdb_setsize(f->db, a.fid, 100, 0, &b), PIO_OK);
    assert_int_equal(b.size, 100);
    assert_true(b.mtime_ns >= a.mtime_ns);
    assert_int_equal(pfs_mdb_setsize(f->db, a.fid, 50, 0, &b), PIO_OK);
    assert_int_equal(b.size, 100); /* grows only */
    assert_int_equal(pfs_mdb_setsize(f->db, a.fid, 150, 0, &b), PIO_OK);
    assert_int_equal(b.size, 150);
    assert_int_equal(pfs_mdb_setsize(f->db, a.fid, 50, 1, &b), PIO_OK);
    assert_int_equal(b.size, 50); /* exact */
    assert_int_equal(pfs_mdb_lookup(f->db, "/f", &b, NULL), PIO_OK);
    assert_int_equal(b.size, 50);
    assert_int_equal(pfs_mdb_setsize(f->db, a.fid + 1000, 1, 0, &b), PIO_ENOENT);
    assert_int_equal(pfs_mdb_setsize(f->db, 0, 1, 0, &b), PIO_ENOENT);
    assert_int_equal(pfs_mdb_setsize(f->db, a.fid, UINT64_MAX, 1, &b), PIO_EINVAL);
    assert_int_equal(pfs_mdb_lookup(f->db, "/", &b, NULL), PIO_OK);
    assert_int_equal(pfs_mdb_setsize(f->db, b.fid, 1, 0, NULL), PIO_EISDIR);

    create_ok(f->db, "/g", 0, 0, 0, &a, &l);
    assert_int_equal(pfs_mdb_setsize(f->db, a.fid, 7, 1, NULL), PIO_OK);
    uint64_t files = 0, bytes = 0;
    assert_int_equal(pfs_mdb_statfs(f->db, &files, &bytes), PIO_OK);
    assert_int_equal(files, 2);
    assert_int_equal(bytes, 57);

    assert_int_equal(pfs_mdb_setattr(f->db, "/f", PFS_F_MODE, 0100600, 0, &b), PIO_OK);
    assert_int_equal(b.mode, 0600);
    int64_t t = 1234567890123456789LL;
    assert_int_equal(pfs_mdb_setattr(f->db, "/f", PFS_F_MTIME, 0777, t, &b), PIO_OK);
    assert_int_equal(b.mode, 0600); /* mode not asked for */
    assert_int_equal(b.mtime_ns, t);
    assert_int_equal(pfs_mdb_lookup(f->db, "/f", &b, NULL), PIO_OK);
    assert_int_equal(b.mtime_ns, t);
    assert_int_equal(b.mode, 0600);
    assert_int_equal(pfs_mdb_setattr(f->db, "/nope", PFS_F_MODE, 0600, 0, &b), PIO_ENOENT);
}

static void test_servers_list(void **state)
{
    struct fx *f = *state;
    const char *ab[] = {"a", "b"}, *abc[] = {"a", "b", "c"}, *axc[] = {"a", "x", "c"},
               *bac[] = {"b", "a", "c"}, *aa[] = {"a", "a"}, *empty[] = {""};
    struct pfs_attr a;
    struct pfs_layout l;
    assert_int_equal(pfs_mdb_nservers(f->db), 0);
    assert_int_equal(pfs_mdb_servers(f->db, NULL, 0), PIO_ECONFIG);
    assert_int_equal(pfs_mdb_create(f->db, "/f", 0644, 0, 0, 0, 0, 0, 0, &a, &l), PIO_ECONFIG);
    assert_int_equal(pfs_mdb_servers(f->db, aa, 2), PIO_ECONFIG);
    assert_int_equal(pfs_mdb_servers(f->db, empty, 1), PIO_EINVAL);
    assert_int_equal(pfs_mdb_nservers(f->db), 0);
    assert_int_equal(pfs_mdb_servers(f->db, ab, 2), PIO_OK);
    assert_int_equal(pfs_mdb_nservers(f->db), 2);
    assert_int_equal(pfs_mdb_servers(f->db, ab, 2), PIO_OK);
    assert_int_equal(pfs_mdb_servers(f->db, abc, 3), PIO_OK); /* appended */
    assert_int_equal(pfs_mdb_nservers(f->db), 3);
    assert_string_equal(pfs_mdb_server(f->db, 2), "c");
    assert_null(pfs_mdb_server(f->db, 3));
    assert_null(pfs_mdb_server(f->db, -1));
    assert_int_equal(pfs_mdb_servers(f->db, ab, 2), PIO_ECONFIG); /* shrunk */
    assert_int_equal(pfs_mdb_servers(f->db, axc, 3), PIO_ECONFIG);
    assert_int_equal(pfs_mdb_servers(f->db, bac, 3), PIO_ECONFIG);
    assert_true(strlen(pfs_mdb_errmsg(f->db)) > 0);
    assert_int_equal(pfs_mdb_nservers(f->db), 3);
    assert_int_equal(pfs_mdb_servers(f->db, NULL, 0), PIO_OK);
    assert_int_equal(pfs_mdb_nservers(f->db), 3);

    pfs_mdb_close(f->db);
    f->db = NULL;
    assert_int_equal(pfs_mdb_open(f->file, &f->db), PIO_OK);
    assert_int_equal(pfs_mdb_nservers(f->db), 3); /* loaded at open */
    assert_string_equal(pfs_mdb_server(f->db, 0), "a");
    assert_string_equal(pfs_mdb_server(f->db, 1), "b");
    assert_string_equal(pfs_mdb_server(f->db, 2), "c");
    assert_int_equal(pfs_mdb_servers(f->db, axc, 3), PIO_ECONFIG);
    assert_int_equal(pfs_mdb_servers(f->db, NULL, 0), PIO_OK);
    create_ok(f->db, "/f", 0, 3, 0, &a, &l);
}

static void test_persistence(void **state)
{
    struct fx *f = *state;
    struct pfs_attr a, b, c;
    struct pfs_layout l, l2;
    assert_int_equal(set_servers(f->db, 4), PIO_OK);
    assert_int_equal(pfs_mdb_mkdir(f->db, "/d", 0750, 0, 0, &a), PIO_OK);
    assert_int_equal(pfs_mdb_setstripe(f->db, "/d", 2, 128 << 10, NULL, NULL), PIO_OK);
    create_ok(f->db, "/d/f", 0, 0, 0, &a, &l); /* servers 0, 1 */
    assert_int_equal(l.servers[0], 0);
    assert_int_equal(pfs_mdb_setsize(f->db, a.fid, 4096, 0, NULL), PIO_OK);
    create_ok(f->db, "/gone", 0, 0, 0, &b, &l2); /* server 2 */
    assert_int_equal(pfs_mdb_unlink(f->db, "/gone", 0, NULL, NULL), PIO_OK);
    pfs_mdb_close(f->db);
    f->db = NULL;

    assert_int_equal(pfs_mdb_open(f->file, &f->db), PIO_OK);
    assert_int_equal(pfs_mdb_servers(f->db, NULL, 0), PIO_OK);
    assert_int_equal(pfs_mdb_lookup(f->db, "/d", &c, &l2), PIO_OK);
    assert_int_equal(c.mode, 0750);
    assert_int_equal(l2.count, 2);
    assert_int_equal(l2.stripe_size, 128 << 10);
    assert_int_equal(pfs_mdb_lookup(f->db, "/d/f", &c, &l2), PIO_OK);
    assert_int_equal(c.fid, a.fid);
    assert_int_equal(c.size, 4096);
    assert_memory_equal(&l, &l2, sizeof(l));
    assert_int_equal(pfs_mdb_lookup(f->db, "/gone", &c, NULL), PIO_ENOENT);
    /* the placement counter and the fids go on where they were */
    create_ok(f->db, "/next", 0, 1, 0, &c, &l2);
    assert_int_equal(l2.servers[0], 3);
    assert_true(c.fid > b.fid);
}

/* Owner and group are kept and found by fid too; a version 1 database
 * (before groups) opens with every group 0. */
static void test_owner_group(void **state)
{
    struct fx *f = *state;
    struct pfs_attr a, b;
    struct pfs_layout l;
    assert_int_equal(set_servers(f->db, 2), PIO_OK);
    assert_int_equal(pfs_mdb_mkdir(f->db, "/d", 0750, 7, 9, &a), PIO_OK);
    assert_int_equal(a.uid, 7);
    assert_int_equal(a.gid, 9);
    assert_int_equal(pfs_mdb_create(f->db, "/d/f", 0640, 1000, 100, PFS_F_EXCL, 0, 0, 0, &a, &l),
                     PIO_OK);
    assert_int_equal(pfs_mdb_stat(f->db, a.fid, &b), PIO_OK);
    assert_int_equal(b.uid, 1000);
    assert_int_equal(b.gid, 100);
    assert_int_equal(b.mode, 0640);
    assert_int_equal(b.type, PFS_T_FILE);
    assert_int_equal(pfs_mdb_setsize(f->db, a.fid, 10, 1, NULL), PIO_OK); /* put keeps them */
    assert_int_equal(pfs_mdb_lookup(f->db, "/d/f", &b, NULL), PIO_OK);
    assert_int_equal(b.gid, 100);
    assert_int_equal(pfs_mdb_unlink(f->db, "/d/f", 0, NULL, NULL), PIO_OK);
    assert_int_equal(pfs_mdb_stat(f->db, a.fid, &b), PIO_ENOENT);
    pfs_mdb_close(f->db);
    f->db = NULL;
    /* make it a version 1 database, as an older pfs-mds left it */
    sqlite3 *sql = NULL;
    assert_int_equal(sqlite3_open(f->file, &sql), SQLITE_OK);
    assert_int_equal(sqlite3_exec(sql,
                                  "ALTER TABLE nodes DROP COLUMN gid;"
                                  "UPDATE meta SET value = 1 WHERE key = 'schema';",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(sql);
    assert_int_equal(pfs_mdb_open(f->file, &f->db), PIO_OK);
    assert_int_equal(pfs_mdb_lookup(f->db, "/d", &b, NULL), PIO_OK);
    assert_int_equal(b.uid, 7);
    assert_int_equal(b.gid, 0);
    assert_int_equal(pfs_mdb_mkdir(f->db, "/e", 0755, 1, 2, &b), PIO_OK);
    assert_int_equal(b.gid, 2);
}

/* A child creates files and acknowledges each on a pipe once the call
 * returned; after 100 acknowledgements it is killed with SIGKILL, in the
 * middle of its stream of creates (it has many more to do, so the kill
 * lands mid-work however fast the disk is); every acknowledged file must
 * then be in the database. */
#define CRASH_CREATES 100000
#define CRASH_KILL_AT 100
static void test_crash(void **state)
{
    struct fx *f = *state;
    assert_int_equal(set_servers(f->db, 4), PIO_OK);
    pfs_mdb_close(f->db);
    f->db = NULL;

    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        struct pfs_mdb *db;
        if (pfs_mdb_open(f->file, &db) != PIO_OK)
            _exit(3);
        for (int i = 0; i < CRASH_CREATES; i++) {
            char p[32];
            struct pfs_attr a;
            struct pfs_layout l;
            snprintf(p, sizeof(p), "/f%06d", i);
            if (pfs_mdb_create(db, p, 0644, 0, 0, PFS_F_EXCL, 0, 0, 0, &a, &l) != PIO_OK)
                _exit(4);
            if (write(fds[1], &i, sizeof(i)) != (ssize_t)sizeof(i))
                _exit(5);
        }
        _exit(0);
    }
    close(fds[1]);
    int acked = -1, got = 0, in_order = 1, v;
    while (read(fds[0], &v, sizeof(v)) == (ssize_t)sizeof(v)) {
        in_order &= v == acked + 1;
        acked = v;
        if (++got == CRASH_KILL_AT)
            kill(pid, SIGKILL);
    }
    close(fds[0]);
    int status;
    if (got < CRASH_KILL_AT)
        kill(pid, SIGKILL); /* never leave the child running */
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(in_order);
    /* killed, not finished: else the test proves nothing */
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);
    assert_true(acked >= CRASH_KILL_AT - 1 && acked < CRASH_CREATES - 1);

    assert_int_equal(pfs_mdb_open(f->file, &f->db), PIO_OK);
    for (int i = 0; i <= acked; i++) {
        char p[32];
        struct pfs_attr a;
        snprintf(p, sizeof(p), "/f%06d", i);
        int rc = pfs_mdb_lookup(f->db, p, &a, NULL);
        if (rc != PIO_OK)
            fail_msg("acknowledged %s lost: %s", p, PIO_Errname(rc));
    }
    uint64_t files = 0;
    assert_int_equal(pfs_mdb_statfs(f->db, &files, NULL), PIO_OK);
    assert_true(files >= (uint64_t)acked + 1 && files <= (uint64_t)acked + 2);
    /* and the database takes new work */
    struct pfs_attr a;
    struct pfs_layout l;
    create_ok(f->db, "/after", 0, 0, 0, &a, &l);
}

static void test_open_errors(void **state)
{
    struct fx *f = *state;
    struct pfs_mdb *db = (struct pfs_mdb *)1;
    char p[256];
    snprintf(p, sizeof(p), "%s/no/such/dir/x.db", f->dir);
    assert_int_not_equal(pfs_mdb_open(p, &db), PIO_OK);
    assert_null(db);
    assert_true(strlen(pfs_mdb_open_error()) > 0);
    /* not a database */
    snprintf(p, sizeof(p), "%s/junk.db", f->dir);
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    for (int i = 0; i < 512; i++)
        fputs("this is not an sqlite database\n", fp);
    fclose(fp);
    assert_int_equal(pfs_mdb_open(p, &db), PIO_EIO);
    assert_null(db);
    assert_int_equal(pfs_mdb_open(NULL, &db), PIO_EINVAL);
}

#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
static const struct CMUnitTest tests[] = {
    T(test_policy),          T(test_bad_paths),    T(test_dir_default),  T(test_evenness),
    T(test_readdir),         T(test_create_rules), T(test_unlink_rules), T(test_rename_rules),
    T(test_setsize_setattr), T(test_servers_list), T(test_persistence),  T(test_crash),
    T(test_open_errors),     T(test_owner_group),
};
PIO_UNIT_MAIN(tests)
