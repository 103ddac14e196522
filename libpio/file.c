/* file.c - remote merged output (PIO_File_*) and remote file access (PIO_Rfile_*).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A client of the host's file service (tools/pcp/pio-files.c), in the same
 * protocol as pcp (wire/pcp_proto.h): each process opens its own
 * session (FOPEN); a block is a WRITE step with its offset, then the bytes
 * as one message on the session's data tag; FCLOSE is answered once every
 * process of the application has closed and the service has synced and
 * renamed the file. Only the public API is used, so none of libpio's locks
 * are held here.
 *
 * HDF5 mode (PIO_File_open_dataset): the same sessions; FOPEN carries the
 * dataset (name, type, shape) and each WRITE a hyperslab, whose elements
 * travel typed (libpio converts byte order) and which the service writes
 * with libhdf5. A slab bigger than one data message is cut into pieces that
 * are contiguous in the caller's buffer: single indices on the leading
 * dimensions, a run on one, the trailing ones whole (slab_pieces).
 *
 * Remote file access (PIO_Rfile_*): a session of its own (ROPEN) per open
 * file; the client exposes a staging window (RFILE_STAGE bytes) and the
 * service puts each READ's bytes into it one-sidedly (PIO_Put), then says
 * how many; the client copies them out. Sequential preads read ahead
 * (below, "remote file access"). A PIO_Rfile is used by one thread at a
 * time (a mutex makes concurrent preads take turns).
 */
#include "pio.h"
#include "err.h"
#include "types.h"
#include "win.h"
#include "wire/pcp_proto.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FILE_BLOCK_MAX (64u << 20) /* the service's largest data message */

struct pio_file {
    char host[PIO_NAME_MAX];
    int partner;
    uint32_t sid;
    uint64_t writes, bytes;
    int h5; /* HDF5 mode: the dataset below */
    int type, ndims;
    uint64_t dims[PIO_FILE_MAXDIMS];
};

/* Session numbers, unique per process incarnation: a reply sent to an
 * earlier process with the same application name and number (one that died
 * before reading it) is still delivered to its successor, and must not match
 * the successor's session. Above 2^24: apart from a pcp's own sessions. */
static atomic_uint next_sid;

static uint32_t sid_new(void)
{
    uint32_t n = atomic_fetch_add(&next_sid, 1);
    return (1u << 24) + (((uint32_t)getpid() % 4096u) << 16) + (n & 0xffffu);
}

/* The remote side's words on this thread's last failure (PIO_File_error_text). */
static _Thread_local char err_text[PCP_TEXT_MAX + PIO_NAME_MAX + 2];

const char *PIO_File_error_text(void)
{
    return err_text;
}

static int ctl_send(struct pio_file *f, int tag, struct pcp_msg *m)
{
    uint8_t buf[PCP_MSG_MAX];
    m->session = f->sid;
    size_t n = pcp_msg_encode(m, buf);
    return PIO_Send(f->partner, 0, tag, PIO_DYNAMIC, buf, PIO_BYTE, n, PIO_BLOCKING);
}

static int ctl_recv(struct pio_file *f, struct pcp_msg *m, int timeout)
{
    uint8_t buf[PCP_MSG_MAX];
    PIO_Status st;
    int rc = PIO_Recv(f->partner, 0, PCP_TAG_CTL + (int)f->sid, buf, PIO_BYTE, sizeof(buf), timeout,
                      PIO_BLOCKING, &st);
    if (rc != PIO_OK)
        return rc;
    if (pcp_msg_decode(buf, st.bytes, m) != 0)
        return PIO_EPROTO;
    if (m->op == PCP_ERR) {
        snprintf(err_text, sizeof(err_text), "%s: %s", f->host, m->text);
        return m->err == EXDEV ? PIO_EPERM : m->err == ENOSPC ? PIO_EIO : pio_from_errno(m->err);
    }
    return PIO_OK;
}

/* PIO_FILE_WAIT: how long the closes of a merged file wait without news of
 * it (an open, a write, a close) before the service gives up on the
 * processes that never opened or never closed it. Milliseconds into *ms
 * (0: unset, the service's default of 60 s); PIO_EINVAL with the words in
 * err_text when it is not a number of seconds in (0, 1e6]. */
