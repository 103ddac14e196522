/* capture.c - write decoder inputs to PIO_CAPTURE_DIR for the fuzz corpora.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The directory is read once (pthread_once); each target's count is an
 * atomic slot chosen by the target's name, so no lock is ever held. A file is
 * named by the XXH64 of its bytes and created with O_EXCL: the same input
 * seen twice, by one process or many, is written once. Used only when a
 * developer or `make fuzz-corpus` asks; nothing here is on by default.
 */
#include "capture.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#define CAP_SLOTS 32

static pthread_once_t cap_once = PTHREAD_ONCE_INIT;
static atomic_int cap_on; /* 0 until cap_init says 1 */
static char cap_dir[PATH_MAX - 64];
static atomic_uint cap_count[CAP_SLOTS];

static void cap_init(void)
{
    const char *d = getenv("PIO_CAPTURE_DIR");
    if (!d || !*d || strlen(d) >= sizeof(cap_dir))
        return;
    memcpy(cap_dir, d, strlen(d) + 1);
    atomic_store(&cap_on, 1);
}

void pio_capture(const char *target, const void *buf, size_t len)
{
    pthread_once(&cap_once, cap_init);
    if (!atomic_load_explicit(&cap_on, memory_order_relaxed) || !target || !buf || len == 0)
        return;
    unsigned slot = (unsigned)(XXH32(target, strlen(target), 0) % CAP_SLOTS);
    if (atomic_fetch_add(&cap_count[slot], 1) >= PIO_CAPTURE_MAX)
        return;
    if (len > PIO_CAPTURE_BYTES)
        len = PIO_CAPTURE_BYTES;
    int saved = errno;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", cap_dir, target);
    (void)mkdir(cap_dir, 0755);
    (void)mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/%s/%016llx", cap_dir, target,
             (unsigned long long)XXH64(buf, len, 0));
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
        if (write(fd, buf, len) != (ssize_t)len)
            (void)unlink(path);
        close(fd);
    }
    errno = saved;
}

void pio_capture_file(const char *target, const char *path)
{
    pthread_once(&cap_once, cap_init);
    if (!atomic_load_explicit(&cap_on, memory_order_relaxed) || !path)
        return;
    int saved = errno;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char *buf = fd >= 0 ? malloc(PIO_CAPTURE_BYTES) : NULL;
    if (buf) {
        ssize_t n = read(fd, buf, PIO_CAPTURE_BYTES);
        if (n > 0)
            pio_capture(target, buf, (size_t)n);
        free(buf);
    }
    if (fd >= 0)
        close(fd);
    errno = saved;
}
