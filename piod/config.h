/* config.h - piod configuration: defaults, config file, command-line flags, checks.
 * SPDX-License-Identifier: BSD-3-Clause
 * Thread-safety: not thread-safe; piod loads its configuration once, before
 * it starts threads, and then only reads it. */
#ifndef PIOD_CONFIG_H
#define PIOD_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#define PIOD_NAME_MAX    64
#define PIOD_ADDR_MAX    48 /* textual IPv4/IPv6 address, no port */
#define PIOD_PATH_MAX    1024
#define PIOD_MAX_LINKS   16
#define PIOD_MAX_PEERS   32
#define PIOD_MAX_MEMBERS 16 /* other hosts of our system */
#define PIOD_MAX_APPS    64 /* [application NAME] sections */

#define PIOD_DEFAULT_CONFIG  "/etc/pio/piod.conf"
#define PIOD_DEFAULT_SOCKET  "/run/pio/piod.sock"
#define PIOD_DEFAULT_PIDFILE "/run/pio/piod.pid"
#define PIOD_DEFAULT_KEYS    "/etc/pio/keys"

enum piod_log_level { PIOD_LOG_ERROR = 0, PIOD_LOG_WARN, PIOD_LOG_INFO, PIOD_LOG_DEBUG };

struct piod_peer {
    char name[PIOD_NAME_MAX]; /* the peer's system name */
    int naddr;                /* its link addresses, in channel order */
    char addr[PIOD_MAX_LINKS][PIOD_ADDR_MAX];
    int control_port;             /* 0: same as ours */
    int data_port;                /* 0: same as ours */
    char control[PIOD_ADDR_MAX];  /* peer: its control-plane address ("": addr[0]) */
    char system[PIOD_NAME_MAX];   /* peer: the system it is one host of ("": its own) */
    char internal[PIOD_ADDR_MAX]; /* member: its address on the internal network */
    int encrypt;                  /* peer: 0 as the top-level encrypt, 1 no, 2 yes */
};

/* An [application NAME] section: the name belongs to owner_uid for good;
 * own_senders: its processes take messages only from senders of their uid. */
struct piod_app_cfg {
    char name[PIOD_NAME_MAX];
    char owner[PIOD_NAME_MAX]; /* as written: a user name or a number; "": none */
    long owner_uid;            /* resolved when the file is read; -1: none */
    int own_senders;           /* senders = owner (1) or any (0, the default) */
};

struct piod_config {
    char name[PIOD_NAME_MAX];        /* this host (default: gethostname) */
    char system[PIOD_NAME_MAX];      /* this system (default: name) */
    char socket[108];                /* process socket (Unix stream) path */
    char keys[PIOD_PATH_MAX];        /* key directory */
    char pidfile[PIOD_PATH_MAX];     /* "" when none */
    char export_root[PIOD_PATH_MAX]; /* file service root ("" : disabled) */
    char export_map[PIOD_PATH_MAX];  /* its user map, pio-files --map ("": same names) */
    char logfile[PIOD_PATH_MAX];     /* "" : stderr (or syslog) */
    int nlisten;                     /* our link addresses, in channel order */
    char listen[PIOD_MAX_LINKS][PIOD_ADDR_MAX];
    char listen_from[PIOD_MAX_LINKS][PIOD_NAME_MAX]; /* "PATTERN on IFACE" when a pattern
                                                        gave listen[i] ("": written as is) */
    char control_addr[PIOD_ADDR_MAX]; /* where the control plane binds ("" : listen[0]) */
    int control_port;                 /* default 7700 */
    int data_port; /* default 7701; data channels listen here on every listen address */
    int src_port_lo, src_port_hi; /* outgoing channels bind source ports in this range (0,0: any) */
    int npeers;
    struct piod_peer peers[PIOD_MAX_PEERS];
    uint64_t pool;               /* total pool bytes (default: 128 proc pools, <= RAM/2) */
    uint64_t proc_pool;          /* per process (default 64 MiB, more for wide bundles), <= pool */
    int pool_set, proc_pool_set; /* given in the file or on the command line (not derived) */
    uint64_t grant_budget;       /* receive-region bytes granted and not freed, all processes
                                  * together (default 64 MiB; each keeps 2 chunks whatever) */
    uint32_t eager_limit;        /* default 64 KiB */
    uint32_t chunk;              /* default 1 MiB: libpio's copy unit, the largest chunk */
    uint32_t chunk_ms; /* a chunk takes about this long on its link (default 50; 0: fixed) */
    uint32_t pace;     /* data channels send at most pace % of their measured rate (125; 0: off) */
    int foreground;    /* -f */
    int log_syslog;    /* log to syslog instead of stderr/logfile */
    int log_level;     /* enum piod_log_level, default INFO */
    int curve;         /* 1 (default): CURVE on the control plane; 0 only with --insecure */
    int express;       /* 1 (default): H_* frames on the express lane once it is up */
    int direct_lanes;  /* 1 (default): processes may ask for direct lanes (dlane.c) */
    int encrypt; /* 1 (default): data channels and express lanes sealed (seal.h); [peer] may say */
    int cipher;  /* enum pio_cipher (common/seal.h): which AEAD we offer; default auto */
    uint32_t spin_us; /* main loop: look again without sleeping this long (us) */
    uint32_t
        stall_ms; /* ms without an ack (plus the bytes' time) before a channel or lane is down */
    uint32_t link_timeout;        /* s: with no channel up to a peer this long, its sends fail */
    char internal[PIOD_ADDR_MAX]; /* our internal-network address (systems of several hosts) */
    int relay_port;               /* relays and load reports between members (default 7702) */
    int nmembers;                 /* the other hosts of our system ([member NAME] sections) */
    struct piod_peer members[PIOD_MAX_MEMBERS];
    int napps; /* [application NAME] sections: names with a permanent owner */
    struct piod_app_cfg apps[PIOD_MAX_APPS];
    /* the channels' stream transport, by registered name: "tcp" (default),
     * "rdma" (UCX streams); see transport/registry.c */
    char transport[16];
    const char *config_path; /* file loaded, or NULL */
    /* Derived by piod_config_links, after validation: */
    char ident[PIOD_NAME_MAX];      /* who we are to peers: name in a system of several hosts, else
                                       system */
    int nlinks;                     /* the system's links: ours and the members', in order */
    int link_owner[PIOD_MAX_LINKS]; /* -1: this host, else index in members */
    char link_addr[PIOD_MAX_LINKS][PIOD_ADDR_MAX]; /* the owner's address on that link */
    int link_local[PIOD_MAX_LINKS];                /* owned by us: index in listen */
};

