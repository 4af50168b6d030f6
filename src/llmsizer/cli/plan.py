"""`llmsizer plan`: from a use case to GPUs, servers and cost, with the reasons."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from llmsizer.cli.common import (
    OVERWRITE_HELP,
    RayAddress,
    RayFlag,
    err,
    field_help,
    given_flags,
    out,
    progress_bar,
    require_plots,
    sweep_for,
)
from llmsizer.cli.plan_disagg import print_comparison, with_disaggregated
from llmsizer.config import load_efficiency, load_usecase
from llmsizer.errors import import_extra
from llmsizer.fleet import ROUTERS
from llmsizer.output import refuse_existing, write_atomic
from llmsizer.report.plan_text import print_plan
from llmsizer.sizing.disagg_spec import DisaggregatedSpec
from llmsizer.sizing.fleet_check import check_plan_router
from llmsizer.sizing.inputs import FLAG_FIELDS, usecase_dict
from llmsizer.sizing.plan import plan as run_plan
from llmsizer.sizing.plan_data import plan_data
from llmsizer.sizing.result import PlanResult

Opt = typer.Option


def plan(
    usecase_file: Annotated[Path | None, typer.Argument(help="Use-case YAML.")] = None,
    model: Annotated[str | None, Opt(help="Model: catalog name, HF id, config.json path.")] = None,
    isl: Annotated[float | None, Opt(help="Input length per request (user text part).")] = None,
    osl: Annotated[float | None, Opt(help="Output length per request.")] = None,
    words: Annotated[bool, Opt(help="Lengths are in words, not tokens (0.75 word/token).")] = False,
    peak_rps: Annotated[float | None, Opt(help="Peak requests per second to serve.")] = None,
    average_rps: Annotated[
        float | None, Opt(help="Average req/s; the plan sizes for its Poisson peak.")
    ] = None,
    daily_active_users: Annotated[int | None, Opt(help="Daily active users.")] = None,
    ttft_ms: Annotated[float | None, Opt(help="TTFT limit in ms.")] = None,
    tpot_ms: Annotated[float | None, Opt(help="TPOT (ITL) limit in ms.")] = None,
    e2el_ms: Annotated[float | None, Opt(help="End-to-end latency limit in ms.")] = None,
    percentile: Annotated[float | None, Opt(help="Percentile the limits apply at (95).")] = None,
    arrival: Annotated[str | None, Opt(help="Arrivals: poisson, gamma or trace.")] = None,
    burstiness: Annotated[
        float | None, Opt(help="Gamma arrivals' burstiness (vLLM's): 1 Poisson, < 1 burstier.")
    ] = None,
    arrival_trace: Annotated[
        Path | None, Opt(help="Trace whose inter-arrival gaps to scale to the rate.")
    ] = None,
    gpu: Annotated[str | None, Opt(help="Candidate GPUs, comma separated.")] = None,
    precision: Annotated[
        str | None,
        Opt(
            help="Candidate precisions, comma separated; lossless (default): each GPU's bf16 "
            "and native fp8; auto: also fp4 and int4, which need an accuracy check."
        ),
    ] = None,
    sparsity: Annotated[str | None, Opt(help="2:4 sparsity to try: off, on, or off,on.")] = None,
    tp: Annotated[str | None, Opt(help="Candidate tensor-parallel sizes, e.g. 1,2,4,8.")] = None,
    pp: Annotated[str | None, Opt(help="Candidate pipeline-parallel sizes.")] = None,
    engine: Annotated[str | None, Opt(help="Candidate engine presets: vllm,trtllm,sglang.")] = None,
    headroom: Annotated[float | None, Opt(help="Spare capacity, e.g. 0.2 for 20 %.")] = None,
    offline: Annotated[bool, Opt(help="Throughput only, no latency limits.")] = False,
    sequential: Annotated[bool, Opt(help="Answers used whole: the E2E limit matters.")] = False,
    trace: Annotated[Path | None, Opt(help="Trace whose length distribution to use.")] = None,
    calibration: Annotated[Path | None, Opt(help="Calibration file (efficiency factors).")] = None,
    json_out: Annotated[Path | None, Opt("--json", help="Write the plan as JSON.")] = None,
    html: Annotated[Path | None, Opt(help="Write a self-contained HTML report.")] = None,
    overwrite: Annotated[bool, Opt(help=OVERWRITE_HELP)] = False,
    router: Annotated[
        str | None,
        Opt(
            help="Check the answer on the whole fleet behind this router ("
            + ", ".join(ROUTERS)
            + "); add instances when its imbalance breaks a limit."
        ),
    ] = None,
    workers: Annotated[
        int | None, Opt(min=1, help="Local processes for the plan's parts (default: all CPUs).")
    ] = None,
    ray: RayFlag = False,
    ray_address: RayAddress = None,
    disaggregated: Annotated[str | None, Opt(help=field_help(DisaggregatedSpec, "mode"))] = None,
    kv_link: Annotated[str | None, Opt(help=field_help(DisaggregatedSpec, "kv_link"))] = None,
    pd_ratio: Annotated[str | None, Opt(help=field_help(DisaggregatedSpec, "ratio"))] = None,
) -> None:
    """Size a deployment: the best configuration per GPU, instances, GPUs, servers and cost.

    Give a use-case YAML (see examples/sizing/) and/or flags; flags override the file.
    """
    flags = usecase_dict(
        model=model, isl=isl, osl=osl, words=words, peak_rps=peak_rps, average_rps=average_rps,
        daily_active_users=daily_active_users, ttft_ms=ttft_ms, tpot_ms=tpot_ms,
        e2el_ms=e2el_ms, percentile=percentile, arrival=arrival, burstiness=burstiness,
        arrival_trace=arrival_trace, gpu=gpu, precision=precision, sparsity=sparsity,
        tp=tp, pp=pp,
        engine=engine, headroom=headroom, offline=offline, sequential=sequential, trace=trace,
    )  # fmt: skip
    refuse_existing((json_out, html), overwrite=overwrite)
    require_plots(None, html)
    if router is not None:
        check_plan_router(router)
    table = {path: "--" + flag.replace("_", "-") for flag, path in FLAG_FIELDS.items()}
    table |= {"limits": "--ttft-ms/--tpot-ms/--e2el-ms", "mode": "--offline"}
    table |= {"unit": "--words", "streaming": "--sequential"}
    table |= {"load": "--peak-rps/--average-rps/--daily-active-users", "input": "--isl"}
    usecase = with_disaggregated(
        load_usecase(usecase_file, flags, given_flags(table, flags, every=usecase_file is None)),
        mode=disaggregated,
        kv_link=kv_link,
        ratio=pd_ratio,
    )
    efficiency = load_efficiency(calibration)
    with progress_bar("sizing") as progress, sweep_for(workers, ray, ray_address) as sweep:
        result = run_plan(usecase, efficiency=efficiency, progress=progress, sweep=sweep)
    data = plan_data(result)
    print_plan(data, out)
    if router is not None:
        data["fleet_check"] = _fleet_check(result, router, calibration)
    if usecase.disaggregated.enabled:
        data["disaggregated"] = _disaggregated(result, router, calibration)
    if json_out:
        write_atomic(json_out, json.dumps(data, indent=1) + "\n")
        err.print(f"wrote {json_out}", highlight=False)
    if html:
        report = import_extra("llmsizer.report.plan_html", "plots", "plan --html")  # plotly
        write_atomic(html, report.plan_html(data))
        err.print(f"wrote {html}", highlight=False)


def _fleet_check(result: PlanResult, router: str, calibration: Path | None) -> dict[str, Any]:
    """`plan --router`: simulate the winning fleet behind `router`; print and return it."""
    from llmsizer.sizing.fleet_check import check_plan_fleet

    efficiency = load_efficiency(calibration)
    check = check_plan_fleet(result, router, None if efficiency is None else lambda _: efficiency)
    out.print(f"Fleet check ({router})", style="bold", highlight=False)
    for p in check.points:
        judged = ", ".join(
            f"{lim.describe()}: {lim.value_s(p.latencies) * 1e3:,.0f} ms"
            for lim in result.limits.limits()
        )
        verdict = "meets" if p.meets else "misses"
        out.print(
            f"  {p.num_instances} instances: {verdict} ({judged}; busiest {p.imbalance:.2f}x mean)",
            highlight=False,
        )
    out.print(f"- {check.reason}", highlight=False)
    return {
        "router": check.router,
        "planned_instances": check.planned_instances,
        "num_instances": check.num_instances,
        "reason": check.reason,
        "points": [
            {
                "num_instances": p.num_instances,
                "meets": p.meets,
                "imbalance": p.imbalance,
                **{
                    lim.describe(): lim.value_s(p.latencies) * 1e3 for lim in result.limits.limits()
                },
            }
            for p in check.points
        ],
    }


def _disaggregated(
    result: PlanResult, router: str | None, calibration: Path | None
) -> dict[str, Any]:
    """`plan --disaggregated auto|on`: the disaggregated search beside the aggregated answer."""
    from llmsizer.sizing.disagg_data import comparison_data
    from llmsizer.sizing.disagg_plan import compare_disaggregated

    efficiency = load_efficiency(calibration)
    comparison = compare_disaggregated(
        result,
        result.usecase.disaggregated,
        None if efficiency is None else lambda _: efficiency,
        router or "least_outstanding",
    )
    print_comparison(comparison, result.limits)
    return comparison_data(comparison, result.limits)
