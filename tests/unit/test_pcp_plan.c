/* test_pcp_plan.c - pcp_plan: the sizes of a copy's data messages.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Both ends of a PUT or GET post and send by this plan, so it must cover
 * the file exactly, from any start offset, and (issue 31, item 1) keep
 * pcp -n K's channels balanced: every round of `lanes` messages has one
 * size, so message k on channel k mod K gives each channel the same bytes
 * (within a byte per lane: the last round is shared evenly). The ramps: the first round is
 * block / 8, rounds double up to block, and the rounds near the end halve
 * down to block / 8 again.
 */
#include "common/wire/pcp_proto.h"
#include "tests/lib/unit.h"

#define MIB (1ull << 20)

/* Walk a plan: lens[] (up to cap) and the count; checks the cover. */
static size_t walk(uint64_t off, uint64_t size, uint64_t block, uint32_t lanes, int ramp,
                   uint64_t *lens, size_t cap)
{
    struct pcp_plan p;
    pcp_plan_init(&p, off, size, block, lanes, ramp);
    uint64_t sum = off, len;
    size_t n = 0;
    while ((len = pcp_plan_next(&p)) > 0) {
        assert_true(len <= block);
        assert_true(n < cap);
        lens[n++] = len;
        sum += len;
    }
    assert_int_equal(sum, size > off ? size : off);
    assert_int_equal(pcp_plan_next(&p), 0);
    return n;
}

static void test_no_ramp_is_blocks(void **state)
{
    (void)state;
    uint64_t lens[512];
    size_t n = walk(0, 100 * MIB + 5, 8 * MIB, 4, 0, lens, 512);
    assert_int_equal(n, 13);
    for (size_t i = 0; i + 1 < n; i++)
        assert_int_equal(lens[i], 8 * MIB);
    assert_int_equal(lens[n - 1], 4 * MIB + 5);
}

static void test_ramp_up_and_down(void **state)
{
    (void)state;
    uint64_t lens[512];
    size_t n = walk(0, 1024 * MIB, 8 * MIB, 4, 1, lens, 512);
    /* up: 1, 2, 4 MiB rounds of 4, then 8 MiB */
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(lens[i], 1 * MIB);
        assert_int_equal(lens[4 + i], 2 * MIB);
        assert_int_equal(lens[8 + i], 4 * MIB);
        assert_int_equal(lens[12 + i], 8 * MIB);
    }
    /* down: the last rounds shrink round by round, the last two to at
     * most block / 8 each */
    for (size_t i = n - 8; i < n; i++)
        assert_true(lens[i] <= 1 * MIB && lens[i] > 0);
    for (size_t i = n - 20; i + 1 < n; i++)
        assert_true(lens[i + 1] <= lens[i]);
    assert_true(lens[n - 20] < 8 * MIB);
}

/* Message k goes to channel k mod lanes: every channel gets the same bytes,
 * within a byte per lane (the last round shares what is left evenly). */
static void test_lanes_balanced(void **state)
{
    (void)state;
    static uint64_t lens[4096];
    const uint64_t sizes[] = {1024 * MIB, 1000 * MIB + 12345, 3 * MIB, 64 * MIB + 1, 4096, 77};
    const uint32_t lanes[] = {1, 2, 3, 4, 8, 16};
    for (size_t a = 0; a < sizeof(sizes) / sizeof(sizes[0]); a++)
        for (size_t b = 0; b < sizeof(lanes) / sizeof(lanes[0]); b++) {
            size_t n = walk(0, sizes[a], 8 * MIB, lanes[b], 1, lens, 4096);
            uint64_t per[16] = {0}, lo = UINT64_MAX, hi = 0;
            for (size_t k = 0; k < n; k++)
                per[k % lanes[b]] += lens[k];
            for (uint32_t c = 0; c < lanes[b]; c++) {
                lo = per[c] < lo ? per[c] : lo;
                hi = per[c] > hi ? per[c] : hi;
            }
            assert_true(hi - lo < lanes[b]);
            /* a round's messages have one size; only the last may be shorter */
            for (size_t k = 0; k + 1 < n; k++)
                if ((k + 1) % lanes[b] != 0)
                    assert_true(lens[k] == lens[k + 1] || k + 2 == n);
        }
}

/* A resumed copy plans from its offset; the end still ramps down. */
static void test_from_offset(void **state)
{
    (void)state;
    uint64_t lens[512];
    size_t n = walk(300 * MIB + 4096, 1024 * MIB, 8 * MIB, 4, 1, lens, 512);
    assert_int_equal(lens[0], 1 * MIB);
    assert_true(lens[n - 1] <= 1 * MIB);
    n = walk(5 * MIB, 5 * MIB, 8 * MIB, 4, 1, lens, 512);
    assert_int_equal(n, 0);
}

/* A small block: no ramp below 64 KiB pieces; a block of 64 KiB stays one size. */
static void test_small_blocks(void **state)
{
    (void)state;
    uint64_t lens[4096];
    size_t n = walk(0, 10 * MIB, 64 << 10, 4, 1, lens, 4096);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(lens[i], 64 << 10);
    n = walk(0, 10 * MIB, 256 << 10, 4, 1, lens, 4096);
    assert_int_equal(lens[0], 64 << 10);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_no_ramp_is_blocks), cmocka_unit_test(test_ramp_up_and_down),
    cmocka_unit_test(test_lanes_balanced),    cmocka_unit_test(test_from_offset),
    cmocka_unit_test(test_small_blocks),
};
PIO_UNIT_MAIN(tests)
