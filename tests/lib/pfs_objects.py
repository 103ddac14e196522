#!/usr/bin/env python3
# pfs_objects.py - check `pfs getstripe -b PATH` (stdin) against the layout
# formula and the I/O servers' object files on disk.
# SPDX-License-Identifier: BSD-3-Clause
#
# usage: pfs_objects.py CLUSTER_DIR PATH SIZE
# The layout's servers must hold exactly the bytes the layout gives each
# stripe (stripe unit u on stripe u % count), every other server nothing,
# and each layout server's object directory must hold a file of that size.
import os, sys
d, path, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = sys.stdin.read().splitlines()
kv = {l.split(":")[0]: l.split(":", 1)[1].split() for l in lines if ":" in l and not l.startswith("object")}
count, ss = int(kv["stripe_count"][0]), int(kv["stripe_size"][0])
names = kv["server_names"]
held = {l.split()[3]: int(l.split()[5]) for l in lines if l.startswith("object")}
assert len(held) == 32, held
units = size // ss
def want(i):
    n = (units // count + (1 if i < units % count else 0)) * ss
    return n + (size % ss if size % ss and i == units % count else 0)
for i, n in enumerate(names):
    assert held[n] == want(i), (path, n, held[n], want(i))
for n, b in held.items():
    if n not in names:
        assert b == 0, (path, n, b)
assert sum(held.values()) == size
# on disk: the layout's servers have the object file (objects/XX/<fid in
# 16 hex digits>, XX its low byte) of exactly that size, the others none
fid = int(kv["fid"][0])
for n in held:
    p = os.path.join(d, n, "objects", "%02x" % (fid & 0xff), "%016x" % fid)
    if n in names:
        assert os.path.getsize(p) == held[n], (n, p, held[n])
    else:
        assert not os.path.exists(p), (n, p)
print("ok", path, count)
