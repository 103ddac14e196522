/* preload.c - libanco.so: the LD_PRELOAD library through which an unmodified
 * program reads the files under $ANCO_PATHS via anco, its job's cooperative
 * read cache (anco.h).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * What is served. A read-only open (O_RDONLY without O_CREAT, O_TRUNC,
 * O_PATH, O_DIRECTORY) of a non-empty regular file (not /proc's, which say
 * size 0) whose path, made absolute against the cwd (or openat's directory)
 * and cleaned of ".", ".." and repeated slashes without resolving links, is
 * one of the colon-separated directories of $ANCO_PATHS or under one, and
 * names the very file libc opened (same
 * device and inode: a ".." after a link can make the two differ). libc opens
 * it too, so the program holds a real descriptor: fstat, mmap, fcntl,
 * posix_fadvise act on it unhooked. The library records descriptor ->
 * (anco_file, position): read, readv, pread, preadv and their 64-bit and
 * fortified twins are anco_pread; lseek moves the recorded position (SEEK_END
 * from the size anco_open gave); close forgets the record. After every read
 * or seek the kernel's position is set to the recorded one (one lseek), so
 * what runs on the descriptor behind our back (a fork or exec child, a
 * passthrough after a failure) reads on from the right place. dup, dup2,
 * dup3 and fcntl(F_DUPFD*) share the record, as duplicates share an open
 * file description (dd opens its input and dup2()s it onto 0). glibc's fopen
 * opens with its internal open, which no preload library sees: fopen and
 * fopen64 of a served path in a read mode (and fdopen of a served descriptor)
 * give a stream made with fopencookie whose reads, seeks and close are ours
 * (md5sum reads with fopen and fread); its fileno is -1. copy_file_range from
 * a served descriptor fails with EXDEV (cat and cp then read and write);
 * sendfile from one reads through the cache into a bounce buffer.
 * Everything else goes to libc. On a descriptor that is not served a hook
 * costs one relaxed load of the descriptor's slot in apl_fds (and the load of
 * libc's function pointer); an open that is not read-only costs a flag test.
 *
 * Why each hook (nm -D --undefined-only and ltrace, Debian 12, coreutils 9.1):
 *   md5sum  fopen fread_unlocked fileno lseek(fileno, 0, SEEK_CUR) fclose
 *           posix_fadvise (gnulib's fclose seeks the stream's descriptor)
 *   cat     open fstat posix_fadvise read close (copy_file_range when the
 *           output is a regular file)
 *   dd      open dup2(3, 0) close(3) lseek(0, 0, SEEK_CUR) read(0) close
 *   cp      open openat fstat read copy_file_range ioctl(FICLONE) close
 * Python adds open64, readv, pread64, lseek64, sendfile, fopen64, fdopen.
 *
 * When. Nothing happens before the first served open: it makes this process
 * rank R of a job of S (the launcher's environment: Open MPI, PMI, PMIx,
 * Slurm; else $ANCO_RANK/$ANCO_SIZE; else 0 of 1) and calls anco_init (block,
 * cache, groups from the environment; application $ANCO_APP, else "anco-"
 * and the launcher's job id, else "anco"), once, under apl_init_mtx. If that
 * fails, stderr says so in one line ("libanco: ...: serving reads without the
 * cache") and everything goes to libc from then on. At exit (a destructor:
 * after the program's atexit handlers) a process that joined prints its
 * counters when $ANCO_STATS is set (anco_print_stats, to a copy of stderr
 * taken when joining: coreutils close stderr before destructors run) and calls
 * anco_finalize, which waits for the job's other processes: no process's
 * cache goes away while another may read it.
 *
 * What libpgas.so does alike lives in common/interpose.c, compiled into
 * both libraries hidden: libc's functions behind the hooks (PIO_IP_REAL),
 * the descriptor table (apl_fds), open's and fcntl's optional arguments,
 * the fopencookie streams, the one-line messages (pio_ip_say).
 *
 * Locks, in the order they may be taken (never leftwards):
 *   apl_init_mtx   joining the job (held across anco_init)
 *   apl_file.mtx   one record's position, held across the anco_pread of a
 *                  read (so concurrent reads of one descriptor do not overlap)
 *   anco's own lock, inside anco
 * apl_fds.mtx (slot updates and the reference counts) is only held alone and
 * never across a call into anco or libc's I/O.
 *
 * Re-entry. anco reads the files it caches through open and pread, and
 * libpio opens what it needs, and in this process those names are our
 * hooks. A thread-local flag (apl_inside), set around every call into anco,
 * sends them to libc untouched.
 *
 * fork. A pthread_atfork child handler empties the table and, when the
 * parent had joined, switches the child off: the parent's anco is not the
 * child's. The child's served descriptors are plain descriptors at the right
 * kernel position. A vfork child shares our memory without that handler:
 * close and dup in a process other than the one that joined leave the table
 * alone.
 *
 * Not served (they work, through libc, uncached): mmap, ioctl(FICLONE) (cp
 * may clone instead of reading), readahead, a descriptor at or above
 * PIO_IP_FD_MAX (65536), a stream from freopen. A descriptor closed behind
 * our back (by libc itself) keeps its record until the number comes back
 * from an open or dup. A parent does not see its position move when a child
 * reads from a descriptor they share (the position is ours, the kernel's
 * only a copy). Processes that exit with _exit, or that never open a served
 * file, do not reach the barrier of anco_finalize: the others wait there
 * (up to $ANCO_BARRIER_TIMEOUT seconds). A thread still reading at exit
 * races with the destructor.
 */
