/* test_pfs_qos.c - the service-class scheduler of the pfs I/O server (pfs/qos.c).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Single-threaded cases drive pfs_qos_pop with explicit thread numbers and
 * timeout 0 (or a short timeout where nothing may be taken): dealing of
 * threads by share, FIFO order, borrowing and its limit, giving back to the
 * home class, choice of the oldest request when borrowing, the per-user cap,
 * statistics, stop, and the parser. Two multi-threaded cases run ten real
 * threads with a 2 ms fake service time: with classes, an interactive request
 * arriving behind a deep staging backlog waits about one service time; with
 * one FIFO class (the baseline), it waits behind the whole backlog.
 */
#include "pfs/iostat.h"
#include "pfs/qos.h"
#include "pfs/srv.h"
#include "tests/lib/unit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

struct titem {
    struct pfs_qos_item it;
    int id;
};

static const struct pfs_qos_class_cfg two[] = {{"interactive", 20}, {"staging", 80}};

static struct pfs_qos *new_two(int borrow, int user_cap)
{
    struct pfs_qos *q = pfs_qos_new(two, 2, 10, borrow, user_cap);
    assert_non_null(q);
    return q;
}

static void push(struct pfs_qos *q, struct titem *t, int cls, int id, const char *user)
{
    memset(t, 0, sizeof(*t));
    t->it.cls = cls;
    t->id = id;
    snprintf(t->it.user, sizeof(t->it.user), "%s", user ? user : "u");
    pfs_qos_push(q, &t->it);
}

static struct titem *pop0(struct pfs_qos *q, int t)
{
    return (struct titem *)pfs_qos_pop(q, t, 0);
}

static int64_t ms_since(int64_t t0)
{
    return (pfs_now_ns() - t0) / 1000000;
}

/* ---- dealing ------------------------------------------------------------- */

static void count_homes(struct pfs_qos *q, int nthreads, int *counts, int ncls)
{
    memset(counts, 0, sizeof(int) * (size_t)ncls);
    int prev = 0;
    for (int t = 0; t < nthreads; t++) {
        int h = pfs_qos_home(q, t);
        assert_true(h >= 0 && h < ncls);
        assert_true(h >= prev); /* threads are dealt in class order */
        prev = h;
        counts[h]++;
    }
}

static void test_deal_two(void **state)
{
    (void)state;
    struct pfs_qos *q = new_two(-1, 0);
    int n[2];
    count_homes(q, 10, n, 2);
    assert_int_equal(n[0], 2);
    assert_int_equal(n[1], 8);
    assert_int_equal(pfs_qos_nclasses(q), 2);
    assert_string_equal(pfs_qos_class_name(q, 1), "staging");
    assert_null(pfs_qos_class_name(q, 2));
    assert_int_equal(pfs_qos_class(q, "staging"), 1);
    assert_int_equal(pfs_qos_class(q, "interactive"), 0);
    assert_int_equal(pfs_qos_class(q, "nosuch"), 0);
    assert_int_equal(pfs_qos_home(q, 10), -1);
    struct pfs_qos_stats st[4];
    assert_int_equal(pfs_qos_stats(q, st, 4, 0), 2);
    assert_int_equal(st[0].threads, 2);
    assert_int_equal(st[1].threads, 8);
    pfs_qos_free(q);
}

