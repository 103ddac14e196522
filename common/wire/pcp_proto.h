/* pcp_proto.h - what pcp and the file service (pio-files) say to each other.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Both are ordinary PIO applications. The file service of host H joins its
 * piod as application "pio.files.H" (process 0 of 1); a pcp joins as
 * "pcp.HOST.PID". Messages are PIO_BYTE arrays:
 *   tag PCP_TAG_REQ   pcp -> service: a struct pcp_msg (op PUT, GET, MKDIR, LIST)
 *   tag PCP_TAG_CTL+s both ways, session s: struct pcp_msg replies and steps
 *   tag PCP_TAG_DATA+s the file's bytes, in order, in blocks
 * Integers are little-endian on the wire (pcp_msg_encode / _decode). A
 * session is one file (or one MKDIR / LIST) and belongs to one pcp.
 *
 * PUT (pcp sends a file): REQ PUT {path, size, mode, mtime, flags}
 *   -> CTL OK {off = bytes of a partial copy kept from before, hash = their
 *      XXH3-64} (off 0 without --resume or without a partial)
 *   -> CTL GO {off = where to start: the partial's length when its hash
 *      equals the source's prefix, else 0}
 *   -> DATA blocks from off to size -> CTL END {hash of the whole file}
 *   -> CTL OK (written, verified, synced, renamed into place) or ERR.
 *   With PCP_F_ACK, the service sends CTL ACK {off = bytes written at their
 *   offsets} every 100 ms at most while the data comes (before its last
 *   OK); pcp's progress counts those. A destination whose part file another
 *   session holds is refused at once: ERR {EBUSY} instead of the first OK.
 * GET (pcp fetches a file): REQ GET {path} -> CTL OK {size, mode, mtime}
 *   -> CTL GO {off, hash: what pcp already holds of it} -> CTL OK {off: where
 *      the service starts (off, or 0 when the prefix differs)} -> DATA ->
 *      CTL END {hash of the whole file}.
 * MKDIR {path, mode}: -> CTL OK or ERR. LIST {path}: -> CTL OK {size = number
 *   of entries} then one CTL ENTRY per entry (path relative to the listed
 *   directory, type, size, mode, mtime), depth first, directories first.
 * FOPEN {path, size = the writing application's process count, mode, block =
 *   the bounded wait in ms (PIO_FILE_WAIT; 0: the service's 60 s)}: each
 *   process of the application opens a session; the first creates the part
 *   file -> CTL OK; then per block CTL WRITE {off, size} and a DATA message
 *   of size bytes (written at off); CTL FCLOSE {off = writes, size = bytes}
 *   -> CTL OK once every process has closed and the file is synced and
 *   renamed into place (remote merged output, PIO_File_open(3)), or ERR
 *   when a process never opened, went away, or nothing happened to the file
 *   for the shortest wait of its processes (the part file is then kept,
 *   never renamed).
 *   HDF5 mode (flags PCP_F_HDF5): FOPEN also carries the dataset: text = its
 *   name, type = the PIO element type, ndims and count[] = its global shape;
 *   each WRITE carries a hyperslab (start[], count[]; size = its bytes) and
 *   the DATA message holds its elements, in C order, sent as that type (so
 *   libpio converts byte order). The service writes them with libhdf5.
 * ROPEN {path, block = the client's window id, size = that window's bytes}
 *   -> CTL OK {size = the file's size}; then per read CTL READ {off, size,
 *   block = where in the window; block + size <= the window's bytes}: the
 *   service reads the range (1 MiB pieces, a few in flight, the next pread
 *   overlapping the puts before it) and puts it into the client's window at
 *   block (PIO_Put: one-sided, the client does nothing meanwhile) -> CTL OK
 *   {off, size = bytes read: fewer at the end of the file}. The client may
 *   keep several READs queued (read-ahead); they are answered in order.
 *   A service whose OK to ROPEN has flags PCP_F_STRIDED also takes strided
 *   READs: ndims = 1, start[0] = stride, count[0] = pieces: `pieces` ranges
 *   of `size` bytes at off, off + stride, ..., put one after the other at
 *   block (pieces x size bytes, within the window); the answer's size is
 *   the bytes brought (a short piece at the end of the file ends it).
 *   A service whose OK to ROPEN has flags PCP_F_LIST also takes list
 *   READs: flags PCP_F_LIST, ndims = k (1..PCP_DIMS_MAX) ranges of
 *   count[i] bytes at start[i], put one after the other at block (size =
 *   their sum, within the window); the answer's size is the bytes brought
 *   (a short range ends it: the client reads what follows again alone).
 *   CTL RCLOSE ends the session (PIO_Rfile_open(3)).
 * Data message sizes (PUT and GET): the sender cuts the file from its start
 * offset into messages of `block` bytes, or, when the request had
 * PCP_F_RAMP (with type = lanes, the channels the sender spreads over) and
 * the service's first OK echoed it, into the messages pcp_plan gives. The
 * receiver posts its receives by the same plan.
 * Any step may be answered with ERR {err = errno, text}. The service never
 * writes under the final name before the copy is complete and verified.
 */
