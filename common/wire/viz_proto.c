/* viz_proto.c - encoding of the visualization feed's messages (viz_proto.h).
 * SPDX-License-Identifier: BSD-3-Clause */
#include "viz_proto.h"
#include "pio.h"
#include "capture.h"

#include <string.h>

static uint8_t *put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        *p++ = (uint8_t)(v >> (8 * i));
    return p;
}

static uint8_t *put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        *p++ = (uint8_t)(v >> (8 * i));
    return p;
}

static uint8_t *putd(uint8_t *p, double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    return put64(p, v);
}

static uint32_t get32(const uint8_t **p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)(*p)[i] << (8 * i);
    *p += 4;
    return v;
}

static uint64_t get64(const uint8_t **p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)(*p)[i] << (8 * i);
    *p += 8;
    return v;
}

static double getd(const uint8_t **p)
{
    uint64_t v = get64(p);
    double d;
    memcpy(&d, &v, 8);
    return d;
}

size_t viz_elem_size(int32_t type)
{
    switch (type) {
    case PIO_FLOAT:
    case PIO_INT32: return 4;
    case PIO_DOUBLE: return 8;
    default: return 0;
    }
}

size_t viz_desc_encode(const struct viz_desc *d, uint8_t *buf)
{
    uint8_t *p = buf;
    memcpy(p, "PVZ1", 4);
    p += 4;
    p = put32(p, d->kind);
    size_t an = strnlen(d->app, sizeof(d->app) - 1);
    p = put32(p, (uint32_t)an);
    memcpy(p, d->app, an);
    p += an;
    p = put32(p, d->rank);
    p = put32(p, d->nranks);
    p = put64(p, d->step);
    p = putd(p, d->time);
    for (int i = 0; i < 3; i++)
        p = put64(p, d->grid.dims[i]);
    for (int i = 0; i < 3; i++)
        p = putd(p, d->grid.origin[i]);
    for (int i = 0; i < 3; i++)
        p = putd(p, d->grid.spacing[i]);
    uint32_t nf = d->nfields <= VIZ_FIELDS_MAX ? d->nfields : VIZ_FIELDS_MAX;
    p = put32(p, nf);
    for (uint32_t f = 0; f < nf; f++) {
        size_t n = strnlen(d->field[f].name, VIZ_NAME_MAX - 1);
        p = put32(p, (uint32_t)n);
        memcpy(p, d->field[f].name, n);
        p += n;
        p = put32(p, (uint32_t)d->field[f].type);
    }
    p = put32(p, d->fidx);
    for (int i = 0; i < 3; i++)
        p = put64(p, d->start[i]);
    for (int i = 0; i < 3; i++)
        p = put64(p, d->count[i]);
    p = put32(p, d->seq);
    p = put32(p, d->npieces);
    p = put32(p, d->msgno);
    p = put32(p, d->session);
    return (size_t)(p - buf);
}

int viz_desc_decode(const uint8_t *buf, size_t len, struct viz_desc *d)
{
    const uint8_t *p = buf, *end = buf + len;
    pio_capture("viz", buf, len);
    memset(d, 0, sizeof(*d));
    if (len < 12 || memcmp(p, "PVZ1", 4) != 0)
        return -1;
    p += 4;
    d->kind = get32(&p);
    uint32_t an = get32(&p);
    if (an == 0 || an >= sizeof(d->app) || (size_t)(end - p) < an + 3 * 4 + 16 + 9 * 8 + 4 ||
        memchr(p, 0, an))
        return -1;
    memcpy(d->app, p, an);
    p += an;
    d->rank = get32(&p);
    d->nranks = get32(&p);
    d->step = get64(&p);
    d->time = getd(&p);
    for (int i = 0; i < 3; i++)
        d->grid.dims[i] = get64(&p);
    for (int i = 0; i < 3; i++)
        d->grid.origin[i] = getd(&p);
    for (int i = 0; i < 3; i++)
        d->grid.spacing[i] = getd(&p);
    d->nfields = get32(&p);
    if (d->kind < VIZ_PIECE || d->kind > VIZ_SKIP || d->nranks == 0 || d->rank >= d->nranks ||
        d->nfields == 0 || d->nfields > VIZ_FIELDS_MAX)
        return -1;
    for (uint32_t f = 0; f < d->nfields; f++) {
        if (end - p < 4)
            return -1;
        uint32_t n = get32(&p);
        if (n >= VIZ_NAME_MAX || (size_t)(end - p) < n + 4u || memchr(p, 0, n))
            return -1;
        memcpy(d->field[f].name, p, n);
        p += n;
        d->field[f].type = (int32_t)get32(&p);
        if (!viz_elem_size(d->field[f].type))
            return -1;
    }
    if (end - p != 4 + 48 + 4 + 4 + 4 + 4)
        return -1;
    d->fidx = get32(&p);
    for (int i = 0; i < 3; i++)
        d->start[i] = get64(&p);
    for (int i = 0; i < 3; i++)
        d->count[i] = get64(&p);
    d->seq = get32(&p);
    d->npieces = get32(&p);
    d->msgno = get32(&p);
    d->session = get32(&p);
    if (d->session == 0)
        return -1;
    for (int i = 0; i < 3; i++) {
        if (d->grid.dims[i] == 0 || d->grid.dims[i] > (1u << 24))
            return -1;
        if (d->kind == VIZ_PIECE && (d->start[i] >= d->grid.dims[i] || d->count[i] == 0 ||
                                     d->count[i] > d->grid.dims[i] - d->start[i]))
            return -1;
    }
    if (d->kind == VIZ_PIECE && (d->fidx >= d->nfields || d->seq >= VIZ_SEQ_MOD))
        return -1;
    return 0;
}

void viz_ctl_encode(const struct viz_ctl *c, uint8_t buf[VIZ_CTL_SIZE])
{
    uint8_t *p = buf;
    memcpy(p, "PVZC", 4);
    p = put64(p + 4, c->step);
    p = put32(p, c->flags);
    p = put32(p, c->window);
    put32(p, 0); /* reserved */
}

int viz_ctl_decode(const uint8_t *buf, size_t len, struct viz_ctl *c)
{
    pio_capture("viz", buf, len);
    if (len != VIZ_CTL_SIZE || memcmp(buf, "PVZC", 4) != 0)
        return -1;
    const uint8_t *p = buf + 4;
    c->step = get64(&p);
    c->flags = get32(&p);
    c->window = get32(&p);
    return c->window == 0 ? -1 : 0;
}
