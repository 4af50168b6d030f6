"""What one engine step costs: one formula, `step_terms`, read three ways.

For a batch of T tokens (prompt chunks plus one per decoding sequence) and S sequences that
sample a token, one GPU of a tensor-parallel group spends, over all layers:

    linear         max(2 P_dense T / tp / F,  (P_dense w / tp + a_lin T) / B)   weights read once
    experts        per MoE layer: max(2 k P_e T / tp / F,  (E_hit(T) P_e w / tp + a_e T) / B);
                   in a step with prompt work the FLOPs are those of the padded tiles the
                   grouped GEMM computes, k T rows padded per expert (`padded_rows`);
                   with expert parallelism over ep ranks, E_hit P_e w / tp becomes the
                   busiest rank's distinct experts times P_e w / (tp / ep); weight-only
                   (W4A16) experts add E_hit P_e w / tp / B_dequant, their dequantisation
    lm_head        max(2 V h S / tp / F16,  (V h 2 / tp + logits S) / B)
    prefill attn   max(pairs * f_pair / F_att,  (KV read + Q/O) / B_att)          causal pairs
    decode attn    max(context * f_pair / F_att,  context * kv_bytes / B_att)     reads each KV
                   (+ 2 * state / B_att per sequence: linear attention's state, read and written)
    elementwise    norms, residuals, activations, rotary: bytes / B
    communication  2 L ring all-reduces of T h bytes (tp > 1), pp - 1 activation sends:
                   link time plus one hop latency per ring step or send
    attention DP   with D ranks (`attention_dp_size`), everything but the experts is the
                   busiest rank's (`batch_shape.busiest_rank`: ceil(n / D) of the requests);
                   the experts see all T tokens; collectives in `perf.constants`
    overhead       step_overhead + K * layer_overhead (K the layers' kernels in dense
                   layers', less a second stream's in a graphed decode step: `launches`)
                   (+ U * prefill_layer_overhead when
                   the step is launched eagerly, not from a full CUDA graph: `cuda_graphs`;
                   U its launches in dense layers' (`launches`), L for a compiled model)
                   + L_dsa * indexer_overhead (layers with a sparse-attention indexer)
                   + S * sequence_overhead (per sampled sequence: host and sampler)
    CUDA graphs    a graphed step runs the layers' parts (not attention, not the output
                   projection) at its padded token count; without a `CudaGraphs`, decode-only
                   steps are graphed unpadded and steps with prompt work are eager

F, B, F_att, B_att are datasheet peaks times `EfficiencyFactors` (the experts and decode
attention at fractions of their own where the factors split them: `SPLIT_FROM`); w is bytes
per weight (2:4 sparsity shrinks it and multiplies F by `math_speedup`). Parts run one after
another (no overlap), as kernels of one forward pass do.

The table is computed in one place, `step_terms(constants, aggregates)`: everything that
does not depend on the batch is in `StepConstants` (computed once), a batch reduces to
`BatchAggregates` (`aggregate`), and the terms are every entry above in seconds, each
roofline part as its compute time and its memory time (the max is taken by the reader).
Three readers:

- `StepModel(batch)` = `step_time_s(constants, step_terms(constants, aggregate(batch)))`,
  the step's latency. The simulator calls it every step: a call is a loop over the prompt
  chunks and a few dozen float operations, and the values pass as plain tuples, which
  `BatchAggregates` and `StepTerms` name for the other readers.
- `StepModel.breakdown(batch)`: `PartCost`s for MBU/MFU and reports (FLOPs = compute time x
  rate, bytes = memory time x rate) and the pipeline stage interval, from the same terms.
- `llmsizer.calibrate.features`: the terms at 100 % of peak, which calibration re-prices for
  any factors with the same sum.

Pipeline parallelism: `__call__` returns the step's latency, the batch passing through every
stage in turn (exact when one batch is in flight). With `pipeline_parallel_size` batches in
flight, as vLLM's virtual engines keep, a new batch leaves every `stage_interval_s` (in the
breakdown): steady-state throughput is pipeline-size times higher than latency implies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from llmsizer.perf.batch_shape import (
    Aggregates,
    BatchAggregates,
    BatchLike,
    aggregate,
    busiest_rank,
    decode_batch,
)
from llmsizer.perf.constants import StepConstants, build_constants
from llmsizer.perf.cuda_graphs import CudaGraphs
from llmsizer.perf.decode_step import DecodeAttention, DecodeStep, decode_run
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.efficiency import EfficiencyFactors, default_efficiency
from llmsizer.perf.parts import stage_interval_s, step_parts
from llmsizer.perf.roofline import StepBreakdown
from llmsizer.perf.terms import ELEMENTWISE, NO_STEP, PART_RATES, StepTerms, Terms
from llmsizer.perf.terms import NUM_ROOFLINE_TERMS as NUM_ROOFLINE_TERMS  # re-exported
from llmsizer.perf.terms import ROOFLINE_PARTS as ROOFLINE_PARTS


def step_terms(
    c: StepConstants, a: Aggregates, graphs: CudaGraphs | None = None, tiles: bool = True
) -> Terms:
    """The terms (`StepTerms` order) of the step whose `BatchAggregates` are `a`, run as
    `graphs` says (padded, eager: module docstring); all zero for an empty batch. Without
    `tiles`, the experts' FLOPs are the real rows' (the work MFU counts), not the padded
    tiles' (`padded_rows`)."""
    (t, sampled, num_prefill, pairs_full, pairs_window, kv_full, kv_window,
     num_decode, keys_full, keys_window) = a  # fmt: skip
    if t == 0:
        return NO_STEP
    tokens = t  # the experts run on every attention data-parallel rank's tokens
    if c.attention_dp_size > 1:  # the rest is the busiest rank's
        (t, sampled, num_prefill, pairs_full, pairs_window, kv_full, kv_window,
         num_decode, keys_full, keys_window) = busiest_rank(a, c.attention_dp_size)  # fmt: skip
    eager = num_prefill > 0
    run_tokens = tokens  # the experts' tokens, padding included
    if graphs is not None:
        padded, eager = graphs.run(t, not num_prefill)
        if padded != t:  # every rank runs the busiest rank's graph
            run_tokens, t = padded * c.attention_dp_size, padded
    full, windowed = c.full_layers, c.window_layers
    experts_compute_s = experts_memory_s = dequant_s = 0.0
    if c.num_moe_layers:
        # expected distinct experts a layer reads (roofline.expected_experts_touched)
        touched = c.num_experts * (1.0 - c.expert_miss_per_token**tokens)
        if c.experts_per_rank:  # expert parallel: the busiest rank's (expected_max_normal)
            n, hit = c.experts_per_rank, touched / c.num_experts
            touched = min(n, n * hit + c.expert_max_z * math.sqrt(n * hit * (1.0 - hit)))
        if num_prefill and tiles:  # prompt work: the grouped GEMM in whole tiles
            rows = padded_rows(c, run_tokens * c.expert_rows_per_token, touched)
            experts_compute_s = c.num_moe_layers * (
                rows * c.expert_flops_per_row / c.experts_flops_per_s
            )
        else:
            experts_compute_s = c.num_moe_layers * (
                run_tokens * c.expert_flops_per_token / c.experts_flops_per_s
            )
        experts_memory_s = c.num_moe_layers * (
            (touched * c.expert_weight_bytes + run_tokens * c.expert_act_bytes_per_token)
            / c.experts_bytes_per_s
        )
        dequant_s = (
            c.num_moe_layers * touched * c.expert_dequant_bytes / c.experts_dequant_bytes_per_s
        )
    layers_s = c.layers_overhead_s
    if not eager and run_tokens <= c.shared_stream_max_tokens:  # a second stream's kernels
        layers_s = c.graphed_layers_overhead_s
    prefill_compute_s = prefill_memory_s = 0.0
    prefill_overhead_s = 0.0
    if eager:  # launched op by op: every layer's kernels, or a compiled model's attention
        compiled = graphs is not None and graphs.compiled
        prefill_overhead_s = (
            c.compiled_layers_overhead_s if compiled else c.prefill_layers_overhead_s
        )
    if num_prefill:
        flops, kv_read = prompt_attention(c, pairs_full, pairs_window, kv_full, kv_window)
        prefill_compute_s = flops / c.attention_flops_per_s
        prefill_memory_s = (
            kv_read * c.kv_bytes_per_token_per_layer + num_prefill * c.attention_act_bytes_per_token
        ) / c.attention_bytes_per_s
    decode_compute_s = decode_memory_s = 0.0
    if num_decode:
        keys = full * keys_full + windowed * keys_window
        decode_compute_s = keys * c.decode_flops_per_pair / c.decode_attention_flops_per_s
        decode_memory_s = (
            keys * c.kv_bytes_per_token_per_layer
            + num_decode * c.attention_act_bytes_per_token
            + num_decode * c.linear_state_bytes_per_seq
        ) / c.attention_bytes_per_s
    return (
        t * c.dense_flops_per_token / c.linear_flops_per_s,
        (c.dense_weight_bytes + t * c.dense_act_bytes_per_token) / c.gemm_bytes_per_s,
        experts_compute_s,
        experts_memory_s,
        sampled * c.lm_head_flops_per_seq / c.lm_head_flops_per_s,
        (c.lm_head_weight_bytes + sampled * c.lm_head_bytes_per_seq) / c.gemm_bytes_per_s,
        prefill_compute_s,
        prefill_memory_s,
        decode_compute_s,
        decode_memory_s,
        t * c.elementwise_bytes_per_token / c.gemm_bytes_per_s,
        t * c.allreduce_s_per_token,
        c.allreduce_latency_s,
        t * c.send_s_per_token,
        c.send_latency_s,
        c.step_overhead_s,
        layers_s,
        prefill_overhead_s,
        c.indexer_overhead_s,
        dequant_s,
        sampled * c.sequence_overhead_s,
    )


