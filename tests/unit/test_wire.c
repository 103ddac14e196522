/* test_wire.c - every frame round-trips; truncated, corrupted and malformed frames are refused.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * One case per frame type fills a frame three ways (full: longest strings,
 * largest counts, an eager payload; empty: empty strings, zero counts, no
 * payload; mixed: random lengths and counts, an empty eager payload), then
 * checks encode -> decode field by field, every truncation (PIO_EAGAIN) and
 * every single-byte corruption (PIO_EPROTO / PIO_EVERSION). Further cases
 * hand-build frames with a correct check to reach each decoder refusal, pin
 * the byte layout with a golden frame, and exercise the encoder's errors.
 * Values come from a fixed-seed xorshift, so a failure always reproduces.
 */
#include "common/wire/wire.h"
#include "pio.h"
#include "tests/lib/unit.h"

#include <xxhash.h>

/* ---- values ------------------------------------------------------------------ */
static uint64_t rnd_state = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

static uint32_t r32(void)
{
    return (uint32_t)rnd();
}

static int32_t ri32(void)
{
    return (int32_t)((int64_t)(rnd() % 4000000000u) - 2000000000);
}

static uint16_t r16(void)
{
    return (uint16_t)rnd();
}

enum variant { V_FULL, V_EMPTY, V_MIXED, V_COUNT };

#define PAYLOAD_LEN 4096
static uint8_t payload_buf[PAYLOAD_LEN];

/* A string of the variant's length: field-1, 0 or random; bytes 1..255. */
static void fill_str(char *s, size_t field, int v)
{
    size_t n = v == V_FULL ? field - 1 : v == V_EMPTY ? 0 : rnd() % field;
    for (size_t i = 0; i < n; i++)
        s[i] = (char)(1 + rnd() % 255);
    memset(s + n, 0, field - n);
}

static uint32_t fill_count(uint32_t max, int v)
{
    return v == V_FULL ? max : v == V_EMPTY ? 0 : 1 + (uint32_t)(rnd() % (max - 1));
}

/* Eager fields: full carries PAYLOAD_LEN bytes, empty none (a large message),
 * mixed an empty eager payload (size 0, NULL pointer). */
static void fill_eager(int v, uint64_t *size, uint32_t *flags, const uint8_t **payload)
{
    *flags = r32() & ~(uint32_t)PIO_WF_EAGER;
    if (v == V_EMPTY) {
        *size = rnd() >> 8;
        *payload = NULL;
        return;
    }
    *flags |= PIO_WF_EAGER;
    *size = v == V_FULL ? PAYLOAD_LEN : 0;
    *payload = v == V_FULL ? payload_buf : NULL;
}

static void fill(struct pio_frame *f, int type, int v)
{
    memset(f, 0, sizeof *f);
    f->type = (uint8_t)type;
    f->flags = r16();
    for (size_t i = 0; i < PAYLOAD_LEN; i++)
        payload_buf[i] = (uint8_t)rnd();
    switch (type) {
    case PIO_F_P_HELLO: {
        struct pio_p_hello *b = &f->u.p_hello;
        b->proto = r32(), b->proc = r32(), b->nprocs = r32(), b->pid = r32(), b->flags = r32();
        fill_str(b->app, sizeof b->app, v);
        break;
    }
    case PIO_F_P_WELCOME: {
        struct pio_p_welcome *b = &f->u.p_welcome;
        b->status = ri32(), b->eager_limit = r32(), b->chunk = r32();
        b->send_off = rnd(), b->send_len = rnd(), b->recv_off = rnd(), b->recv_len = rnd();
        fill_str(b->shm, sizeof b->shm, v);
        fill_str(b->host, sizeof b->host, v);
        fill_str(b->system, sizeof b->system, v);
        break;
    }
    case PIO_F_P_PARTNER: {
        struct pio_p_partner *b = &f->u.p_partner;
        b->req = rnd(), b->timeout_ms = r32();
        fill_str(b->app, sizeof b->app, v);
        break;
    }
    case PIO_F_P_PARTNER_INFO: {
        struct pio_p_partner_info *b = &f->u.p_partner_info;
        b->req = rnd(), b->status = ri32(), b->nprocs = r32(), b->channels = r32();
        fill_str(b->system, sizeof b->system, v);
        fill_str(b->host, sizeof b->host, v);
        break;
    }
    case PIO_F_P_SEND: {
        struct pio_p_send *b = &f->u.p_send;
        b->sid = rnd(), b->count = rnd(), b->dst_proc = r32(), b->tag = ri32();
        b->datatype = r32(), b->conn = r16(), b->conn_arg = r16();
        fill_str(b->partner, sizeof b->partner, v);
        fill_eager(v, &b->size, &b->flags, &b->payload);
        break;
    }
    case PIO_F_P_SEND_DATA:
    case PIO_F_P_RELEASE:
    case PIO_F_P_MSG_DATA:
    case PIO_F_P_FREE: {
        struct pio_p_ranges *b = &f->u.p_ranges;
        b->id = rnd(), b->msg_off = rnd();
        b->n = fill_count(PIO_WIRE_MAX_RANGES, v);
        for (uint32_t i = 0; i < b->n; i++)
            b->r[i].off = rnd(), b->r[i].len = rnd();
        break;
    }
    case PIO_F_P_BYE:
    case PIO_F_P_SEND_DONE:
    case PIO_F_P_CLAIM:
    case PIO_F_P_CONSUMED: f->u.p_done.id = rnd(), f->u.p_done.status = ri32(); break;
    case PIO_F_P_MSG_NEW: {
        struct pio_p_msg_new *b = &f->u.p_msg_new;
        b->key = rnd(), b->count = rnd(), b->seq = rnd(), b->src_proc = r32();
        b->tag = ri32(), b->datatype = r32(), b->src_uid = r32(), b->src_gid = r32();
        fill_str(b->src_app, sizeof b->src_app, v);
        fill_str(b->src_system, sizeof b->src_system, v);
        fill_str(b->src_user, sizeof b->src_user, v);
        fill_eager(v, &b->size, &b->flags, &b->payload);
        break;
    }
    case PIO_F_P_EVENT: {
        struct pio_p_event *b = &f->u.p_event;
        b->kind = r32(), b->proc = r32(), b->nprocs = r32();
        fill_str(b->app, sizeof b->app, v);
        break;
    }
    case PIO_F_P_INFO_REQ: f->u.p_info_req.req = rnd(), f->u.p_info_req.what = r32(); break;
    case PIO_F_P_QOS: {
        struct pio_p_qos *b = &f->u.p_qos;
        b->tag0 = ri32();
        b->n = fill_count(PIO_WIRE_MAX_CLASSES, v);
        for (uint32_t i = 0; i < b->n; i++)
            b->share[i] = r32();
        break;
    }
    case PIO_F_P_INFO: {
        struct pio_p_info *b = &f->u.p_info;
        b->req = rnd(), b->version = r32(), b->pool_size = rnd(), b->pool_used = rnd();
        fill_str(b->host, sizeof b->host, v);
        fill_str(b->system, sizeof b->system, v);
        b->nchan = fill_count(PIO_WIRE_MAX_CHANNELS, v);
        b->napp = fill_count(PIO_WIRE_MAX_REG, v);
        for (uint32_t i = 0; i < b->nchan; i++) {
            struct pio_chan_info *c = &b->chan[i];
            fill_str(c->peer, sizeof c->peer, v);
            fill_str(c->local, sizeof c->local, v);
            fill_str(c->remote, sizeof c->remote, v);
            c->index = r32(), c->state = r32();
            c->tx_bytes = rnd(), c->rx_bytes = rnd(), c->queued = rnd(), c->rate = rnd();
            fill_str(c->host, sizeof c->host, v);
        }
        for (uint32_t i = 0; i < b->napp; i++) {
            struct pio_app_info *a = &b->app[i];
            fill_str(a->app, sizeof a->app, v);
            fill_str(a->system, sizeof a->system, v);
            a->nprocs = r32(), a->joined = r32();
        }
        break;
    }
    case PIO_F_H_HELLO: {
        struct pio_h_hello *b = &f->u.h_hello;
        b->proto = r32(), b->nchan = r32();
        fill_str(b->system, sizeof b->system, v);
        fill_str(b->host, sizeof b->host, v);
        for (size_t i = 0; i < PIO_WIRE_KEY; i++)
            b->chan_key[i] = (uint8_t)rnd(); /* NULs allowed: raw bytes */
        b->epoch = rnd();
        break;
    }
    case PIO_F_H_SEQ: {
        struct pio_h_seq *b = &f->u.h_seq;
        b->src_epoch = rnd(), b->dst_epoch = rnd(), b->ack = rnd();
        b->seq = rnd() | 1; /* never 0 */
        b->len = (uint32_t)(PIO_WIRE_HDR + (size_t)v % (PAYLOAD_LEN - PIO_WIRE_HDR));
        b->inner = payload_buf; /* carried whole, not decoded here */
        break;
    }
    case PIO_F_H_ACK:
        f->u.h_ack.src_epoch = rnd(), f->u.h_ack.dst_epoch = rnd(), f->u.h_ack.ack = rnd();
        break;
    case PIO_F_H_REGISTRY: {
        struct pio_h_registry *b = &f->u.h_registry;
        b->full = r32();
        b->n = fill_count(PIO_WIRE_MAX_REG, v);
        for (uint32_t i = 0; i < b->n; i++) {
            fill_str(b->e[i].app, sizeof b->e[i].app, v);
            b->e[i].nprocs = r32(), b->e[i].proc = r32(), b->e[i].state = r32();
        }
        break;
    }
    case PIO_F_H_REQUEST: {
        struct pio_h_request *b = &f->u.h_request;
        b->msgid = rnd(), b->seq = rnd(), b->count = rnd();
        b->src_proc = r32(), b->dst_proc = r32(), b->tag = ri32(), b->datatype = r32();
        b->chunk = r32(), b->conn = r16(), b->conn_arg = r16();
        b->src_uid = r32(), b->src_gid = r32();
        fill_str(b->src_app, sizeof b->src_app, v);
        fill_str(b->dst_app, sizeof b->dst_app, v);
        fill_str(b->src_user, sizeof b->src_user, v);
        fill_eager(v, &b->size, &b->flags, &b->payload);
        break;
    }
    case PIO_F_H_REPLY: {
        struct pio_h_reply *b = &f->u.h_reply;
        b->msgid = rnd();
        b->n = fill_count(PIO_WIRE_MAX_GRANTS, v);
        for (uint32_t i = 0; i < b->n; i++) {
            b->g[i].off = rnd(), b->g[i].len = r32();
            b->g[i].channel = r16(), b->g[i].host = r16();
        }
        break;
    }
    case PIO_F_H_DONE:
    case PIO_F_H_BYE: f->u.h_done.msgid = rnd(), f->u.h_done.status = ri32(); break;
    case PIO_F_C_HELLO: {
        struct pio_c_hello *b = &f->u.c_hello;
        b->proto = r32(), b->index = r32();
        fill_str(b->system, sizeof b->system, v);
        fill_str(b->host, sizeof b->host, v);
        fill_str(b->target, sizeof b->target, v);
        break;
    }
    case PIO_F_H_LOAD: {
        struct pio_h_load *b = &f->u.h_load;
        fill_str(b->host, sizeof b->host, v);
        b->seq = rnd();
        b->nchan = fill_count(PIO_WIRE_MAX_LOAD, v);
        for (uint32_t i = 0; i < b->nchan; i++) {
            struct pio_chan_info *c = &b->chan[i];
            fill_str(c->peer, sizeof c->peer, v);
            fill_str(c->host, sizeof c->host, v);
            c->index = r32(), c->state = r32(), c->tx_bytes = rnd(), c->downs = r32();
        }
        break;
    }
    case PIO_F_C_CHALLENGE:
    case PIO_F_C_PROOF:
        for (size_t i = 0; i < PIO_WIRE_KEY; i++)
            f->u.c_key.b[i] = (uint8_t)rnd();
        break;
    case PIO_F_C_ACCEPT: f->u.c_accept.status = ri32(); break;
    case PIO_F_P_LANE_REQ: {
        struct pio_p_lane_req *b = &f->u.p_lane_req;
        b->req = rnd(), b->proc = r32();
        fill_str(b->app, sizeof b->app, v);
        break;
    }
    case PIO_F_P_LANE: {
        struct pio_p_lane *b = &f->u.p_lane;
        b->req = rnd(), b->status = ri32(), b->role = r32(), b->proc = r32();
        b->sealed = r32(), b->cipher = r32(), b->uid = r32(), b->gid = r32();
        b->lane_id = rnd(), b->n_out = rnd(), b->n_in = rnd();
        for (int i = 0; i < PIO_WIRE_KEY; i++)
            b->key_out[i] = (uint8_t)rnd(), b->key_in[i] = (uint8_t)rnd();
        fill_str(b->app, sizeof b->app, v);
        fill_str(b->system, sizeof b->system, v);
        fill_str(b->user, sizeof b->user, v);
        break;
    }
    case PIO_F_C_LANE: {
        struct pio_c_lane *b = &f->u.c_lane;
        b->lane_id = rnd(), b->src_proc = r32(), b->dst_proc = r32(), b->uid = r32();
        b->gid = r32();
        fill_str(b->src_app, sizeof b->src_app, v);
        fill_str(b->dst_app, sizeof b->dst_app, v);
        fill_str(b->user, sizeof b->user, v);
        break;
    }
    case PIO_F_L_MSG: {
        struct pio_l_msg *b = &f->u.l_msg;
        b->seq = rnd(), b->count = rnd(), b->tag = ri32(), b->datatype = r32();
        fill_eager(v == V_EMPTY ? V_MIXED : v, &b->size, &b->flags, &b->payload);
        break;
    }
    case PIO_F_L_ACK:
    case PIO_F_L_FLUSH: f->u.l_ack.seq = rnd(); break;
    case PIO_F_C_DATA: {
        struct pio_c_data *b = &f->u.c_data;
        b->msgid = rnd(), b->off = rnd(), b->len = r32(), b->resend = r32();
        break;
    }
    case PIO_F_C_ACK: {
        struct pio_c_ack *b = &f->u.c_ack;
        b->n = fill_count(PIO_WIRE_MAX_RANGES, v);
        for (uint32_t i = 0; i < b->n; i++)
            b->a[i].msgid = rnd(), b->a[i].off = rnd();
        break;
    }
    case PIO_F_C_SEALED: {
        struct pio_c_sealed *b = &f->u.c_sealed;
        b->len = (uint32_t)(PIO_WIRE_HDR + PIO_WIRE_SEALED_TAG +
                            (size_t)v % (PAYLOAD_LEN - PIO_WIRE_HDR - PIO_WIRE_SEALED_TAG));
        b->body = payload_buf; /* opened by the lane, not decoded here */
        break;
    }
    default: fail_msg("fill: type %d", type);
    }
}

