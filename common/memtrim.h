/* memtrim.h - long-running daemons give freed heap back to the kernel.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Private to the PIO daemons (piod, pio-files, the pfs servers, pio-vizd).
 * Thread-safe. */
#ifndef PIO_MEMTRIM_H
#define PIO_MEMTRIM_H

/* The least time between two trims. */
#define PIO_MEM_TRIM_MS 30000
/* Blocks this big or bigger are mmap'd (fixed, see memtrim.c). */
#define PIO_MEM_MMAP_MIN (256 * 1024)

/* pio_mem_trim_tick - call often (from a daemon's loop, any thread); at
 * most once per PIO_MEM_TRIM_MS it has glibc return the whole free pages of
 * every malloc arena to the kernel (malloc_trim). Costs a clock read
 * otherwise. The first call also fixes glibc's mmap and trim thresholds
 * (mallopt) so that big blocks go back to the kernel when freed. */
#ifdef __cplusplus
extern "C" {
#endif
void pio_mem_trim_tick(void);
#ifdef __cplusplus
}
#endif

#endif
