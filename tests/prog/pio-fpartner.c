/* pio-fpartner.c - the C application the Fortran binding's tests talk to.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Usage: pio-fpartner types | errors | reqs | strerror | consts
 *   types    application "cpartner": receives each array pio-ftypes sends
 *            (every Fortran type, 1-D, 2-D, 3-D and a large 3-D one) as the
 *            matching C datatype, checks every value against the same formula
 *            the Fortran side used (bit for bit, special values included),
 *            and sends back a transform of it (not, sign flip, conjugate,
 *            .not., next character) as the C type. Then one strided section.
 *   errors   application "cpartner": sends 10 doubles (tag 1) for
 *            pio-ferrors' truncation and type checks, then waits for its tag 2.
 *   reqs     application "cpartner", for pio-freqs: after its tag 1, sends 4
 *            INT32 1200.. on tag 12; then takes 4 INT32 3000.. on tag 30
 *            and sends 1100.. on tag 11 and 1300.. on tag 13; leaves after
 *            the Fortran side's tag 2.
 *   strerror every status code as "code|name|words" (compared with Fortran's).
 *   consts   "NAME VALUE" of every status code and datatype of pio.h.
 * Exit 0 and "OK ..." when everything matched, 1 and "FAIL ..." otherwise.
 * The formulas here and in tests/prog/pio-ftypes.f90 must stay the same.
 */
#include "pio.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TIMEOUT_MS 60000

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        printf("FAIL pio-fpartner: ");                                                             \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        fflush(stdout);                                                                            \
        exit(1);                                                                                   \
    } while (0)

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != PIO_OK)                                                                         \
            FAIL("%s -> %s (%s)", #call, PIO_Errname(rc_), PIO_Strerror(rc_));                     \
    } while (0)

/* ---- the values (same formulas as pio-ftypes.f90) ---------------------- */

/* The types in the order pio-ftypes sends them: the Fortran datatype it
 * sends with, the C one received and sent back, bytes per item, items per
 * Fortran element (CHARACTER(LEN=3) elements: 3 characters). */
static const struct ftype {
    const char *name;
    int ftype, ctype;
    size_t size;
    int per_elem;
} ftypes[] = {
    {"integer", PIO_INTEGER, PIO_INT32, 4, 1},
    {"real", PIO_REAL, PIO_FLOAT, 4, 1},
    {"double precision", PIO_DOUBLE_PRECISION, PIO_DOUBLE, 8, 1},
    {"complex", PIO_COMPLEX, PIO_COMPLEX, 8, 1},
    {"double complex", PIO_DOUBLE_COMPLEX, PIO_DOUBLE_COMPLEX, 16, 1},
    {"logical", PIO_LOGICAL, PIO_LOGICAL, 4, 1},
    {"character", PIO_CHARACTER, PIO_CHAR, 1, 3},
};
#define NTYPES 7

/* Sets: 1-D (1000), 2-D (7 x 13), 3-D (5 x 4 x 3), large 3-D (40 x 40 x 40). */
static const size_t set_elems[] = {0, 1000, 7 * 13, 5 * 4 * 3, 40 * 40 * 40};
#define NSETS 4

static uint32_t h(uint64_t k, int s)
{
    return (uint32_t)(k * 2654435761u + (uint64_t)s * 40503u);
}

/* The first six reals are special values, as bit patterns: huge, tiny,
 * -0.0, the smallest denormal, +Inf, a quiet NaN with a payload. */
static const uint32_t special32[6] = {0x7F7FFFFFu, 0x00800000u, 0x80000000u,
                                      0x00000001u, 0x7F800000u, 0x7FC00001u};
static const uint64_t special64[6] = {0x7FEFFFFFFFFFFFFFull, 0x0010000000000000ull,
                                      0x8000000000000000ull, 0x0000000000000001ull,
                                      0x7FF0000000000000ull, 0x7FF8000000000001ull};

static float gen_float(uint64_t k, int s)
{
    float f;
    if (k < 6) {
        memcpy(&f, &special32[k], 4);
        return f;
    }
    return (float)((int)(h(k, s) % 2001u) - 1000) / 7.0f;
}

