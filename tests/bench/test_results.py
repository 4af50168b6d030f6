"""Result files, failure summaries, send lag, server metrics and llmsizer's own importer."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from llmsizer.bench.results import (
    BenchResult,
    failure_kinds,
    read_results,
    result_to_json,
    send_lag,
    write_results,
)
from llmsizer.bench.server_metrics import histogram_means, parse_prometheus
from llmsizer.bench.spec import LoadPoint
from llmsizer.calibrate.readers import import_results
from llmsizer.metrics import summarize
from llmsizer.records import RequestRecord, write_jsonl


def ok(i: int, arrival: float) -> RequestRecord:
    times = arrival + 0.1 + 0.01 * np.arange(4)
    return RequestRecord(i, arrival, 16, 4, token_times_s=times, finish_s=float(times[-1]))


def failed(i: int, error: str) -> RequestRecord:
    return RequestRecord(i, 0.0, 16, 4, finish_s=0.5, error=error)


def test_failure_kinds() -> None:
    records = [
        ok(0, 0.0),
        failed(1, "HTTP 500: x"),
        failed(2, "HTTP 500: y"),
        failed(3, "timeout: z"),
    ]
    assert failure_kinds(records) == {"HTTP 500": 2, "timeout": 1}


def test_send_lag() -> None:
    records = [ok(i, t) for i, t in enumerate([0.0, 0.52, 1.0, 1.9])]
    lag = send_lag(records, np.array([10.0, 10.5, 11.0, 11.5]))
    assert lag is not None
    assert lag.requested_rate == pytest.approx(2.0)
    assert lag.achieved_rate == pytest.approx(3 / 1.9)
    assert lag.max_lag_s == pytest.approx(0.4) and lag.lagging


def test_json_round_trip_and_llmsizer_import(tmp_path: Path) -> None:
    records = (ok(0, 0.0), ok(1, 0.2), failed(2, "HTTP 500: boom"))
    write_jsonl(records, tmp_path / "req.jsonl")
    params = {
        "tool": "llmsizer",
        "model_id": "tiny",
        "max_concurrency": 2,
        "request_rate": "inf",
        "records_path": "req.jsonl",
    }
    result = BenchResult(LoadPoint("concurrency", 2), params, records, summarize(records), 3)
    write_results([result], tmp_path / "results.json")
    (row,) = read_results(tmp_path / "results.json")
    assert row == json.loads(json.dumps(result_to_json(result)))
    assert row["failures"] == {"HTTP 500": 1} and row["completed"] == 2
    (run,) = import_results(tmp_path / "results.json")
    assert (run.source, run.model_id, run.max_concurrency, run.request_rate) == (
        "llmsizer",
        "tiny",
        2,
        None,
    )
    assert summarize(run.records) == summarize(records)


PROMETHEUS = """\
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.001",model_name="tiny"} 0.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="tiny"} 1.5
vllm:time_to_first_token_seconds_count{engine="0",model_name="tiny"} 10.0
vllm:inter_token_latency_seconds_sum{engine="0",model_name="tiny"} 6.0
vllm:inter_token_latency_seconds_count{engine="0",model_name="tiny"} 600.0
vllm:e2e_request_latency_seconds_sum{engine="0",model_name="tiny"} 8.0
vllm:e2e_request_latency_seconds_count{engine="0",model_name="tiny"} 10.0
vllm:num_requests_running{engine="0",model_name="tiny"} 0.0
process_cpu_seconds_total 12.5
"""


def test_prometheus_histogram_means() -> None:
    before = parse_prometheus(PROMETHEUS)
    assert before["vllm:time_to_first_token_seconds_count"] == 10.0
    after = dict(before)
    after["vllm:time_to_first_token_seconds_sum"] += 0.9
    after["vllm:time_to_first_token_seconds_count"] += 3
    after["vllm:inter_token_latency_seconds_sum"] += 1.2
    after["vllm:inter_token_latency_seconds_count"] += 120
    means = histogram_means(before, after)
    assert means == {
        "server_mean_ttft_ms": pytest.approx(300.0),
        "server_num_ttft": 3.0,
        "server_mean_itl_ms": pytest.approx(10.0),
        "server_num_itl": 120.0,
    }
