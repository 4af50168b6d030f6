"""The AIC rows an InferenceX MTP sweep ran, simulated without speculation and with MTP at
several acceptance rates (shipped efficiency factors): the before / after of MTP on them
and the acceptance their TPOT implies.

    .venv/bin/python bench/mtp_acceptance.py [--every K] [--offset I] [--acceptance A ...]
        [--out rows.jsonl]

Each row of `llmsizer.calibrate.aic_disagg.load_aic_disagg` whose decode pool speculates
(`llmsizer.calibrate.aic_launch.mtp_speculation`) is simulated once with the pool as it was
before (no speculation) and once per acceptance rate (the per-token rate of the geometric
model, `perf.speculative`; the shipped prior is `aic_launch.MTP_ACCEPTANCE`). One JSON line
a row (appended, so an interrupted run resumes at the next offset), then a table: for each
run the median and p90 absolute error and the median signed error (bias) of the mean TPOT
and TTFT, in %.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from pathlib import Path
from typing import Any

from llmsizer.calibrate.aic_disagg import AicDisaggCase, load_aic_disagg, predict_disagg

REPO = Path(__file__).resolve().parents[1]
CSV = REPO.parent / "shared" / "calibration" / "aic_silicon_calibration.csv"


def mtp_rows(path: Path) -> list[AicDisaggCase]:
    """The disaggregated rows whose decode pool speculates, in file order."""
    cases = load_aic_disagg(path, check_fit=False)
    return [c for c in cases if isinstance(c, AicDisaggCase) and c.decode.speculative]


def simulate(case: AicDisaggCase, rates: list[float], plain: bool = True) -> dict[str, Any]:
    """The row's measured and predicted means: `none` without speculation (with `plain`),
    then each rate."""
    spec = case.decode.speculative
    assert spec is not None
    out: dict[str, Any] = {
        "id": case.row_id, "backend": case.backend, "system": case.system,
        "clients": case.prefill.concurrency, "isl": case.prefill.isl, "osl": case.prefill.osl,
        "k": spec.num_speculative_tokens, "launch": case.launch,
        "measured": [case.measured["mean_ttft_ms"], case.measured["mean_tpot_ms"]],
    }  # fmt: skip
    for name, drafting in [("none", None)] * plain + [
        (f"{a:g}", spec.model_copy(update={"acceptance_rate": a})) for a in rates
    ]:
        run = dataclasses.replace(
            case, decode=case.decode.model_copy(update={"speculative": drafting})
        )
        means = predict_disagg(run)
        out[name] = [means["mean_ttft_ms"], means["mean_tpot_ms"]]
    return out


def summary(lines: list[dict[str, Any]], runs: list[str]) -> str:
    """Median / p90 absolute error (bias) per run and metric, in %."""
    text = [f"{len(lines)} rows", "| run | TTFT | TPOT |", "|---|---|---|"]
    for run in runs:
        cells = []
        for i in (0, 1):
            err = sorted(100 * (r[run][i] / r["measured"][i] - 1) for r in lines)
            absolute = sorted(abs(e) for e in err)
            p90 = absolute[min(len(absolute) - 1, int(0.9 * len(absolute)))]
            bias = statistics.median(err)
            cells.append(f"{statistics.median(absolute):.0f} / {p90:.0f} ({bias:+.0f})")
        text.append(f"| {run} | {cells[0]} | {cells[1]} |")
    return "\n".join(text)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--csv", type=Path, default=CSV)
    p.add_argument("--every", type=int, default=12, help="simulate every K-th MTP row")
    p.add_argument("--offset", type=int, default=5, help="starting at this one")
    p.add_argument("--acceptance", type=float, nargs="+", default=[0.6, 0.72, 0.85])
    p.add_argument("--out", type=Path, default=Path("mtp_acceptance.jsonl"))
    p.add_argument("--no-plain", action="store_true", help="no run without speculation")
    args = p.parse_args()
    done = set()
    if args.out.exists():
        done = {json.loads(line)["id"] for line in args.out.read_text().splitlines()}
    with args.out.open("a") as out:
        for case in mtp_rows(args.csv)[args.offset :: args.every]:
            if case.row_id in done:
                continue
            t0 = time.perf_counter()
            line = simulate(case, args.acceptance, not args.no_plain)
            out.write(json.dumps(line) + "\n")
            out.flush()
            print(f"{case.row_id}: {time.perf_counter() - t0:.0f} s", flush=True)
    lines = [json.loads(line) for line in args.out.read_text().splitlines()]
    runs = ["none"] * (not args.no_plain) + [f"{a:g}" for a in args.acceptance]
    print(summary(lines, runs))


if __name__ == "__main__":
    main()
