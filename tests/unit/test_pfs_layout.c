/* test_pfs_layout.c - the stripe-count policy, placement, range mapping and
 * the pfs message codec.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Mapping is checked against a byte-by-byte model: every byte of a file is
 * walked through pfs_map and must land on the stripe and object offset the
 * layout formula gives, pieces must tile the range without gaps, and the
 * object sizes must add up to the file size. */
#include "pfs/layout.h"
#include "pfs/proto.h"
#include "pio.h"
#include "tests/lib/unit.h"

#define MIB (1ull << 20)

static void policy(void **state)
{
    (void)state;
    /* the cases: 100 MiB -> 7 stripes; override 1; 64 capped at 32 */
    assert_int_equal(pfs_policy_count(100 * MIB, 0, 0, 40), 7);
    assert_int_equal(pfs_policy_count(100 * MIB, 1, 0, 40), 1);
    assert_int_equal(pfs_policy_count(100 * MIB, 64, 0, 40), 32);
    assert_int_equal(pfs_policy_count(100 * MIB, 0, 0, 4), 4); /* capped by servers */
    assert_int_equal(pfs_policy_count(16 * MIB, 0, 0, 40), 1);
    assert_int_equal(pfs_policy_count(16 * MIB + 1, 0, 0, 40), 2);
    assert_int_equal(pfs_policy_count(1, 0, 0, 40), 1);
    assert_int_equal(pfs_policy_count(0, 0, 0, 40), 1);           /* size unknown */
    assert_int_equal(pfs_policy_count(1ull << 40, 0, 0, 64), 32); /* 1 TiB: the cap */
    assert_int_equal(pfs_policy_count(100 * MIB, 0, 3, 40), 3);   /* directory default */
    assert_int_equal(pfs_policy_count(100 * MIB, 2, 3, 40), 2);   /* the wish wins */
}

static void placement_even(void **state)
{
    (void)state;
    for (uint32_t nserv = 1; nserv <= 9; nserv++)
        for (uint32_t count = 1; count <= nserv; count++) {
            uint32_t next = 0, held[16] = {0};
            for (int file = 1; file <= 50; file++) {
                struct pfs_layout l = {.stripe_size = MIB, .count = count};
                pfs_layout_place(&l, nserv, &next);
                assert_true(pfs_layout_valid(&l, nserv));
                for (uint32_t i = 0; i < count; i++)
                    held[l.servers[i]]++;
                uint32_t lo = UINT32_MAX, hi = 0;
                for (uint32_t s = 0; s < nserv; s++) {
                    lo = held[s] < lo ? held[s] : lo;
                    hi = held[s] > hi ? held[s] : hi;
                }
                assert_true(hi - lo <= 1); /* after every file, not just at the end */
            }
        }
    /* the case: 24 files x 3 over 4 servers: 18 each */
    uint32_t next = 0, held[4] = {0};
    for (int file = 0; file < 24; file++) {
        struct pfs_layout l = {.stripe_size = MIB, .count = 3};
        pfs_layout_place(&l, 4, &next);
        for (int i = 0; i < 3; i++)
            held[l.servers[i]]++;
    }
    for (int s = 0; s < 4; s++)
        assert_int_equal(held[s], 18);
}

static void valid(void **state)
{
    (void)state;
    struct pfs_layout l = {.stripe_size = MIB, .count = 2, .servers = {0, 1}};
    assert_true(pfs_layout_valid(&l, 2));
    assert_false(pfs_layout_valid(&l, 1)); /* server 1 does not exist */
    l.servers[1] = 0;
    assert_false(pfs_layout_valid(&l, 2)); /* twice the same server */
    l.servers[1] = 1;
    l.stripe_size = 1000;
    assert_false(pfs_layout_valid(&l, 2));
    l.stripe_size = MIB;
    l.count = 0;
    assert_false(pfs_layout_valid(&l, 2));
}

