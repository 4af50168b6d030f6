"""Model architectures: the facts of a Hugging Face `config.json`, and what follows from them.

Only architecture is typed in (layers, widths, heads, experts); parameter counts, weight
bytes, FLOPs per token and KV bytes per token are derived here, so a new model needs a
config, not a spreadsheet. Build one with `ModelSpec.from_hf_config(path_or_dict)`, or look
up the catalog with `llmsizer.specs.get_model(name)`.

Counting conventions (checked against published totals in tests/specs):
- `total_params` counts every weight: embeddings, all experts, norms; not biases (< 0.1 %).
- `active_params` is what one token touches: routed experts only `num_experts_per_tok` of
  them, embeddings included (Mistral's "12.9B active" for Mixtral 8x7B counts them).
- matrix-multiply FLOPs are 2 per weight per token (Kaplan et al. 2020, "Scaling Laws",
  C_forward = 2N); the output projection counts even when tied to the embedding.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmsizer.specs.dtypes import Precision

# embeddings, lm_head, norms and routers stay 16-bit in quantized checkpoints
_UNQUANTIZED = Precision.BF16


@dataclass(frozen=True, slots=True)
class MoeSpec:
    """Mixture of experts in `num_moe_layers` of the model's layers.

    Every expert is a gated MLP of width `expert_intermediate_size`; a token goes to
    `num_experts_per_tok` routed experts plus all `num_shared_experts` (DeepSeek, Qwen2-MoE),
    whose combined width is `shared_expert_intermediate_size`.
    """

    num_experts: int
    num_experts_per_tok: int
    expert_intermediate_size: int
    num_moe_layers: int
    num_shared_experts: int = 0
    shared_expert_intermediate_size: int = 0


@dataclass(frozen=True, slots=True)
class MlaSpec:
    """Multi-head latent attention (DeepSeek-V2/V3): K and V live in a shared latent.

    The KV cache stores `kv_lora_rank + qk_rope_head_dim` values per token per layer, the
    same for every head (DeepSeek-V3 report, sec. 2.1.1).
    """

    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A decoder-only transformer's architecture. Sizes are counts, not bytes.

    - `gated_mlp`: SwiGLU-style MLP with three matrices (Llama); `False` for two (GPT-J, MPT,
      Falcon).
    - `sliding_window` tokens of attention in `num_sliding_window_layers` of the layers
      (Mistral 7B v0.1: all 32; GPT-OSS: every other layer); the rest attend to everything.
    """

    name: str
    num_layers: int
    hidden_size: int
    intermediate_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    tie_word_embeddings: bool = False
    gated_mlp: bool = True
    moe: MoeSpec | None = None
    mla: MlaSpec | None = None
    sliding_window: int | None = None
    num_sliding_window_layers: int = 0
    max_position_embeddings: int | None = None
    hf_repo_id: str | None = None
    source: str = ""

    def __post_init__(self) -> None:
        counts = {
            "num_layers": self.num_layers,
            "hidden_size": self.hidden_size,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "vocab_size": self.vocab_size,
        }
        bad = {k: v for k, v in counts.items() if v < 1}
        if bad:
            raise ValueError(f"model {self.name!r}: counts must be >= 1, got {bad}")
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"model {self.name!r}: {self.num_attention_heads} attention heads are not a "
                f"multiple of {self.num_key_value_heads} KV heads"
            )
        if not 0 <= self.num_sliding_window_layers <= self.num_layers:
            raise ValueError(f"model {self.name!r}: num_sliding_window_layers out of range")
        if self.num_sliding_window_layers and self.sliding_window is None:
            raise ValueError(f"model {self.name!r}: sliding-window layers need sliding_window")

    @classmethod
    def from_hf_config(
        cls, config: str | Path | Mapping[str, Any], name: str | None = None
    ) -> ModelSpec:
        """Read a Hugging Face `config.json` (a path, a directory holding one, or its dict)."""
        from llmsizer.specs.hf_config import model_from_hf_config

        return model_from_hf_config(config, name)

    # ---- shapes -------------------------------------------------------------------------

    @property
    def q_dim(self) -> int:
        """Width of all query heads together (MLA: nope + rope dims per head)."""
        if self.mla is not None:
            qk_head_dim = self.mla.qk_nope_head_dim + self.mla.qk_rope_head_dim
            return self.num_attention_heads * qk_head_dim
        return self.num_attention_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of K (or of V) for all KV heads together; MLA: the latent plus rope key."""
        if self.mla is not None:
            return self.mla.kv_lora_rank + self.mla.qk_rope_head_dim
        return self.num_key_value_heads * self.head_dim

    @property
    def attention_output_dim(self) -> int:
        """Input width of the output projection: heads times value dim."""
        if self.mla is not None:
            return self.num_attention_heads * self.mla.v_head_dim
        return self.num_attention_heads * self.head_dim

    @property
    def num_moe_layers(self) -> int:
        return 0 if self.moe is None else self.moe.num_moe_layers

    @property
    def num_dense_layers(self) -> int:
        return self.num_layers - self.num_moe_layers

    # ---- parameters per layer -----------------------------------------------------------

    @property
    def attention_params_per_layer(self) -> int:
        """Q, K, V and output projections (MLA: the down/up projections of its latents)."""
        h = self.hidden_size
        if self.mla is None:
            return h * self.q_dim + 2 * h * self.kv_dim + self.attention_output_dim * h
        m = self.mla
        heads = self.num_attention_heads
        q = h * self.q_dim if m.q_lora_rank is None else m.q_lora_rank * (h + self.q_dim)
        kv_down = h * (m.kv_lora_rank + m.qk_rope_head_dim)
        kv_up = m.kv_lora_rank * heads * (m.qk_nope_head_dim + m.v_head_dim)
        return q + kv_down + kv_up + self.attention_output_dim * h

    @property
    def dense_mlp_params_per_layer(self) -> int:
        matrices = 3 if self.gated_mlp else 2
        return matrices * self.hidden_size * self.intermediate_size

    @property
    def expert_params(self) -> int:
        """One routed expert in one layer (a gated MLP); 0 for a dense model."""
        return 0 if self.moe is None else 3 * self.hidden_size * self.moe.expert_intermediate_size

    @property
    def shared_expert_params(self) -> int:
        """All shared experts of one MoE layer together."""
        if self.moe is None:
            return 0
        return 3 * self.hidden_size * self.moe.shared_expert_intermediate_size

    @property
    def router_params(self) -> int:
        return 0 if self.moe is None else self.hidden_size * self.moe.num_experts

    @property
    def norm_params_per_layer(self) -> int:
        latent_norms = 0
        if self.mla is not None:
            latent_norms = self.mla.kv_lora_rank + (self.mla.q_lora_rank or 0)
        return 2 * self.hidden_size + latent_norms

    # ---- totals -------------------------------------------------------------------------

    @property
    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size

    @property
    def lm_head_params(self) -> int:
        """Stored output-projection weights: 0 when tied to the embedding."""
        return 0 if self.tie_word_embeddings else self.vocab_size * self.hidden_size

    @property
    def dense_linear_params(self) -> int:
        """Matmul weights every token uses in the decoder layers: attention, dense MLPs,
        shared experts (routers excluded: they stay 16-bit and are tiny)."""
        return (
            self.num_layers * self.attention_params_per_layer
            + self.num_dense_layers * self.dense_mlp_params_per_layer
            + self.num_moe_layers * self.shared_expert_params
        )

    @property
    def routed_expert_params(self) -> int:
        """All routed experts of all MoE layers."""
        if self.moe is None:
            return 0
        return self.num_moe_layers * self.moe.num_experts * self.expert_params

    @property
    def unquantized_params(self) -> int:
        """Weights quantized checkpoints keep in 16 bits: embeddings, lm_head, norms, routers."""
        return (
            self.embedding_params
            + self.lm_head_params
            + self.num_layers * self.norm_params_per_layer
            + self.hidden_size  # final norm
            + self.num_moe_layers * self.router_params
        )

    @property
    def total_params(self) -> int:
        return self.dense_linear_params + self.routed_expert_params + self.unquantized_params

    @property
    def active_params(self) -> int:
        """Weights one token touches: only `num_experts_per_tok` routed experts per layer."""
        if self.moe is None:
            return self.total_params
        inactive = self.moe.num_experts - self.moe.num_experts_per_tok
        return self.total_params - self.num_moe_layers * inactive * self.expert_params

    def weight_bytes(self, precision: Precision) -> float:
        """Bytes of all weights with linear layers in `precision`, the rest in 16 bits."""
        quantized = self.dense_linear_params + self.routed_expert_params
        return (
            quantized * precision.bytes_per_element
            + self.unquantized_params * _UNQUANTIZED.bytes_per_element
        )

    # ---- per-token costs ----------------------------------------------------------------

    @property
    def linear_flops_per_token(self) -> float:
        """2 x active matmul weights, output projection included (Kaplan et al. 2020)."""
        active_experts = 0
        if self.moe is not None:
            active_experts = self.num_moe_layers * self.moe.num_experts_per_tok * self.expert_params
        lm_head = self.vocab_size * self.hidden_size
        router = self.num_moe_layers * self.router_params
        return 2.0 * (self.dense_linear_params + active_experts + router + lm_head)

    @property
    def attention_flops_per_key(self) -> float:
        """FLOPs per (query token, key token) pair per layer: Q.K^T plus P.V, 2 per MAC.

        MHA/GQA: 2 * heads * head_dim for each of the two products. MLA as in prefill (keys
        of nope + rope dims, values of v_head_dim), without weight absorption.
        """
        if self.mla is None:
            return 4.0 * self.num_attention_heads * self.head_dim
        return 2.0 * self.q_dim + 2.0 * self.attention_output_dim

    def attention_flops_per_token(self, context_tokens: int) -> float:
        """Attention-score FLOPs for one new token that sees `context_tokens` tokens."""
        full_layers = self.num_layers - self.num_sliding_window_layers
        windowed = min(context_tokens, self.sliding_window or context_tokens)
        keys = full_layers * context_tokens + self.num_sliding_window_layers * windowed
        return self.attention_flops_per_key * keys

    def kv_bytes_per_token_per_layer(self, kv_precision: Precision) -> float:
        """KV-cache bytes one token adds in one layer: K and V, or MLA's shared latent."""
        values = self.kv_dim if self.mla is not None else 2 * self.kv_dim
        return values * kv_precision.bytes_per_element

    def kv_bytes_per_token(self, kv_precision: Precision) -> float:
        """KV-cache bytes per token over all layers (sliding layers counted in full, as a
        block manager without hybrid allocation keeps them)."""
        return self.num_layers * self.kv_bytes_per_token_per_layer(kv_precision)
