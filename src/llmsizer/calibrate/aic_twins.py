"""The layout of an exported disaggregated row, read from its twin in the database dump.

AIC's disaggregated rows come from two InferenceX exports (`docs/aic_measurement.md`): the
`db-dump` rows carry each pool's worker count, batch size and parallelism (`tp_size`,
`attention_dp_size`, `moe_tp_size`, `moe_ep_size`); the `source_file=` rows leave the worker
counts and batch sizes empty and write one worker's GPUs as `tp_size` (a data-parallel
attention worker's included), with the prefill pool's expert parallelism. Many runs are in
both: same system, engine, lengths and clients, and the same TTFT and TPOT to a few %
(`TTFT_TOLERANCE`, `TPOT_TOLERANCE`; the exports round differently). Such an exported row
is the dump's run, so `with_twin_layouts` gives it the dump's pool columns; the measured
means stay its own. The dump names DeepSeek-R1 runs `DeepSeek-V3` (its ids say `dsr1_`):
the two share one architecture, so twins are matched by model family.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

TTFT_TOLERANCE = 0.05
TPOT_TOLERANCE = 0.03
POOL_COLUMNS = tuple(
    f"{pool}_{column}"
    for pool in ("prefill", "decode")
    for column in (
        "batch_size",
        "num_workers",
        "tp_size",
        "pp_size",
        "attention_dp_size",
        "moe_tp_size",
        "moe_ep_size",
    )
)
_CONCURRENCY = re.compile(r"silicon_concurrency=(\d+)")
Key = tuple[str, str, str, str, str, str]


def _key(row: Mapping[str, str]) -> Key | None:
    found = _CONCURRENCY.search(row["silicon_data_source"])
    if found is None:
        return None
    family = "deepseek" if "deepseek" in row["model_path"].lower() else row["model_path"]
    return (family, row["system"], row["backend"], row["isl"], row["osl"], found.group(1))


def _close(a: Mapping[str, str], b: Mapping[str, str]) -> bool:
    ttft = float(a["silicon_ttft_ms"]) / float(b["silicon_ttft_ms"]) - 1
    tpot = float(a["silicon_tpot_ms"]) / float(b["silicon_tpot_ms"]) - 1
    return abs(ttft) <= TTFT_TOLERANCE and abs(tpot) <= TPOT_TOLERANCE


def workers_given(row: Mapping[str, str]) -> bool:
    return bool(row["prefill_num_workers"].strip() and row["decode_num_workers"].strip())


def with_twin_layouts(rows: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """`rows` (disaggregated, file order), each row without worker counts that has a twin
    in the dump (module docstring) given the twin's pool columns; when several twins match,
    the closest in TPOT. A `twin` key names the twin's id ('' for the others)."""
    dump: dict[Key, list[Mapping[str, str]]] = {}
    for r in rows:
        key = _key(r)
        if key is not None and workers_given(r) and not r.get("launch"):
            dump.setdefault(key, []).append(r)
    out = []
    for r in rows:
        row = {**r, "twin": ""}
        key = _key(r)
        if not workers_given(r) and key is not None:
            twins = [d for d in dump.get(key, []) if _close(r, d)]
            if twins:
                twin = min(twins, key=lambda d: abs(float(d["silicon_tpot_ms"]) / float(
                    r["silicon_tpot_ms"]) - 1))  # fmt: skip
                row |= {c: twin[c] for c in POOL_COLUMNS} | {"twin": twin["id"]}
        out.append(row)
    return out
