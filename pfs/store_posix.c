/* store_posix.c - the POSIX storage backend (store.h, store_posix.h), and
 * pfs_store_find, the one place backends are registered.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Layout: the object of file id F is the regular file DIR/objects/XX/F, XX
 * being F's low byte (two hex digits) and F its 16 hex digits: 256
 * directories keep any one of them small. An object is created (mode 0600)
 * by its first write (or a truncate to a non-zero size); a missing object
 * reads as empty and has size 0.
 *
 * Open files: a cache of CACHE_N descriptors (least recently used goes
 * first), each with a reference count, so the 1 MiB requests of a stream do
 * not reopen the object, and a destroy never closes a descriptor some thread
 * is using: it unlinks the file and marks the entry doomed; the last user
 * closes it. A destroy also bumps a generation number, so a descriptor
 * opened before it (by a racing request) is used once and never cached.
 * When every entry is in use, a request opens a private descriptor.
 *
 * The emulated device speed (store_posix.h) is a ticket queue of lanes under
 * its own mutex; waiting for the deadline happens with no lock held.
 */
#include "store_posix.h"
#include "err.h"
#include "pio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define CACHE_N 64

struct fdent {
    uint64_t fid;
    int fd;
    int refs;
    int used;   /* the entry holds a descriptor */
    int doomed; /* destroyed: no new user; the last one closes it */
    uint64_t last;
};

struct pfs_store {
    char *dir;
    int objfd; /* DIR/objects */
    pthread_mutex_t mtx;
    struct fdent cache[CACHE_N];
    uint64_t tick;
    uint64_t gen; /* destroys so far */
    /* the emulated device */
    pthread_mutex_t tmtx;
    pthread_cond_t tcv;
    uint64_t rate; /* bytes per second, 0 = no limit */
    int lanes, lanes_busy;
    uint64_t ticket_next, ticket_serving;
};

/* A descriptor in use: slot -1 = private, closed by put. */
struct handle {
    int fd;
    int slot;
};

static void obj_name(uint64_t fid, char *buf, size_t cap)
{
    snprintf(buf, cap, "%02x/%016" PRIx64, (unsigned)(fid & 0xffu), fid);
}

/* ---- the emulated device -------------------------------------------------- */

/* Wait for a lane (FIFO). Returns 0 when unlimited (nothing taken), else 1
 * with the rate and lanes to account with. */
static int lane_take(struct pfs_store *st, uint64_t *rate, int *lanes)
{
    pthread_mutex_lock(&st->tmtx);
    if (st->rate == 0) {
        pthread_mutex_unlock(&st->tmtx);
        return 0;
    }
    uint64_t me = st->ticket_next++;
    while (st->ticket_serving != me || st->lanes_busy >= st->lanes)
        pthread_cond_wait(&st->tcv, &st->tmtx);
    st->ticket_serving++;
    st->lanes_busy++;
    *rate = st->rate ? st->rate : 1;
    *lanes = st->lanes;
    pthread_cond_broadcast(&st->tcv); /* the next ticket may take another lane */
    pthread_mutex_unlock(&st->tmtx);
    return 1;
}

/* Hold the lane until start + n / (rate / lanes), then give it back. */
static void lane_give(struct pfs_store *st, const struct timespec *start, size_t n, uint64_t rate,
                      int lanes)
{
    double ns = (double)n * (double)lanes * 1e9 / (double)rate;
    struct timespec dl = *start;
    uint64_t add = (uint64_t)ns;
    dl.tv_sec += (time_t)(add / 1000000000u);
    dl.tv_nsec += (long)(add % 1000000000u);
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &dl, NULL) == EINTR)
        ;
    pthread_mutex_lock(&st->tmtx);
    st->lanes_busy--;
    pthread_cond_broadcast(&st->tcv);
    pthread_mutex_unlock(&st->tmtx);
}

void pfs_store_posix_throttle(struct pfs_store *st, uint64_t bytes_per_s, int lanes)
{
    if (!st)
        return;
    pthread_mutex_lock(&st->tmtx);
    st->rate = bytes_per_s;
    st->lanes = lanes < 1 ? 1 : lanes;
    pthread_cond_broadcast(&st->tcv);
    pthread_mutex_unlock(&st->tmtx);
}

