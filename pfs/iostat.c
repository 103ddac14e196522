/* iostat.c - an I/O server's request and seek counters (iostat.h).
 * SPDX-License-Identifier: BSD-3-Clause */
#include "iostat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pfs_iostat_init(struct pfs_iostat *s)
{
    memset(s, 0, sizeof(*s));
    s->last = calloc(PFS_IOSTAT_SLOTS, sizeof(*s->last));
    if (!s->last)
        return -1;
    pthread_mutex_init(&s->mtx, NULL);
    return 0;
}

void pfs_iostat_fini(struct pfs_iostat *s)
{
    if (!s->last)
        return;
    pthread_mutex_destroy(&s->mtx);
    free(s->last);
    s->last = NULL;
}

static size_t slot_of(uint64_t fid)
{
    fid ^= fid >> 33;
    fid *= 0xff51afd7ed558ccdull;
    fid ^= fid >> 33;
    return (size_t)(fid % PFS_IOSTAT_SLOTS);
}

void pfs_iostat_note(struct pfs_iostat *s, uint64_t fid, uint64_t off, uint64_t len, int write)
{
    size_t i = slot_of(fid);
    pthread_mutex_lock(&s->mtx);
    uint64_t prev = s->last[i].fid == fid ? s->last[i].end : 0;
    s->last[i].fid = fid;
    s->last[i].end = off + len;
    s->c.seeks += off != prev;
    if (write) {
        s->c.writes++;
        s->c.bytes_written += len;
    } else {
        s->c.reads++;
        s->c.bytes_read += len;
    }
    pthread_mutex_unlock(&s->mtx);
}

struct pfs_iostat_counts pfs_iostat_get(struct pfs_iostat *s, int reset)
{
    pthread_mutex_lock(&s->mtx);
    struct pfs_iostat_counts c = s->c;
    if (reset)
        memset(&s->c, 0, sizeof(s->c));
    pthread_mutex_unlock(&s->mtx);
    return c;
}

size_t pfs_iostat_format(const struct pfs_iostat_counts *c, char *buf, size_t cap)
{
    int n = snprintf(buf, cap,
                     "io requests=%llu writes=%llu reads=%llu bytes_written=%llu bytes_read=%llu "
                     "seeks=%llu\n",
                     (unsigned long long)(c->writes + c->reads), (unsigned long long)c->writes,
                     (unsigned long long)c->reads, (unsigned long long)c->bytes_written,
                     (unsigned long long)c->bytes_read, (unsigned long long)c->seeks);
    if (n < 0 || (size_t)n >= cap) {
        if (cap)
            buf[0] = '\0';
        return 0;
    }
    return (size_t)n;
}
