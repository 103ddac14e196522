/* piod.h - the daemon's core state: processes, peers, channels, messages.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Threads and what they own:
 *  - the main thread (piod_run) owns every ZeroMQ socket, the process and
 *    peer tables, all messages and every pool allocator; it alone sends
 *    frames to processes and peers.
 *  - per outgoing channel, a sender thread (connects, authenticates, writes
 *    C_DATA) and, while connected, an ack-reader thread.
 *  - per data listen address, an accept thread; per accepted channel, a
 *    receiver thread that reads C_DATA straight into the destination pool and
 *    answers C_ACK.
 * Channel threads never touch main-thread state: they report through the
 * event queue (piod_post), and find where a chunk goes through the grant
 * table. Locks (all leaves: never two held at once, never held across a
 * blocking call or a call up a layer):
 *    d->ev_mtx     the event queue
 *    d->grant_mtx  the grant table
 *    d->key_mtx    peers' channel keys and rx-channel slots
 *    ch->mtx       one tx channel's queue, unacked list, state, counters
 *    d->relay_mtx  relayed connections (relay.c)
 * Pool mappings are reference counted (piod_proc.refs, atomic) so a dying
 * process' pool is unmapped only after no channel thread still copies into
 * or out of it.
 */
#ifndef PIOD_PIOD_H
#define PIOD_PIOD_H

#define PIOD_EXPRESS_INDEX 0xffffu              /* C_HELLO index of an express lane */
#define PIOD_DLANE_INDEX   0xfffeu              /* C_HELLO index of a direct lane (dlane.c) */
#define PIOD_NCLS          PIO_WIRE_MAX_CLASSES /* receive classes of a process */

#include "balance.h"
#include "config.h"
#include "htab.h"
#include "keys.h"
#include "lane.h"
#include "seal.h"
#include "fstream.h"
#include "pool.h"
#include "transport.h"
#include "wire/wire.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

struct piod;

/* A chunk handed to a sender thread: self-contained (no main-thread state). */
struct piod_chunk {
    struct piod_chunk *next;
    uint64_t msgid, off;
    uint32_t len;
    uint32_t resend;
    const uint8_t *data;    /* in the source process' pool */
    struct piod_proc *proc; /* holds a pool reference while queued */
};

#define PIOD_DLV_SAMPLES 8 /* delivery samples a pacing limit looks back on */

/* One outgoing channel (we open it, we send C_DATA on it). */
struct piod_txchan {
    struct piod *d;
    int peer, index;
    pthread_t thr;
    pthread_mutex_t mtx;
    pthread_cond_t cv;
    int state;       /* enum pio_wchan_state (down, connecting, up) */
    int express;     /* the express lane (frames for the main loop), not a data channel */
    atomic_int stop; /* written under mtx, read anywhere */
    int conn_dead;   /* the connection failed: reconnect */
    struct piod_chunk *q, *q_tail; /* waiting to be sent */
    struct piod_chunk *unacked;    /* sent, not acknowledged */
    uint64_t queued_bytes;         /* in q and unacked */
    uint64_t tx_bytes, tx_chunks, resent;
    uint64_t acked_bytes; /* acknowledged so far (the ack reader) */
    /* piod_tx_watchdog's (main thread, under mtx): the acknowledged rate */
    uint64_t wd_ms, wd_acked;
    double ack_rate; /* bytes/s while busy, EWMA (0: not measured yet) */
    /* delivery while busy, for the pacing limit (tx_pace; under mtx): the
     * busy time and acked bytes since the last sample, and the samples */
    uint64_t busy_mark_us; /* start of the busy time not counted yet (0: idle) */
    uint64_t busy_us, dlv_bytes;
    double dlv[PIOD_DLV_SAMPLES]; /* bytes/s; the limit follows their maximum */
    unsigned dlv_i;
    uint64_t pace_rate;        /* the pacing limit set on conn (0: none yet) */
    int lossy;                 /* a connection of it resent a segment: paced */
    uint32_t max_chunk;        /* the largest chunk queued so far */
    uint32_t downs;            /* up -> not up transitions */
    int last_err;              /* the last connect error logged (said once per kind) */
    uint64_t last_progress_ms; /* last ack, or when work arrived on an idle channel */
    struct pio_tp_conn *conn;
    char local[PIO_TP_ADDR], remote[PIO_TP_ADDR];
    /* sealed (encrypt = yes): set by tx_connect before the connection is
     * used; seal_data is the sender thread's, seal_ack the ack reader's */
    int sealed, cipher; /* cipher: PIO_CIPHER_AES or _CHACHA, when sealed */
    struct pio_seal seal_data, seal_ack;
};

