#!/usr/bin/python3
# gas_mock.py - a stand-in GAS dispatcher for the tests of libpgas.so.
# SPDX-License-Identifier: BSD-3-Clause
#
#   gas_mock.py --socket PATH --dir DIR [--log FILE] [--fail-writes SUFFIX]
#
# Speaks pfs/gas/wire.h on a Unix stream socket and applies each request to
# a local directory: pfs path "/a/b" is DIR/a/b. One thread per connection,
# so several clients are served at once and one connection's frames are
# applied strictly in order. WRITE with id 0 gets no reply (an error in it is
# kept and reported by the handle's next FSYNC or CLOSE, as the dispatcher
# does); every other request gets one. --log gets one line per request,
# written before the request is applied:
#   OP id=ID handle=H off=OFF len=LEN [flags=F] [path=P]
# --fail-writes SUFFIX: writes to files whose path ends with SUFFIX fail
# with PIO_ENOSPC (to test error reporting). The wire constants and the PIO
# status numbers are read from wire.h and pio.h beside this checkout. It
# writes its pid nowhere: the test that started it kills it.
import argparse
import errno
import os
import re
import socketserver
import stat
import struct
import sys
import threading

SRC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
HDR = struct.Struct("<IHHIIiIQQQ")  # magic op flags id handle status plen off len aux


def read_text(rel):
    with open(os.path.join(SRC, rel), encoding="utf-8") as f:
        return f.read()


def wire_constants():
    """GAS_* #defines (integers) and the gas_op names by number, from wire.h."""
    text = read_text("pfs/gas/wire.h")
    consts = {}
    for name, value in re.findall(r"#define\s+(GAS_\w+)\s+\(?([0-9a-fA-Fx]+)u?\b", text):
        consts[name] = int(value, 0)
    m = re.search(r"#define\s+GAS_PAYLOAD_MAX\s+\(1u << (\d+)\)", text)
    consts["GAS_PAYLOAD_MAX"] = 1 << int(m.group(1))
    body = re.search(r"enum gas_op \{(.*?)\};", text, re.S).group(1)
    ops, n = {}, 0
    for name, value in re.findall(r"GAS_OP_(\w+)\s*(?:=\s*(\d+))?", body):
        n = int(value) if value else n + 1
        ops[name] = n
    return consts, ops


def pio_statuses():
    """PIO status numbers by name, in pio.h's X-list order from PIO_OK = 0."""
    names = re.findall(r"X\((PIO_\w+),", read_text("libpio/pio.h"))
    return {name: i for i, name in enumerate(names)}


C, OPS = wire_constants()
OPNAME = {v: k for k, v in OPS.items()}
PIO = pio_statuses()
ERRNO_STATUS = {
    errno.ENOENT: "PIO_ENOENT", errno.EEXIST: "PIO_EEXIST", errno.EISDIR: "PIO_EISDIR",
    errno.ENOTDIR: "PIO_ENOTDIR", errno.ENOTEMPTY: "PIO_ENOTEMPTY", errno.ENOSPC: "PIO_ENOSPC",
    errno.EINVAL: "PIO_EINVAL", errno.ENOMEM: "PIO_ENOMEM",
}


class Failure(Exception):
    """A request that fails with a PIO status and a text."""

    def __init__(self, status, text):
        super().__init__(text)
        self.status, self.text = status, text

    @classmethod
    def of(cls, e):
        return cls(PIO[ERRNO_STATUS.get(e.errno, "PIO_EIO")], e.strerror or str(e))


class Log:
    def __init__(self, path):
        self.f = open(path, "a", encoding="utf-8") if path else None
        self.lock = threading.Lock()

    def line(self, text):
        if self.f:
            with self.lock:
                self.f.write(text + "\n")
                self.f.flush()


def attrs(st):
    """(size, mode bits, mtime ns) of an os.stat_result, as OPEN replies."""
    mode = stat.S_IMODE(st.st_mode) | (C["GAS_MODE_DIR"] if stat.S_ISDIR(st.st_mode) else 0)
    return st.st_size, mode, st.st_mtime_ns


def open_flags(fl):
    acc = fl & 3
    o = {C["GAS_O_WRONLY"]: os.O_WRONLY, C["GAS_O_RDWR"]: os.O_RDWR}.get(acc, os.O_RDONLY)
    for gas, posix in (("GAS_O_CREAT", os.O_CREAT), ("GAS_O_EXCL", os.O_EXCL),
                       ("GAS_O_TRUNC", os.O_TRUNC), ("GAS_O_APPEND", os.O_APPEND)):
        if fl & C[gas]:
            o |= posix
    return o | os.O_CLOEXEC


