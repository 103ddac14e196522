/* proc.c - the processes of this host: joining and leaving, their frames
 * (sends, claims, frees, partner look-ups, info), and local delivery.
 * Split from core.c; main thread only.
 * SPDX-License-Identifier: BSD-3-Clause */
#include "dlane.h"
#include "piod.h"
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

/* ---- processes ---- */

struct left_entry {
    char app[PIO_WIRE_NAME];
    uint32_t proc, nprocs;
    uint64_t ev; /* d->events at its leave */
};
static struct left_entry left_ring[1024];
static unsigned left_n;

/* 1 when process proc of app left this host at or after event since */
int app_proc_left_since(const char *app, uint32_t proc, uint64_t since)
{
    unsigned n = left_n < 1024 ? left_n : 1024;
    for (unsigned i = 0; i < n; i++)
        if (left_ring[i].proc == proc && left_ring[i].ev >= since &&
            strcmp(left_ring[i].app, app) == 0)
            return 1;
    return 0;
}

int app_proc_left(struct piod *d, const char *app, uint32_t proc)
{
    (void)d;
    unsigned n = left_n < 1024 ? left_n : 1024;
    for (unsigned i = 0; i < n; i++)
        if (left_ring[i].proc == proc && strcmp(left_ring[i].app, app) == 0)
            return 1;
    return 0;
}

/* nprocs of a local application that has left (0 if none did), *peer = -1. */
uint32_t left_nprocs(const char *app, int *peer)
{
    unsigned n = left_n < 1024 ? left_n : 1024;
    for (unsigned i = 0; i < n; i++)
        if (strcmp(left_ring[i].app, app) == 0) {
            *peer = -1;
            return left_ring[i].nprocs;
        }
    return 0;
}

static void left_forget(const char *app, uint32_t proc)
{
    unsigned n = left_n < 1024 ? left_n : 1024;
    for (unsigned i = 0; i < n; i++)
        if (left_ring[i].proc == proc && strcmp(left_ring[i].app, app) == 0)
            left_ring[i].app[0] = 0;
}

int proc_index(struct piod *d, uint64_t cid)
{
    struct piod_conn *c = piod_conn_get(d, cid);
    if (!c || c->pi < 0 || c->pi >= d->nprocs_max)
        return -1;
    struct piod_proc *p = &d->procs[c->pi];
    return p->used && !p->gone && p->cid == cid ? c->pi : -1;
}

/* Give up an outgoing message: the receiver is told (status), the sender
 * too if it still waits, and m goes once no chunk of it is on a channel. */
static void omsg_abandon(struct piod *d, struct piod_omsg *m, int status)
{
    if (m->peer >= 0)
        send_h_done(d, m->peer, m->msgid, status);
    else if (m->local)
        imsg_fail(d, m->local, status);
    omsg_finish(d, m, status);
    for (uint32_t i = 0; i < m->nchunks; i++)
        if (m->state[i] != PIOD_OC_QUEUED)
            m->state[i] = PIOD_OC_ACKED;
    omsg_maybe_free(d, m, 1);
}

/* Tell our processes that every joined process of the peer's applications
 * has left (kind 2) or is there again (kind 1): a receive waiting on one of
 * them ends with PIO_EGONE instead of waiting for ever. */
void remote_apps_announce(struct piod *d, int peer, uint32_t kind)
{
    struct piod_peer_st *p = &d->peers[peer];
    for (int i = 0; i < p->napps; i++)
        for (uint32_t j = 0; j < p->apps[i].nprocs; j++)
            if (p->apps[i].joined && p->apps[i].joined[j])
                broadcast_event(d, p->apps[i].app, j, p->apps[i].nprocs, kind);
}

/* A peer none of whose channels has been up for link-timeout seconds: every
 * message to it that has not all arrived fails with PIO_ELINK, so does every
 * message from it that has not all arrived (it cannot come: a peer that was
 * killed never finishes it), and its applications count as gone until a
 * channel is up again. While one channel is up the others' chunks go on it
 * and nothing fails. */