/* ---- field-by-field comparison, one helper per struct --------------------------- */
static void cmp_payload(uint32_t flags, uint64_t size, const uint8_t *a, const uint8_t *b)
{
    if (!(flags & PIO_WF_EAGER)) {
        assert_null(b);
        return;
    }
    assert_non_null(b);
    if (size > 0)
        assert_memory_equal(a, b, (size_t)size);
}

static void cmp_p_hello(const struct pio_p_hello *a, const struct pio_p_hello *b)
{
    assert_int_equal(a->proto, b->proto);
    assert_int_equal(a->proc, b->proc);
    assert_int_equal(a->nprocs, b->nprocs);
    assert_int_equal(a->pid, b->pid);
    assert_int_equal(a->flags, b->flags);
    assert_string_equal(a->app, b->app);
}

static void cmp_p_welcome(const struct pio_p_welcome *a, const struct pio_p_welcome *b)
{
    assert_int_equal(a->status, b->status);
    assert_int_equal(a->eager_limit, b->eager_limit);
    assert_int_equal(a->chunk, b->chunk);
    assert_int_equal(a->send_off, b->send_off);
    assert_int_equal(a->send_len, b->send_len);
    assert_int_equal(a->recv_off, b->recv_off);
    assert_int_equal(a->recv_len, b->recv_len);
    assert_string_equal(a->shm, b->shm);
    assert_string_equal(a->host, b->host);
    assert_string_equal(a->system, b->system);
}

static void cmp_p_partner(const struct pio_p_partner *a, const struct pio_p_partner *b)
{
    assert_int_equal(a->req, b->req);
    assert_int_equal(a->timeout_ms, b->timeout_ms);
    assert_string_equal(a->app, b->app);
}

static void cmp_p_partner_info(const struct pio_p_partner_info *a,
                               const struct pio_p_partner_info *b)
{
    assert_int_equal(a->req, b->req);
    assert_int_equal(a->status, b->status);
    assert_int_equal(a->nprocs, b->nprocs);
    assert_int_equal(a->channels, b->channels);
    assert_string_equal(a->system, b->system);
    assert_string_equal(a->host, b->host);
}

static void cmp_p_send(const struct pio_p_send *a, const struct pio_p_send *b)
{
    assert_int_equal(a->sid, b->sid);
    assert_int_equal(a->size, b->size);
    assert_int_equal(a->count, b->count);
    assert_int_equal(a->dst_proc, b->dst_proc);
    assert_int_equal(a->tag, b->tag);
    assert_int_equal(a->datatype, b->datatype);
    assert_int_equal(a->conn, b->conn);
    assert_int_equal(a->conn_arg, b->conn_arg);
    assert_int_equal(a->flags, b->flags);
    assert_string_equal(a->partner, b->partner);
    cmp_payload(a->flags, a->size, a->payload, b->payload);
}

static void cmp_p_ranges(const struct pio_p_ranges *a, const struct pio_p_ranges *b)
{
    assert_int_equal(a->id, b->id);
    assert_int_equal(a->msg_off, b->msg_off);
    assert_int_equal(a->n, b->n);
    for (uint32_t i = 0; i < a->n; i++) {
        assert_int_equal(a->r[i].off, b->r[i].off);
        assert_int_equal(a->r[i].len, b->r[i].len);
    }
}

