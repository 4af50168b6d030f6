"""`bench` measures real servers and must not depend on the simulator or the performance model."""

from __future__ import annotations

import ast
from pathlib import Path

import llmsizer.bench

FORBIDDEN = ("llmsizer.sim", "llmsizer.perf")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_bench_imports_neither_sim_nor_perf() -> None:
    root = Path(llmsizer.bench.__file__).parent
    files = sorted(root.rglob("*.py"))
    assert len(files) > 10
    for path in files:
        bad = [m for m in imported_modules(path) if m.startswith(FORBIDDEN)]
        assert not bad, f"{path.relative_to(root)} imports {bad}"


def test_public_api_is_pinned() -> None:
    assert sorted(llmsizer.bench.__all__) == sorted(
        [
            "BenchError",
            "BenchResult",
            "BenchSpec",
            "ClientOptions",
            "Endpoint",
            "LoadPoint",
            "PromptError",
            "RequestPlan",
            "SseEvent",
            "SseParser",
            "format_result",
            "read_results",
            "result_to_json",
            "run_benchmark",
            "run_benchmark_async",
            "send_request",
            "write_results",
        ]
    )