void links_watch(struct piod *d, uint64_t now)
{
    for (int k = 0; k < d->npeers; k++) {
        struct piod_peer_st *p = &d->peers[k];
        int up = 0;
        for (int i = 0; i < p->nchan && !up; i++)
            up = p->tx[i] && piod_tx_state(p->tx[i], NULL) == PIO_WCHAN_UP;
        if (up && p->unreachable) {
            PIOD_INFO("a channel to %s is up again: its applications are reachable", p->cfg->name);
            p->unreachable = 0;
            remote_apps_announce(d, k, 1);
        }
        if (up || !p->hello_seen || p->nchan == 0) {
            p->none_up_ms = 0;
            continue;
        }
        if (!p->none_up_ms)
            p->none_up_ms = now;
        if (now - p->none_up_ms < (uint64_t)d->cfg.link_timeout * 1000)
            continue;
        if (!p->unreachable) {
            PIOD_WARN("no channel to %s has been up for %u s: its applications count as gone "
                      "until one is back",
                      p->cfg->name, d->cfg.link_timeout);
            p->unreachable = 1;
            for (struct piod_imsg *m = d->imsgs; m;) {
                struct piod_imsg *next = m->next;
                if (m->peer == k && m->narrived < m->nchunks) {
                    if (m->dst >= 0 && m->announced)
                        send_cancel(d, m->dst, m->key, PIO_ELINK);
                    imsg_fail(d, m, PIO_ELINK);
                }
                m = next;
            }
            remote_apps_announce(d, k, 2);
        }
        for (struct piod_omsg *m = d->omsgs; m;) {
            struct piod_omsg *next = m->next;
            if (m->peer == k && !m->outcome && m->nacked < m->nchunks) {
                PIOD_WARN("no channel to %s has been up for %u s: message %llu (%llu bytes) fails "
                          "with PIO_ELINK",
                          p->cfg->name, d->cfg.link_timeout, (unsigned long long)m->msgid,
                          (unsigned long long)m->size);
                omsg_abandon(d, m, PIO_ELINK);
            }
            m = next;
        }
    }
}

void proc_leave(struct piod *d, int pi, const char *why)
{
    struct piod_proc *p = &d->procs[pi];
    if (p->gone)
        return;
    PIOD_INFO("process %s:%u (pid %d) left: %s", p->app, p->proc, (int)p->pid, why);
    atomic_store(&p->gone, 1);
    proc_names_del(d, pi);
    ring_del(d, pi);
    shm_unlink(p->shm);
    struct left_entry *le = &left_ring[left_n++ % 1024];
    snprintf(le->app, sizeof(le->app), "%s", p->app);
    le->proc = p->proc;
    le->nprocs = p->nprocs;
    le->ev = ++d->events;
    /* messages to it fail; their grants go */
    for (struct piod_imsg *m = d->imsgs; m;) {
        struct piod_imsg *next = m->next;
        if (m->dst == pi)
            imsg_fail(d, m, PIO_EGONE);
        m = next;
    }
    piod_grants_drop_proc(d, p);
    /* its messages whose bytes will never all come: cancel at the receiver */
    for (struct piod_omsg *m = d->omsgs; m;) {
        struct piod_omsg *next = m->next;
        if (m->src == pi) {
            int complete = 1;
            for (uint32_t i = 0; i < m->nchunks; i++)
                if (m->data_off[i] == UINT64_MAX)
                    complete = 0;
            if (!complete) {
                PIOD_WARN("message %llu of %s:%u lost its sender before all its bytes came",
                          (unsigned long long)m->msgid, p->app, p->proc);
                omsg_abandon(d, m, PIO_EGONE);
            }
        }
        m = next;
    }
    for (int k = 0; k < d->npeers; k++)
        if (d->peers[k].hello_seen)
            send_registry(d, k, pi, PIO_WREG_LEFT);
    broadcast_event(d, p->app, p->proc, p->nprocs, 2);
    /* its streams, both ways (before a process of the same name can join) */
    streams_forget(d, &d->tx_streams, -2, STREAM_SRC, p->app, p->proc);
    streams_forget(d, &d->tx_streams, -1, STREAM_DST, p->app, p->proc);
    streams_forget(d, &d->rx_streams, -2, STREAM_DST, p->app, p->proc);
    for (int c = 0; c < PIOD_NCLS; c++) { /* what it held leaves the grant budget */
        d->recv_held -= p->cls_held[c] < d->recv_held ? p->cls_held[c] : d->recv_held;
        p->cls_held[c] = 0;
    }
    pio_ralloc_fini(&p->recv);
    if (atomic_load(&p->refs) == 0)
        piod_proc_unmap(p);
}

/* uid's user name on this host into buf ("" when it has none). At a join
 * only: a name service may take a moment. */
static void piod_user_name(uid_t uid, char *buf, size_t cap)
{
    struct passwd pw, *res = NULL;
    char tmp[4096];
    buf[0] = '\0';
    if (getpwuid_r(uid, &pw, tmp, sizeof(tmp), &res) == 0 && res && strlen(pw.pw_name) < cap)
        snprintf(buf, cap, "%s", pw.pw_name);
}

/* A client of another protocol version: P_WELCOME with PIO_EVERSION and
 * nothing else, so its PIO_Init says why (the caller logs who it was). */
static void refuse_version(struct piod *d, uint64_t cid)
{
    struct pio_frame w;
    memset(&w, 0, sizeof(w));
    w.type = PIO_F_P_WELCOME;
    w.u.p_welcome.status = PIO_EVERSION;
    send_cid(d, cid, &w);
}

