/* qos.c - service classes of an I/O server (qos.h).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * State: one mutex and one condition variable per pfs_qos. Each class has a
 * FIFO (singly linked, head/tail), busy / borrowed counters, and two rings of
 * the last RING latency samples (wait = start - arrival, service = done -
 * start), recorded at done and sorted (a copy, outside the mutex) only when
 * statistics are asked for. Each service thread has a slot saying whether it
 * is busy, on which class and for which user (the per-user cap counts over
 * these slots: at most nthreads requests are in service).
 *
 * pop(t): the home class's queue first (its oldest request the user cap
 * allows); else borrow: of the other classes whose borrowed-busy count is
 * under the limit and that no idle home thread of their own is about to
 * serve, the one whose eligible request has waited longest. A thread that
 * takes a request while work is left queued wakes the others, so a borrower
 * that stepped aside for an idle owner looks again.
 *
 * Wake-ups are broadcasts: push, done (when a cap or a borrow limit may have
 * held someone back), a take that leaves work, stop. With a few dozen threads
 * at most this costs little and cannot lose a wake-up.
 *
 * Nothing outside this file is called with the mutex held: times come from
 * pfs_now_ns() before locking or after unlocking, sorting runs on copies.
 */
#include "qos.h"
#include "srv.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RING 4096 /* latency samples kept per class */

struct ring {
    uint64_t v[RING];
    unsigned n;   /* samples held, up to RING */
    unsigned pos; /* next slot written */
};

struct qclass {
    char name[PFS_NAME_MAX];
    unsigned share;
    int threads;
    struct pfs_qos_item *head, *tail;
    int queued;
    int busy, borrowed, busy_max, borrowed_max;
    int idle_home; /* home threads of this class inside pop, not serving */
    uint64_t served;
    uint64_t yielded;
    uint64_t wait_max_us;
    struct ring wait, svc;
};

struct thr {
    int home;
    int busy;
    int cls; /* class served, when busy */
    char user[PFS_USER_MAX];
};

struct pfs_qos {
    pthread_mutex_t mtx;
    pthread_cond_t cv;
    int ncls, nthreads, borrow, user_cap, stopped;
    struct qclass cls[PFS_CLASS_MAX];
    struct thr *thr;
};

/* ---- configuration ------------------------------------------------------- */

