/* relay.h - a system of several hosts: relayed channels and load reports
 * between its members (see relay.c for the design).
 * SPDX-License-Identifier: BSD-3-Clause
 * Thread-safety: piod_relay_out, piod_relay_in and piod_member_by_name are
 * called from channel threads (any thread); start, stop, tick, load_in and
 * rows from the main thread only.
 */
#ifndef PIOD_RELAY_H
#define PIOD_RELAY_H

#include "piod.h"

/* piod_relay_start - with members: listen on internal:relay-port (TCP for
 * relays, UDP for load reports). No members: nothing. PIO_OK or an error. */
int piod_relay_start(struct piod *d);

/* piod_relay_stop - stop accepting, shut every relayed connection, wait. */
void piod_relay_stop(struct piod *d);

/* piod_relay_out - a connection to remote:port leaving from the system's
 * link `link`, which a member owns: through that member's relay. On PIO_OK
 * *out is ready for the channel handshake; else the member's or the
 * connection's error (PIO_EREFUSED, PIO_ETIMEDOUT, PIO_EPERM, ...). */
int piod_relay_out(struct piod *d, int link, const char *remote, int port,
                   struct pio_tp_conn **out);

/* piod_relay_in - hand an accepted channel connection c, whose C_HELLO
 * (hello, already read) names member m, over to m and copy bytes both ways
 * until either end closes. Takes c; returns when the relay is over. */
void piod_relay_in(struct piod *d, struct pio_tp_conn *c, int m, const struct pio_frame *hello);

/* piod_member_by_name - index in cfg.members, or -1. */
int piod_member_by_name(const struct piod *d, const char *name);

/* piod_relay_tick - send our load report to the members every 250 ms. */
void piod_relay_tick(struct piod *d, uint64_t now);

/* piod_relay_load_in - read pending load reports (f: scratch frame). */
void piod_relay_load_in(struct piod *d, struct pio_frame *f);

/* piod_relay_rows - append the members' channel rows (from their latest
 * reports; state 3 when a member has been silent for 3 s) to rows[*n..max). */
void piod_relay_rows(struct piod *d, struct pio_chan_info *rows, uint32_t max, uint32_t *n);

#endif
