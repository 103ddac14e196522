/* capture.h - record the bytes every decoder is given, to seed the fuzzers
 * from real traffic (private to the build, not installed).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * With PIO_CAPTURE_DIR set in a process's environment, each decoder that
 * reads bytes from outside (wire frames, stream buffers, pcp, viz, pfs, GAS,
 * window control messages, relay headers, config files) hands its input to
 * pio_capture, which writes it once to DIR/TARGET/<xxh64 of the bytes>
 * (TARGET is the fuzz target that replays it: wire, fstream, pcp, viz, pfs,
 * gas, win, relay, config). `make fuzz-corpus` runs the test suites that
 * way, then minimizes what they left with libFuzzer's -merge into
 * tests/fuzz/corpus/. Without the variable a call costs one relaxed atomic
 * load. Never fails and never changes errno: a file it cannot write is not
 * written. At most PIO_CAPTURE_MAX files per target per process.
 * Thread-safety: pio_capture is thread-safe. */
#ifndef PIO_CAPTURE_H
#define PIO_CAPTURE_H

#include <stddef.h>

#define PIO_CAPTURE_MAX   4000
#define PIO_CAPTURE_BYTES (64 * 1024) /* longer inputs are cut to this */

/* pio_capture - record buf[0..len) for fuzz target `target` (a short name
 * without '/'), when PIO_CAPTURE_DIR says where. */
void pio_capture(const char *target, const void *buf, size_t len);

/* pio_capture_file - record the first PIO_CAPTURE_BYTES of the file at path
 * (a config file) for target, when capturing. */
void pio_capture_file(const char *target, const char *path);

#endif
