/* parse.h - numbers on command lines and in the environment, one parser
 * for every program and library of the project (private to the build, not
 * installed). Thread-safe.
 * SPDX-License-Identifier: BSD-3-Clause */
#ifndef PIO_PARSE_H
#define PIO_PARSE_H

#include <stdint.h>

/* pio_parse_int - s as a decimal integer in [lo, hi] into *out: 0, or -1
 * when it is not one. pio_parse_bytes - s as bytes with an optional K, M or
 * G (powers of 1024): 0, or -1. */
int pio_parse_int(const char *s, long lo, long hi, long *out);
int pio_parse_bytes(const char *s, uint64_t *out);

#endif
