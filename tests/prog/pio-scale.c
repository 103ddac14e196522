/* pio-scale.c - N pairs streaming at once through one piod pair (issue 27).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 *   pio-scale recv  -N PAIRS [-x PREFIX] [-s SIZE] [--timeout S]
 *   pio-scale send  -N PAIRS [-x PREFIX] [-s SIZE] [-t SECONDS] [-b DYNAMIC|STATIC]
 *   pio-scale probe [-x PREFIX] [-n N] [-p PARTNER]
 *
 * recv and send each fork PAIRS processes, PREFIX-r<i> and PREFIX-s<i>
 * (applications of one process each, joined to the piod at $PIO_SOCKET).
 * Once every sender has found its partner, all of them stream SIZE-byte
 * messages (blocking PIO_Send) for SECONDS, then a last message (tag 2)
 * carrying how many they sent. Every message holds its pair's pattern of
 * 64-bit words with its number in the first and last word, so each receiver
 * checks every byte (a memcmp: cheap enough not to load the host), the
 * order, and the count (--check ends: only the numbered words, so that a
 * benchmark measures PIO and not the check). A receiver notes when each message completed; the
 * recv side then takes the window in which every pair was streaming (from
 * the latest first arrival to the earliest last one) and prints, per pair,
 * its rate in that window and its share (rate / mean rate), then
 *   SUMMARY pairs=N ok=K failed=F window_s=W aggregate_MBps=A min_share=..
 *           max_share=.. spread=S bytes=B msgs=M
 *           cpu_user_nspb=.. cpu_sys_nspb=..
 * spread is the largest |share - 1|; cpu_*_nspb are the CPU nanoseconds per
 * byte carried in the window of the processes named by --cpu PID,PID (the
 * piods: user and system time from /proc/PID/stat, sampled every 50 ms and
 * interpolated at the window's ends). Exit 0 only if every pair completed with
 * every byte right.
 * probe forks N processes one after the other (PREFIX-probe<k>): each times
 * PIO_Init (its join) and PIO_Setpartner(PARTNER) (a look-up), and prints
 *   PROBE n=N join_ms_median=.. join_ms_max=.. lookup_ms_median=.. lookup_ms_max=..
 */
#include "pio.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TAG_DATA 1
#define TAG_END  2

static const char *cpu_pids = NULL; /* --cpu PID[,PID]: their CPU in the window */
static int full_check = 1;          /* --check ends: only the numbered words */
static int npairs = 1, seconds = 5, probes = 5, timeout_s = 60, conn = PIO_DYNAMIC;
static size_t msg_size = 1 << 20;
static const char *prefix = "sc", *probe_partner = NULL;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, int rc)
{
    printf("FAIL %s: %s (%s)\n", what, PIO_Errname(rc), PIO_Strerror(rc));
    fflush(stdout);
    _exit(1);
}

static uint64_t word(uint64_t pair, uint64_t j)
{
    uint64_t x = (pair << 40 ^ j) * 0x9E3779B97F4A7C15ull;
    return x ^ x >> 29;
}

/* A pair's messages: the pair's pattern, with the message's number in the
 * first and (mixed) the last word. Filled once; each message sets its two. */
static void fill(uint64_t *w, size_t nw, uint64_t pair)
{
    for (size_t j = 0; j < nw; j++)
        w[j] = word(pair, j);
}

static void number(uint64_t *w, size_t nw, uint64_t pair, uint64_t msg)
{
    w[0] = msg;
    w[nw - 1] = msg ^ word(pair, nw - 1);
}

/* index of the first wrong word, or nw: every byte is compared (memcmp
 * against the pattern, then the two numbered words) */
static size_t check(const uint64_t *w, const uint64_t *ref, size_t nw, uint64_t pair, uint64_t msg)
{
    if (w[0] != msg)
        return 0;
    if (full_check && nw > 2 && memcmp(w + 1, ref + 1, (nw - 2) * 8) != 0)
        for (size_t j = 1; j < nw - 1; j++)
            if (w[j] != ref[j])
                return j;
    if (nw > 1 && w[nw - 1] != (msg ^ word(pair, nw - 1)))
        return nw - 1;
    return nw;
}

/* ---- one sender and one receiver ---- */

