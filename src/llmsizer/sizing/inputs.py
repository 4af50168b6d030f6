"""Use cases from the edges: a parsed YAML file, or the flags of `llmsizer plan`.

    llmsizer plan usecase.yaml
    llmsizer plan --model llama-3.1-8b --isl 2000 --osl 200 --peak-rps 70 --ttft-ms 500 \\
        --gpu h100-sxm,h200,l40s

`usecase_from_flags` maps each flag to one `UseCase` field (the table in its docstring) and
validates the result, so a bad flag's error names the field it sets.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from llmsizer.sizing.usecase import UseCase


def usecase_from_mapping(data: Mapping[str, Any], base_dir: Path | None = None) -> UseCase:
    """Validate a parsed use-case file (raises `pydantic.ValidationError` naming the keys).

    A relative `lengths_trace` or `load.arrival_trace` is taken relative to `base_dir`, the
    file's folder, as a reader of the file expects. Reading the file is the caller's (the
    CLI's) job.
    """
    data = dict(data)
    load = data.get("load")
    if isinstance(load, Mapping):
        data["load"] = load = dict(load)
    for node, key in ((data, "lengths_trace"), (load, "arrival_trace")):
        trace = node.get(key) if isinstance(node, dict) else None
        if isinstance(trace, str) and base_dir is not None and not Path(trace).is_absolute():
            node[key] = str(base_dir / trace)  # type: ignore[index]
    return UseCase.model_validate(data)


FLAG_FIELDS: Mapping[str, str] = MappingProxyType(
    {
        "name": "name",
        "model": "model",
        "isl": "input.user",
        "osl": "output",
        "peak_rps": "load.peak_rps",
        "average_rps": "load.average_rps",
        "daily_active_users": "load.daily_active_users",
        "ttft_ms": "limits.ttft_ms",
        "tpot_ms": "limits.tpot_ms",
        "e2el_ms": "limits.e2el_ms",
        "percentile": "limits.percentile",
        "arrival": "load.arrival",
        "burstiness": "load.burstiness",
        "arrival_trace": "load.arrival_trace",
        "gpu": "candidates.gpus",
        "precision": "candidates.precisions",
        "sparsity": "candidates.sparsity",
        "tp": "candidates.tensor_parallel_sizes",
        "pp": "candidates.pipeline_parallel_sizes",
        "engine": "candidates.engines",
        "headroom": "headroom",
        "trace": "lengths_trace",
        "num_requests": "search.num_requests",
        "seed": "search.seed",
    }
)
LIST_FLAGS = frozenset(
    {"gpu", "precision", "sparsity", "tp", "pp", "engine"}
)  # "a,b,c" -> [a, b, c]
SWITCHES: Mapping[str, tuple[str, Any]] = MappingProxyType(
    {"words": ("unit", "words"), "offline": ("mode", "offline"), "sequential": ("streaming", False)}
)


def usecase_dict(**flags: Any) -> dict[str, Any]:
    """The nested dict the given flags set; flags that are `None` or `False` are unset.

    `FLAG_FIELDS` maps each valued flag to its field (dotted path; `--isl`/`--osl` are in
    `unit`, tokens unless `--words`); `LIST_FLAGS` take comma-separated values; `SWITCHES`
    set a field to a value (`--words`: unit words, `--offline`: mode offline, `--sequential`:
    streaming false). An unknown flag raises `TypeError` naming it.
    """
    unknown = set(flags) - set(FLAG_FIELDS) - set(SWITCHES)
    if unknown:
        raise TypeError(f"unknown plan flags {sorted(unknown)}; known: {[*FLAG_FIELDS, *SWITCHES]}")
    out: dict[str, Any] = {}
    for flag, value in flags.items():
        if value is None or value is False:
            continue
        if flag in SWITCHES:
            path, value = SWITCHES[flag]
        else:
            path = FLAG_FIELDS[flag]
            if flag in LIST_FLAGS:  # pydantic turns "4" into 4 and names the field if not
                value = [part.strip() for part in str(value).split(",") if part.strip()]
            elif isinstance(value, Path):
                value = str(value)
        *parents, key = path.split(".")
        node = out
        for p in parents:
            node = node.setdefault(p, {})
        node[key] = value
    return out


def usecase_from_flags(**flags: Any) -> UseCase:
    """A validated use case from `llmsizer plan` flags alone (`usecase_dict`); raises
    `pydantic.ValidationError` naming the field a bad flag sets."""
    return UseCase.model_validate(usecase_dict(**flags))
