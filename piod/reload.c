/* reload.c - SIGHUP: take new peers, keys and application owners from the config file.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * piod_reload runs on the main thread, between two turns of its loop, so
 * nothing it changes is read by the main loop half-way. It reads the file
 * the piod started from (and the key directory) into fresh structures,
 * checks them as start-up would, and changes nothing when they are wrong:
 * a reload either applies or is refused as a whole, with the problems in the
 * log. What it applies:
 *   keys      the key directory again: a new NAME.pub lets that system in
 *             (the ZAP handler reads d->keys), a changed one of a peer we
 *             know is used from its next control connection (the DEALER is
 *             given the new server key and reconnected), a member's changed
 *             key gets its load-report MAC key derived again. Our own key
 *             pair stays (peers know us by it) until a restart.
 *   peers     a [peer] section with a new name is opened as at start (its
 *             DEALER, its lane; channels follow its H_HELLO) and published
 *             to the channel threads by raising d->npeers last, after its
 *             slot is complete (the receiver threads look a peer up by
 *             name in d->peers[0 .. d->npeers)). A peer whose section is
 *             gone or changed is kept as it runs, with a line in the log:
 *             peers are indexed everywhere (messages, grants, channels), so
 *             removing or rewiring one waits for a restart.
 *   owners    [application] sections replace the old ones; they are read
 *             when a process joins.
 * Members and every top-level key stay as they are: the members and the
 * listen addresses make the system's link order, which every bundle to a
 * peer is built on; a reload that changes the members logs that a restart
 * is due (top-level keys may come from flags, so they are not compared).
 * piod_peer_reconnect also serves peer.c: a peer that refused our key at
 * the CURVE handshake and then says hello is connected to again (libzmq
 * does not retry after a refusal), which is how a system that started
 * before its peer's reload reaches it afterwards.
 * Nothing here touches a process, a message or a channel that exists, so a
 * reload drops none of them. No locks of its own; nothing here exits.
 */
#include "piod.h"
#include "core_int.h"
#include "log.h"
#include "err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

/* Log each line of a memstream's text at warn level; free it. */
static void rl_log_lines(char *text)
{
    char *save = NULL;
    for (char *l = text ? strtok_r(text, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save))
        PIOD_WARN("reload: %s", l);
    free(text);
}

/* Read the key directory into *k (our name: ident). Returns PIO_OK or the
 * loader's error, its lines logged. */
static int rl_keys(struct piod *d, struct piod_keys *k)
{
    char *text = NULL;
    size_t len = 0;
    FILE *errs = open_memstream(&text, &len);
    int rc = piod_keys_load(k, d->cfg.keys, d->cfg.ident, errs);
    if (errs)
        fclose(errs);
    rl_log_lines(text);
    return rc;
}

/* Read the config file into *n and check it as start-up does. Returns 0,
 * or the number of problems (logged). */
static int rl_config(struct piod *d, struct piod_config *n)
{
    char *text = NULL;
    size_t len = 0;
    FILE *errs = open_memstream(&text, &len);
    piod_config_defaults(n);
    /* as at start: the flags' name and system over the file's defaults */
    snprintf(n->name, sizeof(n->name), "%s", d->cfg.name);
    snprintf(n->system, sizeof(n->system), "%s", d->cfg.system);
    int problems = piod_config_load(n, d->cfg.config_path, errs);
    if (problems < 0)
        problems = 1;
    if (problems == 0)
        problems = piod_config_validate(n, errs);
    if (errs)
        fclose(errs);
    rl_log_lines(text);
    return problems;
}

static int rl_find_peer(const struct piod_config *c, const char *name)
{
    for (int i = 0; i < c->npeers; i++)
        if (strcmp(c->peers[i].name, name) == 0)
            return i;
    return -1;
}

/* Say which settings the file changed that only a restart applies. */
/* Members come from the file alone (no flag sets them), so a difference is
 * the file's; top-level keys may come from flags that override the file,
 * so they are not compared (the man page says they wait for a restart). */
static void rl_restart_notes(const struct piod *d, const struct piod_config *n)
{
    const struct piod_config *c = &d->cfg;
    if (n->nmembers != c->nmembers ||
        memcmp(n->members, c->members, (size_t)c->nmembers * sizeof(c->members[0])) != 0)
        PIOD_WARN("reload: the [member] sections changed: the system's links change only on a "
                  "restart (of every member); members kept as they were");
}

void piod_peer_reconnect(struct piod *d, int i)
{
    struct piod_peer_st *p = &d->peers[i];
    const char *key = piod_keys_public_of(&d->keys, p->cfg->name);
    char ep[PIOD_PATH_MAX + 16];
    if (!key || !p->dealer)
        return;
    piod_peer_ctl_ep(d, i, ep, sizeof(ep));
    zmq_setsockopt(p->dealer, ZMQ_CURVE_SERVERKEY, key, 40);
    zmq_disconnect(p->dealer, ep);
    if (zmq_connect(p->dealer, ep) != 0)
        PIOD_ERR("cannot connect to peer %s at %s again: %s", p->cfg->name, ep,
                 zmq_strerror(zmq_errno()));
}

