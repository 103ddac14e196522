/* registry.c - the one list of transport backends, stream and one-sided.
 * SPDX-License-Identifier: BSD-3-Clause
 * Optional backends are added here (and only here) under their HAVE_ flag;
 * registration checks that every mandatory op is present. "rdma" (UCX),
 * stream (rdma/stream.c) and one-sided (rdma/rma.c), is built with
 * WITH_UCX=1 (the default), which defines PIO_HAVE_UCX for this file alone
 * and links transport/rdma/; without it the lists hold tcp and nothing
 * one-sided (PIO_Win_create returns PIO_ENOSYS). No other file knows. */
#include "rma.h"
#include "transport.h"

#include <stdlib.h>
#include <string.h>

extern const struct pio_transport_ops pio_tcp_ops;
#ifdef PIO_HAVE_UCX
extern const struct pio_transport_ops pio_rdma_ops;
extern const struct pio_rma_ops pio_rma_rdma_ops;
#endif

static const struct pio_transport_ops *const tp_list[] = {
    &pio_tcp_ops,
#ifdef PIO_HAVE_UCX
    &pio_rdma_ops,
#endif
    NULL,
};

static const struct pio_rma_ops *const rma_list[] = {
#ifdef PIO_HAVE_UCX
    &pio_rma_rdma_ops,
#endif
    NULL,
};

static int tp_complete(const struct pio_transport_ops *t)
{
    return t->name && t->listen && t->accept && t->listener_shutdown && t->listener_close &&
           t->connect && t->sendv && t->recv && t->shutdown && t->close && t->addrs && t->fd;
}

int pio_rma_complete(const struct pio_rma_ops *r)
{
    return r->name && r->init && r->fini && r->address && r->connect && r->disconnect &&
           r->mem_register && r->mem_deregister && r->rkey_unpack && r->rkey_release && r->get &&
           r->put && r->cas64 && r->fadd64 && r->flush && r->describe;
}

const struct pio_transport_ops *pio_transport_find(const char *name)
{
    for (int i = 0; tp_list[i]; i++)
        if (strcmp(tp_list[i]->name, name) == 0)
            return tp_complete(tp_list[i]) ? tp_list[i] : NULL;
    return NULL;
}

const struct pio_transport_ops *const *pio_transport_list(void)
{
    return tp_list;
}

const struct pio_rma_ops *pio_rma_pick(unsigned need)
{
    const char *want = getenv("PIO_RMA");
    for (int i = 0; rma_list[i]; i++)
        if ((!want || !*want || strcmp(rma_list[i]->name, want) == 0) &&
            pio_rma_complete(rma_list[i]) && (rma_list[i]->caps & need) == need)
            return rma_list[i];
    return NULL;
}

const struct pio_rma_ops *const *pio_rma_list(void)
{
    return rma_list;
}
