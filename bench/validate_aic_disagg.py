"""The disaggregated simulation against AIConfigurator's disaggregated silicon rows.

    .venv/bin/python bench/validate_aic_disagg.py [--workers N] [--limit N] [--before CSV]
        [--ids-from CSV (only those rows)] [--out DIR (default examples/validation)]

Every `mode: disagg` row of `../shared/calibration/aic_silicon_calibration.csv` is mapped
(`llmsizer.calibrate.aic_disagg`: one prefill and one decode deployment, worker counts, the
KV link, the closed-loop load) or skipped with its reason; each mapped row is simulated on
its two pools with the shipped efficiency factors and its mean TTFT and TPOT compared with
the measured ones, the way `bench/validate_aic.py` reports the aggregated rows: per engine
and GPU, the median and p90 absolute error and the median signed error (bias), in %.
Writes `examples/validation/aic_disagg.md` and `aic_disagg_rows.csv`. `--before` takes an
earlier run's rows CSV and adds the errors of both runs on the rows both predicted.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from validate_aic import METRICS, stats, table

from llmsizer.calibrate.aic import AicSkipped
from llmsizer.calibrate.aic_disagg import AicDisaggCase, load_aic_disagg, predict_disagg

REPO = Path(__file__).resolve().parents[1]
CSV = REPO.parent / "shared" / "calibration" / "aic_silicon_calibration.csv"
OUT = REPO / "examples" / "validation"
Row = tuple[AicDisaggCase, dict[str, float] | str]


def _one(case: AicDisaggCase) -> dict[str, float] | str:
    try:
        s = predict_disagg(case)
    except ValueError as e:  # the model rejects a pool: weights that do not fit, ...
        return str(e).split(":")[0]
    return {m: s[m] for m in METRICS}


@dataclass(frozen=True)
class Predicted:
    """A simulated row with its prediction: `validate_aic.Scored`, so its tables are
    `validate_aic.table`'s."""

    case: AicDisaggCase
    predicted: dict[str, float]

    def error_pct(self, metric: str) -> float:
        return 100.0 * (self.predicted[metric] / self.case.measured[metric] - 1.0)


def report(cases: list[AicDisaggCase | AicSkipped], results: list[Row]) -> str:
    done = [Predicted(c, p) for c, p in results if isinstance(p, dict)]
    rejected = Counter(p for _, p in results if isinstance(p, str))
    skipped = Counter(c.reason.split(" (")[0] for c in cases if isinstance(c, AicSkipped))
    lines = [
        "# The disaggregated simulation against AIC silicon measurements",
        "",
        "Produced by `bench/validate_aic_disagg.py` from "
        "`shared/calibration/aic_silicon_calibration.csv` (the `mode: disagg` rows); mapping "
        "rules in `llmsizer.calibrate.aic_disagg`. Shipped efficiency factors, engine presets "
        "with their defaults, each pool's batch size as `max_num_seqs`, least-outstanding "
        "routing in both pools, the KV handoff over NVLink inside the system's NVLink domain "
        "and over its InfiniBand NICs otherwise.",
        "",
        f"{len(cases)} disaggregated rows: {len(results)} simulated, {len(done)} predicted, "
        f"{len(results) - len(done)} rejected by the model, "
        f"{sum(isinstance(c, AicSkipped) for c in cases)} skipped. Errors are "
        "prediction / measurement - 1 in %: "
        "median and 90th percentile of the absolute error, and the median signed error "
        "(bias; + means predicted too high). TTFT and TPOT are the run means.",
        "",
        *table("By engine", "engine", done, lambda r: r.case.backend),
        *table("By engine and GPU", "engine and GPU", done, lambda r: _engine_gpu(r.case)),
        *table("By model and lengths", "model and lengths", done, lambda r: _lengths(r.case)),
        "### Not predicted",
        "",
        "| reason | rows |",
        "|---|---:|",
        *(f"| {r} | {n} |" for r, n in (skipped + rejected).most_common()),
        "",
    ]
    return "\n".join(lines)


def _engine_gpu(c: AicDisaggCase) -> str:
    return f"{c.backend} {c.system}"


def _lengths(c: AicDisaggCase) -> str:
    return f"{c.model} {c.prefill.isl}/{c.prefill.osl}"


