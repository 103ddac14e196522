/* qos.h - service classes of an I/O server: one queue per class, a share of
 * the service threads per class, and borrowing of idle threads.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Each service thread has a home class (threads are dealt to classes by
 * share: with 10 threads and 20:80, 2 interactive and 8 staging). A thread
 * takes work from its home class first; when that queue is empty it may
 * take work of another class (borrowing) while that class has fewer than
 * `borrow` borrowed threads busy; when its home class has work again it
 * returns after the request in hand (requests are at most PFS_IO_MAX bytes,
 * so an owner waits at most one request-time). With `borrow` 0 the shares
 * are hard limits. Give-back can also be sooner: a borrowed thread that asks
 * pfs_qos_should_yield between steps of a long request (the I/O server
 * works in 256 KiB steps) puts the rest of it back at the head of its
 * class's queue (pfs_qos_yield), for one of that class's threads to finish,
 * and serves its owner; an owner then waits one step, not one request. With
 * no classes configured, one class gets every thread
 * (QoS off: one FIFO).
 *
 * A per-user cap bounds the requests of one user in service at once (0 =
 * none): pop passes over a user's requests while that user has cap of them
 * in service, so one user cannot take every thread of a class.
 *
 * Thread-safety: all functions are thread-safe (one mutex per pfs_qos; no
 * callback is called with it held). */
#ifndef PFS_QOS_H
#define PFS_QOS_H

#include "proto.h"

#include <stddef.h>
#include <stdint.h>

struct pfs_qos;

/* One queued request: owned by the caller of push until pop hands it to a
 * service thread; the server embeds it in its own request record. */
struct pfs_qos_item {
    struct pfs_qos_item *next;
    int cls;
    char user[PFS_USER_MAX];
    int64_t t_arrive; /* pfs_now_ns() at push */
    int64_t t_start;  /* at pop */
};

struct pfs_qos_class_cfg {
    char name[PFS_NAME_MAX];
    unsigned share; /* percent of the threads (shares need not sum to 100) */
};

/* pfs_qos_parse - "interactive:20,staging:80" into cfg (up to max);
 * "off" gives one class "all" with share 100. Returns the class count, or -1
 * with *err pointing at words that say what is wrong. */
int pfs_qos_parse(const char *spec, struct pfs_qos_class_cfg *cfg, int max, const char **err);

/* pfs_qos_new - nthreads service threads dealt over ncls classes by share
 * (each class at least one thread when nthreads >= ncls); borrow: the most
 * threads a class may borrow at once (-1 = no limit); user_cap: most
 * requests per user in service at once (0 = none). NULL on bad arguments
 * or no memory. */
struct pfs_qos *pfs_qos_new(const struct pfs_qos_class_cfg *cfg, int ncls, int nthreads, int borrow,
                            int user_cap);
void pfs_qos_free(struct pfs_qos *q);

/* pfs_qos_class - the class index for a name: exact match, else 0. */
int pfs_qos_class(const struct pfs_qos *q, const char *name);
int pfs_qos_nclasses(const struct pfs_qos *q);
const char *pfs_qos_class_name(const struct pfs_qos *q, int cls);

/* pfs_qos_home - the home class of service thread t (0..nthreads-1). */
int pfs_qos_home(const struct pfs_qos *q, int t);

/* pfs_qos_push - queue it (it->cls and it->user set by the caller). */
void pfs_qos_push(struct pfs_qos *q, struct pfs_qos_item *it);

/* pfs_qos_pop - for service thread t: wait (up to timeout_ms; -1 = forever)
 * for a request it may take by the rules above, mark the thread busy.
 * NULL on timeout or after pfs_qos_stop. */
struct pfs_qos_item *pfs_qos_pop(struct pfs_qos *q, int t, int timeout_ms);

/* pfs_qos_done - thread t finished it (service time recorded). */
void pfs_qos_done(struct pfs_qos *q, int t, struct pfs_qos_item *it);

/* pfs_qos_should_yield - 1 when thread t is serving a request of another
 * class (borrowed) and a request of t's home class is waiting. */
int pfs_qos_should_yield(struct pfs_qos *q, int t);

/* pfs_qos_yield - thread t gives it (not finished) back: it goes to the head
 * of its class's queue, keeping its arrival and first start (its wait is
 * counted once, its service time runs on), and t is idle. The caller keeps
 * what it needs to resume the request with the item. */
void pfs_qos_yield(struct pfs_qos *q, int t, struct pfs_qos_item *it);

/* pfs_qos_stop - wake every waiting pop; later pops return NULL. */
void pfs_qos_stop(struct pfs_qos *q);

/* pfs_qos_drain - after pfs_qos_stop and once no thread is in pop: unlink
 * every request still queued and return them, linked by next (NULL: none),
 * for the caller to dispose of. */
struct pfs_qos_item *pfs_qos_drain(struct pfs_qos *q);

/* Statistics of one class. */
struct pfs_qos_stats {
    char name[PFS_NAME_MAX];
    int threads;      /* home threads */
    int busy;         /* threads serving this class now (home + borrowed) */
    int borrowed;     /* of those, threads of other classes */
    int busy_max;     /* most busy at once since the last reset */
    int borrowed_max; /* most borrowed at once since the last reset */
    int queued;
    uint64_t served;
    uint64_t yielded; /* times a borrowed thread gave a request of this class back */
    uint64_t wait_p50_us, wait_p99_us, wait_max_us; /* arrival -> start */
    uint64_t svc_p50_us, svc_p99_us;                /* start -> done */
};

/* pfs_qos_stats - the stats of every class into st (up to max); reset:
 * zero the counters and latency records after reading. Returns the count. */
int pfs_qos_stats(struct pfs_qos *q, struct pfs_qos_stats *st, int max, int reset);

/* pfs_qos_format - st as text, one line per class:
 * "class NAME threads=T busy=B borrowed=R busy_max=.. borrowed_max=..
 *  queued=Q served=S yielded=Y wait_p50_us=.. wait_p99_us=.. wait_max_us=..
 *  svc_p50_us=.. svc_p99_us=..". Returns bytes written (NUL not counted). */
size_t pfs_qos_format(const struct pfs_qos_stats *st, int n, char *buf, size_t cap);

#endif
