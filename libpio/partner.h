/* partner.h - libpio internals the clients built into libpio use (the
 * visualization feed). Not installed.
 * SPDX-License-Identifier: BSD-3-Clause
 * Thread-safety: as PIO_Addpartner. */
#ifndef PIO_PARTNER_H
#define PIO_PARTNER_H

/* pio_partner_find - PIO_Addpartner with its own wait: timeout_ms for the
 * application to appear (0: only if it is known now). Same returns. */
int pio_partner_find(const char *name, int timeout_ms, int *partner);

#endif