/* ---- the descriptor cache ------------------------------------------------- */

static int open_obj(struct pfs_store *st, uint64_t fid, int create)
{
    char name[32];
    obj_name(fid, name, sizeof(name));
    int flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0);
    int fd;
    do
        fd = openat(st->objfd, name, flags, 0600);
    while (fd < 0 && errno == EINTR);
    if (fd < 0 && errno == ENOENT && create) { /* its directory went away: make it again */
        name[2] = '\0';
        if (mkdirat(st->objfd, name, 0700) != 0 && errno != EEXIST)
            return -1;
        name[2] = '/';
        fd = openat(st->objfd, name, flags, 0600);
    }
    return fd;
}

/* The descriptor of object fid into h. Returns PIO_OK, PIO_ENOENT (missing
 * and !create), or the open's error. */
static int fd_get(struct pfs_store *st, uint64_t fid, int create, struct handle *h)
{
    pthread_mutex_lock(&st->mtx);
    for (int i = 0; i < CACHE_N; i++) {
        struct fdent *e = &st->cache[i];
        if (e->used && !e->doomed && e->fid == fid) {
            e->refs++;
            e->last = ++st->tick;
            h->fd = e->fd;
            h->slot = i;
            pthread_mutex_unlock(&st->mtx);
            return PIO_OK;
        }
    }
    uint64_t gen = st->gen;
    pthread_mutex_unlock(&st->mtx);

    int fd = open_obj(st, fid, create);
    if (fd < 0)
        return pio_from_errno(errno);

    int old = -1;
    pthread_mutex_lock(&st->mtx);
    h->fd = fd;
    h->slot = -1;
    if (st->gen == gen) {
        int victim = -1;
        for (int i = 0; i < CACHE_N; i++) {
            struct fdent *e = &st->cache[i];
            if (e->used && !e->doomed && e->fid == fid) { /* another thread was quicker */
                e->refs++;
                e->last = ++st->tick;
                h->fd = e->fd;
                h->slot = i;
                old = fd;
                victim = -2;
                break;
            }
            if (!e->used) {
                if (victim < 0 || st->cache[victim].used)
                    victim = i;
            } else if (e->refs == 0 &&
                       (victim < 0 || (st->cache[victim].used && e->last < st->cache[victim].last)))
                victim = i;
        }
        if (victim >= 0) {
            struct fdent *e = &st->cache[victim];
            if (e->used)
                old = e->fd;
            e->fid = fid;
            e->fd = fd;
            e->refs = 1;
            e->used = 1;
            e->doomed = 0;
            e->last = ++st->tick;
            h->slot = victim;
        }
    }
    pthread_mutex_unlock(&st->mtx);
    if (old >= 0)
        close(old);
    return PIO_OK;
}

static void fd_put(struct pfs_store *st, struct handle *h)
{
    if (h->slot < 0) {
        close(h->fd);
        return;
    }
    int fd = -1;
    pthread_mutex_lock(&st->mtx);
    struct fdent *e = &st->cache[h->slot];
    if (--e->refs == 0 && e->doomed) {
        fd = e->fd;
        e->used = 0;
        e->doomed = 0;
    }
    pthread_mutex_unlock(&st->mtx);
    if (fd >= 0)
        close(fd);
}

/* ---- the ops ------------------------------------------------------------- */

