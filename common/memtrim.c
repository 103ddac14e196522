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
 * MiB of heap costs well under a millisecond.
 *
 * malloc_trim does not release the top of a thread's arena, and glibc only
 * shrinks that top when it exceeds the trim threshold, which glibc raises
 * (up to 64 MiB) each time a freed mmap'd block was larger than the mmap
 * threshold: after one 4 MiB buffer is freed, later ones come from the
 * arena and its top stays resident. The soak saw that as steps of 1-4 MiB
 * that never came back (pfs-iod, piod). So the first tick fixes both
 * thresholds (which turns glibc's adjustment off): blocks of 256 KiB or more
 * are mmap'd and unmapped when freed, and an arena's top is trimmed above
 * 512 KiB. Cost: a block that size is mapped and unmapped each time (a pfs
 * server's 1 MiB READ reply: some 250 page faults, well under the ~80 ms a
 * MiB takes on a 100 Mbit/s link). */
#include "memtrim.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

static atomic_uint_fast64_t last_trim_ms;
static pthread_once_t tune_once = PTHREAD_ONCE_INIT;

static void tune(void)
{
    mallopt(M_MMAP_THRESHOLD, PIO_MEM_MMAP_MIN);
    mallopt(M_TRIM_THRESHOLD, 2 * PIO_MEM_MMAP_MIN);
}

void pio_mem_trim_tick(void)
{
    pthread_once(&tune_once, tune);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
    uint_fast64_t last = atomic_load(&last_trim_ms);
    if (now - last < PIO_MEM_TRIM_MS || !atomic_compare_exchange_strong(&last_trim_ms, &last, now))
        return;
    malloc_trim(0);
}
