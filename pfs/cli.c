/* cli.c - the pfs command: ls, stat, put, get, rm, mkdir, df, setstripe,
 * getstripe, stage-in, stage-out, qos (see docs/man/pfs.1.md).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * pfs joins the local piod as "pfs.HOST.PID" and mounts through libpfs.
 *
 * Copies (put, get, stage-in, stage-out) share one path, copy_out / copy_in:
 * the bytes go to a part file beside the final name (".NAME.pfs-part").
 * Every piece is checked end to end by libpfs (the server returns the
 * XXH3-64 of what it received or read); a local file written by get /
 * stage-in is also hashed as it is written and read back from disk at the
 * end. The copy is made durable; only then are the mode and mtime set and
 * the part file renamed into place. So a final name with the source's size and mtime
 * is a complete, verified copy: that is what a resumed stage skips.
 * Staging runs -j worker threads over the file list, in the class
 * "staging" unless --class says otherwise.
 *
 * Every command parses its own arguments and, while no file system is
 * mounted (fs == NULL), returns right after: main runs it once so before
 * joining piod, so that a usage error is reported as such (exit 2) even
 * where no piod runs, then once more mounted. ls, getstripe, df and qos
 * also answer in JSON (--json, json-c through common/cli_json.c).
 */
#include "cli.h"
#include "cli_json.h"
#include "pfs.h"
#include "pio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define CHUNK (8u << 20) /* bytes per pfs_pread / pfs_pwrite of a copy */

static pfs_fs *fs;
static const char *prog = "pfs";
static int verbose;
static int json; /* --json: ls, getstripe, df and qos answer in JSON */

/* the long option --json that ls, getstripe, df and qos take, as 'J' */
static const struct option json_opts[] = {{"json", no_argument, NULL, 'J'}, {NULL, 0, NULL, 0}};

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* err - report a failed pfs call on what; returns 1 (a failure count). */
static int err(const char *what, int rc)
{
    const char *t = pfs_errtext();
    if (t && *t)
        say("%s: %s", what, t);
    else
        say("%s: %s", what, PIO_Strerror(rc));
    return 1;
}

