/* test_sdnotify.c - the sd_notify datagram: path and abstract sockets, no socket, bad addresses.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The receiving end is a datagram socket of the test itself, standing in
 * for systemd; the daemons' own readiness is in tests/bats/packaging.bats.
 */
#include "pio.h"
#include "common/sdnotify.h"
#include "tests/lib/unit.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static char dir[64], path[128];

/* a bound datagram socket at addr ("@name": abstract) */
static int listen_at(const char *addr)
{
    struct sockaddr_un sa;
    size_t len = strlen(addr);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, addr, len);
    if (addr[0] == '@')
        sa.sun_path[0] = '\0';
    assert_int_equal(
        bind(fd, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)),
        0);
    return fd;
}

static void expect_datagram(int fd, const char *want)
{
    char buf[256];
    ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
    assert_true(n >= 0);
    buf[n] = '\0';
    assert_string_equal(buf, want);
}

static void make_dir(void)
{
    snprintf(dir, sizeof(dir), "/tmp/pio-test-sdn.XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/notify", dir);
}

static void test_no_socket_is_a_no_op(void **state)
{
    (void)state;
    unsetenv("NOTIFY_SOCKET");
    assert_int_equal(pio_sd_notify("READY=1"), PIO_OK);
    assert_int_equal(pio_sd_ready(), PIO_OK);
    setenv("NOTIFY_SOCKET", "", 1);
    assert_int_equal(pio_sd_notify("READY=1"), PIO_OK);
}

static void test_path_socket(void **state)
{
    (void)state;
    make_dir();
    int fd = listen_at(path);
    setenv("NOTIFY_SOCKET", path, 1);
    assert_int_equal(pio_sd_notify("STATUS=starting\nX=1"), PIO_OK);
    expect_datagram(fd, "STATUS=starting\nX=1");
    /* ready: READY=1, and the variable is gone for what starts later */
    assert_int_equal(pio_sd_ready(), PIO_OK);
    expect_datagram(fd, "READY=1");
    assert_null(getenv("NOTIFY_SOCKET"));
    close(fd);
    unlink(path);
    rmdir(dir);
}

static void test_abstract_socket(void **state)
{
    (void)state;
    char name[64];
    snprintf(name, sizeof(name), "@pio-test-sdn-%ld", (long)getpid());
    int fd = listen_at(name);
    setenv("NOTIFY_SOCKET", name, 1);
    assert_int_equal(pio_sd_ready(), PIO_OK);
    expect_datagram(fd, "READY=1");
    close(fd);
}

static void test_errors(void **state)
{
    (void)state;
    char lng[200];
    make_dir();
    /* nobody listens there: the socket call's error, not PIO_OK */
    setenv("NOTIFY_SOCKET", path, 1);
    assert_int_not_equal(pio_sd_notify("READY=1"), PIO_OK);
    /* neither a path nor an abstract name; too long for sun_path */
    setenv("NOTIFY_SOCKET", "run/notify", 1);
    assert_int_equal(pio_sd_notify("READY=1"), PIO_EINVAL);
    memset(lng, 'x', sizeof(lng) - 1);
    lng[0] = '/';
    lng[sizeof(lng) - 1] = '\0';
    setenv("NOTIFY_SOCKET", lng, 1);
    assert_int_equal(pio_sd_notify("READY=1"), PIO_EINVAL);
    unsetenv("NOTIFY_SOCKET");
    rmdir(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_no_socket_is_a_no_op),
    cmocka_unit_test(test_path_socket),
    cmocka_unit_test(test_abstract_socket),
    cmocka_unit_test(test_errors),
};
PIO_UNIT_MAIN(tests)