static void cmp_p_done(const struct pio_p_done *a, const struct pio_p_done *b)
{
    assert_int_equal(a->id, b->id);
    assert_int_equal(a->status, b->status);
}

static void cmp_p_msg_new(const struct pio_p_msg_new *a, const struct pio_p_msg_new *b)
{
    assert_int_equal(a->key, b->key);
    assert_int_equal(a->size, b->size);
    assert_int_equal(a->count, b->count);
    assert_int_equal(a->seq, b->seq);
    assert_int_equal(a->src_proc, b->src_proc);
    assert_int_equal(a->tag, b->tag);
    assert_int_equal(a->datatype, b->datatype);
    assert_int_equal(a->flags, b->flags);
    assert_int_equal(a->src_uid, b->src_uid);
    assert_int_equal(a->src_gid, b->src_gid);
    assert_string_equal(a->src_app, b->src_app);
    assert_string_equal(a->src_system, b->src_system);
    assert_string_equal(a->src_user, b->src_user);
    cmp_payload(a->flags, a->size, a->payload, b->payload);
}

static void cmp_p_event(const struct pio_p_event *a, const struct pio_p_event *b)
{
    assert_int_equal(a->kind, b->kind);
    assert_int_equal(a->proc, b->proc);
    assert_int_equal(a->nprocs, b->nprocs);
    assert_string_equal(a->app, b->app);
}

static void cmp_p_info_req(const struct pio_p_info_req *a, const struct pio_p_info_req *b)
{
    assert_int_equal(a->req, b->req);
    assert_int_equal(a->what, b->what);
}

static void cmp_chan_info(const struct pio_chan_info *a, const struct pio_chan_info *b)
{
    assert_string_equal(a->peer, b->peer);
    assert_string_equal(a->local, b->local);
    assert_string_equal(a->remote, b->remote);
    assert_int_equal(a->index, b->index);
    assert_int_equal(a->state, b->state);
    assert_int_equal(a->tx_bytes, b->tx_bytes);
    assert_int_equal(a->rx_bytes, b->rx_bytes);
    assert_int_equal(a->queued, b->queued);
    assert_int_equal(a->rate, b->rate);
    assert_int_equal(a->downs, b->downs);
    assert_string_equal(a->host, b->host);
}

static void cmp_h_load(const struct pio_h_load *a, const struct pio_h_load *b)
{
    assert_string_equal(a->host, b->host);
    assert_int_equal(a->seq, b->seq);
    assert_int_equal(a->nchan, b->nchan);
    for (uint32_t i = 0; i < a->nchan; i++)
        cmp_chan_info(&a->chan[i], &b->chan[i]);
}

static void cmp_app_info(const struct pio_app_info *a, const struct pio_app_info *b)
{
    assert_string_equal(a->app, b->app);
    assert_string_equal(a->system, b->system);
    assert_int_equal(a->nprocs, b->nprocs);
    assert_int_equal(a->joined, b->joined);
}

static void cmp_p_info(const struct pio_p_info *a, const struct pio_p_info *b)
{
    assert_int_equal(a->req, b->req);
    assert_string_equal(a->host, b->host);
    assert_string_equal(a->system, b->system);
    assert_int_equal(a->version, b->version);
    assert_int_equal(a->nchan, b->nchan);
    assert_int_equal(a->napp, b->napp);
    for (uint32_t i = 0; i < a->nchan; i++)
        cmp_chan_info(&a->chan[i], &b->chan[i]);
    for (uint32_t i = 0; i < a->napp; i++)
        cmp_app_info(&a->app[i], &b->app[i]);
    assert_int_equal(a->pool_size, b->pool_size);
    assert_int_equal(a->pool_used, b->pool_used);
}

static void cmp_h_hello(const struct pio_h_hello *a, const struct pio_h_hello *b)
{
    assert_int_equal(a->proto, b->proto);
    assert_int_equal(a->nchan, b->nchan);
    assert_string_equal(a->system, b->system);
    assert_string_equal(a->host, b->host);
    assert_memory_equal(a->chan_key, b->chan_key, PIO_WIRE_KEY);
    assert_int_equal(a->epoch, b->epoch);
}

static void cmp_h_seq(const struct pio_h_seq *a, const struct pio_h_seq *b)
{
    assert_int_equal(a->src_epoch, b->src_epoch);
    assert_int_equal(a->dst_epoch, b->dst_epoch);
    assert_int_equal(a->seq, b->seq);
    assert_int_equal(a->ack, b->ack);
    assert_int_equal(a->len, b->len);
    assert_memory_equal(a->inner, b->inner, a->len);
}

static void cmp_h_ack(const struct pio_h_ack *a, const struct pio_h_ack *b)
{
    assert_int_equal(a->src_epoch, b->src_epoch);
    assert_int_equal(a->dst_epoch, b->dst_epoch);
    assert_int_equal(a->ack, b->ack);
}

static void cmp_h_registry(const struct pio_h_registry *a, const struct pio_h_registry *b)
{
    assert_int_equal(a->full, b->full);
    assert_int_equal(a->n, b->n);
    for (uint32_t i = 0; i < a->n; i++) {
        assert_string_equal(a->e[i].app, b->e[i].app);
        assert_int_equal(a->e[i].nprocs, b->e[i].nprocs);
        assert_int_equal(a->e[i].proc, b->e[i].proc);
        assert_int_equal(a->e[i].state, b->e[i].state);
    }
}

static void cmp_h_request(const struct pio_h_request *a, const struct pio_h_request *b)
{
    assert_int_equal(a->msgid, b->msgid);
    assert_int_equal(a->seq, b->seq);
    assert_int_equal(a->size, b->size);
    assert_int_equal(a->count, b->count);
    assert_int_equal(a->src_proc, b->src_proc);
    assert_int_equal(a->dst_proc, b->dst_proc);
    assert_int_equal(a->tag, b->tag);
    assert_int_equal(a->datatype, b->datatype);
    assert_int_equal(a->flags, b->flags);
    assert_int_equal(a->chunk, b->chunk);
    assert_int_equal(a->conn, b->conn);
    assert_int_equal(a->conn_arg, b->conn_arg);
    assert_int_equal(a->src_uid, b->src_uid);
    assert_int_equal(a->src_gid, b->src_gid);
    assert_string_equal(a->src_app, b->src_app);
    assert_string_equal(a->dst_app, b->dst_app);
    assert_string_equal(a->src_user, b->src_user);
    cmp_payload(a->flags, a->size, a->payload, b->payload);
}

static void cmp_h_reply(const struct pio_h_reply *a, const struct pio_h_reply *b)
{
    assert_int_equal(a->msgid, b->msgid);
    assert_int_equal(a->n, b->n);
    for (uint32_t i = 0; i < a->n; i++) {
        assert_int_equal(a->g[i].off, b->g[i].off);
        assert_int_equal(a->g[i].len, b->g[i].len);
        assert_int_equal(a->g[i].channel, b->g[i].channel);
        assert_int_equal(a->g[i].host, b->g[i].host);
    }
}

static void cmp_h_done(const struct pio_h_done *a, const struct pio_h_done *b)
{
    assert_int_equal(a->msgid, b->msgid);
    assert_int_equal(a->status, b->status);
}

static void cmp_c_hello(const struct pio_c_hello *a, const struct pio_c_hello *b)
{
    assert_int_equal(a->proto, b->proto);
    assert_int_equal(a->index, b->index);
    assert_string_equal(a->system, b->system);
    assert_string_equal(a->host, b->host);
    assert_string_equal(a->target, b->target);
}

static void cmp_c_data(const struct pio_c_data *a, const struct pio_c_data *b)
{
    assert_int_equal(a->msgid, b->msgid);
    assert_int_equal(a->off, b->off);
    assert_int_equal(a->len, b->len);
    assert_int_equal(a->resend, b->resend);
}

static void cmp_c_ack(const struct pio_c_ack *a, const struct pio_c_ack *b)
{
    assert_int_equal(a->n, b->n);
    for (uint32_t i = 0; i < a->n; i++) {
        assert_int_equal(a->a[i].msgid, b->a[i].msgid);
        assert_int_equal(a->a[i].off, b->a[i].off);
    }
}