static int64_t ts_ns(struct timespec t)
{
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static int parse_size(const char *s, uint64_t *v)
{
    char *e;
    errno = 0;
    unsigned long long n = strtoull(s, &e, 10);
    if (errno || e == s)
        return -1;
    switch (*e) {
    case 'k':
    case 'K':
        n <<= 10;
        e++;
        break;
    case 'm':
    case 'M':
        n <<= 20;
        e++;
        break;
    case 'g':
    case 'G':
        n <<= 30;
        e++;
        break;
    default: break;
    }
    if (*e)
        return -1;
    *v = n;
    return 0;
}

/* join - a + "/" + b into out (cap); -1 if too long. */
static int join(char *out, size_t cap, const char *a, const char *b)
{
    size_t n = strlen(a);
    int k = snprintf(out, cap, "%s%s%s", a, n && a[n - 1] == '/' ? "" : "/", b);
    return k < 0 || (size_t)k >= cap ? -1 : 0;
}

/* ---- copies ----------------------------------------------------------------- */

struct copy_opts {
    uint32_t count;       /* put: stripe count wish (0 = policy) */
    uint64_t stripe_size; /* put: stripe size wish (0 = default) */
    int resume;           /* skip a target with the source's size and mtime */
};

/* copy_out - local file src to pfs path dst. Returns 0 copied, 2 skipped
 * (already there), 1 failed. */
static int copy_out(const char *src, const char *dst, const struct copy_opts *o, uint64_t *bytes)
{
    int fd = open(src, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        say("%s: %s", src, strerror(errno));
        if (fd >= 0)
            close(fd);
        return 1;
    }
    if (!S_ISREG(sb.st_mode)) {
        say("%s: not a regular file", src);
        close(fd);
        return 1;
    }
    pfs_stat ts;
    if (o->resume && pfs_stat_path(fs, dst, &ts) == PIO_OK && !ts.is_dir &&
        ts.size == (uint64_t)sb.st_size && ts.mtime_ns == ts_ns(sb.st_mtim)) {
        close(fd);
        return 2;
    }
    char part[1024], d[1024], b[1024];
    snprintf(d, sizeof(d), "%s", dst);
    snprintf(b, sizeof(b), "%s", dst);
    const char *dn = dirname(d), *bn = basename(b);
    if (snprintf(part, sizeof(part), "%s%s.%s.pfs-part", dn, strcmp(dn, "/") ? "/" : "", bn) >=
        (int)sizeof(part)) {
        say("%s: path too long", dst);
        close(fd);
        return 1;
    }
    pfs_stripe want = {.count = o->count, .stripe_size = o->stripe_size};
    pfs_file *f;
    int rc = pfs_create(fs, part, sb.st_mode & 07777, &want, (uint64_t)sb.st_size, &f);
    if (rc != PIO_OK) {
        close(fd);
        return err(dst, rc);
    }
    pfs_stat fst;
    pfs_fstat(f, &fst);
    uint8_t *buf = malloc(CHUNK);
    int bad = !buf;
    if (bad)
        say("%s: out of memory", src);
    uint64_t off = 0;
    while (!bad) {
        ssize_t n = pread(fd, buf, CHUNK, (off_t)off);
        if (n < 0) {
            say("%s: %s", src, strerror(errno));
            bad = 1;
            break;
        }
        if (n == 0)
            break;
        rc = pfs_pwrite(f, buf, (size_t)n, off); /* each piece checked end to end */
        if (rc != PIO_OK) {
            bad = err(dst, rc);
            break;
        }
        off += (uint64_t)n;
    }
    if (!bad && off != (uint64_t)sb.st_size) {
        say("%s: changed size while being copied", src);
        bad = 1;
    }
    if (!bad && (rc = pfs_fsync(f)) != PIO_OK)
        bad = err(dst, rc);
    free(buf);
    close(fd);
    rc = pfs_close(f);
    if (!bad && rc != PIO_OK)
        bad = err(dst, rc);
    if (!bad && (rc = pfs_set_mtime(fs, part, ts_ns(sb.st_mtim))) != PIO_OK)
        bad = err(dst, rc);
    if (!bad && (rc = pfs_rename(fs, part, dst)) != PIO_OK)
        bad = err(dst, rc);
    if (bad)
        return 1;
    *bytes += off;
    if (verbose)
        printf("%s -> %s (%" PRIu64 " bytes, %u stripes)\n", src, dst, off, fst.stripe.count);
    return 0;
}

/* copy_in - pfs path src to local file dst. Returns as copy_out. */
static int copy_in(const char *src, const char *dst, const struct copy_opts *o, uint64_t *bytes)
{
    pfs_file *f;
    int rc = pfs_open(fs, src, PFS_RDONLY, 0, &f);
    if (rc != PIO_OK)
        return err(src, rc);
    pfs_stat st;
    pfs_stat_path(fs, src, &st);
    struct stat lb;
    if (o->resume && stat(dst, &lb) == 0 && S_ISREG(lb.st_mode) &&
        (uint64_t)lb.st_size == st.size && ts_ns(lb.st_mtim) == st.mtime_ns) {
        pfs_close(f);
        return 2;
    }
    char part[4096], d[4096], b[4096];
    snprintf(d, sizeof(d), "%s", dst);
    snprintf(b, sizeof(b), "%s", dst);
    snprintf(part, sizeof(part), "%s/.%s.pfs-part", dirname(d), basename(b));
    int fd = open(part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        say("%s: %s", part, strerror(errno));
        pfs_close(f);
        return 1;
    }
    XXH3_state_t *whole = XXH3_createState();
    uint8_t *buf = malloc(CHUNK);
    int bad = !buf || !whole;
    if (bad)
        say("%s: out of memory", src);
    else
        XXH3_64bits_reset(whole);
    uint64_t off = 0;
    while (!bad) {
        size_t got;
        rc = pfs_pread(f, buf, CHUNK, off, &got);
        if (rc != PIO_OK) {
            bad = err(src, rc);
            break;
        }
        if (!got)
            break;
        XXH3_64bits_update(whole, buf, got); /* pieces were checked end to end */
        for (size_t w = 0; w < got;) {
            ssize_t n = pwrite(fd, buf + w, got - w, (off_t)(off + w));
            if (n < 0) {
                say("%s: %s", part, strerror(errno));
                bad = 1;
                break;
            }
            w += (size_t)n;
        }
        off += got;
    }
    if (!bad && off != st.size) {
        say("%s: read %" PRIu64 " bytes of %" PRIu64, src, off, st.size);
        bad = 1;
    }
    if (!bad && fsync(fd) != 0) {
        say("%s: %s", part, strerror(errno));
        bad = 1;
    }
    if (!bad) { /* read the local copy back from disk and compare */
        XXH3_state_t *back = XXH3_createState();
        XXH3_64bits_reset(back);
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        int rfd = open(part, O_RDONLY | O_CLOEXEC);
        ssize_t n = rfd < 0 ? -1 : 0;
        while (rfd >= 0 && (n = read(rfd, buf, CHUNK)) > 0)
            XXH3_64bits_update(back, buf, (size_t)n);
        if (n < 0 || XXH3_64bits_digest(back) != XXH3_64bits_digest(whole)) {
            say("%s: the local copy does not read back as written", part);
            bad = 1;
        }
        if (rfd >= 0)
            close(rfd);
        XXH3_freeState(back);
    }
    XXH3_freeState(whole);
    free(buf);
    pfs_close(f);
    struct timespec tv[2] = {
        {.tv_nsec = UTIME_OMIT},
        {.tv_sec = st.mtime_ns / 1000000000, .tv_nsec = st.mtime_ns % 1000000000}};
    if (!bad && (fchmod(fd, st.mode & 07777) != 0 || futimens(fd, tv) != 0)) {
        say("%s: %s", part, strerror(errno));
        bad = 1;
    }
    close(fd);
    if (!bad && rename(part, dst) != 0) {
        say("%s: %s", dst, strerror(errno));
        bad = 1;
    }
    if (bad) {
        unlink(part);
        return 1;
    }
    *bytes += off;
    if (verbose)
        printf("%s -> %s (%" PRIu64 " bytes)\n", src, dst, off);
    return 0;
}

/* ---- staging: a list of files copied by worker threads ---------------------------- */

struct job {
    char *src, *dst;
};

struct stage {
    struct job *v;
    size_t n, cap, next;
    int out; /* 1: local -> pfs */
    struct copy_opts o;
    pthread_mutex_t mtx;
    size_t copied, skipped, failed;
    uint64_t bytes;
};

static int stage_add(struct stage *s, const char *src, const char *dst)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        struct job *nv = realloc(s->v, s->cap * sizeof(*nv));
        if (!nv)
            return -1;
        s->v = nv;
    }
    s->v[s->n].src = strdup(src);
    s->v[s->n].dst = strdup(dst);
    if (!s->v[s->n].src || !s->v[s->n].dst)
        return -1;
    s->n++;
    return 0;
}

