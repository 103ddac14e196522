/* memtrim.c - long-running daemons give freed heap back to the kernel.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * glibc keeps what a program frees in its arenas and returns only the top of
 * a heap. A burst of small allocations (piod's express-lane queue while a
 * link is cut: thousands of frames, up to 4 MiB; a server thread's arena
 * under a burst of requests) leaves a heap at its high-water mark once a
 * longer-lived allocation sits above it, and every later, higher burst raises
 * the mark: the soak saw resident memory creep while heaptrack saw the live
 * heap stay level (design notes, "What the soak found: memory"). malloc_trim
 * also releases the whole free pages inside a heap (madvise), so resident
 * memory follows what is live. Once per PIO_MEM_TRIM_MS: a trim of a few
 * MiB of heap costs well under a millisecond. */
#include "memtrim.h"

#include <malloc.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

static atomic_uint_fast64_t last_trim_ms;

void pio_mem_trim_tick(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
    uint_fast64_t last = atomic_load(&last_trim_ms);
    if (now - last < PIO_MEM_TRIM_MS || !atomic_compare_exchange_strong(&last_trim_ms, &last, now))
        return;
    malloc_trim(0);
}
