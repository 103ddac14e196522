/* pio-files.c - the file service: a PIO application serving one export root.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * piod starts it (a child process, restarted if it dies) when its config has
 * `export = DIR`; it joins that piod as "pio.files.HOST" and answers pcp
 * (protocol in pcp_proto.h). One thread takes requests; each session (one
 * file, directory or listing) runs in its own thread.
 *
 * Confinement: every path is opened beneath the export root with openat2()
 * and RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, so "..", absolute paths and
 * symlinks that lead out are refused by the kernel, whatever the race; an
 * absolute path is accepted only when it names something under the root.
 * Writes: a file is written to ".NAME.pcp-part" beside its final name, and
 * renamed into place only after its size and XXH3-64 matched what pcp sent,
 * with the data and the directory synced; then mode and mtime are set. A
 * copy that stops half way leaves only the part file, which `--resume` uses.
 * A part file is owned by one session at a time: an exclusive flock(2) on
 * its open file (part_lock), held until it is renamed or closed. A second
 * copy (or merged output) to the same destination is refused with EBUSY,
 * naming the holder, and never writes into it; so the checksum of the
 * buffers a session pwrites is the checksum of the bytes at their offsets.
 * Locks: merged_mtx (merged output), then part_mtx (the holders' names).
 *
 * Identity: each session acts as the user who asked. Its thread takes that
 * user's filesystem uid, gid and groups (setfsuid, setfsgid and the raw
 * setgroups syscall: all per thread), so the kernel checks every open,
 * create, rename and unlink against the export's own permissions, and new
 * files belong to the caller. Who asked is what the piods stamped on the
 * request (PIO_Status: uid, gid, system, user name), never what it says: a
 * caller of our own system is its uid; a caller of an admitted peer system
 * is the local user of the same name, or the one --map names. No local
 * user: refused (EACCES). Without root (CAP_SETUID) the service acts only
 * for its own uid and refuses the others.
 */
#include "cli.h"
#include "files_h5.h"
#include "orphan.h"
#include "wire/pcp_proto.h"
#include "err.h"
#include "memtrim.h"
#include "pio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define BLOCK_MAX     (64u << 20)
#define WINDOW        4 /* data messages received at once */
#define HASH_BUF      (4u << 20)
#define STEP_MS       120000 /* a pcp silent this long in a session is given up */
#define ACK_S         0.1    /* PCP_F_ACK: bytes written are acknowledged this often at most */
#define RESUME_WAIT_S 30.0   /* --resume: the part file's holder may take this long to end */

static const char *root_path;
static int root_fd = -1;
static const char *app;
static char my_system[PIO_NAME_MAX]; /* requests of our own system carry local uids */

/* --map FILE: "SYSTEM USER = LOCALUSER" lines (SYSTEM or USER may be '*') */
#define MAP_MAX 256
static struct map_line {
    char system[PIO_NAME_MAX], user[PIO_NAME_MAX], local[PIO_NAME_MAX];
} map[MAP_MAX];
static int nmap;

#define CRED_GROUPS 64
struct cred { /* whom a session acts as */
    uid_t uid;
    gid_t gid;
    int ngroups;
    gid_t groups[CRED_GROUPS];
};

/* Seconds on CLOCK_MONOTONIC: every timeout and grace here runs on it, so
 * a wall clock stepped by hand or by NTP moves none of them. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct session {
    int partner, proc; /* the client: application handle and process */
    struct cred cred;  /* the user it acts as (caller_cred) */
    struct pcp_msg req;
};

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "pio-files: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static int send_msg(const struct session *s, uint32_t session, struct pcp_msg *m)
{
    uint8_t buf[PCP_MSG_MAX];
    m->session = session;
    size_t n = pcp_msg_encode(m, buf);
    return PIO_Send(s->partner, s->proc, PCP_TAG_CTL + (int)session, PIO_DYNAMIC, buf, PIO_BYTE, n,
                    PIO_BLOCKING);
}

static int send_err(const struct session *s, uint32_t session, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int send_err(const struct session *s, uint32_t session, int err, const char *fmt, ...)
{
    struct pcp_msg m;
    memset(&m, 0, sizeof(m));
    m.op = PCP_ERR;
    m.err = err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m.text, sizeof(m.text), fmt, ap);
    va_end(ap);
    logf_("session %u: %s", session, m.text);
    return send_msg(s, session, &m);
}

/* Wait for the next step of a session; 0 or -1 (pcp gone, timed out, bad). */
static int recv_step(const struct session *s, uint32_t session, struct pcp_msg *m)
{
    uint8_t buf[PCP_MSG_MAX];
    PIO_Status st;
    int rc = PIO_Recv(s->partner, s->proc, PCP_TAG_CTL + (int)session, buf, PIO_BYTE, sizeof(buf),
                      STEP_MS, PIO_BLOCKING, &st);
    if (rc != PIO_OK || pcp_msg_decode(buf, st.bytes, m) != 0)
        return -1;
    return 0;
}

/* path -> relative to the root, in out: "." for the root itself. The root
 * is "", ".", "./", "/" and "~": an absolute path is taken beneath the root,
 * as in a chrooted sftp ("/in/x" is in/x there), unless it begins with the
 * root's own path (/srv/export/x is x), and "~/X" is X. "." components and
 * repeated slashes are dropped; a trailing slash is kept (do_put: "into
 * that directory"). -1 for a ".." component. */
static int relpath(const char *path, char *out, size_t cap)
{
    const char *p = path;
    if (p[0] == '~' && (p[1] == '\0' || p[1] == '/')) {
        p++;
    } else if (*p == '/') {
        size_t n = strlen(root_path);
        while (n > 1 && root_path[n - 1] == '/')
            n--;
        if (n > 1 && strncmp(p, root_path, n) == 0 && (p[n] == '/' || p[n] == '\0'))
            p += n;
    }
    if (!pcp_path_ok(*p ? p : "."))
        return -1;
    size_t o = 0;
    for (const char *c = p; *c;) {
        while (*c == '/')
            c++;
        size_t len = strcspn(c, "/");
        if (len == 0 || (len == 1 && c[0] == '.')) {
            c += len;
            continue;
        }
        if (o + len + 2 >= cap)
            return -1;
        if (o)
            out[o++] = '/';
        memcpy(out + o, c, len);
        o += len;
        c += len;
    }
    size_t plen = strlen(p);
    if (o == 0)
        out[o++] = '.';
    else if (plen && p[plen - 1] == '/')
        out[o++] = '/';
    out[o] = '\0';
    return 0;
}

static int open_beneath(const char *rel, int flags, mode_t mode)
{
    struct open_how how;
    memset(&how, 0, sizeof(how));
    how.flags = (uint64_t)(flags | O_CLOEXEC);
    how.mode = (flags & O_CREAT) ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    return (int)syscall(SYS_openat2, root_fd, rel, &how, sizeof(how));
}

