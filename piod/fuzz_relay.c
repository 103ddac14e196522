/* fuzz_relay.c - libFuzzer target for the relay header (relayhdr.h).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Any PIOD_RELAY_HDR bytes (shorter inputs are padded with zeros, as a
 * short read never reaches the decoder) decode or are refused; an accepted
 * header has a known kind, a link and port in u16, a NUL-terminated
 * address, and encodes back to the input up to the address's NUL. A broken
 * property ends in __builtin_trap(). `make fuzz`.
 */
#include "relayhdr.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t h[PIOD_RELAY_HDR] = {0}, again[PIOD_RELAY_HDR];
    memcpy(h, data, size < sizeof(h) ? size : sizeof(h));
    struct piod_relay_hdr r;
    if (piod_relay_hdr_get(h, &r) != 0)
        return 0;
    size_t alen = strnlen(r.addr, sizeof(r.addr));
    if ((r.kind != PIOD_RELAY_OUT && r.kind != PIOD_RELAY_IN) || r.link < 0 || r.link > 65535 ||
        r.port < 0 || r.port > 65535 || alen >= sizeof(r.addr))
        __builtin_trap();
    piod_relay_hdr_put(again, &r);
    h[5] = 0; /* reserved: not carried */
    if (memcmp(again, h, 10 + alen) != 0)
        __builtin_trap();
    return 0;
}