#include "anco.h"
#include "interpose.h"
#include "pio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

_Static_assert(sizeof(off_t) == 8 && sizeof(off_t) == sizeof(off64_t), "libanco.so is for LP64");

#define APL_BOUNCE    (1u << 20) /* sendfile's buffer, at most */
#define APL_STATS_ENV "ANCO_STATS"

/* ---- state ------------------------------------------------------------- */

/* One served open; shared by the descriptors dup'ed from it. */
struct apl_file {
    struct pio_ip_rec rec; /* first: the references, under apl_fds.mtx */
    anco_file *f;
    uint64_t size;       /* from anco_open */
    pthread_mutex_t mtx; /* guards pos */
    uint64_t pos;
    char path[]; /* the clean absolute path, for messages */
};

enum apl_state { APL_NEW, APL_ON, APL_OFF };

static struct pio_ip_fds apl_fds = {.mtx = PTHREAD_MUTEX_INITIALIZER}; /* owner: who joined */

static atomic_int apl_state; /* enum apl_state */
static pthread_mutex_t apl_init_mtx = PTHREAD_MUTEX_INITIALIZER;
static anco *apl_anco; /* set under apl_init_mtx before apl_state is APL_ON */
static atomic_int apl_told_open, apl_told_read;
static int apl_errfd = -1; /* a copy of stderr for the counters at exit, when $ANCO_STATS */
static dev_t apl_err_dev;  /* what apl_errfd was, to see at exit that it still is */
static ino_t apl_err_ino;
static _Thread_local int apl_inside; /* in a call into anco: every hook is libc */

/* $ANCO_PATHS, clean and absolute ("" is the root); parsed once */
static char **apl_pfx;
static size_t apl_npfx;
static pthread_once_t apl_pfx_once = PTHREAD_ONCE_INIT;

/* ---- small helpers ----------------------------------------------------- */

/* apl_wants - whether open flags ask for what can be served. */
static int apl_wants(int flags)
{
    return (flags & O_ACCMODE) == O_RDONLY && !(flags & (O_CREAT | O_TRUNC | O_PATH | O_DIRECTORY));
}

/* apl_read_mode - whether a stdio mode only reads (no "+", no ",ccs="). */
static int apl_read_mode(const char *mode)
{
    return mode && mode[0] == 'r' && !strchr(mode, '+') && !strchr(mode, ',');
}

/* ---- paths ------------------------------------------------------------- */

/* apl_push - append the components of s to the clean absolute path out[0,
 * *len) ("" is the root): "." and empty ones skipped, ".." drops the last.
 * 0, or -1 when the result would not fit in PATH_MAX. */
