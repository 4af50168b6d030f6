"""What each engine's memory fraction is a fraction of (`perf.memory.MemoryRule`)."""

from __future__ import annotations

import pytest

from llmsizer.instance import DeploymentSpec, make_instance
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.memory import DoesNotFitError, MemoryRule, plan_memory


@pytest.fixture
def llama() -> Deployment:
    return Deployment.from_names("llama-3.1-70b", "h100", "fp8", tensor_parallel_size=2)


def test_vllm_takes_weights_activations_and_runtime_off_its_share_of_all_memory(llama):
    plan = plan_memory(llama, 0.9, rule=MemoryRule.TOTAL)
    rest = plan.weight_bytes + plan.activation_bytes + plan.runtime_overhead_bytes
    assert plan.kv_cache_bytes == pytest.approx(0.9 * plan.gpu_memory_bytes - rest)


def test_sglang_static_fraction_holds_weights_and_kv_with_activations_outside(llama):
    total = plan_memory(llama, 0.9, rule=MemoryRule.TOTAL)
    static = plan_memory(llama, 0.9, rule=MemoryRule.STATIC)
    assert static.kv_cache_bytes - total.kv_cache_bytes == pytest.approx(total.activation_bytes)


def test_trtllm_takes_its_fraction_of_the_memory_left_free(llama):
    free = plan_memory(llama, 0.9, rule=MemoryRule.FREE)
    left = free.gpu_memory_bytes - (
        free.weight_bytes + free.activation_bytes + free.runtime_overhead_bytes
    )
    assert free.kv_cache_bytes == pytest.approx(0.9 * left)
    assert free.budget_bytes == pytest.approx(0.9 * left)
    # all of it: the two rules agree, given the same runtime and profiled sequences
    same = {"runtime_overhead_bytes": 1 << 30, "max_num_seqs": 1}
    assert plan_memory(llama, 1.0, rule=MemoryRule.FREE, **same).kv_cache_bytes == pytest.approx(
        plan_memory(llama, 1.0, rule=MemoryRule.TOTAL, **same).kv_cache_bytes
    )


@pytest.mark.parametrize(
    ("engine", "rule"),
    [("vllm", MemoryRule.TOTAL), ("sglang", MemoryRule.STATIC), ("trtllm", MemoryRule.FREE)],
)
def test_the_engine_preset_picks_the_rule(engine: str, rule: MemoryRule) -> None:
    spec = DeploymentSpec(model="llama-3.1-8b", gpu="h100", engine=engine)
    assert make_instance(spec).memory.rule is rule


def test_deepseek_r1_fp8_on_four_b200_fits_as_trtllm_launched_it_not_under_vllms_rule():
    """168 GB of weights per GPU of a B200's 192.3 GB (183,359 MiB): InferenceX ran it with
    TensorRT-LLM's free_gpu_memory_fraction 0.8 (KV from the ~22 GB left); under vLLM's
    rule 0.9 leaves about 3 GB of KV and 0.85 less than the weights."""
    d = Deployment.from_names(
        "deepseek-r1", "b200", "fp8", kv_cache_dtype="fp8", tensor_parallel_size=4
    )
    plan = plan_memory(d, 0.8, max_model_len=9216, rule=MemoryRule.FREE)
    assert plan.max_num_kv_tokens >= 16 * 9216
    total = plan_memory(d, 0.9, max_model_len=9216, rule=MemoryRule.TOTAL)
    assert total.max_num_kv_tokens < plan.max_num_kv_tokens / 4
    with pytest.raises(DoesNotFitError, match=r"gpu_memory_utilization=0\.85 \(total rule\)"):
        plan_memory(d, 0.85, max_model_len=9216, rule=MemoryRule.TOTAL)
