"""`llmsizer simulate`: run a scenario through the simulator, print and write the results."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from llmsizer.calibrate.step_calibration import KIND as FITTED_STEP_COST
from llmsizer.calibrate.step_calibration import calibration_kind
from llmsizer.cli.common import (
    OVERWRITE_HELP,
    dashed,
    err,
    field_help,
    given_flags,
    out,
    progress_bar,
    put,
    require_plots,
    write_json,
)
from llmsizer.config import FixedStepCostSpec, GpuStepCostSpec, Scenario, load_scenario
from llmsizer.errors import name_flags
from llmsizer.fleet import ROUTERS, FleetResult, simulate_fleet
from llmsizer.metrics import summarize
from llmsizer.output import atomic_path, refuse_existing
from llmsizer.records import write_records
from llmsizer.sim import Engine, EngineConfig, SimResult
from llmsizer.workload import Workload, WorkloadSpec, make_workload

REPLICAS_HELP = (
    "Simulate a fleet of this many identical instances behind --router (>= 1); records "
    "then say which instance served each request."
)
ROUTER_HELP = "How a fleet routes requests: " + ", ".join(ROUTERS) + " (default round_robin)."
ENGINE_KEYS = ("engine", "batching", "max_num_seqs", "max_num_batched_tokens", "num_gpu_blocks")
WORKLOAD_KEYS = ("arrival", "num_requests", "request_rate", "burstiness", "concurrency", "isl")
GPU_KEYS = ("model", "gpu", "precision", "kv_cache_dtype", "sparsity", "calibration")
FLAGS = {  # field path -> flag, for errors (a step cost's kind is the union's tag)
    **dashed(*ENGINE_KEYS, "block_size", section="engine."),
    **dashed(section="engine.", enable_chunked_prefill="--chunked-prefill"),
    **dashed(section="engine.", enable_prefix_caching="--prefix-caching"),
    **dashed(*WORKLOAD_KEYS, "osl", "trace", "time_scale", "seed", section="workload."),
    **dashed("step_time_ms", "prefill_ticks", section="step_cost.fixed."),
    **dashed(*GPU_KEYS, section="step_cost.gpu.", tensor_parallel_size="--tp"),
    **dashed(section="step_cost.gpu.", pipeline_parallel_size="--pp"),
    **dashed(section="step_cost.gpu.", speculative="--num-speculative-tokens"),
    **dashed("calibration", section="step_cost.calibrated."),
}


def workload_of(scenario: Scenario, flags: Mapping[str, str]) -> Workload:
    """The scenario's workload; a problem found in building it names the `flags` given."""
    try:
        return make_workload(scenario.workload)
    except ValueError as e:
        raise ValueError(name_flags(str(e), flags, under=["workload"])) from e


def run_fleet(
    scenario: Scenario, replicas: int, router: str, flags: Mapping[str, str]
) -> tuple[FleetResult, dict[str, float]]:
    """The scenario's engine `replicas` times behind `router`, on one workload."""
    if replicas < 1:
        raise ValueError(f"--replicas must be >= 1, got {replicas}")
    workload = workload_of(scenario, flags)
    engine = scenario.build_engine(workload)
    if not isinstance(engine, Engine):  # a speculating engine maps steps to tokens per run
        raise ValueError("--replicas does not take speculative decoding yet: simulate one instance")
    result = simulate_fleet([engine] * replicas, workload, router, seed=scenario.workload.seed)
    slo = scenario.slo.build() if scenario.slo else None
    gpus = scenario.gpus_per_instance * replicas
    summary = summarize(result.records, num_gpus=gpus, num_instances=replicas, slo=slo)
    return result, summary


def run_scenario(
    scenario: Scenario, flags: Mapping[str, str]
) -> tuple[SimResult, dict[str, float]]:
    workload = workload_of(scenario, flags)
    engine = scenario.build_engine(workload)
    with progress_bar("simulating") as progress:
        result = engine.run(workload, progress)
    slo = scenario.slo.build() if scenario.slo else None
    summary = summarize(result.records, num_gpus=scenario.gpus_per_instance, slo=slo)
    return result, summary


