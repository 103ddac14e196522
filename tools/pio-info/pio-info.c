/* pio-info.c - show a piod: host, channels, peers and applications (like fi_info).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Talks to the piod's control socket directly (one P_INFO_REQ, one P_INFO),
 * so it works without joining as a process. Output: a table for people,
 * --json for scripts, --count-up for scripts that wait for the bundle.
 * --rdma asks no piod: it starts the rdma backend here and prints what UCX
 * offers and would use to another process on this host (like ucx_info -d/-e).
 * --watch asks again every interval and shows rates as the difference of the
 * byte counters between two answers over the time between them (like top):
 * on a terminal it redraws in place with ANSI escapes (no curses), elsewhere
 * it prints one table per refresh. SIGINT/SIGTERM/SIGHUP stay blocked and
 * are taken by sigtimedwait between refreshes, so the terminal is restored
 * on every way out and a signal never interrupts a request half-way.
 */
#include "cli.h"
#include "pio.h"
#include "cli_json.h"
#include "pio_svc.h"
#include "wire/wire.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

/* print_apps - the applications' table (both tables end with it). */
static void print_apps(FILE *out, const struct pio_p_info *in)
{
    fprintf(out, "%-20s %-12s %8s %8s\n", "application", "system", "nprocs", "joined");
    for (uint32_t i = 0; i < in->napp; i++)
        fprintf(out, "%-20s %-12s %8u %8u\n", in->app[i].app, in->app[i].system, in->app[i].nprocs,
                in->app[i].joined);
    if (in->napp == 0)
        fprintf(out, "(none)\n");
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
    printf("\n");
    print_apps(stdout, in);
}

/* ---- --watch: a live table of rates (docs/design-notes.md, "pio-info --watch") ---- */

#define WATCH_MIN 0.1     /* seconds: a shorter interval would only load the piod */
#define WATCH_MAX 86400.0 /* a day */

/* watch_interval - parse --watch's SECONDS: a decimal number in
 * [WATCH_MIN, WATCH_MAX]. Returns 0, or -1 when s is anything else. */
static int watch_interval(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !isfinite(v) || v < WATCH_MIN || v > WATCH_MAX)
        return -1;
    *out = v;
    return 0;
}

/* watch_count - parse --count's N: a decimal integer >= 1. */
static int watch_count(const char *s, unsigned long *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0 || v == 0)
        return -1;
    *out = v;
    return 0;
}

static double watch_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* human_rate - bytes per second in decimal units (1 MB = 10^6 bytes, as
 * pio-perf counts), "-" when unknown (v < 0). */
