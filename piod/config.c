/* config.c - piod configuration: defaults, the config file, --peer flags, printing.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The parser reads the file one line at a time and reports every problem as
 * "FILE:LINE: what is wrong (what is expected)", then carries on: a bad value
 * is never stored, so whatever was in the config before stays. It checks what
 * one line can tell (syntax, value formats, duplicate keys, sections, limits);
 * relations between values (sizes, ports, duplicate addresses or peers, a peer
 * that is ourselves) belong to piod_config_validate in config_check.c (with
 * the values derived from the rest, piod_config_links), which treats a
 * config from a file and one from flags alike. piod_config_print writes the
 * syntax the parser reads, so its output loads back to an equal config. No
 * state, no locks; nothing here exits.
 */
#include "config.h"
#include "config_int.h"
#include "seal.h"
#include "transport.h"
#include "capture.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pwd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#define CFG_KIB ((uint64_t)1024)
#define CFG_MIB (CFG_KIB * 1024)
#define CFG_GIB (CFG_MIB * 1024)

static const char *const cfg_level_names[] = {"error", "warn", "info", "debug"};

/* ---- small helpers ------------------------------------------------------ */

/* Copy src into dst[size], zero-filling the rest (so equal configs compare
 * equal byte for byte). Returns -1 if it does not fit. */
static int cfg_copy(char *dst, size_t size, const char *src)
{
    size_t n = strlen(src);
    if (n >= size)
        return -1;
    memset(dst, 0, size);
    memcpy(dst, src, n);
    return 0;
}

/* A name of a host, system, peer or application: 1 to 63 of A-Z a-z 0-9 . _ - */
int cfg_name_ok(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++) {
        char ch = s[n];
        if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-'))
            return 0;
    }
    return n >= 1 && n < PIOD_NAME_MAX;
}

/* Parse a numeric IPv4 or IPv6 address into a 17-byte key (family byte +
 * 16 address bytes) so that two spellings of one address compare equal.
 * key may be NULL. Returns 0 or -1. */
int cfg_addr_parse(const char *s, unsigned char key[17])
{
    unsigned char buf[17] = {0};
    if (strlen(s) >= PIOD_ADDR_MAX)
        return -1;
    if (inet_pton(AF_INET, s, buf + 1) == 1)
        buf[0] = 4;
    else if (inet_pton(AF_INET6, s, buf + 1) == 1)
        buf[0] = 6;
    else
        return -1;
    if (key)
        memcpy(key, buf, sizeof(buf));
    return 0;
}

/* Two spellings of one address, or the same text. */
int cfg_addr_same(const char *a, const char *b)
{
    unsigned char ka[17], kb[17];
    if (cfg_addr_parse(a, ka) != 0 || cfg_addr_parse(b, kb) != 0)
        return strcmp(a, b) == 0;
    return memcmp(ka, kb, sizeof(ka)) == 0;
}

/* Decimal digits only, value lo..hi. */
static int cfg_parse_int(const char *s, long lo, long hi, int *out)
{
    long v = 0;
    if (*s == '\0')
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        v = v * 10 + (*s - '0');
        if (v > hi)
            return -1;
    }
    if (v < lo)
        return -1;
    *out = (int)v;
    return 0;
}

static int cfg_parse_level(const char *s)
{
    for (int i = 0; i < (int)(sizeof(cfg_level_names) / sizeof(cfg_level_names[0])); i++)
        if (strcmp(s, cfg_level_names[i]) == 0)
            return i;
    if (strcmp(s, "warning") == 0)
        return PIOD_LOG_WARN;
    return -1;
}

static char *cfg_trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

