"""GPU memory: weights per GPU, activation and runtime reserve, and the KV blocks left.

What the memory fraction f (`gpu_memory_utilization`) is a fraction of is the engine's
(`MemoryRule`; M the GPU's memory, W weights, A the peak activations of a profiling
forward pass, R non-torch memory: CUDA context, NCCL and cuBLAS workspaces):
- vLLM `gpu_memory_utilization` (`TOTAL`): f M is the budget for W + A + R + KV, so the KV
  cache is f M - W - A - R (`vllm/v1/worker/gpu_worker.py` `determine_available_memory`).
- SGLang `mem_fraction_static` (`STATIC`): f M holds the weights and the KV pool, the rest
  the activations and CUDA graphs: KV = (free after loading) - M (1 - f) = f M - W - R
  (`sglang/srt/model_executor/model_runner.py` `profile_max_num_token`, 0.5.x).
- TensorRT-LLM `free_gpu_memory_fraction` (`FREE`): KV = f (M - W - A - R), the fraction of
  the memory still free once the model is loaded and profiled (TensorRT-LLM
  `docs/source/reference/memory.md`, "KV cache tensor": "KV cache will by default allocate
  85% of the remaining free GPU memory"; the PyTorch backend's default f is 0.9).
The KV cache is cut into blocks of `block_size` tokens (default 16); the simulator's block
manager takes `MemoryPlan.num_kv_blocks`. A token's KV counts the softmax layers only
(`Deployment.kv_bytes_per_token_per_gpu`). A model with linear attention (Qwen3.5) keeps a
recurrent state per sequence; SGLang sets `num_state_slots` states aside before the KV
tokens, `max_running_requests` of them with the radix cache off (`model_runner_kv_cache_
mixin.py` `handle_max_mamba_cache`, 0.5.9: "Use explicitly set max_running_requests when
radix cache is disabled"), in the launch's state dtype (`--mamba-ssm-dtype`); with the radix
cache on it splits the memory between states and KV (`mamba_full_memory_ratio` 0.9), and vLLM
pages the states in its KV pool as sequences run: neither is modelled (no slots).

Assumptions, stated once:
- weights: the stage with most bytes. Layers are split evenly over pipeline stages (the
  first stage also holds the embedding, the last the output projection); every matrix is
  sharded over `tensor_parallel_size` (vocab-parallel embedding and output projection).
  With attention data parallelism over D ranks (`Deployment.attention_dp_size`) every rank
  holds all but the routed experts (attention, dense layers, shared experts, embedding and
  output projection replicated per rank), and the routed experts are split over all
  tp x D GPUs (the fullest GPU's share: ceil(experts / EP) whole experts under expert
  parallelism, `Deployment.experts_on_busiest_rank`). Each GPU's KV cache then holds its
  rank's requests only: the instance holds D times the blocks of one GPU
  (`llmsizer.instance`).
- activations: the profiling pass runs `max_num_batched_tokens` tokens (vLLM V1's default
  8192 for online serving). Its peak is the residual stream and hidden state (2h per
  token) plus the widest layer output, the MLP's gate/up and activation (3I/tp; MoE: the
  routed copies' widths), in the activation dtype, plus FP32 logits and probabilities for
  `max_num_seqs` sequences (2 x 4 bytes x vocab/tp).
- runtime: `runtime_overhead_bytes` per GPU, default 1 GiB (CUDA context ~0.5 GiB, NCCL and
  cuBLAS workspaces; vLLM logs 0.3-1 GiB of non-torch memory).

TensorRT-LLM (`FREE`, PyTorch backend 1.0-1.3) sizes its pool from a profiling run
(`KvCacheCreator.configure_kv_cache_capacity`, NVIDIA/TensorRT-LLM `tensorrt_llm/_torch/
pyexecutor/_util.py`, the 1.x file with `_cal_max_memory`; docs/aic_measurement.md 60):
one dummy context request of `max_num_tokens` prompt tokens (`_create_dummy_context_requests`,
a copy per rank under attention DP; only its last token is sampled), then
KV = f (total - peak + estimation KV), peak = torch's peak allocation (weights, activations)
plus everything else in use (`extra_cost`: total used - torch allocated). That else is what
`trtllm_runtime_bytes` counts, per GPU:
- memory the CUDA driver keeps: `torch.cuda.mem_get_info` reports 79.22 GiB of an H100's
  79.65 (81,559 MiB): 0.54 % (vLLM PR 10511's log, `total_gpu_memory 79.22GiB`);
- the CUDA context, cuBLAS and TensorRT-LLM workspaces and the CUDA graphs captured before
  the profiling run (the estimation executor warms up, and `create_py_executor` releases its
  graphs only after it): 2.3 GiB;
- communication buffers (NCCL, TensorRT-LLM's all-reduce IPC workspaces) over the GPUs a
  layer talks to (tp x attention DP): 1.2 GiB with one peer, 0.4 GiB each further peer.
The last two are read off AIConfigurator's measured TensorRT-LLM pools of Llama-3.1-8B (BF16,
dense: H100 TP 1 2.85 GiB beyond the activations, GB300 3.72; one peer +1.17 / +1.29, three
+0.77 / +0.85 more; `tests/perf/test_trtllm_pool.py`), held out on Qwen3-32B-FP8. Peers past
three (TP 8) are an extrapolation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

from llmsizer.perf.deployment import Deployment
from llmsizer.specs.dtypes import Precision
from llmsizer.units import GB, GiB

DEFAULT_RUNTIME_OVERHEAD_BYTES = 1.0 * GiB
# TensorRT-LLM's profiled non-torch memory (module docstring)
TRTLLM_HIDDEN_MEMORY_FRACTION = 1 - 79.22 / 79.65  # H100: CUDA's total of nvidia-smi's
TRTLLM_CONTEXT_BYTES = 2.3 * GiB  # AIC Llama-3.1-8B TP 1: H100 2.42, GB300 2.22
TRTLLM_FIRST_PEER_BYTES = 1.2 * GiB  # AIC Llama-3.1-8B TP 1 -> 2: H100 1.17, GB300 1.29
TRTLLM_PEER_BYTES = 0.4 * GiB  # AIC Llama-3.1-8B TP 2 -> 4: H100 0.77, GB300 0.85 for two
_LOGIT_BYTES = 4.0
_UNQUANTIZED_BYTES = Precision.BF16.bytes_per_element


class MemoryRule(StrEnum):
    """What an engine's memory fraction is a fraction of (module docstring)."""

    TOTAL = "total"  # vLLM gpu_memory_utilization
    STATIC = "static"  # SGLang mem_fraction_static
    FREE = "free"  # TensorRT-LLM free_gpu_memory_fraction


