/* mono.h - timed waits on CLOCK_MONOTONIC (private to the build).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A pthread_cond_timedwait deadline on the wall clock moves when the clock
 * is stepped (NTP, an administrator, a VM resumed): stepped back, a 1 s
 * wait becomes an hour; stepped forward, every wait ends at once. Every
 * timed wait in the project measures on CLOCK_MONOTONIC: its condition is
 * made with pio_cond_init_mono and its deadline with pio_deadline_mono.
 * Thread-safe. */
#ifndef PIO_MONO_H
#define PIO_MONO_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* pio_cond_init_mono - init cv so that its timed waits read CLOCK_MONOTONIC.
 * Returns pthread_cond_init's result. */
static inline int pio_cond_init_mono(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
    return rc;
}

/* pio_deadline_mono - *ts = CLOCK_MONOTONIC now + ns (ns >= 0). */
static inline void pio_deadline_mono(struct timespec *ts, int64_t ns)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += (time_t)(ns / 1000000000);
    ts->tv_nsec += (long)(ns % 1000000000);
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

#endif
