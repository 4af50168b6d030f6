"""The target's verification step in speculative decoding (`perf.speculative`): each
decoding sequence's k drafted tokens and its own are scored in one pass, k + 1 positions
after its context, as a prompt chunk is (`verify_aggregates`). `VerifyStep` prices such a
step for a batch of decoding sequences at any context without building the batch: the
engine's most common step when it speculates (`SpeculativeStepCost.decode_step_s`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from llmsizer.perf.batch_shape import Aggregates, aggregate, busiest_rank, decode_batch
from llmsizer.perf.constants import StepConstants
from llmsizer.perf.cuda_graphs import CudaGraphs
from llmsizer.perf.moe_kernels import check_priced
from llmsizer.perf.step import prompt_attention, step_terms
from llmsizer.perf.terms import DECODE_MEMORY, PREFILL_LAYERS, Terms

# states the accepted one's copy back moves: gathered into a temporary, scattered (read and
# write each; `verify_state_s`)
COMMIT_STATES = 4
# a linear-attention verify kernel (`SpeculativeSpec.linear_verify_kernel`) -> the rate of its
# state traffic over the attention bandwidth the fits price (docs/aic_measurement.md section
# 54): SGLang's FLA Triton recurrent kernels, one warp a (sequence, value head, value block),
# 30 us a layer where FlashInfer's kernel took 16, Qwen3.5 FP8 decode at 256 clients on
# 8 x B200 (sgl-project/sglang PR 19150's per-step profile, Triton `fused_sigmoid_gating_
# delta_rule_update` before, FlashInfer `gated_delta_rule_decode_pretranspose` after; the
# state traffic of both, ~134 MB a layer at bfloat16, is 4.5 and 8.4 TB/s). The verify
# kernel (`fused_recurrent_gated_delta_rule_update`) is the same family with a 4x narrower
# value block (8 against 32) and k + 1 stores a program: not faster; priced at the same.
STATE_KERNEL_RATE: Mapping[str, float] = MappingProxyType({"triton": 16.0 / 30.0})


def check_state_kernel(name: str | None) -> str | None:
    """`name` if it is a verify kernel priced in `STATE_KERNEL_RATE` (or None: the engine's
    default, at attention bandwidth), else an error naming the priced ones."""
    return check_priced("linear_verify_kernel", name, STATE_KERNEL_RATE)


def state_rate_of(name: str | None) -> float:
    """The state traffic's rate under verify kernel `name`, over attention bandwidth."""
    return 1.0 if name is None else STATE_KERNEL_RATE[check_state_kernel(name) or ""]


def graphed_verify_terms(
    c: StepConstants, a: Aggregates, terms: Terms, graphs: CudaGraphs | None
) -> Terms:
    """`terms`, the verify step of the batch whose own aggregates are `a`, as the engines run
    it: a verify step without prompt work replays the CUDA graph captured for its batch
    size, so it pays no eager per-layer launches unless a decode step of its sequences
    would (vLLM captures uniform batches of 1 + k tokens a request, `CUDAGraphMode`
    `uniform_decode_query_len`; SGLang `CudaGraphRunner` the `TARGET_VERIFY` batches;
    TensorRT-LLM its generation batches with their draft tokens)."""
    i = PREFILL_LAYERS
    if a[2] or (graphs is not None and step_terms(c, a, graphs)[i]):
        return terms  # prompt work, or a decode batch past the captured sizes: eager
    return (*terms[:i], 0.0, *terms[i + 1 :])


def verify_state_s(
    c: StepConstants, num_decode_seqs: int, k: int, kernel_rate: float = 1.0
) -> float:
    """Seconds a verify step of `num_decode_seqs` sequences verifying `k` drafted tokens each
    moves their linear-attention state (Qwen3.5's Gated DeltaNet; 0 for other models), at
    attention bandwidth, as a decode step's decode attention moves it (one state: half of
    `linear_state_bytes_per_seq`, a read and a write). The verify kernel reads each
    sequence's state, keeps the main state unchanged and writes the state after each of the
    k + 1 positions to an intermediate cache (SGLang `GDNAttnBackend` target verify:
    `disable_state_update`, `intermediate_states_buffer`, `cache_steps` =
    `draft_token_num`): k + 2 states, at `kernel_rate` of attention bandwidth
    (`STATE_KERNEL_RATE`: the engine's kernel where it is slower than the one the fits
    price). Then the accepted position's state goes back into the main state through a
    temporary (`HybridLinearAttnBackend.update_mamba_state_after_mtp_verify`:
    `ssm_states[:, dst, :] = intermediate_state_cache[:, src, last_steps]`, an advanced-index
    gather then a scatter): 4 states more, in PyTorch's copy kernels at attention bandwidth.
    A decode step moves 2."""
    state_bytes = num_decode_seqs * 0.5 * c.linear_state_bytes_per_seq
    states = (k + 2) / kernel_rate + COMMIT_STATES
    return state_bytes * states / c.attention_bytes_per_s


