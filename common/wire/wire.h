/* wire.h - PIO frame encode/decode: the only code that reads bytes from the network.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Every frame, on every plane (process<->piod over a Unix stream socket,
 * piod<->piod over ZeroMQ tcp/CURVE or the express lane, and the TCP data
 * channels), is a 16-byte header followed by a body:
 *
 *   offset size field
 *   0      4    magic   "PIO1" (0x50 0x49 0x4F 0x31)
 *   4      1    version PIO_WIRE_VERSION
 *   5      1    type    enum pio_ftype
 *   6      2    flags   per type (0 unless said)
 *   8      4    length  body length in bytes (for C_DATA: the fixed body only;
 *                       the payload of C_DATA.len bytes follows it)
 *   12     4    check   low 32 bits of XXH3-64(body, seed = XXH3-64(header
 *                       bytes 0..11, seed 0x70696F)); before protocol 5, XXH32
 *
 * All header and body integers are little-endian, whatever the host; bodies
 * are fixed fields then variable parts, each length-prefixed. User payload
 * bytes (eager data, C_DATA payload) are carried as the sender laid them out:
 * the datatype code and the sender's byte order travel with the message and
 * the receiving process converts (types.h).
 *
 * Decoding never trusts the input: every length is checked against the
 * buffer, strings must be NUL-free and shorter than their field, counts are
 * bounded, and a frame of an unknown type or version is refused with
 * PIO_EVERSION / PIO_EPROTO. Decoded pointers (payload, info records) point
 * into the caller's buffer and live as long as it does.
 *
 * Thread-safety: every function is thread-safe (no shared state).
 * The byte layout of each body is written down in docs/protocol.md.
 */
#ifndef PIO_WIRE_H
#define PIO_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define PIO_WIRE_MAGIC        0x314F4950u /* "PIO1" read as a little-endian u32 */
#define PIO_WIRE_VERSION      5
#define PIO_WIRE_HDR          16
#define PIO_WIRE_NAME         64 /* names: at most 63 bytes + NUL */
#define PIO_WIRE_ADDR         64 /* "a.b.c.d:port" or "[IPv6]:port" */
#define PIO_WIRE_MAX_GRANTS   64
#define PIO_WIRE_MAX_REG      128
#define PIO_WIRE_MAX_LOAD     32 /* channel rows in one H_LOAD */
#define PIO_WIRE_MAX_RANGES   128
#define PIO_WIRE_MAX_CHANNELS 64
#define PIO_WIRE_MAX_CLASSES  8          /* P_QOS: message classes of a receiving process */
#define PIO_WIRE_KEY          32         /* channel key / challenge / MAC length */
#define PIO_WIRE_MAX_BODY     (1u << 24) /* control bodies; eager payload fits */