static void on_hello(struct piod *d, uint64_t cid, struct pio_p_hello *h)
{
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_WELCOME;
    struct pio_p_welcome *w = &f.u.p_welcome;
    int slot = -1;
    struct piod_conn *c = piod_conn_get(d, cid);
    struct piod_proc *owner;
    long cfg_owner;
    w->status = PIO_OK;
    if (h->proto != PIO_WIRE_VERSION) {
        PIOD_WARN("process %s:%u speaks protocol version %u, we speak %u: refused", h->app, h->proc,
                  h->proto, PIO_WIRE_VERSION);
        w->status = PIO_EVERSION;
    } else if (d->stopping || h->app[0] == 0 || h->nprocs == 0 || h->proc >= h->nprocs) {
        w->status = d->stopping ? PIO_EBUSY : PIO_EINVAL;
    } else if (c && (cfg_owner = piod_config_app_owner(&d->cfg, h->app)) >= 0 &&
               (long)c->uid != cfg_owner) {
        PIOD_WARN("process %s:%u (pid %d, uid %u) refused: application %s belongs to uid %ld "
                  "([application %s] in the configuration) (PIO_EACCES)",
                  h->app, h->proc, (int)c->pid, (unsigned)c->uid, h->app, cfg_owner, h->app);
        w->status = PIO_EACCES;
    } else if (c && (owner = proc_of_app(d, h->app)) && owner->uid != c->uid) {
        /* the name belongs to the uid of its joined processes (never to
         * what a hello says: the uid is the kernel's, SO_PEERCRED) */
        PIOD_WARN("process %s:%u (pid %d, uid %u) refused: application %s belongs to uid %u, "
                  "whose processes are joined (PIO_EACCES)",
                  h->app, h->proc, (int)c->pid, (unsigned)c->uid, h->app, (unsigned)owner->uid);
        w->status = PIO_EACCES;
    } else {
        int old = proc_by_name(d, h->app, h->proc);
        if (old >= 0) {
            if (kill(d->procs[old].pid, 0) == 0 || errno != ESRCH)
                w->status = PIO_EEXIST;
            else
                proc_leave(d, old, "replaced by a new process of the same name (old one died)");
        }
        for (int i = 0; w->status == PIO_OK && i < d->nprocs_max && slot < 0; i++) {
            struct piod_proc *p = &d->procs[i];
            if (!p->used ||
                (p->gone && atomic_load(&p->unmapped) == 2 && atomic_load(&p->refs) == 0))
                slot = i;
        }
        if (w->status == PIO_OK && slot < 0)
            w->status = PIO_EPOOL;
    }
    if (w->status == PIO_OK) {
        struct piod_proc *p = &d->procs[slot];
        memset(p, 0, sizeof(*p));
        p->cid = cid;
        snprintf(p->app, sizeof(p->app), "%s", h->app);
        p->proc = h->proc;
        p->nprocs = h->nprocs;
        p->join_ev = ++d->events;
        /* the kernel's word on who connected beats what the hello says */
        p->pid = c && c->pid > 0 ? c->pid : (pid_t)h->pid;
        p->uid = c ? c->uid : geteuid();
        p->gid = c ? c->gid : getegid();
        piod_user_name(p->uid, p->user, sizeof(p->user));
        p->own_senders =
            (h->flags & PIO_HF_OWN_UID) || piod_config_app_own_senders(&d->cfg, h->app);
        p->size = d->cfg.proc_pool;
        static unsigned serial;
        snprintf(p->shm, sizeof(p->shm), "/pio-%d-%u", (int)getpid(), ++serial);
        int rc = pio_shm_create(p->shm, p->size, c ? (long)c->uid : -1, (void **)&p->base);
        if (rc == PIO_EEXIST) {
            /* the name carries our pid: a piod that had it before us died
             * without unlinking its pools. That object is stale. */
            PIOD_WARN("pool %s was left by a dead piod with our pid: replacing it", p->shm);
            shm_unlink(p->shm);
            rc = pio_shm_create(p->shm, p->size, c ? (long)c->uid : -1, (void **)&p->base);
        }
        if (rc == PIO_OK)
            rc = pio_ralloc_init(&p->recv, p->size / 2, p->size - p->size / 2);
        if (rc != PIO_OK) {
            PIOD_ERR("cannot create the pool of %s:%u: %s", h->app, h->proc, PIO_Strerror(rc));
            if (p->base) {
                pio_shm_close(p->shm, p->base, p->size, 1);
                p->base = NULL;
            }
            w->status = rc;
        } else {
            p->used = 1;
            p->send_off = 0;
            p->send_len = p->size / 2;
            p->recv_off = p->size / 2;
            p->recv_len = p->size - p->size / 2;
            w->eager_limit = d->cfg.eager_limit;
            w->chunk = d->cfg.chunk;
            w->send_off = p->send_off;
            w->send_len = p->send_len;
            w->recv_off = p->recv_off;
            w->recv_len = p->recv_len;
            snprintf(w->shm, sizeof(w->shm), "%s", p->shm);
            left_forget(p->app, p->proc);
            if (c) {
                c->joined = 1;
                c->pi = slot;
            }
            proc_names_add(d, slot);
            PIOD_INFO("process %s:%u of %u joined (pid %u, pool %s)", p->app, p->proc, p->nprocs,
                      h->pid, p->shm);
        }
    }
    snprintf(w->host, sizeof(w->host), "%s", d->cfg.name);
    snprintf(w->system, sizeof(w->system), "%s", d->cfg.system);
    send_cid(d, cid, &f);
    if (w->status != PIO_OK)
        return;
    for (int k = 0; k < d->npeers; k++)
        if (d->peers[k].hello_seen)
            send_registry(d, k, slot, PIO_WREG_JOINED);
    broadcast_event(d, h->app, h->proc, h->nprocs, 1);
    announce_all(d);
    grant_all(d);
    pending_partners(d, piod_now_ms());
}

