/* registry.c - who is where: the applications of peers (registries),
 * this host's joined processes by name, and the streams that keep each
 * sender's messages in order. Split from core.c; main thread only.
 * SPDX-License-Identifier: BSD-3-Clause */
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

/* ---- registry ---- */

/* Applications of a peer that have left and are still remembered (so that
 * a send to one fails with PIO_EGONE rather than waiting for it): the most
 * recent ones, as many as the local left_ring. Names that differ per run
 * (a pid, a counter) would otherwise grow the table, and every look-up that
 * walks it, for as long as the piods run. */
#define REMOTE_LEFT_MAX 1024

/* Forget the application of p that left longest ago, if REMOTE_LEFT_MAX have left. */
static void remote_apps_trim(struct piod_peer_st *p)
{
    int nleft = 0, oldest = -1;
    for (int i = 0; i < p->napps; i++)
        if (p->apps[i].njoined == 0) {
            nleft++;
            if (oldest < 0 || p->apps[i].left_at < p->apps[oldest].left_at)
                oldest = i;
        }
    if (nleft < REMOTE_LEFT_MAX)
        return;
    free(p->apps[oldest].joined);
    free(p->apps[oldest].left_ev);
    p->apps[oldest] = p->apps[--p->napps];
}

struct piod_remote_app *remote_app(struct piod_peer_st *p, const char *app, uint32_t nprocs,
                                   int create)
{
    for (int i = 0; i < p->napps; i++)
        if (strcmp(p->apps[i].app, app) == 0)
            return &p->apps[i];
    if (!create || nprocs == 0 || nprocs > (1u << 24))
        return NULL;
    remote_apps_trim(p);
    struct piod_remote_app *n = realloc(p->apps, (size_t)(p->napps + 1) * sizeof(*n));
    if (!n)
        return NULL;
    p->apps = n;
    struct piod_remote_app *a = &p->apps[p->napps];
    memset(a, 0, sizeof(*a));
    snprintf(a->app, sizeof(a->app), "%s", app);
    a->nprocs = nprocs;
    a->joined = calloc(nprocs, 1);
    a->left_ev = calloc(nprocs, sizeof(*a->left_ev));
    if (!a->joined || !a->left_ev) {
        free(a->joined);
        free(a->left_ev);
        return NULL;
    }
    p->napps++;
    return a;
}

void remote_apps_clear(struct piod_peer_st *p)
{
    for (int i = 0; i < p->napps; i++) {
        free(p->apps[i].joined);
        free(p->apps[i].left_ev);
    }
    free(p->apps);
    p->apps = NULL;
    p->napps = 0;
}

/* ---- joined processes by name ---- */

static uint64_t name_hash(const char *app)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const unsigned char *c = (const unsigned char *)app; *c; c++)
        h = (h ^ *c) * 1099511628211ull;
    return h;
}

void proc_names_add(struct piod *d, int pi)
{
    struct piod_proc *p = &d->procs[pi];
    uint64_t h = name_hash(p->app);
    if (piod_htab_add(&d->proc_app, &p->h_app, h) != 0)
        return;
    if (piod_htab_add(&d->proc_name, &p->h_name, piod_hash64(h, p->proc)) != 0) {
        piod_htab_del(&d->proc_app, &p->h_app);
        return;
    }
    p->named = 1;
}

void proc_names_del(struct piod *d, int pi)
{
    struct piod_proc *p = &d->procs[pi];
    if (!p->named)
        return;
    piod_htab_del(&d->proc_app, &p->h_app);
    piod_htab_del(&d->proc_name, &p->h_name);
    p->named = 0;
}

/* The joined process app:proc here (index in d->procs), or -1. */
int proc_by_name(struct piod *d, const char *app, uint32_t proc)
{
    uint64_t h = piod_hash64(name_hash(app), proc);
    for (struct piod_hlink *l = piod_htab_first(&d->proc_name, h); l; l = piod_htab_next(l)) {
        struct piod_proc *p = PIOD_CONTAINER(l, struct piod_proc, h_name);
        if (p->used && !p->gone && p->proc == proc && strcmp(p->app, app) == 0)
            return (int)(p - d->procs);
    }
    return -1;
}

/* A joined process of app here, or NULL. */
struct piod_proc *proc_of_app(struct piod *d, const char *app)
{
    uint64_t h = name_hash(app);
    for (struct piod_hlink *l = piod_htab_first(&d->proc_app, h); l; l = piod_htab_next(l)) {
        struct piod_proc *p = PIOD_CONTAINER(l, struct piod_proc, h_app);
        if (p->used && !p->gone && strcmp(p->app, app) == 0)
            return p;
    }
    return NULL;
}