static int file_wait_ms(uint64_t *ms)
{
    const char *v = getenv("PIO_FILE_WAIT");
    *ms = 0;
    if (!v || !*v)
        return PIO_OK;
    char *end;
    double s = strtod(v, &end);
    if (end == v || *end || !(s > 0 && s <= 1e6)) {
        snprintf(err_text, sizeof(err_text),
                 "PIO_FILE_WAIT=%.40s: give the seconds a close may wait (> 0, default 60)", v);
        return PIO_EINVAL;
    }
    *ms = (uint64_t)(s * 1e3 + 0.5);
    if (*ms == 0)
        *ms = 1;
    return PIO_OK;
}

/* Both modes: join the host's file service and open a session (m: FOPEN
 * filled in but for the session and client). */
static int file_open(const char *host, const char *path, struct pcp_msg *m, struct pio_file *f)
{
    if (!host || !*host || !path || !*path || strlen(path) >= PCP_PATH_MAX ||
        strlen(host) >= sizeof(f->host))
        return PIO_EINVAL;
    uint64_t wait_ms = 0;
    if (m->op != PCP_ROPEN && file_wait_ms(&wait_ms) != PIO_OK)
        return PIO_EINVAL;
    snprintf(f->host, sizeof(f->host), "%s", host);
    PIO_Appinfo me;
    int rc = PIO_Getappinfo(PIO_SELF, &me);
    if (rc != PIO_OK)
        return rc;
    char svc[PIO_NAME_MAX];
    if (snprintf(svc, sizeof(svc), "pio.files.%s", host) >= (int)sizeof(svc))
        return PIO_EINVAL;
    if ((rc = PIO_Addpartner(svc, &f->partner)) != PIO_OK)
        return rc;
    f->sid = sid_new();
    if (m->op != PCP_ROPEN) {
        m->op = PCP_FOPEN;
        m->size = (uint64_t)me.nprocs;
        m->mode = 0644;
        m->block = wait_ms;
    }
    snprintf(m->client, sizeof(m->client), "%s", me.name);
    snprintf(m->path, sizeof(m->path), "%s", path);
    if ((rc = ctl_send(f, PCP_TAG_REQ, m)) != PIO_OK)
        return rc;
    return ctl_recv(f, m, 120000);
}

int PIO_File_open(const char *host, const char *path, int mode, PIO_File *fh)
{
    err_text[0] = '\0';
    if (!fh)
        return PIO_EINVAL;
    if (mode != PIO_FILE_RAW)
        return mode == PIO_FILE_HDF5 ? PIO_EINVAL : PIO_ENOSYS;
    struct pio_file *f = calloc(1, sizeof(*f));
    if (!f)
        return PIO_ENOMEM;
    struct pcp_msg m;
    memset(&m, 0, sizeof(m));
    int rc = file_open(host, path, &m, f);
    if (rc != PIO_OK) {
        free(f);
        return rc;
    }
    *fh = f;
    return PIO_OK;
}

/* The element types HDF5 mode carries (integers and reals). */
static int h5_type_ok(int t)
{
    return t >= PIO_CHAR && t <= PIO_DOUBLE_PRECISION && t != PIO_COMPLEX;
}

int PIO_File_open_dataset(const char *host, const char *path, const PIO_Dataset *ds, PIO_File *fh)
{
    err_text[0] = '\0';
    if (!fh || !ds || !ds->name || !*ds->name || strlen(ds->name) >= PCP_TEXT_MAX ||
        ds->ndims < 1 || ds->ndims > PIO_FILE_MAXDIMS)
        return PIO_EINVAL;
    if (!h5_type_ok(ds->type))
        return PIO_ENOSYS;
    uint64_t total = pio_type_size(ds->type);
    for (int i = 0; i < ds->ndims; i++) {
        if (ds->dims[i] == 0 || ds->dims[i] > UINT64_MAX / total)
            return PIO_EINVAL;
        total *= ds->dims[i];
    }
    struct pio_file *f = calloc(1, sizeof(*f));
    if (!f)
        return PIO_ENOMEM;
    f->h5 = 1;
    f->type = ds->type;
    f->ndims = ds->ndims;
    memcpy(f->dims, ds->dims, sizeof(uint64_t) * (size_t)ds->ndims);
    struct pcp_msg m;
    memset(&m, 0, sizeof(m));
    m.flags = PCP_F_HDF5;
    m.type = (uint32_t)ds->type;
    m.ndims = (uint32_t)ds->ndims;
    memcpy(m.count, ds->dims, sizeof(uint64_t) * (size_t)ds->ndims);
    snprintf(m.text, sizeof(m.text), "%s", ds->name);
    int rc = file_open(host, path, &m, f);
    if (rc != PIO_OK) {
        free(f);
        return rc;
    }
    *fh = f;
    return PIO_OK;
}

