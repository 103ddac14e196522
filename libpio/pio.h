/* pio.h - the public interface of PIO, parallel data transfer over a bundle of links.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * This is the only header PIO installs. Every call returns a status code from
 * the one error list below; PIO_Strerror() turns it into words.
 *
 * Thread safety: every function in this header is thread-safe unless its
 * comment says otherwise.
 */
#ifndef PIO_H
#define PIO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PIO_VERSION_MAJOR 0
#define PIO_VERSION_MINOR 1
#define PIO_VERSION_PATCH 0

/* The one error list: each code with the words PIO_Strerror returns.
 * Codes are numbered in list order from PIO_OK = 0; new codes go at the end
 * so that numbers stay stable (the Fortran binding and the wire use them). */
#define PIO_ERRORS(X)                                                                              \
    X(PIO_OK, "success")                                                                           \
    X(PIO_EINVAL, "invalid argument")                                                              \
    X(PIO_ENOMEM, "out of memory")                                                                 \
    X(PIO_ENOPIOD, "no piod is running here: start piod or set PIO_SOCKET to its control socket")  \
    X(PIO_EPARTNER, "unknown partner application: check the name given to PIO_Setpartner")         \
    X(PIO_EGONE, "the partner application or process has gone away")                               \
    X(PIO_ETIMEDOUT, "timed out")                                                                  \
    X(PIO_EPOOL, "buffer pool exhausted: raise the piod pool size or send smaller messages")       \
    X(PIO_EREFUSED, "refused by the peer piod (not authorized, or unknown to it)")                 \
    X(PIO_ETYPE, "datatype does not match the message: receive it with the sender's type")         \
    X(PIO_ETRUNC, "receive buffer too small for the message: the message is kept, retry larger")   \
    X(PIO_EPROTO, "protocol error: malformed frame")                                               \
    X(PIO_EVERSION, "protocol version mismatch between peers")                                     \
    X(PIO_EAUTH, "authentication failed")                                                          \
    X(PIO_EIO, "input/output error")                                                               \
    X(PIO_ECLOSED, "connection closed")                                                            \
    X(PIO_ENOTINIT, "PIO is not initialized: call PIO_Init first")                                 \
    X(PIO_EINITED, "PIO is already initialized in this process")                                   \
    X(PIO_ELINK, "no usable link: every channel to the peer is down")                              \
    X(PIO_ENOSYS, "operation not supported")                                                       \
    X(PIO_EEXIST, "already exists")                                                                \
    X(PIO_ENOENT, "no such file, object or name")                                                  \
    X(PIO_EBUSY, "resource busy")                                                                  \
    X(PIO_EAGAIN, "try again: not ready yet")                                                      \
    X(PIO_ECONFIG, "invalid configuration")                                                        \
    X(PIO_ECANCELED, "operation canceled")                                                         \
    X(PIO_EPERM, "permission denied")                                                              \
    X(PIO_EADDR, "address problem: cannot bind, resolve or reach an address")                      \
    X(PIO_EINTERNAL, "internal error (a bug in PIO: please report it)")

#define PIO_ERROR_ENUM_(code, words) code,
typedef enum pio_status { PIO_ERRORS(PIO_ERROR_ENUM_) PIO_ERROR_COUNT_ } pio_status;
#undef PIO_ERROR_ENUM_

/* PIO_Strerror - words for a status code.
 * status [in]: any int; codes outside the list give "unknown PIO error".
 * Returns a static string, never NULL; the caller must not free it. */
const char *PIO_Strerror(int status);

/* PIO_Errname - the code's name, e.g. "PIO_ETIMEDOUT" (static, never NULL). */
const char *PIO_Errname(int status);

#ifdef __cplusplus
}
#endif
#endif /* PIO_H */
