"""The routed experts' compute efficiency is a prompt-side factor: a decode step reads the
experts' weights (memory-bound), a prompt step of thousands of tokens multiplies them; the
AIC fit fits it in every group (`calibrate.aic_fit.PROMPT`, docs/aic_measurement.md
section 16)."""

import pytest

from llmsizer.perf.batch_shape import decode_batch, prefill_batch
from llmsizer.perf.efficiency import EfficiencyFactors
from tests.perf.conftest import make_step_model

BASE = EfficiencyFactors()
SLOW = BASE.replace(experts_compute_efficiency=BASE.gemm_compute_efficiency / 4)
MOE = [("deepseek-r1", 8), ("minimax-m2.5", 4)]


@pytest.mark.parametrize(("model", "tp"), MOE)
def test_a_decode_step_does_not_see_it(model: str, tp: int) -> None:
    batch = decode_batch(64, 64 * 2000)
    base, slow = (
        make_step_model(model, "b200", "fp8", e, tensor_parallel_size=tp) for e in (BASE, SLOW)
    )
    assert slow(batch) == base(batch)


@pytest.mark.parametrize(("model", "tp"), MOE)
def test_a_long_prompt_step_does_and_never_beats_its_flops_at_peak(model: str, tp: int) -> None:
    """The step slows, by at most the experts' compute at the lower efficiency, and stays
    above the time of its FLOPs at the GPU's peak (the roofline's compute limit)."""
    batch = prefill_batch(1, 16384)
    base, slow = (
        make_step_model(model, "b200", "fp8", e, tensor_parallel_size=tp) for e in (BASE, SLOW)
    )
    assert slow(batch) > base(batch)
    experts = next(p for p in slow.breakdown(batch).parts if p.name == "experts")
    assert slow(batch) - base(batch) <= experts.time_s
    flops = sum(p.flops for p in slow.breakdown(batch).parts)
    peak = slow.constants.experts_flops_per_s / SLOW.experts_compute_efficiency
    assert slow(batch) >= flops / peak


def test_a_dense_model_has_no_experts_to_slow() -> None:
    batch = prefill_batch(1, 16384)
    base, slow = (
        make_step_model("llama-3.1-70b", "b200", "fp8", e, tensor_parallel_size=4)
        for e in (BASE, SLOW)
    )
    assert slow(batch) == base(batch)
