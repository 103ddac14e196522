#!/usr/bin/env python3
# chaos_check.py - match the chaos test's ledgers: every acknowledged send arrives once, in order.
# SPDX-License-Identifier: BSD-3-Clause
#
# Usage: chaos_check.py [--csv FILE] SEND_LEDGER RECV_LEDGER [SEND_LEDGER RECV_LEDGER ...]
# Each pair of ledgers is one stream (tests/prog/pio-chaos.c writes them).
# For each stream the receiver's messages must be the sender's, in the
# sender's order, each once, and every send that returned PIO_OK must be
# among them. One exception, counted apart: the message a receiver held
# when it was killed (PIO_Recv had returned, its ledger line was not yet
# written) may be missing, at most one per restart and only right where the
# receiver restarted. A send that failed may or may not have arrived.
# Prints one table row per stream and a total; exit 1 on any violation.
import sys


def read(path):
    rows = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if p:
                rows.append(p)
    return rows


def check(spath, rpath):
    sends = []  # (index, size, xxh, ok)
    for p in read(spath):
        if p[0] == "S":
            sends.append((int(p[1]), int(p[2]), p[3], p[4] == "PIO_OK"))
    st = {"sent": len(sends), "ok": sum(1 for s in sends if s[3]), "delivered": 0, "lost": 0,
          "duplicated": 0, "reordered": 0, "in_hand": 0, "failed_arrived": 0, "restarts": 0,
          "end": 0, "problems": []}
    matched = [False] * len(sends)
    skipped = []  # OK sends passed over, not (yet) seen
    ptr = 0
    starts = 0
    restart_pending = False
    for p in read(rpath):
        kind = p[0]
        if kind == "START":
            starts += 1
            if starts > 1:
                st["restarts"] += 1
                restart_pending = True
            continue
        if kind == "END":
            st["end"] = 1
            continue
        if kind != "R":
            continue
        idx, size, xxh = int(p[1]), int(p[2]), p[3]

        def same(s):
            return s[1] == size and s[2] == xxh and (idx < 0 or s[0] == idx)

        # The first send ahead that it can be. An empty message carries no
        # index: among the empty sends it can be without passing over a send
        # that returned PIO_OK, the one that returned PIO_OK is taken first
        # (a failed one may or may not have come; an acknowledged one did).
        j, first = ptr, None
        while j < len(sends):
            if same(sends[j]):
                if first is None:
                    first = j
                if idx >= 0 or sends[j][3]:
                    break
            elif sends[j][3] and first is not None:
                j = first
                break
            j += 1
        if j == len(sends) and first is not None:
            j = first
        if j < len(sends):
            passed = [k for k in range(ptr, j) if sends[k][3]]
            if passed and restart_pending and len(passed) == 1:
                st["in_hand"] += 1
            else:
                skipped.extend(passed)
            matched[j] = True
            st["delivered"] += 1
            if not sends[j][3]:
                st["failed_arrived"] += 1
            ptr = j + 1
            restart_pending = False
            continue
        # nothing ahead matches: an earlier message again, or one out of order
        back = [k for k in range(ptr) if same(sends[k])]
        if any(matched[k] for k in back) and not any(k in skipped for k in back):
            st["duplicated"] += 1
            st["problems"].append("message %d (%d bytes) arrived twice" % (idx, size))
        elif back:
            k = next(k for k in back if k in skipped)
            skipped.remove(k)
            matched[k] = True
            st["reordered"] += 1
            st["delivered"] += 1
            st["problems"].append("message %d arrived after later ones" % sends[k][0])
        else:
            st["problems"].append("a message nobody sent: index %d, %d bytes" % (idx, size))
    lost = [k for k in skipped if not matched[k]]
    lost += [k for k in range(ptr, len(sends)) if sends[k][3]]
    st["lost"] = len(lost)
    for k in lost[:5]:
        st["problems"].append("message %d (%d bytes) was sent (PIO_OK) and never arrived"
                              % (sends[k][0], sends[k][1]))
    if not st["end"]:
        st["problems"].append("the receiver never saw the end mark")
    return st


def main(argv):
    csv = None
    if len(argv) > 1 and argv[0] == "--csv":
        csv, argv = argv[1], argv[2:]
    if not argv or len(argv) % 2:
        print("usage: chaos_check.py [--csv FILE] SEND_LEDGER RECV_LEDGER ...", file=sys.stderr)
        return 2
    cols = ["sent", "ok", "delivered", "lost", "duplicated", "reordered", "in_hand",
            "failed_arrived", "restarts"]
    total = dict.fromkeys(cols, 0)
    bad = 0
    print("%-24s " % "stream" + " ".join("%9s" % c[:9] for c in cols))
    rows = []
    for i in range(0, len(argv), 2):
        st = check(argv[i], argv[i + 1])
        name = argv[i].rsplit("/", 1)[-1]
        print("%-24s " % name + " ".join("%9d" % st[c] for c in cols))
        rows.append([name] + [st[c] for c in cols])
        for c in cols:
            total[c] += st[c]
        for pr in st["problems"]:
            print("  PROBLEM %s: %s" % (name, pr))
        bad += len(st["problems"])
    print("%-24s " % "all" + " ".join("%9d" % total[c] for c in cols))
    if csv:
        with open(csv, "w") as f:
            f.write("stream," + ",".join(cols) + "\n")
            for r in rows + [["all"] + [total[c] for c in cols]]:
                f.write(",".join(str(x) for x in r) + "\n")
    print("chaos_check: %s" % ("FAIL, %d problem(s)" % bad if bad else "PASS"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
