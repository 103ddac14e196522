/* main.c - piod: command line, start-up, signals.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Configuration comes from --config FILE (default /etc/pio/piod.conf when no
 * --listen is given and it exists), then flags override it. SIGTERM/SIGINT
 * drain in-flight messages and stop; SIGHUP reopens the log. The handlers
 * only set flags that the main loop reads.
 */
#include "cli.h"
#include "config.h"
#include "daemon.h"
#include "keys.h"
#include "log.h"
#include "seal.h"
#include "piod.h"
#include "pio.h"

#include <fcntl.h>
#include <getopt.h>
#include <sys/file.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile int g_stop, g_reopen;

static struct piod *g_piod;

static void on_signal(int sig)
{
    if (sig == SIGUSR1 && g_piod)
        g_piod->dump = 1;
    else if (sig == SIGHUP)
        g_reopen = 1;
    else
        g_stop = 1;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: piod [options]\n"
            "  -c, --config FILE      configuration file (default " PIOD_DEFAULT_CONFIG ")\n"
            "      --check-config     check the configuration, say what is wrong, exit\n"
            "      --keygen DIR       make a CURVE key pair DIR/NAME.key, DIR/NAME.pub, exit\n"
            "  -f, --foreground       stay in the foreground (default: daemon)\n"
            "      --name NAME        this host's name (default: hostname)\n"
            "      --system NAME      this system's name (default: the host name)\n"
            "      --listen ADDR      a link address (repeat, one per link, in channel order)\n"
            "      --peer NAME=A,B..  a peer system and its link addresses (repeatable)\n"
            "      --control ADDR     control plane bind address (default: first --listen)\n"
            "      --control-port P   control plane port (default 7700)\n"
            "      --data-port P      data channel port (default 7701)\n"
            "      --source-ports L-H bind outgoing channels to source ports in L..H\n"
            "      --keys DIR         key directory (default " PIOD_DEFAULT_KEYS ")\n"
            "      --socket PATH      control socket for processes (default " PIOD_DEFAULT_SOCKET
            ")\n"
            "      --pool SIZE        total buffer pool (default: 128 process pools, <= RAM/2)\n"
            "      --proc-pool SIZE   pool per process (default 64M)\n"
            "      --grant-budget SIZE receive space granted at once, all processes (default 64M)\n"
            "      --eager-limit SIZE largest message sent with its request (default 64K)\n"
            "      --no-express       keep peer frames on ZeroMQ (no express lane)\n"
            "      --no-direct-lanes  broker no direct lanes between processes\n"
            "      --encrypt          seal data channels and express lanes (the default)\n"
            "      --no-encrypt       do not seal them (for links you trust); peers must agree\n"
            "      --cipher NAME      auto (default: AES-256-GCM where the CPU has AES-NI,\n"
            "                         else ChaCha20-Poly1305), aes-256-gcm, chacha20-poly1305\n"
            "      --link-timeout S   with no channel up to a peer for S s, its sends fail\n"
            "                         with PIO_ELINK (default 30)\n"
            "      --spin-us N        after activity, look again without sleeping for N us\n"
            "                         (default 50; 0: always sleep)\n"
            "      --chunk SIZE       largest chunk of a large message (default 1M)\n"
            "      --chunk-ms N       size chunks to take about N ms on their link, from the\n"
            "                         measured rate (default 50; 0: every chunk is --chunk)\n"
            "      --pace PCT         data channels send at most PCT %% of their measured\n"
            "                         rate (default 125; 0: off, TCP paces alone)\n"
            "      --pidfile PATH     pid file (default " PIOD_DEFAULT_PIDFILE " as a daemon)\n"
            "      --log FILE|syslog  log destination (default stderr)\n"
            "      --export DIR       serve files under DIR to pcp (default: none)\n"
            "      --transport NAME   the links' transport: tcp (default) or rdma (UCX)\n"
            "      --log-level L      error, warn, info or debug (default info)\n"
            "      --drain-ms N       on SIGTERM, wait up to N ms for messages in flight (5000)\n"
            "  -V, --version          print the version\n"
            "  -h, --help             this text\n");
}

