/* feed.c - the simulation's side of a visualization feed (PIO_Feed_*, pio.h).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A client of the receiver (pio-vizd) in the protocol of viz_proto.h, built
 * into libpio and using only the public API (plus pio_partner_find, to look
 * for the receiver without waiting). Per step:
 *   begin  - read the receiver's ACKs that came (never waiting); look for the
 *            receiver when it was absent (at most every PRESENCE_MS); decide
 *            whether this step goes: the receiver is joined and fewer than
 *            `window` steps are unacknowledged; for a newest-only receiver,
 *            also the first step >= the one its last ACK named (the ranks
 *            cannot ask each other, so the receiver names the step). A receiver that just
 *            appeared gets one step, and the feed waits (once, up to
 *            MODE_WAIT_S) for its ACK, which says whether it wants every step. A lossless receiver
 * makes the feed wait for an ACK instead of skipping (checking every PRESENCE_MS that the receiver
 * is still there). put    - a PIECE desc, then the block as one typed message (DYNAMIC). end    -
 * an END desc with the number of pieces. A send that fails (the receiver left) skips the rest of
 * the step; the receiver throws away steps it did not get whole, so ranks that decide differently
 * (an ACK seen by one and not yet by another) cost a step, never a wrong picture. Nothing here
 * holds a libpio lock.
 */
#include "pio.h"
#include "err.h"
#include "partner.h"
#include "viz/viz_proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PRESENCE_MS    1000
#define WINDOW_DEFAULT 2
#define WINDOW_MAX     64
#define MODE_WAIT_S    5.0

struct pio_feed {
    char receiver[PIO_NAME_MAX];
    int partner;       /* -1 until found */
    int present;       /* joined at the last look */
    double last_look;  /* when we last asked for the receiver */
    struct viz_desc d; /* the feed's description; per message fields set */
    int in_step, send; /* a step is begun; it is being sent */
    uint64_t step, last_step;
    int any_step;
    uint32_t seq, npieces, msgno;
    /* steps sent and not acknowledged, oldest first */
    uint64_t inflight[WINDOW_MAX];
    int ninflight;
    int lossless, window;
    int mode_known; /* an ACK came from this receiver: lossless and window are its */
    uint64_t grant; /* newest-only receiver: send the first step >= grant */
    int have_grant;
    PIO_Feedinfo info;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int PIO_Feed_open(const char *receiver, const PIO_Grid *grid, int nfields, const char *const *names,
                  const int *types, PIO_Feed *feed)
{
    if (!receiver || !*receiver || strlen(receiver) >= PIO_NAME_MAX || !grid || !names || !types ||
        !feed || nfields < 1 || nfields > PIO_FEED_FIELDS_MAX)
        return PIO_EINVAL;
    for (int i = 0; i < 3; i++)
        if (grid->dims[i] == 0 || grid->dims[i] > (1u << 24))
            return PIO_EINVAL;
    for (int f = 0; f < nfields; f++) {
        if (!names[f] || !*names[f] || strlen(names[f]) >= PIO_FEED_NAME_MAX ||
            !viz_elem_size(types[f]))
            return PIO_EINVAL;
        for (int g = 0; g < f; g++)
            if (strcmp(names[f], names[g]) == 0)
                return PIO_EINVAL;
    }
    PIO_Appinfo me;
    int rc = PIO_Getappinfo(PIO_SELF, &me);
    if (rc != PIO_OK)
        return rc;
    struct pio_feed *x = calloc(1, sizeof(*x));
    if (!x)
        return PIO_ENOMEM;
    snprintf(x->receiver, sizeof(x->receiver), "%s", receiver);
    x->partner = -1;
    x->last_look = -1e9;
    x->window = WINDOW_DEFAULT;
    snprintf(x->d.app, sizeof(x->d.app), "%s", me.name);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    x->d.session =
        ((uint32_t)getpid() * 2654435761u) ^ (uint32_t)ts.tv_nsec ^ ((uint32_t)ts.tv_sec << 7);
    if (x->d.session == 0)
        x->d.session = 1;
    x->d.rank = (uint32_t)me.process_ID;
    x->d.nranks = (uint32_t)me.nprocs;
    memcpy(x->d.grid.dims, grid->dims, sizeof(x->d.grid.dims));
    memcpy(x->d.grid.origin, grid->origin, sizeof(x->d.grid.origin));
    memcpy(x->d.grid.spacing, grid->spacing, sizeof(x->d.grid.spacing));
    x->d.nfields = (uint32_t)nfields;
    for (int f = 0; f < nfields; f++) {
        snprintf(x->d.field[f].name, sizeof(x->d.field[f].name), "%s", names[f]);
        x->d.field[f].type = types[f];
    }
    x->info.window = x->window;
    *feed = x;
    return PIO_OK;
}

/* Is the receiver there? Looks it up, then asks how many of its processes
 * are joined; at most every PRESENCE_MS unless forced. */
static void look(struct pio_feed *x, int force)
{
    double t = now_s();
    if (!force && t - x->last_look < PRESENCE_MS / 1000.0)
        return;
    x->last_look = t;
    if (x->partner < 0 && pio_partner_find(x->receiver, 0, &x->partner) != PIO_OK) {
        x->partner = -1;
        x->present = 0;
        return;
    }
    PIO_Appinfo ai;
    int was = x->present;
    x->present = PIO_Getappinfo(x->partner, &ai) == PIO_OK && ai.joined > 0;
    if (x->present && !was) {
        x->ninflight = 0; /* a new receiver: nothing of ours is in flight there */
        x->mode_known = 0;
        x->have_grant = 0;
    }
}

static void sleep_ms(double ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1000),
                          (long)((ms - (double)(time_t)(ms / 1000) * 1000) * 1e6)};
    nanosleep(&ts, NULL);
}