/* Split rel into its directory (opened beneath the root) and last name. */
static int open_parent(const char *rel, char *base, size_t cap)
{
    char dir[PCP_PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", rel);
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        dir[--n] = '\0';
    char *slash = strrchr(dir, '/');
    const char *b = slash ? slash + 1 : dir;
    if (!*b || strcmp(b, ".") == 0 || strcmp(b, "..") == 0) {
        errno = EINVAL;
        return -1;
    }
    snprintf(base, cap, "%s", b);
    if (slash)
        *slash = '\0';
    return open_beneath(slash ? dir : ".", O_RDONLY | O_DIRECTORY, 0);
}

static const char *why(int err)
{
    return err == EXDEV ? "the path leaves the export root" : strerror(err);
}

/* ---- part files: one owner at a time ----
 * The owner holds flock(LOCK_EX) on its open part file and is listed here
 * (by inode), so that a refused session can say who holds it. */
struct part_owner {
    struct part_owner *next;
    dev_t dev;
    ino_t ino;
    char who[PCP_NAME_MAX + 16];
};

static pthread_mutex_t part_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct part_owner *part_owners;

/* Open (create) part file tmp in dfd and take it for this session: who
 * [in] names the session for a refused one ("pcp.h.123", "process 2 of
 * app"); wait_s [in]: how long to wait for a holder to let go (0: not at
 * all; never with a lock held). Returns the descriptor, or -1 with errno
 * (EBUSY: another session holds it; its name in holder [out]). The lock is
 * taken on the inode the name still leads to: a file opened just before its
 * owner renamed it into place (or removed it) is let go and the name opened
 * again, so a session never writes into a file already under its final name. */
static int part_lock(int dfd, const char *tmp, const char *who, char *holder, size_t cap,
                     double wait_s)
{
    double until = now_s() + wait_s;
    for (int tries = 0; tries < 8; tries++) {
        int fd = openat(dfd, tmp, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
            return -1;
        struct stat a, b;
        int locked;
        while ((locked = flock(fd, LOCK_EX | LOCK_NB)) != 0 && errno == EWOULDBLOCK &&
               now_s() < until) {
            struct timespec ts = {0, 100 * 1000000L};
            nanosleep(&ts, NULL);
        }
        if (locked != 0) {
            int e = errno == EWOULDBLOCK ? EBUSY : errno;
            snprintf(holder, cap, "another session");
            pthread_mutex_lock(&part_mtx);
            if (fstat(fd, &a) == 0)
                for (struct part_owner *o = part_owners; o; o = o->next)
                    if (o->dev == a.st_dev && o->ino == a.st_ino)
                        snprintf(holder, cap, "%s", o->who);
            pthread_mutex_unlock(&part_mtx);
            close(fd);
            errno = e;
            return -1;
        }
        if (fstat(fd, &a) != 0) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        if (fstatat(dfd, tmp, &b, AT_SYMLINK_NOFOLLOW) != 0 || a.st_dev != b.st_dev ||
            a.st_ino != b.st_ino) {
            close(fd); /* renamed into place or removed by its owner meanwhile */
            continue;
        }
        struct part_owner *o = calloc(1, sizeof(*o));
        if (!o) {
            close(fd);
            errno = ENOMEM;
            return -1;
        }
        o->dev = a.st_dev;
        o->ino = a.st_ino;
        snprintf(o->who, sizeof(o->who), "%s", who);
        pthread_mutex_lock(&part_mtx);
        o->next = part_owners;
        part_owners = o;
        pthread_mutex_unlock(&part_mtx);
        return fd;
    }
    errno = EBUSY;
    snprintf(holder, cap, "other sessions that keep renaming it");
    return -1;
}

/* Close a part file taken with part_lock (the lock goes with the close). */
static void part_unlock(int fd)
{
    struct stat a;
    if (fd < 0)
        return;
    if (fstat(fd, &a) == 0) {
        pthread_mutex_lock(&part_mtx);
        for (struct part_owner **pp = &part_owners; *pp; pp = &(*pp)->next)
            if ((*pp)->dev == a.st_dev && (*pp)->ino == a.st_ino) {
                struct part_owner *o = *pp;
                *pp = o->next;
                free(o);
                break;
            }
        pthread_mutex_unlock(&part_mtx);
    }
    close(fd);
}

/* Receives rq[from..to) (mod WINDOW) are still posted into the window's
 * buffers when a put stops early (a full disk, a dead sender): wait for them
 * (the sender's messages in flight complete them, its leaving fails them)
 * for up to ms in all. 1 when none is left, so the buffers may be freed; 0
 * when one still waits: its buffer must stay allocated, libpio writes there. */
static int drain_recvs(PIO_Request *rq, uint64_t from, uint64_t to, int ms)
{
    double end = now_s() + ms / 1e3;
    for (uint64_t i = from; i < to; i++) {
        int left = (int)((end - now_s()) * 1e3);
        if (PIO_Wait(&rq[i % WINDOW], left > 0 ? left : 0, NULL) == PIO_ETIMEDOUT)
            return 0;
    }
    return 1;
}

static void do_put(struct session *s)
{
    struct pcp_msg *q = &s->req, m;
    uint32_t sid = q->session;
    char rel[PCP_PATH_MAX], base[256], tmp[300];
    int dfd = -1, fd = -1;
    uint8_t *buf = NULL, *win[WINDOW] = {0};
    XXH3_state_t *hs = XXH3_createState();
    if (relpath(q->path, rel, sizeof(rel)) != 0) {
        send_err(s, sid, EXDEV, "%s: the path leaves the export root", q->path);
        goto out;
    }
    /* an existing directory (or a path ending in /) receives the file under its source name */
    struct stat sb;
    int tfd = open_beneath(rel, O_PATH, 0);
    if ((tfd >= 0 && fstat(tfd, &sb) == 0 && S_ISDIR(sb.st_mode)) || rel[strlen(rel) - 1] == '/') {
        size_t n = strcmp(rel, ".") == 0 ? 0 : strlen(rel); /* the root: NAME */
        snprintf(rel + n, sizeof(rel) - n, "%s%s", n == 0 || rel[n - 1] == '/' ? "" : "/", q->text);
    }
    if (tfd >= 0)
        close(tfd);
    if ((dfd = open_parent(rel, base, sizeof(base))) < 0) {
        int e = errno;
        send_err(s, sid, e, "%s: %s", q->path, why(e));
        goto out;
    }
    /* the caller must be allowed to overwrite what is there (this thread
     * acts as the caller: AT_EACCESS checks its filesystem ids), before a
     * part file is made beside it */
    if (faccessat(dfd, base, W_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW) != 0 && errno != ENOENT) {
        int e = errno;
        send_err(s, sid, e, "%s: %s; nothing was written", q->path, why(e));
        goto out;
    }
    snprintf(tmp, sizeof(tmp), ".%s.pcp-part", base);
    uint64_t have = 0;
    buf = malloc(HASH_BUF);
    if (!buf || !hs) {
        send_err(s, sid, ENOMEM, "out of memory");
        goto out;
    }
    char holder[PCP_NAME_MAX + 16];
    /* --resume: the session of the copy it resumes may still be ending (its
     * pcp killed: the session hears of it within seconds): wait for it */
    fd = part_lock(dfd, tmp, q->client, holder, sizeof(holder),
                   (q->flags & PCP_F_RESUME) ? RESUME_WAIT_S : 0);
    if (fd < 0) {
        int e = errno;
        if (e == EBUSY)
            send_err(s, sid, e,
                     "%s: busy: %s is copying to it (part file %s); nothing was written, "
                     "copy again when it is done",
                     q->path, holder, tmp);
        else
            send_err(s, sid, e, "%s: %s", q->path, why(e));
        goto out;
    }
    memset(&m, 0, sizeof(m));
    m.op = PCP_OK;
    m.flags = q->flags & PCP_F_RAMP; /* we post the receives by pcp_plan's ramps */
    if ((q->flags & PCP_F_RESUME) && fstat(fd, &sb) == 0) {
        have = (uint64_t)sb.st_size < q->size ? (uint64_t)sb.st_size : q->size;
        if (pcp_hash_prefix(fd, have, hs, buf, HASH_BUF) != 0)
            have = 0;
        m.off = have;
        m.hash = XXH3_64bits_digest(hs);
    }
    if (send_msg(s, sid, &m) != PIO_OK || recv_step(s, sid, &m) != 0 || m.op != PCP_GO)
        goto out; /* pcp went away: the part file stays for --resume */
    uint64_t off = m.off <= have ? m.off : 0;
    if (off != have && pcp_hash_prefix(fd, off, hs, buf, HASH_BUF) != 0)
        off = 0;
    if (off == 0)
        XXH3_64bits_reset(hs);
    if (ftruncate(fd, (off_t)off) != 0) {
        int e = errno;
        send_err(s, sid, e, "%s: %s", q->path, why(e));
        goto out;
    }
    uint64_t block = q->block && q->block <= BLOCK_MAX ? q->block : (8u << 20);
    /* WINDOW receives posted at once: each claims its message at the piod,
     * so messages on every channel land at full speed (they complete in
     * order: one source, one tag) */
    for (int i = 0; i < WINDOW; i++)
        if (!(win[i] = malloc(block))) {
            send_err(s, sid, ENOMEM, "out of memory");
            goto out;
        }
    PIO_Request rq[WINDOW];
    uint64_t posted = off, k = 0, kdone = 0;
    struct pcp_plan plan; /* the sizes pcp sends */
    pcp_plan_init(&plan, off, q->size, block, q->type, (q->flags & PCP_F_RAMP) != 0);
    double acked = now_s(); /* PCP_F_ACK: when the last ACK went */
    while (off < q->size) {
        while (posted < q->size && k - kdone < WINDOW) {
            uint64_t want = pcp_plan_next(&plan);
            if (PIO_Irecv(s->partner, s->proc, PCP_TAG_DATA + (int)sid, win[k % WINDOW], PIO_BYTE,
                          (size_t)want, PIO_BLOCKING, &rq[k % WINDOW]) != PIO_OK)
                goto stop;
            posted += want;
            k++;
        }
        PIO_Status st;
        uint8_t *b = win[kdone % WINDOW];
        int rc = PIO_Wait(&rq[kdone % WINDOW], STEP_MS, &st);
        if (rc != PIO_OK) {
            logf_("session %u: %s: data stopped at %llu of %llu bytes (%s); part file kept", sid,
                  q->path, (unsigned long long)off, (unsigned long long)q->size, PIO_Strerror(rc));
            if (rc != PIO_ETIMEDOUT) /* that receive is over (and freed) */
                kdone++;
            goto stop;
        }
        kdone++;
        XXH3_64bits_update(hs, b, st.bytes);
        if (pcp_write(fd, b, st.bytes, off, (q->flags & PCP_F_SPARSE) != 0) != 0) {
            int e = errno;
            if (e == ENOSPC || e == EDQUOT)
                unlinkat(dfd, tmp, 0); /* nothing to resume into a full disk */
            /* closed before pcp hears of it: the receives still posted
             * (drained below) hold buffers, not the file or its folder */
            part_unlock(fd);
            close(dfd);
            fd = dfd = -1;
            send_err(s, sid, e, "%s: %s", q->path, why(e));
            goto stop;
        }
        off += st.bytes;
        if ((q->flags & PCP_F_ACK) && off < q->size && now_s() - acked >= ACK_S) {
            memset(&m, 0, sizeof(m)); /* written at their offsets: pcp's progress counts them */
            m.op = PCP_ACK;
            m.off = off;
            if (send_msg(s, sid, &m) != PIO_OK)
                goto stop;
            acked = now_s();
        }
    }
    if (recv_step(s, sid, &m) != 0 || m.op != PCP_END)
        goto out;
    uint64_t h = XXH3_64bits_digest(hs);
    if (!(q->flags & PCP_F_NOVERIFY) && h != m.hash) {
        unlinkat(dfd, tmp, 0);
        send_err(s, sid, EIO, "%s: checksum mismatch (sent %016llx, written %016llx): nothing kept",
                 q->path, (unsigned long long)m.hash, (unsigned long long)h);
        goto out;
    }
    struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT},
                             {.tv_sec = (time_t)q->mtime_sec, .tv_nsec = q->mtime_nsec}};
    if (ftruncate(fd, (off_t)q->size) != 0 || fsync(fd) != 0 || /* size: a hole at the end */
        fchmod(fd, q->mode & 07777) != 0 || futimens(fd, ts) != 0 ||
        renameat(dfd, tmp, dfd, base) != 0 || fsync(dfd) != 0) {
        int e = errno;
        send_err(s, sid, e, "%s: %s", q->path, why(e));
        goto out;
    }
    memset(&m, 0, sizeof(m));
    m.op = PCP_OK;
    m.size = q->size;
    m.hash = h;
    send_msg(s, sid, &m);
    goto out;
stop: /* receives still posted into win[]: freeing it under them was a crash */
    if (!drain_recvs(rq, kdone, k, 10000)) {
        logf_("session %u: %s: a receive still waits after 10 s: its %llu-byte buffers are "
              "left allocated",
              sid, q->path, (unsigned long long)(WINDOW * block));
        memset(win, 0, sizeof(win));
    }
out:
    part_unlock(fd);
    if (dfd >= 0)
        close(dfd);
    for (int i = 0; i < WINDOW; i++)
        free(win[i]);
    free(buf);
    XXH3_freeState(hs);
}

