/* gas_ior.c - an IOR-like MPI writer: each rank writes COUNT transfers of SIZE bytes, POSIX or
 * MPI-IO. SPDX-License-Identifier: BSD-3-Clause
 *
 * usage: mpirun -np P gas-ior --xfer SIZE --count N --out PATH
 *                [--layout shared|fpp] [--api posix|collective]
 *        gas-ior --xfer SIZE --count N --procs P [--layout shared|fpp] --verify FILE
 *
 * The pattern of IOR's POSIX backend with -b SIZE -t SIZE -s N (one
 * transfer per block, N segments): rank r's transfer i goes to
 *   shared (default): the file PATH at (i*P + r)*SIZE (the ranks' blocks
 *                     interleave: segment i holds every rank's block i);
 *   fpp:              its own file PATH.<r> at i*SIZE.
 * SIZE takes K, M (powers of 1024) and is a multiple of 8.
 *
 * The bytes: the file is a sequence of 8-byte little-endian words, the word
 * at "logical" byte offset o (a multiple of 8) being
 *   (o/8) * 0x9E3779B97F4A7C15 ^ 0x21534147524F4921,
 * where o is the file offset for shared, and for fpp the offset the same
 * byte would have in the shared file ((i*P + r)*SIZE + j for byte j of
 * transfer i of rank r). So the fpp files differ from each other, and each
 * byte can be checked: --verify reads FILE (shared) or FILE.0 .. FILE.<P-1>
 * (fpp) with open/pread/close and checks every byte and the size, without
 * MPI (it prints "verify ok", or the first difference and exits 1).
 *
 * --api posix (default): before the timed part, an old file is removed
 * (rank 0 for shared, every rank its own for fpp) and all ranks meet at a
 * barrier. Timed: MPI_Barrier, t0 = MPI_Wtime, open(O_CREAT|O_RDWR, 0644)
 * (shared: rank 0 opens first, the others after a barrier, as IOR creates
 * a shared file), per transfer one lseek + write (a short write continues),
 * close, MPI_Barrier, t1. No stdio, no mmap on the output file: it may be a
 * pgas: path under LD_PRELOAD=libpgas.so.
 * --api collective (shared only): rank 0 deletes an old file
 * (MPI_File_delete) before the timed part; timed: MPI_File_open of
 * MPI_COMM_WORLD with MPI_MODE_CREATE|MPI_MODE_RDWR and the hint
 * romio_cb_write=enable (the ranks' pieces of one call touch, and ROMIO's
 * "automatic" would write them independently), one MPI_File_write_at_all
 * per transfer at the offsets above, MPI_File_close. Run it with
 * `--mca io romio321` for ROMIO's two-phase collective buffering.
 *
 * seconds = t1 - t0, the largest over the ranks; rank 0 prints
 *   ior layout=L api=A xfer=SIZE count=N procs=P bytes=B seconds=T MiBps=R
 * Any error: the rank prints it and calls MPI_Abort.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define IOR_MUL        UINT64_C(0x9E3779B97F4A7C15)
#define IOR_XOR        UINT64_C(0x21534147524F4921)
#define IOR_VERIFY_BUF (1 << 20)
#define IOR_MAX_XFER   (1 << 30)

struct ior_opts {
    int64_t xfer;
    int64_t count;
    int procs; /* --procs (verify); the MPI size when writing */
    int fpp;
    int collective;
    const char *out;
    const char *verify;
};

static int ior_rank;

/* ior_word - the 8 bytes at logical offset lo (a multiple of 8), little-endian */
static void ior_word(uint64_t lo, unsigned char *p)
{
    const uint64_t v = (lo / 8) * IOR_MUL ^ IOR_XOR;
    for (int b = 0; b < 8; b++)
        p[b] = (unsigned char)(v >> (8 * b));
}

/* ior_logical - the logical offset of file offset off of rank r's file */
static uint64_t ior_logical(const struct ior_opts *o, int r, uint64_t off)
{
    if (!o->fpp)
        return off;
    const uint64_t x = (uint64_t)o->xfer;
    return ((off / x) * (uint64_t)o->procs + (uint64_t)r) * x + off % x;
}

/* ior_fill - buf = transfer i of rank r (xfer bytes) */
static void ior_fill(const struct ior_opts *o, int r, int64_t i, unsigned char *buf)
{
    const uint64_t lo = ((uint64_t)i * (uint64_t)o->procs + (uint64_t)r) * (uint64_t)o->xfer;
    for (int64_t j = 0; j < o->xfer; j += 8)
        ior_word(lo + (uint64_t)j, buf + j);
}

static void ior_usage(FILE *f)
{
    fprintf(f, "usage: mpirun -np P gas-ior --xfer SIZE --count N --out PATH\n"
               "                [--layout shared|fpp] [--api posix|collective]\n"
               "       gas-ior --xfer SIZE --count N --procs P [--layout shared|fpp] "
               "--verify FILE\n");
}