#ifndef PCP_PROTO_H
#define PCP_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define PCP_TAG_REQ  1
#define PCP_TAG_CTL  1000000
#define PCP_TAG_DATA 2000000

#define PCP_PATH_MAX 4096
#define PCP_TEXT_MAX 256
#define PCP_NAME_MAX 64

enum pcp_op {
    PCP_PUT = 1,
    PCP_GET,
    PCP_MKDIR,
    PCP_LIST,
    PCP_FOPEN,  /* merged output: one process of an application opens path */
    PCP_WRITE,  /* merged output: bytes at an offset (the data message follows) */
    PCP_FCLOSE, /* merged output: this process is done; answered when all are */
    PCP_ROPEN,  /* remote file access: open path for reading */
    PCP_READ,   /* remote file access: off, size: put into the client's window */
    PCP_RCLOSE, /* remote file access: the client is done (no answer) */
    PCP_OK = 16,
    PCP_ERR,
    PCP_GO,
    PCP_END,
    PCP_ENTRY,
    PCP_BYE, /* pcp is done with the service (no answer) */
    PCP_ACK  /* PUT with PCP_F_ACK: off = bytes written at their offsets so far */
};

#define PCP_F_RESUME   0x1u /* keep / use a partial copy */
#define PCP_F_NOVERIFY 0x2u
#define PCP_F_HDF5     0x4u  /* FOPEN: one HDF5 dataset, written by hyperslabs */
#define PCP_F_SPARSE   0x8u  /* PUT / GET's OK: the source has holes: keep them */
#define PCP_F_ACK      0x10u /* PUT: send CTL ACK {off} while writing (pcp's progress) */
#define PCP_F_STRIDED  0x20u /* ROPEN's OK: READ takes a stride (start[0]) and pieces (count[0]) */
#define PCP_F_LIST     0x40u /* ROPEN's OK / READ: a list of ranges (start[i], count[i]) */
#define PCP_F_OTHERS   0x80u /* LIST: list symlinks and specials too (PCP_T_OTHER) */
#define PCP_F_RAMP                                                                                 \
    0x100u /* PUT, GET: the data messages follow pcp_plan with ramps, in                           \
            * rounds of `type` lanes; the service's first OK echoes it                             \
            * when it takes that plan (else: blocks of `block`) */

#define PCP_DIMS_MAX 8 /* HDF5 mode: dataset rank (= PIO_FILE_MAXDIMS) */

/* PCP_T_OTHER: a symbolic link or special file, listed only for a LIST with
 * PCP_F_OTHERS (mode then holds its whole st_mode, type bits included), so
 * that the client can say what it leaves out. */
enum pcp_type { PCP_T_FILE = 1, PCP_T_DIR = 2, PCP_T_OTHER = 3 };

