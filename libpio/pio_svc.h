/* pio_svc.h - libpio's second tier: the services PIO's own tools and servers
 * (pio-info, pcp, pio-files, pio-vizd, pfs, anco) use beyond pio.h.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * What a client component may include (docs/architecture.md, "Layers"):
 * pio.h, this header, and the shared base (common/). The build gives clients
 * an include path holding exactly those (a copy of pio.h and of this file
 * under $(B)/include, and common/); libpio's private headers, the
 * transports and piod are not on it, so including them fails to compile
 * (tests/bats/build.bats proves it).
 *
 * Not installed, and not exported by libpio.so (which exports PIO_* only):
 * PIO's programs link libpio.a. The file-service and feed protocols that
 * PIO_File_* and PIO_Feed_* speak are in the shared base
 * (common/wire/pcp_proto.h, viz_proto.h), for the servers on their other end.
 * Thread-safety: every function here is thread-safe (no shared state). */
#ifndef PIO_SVC_H
#define PIO_SVC_H

#include "pio.h"

#include <stdio.h>

struct pio_frame;

/* pio_info_fetch - fetch a piod's status (P_INFO) over its process socket,
 * without joining as a process: one P_INFO_REQ to the piod at path, its
 * answer into f (a struct pio_frame of common/wire/wire.h).
 * timeout_ms: how long to wait for the answer.
 * Returns PIO_OK (f->type is PIO_F_P_INFO), PIO_ENOPIOD (nothing listens at
 * path), PIO_ETIMEDOUT, PIO_ENOMEM, or the decoder's error. */
int pio_info_fetch(const char *path, int timeout_ms, struct pio_frame *f);

/* pio_svc_rma_describe - start, here, the one-sided backend windows would use
 * (picked by capability as PIO_Win_create picks it, $PIO_RMA honoured),
 * write its description to out (what the backend offers and would use to
 * another process on this host), and stop it.
 * Returns PIO_OK; PIO_ENOSYS when this libpio has no such backend; the
 * backend's start error (its message then says why) or its describe error.
 * *stage, when stage is not NULL, tells which step failed: 0 none found,
 * 1 start, 2 describe. */
int pio_svc_rma_describe(FILE *out, int *stage);

#endif
