# test_pio.py - the Python package pio against a piod pair: typed messages
# from numpy arrays without a copy, requests (waitany, waitall, testany),
# asyncio through the completion descriptor, errors by name, the info
# calls, file copy and a feed.
# SPDX-License-Identifier: BSD-3-Clause
import array
import asyncio
import json
import os
import re
import subprocess
import time

import numpy as np
import pytest

import pio


def test_version_is_libpios():
    assert re.fullmatch(r"\d+\.\d+\.\d+", pio.version())
    h = open(os.path.join(os.environ["PIO_SRC"], "libpio", "pio.h")).read()
    want = ".".join(re.search(r"#define PIO_VERSION_%s (\d+)" % k, h).group(1)
                    for k in ("MAJOR", "MINOR", "PATCH"))
    assert pio.version() == want


def test_typed_arrays_both_ways(peer):
    p = peer("""
        a = np.arange(100000, dtype=np.float64) * 0.5
        pio.send(me, 0, 1, a)
        b = np.empty(1000, dtype=np.int32)
        st = pio.recv(me, 0, 2, b)
        assert st.datatype == pio.INT32 and st.count == 1000, st
        pio.send(me, 0, 3, b * 2)
        print("peer ok", int(b.sum()))
    """)
    a = np.empty(100000, dtype=np.float64)
    st = pio.recv(p.partner, 0, 1, a, timeout=30)
    assert st.datatype == pio.DOUBLE and st.count == 100000 and st.bytes == 800000
    assert st.app == p.name and st.source == 0
    assert np.array_equal(a, np.arange(100000, dtype=np.float64) * 0.5)
    b = np.arange(1000, dtype=np.int32)
    pio.send(p.partner, 0, 2, b)
    c = np.zeros(1000, dtype=np.int32)
    pio.recv(p.partner, 0, 3, c, timeout=30)
    assert np.array_equal(c, b * 2)
    assert "peer ok %d" % b.sum() in p.finish()


def test_no_copy_receive_into_a_view(peer):
    p = peer("""
        pio.send(me, 0, 5, np.full(10, 7, dtype=np.uint16))
    """)
    big = np.zeros(30, dtype=np.uint16)
    view = big[10:20]  # contiguous slice: received in place
    pio.recv(p.partner, 0, 5, view, timeout=30)
    assert list(big[10:20]) == [7] * 10 and big[:10].sum() == 0 and big[20:].sum() == 0
    p.finish()


def test_errors_carry_the_pio_name(peer):
    p = peer("""
        pio.send(me, 0, 9, np.ones(4, dtype=np.float64))
        pio.send(me, 0, 9, np.ones(4, dtype=np.float64))
        pio.recv(me, 0, 50, bytearray(1), timeout=30)  # stay until told
    """)
    with pytest.raises(pio.Error) as e:  # sent as float64, asked as int32
        pio.recv(p.partner, 0, 9, np.empty(4, dtype=np.int32), timeout=30)
    assert e.value.name == "PIO_ETYPE" and e.value.code == pio.ETYPE
    with pytest.raises(pio.Error) as e:  # the message is kept: too small now
        pio.recv(p.partner, 0, 9, np.empty(2, dtype=np.float64), timeout=30)
    assert e.value.name == "PIO_ETRUNC"
    for _ in range(2):
        pio.recv(p.partner, 0, 9, np.empty(4, dtype=np.float64), timeout=30)
    with pytest.raises(pio.Timeout) as e:
        pio.recv(p.partner, 0, 9, bytearray(8), timeout=0.2)
    assert e.value.name == "PIO_ETIMEDOUT" and isinstance(e.value, TimeoutError)
    pio.send(p.partner, 0, 50, b"x")
    p.finish()
    with pytest.raises(pio.Error) as e:  # it left, nothing of it is queued
        pio.recv(p.partner, 0, 9, bytearray(8), timeout=10)
    assert e.value.name == "PIO_EGONE"


def test_bad_buffers_are_refused_before_libpio():
    with pytest.raises(TypeError):
        pio.recv(pio.ANY_PARTNER, 0, 1, b"read-only", timeout=0)
    with pytest.raises(ValueError):
        pio.recv(pio.ANY_PARTNER, 0, 1, np.zeros((4, 4))[:, 1], timeout=0)
    with pytest.raises(TypeError):
        pio.send(0, 0, 1, "a str")


def test_waitany_waitall_testany(peer):
    p = peer("""
        import array
        pio.recv(me, 0, 100, bytearray(1), timeout=30)  # go: tag 2 only
        pio.send(me, 0, 2, array.array("i", [22]))
        pio.recv(me, 0, 100, bytearray(1), timeout=30)  # go: the others
        pio.send(me, 0, 1, array.array("i", [11]))
        pio.send(me, 0, 3, array.array("i", [33]))
    """)
    bufs = [array.array("i", [0]) for _ in range(3)]
    reqs = [pio.irecv(p.partner, 0, t + 1, bufs[t]) for t in range(3)]
    assert pio.testany(reqs) == (pio.UNDEFINED, None)  # nothing sent yet
    with pytest.raises(pio.Timeout):
        pio.waitany(reqs, timeout=0.1)
    pio.send(p.partner, 0, 100, b"g")
    i, st = pio.waitany(reqs, timeout=30)
    assert i == 1 and st.tag == 2 and bufs[1][0] == 22 and reqs[1].done
    pio.send(p.partner, 0, 100, b"g")
    sts = pio.waitall(reqs, timeout=30)
    assert [s.tag for s in sts] == [1, 2, 3] and [b[0] for b in bufs] == [11, 22, 33]
    assert pio.waitany(reqs) == (pio.UNDEFINED, None)  # all collected
    p.finish()