/* Where is application app? *peer = -1 for this host; returns nprocs or 0. */

uint32_t find_app(struct piod *d, const char *app, int *peer)
{
    struct piod_proc *lp = proc_of_app(d, app);
    if (lp) {
        *peer = -1;
        return lp->nprocs;
    }
    for (int p = 0; p < d->npeers; p++) {
        struct piod_remote_app *a = remote_app(&d->peers[p], app, 0, 0);
        if (a && a->njoined > 0) {
            *peer = p;
            return a->nprocs;
        }
    }
    /* An application that has left is still known: a partner may name it
     * after its last messages arrived (they are delivered), and sends to it
     * then fail with PIO_EGONE instead of waiting for it to appear. */
    for (int p = 0; p < d->npeers; p++) {
        struct piod_remote_app *a = remote_app(&d->peers[p], app, 0, 0);
        if (a) {
            *peer = p;
            return a->nprocs;
        }
    }
    return left_nprocs(app, peer);
}

/* Where do messages to process proc of app go? *peer = -1 for this host;
 * returns the application's nprocs, or 0 when it is unknown.
 * The processes of one application may join different piods (the ranks of
 * a job on a cluster, each with the piod of its host), so the process, not
 * its application, decides: here if it joined here, else the peer whose
 * registry shows it joined. A process joined nowhere yet goes where
 * find_app puts its application: here when any process of it is here (the
 * message waits for the process to join, as it always did), else the peer
 * it is known at. */
uint32_t find_proc(struct piod *d, const char *app, uint32_t proc, int *peer)
{
    int pi = proc_by_name(d, app, proc);
    if (pi >= 0) {
        *peer = -1;
        return d->procs[pi].nprocs;
    }
    for (int p = 0; p < d->npeers; p++) {
        struct piod_remote_app *a = remote_app(&d->peers[p], app, 0, 0);
        if (a && a->njoined > 0 && proc < a->nprocs && a->joined[proc]) {
            *peer = p;
            return a->nprocs;
        }
    }
    return find_app(d, app, peer);
}

/* Was process proc of app joined nowhere, as this piod heard, all the time
 * since event since (a sender's join)? Then a message to it is meant for a
 * run of app that has not joined yet, not for one that left while the
 * sender was there (PIO_WF_FRESH). Jobs are run again under the same
 * names, and the new sender may start before the new receiver: the old
 * run's leave must not fail its messages. */
int proc_unseen_since(struct piod *d, const char *app, uint32_t proc, uint64_t since)
{
    if (proc_by_name(d, app, proc) >= 0 || app_proc_left_since(app, proc, since))
        return 0;
    for (int p = 0; p < d->npeers; p++) {
        struct piod_remote_app *a = remote_app(&d->peers[p], app, 0, 0);
        if (a && proc < a->nprocs && (a->joined[proc] || a->left_ev[proc] >= since))
            return 0;
    }
    return 1;
}

void send_registry(struct piod *d, int peer, int only_proc, uint32_t state)
{
    struct pio_frame *f = calloc(1, sizeof(*f));
    if (!f)
        return;
    f->type = PIO_F_H_REGISTRY;
    f->u.h_registry.full = only_proc < 0;
    for (int i = 0; i < d->nprocs_max; i++) {
        struct piod_proc *p = &d->procs[i];
        if (!p->used || (only_proc >= 0 && i != only_proc) || (only_proc < 0 && p->gone))
            continue;
        struct pio_reg_entry *e = &f->u.h_registry.e[f->u.h_registry.n++];
        snprintf(e->app, sizeof(e->app), "%s", p->app);
        e->nprocs = p->nprocs;
        e->proc = p->proc;
        e->state = only_proc >= 0 ? state : PIO_WREG_JOINED;
        if (f->u.h_registry.n == PIO_WIRE_MAX_REG) {
            send_peer(d, peer, f);
            f->u.h_registry.n = 0;
            f->u.h_registry.full = 0;
        }
    }
    if (f->u.h_registry.n > 0 || f->u.h_registry.full)
        send_peer(d, peer, f);
    free(f);
}