/* The regular file a session reads (GET, ROPEN), opened beneath the root;
 * -1 after telling the client why (dir_hint follows "is a directory"). */
static int open_source(const struct session *s, uint32_t sid, struct stat *sb, const char *dir_hint)
{
    const struct pcp_msg *q = &s->req;
    char rel[PCP_PATH_MAX];
    if (relpath(q->path, rel, sizeof(rel)) != 0) {
        send_err(s, sid, EXDEV, "%s: the path leaves the export root", q->path);
        return -1;
    }
    int fd = open_beneath(rel, O_RDONLY | O_NOFOLLOW, 0);
    if (fd < 0 || fstat(fd, sb) != 0) {
        int e = errno == ELOOP ? EXDEV : errno;
        if (fd >= 0)
            close(fd);
        send_err(s, sid, e, "%s: %s", q->path, why(e));
        return -1;
    }
    if (!S_ISREG(sb->st_mode)) {
        send_err(s, sid, S_ISDIR(sb->st_mode) ? EISDIR : EINVAL, "%s: %s%s", q->path,
                 S_ISDIR(sb->st_mode) ? "is a directory" : "not a regular file",
                 S_ISDIR(sb->st_mode) ? dir_hint : "");
        close(fd);
        return -1;
    }
    return fd;
}

static void do_get(struct session *s)
{
    struct pcp_msg *q = &s->req, m;
    uint32_t sid = q->session;
    int fd = -1;
    uint8_t *buf[2] = {NULL, NULL};
    PIO_Request rq[2] = {NULL, NULL}; /* NULL when none is outstanding */
    XXH3_state_t *hs = XXH3_createState();
    struct stat sb;
    if ((fd = open_source(s, sid, &sb, " (use -r)")) < 0)
        goto out;
    uint64_t block = q->block && q->block <= BLOCK_MAX ? q->block : (8u << 20);
    buf[0] = malloc(block);
    buf[1] = malloc(block);
    if (!buf[0] || !buf[1] || !hs) {
        send_err(s, sid, ENOMEM, "out of memory");
        goto out;
    }
    memset(&m, 0, sizeof(m));
    m.op = PCP_OK;
    m.flags =
        (pcp_sparse(&sb) ? PCP_F_SPARSE : 0) | (q->flags & PCP_F_RAMP); /* we send by the plan */
    m.size = (uint64_t)sb.st_size;
    m.mode = (uint32_t)sb.st_mode & 07777;
    m.mtime_sec = (int64_t)sb.st_mtim.tv_sec;
    m.mtime_nsec = (uint32_t)sb.st_mtim.tv_nsec;
    if (send_msg(s, sid, &m) != PIO_OK || recv_step(s, sid, &m) != 0 || m.op != PCP_GO)
        goto out;
    uint64_t size = (uint64_t)sb.st_size, off = 0;
    XXH3_64bits_reset(hs);
    if (m.off > 0 && m.off <= size && pcp_hash_prefix(fd, m.off, hs, buf[0], block) == 0 &&
        XXH3_64bits_digest(hs) == m.hash)
        off = m.off;
    else
        XXH3_64bits_reset(hs);
    memset(&m, 0, sizeof(m));
    m.op = PCP_OK;
    m.off = off;
    if (send_msg(s, sid, &m) != PIO_OK)
        goto out;
    int busy[2] = {0, 0}, k = 0;
    struct pcp_plan plan; /* the sizes pcp posts its receives for */
    pcp_plan_init(&plan, off, size, block, q->type, (q->flags & PCP_F_RAMP) != 0);
    while (off < size) {
        if (busy[k] && PIO_Wait(&rq[k], STEP_MS, NULL) != PIO_OK)
            goto out;
        busy[k] = 0;
        size_t want = (size_t)pcp_plan_next(&plan);
        ssize_t r = 0;
        for (size_t got = 0; got < want; got += (size_t)r)
            if ((r = pread(fd, buf[k] + got, want - got, (off_t)(off + got))) <= 0)
                break;
        if (r <= 0) {
            int e = r < 0 ? errno : EIO;
            send_err(s, sid, e, "%s: read: %s", q->path,
                     r < 0 ? strerror(e) : "the file shrank while being sent");
            goto out;
        }
        r = (ssize_t)want;
        XXH3_64bits_update(hs, buf[k], (size_t)r);
        if (PIO_Isend(s->partner, s->proc, PCP_TAG_DATA + (int)sid, PIO_DYNAMIC, buf[k], PIO_BYTE,
                      (size_t)r, PIO_BLOCKING, &rq[k]) != PIO_OK)
            goto out;
        busy[k] = 1;
        off += (uint64_t)r;
        k ^= 1;
    }
    for (int i = 0; i < 2; i++)
        if (busy[i] && PIO_Wait(&rq[i], STEP_MS, NULL) == PIO_OK)
            busy[i] = 0;
    memset(&m, 0, sizeof(m));
    m.op = PCP_END;
    m.size = size;
    m.hash = XXH3_64bits_digest(hs);
    send_msg(s, sid, &m);
out:
    for (int i = 0; i < 2; i++) {
        pcp_orphan(&rq[i], &buf[i]); /* a send still outstanding keeps its buffer */
        free(buf[i]);
    }
    if (fd >= 0)
        close(fd);
    XXH3_freeState(hs);
}

