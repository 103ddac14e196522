/* registry.c - the one list of transport backends.
 * SPDX-License-Identifier: BSD-3-Clause
 * Optional backends are added here (and only here) under their HAVE_ flag;
 * registration checks that every mandatory op is present. */
#include "transport/transport.h"

#include <string.h>

extern const struct pio_transport_ops pio_tcp_ops;

static const struct pio_transport_ops *const tp_list[] = {
    &pio_tcp_ops,
    NULL,
};

static int tp_complete(const struct pio_transport_ops *t)
{
    return t->name && t->listen && t->accept && t->listener_shutdown && t->listener_close &&
           t->connect && t->sendv && t->recv && t->shutdown && t->close && t->addrs;
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