static void *stage_worker(void *arg)
{
    struct stage *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->mtx);
        size_t i = s->next < s->n ? s->next++ : SIZE_MAX;
        pthread_mutex_unlock(&s->mtx);
        if (i == SIZE_MAX)
            return NULL;
        uint64_t b = 0;
        int r = s->out ? copy_out(s->v[i].src, s->v[i].dst, &s->o, &b)
                       : copy_in(s->v[i].src, s->v[i].dst, &s->o, &b);
        pthread_mutex_lock(&s->mtx);
        if (r == 0)
            s->copied++;
        else if (r == 2)
            s->skipped++;
        else
            s->failed++;
        s->bytes += b;
        pthread_mutex_unlock(&s->mtx);
    }
}

/* walk_local - local tree src mirrored under pfs dst: directories made now,
 * files listed in s. */
static int walk_local(struct stage *s, const char *src, const char *dst)
{
    int rc = pfs_mkdir(fs, dst, 0755);
    if (rc != PIO_OK && rc != PIO_EEXIST)
        return err(dst, rc);
    DIR *d = opendir(src);
    if (!d) {
        say("%s: %s", src, strerror(errno));
        return 1;
    }
    int bad = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || strstr(e->d_name, ".pfs-part"))
            continue;
        char a[4096], b[1024];
        struct stat sb;
        if (join(a, sizeof(a), src, e->d_name) || join(b, sizeof(b), dst, e->d_name)) {
            say("%s/%s: path too long", src, e->d_name);
            bad = 1;
            continue;
        }
        if (lstat(a, &sb) != 0)
            continue;
        if (S_ISDIR(sb.st_mode))
            bad |= walk_local(s, a, b);
        else if (S_ISREG(sb.st_mode) && stage_add(s, a, b) != 0)
            bad = 1;
    }
    closedir(d);
    return bad;
}

/* walk_pfs - pfs tree src mirrored under local dst. */
static int walk_pfs(struct stage *s, const char *src, const char *dst)
{
    if (mkdir(dst, 0755) != 0 && errno != EEXIST) {
        say("%s: %s", dst, strerror(errno));
        return 1;
    }
    pfs_entry *v;
    size_t n;
    int rc = pfs_readdir(fs, src, &v, &n);
    if (rc != PIO_OK)
        return err(src, rc);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (strstr(v[i].name, ".pfs-part"))
            continue;
        char a[1024], b[4096];
        if (join(a, sizeof(a), src, v[i].name) || join(b, sizeof(b), dst, v[i].name)) {
            say("%s/%s: path too long", src, v[i].name);
            bad = 1;
            continue;
        }
        if (v[i].is_dir)
            bad |= walk_pfs(s, a, b);
        else if (stage_add(s, a, b) != 0)
            bad = 1;
    }
    free(v);
    return bad;
}

