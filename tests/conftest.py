"""What every test may use: the one way to reach `../shared`, the data beside the repository.

`../shared` (relative to the repository root) holds public data too large to commit: the
calibration set and the request traces. A test that reads it says so with
`@pytest.mark.shared` and builds its paths with `shared_path`. When the folder is absent
such a test is skipped, with "needs ../shared (<path>)" in the summary, except when the
environment variable `CI` is set (non-empty): CI always has `../shared`, so there the test
fails instead of skipping unseen.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

SHARED_DIR = Path(__file__).resolve().parents[2] / "shared"
BENCH_DIR = Path(__file__).resolve().parents[1] / "bench"


def shared_path(*parts: str) -> Path:
    """A path under `../shared`; the tests that read it carry `@pytest.mark.shared`."""
    return SHARED_DIR.joinpath(*parts)


def require_shared(shared_dir: Path, *, ci: bool) -> None:
    """Return if `shared_dir` is a folder; otherwise skip the test, or fail it when `ci`."""
    if shared_dir.is_dir():
        return
    reason = f"needs ../shared ({shared_dir})"
    if ci:
        pytest.fail(f"{reason}, and CI is set: CI always has ../shared", pytrace=False)
    pytest.skip(reason)


@pytest.hookimpl(tryfirst=True)  # before any fixture reads a file
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("shared") is not None:
        require_shared(SHARED_DIR, ci=bool(os.environ.get("CI")))


@pytest.fixture
def bench_script(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], ModuleType]:
    """`bench_script("tp_scaling")`: `bench/tp_scaling.py` imported as a module, with `bench/`
    on the path for the neighbours it imports (`validate_aic`); both undone after the test."""

    def load(name: str) -> ModuleType:
        monkeypatch.syspath_prepend(str(BENCH_DIR))
        spec = importlib.util.spec_from_file_location(name, BENCH_DIR / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, name, module)
        spec.loader.exec_module(module)
        return module

    return load