static void test_deal_three(void **state)
{
    (void)state;
    struct pfs_qos_class_cfg c3[] = {{"a", 10}, {"b", 30}, {"c", 60}};
    int n[3];
    struct pfs_qos *q = pfs_qos_new(c3, 3, 10, -1, 0);
    assert_non_null(q);
    count_homes(q, 10, n, 3);
    assert_int_equal(n[0], 1);
    assert_int_equal(n[1], 3);
    assert_int_equal(n[2], 6);
    pfs_qos_free(q);

    /* largest remainder: 7 x (1,1,1)/3 = 2.33 each -> 3,2,2 (ties to the first) */
    struct pfs_qos_class_cfg eq[] = {{"a", 1}, {"b", 1}, {"c", 1}};
    q = pfs_qos_new(eq, 3, 7, -1, 0);
    count_homes(q, 7, n, 3);
    assert_int_equal(n[0], 3);
    assert_int_equal(n[1], 2);
    assert_int_equal(n[2], 2);
    pfs_qos_free(q);

    /* 10 x (1,1,98)/100 would give a and b nothing: each gets one */
    struct pfs_qos_class_cfg skew[] = {{"a", 1}, {"b", 1}, {"c", 98}};
    q = pfs_qos_new(skew, 3, 10, -1, 0);
    count_homes(q, 10, n, 3);
    assert_int_equal(n[0], 1);
    assert_int_equal(n[1], 1);
    assert_int_equal(n[2], 8);
    pfs_qos_free(q);

    /* exactly one thread per class */
    q = pfs_qos_new(skew, 3, 3, -1, 0);
    count_homes(q, 3, n, 3);
    assert_int_equal(n[0], 1);
    assert_int_equal(n[1], 1);
    assert_int_equal(n[2], 1);
    pfs_qos_free(q);

    /* fewer threads than classes: all of them dealt, some class has none */
    q = pfs_qos_new(c3, 3, 2, -1, 0);
    count_homes(q, 2, n, 3);
    assert_int_equal(n[0], 0); /* 2 x (.1,.3,.6) = .2,.6,1.2 -> 0,1,1 */
    assert_int_equal(n[1], 1);
    assert_int_equal(n[2], 1);
    pfs_qos_free(q);

    /* no classes: one FIFO class "all" with every thread */
    q = pfs_qos_new(NULL, 0, 4, -1, 0);
    assert_non_null(q);
    assert_int_equal(pfs_qos_nclasses(q), 1);
    assert_string_equal(pfs_qos_class_name(q, 0), "all");
    count_homes(q, 4, n, 1);
    assert_int_equal(n[0], 4);
    pfs_qos_free(q);

    /* bad arguments */
    assert_null(pfs_qos_new(c3, 3, 0, -1, 0));
    assert_null(pfs_qos_new(c3, 3, 10, -2, 0));
    assert_null(pfs_qos_new(c3, 3, 10, -1, -1));
    assert_null(pfs_qos_new(c3, PFS_CLASS_MAX + 1, 10, -1, 0));
    struct pfs_qos_class_cfg zero[] = {{"a", 0}};
    assert_null(pfs_qos_new(zero, 1, 10, -1, 0));
}

/* ---- queues -------------------------------------------------------------- */

static void test_fifo(void **state)
{
    (void)state;
    struct pfs_qos *q = new_two(-1, 0);
    struct titem it[6];
    for (int i = 0; i < 6; i++)
        push(q, &it[i], 1, i, NULL);
    for (int i = 0; i < 6; i++) {
        struct titem *p = pop0(q, 5); /* a staging thread */
        assert_non_null(p);
        assert_int_equal(p->id, i);
        assert_int_equal(p->it.cls, 1);
        assert_true(p->it.t_start >= p->it.t_arrive);
        pfs_qos_done(q, 5, &p->it);
    }
    assert_null(pop0(q, 5));
    /* a class out of range goes to class 0 */
    struct titem x;
    push(q, &x, 7, 99, NULL);
    struct titem *p = pop0(q, 0);
    assert_ptr_equal(p, &x);
    assert_int_equal(p->it.cls, 0);
    pfs_qos_done(q, 0, &p->it);
    pfs_qos_free(q);
}

static void test_borrow_all(void **state)
{
    (void)state;
    struct pfs_qos *q = new_two(-1, 0);
    struct titem it[20];
    for (int i = 0; i < 20; i++)
        push(q, &it[i], 1, i, NULL);
    for (int t = 0; t < 10; t++) {
        struct titem *p = pop0(q, t);
        assert_non_null(p);
        assert_int_equal(p->it.cls, 1);
        assert_int_equal(p->id, t); /* oldest first, whoever takes it */
    }
    struct pfs_qos_stats st[2];
    assert_int_equal(pfs_qos_stats(q, st, 2, 0), 2);
    assert_int_equal(st[1].busy, 10);
    assert_int_equal(st[1].borrowed, 2);
    assert_int_equal(st[1].busy_max, 10);
    assert_int_equal(st[1].borrowed_max, 2);
    assert_int_equal(st[1].queued, 10);
    assert_int_equal(st[0].busy, 0);
    assert_int_equal(st[0].borrowed, 0);
    for (int t = 0; t < 10; t++)
        pfs_qos_done(q, t, &it[t].it);
    assert_int_equal(pfs_qos_stats(q, st, 2, 0), 2);
    assert_int_equal(st[1].busy, 0);
    assert_int_equal(st[1].borrowed, 0);
    assert_int_equal(st[1].busy_max, 10);
    assert_int_equal(st[1].served, 10);
    pfs_qos_free(q);

    /* a staging thread borrows interactive work just the same */
    q = new_two(-1, 0);
    struct titem x;
    push(q, &x, 0, 100, NULL);
    assert_ptr_equal(pop0(q, 5), &x);
    assert_int_equal(pfs_qos_stats(q, st, 2, 0), 2);
    assert_int_equal(st[0].busy, 1);
    assert_int_equal(st[0].borrowed, 1);
    pfs_qos_done(q, 5, &x.it);
    pfs_qos_free(q);
}

