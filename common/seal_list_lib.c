/* seal_list_lib.c - the AEAD backend of libpio (its direct lanes):
 * libsodium, which libpio links anyway. The piods' list is
 * seal_list_piod.c; both produce the same bytes (test_seal.c).
 * SPDX-License-Identifier: BSD-3-Clause */
#include "seal_be.h"

#include <stddef.h>

const struct pio_seal_backend *const pio_seal_backends[] = {&pio_seal_sodium, NULL};