static void cmp_frame(const struct pio_frame *a, const struct pio_frame *b)
{
    assert_int_equal(a->type, b->type);
    assert_int_equal(a->flags, b->flags);
    switch (a->type) {
    case PIO_F_P_HELLO: cmp_p_hello(&a->u.p_hello, &b->u.p_hello); break;
    case PIO_F_P_WELCOME: cmp_p_welcome(&a->u.p_welcome, &b->u.p_welcome); break;
    case PIO_F_P_PARTNER: cmp_p_partner(&a->u.p_partner, &b->u.p_partner); break;
    case PIO_F_P_PARTNER_INFO:
        cmp_p_partner_info(&a->u.p_partner_info, &b->u.p_partner_info);
        break;
    case PIO_F_P_SEND: cmp_p_send(&a->u.p_send, &b->u.p_send); break;
    case PIO_F_P_SEND_DATA:
    case PIO_F_P_RELEASE:
    case PIO_F_P_MSG_DATA:
    case PIO_F_P_FREE: cmp_p_ranges(&a->u.p_ranges, &b->u.p_ranges); break;
    case PIO_F_P_BYE:
    case PIO_F_P_SEND_DONE:
    case PIO_F_P_CLAIM:
    case PIO_F_P_CONSUMED: cmp_p_done(&a->u.p_done, &b->u.p_done); break;
    case PIO_F_P_MSG_NEW: cmp_p_msg_new(&a->u.p_msg_new, &b->u.p_msg_new); break;
    case PIO_F_P_EVENT: cmp_p_event(&a->u.p_event, &b->u.p_event); break;
    case PIO_F_P_INFO_REQ: cmp_p_info_req(&a->u.p_info_req, &b->u.p_info_req); break;
    case PIO_F_P_QOS: {
        assert_int_equal(a->u.p_qos.tag0, b->u.p_qos.tag0);
        assert_int_equal(a->u.p_qos.n, b->u.p_qos.n);
        for (uint32_t i = 0; i < a->u.p_qos.n; i++)
            assert_int_equal(a->u.p_qos.share[i], b->u.p_qos.share[i]);
        break;
    }
    case PIO_F_P_INFO: cmp_p_info(&a->u.p_info, &b->u.p_info); break;
    case PIO_F_H_HELLO: cmp_h_hello(&a->u.h_hello, &b->u.h_hello); break;
    case PIO_F_H_REGISTRY: cmp_h_registry(&a->u.h_registry, &b->u.h_registry); break;
    case PIO_F_H_REQUEST: cmp_h_request(&a->u.h_request, &b->u.h_request); break;
    case PIO_F_H_REPLY: cmp_h_reply(&a->u.h_reply, &b->u.h_reply); break;
    case PIO_F_H_DONE:
    case PIO_F_H_BYE: cmp_h_done(&a->u.h_done, &b->u.h_done); break;
    case PIO_F_H_SEQ: cmp_h_seq(&a->u.h_seq, &b->u.h_seq); break;
    case PIO_F_H_ACK: cmp_h_ack(&a->u.h_ack, &b->u.h_ack); break;
    case PIO_F_C_HELLO: cmp_c_hello(&a->u.c_hello, &b->u.c_hello); break;
    case PIO_F_H_LOAD: cmp_h_load(&a->u.h_load, &b->u.h_load); break;
    case PIO_F_C_CHALLENGE:
    case PIO_F_C_PROOF: assert_memory_equal(a->u.c_key.b, b->u.c_key.b, PIO_WIRE_KEY); break;
    case PIO_F_C_ACCEPT: assert_int_equal(a->u.c_accept.status, b->u.c_accept.status); break;
    case PIO_F_P_LANE_REQ:
        assert_int_equal(a->u.p_lane_req.req, b->u.p_lane_req.req);
        assert_int_equal(a->u.p_lane_req.proc, b->u.p_lane_req.proc);
        assert_string_equal(a->u.p_lane_req.app, b->u.p_lane_req.app);
        break;
    case PIO_F_P_LANE: {
        const struct pio_p_lane *x = &a->u.p_lane, *y = &b->u.p_lane;
        assert_int_equal(x->req, y->req);
        assert_int_equal(x->status, y->status);
        assert_int_equal(x->role, y->role);
        assert_int_equal(x->proc, y->proc);
        assert_int_equal(x->sealed, y->sealed);
        assert_int_equal(x->cipher, y->cipher);
        assert_int_equal(x->uid, y->uid);
        assert_int_equal(x->gid, y->gid);
        assert_int_equal(x->lane_id, y->lane_id);
        assert_int_equal(x->n_out, y->n_out);
        assert_int_equal(x->n_in, y->n_in);
        assert_memory_equal(x->key_out, y->key_out, PIO_WIRE_KEY);
        assert_memory_equal(x->key_in, y->key_in, PIO_WIRE_KEY);
        assert_string_equal(x->app, y->app);
        assert_string_equal(x->system, y->system);
        assert_string_equal(x->user, y->user);
        break;
    }
    case PIO_F_C_LANE: assert_memory_equal(&a->u.c_lane, &b->u.c_lane, sizeof(a->u.c_lane)); break;
    case PIO_F_L_MSG:
        assert_int_equal(a->u.l_msg.seq, b->u.l_msg.seq);
        assert_int_equal(a->u.l_msg.size, b->u.l_msg.size);
        assert_int_equal(a->u.l_msg.count, b->u.l_msg.count);
        assert_int_equal(a->u.l_msg.tag, b->u.l_msg.tag);
        assert_int_equal(a->u.l_msg.datatype, b->u.l_msg.datatype);
        assert_int_equal(a->u.l_msg.flags, b->u.l_msg.flags);
        if (a->u.l_msg.size)
            assert_memory_equal(a->u.l_msg.payload, b->u.l_msg.payload, a->u.l_msg.size);
        break;
    case PIO_F_L_ACK:
    case PIO_F_L_FLUSH: assert_int_equal(a->u.l_ack.seq, b->u.l_ack.seq); break;
    case PIO_F_C_DATA: cmp_c_data(&a->u.c_data, &b->u.c_data); break;
    case PIO_F_C_ACK: cmp_c_ack(&a->u.c_ack, &b->u.c_ack); break;
    case PIO_F_C_SEALED:
        assert_int_equal(a->u.c_sealed.len, b->u.c_sealed.len);
        assert_memory_equal(a->u.c_sealed.body, b->u.c_sealed.body, a->u.c_sealed.len);
        break;
    default: fail_msg("cmp: type %d", a->type);
    }
}

/* ---- per-type checks ------------------------------------------------------------- */
static uint8_t *padded; /* PIO_WIRE_HDR + PIO_WIRE_MAX_BODY zero bytes */

/* Encode f, decode it back (also with bytes following), compare. Returns the
 * encoded frame (caller frees) and its length. */
static uint8_t *roundtrip(const struct pio_frame *f, size_t *len)
{
    size_t size = pio_wire_encoded_size(f);
    assert_true(size >= PIO_WIRE_HDR);
    uint8_t *buf = malloc(size + 64);
    assert_non_null(buf);

    size_t n = 0;
    assert_int_equal(pio_wire_encode(f, buf, size, &n), PIO_OK);
    assert_int_equal(n, size);

    struct pio_frame *g = malloc(sizeof *g);
    assert_non_null(g);
    size_t used = 0;
    assert_int_equal(pio_wire_decode(buf, size, g, &used), PIO_OK);
    assert_int_equal(used, size);
    cmp_frame(f, g);

    /* A stream holds more than one frame: the decoder takes only its own. */
    for (size_t i = 0; i < 64; i++)
        buf[size + i] = (uint8_t)rnd();
    used = 0;
    assert_int_equal(pio_wire_decode(buf, size + 64, g, &used), PIO_OK);
    assert_int_equal(used, size);
    cmp_frame(f, g);

    uint8_t type;
    uint32_t body_len;
    uint8_t ver = 0;
    assert_int_equal(pio_wire_peek(buf, size, &type, &body_len, &ver), PIO_OK);
    assert_int_equal(type, f->type);
    assert_int_equal(body_len, size - PIO_WIRE_HDR);
    assert_int_equal(ver, PIO_WIRE_VERSION);

    /* One byte short of room: PIO_ENOMEM, and the encoder says so for any cap. */
    assert_int_equal(pio_wire_encode(f, buf, size - 1, &n), PIO_ENOMEM);
    assert_int_equal(pio_wire_encode(f, buf, 0, &n), PIO_ENOMEM);
    free(g);
    *len = size;
    return buf;
}

static void check_truncations(const uint8_t *buf, size_t size)
{
    struct pio_frame *g = malloc(sizeof *g);
    assert_non_null(g);
    for (size_t cut = 0; cut < size; cut++) {
        int rc = pio_wire_decode(buf, cut, g, NULL);
        if (rc != PIO_EAGAIN && rc != PIO_EPROTO)
            fail_msg("prefix of %zu/%zu bytes: %s", cut, size, PIO_Errname(rc));
    }
    free(g);
}

/* Each byte flipped (with a mask rotating over three patterns; header bytes
 * with all three) must be refused. A length byte made larger leaves the
 * buffer short of the claimed frame (PIO_EAGAIN); with room behind it the
 * check refuses it. */
