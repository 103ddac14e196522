/* pcp.c - parallel copy: files to and from another host over the PIO bundle.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 *   pcp [options] SRC... HOST:DST      (send)
 *   pcp [options] HOST:SRC... DST      (fetch)
 *
 * pcp is a PIO application ("pcp.HOST.PID") talking to the file service of
 * the other host ("pio.files.HOST", started by that host's piod for its
 * `export`); protocol in pcp_proto.h. A file's bytes go as messages of
 * --chunk bytes (default 8 MiB), several in flight, which the piods spread
 * over the channels (DYNAMIC by default). The XXH3-64 checksum is computed
 * while the bytes stream, on both sides, and a copy succeeds only when size
 * and checksum match. A fetched file is written to ".NAME.pcp-part" and
 * renamed into place once verified, as the service does for sent files.
 *
 * Before it contacts piod, pcp checks its local arguments and makes the
 * plan: every local source is walked (-r, --exclude) into a list of
 * directories to make and files to send, so that a missing source is said
 * at once (exit 3), --dry-run sends nothing, and -r shows one total
 * progress line. A fetch lists the remote trees first (PCP_LIST), then
 * copies. Exit codes (pcp(1), EXIT STATUS): 0, 1 usage, 3 local
 * arguments, 10 no connection, 12 connection lost, 23 partial.
 */
#include "pio_svc.h"
#include "cli.h"
#include "cli_json.h"
#include "wire/wire.h"
#include "orphan.h"
#include "wire/pcp_proto.h"
#include "pio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define WINDOW 4 /* data messages in flight */
/* -b user: a value no PIO connection has (PIO_STATIC is -1, PIO_DYNAMIC -2;
 * -1 here once made -b static send round-robin on named channels) */
#define BAL_USER         (-100)
#define CHAN_MAX         64
#define CHAN_LOOK_MS     200  /* named channels: their states are asked for this often */
#define CHAN_DOWN_WAIT_S 30.0 /* every named channel down: wait this long for one */

static struct {
    int nchan;      /* -n: round-robin over channels 0..n-1 (0: -b decides) */
    int balance;    /* PIO_DYNAMIC, PIO_STATIC, or BAL_USER (round-robin) */
    uint64_t block; /* --chunk */
    int resume, verify, quiet, json, verbose, recursive;
    int progress; /* --progress: progress lines also when stderr is no terminal */
    int put;      /* sending (else fetching) */
    int tty;
    const char *host; /* the remote host */
    int partner;
    uint32_t next_session;
    uint64_t files, bytes, skipped_bytes;
    uint64_t failed;   /* files (and directories) not copied for an error */
    uint64_t skipped;  /* non-regular files left out (said) */
    int transport;     /* the connection failed during the copy: exit 12 */
    int dry_run;       /* --dry-run */
    const char **excl; /* --exclude patterns */
    int nexcl;
    char last_err[2 * PATH_MAX + 512]; /* the last message err() wrote, for --json */
    double t0;
} o = {.balance = PIO_DYNAMIC, .block = 8u << 20, .verify = 1};

/* Exit codes (pcp(1) EXIT STATUS, in the spirit of rsync's). */
enum {
    EXIT_OK = 0,
    EXIT_USAGE = 1,    /* rsync 1: syntax or usage error */
    EXIT_LOCAL = 3,    /* rsync 3: errors selecting input/output files, dirs */
    EXIT_CONNECT = 10, /* rsync 10: no piod here, no file service there */
    EXIT_LOST = 12,    /* rsync 12: the connection broke during the copy */
    EXIT_PARTIAL = 23, /* rsync 23: some files were not copied */
};

/* What the last put_file / get_file saw, for its --json row. */
static struct {
    uint64_t size, start_off;
    uint64_t hash;
    int have_hash;
} cur;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void err(const char *fmt, ...)
{
    va_list ap;
    if (o.tty && !o.quiet)
        fputs("\r\033[K", stderr);
    va_start(ap, fmt);
    vsnprintf(o.last_err, sizeof(o.last_err), fmt, ap);
    va_end(ap);
    fprintf(stderr, "pcp: %s\n", o.last_err);
}

/* a/b into out; -1 (and a message) when it does not fit */
static int join(char *out, size_t cap, const char *a, const char *b)
{
    int n = snprintf(out, cap, "%s/%s", a, b);
    if (n < 0 || (size_t)n >= cap) {
        err("%s/%s: path too long", a, b);
        return -1;
    }
    return 0;
}

/* ---- progress ---- */

/* done: bytes the receiving side has (sending: written there at their
 * offsets, as its ACKs say; fetching: written here). The rate shown and the
 * ETA come from an exponentially weighted moving average of the rate over
 * samples of at least RATE_SAMPLE_S, with time constant RATE_TAU_S, so that
 * a burst or a stall does not swing the ETA. */
#define RATE_SAMPLE_S 0.25
#define RATE_TAU_S    3.0

struct progress {
    const char *name;
    uint64_t size, done, start_off;
    double t0, last;
    double ewma;         /* smoothed rate, bytes/s (0: no sample yet) */
    double sample_t;     /* start of the current sample */
    uint64_t sample_off; /* done at its start */
};

/* Fold the bytes since the last sample into the smoothed rate. */
static void rate_update(struct progress *p, double t)
{
    if (p->sample_t == 0) {
        p->sample_t = p->t0;
        p->sample_off = p->start_off;
    }
    double dt = t - p->sample_t;
    if (dt < RATE_SAMPLE_S)
        return;
    double inst = (double)(p->done - p->sample_off) / dt;
    double a = dt / (dt + RATE_TAU_S); /* ~ 1 - exp(-dt / tau), no libm */
    p->ewma = p->ewma > 0 ? p->ewma + a * (inst - p->ewma) : inst;
    p->sample_t = t;
    p->sample_off = p->done;
}

static void human(double b, char *out, size_t n)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (b >= 1024 && i < 4)
        b /= 1024, i++;
    snprintf(out, n, i ? "%.1f %s" : "%.0f %s", b, u[i]);
}

/* -v: each channel's rate since the last update, after the progress line */
static void progress_channels(double t)
{
    PIO_Coninfo ci[16];
    int n = 0;
    if (PIO_Getconinfo(o.partner, ci, 16, &n) != PIO_OK)
        return;
    for (int i = 0; i < n && i < 16; i++) { /* from byte counters between updates */
        static uint64_t prev[16];
        static double prev_t[16];
        uint64_t b = o.put ? ci[i].tx_bytes : ci[i].rx_bytes;
        char cr[32];
        double dt = t - prev_t[i];
        human(prev_t[i] > 0 && dt > 0 ? (double)(b - prev[i]) / dt : 0, cr, sizeof(cr));
        prev[i] = b;
        prev_t[i] = t;
        fprintf(stderr, " ch%d:%s/s", i, ci[i].up ? cr : "down");
    }
}

/* -r on a terminal: one line for the whole copy. tot.done is the bytes of
 * the files done plus those of the file under way; a file that fails takes
 * its size out of tot.size. */
static struct {
    int on;
    struct progress p;
    uint64_t base; /* bytes of the files finished */
    uint64_t files, nfiles;
} tot;

static void progress_total(double t, int final)
{
    struct progress *p = &tot.p;
    rate_update(p, t);
    if (!final && t - p->last < 0.2)
        return;
    p->last = t;
    double secs = t - p->t0 > 1e-6 ? t - p->t0 : 1e-6;
    double avg = (double)(p->done - p->start_off) / secs;
    double rate = final || p->ewma <= 0 ? avg : p->ewma;
    double eta = rate > 0 ? (double)(p->size - p->done) / rate : -1;
    char a[32], b[32], r[32], e[16] = "   -";
    human((double)p->done, a, sizeof(a));
    human((double)p->size, b, sizeof(b));
    human(rate, r, sizeof(r));
    if (eta >= 0)
        snprintf(e, sizeof(e), "%4.0f", eta);
    int pct = p->size ? (int)(100.0 * (double)p->done / (double)p->size) : 100;
    fprintf(stderr, "\r\033[K%3d%% %10s / %-10s %6llu / %llu files %10s/s ETA %ss", pct, a, b,
            (unsigned long long)tot.files, (unsigned long long)tot.nfiles, r, e);
    if (o.verbose && !final)
        progress_channels(t);
    if (final)
        fputc('\n', stderr);
}