def padded_rows(c: StepConstants, rows: float, touched: float) -> float:
    """The rows one GPU's grouped expert GEMM computes in a step with prompt work: its
    `rows` routed copies of tokens spread over the `touched` experts it holds, each expert's
    padded to whole tiles of `c.expert_tile_rows` (`EfficiencyFactors.experts_tile_rows`).

    Every touched expert computes at least one tile; past half a tile of rows, an expert's
    padding is the unfilled part of its last tile, half a tile less half a row on average
    (its row count spread over residues by the routing):

        padded = max(touched x tile,  rows + touched x (tile - 1) / 2)

    continuous and non-decreasing in `rows` and `touched`, never below `rows`. Where every
    expert gets every token (`expert_miss_per_token` 0: top-k = experts) the counts are
    exact, not spread: each expert pads its rows / touched to the next whole tile.
    """
    tile = c.expert_tile_rows
    if touched <= 0.0:
        return rows
    if c.expert_miss_per_token == 0.0:
        return touched * tile * math.ceil(rows / touched / tile)
    spread = rows + touched * (tile - 1.0) / 2.0
    floor = touched * tile
    return floor if floor >= spread else spread


def prompt_attention(
    c: StepConstants, pairs_full: float, pairs_window: float, kv_full: float, kv_window: float
) -> tuple[float, float]:
    """(FLOPs, KV tokens read) of a step's prompt attention on one GPU, from its causal
    pairs and KV reads, full and windowed (`BatchAggregates`).

    A DSA model (`c.sparse_prefill_flops_per_pair` > 0; its window is the indexer's top-k)
    runs dense attention while every query sees at most top-k keys; once one sees more
    (some windowed pairs cut), the sparse kernel: each query reads its own top-k latent rows
    and computes on them in the absorbed form, so the step reads and computes the windowed
    pairs, as a decode step reads each key it attends (`perf.constants.
    _sparse_prefill_flops_per_pair`)."""
    full, windowed = c.full_layers, c.window_layers
    if c.sparse_prefill_flops_per_pair and pairs_window < pairs_full:
        return full * pairs_window * c.sparse_prefill_flops_per_pair, full * pairs_window
    flops = (full * pairs_full + windowed * pairs_window) * c.prefill_flops_per_pair
    return flops, full * kv_full + windowed * kv_window


