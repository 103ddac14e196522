// vizd.cpp - pio-vizd: receives a simulation's visualization feed, assembles
// each step, and hands complete steps to its outputs.
// SPDX-License-Identifier: BSD-3-Clause
//
// A PIO application (process 0 of 1, default name "vizd") with --threads
// receiving threads. Each takes the next piece descriptor from any process
// of the simulation (viz_proto.h), then that piece's data, and copies it
// into the step's fields. All assembly state is under one mutex (G); the
// data itself is received with no lock held.
//
// A step is complete when every rank sent its END, all the pieces it named
// arrived and every field's pieces add up to the whole grid. A step is
// dropped when it can no longer complete: every rank that has not finished
// it has finished a later step (ranks send steps in order) and has no piece
// of it still being received, or a rank said SKIP (the plan of a newest-only
// feed reached it too late). A HELLO is answered (INFO, to that rank) with
// what we want: every step or the newest. Each outcome is acknowledged to every rank
// (the ACK also says whether some output wants every step, and the window).
//
// Memory: a step's buffers are counted from the first piece until the last
// output lets go of it. Before a new step is allocated, the limit is
// checked: with an archive output the receiving thread waits (so the
// simulation is held back, through its window); without one the new step is
// dropped. Late joiners learn everything from the first descriptor; a new
// simulation (another name, grid or field list) resets the assembly.
#include "cli.h"
#include "cli_json.h"
#include "memtrim.h"
#include "outputs.h"
#include "sdnotify.h"
#include "vizd.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <getopt.h>
#include <map>
#include <sstream>
#include <unistd.h>

namespace vizd
{

double now()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// ---- Hub --------------------------------------------------------------------

void Hub::add(std::unique_ptr<Output> out, int delay_ms)
{
    auto s = std::make_unique<Slot>();
    s->out = std::move(out);
    s->delay_ms = delay_ms;
    slots_.push_back(std::move(s));
}

void Hub::start()
{
    for (auto &s : slots_)
        s->th = std::thread(&Hub::run, this, s.get());
}

bool Hub::lossless() const
{
    for (auto &s : slots_)
        if (s->out->policy() == Policy::ARCHIVE)
            return true;
    return false;
}

void Hub::publish(const StepPtr &st)
{
    std::lock_guard<std::mutex> l(mtx_);
    for (auto &s : slots_) {
        if (s->out->policy() == Policy::LIVE) {
            s->skipped += s->q.size();
            s->q.clear();
        }
        s->q.push_back(st);
    }
    cv_.notify_all();
}

void Hub::run(Slot *s)
{
    std::unique_lock<std::mutex> l(mtx_);
    for (;;) {
        cv_.wait(l, [&] { return stopping_ || !s->q.empty(); });
        if (s->q.empty())
            return; // stopping, and nothing left
        StepPtr st = s->q.front();
        s->q.pop_front();
        l.unlock();
        if (s->delay_ms > 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(s->delay_ms));
        bool ok = s->out->consume(st);
        std::vector<std::string> paths = s->out->last_paths();
        if (on_done && ok)
            on_done(s->out->name(), *st, paths);
        l.lock();
        ok ? s->done++ : s->failed++;
        s->last_step = st->step;
        s->last_paths = paths;
        l.unlock();
        st.reset(); // may free the step's memory: not under our lock
        l.lock();
    }
}

void Hub::stop()
{
    {
        std::lock_guard<std::mutex> l(mtx_);
        stopping_ = true;
    }
    cv_.notify_all();
    for (auto &s : slots_)
        if (s->th.joinable())
            s->th.join();
}

size_t Hub::queue_depth() const
{
    std::lock_guard<std::mutex> l(mtx_);
    size_t n = 0;
    for (auto &s : slots_)
        n = std::max(n, s->q.size());
    return n;
}

std::vector<Hub::OutInfo> Hub::info() const
{
    std::lock_guard<std::mutex> l(mtx_);
    std::vector<OutInfo> v;
    for (auto &s : slots_)
        v.push_back({s->out->name(), s->out->policy(), s->done, s->skipped, s->failed, s->last_step,
                     s->last_paths});
    return v;
}

} // namespace vizd

using namespace vizd;

