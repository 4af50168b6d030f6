"""What `collect` times: the model's kernel shapes and the grid of sizes, as plain data.

One decoder layer of a dense model runs four GEMMs (vLLM's fused `qkv_proj`, `o_proj`,
`gate_up_proj`, `down_proj`), one attention and a few memory-bound kernels; the output
projection (`lm_head`) runs once per step. `collect` times each at the model's own shapes
over the sizes of `Grid`, and the work it counts for each (FLOPs, bytes) is the work the
performance model counts (`llmsizer.perf.constants`), so a measured time divided by it is
the rate the model's efficiency factors describe.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmsizer.specs import ModelSpec

# bf16 / fp16 activations, KV cache and the unquantized output projection
ACTIVATION_BYTES = 2


@dataclass(frozen=True, slots=True)
class Gemm:
    """One linear layer: `tokens x in_features` times `in_features x out_features`."""

    name: str
    in_features: int
    out_features: int
    per_layer: bool = True

    def flops(self, tokens: int) -> float:
        return 2.0 * tokens * self.in_features * self.out_features

    def bytes(self, tokens: int, weight_bytes: float) -> float:
        """Weights read once, activations read and written once (perf's linear term)."""
        weights = self.in_features * self.out_features * weight_bytes
        return weights + ACTIVATION_BYTES * tokens * (self.in_features + self.out_features)


@dataclass(frozen=True, slots=True)
class Grid:
    """The sizes timed: GEMM token counts, prefill context lengths, decode batches and KV
    lengths, square-GEMM sizes for the peak, the copy size for the bandwidth peak, and the
    end-to-end check's (batch, context) points and layers."""

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


# The default covers what a server sees: 1 to 16k tokens a step (vLLM's chunked prefill
# budget is 2k-16k), prompts to 8k, decode batches to 256 over KV to 8k; about 3 minutes of
# timing on one H100-class GPU (the count of kernels times repeats at these sizes).
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
)


def check_supported(model: ModelSpec) -> None:
    """A ValueError naming what `collect` cannot time yet: it times dense softmax-attention
    models (Llama, Qwen, Mistral families); MoE, MLA and linear attention are not built."""
    unsupported = {
        "mixture-of-experts layers": model.moe is not None,
        "MLA attention": model.mla is not None,
        "linear-attention layers": model.linear_attention is not None,
        "sparse attention": model.sparse_attention is not None,
    }
    found = [what for what, present in unsupported.items() if present]
    if found:
        raise ValueError(
            f"collect times dense models with softmax attention; {model.name} has "
            f"{', '.join(found)}, which it does not time yet"
        )


def layer_gemms(model: ModelSpec) -> tuple[Gemm, ...]:
    """The linear layers of one decoder layer and the output projection (vLLM's fused
    names), at tensor-parallel size 1."""
    check_supported(model)
    h = model.hidden_size
    q_out = model.q_dim * (2 if model.attention_output_gate else 1)
    up = model.intermediate_size * (2 if model.gated_mlp else 1)
    return (
        Gemm("qkv_proj", h, q_out + 2 * model.kv_dim),
        Gemm("o_proj", model.attention_output_dim, h),
        Gemm("gate_up_proj", h, up),
        Gemm("down_proj", model.intermediate_size, h),
        Gemm("lm_head", h, model.vocab_size, per_layer=False),
    )


def kv_bytes_per_token(model: ModelSpec) -> float:
    """K and V of one token in one layer, 16-bit."""
    return 2.0 * model.kv_dim * ACTIVATION_BYTES


def attention_act_bytes(model: ModelSpec) -> float:
    """Q read and O written per token per layer (perf's `attention_act_bytes_per_token`)."""
    return ACTIVATION_BYTES * (model.q_dim + model.attention_output_dim)


def prefill_work(model: ModelSpec, length: int) -> tuple[float, float]:
    """(FLOPs, bytes) of causal attention over a whole prompt of `length`, one layer."""
    pairs = length * (length + 1) / 2
    flops = pairs * model.attention_flops_per_key
    return flops, length * (kv_bytes_per_token(model) + attention_act_bytes(model))


def decode_work(model: ModelSpec, batch: int, length: int) -> tuple[float, float]:
    """(FLOPs, bytes) of one decode step's attention: `batch` queries over `length` keys."""
    flops = batch * length * model.attention_flops_per_key
    return flops, batch * (length * kv_bytes_per_token(model) + attention_act_bytes(model))


def elementwise_bytes(model: ModelSpec, tokens: int) -> float:
    """Bytes the memory-bound kernels of one layer move for `tokens`, counted as the
    performance model counts them (fused kernels, each tensor read or written once): two
    residual adds and RMS norms (10 h), rotary on Q and K (read and write), the gated
    activation (read 2 I, write I; 2 I ungated). `collect` runs them as eager PyTorch ops,
    so the rate it reports is the effective one the model's byte count needs."""
    h, i = model.hidden_size, model.intermediate_size
    activation = 3 * i if model.gated_mlp else 2 * i
    rotary = 2 * (model.q_dim + model.kv_dim)
    return ACTIVATION_BYTES * tokens * (10 * h + rotary + activation)