/* One incoming channel (the peer opened it; we receive C_DATA on it). */
struct piod_rxchan {
    struct piod *d;
    int peer, index; /* peer -1 until authenticated */
    uint64_t gen;    /* unique per accepted connection: tells its events from a successor's */
    pthread_t thr;
    struct pio_tp_conn *conn;
    atomic_int dead; /* set by the thread when it ends */
    /* 1 while the opener is a stranger (handshake not over), 0 after, 2 when
     * piod_rx_watchdog shut it down at hs_deadline_ms (chan_rx.c, rx_hs_end) */
    atomic_int hs;
    uint64_t hs_deadline_ms;
    char local[PIO_TP_ADDR], remote[PIO_TP_ADDR];
    int sealed; /* the opener asked (C_HELLO flag): seal_data opens, seal_ack seals */
    int cipher; /* when sealed: PIO_CIPHER_AES or _CHACHA, as the handshake chose */
    struct pio_seal seal_data, seal_ack;
};

/* Balancing view of one channel from the receiver's side. */
struct piod_rxbal {
    uint64_t outstanding;  /* bytes granted on it and not arrived */
    uint64_t window_bytes; /* arrived in the current measuring window */
    int busy;              /* had outstanding bytes during the window */
    uint64_t acc_bytes;    /* arrived during acc_ms of busy time, not yet a rate sample */
    uint64_t acc_ms;
    double rate; /* EWMA bytes/s */
    int up;
    uint64_t rx_gen; /* the incoming connection that said "up" last (its rx->gen) */
};

struct piod_remote_app {
    char app[PIO_WIRE_NAME];
    uint32_t nprocs;
    uint8_t *joined;   /* nprocs flags */
    uint64_t *left_ev; /* per process: d->events when we last heard it left (0: never) */
    uint32_t njoined;
    uint64_t left_at; /* its peer's apps_left when its last process left (0: never) */
};

struct piod_peer_st {
    struct piod_peer *cfg;
    void *dealer;                    /* our DEALER to the peer's control ROUTER */
    void *mon;                       /* its handshake events (PAIR, inproc) */
    int refused;                     /* the peer refused our CURVE key */
    int hello_seen;                  /* we have the peer's H_HELLO of this session */
    uint8_t my_key[PIO_WIRE_KEY];    /* its channels to us must prove this */
    uint8_t their_key[PIO_WIRE_KEY]; /* our channels to it prove this (key_mtx) */
    char host[PIO_WIRE_NAME];
    int nchan;           /* min(our links, its links) */
    uint32_t chunk;      /* chunk of new messages to it (tick: its slowest channel's rate) */
    uint32_t in_chunk;   /* chunk of its latest message to us (sizes grant caps) */
    int gq_n;            /* messages from it that want grants (core.c) */
    uint64_t none_up_ms; /* since when no channel to it is up (0: one is) */
    int unreachable;     /* none up for link-timeout: its applications announced gone */
    struct piod_txchan *tx[PIOD_MAX_LINKS];
    /* The express lane: H_* frames between the main loops over an
     * authenticated TCP connection on link 0, without ZeroMQ's I/O threads.
     * xtx's thread opens xout (and closes it once we say it failed); xin is
     * the peer's lane to us, handed over by its receiver thread: ours. */
    struct piod_txchan *xtx;
    struct pio_tp_conn *xout, *xin; /* main thread */
    int xout_fd, xin_fd;
    struct pio_fout xo; /* frames waiting for room on xout */
    struct pio_fin xi;  /* bytes read from xin */
    /* sealed lanes (encrypt): xout's frames go out inside C_SEALED frames
     * (xo_seal, sealed in the order they enter xo), xin's come in so
     * (xi_seal); xbuf holds one being sealed */
    int xo_sealed, xi_sealed;
    struct pio_seal xo_seal, xi_seal;
    uint8_t *xbuf;
    size_t xcap;
    /* every H_* frame but H_HELLO, numbered and kept until acked (lane.h),
     * whichever path it takes */
    struct piod_lseq lq;
    struct piod_rxchan *rx[PIOD_MAX_LINKS]; /* key_mtx */
    struct piod_rxbal bal[PIOD_MAX_LINKS];
    atomic_uint_fast64_t rx_bytes[PIOD_MAX_LINKS]; /* data received per index, all connections */
    atomic_uint_fast64_t rx_chunks[PIOD_MAX_LINKS];
    int napps;
    struct piod_remote_app *apps;
    uint64_t apps_left; /* applications of it that have left so far (ages apps[].left_at) */
};