/* Frame types. P_ process<->piod, H_ piod<->piod control, C_ data channel. */
#define PIO_FTYPES(X)                                                                              \
    X(P_HELLO, 1)        /* process -> piod: join */                                               \
    X(P_WELCOME, 2)      /* piod -> process: pool and limits, or refusal */                        \
    X(P_BYE, 3)          /* process -> piod: leaving */                                            \
    X(P_PARTNER, 4)      /* process -> piod: look up an application */                             \
    X(P_PARTNER_INFO, 5) /* piod -> process: where it is, or an error */                           \
    X(P_SEND, 6)         /* process -> piod: a new message (eager data inline) */                  \
    X(P_SEND_DATA, 7)    /* process -> piod: ranges of the send region hold message bytes */       \
    X(P_RELEASE, 8)      /* piod -> process: send-region ranges are free again */                  \
    X(P_SEND_DONE, 9)    /* piod -> process: a message completed (sync) or failed */               \
    X(P_MSG_NEW, 10)     /* piod -> process: an incoming message (eager data inline) */            \
    X(P_MSG_DATA, 11)    /* piod -> process: recv-region ranges hold message bytes */              \
    X(P_CLAIM, 12)       /* process -> piod: a receive matched this message */                     \
    X(P_FREE, 13)        /* process -> piod: recv-region ranges consumed */                        \
    X(P_CONSUMED, 14)    /* process -> piod: the whole message was received */                     \
    X(P_EVENT, 15)       /* piod -> process: a partner process joined or left */                   \
    X(P_INFO_REQ, 16)    /* process/tool -> piod: status request */                                \
    X(P_INFO, 17)        /* piod -> process/tool: status records */                                \
    X(P_QOS, 18)         /* process -> piod: receive-space shares of its message classes */        \
    X(P_LANE_REQ, 19)    /* process -> piod: a direct lane to a process of a peer, please */       \
    X(P_LANE, 20)        /* piod -> process: a direct lane's end (SCM_RIGHTS), or a refusal */     \
    X(H_HELLO, 32)       /* piod -> peer piod: who I am, my channels, channel key */               \
    X(H_REGISTRY, 33)    /* piod -> peer piod: processes joined/left */                            \
    X(H_REQUEST, 34)     /* message announcement (eager data inline) */                            \
    X(H_REPLY, 35)       /* receiver grants: chunk -> channel */                                   \
    X(H_DONE, 36)        /* receiver: message delivered (sync) or failed */                        \
    X(H_BYE, 37)         /* piod leaving */                                                        \
    X(H_LOAD, 38)        /* piod -> member of its system (UDP): its channels' load */              \
    X(H_SEQ, 39)         /* piod -> peer piod: one numbered H_* frame (acked, sent again) */       \
    X(H_ACK, 40)         /* piod -> peer piod: numbered frames received so far */                  \
    X(C_HELLO, 64)       /* channel opener: system, channel index */                               \
    X(C_CHALLENGE, 65)   /* channel acceptor: random challenge */                                  \
    X(C_PROOF, 66)       /* opener: MAC(key, challenge | index | system) */                        \
    X(C_ACCEPT, 67)      /* acceptor: status (PIO_OK or why refused) */                            \
    X(C_DATA, 68)        /* a chunk: fixed body, then the payload */                               \
    X(C_ACK, 69)         /* acceptor -> opener: chunks received */                                 \
    X(C_SEALED, 70)      /* sealed express lane: one H_* frame encrypted, then its tag */          \
    X(C_LANE, 71)        /* direct lane opener piod -> acceptor piod: whose lane it is */          \
    X(L_MSG, 80)         /* direct lane, sender -> receiver process: one message */                \
    X(L_ACK, 81)         /* direct lane, receiver -> sender: messages taken so far */              \
    X(L_FLUSH, 82)       /* direct lane, sender -> receiver: acknowledge up to seq now */

#define PIO_FTYPE_ENUM_(name, value) PIO_F_##name = value,
enum pio_ftype { PIO_FTYPES(PIO_FTYPE_ENUM_) };
#undef PIO_FTYPE_ENUM_

/* Send/receive flags carried in P_SEND, H_REQUEST, P_MSG_NEW. */
#define PIO_WF_SYNC   0x01 /* sender wants H_DONE / P_SEND_DONE on delivery */
#define PIO_WF_BIGEND 0x02 /* payload is big-endian */
#define PIO_WF_EAGER  0x04 /* payload is inline in this frame */
/* the destination process was not joined anywhere, as the sending piod
 * knew, since the sender joined: it is a new run's, which may join later;
 * the message waits for it rather than failing for the old run's leave */
#define PIO_WF_FRESH 0x08

/* Header flags of P_SEND_DONE (struct pio_frame.flags); without either, the
 * send (id = its sid) completed or failed with status. */
#define PIO_WSD_CANCELLED  0x0001 /* an incoming message (id = its key) was cancelled */
#define PIO_WSD_CHANNEL_OK 0x0002 /* the piod took the send's USER channel (not the end) */

/* Header flags (struct pio_frame.flags, the header's u16). Data channels:
 * C_HELLO with PIO_WH_SEAL asks to seal the channel; C_ACCEPT with it says
 * the channel is sealed (status PIO_OK) or that this acceptor takes sealed
 * channels only (status PIO_EREFUSED); on a sealed channel every C_DATA
 * payload and every C_ACK frame is followed by a 16-byte tag
 * (common/seal.h). */
