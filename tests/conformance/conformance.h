/* conformance.h - the transport conformance suite: every check once, every transport.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * nng's NUTS model (src/testing/nuts.h, NUTS_DECLARE_TRAN_TESTS): each check
 * in conformance.c is written once against const struct pio_transport_ops *
 * (transport/transport.h) and knows nothing of any backend. A
 * transport's test file instantiates the whole suite with one line:
 *
 *     #include "tests/conformance/conformance.h"
 *     PIO_CONFORMANCE_TESTS("tcp", PIO_TP_CAP_IPV6 | PIO_TP_CAP_FD | PIO_TP_CAP_PACE)
 *
 * which expands to the cmocka case array and PIO_UNIT_MAIN (tests/lib/unit.h),
 * so tests/run lists the cases and runs each in its own process under a
 * timeout. The case's setup looks the transport up in the registry by name
 * (a missing or incomplete backend fails every case with a message). The
 * second argument is what the suite expects of the transport
 * (PIO_TP_CAP_*, transport.h): ops_complete checks that the ops table says
 * the same, and the checks a capability changes expect, without it, the
 * contract's refusal (ipv6_loopback: PIO_EADDR for every IPv6 address; fd:
 * -1). No check is skipped for want of a capability.
 *
 * The checks assume an IP stream transport whose addresses are numeric IPv4
 * or IPv6 text ("a.b.c.d", no host names) and whose addrs op reports
 * "a.b.c.d:port": they listen on 127.0.0.1 and connect from chosen local
 * addresses 127.64.0.1 ... Each case runs in a network namespace of its own
 * (made by the setup, once per process: unshare(CLONE_NEWNET), so it needs
 * root, and fails every case with a message without it), in which lo is up
 * and carries those addresses as /32s, as a transport that binds only an
 * interface's address (UCX) needs. Nothing leaves the namespace, and runs at
 * the same time (a sanitizer build's suite) never share an address or port.
 * Behaviour peculiar to one transport is tested beside that transport.
 * Thread-safety: the cases start their own threads; the suite has no state.
 */
#ifndef PIO_TEST_CONFORMANCE_H
#define PIO_TEST_CONFORMANCE_H

#include "tests/lib/unit.h"
#include "transport/transport.h"

/* Every case of the suite, in run order. X(name): the cmocka case "name"
 * runs pio_conf_name(state). */
#define PIO_CONFORMANCE_CASES(X)                                                                   \
    X(ops_complete)                                                                                \
    X(listen_connect_addrs)                                                                        \
    X(connect_any_local)                                                                           \
    X(ipv6_loopback)                                                                               \
    X(sendv_empty)                                                                                 \
    X(sendv_many_iovecs)                                                                           \
    X(sendv_16_iovecs)                                                                             \
    X(sendv_64mib_odd_reads)                                                                       \
    X(recv_exact_across_partial_writes)                                                            \
    X(recv_exact_frames)                                                                           \
    X(both_directions_at_once)                                                                     \
    X(peer_close_recv_closed)                                                                      \
    X(peer_close_mid_frame)                                                                        \
    X(peer_close_sendv_closed)                                                                     \
    X(shutdown_unblocks_recv)                                                                      \
    X(shutdown_unblocks_sendv)                                                                     \
    X(listener_shutdown_unblocks_accept)                                                           \
    X(accept_timeout)                                                                              \
    X(connect_refused)                                                                             \
    X(connect_timeout_blackhole)                                                                   \
    X(listen_addr_in_use)                                                                          \
    X(bad_address_strings)                                                                         \
    X(bad_ports)                                                                                   \
    X(src_port_in_range)                                                                           \
    X(src_port_range_distinct)                                                                     \
    X(src_port_range_exhausted)                                                                    \
    X(pace_limits_rate)

#define PIO_CONF_DECLARE_(name) void pio_conf_##name(void **state);
PIO_CONFORMANCE_CASES(PIO_CONF_DECLARE_)
#undef PIO_CONF_DECLARE_

/* What one instantiation tests: the transport's registered name and the
 * capabilities (PIO_TP_CAP_*) the suite expects it to declare. */
struct pio_conf_spec {
    const char *name;
    unsigned caps;
};

/* Case setup: *state holds the struct pio_conf_spec on entry (the case's
 * initial_state) and the suite's context on return. Teardown frees it. */
int pio_conf_setup(void **state);
int pio_conf_teardown(void **state);

#define PIO_CONF_ENTRY_(spec, name)                                                                \
    {#name, pio_conf_##name, pio_conf_setup, pio_conf_teardown, (void *)(spec)},
#define PIO_CONF_ENTRY_NAMED_(name) PIO_CONF_ENTRY_(&pio_conformance_spec_, name)

/* PIO_CONFORMANCE_TESTS(name, caps) - the whole suite for the transport
 * registered as name (a string literal) that declares exactly caps
 * (PIO_TP_CAP_* or 0), with main(). Use once per test file. */
#define PIO_CONFORMANCE_TESTS(name, caps)                                                          \
    static struct pio_conf_spec pio_conformance_spec_ = {name, caps};                              \
    static const struct CMUnitTest pio_conformance_tests_[] = {                                    \
        PIO_CONFORMANCE_CASES(PIO_CONF_ENTRY_NAMED_)};                                             \
    PIO_UNIT_MAIN(pio_conformance_tests_)

#endif
