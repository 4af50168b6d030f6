"""Startup stays light: the CLI and a prediction load no plotting library and no scipy
(about 1.3 s of imports on the development machine); pictures and fits load them on use.

A one-case `llmsizer predict` (issue 13: <= 0.5 s wall) loads only what it uses: the
command's own module, not the plan pipeline, the fits, the benchmark client or the reports,
and stays within a budget of modules (`bench/startup_speed.py` times it)."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("matplotlib", "plotly", "scipy", "torch")  # torch: `collect` imports it on use
HEAVY += ("ray",)  # `--ray` imports it (`llmsizer.sweep`), and it is an extra (issue 13)

PREDICT = [
    *("predict", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"),
    *("--isl", "100", "--osl", "10", "--concurrency", "1", "--num-requests", "4"),
]
# parts of llmsizer and libraries a prediction does not use
NOT_FOR_PREDICT = (
    *("llmsizer.sizing", "llmsizer.calibrate", "llmsizer.bench", "llmsizer.report"),
    *("llmsizer.serve", "llmsizer.fleet", "llmsizer.config", "llmsizer.collect"),
    *("httpx", "asyncio", "starlette", "jinja2", *HEAVY),
    # numpy.ma: `np.median` / `np.percentile` load it (`metrics.median`, `percentiles_of`);
    # the sweep (process pools) and rich's progress bars: only for many cases (issue 13)
    *("numpy.ma.core", "llmsizer.sweep", "concurrent.futures.process", "rich.progress"),
)
# modules loaded by a one-case predict (interpreter, numpy, pydantic, typer, rich, yaml and
# llmsizer's own): 524 on 2026-11-23 (`import llmsizer.cli` loaded 679 before issue 13), 494
# once numpy.ma, the sweep and the progress bars were left out
PREDICT_MODULE_BUDGET = 520


def _modules_after(code: str) -> set[str]:
    probe = f"import sys\ntry:\n    {code}\nexcept SystemExit:\n    pass\n"
    probe += "print('\\nMODULES', ' '.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    ).stdout
    return set(out.rpartition("\nMODULES ")[2].split())


def _loaded_after(code: str) -> set[str]:
    return {name.split(".")[0] for name in _modules_after(code)}


@pytest.mark.parametrize(
    "code",
    [
        "import llmsizer.cli",
        "import llmsizer",
        "from llmsizer.sizing.peak import poisson_peak_rps; poisson_peak_rps(64)",
        "from llmsizer.report import print_summary",
    ],
)
def test_no_heavy_library_is_loaded(code: str) -> None:
    assert not _loaded_after(code) & set(HEAVY)


def test_a_picture_still_loads_its_library_on_demand() -> None:
    assert "matplotlib" in _loaded_after("from llmsizer.report import timeline_png")


def test_a_prediction_loads_only_what_it_uses() -> None:
    run = f"sys.argv = ['llmsizer', *{PREDICT!r}]; import llmsizer.cli; llmsizer.cli.main()"
    loaded = _modules_after(run)
    assert "llmsizer.instance.predict" in loaded  # it did predict
    unused = {m for m in loaded if m.startswith(NOT_FOR_PREDICT)}
    assert not unused, f"a one-case predict imported {sorted(unused)}"
    assert len(loaded) <= PREDICT_MODULE_BUDGET


def test_the_command_line_imports_no_command_before_it_runs() -> None:
    loaded = _modules_after("import llmsizer.cli")
    assert not {m for m in loaded if m.startswith(("llmsizer.cli.", "llmsizer.sizing"))} - {
        "llmsizer.cli.common"
    }


def test_help_lists_every_command_without_importing_one() -> None:
    """`llmsizer --help` (no command named) renders from `SUMMARIES`: no command module,
    plan pipeline or benchmark client is loaded (issue 13: 0.84 -> 0.45 s wall)."""
    run = "sys.argv = ['llmsizer', '--help']; import llmsizer.cli; llmsizer.cli.main()"
    loaded = _modules_after(run)
    commands = {m for m in loaded if m.startswith("llmsizer.cli.")} - {"llmsizer.cli.common"}
    assert not commands, f"--help imported {sorted(commands)}"
    assert not {m for m in loaded if m.startswith(("llmsizer.sizing", "llmsizer.bench"))}


def test_the_help_listing_is_the_commands_own() -> None:
    """The listing `--help` shows without importing the commands is what the commands'
    docstrings render: a summary edited in one place and not the other fails here."""
    import inspect
    from importlib import import_module

    from typer.testing import CliRunner

    from llmsizer.cli import COMMANDS, SUMMARIES, command_app, listing_app

    for name, module in COMMANDS.items():
        doc = inspect.getdoc(getattr(import_module(f"llmsizer.cli.{module}"), name)) or ""
        assert SUMMARIES[name] == doc.split("\n\n")[0], name

    def shown(app: object) -> str:
        return CliRunner().invoke(app, ["--help"], terminal_width=100).output  # type: ignore[arg-type]

    assert shown(listing_app()) == shown(command_app())
    assert "collect" in shown(listing_app())
