/* test_daemon.c - the locked pid file: created, refused while held, stale replaced, removed.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * piod_daemonize itself is left to the Bats tests of the piod command: a
 * unit test process must not detach. A second "piod" is a forked child,
 * which reports through its exit status.
 */
#include "pio.h"
#include "piod/daemon.h"
#include "tests/lib/unit.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char top[64];
static char pidpath[128];

static void make_dirs(void)
{
    snprintf(top, sizeof(top), "/tmp/pio-test-daemon.XXXXXX");
    assert_non_null(mkdtemp(top));
    snprintf(pidpath, sizeof(pidpath), "%s/run/pio/piod.pid", top); /* parents missing */
}

static void cleanup(void)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
    assert_int_equal(system(cmd), 0);
}

static long pid_in_file(void)
{
    long pid = -1;
    FILE *f = fopen(pidpath, "r");
    assert_non_null(f);
    assert_int_equal(fscanf(f, "%ld", &pid), 1);
    fclose(f);
    return pid;
}

static void write_pid(long pid)
{
    FILE *f = fopen(pidpath, "w");
    assert_non_null(f);
    fprintf(f, "%ld\n", pid);
    fclose(f);
}

/* The status a forked child's piod_pidfile_create returns. */
static int create_in_child(void)
{
    int status;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(piod_pidfile_create(pidpath));
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void test_pidfile_created(void **state)
{
    (void)state;
    struct stat st;
    make_dirs();
    assert_int_equal(piod_pidfile_create(pidpath), PIO_OK);
    assert_int_equal(pid_in_file(), (long)getpid());
    piod_pidfile_remove();
    assert_int_equal(stat(pidpath, &st), -1);
    piod_pidfile_remove(); /* a second remove does nothing */
    /* and the path is free again */
    assert_int_equal(piod_pidfile_create(pidpath), PIO_OK);
    piod_pidfile_remove();
    cleanup();
}

static void test_pidfile_busy(void **state)
{
    (void)state;
    make_dirs();
    assert_int_equal(piod_pidfile_create(pidpath), PIO_OK);
    assert_int_equal(create_in_child(), PIO_EBUSY);
    assert_int_equal(pid_in_file(), (long)getpid()); /* untouched */
    piod_pidfile_remove();
    assert_int_equal(create_in_child(), PIO_OK); /* free once we let go */
    cleanup();
}

static void test_pidfile_stale(void **state)
{
    (void)state;
    int status;
    make_dirs();
    /* a dead process' pid, in a file nobody locks */
    pid_t dead = fork();
    assert_true(dead >= 0);
    if (dead == 0)
        _exit(0);
    assert_int_equal(waitpid(dead, &status, 0), dead);
    assert_int_equal(piod_pidfile_create(pidpath), PIO_OK); /* makes the folders */
    piod_pidfile_remove();
    write_pid(dead);
    assert_int_equal(piod_pidfile_create(pidpath), PIO_OK);
    assert_int_equal(pid_in_file(), (long)getpid());
    piod_pidfile_remove();

    /* the lock decides, not the pid: a live pid in an unlocked file is stale too */
    write_pid(1);
    assert_int_equal(piod_pidfile_create(pidpath), PIO_OK);
    assert_int_equal(pid_in_file(), (long)getpid());
    piod_pidfile_remove();

    /* a longer stale content is cut, not kept after our pid */
    write_pid(1234567890);
    assert_int_equal(piod_pidfile_create(pidpath), PIO_OK);
    char buf[64] = "";
    FILE *f = fopen(pidpath, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof(buf), f));
    fclose(f);
    char want[32];
    snprintf(want, sizeof(want), "%ld\n", (long)getpid());
    assert_string_equal(buf, want);
    piod_pidfile_remove();
    cleanup();
}

static void test_pidfile_bad_path(void **state)
{
    (void)state;
    assert_int_equal(piod_pidfile_create(""), PIO_EINVAL);
    assert_int_not_equal(piod_pidfile_create("/proc/self/no/such/dir/piod.pid"), PIO_OK);
    piod_pidfile_remove(); /* nothing made: nothing to do */
}

/* Not daemonized, piod_daemon_ready is a no-op: it returns, sends nothing
 * and closes nothing. The child's fd 0 is one end of a socket pair (the
 * descriptor a ready socket left at 0 would hit); it reports in its exit
 * status (0 all well, 1 a descriptor was closed), and the parent finds no
 * byte on the other end. */
static void test_ready_without_daemon(void **state)
{
    (void)state;
    int sv[2], status;
    char byte;
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (dup2(sv[0], 0) != 0)
            _exit(3);
        piod_daemon_ready(0);
        piod_daemon_ready(3);
        if (fcntl(0, F_GETFD) == -1 || fcntl(sv[0], F_GETFD) == -1)
            _exit(1);
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    /* the child sent nothing on either descriptor of its end */
    close(sv[0]);
    assert_int_equal(recv(sv[1], &byte, 1, MSG_DONTWAIT), 0); /* EOF, no byte */
    close(sv[1]);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_pidfile_created),      cmocka_unit_test(test_pidfile_busy),
    cmocka_unit_test(test_pidfile_stale),        cmocka_unit_test(test_pidfile_bad_path),
    cmocka_unit_test(test_ready_without_daemon),
};
PIO_UNIT_MAIN(tests)
