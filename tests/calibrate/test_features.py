"""Step features: re-pricing a step for any factors equals the step model itself."""

import random

import numpy as np
import pytest

from llmsizer.calibrate.features import (
    COMPUTE,
    FEATURES,
    MEMORY,
    NUM_FEATURES,
    STEPS,
    StepFeaturizer,
    price,
)
from llmsizer.perf.batch_shape import decode_batch, prefill_batch
from llmsizer.perf.efficiency import EfficiencyFactors
from tests.perf.conftest import make_step_model
from tests.perf.test_step import random_batch

CONFIGS = [
    ("llama-3.1-8b", "h100-sxm", "fp8", 1, 1),
    ("llama-3.1-70b", "h200", "bf16", 4, 2),
    ("mixtral-8x7b", "a100-sxm-80gb", "fp16", 2, 1),
    ("mistral-7b", "l40s", "fp8", 1, 1),  # sliding window
    ("deepseek-v3", "b200", "fp8", 8, 1),  # MLA, shared experts
    ("gpt-oss-20b", "h100-sxm", "mxfp4", 1, 1),
    ("glm-5", "b200", "fp8", 8, 1),  # sparse-attention indexer
    ("kimi-k2.5", "b200", "int4_g32", 8, 1),  # weight-only experts
]


def random_factors(rng: random.Random) -> EfficiencyFactors:
    values = {
        name: rng.uniform(0.05, 1.0) if name.endswith("efficiency") else rng.uniform(0, high)
        for name, (_, high) in EfficiencyFactors.bounds().items()
        if name != "experts_tile_rows"  # the engine's kernel, fixed in the features
    }
    return EfficiencyFactors(**values)


@pytest.mark.parametrize(("model", "gpu", "precision", "tp", "pp"), CONFIGS)
def test_price_of_features_equals_the_step_model(model, gpu, precision, tp, pp):
    rng = random.Random(11)
    step = make_step_model(
        model, gpu, precision, tensor_parallel_size=tp, pipeline_parallel_size=pp
    )
    featurize = StepFeaturizer(step.deployment)
    for _ in range(100):
        batch, eff = random_batch(rng), random_factors(rng)
        expected = make_step_model(
            model, gpu, precision, eff, tensor_parallel_size=tp, pipeline_parallel_size=pp
        )(batch)
        assert float(price(featurize(batch), eff)) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_an_empty_batch_has_no_features_and_costs_nothing(llama8b):
    features = StepFeaturizer(llama8b.deployment)(decode_batch(0, 0))
    assert features.shape == (NUM_FEATURES,)
    assert not features.any()
    assert float(price(features, EfficiencyFactors())) == 0.0


def test_features_are_affine_in_aggregates_for_one_shape(llama8b):
    """Steps of one shape: the features of their mean aggregates times their count equal
    the sum of their features (what a trace stores)."""
    featurize = StepFeaturizer(llama8b.deployment)
    batches = [decode_batch(32, context) for context in (100, 900, 4000)]
    aggregates = np.array([featurize.aggregates(b) for b in batches])
    summed = sum(featurize(b) for b in batches)
    grouped = 3 * featurize.features(aggregates.mean(axis=0))[0]
    np.testing.assert_allclose(grouped, summed, rtol=1e-12)
    assert grouped[STEPS] == 3


def test_the_roofline_columns_are_times_at_full_peak(llama8b):
    d = llama8b.deployment
    features = StepFeaturizer(d)(prefill_batch(1, 4096))
    linear = 0  # ROOFLINE_PARTS[0]
    flops = 4096 * llama8b.constants.dense_flops_per_token
    assert features[COMPUTE][linear] == pytest.approx(flops / d.matmul_flops_per_s)
    assert features[MEMORY][linear] > 0


def test_price_of_many_rows_equals_the_price_of_each():
    """The vectorised price is the scalar one row by row (same algebra over a block)."""
    rng = random.Random(5)
    featurize = StepFeaturizer(make_step_model("mixtral-8x7b", tensor_parallel_size=2).deployment)
    rows = np.array([featurize(random_batch(rng)) for _ in range(50)])
    eff = random_factors(rng)
    block = price(rows, eff)
    assert block.shape == (50,)
    for row, time_s in zip(rows, block, strict=True):
        assert float(price(row, eff)) == pytest.approx(time_s, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize(("tp", "pp"), [(1, 1), (4, 1), (2, 4)])
def test_the_count_columns_count_hops_layers_and_steps(tp, pp):
    step = make_step_model(
        "llama-3.1-70b", "h200", tensor_parallel_size=tp, pipeline_parallel_size=pp
    )
    featurize = StepFeaturizer(step.deployment)
    layers = step.deployment.model.num_layers
    allreduce_hops = (2 * layers) * 2 if tp > 1 else 0  # two per layer, 2 hops on NVSwitch
    cases = ((decode_batch(8, 1000), 0, 8), (prefill_batch(1, 100), layers, 1))
    for batch, prompt_layers, sampled in cases:
        row = dict(zip(FEATURES, featurize(batch), strict=True))
        assert row["sequences_overhead_s"] == sampled  # rows that sample a token
        assert row["allreduce_latency_s"] == allreduce_hops
        assert row["send_latency_s"] == pp - 1
        assert row["step_overhead_s"] == 1
        assert row["layers_overhead_s"] == layers
        assert row["prefill_layers_overhead_s"] == prompt_layers


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_features_price_padded_and_eager_steps_as_the_step_model(engine):
    """With an engine's CUDA graphs, re-pricing the features still equals the step model:
    how a step runs depends on its shape only (`StepFeaturizer`)."""
    from llmsizer.perf.cuda_graphs import capture_plan
    from llmsizer.perf.step import StepModel

    rng = random.Random(5)
    d = make_step_model("mixtral-8x7b", "h100-sxm", "bf16", tensor_parallel_size=2).deployment
    graphs = capture_plan(
        engine, max_num_seqs=64, max_num_batched_tokens=8192,
        gpu_memory_bytes=d.gpu.memory_bytes, tensor_parallel_size=2,
    )  # fmt: skip
    featurize = StepFeaturizer(d, graphs)
    for n in (3, 63, 129, 700):
        eff = random_factors(rng)
        for batch in (decode_batch(n, 400), random_batch(rng)):
            expected = StepModel(d, eff, graphs)(batch)
            assert float(price(featurize(batch), eff)) == pytest.approx(expected, rel=1e-12)
