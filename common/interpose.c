/* interpose.c - what the LD_PRELOAD libraries share (interpose.h).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Compiled into each preload library, hidden, never into libpio. It owns
 * no state of its own but the slots of libc's functions (PIO_IP_REAL); a
 * table's mutex guards that table's slot updates and reference counts and
 * is held only for those. The stdio streams call the library's hooks by
 * their public names (read, write, lseek, close), never libc's directly. */
#include "interpose.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

/* the slots of libc's functions behind every hook in the lists, one per
 * library (each compiles this file once) */
#define PIO_IP_SLOT_DEFINE(shape, ret, name, params, args, op, op_args)                            \
    void *_Atomic pio_ip_sym_##name;
PIO_IP_READ_HOOKS(PIO_IP_SLOT_DEFINE)
PIO_IP_WRITE_HOOKS(PIO_IP_SLOT_DEFINE)

void *pio_ip_sym(void *_Atomic *slot, const char *name)
{
    void *p = atomic_load_explicit(slot, memory_order_relaxed);

    if (!p) {
        p = dlsym(RTLD_NEXT, name);
        atomic_store_explicit(slot, p, memory_order_relaxed);
    }
    return p;
}

void pio_ip_say(const char *fmt, ...)
{
    char buf[1024];
    int e = errno, n;
    va_list ap;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
    va_end(ap);
    if (n >= 0) {
        if (n > (int)sizeof(buf) - 2)
            n = (int)sizeof(buf) - 2;
        buf[n++] = '\n';
        (void)!PIO_IP_REAL(write)(2, buf, (size_t)n); /* stderr gone: nothing to do */
    }
    errno = e;
}

int pio_ip_fail(int e)
{
    errno = e;
    return -1;
}

/* ---- the descriptor table ---------------------------------------------- */

struct pio_ip_rec *pio_ip_get(struct pio_ip_fds *t, int fd)
{
    struct pio_ip_rec *r;

    if (!pio_ip_has(t, fd))
        return NULL;
    pthread_mutex_lock(&t->mtx);
    r = atomic_load_explicit(&t->slot[fd], memory_order_acquire);
    if (r)
        r->refs++;
    pthread_mutex_unlock(&t->mtx);
    return r;
}

void pio_ip_ref(struct pio_ip_fds *t, struct pio_ip_rec *r)
{
    pthread_mutex_lock(&t->mtx);
    r->refs++;
    pthread_mutex_unlock(&t->mtx);
}

int pio_ip_unref(struct pio_ip_fds *t, struct pio_ip_rec *r)
{
    int last;

    pthread_mutex_lock(&t->mtx);
    last = --r->refs == 0;
    pthread_mutex_unlock(&t->mtx);
    return last;
}

struct pio_ip_rec *pio_ip_install(struct pio_ip_fds *t, int fd, struct pio_ip_rec *r)
{
    struct pio_ip_rec *old;

    pthread_mutex_lock(&t->mtx);
    old = atomic_exchange_explicit(&t->slot[fd], r, memory_order_acq_rel);
    if (r && fd >= atomic_load(&t->hw))
        atomic_store(&t->hw, fd + 1);
    pthread_mutex_unlock(&t->mtx);
    return old;
}

void pio_ip_own(struct pio_ip_fds *t)
{
    atomic_store(&t->owner, (int)getpid());
}

int pio_ip_mine(struct pio_ip_fds *t)
{
    return atomic_load(&t->owner) == (int)getpid();
}

void pio_ip_forget_all(struct pio_ip_fds *t)
{
    int hw = atomic_load(&t->hw);

    for (int fd = 0; fd < hw; fd++)
        atomic_store(&t->slot[fd], NULL); /* the records stay the parent's */
    atomic_store(&t->hw, 0);
    atomic_store(&t->owner, 0);
    t->mtx = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
}

/* ---- stdio ------------------------------------------------------------- */

static ssize_t pio_ip_ck_read(void *ck, char *buf, size_t n)
{
    return read((int)(intptr_t)ck, buf, n);
}

static ssize_t pio_ip_ck_write(void *ck, const char *buf, size_t n)
{
    ssize_t r = write((int)(intptr_t)ck, buf, n);

    return r < 0 ? 0 : r; /* fopencookie: 0 is the error */
}

static int pio_ip_ck_seek(void *ck, off64_t *pos, int whence)
{
    off_t r = lseek((int)(intptr_t)ck, *pos, whence);

    if (r < 0)
        return -1;
    *pos = r;
    return 0;
}

static int pio_ip_ck_close(void *ck)
{
    return close((int)(intptr_t)ck);
}

FILE *pio_ip_stream(int fd, const char *mode)
{
    cookie_io_functions_t io = {pio_ip_ck_read, pio_ip_ck_write, pio_ip_ck_seek, pio_ip_ck_close};
    char m[3] = {mode[0], strchr(mode, '+') ? '+' : '\0', '\0'};

    return fopencookie((void *)(intptr_t)fd, m, io);
}

FILE *pio_ip_stream_or_close(int fd, const char *mode)
{
    FILE *fp = pio_ip_stream(fd, mode);
    int e;

    if (!fp) {
        e = errno;
        close(fd);
        errno = e;
    }
    return fp;
}
