"""The architectures of the models in the AIConfigurator calibration set: MLA, shared-expert
MoE, sparse attention, hybrid linear attention, MTP, nested configs; and their look-up by the
Hugging Face ids the set uses."""

import csv
import json
from importlib import resources

import pytest

from llmsizer.specs import ModelSpec, Precision, get_model, model_catalog
from llmsizer.specs.dtypes import quant_mode_precision
from llmsizer.specs.names import normalize_name
from tests.conftest import shared_path

AIC_CSV = shared_path("calibration", "aic_silicon_calibration.csv")


def _catalog_config(key):
    """The config.json fields the catalog stores for `key` (inner text_config if nested)."""
    text = resources.files("llmsizer.specs").joinpath("data/models.json").read_text()
    config = json.loads(text)[key]["config"]
    return dict(config.get("text_config", config))


def _csv_column(*names):
    with AIC_CSV.open() as f:
        return sorted({row[name] for row in csv.DictReader(f) for name in names})


@pytest.mark.shared
def test_every_model_path_of_the_calibration_set_is_a_catalog_id():
    paths = _csv_column("model_path")
    assert len(paths) >= 11
    for path in paths:
        model = get_model(path)
        entry = model_catalog()[model.name]
        ids = {normalize_name(n) for n in (entry.model.hf_repo_id or "", *entry.aliases)}
        # the exact id (any case), not a fuzzy match on a shortened name
        assert normalize_name(path) in ids, path
        assert get_model(path.upper()) is model


@pytest.mark.shared
def test_every_quant_mode_of_the_calibration_set_has_a_format():
    modes = _csv_column("gemm_quant_mode", "moe_quant_mode")
    assert {"fp8", "fp8_block", "nvfp4", "int4_wo", ""} <= set(modes)
    for mode in modes:
        precision = quant_mode_precision(mode)
        assert precision is None or precision.bytes_per_element > 0
    for text in _csv_column("precision"):  # bf16, fp8, fp4, int4 or empty
        assert not text or Precision.parse(text)


@pytest.mark.parametrize(
    ("hf_id", "key"),
    [
        ("deepseek-ai/DeepSeek-R1", "deepseek-r1"),
        ("nvidia/DeepSeek-R1-NVFP4", "deepseek-r1"),
        ("nvidia/DeepSeek-V3.1-NVFP4", "deepseek-v3.1"),
        ("zhipuai/GLM-5", "glm-5"),
        ("zai-org/GLM-5", "glm-5"),
        ("moonshotai/Kimi-K2.5", "kimi-k2.5"),
        ("MiniMaxAI/MiniMax-M2.5", "minimax-m2.5"),
        ("qwen/qwen3.5-397b-a17b", "qwen3.5-397b-a17b"),
        ("Qwen/Qwen3-235B-A22B-FP8", "qwen3-235b-a22b"),
        ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
    ],
)
def test_hugging_face_ids(hf_id, key):
    assert get_model(hf_id).name == key


def test_every_new_entry_cites_the_config_it_was_read_from():
    for key in ("deepseek-r1", "deepseek-v3.1", "glm-5", "kimi-k2.5", "minimax-m2.5"):
        entry = model_catalog()[key]
        assert "model_configs/" in entry.config_source
        assert entry.config_source in entry.model.source
        assert entry.published_source


def test_mla_kv_is_the_latent_plus_rope_key_per_layer():
    for key in ("deepseek-v3", "deepseek-r1", "kimi-k2.5"):
        model = get_model(key)
        assert model.mla is not None
        latent = model.mla.kv_lora_rank + model.mla.qk_rope_head_dim
        assert model.kv_bytes_per_token(Precision.FP8) == 61 * latent * 1
        assert model.kv_bytes_per_token(Precision.BF16) == 61 * 576 * 2


def test_kimi_k25_is_read_from_its_text_config():
    model = get_model("moonshotai/Kimi-K2.5")
    assert model.moe is not None and model.mla is not None
    assert (model.num_layers, model.num_moe_layers, model.hidden_size) == (61, 60, 7168)
    assert (model.moe.num_experts, model.moe.num_experts_per_tok) == (384, 8)
    assert model.moe.num_shared_experts == 1
    assert model.num_attention_heads == 64
    assert model.vocab_size == 163840


