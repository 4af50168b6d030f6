"""How results reach the disk: never over an earlier result unasked, and atomically, so that
a kill mid-write leaves the previous whole file (or none), never half of one."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path


def refuse_existing(
    paths: Iterable[Path | None], *, overwrite: bool, error: type[Exception] = ValueError
) -> None:
    """Raise `error` naming the first of `paths` that exists, unless `overwrite` (the
    user's --overwrite): checked before any work, so nothing is measured in vain."""
    if overwrite:
        return
    for path in paths:
        if path is not None and path.exists():
            raise error(f"'{path}' exists: pass --overwrite to replace it, or choose another file")


def write_atomic(path: Path, text: str) -> None:
    """Write `text` into a temporary file in `path`'s folder, flush it to the disk, then
    rename it over `path` (a rename within one file system is atomic on POSIX)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
