"""The device side of collect that runs without a GPU: the timer, the precision list, the
FP8 padding, and the device entries (catalogued GPUs keep their datasheet figures)."""

from __future__ import annotations

import pytest

from llmsizer.collect.fit import Peaks
from llmsizer.specs import get_gpu
from llmsizer.specs.gpus import gpu_from_entry

torch = pytest.importorskip("torch")

from llmsizer.collect.device import Device, _catalog, catalog_entry, device_entry  # noqa: E402
from llmsizer.collect.kernels import Timer, fp8_rows, fp8_supported, precisions  # noqa: E402

CPU = torch.device("cpu")


def test_timer_warms_up_then_takes_the_median_of_the_repeats() -> None:
    calls: list[int] = []
    seconds = Timer(CPU, warmup=2, repeats=5)(lambda: calls.append(1))
    assert len(calls) == 7
    assert 0 <= seconds < 0.01


def test_a_cpu_times_16_bit_gemms_and_no_fp8() -> None:
    assert not fp8_supported(CPU)
    assert precisions(CPU) == ("bf16", "fp16")


@pytest.mark.parametrize(("tokens", "rows"), [(1, 16), (16, 16), (17, 32), (16384, 16384)])
def test_fp8_rows_are_padded_to_16(tokens: int, rows: int) -> None:
    assert fp8_rows(tokens) == rows


@pytest.mark.parametrize(
    ("name", "key"),
    [("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA L40S", "l40s"), ("NVIDIA H200", "h200-sxm")],
)
def test_cuda_device_names_find_their_catalog_entry(name: str, key: str) -> None:
    found = _catalog(name, None)
    assert found is not None and found.key == key


def test_an_unknown_gpu_has_no_entry_and_a_named_one_must_exist() -> None:
    assert _catalog("NVIDIA Imaginary X9", None) is None
    with pytest.raises(ValueError, match="unknown GPU"):
        _catalog("NVIDIA H100 80GB HBM3", "no-such-gpu")


@pytest.mark.parametrize("key", ["h100-sxm", "l40s", "b200"])
def test_a_catalogued_gpu_keeps_its_datasheet_figures(key: str) -> None:
    gpu = get_gpu(key)
    again = gpu_from_entry(key, catalog_entry(gpu))
    for field in ("hbm_bytes_per_s", "bf16_flops_per_s", "fp8_flops_per_s", "memory_bytes",
                  "scale_up_bytes_per_s", "pcie_bytes_per_s", "fp4_flops_per_s"):  # fmt: skip
        assert getattr(again, field) == pytest.approx(getattr(gpu, field)), field


def test_an_uncatalogued_device_is_priced_at_its_measured_peaks() -> None:
    device = Device(CPU, "CPU test", 64e9, None)
    entry = device_entry(device, Peaks({"bf16": 2e12, "fp16": 1e12}, 5e10), 1 << 24)
    gpu = gpu_from_entry("cpu", entry)
    assert gpu.bf16_flops_per_s == pytest.approx(2e12)
    assert gpu.hbm_bytes_per_s == pytest.approx(5e10)
    assert gpu.fp8_flops_per_s is None
    assert "measured" in gpu.source_of("compute")


def test_model_gemms_are_timed_in_bf16_and_the_factors_precision() -> None:
    from llmsizer.collect.run import model_gemm_precisions

    device = Device(CPU, "CPU test", 64e9, None)
    assert model_gemm_precisions(device, "bf16") == ("bf16",)
    assert model_gemm_precisions(device, "fp16") == ("bf16", "fp16")


def test_the_timer_flushes_caches_larger_than_a_gpus_l2() -> None:
    """H100's L2 is 50 MB and B200's 126 MB: the flush must exceed both."""
    from llmsizer.collect.kernels import GPU_FLUSH_BYTES, make_timer

    assert GPU_FLUSH_BYTES > 126e6
    timer = make_timer(CPU, warmup=1, repeats=3)
    assert timer.flush_bytes > 0
    calls: list[int] = []
    timer(lambda: calls.append(1))
    assert len(calls) == 4


@pytest.mark.parametrize(
    ("capability", "architecture"),
    [((8, 0), "ampere"), ((8, 6), "ampere"), ((8, 9), "ada"), ((9, 0), "hopper"),
     ((10, 0), "blackwell"), ((12, 0), "blackwell"), ((7, 5), "sm_75")],
)  # fmt: skip
def test_cuda_capabilities_name_the_catalogs_architectures(
    capability: tuple[int, int], architecture: str
) -> None:
    from llmsizer.collect.device import architecture_of

    assert architecture_of(capability) == architecture