static int apl_push(char *out, size_t *len, const char *s)
{
    while (*s) {
        const char *e = strchrnul(s, '/');
        size_t n = (size_t)(e - s);

        if (n == 2 && s[0] == '.' && s[1] == '.') {
            while (*len > 0 && out[*len - 1] != '/')
                (*len)--;
            if (*len > 0)
                (*len)--;
        } else if (n > 0 && !(n == 1 && s[0] == '.')) {
            if (*len + 1 + n >= PATH_MAX)
                return -1;
            out[(*len)++] = '/';
            memcpy(out + *len, s, n);
            *len += n;
        }
        s = *e ? e + 1 : e;
    }
    out[*len] = '\0';
    return 0;
}

/* apl_absolute - (dirfd, path) as a clean absolute path into out[PATH_MAX]
 * ("" is the root). 0, or -1 (too long, the base unknown). errno kept. */
static int apl_absolute(int dirfd, const char *path, char *out, size_t *len)
{
    char base[PATH_MAX], link[40];
    int e = errno, r = 0;
    ssize_t n;

    *len = 0;
    out[0] = '\0';
    if (path[0] != '/') {
        if (dirfd == AT_FDCWD) {
            r = getcwd(base, sizeof(base)) && base[0] == '/' ? 0 : -1;
        } else {
            snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
            n = readlink(link, base, sizeof(base) - 1);
            r = n > 0 && base[0] == '/' ? 0 : -1;
            if (r == 0)
                base[n] = '\0';
        }
        if (r == 0)
            r = apl_push(out, len, base);
    }
    if (r == 0)
        r = apl_push(out, len, path);
    errno = e;
    return r;
}

/* apl_pfx_parse - $ANCO_PATHS into apl_pfx (pthread_once). */
static void apl_pfx_parse(void)
{
    const char *s = getenv("ANCO_PATHS");
    char *copy, *tok, *save = NULL, abs[PATH_MAX];
    size_t n = 1, len;

    if (!s || !*s)
        return;
    for (const char *p = s; *p; p++)
        n += *p == ':';
    copy = strdup(s);
    apl_pfx = calloc(n, sizeof(*apl_pfx));
    if (!copy || !apl_pfx) {
        pio_ip_say("libanco: out of memory reading ANCO_PATHS: nothing is served");
        free(copy);
        free(apl_pfx);
        apl_pfx = NULL;
        return;
    }
    for (tok = strtok_r(copy, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
        if (apl_absolute(AT_FDCWD, tok, abs, &len) < 0 || !(apl_pfx[apl_npfx] = strdup(abs)))
            pio_ip_say("libanco: ANCO_PATHS entry \"%s\" ignored (too long, or no memory)", tok);
        else
            apl_npfx++;
    }
    free(copy);
}

/* apl_under - whether the clean absolute path abs is (under) a prefix. */
static int apl_under(const char *abs)
{
    for (size_t i = 0; i < apl_npfx; i++) {
        size_t n = strlen(apl_pfx[i]);

        if (strncmp(abs, apl_pfx[i], n) == 0 && (abs[n] == '\0' || abs[n] == '/'))
            return 1;
    }
    return 0;
}

/* apl_wanted_path - whether (dirfd, path) is under $ANCO_PATHS; its clean
 * absolute path into abs[PATH_MAX] (the root as "/"). */
static int apl_wanted_path(int dirfd, const char *path, char *abs)
{
    size_t len;

    pthread_once(&apl_pfx_once, apl_pfx_parse);
    if (!apl_npfx || !path || !*path || apl_absolute(dirfd, path, abs, &len) < 0 || !apl_under(abs))
        return 0;
    if (len == 0)
        strcpy(abs, "/");
    return 1;
}

/* ---- joining the job --------------------------------------------------- */

/* apl_env_num - $name as a non-negative int into *v: 1, 0 (unset or empty),
 * -1 (not such a number). */
static int apl_env_num(const char *name, int *v)
{
    const char *s = getenv(name);
    char *end;
    long x;

    if (!s || !*s)
        return 0;
    errno = 0;
    x = strtol(s, &end, 10);
    if (errno || *end || x < 0 || x > INT_MAX)
        return -1;
    *v = (int)x;
    return 1;
}

/* apl_rank - this process's rank and the job's size from the launcher's
 * environment (the first pair of variables that are both set). 0, or -1
 * (said on stderr). */
static int apl_rank(int *rank, int *size)
{
    static const char *const vars[][2] = {
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
        {"PMI_RANK", "PMI_SIZE"},
        {"PMIX_RANK", "OMPI_COMM_WORLD_SIZE"},
        {"SLURM_PROCID", "SLURM_NTASKS"},
        {"ANCO_RANK", "ANCO_SIZE"},
    };
    int r = 0, s = 0, kr, ks;

    *rank = 0;
    *size = 1;
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        kr = apl_env_num(vars[i][0], &r);
        ks = apl_env_num(vars[i][1], &s);
        if (kr == 0 || ks == 0)
            continue;
        if (kr < 0 || ks < 0 || r >= s || s == 0) {
            pio_ip_say("libanco: %s=%s and %s=%s are not a rank and a size: "
                       "serving reads without the cache",
                       vars[i][0], getenv(vars[i][0]), vars[i][1], getenv(vars[i][1]));
            return -1;
        }
        *rank = r;
        *size = s;
        return 0;
    }
    return 0;
}

