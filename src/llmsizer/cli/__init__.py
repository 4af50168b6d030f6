"""The command line: parse, validate, call the library, render. The only place that reads
files, the environment and the clock, and the only place that prints.

Startup: each command lives in its own module, imported (and its options built by typer)
only when that command runs, so `llmsizer predict` never loads the benchmark client, the
plan pipeline or the fits (`tests/test_startup.py`). `app` (every command) is built on
first use: `from llmsizer.cli import app`.
"""

from __future__ import annotations

import sys
from functools import cache
from importlib import import_module
from typing import Any

import typer
from rich.markup import escape

from llmsizer.cli.common import err

# command -> its module in llmsizer.cli, in the order `--help` lists them
COMMANDS = {
    "simulate": "simulate",
    "predict": "predict",
    "plan": "plan",
    "bench": "bench",
    "calibrate": "calibrate",
    "compare": "calibrate",
    "collect": "collect",
    "models": "catalog",
    "gpus": "catalog",
    "systems": "catalog",
    "serve": "serve",  # the sizing studio (issue 15)
    "day": "day",  # a day on an autoscaled fleet (issue 12)
}
HELP = (
    "Size LLM inference: simulate a serving engine, predict GPU performance, plan "
    "deployments, and benchmark real OpenAI-compatible servers."
)
# each command's one-paragraph help, for `llmsizer --help` without importing the commands
# (`listing_app`; a test renders both listings and compares them)
SUMMARIES = {  # each docstring's first paragraph, its line breaks kept (rich keeps them)
    "simulate": "Simulate a serving engine on a workload and print vLLM-style metrics.",
    "predict": "Predict TTFT, TPOT, E2E latency, throughput, MBU and MFU for one configuration.",
    "plan": "Size a deployment: the best configuration per GPU, instances, GPUs, servers and cost.",
    "bench": "Benchmark an OpenAI-compatible endpoint (vLLM, SGLang, TensorRT-LLM, NIM, ...).",
    "calibrate": "Fit a step cost to measured runs of a server (a concurrency sweep at fixed "
    "lengths is\nthe recipe) by simulating each run with the server's batching settings, and "
    "write a\ncalibration file that `simulate` and `predict` accept. Prints the fit's residuals.",
    "compare": "Measured and predicted metrics side by side, per point, with the relative error.",
    "collect": "Time this device's kernels at a model's shapes (PyTorch, random weights) and "
    "write a\ncalibration file that predict, plan and simulate accept as --calibration.",
    "models": "The model catalog: parameters, KV bytes per token, context window (from "
    "config.json).",
    "gpus": "The GPU catalog: memory, bandwidth, dense tensor peaks, interconnect.",
    "systems": "Servers: GPUs per server and their NVLink domain.",
    "serve": "Start the sizing studio on http://127.0.0.1:PORT: the use case with its answer "
    "as you\ntype, one instance's timeline, plans compared, measured vs predicted. Works "
    "offline.",
    "day": "Replay a day (a trace's pattern or Poisson under a daily profile scaled to a peak) "
    "on\nan autoscaled fleet and on one fixed at the peak: GPU-hours, cost, SLO attainment.",
}


@cache
def command_app(names: tuple[str, ...] = tuple(COMMANDS)) -> typer.Typer:
    """The command line with the commands `names` (all by default)."""
    app = typer.Typer(
        add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, help=HELP
    )
    app.callback()(_group)  # a group even with one command: `llmsizer predict ...`
    for name in names:
        app.command()(getattr(import_module(f"llmsizer.cli.{COMMANDS[name]}"), name))
    return app


@cache
def listing_app() -> typer.Typer:
    """The command line as `--help`, no command or an unknown one sees it: every command
    listed with its summary, none imported (a command named runs `command_app`)."""
    app = typer.Typer(
        add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, help=HELP
    )
    app.callback()(_group)
    for name in COMMANDS:
        app.command(name=name, help=SUMMARIES[name])(_group)
    return app


def _group() -> None:
    """The commands' group (typer makes a lone command the program itself without it)."""


def _invoked(args: list[str]) -> tuple[str, ...]:
    """The command the arguments name, or all (for `--help`, no command, a typo)."""
    return (args[0],) if args and args[0] in COMMANDS else tuple(COMMANDS)


def __getattr__(name: str) -> Any:
    if name == "app":  # every command (tests, `typer.testing.CliRunner`)
        return command_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _is_bench_error(e: BaseException) -> bool:
    # the benchmark client is imported only by the commands that use it: if it never was,
    # no BenchError can have been raised
    errors = sys.modules.get("llmsizer.bench.errors")
    return errors is not None and isinstance(e, errors.BenchError)


def main() -> None:
    """Entry point: bad input becomes one clear message and exit status 2, never a traceback."""
    # `app` set on the module (a test's stand-in, or built by an earlier `cli.app`) wins
    named = _invoked(sys.argv[1:])
    app = globals().get("app") or (command_app(named) if len(named) == 1 else listing_app())
    try:
        app()
    except KeyboardInterrupt:  # a second Ctrl-C while a command was already stopping
        err.print("interrupted", highlight=False)
        sys.exit(130)
    except Exception as e:  # ConfigError, TraceError, UnknownName, BenchError...
        if not isinstance(e, (ValueError, OSError)) and not _is_bench_error(e):
            raise
        # the message may quote a user's file or a server's reply: never read it as markup
        err.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False)
        sys.exit(2)


__all__ = ["COMMANDS", "SUMMARIES", "app", "command_app", "listing_app", "main"]
