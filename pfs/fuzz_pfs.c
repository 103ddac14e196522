/* fuzz_pfs.c - libFuzzer target for the pfs message and directory-entry
 * decoders (proto.h).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * pfs_msg_decode must refuse or accept any input without reading out of
 * bounds; what it accepts must encode to the very same bytes (the encoding
 * is canonical) and decode again to an equal message. Its data bytes are
 * then walked as READDIR entries, and its paths go through pfs_path_ok (the
 * metadata server's first check). A broken property ends in
 * __builtin_trap(). Built by `make fuzz` (pfs/module.mk).
 */
#include "proto.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct pfs_msg a, b;
    static uint8_t buf[PFS_MSG_MAX];
    if (pfs_msg_decode(data, size, &a) != 0)
        return 0;
    size_t n = pfs_msg_encode(&a, buf, sizeof(buf));
    if (n != size || memcmp(buf, data, size) != 0)
        __builtin_trap();
    if (pfs_msg_decode(buf, n, &b) != 0)
        __builtin_trap();
    /* the data pointers differ (each points into its own buffer) */
    const uint8_t *da = a.data, *db = b.data;
    a.data = b.data = NULL;
    if (memcmp(&a, &b, sizeof(a)) != 0 || (a.dlen && memcmp(da, db, a.dlen) != 0))
        __builtin_trap();
    size_t pos = 0;
    struct pfs_dirent e;
    int k;
    while ((k = pfs_dirent_next(da, a.dlen, &pos, &e)) == 1)
        if (pos > a.dlen || !e.name[0])
            __builtin_trap();
    (void)pfs_path_ok(a.path);
    (void)pfs_path_ok(a.path2);
    return 0;
}