void broadcast_event(struct piod *d, const char *app, uint32_t proc, uint32_t nprocs, uint32_t kind)
{
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_EVENT;
    f.u.p_event.kind = kind;
    f.u.p_event.proc = proc;
    f.u.p_event.nprocs = nprocs;
    snprintf(f.u.p_event.app, sizeof(f.u.p_event.app), "%s", app);
    for (int i = 0; i < d->nprocs_max; i++)
        if (d->procs[i].used && !d->procs[i].gone && strcmp(d->procs[i].app, app) != 0)
            send_proc(d, i, &f);
}

void answer_partner(struct piod *d, struct piod_pending_partner *pp, int status)
{
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = PIO_F_P_PARTNER_INFO;
    f.u.p_partner_info.req = pp->req;
    int peer = -1;
    uint32_t n = find_app(d, pp->app, &peer);
    f.u.p_partner_info.status = n ? PIO_OK : status;
    f.u.p_partner_info.nprocs = n;
    if (n && peer >= 0) {
        f.u.p_partner_info.channels = (uint32_t)d->peers[peer].nchan;
        const struct piod_peer *pc = d->peers[peer].cfg;
        snprintf(f.u.p_partner_info.system, sizeof(f.u.p_partner_info.system), "%s",
                 pc->system[0] ? pc->system : pc->name);
        snprintf(f.u.p_partner_info.host, sizeof(f.u.p_partner_info.host), "%s",
                 d->peers[peer].host);
    } else if (n) {
        snprintf(f.u.p_partner_info.system, sizeof(f.u.p_partner_info.system), "%s", d->cfg.system);
        snprintf(f.u.p_partner_info.host, sizeof(f.u.p_partner_info.host), "%s", d->cfg.name);
    }
    send_cid(d, pp->cid, &f);
}

/* Answer pending partner look-ups that can be answered now (or timed out). */
void pending_partners(struct piod *d, uint64_t now)
{
    struct piod_pending_partner **pp = &d->pending;
    while (*pp) {
        struct piod_pending_partner *x = *pp;
        int peer;
        if (find_app(d, x->app, &peer) || now >= x->deadline_ms) {
            int refused = 0;
            for (int k = 0; k < d->npeers; k++)
                refused |= d->peers[k].refused;
            answer_partner(d, x, refused ? PIO_EREFUSED : PIO_EPARTNER);
            *pp = x->next;
            free(x);
        } else {
            pp = &x->next;
        }
    }
}

/* ---- streams (ordering) ---- */

static uint64_t stream_hash(int peer, const char *src_app, uint32_t src_proc, const char *dst_app,
                            uint32_t dst_proc, int32_t tag)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    uint32_t nums[4] = {(uint32_t)peer, src_proc, dst_proc, (uint32_t)tag};
    const uint8_t *p = (const uint8_t *)nums;
    for (size_t i = 0; i < sizeof(nums); i++)
        h = (h ^ p[i]) * 1099511628211ull;
    for (const char *c = src_app; *c; c++)
        h = (h ^ (uint8_t)*c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull; /* "ab"+"c" differs from "a"+"bc" */
    for (const char *c = dst_app; *c; c++)
        h = (h ^ (uint8_t)*c) * 1099511628211ull;
    return h;
}

/* streams_grow - double t's buckets (the first call makes 1024). */
static int streams_grow(struct piod_streams *t)
{
    size_t nb = t->nb ? t->nb * 2 : 1024;
    struct piod_stream **b = calloc(nb, sizeof(*b));
    if (!b)
        return -1;
    for (size_t i = 0; i < t->nb; i++)
        while (t->b[i]) {
            struct piod_stream *s = t->b[i];
            t->b[i] = s->next;
            s->next = b[s->hash % nb];
            b[s->hash % nb] = s;
        }
    free(t->b);
    t->b = b;
    t->nb = nb;
    return 0;
}

/* stream_find - the stream of that tuple in t, NULL if there is none. */
struct piod_stream *stream_find(struct piod_streams *t, int peer, const char *src_app,
                                uint32_t src_proc, const char *dst_app, uint32_t dst_proc,
                                int32_t tag)
{
    uint64_t h = stream_hash(peer, src_app, src_proc, dst_app, dst_proc, tag);
    if (t->nb)
        for (struct piod_stream *s = t->b[h % t->nb]; s; s = s->next)
            if (s->hash == h && s->peer == peer && s->src_proc == src_proc &&
                s->dst_proc == dst_proc && s->tag == tag && strcmp(s->src_app, src_app) == 0 &&
                strcmp(s->dst_app, dst_app) == 0)
                return s;
    return NULL;
}

/* stream_get - the stream of that tuple in t, made (next_seq 0) if new;
 * NULL out of memory. */
