/* lane.h - libpio's direct lanes (lane.c's head comment describes them).
 * SPDX-License-Identifier: BSD-3-Clause
 * Thread-safety: every function runs with pio_g.mtx held (some wait on
 * pio_g.cv, which releases it; they say so). Private to libpio. */
#ifndef PIO_LANE_H
#define PIO_LANE_H

#include "wire/wire.h"

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#define PIO_TAG_LANE  (PIO_TAG_RESERVED + 2) /* fences, queries and answers between lane ends */
#define PIO_LANE_POLL 64                     /* lanes the reader polls at most */

struct pio_lane;
struct pio_request;

/* pio_lane_init - read $PIO_LANE_MAX, $PIO_LANE_MIN and $PIO_LANE_TURNS
 * (PIO_Init).
 * pio_lane_max - the largest message a lane takes (0: no lanes). */
void pio_lane_init(void);
uint64_t pio_lane_max(void);

/* pio_lane_heard - a message from process proc of partner came in (a
 * turn of the conversation with it; pio_lane_route counts them). */
void pio_lane_heard(int partner, uint32_t proc);

/* pio_lane_route - the lane whose queue a send to (partner, proc) joins,
 * or NULL: straight through the piods. eligible: the send may take a lane
 * (not synchronous, small enough, no named channel unless it goes inline,
 * not a block of an array). A lane is asked for by an eligible send of at
 * least $PIO_LANE_MIN bytes (size) once the conversation with that
 * process took turns: $PIO_LANE_TURNS such sends in a row (default 2; 0:
 * the first such send asks) each came after a message from it, as in a
 * request and its answer or a ping-pong; a process that only streams to
 * it keeps the piods' bundle. Once the lane is up, every
 * eligible send takes it, whatever its size (no switching paths). A send that
 * may not take the lane still joins its queue while the lane has messages
 * before it (order). Never waits. */
struct pio_lane *pio_lane_route(int partner, int proc, int eligible, uint64_t size);

/* pio_lane_submit - r (a send request with its fields set, on no list;
 * r->lane_piods: it goes through the piods) joins l's queue, and goes now
 * or later, in order: a fence through the piods before the lane's first
 * message (and after any piods' message), lane messages within the window
 * (completed once in the socket, a copy kept until acknowledged), a
 * piods' message once every lane message before it was acknowledged.
 * Never waits; the reader moves the queue on (pio_lane_pump_all). */
int pio_lane_submit(struct pio_lane *l, struct pio_request *r);
void pio_lane_pump_all(void);

/* pio_lane_on_p_lane - the piod handed us a lane end (fd, or -1 with a
 * refusal's status). */
void pio_lane_on_p_lane(const struct pio_p_lane *pl, int fd);

/* pio_lane_on_ctl - a message with tag PIO_TAG_LANE from a lane's other
 * end (through the piods): fence, query or answer. */
void pio_lane_on_ctl(const struct pio_p_msg_new *n);

/* pio_lane_poll - the lanes' descriptors for the reader's poll, from p[0]
 * on (at most max); returns how many. pio_lane_io - after the poll: read
 * and write what they have (the piod socket's frames were handled first). */
int pio_lane_poll(struct pollfd *p, int max);
void pio_lane_io(const struct pollfd *p, int n);

/* pio_lane_left - process proc of partner left: its lanes close. */
void pio_lane_left(int partner, uint32_t proc);

/* pio_lane_exit - PIO_Exit: wait (up to dl) until receivers took every
 * lane message, recovering broken lanes through the piods; then close them
 * all. May wait. */
void pio_lane_exit(const struct timespec *dl);

/* pio_lane_held - lane messages no receive took came (delta > 0) or went:
 * past a limit the lanes are not read (sendrecv.c counts). */
void pio_lane_held(int64_t delta);

/* pio_lane_count - lanes up, in and out (tests, pio-info). */
void pio_lane_count(int *out, int *in);

#endif
