#!/usr/bin/env python3
"""sniff.py - count a text in the frames crossing one interface (tests only).

Usage: sniff.py IFACE TEXT OUTFILE
Reads every frame on IFACE with a raw AF_PACKET socket (root) until SIGINT
or SIGTERM, then writes to OUTFILE how many times TEXT occurred in them. A
text split across two frames is not counted: callers send it many times.
Once the socket listens it creates OUTFILE.ready (callers wait for it: a
loaded machine can take seconds to start Python).
"""
import signal
import socket
import sys

iface, text, out = sys.argv[1], sys.argv[2].encode(), sys.argv[3]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
s.bind((iface, 0))
s.settimeout(0.2)
open(out + ".ready", "w").close()
count = 0
stop = False


def halt(*_):
    global stop
    stop = True


signal.signal(signal.SIGINT, halt)
signal.signal(signal.SIGTERM, halt)
while not stop:
    try:
        frame = s.recv(262144)
    except socket.timeout:
        continue
    except InterruptedError:
        continue
    count += frame.count(text)
with open(out, "w") as f:
    f.write("%d\n" % count)
