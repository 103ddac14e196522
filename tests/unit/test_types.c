/* test_types.c - datatype sizes, names, compatibility and byte-order conversion.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The expected values are written out here independently of types.c: the
 * compatibility groups as a list, byte swapping by hand (reverse each group of
 * bytes). Conversion is checked for every datatype in both sender byte
 * orders, out of place, in place and at unaligned addresses.
 */
#include "common/types.h"
#include "pio.h"
#include "tests/lib/unit.h"

struct tt {
    int code;
    const char *name;
    size_t size;
    size_t unit;
    int group; /* types with the same group are the same representation */
};

static const struct tt all[] = {
    {PIO_BYTE, "PIO_BYTE", 1, 1, 0},
    {PIO_CHAR, "PIO_CHAR", 1, 1, 1},
    {PIO_CHARACTER, "PIO_CHARACTER", 1, 1, 1},
    {PIO_INT8, "PIO_INT8", 1, 1, 2},
    {PIO_UINT8, "PIO_UINT8", 1, 1, 3},
    {PIO_INT16, "PIO_INT16", 2, 2, 4},
    {PIO_UINT16, "PIO_UINT16", 2, 2, 5},
    {PIO_INT32, "PIO_INT32", 4, 4, 6},
    {PIO_INTEGER, "PIO_INTEGER", 4, 4, 6},
    {PIO_UINT32, "PIO_UINT32", 4, 4, 7},
    {PIO_INT64, "PIO_INT64", 8, 8, 8},
    {PIO_UINT64, "PIO_UINT64", 8, 8, 9},
    {PIO_FLOAT, "PIO_FLOAT", 4, 4, 10},
    {PIO_REAL, "PIO_REAL", 4, 4, 10},
    {PIO_DOUBLE, "PIO_DOUBLE", 8, 8, 11},
    {PIO_DOUBLE_PRECISION, "PIO_DOUBLE_PRECISION", 8, 8, 11},
    {PIO_COMPLEX, "PIO_COMPLEX", 8, 4, 12},
    {PIO_DOUBLE_COMPLEX, "PIO_DOUBLE_COMPLEX", 16, 8, 13},
    {PIO_LOGICAL, "PIO_LOGICAL", 4, 4, 14},
};
#define NALL (sizeof all / sizeof all[0])

static void test_sizes_and_names(void **state)
{
    (void)state;
    size_t listed = 0;
#define COUNT_(name, code, bytes) listed++;
    PIO_DATATYPES(COUNT_)
#undef COUNT_
    assert_int_equal(listed, NALL);
    for (size_t i = 0; i < NALL; i++) {
        assert_true(pio_type_known(all[i].code));
        assert_int_equal(pio_type_size(all[i].code), all[i].size);
        assert_string_equal(pio_type_name(all[i].code), all[i].name);
        assert_int_equal(pio_type_swap_unit(all[i].code), all[i].unit);
    }
    int unknown[] = {0, -1, 20, 255, 1 << 20, -PIO_BYTE};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        assert_false(pio_type_known(unknown[i]));
        assert_int_equal(pio_type_size(unknown[i]), 0);
        assert_string_equal(pio_type_name(unknown[i]), "?");
    }
}

static void test_compatibility_matrix(void **state)
{
    (void)state;
    for (size_t s = 0; s < NALL; s++) {
        for (size_t r = 0; r < NALL; r++) {
            int want = all[s].group == all[r].group || all[r].code == PIO_BYTE;
            if (pio_type_compatible(all[s].code, all[r].code) != want)
                fail_msg("sent %s received as %s: want %d", all[s].name, all[r].name, want);
        }
    }
    /* the cases a user meets */
    assert_true(pio_type_compatible(PIO_INT32, PIO_INTEGER));
    assert_true(pio_type_compatible(PIO_INTEGER, PIO_INT32));
    assert_true(pio_type_compatible(PIO_REAL, PIO_FLOAT));
    assert_true(pio_type_compatible(PIO_DOUBLE, PIO_DOUBLE_PRECISION));
    assert_true(pio_type_compatible(PIO_CHARACTER, PIO_CHAR));
    assert_true(pio_type_compatible(PIO_DOUBLE_COMPLEX, PIO_BYTE));
    assert_false(pio_type_compatible(PIO_INT32, PIO_FLOAT));
    assert_false(pio_type_compatible(PIO_INT32, PIO_UINT32));
    assert_false(pio_type_compatible(PIO_LOGICAL, PIO_INTEGER));
    assert_false(pio_type_compatible(PIO_COMPLEX, PIO_DOUBLE));
    assert_false(pio_type_compatible(PIO_BYTE, PIO_UINT8)); /* raw bytes are not typed */
    assert_false(pio_type_compatible(0, PIO_BYTE));
    assert_false(pio_type_compatible(PIO_BYTE, 99));
}