static void test_borrow_zero(void **state)
{
    (void)state;
    struct pfs_qos *q = new_two(0, 0);
    struct titem it[20];
    for (int i = 0; i < 20; i++)
        push(q, &it[i], 1, i, NULL);
    for (int t = 2; t < 10; t++)
        assert_non_null(pop0(q, t));
    int64_t t0 = pfs_now_ns();
    assert_null(pfs_qos_pop(q, 0, 50)); /* interactive threads may not borrow */
    assert_true(ms_since(t0) >= 45);
    assert_null(pop0(q, 1));
    struct pfs_qos_stats st[2];
    pfs_qos_stats(q, st, 2, 0);
    assert_int_equal(st[1].busy, 8);
    assert_int_equal(st[1].borrowed, 0);
    assert_int_equal(st[1].queued, 12);
    pfs_qos_free(q);

    /* borrow 1: exactly one interactive thread helps */
    q = new_two(1, 0);
    for (int i = 0; i < 20; i++)
        push(q, &it[i], 1, i, NULL);
    for (int t = 2; t < 10; t++)
        assert_non_null(pop0(q, t));
    assert_non_null(pop0(q, 0));
    assert_null(pop0(q, 1));
    pfs_qos_stats(q, st, 2, 0);
    assert_int_equal(st[1].busy, 9);
    assert_int_equal(st[1].borrowed, 1);
    /* when the borrower is done, another may borrow */
    pfs_qos_done(q, 0, &it[8].it);
    assert_non_null(pop0(q, 1));
    pfs_qos_free(q);
}

static void test_give_back(void **state)
{
    (void)state;
    struct pfs_qos *q = new_two(-1, 0);
    struct titem st_items[30], x;
    struct titem *held[10];
    for (int i = 0; i < 30; i++)
        push(q, &st_items[i], 1, i, NULL);
    for (int t = 0; t < 10; t++) {
        held[t] = pop0(q, t);
        assert_non_null(held[t]);
    }
    usleep(2000);
    push(q, &x, 0, 1000, NULL); /* younger than every queued staging request */
    /* a staging thread that finishes takes staging work */
    pfs_qos_done(q, 5, &held[5]->it);
    held[5] = pop0(q, 5);
    assert_non_null(held[5]);
    assert_int_equal(held[5]->it.cls, 1);
    /* an interactive thread that finishes goes home: the interactive request */
    pfs_qos_done(q, 1, &held[1]->it);
    struct titem *p = pop0(q, 1);
    assert_ptr_equal(p, &x);
    struct pfs_qos_stats st[2];
    pfs_qos_stats(q, st, 2, 0);
    assert_int_equal(st[0].busy, 1);
    assert_int_equal(st[0].borrowed, 0);
    assert_int_equal(st[1].busy, 9);
    assert_int_equal(st[1].borrowed, 1);
    assert_int_equal(st[1].borrowed_max, 2);
    pfs_qos_done(q, 1, &p->it);
    /* no interactive work left: it borrows again */
    p = pop0(q, 1);
    assert_non_null(p);
    assert_int_equal(p->it.cls, 1);
    pfs_qos_free(q);
}

/* A borrowed thread gives the rest of its request back between steps: the
 * request goes to the head of its class and keeps its first start. */
