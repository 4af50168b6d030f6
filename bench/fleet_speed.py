"""Fleet simulation speed: 64 instances behind each router, requests per second of time.

    .venv/bin/python bench/fleet_speed.py [--instances N] [--requests N] [ROUTER ...]

Setting: `bench/sim_speed.py`'s engine (vLLM-style continuous batching, max_num_seqs 256,
chunked prefill, Llama 3.1 8B FP8 on one H100 SXM priced by the GPU model) copied
`--instances` times (default 64), lengths from the Azure conversation trace, Poisson
arrivals at 80 % of the fleet's capacity (64 x one engine's measured saturated throughput).
For each router: wall seconds, CPU seconds (`time.process_time`, so other jobs on a shared
core do not count), requests per second of each, engine steps in all, and the load split
(max / mean requests per instance). The prefix router needs a trace with hash ids and is
run on the Mooncake conversation trace's prefixes only when named.
"""

from __future__ import annotations

import argparse
import time

from sim_speed import CONFIG, COST, capacity_req_s, lengths_workload

from llmsizer.fleet import simulate_fleet
from llmsizer.metrics import summarize
from llmsizer.sim import Engine

ROUTERS = ["round_robin", "random", "least_outstanding", "power_of_two", "least_kv"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--instances", type=int, default=64)
    p.add_argument("--requests", type=int, default=200_000)
    p.add_argument("routers", nargs="*", default=ROUTERS)
    a = p.parse_args()
    rate = 0.8 * a.instances * capacity_req_s()
    workload = lengths_workload(a.requests, rate)
    engines = [Engine(CONFIG, COST)] * a.instances
    print(f"{a.instances} instances, {a.requests} requests, Poisson {rate:.0f} req/s (80 %)")
    print(
        f"{'router':>18} {'wall s':>7} {'CPU s':>7} {'req/wall s':>10} {'req/CPU s':>10} "
        f"{'steps':>9} {'max/mean':>8} {'p99 TTFT ms':>11}"
    )
    for router in a.routers:
        wall0, cpu0 = time.perf_counter(), time.process_time()
        res = simulate_fleet(engines, workload, router)
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        counts = res.num_requests_per_instance
        steps = sum(i.steps.num_steps for i in res.instances)
        p99 = summarize(res.records)["p99_ttft_ms"]
        print(
            f"{router:>18} {wall:>7.1f} {cpu:>7.1f} {a.requests / wall:>10.0f} "
            f"{a.requests / cpu:>10.0f} {steps:>9} {counts.max() / counts.mean():>8.2f} "
            f"{p99:>11.0f}"
        )


if __name__ == "__main__":
    main()