static int name_ok(const char *s, size_t n)
{
    if (n < 1 || n >= PFS_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

int pfs_qos_parse(const char *spec, struct pfs_qos_class_cfg *cfg, int max, const char **err)
{
    static const char *dummy;
    if (!err)
        err = &dummy;
    if (!spec || !cfg || max < 1) {
        *err = "no specification given";
        return -1;
    }
    if (strcmp(spec, "off") == 0) {
        memset(&cfg[0], 0, sizeof(cfg[0]));
        snprintf(cfg[0].name, sizeof(cfg[0].name), "all");
        cfg[0].share = 100;
        return 1;
    }
    if (!*spec) {
        *err = "empty specification: give NAME:SHARE[,NAME:SHARE...] or off";
        return -1;
    }
    int n = 0;
    const char *p = spec;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *colon = memchr(p, ':', len);
        if (len == 0) {
            *err = "empty class entry (two commas, or a comma at an end)";
            return -1;
        }
        if (!colon) {
            *err = "a class entry without ':SHARE' (the form is NAME:SHARE)";
            return -1;
        }
        size_t nlen = (size_t)(colon - p);
        if (nlen == 0) {
            *err = "a class without a name (the form is NAME:SHARE)";
            return -1;
        }
        if (nlen >= PFS_NAME_MAX) {
            *err = "a class name longer than 63 characters";
            return -1;
        }
        if (!name_ok(p, nlen)) {
            *err = "a class name with characters other than A-Z a-z 0-9 _ -";
            return -1;
        }
        const char *s = colon + 1;
        size_t slen = len - nlen - 1;
        unsigned share = 0;
        if (slen == 0 || slen > 3) {
            *err = slen == 0 ? "a class without a share (the form is NAME:SHARE)"
                             : "a share out of range: shares are 1..100";
            return -1;
        }
        for (size_t i = 0; i < slen; i++) {
            if (s[i] < '0' || s[i] > '9') {
                *err = "a share that is not a whole number (1..100)";
                return -1;
            }
            share = share * 10 + (unsigned)(s[i] - '0');
        }
        if (share < 1 || share > 100) {
            *err = "a share out of range: shares are 1..100";
            return -1;
        }
        for (int i = 0; i < n; i++)
            if (strlen(cfg[i].name) == nlen && memcmp(cfg[i].name, p, nlen) == 0) {
                *err = "a class named twice";
                return -1;
            }
        if (n >= max) {
            *err = "too many classes";
            return -1;
        }
        memset(&cfg[n], 0, sizeof(cfg[n]));
        memcpy(cfg[n].name, p, nlen);
        cfg[n].share = share;
        n++;
        if (!end)
            break;
        p = end + 1;
    }
    return n;
}

/* Deal nthreads over the classes by share: largest remainder, ties to the
 * lower index; then, when there are enough threads, every class gets one,
 * taken from the class that has the most. */
static void deal(struct pfs_qos *q)
{
    uint64_t sum = 0;
    for (int c = 0; c < q->ncls; c++)
        sum += q->cls[c].share;
    uint64_t rem[PFS_CLASS_MAX];
    int given = 0;
    for (int c = 0; c < q->ncls; c++) {
        uint64_t num = (uint64_t)q->nthreads * q->cls[c].share;
        q->cls[c].threads = (int)(num / sum);
        rem[c] = num % sum;
        given += q->cls[c].threads;
    }
    while (given < q->nthreads) {
        int best = 0;
        for (int c = 1; c < q->ncls; c++)
            if (rem[c] > rem[best])
                best = c;
        q->cls[best].threads++;
        rem[best] = 0;
        given++;
    }
    if (q->nthreads >= q->ncls)
        for (int c = 0; c < q->ncls; c++)
            if (q->cls[c].threads == 0) {
                int most = 0;
                for (int d = 1; d < q->ncls; d++)
                    if (q->cls[d].threads > q->cls[most].threads)
                        most = d;
                q->cls[most].threads--;
                q->cls[c].threads++;
            }
    int t = 0;
    for (int c = 0; c < q->ncls; c++)
        for (int i = 0; i < q->cls[c].threads; i++)
            q->thr[t++].home = c;
}

struct pfs_qos *pfs_qos_new(const struct pfs_qos_class_cfg *cfg, int ncls, int nthreads, int borrow,
                            int user_cap)
{
    if (ncls < 0 || ncls > PFS_CLASS_MAX || (ncls > 0 && !cfg) || nthreads < 1 || borrow < -1 ||
        user_cap < 0)
        return NULL;
    for (int c = 0; c < ncls; c++)
        if (cfg[c].share == 0 || !name_ok(cfg[c].name, strnlen(cfg[c].name, PFS_NAME_MAX)))
            return NULL;
    struct pfs_qos *q = calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    q->thr = calloc((size_t)nthreads, sizeof(*q->thr));
    if (!q->thr) {
        free(q);
        return NULL;
    }
    if (ncls == 0) { /* QoS off: one FIFO with every thread */
        snprintf(q->cls[0].name, sizeof(q->cls[0].name), "all");
        q->cls[0].share = 100;
        q->ncls = 1;
    } else {
        for (int c = 0; c < ncls; c++) {
            snprintf(q->cls[c].name, sizeof(q->cls[c].name), "%s", cfg[c].name);
            q->cls[c].share = cfg[c].share;
        }
        q->ncls = ncls;
    }
    q->nthreads = nthreads;
    q->borrow = borrow;
    q->user_cap = user_cap;
    deal(q);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (pthread_mutex_init(&q->mtx, NULL) != 0) {
        pthread_condattr_destroy(&ca);
        free(q->thr);
        free(q);
        return NULL;
    }
    if (pthread_cond_init(&q->cv, &ca) != 0) {
        pthread_condattr_destroy(&ca);
        pthread_mutex_destroy(&q->mtx);
        free(q->thr);
        free(q);
        return NULL;
    }
    pthread_condattr_destroy(&ca);
    return q;
}

void pfs_qos_free(struct pfs_qos *q)
{
    if (!q)
        return;
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mtx);
    free(q->thr);
    free(q);
}

int pfs_qos_class(const struct pfs_qos *q, const char *name)
{
    if (!q || !name)
        return 0;
    for (int c = 0; c < q->ncls; c++) /* names and ncls never change: no lock */
        if (strcmp(q->cls[c].name, name) == 0)
            return c;
    return 0;
}

