# conftest.py - fixtures of the pytest suite of the Python package pio.
# SPDX-License-Identifier: BSD-3-Clause
#
# Run by tests/bats/python.bats, which starts a piod pair (A and B, on
# loopback or on the test bed) and sets PIO_SOCK_A / PIO_SOCK_B (and
# PIO_EXPORT_B, the folder B's file service exports, and PIO_VIZD, the
# receiver program). This process joins A once, as application "pyt";
# each test starts its peer, another Python process at B, with peer().
import os
import subprocess
import sys
import textwrap

import pytest

import pio

PRELUDE = """
import sys, os, time
import numpy as np
import pio
pio.init(%r)
me = pio.partner("pyt")
"""


@pytest.fixture(scope="session", autouse=True)
def joined():
    os.environ["PIO_SOCKET"] = os.environ["PIO_SOCK_A"]
    pio.init("pyt", 0, 1)
    yield
    pio.exit()


class Peer:
    """A Python process joined at B as application name, running code
    after PRELUDE (me: its partner handle for this process)."""

    def __init__(self, name, code):
        env = dict(os.environ, PIO_SOCKET=os.environ["PIO_SOCK_B"])
        self.name = name
        self.p = subprocess.Popen([sys.executable, "-c", PRELUDE % name + textwrap.dedent(code)],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True)
        self.partner = pio.partner(name)

    def finish(self, timeout=60):
        out, _ = self.p.communicate(timeout=timeout)
        assert self.p.returncode == 0, "peer %s failed:\n%s" % (self.name, out)
        return out


@pytest.fixture
def peer(request):
    made = []

    def start(code):
        p = Peer("peer_%s" % request.node.name.replace("[", "_").replace("]", "")[:40], code)
        made.append(p)
        return p

    yield start
    for p in made:
        if p.p.poll() is None:
            p.p.kill()
            p.p.wait()
