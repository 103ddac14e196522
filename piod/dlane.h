/* dlane.h - direct lanes, brokered by the piods (dlane.c's head comment).
 * SPDX-License-Identifier: BSD-3-Clause
 * Thread-safety: main thread only, but for piod_dlane_recv_clane and
 * piod_dlane_accepted, which the acceptor's receiver thread calls. */
#ifndef PIOD_DLANE_H
#define PIOD_DLANE_H

#include "piod.h"
#include "seal.h"
#include "wire/wire.h"

struct piod_dlane;

/* P_LANE_REQ from process pi: open the lane, or answer P_LANE with why not
 * (PIO_ENOSYS: lanes off, or the destination is on this host; PIO_EPARTNER;
 * PIO_EGONE; PIO_ELINK). */
void piod_on_lane_req(struct piod *d, int pi, const struct pio_p_lane_req *r);

/* A PIOD_EV_DLANE: hand the lane to its process (or tell it the refusal). */
void piod_on_dlane_event(struct piod *d, struct piod_ev *ev);

/* Free an unhandled PIOD_EV_DLANE's lane (piod stopping). */
void piod_dlane_discard(struct piod *d, struct piod_ev *ev);

/* Wait for the lanes being opened (their threads) to finish. */
void piod_dlane_stop(struct piod *d);

/* The acceptor's receiver thread: read the C_LANE (opened with s when the
 * connection is sealed). Returns PIO_OK or why the connection must close. */
int piod_dlane_recv_clane(struct piod *d, struct pio_tp_conn *c, struct pio_seal *s,
                          struct pio_c_lane *cl, const char *who);

/* ... then hand c (and its seals, copied) to the main loop, which answers
 * C_ACCEPT and gives it to the destination. PIO_ENOMEM: the caller keeps c. */
int piod_dlane_accepted(struct piod *d, int peer, struct pio_tp_conn *c, int sealed, int cipher,
                        const struct pio_seal *data, const struct pio_seal *ack,
                        const struct pio_c_lane *cl);

#endif
