import json

import pytest

from llmsizer.specs import (
    ModelSpec,
    Precision,
    UnknownNameError,
    get_model,
    model_catalog,
)

PUBLISHED_TOTALS = [(key, entry) for key, entry in model_catalog().items() if dict(entry.published)]


def _published_match(derived, published, rounded_to):
    """Within 2 %, or within half the unit the source rounds to ("10 billion": 0.5e9)."""
    return abs(derived - published) <= max(0.02 * published, rounded_to / 2)


@pytest.mark.parametrize(("key", "entry"), PUBLISHED_TOTALS, ids=[k for k, _ in PUBLISHED_TOTALS])
def test_derived_parameter_counts_match_published_within_2_percent(key, entry):
    published = dict(entry.published)
    model = entry.model
    unit = entry.published_rounded_to
    derived = {"total_params": model.total_params}
    if model.moe is not None:
        assert published.keys() & {
            "active_params",
            "active_params_excluding_embedding",
            "active_params_excluding_embedding_and_lm_head",
        }, f"{key}: a MoE model needs a published active count"
    derived["active_params"] = model.active_params
    # OpenAI's convention for gpt-oss: the input embedding is not active
    derived["active_params_excluding_embedding"] = model.active_params - model.embedding_params
    # GLM's and MiniMax's: neither the embedding nor the output matrix
    derived["active_params_excluding_embedding_and_lm_head"] = (
        model.active_params - model.embedding_params - model.lm_head_params
    )
    for name, value in published.items():
        assert _published_match(derived[name], value, unit), (key, name, derived[name], value)


@pytest.mark.parametrize(
    ("name", "total", "active"),
    [
        ("llama-3.1-8b", 8.03e9, 8.03e9),
        ("llama-3.1-70b", 70.6e9, 70.6e9),
        ("mixtral-8x7b", 46.7e9, 12.9e9),
        ("deepseek-v3", 671e9, 37e9),
        ("deepseek-r1", 671e9, 37e9),
        ("kimi-k2.5", 1.04e12, 32.6e9),  # Kimi K2 report: 1.04T total, 32.6B activated
        ("qwen3-235b-a22b", 235e9, 22e9),
    ],
)
def test_the_briefs_reference_counts(name, total, active):
    model = get_model(name)
    assert model.total_params == pytest.approx(total, rel=0.02)
    assert model.active_params == pytest.approx(active, rel=0.02)


def test_deepseek_v3_moe_and_mla_structure():
    model = get_model("deepseek-v3")
    assert model.moe is not None and model.mla is not None
    assert model.num_moe_layers == 58  # 61 layers, first 3 dense
    assert model.moe.num_shared_experts == 1
    # MLA caches the 512-dim latent plus the 64-dim rope key per layer, for all heads
    assert model.kv_bytes_per_token(Precision.BF16) == 61 * (512 + 64) * 2


def test_gqa_kv_bytes_match_databricks_table():
    # Databricks blog: Llama-2-70B, 1024 tokens, batch 1: 0.312 GiB in FP16, 0.156 in INT8
    model = get_model("llama-2-70b")
    assert model.kv_bytes_per_token(Precision.FP16) * 1024 / 2**30 == pytest.approx(0.312, abs=1e-3)
    assert model.kv_bytes_per_token(Precision.INT8) * 1024 / 2**30 == pytest.approx(0.156, abs=1e-3)


def test_sliding_window_layers():
    assert get_model("mistral-7b").num_sliding_window_layers == 32
    gpt_oss = get_model("gpt-oss-120b")
    assert (gpt_oss.sliding_window, gpt_oss.num_sliding_window_layers) == (128, 18)
    assert get_model("qwen2.5-7b").num_sliding_window_layers == 0  # use_sliding_window: false
    # a windowed layer sees at most 128 keys
    per_key = gpt_oss.attention_flops_per_key
    assert gpt_oss.attention_flops_per_token(10_000) == pytest.approx(
        per_key * (18 * 10_000 + 18 * 128)
    )


def test_linear_flops_are_twice_the_active_matmul_weights():
    model = get_model("llama-3.1-8b")
    norms = model.num_layers * model.norm_params_per_layer + model.hidden_size
    matmul_weights = model.total_params - model.embedding_params - norms  # lm_head stays
    assert model.linear_flops_per_token == 2 * matmul_weights
    mixtral = get_model("mixtral-8x7b")
    assert mixtral.linear_flops_per_token == pytest.approx(2 * 12.9e9, rel=0.03)


