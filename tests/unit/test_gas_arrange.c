/* test_gas_arrange.c - GAS's arrange step: sort and merge of a sub-buffer's
 * writes, and the split of a write at block and stripe boundaries.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Besides the named cases (adjacent, overlapping, the same offset twice, two
 * files), a model check: random writes to three files are applied in issue
 * order to an image of each file; arranged, the extents must hold exactly
 * the image's bytes where something was written, nothing else, in (file,
 * offset) order, and no two extents of one file may touch (the merge is
 * maximal). Fixed seeds: a failure reproduces. */
#include "pfs/gas/arrange.h"
#include "tests/lib/unit.h"

static uint8_t buf[1 << 20];

static struct gas_req req(uint64_t file, uint64_t off, uint64_t len, uint64_t seq,
                          const uint8_t *data)
{
    return (struct gas_req){.file = file, .off = off, .len = len, .seq = seq, .data = data};
}

static void adjacent(void **state)
{
    (void)state;
    uint8_t a[40], b[40], c[40];
    memset(a, 'a', 40), memset(b, 'b', 40), memset(c, 'c', 40);
    /* issued out of order: 80, 0, 40 (the BTIO pattern's 40-byte records) */
    struct gas_req v[] = {req(1, 80, 40, 0, c), req(1, 0, 40, 1, a), req(1, 40, 40, 2, b)};
    struct gas_extent e[3];
    size_t n;
    assert_int_equal(gas_arrange(v, 3, e, &n, buf, sizeof(buf)), 0);
    assert_int_equal(n, 1);
    assert_int_equal(e[0].off, 0);
    assert_int_equal(e[0].len, 120);
    assert_int_equal(e[0].nreq, 3);
    assert_memory_equal(buf, a, 40);
    assert_memory_equal(buf + 40, b, 40);
    assert_memory_equal(buf + 80, c, 40);
}

static void overlap_last_wins(void **state)
{
    (void)state;
    uint8_t a[100], b[50];
    memset(a, 'a', 100), memset(b, 'b', 50);
    /* b (later) lands in the middle of a (earlier) */
    struct gas_req v[] = {req(7, 1025, 50, 9, b), req(7, 1000, 100, 3, a)};
    struct gas_extent e[2];
    size_t n;
    assert_int_equal(gas_arrange(v, 2, e, &n, buf, sizeof(buf)), 0);
    assert_int_equal(n, 1);
    assert_int_equal(e[0].off, 1000);
    assert_int_equal(e[0].len, 100);
    for (int i = 0; i < 100; i++)
        assert_int_equal(buf[i], i >= 25 && i < 75 ? 'b' : 'a');
    /* the other way round: the earlier write is the small one, the big one wins */
    v[0] = req(7, 1025, 50, 1, b);
    v[1] = req(7, 1000, 100, 2, a);
    assert_int_equal(gas_arrange(v, 2, e, &n, buf, sizeof(buf)), 0);
    for (int i = 0; i < 100; i++)
        assert_int_equal(buf[i], 'a');
}

static void same_offset_twice(void **state)
{
    (void)state;
    uint8_t x[8] = "xxxxxxx", y[8] = "yyyyyyy", z[8] = "zzzzzzz";
    struct gas_req v[] = {req(1, 64, 8, 5, y), req(1, 64, 8, 2, x), req(1, 64, 8, 7, z)};
    struct gas_extent e[3];
    size_t n;
    assert_int_equal(gas_arrange(v, 3, e, &n, buf, sizeof(buf)), 0);
    assert_int_equal(n, 1);
    assert_int_equal(e[0].len, 8);
    assert_memory_equal(buf, z, 8); /* seq 7, the last */
}

static void files_apart_and_gaps(void **state)
{
    (void)state;
    uint8_t d[16];
    memset(d, 'd', sizeof(d));
    /* file 2 and file 1 at the same offsets never merge; a gap splits */
    struct gas_req v[] = {req(2, 0, 16, 0, d), req(1, 0, 16, 1, d), req(1, 16, 16, 2, d),
                          req(1, 33, 16, 3, d)};
    struct gas_extent e[4];
    size_t n;
    assert_int_equal(gas_arrange(v, 4, e, &n, buf, sizeof(buf)), 0);
    assert_int_equal(n, 3);
    assert_int_equal(e[0].file, 1);
    assert_int_equal(e[0].len, 32);
    assert_int_equal(e[1].file, 1);
    assert_int_equal(e[1].off, 33);
    assert_int_equal(e[2].file, 2);
    /* a buffer too small is refused */
    assert_int_equal(gas_arrange(v, 4, e, &n, buf, 40), -1);
}

static uint64_t rs = 12345;
static uint64_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