/* PIO_USER(i) must name a channel of the bundle that is up now. */
static int user_channel_up(struct piod *d, int peer, uint32_t i)
{
    struct piod_peer_st *p = &d->peers[peer];
    uint64_t q;
    return i < (uint32_t)p->nchan && p->tx[i] && piod_tx_state(p->tx[i], &q) == PIO_WCHAN_UP;
}

static void on_send(struct piod *d, int pi, struct pio_p_send *s)
{
    struct piod_proc *src = &d->procs[pi];
    int peer = -1;
    /* the host where the destination process joined, not any host of its
     * application (find_proc) */
    uint32_t nprocs = find_proc(d, s->partner, s->dst_proc, &peer);
    int status = PIO_OK;
    if (!nprocs)
        status = PIO_EPARTNER;
    else if (s->dst_proc >= nprocs || !pio_type_known((int)s->datatype))
        status = PIO_EINVAL;
    else if (peer >= 0 && s->conn == PIO_WCONN_USER &&
             ((s->flags & PIO_WF_EAGER) ? s->conn_arg >= (uint32_t)d->peers[peer].nchan
                                        : !user_channel_up(d, peer, s->conn_arg)))
        status = PIO_ECHANNEL; /* an eager message uses no channel: it need only exist */
    if (status != PIO_OK) {
        struct piod_omsg tmp = {.sid = s->sid, .src = pi};
        omsg_finish(d, &tmp, status);
        return;
    }
    if (s->conn == PIO_WCONN_USER && !(s->flags & PIO_WF_EAGER)) /* libpio waits for this */
        send_done_flags(d, pi, PIO_F_P_SEND_DONE, PIO_WSD_CHANNEL_OK, s->sid, PIO_OK);
    struct pio_h_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.msgid = ++d->next_msgid;
    struct piod_stream *st =
        stream_get(&d->tx_streams, peer, src->app, src->proc, s->partner, s->dst_proc, s->tag);
    if (!st) {
        struct piod_omsg tmp = {.sid = s->sid, .src = pi};
        omsg_finish(d, &tmp, PIO_ENOMEM);
        return;
    }
    rq.seq = st->next_seq++;
    rq.size = s->size;
    rq.count = s->count;
    rq.src_proc = src->proc;
    rq.dst_proc = s->dst_proc;
    rq.tag = s->tag;
    rq.datatype = s->datatype;
    rq.flags = s->flags & ~(uint32_t)PIO_WF_FRESH;
    if (proc_unseen_since(d, s->partner, s->dst_proc, src->join_ev))
        rq.flags |= PIO_WF_FRESH; /* a new run's process: it waits for it */
    rq.chunk = peer >= 0 && d->peers[peer].chunk ? d->peers[peer].chunk : d->cfg.chunk;
    rq.conn = s->conn;
    rq.conn_arg = s->conn_arg;
    rq.src_uid = (uint32_t)src->uid; /* the kernel's word (SO_PEERCRED), never the process' */
    rq.src_gid = (uint32_t)src->gid;
    snprintf(rq.src_user, sizeof(rq.src_user), "%s", src->user);
    snprintf(rq.src_app, sizeof(rq.src_app), "%s", src->app);
    snprintf(rq.dst_app, sizeof(rq.dst_app), "%s", s->partner);
    rq.payload = s->payload;

    struct piod_omsg *m = NULL;
    if (!(s->flags & PIO_WF_EAGER) || (s->flags & PIO_WF_SYNC)) {
        m = calloc(1, sizeof(*m));
        if (!m)
            goto nomem;
        m->msgid = rq.msgid;
        m->sid = s->sid;
        m->src = pi;
        m->peer = peer;
        m->size = s->size;
        m->chunk = rq.chunk;
        m->flags = s->flags;
        m->conn = s->conn;
        m->conn_arg = s->conn_arg;
        m->src_proc = src->proc;
        m->dst_proc = s->dst_proc;
        m->nchunks =
            (s->flags & PIO_WF_EAGER) ? 0 : (uint32_t)((s->size + m->chunk - 1) / m->chunk);
        m->data_off = malloc((m->nchunks + 1) * sizeof(*m->data_off));
        m->grant = malloc((m->nchunks + 1) * sizeof(*m->grant));
        m->state = calloc(m->nchunks + 1, 1);
        if (!m->data_off || !m->grant || !m->state) {
            free(m->data_off);
            free(m->grant);
            free(m->state);
            free(m);
            goto nomem;
        }
        for (uint32_t i = 0; i < m->nchunks; i++) {
            m->data_off[i] = UINT64_MAX;
            m->grant[i] = -1;
        }
        if (omsg_link(d, m) != PIO_OK) {
            free(m->data_off);
            free(m->grant);
            free(m->state);
            free(m);
            goto nomem;
        }
        piod_proc_ref(src);
    }
    if (peer >= 0) {
        struct pio_frame f;
        memset(&f, 0, sizeof(f));
        f.type = PIO_F_H_REQUEST;
        f.u.h_request = rq;
        /* an eager message that waits for no outcome is told if it is lost
         * with the peer's run (lane_lost) */
        int rc = send_peer_msg(d, peer, &f, m ? -1 : pi, s->sid, pi);
        if (rc != PIO_OK && m) {
            omsg_finish(d, m, rc);
            omsg_free(d, m);
        } else if (rc != PIO_OK) {
            struct piod_omsg tmp = {.sid = s->sid, .src = pi};
            omsg_finish(d, &tmp, rc);
        }
        return;
    }
    struct piod_imsg *im = imsg_new(d, -1, &rq);
    if (!im) {
        if (m)
            omsg_free(d, m);
        goto nomem;
    }
    if (m) {
        m->local = im;
        im->local = m;
    }
    announce_all(d);
    grant_all(d);
    return;
nomem : {
    struct piod_omsg tmp = {.sid = s->sid, .src = pi};
    omsg_finish(d, &tmp, PIO_ENOMEM);
}
}

