"""What each lever buys: the physical directions (a cheaper format never needs more GPUs,
sparsity never more), the precisions each GPU runs, and the warnings for fallbacks."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from llmsizer.instance import DeploymentSpec
from llmsizer.perf import Deployment
from llmsizer.perf.levers import fallback_note, quality_note, search_precisions
from llmsizer.report.plan_html import plan_html
from llmsizer.report.plan_text import plan_text
from llmsizer.sizing.candidates import CandidatesSpec
from llmsizer.sizing.curve import CURVE
from llmsizer.sizing.levers import BASELINE, COMBINED
from llmsizer.sizing.limits import Metric
from llmsizer.sizing.plan import plan
from llmsizer.sizing.plan_data import plan_data
from llmsizer.sizing.usecase import UseCase
from llmsizer.specs import Precision, get_gpu
from tests.sizing.cases import SMALL_LLAMA_8B

FAST = SMALL_LLAMA_8B


def usecase(**changes: Any) -> UseCase:
    return UseCase.model_validate({**FAST, **changes})


def gpus_by_lever(u: UseCase) -> dict[str, int | None]:
    return {r.lever: None if r.sizing is None else r.sizing.num_gpus for r in plan(u).levers}


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"limits": {"ttft_ms": 1000}},
        {"limits": {"tpot_ms": 15}},
        {"load": {"peak_rps": 10}},
        {"output": 800, "limits": {"e2el_ms": 20000}},
    ],
)
def test_fp8_and_sparsity_never_need_more_gpus_than_bf16(changes: dict[str, Any]) -> None:
    gpus = gpus_by_lever(usecase(**changes))
    base = gpus[BASELINE]
    assert base is not None
    for lever in ("fp8", "2:4 sparsity", COMBINED):
        found = gpus[lever]
        assert found is not None and found <= base, (lever, gpus)
    assert gpus["speculation"] is not None
    assert gpus[COMBINED] == min(g for g in gpus.values() if g is not None)


def test_the_table_marks_what_the_use_case_does_not_accept() -> None:
    result = plan(usecase(candidates={**FAST["candidates"], "precisions": ["bf16", "fp8"]}))
    accepted = {r.lever: r.accepted for r in result.levers}
    assert accepted[BASELINE] and accepted["fp8"]
    assert not accepted["int4"] and not accepted["2:4 sparsity"] and not accepted["speculation"]
    # the answer itself only uses accepted settings; FP8 was searched, so it can win
    w = result.winner
    assert w is not None and w.best is not None and not w.best.config.sparsity
    text = plan_text(plan_data(result))
    assert "What each lever buys on h100-sxm" in text and "usually lossless" in text
    page = plan_html(plan_data(result))
    assert "<h2>What each lever buys</h2>" in page and "best combination" in page


def test_levers_off_leaves_no_table() -> None:
    result = plan(usecase(search={**FAST["search"], "levers": False}))
    assert result.levers == () and "What each lever buys" not in plan_text(plan_data(result))


def test_precisions_follow_the_gpu() -> None:
    def names(gpu: str) -> list[str]:
        return [p.value for p in search_precisions(get_gpu(gpu))]

    assert names("a100-sxm-80gb") == ["bf16", "int4"]  # no FP8 tensor cores on Ampere
    assert names("h100-sxm") == ["bf16", "fp8", "int4"]
    assert names("b200") == ["bf16", "fp8", "fp4", "int4"]
    c = CandidatesSpec(gpus=["a100-sxm-80gb", "b200"], precisions=["auto"])
    assert c.precisions_for("b200") == names("b200")
    assert {s.precision for s in c.configs("llama-3-8b") if s.gpu == "a100-sxm-80gb"} == {
        "bf16",
        "int4",
    }


@pytest.mark.parametrize(
    ("gpu", "precision", "fallback"),
    [
        ("h100-sxm", "fp4", "h100-sxm has no fp4 tensor cores"),
        ("a100-sxm-80gb", "fp8", "a100-sxm-80gb has no fp8 tensor cores"),
        ("h100-sxm", "fp8", None),
        ("a100-sxm-80gb", "int4", None),  # weight-only by design, not a fallback
    ],
)
def test_a_fallback_is_named(gpu: str, precision: str, fallback: str | None) -> None:
    note = fallback_note(Deployment.from_names("llama-3-8b", gpu, precision))
    if fallback is None:
        assert note is None
    else:
        assert note is not None and note.startswith(fallback) and "bf16 math" in note


def test_plan_warns_about_a_fallback_it_searches() -> None:
    u = usecase(candidates={**FAST["candidates"], "precisions": ["fp4"]})
    result = plan(u)
    assert any("no fp4 tensor cores" in n for n in result.notes)
    assert "warning: h100-sxm has no fp4 tensor cores" in plan_text(plan_data(result))


def test_quality_notes_separate_lossless_from_checked() -> None:
    assert quality_note("bf16") == "lossless"
    assert "accuracy check" in quality_note(Precision.INT4)
    assert "accuracy check" in quality_note("nvfp4")


def test_sparse_configurations_are_labelled() -> None:
    spec = DeploymentSpec(model="llama-3-8b", gpu="h100-sxm", sparsity=True)
    assert "2:4" in spec.label()


def test_speculation_buys_most_where_decode_is_the_limit() -> None:
    """A tight TPOT limit at low load keeps batches small, where speculation's steps yield
    ~2.5 tokens for little more than one step's cost: it needs fewer GPUs (14 -> 8 on the
    session 14 factors, where BF16 TP1 decodes one sequence in ~6 ms)."""
    u = usecase(limits={"tpot_ms": 6}, load={"peak_rps": 5}, output=400)
    gpus = gpus_by_lever(u)
    base, spec = gpus[BASELINE], gpus["speculation"]
    assert base is not None and spec is not None and spec < base, gpus


def test_the_plan_searches_draft_tokens_it_is_given() -> None:
    cands = {**FAST["candidates"], "speculative_tokens": [0, 2]}
    result = plan(usecase(candidates=cands, search={**FAST["search"], "levers": False}))
    ks = {
        r.config.speculative.num_speculative_tokens if r.config.speculative else 0
        for r in result.results
    }
    assert ks == {0, 2}


def test_adaptive_curve_points_land_where_latency_jumps() -> None:
    """Three extra points halve the steepest latency jumps: the steepest ratio between
    neighbours on the final curve is below the steepest on the fixed fractions alone."""
    u = usecase(search={**FAST["search"], "curves": True, "levers": False})
    result = plan(u)
    best = result.winner.best if result.winner else None
    assert best is not None and best.capacity is not None
    pts = sorted(best.curve, key=lambda p: p.offered_rate)

    def steepest(points: list[Any]) -> float:
        ttft = [result.limits.value_s(p.latencies, Metric.TTFT) for p in points]
        return max(b / a for a, b in itertools.pairwise(ttft))

    fixed = [p for p in pts if any(abs(p.offered_rate - f * best.capacity) < 1e-9 for f in CURVE)]
    assert len(fixed) == len(CURVE) and len(pts) >= len(CURVE) + 3
    assert steepest(pts) < steepest(fixed)
