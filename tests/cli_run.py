"""Running the command line in a test: `main()` as the `llmsizer` script runs it, and the one
clear error a refused command line must end with."""

from __future__ import annotations

import pytest

from llmsizer.cli import main


def run_main(monkeypatch: pytest.MonkeyPatch, args: list[str]) -> int:
    """`llmsizer ARGS`: its exit status."""
    monkeypatch.setattr("sys.argv", ["llmsizer", *args])
    with pytest.raises(SystemExit) as e:
        main()
    return int(e.value.code or 0)


def refusal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str]
) -> str:
    """`llmsizer ARGS` must exit with status 2 and no traceback: its stderr, on one line."""
    assert run_main(monkeypatch, args) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "Traceback" not in err
    return err
