"""Read llmsizer's own benchmark output back: a results JSON and the records it points to.

A results file (`llmsizer.bench.results.write_results`) is a list of point objects, each
with `records_path`, the JSONL of its `RequestRecord`s (relative paths are taken from the
results file's folder). A records JSONL alone is read too, without settings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llmsizer.bench.results import read_results
from llmsizer.calibrate.readers.run import ImportedRun, float_or_none, int_or_none
from llmsizer.records import read_jsonl


def read_llmsizer(path: Path) -> list[ImportedRun]:
    """Every point of an llmsizer results file (or the records of a records JSONL)."""
    if path.suffix == ".jsonl":
        return [ImportedRun("llmsizer", path, tuple(read_jsonl(path)))]
    return [_point(d, path) for d in read_results(path)]


def _point(d: dict[str, Any], path: Path) -> ImportedRun:
    if not d.get("records_path"):
        raise ValueError(
            f"{path}: a point has no records (run llmsizer bench with --records FILE.jsonl, "
            "or records_path in its spec, to keep one record per request)"
        )
    records_path = Path(d["records_path"])
    if not records_path.is_absolute() and not _is_file(records_path):
        records_path = path.parent / records_path
    if not _is_file(records_path):
        raise ValueError(f"{path}: a point's records_path {str(records_path)!r} is no file")
    return ImportedRun(
        source="llmsizer",
        path=path,
        records=tuple(sorted(read_jsonl(records_path), key=lambda r: r.request_id)),
        model_id=d.get("model_id"),
        max_concurrency=int_or_none(d.get("max_concurrency")),
        request_rate=float_or_none(d.get("request_rate")),
        burstiness=float_or_none(d.get("burstiness")),
        duration_s=float_or_none(d.get("duration_s")),
        raw_params=d,
    )


def _is_file(path: Path) -> bool:
    """`path.is_file()`, False for a name the OS refuses (too long: Python 3.11 raises)."""
    try:
        return path.is_file()
    except OSError:
        return False
