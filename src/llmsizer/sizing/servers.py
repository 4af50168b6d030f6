"""Servers: how instances of `tensor_parallel_size x pipeline_parallel_size` GPUs pack into
the systems a customer buys.

The course normalises every result to 8-GPU servers, "even for L40S": an instance is the group
of GPUs holding one replica of the model, and `(# of instances) x TP = 8` (8 instances of TP1,
2 of TP4). A GPU with a catalog system (DGX H100 for H100 SXM, the 8x L40S PCIe server, a
GB200 NVL72 rack) uses that system; any other GPU goes into a generic 8-GPU server whose
NVLink domain is the GPU's own (`GpuSpec.scale_up_domain_size`).

Rules, stated once:
- a tensor-parallel group never leaves one server, and stays inside one NVLink domain when
  the server has one wider than a single GPU; servers without NVLink (L40S, L4) may run TP
  over PCIe, which the performance model prices at PCIe bandwidth;
- an instance larger than a server (pipeline stages on several servers) takes whole servers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llmsizer.specs import get_gpu, system_catalog

GENERIC_SERVER_GPUS = 8  # the course: "We normalize all the results for servers with 8 GPUs"


@dataclass(frozen=True, slots=True)
class Server:
    """What one server holds: `num_gpus` of `gpu_key`, NVLink among `nvlink_domain_size`."""

    name: str
    gpu_key: str
    num_gpus: int
    nvlink_domain_size: int
    source: str

    def why_not(self, tp: int, pp: int) -> str | None:
        """`None` when a TP x PP instance can be placed, else the reason in words."""
        if tp > self.num_gpus:
            return f"TP{tp} is wider than the {self.num_gpus}-GPU {self.name}"
        if 1 < self.nvlink_domain_size < tp:
            return f"TP{tp} would leave the {self.nvlink_domain_size}-GPU NVLink domain"
        g = tp * pp
        if g > self.num_gpus and g % self.num_gpus:
            return f"{g}-GPU instances do not tile {self.num_gpus}-GPU servers"
        if g < self.num_gpus and self.num_gpus % g:
            return f"{g}-GPU instances do not tile {self.num_gpus}-GPU servers"
        return None

    def tp_over_pcie(self, tp: int) -> bool:
        """True when a TP group's all-reduces cross PCIe instead of NVLink."""
        return tp > max(1, self.nvlink_domain_size)

    def instances_per_server(self, num_gpus_per_instance: int) -> float:
        """Instances one server holds; below 1 when an instance spans servers."""
        return self.num_gpus / num_gpus_per_instance

    def num_servers(self, num_instances: int, num_gpus_per_instance: int) -> int:
        """Servers for `num_instances` instances, each kept whole (course table)."""
        if num_instances <= 0:
            return 0
        g = num_gpus_per_instance
        if g >= self.num_gpus:
            return num_instances * math.ceil(g / self.num_gpus)
        return math.ceil(num_instances / (self.num_gpus // g))


def server_for(gpu: str) -> Server:
    """The server a GPU is sized in: its catalog system, else a generic 8-GPU server."""
    spec = get_gpu(gpu)
    systems = [s for s in system_catalog().values() if s.gpu_key == spec.key]
    if systems:
        s = min(systems, key=lambda s: (s.num_gpus != GENERIC_SERVER_GPUS, s.key))
        return Server(s.display_name, spec.key, s.num_gpus, s.nvlink_domain_size, s.source)
    domain = spec.scale_up_domain_size if spec.scale_up_link else 1
    return Server(
        name=f"8x {spec.display_name} server",
        gpu_key=spec.key,
        num_gpus=GENERIC_SERVER_GPUS,
        nvlink_domain_size=min(domain, GENERIC_SERVER_GPUS),
        source="generic 8-GPU server (the course normalises results to 8-GPU servers)",
    )
