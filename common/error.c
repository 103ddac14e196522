/* error.c - the words for PIO status codes, and errno conversion.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Both tables are generated from PIO_ERRORS in pio.h, so a code cannot exist
 * without its words. pio_from_errno() is the one place an errno value becomes
 * a PIO status; call it right where the system call failed. No state, no locks.
 */
#include "pio.h"
#include "err.h"

#include <errno.h>

#define PIO_ERROR_WORDS_(code, words) words,
#define PIO_ERROR_NAME_(code, words)  #code,
static const char *const err_words[] = {PIO_ERRORS(PIO_ERROR_WORDS_)};
static const char *const err_names[] = {PIO_ERRORS(PIO_ERROR_NAME_)};

const char *PIO_Strerror(int status)
{
    if (status < 0 || status >= PIO_ERROR_COUNT_)
        return "unknown PIO error";
    return err_words[status];
}

const char *PIO_Errname(int status)
{
    if (status < 0 || status >= PIO_ERROR_COUNT_)
        return "PIO_E?";
    return err_names[status];
}

int pio_from_errno(int e)
{
    switch (e) {
    case 0: return PIO_OK;
    case EINVAL:
    case EBADF:
    case EFAULT:
    case ENAMETOOLONG: return PIO_EINVAL;
    case ENOMEM:
    case ENOBUFS: return PIO_ENOMEM;
    case ETIMEDOUT: return PIO_ETIMEDOUT;
    case ECONNREFUSED: return PIO_EREFUSED;
    case ECONNRESET:
    case EPIPE:
    case ENOTCONN:
    case ESHUTDOWN: return PIO_ECLOSED;
    case ENETUNREACH:
    case EHOSTUNREACH:
    case ENETDOWN:
    case EHOSTDOWN: return PIO_ELINK;
    case EADDRINUSE:
    case EADDRNOTAVAIL:
    case EAFNOSUPPORT: return PIO_EADDR;
    case EACCES:
    case EPERM: return PIO_EPERM;
    case ENOENT: return PIO_ENOENT;
    case ENOTDIR: return PIO_ENOTDIR;
    case EISDIR: return PIO_EISDIR;
    case ENOTEMPTY: return PIO_ENOTEMPTY;
    case ENOSPC:
    case EDQUOT: return PIO_ENOSPC;
    case EEXIST: return PIO_EEXIST;
    case EBUSY: return PIO_EBUSY;
    case EAGAIN:
    case EINTR:
    case EINPROGRESS: return PIO_EAGAIN;
    case ENOSYS:
    case EOPNOTSUPP: return PIO_ENOSYS;
    case ECANCELED: return PIO_ECANCELED;
    case EPROTO:
    case EBADMSG: return PIO_EPROTO;
    default: return PIO_EIO;
    }
}