static double gen_double(uint64_t k, int s)
{
    double d;
    if (k < 6) {
        memcpy(&d, &special64[k], 8);
        return d;
    }
    return (double)((int64_t)(h(k, s) % 2000001u) - 1000000) / 7.0;
}

/* item k of type t in set s, as the Fortran side lays it out in memory */
static void gen(int t, uint64_t k, int s, unsigned char *out)
{
    switch (t) {
    case 0: {
        int32_t v = (int32_t)h(k, s);
        memcpy(out, &v, 4);
        break;
    }
    case 1: {
        float v = gen_float(k, s);
        memcpy(out, &v, 4);
        break;
    }
    case 2: {
        double v = gen_double(k, s);
        memcpy(out, &v, 8);
        break;
    }
    case 3: {
        float v[2] = {(float)((int)(h(k, s) % 2001u) - 1000) / 7.0f,
                      (float)(int)(h(k, s) % 997u + 1) / 3.0f};
        memcpy(out, v, 8);
        break;
    }
    case 4: {
        double v[2] = {(double)((int64_t)(h(k, s) % 2000001u) - 1000000) / 7.0,
                       (double)(int64_t)(h(k, s) % 99991u + 1) / 3.0};
        memcpy(out, v, 16);
        break;
    }
    case 5: {
        int32_t v = (int32_t)((h(k, s) >> 7) & 1u);
        memcpy(out, &v, 4);
        break;
    }
    default: out[0] = (unsigned char)(32 + h(k, s) % 95u); break;
    }
}

/* what the partner sends back for an item: each type's own transform */
static void transform(int t, unsigned char *p)
{
    switch (t) {
    case 0:
        for (int i = 0; i < 4; i++) /* NOT */
            p[i] = (unsigned char)~p[i];
        break;
    case 1: p[3] ^= 0x80; break;  /* sign of the float */
    case 2: p[7] ^= 0x80; break;  /* sign of the double */
    case 3: p[7] ^= 0x80; break;  /* conjugate: sign of the imaginary part */
    case 4: p[15] ^= 0x80; break; /* conjugate */
    case 5: p[0] ^= 1; break;     /* .NOT. (0 <-> 1) */
    default: p[0] = (unsigned char)(32 + (p[0] - 32 + 1) % 95); /* next printable character */
    }
}

static void run_types(void)
{
    int partner, msgs = 0;
    CHECK(PIO_Init("cpartner", 0, 1));
    CHECK(PIO_Setpartner("fortran", &partner));
    for (int t = 0; t < NTYPES; t++) {
        const struct ftype *ft = &ftypes[t];
        for (int s = 1; s <= NSETS; s++) {
            size_t n = set_elems[s] * (size_t)ft->per_elem, bytes = n * ft->size;
            int tag = 100 * (t + 1) + s;
            unsigned char *buf = calloc(n + 1, ft->size), want[16];
            if (!buf)
                FAIL("out of memory");
            PIO_Status st;
            /* one more item of room than sent: the status must say n */
            CHECK(PIO_Recv(partner, 0, tag, buf, ft->ctype, n + 1, TIMEOUT_MS, PIO_BLOCKING, &st));
            if (st.datatype != ft->ftype || st.count != n || st.bytes != bytes || st.tag != tag)
                FAIL("%s set %d: status datatype %d count %zu bytes %zu tag %d, want %d %zu %zu %d",
                     ft->name, s, st.datatype, st.count, st.bytes, st.tag, ft->ftype, n, bytes,
                     tag);
            for (size_t k = 0; k < n; k++) {
                gen(t, k, s, want);
                if (memcmp(buf + k * ft->size, want, ft->size) != 0)
                    FAIL("%s set %d: item %zu of %zu differs from the formula", ft->name, s, k, n);
                transform(t, buf + k * ft->size);
            }
            CHECK(PIO_Send(partner, 0, tag, PIO_DYNAMIC, buf, ft->ctype, n, PIO_BLOCKING));
            free(buf);
            msgs++;
        }
    }
    /* a strided section a(2, :) of a 6 x 5 DOUBLE PRECISION a(i, j) = 10 i + j;
     * back: the same values doubled */
    double sec[5];
    PIO_Status st;
    CHECK(PIO_Recv(partner, 0, 900, sec, PIO_DOUBLE, 5, TIMEOUT_MS, PIO_BLOCKING, &st));
    for (int j = 0; j < 5; j++) {
        if (sec[j] != 20.0 + (j + 1))
            FAIL("section: element %d is %g, want %g", j + 1, sec[j], 20.0 + (j + 1));
        sec[j] *= 2;
    }
    CHECK(PIO_Send(partner, 0, 900, PIO_DYNAMIC, sec, PIO_DOUBLE, 5, PIO_BLOCKING));
    msgs++;
    /* wait for the Fortran side's last word before leaving */
    int done = 0;
    CHECK(PIO_Recv(partner, 0, 999, &done, PIO_INT32, 1, TIMEOUT_MS, PIO_BLOCKING, NULL));
    CHECK(PIO_Exit());
    printf("OK pio-fpartner types: %d messages checked and answered\n", msgs);
}

