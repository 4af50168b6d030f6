"""End to end against a real server (the reference vLLM): set LLMSIZER_SERVER_URL to run.

PID=$(../shared/reference-server/serve.sh | tail -1)
LLMSIZER_SERVER_URL=http://127.0.0.1:8011 pytest -m server tests/bench
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from llmsizer.bench import BenchSpec, run_benchmark
from llmsizer.bench.priority import realtime_allowed
from llmsizer.records import read_jsonl

URL = os.environ.get("LLMSIZER_SERVER_URL")

pytestmark = [
    pytest.mark.server,
    pytest.mark.skipif(URL is None, reason="set LLMSIZER_SERVER_URL to a running vLLM"),
]


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_sweep_against_the_server(tmp_path: Path, endpoint: str) -> None:
    spec = BenchSpec(
        base_url=URL or "",
        endpoint=endpoint,
        isl=64,
        osl=16,
        num_prompts=6,
        concurrency=(1, 2),
        server_metrics=True,
        realtime=realtime_allowed(),  # the server's busy-waiting processes starve the client
        result_path=tmp_path / "results.json",
        records_path=tmp_path / "requests.jsonl",
    )
    results = run_benchmark(spec)
    assert len(results) == 2
    for result in results:
        assert result.failures == {} and not result.aborted
        # a busy machine may stall the client's loop; every other warning is a failure
        assert not [w for w in result.warnings if "event loop" not in w]
        records = result.records
        assert all(r.num_output_tokens == 16 for r in records)
        if endpoint == "completions":  # chat adds the template's tokens to the prompt
            assert all(r.num_prompt_tokens == 64 for r in records)
        assert len(list(read_jsonl(Path(result.params["records_path"])))) == 6
        server, client = result.server, result.summary
        assert server is not None and server["server_num_e2el"] == 6
        # The client sees everything the server sees, plus HTTP and the API server's queues.
        for m in ("ttft", "e2el"):
            assert client[f"mean_{m}_ms"] >= server[f"server_mean_{m}_ms"] - 2.0, m
        assert client["mean_e2el_ms"] - server["server_mean_e2el_ms"] < 0.5 * client["mean_e2el_ms"]