/* apl_app - the PIO application name of the job into out[cap]. */
static void apl_app(char *out, size_t cap)
{
    static const char *const ids[] = {"OMPI_MCA_ess_base_jobid", "SLURM_JOB_ID", "PMIX_NAMESPACE"};
    const char *s = getenv("ANCO_APP"), *step;

    if (s && *s) {
        snprintf(out, cap, "%s", s);
        return;
    }
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        s = getenv(ids[i]);
        if (!s || !*s)
            continue;
        step = i == 1 ? getenv("SLURM_STEP_ID") : NULL; /* one anco job per Slurm step */
        if (step && *step)
            snprintf(out, cap, "anco-%s.%s", s, step);
        else
            snprintf(out, cap, "anco-%s", s);
        return;
    }
    snprintf(out, cap, "anco");
}

/* apl_stderr_copy - when $ANCO_STATS is set, a close-on-exec copy of
 * descriptor 2 (away from the low numbers programs expect), else -1: by
 * the time the destructor runs, many programs (coreutils' close_stdout)
 * have closed stderr. */
static int apl_stderr_copy(void)
{
    const char *stats = getenv(APL_STATS_ENV);
    struct stat st;
    int fd;

    if (!stats || !*stats)
        return -1;
    fd = PIO_IP_REAL(fcntl)(2, F_DUPFD_CLOEXEC, 100);
    if (fd < 0)
        fd = PIO_IP_REAL(fcntl)(2, F_DUPFD_CLOEXEC, 3);
    if (fd >= 0 && fstat(fd, &st) < 0) {
        PIO_IP_REAL(close)(fd);
        fd = -1;
    }
    if (fd >= 0) {
        apl_err_dev = st.st_dev;
        apl_err_ino = st.st_ino;
    }
    return fd;
}

/* apl_stderr_same - whether apl_errfd is still our copy (a program may
 * have closed every descriptor above 2, and the number may be another
 * file's now). */
static int apl_stderr_same(void)
{
    struct stat st;

    return apl_errfd >= 0 && fstat(apl_errfd, &st) == 0 && st.st_dev == apl_err_dev &&
           st.st_ino == apl_err_ino;
}

/* apl_join - anco_init as this process of the job; sets apl_state. Under
 * apl_init_mtx. */
static void apl_join(void)
{
    char app[PIO_NAME_MAX];
    const char *sock = getenv("PIO_SOCKET");
    anco_config cfg;
    anco *a = NULL;
    int rank, size, rc;

    if (apl_rank(&rank, &size) < 0) {
        atomic_store(&apl_state, APL_OFF);
        return;
    }
    apl_app(app, sizeof(app));
    anco_config_default(&cfg);
    cfg.app = app;
    apl_inside = 1;
    rc = anco_init(&cfg, rank, size, &a);
    apl_inside = 0;
    if (rc != PIO_OK) {
        pio_ip_say("libanco: cannot join the cache as process %d of %d of \"%s\" (piod at %s): %s: "
                   "serving reads without the cache",
                   rank, size, app, sock && *sock ? sock : "/run/pio/piod.sock", PIO_Strerror(rc));
        atomic_store(&apl_state, APL_OFF);
        return;
    }
    apl_anco = a;
    apl_errfd = apl_stderr_copy();
    pio_ip_own(&apl_fds);
    atomic_store(&apl_state, APL_ON);
}

