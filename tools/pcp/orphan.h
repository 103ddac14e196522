/* orphan.h - requests pcp and pio-files give up on, kept with their buffers.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Private to tools/pcp. Thread-safe. */
#ifndef PCP_ORPHAN_H
#define PCP_ORPHAN_H

#include <stdint.h>

/* pcp_orphan - an error path gives up on a request that may still read or
 * write its buffer (a send not yet in the pool, a posted receive): the
 * buffer must outlive it, so both are kept here and the buffer is freed
 * once the request is done (pcp_orphans_reap). Takes *rq and *buf (sets
 * both to NULL; *buf was malloc'd); does nothing when *rq is NULL (the
 * caller frees *buf as usual). Thread-safe. */
struct pio_request;
void pcp_orphan(struct pio_request **rq, uint8_t **buf);

/* pcp_orphans_reap - free the orphans whose requests are done (after
 * PIO_Exit every one is). Returns how many are left. Thread-safe. */
int pcp_orphans_reap(void);

#endif
