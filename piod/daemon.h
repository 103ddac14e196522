/* daemon.h - detach from the terminal and keep a pid file.
 * SPDX-License-Identifier: BSD-3-Clause
 * Thread-safety: call from the main thread before any other thread starts. */
#ifndef PIOD_DAEMON_H
#define PIOD_DAEMON_H

/* piod_daemonize - fork twice, setsid, chdir("/"), umask(027), stdin/stdout to
 * /dev/null (stderr too unless keep_stderr). The parent returns only after the
 * child reports ready through a pipe (see piod_daemon_ready), and exits with
 * the child's status: callers in the child continue. Returns 0 in the child,
 * -1 on failure (errno set). */
int piod_daemonize(int keep_stderr);

/* piod_daemon_ready - tell the waiting parent that start-up succeeded (status
 * 0) or failed (status != 0); no-op when not daemonized. Success also tells
 * systemd (READY=1) when $NOTIFY_SOCKET is set, daemonized or not. */
void piod_daemon_ready(int status);

/* piod_pidfile_create - create path holding our pid, locked (flock) for our
 * lifetime; fails with PIO_EBUSY if another live process holds it (a stale
 * file is replaced). Parent directory is created (0755) if missing.
 * Returns PIO_OK or an error, explained on stderr. */
int piod_pidfile_create(const char *path);

/* piod_pidfile_remove - unlink the pid file made above (if any). */
void piod_pidfile_remove(void);

#endif
