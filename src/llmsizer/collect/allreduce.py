"""Timing the all-reduce over the devices present, and fitting the model's collective factors.

`time_allreduce` spawns one process per device (`torch.multiprocessing`, a file store in a
temporary directory for the rendezvous: nothing leaves the machine) that join a
`torch.distributed` group (NCCL on CUDA GPUs, one GPU each; gloo on the CPU, one thread
each) and sum the activations of `tokens` tokens (hidden x tokens, BF16: a decode or
prefill step's tensor-parallel all-reduce) at each token count of the grid, coarse to
fine. Each repeat starts after a barrier; rank 0 times it (wall clock, after a device
synchronise) and the row is the median of the repeats. Rank 0 also keeps the run within
its deadline, telling the others when to stop.

The performance model prices one all-reduce of m bytes over n ranks as (`perf.constants`)

    hops(n) * collective_hop_latency_s + 2 (n - 1) / n * m / (link * interconnect_efficiency)

with hops and link from the device entry (`perf.roofline.allreduce_hops`: 2 on a scale-up
fabric, a ring's 2 (n - 1) otherwise). `fit_allreduce` fits the intercept and slope of
that line by least relative squared error; the slope gives the bus bandwidth (nccl-tests'
busbw: 2 (n - 1) / n of the message over the time), the intercept the hop latency.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from llmsizer.collect.budget import coarse_to_fine
from llmsizer.collect.timings import Kind, Timing
from llmsizer.perf.efficiency import EfficiencyFactors
from llmsizer.perf.roofline import allreduce_hops
from llmsizer.specs import GpuSpec

_BOUNDS = EfficiencyFactors.bounds()
_BF16_BYTES = 2


@dataclass(frozen=True, slots=True)
class AllReduceFit:
    """The fitted line (module docstring): its bus bandwidth and intercept."""

    num_ranks: int
    backend: str
    bus_bytes_per_s: float
    latency_s: float
    best_bus_bytes_per_s: float  # the best of any one row
    num_rows: int
    median_ape_pct: float

    def link(self, gpu: GpuSpec) -> tuple[int, float]:
        """(hops, per-direction link bytes/s) the model prices this group on `gpu` with
        (`perf.Deployment.allreduce_hops` and `link_bytes_per_s`)."""
        scale_up = gpu.scale_up_bytes_per_s
        one_hop = scale_up is not None and self.num_ranks <= gpu.scale_up_domain_size
        link = scale_up if one_hop and scale_up is not None else gpu.pcie_bytes_per_s
        return allreduce_hops(self.num_ranks, one_hop=one_hop), link

    def factors(self, gpu: GpuSpec) -> dict[str, float]:
        """`interconnect_efficiency` and `collective_hop_latency_s` on `gpu`'s link, held
        to their bounds (`EfficiencyFactors.bounds`)."""
        hops, link = self.link(gpu)
        efficiency = self.bus_bytes_per_s / link
        return {
            "interconnect_efficiency": _within("interconnect_efficiency", efficiency),
            "collective_hop_latency_s": _within("collective_hop_latency_s", self.latency_s / hops),
        }


def _within(name: str, value: float) -> float:
    """`value` to 4 significant digits, inside the factor's bounds (a gloo hop on a CPU
    takes longer than the 100 us any GPU fabric's could)."""
    low, high = _BOUNDS[name]
    return min(high, max(low + 1e-6, float(f"{value:.4g}")))


def backend_for(device_type: str) -> str:
    return "nccl" if device_type == "cuda" else "gloo"


def time_allreduce(
    num_ranks: int,
    hidden_size: int,
    tokens: tuple[int, ...],
    *,
    device_type: str,
    warmup: int,
    repeats: int,
    seconds: float,
) -> list[Timing]:
    """Median seconds of an all-reduce of `hidden_size x t` BF16 values over `num_ranks`
    processes for each `t` of `tokens` (coarse to fine, until `seconds` from the start of
    the first, always the first two: the smallest and largest message, so that
    `fit_allreduce` has a line to fit however slow the machine is)."""
    if num_ranks < 2:
        raise ValueError(f"an all-reduce needs 2 or more devices, not {num_ranks}")
    if device_type == "cuda" and num_ranks > torch.cuda.device_count():
        raise ValueError(
            f"--devices {num_ranks}: this machine has {torch.cuda.device_count()} CUDA GPUs"
        )
    sizes = coarse_to_fine(tokens)
    if device_type == "cuda":
        torch.cuda.empty_cache()  # this process's cached blocks, off rank 0's GPU
    ctx = mp.get_context("spawn")
    results = ctx.SimpleQueue()
    with tempfile.TemporaryDirectory(prefix="llmsizer-allreduce-") as tmp:
        spec = _Job(
            os.path.join(tmp, "store"),
            num_ranks,
            hidden_size,
            tuple(sizes),
            device_type,
            warmup,
            repeats,
            seconds,
        )
        try:
            mp.start_processes(
                _worker, args=(spec, results), nprocs=num_ranks, start_method="spawn"
            )
        except (mp.ProcessRaisedException, mp.ProcessExitedException) as e:
            last = str(e).strip().splitlines()[-1]
            raise ValueError(
                f"the all-reduce over {num_ranks} devices ({backend_for(device_type)}) "
                f"failed: {last}; --devices 1 skips it"
            ) from None
        medians: list[tuple[int, float]] = results.get()
    backend = backend_for(device_type)
    return [
        Timing(
            Kind.ALLREDUCE, backend, "bf16", t, num_ranks, 0, 0.0, _message_bytes(hidden_size, t), s
        )
        for t, s in medians
    ]