def before_after(before: Path, label: str, results: list[Row]) -> str:
    """Median / p90 absolute and median signed error, TTFT and TPOT, of an earlier run's
    rows CSV (`before`) and of this run, on the rows both predicted."""
    with before.open(newline="") as f:
        old = {r["id"]: r for r in csv.DictReader(f) if r["predicted_ttft_ms"]}
    now = [(c, p) for c, p in results if isinstance(p, dict) and c.row_id in old]
    lines = [
        "### Before and after",
        "",
        f"Before: {label}. The {len(now)} rows both runs predicted.",
        "",
        "| run | TTFT median | p90 | bias | TPOT median | p90 | bias |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    if not now:
        return "\n".join([*lines[:3], "No row was predicted by both runs.", ""])
    earlier = [
        Predicted(c, {m: float(old[c.row_id][f"predicted_{m[5:-3]}_ms"]) for m in METRICS})
        for c, _ in now
    ]
    later = [Predicted(c, p) for c, p in now]
    for name, rows in (("before", earlier), ("after", later)):
        lines.append(f"| {name} | {stats(rows, METRICS[0])} | {stats(rows, METRICS[1])} |")
    return "\n".join([*lines, ""])


def write_rows(path: Path, results: list[Row]) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "id",
                "backend",
                "system",
                "model",
                "isl",
                "osl",
                "concurrency",
                "prefill",
                "decode",
                "link",
                "measured_ttft_ms",
                "predicted_ttft_ms",
                "measured_tpot_ms",
                "predicted_tpot_ms",
                "rejected",
            ]
        )
        for c, p in results:
            pred = p if isinstance(p, dict) else {}
            w.writerow(
                [
                    c.row_id,
                    c.backend,
                    c.system,
                    c.model,
                    c.prefill.isl,
                    c.prefill.osl,
                    c.prefill.concurrency,
                    f"{c.num_prefill}x tp{c.prefill.tensor_parallel_size} "
                    f"dp{c.prefill.attention_dp_size} "
                    f"b{c.prefill.engine.max_num_seqs}",
                    f"{c.num_decode}x tp{c.decode.tensor_parallel_size} "
                    f"dp{c.decode.attention_dp_size} "
                    f"b{c.decode.engine.max_num_seqs}",
                    c.link,
                    c.measured["mean_ttft_ms"],
                    _fmt(pred.get("mean_ttft_ms")),
                    c.measured["mean_tpot_ms"],
                    _fmt(pred.get("mean_tpot_ms")),
                    "" if isinstance(p, dict) else p,
                ]
            )


def _fmt(x: float | None) -> str:
    return "" if x is None else f"{x:.3f}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument(
        "--max-concurrency",
        type=int,
        default=None,
        help="Simulate only rows with at most this many clients (the run time grows with it).",
    )
    p.add_argument("--before", type=Path, default=None, help="An earlier run's rows CSV.")
    p.add_argument(
        "--ids-from", type=Path, default=None, help="Simulate only the rows of this rows CSV."
    )
    p.add_argument("--out", type=Path, default=OUT, help="Where the report and rows CSV go.")
    p.add_argument("--before-label", default="an earlier run", help="What --before was.")
    a = p.parse_args()
    cases = load_aic_disagg(CSV)
    mapped = [c for c in cases if isinstance(c, AicDisaggCase)]
    cap = a.max_concurrency
    left_out = [c for c in mapped if cap is not None and (c.prefill.concurrency or 0) > cap]
    mapped = [c for c in mapped if c not in left_out][: a.limit]
    if a.ids_from is not None:
        with a.ids_from.open(newline="") as f:
            ids = {r["id"] for r in csv.DictReader(f)}
        mapped = [c for c in mapped if c.row_id in ids]
    mapped.sort(key=lambda c: c.prefill.concurrency or 0)
    print(f"{len(cases)} rows, {len(mapped)} to simulate", file=sys.stderr)
    with ProcessPoolExecutor(a.workers) as pool:
        predicted = list(pool.map(_one, mapped, chunksize=1))
    results: list[Row] = list(zip(mapped, predicted, strict=True))
    a.out.mkdir(parents=True, exist_ok=True)
    text = report(cases, results)
    if left_out:
        text += (
            f"\n{len(left_out)} mapped rows with more than {cap} clients were not simulated "
            f"in this run (`--max-concurrency {cap}`: their run time on the shared machine).\n"
        )
    if a.before is not None:
        text += "\n" + before_after(a.before, a.before_label, results)
    (a.out / "aic_disagg.md").write_text(text)
    write_rows(a.out / "aic_disagg_rows.csv", results)
    print(f"wrote {a.out / 'aic_disagg.md'}", file=sys.stderr)


if __name__ == "__main__":
    main()
