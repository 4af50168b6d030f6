"""Run a benchmark sweep: for each load point, warm up, send the workload, keep every record.

    results = run_benchmark(spec)      # one BenchResult per sweep point

The `Workload` of each point comes from `llmsizer.workload.make_workload` and
`BenchSpec.workload_spec(point)` (closed loop for a concurrency, Poisson or gamma arrivals
for a rate, the replayed file for a trace), or from a `workload_for(point)` the caller
passes; this module never draws arrivals itself. Per point:

1. make the prompts (warm-up ones and measured ones, all distinct), exact to the token;
2. send the warm-up requests; if every one fails, the point is aborted and the sweep stops;
3. read the server's `/metrics` (when asked), send the workload on a fresh clock, writing
   each record to the JSONL file as it completes, read `/metrics` again;
4. summarize with `llmsizer.metrics.summarize`, note failures and warnings, and rewrite the
   results file with every point so far.

Ctrl-C stops the sweep after marking the requests in flight as interrupted; the results so
far are returned and written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import nullcontext
from datetime import datetime
from importlib.metadata import version
from pathlib import Path
from typing import IO, Any

import httpx
import numpy as np
from rich.console import Console

from llmsizer.bench import server_metrics
from llmsizer.bench.client import ClientOptions, Endpoint, RequestPlan, send_request
from llmsizer.bench.clock import MonotonicClock
from llmsizer.bench.counters import choose_counter
from llmsizer.bench.errors import BenchError
from llmsizer.bench.load import LoadOutcome, run_workload
from llmsizer.bench.progress import SweepProgress
from llmsizer.bench.prompts import PromptMaker, PromptTokenSource, make_prompts, measure_word_costs
from llmsizer.bench.results import BenchResult, format_result, send_lag, write_results
from llmsizer.bench.spec import BenchSpec, LoadPoint
from llmsizer.metrics import summarize
from llmsizer.records import JsonlWriter, RequestRecord
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
            run = _PointRun(http, spec, options, maker, SweepProgress(out, live_progress))
            result = await run.run(point, workload_for(point), params, records_path)
            results.append(result)
            if spec.result_path is not None:
                write_results(results, spec.result_path)
            out.print(format_result(result))
            if result.interrupted or result.aborted:
                break
    return results


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
        raise BenchError(f"could not read a model name from {http.base_url}v1/models: {e}") from e


def _records_path(path: Path | None, point: LoadPoint, num_points: int) -> Path | None:
    """The point's JSONL file: the given path, or in a sweep `<stem>-<label><suffix>`."""
    if path is None or num_points == 1:
        return path
    return path.with_name(f"{path.stem}-{point.label}{path.suffix}")


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
        "request_rate": "inf" if closed else point.value,
        "burstiness": spec.burstiness if point.kind == "rate" else None,
        "trace": str(spec.trace) if spec.trace is not None else None,
        "time_scale": spec.time_scale if point.kind == "trace" else None,
        "isl": spec.isl,
        "osl": spec.osl,
        "num_prompts": spec.num_prompts,
        "num_warmups": spec.num_warmups,
        "seed": spec.seed,
        "ignore_eos": spec.ignore_eos,
        "prompt_token_source": source.value,
        "records_path": str(records_path) if records_path is not None else None,
    }


