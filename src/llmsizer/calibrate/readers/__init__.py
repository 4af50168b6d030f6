"""Read other tools' benchmark results as `RequestRecord`s: vLLM, AIPerf, guidellm, llmsizer.

`import_results(path)` recognises the format from the file's content; each reader documents
the schema it follows, where it was taken from, and what it has to reconstruct.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from llmsizer.calibrate.readers.aiperf import read_aiperf
from llmsizer.calibrate.readers.guidellm import read_guidellm
from llmsizer.calibrate.readers.llmsizer import read_llmsizer
from llmsizer.calibrate.readers.run import ImportedRun
from llmsizer.calibrate.readers.vllm import read_vllm
from llmsizer.errors import read_json_values

ResultFormat = Literal["auto", "vllm", "aiperf", "guidellm", "llmsizer"]

READERS: dict[str, Callable[[Path], list[ImportedRun]]] = {
    "vllm": read_vllm,
    "aiperf": read_aiperf,
    "guidellm": read_guidellm,
    "llmsizer": read_llmsizer,
}

__all__ = ["READERS", "ImportedRun", "ResultFormat", "detect_format", "import_results"]


def import_results(path: Path, fmt: ResultFormat = "auto") -> list[ImportedRun]:
    """The runs in a result file of the given (or detected) format; a file that is not one
    is a ValueError naming it and the format tried."""
    name = detect_format(path) if fmt == "auto" else fmt
    try:
        return [_checked(run) for run in READERS[name](path)]
    except (KeyError, TypeError, AttributeError, IndexError, OverflowError) as e:
        # each reader follows its tool's schema field by field; a field missing or of the
        # wrong type anywhere in it ends here, named, rather than as a traceback
        raise ValueError(f"{path}: not a valid {name} result file ({type(e).__name__}: {e})") from e
    except ValueError as e:  # a value out of range, found deep in a reader: name the file
        if str(path) in str(e):
            raise
        raise ValueError(f"{path}: not a valid {name} result file ({e})") from e


def detect_format(path: Path) -> str:
    """Which tool wrote `path`, from its first JSON object; raises ValueError if none fits."""
    first = _first_object(path)
    if "metadata" in first and "metrics" in first:
        return "aiperf"
    if "benchmarks" in first:
        return "guidellm"
    if first.get("tool") == "llmsizer" or "token_times_s" in first:
        return "llmsizer"
    if "ttfts" in first or "input_lens" in first:
        return "vllm"
    raise ValueError(
        f"{path}: not a known result format (vLLM --save-detailed JSON, AIPerf "
        "profile_export.jsonl, guidellm benchmarks.json, llmsizer results or records)"
    )


def _first_object(path: Path) -> dict[str, Any]:
    values = read_json_values(path, "result file")
    data = values[0] if values else {}
    if isinstance(data, list):
        data = data[0] if data else {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected JSON objects")
    return data


def _checked(run: ImportedRun) -> ImportedRun:
    """`run`, unless a record has a negative length or a time that is not a finite number
    (then a ValueError naming the file and the request)."""
    for r in run.records:
        times = (r.arrival_s, *r.token_times_s.tolist(), r.finish_s or 0.0, r.scheduled_s or 0.0)
        if min(r.num_prompt_tokens, r.num_output_tokens_requested, r.num_cached_tokens) < 0:
            raise ValueError(f"{run.path}: request {r.request_id} has a negative token count")
        if not all(isinstance(t, int | float) and math.isfinite(t) for t in times):
            raise ValueError(f"{run.path}: request {r.request_id} has a time that is no number")
    return run
