/* wire.c - encode and decode PIO frames: the only code that reads bytes from the network.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A frame is the 16-byte header of wire.h and a body. Each body struct is
 * written field by field in declaration order with its declared width through
 * small put/get helpers over a cursor; every integer is assembled byte by
 * byte in little-endian order, so nothing depends on the host's byte order or
 * alignment and no struct is ever copied whole. Strings are a u16 length and
 * the bytes (no NUL); arrays are their u32 count field then the elements;
 * fixed byte arrays (keys) are raw; an eager payload is a u64 length equal to
 * the message size, then the bytes. The byte layout is in docs/protocol.md.
 *
 * The writer runs twice: once without a buffer to measure (and validate) the
 * body, then for real. The reader never trusts the input: a cursor that runs
 * past the body, a count over its bound, a bad string or bytes left over all
 * make the frame PIO_EPROTO. No state, no locks, no allocation.
 */
#include "wire.h"
#include "pio.h"
#include "capture.h"

#include <string.h>

#define XXH_STATIC_LINKING_ONLY /* XXH32_state_t on the stack */
#include <xxhash.h>

#define WIRE_SEED 0x70696Fu

/* ---- writer ---------------------------------------------------------------
 * buf == NULL measures: pos advances, nothing is written. */
struct wire_w {
    uint8_t *buf;
    size_t cap;
    size_t pos;
    int rc;        /* first error: PIO_EINVAL (bad frame) or PIO_ENOMEM (cap) */
    int head_only; /* an eager payload's bytes are counted, not written */
};

static void wire_fail(struct wire_w *w, int rc)
{
    if (w->rc == PIO_OK)
        w->rc = rc;
}

static uint8_t *wire_room(struct wire_w *w, size_t n)
{
    uint8_t *p = NULL;
    if (w->buf != NULL) {
        if (w->pos <= w->cap && w->cap - w->pos >= n)
            p = w->buf + w->pos;
        else
            wire_fail(w, PIO_ENOMEM);
    }
    w->pos += n;
    return p;
}

static void put_u8(struct wire_w *w, uint8_t v)
{
    uint8_t *p = wire_room(w, 1);
    if (p != NULL)
        p[0] = v;
}

static void put_u16(struct wire_w *w, uint16_t v)
{
    uint8_t *p = wire_room(w, 2);
    if (p != NULL) {
        p[0] = (uint8_t)v;
        p[1] = (uint8_t)(v >> 8);
    }
}

static void put_u32(struct wire_w *w, uint32_t v)
{
    uint8_t *p = wire_room(w, 4);
    if (p != NULL) {
        for (int i = 0; i < 4; i++)
            p[i] = (uint8_t)(v >> (8 * i));
    }
}

static void put_i32(struct wire_w *w, int32_t v)
{
    put_u32(w, (uint32_t)v);
}

static void put_u64(struct wire_w *w, uint64_t v)
{
    uint8_t *p = wire_room(w, 8);
    if (p != NULL) {
        for (int i = 0; i < 8; i++)
            p[i] = (uint8_t)(v >> (8 * i));
    }
}

static void put_bytes(struct wire_w *w, const void *src, size_t n)
{
    uint8_t *p = wire_room(w, n);
    if (p != NULL && n > 0)
        memcpy(p, src, n);
}

/* A string field of `field` bytes: it must hold a NUL within the field. */
static void put_str(struct wire_w *w, const char *s, size_t field)
{
    size_t n = strnlen(s, field);
    if (n >= field) {
        wire_fail(w, PIO_EINVAL);
        n = 0;
    }
    put_u16(w, (uint16_t)n);
    put_bytes(w, s, n);
}

/* An array count: must not exceed the array's bound. */
static int put_count(struct wire_w *w, uint32_t n, uint32_t max)
{
    if (n > max) {
        wire_fail(w, PIO_EINVAL);
        n = 0;
    }
    put_u32(w, n);
    return (int)n;
}

/* Eager payload: u64 length (== size) and the bytes, when flags say so. */
static void put_payload(struct wire_w *w, uint32_t flags, uint64_t size, const uint8_t *payload)
{
    if (!(flags & PIO_WF_EAGER))
        return;
    if (size > PIO_WIRE_MAX_BODY || (payload == NULL && size > 0)) {
        wire_fail(w, PIO_EINVAL);
        return;
    }
    put_u64(w, size);
    if (w->head_only)
        w->pos += (size_t)size; /* the last field: nothing is written after it */
    else
        put_bytes(w, payload, (size_t)size);
}

/* ---- reader ---------------------------------------------------------------- */
struct wire_r {
    const uint8_t *buf;
    size_t len;
    size_t pos;
    int rc; /* PIO_OK or PIO_EPROTO */
};

static const uint8_t *wire_take(struct wire_r *r, size_t n)
{
    if (r->rc != PIO_OK || r->len - r->pos < n) {
        r->rc = PIO_EPROTO;
        return NULL;
    }
    const uint8_t *p = r->buf + r->pos;
    r->pos += n;
    return p;
}

