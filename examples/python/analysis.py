#!/usr/bin/env python3
"""analysis.py - the Python side of examples/mpi_sim_py.c: receive every
rank's block of each sent step straight into one numpy array, and analyse it.

    PIO_SOCKET=... python3 analysis.py [--png DIR]

Joins as application "analysis" and waits for "simulation". Each rank's
header (int64: rank, rows, cols, steps, every) says the shape; then, for
each sent step, one receive per rank is posted into that rank's rows of the
whole field (a numpy view: no copy after the receive), and waitall collects
them. Prints "step S sum X max Y" per step, and with --png a picture of the
last field (matplotlib)."""
import argparse

import numpy as np

import pio


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--png", help="write the last field as DIR/field.png")
    a = ap.parse_args()
    pio.init("analysis", 0, 1)
    sim = pio.partner("simulation")
    nranks = pio.app_info(sim)["nprocs"]
    hdr = np.empty(5, dtype=np.int64)
    shape = {}
    for _ in range(nranks):
        st = pio.recv(sim, pio.ANY_PROCESS, 0, hdr)
        shape[st.source] = tuple(int(x) for x in hdr)
    _, rows, cols, steps, every = shape[0]
    field = np.empty((nranks * rows, cols))
    for s in range(every, steps + 1, every):
        reqs = [pio.irecv(sim, r, s + 1, field[r * rows:(r + 1) * rows]) for r in range(nranks)]
        pio.waitall(reqs)
        print("step %d sum %.9e max %.6f" % (s, field.sum(), field.max()), flush=True)
    if a.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        plt.imshow(field, cmap="inferno")
        plt.colorbar()
        plt.title("step %d, %d ranks" % (steps - steps % every, nranks))
        plt.savefig(a.png + "/field.png", dpi=80)
    pio.exit()


if __name__ == "__main__":
    main()
