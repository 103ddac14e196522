/* partner.h - libpio internals the clients built into libpio use (the
 * visualization feed). Not installed.
 * SPDX-License-Identifier: BSD-3-Clause
 * Thread-safety: thread-safe, as PIO_Addpartner. */
#ifndef PIO_PARTNER_H
#define PIO_PARTNER_H

/* pio_partner_find - PIO_Addpartner with its own wait: timeout_ms for the
 * application to appear (0: only if it is known now). Same returns. */
int pio_partner_find(const char *name, int timeout_ms, int *partner);

/* pio_partner_named - 1 when this process named application name itself
 * (PIO_Setpartner, PIO_Addpartner, and not forgotten since), else 0; the
 * partners libpio adds for its own use (pio_partner_find) do not count. */
int pio_partner_named(const char *name);

#include <stdint.h>

/* pio_send_room - this process's send region of its pool: *total bytes, of
 * which *free are not held by sends the piod has not finished with (a
 * blocking send of more than *free waits for the piod). Thread-safe.
 * Returns PIO_OK or PIO_ENOTINIT. */
int pio_send_room(uint64_t *free, uint64_t *total);

/* pio_send_sub - PIO_Send (blocking) of a 3-D block inside a larger array,
 * without packing it first: base [in] holds dims[0] x dims[1] x dims[2]
 * elements of datatype (x fastest); the block of count[] elements starts at
 * off[]. The receiver gets count[0] * count[1] * count[2] elements, packed.
 * Returns as PIO_Send; PIO_EINVAL for a block outside the array. */
int pio_send_sub(int partner, int process_ID, int tag, int connection, const void *base,
                 int datatype, const uint64_t dims[3], const uint64_t off[3],
                 const uint64_t count[3]);

#endif
