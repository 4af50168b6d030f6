"""A calibration file carrying its device: `--gpu FILE` prices that device (no PyTorch)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from llmsizer.perf import Deployment, StepModel
from llmsizer.perf.batch_shape import decode_batch
from llmsizer.perf.calibrated import load_calibration, read_calibration
from llmsizer.specs import get_gpu, get_model

DEVICE: dict[str, Any] = {
    "display_name": "Test CPU (measured)",
    "vendor": "cpu",
    "architecture": "cpu",
    "aliases": [],
    "memory_gb": 64.0,
    "memory_kind": "host DRAM",
    "memory_bandwidth_tb_s": 0.05,
    "dense_tflops": {"bf16": 2.0, "fp16": 1.0},
    "scale_up_link": None,
    "scale_up_gb_s": None,
    "scale_up_domain_size": 1,
    "pcie_gb_s": 100.0,
    "tdp_w": None,
    "sources": {
        "memory": "measured",
        "compute": "measured",
        "interconnect": "not measured",
        "tdp": "not measured",
    },
}


def _write(tmp_path: Path, **changes: Any) -> Path:
    data = {
        "kind": "efficiency_factors",
        "engine": "vllm",
        "factors": {"gemm_compute_efficiency": 0.5, "gemm_bandwidth_efficiency": 0.8},
        "device": {**DEVICE, **changes},
    }
    path = tmp_path / "collected.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_gpu_named_by_a_collected_file_is_its_device(tmp_path: Path) -> None:
    path = _write(tmp_path)
    gpu = get_gpu(str(path))
    assert gpu.bf16_flops_per_s == 2e12 and gpu.hbm_bytes_per_s == 5e10
    assert gpu.memory_bytes == 64e9 and gpu.fp8_flops_per_s is None


def test_a_decode_step_on_it_is_priced_at_its_peaks_times_the_factors(tmp_path: Path) -> None:
    """Batch-1 decode of an 8B model is weight streaming: weights / (B * e_b), at least."""
    path = _write(tmp_path)
    model = get_model("llama-3.1-8b")
    step = StepModel(Deployment(model, get_gpu(str(path))), load_calibration(path))
    weights_s = model.dense_linear_params * 2 / (5e10 * 0.8)
    assert weights_s < step(decode_batch(1, 100)) < 1.2 * weights_s


def test_a_bad_device_is_refused_naming_it(tmp_path: Path) -> None:
    path = _write(tmp_path, dense_tflops={"fp16": 1.0})  # no bf16 peak
    with pytest.raises(ValueError, match="device"):
        read_calibration(path)
    with pytest.raises(ValueError, match="device"):
        get_gpu(str(path))


def test_a_file_without_a_device_is_not_a_gpu(tmp_path: Path) -> None:
    path = tmp_path / "plain.yaml"
    path.write_text(yaml.safe_dump({"kind": "efficiency_factors", "factors": {}}))
    with pytest.raises(ValueError, match="no device entry"):
        get_gpu(str(path))