/* A process of a local application, joined through P_HELLO. */
struct piod_proc {
    int used;
    struct piod_hlink h_app, h_name; /* d->proc_app (app), d->proc_name (app, proc): joined */
    int named;                       /* linked there */
    uint64_t cid;                    /* its connection (conn.c) */
    char app[PIO_WIRE_NAME];
    uint32_t proc, nprocs;
    pid_t pid;
    uid_t uid;                /* SO_PEERCRED: its application's owner while it is joined */
    gid_t gid;                /* SO_PEERCRED: stamped on what it sends, with uid */
    char user[PIO_WIRE_NAME]; /* uid's name here ("": none), stamped with it */
    int own_senders;          /* takes messages only from senders of its uid (P_HELLO, config) */
    int warned_senders;       /* logged the first message it refused for that */
    char shm[PIO_WIRE_NAME];
    uint8_t *base;
    size_t size;
    uint64_t send_off, send_len, recv_off, recv_len;
    struct pio_ralloc recv; /* main thread only */
    atomic_int refs;        /* pool mapping references */
    atomic_int gone;        /* left; pool unmapped when refs drop to 0 */
    atomic_int unmapped;    /* the pool mapping is gone (CAS winner unmaps) */
    uint64_t next_key;
    uint64_t join_ev;         /* d->events at its join */
    uint64_t dead_since_ms;   /* its pid was found gone (grace before leaving) */
    uint64_t unclaimed_bytes; /* granted to messages not yet claimed */
    size_t lane_bytes;        /* numbered frames of its messages no peer has acked yet */
    int warned_unclaimed;     /* logged that unclaimed messages fill half its region */
    /* grants (core.c grant_all): its announced messages that want grants,
     * those a receive has claimed apart, in arrival order; while it has any
     * and is not waiting for room in its own region, it is on the ring of
     * destinations served in turn */
    struct piod_imsg *gq_head[PIOD_NCLS][2], *gq_tail[PIOD_NCLS][2]; /* per class:
                                                                      * [0] unclaimed,
                                                                      * [1] claimed */
    int gq_count;                                                    /* messages in those queues */
    /* receive classes (P_QOS, PIO_Setclasses): a message with tag
     * cls_tag0 + c (c < ncls) is of class c, any other of class 0; the next
     * grant goes to the waiting class holding the least for its share */
    int ncls; /* 0: none: one class, arrival order */
    int32_t cls_tag0;
    uint32_t cls_share[PIOD_NCLS];
    uint64_t cls_held[PIOD_NCLS]; /* recv-region bytes granted to each class, not freed */
    int rg_next, rg_prev;         /* the ring (d->ring) */
    int in_ring, g_blocked;
};

/* Per-chunk states of an outgoing message (piod_omsg.state). */
enum piod_ochunk {
    PIOD_OC_WAITING = 0, /* not handed to a channel yet (no grant, or no data) */
    PIOD_OC_QUEUED = 1,  /* with a channel's sender thread, not acknowledged */
    PIOD_OC_ACKED = 2,   /* acknowledged (or given up with the message) */
    PIOD_OC_RESEND = 3,  /* its channel failed: waiting to go out again */
};