static void sender(int i, int ready_fd, int go_fd)
{
    char me[PIO_NAME_MAX], peer[PIO_NAME_MAX];
    snprintf(me, sizeof(me), "%s-s%d", prefix, i);
    snprintf(peer, sizeof(peer), "%s-r%d", prefix, i);
    int rc = PIO_Init(me, 0, 1), pt;
    if (rc != PIO_OK)
        die("PIO_Init", rc);
    if ((rc = PIO_Setpartner(peer, &pt)) != PIO_OK)
        die("PIO_Setpartner", rc);
    size_t nw = msg_size / 8;
    uint64_t *buf = malloc(nw * 8 + 8);
    if (!buf)
        die("malloc", PIO_ENOMEM);
    /* PIO_SCALE_PAIR_OFFSET (tests only): send another pair's pattern, so
     * that a test sees the receiver's check fail */
    const char *po = getenv("PIO_SCALE_PAIR_OFFSET");
    uint64_t pat = (uint64_t)i + (po ? strtoull(po, NULL, 10) : 0);
    fill(buf, nw, pat);
    char c = 'r';
    double end;
    if (write(ready_fd, &c, 1) != 1 || read(go_fd, &end, sizeof(end)) != sizeof(end))
        _exit(1);
    uint64_t k = 0;
    while (now() < end) {
        number(buf, nw, pat, k);
        if ((rc = PIO_Send(pt, 0, TAG_DATA, conn, buf, PIO_BYTE, nw * 8, PIO_BLOCKING)) != PIO_OK)
            die("PIO_Send", rc);
        k++;
    }
    if ((rc = PIO_Send(pt, 0, TAG_END, conn, &k, PIO_BYTE, sizeof(k), PIO_SYNC)) != PIO_OK)
        die("PIO_Send (end)", rc);
    PIO_Exit();
    free(buf);
    _exit(0);
}

/* Results go to out: "first last msgs" then one completion time per message. */
static void receiver(int i, FILE *out, int ready_fd)
{
    char me[PIO_NAME_MAX], peer[PIO_NAME_MAX];
    snprintf(me, sizeof(me), "%s-r%d", prefix, i);
    snprintf(peer, sizeof(peer), "%s-s%d", prefix, i);
    int rc = PIO_Init(me, 0, 1), pt;
    if (rc != PIO_OK)
        die("PIO_Init", rc);
    char c = 'r';
    if (write(ready_fd, &c, 1) != 1)
        _exit(1);
    if ((rc = PIO_Setpartner(peer, &pt)) != PIO_OK)
        die("PIO_Setpartner", rc);
    size_t nw = msg_size / 8, cap = 1024, n = 0;
    uint64_t *buf = malloc(nw * 8 + 8), *ref = malloc(nw * 8 + 8);
    double *t = malloc(cap * sizeof(*t));
    if (!buf || !ref || !t)
        die("malloc", PIO_ENOMEM);
    fill(ref, nw, (uint64_t)i);
    for (;;) {
        PIO_Status st;
        rc = PIO_Recv(pt, 0, PIO_ANY_TAG, buf, PIO_BYTE, nw * 8, timeout_s * 1000, PIO_BLOCKING,
                      &st);
        if (rc != PIO_OK)
            die("PIO_Recv", rc);
        if (st.tag == TAG_END) {
            if (st.bytes != 8 || buf[0] != n) {
                printf("FAIL pair %d: the sender says %llu messages, %zu arrived\n", i,
                       (unsigned long long)buf[0], n);
                _exit(1);
            }
            break;
        }
        size_t bad = st.bytes == nw * 8 ? check(buf, ref, nw, (uint64_t)i, n) : 0;
        if (bad < nw) {
            printf("FAIL pair %d message %zu: %zu bytes, word %zu wrong\n", i, n, st.bytes, bad);
            _exit(1);
        }
        if (n == cap) {
            cap *= 2;
            double *nt = realloc(t, cap * sizeof(*t));
            if (!nt)
                die("realloc", PIO_ENOMEM);
            t = nt;
        }
        t[n++] = now();
    }
    fprintf(out, "%zu\n", n);
    for (size_t k = 0; k < n; k++)
        fprintf(out, "%.6f\n", t[k]);
    fclose(out);
    PIO_Exit();
    _exit(0);
}

