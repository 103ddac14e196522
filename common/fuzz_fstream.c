/* fuzz_fstream.c - libFuzzer target for the frame stream (fstream.h) and
 * the frame decoder behind it.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The input is what a peer writes on a stream socket (the process plane or
 * the express lane). Its bytes go into one end of a socketpair in pieces
 * whose sizes follow a small generator seeded by the input's length, and
 * pio_fin_fill / pio_fin_next take them out at the other end, as piod does.
 * Properties: every frame handed out lies inside what was written, in order
 * and without gaps, and its length is the header's; the decoder accepts or
 * refuses it without reading out of bounds; once the stream says EPROTO or
 * EVERSION nothing more is read (the piod closes such a stream). A broken
 * property ends in __builtin_trap(). `make fuzz`.
 */
#include "fstream.h"
#include "pio.h"
#include "wire/wire.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define FZ_MAX (1u << 20) /* the largest frame the stream takes here */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct pio_frame f;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
        __builtin_trap();
    struct pio_fin in;
    pio_fin_init(&in, FZ_MAX);
    size_t sent = 0, taken = 0;
    uint32_t rnd = (uint32_t)size * 2654435761u + 1;
    int broken = 0;
    while (!broken) {
        if (sent < size) {
            rnd = rnd * 1103515245u + 12345u;
            size_t piece = 1 + (rnd >> 16) % 4096;
            if (piece > size - sent)
                piece = size - sent;
            ssize_t n = send(sv[0], data + sent, piece, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n > 0)
                sent += (size_t)n;
            else if (errno != EAGAIN)
                __builtin_trap();
        }
        int rc = pio_fin_fill(&in, sv[1]);
        if (rc == PIO_EAGAIN && sent == size)
            break;
        if (rc != PIO_OK && rc != PIO_EAGAIN)
            __builtin_trap();
        const uint8_t *fr;
        size_t len;
        while ((rc = pio_fin_next(&in, &fr, &len, NULL)) == PIO_OK) {
            if (len < PIO_WIRE_HDR || taken + len > sent || memcmp(fr, data + taken, len) != 0)
                __builtin_trap();
            taken += len;
            size_t used = 0;
            if (pio_wire_decode(fr, len, &f, &used) == PIO_OK && used != len)
                __builtin_trap();
        }
        if (rc == PIO_EPROTO || rc == PIO_EVERSION)
            broken = 1;
        else if (rc != PIO_EAGAIN)
            __builtin_trap();
    }
    pio_fin_fini(&in);
    close(sv[0]);
    close(sv[1]);
    return 0;
}