def _message_bytes(hidden_size: int, tokens: int) -> float:
    return float(hidden_size * tokens * _BF16_BYTES)


@dataclass(frozen=True, slots=True)
class _Job:
    store: str
    num_ranks: int
    hidden_size: int
    tokens: tuple[int, ...]
    device_type: str
    warmup: int
    repeats: int
    seconds: float


def _worker(rank: int, job: _Job, results: Any) -> None:
    """One rank of `time_allreduce` (a spawned process)."""
    if job.device_type == "cuda":
        torch.cuda.set_device(rank)
        device = torch.device("cuda", rank)
    else:
        torch.set_num_threads(1)
        device = torch.device("cpu")
    dist.init_process_group(
        backend_for(job.device_type),
        init_method=f"file://{job.store}",
        rank=rank,
        world_size=job.num_ranks,
    )
    try:
        medians = _time_sizes(job, device)
        if rank == 0:
            results.put(medians)
    finally:
        dist.destroy_process_group()


def _time_sizes(job: _Job, device: torch.device) -> list[tuple[int, float]]:
    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    deadline = time.perf_counter() + job.seconds
    go = torch.ones(1, device=device)
    medians = []
    rank = dist.get_rank()
    for n, tokens in enumerate(job.tokens):
        if n >= 2:  # rank 0's clock decides for all, after the two a line needs
            go.fill_(1.0 if time.perf_counter() < deadline else 0.0)
            dist.broadcast(go, src=0)
            if go.item() == 0.0:
                break
        x = torch.randn(tokens, job.hidden_size, device=device, dtype=torch.bfloat16)
        samples = []
        for i in range(job.warmup + job.repeats):
            dist.barrier(device_ids=[rank] if device.type == "cuda" else None)
            sync()
            start = time.perf_counter()
            dist.all_reduce(x)
            sync()
            if i >= job.warmup:
                samples.append(time.perf_counter() - start)
        medians.append((tokens, statistics.median(samples)))
    return medians


def fit_allreduce(timings: list[Timing]) -> AllReduceFit:
    """The all-reduce line (module docstring) through the all-reduce rows of `timings`."""
    rows = [t for t in timings if t.kind is Kind.ALLREDUCE]
    if not rows:
        raise ValueError("no all-reduce timings to fit")
    n = rows[0].batch
    message = np.array([t.bytes for t in rows])
    seconds = np.array([t.seconds for t in rows])
    latency, per_byte = _line(message, seconds)
    ape = np.abs(latency + per_byte * message - seconds) / seconds * 100
    ring = 2 * (n - 1) / n  # bytes over each link per byte of message
    return AllReduceFit(
        num_ranks=n,
        backend=rows[0].name,
        bus_bytes_per_s=ring / per_byte,
        latency_s=latency,
        best_bus_bytes_per_s=float(np.max(ring * message / seconds)),
        num_rows=len(rows),
        median_ape_pct=float(np.median(ape)),
    )


def _line(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(a, b), a >= 0 and b > 0, minimising sum(((a + b x) / y - 1)^2): each row's relative
    error counts alike (a small message's microseconds and a large one's milliseconds)."""
    design = np.stack([1.0 / y, x / y], axis=1)
    (a, b), *_ = np.linalg.lstsq(design, np.ones_like(y), rcond=None)
    if a < 0:  # no latency to see: the line through the origin
        a, b = 0.0, float(np.sum(x / y) / np.sum((x / y) ** 2))
    if b <= 0:  # no bandwidth to see (all latency): the largest message's rate bounds it
        b = float(y[np.argmax(x)] / np.max(x))
    return float(a), float(b)
