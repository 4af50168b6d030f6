"""The names of a step's terms (`llmsizer.perf.step.step_terms`), and which rates each roofline
part's compute and memory times are at."""

from __future__ import annotations

from typing import NamedTuple

# roofline part -> the StepConstants rates its compute time and its memory time are at
PART_RATES: dict[str, tuple[str, str]] = {
    "linear": ("linear_flops_per_s", "gemm_bytes_per_s"),
    "experts": ("experts_flops_per_s", "experts_bytes_per_s"),
    "lm_head": ("lm_head_flops_per_s", "gemm_bytes_per_s"),
    "prefill_attention": ("attention_flops_per_s", "attention_bytes_per_s"),
    "decode_attention": ("decode_attention_flops_per_s", "attention_bytes_per_s"),
}
ROOFLINE_PARTS = tuple(PART_RATES)


class StepTerms(NamedTuple):
    """The names of the terms `step_terms` returns, in order: seconds at the rates of the
    `StepConstants` they were computed with, per GPU (module docstring).

    The first ten are (compute, memory) pairs of the `ROOFLINE_PARTS`, over all layers; a
    part takes the longer of the two. The collectives' terms are per operation, link time
    and hop latency; a step runs `num_allreduces` all-reduces and `num_pipeline_sends`
    sends. The overheads: the host's per step, the launch gaps of all layers, the eager
    launch of all layers in a step with prompt work (zero without), and the fixed time of
    the sparse-attention indexers of the layers that have one (zero without:
    `EfficiencyFactors.indexer_overhead_s`). Last, the weight-only (W4A16) experts'
    dequantisation, an extra pass over the expert weights they read (zero for other
    precisions: `EfficiencyFactors.experts_dequant_efficiency`). After it, the per-sequence
    cost of the rows that sample a token (`EfficiencyFactors.sequence_overhead_s`).
    """

    linear_compute_s: float
    linear_memory_s: float
    experts_compute_s: float
    experts_memory_s: float
    lm_head_compute_s: float
    lm_head_memory_s: float
    prefill_attention_compute_s: float
    prefill_attention_memory_s: float
    decode_attention_compute_s: float
    decode_attention_memory_s: float
    elementwise_s: float
    allreduce_link_s: float
    allreduce_latency_s: float
    send_link_s: float
    send_latency_s: float
    step_overhead_s: float
    layers_overhead_s: float
    prefill_layers_overhead_s: float
    indexer_overhead_s: float
    experts_dequant_s: float
    sequences_overhead_s: float


# The formula's values travel as plain tuples, named by `BatchAggregates` and `StepTerms`:
# building and unpacking a tuple subclass instead costs ~0.2 us each (a call is ~1.5 us).
Terms = tuple[float, ...]
NUM_ROOFLINE_TERMS = 2 * len(ROOFLINE_PARTS)
NO_STEP: Terms = (0.0,) * len(StepTerms._fields)
ELEMENTWISE = StepTerms._fields.index("elementwise_s")
PREFILL_LAYERS = StepTerms._fields.index("prefill_layers_overhead_s")
DECODE_MEMORY = StepTerms._fields.index("decode_attention_memory_s")
