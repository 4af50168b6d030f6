"""Where a prompt step's routed experts are bound, per MoE AIC row: the grouped GEMM's
padded tiles (`perf.step.padded_rows`) against its bytes (expert weights and routed tokens).

    .venv/bin/python bench/expert_tiles.py [--csv PATH] [--sample K]

Each MoE row is mapped as `fit_aic.py` maps it and priced with the factors that ship for
it (`calibrated_efficiency(engine, architecture)`), at two prompt steps: one prompt of ISL
tokens, and a full step of min(concurrency, 8) such prompts (at most 32,768 tokens). Per
engine and model: the experts' compute with tiles over the same with 1-row tiles (what the
padding costs in FLOPs), how many steps the padded compute binds (compute above the bytes'
time), and the median change of the whole step's time. docs/aic_measurement.md section 18
quotes it.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np

from llmsizer.calibrate.aic import AicCase, load_aic
from llmsizer.instance import simulation_setup
from llmsizer.perf import StepModel
from llmsizer.perf.batch_shape import aggregate, prefill_batch
from llmsizer.perf.calibrated import calibrated_efficiency
from llmsizer.perf.step import StepTerms, step_terms
from llmsizer.specs import get_gpu, get_model

CSV = Path(__file__).resolve().parents[2] / "shared" / "calibration" / "aic_silicon_calibration.csv"


def experts(step: StepModel, num_tokens: int) -> tuple[float, float, float]:
    """(experts' compute s, experts' bytes s, step s) of one prompt of `num_tokens`."""
    c = step.constants
    batch = prefill_batch(1, num_tokens)
    t = StepTerms._make(step_terms(c, aggregate(batch, c.window), step.cuda_graphs))
    return t.experts_compute_s, t.experts_memory_s, step(batch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--csv", type=Path, default=CSV)
    parser.add_argument("--sample", type=int, default=1, help="every K-th MoE row")
    args = parser.parse_args()
    cases = [c for c in load_aic(args.csv) if isinstance(c, AicCase)]
    moe = [c for c in cases if get_model(c.model).moe is not None][:: args.sample]
    out: dict[tuple[str, str], list[tuple[float, bool, float]]] = defaultdict(list)
    for case in moe:
        eff = calibrated_efficiency(case.backend, get_gpu(case.spec.gpu).architecture)
        tiled = simulation_setup(case.spec, eff).instance.step
        flat = StepModel(tiled.deployment, eff.replace(experts_tile_rows=1.0), tiled.cuda_graphs)
        isl = case.spec.isl
        for tokens in (isl, min(min(int(case.spec.concurrency or 1), 8) * isl, 32_768)):
            compute, memory, step_s = experts(tiled, tokens)
            flat_compute, _, flat_step_s = experts(flat, tokens)
            out[case.backend, case.model].append(
                (compute / flat_compute, compute > memory, step_s / flat_step_s - 1)
            )
    print("| engine | model | steps | padded / real FLOPs, median (max) | padding binds | "
          "step change, median (max) |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|")
    for (engine, model), values in sorted(out.items()):
        ratio, binds, change = (np.array(v, dtype=float) for v in zip(*values, strict=True))
        print(
            f"| {engine} | {model} | {len(values)} | {np.median(ratio):.2f} ({ratio.max():.2f}) "
            f"| {int(binds.sum())} | {100 * np.median(change):+.1f} % "
            f"({100 * change.max():+.1f} %) |"
        )


if __name__ == "__main__":
    main()
