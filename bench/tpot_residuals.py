"""Where the cross-validated TPOT error of the AIC rows sits: a decomposition of
log(measured / predicted) by the rows' structure (docs/tpot_residuals.md, "Per-sequence
costs").

usage: .venv/bin/python bench/tpot_residuals.py ROWS.csv [BEFORE.csv]

ROWS.csv is `bench/fit_aic.py --rows` output (examples/validation/aic_accuracy_rows.csv is
main's), joined by `id` to shared/calibration/aic_silicon_calibration.csv for the engine
version, quantisation, EP and attention-DP columns. For leave one GPU out and leave one
model out it prints the share of the sum of squared log errors that each grouping's means
explain (a grouping that carries the error explains much of it), the split between series
(one engine, GPU, model, ISL / OSL, TP, EP, DP, precision and version over concurrency) and
the shape inside a series, and the error by engine and concurrency; then the version pairs:
one configuration (a series' keys and the concurrency) measured under two engine versions,
by engine, model, GPU and precision, the median ratio of measured TPOT (version B over A)
and of the LOGO prediction (docs/tpot_residuals.md, "Kernels by engine version"); and the
GPU pairs, the same configuration and version on two GPUs (`gpu_pairs`). With
BEFORE.csv, the same rows' median / p90 |error| (bias) before and after, by engine and by
concurrency.
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

AIC = Path(__file__).resolve().parents[2] / "shared" / "calibration" / "aic_silicon_calibration.csv"
RUNS = {"LOGO": "leave_one_GPU_out", "LOMO": "leave_one_model_out", "shipped": "shipped"}
SERIES = ("backend", "system", "model", "isl", "osl", "tp", "quant", "ep", "dp", "version")
Row = dict[str, str]


BANDS = (4, 16, 64, 128)


def band(concurrency: str) -> str:
    """The concurrency band, named so that the bands sort in order ("c<=004" ... "c>=256")."""
    c = int(concurrency)
    return next((f"c<={b:03d}" for b in BANDS if c <= b), "c>=256")


def _engine_band(r: Row) -> tuple[str, str]:
    return r["backend"], r["band"]


def load(path: Path) -> list[Row]:
    """The rows with their calibration columns (quant, ep, dp, version) and band."""
    aic = {r["id"]: r for r in csv.DictReader(AIC.open())}
    rows = []
    for r in csv.DictReader(path.open()):
        a = aic[r["id"]]
        r |= {"quant": a["moe_quant_mode"] or a["gemm_quant_mode"], "ep": a["moe_ep_size"],
              "dp": a["attention_dp_size"], "version": a["backend_version"],
              "band": band(r["concurrency"]),
              "client": _client(a["silicon_data_source"])}  # fmt: skip
        rows.append(r)
    return rows


def _client(source: str) -> str:
    """'gap' for AIC's gap-analysis rows (their own launches and client), else 'inferencex'
    (docs/aic_measurement.md section 1: the source markers)."""
    return "gap" if "gap-analysis" in source or "gtl_job_id" in source else "inferencex"


def log_error(r: Row, run: str, metric: str = "tpot") -> float | None:
    """log(measured / predicted) of the run's mean TPOT (TTFT), None where not predicted."""
    try:
        measured = float(r[f"measured_mean_{metric}_ms"])
        return float(np.log(measured / float(r[f"{RUNS[run]}_mean_{metric}_ms"])))
    except (ValueError, ZeroDivisionError):
        return None


def explained(x: np.ndarray, groups: Sequence[Sequence[int]]) -> float:
    """Share of sum(x^2) that the groups' means explain."""
    within = sum(float(((x[g] - x[g].mean()) ** 2).sum()) for g in groups)
    return 1.0 - within / float((x**2).sum())


