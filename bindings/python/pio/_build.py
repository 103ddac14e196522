# _build.py - the cffi builder of pio._pio: the declarations of pio.h the
# Python package uses, compiled against the real header (API mode), so the
# C compiler checks every declaration here against libpio's.
# SPDX-License-Identifier: BSD-3-Clause
#
# Where libpio is (the first that is set or found):
#   PIO_INCLUDE_DIR / PIO_LIB_DIR   the folders of pio.h and libpio.so
#   PIO_BUILD                       an in-tree build folder (build/default):
#                                   pio.h from the source's libpio/ (PIO_SRC,
#                                   else the tree this file is in), the
#                                   library from PIO_BUILD/lib, run path set
#   pkg-config pio                  an installed libpio (make install)
#   ../../build/default             the in-tree build beside this package
import os
import shutil
import subprocess

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, "..", "..", ".."))

CDEF = r"""
typedef struct pio_request *PIO_Request;
typedef struct pio_rfile *PIO_Rfile;
typedef struct pio_file *PIO_File;
typedef struct pio_feed *PIO_Feed;

#define PIO_VERSION_MAJOR ...
#define PIO_VERSION_MINOR ...
#define PIO_VERSION_PATCH ...
#define PIO_ANY_PROCESS ...
#define PIO_ANY_TAG ...
#define PIO_ANY_PARTNER ...
#define PIO_SELF ...
#define PIO_TAG_RESERVED ...
#define PIO_STATIC ...
#define PIO_DYNAMIC ...
#define PIO_BLOCKING ...
#define PIO_SYNC ...
#define PIO_WAIT_FOREVER ...
#define PIO_NAME_MAX ...
#define PIO_FILE_RAW ...
#define PIO_RFILE_NORMAL ...
#define PIO_RFILE_RANDOM ...
#define PIO_FEED_FIELDS_MAX ...
#define PIO_UNDEFINED ...

enum pio_datatype { PIO_BYTE, PIO_CHAR, PIO_INT8, PIO_UINT8, PIO_INT16, PIO_UINT16, PIO_INT32,
                    PIO_UINT32, PIO_INT64, PIO_UINT64, PIO_FLOAT, PIO_DOUBLE, ... };
typedef enum pio_status { PIO_OK, PIO_ETIMEDOUT, PIO_ERROR_COUNT_, ... } pio_status;

typedef struct PIO_Status {
    int partner; int source; int tag; int datatype; size_t count; size_t bytes; int error;
    unsigned int uid, gid;
    char system[]; char app[]; char user[];
    ...;
} PIO_Status;
typedef struct PIO_Appinfo {
    char name[]; char system[]; int nprocs; int joined; int process_ID; ...;
} PIO_Appinfo;
typedef struct PIO_Hostinfo {
    char host[]; char system[]; int version; size_t pool_size; size_t eager_limit;
    size_t chunk_size; ...;
} PIO_Hostinfo;
typedef struct PIO_Coninfo {
    int index; int up; char local[]; char remote[]; uint64_t tx_bytes, rx_bytes;
    uint64_t queued; uint64_t rate; uint64_t tx_chunks; uint64_t rx_chunks; uint64_t resent;
    unsigned downs; ...;
} PIO_Coninfo;
typedef struct PIO_Grid { uint64_t dims[3]; double origin[3], spacing[3]; } PIO_Grid;
typedef struct PIO_Feedinfo {
    uint64_t steps_sent; uint64_t steps_skipped; uint64_t steps_acked; uint64_t bytes_sent;
    int receiver_present; int lossless; int window; double wait_seconds; uint64_t plans_missed;
    ...;
} PIO_Feedinfo;
typedef struct PIO_Rfile_range { void *buf; size_t count; uint64_t offset; size_t got; ...; }
    PIO_Rfile_range;

const char *PIO_Strerror(int status);
const char *PIO_Errname(int status);
const char *PIO_Get_version(void);
int PIO_Init(const char *app_name, int process_ID, int nprocs);
int PIO_Exit(void);
int PIO_Setpartner(const char *name, int *partner);
int PIO_Addpartner(const char *name, int *partner);
int PIO_Send(int partner, int process_ID, int tag, int connection, const void *addr, int datatype,
             size_t count, int mode);
int PIO_Recv(int partner, int process_ID, int tag, void *addr, int datatype, size_t count,
             int timeout, int mode, PIO_Status *status);
int PIO_Isend(int partner, int process_ID, int tag, int connection, const void *addr, int datatype,
              size_t count, int mode, PIO_Request *req);
int PIO_Irecv(int partner, int process_ID, int tag, void *addr, int datatype, size_t count,
              int mode, PIO_Request *req);
int PIO_Wait(PIO_Request *req, int timeout, PIO_Status *status);
int PIO_Test(PIO_Request *req, int *done, PIO_Status *status);
int PIO_Waitany(int count, PIO_Request reqs[], int *index, int timeout, PIO_Status *status);
int PIO_Waitall(int count, PIO_Request reqs[], int timeout, PIO_Status statuses[]);
int PIO_Testany(int count, PIO_Request reqs[], int *index, int *done, PIO_Status *status);
int PIO_Getfd(int *fd);
int PIO_Getappinfo(int partner, PIO_Appinfo *info);
int PIO_Gethostinfo(PIO_Hostinfo *info);
int PIO_Getconinfo(int partner, PIO_Coninfo *info, int max, int *n);
int PIO_Rfile_open(const char *host, const char *path, PIO_Rfile *rf, uint64_t *size);
int PIO_Rfile_pread(PIO_Rfile rf, void *buf, size_t count, uint64_t offset, size_t *got);
int PIO_Rfile_readlist(PIO_Rfile rf, PIO_Rfile_range *list, int n);
int PIO_Rfile_advise(PIO_Rfile rf, int advice);
int PIO_Rfile_close(PIO_Rfile rf);
int PIO_File_open(const char *host, const char *path, int mode, PIO_File *fh);
int PIO_File_write_at(PIO_File fh, uint64_t offset, const void *buf, size_t len);
int PIO_File_close(PIO_File fh);
const char *PIO_File_error_text(void);
int PIO_Feed_open(const char *receiver, const PIO_Grid *grid, int nfields, const char *const *names,
                  const int *types, PIO_Feed *feed);
int PIO_Feed_begin_step(PIO_Feed feed, uint64_t step, double time);
int PIO_Feed_sending(PIO_Feed feed);
int PIO_Feed_put(PIO_Feed feed, int fidx, const uint64_t start[3], const uint64_t count[3],
                 const void *data);
int PIO_Feed_end_step(PIO_Feed feed);
int PIO_Feed_info(PIO_Feed feed, PIO_Feedinfo *info);
int PIO_Feed_close(PIO_Feed feed);
"""