static void check_flips(uint8_t *buf, size_t size)
{
    static const uint8_t masks[] = {0x01, 0x80, 0xFF};
    struct pio_frame *g = malloc(sizeof *g);
    assert_non_null(g);
    /* an H_SEQ's check covers its fixed fields; the frame it carries has
     * its own check (test_seq_inner_flips) */
    size_t end = size > PIO_WIRE_SEQ_HDR && buf[5] == PIO_F_H_SEQ ? PIO_WIRE_SEQ_HDR : size;
    if (buf[5] == PIO_F_C_SEALED) /* its tag covers the body (test_sealed_wrap) */
        end = PIO_WIRE_HDR;
    /* an eager payload is not covered (test_check_leaves_eager_payload_out) */
    assert_int_equal(pio_wire_decode(buf, size, g, NULL), PIO_OK);
    uint64_t pay = 0;
    if (g->type == PIO_F_P_SEND && (g->u.p_send.flags & PIO_WF_EAGER))
        pay = g->u.p_send.size;
    else if (g->type == PIO_F_P_MSG_NEW && (g->u.p_msg_new.flags & PIO_WF_EAGER))
        pay = g->u.p_msg_new.size;
    else if (g->type == PIO_F_H_REQUEST && (g->u.h_request.flags & PIO_WF_EAGER))
        pay = g->u.h_request.size;
    else if (g->type == PIO_F_L_MSG)
        pay = g->u.l_msg.size;
    if (end == size)
        end = size - (size_t)pay;
    for (size_t i = 0; i < end; i++) {
        for (size_t m = 0; m < 3; m++) {
            uint8_t mask = masks[i < PIO_WIRE_HDR ? m : (i + m) % 3];
            buf[i] ^= mask;
            int rc = pio_wire_decode(buf, size, g, NULL);
            if (rc == PIO_EAGAIN && i >= 8 && i < 12) {
                memcpy(padded, buf, size);
                rc = pio_wire_decode(padded, PIO_WIRE_HDR + PIO_WIRE_MAX_BODY, g, NULL);
                memset(padded, 0, size);
            }
            buf[i] ^= mask;
            if (rc != PIO_EPROTO && rc != PIO_EVERSION)
                fail_msg("byte %zu ^ 0x%02x of %zu: %s", i, mask, size, PIO_Errname(rc));
            if (i == 4 && rc != PIO_EVERSION)
                fail_msg("version byte ^ 0x%02x: %s", mask, PIO_Errname(rc));
            if (i >= PIO_WIRE_HDR)
                break; /* body bytes: one pattern each keeps the case fast */
        }
    }
    free(g);
}

static void check_type(int type)
{
    padded = calloc(1, PIO_WIRE_HDR + PIO_WIRE_MAX_BODY);
    assert_non_null(padded);
    struct pio_frame *f = malloc(sizeof *f);
    assert_non_null(f);
    rnd_state = 0x9E3779B97F4A7C15ull ^ (uint64_t)type;
    for (int v = 0; v < V_COUNT; v++) {
        fill(f, type, v);
        size_t size;
        uint8_t *buf = roundtrip(f, &size);
        check_truncations(buf, size);
        check_flips(buf, size);
        free(buf);
    }
    free(f);
    free(padded);
}

#define TYPE_CASE(name, value)                                                                     \
    static void test_##name(void **state)                                                          \
    {                                                                                              \
        (void)state;                                                                               \
        check_type(PIO_F_##name);                                                                  \
    }
PIO_FTYPES(TYPE_CASE)
#undef TYPE_CASE

/* ---- hand-built frames ----------------------------------------------------------- */
struct hb {
    uint8_t b[1 << 16];
    size_t n;
};

static void hb_u8(struct hb *h, uint8_t v)
{
    h->b[h->n++] = v;
}

static void hb_u16(struct hb *h, uint16_t v)
{
    hb_u8(h, (uint8_t)v);
    hb_u8(h, (uint8_t)(v >> 8));
}

static void hb_u32(struct hb *h, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        hb_u8(h, (uint8_t)(v >> (8 * i)));
}

static void hb_u64(struct hb *h, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        hb_u8(h, (uint8_t)(v >> (8 * i)));
}

static void hb_raw(struct hb *h, const void *p, size_t n)
{
    memcpy(h->b + h->n, p, n);
    h->n += n;
}

static void hb_str(struct hb *h, const char *s, size_t n)
{
    hb_u16(h, (uint16_t)n);
    hb_raw(h, s, n);
}

/* Header with the given version/type/length, a correct check, then body. */
static size_t hb_frame(uint8_t *out, uint8_t version, uint8_t type, uint32_t length,
                       const struct hb *body)
{
    struct hb h = {.n = 0};
    hb_raw(&h, "PIO1", 4);
    hb_u8(&h, version);
    hb_u8(&h, type);
    hb_u16(&h, 0);
    hb_u32(&h, length);
    uint32_t check =
        (uint32_t)XXH3_64bits_withSeed(body->b, body->n, XXH3_64bits_withSeed(h.b, 12, 0x70696F));
    hb_u32(&h, check);
    memcpy(out, h.b, PIO_WIRE_HDR);
    memcpy(out + PIO_WIRE_HDR, body->b, body->n);
    /* a body that decodes with an eager payload: the check leaves it out
     * (test_check_leaves_eager_payload_out) */
    if (type == PIO_F_P_SEND || type == PIO_F_P_MSG_NEW || type == PIO_F_H_REQUEST)
        pio_wire_reseal(out, PIO_WIRE_HDR + body->n);
    return PIO_WIRE_HDR + body->n;
}

static int hb_decode(uint8_t type, const struct hb *body)
{
    static uint8_t out[PIO_WIRE_HDR + (1 << 16)];
    static struct pio_frame f;
    size_t n = hb_frame(out, PIO_WIRE_VERSION, type, (uint32_t)body->n, body);
    return pio_wire_decode(out, n, &f, NULL);
}

static struct hb *hb_new(void)
{
    struct hb *h = calloc(1, sizeof *h);
    assert_non_null(h);
    return h;
}

static void p_hello_body(struct hb *h, const char *app, size_t app_len)
{
    h->n = 0;
    hb_u32(h, 1), hb_u32(h, 2), hb_u32(h, 3), hb_u32(h, 4), hb_u32(h, 5);
    hb_str(h, app, app_len);
}

/* The hand-built frames agree with the encoder, byte for byte. */
static void test_handbuilt_matches_encoder(void **state)
{
    (void)state;
    struct hb *h = hb_new();
    p_hello_body(h, "sim", 3);
    uint8_t hand[64], enc[64];
    size_t n = hb_frame(hand, PIO_WIRE_VERSION, PIO_F_P_HELLO, (uint32_t)h->n, h);
    struct pio_frame f = {.type = PIO_F_P_HELLO, .flags = 0};
    f.u.p_hello = (struct pio_p_hello){
        .proto = 1, .proc = 2, .nprocs = 3, .pid = 4, .flags = 5, .app = "sim"};
    size_t m = 0;
    assert_int_equal(pio_wire_encode(&f, enc, sizeof enc, &m), PIO_OK);
    assert_int_equal(m, n);
    assert_memory_equal(hand, enc, n);
    free(h);
}

/* A golden frame pins the header layout, little-endian integers and the
 * check's coverage (header bytes 0..11, then the body). */
static void test_golden_layout(void **state)
{
    (void)state;
    struct pio_frame f = {.type = PIO_F_P_INFO_REQ, .flags = 0x1234};
    f.u.p_info_req.req = 0x0102030405060708ull;
    f.u.p_info_req.what = 0xA0B0C0D0u;
    uint8_t buf[64];
    size_t n = 0;
    assert_int_equal(pio_wire_encode(&f, buf, sizeof buf, &n), PIO_OK);
    static const uint8_t want_hdr[12] = {'P', 'I', 'O', '1', PIO_WIRE_VERSION, 16, 0x34, 0x12,
                                         12,  0,   0,   0};
    static const uint8_t want_body[12] = {8, 7, 6, 5, 4, 3, 2, 1, 0xD0, 0xC0, 0xB0, 0xA0};
    assert_int_equal(n, 28);
    assert_memory_equal(buf, want_hdr, 12);
    assert_memory_equal(buf + 16, want_body, 12);
    uint32_t c = (uint32_t)XXH3_64bits_withSeed(want_body, sizeof want_body,
                                                XXH3_64bits_withSeed(want_hdr, 12, 0x70696F));
    uint8_t want_check[4] = {(uint8_t)c, (uint8_t)(c >> 8), (uint8_t)(c >> 16), (uint8_t)(c >> 24)};
    assert_memory_equal(buf + 12, want_check, 4);
    assert_int_equal(PIO_WIRE_MAGIC, 0x314F4950u);
}

/* pio_wire_seq_wrap writes what pio_wire_encode writes for the same H_SEQ,
 * without copying the inner frame; a byte of the inner frame that changes
 * on the way passes the H_SEQ's check (which covers its fixed fields) and
 * is refused by the inner frame's own. */
static void test_seq_inner_flips(void **state)
{
    (void)state;
    struct pio_frame *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->type = PIO_F_H_DONE;
    f->u.h_done.msgid = 0x1122334455667788ull;
    f->u.h_done.status = -3;
    uint8_t inner[64], a[256], b[256];
    size_t ilen, alen, blen;
    assert_int_equal(pio_wire_encode(f, inner, sizeof inner, &ilen), PIO_OK);
    struct pio_h_seq h = {.src_epoch = 7,
                          .dst_epoch = 9,
                          .seq = 42,
                          .ack = 41,
                          .len = (uint32_t)ilen,
                          .inner = inner};
    memset(f, 0, sizeof *f);
    f->type = PIO_F_H_SEQ;
    f->u.h_seq = h;
    assert_int_equal(pio_wire_encode(f, a, sizeof a, &alen), PIO_OK);
    memcpy(b + PIO_WIRE_SEQ_HDR, inner, ilen);
    assert_int_equal(pio_wire_seq_wrap(b, sizeof b, &h, &blen), PIO_OK);
    assert_int_equal(alen, blen);
    assert_memory_equal(a, b, alen);
    h.seq = 0;
    assert_int_equal(pio_wire_seq_wrap(b, sizeof b, &h, &blen), PIO_EINVAL);
    h.seq = 42;
    assert_int_equal(pio_wire_seq_wrap(b, PIO_WIRE_SEQ_HDR + ilen - 1, &h, &blen), PIO_EINVAL);
    for (size_t i = PIO_WIRE_SEQ_HDR; i < alen; i++) {
        a[i] ^= 0x10;
        assert_int_equal(pio_wire_decode(a, alen, f, NULL), PIO_OK);
        assert_int_equal(f->type, PIO_F_H_SEQ);
        struct pio_frame *g = malloc(sizeof *g);
        assert_non_null(g);
        int rc = pio_wire_decode(f->u.h_seq.inner, f->u.h_seq.len, g, NULL);
        if (rc == PIO_OK)
            fail_msg("inner byte %zu changed, and the inner frame still decodes", i);
        free(g);
        a[i] ^= 0x10;
    }
    free(f);
}

/* A C_SEALED built in place has the bytes the encoder writes; one with a
 * body too short for a frame and a tag is refused both ways. */
static void test_sealed_wrap(void **state)
{
    (void)state;
    struct pio_frame *f = calloc(1, sizeof *f);
    assert_non_null(f);
    uint8_t body[100], a[256], b[256];
    for (size_t i = 0; i < sizeof body; i++)
        body[i] = (uint8_t)(i * 3);
    f->type = PIO_F_C_SEALED;
    f->u.c_sealed.len = sizeof body;
    f->u.c_sealed.body = body;
    size_t alen;
    assert_int_equal(pio_wire_encode(f, a, sizeof a, &alen), PIO_OK);
    assert_int_equal(pio_wire_sealed_wrap(b, sizeof body), PIO_OK);
    memcpy(b + PIO_WIRE_HDR, body, sizeof body);
    assert_int_equal(alen, PIO_WIRE_HDR + sizeof body);
    assert_memory_equal(a, b, alen);
    assert_int_equal(pio_wire_decode(b, alen, f, NULL), PIO_OK);
    assert_int_equal(f->type, PIO_F_C_SEALED);
    assert_int_equal(f->u.c_sealed.len, sizeof body);
    assert_ptr_equal(f->u.c_sealed.body, b + PIO_WIRE_HDR);
    assert_int_equal(pio_wire_sealed_wrap(b, PIO_WIRE_HDR + PIO_WIRE_SEALED_TAG - 1), PIO_EINVAL);
    assert_int_equal(pio_wire_sealed_wrap(b, (size_t)PIO_WIRE_MAX_BODY + 1), PIO_EINVAL);
    /* a body shorter than a frame and a tag does not decode (the header's
     * check is right: it covers the header alone) */
    struct hb *none = hb_new();
    for (uint32_t n = PIO_WIRE_HDR + PIO_WIRE_SEALED_TAG - 1;
         n <= PIO_WIRE_HDR + PIO_WIRE_SEALED_TAG; n++) {
        size_t hl = hb_frame(b, PIO_WIRE_VERSION, PIO_F_C_SEALED, n, none);
        memcpy(b + hl, body, n);
        assert_int_equal(pio_wire_decode(b, hl + n, f, NULL),
                         n < PIO_WIRE_HDR + PIO_WIRE_SEALED_TAG ? PIO_EPROTO : PIO_OK);
    }
    free(none);
    struct pio_frame *g = calloc(1, sizeof *g);
    assert_non_null(g);
    g->type = PIO_F_C_SEALED;
    g->u.c_sealed.len = PIO_WIRE_HDR + PIO_WIRE_SEALED_TAG - 1;
    g->u.c_sealed.body = body;
    assert_int_equal(pio_wire_encode(g, a, sizeof a, &alen), PIO_EINVAL);
    free(g);
    free(f);
}

static void test_negative_int32_roundtrip(void **state)
{
    (void)state;
    int32_t vals[] = {-1, INT32_MIN, INT32_MAX, 0, -PIO_EPROTO};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        struct pio_frame f = {.type = PIO_F_C_ACCEPT}, g;
        f.u.c_accept.status = vals[i];
        uint8_t buf[32];
        size_t n;
        assert_int_equal(pio_wire_encode(&f, buf, sizeof buf, &n), PIO_OK);
        assert_int_equal(pio_wire_decode(buf, n, &g, NULL), PIO_OK);
        assert_int_equal(g.u.c_accept.status, vals[i]);
    }
}