static void do_mkdir(struct session *s)
{
    struct pcp_msg *q = &s->req, m;
    char rel[PCP_PATH_MAX], base[256];
    int dfd = -1;
    if (relpath(q->path, rel, sizeof(rel)) != 0) {
        send_err(s, q->session, EXDEV, "%s: the path leaves the export root", q->path);
        return;
    }
    if (strcmp(rel, ".") == 0 || strcmp(rel, "./") == 0) { /* the root: it exists */
        memset(&m, 0, sizeof(m));
        m.op = PCP_OK;
        send_msg(s, q->session, &m);
        return;
    }
    if ((dfd = open_parent(rel, base, sizeof(base))) < 0 ||
        (mkdirat(dfd, base, (q->mode & 07777) | 0700) != 0 && errno != EEXIST)) {
        int e = errno;
        send_err(s, q->session, e, "%s: %s", q->path, why(e));
    } else {
        memset(&m, 0, sizeof(m));
        m.op = PCP_OK;
        send_msg(s, q->session, &m);
    }
    if (dfd >= 0)
        close(dfd);
}

/* Entries under dir (an open directory), depth first, paths prefixed. */
struct list {
    struct pcp_msg *e;
    size_t n, cap;
};

/* others: list symlinks and specials too (PCP_T_OTHER), else leave them out */
static int list_dir(int dfd, const char *prefix, struct list *l, int depth, int others)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return -1;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
            strstr(de->d_name, ".pcp-part"))
            continue;
        struct stat sb;
        if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        int other = !(S_ISREG(sb.st_mode) || S_ISDIR(sb.st_mode));
        if (other && !others)
            continue; /* symlinks and specials are not copied */
        if (l->n == l->cap) {
            size_t cap = l->cap ? 2 * l->cap : 64;
            struct pcp_msg *e = realloc(l->e, cap * sizeof(*e));
            if (!e)
                break;
            l->e = e;
            l->cap = cap;
        }
        struct pcp_msg *m = &l->e[l->n++];
        memset(m, 0, sizeof(*m));
        m->op = PCP_ENTRY;
        m->type = other ? PCP_T_OTHER : S_ISDIR(sb.st_mode) ? PCP_T_DIR : PCP_T_FILE;
        m->size = other ? 0 : (uint64_t)sb.st_size;
        m->mode = (uint32_t)sb.st_mode & (other ? 0177777u : 07777u);
        m->mtime_sec = (int64_t)sb.st_mtim.tv_sec;
        m->mtime_nsec = (uint32_t)sb.st_mtim.tv_nsec;
        snprintf(m->path, sizeof(m->path), "%s%s%s", prefix, *prefix ? "/" : "", de->d_name);
        if (S_ISDIR(sb.st_mode) && depth < 64) {
            int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            char p2[PCP_PATH_MAX];
            snprintf(p2, sizeof(p2), "%s", m->path);
            if (sub >= 0)
                list_dir(sub, p2, l, depth + 1, others);
        }
    }
    closedir(d);
    return 0;
}

static void do_list(struct session *s)
{
    struct pcp_msg *q = &s->req, m;
    char rel[PCP_PATH_MAX];
    struct list l = {0};
    if (relpath(q->path, rel, sizeof(rel)) != 0) {
        send_err(s, q->session, EXDEV, "%s: the path leaves the export root", q->path);
        return;
    }
    int dfd = open_beneath(rel, O_RDONLY | O_DIRECTORY, 0);
    if (dfd < 0 || list_dir(dfd, "", &l, 0, (q->flags & PCP_F_OTHERS) != 0) != 0) {
        int e = errno == ELOOP ? EXDEV : errno;
        send_err(s, q->session, e, "%s: %s", q->path, why(e));
        free(l.e);
        return;
    }
    memset(&m, 0, sizeof(m));
    m.op = PCP_OK;
    m.size = l.n;
    if (send_msg(s, q->session, &m) == PIO_OK)
        for (size_t i = 0; i < l.n; i++)
            if (send_msg(s, q->session, &l.e[i]) != PIO_OK)
                break;
    free(l.e);
}

/* ---- remote merged output: one file, many writing processes ---- */

struct merged {
    struct merged *next;
    char app[PCP_NAME_MAX], path[PCP_PATH_MAX];
    char base[256], tmp[300];
    int dfd, fd;
    int is_h5;
    struct fh5 *h5;                        /* HDF5 mode: the dataset (files_h5.c) */
    uint32_t nprocs, opened, closed, left; /* left: sessions not answered yet */
    uint32_t departed;                     /* opened, then gone or refused */
    double short_since;                    /* since when processes seem missing (now_s) */
    double wait_s;  /* the bounded wait (PIO_FILE_WAIT): see merged_check_wait */
    double last;    /* the last open, write or close (now_s) */
    uint8_t *state; /* per process number: PROC_* */
    int err, done;
    int keep; /* failed for a missing writer: the part file stays, never renamed */
    char text[PCP_TEXT_MAX];
};

enum { PROC_NONE, PROC_OPEN, PROC_CLOSED }; /* a process of a merged file */

#define MERGED_WAIT_S 60.0 /* an FOPEN that gives no wait (block = 0) */

static pthread_mutex_t merged_mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t merged_cv = PTHREAD_COND_INITIALIZER;
static struct merged *merged_list;

/* Record the first error of a merged file, for every process's close (locked). */
static void merged_fail(struct merged *x, int err, const char *text)
{
    if (!x->err) {
        x->err = err;
        snprintf(x->text, sizeof(x->text), "%.*s", (int)sizeof(x->text) - 1, text);
    }
}

/* The same for a writer that is missing (never opened, died, silent): what
 * the others wrote is right but incomplete, so the part file is kept for
 * inspection under its part name and never renamed into place (locked). */
static void merged_fail_keep(struct merged *x, int err, const char *text)
{
    if (!x->err) {
        x->keep = 1;
        merged_fail(x, err, text);
        logf_("%s", text);
    }
}

/* Process proc of x's application (locked): its state, and news of the file. */
static void merged_mark(struct merged *x, int proc, int state)
{
    if (proc >= 0 && (uint32_t)proc < x->nprocs)
        x->state[proc] = (uint8_t)state;
    x->last = now_s();
}

/* The process numbers of x in state st into out ("1 4 7", at most 8 of
 * them, then "..."); returns how many there are (locked). */
static uint32_t merged_procs(const struct merged *x, int st, char *out, size_t cap)
{
    uint32_t n = 0;
    size_t o = 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < x->nprocs; i++)
        if (x->state[i] == st && n++ < 8 && o < cap)
            o += (size_t)snprintf(out + o, cap - o, "%s%u", o ? " " : "", i);
        else if (x->state[i] == st && n == 9 && o < cap)
            o += (size_t)snprintf(out + o, cap - o, " ...");
    return n;
}

/* The open merged file (app, path), created by the first process (locked).
 * A later process that opens it differently (mode, dataset) is refused, and
 * the file fails for all: *joined [out] says the refused process still
 * counts as one of the file's (closed) processes. */
