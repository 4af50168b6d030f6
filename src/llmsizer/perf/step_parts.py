"""The step cost by part, with FLOPs, bytes and bounds: the explainable twin of
`StepModel.__call__` (which computes the same sum without building objects, for speed;
tests hold the two equal).

A batch first reduces to `BatchAggregates`: token counts, causal (query, key) pairs of the
prompt chunks, and KV tokens read, split into full-attention and sliding-window layers.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmsizer.perf.batch_shape import BatchLike
from llmsizer.perf.constants import StepConstants
from llmsizer.perf.roofline import Bound, PartCost


@dataclass(frozen=True, slots=True)
class BatchAggregates:
    """The numbers a batch reduces to. Pairs and keys are per layer."""

    num_tokens: int
    num_sampled: int
    num_prefill_tokens: int
    prefill_pairs_full: float
    prefill_pairs_window: float
    prefill_kv_full: float
    prefill_kv_window: float
    num_decode_seqs: int
    decode_keys_full: float
    decode_keys_window: float


def window_pairs(num_new: int, num_context: int, window: int) -> float:
    """(query, key) pairs of a causal chunk when each query sees at most `window` keys.

    Query i (1-based) of the chunk sits at position p = num_context + i and sees min(p, W)
    keys; the sum splits where p reaches W:

        p:  first ........ W ........ last
            keys = p (a ramp)   keys = W
    """
    first, last = num_context + 1, num_context + num_new
    if last <= window:
        return 0.5 * (first + last) * num_new
    if first > window:
        return float(num_new * window)
    ramp = 0.5 * (first + window) * (window - first + 1)
    return ramp + (last - window) * window


def aggregate(batch: BatchLike, window: int) -> BatchAggregates:
    """Reduce a batch to what the step cost needs (mirrors `StepModel.__call__`)."""
    num_prefill = 0
    chunks = 0
    pairs_full = pairs_window = kv_full = kv_window = 0.0
    for chunk in batch.prefill_chunks:
        n, ctx = chunk.num_new_tokens, chunk.num_context_tokens
        num_prefill += n
        chunks += 1
        pairs_full += n * ctx + 0.5 * n * (n + 1)
        kv_full += ctx + n
        if window:
            pairs_window += window_pairs(n, ctx, window)
            kv_window += min(ctx, window) + n
    num_decode = batch.num_decode_seqs
    keys = float(batch.num_decode_context_tokens)
    return BatchAggregates(
        num_tokens=num_prefill + num_decode,
        num_sampled=chunks + num_decode,
        num_prefill_tokens=num_prefill,
        prefill_pairs_full=pairs_full,
        prefill_pairs_window=pairs_window,
        prefill_kv_full=kv_full,
        prefill_kv_window=kv_window,
        num_decode_seqs=num_decode,
        decode_keys_full=keys,
        decode_keys_window=min(keys, float(num_decode * window)) if window else 0.0,
    )


def _roofline_part(
    name: str, flops: float, bytes_: float, flops_per_s: float, bytes_per_s: float
) -> PartCost:
    compute_s = flops / flops_per_s
    memory_s = bytes_ / bytes_per_s
    bound = Bound.COMPUTE if compute_s >= memory_s else Bound.MEMORY
    return PartCost(name, max(compute_s, memory_s), flops, bytes_, bound)


def _weight_parts(c: StepConstants, t: int) -> list[PartCost]:
    """Linear layers every token uses, then the routed experts (all MoE layers)."""
    parts = [
        _roofline_part(
            "linear",
            t * c.dense_flops_per_token,
            c.dense_weight_bytes + t * c.dense_act_bytes_per_token,
            c.linear_flops_per_s,
            c.gemm_bytes_per_s,
        )
    ]
    if c.num_moe_layers:
        touched = c.num_experts * (1.0 - c.expert_miss_per_token**t)
        layer = _roofline_part(
            "experts",
            t * c.expert_flops_per_token,
            touched * c.expert_weight_bytes + t * c.expert_act_bytes_per_token,
            c.linear_flops_per_s,
            c.gemm_bytes_per_s,
        )
        n = c.num_moe_layers
        parts.append(
            PartCost("experts", n * layer.time_s, n * layer.flops, n * layer.hbm_bytes, layer.bound)
        )
    return parts


def _attention_parts(c: StepConstants, a: BatchAggregates) -> list[PartCost]:
    """Prefill attention (causal pairs over each chunk's context) and decode attention
    (every sequence reads its whole KV), priced separately."""
    parts = []
    if a.num_prefill_tokens:
        kv_tokens = c.full_layers * a.prefill_kv_full + c.window_layers * a.prefill_kv_window
        pairs = c.full_layers * a.prefill_pairs_full + c.window_layers * a.prefill_pairs_window
        parts.append(
            _roofline_part(
                "prefill_attention",
                pairs * c.prefill_flops_per_pair,
                kv_tokens * c.kv_bytes_per_token_per_layer
                + a.num_prefill_tokens * c.attention_act_bytes_per_token,
                c.attention_flops_per_s,
                c.attention_bytes_per_s,
            )
        )
    if a.num_decode_seqs:
        keys = c.full_layers * a.decode_keys_full + c.window_layers * a.decode_keys_window
        parts.append(
            _roofline_part(
                "decode_attention",
                keys * c.decode_flops_per_pair,
                keys * c.kv_bytes_per_token_per_layer
                + a.num_decode_seqs * c.attention_act_bytes_per_token,
                c.attention_flops_per_s,
                c.attention_bytes_per_s,
            )
        )
    return parts


def step_parts(c: StepConstants, a: BatchAggregates) -> tuple[tuple[PartCost, ...], float]:
    """(parts, stage interval) of a step; an empty batch has no parts (no step runs).

    The stage interval is the layer work of the slowest stage (`stage_fraction` of the
    layers) plus the output projection, one activation send and the host overhead.
    """
    if a.num_tokens == 0:
        return (), 0.0
    t = a.num_tokens
    elementwise_bytes = t * c.elementwise_bytes_per_token
    elementwise_s = elementwise_bytes / c.gemm_bytes_per_s
    allreduce_s = c.num_allreduces * (c.allreduce_latency_s + t * c.allreduce_s_per_token)
    layer_parts = [
        *_weight_parts(c, t),
        *_attention_parts(c, a),
        PartCost("elementwise", elementwise_s, 0.0, elementwise_bytes, Bound.MEMORY),
        PartCost("allreduce", allreduce_s, 0.0, 0.0, Bound.COMMUNICATION),
    ]
    lm_head = _roofline_part(
        "lm_head",
        a.num_sampled * c.lm_head_flops_per_seq,
        c.lm_head_weight_bytes + a.num_sampled * c.lm_head_bytes_per_seq,
        c.lm_head_flops_per_s,
        c.gemm_bytes_per_s,
    )
    send_s = c.send_latency_s + t * c.send_s_per_token
    sends = PartCost("pipeline_send", c.num_pipeline_sends * send_s, 0.0, 0.0, Bound.COMMUNICATION)
    eager_s = c.prefill_overhead_s if a.num_prefill_tokens else 0.0
    overhead = PartCost("overhead", c.fixed_overhead_s + eager_s, 0.0, 0.0, Bound.OVERHEAD)
    layers_s = sum(p.time_s for p in layer_parts) + overhead.time_s - c.step_overhead_s
    stage_send_s = send_s if c.num_pipeline_sends else 0.0
    stage_interval_s = (
        layers_s * c.stage_fraction + lm_head.time_s + stage_send_s + c.step_overhead_s
    )
    return (*layer_parts, lm_head, sends, overhead), stage_interval_s
