/* pio.h - the public interface of PIO, parallel data transfer over a bundle of links.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * This is the only header PIO installs. Every call returns a status code from
 * the one error list below; PIO_Strerror() turns it into words.
 *
 * Thread safety: every function in this header is thread-safe unless its
 * comment says otherwise.
 */
#ifndef PIO_H
#define PIO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
/* libpio is built with hidden visibility: what this header declares is
 * what libpio.so exports (libpio/libpio.map), and nothing else. */
#if defined(__GNUC__) && __GNUC__ >= 4
#pragma GCC visibility push(default)
#endif

#define PIO_VERSION_MAJOR 0
#define PIO_VERSION_MINOR 1
#define PIO_VERSION_PATCH 0

/* PIO_Get_version - the version of the libpio a program runs with, as
 * "MAJOR.MINOR.PATCH" (e.g. "0.1.0"; the PIO_VERSION_* macros above give the
 * version of the pio.h it was compiled against, which may differ with a
 * shared libpio). Every PIO command prints it with --version.
 * Returns a static string, never NULL; the caller must not free it.
 * Thread-safe; needs no PIO_Init. */
const char *PIO_Get_version(void);

/* The one error list: each code with the words PIO_Strerror returns.
 * Codes are numbered in list order from PIO_OK = 0; new codes go at the end
 * so that numbers stay stable (the Fortran binding and the wire use them). */
#define PIO_ERRORS(X)                                                                              \
    X(PIO_OK, "success")                                                                           \
    X(PIO_EINVAL, "invalid argument")                                                              \
    X(PIO_ENOMEM, "out of memory")                                                                 \
    X(PIO_ENOPIOD, "no piod is running here: start piod or set PIO_SOCKET to its control socket")  \
    X(PIO_EPARTNER, "unknown partner application: check the name given to PIO_Setpartner")         \
    X(PIO_EGONE, "the partner application or process has gone away")                               \
    X(PIO_ETIMEDOUT, "timed out")                                                                  \
    X(PIO_EPOOL, "buffer pool exhausted: raise the piod pool size or send smaller messages")       \
    X(PIO_EREFUSED, "refused by the peer piod (not authorized, or unknown to it)")                 \
    X(PIO_ETYPE, "datatype does not match the message: receive it with the sender's type")         \
    X(PIO_ETRUNC, "receive buffer too small for the message: the message is kept, retry larger")   \
    X(PIO_EPROTO, "protocol error: malformed frame")                                               \
    X(PIO_EVERSION, "protocol version mismatch between peers")                                     \
    X(PIO_EAUTH, "authentication failed")                                                          \
    X(PIO_EIO, "input/output error")                                                               \
    X(PIO_ECLOSED, "connection closed")                                                            \
    X(PIO_ENOTINIT, "PIO is not initialized: call PIO_Init first")                                 \
    X(PIO_EINITED, "PIO is already initialized in this process")                                   \
    X(PIO_ELINK, "no usable link: every channel to the peer is down")                              \
    X(PIO_ENOSYS, "operation not supported")                                                       \
    X(PIO_EEXIST, "already exists")                                                                \
    X(PIO_ENOENT, "no such file, object or name")                                                  \
    X(PIO_EBUSY, "resource busy")                                                                  \
    X(PIO_EAGAIN, "try again: not ready yet")                                                      \
    X(PIO_ECONFIG, "invalid configuration")                                                        \
    X(PIO_ECANCELED, "operation canceled")                                                         \
    X(PIO_EPERM, "permission denied")                                                              \
    X(PIO_EADDR, "address problem: cannot bind, resolve or reach an address")                      \
    X(PIO_EINTERNAL, "internal error (a bug in PIO: please report it)")                            \
    X(PIO_ECHANNEL, "the channel named with PIO_USER(i) does not exist or is down: name another "  \
                    "one, or use PIO_DYNAMIC")                                                     \
    X(PIO_EWINFREED, "the window was freed while the operation was in flight, or before it")       \
    X(PIO_ENOWIN, "no such window: that process has not created it (PIO_Win_create)")              \
    X(PIO_ENOTDIR, "not a directory")                                                              \
    X(PIO_EISDIR, "is a directory")                                                                \
    X(PIO_ENOTEMPTY, "directory not empty")                                                        \
    X(PIO_ENOSPC, "no space left on the storage")                                                  \
    X(PIO_EACCES, "access denied: the application name (or object) belongs to another user")

#define PIO_ERROR_ENUM_(code, words) code,
typedef enum pio_status { PIO_ERRORS(PIO_ERROR_ENUM_) PIO_ERROR_COUNT_ } pio_status;
#undef PIO_ERROR_ENUM_

/* PIO_Strerror - words for a status code.
 * status [in]: any int; codes outside the list give "unknown PIO error".
 * Returns a static string, never NULL; the caller must not free it. */
const char *PIO_Strerror(int status);

/* PIO_Errname - the code's name, e.g. "PIO_ETIMEDOUT" (static, never NULL). */
const char *PIO_Errname(int status);

/* ---- Datatypes -------------------------------------------------------------
 * X(name, code, bytes). The wire carries the code and the sender's byte order;
 * the receiver converts. Fortran types are those of gfortran's defaults. */