int piod_parse_size(const char *s, uint64_t *out)
{
    uint64_t v = 0, mult = 1;
    const char *p = s;
    if (s == NULL || *p < '0' || *p > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    switch (*p) {
    case '\0': break;
    case 'K':
    case 'k':
        mult = CFG_KIB;
        p++;
        break;
    case 'M':
    case 'm':
        mult = CFG_MIB;
        p++;
        break;
    case 'G':
    case 'g':
        mult = CFG_GIB;
        p++;
        break;
    default: return -1;
    }
    if (*p != '\0' || (v != 0 && v > UINT64_MAX / mult))
        return -1;
    *out = v * mult;
    return 0;
}

/* "1G", "64M", "65536": the largest suffix that is exact. */
void cfg_size_str(uint64_t v, char *buf, size_t len)
{
    if (v != 0 && v % CFG_GIB == 0)
        snprintf(buf, len, "%lluG", (unsigned long long)(v / CFG_GIB));
    else if (v != 0 && v % CFG_MIB == 0)
        snprintf(buf, len, "%lluM", (unsigned long long)(v / CFG_MIB));
    else if (v != 0 && v % CFG_KIB == 0)
        snprintf(buf, len, "%lluK", (unsigned long long)(v / CFG_KIB));
    else
        snprintf(buf, len, "%llu", (unsigned long long)v);
}

/* ---- defaults ----------------------------------------------------------- */

void piod_config_defaults(struct piod_config *c)
{
    char host[256];

    memset(c, 0, sizeof(*c));
    if (gethostname(host, sizeof(host)) != 0 || host[0] == '\0')
        strcpy(host, "localhost");
    host[sizeof(host) - 1] = '\0';
    host[PIOD_NAME_MAX - 1] = '\0'; /* a name holds at most 63 characters */
    cfg_copy(c->name, sizeof(c->name), host);
    cfg_copy(c->system, sizeof(c->system), c->name);
    cfg_copy(c->socket, sizeof(c->socket), PIOD_DEFAULT_SOCKET);
    cfg_copy(c->keys, sizeof(c->keys), PIOD_DEFAULT_KEYS);
    cfg_copy(c->pidfile, sizeof(c->pidfile), PIOD_DEFAULT_PIDFILE);
    c->control_port = 7700;
    c->data_port = 7701;
    c->relay_port = 7702;
    c->pool = CFG_GIB;
    c->proc_pool = 64 * CFG_MIB;
    c->grant_budget = 64 * CFG_MIB;
    c->eager_limit = (uint32_t)(64 * CFG_KIB);
    c->chunk = (uint32_t)CFG_MIB;
    c->chunk_ms = 50;
    c->pace = 125;
    c->log_level = PIOD_LOG_INFO;
    c->curve = 1;
    c->express = 1;
    c->direct_lanes = 1;
    c->encrypt = 1;
    c->spin_us = 50;
    c->stall_ms = 400;
    c->link_timeout = 30;
    cfg_copy(c->transport, sizeof(c->transport), "tcp");
}

/* ---- the config file ---------------------------------------------------- */

enum cfg_type {
    CFG_NAME,    /* a system or host name */
    CFG_PATH,    /* a path */
    CFG_OPTPATH, /* a path, or "none" for "" */
    CFG_LOG,     /* "stderr", "syslog" or a path */
    CFG_LEVEL,   /* error | warn | info | debug */
    CFG_ADDR,    /* one numeric address */
    CFG_ADDRS,   /* repeatable address (listen, addr) */
    CFG_PORT,    /* 1..65535 */
    CFG_RANGE,   /* LO-HI or "any" */
    CFG_SIZE64,  /* size, uint64_t */
    CFG_SIZE32,  /* size, uint32_t */
    CFG_BOOL,    /* yes | no (int) */
    CFG_TRI,     /* yes | no (int: 2 | 1; 0 while unset) */
    CFG_CIPHER,  /* auto | aes-256-gcm | chacha20-poly1305 (enum pio_cipher) */
    CFG_TPNAME,  /* a registered stream transport's name (pio_transport_find) */
};

struct cfg_key {
    const char *key;
    enum cfg_type type;
    size_t off;  /* into struct piod_config, or struct piod_peer for peer keys */
    size_t size; /* of the field, for strings */
};

#define CFG_FIELD(t, f) offsetof(t, f), sizeof(((t *)0)->f)
static const struct cfg_key cfg_top_keys[] = {
    {"name", CFG_NAME, CFG_FIELD(struct piod_config, name)},
    {"system", CFG_NAME, CFG_FIELD(struct piod_config, system)},
    {"socket", CFG_PATH, CFG_FIELD(struct piod_config, socket)},
    {"keys", CFG_PATH, CFG_FIELD(struct piod_config, keys)},
    {"pidfile", CFG_OPTPATH, CFG_FIELD(struct piod_config, pidfile)},
    {"export", CFG_OPTPATH, CFG_FIELD(struct piod_config, export_root)},
    {"export-map", CFG_OPTPATH, CFG_FIELD(struct piod_config, export_map)},
    {"log", CFG_LOG, CFG_FIELD(struct piod_config, logfile)},
    {"log-level", CFG_LEVEL, CFG_FIELD(struct piod_config, log_level)},
    {"listen", CFG_ADDRS, CFG_FIELD(struct piod_config, listen)},
    {"control", CFG_ADDR, CFG_FIELD(struct piod_config, control_addr)},
    {"control-port", CFG_PORT, CFG_FIELD(struct piod_config, control_port)},
    {"data-port", CFG_PORT, CFG_FIELD(struct piod_config, data_port)},
    {"source-ports", CFG_RANGE, CFG_FIELD(struct piod_config, src_port_lo)},
    {"pool", CFG_SIZE64, CFG_FIELD(struct piod_config, pool)},
    {"proc-pool", CFG_SIZE64, CFG_FIELD(struct piod_config, proc_pool)},
    {"grant-budget", CFG_SIZE64, CFG_FIELD(struct piod_config, grant_budget)},
    {"eager-limit", CFG_SIZE32, CFG_FIELD(struct piod_config, eager_limit)},
    {"chunk", CFG_SIZE32, CFG_FIELD(struct piod_config, chunk)},
    {"chunk-ms", CFG_SIZE32, CFG_FIELD(struct piod_config, chunk_ms)},
    {"pace", CFG_SIZE32, CFG_FIELD(struct piod_config, pace)},
    {"express", CFG_BOOL, CFG_FIELD(struct piod_config, express)},
    {"direct-lanes", CFG_BOOL, CFG_FIELD(struct piod_config, direct_lanes)},
    {"encrypt", CFG_BOOL, CFG_FIELD(struct piod_config, encrypt)},
    {"cipher", CFG_CIPHER, CFG_FIELD(struct piod_config, cipher)},
    {"spin-us", CFG_SIZE32, CFG_FIELD(struct piod_config, spin_us)},
    {"stall-ms", CFG_SIZE32, CFG_FIELD(struct piod_config, stall_ms)},
    {"link-timeout", CFG_SIZE32, CFG_FIELD(struct piod_config, link_timeout)},
    {"internal", CFG_ADDR, CFG_FIELD(struct piod_config, internal)},
    {"relay-port", CFG_PORT, CFG_FIELD(struct piod_config, relay_port)},
    {"transport", CFG_TPNAME, CFG_FIELD(struct piod_config, transport)},
};
static const struct cfg_key cfg_peer_keys[] = {
    {"addr", CFG_ADDRS, CFG_FIELD(struct piod_peer, addr)},
    {"control-port", CFG_PORT, CFG_FIELD(struct piod_peer, control_port)},
    {"data-port", CFG_PORT, CFG_FIELD(struct piod_peer, data_port)},
    {"control", CFG_ADDR, CFG_FIELD(struct piod_peer, control)},
    {"system", CFG_NAME, CFG_FIELD(struct piod_peer, system)},
    {"internal", CFG_ADDR, CFG_FIELD(struct piod_peer, internal)},
    {"encrypt", CFG_TRI, CFG_FIELD(struct piod_peer, encrypt)},
};
#define CFG_NTOP  (sizeof(cfg_top_keys) / sizeof(cfg_top_keys[0]))
#define CFG_NPEER (sizeof(cfg_peer_keys) / sizeof(cfg_peer_keys[0]))

static const struct cfg_key *cfg_find(const struct cfg_key *tab, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(tab[i].key, key) == 0)
            return &tab[i];
    return NULL;
}