#define PIO_WH_SEAL 0x0001
/* With PIO_WH_SEAL: on C_HELLO, the opener offers AES-256-GCM; on C_ACCEPT,
 * the acceptor chose it (else the channel uses ChaCha20-Poly1305). */
#define PIO_WH_AES 0x0002

/* Connection (balancing) codes on the wire. */
enum pio_wconn { PIO_WCONN_USER = 0, PIO_WCONN_STATIC = 1, PIO_WCONN_DYNAMIC = 2 };

struct pio_range {
    uint64_t off; /* offset in the pool region */
    uint64_t len;
};

/* ---- process <-> piod ---- */
struct pio_p_hello {
    uint32_t proto;          /* PIO_WIRE_VERSION the process speaks */
    uint32_t proc;           /* process_ID */
    uint32_t nprocs;         /* processes in the application */
    uint32_t pid;            /* OS pid, for liveness checks */
    uint32_t flags;          /* PIO_HF_* */
    char app[PIO_WIRE_NAME]; /* application name */
};
/* P_HELLO flags. */
#define PIO_HF_OWN_UID 0x01 /* take messages only from senders of this process' uid */
struct pio_p_welcome {
    int32_t status;              /* PIO_OK or why refused */
    uint32_t eager_limit;        /* bytes */
    uint32_t chunk;              /* chunk size in bytes */
    uint64_t send_off, send_len; /* send region within the pool */
    uint64_t recv_off, recv_len; /* recv region within the pool */
    char shm[PIO_WIRE_NAME];     /* shm_open name of the pool */
    char host[PIO_WIRE_NAME];
    char system[PIO_WIRE_NAME];
};
struct pio_p_partner {
    uint64_t req;        /* caller's request id, echoed */
    uint32_t timeout_ms; /* how long to wait for it to appear */
    char app[PIO_WIRE_NAME];
};
struct pio_p_partner_info {
    uint64_t req;
    int32_t status;
    uint32_t nprocs;
    uint32_t channels; /* channels in the bundle to it (0: same host) */
    char system[PIO_WIRE_NAME];
    char host[PIO_WIRE_NAME];
};
struct pio_p_send {
    uint64_t sid;   /* sender-local id (unique per process) */
    uint64_t size;  /* bytes */
    uint64_t count; /* elements */
    uint32_t dst_proc;
    int32_t tag;
    uint32_t datatype;           /* enum pio_type code (types.h) */
    uint16_t conn;               /* enum pio_wconn */
    uint16_t conn_arg;           /* channel index for USER */
    uint32_t flags;              /* PIO_WF_* */
    char partner[PIO_WIRE_NAME]; /* destination application */
    const uint8_t *payload;      /* eager bytes (PIO_WF_EAGER), len == size */
};
struct pio_p_ranges { /* P_SEND_DATA, P_RELEASE, P_MSG_DATA, P_FREE */
    uint64_t id;      /* sid (send side) or message key (recv side); 0 in P_RELEASE/P_FREE */
    uint64_t msg_off; /* offset in the message of ranges[0] (P_SEND_DATA, P_MSG_DATA) */
    uint32_t n;
    struct pio_range r[PIO_WIRE_MAX_RANGES];
};
struct pio_p_done { /* P_SEND_DONE, P_CONSUMED, P_CLAIM */
    uint64_t id;    /* sid, or message key */
    int32_t status;
};
struct pio_p_msg_new {
    uint64_t key; /* receiver-local message key */
    uint64_t size, count;
    uint64_t seq; /* per (src proc, dst proc, tag) */
    uint32_t src_proc;
    int32_t tag;
    uint32_t datatype;
    uint32_t flags;
    uint32_t src_uid, src_gid; /* the sender's, stamped by its piod (SO_PEERCRED) */
    char src_app[PIO_WIRE_NAME];
    char src_system[PIO_WIRE_NAME]; /* the system whose piod stamped it */
    char src_user[PIO_WIRE_NAME];   /* src_uid's name there ("": none) */
    const uint8_t *payload;         /* eager bytes, len == size */
};
struct pio_p_event {
    uint32_t kind; /* 1 joined, 2 left */
    uint32_t proc;
    uint32_t nprocs;
    char app[PIO_WIRE_NAME];
};
struct pio_p_qos { /* messages to the process with tag0 <= tag < tag0 + n are of class
                     tag - tag0, the others of class 0; n 0: no classes */
    int32_t tag0;
    uint32_t n;
    uint32_t share[PIO_WIRE_MAX_CLASSES]; /* percent of the receive region, 1..100 */
};
struct pio_p_info_req {
    uint64_t req;
    uint32_t what; /* bit 0 host, bit 1 channels, bit 2 apps */
};
/* P_LANE_REQ: the calling process asks for a direct lane to process proc
 * of application app, which joined a peer's piod (docs/protocol.md,
 * "Direct lanes"). */