#define PIO_DATATYPES(X)                                                                           \
    X(PIO_BYTE, 1, 1) /* raw bytes: never converted, receives anything */                          \
    X(PIO_CHAR, 2, 1)                                                                              \
    X(PIO_INT8, 3, 1)                                                                              \
    X(PIO_UINT8, 4, 1)                                                                             \
    X(PIO_INT16, 5, 2)                                                                             \
    X(PIO_UINT16, 6, 2)                                                                            \
    X(PIO_INT32, 7, 4)                                                                             \
    X(PIO_UINT32, 8, 4)                                                                            \
    X(PIO_INT64, 9, 8)                                                                             \
    X(PIO_UINT64, 10, 8)                                                                           \
    X(PIO_FLOAT, 11, 4)                                                                            \
    X(PIO_DOUBLE, 12, 8)                                                                           \
    X(PIO_INTEGER, 13, 4)          /* Fortran INTEGER */                                           \
    X(PIO_REAL, 14, 4)             /* Fortran REAL */                                              \
    X(PIO_DOUBLE_PRECISION, 15, 8) /* Fortran DOUBLE PRECISION */                                  \
    X(PIO_COMPLEX, 16, 8)          /* Fortran COMPLEX: two REALs */                                \
    X(PIO_DOUBLE_COMPLEX, 17, 16)  /* Fortran DOUBLE COMPLEX */                                    \
    X(PIO_LOGICAL, 18, 4)          /* Fortran LOGICAL */                                           \
    X(PIO_CHARACTER, 19, 1)        /* Fortran CHARACTER */

#define PIO_DATATYPE_ENUM_(name, code, bytes) name = code,
enum pio_datatype { PIO_DATATYPES(PIO_DATATYPE_ENUM_) };
#undef PIO_DATATYPE_ENUM_

/* ---- Wildcards, connections, modes ----------------------------------------- */
#define PIO_ANY_PROCESS (-1) /* PIO_Recv: from any process of the partner */
#define PIO_ANY_TAG     (-1) /* PIO_Recv: any tag */
#define PIO_ANY_PARTNER (-1) /* PIO_Recv: from any partner application */
#define PIO_SELF        (-2) /* PIO_Getappinfo: this application */
/* Tags from PIO_TAG_RESERVED up carry libpio's own messages (windows,
 * remote files): applications must not send them, and PIO_ANY_TAG never
 * matches them. */
#define PIO_TAG_RESERVED 0x70000000

/* connection argument of PIO_Send (load balancing over the bundle). */
#define PIO_USER(i) (i)  /* the caller names channel i (0 <= i < channels) */
#define PIO_STATIC  (-1) /* fixed map from (source, destination) process to a channel */
#define PIO_DYNAMIC (-2) /* per chunk, the channel whose queue drains first */

/* mode argument. */
#define PIO_BLOCKING 0 /* send returns when addr may be reused (data in piod's pool) */
#define PIO_SYNC     1 /* send returns when the receiving process has the data */

#define PIO_WAIT_FOREVER (-1) /* timeout argument: no limit */

#define PIO_NAME_MAX 64 /* names, with their NUL */

/* What a completed receive (or send) reports. */
typedef struct PIO_Status {
    int partner;  /* partner handle of the source (receives) */
    int source;   /* process_ID of the sender */
    int tag;      /* tag it was sent with */
    int datatype; /* datatype it was sent as */
    size_t count; /* elements received */
    size_t bytes; /* bytes received */
    int error;    /* PIO_OK or the request's error */
    /* Who sent it (receives): the sending process' uid and gid, stamped by
     * the piod it sent through from what the kernel says of its socket
     * (SO_PEERCRED), never from what the process says, and the system
     * whose piod stamped them (an admitted peer system stamps its own
     * users, as an NFS client host does). */
    unsigned int uid, gid;
    char system[PIO_NAME_MAX];
    char app[PIO_NAME_MAX];  /* the sending application, as its piod knows it */
    char user[PIO_NAME_MAX]; /* uid's user name on the system that stamped it ("": none) */
} PIO_Status;

typedef struct pio_request *PIO_Request; /* a non-blocking operation */

typedef struct PIO_Appinfo {
    char name[PIO_NAME_MAX];
    char system[PIO_NAME_MAX]; /* where it runs */
    int nprocs;                /* processes in the application */
    int joined;                /* processes currently joined */
    int process_ID;            /* for PIO_SELF: this process; else -1 */
} PIO_Appinfo;

typedef struct PIO_Hostinfo {
    char host[PIO_NAME_MAX];
    char system[PIO_NAME_MAX];
    int version;        /* piod's protocol version */
    size_t pool_size;   /* this process' shared-memory pool, bytes */
    size_t eager_limit; /* bytes: at or below, data rides with the request */
    size_t chunk_size;  /* bytes: the largest chunk large messages are cut into */
} PIO_Hostinfo;

typedef struct PIO_Coninfo {
    int index;                   /* channel index (PIO_USER(index)) */
    int up;                      /* 1 if the channel carries data now */
    char local[64], remote[64];  /* addresses "a.b.c.d:port" */
    uint64_t tx_bytes, rx_bytes; /* data bytes carried so far */
    uint64_t queued;             /* bytes queued or in flight */
    uint64_t rate;               /* recent throughput, bytes/s */
    uint64_t tx_chunks;          /* data chunks sent on it */
    uint64_t rx_chunks;          /* data chunks received on it */
    uint64_t resent;             /* chunks sent on it again after another channel failed */
    unsigned downs;              /* times it went down after being up */
} PIO_Coninfo;