static struct merged *merged_get(struct session *s, int *err, char *text, size_t cap, int *joined)
{
    struct pcp_msg *q = &s->req;
    int is_h5 = (q->flags & PCP_F_HDF5) != 0;
    *joined = 0;
    for (struct merged *x = merged_list; x; x = x->next)
        if (!x->done && x->opened < x->nprocs && strcmp(x->app, q->client) == 0 &&
            strcmp(x->path, q->path) == 0) {
            if (is_h5 == x->is_h5 && (!is_h5 || files_h5_same(x->h5, q))) {
                if (q->block && q->block / 1e3 < x->wait_s)
                    x->wait_s = q->block / 1e3; /* the shortest wait of those who opened */
                merged_mark(x, s->proc, PROC_OPEN);
                return x;
            }
            *err = EPERM;
            snprintf(text, cap, "%.150s: process %d opened it with another %s than the others",
                     q->path, s->proc, is_h5 == x->is_h5 ? "dataset" : "mode");
            merged_fail(x, *err, text);
            *joined = 1;
            return x;
        }
    if (is_h5 && (*err = files_h5_spec_check(q, text, cap)) != 0)
        return NULL;
    char rel[PCP_PATH_MAX];
    uint32_t nprocs = q->size && q->size <= (1u << 24) ? (uint32_t)q->size : 1;
    struct merged *x = calloc(1, sizeof(*x));
    if (!x || !(x->state = calloc(nprocs, 1))) {
        free(x);
        *err = ENOMEM;
        snprintf(text, cap, "out of memory");
        return NULL;
    }
    x->fd = x->dfd = -1;
    if (relpath(q->path, rel, sizeof(rel)) != 0) {
        *err = EXDEV;
    } else if ((x->dfd = open_parent(rel, x->base, sizeof(x->base))) < 0) {
        *err = errno == ELOOP ? EXDEV : errno;
    } else {
        snprintf(x->tmp, sizeof(x->tmp), ".%s.pcp-part", x->base);
        char who[PCP_NAME_MAX + 16], holder[PCP_NAME_MAX + 16];
        snprintf(who, sizeof(who), "%.40s (merged output)", q->client);
        x->fd = part_lock(x->dfd, x->tmp, who, holder, sizeof(holder), 0);
        if (x->fd < 0) {
            *err = errno;
            if (*err == EBUSY)
                snprintf(text, cap, "%.90s: busy: %.60s is writing it (part file %.60s)", q->path,
                         holder, x->tmp);
        } else if (ftruncate(x->fd, 0) != 0) {
            *err = errno;
            part_unlock(x->fd);
            x->fd = -1;
        }
    }
    if (x->fd < 0 && *err != EBUSY)
        snprintf(text, cap, "%.150s: %s", q->path, why(*err));
    else if (is_h5 && (*err = files_h5_create(x->fd, q, &x->h5, text, cap)) != 0) {
        unlinkat(x->dfd, x->tmp, 0);
        part_unlock(x->fd);
        x->fd = -1;
    }
    if (x->fd < 0) {
        if (x->dfd >= 0)
            close(x->dfd);
        free(x->state);
        free(x);
        return NULL;
    }
    x->is_h5 = is_h5;
    snprintf(x->app, sizeof(x->app), "%s", q->client);
    snprintf(x->path, sizeof(x->path), "%s", q->path);
    x->nprocs = nprocs;
    x->left = x->nprocs;
    x->wait_s = q->block ? q->block / 1e3 : MERGED_WAIT_S;
    merged_mark(x, s->proc, PROC_OPEN);
    x->next = merged_list;
    merged_list = x;
    return x;
}

/* The end of a merged file (locked): after the last close, sync, set the
 * mode and rename into place; after a failure, remove the part file, or keep
 * it (x->keep: a writer was missing), synced. Every waiting close returns.
 * The descriptors stay open until the last session lets go of x (a session
 * still writing when the wait ran out writes on into the kept part file). */
static void merged_finish(struct merged *x, uint32_t mode)
{
    if (x->done)
        return;
    if (!x->err) { /* every process closed: nobody writes any more */
        if (files_h5_close(x->h5) != 0)
            merged_fail(x, EIO, "HDF5 could not complete the file");
        x->h5 = NULL;
    } /* else a session may still write a slab: HDF5 lets go in merged_free */
    if (!x->err && (fsync(x->fd) != 0 || fchmod(x->fd, mode & 07777) != 0 ||
                    renameat(x->dfd, x->tmp, x->dfd, x->base) != 0 || fsync(x->dfd) != 0)) {
        x->err = errno;
        snprintf(x->text, sizeof(x->text), "%.150s: %s", x->path, why(errno));
    }
    if (x->err && !x->keep)
        unlinkat(x->dfd, x->tmp, 0);
    else if (x->err)
        fsync(x->fd);
    x->done = 1;
    pthread_cond_broadcast(&merged_cv);
}

/* The last session lets go of a finished x (locked). */
static void merged_free(struct merged *x)
{
    for (struct merged **pp = &merged_list; *pp; pp = &(*pp)->next)
        if (*pp == x) {
            *pp = x->next;
            break;
        }
    if (x->h5 && files_h5_close(x->h5) != 0)
        logf_("%s: HDF5 could not complete the kept part file %s", x->path, x->tmp);
    part_unlock(x->fd);
    close(x->dfd);
    free(x->state);
    free(x);
}

/* x failed for a missing writer (locked): the processes that never opened
 * count as closed and answered, nobody waits for them; the file ends now
 * (those still writing, alive, write on into the kept part file). */
static void merged_give_up(struct merged *x, uint32_t mode)
{
    uint32_t missing = x->nprocs - x->opened;
    x->left -= missing;
    x->closed += missing;
    x->opened = x->nprocs;
    for (uint32_t i = 0; i < x->nprocs; i++)
        if (x->state[i] == PROC_NONE)
            x->state[i] = PROC_CLOSED;
    merged_finish(x, mode);
}

/* A process that never opens would keep the others' closes waiting for
 * ever. While some wait, compare the processes of the application still
 * joined with those that must still come: every process that opened and did
 * not depart is joined (it waits in its close, or writes), so
 * joined - (opened - departed) processes may still open. Fewer than the
 * missing opens for ABSENT_GRACE seconds on end (a slow starter is not yet
 * joined) and the file fails (locked; the lock is dropped to ask libpio).
 * (A writer that dies holding the file is found by its own session: libpio
 * fails the receive from a process that left, in about a second.) */
#define ABSENT_GRACE 10

static void merged_check_absent(struct merged *x, int partner, uint32_t mode)
{
    PIO_Appinfo ai;
    pthread_mutex_unlock(&merged_mtx);
    int rc = PIO_Getappinfo(partner, &ai);
    pthread_mutex_lock(&merged_mtx);
    if (rc != PIO_OK || x->done || x->opened >= x->nprocs)
        return;
    long may_come = (long)ai.joined - (long)(x->opened - x->departed);
    long missing = (long)(x->nprocs - x->opened);
    double now = now_s();
    if (may_come >= missing) {
        x->short_since = 0;
        return;
    }
    if (!x->short_since) {
        x->short_since = now;
        return;
    }
    if (now - x->short_since < ABSENT_GRACE)
        return;
    char text[2 * PCP_TEXT_MAX], procs[64];
    merged_procs(x, PROC_NONE, procs, sizeof(procs));
    snprintf(text, sizeof(text),
             "%.80s: %ld process(es) of %.40s left without opening it (not opened: %s): not "
             "renamed, kept as %.60s",
             x->path, missing - (may_come > 0 ? may_come : 0), x->app, procs, x->tmp);
    text[PCP_TEXT_MAX - 1] = '\0';
    merged_fail_keep(x, EPIPE, text);
    merged_give_up(x, mode);
}

/* The bounded wait (locked): when nothing has happened to x (an open, a
 * write, a close) for x->wait_s seconds while closes wait, the processes
 * that never opened it or never closed it are named, and the file fails
 * for all: its part file is kept, never renamed. The wait is the shortest
 * PIO_FILE_WAIT of the processes that opened (default MERGED_WAIT_S). */
static void merged_check_wait(struct merged *x, uint32_t mode)
{
    if (x->done || now_s() - x->last < x->wait_s)
        return;
    char text[2 * PCP_TEXT_MAX], never[48], open_[48];
    uint32_t nn = merged_procs(x, PROC_NONE, never, sizeof(never));
    uint32_t no = merged_procs(x, PROC_OPEN, open_, sizeof(open_));
    snprintf(text, sizeof(text),
             "%.60s: waited %.0f s for process(es) of %.40s: %s%s%s%s%s: not renamed, kept as "
             "%.60s",
             x->path, x->wait_s, x->app, nn ? "never opened it: " : "", nn ? never : "",
             nn && no ? "; " : "", no ? "opened it, never closed it: " : "", no ? open_ : "",
             x->tmp);
    text[PCP_TEXT_MAX - 1] = '\0';
    merged_fail_keep(x, ETIMEDOUT, text);
    merged_give_up(x, mode);
}

/* One process's close (or its end): the last one finishes the file; each
 * waits (when wait) until it is finished and takes the outcome (locked).
 * partner: the application, to look for processes that never open. */
static int merged_leave(struct merged *x, int partner, uint32_t mode, int wait, char *text,
                        size_t cap)
{
    if (++x->closed == x->nprocs)
        merged_finish(x, mode);
    while (wait && !x->done) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until); /* merged_cv waits on it (main) */
        until.tv_sec += 1;
        if (pthread_cond_timedwait(&merged_cv, &merged_mtx, &until) == ETIMEDOUT) {
            merged_check_absent(x, partner, mode);
            merged_check_wait(x, mode);
        }
    }
    int e = x->err;
    if (wait)
        snprintf(text, cap, "%s", x->text);
    if (--x->left == 0)
        merged_free(x);
    return e;
}