class _PointRun:
    """Runs one sweep point (steps 1-4 of the module notes)."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        spec: BenchSpec,
        options: ClientOptions,
        maker: PromptMaker,
        progress: SweepProgress,
    ) -> None:
        self.http, self.spec, self.options = http, spec, options
        self.maker, self.progress = maker, progress

    async def run(
        self,
        point: LoadPoint,
        workload: Workload,
        params: dict[str, Any],
        records_path: Path | None,
    ) -> BenchResult:
        _check_workload(point, workload)
        warmup, plans = await self._plans(workload)
        warm = await self._warm_up(warmup, point)
        aborted = _warm_up_verdict(warm)
        if aborted is not None:
            return BenchResult(
                point,
                params,
                (),
                {},
                workload.num_requests,
                interrupted=warm.interrupted,
                aborted=aborted,
            )
        warnings: list[str] = []
        before = await self._scrape(warnings)
        self.progress.start(point.label, workload.num_requests)
        with _open(records_path) as stream:
            writer = JsonlWriter(stream) if stream is not None else None

            def sink(record: RequestRecord) -> None:
                if writer is not None:
                    writer.write(record)
                self.progress.advance(record)

            clock = MonotonicClock()

            async def send(i: int) -> RequestRecord:
                return await send_request(self.http, plans[i], self.options, clock.now)

            outcome = await run_workload(workload, send, clock, sink)
        self.progress.stop(point.label, len(outcome.records))
        after = await self._scrape(warnings) if before is not None else None
        records = tuple(sorted(outcome.records, key=lambda r: r.request_id))
        lag = None
        if workload.arrival_s is not None:
            lag = send_lag(records, workload.arrival_s)
        warnings += _warnings(records, workload, lag)
        return BenchResult(
            point=point,
            params=params,
            records=records,
            summary=summarize(records),
            num_requests=workload.num_requests,
            send_lag=lag,
            server=server_metrics.histogram_means(before, after) if before and after else None,
            interrupted=outcome.interrupted,
            warnings=tuple(warnings),
        )

    async def _plans(self, workload: Workload) -> tuple[list[RequestPlan], list[RequestPlan]]:
        """Warm-up plans (the first requests' lengths) and the measured ones; distinct prompts."""
        k = self.spec.num_warmups
        reps = np.arange(k) % max(workload.num_requests, 1)
        warm_in, warm_out = workload.num_prompt_tokens[reps], workload.num_output_tokens[reps]
        warm = Workload(warm_in, warm_out, concurrency=max(k, 1))
        warm_prompts = await make_prompts(self.maker, warm) if k else []
        prompts = await make_prompts(self.maker, workload)
        return _to_plans(warm_prompts, warm_in, warm_out), _to_plans(
            prompts, workload.num_prompt_tokens, workload.num_output_tokens
        )

    async def _warm_up(self, plans: list[RequestPlan], point: LoadPoint) -> LoadOutcome:
        """Send the warm-up requests; their records are not kept."""
        if not plans:
            return LoadOutcome((), interrupted=False)
        width = int(point.value) if point.kind == "concurrency" and point.value else len(plans)
        lengths = np.array([p.num_prompt_tokens for p in plans])
        warm = Workload(lengths, np.array([p.max_tokens for p in plans]), concurrency=width)
        clock = MonotonicClock()

        async def send(i: int) -> RequestRecord:
            return await send_request(self.http, plans[i], self.options, clock.now)

        return await run_workload(warm, send, clock, lambda _record: None)

    async def _scrape(self, warnings: list[str]) -> dict[str, float] | None:
        if not self.spec.server_metrics:
            return None
        try:
            return await server_metrics.scrape(self.http)
        except httpx.HTTPError as e:
            warnings.append(f"could not read the server's /metrics: {e}")
            return None


def _warm_up_verdict(warm: LoadOutcome) -> str | None:
    """Why the point must stop after its warm-up: interrupted, or every request failed."""
    if warm.interrupted:
        return "interrupted during warm-up"
    errors = [r.error for r in warm.records if r.error is not None]
    if warm.records and len(errors) == len(warm.records):
        return f"all {len(errors)} warm-up requests failed; first: {errors[0]}"
    return None


def _to_plans(
    prompts: list[str], num_prompt_tokens: np.ndarray, num_output_tokens: np.ndarray
) -> list[RequestPlan]:
    return [
        RequestPlan(i, text, int(n_in), int(n_out))
        for i, (text, n_in, n_out) in enumerate(
            zip(prompts, num_prompt_tokens.tolist(), num_output_tokens.tolist(), strict=True)
        )
    ]


def _check_workload(point: LoadPoint, workload: Workload) -> None:
    closed = workload.arrival_s is None
    if closed != (point.kind == "concurrency"):
        kind = "closed-loop" if closed else "open-loop"
        raise BenchError(f"point {point.label} got a {kind} workload")


def _open(path: Path | None) -> Any:
    if path is None:
        return nullcontext(None)
    path.parent.mkdir(parents=True, exist_ok=True)
    stream: IO[str] = path.open("w")
    return stream


def _warnings(records: tuple[RequestRecord, ...], workload: Workload, lag: Any) -> list[str]:
    out: list[str] = []
    if lag is not None and lag.lagging:
        cause = (
            "max_concurrency held requests back"
            if workload.concurrency
            else ("the client could not keep up (overloaded?)")
        )
        out.append(
            f"achieved send rate {lag.achieved_rate:.2f} req/s is below the requested "
            f"{lag.requested_rate:.2f} req/s (mean lag {lag.mean_lag_s * 1e3:.1f} ms, "
            f"max {lag.max_lag_s * 1e3:.1f} ms): {cause}"
        )
    ok = [r for r in records if r.ok]
    n_prompt = sum(r.num_prompt_tokens != workload.num_prompt_tokens[r.request_id] for r in ok)
    if n_prompt:
        out.append(f"{n_prompt} requests had a prompt length other than asked (server count)")
    n_out = sum(r.num_output_tokens != r.num_output_tokens_requested for r in ok)
    if n_out:
        out.append(f"{n_out} requests produced another number of tokens than asked (ignore_eos?)")
    return out