static int take_acks_now(struct pio_feed *x, int timeout);

/* Take the ACKs that came (wait up to timeout ms for the first). Returns 1
 * when one came. Never returns early without one: a receive that fails at
 * once (the receiver going away) must not make the callers spin. */
static int take_acks(struct pio_feed *x, int timeout)
{
    double t0 = now_s();
    int got = take_acks_now(x, timeout);
    if (!got)
        sleep_ms(timeout - (now_s() - t0) * 1000);
    return got;
}

static int take_acks_now(struct pio_feed *x, int timeout)
{
    int got = 0;
    if (x->partner < 0)
        return 0;
    for (;;) {
        uint8_t buf[VIZ_CTL_SIZE];
        PIO_Status st;
        int rc = PIO_Recv(x->partner, PIO_ANY_PROCESS, VIZ_TAG_CTL, buf, PIO_BYTE, sizeof(buf),
                          got ? 0 : timeout, PIO_BLOCKING, &st);
        if (rc == PIO_ETRUNC) { /* not ours to understand: take it out of the way */
            uint8_t junk[256];
            if (st.bytes > sizeof(junk) ||
                PIO_Recv(x->partner, PIO_ANY_PROCESS, VIZ_TAG_CTL, junk, PIO_BYTE, sizeof(junk), 0,
                         PIO_BLOCKING, NULL) != PIO_OK)
                return got;
            continue;
        }
        if (rc != PIO_OK)
            return got;
        struct viz_ctl c;
        if (viz_ctl_decode(buf, st.bytes, &c) != 0)
            continue;
        got = 1;
        x->mode_known = 1;
        x->lossless = (c.flags & VIZ_CTL_LOSSLESS) != 0;
        if (!x->lossless && c.next && (!x->have_grant || c.next > x->grant)) {
            x->grant = c.next;
            x->have_grant = 1;
        }
        x->window = c.window > WINDOW_MAX ? WINDOW_MAX : (int)c.window;
        if (c.flags & VIZ_CTL_GRANT)
            continue; /* a step named early: nothing settled */
        x->info.steps_acked++;
        /* everything up to that step is settled */
        int k = 0;
        while (k < x->ninflight && x->inflight[k] <= c.step)
            k++;
        memmove(x->inflight, x->inflight + k, sizeof(uint64_t) * (size_t)(x->ninflight - k));
        x->ninflight -= k;
        timeout = 0;
    }
}