def with_verify_state(
    c: StepConstants, terms: Terms, num_decode_seqs: int, k: int, kernel_rate: float = 1.0
) -> Terms:
    """`terms` of a verify step (`verify_aggregates`: no decoding sequences left, so no decode
    attention) with its sequences' state traffic as its decode attention's memory time."""
    if not c.linear_state_bytes_per_seq or not num_decode_seqs:
        return terms
    state_s = verify_state_s(c, num_decode_seqs, k, kernel_rate)
    return (*terms[:DECODE_MEMORY], state_s, *terms[DECODE_MEMORY + 1 :])


def verify_aggregates(a: Aggregates, k: int, window: int) -> Aggregates:
    """The aggregates of `a`'s batch when each decoding sequence verifies k drafted tokens:
    its k + 1 positions become a prompt chunk after its context (as `speculative_step`
    prices them), and all k + 1 rows need logits. Sliding-window pairs assume the chunk
    stays inside the window (k is a few tokens)."""
    (t, sampled, num_prefill, pairs_full, pairs_window, kv_full, kv_window,
     num_decode, keys_full, keys_window) = a  # fmt: skip
    if not num_decode:
        return a
    n = k + 1
    own_pairs = num_decode * 0.5 * n * (n + 1)  # causal pairs inside each chunk
    return (
        t + num_decode * k,
        sampled + num_decode * k,
        num_prefill + num_decode * n,
        pairs_full + n * keys_full + own_pairs,
        pairs_window + (n * keys_window + own_pairs if window else 0.0),
        kv_full + keys_full + num_decode * n,
        kv_window + (keys_window + num_decode * n if window else 0.0),
        0,
        0.0,
        0.0,
    )


@dataclass(frozen=True, slots=True)
class VerifyStep:
    """The target's verification step for `num_seqs` decoding sequences of k drafted tokens
    each (`verify_aggregates`), at any context: everything but its prompt attention depends
    on the sequences and k alone and is kept here (`verify_step`), summed in `step_time_s`'s
    order; the attention over the context is `step_terms`' arithmetic in its order, so a step
    costs what the general formula says, to the bit (tests/perf/test_speculative_steps.py).
    A decoding sequence's k + 1 positions are one prompt chunk; with attention data
    parallelism the busiest rank holds `share` of the chunks (`batch_shape.busiest_rank`)."""

    constants: StepConstants
    num_seqs: int
    num_new: int  # k + 1 positions verified per sequence
    own_pairs: float  # causal pairs inside the chunks
    share: float  # the busiest attention-DP rank's share of pairs and KV reads
    num_prefill: int  # prompt tokens (the busiest rank's)
    layers_before_s: float  # linear, experts, eager launches: before prompt attention
    elementwise_s: float
    lm_head_s: float
    communication_s: float
    overhead_s: float
    state_s: float  # the sequences' linear-attention state (`verify_state_s`)
    sequences_s: float  # the per-sequence cost of a verify step (`verify_sequence_s`)

    def time_s(self, context_tokens: int) -> float:
        """Seconds of the step when the sequences' contexts sum to `context_tokens`."""
        c, n, seqs = self.constants, self.num_new, self.num_seqs
        if not c.window and c.attention_dp_size == 1:  # full attention on one rank: most
            # models; the sums below less their window terms, each a 0.0 that adds nothing
            keys_full = float(context_tokens)
            pairs = c.full_layers * (n * keys_full + self.own_pairs)
            kv_read = c.full_layers * (keys_full + seqs * n)
            pre_c = pairs * c.prefill_flops_per_pair / c.attention_flops_per_s
            pre_m = (
                kv_read * c.kv_bytes_per_token_per_layer
                + self.num_prefill * c.attention_act_bytes_per_token
            ) / c.attention_bytes_per_s
            layer_work = self.layers_before_s + (pre_c if pre_c >= pre_m else pre_m)
            layer_work += self.state_s
            layer_work += self.elementwise_s
            step_s = layer_work + self.lm_head_s + self.communication_s + self.overhead_s
            return step_s + self.sequences_s
        keys_full = float(context_tokens)
        keys_window = min(keys_full, float(seqs * c.window)) if c.window else 0.0
        # verify_aggregates' sums (each after a 0.0 that adds nothing)
        pairs_full = n * keys_full + self.own_pairs
        pairs_window = n * keys_window + self.own_pairs if c.window else 0.0
        kv_full = keys_full + seqs * n
        kv_window = keys_window + seqs * n if c.window else 0.0
        if c.attention_dp_size > 1:
            pairs_full, pairs_window = pairs_full * self.share, pairs_window * self.share
            kv_full, kv_window = kv_full * self.share, kv_window * self.share
        flops, kv_read = prompt_attention(c, pairs_full, pairs_window, kv_full, kv_window)
        pre_c = flops / c.attention_flops_per_s
        pre_m = (
            kv_read * c.kv_bytes_per_token_per_layer
            + self.num_prefill * c.attention_act_bytes_per_token
        ) / c.attention_bytes_per_s
        prefill_s = pre_c if pre_c >= pre_m else pre_m
        layer_work = self.layers_before_s + prefill_s + self.state_s + self.elementwise_s
        step_s = layer_work + self.lm_head_s + self.communication_s + self.overhead_s
        return step_s + self.sequences_s

    def times_s(self, context_tokens: np.ndarray) -> np.ndarray:
        """`time_s` for each of several context sums (int64): the same operations in the
        same order, elementwise, so each is `time_s`'s to the bit (tested)."""
        c, n, seqs = self.constants, self.num_new, self.num_seqs
        keys_full = context_tokens.astype(np.float64)
        zero = np.zeros_like(keys_full)
        keys_window = np.minimum(keys_full, float(seqs * c.window)) if c.window else zero
        pairs_full = n * keys_full + self.own_pairs
        pairs_window = n * keys_window + self.own_pairs if c.window else zero
        kv_full = keys_full + seqs * n
        kv_window = keys_window + seqs * n if c.window else zero
        if c.attention_dp_size > 1:
            pairs_full, pairs_window = pairs_full * self.share, pairs_window * self.share
            kv_full, kv_window = kv_full * self.share, kv_window * self.share
        kv_read = c.full_layers * kv_full + c.window_layers * kv_window
        flops = (
            c.full_layers * pairs_full + c.window_layers * pairs_window
        ) * c.prefill_flops_per_pair
        if c.sparse_prefill_flops_per_pair:  # `prompt_attention`, elementwise
            sparse = pairs_window < pairs_full
            selected = c.full_layers * pairs_window
            flops = np.where(sparse, selected * c.sparse_prefill_flops_per_pair, flops)
            kv_read = np.where(sparse, selected, kv_read)
        pre_c = flops / c.attention_flops_per_s
        pre_m = (
            kv_read * c.kv_bytes_per_token_per_layer
            + self.num_prefill * c.attention_act_bytes_per_token
        ) / c.attention_bytes_per_s
        layer_work = self.layers_before_s + np.maximum(pre_c, pre_m) + self.state_s
        layer_work = layer_work + self.elementwise_s
        out: np.ndarray = layer_work + self.lm_head_s + self.communication_s + self.overhead_s
        return out + self.sequences_s


