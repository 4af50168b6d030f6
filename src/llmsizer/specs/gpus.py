"""The GPU catalog: datasheet peaks in SI units, each figure with its source.

Data lives in `data/gpus.yaml` (datasheet units); `gpu_catalog()` loads and converts it once.
Look a GPU up with `get_gpu("H100 SXM")`: case and separators do not matter, aliases cover
the names used in published benchmarks (`H200 SXM 141GB`, `GH200 480GB (96GB HBM3)`), text
in parentheses is ignored if the full name is unknown, and an unknown name raises
`UnknownNameError` with close matches.

Every compute figure is a dense tensor-core peak. Interconnect figures are stored per
direction (half the bidirectional datasheet number), because a ring all-reduce sends and
receives at the same time and its time is set by one direction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from llmsizer.errors import parse_yaml, read_yaml_mapping
from llmsizer.specs.dtypes import Precision
from llmsizer.specs.names import build_index, normalize_name, unknown_name_error
from llmsizer.units import GB, GB_S, TB_S, TFLOPS, MiB

_PARENTHESES = re.compile(r"\([^)]*\)")


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """One GPU model. Peaks are dense tensor-core FLOP/s; a missing precision is `None`.

    - `hbm_bytes_per_s`: device-memory bandwidth (HBM, or GDDR on L4/L40S/A10/RTX PRO).
    - `scale_up_bytes_per_s`: per-direction GPU-to-GPU fabric bandwidth (NVLink, Infinity
      Fabric), `None` without one; `scale_up_domain_size`: GPUs on that fabric.
    - `pcie_bytes_per_s`: per-direction host-interface bandwidth.
    - `sources`: (figure group, where it was read and how reliable) pairs.
    """

    key: str
    display_name: str
    vendor: str
    architecture: str
    memory_bytes: float
    memory_kind: str
    hbm_bytes_per_s: float
    bf16_flops_per_s: float
    fp16_flops_per_s: float
    fp8_flops_per_s: float | None
    int8_ops_per_s: float | None
    fp4_flops_per_s: float | None
    scale_up_link: str | None
    scale_up_bytes_per_s: float | None
    scale_up_domain_size: int
    pcie_bytes_per_s: float
    tdp_w: float | None
    aliases: tuple[str, ...] = ()
    sources: tuple[tuple[str, str], ...] = ()

    def dense_flops_per_s(self, precision: Precision) -> float | None:
        """Dense tensor-core peak for math in `precision`, `None` if the GPU lacks it."""
        math = precision.tensor_core_precision
        if math is Precision.BF16:
            return self.bf16_flops_per_s
        if math is Precision.FP16:
            return self.fp16_flops_per_s
        if math is Precision.FP8:
            return self.fp8_flops_per_s
        if math is Precision.INT8:
            return self.int8_ops_per_s
        return self.fp4_flops_per_s

    def supports(self, precision: Precision) -> bool:
        """True when the GPU has tensor cores for `precision`'s math natively."""
        return self.dense_flops_per_s(precision) is not None

    def source_of(self, figure: str) -> str:
        """Where a figure group (`memory`, `compute`, `interconnect`, `tdp`) was read."""
        return dict(self.sources)[figure]


@cache
def gpu_catalog() -> dict[str, GpuSpec]:
    """Every catalog GPU by key, loaded once from `data/gpus.yaml`."""
    text = resources.files("llmsizer.specs").joinpath("data/gpus.yaml").read_text()
    raw = parse_yaml(text)
    return {key: _gpu_from_yaml(key, entry) for key, entry in raw.items()}


@cache
def _gpu_index() -> dict[str, str]:
    return build_index(((g.key, g.aliases) for g in gpu_catalog().values()), "GPU")


def get_gpu(name: str) -> GpuSpec:
    """The catalog GPU called `name` (any case or separators), or the device a collected
    calibration file (`llmsizer collect`, a path ending .yaml) was measured on;
    unknown -> `UnknownNameError`."""
    if name.endswith((".yaml", ".yml")) and Path(name).is_file():
        return gpu_from_file(Path(name))
    index = _gpu_index()
    key = index.get(normalize_name(name))
    if key is None:
        key = index.get(normalize_name(_PARENTHESES.sub(" ", name)))
    if key is None:
        raise unknown_name_error("GPU", name, index)
    return gpu_catalog()[key]


