/* srv.c - receiving, answering and logging for the pfs servers (srv.h).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The partner cache: a request names its sender's application; the first
 * request from it costs a PIO_Addpartner, later ones a table look-up under
 * part_mtx (never held across a PIO call that waits). */
#include "srv.h"
#include "memtrim.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *log_who = "pfs";
static pthread_mutex_t part_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char name[PFS_NAME_MAX];
    int handle;
} parts[64];
static int nparts;

void pfs_log_name(const char *who)
{
    log_who = who;
}

void pfs_log(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s\n", log_who, line);
}

int64_t pfs_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int pfs_srv_recv(int cls, uint8_t *buf, size_t cap, int timeout, struct pfs_msg *m)
{
    for (;;) {
        pio_mem_trim_tick();
        PIO_Status st;
        int rc = PIO_Recv(PIO_ANY_PARTNER, PIO_ANY_PROCESS, PFS_TAG_REQ + cls, buf, PIO_BYTE, cap,
                          timeout, PIO_BLOCKING, &st);
        if (rc == PIO_ETRUNC) { /* too big for any request: take it and drop it */
            uint8_t *junk = malloc(st.bytes ? st.bytes : 1);
            if (!junk)
                return PIO_ENOMEM;
            PIO_Recv(PIO_ANY_PARTNER, st.source, PFS_TAG_REQ + cls, junk, PIO_BYTE, st.bytes, 1000,
                     PIO_BLOCKING, NULL);
            free(junk);
            pfs_log("dropped a request of %zu bytes (at most %zu)", st.bytes, cap);
            continue;
        }
        if (rc == PIO_ETYPE) { /* not bytes: take it as what it is and drop it */
            pfs_log("dropped a request sent as datatype %d", st.datatype);
            uint8_t *junk = malloc(st.bytes ? st.bytes : 1);
            if (!junk)
                return PIO_ENOMEM;
            PIO_Recv(PIO_ANY_PARTNER, st.source, PFS_TAG_REQ + cls, junk, st.datatype, st.count,
                     1000, PIO_BLOCKING, NULL);
            free(junk);
            continue;
        }
        if (rc != PIO_OK)
            return rc;
        if (pfs_msg_decode(buf, st.bytes, m) != 0 || m->op == PFS_OP_REPLY || !m->client[0]) {
            pfs_log("dropped a malformed request of %zu bytes from process %d", st.bytes,
                    st.source);
            continue;
        }
        /* who sent it is the piods' word, whatever the message says */
        m->from_uid = st.uid;
        m->from_gid = st.gid;
        snprintf(m->from_user, sizeof(m->from_user), "%s", st.user);
        snprintf(m->client, sizeof(m->client), "%s", st.app); /* the answer goes there */
        if (strlen(st.user) < sizeof(m->user) && st.user[0])  /* the per-user caps count by it */
            snprintf(m->user, sizeof(m->user), "%s", st.user);
        else
            snprintf(m->user, sizeof(m->user), "#%u", st.uid);
        return PIO_OK;
    }
}

int pfs_srv_partner(const char *name, int *partner)
{
    pthread_mutex_lock(&part_mtx);
    for (int i = 0; i < nparts; i++)
        if (strcmp(parts[i].name, name) == 0) {
            *partner = parts[i].handle;
            pthread_mutex_unlock(&part_mtx);
            return PIO_OK;
        }
    pthread_mutex_unlock(&part_mtx);
    int h, rc = PIO_Addpartner(name, &h);
    if (rc != PIO_OK)
        return rc;
    pthread_mutex_lock(&part_mtx);
    /* PIO reuses the slot of a departed application: drop stale names */
    for (int i = 0; i < nparts; i++)
        if (parts[i].handle == h)
            parts[i] = parts[--nparts];
    if (nparts < 64) {
        snprintf(parts[nparts].name, sizeof(parts[nparts].name), "%s", name);
        parts[nparts++].handle = h;
    }
    pthread_mutex_unlock(&part_mtx);
    *partner = h;
    return PIO_OK;
}

void pfs_srv_partner_forget(const char *name, int partner)
{
    pthread_mutex_lock(&part_mtx);
    for (int i = 0; i < nparts; i++)
        if (parts[i].handle == partner && strcmp(parts[i].name, name) == 0) {
            parts[i] = parts[--nparts];
            break;
        }
    pthread_mutex_unlock(&part_mtx);
}

int pfs_srv_reply(const struct pfs_msg *req, struct pfs_msg *rep)
{
    int partner, rc = pfs_srv_partner(req->client, &partner);
    if (rc != PIO_OK)
        return rc;
    rep->op = PFS_OP_REPLY;
    rep->rid = req->rid;
    rep->proc = req->proc;
    size_t cap = PFS_HDR_MAX + rep->dlen;
    uint8_t stackbuf[PFS_HDR_MAX + 4096];
    uint8_t *buf = cap <= sizeof(stackbuf) ? stackbuf : malloc(cap);
    if (!buf)
        return PIO_ENOMEM;
    size_t n = pfs_msg_encode(rep, buf, cap);
    for (int tries = 0; tries < 2; tries++) {
        rc = n ? PIO_Send(partner, (int)req->proc, PFS_TAG_REP + (int)(req->rid % PFS_RID_SPAN),
                          PIO_DYNAMIC, buf, PIO_BYTE, n, PIO_BLOCKING)
               : PIO_EINTERNAL;
        /* a cached handle of a departed process whose name came back (a
         * reused pid): look the name up afresh, once */
        if (rc != PIO_EGONE || tries > 0)
            break;
        pfs_srv_partner_forget(req->client, partner);
        if (pfs_srv_partner(req->client, &partner) != PIO_OK)
            break;
    }
    if (buf != stackbuf)
        free(buf);
    return rc;
}

int pfs_srv_fail(const struct pfs_msg *req, int st, const char *fmt, ...)
{
    struct pfs_msg rep;
    memset(&rep, 0, sizeof(rep));
    rep.err = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rep.text, sizeof(rep.text), fmt, ap);
    va_end(ap);
    return pfs_srv_reply(req, &rep);
}

static volatile int *stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    if (stop_flag)
        *stop_flag = 1;
}

void pfs_srv_signals(volatile int *stop)
{
    stop_flag = stop;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* ---- command lines -------------------------------------------------------- */