static void test_host_order(void **state)
{
    (void)state;
    const uint32_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    assert_int_equal(pio_host_bigendian(), first == 0);
}

/* Known values of type t, in host order (memcpy: buf has no alignment). */
static void fill_values(int t, unsigned char *buf, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        unsigned char *p = buf + i * pio_type_size(t);
        long k = (long)i - (long)count / 2;
        union {
            int16_t i16;
            uint16_t u16;
            int32_t i32;
            uint32_t u32;
            int64_t i64;
            uint64_t u64;
            float f[2];
            double d[2];
            unsigned char b;
        } v;
        switch (t) {
        case PIO_INT16: v.i16 = (int16_t)(k * 257); break;
        case PIO_UINT16: v.u16 = (uint16_t)(0xA5C3u + i * 7); break;
        case PIO_INT32:
        case PIO_INTEGER: v.i32 = (int32_t)(k * 8388617L); break;
        case PIO_UINT32: v.u32 = 0xDEADBEEFu ^ (uint32_t)(i * 2654435761u); break;
        case PIO_INT64: v.i64 = (int64_t)k * 1000000000039LL; break;
        case PIO_UINT64: v.u64 = 0x0102030405060708ull * (i + 1); break;
        case PIO_FLOAT:
        case PIO_REAL: v.f[0] = (float)k * 1.5f - 0.125f; break;
        case PIO_DOUBLE:
        case PIO_DOUBLE_PRECISION: v.d[0] = (double)k * 3.0e-7 + 1.0e300 * (i == 1); break;
        case PIO_COMPLEX:
            v.f[0] = (float)k + 0.5f;
            v.f[1] = -(float)k * 2.25f;
            break;
        case PIO_DOUBLE_COMPLEX:
            v.d[0] = (double)k / 3.0;
            v.d[1] = -(double)k * 1.0e-3;
            break;
        case PIO_LOGICAL: v.i32 = (int32_t)(i % 3 == 0); break;
        default: v.b = (unsigned char)(i * 31 + 7); break; /* byte-sized types */
        }
        memcpy(p, &v, pio_type_size(t));
    }
}

/* The other byte order, by hand: reverse each group of unit bytes. */
static void swap_by_hand(unsigned char *buf, size_t n, size_t unit)
{
    for (size_t i = 0; i < n; i += unit)
        for (size_t a = 0; a < unit / 2; a++) {
            unsigned char x = buf[i + a];
            buf[i + a] = buf[i + unit - 1 - a];
            buf[i + unit - 1 - a] = x;
        }
}

/* n elements of t as a sender of byte order sender_big would lay them out. */
static void as_sent(int t, unsigned char *wire, const unsigned char *orig, size_t n, int sender_big)
{
    memcpy(wire, orig, n);
    if (sender_big != pio_host_bigendian())
        swap_by_hand(wire, n, pio_type_swap_unit(t));
}

#define COUNT 257 /* odd, so no loop can hide a tail */

static void test_convert_every_type_both_orders(void **state)
{
    (void)state;
    static unsigned char orig[COUNT * 16], wire[COUNT * 16], out[COUNT * 16 + 1];
    for (size_t i = 0; i < NALL; i++) {
        int t = all[i].code;
        size_t n = COUNT * pio_type_size(t), unit = pio_type_swap_unit(t);
        fill_values(t, orig, COUNT);
        for (int big = 0; big <= 1; big++) {
            as_sent(t, wire, orig, n, big);
            if (big != pio_host_bigendian() && unit > 1 && memcmp(wire, orig, n) == 0)
                fail_msg("%s: the swapped buffer equals the original", all[i].name);
            memset(out, 0xEE, sizeof out);
            assert_int_equal(pio_convert(out, wire, n, unit, big), 0);
            if (memcmp(out, orig, n) != 0)
                fail_msg("%s sent %s-endian: converted values differ", all[i].name,
                         big ? "big" : "little");
            assert_int_equal(out[n], 0xEE); /* nothing written past n */
        }
    }
    /* A typed look at two of them, as a receiver would read them. */
    float f[4] = {1.5f, -2.0f, 3.25f, 0.0f}, g[4];
    unsigned char w[sizeof f];
    as_sent(PIO_COMPLEX, w, (unsigned char *)f, sizeof f, !pio_host_bigendian());
    assert_int_equal(pio_convert(g, w, sizeof f, 4, !pio_host_bigendian()), 0);
    for (int k = 0; k < 4; k++)
        assert_true(g[k] == f[k]);
}

