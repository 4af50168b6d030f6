"""Where a decode step's predicted time goes wrong: the part that shrinks with tensor
parallelism (weights and KV read per GPU) or the part that does not (per-step and per-layer
fixed costs), read from how measured and predicted TPOT fall with TP
(docs/aic_measurement.md section 22).

usage: .venv/bin/python bench/tp_scaling.py ROWS.csv [--run RUN] [--backend trtllm]

ROWS.csv is `bench/fit_aic.py --rows` output (examples/validation/aic_accuracy_rows.csv is
main's), joined by `id` to shared/calibration/aic_silicon_calibration.csv for the
quantisation and version. A series is one engine, GPU, model, quantisation, version, ISL,
OSL, concurrency and MoE layout (`layout`: expert parallel or not, attention DP or not; rows of
one TP size launched both ways are two series, docs/aic_measurement.md section 28) over three
or more TP sizes; its TPOT is fitted, by least squares, as

    TPOT(tp) = bytes_tp1 / tp + fixed

(a decode step streams its weights and KV split over the tp GPUs, and pays the step's and
the layers' fixed costs on every GPU alike), once on the measured TPOT and once on the
run's predicted TPOT. Printed per (engine, GPU, model, quantisation), medians over its
series: each part measured (ms), and predicted / measured. A ratio above 1 in `bytes`
prices the weight and KV streaming too slow (a bandwidth fraction too low); in `fixed`,
the fixed costs too high. The model is exact only at low load (few prompt steps between
decodes: concurrency well below OSL), so the default keeps series at c <= 16.
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

AIC = Path(__file__).resolve().parents[2] / "shared" / "calibration" / "aic_silicon_calibration.csv"
RUNS = {"LOGO": "leave_one_GPU_out", "LOMO": "leave_one_model_out", "shipped": "shipped"}
MIN_TP_SIZES = 3  # two sizes fit any pair of parts exactly; three test the form


def split(tps: Sequence[int], tpot_ms: Sequence[float]) -> tuple[float, float]:
    """(bytes_tp1, fixed) in the units of `tpot_ms`: the least-squares fit of
    TPOT(tp) = bytes_tp1 / tp + fixed (module docstring)."""
    if len(set(tps)) < 2:
        raise ValueError(f"tp sizes {sorted(set(tps))}: need at least two to split TPOT")
    a = np.column_stack([1.0 / np.asarray(tps, dtype=float), np.ones(len(tps))])
    (bytes_tp1, fixed), *_ = np.linalg.lstsq(a, np.asarray(tpot_ms, dtype=float), rcond=None)
    return float(bytes_tp1), float(fixed)


def series(rows: Sequence[dict[str, str]], column: str, max_c: int) -> dict[tuple[str, ...], list]:
    """Rows with a prediction in `column`, by series (module docstring), at c <= max_c."""
    out: dict[tuple[str, ...], list] = defaultdict(list)
    for r in rows:
        if r[column] and int(r["concurrency"]) <= max_c:
            key = (r["backend"], r["system"], r["model"], r["quant"], r["version"], r["isl"],
                   r["osl"], r["concurrency"], r.get("layout", ""))  # fmt: skip
            out[key].append((int(r["tp"]), float(r["measured_mean_tpot_ms"]), float(r[column])))
    return {k: v for k, v in out.items() if len({tp for tp, _, _ in v}) >= MIN_TP_SIZES}


def layout(aic_row: dict[str, str]) -> str:
    """How an AIC row ran its MoE layers: "ep" (expert parallel) or "tp" (tensor-parallel
    experts), "+dp" with attention data parallelism. Under expert parallelism the busiest
    rank's experts, not bytes / tp, set the step (`perf.step`), so the layouts are separate
    series."""
    ep = int(aic_row.get("moe_ep_size") or 1) > 1
    dp = int(aic_row.get("attention_dp_size") or 1) > 1
    return ("ep" if ep else "tp") + ("+dp" if dp else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", type=Path)
    parser.add_argument("--run", choices=sorted(RUNS), default="LOGO")
    parser.add_argument("--backend", default=None, help="one engine (default: all)")
    parser.add_argument("--max-concurrency", type=int, default=16)
    args = parser.parse_args()
    aic = {r["id"]: r for r in csv.DictReader(AIC.open())}
    rows = []
    for r in csv.DictReader(args.rows.open()):
        a = aic[r["id"]]
        quant = a["gemm_quant_mode"] or a["moe_quant_mode"] or "bf16"
        rows.append(r | {"quant": quant, "version": a["backend_version"], "layout": layout(a)})
    if args.backend:
        rows = [r for r in rows if r["backend"] == args.backend]
    column = f"{RUNS[args.run]}_mean_tpot_ms"
    by_slice: dict[tuple[str, ...], list[tuple[float, ...]]] = defaultdict(list)
    for key, points in series(rows, column, args.max_concurrency).items():
        tps, measured, predicted = zip(*points, strict=True)
        b_m, f_m = split(tps, measured)
        b_p, f_p = split(tps, predicted)
        by_slice[key[:4]].append((b_m, f_m, b_p / b_m, f_p / f_m))
    print(f"{args.run}, c <= {args.max_concurrency}: TPOT(tp) = bytes / tp + fixed, "
          "medians over series")  # fmt: skip
    print(f"{'engine, GPU, model, quant':48} series  bytes ms  fixed ms  bytes p/m  fixed p/m")
    for key, values in sorted(by_slice.items()):
        b_m, f_m, b_r, f_r = np.median(np.array(values), axis=0)
        print(f"{', '.join(key):48} {len(values):6d} {b_m:9.2f} {f_m:9.2f} {b_r:10.2f} {f_r:10.2f}")


if __name__ == "__main__":
    main()