def step_time_s(c: StepConstants, terms: Terms) -> float:
    """The step's latency: every part in turn, each roofline part at its longer time."""
    (lin_c, lin_m, exp_c, exp_m, head_c, head_m, pre_c, pre_m, dec_c, dec_m,
     elementwise_s, ar_link_s, ar_latency_s, send_link_s, send_latency_s,
     step_s, layers_s, prefill_layers_s, indexer_s, dequant_s, seqs_s) = terms  # fmt: skip
    # `x if x >= y else y` is max(x, y) without a call: this runs once per engine step. The
    # order of the sum is kept to the bit: committed example plans hold full-precision results.
    layer_work = (
        (lin_c if lin_c >= lin_m else lin_m)
        + ((exp_c if exp_c >= exp_m else exp_m) + dequant_s)
        + prefill_layers_s
        + (pre_c if pre_c >= pre_m else pre_m)
        + (dec_c if dec_c >= dec_m else dec_m)
        + elementwise_s
    )
    communication = c.num_allreduces * (ar_latency_s + ar_link_s) + c.num_pipeline_sends * (
        send_latency_s + send_link_s
    )
    lm_head_s = head_c if head_c >= head_m else head_m
    return layer_work + lm_head_s + communication + (((step_s + layers_s) + indexer_s) + seqs_s)


