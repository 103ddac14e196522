/* fuzz_wire.c - libFuzzer target for the frame decoder and pio_wire_peek.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Each input is decoded twice: as given (magic, version, length and check
 * refusals), and with its check field recomputed, so that mutations reach the
 * body decoders instead of dying at the checksum. Whenever a decode succeeds
 * the frame is encoded again; the bytes must be the input's bytes (the
 * encoding is canonical), decoding them must give an equal frame, and one
 * byte less must be PIO_EAGAIN. Any broken property ends in __builtin_trap().
 * Built by `make fuzz` (common/wire/module.mk) with clang -fsanitize=fuzzer,address.
 */
#include "wire.h"
#include "pio.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define FZ_EQ(f)                                                                                   \
    do {                                                                                           \
        if (a->f != b->f)                                                                          \
            return 0;                                                                              \
    } while (0)
#define FZ_EQS(f)                                                                                  \
    do {                                                                                           \
        if (strcmp(a->f, b->f) != 0)                                                               \
            return 0;                                                                              \
    } while (0)

static int fz_payload_eq(uint32_t flags, uint64_t size, const uint8_t *a, const uint8_t *b)
{
    if (!(flags & PIO_WF_EAGER))
        return a == NULL && b == NULL;
    return a != NULL && b != NULL && (size == 0 || memcmp(a, b, (size_t)size) == 0);
}

static int fz_chan_eq(const struct pio_chan_info *a, const struct pio_chan_info *b)
{
    FZ_EQS(peer);
    FZ_EQS(local);
    FZ_EQS(remote);
    FZ_EQS(host);
    FZ_EQ(index);
    FZ_EQ(state);
    FZ_EQ(tx_bytes);
    FZ_EQ(rx_bytes);
    FZ_EQ(queued);
    FZ_EQ(rate);
    FZ_EQ(tx_chunks);
    FZ_EQ(rx_chunks);
    FZ_EQ(resent);
    FZ_EQ(downs);
    return 1;
}

static int fz_p_info_eq(const struct pio_p_info *a, const struct pio_p_info *b)
{
    FZ_EQ(req);
    FZ_EQS(host);
    FZ_EQS(system);
    FZ_EQ(version);
    FZ_EQ(nchan);
    FZ_EQ(napp);
    FZ_EQ(pool_size);
    FZ_EQ(pool_used);
    for (uint32_t i = 0; i < a->nchan; i++)
        if (!fz_chan_eq(&a->chan[i], &b->chan[i]))
            return 0;
    for (uint32_t i = 0; i < a->napp; i++) {
        FZ_EQS(app[i].app);
        FZ_EQS(app[i].system);
        FZ_EQ(app[i].nprocs);
        FZ_EQ(app[i].joined);
    }
    return 1;
}

static int fz_h_request_eq(const struct pio_h_request *a, const struct pio_h_request *b)
{
    FZ_EQ(msgid);
    FZ_EQ(seq);
    FZ_EQ(size);
    FZ_EQ(count);
    FZ_EQ(src_proc);
    FZ_EQ(dst_proc);
    FZ_EQ(tag);
    FZ_EQ(datatype);
    FZ_EQ(flags);
    FZ_EQ(chunk);
    FZ_EQ(conn);
    FZ_EQ(conn_arg);
    FZ_EQS(src_app);
    FZ_EQS(dst_app);
    return fz_payload_eq(a->flags, a->size, a->payload, b->payload);
}

static int fz_p_send_eq(const struct pio_p_send *a, const struct pio_p_send *b)
{
    FZ_EQ(sid);
    FZ_EQ(size);
    FZ_EQ(count);
    FZ_EQ(dst_proc);
    FZ_EQ(tag);
    FZ_EQ(datatype);
    FZ_EQ(conn);
    FZ_EQ(conn_arg);
    FZ_EQ(flags);
    FZ_EQS(partner);
    return fz_payload_eq(a->flags, a->size, a->payload, b->payload);
}

static int fz_p_msg_new_eq(const struct pio_p_msg_new *a, const struct pio_p_msg_new *b)
{
    FZ_EQ(key);
    FZ_EQ(size);
    FZ_EQ(count);
    FZ_EQ(seq);
    FZ_EQ(src_proc);
    FZ_EQ(tag);
    FZ_EQ(datatype);
    FZ_EQ(flags);
    FZ_EQS(src_app);
    return fz_payload_eq(a->flags, a->size, a->payload, b->payload);
}