def test_weight_bytes_quantise_linear_layers_only():
    model = get_model("llama-3.1-70b")
    bf16, fp8 = model.weight_bytes(Precision.BF16), model.weight_bytes(Precision.FP8)
    assert bf16 == pytest.approx(2 * model.total_params)
    # embeddings and lm_head (2 x 1.05B) stay 16-bit
    assert fp8 == pytest.approx(model.total_params + 2 * model.embedding_params, rel=1e-3)


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("meta-llama/Llama-3.1-70B-Instruct", "llama-3.1-70b"),
        ("Llama 3.1 70B", "llama-3.1-70b"),
        ("LLAMA_3.1_70B", "llama-3.1-70b"),
        ("Llama-3.1-70B", "llama-3.1-70b"),
        ("meta-llama/Meta-Llama-3-8B-Instruct", "llama-3-8b"),
        ("meta-llama3-8b-instruct", "llama-3-8b"),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"),
        ("Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen3-30b-a3b"),
        ("deepseek-ai/DeepSeek-V3", "deepseek-v3"),
        ("openai/gpt-oss-120b", "gpt-oss-120b"),
        ("NeMo GPT 43B", "nemo-gpt-43b"),
        ("MPT-7B", "mpt-7b"),
    ],
)
def test_lenient_model_names(name, key):
    assert get_model(name).name == key


def test_unknown_model_suggests_close_matches():
    with pytest.raises(UnknownNameError, match=r"Did you mean: llama-3.1-8b"):
        get_model("lama-3.1-8b")


def test_catalog_covers_the_brief():
    required = {
        "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3-70b", "llama-3.1-8b",
        "llama-3.1-70b", "llama-3.1-405b", "llama-3.3-70b", "mistral-7b", "mixtral-8x7b",
        "mixtral-8x22b", "qwen2.5-7b", "qwen2.5-32b", "qwen2.5-72b", "qwen3-8b", "qwen3-32b",
        "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3", "gpt-oss-20b", "gpt-oss-120b",
        "gpt-j-6b", "falcon-180b", "mpt-7b", "nemo-gpt-43b",
    }  # fmt: skip
    required |= {"deepseek-r1", "kimi-k2.5", "glm-5", "minimax-m2.5", "qwen3.5-397b-a17b"}
    assert required <= set(model_catalog())
    assert "assumption" in model_catalog()["nemo-gpt-43b"].notes.lower()


QWEN2_MOE_CONFIG = {
    "model_type": "qwen2_moe",
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "num_experts": 60,
    "num_experts_per_tok": 4,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "vocab_size": 151936,
    "tie_word_embeddings": False,
}


def test_from_hf_config_dict_with_a_wide_shared_expert():
    model = ModelSpec.from_hf_config(QWEN2_MOE_CONFIG, name="qwen1.5-moe-a2.7b")
    assert model.moe is not None
    assert model.moe.num_shared_experts == 1
    # Qwen1.5-MoE-A2.7B: 14.3B total, 2.7B activated (model card)
    assert model.total_params == pytest.approx(14.3e9, rel=0.02)
    assert model.active_params == pytest.approx(2.7e9, rel=0.03)


def test_a_config_path_works_wherever_a_name_does(tmp_path):
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(QWEN2_MOE_CONFIG))
    by_file = get_model(folder / "config.json")
    by_dir = get_model(str(folder))
    assert by_file.total_params == by_dir.total_params
    assert by_dir.name == "my-model"
    with pytest.raises(FileNotFoundError):
        get_model(tmp_path / "missing.json")


def test_multimodal_configs_read_their_text_config():
    wrapped = {"model_type": "llava", "text_config": dict(QWEN2_MOE_CONFIG)}
    model = ModelSpec.from_hf_config(wrapped, name="wrapped")
    assert model.num_layers == 24


def test_missing_fields_are_named():
    with pytest.raises(ValueError, match="num_hidden_layers, n_layer, n_layers"):
        ModelSpec.from_hf_config({"hidden_size": 8, "num_attention_heads": 2, "vocab_size": 10})


def test_inconsistent_heads_are_rejected():
    config = dict(QWEN2_MOE_CONFIG, num_key_value_heads=3)
    with pytest.raises(ValueError, match="not a multiple"):
        ModelSpec.from_hf_config(config)