/* PIO_Init - join this process to its local piod.
 * app_name [in]: this application's name (NULL: $PIO_APP); copied.
 * process_ID [in]: this process' number, 0..nprocs-1; < 0: from the
 *   environment (below).
 * nprocs [in]: processes in the application; <= 0: from the environment.
 * How arguments and environment combine: an argument given (process_ID >= 0,
 *   nprocs > 0) always wins. Each one not given is taken, on its own, from
 *   the first variable of its column that is set:
 *       rank                  size
 *       PIO_PROCESS           PIO_NPROCS            (the user's word)
 *       OMPI_COMM_WORLD_RANK  OMPI_COMM_WORLD_SIZE  (Open MPI's mpirun)
 *       PMIX_RANK             PMIX_SIZE             (PMIx: srun --mpi=pmix, prterun)
 *       SLURM_PROCID          SLURM_NTASKS          (srun; only in a job step,
 *                                                    SLURM_STEP_ID set)
 *       PMI_RANK              PMI_SIZE              (PMI-1/2: MPICH's hydra)
 *   else 0 and 1. A variable that is set but not a whole number in range
 *   gives PIO_EINVAL (never a silent rank 0). MPI programs should pass the
 *   rank and size they know, or call PIO_Init_comm (pio_mpi.h).
 * The piod is found through $PIO_SOCKET, else /run/pio/piod.sock.
 * Returns PIO_OK; PIO_EINITED if already joined; PIO_ENOPIOD if no piod
 * answers; PIO_EINVAL for bad arguments or launcher variables
 * (process_ID >= nprocs too); PIO_EEXIST if that process_ID of
 * that application is already joined; PIO_EACCES if processes of another
 * user (uid) are joined under app_name on this host: the uid of the first
 * process to join owns the name while any of its processes is joined.
 * $PIO_SENDERS=owner: this process takes messages only from senders of its
 * own uid (the piod refuses the others; a sender waiting on the outcome
 * gets PIO_EACCES); any (the default): from every process that may reach
 * it; another value gives PIO_EINVAL.
 * Call once per process. Thread-safe, but must not race PIO_Exit. */
int PIO_Init(const char *app_name, int process_ID, int nprocs);

/* PIO_Exit - leave: waits for this process' outstanding sends to reach the
 * piod's pool, then releases the pool. Requests not completed fail with
 * PIO_ECANCELED. Returns PIO_OK or PIO_ENOTINIT. */
int PIO_Exit(void);

/* PIO_Setpartner / PIO_Addpartner - name the application(s) to talk to.
 * name [in]: application name, copied. partner [out]: handle for the other
 * calls. Setpartner forgets earlier partners first; Addpartner adds one
 * (three or more applications). Waits up to $PIO_PARTNER_TIMEOUT seconds
 * (default 30) for the application to appear anywhere in the bundle.
 * At most 64 partners; when the table is full, the slot of an application
 * whose processes have all left and that no message or receive refers to is
 * reused (its old handle then names the new partner).
 * Returns PIO_OK, PIO_EPARTNER (unknown after the wait), PIO_ENOTINIT,
 * PIO_EINVAL, PIO_ENOMEM (64 partners, none reusable). */
int PIO_Setpartner(const char *name, int *partner);
int PIO_Addpartner(const char *name, int *partner);

/* PIO_Send - send count items of datatype at addr to process process_ID of
 * partner with tag (>= 0).
 * connection [in]: PIO_USER(i), PIO_STATIC or PIO_DYNAMIC.
 * addr [in]: caller's memory, read and never kept; reusable on return.
 * mode [in]: PIO_BLOCKING (returns when the data is in the piod's pool) or
 *   PIO_SYNC (returns when the receiving process has it).
 * Returns PIO_OK; PIO_EINVAL (bad tag, type, channel, NULL addr with
 * count > 0), PIO_EPARTNER (bad handle), PIO_EGONE (destination process
 * left), PIO_ENOTINIT, PIO_ECLOSED (piod went away). */
int PIO_Send(int partner, int process_ID, int tag, int connection, const void *addr, int datatype,
             size_t count, int mode);

/* PIO_Recv - receive into addr up to count items of datatype from process
 * process_ID (or PIO_ANY_PROCESS) of partner (or PIO_ANY_PARTNER) with tag
 * (or PIO_ANY_TAG). Messages between two processes with one tag arrive in
 * send order.
 * timeout [in]: milliseconds, PIO_WAIT_FOREVER for none.
 * status [out, may be NULL]: source, tag, count actually received.
 * Returns PIO_OK; PIO_ETIMEDOUT; PIO_ETYPE (the message was sent as another
 * datatype) or PIO_ETRUNC (it holds more than count items): in both cases the
 * message stays queued and a later receive can take it; PIO_EGONE (the named
 * source process left and nothing from it is queued); PIO_EINVAL;
 * PIO_ENOTINIT. */
