"""How many clients of the AIC gap-analysis closed loops waited for an engine slot, read from
the measurements by Little's law, and what the simulator gives with one slot fewer.

    .venv/bin/python bench/aic_waiting.py [--csv PATH] [--what-if] [--sample K]

The rows: TensorRT-LLM 1.0.0rc3 on H100 from AIC's gap analysis (`silicon_data_source`
`.../aic-auto-gap-analysis/...`), Llama-3.1-8B BF16 and Qwen3-235B-A22B FP8, fixed lengths.
Per model, tensor-parallel size and client count c, their mean TTFT is regressed on
D / c = osl x TPOT / c (a request's decode time over the clients): TTFT = a + b x D / c.
A closed loop whose engine serves c - 1 requests while one client waits has, by Little's law,
a mean wait of exactly D / (c - 1), so b = c / (c - 1) (1.14 at c = 8, 1.07 at 16); an
engine that serves all c has b = 0. The clients waiting on average, w = c x (TTFT - a) /
(TTFT + (osl - 1) x TPOT), are printed beside. `--what-if` simulates every K-th such row
(`--sample`) as mapped (`llmsizer.calibrate.aic`) and again with `max_num_seqs` c - 1, with
the shipped factors, and prints the TTFT and TPOT errors of both (docs/aic_measurement.md
section 11).
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from llmsizer.calibrate.aic import AicCase, map_aic_row
from llmsizer.instance import PredictSpec, predict

CSV = Path(__file__).resolve().parents[2] / "shared" / "calibration" / "aic_silicon_calibration.csv"


def gap_rows(path: Path) -> list[dict[str, str]]:
    """The TensorRT-LLM 1.0.0rc3 H100 agg rows of AIC's gap analysis."""
    with path.open(newline="") as f:
        return [
            r
            for r in csv.DictReader(f)
            if r["backend"] == "trtllm"
            and r["system"] == "h100_sxm"
            and r["mode"] == "agg"
            and r["backend_version"] == "1.0.0rc3"
        ]


def regression(rows: list[dict[str, str]]) -> list[str]:
    """The markdown table of a, b and the clients waiting per model and c (module docstring)."""
    groups: dict[tuple[str, int], dict[str, list[Mapping[str, str]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for r in rows:
        groups[(r["model_path"].split("/")[1], int(r["batch_size"]))][r["tp_size"]].append(r)
    lines = [
        "| model | c | rows | a (ms), median over TP | b | c / (c - 1) | clients waiting |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for (model, c), by_tp in sorted(groups.items()):
        fits, waiting, count = [], [], 0
        for tp_rows in by_tp.values():
            if len(tp_rows) < 3:
                continue
            ttft = np.array([float(r["silicon_ttft_ms"]) for r in tp_rows])
            tpot = np.array([float(r["silicon_tpot_ms"]) for r in tp_rows])
            osl = np.array([int(r["osl"]) for r in tp_rows])
            x = osl * tpot / c
            (a, b), *_ = np.linalg.lstsq(np.vstack([np.ones_like(x), x]).T, ttft, rcond=None)
            fits.append((a, b))
            waiting += list(c * np.maximum(ttft - a, 0) / (ttft + (osl - 1) * tpot))
            count += len(tp_rows)
        if fits:
            a, b = np.median(np.array(fits), axis=0)
            lines.append(
                f"| {model} | {c} | {count} | {a:.0f} | {b:.2f} | {c / (c - 1):.2f} | "
                f"{np.median(waiting):.2f} |"
            )
    return lines


def _one_slot_fewer(spec: PredictSpec) -> PredictSpec:
    seqs = max((spec.concurrency or 2) - 1, 1)
    return spec.model_copy(update={"engine": spec.engine.model_copy(update={"max_num_seqs": seqs})})


def what_if(rows: list[dict[str, str]], every: int) -> list[str]:
    """TTFT / TPOT errors as mapped and with `max_num_seqs` c - 1, by model and load."""
    errors: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for row in rows[::every]:
        case = map_aic_row(row)
        if not isinstance(case, AicCase):
            continue
        band = "c <= 32" if (case.spec.concurrency or 0) <= 32 else "c > 32"
        for name, spec in (("as mapped", case.spec), ("c - 1 slots", _one_slot_fewer(case.spec))):
            summary = predict(spec).summary
            for metric in ("mean_ttft_ms", "mean_tpot_ms"):
                error = 100 * (summary[metric] / case.measured[metric] - 1)
                errors[(f"{case.model} {band}", name, metric)].append(error)
    lines = [
        "| rows | slots | n | TTFT median / p90 (bias) % | TPOT median / p90 (bias) % |",
        "|---|---|---:|---:|---:|",
    ]
    for group, name in sorted({(g, n) for g, n, _ in errors}):
        cells = []
        for metric in ("mean_ttft_ms", "mean_tpot_ms"):
            e = np.array(errors[(group, name, metric)])
            cells.append(
                f"{np.median(abs(e)):.0f} / {np.percentile(abs(e), 90):.0f} ({np.median(e):+.0f})"
            )
        n = len(errors[(group, name, "mean_ttft_ms")])
        lines.append(f"| {group} | {name} | {n} | {cells[0]} | {cells[1]} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--csv", type=Path, default=CSV)
    parser.add_argument("--what-if", action="store_true", help="also simulate (minutes)")
    parser.add_argument("--sample", type=int, default=1, help="every K-th row for --what-if")
    args = parser.parse_args()
    rows = gap_rows(args.csv)
    print("\n".join(regression(rows)))
    if args.what_if:
        print()
        print("\n".join(what_if(rows, args.sample)))


if __name__ == "__main__":
    main()
