"""The device a collection runs on, and its entry in the GPU catalog's format.

A calibration file from `collect` carries the device it was measured on (`device:`, read
by `llmsizer.specs.gpus.gpu_from_file`), so `--gpu FILE` prices that device. A GPU the
catalog knows keeps its datasheet entry (the factors are fractions of its datasheet
peaks); any other device gets an entry whose peaks are the measured ones
(`llmsizer.collect.fit.measured_peaks`), each source saying how it was measured.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from typing import Any

import torch

from llmsizer.collect.allreduce import AllReduceFit
from llmsizer.collect.fit import Peaks
from llmsizer.specs import GpuSpec
from llmsizer.specs.gpus import get_gpu
from llmsizer.specs.names import UnknownNameError
from llmsizer.units import GB, GB_S, TB_S, TFLOPS


@dataclass(frozen=True, slots=True)
class Device:
    """Where the kernels run: the torch device, what it is called, its memory in bytes,
    and its catalog entry when it has one."""

    torch_device: torch.device
    name: str
    memory_bytes: float
    catalog: GpuSpec | None
    architecture: str = "cpu"

    @property
    def is_cpu(self) -> bool:
        return self.torch_device.type == "cpu"

    @property
    def num_devices(self) -> int:
        """Devices of this kind present: the all-reduce's default ranks (GPUs; one CPU)."""
        return torch.cuda.device_count() if self.torch_device.type == "cuda" else 1


def find_device(requested: str, gpu: str | None) -> Device:
    """`requested` is auto (CUDA when present, else CPU), cuda or cpu; `gpu` names the
    catalog entry to price it with (default: the catalog entry matching the GPU's name)."""
    if requested not in ("auto", "cuda", "cpu"):
        raise ValueError(f"device {requested!r}; allowed: auto, cuda, cpu")
    use_cuda = requested == "cuda" or (requested == "auto" and torch.cuda.is_available())
    if use_cuda and not torch.cuda.is_available():
        raise ValueError("--device cuda: this PyTorch sees no CUDA GPU")
    if not use_cuda:
        if gpu is not None:
            raise ValueError(f"--gpu {gpu}: a CPU run is priced at its measured peaks")
        name = f"CPU {_cpu_model()} ({torch.get_num_threads()} threads)"
        memory = float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        return Device(torch.device("cpu"), name, memory, None)
    props = torch.cuda.get_device_properties(0)
    return Device(
        torch.device("cuda", 0),
        props.name,
        float(props.total_memory),
        _catalog(props.name, gpu),
        architecture_of((props.major, props.minor)),
    )


def architecture_of(capability: tuple[int, int]) -> str:
    """The catalog's architecture name for an NVIDIA compute capability (CUDA C++ Programming
    Guide, compute capabilities table): 8.0/8.6/8.7 Ampere, 8.9 Ada, 9.0 Hopper, 10.x and
    12.x Blackwell; anything else by its number."""
    major, minor = capability
    if major == 8:
        return "ada" if minor == 9 else "ampere"
    named = {9: "hopper", 10: "blackwell", 12: "blackwell"}
    return named.get(major, f"sm_{major}{minor}")


