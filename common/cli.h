/* cli.h - what PIO's commands share on their command line: the --version
 * line (cli.c, in libpio.a) and JSON output through json-c (cli_json.c,
 * linked only into the commands that write JSON, with json-c).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Thread safety: every function here is thread-safe (each touches only its
 * arguments and the stream it writes). */
#ifndef PIO_CLI_H
#define PIO_CLI_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* pio_cli_version - print a command's version line to stdout, the one
 * format every PIO command uses for --version (as piod always did):
 *   "PROG VERSION (protocol N)", e.g. "pfs 0.1.0 (protocol 5)"
 * with VERSION from PIO_Get_version() and N the piod/libpio wire protocol
 * (PIO_WIRE_VERSION). prog [in]: the command's name, not kept.
 * Returns 0 (the exit status for --version), 1 when stdout fails. */
int pio_cli_version(const char *prog);

#ifdef __cplusplus
}
#endif
#endif
