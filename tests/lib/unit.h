/* unit.h - the main() of every cmocka unit-test binary.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Each test binary lists its cases with PIO_UNIT_MAIN(tests). The runner
 * (tests/run) asks a binary for its cases with `--list` and then runs each one
 * in its own process under a timeout (`BINARY CASE`), as libuv's runner does,
 * so a hang is a named failure and a crash cannot hide in a neighbour.
 * Run with no argument, the binary runs every case in one process.
 */
#ifndef PIO_TEST_UNIT_H
#define PIO_TEST_UNIT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static inline int pio_unit_main(int argc, char **argv, const struct CMUnitTest *tests, size_t n,
                                const char *group)
{
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < n; i++)
            printf("%s\n", tests[i].name);
        return 0;
    }
    if (argc > 1) {
        for (size_t i = 0; i < n; i++)
            if (strcmp(tests[i].name, argv[1]) == 0)
                return _cmocka_run_group_tests(group, &tests[i], 1, NULL, NULL);
        fprintf(stderr, "%s: no test case named '%s'\n", argv[0], argv[1]);
        return 2;
    }
    return _cmocka_run_group_tests(group, tests, n, NULL, NULL);
}

#define PIO_UNIT_MAIN(tests)                                                                       \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        return pio_unit_main(argc, argv, tests, sizeof(tests) / sizeof(tests[0]), __FILE__);       \
    }

#endif