/* libpio copies a message into its send region in pieces of --chunk bytes
 * (the welcome's chunk); the message's own chunk may be smaller (sized by
 * the link's rate, a divisor of --chunk), so one piece holds one or more
 * whole chunks. Each chunk is released on its own once acknowledged. */
static int send_data_bad(const struct piod_omsg *m, uint64_t msg_off, uint64_t len)
{
    if (!m || len == 0 || msg_off % m->chunk != 0 || msg_off >= m->size || len > m->size - msg_off)
        return 1;
    if ((msg_off + len) % m->chunk != 0 && msg_off + len != m->size)
        return 1; /* ends inside a chunk */
    for (uint64_t o = msg_off; o < msg_off + len; o += m->chunk)
        if (m->data_off[o / m->chunk] != UINT64_MAX)
            return 1; /* sent twice */
    return 0;
}

static void on_send_data(struct piod *d, int pi, struct pio_p_ranges *r)
{
    struct piod_omsg *m = omsg_by_sid(d, pi, r->id);
    uint64_t msg_off = r->msg_off;
    for (uint32_t j = 0; j < r->n; j++) {
        uint64_t off = r->r[j].off, len = r->r[j].len;
        struct piod_proc *p = &d->procs[pi];
        if (off < p->send_off || off + len > p->send_off + p->send_len ||
            send_data_bad(m, msg_off, len)) {
            /* not ours to keep (a cancelled message, or a confused process) */
            PIOD_DEBUG("P_SEND_DATA sid %llu off %llu len %llu refused (%s)",
                       (unsigned long long)r->id, (unsigned long long)msg_off,
                       (unsigned long long)len, m ? "bad range" : "no such message");
            send_ranges(d, pi, PIO_F_P_RELEASE, 0, 0, off, len);
            msg_off += len;
            continue;
        }
        for (uint64_t o = msg_off; o < msg_off + len; o += m->chunk) {
            uint32_t i = (uint32_t)(o / m->chunk);
            m->data_off[i] = off + (o - msg_off);
            if (m->peer < 0) {
                if (m->local && m->local->state[i] == PIOD_IC_GRANTED)
                    local_copy(d, m->local, i);
            } else if (m->grant[i] >= 0 && m->state[i] == PIOD_OC_WAITING) {
                chunk_queue(d, m, i, 0);
            }
        }
        msg_off += len;
    }
}

