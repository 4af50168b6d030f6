"""Run a benchmark sweep: for each load point, warm up, send the workload, keep every record.

    results = run_benchmark(spec)      # one BenchResult per sweep point

The `Workload` of each point comes from `llmsizer.workload.make_workload` and
`BenchSpec.workload_spec(point)` (closed loop for a concurrency, Poisson or gamma arrivals
for a rate, the replayed file for a trace), or from a `workload_for(point)` the caller
passes; this module never draws arrivals itself. Each point runs as `point.PointRun`
describes; after each, the results file is rewritten with every point so far, and an
aborted or interrupted point ends the sweep.

Ctrl-C stops the sweep after marking the requests in flight as interrupted; the results so
far are returned and written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from rich.console import Console

from llmsizer.bench.client import Endpoint
from llmsizer.bench.counters import choose_counter
from llmsizer.bench.errors import BenchError
from llmsizer.bench.point import PointRun
from llmsizer.bench.priority import realtime_priority
from llmsizer.bench.progress import SweepProgress
from llmsizer.bench.prompts import PromptMaker, PromptTokenSource, measure_word_costs
from llmsizer.bench.results import BenchResult, format_result, write_results
from llmsizer.bench.spec import BenchSpec, LoadPoint
from llmsizer.records import jsonl_with_label
from llmsizer.workload import Workload, make_workload

WorkloadFor = Callable[[LoadPoint], Workload]


def run_benchmark(
    spec: BenchSpec,
    *,
    workload_for: WorkloadFor | None = None,
    rng: np.random.Generator | None = None,
    console: Console | None = None,
    live_progress: bool = False,
    transport: httpx.AsyncBaseTransport | None = None,
) -> list[BenchResult]:
    """Run the sweep of `spec` (see the module notes); blocking, for the CLI.

    One generator draws arrivals, lengths and prompt words: `rng`, by default
    `numpy.random.default_rng(spec.seed)`; a caller's `workload_for` should draw from the same
    one. `console` receives progress and one
    table per point (None: silent); `live_progress` shows a rich bar instead of plain lines.
    `transport` replaces the network (tests pass an `httpx.MockTransport`).
    """
    return asyncio.run(
        run_benchmark_async(
            spec,
            workload_for=workload_for,
            rng=rng,
            console=console,
            live_progress=live_progress,
            transport=transport,
        )
    )


async def run_benchmark_async(
    spec: BenchSpec,
    *,
    workload_for: WorkloadFor | None = None,
    rng: np.random.Generator | None = None,
    console: Console | None = None,
    live_progress: bool = False,
    transport: httpx.AsyncBaseTransport | None = None,
) -> list[BenchResult]:
    """`run_benchmark` for callers already inside an event loop."""
    out = console or Console(quiet=True)
    with realtime_priority(spec.realtime):
        return await _run_sweep(spec, workload_for, rng, out, live_progress, transport)


async def _run_sweep(
    spec: BenchSpec,
    workload_for: WorkloadFor | None,
    rng: np.random.Generator | None,
    out: Console,
    live_progress: bool,
    transport: httpx.AsyncBaseTransport | None,
) -> list[BenchResult]:
    async with _http_client(spec, transport) as http:
        model = spec.model or await discover_model(http)
        options = spec.client_options(model)
        count, source = await choose_counter(spec.prompt_tokens_from, http, options, spec.tokenizer)
        costs = await measure_word_costs(count)
        rng = rng or np.random.default_rng(spec.seed)
        maker = PromptMaker(costs, count, rng)
        if workload_for is None:
            workload_for = _workloads_of(spec, rng)
        points = spec.load_points()
        results: list[BenchResult] = []
        for point in points:
            records_path = _records_path(spec.records_path, point, len(points))
            params = _params(spec, model, source, point, records_path)
            run = PointRun(http, spec, options, maker, SweepProgress(out, live_progress))
            try:
                result = await run.run(point, workload_for(point), params, records_path)
            except asyncio.CancelledError:  # Ctrl-C while preparing a point: keep the rest
                _uncancel()
                break
            results.append(result)
            if spec.result_path is not None:
                write_results(results, spec.result_path)
            out.print(format_result(result))
            if result.interrupted or result.aborted:
                break
    return results


def _uncancel() -> None:
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


def _workloads_of(spec: BenchSpec, rng: np.random.Generator) -> WorkloadFor:
    def workload_for(point: LoadPoint) -> Workload:
        return make_workload(spec.workload_spec(point), rng)

    return workload_for


def _http_client(spec: BenchSpec, transport: httpx.AsyncBaseTransport | None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {spec.api_key}"} if spec.api_key else {}
    return httpx.AsyncClient(
        base_url=spec.base_url,
        transport=transport,
        headers=headers,
        timeout=httpx.Timeout(spec.timeout_s),
        # No pool limit: a request queued in the client would count as server latency.
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=None),
        trust_env=False,  # never route a benchmark through a proxy from the environment
    )


async def discover_model(http: httpx.AsyncClient) -> str:
    """The first model the server lists at `/v1/models`."""
    try:
        response = await http.get("/v1/models")
        response.raise_for_status()
        return str(response.json()["data"][0]["id"])
    except (httpx.HTTPError, KeyError, IndexError, ValueError) as e:
        url = f"{str(http.base_url).rstrip('/')}/v1/models"
        raise BenchError(f"could not read a model name from {url}: {e}") from e


def _records_path(path: Path | None, point: LoadPoint, num_points: int) -> Path | None:
    """The point's JSONL file: the given path, or in a sweep `<stem>-<label>.jsonl[.gz]`."""
    if path is None or num_points == 1:
        return path
    return jsonl_with_label(path, point.label)


def _params(
    spec: BenchSpec,
    model: str,
    source: PromptTokenSource,
    point: LoadPoint,
    records_path: Path | None,
) -> dict[str, Any]:
    """The run's parameters, with vLLM's result keys where vLLM has one."""
    closed = point.kind == "concurrency"
    return {
        "date": datetime.now().strftime("%Y%m%d-%H%M%S"),
        "tool": "llmsizer",
        "tool_version": version("llmsizer"),
        "backend": "openai-chat" if spec.endpoint is Endpoint.CHAT else "openai",
        "endpoint": spec.endpoint.path,
        "base_url": spec.base_url,
        "model_id": model,
        "load": point.kind,
        "max_concurrency": int(point.value or 0) if closed else None,
        "request_rate": "inf" if closed or point.value == float("inf") else point.value,
        "burstiness": spec.burstiness if point.kind == "rate" else None,
        "trace": str(spec.trace) if spec.trace is not None else None,
        "time_scale": spec.time_scale if point.kind == "trace" else None,
        "isl": spec.isl,
        "osl": spec.osl,
        "num_prompts": spec.num_prompts,
        "num_warmups": spec.num_warmups,
        "seed": spec.seed,
        "ignore_eos": spec.ignore_eos,
        "realtime": spec.realtime,
        "prompt_token_source": source.value,
        "records_path": str(records_path) if records_path is not None else None,
    }
