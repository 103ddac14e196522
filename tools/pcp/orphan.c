/* orphan.c - requests pcp and pio-files give up on, kept with their buffers.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * An error path (a read failed, the other side said no, a wait ran out)
 * leaves sends that may not be in the pool yet and receives still posted;
 * the library reads or writes their buffers until they are done, and only
 * PIO_Wait / PIO_Test free a request. So such a request and its buffer go on
 * a list here; pcp_orphans_reap frees those that are done (pio-files from
 * its loop, both after PIO_Exit, when every request is). */
#include "orphan.h"
#include "pio.h"

#include <pthread.h>
#include <stdlib.h>

struct orphan {
    struct orphan *next;
    PIO_Request rq;
    uint8_t *buf;
};

static pthread_mutex_t orphans_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct orphan *orphans;

void pcp_orphan(struct pio_request **rq, uint8_t **buf)
{
    if (!*rq)
        return;
    struct orphan *o = malloc(sizeof(*o));
    if (!o) { /* keep the buffer alive: a leak, never a write into freed memory */
        *rq = NULL;
        *buf = NULL;
        return;
    }
    o->rq = *rq;
    o->buf = *buf;
    *rq = NULL;
    *buf = NULL;
    pthread_mutex_lock(&orphans_mtx);
    o->next = orphans;
    orphans = o;
    pthread_mutex_unlock(&orphans_mtx);
    pcp_orphans_reap();
}

int pcp_orphans_reap(void)
{
    int left = 0;
    pthread_mutex_lock(&orphans_mtx);
    for (struct orphan **pp = &orphans; *pp;) {
        struct orphan *o = *pp;
        int done = 0;
        if (PIO_Test(&o->rq, &done, NULL) != PIO_OK || done || !o->rq) {
            *pp = o->next;
            free(o->buf);
            free(o);
        } else {
            pp = &o->next;
            left++;
        }
    }
    pthread_mutex_unlock(&orphans_mtx);
    return left;
}
