"""What every command shares: consoles, progress bars, error exits, JSON output."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from llmsizer.errors import import_extra
from llmsizer.output import write_atomic
from llmsizer.sweep import Sweep, open_sweep

out = Console()
err = Console(stderr=True)


def field_help(model: type[BaseModel], field: str) -> str:
    """A flag's help is the field's own description: documented once, where it is defined."""
    return model.model_fields[field].description or ""


def interactive() -> bool:
    return err.is_terminal and not os.environ.get("CI")


@contextmanager
def progress_bar(label: str) -> Iterator[Callable[[int, int], None] | None]:
    """A live bar on a terminal; nothing when output is piped or under CI."""
    if not interactive():
        yield None
        return
    with Progress(
        TextColumn(label),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(code)


def put(d: dict[str, Any], section: str, key: str, value: Any) -> None:
    """Set d[section][key] = value when the flag was given."""
    if value is not None:
        d.setdefault(section, {})[key] = value


OVERWRITE_HELP = "Replace output files that already exist (otherwise the run refuses)."


def write_json(path: Path, payload: Any) -> None:
    write_atomic(path, json.dumps(payload, indent=2, default=str) + "\n")
    err.print(f"wrote {path}", highlight=False)


# Sweeps on Ray (issue 13): the same flags on every command that runs many simulations
RayFlag = Annotated[
    bool,
    typer.Option(
        "--ray",
        help="Run the simulations on Ray: join the Ray running on this machine (ray start, "
        "RAY_ADDRESS) or start a local one for this run. Extra: pip install 'llmsizer[ray]'.",
    ),
]
RayAddress = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        metavar="ADDR",
        help="Run the simulations on the Ray cluster at ADDR (ray://head:10001 or "
        "head:6379); its nodes need this llmsizer installed.",
    ),
]


@contextmanager
def sweep_for(workers: int | None, ray: bool, ray_address: str | None) -> Iterator[Sweep]:
    """The sweep a command's flags ask for (`llmsizer.sweep.open_sweep`), saying on stderr
    where it runs when that is Ray."""
    with open_sweep(workers, ray=ray, ray_address=ray_address) as sweep:
        if ray or ray_address is not None:
            where = ray_address or "this machine"
            err.print(f"running on Ray ({where}): {sweep.workers} CPUs", highlight=False)
        yield sweep


def require_plots(png: Path | None, html: Path | None) -> None:
    """Before any work: a picture asked for needs the extra `plots` (matplotlib draws the
    PNG, plotly the HTML); a missing one is an error naming it."""
    if png is not None:
        import_extra("matplotlib", "plots", f"a PNG ({png})")
    if html is not None:
        import_extra("plotly", "plots", f"an HTML report ({html})")
