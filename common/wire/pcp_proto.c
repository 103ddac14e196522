/* pcp_proto.c - encoding of pcp <-> file service messages (see pcp_proto.h).
 * SPDX-License-Identifier: BSD-3-Clause */
#include "pcp_proto.h"
#include "capture.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

static uint8_t *put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        *p++ = (uint8_t)(v >> (8 * i));
    return p;
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        *p++ = (uint8_t)(v >> (8 * i));
    return p;
}

static uint64_t get64(const uint8_t **p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)(*p)[i] << (8 * i);
    *p += 8;
    return v;
}

static uint32_t get32(const uint8_t **p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)(*p)[i] << (8 * i);
    *p += 4;
    return v;
}

/* a string: u32 length, then the bytes (no NUL) */
static uint8_t *putstr(uint8_t *p, const char *s, size_t cap)
{
    size_t n = strnlen(s, cap - 1);
    p = put32(p, (uint32_t)n);
    memcpy(p, s, n);
    return p + n;
}

static int getstr(const uint8_t **p, const uint8_t *end, char *s, size_t cap)
{
    if (end - *p < 4)
        return -1;
    uint32_t n = get32(p);
    if (n >= cap || (size_t)(end - *p) < n || memchr(*p, 0, n))
        return -1;
    memcpy(s, *p, n);
    s[n] = '\0';
    *p += n;
    return 0;
}

size_t pcp_msg_encode(const struct pcp_msg *m, uint8_t *buf)
{
    uint8_t *p = buf;
    memcpy(p, "PCP2", 4);
    p += 4;
    p = put32(p, m->op);
    p = put32(p, m->session);
    p = put32(p, m->flags);
    p = put32(p, m->mode);
    p = put32(p, m->type);
    p = put32(p, (uint32_t)m->err);
    p = put64(p, m->size);
    p = put64(p, m->off);
    p = put64(p, m->hash);
    p = put64(p, m->block);
    p = put64(p, (uint64_t)m->mtime_sec);
    p = put32(p, m->mtime_nsec);
    uint32_t nd = m->ndims <= PCP_DIMS_MAX ? m->ndims : PCP_DIMS_MAX;
    p = put32(p, nd);
    for (uint32_t i = 0; i < nd; i++) {
        p = put64(p, m->start[i]);
        p = put64(p, m->count[i]);
    }
    p = putstr(p, m->client, sizeof(m->client));
    p = putstr(p, m->text, sizeof(m->text));
    p = putstr(p, m->path, sizeof(m->path));
    return (size_t)(p - buf);
}

int pcp_msg_decode(const uint8_t *buf, size_t len, struct pcp_msg *m)
{
    const uint8_t *p = buf, *end = buf + len;
    pio_capture("pcp", buf, len);
    memset(m, 0, sizeof(*m));
    if (len < 4 + 6 * 4 + 5 * 8 + 4 + 4 || memcmp(p, "PCP2", 4) != 0)
        return -1;
    p += 4;
    m->op = get32(&p);
    m->session = get32(&p);
    m->flags = get32(&p);
    m->mode = get32(&p);
    m->type = get32(&p);
    m->err = (int32_t)get32(&p);
    m->size = get64(&p);
    m->off = get64(&p);
    m->hash = get64(&p);
    m->block = get64(&p);
    m->mtime_sec = (int64_t)get64(&p);
    m->mtime_nsec = get32(&p);
    m->ndims = get32(&p);
    if (m->ndims > PCP_DIMS_MAX || (size_t)(end - p) < 16u * m->ndims)
        return -1;
    for (uint32_t i = 0; i < m->ndims; i++) {
        m->start[i] = get64(&p);
        m->count[i] = get64(&p);
    }
    if (getstr(&p, end, m->client, sizeof(m->client)) ||
        getstr(&p, end, m->text, sizeof(m->text)) || getstr(&p, end, m->path, sizeof(m->path)))
        return -1;
    if (p != end || m->op < PCP_PUT || m->op > PCP_ACK || (m->op > PCP_RCLOSE && m->op < PCP_OK))
        return -1;
    return 0;
}

