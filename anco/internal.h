/* internal.h - anco's hooks for its own tests (not part of anco.h).
 * SPDX-License-Identifier: BSD-3-Clause */
#ifndef ANCO_INTERNAL_H
#define ANCO_INTERNAL_H

#include "anco.h"

#include <stdint.h>

/* anco_test_replace - give up the entry of this process that holds block
 * `from` of f and fill it with block `to` of f, through the real give-up
 * and acquire paths, into the same entry: to != from is published race 1
 * (replaced by another block), to == from race 2 (the same block again,
 * with a new token). Returns PIO_OK, PIO_EINVAL (block from not cached
 * here), PIO_EIO. Thread-safe (the cache lock). */
int anco_test_replace(anco_file *f, uint64_t from, uint64_t to);

#endif