/* Per-chunk states of an incoming message (piod_imsg.state). */
enum piod_ichunk {
    PIOD_IC_UNGRANTED = 0, /* no receive space granted yet */
    PIOD_IC_GRANTED = 1,   /* granted: its bytes may be on the way */
    PIOD_IC_ARRIVED = 2,   /* in the receiver's pool, told to the process */
    PIOD_IC_FREED = 3,     /* the process consumed it (P_FREE) */
};

/* Outgoing message (this host sends it). */
struct piod_omsg {
    struct piod_omsg *next, *prev; /* d->omsgs, newest first */
    struct piod_hlink h_id, h_sid; /* d->omsg_id (msgid), d->omsg_sid (src, sid) */
    uint64_t msgid, sid;
    int src;  /* index in d->procs */
    int peer; /* -1: local delivery */
    uint64_t size;
    uint32_t chunk, nchunks;
    uint32_t flags;
    uint16_t conn, conn_arg;
    uint32_t src_proc, dst_proc;
    uint64_t *data_off; /* per chunk: pool offset of its bytes (UINT64_MAX: not yet) */
    int16_t *grant;     /* per chunk: channel granted (-1: not yet) */
    uint8_t *state;     /* per chunk: enum piod_ochunk */
    uint32_t nacked;
    int done_sent; /* P_SEND_DONE went to the process */
    int outcome;   /* the receiver said how it ended (H_DONE), or it failed here */
    /* local delivery: the matching incoming message */
    struct piod_imsg *local;
};

/* Incoming message (a local process receives it). */
struct piod_imsg {
    struct piod_imsg *next, *prev; /* d->imsgs, in arrival order */
    struct piod_hlink h_id, h_key; /* d->imsg_id (peer, msgid), d->imsg_key (dst, key) */
    int keyed;                     /* linked in d->imsg_key */
    int peer;                      /* -1: from a local process */
    uint64_t msgid;                /* the sender's id */
    uint64_t key;                  /* our key, told to the process */
    int dst;                       /* index in d->procs, -1 until the process joins */
    char src_app[PIO_WIRE_NAME], dst_app[PIO_WIRE_NAME];
    char src_system[PIO_WIRE_NAME]; /* whose piod stamped the sender's identity */
    char src_user[PIO_WIRE_NAME];   /* the sender's user name there */
    uint32_t src_uid, src_gid;      /* the sender's identity, as stamped */
    uint32_t src_proc, dst_proc;
    int32_t tag;
    uint64_t seq, size, count;
    uint64_t arrived_ms; /* its request came (piod_dump) */
    uint32_t datatype, flags, chunk, nchunks;
    uint16_t conn, conn_arg;
    uint8_t *eager; /* eager payload copy (until announced) */
    int announced, claimed, consumed;
    struct piod_imsg *gq_next, *gq_prev; /* its destination's gq_head[cls][claimed] */
    int in_gq;                           /* 1 + claimed while queued there */
    int cls;                             /* its receive class, from its first gq_add on */
    int cls_set;
    struct piod_imsg *ua_next, *ua_prev; /* d->ua_head: not announced yet */
    int in_ua;
    uint64_t *pool_off; /* per chunk: recv-region offset (granted) */
    uint8_t *state;     /* per chunk: enum piod_ichunk */
    uint8_t *chan;      /* per chunk: channel granted */
    uint32_t ngranted, narrived, nfreed;
    struct piod_omsg *local; /* local delivery: the sender side */
};

/* A grant in the table the receiver threads look up. */
struct piod_grant {
    struct piod_grant *next;
    int peer;
    uint64_t msgid, off;
    uint32_t len;
    uint8_t *dst;               /* where the payload goes */
    struct piod_proc *proc;     /* the pool it is in */
    struct piod_rxchan *holder; /* receiver thread writing into dst now (grant_mtx) */
};