/* piod_config_defaults - fill c with the defaults above (name from gethostname). */
void piod_config_defaults(struct piod_config *c);

/* piod_config_load - read a config file into c (over the defaults already in c).
 * Syntax: `key = value` lines, `#` comments, `[peer NAME]` sections holding
 * `addr = A` (repeatable), `control-port`, `data-port`, `control`, `system`,
 * `[member NAME]` sections (the other hosts of our system) holding `addr`
 * lines and `internal = A`, and `[application NAME]` sections holding
 * `owner = USER` (a user name or uid: only that uid's processes may join as
 * NAME; the user must exist when the file is read) and `senders = owner|any`
 * (owner: its processes take messages only from senders of their own uid). Top-level keys: name,
 * internal, relay-port, system, socket, keys, pidfile, export, export-map, log, log-level, listen
 * (repeatable; an address, a CIDR or an interface glob: piod_config_listen_add), control,
 * control-port, data-port, source-ports (LO-HI), pool, proc-pool, eager-limit, chunk, chunk-ms
 * (sizes accept K, M, G suffixes, powers of 1024). errs [in]: where to print one line per problem,
 * "FILE:LINE: what is wrong" (NULL: silent). Every problem is reported, not only the first. Returns
 * the number of problems (0: ok); -1 if the file cannot be read (reported on errs). */
int piod_config_load(struct piod_config *c, const char *path, FILE *errs);

/* piod_config_listen_add - add the link addresses that one `listen` value
 * (file or --listen flag) names to c->listen, in order:
 *   an address   (198.18.0.1, fd00::1)  itself;
 *   a CIDR       (198.18.0.0/16)        every address of this host inside it;
 *   an interface (eth0, eth*, ib[0-3])  the IPv4 addresses of the interfaces
 *                                       whose names match the glob
 *                                       (fnmatch); a glob with a wildcard
 *                                       skips loopback interfaces.
 * Patterns are resolved now, against this host's interfaces (getifaddrs),
 * sorted by interface name (eth2 before eth10) and then address; IPv6
 * link-local addresses are never taken; an address already in c->listen
 * is skipped. c->listen_from[i] records "PATTERN on IFACE" for
 * --check-config. why [out]: one line on failure.
 * Returns the number of addresses added (>= 1), or -1: not an address, CIDR
 * or interface name; nothing on this host matches; more than
 * PIOD_MAX_LINKS addresses. */
int piod_config_listen_add(struct piod_config *c, const char *spec, char *why, size_t whylen);

/* piod_config_peer_arg - parse a --peer NAME=ADDR[,ADDR...] flag into c.
 * Returns 0, or -1 with a line on errs. */
int piod_config_peer_arg(struct piod_config *c, const char *arg, FILE *errs);

/* piod_config_validate - whole-config checks (addresses parse, ports in range,
 * sizes consistent: eager <= chunk, chunk <= proc_pool / 4, proc_pool <= pool,
 * no duplicate listen address or peer, a peer is not ourselves, ...).
 * Prints one line per problem on errs; returns the number of problems. */
int piod_config_validate(const struct piod_config *c, FILE *errs);

/* piod_config_links - derive ident and the system's link order from a valid
 * config: this host and every [member] sorted by name, each contributing its
 * links in the order given (so every member derives the same order).
 * Also sizes the pools when neither file nor flags set them: with a fixed
 * chunk (chunk-ms 0) a process' pool holds at least 8 chunks per channel of
 * the widest bundle (a receiver keeps a few chunks in flight on every
 * channel), and the pool 16 such pools. */
void piod_config_links(struct piod_config *c);

/* piod_config_peer_encrypt - 1 when channels to and from peer p are sealed:
 * its section's `encrypt`, else the top-level one. p may be NULL. */
int piod_config_peer_encrypt(const struct piod_config *c, const struct piod_peer *p);

/* piod_config_app_owner - the permanent owner's uid of application app, or
 * -1 when the configuration names none. */
long piod_config_app_owner(const struct piod_config *c, const char *app);

/* piod_config_app_own_senders - 1 when [application app] says
 * `senders = owner`, else 0. */
int piod_config_app_own_senders(const struct piod_config *c, const char *app);

/* piod_parse_size - "64K", "1M", "2G", "4096" -> bytes. Returns 0 or -1. */
int piod_parse_size(const char *s, uint64_t *out);

/* piod_config_print - write c back in config-file syntax (for --check-config -v). */
void piod_config_print(const struct piod_config *c, FILE *out);

#endif
