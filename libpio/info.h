/* info.h - fetch a piod's status (P_INFO) over its process socket, without
 * joining as a process: for tools (pio-info, pcp). Internal, not installed.
 * SPDX-License-Identifier: BSD-3-Clause
 * Thread-safety: thread-safe (no shared state). */
#ifndef PIO_INFO_H
#define PIO_INFO_H

#include "wire/wire.h"

/* pio_info_fetch - one P_INFO_REQ to the piod at path, its answer into f.
 * timeout_ms: how long to wait for the answer.
 * Returns PIO_OK (f->type is PIO_F_P_INFO), PIO_ENOPIOD (nothing listens at
 * path), PIO_ETIMEDOUT, PIO_ENOMEM, or the decoder's error. */
int pio_info_fetch(const char *path, int timeout_ms, struct pio_frame *f);

#endif