enum piod_ev_kind {
    PIOD_EV_ACK = 1,
    PIOD_EV_CHAN,
    PIOD_EV_ARRIVED,
    PIOD_EV_REQUEUE,
    PIOD_EV_EXPRESS, /* a lane came up (conn; state says whose) */
    PIOD_EV_ADOPT,   /* the relay took a channel for us (conn): run a receiver on it */
    PIOD_EV_DLANE    /* a direct lane was opened (state OURS) or accepted (THEIRS): dlane */
};

/* piod_ev.state: PIOD_EV_CHAN carries a sender channel's new state (enum
 * pio_wchan_state) or a receiver's coming and going; PIOD_EV_EXPRESS says
 * whose lane came up. */
enum piod_ev_state {
    PIOD_EVS_LANE_OURS = 1,   /* PIOD_EV_EXPRESS: our lane to the peer (its thread opened it) */
    PIOD_EVS_LANE_THEIRS = 2, /* PIOD_EV_EXPRESS: the peer's lane to us (a receiver took it) */
    PIOD_EVS_RX_DOWN = 10,    /* PIOD_EV_CHAN: a receiver's connection ended */
    PIOD_EVS_RX_UP = 12,      /* PIOD_EV_CHAN: a receiver's connection is up */
};

struct piod_ev {
    struct piod_ev *next;
    int kind, peer, index;
    uint64_t msgid, off;
    uint32_t len;
    int state;                 /* enum piod_ev_state */
    struct piod_chunk *chunks; /* PIOD_EV_REQUEUE */
    struct pio_tp_conn *conn;  /* PIOD_EV_EXPRESS */
    int sealed;                /* PIOD_EV_EXPRESS: the lane is sealed with seal (moved in) */
    struct pio_seal seal;
    uint64_t gen;             /* PIOD_EV_CHAN rx up/down: the connection (rx->gen) */
    struct piod_dlane *dlane; /* PIOD_EV_DLANE (dlane.c) */
};

struct piod_pending_partner {
    struct piod_pending_partner *next;
    uint64_t cid;
    uint64_t req;
    char app[PIO_WIRE_NAME];
    uint64_t deadline_ms;
};

/* A local client's connection to the process socket (conn.c; main thread). */
struct piod_conn {
    int fd; /* -1: free slot */
    uint32_t gen;
    pid_t pid; /* SO_PEERCRED */
    uid_t uid;
    gid_t gid;
    struct pio_fin in;   /* frames read, not handled yet */
    struct pio_fout out; /* frames the socket had no room for */
    int joined;          /* a process joined on it (P_WELCOME PIO_OK) */
    int pi;              /* while joined: its index in d->procs (-1: none) */
    int paused;          /* not read: too many of our answers wait (piod_conn_reading) */
    int warned_pause;    /* said so in the log */
    int dropped;         /* shut down for not reading (said once; the loop closes it) */
    int warned_partner;  /* logged that it waits for too many partner look-ups */
    uint64_t opened_ms;
    uint64_t partial_since_ms; /* an incomplete frame waits in `in` since (0: none) */
};

struct piod_stream {          /* per (peer, src app, src proc, dst app, dst proc, tag) */
    struct piod_stream *next; /* in its hash bucket */
    uint64_t hash;
    int peer;
    char src_app[PIO_WIRE_NAME], dst_app[PIO_WIRE_NAME];
    uint32_t src_proc, dst_proc;
    int32_t tag;
    uint64_t next_seq;
    int gone; /* an end left while a request of it waited: dropped once none waits */
};

/* The streams of one direction: a hash table (chained buckets, doubled when
 * it holds twice as many streams as buckets). Applications that give every
 * request its own reply tag (pfs) make hundreds of thousands of them. */
struct piod_streams {
    struct piod_stream **b;
    size_t nb, n;
};

struct piod_splice;

/* A member of our system as its load reports show it (relay.c; main thread). */
struct piod_member_st {
    struct pio_h_load load; /* its latest report */
    uint64_t at_ms;         /* when it came (0: never) */
    uint64_t bad_mac;       /* datagrams from its address whose MAC was wrong */
    uint8_t mac_key[32];    /* the MAC key of our load reports, shared with it */
    int mac_state;          /* 0: not derived yet, 1: ready, -1: cannot (no key) */
};

