"""Step-cost speed: CPU time per `StepModel` call on a typical mix of engine steps.

    .venv/bin/python bench/step_cost_speed.py [--repeats N]

The simulator prices every engine step with `StepModel.__call__`, so its cost bounds how
many steps a second a simulation runs. The mix stands for what continuous batching with
chunked prefill hands it (`max_num_seqs` 256): 70 % decode-only steps of 1-256 sequences,
25 % one prompt chunk beside the decodes, 5 % two or three chunks (some with cached
context), priced on five deployments (dense TP 1, MoE TP 2, sliding window, TP 4 x PP 2,
MLA + MoE TP 8). Times are `time.process_time` (CPU seconds of this process, so another
process on a shared core does not count), the best of `--repeats` passes over the mix.
Also timed: `breakdown` (parts for MBU/MFU) and one `StepFeaturizer` row (calibration).

Measured on the development machine (2 shared cores), best of 7, microseconds per call:

    before the single step formula (5a18a44):  call 1.50   breakdown 11.2   featurizer row 18.8
    after (step_terms, plain tuples):          call 1.49   breakdown 11.7   featurizer row  6.4

With decode-only steps from a table per batch size (issue 13), on a busier machine, best of
7 (the same commit's code without the table measured alongside):

    without the table:                         call 1.70
    with it:                                   call 1.16

(The same mix with `BatchAggregates` and `StepTerms` built as NamedTuple instances in the
call instead of plain tuples: 1.95 us, 1.3x; one of the two: 1.74 us.)
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence

from llmsizer.calibrate.features import StepFeaturizer
from llmsizer.perf.batch_shape import BatchShape, ChunkShape
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.efficiency import default_efficiency
from llmsizer.perf.step import StepModel

DEPLOYMENTS = [
    # (model, GPU, precision, tensor_parallel_size, pipeline_parallel_size)
    ("llama-3.1-8b", "h100-sxm", "fp8", 1, 1),
    ("mixtral-8x7b", "h100-sxm", "bf16", 2, 1),
    ("mistral-7b", "l40s", "fp8", 1, 1),
    ("llama-3.1-70b", "h100-sxm", "bf16", 4, 2),
    ("deepseek-v3", "b200", "fp8", 8, 1),
]
NUM_BATCHES = 2000  # per deployment


def batch_mix(rng: random.Random, n: int) -> list[BatchShape]:
    """`n` steps as continuous batching with chunked prefill produces them (docstring)."""
    out = []
    for _ in range(n):
        num_decode = rng.randint(1, 256)
        context = sum(rng.randint(200, 4000) for _ in range(num_decode))
        kind = rng.random()
        if kind < 0.70:
            chunks: tuple[ChunkShape, ...] = ()
        else:
            count = 1 if kind < 0.95 else rng.randint(2, 3)
            chunks = tuple(
                ChunkShape(rng.randint(16, 2048), rng.choice([0, 0, rng.randint(1, 8000)]))
                for _ in range(count)
            )
        out.append(BatchShape(chunks, num_decode, context))
    return out


def cpu_s_per_call(fn: Callable[[BatchShape], object], batches: Sequence[BatchShape]) -> float:
    start = time.process_time()
    for batch in batches:
        fn(batch)
    return (time.process_time() - start) / len(batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="passes; the best counts")
    args = parser.parse_args()
    rng = random.Random(0)
    cases = []
    for model, gpu, precision, tp, pp in DEPLOYMENTS:
        d = Deployment.from_names(
            model, gpu, precision, tensor_parallel_size=tp, pipeline_parallel_size=pp
        )
        cases.append((StepModel(d, default_efficiency()), StepFeaturizer(d)))
    batches = [batch_mix(rng, NUM_BATCHES) for _ in cases]
    timed = {
        "call": lambda step, _: step,
        "breakdown": lambda step, _: step.breakdown,
        "featurizer row": lambda _, featurize: featurize,
    }
    for name, pick in timed.items():
        repeats = args.repeats if name == "call" else max(1, args.repeats // 2)
        best = min(
            sum(cpu_s_per_call(pick(*case), bs) for case, bs in zip(cases, batches, strict=True))
            / len(cases)
            for _ in range(repeats)
        )
        print(f"{name:>15}: {best * 1e6:6.2f} us per call (CPU, best of {repeats})")


if __name__ == "__main__":
    main()
