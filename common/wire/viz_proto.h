/* viz_proto.h - what a feeding simulation and pio-vizd say to each other.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Both are ordinary PIO applications; the simulation names the receiver by
 * its application name only. Every process of the simulation talks to
 * process 0 of the receiver:
 *   VIZ_TAG_DESC       sim -> vizd: a struct viz_desc (PIECE or END)
 *   VIZ_TAG_DATA + s   sim -> vizd: the elements of the PIECE whose seq is s
 *                      (s < VIZ_SEQ_MOD), typed, so libpio converts byte order
 *   VIZ_TAG_CTL        vizd -> sim: a struct viz_ctl (ACK, or INFO: the
 *                      answer to a HELLO)
 *   VIZ_TAG_PLAN       sim process 0 -> the other sim processes (through
 *                      their own piod, the application as its own partner):
 *                      a struct viz_ctl with VIZ_CTL_PLAN, "send step `step`"
 * A step of rank r is its PIECE descs (each followed by its data) and an END
 * {npieces}. HELLO asks the receiver what it wants (its INFO answer says
 * lossless or newest-only, and VIZ_CTL_NEW when nothing of that rank came
 * to it before: a simulation that asks again after its acks stopped learns
 * so that the receiver was restarted and its steps in flight are gone); SKIP says this rank will
 * not send step `step` (it was planned, and the plan came too late), so the receiver drops it at
 * once; BYE says the rank sends nothing more. A rank numbers its descs (msgno) so that a receiver
 * with several threads handles them in the order they were sent. Every desc carries the whole
 * description of the feed (grid, fields, process count), so a receiver that joins late learns it
 * from the first message it sees. A step is complete when every rank's END and all its pieces have
 * arrived and every field's pieces add up to the grid. ACK {step, flags}: the step was taken
 * (complete, buffered) or dropped, and whether the receiver wants no step lost (VIZ_CTL_LOSSLESS:
 * the simulation then waits when `window` steps are unacknowledged) or only the newest. Integers
 * are little-endian (viz_desc_encode / _decode); doubles are carried as their IEEE-754 bit
 * patterns.
 */
#ifndef VIZ_PROTO_H
#define VIZ_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define VIZ_TAG_DESC 3000000
#define VIZ_TAG_CTL  3000001
#define VIZ_TAG_PLAN 3000002
#define VIZ_TAG_DATA 4000000
#define VIZ_SEQ_MOD  1000000

#define VIZ_FIELDS_MAX 16
#define VIZ_NAME_MAX   32

enum viz_kind { VIZ_PIECE = 1, VIZ_END = 2, VIZ_BYE = 3, VIZ_HELLO = 4, VIZ_SKIP = 5 };

struct viz_field {
    char name[VIZ_NAME_MAX];
    int32_t type; /* PIO_FLOAT, PIO_DOUBLE, PIO_INT32 */
};

/* The grid: points along x, y, z (x varies fastest in memory: a C array
 * [nz][ny][nx]), where point (i, j, k) is at origin + (i, j, k) * spacing. */
struct viz_grid {
    uint64_t dims[3];
    double origin[3], spacing[3];
};

struct viz_desc {
    uint32_t kind;
    char app[64]; /* the simulation's application name */
    uint32_t rank, nranks;
    uint64_t step;
    double time;
    struct viz_grid grid;
    uint32_t nfields;
    struct viz_field field[VIZ_FIELDS_MAX];
    /* PIECE */
    uint32_t fidx;               /* which field */
    uint64_t start[3], count[3]; /* the block, in points (x, y, z) */
    uint32_t seq;                /* data tag offset */
    /* END */
    uint32_t npieces; /* pieces this rank sent in this step */
    uint32_t msgno;   /* this rank's descs, numbered in the order sent */
    uint32_t session; /* this rank's feed (PIO_Feed_open), never 0 */
};

#define VIZ_DESC_MAX                                                                               \
    (4 + 4 + 64 + 4 * 4 + 8 + 8 + 9 * 8 + 4 + VIZ_FIELDS_MAX * (4 + VIZ_NAME_MAX + 4) + 4 + 48 +   \
     4 + 4 + 4 + 4)

/* viz_desc_encode - d into buf (VIZ_DESC_MAX bytes). Returns bytes. */
size_t viz_desc_encode(const struct viz_desc *d, uint8_t *buf);

/* viz_desc_decode - 0, or -1 when malformed: short, bad magic or kind,
 * nfields or fidx out of range, names not terminated, a grid dimension of 0
 * or a block outside the grid. */
int viz_desc_decode(const uint8_t *buf, size_t len, struct viz_desc *d);

#define VIZ_CTL_LOSSLESS 0x1u /* the receiver has an output that loses no step */
#define VIZ_CTL_DROPPED  0x2u /* this step was not taken (incomplete, or no room) */
#define VIZ_CTL_INFO     0x4u /* the answer to a HELLO: says the mode, settles nothing */
#define VIZ_CTL_PLAN     0x8u /* VIZ_TAG_PLAN: every process sends step `step` */
#define VIZ_CTL_NEW                                                                                \
    0x10u /* INFO: the HELLO was the first desc of that rank here:                                 \
             none of its earlier steps is in this receiver */

struct viz_ctl {
    uint64_t step;
    uint32_t flags;
    uint32_t window; /* steps the simulation may have unacknowledged */
};

#define VIZ_CTL_SIZE 24

void viz_ctl_encode(const struct viz_ctl *c, uint8_t buf[VIZ_CTL_SIZE]);
int viz_ctl_decode(const uint8_t *buf, size_t len, struct viz_ctl *c);

/* viz_elem_size - bytes of one element of a field type; 0 if not allowed. */
size_t viz_elem_size(int32_t type);

#endif
