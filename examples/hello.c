/* hello.c - the smallest PIO program: one process sends a greeting, another receives it.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Two applications, "hello-send" and "hello-recv", one process each, joined to
 * the piods of two systems (or to one piod: PIO finds the partner wherever it
 * runs). Run the receiver and the sender in either order:
 *
 *     PIO_SOCKET=/run/pio/piod.sock hello recv     # on system B
 *     PIO_SOCKET=/run/pio/piod.sock hello send     # on system A
 *
 * Build: cc -o hello hello.c $(pkg-config --cflags --libs pio)
 * Exit status: 0 when the greeting went through, 1 otherwise.
 */
#include <pio.h>

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "send") != 0 && strcmp(argv[1], "recv") != 0)) {
        fprintf(stderr, "usage: hello send|recv\n");
        return 2;
    }
    int sender = strcmp(argv[1], "send") == 0;
    const char *me = sender ? "hello-send" : "hello-recv";
    const char *other = sender ? "hello-recv" : "hello-send";
    int partner, rc;

    /* join the local piod as process 0 of a one-process application */
    rc = PIO_Init(me, 0, 1);
    if (rc != PIO_OK) {
        fprintf(stderr, "%s: PIO_Init: %s\n", me, PIO_Strerror(rc));
        return 1;
    }
    /* waits (up to $PIO_PARTNER_TIMEOUT s) for the other application to join */
    rc = PIO_Setpartner(other, &partner);
    if (rc != PIO_OK) {
        fprintf(stderr, "%s: PIO_Setpartner(%s): %s\n", me, other, PIO_Strerror(rc));
        PIO_Exit();
        return 1;
    }
    if (sender) {
        const char msg[] = "hello from PIO";
        /* to process 0 of the partner, tag 0, any channel; returns once the
         * receiving process has the message (PIO_SYNC) */
        rc = PIO_Send(partner, 0, 0, PIO_DYNAMIC, msg, PIO_CHAR, sizeof(msg), PIO_SYNC);
        if (rc == PIO_OK)
            printf("%s: sent \"%s\"\n", me, msg);
    } else {
        char buf[64] = {0};
        PIO_Status st;
        /* from any process of the partner, tag 0, waiting up to 30 s */
        rc = PIO_Recv(partner, PIO_ANY_PROCESS, 0, buf, PIO_CHAR, sizeof(buf) - 1, 30000,
                      PIO_BLOCKING, &st);
        if (rc == PIO_OK)
            printf("%s: received \"%s\" (%zu bytes) from process %d\n", me, buf, st.bytes,
                   st.source);
    }
    if (rc != PIO_OK)
        fprintf(stderr, "%s: %s: %s\n", me, sender ? "PIO_Send" : "PIO_Recv", PIO_Strerror(rc));
    PIO_Exit();
    return rc == PIO_OK ? 0 : 1;
}