static void test_bad_magic(void **state)
{
    (void)state;
    struct pio_frame f = {.type = PIO_F_H_DONE}, g;
    uint8_t buf[64];
    size_t n;
    assert_int_equal(pio_wire_encode(&f, buf, sizeof buf, &n), PIO_OK);
    buf[3] = '2'; /* "PIO2" */
    assert_int_equal(pio_wire_decode(buf, n, &g, NULL), PIO_EPROTO);
    assert_int_equal(pio_wire_peek(buf, n, NULL, NULL, NULL), PIO_EPROTO);
    memcpy(buf, "HTTP", 4); /* something else talking to our port */
    assert_int_equal(pio_wire_decode(buf, n, &g, NULL), PIO_EPROTO);
}

static void test_wrong_version(void **state)
{
    (void)state;
    struct hb *h = hb_new();
    p_hello_body(h, "sim", 3);
    uint8_t buf[64];
    struct pio_frame g;
    uint8_t versions[] = {0, PIO_WIRE_VERSION + 1, 255};
    for (size_t i = 0; i < sizeof versions; i++) {
        size_t n = hb_frame(buf, versions[i], PIO_F_P_HELLO, (uint32_t)h->n, h);
        assert_int_equal(pio_wire_decode(buf, n, &g, NULL), PIO_EVERSION);
        uint8_t peer = 0xEE;
        assert_int_equal(pio_wire_peek(buf, n, NULL, NULL, &peer), PIO_EVERSION);
        assert_int_equal(peer, versions[i]);
        assert_int_equal(pio_wire_peek(buf, n, NULL, NULL, NULL), PIO_EVERSION);
    }
    free(h);
}

static void test_unknown_type(void **state)
{
    (void)state;
    struct hb *h = hb_new();
    hb_u64(h, 1), hb_u32(h, 0);
    uint8_t types[] = {0, 18, 31, 38, 63, 70, 99, 255};
    for (size_t i = 0; i < sizeof types; i++)
        assert_int_equal(hb_decode(types[i], h), PIO_EPROTO);
    struct pio_frame f = {.type = 99};
    uint8_t buf[64];
    size_t n;
    assert_int_equal(pio_wire_encode(&f, buf, sizeof buf, &n), PIO_EINVAL);
    assert_int_equal(pio_wire_encoded_size(&f), 0);
    free(h);
}

static void test_oversized_length(void **state)
{
    (void)state;
    struct hb *h = hb_new();
    uint8_t buf[PIO_WIRE_HDR];
    struct pio_frame g;
    hb_frame(buf, PIO_WIRE_VERSION, PIO_F_C_DATA, PIO_WIRE_MAX_BODY + 1, h);
    assert_int_equal(pio_wire_peek(buf, sizeof buf, NULL, NULL, NULL), PIO_EPROTO);
    assert_int_equal(pio_wire_decode(buf, sizeof buf, &g, NULL), PIO_EPROTO);
    hb_frame(buf, PIO_WIRE_VERSION, PIO_F_C_DATA, UINT32_MAX, h);
    assert_int_equal(pio_wire_decode(buf, sizeof buf, &g, NULL), PIO_EPROTO);
    /* At the limit the header is fine: the decoder waits for the body. */
    hb_frame(buf, PIO_WIRE_VERSION, PIO_F_C_DATA, PIO_WIRE_MAX_BODY, h);
    uint32_t len = 0;
    assert_int_equal(pio_wire_peek(buf, sizeof buf, NULL, &len, NULL), PIO_OK);
    assert_int_equal(len, PIO_WIRE_MAX_BODY);
    assert_int_equal(pio_wire_decode(buf, sizeof buf, &g, NULL), PIO_EAGAIN);
    assert_int_equal(pio_wire_peek(buf, PIO_WIRE_HDR - 1, NULL, NULL, NULL), PIO_EAGAIN);
    free(h);
}