static void test_yield(void **state)
{
    (void)state;
    struct pfs_qos *q = new_two(-1, 0);
    struct titem st_items[12], x;
    struct titem *held[10];
    for (int i = 0; i < 12; i++)
        push(q, &st_items[i], 1, i, NULL);
    for (int t = 0; t < 10; t++)
        held[t] = pop0(q, t);
    /* threads 0 and 1 are interactive's, both borrowed by staging */
    assert_int_equal(pfs_qos_home(q, 0), 0);
    assert_int_equal(held[0]->it.cls, 1);
    assert_false(pfs_qos_should_yield(q, 0)); /* the owner has no work yet */
    assert_false(pfs_qos_should_yield(q, 5)); /* a staging thread on staging work */
    int64_t first = held[0]->it.t_start;
    assert_true(first > 0);
    push(q, &x, 0, 100, NULL);
    assert_true(pfs_qos_should_yield(q, 0));
    assert_false(pfs_qos_should_yield(q, 5));
    pfs_qos_yield(q, 0, &held[0]->it);
    struct pfs_qos_stats st[2];
    pfs_qos_stats(q, st, 2, 0);
    assert_int_equal(st[1].yielded, 1);
    assert_int_equal(st[1].busy, 9);
    assert_int_equal(st[1].borrowed, 1);
    assert_int_equal(st[1].queued, 3); /* 2 never taken + the one given back */
    /* thread 0 now serves its owner */
    assert_ptr_equal(pop0(q, 0), &x);
    /* the next staging thread resumes the given-back request first */
    pfs_qos_done(q, 5, &held[5]->it);
    struct titem *r = pop0(q, 5);
    assert_ptr_equal(r, held[0]);
    assert_true(r->it.t_start == first); /* its wait counts once */
    /* a thread that is not busy never yields */
    pfs_qos_done(q, 0, &x.it);
    assert_false(pfs_qos_should_yield(q, 0));
    pfs_qos_free(q);
}

static void test_borrow_oldest(void **state)
{
    (void)state;
    struct pfs_qos_class_cfg c3[] = {{"a", 10}, {"b", 30}, {"c", 60}};
    struct pfs_qos *q = pfs_qos_new(c3, 3, 10, -1, 0);
    assert_non_null(q);
    struct titem ic, ib1, ib2;
    push(q, &ic, 2, 1, NULL); /* oldest: class c */
    usleep(1000);
    push(q, &ib1, 1, 2, NULL);
    push(q, &ib2, 1, 3, NULL);
    /* thread 0 (home a, empty) borrows the oldest waiting: c's */
    struct titem *p = pop0(q, 0);
    assert_ptr_equal(p, &ic);
    pfs_qos_done(q, 0, &p->it);
    p = pop0(q, 0);
    assert_ptr_equal(p, &ib1);
    pfs_qos_done(q, 0, &p->it);
    pfs_qos_free(q);
}

static void test_user_cap(void **state)
{
    (void)state;
    struct pfs_qos *q = new_two(-1, 1);
    struct titem a1, a2, a3, b1;
    push(q, &a1, 1, 1, "alice");
    push(q, &a2, 1, 2, "alice");
    push(q, &a3, 1, 3, "alice");
    push(q, &b1, 1, 4, "bob");
    assert_ptr_equal(pop0(q, 2), &a1);
    assert_ptr_equal(pop0(q, 3), &b1); /* alice has her one in service */
    assert_null(pop0(q, 4));
    assert_null(pop0(q, 0)); /* nor may a borrower take alice's */
    pfs_qos_done(q, 2, &a1.it);
    assert_ptr_equal(pop0(q, 4), &a2);
    /* the cap counts over classes */
    struct titem a4;
    push(q, &a4, 0, 5, "alice");
    assert_null(pop0(q, 0));
    pfs_qos_done(q, 4, &a2.it);
    assert_ptr_equal(pop0(q, 0), &a4);
    pfs_qos_free(q);

    /* cap 2 */
    q = new_two(-1, 2);
    push(q, &a1, 1, 1, "alice");
    push(q, &a2, 1, 2, "alice");
    push(q, &a3, 1, 3, "alice");
    assert_ptr_equal(pop0(q, 2), &a1);
    assert_ptr_equal(pop0(q, 3), &a2);
    assert_null(pop0(q, 4));
    pfs_qos_free(q);
}

