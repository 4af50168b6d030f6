"""The client against a fake vLLM: exact records when all is well, error records otherwise."""

from __future__ import annotations

import errno
import gzip
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import numpy as np
import pytest

from llmsizer.bench.client import ClientOptions, Endpoint, RequestPlan, build_payload, send_request
from llmsizer.metrics import summarize
from llmsizer.records import RequestRecord
from tests.bench.fakes import FakeVllm, PieceStream, sse

PLAN = RequestPlan(request_id=7, prompt="a b c d", num_prompt_tokens=4, max_tokens=5)


async def send(fake: FakeVllm, plan: RequestPlan = PLAN, **options: object) -> RequestRecord:
    opts = ClientOptions(model="tiny", **options)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=fake.transport(), base_url="http://fake") as http:
        return await send_request(http, plan, opts, fake.clock.now)


def test_payload_asks_for_exact_lengths_and_usage() -> None:
    body = build_payload(PLAN, ClientOptions(model="tiny"))
    assert body["max_tokens"] == 5 and body["ignore_eos"] is True and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    chat = build_payload(PLAN, ClientOptions(model="tiny", endpoint=Endpoint.CHAT))
    assert chat["messages"] == [{"role": "user", "content": "a b c d"}]
    assert chat["max_completion_tokens"] == 5


async def test_ok_record_has_exact_token_times() -> None:
    fake = FakeVllm(ttft_s=0.1, itl_s=0.01)
    fake.clock.t = 2.0
    record = await send(fake)
    assert record.error is None and record.ok
    assert (record.request_id, record.arrival_s, record.num_prompt_tokens) == (7, 2.0, 4)
    assert record.num_output_tokens == 5 == record.num_output_tokens_requested
    np.testing.assert_allclose(record.token_times_s, 2.1 + 0.01 * np.arange(5))
    assert record.finish_s == pytest.approx(2.14)
    assert record.ttft_s == pytest.approx(0.1)
    assert record.tpot_s == pytest.approx(0.01)


async def test_chat_skips_the_role_chunk() -> None:
    record = await send(FakeVllm(chat=True), endpoint=Endpoint.CHAT)
    assert record.ok and record.num_output_tokens == 5
    assert record.ttft_s == pytest.approx(0.1)


async def test_bundled_tokens_sit_with_the_last_chunk() -> None:
    """5 tokens in chunks of 2, 2, 1: usage says 5, three chunks were timed."""
    record = await send(FakeVllm(bundle=2))
    assert record.num_output_tokens == 5
    np.testing.assert_allclose(record.token_times_s, [0.11, 0.13, 0.14, 0.14, 0.14])
    assert record.tpot_s == pytest.approx(0.03 / 4)  # first and last times are exact


async def test_http_error_is_a_record() -> None:
    record = await send(FakeVllm(status=500))
    assert record.error == "HTTP 500: internal error"
    assert not record.ok and record.num_output_tokens == 0


async def test_dropped_stream_keeps_the_tokens_before_the_drop() -> None:
    record = await send(FakeVllm(cut_after=3))
    assert record.error is not None and record.error.startswith("stream dropped: ")
    np.testing.assert_allclose(record.token_times_s, [0.1, 0.11, 0.12])


async def test_stream_without_done_is_dropped() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b'data: {"choices": [{"text": "a"}]}\n\n')

    opts = ClientOptions(model="tiny")
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url="http://f") as h:
        record = await send_request(h, PLAN, opts, lambda: 0.0)
    assert record.error == "stream dropped: ended before [DONE]"
    assert record.num_output_tokens == 1


async def test_total_timeout_is_a_record() -> None:
    record = await send(FakeVllm(stall_s=5.0), request_timeout_s=0.05)
    assert record.error == "timeout: request exceeded 0.05 s"
    assert record.num_output_tokens == 1


async def test_read_timeout_is_a_record() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("no data", request=request)

    transport = httpx.MockTransport(handler)
    async with httpx.AsyncClient(transport=transport, base_url="http://f", timeout=7.5) as h:
        record = await send_request(h, PLAN, ClientOptions(model="tiny"), lambda: 0.0)
    assert record.error == "timeout: ReadTimeout: no byte from the server for 7.5 s"


async def test_refused_connection_is_a_record() -> None:
    record = await send(FakeVllm(fail_from_request=0))
    assert record.error == (
        "connection failed: cannot connect to http://fake: connection refused, "
        "is the server running?"
    )


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"data: {not json\n\n", "bad JSON in stream: "),
        (b'data: {"error": {"message": "boom"}}\n\n', "server error in stream: boom"),
        (b'data: {"choices": [{"text": "a"}]}\n\ndata: [DONE]\n\n', "no usage in stream: "),
        (
            b'data: {"choices": [], "usage": {"completion_tokens": 0}}\n\ndata: [DONE]\n\n',
            "no tokens: ",
        ),
    ],
)
async def test_bad_streams_are_records(body: bytes, error: str) -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url="http://f") as h:
        record = await send_request(h, PLAN, ClientOptions(model="tiny"), lambda: 0.0)
    assert record.error is not None and record.error.startswith(error)


