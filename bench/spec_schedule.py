"""A speculating AIC row's simulated schedule against what its measurement implies
(docs/aic_measurement.md section 51).

    .venv/bin/python bench/spec_schedule.py ID_PART [ID_PART ...] [--csv PATH]

Each speculating row whose id contains one of the ID_PARTs is simulated as `bench/fit_aic.py`
maps it, with the factors that ship for it. Printed, over the middle 60 % of the run's steps:
the prompt steps (requests and tokens a step, their mean time), the verify steps (the running
batch, their mean time), and Little's law on the closed loop for the measured and the
simulated means: X = c / (TTFT + (n - 1) TPOT) requests a second for c clients and a mean
output of n tokens, X (n - 1) TPOT of them decoding, X TTFT before their first token, and the
engine time a verify step, TPOT x E (E the expected tokens a step).
"""

from __future__ import annotations

import numpy as np
from spec_time_split import SplitCost, main, simulate

from llmsizer.calibrate.aic import AicCase
from llmsizer.perf.speculative import SpeculativeStepCost
from llmsizer.sim.batch import Batch


class StepLog(SplitCost):
    """`SplitCost` that also keeps (prompt requests, prompt tokens, decoding, seconds) a step."""

    def __init__(self, cost: SpeculativeStepCost) -> None:
        super().__init__(cost)
        self.log: list[tuple[int, int, int, float]] = []

    def __call__(self, batch: Batch) -> float:
        seconds = super().__call__(batch)
        if batch.prefill_chunks:
            tokens = sum(c.num_new_tokens for c in batch.prefill_chunks)
            self.log.append((len(batch.prefill_chunks), tokens, batch.num_decode_seqs, seconds))
        return seconds

    def decode_step_s(self, num_decode_seqs: int, num_decode_context_tokens: int) -> float:
        seconds = super().decode_step_s(num_decode_seqs, num_decode_context_tokens)
        self.log.append((0, 0, num_decode_seqs, seconds))
        return seconds


def schedule(case: AicCase) -> str:
    timed, summary, setup, cost = simulate(case, StepLog)
    spec = case.spec
    n = len(timed.log)
    middle = timed.log[n // 5 : 4 * n // 5]
    prompts = np.array([s for s in middle if s[0]], dtype=float).reshape(-1, 4)
    verifies = np.array([s for s in middle if not s[0]], dtype=float).reshape(-1, 4)
    lines = [
        f"{case.row_id}",
        f"  prompt steps {len(prompts)}: {prompts[:, 0].mean():.1f} requests, "
        f"{prompts[:, 1].mean():.0f} tokens, {1e3 * prompts[:, 3].mean():.1f} ms a step",
        f"  verify steps {len(verifies)}: {verifies[:, 2].mean():.1f} running "
        f"({verifies[:, 2].min():.0f}-{verifies[:, 2].max():.0f}), "
        f"{1e3 * verifies[:, 3].mean():.1f} ms a step",
    ]
    out = float(np.mean(setup.workload.num_output_tokens)) - 1.0
    tokens = cost.spec.expected_tokens_per_step
    for name, ttft_ms, tpot_ms in (
        ("measured", case.measured["mean_ttft_ms"], case.measured["mean_tpot_ms"]),
        ("simulated", summary["mean_ttft_ms"], summary["mean_tpot_ms"]),
    ):
        rate = spec.concurrency / (ttft_ms / 1e3 + out * tpot_ms / 1e3)
        lines.append(
            f"  {name:9s}: {rate:.2f} req/s, {rate * out * tpot_ms / 1e3:.0f} decoding, "
            f"{rate * ttft_ms / 1e3:.0f} before the first token, "
            f"{tpot_ms * tokens:.0f} ms engine time a verify step"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main(schedule, __doc__)
