/* test_error.c - every status code has distinct words and a name; errno maps.
 * SPDX-License-Identifier: BSD-3-Clause */
#include "pio.h"
#include "common/err.h"
#include "tests/lib/unit.h"

#include <errno.h>

static void test_every_code_has_words(void **state)
{
    (void)state;
    for (int i = 0; i < PIO_ERROR_COUNT_; i++) {
        const char *w = PIO_Strerror(i);
        assert_non_null(w);
        assert_true(strlen(w) > 3);
        assert_string_not_equal(w, "unknown PIO error");
        for (int j = 0; j < i; j++)
            assert_string_not_equal(w, PIO_Strerror(j));
    }
}

static void test_names_match_codes(void **state)
{
    (void)state;
    assert_int_equal(PIO_OK, 0);
    assert_string_equal(PIO_Errname(PIO_OK), "PIO_OK");
    assert_string_equal(PIO_Errname(PIO_ETIMEDOUT), "PIO_ETIMEDOUT");
    assert_string_equal(PIO_Errname(PIO_EINTERNAL), "PIO_EINTERNAL");
    for (int i = 1; i < PIO_ERROR_COUNT_; i++)
        assert_memory_equal(PIO_Errname(i), "PIO_E", 5);
}

static void test_out_of_range(void **state)
{
    (void)state;
    assert_string_equal(PIO_Strerror(-1), "unknown PIO error");
    assert_string_equal(PIO_Strerror(PIO_ERROR_COUNT_), "unknown PIO error");
    assert_string_equal(PIO_Strerror(1 << 30), "unknown PIO error");
    assert_string_equal(PIO_Errname(-7), "PIO_E?");
}

static void test_errno_conversion(void **state)
{
    (void)state;
    assert_int_equal(pio_from_errno(0), PIO_OK);
    assert_int_equal(pio_from_errno(ETIMEDOUT), PIO_ETIMEDOUT);
    assert_int_equal(pio_from_errno(ENOMEM), PIO_ENOMEM);
    assert_int_equal(pio_from_errno(ECONNREFUSED), PIO_EREFUSED);
    assert_int_equal(pio_from_errno(EPIPE), PIO_ECLOSED);
    assert_int_equal(pio_from_errno(ENETUNREACH), PIO_ELINK);
    assert_int_equal(pio_from_errno(EADDRINUSE), PIO_EADDR);
    assert_int_equal(pio_from_errno(EACCES), PIO_EPERM);
    assert_int_equal(pio_from_errno(ENOENT), PIO_ENOENT);
    assert_int_equal(pio_from_errno(EXDEV), PIO_EIO);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_every_code_has_words),
    cmocka_unit_test(test_names_match_codes),
    cmocka_unit_test(test_out_of_range),
    cmocka_unit_test(test_errno_conversion),
};
PIO_UNIT_MAIN(tests)