int PIO_Recv(int partner, int process_ID, int tag, void *addr, int datatype, size_t count,
             int timeout, int mode, PIO_Status *status);

/* PIO_Isend / PIO_Irecv - non-blocking forms; arguments as above.
 * req [out]: completed by PIO_Wait or PIO_Test, which free it. addr must stay
 * valid and untouched until then. */
int PIO_Isend(int partner, int process_ID, int tag, int connection, const void *addr, int datatype,
              size_t count, int mode, PIO_Request *req);
int PIO_Irecv(int partner, int process_ID, int tag, void *addr, int datatype, size_t count,
              int mode, PIO_Request *req);

/* PIO_Wait - wait up to timeout ms for *req. On completion (whatever its
 * outcome) frees it, sets *req to NULL and returns the operation's status;
 * on PIO_ETIMEDOUT *req stays valid. */
int PIO_Wait(PIO_Request *req, int timeout, PIO_Status *status);

/* PIO_Test - *done [out] = 1 and as PIO_Wait when complete; else *done = 0
 * and PIO_OK. */
int PIO_Test(PIO_Request *req, int *done, PIO_Status *status);

/* ---- Several requests at once, and an event loop ----
 * As MPI_Waitany, MPI_Waitall and MPI_Testany. reqs [in, out] is an array
 * of count requests; NULL entries are skipped (a completed request becomes
 * NULL, so the same array can be passed again). A request must appear only
 * once in the array. timeout is in milliseconds as for PIO_Wait:
 * PIO_WAIT_FOREVER (any negative value) for no limit, 0 to look without
 * waiting. These calls sleep on libpio's wake-up (they never busy-poll).
 * A NULL entry, or an all-NULL array, reports an empty status: count and
 * bytes 0, error PIO_OK, partner, source and tag -1 (the wildcards).
 * Thread-safety: thread-safe, but two threads must not pass the same
 * request at once (as with PIO_Wait). */
#define PIO_UNDEFINED (-1) /* *index when no request was completed */

/* PIO_Waitany - wait up to timeout ms until one of the non-NULL requests
 * completes. Then *index [out] = its place in reqs, the request is freed
 * and reqs[*index] set to NULL (as PIO_Wait), status [out, may be NULL] is
 * its status, and the return value its outcome. When several are complete,
 * the lowest index is taken. All entries NULL (or count 0): returns PIO_OK
 * at once with *index = PIO_UNDEFINED and an empty status.
 * Returns the completed request's outcome; PIO_ETIMEDOUT (nothing freed,
 * *index = PIO_UNDEFINED); PIO_EINVAL (count < 0, reqs NULL with
 * count > 0, index NULL). */
int PIO_Waitany(int count, PIO_Request reqs[], int *index, int timeout, PIO_Status *status);

/* PIO_Waitall - wait up to timeout ms until every non-NULL request is
 * complete, then free them all, set every entry to NULL and fill
 * statuses[i] [out, count entries, may be NULL] for each (an empty status
 * for a NULL entry). A request that fails does not stop the others: all
 * are waited for and freed; statuses[i].error tells each one's outcome.
 * Returns PIO_OK when every request succeeded, else the first failure in
 * array order (not in time); PIO_ETIMEDOUT when some request is still
 * pending at the timeout: then nothing is freed and no status is filled
 * (every request stays valid, completed ones included; call again, or
 * PIO_Testany / PIO_Wait them one by one); PIO_EINVAL (count < 0, reqs
 * NULL with count > 0). */
int PIO_Waitall(int count, PIO_Request reqs[], int timeout, PIO_Status statuses[]);

/* PIO_Testany - PIO_Waitany without waiting: *done [out] = 1 and as
 * PIO_Waitany when a request is complete or every entry is NULL (then
 * *index = PIO_UNDEFINED); else *done = 0, *index = PIO_UNDEFINED, nothing
 * changes and PIO_OK. Returns PIO_EINVAL also for done NULL. */
int PIO_Testany(int count, PIO_Request reqs[], int *index, int *done, PIO_Status *status);

/* PIO_Getfd - *fd [out]: a file descriptor to poll (poll, epoll, select,
 * libuv's uv_poll, asyncio's add_reader) for POLLIN: it is readable exactly
 * while at least one request returned by PIO_Isend, PIO_Irecv, PIO_Iget or
 * PIO_Iput is complete and not yet collected by PIO_Wait, PIO_Test,
 * PIO_Waitany, PIO_Waitall or PIO_Testany (level-triggered). libpio drains
 * it itself when the last such request is collected; the caller must
 * neither read, write nor close it. So a loop that polls the fd, then
 * calls PIO_Testany (or PIO_Test) until nothing is complete, misses no
 * completion, also one that happens between its test and its next poll.
 * The fd is libpio's (an eventfd, close-on-exec), the same on every call,
 * made at the first call; it is valid until PIO_Exit, which closes it.
 * Requests complete only as libpio progresses: its progress thread does so
 * by itself, and so does any thread waiting in a PIO call.
 * Returns PIO_OK; PIO_EINVAL (fd NULL); PIO_ENOTINIT; PIO_ENOMEM or
 * another code from eventfd(2) failing (too many open files: PIO_EIO).
 * Thread-safe. */