/* The parser's state for one file. */
struct cfg_parse {
    struct piod_config *c;
    const char *path;
    FILE *errs;
    int line;
    int problems;
    int top_seen[CFG_NTOP];               /* line where a top-level key was set, 0: not yet */
    int peer_seen[CFG_NPEER];             /* the same, for the current [peer] section */
    struct piod_peer *peer;               /* current section, NULL: top level */
    int peer_line;                        /* line of its header */
    struct piod_peer scratch;             /* receives the keys of a section we cannot keep */
    int listen_reset;                     /* the file's first listen line replaced c->listen */
    int peers_reset;                      /* the file's first [peer] replaced c->peers */
    int members_reset;                    /* the file's first [member] replaced c->members */
    struct piod_app_cfg *app;             /* current [application] section (p->peer is NULL then) */
    int app_line;                         /* line of its header */
    int app_owner_line, app_senders_line; /* where owner, senders were set; 0: not yet */
    int apps_reset;                       /* the file's first [application] replaced c->apps */
};

static void cfg_problem(struct cfg_parse *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void cfg_problem(struct cfg_parse *p, const char *fmt, ...)
{
    va_list ap;
    p->problems++;
    if (p->errs == NULL)
        return;
    fprintf(p->errs, "%s:%d: ", p->path, p->line);
    va_start(ap, fmt);
    vfprintf(p->errs, fmt, ap);
    va_end(ap);
    fputc('\n', p->errs);
}

/* The registered stream transports, "tcp, rdma", for messages. */
void cfg_transports(char *out, size_t n)
{
    size_t at = 0;
    out[0] = '\0';
    for (const struct pio_transport_ops *const *t = pio_transport_list(); *t && at < n; t++)
        at += (size_t)snprintf(out + at, n - at, "%s%s", at ? ", " : "", (*t)->name);
}

/* Store one value; base is the config or the peer. Reports and stores
 * nothing when the value is bad. */
static void cfg_set(struct cfg_parse *p, void *base, const struct cfg_key *k, const char *val)
{
    char *field = (char *)base + k->off;
    uint64_t size;
    int port, lo, hi, level;
    const char *dash;
    char lo_s[16];

    switch (k->type) {
    case CFG_NAME:
        if (!cfg_name_ok(val))
            cfg_problem(p, "bad %s '%s': %s", k->key, val, CFG_NAME_HELP);
        else
            cfg_copy(field, k->size, val);
        break;
    case CFG_OPTPATH:
        if (strcmp(val, "none") == 0) {
            memset(field, 0, k->size);
            break;
        }
        /* fall through */
    case CFG_PATH:
        if (cfg_copy(field, k->size, val) != 0)
            cfg_problem(p, "%s path is too long (%zu bytes): at most %zu", k->key, strlen(val),
                        k->size - 1);
        break;
    case CFG_LOG:
        if (strcmp(val, "syslog") == 0) {
            p->c->log_syslog = 1;
            memset(p->c->logfile, 0, sizeof(p->c->logfile));
        } else if (strcmp(val, "stderr") == 0) {
            p->c->log_syslog = 0;
            memset(p->c->logfile, 0, sizeof(p->c->logfile));
        } else if (cfg_copy(p->c->logfile, sizeof(p->c->logfile), val) != 0) {
            cfg_problem(p, "log path is too long (%zu bytes): at most %zu", strlen(val),
                        sizeof(p->c->logfile) - 1);
        } else {
            p->c->log_syslog = 0;
        }
        break;
    case CFG_LEVEL:
        level = cfg_parse_level(val);
        if (level < 0)
            cfg_problem(p, "bad log-level '%s': %s", val, CFG_LEVEL_HELP);
        else
            *(int *)(void *)field = level;
        break;
    case CFG_ADDR:
        if (cfg_addr_parse(val, NULL) != 0)
            cfg_problem(p, "bad address '%s' for %s: %s", val, k->key, CFG_ADDR_HELP);
        else
            cfg_copy(field, k->size, val);
        break;
    case CFG_ADDRS: break; /* handled by the caller: it needs the count */
    case CFG_BOOL:
        if (strcmp(val, "yes") == 0 || strcmp(val, "no") == 0)
            *(int *)(void *)field = strcmp(val, "yes") == 0;
        else
            cfg_problem(p, "bad %s '%s': expected yes or no", k->key, val);
        break;
    case CFG_TRI:
        if (strcmp(val, "yes") == 0 || strcmp(val, "no") == 0)
            *(int *)(void *)field = strcmp(val, "yes") == 0 ? 2 : 1;
        else
            cfg_problem(p, "bad %s '%s': expected yes or no", k->key, val);
        break;
    case CFG_CIPHER:
        if (strcmp(val, "auto") == 0)
            *(int *)(void *)field = PIO_CIPHER_AUTO;
        else if (strcmp(val, "aes-256-gcm") == 0)
            *(int *)(void *)field = PIO_CIPHER_AES;
        else if (strcmp(val, "chacha20-poly1305") == 0)
            *(int *)(void *)field = PIO_CIPHER_CHACHA;
        else
            cfg_problem(p, "bad cipher '%s': expected auto, aes-256-gcm or chacha20-poly1305", val);
        break;
    case CFG_TPNAME:
        if (strlen(val) >= k->size || !pio_transport_find(val)) {
            char names[128];
            cfg_transports(names, sizeof(names));
            cfg_problem(p, "unknown transport '%s': expected one of %s", val, names);
        } else {
            cfg_copy(field, k->size, val);
        }
        break;
    case CFG_PORT:
        if (cfg_parse_int(val, 1, 65535, &port) != 0)
            cfg_problem(p, "bad port '%s' for %s: %s", val, k->key, CFG_PORT_HELP);
        else
            *(int *)(void *)field = port;
        break;
    case CFG_RANGE:
        if (strcmp(val, "any") == 0) {
            p->c->src_port_lo = p->c->src_port_hi = 0;
            break;
        }
        dash = strchr(val, '-');
        if (dash == NULL || (size_t)(dash - val) >= sizeof(lo_s)) {
            cfg_problem(
                p, "bad source-ports '%s': expected LO-HI (two ports from 1 to 65535) or any", val);
            break;
        }
        memcpy(lo_s, val, (size_t)(dash - val));
        lo_s[dash - val] = '\0';
        if (cfg_parse_int(lo_s, 1, 65535, &lo) != 0 ||
            cfg_parse_int(dash + 1, 1, 65535, &hi) != 0) {
            cfg_problem(
                p, "bad source-ports '%s': expected LO-HI (two ports from 1 to 65535) or any", val);
            break;
        }
        p->c->src_port_lo = lo;
        p->c->src_port_hi = hi;
        break;
    case CFG_SIZE64:
        if (piod_parse_size(val, &size) != 0)
            cfg_problem(p, "bad size '%s' for %s: %s", val, k->key, CFG_SIZE_HELP);
        else
            *(uint64_t *)(void *)field = size;
        break;
    case CFG_SIZE32:
        if (piod_parse_size(val, &size) != 0)
            cfg_problem(p, "bad size '%s' for %s: %s", val, k->key, CFG_SIZE_HELP);
        else if (size > UINT32_MAX)
            cfg_problem(p, "%s '%s' is too large: at most 4294967295 bytes (4G - 1)", k->key, val);
        else
            *(uint32_t *)(void *)field = (uint32_t)size;
        break;
    }
}

/* The [application] section that ends here must have said something. */
static void cfg_app_end(struct cfg_parse *p)
{
    if (p->app && !p->app_owner_line && !p->app_senders_line) {
        int line = p->line;
        p->line = p->app_line;
        cfg_problem(p,
                    "[application %s] is empty: expected 'owner = USER' or 'senders = owner' "
                    "under it",
                    p->app->name);
        p->line = line;
    }
    p->app = NULL;
}

/* [application NAME]: a name with a permanent owner (owner = USER below). */
static void cfg_app_section(struct cfg_parse *p, const char *name)
{
    p->peer = NULL;
    p->app = NULL;
    p->app_line = p->line;
    p->app_owner_line = 0;
    p->app_senders_line = 0;
    if (strlen(name) >= PIOD_NAME_MAX || strpbrk(name, "/\\") != NULL) {
        cfg_problem(p, "bad application name '%s': at most %d characters, no '/'", name,
                    PIOD_NAME_MAX - 1);
        return;
    }
    if (!p->apps_reset) {
        p->c->napps = 0;
        p->apps_reset = 1;
    }
    for (int i = 0; i < p->c->napps; i++)
        if (strcmp(p->c->apps[i].name, name) == 0) {
            cfg_problem(p, "[application %s] again: each application has one section", name);
            return;
        }
    if (p->c->napps >= PIOD_MAX_APPS) {
        cfg_problem(p, "too many [application] sections: at most %d", PIOD_MAX_APPS);
        return;
    }
    p->app = &p->c->apps[p->c->napps++];
    memset(p->app, 0, sizeof(*p->app));
    p->app->owner_uid = -1;
    cfg_copy(p->app->name, sizeof(p->app->name), name);
}

/* owner = USER inside [application NAME]: a user name, or a uid;
 * senders = owner|any: from whom its processes take messages. */
static void cfg_app_key(struct cfg_parse *p, const char *key, const char *val)
{
    if (strcmp(key, "senders") == 0) {
        if (p->app_senders_line) {
            cfg_problem(p, "senders set twice in [application %s] (first on line %d)", p->app->name,
                        p->app_senders_line);
            return;
        }
        p->app_senders_line = p->line;
        if (strcmp(val, "owner") != 0 && strcmp(val, "any") != 0) {
            cfg_problem(p, "bad senders '%s' in [application %s]: expected owner or any", val,
                        p->app->name);
            return;
        }
        p->app->own_senders = strcmp(val, "owner") == 0;
        return;
    }
    if (strcmp(key, "owner") != 0) {
        cfg_problem(p, "unknown key '%s' in an [application] section (keys: owner, senders)", key);
        return;
    }
    if (p->app_owner_line) {
        cfg_problem(p, "owner set twice in [application %s] (first on line %d)", p->app->name,
                    p->app_owner_line);
        return;
    }
    p->app_owner_line = p->line;
    if (*val == '\0') {
        cfg_problem(p, "'owner' has no value: expected 'owner = USER'");
        return;
    }
    struct passwd *pw = getpwnam(val);
    char *end;
    errno = 0;
    long uid = pw ? (long)pw->pw_uid : strtol(val, &end, 10);
    if (!pw && (errno != 0 || *end != '\0' || uid < 0 || uid > 0x7fffffffL)) {
        cfg_problem(p,
                    "unknown user '%s' as owner of [application %s]: give a user name of this "
                    "host or a uid",
                    val, p->app->name);
        return;
    }
    cfg_copy(p->app->owner, sizeof(p->app->owner), val);
    p->app->owner_uid = uid;
}

int piod_config_peer_encrypt(const struct piod_config *c, const struct piod_peer *p)
{
    return p && p->encrypt ? p->encrypt == 2 : c->encrypt != 0;
}

long piod_config_app_owner(const struct piod_config *c, const char *app)
{
    for (int i = 0; i < c->napps && i < PIOD_MAX_APPS; i++)
        if (strcmp(c->apps[i].name, app) == 0)
            return c->apps[i].owner_uid;
    return -1;
}

int piod_config_app_own_senders(const struct piod_config *c, const char *app)
{
    for (int i = 0; i < c->napps && i < PIOD_MAX_APPS; i++)
        if (strcmp(c->apps[i].name, app) == 0)
            return c->apps[i].own_senders;
    return 0;
}

static void cfg_section(struct cfg_parse *p, char *hdr)
{
    char *inner, *end, *word, *name, *extra;
    char shown[160];
    size_t n = strlen(hdr);

    snprintf(shown, sizeof(shown), "%s", hdr); /* hdr is cut up below */
    memset(p->peer_seen, 0, sizeof(p->peer_seen));
    memset(&p->scratch, 0, sizeof(p->scratch));
    cfg_app_end(p);
    p->peer = &p->scratch;
    p->peer_line = p->line;

    if (n < 2 || hdr[n - 1] != ']') {
        cfg_problem(
            p, "bad section header '%s': expected [peer NAME], [member NAME] or [application NAME]",
            hdr);
        return;
    }
    hdr[n - 1] = '\0';
    inner = hdr + 1;
    word = strtok_r(inner, " \t", &end);
    name = word ? strtok_r(NULL, " \t", &end) : NULL;
    extra = name ? strtok_r(NULL, " \t", &end) : NULL;
    int member = word && strcmp(word, "member") == 0;
    if (word && strcmp(word, "application") == 0 && name && !extra) {
        cfg_app_section(p, name);
        return;
    }
    if (word == NULL || (strcmp(word, "peer") != 0 && !member) || name == NULL || extra != NULL) {
        cfg_problem(
            p, "bad section header '%s': expected [peer NAME], [member NAME] or [application NAME]",
            shown);
        return;
    }
    if (!cfg_name_ok(name)) {
        cfg_problem(p, "bad %s name '%s': %s", word, name, CFG_NAME_HELP);
        return;
    }
    int *count = member ? &p->c->nmembers : &p->c->npeers;
    int *reset = member ? &p->members_reset : &p->peers_reset;
    int max = member ? PIOD_MAX_MEMBERS : PIOD_MAX_PEERS;
    if (!*reset) {
        *count = 0;
        *reset = 1;
    }
    if (*count >= max) {
        cfg_problem(p, "too many %ss: [%s %s] is number %d, at most %d are supported", word, word,
                    name, *count + 1, max);
        (*count)++; /* count on, so each extra section is numbered; undone at the end */
        return;
    }
    p->peer = member ? &p->c->members[(*count)++] : &p->c->peers[(*count)++];
    memset(p->peer, 0, sizeof(*p->peer));
    cfg_copy(p->peer->name, sizeof(p->peer->name), name);
}

static void cfg_keyval(struct cfg_parse *p, char *text)
{
    char *eq = strchr(text, '=');
    char *key, *val;
    const struct cfg_key *k;

    if (eq == NULL) {
        cfg_problem(p, "expected 'key = value' or '[peer NAME]', got '%s'", text);
        return;
    }
    *eq = '\0';
    key = cfg_trim(text);
    val = cfg_trim(eq + 1);
    if (*key == '\0') {
        cfg_problem(p, "missing key before '=': expected 'key = value'");
        return;
    }
    if (p->app) {
        cfg_app_key(p, key, val);
        return;
    }
    if (p->peer == NULL && p->app_line)
        return; /* under a refused [application] header: said once there */

    if (p->peer == NULL) { /* top level */
        k = cfg_find(cfg_top_keys, CFG_NTOP, key);
        if (k == NULL) {
            if (cfg_find(cfg_peer_keys, CFG_NPEER, key) != NULL)
                cfg_problem(p,
                            "'%s' outside a [peer NAME] section: it describes a peer, put it "
                            "under that peer's [peer NAME] header",
                            key);
            else
                cfg_problem(
                    p,
                    "unknown key '%s' (keys: name, system, socket, keys, pidfile, "
                    "export, export-map, log, log-level, listen, control, control-port, data-port, "
                    "source-ports, pool, proc-pool, grant-budget, eager-limit, chunk, chunk-ms, "
                    "pace, express, "
                    "direct-lanes, "
                    "encrypt, cipher, "
                    "spin-us, "
                    "stall-ms, link-timeout, internal, relay-port, transport)",
                    key);
            return;
        }
    } else {
        k = cfg_find(cfg_peer_keys, CFG_NPEER, key);
        if (k == NULL) {
            if (cfg_find(cfg_top_keys, CFG_NTOP, key) != NULL)
                cfg_problem(p,
                            "'%s' is a top-level key but comes after the [peer] header of "
                            "line %d: top-level keys go before the first [peer NAME] header",
                            key, p->peer_line);
            else
                cfg_problem(p,
                            "unknown key '%s' in a [peer] or [member] section (keys: addr, "
                            "control-port, data-port, control, system, internal)",
                            key);
            return;
        }
    }
    if (*val == '\0') {
        cfg_problem(p, "'%s' has no value: expected '%s = VALUE'", key, key);
        return;
    }

    if (k->type == CFG_ADDRS) {
        int *count = p->peer ? &p->peer->naddr : &p->c->nlisten;
        char(*list)[PIOD_ADDR_MAX] = p->peer ? p->peer->addr : p->c->listen;
        if (p->peer == NULL && !p->listen_reset) {
            p->c->nlisten = 0;
            p->listen_reset = 1;
        }
        if (p->peer == NULL) { /* listen: an address, a CIDR or an interface glob */
            char why[256];
            if (piod_config_listen_add(p->c, val, why, sizeof(why)) < 0)
                cfg_problem(p, "%s", why);
            return;
        }
        if (cfg_addr_parse(val, NULL) != 0)
            cfg_problem(p, "bad address '%s' for %s: %s", val, key, CFG_ADDR_HELP);
        else if (*count >= PIOD_MAX_LINKS)
            cfg_problem(p, "too many %s addresses: at most %d (one per link)",
                        p->peer ? "peer" : "listen", PIOD_MAX_LINKS);
        else
            cfg_copy(list[(*count)++], PIOD_ADDR_MAX, val);
        return;
    }

    int *seen = p->peer ? &p->peer_seen[k - cfg_peer_keys] : &p->top_seen[k - cfg_top_keys];
    if (*seen) {
        cfg_problem(p, "duplicate key '%s' (first given at line %d): give it once", key, *seen);
        return;
    }
    *seen = p->line;
    cfg_set(p, p->peer ? (void *)p->peer : (void *)p->c, k, val);
    if (!p->peer && strcmp(k->key, "pool") == 0)
        p->c->pool_set = 1;
    if (!p->peer && strcmp(k->key, "proc-pool") == 0)
        p->c->proc_pool_set = 1;
}

/* A '#' at the start of a word begins a comment. */
/* A '#' at the start, after a blank or right after '=' starts a comment:
 * "key =#x" is a key without a value, as "key = #x" is (a value that began
 * with '#' would print as "key = #x" and not load back: fuzz_config). */
static void cfg_strip_comment(char *s)
{
    for (char *q = s; *q; q++)
        if (*q == '#' && (q == s || q[-1] == ' ' || q[-1] == '\t' || q[-1] == '=')) {
            *q = '\0';
            return;
        }
}

int piod_config_load(struct piod_config *c, const char *path, FILE *errs)
{
    struct cfg_parse p;
    FILE *f;
    char *buf = NULL;
    size_t cap = 0;
    int follow, rc;

    memset(&p, 0, sizeof(p));
    p.c = c;
    p.path = path;
    p.errs = errs;

    f = fopen(path, "re");
    if (f == NULL) {
        if (errs)
            fprintf(errs,
                    "%s: cannot read the config file: %s (give a readable file with --config)\n",
                    path, strerror(errno));
        return -1;
    }
    follow = strcmp(c->system, c->name) == 0;
    pio_capture_file("config", path);

    errno = 0;
    while (getline(&buf, &cap, f) != -1) {
        char *s;
        p.line++;
        cfg_strip_comment(buf);
        s = cfg_trim(buf);
        if (*s == '\0')
            continue;
        if (*s == '[')
            cfg_section(&p, s);
        else
            cfg_keyval(&p, s);
    }
    if (ferror(f)) {
        if (errs)
            fprintf(errs, "%s: read error after line %d: %s\n", path, p.line, strerror(errno));
        rc = -1;
        goto close;
    }
    if (c->npeers > PIOD_MAX_PEERS)
        c->npeers = PIOD_MAX_PEERS;
    if (c->nmembers > PIOD_MAX_MEMBERS)
        c->nmembers = PIOD_MAX_MEMBERS;
    cfg_app_end(&p);
    /* system defaults to name: follow a name the file sets */
    if (follow && p.top_seen[0] && !p.top_seen[1]) /* [0] is name, [1] system */
        cfg_copy(c->system, sizeof(c->system), c->name);
    c->config_path = path;
    rc = p.problems;
close:
    free(buf);
    fclose(f);
    return rc;
}

/* ---- --peer NAME=ADDR[,ADDR...] ----------------------------------------- */

int piod_config_peer_arg(struct piod_config *c, const char *arg, FILE *errs)
{
    struct piod_peer peer;
    char *copy = NULL, *eq, *list, *item, *save = NULL;
    char why[160];
    int rc = -1;

    memset(&peer, 0, sizeof(peer));
    if (arg == NULL)
        arg = "";
    copy = strdup(arg);
    if (copy == NULL) {
        snprintf(why, sizeof(why), "out of memory");
        goto report;
    }
    eq = strchr(copy, '=');
    if (eq == NULL) {
        snprintf(why, sizeof(why), "no '=' between the peer name and its addresses");
        goto report;
    }
    *eq = '\0';
    list = eq + 1;
    if (!cfg_name_ok(copy)) {
        snprintf(why, sizeof(why), "bad peer name '%.63s': %s", copy, CFG_NAME_HELP);
        goto report;
    }
    cfg_copy(peer.name, sizeof(peer.name), copy);
    if (list[0] == '\0' || list[0] == ',' || list[strlen(list) - 1] == ',' ||
        strstr(list, ",,") != NULL) {
        snprintf(why, sizeof(why), "an address is missing in '%.100s'", list);
        goto report;
    }
    for (item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        if (cfg_addr_parse(item, NULL) != 0) {
            snprintf(why, sizeof(why), "bad address '%.60s': %s", item, CFG_ADDR_HELP);
            goto report;
        }
        if (peer.naddr >= PIOD_MAX_LINKS) {
            snprintf(why, sizeof(why), "too many addresses: at most %d, one per link",
                     PIOD_MAX_LINKS);
            goto report;
        }
        cfg_copy(peer.addr[peer.naddr++], PIOD_ADDR_MAX, item);
    }
    if (c->npeers >= PIOD_MAX_PEERS) {
        snprintf(why, sizeof(why), "too many peers: at most %d", PIOD_MAX_PEERS);
        goto report;
    }
    c->peers[c->npeers++] = peer;
    rc = 0;
    goto free_copy;
report:
    if (errs)
        fprintf(errs, "--peer '%s': %s (expected NAME=ADDR[,ADDR...])\n", arg, why);
free_copy:
    free(copy);
    return rc;
}

/* ---- printing ----------------------------------------------------------- */

void piod_config_print(const struct piod_config *c, FILE *out)
{
    char s[32];

    fprintf(out, "# piod configuration%s%s\n", c->config_path ? " loaded from " : "",
            c->config_path ? c->config_path : "");
    fprintf(out, "name = %s\n", c->name);
    fprintf(out, "system = %s\n", c->system);
    fprintf(out, "socket = %s\n", c->socket);
    fprintf(out, "keys = %s\n", c->keys);
    fprintf(out, "pidfile = %s\n", c->pidfile[0] ? c->pidfile : "none");
    fprintf(out, "export = %s\n", c->export_root[0] ? c->export_root : "none");
    fprintf(out, "export-map = %s\n", c->export_map[0] ? c->export_map : "none");
    fprintf(out, "log = %s\n", c->log_syslog ? "syslog" : c->logfile[0] ? c->logfile : "stderr");
    fprintf(out, "log-level = %s\n",
            c->log_level >= 0 && c->log_level <= PIOD_LOG_DEBUG ? cfg_level_names[c->log_level]
                                                                : "info");
    for (int i = 0; i < c->nlisten && i < PIOD_MAX_LINKS; i++)
        fprintf(out, "listen = %s\n", c->listen[i]);
    if (c->control_addr[0])
        fprintf(out, "control = %s\n", c->control_addr);
    else
        fprintf(out, "# control = (the first listen address)\n");
    fprintf(out, "control-port = %d\n", c->control_port);
    fprintf(out, "data-port = %d\n", c->data_port);
    if (c->src_port_lo == 0 && c->src_port_hi == 0)
        fprintf(out, "source-ports = any\n");
    else
        fprintf(out, "source-ports = %d-%d\n", c->src_port_lo, c->src_port_hi);
    cfg_size_str(c->pool, s, sizeof(s));
    fprintf(out, "pool = %s\n", s);
    cfg_size_str(c->proc_pool, s, sizeof(s));
    fprintf(out, "proc-pool = %s\n", s);
    cfg_size_str(c->grant_budget, s, sizeof(s));
    fprintf(out, "grant-budget = %s\n", s);
    cfg_size_str(c->eager_limit, s, sizeof(s));
    fprintf(out, "eager-limit = %s\n", s);
    cfg_size_str(c->chunk, s, sizeof(s));
    fprintf(out, "chunk = %s\n", s);
    fprintf(out, "chunk-ms = %u\n", c->chunk_ms);
    fprintf(out, "pace = %u\n", c->pace);
    fprintf(out, "express = %s\n", c->express ? "yes" : "no");
    fprintf(out, "direct-lanes = %s\n", c->direct_lanes ? "yes" : "no");
    fprintf(out, "encrypt = %s\n", c->encrypt ? "yes" : "no");
    fprintf(out, "cipher = %s\n",
            c->cipher == PIO_CIPHER_AES      ? "aes-256-gcm"
            : c->cipher == PIO_CIPHER_CHACHA ? "chacha20-poly1305"
                                             : "auto");
    fprintf(out, "spin-us = %u\n", c->spin_us);
    fprintf(out, "stall-ms = %u\n", c->stall_ms);
    fprintf(out, "link-timeout = %u\n", c->link_timeout);
    if (c->internal[0])
        fprintf(out, "internal = %s\n", c->internal);
    fprintf(out, "relay-port = %d\n", c->relay_port);
    fprintf(out, "transport = %s\n", c->transport);
    for (int i = 0; i < c->npeers && i < PIOD_MAX_PEERS; i++) {
        const struct piod_peer *pr = &c->peers[i];
        fprintf(out, "\n[peer %s]\n", pr->name);
        for (int a = 0; a < pr->naddr && a < PIOD_MAX_LINKS; a++)
            fprintf(out, "addr = %s\n", pr->addr[a]);
        if (pr->control_port)
            fprintf(out, "control-port = %d\n", pr->control_port);
        if (pr->encrypt)
            fprintf(out, "encrypt = %s\n", pr->encrypt == 2 ? "yes" : "no");
        if (pr->data_port)
            fprintf(out, "data-port = %d\n", pr->data_port);
        if (pr->control[0])
            fprintf(out, "control = %s\n", pr->control);
        if (pr->system[0])
            fprintf(out, "system = %s\n", pr->system);
    }
    for (int i = 0; i < c->nmembers && i < PIOD_MAX_MEMBERS; i++) {
        const struct piod_peer *m = &c->members[i];
        fprintf(out, "\n[member %s]\n", m->name);
        fprintf(out, "internal = %s\n", m->internal);
        for (int a = 0; a < m->naddr && a < PIOD_MAX_LINKS; a++)
            fprintf(out, "addr = %s\n", m->addr[a]);
    }
    for (int i = 0; i < c->napps && i < PIOD_MAX_APPS; i++) {
        fprintf(out, "\n[application %s]\n", c->apps[i].name);
        if (c->apps[i].owner[0])
            fprintf(out, "owner = %s\n", c->apps[i].owner);
        if (c->apps[i].own_senders || !c->apps[i].owner[0]) /* a section is never empty */
            fprintf(out, "senders = %s\n", c->apps[i].own_senders ? "owner" : "any");
    }
}
