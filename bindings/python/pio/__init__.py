"""pio - PIO from Python: messages over a bundle of links, remote files and
visualization feeds (cffi over libpio's pio.h).

    import pio, numpy as np
    pio.init("analysis")                  # rank and size from mpi4py or the launcher
    sim = pio.partner("heat3d")
    a = np.empty(1 << 20)
    st = pio.recv(sim, 0, 7, a)           # into the array, no copy; typed by its dtype
    r = pio.irecv(sim, 1, 7, b)           # a Request: r.wait(), r.test(), await r
    i, st = pio.waitany([r1, r2])
    pio.exit()

Buffers are any object of the buffer protocol (bytes to send; bytearray,
memoryview, array.array, numpy arrays to receive into), C-contiguous. The
datatype follows the buffer's item format (numpy dtype): int8 .. uint64,
float32, float64; anything else goes as PIO_BYTE. Pass datatype= to say
otherwise. Every failure raises pio.Error, whose .name is the PIO error's
name ("PIO_ETIMEDOUT", ...) and .code its number; timeouts raise
pio.Timeout, a subclass of both pio.Error and TimeoutError.

Lifecycle (as libpio's): init once per process, before any other call;
exit at the end (requests still pending then fail with PIO_ECANCELED). A
buffer handed to isend / irecv is kept alive by its Request until the
request is collected (wait, test, waitany, waitall, testany, or awaited),
so dropping a pending Request never frees memory libpio is writing.

Thread-safety: as libpio (the calls release the GIL); one Request must not
be waited for by two threads at once. Asyncio: see pio.aio.
"""

import os
import sys

from ._pio import ffi, lib

__all__ = [
    "Error", "Timeout", "Status", "Request", "Feed", "init", "exit", "partner", "add_partner",
    "send", "recv", "isend", "irecv", "waitany", "waitall", "testany", "getfd", "host_info",
    "app_info", "channels", "copy", "version",
]

# ---- constants ------------------------------------------------------------
ANY_PROCESS = lib.PIO_ANY_PROCESS
ANY_TAG = lib.PIO_ANY_TAG
ANY_PARTNER = lib.PIO_ANY_PARTNER
SELF = lib.PIO_SELF
STATIC = lib.PIO_STATIC
DYNAMIC = lib.PIO_DYNAMIC
BLOCKING = lib.PIO_BLOCKING
SYNC = lib.PIO_SYNC
WAIT_FOREVER = lib.PIO_WAIT_FOREVER
UNDEFINED = lib.PIO_UNDEFINED
BYTE, CHAR = lib.PIO_BYTE, lib.PIO_CHAR
INT8, UINT8, INT16, UINT16 = lib.PIO_INT8, lib.PIO_UINT8, lib.PIO_INT16, lib.PIO_UINT16
INT32, UINT32, INT64, UINT64 = lib.PIO_INT32, lib.PIO_UINT32, lib.PIO_INT64, lib.PIO_UINT64
FLOAT, DOUBLE = lib.PIO_FLOAT, lib.PIO_DOUBLE


def USER(i):
    """The connection argument that names channel i of the bundle."""
    return int(i)


def version():
    """libpio's version, "MAJOR.MINOR.PATCH"."""
    return ffi.string(lib.PIO_Get_version()).decode()


# ---- errors ---------------------------------------------------------------
def _s(p):
    return ffi.string(p).decode("utf-8", "replace")


ERRNAMES = {c: _s(lib.PIO_Errname(c)) for c in range(lib.PIO_ERROR_COUNT_)}
for _c, _n in ERRNAMES.items():  # pio.ETIMEDOUT, pio.EGONE, ...
    globals()[_n[len("PIO_"):]] = _c


class Error(Exception):
    """A PIO call failed. code: the PIO error number; name: its name
    ("PIO_EGONE"); text: libpio's words for it; what: the call."""

    def __init__(self, code, what="", detail=""):
        self.code = code
        self.name = ERRNAMES.get(code, "PIO_E%d" % code)
        self.text = _s(lib.PIO_Strerror(code))
        self.what = what
        msg = "%s: %s" % (self.name, self.text)
        if detail:
            msg += " (%s)" % detail
        super().__init__("%s: %s" % (what, msg) if what else msg)


