/* fuzz_gas.c - libFuzzer target for the GAS frame decoder (wire.h), read as
 * the dispatcher reads a process's stream: header after header, each
 * followed by its payload.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * gas_hdr_decode must accept or refuse any 48 bytes without reading past
 * them; what it accepts must have a known op and a payload within
 * GAS_PAYLOAD_MAX, and must encode to the very same bytes (the encoding is
 * canonical). A broken property ends in __builtin_trap(). Built by `make
 * fuzz` (pfs/module.mk). */
#include "wire.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t pos = 0;
    while (size - pos >= GAS_HDR_SIZE) {
        struct gas_hdr h;
        if (gas_hdr_decode(data + pos, &h) != 0)
            return 0; /* the dispatcher closes the connection here */
        if (h.op < GAS_OP_OPEN || h.op >= GAS_OP_END_ || h.plen > GAS_PAYLOAD_MAX ||
            (h.op == GAS_OP_WRITE && h.len != h.plen) || gas_op_name(h.op)[0] == '?')
            __builtin_trap();
        uint8_t again[GAS_HDR_SIZE];
        gas_hdr_encode(&h, again);
        if (memcmp(again, data + pos, GAS_HDR_SIZE) != 0)
            __builtin_trap();
        pos += GAS_HDR_SIZE;
        if (size - pos < h.plen)
            return 0; /* the dispatcher waits for the rest */
        pos += h.plen;
    }
    return 0;
}