def simulate(
    scenario_file: Annotated[
        Path | None, typer.Argument(help="Scenario YAML (workload, engine, step_cost, slo).")
    ] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write the summary as JSON.")
    ] = None,
    records_out: Annotated[
        Path | None, typer.Option("--records", help="Write one row per request: .csv or .jsonl.")
    ] = None,
    plot: Annotated[Path | None, typer.Option(help="Write the timeline picture (PNG).")] = None,
    html: Annotated[Path | None, typer.Option(help="Write an interactive HTML report.")] = None,
    overwrite: Annotated[bool, typer.Option(help=OVERWRITE_HELP)] = False,
    engine: Annotated[str | None, typer.Option(help=field_help(EngineConfig, "engine"))] = None,
    batching: Annotated[str | None, typer.Option(help=field_help(EngineConfig, "batching"))] = None,
    max_num_seqs: Annotated[
        int | None, typer.Option(help=field_help(EngineConfig, "max_num_seqs"))
    ] = None,
    max_num_batched_tokens: Annotated[
        int | None, typer.Option(help=field_help(EngineConfig, "max_num_batched_tokens"))
    ] = None,
    chunked_prefill: Annotated[
        bool | None,
        typer.Option(
            "--chunked-prefill/--no-chunked-prefill",
            help=field_help(EngineConfig, "enable_chunked_prefill"),
        ),
    ] = None,
    prefix_caching: Annotated[
        bool | None,
        typer.Option(
            "--prefix-caching/--no-prefix-caching",
            help=field_help(EngineConfig, "enable_prefix_caching"),
        ),
    ] = None,
    num_gpu_blocks: Annotated[
        int | None, typer.Option(help=field_help(EngineConfig, "num_gpu_blocks"))
    ] = None,
    block_size: Annotated[
        int | None, typer.Option(help=field_help(EngineConfig, "block_size"))
    ] = None,
    arrival: Annotated[str | None, typer.Option(help=field_help(WorkloadSpec, "arrival"))] = None,
    num_requests: Annotated[
        int | None, typer.Option(help=field_help(WorkloadSpec, "num_requests"))
    ] = None,
    request_rate: Annotated[
        float | None, typer.Option(help=field_help(WorkloadSpec, "request_rate"))
    ] = None,
    burstiness: Annotated[
        float | None, typer.Option(help=field_help(WorkloadSpec, "burstiness"))
    ] = None,
    concurrency: Annotated[
        int | None, typer.Option(help=field_help(WorkloadSpec, "concurrency"))
    ] = None,
    isl: Annotated[int | None, typer.Option(help="Prompt length in tokens (fixed).")] = None,
    osl: Annotated[int | None, typer.Option(help="Output length in tokens (fixed).")] = None,
    trace: Annotated[Path | None, typer.Option(help=field_help(WorkloadSpec, "trace"))] = None,
    time_scale: Annotated[
        float | None, typer.Option(help=field_help(WorkloadSpec, "time_scale"))
    ] = None,
    seed: Annotated[int | None, typer.Option(help=field_help(WorkloadSpec, "seed"))] = None,
    step_time_ms: Annotated[
        float | None, typer.Option(help=field_help(FixedStepCostSpec, "step_time_ms"))
    ] = None,
    prefill_ticks: Annotated[
        int | None, typer.Option(help=field_help(FixedStepCostSpec, "prefill_ticks"))
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            help="Price steps with the GPU model: " + field_help(GpuStepCostSpec, "model")
        ),
    ] = None,
    gpu: Annotated[str | None, typer.Option(help=field_help(GpuStepCostSpec, "gpu"))] = None,
    precision: Annotated[
        str | None, typer.Option(help=field_help(GpuStepCostSpec, "precision"))
    ] = None,
    kv_cache_dtype: Annotated[
        str | None, typer.Option(help=field_help(GpuStepCostSpec, "kv_cache_dtype"))
    ] = None,
    sparsity: Annotated[
        bool | None, typer.Option(help=field_help(GpuStepCostSpec, "sparsity"))
    ] = None,
    num_speculative_tokens: Annotated[
        int | None,
        typer.Option(help="Speculative decoding with an EAGLE/MTP-style head: draft tokens k."),
    ] = None,
    tp: Annotated[
        int | None,
        typer.Option(
            "--tp",
            "--tensor-parallel-size",
            help=field_help(GpuStepCostSpec, "tensor_parallel_size"),
        ),
    ] = None,
    pp: Annotated[
        int | None,
        typer.Option(
            "--pp",
            "--pipeline-parallel-size",
            help=field_help(GpuStepCostSpec, "pipeline_parallel_size"),
        ),
    ] = None,
    calibration: Annotated[
        Path | None, typer.Option(help=field_help(GpuStepCostSpec, "calibration"))
    ] = None,
    replicas: Annotated[int | None, typer.Option(help=REPLICAS_HELP)] = None,
    router: Annotated[str | None, typer.Option(help=ROUTER_HELP)] = None,
) -> None:
    """Simulate a serving engine on a workload and print vLLM-style metrics.

    With no arguments: 1000 requests, Poisson at 1 req/s, ISL 1000, OSL 100, continuous
    batching, 10 ms steps. `--model` and `--gpu` price steps with the GPU performance model
    instead (KV-cache size from GPU memory). Writes nothing unless asked.
    """
    if plot is not None and plot.suffix.lower() != ".png":
        raise ValueError(f"--plot {plot}: the timeline picture is a PNG; give a .png file")
    refuse_existing((json_out, records_out, plot, html), overwrite=overwrite)
    require_plots(plot, html)
    o: dict[str, Any] = {}
    engine_flags: tuple[tuple[str, Any], ...] = (
        ("engine", engine),
        ("batching", batching),
        ("max_num_seqs", max_num_seqs),
        ("max_num_batched_tokens", max_num_batched_tokens),
        ("enable_chunked_prefill", chunked_prefill),
        ("enable_prefix_caching", prefix_caching),
        ("num_gpu_blocks", num_gpu_blocks),
        ("block_size", block_size),
    )
    for key, value in engine_flags:
        put(o, "engine", key, value)
    workload_flags: tuple[tuple[str, Any], ...] = (
        ("arrival", arrival),
        ("num_requests", num_requests),
        ("request_rate", request_rate),
        ("burstiness", burstiness),
        ("concurrency", concurrency),
        ("isl", isl),
        ("osl", osl),
        ("trace", trace),
        ("time_scale", time_scale),
        ("seed", seed),
    )
    for key, value in workload_flags:
        put(o, "workload", key, value)
    if trace is not None and arrival is None:
        put(o, "workload", "arrival", "trace")
    if step_time_ms is not None or prefill_ticks is not None:
        o["step_cost"] = {"kind": "fixed"}
        put(o, "step_cost", "step_time_ms", step_time_ms)
        put(o, "step_cost", "prefill_ticks", prefill_ticks)
    gpu_flags: dict[str, Any] = {
        "model": model,
        "gpu": gpu,
        "precision": precision,
        "kv_cache_dtype": kv_cache_dtype,
        "sparsity": sparsity,
        "speculative": None
        if num_speculative_tokens is None
        else {"num_speculative_tokens": num_speculative_tokens},
        "tensor_parallel_size": tp,
        "pipeline_parallel_size": pp,
        "calibration": calibration,
    }
    fitted = calibration is not None and calibration_kind(calibration) == FITTED_STEP_COST
    if fitted and model is None and gpu is None:
        # a step cost fitted to a server's measurements (`llmsizer calibrate`)
        o["step_cost"] = {"kind": "calibrated", "calibration": calibration}
    elif any(v is not None for v in gpu_flags.values()):
        o.setdefault("step_cost", {})["kind"] = "gpu"
        for key, value in gpu_flags.items():
            put(o, "step_cost", key, value)
    fixed = step_time_ms is not None or prefill_ticks is not None
    if fixed and o["step_cost"]["kind"] != "fixed":
        raise ValueError(
            "--step-time-ms and --prefill-ticks set a fixed step time; --model, --gpu and "
            "the other GPU flags price steps with the GPU model: give one or the other"
        )
    flags = given_flags(FLAGS, o, every=scenario_file is None)
    scenario = load_scenario(scenario_file, o, flags)
    if replicas is not None or router is not None:
        if plot is not None or html is not None:
            raise ValueError(
                "--plot and --html draw one engine's timeline; for a fleet (--replicas, "
                "--router) write --records and --json"
            )
        fleet, summary = run_fleet(
            scenario, 1 if replicas is None else replicas, router or "round_robin", flags
        )
        _render_fleet(scenario, fleet, summary, json_out, records_out, router or "round_robin")
        return
    result, summary = run_scenario(scenario, flags)
    _render_simulation(scenario, result, summary, json_out, records_out, plot, html)


