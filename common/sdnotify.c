/* sdnotify.c - the sd_notify datagram protocol, for Type=notify services.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * systemd passes a service the address of its notification socket in
 * $NOTIFY_SOCKET: an AF_UNIX datagram socket, a file path, or an abstract
 * name written with a leading '@'. A state change is one datagram of
 * newline-separated VAR=value text (sd_notify(3)). That is all of the
 * protocol a daemon needs to say READY=1, so this file speaks it directly
 * rather than linking libsystemd (design notes, "Services and packages").
 * No state; nothing here blocks (the socket is datagram, sent once, closed).
 */
#include "sdnotify.h"
#include "err.h"
#include "pio.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int pio_sd_notify(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sa;
    size_t len;
    socklen_t salen;
    int fd, rc = PIO_OK;

    if (path == NULL || path[0] == '\0')
        return PIO_OK;
    len = strlen(path);
    if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sa.sun_path) || state == NULL)
        return PIO_EINVAL;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, path, len);
    if (path[0] == '@')
        sa.sun_path[0] = '\0'; /* abstract: the name is exactly len bytes */
    salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '/'));

    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return pio_from_errno(errno);
    if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen) < 0)
        rc = pio_from_errno(errno);
    close(fd);
    return rc;
}

int pio_sd_ready(void)
{
    int rc = pio_sd_notify("READY=1");
    unsetenv("NOTIFY_SOCKET");
    return rc;
}
