/* fuzz_seeds.c - write one valid encoded frame of every type: the fuzzer's seed corpus.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Usage: fuzz_seeds DIR. Writes DIR/NAME.bin for every frame type (and a few
 * variants: eager payloads present and absent, empty lists) with plausible
 * values, checks that each decodes back, and exits non-zero on any failure.
 * Built by `make fuzz` (common/wire/module.mk); never installed.
 */
#include "wire.h"
#include "pio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t seed_payload[256];

/* Some plausible content for type t; variant 1 is the lean form (no eager
 * payload, empty lists). */
static void seed_fill(struct pio_frame *f, int t, int variant)
{
    memset(f, 0, sizeof *f);
    f->type = (uint8_t)t;
    uint32_t n = variant ? 0 : 3;
    uint32_t eager = variant ? 0 : PIO_WF_EAGER;
    switch (t) {
    case PIO_F_P_HELLO:
        f->u.p_hello = (struct pio_p_hello){
            .proto = PIO_WIRE_VERSION, .proc = 3, .nprocs = 8, .pid = 4242, .app = "sim"};
        break;
    case PIO_F_P_WELCOME:
        f->u.p_welcome = (struct pio_p_welcome){.status = PIO_OK,
                                                .eager_limit = 8192,
                                                .chunk = 1 << 20,
                                                .send_off = 0,
                                                .send_len = 1 << 26,
                                                .recv_off = 1 << 26,
                                                .recv_len = 1 << 26,
                                                .shm = "/pio.sim.3",
                                                .host = "hostA",
                                                .system = "alpha"};
        break;
    case PIO_F_P_PARTNER:
        f->u.p_partner = (struct pio_p_partner){.req = 7, .timeout_ms = 30000, .app = "viz"};
        break;
    case PIO_F_P_PARTNER_INFO:
        f->u.p_partner_info = (struct pio_p_partner_info){.req = 7,
                                                          .status = PIO_OK,
                                                          .nprocs = 4,
                                                          .channels = 4,
                                                          .system = "beta",
                                                          .host = "hostB"};
        break;
    case PIO_F_P_SEND:
    case PIO_F_P_MSG_NEW:
    case PIO_F_H_REQUEST: {
        uint64_t size = variant ? 1 << 24 : sizeof seed_payload;
        const uint8_t *pl = variant ? NULL : seed_payload;
        if (t == PIO_F_P_SEND)
            f->u.p_send = (struct pio_p_send){.sid = 11,
                                              .size = size,
                                              .count = size / 4,
                                              .dst_proc = 1,
                                              .tag = 5,
                                              .datatype = PIO_INT32,
                                              .conn = PIO_WCONN_DYNAMIC,
                                              .flags = eager | PIO_WF_SYNC,
                                              .partner = "viz",
                                              .payload = pl};
        else if (t == PIO_F_P_MSG_NEW)
            f->u.p_msg_new = (struct pio_p_msg_new){.key = 99,
                                                    .size = size,
                                                    .count = size / 4,
                                                    .seq = 12,
                                                    .src_proc = 3,
                                                    .tag = 5,
                                                    .datatype = PIO_INT32,
                                                    .flags = eager,
                                                    .src_uid = 1000,
                                                    .src_gid = 100,
                                                    .src_app = "sim",
                                                    .src_system = "cluster",
                                                    .src_user = "alice",
                                                    .payload = pl};
        else
            f->u.h_request = (struct pio_h_request){.msgid = 1001,
                                                    .seq = 12,
                                                    .size = size,
                                                    .count = size / 4,
                                                    .src_proc = 3,
                                                    .dst_proc = 1,
                                                    .tag = 5,
                                                    .datatype = PIO_INT32,
                                                    .flags = eager | PIO_WF_BIGEND,
                                                    .chunk = 1 << 20,
                                                    .conn = PIO_WCONN_STATIC,
                                                    .src_uid = 1000,
                                                    .src_gid = 100,
                                                    .src_user = "alice",
                                                    .src_app = "sim",
                                                    .dst_app = "viz",
                                                    .payload = pl};
        break;
    }
    case PIO_F_P_SEND_DATA:
    case PIO_F_P_RELEASE:
    case PIO_F_P_MSG_DATA:
    case PIO_F_P_FREE:
        f->u.p_ranges.id = 11;
        f->u.p_ranges.msg_off = 1 << 20;
        f->u.p_ranges.n = n;
        for (uint32_t i = 0; i < n; i++)
            f->u.p_ranges.r[i] = (struct pio_range){.off = i << 20, .len = 1 << 20};
        break;
    case PIO_F_P_BYE:
    case PIO_F_P_SEND_DONE:
    case PIO_F_P_CLAIM:
    case PIO_F_P_CONSUMED: f->u.p_done = (struct pio_p_done){.id = 11, .status = PIO_OK}; break;
    case PIO_F_P_EVENT:
        f->u.p_event = (struct pio_p_event){.kind = 1, .proc = 2, .nprocs = 4, .app = "viz"};
        break;
    case PIO_F_P_INFO_REQ: f->u.p_info_req = (struct pio_p_info_req){.req = 5, .what = 7}; break;
    case PIO_F_P_QOS:
        f->u.p_qos = (struct pio_p_qos){.tag0 = 100, .n = n < 2 ? n : 2, .share = {20, 80}};
        break;
    case PIO_F_P_INFO: {
        struct pio_p_info *b = &f->u.p_info;
        b->req = 5, b->version = PIO_WIRE_VERSION, b->pool_size = 1 << 28, b->pool_used = 4096;
        strcpy(b->host, "hostA");
        strcpy(b->system, "alpha");
        b->nchan = n, b->napp = n ? 2 : 0;
        for (uint32_t i = 0; i < b->nchan; i++) {
            snprintf(b->chan[i].peer, sizeof b->chan[i].peer, "beta");
            snprintf(b->chan[i].local, sizeof b->chan[i].local, "10.0.%u.1:7100", i);
            snprintf(b->chan[i].remote, sizeof b->chan[i].remote, "10.0.%u.2:7100", i);
            b->chan[i].index = i, b->chan[i].state = 2, b->chan[i].rate = 117000000;
        }
        for (uint32_t i = 0; i < b->napp; i++) {
            snprintf(b->app[i].app, sizeof b->app[i].app, "app%u", i);
            strcpy(b->app[i].system, "alpha");
            b->app[i].nprocs = 4, b->app[i].joined = 4;
        }
        break;
    }
    case PIO_F_H_HELLO:
        f->u.h_hello = (struct pio_h_hello){.proto = PIO_WIRE_VERSION,
                                            .nchan = 4,
                                            .system = "alpha",
                                            .host = "hostA",
                                            .epoch = 0x1111};
        for (int i = 0; i < PIO_WIRE_KEY; i++)
            f->u.h_hello.chan_key[i] = (uint8_t)(i * 37);
        break;
    case PIO_F_H_REGISTRY:
        f->u.h_registry.full = 1;
        f->u.h_registry.n = n;
        for (uint32_t i = 0; i < n; i++)
            f->u.h_registry.e[i] =
                (struct pio_reg_entry){.app = "sim", .nprocs = 8, .proc = i, .state = 1};
        break;
    case PIO_F_H_REPLY:
        f->u.h_reply.msgid = 1001;
        f->u.h_reply.n = n;
        for (uint32_t i = 0; i < n; i++)
            f->u.h_reply.g[i] = (struct pio_grant){
                .off = (uint64_t)i << 20, .len = 1 << 20, .channel = (uint16_t)i, .host = 0};
        break;
    case PIO_F_H_DONE:
    case PIO_F_H_BYE: f->u.h_done = (struct pio_h_done){.msgid = 1001, .status = PIO_OK}; break;
    case PIO_F_H_SEQ: { /* carrying an encoded H_DONE */
        static uint8_t inner[64];
        struct pio_frame d;
        memset(&d, 0, sizeof d);
        d.type = PIO_F_H_DONE;
        d.u.h_done = (struct pio_h_done){.msgid = 1001, .status = variant ? PIO_EGONE : PIO_OK};
        size_t ilen = 0;
        if (pio_wire_encode(&d, inner, sizeof inner, &ilen) != PIO_OK)
            ilen = 0;
        f->u.h_seq = (struct pio_h_seq){.src_epoch = 0x1111,
                                        .dst_epoch = 0x2222,
                                        .seq = 7,
                                        .ack = 5,
                                        .len = (uint32_t)ilen,
                                        .inner = inner};
        break;
    }
    case PIO_F_H_ACK:
        f->u.h_ack = (struct pio_h_ack){.src_epoch = 0x2222, .dst_epoch = 0x1111, .ack = 7};
        break;
    case PIO_F_H_LOAD: {
        struct pio_h_load *b = &f->u.h_load;
        strcpy(b->host, "s2");
        b->seq = 42, b->nchan = n;
        for (uint32_t i = 0; i < b->nchan && i < PIO_WIRE_MAX_LOAD; i++) {
            snprintf(b->chan[i].peer, sizeof b->chan[i].peer, "beta");
            strcpy(b->chan[i].host, "s2");
            b->chan[i].index = i, b->chan[i].state = 2, b->chan[i].queued = 1 << 20;
        }
        break;
    }
    case PIO_F_C_HELLO:
        f->u.c_hello = (struct pio_c_hello){.proto = PIO_WIRE_VERSION,
                                            .index = 2,
                                            .system = "alpha",
                                            .host = "hostA",
                                            .target = "hostB"};
        break;
    case PIO_F_C_CHALLENGE:
    case PIO_F_C_PROOF:
        for (int i = 0; i < PIO_WIRE_KEY; i++)
            f->u.c_key.b[i] = (uint8_t)(255 - i * 7);
        break;
    case PIO_F_C_ACCEPT: f->u.c_accept.status = variant ? PIO_EAUTH : PIO_OK; break;
    case PIO_F_P_LANE_REQ:
        f->u.p_lane_req = (struct pio_p_lane_req){.req = 9, .proc = 3, .app = "viz"};
        break;
    case PIO_F_P_LANE: {
        struct pio_p_lane *b = &f->u.p_lane;
        *b = (struct pio_p_lane){.req = 9,
                                 .status = variant ? PIO_EGONE : PIO_OK,
                                 .role = variant,
                                 .proc = 3,
                                 .sealed = 1,
                                 .cipher = 1,
                                 .uid = 1000,
                                 .gid = 100,
                                 .lane_id = 77,
                                 .n_out = 1,
                                 .n_in = 2,
                                 .app = "viz",
                                 .system = "alpha",
                                 .user = "alice"};
        for (int i = 0; i < PIO_WIRE_KEY; i++)
            b->key_out[i] = (uint8_t)i, b->key_in[i] = (uint8_t)(i * 3);
        break;
    }
    case PIO_F_C_LANE:
        f->u.c_lane = (struct pio_c_lane){.lane_id = 77,
                                          .src_proc = 1,
                                          .dst_proc = 3,
                                          .uid = 1000,
                                          .gid = 100,
                                          .src_app = "sim",
                                          .dst_app = "viz",
                                          .user = "alice"};
        break;
    case PIO_F_L_MSG: {
        static uint8_t pl[64];
        for (size_t i = 0; i < sizeof(pl); i++)
            pl[i] = (uint8_t)(i * 5);
        f->u.l_msg = (struct pio_l_msg){.seq = 5,
                                        .size = variant ? 0 : sizeof(pl),
                                        .count = variant ? 0 : sizeof(pl),
                                        .tag = 7,
                                        .datatype = 1,
                                        .flags = PIO_WF_EAGER,
                                        .payload = variant ? NULL : pl};
        break;
    }
    case PIO_F_L_ACK:
    case PIO_F_L_FLUSH: f->u.l_ack.seq = 5 + (uint64_t)variant; break;
    case PIO_F_C_DATA:
        f->u.c_data =
            (struct pio_c_data){.msgid = 1001, .off = 1 << 20, .len = 1 << 20, .resend = variant};
        break;
    case PIO_F_C_ACK:
        f->u.c_ack.n = n;
        for (uint32_t i = 0; i < n; i++) {
            f->u.c_ack.a[i].msgid = 1001;
            f->u.c_ack.a[i].off = (uint64_t)i << 20;
        }
        break;
    case PIO_F_C_SEALED: {
        static uint8_t sealed[PIO_WIRE_HDR + PIO_WIRE_SEALED_TAG + 40];
        for (size_t i = 0; i < sizeof(sealed); i++)
            sealed[i] = (uint8_t)(i * 29 + variant);
        f->u.c_sealed.len = (uint32_t)(sizeof(sealed) - (variant ? 8 : 0));
        f->u.c_sealed.body = sealed;
        break;
    }
    }
}

