/* seal_list_lib.c - the AEAD backends of libpio (its direct lanes), fastest
 * first: intel-ipsec-mb's AES-GCM where it is built in, then libsodium,
 * which libpio links anyway (no libcrypto in libpio). The piods' list is
 * seal_list_piod.c; all produce the same bytes (test_seal.c).
 * SPDX-License-Identifier: BSD-3-Clause */
#include "seal_be.h"

#include <stddef.h>

const struct pio_seal_backend *const pio_seal_backends[] = {&pio_seal_imb, &pio_seal_sodium, NULL};
