/* daemon.c - detach from the terminal with a readiness report, and keep a locked pid file.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * piod_daemonize forks twice; the original process waits on one end of a
 * socket pair until the daemon sends its start-up status (piod_daemon_ready)
 * or dies, and then exits with that status, so `piod` without -f returns only
 * once the daemon serves or has failed. A socket pair rather than a pipe lets
 * the daemon send with MSG_NOSIGNAL: a parent killed meanwhile costs no
 * SIGPIPE. Exiting the waiting parent is this module's contract; nothing else
 * here exits. The pid file is held with flock(2) for the daemon's life: the
 * lock, not the pid written inside, says whether a piod is running, so a file
 * left by a crash is simply taken over. State: the ready socket and the pid
 * file's descriptor, main thread only. Readiness also goes to systemd
 * (sd_notify READY=1) when the service manager asked for it.
 */
#include "daemon.h"
#include "log.h"
#include "err.h"
#include "sdnotify.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define DMN_PATH_MAX 4096

static int dmn_ready_fd = -1; /* daemon's end of the readiness socket */
static int dmn_pid_fd = -1;   /* the locked pid file */
static pid_t dmn_pid_owner;   /* the process that made it */
static char dmn_pid_path[DMN_PATH_MAX];

/* ---- daemonizing -------------------------------------------------------- */

