"""The first-token hold each (engine, GPU, model) of the AIC rows shows, read from recorded
schedules: what TTFT the shipped factors leave unexplained without their
`first_token_delay_s` and `moe_first_token_delay_s`, at low load and at medium load.

    .venv/bin/python bench/aic_hold.py --cache PATH [--csv CSV]

PATH is a `bench/fit_aic.py --cache` pickle (the recorded schedules). Every row with at most
64 clients is re-priced with its group's shipped factors (its engine's Blackwell / Hopper
fit, else the general fit) with the hold set to 0, and the residual measured - predicted
TTFT is taken in ms and in the row's measured decode steps (TPOT). Printed: the median per
(engine, GPU, model, sweep) for 1-8 clients and for 9-64, with whether the model is MoE.
The sweep is `mtp` for the agg rows an InferenceX MTP sweep ran (TensorRT-LLM image
1.2.0rc6.post3, and 1.1.0rc2.post2 on 2026-01-14: `llmsizer.calibrate.aic_launch.
agg_mtp_speculation`; the CSV gives each row's `backend_version` and `measured=` time):
simulated without speculation, their decode steps are shorter than predicted, so their
hold counts more steps for the same ms.

docs/aic_measurement.md sections 13 and 17 (hold10): the MoE deployments of SGLang and
TensorRT-LLM hold 90-220 ms at 1-8 clients, vLLM's MoE ones 12-42, dense Llama 14-28 ms on
every engine, but for the TensorRT-LLM H100 gap rows' waiting client.
"""

from __future__ import annotations

import argparse
import csv
import pickle
from collections import defaultdict
from pathlib import Path

import numpy as np

from llmsizer.calibrate.aic_fit import Recorded
from llmsizer.calibrate.aic_launch import agg_mtp_speculation
from llmsizer.calibrate.aic_sweeps import measured_at
from llmsizer.perf.calibrated import calibrated_efficiency
from llmsizer.specs import get_gpu, get_model

TTFT, TPOT = "mean_ttft_ms", "mean_tpot_ms"
CSV = Path(__file__).resolve().parents[2] / "shared" / "calibration" / "aic_silicon_calibration.csv"
BANDS = ((1, 8), (9, 64))  # clients: low load, medium load
Group = tuple[str, str, str, str]  # engine, GPU, model, sweep


def holds(
    recorded: Recorded, versions: dict[str, tuple[str, str]]
) -> dict[Group, dict[tuple[int, int], tuple[int, float, float]]]:
    """Per (engine, GPU, model, sweep) and band of `BANDS`: (rows, median hold in ms, in
    decode steps). `versions` maps row ids to their `backend_version` and `measured=` time."""
    groups: dict[tuple[Group, tuple[int, int]], list[int]] = defaultdict(list)
    for i, c in enumerate(recorded.cases):
        clients = c.spec.concurrency or 0
        version, measured = versions.get(c.row_id, ("", ""))
        mtp = agg_mtp_speculation(c.backend, c.model, version, 1, measured)
        for band in BANDS:
            if band[0] <= clients <= band[1]:
                key = (c.backend, c.system, c.model, "mtp" if mtp else "plain")
                groups[(key, band)].append(i)
    out: dict[Group, dict[tuple[int, int], tuple[int, float, float]]] = defaultdict(dict)
    for (key, band), idx in sorted(groups.items()):
        spec = recorded.cases[idx[0]].spec
        factors = calibrated_efficiency(key[0], get_gpu(spec.gpu).architecture)
        no_hold = factors.replace(first_token_delay_s=0.0, moe_first_token_delay_s=0.0)
        predicted = recorded.predict(idx, no_hold)
        ms = [recorded.cases[i].measured[TTFT] - predicted[i][TTFT] for i in idx]
        steps = [m / recorded.cases[i].measured[TPOT] for m, i in zip(ms, idx, strict=True)]
        out[key][band] = (len(idx), float(np.median(ms)), float(np.median(steps)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, required=True, help="fit_aic.py --cache pickle")
    parser.add_argument("--csv", type=Path, default=CSV, help="the AIC calibration CSV")
    args = parser.parse_args()
    recorded = pickle.loads(args.cache.read_bytes())
    with args.csv.open(newline="") as f:
        versions = {
            r["id"]: (r["backend_version"].strip(), measured_at(r) or "") for r in csv.DictReader(f)
        }
    print("| engine | GPU | model | MoE | sweep | c 1-8: rows, hold ms (steps) "
          "| c 9-64: rows, hold ms (steps) |")  # fmt: skip
    print("|---|---|---|---|---|---:|---:|")
    for (engine, system, model, sweep), bands in holds(recorded, versions).items():
        moe = "yes" if get_model(model).moe is not None else "no"
        cells = [
            f"{bands[b][0]}, {bands[b][1]:.0f} ({bands[b][2]:.1f})" if b in bands else "-"
            for b in BANDS
        ]
        print(f"| {engine} | {system} | {model} | {moe} | {sweep} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