static int run_stage(int out, int argc, char **argv)
{
    struct stage s;
    memset(&s, 0, sizeof(s));
    pthread_mutex_init(&s.mtx, NULL);
    s.out = out;
    s.o.resume = 1;
    int jobs = 4, c;
    optind = 1;
    static const struct option lo[] = {{"jobs", required_argument, NULL, 'j'},
                                       {"no-resume", no_argument, NULL, 'R'},
                                       {"count", required_argument, NULL, 'c'},
                                       {NULL, 0, NULL, 0}};
    while ((c = getopt_long(argc, argv, "+j:Rc:", lo, NULL)) != -1) {
        if (c == 'j')
            jobs = atoi(optarg);
        else if (c == 'R')
            s.o.resume = 0;
        else if (c == 'c')
            s.o.count = (uint32_t)atoi(optarg);
        else
            optind = argc + 1;
    }
    if (argc - optind != 2 || jobs < 1 || jobs > 64) {
        say("usage: %s [-j JOBS] [--no-resume] %s", out ? "stage-out" : "stage-in",
            out ? "LOCALDIR PFSDIR" : "PFSDIR LOCALDIR");
        pthread_mutex_destroy(&s.mtx);
        return 2;
    }
    if (!fs) {
        pthread_mutex_destroy(&s.mtx);
        return 0;
    }
    double t0 = now_s();
    int bad = out ? walk_local(&s, argv[optind], argv[optind + 1])
                  : walk_pfs(&s, argv[optind], argv[optind + 1]);
    pthread_t th[64];
    int nth = 0;
    for (int i = 0; i < jobs && (size_t)i < s.n; i++)
        if (pthread_create(&th[nth], NULL, stage_worker, &s) == 0)
            nth++;
    if (!nth)
        stage_worker(&s);
    for (int i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    double dt = now_s() - t0;
    printf("%s: %zu files copied, %zu already staged, %zu failed; %" PRIu64
           " bytes in %.2f s (%.1f MB/s)\n",
           out ? "stage-out" : "stage-in", s.copied, s.skipped, s.failed, s.bytes, dt,
           dt > 0 ? s.bytes / dt / 1e6 : 0.0);
    for (size_t i = 0; i < s.n; i++) {
        free(s.v[i].src);
        free(s.v[i].dst);
    }
    free(s.v);
    return bad || s.failed ? 1 : 0;
}

/* ---- commands ------------------------------------------------------------------ */

static void fmt_time(int64_t ns, char *out, size_t cap)
{
    time_t t = (time_t)(ns / 1000000000);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(out, cap, "%Y-%m-%d %H:%M", &tm);
}

static const char *type_name(int is_dir)
{
    return is_dir ? "directory" : "file";
}

/* ls_json_entry - one entry of `ls --json`: its path (dir/name, or the
 * path given for a file) and attributes. */
static json_object *ls_json_entry(const char *dir, const pfs_entry *e)
{
    char p[4096];
    json_object *r = json_object_new_object();
    if (dir && !join(p, sizeof(p), dir, e->name))
        pio_cli_json_str(r, "path", p);
    else
        pio_cli_json_str(r, "path", e->name);
    const char *slash = strrchr(e->name, '/'); /* a file given by path: its last name */
    pio_cli_json_str(r, "name", dir || !slash || !slash[1] ? e->name : slash + 1);
    pio_cli_json_str(r, "type", type_name(e->is_dir));
    pio_cli_json_u64(r, "mode", e->mode & 07777);
    pio_cli_json_u64(r, "size", e->size);
    json_object_object_add(r, "mtime_ns", json_object_new_int64(e->mtime_ns));
    return r;
}

static int cmd_ls(int argc, char **argv)
{
    int lng = 0, bad = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+l", json_opts, NULL)) != -1)
        if (c == 'l')
            lng = 1;
        else if (c == 'J')
            json = 1;
        else {
            say("usage: ls [-l] [--json] [PATH...]");
            return 2;
        }
    if (!fs)
        return 0;
    json_object *arr = json ? json_object_new_array() : NULL;
    const char *def[] = {"/"};
    char **paths = optind < argc ? argv + optind : (char **)def;
    int np = optind < argc ? argc - optind : 1;
    for (int i = 0; i < np; i++) {
        pfs_stat st;
        int rc = pfs_stat_path(fs, paths[i], &st);
        if (rc != PIO_OK) {
            bad |= err(paths[i], rc);
            continue;
        }
        pfs_entry one, *v = &one;
        size_t n = 1;
        if (st.is_dir) {
            if ((rc = pfs_readdir(fs, paths[i], &v, &n)) != PIO_OK) {
                bad |= err(paths[i], rc);
                continue;
            }
        } else {
            memset(&one, 0, sizeof(one));
            snprintf(one.name, sizeof(one.name), "%s", paths[i]);
            one.size = st.size;
            one.mode = st.mode;
            one.mtime_ns = st.mtime_ns;
        }
        for (size_t k = 0; arr && k < n; k++)
            json_object_array_add(arr, ls_json_entry(st.is_dir ? paths[i] : NULL, &v[k]));
        if (np > 1 && st.is_dir && !arr)
            printf("%s:\n", paths[i]);
        for (size_t k = 0; !arr && k < n; k++) {
            if (!lng) {
                printf("%s%s\n", v[k].name, v[k].is_dir ? "/" : "");
                continue;
            }
            char tb[32];
            fmt_time(v[k].mtime_ns, tb, sizeof(tb));
            printf("%c%04o %12" PRIu64 " %s %s%s\n", v[k].is_dir ? 'd' : '-', v[k].mode & 07777,
                   v[k].size, tb, v[k].name, v[k].is_dir ? "/" : "");
        }
        if (v != &one)
            free(v);
    }
    if (arr)
        bad |= pio_cli_json_print(prog, arr);
    return bad;
}

static void print_stripe(const pfs_stripe *s, int is_dir)
{
    if (is_dir && !s->count) {
        printf("stripe_count: default (policy)\n");
        return;
    }
    printf("stripe_count: %u\nstripe_size: %" PRIu64 "\n", s->count, s->stripe_size);
    if (is_dir)
        return;
    printf("servers:");
    for (uint32_t i = 0; i < s->count; i++)
        printf(" %u", s->servers[i]);
    printf("\nserver_names:");
    for (uint32_t i = 0; i < s->count; i++)
        printf(" %s", pfs_server_name(fs, (int)s->servers[i]));
    printf("\n");
}

static int cmd_stat(int argc, char **argv)
{
    int bad = 0;
    if (argc < 2) {
        say("usage: stat PATH...");
        return 2;
    }
    if (!fs)
        return 0;
    for (int i = 1; i < argc; i++) {
        pfs_stat st;
        int rc = pfs_stat_path(fs, argv[i], &st);
        if (rc != PIO_OK) {
            bad |= err(argv[i], rc);
            continue;
        }
        char tb[32];
        fmt_time(st.mtime_ns, tb, sizeof(tb));
        printf("path: %s\ntype: %s\nfid: %" PRIu64 "\nmode: %04o\nowner: %u %u\nsize: %" PRIu64
               "\nmtime: %s\n",
               argv[i], st.is_dir ? "directory" : "file", st.fid, st.mode & 07777, st.uid, st.gid,
               st.size, tb);
        print_stripe(&st.stripe, st.is_dir);
    }
    return bad;
}

/* print_objects - the bytes every server holds of file path (-b). */
static int print_objects(const char *path)
{
    pfs_file *f;
    int rc = pfs_open(fs, path, PFS_RDONLY, 0, &f);
    if (rc != PIO_OK)
        return err(path, rc);
    int bad = 0;
    pfs_stat st;
    pfs_fstat(f, &st);
    printf("fid: %" PRIu64 "\n", st.fid);
    for (int s = 0; s < pfs_nservers(fs); s++) {
        uint64_t b;
        if ((rc = pfs_server_bytes(f, s, &b)) != PIO_OK)
            bad |= err(pfs_server_name(fs, s), rc);
        else
            printf("object server %d %s bytes %" PRIu64 "\n", s, pfs_server_name(fs, s), b);
    }
    pfs_close(f);
    return bad;
}

/* stripe_json - one path of `getstripe --json`: the fields of print_stripe
 * (stripe_count null: a directory without a default), and with -b the
 * bytes every server holds (print_objects). */
static int stripe_json(json_object *arr, const char *path, const pfs_stat *st, int objects)
{
    const pfs_stripe *s = &st->stripe;
    int bad = 0;
    json_object *r = json_object_new_object();
    pio_cli_json_str(r, "path", path);
    pio_cli_json_str(r, "type", type_name(st->is_dir));
    pio_cli_json_u64(r, "fid", st->fid);
    if (st->is_dir && !s->count) {
        json_object_object_add(r, "stripe_count", NULL);
    } else {
        pio_cli_json_u64(r, "stripe_count", s->count);
        pio_cli_json_u64(r, "stripe_size", s->stripe_size);
    }
    if (!st->is_dir) {
        json_object *ids = json_object_new_array(), *names = json_object_new_array();
        for (uint32_t i = 0; i < s->count; i++) {
            json_object_array_add(ids, json_object_new_uint64(s->servers[i]));
            json_object_array_add(names,
                                  json_object_new_string(pfs_server_name(fs, (int)s->servers[i])));
        }
        json_object_object_add(r, "servers", ids);
        json_object_object_add(r, "server_names", names);
    }
    if (objects && !st->is_dir) {
        pfs_file *f;
        int rc = pfs_open(fs, path, PFS_RDONLY, 0, &f);
        json_object *objs = json_object_new_array();
        for (int k = 0; rc == PIO_OK && k < pfs_nservers(fs); k++) {
            uint64_t b;
            int brc = pfs_server_bytes(f, k, &b);
            if (brc != PIO_OK) {
                bad |= err(pfs_server_name(fs, k), brc);
                continue;
            }
            json_object *o = json_object_new_object();
            pio_cli_json_u64(o, "server", (uint64_t)k);
            pio_cli_json_str(o, "name", pfs_server_name(fs, k));
            pio_cli_json_u64(o, "bytes", b);
            json_object_array_add(objs, o);
        }
        if (rc == PIO_OK)
            pfs_close(f);
        else
            bad |= err(path, rc);
        json_object_object_add(r, "objects", objs);
    }
    json_object_array_add(arr, r);
    return bad;
}

static int cmd_getstripe(int argc, char **argv)
{
    int bad = 0, objects = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+b", json_opts, NULL)) != -1)
        if (c == 'b')
            objects = 1;
        else if (c == 'J')
            json = 1;
        else
            optind = argc + 1; /* a bad option: the usage below */
    if (optind >= argc) {
        say("usage: getstripe [-b] [--json] PATH...");
        return 2;
    }
    if (!fs)
        return 0;
    json_object *arr = json ? json_object_new_array() : NULL;
    for (int i = optind; i < argc; i++) {
        pfs_stat st;
        int rc = pfs_stat_path(fs, argv[i], &st);
        if (rc != PIO_OK) {
            bad |= err(argv[i], rc);
            continue;
        }
        if (arr) {
            bad |= stripe_json(arr, argv[i], &st, objects);
            continue;
        }
        if (argc - optind > 1)
            printf("%s\n", argv[i]);
        print_stripe(&st.stripe, st.is_dir);
        if (objects && !st.is_dir)
            bad |= print_objects(argv[i]);
    }
    if (arr)
        bad |= pio_cli_json_print(prog, arr);
    return bad;
}

static int cmd_setstripe(int argc, char **argv)
{
    uint64_t count = 0, size = 0;
    int c, have = 0, all = 0;
    optind = 1;
    while ((c = getopt(argc, argv, "+c:S:d")) != -1) {
        if (c == 'c' && !strcmp(optarg, "-1"))
            have = 1, all = 1; /* every I/O server (lfs setstripe -c -1) */
        else if (c == 'c' && parse_size(optarg, &count) == 0)
            have = 1, all = 0;
        else if (c == 'S' && parse_size(optarg, &size) == 0)
            have = 1;
        else if (c == 'd')
            have = 1, count = 0, size = 0; /* remove a directory's default */
        else {
            say("setstripe: bad option or value");
            return 2;
        }
    }
    if (!have || optind != argc - 1) {
        say("usage: setstripe {-c COUNT|-1 [-S SIZE] | -d} PATH");
        return 2;
    }
    if (!fs)
        return 0;
    if (all) /* the servers there are now, up to what a layout holds */
        count =
            pfs_nservers(fs) < PFS_STRIPES_LIMIT ? (uint64_t)pfs_nservers(fs) : PFS_STRIPES_LIMIT;
    int rc = pfs_setstripe(fs, argv[optind], (uint32_t)count, size);
    return rc == PIO_OK ? 0 : err(argv[optind], rc);
}

static int cmd_mkdir(int argc, char **argv)
{
    int parents = 0, bad = 0, c;
    optind = 1;
    while ((c = getopt(argc, argv, "+p")) != -1)
        if (c == 'p')
            parents = 1;
        else
            optind = argc + 1;
    if (optind >= argc) {
        say("usage: mkdir [-p] PATH...");
        return 2;
    }
    if (!fs)
        return 0;
    for (int i = optind; i < argc; i++) {
        if (parents) {
            char p[1024];
            snprintf(p, sizeof(p), "%s", argv[i]);
            for (char *s = p + 1; *s; s++)
                if (*s == '/') {
                    *s = '\0';
                    int rc = pfs_mkdir(fs, p, 0755);
                    if (rc != PIO_OK && rc != PIO_EEXIST)
                        break;
                    *s = '/';
                }
        }
        int rc = pfs_mkdir(fs, argv[i], 0755);
        if (rc != PIO_OK && !(parents && rc == PIO_EEXIST))
            bad |= err(argv[i], rc);
    }
    return bad;
}

static int rm_tree(const char *path)
{
    pfs_entry *v;
    size_t n;
    int rc = pfs_readdir(fs, path, &v, &n), bad = 0;
    if (rc != PIO_OK)
        return err(path, rc);
    for (size_t i = 0; i < n; i++) {
        char p[1024];
        if (join(p, sizeof(p), path, v[i].name))
            continue;
        if (v[i].is_dir)
            bad |= rm_tree(p);
        else if ((rc = pfs_unlink(fs, p)) != PIO_OK)
            bad |= err(p, rc);
    }
    free(v);
    if ((rc = pfs_rmdir(fs, path)) != PIO_OK)
        bad |= err(path, rc);
    return bad;
}

static int cmd_rm(int argc, char **argv)
{
    int rec = 0, bad = 0, c;
    optind = 1;
    while ((c = getopt(argc, argv, "+r")) != -1)
        if (c == 'r')
            rec = 1;
        else
            optind = argc + 1;
    if (optind >= argc) {
        say("usage: rm [-r] PATH...");
        return 2;
    }
    if (!fs)
        return 0;
    for (int i = optind; i < argc; i++) {
        pfs_stat st;
        int rc = pfs_stat_path(fs, argv[i], &st);
        if (rc == PIO_OK && st.is_dir)
            bad |= rec ? rm_tree(argv[i]) : err(argv[i], pfs_rmdir(fs, argv[i]));
        else if (rc != PIO_OK || (rc = pfs_unlink(fs, argv[i])) != PIO_OK)
            bad |= err(argv[i], rc);
    }
    return bad;
}

static int cmd_chmod(int argc, char **argv)
{
    char *end = NULL;
    unsigned long mode = argc >= 3 ? strtoul(argv[1], &end, 8) : 0;
    if (argc < 3 || !end || *end || mode > 07777) {
        say("usage: chmod MODE PATH... (MODE in octal, e.g. 640)");
        return 2;
    }
    if (!fs)
        return 0;
    int bad = 0;
    for (int i = 2; i < argc; i++) {
        int rc = pfs_chmod(fs, argv[i], (uint32_t)mode);
        if (rc != PIO_OK)
            bad |= err(argv[i], rc);
    }
    return bad;
}

static int cmd_mv(int argc, char **argv)
{
    if (argc != 3) {
        say("usage: mv FROM TO");
        return 2;
    }
    if (!fs)
        return 0;
    int rc = pfs_rename(fs, argv[1], argv[2]);
    return rc == PIO_OK ? 0 : err(argv[1], rc);
}

static int cmd_put_get(int put, int argc, char **argv)
{
    struct copy_opts o = {0};
    uint64_t v;
    int c;
    optind = 1;
    while ((c = getopt(argc, argv, "+c:S:r")) != -1) {
        if (c == 'c' && parse_size(optarg, &v) == 0)
            o.count = (uint32_t)v;
        else if (c == 'S' && parse_size(optarg, &v) == 0)
            o.stripe_size = v;
        else if (c == 'r')
            o.resume = 1;
        else
            optind = argc + 1;
    }
    if (argc - optind != 2) {
        say("usage: %s", put ? "put [-c COUNT] [-S SIZE] LOCAL PFSPATH" : "get PFSPATH LOCAL");
        return 2;
    }
    if (!fs)
        return 0;
    const char *src = argv[optind], *dst = argv[optind + 1];
    char full[4096], tmp[4096];
    /* into a directory: keep the source's name */
    snprintf(tmp, sizeof(tmp), "%s", src);
    const char *bn = basename(tmp);
    if (put) {
        pfs_stat st;
        if (pfs_stat_path(fs, dst, &st) == PIO_OK && st.is_dir && !join(full, 1024, dst, bn))
            dst = full;
    } else {
        struct stat sb;
        if (stat(dst, &sb) == 0 && S_ISDIR(sb.st_mode) && !join(full, sizeof(full), dst, bn))
            dst = full;
    }
    uint64_t bytes = 0;
    double t0 = now_s();
    int r = put ? copy_out(src, dst, &o, &bytes) : copy_in(src, dst, &o, &bytes);
    double dt = now_s() - t0;
    if (r == 0 && verbose)
        printf("%" PRIu64 " bytes in %.3f s\n", bytes, dt);
    return r == 2 ? 0 : r;
}

/* human_size - bytes as df -h writes them: powers of 1024 with K, M, G, T,
 * P, E; one decimal below 10, rounded up (df never shows less than there is);
 * under 1 KiB the plain number. */
static void human_size(uint64_t b, char *out, size_t cap)
{
    static const char units[] = "KMGTPE";
    if (b < 1024) {
        snprintf(out, cap, "%" PRIu64, b);
        return;
    }
    double v = (double)b;
    int u = -1;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    double tenths = (double)(uint64_t)(v * 10); /* round up, in tenths below 10 */
    if (v < 10) {
        if (tenths < v * 10)
            tenths += 1;
        if (tenths >= 100) /* 9.95 -> 10 */
            snprintf(out, cap, "10%c", units[u]);
        else
            snprintf(out, cap, "%.1f%c", tenths / 10, units[u]);
    } else {
        uint64_t w = (uint64_t)v;
        if ((double)w < v)
            w++;
        if (w >= 1024 && u < 5) /* 1023.5 -> 1.0 of the next unit */
            snprintf(out, cap, "1.0%c", units[u + 1]);
        else
            snprintf(out, cap, "%" PRIu64 "%c", w, units[u]);
    }
}

static int cmd_df(int argc, char **argv)
{
    int c, human = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+h", json_opts, NULL)) != -1)
        if (c == 'h')
            human = 1;
        else if (c == 'J')
            json = 1;
        else
            optind = argc + 1;
    if (optind != argc) {
        say("usage: df [-h] [--json]");
        return 2;
    }
    if (!fs)
        return 0;
    uint64_t tu = 0, ta = 0, to = 0;
    json_object *doc = json ? json_object_new_object() : NULL, *arr = NULL;
    if (doc)
        arr = json_object_new_array();
    else
        printf("%-4s %-24s %14s %14s %10s\n", "idx", "server", "used", "avail", "objects");
    int bad = 0;
    for (int i = 0; i < pfs_nservers(fs); i++) {
        uint64_t u, a, o;
        int rc = pfs_df(fs, i, &u, &a, &o);
        if (rc != PIO_OK) {
            bad |= err(pfs_server_name(fs, i), rc);
            continue;
        }
        tu += u, ta += a, to += o;
        if (arr) {
            json_object *r = json_object_new_object();
            pio_cli_json_u64(r, "index", (uint64_t)i);
            pio_cli_json_str(r, "server", pfs_server_name(fs, i));
            pio_cli_json_u64(r, "used", u);
            pio_cli_json_u64(r, "avail", a);
            pio_cli_json_u64(r, "objects", o);
            json_object_array_add(arr, r);
        } else if (human) {
            char hu[16], ha[16];
            human_size(u, hu, sizeof(hu));
            human_size(a, ha, sizeof(ha));
            printf("%-4d %-24s %14s %14s %10" PRIu64 "\n", i, pfs_server_name(fs, i), hu, ha, o);
        } else {
            printf("%-4d %-24s %14" PRIu64 " %14" PRIu64 " %10" PRIu64 "\n", i,
                   pfs_server_name(fs, i), u, a, o);
        }
    }
    if (doc) {
        json_object *t = json_object_new_object();
        pio_cli_json_u64(t, "used", tu);
        pio_cli_json_u64(t, "avail", ta);
        pio_cli_json_u64(t, "objects", to);
        json_object_object_add(doc, "servers", arr);
        json_object_object_add(doc, "total", t);
        return bad | pio_cli_json_print(prog, doc);
    }
    if (human) {
        char hu[16], ha[16];
        human_size(tu, hu, sizeof(hu));
        human_size(ta, ha, sizeof(ha));
        printf("%-4s %-24s %14s %14s %10" PRIu64 "\n", "", "total", hu, ha, to);
    } else {
        printf("%-4s %-24s %14" PRIu64 " %14" PRIu64 " %10" PRIu64 "\n", "", "total", tu, ta, to);
    }
    return bad;
}

static int cmd_qos(int argc, char **argv)
{
    int reset = 0, c, bad = 0;
    optind = 1;
    static const struct option lo[] = {
        {"reset", no_argument, NULL, 'r'}, {"json", no_argument, NULL, 'J'}, {NULL, 0, NULL, 0}};
    while ((c = getopt_long(argc, argv, "+r", lo, NULL)) != -1)
        if (c == 'r')
            reset = 1;
        else if (c == 'J')
            json = 1;
        else
            optind = argc + 1;
    if (optind + 1 < argc) {
        say("usage: qos [--reset] [--json] [SERVER]");
        return 2;
    }
    if (!fs)
        return 0;
    /* --json: [{"index", "server", "classes": [{"class": NAME, counter: N, ...}],
     *          "io": {counter: N, ...}}] */
    json_object *arr = json ? json_object_new_array() : NULL;
    for (int i = 0; i < pfs_nservers(fs); i++) {
        if (optind < argc && atoi(argv[optind]) != i &&
            strcmp(argv[optind], pfs_server_name(fs, i)))
            continue;
        char text[8192];
        int rc = pfs_qos(fs, i, reset, text, sizeof(text));
        if (rc != PIO_OK) {
            bad |= err(pfs_server_name(fs, i), rc);
            continue;
        }
        json_object *srv = NULL, *classes = NULL;
        if (arr) {
            srv = json_object_new_object();
            classes = json_object_new_array();
            pio_cli_json_u64(srv, "index", (uint64_t)i);
            pio_cli_json_str(srv, "server", pfs_server_name(fs, i));
            json_object_object_add(srv, "classes", classes);
            json_object_array_add(arr, srv);
        }
        char *save = NULL;
        for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
            if (!classes) {
                printf("server %d %s %s\n", i, pfs_server_name(fs, i), l);
                continue;
            }
            /* "class NAME key=value ...": a class, its name then its
             * counters; "WORD key=value ..." (the "io" line): srv[WORD] */
            char word[64] = "", name[128] = "";
            if (sscanf(l, "%63s %127s", word, name) < 1)
                continue;
            json_object *kv = pio_cli_json_kv(l), *cl = json_object_new_object();
            if (!strcmp(word, "class"))
                pio_cli_json_str(cl, "class", name);
            if (kv) {
                json_object_object_foreach(kv, key, val)
                    json_object_object_add(cl, key, json_object_get(val));
                json_object_put(kv);
            }
            if (!strcmp(word, "class"))
                json_object_array_add(classes, cl);
            else
                json_object_object_add(srv, word, cl);
        }
    }
    if (arr)
        bad |= pio_cli_json_print(prog, arr);
    return bad;
}