/* apl_start - join the job on first use: 1 when anco serves, else 0. */
static int apl_start(void)
{
    int st = atomic_load(&apl_state);

    if (st != APL_NEW)
        return st == APL_ON;
    pthread_mutex_lock(&apl_init_mtx);
    if (atomic_load(&apl_state) == APL_NEW)
        apl_join();
    pthread_mutex_unlock(&apl_init_mtx);
    return atomic_load(&apl_state) == APL_ON;
}

/* apl_mine - whether this process is the one that joined (not a vfork
 * child sharing our memory). */
static int apl_mine(void)
{
    return pio_ip_mine(&apl_fds);
}

/* ---- the descriptor table ---------------------------------------------- */

/* apl_slot - whether fd has a record (the hooks' fast path). */
static int apl_slot(int fd)
{
    return pio_ip_has(&apl_fds, fd);
}

/* apl_get - fd's record with a reference (dropped by apl_put), or NULL when
 * fd is not served now (no record, anco off, or a call from inside anco). */
static struct apl_file *apl_get(int fd)
{
    if (!apl_slot(fd) || apl_inside || atomic_load(&apl_state) != APL_ON)
        return NULL;
    return (struct apl_file *)pio_ip_get(&apl_fds, fd);
}

/* apl_put - drop a reference; the last one closes the anco file and frees
 * f. errno kept. */
static void apl_put(struct apl_file *f)
{
    int e = errno;

    if (!pio_ip_unref(&apl_fds, &f->rec))
        return;
    if (atomic_load(&apl_state) == APL_ON && apl_mine()) {
        apl_inside = 1;
        (void)anco_close(f->f); /* forgetting cannot fail in a way we could act on */
        apl_inside = 0;
    }
    pthread_mutex_destroy(&f->mtx);
    free(f);
    errno = e;
}

/* apl_install - put f (NULL: nothing) in fd's slot, taking over the
 * caller's reference; returns what was there (its reference now the
 * caller's). fd < PIO_IP_FD_MAX. */
static struct apl_file *apl_install(int fd, struct apl_file *f)
{
    return (struct apl_file *)pio_ip_install(&apl_fds, fd, f ? &f->rec : NULL);
}

/* apl_drop - forget fd's record (closed, or closed behind our back). */
static void apl_drop(int fd)
{
    struct apl_file *old;

    if (!apl_slot(fd) || !apl_mine())
        return;
    old = apl_install(fd, NULL);
    if (old)
        apl_put(old);
}

/* apl_dup_to - newfd (a result of dup, dup2, dup3, fcntl(F_DUPFD)) now
 * shares oldfd's record, or has none. Returns newfd. */
static int apl_dup_to(int oldfd, int newfd)
{
    struct apl_file *old;

    if (newfd < 0 || newfd == oldfd || (!apl_slot(oldfd) && !apl_slot(newfd)) || !apl_mine())
        return newfd;
    if ((unsigned)newfd >= PIO_IP_FD_MAX) /* not served: libc reads at the kernel's position */
        return newfd;
    old = apl_install(newfd, (struct apl_file *)pio_ip_get(&apl_fds, oldfd));
    if (old)
        apl_put(old);
    return newfd;
}

/* serve_fcntl - the fcntl and fcntl64 hooks, real being libc's: what
 * F_DUPFD and F_DUPFD_CLOEXEC make shares fd's record. */
static int serve_fcntl(int fd, int cmd, void *arg, int (*real)(int, int, ...))
{
    int r = real(fd, cmd, arg);

    return cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC ? apl_dup_to(fd, r) : r;
}

/* ---- serving ----------------------------------------------------------- */

/* apl_serve - record fd, just opened read-only by libc from (dirfd, path),
 * when it is a regular file under $ANCO_PATHS and anco serves. errno kept. */