/* ior_size - SIZE (digits, optional K, M or G: powers of 1024); -1 if bad */
static int64_t ior_size(const char *s)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || v < 1 || errno != 0)
        return -1;
    int shift = 0;
    switch (*end) {
    case '\0': break;
    case 'k':
    case 'K': shift = 10; break;
    case 'm':
    case 'M': shift = 20; break;
    case 'g':
    case 'G': shift = 30; break;
    default: return -1;
    }
    if (*end != '\0' && end[1] != '\0')
        return -1;
    if (v > (INT64_MAX >> shift))
        return -1;
    return (int64_t)v << shift;
}

/* ior_parse - fill o from argv; 0, or -1 after a message (usage errors) */
static int ior_parse(int argc, char **argv, struct ior_opts *o)
{
    static const struct option longopts[] = {
        {"xfer", required_argument, NULL, 'x'},
        {"count", required_argument, NULL, 'n'},
        {"layout", required_argument, NULL, 'l'},
        {"api", required_argument, NULL, 'a'},
        {"out", required_argument, NULL, 'o'},
        {"verify", required_argument, NULL, 'v'},
        {"procs", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    int64_t v;

    memset(o, 0, sizeof(*o));
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'x': o->xfer = ior_size(optarg); break;
        case 'n': o->count = ior_size(optarg); break;
        case 'p':
            v = ior_size(optarg);
            o->procs = v > 0 && v <= 1000000 ? (int)v : -1;
            break;
        case 'l':
            if (strcmp(optarg, "shared") == 0)
                o->fpp = 0;
            else if (strcmp(optarg, "fpp") == 0)
                o->fpp = 1;
            else {
                fprintf(stderr, "gas-ior: bad --layout '%s'\n", optarg);
                return -1;
            }
            break;
        case 'a':
            if (strcmp(optarg, "posix") == 0)
                o->collective = 0;
            else if (strcmp(optarg, "collective") == 0)
                o->collective = 1;
            else {
                fprintf(stderr, "gas-ior: bad --api '%s'\n", optarg);
                return -1;
            }
            break;
        case 'o': o->out = optarg; break;
        case 'v': o->verify = optarg; break;
        case 'h': ior_usage(stdout); exit(0);
        default: ior_usage(stderr); return -1;
        }
    }
    if (optind != argc || o->xfer == 0 || o->count == 0 ||
        (o->out == NULL) == (o->verify == NULL) || (o->verify != NULL && o->procs == 0)) {
        ior_usage(stderr);
        return -1;
    }
    if (o->xfer < 0 || o->xfer % 8 != 0 || o->xfer > IOR_MAX_XFER) {
        fprintf(stderr, "gas-ior: --xfer must be a multiple of 8 bytes, at most 1G\n");
        return -1;
    }
    if (o->count < 0 || o->procs < 0) {
        fprintf(stderr, "gas-ior: bad --count or --procs\n");
        return -1;
    }
    if (o->fpp && o->collective) {
        fprintf(stderr, "gas-ior: --api collective writes a shared file only\n");
        return -1;
    }
    return 0;
}

/* ior_verify_file - check rank r's file path (r = 0 for shared); 0 if right */
static int ior_verify_file(const struct ior_opts *o, const char *path, int r, unsigned char *buf)
{
    const int64_t size = o->count * o->xfer * (o->fpp ? 1 : o->procs);
    unsigned char want[8];
    int64_t off = 0;
    int rc = 1;

    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        fprintf(stderr, "gas-ior: open %s: %s\n", path, strerror(errno));
        return 1;
    }
    for (;;) {
        ssize_t got = pread(fd, buf, IOR_VERIFY_BUF, off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            fprintf(stderr, "gas-ior: pread %s: %s\n", path, strerror(errno));
            goto out;
        }
        if (got == 0)
            break;
        for (ssize_t k = 0; k < got; k++) {
            const int64_t at = off + k;
            if (at >= size) {
                printf("verify: %s: longer than %" PRId64 " bytes\n", path, size);
                goto out;
            }
            if (k == 0 || at % 8 == 0)
                ior_word(ior_logical(o, r, (uint64_t)(at - at % 8)), want);
            if (buf[k] != want[at % 8]) {
                printf("verify: %s: first difference at offset %" PRId64 "\n", path, at);
                goto out;
            }
        }
        off += got;
    }
    if (off != size) {
        printf("verify: %s: %" PRId64 " bytes, not %" PRId64 "\n", path, off, size);
        goto out;
    }
    rc = 0;
out:
    close(fd);
    return rc;
}

