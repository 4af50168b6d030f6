"""How a sweep's speed scales with workers: the local process pool and Ray, on this machine.

    .venv/bin/python bench/ray_scaling.py [--rows N] [--workers 1,2] [--repeat K] [--no-ray]

The sweep is N `predict --cases` rows: `examples/predict/cases.csv` (48 cases: Llama 3.1 8B
and 70B and Mixtral 8x7B on H100 and H200, closed loops of 1 to 64 clients, a Poisson rate,
and rows that fail on purpose; ~33 ms of CPU a row) repeated, each copy with its own seed,
run through `llmsizer.sweep` as `predict --cases` runs them.
For each executor and worker count it reports

- start: opening the sweep (a process pool forks; Ray starts a head with that many CPUs)
  plus a first small sweep that makes every worker import llmsizer;
- the sweep's wall time (best of K), rows per second, and the speed-up over one worker
  in this process;
- the per-task overhead: the wall time of 200 empty tasks sent one by one (one pickle
  round trip each; for Ray also its scheduling and object store), over 200;
- the CPU seconds a row took in its worker, and the CPU share: the rows' CPU time over
  wall time x workers, 100 % when every worker had a core of its own the whole time;

and checks that every executor returned the same rows, value for value. Wall time is the
measure of parallel speed, so run it on an otherwise idle machine: the CPU share shows how
far other processes held the workers back (the load average at the start is printed too).

From the CPU time a row takes in process and Ray's per-task overhead it then estimates a
sweep of `--configs` configurations on a cluster of `--nodes` nodes of `--cpus-per-node`
CPUs (DESIGN.md, "Sweeps"): chunks of about four per CPU (`llmsizer.sweep.chunk_size`);
wall time = configurations x seconds per row / CPUs, up to one chunk's time more (where
chunks differ in cost), plus the tasks' overheads spread over the CPUs; node time is what
is billed.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from llmsizer.cli.predict import _predict_row
from llmsizer.errors import read_csv_rows
from llmsizer.sweep import RayCluster, Sweep, chunk_size, open_sweep

EMPTY_TASKS = 200
CASES = Path(__file__).parents[1] / "examples" / "predict" / "cases.csv"


def cases(n: int) -> list[dict[str, str]]:
    """`n` rows: the example cases over and over, the k-th copy with seed k."""
    rows = read_csv_rows(CASES, "cases file")
    return [{**rows[i % len(rows)], "seed": str(i // len(rows))} for i in range(n)]


def _noop(x: int) -> int:
    return x


def _timed(row: dict[str, str]) -> tuple[dict[str, Any], float]:
    """A row's prediction and the CPU seconds its worker spent on it."""
    t0 = time.process_time()
    result = _predict_row(row, None)
    return result, time.process_time() - t0


@contextmanager
def _ray(workers: int) -> Iterator[Sweep]:
    """A fresh local Ray head with `workers` CPUs, shut down after."""
    import ray

    ray.init(
        address="local",
        num_cpus=workers,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.WARNING,
    )
    try:
        with open_sweep(ray=True) as sweep:
            yield sweep
    finally:
        ray.shutdown()


def _overhead_s(sweep: Sweep) -> float:
    """Seconds per empty task, sent one by one."""
    t0 = time.perf_counter()
    if isinstance(sweep, RayCluster):
        task = sweep.ray.remote(num_cpus=1)(_noop)
        sweep.ray.get([task.remote(i) for i in range(EMPTY_TASKS)])
    else:
        pool = getattr(sweep, "pool", None)
        if pool is None:  # in this process: a call
            [_noop(i) for i in range(EMPTY_TASKS)]
        else:
            list(pool.map(_noop, range(EMPTY_TASKS), chunksize=1))
    return (time.perf_counter() - t0) / EMPTY_TASKS


