"""The architecture as a test: imports point one way, the public API is pinned, and each
subpackage stays within a line budget (STYLE.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import llmsizer

SRC = Path(llmsizer.__file__).parent

# What each part may import from llmsizer (besides itself).
ALLOWED: dict[str, set[str]] = {
    "units": set(),
    "errors": set(),
    "specs": {"units"},
    "perf": {"units", "specs"},
    "records": {"units"},
    "metrics": {"units", "records"},
    "workload": {"units"},
    "sim": {"units", "records", "workload"},
    "bench": {"units", "records", "metrics", "workload", "report"},
    "report": {"units", "records", "metrics"},
    "sizing": {"units", "specs", "perf", "sim", "records", "metrics", "workload", "report"},
}
EDGES = {"config", "cli", "__init__"}  # the edges may import anything
SHARED = {"errors"}  # how invalid input is reported: anyone may use it

# Lines per subpackage (code, comments and docstrings): growth past these needs a reason.
BUDGET = {
    "specs": 1300,
    "perf": 2600,
    "sim": 1600,
    "workload": 1300,
    "bench": 3100,  # failure kinds and a total stream reader: no server reply ends a run
    "report": 2000,
    "sizing": 5200,  # predict + plan + calibration: split calibration out when it grows
    "cli": 1100,
}


def _part(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0].removesuffix(".py")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            if name.startswith("llmsizer."):
                found.add(name.split(".")[1])
    return found


MODULES = sorted(p for p in SRC.rglob("*.py") if _part(p) not in EDGES)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_point_one_way(path: Path) -> None:
    part = _part(path)
    bad = _imports(path) - ALLOWED.get(part, set()) - SHARED - {part}
    assert not bad, f"{path.relative_to(SRC)} ({part}) imports {sorted(bad)}"


def test_public_api_is_pinned() -> None:
    assert sorted(llmsizer.__all__) == sorted(
        [
            "Batch",
            "Engine",
            "EngineConfig",
            "FixedTicks",
            "LinearStepCost",
            "PredictSpec",
            "RequestRecord",
            "Slo",
            "Workload",
            "WorkloadSpec",
            "__version__",
            "make_workload",
            "predict",
            "simulate",
            "summarize",
        ]
    )
    for name in llmsizer.__all__:
        assert hasattr(llmsizer, name)


@pytest.mark.parametrize(("part", "budget"), sorted(BUDGET.items()))
def test_line_budget(part: str, budget: int) -> None:
    lines = sum(len(p.read_text().splitlines()) for p in (SRC / part).rglob("*.py"))
    assert lines <= budget, f"{part} has {lines} lines, budget {budget}"