int PIO_File_write_at(PIO_File f, uint64_t offset, const void *buf, size_t len)
{
    err_text[0] = '\0';
    if (!f || f->h5 || (!buf && len))
        return PIO_EINVAL;
    const uint8_t *p = buf;
    do {
        size_t n = len < FILE_BLOCK_MAX ? len : FILE_BLOCK_MAX;
        struct pcp_msg m;
        memset(&m, 0, sizeof(m));
        m.op = PCP_WRITE;
        m.off = offset;
        m.size = n;
        int rc = ctl_send(f, PCP_TAG_CTL + (int)f->sid, &m);
        if (rc == PIO_OK)
            rc = PIO_Send(f->partner, 0, PCP_TAG_DATA + (int)f->sid, PIO_DYNAMIC, p, PIO_BYTE, n,
                          PIO_BLOCKING);
        if (rc != PIO_OK)
            return rc;
        f->writes++;
        f->bytes += n;
        p += n;
        offset += n;
        len -= n;
    } while (len > 0);
    return PIO_OK;
}

/* One piece of a slab: WRITE {start, count, size}, then its elements. */
static int slab_send(struct pio_file *f, const uint64_t *start, const uint64_t *count,
                     const uint8_t *p, size_t elems)
{
    struct pcp_msg m;
    memset(&m, 0, sizeof(m));
    m.op = PCP_WRITE;
    m.ndims = (uint32_t)f->ndims;
    memcpy(m.start, start, sizeof(uint64_t) * (size_t)f->ndims);
    memcpy(m.count, count, sizeof(uint64_t) * (size_t)f->ndims);
    m.size = elems * pio_type_size(f->type);
    int rc = ctl_send(f, PCP_TAG_CTL + (int)f->sid, &m);
    if (rc == PIO_OK)
        rc = PIO_Send(f->partner, 0, PCP_TAG_DATA + (int)f->sid, PIO_DYNAMIC, p, f->type, elems,
                      PIO_BLOCKING);
    if (rc == PIO_OK) {
        f->writes++;
        f->bytes += m.size;
    }
    return rc;
}

/* slab_pieces - send the slab (start, count) of buf in pieces of at most
 * FILE_BLOCK_MAX bytes. With d the first dimension whose trailing block
 * (count[d+1] x ... x element) fits, a piece is one index of each dimension
 * before d, a run of up to `run` indices of d, and all of the dimensions
 * after: contiguous in buf, which is packed in C order. */
static int slab_pieces(struct pio_file *f, const uint64_t *start, const uint64_t *count,
                       const uint8_t *buf)
{
    int n = f->ndims, d = n - 1;
    size_t es = pio_type_size(f->type);
    uint64_t inner = 1; /* elements of one index of dimension d */
    while (d > 0 && inner * count[d] * es <= FILE_BLOCK_MAX) {
        inner *= count[d];
        d--;
    }
    /* inner elements fit in a message (es <= 8 when d = n - 1) */
    uint64_t run = FILE_BLOCK_MAX / (inner * es);
    uint64_t idx[PIO_FILE_MAXDIMS] = {0}; /* position in dimensions 0..d */
    uint64_t ps[PIO_FILE_MAXDIMS], pc[PIO_FILE_MAXDIMS];
    const uint8_t *p = buf;
    for (;;) {
        uint64_t r = count[d] - idx[d] < run ? count[d] - idx[d] : run;
        for (int i = 0; i < n; i++) {
            ps[i] = start[i] + (i <= d ? idx[i] : 0);
            pc[i] = i < d ? 1 : i == d ? r : count[i];
        }
        int rc = slab_send(f, ps, pc, p, (size_t)(r * inner));
        if (rc != PIO_OK)
            return rc;
        p += r * inner * es;
        idx[d] += r;
        int i = d;
        while (i >= 0 && idx[i] == count[i]) { /* odometer over 0..d */
            idx[i] = 0;
            if (--i >= 0)
                idx[i]++;
        }
        if (i < 0)
            return PIO_OK;
    }
}