def gpu_from_file(path: Path) -> GpuSpec:
    """The `device` entry of a collected calibration file (the catalog's format, with the
    peaks measured on that device); a ValueError if the file has none or it is malformed."""
    entry = read_yaml_mapping(path, "calibration file").get("device")
    if not isinstance(entry, dict):
        raise ValueError(f"{path} has no device entry (made by `llmsizer collect`)")
    return gpu_from_entry(str(path), entry)


def gpu_from_entry(key: str, entry: dict[str, Any]) -> GpuSpec:
    """One device in the catalog's format (`data/gpus.yaml`), validated strictly."""
    try:
        return _gpu_from_yaml(key, entry)
    except (AttributeError, KeyError, TypeError, ValueError) as e:
        raise ValueError(f"not a valid device entry ({e})") from e


_GPU_FIELDS = frozenset(
    {
        "display_name",
        "vendor",
        "architecture",
        "aliases",
        "memory_gb",
        "memory_mib",
        "memory_kind",
        "memory_bandwidth_tb_s",
        "dense_tflops",
        "scale_up_link",
        "scale_up_gb_s",
        "scale_up_domain_size",
        "pcie_gb_s",
        "tdp_w",
        "sources",
    }
)
_OPTIONAL_FIELDS = frozenset({"memory_mib"})  # the device's own figure (gpus.yaml header)
_SOURCE_GROUPS = ("memory", "compute", "interconnect", "tdp")


def _memory_bytes(entry: dict[str, Any]) -> float:
    """The device's memory: `memory_mib` (what nvidia-smi reports) where the entry has it,
    else `memory_gb` in decimal GB (gpus.yaml header)."""
    if entry.get("memory_mib") is not None:
        return float(entry["memory_mib"]) * MiB
    return float(entry["memory_gb"]) * GB


def _gpu_from_yaml(key: str, entry: dict[str, Any]) -> GpuSpec:
    """Validate one YAML entry strictly and convert datasheet units to SI."""
    unknown = set(entry) - _GPU_FIELDS
    missing = _GPU_FIELDS - _OPTIONAL_FIELDS - set(entry)
    if unknown or missing:
        raise ValueError(f"gpus.yaml {key}: unknown keys {unknown}, missing {missing}")
    tflops = {Precision.parse(p): float(v) * TFLOPS for p, v in entry["dense_tflops"].items()}
    sources = entry["sources"]
    if set(sources) != set(_SOURCE_GROUPS):
        raise ValueError(f"gpus.yaml {key}: sources must cover exactly {_SOURCE_GROUPS}")
    scale_up = entry["scale_up_gb_s"]
    tdp = entry["tdp_w"]
    return GpuSpec(
        key=key,
        display_name=entry["display_name"],
        vendor=entry["vendor"],
        architecture=entry["architecture"],
        memory_bytes=_memory_bytes(entry),
        memory_kind=entry["memory_kind"],
        hbm_bytes_per_s=float(entry["memory_bandwidth_tb_s"]) * TB_S,
        bf16_flops_per_s=tflops[Precision.BF16],
        fp16_flops_per_s=tflops[Precision.FP16],
        fp8_flops_per_s=tflops.get(Precision.FP8),
        int8_ops_per_s=tflops.get(Precision.INT8),
        fp4_flops_per_s=tflops.get(Precision.FP4),
        scale_up_link=entry["scale_up_link"],
        # datasheets list bidirectional bandwidth; one direction is half of it
        scale_up_bytes_per_s=None if scale_up is None else float(scale_up) * GB_S / 2,
        scale_up_domain_size=int(entry["scale_up_domain_size"]),
        pcie_bytes_per_s=float(entry["pcie_gb_s"]) * GB_S / 2,
        tdp_w=None if tdp is None else float(tdp),
        aliases=tuple(entry["aliases"]),
        sources=tuple((group, str(sources[group])) for group in _SOURCE_GROUPS),
    )
