/* pio_int.h - what the files of libpio's message core share (private to
 * pio.c, reader.c and sendrecv.c; pio.c's head comment describes them).
 * SPDX-License-Identifier: BSD-3-Clause
 * Thread-safety: everything here runs with pio_g.mtx held unless its
 * comment says otherwise. Each function is documented where it is defined;
 * all are hidden (-fvisibility=hidden), none leaves libpio.so. */
#ifndef PIO_INT_H
#define PIO_INT_H

#include "pio.h"
#include "fstream.h"
#include "pool.h"
#include "wire/wire.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define MAX_PARTNERS 64

enum { READER_NONE = 0, READER_API = 1, READER_PROGRESS = 2 };

enum { REQ_SEND = 1, REQ_RECV = 2, REQ_EXT = 3 /* completed by win.c */ };

struct chunk_note { /* an arrived chunk not copied yet */
    struct chunk_note *next;
    uint64_t msg_off, pool_off, len;
};

struct inmsg {
    struct inmsg *next;
    uint64_t key;
    int partner; /* handle, or -1 */
    char src_app[PIO_WIRE_NAME];
    char src_system[PIO_WIRE_NAME];
    char src_user[PIO_WIRE_NAME];
    uint32_t src_uid, src_gid; /* stamped by the sender's piod */
    uint32_t src_proc;
    int32_t tag;
    uint32_t datatype, flags;
    uint64_t size, count;
    uint8_t *eager;
    struct chunk_note *chunks;
    uint64_t arrived; /* bytes the piod said are in the pool (P_MSG_DATA) */
    uint64_t copied;
    struct pio_request *req; /* the receive it matched */
    int canceled;
    int lane_held; /* came on a direct lane and counts in what lanes hold (lane.c) */
};

struct pio_request {
    struct pio_request *next; /* in pio_g.sends or pio_g.recvs */
    int kind;
    int done, status;
    PIO_Status st;
    int user;           /* the application's (PIO_Isend, _Irecv, _Iget, _Iput): counts in ready */
    unsigned ready_gen; /* counted in pio_g.ready of session ready_gen (0: not counted) */
    /* send */
    uint64_t sid, size, next_off;
    uint64_t held; /* its bytes in the send region the piod has not released yet */
    const uint8_t *sbuf;
    /* sbuf is the first byte of a block inside a larger array (sub_row > 0):
     * rows of sub_row bytes, sub_ny rows a plane, sub_py bytes from row to
     * row and sub_pz from plane to plane in memory (pio_send_sub) */
    uint64_t sub_row, sub_ny, sub_py, sub_pz;
    int sync, copied_all, done_recv, pumping;
    int verdict;              /* a large PIO_USER send waits for the piod to accept its channel */
    int dst_proc, connection; /* where it goes, and how */
    struct pio_request *lane_next; /* waiting for its turn at a direct lane (lane.c) */
    int lane_piods;                /* ... and then goes through the piods, not on the lane */
    /* recv */
    int partner, src, tag, datatype;
    uint8_t *rbuf;
    size_t count;
    struct inmsg *msg;
};

struct copy_job {
    struct copy_job *next;
    struct inmsg *m;
    uint64_t msg_off, pool_off, len;
};

struct partner {
    int named; /* by the application (PIO_Setpartner, PIO_Addpartner) */
    char name[PIO_WIRE_NAME];
    char system[PIO_WIRE_NAME];
    uint32_t nprocs, channels;
    uint8_t *left; /* [nprocs]: the process left */
    uint8_t *turn; /* [nprocs]: lane.c's count of send/receive turns with it */
};

struct lookup { /* a pending P_PARTNER or P_INFO_REQ */
    struct lookup *next;
    uint64_t req;
    int done;
    struct pio_frame *f;
};

/* a send-region range copied for send sid, until the piod releases it */
struct held_range {
    uint64_t off, len, sid;
};

