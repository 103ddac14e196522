/* balance.h - channel choice: USER, STATIC and DYNAMIC load balancing.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The receiving piod chooses the channel of every chunk it grants (the
 * 3-way handshake's REPLY). These functions are pure: they read a snapshot
 * of the channels (state, bytes outstanding, measured rate) and return an
 * index, so they are unit-tested without sockets.
 * Thread-safety: all thread-safe (no state).
 */
#ifndef PIOD_BALANCE_H
#define PIOD_BALANCE_H

#include <stdint.h>

struct piod_bal_chan {
    int up;               /* carries data now */
    uint64_t outstanding; /* bytes granted on it and not yet arrived */
    double rate;          /* measured bytes/s (<= 0: not measured yet) */
};

/* piod_bal_user - channel i if it is up, else the DYNAMIC choice (a named
 * channel that is down must not lose the message). -1 if none is up. */
int piod_bal_user(const struct piod_bal_chan *c, int n, int i, uint64_t len);

/* piod_bal_static - the fixed map (src_proc + dst_proc) mod n; if that
 * channel is down, the next one up in index order. -1 if none is up. */
int piod_bal_static(const struct piod_bal_chan *c, int n, uint32_t src_proc, uint32_t dst_proc);

/* piod_bal_dynamic - the up channel on which len more bytes would finish
 * first: min over up channels of (outstanding + len) / rate. Unmeasured
 * channels count at the mean measured rate (all unmeasured: equal rates).
 * Ties go to the lowest index. -1 if none is up. */
int piod_bal_dynamic(const struct piod_bal_chan *c, int n, uint64_t len);

/* piod_bal_chunk - the chunk for a link of rate bytes/s: the largest of
 * max, max/2, max/4, ... that crosses the link in at most ms milliseconds,
 * but not below PIOD_BAL_CHUNK_MIN; halved only while the half is a multiple
 * of 64 (the pool's alignment), so every result divides max and libpio's
 * copies of max bytes hold whole chunks, each freed on its own. max itself when
 * rate <= 0 (not measured yet) or ms == 0 (a fixed chunk). */
#define PIOD_BAL_CHUNK_MIN (64u * 1024u)
uint32_t piod_bal_chunk(double rate, uint32_t ms, uint32_t max);

/* piod_bal_ewma - fold a new rate sample into an estimate (weight 0.3;
 * first sample taken as is). */
double piod_bal_ewma(double est, double sample);

#endif
