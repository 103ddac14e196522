/* pio_f_gen.c - writes the Fortran constants of module pio from pio.h (build-time tool).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The error codes and datatypes come from the X-lists in pio.h, and every
 * object-like PIO_ macro with a value from pio_macros.h, which the build
 * makes with the preprocessor (cc -dM): the Fortran PIO_ETIMEDOUT, PIO_REAL
 * or PIO_WAIT_FOREVER cannot drift from the C ones, and a new macro reaches
 * the module by itself. It also writes the sizes of the C structs that the
 * module mirrors with BIND(C) types; the module refuses to compile when one
 * differs.
 *
 * Usage: pio_f_gen > pio_constants.inc   (included inside module pio)
 */
#include "pio_f.h"

#include <stdio.h>

static void gen_int(const char *name, long value)
{
    printf("  integer(c_int), parameter, public :: %s = %ld\n", name, value);
}

static void gen_size(const char *name, size_t value)
{
    printf("  integer, parameter :: %s = %zu\n", name, value);
}

#define GEN_ERROR_(code, words)        gen_int(#code, code);
#define GEN_DATATYPE_(name, code, len) gen_int(#name, code);
#define GEN_MACRO_(name)               gen_int(#name, (long)(name));

int main(void)
{
    printf("  ! pio_constants.inc - generated from pio.h by bindings/fortran/pio_f_gen.c:\n"
           "  ! do not edit.\n\n  ! status codes (PIO_ERRORS)\n");
    PIO_ERRORS(GEN_ERROR_)
    printf("\n  ! datatypes (PIO_DATATYPES)\n");
    PIO_DATATYPES(GEN_DATATYPE_)
    printf("\n  ! every other numeric PIO_ macro: wildcards, connections, modes, limits\n");
#include "pio_macros.h"
    printf("\n  ! sizes of the C structs mirrored by BIND(C) types\n");
    gen_size("pio_c_sizeof_status", sizeof(PIO_Status));
    gen_size("pio_c_sizeof_request", sizeof(PIO_Request));
    gen_size("pio_c_sizeof_appinfo", sizeof(PIO_Appinfo));
    gen_size("pio_c_sizeof_hostinfo", sizeof(PIO_Hostinfo));
    gen_size("pio_c_sizeof_coninfo", sizeof(PIO_Coninfo));
    gen_size("pio_c_sizeof_dataset", sizeof(PIO_Dataset));
    gen_size("pio_c_coninfo_addr_len", sizeof(((PIO_Coninfo *)0)->local));
    gen_size("pio_c_sizeof_f_file", sizeof(struct pio_f_file));
    gen_size("pio_c_sizeof_grid", sizeof(PIO_Grid));
    gen_size("pio_c_sizeof_feedinfo", sizeof(PIO_Feedinfo));
    gen_size("pio_c_sizeof_f_feed", sizeof(struct pio_f_feed));
    gen_size("pio_c_sizeof_win", sizeof(PIO_Win));
    gen_size("pio_c_sizeof_rfile", sizeof(PIO_Rfile));
    return ferror(stdout) ? 1 : 0;
}