/* Receive one WRITE's data message (m->size bytes, ≤ BLOCK_MAX) into *buf
 * (grown as needed) and write it. 0, or -1 when the process is gone. */
static int merged_block(struct session *s, uint32_t sid, struct merged *x, const struct pcp_msg *m,
                        uint8_t **buf, size_t *cap)
{
    if (m->size > *cap) {
        uint8_t *nb = realloc(*buf, m->size);
        if (!nb)
            return -1;
        *buf = nb;
        *cap = m->size;
    }
    uint64_t elems = m->size;
    int type = PIO_BYTE, bad = 0;
    char text[PCP_TEXT_MAX];
    if (x->is_h5) {
        if (files_h5_slab_check(x->h5, m, &elems) == 0)
            type = (int)s->req.type;
        else
            bad = 1, elems = m->size; /* still take the bytes: the stream stays in step */
    }
    PIO_Status st;
    if (PIO_Recv(s->partner, s->proc, PCP_TAG_DATA + (int)sid, *buf, type, (size_t)elems, STEP_MS,
                 PIO_BLOCKING, &st) != PIO_OK)
        return -1;
    int err = 0;
    if (bad) {
        err = EINVAL;
        snprintf(text, sizeof(text), "%.120s: process %d wrote a slab outside the dataset's shape",
                 x->path, s->proc);
    } else if (x->is_h5) {
        if ((err = files_h5_write(x->h5, m, *buf)) != 0)
            snprintf(text, sizeof(text), "%.150s: HDF5 could not write a slab", x->path);
    } else {
        for (size_t w = 0; w < st.bytes;) {
            ssize_t r = pwrite(x->fd, *buf + w, st.bytes - w, (off_t)(m->off + w));
            if (r < 0) {
                err = errno;
                snprintf(text, sizeof(text), "%.150s: %s", x->path, why(errno));
                break;
            }
            w += (size_t)r;
        }
    }
    pthread_mutex_lock(&merged_mtx);
    if (err)
        merged_fail(x, err, text);
    x->last = now_s(); /* news of the file: the bounded wait starts again */
    pthread_mutex_unlock(&merged_mtx);
    return 0;
}

static void do_fopen(struct session *s)
{
    struct pcp_msg *q = &s->req, m;
    uint32_t sid = q->session, mode = q->mode ? q->mode : 0644;
    int err = 0, joined;
    char text[PCP_TEXT_MAX];
    pthread_mutex_lock(&merged_mtx);
    struct merged *x = merged_get(s, &err, text, sizeof(text), &joined);
    if (x)
        x->opened++;
    if (x && joined) { /* refused, yet one of the file's processes: it closes now */
        merged_mark(x, s->proc, PROC_CLOSED);
        x->departed++;
        merged_leave(x, s->partner, mode, 0, text, sizeof(text));
    }
    pthread_mutex_unlock(&merged_mtx);
    if (!x || joined) {
        send_err(s, sid, err, "%s", text);
        return;
    }
    memset(&m, 0, sizeof(m));
    m.op = PCP_OK;
    send_msg(s, sid, &m);
    uint8_t *buf = NULL;
    size_t cap = 0;
    int gone = 0;
    for (;;) {
        if (recv_step(s, sid, &m) != 0) {
            gone = 1; /* the process went away: its share is missing */
            break;
        }
        if (m.op == PCP_FCLOSE)
            break;
        if (m.op != PCP_WRITE || m.size > BLOCK_MAX || merged_block(s, sid, x, &m, &buf, &cap)) {
            gone = 1;
            break;
        }
    }
    free(buf);
    pthread_mutex_lock(&merged_mtx);
    merged_mark(x, s->proc, PROC_CLOSED);
    if (gone) {
        char t2[2 * PCP_TEXT_MAX];
        snprintf(t2, sizeof(t2),
                 "%.80s: process %d of %.40s went away before closing it: not renamed, kept as "
                 "%.60s",
                 x->path, s->proc, x->app, x->tmp);
        t2[PCP_TEXT_MAX - 1] = '\0';
        merged_fail_keep(x, EPIPE, t2);
        x->departed++;
    }
    int e = merged_leave(x, s->partner, mode, 1, text, sizeof(text));
    pthread_mutex_unlock(&merged_mtx);
    if (gone)
        return;
    if (e) {
        send_err(s, sid, e, "%s", text);
    } else {
        memset(&m, 0, sizeof(m));
        m.op = PCP_OK;
        send_msg(s, sid, &m);
    }
}

/* Remote file access (ROPEN): reads put into the client's window.
 *
 * A pipeline of RBUFS pieces of RPIECE bytes: each READ is cut into pieces,
 * and the pread of the next piece (of this READ or, when the client keeps
 * several READs queued, of the next one) overlaps the puts of those before
 * (PIO_Iput). A READ's answer (CTL OK) goes once its last put has
 * completed, so the client sees its bytes; answers go in READ order. A put
 * that fails redoes its READ once, piece by piece and waited for: the window
 * we knew may be an earlier incarnation's, and libpio asks the client anew.
 * After each READ the range that would come next is announced to the kernel
 * (POSIX_FADV_WILLNEED), so a sequential reader finds it on its way in. */
#define RPIECE (1u << 20)
#define RBUFS  4

/* One READ: size bytes at off, or (strided) pieces of psize bytes at off,
 * off + stride, ...; size = psize x pieces bytes go to the window at dst. */
struct rread {
    uint64_t off, size, dst, psize, stride;
    uint32_t nlist; /* a list READ: nlist ranges of llen bytes at loff */
    uint64_t loff[PCP_DIMS_MAX], llen[PCP_DIMS_MAX];
};

/* Byte `done` of list READ q: its range i, and where in it (*in). */
static uint32_t rread_range(const struct rread *q, uint64_t done, uint64_t *in)
{
    uint32_t i = 0;
    while (i + 1 < q->nlist && done >= q->llen[i])
        done -= q->llen[i++];
    *in = done;
    return i;
}

/* Where byte `done` of READ q is in the file. */
static uint64_t rread_pos(const struct rread *q, uint64_t done)
{
    if (q->nlist) {
        uint64_t in;
        uint32_t i = rread_range(q, done, &in);
        return q->loff[i] + in;
    }
    return q->off + done / q->psize * q->stride + done % q->psize;
}

/* How much of READ q to read at byte `done`: up to RPIECE, not across a
 * piece (a range of a list). */
static size_t rread_want(const struct rread *q, uint64_t done)
{
    uint64_t left;
    if (q->nlist) {
        uint64_t in;
        uint32_t i = rread_range(q, done, &in);
        left = q->llen[i] - in;
    } else {
        left = q->psize - done % q->psize;
    }
    return left < RPIECE ? (size_t)left : RPIECE;
}

struct rpiece {
    PIO_Request rq; /* the put, or NULL (nothing to put) */
    uint64_t seq;   /* which READ */
    struct rread q; /* that READ */
    uint64_t got;   /* the last piece of its READ: the bytes of the READ */
    int last;
};

struct rpipe {
    struct session *s;
    int fd;
    PIO_Win win; /* the client's window, by the number it sent (PIO_Win_remote) */
    uint8_t *buf[RBUFS];
    struct rpiece p[RBUFS];
    int head, n;      /* the ring of pieces in flight */
    uint64_t bad_seq; /* a READ one of whose puts failed (0: none) */
    int redone;       /* a READ was redone already */
};

/* One READ, the slow way: piece by piece, each put waited for. */
static int read_sync(struct rpipe *rp, const struct rread *q, uint64_t *got)
{
    *got = 0;
    while (*got < q->size) {
        size_t want = rread_want(q, *got);
        ssize_t n = pread(rp->fd, rp->buf[0], want, (off_t)rread_pos(q, *got));
        if (n < 0)
            return pio_from_errno(errno);
        if (n == 0)
            break;
        PIO_Request rq = NULL;
        int rc = PIO_Iput(rp->win, rp->s->partner, rp->s->proc, q->dst + *got, rp->buf[0],
                          (size_t)n, &rq);
        if (rc == PIO_OK)
            rc = PIO_Wait(&rq, STEP_MS, NULL);
        if (rc != PIO_OK)
            return rc;
        *got += (uint64_t)n;
        if ((size_t)n < want)
            break;
    }
    return PIO_OK;
}

/* The oldest piece in flight completes; the last of a READ sends its answer.
 * -1: the session is over (the client was told, or is gone). */
