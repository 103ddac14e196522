/* event.c - what the channel threads report to the main thread (chunks
 * acknowledged, arrived, handed back; channels and lanes up and down) and
 * the main thread's periodic work (tick). Split from core.c; main thread only.
 * SPDX-License-Identifier: BSD-3-Clause */
#include "dlane.h"
#include "piod.h"
#include "balance.h"
#include "core_int.h"
#include "relay.h"
#include "log.h"
#include "err.h"
#include "memtrim.h"
#include "tsan.h"
#include "types.h"
#include <errno.h>
#include <pwd.h>
#include <fcntl.h>
#include <dirent.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <zmq.h>
#include "core_int.h"

/* ---- events from channel threads ---- */

void on_events(struct piod *d)
{
    uint64_t v;
    ssize_t r = read(d->evfd, &v, sizeof(v));
    (void)r;
    pthread_mutex_lock(&d->ev_mtx);
    struct piod_ev *ev = d->ev_head;
    d->ev_head = d->ev_tail = NULL;
    pthread_mutex_unlock(&d->ev_mtx);
    int regrant = 0;
    while (ev) {
        struct piod_ev *next = ev->next;
        switch (ev->kind) {
        case PIOD_EV_EXPRESS: on_express_event(d, ev); break;
        case PIOD_EV_DLANE: piod_on_dlane_event(d, ev); break;
        case PIOD_EV_ADOPT: piod_rx_adopt(d, ev->conn); break;
        case PIOD_EV_ACK: {
            struct piod_omsg *m = omsg_find(d, ev->msgid);
            if (m && m->peer == ev->peer) {
                uint32_t i = (uint32_t)(ev->off / m->chunk);
                if (i < m->nchunks && m->state[i] == PIOD_OC_QUEUED) {
                    m->state[i] = PIOD_OC_ACKED;
                    m->nacked++;
                    if (!d->procs[m->src].gone)
                        send_ranges(d, m->src, PIO_F_P_RELEASE, 0, 0, m->data_off[i],
                                    chunk_len(m->size, m->chunk, i));
                    omsg_maybe_free(d, m, m->outcome);
                }
            }
            break;
        }
        case PIOD_EV_REQUEUE: {
            struct piod_chunk *c = ev->chunks;
            while (c) {
                struct piod_chunk *cn = c->next;
                struct piod_omsg *m = omsg_find(d, c->msgid);
                piod_proc_unref(d, c->proc);
                if (m) {
                    uint32_t i = (uint32_t)(c->off / m->chunk);
                    if (i < m->nchunks && m->state[i] == PIOD_OC_QUEUED)
                        m->state[i] = m->outcome ? PIOD_OC_ACKED
                                                 : PIOD_OC_RESEND; /* an abandoned one stays put */
                    if (m->outcome)
                        omsg_maybe_free(d, m, 1);
                }
                free(c);
                c = cn;
            }
            for (struct piod_omsg *m = d->omsgs; m; m = m->next)
                if (m->peer == ev->peer)
                    for (uint32_t i = 0; i < m->nchunks; i++)
                        if (m->state[i] == PIOD_OC_RESEND && chunk_queue(d, m, i, 1) != PIO_OK)
                            break;
            break;
        }
        case PIOD_EV_CHAN:
            if (ev->state == PIOD_EVS_RX_UP || ev->state == PIOD_EVS_RX_DOWN) {
                /* a replaced connection's "down" can come after its
                 * successor's "up": only the current one's counts */
                struct piod_rxbal *b = &d->peers[ev->peer].bal[ev->index];
                if (ev->state == PIOD_EVS_RX_UP) {
                    b->up = 1;
                    b->rx_gen = ev->gen;
                } else if (ev->gen == b->rx_gen) {
                    b->up = 0;
                }
                regrant = 1;
            } else if (ev->state == PIO_WCHAN_UP) {
                /* a channel came up: chunks that found none can go now */
                for (struct piod_omsg *m = d->omsgs; m; m = m->next)
                    if (m->peer == ev->peer) {
                        for (uint32_t i = 0; i < m->nchunks; i++)
                            if (m->state[i] == PIOD_OC_RESEND)
                                chunk_queue(d, m, i, 1);
                        omsg_pump(d, m);
                    }
            }
            break;
        case PIOD_EV_ARRIVED: {
            struct piod_imsg *m = imsg_find(d, ev->peer, ev->msgid);
            PIOD_DEBUG("event: chunk %llu+%llu arrived", (unsigned long long)ev->msgid,
                       (unsigned long long)ev->off);
            struct piod_rxbal *b = &d->peers[ev->peer].bal[ev->index];
            b->window_bytes += ev->len;
            if (!m) {
                PIOD_DEBUG("arrived %llu+%llu: no such message", (unsigned long long)ev->msgid,
                           (unsigned long long)ev->off);
                break;
            }
            uint32_t i = (uint32_t)(ev->off / m->chunk);
            if (i >= m->nchunks || m->state[i] != PIOD_IC_GRANTED) {
                PIOD_DEBUG("arrived %llu+%llu: chunk state %d", (unsigned long long)ev->msgid,
                           (unsigned long long)ev->off, i < m->nchunks ? m->state[i] : -1);
                break;
            }
            m->state[i] = PIOD_IC_ARRIVED;
            m->narrived++;
            d->peers[ev->peer].bal[m->chan[i]].outstanding -= ev->len;
            send_ranges(d, m->dst, PIO_F_P_MSG_DATA, m->key, ev->off, m->pool_off[i], ev->len);
            regrant = 1;
            break;
        }
        }
        free(ev);
        ev = next;
    }
    if (regrant)
        grant_all(d);
}

