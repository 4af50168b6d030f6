"""`bench/flashinfer_dispatch.py`: the stubs it times FlashInfer's Python behind, and its clock
(docs/aic_measurement.md section 65)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType, SimpleNamespace

import pytest


def test_only_the_compiled_dependencies_are_stubbed(
    bench_script: Callable[[str], ModuleType],
) -> None:
    finder = bench_script("flashinfer_dispatch")._StubFinder()
    spec = finder.find_spec("tvm_ffi.core", None)
    assert spec is not None
    module = finder.create_module(spec)
    assert module.__name__ == "tvm_ffi.core"
    assert module.anything() is not None  # any attribute is callable, as FlashInfer needs
    assert finder.find_spec("torch", None) is None  # the real one: FlashInfer's Python runs
    assert finder.find_spec("flashinfer.utils", None) is None


def test_per_call_time_is_the_mean_after_warm_up(
    bench_script: Callable[[str], ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    script = bench_script("flashinfer_dispatch")
    clock = iter([10.0, 10.002])  # 2 ms over the timed calls
    monkeypatch.setattr(script, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    calls: list[int] = []
    us = script.per_call_us(lambda: calls.append(1), 1000)
    assert len(calls) == 50 + 1000  # the warm-up is not timed
    assert us == pytest.approx(2.0)  # 2 ms / 1000 calls
