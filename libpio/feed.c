/* feed.c - the simulation's side of a visualization feed (PIO_Feed_*, pio.h).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A client of the receiver (pio-vizd) in the protocol of viz_proto.h, built
 * into libpio and using only the public API (plus pio_partner_find, to look
 * for the receiver without waiting). Per step:
 *   begin  - read the ACKs and plans that came (never waiting); look for the
 *            receiver when it was absent (at most every PRESENCE_MS). A
 *            receiver that just appeared is asked what it wants (HELLO; its
 *            INFO answer comes within milliseconds, waited for once, up to
 *            MODE_WAIT_S or $PIO_FEED_WAIT: longer than a link's recovery,
 *            see there). A lossless receiver gets every step: begin waits
 *            while `window` steps are unacknowledged (checking every
 *            PRESENCE_MS that the receiver is still there). A newest-only
 *            receiver gets the steps process 0 plans: when fewer than
 *            `window` planned steps are unacknowledged, process 0 names step
 *            + lead and tells the other processes through their own piod
 *            (the application is its own partner, VIZ_TAG_PLAN). Every
 *            process sends exactly the planned steps, so they agree without
 *            waiting for each other; a process that got a plan only after
 *            passing its step says SKIP, the receiver drops that step at
 *            once, and process 0 plans further ahead (lead doubles, up to
 *            LEAD_MAX).
 *   put    - a PIECE desc, then the block as one typed message (DYNAMIC).
 *   end    - an END desc with the number of pieces.
 * A send that fails (the receiver left) skips the rest of the step; the
 * receiver throws away steps it did not get whole, so a step some process
 * did not send costs that step, never a wrong picture. Nothing here holds a
 * libpio lock.
 */
#include "pio.h"
#include "err.h"
#include "partner.h"
#include "wire/viz_proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PRESENCE_MS    1000
#define WINDOW_DEFAULT 2
#define WINDOW_MAX     64
#define LEAD_START     2  /* steps ahead process 0 plans */
#define LEAD_MAX       32 /* ... at most, after plans came too late */
#define PLANS_MAX      WINDOW_MAX
/* No ACK for this long with steps in flight: ask the receiver again (HELLO).
 * One that answers NEW was started since they were sent (killed and started
 * again between two looks for it, so it never seemed absent): none of them
 * will be acknowledged, and waiting for them would hold the simulation back
 * for good. */
#define STALL_S 2.0

/* How long the first step waits for the receiver's INFO. Normally it comes
 * in milliseconds; but a HELLO or an INFO caught on a link that was just
 * cut waits for the link: a piod needs a few seconds to see a channel die
 * and send again on the others, and a small message caught in a TCP
 * connection on the cut link goes only when TCP retransmits after the link
 * is back (its back-off reaches 6 s and more). A feed that gave up earlier
 * skipped every step of a lossless receiver until the answer came (the
 * soak: 5 s, all 12 steps skipped). So the wait is the piods' default
 * link-timeout (30 s): beyond it the piod gives the peer up and the receiver
 * shows as gone, which ends the wait at once anyway ($PIO_FEED_WAIT, in
 * seconds, sets it). */
#define MODE_WAIT_S 30.0