def measure(
    name: str, opener: Callable[[], Any], rows: list[dict[str, str]], repeat: int
) -> dict[str, Any]:
    t0 = time.perf_counter()
    with opener() as sweep:
        sweep.map(_timed, rows[: 2 * sweep.workers])  # every worker imports and warms up
        start_s = time.perf_counter() - t0
        best, timed = math.inf, []
        for _ in range(repeat):
            t1 = time.perf_counter()
            got = sweep.map(_timed, rows)
            if time.perf_counter() - t1 < best:
                best, timed = time.perf_counter() - t1, got
        overhead = _overhead_s(sweep)
        workers = sweep.workers
    cpu_s = sum(c for _, c in timed)
    return {
        "name": name,
        "workers": workers,
        "start_s": start_s,
        "sweep_s": best,
        "overhead_s": overhead,
        "cpu_per_row_s": cpu_s / len(rows),
        "cpu_share": cpu_s / (best * workers),
        "results": [r for r, _ in timed],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=240)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--configs", type=int, default=100_000)
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--cpus-per-node", type=int, default=32)
    args = parser.parse_args()
    rows = cases(args.rows)
    counts = [int(w) for w in args.workers.split(",")]
    print(f"{len(rows)} predict rows; load average {os.getloadavg()[0]:.2f}; {os.cpu_count()} CPUs")
    runs = [measure("in process", lambda: open_sweep(1), rows, args.repeat)]
    for w in counts:
        if w > 1:
            runs.append(measure("process pool", partial(open_sweep, w), rows, args.repeat))
    if not args.no_ray:
        runs += [measure("ray", partial(_ray, w), rows, args.repeat) for w in counts]
    base = runs[0]["sweep_s"]
    head = ("executor", "workers", "start (s)", "sweep (s)", "rows/s", "speed-up")
    head += ("task (ms)", "CPU a row (ms)", "CPU share")
    print("| " + " | ".join(head) + " |\n" + "|---" * len(head) + "|")
    for r in runs:
        print(
            f"| {r['name']} | {r['workers']} | {r['start_s']:.2f} | {r['sweep_s']:.2f} | "
            f"{len(rows) / r['sweep_s']:.1f} | {base / r['sweep_s']:.2f}x | "
            f"{r['overhead_s'] * 1e3:.2f} | {r['cpu_per_row_s'] * 1e3:.1f} | "
            f"{r['cpu_share']:.0%} |"
        )
    same = all(repr(r["results"]) == repr(runs[0]["results"]) for r in runs)
    print(f"same rows from every executor: {same}")
    ray_runs = [r for r in runs if r["name"] == "ray"]
    overhead = max(r["overhead_s"] for r in ray_runs) if ray_runs else runs[0]["overhead_s"]
    row_s = runs[0]["cpu_per_row_s"]  # on a node of its own, a row takes its CPU time
    estimate(args.configs, args.nodes, args.cpus_per_node, row_s, overhead)
    if not same:
        raise SystemExit("the executors disagree")


def estimate(configs: int, nodes: int, cpus: int, row_s: float, overhead_s: float) -> None:
    """A sweep of `configs` on `nodes` x `cpus` from one worker's seconds per row."""
    total = nodes * cpus
    size = chunk_size(configs, total)
    num_tasks = math.ceil(configs / size)
    compute_s = configs * row_s / total
    wall_s = compute_s + size * row_s + num_tasks * overhead_s / total
    print(
        f"{configs:,} configurations on {nodes} nodes x {cpus} CPUs: {num_tasks:,} tasks of "
        f"{size} ({size * row_s:.1f} s each); {row_s * 1e3:.1f} ms a row on one worker; "
        f"wall {compute_s:.0f}-{wall_s:.0f} s (work {compute_s:.0f} s, up to one chunk more "
        f"{size * row_s:.1f} s, overheads {num_tasks * overhead_s / total:.3f} s); "
        f"{configs * row_s / 3600:.2f} CPU-hours, {nodes * wall_s / 3600:.3f} node-hours"
    )


if __name__ == "__main__":
    main()
