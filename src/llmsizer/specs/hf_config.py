"""Hugging Face `config.json` -> `ModelSpec`, across the naming schemes of model families.

Field names differ by family: Llama/Mistral/Qwen use `num_hidden_layers`, GPT-J uses
`n_layer`, MPT `n_layers`; experts are `num_local_experts` (Mixtral, GPT-OSS), `num_experts`
(Qwen MoE) or `n_routed_experts` (DeepSeek). Each fact is read from the first name present;
a required fact with none of its names raises an error naming them. Multimodal configs with
a `text_config` (Kimi K2.5, Qwen3.5) are read from it; the vision encoder is not modeled.

The architecture variants of recent MoE models, and the fields they are read from:
- MLA (DeepSeek-V3, Kimi K2/K2.5, GLM-5): `kv_lora_rank`, `q_lora_rank`, `qk_nope_head_dim`,
  `qk_rope_head_dim`, `v_head_dim`.
- MoE: `n_routed_experts` / `num_experts` / `num_local_experts`, `num_experts_per_tok`,
  `moe_intermediate_size` (MiniMax M2 has no dense MLP and gives the expert width as
  `intermediate_size`); shared experts as `n_shared_experts` x expert width or one
  `shared_expert_intermediate_size` (Qwen) / `shared_intermediate_size` (MiniMax, 0 = none);
  dense layers from `first_k_dense_replace` + `moe_layer_freq` or `decoder_sparse_step` +
  `mlp_only_layers`.
- Layer kinds from `layer_types` (`full_attention`, `sliding_attention`, `linear_attention`)
  or `full_attention_interval`; Gated DeltaNet shapes from `linear_num_key_heads`,
  `linear_num_value_heads`, `linear_key_head_dim`, `linear_value_head_dim`,
  `linear_conv_kernel_dim`, state dtype `mamba_ssm_dtype`. MiniMax's `attn_type_list`
  (1 = softmax, 0 = lightning attention) must be all softmax: lightning layers are not
  modeled and raise an error.
- `attn_output_gate` (Qwen3.5): a gate doubles the query projection.
- DeepSeek Sparse Attention (GLM-5, DeepSeek-V3.2): `index_topk`, `index_n_heads`,
  `index_head_dim`.
- Multi-token prediction, noted but not served: `num_nextn_predict_layers` (DeepSeek, GLM),
  `mtp_num_hidden_layers` (Qwen3.5), `num_mtp_modules` x `mtp_transformer_layers` (MiniMax).

Families whose MLP is a plain two-matrix GELU MLP are listed in `_PLAIN_MLP_TYPES`; every
other model type is taken to have a gated (SwiGLU) MLP, as all recent families do.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from llmsizer.errors import parse_json, read_text
from llmsizer.specs.model_parts import check_state_dtype
from llmsizer.specs.models import (
    LinearAttentionSpec,
    MlaSpec,
    ModelSpec,
    MoeSpec,
    SparseAttentionSpec,
)

_PLAIN_MLP_TYPES = frozenset(
    {"gptj", "gpt2", "gpt_neox", "mpt", "falcon", "opt", "bloom", "gpt_bigcode", "phi"}
)
_MAX_COUNT = 2**31  # far above any model's count; products of counts still fit an int64
_MAX_LAYERS = 10_000  # the deepest released models have a few hundred


def read_hf_config(source: str | Path) -> dict[str, Any]:
    """Load `config.json` from a file path or a directory holding one (a ValueError if bad)."""
    path = Path(source)
    if path.is_dir():
        path = path / "config.json"
    config = parse_json(read_text(path, "model config"), path, "model config")
    if not isinstance(config, dict):
        raise ValueError(f"model config '{path}' must hold a JSON object, not a {type(config)}")
    return config


def model_from_hf_config(
    config: str | Path | Mapping[str, Any],
    name: str | None = None,
    hf_repo_id: str | None = None,
    source: str = "",
) -> ModelSpec:
    """Build a `ModelSpec` from a config dict or file; `name` defaults to the file's stem."""
    if not isinstance(config, Mapping):
        path = Path(config)
        name = name or (path.name if path.is_dir() else path.parent.name or path.stem)
        source = source or f"config.json at {path}"
        config = read_hf_config(path)
    reader = _Reader(config, name or str(config.get("_name_or_path") or "custom-model"))
    try:
        if "text_config" in config:
            config = reader.config = {**config, **config["text_config"]}
        return _model(reader, config, hf_repo_id, source)
    except (TypeError, AttributeError, OverflowError) as e:
        # a field of the wrong type (a list where a number goes) in a helper below
        raise ValueError(f"config for {reader.name!r}: a field has the wrong type ({e})") from e


