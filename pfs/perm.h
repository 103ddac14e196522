/* perm.h - POSIX permissions of pfs entries, judged on a caller's stamped identity.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The metadata server (and the GAS dispatcher, for the processes it serves)
 * decide with these: owner, group and other bits of an entry's mode against
 * a credential made from the identity the piods stamped on a request
 * (uid, gid, user name; the user's other groups are looked up by name on
 * the deciding host). Root may do anything but run a file without an x
 * bit; with root squash it is nobody (65534). No state: thread-safe. */
#ifndef PFS_PERM_H
#define PFS_PERM_H

#include "proto.h"

#include <stdint.h>

#define PFS_MAY_R 4
#define PFS_MAY_W 2
#define PFS_MAY_X 1

#define PFS_NOBODY      65534u /* what root squash makes of uid and gid 0 */
#define PFS_CRED_GROUPS 64

struct pfs_cred {
    uint32_t uid, gid;
    int ngroups; /* gid and the user's other groups */
    uint32_t groups[PFS_CRED_GROUPS];
};

/* pfs_cred_make - the credential of uid, gid and user name (may be "": then
 * gid alone); root_squash: uid 0 becomes PFS_NOBODY, with group PFS_NOBODY. */
void pfs_cred_make(uint32_t uid, uint32_t gid, const char *user, int root_squash,
                   struct pfs_cred *c);

/* pfs_may - 1 when c may do want (PFS_MAY_* bits) to an entry of attributes
 * a, else 0. */
int pfs_may(const struct pfs_cred *c, const struct pfs_attr *a, int want);

/* pfs_may_remove - 1 when c may remove or replace entry e of directory dir
 * as far as the sticky bit goes (c owns e or dir, or is root), else 0; the
 * write and search bits of dir are pfs_may's. */
int pfs_may_remove(const struct pfs_cred *c, const struct pfs_attr *dir, const struct pfs_attr *e);

#endif
