/* tsan.h - ThreadSanitizer: adopting bytes handed over by an uninstrumented
 * library.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * libzmq's I/O thread decrypts (libsodium) a received message into a buffer
 * and passes it to our thread through lock-free queues TSan cannot see, so
 * each of our reads of it looks like a race. tests/lib/tsan.supp suppresses
 * those, but a suppressed race still costs a report and a search of every
 * racy address so far: a piod reading thousands of queued control frames
 * (an express lane's salvage) slowed to tens of KB/s under TSan. Code that
 * reads such a buffer takes it through pio_tsan_adopt, which, in a TSan
 * build only, copies it into a buffer of ours with TSan looking away; the
 * bytes are then ours. Without TSan it returns the buffer itself.
 *
 * Private (piod, the unit tests). Thread-safe (no state). */
#ifndef PIO_TSAN_H
#define PIO_TSAN_H

#include <stddef.h>
#include <string.h>

#if defined(__SANITIZE_THREAD__)
#define PIO_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PIO_TSAN 1
#endif
#endif

/* PIO_TSAN_IGNORE_BEGIN/END - TSan checks none of this thread's memory
 * accesses in between (they nest); nothing without TSan. For memory another
 * party writes in ways TSan cannot see (a window UCX fills, a buffer
 * libzmq hands over). */
#ifdef PIO_TSAN
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
#define PIO_TSAN_IGNORE_BEGIN()                                                                    \
    (AnnotateIgnoreReadsBegin(__FILE__, __LINE__), AnnotateIgnoreWritesBegin(__FILE__, __LINE__))
#define PIO_TSAN_IGNORE_END()                                                                      \
    (AnnotateIgnoreWritesEnd(__FILE__, __LINE__), AnnotateIgnoreReadsEnd(__FILE__, __LINE__))
#else
#define PIO_TSAN_IGNORE_BEGIN() ((void)0)
#define PIO_TSAN_IGNORE_END()   ((void)0)
#endif

/* pio_tsan_enabled - 1 in a TSan build, else 0 (to size adopt buffers). */
static inline int pio_tsan_enabled(void)
{
#ifdef PIO_TSAN
    return 1;
#else
    return 0;
#endif
}

/* pio_tsan_adopt - the n bytes at src, as our thread's own: in a TSan build
 * a copy in copy (cap bytes; src itself when n > cap), else src. */
static inline const void *pio_tsan_adopt(const void *src, size_t n, void *copy, size_t cap)
{
#ifdef PIO_TSAN
    if (n > cap)
        return src;
    PIO_TSAN_IGNORE_BEGIN();
    memcpy(copy, src, n);
    PIO_TSAN_IGNORE_END();
    return copy;
#else
    (void)n, (void)copy, (void)cap;
    return src;
#endif
}

#endif
