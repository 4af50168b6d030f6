"""Packaging hook: the simulator core, compiled with mypyc by default (issue 13; DESIGN.md,
"Speed and scale of one engine").

`pip install .` (any wheel build) compiles the engine loop's modules and the step model
(below), unchanged, into C extensions that shadow the .py files beside them: runs take
2-3x less CPU time. The build needs mypy (a build requirement in pyproject.toml) and
a C compiler. Without either it says so in the build log and installs the same modules as
plain Python, which pass the same tests. `pip install -e .` stays plain Python: compiled
modules beside the sources would shadow every later edit. `LLMSIZER_COMPILE`: unset, try
and fall back; `0`, plain Python; `1`, compile or fail (CI checks the compiled build so).

Every module listed keeps working as plain Python. A module an interpreted class subclasses
(`sim/arrivals.py`: `fleet.RoutedArrivals`) is left out: mypyc classes cannot be subclassed
by interpreted ones.
"""

import glob
import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

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
    "src/llmsizer/perf/decode_step.py",
    "src/llmsizer/perf/step.py",
]
# The type check behind the compile reads no project config (its pydantic plugin is not in
# an isolated build's environment) and reports errors in the compiled modules only; CI's
# own mypy run checks the whole package.
MYPY_OPTIONS = ["--config-file=", "--ignore-missing-imports", "--follow-imports=silent"]
# setup.py commands that build a wheel or install from one (not metadata, not editable)
BUILDS = {"bdist_wheel", "build", "build_ext", "install"}
MODE = os.environ.get("LLMSIZER_COMPILE", "")


def _skip(reason: str) -> list:
    if MODE == "1":
        sys.exit(f"LLMSIZER_COMPILE=1 but the simulator core cannot be compiled: {reason}")
    _remove_stale_builds()
    print(f"llmsizer: installing plain Python (about 2x slower runs): {reason}", file=sys.stderr)
    return []


def _remove_stale_builds() -> None:
    """A plain build in a checkout that built compiled modules before would otherwise ship
    them: setuptools packs all of `build/lib*`, and they shadow the plain modules."""
    for path in glob.glob("build/lib*/**/*.so", recursive=True):
        os.remove(path)


def ext_modules() -> list:
    commands = set(sys.argv)
    if {"editable_wheel", "develop"} & commands:
        if MODE == "1":
            sys.exit(
                "LLMSIZER_COMPILE=1 with an editable install would put compiled modules beside "
                "the sources, shadowing every later edit: use `LLMSIZER_COMPILE=1 pip install .`"
            )
        return []
    if not BUILDS & commands:
        return []
    if MODE == "0":
        _remove_stale_builds()
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        return _skip("mypyc (mypy) is not installed in the build environment")
    try:
        return mypycify([*MYPY_OPTIONS, *COMPILED], opt_level="3")
    except SystemExit as e:  # mypyc reports a failed type check by exiting
        return _skip(f"mypyc stopped ({e})")


class OptionalBuildExt(build_ext):
    """Builds every compiled module, or none: on a failure (no C compiler, no Python
    headers) it removes what it built, warns, and the plain Python modules are installed."""

    def build_extensions(self) -> None:
        try:
            super().build_extensions()
        except Exception as e:  # distutils' compiler errors share no public base class
            for path in self.get_outputs():
                if os.path.exists(path):
                    os.remove(path)
            _skip(f"the C build failed ({type(e).__name__}: {e})")


setup(ext_modules=ext_modules(), cmdclass={"build_ext": OptionalBuildExt})
