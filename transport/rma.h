/* rma.h - the one-sided ops table: get, put and 64-bit atomics on registered remote memory.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A one-sided backend is one const struct pio_rma_ops (registry.c is the
 * one place backends are listed). Callers pick one by what it can do
 * (pio_rma_pick, caps), or list them all; they never see the library
 * underneath (UCX for "rdma"). tests/unit/test_rma.c is the conformance
 * suite every listed backend must pass.
 *
 * Objects: a context (struct pio_rma) owns the communication library's state
 * and one progress thread; endpoints (pio_rma_ep) connect it to a remote
 * context whose address was published out of band (the piod control plane,
 * or a pipe in the tests); registered memory (pio_rma_mem) gives a packed
 * remote key that the owner publishes the same way; the peer unpacks it for
 * one endpoint (pio_rma_rkey) and then reads, writes and updates the
 * owner's memory without the owner doing anything.
 *
 * The owner's part: nothing. Where the transport has no native get or
 * atomics (UCX over tcp emulates them with active messages served by the
 * target), the context's progress thread serves them; it sleeps on the
 * library's event descriptor while nothing happens, so an idle context costs
 * no CPU. An application thread that sleeps, computes or blocks elsewhere
 * still has its memory read and written.
 *
 * Completion: get, put, cas64, fadd64 and flush are non-blocking. A call
 * either returns an error at once (its callback is then never called), or
 * returns PIO_OK and its callback runs exactly once with the outcome: PIO_OK
 * or a PIO_E* code. The callback may run before the call returns (on the
 * calling thread) or later on the context's progress thread, never with a
 * lock of the backend held; it may post more operations, but must not call
 * fini, disconnect, mem_deregister or rkey_release of objects in use, and
 * should return quickly (it holds up every other completion of the context).
 *
 * Errors: PIO_EINVAL (bad argument), PIO_ENOMEM, PIO_EGONE (the peer's
 * process or connection is gone), PIO_ETIMEDOUT, PIO_ENOSYS (not supported by
 * the transports in use), PIO_ECANCELED (the endpoint was disconnected with
 * the operation in flight), PIO_EIO (any other failure of the library).
 *
 * Thread-safety: every op may be called from any thread at once, except
 * that an object must not be freed (fini, disconnect, mem_deregister,
 * rkey_release) while another thread uses it. Objects created before fork()
 * must not be used in the child.
 */
#ifndef PIO_RMA_H
#define PIO_RMA_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct pio_rma;      /* a context: library state, one worker, its progress thread */
struct pio_rma_ep;   /* a connection to one remote context */
struct pio_rma_mem;  /* registered local memory */
struct pio_rma_rkey; /* a remote memory key, unpacked for one endpoint */

/* The completion callback: status is PIO_OK or a PIO_E* code. */
typedef void (*pio_rma_cb)(void *arg, int status);

/* What a backend can do (struct pio_rma_ops.caps). */
#define PIO_RMA_CAP_GETPUT  0x1u /* get, put and flush */
#define PIO_RMA_CAP_ATOMICS 0x2u /* cas64 and fadd64 (natively or emulated) */

struct pio_rma_ops {
    const char *name;
    unsigned caps; /* PIO_RMA_CAP_* */

    /* init - a new context with its progress thread running. The library's
     * own environment (UCX_TLS, UCX_NET_DEVICES, ...) is honoured.
     * ctx [out]: the context, owned by the caller until fini.
     * Returns PIO_OK, PIO_ENOMEM, PIO_EIO (the library would not start). */
    int (*init)(struct pio_rma **ctx);

    /* fini - stop the progress thread and free the context. Every endpoint,
     * registration and key of it must have been freed first (so nothing is
     * in flight). ctx may be NULL. Not from a callback. */
    void (*fini)(struct pio_rma *ctx);

    /* address - this context's address, to publish to peers.
     * addr, len [out]: the bytes; owned by ctx, valid until fini.
     * Returns PIO_OK or PIO_EIO. */
    int (*address)(struct pio_rma *ctx, const void **addr, size_t *len);

    /* connect - an endpoint to the context whose address is addr[0..len)
     * (another process's, or this one's). addr [in]: read, not kept.
     * Does not wait for the peer: an unreachable peer shows as errors of
     * the first operations. ep [out]: owned by the caller until disconnect.
     * Returns PIO_OK, PIO_EINVAL (not an address), PIO_EADDR (unreachable
     * with the transports allowed), PIO_ENOMEM, PIO_EIO. */
    int (*connect)(struct pio_rma *ctx, const void *addr, size_t len, struct pio_rma_ep **ep);

    /* disconnect - close and free ep. Call it after every operation's
     * callback on ep has run and its keys were released. Blocks while
     * UCX flushes the endpoint: until the peer answers, or is found gone
     * (about a second, the keepalive interval). ep may be NULL. Not from a
     * callback. */
    void (*disconnect)(struct pio_rma_ep *ep);

