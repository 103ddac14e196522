/* err.h - private error helpers shared by libpio and piod.
 * SPDX-License-Identifier: BSD-3-Clause
 * Thread-safe: all of it (no state). */
#ifndef PIO_ERR_H
#define PIO_ERR_H

#include "pio.h"

/* pio_from_errno - the PIO status for an errno value; call it right at the
 * system call that failed. Unknown values become PIO_EIO. */
int pio_from_errno(int e);

/* PIO_CHECK(cond, rc_var, code, label): one-line error check in the style of
 * Mercury's NA_CHECK_SUBSYS_ERROR: when cond holds, set rc_var and jump. */
#define PIO_CHECK(cond, rc_var, code, label)                                                       \
    do {                                                                                           \
        if (cond) {                                                                                \
            (rc_var) = (code);                                                                     \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)

/* PIO_TRY(expr, rc_var, label): evaluate a call returning a PIO status and
 * jump to label on failure, keeping the status. */
#define PIO_TRY(expr, rc_var, label)                                                               \
    do {                                                                                           \
        (rc_var) = (expr);                                                                         \
        if ((rc_var) != PIO_OK)                                                                    \
            goto label;                                                                            \
    } while (0)

#endif
