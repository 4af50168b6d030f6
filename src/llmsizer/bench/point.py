"""One sweep point: prompts, warm-up, the measured run, and its `BenchResult`.

1. Make the prompts (warm-up ones and measured ones, all distinct), exact to the token.
2. Send the warm-up requests, unrecorded; if every one fails, the point is aborted.
3. Read the server's `/metrics` (when asked), send the workload on a fresh clock, writing
   each record to the JSONL file as it completes, and read `/metrics` again.
4. Summarize with `llmsizer.metrics.summarize` and note failures and warnings.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import IO, Any

import httpx
import numpy as np

from llmsizer.bench import server_metrics
from llmsizer.bench.client import ClientOptions, RequestPlan, send_request
from llmsizer.bench.clock import MonotonicClock
from llmsizer.bench.errors import BenchError
from llmsizer.bench.load import LoadOutcome, run_workload
from llmsizer.bench.loop_lag import LoopLag, watch_loop
from llmsizer.bench.progress import SweepProgress
from llmsizer.bench.prompts import PromptMaker, make_prompts
from llmsizer.bench.results import BenchResult, SendLag, send_lag
from llmsizer.bench.spec import BenchSpec, LoadPoint
from llmsizer.metrics import summarize
from llmsizer.records import JsonlWriter, RequestRecord, open_jsonl
from llmsizer.workload import Workload


class PointRun:
    """Runs sweep points against one server (see the module notes)."""

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
        params = {**params, "workload": workload.source}
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
        outcome, loop_lag = await self._measure(workload, plans, records_path)
        self.progress.stop(point.label, len(outcome.records))
        after = await self._scrape(warnings) if before is not None else None
        server = server_metrics.histogram_means(before, after) if before and after else None
        return _result(point, params, workload, outcome, loop_lag, server, warnings)

    async def _measure(
        self, workload: Workload, plans: list[RequestPlan], records_path: Path | None
    ) -> tuple[LoadOutcome, LoopLag | None]:
        """Send the workload on a fresh clock, each record to the JSONL file as it completes."""
        with _open(records_path) as stream:
            writer = JsonlWriter(stream) if stream is not None else None

            def sink(record: RequestRecord) -> None:
                if writer is not None:
                    writer.write(record)
                self.progress.advance(record)

            clock = MonotonicClock()
            overshoots: list[float] = []
            watcher = asyncio.create_task(watch_loop(clock, overshoots))
            try:
                outcome = await run_workload(workload, self._sender(plans, clock), clock, sink)
            finally:
                watcher.cancel()
        return outcome, LoopLag.of(overshoots)

    def _sender(
        self, plans: list[RequestPlan], clock: MonotonicClock
    ) -> Callable[[int], Awaitable[RequestRecord]]:
        async def send(i: int) -> RequestRecord:
            return await send_request(self.http, plans[i], self.options, clock.now)

        return send

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
        return await run_workload(warm, self._sender(plans, clock), clock, lambda _record: None)

    async def _scrape(self, warnings: list[str]) -> dict[str, float] | None:
        if not self.spec.server_metrics:
            return None
        try:
            return await server_metrics.scrape(self.http)
        except httpx.HTTPError as e:
            warnings.append(f"could not read the server's /metrics: {e}")
            return None


def _result(
    point: LoadPoint,
    params: dict[str, Any],
    workload: Workload,
    outcome: LoadOutcome,
    loop_lag: LoopLag | None,
    server: dict[str, float] | None,
    warnings: list[str],
) -> BenchResult:
    records = tuple(sorted(outcome.records, key=lambda r: r.request_id))
    lag = None if workload.arrival_s is None else send_lag(records, workload.arrival_s)
    realtime = bool(params.get("realtime"))
    warnings = warnings + _warnings(records, workload, lag, loop_lag, realtime)
    if server is not None:
        warnings += _server_warnings(server, records)
    return BenchResult(
        point=point,
        params=params,
        records=records,
        summary=summarize(records),
        num_requests=workload.num_requests,
        send_lag=lag,
        loop_lag=loop_lag,
        server=server,
        interrupted=outcome.interrupted,
        warnings=tuple(warnings),
    )


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


def _open(path: Path | None) -> AbstractContextManager[IO[str] | None]:
    if path is None:
        return nullcontext(None)
    path.parent.mkdir(parents=True, exist_ok=True)
    return open_jsonl(path, "w")


def _warnings(
    records: tuple[RequestRecord, ...],
    workload: Workload,
    lag: SendLag | None,
    loop_lag: LoopLag | None,
    realtime: bool,
) -> list[str]:
    out: list[str] = []
    if loop_lag is not None and loop_lag.stalled:
        out.append(
            f"the client's event loop stalled for up to {loop_lag.max_s * 1e3:.0f} ms "
            f"(p99 {loop_lag.p99_s * 1e3:.0f} ms): the machine is busy, and latencies may "
            "include that much client delay"
            + ("" if realtime else " (--realtime puts the client ahead of other processes)")
        )
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


def _server_warnings(server: dict[str, float], records: tuple[RequestRecord, ...]) -> list[str]:
    """The server's histograms cover every request it finished, from any client."""
    if "server_num_e2el" not in server:
        return ["the server's /metrics has no vLLM latency histograms that moved during the run"]
    counted = int(server["server_num_e2el"])
    done = sum(r.error is None for r in records)
    if counted == done:
        return []
    return [
        f"the server finished {counted} requests while this run completed {done}: "
        "its means include other clients' requests (or miss failed ones)"
    ]