static void test_convert_in_place(void **state)
{
    (void)state;
    static unsigned char orig[COUNT * 16], buf[COUNT * 16];
    int other = !pio_host_bigendian();
    for (size_t i = 0; i < NALL; i++) {
        int t = all[i].code;
        size_t n = COUNT * pio_type_size(t);
        fill_values(t, orig, COUNT);
        for (int big = 0; big <= 1; big++) {
            as_sent(t, buf, orig, n, big);
            assert_int_equal(pio_convert(buf, buf, n, pio_type_swap_unit(t), big), 0);
            assert_memory_equal(buf, orig, n);
        }
    }
    /* units the datatypes do not use still swap correctly, in place too */
    size_t units[] = {3, 16};
    for (size_t u = 0; u < 2; u++) {
        size_t n = 48 * units[u];
        for (size_t k = 0; k < n; k++)
            orig[k] = (unsigned char)(k * 13 + 1);
        memcpy(buf, orig, n);
        swap_by_hand(buf, n, units[u]);
        assert_int_equal(pio_convert(buf, buf, n, units[u], other), 0);
        assert_memory_equal(buf, orig, n);
    }
}

static void test_convert_unaligned_and_overlapping(void **state)
{
    (void)state;
    static unsigned char orig[8 * 1024], wire[8 * 1024 + 16], out[8 * 1024 + 16];
    int other = !pio_host_bigendian();
    size_t units[] = {2, 4, 8};
    for (size_t u = 0; u < 3; u++) {
        for (size_t k = 0; k < sizeof orig; k++)
            orig[k] = (unsigned char)(k * 7 + u);
        for (size_t so = 0; so < 8; so++) {
            size_t doff = (so * 3 + 1) % 8;
            memcpy(wire + so, orig, sizeof orig);
            swap_by_hand(wire + so, sizeof orig, units[u]);
            assert_int_equal(pio_convert(out + doff, wire + so, sizeof orig, units[u], other), 0);
            assert_memory_equal(out + doff, orig, sizeof orig);
        }
        /* dst overlaps src a few bytes later: the result is still right */
        memcpy(wire, orig, 4096);
        swap_by_hand(wire, 4096, units[u]);
        assert_int_equal(pio_convert(wire + 3, wire, 4096, units[u], other), 0);
        assert_memory_equal(wire + 3, orig, 4096);
    }
}

static void test_convert_same_order_copies(void **state)
{
    (void)state;
    unsigned char src[64], dst[64];
    for (int k = 0; k < 64; k++)
        src[k] = (unsigned char)k;
    int host = pio_host_bigendian();
    assert_int_equal(pio_convert(dst, src, 64, 8, host), 0);
    assert_memory_equal(dst, src, 64);
    assert_int_equal(pio_convert(src, src, 64, 4, host), 0); /* nothing to do */
    for (int k = 0; k < 64; k++)
        assert_int_equal(src[k], k);
    /* unit 1 never swaps, whatever the order */
    assert_int_equal(pio_convert(dst, src, 64, 1, !host), 0);
    assert_memory_equal(dst, src, 64);
    /* any non-zero sender_big means big-endian */
    memcpy(dst, src, 64);
    assert_int_equal(pio_convert(dst, dst, 64, 2, host ? 7 : 0), 0);
    assert_memory_equal(dst, src, 64);
}

static void test_convert_unit_mismatch(void **state)
{
    (void)state;
    unsigned char a[64] = {1, 2, 3}, b[64] = {0};
    assert_int_equal(pio_convert(b, a, 10, 4, 1), -1);
    assert_int_equal(pio_convert(b, a, 10, 4, 0), -1);
    assert_int_equal(pio_convert(b, a, 7, 2, !pio_host_bigendian()), -1);
    assert_int_equal(pio_convert(b, a, 8, 0, 1), -1);
    assert_int_equal(b[0], 0); /* a refused conversion writes nothing */
    assert_int_equal(pio_convert(b, a, 0, 8, 1), 0);
    assert_int_equal(pio_convert(b, a, 16, 16, 1), 0);
}

/* A large buffer round-trips (swap twice is the identity). */
static void test_convert_large_buffer(void **state)
{
    (void)state;
    size_t count = 1 << 20;
    double *x = malloc(count * sizeof *x), *y = malloc(count * sizeof *y);
    assert_non_null(x);
    assert_non_null(y);
    for (size_t i = 0; i < count; i++)
        x[i] = (double)i * 0.5 - 7.0;
    int other = !pio_host_bigendian();
    assert_int_equal(pio_convert(y, x, count * sizeof *x, 8, other), 0);
    assert_int_equal(pio_convert(y, y, count * sizeof *x, 8, other), 0);
    assert_memory_equal(x, y, count * sizeof *x);
    free(x);
    free(y);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_sizes_and_names),
    cmocka_unit_test(test_compatibility_matrix),
    cmocka_unit_test(test_host_order),
    cmocka_unit_test(test_convert_every_type_both_orders),
    cmocka_unit_test(test_convert_in_place),
    cmocka_unit_test(test_convert_unaligned_and_overlapping),
    cmocka_unit_test(test_convert_same_order_copies),
    cmocka_unit_test(test_convert_unit_mismatch),
    cmocka_unit_test(test_convert_large_buffer),
};
PIO_UNIT_MAIN(tests)
