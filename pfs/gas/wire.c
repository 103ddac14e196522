/* wire.c - the GAS frame header codec (wire.h).
 * SPDX-License-Identifier: BSD-3-Clause */
#include "wire.h"

#include <string.h>

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

void gas_hdr_encode(const struct gas_hdr *h, uint8_t *out)
{
    put32(out, GAS_MAGIC);
    put16(out + 4, h->op);
    put16(out + 6, h->flags);
    put32(out + 8, h->id);
    put32(out + 12, h->handle);
    put32(out + 16, (uint32_t)h->status);
    put32(out + 20, h->plen);
    put64(out + 24, h->off);
    put64(out + 32, h->len);
    put64(out + 40, h->aux);
}

int gas_hdr_decode(const uint8_t *in, struct gas_hdr *h)
{
    memset(h, 0, sizeof(*h));
    h->magic = get32(in);
    h->op = get16(in + 4);
    h->flags = get16(in + 6);
    h->id = get32(in + 8);
    h->handle = get32(in + 12);
    h->status = (int32_t)get32(in + 16);
    h->plen = get32(in + 20);
    h->off = get64(in + 24);
    h->len = get64(in + 32);
    h->aux = get64(in + 40);
    if (h->magic != GAS_MAGIC || h->op < GAS_OP_OPEN || h->op >= GAS_OP_END_ ||
        h->plen > GAS_PAYLOAD_MAX)
        return -1;
    if (h->op == GAS_OP_WRITE && h->len != h->plen)
        return -1;
    return 0;
}

const char *gas_op_name(unsigned op)
{
    static const char *const names[] = {"?",     "OPEN",  "WRITE", "READ",  "FSYNC",
                                        "CLOSE", "FSTAT", "STAT",  "TRUNC", "UNLINK",
                                        "STATS", "REPLY", "STATFS"};
    return op < GAS_OP_END_ ? names[op] : "?";
}
