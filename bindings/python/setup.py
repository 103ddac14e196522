# setup.py - the Python package pio (cffi over libpio). Builds against an
# installed libpio (pkg-config pio) or the in-tree one (PIO_BUILD=build/dev,
# else build/default); see pio/_build.py. Installs with
#   pip install ./bindings/python          (in a venv, or --break-system-packages)
# and, for make install, python3 setup.py build_ext --inplace (mk/install.mk).
# SPDX-License-Identifier: BSD-3-Clause
import re
import os

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))


def version():
    h = open(os.path.join(HERE, "..", "..", "libpio", "pio.h")).read() \
        if os.path.exists(os.path.join(HERE, "..", "..", "libpio", "pio.h")) else ""
    v = [re.search(r"#define PIO_VERSION_%s (\d+)" % k, h) for k in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(m.group(1) for m in v) if all(v) else "0.1.0"


setup(
    name="pio",
    version=version(),
    description="PIO: parallel data transfer over a bundle of links, from Python",
    license="BSD-3-Clause",
    packages=["pio"],
    python_requires=">=3.9",
    install_requires=["cffi>=1.15"],
    extras_require={"numpy": ["numpy"], "mpi": ["mpi4py"]},
    cffi_modules=["pio/_build.py:ffibuilder"],
    zip_safe=False,
)
