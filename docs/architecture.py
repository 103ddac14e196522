#!/usr/bin/python3
# architecture.py - draws docs/architecture.svg, the README's picture of PIO.
# SPDX-License-Identifier: BSD-3-Clause
#
# Two hosts, each with application processes (ranks) that use libpio through
# shared-memory pools to their piod; the two piods joined by a bundle of
# channels, one TCP connection per link; the clients built on the API (pcp,
# pfs and GAS, anco, the viz feed to pio-vizd). The words are those of
# ../shared/DESIGN.md and docs/architecture.md. Run it after a change:
#   /usr/bin/python3 docs/architecture.py        (python3-matplotlib, mk/deps.sh)
# The SVG keeps its text as text (svg.fonttype none) and has no date in it,
# so the same script always writes the same file.
import os
import sys

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.fonttype"] = "none"
matplotlib.rcParams["svg.hashsalt"] = "pio-architecture"
matplotlib.rcParams["font.family"] = "DejaVu Sans"
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

HOST = "#f4f6fa"
APP = "#dce9f7"
RANK = "#ffffff"
POOL = "#fdf0d5"
PIOD = "#2f5d8a"
LINK = "#c0392b"
CLIENT = "#e8f4e8"


def box(ax, x, y, w, h, face, edge="#44546a", lw=1.0, r=0.08, z=1):
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0,rounding_size=%g" % r,
                                facecolor=face, edgecolor=edge, linewidth=lw, zorder=z))


def text(ax, x, y, s, size=9, color="#1b2631", weight="normal", ha="center", va="center",
         style="normal", z=5):
    ax.text(x, y, s, fontsize=size, color=color, weight=weight, ha=ha, va=va, style=style,
            zorder=z)


def arrow(ax, a, b, color="#44546a", lw=1.0, style="-|>", both=False, z=3, ls="-"):
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle=("<|-|>" if both else style), mutation_scale=9,
                                 color=color, linewidth=lw, zorder=z, linestyle=ls))


def app(ax, x, y, w, name, ranks, note, h=1.55):
    """An application: its name, its ranks (each linked with libpio), what it is."""
    box(ax, x, y, w, h, APP, z=2)
    text(ax, x + w / 2, y + h - 0.2, name, size=9.5, weight="bold")
    n = len(ranks)
    gap = 0.06
    rw = (w - 0.2 - gap * (n - 1)) / n
    centres = []
    for i, r in enumerate(ranks):
        rx = x + 0.1 + i * (rw + gap)
        box(ax, rx, y + 0.42, rw, 0.62, RANK, r=0.05, z=3)
        text(ax, rx + rw / 2, y + 0.84, r, size=7.5)
        text(ax, rx + rw / 2, y + 0.6, "libpio", size=6.5, color="#566573", style="italic")
        centres.append(rx + rw / 2)
    text(ax, x + w / 2, y + 0.2, note, size=7, color="#34495e")
    return centres


def host(ax, x, name, apps, piod_x, piod_note):
    """One host: its box, applications, the pools, its piod. Returns the piod's box."""
    box(ax, x, 0.35, 6.0, 6.05, HOST, edge="#7f8c8d", lw=1.4, r=0.15, z=0)
    text(ax, x + 3.0, 6.15, name, size=11, weight="bold")
    ranks = []
    for ax_, w, nm, rk, note in apps:
        ranks += app(ax, x + ax_, 3.95, w, nm, rk, note)
    # the pools: one shared-memory buffer pool per process, mapped from the piod
    box(ax, x + 0.2, 2.95, 5.6, 0.5, POOL, edge="#b9770e", z=2)
    text(ax, x + 3.0, 3.2, "shared-memory buffer pools (one per process; bulk bytes)  +  "
         "control socket", size=8)
    for c in ranks:
        arrow(ax, (c, 3.95), (c, 3.47), color="#b9770e", both=True)
    box(ax, x + piod_x, 0.75, 2.4, 1.6, PIOD, edge=PIOD, z=2)
    text(ax, x + piod_x + 1.2, 2.0, "piod", size=12, color="white", weight="bold")
    text(ax, x + piod_x + 1.2, 1.55, piod_note, size=7.5, color="white")
    text(ax, x + piod_x + 1.2, 1.05, "balances USER / STATIC / DYNAMIC", size=7, color="#d6eaf8")
    arrow(ax, (x + piod_x + 1.2, 2.93), (x + piod_x + 1.2, 2.37), color="#b9770e", both=True)
    return x + piod_x, x + piod_x + 2.4