static int rpipe_complete(struct rpipe *rp)
{
    struct rpiece *p = &rp->p[rp->head];
    rp->head = (rp->head + 1) % RBUFS;
    rp->n--;
    if (p->rq && PIO_Wait(&p->rq, STEP_MS, NULL) != PIO_OK && rp->bad_seq != p->seq)
        rp->bad_seq = p->seq;
    if (!p->last)
        return 0;
    uint32_t sid = rp->s->req.session;
    uint64_t got = p->got;
    if (rp->bad_seq == p->seq) {
        int rc = rp->redone++ ? PIO_EIO : read_sync(rp, &p->q, &got);
        if (rc != PIO_OK) {
            send_err(rp->s, sid, EIO, "READ at %llu: %s", (unsigned long long)p->q.off,
                     PIO_Strerror(rc));
            return -1;
        }
    }
    if (got == p->q.size && p->q.psize == p->q.size) /* sequential: the next range is next */
        posix_fadvise(rp->fd, (off_t)(p->q.off + got), (off_t)p->q.size, POSIX_FADV_WILLNEED);
    struct pcp_msg m;
    memset(&m, 0, sizeof(m));
    m.op = PCP_OK;
    m.off = p->q.off;
    m.size = got;
    return send_msg(rp->s, sid, &m) == PIO_OK ? 0 : -1;
}

static int rpipe_drain(struct rpipe *rp)
{
    while (rp->n > 0)
        if (rpipe_complete(rp) != 0)
            return -1;
    return 0;
}

static void do_ropen(struct session *s)
{
    struct pcp_msg *q = &s->req, m;
    uint32_t sid = q->session;
    struct rpipe rp = {.s = s, .fd = -1};
    struct stat sb;
    if ((rp.fd = open_source(s, sid, &sb, "")) < 0)
        goto out;
    if (q->block > INT32_MAX || q->size == 0) {
        send_err(s, sid, EINVAL, "ROPEN: no window to read into");
        goto out;
    }
    if (PIO_Win_remote((int)q->block, &rp.win) != PIO_OK) {
        send_err(s, sid, ENOMEM, "out of memory");
        goto out;
    }
    uint64_t wsize = q->size;
    for (int i = 0; i < RBUFS; i++)
        if (!(rp.buf[i] = malloc(RPIECE))) {
            send_err(s, sid, ENOMEM, "out of memory");
            goto out;
        }
    memset(&m, 0, sizeof(m));
    m.op = PCP_OK;
    m.flags = PCP_F_STRIDED | PCP_F_LIST;
    m.size = (uint64_t)sb.st_size;
    if (send_msg(s, sid, &m) != PIO_OK)
        goto out;
    uint64_t seq = 0, done = 0;
    struct rread rd = {0};
    int have = 0; /* a READ being cut into pieces: rd, done */
    for (;;) {
        if (!have) {
            /* the next READ: waited for only when nothing is in flight */
            uint8_t buf[PCP_MSG_MAX];
            PIO_Status st;
            int rc = PIO_Recv(s->partner, s->proc, PCP_TAG_CTL + (int)sid, buf, PIO_BYTE,
                              sizeof(buf), rp.n > 0 ? 0 : STEP_MS, PIO_BLOCKING, &st);
            if (rc == PIO_ETIMEDOUT && rp.n > 0) {
                if (rpipe_complete(&rp) != 0)
                    goto out;
                continue;
            }
            if (rc != PIO_OK || pcp_msg_decode(buf, st.bytes, &m) != 0 || m.op == PCP_RCLOSE)
                break;
            rd = (struct rread){m.off, m.size, m.block, m.size, 0, 0, {0}, {0}};
            int list = m.op == PCP_READ && (m.flags & PCP_F_LIST);
            if (list) {
                uint64_t sum = 0;
                int bad = m.ndims == 0;
                for (uint32_t i = 0; i < m.ndims && !bad; i++) {
                    bad = m.count[i] == 0 || m.count[i] > wsize - sum;
                    sum += bad ? 0 : m.count[i];
                    rd.loff[i] = m.start[i];
                    rd.llen[i] = m.count[i];
                }
                if (bad || sum != m.size) {
                    rpipe_drain(&rp);
                    send_err(s, sid, EINVAL,
                             "READ: a list of %u ranges that is empty, has an empty range, or "
                             "does not add up to %llu bytes within the %llu-byte window",
                             m.ndims, (unsigned long long)m.size, (unsigned long long)wsize);
                    goto out;
                }
                rd.nlist = m.ndims;
            }
            int strided = m.op == PCP_READ && m.ndims == 1 && !list;
            if (strided &&
                (m.size == 0 || m.count[0] == 0 || m.count[0] > wsize / m.size ||
                 m.start[0] < m.size || m.start[0] > (UINT64_MAX - m.off) / m.count[0])) {
                rpipe_drain(&rp);
                send_err(s, sid, EINVAL,
                         "READ: %llu pieces of %llu bytes every %llu: not pieces that fit the "
                         "%llu-byte window one after the other",
                         (unsigned long long)m.count[0], (unsigned long long)m.size,
                         (unsigned long long)m.start[0], (unsigned long long)wsize);
                goto out;
            }
            if (strided) {
                rd.stride = m.start[0];
                rd.size = m.size * m.count[0];
            }
            if (m.op != PCP_READ || (m.ndims != 0 && !strided && !list) || rd.size > wsize ||
                m.block > wsize - rd.size) {
                rpipe_drain(&rp);
                send_err(s, sid, EINVAL, "READ: %llu bytes at %llu do not fit the %llu-byte window",
                         (unsigned long long)rd.size, (unsigned long long)m.block,
                         (unsigned long long)wsize);
                goto out;
            }
            if (rd.psize == 0)
                rd.psize = 1; /* an empty READ: rread_pos divides by it */
            have = 1;
            seq++;
            done = 0;
        }
        if (rp.n == RBUFS) {
            if (rpipe_complete(&rp) != 0)
                goto out;
            continue;
        }
        int slot = (rp.head + rp.n) % RBUFS;
        struct rpiece *p = &rp.p[slot];
        *p = (struct rpiece){NULL, seq, rd, 0, 0};
        /* up to RPIECE bytes of the READ into this buffer: one range, or as
         * many whole pieces of a strided READ as fit (one put for them all) */
        size_t want = 0;
        ssize_t n = 0;
        while (rd.size > done + (uint64_t)n && (size_t)n == want) {
            size_t w = rread_want(&rd, done + (uint64_t)n);
            if ((size_t)n + w > RPIECE)
                break;
            uint64_t at = rread_pos(&rd, done + (uint64_t)n);
            ssize_t k = pread(rp.fd, rp.buf[slot] + n, w, (off_t)at);
            if (k < 0) {
                int e = errno;
                rpipe_drain(&rp);
                send_err(s, sid, e, "READ at %llu: %s", (unsigned long long)at, strerror(e));
                goto out;
            }
            want += w;
            n += k;
        }
        if (n > 0 && rp.bad_seq != seq &&
            PIO_Iput(rp.win, s->partner, s->proc, rd.dst + done, rp.buf[slot], (size_t)n, &p->rq) !=
                PIO_OK)
            rp.bad_seq = seq;
        done += (uint64_t)n;
        if ((size_t)n < want || done == rd.size) { /* the end of the READ, or of the file */
            p->last = 1;
            p->got = done;
            have = 0;
        }
        rp.n++;
    }
    rpipe_drain(&rp);
out:
    if (rp.fd >= 0)
        close(rp.fd);
    if (rp.win)
        PIO_Win_free(&rp.win);
    for (int i = 0; i < RBUFS; i++)
        free(rp.buf[i]);
}

/* Read --map FILE. Returns 0, or -1 with a message on stderr. */
static int map_load(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "pio-files: --map %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[512];
    int n = 0, bad = 0;
    while (fgets(line, sizeof(line), f)) {
        n++;
        char *h = strchr(line, '#');
        if (h)
            *h = '\0';
        char sys[PIO_NAME_MAX], user[PIO_NAME_MAX], local[PIO_NAME_MAX], eq[4], extra[2];
        int k = sscanf(line, "%63s %63s %3s %63s %1s", sys, user, eq, local, extra);
        if (k <= 0)
            continue;
        if (k != 4 || strcmp(eq, "=") != 0 || nmap == MAP_MAX) {
            fprintf(stderr,
                    "pio-files: --map %s line %d: expected 'SYSTEM USER = LOCALUSER' (at most "
                    "%d lines)\n",
                    path, n, MAP_MAX);
            bad = 1;
            continue;
        }
        snprintf(map[nmap].system, sizeof(map[nmap].system), "%s", sys);
        snprintf(map[nmap].user, sizeof(map[nmap].user), "%s", user);
        snprintf(map[nmap].local, sizeof(map[nmap].local), "%s", local);
        nmap++;
    }
    fclose(f);
    return bad ? -1 : 0;
}