static void model(void **state)
{
    (void)state;
    enum { FILES = 3, SPAN = 4096, N = 400 };
    static uint8_t img[FILES][SPAN], written[FILES][SPAN], data[N][64];
    for (int round = 0; round < 50; round++) {
        memset(img, 0, sizeof(img));
        memset(written, 0, sizeof(written));
        struct gas_req v[N];
        int n = 1 + (int)(rnd() % N);
        for (int i = 0; i < n; i++) {
            uint64_t f = rnd() % FILES, len = rnd() % 64, off = rnd() % (SPAN - 64);
            for (uint64_t k = 0; k < len; k++)
                data[i][k] = (uint8_t)rnd();
            v[i] = req(f + 1, off, len, (uint64_t)i, data[i]);
            memcpy(&img[f][off], data[i], len); /* issue order: later wins */
            memset(&written[f][off], 1, len);
        }
        /* shuffle: arrival order at the dispatcher is not issue order */
        for (int i = n - 1; i > 0; i--) {
            int j = (int)(rnd() % (uint64_t)(i + 1));
            struct gas_req t = v[i];
            v[i] = v[j];
            v[j] = t;
        }
        struct gas_extent e[N];
        size_t ne;
        assert_int_equal(gas_arrange(v, (size_t)n, e, &ne, buf, sizeof(buf)), 0);
        static uint8_t seen[FILES][SPAN];
        memset(seen, 0, sizeof(seen));
        for (size_t k = 0; k < ne; k++) {
            uint64_t f = e[k].file - 1;
            if (k > 0) { /* sorted, and never touching within a file */
                assert_true(e[k - 1].file <= e[k].file);
                if (e[k - 1].file == e[k].file)
                    assert_true(e[k - 1].off + e[k - 1].len < e[k].off);
            }
            for (uint64_t b = 0; b < e[k].len; b++) {
                assert_true(written[f][e[k].off + b] || e[k].len == 0);
                assert_int_equal(buf[e[k].pos + b], img[f][e[k].off + b]);
                seen[f][e[k].off + b] = 1;
            }
        }
        for (int f = 0; f < FILES; f++)
            for (int b = 0; b < SPAN; b++)
                assert_int_equal(seen[f][b], written[f][b]);
    }
}

static void split(void **state)
{
    (void)state;
    struct pfs_layout l = {.stripe_size = 1 << 20, .count = 4, .servers = {0, 1, 2, 3}};
    /* within one 4 KiB block and one stripe: whole */
    struct pfs_piece p = gas_split(&l, 4096, 100, 40);
    assert_int_equal(p.len, 40);
    assert_int_equal(p.stripe, 0);
    /* crossing a block boundary: cut at the block's end */
    p = gas_split(&l, 4096, 4090, 40);
    assert_int_equal(p.len, 6);
    p = gas_split(&l, 4096, 4096, 34);
    assert_int_equal(p.len, 34);
    assert_int_equal(p.obj_off, 4096);
    /* crossing a stripe unit (server) boundary: cut there, next piece on server 1 */
    p = gas_split(&l, 0, (1 << 20) - 10, 40);
    assert_int_equal(p.len, 10);
    assert_int_equal(p.stripe, 0);
    p = gas_split(&l, 0, 1 << 20, 30);
    assert_int_equal(p.stripe, 1);
    assert_int_equal(p.obj_off, 0);
    /* stripe 5 wraps to server 1, second unit of its object */
    p = gas_split(&l, 65536, 5u << 20, 100000);
    assert_int_equal(p.stripe, 1);
    assert_int_equal(p.obj_off, 1 << 20);
    assert_int_equal(p.len, 65536);
    /* every piece of a long write: they tile it */
    uint64_t off = 12345, len = 5 << 20, done = 0;
    while (done < len) {
        p = gas_split(&l, 4096, off + done, len - done);
        assert_true(p.len > 0 && p.len <= 4096);
        assert_true((off + done) / 4096 == (off + done + p.len - 1) / 4096);
        done += p.len;
    }
    assert_int_equal(done, len);
}

static void whole_blocks_and_counts(void **state)
{
    (void)state;
    uint64_t lo, hi;
    /* [100, 9000) holds one whole 4 KiB block, [4096, 8192) */
    gas_whole_blocks(100, 8900, 4096, &lo, &hi);
    assert_int_equal(lo, 4096);
    assert_int_equal(hi, 8192);
    /* aligned at both ends: all of it */
    gas_whole_blocks(8192, 8192, 4096, &lo, &hi);
    assert_int_equal(lo, 8192);
    assert_int_equal(hi, 16384);
    /* within one block, or across a boundary without a whole block: none */
    gas_whole_blocks(10, 40, 4096, &lo, &hi);
    assert_int_equal(hi - lo, 0);
    gas_whole_blocks(4000, 4000, 4096, &lo, &hi);
    assert_int_equal(hi - lo, 0);
    /* an extent held back stands for the writes it merged: counts add up */
    uint8_t a[40], b[40];
    memset(a, 'a', 40), memset(b, 'b', 40);
    struct gas_req v[] = {req(1, 0, 40, 0, a), req(1, 40, 40, 9, b)};
    v[0].count = 7; /* held from an earlier flush */
    struct gas_extent e[2];
    size_t n;
    assert_int_equal(gas_arrange(v, 2, e, &n, buf, sizeof(buf)), 0);
    assert_int_equal(n, 1);
    assert_int_equal(e[0].nreq, 8);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(adjacent),
    cmocka_unit_test(overlap_last_wins),
    cmocka_unit_test(same_offset_twice),
    cmocka_unit_test(files_apart_and_gaps),
    cmocka_unit_test(model),
    cmocka_unit_test(split),
    cmocka_unit_test(whole_blocks_and_counts),
};
PIO_UNIT_MAIN(tests)