static void human_rate(double v, char *out, size_t n)
{
    const char *u[] = {"B/s", "kB/s", "MB/s", "GB/s", "TB/s"};
    int i = 0;
    if (v < 0) {
        snprintf(out, n, "-");
        return;
    }
    while (v >= 1000 && i < 4) {
        v /= 1000;
        i++;
    }
    snprintf(out, n, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

/* watch_prev - the row of the previous answer for the same channel (same
 * member host, peer and index), or NULL. */
static const struct pio_chan_info *watch_prev(const struct pio_p_info *prev,
                                              const struct pio_chan_info *c)
{
    for (uint32_t i = 0; prev && i < prev->nchan; i++) {
        const struct pio_chan_info *p = &prev->chan[i];
        if (p->index == c->index && strcmp(p->peer, c->peer) == 0 && strcmp(p->host, c->host) == 0)
            return p;
    }
    return NULL;
}

/* watch_sum - what a total line adds up; a rate < 0 is unknown. */
struct watch_sum {
    unsigned up, n;
    double tx, rx; /* bytes/s; < 0 while no row had a rate */
    uint64_t queued, resent, downs;
};

static void watch_add(struct watch_sum *s, const struct pio_chan_info *c, double tx, double rx)
{
    s->n++;
    s->up += c->state == PIO_WCHAN_UP;
    if (tx >= 0)
        s->tx = (s->tx < 0 ? 0 : s->tx) + tx;
    if (rx >= 0)
        s->rx = (s->rx < 0 ? 0 : s->rx) + rx;
    s->queued += c->queued;
    s->resent += c->resent;
    s->downs += c->downs;
}

static void watch_row(FILE *out, int hostcol, const char *host, const char *peer, const char *ch,
                      const char *state, const char *local, const char *remote, double tx,
                      double rx, uint64_t queued, uint64_t resent, uint64_t downs)
{
    char t[32], r[32], q[32];
    human_rate(tx, t, sizeof(t));
    human_rate(rx, r, sizeof(r));
    human_bytes(queued, q, sizeof(q));
    if (hostcol)
        fprintf(out, "%-10s ", host);
    fprintf(out, "%-10s %3s  %-10s %-22s %-22s %11s %11s %10s %7llu %5llu\n", peer, ch, state,
            local, remote, t, r, q, (unsigned long long)resent, (unsigned long long)downs);
}

static void watch_total(FILE *out, int hostcol, const char *host, const char *label,
                        const struct watch_sum *s)
{
    char st[32];
    snprintf(st, sizeof(st), "%u/%u up", s->up, s->n);
    watch_row(out, hostcol, host, label, "all", st, "", "", s->tx, s->rx, s->queued, s->resent,
              s->downs);
}

/* watch_table - one refresh: rows grouped by (member host, peer) in the
 * order the piod lists them, a total line per group and per host, then the
 * applications. prev: the answer dt seconds before (NULL: the first
 * refresh, rates unknown). */
static void watch_table(FILE *out, const struct pio_p_info *in, const struct pio_p_info *prev,
                        double dt, double interval, unsigned long n)
{
    char when[16];
    time_t now = time(NULL);
    struct tm tm;
    strftime(when, sizeof(when), "%H:%M:%S", localtime_r(&now, &tm));
    fprintf(out, "pio-info --watch %g: host %s, system %s, refresh %lu at %s\n\n", interval,
            in->host, in->system, n, when);
    int hostcol = 0;
    for (uint32_t i = 0; i < in->nchan; i++)
        hostcol |= in->chan[i].host[0] != '\0';
    if (hostcol)
        fprintf(out, "%-10s ", "host");
    fprintf(out, "%-10s %3s  %-10s %-22s %-22s %11s %11s %10s %7s %5s\n", "peer", "ch", "state",
            "local", "remote", "tx/s", "rx/s", "queued", "resent", "downs");
    unsigned char done[PIO_WIRE_MAX_CHANNELS] = {0};
    for (uint32_t h = 0; h < in->nchan; h++) { /* h: first row of a member host */
        const char *host = in->chan[h].host;
        if (done[h])
            continue;
        int first_of_host = 1;
        for (uint32_t k = 0; k < h && first_of_host; k++)
            first_of_host = strcmp(in->chan[k].host, host) != 0;
        if (!first_of_host)
            continue;
        struct watch_sum hs = {0, 0, -1, -1, 0, 0, 0};
        for (uint32_t g = h; g < in->nchan; g++) { /* g: first row of a peer on that host */
            if (done[g] || strcmp(in->chan[g].host, host) != 0)
                continue;
            struct watch_sum ps = {0, 0, -1, -1, 0, 0, 0};
            for (uint32_t i = g; i < in->nchan; i++) {
                const struct pio_chan_info *c = &in->chan[i];
                if (done[i] || strcmp(c->host, host) != 0 || strcmp(c->peer, in->chan[g].peer) != 0)
                    continue;
                done[i] = 1;
                const struct pio_chan_info *p = watch_prev(prev, c);
                double tx = -1, rx = -1; /* a counter that went back: a new channel, unknown */
                if (p && dt > 0 && c->tx_bytes >= p->tx_bytes && c->rx_bytes >= p->rx_bytes) {
                    tx = (double)(c->tx_bytes - p->tx_bytes) / dt;
                    rx = (double)(c->rx_bytes - p->rx_bytes) / dt;
                }
                char ch[16];
                snprintf(ch, sizeof(ch), "%u", c->index);
                watch_row(out, hostcol, c->host[0] ? c->host : in->host, c->peer, ch,
                          state_name(c->state), c->local, c->remote, tx, rx, c->queued, c->resent,
                          c->downs);
                watch_add(&ps, c, tx, rx);
                watch_add(&hs, c, tx, rx);
            }
            watch_total(out, hostcol, host[0] ? host : in->host, in->chan[g].peer, &ps);
        }
        watch_total(out, hostcol, host[0] ? host : in->host, "total", &hs);
    }
    if (in->nchan == 0)
        fprintf(out, "(no peers configured)\n");
    fprintf(out, "\n");
    print_apps(out, in);
}

/* watch_fetch_error - the words for a failed request; lost: the piod had
 * answered before. */
static void watch_fetch_error(const char *path, int timeout, int rc, int lost)
{
    if (lost && rc == PIO_ENOPIOD)
        fprintf(stderr, "pio-info: the piod at %s went away (nothing answers there now)\n", path);
    else if (lost && rc == PIO_ECLOSED)
        fprintf(stderr, "pio-info: the piod at %s went away (it closed the connection)\n", path);
    else if (rc == PIO_ENOPIOD)
        fprintf(stderr, "pio-info: no piod at %s (is piod running? is PIO_SOCKET right?)\n", path);
    else if (rc == PIO_ETIMEDOUT)
        fprintf(stderr, "pio-info: the piod at %s did not answer within %d ms\n", path, timeout);
    else
        fprintf(stderr, "pio-info: unexpected answer from %s: %s\n", path, PIO_Strerror(rc));
}

/* watch - --watch: refresh every interval seconds, count times (0: until a
 * signal). Returns the exit status: 0 after count refreshes or on
 * SIGINT/SIGTERM/SIGHUP, 1 when the piod is not there or goes away, or
 * stdout fails. */
static int watch(const char *path, int timeout, double interval, unsigned long count)
{
    struct pio_frame *cur = calloc(1, sizeof(*cur)), *prev = calloc(1, sizeof(*prev));
    char *buf = NULL;
    size_t len = 0;
    int rc = 1, tty = isatty(STDOUT_FILENO);
    sigset_t sigs, old;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    if (!cur || !prev) {
        fprintf(stderr, "pio-info: out of memory\n");
        goto free;
    }
    sigprocmask(SIG_BLOCK, &sigs, &old);
    double t_cur = watch_now(), t_old = t_cur, t0 = t_cur; /* when each answer was asked */
    int frc = pio_info_fetch(path, timeout, cur);
    if (frc != PIO_OK) {
        watch_fetch_error(path, timeout, frc, 0);
        goto unblock;
    }
    if (tty) /* hide the cursor, no line wrap (a narrow terminal cuts lines) */
        fputs("\033[?25l\033[?7l", stdout);
    for (unsigned long n = 1;; n++) {
        FILE *m = open_memstream(&buf, &len);
        if (!m) {
            fprintf(stderr, "pio-info: out of memory\n");
            goto restore;
        }
        watch_table(m, &cur->u.p_info, n > 1 ? &prev->u.p_info : NULL, t_cur - t_old, interval, n);
        if (fclose(m) != 0) {
            fprintf(stderr, "pio-info: out of memory\n");
            goto restore;
        }
        if (tty)
            fputs("\033[H\033[2J", stdout); /* home, clear: the frame replaces the last */
        else if (n > 1)
            fputc('\n', stdout); /* a blank line between tables */
        fwrite(buf, 1, len, stdout);
        free(buf);
        buf = NULL;
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "pio-info: cannot write to stdout\n");
            goto restore;
        }
        if (count && n >= count)
            break;
        /* wait for the next refresh on a fixed beat (t0 + n * interval); a
         * slow answer that missed a beat starts the beat again */
        double next = t0 + (double)n * interval;
        if (watch_now() > next + interval) {
            t0 = watch_now() - (double)n * interval;
            next = t0 + (double)n * interval;
        }
        int sig;
        for (;;) {
            double left = next - watch_now();
            left = left > 0 ? left : 0;
            struct timespec ts = {(time_t)left, (long)((left - floor(left)) * 1e9)};
            sig = sigtimedwait(&sigs, NULL, &ts);
            if (sig > 0 || errno != EINTR)
                break;
        }
        if (sig > 0)
            break; /* asked to stop: a normal end */
        struct pio_frame *t = prev;
        prev = cur;
        cur = t;
        t_old = t_cur;
        t_cur = watch_now();
        frc = pio_info_fetch(path, timeout, cur);
        if (frc != PIO_OK) {
            if (tty) /* the last table stays on the screen, the message below it */
                fputs("\n", stdout);
            fflush(stdout);
            watch_fetch_error(path, timeout, frc, 1);
            goto restore;
        }
    }
    rc = 0;
restore:
    if (tty) {
        fputs("\033[?7h\033[?25h", stdout);
        if (rc == 0)
            fputs("\n", stdout);
        fflush(stdout);
    }
unblock:; /* a signal that came during the last request: consumed, not fatal */
    struct timespec zero = {0, 0};
    while (sigtimedwait(&sigs, NULL, &zero) > 0) {
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
free:
    free(buf);
    free(prev);
    free(cur);
    return rc;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, 0, 'j'},         {"count-up", no_argument, 0, 'u'},
        {"socket", required_argument, 0, 's'}, {"timeout", required_argument, 0, 't'},
        {"help", no_argument, 0, 'h'},         {"rdma", no_argument, 0, 'r'},
        {"version", no_argument, 0, 'V'},      {"watch", optional_argument, 0, 'w'},
        {"count", required_argument, 0, 'c'},  {0, 0, 0, 0}};
    int json = 0, count_up = 0, rdma = 0, timeout = 3000, watching = 0, c;
    double interval = 1;
    unsigned long count = 0;
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
        case 'w': {
            /* --watch[=]SECONDS, optional: the next word is the interval
             * unless it is an option (a negative number is a bad interval) */
            const char *v = optarg;
            if (!v && optind < argc &&
                (argv[optind][0] != '-' || (argv[optind][1] >= '0' && argv[optind][1] <= '9') ||
                 argv[optind][1] == '.'))
                v = argv[optind++];
            if (v && watch_interval(v, &interval) != 0) {
                fprintf(stderr, "pio-info: --watch %s: the interval is seconds, %g to %g\n", v,
                        WATCH_MIN, WATCH_MAX);
                return 2;
            }
            watching = 1;
            break;
        }
        case 'c':
            if (watch_count(optarg, &count) != 0) {
                fprintf(stderr, "pio-info: --count %s: a number of refreshes, 1 or more\n", optarg);
                return 2;
            }
            break;
        case 'h':
            printf("usage: pio-info [--json | --count-up] [--socket PATH] [--timeout MS]\n"
                   "       pio-info --watch [SECONDS] [--count N] [--socket PATH] [--timeout MS]\n"
                   "       pio-info --rdma | --version\n"
                   "Shows this host's piod: channels (addresses, state, bytes, queued, rate),\n"
                   "peers and applications. The socket is $PIO_SOCKET, else "
                   "/run/pio/piod.sock.\n"
                   "--rdma: UCX's transports and devices here, and which one the stream, get,\n"
                   "put and atomics would use to another process on this host (UCX_TLS "
                   "applies).\n"
                   "--watch: a live table of each channel's tx and rx rates, refreshed every\n"
                   "SECONDS (default 1) until Ctrl-C, or N times (--count).\n");
            return 0;
        default: return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "pio-info: unexpected argument %s (see pio-info --help)\n", argv[optind]);
        return 2;
    }
    if (count && !watching) {
        fprintf(stderr, "pio-info: --count goes with --watch\n");
        return 2;
    }
    if (watching && (json || count_up || rdma)) {
        fprintf(stderr, "pio-info: --watch prints a table: not with --json, --count-up or "
                        "--rdma\n");
        return 2;
    }
    if (rdma)
        return print_rdma();
    if (watching)
        return watch(path, timeout, interval, count);
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
