"""A prompt step's routed experts run as a grouped GEMM in whole tiles (`perf.step.padded_rows`,
`EfficiencyFactors.experts_tile_rows`), checked against theory: never below the real rows,
never faster than the real rows' FLOPs or the weights' bytes at peak, monotone in tokens,
the dense roofline when one expert gets every token, and no change to a decode step."""

import dataclasses
import math

import pytest

from llmsizer.perf.batch_shape import aggregate, decode_batch, prefill_batch
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.efficiency import EfficiencyFactors, default_efficiency
from llmsizer.perf.step import StepModel, StepTerms, padded_rows, step_terms
from tests.perf.conftest import make_step_model

BASE = EfficiencyFactors()
MOE = [
    ("deepseek-r1", "b200", "fp8", 8, 1),
    ("qwen3-30b-a3b", "h100-sxm", "bf16", 1, 1),
    ("mixtral-8x7b", "h100-sxm", "bf16", 2, 1),
    ("deepseek-r1", "b200", "fp8", 8, 8),
]


def terms(step: StepModel, num_tokens: int) -> StepTerms:
    c = step.constants
    return StepTerms._make(step_terms(c, aggregate(prefill_batch(1, num_tokens), c.window)))


def test_padded_rows_limits() -> None:
    """At least a tile per touched expert and at least the rows; past half a tile of rows an
    expert, the rows plus half a tile (less half a row) each; continuous between the two."""
    c = make_step_model("qwen3-30b-a3b").constants  # 64-row tiles, routing spread
    assert padded_rows(c, 8.0, 8.0) == 8 * 64  # one row each: a whole tile each
    assert padded_rows(c, 128 * 500.0, 128.0) == 128 * 500 + 128 * 31.5
    half = 128 * 32.5  # the two forms meet at (tile + 1) / 2 rows an expert
    assert padded_rows(c, half, 128.0) == pytest.approx(128 * 64)
    values = [padded_rows(c, r, 128.0) for r in range(0, 200_000, 997)]
    assert all(v >= r for v, r in zip(values, range(0, 200_000, 997), strict=True))
    assert values == sorted(values)


@pytest.mark.parametrize(("model", "gpu", "precision", "tp", "ep"), MOE)
def test_never_faster_than_the_real_rows_or_the_weights_at_peak(model, gpu, precision, tp, ep):
    step = make_step_model(model, gpu, precision, BASE, tensor_parallel_size=tp,
                           expert_parallel_size=ep)  # fmt: skip
    c, m = step.constants, step.deployment.model
    assert m.moe is not None
    peak_flops = c.experts_flops_per_s / BASE.gemm_compute_efficiency
    peak_bytes = c.experts_bytes_per_s / BASE.gemm_bandwidth_efficiency
    for tokens in (1, 64, 1024, 8192, 32768):
        t = terms(step, tokens)
        experts_s = max(t.experts_compute_s, t.experts_memory_s)
        real_flops = m.num_moe_layers * tokens * c.expert_flops_per_token
        touched = min(m.moe.num_experts / ep, tokens * m.moe.num_experts_per_tok)
        least_bytes = m.num_moe_layers * min(touched, 1.0) * c.expert_weight_bytes
        assert experts_s >= real_flops / peak_flops
        assert experts_s >= least_bytes / peak_bytes
        assert t.experts_compute_s >= real_flops / c.experts_flops_per_s


@pytest.mark.parametrize(("model", "gpu", "precision", "tp", "ep"), MOE)
def test_monotone_in_tokens(model, gpu, precision, tp, ep):
    step = make_step_model(model, gpu, precision, BASE, tensor_parallel_size=tp,
                           expert_parallel_size=ep)  # fmt: skip
    times = [terms(step, n).experts_compute_s for n in range(1, 20_000, 113)]
    assert times == sorted(times)
    assert step(prefill_batch(1, 4096)) <= step(prefill_batch(1, 4097))


def one_expert(model: str) -> Deployment:
    """`model` with one routed expert that every token takes (top-1 of 1)."""
    d = Deployment.from_names(model, "h100-sxm", "bf16", tensor_parallel_size=2)
    moe = dataclasses.replace(d.model.moe, num_experts=1, num_experts_per_tok=1)
    return dataclasses.replace(d, model=dataclasses.replace(d.model, moe=moe))


