/* fuzz_win.c - libFuzzer target for the window control messages (winctl.h).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * pio_winctl_decode must accept or refuse any input without reading out of
 * bounds; what it accepts must lie inside the input (address and key), encode
 * to the very same bytes (the encoding is canonical, the application name
 * NUL-padded) and decode again to an equal message. A broken property ends
 * in __builtin_trap(). Built by `make fuzz` (common/wire/module.mk).
 */
#include "winctl.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t buf[PIO_WINCTL_MAX];
    struct pio_winctl a, b;
    if (pio_winctl_decode(data, size, &a) != 0)
        return 0;
    if (a.addr < data || a.rkey + a.rkey_len > data + size || a.kind < PIO_WC_ASK ||
        a.kind > PIO_WC_DENIED)
        __builtin_trap();
    size_t n = pio_winctl_encode(&a, buf);
    if (size > PIO_WINCTL_MAX) {
        if (n != 0) /* too long to send: the encoder must refuse it */
            __builtin_trap();
        return 0;
    }
    /* the name's bytes after its NUL are not carried: compare the prefix */
    size_t name_at = 40, name_end = name_at + strlen(a.app);
    if (n != size || memcmp(buf, data, name_end) != 0 ||
        memcmp(buf + PIO_WINCTL_HEAD, data + PIO_WINCTL_HEAD, size - PIO_WINCTL_HEAD) != 0)
        __builtin_trap();
    if (pio_winctl_decode(buf, n, &b) != 0 || a.kind != b.kind || a.id != b.id ||
        a.base != b.base || a.size != b.size || a.addr_len != b.addr_len ||
        a.rkey_len != b.rkey_len || strcmp(a.app, b.app) != 0)
        __builtin_trap();
    return 0;
}
