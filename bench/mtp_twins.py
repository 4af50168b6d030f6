"""The agg rows an MTP sweep ran, by model, GPU, prompt length and clients, and against the
plain rows of the same point (docs/aic_measurement.md section 42).

    .venv/bin/python bench/mtp_twins.py [--rows ROWS_CSV] [--csv CALIBRATION_CSV]

A row speculates when `llmsizer.calibrate.aic.load_aic` maps it with a `speculative` spec
(the MTP sweeps' rows, gap-analysis copies read as their runs). ROWS_CSV is a
`bench/fit_aic.py --rows` file (measured, shipped, leave one GPU out, leave one model out).
Printed:
1. the speculating rows by engine, model, GPU, ISL and clients band: rows, median signed
   error (%) of TTFT and TPOT, shipped / LOGO / LOMO;
2. their plain twins: each point (engine, model, GPU, precision, TP, ISL, OSL, clients) that
   both a speculating and a plain row measured, duplicates of one measurement counted once,
   with the measured and the shipped TTFT ratio (speculating over plain, medians of each
   kind) and each kind's shipped TTFT and TPOT error. Where the two ratios agree, the model
   prices what speculation adds to the first token, and the rows' miss is the plain rows'.
"""

from __future__ import annotations

import argparse
import csv
import statistics
from collections import defaultdict
from pathlib import Path

from llmsizer.calibrate.aic import AicCase, load_aic

REPO = Path(__file__).resolve().parents[1]
CSV = REPO.parent / "shared" / "calibration" / "aic_silicon_calibration.csv"
ROWS = REPO / "examples" / "validation" / "aic_accuracy_rows.csv"
FOLDS = ("shipped", "leave_one_GPU_out", "leave_one_model_out")
BANDS = ((8, "c<=8"), (32, "9-32"), (128, "33-128"), (1 << 30, ">128"))


def band(concurrency: int) -> str:
    return next(name for top, name in BANDS if concurrency <= top)


def error(row: dict[str, str], fold: str, metric: str) -> float:
    """Signed error (%) of `fold`'s mean `metric` (ttft, tpot) against the measurement."""
    measured = float(row[f"measured_mean_{metric}_ms"])
    return 100.0 * (float(row[f"{fold}_mean_{metric}_ms"]) / measured - 1.0)


def median_errors(rows: list[dict[str, str]], metric: str) -> str:
    return " / ".join(f"{statistics.median(error(r, f, metric) for r in rows):+.0f}" for f in FOLDS)


def med(rows: list[dict[str, str]], column: str) -> float:
    return statistics.median(float(r[column]) for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=Path, default=ROWS)
    parser.add_argument("--csv", type=Path, default=CSV)
    args = parser.parse_args()
    cases = {c.row_id: c for c in load_aic(args.csv) if isinstance(c, AicCase)}
    speculating = {i for i, c in cases.items() if c.spec.speculative is not None}
    with args.csv.open(newline="") as f:
        precision = {r["id"]: r["precision"] for r in csv.DictReader(f)}
    with args.rows.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["id"] in cases]

    groups: dict[tuple[str, ...], list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        if r["id"] in speculating:
            group = (r["backend"], r["model"], r["system"], r["isl"], band(int(r["concurrency"])))
            groups[group].append(r)
    print(f"{len([r for r in rows if r['id'] in speculating])} speculating rows; median signed")
    print("error %, shipped / LOGO / LOMO")
    for name in sorted(groups):
        g = groups[name]
        ttft, tpot = median_errors(g, "ttft"), median_errors(g, "tpot")
        print(f"  {' '.join(name):60s} n={len(g):2d}  TTFT {ttft:18s} TPOT {tpot}")

    points: dict[tuple[str, ...], dict[bool, dict[str, dict[str, str]]]] = defaultdict(
        lambda: {True: {}, False: {}}
    )
    for r in rows:
        point = (r["backend"], r["model"], r["system"], precision[r["id"]], r["tp"], r["isl"],
                 r["osl"], r["concurrency"])  # fmt: skip
        kind = points[point][r["id"] in speculating]
        kind.setdefault(r["measured_mean_ttft_ms"] + r["measured_mean_tpot_ms"], r)
    print("\nplain twins: TTFT ratio speculating / plain, measured and shipped; shipped error %")
    print("(TTFT, TPOT) of the plain and the speculating rows")
    for twin in sorted(points, key=lambda k: (k[:7], int(k[7]))):
        spec, plain = (list(points[twin][s].values()) for s in (True, False))
        if not spec or not plain:
            continue

        measured = med(spec, "measured_mean_ttft_ms") / med(plain, "measured_mean_ttft_ms")
        shipped = med(spec, "shipped_mean_ttft_ms") / med(plain, "shipped_mean_ttft_ms")
        errs = [
            statistics.median(error(r, "shipped", m) for r in rs)
            for rs in (plain, spec)
            for m in ("ttft", "tpot")
        ]
        print(
            f"  {' '.join(twin):62s} {measured:5.2f} {shipped:5.2f}   plain {errs[0]:+4.0f} "
            f"{errs[1]:+4.0f}   spec {errs[2]:+4.0f} {errs[3]:+4.0f}"
        )


if __name__ == "__main__":
    main()