int pcp_path_ok(const char *p)
{
    if (!*p)
        return 0;
    for (const char *s = p; *s;) {
        while (*s == '/')
            s++;
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 2 && s[0] == '.' && s[1] == '.')
            return 0;
        s += n;
    }
    return 1;
}

#define PLAN_ALIGN 4096u
#define PLAN_MIN   (64u << 10)

static uint64_t plan_up(uint64_t v)
{
    return (v + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN;
}

void pcp_plan_init(struct pcp_plan *p, uint64_t off, uint64_t size, uint64_t block, uint32_t lanes,
                   int ramp)
{
    memset(p, 0, sizeof(*p));
    p->off = off;
    p->size = size;
    p->block = block ? block : 1;
    p->lanes = lanes < 1 ? 1 : lanes > PCP_LANES_MAX ? PCP_LANES_MAX : lanes;
    p->ramp = ramp && p->block > PLAN_MIN;
    uint64_t small = p->block / 8 / PLAN_ALIGN * PLAN_ALIGN;
    p->small = small < PLAN_MIN ? PLAN_MIN : small;
}

uint64_t pcp_plan_next(struct pcp_plan *p)
{
    if (p->off >= p->size)
        return 0;
    uint64_t rem = p->size - p->off, len = p->block;
    if (p->ramp) {
        if (p->i % p->lanes == 0) { /* a new round: its size, from what is left */
            uint64_t up = p->round < 32 ? p->small << p->round : p->block;
            uint64_t down = plan_up((rem + 2ull * p->lanes - 1) / (2ull * p->lanes));
            uint64_t r = up < p->block ? up : p->block;
            if (down < p->small)
                down = p->small;
            if (down < r)
                r = down;
            if (rem <= (uint64_t)p->lanes * r) /* the last round: shared evenly */
                r = (rem + p->lanes - 1) / p->lanes;
            p->round_len = r;
            p->round++;
        }
        len = p->round_len;
        p->i++;
    }
    if (len > rem)
        len = rem;
    p->off += len;
    return len;
}

int pcp_hash_prefix(int fd, uint64_t len, void *state, uint8_t *buf, size_t cap)
{
    XXH3_state_t *st = state;
    XXH3_64bits_reset(st);
    for (uint64_t off = 0; off < len;) {
        size_t want = len - off < cap ? (size_t)(len - off) : cap;
        ssize_t r = pread(fd, buf, want, (off_t)off);
        if (r <= 0)
            return -1;
        XXH3_64bits_update(st, buf, (size_t)r);
        off += (uint64_t)r;
    }
    return 0;
}

int pcp_sparse(const struct stat *sb)
{
    return sb->st_size > 0 && (uint64_t)sb->st_blocks * 512u < (uint64_t)sb->st_size;
}

#define PAGE 4096u

static int zero(const uint8_t *b, size_t n)
{
    return b[0] == 0 && memcmp(b, b + 1, n - 1) == 0;
}

static int write_all(int fd, const uint8_t *b, size_t n, uint64_t off)
{
    for (size_t w = 0; w < n;) {
        ssize_t r = pwrite(fd, b + w, n - w, (off_t)(off + w));
        if (r < 0)
            return -1;
        w += (size_t)r;
    }
    return 0;
}

static int write_pages(int fd, const uint8_t *b, size_t n, uint64_t off, int sparse)
{
    if (!sparse)
        return write_all(fd, b, n, off);
    /* runs of pages that hold data are written; pages of zeros are skipped */
    size_t i = 0, run = 0;
    while (i < n) {
        size_t len = n - i < PAGE ? n - i : PAGE;
        if (zero(b + i, len)) {
            if (i > run && write_all(fd, b + run, i - run, off + run) != 0)
                return -1;
            run = i + len;
        }
        i += len;
    }
    return i > run ? write_all(fd, b + run, i - run, off + run) : 0;
}

int pcp_write(int fd, const uint8_t *b, size_t n, uint64_t off, int sparse)
{
    if (write_pages(fd, b, n, off, sparse) != 0)
        return -1;
    /* advisory: a file system without it (or a pipe) just leaves it to fsync */
    sync_file_range(fd, (off64_t)off, (off64_t)n, SYNC_FILE_RANGE_WRITE);
    return 0;
}