@pytest.mark.parametrize("tokens", [64, 1024, 4096, 1000, 1])
def test_one_expert_with_every_token_is_the_dense_roofline(tokens: int) -> None:
    """Every token in one expert: no routing spread, the GEMM's M is the tokens, padded only
    to the next whole tile; at a whole number of tiles, 2 P T / tp FLOPs exactly."""
    step = StepModel(one_expert("mixtral-8x7b"), BASE)
    c, m = step.constants, step.deployment.model
    dense_s = m.num_moe_layers * 2 * m.expert_params * tokens / 2 / c.experts_flops_per_s
    padded = math.ceil(tokens / 64) * 64
    assert terms(step, tokens).experts_compute_s == pytest.approx(dense_s * padded / tokens)
    if tokens % 64 == 0:
        assert terms(step, tokens).experts_compute_s == pytest.approx(dense_s, rel=1e-12)


@pytest.mark.parametrize(("model", "gpu", "precision", "tp", "ep"), MOE)
def test_a_decode_step_is_not_padded(model, gpu, precision, tp, ep):
    """Decode steps keep their pricing to the bit, whatever the tile (engines run small-M
    kernels from CUDA graphs there; `padded_rows` is for steps with prompt work)."""
    one, wide = (
        make_step_model(model, gpu, precision, BASE.replace(experts_tile_rows=rows),
                        tensor_parallel_size=tp, expert_parallel_size=ep)
        for rows in (1.0, 128.0)
    )  # fmt: skip
    batch = decode_batch(64, 64 * 2000)
    assert wide(batch) == one(batch)
    assert terms(wide, 1024).experts_compute_s > terms(one, 1024).experts_compute_s


def test_the_padding_binds_only_where_the_experts_are_compute_bound() -> None:
    """Qwen3-30B-A3B on one H100 at 1k tokens: 64 rows an expert on average, 1.5x the real
    rows' FLOPs padded (tile 64); the step stays bound by the experts' weights and tokens'
    bytes, so its time is the same as with 1-row tiles. At 16k tokens it is compute-bound,
    and the padding (half a tile in 1024 rows) adds ~3 % to the experts."""
    one, tiled = (
        make_step_model("qwen3-30b-a3b", "h100-sxm", "bf16", BASE.replace(experts_tile_rows=r))
        for r in (1.0, 64.0)
    )
    short_one, short = terms(one, 1024), terms(tiled, 1024)
    assert short.experts_compute_s / short_one.experts_compute_s == pytest.approx(1.49, abs=0.02)
    assert short.experts_memory_s > short.experts_compute_s
    long_one, long = terms(one, 16384), terms(tiled, 16384)
    assert long.experts_compute_s > long.experts_memory_s
    assert long.experts_compute_s / long_one.experts_compute_s == pytest.approx(1.03, abs=0.01)


def test_each_engine_has_its_kernels_tile() -> None:
    assert [default_efficiency(e).experts_tile_rows for e in ("vllm", "sglang", "trtllm")] == [
        64.0,
        128.0,
        128.0,
    ]
    with pytest.raises(ValueError, match="experts_tile_rows"):
        EfficiencyFactors(experts_tile_rows=0.5)


def test_mfu_counts_the_real_rows_not_the_tiles() -> None:
    """`breakdown` and `measure` count the real rows' FLOPs (as they leave out CUDA-graph
    padding); the step's time is the padded tiles'."""
    step = make_step_model("qwen3-30b-a3b", "h100-sxm", "bf16", BASE)
    c, batch = step.constants, prefill_batch(1, 1024)
    experts = next(p for p in step.breakdown(batch).parts if p.name == "experts")
    real = c.num_moe_layers * 1024 * c.expert_flops_per_token
    assert experts.flops == pytest.approx(real, rel=1e-12)
    time_s, flops, _ = step.measure(batch)
    assert time_s == step(batch)
    assert flops == pytest.approx(sum(p.flops for p in step.breakdown(batch).parts), rel=1e-12)
    assert terms(step, 1024).experts_compute_s * c.experts_flops_per_s > 1.4 * real