static void apl_serve(int dirfd, const char *path, int fd)
{
    char abs[PATH_MAX];
    struct stat sf, sp;
    struct apl_file *f, *old;
    int e = errno, rc;

    if ((unsigned)fd >= PIO_IP_FD_MAX || !apl_wanted_path(dirfd, path, abs) || fstat(fd, &sf) < 0 ||
        !S_ISREG(sf.st_mode) || sf.st_size == 0 || stat(abs, &sp) < 0 || sp.st_dev != sf.st_dev ||
        sp.st_ino != sf.st_ino || !apl_start())
        goto out;
    f = malloc(sizeof(*f) + strlen(abs) + 1);
    if (!f)
        goto out;
    strcpy(f->path, abs);
    apl_inside = 1;
    rc = anco_open(apl_anco, abs, &f->f, &f->size);
    apl_inside = 0;
    if (rc != PIO_OK) {
        if (!atomic_exchange(&apl_told_open, 1))
            pio_ip_say("libanco: %s: anco_open: %s: reading it without the cache "
                       "(later such files not reported)",
                       abs, PIO_Strerror(rc));
        free(f);
        goto out;
    }
    pthread_mutex_init(&f->mtx, NULL);
    f->rec.refs = 1;
    f->pos = 0;
    old = apl_install(fd, f);
    if (old)
        apl_put(old);
out:
    errno = e;
}

/* apl_opened - after libc's open of (dirfd, path) with flags gave fd: drop
 * a stale record of that number, serve it when it should be. Returns fd. */
static int apl_opened(int dirfd, const char *path, int flags, int fd)
{
    if (fd < 0)
        return fd;
    if (apl_slot(fd))
        apl_drop(fd); /* its old descriptor was closed behind our back */
    if (apl_wants(flags) && atomic_load_explicit(&apl_state, memory_order_relaxed) != APL_OFF &&
        !apl_inside)
        apl_serve(dirfd, path, fd);
    return fd;
}

/* apl_pread_f - up to n bytes of f at off through the cache; when anco
 * fails, through libc on fd (said once). Bytes, or -1 (errno). */
static ssize_t apl_pread_f(struct apl_file *f, int fd, void *buf, size_t n, uint64_t off)
{
    size_t got = 0;
    int rc;

    if (n > SSIZE_MAX)
        n = SSIZE_MAX;
    if (n == 0)
        return 0;
    apl_inside = 1;
    rc = anco_pread(f->f, buf, n, off, &got);
    apl_inside = 0;
    if (rc == PIO_OK)
        return (ssize_t)got;
    if (!atomic_exchange(&apl_told_read, 1))
        pio_ip_say("libanco: %s: anco_pread: %s: reading without the cache (said once)", f->path,
                   PIO_Strerror(rc));
    return PIO_IP_REAL(pread)(fd, buf, n, (off_t)off);
}

/* apl_moved - f's position (and fd's kernel position) is now pos. Under
 * f->mtx. */
static void apl_moved(struct apl_file *f, int fd, uint64_t pos)
{
    int e = errno;

    f->pos = pos;
    (void)PIO_IP_REAL(lseek)(fd, (off_t)pos, SEEK_SET); /* only a mirror for libc's users */
    errno = e;
}

/* apl_preadv_f - the buffers of iov in turn from off; stops at a short
 * read. Bytes, or -1 (errno) when nothing was read. */
static ssize_t apl_preadv_f(struct apl_file *f, int fd, const struct iovec *iov, int cnt,
                            uint64_t off)
{
    ssize_t total = 0, r;

    if (cnt < 0 || cnt > IOV_MAX)
        return pio_ip_fail(EINVAL);
    for (int i = 0; i < cnt; i++) {
        r = apl_pread_f(f, fd, iov[i].iov_base, iov[i].iov_len, off + (uint64_t)total);
        if (r < 0)
            return total > 0 ? total : -1;
        total += r;
        if ((size_t)r < iov[i].iov_len)
            break;
    }
    return total;
}

/* apl_readv - readv of served fd at off (< 0: at its position, which
 * moves), or PIO_IP_NOT_OURS. */
static ssize_t apl_readv(int fd, const struct iovec *iov, int cnt, off_t off)
{
    struct apl_file *f = apl_get(fd);
    ssize_t r;

    if (!f)
        return PIO_IP_NOT_OURS;
    if (off >= 0) {
        r = apl_preadv_f(f, fd, iov, cnt, (uint64_t)off);
    } else {
        pthread_mutex_lock(&f->mtx);
        r = apl_preadv_f(f, fd, iov, cnt, f->pos);
        if (r > 0)
            apl_moved(f, fd, f->pos + (uint64_t)r);
        pthread_mutex_unlock(&f->mtx);
    }
    apl_put(f);
    return r;
}