ENGINE_MEMORY_RULES = {
    "vllm": MemoryRule.TOTAL,
    "sglang": MemoryRule.STATIC,
    "trtllm": MemoryRule.FREE,
}


class DoesNotFitError(ValueError):
    """A configuration whose weights, activations or one sequence's KV do not fit."""


@dataclass(frozen=True, slots=True)
class MemoryPlan:
    """Where each GPU's memory goes (bytes, per GPU) and the KV blocks that result."""

    gpu_memory_bytes: float
    gpu_memory_utilization: float
    weight_bytes: float
    activation_bytes: float
    runtime_overhead_bytes: float
    kv_cache_bytes: float
    kv_bytes_per_token: float
    block_size: int
    num_kv_blocks: int
    rule: MemoryRule = MemoryRule.TOTAL
    linear_state_bytes: float = 0.0  # the state slots set aside (module docstring)

    @property
    def budget_bytes(self) -> float:
        """What the memory fraction allows for what it covers (`MemoryRule`)."""
        if self.rule is MemoryRule.FREE:
            rest = self.weight_bytes + self.activation_bytes + self.runtime_overhead_bytes
            return (self.gpu_memory_bytes - rest) * self.gpu_memory_utilization
        return self.gpu_memory_bytes * self.gpu_memory_utilization

    @property
    def max_num_kv_tokens(self) -> int:
        """Tokens of context the KV cache holds across all sequences."""
        return self.num_kv_blocks * self.block_size