namespace
{

struct Options {
    std::string app = "vizd";
    int threads = 2, window = 2;
    uint64_t memory_mb = 1024;
    std::string archive, archive_name = "step";
    int archive_delay = 0, png_delay = 0;
    PngOptions png;
    int http = 0;
    std::string pub, status_file;
    uint64_t max_steps = 0; // exit after this many complete steps (0: run)
};

Options opt;
Stats stats;
Hub *hub;
// spare field buffers (new_step, below)
constexpr size_t SPARE_MAX = 8;
std::mutex spare_mtx;
std::vector<std::vector<uint8_t>> spare; // under spare_mtx
uint64_t spare_bytes = 0;                // under spare_mtx
void drop_spares();
// set by a signal and by the receiving threads, read by all: lock-free, so
// signal-safe (a volatile sig_atomic_t was a data race between threads)
std::atomic<int> stop_flag{0};
static_assert(std::atomic<int>::is_always_lock_free, "stop_flag must be signal-safe");

void on_signal(int)
{
    stop_flag = 1;
}

// ---- assembly (all under G) -------------------------------------------------

struct Assembly {
    std::shared_ptr<Step> st; // null: dropped (pieces are received and thrown away)
    std::vector<int64_t> end; // per rank: pieces named by its END, -1 before
    std::vector<uint32_t> got;
    std::vector<uint64_t> points; // per field
    bool skipped = false;         // a rank said it will not send this step
};

struct FeedState {
    std::string app;
    int partner = -1;
    viz_desc d{}; // grid, fields, nranks of the current simulation
    std::map<uint64_t, Assembly> steps;
    std::vector<int64_t> done;      // per rank: newest step it finished (END + pieces), -1
    std::vector<uint32_t> inprog;   // per rank: pieces taken, not yet stored
    std::vector<uint64_t> newest;   // per rank: newest step seen
    std::vector<int64_t> expect;    // per rank: msgno of the next desc to handle, -1
    std::vector<int64_t> first;     // per rank, joined late: the lowest msgno seen, -1
    std::vector<uint32_t> session;  // per rank: its feed's session (0: not seen yet)
    int64_t resolved = -1;          // newest step completed or dropped
    std::deque<double> completions; // times of recent completions (rate)
    uint64_t last_complete = 0;
    double t_first = 0, t_last = 0;          // first and last completion (monotonic seconds)
    double t_start = 0;                      // the first step's first piece
    uint64_t bytes_base = 0, bytes_last = 0; // stats.bytes at the feed's start, last completion
};

std::mutex G;
FeedState F;
std::condition_variable mem_cv, order_cv;

// Wait (G held) until desc d is the next of its rank: threads take descs in
// any order, a rank's must be handled in the order sent. A gap that stays
// (a desc lost when a send failed) is skipped after ORDER_WAIT seconds.
// Returns false for a desc older than the rank's next (ignored).
constexpr double ORDER_WAIT = 2.0;
bool in_order(std::unique_lock<std::mutex> &l, const viz_desc &d)
{
    double t0 = now();
    for (;;) {
        int64_t &e = F.expect[d.rank];
        if (e == (int64_t)d.msgno || (e < 0 && d.msgno == 0))
            return true;
        if (e < 0) { // joined late: the lowest number the threads hold in a moment starts
            int64_t &c = F.first[d.rank];
            if (c < 0 || (int64_t)d.msgno < c)
                c = d.msgno;
            if (now() - t0 > 0.3)
                e = c;
            else
                order_cv.wait_for(l, std::chrono::milliseconds(20));
            continue;
        }
        if ((int64_t)d.msgno < e)
            return false;
        if (now() - t0 > ORDER_WAIT || stop_flag) {
            fprintf(stderr, "pio-vizd: rank %u: descriptors %lld..%u never came: skipped\n", d.rank,
                    (long long)e, d.msgno - 1);
            return true;
        }
        order_cv.wait_for(l, std::chrono::milliseconds(50));
    }
}

// d handled (G held): let the rank's next desc go.
void handled(const viz_desc &d)
{
    F.expect[d.rank] = (int64_t)d.msgno + 1;
    order_cv.notify_all();
}

struct Ack {
    uint64_t step;
    uint32_t flags;
    int rank; // -1: every rank of the simulation
};

bool same_feed(const viz_desc &a, const viz_desc &b)
{
    if (strcmp(a.app, b.app) || a.nranks != b.nranks || a.nfields != b.nfields ||
        memcmp(a.grid.dims, b.grid.dims, sizeof(a.grid.dims)))
        return false;
    for (uint32_t f = 0; f < a.nfields; f++)
        if (strcmp(a.field[f].name, b.field[f].name) || a.field[f].type != b.field[f].type)
            return false;
    return true;
}

uint64_t grid_points(const viz_grid &g)
{
    return g.dims[0] * g.dims[1] * g.dims[2];
}

uint64_t step_bytes(const viz_desc &d)
{
    uint64_t n = 0;
    for (uint32_t f = 0; f < d.nfields; f++)
        n += grid_points(d.grid) * viz_elem_size(d.field[f].type);
    return n;
}

// A new simulation (or the first): forget everything of the old one.
void reset_feed(const viz_desc &d)
{
    if (!F.app.empty())
        fprintf(stderr, "pio-vizd: a new feed from %s (%u processes, %llux%llux%llu, %u fields)\n",
                d.app, d.nranks, (unsigned long long)d.grid.dims[0],
                (unsigned long long)d.grid.dims[1], (unsigned long long)d.grid.dims[2], d.nfields);
    stats.steps_dropped += F.steps.size();
    F.steps.clear();
    drop_spares(); // another grid or field list: other sizes
    F.app = d.app;
    F.partner = -1;
    F.d = d;
    F.done.assign(d.nranks, -1);
    F.inprog.assign(d.nranks, 0);
    F.newest.assign(d.nranks, 0);
    F.expect.assign(d.nranks, -1);
    F.first.assign(d.nranks, -1);
    F.session.assign(d.nranks, 0);
    F.resolved = -1;
    F.t_start = F.t_first = F.t_last = 0;
    F.bytes_base = F.bytes_last = stats.bytes;
}

// Spare field buffers: a finished step's buffers, kept for the next step of
// the feed. A new one of a 128^3 step's 25 MB is mmap'd by glibc, zero-filled
// and faulted in page by page (a page fault costs some 20 us on the 2-core
// test VM): that was three quarters of pio-vizd's CPU, every step. At most
// SPARE_MAX buffers, and only while they fit in the memory limit beside the
// steps held; emptied for a new feed (reset_feed). A recycled buffer holds an
// older step of the same feed until its pieces overwrite it; a step is only
// complete when its pieces add up to the whole grid. Lock order: G, then
// spare_mtx (the step's deleter runs under either or none, and takes
// spare_mtx only). They are defined before F, whose steps' deleters use
// them when it is destroyed at exit.

std::vector<uint8_t> take_buffer(size_t n)
{
    {
        std::lock_guard<std::mutex> l(spare_mtx);
        for (auto it = spare.begin(); it != spare.end(); ++it)
            if (it->size() == n) {
                std::vector<uint8_t> v = std::move(*it);
                spare.erase(it);
                spare_bytes -= n;
                return v;
            }
    }
    return std::vector<uint8_t>(n);
}

// a step's buffers, let go (its bytes no longer in mem_used)
void give_buffers(std::vector<Field> &fields)
{
    std::lock_guard<std::mutex> l(spare_mtx);
    for (Field &f : fields)
        if (spare.size() < SPARE_MAX &&
            stats.mem_used + spare_bytes + f.data.size() <= stats.mem_limit) {
            spare_bytes += f.data.size();
            spare.push_back(std::move(f.data));
        }
}

void drop_spares()
{
    std::lock_guard<std::mutex> l(spare_mtx);
    spare.clear();
    spare_bytes = 0;
}

std::shared_ptr<Step> new_step(const viz_desc &d)
{
    uint64_t bytes = step_bytes(d);
    uint64_t used = stats.mem_used += bytes;
    if (used > stats.mem_peak)
        stats.mem_peak = used;
    Step *s = new Step;
    s->step = d.step;
    s->time = d.time;
    s->grid = d.grid;
    s->bytes = bytes;
    for (uint32_t f = 0; f < d.nfields; f++)
        s->fields.push_back({d.field[f].name, d.field[f].type,
                             take_buffer(grid_points(d.grid) * viz_elem_size(d.field[f].type))});
    return std::shared_ptr<Step>(s, [](Step *p) {
        stats.mem_used -= p->bytes;
        give_buffers(p->fields);
        delete p;
        mem_cv.notify_all();
    });
}

// The assembly of step d.step, created (with buffers, or dropped when there
// is no room and nothing waits for every step). Returns null for a step
// already resolved. May wait for memory (lock l released meanwhile). For a
Assembly *assembly(std::unique_lock<std::mutex> &l, const viz_desc &d)
{
    for (;;) {
        auto it = F.steps.find(d.step);
        if (it != F.steps.end())
            return &it->second;
        if ((int64_t)d.step <= F.resolved)
            return nullptr;
        uint64_t bytes = step_bytes(d);
        bool fits = stats.mem_used + bytes <= stats.mem_limit;
        if (!fits && hub->lossless() && bytes <= stats.mem_limit && !stop_flag) {
            mem_cv.wait_for(l, std::chrono::milliseconds(50)); // held back: the sim waits
            continue;
        }
        if (F.t_start == 0)
            F.t_start = now();
        Assembly a;
        a.end.assign(d.nranks, -1);
        a.got.assign(d.nranks, 0);
        a.points.assign(d.nfields, 0);
        if (fits)
            a.st = new_step(d);
        stats.steps_seen++;
        return &F.steps.emplace(d.step, std::move(a)).first->second;
    }
}

// Resolve what can be, oldest first: complete steps go out, hopeless ones
// are dropped; a step that may still complete holds the later ones back, so
// outputs get steps in order. Acks to send (outside G) are added to acks.
void resolve(std::vector<Ack> &acks, uint32_t lossless)
{
    uint64_t total = grid_points(F.d.grid);
    for (auto it = F.steps.begin(); it != F.steps.end();) {
        Assembly &a = it->second;
        uint64_t step = it->first;
        bool complete = a.st != nullptr && !a.skipped, hopeless = true;
        for (uint32_t r = 0; r < F.d.nranks; r++) {
            bool rdone = a.end[r] >= 0 && a.got[r] == (uint64_t)a.end[r];
            complete &= rdone;
            if (!rdone && !a.skipped && !(F.done[r] > (int64_t)step && F.inprog[r] == 0))
                hopeless = false;
        }
        for (uint32_t f = 0; complete && f < F.d.nfields; f++)
            complete = a.points[f] == total;
        if (complete) {
            a.st->t_complete = now();
            stats.steps_complete++;
            F.completions.push_back(a.st->t_complete);
            while (F.completions.size() > 1 && F.completions.front() < a.st->t_complete - 5)
                F.completions.pop_front();
            F.last_complete = step;
            if (F.t_first == 0)
                F.t_first = a.st->t_complete;
            F.t_last = a.st->t_complete;
            F.bytes_last = stats.bytes;
            hub->publish(a.st);
            acks.push_back({step, lossless, -1});
        } else if (hopeless) {
            stats.steps_dropped++;
            if (getenv("PIO_VIZD_DEBUG")) {
                fprintf(stderr, "pio-vizd: step %llu dropped:", (unsigned long long)step);
                for (uint32_t r = 0; r < F.d.nranks; r++)
                    fprintf(stderr, " r%u end %lld got %u done %lld;", r, (long long)a.end[r],
                            a.got[r], (long long)F.done[r]);
                fprintf(stderr, "\n");
            }
            acks.push_back({step, lossless | VIZ_CTL_DROPPED, -1});
        } else {
            break; // steps go out in order: later ones wait for this one
        }
        F.resolved = std::max(F.resolved, (int64_t)step);
        it = F.steps.erase(it); // frees a dropped step's buffers (no lock of the deleter's)
    }
}

void send_acks(const std::vector<Ack> &acks, int partner, uint32_t nranks)
{
    for (const Ack &a : acks) {
        viz_ctl c{a.step, a.flags, (uint32_t)opt.window};
        uint8_t buf[VIZ_CTL_SIZE];
        viz_ctl_encode(&c, buf);
        for (uint32_t r = a.rank < 0 ? 0 : (uint32_t)a.rank;
             r < (a.rank < 0 ? nranks : (uint32_t)a.rank + 1); r++) {
            int rc = PIO_Send(partner, (int)r, VIZ_TAG_CTL, PIO_DYNAMIC, buf, PIO_BYTE, sizeof(buf),
                              PIO_BLOCKING); // a rank that left: nothing to tell
            if (rc != PIO_OK && getenv("PIO_VIZD_DEBUG"))
                fprintf(stderr, "pio-vizd: ack of step %llu to rank %u: %s\n",
                        (unsigned long long)a.step, r, PIO_Strerror(rc));
        }
    }
}

// Copy a piece (packed, x fastest) into the step's field.
void store(Step &s, const viz_desc &d, const uint8_t *src)
{
    Field &f = s.fields[d.fidx];
    size_t es = viz_elem_size(f.type), row = (size_t)d.count[0] * es;
    const uint64_t *g = s.grid.dims;
    for (uint64_t k = 0; k < d.count[2]; k++)
        for (uint64_t j = 0; j < d.count[1]; j++) {
            uint64_t at = ((d.start[2] + k) * g[1] + (d.start[1] + j)) * g[0] + d.start[0];
            memcpy(f.data.data() + at * es, src, row);
            src += row;
        }
}

void receiver(int id)
{
    std::vector<uint8_t> buf(VIZ_DESC_MAX), data;
    bool said_bad = false;
    while (!stop_flag) {
        PIO_Status st;
        int rc = PIO_Recv(PIO_ANY_PARTNER, PIO_ANY_PROCESS, VIZ_TAG_DESC, buf.data(), PIO_BYTE,
                          buf.size(), 500, PIO_BLOCKING, &st);
        if (rc == PIO_ETIMEDOUT)
            continue;
        if (rc == PIO_ETRUNC) { // no descriptor: take it out of the way
            std::vector<uint8_t> junk(std::min<size_t>(st.bytes, 1u << 20) + 1);
            PIO_Recv(PIO_ANY_PARTNER, PIO_ANY_PROCESS, VIZ_TAG_DESC, junk.data(), PIO_BYTE,
                     junk.size(), 0, PIO_BLOCKING, nullptr);
            continue;
        }
        if (rc != PIO_OK) {
            fprintf(stderr, "pio-vizd: thread %d: receiving: %s\n", id, PIO_Strerror(rc));
            if (rc == PIO_ECLOSED || rc == PIO_ENOTINIT) {
                stop_flag = 1;
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            continue;
        }
        viz_desc d;
        if (viz_desc_decode(buf.data(), st.bytes, &d) != 0) {
            if (!said_bad)
                fprintf(stderr, "pio-vizd: a malformed descriptor (%zu bytes) was ignored\n",
                        st.bytes);
            said_bad = true;
            continue;
        }
        // the partner handle of the simulation (to receive its data and to
        // ack); looked up again for a new feed, so that libpio knows the
        // process count of this run of the application, not of an earlier one
        int partner;
        {
            std::lock_guard<std::mutex> l(G);
            partner = F.app == d.app && F.d.nranks == d.nranks ? F.partner : -1;
        }
        if (partner < 0) {
            PIO_Appinfo ai;
            for (int i = 0; i < 50; i++) {
                if (PIO_Addpartner(d.app, &partner) == PIO_OK &&
                    PIO_Getappinfo(partner, &ai) == PIO_OK && ai.nprocs == (int)d.nranks)
                    break;
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            }
            if (partner < 0)
                continue;
        }
        std::vector<Ack> acks;
        uint32_t lossless = hub->lossless() ? VIZ_CTL_LOSSLESS : 0;
        std::unique_lock<std::mutex> l(G);
        // another simulation, or a rank of a new run of it: start afresh
        if (F.app.empty() || !same_feed(F.d, d) ||
            (F.session[d.rank] && F.session[d.rank] != d.session))
            reset_feed(d);
        F.session[d.rank] = d.session;
        F.partner = partner;
        uint32_t r = d.rank;
        bool first = F.expect[r] < 0; // nothing of this rank handled here before
        if (!in_order(l, d)) {
            fprintf(stderr, "pio-vizd: rank %u: descriptor %u came after %lld: ignored\n", r,
                    d.msgno, (long long)F.expect[r]);
            continue; // (a PIECE's data then stays unclaimed)
        }
        if (!same_feed(F.d, d))
            continue; // reset by another thread meanwhile
        F.newest[r] = std::max(F.newest[r], d.step);
        if (d.kind == VIZ_PIECE) {
            F.inprog[r]++;
            Assembly *a = assembly(l, d);
            bool keep = a && a->st;
            handled(d);
            l.unlock();
            uint64_t n = d.count[0] * d.count[1] * d.count[2];
            size_t len = n * viz_elem_size(d.field[d.fidx].type);
            if (data.size() < len) // only grows: a resize up zero-fills (pieces alternate sizes)
                data.resize(len);
            rc = PIO_Recv(partner, (int)r, VIZ_TAG_DATA + (int)d.seq, data.data(),
                          d.field[d.fidx].type, n, 60000, PIO_BLOCKING, &st);
            l.lock();
            F.inprog[r]--;
            stats.pieces++;
            if (rc == PIO_OK)
                stats.bytes += len;
            // the assembly may have been resolved (dropped) meanwhile
            auto it = F.steps.find(d.step);
            if (it != F.steps.end() && same_feed(F.d, d)) {
                Assembly &b = it->second;
                if (rc == PIO_OK && keep && b.st) {
                    store(*b.st, d, data.data());
                    b.points[d.fidx] += n;
                }
                b.got[r]++;
                if (b.end[r] >= 0 && b.got[r] == (uint64_t)b.end[r])
                    F.done[r] = std::max(F.done[r], (int64_t)d.step);
                if (rc != PIO_OK) // the piece is lost: the step cannot complete
                    b.st.reset();
            }
        } else if (d.kind == VIZ_END) {
            Assembly *a = assembly(l, d);
            if (a) {
                a->end[r] = d.npieces;
                if (a->got[r] == d.npieces)
                    F.done[r] = std::max(F.done[r], (int64_t)d.step);
            }
            handled(d);
        } else if (d.kind == VIZ_HELLO) { // what do we want: answer this rank
            // (NEW: none of its steps is here: a receiver started since it sent them)
            acks.push_back({0, lossless | VIZ_CTL_INFO | (first ? VIZ_CTL_NEW : 0), (int)r});
            handled(d);
        } else if (d.kind == VIZ_SKIP) { // a planned step this rank will not send
            if ((int64_t)d.step > F.resolved) {
                Assembly *a = assembly(l, d);
                if (a) {
                    a->skipped = true;
                    a->st.reset(); // its buffers are not needed
                }
            }
            handled(d);
        } else { // BYE: this rank sends nothing more
            F.done[r] = INT64_MAX;
            handled(d);
        }
        resolve(acks, lossless);
        uint32_t nranks = F.d.nranks;
        l.unlock();
        send_acks(acks, partner, nranks);
        if (opt.max_steps && stats.steps_complete >= opt.max_steps)
            stop_flag = 1;
    }
}

// status_double - a number of seconds or steps per second as the status has
// always printed it (six significant digits, "%g", as an ostream would)
json_object *status_double(double v)
{
    char t[32];
    snprintf(t, sizeof t, "%g", v);
    return json_object_new_double_s(v, t);
}

// status_json - the status as one line of JSON: built with json-c (every
// string escaped: an output may be named anything), keys in the order the
// tests and bench/viz.sh read, compact ("key":value, no spaces), '/' as is.
std::string status_json()
{
    std::lock_guard<std::mutex> l(G);
    double t = now(), rate = 0;
    if (F.completions.size() >= 2 && t - F.completions.back() < 5)
        rate = (double)(F.completions.size() - 1) / (F.completions.back() - F.completions.front());
    json_object *o = json_object_new_object(), *grid = json_object_new_array(),
                *lag = json_object_new_array(), *outs = json_object_new_array();
    pio_cli_json_str(o, "app", opt.app.c_str());
    pio_cli_json_str(o, "simulation", F.app.c_str());
    pio_cli_json_u64(o, "ranks", F.d.nranks);
    for (uint64_t d : F.d.grid.dims)
        json_object_array_add(grid, json_object_new_uint64(d));
    json_object_object_add(o, "grid", grid);
    pio_cli_json_u64(o, "steps_received", stats.steps_seen);
    pio_cli_json_u64(o, "steps_complete", stats.steps_complete);
    pio_cli_json_u64(o, "steps_dropped", stats.steps_dropped);
    pio_cli_json_u64(o, "last_step", F.last_complete);
    json_object_object_add(o, "steps_per_second", status_double(rate));
    json_object_object_add(o, "first_to_last_seconds", status_double(F.t_last - F.t_first));
    json_object_object_add(o, "receiving_seconds",
                           status_double(F.t_last > 0 ? F.t_last - F.t_start : 0));
    pio_cli_json_u64(o, "bytes_by_last_complete", F.bytes_last - F.bytes_base);
    pio_cli_json_u64(o, "assembling", F.steps.size());
    pio_cli_json_u64(o, "queue_depth", hub->queue_depth());
    pio_cli_json_u64(o, "pieces", stats.pieces);
    pio_cli_json_u64(o, "bytes", stats.bytes);
    pio_cli_json_u64(o, "memory_used", stats.mem_used);
    pio_cli_json_u64(o, "memory_peak", stats.mem_peak);
    pio_cli_json_u64(o, "memory_limit", stats.mem_limit);
    uint64_t newest = 0;
    for (uint64_t s : F.newest)
        newest = std::max(newest, s);
    for (uint64_t s : F.newest)
        json_object_array_add(lag, json_object_new_uint64(newest - s));
    json_object_object_add(o, "lag", lag);
    for (const auto &i : hub->info()) {
        json_object *r = json_object_new_object(), *paths = json_object_new_array();
        pio_cli_json_str(r, "name", i.name.c_str());
        pio_cli_json_str(r, "policy", i.policy == Policy::ARCHIVE ? "archive" : "live");
        pio_cli_json_u64(r, "done", i.done);
        pio_cli_json_u64(r, "skipped", i.skipped);
        pio_cli_json_u64(r, "failed", i.failed);
        pio_cli_json_u64(r, "last_step", i.last_step);
        for (const auto &p : i.last_paths)
            json_object_array_add(paths, json_object_new_string_len(p.data(), (int)p.size()));
        json_object_object_add(r, "paths", paths);
        json_object_array_add(outs, r);
    }
    json_object_object_add(o, "outputs", outs);
    const char *text =
        json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    std::string out = text ? text : "{}"; // {}: json-c out of memory
    json_object_put(o);
    return out;
}

bool write_status()
{
    if (opt.status_file.empty())
        return true;
    std::string tmp = opt.status_file + ".part";
    std::ofstream f(tmp);
    f << status_json() << "\n";
    f.close();
    return f && rename(tmp.c_str(), opt.status_file.c_str()) == 0;
}

std::string default_status_file(const std::string &app)
{
    return "/tmp/pio-vizd." + app + ".status.json";
}

int show_status()
{
    std::ifstream f(opt.status_file);
    if (!f) {
        fprintf(stderr, "pio-vizd: no status at %s (is pio-vizd --app %s running?)\n",
                opt.status_file.c_str(), opt.app.c_str());
        return 1;
    }
    std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    fputs(s.c_str(), stdout);
    return 0;
}

void usage(FILE *o)
{
    fprintf(o, "usage: pio-vizd [options]\n"
               "  --app NAME          this receiver's application name (default vizd)\n"
               "  --threads N         receiving threads (default 2)\n"
               "  --memory MB         memory for steps being assembled or output (default 1024)\n"
               "  --window N          steps a simulation may have unacknowledged (default 2)\n"
               "  --archive DIR       write every step: DIR/NAME_000001.vti and DIR/NAME.pvd\n"
               "  --archive-name NAME (default step)\n"
               "  --png DIR           render the newest step: DIR/frame_000001.png, latest.png\n"
               "  --png-size WxH      (default 640x480)\n"
               "  --png-every         render every step instead of the newest (archive policy)\n"
               "  --field NAME        the field to render (default the first)\n"
               "  --iso VALUE         isosurface value (default mid-range)\n"
               "  --slice x|y|z       slice axis (default z)\n"
               "  --colormap NAME     coolwarm, viridis or gray\n"
               "  --camera AZ,EL,ZOOM (default 30,20,1)\n"
               "  --http PORT         the live page on 127.0.0.1:PORT\n"
               "  --pub ENDPOINT      a ZeroMQ PUB event per step each output finished\n"
               "  --status-file PATH  (default /tmp/pio-vizd.APP.status.json)\n"
               "  --status            print the status of the running pio-vizd --app NAME\n"
               "  --steps N           exit after N complete steps\n"
               "  --delay-archive MS, --delay-png MS   slow an output down (tests)\n");
}

} // namespace

int main(int argc, char **argv)
{
    enum {
        O_APP = 256,
        O_THREADS,
        O_MEMORY,
        O_WINDOW,
        O_ARCHIVE,
        O_ARCHIVE_NAME,
        O_PNG,
        O_PNG_SIZE,
        O_PNG_EVERY,
        O_FIELD,
        O_ISO,
        O_SLICE,
        O_CMAP,
        O_CAMERA,
        O_HTTP,
        O_PUB,
        O_STATUS_FILE,
        O_STATUS,
        O_STEPS,
        O_DELAY_ARCHIVE,
        O_DELAY_PNG,
        O_HELP,
        O_VERSION
    };
    static const struct option opts[] = {{"app", required_argument, 0, O_APP},
                                         {"threads", required_argument, 0, O_THREADS},
                                         {"memory", required_argument, 0, O_MEMORY},
                                         {"window", required_argument, 0, O_WINDOW},
                                         {"archive", required_argument, 0, O_ARCHIVE},
                                         {"archive-name", required_argument, 0, O_ARCHIVE_NAME},
                                         {"png", required_argument, 0, O_PNG},
                                         {"png-size", required_argument, 0, O_PNG_SIZE},
                                         {"png-every", no_argument, 0, O_PNG_EVERY},
                                         {"field", required_argument, 0, O_FIELD},
                                         {"iso", required_argument, 0, O_ISO},
                                         {"slice", required_argument, 0, O_SLICE},
                                         {"colormap", required_argument, 0, O_CMAP},
                                         {"camera", required_argument, 0, O_CAMERA},
                                         {"http", required_argument, 0, O_HTTP},
                                         {"pub", required_argument, 0, O_PUB},
                                         {"status-file", required_argument, 0, O_STATUS_FILE},
                                         {"status", no_argument, 0, O_STATUS},
                                         {"steps", required_argument, 0, O_STEPS},
                                         {"delay-archive", required_argument, 0, O_DELAY_ARCHIVE},
                                         {"delay-png", required_argument, 0, O_DELAY_PNG},
                                         {"help", no_argument, 0, O_HELP},
                                         {"version", no_argument, 0, O_VERSION},
                                         {0, 0, 0, 0}};
    bool status = false;
    int c;
    auto bad = [](const char *what, const char *v) {
        fprintf(stderr, "pio-vizd: %s %s: %s\n", what, v, "not understood (see --help)");
        exit(2);
    };
    while ((c = getopt_long(argc, argv, "", opts, nullptr)) != -1) {
        char *e = nullptr;
        switch (c) {
        case O_APP: opt.app = optarg; break;
        case O_THREADS:
            opt.threads = (int)strtol(optarg, &e, 10);
            if (*e || opt.threads < 1 || opt.threads > 64)
                bad("--threads", optarg);
            break;
        case O_MEMORY:
            opt.memory_mb = strtoull(optarg, &e, 10);
            if (*e || opt.memory_mb < 1)
                bad("--memory", optarg);
            break;
        case O_WINDOW:
            opt.window = (int)strtol(optarg, &e, 10);
            if (*e || opt.window < 1 || opt.window > 64)
                bad("--window", optarg);
            break;
        case O_ARCHIVE: opt.archive = optarg; break;
        case O_ARCHIVE_NAME: opt.archive_name = optarg; break;
        case O_PNG: opt.png.dir = optarg; break;
        case O_PNG_SIZE:
            if (sscanf(optarg, "%dx%d", &opt.png.width, &opt.png.height) != 2 ||
                opt.png.width < 16 || opt.png.height < 16 || opt.png.width > 8192 ||
                opt.png.height > 8192)
                bad("--png-size", optarg);
            break;
        case O_PNG_EVERY: opt.png.policy = Policy::ARCHIVE; break;
        case O_FIELD: opt.png.field = optarg; break;
        case O_ISO:
            opt.png.iso = strtod(optarg, &e);
            if (*e)
                bad("--iso", optarg);
            break;
        case O_SLICE:
            if (strlen(optarg) != 1 || !strchr("xyz", optarg[0]))
                bad("--slice", optarg);
            opt.png.slice_axis = optarg[0];
            break;
        case O_CMAP: opt.png.colormap = optarg; break;
        case O_CAMERA:
            if (sscanf(optarg, "%lf,%lf,%lf", &opt.png.azimuth, &opt.png.elevation,
                       &opt.png.zoom) != 3 ||
                opt.png.zoom <= 0)
                bad("--camera", optarg);
            break;
        case O_HTTP:
            opt.http = (int)strtol(optarg, &e, 10);
            if (*e || opt.http < 1 || opt.http > 65535)
                bad("--http", optarg);
            break;
        case O_PUB: opt.pub = optarg; break;
        case O_STATUS_FILE: opt.status_file = optarg; break;
        case O_STATUS: status = true; break;
        case O_STEPS:
            opt.max_steps = strtoull(optarg, &e, 10);
            if (*e)
                bad("--steps", optarg);
            break;
        case O_DELAY_ARCHIVE: opt.archive_delay = atoi(optarg); break;
        case O_DELAY_PNG: opt.png_delay = atoi(optarg); break;
        case O_HELP: usage(stdout); return 0;
        case O_VERSION: return pio_cli_version("pio-vizd");
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "pio-vizd: unexpected argument %s (see --help)\n", argv[optind]);
        return 2;
    }
    if (opt.status_file.empty())
        opt.status_file = default_status_file(opt.app);
    if (status)
        return show_status();

    Hub h(stats);
    hub = &h;
    stats.mem_limit = opt.memory_mb << 20;
    std::string err;
    if (!opt.archive.empty()) {
        auto a = make_archive_output(opt.archive, opt.archive_name, &err);
        if (!a) {
            fprintf(stderr, "pio-vizd: %s\n", err.c_str());
            return 1;
        }
        h.add(std::move(a), opt.archive_delay);
    }
    long xvfb = 0;
    if (!opt.png.dir.empty()) {
        xvfb = ensure_display(&err);
        std::unique_ptr<Output> p;
        if (xvfb < 0)
            fprintf(stderr, "pio-vizd: no display for rendering (%s): no PNG frames\n",
                    err.c_str());
        else if (!(p = make_png_output(opt.png, &err))) {
            fprintf(stderr, "pio-vizd: %s\n", err.c_str());
            stop_display(xvfb);
            return 1;
        } else
            h.add(std::move(p), opt.png_delay);
    }
    std::unique_ptr<Publisher> pub;
    if (!opt.pub.empty() && !(pub = Publisher::open(opt.pub, &err))) {
        fprintf(stderr, "pio-vizd: --pub %s: %s\n", opt.pub.c_str(), err.c_str());
        stop_display(xvfb);
        return 1;
    }
    if (pub) {
        Publisher *pp = pub.get();
        h.on_done = [pp](const std::string &out, const Step &s,
                         const std::vector<std::string> &paths) { pp->event(out, s, paths); };
    }
    std::unique_ptr<LivePage> page;
    if (opt.http && !(page = LivePage::start(opt.http, opt.png.dir, status_json, &err))) {
        fprintf(stderr, "pio-vizd: --http %d: %s\n", opt.http, err.c_str());
        stop_display(xvfb);
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);
    int rc = PIO_Init(opt.app.c_str(), 0, 1);
    if (rc != PIO_OK) {
        fprintf(stderr, "pio-vizd: PIO_Init(%s): %s\n", opt.app.c_str(), PIO_Strerror(rc));
        stop_display(xvfb);
        return 1;
    }
    fprintf(stderr, "pio-vizd: %s: %d receiving threads, %llu MB for steps, %s\n", opt.app.c_str(),
            opt.threads, (unsigned long long)opt.memory_mb,
            h.lossless() ? "every step kept (archive): a slow output holds the simulation back"
                         : "newest step only: steps are dropped when behind");
    h.start();
    std::vector<std::thread> rx;
    for (int i = 0; i < opt.threads; i++)
        rx.emplace_back(receiver, i);
    pio_sd_ready();
    while (!stop_flag) {
        pio_mem_trim_tick();
        write_status();
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    for (auto &t : rx)
        t.join();
    h.stop(); // the archive writes what it has
    write_status();
    page.reset();
    h.clear();
    PIO_Exit();
    stop_display(xvfb);
    fprintf(stderr, "pio-vizd: %llu steps complete, %llu dropped\n",
            (unsigned long long)stats.steps_complete.load(),
            (unsigned long long)stats.steps_dropped.load());
    return 0;
}
