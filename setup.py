"""Packaging hook for the optional compiled simulator core (issue 13; DESIGN.md, "Speed
and scale of one engine").

`pip install .` (and `-e .`) builds plain Python, as pyproject.toml alone would. With
`LLMSIZER_COMPILE=1` the engine loop's modules (below) are compiled with mypyc, unchanged,
into C extensions that shadow the .py files: runs take 1.7-1.9x less CPU. It needs a C
compiler and mypy with the runtime dependencies installed (`pip install -e '.[dev]'`), so:

    LLMSIZER_COMPILE=1 pip install --no-build-isolation .

Every module listed keeps working as plain Python, and the tests pass both ways. A module
an interpreted class subclasses (`sim/arrivals.py`: `fleet.RoutedArrivals`) is left out.
"""

import os
import sys

from setuptools import setup

COMPILED = [
    "src/llmsizer/sim/request.py",
    "src/llmsizer/sim/decode_set.py",
    "src/llmsizer/sim/kv_cache.py",
    "src/llmsizer/sim/batch.py",
    "src/llmsizer/sim/batching/base.py",
    "src/llmsizer/sim/batching/continuous.py",
    "src/llmsizer/sim/batching/static.py",
    "src/llmsizer/sim/engine.py",
    "src/llmsizer/sim/token_times.py",
    "src/llmsizer/perf/batch_shape.py",
    "src/llmsizer/perf/step.py",
]


def ext_modules() -> list:
    if os.environ.get("LLMSIZER_COMPILE", "0") != "1":
        return []
    if {"editable_wheel", "develop"} & set(sys.argv):
        sys.exit(
            "LLMSIZER_COMPILE=1 with an editable install would put compiled modules beside "
            "the sources, shadowing every later edit: use "
            "`LLMSIZER_COMPILE=1 pip install --no-build-isolation .`"
        )
    from mypyc.build import mypycify

    return mypycify(COMPILED, opt_level="3")


setup(ext_modules=ext_modules())