struct pio_p_lane_req {
    uint64_t req; /* echoed in P_LANE */
    uint32_t proc;
    char app[PIO_WIRE_NAME];
};
/* P_LANE: one end of a direct lane, the connected socket attached
 * (SCM_RIGHTS) when status is PIO_OK. role 0: the opener's end (req echoes
 * P_LANE_REQ; app/proc is the destination); role 1: the acceptor's end
 * (req 0; app/proc, uid, gid, user and system are the sender's, as its
 * piod stamped them). The seal of each direction: keys and counters
 * (key_out seals what this end sends). */
struct pio_p_lane {
    uint64_t req;
    int32_t status;
    uint32_t role;
    uint32_t proc;
    uint32_t sealed; /* 0: frames travel as they are */
    uint32_t cipher; /* PIO_CIPHER_AES or PIO_CIPHER_CHACHA (seal.h) */
    uint32_t uid, gid;
    uint64_t lane_id; /* the opener's piod numbers its lanes */
    uint64_t n_out, n_in;
    uint8_t key_out[PIO_WIRE_KEY], key_in[PIO_WIRE_KEY];
    char app[PIO_WIRE_NAME];
    char system[PIO_WIRE_NAME];
    char user[PIO_WIRE_NAME];
};
/* A channel's state, in P_INFO and H_LOAD rows (and piod's own). */
enum pio_wchan_state {
    PIO_WCHAN_DOWN = 0,
    PIO_WCHAN_CONNECTING = 1,
    PIO_WCHAN_UP = 2,
    PIO_WCHAN_UNKNOWN = 3, /* a member's row without a recent load report */
};

struct pio_chan_info {
    char peer[PIO_WIRE_NAME];
    char local[PIO_WIRE_ADDR];
    char remote[PIO_WIRE_ADDR];
    uint32_t index;
    uint32_t state; /* enum pio_wchan_state */
    uint64_t tx_bytes, rx_bytes;
    uint64_t queued;               /* bytes granted/queued not yet acknowledged */
    uint64_t rate;                 /* measured bytes/s (recent) */
    uint64_t tx_chunks, rx_chunks; /* data chunks sent / received */
    uint64_t resent;               /* chunks sent on it that were resends */
    uint32_t downs;                /* times it went down after being up */
    char host[PIO_WIRE_NAME];      /* member host that owns the row ("": the one asked) */
};
struct pio_app_info {
    char app[PIO_WIRE_NAME];
    char system[PIO_WIRE_NAME];
    uint32_t nprocs;
    uint32_t joined; /* processes currently joined */
};
struct pio_p_info {
    uint64_t req;
    char host[PIO_WIRE_NAME];
    char system[PIO_WIRE_NAME];
    uint32_t version;
    uint32_t nchan, napp;
    struct pio_chan_info chan[PIO_WIRE_MAX_CHANNELS];
    struct pio_app_info app[PIO_WIRE_MAX_REG];
    uint64_t pool_size, pool_used;
};

/* ---- piod <-> piod control ---- */
struct pio_h_hello {
    uint32_t proto;
    uint32_t nchan; /* channels this piod opens to the receiver */
    char system[PIO_WIRE_NAME];
    char host[PIO_WIRE_NAME];
    uint8_t chan_key[PIO_WIRE_KEY]; /* key the receiver's channels must prove */
    uint64_t epoch;                 /* this run of the sender (random, never 0) */
};
/* H_SEQ: a numbered H_* frame from one run of a piod to one run of a peer.
 * inner is a whole encoded frame (not H_HELLO, H_SEQ or H_ACK); it points
 * into the decoded buffer. ack piggybacks H_ACK's field for the reverse
 * direction (0: nothing received yet). */
