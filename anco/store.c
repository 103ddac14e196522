/* store.c - anco's backing stores (store.h): a local POSIX file, and a file
 * on another host's PIO file service.
 * The POSIX store calls the kernel through syscall(2): libanco.so
 * interposes open and pread for the program it is preloaded into, and the
 * store must reach the file underneath, never the interposer.
 * SPDX-License-Identifier: BSD-3-Clause */
#include "store.h"

#include "err.h"
#include "pio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- a local file --------------------------------------------------------- */

static int posix_open(const char *path, void **h, uint64_t *size)
{
    long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return pio_from_errno(errno);
    struct stat st;
    int rc = PIO_OK;
    if (syscall(SYS_fstat, fd, &st) != 0)
        rc = pio_from_errno(errno);
    else if (!S_ISREG(st.st_mode))
        rc = PIO_EINVAL; /* a block cache of a pipe or a device makes no sense */
    if (rc != PIO_OK) {
        syscall(SYS_close, fd);
        return rc;
    }
    *h = (void *)(intptr_t)fd;
    *size = (uint64_t)st.st_size;
    return PIO_OK;
}

static int posix_pread(void *h, void *buf, size_t len, uint64_t off, size_t *got)
{
    size_t done = 0;
    while (done < len) {
        long n = syscall(SYS_pread64, (int)(intptr_t)h, (char *)buf + done, len - done,
                         (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return pio_from_errno(errno);
        if (n == 0)
            break;
        done += (size_t)n;
    }
    *got = done;
    return PIO_OK;
}

static void posix_close(void *h)
{
    syscall(SYS_close, (int)(intptr_t)h);
}

static const struct anco_store_ops posix_ops = {"posix", posix_open, posix_pread, posix_close};

/* ---- pio://HOST/PATH: a file on HOST's PIO file service ------------------- */

#define PIO_PREFIX "pio://"

static int rfile_open(const char *path, void **h, uint64_t *size)
{
    const char *host = path + strlen(PIO_PREFIX), *slash = strchr(host, '/');
    if (!slash || slash == host || !slash[1] || slash - host > 255)
        return PIO_EINVAL;
    char name[256];
    memcpy(name, host, (size_t)(slash - host));
    name[slash - host] = '\0';
    PIO_Rfile rf;
    int rc = PIO_Rfile_open(name, slash + 1, &rf, size);
    if (rc != PIO_OK)
        return rc;
    /* blocks are read whole, once, by whichever process loads them: the
     * file service's read-ahead would bring ranges nobody asked for (a
     * process that happens to load two neighbouring blocks reads 4 MiB
     * ahead, thrown away at its next jump) */
    PIO_Rfile_advise(rf, PIO_RFILE_RANDOM);
    *h = rf;
    return PIO_OK;
}

static int rfile_pread(void *h, void *buf, size_t len, uint64_t off, size_t *got)
{
    return PIO_Rfile_pread(h, buf, len, off, got);
}

static void rfile_close(void *h)
{
    PIO_Rfile_close(h);
}

static const struct anco_store_ops rfile_ops = {"pio", rfile_open, rfile_pread, rfile_close};

const struct anco_store_ops *anco_store_find(const char *path)
{
    return strncmp(path, PIO_PREFIX, strlen(PIO_PREFIX)) == 0 ? &rfile_ops : &posix_ops;
}