class Conn:
    """One client connection: its handles and the errors of its queued writes."""

    def __init__(self, server, sock):
        self.root, self.log, self.fail_suffix = server.root, server.log, server.fail_suffix
        self.sock, self.rfile = sock, sock.makefile("rb", buffering=1 << 20)
        self.files, self.pending, self.next_handle = {}, {}, 1

    def local(self, path):
        if not path.startswith("/") or ".." in path.split("/"):
            raise Failure(PIO["PIO_EINVAL"], "bad pfs path %r" % path)
        return os.path.join(self.root, path.lstrip("/"))

    def file(self, handle):
        if handle not in self.files:
            raise Failure(PIO["PIO_EINVAL"], "no such handle %d" % handle)
        return self.files[handle]

    def reply(self, h, status=0, off=0, length=0, aux=0, handle=0, payload=b""):
        self.sock.sendall(HDR.pack(C["GAS_MAGIC"], OPS["REPLY"], 0, h["id"], handle, status,
                                   len(payload), off, length, aux) + payload)

    def recv_frame(self):
        raw = self.rfile.read(HDR.size)
        if len(raw) < HDR.size:
            return None, None
        keys = ("magic", "op", "flags", "id", "handle", "status", "plen", "off", "len", "aux")
        h = dict(zip(keys, HDR.unpack(raw)))
        if h["magic"] != C["GAS_MAGIC"] or h["op"] not in OPNAME or h["plen"] > C["GAS_PAYLOAD_MAX"]:
            raise ValueError("not a GAS frame: %r" % (h,))
        if h["op"] == OPS["WRITE"] and h["plen"] != h["len"]:
            raise ValueError("a WRITE whose plen is not its len: %r" % (h,))
        payload = self.rfile.read(h["plen"])
        if len(payload) < h["plen"]:
            return None, None
        return h, payload

    def serve(self):
        try:
            while True:
                h, payload = self.recv_frame()
                if h is None:
                    break
                self.request(h, payload)
        finally:
            for fd, _ in self.files.values():
                os.close(fd)

    def request(self, h, payload):
        name = OPNAME[h["op"]]
        text = "%s id=%d handle=%d off=%d len=%d" % (name, h["id"], h["handle"], h["off"], h["len"])
        if h["flags"]:
            text += " flags=%#x" % h["flags"]
        if name in ("OPEN", "STAT", "UNLINK"):
            text += " path=" + payload.decode(errors="replace")
        self.log.line(text)
        try:
            getattr(self, "op_" + name.lower())(h, payload)
        except Failure as f:
            self.answer_failure(h, f)
        except OSError as e:
            self.answer_failure(h, Failure.of(e))

    def answer_failure(self, h, f):
        if h["op"] == OPS["WRITE"] and h["id"] == 0:
            self.pending.setdefault(h["handle"], f)
        else:
            self.reply(h, f.status, payload=f.text.encode())

    def take_pending(self, handle):
        f = self.pending.pop(handle, None)
        if f:
            raise f

    def op_open(self, h, payload):
        path = payload.decode()
        fd = os.open(self.local(path), open_flags(h["flags"]), h["aux"] & 0o7777)
        handle, self.next_handle = self.next_handle, self.next_handle + 1
        self.files[handle] = (fd, path)
        size, mode, mtime = attrs(os.fstat(fd))
        self.reply(h, handle=handle, off=size, length=mode, aux=mtime)

    def op_write(self, h, payload):
        fd, path = self.file(h["handle"])
        if self.fail_suffix and path.endswith(self.fail_suffix):
            raise Failure(PIO["PIO_ENOSPC"], "no space left on the mock's storage")
        os.pwrite(fd, payload, h["off"])
        if h["id"]:
            self.reply(h, handle=h["handle"], off=h["off"], length=len(payload))

    def op_read(self, h, payload):
        fd, _ = self.file(h["handle"])
        data = os.pread(fd, min(h["len"], C["GAS_PAYLOAD_MAX"]), h["off"])
        self.reply(h, handle=h["handle"], off=len(data), payload=data)

    def op_fsync(self, h, payload):
        fd, _ = self.file(h["handle"])
        self.take_pending(h["handle"])
        os.fsync(fd)
        self.reply(h, handle=h["handle"])

    def op_close(self, h, payload):
        fd, _ = self.files.pop(h["handle"], (None, None))
        if fd is None:
            raise Failure(PIO["PIO_EINVAL"], "no such handle %d" % h["handle"])
        os.close(fd)
        self.take_pending(h["handle"])
        self.reply(h, handle=h["handle"])

    def op_fstat(self, h, payload):
        fd, _ = self.file(h["handle"])
        size, mode, mtime = attrs(os.fstat(fd))
        self.reply(h, handle=h["handle"], off=size, length=mode, aux=mtime)

    def op_stat(self, h, payload):
        size, mode, mtime = attrs(os.stat(self.local(payload.decode())))
        self.reply(h, off=size, length=mode, aux=mtime)

    def op_trunc(self, h, payload):
        fd, _ = self.file(h["handle"])
        os.ftruncate(fd, h["off"])
        self.reply(h, handle=h["handle"])

    def op_unlink(self, h, payload):
        path = self.local(payload.decode())
        if os.path.isdir(path) and not os.path.islink(path):
            os.rmdir(path)
        else:
            os.unlink(path)
        self.reply(h)

    def op_stats(self, h, payload):
        self.reply(h, payload=b"mock=1 handles=%d" % len(self.files))

    def op_reply(self, h, payload):
        raise Failure(PIO["PIO_EPROTO"], "a REPLY sent to the dispatcher")


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        try:
            Conn(self.server, self.request).serve()
        except (ValueError, ConnectionError) as e:
            print("gas_mock: connection dropped: %s" % e, file=sys.stderr)


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def main():
    ap = argparse.ArgumentParser(description="a stand-in GAS dispatcher for tests")
    ap.add_argument("--socket", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--log")
    ap.add_argument("--fail-writes", metavar="SUFFIX")
    args = ap.parse_args()
    if os.path.exists(args.socket):
        os.unlink(args.socket)
    server = Server(args.socket, Handler)
    server.root, server.log = os.path.abspath(args.dir), Log(args.log)
    server.fail_suffix = args.fail_writes
    server.serve_forever()


if __name__ == "__main__":
    main()
