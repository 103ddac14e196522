/* config_check.c - piod configuration as a whole: the checks of relations
 * between values (piod_config_validate) and the values derived from the
 * rest (piod_config_links: the system's links, pool sizes), and the
 * resolution of `listen` patterns (an interface glob or a CIDR) against this
 * host's interfaces (piod_config_listen_add). Split from config.c, whose
 * parser checks what one line can tell.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * piod_config_validate treats a config from a file and one from flags
 * alike, reports every problem (never only the first) and changes nothing.
 * No state, no locks; nothing here exits.
 */
#include "config.h"
#include "config_int.h"
#include "transport.h"

#include <arpa/inet.h>
#include <fnmatch.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* ---- whole-config checks ------------------------------------------------ */

struct cfg_check {
    const char *src;
    FILE *errs;
    int problems;
};

static void cfg_bad(struct cfg_check *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void cfg_bad(struct cfg_check *v, const char *fmt, ...)
{
    va_list ap;
    v->problems++;
    if (v->errs == NULL)
        return;
    fprintf(v->errs, "%s: ", v->src);
    va_start(ap, fmt);
    vfprintf(v->errs, fmt, ap);
    va_end(ap);
    fputc('\n', v->errs);
}

static int cfg_port_ok(int port)
{
    return port >= 1 && port <= 65535;
}

/* The string field is NUL-terminated within its array. */
#define CFG_TERMINATED(field) (memchr((field), '\0', sizeof(field)) != NULL)

static void cfg_check_peer(struct cfg_check *v, const struct piod_config *c, int i)
{
    const struct piod_peer *pr = &c->peers[i];
    const char *nm = CFG_TERMINATED(pr->name) ? pr->name : "?";

    if (!CFG_TERMINATED(pr->name) || !cfg_name_ok(pr->name))
        cfg_bad(v, "peer %d: bad name '%s': %s", i + 1, nm, CFG_NAME_HELP);
    else if (strcmp(pr->name, c->system) == 0)
        cfg_bad(v, "peer '%s' is this system itself: a peer is another system", nm);
    for (int j = 0; j < i; j++)
        if (strcmp(c->peers[j].name, pr->name) == 0) {
            cfg_bad(v, "peer '%s' is given twice: give each peer once", nm);
            break;
        }
    if (pr->naddr < 1)
        cfg_bad(v, "peer '%s' has no address: add 'addr = ADDR' lines, one per link", nm);
    if (pr->naddr > PIOD_MAX_LINKS)
        cfg_bad(v, "peer '%s' has %d addresses: at most %d", nm, pr->naddr, PIOD_MAX_LINKS);
    for (int a = 0; a < pr->naddr && a < PIOD_MAX_LINKS; a++) {
        if (!CFG_TERMINATED(pr->addr[a]) || cfg_addr_parse(pr->addr[a], NULL) != 0) {
            cfg_bad(v, "peer '%s': bad address '%.*s': %s", nm, PIOD_ADDR_MAX - 1, pr->addr[a],
                    CFG_ADDR_HELP);
            continue;
        }
        for (int b = 0; b < a; b++)
            if (cfg_addr_same(pr->addr[a], pr->addr[b])) {
                cfg_bad(v, "peer '%s': address %s is given twice: one address per link", nm,
                        pr->addr[a]);
                break;
            }
    }
    if (pr->control_port != 0 && !cfg_port_ok(pr->control_port))
        cfg_bad(v, "peer '%s': bad control-port %d: %s", nm, pr->control_port, CFG_PORT_HELP);
    if (pr->data_port != 0 && !cfg_port_ok(pr->data_port))
        cfg_bad(v, "peer '%s': bad data-port %d: %s", nm, pr->data_port, CFG_PORT_HELP);
    int cp = pr->control_port ? pr->control_port : c->control_port;
    int dp = pr->data_port ? pr->data_port : c->data_port;
    if ((pr->control_port || pr->data_port) && cp == dp)
        cfg_bad(v, "peer '%s': control-port and data-port are both %d: they must differ", nm, cp);
    if (!CFG_TERMINATED(pr->control) || (pr->control[0] && cfg_addr_parse(pr->control, NULL) != 0))
        cfg_bad(v, "peer '%s': bad control address '%.47s': %s", nm, pr->control, CFG_ADDR_HELP);
    if (!CFG_TERMINATED(pr->system) || (pr->system[0] && !cfg_name_ok(pr->system)))
        cfg_bad(v, "peer '%s': bad system '%.63s': %s", nm, pr->system, CFG_NAME_HELP);
    if (pr->internal[0])
        cfg_bad(v, "peer '%s': 'internal' describes a host of our own system: use [member %s]", nm,
                nm);
}

static void cfg_check_member(struct cfg_check *v, const struct piod_config *c, int i)
{
    const struct piod_peer *m = &c->members[i];
    const char *nm = CFG_TERMINATED(m->name) ? m->name : "?";

    if (!CFG_TERMINATED(m->name) || !cfg_name_ok(m->name))
        cfg_bad(v, "member %d: bad name '%s': %s", i + 1, nm, CFG_NAME_HELP);
    else if (strcmp(m->name, c->name) == 0)
        cfg_bad(v, "member '%s' is this host itself: list the other hosts of the system", nm);
    for (int j = 0; j < i; j++)
        if (strcmp(c->members[j].name, m->name) == 0) {
            cfg_bad(v, "member '%s' is given twice: give each member once", nm);
            break;
        }
    for (int j = 0; j < c->npeers && j < PIOD_MAX_PEERS; j++)
        if (strcmp(c->peers[j].name, m->name) == 0)
            cfg_bad(v, "'%s' is both a member and a peer: a member is a host of our system", nm);
    if (!CFG_TERMINATED(m->internal) || m->internal[0] == '\0' ||
        cfg_addr_parse(m->internal, NULL) != 0)
        cfg_bad(v, "member '%s' needs 'internal = ADDR' (its internal-network address): %s", nm,
                CFG_ADDR_HELP);
    if (m->naddr < 1 || m->naddr > PIOD_MAX_LINKS)
        cfg_bad(v, "member '%s' has %d link addresses: give 1 to %d 'addr = ADDR' lines", nm,
                m->naddr, PIOD_MAX_LINKS);
    for (int a = 0; a < m->naddr && a < PIOD_MAX_LINKS; a++)
        if (!CFG_TERMINATED(m->addr[a]) || cfg_addr_parse(m->addr[a], NULL) != 0)
            cfg_bad(v, "member '%s': bad address '%.*s': %s", nm, PIOD_ADDR_MAX - 1, m->addr[a],
                    CFG_ADDR_HELP);
    if (m->control[0] || m->system[0] || m->control_port || m->data_port)
        cfg_bad(v, "member '%s': only 'addr' and 'internal' go in a [member] section", nm);
}

int piod_config_validate(const struct piod_config *c, FILE *errs)
{
    struct cfg_check v = {c->config_path ? c->config_path : "piod config", errs, 0};
    char a[32], b[32];

    if (!CFG_TERMINATED(c->name) || !cfg_name_ok(c->name))
        cfg_bad(&v, "bad name '%.63s': %s", c->name, CFG_NAME_HELP);
    if (!CFG_TERMINATED(c->system) || !cfg_name_ok(c->system))
        cfg_bad(&v, "bad system '%.63s': %s", c->system, CFG_NAME_HELP);

    if (!CFG_TERMINATED(c->socket) ||
        strlen(c->socket) >= sizeof(((struct sockaddr_un *)0)->sun_path))
        cfg_bad(&v, "socket path is too long: at most %zu bytes",
                sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
    else if (c->socket[0] == '\0')
        cfg_bad(&v, "socket is empty: give the control socket path, e.g. %s", PIOD_DEFAULT_SOCKET);
    if (!CFG_TERMINATED(c->keys) || c->keys[0] == '\0')
        cfg_bad(&v, "keys is empty or too long: give the key directory, e.g. %s",
                PIOD_DEFAULT_KEYS);
    if (!CFG_TERMINATED(c->pidfile) || !CFG_TERMINATED(c->export_root) ||
        !CFG_TERMINATED(c->export_map) || !CFG_TERMINATED(c->logfile))
        cfg_bad(&v, "a path (pidfile, export, export-map or log) is too long: at most %d bytes",
                PIOD_PATH_MAX - 1);

    if (c->nlisten < 1)
        cfg_bad(&v, "no listen address: add 'listen = ADDR', one per link");
    if (c->nlisten > PIOD_MAX_LINKS)
        cfg_bad(&v, "%d listen addresses: at most %d", c->nlisten, PIOD_MAX_LINKS);
    for (int i = 0; i < c->nlisten && i < PIOD_MAX_LINKS; i++) {
        if (!CFG_TERMINATED(c->listen[i]) || cfg_addr_parse(c->listen[i], NULL) != 0) {
            cfg_bad(&v, "bad listen address '%.47s': %s", c->listen[i], CFG_ADDR_HELP);
            continue;
        }
        for (int j = 0; j < i; j++)
            if (cfg_addr_same(c->listen[i], c->listen[j])) {
                cfg_bad(&v, "listen address %s is given twice: one address per link", c->listen[i]);
                break;
            }
    }
    if (!CFG_TERMINATED(c->control_addr) ||
        (c->control_addr[0] != '\0' && cfg_addr_parse(c->control_addr, NULL) != 0))
        cfg_bad(&v, "bad control address '%.47s': %s", c->control_addr, CFG_ADDR_HELP);

    if (!cfg_port_ok(c->control_port))
        cfg_bad(&v, "bad control-port %d: %s", c->control_port, CFG_PORT_HELP);
    if (!cfg_port_ok(c->data_port))
        cfg_bad(&v, "bad data-port %d: %s", c->data_port, CFG_PORT_HELP);
    if (c->control_port == c->data_port)
        cfg_bad(&v, "control-port and data-port are both %d: they must differ", c->data_port);
    if (c->src_port_lo != 0 || c->src_port_hi != 0) {
        if (!cfg_port_ok(c->src_port_lo) || !cfg_port_ok(c->src_port_hi))
            cfg_bad(&v, "bad source-ports %d-%d: expected LO-HI, two ports from 1 to 65535",
                    c->src_port_lo, c->src_port_hi);
        else if (c->src_port_lo > c->src_port_hi)
            cfg_bad(&v, "source-ports %d-%d: LO is above HI: write the lower port first",
                    c->src_port_lo, c->src_port_hi);
    }

    if (c->pool == 0)
        cfg_bad(&v, "pool is 0: give the buffer pool size, e.g. 1G");
    if (c->proc_pool == 0)
        cfg_bad(&v, "proc-pool is 0: give the per-process pool size, e.g. 64M");
    if (c->chunk == 0)
        cfg_bad(&v, "chunk is 0: give the chunk size, e.g. 1M");
    if (c->link_timeout == 0 || c->link_timeout > 86400)
        cfg_bad(&v, "link-timeout (%u) must be 1 to 86400 seconds", c->link_timeout);
    if (c->spin_us > 10000)
        cfg_bad(&v, "spin-us (%u) is over 10000: a piod would burn a core for nothing", c->spin_us);
    if (c->stall_ms < 100 || c->stall_ms > 600000)
        cfg_bad(&v, "stall-ms (%u) must be 100 to 600000 milliseconds", c->stall_ms);
    if (c->eager_limit > (8u << 20)) {
        cfg_size_str(c->eager_limit, a, sizeof(a));
        cfg_bad(&v, "eager-limit (%s) is above 8M: an eager message rides in one control frame", a);
    }
    if (c->chunk_ms > 60000)
        cfg_bad(&v, "chunk-ms (%u) is above 60000: give milliseconds, 0 for a fixed chunk",
                c->chunk_ms);
    if (c->pace != 0 && (c->pace < 100 || c->pace > 1000))
        cfg_bad(&v,
                "pace (%u) must be 0 (off) or a percentage of the measured rate from 100 to "
                "1000",
                c->pace);
    if (c->eager_limit > c->chunk) {
        cfg_size_str(c->eager_limit, a, sizeof(a));
        cfg_size_str(c->chunk, b, sizeof(b));
        cfg_bad(&v, "eager-limit (%s) is above chunk (%s): it must be at most chunk", a, b);
    }
    if (c->chunk > c->proc_pool / 4) {
        cfg_size_str(c->chunk, a, sizeof(a));
        cfg_size_str(c->proc_pool, b, sizeof(b));
        cfg_bad(&v,
                "chunk (%s) is above proc-pool / 4 (proc-pool is %s): lower chunk or raise "
                "proc-pool",
                a, b);
    }
    if (c->proc_pool > c->pool) {
        cfg_size_str(c->proc_pool, a, sizeof(a));
        cfg_size_str(c->pool, b, sizeof(b));
        cfg_bad(&v, "proc-pool (%s) is above pool (%s): lower proc-pool or raise pool", a, b);
    }
    if (c->log_level < PIOD_LOG_ERROR || c->log_level > PIOD_LOG_DEBUG)
        cfg_bad(&v, "bad log level %d: %s", c->log_level, CFG_LEVEL_HELP);
    if (!CFG_TERMINATED(c->transport) || !pio_transport_find(c->transport)) {
        char names[128];
        cfg_transports(names, sizeof(names));
        cfg_bad(&v, "unknown transport '%.15s': expected one of %s", c->transport, names);
    }

    if (c->npeers < 0 || c->npeers > PIOD_MAX_PEERS)
        cfg_bad(&v, "%d peers: at most %d", c->npeers, PIOD_MAX_PEERS);
    for (int i = 0; i < c->npeers && i < PIOD_MAX_PEERS; i++)
        cfg_check_peer(&v, c, i);
    if (c->nmembers < 0 || c->nmembers > PIOD_MAX_MEMBERS)
        cfg_bad(&v, "%d members: at most %d", c->nmembers, PIOD_MAX_MEMBERS);
    int links = c->nlisten;
    for (int i = 0; i < c->nmembers && i < PIOD_MAX_MEMBERS; i++) {
        cfg_check_member(&v, c, i);
        links += c->members[i].naddr;
    }
    if (!CFG_TERMINATED(c->internal) || (c->internal[0] && cfg_addr_parse(c->internal, NULL) != 0))
        cfg_bad(&v, "bad internal address '%.47s': %s", c->internal, CFG_ADDR_HELP);
    if (c->nmembers > 0 && c->internal[0] == '\0')
        cfg_bad(&v, "a system of several hosts needs 'internal = ADDR': this host's address on "
                    "the network between the members");
    if (c->nmembers > 0 && links > PIOD_MAX_LINKS)
        cfg_bad(&v, "the system has %d links (this host's and its members'): at most %d", links,
                PIOD_MAX_LINKS);
    if (!cfg_port_ok(c->relay_port) || c->relay_port == c->control_port ||
        c->relay_port == c->data_port)
        cfg_bad(&v, "bad relay-port %d: a port from 1 to 65535, not the control or data port",
                c->relay_port);
    return v.problems;
}

/* ---- the system's links ------------------------------------------------ */

void piod_config_links(struct piod_config *c)
{
    /* hosts in name order: -1 is this host, i >= 0 members[i] */
    int order[PIOD_MAX_MEMBERS + 1], n = 0;
    order[n++] = -1;
    for (int i = 0; i < c->nmembers; i++) {
        int j = n++;
        while (j > 0) {
            const char *prev = order[j - 1] < 0 ? c->name : c->members[order[j - 1]].name;
            if (strcmp(prev, c->members[i].name) <= 0)
                break;
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    snprintf(c->ident, sizeof(c->ident), "%s", c->nmembers ? c->name : c->system);
    int width = 0; /* the widest bundle: min(our links, a peer's) */
    int ours = c->nlisten;
    for (int i = 0; i < c->nmembers; i++)
        ours += c->members[i].naddr;
    for (int i = 0; i < c->npeers; i++) {
        int w = c->peers[i].naddr < ours ? c->peers[i].naddr : ours;
        width = w > width ? w : width;
    }
    /* with chunks sized by the link (chunk-ms), a slow wide bundle's chunks
     * are small and the default pool holds enough of them: no growth */
    uint64_t want = 8ull * c->chunk * (uint64_t)width;
    if (!c->proc_pool_set && c->chunk_ms == 0 && want > c->proc_pool) {
        uint64_t pp = c->proc_pool;
        while (pp < want)
            pp *= 2;
        if (!c->pool_set && 16 * pp > c->pool)
            c->pool = 16 * pp;
        if (pp <= c->pool)
            c->proc_pool = pp;
    }
    /* a node's ranks each get a pool (issue 27: 64 to 128 per node): unless
     * set, the pool holds 128 process pools, within half the memory. Its
     * pages are only allocated as they are touched (pio_shm_create). */
    if (!c->pool_set && c->proc_pool <= UINT64_MAX / 128) {
        uint64_t want_pool = 128 * c->proc_pool;
        long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        if (pages > 0 && psz > 0 && want_pool > (uint64_t)pages * (uint64_t)psz / 2)
            want_pool = (uint64_t)pages * (uint64_t)psz / 2;
        if (want_pool > c->pool)
            c->pool = want_pool;
    }
    c->nlinks = 0;
    for (int h = 0; h < n; h++) {
        int m = order[h];
        int cnt = m < 0 ? c->nlisten : c->members[m].naddr;
        for (int a = 0; a < cnt && c->nlinks < PIOD_MAX_LINKS; a++) {
            int k = c->nlinks++;
            c->link_owner[k] = m;
            c->link_local[k] = m < 0 ? a : -1;
            snprintf(c->link_addr[k], sizeof(c->link_addr[k]), "%s",
                     m < 0 ? c->listen[a] : c->members[m].addr[a]);
        }
    }
}

/* ---- listen patterns: an interface glob or a CIDR ----------------------- */

struct cfg_if_addr {
    char ifname[IF_NAMESIZE];
    unsigned char key[17]; /* cfg_addr_parse's form: family byte + 16 bytes */
    char text[PIOD_ADDR_MAX];
};

static int cfg_if_addr_cmp(const void *a, const void *b)
{
    const struct cfg_if_addr *x = a, *y = b;
    int c = strverscmp(x->ifname, y->ifname);
    return c ? c : memcmp(x->key, y->key, sizeof(x->key));
}

/* "198.18.0.0/16" -> key and prefix length. Returns 0, or -1 if spec is not
 * a CIDR (an address, '/', a prefix length within the family's bits). */
static int cfg_cidr_parse(const char *spec, unsigned char key[17], int *bits)
{
    char addr[PIOD_ADDR_MAX];
    const char *slash = strchr(spec, '/');
    char *end;
    if (!slash || (size_t)(slash - spec) >= sizeof(addr) || !slash[1])
        return -1;
    memcpy(addr, spec, (size_t)(slash - spec));
    addr[slash - spec] = '\0';
    if (cfg_addr_parse(addr, key) != 0)
        return -1;
    long n = strtol(slash + 1, &end, 10);
    if (*end || slash[1] < '0' || slash[1] > '9' || n < 0 || n > (key[0] == 4 ? 32 : 128))
        return -1;
    *bits = (int)n;
    return 0;
}

/* The first bits of the address bytes of a and net agree (same family). */
static int cfg_in_cidr(const unsigned char a[17], const unsigned char net[17], int bits)
{
    if (a[0] != net[0])
        return 0;
    for (int i = 0; i < bits; i++) {
        int byte = 1 + i / 8, mask = 0x80 >> (i % 8);
        if ((a[byte] & mask) != (net[byte] & mask))
            return 0;
    }
    return 1;
}

/* An interface name or glob: what fnmatch patterns over names are made of. */
static int cfg_glob_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              strchr("._-:@*?[]!", *s)))
            return 0;
    return 1;
}

int piod_config_listen_add(struct piod_config *c, const char *spec, char *why, size_t whylen)
{
    unsigned char net[17];
    int bits = 0, cidr, glob, wild, added = 0, n = 0, cap = 0;
    struct ifaddrs *ifa = NULL;
    struct cfg_if_addr *list = NULL;
    char seen[256] = "";

    if (cfg_addr_parse(spec, NULL) == 0) { /* an address: itself */
        for (int i = 0; i < c->nlisten && i < PIOD_MAX_LINKS; i++)
            if (cfg_addr_same(c->listen[i], spec)) {
                snprintf(why, whylen, "listen address %s is given twice: one address per link",
                         spec);
                return -1;
            }
        if (c->nlisten >= PIOD_MAX_LINKS) {
            snprintf(why, whylen, "too many listen addresses: at most %d (one per link)",
                     PIOD_MAX_LINKS);
            return -1;
        }
        snprintf(c->listen[c->nlisten], PIOD_ADDR_MAX, "%s", spec);
        memset(c->listen_from[c->nlisten], 0, PIOD_NAME_MAX);
        c->nlisten++;
        return 1;
    }
    cidr = cfg_cidr_parse(spec, net, &bits) == 0;
    glob = !cidr && cfg_glob_ok(spec);
    if (!cidr && !glob) {
        snprintf(why, whylen,
                 "bad listen value '%.60s': expected an address (198.18.0.1), a CIDR "
                 "(198.18.0.0/16) or an interface name or glob (eth0, eth*)",
                 spec);
        return -1;
    }
    wild = glob && strpbrk(spec, "*?[") != NULL;
    if (getifaddrs(&ifa) != 0) {
        snprintf(why, whylen, "listen = %.60s: cannot list this host's interfaces (getifaddrs)",
                 spec);
        return -1;
    }
    for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
        struct cfg_if_addr a;
        const void *bytes;
        int fam;
        if (!i->ifa_addr || !i->ifa_name)
            continue;
        fam = i->ifa_addr->sa_family;
        if (fam != AF_INET && fam != AF_INET6)
            continue;
        if (glob && strlen(seen) + strlen(i->ifa_name) + 3 < sizeof(seen) &&
            !strstr(seen, i->ifa_name)) { /* for the message when nothing matches */
            strcat(seen, seen[0] ? ", " : "");
            strcat(seen, i->ifa_name);
        }
        memset(&a, 0, sizeof(a));
        snprintf(a.ifname, sizeof(a.ifname), "%s", i->ifa_name);
        bytes = fam == AF_INET
                    ? (const void *)&((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr
                    : (const void *)&((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr;
        a.key[0] = fam == AF_INET ? 4 : 6;
        memcpy(a.key + 1, bytes, fam == AF_INET ? 4 : 16);
        if (!inet_ntop(fam, bytes, a.text, sizeof(a.text)))
            continue;
        if (fam == AF_INET6 && a.key[1] == 0xfe && (a.key[2] & 0xc0) == 0x80)
            continue; /* link-local: no scope in a listen address */
        if (cidr ? !cfg_in_cidr(a.key, net, bits)
                 : fam != AF_INET || fnmatch(spec, i->ifa_name, 0) != 0 ||
                       (wild && (i->ifa_flags & IFF_LOOPBACK)))
            continue;
        if (n == cap) {
            struct cfg_if_addr *m = realloc(list, (size_t)(cap ? 2 * cap : 16) * sizeof(*list));
            if (!m) {
                snprintf(why, whylen, "listen = %.60s: out of memory", spec);
                added = -1;
                goto free;
            }
            list = m;
            cap = cap ? 2 * cap : 16;
        }
        list[n++] = a;
    }
    if (n == 0) {
        if (cidr)
            snprintf(why, whylen, "listen = %.60s: no address of this host is in that range", spec);
        else
            snprintf(why, whylen,
                     "listen = %.60s: no interface of this host with an IPv4 address matches "
                     "(interfaces: %s)",
                     spec, seen[0] ? seen : "none");
        added = -1;
        goto free;
    }
    qsort(list, (size_t)n, sizeof(*list), cfg_if_addr_cmp);
    for (int k = 0; k < n; k++) {
        int dup = 0;
        for (int i = 0; i < c->nlisten && i < PIOD_MAX_LINKS; i++)
            dup |= cfg_addr_same(c->listen[i], list[k].text);
        if (dup)
            continue;
        if (c->nlisten >= PIOD_MAX_LINKS) {
            snprintf(why, whylen,
                     "listen = %.60s gives more than %d addresses: at most %d (one per link); "
                     "name fewer interfaces or a narrower range",
                     spec, PIOD_MAX_LINKS, PIOD_MAX_LINKS);
            added = -1;
            goto free;
        }
        snprintf(c->listen[c->nlisten], PIOD_ADDR_MAX, "%s", list[k].text);
        memset(c->listen_from[c->nlisten], 0, PIOD_NAME_MAX);
        snprintf(c->listen_from[c->nlisten], PIOD_NAME_MAX, "%.40s on %s", spec, list[k].ifname);
        c->nlisten++;
        added++;
    }
    if (added == 0) {
        snprintf(why, whylen, "listen = %.60s: every address it gives is listed already", spec);
        added = -1;
    }
free:
    free(list);
    freeifaddrs(ifa);
    return added;
}
