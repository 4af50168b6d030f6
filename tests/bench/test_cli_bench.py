"""`llmsizer bench` flags: errors name the flag as typed and what it allows; exit status 2."""

from __future__ import annotations

import pytest

from llmsizer.cli import main


def run_cli(monkeypatch: pytest.MonkeyPatch, args: list[str]) -> int:
    monkeypatch.setattr("sys.argv", ["llmsizer", "bench", *args])
    with pytest.raises(SystemExit) as e:
        main()
    return int(e.value.code or 0)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--concurrency", "0,4"], "--concurrency 0,4: each concurrency must be a whole number"),
        (["--concurrency", "2,x"], "--concurrency 2,x: item 2 ('x'): Input should be a valid"),
        (["--request-rate", "-1"], "--request-rate -1: each rate must be a number > 0 in req/s"),
        (
            ["--concurrency", "2", "--request-rate", "3"],
            "give only one of --concurrency, --request-rate and --trace",
        ),
        (["--base-url", "localhost:8000"], "--base-url localhost:8000: give the server as http"),
        (["--base-url", "http://h:1/v1"], "--base-url http://h:1/v1: give the server address"),
        (["--isl", "0"], "--isl 0: Input should be greater than or equal to 1"),
        (["--timeout-s", "inf"], "--timeout-s inf: Input should be a finite number"),
        (["--endpoint", "chatty"], "--endpoint chatty: Input should be 'completions' or 'chat'"),
        (["--prompt-tokens-from", "x"], "--prompt-tokens-from x: Input should be 'auto'"),
    ],
)
def test_bad_flags_are_named_as_typed(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    assert run_cli(monkeypatch, args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: invalid bench flags:\n") and f"\n  {message}" in err
    assert "Traceback" not in err and "_" not in err.split("\n", 1)[1].split(":")[0]


def test_renamed_fields_are_named_by_their_flags() -> None:
    from llmsizer.cli import bench

    assert bench._flag("result_path") == "--json" and bench._flag("records_path") == "--records"
    assert bench._flag("request_timeout_s") == "--request-timeout-s"
