/* fuzz_qos.c - libFuzzer target for pfs's service-class spec parser
 * (pfs_qos_parse, qos.h: "interactive:20,staging:80").
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Each line of the input is parsed as it is; the parser must never report
 * more classes than it was given room for, and a refusal must say why. A
 * broken property ends in __builtin_trap(). Built by `make fuzz`
 * (pfs/module.mk); it was part of piod's fuzz_config until piod stopped
 * building pfs sources.
 */
#include "qos.h"

#include <stdint.h>

#define FZ_QOS_MAX 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* qos.c's clock (pfs/srv.c), never reached by pfs_qos_parse */
int64_t pfs_now_ns(void)
{
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char line[512];
    size_t at = 0;
    while (at < size) {
        size_t n = 0;
        while (at < size && data[at] != '\n' && n < sizeof(line) - 1)
            line[n++] = (char)data[at++];
        line[n] = '\0';
        at++;
        struct pfs_qos_class_cfg cls[FZ_QOS_MAX];
        const char *err = NULL;
        int k = pfs_qos_parse(line, cls, FZ_QOS_MAX, &err);
        if (k > FZ_QOS_MAX || (k < 0 && err == NULL))
            __builtin_trap();
    }
    return 0;
}
