"""Simulator speed: continuous batching on the Azure conversation trace's lengths.

    .venv/bin/python bench/sim_speed.py [--linear] [NUM_REQUESTS ...]   (default: 100000 1000000)

Setting (issue 2's bar): vLLM-style continuous batching, max_num_seqs 256, chunked prefill,
prompt and output lengths drawn from the Azure LLM inference conversation trace, Poisson
arrivals at 80 % of the engine's measured capacity, steps priced by the GPU performance
model (Llama 3.1 8B, FP8, one H100 SXM; KV-cache blocks from its memory). Each size runs
in its own process so that its peak memory (max RSS) is its own. Prints one row per size:
CPU seconds of the run, of the summary (`summarize` over every record) and of both (issue
13's bar: 1M requests <= 10 s, 100k <= 1 s, CPU time because this machine is shared), wall
time, engine steps, steps per CPU second, peak memory (issue 13: <= 1.5 GB at 1M), and
whether the engine ran compiled (`pip install .`, the default) or as plain Python (`pip
install -e .`), and the machine's load average before and after (CPU times inflate when
other jobs share the cores).

Capacity is measured, not assumed: a saturated run (all requests at t=0) gives the
engine's maximum request throughput with this step cost.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from llmsizer.instance import DeploymentSpec, make_instance
from llmsizer.metrics import summarize
from llmsizer.sim import Engine, EngineConfig, LinearStepCost
from llmsizer.sim import engine as engine_module
from llmsizer.workload import Workload, WorkloadSpec, make_workload

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
TRACE = TRACES / "AzureLLMInferenceTrace_conv.csv"
INSTANCE = make_instance(
    DeploymentSpec(
        model="llama-3.1-8b",
        gpu="h100-sxm",
        precision="fp8",
        engine=EngineConfig(engine="vllm", max_num_seqs=256, max_num_batched_tokens=8192),
    )
)
# --linear: a Llama-3.1-8B-on-H100-like linear step instead of the GPU model (6 ms fixed,
# 25 us per prompt token, 40 us per decoding sequence, 20 ns per KV token read).
LINEAR = "--linear" in sys.argv
CONFIG = INSTANCE.engine
COST = LinearStepCost(6e-3, 25e-6, 40e-6, 20e-9) if LINEAR else INSTANCE.step


def lengths_workload(n: int, rate: float | None, seed: int = 0) -> Workload:
    spec = WorkloadSpec(
        arrival="poisson" if rate else "burst",
        request_rate=rate or 1.0,
        num_requests=n,
        trace=TRACE,
        seed=seed,
    )
    return make_workload(spec)


def capacity_req_s() -> float:
    res = Engine(CONFIG, COST).run(lengths_workload(5000, None))
    return summarize(res.records)["request_throughput"]


def one(n: int, rate: float) -> dict[str, float | bool]:
    w = lengths_workload(n, rate)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    res = Engine(CONFIG, COST).run(w)
    cpu1 = time.process_time()
    s = summarize(res.records)
    cpu2 = time.process_time()
    wall = time.perf_counter() - wall0
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "num_requests": n,
        "run_cpu_s": cpu1 - cpu0,
        "summary_cpu_s": cpu2 - cpu1,
        "cpu_s": cpu2 - cpu0,
        "wall_s": wall,
        "num_steps": res.steps.num_steps,
        "steps_per_cpu_s": res.steps.num_steps / (cpu1 - cpu0),
        "peak_rss_mib": peak_mib,
        "compiled": engine_module.__file__ is not None
        and not engine_module.__file__.endswith(".py"),
        "offered_req_s": rate,
        "achieved_req_s": n / res.duration_s,
        "mean_batch": float(res.steps.num_decode_seqs.mean()),
        "mean_ttft_ms": s["mean_ttft_ms"],
    }


def main(sizes: list[int]) -> None:
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    rate = 0.8 * capacity_req_s()
    print(f"capacity {rate / 0.8:.1f} req/s; offering {rate:.1f} req/s (80 %)")
    print(
        f"{'requests':>9} {'run cpu s':>9} {'summary':>8} {'total':>7} {'wall s':>7} "
        f"{'steps':>9} {'steps/cpu s':>11} {'peak MiB':>9}  engine"
    )
    for n in sizes:
        cmd = [sys.executable, __file__, "--one", str(n), str(rate), *(["--linear"] * LINEAR)]
        row = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        print(
            f"{row['num_requests']:>9} {row['run_cpu_s']:>9.2f} {row['summary_cpu_s']:>8.2f} "
            f"{row['cpu_s']:>7.2f} {row['wall_s']:>7.2f} {row['num_steps']:>9} "
            f"{row['steps_per_cpu_s']:>11.0f} {row['peak_rss_mib']:>9.0f}  "
            f"{'compiled' if row['compiled'] else 'python'}, mean batch {row['mean_batch']:.0f}, "
            f"mean TTFT {row['mean_ttft_ms']:.0f} ms"
        )
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        print(json.dumps(one(int(sys.argv[2]), float(sys.argv[3]))))
    else:
        main([int(a) for a in sys.argv[1:] if a != "--linear"] or [100_000, 1_000_000])
