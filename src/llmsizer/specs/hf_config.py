"""Hugging Face `config.json` -> `ModelSpec`, across the naming schemes of model families.

Field names differ by family: Llama/Mistral/Qwen use `num_hidden_layers`, GPT-J uses
`n_layer`, MPT `n_layers`; experts are `num_local_experts` (Mixtral, GPT-OSS), `num_experts`
(Qwen MoE) or `n_routed_experts` (DeepSeek). Each fact is read from the first name present;
a required fact with none of its names raises an error naming them. Multimodal configs with
a `text_config` are read from it.

Families whose MLP is a plain two-matrix GELU MLP are listed in `_PLAIN_MLP_TYPES`; every
other model type is taken to have a gated (SwiGLU) MLP, as all recent families do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from llmsizer.specs.models import MlaSpec, ModelSpec, MoeSpec

_PLAIN_MLP_TYPES = frozenset(
    {"gptj", "gpt2", "gpt_neox", "mpt", "falcon", "opt", "bloom", "gpt_bigcode", "phi"}
)


def read_hf_config(source: str | Path) -> dict[str, Any]:
    """Load `config.json` from a file path or a directory holding one."""
    path = Path(source)
    if path.is_dir():
        path = path / "config.json"
    with path.open() as f:
        config: dict[str, Any] = json.load(f)
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
    if "text_config" in config:
        config = {**config, **config["text_config"]}
    reader = _Reader(config, name or str(config.get("_name_or_path") or "custom-model"))
    hidden = reader.int("hidden_size", "n_embd", "d_model")
    heads = reader.int("num_attention_heads", "n_head", "n_heads")
    layers = reader.int("num_hidden_layers", "n_layer", "n_layers", "num_layers")
    model_type = str(config.get("model_type", "")).lower()
    mla = _mla(reader)
    window, num_window_layers = _sliding_window(config, layers)
    return ModelSpec(
        name=reader.name,
        num_layers=layers,
        hidden_size=hidden,
        intermediate_size=_intermediate_size(reader, config, hidden),
        num_attention_heads=heads,
        num_key_value_heads=heads if mla is not None else _kv_heads(config, heads),
        head_dim=int(config.get("head_dim") or hidden // heads),
        vocab_size=reader.int("vocab_size", "padded_vocab_size"),
        tie_word_embeddings=_tied(config, model_type),
        gated_mlp=model_type not in _PLAIN_MLP_TYPES,
        moe=_moe(reader, config, layers),
        mla=mla,
        sliding_window=window,
        num_sliding_window_layers=num_window_layers,
        max_position_embeddings=reader.optional_int(
            "max_position_embeddings", "n_positions", "max_seq_len", "seq_length"
        ),
        hf_repo_id=hf_repo_id,
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
                return int(value)
        return None

    def int(self, *keys: str) -> int:
        value = self.optional_int(*keys)
        if value is None:
            raise ValueError(f"config for {self.name!r} has none of the fields {', '.join(keys)}")
        return value


def _kv_heads(config: Mapping[str, Any], heads: int) -> int:
    """GQA/MQA KV heads: explicit counts, Falcon's `multi_query`, MPT's `attn_config`."""
    for key in ("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num"):
        if config.get(key):
            return int(config[key])
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
    if config.get("shared_expert_intermediate_size"):  # Qwen2-MoE: one wide shared expert
        num_shared = 1
        shared_width = int(config["shared_expert_intermediate_size"])
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
        first_dense = int(config.get("first_k_dense_replace") or 0)
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
