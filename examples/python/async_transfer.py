#!/usr/bin/env python3
"""async_transfer.py - move N MiB between two Python processes through their
piods with asyncio, several messages in flight, numpy arrays without a copy.

    PIO_SOCKET=/run/pio/piod.sock python3 async_transfer.py recv  [--mib 1024]
    PIO_SOCKET=...                python3 async_transfer.py send  [--mib 1024]

The receiver (application "py-recv") posts WINDOW receives of MSG bytes and
re-posts each one as it completes, in an asyncio task that leaves the loop
free; the sender (application "py-send") keeps WINDOW sends in flight. Each
message is a numpy uint64 array whose words all hold the message number:
the receiver checks the first and last word of every message and the whole
of every 64th. As pio-perf, 2 messages go first, untimed. The receiver
prints one line: "OK N MiB in S s: R MB/s".
"""
import argparse
import asyncio
import time

import numpy as np

import pio

TAG = 11
WARMUP = 2  # messages before the clock starts (pio-perf's -w 2)


async def send(peer, total, msg, window):
    bufs = [np.empty(msg // 8, dtype=np.uint64) for _ in range(window)]
    inflight = {}
    for i in range(total // msg + WARMUP):
        k = i % window
        if k in inflight:
            await inflight.pop(k)
        bufs[k].fill(i)
        inflight[k] = pio.isend(peer, 0, TAG, bufs[k])
    for r in inflight.values():
        await r


async def recv(peer, total, msg, window):
    """The time from the last warm-up message to the end."""
    n = total // msg + WARMUP
    t0 = None
    bufs = [np.empty(msg // 8, dtype=np.uint64) for _ in range(window)]
    reqs = {k: pio.irecv(peer, 0, TAG, bufs[k]) for k in range(min(window, n))}
    for i in range(n):
        k = i % window
        st = await reqs.pop(k)
        b = bufs[k]
        if st.bytes != msg or b[0] != i or b[-1] != i or (i % 64 == 0 and not (b == i).all()):
            raise SystemExit("message %d: wrong bytes (%d, first word %d)" % (i, st.bytes, b[0]))
        if i + window < n:
            reqs[k] = pio.irecv(peer, 0, TAG, b)
        if i == WARMUP - 1:
            t0 = time.monotonic()
    return time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("role", choices=("send", "recv"))
    ap.add_argument("--mib", type=int, default=1024, help="MiB to move (default 1024)")
    ap.add_argument("--msg", type=int, default=16, help="MiB per message (default 16)")
    ap.add_argument("--window", type=int, default=4, help="messages in flight (default 4)")
    a = ap.parse_args()
    me, other = ("py-send", "py-recv") if a.role == "send" else ("py-recv", "py-send")
    pio.init(me, 0, 1)
    peer = pio.partner(other)
    msg, total = a.msg << 20, a.mib << 20
    t = asyncio.run((send if a.role == "send" else recv)(peer, total, msg, a.window))
    if a.role == "recv":
        print("OK %d MiB in %.3f s: %.2f MB/s" % (a.mib, t, total / t / 1e6), flush=True)
    else:  # the receiver has everything when it says so: wait for its word
        pio.recv(peer, 0, TAG + 1, bytearray(1))
    if a.role == "recv":
        pio.send(peer, 0, TAG + 1, b"k")
    pio.exit()


if __name__ == "__main__":
    main()
