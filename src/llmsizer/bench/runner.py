"""Run a benchmark sweep: for each load point, warm up, send the workload, keep every record.

    results = run_benchmark(spec)      # one BenchResult per sweep point

The `Workload` of each point comes from `llmsizer.workload.make_workload` and
`BenchSpec.workload_spec(point)` (closed loop for a concurrency, Poisson or gamma arrivals
for a rate, the replayed file for a trace), or from a `workload_for(point)` the caller
passes; this module never draws arrivals itself. Each point runs as `point.PointRun`
describes; after each, the results file is rewritten with every point so far, and an
aborted or interrupted point ends the sweep.

Before anything is sent the run checks that it will not overwrite an earlier run's files
(unless `overwrite`) and that the server answers: an unreachable server stops it with one
line (`BenchError`), not a traceback. A point that cannot be prepared later (the server died
between points) becomes an aborted point, and the sweep ends there, its results written.

Ctrl-C, SIGTERM and SIGHUP stop the sweep after marking the requests in flight as
interrupted; the results so far are returned and written (a second SIGTERM kills as usual).
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
from llmsizer.bench.failure import FailureKind, describe_exception
from llmsizer.bench.point import PointRun
from llmsizer.bench.priority import realtime_priority
from llmsizer.bench.progress import SweepProgress
from llmsizer.bench.prompts import PromptMaker, PromptTokenSource, measure_word_costs
from llmsizer.bench.results import BenchResult, format_result, write_results
from llmsizer.bench.spec import BenchSpec, LoadPoint
from llmsizer.output import refuse_existing
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

    async def main() -> list[BenchResult]:
        with _stop_on_signals():
            return await run_benchmark_async(
                spec,
                workload_for=workload_for,
                rng=rng,
                console=console,
                live_progress=live_progress,
                transport=transport,
            )

    return asyncio.run(main())


@contextmanager
def _stop_on_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP cancel the run like Ctrl-C (which `asyncio.run` handles already);
    each handler removes itself, so a second signal has its usual effect. Signal handlers
    exist only in the main thread; elsewhere the signals keep their default action."""
    task = asyncio.current_task()
    if threading.current_thread() is not threading.main_thread() or task is None:
        yield
        return
    loop = asyncio.get_running_loop()

    def stop(signum: int) -> None:
        loop.remove_signal_handler(signum)
        task.cancel()

    signals = (signal.SIGTERM, signal.SIGHUP)
    for signum in signals:
        loop.add_signal_handler(signum, stop, signum)
    try:
        yield
    finally:
        for signum in signals:
            loop.remove_signal_handler(signum)


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
    points = spec.load_points()
    _check_outputs(spec, points)
    results: list[BenchResult] = []
    async with _http_client(spec, transport) as http:
        try:
            model = await probe_server(http, spec.model)
            options = spec.client_options(model)
            count, source = await choose_counter(
                spec.prompt_tokens_from, http, options, spec.tokenizer
            )
            costs = await measure_word_costs(count)
        except asyncio.CancelledError:  # stopped before anything was measured
            _uncancel()
            return results
        rng = rng or np.random.default_rng(spec.seed)
        maker = PromptMaker(costs, count, rng)
        if workload_for is None:
            workload_for = _workloads_of(spec, rng)
        for point in points:
            records_path = _records_path(spec.records_path, point, len(points))
            params = _params(spec, model, source, point, records_path)
            run = PointRun(http, spec, options, maker, SweepProgress(out, live_progress))
            try:
                result = await run.run(point, workload_for(point), params, records_path)
            except asyncio.CancelledError:  # Ctrl-C while preparing a point: keep the rest
                _uncancel()
                break
            except BenchError as e:  # e.g. the server died between points
                if not results:
                    raise
                result = BenchResult(point, params, (), {}, spec.num_prompts, aborted=str(e))
            results.append(result)
            if spec.result_path is not None:
                write_results(results, spec.result_path)
            out.print(format_result(result), markup=False, highlight=False)
            if result.interrupted or result.aborted:
                break
    return results


def _check_outputs(spec: BenchSpec, points: tuple[LoadPoint, ...]) -> None:
    """Refuse to replace an earlier run's files unless `overwrite` (before sending anything)."""
    paths = [spec.result_path, *(_records_path(spec.records_path, p, len(points)) for p in points)]
    refuse_existing(paths, overwrite=spec.overwrite, error=BenchError)


def _uncancel() -> None:
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


def _workloads_of(spec: BenchSpec, rng: np.random.Generator) -> WorkloadFor:
    def workload_for(point: LoadPoint) -> Workload:
        return make_workload(spec.workload_spec(point), rng)

    return workload_for


def _http_client(spec: BenchSpec, transport: httpx.AsyncBaseTransport | None) -> httpx.AsyncClient:
    # No compression: it would hold chunks back, and a small body could unpack to gigabytes.
    headers = {"Accept-Encoding": "identity"}
    if spec.api_key:
        headers["Authorization"] = f"Bearer {spec.api_key}"
    return httpx.AsyncClient(
        base_url=spec.base_url,
        transport=transport,
        headers=headers,
        timeout=httpx.Timeout(spec.timeout_s),
        # No pool limit: a request queued in the client would count as server latency.
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=None),
        trust_env=False,  # never route a benchmark through a proxy from the environment
    )


async def probe_server(http: httpx.AsyncClient, model: str | None) -> str:
    """The model to measure: `model`, or else the first one the server lists at `/v1/models`.

    Either way the server must answer (any status will do when `model` is given); one that
    cannot be reached is a `BenchError` in one line: "cannot connect to <url>: ...".
    """
    base = str(http.base_url).rstrip("/")
    try:
        response = await http.get("/v1/models")
    except httpx.HTTPError as e:
        failure = describe_exception(e, url=base, responded=False)
        if failure.kind == FailureKind.CONNECTION:
            raise BenchError(failure.detail) from e  # "cannot connect to <url>: <why>"
        raise BenchError(f"no answer from {base}/v1/models: {failure}") from e
    if model is not None:
        return model
    try:
        response.raise_for_status()
        return str(response.json()["data"][0]["id"])
    except (httpx.HTTPError, KeyError, IndexError, TypeError, ValueError) as e:
        raise BenchError(
            f"could not read a model name from {base}/v1/models ({e}): give it with --model"
        ) from e


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