int pfs_qos_nclasses(const struct pfs_qos *q)
{
    return q ? q->ncls : 0;
}

const char *pfs_qos_class_name(const struct pfs_qos *q, int cls)
{
    if (!q || cls < 0 || cls >= q->ncls)
        return NULL;
    return q->cls[cls].name;
}

int pfs_qos_home(const struct pfs_qos *q, int t)
{
    if (!q || t < 0 || t >= q->nthreads)
        return -1;
    return q->thr[t].home; /* fixed at pfs_qos_new: no lock */
}

/* ---- queues ------------------------------------------------------------- */

void pfs_qos_push(struct pfs_qos *q, struct pfs_qos_item *it)
{
    int64_t now = pfs_now_ns();
    it->next = NULL;
    it->t_arrive = now;
    it->t_start = 0;
    it->user[sizeof(it->user) - 1] = '\0';
    pthread_mutex_lock(&q->mtx);
    if (it->cls < 0 || it->cls >= q->ncls)
        it->cls = 0;
    struct qclass *c = &q->cls[it->cls];
    if (c->tail)
        c->tail->next = it;
    else
        c->head = it;
    c->tail = it;
    c->queued++;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mtx);
}

/* The user may have one more request in service (mutex held). */
static int user_may(const struct pfs_qos *q, const char *user)
{
    if (q->user_cap <= 0)
        return 1;
    int n = 0;
    for (int t = 0; t < q->nthreads; t++)
        if (q->thr[t].busy && strcmp(q->thr[t].user, user) == 0 && ++n >= q->user_cap)
            return 0;
    return 1;
}

/* The oldest request of class c the user cap allows, and the one before it
 * in the queue (NULL: it is the head). NULL if none (mutex held). */
static struct pfs_qos_item *eligible(const struct pfs_qos *q, int c, struct pfs_qos_item **prev)
{
    struct pfs_qos_item *p = NULL;
    for (struct pfs_qos_item *it = q->cls[c].head; it; p = it, it = it->next)
        if (user_may(q, it->user)) {
            *prev = p;
            return it;
        }
    return NULL;
}

static void unlink_item(struct qclass *c, struct pfs_qos_item *prev, struct pfs_qos_item *it)
{
    if (prev)
        prev->next = it->next;
    else
        c->head = it->next;
    if (c->tail == it)
        c->tail = prev;
    it->next = NULL;
    c->queued--;
}

/* Take a request for thread t by the rules, or NULL (mutex held). */
static struct pfs_qos_item *take(struct pfs_qos *q, int t)
{
    struct thr *th = &q->thr[t];
    int home = th->home;
    struct pfs_qos_item *prev = NULL, *it = eligible(q, home, &prev);
    int cls = home;
    if (!it) {
        for (int c = 0; c < q->ncls; c++) {
            if (c == home || !q->cls[c].head)
                continue;
            if (q->borrow >= 0 && q->cls[c].borrowed >= q->borrow)
                continue;
            if (q->cls[c].idle_home > 0) /* an owner is free and will take it */
                continue;
            struct pfs_qos_item *p2 = NULL, *i2 = eligible(q, c, &p2);
            if (i2 && (!it || i2->t_arrive < it->t_arrive)) {
                it = i2;
                prev = p2;
                cls = c;
            }
        }
        if (!it)
            return NULL;
    }
    struct qclass *c = &q->cls[cls];
    unlink_item(c, prev, it);
    th->busy = 1;
    th->cls = cls;
    memcpy(th->user, it->user, sizeof(th->user));
    c->busy++;
    if (c->busy > c->busy_max)
        c->busy_max = c->busy;
    if (cls != home) {
        c->borrowed++;
        if (c->borrowed > c->borrowed_max)
            c->borrowed_max = c->borrowed;
    }
    for (int d = 0; d < q->ncls; d++)
        if (q->cls[d].head) { /* work is left: whoever stepped aside looks again */
            pthread_cond_broadcast(&q->cv);
            break;
        }
    return it;
}