def weight_bytes_per_gpu(d: Deployment) -> float:
    """Weight bytes on the fullest GPU (module docstring)."""
    m = d.model
    tp, pp = d.tensor_parallel_size, d.pipeline_parallel_size
    routed = m.routed_expert_params / d.attention_dp_size  # split over tp x dp GPUs
    if m.moe is not None:  # the fullest EP rank's whole experts (`experts_on_busiest_rank`)
        routed *= d.experts_on_busiest_rank * d.expert_parallel_size / m.moe.num_experts
    layer_weights = (m.dense_linear_params + routed) * d.weight_bytes_per_element
    layer_other = m.num_layers * m.norm_params_per_layer + m.num_moe_layers * m.router_params
    per_layer = (layer_weights / tp + layer_other * _UNQUANTIZED_BYTES) / m.num_layers
    stage_layers = math.ceil(m.num_layers / pp)
    vocab_matrix = m.vocab_size * m.hidden_size * _UNQUANTIZED_BYTES / tp
    # one stage holds embedding and output projection (one matrix when tied); with
    # pipelining the first holds the embedding and the last its own output projection
    num_vocab_matrices = 1 if pp > 1 or m.tie_word_embeddings else 2
    ends = num_vocab_matrices * vocab_matrix
    return stage_layers * per_layer + ends + m.hidden_size * _UNQUANTIZED_BYTES


def activation_bytes_per_gpu(
    d: Deployment, max_num_batched_tokens: int = 8192, max_num_seqs: int = 256
) -> float:
    """Peak activation memory of vLLM's profiling forward pass (module docstring)."""
    m = d.model
    tp = d.tensor_parallel_size
    width = m.intermediate_size
    if m.moe is not None:
        routed = m.moe.num_experts_per_tok * m.moe.expert_intermediate_size
        width = max(
            width if m.num_dense_layers else 0, routed + m.moe.shared_expert_intermediate_size
        )
    per_token = 2 * m.hidden_size + 3 * width / tp
    hidden = max_num_batched_tokens * per_token * d.activation_precision.bytes_per_element
    sampled = min(max_num_seqs, max_num_batched_tokens)
    logits = sampled * 2 * _LOGIT_BYTES * m.vocab_size / tp
    return hidden + logits


def trtllm_runtime_bytes(d: Deployment) -> float:
    """What TensorRT-LLM's profiling run finds in use besides weights and activations, per
    GPU (bytes; module docstring)."""
    hidden = TRTLLM_HIDDEN_MEMORY_FRACTION * d.gpu.memory_bytes
    peers = d.moe_world_size - 1
    comm = 0.0 if peers == 0 else TRTLLM_FIRST_PEER_BYTES + (peers - 1) * TRTLLM_PEER_BYTES
    return hidden + TRTLLM_CONTEXT_BYTES + comm