int PIO_File_write_slab(PIO_File f, const uint64_t *start, const uint64_t *count, const void *buf)
{
    err_text[0] = '\0';
    if (!f || !f->h5 || !start || !count)
        return PIO_EINVAL;
    uint64_t elems = 1;
    for (int i = 0; i < f->ndims; i++) {
        if (start[i] > f->dims[i] || count[i] > f->dims[i] - start[i])
            return PIO_EINVAL;
        elems *= count[i];
    }
    if (elems == 0)
        return PIO_OK;
    if (!buf)
        return PIO_EINVAL;
    return slab_pieces(f, start, count, buf);
}

int PIO_File_close(PIO_File f)
{
    err_text[0] = '\0';
    if (!f)
        return PIO_EINVAL;
    struct pcp_msg m;
    memset(&m, 0, sizeof(m));
    m.op = PCP_FCLOSE;
    m.off = f->writes;
    m.size = f->bytes;
    int rc = ctl_send(f, PCP_TAG_CTL + (int)f->sid, &m);
    if (rc == PIO_OK)
        rc = ctl_recv(f, &m, PIO_WAIT_FOREVER);
    free(f);
    return rc;
}

/* ---- remote file access ----
 *
 * The staging window holds RA_SLOTS slots. A pread that continues where the
 * one before ended is sequential: the client then keeps every slot's READ
 * queued at the service (read-ahead, each slot RA_SLOT bytes of the file
 * past the last), so the service's storage reads and puts never wait for
 * a round trip through the piods, and preads are served from the slots.
 * Preads of one size at a constant stride longer than the size (three in a
 * row, like Lustre's stride read-ahead: 4 KiB every 64 KiB) read ahead too:
 * each slot's READ then brings the next RA_PIECES pieces of the pattern,
 * packed one after the other (a strided READ, where the service offers it:
 * PCP_F_STRIDED), so one round trip serves many preads.
 * Any other pread is direct: the READs in flight are drained (the service
 * answers in order and a put cannot be called back) and the range is read
 * through the whole window, one READ at a time, as large as the window. */

#define RFILE_STAGE (4u << 20) /* the staging window: the largest READ */
#define RA_SLOTS    4
#define RA_SLOT     (RFILE_STAGE / RA_SLOTS)
#define RA_PIECES   32 /* strided: pieces per READ (fewer where RA_SLOT holds fewer) */

enum { RA_OFF = 0, RA_SEQ = 1, RA_STRIDE = 2 };
enum { RA_IDLE, RA_PENDING, RA_READY };

struct ra_slot {
    int state;
    uint64_t off;  /* the READ: pieces of plen bytes at off, off + stride, ... */
    uint64_t plen; /* (sequential: one piece, stride = plen) */
    uint64_t stride;
    uint64_t pieces;
    uint64_t got; /* RA_READY: the bytes it brought, packed (fewer: the end of the file) */
};

struct pio_rfile {
    struct pio_file f; /* the session */
    pthread_mutex_t mtx;
    PIO_Win win;
    uint8_t *stage;
    uint64_t size;
    int broken;        /* an error that ended the session (PIO_OK: none) */
    int strided_ok;    /* the service takes strided READs */
    int list_ok;       /* ... and list READs */
    uint64_t last_end; /* where the last pread ended */
    int ra;            /* reading ahead: RA_OFF, RA_SEQ or RA_STRIDE */
    int random;        /* PIO_RFILE_RANDOM: never read ahead */
    uint64_t ra_end;   /* RA_SEQ: the end of the furthest READ asked for;
                        * RA_STRIDE: where the next piece to ask for starts */
    /* stride detection: the last pread, the stride it made with the one
     * before, and how many in a row kept it */
    uint64_t last_off, last_count, stride;
    int stride_run;
    struct ra_slot slot[RA_SLOTS];
    int fifo[RA_SLOTS], fhead, npend; /* slots with a READ in flight, in order */
};