static uint16_t get_u16(struct wire_r *r)
{
    const uint8_t *p = wire_take(r, 2);
    if (p == NULL)
        return 0;
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get_u32(struct wire_r *r)
{
    const uint8_t *p = wire_take(r, 4);
    uint32_t v = 0;
    if (p == NULL)
        return 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static int32_t get_i32(struct wire_r *r)
{
    uint32_t u = get_u32(r);
    /* two's complement back to signed without implementation-defined casts */
    if (u <= INT32_MAX)
        return (int32_t)u;
    return (int32_t)(u - 0x80000000u) + INT32_MIN;
}

static uint64_t get_u64(struct wire_r *r)
{
    const uint8_t *p = wire_take(r, 8);
    uint64_t v = 0;
    if (p == NULL)
        return 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static void get_bytes(struct wire_r *r, void *dst, size_t n)
{
    const uint8_t *p = wire_take(r, n);
    if (p != NULL)
        memcpy(dst, p, n);
}

/* A string into a field of `field` bytes: shorter than the field, NUL-free.
 * The rest of the field is zeroed, so a decoded string is always terminated. */
static void get_str(struct wire_r *r, char *dst, size_t field)
{
    size_t n = get_u16(r);
    const uint8_t *p = NULL;
    if (n >= field)
        r->rc = PIO_EPROTO;
    else
        p = wire_take(r, n);
    if (p == NULL || memchr(p, 0, n) != NULL) {
        r->rc = PIO_EPROTO;
        n = 0;
    } else {
        memcpy(dst, p, n);
    }
    memset(dst + n, 0, field - n);
}

static uint32_t get_count(struct wire_r *r, uint32_t max)
{
    uint32_t n = get_u32(r);
    if (n > max) {
        r->rc = PIO_EPROTO;
        return 0;
    }
    return n;
}

static const uint8_t *get_payload(struct wire_r *r, uint32_t flags, uint64_t size)
{
    if (!(flags & PIO_WF_EAGER))
        return NULL;
    uint64_t n = get_u64(r);
    if (r->rc != PIO_OK || n != size || n > r->len - r->pos) {
        r->rc = PIO_EPROTO;
        return NULL;
    }
    return wire_take(r, (size_t)n);
}

/* ---- bodies: one writer and one reader per struct, fields in order ---------- */
static void w_p_hello(struct wire_w *w, const struct pio_p_hello *b)
{
    put_u32(w, b->proto);
    put_u32(w, b->proc);
    put_u32(w, b->nprocs);
    put_u32(w, b->pid);
    put_u32(w, b->flags);
    put_str(w, b->app, sizeof b->app);
}

static void r_p_hello(struct wire_r *r, struct pio_p_hello *b)
{
    b->proto = get_u32(r);
    b->proc = get_u32(r);
    b->nprocs = get_u32(r);
    b->pid = get_u32(r);
    b->flags = get_u32(r);
    get_str(r, b->app, sizeof b->app);
}

static void w_p_welcome(struct wire_w *w, const struct pio_p_welcome *b)
{
    put_i32(w, b->status);
    put_u32(w, b->eager_limit);
    put_u32(w, b->chunk);
    put_u64(w, b->send_off);
    put_u64(w, b->send_len);
    put_u64(w, b->recv_off);
    put_u64(w, b->recv_len);
    put_str(w, b->shm, sizeof b->shm);
    put_str(w, b->host, sizeof b->host);
    put_str(w, b->system, sizeof b->system);
}

static void r_p_welcome(struct wire_r *r, struct pio_p_welcome *b)
{
    b->status = get_i32(r);
    b->eager_limit = get_u32(r);
    b->chunk = get_u32(r);
    b->send_off = get_u64(r);
    b->send_len = get_u64(r);
    b->recv_off = get_u64(r);
    b->recv_len = get_u64(r);
    get_str(r, b->shm, sizeof b->shm);
    get_str(r, b->host, sizeof b->host);
    get_str(r, b->system, sizeof b->system);
}

static void w_p_partner(struct wire_w *w, const struct pio_p_partner *b)
{
    put_u64(w, b->req);
    put_u32(w, b->timeout_ms);
    put_str(w, b->app, sizeof b->app);
}

static void r_p_partner(struct wire_r *r, struct pio_p_partner *b)
{
    b->req = get_u64(r);
    b->timeout_ms = get_u32(r);
    get_str(r, b->app, sizeof b->app);
}

static void w_p_lane_req(struct wire_w *w, const struct pio_p_lane_req *b)
{
    put_u64(w, b->req);
    put_u32(w, b->proc);
    put_str(w, b->app, sizeof b->app);
}

static void r_p_lane_req(struct wire_r *r, struct pio_p_lane_req *b)
{
    b->req = get_u64(r);
    b->proc = get_u32(r);
    get_str(r, b->app, sizeof b->app);
}

static void w_p_lane(struct wire_w *w, const struct pio_p_lane *b)
{
    put_u64(w, b->req);
    put_i32(w, b->status);
    put_u32(w, b->role);
    put_u32(w, b->proc);
    put_u32(w, b->sealed);
    put_u32(w, b->cipher);
    put_u32(w, b->uid);
    put_u32(w, b->gid);
    put_u64(w, b->lane_id);
    put_u64(w, b->n_out);
    put_u64(w, b->n_in);
    put_bytes(w, b->key_out, sizeof b->key_out);
    put_bytes(w, b->key_in, sizeof b->key_in);
    put_str(w, b->app, sizeof b->app);
    put_str(w, b->system, sizeof b->system);
    put_str(w, b->user, sizeof b->user);
}

static void r_p_lane(struct wire_r *r, struct pio_p_lane *b)
{
    b->req = get_u64(r);
    b->status = get_i32(r);
    b->role = get_u32(r);
    b->proc = get_u32(r);
    b->sealed = get_u32(r);
    b->cipher = get_u32(r);
    b->uid = get_u32(r);
    b->gid = get_u32(r);
    b->lane_id = get_u64(r);
    b->n_out = get_u64(r);
    b->n_in = get_u64(r);
    get_bytes(r, b->key_out, sizeof b->key_out);
    get_bytes(r, b->key_in, sizeof b->key_in);
    get_str(r, b->app, sizeof b->app);
    get_str(r, b->system, sizeof b->system);
    get_str(r, b->user, sizeof b->user);
}

static void w_c_lane(struct wire_w *w, const struct pio_c_lane *b)
{
    put_u64(w, b->lane_id);
    put_u32(w, b->src_proc);
    put_u32(w, b->dst_proc);
    put_u32(w, b->uid);
    put_u32(w, b->gid);
    put_str(w, b->src_app, sizeof b->src_app);
    put_str(w, b->dst_app, sizeof b->dst_app);
    put_str(w, b->user, sizeof b->user);
}

static void r_c_lane(struct wire_r *r, struct pio_c_lane *b)
{
    b->lane_id = get_u64(r);
    b->src_proc = get_u32(r);
    b->dst_proc = get_u32(r);
    b->uid = get_u32(r);
    b->gid = get_u32(r);
    get_str(r, b->src_app, sizeof b->src_app);
    get_str(r, b->dst_app, sizeof b->dst_app);
    get_str(r, b->user, sizeof b->user);
}

static void w_l_msg(struct wire_w *w, const struct pio_l_msg *b)
{
    put_u64(w, b->seq);
    put_u64(w, b->size);
    put_u64(w, b->count);
    put_i32(w, b->tag);
    put_u32(w, b->datatype);
    put_u32(w, b->flags);
    if (!(b->flags & PIO_WF_EAGER)) /* a lane message always carries its bytes */
        wire_fail(w, PIO_EINVAL);
    put_payload(w, b->flags, b->size, b->payload);
}

static void r_l_msg(struct wire_r *r, struct pio_l_msg *b)
{
    b->seq = get_u64(r);
    b->size = get_u64(r);
    b->count = get_u64(r);
    b->tag = get_i32(r);
    b->datatype = get_u32(r);
    b->flags = get_u32(r);
    if (!(b->flags & PIO_WF_EAGER))
        r->rc = PIO_EPROTO;
    b->payload = get_payload(r, b->flags, b->size);
}

static void w_p_partner_info(struct wire_w *w, const struct pio_p_partner_info *b)
{
    put_u64(w, b->req);
    put_i32(w, b->status);
    put_u32(w, b->nprocs);
    put_u32(w, b->channels);
    put_str(w, b->system, sizeof b->system);
    put_str(w, b->host, sizeof b->host);
}

static void r_p_partner_info(struct wire_r *r, struct pio_p_partner_info *b)
{
    b->req = get_u64(r);
    b->status = get_i32(r);
    b->nprocs = get_u32(r);
    b->channels = get_u32(r);
    get_str(r, b->system, sizeof b->system);
    get_str(r, b->host, sizeof b->host);
}

static void w_p_send(struct wire_w *w, const struct pio_p_send *b)
{
    put_u64(w, b->sid);
    put_u64(w, b->size);
    put_u64(w, b->count);
    put_u32(w, b->dst_proc);
    put_i32(w, b->tag);
    put_u32(w, b->datatype);
    put_u16(w, b->conn);
    put_u16(w, b->conn_arg);
    put_u32(w, b->flags);
    put_str(w, b->partner, sizeof b->partner);
    put_payload(w, b->flags, b->size, b->payload);
}

static void r_p_send(struct wire_r *r, struct pio_p_send *b)
{
    b->sid = get_u64(r);
    b->size = get_u64(r);
    b->count = get_u64(r);
    b->dst_proc = get_u32(r);
    b->tag = get_i32(r);
    b->datatype = get_u32(r);
    b->conn = get_u16(r);
    b->conn_arg = get_u16(r);
    b->flags = get_u32(r);
    get_str(r, b->partner, sizeof b->partner);
    b->payload = get_payload(r, b->flags, b->size);
}

static void w_p_ranges(struct wire_w *w, const struct pio_p_ranges *b)
{
    put_u64(w, b->id);
    put_u64(w, b->msg_off);
    int n = put_count(w, b->n, PIO_WIRE_MAX_RANGES);
    for (int i = 0; i < n; i++) {
        put_u64(w, b->r[i].off);
        put_u64(w, b->r[i].len);
    }
}

static void r_p_ranges(struct wire_r *r, struct pio_p_ranges *b)
{
    b->id = get_u64(r);
    b->msg_off = get_u64(r);
    b->n = get_count(r, PIO_WIRE_MAX_RANGES);
    for (uint32_t i = 0; i < b->n && r->rc == PIO_OK; i++) {
        b->r[i].off = get_u64(r);
        b->r[i].len = get_u64(r);
    }
}

static void w_p_done(struct wire_w *w, const struct pio_p_done *b)
{
    put_u64(w, b->id);
    put_i32(w, b->status);
}

static void r_p_done(struct wire_r *r, struct pio_p_done *b)
{
    b->id = get_u64(r);
    b->status = get_i32(r);
}

static void w_p_msg_new(struct wire_w *w, const struct pio_p_msg_new *b)
{
    put_u64(w, b->key);
    put_u64(w, b->size);
    put_u64(w, b->count);
    put_u64(w, b->seq);
    put_u32(w, b->src_proc);
    put_i32(w, b->tag);
    put_u32(w, b->datatype);
    put_u32(w, b->flags);
    put_u32(w, b->src_uid);
    put_u32(w, b->src_gid);
    put_str(w, b->src_app, sizeof b->src_app);
    put_str(w, b->src_system, sizeof b->src_system);
    put_str(w, b->src_user, sizeof b->src_user);
    put_payload(w, b->flags, b->size, b->payload);
}

static void r_p_msg_new(struct wire_r *r, struct pio_p_msg_new *b)
{
    b->key = get_u64(r);
    b->size = get_u64(r);
    b->count = get_u64(r);
    b->seq = get_u64(r);
    b->src_proc = get_u32(r);
    b->tag = get_i32(r);
    b->datatype = get_u32(r);
    b->flags = get_u32(r);
    b->src_uid = get_u32(r);
    b->src_gid = get_u32(r);
    get_str(r, b->src_app, sizeof b->src_app);
    get_str(r, b->src_system, sizeof b->src_system);
    get_str(r, b->src_user, sizeof b->src_user);
    b->payload = get_payload(r, b->flags, b->size);
}

static void w_p_event(struct wire_w *w, const struct pio_p_event *b)
{
    put_u32(w, b->kind);
    put_u32(w, b->proc);
    put_u32(w, b->nprocs);
    put_str(w, b->app, sizeof b->app);
}

static void r_p_event(struct wire_r *r, struct pio_p_event *b)
{
    b->kind = get_u32(r);
    b->proc = get_u32(r);
    b->nprocs = get_u32(r);
    get_str(r, b->app, sizeof b->app);
}

static void w_p_qos(struct wire_w *w, const struct pio_p_qos *b)
{
    put_i32(w, b->tag0);
    put_u32(w, b->n);
    for (uint32_t i = 0; i < b->n && i < PIO_WIRE_MAX_CLASSES; i++)
        put_u32(w, b->share[i]);
}

static void r_p_qos(struct wire_r *r, struct pio_p_qos *b)
{
    b->tag0 = get_i32(r);
    b->n = get_count(r, PIO_WIRE_MAX_CLASSES);
    for (uint32_t i = 0; i < b->n && r->rc == PIO_OK; i++)
        b->share[i] = get_u32(r);
}

static void w_p_info_req(struct wire_w *w, const struct pio_p_info_req *b)
{
    put_u64(w, b->req);
    put_u32(w, b->what);
}

static void r_p_info_req(struct wire_r *r, struct pio_p_info_req *b)
{
    b->req = get_u64(r);
    b->what = get_u32(r);
}

static void w_chan_info(struct wire_w *w, const struct pio_chan_info *c)
{
    put_str(w, c->peer, sizeof c->peer);
    put_str(w, c->local, sizeof c->local);
    put_str(w, c->remote, sizeof c->remote);
    put_u32(w, c->index);
    put_u32(w, c->state);
    put_u64(w, c->tx_bytes);
    put_u64(w, c->rx_bytes);
    put_u64(w, c->queued);
    put_u64(w, c->rate);
    put_u64(w, c->tx_chunks);
    put_u64(w, c->rx_chunks);
    put_u64(w, c->resent);
    put_u32(w, c->downs);
    put_str(w, c->host, sizeof c->host);
}

static void r_chan_info(struct wire_r *r, struct pio_chan_info *c)
{
    get_str(r, c->peer, sizeof c->peer);
    get_str(r, c->local, sizeof c->local);
    get_str(r, c->remote, sizeof c->remote);
    c->index = get_u32(r);
    c->state = get_u32(r);
    c->tx_bytes = get_u64(r);
    c->rx_bytes = get_u64(r);
    c->queued = get_u64(r);
    c->rate = get_u64(r);
    c->tx_chunks = get_u64(r);
    c->rx_chunks = get_u64(r);
    c->resent = get_u64(r);
    c->downs = get_u32(r);
    get_str(r, c->host, sizeof c->host);
}

static void w_h_load(struct wire_w *w, const struct pio_h_load *b)
{
    put_str(w, b->host, sizeof b->host);
    put_u64(w, b->seq);
    int n = put_count(w, b->nchan, PIO_WIRE_MAX_LOAD);
    for (int i = 0; i < n; i++)
        w_chan_info(w, &b->chan[i]);
}

static void r_h_load(struct wire_r *r, struct pio_h_load *b)
{
    get_str(r, b->host, sizeof b->host);
    b->seq = get_u64(r);
    b->nchan = get_count(r, PIO_WIRE_MAX_LOAD);
    for (uint32_t i = 0; i < b->nchan && r->rc == PIO_OK; i++)
        r_chan_info(r, &b->chan[i]);
}

static void w_app_info(struct wire_w *w, const struct pio_app_info *a)
{
    put_str(w, a->app, sizeof a->app);
    put_str(w, a->system, sizeof a->system);
    put_u32(w, a->nprocs);
    put_u32(w, a->joined);
}

static void r_app_info(struct wire_r *r, struct pio_app_info *a)
{
    get_str(r, a->app, sizeof a->app);
    get_str(r, a->system, sizeof a->system);
    a->nprocs = get_u32(r);
    a->joined = get_u32(r);
}

/* nchan and napp are both counts; their entries follow in that order. */
static void w_p_info(struct wire_w *w, const struct pio_p_info *b)
{
    put_u64(w, b->req);
    put_str(w, b->host, sizeof b->host);
    put_str(w, b->system, sizeof b->system);
    put_u32(w, b->version);
    int nchan = put_count(w, b->nchan, PIO_WIRE_MAX_CHANNELS);
    int napp = put_count(w, b->napp, PIO_WIRE_MAX_REG);
    for (int i = 0; i < nchan; i++)
        w_chan_info(w, &b->chan[i]);
    for (int i = 0; i < napp; i++)
        w_app_info(w, &b->app[i]);
    put_u64(w, b->pool_size);
    put_u64(w, b->pool_used);
}

static void r_p_info(struct wire_r *r, struct pio_p_info *b)
{
    b->req = get_u64(r);
    get_str(r, b->host, sizeof b->host);
    get_str(r, b->system, sizeof b->system);
    b->version = get_u32(r);
    b->nchan = get_count(r, PIO_WIRE_MAX_CHANNELS);
    b->napp = get_count(r, PIO_WIRE_MAX_REG);
    for (uint32_t i = 0; i < b->nchan && r->rc == PIO_OK; i++)
        r_chan_info(r, &b->chan[i]);
    for (uint32_t i = 0; i < b->napp && r->rc == PIO_OK; i++)
        r_app_info(r, &b->app[i]);
    b->pool_size = get_u64(r);
    b->pool_used = get_u64(r);
}

static void w_h_hello(struct wire_w *w, const struct pio_h_hello *b)
{
    put_u32(w, b->proto);
    put_u32(w, b->nchan);
    put_str(w, b->system, sizeof b->system);
    put_str(w, b->host, sizeof b->host);
    put_bytes(w, b->chan_key, sizeof b->chan_key);
    put_u64(w, b->epoch);
}

static void r_h_hello(struct wire_r *r, struct pio_h_hello *b)
{
    b->proto = get_u32(r);
    b->nchan = get_u32(r);
    get_str(r, b->system, sizeof b->system);
    get_str(r, b->host, sizeof b->host);
    get_bytes(r, b->chan_key, sizeof b->chan_key);
    b->epoch = get_u64(r);
}

static void w_h_registry(struct wire_w *w, const struct pio_h_registry *b)
{
    put_u32(w, b->full);
    int n = put_count(w, b->n, PIO_WIRE_MAX_REG);
    for (int i = 0; i < n; i++) {
        put_str(w, b->e[i].app, sizeof b->e[i].app);
        put_u32(w, b->e[i].nprocs);
        put_u32(w, b->e[i].proc);
        put_u32(w, b->e[i].state);
    }
}

static void r_h_registry(struct wire_r *r, struct pio_h_registry *b)
{
    b->full = get_u32(r);
    b->n = get_count(r, PIO_WIRE_MAX_REG);
    for (uint32_t i = 0; i < b->n && r->rc == PIO_OK; i++) {
        get_str(r, b->e[i].app, sizeof b->e[i].app);
        b->e[i].nprocs = get_u32(r);
        b->e[i].proc = get_u32(r);
        b->e[i].state = get_u32(r);
    }
}

static void w_h_request(struct wire_w *w, const struct pio_h_request *b)
{
    put_u64(w, b->msgid);
    put_u64(w, b->seq);
    put_u64(w, b->size);
    put_u64(w, b->count);
    put_u32(w, b->src_proc);
    put_u32(w, b->dst_proc);
    put_i32(w, b->tag);
    put_u32(w, b->datatype);
    put_u32(w, b->flags);
    put_u32(w, b->chunk);
    put_u16(w, b->conn);
    put_u16(w, b->conn_arg);
    put_u32(w, b->src_uid);
    put_u32(w, b->src_gid);
    put_str(w, b->src_app, sizeof b->src_app);
    put_str(w, b->dst_app, sizeof b->dst_app);
    put_str(w, b->src_user, sizeof b->src_user);
    put_payload(w, b->flags, b->size, b->payload);
}

static void r_h_request(struct wire_r *r, struct pio_h_request *b)
{
    b->msgid = get_u64(r);
    b->seq = get_u64(r);
    b->size = get_u64(r);
    b->count = get_u64(r);
    b->src_proc = get_u32(r);
    b->dst_proc = get_u32(r);
    b->tag = get_i32(r);
    b->datatype = get_u32(r);
    b->flags = get_u32(r);
    b->chunk = get_u32(r);
    b->conn = get_u16(r);
    b->conn_arg = get_u16(r);
    b->src_uid = get_u32(r);
    b->src_gid = get_u32(r);
    get_str(r, b->src_app, sizeof b->src_app);
    get_str(r, b->dst_app, sizeof b->dst_app);
    get_str(r, b->src_user, sizeof b->src_user);
    b->payload = get_payload(r, b->flags, b->size);
}

static void w_h_reply(struct wire_w *w, const struct pio_h_reply *b)
{
    put_u64(w, b->msgid);
    int n = put_count(w, b->n, PIO_WIRE_MAX_GRANTS);
    for (int i = 0; i < n; i++) {
        put_u64(w, b->g[i].off);
        put_u32(w, b->g[i].len);
        put_u16(w, b->g[i].channel);
        put_u16(w, b->g[i].host);
    }
}

static void r_h_reply(struct wire_r *r, struct pio_h_reply *b)
{
    b->msgid = get_u64(r);
    b->n = get_count(r, PIO_WIRE_MAX_GRANTS);
    for (uint32_t i = 0; i < b->n && r->rc == PIO_OK; i++) {
        b->g[i].off = get_u64(r);
        b->g[i].len = get_u32(r);
        b->g[i].channel = get_u16(r);
        b->g[i].host = get_u16(r);
    }
}

static void w_h_done(struct wire_w *w, const struct pio_h_done *b)
{
    put_u64(w, b->msgid);
    put_i32(w, b->status);
}

static void r_h_done(struct wire_r *r, struct pio_h_done *b)
{
    b->msgid = get_u64(r);
    b->status = get_i32(r);
}

/* The inner frame is carried whole (u32 length, then its bytes); it is
 * decoded by its own pio_wire_decode when its turn comes. */
static void w_h_seq(struct wire_w *w, const struct pio_h_seq *b)
{
    put_u64(w, b->src_epoch);
    put_u64(w, b->dst_epoch);
    put_u64(w, b->seq);
    put_u64(w, b->ack);
    if (b->len < PIO_WIRE_HDR || (b->inner == NULL && b->len > 0)) {
        wire_fail(w, PIO_EINVAL);
        return;
    }
    put_u32(w, b->len);
    put_bytes(w, b->inner, b->len);
}

static void r_h_seq(struct wire_r *r, struct pio_h_seq *b)
{
    b->src_epoch = get_u64(r);
    b->dst_epoch = get_u64(r);
    b->seq = get_u64(r);
    b->ack = get_u64(r);
    b->len = get_u32(r);
    if (r->rc == PIO_OK && (b->len < PIO_WIRE_HDR || b->len > r->len - r->pos || b->seq == 0)) {
        r->rc = PIO_EPROTO;
        return;
    }
    b->inner = wire_take(r, b->len);
}

static void w_h_ack(struct wire_w *w, const struct pio_h_ack *b)
{
    put_u64(w, b->src_epoch);
    put_u64(w, b->dst_epoch);
    put_u64(w, b->ack);
}

static void r_h_ack(struct wire_r *r, struct pio_h_ack *b)
{
    b->src_epoch = get_u64(r);
    b->dst_epoch = get_u64(r);
    b->ack = get_u64(r);
}

static void w_c_hello(struct wire_w *w, const struct pio_c_hello *b)
{
    put_u32(w, b->proto);
    put_u32(w, b->index);
    put_str(w, b->system, sizeof b->system);
    put_str(w, b->host, sizeof b->host);
    put_str(w, b->target, sizeof b->target);
}

static void r_c_hello(struct wire_r *r, struct pio_c_hello *b)
{
    b->proto = get_u32(r);
    b->index = get_u32(r);
    get_str(r, b->system, sizeof b->system);
    get_str(r, b->host, sizeof b->host);
    get_str(r, b->target, sizeof b->target);
}

static void w_c_data(struct wire_w *w, const struct pio_c_data *b)
{
    put_u64(w, b->msgid);
    put_u64(w, b->off);
    put_u32(w, b->len);
    put_u32(w, b->resend);
}

static void r_c_data(struct wire_r *r, struct pio_c_data *b)
{
    b->msgid = get_u64(r);
    b->off = get_u64(r);
    b->len = get_u32(r);
    b->resend = get_u32(r);
}

static void w_c_ack(struct wire_w *w, const struct pio_c_ack *b)
{
    int n = put_count(w, b->n, PIO_WIRE_MAX_RANGES);
    for (int i = 0; i < n; i++) {
        put_u64(w, b->a[i].msgid);
        put_u64(w, b->a[i].off);
    }
}

static void r_c_ack(struct wire_r *r, struct pio_c_ack *b)
{
    b->n = get_count(r, PIO_WIRE_MAX_RANGES);
    for (uint32_t i = 0; i < b->n && r->rc == PIO_OK; i++) {
        b->a[i].msgid = get_u64(r);
        b->a[i].off = get_u64(r);
    }
}

static void w_c_sealed(struct wire_w *w, const struct pio_c_sealed *b)
{
    if (b->len < PIO_WIRE_HDR + PIO_WIRE_SEALED_TAG || b->body == NULL) {
        wire_fail(w, PIO_EINVAL);
        return;
    }
    put_bytes(w, b->body, b->len);
}

static void r_c_sealed(struct wire_r *r, struct pio_c_sealed *b)
{
    size_t n = r->len - r->pos;
    if (n < PIO_WIRE_HDR + PIO_WIRE_SEALED_TAG) {
        r->rc = PIO_EPROTO;
        return;
    }
    b->len = (uint32_t)n;
    b->body = wire_take(r, n);
}

/* The body of f through w; PIO_EINVAL into w for an unknown type. */
static void wire_write_body(struct wire_w *w, const struct pio_frame *f)
{
    switch (f->type) {
    case PIO_F_P_HELLO: w_p_hello(w, &f->u.p_hello); break;
    case PIO_F_P_WELCOME: w_p_welcome(w, &f->u.p_welcome); break;
    case PIO_F_P_PARTNER: w_p_partner(w, &f->u.p_partner); break;
    case PIO_F_P_PARTNER_INFO: w_p_partner_info(w, &f->u.p_partner_info); break;
    case PIO_F_P_SEND: w_p_send(w, &f->u.p_send); break;
    case PIO_F_P_SEND_DATA:
    case PIO_F_P_RELEASE:
    case PIO_F_P_MSG_DATA:
    case PIO_F_P_FREE: w_p_ranges(w, &f->u.p_ranges); break;
    case PIO_F_P_BYE:
    case PIO_F_P_SEND_DONE:
    case PIO_F_P_CLAIM:
    case PIO_F_P_CONSUMED: w_p_done(w, &f->u.p_done); break;
    case PIO_F_P_MSG_NEW: w_p_msg_new(w, &f->u.p_msg_new); break;
    case PIO_F_P_EVENT: w_p_event(w, &f->u.p_event); break;
    case PIO_F_P_INFO_REQ: w_p_info_req(w, &f->u.p_info_req); break;
    case PIO_F_P_QOS: w_p_qos(w, &f->u.p_qos); break;
    case PIO_F_P_LANE_REQ: w_p_lane_req(w, &f->u.p_lane_req); break;
    case PIO_F_P_LANE: w_p_lane(w, &f->u.p_lane); break;
    case PIO_F_C_LANE: w_c_lane(w, &f->u.c_lane); break;
    case PIO_F_L_MSG: w_l_msg(w, &f->u.l_msg); break;
    case PIO_F_L_ACK:
    case PIO_F_L_FLUSH: put_u64(w, f->u.l_ack.seq); break;
    case PIO_F_P_INFO: w_p_info(w, &f->u.p_info); break;
    case PIO_F_H_HELLO: w_h_hello(w, &f->u.h_hello); break;
    case PIO_F_H_REGISTRY: w_h_registry(w, &f->u.h_registry); break;
    case PIO_F_H_REQUEST: w_h_request(w, &f->u.h_request); break;
    case PIO_F_H_REPLY: w_h_reply(w, &f->u.h_reply); break;
    case PIO_F_H_DONE:
    case PIO_F_H_BYE: w_h_done(w, &f->u.h_done); break;
    case PIO_F_H_SEQ: w_h_seq(w, &f->u.h_seq); break;
    case PIO_F_H_ACK: w_h_ack(w, &f->u.h_ack); break;
    case PIO_F_C_HELLO: w_c_hello(w, &f->u.c_hello); break;
    case PIO_F_H_LOAD: w_h_load(w, &f->u.h_load); break;
    case PIO_F_C_CHALLENGE:
    case PIO_F_C_PROOF: put_bytes(w, f->u.c_key.b, sizeof f->u.c_key.b); break;
    case PIO_F_C_ACCEPT: put_i32(w, f->u.c_accept.status); break;
    case PIO_F_C_DATA: w_c_data(w, &f->u.c_data); break;
    case PIO_F_C_ACK: w_c_ack(w, &f->u.c_ack); break;
    case PIO_F_C_SEALED: w_c_sealed(w, &f->u.c_sealed); break;
    default: wire_fail(w, PIO_EINVAL); break;
    }
}

/* The body from r into f; PIO_EPROTO for an unknown type. */
static void wire_read_body(struct wire_r *r, struct pio_frame *f)
{
    switch (f->type) {
    case PIO_F_P_HELLO: r_p_hello(r, &f->u.p_hello); break;
    case PIO_F_P_WELCOME: r_p_welcome(r, &f->u.p_welcome); break;
    case PIO_F_P_PARTNER: r_p_partner(r, &f->u.p_partner); break;
    case PIO_F_P_PARTNER_INFO: r_p_partner_info(r, &f->u.p_partner_info); break;
    case PIO_F_P_SEND: r_p_send(r, &f->u.p_send); break;
    case PIO_F_P_SEND_DATA:
    case PIO_F_P_RELEASE:
    case PIO_F_P_MSG_DATA:
    case PIO_F_P_FREE: r_p_ranges(r, &f->u.p_ranges); break;
    case PIO_F_P_BYE:
    case PIO_F_P_SEND_DONE:
    case PIO_F_P_CLAIM:
    case PIO_F_P_CONSUMED: r_p_done(r, &f->u.p_done); break;
    case PIO_F_P_MSG_NEW: r_p_msg_new(r, &f->u.p_msg_new); break;
    case PIO_F_P_EVENT: r_p_event(r, &f->u.p_event); break;
    case PIO_F_P_INFO_REQ: r_p_info_req(r, &f->u.p_info_req); break;
    case PIO_F_P_QOS: r_p_qos(r, &f->u.p_qos); break;
    case PIO_F_P_LANE_REQ: r_p_lane_req(r, &f->u.p_lane_req); break;
    case PIO_F_P_LANE: r_p_lane(r, &f->u.p_lane); break;
    case PIO_F_C_LANE: r_c_lane(r, &f->u.c_lane); break;
    case PIO_F_L_MSG: r_l_msg(r, &f->u.l_msg); break;
    case PIO_F_L_ACK:
    case PIO_F_L_FLUSH: f->u.l_ack.seq = get_u64(r); break;
    case PIO_F_P_INFO: r_p_info(r, &f->u.p_info); break;
    case PIO_F_H_HELLO: r_h_hello(r, &f->u.h_hello); break;
    case PIO_F_H_REGISTRY: r_h_registry(r, &f->u.h_registry); break;
    case PIO_F_H_REQUEST: r_h_request(r, &f->u.h_request); break;
    case PIO_F_H_REPLY: r_h_reply(r, &f->u.h_reply); break;
    case PIO_F_H_DONE:
    case PIO_F_H_BYE: r_h_done(r, &f->u.h_done); break;
    case PIO_F_H_SEQ: r_h_seq(r, &f->u.h_seq); break;
    case PIO_F_H_ACK: r_h_ack(r, &f->u.h_ack); break;
    case PIO_F_C_HELLO: r_c_hello(r, &f->u.c_hello); break;
    case PIO_F_H_LOAD: r_h_load(r, &f->u.h_load); break;
    case PIO_F_C_CHALLENGE:
    case PIO_F_C_PROOF: get_bytes(r, f->u.c_key.b, sizeof f->u.c_key.b); break;
    case PIO_F_C_ACCEPT: f->u.c_accept.status = get_i32(r); break;
    case PIO_F_C_DATA: r_c_data(r, &f->u.c_data); break;
    case PIO_F_C_ACK: r_c_ack(r, &f->u.c_ack); break;
    case PIO_F_C_SEALED: r_c_sealed(r, &f->u.c_sealed); break;
    default: r->rc = PIO_EPROTO; break;
    }
}

/* ---- header ----------------------------------------------------------------- */
static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* The low 32 bits of XXH3-64 of the body, seeded with XXH3-64 (seed
 * WIRE_SEED) of header bytes 0..11. XXH3 since protocol 5: XXH32 ran at
 * 6-7 GB/s, and an eager message is hashed on each of its six encodes and
 * decodes, a third of the CPU of a 64 KiB one-way (design notes, "Issue
 * 31, item 6"). An H_SEQ's check covers its fixed fields only: the frame
 * it carries has a check of its own, verified when that frame is decoded,
 * so its bytes are hashed once, not twice. */
static uint32_t wire_check(const uint8_t *hdr, const uint8_t *body, size_t body_len)
{
    if (hdr[5] == PIO_F_H_SEQ && body_len > PIO_WIRE_SEQ_FIXED)
        body_len = PIO_WIRE_SEQ_FIXED;
    if (hdr[5] == PIO_F_C_SEALED) /* its tag authenticates the body */
        body_len = 0;
    XXH64_hash_t h = XXH3_64bits_withSeed(hdr, 12, WIRE_SEED);
    return (uint32_t)XXH3_64bits_withSeed(body_len ? body : hdr, body_len, h);
}

/* The bytes of f's eager payload, which end its body and which its check
 * does not cover (protocol 5): they are a user's message, carried on a Unix
 * socket, a sealed express lane (the AEAD covers them) or a lane a site
 * chose not to seal, like a large message's C_DATA payload, which the check
 * never covered. Hashing them cost a third of a 64 KiB one-way. */
static size_t wire_payload_len(const struct pio_frame *f)
{
    switch (f->type) {
    case PIO_F_P_SEND: return (f->u.p_send.flags & PIO_WF_EAGER) ? (size_t)f->u.p_send.size : 0;
    case PIO_F_P_MSG_NEW:
        return (f->u.p_msg_new.flags & PIO_WF_EAGER) ? (size_t)f->u.p_msg_new.size : 0;
    case PIO_F_H_REQUEST:
        return (f->u.h_request.flags & PIO_WF_EAGER) ? (size_t)f->u.h_request.size : 0;
    case PIO_F_L_MSG: return (f->u.l_msg.flags & PIO_WF_EAGER) ? (size_t)f->u.l_msg.size : 0;
    default: return 0;
    }
}

/* Body length of f, or PIO_EINVAL in *rc when f cannot be encoded. */
static size_t wire_body_size(const struct pio_frame *f, int *rc)
{
    struct wire_w w = {.buf = NULL, .cap = 0, .pos = 0, .rc = PIO_OK};
    wire_write_body(&w, f);
    if (w.rc == PIO_OK && w.pos > PIO_WIRE_MAX_BODY)
        w.rc = PIO_EINVAL;
    *rc = w.rc;
    return w.pos;
}

void pio_wire_ranges1(struct pio_frame *f, int type, uint64_t id, uint64_t msg_off, uint64_t off,
                      uint64_t len)
{
    f->type = (uint8_t)type;
    f->flags = 0;
    f->u.p_ranges.id = id;
    f->u.p_ranges.msg_off = msg_off;
    f->u.p_ranges.n = 1;
    f->u.p_ranges.r[0].off = off;
    f->u.p_ranges.r[0].len = len;
}

size_t pio_wire_encoded_size(const struct pio_frame *f)
{
    int rc;
    size_t body = wire_body_size(f, &rc);
    return rc == PIO_OK ? PIO_WIRE_HDR + body : 0;
}

/* pio_wire_encode, or with head_only everything but an eager payload's
 * bytes (*len: the frame's length all the same). */
static int wire_encode(const struct pio_frame *f, uint8_t *buf, size_t cap, size_t *len,
                       int head_only)
{
    int rc;
    size_t body = wire_body_size(f, &rc);
    if (rc != PIO_OK)
        return rc;
    size_t skip = head_only ? wire_payload_len(f) : 0;
    if (cap < PIO_WIRE_HDR || cap - PIO_WIRE_HDR < body - skip)
        return PIO_ENOMEM;

    struct wire_w w = {.buf = buf,
                       .cap = PIO_WIRE_HDR + body - skip,
                       .pos = 0,
                       .rc = PIO_OK,
                       .head_only = head_only};
    put_u32(&w, PIO_WIRE_MAGIC);
    put_u8(&w, PIO_WIRE_VERSION);
    put_u8(&w, f->type);
    put_u16(&w, f->flags);
    put_u32(&w, (uint32_t)body);
    put_u32(&w, 0); /* check, below */
    wire_write_body(&w, f);
    if (w.rc != PIO_OK || w.pos != PIO_WIRE_HDR + body)
        return PIO_EINTERNAL;

    uint32_t check = wire_check(buf, buf + PIO_WIRE_HDR, body - wire_payload_len(f));
    w.pos = 12;
    put_u32(&w, check);
    if (len != NULL)
        *len = PIO_WIRE_HDR + body;
    return PIO_OK;
}

int pio_wire_encode(const struct pio_frame *f, uint8_t *buf, size_t cap, size_t *len)
{
    return wire_encode(f, buf, cap, len, 0);
}

int pio_wire_encode_head(const struct pio_frame *f, uint8_t *buf, size_t cap, size_t *head,
                         size_t *len)
{
    int rc = wire_encode(f, buf, cap, len, 1);
    if (rc == PIO_OK && head)
        *head = *len - wire_payload_len(f);
    return rc;
}

int pio_wire_seq_wrap(uint8_t *buf, size_t cap, const struct pio_h_seq *h, size_t *len)
{
    if (h->len < PIO_WIRE_HDR || h->seq == 0 || cap < PIO_WIRE_SEQ_HDR ||
        cap - PIO_WIRE_SEQ_HDR < h->len || PIO_WIRE_SEQ_FIXED + (size_t)h->len > PIO_WIRE_MAX_BODY)
        return PIO_EINVAL;
    struct wire_w w = {.buf = buf, .cap = PIO_WIRE_SEQ_HDR, .pos = 0, .rc = PIO_OK};
    put_u32(&w, PIO_WIRE_MAGIC);
    put_u8(&w, PIO_WIRE_VERSION);
    put_u8(&w, PIO_F_H_SEQ);
    put_u16(&w, 0);
    put_u32(&w, (uint32_t)(PIO_WIRE_SEQ_FIXED + h->len));
    put_u32(&w, 0); /* check, below */
    put_u64(&w, h->src_epoch);
    put_u64(&w, h->dst_epoch);
    put_u64(&w, h->seq);
    put_u64(&w, h->ack);
    put_u32(&w, h->len);
    if (w.rc != PIO_OK || w.pos != PIO_WIRE_SEQ_HDR)
        return PIO_EINTERNAL;
    uint32_t check = wire_check(buf, buf + PIO_WIRE_HDR, PIO_WIRE_SEQ_FIXED);
    w.pos = 12;
    put_u32(&w, check);
    if (len)
        *len = PIO_WIRE_SEQ_HDR + (size_t)h->len;
    return PIO_OK;
}

int pio_wire_sealed_wrap(uint8_t *buf, size_t body_len)
{
    if (body_len < PIO_WIRE_HDR + PIO_WIRE_SEALED_TAG || body_len > PIO_WIRE_MAX_BODY)
        return PIO_EINVAL;
    struct wire_w w = {.buf = buf, .cap = PIO_WIRE_HDR, .pos = 0, .rc = PIO_OK};
    put_u32(&w, PIO_WIRE_MAGIC);
    put_u8(&w, PIO_WIRE_VERSION);
    put_u8(&w, PIO_F_C_SEALED);
    put_u16(&w, 0);
    put_u32(&w, (uint32_t)body_len);
    put_u32(&w, wire_check(buf, NULL, 0));
    return w.rc;
}

void pio_wire_reseal(uint8_t *buf, size_t len)
{
    if (len < PIO_WIRE_HDR || le32(buf + 8) > len - PIO_WIRE_HDR)
        return;
    uint32_t body_len = le32(buf + 8);
    struct pio_frame f;
    memset(&f, 0, sizeof(f));
    f.type = buf[5];
    f.flags = (uint16_t)(buf[6] | (buf[7] << 8));
    struct wire_r r = {.buf = buf + PIO_WIRE_HDR, .len = body_len, .pos = 0, .rc = PIO_OK};
    wire_read_body(&r, &f);
    size_t covered = body_len;
    if (r.rc == PIO_OK && r.pos == r.len)
        covered -= wire_payload_len(&f);
    uint32_t c = wire_check(buf, buf + PIO_WIRE_HDR, covered);
    for (int i = 0; i < 4; i++)
        buf[12 + i] = (uint8_t)(c >> (8 * i));
}

int pio_wire_peek(const uint8_t *buf, size_t len, uint8_t *type, uint32_t *body_len,
                  uint8_t *peer_version)
{
    if (len < PIO_WIRE_HDR)
        return PIO_EAGAIN;
    if (le32(buf) != PIO_WIRE_MAGIC)
        return PIO_EPROTO;
    if (peer_version != NULL)
        *peer_version = buf[4];
    if (buf[4] != PIO_WIRE_VERSION)
        return PIO_EVERSION;
    uint32_t n = le32(buf + 8);
    if (n > PIO_WIRE_MAX_BODY)
        return PIO_EPROTO;
    if (type != NULL)
        *type = buf[5];
    if (body_len != NULL)
        *body_len = n;
    return PIO_OK;
}

int pio_wire_decode(const uint8_t *buf, size_t len, struct pio_frame *f, size_t *used)
{
    uint8_t type;
    uint32_t body_len;
    int rc = pio_wire_peek(buf, len, &type, &body_len, NULL);
    if (rc != PIO_OK)
        return rc;
    if (len - PIO_WIRE_HDR < body_len)
        return PIO_EAGAIN;
    pio_capture("wire", buf, PIO_WIRE_HDR + (size_t)body_len);

    const uint8_t *body = buf + PIO_WIRE_HDR;
    f->type = type;
    f->flags = (uint16_t)(buf[6] | (buf[7] << 8));
    struct wire_r r = {.buf = body, .len = body_len, .pos = 0, .rc = PIO_OK};
    wire_read_body(&r, f);
    if (r.rc != PIO_OK || r.pos != r.len)
        return PIO_EPROTO; /* malformed, or bytes left over */
    /* the check, over what the body holds before an eager payload (the
     * decode never trusts the bytes, so it may come first) */
    if (wire_check(buf, body, body_len - wire_payload_len(f)) != le32(buf + 12))
        return PIO_EPROTO;
    if (used != NULL)
        *used = PIO_WIRE_HDR + (size_t)body_len;
    return PIO_OK;
}

#define WIRE_NAME_(name, value) [value] = #name,
static const char *const wire_names[256] = {PIO_FTYPES(WIRE_NAME_)};
#undef WIRE_NAME_

const char *pio_wire_type_name(int type)
{
    if (type < 0 || type > 255 || wire_names[type] == NULL)
        return "?";
    return wire_names[type];
}