int PIO_Getfd(int *fd);

/* PIO_Getappinfo - facts about a partner (or PIO_SELF). info [out]. */
int PIO_Getappinfo(int partner, PIO_Appinfo *info);

/* PIO_Gethostinfo - facts about this host's piod. info [out]. */
int PIO_Gethostinfo(PIO_Hostinfo *info);

/* PIO_Getconinfo - the channels of the bundle to partner's system.
 * info [out]: up to max records; *n [out]: records written. Partner on the
 * same host: *n = 0. */
int PIO_Getconinfo(int partner, PIO_Coninfo *info, int max, int *n);

/* PIO_Setclasses - share this process's receive space among classes of the
 * messages sent to it, as an I/O server shares its threads among service
 * classes (pfs-iod does this with its --qos shares). A message whose tag is
 * tag0 + c (0 <= c < n) is of class c, any other message of class 0. While
 * messages of several classes wait for receive space (the piod grants it,
 * a chunk at a time, in the 3-way handshake), the piod gives the next room
 * to the class that holds the least of it for its share; a class with
 * nothing waiting leaves its share to the others (borrowing), so classes
 * cost nothing when one is alone. Without classes, arrival order.
 * n [in]: 1 .. PIO_MAX_CLASSES, or 0 to end the classes.
 * shares [in]: n percentages, each 1 .. 100 (they need not sum to 100).
 * Returns PIO_OK; PIO_EINVAL (n or a share out of range, shares NULL);
 * PIO_ENOTINIT. Thread-safe. */
#define PIO_MAX_CLASSES 8
int PIO_Setclasses(int tag0, int n, const int *shares);

/* ---- One-sided access (windows) ----
 * A process registers memory as a window; the processes of its own
 * application (partner PIO_SELF) and of its partners then read and write it
 * (PIO_Get, PIO_Put), and update 64-bit words in it atomically, without the
 * owner handling any message: libpio's progress thread serves what the
 * transport cannot do in hardware (over TCP, UCX emulates get and atomics;
 * see pio_rma(7)). Windows are numbered in each process in the order it
 * creates them (0, 1, ...), as MPI matches windows by creation order: an
 * operation names the remote window by the local window of the same number,
 * so a process that only reads creates an empty window (base NULL, size 0).
 * The window's address and memory key reach the other processes through the
 * piods, on demand: the first operation of a process on a window asks its
 * owner (this application's processes and its partners' may ask), so the
 * owner knows who may touch it when it frees it. The application never sees
 * them.
 * Thread-safety: every function is thread-safe; a window is freed by one
 * thread while no other uses it. */
typedef struct pio_win *PIO_Win;

/* access argument of PIO_Win_create: who may get, put and use atomics on
 * the window. Judged on who asks for the window, as the piods stamped the
 * asking process (PIO_Status.app, .uid): never on what it says. */
#define PIO_WIN_APP 0 /* the processes of this application only (the safe choice) */
#define PIO_WIN_PARTNERS                                                                           \
    1 /* those, and the applications this process named (PIO_Setpartner, PIO_Addpartner) */
#define PIO_WIN_UID    2 /* every process of this process' uid, of any application */
#define PIO_WIN_ANYONE 3 /* every process that can send this process a message */

/* PIO_Win_create - register base[0 .. size) as this process's next window.
 * base [in]: the caller's memory (NULL with size 0: an empty window), which
 *   must stay valid until PIO_Win_free returns.
 * access [in]: PIO_WIN_APP, PIO_WIN_PARTNERS, PIO_WIN_UID or PIO_WIN_ANYONE:
 *   who may use the window; any other process that tries gets PIO_EACCES.
 * win [out].
 * Returns PIO_OK, PIO_EINVAL (also for another access), PIO_ENOTINIT,
 * PIO_ENOMEM, PIO_ENOSYS (no one-sided transport here), PIO_EIO (the
 * transport refused the memory). */
int PIO_Win_create(void *base, size_t size, int access, PIO_Win *win);

/* PIO_Win_free - withdraw the window: every process that knew it is told,
 * and its operations on it in flight end with PIO_EWINFREED (none reads or
 * writes the memory after this returns). Waits for their answers, at most
 * 10 s each (a process that left or does not answer is not waited for).
 * *win is NULL afterwards. Returns PIO_OK or PIO_EINVAL. */
int PIO_Win_free(PIO_Win *win);

/* PIO_Win_number - the number of win, a window of this process (windows are
 * numbered from 0 in the order a process creates them), or -1 for NULL or a
 * handle of PIO_Win_remote. A process sends it to a service that is to
 * fill the window (a file server writing a read straight into it).
 * Thread-safe. */
int PIO_Win_number(PIO_Win win);

/* PIO_Win_remote - *win [out]: a handle that stands for window number
 * `number` of whichever process an operation names, with no memory of this
 * process behind it: PIO_Get, PIO_Put, PIO_Iget, PIO_Iput and the atomics
 * take it like a window of one's own of that number (the owner still
 * decides who may use its window). Free it with PIO_Win_free, which tells
 * no one; operations already started keep the number. Returns PIO_OK,
 * PIO_EINVAL (number < 0, win NULL), PIO_ENOMEM. Thread-safe. */