static void progress(struct progress *p, int final)
{
    double t = now();
    rate_update(p, t);
    if (tot.on) { /* the total line instead (a file's final state is the next file's start) */
        tot.p.done = tot.base + p->done;
        if (!final)
            progress_total(t, 0);
        return;
    }
    if (o.quiet || (!final && ((!o.tty && !o.progress) || t - p->last < (o.tty ? 0.2 : 0.5))))
        return;
    p->last = t;
    double secs = t - p->t0 > 1e-6 ? t - p->t0 : 1e-6;
    double avg = (double)(p->done - p->start_off) / secs;
    double rate = final || p->ewma <= 0 ? avg : p->ewma;
    char a[32], b[32], r[32];
    human((double)p->done, a, sizeof(a));
    human((double)p->size, b, sizeof(b));
    human(rate, r, sizeof(r));
    double eta = rate > 0 ? (double)(p->size - p->done) / rate : -1;
    if (!o.tty && !final) { /* --progress elsewhere: a line each, in bytes */
        char e[32] = "unknown";
        if (eta >= 0)
            snprintf(e, sizeof(e), "%.0f s", eta);
        fprintf(stderr, "%s: %llu of %llu bytes acknowledged, %.0f B/s, ETA %s\n", p->name,
                (unsigned long long)p->done, (unsigned long long)p->size, rate, e);
        return;
    }
    if (o.tty) {
        int pct = p->size ? (int)(100.0 * (double)p->done / (double)p->size) : 100;
        char e[16] = "   -";
        if (eta >= 0)
            snprintf(e, sizeof(e), "%4.0f", eta);
        fprintf(stderr, "\r\033[K%-30.30s %3d%% %10s / %-10s %10s/s ETA %ss", p->name, pct, a, b, r,
                e);
        if (o.verbose && !final)
            progress_channels(t);
        if (final)
            fputc('\n', stderr);
    } else {
        fprintf(stderr, "%s: %s in %.2f s, %s/s%s\n", p->name, b, secs, r,
                p->start_off ? " (resumed)" : "");
    }
}

/* ---- talking to the service ---- */

/* "WHAT: why" for a PIO call that failed, naming the likely cause of the
 * codes a dead piod or link gives. */
static void err_pio(const char *what, int rc)
{
    o.transport = 1;
    if (rc == PIO_ECLOSED)
        err("%s: this host's piod went away (%s)", what, PIO_Strerror(rc));
    else if (rc == PIO_EGONE)
        err("%s: %s (the file service, its piod or every link to %s is down)", what,
            PIO_Strerror(rc), o.host);
    else
        err("%s: %s", what, PIO_Strerror(rc));
}

/* A data message of src failed (conn: its connection; sent: bytes handed
 * over so far). A named channel that went down between our look and the
 * piod's check ends the copy: the messages after it are on their way, and
 * the file service takes them in order, so it cannot be sent again alone. */
static void err_data(const char *src, int rc, int conn, uint64_t sent)
{
    if (rc == PIO_ECHANNEL && conn >= 0) {
        o.transport = 1;
        err("%s: channel %d to %s went down as a message was sent on it: stopped after %llu "
            "bytes (%s); copy again, or with -b dynamic",
            src, conn, o.host, (unsigned long long)sent, PIO_Strerror(rc));
        return;
    }
    err_pio(src, rc);
}

static int send_ctl(uint32_t sid, int tag, struct pcp_msg *m)
{
    uint8_t buf[PCP_MSG_MAX];
    m->session = sid;
    snprintf(m->client, sizeof(m->client), "%s", getenv("PCP_APP") ? getenv("PCP_APP") : "");
    size_t n = pcp_msg_encode(m, buf);
    int rc = PIO_Send(o.partner, 0, tag, PIO_DYNAMIC, buf, PIO_BYTE, n, PIO_BLOCKING);
    if (rc != PIO_OK) {
        char what[128];
        snprintf(what, sizeof(what), "%s: asking the file service", o.host);
        err_pio(what, rc);
    }
    return rc;
}

/* The next step of session sid within timeout ms: 0; 1 when none came (only
 * when timeout < the usual 120 s); -1 with the error said. */
static int recv_ctl_within(uint32_t sid, struct pcp_msg *m, int timeout)
{
    uint8_t buf[PCP_MSG_MAX];
    PIO_Status st;
    int rc = PIO_Recv(o.partner, 0, PCP_TAG_CTL + (int)sid, buf, PIO_BYTE, sizeof(buf), timeout,
                      PIO_BLOCKING, &st);
    if (rc == PIO_ETIMEDOUT && timeout < 120000)
        return 1;
    if (rc != PIO_OK) {
        char what[128];
        snprintf(what, sizeof(what), "%s: the file service stopped answering", o.host);
        err_pio(what, rc);
        return -1;
    }
    if (pcp_msg_decode(buf, st.bytes, m) != 0) {
        o.transport = 1;
        err("%s: a malformed answer from the file service", o.host);
        return -1;
    }
    if (m->op == PCP_ERR) {
        err("%s:%s", o.host, m->text);
        return -1;
    }
    return 0;
}

static int recv_ctl(uint32_t sid, struct pcp_msg *m)
{
    return recv_ctl_within(sid, m, 120000);
}

/* ---- named channels (-n K, -b user) ----
 * A message on PIO_USER(i) fails with PIO_ECHANNEL, nothing sent, when
 * channel i is down as it starts. A user who names channels wants the copy
 * to go on over those that are up, so pcp names only channels its piod says
 * are up (asked at most every CHAN_LOOK_MS), says once when one goes down and
 * when it is back, and waits CHAN_DOWN_WAIT_S while all of them are down
 * before it gives up, naming them. -b static and dynamic need none of
 * this: the piods move their chunks to the channels up. */
static struct {
    int n;                /* channels named: -n K, or every channel for -b user */
    int up[CHAN_MAX];     /* per the last look */
    int warned[CHAN_MAX]; /* "is down" said, "is up again" not yet */
    double last;          /* when we last looked */
    uint64_t next;        /* round-robin position */
} chans;

/* Ask our piod which channels to the partner are up; 0, or -1 (said). */
static int chan_look(void)
{
    PIO_Coninfo ci[CHAN_MAX];
    int n = 0, rc = PIO_Getconinfo(o.partner, ci, CHAN_MAX, &n);
    if (rc != PIO_OK) {
        char what[128];
        snprintf(what, sizeof(what), "%s: the channels' states", o.host);
        err_pio(what, rc);
        return -1;
    }
    chans.last = now();
    if (chans.n == 0) /* -b user: every channel of the bundle */
        chans.n = n < 1 ? 1 : n;
    int nup = 0;
    for (int i = 0; i < chans.n; i++) {
        chans.up[i] = 0;
        for (int j = 0; j < n; j++)
            if (ci[j].index == i)
                chans.up[i] = ci[j].up;
        nup += chans.up[i];
    }
    char opt[16] = "-b user";
    if (o.nchan > 0)
        snprintf(opt, sizeof(opt), "-n %d", o.nchan);
    for (int i = 0; i < chans.n; i++) {
        if (i >= n && !chans.warned[i]) {
            err("%s: %s has %d channel%s, no channel %d", opt, o.host, n, n == 1 ? "" : "s", i);
            chans.warned[i] = 2; /* said for good */
        } else if (!chans.up[i] && !chans.warned[i]) {
            if (nup > 0)
                err("channel %d to %s is down: the copy goes on over the other channels of %s", i,
                    o.host, opt);
            else
                err("channel %d to %s is down, and so is every other channel of %s: waiting up "
                    "to %.0f s for one",
                    i, o.host, opt, CHAN_DOWN_WAIT_S);
            chans.warned[i] = 1;
        } else if (chans.up[i] && chans.warned[i] == 1) {
            err("channel %d to %s is up again", i, o.host);
            chans.warned[i] = 0;
        }
    }
    return 0;
}