static void on_free(struct piod *d, int pi, struct pio_p_ranges *r)
{
    struct piod_imsg *m = imsg_by_key(d, pi, r->id);
    struct piod_proc *p = &d->procs[pi];
    if (!m)
        return;
    uint64_t msg_off = r->msg_off;
    for (uint32_t j = 0; j < r->n; j++, msg_off += r->r[j - 1].len) {
        if (msg_off % m->chunk != 0 || msg_off / m->chunk >= m->nchunks)
            continue;
        uint32_t i = (uint32_t)(msg_off / m->chunk);
        if (m->state[i] != PIOD_IC_ARRIVED || m->pool_off[i] != r->r[j].off)
            continue;
        uint32_t len = chunk_len(m->size, m->chunk, i);
        pio_ralloc_put(&p->recv, m->pool_off[i], len);
        piod_cls_release(d, p, m, len);
        if (!m->claimed)
            p->unclaimed_bytes -= len;
        m->state[i] = PIOD_IC_FREED;
        m->nfreed++;
    }
    if (m->nfreed == m->nchunks)
        imsg_complete(d, m, PIO_OK);
    grant_wake(d, pi);
    grant_all(d);
}

/* P_QOS: the process's receive classes (PIO_Setclasses). Messages already
 * queued keep their class; new ones are classed by the new rule. */
static void on_qos(struct piod *d, int pi, const struct pio_p_qos *q)
{
    struct piod_proc *p = &d->procs[pi];
    int ok = q->n <= PIOD_NCLS;
    for (uint32_t c = 0; ok && c < q->n; c++)
        ok = q->share[c] >= 1 && q->share[c] <= 100;
    if (!ok) {
        PIOD_WARN("%s:%u: receive classes refused (%u classes, shares must be 1..100)", p->app,
                  p->proc, q->n);
        return;
    }
    p->ncls = (int)q->n;
    p->cls_tag0 = q->tag0;
    for (uint32_t c = 0; c < q->n; c++)
        p->cls_share[c] = q->share[c];
    PIOD_INFO("%s:%u: %u receive classes from tag %d", p->app, p->proc, q->n, (int)q->tag0);
    grant_all(d);
}

static void on_claim(struct piod *d, int pi, uint64_t key)
{
    struct piod_imsg *m = imsg_by_key(d, pi, key);
    if (!m || m->claimed)
        return;
    int queued = m->in_gq != 0;
    gq_del(d, m);
    m->claimed = 1;
    for (uint32_t i = 0; i < m->nchunks; i++)
        if (m->state[i] == PIOD_IC_GRANTED || m->state[i] == PIOD_IC_ARRIVED)
            d->procs[pi].unclaimed_bytes -= chunk_len(m->size, m->chunk, i);
    if (queued)
        gq_add(d, m); /* among the claimed: served first */
    grant_wake(d, pi);
    grant_all(d);
}

static void on_consumed(struct piod *d, int pi, uint64_t key)
{
    struct piod_imsg *m = imsg_by_key(d, pi, key);
    if (m && (m->flags & PIO_WF_EAGER))
        imsg_complete(d, m, PIO_OK);
}

void piod_chan_rows(struct piod *d, struct pio_chan_info *rows, uint32_t max, uint32_t *n)
{
    for (int p = 0; p < d->npeers; p++) {
        struct piod_peer_st *ps = &d->peers[p];
        for (int k = 0; k < ps->nchan && *n < max; k++) {
            struct pio_chan_info *c = &rows[(*n)++];
            snprintf(c->peer, sizeof(c->peer), "%s", ps->cfg->name);
            c->index = (uint32_t)k;
            struct piod_txchan *ch = ps->tx[k];
            if (ch) {
                pthread_mutex_lock(&ch->mtx);
                c->state = (uint32_t)ch->state;
                c->tx_bytes = ch->tx_bytes;
                c->tx_chunks = ch->tx_chunks;
                c->resent = ch->resent;
                c->downs = ch->downs;
                c->queued = ch->queued_bytes;
                snprintf(c->local, sizeof(c->local), "%s",
                         ch->state == PIO_WCHAN_UP ? ch->local : "");
                snprintf(c->remote, sizeof(c->remote), "%s",
                         ch->state == PIO_WCHAN_UP ? ch->remote : "");
                pthread_mutex_unlock(&ch->mtx);
            }
            if (!c->local[0] || d->cfg.link_owner[k] >= 0) /* relayed: the link's owner */
                snprintf(c->local, sizeof(c->local), "%s", d->cfg.link_addr[k]);
            if (!c->remote[0])
                snprintf(c->remote, sizeof(c->remote), "%s", ps->cfg->addr[k]);
            c->rx_bytes = atomic_load(&ps->rx_bytes[k]);
            c->rx_chunks = atomic_load(&ps->rx_chunks[k]);
            c->rate = (uint64_t)ps->bal[k].rate;
        }
    }
}

