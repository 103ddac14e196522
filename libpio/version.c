/* version.c - PIO_Get_version: the version of this libpio.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The string is made from the PIO_VERSION_* macros of pio.h, the one place
 * the version is written in C (libpio/module.mk's PIO_VERSION names the
 * shared library's files; tests/bats/cli.bats checks that both agree). A
 * file of its own, so that a program taking only this from libpio.a (such
 * as gas-stat) links nothing else of it. */
#include "pio.h"

#define PIO_STR_(x) #x
#define PIO_STR(x)  PIO_STR_(x)

const char *PIO_Get_version(void)
{
    return PIO_STR(PIO_VERSION_MAJOR) "." PIO_STR(PIO_VERSION_MINOR) "." PIO_STR(PIO_VERSION_PATCH);
}
