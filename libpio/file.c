/* file.c - remote merged output: PIO_File_open / write_at / close.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A client of the host's file service (tools/pcp/pio-files.c), in the same
 * protocol as pcp (tools/pcp/pcp_proto.h): each process opens its own
 * session (FOPEN); a block is a WRITE step with its offset, then the bytes
 * as one message on the session's data tag; FCLOSE is answered once every
 * process of the application has closed and the service has synced and
 * renamed the file. Only the public API is used, so none of libpio's locks
 * are held here.
 */
#include "pio.h"
#include "err.h"
#include "tools/pcp/pcp_proto.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FILE_BLOCK_MAX (64u << 20) /* the service's largest data message */

struct pio_file {
    int partner;
    uint32_t sid;
    uint64_t writes, bytes;
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
    if (m->op == PCP_ERR)
        return m->err == EXDEV ? PIO_EPERM : m->err == ENOSPC ? PIO_EIO : pio_from_errno(m->err);
    return PIO_OK;
}

int PIO_File_open(const char *host, const char *path, int mode, PIO_File *fh)
{
    if (!host || !*host || !path || !*path || !fh || strlen(path) >= PCP_PATH_MAX)
        return PIO_EINVAL;
    if (mode != PIO_FILE_RAW)
        return PIO_ENOSYS;
    PIO_Appinfo me;
    int rc = PIO_Getappinfo(PIO_SELF, &me);
    if (rc != PIO_OK)
        return rc;
    struct pio_file *f = calloc(1, sizeof(*f));
    if (!f)
        return PIO_ENOMEM;
    char svc[PIO_NAME_MAX];
    if (snprintf(svc, sizeof(svc), "pio.files.%s", host) >= (int)sizeof(svc)) {
        free(f);
        return PIO_EINVAL;
    }
    if ((rc = PIO_Addpartner(svc, &f->partner)) != PIO_OK) {
        free(f);
        return rc;
    }
    f->sid = sid_new();
    struct pcp_msg m;
    memset(&m, 0, sizeof(m));
    m.op = PCP_FOPEN;
    m.size = (uint64_t)me.nprocs;
    m.mode = 0644;
    snprintf(m.client, sizeof(m.client), "%s", me.name);
    snprintf(m.path, sizeof(m.path), "%s", path);
    if ((rc = ctl_send(f, PCP_TAG_REQ, &m)) != PIO_OK || (rc = ctl_recv(f, &m, 120000)) != PIO_OK) {
        free(f);
        return rc;
    }
    *fh = f;
    return PIO_OK;
}

int PIO_File_write_at(PIO_File f, uint64_t offset, const void *buf, size_t len)
{
    if (!f || (!buf && len))
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

int PIO_File_close(PIO_File f)
{
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
