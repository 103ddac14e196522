/* log.h - piod logging: levels, stderr / file / syslog, reopen on SIGHUP.
 * SPDX-License-Identifier: BSD-3-Clause
 * Thread-safety: piod_log may be called from any thread (one line is written
 * atomically); piod_log_open/reopen are called from the main thread only. */
#ifndef PIOD_LOG_H
#define PIOD_LOG_H

/* piod_log_open - choose the sink: syslog (ident "piod") if use_syslog, else
 * path ("" or NULL: stderr), and the lowest level written. Returns 0 or -1
 * (errno set) if the file cannot be opened; stderr stays in use then. */
int piod_log_open(int use_syslog, const char *path, int level);

/* piod_log_reopen - reopen the log file (after logrotate); no-op for stderr/syslog. */
int piod_log_reopen(void);

/* piod_log - one line "2026-11-22T19:30:01.123Z piod[pid] LEVEL: message". */
void piod_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define PIOD_ERR(...)   piod_log(0, __VA_ARGS__)
#define PIOD_WARN(...)  piod_log(1, __VA_ARGS__)
#define PIOD_INFO(...)  piod_log(2, __VA_ARGS__)
#define PIOD_DEBUG(...) piod_log(3, __VA_ARGS__)

#endif
