"""The result of one sweep point, its JSON form (vLLM `--save-result` style) and its table.

The JSON object of a point holds the run's parameters (`model_id`, `base_url`, `endpoint`,
`isl`, `osl`, `num_prompts`, `max_concurrency`, `request_rate`, `burstiness`, `date`,
`tool_version`, ...), every key of `llmsizer.metrics.summarize` (`completed`, `failed`,
`request_throughput`, `mean_ttft_ms`, `p99_tpot_ms`, ...), the failures by kind, and for
open-loop runs how far sends lagged their schedule. A results file is a JSON list of such
objects, one per sweep point.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from llmsizer.bench.loop_lag import LoopLag
from llmsizer.bench.spec import LoadPoint
from llmsizer.errors import read_json_values
from llmsizer.output import write_atomic
from llmsizer.records import RequestRecord

LAG_WARN_FRACTION = 0.95  # warn when the achieved send rate is below this share of the asked


@dataclass(frozen=True, slots=True)
class SendLag:
    """How an open-loop run kept to its schedule; rates in req/s, times in seconds."""

    requested_rate: float
    achieved_rate: float
    mean_lag_s: float
    max_lag_s: float

    @property
    def lagging(self) -> bool:
        return self.achieved_rate < LAG_WARN_FRACTION * self.requested_rate


@dataclass(frozen=True, slots=True)
class BenchResult:
    """One sweep point: its records (by request id), their summary and the run's parameters.

    `summary` is `llmsizer.metrics.summarize(records)`; `send_lag` how an open-loop run kept
    its schedule; `loop_lag` how late the client's own event loop ran; `server` the
    server-side means from `/metrics` when asked for; `aborted` says why a point stopped
    before sending (e.g. every warm-up request failed); `interrupted` that the run was
    stopped part way.
    """

    point: LoadPoint
    params: Mapping[str, Any]
    records: tuple[RequestRecord, ...]
    summary: Mapping[str, float]
    num_requests: int  # requests the workload asked for
    send_lag: SendLag | None = None
    loop_lag: LoopLag | None = None
    server: Mapping[str, float] | None = None
    interrupted: bool = False
    aborted: str | None = None
    warnings: tuple[str, ...] = field(default=())

    @property
    def failures(self) -> dict[str, int]:
        return failure_kinds(self.records)

    @property
    def num_not_sent(self) -> int:
        return self.num_requests - len(self.records)


def failure_kinds(records: Iterable[RequestRecord]) -> dict[str, int]:
    """Failed requests counted by kind: the part of `error` before the first colon."""
    kinds = Counter(r.error.split(":", 1)[0] for r in records if r.error is not None)
    return dict(kinds.most_common())


def send_lag(records: Sequence[RequestRecord], scheduled_s: np.ndarray) -> SendLag | None:
    """Compare actual send times with the schedule (both on the run's clock, from 0)."""
    if len(records) < 2:
        return None
    by_id = sorted(records, key=lambda r: r.request_id)
    sent = np.array([r.arrival_s for r in by_id])
    planned = scheduled_s[[r.request_id for r in by_id]] - scheduled_s[0]
    lag = sent - planned
    span_planned = planned[-1] - planned[0]
    span_sent = sent.max() - sent.min()
    n = len(by_id) - 1
    return SendLag(
        requested_rate=n / span_planned if span_planned > 0 else float("inf"),
        achieved_rate=n / span_sent if span_sent > 0 else float("inf"),
        mean_lag_s=float(lag.mean()),
        max_lag_s=float(lag.max()),
    )


def result_to_json(result: BenchResult) -> dict[str, Any]:
    """The flat JSON object of one point (see the module notes)."""
    out: dict[str, Any] = dict(result.params)
    out.update(result.summary)
    out["num_requests"] = result.num_requests
    out["num_records"] = len(result.records)
    out["num_not_sent"] = result.num_not_sent
    out["failures"] = result.failures
    out["interrupted"] = result.interrupted
    out["aborted"] = result.aborted
    out["warnings"] = list(result.warnings)
    if result.send_lag is not None:
        lag = result.send_lag
        out["requested_send_rate"] = lag.requested_rate
        out["achieved_send_rate"] = lag.achieved_rate
        out["mean_send_lag_ms"] = lag.mean_lag_s * 1e3
        out["max_send_lag_ms"] = lag.max_lag_s * 1e3
    if result.loop_lag is not None:
        out["client_loop_lag_p99_ms"] = result.loop_lag.p99_s * 1e3
        out["client_loop_lag_max_ms"] = result.loop_lag.max_s * 1e3
    if result.server is not None:
        out.update(result.server)
    return out


def write_results(results: Iterable[BenchResult], path: Path) -> None:
    """Write the points' JSON objects as one JSON list, atomically: into a temporary file in
    the same folder, then renamed over `path`, so a kill mid-write leaves the last whole file
    (or none), never half of one."""
    write_atomic(path, json.dumps([result_to_json(r) for r in results], indent=2) + "\n")


def read_results(path: Path) -> list[dict[str, Any]]:
    """Read a results file: a JSON list, a single object, or one object per line."""
    values = read_json_values(path, "results file")
    if len(values) == 1 and isinstance(values[0], list):
        return values[0]
    return values


_TABLE_ROWS: tuple[tuple[str, str, str], ...] = (
    ("Successful requests:", "completed", "{:.0f}"),
    ("Failed requests:", "failed", "{:.0f}"),
    ("Benchmark duration (s):", "duration_s", "{:.2f}"),
    ("Total input tokens:", "total_input_tokens", "{:.0f}"),
    ("Total generated tokens:", "total_output_tokens", "{:.0f}"),
    ("Request throughput (req/s):", "request_throughput", "{:.2f}"),
    ("Output token throughput (tok/s):", "output_throughput", "{:.2f}"),
    ("Total token throughput (tok/s):", "total_token_throughput", "{:.2f}"),
)
_SECTIONS = (
    ("Time to First Token", "ttft", "TTFT"),
    ("Time per Output Token (excl. 1st token)", "tpot", "TPOT"),
    ("Inter-token Latency", "itl", "ITL"),
    ("End-to-end Latency", "e2el", "E2EL"),
)


def format_result(result: BenchResult) -> str:
    """A plain-text block in the layout of `vllm bench serve`, plus failures and warnings."""
    s = result.summary
    lines = [f"{' Serving Benchmark Result (' + result.point.label + ') ':=^50}"]
    lines += [f"{label:<40} {fmt.format(s[key])}" for label, key, fmt in _TABLE_ROWS if key in s]
    for title, key, short in _SECTIONS:
        if f"mean_{key}_ms" not in s:
            continue
        lines.append(f"{title:-^50}")
        for stat in ("mean", "median", "p99"):
            name = "P99" if stat == "p99" else stat.capitalize()
            lines.append(f"{f'{name} {short} (ms):':<40} {s[f'{stat}_{key}_ms']:.2f}")
    lines.append("=" * 50)
    lines += _problems(result)
    return "\n".join(lines)


def _problems(result: BenchResult) -> list[str]:
    out: list[str] = []
    if result.aborted:
        out.append(f"aborted: {result.aborted}")
    if result.interrupted:
        out.append(f"interrupted: {result.num_not_sent} of {result.num_requests} never sent")
    failures = result.failures
    if failures:
        out.append("failures: " + ", ".join(f"{k} x{n}" for k, n in failures.items()))
        first = next(r.error for r in result.records if r.error is not None)
        out.append(f"  first: {first}")
    out += [f"warning: {w}" for w in result.warnings]
    return out


def outcome_line(result: BenchResult) -> str:
    """One line on how a point ended: its records by error kind, or why it stopped."""
    label = result.point.label
    if result.aborted:
        return f"{label}: aborted: {result.aborted}"
    failures = result.failures
    ok = len(result.records) - sum(failures.values())
    line = f"{label}: {len(result.records)} of {result.num_requests} requests recorded, {ok} ok"
    if failures:
        line += ", failed: " + ", ".join(f"{k} {n}" for k, n in failures.items())
    if result.interrupted:
        line += f"; interrupted, {result.num_not_sent} never sent"
    return line
