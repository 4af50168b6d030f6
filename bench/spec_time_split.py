"""Where a speculating AIC row's simulated engine time goes: prompt steps, the first verify
step after each, and the other verify steps (docs/aic_measurement.md section 42).

    .venv/bin/python bench/spec_time_split.py ID_PART [ID_PART ...] [--csv PATH]

Each speculating row whose id contains one of the ID_PARTs is simulated as `bench/fit_aic.py`
maps it (`load_aic`), with the factors that ship for it, its step cost wrapped to sum the time
of each kind of step. Printed: measured and simulated mean TTFT and TPOT, then per kind the
steps, their seconds and share, and the mean step; and the prompt tokens a prompt step.
Plain rows are skipped (their steps are all of one engine's kinds, `bench/ttft_parts.py`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from llmsizer.calibrate.aic import AicCase, load_aic
from llmsizer.instance import SimulationSetup, simulation_setup
from llmsizer.instance.speculation import kv_fraction_of, run_instance, step_cost_of
from llmsizer.metrics import summarize
from llmsizer.perf.calibrated import calibrated_efficiency
from llmsizer.perf.speculative import SpeculativeStepCost
from llmsizer.sim.batch import Batch
from llmsizer.specs import get_gpu

CSV = Path(__file__).resolve().parents[2] / "shared" / "calibration" / "aic_silicon_calibration.csv"
KINDS = ("prompt", "verify after a prompt", "verify")
T = TypeVar("T")


class SplitCost:
    """A speculating step cost that prices as `cost` and sums its steps' seconds by kind."""

    def __init__(self, cost: SpeculativeStepCost) -> None:
        self.cost = cost
        self.seconds = dict.fromkeys(KINDS, 0.0)
        self.steps = dict.fromkeys(KINDS, 0)
        self.prompt_tokens = 0
        self.after_prompt = False

    def _add(self, kind: str, seconds: float) -> float:
        self.seconds[kind] += seconds
        self.steps[kind] += 1
        return seconds

    def __call__(self, batch: Batch) -> float:
        if not batch.prefill_chunks:
            return self.decode_step_s(batch.num_decode_seqs, batch.num_decode_context_tokens)
        self.after_prompt = True
        self.prompt_tokens += sum(c.num_new_tokens for c in batch.prefill_chunks)
        return self._add("prompt", self.cost(batch))

    def decode_step_s(self, num_decode_seqs: int, num_decode_context_tokens: int) -> float:
        kind = "verify after a prompt" if self.after_prompt else "verify"
        self.after_prompt = False
        return self._add(kind, self.cost.decode_step_s(num_decode_seqs, num_decode_context_tokens))


def simulate(
    case: AicCase, timing: Callable[[SpeculativeStepCost], T]
) -> tuple[T, dict[str, float], SimulationSetup, SpeculativeStepCost]:
    """Simulate a speculating `case` as `bench/fit_aic.py` maps it, with the factors that ship
    for it, its step cost wrapped by `timing`: (the wrapper, the summary, the setup, the cost)."""
    spec = case.spec
    assert spec.speculative is not None
    efficiency = calibrated_efficiency(case.backend, get_gpu(spec.gpu).architecture)
    setup = simulation_setup(spec, efficiency)
    inst = setup.instance
    cost = step_cost_of(spec.speculative, inst.step, setup.engine.overlap_scheduler)
    assert isinstance(cost, SpeculativeStepCost)
    timed = timing(cost)
    share = kv_fraction_of(spec.speculative, inst.step, inst.memory.kv_cache_bytes)
    result = run_instance(
        inst.simulator(setup.engine, timed), setup.workload, spec.speculative, share
    )
    summary = summarize(result.records, num_gpus=spec.gpus_per_instance, num_instances=1)
    return timed, summary, setup, cost


def split(case: AicCase) -> str:
    timed, summary, _, _ = simulate(case, SplitCost)
    total = sum(timed.seconds.values())
    lines = [
        f"{case.row_id}: measured TTFT {case.measured['mean_ttft_ms']:.0f} ms, TPOT "
        f"{case.measured['mean_tpot_ms']:.1f} ms; simulated {summary['mean_ttft_ms']:.0f}, "
        f"{summary['mean_tpot_ms']:.1f}"
    ]
    for kind in KINDS:
        n, s = timed.steps[kind], timed.seconds[kind]
        lines.append(
            f"  {kind:22s} {n:6d} steps {s:8.2f} s ({s / total:4.0%}), "
            f"{1e3 * s / max(n, 1):.1f} ms a step"
        )
    tokens = timed.prompt_tokens / max(timed.steps["prompt"], 1)
    lines.append(f"  {tokens:.0f} prompt tokens a prompt step")
    return "\n".join(lines)


def main(show: Callable[[AicCase], str] | None = None, doc: str | None = None) -> None:
    """Print `show` (default `split`) of each speculating row the command line names; `doc`
    the calling script's docstring (default this one's)."""
    parser = argparse.ArgumentParser(description=(doc or __doc__ or "").split("\n\n")[0])
    parser.add_argument("ids", nargs="+", help="parts of the row ids to simulate")
    parser.add_argument("--csv", type=Path, default=CSV)
    args = parser.parse_args()
    for case in load_aic(args.csv):
        wanted = isinstance(case, AicCase) and any(p in case.row_id for p in args.ids)
        if wanted and isinstance(case, AicCase) and case.spec.speculative is not None:
            print((show or split)(case))


if __name__ == "__main__":
    main()
