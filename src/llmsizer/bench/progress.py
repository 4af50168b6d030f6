"""Progress of a sweep: a live rich bar on a terminal, one plain line per point elsewhere.

The caller decides which (the CLI knows whether stdout is a terminal and whether `CI` is
set); both write to a `rich.console.Console`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TimeElapsedColumn

from llmsizer.records import RequestRecord


@dataclass(slots=True)
class SweepProgress:
    """`start` a point, `advance` per record, `stop` when the point ends."""

    console: Console
    live: bool
    _progress: Progress | None = None
    _task: TaskID | None = None
    _failed: int = field(default=0)

    def start(self, label: str, total: int) -> None:
        self._failed = 0
        if not self.live:
            self.console.print(f"{label}: sending {total} requests")
            return
        self._progress = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            "failed {task.fields[failed]}",
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        self._progress.start()
        self._task = self._progress.add_task(label, total=total, failed=0)

    def advance(self, record: RequestRecord) -> None:
        self._failed += record.error is not None
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, advance=1, failed=self._failed)

    def stop(self, label: str, done: int) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress, self._task = None, None
        if not self.live:
            self.console.print(f"{label}: {done} records, {self._failed} failed")
