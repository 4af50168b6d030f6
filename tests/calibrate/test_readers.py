"""Importers turn vLLM, AIPerf and guidellm result files into records with the same metrics."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from llmsizer.calibrate.readers import detect_format, import_results
from llmsizer.calibrate.readers.vllm import replay_arrivals
from llmsizer.metrics import summarize

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("vllm_detailed.json", "vllm"),
        ("vllm_append.json", "vllm"),
        ("aiperf/profile_export.jsonl", "aiperf"),
        ("guidellm_v03_benchmarks.json", "guidellm"),
        ("guidellm_v04_benchmarks.json", "guidellm"),
    ],
)
def test_formats_are_detected(name: str, fmt: str) -> None:
    assert detect_format(DATA / name) == fmt


def test_unknown_format(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"hello": 1}')
    with pytest.raises(ValueError, match="not a known result format"):
        import_results(tmp_path / "x.json")


def test_vllm_detailed_reproduces_vllms_own_metrics() -> None:
    (run,) = import_results(DATA / "vllm_detailed.json")
    raw = json.loads((DATA / "vllm_detailed.json").read_text())
    assert (run.source, run.model_id, run.max_concurrency, run.request_rate) == (
        "vllm",
        "meta-llama/Llama-3.1-8B-Instruct",
        2,
        None,
    )
    s = summarize(run.records, duration_s=run.duration_s)
    assert (s["completed"], s["failed"]) == (4, 1)
    for key in ("mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms"):
        assert s[key] == pytest.approx(raw[key], rel=1e-9), key
    # vLLM pools gaps between chunks; records pool gaps between tokens (a chunk of 5 tokens
    # adds four zero gaps), so ITL agrees only when every chunk carries one token.
    decode_s = sum(sum(gaps) for gaps in raw["itls"])
    assert s["mean_itl_ms"] == pytest.approx(decode_s / (4 * 7) * 1e3)
    assert s["request_throughput"] == pytest.approx(raw["request_throughput"])
    failed = run.records[3]
    assert (
        failed.error
        == "vllm: aiohttp.client_exceptions.ServerDisconnectedError: Server disconnected"
    )


def test_vllm_bundled_chunks_follow_the_token_time_rule() -> None:
    (run,) = import_results(DATA / "vllm_detailed.json")
    r = run.records[2]  # 8 tokens, 4 chunks
    assert r.num_output_tokens == 8
    chunk_times = r.arrival_s + 0.40255 + np.cumsum([0.0, 0.0131, 0.0262, 0.0129])
    np.testing.assert_allclose(r.token_times_s, [*chunk_times[:3], *[chunk_times[3]] * 5])


def test_vllm_send_times_are_replayed_without_start_times() -> None:
    (run,) = import_results(DATA / "vllm_detailed.json")
    assert run.approximations  # says that it rebuilt them
    # two slots: requests 0 and 1 start at 0, request 2 when request 0 ends, and so on
    starts = [r.arrival_s for r in run.records]
    e2e0 = 0.21834 + sum([0.0102, 0.0098, 0.0111, 0.0095, 0.0101, 0.0099, 0.0104])
    assert starts[:3] == pytest.approx([0.0, 0.0, e2e0])
    in_flight = [
        sum(a.arrival_s <= b.arrival_s < (a.finish_s or a.arrival_s) for a in run.records)
        for b in run.records
    ]
    assert max(in_flight) <= 2


def test_replay_arrivals_with_a_rate() -> None:
    np.testing.assert_allclose(replay_arrivals([5.0, 5.0, 5.0], 2.0, None), [0.0, 0.5, 1.0])
    np.testing.assert_allclose(replay_arrivals([1.0, 1.0, 1.0], 10.0, 1), [0.0, 1.0, 2.0])


def test_vllm_appended_runs_with_start_times() -> None:
    runs = import_results(DATA / "vllm_append.json")
    assert [r.request_rate for r in runs] == [4.0, 8.0]
    assert [r.arrival_s for r in runs[0].records] == pytest.approx([0.0, 0.259, 0.522])
    assert not runs[0].approximations
    assert runs[0].records[0].ttft_s == pytest.approx(0.05)
    assert runs[0].records[0].e2el_s == pytest.approx(0.08)


def test_aiperf_records_and_settings() -> None:
    (run,) = import_results(DATA / "aiperf" / "profile_export.jsonl")
    assert (run.model_id, run.max_concurrency, run.duration_s) == ("openai/gpt-oss-20b", 2, 0.48)
    assert len(run.records) == 3  # the warm-up record is skipped
    first, second, failed = run.records
    assert first.arrival_s == 0.0 and first.ttft_s == pytest.approx(0.255886568)
    assert first.e2el_s == pytest.approx(0.297525228)
    assert first.num_output_tokens == 9 and first.num_prompt_tokens == 550
    assert second.arrival_s == pytest.approx(0.12)
    # 5 tokens in 3 chunks: the last chunk carries the surplus
    np.testing.assert_allclose(second.token_times_s, 0.12 + np.array([0.3, 0.31, 0.33, 0.33, 0.33]))
    assert failed.error == "InternalServerError: Server encountered an internal error (500)"
    assert failed.num_prompt_tokens == 550


def test_aiperf_without_its_aggregate_file(tmp_path: Path) -> None:
    (tmp_path / "profile_export.jsonl").write_text(
        (DATA / "aiperf" / "profile_export.jsonl").read_text()
    )
    (run,) = import_results(tmp_path / "profile_export.jsonl")
    assert run.model_id is None and any("settings unknown" in a for a in run.approximations)


def test_guidellm_v03() -> None:
    (run,) = import_results(DATA / "guidellm_v03_benchmarks.json")
    assert (run.max_concurrency, run.model_id, run.duration_s) == (
        2,
        "Qwen/Qwen2.5-0.5B-Instruct",
        0.55,
    )
    ok = [r for r in run.records if r.ok]
    assert [r.ttft_s for r in ok] == pytest.approx([0.120, 0.135, 0.118])
    assert [r.tpot_s for r in ok] == pytest.approx([0.010, 0.011, 0.010])
    assert run.records[0].arrival_s == 0.0
    (failed,) = [r for r in run.records if r.error is not None]
    assert failed.error is not None and failed.error.startswith("guidellm errored: Cannot connect")


def test_guidellm_v04() -> None:
    (run,) = import_results(DATA / "guidellm_v04_benchmarks.json")
    assert (run.request_rate, run.burstiness, run.model_id) == (2.0, 1.0, "tiny")
    s = summarize(run.records)
    assert (s["completed"], s["failed"]) == (3, 1)
    assert s["mean_ttft_ms"] == pytest.approx((200 + 250 + 190) / 3)
    assert s["mean_tpot_ms"] == pytest.approx((20 + 21 + 20) / 3)
    assert s["total_input_tokens"] == 3 * 128
    cancelled = run.records[-1]
    assert cancelled.error == "guidellm incomplete: no error text"
    assert cancelled.num_output_tokens == 10


def test_a_records_path_too_long_for_the_os_is_named_not_raised(tmp_path: Path) -> None:
    """A results point whose records_path is a name the OS refuses (over 255 bytes; Python
    3.11's `Path.exists` raises OSError on it) gets the reader's own message."""
    from llmsizer.calibrate.readers.llmsizer import read_llmsizer

    path = tmp_path / "results.json"
    path.write_text(json.dumps([{"records_path": "a" * 300}]))
    with pytest.raises(ValueError, match=r"records_path .* is no file"):
        read_llmsizer(path)