static int seed_write(const char *dir, int t, int variant, struct pio_frame *f, struct pio_frame *g)
{
    static uint8_t buf[1 << 16];
    char path[4096];
    size_t len = 0;
    seed_fill(f, t, variant);
    int rc = pio_wire_encode(f, buf, sizeof buf, &len);
    if (rc == PIO_OK)
        rc = pio_wire_decode(buf, len, g, NULL);
    if (rc != PIO_OK) {
        fprintf(stderr, "fuzz_seeds: %s: %s\n", pio_wire_type_name(t), PIO_Strerror(rc));
        return -1;
    }
    snprintf(path, sizeof path, "%s/%s%s.bin", dir, pio_wire_type_name(t), variant ? "-lean" : "");
    FILE *fp = fopen(path, "wb");
    if (fp == NULL || fwrite(buf, 1, len, fp) != len || fclose(fp) != 0) {
        fprintf(stderr, "fuzz_seeds: %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    for (size_t i = 0; i < sizeof seed_payload; i++)
        seed_payload[i] = (uint8_t)(i * 13 + 1);
    struct pio_frame *f = malloc(sizeof *f), *g = malloc(sizeof *g);
    if (f == NULL || g == NULL)
        return 1;
    int bad = 0, count = 0;
#define SEED_TYPE_(name, value)                                                                    \
    for (int v = 0; v < 2; v++, count++)                                                           \
        bad |= seed_write(argv[1], PIO_F_##name, v, f, g) != 0;
    PIO_FTYPES(SEED_TYPE_)
#undef SEED_TYPE_
    free(f);
    free(g);
    if (bad)
        return 1;
    printf("fuzz_seeds: %d frames in %s\n", count, argv[1]);
    return 0;
}