int PIO_Rfile_open(const char *host, const char *path, PIO_Rfile *rf, uint64_t *size)
{
    err_text[0] = '\0';
    if (!rf)
        return PIO_EINVAL;
    *rf = NULL;
    struct pio_rfile *r = calloc(1, sizeof(*r));
    if (!r)
        return PIO_ENOMEM;
    int rc = posix_memalign((void **)&r->stage, 4096, RFILE_STAGE) == 0 ? PIO_OK : PIO_ENOMEM;
    if (rc == PIO_OK)
        rc =
            PIO_Win_create(r->stage, RFILE_STAGE, PIO_WIN_PARTNERS, &r->win); /* the file service */
    struct pcp_msg m;
    memset(&m, 0, sizeof(m));
    m.op = PCP_ROPEN;
    m.block = (uint64_t)PIO_Win_number(r->win);
    m.size = RFILE_STAGE;
    if (rc == PIO_OK)
        rc = file_open(host, path, &m, &r->f);
    if (rc != PIO_OK) {
        if (r->win)
            PIO_Win_free(&r->win);
        free(r->stage);
        free(r);
        return rc;
    }
    pthread_mutex_init(&r->mtx, NULL);
    r->size = m.size;
    r->strided_ok = (m.flags & PCP_F_STRIDED) != 0;
    r->list_ok = (m.flags & PCP_F_LIST) != 0;
    r->last_end = UINT64_MAX; /* a first pread is not sequential */
    r->last_off = UINT64_MAX;
    if (size)
        *size = m.size;
    *rf = r;
    return PIO_OK;
}

/* Ask for READ s (one range, or a strided one) into the window at dst. */
static int rfile_ask(struct pio_rfile *r, const struct ra_slot *s, uint64_t dst)
{
    struct pcp_msg m;
    memset(&m, 0, sizeof(m));
    m.op = PCP_READ;
    m.off = s->off;
    m.size = s->plen;
    m.block = dst;
    if (s->pieces > 1) {
        m.ndims = 1;
        m.start[0] = s->stride;
        m.count[0] = s->pieces;
    }
    return ctl_send(&r->f, PCP_TAG_CTL + (int)r->f.sid, &m);
}

/* The answer to the oldest READ asked: its byte count, at most asked. */
static int rfile_answer(struct pio_rfile *r, uint64_t off, uint64_t asked, uint64_t *got)
{
    struct pcp_msg m;
    int rc = ctl_recv(&r->f, &m, 120000);
    if (rc == PIO_OK && (m.op != PCP_OK || m.off != off || m.size > asked))
        rc = PIO_EPROTO;
    *got = m.size;
    return rc;
}

/* Slot i asks for the next range: sequential, the next RA_SLOT bytes past
 * ra_end; striding, the next pieces from ra_end, and ra_end moves past
 * them (nothing past the end of the file). */
static int ra_ask(struct pio_rfile *r, int i)
{
    struct ra_slot *s = &r->slot[i];
    s->state = RA_IDLE;
    if (r->ra_end >= r->size)
        return PIO_OK;
    s->off = r->ra_end;
    if (r->ra == RA_STRIDE) {
        uint64_t fit = r->strided_ok ? RA_SLOT / r->last_count : 1, left;
        left = (r->size - s->off + r->stride - 1) / r->stride; /* pieces that start in the file */
        s->pieces = fit < RA_PIECES ? fit : RA_PIECES;
        if (s->pieces > left)
            s->pieces = left;
        s->plen = r->last_count;
        s->stride = r->stride;
        r->ra_end = s->off + s->pieces * r->stride;
    } else {
        s->pieces = 1;
        s->plen = s->stride = r->size - s->off < RA_SLOT ? r->size - s->off : RA_SLOT;
        r->ra_end = s->off + s->plen;
    }
    int rc = rfile_ask(r, s, (uint64_t)i * RA_SLOT);
    if (rc != PIO_OK)
        return rc;
    s->state = RA_PENDING;
    r->fifo[(r->fhead + r->npend++) % RA_SLOTS] = i;
    return PIO_OK;
}

