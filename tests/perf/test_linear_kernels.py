"""A linear-layer kernel other than the engine's default (`perf.linear_kernels`): TensorRT-LLM
1.0-1.2's block-FP8 GEMM on SM100 does the linear layers' FLOPs at its fraction of the
default's rate; their weight reads, and every other part of a step, do not move."""

from dataclasses import replace

import pytest

from llmsizer.instance import PredictSpec, make_instance
from llmsizer.perf import Deployment, StepModel
from llmsizer.perf.batch_shape import aggregate, decode_batch, prefill_batch
from llmsizer.perf.efficiency import EfficiencyFactors
from llmsizer.perf.linear_kernels import RELATIVE_RATE, linear_rate_scale
from llmsizer.perf.step import StepTerms, step_terms

FITTED = EfficiencyFactors(gemm_compute_efficiency=0.75, gemm_bandwidth_efficiency=0.65)


def model(kernel: str | None, gpu: str = "b200", dp: int = 1) -> StepModel:
    """DeepSeek-R1 on 8 GPUs: TP 8, or (`dp` 8) TensorRT-LLM's attention-DP ranks, tp 1."""
    layout = (
        {"tensor_parallel_size": 8}
        if dp == 1
        else {"tensor_parallel_size": 1, "attention_dp_size": dp, "expert_parallel_size": dp}
    )
    d = Deployment.from_names("deepseek-r1", gpu, "fp8_block", **layout)
    return StepModel(replace(d, linear_kernel=kernel), FITTED)


def terms(kernel: str | None, batch, dp: int = 1) -> StepTerms:
    c = model(kernel, dp=dp).constants
    return StepTerms._make(step_terms(c, aggregate(batch, c.window)))


@pytest.mark.parametrize("batch", [prefill_batch(1, 8_192), prefill_batch(1, 1_024)])
def test_a_prompt_steps_linear_flops_run_at_the_kernels_fraction(batch) -> None:
    default, swap_ab = terms(None, batch), terms("fp8_swap_ab", batch)
    assert swap_ab.linear_compute_s == pytest.approx(default.linear_compute_s / 0.15)
    for name in StepTerms._fields:
        if name != "linear_compute_s":
            assert getattr(swap_ab, name) == getattr(default, name), name


def test_an_8k_prompt_costs_what_the_aic_kernel_table_says() -> None:
    """DeepSeek-R1 at TP 8 on a B200, one 8,192-token prompt: the measured module forward
    (TensorRT-LLM 1.2.0rc5, AIC) spends 1.91 ms a layer in the six linear shapes at
    0.36 PFLOP/s; at the fitted 0.75 of the FP8 peak times 0.15 the linear part takes its
    FLOPs at 0.51 PFLOP/s: within a factor 2 of the table (the model counts 537 GFLOP a
    layer where the six shapes are 690: TensorRT-LLM keeps the fused q_a / kv_a projection
    whole on each rank), where the default kernel priced it 12x faster than the table."""
    batch = prefill_batch(1, 8_192)
    before, after = model(None), model("fp8_swap_ab")
    per_layer_before = before.breakdown(batch).part("linear").time_s / 61
    per_layer_after = after.breakdown(batch).part("linear").time_s / 61
    measured_s = 1.906e-3
    assert per_layer_before < measured_s / 10
    assert measured_s / 2 < per_layer_after < measured_s
    assert after(batch) > before(batch)


def test_a_small_decode_step_reads_weights_and_is_unchanged() -> None:
    batch = decode_batch(8, 2_000)
    assert model("fp8_swap_ab")(batch) == model(None)(batch)


def _instance(precision: str, kernel: str | None = None):
    return make_instance(
        PredictSpec.model_validate({
            "model": "deepseek-r1", "gpu": "b200", "precision": precision, "tp": 8,
            "kv_cache_dtype": "fp8", "isl": 1024, "osl": 16, "concurrency": 1,
            "engine": {"engine": "trtllm"}, "linear_kernel": kernel,
        })
    )  # fmt: skip


def test_an_instance_runs_the_kernel_its_spec_names_and_today_the_default() -> None:
    assert _instance("fp8_block", "fp8_swap_ab").deployment.linear_kernel == "fp8_swap_ab"
    assert _instance("fp8_block").deployment.linear_kernel is None  # a plan for today's engine


def test_a_kernel_for_another_weight_format_is_an_error_naming_both() -> None:
    with pytest.raises(ValueError, match="'fp8_swap_ab' runs fp8_block weights; precision is fp4"):
        _instance("fp4", "fp8_swap_ab")


def test_unset_is_the_default_and_an_unknown_kernel_is_an_error() -> None:
    assert linear_rate_scale(None, 8) == 1.0
    assert linear_rate_scale("fp8_swap_ab", 8) == RELATIVE_RATE["fp8_swap_ab"][8]
    with pytest.raises(ValueError, match="linear_kernel 'cublas9' has no price; allowed: fp8_"):
        model("cublas9")


def test_the_kernels_rate_follows_the_ranks_shard() -> None:
    """AIC's table at DeepSeek's shapes: the kernel nears BF16's fraction of peak on whole
    layers (an attention-DP rank, o_proj 7,168 x 16,384) and falls as TP shards them; a
    shard between the table's takes the entry below it."""
    rates = [linear_rate_scale("fp8_swap_ab", tp) for tp in (1, 2, 3, 4, 8, 16)]
    assert rates == [0.42, 0.30, 0.30, 0.20, 0.15, 0.15]
    with pytest.raises(ValueError, match="tensor_parallel_size must be >= 1, got 0"):
        linear_rate_scale("fp8_swap_ab", 0)


def test_an_attention_dp_ranks_prompt_step_runs_the_kernel_at_its_whole_layer_rate() -> None:
    """A TensorRT-LLM DEP8 prefill rank (tp 1): the linear layers at 0.42 of the default's
    rate, not TP 8's 0.15 (section 46: every disaggregated DeepSeek FP8 prefill pool)."""
    batch = prefill_batch(1, 8_192)
    default, swap_ab = terms(None, batch, dp=8), terms("fp8_swap_ab", batch, dp=8)
    assert swap_ab.linear_compute_s == pytest.approx(default.linear_compute_s / 0.42)