/* ---- the parents ---- */

static int reap(pid_t *pids, int n)
{
    int failed = 0;
    for (int i = 0; i < n; i++) {
        int st;
        if (pids[i] > 0 && (waitpid(pids[i], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)))
            failed++;
    }
    return failed;
}

static int run_send(void)
{
    int rp[2], gp[2];
    if (pipe(rp) || pipe(gp))
        return 1;
    pid_t *pids = calloc((size_t)npairs, sizeof(*pids));
    for (int i = 0; i < npairs; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            close(rp[0]);
            close(gp[1]);
            sender(i, rp[1], gp[0]);
        }
    }
    close(rp[1]);
    close(gp[0]);
    int ready = 0;
    char c;
    while (ready < npairs && read(rp[0], &c, 1) == 1)
        ready++;
    double end = now() + seconds;
    for (int i = 0; i < ready; i++)
        if (write(gp[1], &end, sizeof(end)) != sizeof(end))
            break;
    close(gp[1]);
    int failed = reap(pids, npairs);
    printf("SENT pairs=%d ready=%d failed=%d\n", npairs, ready, failed);
    free(pids);
    return failed ? 1 : 0;
}

struct pair_res {
    size_t n;
    double *t;
};

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* CPU samples of the --cpu processes: when, and their user and system
 * ticks summed (/proc/PID/stat), so the CPU spent inside the window can be
 * interpolated. */
struct cpu_sample {
    double t;
    double user, sys;
};

static int cpu_read(double *user, double *sys)
{
    char list[256];
    snprintf(list, sizeof(list), "%s", cpu_pids);
    *user = *sys = 0;
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        char path[64], buf[1024];
        snprintf(path, sizeof(path), "/proc/%s/stat", tok);
        FILE *f = fopen(path, "r");
        if (!f)
            return -1;
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = 0;
        char *p = strrchr(buf, ')'); /* fields after the command name */
        unsigned long ut, st;
        if (!p ||
            sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
            return -1;
        *user += (double)ut;
        *sys += (double)st;
    }
    return 0;
}

/* ticks at time t, interpolated between the samples around it */
static void cpu_at(const struct cpu_sample *s, size_t n, double t, double *user, double *sys)
{
    size_t k = 1;
    while (k < n - 1 && s[k].t < t)
        k++;
    double f = s[k].t > s[k - 1].t ? (t - s[k - 1].t) / (s[k].t - s[k - 1].t) : 0;
    f = f < 0 ? 0 : f > 1 ? 1 : f;
    *user = s[k - 1].user + f * (s[k].user - s[k - 1].user);
    *sys = s[k - 1].sys + f * (s[k].sys - s[k - 1].sys);
}