int PIO_Feed_begin_step(PIO_Feed x, uint64_t step, double time)
{
    if (!x || x->in_step || (x->any_step && step <= x->last_step))
        return PIO_EINVAL;
    x->in_step = 1;
    x->step = step;
    x->d.step = step;
    x->d.time = time;
    x->npieces = 0; /* seq goes on counting: data tags differ from step to step */
    take_acks(x, 0);
    look(x, 0);
    double t0 = now_s();
    /* a receiver that just appeared: its first ACK says whether it wants
     * every step; until then only one step is sent (waiting up to
     * MODE_WAIT_S for that ACK, once per appearance) */
    while (x->present && !x->mode_known && x->ninflight >= 1 && now_s() - t0 < MODE_WAIT_S) {
        if (!take_acks(x, 200))
            look(x, 0);
    }
    while (x->present && x->lossless && x->ninflight >= x->window) {
        /* a receiver that loses no step holds us back; still make sure it
         * is there (a receiver that left must not stop the simulation) */
        if (!take_acks(x, 200))
            look(x, 0);
    }
    x->info.wait_seconds += now_s() - t0;
    if (!x->mode_known) /* a probe: one step until the receiver says what it wants */
        x->send = x->present && x->ninflight < 1;
    else if (x->lossless)
        x->send = x->present && x->ninflight < x->window;
    else /* only the step the receiver named, so that every rank sends the same */
        x->send = x->present && x->have_grant && step >= x->grant && x->ninflight < x->window;
    if (x->send && !x->lossless)
        x->have_grant = 0;
    x->info.receiver_present = x->present;
    x->info.lossless = x->lossless;
    x->info.window = x->window;
    return PIO_OK;
}

/* a send failed: the receiver is gone (or going); skip the rest of the step */
static void lost(struct pio_feed *x)
{
    x->send = 0;
    x->present = 0;
    x->ninflight = 0;
    x->last_look = now_s();
}

static int send_desc(struct pio_feed *x, uint32_t kind)
{
    uint8_t buf[VIZ_DESC_MAX];
    x->d.kind = kind;
    x->d.msgno = x->msgno;
    size_t n = viz_desc_encode(&x->d, buf);
    int rc = PIO_Send(x->partner, 0, VIZ_TAG_DESC, PIO_DYNAMIC, buf, PIO_BYTE, n, PIO_BLOCKING);
    if (rc == PIO_OK)
        x->msgno++;
    return rc;
}

int PIO_Feed_put(PIO_Feed x, int fidx, const uint64_t start[3], const uint64_t count[3],
                 const void *data)
{
    if (!x || !x->in_step || fidx < 0 || (uint32_t)fidx >= x->d.nfields || !start || !count)
        return PIO_EINVAL;
    uint64_t n = 1;
    for (int i = 0; i < 3; i++) {
        if (start[i] >= x->d.grid.dims[i] || count[i] == 0 ||
            count[i] > x->d.grid.dims[i] - start[i])
            return PIO_EINVAL;
        n *= count[i];
    }
    if (!data)
        return PIO_EINVAL;
    if (!x->send)
        return PIO_OK;
    x->d.fidx = (uint32_t)fidx;
    memcpy(x->d.start, start, sizeof(x->d.start));
    memcpy(x->d.count, count, sizeof(x->d.count));
    x->d.seq = x->seq;
    int rc = send_desc(x, VIZ_PIECE);
    if (rc == PIO_OK)
        rc = PIO_Send(x->partner, 0, VIZ_TAG_DATA + (int)x->seq, PIO_DYNAMIC, data,
                      x->d.field[fidx].type, (size_t)n, PIO_BLOCKING);
    if (rc != PIO_OK) {
        lost(x);
        return PIO_OK;
    }
    x->seq = (x->seq + 1) % VIZ_SEQ_MOD;
    x->npieces++;
    x->info.bytes_sent += n * viz_elem_size(x->d.field[fidx].type);
    return PIO_OK;
}

int PIO_Feed_end_step(PIO_Feed x)
{
    if (!x || !x->in_step)
        return PIO_EINVAL;
    x->in_step = 0;
    x->any_step = 1;
    x->last_step = x->step;
    if (x->send) {
        x->d.npieces = x->npieces;
        if (send_desc(x, VIZ_END) != PIO_OK) {
            lost(x);
        } else {
            if (x->ninflight == WINDOW_MAX) { /* cannot happen: window <= WINDOW_MAX */
                memmove(x->inflight, x->inflight + 1, sizeof(uint64_t) * (WINDOW_MAX - 1));
                x->ninflight--;
            }
            x->inflight[x->ninflight++] = x->step;
            x->info.steps_sent++;
            return PIO_OK;
        }
    }
    x->info.steps_skipped++;
    return PIO_OK;
}

int PIO_Feed_info(PIO_Feed x, PIO_Feedinfo *info)
{
    if (!x || !info)
        return PIO_EINVAL;
    *info = x->info;
    return PIO_OK;
}

int PIO_Feed_close(PIO_Feed x)
{
    if (!x)
        return PIO_EINVAL;
    if (x->present && x->partner >= 0) {
        x->d.step = x->last_step;
        send_desc(x, VIZ_BYE); /* the receiver may forget this rank's partial steps */
    }
    free(x);
    return PIO_OK;
}