static void on_info(struct piod *d, uint64_t cid, uint64_t req)
{
    struct pio_frame *f = calloc(1, sizeof(*f));
    if (!f)
        return;
    f->type = PIO_F_P_INFO;
    struct pio_p_info *in = &f->u.p_info;
    in->req = req;
    in->version = PIO_WIRE_VERSION;
    snprintf(in->host, sizeof(in->host), "%s", d->cfg.name);
    snprintf(in->system, sizeof(in->system), "%s", d->cfg.system);
    piod_chan_rows(d, in->chan, PIO_WIRE_MAX_CHANNELS, &in->nchan);
    piod_relay_rows(d, in->chan, PIO_WIRE_MAX_CHANNELS, &in->nchan);
    for (int i = 0; i < d->nprocs_max && in->napp < PIO_WIRE_MAX_REG; i++) {
        struct piod_proc *p = &d->procs[i];
        if (!p->used || p->gone)
            continue;
        uint32_t k;
        for (k = 0; k < in->napp; k++)
            if (strcmp(in->app[k].app, p->app) == 0 &&
                strcmp(in->app[k].system, d->cfg.system) == 0)
                break;
        if (k == in->napp) {
            in->napp++;
            snprintf(in->app[k].app, sizeof(in->app[k].app), "%s", p->app);
            snprintf(in->app[k].system, sizeof(in->app[k].system), "%s", d->cfg.system);
            in->app[k].nprocs = p->nprocs;
        }
        in->app[k].joined++;
    }
    /* pools still mapped, including those of processes that left while a
     * channel or a message still held them: what the pool really has out */
    for (int i = 0; i < d->nprocs_max; i++)
        if (d->procs[i].used && atomic_load(&d->procs[i].unmapped) != 2)
            in->pool_used += d->procs[i].size;
    for (int p = 0; p < d->npeers; p++)
        for (int a = 0; a < d->peers[p].napps && in->napp < PIO_WIRE_MAX_REG; a++) {
            struct piod_remote_app *ra = &d->peers[p].apps[a];
            if (ra->njoined == 0)
                continue;
            struct pio_app_info *ai = &in->app[in->napp++];
            snprintf(ai->app, sizeof(ai->app), "%s", ra->app);
            snprintf(ai->system, sizeof(ai->system), "%s", d->peers[p].cfg->name);
            ai->nprocs = ra->nprocs;
            ai->joined = ra->njoined;
        }
    in->pool_size = d->cfg.pool;
    send_cid(d, cid, f);
    free(f);
}

static void on_proc_frame(struct piod *d, uint64_t cid, const uint8_t *buf, size_t len,
                          struct pio_frame *f)
{
    if (d->cfg.log_level >= PIOD_LOG_DEBUG && len >= 6)
        PIOD_DEBUG("proc frame %s (%zu bytes)", pio_wire_type_name(buf[5]), len);
    uint8_t ver = 0, type;
    uint32_t blen;
    int rc = pio_wire_peek(buf, len, &type, &blen, &ver);
    if (rc == PIO_OK)
        rc = pio_wire_decode(buf, len, f, NULL);
    if (rc != PIO_OK) {
        struct piod_conn *cc = piod_conn_get(d, cid);
        int cpid = cc ? (int)cc->pid : 0;
        if (rc == PIO_EVERSION)
            PIOD_WARN("client pid %d speaks protocol version %u, we speak %u", cpid, ver,
                      PIO_WIRE_VERSION);
        else if (len >= PIO_WIRE_HDR && pio_wire_type_name(buf[5])[0] == '?')
            PIOD_WARN("frame of unknown type %u from client pid %d (%zu bytes): ignored", buf[5],
                      cpid, len);
        else
            PIOD_WARN("malformed %s frame from client pid %d (%zu bytes: bad check, a count over "
                      "its bound or a bad body): ignored",
                      len >= PIO_WIRE_HDR ? pio_wire_type_name(buf[5]) : "?", cpid, len);
        if (rc == PIO_EVERSION)
            refuse_version(d, cid);
        return;
    }
    if (f->type == PIO_F_P_HELLO) {
        on_hello(d, cid, &f->u.p_hello);
        return;
    }
    if (f->type == PIO_F_P_INFO_REQ) {
        on_info(d, cid, f->u.p_info_req.req);
        return;
    }
    int pi = proc_index(d, cid);
    if (pi < 0) {
        PIOD_DEBUG("%s from a process that has not joined: ignored", pio_wire_type_name(f->type));
        return;
    }
    switch (f->type) {
    case PIO_F_P_BYE: proc_leave(d, pi, "PIO_Exit"); break;
    case PIO_F_P_PARTNER: {
        /* a process waits for a few partners at once; thousands are a flood
         * that would grow the list every tick walks */
        int waiting = 0;
        for (struct piod_pending_partner *x = d->pending; x; x = x->next)
            waiting += x->cid == cid;
        if (waiting >= PARTNER_WAIT_MAX) {
            struct piod_conn *cc = piod_conn_get(d, cid);
            if (cc && !cc->warned_partner)
                PIOD_WARN("process %s:%u (pid %d) waits for %d partner look-ups already: more "
                          "are answered PIO_EBUSY",
                          d->procs[pi].app, d->procs[pi].proc, (int)d->procs[pi].pid, waiting);
            if (cc)
                cc->warned_partner = 1;
            struct piod_pending_partner busy = {.cid = cid, .req = f->u.p_partner.req};
            snprintf(busy.app, sizeof(busy.app), "%s", f->u.p_partner.app);
            answer_partner(d, &busy, PIO_EBUSY);
            break;
        }
        struct piod_pending_partner *pp = calloc(1, sizeof(*pp));
        if (!pp)
            break;
        pp->cid = cid;
        pp->req = f->u.p_partner.req;
        snprintf(pp->app, sizeof(pp->app), "%s", f->u.p_partner.app);
        pp->deadline_ms = piod_now_ms() + f->u.p_partner.timeout_ms;
        pp->next = d->pending;
        d->pending = pp;
        pending_partners(d, piod_now_ms());
        break;
    }
    case PIO_F_P_SEND:
        PIOD_DEBUG("P_SEND sid %llu size %llu", (unsigned long long)f->u.p_send.sid,
                   (unsigned long long)f->u.p_send.size);
        on_send(d, pi, &f->u.p_send);
        break;
    case PIO_F_P_SEND_DATA: on_send_data(d, pi, &f->u.p_ranges); break;
    case PIO_F_P_FREE: on_free(d, pi, &f->u.p_ranges); break;
    case PIO_F_P_CLAIM: on_claim(d, pi, f->u.p_done.id); break;
    case PIO_F_P_QOS: on_qos(d, pi, &f->u.p_qos); break;
    case PIO_F_P_LANE_REQ: piod_on_lane_req(d, pi, &f->u.p_lane_req); break;
    case PIO_F_P_CONSUMED: on_consumed(d, pi, f->u.p_done.id); break;
    default:
        PIOD_WARN("unexpected %s from process %s:%u", pio_wire_type_name(f->type), d->procs[pi].app,
                  d->procs[pi].proc);
    }
}

