"""Import guidellm `benchmarks.json` reports: one run per benchmark (load point) inside.

Schema (guidellm `src/guidellm/benchmark/benchmark.py` up to v0.3, and
`src/guidellm/schemas/request_stats.py` + `schemas/info.py` from v0.4): `{"benchmarks": [...]}`,
each with its strategy (`args.strategy` up to v0.3, `config.strategy` later:
`{"type_": "concurrent", "streams": 4}`, `{"type_": "poisson" | "constant", "rate": 2.0}`,
`{"type_": "synchronous"}`, `{"type_": "throughput"}`) and
`requests: {"successful": [...], "incomplete": [...], "errored": [...]}`. A request is

- v0.3: `start_time`, `first_token_time`, `last_token_time`, `end_time` (epoch seconds),
  `prompt_tokens`, `output_tokens`, `error` (errored ones);
- v0.4+: `info.timings.{request_start, first_token_iteration, last_token_iteration,
  request_end}`, `prompt_tokens` / `output_tokens` (serialized computed fields; else
  `input_metrics` / `output_metrics` `text_tokens`), `info.error`.

Reconstruction: guidellm keeps only the first and the last token time of a request, so its
N output tokens are spread evenly between them. TTFT, TPOT and E2E latency are exact; ITL
percentiles are not (every gap of a request is its mean). Send times are shifted so the first
request of each benchmark is sent at 0. guidellm samples requests when asked
(`--output-sampling`); the records are then a sample, while `duration_s` is the full run's.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from llmsizer.calibrate.readers.run import (
    ImportedRun,
    float_or_none,
    int_or_none,
    token_count,
)
from llmsizer.errors import parse_json, read_text
from llmsizer.records import RequestRecord

SPREAD = "token times spread evenly between guidellm's first and last token times"


def read_guidellm(path: Path) -> list[ImportedRun]:
    """Every benchmark (load point) of a guidellm report."""
    report = parse_json(read_text(path, "guidellm report"), path, "guidellm report")
    if not isinstance(report, dict) or "benchmarks" not in report:
        raise ValueError(f"{path}: not a guidellm report (no 'benchmarks' list)")
    return [_run(b, path) for b in report["benchmarks"]]


def _run(bench: Mapping[str, Any], path: Path) -> ImportedRun:
    groups = bench["requests"]
    raw = [
        _flatten(r, status)
        for status in ("successful", "incomplete", "errored")
        for r in groups.get(status) or []
    ]
    if not raw:
        raise ValueError(f"{path}: a benchmark has no requests")
    t0 = min(r["start"] for r in raw)
    records = tuple(_record(r, i, t0) for i, r in enumerate(sorted(raw, key=lambda r: r["start"])))
    strategy = (bench.get("config") or bench.get("args") or {}).get("strategy") or {}
    kind = str(strategy.get("type_", ""))
    concurrency = {"concurrent": strategy.get("streams"), "synchronous": 1}.get(kind)
    return ImportedRun(
        source="guidellm",
        path=path,
        records=records,
        model_id=_model(bench),
        max_concurrency=int_or_none(concurrency or strategy.get("max_concurrency")),
        request_rate=float_or_none(strategy.get("rate")),
        burstiness=1.0 if kind == "poisson" else None,
        duration_s=float_or_none(bench.get("duration")),
        raw_params={"strategy": strategy},
        approximations=(SPREAD,),
    )


def _model(bench: Mapping[str, Any]) -> str | None:
    """v0.4+: `config.backend.model`; up to v0.3: `worker.backend_model`."""
    backend = (bench.get("config") or {}).get("backend") or {}
    return backend.get("model") or (bench.get("worker") or {}).get("backend_model")


def _flatten(r: Mapping[str, Any], status: str) -> dict[str, Any]:
    """One request in either schema as start/first/last/end times, token counts and error."""
    if "info" in r:  # v0.4+
        info = r["info"]
        timings = info.get("timings") or {}
        start = timings.get("request_start") or timings.get("resolve_start")
        first, last = timings.get("first_token_iteration"), timings.get("last_token_iteration")
        end = timings.get("request_end") or timings.get("resolve_end")
        prompt = r.get("prompt_tokens", (r.get("input_metrics") or {}).get("text_tokens"))
        output = r.get("output_tokens", (r.get("output_metrics") or {}).get("text_tokens"))
        error = info.get("error")
    else:  # up to v0.3
        start, first, last, end = (
            r.get(k) for k in ("start_time", "first_token_time", "last_token_time", "end_time")
        )
        prompt, output, error = r.get("prompt_tokens"), r.get("output_tokens"), r.get("error")
    if start is None:
        raise ValueError(f"a guidellm request ({status}) has no start time")
    if status != "successful" and not error:
        error = "no error text"
    return {
        "start": float(start),
        "first": first,
        "last": last,
        "end": end,
        "prompt": token_count(prompt or 0),
        "output": token_count(output or 0),
        "error": f"guidellm {status}: {error}" if error else None,
    }


def _record(r: Mapping[str, Any], i: int, t0: float) -> RequestRecord:
    arrival = r["start"] - t0
    n_out = r["output"]
    times = np.zeros(0)
    if r["first"] is not None and r["last"] is not None and n_out > 0:
        times = np.linspace(r["first"] - t0, r["last"] - t0, n_out)
    end = r["end"] if r["end"] is not None else r["last"]
    finish = float(r["last"]) - t0 if r["error"] is None and r["last"] is not None else None
    if finish is None and end is not None:
        finish = float(end) - t0
    return RequestRecord(
        request_id=i,
        arrival_s=arrival,
        num_prompt_tokens=r["prompt"],
        num_output_tokens_requested=n_out,
        token_times_s=times,
        finish_s=finish,
        error=r["error"],
    )