struct pio_h_seq {
    uint64_t src_epoch, dst_epoch;
    uint64_t seq; /* 1, 2, ... per (src_epoch, dst_epoch) */
    uint64_t ack;
    uint32_t len;
    const uint8_t *inner;
};
/* H_ACK: the sender of this frame (src_epoch) has every numbered frame of
 * the peer's run dst_epoch up to and including ack. */
struct pio_h_ack {
    uint64_t src_epoch, dst_epoch;
    uint64_t ack;
};
struct pio_h_load { /* H_LOAD: one member's picture of its channels */
    char host[PIO_WIRE_NAME];
    uint64_t seq;
    uint32_t nchan;
    struct pio_chan_info chan[PIO_WIRE_MAX_LOAD];
};
/* A registry entry's state (H_REGISTRY). */
enum pio_wreg_state { PIO_WREG_JOINED = 1, PIO_WREG_LEFT = 2 };

struct pio_reg_entry {
    char app[PIO_WIRE_NAME];
    uint32_t nprocs;
    uint32_t proc;
    uint32_t state; /* enum pio_wreg_state */
};
struct pio_h_registry {
    uint32_t full; /* 1: this is the whole list (replaces), 0: changes */
    uint32_t n;
    struct pio_reg_entry e[PIO_WIRE_MAX_REG];
};
struct pio_h_request {
    uint64_t msgid; /* unique per sending system */
    uint64_t seq;   /* per (src app/proc, dst app/proc, tag) */
    uint64_t size, count;
    uint32_t src_proc, dst_proc;
    int32_t tag;
    uint32_t datatype;
    uint32_t flags; /* PIO_WF_* */
    uint32_t chunk; /* chunk size the sender cut the message into */
    uint16_t conn, conn_arg;
    uint32_t src_uid, src_gid; /* the sender's, from SO_PEERCRED on the sending piod */
    char src_app[PIO_WIRE_NAME];
    char dst_app[PIO_WIRE_NAME];
    char src_user[PIO_WIRE_NAME]; /* src_uid's name on the sending host ("": none) */
    const uint8_t *payload;       /* eager bytes */
};
struct pio_grant {
    uint64_t off; /* offset of the chunk in the message */
    uint32_t len;
    uint16_t channel; /* index in the sender's bundle to us */
    uint16_t host;    /* sending host in the system (0: the only one) */
};
struct pio_h_reply {
    uint64_t msgid;
    uint32_t n;
    struct pio_grant g[PIO_WIRE_MAX_GRANTS];
};
struct pio_h_done {
    uint64_t msgid;
    int32_t status;
};

/* ---- data channel ---- */
struct pio_c_hello {
    uint32_t proto;
    uint32_t index;             /* channel index in the bundle */
    char system[PIO_WIRE_NAME]; /* opener's system (its identity to the acceptor) */
    char host[PIO_WIRE_NAME];
    char target[PIO_WIRE_NAME]; /* the host meant ("": the acceptor); another member relays */
};
struct pio_c_key { /* C_CHALLENGE (nonce) and C_PROOF (MAC) */
    uint8_t b[PIO_WIRE_KEY];
};
struct pio_c_accept {
    int32_t status;
};
/* C_LANE: after C_ACCEPT on a connection with index PIOD_DLANE_INDEX, the
 * opener says whose lane it is (sealed inside C_SEALED when the connection
 * is); the acceptor answers C_ACCEPT again (PIO_OK, or PIO_EGONE when the
 * destination did not join there) and hands the socket to the process. */
