"""Rows that repeat another row's run, read as that run: the layout of an exported
disaggregated row from its twin in the database dump (`with_twin_layouts`), and AIC's
gap-analysis copies of InferenceX agg runs (`with_inferencex_twins`).

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


COPY_TOLERANCE_MS = 0.005  # the gap files copy InferenceX's means rounded to 0.01 ms
AGG_LAYOUT = ("tp_size", "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size")
GAP_MARKERS = ("gap-analysis", "gtl_job_id=")  # AIC's own runs (docs/aic_measurement.md s. 1)


def is_gap(row: Mapping[str, str]) -> bool:
    """Whether `row` comes from one of AIC's own gap-analysis runs (by its source)."""
    return any(marker in row["silicon_data_source"] for marker in GAP_MARKERS)


def _point(row: Mapping[str, str]) -> tuple[str, ...]:
    found = _CONCURRENCY.search(row["silicon_data_source"])
    clients = found.group(1) if found else row["batch_size"]
    keys = ("model_path", "system", "backend", "isl", "osl", "tp_size")
    return (*(row[k] for k in keys), clients)


def _copied(a: Mapping[str, str], b: Mapping[str, str]) -> bool:
    return all(
        abs(float(a[m]) - float(b[m])) <= COPY_TOLERANCE_MS
        for m in ("silicon_ttft_ms", "silicon_tpot_ms")
    )


def with_inferencex_twins(rows: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """`rows` (file order), each agg gap-analysis row whose point (model, GPU, engine,
    lengths, TP, clients) and mean TTFT and TPOT (to the 0.01 ms they were copied at) repeat
    an InferenceX row's given that row's `silicon_data_source` (its image and date) and
    layout columns: it is that run, copied (`kimi-k2.5-gap-analysis.csv` and
    `qwen3.5-397b-gap-analysis.csv`: 86 of their 93 rows; `docs/aic_measurement.md`
    section 33), and is mapped as InferenceX ran it. Its id and measured means stay its own;
    a `twin` key names the run ('' for the others)."""
    runs: dict[tuple[str, ...], list[Mapping[str, str]]] = {}
    for r in rows:
        if r["mode"] == "agg" and not is_gap(r):
            runs.setdefault(_point(r), []).append(r)
    out = []
    for r in rows:
        row = {**r, "twin": ""}
        if r["mode"] == "agg" and is_gap(r):
            twin = next((t for t in runs.get(_point(r), ()) if _copied(r, t)), None)
            if twin is not None:
                copied = ("silicon_data_source", *AGG_LAYOUT)
                row |= {c: twin[c] for c in copied if c in twin} | {"twin": twin["id"]}
        out.append(row)
    return out
