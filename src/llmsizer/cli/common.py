"""What every command shares: consoles, progress bars, error exits, JSON output."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import BaseModel
from rich.console import Console

from llmsizer.errors import import_extra
from llmsizer.output import write_atomic

if TYPE_CHECKING:  # imported on use: a one-case predict needs neither (issue 13, startup)
    from llmsizer.sweep import Sweep

out = Console()
err = Console(stderr=True)


def field_help(model: type[BaseModel], field: str) -> str:
    """A flag's help is the field's own description: documented once, where it is defined."""
    return model.model_fields[field].description or ""


def interactive() -> bool:
    return err.is_terminal and not os.environ.get("CI")


class Eta:
    """Time left at the pace so far: `done` of `total` in `elapsed` leaves
    elapsed / done * (total - done). A search reports in stages (`plan`: the search, then
    each lever's), so a total that changes, or a count that goes back, starts a new stage,
    timed from the previous report (the end of the stage before). Times in seconds."""

    def __init__(self, start_s: float) -> None:
        self.stage = (start_s, -1)  # (start, total) of the current stage
        self.last = (start_s, 0)  # (time, count) last reported

    def left_s(self, now_s: float, done: int, total: int) -> float | None:
        """Seconds left in this stage, `None` while nothing of it is done."""
        (last_s, last_done), (start_s, stage_total) = self.last, self.stage
        if stage_total not in (-1, total) or done < last_done:  # a new stage
            start_s = last_s
        self.stage, self.last = (start_s, total), (now_s, done)
        if done <= 0 or total <= 0:
            return None
        return (now_s - start_s) / done * max(total - done, 0)

    def text(self, now_s: float, done: int, total: int) -> str:
        left = self.left_s(now_s, done, total)
        return "" if left is None else f"~{left:,.0f} s left"


@contextmanager
def progress_bar(label: str) -> Iterator[Callable[[int, int], None] | None]:
    """A live bar on a terminal, with the time left at the pace so far (`Eta`); nothing
    when output is piped or under CI."""
    if not interactive():
        yield None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn(label),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        TextColumn("{task.fields[eta]}"),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=None, eta="")
        eta = Eta(time.monotonic())

        def update(done: int, total: int) -> None:
            left = eta.text(time.monotonic(), done, total)
            bar.update(task, completed=done, total=total, eta=left)

        yield update


def fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(code)


def dashed(*fields: str, section: str = "", **renamed: str) -> dict[str, str]:
    """Field path -> flag for flags named after their field (`max_num_seqs`:
    `--max-num-seqs`), under `section` ("engine." makes `engine.max_num_seqs`), plus the
    `renamed` ones (`tensor_parallel_size="--tp"`)."""
    named = {f: "--" + f.replace("_", "-") for f in fields} | renamed
    return {section + f: flag for f, flag in named.items()}


def given_flags(
    table: Mapping[str, str], overrides: Mapping[str, Any], *, every: bool
) -> dict[str, str]:
    """The flags a validation error may name (`errors.format_validation_error`): all of
    `table` (field path -> flag) when flags are the only input (`every`), else those whose
    field `overrides` sets (the rest came from the user's file and keep its keys). A part of
    a path that is a union's tag (`step_cost.gpu.model`, tag `kind: gpu`) is passed over."""
    if every:
        return dict(table)
    return {path: flag for path, flag in table.items() if _sets(overrides, path.split("."))}


def _sets(node: Any, parts: list[str]) -> bool:
    for part in parts:
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif not (isinstance(node, Mapping) and node.get("kind") == part):
            return False
    return node is not None


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
    from llmsizer.sweep import open_sweep

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
