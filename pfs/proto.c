/* proto.c - encoding of pfs messages (proto.h).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A cursor over a bounded buffer: every put and get checks the room left and
 * latches a failure, so encode and decode read as flat lists of fields. */
#include "proto.h"
#include "capture.h"

#include <string.h>

struct cur {
    uint8_t *p;       /* encode: next byte */
    const uint8_t *q; /* decode: next byte */
    size_t left;
    int bad;
};

static void put(struct cur *c, uint64_t v, int bytes)
{
    if (c->bad || c->left < (size_t)bytes) {
        c->bad = 1;
        return;
    }
    for (int i = 0; i < bytes; i++)
        *c->p++ = (uint8_t)(v >> (8 * i));
    c->left -= (size_t)bytes;
}

static uint64_t get(struct cur *c, int bytes)
{
    if (c->bad || c->left < (size_t)bytes) {
        c->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)c->q[i] << (8 * i);
    c->q += bytes;
    c->left -= (size_t)bytes;
    return v;
}

static void put_bytes(struct cur *c, const void *b, size_t n)
{
    if (c->bad || c->left < n) {
        c->bad = 1;
        return;
    }
    if (n)
        memcpy(c->p, b, n);
    c->p += n;
    c->left -= n;
}

static void put_str(struct cur *c, const char *s, size_t cap)
{
    size_t n = strnlen(s, cap - 1);
    put(c, n, 2);
    put_bytes(c, s, n);
}

static void get_str(struct cur *c, char *s, size_t cap)
{
    size_t n = (size_t)get(c, 2);
    if (c->bad || n >= cap || c->left < n || memchr(c->q, 0, n)) {
        c->bad = 1;
        s[0] = '\0';
        return;
    }
    memcpy(s, c->q, n);
    s[n] = '\0';
    c->q += n;
    c->left -= n;
}

static const uint8_t magic[4] = {'P', 'F', 'S', '1'};

size_t pfs_msg_encode_head(const struct pfs_msg *m, uint8_t *buf, size_t cap)
{
    struct cur c = {.p = buf, .left = cap};
    put_bytes(&c, magic, 4);
    put(&c, m->op, 4);
    put(&c, m->cls, 4);
    put(&c, m->flags, 4);
    put(&c, (uint32_t)m->err, 4);
    put(&c, m->proc, 4);
    put(&c, (uint32_t)m->wid, 4);
    put(&c, m->rid, 8);
    put(&c, m->fid, 8);
    put(&c, m->off, 8);
    put(&c, m->len, 8);
    put(&c, m->disp, 8);
    put(&c, m->attr.fid, 8);
    put(&c, m->attr.type, 4);
    put(&c, m->attr.mode, 4);
    put(&c, m->attr.uid, 4);
    put(&c, m->attr.gid, 4);
    put(&c, m->attr.size, 8);
    put(&c, (uint64_t)m->attr.mtime_ns, 8);
    put(&c, (uint64_t)m->attr.ctime_ns, 8);
    uint32_t n = m->layout.count <= PFS_STRIPES_MAX ? m->layout.count : PFS_STRIPES_MAX;
    put(&c, m->layout.stripe_size, 8);
    put(&c, n, 4);
    for (uint32_t i = 0; i < n; i++)
        put(&c, m->layout.servers[i], 4);
    put_str(&c, m->client, sizeof(m->client));
    put_str(&c, m->user, sizeof(m->user));
    put_str(&c, m->text, sizeof(m->text));
    put_str(&c, m->path, sizeof(m->path));
    put_str(&c, m->path2, sizeof(m->path2));
    put(&c, m->dlen, 4);
    return c.bad ? 0 : cap - c.left;
}

size_t pfs_msg_encode(const struct pfs_msg *m, uint8_t *buf, size_t cap)
{
    size_t h = pfs_msg_encode_head(m, buf, cap);
    if (!h || cap - h < m->dlen)
        return 0;
    if (m->dlen)
        memcpy(buf + h, m->data, m->dlen);
    return h + m->dlen;
}

static int op_known(uint32_t op)
{
    return (op >= PFS_OP_LOOKUP && op <= PFS_OP_ACCESS) ||
           (op >= PFS_OP_WRITE && op <= PFS_OP_DF) || op == PFS_OP_REPLY;
}