/* Take the key directory's new contents; our own pair stays. */
static void rl_apply_keys(struct piod *d, struct piod_keys *k)
{
    if (strcmp(k->public_key, d->keys.public_key) != 0) {
        PIOD_WARN("reload: our own key pair changed in %s: peers know us by the old one, which "
                  "stays in use until a restart",
                  d->cfg.keys);
        memcpy(k->public_key, d->keys.public_key, sizeof(k->public_key));
        memcpy(k->secret_key, d->keys.secret_key, sizeof(k->secret_key));
    }
    for (int i = 0; i < d->npeers; i++) {
        const char *old = piod_keys_public_of(&d->keys, d->peers[i].cfg->name);
        const char *now = piod_keys_public_of(k, d->peers[i].cfg->name);
        struct piod_peer_st *p = &d->peers[i];
        if (!now) {
            PIOD_WARN("reload: no key for peer %s any more: its open control connection stays, "
                      "a new one is refused",
                      p->cfg->name);
            continue;
        }
        if (old && strcmp(old, now) == 0)
            continue;
        PIOD_INFO("reload: peer %s has a new key: its control connection is made again with it",
                  p->cfg->name);
        d->keys = *k; /* piod_peer_reconnect takes the key from d->keys */
        piod_peer_reconnect(d, i);
    }
    for (int m = 0; d->members && m < d->cfg.nmembers; m++) {
        const char *old = piod_keys_public_of(&d->keys, d->cfg.members[m].name);
        const char *now = piod_keys_public_of(k, d->cfg.members[m].name);
        if (!old || !now || strcmp(old, now) != 0)
            d->members[m].mac_state = 0; /* derived again at the next report */
    }
    d->keys = *k;
}

/* Open the peers the file names that we do not know. Returns how many. */
static int rl_add_peers(struct piod *d, const struct piod_config *n)
{
    int added = 0;
    for (int i = 0; i < n->npeers; i++) {
        const struct piod_peer *np = &n->peers[i];
        int k = rl_find_peer(&d->cfg, np->name);
        if (k >= 0) {
            if (memcmp(np, &d->cfg.peers[k], sizeof(*np)) != 0)
                PIOD_WARN("reload: peer %s changed (addresses, ports or encrypt): kept as it "
                          "runs until a restart",
                          np->name);
            continue;
        }
        if (d->npeers >= PIOD_MAX_PEERS) {
            PIOD_ERR("reload: cannot add peer %s: at most %d peers", np->name, PIOD_MAX_PEERS);
            continue;
        }
        if (!piod_keys_public_of(&d->keys, np->name)) {
            PIOD_ERR("reload: no public key for new peer %s in %s: copy %s.pub there and send "
                     "SIGHUP again",
                     np->name, d->cfg.keys, np->name);
            continue;
        }
        int slot = d->npeers;
        d->cfg.peers[slot] = *np;
        memset(&d->peers[slot], 0, sizeof(d->peers[slot]));
        int rc = piod_peer_open(d, slot);
        if (rc != PIO_OK) {
            struct piod_peer_st *p = &d->peers[slot];
            PIOD_ERR("reload: cannot open peer %s: %s", np->name, PIO_Strerror(rc));
            if (p->mon)
                zmq_close(p->mon);
            if (p->dealer)
                zmq_close(p->dealer);
            piod_lseq_fini(&p->lq);
            memset(p, 0, sizeof(*p));
            continue;
        }
        /* publish: the slot is complete before the channel threads see it */
        pthread_mutex_lock(&d->key_mtx);
        __atomic_store_n(&d->cfg.npeers, slot + 1, __ATOMIC_RELEASE);
        __atomic_store_n(&d->npeers, slot + 1, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&d->key_mtx);
        peer_send_hello(d, slot);
        PIOD_INFO("reload: new peer %s (%d address(es)), control %s", np->name, np->naddr,
                  np->control[0] ? np->control : np->addr[0]);
        added++;
    }
    for (int k = 0; k < d->cfg.npeers; k++)
        if (rl_find_peer(n, d->cfg.peers[k].name) < 0)
            PIOD_WARN("reload: peer %s is not in %s any more: kept until a restart",
                      d->cfg.peers[k].name, d->cfg.config_path);
    return added;
}

void piod_reload(struct piod *d)
{
    struct piod_config *n = calloc(1, sizeof(*n));
    struct piod_keys *k = calloc(1, sizeof(*k));
    int added = 0;

    if (!n || !k) {
        PIOD_ERR("reload: out of memory: nothing changed");
        goto free;
    }
    if (rl_keys(d, k) != PIO_OK) {
        PIOD_ERR("reload: the key directory %s cannot be read: nothing changed", d->cfg.keys);
        goto free;
    }
    if (!d->cfg.config_path) { /* started from flags: the keys are all there is */
        rl_apply_keys(d, k);
        PIOD_INFO("reload: keys read again from %s (no config file: peers come from flags)",
                  d->cfg.keys);
        goto free;
    }
    int problems = rl_config(d, n);
    if (problems) {
        PIOD_ERR("reload: %d problem(s) in %s: nothing changed", problems, d->cfg.config_path);
        goto free;
    }
    rl_restart_notes(d, n);
    rl_apply_keys(d, k);
    added = rl_add_peers(d, n);
    memcpy(d->cfg.apps, n->apps, sizeof(d->cfg.apps));
    d->cfg.napps = n->napps;
    PIOD_INFO("reload: %s read again: %d new peer(s), %d peer(s) in all, %d key(s)",
              d->cfg.config_path, added, d->npeers, d->keys.npeers);
free:
    free(n);
    free(k);
}
