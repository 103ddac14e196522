/* test_htab.c - piod's intrusive hash table (piod/htab.c): finds, removes, grows, shares hashes.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * piod finds every message and process through these tables on every event
 * (issue 27), so a lost or doubled entry would lose or misroute a message. */
#include "piod/htab.h"
#include "tests/lib/unit.h"

struct item {
    struct piod_hlink l;
    uint64_t id;
    int linked;
};

static struct item *find(struct piod_htab *t, uint64_t h, uint64_t id)
{
    for (struct piod_hlink *l = piod_htab_first(t, h); l; l = piod_htab_next(l)) {
        struct item *it = PIOD_CONTAINER(l, struct item, l);
        if (it->id == id)
            return it;
    }
    return NULL;
}

/* 20,000 entries through many doublings; every other one removed; each
 * found exactly when it is linked */
static void test_many_add_remove(void **state)
{
    (void)state;
    enum { N = 20000 };
    struct piod_htab t = {0};
    struct item *it = calloc(N, sizeof(*it));
    assert_non_null(it);
    for (uint64_t i = 0; i < N; i++) {
        it[i].id = i;
        assert_int_equal(piod_htab_add(&t, &it[i].l, piod_hash64(7, i)), 0);
        it[i].linked = 1;
    }
    assert_int_equal(t.n, N);
    assert_true(t.nb >= N / 2); /* it grew */
    for (uint64_t i = 0; i < N; i += 2) {
        piod_htab_del(&t, &it[i].l);
        it[i].linked = 0;
    }
    assert_int_equal(t.n, N / 2);
    for (uint64_t i = 0; i < N; i++) {
        struct item *f = find(&t, piod_hash64(7, i), i);
        if (it[i].linked)
            assert_ptr_equal(f, &it[i]);
        else
            assert_null(f);
    }
    piod_htab_del(&t, &it[0].l); /* not linked: nothing happens */
    assert_int_equal(t.n, N / 2);
    piod_htab_free(&t);
    free(it);
}

/* entries under one hash: all found in turn, none of another hash */
static void test_shared_hash(void **state)
{
    (void)state;
    struct piod_htab t = {0};
    struct item a = {.id = 1}, b = {.id = 2}, c = {.id = 3}, other = {.id = 4};
    assert_int_equal(piod_htab_add(&t, &a.l, 42), 0);
    assert_int_equal(piod_htab_add(&t, &b.l, 42), 0);
    assert_int_equal(piod_htab_add(&t, &c.l, 42), 0);
    assert_int_equal(piod_htab_add(&t, &other.l, 42 + 64), 0); /* same bucket, other hash */
    int seen = 0;
    for (struct piod_hlink *l = piod_htab_first(&t, 42); l; l = piod_htab_next(l)) {
        assert_int_equal(l->h, 42);
        seen |= 1 << PIOD_CONTAINER(l, struct item, l)->id;
    }
    assert_int_equal(seen, (1 << 1) | (1 << 2) | (1 << 3));
    piod_htab_del(&t, &b.l);
    assert_ptr_equal(find(&t, 42, 1), &a);
    assert_null(find(&t, 42, 2));
    assert_ptr_equal(find(&t, 42, 3), &c);
    assert_ptr_equal(find(&t, 42 + 64, 4), &other);
    assert_null(piod_htab_first(&t, 43));
    piod_htab_free(&t);
    assert_null(piod_htab_first(&t, 42)); /* an empty (freed) table finds nothing */
}

/* the mix spreads identities that differ in one number */
static void test_hash_spreads(void **state)
{
    (void)state;
    int buckets[64] = {0};
    for (uint64_t i = 0; i < 6400; i++)
        buckets[piod_hash64(3, i) & 63]++;
    for (int k = 0; k < 64; k++)
        assert_in_range(buckets[k], 50, 150);
    assert_true(piod_hash64(1, 2) != piod_hash64(2, 1));
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_many_add_remove),
    cmocka_unit_test(test_shared_hash),
    cmocka_unit_test(test_hash_spreads),
};
PIO_UNIT_MAIN(tests)