static void usage(FILE *o)
{
    fprintf(o, "usage: pfs [--mds APP] [--class CLASS] [-v] COMMAND [ARGS]\n"
               "  ls [-l] [PATH...]            list directories\n"
               "  stat PATH...                 attributes and layout\n"
               "  put [-c N] [-S SIZE] LOCAL PATH   copy a local file in (stripe policy)\n"
               "  get PATH LOCAL               copy a file out\n"
               "  mv FROM TO                   rename (a directory moves its tree)\n"
               "  chmod MODE PATH...           permission bits (octal; the owner's call)\n"
               "  rm [-r] PATH...              remove files (and trees)\n"
               "  mkdir [-p] PATH...           make directories\n"
               "  df [-h]                      space per I/O server (-h: K, M, G as df -h)\n"
               "  setstripe {-c N|-1 [-S SIZE] | -d} PATH   directory default or empty file\n"
               "                               layout (-c -1: over every I/O server)\n"
               "  getstripe [-b] PATH...       the layout (-b: bytes on every server)\n"
               "  stage-in [-j N] PFSDIR LOCALDIR    copy a tree to node-local storage\n"
               "  stage-out [-j N] LOCALDIR PFSDIR   copy results back\n"
               "  qos [--reset] [SERVER]       per-class queues, threads, latencies\n"
               "ls, getstripe, df and qos take --json (before or after the command).\n"
               "Other options: --json, --help, --version.\n"
               "Environment: PFS_MDS, PFS_CLASS, PIO_SOCKET.\n");
}