struct pfs_qos_item *pfs_qos_pop(struct pfs_qos *q, int t, int timeout_ms)
{
    if (!q || t < 0 || t >= q->nthreads)
        return NULL;
    struct timespec dl;
    if (timeout_ms > 0) {
        clock_gettime(CLOCK_MONOTONIC, &dl);
        dl.tv_sec += timeout_ms / 1000;
        dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
    }
    struct pfs_qos_item *it = NULL;
    pthread_mutex_lock(&q->mtx);
    int home = q->thr[t].home;
    if (q->thr[t].busy) { /* the caller forgot pfs_qos_done: refuse */
        pthread_mutex_unlock(&q->mtx);
        return NULL;
    }
    q->cls[home].idle_home++;
    for (;;) {
        if (q->stopped)
            break;
        if ((it = take(q, t)) != NULL)
            break;
        if (timeout_ms == 0)
            break;
        int rc = timeout_ms < 0 ? pthread_cond_wait(&q->cv, &q->mtx)
                                : pthread_cond_timedwait(&q->cv, &q->mtx, &dl);
        if (rc == ETIMEDOUT) {
            if (!q->stopped)
                it = take(q, t);
            break;
        }
    }
    q->cls[home].idle_home--;
    pthread_mutex_unlock(&q->mtx);
    if (it && !it->t_start) /* ours now: no lock needed; a resumed one keeps its first start */
        it->t_start = pfs_now_ns();
    return it;
}

static void ring_add(struct ring *r, uint64_t v)
{
    r->v[r->pos] = v;
    r->pos = (r->pos + 1) % RING;
    if (r->n < RING)
        r->n++;
}

/* thr_release - busy thread th is free again: its class's busy (and
 * borrowed) counts drop. Returns that class (mutex held). */
static struct qclass *thr_release(struct pfs_qos *q, struct thr *th)
{
    struct qclass *c = &q->cls[th->cls];
    c->busy--;
    if (th->cls != th->home)
        c->borrowed--;
    th->busy = 0;
    th->user[0] = '\0';
    return c;
}

void pfs_qos_done(struct pfs_qos *q, int t, struct pfs_qos_item *it)
{
    if (!q || !it || t < 0 || t >= q->nthreads)
        return;
    int64_t now = pfs_now_ns();
    uint64_t wait_us =
        it->t_start > it->t_arrive ? (uint64_t)(it->t_start - it->t_arrive) / 1000 : 0;
    uint64_t svc_us = now > it->t_start ? (uint64_t)(now - it->t_start) / 1000 : 0;
    pthread_mutex_lock(&q->mtx);
    struct thr *th = &q->thr[t];
    if (th->busy) {
        struct qclass *c = thr_release(q, th);
        c->served++;
        ring_add(&c->wait, wait_us);
        ring_add(&c->svc, svc_us);
        if (wait_us > c->wait_max_us)
            c->wait_max_us = wait_us;
        int held = q->user_cap > 0 || q->borrow >= 0;
        if (held)
            for (int d = 0; d < q->ncls; d++)
                if (q->cls[d].head) {
                    pthread_cond_broadcast(&q->cv);
                    break;
                }
    }
    pthread_mutex_unlock(&q->mtx);
}

int pfs_qos_should_yield(struct pfs_qos *q, int t)
{
    if (!q || t < 0 || t >= q->nthreads)
        return 0;
    pthread_mutex_lock(&q->mtx);
    struct thr *th = &q->thr[t];
    struct pfs_qos_item *prev;
    int r = th->busy && th->cls != th->home && eligible(q, th->home, &prev) != NULL;
    pthread_mutex_unlock(&q->mtx);
    return r;
}

void pfs_qos_yield(struct pfs_qos *q, int t, struct pfs_qos_item *it)
{
    if (!q || !it || t < 0 || t >= q->nthreads)
        return;
    pthread_mutex_lock(&q->mtx);
    struct thr *th = &q->thr[t];
    if (th->busy) {
        it->cls = th->cls;
        struct qclass *c = thr_release(q, th);
        c->yielded++;
        it->next = c->head; /* first in line again: it had its turn */
        c->head = it;
        if (!c->tail)
            c->tail = it;
        c->queued++;
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mtx);
}

void pfs_qos_stop(struct pfs_qos *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->mtx);
    q->stopped = 1;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mtx);
}

struct pfs_qos_item *pfs_qos_drain(struct pfs_qos *q)
{
    if (!q)
        return NULL;
    struct pfs_qos_item *all = NULL;
    pthread_mutex_lock(&q->mtx);
    for (int c = 0; c < q->ncls; c++) {
        struct qclass *k = &q->cls[c];
        if (k->tail) {
            k->tail->next = all;
            all = k->head;
        }
        k->head = k->tail = NULL;
        k->queued = 0;
    }
    pthread_mutex_unlock(&q->mtx);
    return all;
}