def _pkgconfig():
    if not shutil.which("pkg-config"):
        return None
    try:
        inc = subprocess.run(["pkg-config", "--variable=includedir", "pio"], check=True,
                             capture_output=True, text=True).stdout.strip()
        lib = subprocess.run(["pkg-config", "--variable=libdir", "pio"], check=True,
                             capture_output=True, text=True).stdout.strip()
    except subprocess.CalledProcessError:
        return None
    return inc, lib, False


def where():
    """(include folder, library folder, set a run path?)"""
    if os.environ.get("PIO_INCLUDE_DIR") and os.environ.get("PIO_LIB_DIR"):
        return os.environ["PIO_INCLUDE_DIR"], os.environ["PIO_LIB_DIR"], True
    build = os.environ.get("PIO_BUILD")
    if build:
        src = os.environ.get("PIO_SRC", SRC)
        return os.path.join(src, "libpio"), os.path.join(os.path.abspath(build), "lib"), True
    found = _pkgconfig()
    if found:
        return found
    build = os.path.join(SRC, "build", "default")
    if os.path.exists(os.path.join(build, "lib", "libpio.so")):
        return os.path.join(SRC, "libpio"), os.path.join(build, "lib"), True
    raise SystemExit("pio: cannot find libpio: build it (make) or install it (make install), "
                     "or set PIO_BUILD to a build folder, or PIO_INCLUDE_DIR and PIO_LIB_DIR")


inc, libdir, rpath = where()
ffibuilder = FFI()
ffibuilder.cdef(CDEF)
# PIO_RPATH: the run path to record instead (make install: where libpio
# will be, while it links the one of the build)
runpath = [os.environ["PIO_RPATH"]] if os.environ.get("PIO_RPATH") else [libdir] if rpath else []
ffibuilder.set_source("pio._pio", "#include <pio.h>\n", include_dirs=[inc], library_dirs=[libdir],
                      libraries=["pio"], runtime_library_dirs=runpath,
                      extra_compile_args=["-std=c11"])

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