def plan_memory(
    d: Deployment,
    gpu_memory_utilization: float = 0.9,
    block_size: int = 16,
    max_num_batched_tokens: int = 8192,
    max_num_seqs: int = 256,
    max_model_len: int | None = None,
    runtime_overhead_bytes: float | None = None,
    rule: MemoryRule = MemoryRule.TOTAL,
    num_state_slots: int = 0,
) -> MemoryPlan:
    """KV blocks per GPU for `d`; `DoesNotFitError` says by how many GB it falls short.

    With `max_model_len`, the KV cache must also hold one sequence of that length (vLLM
    refuses to start otherwise). `num_state_slots`: sequences whose linear-attention state
    the engine sets aside first (module docstring; 0 for a model without one).
    `runtime_overhead_bytes` defaults to the engine's: `trtllm_runtime_bytes` under the
    `FREE` rule, whose profiling run samples one sequence; else 1 GiB.
    """
    if not 0 < gpu_memory_utilization <= 1:
        raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization}")
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    memory = d.gpu.memory_bytes
    weights = weight_bytes_per_gpu(d)
    if rule is MemoryRule.FREE:  # TensorRT-LLM's profiling run: one dummy request (docstring)
        max_num_seqs = 1
        if runtime_overhead_bytes is None:
            runtime_overhead_bytes = trtllm_runtime_bytes(d)
    if runtime_overhead_bytes is None:
        runtime_overhead_bytes = DEFAULT_RUNTIME_OVERHEAD_BYTES
    activations = activation_bytes_per_gpu(d, max_num_batched_tokens, max_num_seqs)
    kv_cache = memory * gpu_memory_utilization - weights - activations - runtime_overhead_bytes
    if rule is MemoryRule.STATIC:  # activations outside the static fraction
        kv_cache = memory * gpu_memory_utilization - weights - runtime_overhead_bytes
    elif rule is MemoryRule.FREE:
        free = memory - weights - activations - runtime_overhead_bytes
        kv_cache = gpu_memory_utilization * free
    states = num_state_slots * _stage_state_bytes(d)
    kv_cache -= states
    per_token = d.kv_bytes_per_token_per_gpu
    num_blocks = max(0, math.floor(kv_cache / (per_token * block_size)))
    plan = MemoryPlan(
        gpu_memory_bytes=memory,
        gpu_memory_utilization=gpu_memory_utilization,
        weight_bytes=weights,
        activation_bytes=activations,
        runtime_overhead_bytes=runtime_overhead_bytes,
        kv_cache_bytes=max(0.0, kv_cache),
        kv_bytes_per_token=per_token,
        block_size=block_size,
        num_kv_blocks=num_blocks,
        rule=rule,
        linear_state_bytes=states,
    )
    needed_tokens = max_model_len or block_size
    if plan.max_num_kv_tokens < needed_tokens:
        short = needed_tokens * per_token - kv_cache
        raise DoesNotFitError(_explain(d, plan, needed_tokens, short))
    return plan


def _stage_state_bytes(d: Deployment) -> float:
    """One sequence's linear-attention state on a GPU of the stage with most of its layers."""
    la = d.model.linear_attention
    if la is None:
        return 0.0
    stage = -(-la.num_layers // d.pipeline_parallel_size) / la.num_layers
    return d.linear_state_bytes_per_gpu * stage


def _explain(d: Deployment, plan: MemoryPlan, needed_tokens: int, short_bytes: float) -> str:
    kv_needed = needed_tokens * plan.kv_bytes_per_token
    dp = f", dp={d.attention_dp_size}" if d.attention_dp_size > 1 else ""
    of_gb = plan.budget_bytes / plan.gpu_memory_utilization / GB
    states = plan.linear_state_bytes
    states_text = f", linear-attention states {states / GB:.1f} GB" if states else ""
    return (
        f"{d.model.name} ({d.precision.value} weights) on {d.num_gpus}x {d.gpu.key} "
        f"(tp={d.tensor_parallel_size}, pp={d.pipeline_parallel_size}{dp}) does not fit: per GPU "
        f"weights need {plan.weight_bytes / GB:.1f} GB, activations "
        f"{plan.activation_bytes / GB:.1f} GB and runtime {plan.runtime_overhead_bytes / GB:.1f} "
        f"GB{states_text}, and {needed_tokens} tokens of KV cache {kv_needed / GB:.2f} GB, "
        f"but gpu_memory_utilization={plan.gpu_memory_utilization} ({plan.rule.value} rule) of "
        f"{of_gb:.0f} GB leaves {plan.budget_bytes / GB:.1f} GB: short by "
        f"{short_bytes / GB:.1f} GB. Use more GPUs (tensor or pipeline parallel), a narrower "
        f"precision, or a GPU with more memory."
    )
