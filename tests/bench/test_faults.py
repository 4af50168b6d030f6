"""The bench client against a server that misbehaves in every way the fault server knows.

For every fault: one record per request sent, the right error kind with a readable detail,
and a results file that parses. Then the command line: one line for a closed port, warm-up
failures said as such, no overwritten files, and (a sample of the fault campaign, as its own
process) SIGTERM and a bad server through the real `llmsizer bench`.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from llmsizer.bench import BenchSpec, run_benchmark
from llmsizer.bench.results import read_results
from llmsizer.cli import main
from llmsizer.records import read_jsonl
from tests.bench.fault_server import EXPECTED_KIND, Fault, FaultServer

FAULTS = list(Fault)
DETAILS = {  # what a person reads in the record, beyond the kind
    Fault.RESET: "ConnectionResetError: connection reset by peer",
    Fault.DROP: "incomplete chunked read",
    Fault.HTTP_429: "retry after 1 s",
    Fault.REDIRECT: "redirect to /elsewhere, not followed",
    Fault.HTML: "200 with text/html, body starts '<!DOCTYPE html>",
    Fault.STALL: "no byte from the server for 1 s",
    Fault.SILENT: "no byte from the server for 1 s",
    Fault.NOT_OBJECT: "the chunk is an array, not a JSON object: [1, 2, 3]",
    Fault.BAD_USAGE: "usage.completion_tokens is 'many'",
    Fault.ERROR_EVENT: "out of memory",
}


def bench_spec(url: str, tmp_path: Path, n: int, concurrency: int) -> BenchSpec:
    return BenchSpec(
        base_url=url,
        isl=8,
        osl=4,
        num_prompts=n,
        num_warmups=0,
        concurrency=(concurrency,),
        timeout_s=1.0,  # 0.3 s timed out /tokenize on a loaded 2-core machine
        result_path=tmp_path / "results.json",
        records_path=tmp_path / "records.jsonl",
    )


def test_every_fault_gives_its_kind(tmp_path: Path) -> None:
    """One at a time, so request i meets fault i (mod the number of faults)."""
    with FaultServer(FAULTS, stall_s=3.0, huge_bytes=2**20) as server:
        (result,) = run_benchmark(bench_spec(server.url, tmp_path, 2 * len(FAULTS), 1))
        assert server.num_streamed == 2 * len(FAULTS)
    records = sorted(read_jsonl(tmp_path / "records.jsonl"), key=lambda r: r.request_id)
    assert len(records) == len(result.records) == 2 * len(FAULTS)
    for record in records:
        fault = FAULTS[record.request_id % len(FAULTS)]
        kind = None if record.error is None else record.error.split(":", 1)[0]
        assert kind == EXPECTED_KIND[fault], (fault, record.error)
        assert record.error is None or len(record.error) > len(kind or "") + 2  # a detail
        assert DETAILS.get(fault, "") in (record.error or ""), (fault, record.error)
        if EXPECTED_KIND[fault] is None:
            assert record.num_output_tokens == 4
    (row,) = read_results(tmp_path / "results.json")
    expected = Counter(EXPECTED_KIND[f] for f in FAULTS for _ in range(2))
    del expected[None]
    assert row["failures"] == dict(expected) and row["num_records"] == 2 * len(FAULTS)


def test_faults_in_flight_together(tmp_path: Path) -> None:
    with FaultServer(FAULTS, stall_s=3.0, huge_bytes=2**20) as server:
        (result,) = run_benchmark(bench_spec(server.url, tmp_path, 3 * len(FAULTS), 8))
        sent = server.num_streamed
    expected = Counter(EXPECTED_KIND[f] for f in FAULTS for _ in range(3))
    assert sent == len(result.records) == len(list(read_jsonl(tmp_path / "records.jsonl")))
    assert result.failures == {k: n for k, n in expected.items() if k is not None}
    assert result.summary["completed"] == expected[None]


def run_cli(monkeypatch: pytest.MonkeyPatch, args: list[str]) -> int:
    monkeypatch.setattr("sys.argv", ["llmsizer", "bench", *args])
    with pytest.raises(SystemExit) as e:
        main()
    return int(e.value.code or 0)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_closed_port_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression: this printed a 116-line httpx traceback."""
    url = f"http://127.0.0.1:{closed_port()}"
    assert run_cli(monkeypatch, ["--base-url", url, "--model", "m"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: cannot connect to {url}: connection refused, is the server running?\n"


def test_warm_up_failures_are_said_as_such(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression: an aborted point was reported as "0 requests failed"."""
    with FaultServer([Fault.HTTP_500]) as server:
        args = ["--base-url", server.url, "--isl", "8", "--osl", "4", "--json"]
        code = run_cli(monkeypatch, [*args, str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert code == 1 and "0 requests failed" not in err
    assert err.startswith("concurrency1: aborted: all 2 warm-up requests failed; first: HTTP 500")
    assert read_results(tmp_path / "r.json")[0]["aborted"].startswith("all 2 warm-up")


def test_outputs_are_never_replaced_unasked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    results, records = tmp_path / "r.json", tmp_path / "r.jsonl"
    with FaultServer([Fault.OK]) as server:
        args = ["--base-url", server.url, "--isl", "8", "--osl", "4", "--num-prompts", "2"]
        args += ["--json", str(results), "--records", str(records)]
        assert run_cli(monkeypatch, args) == 0
        records.write_text("precious\n")
        results.unlink()
        assert run_cli(monkeypatch, args) == 2
        err = capsys.readouterr().err
        refusal = f"error: '{records}' exists: pass --overwrite to replace it, or choose "
        assert err.endswith(refusal + "another file\n")
        assert records.read_text() == "precious\n" and not results.exists()
        assert run_cli(monkeypatch, [*args, "--overwrite"]) == 0
    assert (
        len(list(read_jsonl(records))) == 2 and json.loads(results.read_text())[0]["completed"] == 2
    )
    assert not list(tmp_path.glob(".*.tmp"))  # the atomic write left no temporary file


def load_campaign() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "bench" / "fault_campaign.py"
    spec = importlib.util.spec_from_file_location("fault_campaign", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("mode", ["sigterm", "not-object"])
def test_campaign_sample(tmp_path: Path, mode: str) -> None:
    """The real command in its own process: nothing lost, even when killed mid-run."""
    campaign = load_campaign()
    row = campaign.run_mode(mode, 8, 4, tmp_path)
    assert row.num_sent >= 4 and row.num_lost == 0 and row.results_ok, row
    assert row.as_expected, row
    if mode == "sigterm":
        assert row.kinds.get("interrupted", 0) >= 1 and row.exit_code == 1
    assert "0 records lost" in campaign.format_table([row])
