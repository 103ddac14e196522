/* stat.c - gas-stat: print a GAS dispatcher's counters (wire.h STATS).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 *   gas-stat [--socket PATH] [--reset] [--json] | --version
 * One line of key=value pairs (--json: one JSON object of them, numbers as
 * numbers): requests received from processes and their
 * bytes, pieces after the block/stripe split, requests sent to the I/O
 * servers, pieces merged away by the arrangement, and flushes by cause
 * (full, timer, sync). --reset zeroes them after printing (benchmarks).
 * It speaks the socket protocol itself: it is not a PIO application. */
#include "wire.h"
#include "cli.h"
#include "cli_json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int io_all(int fd, void *buf, size_t n, int rd)
{
    for (size_t done = 0; done < n;) {
        ssize_t k = rd ? read(fd, (char *)buf + done, n - done)
                       : write(fd, (const char *)buf + done, n - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        done += (size_t)k;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *path = getenv("GAS_SOCKET") ? getenv("GAS_SOCKET") : GAS_SOCKET_DEFAULT;
    int reset = 0, json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reset"))
            reset = 1;
        else if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--version"))
            return pio_cli_version("gas-stat");
        else if (!strcmp(argv[i], "--socket") && i + 1 < argc)
            path = argv[++i];
        else {
            fprintf(stderr, "usage: gas-stat [--socket PATH] [--reset] [--json] | --version\n");
            return 2;
        }
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path)) {
        fprintf(stderr, "gas-stat: socket path too long\n");
        return 1;
    }
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        fprintf(stderr, "gas-stat: cannot reach the GAS dispatcher at %s: %s\n", path,
                strerror(errno));
        return 1;
    }
    struct gas_hdr q = {.op = GAS_OP_STATS, .id = 1, .flags = reset ? GAS_F_RESET : 0}, r;
    uint8_t hdr[GAS_HDR_SIZE];
    gas_hdr_encode(&q, hdr);
    char *text = malloc(GAS_PAYLOAD_MAX + 1);
    if (!text || io_all(fd, hdr, sizeof(hdr), 0) != 0 || io_all(fd, hdr, sizeof(hdr), 1) != 0 ||
        gas_hdr_decode(hdr, &r) != 0 || r.op != GAS_OP_REPLY || io_all(fd, text, r.plen, 1) != 0) {
        fprintf(stderr, "gas-stat: no answer from the dispatcher at %s\n", path);
        return 1;
    }
    text[r.plen] = '\0';
    close(fd);
    int rc = 0;
    if (json && r.status == 0)
        rc = pio_cli_json_print("gas-stat", pio_cli_json_kv(text));
    else
        printf("%s\n", text);
    free(text);
    return r.status == 0 ? rc : 1;
}