/* run_cmd - run command cmd (known) with its arguments; fs NULL: only
 * check them (returns 2 after a usage message, else 0). */
static int run_cmd(const char *cmd, int sub_argc, char **sub)
{
    int r;
    if (!strcmp(cmd, "ls"))
        r = cmd_ls(sub_argc, sub);
    else if (!strcmp(cmd, "stat"))
        r = cmd_stat(sub_argc, sub);
    else if (!strcmp(cmd, "put"))
        r = cmd_put_get(1, sub_argc, sub);
    else if (!strcmp(cmd, "get"))
        r = cmd_put_get(0, sub_argc, sub);
    else if (!strcmp(cmd, "mv"))
        r = cmd_mv(sub_argc, sub);
    else if (!strcmp(cmd, "chmod"))
        r = cmd_chmod(sub_argc, sub);
    else if (!strcmp(cmd, "rm"))
        r = cmd_rm(sub_argc, sub);
    else if (!strcmp(cmd, "mkdir"))
        r = cmd_mkdir(sub_argc, sub);
    else if (!strcmp(cmd, "df"))
        r = cmd_df(sub_argc, sub);
    else if (!strcmp(cmd, "setstripe"))
        r = cmd_setstripe(sub_argc, sub);
    else if (!strcmp(cmd, "getstripe"))
        r = cmd_getstripe(sub_argc, sub);
    else if (!strcmp(cmd, "qos"))
        r = cmd_qos(sub_argc, sub);
    else
        r = run_stage(!strcmp(cmd, "stage-out"), sub_argc, sub);
    return r;
}

