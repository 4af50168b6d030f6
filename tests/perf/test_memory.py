import pytest

from llmsizer.perf.deployment import Deployment
from llmsizer.perf.memory import (
    DoesNotFitError,
    activation_bytes_per_gpu,
    plan_memory,
    weight_bytes_per_gpu,
)
from llmsizer.units import GB


def test_llama8b_on_one_h100():
    d = Deployment.from_names("llama-3.1-8b", "h100")
    plan = plan_memory(d)
    assert plan.weight_bytes == pytest.approx(16.06e9, rel=0.01)
    # 0.9 of the 81,559 MiB the device reports (85.5e9 bytes, not the name's 80e9)
    budget = 0.9 * 81559 * 2**20
    assert plan.budget_bytes == pytest.approx(budget)
    left = budget - plan.weight_bytes - plan.activation_bytes - plan.runtime_overhead_bytes
    assert plan.kv_cache_bytes == pytest.approx(left)
    # 131,072 bytes of BF16 KV per token, 16 tokens per block
    assert plan.kv_bytes_per_token == 131_072
    assert plan.num_kv_blocks == int(left // (131_072 * 16))
    assert 26_000 < plan.num_kv_blocks < 29_000  # vLLM logs ~26-28k blocks here


def test_tensor_parallel_shards_weights_and_kv():
    tp1 = Deployment.from_names("llama-3.1-70b", "b200")
    tp4 = Deployment.from_names("llama-3.1-70b", "b200", tensor_parallel_size=4)
    assert weight_bytes_per_gpu(tp4) == pytest.approx(weight_bytes_per_gpu(tp1) / 4, rel=0.01)
    assert plan_memory(tp4).kv_bytes_per_token == plan_memory(tp1).kv_bytes_per_token / 4


def test_pipeline_stages_split_layers():
    pp1 = Deployment.from_names("llama-3.1-70b", "h100", tensor_parallel_size=4)
    pp2 = Deployment.from_names(
        "llama-3.1-70b", "h100", tensor_parallel_size=2, pipeline_parallel_size=2
    )
    assert weight_bytes_per_gpu(pp2) == pytest.approx(weight_bytes_per_gpu(pp1), rel=0.02)
    assert plan_memory(pp2).kv_bytes_per_token == plan_memory(pp1).kv_bytes_per_token


def test_a_model_that_does_not_fit_says_by_how_much():
    d = Deployment.from_names("llama-3.1-70b", "h100")
    # 141.1 GB of weights against 0.9 x 85.5 GB: about 66 GB short
    with pytest.raises(DoesNotFitError, match=r"short by 6\d\.\d GB") as err:
        plan_memory(d)
    assert "weights need 141.1 GB" in str(err.value)


def test_max_model_len_must_fit_in_kv():
    d = Deployment.from_names("llama-3.1-70b", "h100", tensor_parallel_size=4)
    plan = plan_memory(d)
    with pytest.raises(DoesNotFitError, match="131072 tokens of KV cache"):
        plan_memory(d, max_model_len=131_072, gpu_memory_utilization=0.55)
    assert plan.max_num_kv_tokens > 8192


def test_more_utilization_more_blocks():
    d = Deployment.from_names("llama-3.1-8b", "l40s")
    assert plan_memory(d, 0.95).num_kv_blocks > plan_memory(d, 0.9).num_kv_blocks
    assert plan_memory(d, block_size=32).num_kv_blocks == pytest.approx(
        plan_memory(d).num_kv_blocks / 2, abs=1
    )


def test_activation_reserve_grows_with_batched_tokens():
    d = Deployment.from_names("llama-3.1-8b", "h100")
    assert activation_bytes_per_gpu(d, 16_384) > activation_bytes_per_gpu(d, 8192) > 0.5 * GB


def test_invalid_settings():
    d = Deployment.from_names("llama-3.1-8b", "h100")
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        plan_memory(d, gpu_memory_utilization=1.5)
    with pytest.raises(ValueError, match="block_size"):
        plan_memory(d, block_size=0)