int PIO_Win_remote(int number, PIO_Win *win);

/* PIO_Get / PIO_Put - copy len bytes between buf and offset disp of window
 * win's counterpart in process process_ID of partner (PIO_SELF: this
 * application). They return when done: a get's data is in buf; a put's is
 * in the remote memory. Returns PIO_OK; PIO_EINVAL (disp + len beyond the
 * remote window, bad arguments); PIO_EPARTNER; PIO_ENOWIN (that process has
 * no such window, within 10 s); PIO_EWINFREED (it was freed before or
 * during the operation: buf then holds nothing certain); PIO_EGONE (the
 * process left); PIO_EIO. */
int PIO_Get(PIO_Win win, int partner, int process_ID, uint64_t disp, void *buf, size_t len);
int PIO_Put(PIO_Win win, int partner, int process_ID, uint64_t disp, const void *buf, size_t len);

/* PIO_Iget / PIO_Iput - non-blocking forms; req [out] is completed by
 * PIO_Wait or PIO_Test (PIO_Status: bytes = len). buf must stay untouched
 * until then. */
int PIO_Iget(PIO_Win win, int partner, int process_ID, uint64_t disp, void *buf, size_t len,
             PIO_Request *req);
int PIO_Iput(PIO_Win win, int partner, int process_ID, uint64_t disp, const void *buf, size_t len,
             PIO_Request *req);

/* PIO_Compare_and_swap - atomically: the 64-bit word at disp (8-byte
 * aligned, in the owner's byte order) becomes swap if it equals compare;
 * *old [out] is its value before. PIO_Fetch_and_add - atomically adds add;
 * *old [out] the value before. Atomic against each other and against every
 * other process's atomics on that word (not against plain puts). Returns as
 * PIO_Get; PIO_EINVAL also for a disp not 8-byte aligned. */
int PIO_Compare_and_swap(PIO_Win win, int partner, int process_ID, uint64_t disp, uint64_t compare,
                         uint64_t swap, uint64_t *old);
int PIO_Fetch_and_add(PIO_Win win, int partner, int process_ID, uint64_t disp, uint64_t add,
                      uint64_t *old);

/* PIO_Win_flush - wait until every operation this process started on win
 * to process_ID of partner (PIO_ANY_PROCESS: to every process of it;
 * PIO_ANY_PARTNER: to all) is complete at the target. Returns PIO_OK or
 * the first failure among them. */
int PIO_Win_flush(PIO_Win win, int partner, int process_ID);

/* ---- Remote file access ----
 * Reading a file on another host's file service (piod --export, the one
 * pcp(1) uses) through one-sided transfers: the service reads from its
 * storage and puts the bytes into this process's memory (PIO_Put) while
 * this process waits for nothing but the count; the next piece's storage
 * read overlaps the current piece's transfer, and sequential preads read
 * ahead (pio_rma(7)). For the parallel file system
 * and for applications that read remote data by offset.
 * Thread-safety: thread-safe; one PIO_Rfile's preads take turns. */
typedef struct pio_rfile *PIO_Rfile;

/* PIO_Rfile_open - open path (relative to the export root of host's file
 * service, or absolute under it) for reading. rf [out]; size [out, may be
 * NULL]: the file's size. Returns PIO_OK; PIO_EINVAL; PIO_EPARTNER (no
 * file service of that host); PIO_ENOENT, PIO_EPERM (outside the export),
 * ...: the service's errno, its words in PIO_File_error_text(); PIO_ENOSYS
 * (no one-sided transport). */
int PIO_Rfile_open(const char *host, const char *path, PIO_Rfile *rf, uint64_t *size);

/* PIO_Rfile_pread - read up to count bytes at offset into buf. got [out,
 * may be NULL]: bytes read, fewer than count only at the end of the file.
 * Returns PIO_OK; PIO_EINVAL; PIO_EIO and others from the service. */
int PIO_Rfile_pread(PIO_Rfile rf, void *buf, size_t count, uint64_t offset, size_t *got);

/* PIO_Rfile_range - one read of a list (PIO_Rfile_readlist). */
typedef struct PIO_Rfile_range {
    void *buf;       /* [in] where the bytes go (caller's, count bytes) */
    size_t count;    /* [in] bytes wanted */
    uint64_t offset; /* [in] where in the file */
    size_t got;      /* [out] bytes read: count, fewer only at the end of the file */
} PIO_Rfile_range;

/* PIO_Rfile_readlist - read n ranges at once, as lio_listio(LIO_WAIT): up to
 * 16 READs stay in flight at the service (each range in pieces of at most
 * 256 KiB), so n scattered small reads cost about one round trip instead
 * of n. Returns when every range is read: PIO_OK (each range's got set);
 * PIO_EINVAL (rf or list NULL with n > 0, n < 0, a NULL buf with a count);
 * PIO_EIO and others from the service (the session is then over, as after a
 * failed pread; got says what came). Ends any read-ahead first. */
int PIO_Rfile_readlist(PIO_Rfile rf, PIO_Rfile_range *list, int n);