/* The connection for the next data message into *conn: PIO_DYNAMIC or
 * PIO_STATIC, or the next named channel that is up. Returns 0, or -1 (said)
 * when none has been up for CHAN_DOWN_WAIT_S or the piod cannot be asked.
 * (Not the connection itself: PIO_STATIC is -1.) */
static int conn_next(int *conn)
{
    *conn = o.balance;
    if (o.nchan == 0 && o.balance != BAL_USER)
        return 0;
    double t0 = now();
    for (;;) {
        if ((chans.n == 0 || now() - chans.last >= CHAN_LOOK_MS / 1000.0) && chan_look() != 0)
            return -1;
        for (int tries = 0; tries < chans.n; tries++) {
            int i = (int)(chans.next++ % (uint64_t)chans.n);
            if (chans.up[i]) {
                *conn = PIO_USER(i);
                return 0;
            }
        }
        if (now() - t0 >= CHAN_DOWN_WAIT_S)
            break;
        struct timespec ts = {0, CHAN_LOOK_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
    char opt[16] = "-b user";
    if (o.nchan > 0)
        snprintf(opt, sizeof(opt), "-n %d", o.nchan);
    o.transport = 1;
    if (chans.n == 1)
        err("%s: channel 0 to %s has been down for %.0f s; -b dynamic would use any channel up",
            opt, o.host, CHAN_DOWN_WAIT_S);
    else
        err("%s: channels 0 to %d to %s have all been down for %.0f s; -b dynamic would use any "
            "channel up",
            opt, chans.n - 1, o.host, CHAN_DOWN_WAIT_S);
    return -1;
}

/* The lanes of a file's message plan (pcp_plan): the channels its messages
 * take in turn (-n K, -b user), else the bundle's channels (asked once). */
static uint32_t plan_lanes(void)
{
    static uint32_t bundle;
    if (o.nchan > 0)
        return (uint32_t)o.nchan;
    if (o.balance == BAL_USER) {
        if (chans.n == 0 && chan_look() != 0)
            return 1;
        return chans.n > 0 ? (uint32_t)chans.n : 1;
    }
    if (!bundle) {
        PIO_Coninfo ci[CHAN_MAX];
        int n = 0;
        bundle = PIO_Getconinfo(o.partner, ci, CHAN_MAX, &n) == PIO_OK && n > 0 ? (uint32_t)n : 1;
    }
    return bundle;
}

/* pread all of n bytes at off; 0, or -1 (errno set; 0 when the file is shorter) */
static int read_full(int fd, uint8_t *b, size_t n, uint64_t off)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = pread(fd, b + got, n - got, (off_t)(off + got));
        if (r <= 0) {
            if (r == 0)
                errno = 0;
            return -1;
        }
        got += (size_t)r;
    }
    return 0;
}

/* The service's ACKs that came for session sid (PCP_F_ACK): the bytes it
 * has written, which the progress line counts. Returns 0, or -1 when the
 * service said ERR (said) or answered out of turn. */
static int take_acks(uint32_t sid, struct progress *pr)
{
    struct pcp_msg a;
    int r;
    while ((r = recv_ctl_within(sid, &a, 0)) == 0) {
        if (a.op != PCP_ACK) {
            err("%s: the file service answered out of turn (op %u)", pr->name, (unsigned)a.op);
            return -1;
        }
        pr->done = a.off;
    }
    if (r < 0)
        return -1;
    progress(pr, 0);
    return 0;
}

/* Wait for a data send, taking the service's ACKs meanwhile (the progress
 * line moves, or shows the stall, while the piods hold our data). Returns
 * the send's status, or -1 when the service said ERR (said). */
static int send_wait(uint32_t sid, PIO_Request *rq, struct progress *pr)
{
    int rc;
    while ((rc = PIO_Wait(rq, 250, NULL)) == PIO_ETIMEDOUT)
        if (take_acks(sid, pr) != 0)
            return -1;
    return rc;
}

/* Send one local file to remote path dst (an existing directory there gets
 * the file under its own name). */
static int put_file(const char *src, const char *dst)
{
    int fd = open(src, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        err("%s: %s", src, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        err("%s: %s", src, S_ISDIR(sb.st_mode) ? "is a directory (use -r)" : "not a regular file");
        close(fd);
        return -1;
    }
    cur.size = (uint64_t)sb.st_size;
    uint32_t sid = ++o.next_session;
    struct pcp_msg m;
    memset(&m, 0, sizeof(m));
    m.op = PCP_PUT;
    m.flags = (o.resume ? PCP_F_RESUME : 0) | (o.verify ? 0 : PCP_F_NOVERIFY) |
              (pcp_sparse(&sb) ? PCP_F_SPARSE : 0) | PCP_F_ACK | PCP_F_RAMP;
    m.type = plan_lanes();
    uint32_t lanes = m.type;
    m.size = (uint64_t)sb.st_size;
    m.mode = (uint32_t)sb.st_mode & 07777;
    m.mtime_sec = (int64_t)sb.st_mtim.tv_sec;
    m.mtime_nsec = (uint32_t)sb.st_mtim.tv_nsec;
    m.block = o.block;
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof(tmp), "%s", src);
    snprintf(m.text, sizeof(m.text), "%s", basename(tmp));
    snprintf(m.path, sizeof(m.path), "%s", dst);
    uint8_t *buf[WINDOW] = {0};
    PIO_Request rq[WINDOW] = {0}; /* NULL when none is outstanding */
    XXH3_state_t *hs = XXH3_createState();
    int rc = -1;
    for (int i = 0; i < WINDOW; i++)
        if (!(buf[i] = malloc(o.block))) {
            err("%s: out of memory", src);
            goto out;
        }
    if (!hs) {
        err("%s: out of memory", src);
        goto out;
    }
    if (send_ctl(sid, PCP_TAG_REQ, &m) != PIO_OK || recv_ctl(sid, &m) != 0)
        goto out;
    int ramp = (m.flags & PCP_F_RAMP) != 0; /* a service that knows the plan's ramps */
    uint64_t off = 0, size = (uint64_t)sb.st_size;
    if (m.off > 0) { /* the service holds a part: keep it if it is our prefix */
        uint64_t have = m.off, theirs = m.hash;
        if (pcp_hash_prefix(fd, have, hs, buf[0], o.block) == 0 && XXH3_64bits_digest(hs) == theirs)
            off = have;
    }
    if (off == 0)
        XXH3_64bits_reset(hs);
    memset(&m, 0, sizeof(m));
    m.op = PCP_GO;
    m.off = off;
    if (send_ctl(sid, PCP_TAG_CTL + (int)sid, &m) != PIO_OK)
        goto out;
    struct progress pr = {.name = src, .size = size, .done = off, .start_off = off, .t0 = now()};
    o.skipped_bytes += off;
    cur.start_off = off;
    tot.p.start_off += off;
    int busy[WINDOW] = {0}, conn[WINDOW] = {0};
    uint64_t k = 0;
    struct pcp_plan plan;
    pcp_plan_init(&plan, off, size, o.block, lanes, ramp);
    while (off < size) {
        int i = (int)(k % WINDOW);
        int wrc = busy[i] ? send_wait(sid, &rq[i], &pr) : PIO_OK;
        if (wrc < 0)
            goto out; /* the service's ERR, said */
        if (wrc != PIO_OK) {
            err_data(src, wrc, conn[i], off);
            goto out;
        }
        busy[i] = 0;
        size_t r = (size_t)pcp_plan_next(&plan);
        if (read_full(fd, buf[i], r, off) != 0) {
            err("%s: read: %s", src, errno ? strerror(errno) : "the file shrank while being sent");
            goto out;
        }
        XXH3_64bits_update(hs, buf[i], r);
        if (conn_next(&conn[i]) != 0)
            goto out;
        int prc = PIO_Isend(o.partner, 0, PCP_TAG_DATA + (int)sid, conn[i], buf[i], PIO_BYTE, r,
                            PIO_BLOCKING, &rq[i]);
        if (prc != PIO_OK) {
            err_data(src, prc, conn[i], off);
            goto out;
        }
        busy[i] = 1;
        off += (uint64_t)r;
        k++;
        if (take_acks(sid, &pr) != 0) /* the service's ERR (a full disk) stops us early */
            goto out;
    }
    for (int i = 0; i < WINDOW; i++) {
        int wrc = busy[i] ? send_wait(sid, &rq[i], &pr) : PIO_OK;
        busy[i] = 0;
        if (wrc < 0)
            goto out;
        if (wrc != PIO_OK) {
            err_data(src, wrc, conn[i], off);
            goto out;
        }
    }
    memset(&m, 0, sizeof(m));
    m.op = PCP_END;
    m.size = size;
    m.hash = XXH3_64bits_digest(hs);
    uint64_t mine = m.hash;
    if (send_ctl(sid, PCP_TAG_CTL + (int)sid, &m) != PIO_OK)
        goto out;
    do { /* ACKs of the last blocks, then the answer */
        if (recv_ctl(sid, &m) != 0)
            goto out;
        if (m.op == PCP_ACK) {
            pr.done = m.off;
            progress(&pr, 0);
        }
    } while (m.op == PCP_ACK);
    pr.done = size;
    if (o.verify && (m.size != size || m.hash != mine)) {
        err("%s: the other side reports size %llu, checksum %016llx; sent %llu, %016llx", src,
            (unsigned long long)m.size, (unsigned long long)m.hash, (unsigned long long)size,
            (unsigned long long)mine);
        goto out;
    }
    cur.hash = mine;
    cur.have_hash = 1;
    progress(&pr, 1);
    o.files++;
    o.bytes += size;
    rc = 0;
out:
    for (int i = 0; i < WINDOW; i++) {
        pcp_orphan(&rq[i], &buf[i]); /* a send still outstanding keeps its buffer */
        free(buf[i]);
    }
    XXH3_freeState(hs);
    close(fd);
    return rc;
}