static void test_stats(void **state)
{
    (void)state;
    struct pfs_qos *q = new_two(-1, 0);
    struct titem it[100];
    for (int i = 0; i < 100; i++)
        push(q, &it[i], 1, i, NULL);
    usleep(5000);
    for (int i = 0; i < 100; i++) {
        struct titem *p = pop0(q, 3);
        assert_non_null(p);
        if (i == 99)
            usleep(3000); /* one long service */
        pfs_qos_done(q, 3, &p->it);
    }
    struct pfs_qos_stats st[2];
    assert_int_equal(pfs_qos_stats(q, st, 2, 0), 2);
    assert_int_equal(st[1].served, 100);
    assert_true(st[1].wait_p50_us >= 5000);
    assert_true(st[1].wait_p50_us < 1000000);
    assert_true(st[1].wait_p99_us >= st[1].wait_p50_us);
    assert_true(st[1].wait_max_us >= st[1].wait_p99_us);
    assert_true(st[1].svc_p50_us < 3000);
    assert_true(st[1].svc_p99_us <= 3000 || st[1].svc_p99_us >= st[1].svc_p50_us);
    assert_int_equal(st[0].served, 0);
    assert_int_equal(st[0].wait_p50_us, 0);

    char buf[2048];
    size_t n = pfs_qos_format(st, 2, buf, sizeof(buf));
    assert_int_equal(n, strlen(buf));
    assert_non_null(strstr(buf, "class interactive threads=2 busy=0 borrowed=0"));
    assert_non_null(strstr(buf, "\nclass staging threads=8 "));
    assert_non_null(strstr(buf, " served=100 "));
    assert_non_null(strstr(buf, " svc_p99_us="));
    assert_int_equal(buf[n - 1], '\n');
    /* too small: whole lines only */
    char small[40];
    assert_int_equal(pfs_qos_format(st, 2, small, sizeof(small)), 0);
    assert_string_equal(small, "");
    /* max below the class count */
    assert_int_equal(pfs_qos_stats(q, st, 1, 0), 1);

    /* reset: read, then zero */
    assert_int_equal(pfs_qos_stats(q, st, 2, 1), 2);
    assert_int_equal(st[1].served, 100);
    assert_int_equal(pfs_qos_stats(q, st, 2, 0), 2);
    assert_int_equal(st[1].served, 0);
    assert_int_equal(st[1].wait_p50_us, 0);
    assert_int_equal(st[1].wait_max_us, 0);
    assert_int_equal(st[1].busy_max, 0);
    pfs_qos_free(q);
}

static void test_ring(void **state)
{
    (void)state;
    /* more samples than the ring holds: the percentiles are of the recent ones */
    struct pfs_qos *q = pfs_qos_new(NULL, 0, 1, -1, 0);
    struct titem x;
    for (int i = 0; i < 5000; i++) {
        push(q, &x, 0, i, NULL);
        struct titem *p = pop0(q, 0);
        assert_ptr_equal(p, &x);
        p->it.t_arrive = p->it.t_start - (i < 500 ? 900000000 : 1000000); /* 900 ms, 1 ms */
        pfs_qos_done(q, 0, &p->it);
    }
    struct pfs_qos_stats st[1];
    pfs_qos_stats(q, st, 1, 0);
    assert_int_equal(st[0].served, 5000);
    assert_int_equal(st[0].wait_p50_us, 1000);
    assert_int_equal(st[0].wait_p99_us, 1000); /* the 900 ms ones left the ring */
    assert_int_equal(st[0].wait_max_us, 900000);
    pfs_qos_free(q);
}

static void *stop_waiter(void *arg)
{
    struct pfs_qos *q = arg;
    return pfs_qos_pop(q, 0, -1);
}

static void test_stop(void **state)
{
    (void)state;
    struct pfs_qos *q = new_two(-1, 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, stop_waiter, q), 0);
    usleep(20000);
    pfs_qos_stop(q);
    void *ret = (void *)1;
    pthread_join(th, &ret);
    assert_null(ret);
    struct titem x;
    push(q, &x, 0, 1, NULL);
    assert_null(pop0(q, 0));                   /* stopped: nothing more */
    assert_ptr_equal(pfs_qos_drain(q), &x.it); /* what is left, for the caller to free */
    assert_null(x.it.next);
    assert_null(pfs_qos_drain(q));
    pfs_qos_free(q);
}

/* ---- parsing ------------------------------------------------------------- */