static int run_recv(void)
{
    int rp[2];
    if (pipe(rp))
        return 1;
    pid_t *pids = calloc((size_t)npairs, sizeof(*pids));
    FILE **outs = calloc((size_t)npairs, sizeof(*outs));
    struct pair_res *res = calloc((size_t)npairs, sizeof(*res));
    for (int i = 0; i < npairs; i++) {
        outs[i] = tmpfile();
        if (!outs[i])
            return 1;
        fflush(stdout);
        pids[i] = fork();
        if (pids[i] == 0) {
            close(rp[0]);
            receiver(i, outs[i], rp[1]);
        }
    }
    close(rp[1]);
    int joined = 0;
    char c;
    while (joined < npairs && read(rp[0], &c, 1) == 1)
        joined++;
    printf("READY %d receivers joined\n", joined);
    fflush(stdout);
    /* wait for the receivers, sampling the --cpu processes meanwhile */
    int *status = calloc((size_t)npairs, sizeof(*status)), left = npairs;
    size_t ns = 0, scap = 1024;
    struct cpu_sample *smp = malloc(scap * sizeof(*smp));
    while (left > 0) {
        int st;
        pid_t p = waitpid(-1, &st, cpu_pids ? WNOHANG : 0);
        if (p < 0)
            break;
        for (int i = 0; p > 0 && i < npairs; i++)
            if (pids[i] == p) {
                status[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
                left--;
            }
        if (p > 0)
            continue;
        if (ns == scap) {
            scap *= 2;
            smp = realloc(smp, scap * sizeof(*smp));
        }
        if (smp && cpu_read(&smp[ns].user, &smp[ns].sys) == 0) {
            smp[ns].t = now();
            ns++;
        }
        usleep(50000);
    }
    int failed = 0;
    double w0 = 0, w1 = 1e300;
    for (int i = 0; i < npairs; i++) {
        int bad = left > 0 || status[i] != 0;
        rewind(outs[i]);
        if (!bad && fscanf(outs[i], "%zu", &res[i].n) == 1 && res[i].n > 0) {
            res[i].t = malloc(res[i].n * sizeof(double));
            for (size_t k = 0; k < res[i].n; k++)
                if (fscanf(outs[i], "%lf", &res[i].t[k]) != 1)
                    bad = 1;
        } else {
            bad = 1;
        }
        fclose(outs[i]);
        if (bad) {
            failed++;
            printf("pair %d FAILED\n", i);
            continue;
        }
        if (res[i].t[0] > w0)
            w0 = res[i].t[0];
        if (res[i].t[res[i].n - 1] < w1)
            w1 = res[i].t[res[i].n - 1];
    }
    double win = w1 - w0, total = 0, minsh = 1e300, maxsh = 0, spread = 0;
    size_t msgs = 0;
    double *rate = calloc((size_t)npairs, sizeof(*rate));
    int ok = npairs - failed;
    if (ok > 0 && win > 0) {
        for (int i = 0; i < npairs; i++) {
            if (!res[i].t)
                continue;
            size_t in = 0;
            for (size_t k = 0; k < res[i].n; k++)
                in += res[i].t[k] > w0 && res[i].t[k] <= w1;
            rate[i] = (double)in * (double)msg_size / win;
            total += rate[i];
            msgs += res[i].n;
        }
        double mean = total / ok;
        printf("%-6s %8s %10s %7s %8s %8s\n", "pair", "msgs", "MB/s", "share", "first_s", "last_s");
        for (int i = 0; i < npairs; i++) {
            if (!res[i].t)
                continue;
            double sh = mean > 0 ? rate[i] / mean : 0;
            minsh = sh < minsh ? sh : minsh;
            maxsh = sh > maxsh ? sh : maxsh;
            double dev = sh > 1 ? sh - 1 : 1 - sh;
            spread = dev > spread ? dev : spread;
            printf("%-6d %8zu %10.2f %7.3f %8.3f %8.3f\n", i, res[i].n, rate[i] / 1e6, sh,
                   res[i].t[0] - w0, res[i].t[res[i].n - 1] - w0);
        }
    } else {
        minsh = maxsh = 0;
        spread = 1;
        if (ok > 0)
            printf("no common window: the pairs did not stream at the same time\n");
    }
    /* the --cpu processes' CPU per byte carried in the window (ticks: 1/100 s) */
    double cpu_user = 0, cpu_sys = 0;
    if (cpu_pids && ns >= 2 && win > 0) {
        double u0, s0, u1, s1;
        cpu_at(smp, ns, w0, &u0, &s0);
        cpu_at(smp, ns, w1, &u1, &s1);
        cpu_user = u1 - u0;
        cpu_sys = s1 - s0;
    }
    double wbytes = total * (win > 0 ? win : 0), tick_ns = 1e9 / (double)sysconf(_SC_CLK_TCK);
    printf("SUMMARY pairs=%d ok=%d failed=%d window_s=%.3f aggregate_MBps=%.2f min_share=%.3f "
           "max_share=%.3f spread=%.3f bytes=%.0f msgs=%zu cpu_user_nspb=%.4f cpu_sys_nspb=%.4f\n",
           npairs, ok, failed, win > 0 ? win : 0, total / 1e6, minsh, maxsh, spread,
           (double)msgs * (double)msg_size, msgs, wbytes > 0 ? cpu_user * tick_ns / wbytes : 0,
           wbytes > 0 ? cpu_sys * tick_ns / wbytes : 0);
    free(smp);
    free(status);
    return failed || win <= 0 ? 1 : 0;
}

static int run_probe(void)
{
    double *join = calloc((size_t)probes, sizeof(double)),
           *look = calloc((size_t)probes, sizeof(double));
    for (int k = 0; k < probes; k++) {
        int fd[2];
        if (pipe(fd))
            return 1;
        pid_t p = fork();
        if (p == 0) {
            close(fd[0]);
            char me[PIO_NAME_MAX];
            snprintf(me, sizeof(me), "%s-probe%d", prefix, k);
            double t[3] = {now(), 0, 0};
            int pt, rc = PIO_Init(me, 0, 1);
            if (rc != PIO_OK)
                die("PIO_Init", rc);
            t[1] = now();
            if (probe_partner && (rc = PIO_Setpartner(probe_partner, &pt)) != PIO_OK)
                die("PIO_Setpartner", rc);
            t[2] = now();
            if (write(fd[1], t, sizeof(t)) != sizeof(t))
                _exit(1);
            PIO_Exit();
            _exit(0);
        }
        close(fd[1]);
        double t[3];
        int st, got = read(fd[0], t, sizeof(t)) == sizeof(t);
        close(fd[0]);
        if (waitpid(p, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) || !got) {
            printf("FAIL probe %d\n", k);
            return 1;
        }
        join[k] = (t[1] - t[0]) * 1e3;
        look[k] = (t[2] - t[1]) * 1e3;
        printf("probe %d: join %.2f ms, look-up %.2f ms\n", k, join[k], look[k]);
        fflush(stdout);
        usleep(200000);
    }
    qsort(join, (size_t)probes, sizeof(double), cmp_d);
    qsort(look, (size_t)probes, sizeof(double), cmp_d);
    printf("PROBE n=%d join_ms_median=%.2f join_ms_max=%.2f lookup_ms_median=%.2f "
           "lookup_ms_max=%.2f\n",
           probes, join[probes / 2], join[probes - 1], look[probes / 2], look[probes - 1]);
    return 0;
}

static void usage(void)
{
    fprintf(
        stderr,
        "usage: pio-scale recv|send -N PAIRS [-x PREFIX] [-s SIZE] [-t SECONDS]\n"
        "                 [-b DYNAMIC|STATIC] [--timeout S] [--check full|ends] [--cpu PID,..]\n"
        "       pio-scale probe [-x PREFIX] [-n N] [-p PARTNER]\n");
    exit(2);
}

static long num(const char *v, long min, long max)
{
    char *e;
    errno = 0;
    long n = strtol(v, &e, 10);
    if (*e == 'K' || *e == 'k')
        n <<= 10, e++;
    else if (*e == 'M' || *e == 'm')
        n <<= 20, e++;
    if (errno || *v == 0 || *e || n < min || n > max) {
        fprintf(stderr, "pio-scale: '%s' is not a number from %ld to %ld\n", v, min, max);
        exit(2);
    }
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    const char *role = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            usage();
        if (strcmp(o, "-N") == 0)
            npairs = (int)num(v, 1, 1024);
        else if (strcmp(o, "-x") == 0)
            prefix = v;
        else if (strcmp(o, "-s") == 0)
            msg_size = (size_t)num(v, 8, 1 << 30) & ~(size_t)7;
        else if (strcmp(o, "-t") == 0)
            seconds = (int)num(v, 1, 3600);
        else if (strcmp(o, "-n") == 0)
            probes = (int)num(v, 1, 1000);
        else if (strcmp(o, "-p") == 0)
            probe_partner = v;
        else if (strcmp(o, "--timeout") == 0)
            timeout_s = (int)num(v, 1, 3600);
        else if (strcmp(o, "--cpu") == 0)
            cpu_pids = v;
        else if (strcmp(o, "--check") == 0 && strcmp(v, "full") == 0)
            full_check = 1;
        else if (strcmp(o, "--check") == 0 && strcmp(v, "ends") == 0)
            full_check = 0;
        else if (strcmp(o, "-b") == 0 && strcasecmp(v, "DYNAMIC") == 0)
            conn = PIO_DYNAMIC;
        else if (strcmp(o, "-b") == 0 && strcasecmp(v, "STATIC") == 0)
            conn = PIO_STATIC;
        else
            usage();
        i++;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (strcmp(role, "send") == 0)
        return run_send();
    if (strcmp(role, "recv") == 0)
        return run_recv();
    if (strcmp(role, "probe") == 0)
        return run_probe();
    usage();
    return 2;
}