def verify_step(
    c: StepConstants,
    num_seqs: int,
    k: int,
    graphs: CudaGraphs | None = None,
    graphed: bool = False,
    serial_host: bool = False,
    state_kernel_rate: float = 1.0,
) -> VerifyStep:
    """The `VerifyStep` of `num_seqs` > 0 sequences verifying `k` drafted tokens each, run
    as `graphs` say where `graphed` (`graphed_verify_terms`), else eagerly: the general
    formula's terms at context 0, of which only prompt attention changes with the context;
    with `serial_host` its sequences' host work (`verify_sequence_s`) after them; their
    linear-attention state at `state_kernel_rate` (`verify_state_s`)."""
    decoding = aggregate(decode_batch(num_seqs, 0), c.window)
    a = verify_aggregates(decoding, k, c.window)
    terms = step_terms(c, a)
    if graphed:
        terms = graphed_verify_terms(c, decoding, terms, graphs)
    (lin_c, lin_m, exp_c, exp_m, head_c, head_m, _, _, _, _,
     elementwise_s, ar_link_s, ar_latency_s, send_link_s, send_latency_s,
     step_s, layers_s, prefill_layers_s, indexer_s, dequant_s, seqs_s) = terms  # fmt: skip
    dp, num_prefill = c.attention_dp_size, a[2]
    share = 1.0
    if dp > 1:  # as busiest_rank counts chunks: every sampled row but the decoding ones
        chunks = a[1] - a[7]
        share = -(-chunks // dp) / chunks
        num_prefill = busiest_rank(a, dp)[2]
    n = k + 1
    return VerifyStep(
        constants=c,
        num_seqs=num_seqs,
        num_new=n,
        own_pairs=num_seqs * 0.5 * n * (n + 1),
        share=share,
        num_prefill=num_prefill,
        layers_before_s=(lin_c if lin_c >= lin_m else lin_m)
        + ((exp_c if exp_c >= exp_m else exp_m) + dequant_s)
        + prefill_layers_s,
        elementwise_s=elementwise_s,
        lm_head_s=head_c if head_c >= head_m else head_m,
        communication_s=c.num_allreduces * (ar_latency_s + ar_link_s)
        + c.num_pipeline_sends * (send_latency_s + send_link_s),
        overhead_s=((step_s + layers_s) + indexer_s) + seqs_s,
        state_s=verify_state_s(c, num_seqs, k, state_kernel_rate),  # no decode attention
        sequences_s=verify_sequence_s(c, num_seqs) if serial_host else 0.0,
    )


def verify_sequence_s(c: StepConstants, num_decode_seqs: int) -> float:
    """A verify step's cost per decoding sequence beyond its roofline, added after the step's
    other terms where the engine runs it serial with the GPU (`SpeculativeDecoding.
    serial_host`; `EfficiencyFactors.verify_sequence_overhead_s`: its per-request host work
    of a verify step; 0 in a step without decoding sequences)."""
    return num_decode_seqs * c.verify_sequence_overhead_s