def test_asyncio_through_the_descriptor(peer):
    n = 16
    p = peer("""
        for t in range(%d):
            pio.send(me, 0, t, np.full(50000, t, dtype=np.int64))
        b = np.empty(3, dtype=np.float32)
        pio.recv(me, 0, 99, b, timeout=30)
        print("peer got", list(b))
    """ % n)
    fd = pio.getfd()
    assert fd == pio.getfd() and fd >= 0

    async def main():
        bufs = [np.empty(50000, dtype=np.int64) for _ in range(n)]
        reqs = [pio.irecv(p.partner, 0, t, bufs[t]) for t in range(n)]
        ticks = 0

        async def ticker():  # the loop is never blocked in libpio
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.001)

        tk = asyncio.create_task(ticker())
        sts = await asyncio.wait_for(asyncio.gather(*reqs), 60)
        await pio.aio.send(p.partner, 0, 99, np.array([1.5, 2.5, 3.5], dtype=np.float32))
        tk.cancel()
        return bufs, sts, ticks

    bufs, sts, ticks = asyncio.run(main())
    assert [s.tag for s in sts] == list(range(n))
    assert all((b == t).all() for t, b in enumerate(bufs))
    assert ticks > 0
    assert "peer got [1.5, 2.5, 3.5]" in p.finish()


def test_info_calls(peer):
    p = peer("""
        pio.recv(me, 0, 1, bytearray(1), timeout=30)
    """)
    h = pio.host_info()
    assert h["system"] == "A" and h["pool_size"] > 0 and h["chunk_size"] > 0
    me = pio.app_info()
    assert me["name"] == "pyt" and me["process"] == 0 and me["nprocs"] == 1
    other = pio.app_info(p.partner)
    assert other["name"] == p.name and other["system"] == "B" and other["joined"] == 1
    ch = pio.channels(p.partner)
    assert len(ch) == int(os.environ.get("PIO_TEST_CHANNELS", "2")) and all(c["up"] for c in ch)
    pio.send(p.partner, 0, 1, b"x")
    p.finish()


def test_copy_both_ways(tmp_path):
    exp = os.environ["PIO_EXPORT_B"]
    src = tmp_path / "src.bin"
    data = os.urandom((9 << 20) + 12345)
    src.write_bytes(data)
    assert pio.copy(str(src), "B:py/copied.bin") == len(data)
    with open(os.path.join(exp, "py", "copied.bin"), "rb") as f:
        assert f.read() == data
    back = tmp_path / "back.bin"
    assert pio.copy("B:py/copied.bin", str(back)) == len(data)
    assert back.read_bytes() == data
    with pytest.raises(pio.Error) as e:
        pio.copy("B:py/nothing.bin", str(tmp_path / "x"))
    assert e.value.name == "PIO_ENOENT" and "nothing.bin" in str(e.value)
    with pytest.raises(ValueError):
        pio.copy(str(src), str(back))


def test_feed_from_numpy(tmp_path):
    st = tmp_path / "st.json"
    (tmp_path / "arch").mkdir()
    vizd = subprocess.Popen([os.environ["PIO_VIZD"], "--status-file", str(st), "--archive",
                             str(tmp_path / "arch")],
                            env=dict(os.environ, PIO_SOCKET=os.environ["PIO_SOCK_B"]),
                            stdout=subprocess.DEVNULL,
                            stderr=open(tmp_path / "vizd.log", "w"))
    try:
        log = tmp_path / "vizd.log"
        for _ in range(300):  # joined and receiving
            if "receiving threads" in log.read_text() or vizd.poll() is not None:
                break
            time.sleep(0.1)
        assert "receiving threads" in log.read_text(), log.read_text()
        n = 16
        with pio.Feed("vizd", (n, n, n), [("T", "float64"), ("id", np.int32)]) as f:
            for step in range(3):  # an archive wants every step: each one is sent
                assert f.begin_step(step, step * 0.1)
                t = np.fromfunction(lambda z, y, x: x + 10 * y + 100 * z + step, (n, n, n),
                                    dtype=np.float64)
                f.put("T", (0, 0, 0), t)
                f.put(1, (0, 0, 0), np.full((n, n, n), 7, dtype=np.int32))
                f.end_step()
            assert f.info()["steps_sent"] == 3
            f.begin_step(3)
            with pytest.raises(TypeError):  # T is float64
                f.put("T", (0, 0, 0), np.zeros((n, n, n), dtype=np.float32))
            f.end_step()
        for _ in range(300):
            if st.exists() and json.loads(st.read_text() or "{}").get("steps_complete", 0) >= 3:
                break
            time.sleep(0.1)
        d = json.loads(st.read_text())
        assert d["steps_complete"] >= 3 and d["grid"] == [n, n, n], (tmp_path / "vizd.log").read_text()
    finally:
        vizd.terminate()
        vizd.wait(30)