/* In the original process: wait for the daemon's word, then exit with it. */
static void dmn_wait_and_exit(int fd, pid_t child)
{
    int status = 1;
    ssize_t n;
    char *p = (char *)&status;
    size_t got = 0;

    while (got < sizeof(status)) {
        n = read(fd, p + got, sizeof(status) - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
        ;
    if (got < sizeof(status)) {
        fprintf(stderr, "piod: the daemon exited during start-up without saying why (see its "
                        "log, or run piod -f to watch it start)\n");
        status = 1;
    }
    if (status < 0 || status > 255)
        status = 1;
    _exit(status);
}

/* In a child before it could report: say status and leave. */
static void dmn_child_fail(int fd, const char *what)
{
    int status = 1;
    fprintf(stderr, "piod: cannot become a daemon: %s: %s\n", what, strerror(errno));
    (void)!send(fd, &status, sizeof(status), MSG_NOSIGNAL);
    _exit(1);
}

int piod_daemonize(int keep_stderr)
{
    int sv[2], null_fd, e;
    pid_t pid;

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return -1;
    fflush(NULL); /* buffered output is printed once, by the parent */
    pid = fork();
    if (pid < 0) {
        e = errno;
        close(sv[0]);
        close(sv[1]);
        errno = e;
        return -1;
    }
    if (pid > 0) {
        close(sv[1]);
        dmn_wait_and_exit(sv[0], pid);
    }

    /* first child: leave the session, fork the daemon, go */
    close(sv[0]);
    if (setsid() < 0)
        dmn_child_fail(sv[1], "setsid");
    pid = fork();
    if (pid < 0)
        dmn_child_fail(sv[1], "fork");
    if (pid > 0)
        _exit(0);

    /* the daemon: not a session leader, so it never gets a terminal again */
    if (chdir("/") != 0)
        dmn_child_fail(sv[1], "chdir /");
    umask(027);
    null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0)
        dmn_child_fail(sv[1], "open /dev/null");
    if (dup2(null_fd, STDIN_FILENO) < 0 || dup2(null_fd, STDOUT_FILENO) < 0 ||
        (!keep_stderr && dup2(null_fd, STDERR_FILENO) < 0))
        dmn_child_fail(sv[1], "dup2 /dev/null");
    if (null_fd > STDERR_FILENO)
        close(null_fd);
    dmn_ready_fd = sv[1];
    return 0;
}

void piod_daemon_ready(int status)
{
    if (status == 0)
        pio_sd_ready(); /* under systemd (Type=notify): serving now */
    if (dmn_ready_fd < 0)
        return;
    while (send(dmn_ready_fd, &status, sizeof(status), MSG_NOSIGNAL) < 0 && errno == EINTR)
        ;
    close(dmn_ready_fd);
    dmn_ready_fd = -1;
}

/* ---- pid file ----------------------------------------------------------- */

/* mkdir -p of path's parent directory (0755). */
static int dmn_mkparent(const char *path)
{
    char dir[DMN_PATH_MAX];
    char *slash;

    snprintf(dir, sizeof(dir), "%s", path);
    slash = strrchr(dir, '/');
    if (slash == NULL || slash == dir)
        return PIO_OK;
    *slash = '\0';
    for (char *q = dir + 1; *q; q++) {
        if (*q != '/')
            continue;
        *q = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            return pio_from_errno(errno);
        *q = '/';
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return pio_from_errno(errno);
    return PIO_OK;
}

/* The pid written in fd's file, or 0. */
static long dmn_read_pid(int fd)
{
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    long pid;
    char *end;

    if (n <= 0)
        return 0;
    buf[n] = '\0';
    pid = strtol(buf, &end, 10);
    if (end == buf || pid <= 0 || pid > INT_MAX)
        return 0;
    return pid;
}

int piod_pidfile_create(const char *path)
{
    char text[32];
    struct stat st_fd, st_path;
    long old;
    int fd = -1, rc, len;

    if (path == NULL || path[0] == '\0' || strlen(path) >= sizeof(dmn_pid_path)) {
        fprintf(stderr, "piod: bad pid file path '%s'\n", path ? path : "");
        return PIO_EINVAL;
    }
    rc = dmn_mkparent(path);
    if (rc != PIO_OK) {
        fprintf(stderr, "piod: cannot create the directory of %s: %s\n", path, PIO_Strerror(rc));
        return rc;
    }
    for (int tries = 0;; tries++) {
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644);
        if (fd < 0) {
            rc = pio_from_errno(errno);
            fprintf(stderr, "piod: cannot open the pid file %s: %s\n", path, strerror(errno));
            return rc;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            if (errno == EWOULDBLOCK) {
                old = dmn_read_pid(fd);
                fprintf(stderr,
                        "piod: %s is locked by a running piod (pid %ld): stop it first, or give "
                        "this one another pid file\n",
                        path, old);
                rc = PIO_EBUSY;
            } else {
                rc = pio_from_errno(errno);
                fprintf(stderr, "piod: cannot lock the pid file %s: %s\n", path, strerror(errno));
            }
            goto close;
        }
        /* A piod that gave up the file may have unlinked it between our open
         * and our lock: then we hold a lock on a file nobody sees; retry. */
        if (fstat(fd, &st_fd) != 0) {
            rc = pio_from_errno(errno);
            fprintf(stderr, "piod: cannot stat the pid file %s: %s\n", path, strerror(errno));
            goto close;
        }
        if (stat(path, &st_path) == 0 && st_path.st_dev == st_fd.st_dev &&
            st_path.st_ino == st_fd.st_ino)
            break;
        close(fd);
        fd = -1;
        if (tries >= 10) {
            fprintf(stderr, "piod: the pid file %s keeps changing: is another piod starting?\n",
                    path);
            return PIO_EBUSY;
        }
    }

    old = dmn_read_pid(fd);
    if (old != 0 && old != (long)getpid())
        PIOD_INFO("replacing stale pid file %s (pid %ld no longer holds it)", path, old);
    len = snprintf(text, sizeof(text), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)len, 0) != len) {
        rc = pio_from_errno(errno);
        fprintf(stderr, "piod: cannot write the pid file %s: %s\n", path, strerror(errno));
        goto unlink;
    }
    if (dmn_pid_fd >= 0)
        close(dmn_pid_fd); /* a file made before (a fork's inherited one): ours is this */
    dmn_pid_fd = fd;
    dmn_pid_owner = getpid();
    snprintf(dmn_pid_path, sizeof(dmn_pid_path), "%s", path);
    return PIO_OK;

unlink:
    unlink(path);
close:
    close(fd);
    return rc;
}

void piod_pidfile_remove(void)
{
    struct stat st_fd, st_path;

    if (dmn_pid_fd < 0)
        return;
    if (dmn_pid_owner == getpid()) {
        /* unlink only the file we hold, while we still hold it */
        if (fstat(dmn_pid_fd, &st_fd) == 0 && stat(dmn_pid_path, &st_path) == 0 &&
            st_fd.st_dev == st_path.st_dev && st_fd.st_ino == st_path.st_ino)
            unlink(dmn_pid_path);
    }
    close(dmn_pid_fd);
    dmn_pid_fd = -1;
    dmn_pid_path[0] = '\0';
}
