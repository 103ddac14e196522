/* winctl.c - encode and decode the window control messages (winctl.h).
 * SPDX-License-Identifier: BSD-3-Clause
 * The only code that reads a window control message's bytes; no state. */
#include "winctl.h"
#include "capture.h"

#include <string.h>

static uint8_t *put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    return p + 4;
}

static uint8_t *put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    return p + 8;
}

static uint32_t get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

size_t pio_winctl_encode(const struct pio_winctl *c, uint8_t *buf)
{
    if ((size_t)PIO_WINCTL_HEAD + c->addr_len + c->rkey_len > PIO_WINCTL_MAX)
        return 0;
    uint8_t *p = put32(buf, PIO_WINCTL_MAGIC);
    p = put32(p, PIO_WINCTL_VERSION);
    p = put32(p, c->kind);
    p = put32(p, c->id);
    p = put64(p, c->base);
    p = put64(p, c->size);
    p = put32(p, c->addr_len);
    p = put32(p, c->rkey_len);
    memset(p, 0, PIO_NAME_MAX);
    memcpy(p, c->app, strnlen(c->app, PIO_NAME_MAX - 1));
    p += PIO_NAME_MAX;
    if (c->addr_len)
        memcpy(p, c->addr, c->addr_len);
    p += c->addr_len;
    if (c->rkey_len)
        memcpy(p, c->rkey, c->rkey_len);
    p += c->rkey_len;
    return (size_t)(p - buf);
}

int pio_winctl_decode(const uint8_t *buf, size_t len, struct pio_winctl *c)
{
    pio_capture("win", buf, len);
    if (len < PIO_WINCTL_HEAD || get32(buf) != PIO_WINCTL_MAGIC ||
        get32(buf + 4) != PIO_WINCTL_VERSION)
        return -1;
    c->kind = get32(buf + 8);
    c->id = get32(buf + 12);
    c->base = get64(buf + 16);
    c->size = get64(buf + 24);
    c->addr_len = get32(buf + 32);
    c->rkey_len = get32(buf + 36);
    if (c->kind < PIO_WC_ASK || c->kind > PIO_WC_DENIED || c->id > INT32_MAX ||
        (uint64_t)c->addr_len + c->rkey_len != len - PIO_WINCTL_HEAD ||
        (c->kind == PIO_WC_DESC && c->addr_len == 0))
        return -1;
    memcpy(c->app, buf + 40, PIO_NAME_MAX);
    if (!memchr(c->app, 0, PIO_NAME_MAX))
        return -1;
    c->addr = buf + PIO_WINCTL_HEAD;
    c->rkey = c->addr + c->addr_len;
    return 0;
}
