/* keys.h - CURVE key files: generate, load ours, load the authorized peers.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A key directory holds NAME.key (this system's secret + public key, Z85, mode
 * 0600) and NAME.pub (public key, Z85) for every system allowed to talk to us;
 * ours is among them. File format: `public-key = <40 chars>` and (in .key)
 * `secret-key = <40 chars>` lines, `#` comments.
 * Thread-safety: piod_keys_find may be called from any thread once loaded
 * (read-only); the rest from the main thread. */
#ifndef PIOD_KEYS_H
#define PIOD_KEYS_H

#include <stdio.h>

#define PIOD_Z85_KEY 41 /* 40 chars + NUL */

struct piod_keys {
    char public_key[PIOD_Z85_KEY];
    char secret_key[PIOD_Z85_KEY];
    int npeers;
    struct {
        char name[64];
        char public_key[PIOD_Z85_KEY];
    } peer[256];
};

/* piod_keys_generate - write DIR/NAME.key (0600) and DIR/NAME.pub, creating
 * DIR (0700) if needed; refuses to overwrite an existing NAME.key.
 * Returns PIO_OK, PIO_EEXIST, or a converted errno; explains on errs. */
int piod_keys_generate(const char *dir, const char *name, FILE *errs);

/* piod_keys_load - read DIR/NAME.key into k, and every DIR/ *.pub into
 * k->peer. Returns PIO_OK, PIO_ENOENT (no NAME.key: says to run
 * `piod --keygen DIR --name NAME`), PIO_ECONFIG (malformed file, with the file
 * and line on errs), PIO_EPERM (NAME.key readable by group/others). */
int piod_keys_load(struct piod_keys *k, const char *dir, const char *name, FILE *errs);

/* piod_keys_find - the peer name for a Z85 public key, or NULL if unknown. */
const char *piod_keys_find(const struct piod_keys *k, const char *z85_public);

/* piod_keys_public_of - the Z85 public key of peer name, or NULL. */
const char *piod_keys_public_of(const struct piod_keys *k, const char *name);

#endif
