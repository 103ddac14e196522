/* preload.h - what the files of libpgas.so share (preload.c, preload_conn.c,
 * preload_file.c); private to them.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * preload_conn.c owns the process' one connection to the GAS dispatcher: the
 * batch of frames, the I/O thread, requests and their replies.
 * preload_file.c owns the descriptor table (gas_pl_fds) and what a pgas
 * file means: its position, its writes (queued or synchronous), its
 * attributes, opening, closing and duplicating it. preload.c holds the hooks
 * (PIO_IP_READ_HOOKS and PIO_IP_WRITE_HOOKS of common/interpose.h) and
 * what runs at fork and exit. Every name declared here is hidden: only the
 * hooks are libpgas.so's exports.
 *
 * Locks, in the order they may be taken (never leftwards):
 *   pgas_file.mtx  the file position, held across the requests that use it
 *   conn.send_mtx  the batch and every send on the socket (a stream: two
 *                  senders' bytes never interleave)
 *   conn.wait_mtx  the waiters, the dead flag's reason
 * gas_pl_fds.mtx (the reference counts of pgas_file and table updates) and
 * the connection's init mutex (making it) are only held alone.
 * Thread-safety: every function is thread-safe unless it says otherwise. */
#ifndef PFS_GAS_PRELOAD_H
#define PFS_GAS_PRELOAD_H

#include "interpose.h"
#include "wire.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>

#pragma GCC visibility push(hidden)

#define PGAS_MSG_MAX 256

/* One request waiting for its reply; on the caller's stack. */
struct pgas_waiter {
    struct pgas_waiter *next;
    uint32_t id;
    int done, lost; /* under wait_mtx; lost: the dispatcher went away */
    pthread_cond_t cv;
    struct gas_hdr rep;     /* the reply's header */
    void *buf;              /* a successful reply's payload goes here (or NULL) */
    size_t cap;             /* buf's size: a longer payload kills the connection */
    char msg[PGAS_MSG_MAX]; /* a failed reply's text */
};

/* The process' one connection to the dispatcher (never freed: a dead one
 * stays, so that every file that points to it can say so). */
struct pgas_conn {
    char sockpath[sizeof(((struct sockaddr_un *)0)->sun_path)];
    int sock; /* -1 once dead and closed (under send_mtx) */
    int evfd; /* wakes the I/O thread when the batch stops being empty */
    mode_t umask;
    long long flush_ns;
    atomic_uint next_id;
    atomic_int dead;
    pthread_mutex_t send_mtx;
    uint8_t *batch; /* whole frames, [bsent, blen) not sent yet */
    size_t bcap, blen, bsent;
    _Atomic long long bfirst; /* CLOCK_MONOTONIC ns of the batch's oldest frame; 0: empty */
    int io_busy, io_wantout;  /* the I/O thread's own */
    pthread_mutex_t wait_mtx;
    struct pgas_waiter *waiters;
    char reason[128]; /* why it died; set once */
};

/* One open pgas file; shared by the descriptors dup'ed from one open. */
struct pgas_file {
    struct pio_ip_rec rec; /* first: the references, under gas_pl_fds.mtx */
    struct pgas_conn *conn;
    uint32_t handle;
    int accmode;       /* O_RDONLY, O_WRONLY (asynchronous writes) or O_RDWR */
    atomic_int append; /* O_APPEND */
    int sync;          /* O_SYNC or O_DSYNC: each write applied before it returns */
    pthread_mutex_t mtx;
    off_t pos; /* under mtx */
    uint64_t ino;
    char path[]; /* the pfs path */
};

/* What OPEN, FSTAT and STAT replies say. */
struct pgas_attr {
    uint64_t size, mode, mtime_ns;
};

static inline size_t gas_pl_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* ---- the connection (preload_conn.c) ----------------------------------- */

/* gas_pl_conn - the process' connection, made on first use. NULL with errno. */
struct pgas_conn *gas_pl_conn(void);

/* gas_pl_conn_made - whether this process made its connection (alive or
 * dead). gas_pl_conn_forget - in a pthread_atfork child: no connection,
 * the parent's socket closed. */
int gas_pl_conn_made(void);
void gas_pl_conn_forget(void);

int gas_pl_send(struct pgas_conn *c, const struct gas_hdr *h, const void *payload, int now);
int gas_pl_gone(struct pgas_conn *c);
int gas_pl_rpc(struct pgas_conn *c, struct gas_hdr *h, const void *payload, struct pgas_waiter *w);
int gas_pl_check(const char *path, const struct pgas_waiter *w, int loud);
void gas_pl_hdr(struct gas_hdr *h, unsigned op, uint32_t handle);
void gas_pl_attr_of(const struct gas_hdr *rep, struct pgas_attr *a);
int gas_pl_path_rpc(unsigned op, uint16_t flags, const char *pfs, struct pgas_attr *a);
int gas_pl_handle_rpc(struct pgas_conn *c, uint32_t handle, const char *path, unsigned op,
                      uint64_t off, struct pgas_attr *a, int loud);

/* ---- files (preload_file.c) -------------------------------------------- */

/* descriptor -> pgas_file; owner: the process that made the connection */
extern struct pio_ip_fds gas_pl_fds;

/* gas_pl_slot - whether fd is a pgas descriptor now (the hooks' fast path). */
static inline int gas_pl_slot(int fd)
{
    return pio_ip_has(&gas_pl_fds, fd);
}

/* gas_pl_mine - whether this process owns the table (not a vfork child). */
static inline int gas_pl_mine(void)
{
    return pio_ip_mine(&gas_pl_fds);
}

struct pgas_file *gas_pl_get(int fd);
void gas_pl_release(struct pgas_file *f);
int gas_pl_forget(int fd);
int gas_pl_file_rpc(struct pgas_file *f, unsigned op, uint64_t off, struct pgas_attr *a, int loud);

ssize_t gas_pl_iov(int fd, const struct iovec *iov, int cnt, off_t off, int pos, int wr);
off_t gas_pl_lseek(int fd, off_t off, int whence);

int gas_pl_is_path(const char *path);
int gas_pl_stat_hook(int dirfd, const char *path, int flags, struct stat *st);
int gas_pl_statx_hook(int dirfd, const char *path, int flags, struct statx *sx);
/* gas_pl_statfs_hook - statfs of path, or fstatfs of fd when path is NULL:
 * for a pgas file system, the space `pfs df` shows summed over its I/O
 * servers (blocks of 4 KiB). 0 with *sf filled, -1 (errno), or
 * PIO_IP_NOT_OURS. */
int gas_pl_statfs_hook(int fd, const char *path, struct statfs *sf);
int gas_pl_access_hook(int dirfd, const char *path, int mode);
int gas_pl_xattr_hook(const char *path);
int gas_pl_unlink_hook(int dirfd, const char *path, int flags);

int gas_pl_open_hook(int dirfd, const char *path, int flags, mode_t mode);
FILE *gas_pl_fopen(const char *path, const char *mode);
int gas_pl_close(int fd);
void gas_pl_drop_range(unsigned lo, unsigned hi);
int gas_pl_dup_to(struct pgas_file *f, int nfd);
int gas_pl_dup2(int oldfd, int newfd, int flags);
int gas_pl_fcntl(int fd, int cmd, void *arg);

#pragma GCC visibility pop

#endif