void tick(struct piod *d, uint64_t now)
{
    piod_relay_tick(d, now);
    piod_files_tick(d, now);
    pio_mem_trim_tick();
    uint64_t dt = now - d->last_tick_ms;
    if (dt < TICK_MS)
        return;
    d->last_tick_ms = now;
    for (int p = 0; p < d->npeers; p++)
        for (int k = 0; k < d->peers[p].nchan; k++) {
            /* A rate sample is bytes over busy time, taken once there is
             * RATE_SAMPLE_MS of it and a few chunks' worth of bytes: a
             * slow link's chunk can take longer than a tick, and per-tick
             * samples of 0 or 1 chunk would differ wildly between equal
             * links (and so would DYNAMIC's queues). Idle time restarts it. */
            struct piod_rxbal *b = &d->peers[p].bal[k];
            if (b->busy || b->outstanding > 0) {
                b->acc_bytes += b->window_bytes;
                b->acc_ms += dt;
            } else {
                b->acc_bytes = b->acc_ms = 0;
            }
            if (b->acc_ms >= RATE_SAMPLE_MS &&
                (b->acc_bytes >= 2ull * d->cfg.chunk || b->acc_ms >= 5 * RATE_SAMPLE_MS)) {
                b->rate = piod_bal_ewma(b->rate, (double)b->acc_bytes * 1000.0 / (double)b->acc_ms);
                b->acc_bytes = b->acc_ms = 0;
            }
            b->window_bytes = 0;
            b->busy = b->outstanding > 0;
        }
    /* the chunk of new messages to a peer takes about chunk-ms on its
     * slowest channel (design notes, "Chunks sized by the link"): 64 KiB to
     * --chunk, and --chunk until a rate is measured */
    for (int p = 0; p < d->npeers; p++) {
        double slowest = 0;
        for (int k = 0; k < d->peers[p].nchan; k++)
            if (d->peers[p].tx[k]) {
                piod_tx_watchdog(d, d->peers[p].tx[k], now);
                double r = piod_tx_rate(d->peers[p].tx[k]);
                if (r > 0 && (slowest == 0 || r < slowest))
                    slowest = r;
            }
        d->peers[p].chunk = piod_bal_chunk(slowest, d->cfg.chunk_ms, d->cfg.chunk);
    }
    /* numbered frames: acks that are owed, and frames no ack came for */
    for (int p = 0; p < d->npeers; p++) {
        struct piod_peer_st *ps = &d->peers[p];
        if (!ps->hello_seen)
            continue;
        lane_ack(d, p, 1);
        /* the lane's watchdog: the peer acks at least every tick while it
         * reads, so frames kept past stall-ms + 2 ticks mean a stalled link
         * (or peer): the frames take the control plane, once per stall */
        if (ps->xout && ps->lq.head && !ps->lq.wd_tripped &&
            now - ps->lq.ack_ms > (uint64_t)d->cfg.stall_ms + 2 * TICK_MS) {
            char why[96];
            snprintf(why, sizeof(why), "no acknowledgement for %llu ms",
                     (unsigned long long)(now - ps->lq.ack_ms));
            ps->lq.wd_tripped = 1;
            express_out_down(d, p, why);
        }
        if (piod_lseq_resend_due(&ps->lq, now)) {
            PIOD_INFO("no acknowledgement from %s for a while: %zu frame(s) go again (next "
                      "time after %llu ms)",
                      ps->cfg->name, ps->lq.unacked_n, (unsigned long long)ps->lq.rto_ms);
            lane_replay(d, p);
        }
    }
    piod_rx_watchdog(d, now);
    for (int i = 0; i < d->nconns; i++)
        if (d->conns[i].fd >= 0 && piod_conn_stalled(d, &d->conns[i], now))
            conn_closed(d, &d->conns[i]);
    /* a process that died without its connection closing (it is shared
     * with a child, say): a tenth of them each tick, so each every second */
    d->ticks++;
    for (int i = (int)(d->ticks % 10); i < d->nprocs_max; i += 10) {
        struct piod_proc *p = &d->procs[i];
        if (!p->used || p->gone || kill(p->pid, 0) == 0 || errno != ESRCH)
            continue;
        /* Its last frames (up to P_BYE) may still be on their way through
         * ZeroMQ: give them a moment before calling it dead. */
        if (!p->dead_since_ms)
            p->dead_since_ms = now;
        else if (now - p->dead_since_ms > 2000)
            proc_leave(d, i, "the process died");
    }
    pending_partners(d, now);
    links_watch(d, now);
    announce_all(d); /* requests held behind a gap that has timed out */
    streams_sweep(d);
    if (d->tx_waiting) { /* chunks that found no channel (or memory) before */
        d->tx_waiting = 0;
        for (struct piod_omsg *m = d->omsgs; m; m = m->next)
            if (m->peer >= 0) {
                for (uint32_t i = 0; i < m->nchunks; i++)
                    if (m->state[i] == PIOD_OC_RESEND && chunk_queue(d, m, i, 1) != PIO_OK)
                        break;
                omsg_pump(d, m);
            }
    }
    grant_all(d);
}

