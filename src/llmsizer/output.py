"""How results reach the disk: never over an earlier result unasked, and atomically, so that
a kill mid-write leaves the previous whole file (or none), never half of one."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
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


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary file in `path`'s folder for any writer to fill (matplotlib's `savefig`,
    plotly's `write_html`, a records writer); when the block ends without an error it is
    flushed to the disk and renamed over `path` (a rename within one file system is atomic
    on POSIX), else removed. Its name ends with `path`'s, so writers that choose a format by
    suffix (`.jsonl.gz`) choose the same one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".tmp-{secrets.token_hex(6)}-{path.name}")
    # O_EXCL: never someone else's file; mode 0o666 less the umask, as a plain open gives
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    try:
        yield tmp
        with tmp.open("rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(path: Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` through `atomic_path`."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8", newline="")
