"""Startup speed: a one-case `llmsizer predict`, `llmsizer --help` and `import llmsizer.cli`
as a user runs them, each a fresh process (issue 13: a one-case predict <= 0.5 s wall).

    .venv/bin/python bench/startup_speed.py [--repeat K]

Prints, per command, the fastest of K runs (default 5): wall seconds and CPU seconds of the
child process (user + system; on a shared machine the CPU figure is the steady one), plus
the in-process time of `predict` alone (issue 13: <= 20 ms), after a warm-up call.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from llmsizer.instance import PredictSpec, predict

LLMSIZER = str(Path(sys.executable).with_name("llmsizer"))
CASE = dict(model="llama-3.1-8b", gpu="h100-sxm", isl=1000, osl=100, concurrency=8)
COMMANDS = {
    "predict (one case)": [LLMSIZER, "predict", *(f"--{k}={v}" for k, v in CASE.items())],
    "--help": [LLMSIZER, "--help"],
    "import llmsizer.cli": [sys.executable, "-c", "import llmsizer.cli"],
}


def _child_cpu_s() -> float:
    t = os.times()
    return t.children_user + t.children_system


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of `argv`, its output discarded."""
    cpu, start = _child_cpu_s(), time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, _child_cpu_s() - cpu


def in_process_ms(repeat: int) -> float:
    """The fastest `predict` of the case, ms of CPU, in this process after a warm-up."""
    spec = PredictSpec.model_validate(CASE)
    predict(spec)
    best = float("inf")
    for _ in range(repeat):
        cpu = time.process_time()
        predict(spec)
        best = min(best, time.process_time() - cpu)
    return best * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'command':<22} {'wall s':>7} {'CPU s':>7}   (fastest of {args.repeat})")
    for name, argv in COMMANDS.items():
        runs = [timed(argv) for _ in range(args.repeat)]
        wall, cpu = min(w for w, _ in runs), min(c for _, c in runs)
        print(f"{name:<22} {wall:>7.2f} {cpu:>7.2f}", flush=True)
    print(f"{'predict in-process':<22} {in_process_ms(args.repeat):>7.1f} ms CPU")


if __name__ == "__main__":
    main()
