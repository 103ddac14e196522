/* test_balance.c - USER, STATIC and DYNAMIC channel choice.
 * SPDX-License-Identifier: BSD-3-Clause */
#include "piod/balance.h"
#include "tests/lib/unit.h"

#define MB (1u << 20)

static void test_user_named_channel(void **state)
{
    (void)state;
    struct piod_bal_chan c[4] = {{1, 0, 1e7}, {1, 8 * MB, 1e7}, {1, 0, 1e7}, {1, 0, 1e7}};
    assert_int_equal(piod_bal_user(c, 4, 1, MB), 1); /* even when it is the busiest */
    assert_int_equal(piod_bal_user(c, 4, 3, MB), 3);
}

static void test_user_down_falls_back(void **state)
{
    (void)state;
    struct piod_bal_chan c[3] = {{1, 4 * MB, 1e7}, {0, 0, 1e7}, {1, 0, 1e7}};
    assert_int_equal(piod_bal_user(c, 3, 1, MB), 2); /* down: the DYNAMIC choice */
    assert_int_equal(piod_bal_user(c, 3, 7, MB), 2); /* out of range: likewise */
    struct piod_bal_chan none[2] = {{0, 0, 0}, {0, 0, 0}};
    assert_int_equal(piod_bal_user(none, 2, 0, MB), -1);
}

static void test_static_map(void **state)
{
    (void)state;
    struct piod_bal_chan c[4] = {{1, 0, 0}, {1, 0, 0}, {1, 0, 0}, {1, 0, 0}};
    for (uint32_t s = 0; s < 8; s++)
        for (uint32_t d = 0; d < 8; d++)
            assert_int_equal(piod_bal_static(c, 4, s, d), (int)((s + d) % 4));
    c[2].up = 0;
    assert_int_equal(piod_bal_static(c, 4, 1, 1), 3); /* next one up */
    c[3].up = 0;
    assert_int_equal(piod_bal_static(c, 4, 1, 1), 0); /* wraps around */
    assert_int_equal(piod_bal_static(c, 0, 1, 1), -1);
}

static void test_dynamic_prefers_short_queue(void **state)
{
    (void)state;
    struct piod_bal_chan c[3] = {{1, 3 * MB, 1e7}, {1, 1 * MB, 1e7}, {1, 2 * MB, 1e7}};
    assert_int_equal(piod_bal_dynamic(c, 3, MB), 1);
}

static void test_dynamic_weighs_rate(void **state)
{
    (void)state;
    /* channel 0 is ten times faster: 4 MiB queued there drains before 1 MiB on 1 */
    struct piod_bal_chan c[2] = {{1, 4 * MB, 1e8}, {1, 1 * MB, 1e7}};
    assert_int_equal(piod_bal_dynamic(c, 2, MB), 0);
    c[0].outstanding = 30 * MB;
    assert_int_equal(piod_bal_dynamic(c, 2, MB), 1);
}

static void test_dynamic_spreads_like_rates(void **state)
{
    (void)state;
    /* granting 100 chunks one by one: shares follow the rates 1:2:1 */
    struct piod_bal_chan c[3] = {{1, 0, 1e7}, {1, 0, 2e7}, {1, 0, 1e7}};
    int n[3] = {0, 0, 0};
    for (int k = 0; k < 100; k++) {
        int i = piod_bal_dynamic(c, 3, MB);
        assert_true(i >= 0);
        c[i].outstanding += MB;
        n[i]++;
    }
    assert_in_range(n[1], 45, 55);
    assert_in_range(n[0], 20, 30);
    assert_in_range(n[2], 20, 30);
}

static void test_dynamic_unmeasured_and_down(void **state)
{
    (void)state;
    /* unmeasured channels count at the mean measured rate; down ones never */
    struct piod_bal_chan c[3] = {{0, 0, 1e9}, {1, 2 * MB, 0}, {1, 1 * MB, 1e7}};
    assert_int_equal(piod_bal_dynamic(c, 3, MB), 2);
    struct piod_bal_chan ties[3] = {{1, MB, 0}, {1, MB, 0}, {1, MB, 0}};
    assert_int_equal(piod_bal_dynamic(ties, 3, MB), 0); /* ties: lowest index */
    struct piod_bal_chan none[1] = {{0, 0, 0}};
    assert_int_equal(piod_bal_dynamic(none, 1, MB), -1);
}

static void test_ewma(void **state)
{
    (void)state;
    assert_true(piod_bal_ewma(0, 100.0) == 100.0);
    double e = piod_bal_ewma(100.0, 200.0);
    assert_true(e > 100.0 && e < 200.0);
    for (int k = 0; k < 50; k++)
        e = piod_bal_ewma(e, 50.0);
    assert_true(e > 49.0 && e < 51.0);
}

/* A chunk takes about ms on its link: 25 Mbit/s (3.125 MB/s) for 50 ms is
 * 156 KB, so 128 KiB; 100 Mbit/s gives 512 KiB; a fast link the maximum. */
static void test_chunk_from_rate(void **state)
{
    (void)state;
    assert_int_equal(piod_bal_chunk(3.125e6, 50, MB), 128 * 1024);
    assert_int_equal(piod_bal_chunk(12.5e6, 50, MB), 512 * 1024);
    assert_int_equal(piod_bal_chunk(3.7e9, 50, MB), MB);
    assert_int_equal(piod_bal_chunk(1e3, 50, MB), PIOD_BAL_CHUNK_MIN); /* never below */
    assert_int_equal(piod_bal_chunk(0, 50, MB), MB);                   /* not measured yet */
    assert_int_equal(piod_bal_chunk(3.125e6, 0, MB), MB);              /* fixed */
    assert_int_equal(piod_bal_chunk(1e3, 50, 32 * 1024), 32 * 1024);   /* max below the floor */
    /* every result divides max, also when max is not a power of two */
    uint32_t max = 3 * MB;
    uint32_t c = piod_bal_chunk(3.125e6, 50, max);
    assert_int_equal(max % c, 0);
    assert_true(c >= PIOD_BAL_CHUNK_MIN && c <= 3.125e6 * 0.05);
    assert_int_equal(piod_bal_chunk(1e6, 50, 1000000 + 1), 1000000 + 1); /* odd: no divisor */
    /* 10^6 = 2^6 x 15625: its half is not a multiple of 64, so it stays */
    assert_int_equal(piod_bal_chunk(1e3, 50, 1000000), 1000000);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_chunk_from_rate),
    cmocka_unit_test(test_user_named_channel),
    cmocka_unit_test(test_user_down_falls_back),
    cmocka_unit_test(test_static_map),
    cmocka_unit_test(test_dynamic_prefers_short_queue),
    cmocka_unit_test(test_dynamic_weighs_rate),
    cmocka_unit_test(test_dynamic_spreads_like_rates),
    cmocka_unit_test(test_dynamic_unmeasured_and_down),
    cmocka_unit_test(test_ewma),
};
PIO_UNIT_MAIN(tests)