/* PIO_Rfile_advise - how rf will be read, as posix_fadvise(2):
 * PIO_RFILE_NORMAL (the default: a pread that continues the last one
 * starts reading ahead, up to 4 MiB) or PIO_RFILE_RANDOM (never read
 * ahead: every pread brings exactly its range; for callers that cache
 * blocks themselves and jump between them, such as anco). Takes effect at
 * the next pread. Returns PIO_OK or PIO_EINVAL. */
#define PIO_RFILE_NORMAL 0
#define PIO_RFILE_RANDOM 1
int PIO_Rfile_advise(PIO_Rfile rf, int advice);

/* PIO_Rfile_close - end the session; frees rf. PIO_OK or PIO_EINVAL. */
int PIO_Rfile_close(PIO_Rfile rf);

/* ---- Remote merged output ----
 * Many processes write blocks; one file appears on another host. The host's
 * piod must export a folder (`export = DIR`); paths are relative to it.
 * Thread-safety: one PIO_File is used by one thread at a time; different
 * PIO_Files are independent. */
typedef struct pio_file *PIO_File;
#define PIO_FILE_RAW     0 /* bytes at offsets (PIO_File_open, PIO_File_write_at) */
#define PIO_FILE_HDF5    1 /* one HDF5 dataset (PIO_File_open_dataset, _write_slab) */
#define PIO_FILE_MAXDIMS 8 /* HDF5 mode: largest dataset rank */

/* PIO_Dataset - the one dataset of an HDF5-mode file. Shapes are in C order
 * (the first dimension varies slowest; Fortran callers reverse theirs). */
typedef struct PIO_Dataset {
    const char *name;                /* path in the file, e.g. "/field" or "/run1/t" */
    int type;                        /* element type: PIO_CHAR .. PIO_DOUBLE_PRECISION
                                        (integers and reals; not the complex or
                                        LOGICAL / CHARACTER types) */
    int ndims;                       /* rank: 1 .. PIO_FILE_MAXDIMS */
    uint64_t dims[PIO_FILE_MAXDIMS]; /* global shape; each extent >= 1 */
} PIO_Dataset;

/* PIO_File_open - collective over this application's processes: every
 * process opens the same path on host; the file is created (or replaced)
 * there under a temporary name.
 * host [in]: the other host (a peer of this piod). path [in]: the file.
 * mode [in]: PIO_FILE_RAW. fh [out]: the handle.
 * Returns PIO_OK; PIO_EPARTNER (no file service on host: no export, or an
 * unknown host), PIO_EPERM (the path leaves the export root, or permission),
 * PIO_ENOENT (no such folder), PIO_ENOSYS (mode), PIO_EINVAL, PIO_ENOTINIT. */
int PIO_File_open(const char *host, const char *path, int mode, PIO_File *fh);

/* PIO_File_open_dataset - as PIO_File_open, in HDF5 mode: the remote file
 * is an HDF5 file holding one dataset ds (created with libhdf5 on the remote
 * host, groups on its path included, elements not written read as 0). Every
 * process passes the same ds. ds [in]: copied; the caller keeps it.
 * Returns as PIO_File_open; PIO_EINVAL for a bad ds (rank, extents, name),
 * PIO_ENOSYS for an element type HDF5 mode does not carry, PIO_EPERM also
 * when another process opened the file with a different ds. */
int PIO_File_open_dataset(const char *host, const char *path, const PIO_Dataset *ds, PIO_File *fh);

/* PIO_File_write_slab - HDF5 mode: write the hyperslab start[i] ..
 * start[i] + count[i] - 1 of each dimension from buf, which holds its
 * elements packed in C order, of the dataset's type and this host's byte
 * order. start, count [in]: ds.ndims entries each. Slabs of different
 * processes must not overlap. buf is reusable on return. Returns PIO_OK,
 * PIO_EINVAL (a slab out of the shape, a raw-mode handle), or a send error. */
int PIO_File_write_slab(PIO_File fh, const uint64_t *start, const uint64_t *count, const void *buf);

/* PIO_File_write_at - write len bytes of buf at offset of the remote file.
 * Blocks of different processes must not overlap. buf is reusable on return
 * (the bytes are in the piod's pool). Returns PIO_OK or a send error. */
int PIO_File_write_at(PIO_File fh, uint64_t offset, const void *buf, size_t len);
/* (PIO_EINVAL on an HDF5-mode handle: use PIO_File_write_slab.) */

/* PIO_File_close - collective: returns when every process of the
 * application has closed and the file is complete, synced and under its
 * name on the remote host (or reports why not). Frees fh.
 * Returns PIO_OK, or the first error any write met there (PIO_EIO for a full
 * disk, ...). */
int PIO_File_close(PIO_File fh);

/* PIO_File_error_text - what the remote host said about the last PIO_File_*
 * call of this thread that failed there ("" when it failed locally, or
 * nothing failed): e.g. "out/x.h5: No space left on device". Thread-safe;
 * the string is the thread's own and valid until its next PIO_File_* call. */
const char *PIO_File_error_text(void);

/* ---- Visualization feeds ----
 * A parallel simulation streams a 3-D structured grid's fields, step by
 * step, to a receiver application (pio-vizd(8)) named by its application
 * name. Each process of the simulation opens the feed, and per step puts
 * its block of each field between PIO_Feed_begin_step and _end_step. The
 * receiver shows a step only when every process's pieces have arrived.
 * The feed never disturbs the simulation: with the receiver absent (not yet
 * started, stopped, restarted) steps are skipped; end_step returns once the
 * data is in the piod's pool; only a receiver that asks for every step (an
 * archive output) holds the simulation back, by at most PIO_Feedinfo.window
 * steps in flight.
 * Thread-safety: one PIO_Feed is used by one thread at a time. */
