"""Where a simulated TTFT goes, per AIC row: the first wave against later requests, and for
later requests the wait for a step against the step that computes the first token.

    .venv/bin/python bench/ttft_parts.py ID_PART [ID_PART ...] [--csv PATH]

Each row whose id contains one of the ID_PARTs is simulated as `fit_aic.py` maps it, with
the factors that ship for it (`calibrated_efficiency(engine, architecture)`), and printed
with its measured mean TTFT and TPOT: the simulated mean (its `first_token_delay_s` included),
the first wave's (the requests that arrive together at the start, on an idle engine) mean
TTFT and its share of the mean, and a later request's mean wait (arrival to admission) and
prompt step (admission to first token). docs/aic_measurement.md section 16 quotes it.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

from llmsizer.calibrate.aic import AicCase, map_aic_row
from llmsizer.instance import simulation_setup
from llmsizer.perf.calibrated import calibrated_efficiency
from llmsizer.sim import Engine
from llmsizer.specs import get_gpu

CSV = Path(__file__).resolve().parents[2] / "shared" / "calibration" / "aic_silicon_calibration.csv"


def parts(case: AicCase) -> str:
    """One line: the row's TTFT, measured and simulated, in parts (module docstring)."""
    efficiency = calibrated_efficiency(case.backend, get_gpu(case.spec.gpu).architecture)
    setup = simulation_setup(case.spec, efficiency)
    records = Engine(setup.engine, setup.instance.step).run(setup.workload).records
    arrival = np.array([r.arrival_s for r in records])
    scheduled = np.array([r.scheduled_s for r in records], dtype=np.float64)
    first_token = np.array([r.token_times_s[0] for r in records])
    ttft, wait, step = first_token - arrival, scheduled - arrival, first_token - scheduled
    wave = arrival == arrival.min()
    delay_s = setup.instance.first_token_delay_s  # its model's: the MoE hold added for MoE
    return (
        f"{case.row_id} c={case.spec.concurrency}: measured TTFT "
        f"{case.measured['mean_ttft_ms']:.0f} ms, TPOT {case.measured['mean_tpot_ms']:.1f} ms; "
        f"simulated {1e3 * (ttft.mean() + delay_s):.0f} ms ({1e3 * delay_s:.0f} of it the "
        f"constant); first wave {wave.sum()} requests, {1e3 * ttft[wave].mean():.0f} ms each, "
        f"{ttft[wave].sum() / ttft.sum():.0%} of the mean; later: wait "
        f"{1e3 * wait[~wave].mean():.0f} ms, step {1e3 * step[~wave].mean():.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ids", nargs="+", help="parts of the row ids to simulate")
    parser.add_argument("--csv", type=Path, default=CSV)
    args = parser.parse_args()
    with args.csv.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if any(p in r["id"] for p in args.ids)]
    for row in rows:
        case = map_aic_row(row)
        print(parts(case) if isinstance(case, AicCase) else f"{case.row_id}: {case.reason}")


if __name__ == "__main__":
    main()
