"""Plan on N cores, from each job's CPU: what `llmsizer plan` on its default workers would
take on a quiet machine with N cores, measured where the cores are shared (issue 13).

    .venv/bin/python bench/plan_cores.py [--cores N] [NAME]   (default: 2, llama3_8b_3gpus)

The plan runs in this process on a sweep that claims N workers but runs each job here, one
after another, timing it in CPU seconds of its thread (`time.thread_time`: a job's own
work, whatever else the machine runs). Between its jobs each thread's own work is timed
too. The jobs are then list-scheduled on N cores as the plan submits them (first in,
first out; a thread's next step waits for its previous map; the thread that draws the
curves starts after the main search, as `plan` starts it), the plan's own work taking a
core as well. Prints each thread's steps (CPU seconds of each job of a map, or of its own
work), the plan's CPU, and the estimate. Ignored: forking the workers and sending jobs and
results (pickles of a few hundred kB), and a shared core's slowdown.
"""

from __future__ import annotations

import heapq
import os
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from plan_speed import EXAMPLES, usecase_data

from llmsizer.sizing.inputs import usecase_from_mapping
from llmsizer.sizing.plan import plan
from llmsizer.specs import get_gpu, get_model

Step = tuple[str, list[float]]  # ("map", each job's CPU s) or ("own", [CPU s])


class TimedSweep:
    """A sweep of `workers` that runs every job in the calling thread and records, per
    thread, its steps: each map's jobs' CPU, and the thread's own CPU between maps."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.steps: dict[str, list[Step]] = defaultdict(list)
        self.started_after: dict[str, int] = {}  # thread -> main-thread steps done before it
        self._mark: dict[str, float] = {}

    def own(self) -> str:
        """Close the calling thread's own work since its last step."""
        name, now = threading.current_thread().name, time.thread_time()
        if name not in self._mark:
            self.started_after[name] = len(self.steps[threading.main_thread().name])
        self.steps[name].append(("own", [now - self._mark.get(name, now)]))
        return name

    def map(
        self, fn: Callable[[Any], Any], items: Sequence[Any], progress: Any = None
    ) -> list[Any]:
        name = self.own()
        results, cpus = [], []
        for item in items:
            start = time.thread_time()
            results.append(fn(item))
            cpus.append(time.thread_time() - start)
        self.steps[name].append(("map", cpus))
        self._mark[name] = time.thread_time()
        return results


def wall_on(cores: int, sweep: TimedSweep) -> float:
    """List-schedule the recorded steps on `cores` (module docstring): the last finish."""
    free = [0.0] * cores

    def run(ready: float, cpus: list[float]) -> float:
        end = ready
        for cpu in cpus:
            start = max(heapq.heappop(free), ready)
            heapq.heappush(free, start + cpu)
            end = max(end, start + cpu)
        return end

    main = threading.main_thread().name
    clock, done = {main: 0.0}, {main: 0}
    waiting = {n: after for n, after in sweep.started_after.items() if n != main}
    while True:
        for name, after in list(waiting.items()):
            if done[main] >= after:  # started once the main thread got that far
                clock[name], done[name] = clock[main], 0
                del waiting[name]
        active = [n for n in clock if done[n] < len(sweep.steps[n])]
        if not active:
            return max(clock.values())
        name = min(active, key=lambda n: clock[n])
        _, cpus = sweep.steps[name][done[name]]
        clock[name] = run(clock[name], [c for c in cpus if c > 0])
        done[name] += 1


def main(args: list[str]) -> None:
    cores = int(args[args.index("--cores") + 1]) if "--cores" in args else 2
    names = [a for a in args if not a.startswith("--") and not a.isdigit()]
    os.chdir(EXAMPLES)
    get_gpu("h100-sxm"), get_model("llama-3-8b")  # catalogs loaded before timing
    usecase = usecase_from_mapping(usecase_data(names[0] if names else "llama3_8b_3gpus"))
    sweep = TimedSweep(cores)
    sweep.own()  # the main thread's start
    cpu = time.process_time()
    plan(usecase, sweep=sweep)
    sweep.own()
    cpu = time.process_time() - cpu
    for name, steps in sweep.steps.items():
        shown = [
            f"{kind} {' '.join(f'{c:.2f}' for c in cpus)}" for kind, cpus in steps if sum(cpus)
        ]
        print(f"{name}: " + " | ".join(shown))
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    estimate = wall_on(cores, sweep)
    print(f"CPU {cpu:.2f} s; on {cores} cores {estimate:.2f} s ({estimate / cpu:.0%} of the CPU)")


if __name__ == "__main__":
    main(sys.argv[1:])
