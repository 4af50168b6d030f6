import pytest

from llmsizer.perf.deployment import Deployment
from llmsizer.perf.sparsity import StructuredSparsity
from llmsizer.specs import Precision


def test_from_names_is_lenient():
    d = Deployment.from_names("Llama 3.1 70B", "H100 SXM", "FP8", "fp8_e4m3", 4)
    assert (d.model.name, d.gpu.key, d.precision) == ("llama-3.1-70b", "h100-sxm", Precision.FP8)
    assert d.kv_precision is Precision.FP8
    assert d.num_gpus == 4


def test_kv_auto_follows_the_activations():
    assert (
        Deployment.from_names("llama-3.1-8b", "h100", "fp8", "auto").kv_precision is Precision.BF16
    )
    assert Deployment.from_names("llama-3.1-8b", "h100", "fp16").kv_precision is Precision.FP16


def test_weight_only_fallback_when_the_gpu_lacks_the_format():
    a100 = Deployment.from_names("llama-3.1-8b", "a100", "fp8")
    assert a100.matmul_precision is Precision.BF16
    assert a100.weight_bytes_per_element == 1.0
    assert Deployment.from_names("llama-3.1-8b", "h100", "fp8").matmul_precision is Precision.FP8
    assert Deployment.from_names("llama-3.1-8b", "h100", "int4").matmul_precision is Precision.BF16
    assert Deployment.from_names("llama-3.1-8b", "h100", "fp4").matmul_precision is Precision.BF16
    assert Deployment.from_names("llama-3.1-8b", "b200", "fp4").matmul_precision is Precision.FP4


def test_kv_heads_shard_then_replicate():
    d4 = Deployment.from_names("llama-3.1-70b", "h100", tensor_parallel_size=4)
    d8 = Deployment.from_names("llama-3.1-70b", "h100", tensor_parallel_size=8)
    d16 = Deployment.from_names("llama-3.1-405b", "gb200", tensor_parallel_size=16)
    assert (d4.kv_heads_per_gpu, d8.kv_heads_per_gpu, d16.kv_heads_per_gpu) == (2, 1, 1)
    # MLA's latent is replicated on every rank
    mla = Deployment.from_names("deepseek-v3", "h200", "fp8", tensor_parallel_size=8)
    per_layer = mla.model.kv_bytes_per_token_per_layer(mla.kv_precision)
    assert mla.kv_bytes_per_token_per_layer_per_gpu == per_layer


def test_links_nvlink_inside_the_domain_pcie_outside():
    d = Deployment.from_names("llama-3.1-70b", "h100-sxm", tensor_parallel_size=8)
    assert d.link_bytes_per_s(8) == pytest.approx(450e9)
    assert d.link_bytes_per_s(16) == pytest.approx(64e9)
    l40s = Deployment.from_names("llama-3.1-8b", "l40s", tensor_parallel_size=2)
    assert l40s.link_bytes_per_s(2) == pytest.approx(32e9)


def test_invalid_parallelism_is_explained():
    with pytest.raises(ValueError, match="does not divide the 64 attention heads"):
        Deployment.from_names("llama-3.1-70b", "h100", tensor_parallel_size=3)
    with pytest.raises(ValueError, match="pipeline_parallel_size 100"):
        Deployment.from_names("llama-3.1-8b", "h100", pipeline_parallel_size=100)


def test_sparse_weights_are_smaller():
    sparse = Deployment.from_names("llama-2-70b", "h100", "fp8", sparsity=StructuredSparsity())
    assert sparse.weight_bytes_per_element == pytest.approx(0.625)
