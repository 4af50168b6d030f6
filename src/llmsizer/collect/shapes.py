"""What `collect` times: the model's kernel shapes and the grid of sizes, as plain data.

One decoder layer of a dense model runs four GEMMs (vLLM's fused `qkv_proj`, `o_proj`,
`gate_up_proj`, `down_proj`), one attention and a few memory-bound kernels; the output
projection (`lm_head`) runs once per step. An MLA layer (DeepSeek) projects through its
latents instead (`q_a_proj`, `q_b_proj`, `kv_a_proj_with_mqa`, `kv_b_proj`, `o_proj`); an
MoE layer (Mixtral, Qwen3-MoE, DeepSeek) runs the router, its shared experts and the routed
experts' grouped GEMMs (`ExpertGemm`) in place of the dense MLP. `collect` times each at
the model's own shapes over the sizes of `Grid`, and the work it counts for each (FLOPs,
bytes) is the work the performance model counts (`llmsizer.perf.constants`), so a measured
time divided by it is the rate the model's efficiency factors describe.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llmsizer.perf.roofline import expected_experts_touched
from llmsizer.specs import ModelSpec, Precision

# bf16 / fp16 activations, KV cache and the unquantized output projection
ACTIVATION_BYTES = 2


@dataclass(frozen=True, slots=True)
class Gemm:
    """One linear layer: `tokens x in_features` times `in_features x out_features`, run
    `count` times a step (its layers; 1 for the output projection)."""

    name: str
    in_features: int
    out_features: int
    count: int

    def flops(self, tokens: int) -> float:
        return 2.0 * tokens * self.in_features * self.out_features

    def bytes(self, tokens: int, weight_bytes: float) -> float:
        """Weights read once, activations read and written once (perf's linear term)."""
        weights = self.in_features * self.out_features * weight_bytes
        return weights + ACTIVATION_BYTES * tokens * (self.in_features + self.out_features)


@dataclass(frozen=True, slots=True)
class ExpertGemm:
    """One grouped GEMM of the routed experts of an MoE layer (`gate_up` or `down`): for
    `tokens`, each sent to `top_k` of `num_experts`, the experts hit (perf's expected count,
    `roofline.expected_experts_touched`) each multiply their share of the copies by their own
    `in_features x out_features` weight."""

    name: str
    in_features: int
    out_features: int
    num_experts: int
    top_k: int

    def experts_hit(self, tokens: int) -> int:
        touched = expected_experts_touched(tokens, self.num_experts, self.top_k)
        return max(1, min(self.num_experts, round(touched)))

    def rows_per_expert(self, tokens: int) -> int:
        """Copies each hit expert gets (uniform routing, rounded up)."""
        return math.ceil(tokens * self.top_k / self.experts_hit(tokens))

    def flops(self, tokens: int) -> float:
        return 2.0 * tokens * self.top_k * self.in_features * self.out_features

    def bytes(self, tokens: int, weight_bytes: float) -> float:
        """The hit experts' weights once, each routed copy's input and output once (perf's
        `expert_weight_bytes` and `expert_act_bytes_per_token`)."""
        weights = self.experts_hit(tokens) * self.in_features * self.out_features * weight_bytes
        copies = tokens * self.top_k
        return weights + ACTIVATION_BYTES * copies * (self.in_features + self.out_features)


@dataclass(frozen=True, slots=True)
class Grid:
    """The sizes timed: GEMM token counts, prefill context lengths, decode batches and KV
    lengths, square-GEMM sizes for the peak, the copy size for the bandwidth peak, and the
    end-to-end check's (batch, context) points and layers. All-reduce messages are the
    activations of `gemm_tokens` tokens (a decode or prefill step's)."""

    gemm_tokens: tuple[int, ...]
    prefill_lengths: tuple[int, ...]
    decode_batches: tuple[int, ...]
    decode_lengths: tuple[int, ...]
    square_sizes: tuple[int, ...]
    copy_bytes: int
    warmup: int
    repeats: int
    check_points: tuple[tuple[int, int], ...]
    check_layers: int
    prefill_check_points: tuple[tuple[int, int], ...] = ()  # (prompts, tokens each)


# The default covers what a server sees: 1 to 16k tokens a step (vLLM's chunked prefill
# budget is 2k-16k), prompts to 8k, decode batches to 256 over KV to 8k. A run is bounded by
# `collect`'s time budget (`run.Budget`), which samples each kind coarse to fine.
FULL = Grid(
    gemm_tokens=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384),
    prefill_lengths=(128, 256, 512, 1024, 2048, 4096, 8192),
    decode_batches=(1, 4, 16, 64, 256),
    decode_lengths=(256, 1024, 4096, 8192),
    square_sizes=(2048, 4096, 8192),
    copy_bytes=1 << 30,
    warmup=3,
    repeats=10,
    check_points=((1, 1024), (8, 1024), (32, 2048), (64, 4096), (128, 1024), (256, 512)),
    check_layers=8,
    prefill_check_points=((1, 512), (1, 2048), (1, 8192), (4, 2048)),
)
# Seconds on a CPU: the shape of the full run at sizes a CPU finishes quickly (tests, CI).
QUICK = Grid(
    gemm_tokens=(1, 4, 16, 64, 256),
    prefill_lengths=(32, 128),
    decode_batches=(1, 4),
    decode_lengths=(64, 256),
    square_sizes=(256, 512),
    copy_bytes=16 << 20,
    warmup=2,
    repeats=5,
    check_points=((1, 64), (4, 64), (1, 256), (4, 256)),
    check_layers=2,
    prefill_check_points=((1, 64), (2, 128)),
)