static void run_errors(void)
{
    int partner, done = 0;
    double d[10];
    for (int i = 0; i < 10; i++)
        d[i] = i + 1;
    CHECK(PIO_Init("cpartner", 0, 1));
    CHECK(PIO_Setpartner("fortran", &partner));
    CHECK(PIO_Send(partner, 0, 1, PIO_DYNAMIC, d, PIO_DOUBLE, 10, PIO_BLOCKING));
    CHECK(PIO_Recv(partner, 0, 2, &done, PIO_INT32, 1, TIMEOUT_MS, PIO_BLOCKING, NULL));
    if (done != 1)
        FAIL("errors: the last word was %d, want 1", done);
    CHECK(PIO_Exit());
    printf("OK pio-fpartner errors\n");
}

static void run_reqs(void)
{
    int partner;
    int32_t v[4];
    char go[4];
    CHECK(PIO_Init("cpartner", 0, 1));
    CHECK(PIO_Setpartner("fortran", &partner));
    CHECK(PIO_Recv(partner, 0, 1, go, PIO_CHAR, sizeof(go), TIMEOUT_MS, PIO_BLOCKING, NULL));
    for (int i = 0; i < 4; i++)
        v[i] = 1200 + i;
    CHECK(PIO_Send(partner, 0, 12, PIO_DYNAMIC, v, PIO_INT32, 4, PIO_BLOCKING));
    CHECK(PIO_Recv(partner, 0, 30, v, PIO_INT32, 4, TIMEOUT_MS, PIO_BLOCKING, NULL));
    for (int i = 0; i < 4; i++)
        if (v[i] != 3000 + i)
            FAIL("reqs: tag 30 element %d is %d, want %d", i, (int)v[i], 3000 + i);
    for (int i = 0; i < 4; i++)
        v[i] = 1100 + i;
    CHECK(PIO_Send(partner, 0, 11, PIO_DYNAMIC, v, PIO_INT32, 4, PIO_BLOCKING));
    for (int i = 0; i < 4; i++)
        v[i] = 1300 + i;
    CHECK(PIO_Send(partner, 0, 13, PIO_DYNAMIC, v, PIO_INT32, 4, PIO_BLOCKING));
    CHECK(PIO_Recv(partner, 0, 2, go, PIO_CHAR, sizeof(go), TIMEOUT_MS, PIO_BLOCKING, NULL));
    CHECK(PIO_Exit());
    printf("OK pio-fpartner reqs\n");
}

#define PRINT_ERROR_(code, words)        printf("%s %d\n", #code, code);
#define PRINT_DATATYPE_(name, code, len) printf("%s %d\n", #name, code);

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "types") == 0) {
        run_types();
    } else if (strcmp(mode, "errors") == 0) {
        run_errors();
    } else if (strcmp(mode, "reqs") == 0) {
        run_reqs();
    } else if (strcmp(mode, "strerror") == 0) {
        for (int i = -1; i <= PIO_ERROR_COUNT_; i++)
            printf("%d|%s|%s\n", i, PIO_Errname(i), PIO_Strerror(i));
    } else if (strcmp(mode, "consts") == 0) {
        PIO_ERRORS(PRINT_ERROR_)
        PIO_DATATYPES(PRINT_DATATYPE_)
    } else {
        fprintf(stderr, "usage: pio-fpartner types|errors|reqs|strerror|consts\n");
        return 2;
    }
    return 0;
}