/* Back-pressure from the peers to the processes. Eager messages and
 * requests go to a peer as fast as our processes hand them over; when the
 * peer reads its express lane slower than that, what it has not taken
 * waits in p->xo, in our memory. Past LANE_PAUSE we stop reading joined
 * processes (their frames wait in their sockets, and their sends block)
 * until every lane is down to LANE_RESUME. Tools (not joined) are still
 * answered, and nothing here stops us reading peers, so the lanes drain. */
int lanes_congested(struct piod *d)
{
    size_t most = 0, unacked = 0;
    int who = -1;
    for (int p = 0; p < d->npeers; p++) {
        if (d->peers[p].xout && d->peers[p].xo.queued > most) {
            most = d->peers[p].xo.queued;
            who = p;
        }
        if (d->peers[p].lq.unacked_bytes > unacked) {
            unacked = d->peers[p].lq.unacked_bytes;
            if (unacked >= LANE_UNACKED_PAUSE && most < LANE_PAUSE)
                who = p;
        }
    }
    /* what the peer has not acknowledged counts too: we keep it (lane.h) */
    if (unacked >= LANE_UNACKED_PAUSE)
        most = most > LANE_PAUSE ? most : LANE_PAUSE;
    else if (unacked > LANE_UNACKED_RESUME && most <= LANE_RESUME)
        most = LANE_RESUME + 1;
    if (!d->lanes_paused && most >= LANE_PAUSE) {
        d->lanes_paused = 1;
        if (!d->lanes_warned)
            PIOD_WARN("express lane to %s has %zu bytes waiting (the peer reads slower than our "
                      "processes send): their requests wait until it drains",
                      d->peers[who].cfg->name, most);
        d->lanes_warned = 1; /* once: a flood would otherwise fill the log */
    } else if (d->lanes_paused && most <= LANE_RESUME) {
        d->lanes_paused = 0;
    }
    return d->lanes_paused;
}

/* A full lane stops only the processes whose messages fill it: those with
 * at least the mean of the unacknowledged bytes that processes put there
 * (lane_share). A process with less, or none (it receives, or sends large
 * messages whose bytes take the channels), is read on, so one flood cannot
 * stall its neighbours. Computed only while a lane is full. */
size_t lane_share(struct piod *d)
{
    size_t total = 0, n = 0;
    for (int i = 0; i < d->nprocs_max; i++)
        if (d->procs[i].used && d->procs[i].lane_bytes > 0) {
            total += d->procs[i].lane_bytes;
            n++;
        }
    return n ? total / n : 0;
}

int lane_heavy(struct piod *d, struct piod_conn *c, size_t share)
{
    int pi = proc_index(d, piod_conn_cid(d, c));
    if (pi < 0)
        return 1; /* joined, but not (or no longer) a process: as before */
    size_t b = d->procs[pi].lane_bytes;
    return b > 0 && b >= share;
}