def _cpu_model() -> str:
    """The CPU's model name (Linux /proc/cpuinfo), else the machine type."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def _catalog(device_name: str, gpu: str | None) -> GpuSpec | None:
    if gpu is not None:
        return get_gpu(gpu)  # the user's choice: an unknown name is an error
    try:
        return get_gpu(device_name.removeprefix("NVIDIA "))
    except UnknownNameError:
        return None


def device_entry(
    device: Device, peaks: Peaks, copy_bytes: int, allreduce: AllReduceFit | None = None
) -> dict[str, Any]:
    """The device in `gpus.yaml`'s format (datasheet units): the catalog's figures for a
    catalogued GPU, the measured ones otherwise (the link: the all-reduce's best bus
    bandwidth when one was timed)."""
    if device.catalog is not None:
        return catalog_entry(device.catalog)
    measured = "measured by llmsizer collect on this device"
    tflops = {p: round(rate / TFLOPS, 4) for p, rate in peaks.flops_per_s.items() if p != "fp8"}
    if "fp8" in peaks.flops_per_s:
        tflops["fp8"] = round(peaks.flops_per_s["fp8"] / TFLOPS, 4)
    host_link = "host memory" if device.is_cpu else "PCIe (not measured: the memory copy rate)"
    return {
        "display_name": f"{device.name} (measured)",
        "vendor": "cpu" if device.is_cpu else "measured",
        "architecture": device.architecture,
        "aliases": [],
        "memory_gb": round(device.memory_bytes / GB, 3),
        "memory_kind": "host DRAM" if device.is_cpu else "device memory",
        "memory_bandwidth_tb_s": round(peaks.bytes_per_s / TB_S, 6),
        "dense_tflops": tflops,
        "scale_up_link": None,
        "scale_up_gb_s": None,
        "scale_up_domain_size": 1,
        "pcie_gb_s": round(2 * _link_bytes_per_s(peaks, allreduce) / GB_S, 3),
        "tdp_w": None,
        "sources": {
            "memory": f"{measured}: best bandwidth of a {copy_bytes >> 20} MiB copy and the "
            "memory-bound kernels timed; capacity from the OS / CUDA",
            "compute": f"{measured}: best rate of any GEMM timed (square and the model's)",
            "interconnect": _link_source(allreduce, host_link),
            "tdp": "not measured",
        },
    }


def _link_bytes_per_s(peaks: Peaks, allreduce: AllReduceFit | None) -> float:
    """Per direction: the all-reduce's bus bandwidth (the fitted line's or the best row's,
    the higher); without one, the memory copy rate (one device: the link prices only
    tp/pp > 1, which it cannot run)."""
    if allreduce is None:
        return peaks.bytes_per_s
    return max(allreduce.bus_bytes_per_s, allreduce.best_bus_bytes_per_s)


def _link_source(allreduce: AllReduceFit | None, host_link: str) -> str:
    if allreduce is None:
        return f"not measured (one device); {host_link}"
    return (
        f"measured by llmsizer collect: the bus bandwidth of a {allreduce.backend} all-reduce "
        f"over {allreduce.num_ranks} processes on this machine (its fitted line's or its "
        "best message's, the higher), priced as a ring"
    )


def catalog_entry(gpu: GpuSpec) -> dict[str, Any]:
    """A catalog GPU back in `gpus.yaml`'s units (so the file is self-contained)."""
    tflops = {"bf16": gpu.bf16_flops_per_s, "fp16": gpu.fp16_flops_per_s}
    optional = {"fp8": gpu.fp8_flops_per_s, "int8": gpu.int8_ops_per_s, "fp4": gpu.fp4_flops_per_s}
    tflops |= {k: v for k, v in optional.items() if v is not None}
    scale_up = gpu.scale_up_bytes_per_s
    return {
        "display_name": gpu.display_name,
        "vendor": gpu.vendor,
        "architecture": gpu.architecture,
        "aliases": [],
        "memory_gb": gpu.memory_bytes / GB,
        "memory_kind": gpu.memory_kind,
        "memory_bandwidth_tb_s": gpu.hbm_bytes_per_s / TB_S,
        "dense_tflops": {k: v / TFLOPS for k, v in tflops.items()},
        "scale_up_link": gpu.scale_up_link,
        "scale_up_gb_s": None if scale_up is None else 2 * scale_up / GB_S,
        "scale_up_domain_size": gpu.scale_up_domain_size,
        "pcie_gb_s": 2 * gpu.pcie_bytes_per_s / GB_S,
        "tdp_w": gpu.tdp_w,
        "sources": {group: f"catalog {gpu.key}: {where}" for group, where in gpu.sources},
    }