def grouped(rows: Sequence[Row], key: Callable[[Row], object]) -> dict[object, list[int]]:
    out: dict[object, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        out[key(r)].append(i)
    return out


def decompose(rows: list[Row]) -> None:
    for run in ("LOGO", "LOMO"):
        kept = [r for r in rows if log_error(r, run) is not None]
        x = np.array([log_error(r, run) for r in kept])
        print(f"\n{run} TPOT, {len(kept)} rows: share of sum(log(measured / predicted)^2)")
        for keys in (("backend",), ("system",), ("model",), ("band",), ("tp",), ("ep",),
                     ("dp",), ("quant",), ("version",), ("backend", "model"),
                     ("backend", "band"), ("backend", "model", "band"), SERIES):  # fmt: skip
            groups = grouped(kept, lambda r, k=keys: tuple(r[f] for f in k)).values()
            print(f"  {' x '.join(keys):60s} {explained(x, list(groups)):.2f}")
        series = list(grouped(kept, lambda r: tuple(r[f] for f in SERIES)).values())
        inside = x.copy()
        for g in series:
            inside[g] = x[g] - x[g].mean()
        shape = grouped(kept, lambda r: (r["backend"], r["band"]))
        share = float((inside**2).sum() / (x**2).sum())
        by_shape = explained(inside, list(shape.values())) * share
        print(
            f"  inside a series: {share:.2f} of it; the (engine, concurrency) shape {by_shape:.2f}"
        )
        for (engine, b), g in sorted(shape.items()):
            print(
                f"    {engine:7s} {b:7s} {len(g):4d} rows, inside-series error "
                f"{(np.exp(-inside[g].mean()) - 1) * 100:+.1f} %"
            )


def _pair_ratios(
    rows: list[Row], config: list[str], field: str, columns: list[str]
) -> Iterator[tuple[Row, str, str, list[float]]]:
    """For each configuration (rows equal in `config`) measured under two or more values of
    `field`: (a row of it, value A, value B, B / A of each column's mean), every pair of
    values in sorted order."""
    for members in grouped(rows, lambda r: tuple(r[f] for f in config)).values():
        groups = grouped([rows[i] for i in members], lambda r: r[field])
        mean = {
            v: [np.mean([float(rows[members[i]][c]) for i in g]) for c in columns]
            for v, g in groups.items()
        }
        names = sorted(mean)
        for j, a in enumerate(names):
            for b in names[j + 1 :]:
                yield rows[members[0]], a, b, [y / x for x, y in zip(mean[a], mean[b], strict=True)]


def version_pairs(rows: list[Row]) -> None:
    """The version pairs, largest measured TPOT jump first (module docstring)."""
    config = [f for f in SERIES if f != "version"] + ["concurrency"]
    columns = [f"{k}_mean_tpot_ms" for k in ("measured", RUNS["LOGO"])]
    pairs: dict[tuple[str, ...], list[list[float]]] = defaultdict(list)
    for r, a, b, ratios in _pair_ratios(rows, config, "version", columns):
        pairs[(r["backend"], r["model"], r["system"], r["quant"], f"{a} -> {b}")].append(ratios)
    print("\nVersion pairs: configurations, measured TPOT B / A (median), LOGO predicted B / A")
    for key, ratios in sorted(pairs.items(), key=lambda kv: -abs(np.log(np.median(kv[1][0])))):
        measured, predicted = (float(np.median([x[i] for x in ratios])) for i in (0, 1))
        print(f"  {' '.join(key):80s} {len(ratios):3d}  {measured:.2f}  {predicted:.2f}")


def gpu_pairs(rows: list[Row]) -> None:
    """The GPU pairs: one configuration (a series' keys, the version and client included, and
    the concurrency) measured on two GPUs; by engine, model, precision and version, the median
    ratio (GPU B over A) of measured TTFT and TPOT and of their shipped prediction, which
    prices both GPUs with one fit (docs/aic_measurement.md section 31)."""
    config = [f for f in SERIES if f != "system"] + ["client", "concurrency"]
    columns = [f"{k}_mean_{m}_ms" for m in ("ttft", "tpot") for k in ("measured", RUNS["shipped"])]
    pairs: dict[tuple[str, ...], list[list[float]]] = defaultdict(list)
    for r, a, b, ratios in _pair_ratios(rows, config, "system", columns):
        key = tuple(r[f] for f in ("backend", "model", "quant", "version", "client"))
        pairs[(*key, f"{b} / {a}")].append(ratios)
    print("\nGPU pairs: configurations, median B / A of TTFT measured, predicted (shipped);"
          " TPOT measured, predicted")  # fmt: skip
    for key, ratios in sorted(pairs.items()):
        medians = "  ".join(f"{m:.2f}" for m in np.median(np.array(ratios), axis=0))
        print(f"  {' '.join(key):72s} {len(ratios):3d}  {medians}")


def compare(before: list[Row], after: list[Row]) -> None:
    old = {r["id"]: r for r in before}

    def stats(values: list[float | None]) -> str:
        e = 100 * (np.exp(-np.array([v for v in values if v is not None])) - 1)  # pred / meas - 1
        p50, p90 = np.median(np.abs(e)), np.percentile(np.abs(e), 90)
        return f"{p50:4.1f} / {p90:4.1f} ({np.median(e):+.0f})"

    for metric in ("tpot", "ttft"):
        keys = (("engine", lambda r: r["backend"]), ("engine x concurrency", _engine_band))
        for name, key in keys:
            print(f"\n{metric.upper()} by {name}: median / p90 |error| (bias) %, before -> after")
            for k, g in sorted(grouped(after, key).items()):
                cells = [f"{run} {stats([log_error(old[after[i]['id']], run, metric) for i in g])}"
                         f" -> {stats([log_error(after[i], run, metric) for i in g])}"
                         for run in RUNS]  # fmt: skip
                print(f"  {k!s:24s} {len(g):4d} | " + " | ".join(cells))


if __name__ == "__main__":
    after = load(Path(sys.argv[1]))
    decompose(after)
    version_pairs(after)
    gpu_pairs(after)
    if len(sys.argv) > 2:
        compare(load(Path(sys.argv[2])), after)