async def test_continuous_usage_gives_exact_counts() -> None:
    chunks: list[dict[str, Any]] = [
        {"choices": [{"text": "a"}], "usage": {"prompt_tokens": 4, "completion_tokens": 1}},
        {"choices": [{"text": "bc"}], "usage": {"prompt_tokens": 4, "completion_tokens": 3}},
        {"choices": [{"text": "d"}], "usage": {"prompt_tokens": 4, "completion_tokens": 4}},
        {"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 4}},
    ]
    times = iter([1.0, 2.0, 3.0, 3.5, 4.0, 4.5, 5.0])

    async def handler(request: httpx.Request) -> httpx.Response:
        assert json.loads(request.content)["stream_options"]["continuous_usage_stats"] is True
        pieces = [sse(c) for c in chunks] + [sse("[DONE]")]
        return httpx.Response(200, stream=PieceStream(pieces))

    opts = ClientOptions(model="tiny", continuous_usage_stats=True)
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url="http://f") as h:
        record = await send_request(h, PLAN, opts, lambda: next(times))
    np.testing.assert_allclose(record.token_times_s, [2.0, 3.0, 3.0, 3.5])


async def test_summary_of_client_records_matches_the_server_schedule() -> None:
    """Known server timing in, vLLM's metric definitions out (through `summarize`)."""
    fake = FakeVllm(ttft_s=0.2, itl_s=0.025, bundle=1)
    plans = [RequestPlan(i, "a b", 2, n) for i, n in enumerate((4, 9, 17))]
    opts = ClientOptions(model="tiny")
    records = []
    async with httpx.AsyncClient(transport=fake.transport(), base_url="http://fake") as http:
        for plan in plans:
            records.append(await send_request(http, plan, opts, fake.clock.now))
            fake.clock.t += 1.0  # think time between requests
    s = summarize(records)
    assert s["completed"] == 3 and s["total_output_tokens"] == 4 + 9 + 17
    assert s["mean_ttft_ms"] == pytest.approx(200.0)
    assert s["mean_tpot_ms"] == pytest.approx(25.0)
    assert s["mean_itl_ms"] == pytest.approx(25.0)  # every gap is one ITL
    e2e = [200.0 + 25.0 * (n - 1) for n in (4, 9, 17)]
    assert s["mean_e2el_ms"] == pytest.approx(np.mean(e2e))
    assert s["mean_ntpot_ms"] == pytest.approx(
        np.mean([e / n for e, n in zip(e2e, (4, 9, 17), strict=True)])
    )


async def record_for(stream: httpx.AsyncByteStream | bytes, **headers: str) -> RequestRecord:
    async def handler(request: httpx.Request) -> httpx.Response:
        if isinstance(stream, bytes):
            return httpx.Response(200, content=stream, headers=headers)
        return httpx.Response(200, stream=stream, headers=headers)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url="http://f") as h:
        return await send_request(h, PLAN, ClientOptions(model="tiny"), lambda: 0.0)


class ResetStream(httpx.AsyncByteStream):
    """Two chunks, then the connection is reset as httpx reports it (an empty message)."""

    def __init__(self, tail: list[bytes]) -> None:
        self._tail = tail

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield sse({"choices": [{"text": "a"}]})
        for piece in self._tail:
            yield piece
        reset = ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")
        raise httpx.ReadError("") from reset


async def test_a_reset_says_so() -> None:
    """Regression: this read `stream dropped: ` with nothing after it."""
    record = await record_for(ResetStream([]))
    assert record.error == "stream dropped: ConnectionResetError: connection reset by peer"
    assert record.num_output_tokens == 1


async def test_a_drop_after_done_loses_nothing() -> None:
    usage = sse({"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 1}})
    record = await record_for(ResetStream([usage, sse("[DONE]")]))
    assert record.ok and record.num_output_tokens == 1


async def test_a_compressed_stream_is_not_unpacked() -> None:
    record = await record_for(gzip.compress(b"data: [DONE]\n\n"), **{"content-encoding": "gzip"})
    assert record.error == (
        "not an event stream: compressed (gzip) although the client asked for no compression"
    )


async def test_an_endless_error_body_is_quoted_not_read() -> None:
    class Endless(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            while True:
                yield b"x" * 1000

    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, stream=Endless())

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url="http://f") as h:
        record = await send_request(h, PLAN, ClientOptions(model="tiny"), lambda: 0.0)
    assert record.error == "HTTP 503: " + "x" * 300


async def test_a_client_bug_is_an_internal_record(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr("llmsizer.bench.client.build_payload", broken)
    record = await send(FakeVllm())
    assert record.error == "internal: ZeroDivisionError: division by zero"
