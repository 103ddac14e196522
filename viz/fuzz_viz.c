/* fuzz_viz.c - libFuzzer target for the visualization feed's decoders.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * viz_desc_decode and viz_ctl_decode must accept or refuse any input
 * without reading out of bounds. An accepted descriptor must encode to the
 * same bytes (the encoding is canonical) and decode again to an equal one;
 * its block, when a PIECE, must lie inside its grid (pio-vizd copies it
 * there). A broken property ends in __builtin_trap(). `make fuzz`.
 */
#include "wire/viz_proto.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct viz_desc a, b;
    static uint8_t buf[VIZ_DESC_MAX];
    struct viz_ctl c;
    (void)viz_ctl_decode(data, size, &c);
    if (viz_desc_decode(data, size, &a) != 0)
        return 0;
    size_t n = viz_desc_encode(&a, buf);
    if (n > VIZ_DESC_MAX || n != size || memcmp(buf, data, size) != 0)
        __builtin_trap();
    if (viz_desc_decode(buf, n, &b) != 0 || memcmp(&a, &b, sizeof(a)) != 0)
        __builtin_trap();
    for (int i = 0; a.kind == VIZ_PIECE && i < 3; i++)
        if (a.start[i] + a.count[i] > a.grid.dims[i] || a.fidx >= a.nfields)
            __builtin_trap();
    return 0;
}
