/* config_int.h - what config.c (the parser) and config_check.c (the
 * whole-config checks, derived values) share. No state; every function is
 * thread-safe and documented where it is defined.
 * SPDX-License-Identifier: BSD-3-Clause */
#ifndef PIOD_CONFIG_INT_H
#define PIOD_CONFIG_INT_H

#include <stddef.h>
#include <stdint.h>

#define CFG_SIZE_HELP  "expected a number with an optional K, M or G suffix, e.g. 64M"
#define CFG_PORT_HELP  "expected a number from 1 to 65535"
#define CFG_ADDR_HELP  "expected a numeric IPv4 or IPv6 address, no host name"
#define CFG_NAME_HELP  "expected 1 to 63 characters from A-Z a-z 0-9 . _ -"
#define CFG_LEVEL_HELP "expected error, warn, info or debug"

int cfg_name_ok(const char *s);
int cfg_addr_parse(const char *s, unsigned char key[17]);
int cfg_addr_same(const char *a, const char *b);
void cfg_size_str(uint64_t v, char *buf, size_t len);
void cfg_transports(char *out, size_t n);

#endif
