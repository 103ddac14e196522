/* winctl.h - the control messages of one-sided windows (win.c): the codec.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * ASK (who asks for window id), DESC (the owner's context address, base,
 * size and packed memory key), FREED and FREED_ACK travel from libpio to
 * libpio as PIO messages with tag PIO_TAG_WIN. Layout, little-endian:
 * magic "PWIN" (u32), version (u32), kind, id (u32), base, size (u64),
 * addr_len, rkey_len (u32), the sender's application (PIO_NAME_MAX bytes,
 * NUL-padded), then addr_len + rkey_len bytes. Private to libpio (and its
 * fuzz target fuzz_win). No state: thread-safe. */
#ifndef PIO_WINCTL_H
#define PIO_WINCTL_H

#include "pio.h"

#include <stddef.h>
#include <stdint.h>

#define PIO_WINCTL_MAX     16384       /* a control message, at most */
#define PIO_WINCTL_MAGIC   0x4e495750u /* "PWIN" */
#define PIO_WINCTL_VERSION 1
#define PIO_WINCTL_HEAD    (40 + PIO_NAME_MAX)

/* DENIED: the owner's window exists, but its access does not let the asker
 * in (PIO_Win_create's access argument, judged on the piods' stamps). */
enum { PIO_WC_ASK = 1, PIO_WC_DESC = 2, PIO_WC_FREED = 3, PIO_WC_FREED_ACK = 4, PIO_WC_DENIED = 5 };

struct pio_winctl {
    char app[PIO_NAME_MAX]; /* the sender's application (filled by ctl_send) */
    uint32_t kind, id;
    uint64_t base, size;
    const uint8_t *addr, *rkey; /* DESC; point into the buffer decoded */
    uint32_t addr_len, rkey_len;
};

/* pio_winctl_encode - c into buf (PIO_WINCTL_MAX bytes). Returns the
 * length, 0 when it would not fit. */
size_t pio_winctl_encode(const struct pio_winctl *c, uint8_t *buf);

/* pio_winctl_decode - buf[0..len) into *c (addr and rkey point into buf).
 * Returns 0, or -1 when it is not a well-formed message: a bad magic or
 * version, an unknown kind, an id over INT32_MAX, lengths that do not add up
 * to len, a DESC without an address, an application name without its NUL. */
int pio_winctl_decode(const uint8_t *buf, size_t len, struct pio_winctl *c);

#endif
