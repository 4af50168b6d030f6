"""Where a disaggregated row's simulated TTFT goes: prefill queue, prefill, transfer, decode
admission.

    .venv/bin/python bench/disagg_ttft_parts.py ID_PART [ID_PART ...] [--csv PATH]
        [--max-concurrency N]

Each disaggregated row (`llmsizer.calibrate.aic_disagg`) whose id contains one of the
ID_PARTs is simulated on its two pools with the factors that ship for it, and printed with
its measured mean TTFT and TPOT: the simulated means and the mean TTFT in parts, over every
request that went through both pools:

- `queue`: arrival to the prefill step that first schedules it (the prefill pool's queue);
- `prefill`: that step's start to the prefill's end (its prompt steps, shared with others);
- `transfer`: the prefill's end to the handoff (`KvTransfer`);
- `admit`: the handoff to the decode step that admits it (a slot or KV blocks to free);
- `hold`: the rest (the front end's first-token hold).

The concurrency a closed loop keeps, Little's law, is printed beside it: clients =
throughput x (TTFT + (OSL - 1) x TPOT), with the simulated throughput and means (the
simulated values must satisfy it up to the run's start and end). docs/aic_measurement.md
section 19 quotes it.
"""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path

import numpy as np

from llmsizer.calibrate.aic_disagg import AIC_SYSTEMS, AicDisaggCase, map_disagg_row
from llmsizer.calibrate.aic_launch_gb200 import is_inferencex_gb200, with_launched_layouts
from llmsizer.calibrate.aic_launches import with_inferencex_launches
from llmsizer.calibrate.aic_twins import with_twin_layouts
from llmsizer.instance.disagg import make_disaggregated
from llmsizer.perf.calibrated import calibrated_efficiency
from llmsizer.specs import get_gpu, get_system
from llmsizer.workload import make_workload

CSV = Path(__file__).resolve().parents[2] / "shared" / "calibration" / "aic_silicon_calibration.csv"


def parts(case: AicDisaggCase) -> str:
    """One line: the row's TTFT, measured and simulated, in parts (module docstring)."""
    spec = case.prefill
    eff = calibrated_efficiency(case.backend, get_gpu(spec.gpu).architecture)
    fleet = make_disaggregated(
        spec, case.decode, num_prefill=case.num_prefill, num_decode=case.num_decode,
        link=case.link, system=get_system(AIC_SYSTEMS[case.system]),
        max_model_len=spec.isl + spec.osl, efficiency=(eff, eff),
    )  # fmt: skip
    workload = make_workload(spec.workload_spec(spec.num_requests or 1))
    result = fleet.run(workload)
    pre = {r.request_id: r for res in result.prefill for r in res.records}
    dec = {r.request_id: r for res in result.decode for r in res.records}
    both = [r for r in result.records if r.ok and r.request_id in dec and r.num_output_tokens > 1]
    arrival = np.array([r.arrival_s for r in both])
    p_sched = np.array([pre[r.request_id].scheduled_s for r in both], dtype=np.float64)
    handoff = np.array([dec[r.request_id].arrival_s for r in both])
    moved = np.array([fleet.transfer.seconds(r.num_prompt_tokens) for r in both])
    p_end = handoff - moved  # the prefill's last step ends (its record's finish is held)
    d_sched = np.array([dec[r.request_id].scheduled_s for r in both], dtype=np.float64)
    first = np.array([r.token_times_s[0] for r in both])
    ttft = first - arrival
    tpot = np.array([r.tpot_s for r in both], dtype=np.float64)
    split = {
        "queue": p_sched - arrival,
        "prefill": p_end - p_sched,
        "transfer": handoff - p_end,
        "admit": d_sched - handoff,
        "hold": first - d_sched,
    }
    d_end = np.array([dec[r.request_id].finish_s for r in both], dtype=np.float64)
    ends = np.array([r.finish_s for r in result.records if r.ok], dtype=np.float64)
    span = float(ends.max() - min(r.arrival_s for r in result.records))
    throughput = len(ends) / span
    out_mean = float(np.mean([r.num_output_tokens for r in both]))
    little = throughput * (ttft.mean() + (out_mean - 1) * tpot.mean())
    slots = case.num_decode * case.decode.attention_dp_size * case.decode.engine.max_num_seqs
    busy = float((d_end - d_sched).sum()) / span  # decode requests in flight, time average
    measured = case.measured
    return (
        f"{case.row_id} c={spec.concurrency} P {case.num_prefill}x b{spec.engine.max_num_seqs} "
        f"D {case.num_decode}x dp{case.decode.attention_dp_size} "
        f"b{case.decode.engine.max_num_seqs}: measured TTFT {measured['mean_ttft_ms']:.0f} ms, "
        f"TPOT {measured['mean_tpot_ms']:.1f} ms; simulated {1e3 * ttft.mean():.0f} ms, "
        f"{1e3 * tpot.mean():.1f} ms; TTFT = "
        + " + ".join(f"{name} {1e3 * v.mean():.0f}" for name, v in split.items())
        + f" ms; Little: {throughput:.2f} req/s x E2E = {little:.0f} clients; decode "
        f"{busy:.0f} of {slots} slots busy"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ids", nargs="+", help="parts of the row ids to simulate")
    parser.add_argument("--csv", type=Path, default=CSV)
    parser.add_argument("--max-concurrency", type=int, default=None)
    args = parser.parse_args()
    with args.csv.open(newline="") as f:
        rows = [
            r
            for r in csv.DictReader(f)
            if r["mode"] == "disagg" or (r["mode"] == "agg" and is_inferencex_gb200(r))
        ]
    rows = with_inferencex_launches(with_twin_layouts(with_launched_layouts(rows)))
    for row in rows:
        if not any(p in row["id"] for p in args.ids):
            continue
        case = map_disagg_row(row, check_fit=False)
        if not isinstance(case, AicDisaggCase):
            print(f"{case.row_id}: {case.reason}")
        elif (case.prefill.concurrency or 0) <= (args.max_concurrency or math.inf):
            print(parts(case), flush=True)


if __name__ == "__main__":
    main()
