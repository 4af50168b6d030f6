"""Plan speed: wall time of `plan` on the sizing examples (issue 11: the lever search must
stay within 2x of the plan before it) and on `llama3_8b_3gpus` (issue 13: `plan` for 3 GPUs
<= 2 s wall): the course's Llama 3 8B case (`llama3_8b_h100.yaml`) over H100 SXM, A100 SXM
80 GB and L40S, priced 3, 2 and 1 $/GPU-hour (illustrative), with the default precisions
(`lossless`: bf16, and fp8 on H100 and L40S; the example itself pins bf16).

    .venv/bin/python bench/plan_speed.py [--no-levers | --levers-cost [--repeat N]]
        [--workers N] [NAME ...]
    .venv/bin/python bench/plan_speed.py --cli [--repeat K] [PYTHONPATH ...]

`--no-levers` leaves out the "what each lever buys" search (`search.levers: false`), to
separate its cost from the rest of the plan's. `--levers-cost` runs each example both ways
and prints the lever table's cost (issue 11: at most 2x): engine steps and CPU seconds with
the table over without it; `--repeat N` runs N pairs interleaved and gives the median CPU
and the spread of the pairs' ratios (CPU on a shared machine moves +-20 % run to run).

Each example runs in this process once, after the catalogs are loaded; prints one row per
example: wall and CPU seconds (the machine may be shared: compare CPU seconds),
configurations in the main search, probe points simulated in it, and the engine steps
simulated by the whole plan (every probe, capacity run, curve, band and lever search): the
work itself, the same on any machine, which CPU seconds only measure when the cores are not
shared. `--workers N` runs the plan's parts on N forked processes (`llmsizer.sweep`, as
`llmsizer plan` does by default on the CPUs it may use); CPU seconds then include the
workers', and steps count this process's simulations only.

`--cli` times `llmsizer plan` on the 3-GPU case as a user runs it (a fresh process: startup,
the plan, the report printed), with its default workers, with `--workers 1`, and with
each `PYTHONPATH` given (another build: an earlier commit's `src`, a compiled wheel
unpacked), K times each (default 5), interleaved: each run's wall and CPU seconds (the
process and its workers), the fastest of each, and the load average before and after.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from llmsizer.sizing import probe
from llmsizer.sizing.inputs import usecase_from_mapping
from llmsizer.sizing.plan import plan
from llmsizer.specs import get_gpu, get_model
from llmsizer.sweep import open_sweep, usable_cpus

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "sizing"
NAMES = ("llama3_8b_3gpus", "llama3_8b_h100", "nemo43b_dgx_h100", "azure_chat_llama31_70b")
THREE_GPUS = {"h100-sxm": 3.0, "a100-sxm-80gb": 2.0, "l40s": 1.0}  # $/GPU-hour, illustrative


def usecase_data(name: str) -> dict[str, Any]:
    """The use case `name` as a mapping (an example file, or the 3-GPU case built on one)."""
    if name != "llama3_8b_3gpus":
        return dict(yaml.safe_load(Path(f"{name}.yaml").read_text()))
    data = dict(yaml.safe_load(Path("llama3_8b_h100.yaml").read_text()))
    cands = {k: v for k, v in data["candidates"].items() if k != "precisions"}
    data["candidates"] = {**cands, "gpus": list(THREE_GPUS)}
    source = "illustrative cloud price, not a quote"
    data["prices"] = {g: {"usd_per_gpu_hour": p, "source": source} for g, p in THREE_GPUS.items()}
    return data


def count_steps() -> list[int]:
    """Make every probe's simulation add its engine steps to the list returned (one total):
    whole runs, and runs watched for an early stop (`sizing.early_stop`) as far as they ran."""
    steps = [0]
    run, watched = probe.run_instance, probe.run_watched

    def counted(*args: Any, **kwargs: Any) -> Any:
        result = run(*args, **kwargs)
        steps[0] += result.steps.num_steps
        return result

    def counted_watched(*args: Any, **kwargs: Any) -> Any:
        result, stopped = watched(*args, **kwargs)
        steps[0] += result.steps.num_steps
        return result, stopped

    probe.run_instance = counted  # type: ignore[assignment]
    probe.run_watched = counted_watched  # type: ignore[assignment]
    return steps


def timed(
    name: str, levers: bool, steps: list[int], workers: int = 1
) -> tuple[Any, float, float, int]:
    """A plan of `name` (with or without the lever table) on `workers` processes: result,
    wall s, CPU s (this process and its workers), steps (this process's)."""
    data = usecase_data(name)
    if not levers:
        data["search"] = {**data.get("search", {}), "levers": False}
    usecase = usecase_from_mapping(data)
    start, cpu, steps[0] = time.perf_counter(), _cpu_s(), 0
    with open_sweep(workers) as sweep:
        result = plan(usecase, sweep=sweep)
    return result, time.perf_counter() - start, _cpu_s() - cpu, steps[0]


def _cpu_s() -> float:
    """CPU seconds of this process and of its children that have ended (a sweep's workers,
    once its pool is closed; a `--cli` run)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def cli(repeat: int, others: list[str]) -> None:
    """`llmsizer plan` on the 3-GPU case, default workers and one, and each of `others`
    (`PYTHONPATH`s of other builds, such as an earlier commit's `src`), interleaved."""
    usecase = Path(tempfile.mkdtemp()) / "llama3_8b_3gpus.yaml"
    usecase.write_text(yaml.safe_dump(usecase_data("llama3_8b_3gpus")))
    command = [sys.executable, "-c", "from llmsizer.cli import main; main()", "plan", str(usecase)]
    here = os.environ.get("PYTHONPATH", "")
    modes = {
        f"default ({usable_cpus()} CPUs)": ([], here),
        "--workers 1": (["--workers", "1"], here),
    }
    modes |= {f"PYTHONPATH={path}": ([], path) for path in others}
    runs: dict[str, list[tuple[float, float]]] = {mode: [] for mode in modes}
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'llmsizer plan, 3 GPUs':<34} {'run':>4} {'wall s':>7} {'CPU s':>7}")
    for i in range(repeat):
        for mode, (flags, path) in modes.items():
            env = {**os.environ, "PYTHONPATH": path}
            start, cpu = time.perf_counter(), _cpu_s()
            subprocess.run([*command, *flags], check=True, stdout=subprocess.DEVNULL, env=env)
            runs[mode].append((time.perf_counter() - start, _cpu_s() - cpu))
            print(f"{mode:<34} {i + 1:>4} {runs[mode][-1][0]:>7.2f} {runs[mode][-1][1]:>7.2f}")
    for mode, timings in runs.items():
        wall, cpu = min(w for w, _ in timings), min(c for _, c in timings)
        print(f"{mode:<34} {'best':>4} {wall:>7.2f} {cpu:>7.2f}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def levers_cost(names: list[str], steps: list[int], repeats: int = 1) -> None:
    """Each example without and with the lever table, `repeats` pairs interleaved (the
    order alternating, so a machine's load drifting hits both alike): engine steps (exact)
    and CPU seconds (`time.process_time`, median of the pairs), and the ratios; with
    repeats, the spread of the pairs' CPU ratios (min-max)."""
    head = f"{'example':<26} {'steps without':>14} {'with':>10} {'x':>6} {'CPU s without':>14}"
    print(f"{head} {'with':>6} {'x':>6}" + (f" {'x min-max':>11}" if repeats > 1 else ""))
    for name in names:
        cpus: dict[bool, list[float]] = {False: [], True: []}
        counted: dict[bool, int] = {}
        for i in range(repeats):
            for levers in (False, True) if i % 2 == 0 else (True, False):
                _, _, cpu, counted[levers] = timed(name, levers, steps)
                cpus[levers].append(cpu)
        steps0, steps1 = counted[False], counted[True]
        cpu0, cpu1 = statistics.median(cpus[False]), statistics.median(cpus[True])
        row = f"{name:<26} {steps0:>14,} {steps1:>10,} {steps1 / steps0:>6.2f} {cpu0:>14.2f}"
        row += f" {cpu1:>6.2f} {cpu1 / cpu0:>6.2f}"
        if repeats > 1:
            ratios = [b / a for a, b in zip(cpus[False], cpus[True], strict=True)]
            row += f" {min(ratios):>5.2f}-{max(ratios):<5.2f}"
        print(row, flush=True)


def _option(args: list[str], flag: str, default: int) -> tuple[int, list[str]]:
    """The value of `flag N` in `args` (else `default`), and `args` without it."""
    if flag not in args:
        return default, args
    i = args.index(flag)
    return int(args[i + 1]), args[:i] + args[i + 2 :]


def main(args: list[str]) -> None:
    workers, args = _option(args, "--workers", 1)
    repeat, args = _option(args, "--repeat", 5)
    levers = "--no-levers" not in args
    names = [a for a in args if not a.startswith("--")]
    os.chdir(EXAMPLES)
    if "--cli" in args:
        cli(repeat, names)
        return
    get_gpu("h100-sxm"), get_model("llama-3-8b")  # catalogs loaded before timing
    steps = count_steps()
    if "--levers-cost" in args:
        repeats = int(args[args.index("--repeat") + 1]) if "--repeat" in args else 1
        names = [n for n in names if not n.isdigit()]
        levers_cost(names or list(NAMES), steps, repeats)
        return
    head = f"{'example':<26} {'wall s':>8} {'CPU s':>8} {'configs':>8} {'points':>7}"
    print(f"{head} {'steps':>10}   (workers: {workers})")
    for name in names or NAMES:
        result, seconds, cpu, num_steps = timed(name, levers, steps, workers)
        points = sum(len(r.points) + len(r.curve) for r in result.results)
        row = f"{name:<26} {seconds:>8.1f} {cpu:>8.1f} {len(result.results):>8} {points:>7}"
        print(f"{row} {num_steps:>10,}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