def _model(reader: _Reader, config: Mapping[str, Any], repo: str | None, source: str) -> ModelSpec:
    hidden = reader.int("hidden_size", "n_embd", "d_model")
    heads = reader.int("num_attention_heads", "n_head", "n_heads")
    layers = reader.int("num_hidden_layers", "n_layer", "n_layers", "num_layers")
    if layers > _MAX_LAYERS:  # per-layer loops below would run for minutes
        raise ValueError(f"config for {reader.name!r}: {layers} layers, at most {_MAX_LAYERS}")
    model_type = str(config.get("model_type", "")).lower()
    mla = _mla(reader)
    _check_layer_kinds(config, layers)
    window, num_window_layers = _sliding_window(config, layers)
    return ModelSpec(
        name=reader.name,
        num_layers=layers,
        hidden_size=hidden,
        intermediate_size=_intermediate_size(reader, config, hidden),
        num_attention_heads=heads,
        num_key_value_heads=heads if mla is not None else _kv_heads(reader, config, heads),
        head_dim=reader.optional_int("head_dim") or hidden // heads,
        vocab_size=reader.int("vocab_size", "padded_vocab_size"),
        tie_word_embeddings=_tied(config, model_type),
        gated_mlp=model_type not in _PLAIN_MLP_TYPES,
        moe=_moe(reader, config, layers),
        mla=mla,
        sliding_window=window,
        num_sliding_window_layers=num_window_layers,
        attention_output_gate=bool(config.get("attn_output_gate", False)),
        # MiniMax-M2: RMSNorm(head_dim x heads) on the whole q / k (HF modeling_minimax_m2)
        qk_norm_across_heads=bool(config.get("use_qk_norm", False))
        and config.get("qk_norm_type") == "per_layer",
        linear_attention=_linear_attention(reader, config, layers),
        sparse_attention=_sparse_attention(reader),
        num_mtp_layers=_num_mtp_layers(config),
        max_position_embeddings=reader.optional_int(
            "max_position_embeddings", "n_positions", "max_seq_len", "seq_length"
        ),
        hf_repo_id=repo,
        source=source,
    )


class _Reader:
    """Reads the first present of several field names; names them all when none is."""

    def __init__(self, config: Mapping[str, Any], name: str) -> None:
        self.config = config
        self.name = name

    def optional_int(self, *keys: str) -> int | None:
        for key in keys:
            value = self.config.get(key)
            if value is not None:
                return self.count(key, value)
        return None

    def count(self, key: str, value: Any) -> int:
        integral = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        if isinstance(value, bool) or not integral or not 1 <= value <= _MAX_COUNT:
            raise ValueError(f"config for {self.name!r}: {key} = {value!r}, not 1 to {_MAX_COUNT}")
        return int(value)

    def int(self, *keys: str) -> int:
        value = self.optional_int(*keys)
        if value is None:
            raise ValueError(f"config for {self.name!r} has none of the fields {', '.join(keys)}")
        return value


def _kv_heads(reader: _Reader, config: Mapping[str, Any], heads: int) -> int:
    """GQA/MQA KV heads: explicit counts, Falcon's `multi_query`, MPT's `attn_config`."""
    for key in ("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num"):
        if config.get(key) is not None:
            return reader.count(key, config[key])
    attn_config = config.get("attn_config") or {}
    if attn_config.get("kv_n_heads"):
        return int(attn_config["kv_n_heads"])
    if config.get("multi_query") and not config.get("new_decoder_architecture"):
        return 1
    return heads


def _intermediate_size(reader: _Reader, config: Mapping[str, Any], hidden: int) -> int:
    """Dense MLP width; MPT states a ratio, GPT-J and Falcon default to 4 x hidden."""
    explicit = reader.optional_int("intermediate_size", "n_inner", "ffn_hidden_size", "ffn_dim")
    if explicit is not None:
        return explicit
    ratio = config.get("expansion_ratio", 4)
    return int(ratio * hidden)


def _tied(config: Mapping[str, Any], model_type: str) -> bool:
    """Transformers' default is tied; MPT always shares its embedding (it has no lm_head)."""
    if model_type == "mpt":
        return True
    return bool(config.get("tie_word_embeddings", True))


def _moe(reader: _Reader, config: Mapping[str, Any], layers: int) -> MoeSpec | None:
    num_experts = reader.optional_int("num_local_experts", "num_experts", "n_routed_experts")
    if not num_experts:
        return None
    top_k = reader.int("num_experts_per_tok", "experts_per_token", "num_experts_per_token")
    width = reader.optional_int("moe_intermediate_size") or reader.int("intermediate_size")
    num_shared = int(config.get("n_shared_experts") or 0)
    shared_width = num_shared * width
    # Qwen2-MoE, Qwen3.5: one shared expert of its own width; MiniMax: the same, 0 = none
    one_shared = config.get("shared_expert_intermediate_size") or config.get(
        "shared_intermediate_size"
    )
    if one_shared:
        num_shared = 1
        shared_width = int(one_shared)
    return MoeSpec(
        num_experts=num_experts,
        num_experts_per_tok=top_k,
        expert_intermediate_size=width,
        num_moe_layers=_num_moe_layers(config, layers),
        num_shared_experts=num_shared,
        shared_expert_intermediate_size=shared_width,
    )


