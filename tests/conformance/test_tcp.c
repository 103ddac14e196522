/* test_tcp.c - the transport conformance suite over tcp.
 * SPDX-License-Identifier: BSD-3-Clause */
#include "tests/conformance/conformance.h"

PIO_CONFORMANCE_TESTS("tcp")
