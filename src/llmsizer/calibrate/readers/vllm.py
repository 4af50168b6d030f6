"""Import `vllm bench serve --save-result --save-detailed` JSON files.

Schema (vLLM `vllm/benchmarks/serve.py`, `benchmark()` and `main_async()`): one JSON object
per run (`--append-result` adds one per line) with the settings `date`, `backend`,
`model_id`, `num_prompts`, `request_rate` (a number or "inf"), `burstiness`,
`max_concurrency`, the aggregate `duration` (s), `completed`, `failed`, ..., and, with
`--save-detailed`, per-request lists in send order:

    input_lens   prompt tokens            output_lens  output tokens (0 for a failure)
    ttfts        seconds to first chunk   itls         per request, seconds between chunks
    errors       "" or the error text     start_times  perf_counter send times (newer vLLM)

Reconstruction
--------------
Chunk i of a request arrives at `start + ttft + sum(itls[:i])`; per-token times follow
`llmsizer.bench.stream.assign_token_times` with `output_lens` tokens. The finish is the last
chunk (vLLM's own `latency` for completions). vLLM does not save the requested output
length, so `num_output_tokens_requested` is the length produced (0 for a failure).

Without `start_times` the send times are unknown. They are rebuilt by replaying vLLM's
scheduler: request i becomes ready at `i / request_rate` (the mean position of vLLM's
rescaled gamma arrivals; 0 for "inf") and starts when one of `max_concurrency` slots is free,
slots freeing when earlier requests finish. For `request_rate` "inf" with a
`max_concurrency` this is what vLLM did; for a finite rate the arrival jitter is lost. Per-
request latencies are exact either way; throughput should use the file's `duration`.
"""

from __future__ import annotations

import heapq
from pathlib import Path
from typing import Any

import numpy as np

from llmsizer.bench.stream import assign_token_times
from llmsizer.calibrate.readers.run import (
    ImportedRun,
    float_or_none,
    int_or_none,
    token_count,
)
from llmsizer.errors import read_json_values
from llmsizer.records import RequestRecord

PER_REQUEST_KEYS = ("input_lens", "output_lens", "ttfts", "itls", "errors")


def read_vllm(path: Path) -> list[ImportedRun]:
    """Every run in a vLLM result file (one object, or one per line with --append-result)."""
    objects = read_json_values(path, "vLLM result file")
    return [vllm_run(obj, path) for obj in objects]


def vllm_run(d: dict[str, Any], path: Path) -> ImportedRun:
    """One vLLM result object as records (see the module notes)."""
    missing = [k for k in PER_REQUEST_KEYS if k not in d]
    if missing:
        raise ValueError(
            f"{path}: no per-request data (missing {', '.join(missing)}); "
            "run vllm bench serve with --save-result --save-detailed"
        )
    n = len(d["ttfts"])
    for key in PER_REQUEST_KEYS:
        if len(d[key]) != n:
            raise ValueError(f"{path}: {key} has {len(d[key])} entries, ttfts has {n}")
    rate = float_or_none(d.get("request_rate"))
    concurrency = int_or_none(d.get("max_concurrency"))
    latencies = [_latency(d, i) for i in range(n)]
    approximations: list[str] = []
    if "start_times" in d:
        starts = np.asarray(d["start_times"], dtype=np.float64)
        arrivals = starts - starts.min()
    else:
        arrivals = replay_arrivals(latencies, rate, concurrency)
        approximations.append(
            "send times rebuilt from request_rate and max_concurrency (no start_times)"
        )
    records = tuple(_record(d, i, float(arrivals[i]), latencies[i]) for i in range(n))
    return ImportedRun(
        source="vllm",
        path=path,
        records=records,
        model_id=d.get("model_id"),
        max_concurrency=concurrency,
        request_rate=rate,
        burstiness=float_or_none(d.get("burstiness")),
        duration_s=float_or_none(d.get("duration")),
        raw_params={k: v for k, v in d.items() if not isinstance(v, list)},
        approximations=tuple(approximations),
    )


def _latency(d: dict[str, Any], i: int) -> float:
    """Seconds from send to the last chunk: vLLM's `e2els` if saved, else TTFT + sum(ITLs)."""
    if "e2els" in d:
        return float(d["e2els"][i])
    return float(d["ttfts"][i]) + float(sum(d["itls"][i]))


def replay_arrivals(
    latencies_s: list[float], request_rate: float | None, max_concurrency: int | None
) -> np.ndarray:
    """Send times from vLLM's schedule: ready at i / rate, then the first free slot."""
    free: list[float] = [0.0] * max_concurrency if max_concurrency else []
    out = np.zeros(len(latencies_s))
    for i, latency in enumerate(latencies_s):
        start = i / request_rate if request_rate else 0.0
        if max_concurrency:
            start = max(start, heapq.heappop(free))
            heapq.heappush(free, start + latency)
        out[i] = start
    return out


def _record(d: dict[str, Any], i: int, arrival_s: float, latency_s: float) -> RequestRecord:
    n_out = token_count(d["output_lens"][i])
    error = d["errors"][i] or None
    failed = error is not None or n_out == 0
    times = np.zeros(0)
    if not failed:
        gaps = np.concatenate([[0.0], np.cumsum(np.asarray(d["itls"][i], dtype=np.float64))])
        times = assign_token_times(arrival_s + float(d["ttfts"][i]) + gaps, n_out)
    return RequestRecord(
        request_id=i,
        arrival_s=arrival_s,
        num_prompt_tokens=token_count(d["input_lens"][i]),
        num_output_tokens_requested=n_out,
        token_times_s=times,
        finish_s=arrival_s + latency_s if not failed else arrival_s,
        error=_error_text(error) if failed else None,
    )


def _error_text(error: str | None) -> str:
    """vLLM keeps a whole traceback: the record keeps its last line, after a "vllm" kind."""
    if not error:
        return "vllm: failed (vLLM recorded no error text)"
    last = [line for line in error.strip().splitlines() if line.strip()][-1]
    return f"vllm: {last.strip()}"
