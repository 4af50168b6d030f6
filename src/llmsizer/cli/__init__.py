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
    app = globals().get("app") or command_app(_invoked(sys.argv[1:]))
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


__all__ = ["COMMANDS", "app", "command_app", "main"]