class Timeout(Error, TimeoutError):
    """PIO_ETIMEDOUT."""


def _check(rc, what, detail=""):
    if rc != lib.PIO_OK:
        raise (Timeout if rc == lib.PIO_ETIMEDOUT else Error)(rc, what, detail)


def _ms(timeout):
    """Seconds (None: forever) to libpio's milliseconds."""
    if timeout is None:
        return lib.PIO_WAIT_FOREVER
    if timeout < 0:
        raise ValueError("timeout: seconds >= 0, or None for no limit")
    return int(timeout * 1000)


# ---- buffers --------------------------------------------------------------
_FORMATS = {"b": INT8, "B": UINT8, "h": INT16, "H": UINT16, "f": FLOAT, "d": DOUBLE, "c": CHAR}
_INTS = {(True, 4): INT32, (False, 4): UINT32, (True, 8): INT64, (False, 8): UINT64,
         (True, 2): INT16, (False, 2): UINT16, (True, 1): INT8, (False, 1): UINT8}


def _dtype_of(m):
    """The PIO datatype and item size of memoryview m's items."""
    fmt = m.format
    native = "<" if sys.byteorder == "little" else ">"
    if fmt[:1] in "@=" or fmt[:1] == native:
        fmt = fmt[1:]
    if len(fmt) == 1 and fmt in "bBhHiIlLqQnN":
        return _INTS.get((fmt.islower(), m.itemsize), BYTE), m.itemsize
    if len(fmt) == 1 and fmt in _FORMATS:
        return _FORMATS[fmt], m.itemsize
    return BYTE, 1


def _buffer(obj, writable, datatype=None):
    """(cdata over obj's memory, datatype, count). No copy."""
    if isinstance(obj, str):
        raise TypeError("a str is not a buffer: encode it (s.encode())")
    m = memoryview(obj)
    if not m.c_contiguous:
        raise ValueError("PIO needs a C-contiguous buffer (numpy: np.ascontiguousarray(a))")
    if writable and m.readonly:
        raise TypeError("cannot receive into a read-only buffer (%s)" % type(obj).__name__)
    dt, size = _dtype_of(m)
    if datatype is not None:
        dt, size = datatype, _SIZES[datatype]
    if m.nbytes % size:
        raise ValueError("%d bytes are not whole items of %d bytes" % (m.nbytes, size))
    cdata = ffi.from_buffer("char[]", m, require_writable=writable)
    return cdata, dt, m.nbytes // size


_SIZES = {BYTE: 1, CHAR: 1, INT8: 1, UINT8: 1, INT16: 2, UINT16: 2, INT32: 4, UINT32: 4,
          INT64: 8, UINT64: 8, FLOAT: 4, DOUBLE: 8}


class Status:
    """What a completed receive (or send) reports."""
    __slots__ = ("partner", "source", "tag", "datatype", "count", "bytes", "error", "uid",
                 "gid", "system", "app", "user")

    def __init__(self, st):
        self.partner, self.source, self.tag = st.partner, st.source, st.tag
        self.datatype, self.count, self.bytes, self.error = st.datatype, st.count, st.bytes, st.error
        self.uid, self.gid = st.uid, st.gid
        self.system, self.app, self.user = _s(st.system), _s(st.app), _s(st.user)

    def __repr__(self):
        return "Status(partner=%d, source=%d, tag=%d, count=%d, bytes=%d, app=%r)" % (
            self.partner, self.source, self.tag, self.count, self.bytes, self.app)


