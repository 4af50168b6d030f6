"""The parts of a model that only some architectures have: experts, latent attention, linear
attention, a sparse-attention indexer. `ModelSpec` holds one of each or `None`.

Each part knows its own shapes and per-layer costs; how they add up over the model's layers
is `ModelSpec`'s business. Sizes are counts of values, not bytes, except where a name says
`bytes`.
"""

from __future__ import annotations

from dataclasses import dataclass

# DeepSeek-V3.2's lightning indexer caches each key in FP8 with one FP32 scale per 128
# values, whatever the main KV-cache dtype (deepseek-ai/DeepSeek-V3.2-Exp inference/model.py,
# `Indexer.k_cache` float8_e4m3fn and `k_scale_cache` float32 over `head_dim // block_size`,
# block_size 128)
_INDEXER_KEY_BYTES_PER_VALUE = 1.0
_INDEXER_SCALE_BYTES = 4.0
_INDEXER_SCALE_BLOCK = 128
# The recurrent-state dtypes a Gated DeltaNet / Mamba layer may keep, by their config and
# engine-flag names (HF `mamba_ssm_dtype`; SGLang `--mamba-ssm-dtype` choices float32,
# bfloat16, float16; vLLM `mamba_ssm_cache_dtype`), in bytes per value
STATE_DTYPE_BYTES = {"float32": 4.0, "bfloat16": 2.0, "float16": 2.0}


def check_state_dtype(name: str) -> float:
    """Bytes per value of a recurrent-state dtype named as in `STATE_DTYPE_BYTES`."""
    if name not in STATE_DTYPE_BYTES:
        raise ValueError(f"mamba_ssm_dtype {name!r}; known: {sorted(STATE_DTYPE_BYTES)}")
    return STATE_DTYPE_BYTES[name]


@dataclass(frozen=True, slots=True)
class MoeSpec:
    """Mixture of experts in `num_moe_layers` of the model's layers.

    Every expert is a gated MLP of width `expert_intermediate_size`; a token goes to
    `num_experts_per_tok` routed experts plus all `num_shared_experts` (DeepSeek, Kimi, GLM,
    Qwen2-MoE, Qwen3.5), whose combined width is `shared_expert_intermediate_size`.
    """

    num_experts: int
    num_experts_per_tok: int
    expert_intermediate_size: int
    num_moe_layers: int
    num_shared_experts: int = 0
    shared_expert_intermediate_size: int = 0


@dataclass(frozen=True, slots=True)
class MlaSpec:
    """Multi-head latent attention (DeepSeek-V2/V3, Kimi K2, GLM-5): K and V live in a shared
    latent.

    The KV cache stores `kv_lora_rank + qk_rope_head_dim` values per token per layer, the
    same for every head (DeepSeek-V3 report, sec. 2.1.1).
    """

    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True, slots=True)
