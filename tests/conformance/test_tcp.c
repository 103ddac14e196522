/* test_tcp.c - the transport conformance suite over tcp.
 * SPDX-License-Identifier: BSD-3-Clause */
#include "conformance.h"

PIO_CONFORMANCE_TESTS("tcp", PIO_TP_CAP_IPV6 | PIO_TP_CAP_FD | PIO_TP_CAP_PACE)
