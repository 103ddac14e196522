/* files.c - the file service: piod runs pio-files (tools/pcp/pio-files.c)
 * as a child process when the config has `export = DIR`.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The service is an ordinary PIO application ("pio.files.IDENT") that joins
 * this piod through its socket, so the daemon itself never touches exported
 * files. The binary is found beside piod's own (/proc/self/exe). If it
 * exits, it is started again after a back-off (1 s, doubling to 30 s).
 * Main thread only.
 */
#include "piod.h"
#include "log.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void files_spawn(struct piod *d)
{
    char exe[PATH_MAX], path[PATH_MAX + 16], app[PIO_WIRE_NAME + 16];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0) {
        PIOD_ERR("file service: cannot find piod's own binary: %s", strerror(errno));
        return;
    }
    exe[n] = '\0';
    snprintf(path, sizeof(path), "%s/pio-files", dirname(exe));
    snprintf(app, sizeof(app), "pio.files.%s", d->cfg.ident);
    /* the child's environment, made before fork: ours with PIO_SOCKET set */
    extern char **environ;
    size_t ne = 0;
    while (environ[ne])
        ne++;
    char **env = calloc(ne + 2, sizeof(*env));
    char sock[sizeof(d->cfg.socket) + 16];
    if (!env)
        return;
    snprintf(sock, sizeof(sock), "PIO_SOCKET=%s", d->cfg.socket);
    size_t k = 0;
    for (size_t i = 0; i < ne; i++)
        if (strncmp(environ[i], "PIO_SOCKET=", 11) != 0)
            env[k++] = environ[i];
    env[k++] = sock;
    env[k] = NULL;
    char *const argv[] = {"pio-files",       "--root", d->cfg.export_root,
                          "--name",          app,      d->cfg.export_map[0] ? "--map" : NULL,
                          d->cfg.export_map, NULL};
    pid_t pid = fork();
    if (pid == 0) {
        execve(path, argv, env);
        _exit(127); /* piod logs the exit status */
    }
    free(env);
    if (pid < 0) {
        PIOD_ERR("file service: fork: %s", strerror(errno));
        return;
    }
    d->files_pid = pid;
    PIOD_INFO("file service started (pid %d): %s exported as %s", (int)pid, d->cfg.export_root,
              app);
}

void piod_files_start(struct piod *d)
{
    d->files_pid = 0;
    d->files_backoff_ms = 1000;
    if (d->cfg.export_root[0])
        files_spawn(d);
}

void piod_files_tick(struct piod *d, uint64_t now)
{
    if (!d->cfg.export_root[0] || d->stopping)
        return;
    if (d->files_pid > 0) {
        int st;
        if (waitpid(d->files_pid, &st, WNOHANG) != d->files_pid)
            return;
        PIOD_WARN("file service (pid %d) %s %d: starting it again in %llu ms", (int)d->files_pid,
                  WIFEXITED(st) ? "exited with" : "killed by signal",
                  WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
                  (unsigned long long)d->files_backoff_ms);
        d->files_pid = 0;
        d->files_next_ms = now + d->files_backoff_ms;
        if (d->files_backoff_ms < 30000)
            d->files_backoff_ms *= 2;
        return;
    }
    if (now >= d->files_next_ms)
        files_spawn(d);
}

void piod_files_stop(struct piod *d)
{
    if (d->files_pid <= 0)
        return;
    kill(d->files_pid, SIGTERM);
    for (int i = 0; i < 300; i++) {
        if (waitpid(d->files_pid, NULL, WNOHANG) == d->files_pid) {
            d->files_pid = 0;
            return;
        }
        usleep(10000);
    }
    kill(d->files_pid, SIGKILL);
    waitpid(d->files_pid, NULL, 0);
    d->files_pid = 0;
}