/* Is the pid file held by a live piod? Says so on stderr. Checked before
 * detaching so the user sees why on the terminal; piod_pidfile_create
 * checks again (the lock is the truth). */
static int pidfile_busy(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int busy = flock(fd, LOCK_SH | LOCK_NB) != 0;
    if (busy) {
        char buf[32] = "";
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        buf[n > 0 ? n : 0] = 0;
        buf[strcspn(buf, "\n")] = 0;
        fprintf(stderr,
                "piod: %s is locked by a running piod (pid %s): stop it first, or give "
                "this one another pid file\n",
                path, buf);
    }
    close(fd);
    return busy;
}

enum {
    O_CHECK = 256,
    O_KEYGEN,
    O_NAME,
    O_SYSTEM,
    O_LISTEN,
    O_PEER,
    O_CONTROL,
    O_CPORT,
    O_DPORT,
    O_SPORTS,
    O_KEYS,
    O_SOCKET,
    O_POOL,
    O_PPOOL,
    O_GBUDGET,
    O_EAGER,
    O_NOEXPRESS,
    O_NODLANES,
    O_ENCRYPT,
    O_NO_ENCRYPT,
    O_CIPHER,
    O_SPIN,
    O_LINKTO,
    O_CHUNK,
    O_CHUNK_MS,
    O_PACE,
    O_PIDFILE,
    O_LOG,
    O_EXPORT,
    O_TRANSPORT,
    O_LEVEL,
    O_DRAIN
};

static int size_arg(const char *opt, const char *v, uint64_t *out)
{
    if (piod_parse_size(v, out) != 0) {
        fprintf(stderr, "piod: %s: '%s' is not a size (e.g. 4096, 64K, 1M, 2G)\n", opt, v);
        return -1;
    }
    return 0;
}

/* A whole number from lo to hi ("what" names its unit in the message). */
static int num_arg(const char *opt, const char *v, long lo, long hi, const char *what,
                   uint32_t *out)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (*v == 0 || *end || n < lo || n > hi) {
        fprintf(stderr, "piod: %s: '%s' is not a %s from %ld to %ld\n", opt, v, what, lo, hi);
        return -1;
    }
    *out = (uint32_t)n;
    return 0;
}

static int port_arg(const char *opt, const char *v, int *out)
{
    char *end;
    long p = strtol(v, &end, 10);
    if (*v == 0 || *end || p < 1 || p > 65535) {
        fprintf(stderr, "piod: %s: '%s' is not a port (1..65535)\n", opt, v);
        return -1;
    }
    *out = (int)p;
    return 0;
}