static int mkdir_p(const char *dir)
{
    char p[4096];
    if (snprintf(p, sizeof(p), "%s", dir) >= (int)sizeof(p)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            if (mkdir(p, 0700) != 0 && errno != EEXIST)
                return -1;
            *s = '/';
        }
    if (mkdir(p, 0700) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

static int px_open(const char *dir, struct pfs_store **out)
{
    if (!dir || !*dir || !out)
        return PIO_EINVAL;
    *out = NULL;
    if (mkdir_p(dir) != 0)
        return pio_from_errno(errno);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return pio_from_errno(errno);
    if (mkdirat(dfd, "objects", 0700) != 0 && errno != EEXIST) {
        int rc = pio_from_errno(errno);
        close(dfd);
        return rc;
    }
    int ofd = openat(dfd, "objects", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = ofd < 0 ? pio_from_errno(errno) : PIO_OK;
    close(dfd);
    if (rc != PIO_OK)
        return rc;
    for (unsigned i = 0; i < 256; i++) {
        char sub[4];
        snprintf(sub, sizeof(sub), "%02x", i);
        if (mkdirat(ofd, sub, 0700) != 0 && errno != EEXIST) {
            rc = pio_from_errno(errno);
            close(ofd);
            return rc;
        }
    }
    struct pfs_store *st = calloc(1, sizeof(*st));
    if (!st || !(st->dir = strdup(dir))) {
        free(st);
        close(ofd);
        return PIO_ENOMEM;
    }
    st->objfd = ofd;
    st->lanes = 1;
    pthread_mutex_init(&st->mtx, NULL);
    pthread_mutex_init(&st->tmtx, NULL);
    pthread_cond_init(&st->tcv, NULL);
    *out = st;
    return PIO_OK;
}

static void px_close(struct pfs_store *st)
{
    if (!st)
        return;
    for (int i = 0; i < CACHE_N; i++)
        if (st->cache[i].used)
            close(st->cache[i].fd);
    close(st->objfd);
    pthread_cond_destroy(&st->tcv);
    pthread_mutex_destroy(&st->tmtx);
    pthread_mutex_destroy(&st->mtx);
    free(st->dir);
    free(st);
}

static int px_write(struct pfs_store *st, uint64_t fid, uint64_t off, const void *buf, size_t n)
{
    if (n == 0)
        return PIO_OK;
    if (off > (uint64_t)INT64_MAX - n)
        return PIO_EINVAL;
    uint64_t rate = 0;
    int lanes = 1;
    struct timespec t0;
    int lane = lane_take(st, &rate, &lanes);
    if (lane)
        clock_gettime(CLOCK_MONOTONIC, &t0);
    struct handle h;
    int rc = fd_get(st, fid, 1, &h);
    if (rc == PIO_OK) {
        const uint8_t *p = buf;
        size_t done = 0;
        while (done < n) {
            ssize_t k = pwrite(h.fd, p + done, n - done, (off_t)(off + done));
            if (k < 0) {
                if (errno == EINTR)
                    continue;
                rc = pio_from_errno(errno);
                break;
            }
            if (k == 0) { /* no progress and no error: call it full */
                rc = PIO_ENOSPC;
                break;
            }
            done += (size_t)k;
        }
        fd_put(st, &h);
    }
    if (lane)
        lane_give(st, &t0, n, rate, lanes);
    return rc;
}

static int px_read(struct pfs_store *st, uint64_t fid, uint64_t off, void *buf, size_t n,
                   size_t *got)
{
    *got = 0;
    if (n == 0)
        return PIO_OK;
    if (off > (uint64_t)INT64_MAX - n)
        return PIO_EINVAL;
    uint64_t rate = 0;
    int lanes = 1;
    struct timespec t0;
    int lane = lane_take(st, &rate, &lanes);
    if (lane)
        clock_gettime(CLOCK_MONOTONIC, &t0);
    struct handle h;
    int rc = fd_get(st, fid, 0, &h);
    size_t done = 0;
    if (rc == PIO_ENOENT) {
        rc = PIO_OK; /* missing: empty */
    } else if (rc == PIO_OK) {
        uint8_t *p = buf;
        while (done < n) {
            ssize_t k = pread(h.fd, p + done, n - done, (off_t)(off + done));
            if (k < 0) {
                if (errno == EINTR)
                    continue;
                rc = pio_from_errno(errno);
                break;
            }
            if (k == 0)
                break; /* the object's end */
            done += (size_t)k;
        }
        fd_put(st, &h);
    }
    if (lane)
        lane_give(st, &t0, done, rate, lanes);
    *got = rc == PIO_OK ? done : 0;
    return rc;
}

static int px_truncate(struct pfs_store *st, uint64_t fid, uint64_t size)
{
    if (size > (uint64_t)INT64_MAX)
        return PIO_EINVAL;
    struct handle h;
    int rc = fd_get(st, fid, size > 0, &h);
    if (rc == PIO_ENOENT)
        return PIO_OK; /* missing and truncated to 0: nothing to do */
    if (rc != PIO_OK)
        return rc;
    while (ftruncate(h.fd, (off_t)size) != 0) {
        if (errno != EINTR) {
            rc = pio_from_errno(errno);
            break;
        }
    }
    fd_put(st, &h);
    return rc;
}

static int px_destroy(struct pfs_store *st, uint64_t fid)
{
    char name[32];
    obj_name(fid, name, sizeof(name));
    int rc = PIO_OK;
    if (unlinkat(st->objfd, name, 0) != 0 && errno != ENOENT)
        rc = pio_from_errno(errno);
    int fd = -1;
    pthread_mutex_lock(&st->mtx);
    st->gen++;
    for (int i = 0; i < CACHE_N; i++) {
        struct fdent *e = &st->cache[i];
        if (e->used && !e->doomed && e->fid == fid) {
            if (e->refs == 0) {
                fd = e->fd;
                e->used = 0;
            } else {
                e->doomed = 1;
            }
        }
    }
    pthread_mutex_unlock(&st->mtx);
    if (fd >= 0)
        close(fd);
    return rc;
}

static int px_sync(struct pfs_store *st, uint64_t fid)
{
    struct handle h;
    int rc = fd_get(st, fid, 0, &h);
    if (rc == PIO_ENOENT)
        return PIO_OK;
    if (rc != PIO_OK)
        return rc;
    while (fdatasync(h.fd) != 0) {
        if (errno != EINTR) {
            rc = pio_from_errno(errno);
            break;
        }
    }
    fd_put(st, &h);
    return rc;
}

static int px_size(struct pfs_store *st, uint64_t fid, uint64_t *size)
{
    char name[32];
    obj_name(fid, name, sizeof(name));
    struct stat sb;
    *size = 0;
    if (fstatat(st->objfd, name, &sb, 0) != 0)
        return errno == ENOENT ? PIO_OK : pio_from_errno(errno);
    *size = (uint64_t)sb.st_size;
    return PIO_OK;
}

/* used = the sum of the objects' sizes (their logical bytes), found by a walk
 * of the 256 directories; avail = what statvfs says an unprivileged user may
 * still write. */
static int px_df(struct pfs_store *st, uint64_t *used, uint64_t *avail, uint64_t *objects)
{
    *used = *avail = *objects = 0;
    struct statvfs vs;
    if (fstatvfs(st->objfd, &vs) != 0)
        return pio_from_errno(errno);
    *avail = (uint64_t)vs.f_bavail * (uint64_t)vs.f_frsize;
    for (unsigned i = 0; i < 256; i++) {
        char sub[4];
        snprintf(sub, sizeof(sub), "%02x", i);
        int dfd = openat(st->objfd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
            if (errno == ENOENT)
                continue;
            return pio_from_errno(errno);
        }
        DIR *d = fdopendir(dfd);
        if (!d) {
            int rc = pio_from_errno(errno);
            close(dfd);
            return rc;
        }
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (de->d_name[0] == '.')
                continue;
            struct stat sb;
            if (fstatat(dfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode))
                continue; /* destroyed meanwhile, or not ours */
            *used += (uint64_t)sb.st_size;
            (*objects)++;
        }
        closedir(d);
    }
    return PIO_OK;
}

const struct pfs_store_ops pfs_store_posix = {
    .name = "posix",
    .open = px_open,
    .close = px_close,
    .write = px_write,
    .read = px_read,
    .truncate = px_truncate,
    .destroy = px_destroy,
    .sync = px_sync,
    .size = px_size,
    .df = px_df,
};

/* Every backend, by name: the one registration point. */
static const struct pfs_store_ops *const backends[] = {&pfs_store_posix};

const struct pfs_store_ops *pfs_store_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
        if (strcmp(backends[i]->name, name) == 0)
            return backends[i];
    return NULL;
}