/* The oldest slot in flight gets its answer. */
static int ra_reap(struct pio_rfile *r)
{
    struct ra_slot *s = &r->slot[r->fifo[r->fhead]];
    r->fhead = (r->fhead + 1) % RA_SLOTS;
    r->npend--;
    int rc = rfile_answer(r, s->off, s->plen * s->pieces, &s->got);
    s->state = rc == PIO_OK ? RA_READY : RA_IDLE;
    return rc;
}

/* Every READ in flight answered, every slot idle. */
static int ra_drain(struct pio_rfile *r)
{
    int rc = PIO_OK;
    while (r->npend > 0 && rc == PIO_OK)
        rc = ra_reap(r);
    for (int i = 0; i < RA_SLOTS; i++)
        r->slot[i].state = RA_IDLE;
    return rc;
}

/* Which read-ahead this pread of count bytes at offset keeps or starts
 * (r->mtx held): sequential where the last one ended; striding on the third
 * pread in a row of the same size at the same stride, when the stride is
 * longer than the size and a slot holds a piece. Any other pattern reads
 * directly. Changing between the two drains the READs in flight. */
static int ra_mode(struct pio_rfile *r, uint64_t offset, uint64_t count)
{
    if (r->last_off != UINT64_MAX && offset > r->last_off && count == r->last_count &&
        offset - r->last_off == r->stride) {
        r->stride_run++;
    } else {
        r->stride = r->last_off != UINT64_MAX && offset > r->last_off ? offset - r->last_off : 0;
        r->stride_run = r->stride && count == r->last_count ? 1 : 0;
    }
    r->last_off = offset;
    r->last_count = count;
    int want = RA_OFF;
    if (r->random || count == 0)
        want = RA_OFF;
    else if (offset == r->last_end)
        want = RA_SEQ;
    else if (r->stride_run >= 2 && r->stride > count && count <= RA_SLOT)
        want = RA_STRIDE;
    int rc = PIO_OK;
    if (want != RA_OFF && r->ra != want) {
        rc = ra_drain(r);
        r->ra_end = offset;
    }
    r->ra = want;
    return rc;
}

/* Where pos is in slot s: 1 and *at (the byte's place in the slot's bytes)
 * and *left (bytes of its piece from there), or 0 when s does not hold it. */
static int slot_has(const struct ra_slot *s, uint64_t pos, uint64_t *at, uint64_t *left)
{
    if (s->state == RA_IDLE || pos < s->off)
        return 0;
    uint64_t k = (pos - s->off) / s->stride, in = (pos - s->off) % s->stride;
    if (k >= s->pieces || in >= s->plen)
        return 0;
    *at = k * s->plen + in;
    *left = s->plen - in;
    return 1;
}

/* One direct READ of asked (at most the window's) bytes at off into buf. */
static int rfile_direct(struct pio_rfile *r, uint8_t *buf, uint64_t off, uint64_t asked,
                        uint64_t *got)
{
    struct ra_slot one = {.off = off, .plen = asked, .stride = asked, .pieces = 1};
    int rc = rfile_ask(r, &one, 0);
    if (rc == PIO_OK)
        rc = rfile_answer(r, off, asked, got);
    if (rc == PIO_OK)
        memcpy(buf, r->stage, (size_t)*got);
    return rc;
}