/* the state of this process, guarded by mtx (defined in pio.c) */
struct pio_core {
    pthread_mutex_t mtx;
    pthread_cond_t cv;
    int inited, closed;
    int fd;              /* the socket to the piod */
    int evfd;            /* interrupts the reader's poll */
    int cfd;             /* PIO_Getfd's eventfd, -1 until asked for: readable while ready > 0 */
    int ready;           /* the application's requests complete and not collected yet */
    unsigned gen;        /* the session (PIO_Init .. PIO_Exit) ready counts for; never 0 */
    int reader, want;    /* who reads the socket; API threads waiting for the role */
    int in_pass;         /* the reader is handling frames (it runs the copies after) */
    long spin_us;        /* $PIO_SPIN_US: a reader looks this long before it sleeps */
    uint64_t send_ahead; /* $PIO_SEND_AHEAD: bytes in the send region not released yet past
                          * which sends wait for a release (pio.c send_ahead) */
    int send_ahead_set;  /* ... given by the user: not widened for wide bundles */
    struct timespec send_moved; /* the last release, or the last copy past send_ahead */
    struct pio_fin in;          /* the reader's */
    struct pio_fout out;        /* frames the socket had no room for */
    pthread_t thr;
    volatile int stop;
    char app[PIO_WIRE_NAME];
    int proc, nprocs;
    struct pio_p_welcome w;
    int have_welcome;
    uint8_t *base;
    size_t size;
    struct pio_ralloc send;
    struct held_range *held; /* the send region's ranges in use, and whose (sendrecv.c) */
    uint32_t nheld, held_cap;
    struct partner partners[MAX_PARTNERS];
    int npartners;
    struct inmsg *msgs, *msgs_tail;
    struct pio_request *recvs, *sends;
    struct copy_job *jobs, *jobs_tail;
    int copying; /* the reader runs copies without the lock (run_jobs) */
    struct lookup *lookups;
    uint64_t next_sid, next_req;
};

extern struct pio_core pio_g;

/* pio.c: the connection to the piod */
void pio_deadline_after(struct timespec *ts, int ms);
int pio_ms_until(const struct timespec *dl);
int pio_out_frame(const struct pio_frame *f);
void pio_out_ranges(int type, uint64_t id, uint64_t msg_off, uint64_t off, uint64_t len);
void pio_out_done(int type, uint64_t id);
int pio_partner_by_name(const char *name);

/* reader.c: the reader role, the progress thread */
void pio_wake_reader(void);
int pio_wait_until(const struct timespec *dl);
void pio_fail_everything(int status);
void pio_trace_open(void);
void *pio_progress(void *arg);

/* sendrecv.c: requests and messages */
void pio_req_complete(struct pio_request *r, int status);
/* PIO_Exit: the completion fd is closed and requests still held count no more. */
void pio_ready_reset(void);
void pio_msg_free(struct inmsg *m);
void pio_recv_finish(struct pio_request *r);
void pio_pump_all(void);
/* P_RELEASE: the piod is done with [off, off+len) of the send region */
void pio_send_released(uint64_t off, uint64_t len);
/* The reader, after each pass: when sends have waited at the send-ahead for
 * SEND_STALL_MS with no release, the oldest copies one chunk past it. */
void pio_pump_stalled(void);
void pio_on_msg_new(struct pio_p_msg_new *n);
/* pio_on_msg_new, n's eager bytes valid only during the call (copied only
 * when no receive takes them at once) */
void pio_on_msg_new_lent(struct pio_p_msg_new *n);
void pio_on_msg_data(struct pio_p_ranges *pr);
void pio_on_send_done(struct pio_frame *f);
void pio_on_event(struct pio_p_event *e);
/* A send of libpio's own (lane.c): never on a lane; out NULL frees a send
 * that completed at once (the caller must not keep one that did not). */
int pio_send_internal(int partner, int proc, int tag, const void *buf, size_t count, int datatype,
                      uint64_t size, int sync, struct pio_request **out);
/* A send request through the piods (its fields set; on no list). */
int pio_send_req_piods(struct pio_request *r);

#endif