typedef struct pio_feed *PIO_Feed;

/* PIO_Grid - points along x, y, z; point (i, j, k) is at origin +
 * (i, j, k) * spacing. Field data is packed with x fastest: the C array
 * f[nz][ny][nx] (Fortran: f(nx, ny, nz)). */
typedef struct PIO_Grid {
    uint64_t dims[3];
    double origin[3], spacing[3];
} PIO_Grid;

#define PIO_FEED_FIELDS_MAX 16 /* fields of a feed */
#define PIO_FEED_NAME_MAX   32 /* a field name, with its NUL */

/* PIO_Feedinfo - what a feed did so far (PIO_Feed_info). */
typedef struct PIO_Feedinfo {
    uint64_t steps_sent;    /* steps this process sent whole */
    uint64_t steps_skipped; /* steps not sent: receiver absent, or behind */
    uint64_t steps_acked;   /* steps the receiver took or dropped */
    uint64_t bytes_sent;
    int receiver_present;  /* at the last step */
    int lossless;          /* the receiver wants every step (archive) */
    int window;            /* steps in flight before the feed waits or skips */
    double wait_seconds;   /* time begin_step spent held back (lossless) */
    uint64_t plans_missed; /* newest-only: planned steps this process had passed */
} PIO_Feedinfo;

/* PIO_Feed_open - this process's side of a feed to application receiver.
 * grid [in]: the global grid (every process passes the same). nfields,
 * names [in], types [in]: the fields (names copied; types PIO_FLOAT,
 * PIO_DOUBLE or PIO_INT32). feed [out]. Does not wait for the receiver;
 * with several processes it looks up its own application at its piod,
 * which answers at once unless a cut link holds the piod back (then up to
 * $PIO_FEED_WAIT seconds, default 30).
 * Returns PIO_OK, PIO_EINVAL (grid, names, types, counts), PIO_ENOTINIT,
 * PIO_ENOMEM, PIO_ETIMEDOUT. */
int PIO_Feed_open(const char *receiver, const PIO_Grid *grid, int nfields, const char *const *names,
                  const int *types, PIO_Feed *feed);

/* PIO_Feed_begin_step - start step (numbers increase) at simulation time.
 * Decides whether this step is sent: the receiver must be joined; a
 * lossless receiver gets every step (begin_step waits while `window` steps
 * are unacknowledged); a newest-only receiver gets the steps process 0
 * plans, a few steps ahead, whenever fewer than `window` are in flight, so
 * that every process sends the same steps without waiting for the others.
 * Returns PIO_OK or PIO_EINVAL (a step already begun, a number not above
 * the last). */
int PIO_Feed_begin_step(PIO_Feed feed, uint64_t step, double time);

/* PIO_Feed_sending - 1 when the step just begun is being sent, 0 when it
 * is skipped (or no step is begun): a simulation may then skip preparing
 * its blocks (packing, converting) and go straight to end_step. */
int PIO_Feed_sending(PIO_Feed feed);

/* PIO_Feed_put - this process's block of field fidx: start[3], count[3] in
 * points (x, y, z); data [in] holds count[0] * count[1] * count[2]
 * elements of the field's type, x fastest. Reusable on return (the data is
 * in the piod's pool). Returns PIO_OK (also when the step is skipped, or
 * the receiver left during it), PIO_EINVAL (no step begun, fidx, a block
 * outside the grid). */
int PIO_Feed_put(PIO_Feed feed, int fidx, const uint64_t start[3], const uint64_t count[3],
                 const void *data);

/* PIO_Feed_put_sub - as PIO_Feed_put, for a block that lies inside a larger
 * local array (one with ghost layers, say) without packing it first:
 * data [in] holds mem_dims[0] x mem_dims[1] x mem_dims[2] elements (x
 * fastest) and the block of count[] elements starts at mem_off[] in it.
 * The elements are copied once, straight into the piod's pool. Returns as
 * PIO_Feed_put; PIO_EINVAL also for a block outside mem_dims. */
int PIO_Feed_put_sub(PIO_Feed feed, int fidx, const uint64_t start[3], const uint64_t count[3],
                     const void *data, const uint64_t mem_dims[3], const uint64_t mem_off[3]);

/* PIO_Feed_end_step - this process's part of the step is done. Returns
 * PIO_OK or PIO_EINVAL (no step begun). */
int PIO_Feed_end_step(PIO_Feed feed);

/* PIO_Feed_info - counters of feed. info [out]. Between steps it first takes
 * the plans that came after this process passed their step (newest-only):
 * they count in plans_missed, and the receiver is told at once. */
int PIO_Feed_info(PIO_Feed feed, PIO_Feedinfo *info);

/* PIO_Feed_close - end this process's side; frees feed. PIO_OK. */
int PIO_Feed_close(PIO_Feed feed);

#if defined(__GNUC__) && __GNUC__ >= 4
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif
#endif /* PIO_H */
