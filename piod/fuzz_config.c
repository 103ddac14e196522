/* fuzz_config.c - libFuzzer target for the config-file parsers.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The input is a piod config file (piod.conf(5)). It is loaded over the
 * defaults and validated; whatever the parser accepted must print and load
 * back to the same printed text (piod_config_print writes the syntax the
 * parser reads, so printing is a fixpoint after one round). Each line is
 * also given, as it is, to the other parsers of configuration text: the
 * number parser of the environment settings (pio_parse_int/bytes: anco,
 * GAS, pfs flags) and piod's size parser (pfs's service-class spec has its
 * own target, pfs/fuzz_qos.c). A broken property ends in __builtin_trap().
 * The transport registry is stubbed (tcp and rdma by name: the parser only
 * asks whether a name exists). `make fuzz`.
 */
#include "parse.h"
#include "config.h"
#include "transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct pio_transport_ops fz_tcp = {.name = "tcp"}, fz_rdma = {.name = "rdma"};
static const struct pio_transport_ops *const fz_list[] = {&fz_tcp, &fz_rdma, NULL};

const struct pio_transport_ops *pio_transport_find(const char *name)
{
    for (int i = 0; fz_list[i]; i++)
        if (strcmp(fz_list[i]->name, name) == 0)
            return fz_list[i];
    return NULL;
}

const struct pio_transport_ops *const *pio_transport_list(void)
{
    return fz_list;
}

/* Load text (len bytes) over the defaults into c. Returns the parser's count
 * of problems, or -1. */
static int fz_load(const void *text, size_t len, struct piod_config *c)
{
    static int fd = -1;
    if (fd < 0 && (fd = memfd_create("fuzz_config", 0)) < 0)
        __builtin_trap();
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, len, 0) != (ssize_t)len)
        __builtin_trap();
    static char path[64]; /* c->config_path keeps pointing at it */
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    piod_config_defaults(c);
    return piod_config_load(c, path, NULL);
}

static char *fz_print(const struct piod_config *c, size_t *len)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    if (!f)
        __builtin_trap();
    piod_config_print(c, f);
    fclose(f);
    return text;
}

static void fz_lines(const uint8_t *data, size_t size)
{
    char line[512];
    size_t at = 0;
    while (at < size) {
        size_t n = 0;
        while (at < size && data[at] != '\n' && n < sizeof(line) - 1)
            line[n++] = (char)data[at++];
        line[n] = '\0';
        at++;
        long v;
        uint64_t b;
        if (pio_parse_int(line, -1000000, 1000000, &v) == 0 && (v < -1000000 || v > 1000000))
            __builtin_trap();
        (void)pio_parse_bytes(line, &b);
        (void)piod_parse_size(line, &b);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct piod_config a, b;
    fz_lines(data, size);
    if (fz_load(data, size, &a) != 0 || piod_config_validate(&a, NULL) != 0)
        return 0;
    size_t la, lb;
    char *ta = fz_print(&a, &la);
    if (fz_load(ta, la, &b) != 0 || piod_config_validate(&b, NULL) != 0)
        __builtin_trap(); /* a valid config printed does not load back */
    char *tb = fz_print(&b, &lb);
    if (la != lb || memcmp(ta, tb, la) != 0)
        __builtin_trap();
    piod_config_links(&b);
    free(ta);
    free(tb);
    return 0;
}
