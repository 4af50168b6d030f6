"""Servers and racks: GPUs per system, the fabric that joins them, the network out.

The course sizes in 8-GPU servers (an instance is `tensor_parallel_size` GPUs, and
`num_gpus / tensor_parallel_size` instances fit in one server); a tensor-parallel group is
fast only inside one NVLink domain. Data lives in `data/systems.yaml`; prices are not part
of the catalog (sizing takes them as its own input).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from llmsizer.errors import parse_yaml
from llmsizer.specs.gpus import GpuSpec, get_gpu
from llmsizer.specs.names import build_index, normalize_name, unknown_name_error
from llmsizer.units import GB_S


@dataclass(frozen=True, slots=True)
class SystemSpec:
    """One server or rack type.

    - `gpu_key`: the catalog GPU it holds; `gpu()` returns its `GpuSpec`.
    - `nvlink_domain_size`: the largest tensor-parallel group on the scale-up fabric.
    - `scale_out_bytes_per_s_per_gpu`: network bandwidth per GPU, one direction, or `None`.
    """

    key: str
    display_name: str
    gpu_key: str
    num_gpus: int
    nvlink_domain_size: int
    interconnect: str
    scale_out_bytes_per_s_per_gpu: float | None
    source: str
    aliases: tuple[str, ...] = ()

    def gpu(self) -> GpuSpec:
        return get_gpu(self.gpu_key)

    def num_instances(self, num_gpus_per_instance: int) -> int:
        """Model replicas that fit in one system (the course's `instances * TP = 8`)."""
        if num_gpus_per_instance < 1:
            raise ValueError(f"num_gpus_per_instance must be >= 1, got {num_gpus_per_instance}")
        return self.num_gpus // num_gpus_per_instance


@cache
def system_catalog() -> dict[str, SystemSpec]:
    """Every catalog system by key, loaded once from `data/systems.yaml`."""
    text = resources.files("llmsizer.specs").joinpath("data/systems.yaml").read_text()
    return {key: _system_from_yaml(key, entry) for key, entry in parse_yaml(text).items()}


@cache
def _system_index() -> dict[str, str]:
    return build_index(((s.key, s.aliases) for s in system_catalog().values()), "system")


def get_system(name: str) -> SystemSpec:
    """The catalog system called `name` (any case or separators); unknown -> error."""
    index = _system_index()
    key = index.get(normalize_name(name))
    if key is None:
        raise unknown_name_error("system", name, index)
    return system_catalog()[key]


_SYSTEM_FIELDS = frozenset(
    {
        "display_name",
        "aliases",
        "gpu",
        "num_gpus",
        "nvlink_domain_size",
        "interconnect",
        "scale_out_gb_s_per_gpu",
        "source",
    }
)


def _system_from_yaml(key: str, entry: dict[str, Any]) -> SystemSpec:
    unknown = set(entry) - _SYSTEM_FIELDS
    missing = _SYSTEM_FIELDS - set(entry)
    if unknown or missing:
        raise ValueError(f"systems.yaml {key}: unknown keys {unknown or '{}'}, missing {missing}")
    scale_out = entry["scale_out_gb_s_per_gpu"]
    system = SystemSpec(
        key=key,
        display_name=entry["display_name"],
        gpu_key=get_gpu(entry["gpu"]).key,
        num_gpus=int(entry["num_gpus"]),
        nvlink_domain_size=int(entry["nvlink_domain_size"]),
        interconnect=entry["interconnect"],
        scale_out_bytes_per_s_per_gpu=None if scale_out is None else float(scale_out) * GB_S,
        source=entry["source"],
        aliases=tuple(entry["aliases"]),
    )
    if system.nvlink_domain_size > system.num_gpus:
        raise ValueError(f"systems.yaml {key}: NVLink domain larger than the system")
    return system
