"""Plan speed: wall time of `plan` on the sizing examples (issue 11: the lever search must
stay within 2x of the plan before it) and on `llama3_8b_3gpus` (issue 13: `plan` for 3 GPUs
<= 2 s wall): the course's Llama 3 8B case (`llama3_8b_h100.yaml`) over H100 SXM, A100 SXM
80 GB and L40S, priced 3, 2 and 1 $/GPU-hour (illustrative), with the default precisions
(`lossless`: bf16, and fp8 on H100 and L40S; the example itself pins bf16).

    .venv/bin/python bench/plan_speed.py [--no-levers | --levers-cost [--repeat N]]
        [--workers N] [NAME ...]
    .venv/bin/python bench/plan_speed.py --levers-cost [--repeat N] [--rounds R] [NAME ...]
        --against PYTHONPATH ...
    .venv/bin/python bench/plan_speed.py --by-kind [--no-levers] [NAME ...]
    .venv/bin/python bench/plan_speed.py --cli [--repeat K] [PYTHONPATH ...]

`--no-levers` leaves out the "what each lever buys" search (`search.levers: false`), to
separate its cost from the rest of the plan's. `--levers-cost` runs each example both ways
and prints the lever table's cost (issue 11: at most 2x): engine steps and CPU seconds with
the table over without it; `--repeat N` runs N pairs interleaved and gives the median CPU
and the spread of the pairs' ratios (CPU on a shared machine moves +-20 % run to run).
`--against PYTHONPATH ...` (the last flag, with `--levers-cost`) compares builds: each
example's `--levers-cost` run in a fresh process on this `PYTHONPATH` and on each one given
(an earlier commit's `src`: `git archive <commit> src | tar -x -C /tmp/base`), `--rounds R`
rounds (default 2), the order alternating, with the load average: before and after in one
run.
`--by-kind` runs one plan of each example and prints where its engine steps went: per part
(the lever table's searches, or the rest of the plan), configuration, and kind of run
(capacity, plain, watched for an early stop; speculating), the most first.

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

import importlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from llmsizer.sizing import probe
from llmsizer.sizing.inputs import usecase_from_mapping
from llmsizer.sizing.plan import plan
from llmsizer.specs import get_gpu, get_model
from llmsizer.sweep import open_sweep, usable_cpus

plan_module = importlib.import_module("llmsizer.sizing.plan")  # the module, not `plan`

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


class StepCount:
    """Engine steps of every probe's simulation in this process: `total`, and `by_kind`
    keyed by (part of the plan, configuration, kind of run): the part is `levers` inside
    the lever table, else `plan`; the kind is `capacity` (all requests at t = 0), `plain`
    (a whole Poisson run), or `watched` (a run watched for an early stop,
    `sizing.early_stop`, counted as far as it ran), with `speculating` added for probes of
    speculative decoding (their steps are verify steps)."""

    def __init__(self) -> None:
        self.total = 0
        self.by_kind: Counter[tuple[str, str, str]] = Counter()
        self.part = "plan"
        self.probe: probe.Probe | None = None  # the probe whose `_point` is running

    def add(self, of: probe.Probe | None, kind: str, num_steps: int) -> None:
        self.total += num_steps
        label = "?" if of is None else of.instance.spec.label()
        if of is not None and of.speculative is not None:
            kind += ", speculating"
        self.by_kind[self.part, label, kind] += num_steps

    def reset(self) -> None:
        self.total, self.by_kind = 0, Counter()


def count_steps() -> StepCount:
    """Make every probe's simulation add its engine steps to the count returned: whole
    runs, and runs watched for an early stop as far as they ran (`StepCount`)."""
    count = StepCount()
    point, watched = probe.Probe._point, getattr(probe, "run_watched", None)
    watched_run = getattr(probe, "WatchedRun", None)
    advance = None if watched_run is None else watched_run.advance
    table = plan_module.lever_table

    def counted(run: Any) -> Any:
        def counted_run(self: probe.Probe, arrival_s: Any) -> Any:
            result = run(self, arrival_s)
            kind = "capacity" if not arrival_s.any() else "plain"
            count.add(self, kind, result.steps.num_steps)
            return result

        return counted_run

    def counted_point(self: probe.Probe, *args: Any, **kwargs: Any) -> Any:
        count.probe = self
        try:
            return point(self, *args, **kwargs)
        finally:
            count.probe = None

    def counted_watched(*args: Any, **kwargs: Any) -> Any:
        result, stopped = watched(*args, **kwargs)
        count.add(count.probe, "watched", result.steps.num_steps)
        return result, stopped

    def counted_slice(run: Any) -> Any:
        before = run.num_steps
        try:
            return advance(run)
        finally:
            count.add(count.probe, "watched", run.num_steps - before)

    def counted_table(*args: Any, **kwargs: Any) -> Any:
        count.part = "levers"
        try:
            return table(*args, **kwargs)
        finally:
            count.part = "plan"

    probe.Probe._simulate = counted(probe.Probe._simulate)  # type: ignore[method-assign]
    if hasattr(probe.Probe, "_run_in_steps"):  # a speculating capacity run (an earlier `src`: none)
        probe.Probe._run_in_steps = counted(probe.Probe._run_in_steps)  # type: ignore[method-assign]
    probe.Probe._point = counted_point  # type: ignore[method-assign]
    if watched_run is None:  # an earlier `src`: whole watched runs only
        probe.run_watched = counted_watched  # type: ignore[attr-defined]
    else:  # watched runs a slice at a time, some put aside and resumed, some abandoned
        watched_run.advance = counted_slice
    plan_module.lever_table = counted_table  # type: ignore[assignment]
    return count


def by_kind(names: list[str], count: StepCount, levers: bool) -> None:
    """One plan of each example: its engine steps by part, configuration and kind of run
    (`StepCount`), the most first, with each row's share of the plan's steps."""
    for name in names:
        timed(name, levers, count)
        print(f"{name}: {count.total:,} engine steps")
        print(f"  {'part':<7} {'configuration':<44} {'kind':<22} {'steps':>10} {'share':>6}")
        for (part, label, kind), n in count.by_kind.most_common():
            share = n / count.total
            print(f"  {part:<7} {label:<44} {kind:<22} {n:>10,} {share:>6.1%}")


def timed(
    name: str, levers: bool, steps: StepCount, workers: int = 1
) -> tuple[Any, float, float, int]:
    """A plan of `name` (with or without the lever table) on `workers` processes: result,
    wall s, CPU s (this process and its workers), steps (this process's)."""
    data = usecase_data(name)
    if not levers:
        data["search"] = {**data.get("search", {}), "levers": False}
    usecase = usecase_from_mapping(data)
    steps.reset()
    start, cpu = time.perf_counter(), _cpu_s()
    with open_sweep(workers) as sweep:
        result = plan(usecase, sweep=sweep)
    return result, time.perf_counter() - start, _cpu_s() - cpu, steps.total


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


def levers_cost(names: list[str], steps: StepCount, repeats: int = 1) -> None:
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


def against(names: list[str], others: list[str], rounds: int, repeats: int) -> None:
    """`--levers-cost` of each example in fresh processes, on this build and on each of
    `others` (`PYTHONPATH`s), alternated within each of `rounds` rounds."""
    here = os.environ.get("PYTHONPATH", "")  # resolved before `main` moved to the examples
    builds = {"this build": here, **{p: p for p in others}}
    for name in names:
        for i in range(rounds):
            order = list(builds.items()) if i % 2 == 0 else list(builds.items())[::-1]
            for label, path in order:
                load = os.getloadavg()[0]
                args = ["--levers-cost", "--repeat", str(repeats), name]
                command = [sys.executable, str(Path(__file__).resolve()), *args]
                env = {**os.environ, "PYTHONPATH": path}
                out = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
                print(f"{label:<24} round {i + 1} load {load:5.1f}  {out.stdout.splitlines()[-1]}")


def _option(args: list[str], flag: str, default: int) -> tuple[int, list[str]]:
    """The value of `flag N` in `args` (else `default`), and `args` without it."""
    if flag not in args:
        return default, args
    i = args.index(flag)
    return int(args[i + 1]), args[:i] + args[i + 2 :]


def main(args: list[str]) -> None:
    workers, args = _option(args, "--workers", 1)
    repeat, args = _option(args, "--repeat", 0)  # 0: the mode's default
    rounds, args = _option(args, "--rounds", 2)
    others: list[str] = []
    if "--against" in args:  # the last flag: the builds' PYTHONPATHs follow it
        others, args = args[args.index("--against") + 1 :], args[: args.index("--against")]
    levers = "--no-levers" not in args
    names = [a for a in args if not a.startswith("--")]
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    os.environ["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in paths if p)
    os.chdir(EXAMPLES)
    if "--cli" in args:
        cli(repeat or 5, names)
        return
    get_gpu("h100-sxm"), get_model("llama-3-8b")  # catalogs loaded before timing
    steps = count_steps()
    if "--by-kind" in args:
        by_kind(names or list(NAMES), steps, levers)
        return
    if "--levers-cost" in args and others:
        against(names or list(NAMES), [str(Path(p).resolve()) for p in others], rounds, repeat or 1)
        return
    if "--levers-cost" in args:
        levers_cost(names or list(NAMES), steps, repeat or 1)
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
