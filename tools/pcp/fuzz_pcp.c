/* fuzz_pcp.c - libFuzzer target for the pcp / file service message decoder.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * pcp_msg_decode must refuse or accept any input without reading out of
 * bounds. Whatever it accepts must encode to the very same bytes (the
 * encoding is canonical), decode again to an equal message, and its path
 * goes through pcp_path_ok (the service's first confinement check). A broken
 * property ends in __builtin_trap(). Built by `make fuzz` (tools/pcp/module.mk).
 */
#include "wire/pcp_proto.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct pcp_msg a, b;
    static uint8_t buf[PCP_MSG_MAX];
    if (pcp_msg_decode(data, size, &a) != 0)
        return 0;
    size_t n = pcp_msg_encode(&a, buf);
    if (n > PCP_MSG_MAX || n != size || memcmp(buf, data, size) != 0)
        __builtin_trap();
    if (pcp_msg_decode(buf, n, &b) != 0 || memcmp(&a, &b, sizeof(a)) != 0)
        __builtin_trap();
    (void)pcp_path_ok(a.path);
    return 0;
}