/* serve_readv - the readv family: at the position (pos) or at off >= 0. */
static ssize_t serve_readv(int fd, const struct iovec *iov, int cnt, off_t off, int pos)
{
    if (!apl_slot(fd) || (!pos && off < 0)) /* libc says EINVAL to a negative offset */
        return PIO_IP_NOT_OURS;
    return apl_readv(fd, iov, cnt, pos ? -1 : off);
}

/* serve_read - one buffer: read (pos) or pread (off >= 0). */
static ssize_t serve_read(int fd, void *buf, size_t n, off_t off, int pos)
{
    struct iovec v = {buf, n};

    return serve_readv(fd, &v, 1, off, pos);
}

static off_t serve_lseek(int fd, off_t off, int whence)
{
    struct apl_file *f;
    off_t base, to;

    if (!apl_slot(fd) || !(f = apl_get(fd)))
        return PIO_IP_NOT_OURS;
    pthread_mutex_lock(&f->mtx);
    switch (whence) {
    case SEEK_SET: base = 0; break;
    case SEEK_CUR: base = (off_t)f->pos; break;
    case SEEK_END: base = (off_t)f->size; break;
    case SEEK_DATA:
    case SEEK_HOLE:
        to = PIO_IP_REAL(lseek)(fd, off, whence); /* the kernel knows the holes */
        if (to >= 0)
            f->pos = (uint64_t)to;
        goto out;
    default: to = pio_ip_fail(EINVAL); goto out;
    }
    if (__builtin_add_overflow(base, off, &to))
        to = pio_ip_fail(EOVERFLOW);
    else if (to < 0)
        to = pio_ip_fail(EINVAL);
    else if ((uint64_t)to != f->pos)
        apl_moved(f, fd, (uint64_t)to);
out:
    pthread_mutex_unlock(&f->mtx);
    apl_put(f);
    return to;
}

/* serve_sendfile - sendfile from served descriptor in: one piece of at
 * most APL_BOUNCE bytes through the cache, written to out. PIO_IP_NOT_OURS,
 * bytes or -1. */
static ssize_t serve_sendfile(int out, int in, off_t *offp, size_t count)
{
    struct apl_file *f;
    ssize_t r, w;
    uint64_t start;
    char *buf;

    if (!apl_slot(in) || !(f = apl_get(in)))
        return PIO_IP_NOT_OURS;
    if (offp && *offp < 0) {
        r = pio_ip_fail(EINVAL);
        goto put;
    }
    if (count > APL_BOUNCE)
        count = APL_BOUNCE;
    buf = malloc(count ? count : 1);
    if (!buf) {
        r = pio_ip_fail(ENOMEM);
        goto put;
    }
    if (!offp)
        pthread_mutex_lock(&f->mtx);
    start = offp ? (uint64_t)*offp : f->pos;
    r = apl_pread_f(f, in, buf, count, start);
    if (r > 0) {
        w = write(out, buf, (size_t)r);
        r = w;
    }
    if (r > 0 && offp)
        *offp += r;
    else if (r > 0)
        apl_moved(f, in, start + (uint64_t)r);
    if (!offp)
        pthread_mutex_unlock(&f->mtx);
    free(buf);
put:
    apl_put(f);
    return r;
}

/* ---- stdio ------------------------------------------------------------- */

/* serve_fopen - fopen of a path that may be served: glibc's fopen opens
 * with its internal open, so a served path gets a stream of ours
 * (read-only). */
static FILE *serve_fopen(const char *path, const char *mode,
                         FILE *(*real)(const char *, const char *))
{
    char abs[PATH_MAX];
    int flags, fd;

    if (!apl_read_mode(mode) || atomic_load_explicit(&apl_state, memory_order_relaxed) == APL_OFF ||
        apl_inside || !apl_wanted_path(AT_FDCWD, path, abs))
        return real(path, mode);
    flags = O_RDONLY | (strchr(mode, 'e') ? O_CLOEXEC : 0);
    fd = apl_opened(AT_FDCWD, path, flags, PIO_IP_REAL(open)(path, flags));
    if (fd < 0)
        return NULL;
    if (!apl_slot(fd)) { /* not served after all (not a regular file, anco off) */
        PIO_IP_REAL(close)(fd);
        return real(path, mode);
    }
    return pio_ip_stream_or_close(fd, "r");
}

/* ---- fork and exit ----------------------------------------------------- */

