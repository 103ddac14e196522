/* addr.c - numeric "addr" + port <-> sockaddr, shared by the stream
 * transports (transport.h). One parser, so every transport reads an address
 * the same way; a transport that cannot carry a family refuses it after.
 * SPDX-License-Identifier: BSD-3-Clause */
#include "transport.h"
#include "err.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

int pio_tp_sockaddr(const char *addr, int port, struct sockaddr_storage *ss, socklen_t *len)
{
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
    if (!addr || !*addr)
        addr = "0.0.0.0";
    if (port < 0 || port > 65535)
        return PIO_EADDR;
    if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        *len = sizeof(*s4);
        return PIO_OK;
    }
    if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        *len = sizeof(*s6);
        return PIO_OK;
    }
    return PIO_EADDR;
}

void pio_tp_fmt(const struct sockaddr_storage *ss, char *out)
{
    char a[INET6_ADDRSTRLEN] = "?";
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
        snprintf(out, PIO_TP_ADDR, "%s:%d", a, ntohs(s4->sin_port));
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
        snprintf(out, PIO_TP_ADDR, "[%s]:%d", a, ntohs(s6->sin6_port));
    } else {
        snprintf(out, PIO_TP_ADDR, "?");
    }
}