def _render_simulation(
    scenario: Scenario,
    result: SimResult,
    summary: dict[str, float],
    json_out: Path | None,
    records_out: Path | None,
    plot: Path | None,
    html: Path | None,
) -> None:
    from llmsizer import report

    title = f"llmsizer simulate: {scenario.name}"
    parameters = {
        "workload": scenario.workload.describe(),
        "engine": scenario.engine.model_dump(exclude_none=True),
        "step cost": scenario.step_cost.model_dump(),
        "engine steps": result.steps.num_steps,
        "preemptions": result.num_preemptions,
        "peak KV blocks used": result.peak_kv_blocks_used,
    }
    report.print_summary(out, summary, title=title)
    out.print(
        f"engine steps: {result.steps.num_steps}   preemptions: {result.num_preemptions}   "
        f"peak KV blocks: {result.peak_kv_blocks_used}"
        + (f" of {result.num_kv_blocks}" if result.num_kv_blocks else ""),
        highlight=False,
    )
    padded = result.holds_slots_until_batch_end
    if json_out:
        write_json(json_out, {"scenario": scenario.model_dump(mode="json"), **summary})
    if records_out:
        with atomic_path(records_out) as tmp:  # a kill leaves no half file
            write_records(result.records, tmp)
    if plot:
        report.timeline_png(
            result.records,
            plot,
            padded=padded,
            max_num_seqs=scenario.engine.max_num_seqs,
            title=title,
        )
    if html:
        report.write_html_report(
            html,
            title=title,
            parameters=parameters,
            summary=summary,
            records=result.records,
            padded=padded,
            max_num_seqs=scenario.engine.max_num_seqs,
        )
    for path in (records_out, plot, html):
        if path:
            err.print(f"wrote {path}", highlight=False)


def _render_fleet(
    scenario: Scenario,
    fleet: FleetResult,
    summary: dict[str, float],
    json_out: Path | None,
    records_out: Path | None,
    router: str,
) -> None:
    from llmsizer import report

    replicas = len(fleet.instances)
    title = f"llmsizer simulate: {scenario.name}, {replicas} instances, router {router}"
    report.print_summary(out, summary, title=title)
    counts = fleet.num_requests_per_instance
    out.print(
        f"requests per instance: min {counts.min()}  max {counts.max()}  "
        f"(max / mean {counts.max() / counts.mean():.2f})   preemptions: "
        f"{sum(i.num_preemptions for i in fleet.instances)}",
        highlight=False,
    )
    if json_out:
        fleet_keys = {
            "replicas": replicas,
            "router": router,
            "requests_per_instance": counts.tolist(),
        }
        payload = {"scenario": scenario.model_dump(mode="json"), **fleet_keys, **summary}
        write_json(json_out, payload)
    if records_out:
        with atomic_path(records_out) as tmp:
            write_records(fleet.records, tmp)
        err.print(f"wrote {records_out}", highlight=False)