/* A client hung up: a process that had not said P_BYE left (exit or death:
 * either way every frame it sent was read before the hang-up). */
void conn_closed(struct piod *d, struct piod_conn *c)
{
    uint64_t cid = piod_conn_cid(d, c);
    int pi = proc_index(d, cid);
    if (pi >= 0)
        proc_leave(d, pi, "its connection closed (the process exited or died)");
    piod_conn_close(d, c);
}

/* Send what waits for a client, then handle what it sent (one read, so
 * one client cannot starve the others). */
void on_conn_ready(struct piod *d, struct piod_conn *c, short revents, struct pio_frame *f)
{
    /* A client that hung up while we were not reading it (back-pressure:
     * POLLIN was not asked for) still has frames in its socket: its last
     * sends, its P_BYE. They are read and handled, all of them (the socket's
     * buffer bounds them), before the connection closes: a process that
     * sent and exited has its messages delivered, as if we had been reading. */
    int hung_up = (revents & (POLLHUP | POLLERR)) && !(revents & POLLIN) &&
                  (c->paused || (d->lanes_paused && c->joined));
    /* A client that exits with our frames unread in its socket makes our
     * sends fail at once (EPIPE): that is the same hang-up, seen first from
     * the writing side (a client paused for not reading always has frames
     * waiting here), and what it sent before it went is still to be read. */
    if ((revents & POLLOUT) && pio_fout_flush(&c->out, c->fd) != PIO_OK) {
        pio_fout_clear(&c->out);
        hung_up = 1;
    }
    if (!hung_up && !(revents & (POLLIN | POLLERR | POLLHUP)))
        return;
    uint64_t cid = piod_conn_cid(d, c);
    int rc;
    do {
        rc = pio_fin_fill(&c->in, c->fd);
        if (rc == PIO_EAGAIN && !hung_up)
            return;
        if (rc != PIO_OK) {
            conn_closed(d, c);
            return;
        }
        const uint8_t *fr;
        size_t len;
        uint8_t ver;
        while (c->fd >= 0 && piod_conn_get(d, cid) == c &&
               (rc = pio_fin_next(&c->in, &fr, &len, &ver)) == PIO_OK)
            on_proc_frame(d, cid, fr, len, f);
    } while (hung_up && rc == PIO_EAGAIN && c->fd >= 0 && piod_conn_get(d, cid) == c);
    if (rc == PIO_EPROTO || rc == PIO_EVERSION) {
        PIOD_WARN("client pid %d sent %s: disconnected", (int)c->pid,
                  rc == PIO_EVERSION ? "another protocol version" : "bytes that are not frames");
        if (rc == PIO_EVERSION)
            refuse_version(d, cid);
        conn_closed(d, c);
    }
}
