"""`llmsizer predict --cases` speed: rows per CPU second, in process (`run_cases`).

    .venv/bin/python bench/predict_cases_speed.py [--rows N] [--repeat K]

Writes a CSV of N cases (dense and MoE models, H100 and B200, vLLM / TensorRT-LLM /
SGLang, closed loops of 1 to 64 clients at 1k/1k and 8k/1k, 8 requests a client), runs
`llmsizer.cli.predict.run_cases` on it K times and reports rows per second of CPU time,
this process's and its worker processes' (the machine is shared, so wall time is not a
measure). Runs on any
commit that has `run_cases`: the figure before and after a change comes from the same
script.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import os
import tempfile
import time
from pathlib import Path

from llmsizer.cli.predict import run_cases

GRID = {
    ("llama-3.1-8b", "h100-sxm", 1, "fp8"),
    ("llama-3.1-70b", "h100-sxm", 4, "fp8"),
    ("llama-3.1-70b", "b200", 2, "fp8"),
    ("mixtral-8x7b", "h100-sxm", 2, "bf16"),
    ("deepseek-r1", "b200", 8, "fp8"),
}


def cases(n: int) -> list[dict[str, object]]:
    rows = []
    combos = itertools.product(
        sorted(GRID), ("vllm", "trtllm", "sglang"), (1, 8, 64), ((1024, 1024), (8192, 1024))
    )
    for (model, gpu, tp, precision), engine, c, (isl, osl) in itertools.islice(combos, n):
        rows.append(
            dict(model=model, gpu=gpu, tp=tp, precision=precision, engine=engine,
                 concurrency=c, isl=isl, osl=osl, num_requests=8 * c)
        )  # fmt: skip
    return rows


def _cpu_s() -> float:
    """CPU seconds of this process and its finished children (the worker pool's)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    rows = cases(args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "cases.csv", Path(tmp) / "out.csv"
        with src.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        run_cases(src, out, None)  # warm caches (catalogs, shipped fits)
        before, start = _cpu_s(), time.perf_counter()
        for _ in range(args.repeat):
            n, failed = run_cases(src, out, None)
        cpu, wall = _cpu_s() - before, time.perf_counter() - start
    done = args.repeat * n
    print(
        f"{done} rows ({failed} with errors a pass) in {cpu:.2f} s CPU: {done / cpu:.1f} rows/s; "
        f"{wall:.2f} s wall: {done / wall:.1f} rows/s on {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