# ---- init, partners -------------------------------------------------------
def init(name=None, process=None, nprocs=None, comm=None):
    """Join this process to its host's piod as process `process` of
    `nprocs` of application `name` (None: $PIO_APP). With comm (an mpi4py
    communicator), or when mpi4py is imported and MPI initialized, rank and
    size come from the communicator (COMM_WORLD); else, for those not given,
    from the launcher's variables (PIO_Init(3))."""
    if comm is None and (process is None or nprocs is None) and "mpi4py.MPI" in sys.modules:
        MPI = sys.modules["mpi4py.MPI"]
        if MPI.Is_initialized() and not MPI.Is_finalized():
            comm = MPI.COMM_WORLD
    if comm is not None:
        process = comm.Get_rank() if process is None else process
        nprocs = comm.Get_size() if nprocs is None else nprocs
    _check(lib.PIO_Init(name.encode() if name else ffi.NULL,
                        -1 if process is None else int(process),
                        0 if nprocs is None else int(nprocs)), "init")


def exit():  # noqa: A001 - PIO_Exit's name
    """Leave (PIO_Exit): outstanding sends reach the pool first; requests
    not completed fail with PIO_ECANCELED."""
    from . import aio
    aio._forget()
    _pending.clear()
    _check(lib.PIO_Exit(), "exit")


def partner(name):
    """The handle of application `name`, forgetting earlier partners
    (PIO_Setpartner; waits up to $PIO_PARTNER_TIMEOUT s for it to appear)."""
    p = ffi.new("int *")
    _check(lib.PIO_Setpartner(name.encode(), p), "partner %s" % name)
    return p[0]


def add_partner(name):
    """As partner(), keeping the earlier partners (PIO_Addpartner)."""
    p = ffi.new("int *")
    _check(lib.PIO_Addpartner(name.encode(), p), "add_partner %s" % name)
    return p[0]


# ---- messages -------------------------------------------------------------
def send(partner, process, tag, buf, connection=DYNAMIC, mode=BLOCKING, datatype=None):
    """Send buf to process `process` of partner with tag (PIO_Send). Returns
    when buf may be reused (BLOCKING) or the receiver has it (SYNC)."""
    c, dt, n = _buffer(buf, False, datatype)
    _check(lib.PIO_Send(partner, process, tag, connection, c, dt, n, mode), "send")


def recv(partner, process, tag, buf, timeout=None, datatype=None):
    """Receive into buf (PIO_Recv) from process (or ANY_PROCESS) of partner
    (or ANY_PARTNER) with tag (or ANY_TAG); timeout in seconds. Returns the
    Status (status.count items, status.bytes bytes arrived)."""
    c, dt, n = _buffer(buf, True, datatype)
    st = ffi.new("PIO_Status *")
    _check(lib.PIO_Recv(partner, process, tag, c, dt, n, _ms(timeout), BLOCKING, st), "recv")
    return Status(st)


_pending = set()  # Requests not collected: they keep their buffers alive


class Request:
    """A non-blocking send or receive (isend, irecv). Collect it with wait(),
    test(), waitany/waitall/testany or `await`; its result is kept, so
    asking again returns the same Status (or raises the same Error)."""
    __slots__ = ("_p", "_keep", "_status", "_rc", "what", "__weakref__")

    def __init__(self, what, keep):
        self._p = ffi.new("PIO_Request *")
        self._keep = keep
        self._status = None
        self._rc = None
        self.what = what

    @property
    def done(self):
        """True once collected (completed and reported)."""
        return self._rc is not None

    def _finish(self, rc, st):
        self._rc = rc
        self._status = Status(st) if st is not None else None
        self._keep = None
        _pending.discard(self)

    def _result(self):
        _unreported.discard(self)
        _check(self._rc, self.what)
        return self._status

    def _poll(self):
        """Collect it if complete (never raises for its outcome). True when done."""
        if self._rc is None:
            st = ffi.new("PIO_Status *")
            done = ffi.new("int *")
            rc = lib.PIO_Test(self._p, done, st)
            if done[0]:
                self._finish(rc, st)
            elif rc != lib.PIO_OK:
                raise Error(rc, self.what)
        return self._rc is not None

    def wait(self, timeout=None):
        """Wait up to timeout seconds (None: no limit). Returns the Status;
        raises Timeout (the request stays pending) or the request's Error."""
        if self._rc is None:
            st = ffi.new("PIO_Status *")
            rc = lib.PIO_Wait(self._p, _ms(timeout), st)
            if rc == lib.PIO_ETIMEDOUT and self._p[0] != ffi.NULL:
                raise Timeout(rc, self.what)
            self._finish(rc, st)
        return self._result()

    def test(self):
        """The Status when complete (raising its Error if it failed), else None."""
        if not self._poll():
            return None
        return self._result()

    def __await__(self):
        from . import aio
        return aio.wait(self).__await__()

    def __repr__(self):
        return "<pio.Request %s %s>" % (self.what, "done" if self.done else "pending")


