/* seal_list_piod.c - the AEAD backends of the piods, fastest first: their
 * one registration point (seal_be.h). libpio has its own (seal_list_lib.c).
 * SPDX-License-Identifier: BSD-3-Clause */
#include "seal_be.h"

#include <stddef.h>

const struct pio_seal_backend *const pio_seal_backends[] = {&pio_seal_imb, &pio_seal_evp, NULL};