    /* mem_register - register buf[0..len) for remote access (get, put and
     * atomics on 8-byte aligned words).
     * buf [in]: caller's memory, must stay valid until mem_deregister.
     * m [out]: the registration. rkey, rkey_len [out]: the packed remote
     * key to publish; malloc'd, the caller frees it (on failure nothing is
     * allocated). Returns PIO_OK, PIO_EINVAL (len 0), PIO_ENOMEM, PIO_EIO. */
    int (*mem_register)(struct pio_rma *ctx, void *buf, size_t len, struct pio_rma_mem **m,
                        void **rkey, size_t *rkey_len);

    /* mem_deregister - end remote access to the memory and free m. Peers'
     * later operations on it fail or touch nothing (the library decides
     * which: callers that need PIO_EWINFREED keep their own window state).
     * m may be NULL. */
    void (*mem_deregister)(struct pio_rma_mem *m);

    /* rkey_unpack - a packed key from the memory's owner, made usable on
     * ep. rkey [in]: read, not kept. rk [out]: owned by the caller until
     * rkey_release, which must come before disconnect of ep.
     * Returns PIO_OK, PIO_EINVAL (not a key), PIO_ENOMEM, PIO_EIO. */
    int (*rkey_unpack)(struct pio_rma_ep *ep, const void *rkey, size_t len,
                       struct pio_rma_rkey **rk);

    /* rkey_release - free rk. rk may be NULL. */
    void (*rkey_release)(struct pio_rma_rkey *rk);

    /* get - read len bytes at the owner's address raddr (inside the memory
     * rk names) into dst. dst [out]: written until the callback runs; the
     * caller keeps it valid until then. len 0 completes at once. */
    int (*get)(struct pio_rma_ep *ep, void *dst, size_t len, uint64_t raddr,
               struct pio_rma_rkey *rk, pio_rma_cb cb, void *arg);

    /* put - write src[0..len) at raddr. src [in]: read until the callback
     * runs. PIO_OK in the callback means the data left src (it is reusable);
     * that it reached the owner's memory is known after a flush. */
    int (*put)(struct pio_rma_ep *ep, const void *src, size_t len, uint64_t raddr,
               struct pio_rma_rkey *rk, pio_rma_cb cb, void *arg);

    /* cas64 - atomically: old value of the word at raddr (8-byte aligned)
     * into *old; if it equalled compare, the word becomes swap.
     * old [out]: written before the callback runs with PIO_OK; valid until
     * then. */
    int (*cas64)(struct pio_rma_ep *ep, uint64_t raddr, struct pio_rma_rkey *rk, uint64_t compare,
                 uint64_t swap, uint64_t *old, pio_rma_cb cb, void *arg);

    /* fadd64 - atomically add `add` to the word at raddr; its previous value
     * into *old (old may be NULL: not fetched). */
    int (*fadd64)(struct pio_rma_ep *ep, uint64_t raddr, struct pio_rma_rkey *rk, uint64_t add,
                  uint64_t *old, pio_rma_cb cb, void *arg);

    /* flush - the callback runs when every operation posted on ep before
     * this call is complete at the owner (puts visible in its memory). */
    int (*flush)(struct pio_rma_ep *ep, pio_rma_cb cb, void *arg);

    /* progress - run a round of the library's progress on the calling
     * thread (completions found run their callbacks here). For a thread
     * that waits for an answer due within microseconds: the progress
     * thread would otherwise have to be woken to run it. Never blocks; must
     * not be called from a callback. May be NULL (the backend has none). */
    void (*progress)(struct pio_rma *ctx);

    /* describe - print to out the library's version, its settings that
     * matter (UCX_TLS, ...), the transports and devices this host offers,
     * and which of them each operation (stream, get, put, atomics) uses to
     * another process on this host. Returns PIO_OK or PIO_EIO. */
    int (*describe)(struct pio_rma *ctx, FILE *out);
};

/* pio_rma_pick - the first listed backend that has every op and every
 * capability in need (PIO_RMA_CAP_*), or NULL. $PIO_RMA names one instead
 * (it must still have them). Thread-safe. */
const struct pio_rma_ops *pio_rma_pick(unsigned need);

/* pio_rma_list - every listed backend, NULL-terminated (complete or not:
 * pio_rma_complete says). pio_rma_complete - 1 when r has every mandatory
 * op. Thread-safe. */
const struct pio_rma_ops *const *pio_rma_list(void);
int pio_rma_complete(const struct pio_rma_ops *r);

/* pio_rma_wait - for callers that want to block: a pio_rma_cb and its
 * state. Initialize with pio_rma_wait_init, pass (pio_rma_wait_cb, &w) as
 * cb and arg, then pio_rma_wait_for(&w, ms) returns the operation's status,
 * or PIO_ETIMEDOUT after ms milliseconds (ms < 0: no limit); after a time-out
 * w must stay valid until the callback has run. Thread-safe. */
struct pio_rma_wait {
    pthread_mutex_t mtx;
    pthread_cond_t cv;
    int done, status;
};
void pio_rma_wait_init(struct pio_rma_wait *w);
void pio_rma_wait_cb(void *arg, int status);
int pio_rma_wait_for(struct pio_rma_wait *w, int ms);
void pio_rma_wait_destroy(struct pio_rma_wait *w);

#endif
