/* wire.h - what the GAS preload library (libpgas.so) and the dispatcher
 * (gas-dispatcher) say to each other over the dispatcher's Unix socket.
 * Private to pfs/gas/. Pure functions: thread-safe.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * One stream connection per process (SOCK_STREAM, path $GAS_SOCKET, default
 * GAS_SOCKET_DEFAULT). Every frame is a fixed GAS_HDR_SIZE-byte header
 * (integers little-endian) followed by plen payload bytes. The dispatcher
 * serves one connection's frames strictly in order, so a request sees every
 * earlier write of the same process.
 *
 * Requests (id != 0 expects a reply with that id; id 0 only for async writes):
 *   OPEN    payload = pfs path (absolute, no NUL, < 1024 bytes), flags =
 *           GAS_O_*, aux = mode (the process's umask applied already)
 *           -> handle (never 0), off = size, len = GAS_MODE_DIR bit |
 *              permission bits, aux = mtime (ns). A directory opens
 *              read-only only: its handle answers FSTAT and CLOSE.
 *   WRITE   handle, off, payload = the bytes (plen = len). flags GAS_F_SYNC:
 *           reply once the bytes are applied at the I/O servers; else id = 0
 *           and no reply: the write is queued (relaxed semantics) and an error
 *           in applying it is reported by the next FSYNC / CLOSE / sync op
 *           on the handle
 *   READ    handle, off, len (at most GAS_PAYLOAD_MAX) -> off = bytes read,
 *           payload = the bytes (plen = off)
 *   FSYNC   handle -> once every earlier request of this connection is
 *           applied at the servers and durable there, and the size is known
 *           to the metadata server
 *   CLOSE   handle -> once every earlier request of this connection is
 *           applied and the size is known (not forced to disk); the handle is
 *           gone whatever the status
 *   FSTAT   handle -> as OPEN (the size counts the bytes the dispatcher
 *           holds for the file, not only what the servers have)
 *   STAT    payload = path -> as OPEN (handle 0)
 *   TRUNC   handle, off = new size -> after earlier writes are applied
 *   UNLINK  payload = path; flags GAS_F_DIR: remove an empty directory
 *   STATS   flags GAS_F_RESET: zero the counters after reading -> payload =
 *           text, one "key=value ..." line
 *   STATFS  payload = path (must exist) -> the file system's space, summed
 *           over its I/O servers as `pfs df` shows it: off = bytes used by
 *           objects, len = bytes available, aux = objects
 * Reply: op GAS_OP_REPLY, id echoed, status = a PIO status (pio.h, PIO_OK 0);
 * on failure the payload is the explanation (text, no NUL). A synchronous
 * write is all or nothing. A queued write's failure is reported by every
 * later barrier of its file (FSYNC, CLOSE, TRUNC, READ, a synchronous
 * WRITE): the bytes are lost.
 * A connection that ends without CLOSE (the process died): its queued
 * writes are still applied and its handles closed.
 */
#ifndef GAS_WIRE_H
#define GAS_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define GAS_SOCKET_DEFAULT "/run/pio/gas.sock"
#define GAS_PREFIX         "pgas:"     /* paths the preload library sends to the dispatcher */
#define GAS_MAGIC          0x31534147u /* "GAS1" */
#define GAS_HDR_SIZE       48
#define GAS_PAYLOAD_MAX    (1u << 20) /* most payload bytes in one frame */

enum gas_op {
    GAS_OP_OPEN = 1,
    GAS_OP_WRITE,
    GAS_OP_READ,
    GAS_OP_FSYNC,
    GAS_OP_CLOSE,
    GAS_OP_FSTAT,
    GAS_OP_STAT,
    GAS_OP_TRUNC,
    GAS_OP_UNLINK,
    GAS_OP_STATS,
    GAS_OP_REPLY,
    GAS_OP_STATFS,
    GAS_OP_END_ /* one past the last */
};

/* OPEN flags (the preload library maps O_* to these). */
#define GAS_O_RDONLY 0x0
#define GAS_O_WRONLY 0x1
#define GAS_O_RDWR   0x2
#define GAS_O_CREAT  0x40
#define GAS_O_EXCL   0x80
#define GAS_O_TRUNC  0x200
#define GAS_O_APPEND 0x400

#define GAS_F_SYNC  0x1 /* WRITE: reply once applied */
#define GAS_F_RESET 0x2 /* STATS: reset after reading */
#define GAS_F_DIR   0x4 /* UNLINK: the path is a directory (rmdir) */

#define GAS_MODE_DIR 0x80000000u /* in a reply's len: the path is a directory */

struct gas_hdr {
    uint32_t magic;
    uint16_t op;
    uint16_t flags;
    uint32_t id;
    uint32_t handle;
    int32_t status; /* replies: a PIO status */
    uint32_t plen;  /* payload bytes after the header */
    uint64_t off;
    uint64_t len;
    uint64_t aux;
};

/* gas_hdr_encode - h into out[GAS_HDR_SIZE] (magic set here). */
void gas_hdr_encode(const struct gas_hdr *h, uint8_t *out);

/* gas_hdr_decode - in[GAS_HDR_SIZE] into h. Returns 0, or -1 when it is not
 * a frame of ours: wrong magic, unknown op, payload above GAS_PAYLOAD_MAX,
 * or a WRITE whose plen is not its len. */
int gas_hdr_decode(const uint8_t *in, struct gas_hdr *h);

/* gas_op_name - "OPEN", ... ("?" for anything else). */
const char *gas_op_name(unsigned op);

#endif
