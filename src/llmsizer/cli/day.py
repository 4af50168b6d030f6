"""`llmsizer day`: a day replayed on an autoscaled fleet against a fleet fixed at the peak."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from llmsizer.cli.common import OVERWRITE_HELP, err, field_help, out
from llmsizer.fleet import ROUTERS
from llmsizer.fleet.autoscale import Autoscaler
from llmsizer.fleet.day import DayResult, Hourly, day_workload, parse_profile, replay_day
from llmsizer.instance import DeploymentSpec, make_instance
from llmsizer.instance.startup import load_time_s
from llmsizer.output import refuse_existing, write_atomic
from llmsizer.workload import read_trace

Opt = typer.Option
MS = 1e-3


def day(
    model: Annotated[str, Opt(help=field_help(DeploymentSpec, "model"))],
    gpu: Annotated[str, Opt(help=field_help(DeploymentSpec, "gpu"))],
    peak_rps: Annotated[float, Opt(help="The day's peak request rate (req/s).")],
    instances: Annotated[int, Opt(help="The fleet fixed at the peak: instances.")],
    target_in_flight: Annotated[
        float, Opt(help="Autoscaler target: requests in flight per serving instance (KEDA).")
    ],
    storage_gb_s: Annotated[
        float, Opt(help="Bandwidth a new instance reads its weights at, GB/s (start-up delay).")
    ],
    tp: Annotated[int, Opt("--tp", help=field_help(DeploymentSpec, "tensor_parallel_size"))] = 1,
    precision: Annotated[str, Opt(help=field_help(DeploymentSpec, "precision"))] = "bf16",
    kv_cache_dtype: Annotated[
        str | None, Opt(help=field_help(DeploymentSpec, "kv_cache_dtype"))
    ] = None,
    engine: Annotated[str, Opt(help="Engine preset: vllm, trtllm, sglang.")] = "vllm",
    max_model_len: Annotated[int | None, Opt(help="Longest request the engine takes.")] = None,
    trace: Annotated[
        Path | None, Opt(help="Trace whose arrival pattern and lengths are tiled over the day.")
    ] = None,
    isl: Annotated[int | None, Opt(help="Prompt tokens (without --trace).")] = None,
    osl: Annotated[int | None, Opt(help="Output tokens (without --trace).")] = None,
    profile: Annotated[
        str, Opt(help="Daily profile: chat, flat, or fractions of the peak per hour (0.2,1,...).")
    ] = "chat",
    hours: Annotated[float, Opt(help="Hours to replay.")] = 24.0,
    min_instances: Annotated[int, Opt(help="Autoscaler floor.")] = 1,
    max_instances: Annotated[
        int | None, Opt(help="Autoscaler ceiling (default --instances).")
    ] = None,
    interval_s: Annotated[float, Opt(help="Seconds between autoscaler decisions.")] = 30.0,
    cooldown_s: Annotated[float, Opt(help="Seconds after a change before scaling down.")] = 300.0,
    router: Annotated[str, Opt(help="Router: " + ", ".join(ROUTERS) + ".")] = "least_outstanding",
    ttft_ms: Annotated[float | None, Opt(help="TTFT limit (ms) for SLO attainment.")] = None,
    tpot_ms: Annotated[float | None, Opt(help="TPOT limit (ms) for SLO attainment.")] = None,
    usd_per_gpu_hour: Annotated[float | None, Opt(help="Price per GPU hour, for cost.")] = None,
    seed: Annotated[int, Opt(help="Seed of the arrivals and routers.")] = 0,
    json_out: Annotated[Path | None, Opt("--json", help="Write the day as JSON.")] = None,
    plot: Annotated[Path | None, Opt(help="Draw load, instances and p95 TTFT (PNG).")] = None,
    overwrite: Annotated[bool, Opt(help=OVERWRITE_HELP)] = False,
) -> None:
    """Replay a day (a trace's pattern or Poisson under a daily profile scaled to a peak) on
    an autoscaled fleet and on one fixed at the peak: GPU-hours, cost, SLO attainment."""
    refuse_existing((json_out, plot), overwrite=overwrite)
    if instances < 1:
        raise ValueError(
            f"--instances: the fleet fixed at the peak needs at least 1 instance, got {instances}"
        )
    _check(trace, isl, osl, ttft_ms, tpot_ms, usd_per_gpu_hour, storage_gb_s, router)
    shape = parse_profile(profile)
    spec = DeploymentSpec.model_validate(
        {"model": model, "gpu": gpu, "tp": tp, "precision": precision,
         "kv_cache_dtype": kv_cache_dtype, "engine": engine}
    )  # fmt: skip
    source = None if trace is None else read_trace(trace)
    lengths = None if isl is None or osl is None else (isl, osl)
    workload = day_workload(source, shape, peak_rps, hours, seed, lengths)
    longest = int((workload.num_prompt_tokens + workload.num_output_tokens).max(initial=1))
    inst = make_instance(spec, max_model_len=max_model_len or longest)
    startup_s = load_time_s(inst, storage_gb_s * 1e9)
    scaler = Autoscaler(
        target_in_flight=target_in_flight,
        max_instances=max_instances or instances,
        startup_s=startup_s,
        min_instances=min_instances,
        interval_s=interval_s,
        cooldown_s=cooldown_s,
    )
    err.print(f"{workload.num_requests:,} requests; start-up {startup_s:.0f} s", highlight=False)
    res = replay_day(inst.simulator(), workload, instances, scaler, hours=hours, router=router,
                     ttft_s=_s(ttft_ms), tpot_s=_s(tpot_ms), seed=seed)  # fmt: skip
    data = day_data(res, spec, inst.num_gpus, instances, scaler, usd_per_gpu_hour)
    data.update(
        peak_rps=peak_rps, profile=list(shape), hours_replayed=hours, router=router,
        workload=workload.source, num_requests=workload.num_requests, storage_gb_s=storage_gb_s,
        limits={"ttft_ms": ttft_ms, "tpot_ms": tpot_ms},
    )  # fmt: skip
    _print(data)
    if json_out is not None:
        write_atomic(json_out, json.dumps(data, indent=1) + "\n")
        err.print(f"wrote {json_out}", highlight=False)
    if plot is not None:
        from llmsizer.report.day_plot import day_png  # matplotlib: only for --plot

        day_png(data, plot)
        err.print(f"wrote {plot}", highlight=False)


def _s(ms: float | None) -> float | None:
    return None if ms is None else ms * MS


def _check(
    trace: Path | None,
    isl: int | None,
    osl: int | None,
    ttft_ms: float | None,
    tpot_ms: float | None,
    usd: float | None,
    storage_gb_s: float,
    router: str,
) -> None:
    """Bad flag combinations, named, before anything is simulated."""
    if trace is None and (isl is None or osl is None):
        raise ValueError("give --trace, or --isl and --osl for fixed lengths")
    if trace is not None and (isl is not None or osl is not None):
        raise ValueError("--trace gives the lengths: leave --isl and --osl unset")
    for name, v in (("--isl", isl), ("--osl", osl)):
        if v is not None and v < 1:
            raise ValueError(f"{name} must be >= 1, got {v}")
    for name, x in (
        ("--ttft-ms", ttft_ms),
        ("--tpot-ms", tpot_ms),
        ("--storage-gb-s", storage_gb_s),
    ):
        if x is not None and not (math.isfinite(x) and x > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {x}")
    if usd is not None and not (math.isfinite(usd) and usd >= 0):
        raise ValueError(f"--usd-per-gpu-hour must be a finite number >= 0, got {usd}")
    if router not in ROUTERS:
        raise ValueError(f"unknown router {router!r}; choose one of {', '.join(ROUTERS)}")


def _num(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _fleet(h: Hourly, gpus: int, usd: float | None) -> dict[str, Any]:
    gpu_hours = h.instance_hours * gpus
    return {
        "gpu_hours": gpu_hours,
        "usd": None if usd is None else gpu_hours * usd,
        "slo_attainment": _num(h.attainment_day),
        "worst_hour_slo_attainment": _num(float(min(h.attainment, default=math.nan))),
    }


def day_data(
    res: DayResult,
    spec: DeploymentSpec,
    gpus: int,
    fixed: int,
    scaler: Autoscaler,
    usd: float | None,
) -> dict[str, Any]:
    """The replay as plain data: per fleet, GPU-hours, cost, SLO attainment; per hour, the
    load, the autoscaled instances, p95 TTFT and attainment of both (ms at the edge)."""
    f, a = res.fixed, res.autoscaled
    hours = [
        {
            "hour": h,
            "num_requests": int(res.requests[h]),
            "request_rate": float(res.requests[h]) / (3600.0 * res.span_h[h]),
            "autoscaled_instances": float(a.instances[h]),
            "fixed_p95_ttft_ms": _num(f.p95_ttft_s[h] / MS),
            "autoscaled_p95_ttft_ms": _num(a.p95_ttft_s[h] / MS),
            "fixed_slo_attainment": _num(f.attainment[h]),
            "autoscaled_slo_attainment": _num(a.attainment[h]),
        }
        for h in range(res.hours)
    ]
    fixed_data = {"num_instances": fixed, **_fleet(f, gpus, usd)}
    auto = {
        "min_instances": scaler.min_instances,
        "max_instances": scaler.max_instances,
        "target_in_flight": scaler.target_in_flight,
        "interval_s": scaler.interval_s,
        "cooldown_s": scaler.cooldown_s,
        "startup_s": scaler.startup_s,
        **_fleet(a, gpus, usd),
    }
    saved = 1 - auto["gpu_hours"] / fixed_data["gpu_hours"] if fixed_data["gpu_hours"] else None
    return {
        "title": f"{spec.label()}: a day, autoscaled against fixed at the peak",
        "deployment": spec.label(),
        "num_gpus_per_instance": gpus,
        "usd_per_gpu_hour": usd,
        "fixed": fixed_data,
        "autoscaled": auto,
        "gpu_hours_saved_fraction": saved,
        "hours": hours,
    }


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def _print(data: dict[str, Any]) -> None:
    table = Table(title=data["title"])
    for col in ("fleet", "GPU-hours", "cost", "within limits", "worst hour"):
        table.add_column(col, justify="left" if col == "fleet" else "right")
    for key, name in (("fixed", f"fixed ({data['fixed']['num_instances']})"),
                      ("autoscaled", "autoscaled")):  # fmt: skip
        d = data[key]
        cost = "-" if d["usd"] is None else f"${d['usd']:,.0f}"
        table.add_row(name, f"{d['gpu_hours']:,.1f}", cost, _pct(d["slo_attainment"]),
                      _pct(d["worst_hour_slo_attainment"]))  # fmt: skip
    out.print(table)
    hourly = Table(title="per hour")
    for col in ("hour", "req/s", "instances (auto)", "p95 TTFT fixed ms", "p95 TTFT auto ms",
                "within fixed", "within auto"):  # fmt: skip
        hourly.add_column(col, justify="right")
    for r in data["hours"]:
        hourly.add_row(
            f"{r['hour']:02d}", f"{r['request_rate']:.2f}", f"{r['autoscaled_instances']:.2f}",
            *(("-" if r[k] is None else f"{r[k]:,.0f}")
              for k in ("fixed_p95_ttft_ms", "autoscaled_p95_ttft_ms")),
            _pct(r["fixed_slo_attainment"]), _pct(r["autoscaled_slo_attainment"]),
        )  # fmt: skip
    out.print(hourly)
    saved = data["gpu_hours_saved_fraction"]
    if saved is not None:
        out.print(f"- Autoscaling saves {100 * saved:.0f} % of the GPU-hours.", highlight=False)
