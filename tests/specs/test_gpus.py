import pytest

from llmsizer.specs import GpuSpec, Precision, UnknownNameError, get_gpu, gpu_catalog
from llmsizer.specs.gpus import _memory_bytes


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
    # the device's 81,559 MiB as nvidia-smi reports it, not the "80GB" of its name
    assert gpu.memory_bytes == 81559 * 2**20 == pytest.approx(85.52e9, rel=1e-4)
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


@pytest.mark.parametrize(
    ("key", "mib", "marketed_gb"),
    [
        ("h100-sxm", 81559, 80),  # 85.5e9 bytes: 7 % above the name's 80e9
        ("h200-sxm", 143771, 141),  # ~140 GiB
        ("b200", 183359, 180),  # ~179 GiB
        ("gb200", 189471, 186),
        ("a100-sxm-80gb", 81920, 80),
        ("l4", 23034, 24),
    ],
)
def test_memory_is_what_the_device_reports_in_mib(key: str, mib: int, marketed_gb: int) -> None:
    gpu = get_gpu(key)
    assert gpu.memory_bytes == mib * 2**20
    assert f"{mib} MiB" in gpu.source_of("memory")  # the nvidia-smi figure is cited
    # within a few % of the marketing figure, in whichever unit the vendor meant
    assert min(abs(gpu.memory_bytes / (marketed_gb * u) - 1) for u in (1e9, 2**30)) < 0.08


def test_every_catalog_gpu_cites_the_memory_it_really_has() -> None:
    for key, gpu in gpu_catalog().items():
        mib = round(gpu.memory_bytes / 2**20)
        assert gpu.memory_bytes == mib * 2**20, key  # read from memory_mib, not GB
        assert f"device memory {mib} MiB" in gpu.source_of("memory"), key


def test_an_entry_without_memory_mib_reads_memory_gb_in_decimal_gb() -> None:
    assert _memory_bytes({"memory_gb": 64.0}) == 64e9  # a `collect` device file
    assert _memory_bytes({"memory_gb": 80, "memory_mib": 81559}) == 81559 * 2**20
