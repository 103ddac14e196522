/* cli.c - the --version line every PIO command prints (cli.h).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * In libpio.a (hidden in libpio.so), so that every command linking libpio
 * prints the same line from one piece of code. */
#include "cli.h"

#include "pio.h"
#include "wire/wire.h"

int pio_cli_version(const char *prog)
{
    printf("%s %s (protocol %d)\n", prog, PIO_Get_version(), PIO_WIRE_VERSION);
    return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}