static int remote_mkdir(const char *path, uint32_t mode)
{
    uint32_t sid = ++o.next_session;
    struct pcp_msg m;
    memset(&m, 0, sizeof(m));
    m.op = PCP_MKDIR;
    m.mode = mode;
    snprintf(m.path, sizeof(m.path), "%s", path);
    if (send_ctl(sid, PCP_TAG_REQ, &m) != PIO_OK || recv_ctl(sid, &m) != 0)
        return -1;
    return 0;
}

/* Open (create) the part file of a fetch and take it for this pcp: an
 * exclusive flock(2), so that two fetches to one destination never write
 * into one part file (the second is refused: errno EBUSY). The lock is
 * taken on the inode the name still leads to: one that its owner renamed
 * into place (or removed) meanwhile is let go and the name opened again.
 * Returns the descriptor (the lock goes with its close), or -1 with errno. */
static int part_lock(const char *part)
{
    for (int tries = 0; tries < 8; tries++) {
        int fd = open(part, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
            return -1;
        struct stat a, b;
        if (flock(fd, LOCK_EX | LOCK_NB) != 0 || fstat(fd, &a) != 0) {
            int e = errno == EWOULDBLOCK ? EBUSY : errno;
            close(fd);
            errno = e;
            return -1;
        }
        if (lstat(part, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            return fd;
        close(fd);
    }
    errno = EBUSY;
    return -1;
}

/* Fetch remote file src into local path dst (a file name, not a directory). */
static int get_file(const char *src, const char *dst)
{
    uint32_t sid = ++o.next_session;
    struct pcp_msg m;
    memset(&m, 0, sizeof(m));
    m.op = PCP_GET;
    m.block = o.block;
    m.flags = PCP_F_RAMP;
    m.type = plan_lanes();
    uint32_t lanes = m.type;
    snprintf(m.path, sizeof(m.path), "%s", src);
    if (send_ctl(sid, PCP_TAG_REQ, &m) != PIO_OK || recv_ctl(sid, &m) != 0)
        return -1;
    struct pcp_msg info = m;
    cur.size = info.size;
    char dcopy[PATH_MAX], bcopy[PATH_MAX], part[PATH_MAX];
    snprintf(dcopy, sizeof(dcopy), "%s", dst);
    snprintf(bcopy, sizeof(bcopy), "%s", dst);
    snprintf(part, sizeof(part), "%s/.%s.pcp-part", dirname(dcopy), basename(bcopy));
    uint8_t *buf[WINDOW] = {0};
    PIO_Request rq[WINDOW] = {0}; /* NULL when none is outstanding */
    XXH3_state_t *hs = XXH3_createState();
    int rc = -1, fd = part_lock(part);
    uint64_t size = info.size, off = 0;
    if (fd < 0) {
        if (errno == EBUSY)
            err("%s: busy: another pcp is fetching to it (part file %s); nothing was written, "
                "copy again when it is done",
                dst, part);
        else
            err("%s: %s", part, strerror(errno));
        memset(&m, 0, sizeof(m));
        m.op = PCP_BYE;
        send_ctl(sid, PCP_TAG_CTL + (int)sid, &m); /* the service waits for GO: let it go */
        goto out;
    }
    for (int i = 0; i < WINDOW; i++)
        if (!(buf[i] = malloc(o.block)) || !hs) {
            err("%s: out of memory", dst);
            memset(&m, 0, sizeof(m));
            m.op = PCP_BYE;
            send_ctl(sid, PCP_TAG_CTL + (int)sid, &m);
            goto out;
        }
    memset(&m, 0, sizeof(m));
    m.op = PCP_GO;
    struct stat sb;
    if (o.resume && fstat(fd, &sb) == 0 && sb.st_size > 0) {
        m.off = (uint64_t)sb.st_size < size ? (uint64_t)sb.st_size : size;
        if (hs && pcp_hash_prefix(fd, m.off, hs, buf[0], o.block) == 0)
            m.hash = XXH3_64bits_digest(hs);
        else
            m.off = 0;
    }
    if (send_ctl(sid, PCP_TAG_CTL + (int)sid, &m) != PIO_OK || recv_ctl(sid, &m) != 0)
        goto out;
    off = m.off;
    if (off == 0) {
        XXH3_64bits_reset(hs);
    } else if (pcp_hash_prefix(fd, off, hs, buf[0], o.block) != 0) {
        err("%s: %s", part, strerror(errno ? errno : EIO));
        goto out;
    }
    if (ftruncate(fd, (off_t)off) != 0) {
        err("%s: %s", part, strerror(errno));
        goto out;
    }
    struct progress pr = {.name = src, .size = size, .done = off, .start_off = off, .t0 = now()};
    o.skipped_bytes += off;
    cur.start_off = off;
    tot.p.start_off += off;
    uint64_t posted = off, k = 0, kdone = 0;
    struct pcp_plan plan; /* the service sends by the same plan */
    pcp_plan_init(&plan, off, size, o.block, lanes, (info.flags & PCP_F_RAMP) != 0);
    struct pcp_msg end;
    int have_end = 0; /* the service's END (or another step) came early */
    /* keep WINDOW receives posted; they complete in order (one tag, one source) */
    while (off < size) {
        while (posted < size && k - kdone < WINDOW) {
            size_t want = (size_t)pcp_plan_next(&plan);
            int prc = PIO_Irecv(o.partner, 0, PCP_TAG_DATA + (int)sid, buf[k % WINDOW], PIO_BYTE,
                                want, PIO_BLOCKING, &rq[k % WINDOW]);
            if (prc != PIO_OK) {
                char what[PATH_MAX + 64];
                snprintf(what, sizeof(what), "%s:%s", o.host, src);
                err_pio(what, prc);
                goto out;
            }
            posted += want;
            k++;
        }
        PIO_Status st;
        int i = (int)(kdone % WINDOW), wrc, waited = 0;
        /* while the data is late, look for the service's word: an ERR (the
         * source shrank, a read failed) ends the copy; END may come early */
        while ((wrc = PIO_Wait(&rq[i], 250, &st)) == PIO_ETIMEDOUT && (waited += 250) < 120000) {
            int r = have_end ? 1 : recv_ctl_within(sid, &end, 0);
            if (r < 0)
                goto out;
            have_end |= r == 0;
        }
        if (have_end && end.op != PCP_END) {
            err("%s:%s: the file service broke off the transfer", o.host, src);
            goto out;
        }
        if (wrc != PIO_OK) {
            o.transport = 1;
            err("%s:%s: data stopped at %llu of %llu bytes: %s (the part file %s is kept for "
                "--resume)",
                o.host, src, (unsigned long long)off, (unsigned long long)size, PIO_Strerror(wrc),
                part);
            goto out;
        }
        kdone++;
        XXH3_64bits_update(hs, buf[i], st.bytes);
        if (pcp_write(fd, buf[i], st.bytes, off, (info.flags & PCP_F_SPARSE) != 0) != 0) {
            err("%s: %s", dst, strerror(errno));
            if (errno == ENOSPC || errno == EDQUOT)
                unlink(part);
            goto out;
        }
        off += st.bytes;
        pr.done = off;
        progress(&pr, 0);
    }
    if (have_end)
        m = end;
    else if (recv_ctl(sid, &m) != 0)
        goto out;
    if (m.op != PCP_END) {
        o.transport = 1;
        err("%s:%s: the file service answered out of turn (op %u)", o.host, src, (unsigned)m.op);
        goto out;
    }
    uint64_t mine = XXH3_64bits_digest(hs);
    if (o.verify && (m.hash != mine || m.size != size)) {
        err("%s: checksum mismatch (sent %016llx, received %016llx): nothing kept", dst,
            (unsigned long long)m.hash, (unsigned long long)mine);
        unlink(part);
        goto out;
    }
    struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT},
                             {.tv_sec = (time_t)info.mtime_sec, .tv_nsec = info.mtime_nsec}};
    if (ftruncate(fd, (off_t)size) != 0 || fsync(fd) != 0 || /* size: a hole at the end */
        fchmod(fd, info.mode & 07777) != 0 || futimens(fd, ts) != 0 || rename(part, dst) != 0) {
        err("%s: %s", dst, strerror(errno));
        goto out;
    }
    cur.hash = mine;
    cur.have_hash = 1;
    progress(&pr, 1);
    o.files++;
    o.bytes += size;
    rc = 0;
out:
    for (int i = 0; i < WINDOW; i++) {
        pcp_orphan(&rq[i], &buf[i]); /* a receive still posted keeps its buffer */
        free(buf[i]);
    }
    XXH3_freeState(hs);
    if (fd >= 0)
        close(fd);
    return rc;
}

/* The size of remote file src (a GET the service answers, then BYE: no
 * data moves), for --dry-run. 0, or -1 (said). */
static int remote_size(const char *src, uint64_t *size)
{
    uint32_t sid = ++o.next_session;
    struct pcp_msg m;
    memset(&m, 0, sizeof(m));
    m.op = PCP_GET;
    m.block = o.block;
    snprintf(m.path, sizeof(m.path), "%s", src);
    if (send_ctl(sid, PCP_TAG_REQ, &m) != PIO_OK || recv_ctl(sid, &m) != 0)
        return -1;
    *size = m.size;
    memset(&m, 0, sizeof(m));
    m.op = PCP_BYE; /* the service waits for GO: let it go */
    send_ctl(sid, PCP_TAG_CTL + (int)sid, &m);
    return 0;
}

/* ---- the plan: what the copy does, made before it starts ---- */

enum job_kind {
    J_PUT,    /* send local src to remote dst */
    J_RMKDIR, /* make remote directory dst (mode) */
    J_GET,    /* fetch remote src into local dst */
    J_LMKDIR, /* make local directory dst */
    J_LCHMOD, /* set local directory dst's mode (after its files) */
};

struct job {
    int kind;
    char *src, *dst;
    uint64_t size;
    uint32_t mode;
};

static struct {
    struct job *j;
    size_t n, cap;
} plan;

static int plan_add(int kind, const char *src, const char *dst, uint64_t size, uint32_t mode)
{
    if (plan.n == plan.cap) {
        size_t cap = plan.cap ? 2 * plan.cap : 64;
        struct job *j = realloc(plan.j, cap * sizeof(*j));
        if (!j)
            goto oom;
        plan.j = j;
        plan.cap = cap;
    }
    struct job *j = &plan.j[plan.n];
    j->kind = kind;
    j->size = size;
    j->mode = mode;
    j->src = strdup(src ? src : "");
    j->dst = strdup(dst);
    if (!j->src || !j->dst) {
        free(j->src);
        free(j->dst);
        goto oom;
    }
    plan.n++;
    if (kind == J_PUT || kind == J_GET) {
        tot.nfiles++;
        tot.p.size += size;
    }
    return 0;
oom:
    err("%s: out of memory for the list of files", src ? src : dst);
    o.failed++;
    return -1;
}

static void plan_free(void)
{
    for (size_t i = 0; i < plan.n; i++) {
        free(plan.j[i].src);
        free(plan.j[i].dst);
    }
    free(plan.j);
    memset(&plan, 0, sizeof(plan));
}

/* --exclude: rel (a path below the source root) matches a pattern, as a
 * path (fnmatch with FNM_PATHNAME: '*' stays within a name) or by its
 * last name. */
static int excluded(const char *rel)
{
    const char *base = strrchr(rel, '/');
    base = base ? base + 1 : rel;
    for (int i = 0; i < o.nexcl; i++)
        if (fnmatch(o.excl[i], rel, FNM_PATHNAME) == 0 || fnmatch(o.excl[i], base, 0) == 0)
            return 1;
    return 0;
}

/* rel or one of the directories above it is excluded (a listed tree). */
static int excluded_path(const char *rel)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s", rel);
    for (char *s = strchr(p, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        int x = excluded(p);
        *s = '/';
        if (x)
            return 1;
    }
    return excluded(p);
}

static const char *kind_name(mode_t m)
{
    return S_ISLNK(m)    ? "symbolic link"
           : S_ISFIFO(m) ? "FIFO"
           : S_ISSOCK(m) ? "socket"
           : S_ISCHR(m)  ? "character device"
           : S_ISBLK(m)  ? "block device"
                         : "special file";
}

/* A --json row (type "skipped") for a non-regular file left out. */
static void json_skipped(const char *path, const char *kind)
{
    if (!o.json)
        return;
    json_object *r = json_object_new_object();
    if (r) {
        pio_cli_json_str(r, "type", "skipped");
        pio_cli_json_str(r, "path", path);
        pio_cli_json_str(r, "kind", kind);
    }
    pio_cli_json_print("pcp", r);
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Local tree src (rel: its path below the source root, "" for the root)
 * into the plan, to remote dst: directories, then their entries in name
 * order. Symbolic links and special files are skipped, each said. An error
 * (unreadable directory) is said and counted; the walk goes on. */
static void plan_tree(const char *src, const char *dst, const char *rel, int depth)
{
    struct stat sb; /* (the source named on the command line: followed, as cp -r does) */
    if ((depth == 0 ? stat(src, &sb) : lstat(src, &sb)) != 0) {
        err("%s: %s", src, strerror(errno));
        o.failed++;
        return;
    }
    if (*rel && excluded(rel))
        return;
    if (S_ISREG(sb.st_mode)) {
        plan_add(J_PUT, src, dst, (uint64_t)sb.st_size, (uint32_t)sb.st_mode & 07777);
        return;
    }
    if (!S_ISDIR(sb.st_mode)) {
        err("skipping non-regular file \"%s\" (%s)", src, kind_name(sb.st_mode));
        json_skipped(src, kind_name(sb.st_mode));
        o.skipped++;
        return;
    }
    if (depth > 64) {
        err("%s: more than 64 directories deep: not copied", src);
        o.failed++;
        return;
    }
    if (plan_add(J_RMKDIR, src, dst, 0, (uint32_t)sb.st_mode & 07777) != 0)
        return;
    DIR *d = opendir(src);
    if (!d) {
        err("%s: %s", src, strerror(errno));
        o.failed++;
        return;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (n == cap) {
            size_t c2 = cap ? 2 * cap : 32;
            char **nn = realloc(names, c2 * sizeof(*nn));
            if (!nn)
                break;
            names = nn;
            cap = c2;
        }
        if (!(names[n] = strdup(de->d_name)))
            break;
        n++;
    }
    if (de) {
        err("%s: out of memory for its entries", src);
        o.failed++;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof(*names), name_cmp);
    for (size_t i = 0; i < n; i++) {
        char s2[PATH_MAX], d2[PATH_MAX], r2[PATH_MAX];
        if (join(s2, sizeof(s2), src, names[i]) != 0 || join(d2, sizeof(d2), dst, names[i]) != 0)
            o.failed++;
        else if (!*rel)
            plan_tree(s2, d2, names[i], depth + 1);
        else if (join(r2, sizeof(r2), rel, names[i]) != 0)
            o.failed++;
        else
            plan_tree(s2, d2, r2, depth + 1);
        free(names[i]);
    }
    free(names);
}

/* Remote tree src (its listing, PCP_LIST) into the plan, to local dst: dst
 * and the directories (0700 while their files arrive), the files, then the
 * directories' modes, deepest first. */
static void plan_remote_tree(const char *src, const char *dst)
{
    uint32_t sid = ++o.next_session;
    struct pcp_msg m;
    memset(&m, 0, sizeof(m));
    m.op = PCP_LIST;
    m.flags = PCP_F_OTHERS; /* to say which ones are left out */
    snprintf(m.path, sizeof(m.path), "%s", src);
    if (send_ctl(sid, PCP_TAG_REQ, &m) != PIO_OK || recv_ctl(sid, &m) != 0) {
        o.failed++;
        return;
    }
    uint64_t n = m.size;
    struct pcp_msg *e = calloc(n ? n : 1, sizeof(*e));
    if (!e) {
        err("%s:%s: out of memory for %llu entries", o.host, src, (unsigned long long)n);
        o.failed++;
        return;
    }
    for (uint64_t i = 0; i < n; i++) {
        if (recv_ctl(sid, &e[i]) != 0) {
            o.failed++;
            free(e);
            return;
        }
        if (e[i].op != PCP_ENTRY || !pcp_path_ok(e[i].path)) {
            o.transport = 1;
            err("%s:%s: the file service listed an entry pcp does not take", o.host, src);
            free(e);
            return;
        }
    }
    plan_add(J_LMKDIR, NULL, dst, 0, 0700);
    for (uint64_t i = 0; i < n; i++) {
        char s2[PATH_MAX], d2[PATH_MAX];
        e[i].flags = excluded_path(e[i].path); /* (flags: "left out", from here on) */
        if (e[i].flags)
            continue;
        if (join(s2, sizeof(s2), src, e[i].path) != 0 ||
            join(d2, sizeof(d2), dst, e[i].path) != 0) {
            o.failed++;
            continue;
        }
        if (e[i].type == PCP_T_OTHER) { /* as for a local tree: said, left out */
            char where[PATH_MAX + 256];
            snprintf(where, sizeof(where), "%s:%s", o.host, s2);
            err("skipping non-regular file \"%s\" (%s)", where, kind_name((mode_t)e[i].mode));
            json_skipped(where, kind_name((mode_t)e[i].mode));
            o.skipped++;
            e[i].flags = 1;
        } else if (e[i].type == PCP_T_DIR) {
            plan_add(J_LMKDIR, s2, d2, 0, 0700);
        } else {
            plan_add(J_GET, s2, d2, e[i].size, e[i].mode);
        }
    }
    for (uint64_t i = n; i-- > 0;) { /* modes last: a read-only one stays writable until then */
        char d2[PATH_MAX];
        if (e[i].type == PCP_T_DIR && !e[i].flags && join(d2, sizeof(d2), dst, e[i].path) == 0)
            plan_add(J_LCHMOD, NULL, d2, 0, e[i].mode & 07777);
    }
    free(e);
}

/* "HOST:PATH" for a --json row */
static json_object *json_remote(const char *path)
{
    char b[PATH_MAX + 256];
    snprintf(b, sizeof(b), "%s:%s", o.host, path);
    return json_object_new_string(b);
}

static json_object *json_fixed(double v, const char *fmt)
{
    char b[64];
    snprintf(b, sizeof(b), fmt, v);
    return json_object_new_double_s(v, b);
}

/* The --json row of a file (type "file"): path, dest, size, bytes copied
 * (this run), resumed_bytes, seconds, xxh3 (hex; null when not copied),
 * verified, ok, and error (the message) when it failed. */
static void json_file(const struct job *j, int ok, double secs)
{
    json_object *r = json_object_new_object();
    if (r) {
        int put = j->kind == J_PUT;
        pio_cli_json_str(r, "type", "file");
        json_object_object_add(r, "path",
                               put ? json_object_new_string(j->src) : json_remote(j->src));
        json_object_object_add(r, "dest",
                               put ? json_remote(j->dst) : json_object_new_string(j->dst));
        pio_cli_json_u64(r, "size", o.dry_run ? j->size : cur.size);
        if (!o.dry_run) {
            pio_cli_json_u64(r, "bytes", ok ? cur.size - cur.start_off : 0);
            pio_cli_json_u64(r, "resumed_bytes", ok ? cur.start_off : 0);
            json_object_object_add(r, "seconds", json_fixed(secs, "%.3f"));
            char h[20];
            snprintf(h, sizeof(h), "%016llx", (unsigned long long)cur.hash);
            json_object_object_add(r, "xxh3",
                                   ok && cur.have_hash ? json_object_new_string(h) : NULL);
            json_object_object_add(r, "verified", json_object_new_boolean(ok && o.verify));
            json_object_object_add(r, "ok", json_object_new_boolean(ok));
            if (!ok)
                pio_cli_json_str(r, "error", o.last_err);
        }
    }
    pio_cli_json_print("pcp", r);
}

/* Copy one file of the plan: its row, the total line. */
static void run_file(const struct job *j)
{
    memset(&cur, 0, sizeof(cur));
    cur.size = j->size;
    o.last_err[0] = '\0';
    double t0 = now();
    int rc = j->kind == J_PUT ? put_file(j->src, j->dst) : get_file(j->src, j->dst);
    double secs = now() - t0;
    if (rc != 0)
        o.failed++;
    if (o.json)
        json_file(j, rc == 0, secs);
    if (tot.on) {
        tot.files++;
        tot.p.size -= j->size;
        if (rc == 0) { /* its size now, which may have changed since the plan was made */
            tot.p.size += cur.size;
            tot.base += cur.size;
        } else if (tot.p.start_off > tot.base) {
            tot.p.start_off = tot.base; /* (its resumed bytes no longer count) */
        }
        tot.p.done = tot.base;
        progress_total(now(), 0);
    }
}

/* dir is a directory of the plan that could not be made: skip what is in it. */
static size_t skip_under(size_t i, const char *dir)
{
    size_t len = strlen(dir);
    while (i + 1 < plan.n && strncmp(plan.j[i + 1].dst, dir, len) == 0 &&
           plan.j[i + 1].dst[len] == '/') {
        i++;
        if (plan.j[i].kind == J_PUT || plan.j[i].kind == J_GET)
            o.failed++;
        if (tot.on && (plan.j[i].kind == J_PUT || plan.j[i].kind == J_GET)) {
            tot.files++;
            tot.p.size -= plan.j[i].size;
        }
    }
    return i;
}

static void run_plan(void)
{
    for (size_t i = 0; i < plan.n; i++) {
        struct job *j = &plan.j[i];
        switch (j->kind) {
        case J_PUT:
        case J_GET: run_file(j); break;
        case J_RMKDIR:
            if (remote_mkdir(j->dst, j->mode) != 0) {
                o.failed++;
                i = skip_under(i, j->dst);
            }
            break;
        case J_LMKDIR:
            if (mkdir(j->dst, 0700) != 0 && errno != EEXIST) {
                err("%s: %s", j->dst, strerror(errno));
                o.failed++;
                i = skip_under(i, j->dst);
            }
            break;
        case J_LCHMOD: chmod(j->dst, j->mode); break;
        }
    }
}

/* --dry-run: the files the plan copies, and their total (or --json rows) */
static void plan_print(void)
{
    uint64_t n = 0, bytes = 0;
    for (size_t i = 0; i < plan.n; i++) {
        struct job *j = &plan.j[i];
        if (j->kind != J_PUT && j->kind != J_GET)
            continue;
        n++;
        bytes += j->size;
        if (o.json)
            json_file(j, 1, 0);
        else if (j->kind == J_PUT)
            printf("%s -> %s:%s (%llu bytes)\n", j->src, o.host, j->dst,
                   (unsigned long long)j->size);
        else
            printf("%s:%s -> %s (%llu bytes)\n", o.host, j->src, j->dst,
                   (unsigned long long)j->size);
    }
    char h[32];
    human((double)bytes, h, sizeof(h));
    if (!o.json)
        printf("total: %llu file%s, %llu bytes (%s) would be copied\n", (unsigned long long)n,
               n == 1 ? "" : "s", (unsigned long long)bytes, h);
    o.files = n;
    o.bytes = bytes;
}

/* ---- setup ---- */

/* "HOST:PATH" -> host and path (1), or a local path (0). The export root
 * is "HOST:", "HOST:.", "HOST:./", "HOST:/" and "HOST:~" (path "."), and
 * "HOST:~/X" is X in it: what scp users type for "there, at the top". */
static int split_remote(char *arg, char **host, char **path)
{
    char *c = strchr(arg, ':');
    char *slash = strchr(arg, '/');
    if (!c || c == arg || (slash && slash < c))
        return 0;
    *c = '\0';
    *host = arg;
    *path = c + 1;
    if ((*path)[0] == '~' && ((*path)[1] == '/' || (*path)[1] == '\0'))
        *path += 1 + strspn(*path + 1, "/");
    if (**path == '/' && (*path)[strspn(*path, "/")] == '\0')
        *path += strlen(*path);
    if (!**path || strcmp(*path, "./") == 0)
        *path = ".";
    return 1;
}

/* Why is there no file service for host? Ask our piod what it knows. */
static void explain_no_service(void)
{
    const char *sock = getenv("PIO_SOCKET");
    struct pio_frame *f = calloc(1, sizeof(*f));
    if (!f || pio_info_fetch(sock && *sock ? sock : "/run/pio/piod.sock", 3000, f) != PIO_OK) {
        err("%s: no file service found", o.host);
        free(f);
        return;
    }
    int known = 0, up = 0;
    for (uint32_t i = 0; i < f->u.p_info.nchan; i++)
        if (strcmp(f->u.p_info.chan[i].peer, o.host) == 0) {
            known = 1;
            up |= f->u.p_info.chan[i].state == PIO_WCHAN_UP;
        }
    if (!known)
        err("%s: unknown host: this host's piod has no peer %s (add [peer %s] with its "
            "addresses to piod.conf)",
            o.host, o.host, o.host);
    else if (!up)
        err("%s: its piod does not answer: no channel to it is up (is piod running there? are "
            "the links up?)",
            o.host);
    else
        err("%s: the piod there serves no files: set `export = DIR` in its piod.conf", o.host);
    free(f);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: pcp [options] SRC... HOST:DST\n"
               "       pcp [options] HOST:SRC... DST\n"
               "  -r              copy directories (into DST/NAME); symbolic links and special\n"
               "                  files in them are skipped, each with a warning\n"
               "  -n CHANNELS     use channels 0..CHANNELS-1, a message each in turn\n"
               "  -b user|static|dynamic  balancing (default dynamic)\n"
               "  --chunk SIZE    bytes per message (default 8M; K, M suffixes)\n"
               "  --resume        continue from a verified partial copy\n"
               "  --no-verify     do not compare checksums (the default verifies)\n"
               "  --exclude PATTERN  leave out files and directories whose path below the\n"
               "                  source or whose name matches (fnmatch; repeatable)\n"
               "  --dry-run       list the files that would be copied, and their total\n"
               "  -q              no progress output     -v  per-channel state\n"
               "  --progress      progress lines also when standard error is no terminal\n"
               "  --json          a JSON line per file and a summary line on stdout\n"
               "  --version       print pcp's version\n"
               "exit status: 0 all copied, 1 usage error, 3 a local source or destination\n"
               "  is missing (nothing copied), 10 no connection (no piod here, HOST unknown\n"
               "  or down, no export there), 12 the connection broke during the copy,\n"
               "  23 partial: some files not copied (errors said, non-regular files skipped)\n");
}

/* The local arguments, before piod is asked anything: each source of a
 * send exists, is readable and is a file (or, with -r, a directory); a
 * fetch's destination folder exists and may be written. 0, or -1 (each
 * problem said). */
static int check_local(int put, char **src, int nsrc, const char *last)
{
    int bad = 0;
    if (put) {
        for (int i = 0; i < nsrc; i++) {
            struct stat sb;
            if (stat(src[i], &sb) != 0 || access(src[i], R_OK) != 0) {
                err("%s: %s", src[i], strerror(errno));
                bad = 1;
            } else if (S_ISDIR(sb.st_mode) && !o.recursive) {
                err("%s: is a directory (use -r)", src[i]);
                bad = 1;
            } else if (!S_ISDIR(sb.st_mode) && !S_ISREG(sb.st_mode)) {
                err("%s: not a regular file (%s)", src[i], kind_name(sb.st_mode));
                bad = 1;
            }
        }
        return bad ? -1 : 0;
    }
    struct stat sb;
    if (stat(last, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        if (access(last, W_OK | X_OK) != 0) {
            err("%s: %s", last, strerror(errno));
            return -1;
        }
        return 0;
    }
    if (nsrc > 1) {
        err("%s: %s (several sources go into a directory)", last,
            errno == ENOENT ? strerror(ENOENT) : strerror(ENOTDIR));
        return -1;
    }
    char copy[PATH_MAX];
    snprintf(copy, sizeof(copy), "%s", last);
    const char *dir = dirname(copy);
    if (stat(dir, &sb) != 0) {
        err("%s: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(sb.st_mode)) {
        err("%s: %s", dir, strerror(ENOTDIR));
        return -1;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        err("%s: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* The --json summary line (type "summary"). */
static void json_summary(double secs, int code)
{
    json_object *r = json_object_new_object();
    if (r) {
        pio_cli_json_str(r, "type", "summary");
        pio_cli_json_u64(r, "files", o.files);
        pio_cli_json_u64(r, "bytes", o.bytes);
        pio_cli_json_u64(r, "resumed_bytes", o.skipped_bytes);
        json_object_object_add(r, "seconds", json_fixed(secs, "%.3f"));
        json_object_object_add(r, "MBps",
                               json_fixed(secs > 0 && !o.dry_run
                                              ? (double)(o.bytes - o.skipped_bytes) / secs / 1e6
                                              : 0,
                                          "%.3f"));
        json_object_object_add(r, "verified", json_object_new_boolean(o.verify && !o.dry_run));
        json_object_object_add(r, "ok", json_object_new_boolean(code == EXIT_OK));
        pio_cli_json_u64(r, "failed", o.failed);
        pio_cli_json_u64(r, "skipped", o.skipped);
        json_object_object_add(r, "dry_run", json_object_new_boolean(o.dry_run));
        pio_cli_json_u64(r, "exit", (uint64_t)code);
    }
    pio_cli_json_print("pcp", r);
}

static int exit_code(void)
{
    if (o.transport)
        return EXIT_LOST;
    return o.failed || o.skipped ? EXIT_PARTIAL : EXIT_OK;
}

int main(int argc, char **argv)
{
    enum {
        O_CHUNK = 256,
        O_RESUME,
        O_NOVERIFY,
        O_VERIFY,
        O_JSON,
        O_PROGRESS,
        O_DRYRUN,
        O_EXCLUDE,
        O_VERSION
    };
    static const struct option opts[] = {{"chunk", required_argument, 0, O_CHUNK},
                                         {"resume", no_argument, 0, O_RESUME},
                                         {"verify", no_argument, 0, O_VERIFY},
                                         {"no-verify", no_argument, 0, O_NOVERIFY},
                                         {"json", no_argument, 0, O_JSON},
                                         {"progress", no_argument, 0, O_PROGRESS},
                                         {"dry-run", no_argument, 0, O_DRYRUN},
                                         {"exclude", required_argument, 0, O_EXCLUDE},
                                         {"version", no_argument, 0, O_VERSION},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    o.excl = calloc((size_t)argc, sizeof(*o.excl)); /* at most one pattern an argument */
    if (!o.excl) {
        err("out of memory");
        return EXIT_USAGE;
    }
    while ((c = getopt_long(argc, argv, "rn:b:qvh", opts, NULL)) != -1) {
        switch (c) {
        case 'r': o.recursive = 1; break;
        case 'n':
            o.nchan = atoi(optarg);
            if (o.nchan < 1 || o.nchan > CHAN_MAX) {
                err("-n %s: give a number of channels from 1 to 64", optarg);
                return EXIT_USAGE;
            }
            break;
        case 'b':
            if (strcmp(optarg, "dynamic") == 0)
                o.balance = PIO_DYNAMIC;
            else if (strcmp(optarg, "static") == 0)
                o.balance = PIO_STATIC;
            else if (strcmp(optarg, "user") == 0)
                o.balance = BAL_USER;
            else {
                err("-b %s: use user, static or dynamic", optarg);
                return EXIT_USAGE;
            }
            break;
        case O_CHUNK: {
            char *end;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (*end == 'K' || *end == 'k')
                v <<= 10, end++;
            else if (*end == 'M' || *end == 'm')
                v <<= 20, end++;
            if (*end || v < 4096 || v > (64ull << 20)) {
                err("--chunk %s: give 4K to 64M", optarg);
                return EXIT_USAGE;
            }
            o.block = v;
            break;
        }
        case O_RESUME: o.resume = 1; break;
        case O_VERIFY: o.verify = 1; break;
        case O_NOVERIFY: o.verify = 0; break;
        case O_JSON: o.json = 1; break;
        case O_PROGRESS: o.progress = 1; break;
        case O_DRYRUN: o.dry_run = 1; break;
        case O_EXCLUDE:
            if (!*optarg) {
                err("--exclude: give a pattern");
                return EXIT_USAGE;
            }
            o.excl[o.nexcl++] = optarg;
            break;
        case O_VERSION: return pio_cli_version("pcp");
        case 'q': o.quiet = 1; break;
        case 'v': o.verbose = 1; break;
        case 'h': usage(stdout); return EXIT_OK;
        default: usage(stderr); return EXIT_USAGE;
        }
    }
    if (argc - optind < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    chans.n = o.nchan; /* -b user: every channel, counted at the first look */
    o.tty = isatty(2);
    char *dsthost = NULL, *dstpath = NULL, *last = argv[argc - 1];
    int put = split_remote(last, &dsthost, &dstpath);
    o.put = put;
    char srchost_buf[PATH_MAX], *srchost = NULL;
    for (int i = optind; i < argc - 1; i++) {
        char *h, *p, copy[PATH_MAX];
        snprintf(copy, sizeof(copy), "%s", argv[i]);
        int remote = split_remote(copy, &h, &p);
        if (remote == put) {
            err("%s: give local sources and a remote HOST:DST, or remote HOST:SRC and a local "
                "DST",
                argv[i]);
            return EXIT_USAGE;
        }
        if (remote) {
            if (srchost && strcmp(srchost, h) != 0) {
                err("all remote sources must be on one host");
                return EXIT_USAGE;
            }
            snprintf(srchost_buf, sizeof(srchost_buf), "%s", h);
            srchost = srchost_buf;
        }
    }
    o.host = put ? dsthost : srchost;
    if (check_local(put, argv + optind, argc - 1 - optind, last) != 0)
        return EXIT_LOCAL;
    o.t0 = now();
    if (put) { /* the plan, from the local sources */
        for (int i = optind; i < argc - 1; i++) {
            char dst[PATH_MAX], copy[PATH_MAX];
            snprintf(copy, sizeof(copy), "%s", argv[i]);
            const char *name = basename(copy);
            if (excluded(name))
                continue;
            struct stat sb;
            if (stat(argv[i], &sb) != 0) { /* gone since check_local */
                err("%s: %s", argv[i], strerror(errno));
                o.failed++;
            } else if (!S_ISDIR(sb.st_mode)) {
                plan_add(J_PUT, argv[i], dstpath, (uint64_t)sb.st_size, 0);
            } else if (join(dst, sizeof(dst), dstpath, name) != 0) {
                o.failed++;
            } else if (plan_add(J_RMKDIR, NULL, dstpath, 0, 0755) == 0) {
                plan_tree(argv[i], dst, "", 0);
            }
        }
        if (o.dry_run) { /* nothing to ask the other side */
            plan_print();
            int code = exit_code();
            if (o.json)
                json_summary(now() - o.t0, code);
            plan_free();
            return code;
        }
    }
    char app[PIO_NAME_MAX], me[64] = "host";
    gethostname(me, sizeof(me) - 1);
    snprintf(app, sizeof(app), "pcp.%.20s.%ld", me, (long)getpid());
    setenv("PCP_APP", app, 1);
    if (!getenv("PIO_PARTNER_TIMEOUT"))
        setenv("PIO_PARTNER_TIMEOUT", "10", 1);
    int rc = PIO_Init(app, 0, 1);
    if (rc != PIO_OK) {
        err("cannot reach this host's piod: %s", PIO_Strerror(rc));
        plan_free();
        return EXIT_CONNECT;
    }
    char svc[PIO_NAME_MAX];
    snprintf(svc, sizeof(svc), "pio.files.%s", o.host);
    if ((rc = PIO_Setpartner(svc, &o.partner)) != PIO_OK) {
        if (rc == PIO_EPARTNER)
            explain_no_service();
        else
            err("%s: %s", o.host, PIO_Strerror(rc));
        PIO_Exit();
        plan_free();
        return EXIT_CONNECT;
    }
    if (!put) { /* the plan, from the remote sources (their listings, with -r) */
        struct stat sb;
        int isdir = stat(last, &sb) == 0 && S_ISDIR(sb.st_mode);
        for (int i = optind; i < argc - 1 && !o.transport; i++) {
            char *h, *p, copy[PATH_MAX], b[PATH_MAX], dst[PATH_MAX];
            snprintf(copy, sizeof(copy), "%s", argv[i]);
            split_remote(copy, &h, &p);
            snprintf(b, sizeof(b), "%s", p);
            const char *name = basename(b);
            if (excluded(name))
                continue;
            if (!isdir)
                snprintf(dst, sizeof(dst), "%s", last);
            else if (join(dst, sizeof(dst), last, name) != 0) {
                o.failed++;
                continue;
            }
            uint64_t size = 0;
            if (o.recursive)
                plan_remote_tree(p, dst);
            else if (!o.dry_run || remote_size(p, &size) == 0)
                plan_add(J_GET, p, dst, size, 0);
            else
                o.failed++;
        }
    }
    if (o.dry_run) {
        plan_print();
    } else {
        tot.on = o.recursive && o.tty && !o.quiet;
        tot.p.t0 = now();
        run_plan();
        if (tot.on)
            progress_total(now(), 1);
    }
    int code = exit_code();
    if (o.json)
        json_summary(now() - o.t0, code);
    plan_free();
    PIO_Exit();
    pcp_orphans_reap(); /* every request is done now: free their buffers */
    free(o.excl);
    return code;
}
