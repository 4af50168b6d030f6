"""The first-token hold each (engine, GPU, model) of the AIC rows shows at low load, read
from recorded schedules: what TTFT the shipped factors leave unexplained without their
`first_token_delay_s`.

    .venv/bin/python bench/aic_hold.py --cache PATH [--max-clients 8]

PATH is a `bench/fit_aic.py --cache` pickle (the recorded schedules). For every row with at
most `--max-clients` clients, the row is re-priced with its group's shipped factors (its
engine's Blackwell / Hopper fit, else the general fit) with the hold set to 0, and the
residual measured - predicted TTFT is taken in ms and in the row's measured decode steps
(TPOT). Printed: the median per (engine, GPU, model), with whether the model is MoE
(docs/aic_measurement.md, trt9: the MoE deployments of SGLang and TensorRT-LLM hold
70-640 ms, most 95-220; vLLM's MoE ones 16-61; dense Llama 14-28 ms on every engine, but
for the TensorRT-LLM H100 gap rows' waiting client).
"""

from __future__ import annotations

import argparse
import pickle
from collections import defaultdict
from pathlib import Path

import numpy as np

from llmsizer.calibrate.aic_fit import Recorded
from llmsizer.perf.calibrated import calibrated_efficiency
from llmsizer.specs import get_gpu, get_model

TTFT, TPOT = "mean_ttft_ms", "mean_tpot_ms"


def holds(
    recorded: Recorded, max_clients: int
) -> list[tuple[str, str, str, bool, int, float, float]]:
    """(engine, GPU, model, MoE, rows, median hold in ms, in decode steps) per group."""
    groups: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for i, c in enumerate(recorded.cases):
        if (c.spec.concurrency or 0) <= max_clients:
            groups[(c.backend, c.system, c.model)].append(i)
    out = []
    for (engine, system, model), idx in sorted(groups.items()):
        spec = recorded.cases[idx[0]].spec
        factors = calibrated_efficiency(engine, get_gpu(spec.gpu).architecture)
        predicted = recorded.predict(idx, factors.replace(first_token_delay_s=0.0))
        ms = [recorded.cases[i].measured[TTFT] - predicted[i][TTFT] for i in idx]
        steps = [m / recorded.cases[i].measured[TPOT] for m, i in zip(ms, idx, strict=True)]
        moe = get_model(spec.model).moe is not None
        out.append((engine, system, model, moe, len(idx), float(np.median(ms)),
                    float(np.median(steps))))  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, required=True, help="fit_aic.py --cache pickle")
    parser.add_argument("--max-clients", type=int, default=8)
    args = parser.parse_args()
    recorded = pickle.loads(args.cache.read_bytes())
    print("| engine | GPU | model | MoE | rows | hold (ms) | hold (decode steps) |")
    print("|---|---|---|---|---:|---:|---:|")
    for engine, system, model, moe, n, ms, steps in holds(recorded, args.max_clients):
        print(f"| {engine} | {system} | {model} | {'yes' if moe else 'no'} | {n} | {ms:.0f} "
              f"| {steps:.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
