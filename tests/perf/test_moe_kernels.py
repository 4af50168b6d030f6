"""A routed-experts kernel other than the engine's default (`perf.moe_kernels`): it reads the
experts' weights and does their FLOPs at its fraction of the default kernel's rate, and
nothing else moves."""

import pytest

from llmsizer.instance import PredictSpec
from llmsizer.perf.batch_shape import aggregate, decode_batch, prefill_batch
from llmsizer.perf.efficiency import EfficiencyFactors
from llmsizer.perf.moe_kernels import RELATIVE_RATE, experts_rate_scale
from llmsizer.perf.step import StepTerms, step_terms
from tests.perf.conftest import make_step_model

BATCHES = [decode_batch(16, 1_500), decode_batch(256, 1_500), prefill_batch(2, 1_000)]


def terms(moe_backend: str | None, batch, eff: EfficiencyFactors | None = None) -> StepTerms:
    model = make_step_model("minimax-m2.5", "b200", "fp8", eff, tensor_parallel_size=2,
                            moe_backend=moe_backend)  # fmt: skip
    return StepTerms._make(step_terms(model.constants, aggregate(batch, model.constants.window)))


@pytest.mark.parametrize("batch", BATCHES)
def test_the_triton_kernel_runs_the_experts_at_its_fraction_of_the_default(batch) -> None:
    default, triton = terms(None, batch), terms("triton", batch)
    for name in ("experts_memory_s", "experts_compute_s"):
        assert getattr(triton, name) == pytest.approx(getattr(default, name) / 0.86)
    assert triton.experts_memory_s > default.experts_memory_s > 0
    # every other part of the step is the default kernel's, bit for bit
    for name in StepTerms._fields:
        if name not in ("experts_memory_s", "experts_compute_s"):
            assert getattr(triton, name) == getattr(default, name), name


def test_the_kernel_scales_the_fitted_experts_factors_not_replaces_them() -> None:
    batch = decode_batch(64, 1_500)
    for fitted in (0.4, 0.8):
        eff = EfficiencyFactors(
            experts_bandwidth_efficiency=fitted, experts_compute_efficiency=fitted
        )
        slow, fast = terms("triton", batch, eff), terms(None, batch, eff)
        for name in ("experts_memory_s", "experts_compute_s"):
            ratio = getattr(slow, name) / getattr(fast, name)
            assert ratio == pytest.approx(1 / RELATIVE_RATE["triton"])


def test_unset_is_the_engines_default_and_a_dense_model_has_no_experts_to_price() -> None:
    assert experts_rate_scale(None) == 1.0
    dense = make_step_model("llama-3.1-70b", "b200", "fp8", tensor_parallel_size=4,
                            moe_backend="triton")  # fmt: skip
    plain = make_step_model("llama-3.1-70b", "b200", "fp8", tensor_parallel_size=4)
    assert dense(decode_batch(32, 2_000)) == plain(decode_batch(32, 2_000))


def test_an_unknown_kernel_is_an_error_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match="moe_backend 'cutlass_v9' has no price; allowed: triton"):
        make_step_model("minimax-m2.5", "b200", "fp8", tensor_parallel_size=2,
                        moe_backend="cutlass_v9")  # fmt: skip
    with pytest.raises(ValueError, match="allowed: triton"):
        PredictSpec(model="minimax-m2.5", gpu="b200", precision="fp8", tp=2, isl=1024,
                    osl=1024, concurrency=4, moe_backend="marlin2")  # fmt: skip
