/* relayhdr.c - encode and decode the relay header (relayhdr.h).
 * SPDX-License-Identifier: BSD-3-Clause
 * The only code that reads a relay header's bytes; no state. */
#include "relayhdr.h"
#include "capture.h"

#include <stdio.h>
#include <string.h>

void piod_relay_hdr_put(uint8_t h[PIOD_RELAY_HDR], const struct piod_relay_hdr *r)
{
    memset(h, 0, PIOD_RELAY_HDR);
    memcpy(h, PIOD_RELAY_MAGIC, 4);
    h[4] = (uint8_t)r->kind;
    h[6] = (uint8_t)(r->link >> 8), h[7] = (uint8_t)r->link;
    h[8] = (uint8_t)(r->port >> 8), h[9] = (uint8_t)r->port;
    snprintf((char *)h + 10, PIOD_ADDR_MAX, "%s", r->addr);
}

int piod_relay_hdr_get(const uint8_t h[PIOD_RELAY_HDR], struct piod_relay_hdr *r)
{
    pio_capture("relay", h, PIOD_RELAY_HDR);
    if (memcmp(h, PIOD_RELAY_MAGIC, 4) != 0 || (h[4] != PIOD_RELAY_OUT && h[4] != PIOD_RELAY_IN))
        return -1;
    r->kind = h[4];
    r->link = h[6] << 8 | h[7];
    r->port = h[8] << 8 | h[9];
    memcpy(r->addr, h + 10, PIOD_ADDR_MAX);
    r->addr[PIOD_ADDR_MAX - 1] = '\0';
    return 0;
}
