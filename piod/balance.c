/* balance.c - USER, STATIC and DYNAMIC channel choice (pure functions).
 * SPDX-License-Identifier: BSD-3-Clause
 * DYNAMIC estimates when each channel's queue would drain: outstanding bytes
 * over measured rate. This is what makes unequal links and skewed traffic
 * balance: a slow channel's queue looks long sooner. No state, no locks. */
#include "balance.h"

int piod_bal_dynamic(const struct piod_bal_chan *c, int n, uint64_t len)
{
    double sum = 0;
    int measured = 0;
    for (int i = 0; i < n; i++)
        if (c[i].up && c[i].rate > 0) {
            sum += c[i].rate;
            measured++;
        }
    double dflt = measured ? sum / measured : 1.0;
    int best = -1;
    double best_t = 0;
    for (int i = 0; i < n; i++) {
        if (!c[i].up)
            continue;
        double r = c[i].rate > 0 ? c[i].rate : dflt;
        double t = (double)(c[i].outstanding + len) / r;
        if (best < 0 || t < best_t) {
            best = i;
            best_t = t;
        }
    }
    return best;
}

int piod_bal_user(const struct piod_bal_chan *c, int n, int i, uint64_t len)
{
    if (i >= 0 && i < n && c[i].up)
        return i;
    return piod_bal_dynamic(c, n, len);
}

int piod_bal_static(const struct piod_bal_chan *c, int n, uint32_t src_proc, uint32_t dst_proc)
{
    if (n <= 0)
        return -1;
    int first = (int)(((uint64_t)src_proc + dst_proc) % (uint64_t)n);
    for (int k = 0; k < n; k++) {
        int i = (first + k) % n;
        if (c[i].up)
            return i;
    }
    return -1;
}

uint32_t piod_bal_chunk(double rate, uint32_t ms, uint32_t max)
{
    if (rate <= 0 || ms == 0)
        return max;
    double want = rate * ms / 1000.0;
    uint32_t c = max;
    while (c % 128 == 0 && c / 2 >= PIOD_BAL_CHUNK_MIN && (double)c > want)
        c /= 2;
    return c;
}

double piod_bal_ewma(double est, double sample)
{
    if (est <= 0)
        return sample;
    return 0.7 * est + 0.3 * sample;
}
