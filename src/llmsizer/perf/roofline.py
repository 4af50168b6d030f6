"""Roofline primitives, the step breakdown, and MBU / MFU.

- `roofline_time`: an operation takes the longer of its math time and its memory time
  (Williams, Waterman and Patterson 2009, "Roofline").
- `ring_allreduce_time_s`: a ring all-reduce of S bytes over n ranks takes 2(n-1) steps,
  each moving S/n bytes per link direction and paying one hop latency (Patarasuk and Yuan
  2009; NCCL's ring algorithm).
- `expected_experts_touched`: with T tokens each routed to k of E experts uniformly, an
  expert is missed by one token with probability 1 - k/E, so E(1 - (1 - k/E)^T) experts are
  read per layer (balls into bins; real routers are skewed, which touches fewer).
- `expected_max_normal`: the mean of the largest of n independent standard normals
  (E[max] = integral of x n phi(x) Phi(x)^(n-1)): under expert parallelism the busiest of
  n ranks sets the step, and its count of distinct experts read is the mean plus this many
  standard deviations (normal approximation of the per-rank binomial count).
- `mbu` / `mfu`: achieved bytes/s over peak bandwidth (Databricks, "LLM Inference
  Performance Engineering: Best Practices": MBU = (model size + KV cache size) / TPOT /
  peak bandwidth) and achieved FLOP/s over peak FLOP/s, both per GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from functools import cache

import numpy as np

from llmsizer.specs.gpus import GpuSpec


class Bound(StrEnum):
    """What limits a part of a step."""

    COMPUTE = "compute"
    MEMORY = "memory"
    COMMUNICATION = "communication"
    OVERHEAD = "overhead"


def roofline_time(flops: float, bytes_: float, flops_per_s: float, bytes_per_s: float) -> float:
    """max(flops / achievable FLOP/s, bytes / achievable bytes/s), in seconds."""
    return max(flops / flops_per_s, bytes_ / bytes_per_s)


def ring_allreduce_time_s(
    message_bytes: float, num_ranks: int, link_bytes_per_s: float, hop_latency_s: float
) -> float:
    """Ring all-reduce time: 2(n-1) hops of latency plus 2(n-1)/n of the message per link."""
    if num_ranks <= 1:
        return 0.0
    steps = 2 * (num_ranks - 1)
    return steps * hop_latency_s + steps / num_ranks * message_bytes / link_bytes_per_s


def allreduce_hops(num_ranks: int, *, one_hop: bool) -> int:
    """Latency hops of one all-reduce over `num_ranks` GPUs. A ring takes 2(n-1). Where every
    GPU is one hop from every other (`one_hop`: an NVSwitch fabric or a full mesh), the
    engines' all-reduce for decode-sized messages is a reduce-scatter and an all-gather of
    one hop each, whatever n: vLLM's custom all-reduce (one-shot / two-shot kernels,
    `csrc/custom_all_reduce.cuh`), TensorRT-LLM's `AllReduceStrategy` ONESHOT / TWOSHOT and
    NCCL's NVLS algorithm. Its bytes per link stay the ring's 2(n-1)/n of the message."""
    if num_ranks <= 1:
        return 0
    return 2 if one_hop else 2 * (num_ranks - 1)


def expected_experts_touched(num_tokens: float, num_experts: int, top_k: int) -> float:
    """Distinct experts a layer reads for `num_tokens` tokens routed to `top_k` of them."""
    if num_tokens <= 0:
        return 0.0
    miss_per_token = 1.0 - top_k / num_experts
    return num_experts * (1.0 - miss_per_token**num_tokens)


@cache
def expected_max_normal(n: int) -> float:
    """E[max of `n` iid N(0, 1)] (module docstring): 0 for one, 0.5642 for two, 1.4236 for 8."""
    if n <= 1:
        return 0.0
    x = np.linspace(-9.0, 9.0, 3_601)
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    cdf = 0.5 * (1.0 + np.array([math.erf(v / math.sqrt(2.0)) for v in x]))
    return float(np.trapezoid(x * n * pdf * cdf ** (n - 1), x))


@dataclass(frozen=True, slots=True)
class PartCost:
    """One kind of work in a step, per GPU: its FLOPs and memory bytes, the time it takes
    and what bounds it."""

    name: str
    time_s: float
    flops: float
    hbm_bytes: float
    bound: Bound


@dataclass(frozen=True, slots=True)
class StepBreakdown:
    """A step's cost by part, per GPU of one pipeline stage.

    - `time_s`: the step's latency, all stages in turn (what `StepModel(batch)` returns).
    - `stage_interval_s`: the slowest stage's time, i.e. the interval between batches when
      `pipeline_parallel_size` batches are in flight (equals `time_s` without pipelining).
    - `flops`, `hbm_bytes`: summed over the step for one GPU of each stage, i.e. the work of
      the whole model divided by `tensor_parallel_size`.
    """

    time_s: float
    stage_interval_s: float
    parts: tuple[PartCost, ...]
    num_tokens: int

    @property
    def flops(self) -> float:
        return sum(p.flops for p in self.parts)

    @property
    def hbm_bytes(self) -> float:
        return sum(p.hbm_bytes for p in self.parts)

    @property
    def bound(self) -> Bound:
        """The bound of the part that takes longest."""
        return max(self.parts, key=lambda p: p.time_s).bound

    def part(self, name: str) -> PartCost:
        for p in self.parts:
            if p.name == name:
                return p
        raise KeyError(f"no part {name!r}; parts: {[p.name for p in self.parts]}")


def mbu(breakdown: StepBreakdown, gpu: GpuSpec) -> float:
    """Model bandwidth utilisation: bytes each GPU read or wrote over the step time, over
    its peak memory bandwidth."""
    return breakdown.hbm_bytes / breakdown.time_s / gpu.hbm_bytes_per_s


def mfu(breakdown: StepBreakdown, peak_flops_per_s: float) -> float:
    """Model FLOPs utilisation: FLOPs each GPU did over the step time, over `peak_flops_per_s`
    (the dense peak of the math the step used, e.g. `Deployment.matmul_flops_per_s`)."""
    return breakdown.flops / breakdown.time_s / peak_flops_per_s
