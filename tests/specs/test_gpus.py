import pytest

from llmsizer.specs import GpuSpec, Precision, UnknownNameError, get_gpu, gpu_catalog


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("H100 SXM", "h100-sxm"),
        ("h100_sxm", "h100-sxm"),
        ("h100-sxm", "h100-sxm"),
        ("H100 SXM 80GB", "h100-sxm"),
        ("H100 80GB HBM3", "h100-sxm"),
        ("H100 (DGX H100 system = 8 GPUs)", "h100-sxm"),
        ("H200 SXM 141GB", "h200-sxm"),
        ("GH200 480GB (96GB HBM3)", "gh200"),
        ("A100 SXM4 80GB", "a100-sxm-80gb"),
        ("A100 40GB", "a100-sxm-40gb"),
        ("A100 (memory size not stated in table)", "a100-sxm-80gb"),
        ("B200 180GB (DGX B200)", "b200"),
        ("GB200 192GB (GB200 NVL72)", "gb200"),
        ("RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000"),
        ("L40S", "l40s"),
        ("a10", "a10"),
        ("MI300X", "mi300x"),
        ("H100 NVL", "h100-nvl"),
        ("h200_nvl", "h200-nvl"),
    ],
)
def test_lenient_names_including_the_calibration_labels(name, key):
    assert get_gpu(name).key == key


def test_unknown_gpu_suggests_close_matches():
    with pytest.raises(UnknownNameError, match=r"Did you mean: h100-sxm") as err:
        get_gpu("h10 sxm")
    assert "Known GPUs:" in str(err.value)


def test_catalog_covers_the_required_gpus():
    required = {
        "a100-sxm-40gb", "a100-sxm-80gb", "a100-pcie-40gb", "a100-pcie-80gb", "h100-sxm",
        "h100-pcie", "h100-nvl", "h200-sxm", "h200-nvl", "gh200", "b200", "b300", "gb200",
        "l40s", "l4", "a10g", "a10", "mi300x", "rtx-pro-6000",
    }  # fmt: skip
    assert required <= set(gpu_catalog())


@pytest.mark.parametrize("gpu", list(gpu_catalog().values()), ids=lambda g: g.key)
def test_every_gpu_is_complete_and_sourced(gpu: GpuSpec):
    assert gpu.memory_bytes > 1e9
    assert gpu.hbm_bytes_per_s > 1e11
    assert gpu.bf16_flops_per_s > 1e13
    assert gpu.pcie_bytes_per_s > 0
    for group in ("memory", "compute", "interconnect", "tdp"):
        assert len(gpu.source_of(group)) > 10
    if gpu.fp8_flops_per_s is not None:  # every FP8 tensor core doubles the BF16 rate
        assert gpu.fp8_flops_per_s == pytest.approx(2 * gpu.bf16_flops_per_s, rel=0.02)


def test_h100_sxm_datasheet_figures_in_si_units():
    gpu = get_gpu("h100-sxm")
    assert gpu.memory_bytes == 80e9
    assert gpu.hbm_bytes_per_s == pytest.approx(3.35e12)
    # 1,979 TFLOPS BF16 "with sparsity", halved
    assert gpu.dense_flops_per_s(Precision.BF16) == pytest.approx(989.5e12)
    assert gpu.dense_flops_per_s(Precision.FP8) == pytest.approx(1979e12)
    # NVLink 900 GB/s bidirectional -> 450 GB/s per direction
    assert gpu.scale_up_bytes_per_s == pytest.approx(450e9)
    assert gpu.scale_up_domain_size == 8
    assert gpu.tdp_w == 700


def test_native_precision_support():
    assert not get_gpu("a100").supports(Precision.FP8)
    assert get_gpu("h100").supports(Precision.FP8)
    assert not get_gpu("h100").supports(Precision.FP4)
    assert get_gpu("b200").supports(Precision.FP4)
    assert get_gpu("a100").supports(Precision.INT4)  # weight-only: BF16 math


@pytest.mark.parametrize(
    ("name", "architecture"),
    [("a100", "ampere"), ("h100", "hopper"), ("h200", "hopper"), ("b200", "blackwell"),
     ("gb200", "blackwell"), ("l40s", "ada"), ("mi300x", "cdna3")],
)  # fmt: skip
def test_each_gpu_names_its_architecture(name: str, architecture: str) -> None:
    assert get_gpu(name).architecture == architecture


def test_architectures_are_the_known_generations() -> None:
    known = {"ampere", "ada", "hopper", "blackwell", "cdna3"}
    assert {g.architecture for g in gpu_catalog().values()} <= known