int pfs_msg_decode(const uint8_t *buf, size_t len, struct pfs_msg *m)
{
    struct cur c = {.q = buf, .left = len};
    pio_capture("pfs", buf, len);
    memset(m, 0, sizeof(*m));
    if (len < 4 || memcmp(buf, magic, 4) != 0)
        return -1;
    c.q += 4;
    c.left -= 4;
    m->op = (uint32_t)get(&c, 4);
    m->cls = (uint32_t)get(&c, 4);
    m->flags = (uint32_t)get(&c, 4);
    m->err = (int32_t)(uint32_t)get(&c, 4);
    m->proc = (uint32_t)get(&c, 4);
    m->wid = (int32_t)(uint32_t)get(&c, 4);
    m->rid = get(&c, 8);
    m->fid = get(&c, 8);
    m->off = get(&c, 8);
    m->len = get(&c, 8);
    m->disp = get(&c, 8);
    m->attr.fid = get(&c, 8);
    m->attr.type = (uint32_t)get(&c, 4);
    m->attr.mode = (uint32_t)get(&c, 4);
    m->attr.uid = (uint32_t)get(&c, 4);
    m->attr.gid = (uint32_t)get(&c, 4);
    m->attr.size = get(&c, 8);
    m->attr.mtime_ns = (int64_t)get(&c, 8);
    m->attr.ctime_ns = (int64_t)get(&c, 8);
    m->layout.stripe_size = get(&c, 8);
    m->layout.count = (uint32_t)get(&c, 4);
    if (m->layout.count > PFS_STRIPES_MAX)
        return -1;
    for (uint32_t i = 0; i < m->layout.count; i++)
        m->layout.servers[i] = (uint32_t)get(&c, 4);
    get_str(&c, m->client, sizeof(m->client));
    get_str(&c, m->user, sizeof(m->user));
    get_str(&c, m->text, sizeof(m->text));
    get_str(&c, m->path, sizeof(m->path));
    get_str(&c, m->path2, sizeof(m->path2));
    m->dlen = (size_t)get(&c, 4);
    if (c.bad || c.left != m->dlen || m->dlen > PFS_IO_MAX || !op_known(m->op) ||
        m->cls >= PFS_CLASS_MAX)
        return -1;
    m->data = m->dlen ? c.q : NULL;
    return 0;
}

int pfs_path_ok(const char *p)
{
    size_t n = strnlen(p, PFS_PATH_MAX);
    if (n == 0 || n >= PFS_PATH_MAX || p[0] != '/')
        return 0;
    if (n == 1)
        return 1;
    if (p[n - 1] == '/')
        return 0;
    for (const char *s = p + 1;;) {
        const char *e = strchr(s, '/');
        size_t k = e ? (size_t)(e - s) : strlen(s);
        if (k == 0 || k > 255 || (k == 1 && s[0] == '.') || (k == 2 && s[0] == '.' && s[1] == '.'))
            return 0;
        if (!e)
            return 1;
        s = e + 1;
    }
}

int pfs_dirent_put(uint8_t *buf, size_t cap, size_t *used, const struct pfs_dirent *e)
{
    size_t nl = strnlen(e->name, sizeof(e->name) - 1);
    struct cur c = {.p = buf + *used, .left = cap - *used};
    put(&c, e->type, 1);
    put(&c, e->size, 8);
    put(&c, e->mode, 4);
    put(&c, (uint64_t)e->mtime_ns, 8);
    put(&c, nl, 2);
    put_bytes(&c, e->name, nl);
    if (c.bad)
        return -1;
    *used = cap - c.left;
    return 0;
}

int pfs_dirent_next(const uint8_t *data, size_t len, size_t *pos, struct pfs_dirent *e)
{
    if (*pos >= len)
        return 0;
    struct cur c = {.q = data + *pos, .left = len - *pos};
    e->type = (uint32_t)get(&c, 1);
    e->size = get(&c, 8);
    e->mode = (uint32_t)get(&c, 4);
    e->mtime_ns = (int64_t)get(&c, 8);
    get_str(&c, e->name, sizeof(e->name));
    if (c.bad || !e->name[0] || strchr(e->name, '/'))
        return -1;
    *pos = len - c.left;
    return 1;
}