int PIO_Rfile_pread(PIO_Rfile r, void *buf, size_t count, uint64_t offset, size_t *got)
{
    err_text[0] = '\0';
    if (got)
        *got = 0;
    if (!r || (!buf && count > 0))
        return PIO_EINVAL;
    uint8_t *out = buf;
    size_t done = 0;
    pthread_mutex_lock(&r->mtx);
    int rc = r->broken;
    if (rc == PIO_OK)
        rc = ra_mode(r, offset, count);
    while (done < count && rc == PIO_OK) {
        uint64_t pos = offset + done, at = 0, left = 0;
        int hit = -1;
        for (int i = 0; i < RA_SLOTS && hit < 0; i++)
            if (slot_has(&r->slot[i], pos, &at, &left))
                hit = i;
        if (hit >= 0 && r->slot[hit].state == RA_PENDING) {
            rc = ra_reap(r); /* the slots before it first: answers come in order */
            continue;
        }
        if (hit >= 0) {
            struct ra_slot *s = &r->slot[hit];
            if (at >= s->got)
                break; /* the end of the file */
            uint64_t n = s->got - at < left ? s->got - at : left;
            if (n > count - done)
                n = count - done;
            memcpy(out + done, r->stage + (size_t)hit * RA_SLOT + at, (size_t)n);
            done += (size_t)n;
            if (r->ra && at + n == s->plen * s->pieces) /* used up: the next range */
                rc = ra_ask(r, hit);
            continue;
        }
        rc = ra_drain(r);
        if (rc != PIO_OK)
            break;
        if (r->ra && pos < r->size) { /* start reading ahead from here */
            r->ra_end = pos;
            for (int i = 0; i < RA_SLOTS && rc == PIO_OK; i++)
                rc = ra_ask(r, i);
            continue;
        }
        /* random access, or past the size we knew at the open */
        uint64_t asked = count - done < RFILE_STAGE ? count - done : RFILE_STAGE, n = 0;
        rc = rfile_direct(r, out + done, pos, asked, &n);
        done += (size_t)n;
        if (rc == PIO_OK && n < asked)
            break; /* the end of the file */
    }
    if (rc != PIO_OK)
        r->broken = rc; /* the service ended the session, or is gone */
    r->last_end = offset + done;
    pthread_mutex_unlock(&r->mtx);
    if (got)
        *got = done;
    return rc;
}

/* A list of ranges (PIO_Rfile_readlist): up to RL_DEPTH READs asked for at
 * once, each into its own RL_PIECE-byte part of the window (the ring q);
 * answers come in order. A READ is a piece of one range (at most RL_PIECE
 * bytes), or, where the service takes them (PCP_F_LIST), a list READ of up
 * to PCP_DIMS_MAX whole ranges that lie in the file (as its size was at the
 * open) and fit a part together: scattered small reads then cost one
 * message each way per PCP_DIMS_MAX of them. A list READ answered short
 * (the file shrank) fills its ranges in order; the ranges after the short
 * one are read again, one by one. */
#define RL_DEPTH 16
#define RL_PIECE (RFILE_STAGE / RL_DEPTH)

struct rl_read {
    int idx, k;       /* k > 0: ranges idx .. idx + k - 1, whole; 0: a piece of range idx */
    uint64_t at, len; /* the piece: at bytes into the range; the bytes asked in all */
};

/* Range e may join a list READ: whole, not empty, inside the file. */
static int rl_listable(const struct pio_rfile *r, const PIO_Rfile_range *e)
{
    return r->list_ok && e->count > 0 && e->count <= RL_PIECE && e->offset < r->size &&
           e->count <= r->size - e->offset;
}

/* Ask for the next READ of list[*next..] (at *at bytes into list[*next])
 * into part k of the window; q [out] says what it is. */
static int rl_ask(struct pio_rfile *r, PIO_Rfile_range *list, int n, int *next, uint64_t *at, int k,
                  struct rl_read *q)
{
    struct pcp_msg m;
    memset(&m, 0, sizeof(m));
    m.op = PCP_READ;
    m.block = (uint64_t)k * RL_PIECE;
    PIO_Rfile_range *e = &list[*next];
    *q = (struct rl_read){*next, 0, *at, 0};
    if (*at == 0 && rl_listable(r, e)) {
        m.flags = PCP_F_LIST;
        while (*next < n && q->k < PCP_DIMS_MAX && (e = &list[*next]) != NULL &&
               (e->count == 0 || (rl_listable(r, e) && q->len + e->count <= RL_PIECE))) {
            if (e->count > 0) {
                m.start[q->k] = e->offset;
                m.count[q->k] = e->count;
                if (q->k == 0)
                    q->idx = *next;
                q->k++;
                q->len += e->count;
            }
            (*next)++;
        }
        m.ndims = (uint32_t)q->k;
        m.size = q->len;
        m.off = m.start[0];
    } else {
        q->len = e->count - *at < RL_PIECE ? e->count - *at : RL_PIECE;
        m.off = e->offset + *at;
        m.size = q->len;
        *at += q->len;
        if (*at == e->count) {
            (*next)++;
            *at = 0;
        }
    }
    return ctl_send(&r->f, PCP_TAG_CTL + (int)r->f.sid, &m);
}