/* The local user a user of another system acts as: the first --map line
 * that matches, else the same name. */
static const char *map_user(const char *system, const char *user)
{
    for (int i = 0; i < nmap; i++)
        if ((strcmp(map[i].system, "*") == 0 || strcmp(map[i].system, system) == 0) &&
            (strcmp(map[i].user, "*") == 0 || strcmp(map[i].user, user) == 0))
            return map[i].local;
    return user;
}

/* Whom a request with status st acts as, into *c. Returns 0, or an errno
 * (EACCES) with the reason in why. */
static int caller_cred(const PIO_Status *st, struct cred *c, char *why, size_t cap)
{
    struct passwd pw, *res = NULL;
    char tmp[4096];
    memset(c, 0, sizeof(*c));
    if (strcmp(st->system, my_system) == 0) { /* one of our own users */
        c->uid = st->uid;
        c->gid = st->gid;
        getpwuid_r(c->uid, &pw, tmp, sizeof(tmp), &res);
    } else {
        const char *local = st->user[0] ? map_user(st->system, st->user) : "";
        if (!local[0] || getpwnam_r(local, &pw, tmp, sizeof(tmp), &res) != 0 || !res) {
            char as[PIO_NAME_MAX + 16] = "";
            if (local[0] && strcmp(local, st->user) != 0)
                snprintf(as, sizeof(as), " (mapped to %s)", local);
            snprintf(why, cap, "user %s (uid %u) of system %s%s has no account here: refused",
                     st->user[0] ? st->user : "?", st->uid, st->system, as);
            return EACCES;
        }
        c->uid = pw.pw_uid;
        c->gid = pw.pw_gid;
    }
    c->ngroups = CRED_GROUPS;
    if (!res || getgrouplist(pw.pw_name, c->gid, c->groups, &c->ngroups) < 0) {
        c->ngroups = 1; /* no name (or too many groups): its primary group alone */
        c->groups[0] = c->gid;
    }
    return 0;
}

/* Make this thread act as c on the filesystem (per thread: the raw
 * syscalls, not glibc's setgroups, which changes every thread). Returns 0
 * or EACCES. Leaving root's fsuid drops the filesystem capabilities. */
static int become(const struct cred *c, char *why, size_t cap)
{
    if (geteuid() != 0) { /* no CAP_SETUID: only our own user */
        if (c->uid == geteuid())
            return 0;
        snprintf(why, cap,
                 "the file service runs as uid %u, not root: it cannot act as uid %u: refused",
                 (unsigned)geteuid(), (unsigned)c->uid);
        return EACCES;
    }
    if (syscall(SYS_setgroups, (size_t)c->ngroups, c->groups) != 0) {
        snprintf(why, cap, "cannot take the groups of uid %u: %s", (unsigned)c->uid,
                 strerror(errno));
        return EACCES;
    }
    syscall(SYS_setfsgid, c->gid);
    syscall(SYS_setfsuid, c->uid);
    /* both return the old value: ask again to know they took */
    if ((uid_t)syscall(SYS_setfsuid, -1) != c->uid || (gid_t)syscall(SYS_setfsgid, -1) != c->gid) {
        snprintf(why, cap, "cannot act as uid %u gid %u", (unsigned)c->uid, (unsigned)c->gid);
        return EACCES;
    }
    return 0;
}

static void *session_thread(void *arg)
{
    struct session *s = arg;
    char why[PCP_TEXT_MAX];
    int e = become(&s->cred, why, sizeof(why));
    if (e) {
        send_err(s, s->req.session, e, "%s", why);
        free(s);
        return NULL;
    }
    switch (s->req.op) {
    case PCP_PUT: do_put(s); break;
    case PCP_GET: do_get(s); break;
    case PCP_MKDIR: do_mkdir(s); break;
    case PCP_LIST: do_list(s); break;
    case PCP_FOPEN: do_fopen(s); break;
    case PCP_ROPEN: do_ropen(s); break;
    default: break;
    }
    free(s);
    return NULL;
}

static volatile sig_atomic_t stop;
static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"root", required_argument, 0, 'r'}, {"name", required_argument, 0, 'n'},
        {"map", required_argument, 0, 'm'},  {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'},    {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "r:n:m:h", opts, NULL)) != -1) {
        switch (c) {
        case 'r': root_path = optarg; break;
        case 'n': app = optarg; break;
        case 'm':
            if (map_load(optarg) != 0)
                return 2;
            break;
        case 'V': return pio_cli_version("pio-files");
        case 'h':
            printf("usage: pio-files --root DIR --name pio.files.HOST [--map FILE] | --version\n"
                   "The file service piod starts for `export = DIR` (see pcp(1)). Each request\n"
                   "acts as its caller; --map FILE: 'SYSTEM USER = LOCALUSER' lines name the\n"
                   "local user of another system's user (default: the same name).\n");
            return 0;
        default: return 2;
        }
    }
    if (!root_path || !app) {
        fprintf(stderr, "pio-files: --root and --name are required\n");
        return 2;
    }
    root_fd = open(root_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0) {
        fprintf(stderr, "pio-files: export root %s: %s\n", root_path, strerror(errno));
        return 1;
    }
    pthread_condattr_t ca; /* merged_cv's timed waits run on CLOCK_MONOTONIC */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&merged_cv, &ca);
    pthread_condattr_destroy(&ca);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    int rc = PIO_Init(app, 0, 1);
    if (rc != PIO_OK) {
        fprintf(stderr, "pio-files: PIO_Init(%s): %s\n", app, PIO_Strerror(rc));
        return 1;
    }
    PIO_Hostinfo hi;
    if ((rc = PIO_Gethostinfo(&hi)) != PIO_OK) {
        fprintf(stderr, "pio-files: PIO_Gethostinfo: %s\n", PIO_Strerror(rc));
        return 1;
    }
    snprintf(my_system, sizeof(my_system), "%s", hi.system);
    files_h5_init();
    logf_("serving %s as %s%s", root_path, app,
          geteuid() == 0 ? ", each request as its caller"
                         : "; not root: only requests of our own uid are served");
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    uint8_t buf[PCP_MSG_MAX];
    while (!stop) {
        pio_mem_trim_tick();
        pcp_orphans_reap();
        PIO_Status st;
        rc = PIO_Recv(PIO_ANY_PARTNER, PIO_ANY_PROCESS, PCP_TAG_REQ, buf, PIO_BYTE, sizeof(buf),
                      500, PIO_BLOCKING, &st);
        if (rc == PIO_ETIMEDOUT)
            continue;
        if (rc == PIO_ETRUNC) { /* too big for a request: take it out of the way */
            uint8_t *junk = st.bytes <= (64u << 20) ? malloc(st.bytes ? st.bytes : 1) : NULL;
            if (junk)
                PIO_Recv(PIO_ANY_PARTNER, PIO_ANY_PROCESS, PCP_TAG_REQ, junk, PIO_BYTE, st.bytes,
                         500, PIO_BLOCKING, NULL);
            free(junk);
            logf_("a message that is no request (%zu bytes) was dropped", st.bytes);
            continue;
        }
        if (rc != PIO_OK) {
            logf_("receiving requests: %s", PIO_Strerror(rc));
            break;
        }
        struct session *s = calloc(1, sizeof(*s));
        if (!s)
            continue;
        if (pcp_msg_decode(buf, st.bytes, &s->req) != 0 ||
            (s->req.op > PCP_FOPEN && s->req.op != PCP_ROPEN)) {
            logf_("a malformed request (%zu bytes) was ignored", st.bytes);
            free(s);
            continue;
        }
        /* the client is who the piods say sent it, not what it says */
        if ((rc = PIO_Addpartner(st.app, &s->partner)) != PIO_OK) {
            logf_("a request from %s (process %d), unknown to us: %s", st.app, st.source,
                  PIO_Strerror(rc));
            free(s);
            continue;
        }
        s->proc = st.source;
        char why[PCP_TEXT_MAX];
        int e = caller_cred(&st, &s->cred, why, sizeof(why));
        if (e) {
            send_err(s, s->req.session, e, "%s", why);
            free(s);
            continue;
        }
        pthread_t t;
        if (pthread_create(&t, &at, session_thread, s) != 0)
            free(s);
    }
    PIO_Exit();
    pcp_orphans_reap(); /* every request is done now: free their buffers */
    return 0;
}
