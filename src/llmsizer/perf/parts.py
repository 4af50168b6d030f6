"""A step's terms read as parts (`StepModel.breakdown`) and as a pipeline stage's interval."""

from __future__ import annotations

from llmsizer.perf.batch_shape import BatchAggregates
from llmsizer.perf.constants import StepConstants
from llmsizer.perf.roofline import Bound, PartCost
from llmsizer.perf.terms import PART_RATES, ROOFLINE_PARTS, StepTerms


def stage_interval_s(c: StepConstants, t: StepTerms) -> float:
    """The slowest pipeline stage's time: its share (`stage_fraction`) of the per-layer
    work, plus the output projection, one activation send and the host's step overhead."""
    layers_s = (
        max(t.linear_compute_s, t.linear_memory_s)
        + max(t.experts_compute_s, t.experts_memory_s)
        + t.experts_dequant_s
        + max(t.prefill_attention_compute_s, t.prefill_attention_memory_s)
        + max(t.decode_attention_compute_s, t.decode_attention_memory_s)
        + t.elementwise_s
        + c.num_allreduces * (t.allreduce_latency_s + t.allreduce_link_s)
        + t.layers_overhead_s
        + t.prefill_layers_overhead_s
        + t.indexer_overhead_s
    )
    one_send_s = t.send_latency_s + t.send_link_s if c.num_pipeline_sends else 0.0
    lm_head_s = max(t.lm_head_compute_s, t.lm_head_memory_s)
    host_s = t.step_overhead_s + t.sequences_overhead_s
    return layers_s * c.stage_fraction + lm_head_s + one_send_s + host_s


def step_parts(
    c: StepConstants, a: BatchAggregates, t: StepTerms, work: StepTerms
) -> tuple[PartCost, ...]:
    """The step's parts in the order they run, their times from `t` and their FLOPs and
    bytes from `work` (the real tokens'); parts a step cannot have are left out (experts
    without MoE layers, prefill attention without prompt work, decode attention without
    decoding sequences)."""
    layer_parts = [roofline_part(c, t, work, "linear")]
    if c.num_moe_layers:
        layer_parts.append(roofline_part(c, t, work, "experts"))
    if t.experts_dequant_s:  # weight-only experts: their dequantisation, no HBM traffic
        dequant = PartCost("experts_dequant", t.experts_dequant_s, 0.0, 0.0, Bound.COMPUTE)
        layer_parts.append(dequant)
    if a.num_prefill_tokens:
        layer_parts.append(roofline_part(c, t, work, "prefill_attention"))
    if a.num_decode_seqs:
        layer_parts.append(roofline_part(c, t, work, "decode_attention"))
    elementwise_bytes = work.elementwise_s * c.gemm_bytes_per_s
    allreduce_s = c.num_allreduces * (t.allreduce_latency_s + t.allreduce_link_s)
    send_s = c.num_pipeline_sends * (t.send_latency_s + t.send_link_s)
    overhead_s = (
        (t.step_overhead_s + t.layers_overhead_s) + t.prefill_layers_overhead_s
    ) + t.indexer_overhead_s
    overhead_s += t.sequences_overhead_s
    return (
        *layer_parts,
        PartCost("elementwise", t.elementwise_s, 0.0, elementwise_bytes, Bound.MEMORY),
        PartCost("allreduce", allreduce_s, 0.0, 0.0, Bound.COMMUNICATION),
        roofline_part(c, t, work, "lm_head"),
        PartCost("pipeline_send", send_s, 0.0, 0.0, Bound.COMMUNICATION),
        PartCost("overhead", overhead_s, 0.0, 0.0, Bound.OVERHEAD),
    )


def roofline_part(c: StepConstants, t: StepTerms, work: StepTerms, name: str) -> PartCost:
    """A roofline part from its two terms: its work is each of `work`'s times at its rate."""
    i = 2 * ROOFLINE_PARTS.index(name)
    compute_s, memory_s = t[i], t[i + 1]
    flops_rate, bytes_rate = PART_RATES[name]
    flops = work[i] * getattr(c, flops_rate)
    bytes_ = work[i + 1] * getattr(c, bytes_rate)
    bound = Bound.COMPUTE if compute_s >= memory_s else Bound.MEMORY
    return PartCost(name, max(compute_s, memory_s), flops, bytes_, bound)
