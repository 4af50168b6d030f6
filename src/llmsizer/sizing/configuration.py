"""`Sizing`: how many instances, GPUs and servers a rate per instance needs at a load.

Instances are `ceil(load / rate)`, at least one; servers follow the course's table
(`servers.Server.num_servers`: `(# of instances) x TP = 8` per 8-GPU server).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llmsizer.instance import DeploymentSpec
from llmsizer.sizing.servers import Server


@dataclass(frozen=True, slots=True)
class Sizing:
    """Instances, GPUs and servers for a rate per instance at a load."""

    num_instances: int
    num_gpus: int
    num_servers: int

    @classmethod
    def of(cls, load_rps: float, rate: float, config: DeploymentSpec, server: Server) -> Sizing:
        n = max(1, math.ceil(load_rps / rate - 1e-9))
        g = config.gpus_per_instance
        return cls(n, n * g, server.num_servers(n, g))
