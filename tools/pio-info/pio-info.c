/* pio-info.c - show a piod: host, channels, peers and applications (like fi_info).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Talks to the piod's control socket directly (one P_INFO_REQ, one P_INFO),
 * so it works without joining as a process. Output: a table for people,
 * --json for scripts, --count-up for scripts that wait for the bundle.
 * --rdma asks no piod: it starts the rdma backend here and prints what UCX
 * offers and would use to another process on this host (like ucx_info -d/-e).
 */
#include "cli.h"
#include "pio.h"
#include "cli_json.h"
#include "pio_svc.h"
#include "wire/wire.h"

#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *state_name(uint32_t s)
{
    return s == PIO_WCHAN_UNKNOWN      ? "unknown"
           : s == PIO_WCHAN_UP         ? "up"
           : s == PIO_WCHAN_CONNECTING ? "connecting"
                                       : "down";
}

static void human_bytes(uint64_t b, char *out, size_t n)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int i = 0;
    while (v >= 1024 && i < 4) {
        v /= 1024;
        i++;
    }
    snprintf(out, n, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

/* --rdma: the description of the one-sided backend that windows use here
 * (pio_svc.h, picked by capability as win.c does). */
static int print_rdma(void)
{
    int stage = 0;
    int rc = pio_svc_rma_describe(stdout, &stage);
    if (rc == PIO_OK)
        return 0;
    if (stage == 0)
        fprintf(stderr, "pio-info: this libpio has no one-sided backend%s%s\n",
                getenv("PIO_RMA") ? " called " : "", getenv("PIO_RMA") ? getenv("PIO_RMA") : "");
    else if (stage == 1)
        fprintf(stderr, "pio-info: UCX would not start: %s (UCX_TLS=%s)\n", PIO_Strerror(rc),
                getenv("UCX_TLS") ? getenv("UCX_TLS") : "unset");
    else
        fprintf(stderr, "pio-info: cannot describe rdma: %s\n", PIO_Strerror(rc));
    return 1;
}

/* print_json - --json: the same facts as the table, one JSON object (json-c
 * escapes every name: an application may be called anything). */
static int print_json(const struct pio_p_info *in)
{
    json_object *o = json_object_new_object(), *chans = json_object_new_array(),
                *apps = json_object_new_array();
    pio_cli_json_str(o, "host", in->host);
    pio_cli_json_str(o, "system", in->system);
    pio_cli_json_u64(o, "protocol", in->version);
    pio_cli_json_u64(o, "pool_size", in->pool_size);
    pio_cli_json_u64(o, "pool_used", in->pool_used);
    for (uint32_t i = 0; i < in->nchan; i++) {
        const struct pio_chan_info *c = &in->chan[i];
        json_object *r = json_object_new_object();
        pio_cli_json_str(r, "peer", c->peer);
        pio_cli_json_u64(r, "index", c->index);
        pio_cli_json_str(r, "state", state_name(c->state));
        pio_cli_json_str(r, "local", c->local);
        pio_cli_json_str(r, "remote", c->remote);
        pio_cli_json_u64(r, "tx_bytes", c->tx_bytes);
        pio_cli_json_u64(r, "rx_bytes", c->rx_bytes);
        pio_cli_json_u64(r, "queued", c->queued);
        pio_cli_json_u64(r, "rate", c->rate);
        pio_cli_json_u64(r, "tx_chunks", c->tx_chunks);
        pio_cli_json_u64(r, "rx_chunks", c->rx_chunks);
        pio_cli_json_u64(r, "resent", c->resent);
        pio_cli_json_u64(r, "downs", c->downs);
        pio_cli_json_str(r, "host", c->host[0] ? c->host : in->host);
        json_object_array_add(chans, r);
    }
    for (uint32_t i = 0; i < in->napp; i++) {
        json_object *r = json_object_new_object();
        pio_cli_json_str(r, "name", in->app[i].app);
        pio_cli_json_str(r, "system", in->app[i].system);
        pio_cli_json_u64(r, "nprocs", in->app[i].nprocs);
        pio_cli_json_u64(r, "joined", in->app[i].joined);
        json_object_array_add(apps, r);
    }
    pio_cli_json_rows(chans); /* a channel a line, an application a line */
    pio_cli_json_rows(apps);
    json_object_object_add(o, "channels", chans);
    json_object_object_add(o, "applications", apps);
    return pio_cli_json_print("pio-info", o);
}

static void print_table(const struct pio_p_info *in)
{
    char a[32], b[32], q[32], r[32];
    printf("host %s, system %s, protocol %u\n", in->host, in->system, in->version);
    human_bytes(in->pool_size, a, sizeof(a));
    human_bytes(in->pool_used, b, sizeof(b));
    printf("pool: %s, %s mapped by processes\n\n", a, b);
    int system = 0; /* rows of other hosts of our system: show a host column */
    for (uint32_t i = 0; i < in->nchan; i++)
        system |= in->chan[i].host[0] != '\0';
    if (system)
        printf("%-10s ", "host");
    printf("%-10s %3s  %-10s %-22s %-22s %10s %10s %10s %10s %9s %9s %7s %5s\n", "peer", "ch",
           "state", "local", "remote", "tx", "rx", "queued", "rate/s", "tx chunks", "rx chunks",
           "resent", "downs");
    for (uint32_t i = 0; i < in->nchan; i++) {
        const struct pio_chan_info *c = &in->chan[i];
        human_bytes(c->tx_bytes, a, sizeof(a));
        human_bytes(c->rx_bytes, b, sizeof(b));
        human_bytes(c->queued, q, sizeof(q));
        human_bytes(c->rate, r, sizeof(r));
        if (system)
            printf("%-10s ", c->host[0] ? c->host : in->host);
        printf("%-10s %3u  %-10s %-22s %-22s %10s %10s %10s %10s %9llu %9llu %7llu %5u\n", c->peer,
               c->index, state_name(c->state), c->local, c->remote, a, b, q, r,
               (unsigned long long)c->tx_chunks, (unsigned long long)c->rx_chunks,
               (unsigned long long)c->resent, c->downs);
    }
    if (in->nchan == 0)
        printf("(no peers configured)\n");
    printf("\n%-20s %-12s %8s %8s\n", "application", "system", "nprocs", "joined");
    for (uint32_t i = 0; i < in->napp; i++)
        printf("%-20s %-12s %8u %8u\n", in->app[i].app, in->app[i].system, in->app[i].nprocs,
               in->app[i].joined);
    if (in->napp == 0)
        printf("(none)\n");
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, 0, 'j'},         {"count-up", no_argument, 0, 'u'},
        {"socket", required_argument, 0, 's'}, {"timeout", required_argument, 0, 't'},
        {"help", no_argument, 0, 'h'},         {"rdma", no_argument, 0, 'r'},
        {"version", no_argument, 0, 'V'},      {0, 0, 0, 0}};
    int json = 0, count_up = 0, rdma = 0, timeout = 3000, c;
    const char *path = getenv("PIO_SOCKET");
    if (!path || !*path)
        path = "/run/pio/piod.sock";
    while ((c = getopt_long(argc, argv, "jus:t:hr", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'u': count_up = 1; break;
        case 's': path = optarg; break;
        case 't': timeout = atoi(optarg); break;
        case 'r': rdma = 1; break;
        case 'V': return pio_cli_version("pio-info");
        case 'h':
            printf("usage: pio-info [--json | --count-up] [--socket PATH] [--timeout MS]\n"
                   "       pio-info --rdma | --version\n"
                   "Shows this host's piod: channels (addresses, state, bytes, queued, rate),\n"
                   "peers and applications. The socket is $PIO_SOCKET, else "
                   "/run/pio/piod.sock.\n"
                   "--rdma: UCX's transports and devices here, and which one the stream, get,\n"
                   "put and atomics would use to another process on this host (UCX_TLS "
                   "applies).\n");
            return 0;
        default: return 2;
        }
    }
    if (rdma)
        return print_rdma();
    int rc = 1;
    struct pio_frame *f = calloc(1, sizeof(*f));
    if (!f)
        return 1;
    int drc = pio_info_fetch(path, timeout, f);
    if (drc == PIO_ENOPIOD) {
        fprintf(stderr, "pio-info: no piod at %s (is piod running? is PIO_SOCKET right?)\n", path);
        goto out;
    }
    if (drc == PIO_ETIMEDOUT) {
        fprintf(stderr, "pio-info: the piod at %s did not answer within %d ms\n", path, timeout);
        goto out;
    }
    if (drc != PIO_OK) {
        fprintf(stderr, "pio-info: unexpected answer from %s: %s\n", path, PIO_Strerror(drc));
        goto out;
    }
    if (count_up) {
        unsigned n = 0;
        for (uint32_t i = 0; i < f->u.p_info.nchan; i++) /* this host's channels */
            n += f->u.p_info.chan[i].state == PIO_WCHAN_UP && f->u.p_info.chan[i].host[0] == '\0';
        printf("%u\n", n);
        rc = 0;
    } else if (json) {
        rc = print_json(&f->u.p_info);
    } else {
        print_table(&f->u.p_info);
        rc = 0;
    }
out:
    free(f);
    return rc;
}