class LinearAttentionSpec:
    """Gated DeltaNet linear-attention layers (Qwen3-Next, Qwen3.5: `layer_types` entries
    `linear_attention`), which keep a fixed-size recurrent state per sequence instead of a
    KV cache that grows with the context.

    Shapes as in transformers' `Qwen3_5MoeGatedDeltaNet`: Q and K have `num_key_heads` heads
    of `key_head_dim`, V and the output gate `num_value_heads` of `value_head_dim`; Q, K and V
    pass a depthwise causal convolution of `conv_kernel_size` taps. Per sequence and layer the
    state is the recurrent matrix (`num_value_heads x key_head_dim x value_head_dim` values, in
    `recurrent_state_bytes_per_element` when the config says so, e.g. `mamba_ssm_dtype:
    float32`) plus the convolution's last `conv_kernel_size - 1` inputs.
    """

    num_layers: int
    num_key_heads: int
    num_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel_size: int
    recurrent_state_bytes_per_element: float | None = None

    @property
    def key_dim(self) -> int:
        return self.num_key_heads * self.key_head_dim

    @property
    def value_dim(self) -> int:
        return self.num_value_heads * self.value_head_dim

    @property
    def conv_dim(self) -> int:
        """Channels of the causal convolution: Q, K and V together."""
        return 2 * self.key_dim + self.value_dim

    def projection_params(self, hidden_size: int) -> int:
        """Matmul weights of one layer: QKV, output gate z, beta and decay a in; out_proj."""
        qkv = hidden_size * self.conv_dim
        gate = hidden_size * self.value_dim
        beta_and_decay = 2 * hidden_size * self.num_value_heads
        out = self.value_dim * hidden_size
        return qkv + gate + beta_and_decay + out

    @property
    def small_params(self) -> int:
        """Non-matmul weights of one layer: conv taps, dt bias, A_log, gated norm."""
        return (
            self.conv_dim * self.conv_kernel_size + 2 * self.num_value_heads + self.value_head_dim
        )

    @property
    def recurrent_state_elements(self) -> int:
        """Values in one layer's recurrent state for one sequence."""
        return self.num_value_heads * self.key_head_dim * self.value_head_dim

    @property
    def conv_state_elements(self) -> int:
        """Values in one layer's convolution state for one sequence."""
        return self.conv_dim * (self.conv_kernel_size - 1)

    def state_bytes_per_sequence(
        self, activation_bytes_per_element: float, recurrent_bytes_per_element: float | None = None
    ) -> float:
        """Bytes of state one sequence holds over all linear-attention layers; constant in
        the context length. The recurrent state is in `recurrent_bytes_per_element` when the
        launch names its dtype (SGLang `--mamba-ssm-dtype`), else in the config's, else in
        the activation dtype; the convolution state in the activation dtype."""
        recurrent = (
            recurrent_bytes_per_element
            or self.recurrent_state_bytes_per_element
            or activation_bytes_per_element
        )
        per_layer = (
            self.recurrent_state_elements * recurrent
            + self.conv_state_elements * activation_bytes_per_element
        )
        return self.num_layers * per_layer

    @property
    def flops_per_token_per_layer(self) -> float:
        """Recurrent-update FLOPs for one token in one layer (decode form), per value head
        and state entry: decay (1), S^T k (2), the rank-1 update k (v - S^T k) beta (2), and
        S^T q (2): 7 FLOPs. The chunked prefill form does the same work plus intra-chunk
        terms (Yang et al. 2024, "Gated Delta Networks")."""
        return 7.0 * self.recurrent_state_elements


@dataclass(frozen=True, slots=True)
class SparseAttentionSpec:
    """DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): a lightning indexer scores every
    cached token for each query with `index_n_heads` heads of `index_head_dim`, and the main
    (MLA) attention reads only the `index_topk` best-scoring tokens.

    Per layer the indexer has `wq_b` (from the query latent), `wk` with a LayerNorm, and a
    per-head weight projection (`Indexer` in deepseek-ai/DeepSeek-V3.2-Exp inference/model.py).
    Its keys are cached beside the MLA latent in FP8 with FP32 block scales.
    """

    index_topk: int
    index_n_heads: int
    index_head_dim: int

    def projection_params(self, hidden_size: int, q_lora_rank: int | None) -> int:
        """Matmul weights of one layer's indexer: wq_b, wk and weights_proj."""
        query_in = hidden_size if q_lora_rank is None else q_lora_rank
        wq_b = query_in * self.index_n_heads * self.index_head_dim
        wk = hidden_size * self.index_head_dim
        weights = hidden_size * self.index_n_heads
        return wq_b + wk + weights

    @property
    def small_params(self) -> int:
        """The key LayerNorm's weight and bias."""
        return 2 * self.index_head_dim

    @property
    def key_bytes_per_token(self) -> float:
        """Indexer-cache bytes one token adds in one layer: FP8 key plus its FP32 scales."""
        blocks = -(-self.index_head_dim // _INDEXER_SCALE_BLOCK)
        return self.index_head_dim * _INDEXER_KEY_BYTES_PER_VALUE + blocks * _INDEXER_SCALE_BYTES

    @property
    def flops_per_key(self) -> float:
        """Indexer FLOPs per (query, cached key) pair in one layer: a dot product per head,
        2 per multiply-add, plus the weighted sum over heads."""
        return 2.0 * self.index_n_heads * self.index_head_dim + 2.0 * self.index_n_heads