static int ior_verify(const struct ior_opts *o)
{
    unsigned char *buf = malloc(IOR_VERIFY_BUF);
    int rc = 0;

    if (buf == NULL) {
        fprintf(stderr, "gas-ior: out of memory\n");
        return 1;
    }
    if (!o->fpp)
        rc = ior_verify_file(o, o->verify, 0, buf);
    for (int r = 0; o->fpp && r < o->procs && rc == 0; r++) {
        char path[4096];
        if (snprintf(path, sizeof(path), "%s.%d", o->verify, r) >= (int)sizeof(path)) {
            fprintf(stderr, "gas-ior: path too long\n");
            rc = 1;
            break;
        }
        rc = ior_verify_file(o, path, r, buf);
    }
    free(buf);
    if (rc == 0)
        printf("verify ok\n");
    return rc;
}

static void ior_die(const char *call, const char *path, int err)
{
    fprintf(stderr, "gas-ior: rank %d: %s %s: %s\n", ior_rank, call, path, strerror(err));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void ior_check(int err, const char *call)
{
    if (err == MPI_SUCCESS)
        return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(err, msg, &len);
    fprintf(stderr, "gas-ior: rank %d: %s: %.*s\n", ior_rank, call, len, msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* ior_posix - the timed POSIX part of this rank; returns its seconds */
static double ior_posix(const struct ior_opts *o, const char *path, unsigned char *buf)
{
    if ((o->fpp || ior_rank == 0) && unlink(path) != 0 && errno != ENOENT)
        ior_die("unlink", path, errno);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    int fd = -1;
    if (!o->fpp && ior_rank == 0)
        fd = open(path, O_CREAT | O_RDWR, 0644);
    if (!o->fpp)
        MPI_Barrier(MPI_COMM_WORLD); /* rank 0 has created the shared file */
    if (o->fpp || ior_rank != 0)
        fd = open(path, O_CREAT | O_RDWR, 0644);
    if (fd < 0)
        ior_die("open", path, errno);
    for (int64_t i = 0; i < o->count; i++) {
        const int64_t off = o->fpp ? i * o->xfer : (i * o->procs + ior_rank) * o->xfer;
        ior_fill(o, ior_rank, i, buf);
        if (lseek(fd, (off_t)off, SEEK_SET) == (off_t)-1)
            ior_die("lseek", path, errno);
        for (int64_t done = 0; done < o->xfer;) {
            ssize_t n = write(fd, buf + done, (size_t)(o->xfer - done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                ior_die("write", path, n < 0 ? errno : EIO);
            done += n;
        }
    }
    if (close(fd) != 0)
        ior_die("close", path, errno);
    MPI_Barrier(MPI_COMM_WORLD);
    return MPI_Wtime() - t0;
}

/* ior_mpiio - the timed MPI-IO collective part of this rank; returns its seconds */
static double ior_mpiio(const struct ior_opts *o, unsigned char *buf)
{
    MPI_Info info;
    MPI_File fh;

    MPI_Info_create(&info);
    MPI_Info_set(info, "romio_cb_write", "enable");
    if (ior_rank == 0)
        MPI_File_delete(o->out, MPI_INFO_NULL); /* a missing file is fine */
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    ior_check(MPI_File_open(MPI_COMM_WORLD, o->out, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh),
              "MPI_File_open");
    for (int64_t i = 0; i < o->count; i++) {
        ior_fill(o, ior_rank, i, buf);
        ior_check(MPI_File_write_at_all(fh, (MPI_Offset)((i * o->procs + ior_rank) * o->xfer), buf,
                                        (int)o->xfer, MPI_BYTE, MPI_STATUS_IGNORE),
                  "MPI_File_write_at_all");
    }
    ior_check(MPI_File_close(&fh), "MPI_File_close");
    MPI_Barrier(MPI_COMM_WORLD);
    const double t = MPI_Wtime() - t0;
    MPI_Info_free(&info);
    return t;
}

int main(int argc, char **argv)
{
    struct ior_opts o;
    char path[4096];

    if (ior_parse(argc, argv, &o) != 0)
        return 2;
    if (o.verify != NULL)
        return ior_verify(&o);

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &ior_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &o.procs);
    if (snprintf(path, sizeof(path), o.fpp ? "%s.%d" : "%s", o.out, ior_rank) >=
        (int)sizeof(path)) {
        fprintf(stderr, "gas-ior: path too long\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    unsigned char *buf = malloc((size_t)o.xfer);
    if (buf == NULL) {
        fprintf(stderr, "gas-ior: rank %d: out of memory\n", ior_rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double t = o.collective ? ior_mpiio(&o, buf) : ior_posix(&o, path, buf), longest = 0;
    MPI_Reduce(&t, &longest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (ior_rank == 0) {
        const int64_t bytes = o.xfer * o.count * o.procs;
        printf("ior layout=%s api=%s xfer=%" PRId64 " count=%" PRId64 " procs=%d bytes=%" PRId64
               " seconds=%.6f MiBps=%.2f\n",
               o.fpp ? "fpp" : "shared", o.collective ? "collective" : "posix", o.xfer, o.count,
               o.procs, bytes, longest, longest > 0 ? (double)bytes / 1048576.0 / longest : 0.0);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
