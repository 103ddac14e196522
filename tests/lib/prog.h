/* prog.h - what the test programs under tests/prog share: failing loudly.
 * SPDX-License-Identifier: BSD-3-Clause
 * FAIL(...) prints "FAIL function:line: message" and exits 1 (the Bats
 * tests look for the FAIL line); CHECK(call) fails with the error's name and
 * words when call does not return PIO_OK. Test programs only: library code
 * never exits. */
#ifndef PIO_TESTS_PROG_H
#define PIO_TESTS_PROG_H

#include "pio.h"

#include <stdio.h>
#include <stdlib.h>

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        printf("FAIL %s:%d: ", __func__, __LINE__);                                                \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        fflush(stdout);                                                                            \
        exit(1);                                                                                   \
    } while (0)

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != PIO_OK)                                                                         \
            FAIL("%s -> %s (%s)", #call, PIO_Errname(rc_), PIO_Strerror(rc_));                     \
    } while (0)

#endif
