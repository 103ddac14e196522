/* lists.c - anco's singlet and general lists (lists.h): intrusive doubly
 * linked lists in index arrays, every operation O(1) but the victim search,
 * which moves singlets aside one by one (each at most once per search).
 * SPDX-License-Identifier: BSD-3-Clause */
#include "lists.h"

#include <stdlib.h>

int anco_lists_init(struct anco_lists *l, uint32_t cap, double ratio)
{
    if (cap == 0 || cap > INT32_MAX || !(ratio >= 0.0 && ratio <= 1.0))
        return -1;
    l->cap = cap;
    l->singlet_max = (uint32_t)(ratio * cap);
    l->prev = malloc(cap * sizeof(*l->prev));
    l->next = malloc(cap * sizeof(*l->next));
    l->where = calloc(cap, 1);
    if (!l->prev || !l->next || !l->where) {
        anco_lists_fini(l);
        return -1;
    }
    for (int k = 0; k < 3; k++) {
        l->head[k] = l->tail[k] = -1;
        l->len[k] = 0;
    }
    /* the free list holds every entry, 0 first */
    for (uint32_t i = 0; i < cap; i++) {
        l->prev[i] = (int32_t)i - 1;
        l->next[i] = i + 1 < cap ? (int32_t)i + 1 : -1;
    }
    l->head[ANCO_FREE] = 0;
    l->tail[ANCO_FREE] = (int32_t)cap - 1;
    l->len[ANCO_FREE] = cap;
    return 0;
}

void anco_lists_fini(struct anco_lists *l)
{
    free(l->prev);
    free(l->next);
    free(l->where);
    l->prev = l->next = NULL;
    l->where = NULL;
}

static void unlink_entry(struct anco_lists *l, int32_t i)
{
    int w = l->where[i];
    if (l->prev[i] >= 0)
        l->next[l->prev[i]] = l->next[i];
    else
        l->head[w] = l->next[i];
    if (l->next[i] >= 0)
        l->prev[l->next[i]] = l->prev[i];
    else
        l->tail[w] = l->prev[i];
    l->len[w]--;
    l->prev[i] = l->next[i] = -1;
}

static void push_head(struct anco_lists *l, int w, int32_t i)
{
    l->where[i] = (uint8_t)w;
    l->prev[i] = -1;
    l->next[i] = l->head[w];
    if (l->head[w] >= 0)
        l->prev[l->head[w]] = i;
    else
        l->tail[w] = i;
    l->head[w] = i;
    l->len[w]++;
}

int32_t anco_lists_take_free(struct anco_lists *l)
{
    int32_t i = l->head[ANCO_FREE];
    if (i < 0)
        return -1;
    unlink_entry(l, i);
    push_head(l, ANCO_GENERAL, i);
    return i;
}

void anco_lists_hit(struct anco_lists *l, int32_t i)
{
    if (l->where[i] != ANCO_OUT)
        unlink_entry(l, i);
    push_head(l, ANCO_GENERAL, i);
}

void anco_lists_release(struct anco_lists *l, int32_t i)
{
    if (l->where[i] != ANCO_OUT)
        unlink_entry(l, i);
    push_head(l, ANCO_FREE, i);
}

int32_t anco_lists_victim(struct anco_lists *l, int (*is_singlet)(void *ctx, int32_t i), void *ctx)
{
    for (;;) {
        int32_t v;
        if (l->len[ANCO_SINGLET] > l->singlet_max || l->len[ANCO_GENERAL] == 0) {
            if ((v = l->tail[ANCO_SINGLET]) < 0)
                return -1;
            unlink_entry(l, v);
            l->where[v] = ANCO_OUT; /* off every list: the caller's now */
            return v;
        }
        v = l->tail[ANCO_GENERAL];
        unlink_entry(l, v);
        if (l->singlet_max > 0 && is_singlet && is_singlet(ctx, v)) {
            push_head(l, ANCO_SINGLET, v);
            continue;
        }
        l->where[v] = ANCO_OUT;
        return v;
    }
}
