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
- multi-token-prediction layers (`num_mtp_layers`) and vision encoders are not counted: they
  are not part of the served decoder (MTP serves only speculative decoding).

Kinds of decoder layer: every layer has attention and an MLP (dense or MoE). The attention is
softmax attention with a KV cache (MHA/GQA, or MLA; optionally windowed, optionally with a
sparse-attention indexer) in `num_kv_cache_layers` layers, and linear attention with a fixed
per-sequence state in the other `num_linear_attention_layers` (Qwen3.5's Gated DeltaNet).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmsizer.specs.dtypes import Precision
from llmsizer.specs.model_parts import (
    LinearAttentionSpec,
    MlaSpec,
    MoeSpec,
    SparseAttentionSpec,
    check_state_dtype,
)

__all__ = ["LinearAttentionSpec", "MlaSpec", "ModelSpec", "MoeSpec", "SparseAttentionSpec"]

# embeddings, lm_head, norms and routers stay 16-bit in quantized checkpoints
_UNQUANTIZED = Precision.BF16


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A decoder-only transformer's architecture. Sizes are counts, not bytes.

    - `gated_mlp`: SwiGLU-style MLP with three matrices (Llama); `False` for two (GPT-J, MPT,
      Falcon).
    - `sliding_window` tokens of attention in `num_sliding_window_layers` of the layers
      (Mistral 7B v0.1: all 32; GPT-OSS: every other layer); the rest attend to everything.
    - `attention_output_gate`: the query projection also produces a sigmoid gate on the
      attention output, doubling its width (Qwen3-Next, Qwen3.5 `attn_output_gate`).
    - `qk_norm_across_heads`: the query and key RMSNorms span every head at once (MiniMax-M2
      `use_qk_norm` with `qk_norm_type` "per_layer": one RMS over all 48 x 128 query values,
      not per head), so under tensor parallelism each layer sums the ranks' statistics
      (`perf.launches.QK_NORM_ACROSS_HEADS`).
    - `linear_attention`: Gated DeltaNet layers in place of softmax attention in
      `linear_attention.num_layers` of the layers (Qwen3.5: 45 of 60).
    - `sparse_attention`: a DeepSeek Sparse Attention indexer in every softmax layer (GLM-5).
    - `num_mtp_layers`: multi-token-prediction layers shipped for speculative decoding; noted,
      not counted in parameters, FLOPs or KV.
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
    attention_output_gate: bool = False
    qk_norm_across_heads: bool = False
    linear_attention: LinearAttentionSpec | None = None
    sparse_attention: SparseAttentionSpec | None = None
    num_mtp_layers: int = 0
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
        if not 0 <= self.num_sliding_window_layers <= self.num_kv_cache_layers:
            raise ValueError(f"model {self.name!r}: num_sliding_window_layers out of range")
        if not 0 <= self.num_linear_attention_layers < self.num_layers:
            raise ValueError(f"model {self.name!r}: linear-attention layers out of range")
        if self.sparse_attention is not None and self.mla is None:
            raise ValueError(f"model {self.name!r}: the sparse-attention indexer needs MLA")
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

    @property
    def num_linear_attention_layers(self) -> int:
        """Layers with linear attention: a fixed state per sequence, no KV cache."""
        return 0 if self.linear_attention is None else self.linear_attention.num_layers

    @property
    def num_kv_cache_layers(self) -> int:
        """Layers with softmax attention over cached keys (windowed ones included)."""
        return self.num_layers - self.num_linear_attention_layers

    @property
    def num_full_attention_layers(self) -> int:
        """Softmax-attention layers that see the whole context (not windowed)."""
        return self.num_kv_cache_layers - self.num_sliding_window_layers

    # ---- parameters per layer -----------------------------------------------------------

    @property
    def attention_params_per_layer(self) -> int:
        """Q, K, V and output projections of one softmax-attention layer (MLA: the down/up
        projections of its latents; an output gate doubles Q; an indexer adds its own)."""
        h = self.hidden_size
        gate = 2 if self.attention_output_gate else 1
        if self.mla is None:
            q = gate * h * self.q_dim
            return q + 2 * h * self.kv_dim + self.attention_output_dim * h
        m = self.mla
        heads = self.num_attention_heads
        q_out = gate * self.q_dim
        q = h * q_out if m.q_lora_rank is None else m.q_lora_rank * (h + q_out)
        kv_down = h * (m.kv_lora_rank + m.qk_rope_head_dim)
        kv_up = m.kv_lora_rank * heads * (m.qk_nope_head_dim + m.v_head_dim)
        indexer = 0
        if self.sparse_attention is not None:
            indexer = self.sparse_attention.projection_params(h, m.q_lora_rank)
        return q + kv_down + kv_up + self.attention_output_dim * h + indexer

    @property
    def attention_params(self) -> int:
        """Attention matmul weights over all layers, softmax and linear."""
        linear = 0
        if self.linear_attention is not None:
            la = self.linear_attention
            linear = la.num_layers * la.projection_params(self.hidden_size)
        return self.num_kv_cache_layers * self.attention_params_per_layer + linear

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

    @property
    def small_layer_params(self) -> int:
        """Non-matmul weights outside the norms, all layers: linear attention's conv taps,
        decay and gated norm; the indexer's key norm."""
        linear = 0
        if self.linear_attention is not None:
            linear = self.linear_attention.num_layers * self.linear_attention.small_params
        indexer = 0
        if self.sparse_attention is not None:
            indexer = self.num_kv_cache_layers * self.sparse_attention.small_params
        return linear + indexer

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
            self.attention_params
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
            + self.small_layer_params
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

    def weight_bytes(self, precision: Precision, moe_precision: Precision | None = None) -> float:
        """Bytes of all weights: linear layers in `precision`, routed experts in
        `moe_precision` (default: `precision`; AIConfigurator's `gemm_quant_mode` and
        `moe_quant_mode`), embeddings, norms and routers in 16 bits."""
        experts = precision if moe_precision is None else moe_precision
        return (
            self.dense_linear_params * precision.bytes_per_element
            + self.routed_expert_params * experts.bytes_per_element
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
        """Attention FLOPs for one new token that sees `context_tokens` tokens: scores and
        weighted sums over the keys each softmax layer reads (a window, or an indexer's top-k,
        caps them), the indexer's scores over the whole context, and the linear-attention
        state update, which does not depend on the context."""
        sparse = self.sparse_attention
        cap = self.sliding_window
        windowed = min(context_tokens, cap or context_tokens)
        read = context_tokens if sparse is None else min(context_tokens, sparse.index_topk)
        keys = self.num_full_attention_layers * read + self.num_sliding_window_layers * windowed
        flops = self.attention_flops_per_key * keys
        if sparse is not None:
            flops += self.num_kv_cache_layers * sparse.flops_per_key * context_tokens
        if self.linear_attention is not None:
            la = self.linear_attention
            flops += la.num_layers * la.flops_per_token_per_layer
        return flops

    def kv_bytes_per_token_per_layer(self, kv_precision: Precision) -> float:
        """KV-cache bytes one token adds in one softmax layer: K and V, or MLA's shared
        latent, plus the sparse-attention indexer's FP8 key when there is one."""
        values = self.kv_dim if self.mla is not None else 2 * self.kv_dim
        indexer = (
            0.0 if self.sparse_attention is None else self.sparse_attention.key_bytes_per_token
        )
        return values * kv_precision.bytes_per_element + indexer

    def kv_bytes_per_token(self, kv_precision: Precision) -> float:
        """KV-cache bytes per token over the softmax-attention layers (sliding layers counted
        in full, as a block manager without hybrid allocation keeps them; linear-attention
        layers hold no KV: see `linear_state_bytes_per_sequence`)."""
        return self.num_kv_cache_layers * self.kv_bytes_per_token_per_layer(kv_precision)

    def linear_state_bytes_per_sequence(
        self, activation_precision: Precision, mamba_ssm_dtype: str | None = None
    ) -> float:
        """Bytes of linear-attention state one sequence holds, whatever its length (0 for a
        model without linear attention); `mamba_ssm_dtype` the recurrent state's dtype where
        the launch names one (`STATE_DTYPE_BYTES`), else the config's."""
        if self.linear_attention is None:
            return 0.0
        recurrent = None if mamba_ssm_dtype is None else check_state_dtype(mamba_ssm_dtype)
        return self.linear_attention.state_bytes_per_sequence(
            activation_precision.bytes_per_element, recurrent
        )
