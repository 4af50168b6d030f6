"""The first-token hold per eager unit: does the hold scale with a prompt step's launches?

    .venv/bin/python bench/eager_hold.py --cache PATH [--max-clients 8]

PATH is a `bench/fit_aic.py --cache` pickle. Every row with at most `--max-clients` clients
(no speculation) is re-priced with its group's shipped factors, the hold
(`first_token_delay_s`) and the eager launch (`prefill_layer_overhead_s`) both at 0; R is
the measured minus that TTFT, E the eager units (dense layers' launches, `perf.launches`)
that the request's prompt steps charge, read as the TTFT's change per unit of the launch's
cost. Printed per (engine, GPU, model): rows, median E, R and R / E (docs/aic_measurement.md
section 20).
"""

from __future__ import annotations

import argparse
import pickle
from collections import defaultdict
from pathlib import Path

import numpy as np

from llmsizer.calibrate.aic_fit import Recorded, is_aic
from llmsizer.perf.calibrated import calibrated_efficiency
from llmsizer.specs import get_gpu

TTFT = "mean_ttft_ms"
UNIT_S = 1e-3  # the launch's cost that makes a TTFT change in ms read as units


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, required=True, help="fit_aic.py --cache pickle")
    parser.add_argument("--max-clients", type=int, default=8)
    args = parser.parse_args()
    recorded: Recorded = pickle.loads(args.cache.read_bytes())
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, c in enumerate(recorded.cases):
        if is_aic(c) and (c.spec.concurrency or 0) <= args.max_clients and not c.spec.speculative:
            groups[(c.backend, get_gpu(c.spec.gpu).architecture)].append(i)
    rows: dict[tuple[str, str, str], list[tuple[float, float]]] = defaultdict(list)
    for (engine, architecture), idx in sorted(groups.items()):
        factors = calibrated_efficiency(engine, architecture).replace(
            first_token_delay_s=0.0, moe_first_token_delay_s=0.0
        )
        free = recorded.predict(idx, factors.replace(prefill_layer_overhead_s=0.0))
        unit = recorded.predict(idx, factors.replace(prefill_layer_overhead_s=UNIT_S))
        for i in idx:
            c = recorded.cases[i]
            units = unit[i][TTFT] - free[i][TTFT]
            rows[(engine, c.system, c.model)].append((units, c.measured[TTFT] - free[i][TTFT]))
    print("| engine | GPU | model | rows | E | R ms | R / E ms |")
    print("|---|---|---|---:|---:|---:|---:|")
    for (engine, system, model), values in sorted(rows.items()):
        e = np.array([v[0] for v in values])
        r = np.array([v[1] for v in values])
        print(
            f"| {engine} | {system} | {model} | {len(values)} | {np.median(e):.0f} | "
            f"{np.median(r):.0f} | {np.median(r / e):.2f} |"
        )


if __name__ == "__main__":
    main()
