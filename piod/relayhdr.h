/* relayhdr.h - the header that opens a relayed connection between two
 * members of one system (relay.c; the layout is in docs/protocol.md).
 * SPDX-License-Identifier: BSD-3-Clause
 * 58 bytes: "PIOR", kind ('O' connect out on one of my links, 'I' a channel
 * for you), a zero byte, link (u16 BE), port (u16 BE), the address to
 * connect to (NUL-padded text, PIOD_ADDR_MAX bytes). No state: thread-safe. */
#ifndef PIOD_RELAYHDR_H
#define PIOD_RELAYHDR_H

#include "config.h"

#include <stdint.h>

#define PIOD_RELAY_MAGIC "PIOR"
#define PIOD_RELAY_HDR   (4 + 1 + 1 + 2 + 2 + PIOD_ADDR_MAX)
#define PIOD_RELAY_OUT   'O'
#define PIOD_RELAY_IN    'I'

struct piod_relay_hdr {
    int kind;                 /* PIOD_RELAY_OUT or PIOD_RELAY_IN */
    int link, port;           /* OUT: which of the owner's links, the peer's data port */
    char addr[PIOD_ADDR_MAX]; /* OUT: the peer's data address; always NUL-terminated */
};

/* piod_relay_hdr_put - r into h. An address too long is cut. */
void piod_relay_hdr_put(uint8_t h[PIOD_RELAY_HDR], const struct piod_relay_hdr *r);

/* piod_relay_hdr_get - h into *r. Returns 0, or -1 when h is not a relay
 * header (magic) or names an unknown kind. The caller still checks link,
 * port and address against its configuration. */
int piod_relay_hdr_get(const uint8_t h[PIOD_RELAY_HDR], struct piod_relay_hdr *r);

#endif
