/* chan_int.h - what the files of piod's data channels share (private to
 * chan.c, chan_tx.c and chan_rx.c; chan.c's head comment describes them).
 * Every function here may run on any channel thread; none takes a lock.
 * Each is documented where it is defined.
 * SPDX-License-Identifier: BSD-3-Clause */
#ifndef PIOD_CHAN_INT_H
#define PIOD_CHAN_INT_H

#include "piod.h"
#include "seal.h"
#include "wire/wire.h"

#include <stddef.h>
#include <stdint.h>

int chan_send_frame(struct piod *d, struct pio_tp_conn *c, const struct pio_frame *f);
int chan_recv_frame(struct piod *d, struct pio_tp_conn *c, uint8_t *buf, size_t cap,
                    struct pio_frame *f, const char *who);
void chan_mac(uint8_t out[PIO_WIRE_KEY], const uint8_t key[PIO_WIRE_KEY],
              const uint8_t challenge[PIO_WIRE_KEY], uint32_t index, const char *system);

/* What chan_open made: the connection, and the seals when it is sealed. */
struct chan_open_out {
    struct pio_tp_conn *conn;
    int sealed, cipher;
    struct pio_seal seal_data, seal_ack;
};
int chan_open(struct piod *d, int peer, int link, uint32_t index, const char *who, int last_err,
              struct chan_open_out *o);

#endif
