/* proto.h - what pfs clients, the metadata server and the I/O servers say to
 * each other. Private to pfs/. Thread-safe: all of it (no state).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Everyone is a PIO application: the metadata server joins its piod as
 * "pfs.mds" (--name), each I/O server as the name the metadata server lists
 * for it (default "pfs.iod.HOST"), a client as whatever it chose. Every
 * message is one PIO_BYTE array: an encoded header (struct pfs_msg, integers
 * little-endian, strings length-prefixed) followed by its data bytes.
 *
 *   tag PFS_TAG_REQ + class   client -> server: a request of service class
 *                             `class` (0..PFS_CLASS_MAX-1; the metadata
 *                             server uses class 0 only). Servers post one
 *                             receive per class, so a server whose queue of
 *                             one class is full still takes the others.
 *   tag PFS_TAG_REP + rid % PFS_RID_SPAN   server -> client: the reply to
 *                             request rid (op PFS_OP_REPLY, err = a PIO
 *                             status, the request's rid echoed).
 * The request names its sender (client = PIO application name, proc = its
 * process number) so the server can answer; user is the requester's login
 * name (the per-user cap on outstanding requests counts by it).
 *
 * Metadata server ops (path = an absolute pfs path, "/" is the root):
 *   LOOKUP   path -> attr (+ layout for a file; for a directory, its default
 *            stripe in layout.count / layout.stripe_size, 0 = none)
 *   CREATE   path, attr.mode, flags PFS_F_EXCL / PFS_F_TRUNC, off = size hint
 *            (0 = unknown), layout.count / stripe_size = the caller's wish (0 =
 *            policy or the directory's default) -> attr + layout. An existing
 *            file: EEXIST with EXCL; else its attr + layout (size set to 0 with
 *            TRUNC: the client truncates the objects).
 *   MKDIR    path, attr.mode -> attr
 *   READDIR  path, off = index of the first entry wanted -> data = entries
 *            (pfs_dirent_put), flags PFS_F_MORE when there are more
 *   UNLINK   path (flags PFS_F_DIR: a directory, must be empty) -> attr +
 *            layout of what was removed (the client destroys the objects)
 *   RENAME   path -> path2 (replaces a file at path2: its attr + layout come
 *            back with flags PFS_F_REPLACED, for the client to destroy)
 *   SETSIZE  fid, off = size; flags PFS_F_EXACT sets it, else it only grows
 *   SETATTR  path, attr.mode (flags PFS_F_MODE) and/or attr.mtime_ns
 *            (flags PFS_F_MTIME)
 *   SETSTRIPE path, layout.count, layout.stripe_size: a directory's default
 *            (inherited by files created in it and by new subdirectories) or
 *            an empty file's layout (EBUSY once it has data)
 *   STATFS   -> len = number of I/O servers, data = their names, NUL-separated,
 *            in server order; off = files, attr.size = bytes (sum of sizes)
 *   ACCESS   (from an I/O server only) fid, flags PFS_F_RD / PFS_F_WR, for the
 *            caller attr.uid / attr.gid / user (as the piods stamped the
 *            caller's request to that server) -> OK, or PIO_EPERM, or
 *            PIO_ENOENT (no such file: it was removed)
 * Permissions (POSIX: owner, group, other bits of mode) are judged by the
 * metadata server on the identity the piods stamped on each request
 * (PIO_Status: uid, gid, user name), never on what a message says; LOOKUP
 * and CREATE carry the open's intent in flags PFS_F_RD / PFS_F_WR. The I/O
 * servers ask ACCESS for each (file, caller, intent) they have not seen in
 * the last PFS_ACCESS_TTL_MS.
 * I/O server ops (fid = the file's id; off / len in the object of that file
 * on this server, which holds the file's stripes in layout order):
 *   WRITE    fid, off, data -> len = bytes written, off = XXH3-64 of the data
 *            as the server received it (the data is in the file system's
 *            cache; SYNC makes it durable)
 *   READ     fid, off, len (<= PFS_IO_MAX); wid >= 0: put the bytes into the
 *            client's PIO window wid at disp (one-sided), else send them as the
 *            reply's data -> len = bytes read (fewer at the object's end; a
 *            missing object reads as empty), off = XXH3-64 of those bytes as
 *            the server read them. With WRITE's, every byte is checked end
 *            to end, one-sided puts included, at no extra disk access.
 *   TRUNC    fid, off = the object's new size
 *   DESTROY  fid: remove the object (missing is fine)
 *   SYNC     fid: fdatasync the object
 *   OSTAT    fid -> off = the object's size (0 if missing)
 *   QSTAT    -> data = text, one line per class (pfs_qos_format); flags
 *            PFS_F_RESET resets counters and latencies after reading
 *   DF       -> off = bytes used by objects, len = bytes free, fid = objects
 */
#ifndef PFS_PROTO_H
#define PFS_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define PFS_TAG_REQ   100
#define PFS_TAG_REP   1000000
#define PFS_RID_SPAN  (1u << 16)
#define PFS_CLASS_MAX 8

#define PFS_IO_MAX      (1u << 20) /* most data bytes in one WRITE or READ */
#define PFS_STRIPES_MAX 32         /* most stripes of a file (policy cap) */
#define PFS_SERVERS_MAX 256        /* most I/O servers of a file system */
#define PFS_PATH_MAX    1024
#define PFS_NAME_MAX    64 /* PIO application names, class names */
#define PFS_USER_MAX    32
#define PFS_TEXT_MAX    256

/* the largest header; a message is at most PFS_HDR_MAX + PFS_IO_MAX bytes */
#define PFS_HDR_MAX                                                                                \
    (168 + 4 * PFS_STRIPES_MAX + 2 * PFS_NAME_MAX + PFS_USER_MAX + PFS_TEXT_MAX + 2 * PFS_PATH_MAX)