static void test_parse(void **state)
{
    (void)state;
    struct pfs_qos_class_cfg cfg[PFS_CLASS_MAX];
    const char *err = NULL;
    assert_int_equal(pfs_qos_parse("interactive:20,staging:80", cfg, PFS_CLASS_MAX, &err), 2);
    assert_string_equal(cfg[0].name, "interactive");
    assert_int_equal(cfg[0].share, 20);
    assert_string_equal(cfg[1].name, "staging");
    assert_int_equal(cfg[1].share, 80);
    assert_int_equal(pfs_qos_parse("off", cfg, PFS_CLASS_MAX, &err), 1);
    assert_string_equal(cfg[0].name, "all");
    assert_int_equal(cfg[0].share, 100);
    assert_int_equal(pfs_qos_parse("A_b-9:1", cfg, PFS_CLASS_MAX, &err), 1);
    assert_int_equal(cfg[0].share, 1);
    assert_int_equal(pfs_qos_parse("a:100,b:100,c:1", cfg, 3, &err), 3);
    char longname[80];
    memset(longname, 'x', 63);
    strcpy(longname + 63, ":5");
    assert_int_equal(pfs_qos_parse(longname, cfg, PFS_CLASS_MAX, &err), 1);
    assert_int_equal(strlen(cfg[0].name), 63);

    static const char *bad[] = {"",        "a",     "a:",     ":5",    "a:0",  "a:101",
                                "a:5x",    "a:-5",  "a b:5",  "a:5,",  ",a:5", "a:5,,b:5",
                                "a:5,a:6", "a.b:5", "a:1000", "a:5:6", "Off",  "a: 5"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err = NULL;
        if (pfs_qos_parse(bad[i], cfg, PFS_CLASS_MAX, &err) != -1)
            fail_msg("\"%s\" was accepted", bad[i]);
        assert_non_null(err);
        assert_true(strlen(err) > 5);
    }
    longname[63] = 'x';
    strcpy(longname + 64, ":5");
    assert_int_equal(pfs_qos_parse(longname, cfg, PFS_CLASS_MAX, &err), -1);
    assert_non_null(strstr(err, "63"));
    assert_int_equal(pfs_qos_parse("a:1,b:1,c:1", cfg, 2, &err), -1);
    assert_non_null(strstr(err, "too many"));
    assert_int_equal(pfs_qos_parse("a:5,a:6", cfg, PFS_CLASS_MAX, &err), -1);
    assert_non_null(strstr(err, "twice"));
}

/* ---- real threads -------------------------------------------------------- */

#define NT        10
#define SVC_US    2000
#define N_INTER   20
#define N_STAGING 2000

struct run {
    struct pfs_qos *q;
    atomic_int quit;
    atomic_int inter_done;
    atomic_int staging_done;
    int64_t inter_wait_ns[N_INTER]; /* written by the worker that served it */
};

struct worker {
    struct run *run;
    int t;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    struct run *r = w->run;
    for (;;) {
        struct titem *p = (struct titem *)pfs_qos_pop(r->q, w->t, 50);
        if (!p) {
            if (atomic_load(&r->quit))
                break;
            continue;
        }
        int64_t waited = p->it.t_start - p->it.t_arrive;
        usleep(SVC_US);
        if (p->id >= 100000) {
            r->inter_wait_ns[p->id - 100000] = waited;
            atomic_fetch_add(&r->inter_done, 1);
        } else {
            atomic_fetch_add(&r->staging_done, 1);
        }
        pfs_qos_done(r->q, w->t, &p->it);
    }
    return NULL;
}

/* n_staging staging requests queued, NT threads serving, then N_INTER
 * interactive ones arriving 10 ms apart; returns the worst interactive wait
 * (ms) and the staging requests still queued when the last was served. */
static void run_mix(struct pfs_qos *q, int inter_cls, int n_staging, int64_t *worst_ms,
                    int *staging_left, struct run *r)
{
    static struct titem st_items[N_STAGING], in_items[N_INTER];
    memset(r, 0, sizeof(*r));
    r->q = q;
    for (int i = 0; i < n_staging; i++)
        push(q, &st_items[i], pfs_qos_nclasses(q) - 1, i, "stager");
    struct worker w[NT];
    pthread_t th[NT];
    for (int t = 0; t < NT; t++) {
        w[t].run = r;
        w[t].t = t;
        assert_int_equal(pthread_create(&th[t], NULL, work, &w[t]), 0);
    }
    usleep(30000); /* every thread busy on staging work */
    for (int i = 0; i < N_INTER; i++) {
        push(q, &in_items[i], inter_cls, 100000 + i, "viewer");
        usleep(10000);
    }
    int64_t t0 = pfs_now_ns();
    while (atomic_load(&r->inter_done) < N_INTER && ms_since(t0) < 10000)
        usleep(1000);
    struct pfs_qos_stats st[PFS_CLASS_MAX];
    int n = pfs_qos_stats(q, st, PFS_CLASS_MAX, 0);
    *staging_left = st[n - 1].queued;
    atomic_store(&r->quit, 1);
    pfs_qos_stop(q);
    for (int t = 0; t < NT; t++)
        pthread_join(th[t], NULL);
    assert_int_equal(atomic_load(&r->inter_done), N_INTER);
    *worst_ms = 0;
    for (int i = 0; i < N_INTER; i++)
        if (r->inter_wait_ns[i] / 1000000 > *worst_ms)
            *worst_ms = r->inter_wait_ns[i] / 1000000;
}

