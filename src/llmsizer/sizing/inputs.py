"""Use cases from the edges: a YAML file, or the flags of `llmsizer plan`.

    llmsizer plan usecase.yaml
    llmsizer plan --model llama-3.1-8b --isl 2000 --osl 200 --peak-rps 70 --ttft-ms 500 \\
        --gpu h100-sxm,h200,l40s

`usecase_from_flags` maps each flag to one `UseCase` field (the table in its docstring) and
validates the result, so a bad flag's error names the field it sets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from llmsizer.sizing.usecase import UseCase


def load_usecase(path: Path, overrides: dict[str, Any] | None = None) -> UseCase:
    """Read and validate a use-case YAML file; flag values in `overrides` (nested dicts, as
    `usecase_dict` builds) win. Raises `llmsizer.config.ConfigError` naming file and keys."""
    from llmsizer.config import ConfigError, deep_merge, format_validation_error, read_yaml

    data = deep_merge(read_yaml(path), overrides or {})
    if "lengths_trace" in data and data["lengths_trace"] is not None:
        trace = Path(data["lengths_trace"])  # relative to the file, as a reader expects
        data["lengths_trace"] = str(trace if trace.is_absolute() else path.parent / trace)
    try:
        return UseCase.model_validate(data)
    except ValidationError as e:
        raise ConfigError(format_validation_error(e, f"use case '{path}'")) from e


def usecase_dict(
    *,
    model: str | None = None,
    isl: float | None = None,
    osl: float | None = None,
    words: bool = False,
    peak_rps: float | None = None,
    average_rps: float | None = None,
    daily_active_users: float | None = None,
    ttft_ms: float | None = None,
    tpot_ms: float | None = None,
    e2el_ms: float | None = None,
    percentile: float | None = None,
    gpu: str | None = None,
    precision: str | None = None,
    tp: str | None = None,
    engine: str | None = None,
    headroom: float | None = None,
    offline: bool = False,
    sequential: bool = False,
    trace: Path | None = None,
    num_requests: int | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    """The nested dict the given flags set (unset flags leave their field alone).

    | flag                   | field                                   |
    |------------------------|-----------------------------------------|
    | --model                | model                                   |
    | --isl, --osl           | input.user, output (tokens, or words)   |
    | --words                | unit: words (at words_per_token 0.75)   |
    | --peak-rps             | load.peak_rps                           |
    | --average-rps          | load.average_rps                        |
    | --daily-active-users   | load.daily_active_users                 |
    | --ttft-ms, --tpot-ms, --e2el-ms | limits.ttft_ms, .tpot_ms, .e2el_ms |
    | --percentile           | limits.percentile                       |
    | --gpu a,b,c            | candidates.gpus                         |
    | --precision a,b        | candidates.precisions                   |
    | --tp 1,2,4,8           | candidates.tensor_parallel_sizes        |
    | --engine a,b           | candidates.engines                      |
    | --headroom 0.2         | headroom                                |
    | --offline              | mode: offline                           |
    | --sequential           | streaming: false                        |
    | --trace FILE           | lengths_trace                           |
    | --num-requests, --seed | search.num_requests, search.seed        |
    """
    out: dict[str, Any] = {}

    def put(path: str, value: Any) -> None:
        if value is None:
            return
        *parents, key = path.split(".")
        node = out
        for p in parents:
            node = node.setdefault(p, {})
        node[key] = value

    put("model", model)
    put("input.user", isl)
    put("output", osl)
    put("unit", "words" if words else None)
    for key, value in (
        ("peak_rps", peak_rps),
        ("average_rps", average_rps),
        ("daily_active_users", daily_active_users),
    ):
        put(f"load.{key}", value)
    for key, value in (
        ("ttft_ms", ttft_ms),
        ("tpot_ms", tpot_ms),
        ("e2el_ms", e2el_ms),
        ("percentile", percentile),
    ):
        put(f"limits.{key}", value)
    put("candidates.gpus", _split(gpu))
    put("candidates.precisions", _split(precision))
    put("candidates.tensor_parallel_sizes", _split(tp))  # pydantic turns "4" into 4
    put("candidates.engines", _split(engine))
    put("headroom", headroom)
    put("mode", "offline" if offline else None)
    put("streaming", False if sequential else None)
    put("lengths_trace", None if trace is None else str(trace))
    put("search.num_requests", num_requests)
    put("search.seed", seed)
    return out


def usecase_from_flags(**flags: Any) -> UseCase:
    """A validated use case from `llmsizer plan` flags alone (`usecase_dict`'s table);
    raises `pydantic.ValidationError` naming the field a bad flag sets."""
    return UseCase.model_validate(usecase_dict(**flags))


def _split(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [part.strip() for part in text.split(",") if part.strip()]
