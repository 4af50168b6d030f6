"""Examples run in CI and their committed output must stay current (a diff shows a change)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _load(path: Path):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_notebook_comparison_is_current_and_in_flight_wins() -> None:
    compare = _load(EXAMPLES / "notebook" / "compare.py")
    text = compare.comparison()
    assert text == (EXAMPLES / "notebook" / "comparison.md").read_text()
    throughput_row = next(line for line in text.splitlines() if line.startswith("| req/s"))
    ratio = float(throughput_row.rsplit("|", 2)[-2].strip().rstrip("x"))
    assert ratio > 1.1
