/* htab.c - the intrusive hash table (htab.h).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "htab.h"

#include <stdlib.h>

uint64_t piod_hash64(uint64_t a, uint64_t b)
{
    uint64_t x = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull) * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 29);
}

static int grow(struct piod_htab *t)
{
    size_t nb = t->nb ? t->nb * 2 : 64;
    struct piod_hlink **b = calloc(nb, sizeof(*b));
    if (!b)
        return -1;
    for (size_t i = 0; i < t->nb; i++)
        for (struct piod_hlink *l = t->b[i], *next; l; l = next) {
            next = l->next;
            l->next = b[l->h & (nb - 1)];
            b[l->h & (nb - 1)] = l;
        }
    free(t->b);
    t->b = b;
    t->nb = nb;
    return 0;
}

int piod_htab_add(struct piod_htab *t, struct piod_hlink *l, uint64_t h)
{
    if ((t->n >= 2 * t->nb && grow(t) != 0 && t->nb == 0))
        return -1; /* a full table still takes entries (longer chains) */
    l->h = h;
    l->next = t->b[h & (t->nb - 1)];
    t->b[h & (t->nb - 1)] = l;
    t->n++;
    return 0;
}

void piod_htab_del(struct piod_htab *t, struct piod_hlink *l)
{
    if (!t->nb)
        return;
    for (struct piod_hlink **pp = &t->b[l->h & (t->nb - 1)]; *pp; pp = &(*pp)->next)
        if (*pp == l) {
            *pp = l->next;
            l->next = NULL;
            t->n--;
            return;
        }
}

struct piod_hlink *piod_htab_first(const struct piod_htab *t, uint64_t h)
{
    if (!t->nb)
        return NULL;
    struct piod_hlink *l = t->b[h & (t->nb - 1)];
    while (l && l->h != h)
        l = l->next;
    return l;
}

struct piod_hlink *piod_htab_next(const struct piod_hlink *l)
{
    uint64_t h = l->h;
    for (l = l->next; l && l->h != h; l = l->next)
        ;
    return (struct piod_hlink *)l;
}

void piod_htab_free(struct piod_htab *t)
{
    free(t->b);
    t->b = NULL;
    t->nb = t->n = 0;
}