struct pcp_msg {
    uint32_t op;
    uint32_t session;
    uint32_t flags;
    uint32_t mode;  /* permission bits */
    uint32_t type;  /* ENTRY: enum pcp_type */
    int32_t err;    /* ERR: an errno value */
    uint64_t size;  /* file size, or LIST's entry count */
    uint64_t off;   /* resume offset */
    uint64_t hash;  /* XXH3-64 */
    uint64_t block; /* PUT/GET: data block size the sender will use */
    int64_t mtime_sec;
    uint32_t mtime_nsec;
    uint32_t ndims;               /* HDF5 mode: rank of dims / slab */
    uint64_t start[PCP_DIMS_MAX]; /* WRITE: slab origin */
    uint64_t count[PCP_DIMS_MAX]; /* FOPEN: global shape; WRITE: slab extent */
    char client[PCP_NAME_MAX];    /* REQ: the pcp application's name */
    char text[PCP_TEXT_MAX];      /* ERR: what went wrong, for people */
    char path[PCP_PATH_MAX];
};

#define PCP_MSG_MAX (84 + 16 * PCP_DIMS_MAX + PCP_NAME_MAX + PCP_TEXT_MAX + PCP_PATH_MAX)

/* pcp_msg_encode - m into buf (at least PCP_MSG_MAX bytes). Returns bytes. */
size_t pcp_msg_encode(const struct pcp_msg *m, uint8_t *buf);

/* pcp_msg_decode - len bytes into m. Returns 0, or -1 when malformed
 * (short, unknown op, strings not terminated, ndims > PCP_DIMS_MAX). */
int pcp_msg_decode(const uint8_t *buf, size_t len, struct pcp_msg *m);

/* pcp_path_ok - a relative path within an export: not empty, no "..", no
 * leading "/", no NUL. Returns 1 if acceptable. (The service still opens it
 * beneath the export root, so a symlink cannot lead out.) */
int pcp_path_ok(const char *p);

/* pcp_sparse - 1 when the file of sb has holes (fewer blocks than bytes). */
struct stat;
int pcp_sparse(const struct stat *sb);

/* pcp_write - write n bytes of b at off of fd; with sparse, 4 KiB pages of
 * zeros are skipped rather than written (fd was truncated at or before off,
 * so they stay holes; the writer sets the final size with ftruncate). Then
 * it starts the kernel's writeback of the range (sync_file_range, without
 * waiting), so that the fsync that acknowledges the file finds little left
 * to write: the disk works while the network does. Returns 0, or -1 with
 * errno (the writeback's own failure is not reported here: fsync reports
 * it). */
int pcp_write(int fd, const uint8_t *b, size_t n, uint64_t off, int sparse);

/* pcp_plan - the sizes of a file's data messages from off to size, which
 * both ends compute alike (the receiver posts its receives by it).
 * Without ramp: messages of block bytes, the last one shorter. With ramp
 * the messages go in rounds of `lanes` (a message per channel in turn for
 * pcp -n K; the bundle's channels otherwise), every message of a round the
 * same size but the file's last:
 *  - up: round r's messages are (block / 8) << r bytes (at least 64 KiB),
 *    up to block, so every channel has bytes to carry a few milliseconds
 *    after the start, instead of one block's read and checksum each in turn;
 *  - down: a round takes at most half of what is left, shared by the lanes,
 *    and never less than the first round's size, so the channels' last
 *    messages are small and end together, and what the receiver still has
 *    to checksum, write and sync after the last byte arrives is small;
 *  - last: when what is left fits in one round of that size, it is shared
 *    evenly (the lanes' totals differ by less than `lanes` bytes).
 * Sizes are multiples of 4 KiB but in the last round. Thread-safe (no state but
 * *p). pcp_plan_next returns the next message's bytes and moves on, 0 when
 * the plan is done. */
struct pcp_plan {
    uint64_t off, size, block, small, round_len;
    uint32_t lanes, i, round;
    int ramp;
};
void pcp_plan_init(struct pcp_plan *p, uint64_t off, uint64_t size, uint64_t block, uint32_t lanes,
                   int ramp);
uint64_t pcp_plan_next(struct pcp_plan *p);

#define PCP_LANES_MAX 64 /* lanes beyond are taken as this many */

/* pcp_hash_prefix - XXH3-64 state (an XXH3_state_t *, reset first) over the
 * first len bytes of fd, read with pread through buf (cap bytes). Both ends
 * use it to check a partial copy before resuming. Returns 0, or -1 when the
 * file is shorter or unreadable. */
int pcp_hash_prefix(int fd, uint64_t len, void *state, uint8_t *buf, size_t cap);

#endif