def check_supported(model: ModelSpec) -> None:
    """A ValueError naming what `collect` cannot time yet: it times softmax attention (MHA,
    GQA, MLA) with dense or MoE MLPs; linear and sparse attention are not built."""
    unsupported = {
        "linear-attention layers": model.linear_attention is not None,
        "sparse attention": model.sparse_attention is not None,
    }
    found = [what for what, present in unsupported.items() if present]
    if found:
        raise ValueError(
            f"collect times softmax attention (MHA, GQA, MLA) with dense or MoE MLPs; "
            f"{model.name} has {', '.join(found)}, which it does not time yet"
        )


def attention_gemms(model: ModelSpec) -> tuple[Gemm, ...]:
    """The attention projections of one layer (vLLM's names), in every layer."""
    h, n = model.hidden_size, model.num_layers
    q_out = model.q_dim * (2 if model.attention_output_gate else 1)
    o_proj = Gemm("o_proj", model.attention_output_dim, h, n)
    mla = model.mla
    if mla is None:
        return Gemm("qkv_proj", h, q_out + 2 * model.kv_dim, n), o_proj
    heads = model.num_attention_heads
    query = (
        (Gemm("q_proj", h, q_out, n),)
        if mla.q_lora_rank is None
        else (Gemm("q_a_proj", h, mla.q_lora_rank, n), Gemm("q_b_proj", mla.q_lora_rank, q_out, n))
    )
    return (
        *query,
        Gemm("kv_a_proj_with_mqa", h, mla.kv_lora_rank + mla.qk_rope_head_dim, n),
        Gemm("kv_b_proj", mla.kv_lora_rank, heads * (mla.qk_nope_head_dim + mla.v_head_dim), n),
        o_proj,
    )


def layer_gemms(model: ModelSpec) -> tuple[Gemm, ...]:
    """The linear layers a step runs every token through, at tensor-parallel size 1: the
    attention projections, the dense layers' MLP, the MoE layers' router and shared
    experts, and the output projection (`count` 1)."""
    check_supported(model)
    h = model.hidden_size
    gemms = list(attention_gemms(model))
    if model.num_dense_layers:
        up = model.intermediate_size * (2 if model.gated_mlp else 1)
        gemms += [
            Gemm("gate_up_proj", h, up, model.num_dense_layers),
            Gemm("down_proj", model.intermediate_size, h, model.num_dense_layers),
        ]
    if model.moe is not None:
        moe_layers, shared = model.num_moe_layers, model.moe.shared_expert_intermediate_size
        gemms.append(Gemm("router", h, model.moe.num_experts, moe_layers))
        if shared:
            gemms += [
                Gemm("shared_experts.gate_up_proj", h, 2 * shared, moe_layers),
                Gemm("shared_experts.down_proj", shared, h, moe_layers),
            ]
    return (*gemms, Gemm("lm_head", h, model.vocab_size, 1))


