"""`Config`: one deployable configuration of the searched knobs, and `Sizing`: how many
instances, GPUs and servers a rate per instance needs at a load.

Instances are `ceil(load / rate)`, at least one; servers follow the course's table
(`servers.Server.num_servers`: `(# of instances) x TP = 8` per 8-GPU server).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llmsizer.sizing.servers import Server


@dataclass(frozen=True, slots=True)
class Config:
    """One deployable configuration of the searched knobs (`None`: the engine preset's)."""

    gpu: str
    precision: str = "bf16"
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    engine: str = "vllm"
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None

    @property
    def num_gpus(self) -> int:
        return self.tensor_parallel_size * self.pipeline_parallel_size

    def label(self) -> str:
        """`h100-sxm bf16 TP8 trtllm` (plus PP and knobs when set)."""
        parts = [self.gpu, self.precision, f"TP{self.tensor_parallel_size}"]
        if self.pipeline_parallel_size > 1:
            parts.append(f"PP{self.pipeline_parallel_size}")
        parts.append(self.engine)
        if self.max_num_seqs is not None:
            parts.append(f"max_num_seqs={self.max_num_seqs}")
        if self.max_num_batched_tokens is not None:
            parts.append(f"max_num_batched_tokens={self.max_num_batched_tokens}")
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class Sizing:
    """Instances, GPUs and servers for a rate per instance at a load."""

    num_instances: int
    num_gpus: int
    num_servers: int

    @classmethod
    def of(cls, load_rps: float, rate: float, config: Config, server: Server) -> Sizing:
        n = max(1, math.ceil(load_rps / rate - 1e-9))
        g = config.num_gpus
        return cls(n, n * g, server.num_servers(n, g))
