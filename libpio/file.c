/* file.c - remote merged output (PIO_File_*) and remote file access (PIO_Rfile_*).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A client of the host's file service (tools/pcp/pio-files.c), in the same
 * protocol as pcp (tools/pcp/pcp_proto.h): each process opens its own
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
 * how many; the client copies them out. A PIO_Rfile is used by one thread
 * at a time (a mutex makes concurrent preads take turns).
 */
#include "pio.h"
#include "err.h"
#include "types.h"
#include "win.h"
#include "tools/pcp/pcp_proto.h"

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

/* Both modes: join the host's file service and open a session (m: FOPEN
 * filled in but for the session and client). */
static int file_open(const char *host, const char *path, struct pcp_msg *m, struct pio_file *f)
{
    if (!host || !*host || !path || !*path || strlen(path) >= PCP_PATH_MAX ||
        strlen(host) >= sizeof(f->host))
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

/* ---- remote file access ---- */

#define RFILE_STAGE (4u << 20) /* the staging window: the largest READ */

struct pio_rfile {
    struct pio_file f; /* the session */
    pthread_mutex_t mtx;
    PIO_Win win;
    uint8_t *stage;
    uint64_t size;
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
        rc = PIO_Win_create(r->stage, RFILE_STAGE, &r->win);
    struct pcp_msg m;
    memset(&m, 0, sizeof(m));
    m.op = PCP_ROPEN;
    m.block = (uint64_t)pio_win_id(r->win);
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
    if (size)
        *size = m.size;
    *rf = r;
    return PIO_OK;
}

int PIO_Rfile_pread(PIO_Rfile r, void *buf, size_t count, uint64_t offset, size_t *got)
{
    err_text[0] = '\0';
    if (got)
        *got = 0;
    if (!r || (!buf && count > 0))
        return PIO_EINVAL;
    int rc = PIO_OK;
    size_t done = 0;
    pthread_mutex_lock(&r->mtx);
    while (done < count && rc == PIO_OK) {
        struct pcp_msg m;
        memset(&m, 0, sizeof(m));
        m.op = PCP_READ;
        m.off = offset + done;
        m.size = count - done < RFILE_STAGE ? count - done : RFILE_STAGE;
        uint64_t asked = m.size;
        rc = ctl_send(&r->f, PCP_TAG_CTL + (int)r->f.sid, &m);
        if (rc == PIO_OK)
            rc = ctl_recv(&r->f, &m, 120000);
        if (rc != PIO_OK)
            break;
        if (m.op != PCP_OK || m.size > asked) {
            rc = PIO_EPROTO;
            break;
        }
        memcpy((uint8_t *)buf + done, r->stage, (size_t)m.size);
        done += (size_t)m.size;
        if (m.size < asked)
            break; /* the end of the file */
    }
    pthread_mutex_unlock(&r->mtx);
    if (got)
        *got = done;
    return rc;
}

int PIO_Rfile_close(PIO_Rfile r)
{
    if (!r)
        return PIO_EINVAL;
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