static void test_string_refusals(void **state)
{
    (void)state;
    struct hb *h = hb_new();
    char s[PIO_WIRE_NAME + PIO_WIRE_ADDR];
    memset(s, 'a', sizeof s);
    p_hello_body(h, s, 63);
    assert_int_equal(hb_decode(PIO_F_P_HELLO, h), PIO_OK);
    p_hello_body(h, s, 0);
    assert_int_equal(hb_decode(PIO_F_P_HELLO, h), PIO_OK);
    p_hello_body(h, s, 64); /* no room for the NUL */
    assert_int_equal(hb_decode(PIO_F_P_HELLO, h), PIO_EPROTO);
    p_hello_body(h, s, sizeof s);
    assert_int_equal(hb_decode(PIO_F_P_HELLO, h), PIO_EPROTO);
    p_hello_body(h, "ab\0cd", 5); /* embedded NUL */
    assert_int_equal(hb_decode(PIO_F_P_HELLO, h), PIO_EPROTO);
    p_hello_body(h, "abc\0", 4); /* trailing NUL */
    assert_int_equal(hb_decode(PIO_F_P_HELLO, h), PIO_EPROTO);
    p_hello_body(h, "abc", 3); /* length beyond the body */
    h->b[20] = 10;             /* the string's length, after 5 u32 */
    assert_int_equal(hb_decode(PIO_F_P_HELLO, h), PIO_EPROTO);
    /* an address field: PIO_WIRE_ADDR - 1 bytes fit, PIO_WIRE_ADDR do not */
    for (size_t len = PIO_WIRE_ADDR - 1; len <= PIO_WIRE_ADDR; len++) {
        h->n = 0;
        hb_u64(h, 7), hb_str(h, "", 0), hb_str(h, "", 0), hb_u32(h, 1);
        hb_u32(h, 1), hb_u32(h, 0); /* nchan 1, napp 0 */
        hb_str(h, "peer", 4), hb_str(h, s, len), hb_str(h, "r", 1);
        hb_u32(h, 0), hb_u32(h, 2), hb_u64(h, 1), hb_u64(h, 2), hb_u64(h, 3), hb_u64(h, 4);
        hb_u64(h, 5), hb_u64(h, 6), hb_u64(h, 7), hb_u32(h, 1); /* chunks, resent, downs */
        hb_str(h, "", 0);                                       /* host */
        hb_u64(h, 100), hb_u64(h, 50);
        assert_int_equal(hb_decode(PIO_F_P_INFO, h), len < PIO_WIRE_ADDR ? PIO_OK : PIO_EPROTO);
    }
    free(h);
}

/* Counts: at the bound decodes, one over is refused (with every element present). */
static void test_count_over_bound(void **state)
{
    (void)state;
    struct hb *h = hb_new();
    for (uint32_t n = PIO_WIRE_MAX_RANGES; n <= PIO_WIRE_MAX_RANGES + 1; n++) {
        int want = n == PIO_WIRE_MAX_RANGES ? PIO_OK : PIO_EPROTO;
        h->n = 0;
        hb_u64(h, 1), hb_u64(h, 0), hb_u32(h, n);
        for (uint32_t i = 0; i < n; i++)
            hb_u64(h, i), hb_u64(h, 1);
        assert_int_equal(hb_decode(PIO_F_P_SEND_DATA, h), want);
        assert_int_equal(hb_decode(PIO_F_P_FREE, h), want);
        h->n = 0;
        hb_u32(h, n);
        for (uint32_t i = 0; i < n; i++)
            hb_u64(h, 9), hb_u64(h, i);
        assert_int_equal(hb_decode(PIO_F_C_ACK, h), want);
    }
    for (uint32_t n = PIO_WIRE_MAX_GRANTS; n <= PIO_WIRE_MAX_GRANTS + 1; n++) {
        h->n = 0;
        hb_u64(h, 5), hb_u32(h, n);
        for (uint32_t i = 0; i < n; i++)
            hb_u64(h, i), hb_u32(h, 1), hb_u16(h, 0), hb_u16(h, 0);
        assert_int_equal(hb_decode(PIO_F_H_REPLY, h),
                         n == PIO_WIRE_MAX_GRANTS ? PIO_OK : PIO_EPROTO);
    }
    for (uint32_t n = PIO_WIRE_MAX_REG; n <= PIO_WIRE_MAX_REG + 1; n++) {
        h->n = 0;
        hb_u32(h, 1), hb_u32(h, n);
        for (uint32_t i = 0; i < n; i++)
            hb_str(h, "a", 1), hb_u32(h, 1), hb_u32(h, 0), hb_u32(h, 1);
        assert_int_equal(hb_decode(PIO_F_H_REGISTRY, h),
                         n == PIO_WIRE_MAX_REG ? PIO_OK : PIO_EPROTO);
    }
    /* P_INFO: nchan over 64, napp over 128 */
    for (int which = 0; which < 2; which++) {
        uint32_t nchan = which == 0 ? PIO_WIRE_MAX_CHANNELS + 1 : 0;
        uint32_t napp = which == 1 ? PIO_WIRE_MAX_REG + 1 : 0;
        h->n = 0;
        hb_u64(h, 7), hb_str(h, "h", 1), hb_str(h, "s", 1), hb_u32(h, 1);
        hb_u32(h, nchan), hb_u32(h, napp);
        for (uint32_t i = 0; i < nchan; i++) {
            hb_str(h, "p", 1), hb_str(h, "l", 1), hb_str(h, "r", 1);
            hb_u32(h, i), hb_u32(h, 2), hb_u64(h, 0), hb_u64(h, 0), hb_u64(h, 0), hb_u64(h, 0);
        }
        for (uint32_t i = 0; i < napp; i++)
            hb_str(h, "a", 1), hb_str(h, "s", 1), hb_u32(h, 1), hb_u32(h, 1);
        hb_u64(h, 100), hb_u64(h, 50);
        assert_int_equal(hb_decode(PIO_F_P_INFO, h), PIO_EPROTO);
    }
    free(h);
}

static void test_body_short_or_trailing(void **state)
{
    (void)state;
    struct hb *h = hb_new();
    p_hello_body(h, "sim", 3);
    hb_u8(h, 0); /* one byte left over */
    assert_int_equal(hb_decode(PIO_F_P_HELLO, h), PIO_EPROTO);
    h->n -= 2; /* one byte short */
    assert_int_equal(hb_decode(PIO_F_P_HELLO, h), PIO_EPROTO);
    h->n = 0;
    assert_int_equal(hb_decode(PIO_F_P_HELLO, h), PIO_EPROTO);
    /* C_DATA: exactly the 24-byte fixed body */
    h->n = 0;
    hb_u64(h, 1), hb_u64(h, 0), hb_u32(h, 100), hb_u32(h, 0);
    assert_int_equal(hb_decode(PIO_F_C_DATA, h), PIO_OK);
    hb_u8(h, 0);
    assert_int_equal(hb_decode(PIO_F_C_DATA, h), PIO_EPROTO);
    h->n = 23;
    assert_int_equal(hb_decode(PIO_F_C_DATA, h), PIO_EPROTO);
    /* C_CHALLENGE: exactly 32 bytes */
    h->n = 0;
    for (int i = 0; i < 31; i++)
        hb_u8(h, (uint8_t)i);
    assert_int_equal(hb_decode(PIO_F_C_CHALLENGE, h), PIO_EPROTO);
    hb_u8(h, 0);
    assert_int_equal(hb_decode(PIO_F_C_CHALLENGE, h), PIO_OK);
    hb_u8(h, 0);
    assert_int_equal(hb_decode(PIO_F_C_PROOF, h), PIO_EPROTO);
    free(h);
}

/* The eager payload length must equal size and fit in the body. */
static void test_eager_payload_refusals(void **state)
{
    (void)state;
    struct hb *h = hb_new();
    for (int c = 0; c < 5; c++) {
        uint64_t size = 8;
        h->n = 0;
        hb_u64(h, 1), hb_u64(h, size), hb_u64(h, 2);         /* sid, size, count */
        hb_u32(h, 0), hb_u32(h, 3), hb_u32(h, 7);            /* dst_proc, tag, datatype */
        hb_u16(h, 0), hb_u16(h, 0), hb_u32(h, PIO_WF_EAGER); /* conn, arg, flags */
        hb_str(h, "rx", 2);
        int want = PIO_EPROTO;
        switch (c) {
        case 0: hb_u64(h, 8), hb_raw(h, "12345678", 8), want = PIO_OK; break;
        case 1: hb_u64(h, 7), hb_raw(h, "1234567", 7); break;    /* length != size */
        case 2: hb_u64(h, 8), hb_raw(h, "1234567", 7); break;    /* body too short */
        case 3: break;                                           /* no payload at all */
        case 4: hb_u64(h, UINT64_MAX), hb_raw(h, "1", 1); break; /* absurd length */
        }
        assert_int_equal(hb_decode(PIO_F_P_SEND, h), want);
    }
    free(h);
}

/* C_DATA: the payload follows the frame and is not covered by the check. */
static void test_c_data_payload_outside(void **state)
{
    (void)state;
    struct pio_frame f = {.type = PIO_F_C_DATA}, g;
    f.u.c_data = (struct pio_c_data){.msgid = 42, .off = 1 << 20, .len = 100, .resend = 1};
    assert_int_equal(pio_wire_encoded_size(&f), PIO_WIRE_HDR + 24);
    uint8_t buf[PIO_WIRE_HDR + 24 + 100];
    size_t n, used;
    assert_int_equal(pio_wire_encode(&f, buf, sizeof buf, &n), PIO_OK);
    assert_int_equal(n, PIO_WIRE_HDR + 24);
    for (int k = 0; k < 2; k++) {
        memset(buf + n, k ? 0xAB : 0, 100);
        assert_int_equal(pio_wire_decode(buf, sizeof buf, &g, &used), PIO_OK);
        assert_int_equal(used, PIO_WIRE_HDR + 24);
        cmp_c_data(&f.u.c_data, &g.u.c_data);
    }
}

