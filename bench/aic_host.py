"""TensorRT-LLM's H100 gap rows (AIC, Dynamo 0.4 + TensorRT-LLM 1.0): is the per-sequence host
time of a step what their TPOT misses, or a delivery stage outside the engine?

    .venv/bin/python bench/aic_host.py --cache PATH [--rows ROWS.csv] [--rate 9250]

With `--cache` (a `bench/fit_aic.py --cache` pickle), every TensorRT-LLM Hopper AIC row is
re-priced with the shipped Hopper factors plus b seconds of host time per sampled sequence
a step, in two forms, and the median |error| (signed median) % of TTFT and TPOT printed by
model and band of clients:

- serial: b added to every step (`EfficiencyFactors.sequence_overhead_s`, as the step model
  prices it: `perf.step.step_time_s`);
- overlapped: each step takes max(GPU time, b x its sequences), the PyExecutor's overlap loop
  (the host prepares and post-processes one step while the GPU runs the next).

With `--rows` (a `bench/fit_aic.py --rows` CSV), Little's law on the same rows at 32 clients
or more: the closed loop's output rate X x OSL, X = c / (TTFT + (OSL - 1) TPOT), the
streams between their first and last token X (OSL - 1) TPOT, and the measured TPOT per such
stream; a stage delivering R tokens a second to every stream gives TPOT = streams / R, so
the rows at its ceiling show one value, 1 / R. With `--rate R`, each row's end-to-end time
against the floor a stage of R tokens/s sets, c x OSL / R.

docs/aic_measurement.md section 62 (trthost19): the readings and the sources.
"""

from __future__ import annotations

import argparse
import csv
import pickle
from collections import defaultdict
from pathlib import Path

import numpy as np

from llmsizer.calibrate.aic_fit import Recorded, group_of, is_aic
from llmsizer.calibrate.features import FEATURES, price
from llmsizer.calibrate.replay import replay
from llmsizer.perf.calibrated import calibrated_efficiency

TTFT, TPOT = "mean_ttft_ms", "mean_tpot_ms"
GROUP = ("trtllm", "hopper")
HOST_S = (0.0, 20e-6, 40e-6, 65e-6, 80e-6)  # per sampled sequence a step
SEQUENCES = FEATURES.index("sequences_overhead_s")  # a row's sampled sequences (a count)


def band(clients: int) -> str:
    return "c<=8" if clients <= 8 else ("c9-32" if clients <= 32 else "c>32")


def host_what_if(recorded: Recorded) -> None:
    """The table of the module docstring's first part."""
    rows = [i for i, c in enumerate(recorded.cases) if group_of(c) == GROUP and is_aic(c)]
    shipped = calibrated_efficiency(*GROUP)
    print("| form | b (us) | model | band | n | TTFT | TPOT |")
    print("|---|---:|---|---|---:|---:|---:|")
    for form in ("serial", "overlapped"):
        for host_s in HOST_S:
            errors: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
            eff = shipped.replace(sequence_overhead_s=host_s) if form == "serial" else shipped
            for i in rows:
                case, trace = recorded.cases[i], recorded.traces[i]
                row_s = None
                if form == "overlapped":
                    gpu_s = price(trace.features, eff)
                    row_s = np.maximum(gpu_s, trace.features[:, SEQUENCES] * host_s)
                out = replay(trace, eff, row_s)
                ttft, tpot = (100 * (out[m] / case.measured[m] - 1) for m in (TTFT, TPOT))
                for key in ((case.model, "all"), (case.model, band(case.spec.concurrency or 0))):
                    errors[key].append((ttft, tpot))
            for (model, part), values in sorted(errors.items()):
                e = np.array(values)
                cells = [f"{np.median(abs(x)):.1f} ({np.median(x):+.0f})" for x in e.T]
                print(f"| {form} | {host_s * 1e6:.0f} | {model} | {part} | {len(e)} | "
                      f"{' | '.join(cells)} |")  # fmt: skip


def little(path: Path, rate: float) -> None:
    """The table of the module docstring's second part."""
    print("| model | TP | c | ISL | OSL | TPOT ms | shipped | tokens/s | streams | us / token "
          "| E2E err % | with the floor |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with path.open(newline="") as f:
        for r in csv.DictReader(f):
            if r["backend"] != "trtllm" or r["system"] != "h100_sxm" or int(r["concurrency"]) < 32:
                continue
            c, osl = int(r["concurrency"]), int(r["osl"])
            ttft, tpot = float(r[f"measured_{TTFT}"]), float(r[f"measured_{TPOT}"])
            e2e_ms = ttft + (osl - 1) * tpot
            shipped_ms = float(r[f"shipped_{TTFT}"]) + (osl - 1) * float(r[f"shipped_{TPOT}"])
            floor_ms = c * osl / rate * 1e3
            x = c / e2e_ms * 1e3  # requests a second
            streams = x * (osl - 1) * tpot / 1e3
            print(f"| {r['model']} | {r['tp']} | {c} | {r['isl']} | {osl} | {tpot:.1f} | "
                  f"{float(r[f'shipped_{TPOT}']):.1f} | {x * osl:.0f} | {streams:.0f} | "
                  f"{tpot * 1e3 / streams:.0f} | {100 * (shipped_ms / e2e_ms - 1):+.0f} | "
                  f"{100 * (max(shipped_ms, floor_ms) / e2e_ms - 1):+.0f} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, help="bench/fit_aic.py --cache pickle")
    parser.add_argument("--rows", type=Path, help="bench/fit_aic.py --rows CSV")
    parser.add_argument(
        "--rate", type=float, default=9250.0, help="a delivery stage's tokens/s (section 49)"
    )
    args = parser.parse_args()
    if args.cache is None and args.rows is None:
        parser.error("give --cache, --rows or both")
    if not args.rate > 0:
        parser.error(f"--rate {args.rate}: must be > 0 tokens/s")
    if args.cache is not None:
        host_what_if(pickle.loads(args.cache.read_bytes()))
    if args.rows is not None:
        little(args.rows, args.rate)


if __name__ == "__main__":
    main()