struct pio_c_lane {
    uint64_t lane_id;
    uint32_t src_proc, dst_proc;
    uint32_t uid, gid; /* the sender's (SO_PEERCRED at its piod) */
    char src_app[PIO_WIRE_NAME];
    char dst_app[PIO_WIRE_NAME];
    char user[PIO_WIRE_NAME];
};
/* L_MSG: one message on a direct lane, its bytes inline (flags has
 * PIO_WF_EAGER); seq counts the lane's messages from 1. */
struct pio_l_msg {
    uint64_t seq;
    uint64_t size, count;
    int32_t tag;
    uint32_t datatype;
    uint32_t flags;
    const uint8_t *payload;
};
/* L_ACK (receiver -> sender): every message up to seq was taken; L_FLUSH
 * (sender -> receiver): send an L_ACK for up to seq now. */
struct pio_l_ack {
    uint64_t seq;
};
struct pio_c_data { /* fixed body; payload of len bytes follows */
    uint64_t msgid;
    uint64_t off;
    uint32_t len;
    uint32_t resend; /* 1: a retransmission after a channel failure */
};
struct pio_c_ack {
    uint32_t n;
    struct {
        uint64_t msgid, off;
    } a[PIO_WIRE_MAX_RANGES];
};

/* C_SEALED (a sealed express lane, common/seal.h): the body is an encoded
 * frame (at least a header) encrypted, then a 16-byte tag; len counts both.
 * Its header's check covers the header only: the tag authenticates the
 * body. The sealer builds it in place (pio_wire_sealed_wrap); pio_wire_encode
 * writes the same bytes from a body it is given. */
#define PIO_WIRE_SEALED_TAG 16
struct pio_c_sealed {
    uint32_t len;
    const uint8_t *body; /* into the decoded buffer */
};

/* One decoded (or to-be-encoded) frame. */
struct pio_frame {
    uint8_t type; /* enum pio_ftype */
    uint16_t flags;
    union {
        struct pio_p_hello p_hello;
        struct pio_p_welcome p_welcome;
        struct pio_p_partner p_partner;
        struct pio_p_partner_info p_partner_info;
        struct pio_p_send p_send;
        struct pio_p_ranges p_ranges; /* P_SEND_DATA, P_RELEASE, P_MSG_DATA, P_FREE */
        struct pio_p_done p_done;     /* P_SEND_DONE, P_CLAIM, P_CONSUMED, P_BYE (id 0) */
        struct pio_p_msg_new p_msg_new;
        struct pio_p_event p_event;
        struct pio_p_info_req p_info_req;
        struct pio_p_qos p_qos;
        struct pio_p_info p_info;
        struct pio_h_hello h_hello;
        struct pio_h_load h_load;
        struct pio_h_registry h_registry;
        struct pio_h_request h_request;
        struct pio_h_reply h_reply;
        struct pio_h_done h_done; /* H_DONE, H_BYE */
        struct pio_h_seq h_seq;
        struct pio_h_ack h_ack;
        struct pio_c_hello c_hello;
        struct pio_c_key c_key; /* C_CHALLENGE, C_PROOF */
        struct pio_c_accept c_accept;
        struct pio_c_data c_data;
        struct pio_c_ack c_ack;
        struct pio_c_sealed c_sealed;
        struct pio_p_lane_req p_lane_req;
        struct pio_p_lane p_lane;
        struct pio_c_lane c_lane;
        struct pio_l_msg l_msg;
        struct pio_l_ack l_ack; /* L_ACK, L_FLUSH */
    } u;
};

/* pio_wire_ranges1 - make f a ranges frame (type P_SEND_DATA, P_RELEASE,
 * P_MSG_DATA or P_FREE) of one range: id, msg_off, and pool bytes
 * [off, off + len). Sets only the fields such a frame encodes (it is on the
 * per-chunk path: nothing else of the large frame is touched). */
void pio_wire_ranges1(struct pio_frame *f, int type, uint64_t id, uint64_t msg_off, uint64_t off,
                      uint64_t len);

/* pio_wire_encoded_size - bytes pio_wire_encode will write for f (header,
 * body and any inline payload; for C_DATA header and fixed body only). */
size_t pio_wire_encoded_size(const struct pio_frame *f);