static void test_two_frames_in_a_stream(void **state)
{
    (void)state;
    struct pio_frame a = {.type = PIO_F_H_DONE}, b = {.type = PIO_F_P_EVENT}, g;
    a.u.h_done = (struct pio_h_done){.msgid = 77, .status = PIO_EGONE};
    b.u.p_event = (struct pio_p_event){.kind = 2, .proc = 3, .nprocs = 4, .app = "viz"};
    uint8_t buf[256];
    size_t n1, n2, used;
    assert_int_equal(pio_wire_encode(&a, buf, sizeof buf, &n1), PIO_OK);
    assert_int_equal(pio_wire_encode(&b, buf + n1, sizeof buf - n1, &n2), PIO_OK);
    assert_int_equal(pio_wire_decode(buf, n1 + n2, &g, &used), PIO_OK);
    assert_int_equal(used, n1);
    cmp_frame(&a, &g);
    assert_int_equal(pio_wire_decode(buf + used, n1 + n2 - used, &g, &used), PIO_OK);
    assert_int_equal(used, n2);
    cmp_frame(&b, &g);
}

static void test_encode_too_small_cap(void **state)
{
    (void)state;
    struct pio_frame f = {.type = PIO_F_P_WELCOME};
    strcpy(f.u.p_welcome.shm, "/pio.pool.1");
    size_t need = pio_wire_encoded_size(&f);
    uint8_t buf[512];
    for (size_t cap = 0; cap < need; cap++) {
        size_t n;
        assert_int_equal(pio_wire_encode(&f, buf, cap, &n), PIO_ENOMEM);
    }
    assert_int_equal(pio_wire_encode(&f, buf, need, NULL), PIO_OK);
}

static void test_encode_invalid(void **state)
{
    (void)state;
    uint8_t buf[256];
    size_t n;
    struct pio_frame *f = calloc(1, sizeof *f);
    assert_non_null(f);

    f->type = PIO_F_P_HELLO; /* a string with no NUL in its field */
    memset(f->u.p_hello.app, 'x', sizeof f->u.p_hello.app);
    assert_int_equal(pio_wire_encode(f, buf, sizeof buf, &n), PIO_EINVAL);
    assert_int_equal(pio_wire_encoded_size(f), 0);
    f->u.p_hello.app[PIO_WIRE_NAME - 1] = 0; /* 63 bytes: fits */
    assert_int_equal(pio_wire_encode(f, buf, sizeof buf, &n), PIO_OK);
    /* EINVAL wins over a small cap: the frame is wrong whatever the room */
    f->u.p_hello.app[PIO_WIRE_NAME - 1] = 'x';
    assert_int_equal(pio_wire_encode(f, buf, 4, &n), PIO_EINVAL);

    memset(f, 0, sizeof *f); /* an address field is shorter than a name */
    f->type = PIO_F_P_INFO;
    f->u.p_info.nchan = 1;
    memset(f->u.p_info.chan[0].local, 'a', PIO_WIRE_ADDR);
    assert_int_equal(pio_wire_encode(f, buf, sizeof buf, &n), PIO_EINVAL);

    memset(f, 0, sizeof *f);
    f->type = PIO_F_P_SEND_DATA;
    f->u.p_ranges.n = PIO_WIRE_MAX_RANGES + 1;
    assert_int_equal(pio_wire_encode(f, buf, sizeof buf, &n), PIO_EINVAL);
    f->type = PIO_F_H_REPLY;
    f->u.h_reply.n = PIO_WIRE_MAX_GRANTS + 1;
    assert_int_equal(pio_wire_encode(f, buf, sizeof buf, &n), PIO_EINVAL);
    f->type = PIO_F_C_ACK;
    f->u.c_ack.n = UINT32_MAX;
    assert_int_equal(pio_wire_encode(f, buf, sizeof buf, &n), PIO_EINVAL);
    memset(f, 0, sizeof *f);
    f->type = PIO_F_P_INFO;
    f->u.p_info.napp = PIO_WIRE_MAX_REG + 1;
    assert_int_equal(pio_wire_encode(f, buf, sizeof buf, &n), PIO_EINVAL);

    memset(f, 0, sizeof *f); /* eager without bytes, or too large to be eager */
    f->type = PIO_F_H_REQUEST;
    f->u.h_request.flags = PIO_WF_EAGER;
    f->u.h_request.size = 10;
    assert_int_equal(pio_wire_encode(f, buf, sizeof buf, &n), PIO_EINVAL);
    f->u.h_request.payload = buf;
    f->u.h_request.size = (uint64_t)PIO_WIRE_MAX_BODY + 1;
    assert_int_equal(pio_wire_encode(f, buf, sizeof buf, &n), PIO_EINVAL);
    f->u.h_request.flags = 0; /* not eager: size is just a number */
    assert_int_equal(pio_wire_encode(f, buf, sizeof buf, &n), PIO_OK);
    free(f);
}

/* Protocol 5: an eager payload ends its frame's body and the check leaves
 * it out; every byte before it is covered. pio_wire_reseal writes the same
 * check the encoder wrote. */
static void test_check_leaves_eager_payload_out(void **state)
{
    (void)state;
    static const int types[] = {PIO_F_P_SEND, PIO_F_P_MSG_NEW, PIO_F_H_REQUEST};
    uint8_t payload[300], buf[2048];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 13 + 1);
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        struct pio_frame f, g;
        memset(&f, 0, sizeof f);
        f.type = (uint8_t)types[t];
        if (f.type == PIO_F_P_SEND) {
            f.u.p_send.flags = PIO_WF_EAGER, f.u.p_send.size = sizeof payload;
            f.u.p_send.payload = payload;
        } else if (f.type == PIO_F_P_MSG_NEW) {
            f.u.p_msg_new.flags = PIO_WF_EAGER, f.u.p_msg_new.size = sizeof payload;
            f.u.p_msg_new.payload = payload;
        } else {
            f.u.h_request.flags = PIO_WF_EAGER, f.u.h_request.size = sizeof payload;
            f.u.h_request.payload = payload;
        }
        size_t n = 0;
        assert_int_equal(pio_wire_encode(&f, buf, sizeof buf, &n), PIO_OK);
        uint8_t check[4];
        memcpy(check, buf + 12, 4);
        pio_wire_reseal(buf, n);
        assert_memory_equal(buf + 12, check, 4);
        buf[n - 1] ^= 0x5A; /* a payload byte: not covered */
        assert_int_equal(pio_wire_decode(buf, n, &g, NULL), PIO_OK);
        buf[n - 1] ^= 0x5A;
        buf[n - sizeof payload - 1] ^= 0x01; /* the payload's length prefix: covered */
        assert_int_equal(pio_wire_decode(buf, n, &g, NULL), PIO_EPROTO);
        buf[n - sizeof payload - 1] ^= 0x01;
        buf[PIO_WIRE_HDR] ^= 0x01; /* the first body byte: covered */
        assert_int_equal(pio_wire_decode(buf, n, &g, NULL), PIO_EPROTO);
    }
}

static void test_type_names(void **state)
{
    (void)state;
#define NAME_CHECK(name, value) assert_string_equal(pio_wire_type_name(value), #name);
    PIO_FTYPES(NAME_CHECK)
#undef NAME_CHECK
    assert_string_equal(pio_wire_type_name(0), "?");
    assert_string_equal(pio_wire_type_name(21), "?");
    assert_string_equal(pio_wire_type_name(-1), "?");
    assert_string_equal(pio_wire_type_name(1000), "?");
}

#define TYPE_ENTRY(name, value) cmocka_unit_test(test_##name),
static const struct CMUnitTest tests[] = {
    PIO_FTYPES(TYPE_ENTRY) /* one round-trip/truncation/corruption case per type */
    cmocka_unit_test(test_handbuilt_matches_encoder),
    cmocka_unit_test(test_golden_layout),
    cmocka_unit_test(test_negative_int32_roundtrip),
    cmocka_unit_test(test_seq_inner_flips),
    cmocka_unit_test(test_sealed_wrap),
    cmocka_unit_test(test_bad_magic),
    cmocka_unit_test(test_wrong_version),
    cmocka_unit_test(test_unknown_type),
    cmocka_unit_test(test_oversized_length),
    cmocka_unit_test(test_string_refusals),
    cmocka_unit_test(test_count_over_bound),
    cmocka_unit_test(test_body_short_or_trailing),
    cmocka_unit_test(test_eager_payload_refusals),
    cmocka_unit_test(test_c_data_payload_outside),
    cmocka_unit_test(test_two_frames_in_a_stream),
    cmocka_unit_test(test_encode_too_small_cap),
    cmocka_unit_test(test_encode_invalid),
    cmocka_unit_test(test_type_names),
    cmocka_unit_test(test_check_leaves_eager_payload_out),
};
#undef TYPE_ENTRY
PIO_UNIT_MAIN(tests)