static void test_interactive_latency(void **state)
{
    (void)state;
    struct pfs_qos *q = new_two(-1, 0);
    static struct run r;
    int64_t worst;
    int left;
    run_mix(q, 0, N_STAGING, &worst, &left, &r);
    print_message("interactive worst wait %lld ms, staging served %d, left %d\n", (long long)worst,
                  atomic_load(&r.staging_done), left);
    assert_true(left > 0); /* the backlog lasted the whole time: the test means something */
    assert_true(atomic_load(&r.staging_done) > 200);
    assert_true(worst <= 15); /* about one service time (2 ms), plus slack */
    pfs_qos_free(q);
}

static void test_fifo_baseline(void **state)
{
    (void)state;
    /* QoS off: the same interactive requests queue behind the backlog */
    struct pfs_qos *q = pfs_qos_new(NULL, 0, NT, -1, 0);
    static struct run r;
    int64_t worst;
    int left;
    run_mix(q, 0, 400, &worst, &left, &r);
    print_message("FIFO: interactive worst wait %lld ms\n", (long long)worst);
    assert_true(worst >= 30); /* 400 x 2 ms / 10 threads = 80 ms of backlog */
    pfs_qos_free(q);
}

/* The servers' seek counter: a request is a seek when it does not start
 * where the previous request on its object ended. */
static void test_iostat_seeks(void **state)
{
    (void)state;
    struct pfs_iostat s;
    assert_int_equal(pfs_iostat_init(&s), 0);
    pfs_iostat_note(&s, 1, 0, 40, 1);   /* a new object at 0: no seek */
    pfs_iostat_note(&s, 1, 40, 40, 1);  /* contiguous */
    pfs_iostat_note(&s, 2, 0, 100, 1);  /* another object: its own end */
    pfs_iostat_note(&s, 1, 80, 10, 0);  /* still contiguous on object 1, a read */
    pfs_iostat_note(&s, 1, 200, 10, 1); /* forward: a seek */
    pfs_iostat_note(&s, 2, 50, 10, 1);  /* backward: a seek */
    pfs_iostat_note(&s, 3, 4096, 1, 1); /* a new object not at 0: a seek */
    struct pfs_iostat_counts c = pfs_iostat_get(&s, 1);
    assert_int_equal(c.writes, 6);
    assert_int_equal(c.reads, 1);
    assert_int_equal(c.bytes_written, 40 + 40 + 100 + 10 + 10 + 1);
    assert_int_equal(c.bytes_read, 10);
    assert_int_equal(c.seeks, 3);
    char line[256];
    assert_true(pfs_iostat_format(&c, line, sizeof(line)) > 0);
    assert_string_equal(line, "io requests=7 writes=6 reads=1 bytes_written=201 bytes_read=10 "
                              "seeks=3\n");
    c = pfs_iostat_get(&s, 0); /* reset zeroed the counts but kept the ends */
    assert_int_equal(c.writes + c.reads + c.seeks, 0);
    pfs_iostat_note(&s, 1, 210, 5, 1);
    assert_int_equal(pfs_iostat_get(&s, 0).seeks, 0);
    pfs_iostat_fini(&s);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_iostat_seeks),
    cmocka_unit_test(test_deal_two),
    cmocka_unit_test(test_deal_three),
    cmocka_unit_test(test_fifo),
    cmocka_unit_test(test_borrow_all),
    cmocka_unit_test(test_borrow_zero),
    cmocka_unit_test(test_give_back),
    cmocka_unit_test(test_yield),
    cmocka_unit_test(test_borrow_oldest),
    cmocka_unit_test(test_user_cap),
    cmocka_unit_test(test_stats),
    cmocka_unit_test(test_ring),
    cmocka_unit_test(test_stop),
    cmocka_unit_test(test_parse),
    cmocka_unit_test(test_interactive_latency),
    cmocka_unit_test(test_fifo_baseline),
};

PIO_UNIT_MAIN(tests)