#define PFS_MSG_MAX (PFS_HDR_MAX + PFS_IO_MAX)

enum pfs_op {
    PFS_OP_LOOKUP = 1,
    PFS_OP_CREATE,
    PFS_OP_MKDIR,
    PFS_OP_READDIR,
    PFS_OP_UNLINK,
    PFS_OP_RENAME,
    PFS_OP_SETSIZE,
    PFS_OP_SETATTR,
    PFS_OP_SETSTRIPE,
    PFS_OP_STATFS,
    PFS_OP_ACCESS,
    PFS_OP_WRITE = 32,
    PFS_OP_READ,
    PFS_OP_TRUNC,
    PFS_OP_DESTROY,
    PFS_OP_SYNC,
    PFS_OP_OSTAT,
    PFS_OP_QSTAT,
    PFS_OP_DF,
    PFS_OP_REPLY = 64
};

#define PFS_F_EXCL     0x01u
#define PFS_F_TRUNC    0x02u
#define PFS_F_MORE     0x04u
#define PFS_F_DIR      0x08u
#define PFS_F_EXACT    0x10u
#define PFS_F_MODE     0x20u
#define PFS_F_MTIME    0x40u
#define PFS_F_REPLACED 0x80u
#define PFS_F_RESET    0x100u
#define PFS_F_RD       0x200u /* LOOKUP, CREATE, ACCESS: to read */
#define PFS_F_WR       0x400u /* LOOKUP, CREATE, ACCESS: to write */

#define PFS_ACCESS_TTL_MS 2000 /* an I/O server's verdicts are this fresh */

enum pfs_type { PFS_T_FILE = 1, PFS_T_DIR = 2 };

struct pfs_layout {
    uint64_t stripe_size;              /* bytes, a multiple of 4 KiB */
    uint32_t count;                    /* stripes: 1..PFS_STRIPES_MAX */
    uint32_t servers[PFS_STRIPES_MAX]; /* stripe i lives on server servers[i] */
};

struct pfs_attr {
    uint64_t fid;  /* file id (0 for directories' own use: see LOOKUP) */
    uint32_t type; /* enum pfs_type */
    uint32_t mode; /* permission bits */
    uint32_t uid;
    uint32_t gid;
    uint64_t size;
    int64_t mtime_ns;
    int64_t ctime_ns;
};

struct pfs_msg {
    uint32_t op;
    uint32_t cls;   /* service class (requests) */
    uint32_t flags; /* PFS_F_* */
    int32_t err;    /* REPLY: a PIO status (PIO_OK = 0) */
    uint32_t proc;  /* the sender's process number */
    int32_t wid;    /* READ: the client's window, -1 for none */
    uint64_t rid;   /* request id: the reply's tag is PFS_TAG_REP + rid % PFS_RID_SPAN */
    uint64_t fid;
    uint64_t off;
    uint64_t len;
    uint64_t disp; /* READ: where in the window */
    struct pfs_attr attr;
    struct pfs_layout layout;
    char client[PFS_NAME_MAX]; /* the sender's PIO application */
    char user[PFS_USER_MAX];
    char text[PFS_TEXT_MAX]; /* REPLY with an error: what went wrong, for people */
    char path[PFS_PATH_MAX];
    char path2[PFS_PATH_MAX];
    const uint8_t *data; /* the data bytes: encode copies them; decode points into its buffer */
    size_t dlen;
    /* Not on the wire: who sent a request, as the piods stamped it
     * (PIO_Status), set by pfs_srv_recv. */
    uint32_t from_uid, from_gid;
    char from_user[PFS_NAME_MAX];
};

/* pfs_msg_encode - header and data of m into buf (cap bytes). Returns the
 * bytes written, 0 if cap is too small. */
size_t pfs_msg_encode(const struct pfs_msg *m, uint8_t *buf, size_t cap);

/* pfs_msg_encode_head - the header alone (m->dlen counted, data not copied):
 * the caller places m->dlen data bytes right after it. Returns its bytes,
 * 0 if cap is too small. */
size_t pfs_msg_encode_head(const struct pfs_msg *m, uint8_t *buf, size_t cap);

/* pfs_msg_decode - len bytes into m (m->data points into buf). Returns 0, or
 * -1 when malformed: short, bad magic, unknown op, an unterminated or too
 * long string, layout count over PFS_STRIPES_MAX, data length not matching. */
int pfs_msg_decode(const uint8_t *buf, size_t len, struct pfs_msg *m);

/* pfs_path_ok - an absolute, normalised pfs path: starts with "/", no empty,
 * "." or ".." component, no trailing "/" (except the root), shorter than
 * PFS_PATH_MAX. Returns 1 if acceptable. */
int pfs_path_ok(const char *p);

/* Directory entries in READDIR's data: type u8, size u64, mode u32, mtime
 * i64, name (u16 length + bytes). */
struct pfs_dirent {
    uint32_t type;
    uint32_t mode;
    uint64_t size;
    int64_t mtime_ns;
    char name[256];
};

/* pfs_dirent_put - append e at buf + *used (cap bytes in all). Returns 0, or
 * -1 (nothing written) when it does not fit. */
int pfs_dirent_put(uint8_t *buf, size_t cap, size_t *used, const struct pfs_dirent *e);

/* pfs_dirent_next - decode the entry at data + *pos (len bytes in all) into
 * e and advance *pos. Returns 1 for an entry, 0 at the end, -1 malformed. */
int pfs_dirent_next(const uint8_t *data, size_t len, size_t *pos, struct pfs_dirent *e);

#endif