int PIO_Rfile_readlist(PIO_Rfile r, PIO_Rfile_range *list, int n)
{
    err_text[0] = '\0';
    if (!r || n < 0 || (n > 0 && !list))
        return PIO_EINVAL;
    for (int i = 0; i < n; i++) {
        if (!list[i].buf && list[i].count > 0)
            return PIO_EINVAL;
        list[i].got = 0;
    }
    struct rl_read q[RL_DEPTH];
    int head = 0, nq = 0, next = 0;
    uint64_t next_at = 0; /* where the next piece of list[next] starts */
    pthread_mutex_lock(&r->mtx);
    int rc = r->broken;
    if (rc == PIO_OK)
        rc = ra_drain(r); /* the window is the list's now */
    r->ra = RA_OFF;
    r->last_off = r->last_end = UINT64_MAX;
    r->stride_run = 0;
    while (rc == PIO_OK && (next < n || nq > 0)) {
        if (next < n && list[next].count == 0) {
            next++;
            continue;
        }
        if (next < n && nq < RL_DEPTH) {
            int k = (head + nq) % RL_DEPTH;
            rc = rl_ask(r, list, n, &next, &next_at, k, &q[k]);
            nq += rc == PIO_OK;
            continue;
        }
        /* the oldest READ's answer */
        struct rl_read *a = &q[head];
        uint64_t got = 0;
        rc =
            rfile_answer(r, a->k ? list[a->idx].offset : list[a->idx].offset + a->at, a->len, &got);
        if (rc != PIO_OK)
            break;
        const uint8_t *from = r->stage + (size_t)head * RL_PIECE;
        if (a->k == 0) {
            PIO_Rfile_range *e = &list[a->idx];
            if (a->at == e->got) { /* a piece after a short one adds nothing */
                memcpy((uint8_t *)e->buf + a->at, from, (size_t)got);
                e->got += (size_t)got;
            }
        } else {
            for (int i = a->idx, j = 0; j < a->k; i++) {
                PIO_Rfile_range *e = &list[i];
                if (e->count == 0)
                    continue;
                j++;
                size_t c = got < e->count ? (size_t)got : e->count;
                memcpy(e->buf, from, c);
                from += c;
                got -= c;
                e->got = c; /* short: the file shrank, read again below */
            }
        }
        head = (head + 1) % RL_DEPTH;
        nq--;
    }
    for (int i = 0; i < n && rc == PIO_OK; i++) { /* ranges of a list READ answered short */
        PIO_Rfile_range *e = &list[i];
        uint64_t more = 0;
        if (rl_listable(r, e) && e->got < e->count) {
            rc = rfile_direct(r, (uint8_t *)e->buf + e->got, e->offset + e->got, e->count - e->got,
                              &more);
            e->got += (size_t)more;
        }
    }
    if (rc != PIO_OK)
        r->broken = rc; /* the service ended the session, or is gone */
    pthread_mutex_unlock(&r->mtx);
    return rc;
}

int PIO_Rfile_advise(PIO_Rfile r, int advice)
{
    if (!r || (advice != PIO_RFILE_NORMAL && advice != PIO_RFILE_RANDOM))
        return PIO_EINVAL;
    pthread_mutex_lock(&r->mtx);
    r->random = advice == PIO_RFILE_RANDOM;
    pthread_mutex_unlock(&r->mtx);
    return PIO_OK;
}

int PIO_Rfile_close(PIO_Rfile r)
{
    if (!r)
        return PIO_EINVAL;
    pthread_mutex_lock(&r->mtx);
    if (r->broken == PIO_OK)
        ra_drain(r); /* no put may still be on its way into the window */
    pthread_mutex_unlock(&r->mtx);
    struct pcp_msg m;
    memset(&m, 0, sizeof(m));
    m.op = PCP_RCLOSE;
    ctl_send(&r->f, PCP_TAG_CTL + (int)r->f.sid, &m); /* no answer */
    PIO_Win_free(&r->win);
    pthread_mutex_destroy(&r->mtx);
    free(r->stage);
    free(r);
    return PIO_OK;
}
