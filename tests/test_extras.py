"""A runtime install without extras (issue 13): pictures need `llmsizer[plots]`, fits
`llmsizer[fit]`, Ray `llmsizer[ray]`. Asking for one that is missing is one line naming the
extra and exit status 2, never a traceback; everything else works without them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from llmsizer.cli import main
from llmsizer.errors import MissingExtraError, import_extra
from tests.test_cli_calibrate import write_sweep


def _run_without(modules: tuple[str, ...], code: str) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter where importing any of `modules` fails, as when the
    package is not installed."""
    block = "".join(f"sys.modules[{m!r}] = None\n" for m in modules)
    return subprocess.run(
        [sys.executable, "-c", f"import sys\n{block}{code}"], capture_output=True, text=True
    )


def test_a_picture_without_the_plots_extra_names_it(tmp_path: Path) -> None:
    png = tmp_path / "timeline.png"
    argv = ["llmsizer", "simulate", "--num-requests", "20", "--plot", str(png)]
    r = _run_without(
        ("matplotlib", "plotly"),
        f"sys.argv = {argv!r}\nfrom llmsizer.cli import main\nmain()",
    )
    assert r.returncode == 2, r.stderr
    said = " ".join(r.stderr.split())  # the console wraps long lines
    assert f"a PNG ({png}) needs matplotlib, which is not installed" in said
    assert "pip install 'llmsizer[plots]'" in said
    assert "Traceback" not in r.stderr
    assert r.stdout == ""  # refused before simulating
    assert not png.exists()


def test_plan_html_without_plotly_is_refused_before_planning(tmp_path: Path) -> None:
    html = tmp_path / "plan.html"
    argv = ["llmsizer", "plan", "--model", "llama-3.1-8b", "--isl", "2000", "--osl", "200"]
    argv += ["--peak-rps", "70", "--ttft-ms", "500", "--html", str(html)]
    r = _run_without(("plotly",), f"sys.argv = {argv!r}\nfrom llmsizer.cli import main\nmain()")
    assert r.returncode == 2, r.stderr
    said = " ".join(r.stderr.split())
    assert "needs plotly, which is not installed: pip install 'llmsizer[plots]'" in said
    assert r.stdout == "" and not html.exists()


def test_a_drawing_asked_of_the_report_names_the_extra() -> None:
    r = _run_without(("matplotlib",), "from llmsizer import report\nreport.timeline_png")
    assert r.returncode == 1
    said = " ".join(r.stderr.split())
    assert "drawing (timeline_png) needs matplotlib" in said and "llmsizer[plots]" in said


def test_plan_html_without_plotly_names_the_extra() -> None:
    r = _run_without(
        ("plotly",),
        "from llmsizer.errors import import_extra\n"
        "import_extra('llmsizer.report.plan_html', 'plots', 'plan --html')",
    )
    assert r.returncode == 1
    assert "MissingExtraError: plan --html needs plotly" in r.stderr
    assert "pip install 'llmsizer[plots]'" in r.stderr


def test_calibrate_without_scipy_names_the_fit_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep = write_sweep(tmp_path)
    monkeypatch.setitem(sys.modules, "scipy.optimize", None)
    out = tmp_path / "cal.yaml"
    monkeypatch.setattr("sys.argv", ["llmsizer", "calibrate", str(sweep), "--out", str(out)])
    with pytest.raises(SystemExit) as e:
        main()
    assert e.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "fitting a step cost needs scipy" in err
    assert "pip install 'llmsizer[fit]'" in err
    assert not out.exists()


def test_a_missing_module_of_llmsizer_itself_is_not_an_extra() -> None:
    with pytest.raises(ModuleNotFoundError):
        import_extra("llmsizer.no_such_module", "plots", "a test")
    assert issubclass(MissingExtraError, ValueError)  # the CLI's one-line error, exit 2