def isend(partner, process, tag, buf, connection=DYNAMIC, mode=BLOCKING, datatype=None):
    """Start a send (PIO_Isend); buf must stay untouched until the Request
    is collected. Returns a Request."""
    c, dt, n = _buffer(buf, False, datatype)
    r = Request("isend", (buf, c))
    _check(lib.PIO_Isend(partner, process, tag, connection, c, dt, n, mode, r._p), "isend")
    _pending.add(r)
    return r


def irecv(partner, process, tag, buf, datatype=None):
    """Start a receive into buf (PIO_Irecv). Returns a Request."""
    c, dt, n = _buffer(buf, True, datatype)
    r = Request("irecv", (buf, c))
    _check(lib.PIO_Irecv(partner, process, tag, c, dt, n, BLOCKING, r._p), "irecv")
    _pending.add(r)
    return r


def _array(reqs):
    arr = ffi.new("PIO_Request[]", max(len(reqs), 1))
    for i, r in enumerate(reqs):
        arr[i] = ffi.NULL if r is None or r.done else r._p[0]
    return arr


def waitany(reqs, timeout=None):
    """Wait until one of reqs (Requests, or None) completes: returns (index,
    Status), the lowest index when several are complete; index UNDEFINED
    (-1) and None when none is pending. Raises that request's Error if it
    failed (the request is collected all the same), or Timeout."""
    return _any(reqs, "waitany",
                lambda n, arr, idx, done, st: lib.PIO_Waitany(n, arr, idx, _ms(timeout), st))


def testany(reqs):
    """As waitany without waiting: (index, Status) of a complete request,
    (UNDEFINED, None) when none is."""
    return _any(reqs, "testany", lib.PIO_Testany)


def _any(reqs, what, call):
    """waitany / testany: call(n, arr, idx, done, st) is the C call."""
    reqs = list(reqs)
    for i, r in enumerate(reqs):  # one collected earlier (by aio, say): report it first
        if r is not None and r.done and r in _unreported:
            return i, r._result()
    arr = _array(reqs)
    idx = ffi.new("int *")
    done = ffi.new("int *", 1)  # (PIO_Waitany has no done: it stays 1)
    st = ffi.new("PIO_Status *")
    rc = call(len(reqs), arr, idx, done, st)
    if not done[0] or idx[0] == UNDEFINED:
        _check(rc, what)
        return UNDEFINED, None
    r = reqs[idx[0]]
    r._p[0] = ffi.NULL
    r._finish(rc, st)
    return idx[0], r._result()


def waitall(reqs, timeout=None):
    """Wait for every request of reqs; returns their Statuses (None for a
    None entry). A failed request does not stop the others: all are
    collected, then the first failure (in list order) is raised; its
    .statuses attribute holds every Status. Timeout: nothing is collected."""
    reqs = list(reqs)
    arr = _array(reqs)
    sts = ffi.new("PIO_Status[]", max(len(reqs), 1))
    rc = lib.PIO_Waitall(len(reqs), arr, _ms(timeout), sts)
    if rc == lib.PIO_ETIMEDOUT:
        raise Timeout(rc, "waitall")
    out = []
    for i, r in enumerate(reqs):
        if r is None:
            out.append(None)
            continue
        if not r.done:
            r._p[0] = ffi.NULL
            r._finish(sts[i].error, sts[i])
        out.append(r._status)
    if rc != lib.PIO_OK:
        e = (Timeout if rc == lib.PIO_ETIMEDOUT else Error)(rc, "waitall")
        e.statuses = out
        raise e
    return out


