"""`bench/tp_scaling.py`: TPOT over TP sizes split into the part that shrinks with TP and the
part that does not (docs/aic_measurement.md section 22)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest


@pytest.fixture
def tp_scaling(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    return bench_script("tp_scaling")


def test_split_recovers_the_two_parts(tp_scaling: ModuleType) -> None:
    # 10 ms of weight and KV streaming on one GPU, 4.5 ms of fixed cost on every GPU
    tps = [1, 2, 4, 8]
    tpot = [10.0 / tp + 4.5 for tp in tps]
    bytes_tp1, fixed = tp_scaling.split(tps, tpot)
    assert bytes_tp1 == pytest.approx(10.0)
    assert fixed == pytest.approx(4.5)


def test_split_is_the_least_squares_fit(tp_scaling: ModuleType) -> None:
    # a point off the line moves both parts, and the residuals sum to zero (an intercept)
    tps, tpot = [1, 2, 4], [14.0, 9.0, 7.5]
    bytes_tp1, fixed = tp_scaling.split(tps, tpot)
    residuals = [t - (bytes_tp1 / tp + fixed) for tp, t in zip(tps, tpot, strict=True)]
    assert sum(residuals) == pytest.approx(0.0, abs=1e-9)
    assert 0 < fixed < 7.5 and bytes_tp1 > 0


def test_split_needs_two_tp_sizes(tp_scaling: ModuleType) -> None:
    with pytest.raises(ValueError, match=r"tp sizes \[4\]"):
        tp_scaling.split([4, 4], [7.0, 7.1])


def test_series_keep_three_tp_sizes_at_low_load(tp_scaling: ModuleType) -> None:
    def row(tp: int, c: int, model: str = "llama") -> dict[str, str]:
        return {"backend": "trtllm", "system": "h100_sxm", "model": model, "quant": "bf16",
                "version": "1.0.0rc3", "isl": "1024", "osl": "512", "concurrency": str(c),
                "tp": str(tp), "measured_mean_tpot_ms": "7.0", "p": "8.0"}  # fmt: skip

    rows = [row(tp, 8) for tp in (1, 2, 4)] + [row(tp, 64) for tp in (1, 2, 4)]
    rows += [row(tp, 8, "two-sizes") for tp in (1, 2)]
    kept = tp_scaling.series(rows, "p", max_c=16)
    key = ("trtllm", "h100_sxm", "llama", "bf16", "1.0.0rc3", "1024", "512", "8", "")
    assert list(kept) == [key]
    assert sorted(tp for tp, _, _ in kept[next(iter(kept))]) == [1, 2, 4]


def test_series_split_by_moe_layout(tp_scaling: ModuleType) -> None:
    # TP 2 and 4 launched expert parallel, TP 1, 2 and 4 with tensor-parallel experts: the
    # expert-parallel rows do not form a series of their own (two sizes) nor join the other
    def row(tp: int, ep: int) -> dict[str, str]:
        aic = {"moe_ep_size": str(ep), "attention_dp_size": "1"}
        return {"backend": "vllm", "system": "b200_sxm", "model": "kimi", "quant": "nvfp4",
                "version": "0.17.0", "isl": "1024", "osl": "1024", "concurrency": "4",
                "tp": str(tp), "measured_mean_tpot_ms": "8.0", "p": "9.0",
                "layout": tp_scaling.layout(aic)}  # fmt: skip

    rows = [row(tp, 1) for tp in (1, 2, 4)] + [row(tp, tp) for tp in (2, 4)]
    kept = tp_scaling.series(rows, "p", max_c=16)
    assert [key[-1] for key in kept] == ["tp"]
    assert sorted(tp for tp, _, _ in kept[next(iter(kept))]) == [1, 2, 4]


def test_layout_names_expert_and_attention_parallelism(tp_scaling: ModuleType) -> None:
    assert tp_scaling.layout({"moe_ep_size": "", "attention_dp_size": ""}) == "tp"
    assert tp_scaling.layout({"moe_ep_size": "4", "attention_dp_size": "1"}) == "ep"
    assert tp_scaling.layout({"moe_ep_size": "16", "attention_dp_size": "4"}) == "ep+dp"