/* 1 when two decoded frames carry the same values. */
static int fz_frame_eq(const struct pio_frame *fa, const struct pio_frame *fb)
{
    if (fa->type != fb->type || fa->flags != fb->flags)
        return 0;
    switch (fa->type) {
    case PIO_F_P_HELLO: {
        const struct pio_p_hello *a = &fa->u.p_hello, *b = &fb->u.p_hello;
        FZ_EQ(proto);
        FZ_EQ(proc);
        FZ_EQ(nprocs);
        FZ_EQ(pid);
        FZ_EQS(app);
        return 1;
    }
    case PIO_F_P_WELCOME: {
        const struct pio_p_welcome *a = &fa->u.p_welcome, *b = &fb->u.p_welcome;
        FZ_EQ(status);
        FZ_EQ(eager_limit);
        FZ_EQ(chunk);
        FZ_EQ(send_off);
        FZ_EQ(send_len);
        FZ_EQ(recv_off);
        FZ_EQ(recv_len);
        FZ_EQS(shm);
        FZ_EQS(host);
        FZ_EQS(system);
        return 1;
    }
    case PIO_F_P_PARTNER: {
        const struct pio_p_partner *a = &fa->u.p_partner, *b = &fb->u.p_partner;
        FZ_EQ(req);
        FZ_EQ(timeout_ms);
        FZ_EQS(app);
        return 1;
    }
    case PIO_F_P_PARTNER_INFO: {
        const struct pio_p_partner_info *a = &fa->u.p_partner_info, *b = &fb->u.p_partner_info;
        FZ_EQ(req);
        FZ_EQ(status);
        FZ_EQ(nprocs);
        FZ_EQ(channels);
        FZ_EQS(system);
        FZ_EQS(host);
        return 1;
    }
    case PIO_F_P_SEND: return fz_p_send_eq(&fa->u.p_send, &fb->u.p_send);
    case PIO_F_P_SEND_DATA:
    case PIO_F_P_RELEASE:
    case PIO_F_P_MSG_DATA:
    case PIO_F_P_FREE: {
        const struct pio_p_ranges *a = &fa->u.p_ranges, *b = &fb->u.p_ranges;
        FZ_EQ(id);
        FZ_EQ(msg_off);
        FZ_EQ(n);
        for (uint32_t i = 0; i < a->n; i++) {
            FZ_EQ(r[i].off);
            FZ_EQ(r[i].len);
        }
        return 1;
    }
    case PIO_F_P_BYE:
    case PIO_F_P_SEND_DONE:
    case PIO_F_P_CLAIM:
    case PIO_F_P_CONSUMED: {
        const struct pio_p_done *a = &fa->u.p_done, *b = &fb->u.p_done;
        FZ_EQ(id);
        FZ_EQ(status);
        return 1;
    }
    case PIO_F_P_MSG_NEW: return fz_p_msg_new_eq(&fa->u.p_msg_new, &fb->u.p_msg_new);
    case PIO_F_P_EVENT: {
        const struct pio_p_event *a = &fa->u.p_event, *b = &fb->u.p_event;
        FZ_EQ(kind);
        FZ_EQ(proc);
        FZ_EQ(nprocs);
        FZ_EQS(app);
        return 1;
    }
    case PIO_F_P_INFO_REQ: {
        const struct pio_p_info_req *a = &fa->u.p_info_req, *b = &fb->u.p_info_req;
        FZ_EQ(req);
        FZ_EQ(what);
        return 1;
    }
    case PIO_F_P_INFO: return fz_p_info_eq(&fa->u.p_info, &fb->u.p_info);
    case PIO_F_P_QOS: {
        const struct pio_p_qos *a = &fa->u.p_qos, *b = &fb->u.p_qos;
        FZ_EQ(tag0);
        FZ_EQ(n);
        for (uint32_t i = 0; i < a->n; i++)
            FZ_EQ(share[i]);
        return 1;
    }
    case PIO_F_H_HELLO: {
        const struct pio_h_hello *a = &fa->u.h_hello, *b = &fb->u.h_hello;
        FZ_EQ(proto);
        FZ_EQ(nchan);
        FZ_EQS(system);
        FZ_EQS(host);
        FZ_EQ(epoch);
        return memcmp(a->chan_key, b->chan_key, PIO_WIRE_KEY) == 0;
    }
    case PIO_F_H_REGISTRY: {
        const struct pio_h_registry *a = &fa->u.h_registry, *b = &fb->u.h_registry;
        FZ_EQ(full);
        FZ_EQ(n);
        for (uint32_t i = 0; i < a->n; i++) {
            FZ_EQS(e[i].app);
            FZ_EQ(e[i].nprocs);
            FZ_EQ(e[i].proc);
            FZ_EQ(e[i].state);
        }
        return 1;
    }
    case PIO_F_H_REQUEST: return fz_h_request_eq(&fa->u.h_request, &fb->u.h_request);
    case PIO_F_H_REPLY: {
        const struct pio_h_reply *a = &fa->u.h_reply, *b = &fb->u.h_reply;
        FZ_EQ(msgid);
        FZ_EQ(n);
        for (uint32_t i = 0; i < a->n; i++) {
            FZ_EQ(g[i].off);
            FZ_EQ(g[i].len);
            FZ_EQ(g[i].channel);
            FZ_EQ(g[i].host);
        }
        return 1;
    }
    case PIO_F_H_DONE:
    case PIO_F_H_BYE: {
        const struct pio_h_done *a = &fa->u.h_done, *b = &fb->u.h_done;
        FZ_EQ(msgid);
        FZ_EQ(status);
        return 1;
    }
    case PIO_F_H_SEQ: {
        const struct pio_h_seq *a = &fa->u.h_seq, *b = &fb->u.h_seq;
        FZ_EQ(src_epoch);
        FZ_EQ(dst_epoch);
        FZ_EQ(seq);
        FZ_EQ(ack);
        FZ_EQ(len);
        return memcmp(a->inner, b->inner, a->len) == 0;
    }
    case PIO_F_H_ACK: {
        const struct pio_h_ack *a = &fa->u.h_ack, *b = &fb->u.h_ack;
        FZ_EQ(src_epoch);
        FZ_EQ(dst_epoch);
        FZ_EQ(ack);
        return 1;
    }
    case PIO_F_C_HELLO: {
        const struct pio_c_hello *a = &fa->u.c_hello, *b = &fb->u.c_hello;
        FZ_EQ(proto);
        FZ_EQ(index);
        FZ_EQS(system);
        FZ_EQS(host);
        FZ_EQS(target);
        return 1;
    }
    case PIO_F_H_LOAD: {
        const struct pio_h_load *a = &fa->u.h_load, *b = &fb->u.h_load;
        FZ_EQS(host);
        FZ_EQ(seq);
        FZ_EQ(nchan);
        for (uint32_t i = 0; i < a->nchan; i++)
            if (!fz_chan_eq(&a->chan[i], &b->chan[i]))
                return 0;
        return 1;
    }
    case PIO_F_C_CHALLENGE:
    case PIO_F_C_PROOF: return memcmp(fa->u.c_key.b, fb->u.c_key.b, PIO_WIRE_KEY) == 0;
    case PIO_F_C_ACCEPT: return fa->u.c_accept.status == fb->u.c_accept.status;
    case PIO_F_P_LANE_REQ: {
        const struct pio_p_lane_req *a = &fa->u.p_lane_req, *b = &fb->u.p_lane_req;
        FZ_EQ(req);
        FZ_EQ(proc);
        FZ_EQS(app);
        return 1;
    }
    case PIO_F_P_LANE: {
        const struct pio_p_lane *a = &fa->u.p_lane, *b = &fb->u.p_lane;
        FZ_EQ(req);
        FZ_EQ(status);
        FZ_EQ(role);
        FZ_EQ(proc);
        FZ_EQ(sealed);
        FZ_EQ(cipher);
        FZ_EQ(uid);
        FZ_EQ(gid);
        FZ_EQ(lane_id);
        FZ_EQ(n_out);
        FZ_EQ(n_in);
        FZ_EQS(app);
        FZ_EQS(system);
        FZ_EQS(user);
        return memcmp(a->key_out, b->key_out, PIO_WIRE_KEY) == 0 &&
               memcmp(a->key_in, b->key_in, PIO_WIRE_KEY) == 0;
    }
    case PIO_F_C_LANE: {
        const struct pio_c_lane *a = &fa->u.c_lane, *b = &fb->u.c_lane;
        FZ_EQ(lane_id);
        FZ_EQ(src_proc);
        FZ_EQ(dst_proc);
        FZ_EQ(uid);
        FZ_EQ(gid);
        FZ_EQS(src_app);
        FZ_EQS(dst_app);
        FZ_EQS(user);
        return 1;
    }
    case PIO_F_L_MSG: {
        const struct pio_l_msg *a = &fa->u.l_msg, *b = &fb->u.l_msg;
        FZ_EQ(seq);
        FZ_EQ(size);
        FZ_EQ(count);
        FZ_EQ(tag);
        FZ_EQ(datatype);
        FZ_EQ(flags);
        return fz_payload_eq(a->flags, a->size, a->payload, b->payload);
    }
    case PIO_F_L_ACK:
    case PIO_F_L_FLUSH: return fa->u.l_ack.seq == fb->u.l_ack.seq;
    case PIO_F_C_DATA: {
        const struct pio_c_data *a = &fa->u.c_data, *b = &fb->u.c_data;
        FZ_EQ(msgid);
        FZ_EQ(off);
        FZ_EQ(len);
        FZ_EQ(resend);
        return 1;
    }
    case PIO_F_C_ACK: {
        const struct pio_c_ack *a = &fa->u.c_ack, *b = &fb->u.c_ack;
        FZ_EQ(n);
        for (uint32_t i = 0; i < a->n; i++) {
            FZ_EQ(a[i].msgid);
            FZ_EQ(a[i].off);
        }
        return 1;
    }
    case PIO_F_C_SEALED:
        return fa->u.c_sealed.len == fb->u.c_sealed.len &&
               memcmp(fa->u.c_sealed.body, fb->u.c_sealed.body, fa->u.c_sealed.len) == 0;
    default: return 0; /* the decoder accepted a type it does not know */
    }
}