def _num_moe_layers(config: Mapping[str, Any], layers: int) -> int:
    """Layers with experts. DeepSeek: layer i >= `first_k_dense_replace` with
    i % `moe_layer_freq` == 0. Qwen MoE: (i + 1) % `decoder_sparse_step` == 0 unless i is in
    `mlp_only_layers`. Otherwise (Mixtral, GPT-OSS): every layer."""
    if "first_k_dense_replace" in config or "moe_layer_freq" in config:
        first_dense = max(0, int(config.get("first_k_dense_replace") or 0))
        freq = int(config.get("moe_layer_freq") or 1)
        return sum(1 for i in range(first_dense, layers) if i % freq == 0)
    step = int(config.get("decoder_sparse_step") or 1)
    mlp_only = set(config.get("mlp_only_layers") or ())
    return sum(1 for i in range(layers) if (i + 1) % step == 0 and i not in mlp_only)


def _mla(reader: _Reader) -> MlaSpec | None:
    kv_lora_rank = reader.optional_int("kv_lora_rank")
    if kv_lora_rank is None:
        return None
    return MlaSpec(
        q_lora_rank=reader.optional_int("q_lora_rank"),
        kv_lora_rank=kv_lora_rank,
        qk_nope_head_dim=reader.int("qk_nope_head_dim"),
        qk_rope_head_dim=reader.int("qk_rope_head_dim"),
        v_head_dim=reader.int("v_head_dim"),
    )


def _sliding_window(config: Mapping[str, Any], layers: int) -> tuple[int | None, int]:
    """(window, layers using it): `layer_types` (GPT-OSS), or one window for all layers
    (Mistral v0.1) unless `use_sliding_window` is false (Qwen2/2.5/3)."""
    window = config.get("sliding_window")
    if not window or config.get("use_sliding_window") is False:
        return None, 0
    layer_types = config.get("layer_types")
    if layer_types:
        return int(window), sum(1 for t in layer_types if t == "sliding_attention")
    return int(window), layers


_LAYER_KINDS = frozenset({"full_attention", "sliding_attention", "linear_attention"})


def _check_layer_kinds(config: Mapping[str, Any], layers: int) -> None:
    """Refuse layer kinds this model does not price, rather than pricing them as attention."""
    layer_types = config.get("layer_types")
    if layer_types:
        unknown = set(layer_types) - _LAYER_KINDS
        if unknown or len(layer_types) != layers:
            raise ValueError(
                f"layer_types: {len(layer_types)} entries for {layers} layers, kinds "
                f"{sorted(set(layer_types))}; modeled kinds: {sorted(_LAYER_KINDS)}"
            )
    attn_types = config.get("attn_type_list")
    if attn_types and any(int(t) != 1 for t in attn_types):
        raise ValueError("attn_type_list has lightning-attention layers (0), not modeled")


def _linear_layer_count(config: Mapping[str, Any], layers: int) -> int:
    """Linear-attention layers from `layer_types`, else every layer but each
    `full_attention_interval`-th (Qwen3-Next: layer i is full when (i + 1) % interval == 0)."""
    layer_types = config.get("layer_types")
    if layer_types:
        return sum(1 for t in layer_types if t == "linear_attention")
    interval = int(config.get("full_attention_interval") or 0)
    if interval:
        return layers - layers // interval
    return 0


def _linear_attention(
    reader: _Reader, config: Mapping[str, Any], layers: int
) -> LinearAttentionSpec | None:
    count = _linear_layer_count(config, layers)
    if not count:
        return None
    dtype = config.get("mamba_ssm_dtype")
    return LinearAttentionSpec(
        num_layers=count,
        num_key_heads=reader.int("linear_num_key_heads"),
        num_value_heads=reader.int("linear_num_value_heads"),
        key_head_dim=reader.int("linear_key_head_dim"),
        value_head_dim=reader.int("linear_value_head_dim"),
        conv_kernel_size=reader.int("linear_conv_kernel_dim"),
        recurrent_state_bytes_per_element=None if dtype is None else check_state_dtype(str(dtype)),
    )


def _sparse_attention(reader: _Reader) -> SparseAttentionSpec | None:
    topk = reader.optional_int("index_topk")
    if topk is None:
        return None
    return SparseAttentionSpec(
        index_topk=topk,
        index_n_heads=reader.int("index_n_heads"),
        index_head_dim=reader.int("index_head_dim"),
    )


def _num_mtp_layers(config: Mapping[str, Any]) -> int:
    """Multi-token-prediction layers shipped beside the decoder (not served as layers)."""
    for key in ("num_nextn_predict_layers", "mtp_num_hidden_layers"):
        if config.get(key):
            return int(config[key])
    if config.get("use_mtp") is False:
        return 0
    modules = int(config.get("num_mtp_modules") or 0)
    return modules * int(config.get("mtp_transformer_layers") or 1)