int main(int argc, char **argv)
{
    const char *mds = NULL, *cls = NULL;
    static const struct option lo[] = {{"mds", required_argument, NULL, 'm'},
                                       {"class", required_argument, NULL, 'C'},
                                       {"verbose", no_argument, NULL, 'v'},
                                       {"help", no_argument, NULL, 'h'},
                                       {"json", no_argument, NULL, 'J'},
                                       {"version", no_argument, NULL, 'V'},
                                       {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "+m:C:vh", lo, NULL)) != -1) {
        switch (c) {
        case 'm': mds = optarg; break;
        case 'C': cls = optarg; break;
        case 'v': verbose = 1; break;
        case 'J': json = 1; break;
        case 'V': return pio_cli_version(prog);
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[optind];
    static const char *const known[] = {"ls",        "stat",     "put",       "get", "mv",
                                        "chmod",     "rm",       "mkdir",     "df",  "setstripe",
                                        "getstripe", "stage-in", "stage-out", "qos"};
    int ok = 0;
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        ok |= strcmp(cmd, known[i]) == 0;
    if (!ok) {
        say("unknown command '%s'", cmd);
        usage(stderr);
        return 2;
    }
    int sub_argc = argc - optind;
    char **sub = argv + optind;
    int r = run_cmd(cmd, sub_argc, sub); /* not mounted: the arguments alone */
    if (r != 0)
        return r;
    int stage = !strncmp(cmd, "stage-", 6);
    if (stage && !cls && !getenv("PFS_CLASS"))
        cls = "staging";
    char host[64], app[PIO_NAME_MAX];
    gethostname(host, sizeof(host));
    host[sizeof(host) - 1] = '\0';
    snprintf(app, sizeof(app), "pfs.%.32s.%d", host, (int)getpid());
    int rc = PIO_Init(app, 0, 1);
    if (rc != PIO_OK) {
        say("PIO_Init: %s", PIO_Strerror(rc));
        return 1;
    }
    rc = pfs_mount(mds, cls, &fs);
    if (rc != PIO_OK) {
        err("mount", rc);
        PIO_Exit();
        return 1;
    }
    r = run_cmd(cmd, sub_argc, sub);
    pfs_umount(fs);
    PIO_Exit();
    return r;
}