/* every byte of [0, size) through pfs_map, against the formula */
static void check_map(uint32_t count, uint64_t ss, uint64_t size, uint64_t max)
{
    struct pfs_layout l = {.stripe_size = ss, .count = count};
    for (uint32_t i = 0; i < count; i++)
        l.servers[i] = i;
    uint64_t objsum = 0;
    for (uint32_t i = 0; i < count; i++)
        objsum += pfs_object_size(&l, i, size);
    assert_int_equal(objsum, size);
    /* object sizes equal the highest byte each stripe holds, + 1 */
    uint64_t top[PFS_STRIPES_MAX] = {0};
    for (uint64_t off = 0; off < size;) {
        struct pfs_piece p = pfs_map(&l, off, size - off, max);
        assert_true(p.len > 0);
        assert_true(max == 0 || p.len <= max);
        assert_int_equal(p.file_off, off);
        uint64_t u = off / ss;
        assert_int_equal(p.stripe, u % count);
        assert_int_equal(p.obj_off, (u / count) * ss + off % ss);
        assert_true((off % ss) + p.len <= ss); /* never crosses a stripe unit */
        if (p.obj_off + p.len > top[p.stripe])
            top[p.stripe] = p.obj_off + p.len;
        off += p.len;
    }
    for (uint32_t i = 0; i < count; i++)
        assert_int_equal(top[i], pfs_object_size(&l, i, size));
}

static void mapping(void **state)
{
    (void)state;
    check_map(1, 4096, 10000, 0);
    check_map(3, 4096, 3 * 4096 * 5 + 123, 0);
    check_map(4, 8192, 100003, 3000);
    check_map(7, MIB, 100 * MIB, 0);
    check_map(32, 65536, 32 * 65536 * 2 + 1, 0);
    /* an unaligned piece in the middle of a unit */
    struct pfs_layout l = {.stripe_size = MIB, .count = 4, .servers = {2, 3, 0, 1}};
    struct pfs_piece p = pfs_map(&l, 5 * MIB + 100, 10 * MIB, 0);
    assert_int_equal(p.stripe, 1);
    assert_int_equal(p.obj_off, MIB + 100);
    assert_int_equal(p.len, MIB - 100);
}

static void codec(void **state)
{
    (void)state;
    static uint8_t buf[PFS_MSG_MAX];
    static struct pfs_msg m, d;
    memset(&m, 0, sizeof(m));
    m.op = PFS_OP_WRITE;
    m.cls = 1;
    m.flags = PFS_F_TRUNC | PFS_F_EXCL;
    m.err = -5;
    m.proc = 7;
    m.wid = -1;
    m.rid = 0x1122334455667788ull;
    m.fid = 42;
    m.off = 1ull << 40;
    m.len = 99;
    m.attr.mtime_ns = -1;
    m.layout.stripe_size = MIB;
    m.layout.count = PFS_STRIPES_MAX;
    for (int i = 0; i < PFS_STRIPES_MAX; i++)
        m.layout.servers[i] = (uint32_t)i * 3;
    memset(m.client, 'c', sizeof(m.client) - 1);
    memset(m.path, 'p', sizeof(m.path) - 1);
    m.path[0] = '/';
    snprintf(m.path2, sizeof(m.path2), "/x");
    static uint8_t data[PFS_IO_MAX];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 7);
    m.data = data;
    m.dlen = sizeof(data);
    size_t n = pfs_msg_encode(&m, buf, sizeof(buf));
    assert_true(n > PFS_IO_MAX && n <= PFS_MSG_MAX);
    assert_int_equal(pfs_msg_decode(buf, n, &d), 0);
    assert_int_equal(d.rid, m.rid);
    assert_int_equal(d.err, -5);
    assert_int_equal(d.wid, -1);
    assert_int_equal(d.attr.mtime_ns, -1);
    assert_int_equal(d.layout.count, PFS_STRIPES_MAX);
    assert_int_equal(d.layout.servers[31], 93);
    assert_string_equal(d.client, m.client);
    assert_string_equal(d.path, m.path);
    assert_string_equal(d.path2, "/x");
    assert_int_equal(d.dlen, sizeof(data));
    assert_memory_equal(d.data, data, sizeof(data));
    /* every truncation is refused, and so is a byte too many */
    for (size_t k = 0; k < n; k += (k < 4096 ? 1 : 65536))
        assert_int_equal(pfs_msg_decode(buf, k, &d), -1);
    assert_int_equal(pfs_msg_decode(buf, n + 1, &d), -1);
    /* the encoder refuses a buffer too small */
    assert_int_equal(pfs_msg_encode(&m, buf, n - 1), 0);
    /* bad magic, unknown op, class out of range, too many stripes */
    m.dlen = 0;
    n = pfs_msg_encode(&m, buf, sizeof(buf));
    buf[0] = 'X';
    assert_int_equal(pfs_msg_decode(buf, n, &d), -1);
    m.op = 999;
    n = pfs_msg_encode(&m, buf, sizeof(buf));
    assert_int_equal(pfs_msg_decode(buf, n, &d), -1);
    m.op = PFS_OP_READ;
    m.cls = PFS_CLASS_MAX;
    n = pfs_msg_encode(&m, buf, sizeof(buf));
    assert_int_equal(pfs_msg_decode(buf, n, &d), -1);
    m.cls = 0;
    n = pfs_msg_encode(&m, buf, sizeof(buf));
    assert_int_equal(pfs_msg_decode(buf, n, &d), 0);
    /* layout count field at a known place: after 4 + 6*4 + 5*8 + attr (8 + 4*4 + 3*8) + 8 */
    size_t at = 4 + 24 + 40 + 8 + 16 + 24 + 8;
    buf[at] = PFS_STRIPES_MAX + 1;
    assert_int_equal(pfs_msg_decode(buf, n, &d), -1);
}

