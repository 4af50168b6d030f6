"""Linear attention in the memory plan: a token's KV counts the softmax layers only, and
SGLang sets its running sequences' recurrent states aside before the KV tokens (0.5.9
`model_runner_kv_cache_mixin.py`), in the launch's state dtype."""

import pytest

from llmsizer.instance import DeploymentSpec, make_instance
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.memory import DoesNotFitError, MemoryRule, plan_memory

QWEN = "qwen3.5-397b-a17b"


def qwen(tp: int = 4, dtype: str | None = None) -> Deployment:
    return Deployment.from_names(
        QWEN, "b200", "fp8", kv_cache_dtype="fp8", tensor_parallel_size=tp,
        mamba_ssm_cache_dtype=dtype,
    )  # fmt: skip


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_a_token_holds_kv_in_the_softmax_layers_only(tp: int) -> None:
    """15 of Qwen3.5's 60 layers are softmax attention: 2 KV heads of 256, K and V, FP8; a
    GPU keeps ceil(2 / tp) heads (replicated beyond 2)."""
    d = qwen(tp)
    assert d.model.num_kv_cache_layers == 15
    assert d.kv_bytes_per_token_per_gpu == 15 * 2 * 256 * -(-2 // tp)
    if tp >= 4:  # the weights fit
        plan = plan_memory(d, 0.82, rule=MemoryRule.STATIC)
        assert plan.kv_bytes_per_token == d.kv_bytes_per_token_per_gpu


def test_models_without_linear_attention_keep_every_layers_kv() -> None:
    d = Deployment.from_names("llama-3.1-70b", "h100-sxm", "fp8", tensor_parallel_size=4)
    assert d.kv_bytes_per_token_per_gpu == 80 * d.kv_bytes_per_token_per_layer_per_gpu
    assert d.linear_state_bytes_per_gpu == 0.0
    plain = plan_memory(d, 0.9)
    assert plan_memory(d, 0.9, num_state_slots=256) == plain


@pytest.mark.parametrize("dtype", [None, "bfloat16"])
def test_the_state_slots_come_out_of_the_kv_cache(dtype: str | None) -> None:
    """KV = f M - W - R - slots x state (SGLang's static rule); 128 float32 states at TP4
    take 128 x 48 MB, bfloat16 ones half the recurrent part."""
    d = qwen(4, dtype)
    none = plan_memory(d, 0.82, rule=MemoryRule.STATIC)
    held = plan_memory(d, 0.82, rule=MemoryRule.STATIC, num_state_slots=128)
    assert held.linear_state_bytes == pytest.approx(128 * d.linear_state_bytes_per_gpu)
    assert none.kv_cache_bytes - held.kv_cache_bytes == pytest.approx(held.linear_state_bytes)
    assert held.num_kv_blocks < none.num_kv_blocks
    recurrent = 45 * 64 * 128 * 128 / 4  # values per GPU
    per_value = 4.0 if dtype is None else 2.0
    conv = 45 * (2 * 16 * 128 + 64 * 128) * 3 * 2.0 / 4
    assert d.linear_state_bytes_per_gpu == pytest.approx(recurrent * per_value + conv)


def test_a_state_pool_that_does_not_fit_says_so() -> None:
    with pytest.raises(DoesNotFitError, match="linear-attention states"):
        plan_memory(qwen(4), 0.82, rule=MemoryRule.STATIC, num_state_slots=4096)


@pytest.mark.parametrize(
    ("engine", "radix", "slots"), [("sglang", False, 128), ("sglang", True, 0), ("vllm", False, 0)]
)
def test_an_instance_sets_sglangs_running_states_aside(
    engine: str, radix: bool, slots: int
) -> None:
    """SGLang with the radix cache off: `max_running_requests` states; its radix-cache split
    and vLLM's paged states are not modelled."""
    spec = DeploymentSpec(
        model=QWEN, gpu="b200", precision="fp8", kv_cache_dtype="fp8", tp=4, engine=engine,
        max_num_seqs=128, gpu_memory_utilization=0.82, enable_prefix_caching=radix,
    )  # fmt: skip
    memory = make_instance(spec).memory
    assert memory.linear_state_bytes == pytest.approx(slots * qwen(4).linear_state_bytes_per_gpu)


@pytest.mark.parametrize(("engine", "k", "slots"), [("sglang", 3, 128 * 5), ("sglang", 1, 128 * 3),
                                                    ("vllm", 3, 0)])  # fmt: skip
def test_a_speculating_sglang_engine_sets_k_plus_1_intermediate_states_aside(
    engine: str, k: int, slots: int
) -> None:
    """SGLang 0.5.9 `handle_max_mamba_cache`: under speculation it first reserves
    `mamba_cache_per_req x max_running_requests x speculative_num_draft_tokens` (k + 1 with
    top-k 1), then the running requests' own states: (k + 2) x 128 states in all at k = 3;
    the KV cache shrinks by the k + 1 more, each a whole state (`MambaPool` keeps them in the
    state dtype)."""
    base = {"model": QWEN, "gpu": "b200", "precision": "fp8", "kv_cache_dtype": "fp8", "tp": 4,
            "engine": engine, "max_num_seqs": 128, "gpu_memory_utilization": 0.82,
            "enable_prefix_caching": False, "mamba_ssm_cache_dtype": "bfloat16"}  # fmt: skip
    plain = make_instance(DeploymentSpec(**base)).memory
    spec = DeploymentSpec(**base, speculative={"num_speculative_tokens": k, "method": "mtp"})
    memory = make_instance(spec).memory
    state = qwen(4, "bfloat16").linear_state_bytes_per_gpu
    assert memory.linear_state_bytes == pytest.approx(slots * state)
    if engine == "sglang":
        assert plain.kv_cache_bytes - memory.kv_cache_bytes == pytest.approx(128 * (k + 1) * state)
        assert memory.linear_state_bytes - plain.linear_state_bytes == pytest.approx(
            128 * (k + 1) * state
        )
