// vizd.h - pio-vizd's parts: assembled steps, outputs and their policies.
// SPDX-License-Identifier: BSD-3-Clause
//
// The receiving threads (vizd.cpp) assemble each step of a feed into a Step
// (every field over the whole grid); a complete step is handed to every
// Output through the Hub. An Output runs in its own thread and has a
// policy: ARCHIVE takes every step in order (and, while it is behind, holds
// the simulation back: the receiver stops taking new steps when memory is
// full); LIVE takes only the newest step and never holds anything back.
// Steps are shared (std::shared_ptr); their bytes count against the
// memory limit until the last output lets go.
//
// Thread-safety: Hub is thread-safe. An Output's consume() runs only in
// that output's thread; start() and stop() are called by main.
#ifndef VIZD_H
#define VIZD_H

extern "C" {
#include "pio.h"
#include "wire/viz_proto.h"
}

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace vizd
{

struct Field {
    std::string name;
    int type;                  // PIO_FLOAT, PIO_DOUBLE, PIO_INT32
    std::vector<uint8_t> data; // dims[0] * dims[1] * dims[2] elements, x fastest
};

struct Step {
    uint64_t step = 0;
    double time = 0;
    viz_grid grid{};
    std::vector<Field> fields;
    size_t bytes = 0;      // what it counts against the memory limit
    double t_complete = 0; // when it became complete (monotonic seconds)
};
using StepPtr = std::shared_ptr<const Step>;

enum class Policy { ARCHIVE, LIVE };

class Output
{
  public:
    virtual ~Output() = default;
    virtual std::string name() const = 0;
    virtual Policy policy() const = 0;
    // consume - do this output's work for one step (write, render, ...).
    // Returns false when it failed (said on stderr); the step is counted.
    virtual bool consume(const StepPtr &s) = 0;
    // paths of what the last consume() wrote (for events and the page)
    virtual std::vector<std::string> last_paths() const
    {
        return {};
    }
};

// Counters shown by --status and the page.
struct Stats {
    std::atomic<uint64_t> steps_seen{0}, steps_complete{0}, steps_dropped{0}, pieces{0}, bytes{0};
    std::atomic<uint64_t> mem_used{0}, mem_limit{0}, mem_peak{0};
};

// Hub - hands complete steps to the outputs' threads.
class Hub
{
  public:
    explicit Hub(Stats &stats) : stats_(stats) {}
    // add - an output and the artificial delay (ms) of its consumer (tests)
    void add(std::unique_ptr<Output> out, int delay_ms);
    void start();
    // publish - a complete step for every output (never blocks)
    void publish(const StepPtr &s);
    // stop - finish: archive outputs drain what is queued, then threads end
    void stop();
    // clear - after stop: destroy the outputs (a renderer must go before
    // its X display does)
    void clear()
    {
        slots_.clear();
    }
    bool lossless() const; // some output is ARCHIVE
    size_t queue_depth() const;
    struct OutInfo {
        std::string name;
        Policy policy;
        uint64_t done, skipped, failed;
        uint64_t last_step;
        std::vector<std::string> last_paths;
    };
    std::vector<OutInfo> info() const;
    // on_done - called (in the output's thread, no lock held) after an
    // output finished a step, with the paths it wrote; set before start()
    std::function<void(const std::string &, const Step &, const std::vector<std::string> &)>
        on_done;

  private:
    struct Slot {
        std::unique_ptr<Output> out;
        int delay_ms = 0;
        std::deque<StepPtr> q; // ARCHIVE: every step; LIVE: at most the newest
        uint64_t done = 0, skipped = 0, failed = 0, last_step = 0;
        std::vector<std::string> last_paths;
        std::thread th;
    };
    void run(Slot *s);
    Stats &stats_;
    mutable std::mutex mtx_;
    std::condition_variable cv_;
    std::vector<std::unique_ptr<Slot>> slots_;
    bool stopping_ = false;
};

// monotonic seconds
double now();

} // namespace vizd

#endif