_unreported = set()  # collected by aio's reader for a request nobody awaited yet


def getfd():
    """libpio's completion descriptor (PIO_Getfd): readable while some
    request is complete and not collected. Do not read or close it."""
    fd = ffi.new("int *")
    _check(lib.PIO_Getfd(fd), "getfd")
    return fd[0]


# ---- information ------------------------------------------------------------
def host_info():
    """This host's piod (PIO_Gethostinfo) as a dict."""
    h = ffi.new("PIO_Hostinfo *")
    _check(lib.PIO_Gethostinfo(h), "host_info")
    return {"host": _s(h.host), "system": _s(h.system), "version": h.version,
            "pool_size": h.pool_size, "eager_limit": h.eager_limit, "chunk_size": h.chunk_size}


def app_info(partner=SELF):
    """An application (PIO_Getappinfo; SELF: this one) as a dict."""
    a = ffi.new("PIO_Appinfo *")
    _check(lib.PIO_Getappinfo(partner, a), "app_info")
    return {"name": _s(a.name), "system": _s(a.system), "nprocs": a.nprocs, "joined": a.joined,
            "process": a.process_ID}


def channels(partner):
    """The channels of the bundle to partner's system (PIO_Getconinfo), a
    list of dicts; [] for a partner on this host."""
    cap = 64
    c = ffi.new("PIO_Coninfo[]", cap)
    n = ffi.new("int *")
    _check(lib.PIO_Getconinfo(partner, c, cap, n), "channels")
    keys = ("index", "up", "tx_bytes", "rx_bytes", "queued", "rate", "tx_chunks", "rx_chunks",
            "resent", "downs")
    out = []
    for i in range(n[0]):
        d = {k: getattr(c[i], k) for k in keys}
        d["up"] = bool(d["up"])
        d["local"], d["remote"] = _s(c[i].local), _s(c[i].remote)
        out.append(d)
    return out


# ---- visualization feeds ------------------------------------------------------
_FEED_TYPES = {FLOAT: FLOAT, DOUBLE: DOUBLE, INT32: INT32}


class Feed:
    """This process's side of a visualization feed to receiver (pio-vizd):
    a 3-D grid of dims (nx, ny, nz) and fields, a list of (name, dtype)
    with dtype float32, float64 or int32 (numpy dtypes or their names).

        with pio.Feed("vizd", (64, 64, 64), [("T", "float64")]) as f:
            for step in range(100):
                if f.begin_step(step, t):          # True: this step is sent
                    f.put("T", (0, 0, z0), block)  # block: array [nz][ny][nx]
                f.end_step()
    """

    def __init__(self, receiver, dims, fields, origin=(0.0, 0.0, 0.0), spacing=(1.0, 1.0, 1.0)):
        import numpy as np
        self._np = np
        self.names = [n for n, _ in fields]
        self.dtypes = [np.dtype(t) for _, t in fields]
        types = []
        for n, t in zip(self.names, self.dtypes):
            dt, _ = _dtype_of(memoryview(np.empty(0, t)))
            if dt not in _FEED_TYPES:
                raise TypeError("field %s: %s; a feed carries float32, float64 or int32" % (n, t))
            types.append(dt)
        g = ffi.new("PIO_Grid *")
        for i in range(3):
            g.dims[i], g.origin[i], g.spacing[i] = int(dims[i]), origin[i], spacing[i]
        self._names = [ffi.new("char[]", n.encode()) for n in self.names]
        names = ffi.new("const char *[]", self._names)
        f = ffi.new("PIO_Feed *")
        _check(lib.PIO_Feed_open(receiver.encode(), g, len(types), names,
                                 ffi.new("int[]", types), f), "Feed")
        self._f = f[0]

    def begin_step(self, step, time=0.0):
        """Start step (numbers increase). True when it is sent."""
        _check(lib.PIO_Feed_begin_step(self._f, step, time), "begin_step")
        return bool(lib.PIO_Feed_sending(self._f))

    def put(self, field, start, block):
        """This process's block of field (name or index) at start (x, y, z):
        a 3-D array [nz][ny][nx] of the field's dtype (a C-contiguous one is
        not copied here; the piod's pool gets it once)."""
        i = self.names.index(field) if isinstance(field, str) else int(field)
        a = self._np.asarray(block)
        if a.ndim != 3 or a.dtype != self.dtypes[i]:
            raise TypeError("field %s: a 3-D %s array [nz][ny][nx], not %d-D %s"
                            % (self.names[i], self.dtypes[i], a.ndim, a.dtype))
        a = self._np.ascontiguousarray(a)
        cnt = ffi.new("uint64_t[3]", list(a.shape[::-1]))
        st = ffi.new("uint64_t[3]", [int(s) for s in start])
        _check(lib.PIO_Feed_put(self._f, i, st, cnt, ffi.from_buffer(a)), "put")

    def end_step(self):
        _check(lib.PIO_Feed_end_step(self._f), "end_step")

    def info(self):
        """The feed's counters (PIO_Feed_info) as a dict."""
        fi = ffi.new("PIO_Feedinfo *")
        _check(lib.PIO_Feed_info(self._f, fi), "info")
        return {k: getattr(fi, k) for k in (
            "steps_sent", "steps_skipped", "steps_acked", "bytes_sent", "receiver_present",
            "lossless", "window", "wait_seconds", "plans_missed")}

    def close(self):
        if self._f is not None:
            _check(lib.PIO_Feed_close(self._f), "close")
            self._f = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---- files ------------------------------------------------------------------
