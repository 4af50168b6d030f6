import pytest

from llmsizer.perf.roofline import (
    Bound,
    PartCost,
    StepBreakdown,
    expected_experts_touched,
    mbu,
    mfu,
    ring_allreduce_time_s,
    roofline_time,
)
from llmsizer.specs import get_gpu


def test_roofline_takes_the_slower_limit():
    assert roofline_time(1e12, 1e9, 1e15, 1e12) == pytest.approx(1e-3)  # memory: 1 ms
    assert roofline_time(1e13, 1e9, 1e15, 1e12) == pytest.approx(1e-2)  # compute: 10 ms


def test_ring_allreduce_formula():
    # 4 ranks: 6 steps of latency, 6/4 of the message over the link
    assert ring_allreduce_time_s(4e6, 4, 1e11, 2e-6) == pytest.approx(6 * 2e-6 + 1.5 * 4e-5)
    assert ring_allreduce_time_s(4e6, 1, 1e11, 2e-6) == 0.0


def test_expected_experts_touched_limits():
    # one token touches exactly top_k experts; many tokens touch them all
    assert expected_experts_touched(1, 8, 2) == pytest.approx(2.0)
    assert expected_experts_touched(10_000, 256, 8) == pytest.approx(256.0)
    assert expected_experts_touched(0, 8, 2) == 0.0
    # two tokens: 8 (1 - (6/8)^2) = 3.5
    assert expected_experts_touched(2, 8, 2) == pytest.approx(3.5)


def test_mbu_and_mfu_per_gpu():
    gpu = get_gpu("h100-sxm")
    part = PartCost("linear", 0.01, 1e13, 2e10, Bound.MEMORY)
    breakdown = StepBreakdown(time_s=0.01, stage_interval_s=0.01, parts=(part,), num_tokens=1)
    assert mbu(breakdown, gpu) == pytest.approx(2e10 / 0.01 / 3.35e12)
    assert mfu(breakdown, 989.5e12) == pytest.approx(1e13 / 0.01 / 989.5e12)
    assert breakdown.bound is Bound.MEMORY
    with pytest.raises(KeyError):
        breakdown.part("attention")