def expert_gemms(model: ModelSpec) -> tuple[ExpertGemm, ...]:
    """The routed experts' two grouped GEMMs (fused gate and up, then down); none for a
    dense model."""
    moe = model.moe
    if moe is None:
        return ()
    h, width = model.hidden_size, moe.expert_intermediate_size
    e, k = moe.num_experts, moe.num_experts_per_tok
    return (
        ExpertGemm("experts.gate_up_proj", h, 2 * width, e, k),
        ExpertGemm("experts.down_proj", width, h, e, k),
    )


def gemm_launches_per_layer(model: ModelSpec) -> float:
    """GEMM kernels one layer launches, on average over the layers (4 for a dense layer)."""
    per_step = sum(g.count for g in layer_gemms(model) if g.name != "lm_head")
    return (per_step + len(expert_gemms(model)) * model.num_moe_layers) / model.num_layers


def kv_bytes_per_token(model: ModelSpec) -> float:
    """K and V (MLA: the latent) of one token in one layer, 16-bit."""
    return model.kv_bytes_per_token_per_layer(Precision.BF16)


def attention_act_bytes(model: ModelSpec) -> float:
    """Q read and O written per token per layer (perf's `attention_act_bytes_per_token`)."""
    return ACTIVATION_BYTES * (model.q_dim + model.attention_output_dim)


def decode_flops_per_pair(model: ModelSpec) -> float:
    """FLOPs per (query, cached key) pair of decode: MLA's absorbed form scores each head
    against the latent plus rope key and sums over the latent (perf.constants, DeepSeek-V2
    report sec. 2.1.2); MHA / GQA as prefill."""
    mla = model.mla
    if mla is None:
        return model.attention_flops_per_key
    heads = model.num_attention_heads
    return 2.0 * heads * (mla.kv_lora_rank + mla.qk_rope_head_dim) + 2.0 * heads * mla.kv_lora_rank


def prefill_work(model: ModelSpec, length: int) -> tuple[float, float]:
    """(FLOPs, bytes) of causal attention over a whole prompt of `length`, one layer."""
    pairs = length * (length + 1) / 2
    flops = pairs * model.attention_flops_per_key
    return flops, length * (kv_bytes_per_token(model) + attention_act_bytes(model))


def decode_work(model: ModelSpec, batch: int, length: int) -> tuple[float, float]:
    """(FLOPs, bytes) of one decode step's attention: `batch` queries over `length` keys."""
    flops = batch * length * decode_flops_per_pair(model)
    return flops, batch * (length * kv_bytes_per_token(model) + attention_act_bytes(model))


def elementwise_bytes(model: ModelSpec, tokens: int, *, moe: bool = False) -> float:
    """Bytes the memory-bound kernels of one layer move for `tokens`, counted as the
    performance model counts them (fused kernels, each tensor read or written once): two
    residual adds and RMS norms (10 h), rotary on Q and K (read and write), the gated
    activation (read 2 I, write I; 2 I ungated); in an MoE layer (`moe`) the activation of
    every routed copy and of the shared experts, and the copies' permutation (read and
    write h each). `collect` runs them as eager PyTorch ops, so the rate it reports is the
    effective one the model's byte count needs."""
    h, i = model.hidden_size, model.intermediate_size
    rotary = 2 * (model.q_dim + model.kv_dim)
    if moe and model.moe is not None:
        copies = model.moe.num_experts_per_tok
        width = copies * model.moe.expert_intermediate_size
        mlp = 3 * (width + model.moe.shared_expert_intermediate_size) + 2 * copies * h
    else:
        mlp = 3 * i if model.gated_mlp else 2 * i
    return ACTIVATION_BYTES * tokens * (10 * h + rotary + mlp)
