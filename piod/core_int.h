/* core_int.h - what the files of piod's main thread share (private to
 * core.c, registry.c, msg.c, proc.c, peer.c and event.c; core.c's head
 * comment says which room holds what). Every function here is main thread
 * only; the rules of piod.h hold. Each is documented where it is defined.
 * SPDX-License-Identifier: BSD-3-Clause */
#ifndef PIOD_CORE_INT_H
#define PIOD_CORE_INT_H

#include "piod.h"
#include "wire/wire.h"

#include <stddef.h>
#include <stdint.h>

/* the main thread's pace and limits */
#define TICK_MS             100
#define RATE_SAMPLE_MS      400                /* busy time behind one rate sample (at least) */
#define PARTNER_WAIT_MAX    64                 /* partner look-ups one process may have waiting */
#define LANE_PAUSE          ((size_t)4 << 20)  /* an express lane this full: processes wait */
#define LANE_RESUME         ((size_t)1 << 20)  /* ... until it is down to this */
#define LANE_UNACKED_PAUSE  ((size_t)16 << 20) /* numbered frames a peer has not acked: wait */
#define LANE_UNACKED_RESUME ((size_t)8 << 20)  /* ... until down to this */

/* which end of a stream a process is (streams_forget) */
enum { STREAM_SRC = 1, STREAM_DST = 2 };

void lane_replay(struct piod *d, int peer);
int send_peer(struct piod *d, int peer, const struct pio_frame *f);
void lane_ack(struct piod *d, int peer, int force);
void send_ranges(struct piod *d, int pi, int type, uint64_t id, uint64_t msg_off, uint64_t off,
                 uint64_t len);
void send_cancel(struct piod *d, int pi, uint64_t key, int status);
void send_h_done(struct piod *d, int peer, uint64_t msgid, int status);
struct piod_remote_app *remote_app(struct piod_peer_st *p, const char *app, uint32_t nprocs,
                                   int create);
void remote_apps_clear(struct piod_peer_st *p);
void send_registry(struct piod *d, int peer, int only_proc, uint32_t state);
void broadcast_event(struct piod *d, const char *app, uint32_t proc, uint32_t nprocs,
                     uint32_t kind);
void pending_partners(struct piod *d, uint64_t now);
void streams_drop(struct piod_streams *t, int peer);
void streams_forget(struct piod *d, struct piod_streams *t, int peer, int end, const char *app,
                    uint32_t proc);
struct piod_omsg *omsg_find(struct piod *d, uint64_t msgid);
struct piod_imsg *imsg_find(struct piod *d, int peer, uint64_t msgid);
void omsg_finish(struct piod *d, struct piod_omsg *m, int status);
void omsg_maybe_free(struct piod *d, struct piod_omsg *m, int have_outcome);
uint32_t chunk_len(uint64_t size, uint32_t chunk, uint32_t i);
void announce_all(struct piod *d);
void grant_all(struct piod *d);
void imsg_fail(struct piod *d, struct piod_imsg *m, int status);
struct piod_imsg *imsg_new(struct piod *d, int peer, const struct pio_h_request *rq);
void omsg_pump(struct piod *d, struct piod_omsg *m);
void remote_apps_announce(struct piod *d, int peer, uint32_t kind);
void peer_send_hello(struct piod *d, int peer);
/* piod_peer_open - set up d->peers[i] for d->cfg.peers[i]: its lane, its
 * CURVE DEALER (the peer's public key from d->keys) and handshake monitor,
 * connected. Main thread. Returns PIO_OK, PIO_ECONFIG (no key: logged),
 * PIO_ENOMEM, PIO_EADDR; on failure the caller closes what is set. */
int piod_peer_open(struct piod *d, int i);
/* piod_reload - SIGHUP: new peers, keys and application owners from the
 * config file and key directory (reload.c); main thread, between turns. */
void piod_reload(struct piod *d);
/* piod_peer_reconnect - make peer i's control connection again, with the
 * peer's key as d->keys has it now (libzmq does not retry a connection the
 * peer refused at the CURVE handshake). Main thread (reload.c). */
