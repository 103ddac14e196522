/* win.h - what the window layer (win.c) and the message core (pio.c,
 * sendrecv.c) ask of each other. Not installed.
 * SPDX-License-Identifier: BSD-3-Clause
 * Thread-safety: all thread-safe. */
#ifndef PIO_WIN_H
#define PIO_WIN_H

#include "pio.h"

#include <stddef.h>
#include <stdint.h>

/* The tag of the window layer's control messages (ASK, DESC, FREED, ...),
 * above PIO_TAG_RESERVED: no application receive matches it. */
#define PIO_TAG_WIN (PIO_TAG_RESERVED + 1)

/* pio_win_exit - called by PIO_Exit before it leaves the piod: stop the
 * window layer's thread, fail its requests in flight (PIO_ECANCELED), free
 * every window and the one-sided context. */
void pio_win_exit(void);

/* pio_req_ext_new - a PIO_Request that PIO_Wait / PIO_Test complete, for an
 * operation run outside the message core. NULL when out of memory. */
struct pio_request *pio_req_ext_new(void);

/* pio_req_ext_done - complete it: status, bytes (PIO_Status.bytes). The
 * waiter (PIO_Wait / PIO_Test) frees it; the caller must not touch it
 * after this call. */
void pio_req_ext_done(struct pio_request *r, int status, size_t bytes);

#endif