/* pio_wire_encode - write f into buf.
 * buf [out]: at least cap bytes. *len [out]: bytes written.
 * Returns PIO_OK; PIO_EINVAL for an unknown type, a string too long or a count
 * over its bound; PIO_ENOMEM when cap is too small. */
int pio_wire_encode(const struct pio_frame *f, uint8_t *buf, size_t cap, size_t *len);

/* pio_wire_encode_head - pio_wire_encode but for an eager payload's bytes,
 * which the frame ends with and its check leaves out: the caller sends them
 * after the head (writev, or sealed from where they are). *head [out]: the
 * bytes written; *len [out]: the whole frame's length (head + payload).
 * cap need only hold the head. Returns as pio_wire_encode. */
int pio_wire_encode_head(const struct pio_frame *f, uint8_t *buf, size_t cap, size_t *head,
                         size_t *len);

/* H_SEQ's fixed fields (epochs, seq, ack, len) and header: the inner frame
 * follows them. */
#define PIO_WIRE_SEQ_FIXED 36
#define PIO_WIRE_SEQ_HDR   (PIO_WIRE_HDR + PIO_WIRE_SEQ_FIXED)

/* pio_wire_seq_wrap - write the header and fixed fields of an H_SEQ in
 * buf[0..PIO_WIRE_SEQ_HDR), around the h->len bytes of an encoded frame the
 * caller has already put at buf + PIO_WIRE_SEQ_HDR (h->inner is not read):
 * the frame is wrapped without a copy. The H_SEQ's check covers the fixed
 * fields only; the inner frame keeps its own. cap: bytes at buf.
 * *len [out]: the whole H_SEQ's length. Returns PIO_OK, or PIO_EINVAL (a
 * seq of 0, an inner frame shorter than a header, too little room, a body
 * over PIO_WIRE_MAX_BODY). */
int pio_wire_seq_wrap(uint8_t *buf, size_t cap, const struct pio_h_seq *h, size_t *len);

/* pio_wire_sealed_wrap - write the header of a C_SEALED in
 * buf[0..PIO_WIRE_HDR) for a body of body_len bytes (the sealed frame and
 * its tag) that the caller puts at buf + PIO_WIRE_HDR. The header's first
 * 12 bytes are the associated data the caller seals the body under, so it
 * is written first. Returns PIO_OK, or PIO_EINVAL (a body shorter than a
 * header and a tag, or over PIO_WIRE_MAX_BODY). */
int pio_wire_sealed_wrap(uint8_t *buf, size_t body_len);

/* pio_wire_reseal - recompute the check of the frame in buf[0..len) (its
 * length field says how much body follows) as an encoder would, leaving an
 * eager payload out: for tests and fuzzers that change a frame's bytes and
 * want the decoder to look at the body. Does nothing when buf holds less
 * than the header and that body. */
void pio_wire_reseal(uint8_t *buf, size_t len);

/* pio_wire_peek - check a header (at least PIO_WIRE_HDR bytes at buf).
 * *type, *body_len [out]. Returns PIO_OK; PIO_EPROTO for a bad magic or a
 * body over PIO_WIRE_MAX_BODY; PIO_EVERSION for another version (*peer_version
 * says which, may be NULL); PIO_EAGAIN when len < PIO_WIRE_HDR. The check
 * field is not verified here (it needs the body). */
int pio_wire_peek(const uint8_t *buf, size_t len, uint8_t *type, uint32_t *body_len,
                  uint8_t *peer_version);

/* pio_wire_decode - decode one whole frame (header + body; for C_DATA the
 * header and fixed body, without the payload) from buf[0..len).
 * f [out]: the frame; pointers inside it point into buf.
 * *used [out, may be NULL]: bytes consumed.
 * Returns PIO_OK; PIO_EAGAIN when buf holds less than one frame; PIO_EPROTO
 * for bad magic, bad check, unknown type, malformed or trailing body bytes;
 * PIO_EVERSION for another protocol version. On failure f is unspecified. */
int pio_wire_decode(const uint8_t *buf, size_t len, struct pio_frame *f, size_t *used);

/* pio_wire_type_name - "P_HELLO", ... or "?" (static). */
const char *pio_wire_type_name(int type);

#endif
