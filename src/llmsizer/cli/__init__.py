"""The command line: parse, validate, call the library, render. The only place that reads
files, the environment and the clock, and the only place that prints."""

from __future__ import annotations

import sys

import typer
from rich.markup import escape

from llmsizer.bench import BenchError
from llmsizer.cli import bench, calibrate, catalog, collect, day, plan, predict, serve, simulate
from llmsizer.cli.common import err

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Size LLM inference: simulate a serving engine, predict GPU performance, plan "
    "deployments, and benchmark real OpenAI-compatible servers.",
)
app.command()(simulate.simulate)
app.command()(predict.predict)
app.command()(plan.plan)
app.command()(bench.bench)
app.command()(calibrate.calibrate)
app.command()(calibrate.compare)
app.command()(collect.collect)
app.command()(catalog.models)
app.command()(catalog.gpus)
app.command()(catalog.systems)
app.command()(serve.serve)  # the sizing studio (issue 15)
app.command()(day.day)  # a day on an autoscaled fleet (issue 12)


def main() -> None:
    """Entry point: bad input becomes one clear message and exit status 2, never a traceback."""
    try:
        app()
    except (ValueError, OSError, BenchError) as e:  # ConfigError, TraceError, UnknownName...
        # the message may quote a user's file or a server's reply: never read it as markup
        err.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False)
        sys.exit(2)
    except KeyboardInterrupt:  # a second Ctrl-C while a command was already stopping
        err.print("interrupted", highlight=False)
        sys.exit(130)


__all__ = ["app", "main"]