#define FZ_ASSERT(cond)                                                                            \
    do {                                                                                           \
        if (!(cond))                                                                               \
            __builtin_trap();                                                                      \
    } while (0)

/* Two frames: the decoded one and its re-decoded copy (~30 KiB each). */
static struct pio_frame fz_f1, fz_f2;

static void fz_one(const uint8_t *buf, size_t len)
{
    uint8_t type = 0, ver = 0;
    uint32_t body_len = 0;
    int prc = pio_wire_peek(buf, len, &type, &body_len, &ver);
    FZ_ASSERT(prc == PIO_OK || prc == PIO_EAGAIN || prc == PIO_EPROTO || prc == PIO_EVERSION);
    if (prc == PIO_OK)
        FZ_ASSERT(body_len <= PIO_WIRE_MAX_BODY && ver == PIO_WIRE_VERSION);
    if (prc == PIO_EVERSION)
        FZ_ASSERT(ver != PIO_WIRE_VERSION);

    size_t used = 0;
    int rc = pio_wire_decode(buf, len, &fz_f1, &used);
    if (prc != PIO_OK)
        FZ_ASSERT(rc == prc); /* the header verdict stands */
    if (rc != PIO_OK) {
        FZ_ASSERT(rc == PIO_EAGAIN || rc == PIO_EPROTO || rc == PIO_EVERSION);
        return;
    }
    FZ_ASSERT(fz_f1.type == type && used == PIO_WIRE_HDR + (size_t)body_len && used <= len);
    FZ_ASSERT(strcmp(pio_wire_type_name(type), "?") != 0);

    /* Re-encode: the same bytes, and a decode equal to the first. */
    size_t size = pio_wire_encoded_size(&fz_f1);
    FZ_ASSERT(size == used);
    uint8_t *again = malloc(size);
    FZ_ASSERT(again != NULL);
    size_t n = 0;
    FZ_ASSERT(pio_wire_encode(&fz_f1, again, size, &n) == PIO_OK && n == size);
    FZ_ASSERT(memcmp(again, buf, size) == 0);
    size_t used2 = 0;
    FZ_ASSERT(pio_wire_decode(again, n, &fz_f2, &used2) == PIO_OK && used2 == n);
    FZ_ASSERT(fz_frame_eq(&fz_f1, &fz_f2));
    FZ_ASSERT(pio_wire_decode(again, n - 1, &fz_f2, NULL) == PIO_EAGAIN);
    FZ_ASSERT(pio_wire_encode(&fz_f1, again, n - 1, &used2) == PIO_ENOMEM);
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_one(data, size);

    /* The same bytes with a correct check, so that bodies get decoded. */
    if (size < PIO_WIRE_HDR)
        return 0;
    uint32_t body_len = (uint32_t)data[8] | ((uint32_t)data[9] << 8) | ((uint32_t)data[10] << 16) |
                        ((uint32_t)data[11] << 24);
    if (body_len > size - PIO_WIRE_HDR)
        return 0;
    uint8_t *copy = malloc(size);
    FZ_ASSERT(copy != NULL);
    memcpy(copy, data, size);
    pio_wire_reseal(copy, size);
    fz_one(copy, size);
    free(copy);
    return 0;
}