def draw(path):
    fig = plt.figure(figsize=(13.5, 7.3))
    ax = fig.add_axes([0, 0, 1, 1])
    ax.set_xlim(0, 15.2)
    ax.set_ylim(-0.75, 7.45)
    ax.axis("off")

    text(ax, 7.6, 7.1, "PIO: applications on two machines, one piod each, a bundle of links "
         "between them", size=12.5, weight="bold")

    # host A: a simulation with its viz feed, pcp, GAS, anco
    _, a_right = host(ax, 0.2, "host A (system A)", [
        (0.15, 2.15, "sim", ["rank 0", "rank 1", "rank 2"], "MPI job; viz feed (PIO_Feed_*)"),
        (2.38, 0.95, "pcp", ["proc 0"], "parallel copy"),
        (3.41, 2.44, "GAS + anco", ["gas-disp.", "anco 0", "anco 1"], "pgas: writes; read cache"),
    ], 3.4, "channels, rooms, pools")
    # host B: the partners: pio-vizd, the file service, pfs servers, anco
    b_left, _ = host(ax, 9.0, "host B (system B)", [
        (0.15, 2.15, "pio-vizd", ["thread 0", "thread 1", "thread 2"], "assembles steps: PNG, "
         "page, VTK"),
        (2.38, 1.7, "pfs", ["pfs-mds", "pfs-iod"], "file system (striped)"),
        (4.16, 1.69, "anco", ["anco 2", "anco 3"], "one-sided gets"),
    ], 0.2, "+ file service (pcp)")

    text(ax, 1.85, 1.55, "PIO_Init: a process joins over\nthe control socket and maps the\n"
         "pool its piod made for it\n(owner-only); bulk bytes never\ngo through a socket", size=7.5,
         color="#34495e")
    text(ax, 13.35, 1.55, "pcp writes under the piod's\nexport root; pfs-mds and\npfs-iod are "
         "PIO applications;\none piod per host, several\nhosts may form one system", size=7.5,
         color="#34495e")

    # the bundle: K channels, one TCP connection on each link
    k = 4
    for i in range(k):
        y = 1.95 - i * 0.3
        arrow(ax, (a_right + 0.02, y), (b_left - 0.02, y), color=LINK, lw=2.0, both=True)
        text(ax, (a_right + b_left) / 2, y + 0.1, "channel %d" % i, size=7, color=LINK)
    text(ax, (a_right + b_left) / 2, 2.45, "bundle: K channels,\none TCP connection per link",
         size=8.5, color=LINK, weight="bold")
    text(ax, (a_right + b_left) / 2, 0.72, "request / reply / data\n(the receiver picks the "
         "channels)", size=7.5, color="#641e16")

    # partners: who talks to whom, through the piods
    pairs = [("sim  \u2192  pio-vizd", "viz feed"), ("pcp  \u2192  piod B", "file service"),
             ("GAS  \u2192  pfs-iod", "gathered writes"), ("anco  \u2194  anco", "cache blocks")]
    text(ax, 7.6, 5.95, "partners\n(through the piods)", size=8, weight="bold", color="#1e8449")
    for i, (p, what) in enumerate(pairs):
        box(ax, 6.5, 5.0 - i * 0.55, 2.2, 0.45, CLIENT, edge="#1e8449", r=0.05, z=2)
        text(ax, 7.6, 5.3 - i * 0.55, p, size=7.5)
        text(ax, 7.6, 5.1 - i * 0.55, what, size=6.5, color="#566573", style="italic")

    text(ax, 7.6, -0.25, "Applications call PIO_Send / PIO_Recv (C, Fortran, Python) and never see "
         "an address, a socket or a link; every client above libpio talks through pio.h only.",
         size=8.5, color="#34495e")
    text(ax, 7.6, -0.55, "pio-info shows what a piod sees: channels, rates, applications "
         "(--watch: live).", size=8.5, color="#34495e")
    fig.savefig(path, metadata={"Date": None, "Creator": None})
    if path.endswith(".svg"):  # a browser without DejaVu falls back to a sans font
        with open(path) as f:
            svg = f.read()
        with open(path, "w") as f:
            f.write(svg.replace("'DejaVu Sans'", "'DejaVu Sans', Helvetica, Arial, sans-serif"))
    return fig


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "architecture.svg")
    draw(out)