struct piod {
    struct piod_config cfg;
    uint64_t recv_held;       /* receive-region bytes granted and not freed, all processes
                               * (main thread): at most cfg.grant_budget (msg.c grant_chunk) */
    atomic_int dlane_threads; /* direct lanes being opened (dlane.c): stop waits for them */
    uint64_t dlane_next;      /* the last direct lane's id (main thread) */
    int dlane_opening;        /* opener threads not yet back (main thread; dlane.c) */
    struct piod_dlane *dlane_wait, *dlane_wait_tail; /* ... and the lanes waiting for one */
    uint64_t epoch; /* this run (random, never 0): H_HELLO, H_SEQ, H_ACK */
    struct piod_keys keys;
    const struct pio_transport_ops *tp;
    struct pio_tp_opts tpo;
    void *zctx, *ctl_sock, *zap_sock;
    int lfd; /* the process socket (listening) */
    struct piod_conn *conns;
    int nconns;
    size_t conn_queue_max; /* frames owed to one client before it is dropped (conn.c) */
    int lanes_paused;      /* an express lane is too full: joined processes are not read */
    int lanes_warned;
    int evfd;
    pthread_mutex_t ev_mtx, grant_mtx, key_mtx;
    pthread_cond_t grant_cv; /* a held grant was let go (with grant_mtx) */
    struct piod_ev *ev_head, *ev_tail;
    struct piod_grant **grants;
    size_t ngrant_buckets;
    int nprocs_max;
    struct piod_proc *procs;
    uint64_t pool_used;
    struct piod_peer_st peers[PIOD_MAX_PEERS];
    int npeers;
    int nlisten;
    struct pio_tp_listener *listeners[PIOD_MAX_LINKS];
    pthread_t accept_thr[PIOD_MAX_LINKS];
    pthread_mutex_t rxlist_mtx;
    struct piod_rxchan *rxlist[256];
    int nrx;
    uint64_t rx_refused_log_ms; /* rxlist_mtx: last "too many handshakes" line */
    struct piod_omsg *omsgs;
    struct piod_imsg *imsgs, *imsgs_tail;
    struct piod_imsg *ua_head, *ua_tail; /* not announced yet, in arrival order */
    int ring, ring_n;                    /* destinations wanting grants (-1: none) */
    int gq_local;                        /* local messages wanting grants */
    int tx_waiting;                      /* a chunk found no channel: tick retries */
    uint64_t ticks;
    /* the messages by identity (core.c omsg_find ...): O(1) per event */
    struct piod_htab omsg_id, omsg_sid, imsg_id, imsg_key;
    struct piod_htab proc_app, proc_name; /* joined processes by name */
    struct piod_streams tx_streams, rx_streams;
    size_t streams_gone; /* rx streams marked gone (core.c streams_sweep) */
    struct piod_pending_partner *pending;
    uint64_t next_msgid;
    uint64_t events; /* joins and leaves seen here, counted (piod_proc.join_ev, left_ev) */
    uint64_t last_tick_ms;
    atomic_int stopping;
    int sock_bound;             /* we bound cfg.socket (and so may remove it) */
    volatile sig_atomic_t dump; /* SIGUSR1: log the messages in flight */
    uint8_t *scratch;           /* main thread frame buffer (encoding) */
    uint8_t *rbuf;              /* main thread frame buffer (receiving), scratch_len bytes */
    size_t scratch_len;
    /* relay.c: a system of several hosts */
    struct pio_tp_listener *relay_l;
    pthread_t relay_thr;
    pthread_mutex_t relay_mtx; /* splices, nsplices, nhandlers */
    struct piod_splice *splices;
    int nsplices, nhandlers;
    int load_fd; /* UDP: load reports from members (-1: none) */
    struct piod_member_st *members;
    uint64_t load_seq, last_load_ms;
    /* files.c: the file service child */
    pid_t files_pid;
    uint64_t files_next_ms, files_backoff_ms;
};

/* piod_init - set up sockets, listeners and channel threads from d->cfg
 * (already loaded) and d->keys. Returns PIO_OK or an error (logged). */
int piod_init(struct piod *d);