void piod_peer_reconnect(struct piod *d, int i);
/* piod_peer_ctl_ep - "tcp://ADDR:PORT" of peer i's control plane into ep. */
void piod_peer_ctl_ep(const struct piod *d, int i, char *ep, size_t len);
void on_peer_monitor(struct piod *d, int peer);
void lane_lost(void *arg, const struct piod_lseq_ent *e);
void on_ctl_frame(struct piod *d, const char *user, const uint8_t *buf, size_t len,
                  struct pio_frame *f);
void express_out_down(struct piod *d, int peer, const char *why);
void express_in_down(struct piod *d, int peer);
void on_express_event(struct piod *d, struct piod_ev *ev);
void on_express_ready(struct piod *d, int peer, int out, short revents, struct pio_frame *f);
void on_zap(struct piod *d);

void streams_sweep(struct piod *d);
int chunk_queue(struct piod *d, struct piod_omsg *m, uint32_t i, int resend);
int proc_index(struct piod *d, uint64_t cid);
void links_watch(struct piod *d, uint64_t now);
void proc_leave(struct piod *d, int pi, const char *why);
void conn_closed(struct piod *d, struct piod_conn *c);
void on_events(struct piod *d);
void tick(struct piod *d, uint64_t now);
int lanes_congested(struct piod *d);
size_t lane_share(struct piod *d);
int lane_heavy(struct piod *d, struct piod_conn *c, size_t share);

int send_cid(struct piod *d, uint64_t cid, const struct pio_frame *f);
/* send_cid with descriptor pass_fd attached (owned by the call from now on) */
int send_cid_fd(struct piod *d, uint64_t cid, const struct pio_frame *f, int pass_fd);

int send_peer_msg(struct piod *d, int peer, const struct pio_frame *f, int src, uint64_t sid,
                  int owner);
void send_done_flags(struct piod *d, int pi, int type, uint16_t flags, uint64_t id, int status);
void proc_names_add(struct piod *d, int pi);
void proc_names_del(struct piod *d, int pi);
int proc_by_name(struct piod *d, const char *app, uint32_t proc);
struct piod_proc *proc_of_app(struct piod *d, const char *app);
uint32_t find_app(struct piod *d, const char *app, int *peer);
uint32_t find_proc(struct piod *d, const char *app, uint32_t proc, int *peer);
int proc_unseen_since(struct piod *d, const char *app, uint32_t proc, uint64_t since);
void answer_partner(struct piod *d, struct piod_pending_partner *pp, int status);
struct piod_stream *stream_get(struct piod_streams *t, int peer, const char *src_app,
                               uint32_t src_proc, const char *dst_app, uint32_t dst_proc,
                               int32_t tag);
struct piod_omsg *omsg_by_sid(struct piod *d, int src, uint64_t sid);
struct piod_imsg *imsg_by_key(struct piod *d, int dst, uint64_t key);
int omsg_link(struct piod *d, struct piod_omsg *m);
void omsg_free(struct piod *d, struct piod_omsg *m);
void local_copy(struct piod *d, struct piod_imsg *im, uint32_t i);
void ring_del(struct piod *d, int pi);
void gq_add(struct piod *d, struct piod_imsg *m);
void gq_del(struct piod *d, struct piod_imsg *m);
void grant_wake(struct piod *d, int pi);
/* piod_cls_release - len bytes of m's receive space are free again: its
 * class holds that much less. */
void piod_cls_release(struct piod *d, struct piod_proc *p, const struct piod_imsg *m, uint64_t len);
void imsg_complete(struct piod *d, struct piod_imsg *m, int status);
int app_proc_left(struct piod *d, const char *app, uint32_t proc);
int app_proc_left_since(const char *app, uint32_t proc, uint64_t since);
uint32_t left_nprocs(const char *app, int *peer);
void on_conn_ready(struct piod *d, struct piod_conn *c, short revents, struct pio_frame *f);

int send_proc(struct piod *d, int pi, const struct pio_frame *f);
void send_done(struct piod *d, int pi, int type, uint64_t id, int status);
struct piod_stream *stream_find(struct piod_streams *t, int peer, const char *src_app,
                                uint32_t src_proc, const char *dst_app, uint32_t dst_proc,
                                int32_t tag);
void imsg_free(struct piod *d, struct piod_imsg *m);
void ua_del(struct piod *d, struct piod_imsg *m);

#endif
