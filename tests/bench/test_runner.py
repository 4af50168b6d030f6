"""A whole sweep against the fake vLLM: results, files, failures, aborts and interrupts."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import numpy as np
import pytest

from llmsizer.bench.errors import BenchError
from llmsizer.bench.load import INTERRUPTED
from llmsizer.bench.results import format_result, read_results
from llmsizer.bench.runner import run_benchmark, run_benchmark_async
from llmsizer.bench.spec import BenchSpec
from llmsizer.metrics import summarize
from llmsizer.records import read_jsonl, record_to_json
from tests.bench.fakes import FakeVllm, sse


def spec(tmp_path: Path, **kw: object) -> BenchSpec:
    settings = {
        "base_url": "http://fake",
        "isl": 20,
        "osl": 6,
        "num_prompts": 12,
        "result_path": tmp_path / "results.json",
        "records_path": tmp_path / "requests.jsonl",
    } | kw
    return BenchSpec(**settings)


def test_concurrency_sweep(tmp_path: Path) -> None:
    fake = FakeVllm()
    results = run_benchmark(spec(tmp_path, concurrency=(1, 3)), transport=fake.transport())
    assert [r.point.label for r in results] == ["concurrency1", "concurrency3"]
    assert fake.max_in_flight == 3
    assert len(fake.requests) == 2 * (2 + 12)  # warm-ups are sent but not recorded
    saved = read_results(tmp_path / "results.json")
    for result, row in zip(results, saved, strict=True):
        assert len(result.records) == 12 and result.failures == {}
        assert all(r.num_prompt_tokens == 20 and r.num_output_tokens == 6 for r in result.records)
        assert dict(result.summary) == summarize(result.records)
        path = Path(row["records_path"])
        assert path.name == f"requests-{result.point.label}.jsonl"
        saved_records = sorted(read_jsonl(path), key=lambda r: r.request_id)
        assert [record_to_json(r) for r in saved_records] == [
            record_to_json(r) for r in result.records
        ]
        assert row["completed"] == 12 and row["model_id"] == "tiny"
        assert row["prompt_token_source"] == "tokenize-endpoint"
        assert row["max_concurrency"] == result.point.value and row["request_rate"] == "inf"
        for key in ("date", "tool_version", "base_url", "isl", "osl", "mean_ttft_ms"):
            assert key in row
    prompts = [r.get("prompt") for r in fake.requests]
    assert len(set(prompts)) == len(prompts)  # no prompt reused: no accidental cache hits


def test_rate_point_reports_send_lag(tmp_path: Path) -> None:
    fake = FakeVllm()
    (result,) = run_benchmark(
        spec(tmp_path, request_rate=(200.0,), num_warmups=0), transport=fake.transport()
    )
    lag = result.send_lag
    assert lag is not None
    # 12 Poisson arrivals at 200/s (seeded): the planned span gives a rate near 200 ...
    assert 100 < lag.requested_rate < 400
    # ... and the achieved rate is the records' own: 11 gaps over the span of send times
    sent = sorted(r.arrival_s for r in result.records)
    assert lag.achieved_rate == pytest.approx(11 / (sent[-1] - sent[0]))
    row = read_results(tmp_path / "results.json")[0]
    assert row["request_rate"] == 200.0 and row["max_concurrency"] is None
    assert "mean_send_lag_ms" in row


def test_server_crash_keeps_records_and_summarizes_failures(tmp_path: Path) -> None:
    fake = FakeVllm(fail_from_request=2 + 5)  # warm-ups and five measured requests succeed
    (result,) = run_benchmark(spec(tmp_path, concurrency=(2,)), transport=fake.transport())
    assert result.failures == {"connection failed": 7}
    assert result.summary["completed"] == 5 and result.summary["failed"] == 7
    assert len(list(read_jsonl(tmp_path / "requests.jsonl"))) == 12
    text = format_result(result)
    assert "failures: connection failed x7" in text and "Mean TTFT (ms):" in text


def test_failed_warm_up_aborts_the_sweep(tmp_path: Path) -> None:
    fake = FakeVllm(status=404)
    results = run_benchmark(spec(tmp_path, concurrency=(1, 2)), transport=fake.transport())
    (result,) = results
    assert result.aborted is not None and result.aborted.startswith("all 2 warm-up requests")
    assert result.records == () and "HTTP 404" in result.aborted
    assert read_results(tmp_path / "results.json")[0]["aborted"] == result.aborted


async def test_interrupt_keeps_what_was_measured(tmp_path: Path) -> None:
    fake = FakeVllm(stall_s=3600.0)
    run = asyncio.create_task(
        run_benchmark_async(
            spec(tmp_path, concurrency=(3, 5), num_warmups=0), transport=fake.transport()
        )
    )
    while fake.in_flight < 3:
        await asyncio.sleep(0.001)
    run.cancel()
    (result,) = await run
    assert result.interrupted and result.num_not_sent == 12 - 3
    assert [r.error for r in result.records] == [INTERRUPTED] * 3
    assert json.loads((tmp_path / "results.json").read_text())[0]["interrupted"] is True
    assert len(list(read_jsonl(tmp_path / "requests-concurrency3.jsonl"))) == 3


def test_chat_endpoint_and_usage_counter(tmp_path: Path) -> None:
    fake = FakeVllm(chat=True)
    (result,) = run_benchmark(
        spec(tmp_path, endpoint="chat", prompt_tokens_from="usage", num_prompts=3),
        transport=fake.transport(),
    )
    assert result.params["prompt_token_source"] == "usage"
    assert result.summary["completed"] == 3
    assert np.all([r.num_output_tokens == 6 for r in result.records])


@pytest.mark.parametrize("live", [False, True])
def test_progress_output(tmp_path: Path, live: bool) -> None:
    from rich.console import Console

    console = Console(record=True, width=80, force_terminal=live)
    run_benchmark(
        spec(tmp_path, num_prompts=2, num_warmups=0),
        transport=FakeVllm().transport(),
        console=console,
        live_progress=live,
    )
    text = console.export_text()
    assert "Serving Benchmark Result (concurrency1)" in text
    assert ("concurrency1: sending 2 requests" in text) is not live


def test_server_metrics_are_read_around_each_point(tmp_path: Path) -> None:
    (result,) = run_benchmark(
        spec(tmp_path, server_metrics=True, num_prompts=4), transport=FakeVllm().transport()
    )
    assert result.server == {"server_mean_e2el_ms": 500.0, "server_num_e2el": 4.0}
    assert not [w for w in result.warnings if "server" in w]
    row = read_results(tmp_path / "results.json")[0]
    assert row["server_mean_e2el_ms"] == 500.0


def test_trace_replay_shares_prefix_blocks(tmp_path: Path) -> None:
    rows = [
        {"timestamp": 0, "input_length": 1100, "output_length": 3, "hash_ids": [1, 2, 3]},
        {"timestamp": 5, "input_length": 1100, "output_length": 3, "hash_ids": [1, 2, 4]},
        {"timestamp": 9, "input_length": 600, "output_length": 3, "hash_ids": [7, 8]},
    ]
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows))
    fake = FakeVllm()
    (result,) = run_benchmark(
        spec(tmp_path, trace=trace, num_prompts=3, num_warmups=0), transport=fake.transport()
    )
    assert result.point.label == "trace" and result.summary["completed"] == 3
    assert [r.num_prompt_tokens for r in result.records] == [1100, 1100, 600]
    first, second, third = (body["prompt"].split() for body in fake.requests)
    assert first[:1024] == second[:1024] and first[1024:] != second[1024:]
    assert first[:512] != third[:512]
    assert result.send_lag is not None and result.params["trace"] == str(trace)


def test_auto_counts_with_usage_without_tokenize(tmp_path: Path) -> None:
    fake = FakeVllm(tokenize=False)
    (result,) = run_benchmark(spec(tmp_path, num_prompts=2), transport=fake.transport())
    assert result.params["prompt_token_source"] == "usage"
    assert all(r.num_prompt_tokens == 20 for r in result.records)
    assert any(not body.get("stream") for body in fake.requests)  # the one-token requests


@pytest.mark.parametrize(
    ("chunk", "kind"),
    [
        (b"data: [1, 2, 3]\n\n", "bad chunk in stream"),
        (sse({"choices": [], "usage": {"completion_tokens": "many"}}), "bad usage in stream"),
    ],
)
def test_one_bad_chunk_in_ten_requests_loses_nothing(
    tmp_path: Path, chunk: bytes, kind: str
) -> None:
    """Regression: such a chunk crashed the run (8 of 50 records written, no results file)."""
    fake, sent = FakeVllm(), [0]

    async def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/completions" and json.loads(request.content).get("stream"):
            sent[0] += 1
            if sent[0] % 10 == 5:
                return httpx.Response(200, content=chunk)
        return await fake.handle(request)

    (result,) = run_benchmark(
        spec(tmp_path, num_prompts=50, num_warmups=0, concurrency=(4,)),
        transport=httpx.MockTransport(handler),
    )
    assert result.failures == {kind: 5} and result.summary["completed"] == 45
    assert len(list(read_jsonl(tmp_path / "requests.jsonl"))) == 50
    assert read_results(tmp_path / "results.json")[0]["failures"] == {kind: 5}


def test_a_server_dead_between_points_aborts_the_next(tmp_path: Path) -> None:
    fake, dead = FakeVllm(), [False]

    async def handler(request: httpx.Request) -> httpx.Response:
        if dead[0]:
            raise httpx.ConnectError("All connection attempts failed")
        response = await fake.handle(request)
        dead[0] = len(fake.requests) >= 2 + 12  # dies after the first point
        return response

    results = run_benchmark(
        spec(tmp_path, concurrency=(1, 2)), transport=httpx.MockTransport(handler)
    )
    first, second = results
    assert first.failures == {} and len(first.records) == 12
    assert second.aborted is not None and "cannot connect to http://fake" in second.aborted
    rows = read_results(tmp_path / "results.json")
    assert [row["aborted"] for row in rows] == [None, second.aborted]


def test_an_unreachable_server_stops_the_run_in_one_line(tmp_path: Path) -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("All connection attempts failed")

    with pytest.raises(BenchError, match=r"^cannot connect to http://fake: All connection"):
        run_benchmark(spec(tmp_path, model="m"), transport=httpx.MockTransport(handler))
    assert not (tmp_path / "results.json").exists()


def test_server_text_is_never_rich_markup(tmp_path: Path) -> None:
    """An error body with "[/]" made rich raise after the point was measured."""
    from rich.console import Console

    fake = FakeVllm()

    async def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/completions" and json.loads(request.content).get("stream"):
            return httpx.Response(500, text="[/] [bold]oops")
        return await fake.handle(request)

    console = Console(record=True, width=200)
    (result,) = run_benchmark(
        spec(tmp_path, num_prompts=2, num_warmups=0),
        transport=httpx.MockTransport(handler),
        console=console,
    )
    assert result.failures == {"HTTP 500": 2}
    assert "first: HTTP 500: [/] [bold]oops" in console.export_text()


async def test_stopped_while_preparing_nothing_is_measured(tmp_path: Path) -> None:
    fake = FakeVllm()
    run = asyncio.create_task(run_benchmark_async(spec(tmp_path), transport=fake.transport()))
    await asyncio.sleep(0)
    run.cancel()
    assert await run == []