/* piod_run - serve until *stop becomes non-zero (signal handler), then
 * drain in-flight messages (up to drain_ms) and return PIO_OK. *reopen makes
 * the loop reopen the log. */
int piod_run(struct piod *d, volatile int *stop, volatile int *reopen, int drain_ms);

/* piod_chan_rows - this host's channel rows (as in P_INFO) into rows[*n..max). */
void piod_chan_rows(struct piod *d, struct pio_chan_info *rows, uint32_t max, uint32_t *n);

/* piod_dump - log every message in flight and the channels' state. */
void piod_dump(struct piod *d);

/* piod_fini - stop threads, close sockets, unmap and unlink every pool. */
void piod_fini(struct piod *d);

/* piod_post - queue an event for the main thread (any thread). Takes ev. */
void piod_post(struct piod *d, struct piod_ev *ev);

/* chan.c, chan_tx.c (sender side), chan_rx.c (receiver side, grants) */
int piod_chan_start(struct piod *d);              /* listeners + tx threads for known peers */
int piod_txchans_start(struct piod *d, int peer); /* after the peer's H_HELLO */
void piod_chan_stop(struct piod *d);
void piod_tx_enqueue(struct piod_txchan *ch, struct piod_chunk *c);
void piod_express_failed(struct piod *d, int peer); /* main: xout is dead, reconnect */
int piod_tx_state(struct piod_txchan *ch, uint64_t *queued);
void piod_tx_watchdog(struct piod *d, struct piod_txchan *ch, uint64_t now);
/* piod_tx_rate - ch's acknowledged rate in bytes/s while it is up (0: down
 * or not measured yet). Takes ch->mtx. */
double piod_tx_rate(struct piod_txchan *ch);
/* piod_tx_stall_limit - ms without an acknowledgement before ch (bytes in
 * flight) is closed: stall-ms plus 3 chunks at its measured rate. ch->mtx
 * held. */
uint64_t piod_tx_stall_limit(const struct piod *d, const struct piod_txchan *ch);
void piod_rx_adopt(struct piod *d,
                   struct pio_tp_conn *c);           /* main: run a receiver on c (takes it) */
void piod_rx_watchdog(struct piod *d, uint64_t now); /* main: shut handshakes over time */
void piod_grant_add(struct piod *d, struct piod_grant *g);
struct piod_grant *piod_grant_take(struct piod *d, int peer, uint64_t msgid, uint64_t off);
void piod_grants_drop_proc(struct piod *d, struct piod_proc *p);
void piod_proc_ref(struct piod_proc *p);
void piod_proc_unref(struct piod *d, struct piod_proc *p);
void piod_proc_unmap(struct piod_proc *p); /* once, by whoever sees gone and no refs */

/* files.c: the file service (pio-files) for `export` (main thread) */
void piod_files_start(struct piod *d);
void piod_files_tick(struct piod *d, uint64_t now);
void piod_files_stop(struct piod *d);

uint64_t piod_now_ms(void);
uint64_t piod_now_us(void);

/* conn.c: the process socket (main thread only) */
int piod_conn_listen(struct piod *d);  /* bind cfg.socket; PIO_EBUSY if a piod serves it */
void piod_conn_accept(struct piod *d); /* take every pending connection */
struct piod_conn *piod_conn_get(struct piod *d, uint64_t cid); /* NULL: gone */
uint64_t piod_conn_cid(struct piod *d, struct piod_conn *c);
int piod_conn_send(struct piod *d, uint64_t cid, const void *buf, size_t len); /* queues */
/* piod_conn_send of one frame with pass_fd attached (SCM_RIGHTS); the call
 * owns pass_fd (closed once sent, or on an error) */
int piod_conn_send_fd(struct piod *d, uint64_t cid, const void *buf, size_t len, int pass_fd);
void piod_conn_close(struct piod *d, struct piod_conn *c);
int piod_conn_reading(struct piod *d, struct piod_conn *c); /* poll it for requests now? */
/* a frame begun and not finished for too long (logged): the caller closes c */
int piod_conn_stalled(struct piod *d, struct piod_conn *c, uint64_t now);
void piod_conn_fini(struct piod *d);

#endif
