/* log.c - piod logging: one line per call to stderr, a file or syslog.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A line is formatted whole into a buffer on the caller's stack and handed to
 * the kernel with one write(2), so lines from different threads (and, with
 * O_APPEND, different processes) never interleave; no lock is needed. The
 * sink and level are atomics set by the main thread. A log file is opened
 * once on a descriptor that then never changes: piod_log_reopen opens the
 * path again and dup2()s it over that descriptor, so a thread writing at that
 * moment writes to the old or the new file, never to a closed descriptor.
 * Messages longer than a line buffer are cut and end with "...". Never exits.
 */
#include "log.h"
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINE_MAX 4096 /* PIPE_BUF: one write to a pipe is atomic up to this */

enum log_sink { LOG_SINK_STDERR, LOG_SINK_FILE, LOG_SINK_SYSLOG };

static atomic_int log_sink = LOG_SINK_STDERR;
static atomic_int log_level = PIOD_LOG_INFO;
static atomic_int log_fd = -1;       /* the log file's descriptor, kept for the process */
static char log_path[PIOD_PATH_MAX]; /* the file's path; main thread only */

static const char *const log_words[] = {"ERROR", "WARN", "INFO", "DEBUG"};
static const int log_prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};

static int log_clamp(int level)
{
    if (level < PIOD_LOG_ERROR)
        return PIOD_LOG_ERROR;
    if (level > PIOD_LOG_DEBUG)
        return PIOD_LOG_DEBUG;
    return level;
}

/* Open path for appending and make it the file sink's descriptor. */
static int log_open_file(const char *path)
{
    int fd, old, e;

    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0640);
    if (fd < 0)
        return -1;
    old = atomic_load(&log_fd);
    if (old < 0) {
        atomic_store(&log_fd, fd);
        return 0;
    }
    if (dup3(fd, old, O_CLOEXEC) < 0) {
        e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    close(fd);
    return 0;
}

int piod_log_open(int use_syslog, const char *path, int level)
{
    int was_syslog = atomic_load(&log_sink) == LOG_SINK_SYSLOG;

    atomic_store(&log_level, log_clamp(level));
    if (use_syslog) {
        openlog("piod", LOG_PID | LOG_NDELAY, LOG_DAEMON);
        atomic_store(&log_sink, LOG_SINK_SYSLOG);
        return 0;
    }
    if (was_syslog)
        closelog();
    if (path == NULL || path[0] == '\0') {
        atomic_store(&log_sink, LOG_SINK_STDERR);
        return 0;
    }
    if (strlen(path) >= sizeof(log_path)) {
        atomic_store(&log_sink, LOG_SINK_STDERR);
        errno = ENAMETOOLONG;
        return -1;
    }
    if (log_open_file(path) != 0) {
        int e = errno;
        atomic_store(&log_sink, LOG_SINK_STDERR);
        errno = e;
        return -1;
    }
    memcpy(log_path, path, strlen(path) + 1);
    atomic_store(&log_sink, LOG_SINK_FILE);
    return 0;
}

int piod_log_reopen(void)
{
    if (atomic_load(&log_sink) != LOG_SINK_FILE)
        return 0;
    return log_open_file(log_path);
}

static void log_write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* nowhere to report a failure to log */
        buf += n;
        len -= (size_t)n;
    }
}

void piod_log(int level, const char *fmt, ...)
{
    char line[LOG_LINE_MAX];
    struct timespec ts;
    struct tm tm;
    size_t head, len;
    int saved = errno, n, sink;
    va_list ap;

    level = log_clamp(level);
    if (level > atomic_load(&log_level))
        return;
    sink = atomic_load(&log_sink);

    if (sink == LOG_SINK_SYSLOG) {
        head = 0;
    } else {
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        head = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
        n = snprintf(line + head, sizeof(line) - head,
                     ".%03ldZ piod[%ld] %s: ", ts.tv_nsec / 1000000L, (long)getpid(),
                     log_words[level]);
        head += n > 0 ? (size_t)n : 0;
    }
    va_start(ap, fmt);
    errno = saved; /* so %m works */
    n = vsnprintf(line + head, sizeof(line) - head - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    len = head + (size_t)n;
    if (len > sizeof(line) - 2) { /* cut: keep room for "...\n" */
        len = sizeof(line) - 2;
        memcpy(line + len - 3, "...", 3);
    }
    while (len > head && line[len - 1] == '\n')
        len--;
    for (size_t i = head; i < len; i++) /* one call, one line */
        if (line[i] == '\n' || line[i] == '\r')
            line[i] = ' ';

    if (sink == LOG_SINK_SYSLOG) {
        line[len] = '\0';
        syslog(log_prio[level], "%s", line);
    } else {
        int fd = sink == LOG_SINK_FILE ? atomic_load(&log_fd) : STDERR_FILENO;
        line[len++] = '\n';
        log_write_all(fd, line, len);
    }
    errno = saved;
}
