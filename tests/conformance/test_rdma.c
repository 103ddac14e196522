/* test_rdma.c - the transport conformance suite over rdma (UCX streams).
 * SPDX-License-Identifier: BSD-3-Clause
 * UCX picks shared memory or tcp for the bytes (UCX_TLS from the
 * environment); the addresses are those of UCX's connection manager. IPv4
 * only (UCX 1.13 cannot carry IPv6, see transport/rdma/stream.c) and
 * no descriptor: the suite checks the refusals instead. */
#include "conformance.h"

PIO_CONFORMANCE_TESTS("rdma", 0)