struct pio_feed {
    char receiver[PIO_NAME_MAX];
    int partner;       /* -1 until found */
    int self;          /* this application as a partner (plans); -1: one process */
    int present;       /* joined at the last look */
    double last_look;  /* when we last asked for the receiver */
    struct viz_desc d; /* the feed's description; per message fields set */
    int in_step, send; /* a step is begun; it is being sent */
    uint64_t step, last_step;
    int any_step;
    uint32_t seq, npieces, msgno;
    /* lossless: steps sent and not acknowledged; newest-only (process 0):
     * steps planned and not acknowledged; oldest first */
    uint64_t inflight[WINDOW_MAX];
    int ninflight;
    int lossless, window;
    int mode_known;                /* an INFO or ACK came from this receiver */
    int asked;                     /* HELLO sent to this receiver */
    double last_heard, last_hello; /* the last ACK or INFO; the last HELLO */
    double mode_wait;              /* seconds the first step waits for the INFO */
    /* newest-only: the planned steps this process has not reached yet */
    uint64_t plan[PLANS_MAX];
    int nplans;
    int lead;                       /* process 0: steps ahead it plans */
    uint64_t step_bytes, cur_bytes; /* this process's bytes in its last sent step, this one */
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
    const char *mw = getenv("PIO_FEED_WAIT");
    double mode_wait = mw && *mw && atof(mw) > 0 ? atof(mw) : MODE_WAIT_S;
    /* our own application, known to our piod since PIO_Init: answered as
     * soon as the piod reads the look-up. But a piod whose express lane to
     * a peer is full (a cut link) reads none of its processes until the
     * lane drains, which takes the link's recovery: the same wait as for
     * the receiver's INFO (the soak: a 2 s wait failed one run in 257). */
    int self = -1;
    if (me.nprocs > 1 && (rc = pio_partner_find(me.name, (int)(mode_wait * 1000), &self)) != PIO_OK)
        return rc;
    struct pio_feed *x = calloc(1, sizeof(*x));
    if (!x)
        return PIO_ENOMEM;
    snprintf(x->receiver, sizeof(x->receiver), "%s", receiver);
    x->partner = -1;
    x->self = self;
    x->last_look = -1e9;
    x->window = WINDOW_DEFAULT;
    x->mode_wait = mode_wait;
    x->lead = me.nprocs > 1 ? LEAD_START : 0;
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
        x->asked = 0;
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

/* Receive one small control message (viz_ctl) from partner/process with tag,
 * waiting up to timeout ms. Returns 1 with *c filled, 0 when none. A message
 * of another size is taken out of the way. */
static int take_ctl(int partner, int process, int tag, int timeout, struct viz_ctl *c)
{
    for (;;) {
        uint8_t buf[VIZ_CTL_SIZE];
        PIO_Status st;
        int rc =
            PIO_Recv(partner, process, tag, buf, PIO_BYTE, sizeof(buf), timeout, PIO_BLOCKING, &st);
        if (rc == PIO_ETRUNC) { /* not ours to understand */
            uint8_t junk[256];
            if (st.bytes > sizeof(junk) || PIO_Recv(partner, process, tag, junk, PIO_BYTE,
                                                    sizeof(junk), 0, PIO_BLOCKING, NULL) != PIO_OK)
                return 0;
            continue;
        }
        if (rc != PIO_OK)
            return 0;
        if (viz_ctl_decode(buf, st.bytes, c) == 0)
            return 1;
    }
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
    struct viz_ctl c;
    while (x->partner >= 0 && take_ctl(x->partner, PIO_ANY_PROCESS, VIZ_TAG_CTL, timeout, &c)) {
        got = 1;
        timeout = 0;
        x->last_heard = now_s();
        if ((c.flags & VIZ_CTL_INFO) && (c.flags & VIZ_CTL_NEW))
            x->ninflight = 0; /* a receiver that has none of them */
        x->mode_known = 1;
        x->lossless = (c.flags & VIZ_CTL_LOSSLESS) != 0;
        x->window = c.window > WINDOW_MAX ? WINDOW_MAX : (int)c.window;
        if (c.flags & VIZ_CTL_INFO)
            continue; /* the answer to our HELLO: nothing settled */
        x->info.steps_acked++;
        if ((c.flags & VIZ_CTL_DROPPED) && !x->lossless && x->d.rank == 0 && x->lead < LEAD_MAX)
            x->lead *= 2; /* maybe a plan came too late somewhere: plan further ahead */
        /* everything up to that step is settled */
        int k = 0;
        while (k < x->ninflight && x->inflight[k] <= c.step)
            k++;
        memmove(x->inflight, x->inflight + k, sizeof(uint64_t) * (size_t)(x->ninflight - k));
        x->ninflight -= k;
    }
    return got;
}

/* Take the plans process 0 sent (never waiting). */
static void take_plans(struct pio_feed *x)
{
    struct viz_ctl c;
    while (x->self >= 0 && x->d.rank != 0 && take_ctl(x->self, 0, VIZ_TAG_PLAN, 0, &c))
        if ((c.flags & VIZ_CTL_PLAN) && x->nplans < PLANS_MAX &&
            (x->nplans == 0 || c.step > x->plan[x->nplans - 1]))
            x->plan[x->nplans++] = c.step;
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

/* a send failed: the receiver is gone (or going); skip the rest of the step */
static void lost(struct pio_feed *x)
{
    x->send = 0;
    x->present = 0;
    x->ninflight = 0;
    x->last_look = now_s();
}

/* Steps in flight and nothing heard for STALL_S: ask again (see there). */
static void stall_check(struct pio_feed *x)
{
    double t = now_s();
    if (!x->present || !x->mode_known || x->ninflight == 0 || t - x->last_heard < STALL_S ||
        t - x->last_hello < STALL_S)
        return;
    x->last_hello = t;
    if (send_desc(x, VIZ_HELLO) != PIO_OK)
        lost(x);
}

/* Process 0, newest-only: plan a step when fewer than `window` are in
 * flight, and tell the other processes. */
static void make_plan(struct pio_feed *x, uint64_t step)
{
    if (x->ninflight >= x->window || x->nplans >= PLANS_MAX)
        return;
    /* one more step in flight must fit in the pool's send region, or the
     * sends would wait for the piod (a step larger than that goes alone) */
    uint64_t room, total;
    if (x->ninflight > 0 && x->step_bytes && pio_send_room(&room, &total) == PIO_OK &&
        (uint64_t)(x->ninflight + 1) * x->step_bytes > total)
        return;
    uint64_t p = step + (uint64_t)x->lead;
    if (x->nplans > 0 && p <= x->plan[x->nplans - 1])
        p = x->plan[x->nplans - 1] + 1;
    struct viz_ctl c = {p, VIZ_CTL_PLAN, (uint32_t)x->window};
    uint8_t buf[VIZ_CTL_SIZE];
    viz_ctl_encode(&c, buf);
    for (uint32_t r = 1; r < x->d.nranks; r++) /* a process that left: nothing to tell */
        PIO_Send(x->self, (int)r, VIZ_TAG_PLAN, PIO_DYNAMIC, buf, PIO_BYTE, sizeof(buf),
                 PIO_BLOCKING);
    x->plan[x->nplans++] = p;
    x->inflight[x->ninflight++] = p;
}

/* Is step planned (and is there room in the pool for it)? Drops the plans
 * it passed, telling the receiver (SKIP). can_hit 0: step is already past,
 * every plan up to it came too late. */
static int planned(struct pio_feed *x, uint64_t step, int can_hit)
{
    int k = 0, hit = 0;
    while (k < x->nplans && x->plan[k] <= step) {
        uint64_t room, total;
        if (can_hit && x->plan[k] == step &&
            (!x->step_bytes || pio_send_room(&room, &total) != PIO_OK || room >= x->step_bytes)) {
            hit = 1;
        } else if (x->present) {
            uint64_t keep = x->d.step;
            x->d.step = x->plan[k];
            if (send_desc(x, VIZ_SKIP) != PIO_OK)
                lost(x);
            x->d.step = keep;
            x->info.plans_missed++;
        }
        k++;
    }
    memmove(x->plan, x->plan + k, sizeof(uint64_t) * (size_t)(x->nplans - k));
    x->nplans -= k;
    return hit;
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
    x->cur_bytes = 0;
    take_acks(x, 0);
    take_plans(x);
    /* a plan says process 0 sees the receiver: look now if we do not */
    look(x, x->nplans > 0 && !x->present);
    double t0 = now_s();
    if (x->present && !x->mode_known && !x->asked) { /* a receiver that just appeared */
        x->asked = 1;
        if (send_desc(x, VIZ_HELLO) != PIO_OK)
            lost(x);
        while (x->present && !x->mode_known && now_s() - t0 < x->mode_wait)
            if (!take_acks(x, 200))
                look(x, 0);
    }
    while (x->present && x->mode_known && x->lossless && x->ninflight >= x->window) {
        /* a receiver that loses no step holds us back; still make sure it
         * is there (a receiver that left must not stop the simulation) */
        if (!take_acks(x, 200)) {
            look(x, 0);
            stall_check(x);
        }
    }
    x->info.wait_seconds += now_s() - t0;
    if (!x->present || (!x->mode_known && x->nplans == 0)) {
        x->send = 0;
    } else if (x->mode_known && x->lossless) {
        x->send = x->ninflight < x->window;
    } else { /* newest-only: only the steps process 0 planned */
        if (x->d.rank == 0 && x->mode_known) {
            stall_check(x);
            make_plan(x, step);
        }
        x->send = planned(x, step, 1) && x->present;
    }
    x->info.receiver_present = x->present;
    x->info.lossless = x->lossless;
    x->info.window = x->window;
    return PIO_OK;
}

int PIO_Feed_sending(PIO_Feed x)
{
    return x && x->in_step && x->send;
}
/* The puts: mem_dims / mem_off NULL for a packed block. */
static int put(PIO_Feed x, int fidx, const uint64_t start[3], const uint64_t count[3],
               const void *data, const uint64_t mem_dims[3], const uint64_t mem_off[3])
{
    if (!x || !x->in_step || fidx < 0 || (uint32_t)fidx >= x->d.nfields || !start || !count)
        return PIO_EINVAL;
    uint64_t n = 1;
    for (int i = 0; i < 3; i++) {
        if (start[i] >= x->d.grid.dims[i] || count[i] == 0 ||
            count[i] > x->d.grid.dims[i] - start[i])
            return PIO_EINVAL;
        if (mem_dims && (mem_off[i] > mem_dims[i] || count[i] > mem_dims[i] - mem_off[i]))
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
    int type = x->d.field[fidx].type, tag = VIZ_TAG_DATA + (int)x->seq;
    int rc = send_desc(x, VIZ_PIECE);
    if (rc == PIO_OK)
        rc = mem_dims
                 ? pio_send_sub(x->partner, 0, tag, PIO_DYNAMIC, data, type, mem_dims, mem_off,
                                count)
                 : PIO_Send(x->partner, 0, tag, PIO_DYNAMIC, data, type, (size_t)n, PIO_BLOCKING);
    if (rc != PIO_OK) {
        lost(x);
        return PIO_OK;
    }
    x->seq = (x->seq + 1) % VIZ_SEQ_MOD;
    x->npieces++;
    x->info.bytes_sent += n * viz_elem_size(type);
    x->cur_bytes += n * viz_elem_size(type);
    return PIO_OK;
}

int PIO_Feed_put(PIO_Feed x, int fidx, const uint64_t start[3], const uint64_t count[3],
                 const void *data)
{
    return put(x, fidx, start, count, data, NULL, NULL);
}

int PIO_Feed_put_sub(PIO_Feed x, int fidx, const uint64_t start[3], const uint64_t count[3],
                     const void *data, const uint64_t mem_dims[3], const uint64_t mem_off[3])
{
    if (!mem_dims || !mem_off)
        return PIO_EINVAL;
    return put(x, fidx, start, count, data, mem_dims, mem_off);
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
            x->step_bytes = x->cur_bytes;
            if (x->lossless || !x->mode_known) {  /* newest-only: counted when planned */
                if (x->ninflight == WINDOW_MAX) { /* cannot happen: window <= WINDOW_MAX */
                    memmove(x->inflight, x->inflight + 1, sizeof(uint64_t) * (WINDOW_MAX - 1));
                    x->ninflight--;
                }
                x->inflight[x->ninflight++] = x->step;
            }
            x->info.steps_sent++;
            return PIO_OK;
        }
    }
    x->info.steps_skipped++;
    return PIO_OK;
}

/* Between steps: plans that came after this process passed their step
 * (the plan for one of the run's last steps may come after the last one)
 * are misses; the receiver hears SKIP now instead of holding the step until
 * this process leaves. */
static void settle_plans(struct pio_feed *x)
{
    if (x->in_step || !x->any_step || x->lossless)
        return;
    take_plans(x);
    planned(x, x->last_step, 0);
}

int PIO_Feed_info(PIO_Feed x, PIO_Feedinfo *info)
{
    if (!x || !info)
        return PIO_EINVAL;
    settle_plans(x);
    *info = x->info;
    return PIO_OK;
}

int PIO_Feed_close(PIO_Feed x)
{
    if (!x)
        return PIO_EINVAL;
    settle_plans(x);
    if (x->present && x->partner >= 0) {
        x->d.step = x->last_step;
        send_desc(x, VIZ_BYE); /* the receiver may forget this rank's partial steps */
    }
    free(x);
    return PIO_OK;
}