@dataclass(frozen=True, slots=True)
class StepModel:
    """A `StepCost`: `StepModel(deployment)(batch)` is the step's time in seconds; with
    `cuda_graphs`, steps padded to captured sizes or launched eagerly (module docstring).
    FLOPs and bytes (`measure`, `breakdown`) count the real tokens, not the padding."""

    deployment: Deployment
    efficiency: EfficiencyFactors = field(default_factory=default_efficiency)
    cuda_graphs: CudaGraphs | None = None
    constants: StepConstants = field(init=False, repr=False, compare=False)
    part_rates: tuple[tuple[float, float], ...] = field(init=False, repr=False, compare=False)
    # decode-only steps by number of sequences: everything but their attention (a cache)
    _decode: dict[int, DecodeStep] = field(init=False, repr=False, compare=False)
    _attention: DecodeAttention = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        c = build_constants(self.deployment, self.efficiency, self.cuda_graphs)
        object.__setattr__(self, "constants", c)
        rates = tuple(
            (getattr(c, flops), getattr(c, bytes_)) for flops, bytes_ in PART_RATES.values()
        )
        object.__setattr__(self, "part_rates", rates)
        object.__setattr__(self, "_decode", {})
        object.__setattr__(self, "_attention", DecodeAttention(c))

    def __reduce__(
        self,
    ) -> tuple[type[StepModel], tuple[Deployment, EfficiencyFactors, CudaGraphs | None]]:
        """Pickled by its fields, the rest rebuilt: a compiled build's frozen dataclass
        cannot be unpickled attribute by attribute (`setup.py`)."""
        return (StepModel, (self.deployment, self.efficiency, self.cuda_graphs))

    def __call__(self, batch: BatchLike) -> float:
        """Seconds for one step over `batch` (latency through all pipeline stages)."""
        n = batch.num_decode_seqs
        if n and not batch.prefill_chunks:  # decode only: most steps
            return self.decode_step_s(n, batch.num_decode_context_tokens)
        c = self.constants
        return step_time_s(c, step_terms(c, aggregate(batch, c.window), self.cuda_graphs))

    def decode_step_s(self, num_decode_seqs: int, num_decode_context_tokens: int) -> float:
        """`self(batch)` for a batch of `num_decode_seqs` > 0 decoding sequences reading
        `num_decode_context_tokens` keys and no prompt work, to the bit, without a batch:
        the parts that do not depend on the context come from a per-batch-size table
        (`_decode_step`), decode attention from constants held in native fields."""
        n = num_decode_seqs
        d = self._decode.get(n) or self._decode_step(n)
        dec_c, dec_m = self._attention.time_s(n, num_decode_context_tokens)
        layer_work = d.layers_before_s + (dec_c if dec_c >= dec_m else dec_m) + d.elementwise_s
        return layer_work + d.lm_head_s + d.communication_s + d.overhead_s

    def _decode_step(self, n: int) -> DecodeStep:
        """The parts of a step of `n` decoding sequences that do not depend on the context
        they read, summed in the order `step_time_s` and `measure` sum them, so that a
        decode-only step costs the same to the bit (tested) in a third of the time."""
        c = self.constants
        no_context = aggregate(decode_batch(n, 0), c.window)
        graphs = self.cuda_graphs
        (lin_c, lin_m, exp_c, exp_m, head_c, head_m, pre_c, pre_m, _, _,
         elementwise_s, ar_link_s, ar_latency_s, send_link_s, send_latency_s,
         step_s, layers_s, prefill_layers_s, indexer_s,
         dequant_s, seqs_s) = step_terms(c, no_context, graphs)  # fmt: skip
        work = step_terms(c, no_context)  # the real tokens' work, for MFU and MBU
        flops = memory = 0.0
        for i, (flops_per_s, bytes_per_s) in enumerate(self.part_rates[:4]):
            flops += work[2 * i] * flops_per_s
            memory += work[2 * i + 1] * bytes_per_s
        d = DecodeStep(
            layers_before_s=(lin_c if lin_c >= lin_m else lin_m)
            + ((exp_c if exp_c >= exp_m else exp_m) + dequant_s)
            + prefill_layers_s
            + (pre_c if pre_c >= pre_m else pre_m),
            elementwise_s=elementwise_s,
            lm_head_s=head_c if head_c >= head_m else head_m,
            communication_s=c.num_allreduces * (ar_latency_s + ar_link_s)
            + c.num_pipeline_sends * (send_latency_s + send_link_s),
            overhead_s=((step_s + layers_s) + indexer_s) + seqs_s,
            flops_before=flops,
            bytes_before=memory,
            elementwise_bytes=work[ELEMENTWISE] * c.gemm_bytes_per_s,
        )
        self._decode[n] = d
        return d

    def lm_head_time_s(self, num_rows: int) -> float:
        """Output-projection time for `num_rows` positions that need logits."""
        if num_rows <= 0:
            return 0.0
        c = self.constants
        terms = StepTerms._make(step_terms(c, aggregate(decode_batch(num_rows, 0), c.window)))
        return max(terms.lm_head_compute_s, terms.lm_head_memory_s)

    def measure(self, batch: BatchLike) -> tuple[float, float, float]:
        """(seconds, FLOPs, HBM bytes) of one step per GPU: the call's time and the work
        `breakdown` counts, from the same terms, for MFU and MBU over every step (about
        1.5x a plain call; `breakdown` is 8x)."""
        c = self.constants
        n = batch.num_decode_seqs
        if n and not batch.prefill_chunks:  # decode only, as in `__call__`
            return self.measure_decode(n, batch.num_decode_context_tokens)
        a = aggregate(batch, c.window)
        terms = step_terms(c, a, self.cuda_graphs)
        work = terms  # the real tokens' work, for MFU and MBU: no graph or tile padding
        if self.cuda_graphs is not None or (c.num_moe_layers and a[2]):
            work = step_terms(c, a, tiles=False)
        flops = memory = 0.0
        for i, (flops_per_s, bytes_per_s) in enumerate(self.part_rates):
            flops += work[2 * i] * flops_per_s
            memory += work[2 * i + 1] * bytes_per_s
        memory += work[ELEMENTWISE] * c.gemm_bytes_per_s
        return step_time_s(c, terms), flops, memory

    def measure_decode(
        self, num_decode_seqs: int, num_decode_context_tokens: int
    ) -> tuple[float, float, float]:
        """`measure` of a decode-only batch (`decode_step_s`'s arguments), without one."""
        n = num_decode_seqs
        d = self._decode.get(n) or self._decode_step(n)
        dec_c, dec_m = self._attention.time_s(n, num_decode_context_tokens)
        layer_work = d.layers_before_s + (dec_c if dec_c >= dec_m else dec_m) + d.elementwise_s
        time_s = layer_work + d.lm_head_s + d.communication_s + d.overhead_s
        flops_rate, bytes_rate = self.part_rates[4]
        memory = (d.bytes_before + dec_m * bytes_rate) + d.elementwise_bytes
        return time_s, d.flops_before + dec_c * flops_rate, memory

    def measure_decode_run(
        self, num_decode_seqs: int, num_decode_context_tokens: int, num_steps: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`measure_decode` of `num_steps` decode-only steps in a row, the batch unchanged
        (each reads `num_decode_seqs` more keys than the one before), as arrays."""
        n = num_decode_seqs
        d = self._decode.get(n) or self._decode_step(n)
        context = num_decode_context_tokens + n * np.arange(num_steps, dtype=np.int64)
        return decode_run(d, self._attention, n, context, self.part_rates[4])

    def decode_run_s(
        self, num_decode_seqs: int, num_decode_context_tokens: int, num_steps: int
    ) -> np.ndarray:
        """`decode_step_s` of such steps (`measure_decode_run`), for the engine's runs."""
        return self.measure_decode_run(num_decode_seqs, num_decode_context_tokens, num_steps)[0]

    def breakdown(self, batch: BatchLike) -> StepBreakdown:
        """The same step by part, with FLOPs, bytes and bounds, for MBU/MFU and reports;
        an empty batch has no parts (no step runs)."""
        c = self.constants
        a = BatchAggregates._make(aggregate(batch, c.window))
        if a.num_tokens == 0:
            return StepBreakdown(0.0, 0.0, (), 0)
        terms = StepTerms._make(step_terms(c, a, self.cuda_graphs))
        work = StepTerms._make(step_terms(c, a, tiles=False))
        parts = step_parts(c, a, terms, work)
        return StepBreakdown(step_time_s(c, terms), stage_interval_s(c, terms), parts, a.num_tokens)