static void paths(void **state)
{
    (void)state;
    assert_true(pfs_path_ok("/"));
    assert_true(pfs_path_ok("/a"));
    assert_true(pfs_path_ok("/a/b.c/..d"));
    assert_false(pfs_path_ok(""));
    assert_false(pfs_path_ok("a/b"));
    assert_false(pfs_path_ok("/a/"));
    assert_false(pfs_path_ok("//a"));
    assert_false(pfs_path_ok("/a//b"));
    assert_false(pfs_path_ok("/a/./b"));
    assert_false(pfs_path_ok("/a/../b"));
    assert_false(pfs_path_ok("/.."));
    char longname[300];
    memset(longname, 'x', sizeof(longname));
    longname[0] = '/';
    longname[299] = '\0';
    assert_false(pfs_path_ok(longname)); /* a component over 255 bytes */
}

static void dirents(void **state)
{
    (void)state;
    uint8_t buf[200];
    size_t used = 0;
    struct pfs_dirent e = {.type = PFS_T_FILE, .mode = 0644, .size = 12345, .mtime_ns = 7};
    int n = 0;
    for (;; n++) {
        snprintf(e.name, sizeof(e.name), "file%d", n);
        if (pfs_dirent_put(buf, sizeof(buf), &used, &e) != 0)
            break;
    }
    assert_true(n > 3 && used <= sizeof(buf));
    size_t pos = 0;
    struct pfs_dirent g;
    for (int i = 0; i < n; i++) {
        assert_int_equal(pfs_dirent_next(buf, used, &pos, &g), 1);
        char want[32];
        snprintf(want, sizeof(want), "file%d", i);
        assert_string_equal(g.name, want);
        assert_int_equal(g.size, 12345);
    }
    assert_int_equal(pfs_dirent_next(buf, used, &pos, &g), 0);
    pos = 0;
    assert_int_equal(pfs_dirent_next(buf, used - 1, &pos, &g), 1);
    for (int i = 1; i < n - 1; i++)
        pfs_dirent_next(buf, used - 1, &pos, &g);
    assert_int_equal(pfs_dirent_next(buf, used - 1, &pos, &g), -1); /* cut short */
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(policy),  cmocka_unit_test(placement_even), cmocka_unit_test(valid),
    cmocka_unit_test(mapping), cmocka_unit_test(codec),          cmocka_unit_test(paths),
    cmocka_unit_test(dirents),
};
PIO_UNIT_MAIN(tests)