struct piod_stream *stream_get(struct piod_streams *t, int peer, const char *src_app,
                               uint32_t src_proc, const char *dst_app, uint32_t dst_proc,
                               int32_t tag)
{
    struct piod_stream *found = stream_find(t, peer, src_app, src_proc, dst_app, dst_proc, tag);
    if (found)
        return found;
    uint64_t h = stream_hash(peer, src_app, src_proc, dst_app, dst_proc, tag);
    if ((t->n >= 2 * t->nb) && streams_grow(t) != 0)
        return NULL;
    struct piod_stream *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->hash = h;
    s->peer = peer;
    snprintf(s->src_app, sizeof(s->src_app), "%s", src_app);
    snprintf(s->dst_app, sizeof(s->dst_app), "%s", dst_app);
    s->src_proc = src_proc;
    s->dst_proc = dst_proc;
    s->tag = tag;
    s->next = t->b[h % t->nb];
    t->b[h % t->nb] = s;
    t->n++;
    return s;
}

/* streams_drop - forget the streams of peer (every stream if peer < 0;
 * then the buckets go too). */
void streams_drop(struct piod_streams *t, int peer)
{
    for (size_t i = 0; i < t->nb; i++)
        for (struct piod_stream **sp = &t->b[i]; *sp;) {
            if (peer < 0 || (*sp)->peer == peer) {
                struct piod_stream *s = *sp;
                *sp = s->next;
                free(s);
                t->n--;
            } else {
                sp = &(*sp)->next;
            }
        }
    if (peer < 0) {
        free(t->b);
        t->b = NULL;
        t->nb = t->n = 0;
    }
}

/* A stream's numbers live as long as both its ends: when the source or the
 * destination process leaves, both piods forget the stream (the sender's
 * when its process leaves or the peer says the destination did, the
 * receiver's when its process leaves or the peer says the source did), and
 * a later process of the same name starts again from 0 on both sides. So
 * the tables hold what is live, not every name that ever sent (pcp and pfs
 * clients carry their pid in their name, pfs gives each request its own
 * reply tag). A receiver's stream with a request still waiting to be
 * announced in order is kept, marked gone, until none waits. */

/* An incoming request of stream s waits to be announced (rx streams). */
static int stream_waiting(struct piod *d, const struct piod_stream *s)
{
    for (struct piod_imsg *m = d->imsgs; m; m = m->next)
        if (!m->announced && m->peer == s->peer && m->src_proc == s->src_proc &&
            m->dst_proc == s->dst_proc && m->tag == s->tag && strcmp(m->src_app, s->src_app) == 0 &&
            strcmp(m->dst_app, s->dst_app) == 0)
            return 1;
    return 0;
}

/* streams_forget - drop the streams of t whose end (STREAM_SRC or
 * STREAM_DST) is process app:proc of peer (-2: of any peer). */
void streams_forget(struct piod *d, struct piod_streams *t, int peer, int end, const char *app,
                    uint32_t proc)
{
    for (size_t i = 0; i < t->nb; i++)
        for (struct piod_stream **sp = &t->b[i]; *sp;) {
            struct piod_stream *s = *sp;
            int match = (peer == -2 || s->peer == peer) &&
                        (end == STREAM_SRC ? s->src_proc == proc && strcmp(s->src_app, app) == 0
                                           : s->dst_proc == proc && strcmp(s->dst_app, app) == 0);
            if (!match) {
                sp = &s->next;
                continue;
            }
            if (t == &d->rx_streams && stream_waiting(d, s)) {
                d->streams_gone++;
                s->gone = 1;
                sp = &s->next;
                continue;
            }
            *sp = s->next;
            free(s);
            t->n--;
        }
}

/* streams_sweep - drop the rx streams marked gone that no request waits on
 * any more (each tick while there are some: rare, and then few). The count
 * is taken afresh, so a peer's reset (streams_drop) cannot leave it wrong. */
void streams_sweep(struct piod *d)
{
    struct piod_streams *t = &d->rx_streams;
    if (d->streams_gone == 0)
        return;
    size_t still = 0;
    for (size_t i = 0; i < t->nb; i++)
        for (struct piod_stream **sp = &t->b[i]; *sp;) {
            struct piod_stream *s = *sp;
            if (!s->gone || stream_waiting(d, s)) {
                still += s->gone;
                sp = &s->next;
                continue;
            }
            *sp = s->next;
            free(s);
            t->n--;
        }
    d->streams_gone = still;
}