def _split(spec):
    """"HOST:path" -> (host, path); a local path -> (None, path)."""
    head, sep, tail = spec.partition(":")
    if sep and head and "/" not in head:
        return head, tail
    return None, spec


def copy(src, dst, piece=4 << 20):
    """Copy one file between this host and another host's file service,
    pcp's way of naming them: copy("B:runs/t.bin", "t.bin") reads through
    PIO_Rfile (the bytes put straight into this process's memory),
    copy("t.bin", "B:runs/t.bin") writes through PIO_File (raw, complete
    under its name only when all is written). Returns the bytes copied. For
    whole trees, checksums and resuming use pcp(1)."""
    sh, sp = _split(src)
    dh, dp = _split(dst)
    if (sh is None) == (dh is None):
        raise ValueError("copy: exactly one of src and dst is HOST:path")
    buf = bytearray(piece)
    view = memoryview(buf)
    cbuf = ffi.from_buffer(buf)
    total = 0
    if sh is not None:
        rf = ffi.new("PIO_Rfile *")
        size = ffi.new("uint64_t *")
        _check(lib.PIO_Rfile_open(sh.encode(), sp.encode(), rf, size), "copy: open " + src,
               _s(lib.PIO_File_error_text()))
        got = ffi.new("size_t *")
        try:
            with open(dp + ".pio-part", "wb") as out:
                while True:
                    _check(lib.PIO_Rfile_pread(rf[0], cbuf, piece, total, got), "copy: read " + src,
                           _s(lib.PIO_File_error_text()))
                    if got[0] == 0:
                        break
                    out.write(view[:got[0]])
                    total += got[0]
            os.replace(dp + ".pio-part", dp)
        finally:
            lib.PIO_Rfile_close(rf[0])
        return total
    fh = ffi.new("PIO_File *")
    with open(sp, "rb") as inp:
        _check(lib.PIO_File_open(dh.encode(), dp.encode(), lib.PIO_FILE_RAW, fh),
               "copy: open " + dst, _s(lib.PIO_File_error_text()))
        rc = lib.PIO_OK
        while rc == lib.PIO_OK:
            n = inp.readinto(buf)
            if not n:
                break
            rc = lib.PIO_File_write_at(fh[0], total, cbuf, n)
            total += n
        rc2 = lib.PIO_File_close(fh[0])
        _check(rc if rc != lib.PIO_OK else rc2, "copy: write " + dst, _s(lib.PIO_File_error_text()))
    return total