static int level_arg(const char *v)
{
    const char *names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++)
        if (strcmp(v, names[i]) == 0)
            return i;
    return -1;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, 0, 'c'},
        {"check-config", no_argument, 0, O_CHECK},
        {"keygen", required_argument, 0, O_KEYGEN},
        {"foreground", no_argument, 0, 'f'},
        {"name", required_argument, 0, O_NAME},
        {"system", required_argument, 0, O_SYSTEM},
        {"listen", required_argument, 0, O_LISTEN},
        {"peer", required_argument, 0, O_PEER},
        {"control", required_argument, 0, O_CONTROL},
        {"control-port", required_argument, 0, O_CPORT},
        {"data-port", required_argument, 0, O_DPORT},
        {"source-ports", required_argument, 0, O_SPORTS},
        {"keys", required_argument, 0, O_KEYS},
        {"socket", required_argument, 0, O_SOCKET},
        {"pool", required_argument, 0, O_POOL},
        {"proc-pool", required_argument, 0, O_PPOOL},
        {"grant-budget", required_argument, 0, O_GBUDGET},
        {"eager-limit", required_argument, 0, O_EAGER},
        {"no-express", no_argument, 0, O_NOEXPRESS},
        {"no-direct-lanes", no_argument, 0, O_NODLANES},
        {"encrypt", no_argument, 0, O_ENCRYPT},
        {"no-encrypt", no_argument, 0, O_NO_ENCRYPT},
        {"cipher", required_argument, 0, O_CIPHER},
        {"spin-us", required_argument, 0, O_SPIN},
        {"link-timeout", required_argument, 0, O_LINKTO},
        {"chunk", required_argument, 0, O_CHUNK},
        {"chunk-ms", required_argument, 0, O_CHUNK_MS},
        {"pace", required_argument, 0, O_PACE},
        {"pidfile", required_argument, 0, O_PIDFILE},
        {"log", required_argument, 0, O_LOG},
        {"export", required_argument, 0, O_EXPORT},
        {"transport", required_argument, 0, O_TRANSPORT},
        {"log-level", required_argument, 0, O_LEVEL},
        {"drain-ms", required_argument, 0, O_DRAIN},
        {"verbose", no_argument, 0, 'v'},
        {"version", no_argument, 0, 'V'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    static struct piod d; /* large: keep it off the stack */
    struct piod_config *c = &d.cfg;
    const char *config = NULL, *keygen = NULL;
    int check = 0, verbose = 0, drain_ms = 5000, bad = 0, pidfile_set = 0;
    int nlisten = 0, npeer_args = 0, name_flag = 0, system_flag = 0;
    char listen[PIOD_MAX_LINKS][PIOD_ADDR_MAX];
    const char *peer_args[PIOD_MAX_PEERS];
    /* first pass: find --config so that flags override the file */
    for (int i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) && i + 1 < argc)
            config = argv[i + 1];
        else if (strncmp(argv[i], "--config=", 9) == 0)
            config = argv[i] + 9;
        else if (strcmp(argv[i], "--listen") == 0 || strncmp(argv[i], "--listen=", 9) == 0)
            nlisten++;
    }
    piod_config_defaults(c);
    char default_system[PIOD_NAME_MAX];
    snprintf(default_system, sizeof(default_system), "%s", c->system);
    if (!config && nlisten == 0 && access(PIOD_DEFAULT_CONFIG, R_OK) == 0)
        config = PIOD_DEFAULT_CONFIG;
    int file_problems = 0;
    if (config) {
        file_problems = piod_config_load(c, config, stderr);
        if (file_problems < 0)
            return 2;
    }
    nlisten = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "c:fvVh", opts, NULL)) != -1) {
        switch (ch) {
        case 'c': break;
        case 'f': c->foreground = 1; break;
        case 'v': verbose = 1; break;
        case 'V': return pio_cli_version("piod");
        case 'h': usage(stdout); return 0;
        case O_CHECK: check = 1; break;
        case O_KEYGEN: keygen = optarg; break;
        case O_NAME:
            snprintf(c->name, sizeof(c->name), "%s", optarg);
            name_flag = 1;
            break;
        case O_SYSTEM:
            snprintf(c->system, sizeof(c->system), "%s", optarg);
            system_flag = 1;
            break;
        case O_LISTEN:
            if (nlisten == PIOD_MAX_LINKS) {
                fprintf(stderr, "piod: at most %d --listen addresses\n", PIOD_MAX_LINKS);
                bad = 1;
            } else {
                snprintf(listen[nlisten++], PIOD_ADDR_MAX, "%s", optarg);
            }
            break;
        case O_PEER:
            if (npeer_args < PIOD_MAX_PEERS)
                peer_args[npeer_args++] = optarg;
            else
                bad = 1;
            break;
        case O_CONTROL: snprintf(c->control_addr, sizeof(c->control_addr), "%s", optarg); break;
        case O_CPORT: bad |= port_arg("--control-port", optarg, &c->control_port) != 0; break;
        case O_DPORT: bad |= port_arg("--data-port", optarg, &c->data_port) != 0; break;
        case O_SPORTS:
            if (sscanf(optarg, "%d-%d", &c->src_port_lo, &c->src_port_hi) != 2) {
                fprintf(stderr, "piod: --source-ports: '%s' is not LO-HI\n", optarg);
                bad = 1;
            }
            break;
        case O_KEYS: snprintf(c->keys, sizeof(c->keys), "%s", optarg); break;
        case O_SOCKET: snprintf(c->socket, sizeof(c->socket), "%s", optarg); break;
        case O_POOL:
            bad |= size_arg("--pool", optarg, &c->pool) != 0;
            c->pool_set = 1;
            break;
        case O_PPOOL:
            bad |= size_arg("--proc-pool", optarg, &c->proc_pool) != 0;
            c->proc_pool_set = 1;
            break;
        case O_GBUDGET: bad |= size_arg("--grant-budget", optarg, &c->grant_budget) != 0; break;
        case O_EAGER: {
            uint64_t v = 0;
            bad |= size_arg("--eager-limit", optarg, &v) != 0;
            if (v > (1u << 24)) {
                fprintf(stderr, "piod: --eager-limit: at most 16M\n");
                bad = 1;
            }
            c->eager_limit = (uint32_t)v;
            break;
        }
        case O_NOEXPRESS: c->express = 0; break;
        case O_NODLANES: c->direct_lanes = 0; break;
        case O_ENCRYPT: c->encrypt = 1; break;
        case O_NO_ENCRYPT: c->encrypt = 0; break;
        case O_CIPHER:
            if (strcmp(optarg, "auto") == 0)
                c->cipher = PIO_CIPHER_AUTO;
            else if (strcmp(optarg, "aes-256-gcm") == 0)
                c->cipher = PIO_CIPHER_AES;
            else if (strcmp(optarg, "chacha20-poly1305") == 0)
                c->cipher = PIO_CIPHER_CHACHA;
            else {
                fprintf(stderr,
                        "piod: bad --cipher '%s': expected auto, aes-256-gcm or "
                        "chacha20-poly1305\n",
                        optarg);
                return 2;
            }
            break;
        case O_LINKTO:
            bad |= num_arg("--link-timeout", optarg, 1, 86400, "number of seconds",
                           &c->link_timeout) != 0;
            break;
        case O_SPIN:
            bad |= num_arg("--spin-us", optarg, 0, 10000, "number", &c->spin_us) != 0;
            break;
        case O_CHUNK_MS:
            bad |= num_arg("--chunk-ms", optarg, 0, 60000, "number", &c->chunk_ms) != 0;
            break;
        case O_PACE: bad |= num_arg("--pace", optarg, 0, 1000, "percentage", &c->pace) != 0; break;
        case O_CHUNK: {
            uint64_t v = 0;
            bad |= size_arg("--chunk", optarg, &v) != 0;
            if (v == 0 || v > (1u << 30)) {
                fprintf(stderr, "piod: --chunk: between 1 and 1G\n");
                bad = 1;
            }
            c->chunk = (uint32_t)v;
            break;
        }
        case O_PIDFILE:
            snprintf(c->pidfile, sizeof(c->pidfile), "%s", optarg);
            pidfile_set = 1;
            break;
        case O_EXPORT: snprintf(c->export_root, sizeof(c->export_root), "%s", optarg); break;
        case O_TRANSPORT: snprintf(c->transport, sizeof(c->transport), "%s", optarg); break;
        case O_LOG:
            if (strcmp(optarg, "syslog") == 0)
                c->log_syslog = 1;
            else if (strcmp(optarg, "stderr") == 0)
                c->logfile[0] = 0;
            else
                snprintf(c->logfile, sizeof(c->logfile), "%s", optarg);
            break;
        case O_LEVEL:
            if ((c->log_level = level_arg(optarg)) < 0) {
                fprintf(stderr, "piod: --log-level: '%s': use error, warn, info or debug\n",
                        optarg);
                bad = 1;
            }
            break;
        case O_DRAIN: {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*optarg == 0 || *end || v < 0 || v > 3600000) {
                fprintf(stderr, "piod: --drain-ms: '%s' is not a number of ms (0..3600000)\n",
                        optarg);
                bad = 1;
            }
            drain_ms = (int)v;
            break;
        }
        default: usage(stderr); return 2;
        }
    }
    /* the system follows the host name unless something named it */
    if (name_flag && !system_flag && (!config || strcmp(c->system, default_system) == 0))
        snprintf(c->system, sizeof(c->system), "%s", c->name);
    if (optind < argc) {
        fprintf(stderr, "piod: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (keygen) {
        int rc = piod_keys_generate(keygen, c->system[0] ? c->system : c->name, stderr);
        if (rc == PIO_OK)
            printf("piod: wrote %s/%s.key and %s/%s.pub\n", keygen, c->system, keygen, c->system);
        return rc == PIO_OK ? 0 : 1;
    }
    if (nlisten > 0) { /* --listen flags replace the file's listen lines */
        c->nlisten = 0;
        for (int i = 0; i < nlisten; i++) {
            char why[256];
            if (piod_config_listen_add(c, listen[i], why, sizeof(why)) < 0) {
                fprintf(stderr, "piod: --listen: %s\n", why);
                bad = 1;
            }
        }
    }
    for (int i = 0; i < npeer_args; i++)
        bad |= piod_config_peer_arg(c, peer_args[i], stderr) != 0;
    int problems = file_problems + (bad ? 1 : 0) + piod_config_validate(c, stderr);
    if (problems == 0)
        piod_config_links(c);
    if (check) {
        if (problems == 0) {
            printf("piod: configuration %s is valid\n", config ? config : "(from flags)");
            for (int i = 0; i < c->nlisten; i++) /* what each listen pattern resolved to */
                if (c->listen_from[i][0])
                    printf("piod: link %d: listen = %s: %s\n", i, c->listen_from[i], c->listen[i]);
            if (verbose)
                piod_config_print(c, stdout);
        } else {
            fprintf(stderr, "piod: %d problem(s) in the configuration\n", problems);
        }
        return problems == 0 ? 0 : 1;
    }
    if (problems) {
        fprintf(stderr, "piod: %d problem(s) in the configuration; not starting\n", problems);
        return 2;
    }
    if (c->foreground && !pidfile_set && strcmp(c->pidfile, PIOD_DEFAULT_PIDFILE) == 0)
        c->pidfile[0] = 0; /* a foreground piod keeps a pid file only when asked */
    if (!c->foreground && !pidfile_set && !c->pidfile[0])
        snprintf(c->pidfile, sizeof(c->pidfile), "%s", PIOD_DEFAULT_PIDFILE);
    if (piod_log_open(c->log_syslog, c->logfile, c->log_level) != 0)
        fprintf(stderr, "piod: cannot open log %s; logging to stderr\n", c->logfile);
    if (piod_keys_load(&d.keys, c->keys, c->ident, stderr) != PIO_OK)
        return 2;
    if (c->pidfile[0] && pidfile_busy(c->pidfile))
        return 2; /* said why on the terminal, before detaching from it */
    if (!c->foreground && piod_daemonize(c->logfile[0] == 0 && !c->log_syslog) != 0) {
        perror("piod: daemonize");
        return 2;
    }
    if (c->pidfile[0] && piod_pidfile_create(c->pidfile) != PIO_OK) {
        PIOD_ERR("cannot take the pid file %s (another piod holds it?): not starting", c->pidfile);
        piod_daemon_ready(1);
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    g_piod = &d;
    sigaction(SIGUSR1, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    int rc = piod_init(&d);
    if (rc != PIO_OK) {
        PIOD_ERR("start-up failed: %s", PIO_Strerror(rc));
        piod_daemon_ready(1);
        piod_fini(&d);
        piod_pidfile_remove();
        return 1;
    }
    piod_daemon_ready(0);
    piod_files_start(&d);
    piod_run(&d, &g_stop, &g_reopen, drain_ms);
    piod_fini(&d);
    piod_pidfile_remove();
    PIOD_INFO("stopped");
    return 0;
}