def test_glm5_sparse_attention_indexer():
    model = get_model("zhipuai/GLM-5")
    assert model.moe is not None and model.mla is not None
    assert model.sparse_attention is not None
    assert (model.num_layers, model.num_moe_layers, model.num_mtp_layers) == (78, 75, 1)
    # per layer: the MLA latent (512 + 64) plus the indexer's FP8 key (128) and FP32 scale
    assert model.kv_bytes_per_token(Precision.FP8) == 78 * (576 + 128 + 4)
    # each query attends to at most 2048 keys; the indexer still scores every key
    mla = model.attention_flops_per_key * model.num_layers
    indexer = model.num_layers * model.sparse_attention.flops_per_key
    assert model.attention_flops_per_token(1000) == pytest.approx((mla + indexer) * 1000)
    assert model.attention_flops_per_token(100_000) == pytest.approx(mla * 2048 + indexer * 100_000)


def test_minimax_m25_every_layer_is_moe_without_shared_experts():
    model = get_model("MiniMaxAI/MiniMax-M2.5")
    assert model.moe is not None and model.mla is None
    assert (model.num_moe_layers, model.num_dense_layers) == (62, 0)
    assert model.moe.num_shared_experts == 0
    assert model.moe.expert_intermediate_size == 1536
    assert model.num_mtp_layers == 3  # noted, not counted
    # GQA: 8 KV heads of 128, K and V, all 62 layers
    assert model.kv_bytes_per_token(Precision.BF16) == 62 * 2 * 8 * 128 * 2


def test_qwen35_hybrid_layers():
    model = get_model("Qwen/Qwen3.5-397B-A17B")
    la = model.linear_attention
    assert la is not None and model.moe is not None
    assert (model.num_layers, model.num_linear_attention_layers) == (60, 45)
    assert (model.num_kv_cache_layers, model.num_full_attention_layers) == (15, 15)
    assert model.attention_output_gate
    assert (model.moe.num_experts, model.moe.num_experts_per_tok) == (512, 10)
    assert model.moe.shared_expert_intermediate_size == 1024
    # only the 15 softmax layers cache K and V (2 heads of 256)
    assert model.kv_bytes_per_token(Precision.BF16) == 15 * 2 * 2 * 256 * 2
    # the Gated DeltaNet state per sequence: FP32 recurrent (mamba_ssm_dtype) + conv taps
    recurrent = 64 * 128 * 128 * 4
    conv = (2 * 16 * 128 + 64 * 128) * 3 * 2
    assert model.linear_state_bytes_per_sequence(Precision.BF16) == 45 * (recurrent + conv)


def test_linear_attention_cost_does_not_grow_with_context():
    model = get_model("qwen3.5-397b-a17b")
    assert model.linear_attention is not None
    per_key = model.attention_flops_per_key * model.num_full_attention_layers
    constant = model.num_linear_attention_layers * model.linear_attention.flops_per_token_per_layer
    for context in (1, 1000, 100_000):
        assert model.attention_flops_per_token(context) == pytest.approx(
            per_key * context + constant
        )


def test_full_attention_interval_matches_layer_types():
    config = _catalog_config("qwen3.5-397b-a17b")
    by_types = ModelSpec.from_hf_config(config, name="a")
    without = {k: v for k, v in config.items() if k != "layer_types"}
    by_interval = ModelSpec.from_hf_config(without, name="a")
    assert by_types.linear_attention is not None
    assert by_interval.linear_attention == by_types.linear_attention


def test_layer_kinds_that_are_not_modeled_are_errors():
    config = _catalog_config("qwen3.5-397b-a17b")
    with pytest.raises(ValueError, match="modeled kinds"):
        ModelSpec.from_hf_config({**config, "layer_types": ["mamba"] * 60}, name="x")
    minimax = _catalog_config("minimax-m2.5")
    with pytest.raises(ValueError, match="lightning"):
        ModelSpec.from_hf_config({**minimax, "attn_type_list": [0, 1] * 31}, name="x")


def test_mtp_layers_are_not_counted():
    config = _catalog_config("minimax-m2.5")
    without = ModelSpec.from_hf_config({**config, "use_mtp": False}, name="x")
    with_mtp = get_model("minimax-m2.5")
    assert (without.num_mtp_layers, with_mtp.num_mtp_layers) == (0, 3)
    assert without.total_params == with_mtp.total_params


def test_weight_bytes_with_separate_expert_precision():
    model = get_model("deepseek-ai/DeepSeek-R1")
    fp8 = model.weight_bytes(Precision.FP8)
    mixed = model.weight_bytes(Precision.FP8, moe_precision=Precision.FP4)
    # routed experts shrink from 8 to 4.5 bits; everything else is unchanged
    assert fp8 - mixed == pytest.approx(model.routed_expert_params * (1.0 - 4.5 / 8))
    assert model.weight_bytes(Precision.FP8, moe_precision=Precision.FP8) == fp8
