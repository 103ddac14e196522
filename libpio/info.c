/* info.c - what tools ask of this host without joining (pio_svc.h): a
 * piod's status (P_INFO), and the description of the one-sided backend.
 * SPDX-License-Identifier: BSD-3-Clause */
#include "pio_svc.h"
#include "rma.h"
#include "wire/wire.h"
#include "fstream.h"
#include "pio.h"

#include <poll.h>
#include <unistd.h>

int pio_info_fetch(const char *path, int timeout_ms, struct pio_frame *f)
{
    int fd = -1, rc;
    struct pio_fin in;
    uint8_t req[64];
    size_t len;
    const uint8_t *fr = NULL;
    pio_fin_init(&in, PIO_WIRE_HDR + (size_t)PIO_WIRE_MAX_BODY);
    if (pio_unix_connect(path, &fd) != PIO_OK) {
        rc = PIO_ENOPIOD;
        goto out;
    }
    f->type = PIO_F_P_INFO_REQ;
    f->u.p_info_req.req = 1;
    f->u.p_info_req.what = 7;
    pio_wire_encode(f, req, sizeof(req), &len);
    struct pio_fout o = {0};
    if (pio_fout_send(&o, fd, req, len) != PIO_OK || o.queued) {
        pio_fout_clear(&o);
        rc = PIO_ECLOSED;
        goto out;
    }
    for (;;) {
        rc = pio_fin_next(&in, &fr, &len, NULL);
        if (rc != PIO_EAGAIN)
            break;
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, timeout_ms) <= 0) {
            rc = PIO_ETIMEDOUT;
            goto out;
        }
        rc = pio_fin_fill(&in, fd);
        if (rc != PIO_OK && rc != PIO_EAGAIN)
            break;
    }
    if (rc == PIO_OK)
        rc = pio_wire_decode(fr, len, f, NULL);
    if (rc == PIO_OK && f->type != PIO_F_P_INFO)
        rc = PIO_EPROTO;
out:
    pio_fin_fini(&in);
    if (fd >= 0)
        close(fd);
    return rc;
}

int pio_svc_rma_describe(FILE *out, int *stage)
{
    int st = 0, rc = PIO_ENOSYS;
    const struct pio_rma_ops *r = pio_rma_pick(PIO_RMA_CAP_GETPUT | PIO_RMA_CAP_ATOMICS);
    struct pio_rma *x = NULL;
    if (r) {
        st = 1;
        rc = r->init(&x);
        if (rc == PIO_OK) {
            st = 2;
            rc = r->describe(x, out);
            r->fini(x);
        }
    }
    if (stage)
        *stage = st;
    return rc;
}