/* ---- statistics ---------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile p of the n sorted values v (0 when none). */
static uint64_t pct(const uint64_t *v, unsigned n, unsigned p)
{
    if (n == 0)
        return 0;
    uint64_t rank = ((uint64_t)n * p + 99) / 100; /* ceil(n * p / 100) */
    if (rank < 1)
        rank = 1;
    return v[rank - 1];
}

int pfs_qos_stats(struct pfs_qos *q, struct pfs_qos_stats *st, int max, int reset)
{
    if (!q || !st || max < 1)
        return 0;
    int n = q->ncls < max ? q->ncls : max;
    /* copies of the rings, sorted outside the mutex */
    uint64_t *copy = malloc((size_t)n * 2 * RING * sizeof(uint64_t));
    unsigned nw[PFS_CLASS_MAX], ns[PFS_CLASS_MAX];
    pthread_mutex_lock(&q->mtx);
    for (int c = 0; c < n; c++) {
        struct qclass *k = &q->cls[c];
        struct pfs_qos_stats *s = &st[c];
        memset(s, 0, sizeof(*s));
        memcpy(s->name, k->name, sizeof(s->name));
        s->threads = k->threads;
        s->busy = k->busy;
        s->borrowed = k->borrowed;
        s->busy_max = k->busy_max;
        s->borrowed_max = k->borrowed_max;
        s->queued = k->queued;
        s->served = k->served;
        s->yielded = k->yielded;
        s->wait_max_us = k->wait_max_us;
        nw[c] = ns[c] = 0;
        if (copy) {
            nw[c] = k->wait.n;
            ns[c] = k->svc.n;
            memcpy(copy + (size_t)c * 2 * RING, k->wait.v, k->wait.n * sizeof(uint64_t));
            memcpy(copy + (size_t)c * 2 * RING + RING, k->svc.v, k->svc.n * sizeof(uint64_t));
        }
        if (reset) {
            k->served = 0;
            k->yielded = 0;
            k->wait_max_us = 0;
            k->busy_max = k->busy;
            k->borrowed_max = k->borrowed;
            k->wait.n = k->wait.pos = 0;
            k->svc.n = k->svc.pos = 0;
        }
    }
    pthread_mutex_unlock(&q->mtx);
    if (copy) {
        for (int c = 0; c < n; c++) {
            uint64_t *w = copy + (size_t)c * 2 * RING, *s = w + RING;
            qsort(w, nw[c], sizeof(*w), cmp_u64);
            qsort(s, ns[c], sizeof(*s), cmp_u64);
            st[c].wait_p50_us = pct(w, nw[c], 50);
            st[c].wait_p99_us = pct(w, nw[c], 99);
            st[c].svc_p50_us = pct(s, ns[c], 50);
            st[c].svc_p99_us = pct(s, ns[c], 99);
        }
        free(copy);
    }
    return n;
}

size_t pfs_qos_format(const struct pfs_qos_stats *st, int n, char *buf, size_t cap)
{
    size_t used = 0;
    if (cap > 0)
        buf[0] = '\0';
    for (int i = 0; i < n && used + 1 < cap; i++) {
        const struct pfs_qos_stats *s = &st[i];
        int k = snprintf(buf + used, cap - used,
                         "class %s threads=%d busy=%d borrowed=%d busy_max=%d borrowed_max=%d "
                         "queued=%d served=%llu yielded=%llu wait_p50_us=%llu wait_p99_us=%llu "
                         "wait_max_us=%llu svc_p50_us=%llu svc_p99_us=%llu\n",
                         s->name, s->threads, s->busy, s->borrowed, s->busy_max, s->borrowed_max,
                         s->queued, (unsigned long long)s->served, (unsigned long long)s->yielded,
                         (unsigned long long)s->wait_p50_us, (unsigned long long)s->wait_p99_us,
                         (unsigned long long)s->wait_max_us, (unsigned long long)s->svc_p50_us,
                         (unsigned long long)s->svc_p99_us);
        if (k < 0)
            break;
        if ((size_t)k >= cap - used) { /* cut: keep only whole lines */
            buf[used] = '\0';
            break;
        }
        used += (size_t)k;
    }
    return used;
}
