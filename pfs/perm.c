/* perm.c - POSIX permissions of pfs entries (perm.h).
 * SPDX-License-Identifier: BSD-3-Clause */
#include "perm.h"

#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <sys/types.h>

void pfs_cred_make(uint32_t uid, uint32_t gid, const char *user, int root_squash,
                   struct pfs_cred *c)
{
    memset(c, 0, sizeof(*c));
    if (root_squash && uid == 0) {
        c->uid = c->gid = PFS_NOBODY;
        c->ngroups = 1;
        c->groups[0] = PFS_NOBODY;
        return;
    }
    c->uid = uid;
    c->gid = gid;
    gid_t g[PFS_CRED_GROUPS];
    int n = PFS_CRED_GROUPS;
    if (user && user[0] && getgrouplist(user, (gid_t)gid, g, &n) >= 0) {
        for (int i = 0; i < n; i++)
            c->groups[i] = (uint32_t)g[i];
        c->ngroups = n;
    } else { /* unknown here, or too many groups: its own group alone */
        c->groups[0] = gid;
        c->ngroups = 1;
    }
}

static int in_group(const struct pfs_cred *c, uint32_t gid)
{
    for (int i = 0; i < c->ngroups; i++)
        if (c->groups[i] == gid)
            return 1;
    return c->gid == gid;
}

int pfs_may(const struct pfs_cred *c, const struct pfs_attr *a, int want)
{
    if (c->uid == 0) /* root: all, but running needs some x bit on a file */
        return !(want & PFS_MAY_X) || a->type == PFS_T_DIR || (a->mode & 0111) != 0;
    uint32_t bits = c->uid == a->uid      ? (a->mode >> 6) & 7
                    : in_group(c, a->gid) ? (a->mode >> 3) & 7
                                          : a->mode & 7;
    return ((int)bits & want) == want;
}

int pfs_may_remove(const struct pfs_cred *c, const struct pfs_attr *dir, const struct pfs_attr *e)
{
    return !(dir->mode & 01000) || c->uid == 0 || c->uid == e->uid || c->uid == dir->uid;
}
