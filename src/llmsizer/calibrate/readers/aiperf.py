"""Import AIPerf's per-request `profile_export.jsonl` (and the settings beside it).

Schema (AIPerf docs, `docs/tutorials/working-with-profile-exports.md` and
`docs/metrics_reference.md`): one JSON object per request,

    {"metadata": {"session_num", "request_start_ns", "request_end_ns", "benchmark_phase",
                  "was_cancelled", ...},          epoch nanoseconds
     "metrics": {"time_to_first_token": {"value": 255.9, "unit": "ms"},
                 "inter_chunk_latency": {"value": [4.9, 5.3, ...], "unit": "ms"},
                 "request_latency", "input_sequence_length", "output_sequence_length",
                 ...},                             null for a failed request but "error_isl"
     "error": null | {"code": 500, "type": "...", "message": "..."}}

Records whose `benchmark_phase` is not "profiling" (warm-up) are skipped. The sibling
`profile_export_aiperf.json`, when present, gives the model, concurrency, request rate and
`benchmark_duration`.

Reconstruction: send times are `request_start_ns` shifted so the first is 0 (exact); chunk
times are send + TTFT + the running sum of `inter_chunk_latency`; per-token times follow
`assign_token_times` with `output_sequence_length` tokens; the finish is send +
`request_latency`. AIPerf counts output tokens with a client-side tokenizer, not the
server's usage, which can differ by a token or so.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from llmsizer.bench.stream import assign_token_times
from llmsizer.calibrate.readers.run import (
    ImportedRun,
    float_or_none,
    in_unit_s,
    int_or_none,
    token_count,
)
from llmsizer.errors import parse_json, parse_json_lines, read_text
from llmsizer.records import RequestRecord

AGGREGATE_FILE = "profile_export_aiperf.json"


def read_aiperf(path: Path) -> list[ImportedRun]:
    """The run in an AIPerf `profile_export.jsonl` (one run per file)."""
    what = "AIPerf records file"
    lines = parse_json_lines(read_text(path, what), path, what)
    measured = [
        d for d in lines if d["metadata"].get("benchmark_phase", "profiling") == "profiling"
    ]
    if not measured:
        raise ValueError(f"{path}: no profiling-phase records")
    t0_ns = min(int(d["metadata"]["request_start_ns"]) for d in measured)
    records = tuple(_record(d, i, t0_ns) for i, d in enumerate(measured))
    return [_with_settings(records, path)]


def _metric(metrics: Mapping[str, Any], name: str) -> Any:
    entry = metrics.get(name)
    return None if entry is None else entry["value"]


def _seconds(metrics: Mapping[str, Any], name: str) -> float | None:
    entry = metrics.get(name)
    return None if entry is None else in_unit_s(float(entry["value"]), entry["unit"])


def _record(d: Mapping[str, Any], i: int, t0_ns: int) -> RequestRecord:
    meta, metrics, error = d["metadata"], d.get("metrics") or {}, d.get("error")
    arrival_s = (int(meta["request_start_ns"]) - t0_ns) * 1e-9
    end_s = (int(meta["request_end_ns"]) - t0_ns) * 1e-9
    n_in = _metric(metrics, "input_sequence_length") or _metric(metrics, "error_isl") or 0
    n_out = token_count(_metric(metrics, "output_sequence_length") or 0)
    request_id = int(meta.get("session_num", i))
    if error is not None:
        message = f"{error.get('type', 'error')}: {error.get('message', '')} ({error.get('code')})"
        return RequestRecord(request_id, arrival_s, int(n_in), n_out, finish_s=end_s, error=message)
    ttft = _seconds(metrics, "time_to_first_token")
    latency = _seconds(metrics, "request_latency")
    if ttft is None or n_out == 0:
        return RequestRecord(
            request_id, arrival_s, int(n_in), n_out, finish_s=end_s, error="aiperf: no tokens"
        )
    icl = metrics.get("inter_chunk_latency")
    gaps = [0.0] if icl is None else [0.0, *(in_unit_s(v, icl["unit"]) for v in icl["value"])]
    chunk_times = arrival_s + ttft + np.cumsum(gaps)
    return RequestRecord(
        request_id=request_id,
        arrival_s=arrival_s,
        num_prompt_tokens=int(n_in),
        num_output_tokens_requested=n_out,
        token_times_s=assign_token_times(chunk_times, n_out),
        finish_s=arrival_s + latency if latency is not None else end_s,
    )


def _with_settings(records: tuple[RequestRecord, ...], path: Path) -> ImportedRun:
    aggregate_path = path.with_name(AGGREGATE_FILE)
    approximations = ["output token counts from AIPerf's client-side tokenizer"]
    if not aggregate_path.exists():
        approximations.append(f"no {AGGREGATE_FILE} beside the records: settings unknown")
        return ImportedRun("aiperf", path, records, approximations=tuple(approximations))
    aggregate = parse_json(
        read_text(aggregate_path, "AIPerf summary"), aggregate_path, "AIPerf summary"
    )
    config = aggregate.get("input_config", {})
    loadgen, endpoint = config.get("loadgen", {}), config.get("endpoint", {})
    models = endpoint.get("model_names") or [None]
    duration = aggregate.get("benchmark_duration") or {}
    return ImportedRun(
        source="aiperf",
        path=path,
        records=records,
        model_id=models[0],
        max_concurrency=int_or_none(loadgen.get("concurrency")),
        request_rate=float_or_none(loadgen.get("request_rate")),
        duration_s=float_or_none(duration.get("avg")),
        raw_params=config,
        approximations=tuple(approximations),
    )
