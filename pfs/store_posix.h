/* store_posix.h - what the POSIX storage backend offers beyond its ops table
 * (store.h): an emulated device speed.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * This is an emulation, not a measurement: it makes the storage the
 * bottleneck on hosts whose disks (or page cache) are far faster than the
 * network, the way `tc tbf` makes a link slow. The device serves `lanes`
 * requests at once, each at bytes_per_s / lanes; a request of n bytes waits
 * for a free lane (first come, first served), does its real I/O, and keeps
 * the lane until n / (bytes_per_s / lanes) seconds after it took it (a
 * clock_nanosleep to that deadline). Reads count the bytes actually read.
 * Nothing else (seeks, queue depth effects, write-back) is modelled.
 *
 * Thread-safety: thread-safe. */
#ifndef PFS_STORE_POSIX_H
#define PFS_STORE_POSIX_H

#include "store.h"

#include <stdint.h>

/* pfs_store_posix_throttle - limit st (a store opened by pfs_store_posix) to
 * bytes_per_s over lanes lanes (lanes < 1 counts as 1); bytes_per_s 0 removes
 * the limit (the default). Requests already holding a lane finish at the old
 * rate. */
void pfs_store_posix_throttle(struct pfs_store *st, uint64_t bytes_per_s, int lanes);

#endif
