"""What one engine step costs: a roofline per kind of work, summed, plus fixed costs.

For a batch of T tokens (prompt chunks plus one per decoding sequence) and S sequences that
sample a token, one GPU of a tensor-parallel group spends, over all layers:

    linear         max(2 P_dense T / tp / F,  (P_dense w / tp + a_lin T) / B)   weights read once
    experts        per MoE layer: max(2 k P_e T / tp / F,  (E_hit(T) P_e w / tp + a_e T) / B)
    lm_head        max(2 V h S / tp / F16,  (V h 2 / tp + logits S) / B)
    prefill attn   max(pairs * f_pair / F_att,  (KV read + Q/O) / B_att)          causal pairs
    decode attn    max(context * f_pair / F_att,  context * kv_bytes / B_att)     reads each KV
    elementwise    norms, residuals, activations, rotary: bytes / B
    communication  2 L ring all-reduces of T h bytes (tp > 1), pp - 1 activation sends
    overhead       step_overhead + L * layer_overhead (+ L * prefill_layer_overhead when
                   the step has prompt work: it is launched eagerly, not from a CUDA graph)

F, B, F_att, B_att are datasheet peaks times `EfficiencyFactors`; w is bytes per weight (2:4
sparsity shrinks it and multiplies F by `math_speedup`). Parts run one after another (no
overlap), as kernels of one forward pass do. Everything that does not depend on the batch is
computed once in `StepConstants`, so a call is a few dozen float operations plus a loop over
the prompt chunks.

Pipeline parallelism: `__call__` returns the step's latency, the batch passing through every
stage in turn (exact when one batch is in flight). With `pipeline_parallel_size` batches in
flight, as vLLM's virtual engines keep, a new batch leaves every `stage_interval_s` (in the
breakdown): steady-state throughput is pipeline-size times higher than latency implies.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llmsizer.perf.batch_shape import BatchLike
from llmsizer.perf.constants import StepConstants, build_constants
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.efficiency import EfficiencyFactors, default_efficiency
from llmsizer.perf.roofline import StepBreakdown
from llmsizer.perf.step_parts import aggregate, step_parts, window_pairs


@dataclass(frozen=True, slots=True)
class StepModel:
    """A `StepCost`: `StepModel(deployment)(batch)` is the step's time in seconds."""

    deployment: Deployment
    efficiency: EfficiencyFactors = field(default_factory=default_efficiency)
    constants: StepConstants = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "constants", build_constants(self.deployment, self.efficiency))

    def __call__(self, batch: BatchLike) -> float:
        """Seconds for one step over `batch` (latency through all pipeline stages)."""
        c = self.constants
        window = c.window
        num_prefill = 0
        num_chunks = 0
        pairs_full = 0.0
        pairs_window = 0.0
        kv_full = 0.0
        kv_window = 0.0
        for chunk in batch.prefill_chunks:
            n = chunk.num_new_tokens
            ctx = chunk.num_context_tokens
            num_prefill += n
            num_chunks += 1
            pairs_full += n * ctx + 0.5 * n * (n + 1)
            kv_full += ctx + n
            if window:
                pairs_window += window_pairs(n, ctx, window)
                kv_window += min(ctx, window) + n
        num_decode = batch.num_decode_seqs
        num_tokens = num_prefill + num_decode
        if num_tokens == 0:
            return 0.0
        keys = float(batch.num_decode_context_tokens)
        keys_window = min(keys, float(num_decode * window)) if window else 0.0

        linear = max(
            num_tokens * c.dense_flops_per_token / c.linear_flops_per_s,
            (c.dense_weight_bytes + num_tokens * c.dense_act_bytes_per_token) / c.gemm_bytes_per_s,
        )
        experts = 0.0
        if c.num_moe_layers:
            touched = c.num_experts * (1.0 - c.expert_miss_per_token**num_tokens)
            experts = c.num_moe_layers * max(
                num_tokens * c.expert_flops_per_token / c.linear_flops_per_s,
                (touched * c.expert_weight_bytes + num_tokens * c.expert_act_bytes_per_token)
                / c.gemm_bytes_per_s,
            )
        sampled = num_chunks + num_decode
        lm_head = max(
            sampled * c.lm_head_flops_per_seq / c.lm_head_flops_per_s,
            (c.lm_head_weight_bytes + sampled * c.lm_head_bytes_per_seq) / c.gemm_bytes_per_s,
        )
        layer_work = linear + experts
        if num_prefill:
            layer_work += c.prefill_overhead_s
            layer_work += max(
                (c.full_layers * pairs_full + c.window_layers * pairs_window)
                * c.prefill_flops_per_pair
                / c.attention_flops_per_s,
                (
                    (c.full_layers * kv_full + c.window_layers * kv_window)
                    * c.kv_bytes_per_token_per_layer
                    + num_prefill * c.attention_act_bytes_per_token
                )
                / c.attention_bytes_per_s,
            )
        if num_decode:
            kv_keys = c.full_layers * keys + c.window_layers * keys_window
            layer_work += max(
                kv_keys * c.decode_flops_per_pair / c.attention_flops_per_s,
                (
                    kv_keys * c.kv_bytes_per_token_per_layer
                    + num_decode * c.attention_act_bytes_per_token
                )
                / c.attention_bytes_per_s,
            )
        layer_work += num_tokens * c.elementwise_bytes_per_token / c.gemm_bytes_per_s
        communication = c.num_allreduces * (
            c.allreduce_latency_s + num_tokens * c.allreduce_s_per_token
        ) + c.num_pipeline_sends * (c.send_latency_s + num_tokens * c.send_s_per_token)
        return layer_work + lm_head + communication + c.fixed_overhead_s

    def lm_head_time_s(self, num_rows: int) -> float:
        """Output-projection time for `num_rows` positions that need logits."""
        if num_rows <= 0:
            return 0.0
        c = self.constants
        return max(
            num_rows * c.lm_head_flops_per_seq / c.lm_head_flops_per_s,
            (c.lm_head_weight_bytes + num_rows * c.lm_head_bytes_per_seq) / c.gemm_bytes_per_s,
        )

    def breakdown(self, batch: BatchLike) -> StepBreakdown:
        """The same step by part, with FLOPs, bytes and bounds, for MBU/MFU and reports."""
        agg = aggregate(batch, self.constants.window)
        parts, stage_interval_s = step_parts(self.constants, agg)
        time_s = sum(p.time_s for p in parts)
        return StepBreakdown(time_s, stage_interval_s, parts, agg.num_tokens)