static void apl_atfork_child(void)
{
    pio_ip_forget_all(&apl_fds);
    apl_init_mtx = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    if (atomic_load(&apl_state) == APL_ON)
        atomic_store(&apl_state, APL_OFF); /* the parent's anco is not ours */
}

__attribute__((constructor)) static void apl_init(void)
{
    (void)PIO_IP_REAL(open);
    (void)PIO_IP_REAL(read);
    (void)PIO_IP_REAL(lseek);
    (void)PIO_IP_REAL(close);
    pthread_atfork(NULL, NULL, apl_atfork_child);
}

/* apl_fini - at exit, in the process that joined: the counters, then
 * anco_finalize (the job's barrier). From here on every hook is libc's. */
__attribute__((destructor)) static void apl_fini(void)
{
    FILE *err;
    int rc;

    if (atomic_load(&apl_state) != APL_ON || !apl_mine())
        return;
    atomic_store(&apl_state, APL_OFF);
    apl_inside = 1;
    if (apl_stderr_same() && (err = PIO_IP_REAL(fdopen)(apl_errfd, "w"))) {
        anco_print_stats(apl_anco, err);
        fclose(err);
    } else if (apl_stderr_same()) {
        PIO_IP_REAL(close)(apl_errfd);
    }
    apl_errfd = -1;
    rc = anco_finalize(apl_anco);
    if (rc != PIO_OK)
        pio_ip_say("libanco: anco_finalize: %s", PIO_Strerror(rc));
    apl_anco = NULL;
    apl_inside = 0;
}

/* ---- the hooks (PIO_IP_READ_HOOKS) ------------------------------------ */

/* served after libc opened it: serve_opened */
static int serve_open(int dirfd, const char *path, int flags, mode_t mode)
{
    (void)dirfd, (void)path, (void)flags, (void)mode;
    return PIO_IP_NOT_OURS;
}

static int serve_opened(int dirfd, const char *path, int flags, mode_t mode, int fd)
{
    (void)mode;
    return apl_opened(dirfd, path, flags, fd);
}

static FILE *serve_fdopen(int fd, const char *mode, FILE *(*real)(int, const char *))
{
    struct apl_file *f;

    if (!apl_slot(fd) || !apl_read_mode(mode) || !(f = apl_get(fd)))
        return real(fd, mode);
    apl_put(f);
    return pio_ip_stream(fd, "r");
}

static int serve_close(int fd)
{
    apl_drop(fd); /* first: the number is free again once libc closed it */
    return PIO_IP_NOT_OURS;
}

static int serve_close_range(unsigned int first, unsigned int last, int flags,
                             int (*real)(unsigned int, unsigned int, int))
{
    int hw = atomic_load(&apl_fds.hw);

    if (!(flags & CLOSE_RANGE_CLOEXEC))
        for (unsigned int fd = first; fd <= last && fd < (unsigned)hw; fd++)
            apl_drop((int)fd);
    return real(first, last, flags);
}

static int serve_dup(int fd, int (*real)(int))
{
    return apl_dup_to(fd, real(fd));
}

static int serve_dup2(int oldfd, int newfd, int (*real)(int, int))
{
    return apl_dup_to(oldfd, real(oldfd, newfd));
}

static int serve_dup3(int oldfd, int newfd, int flags, int (*real)(int, int, int))
{
    return apl_dup_to(oldfd, real(oldfd, newfd, flags));
}

/* refused from a served descriptor: the caller falls back to read and write */
static ssize_t serve_copy_file_range(int in, int out)
{
    struct apl_file *f;

    (void)out;
    if (apl_slot(in) && (f = apl_get(in))) {
        apl_put(f);
        return pio_ip_fail(EXDEV);
    }
    return PIO_IP_NOT_OURS;
}

/* the fortified reads: an overflowing one goes to libc, which aborts;
 * preadv2: offset -1 is the position, the flags are hints we need not take */
PIO_IP_READ_HOOKS(PIO_IP_HOOK)

void closefrom(int lowfd)
{
    int hw = atomic_load(&apl_fds.hw);

    for (int fd = lowfd < 0 ? 0 : lowfd; fd < hw; fd++)
        apl_drop(fd);
    PIO_IP_REAL(closefrom)(lowfd);
}
