"""`make_workload`: a `WorkloadSpec` turned into a `Workload` of plain arrays.

Random draws come from one `numpy.random.Generator`, in a fixed order (trace rows, prompt
lengths, output lengths, arrival gaps), so a spec and a seed always give the same workload.
"""

from __future__ import annotations

import numpy as np

from llmsizer.workload import arrivals
from llmsizer.workload.core import Workload, read_only
from llmsizer.workload.spec import DEFAULT_NUM_REQUESTS, WorkloadSpec
from llmsizer.workload.traces import read_trace


def make_workload(spec: WorkloadSpec, rng: np.random.Generator | None = None) -> Workload:
    """The requests `spec` describes, every random draw from `rng`.

    `rng` defaults to `np.random.default_rng(spec.seed)`, so one spec always gives the same
    workload. Reads the trace file when the spec names one; raises `TraceError` (a
    `ValueError`) when it cannot, and `ValueError` when `num_requests` exceeds a replayed trace.
    """
    source = spec.describe()
    if rng is None:
        rng = np.random.default_rng(spec.seed)
        source += f"; seed {spec.seed}"
    trace = None if spec.trace is None else read_trace(spec.trace, spec.resolved_trace_format())
    if spec.arrival == "trace" and trace is not None:
        return _replay(spec, trace, rng, source)
    num = DEFAULT_NUM_REQUESTS if spec.num_requests is None else spec.num_requests
    prompt, output = _sample_lengths(spec, num, trace, rng)
    concurrency = spec.concurrency if spec.arrival == "closed_loop" else None
    return Workload(
        num_prompt_tokens=read_only(prompt + spec.system_prompt_tokens),
        num_output_tokens=output,
        arrival_s=_sample_arrivals(spec, num, rng),
        concurrency=concurrency,
        system_prompt_tokens=spec.system_prompt_tokens,
        source=source,
    )


def _sample_lengths(
    spec: WorkloadSpec, num: int, trace: Workload | None, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Prompt and output lengths; trace kinds share one row draw so pairs stay together."""
    prompt_column = output_column = None
    if trace is not None:
        rows = rng.integers(0, trace.num_requests, size=num)
        prompt_column, output_column = trace.num_prompt_tokens[rows], trace.num_output_tokens[rows]
    prompt = spec.isl_used.sample(num, rng, prompt_column)
    output = spec.osl_used.sample(num, rng, output_column)
    return prompt, output


def _sample_arrivals(spec: WorkloadSpec, num: int, rng: np.random.Generator) -> np.ndarray | None:
    match spec.arrival:
        case "burst":
            return arrivals.burst_arrivals(num)
        case "poisson":
            return arrivals.poisson_arrivals(num, spec.request_rate, rng)
        case "gamma":
            return arrivals.gamma_arrivals(num, spec.request_rate, spec.burstiness, rng)
        case "closed_loop":
            return None
        case "trace":
            raise AssertionError("trace arrivals are replayed, not sampled")


def _replay(spec: WorkloadSpec, trace: Workload, rng: np.random.Generator, source: str) -> Workload:
    """The trace's arrivals, first N requests, time-scaled; lengths its own unless overridden."""
    if spec.num_requests is not None:
        if spec.num_requests > trace.num_requests:
            raise ValueError(
                f"num_requests={spec.num_requests}, but the trace '{spec.trace}' has only "
                f"{trace.num_requests} requests"
            )
        trace = trace.head(spec.num_requests)
    trace = trace.with_time_scale(spec.time_scale / spec.rate_scale)
    prompt = spec.isl_used.sample(trace.num_requests, rng, trace.num_prompt_tokens)
    output = spec.osl_used.sample(trace.num_requests, rng, trace.num_output_tokens)
    hashes = None
    if spec.isl_used.kind == "trace" and trace.prefix_hashes is not None:
        hashes = _hashes_within(trace.prefix_hashes, prompt, trace.prefix_block_tokens)
    return Workload(
        num_prompt_tokens=read_only(prompt + spec.system_prompt_tokens),
        num_output_tokens=output,
        arrival_s=trace.arrival_s,
        prefix_hashes=hashes,
        prefix_block_tokens=trace.prefix_block_tokens,
        system_prompt_tokens=spec.system_prompt_tokens,
        source=source,
    )


def _hashes_within(
    hashes: tuple[tuple[int, ...], ...], prompt: np.ndarray, block_tokens: int
) -> tuple[tuple[int, ...], ...]:
    """Each request's block hashes, cut to the blocks its (possibly capped) prompt covers."""
    num_blocks = -(-prompt // block_tokens)  # ceil division: a partial last block counts
    return tuple(
        h[:n] if len(h) > n else h for h, n in zip(hashes, num_blocks.tolist(), strict=True)
    )
