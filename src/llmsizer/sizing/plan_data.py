"""The plan as plain data: what `--json` writes and what the reports read.

Only dicts, lists, strings, numbers, booleans and `None`. Units are in the keys, converted
at this edge: latencies in ms under vLLM's keys (`p95_ttft_ms`), rates in req/s (`_rps`),
money in US dollars (`usd_`). Reports never see simulator or performance-model objects.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from llmsizer.sizing.curve import CurvePoint
from llmsizer.sizing.levers import LeverRow
from llmsizer.sizing.limits import METRICS, Limit, Limits
from llmsizer.sizing.result import CandidatePlan, PlanResult
from llmsizer.sizing.search import ConfigResult, group
from llmsizer.units import MS

SCHEMA = "llmsizer.plan/1"


def plan_data(plan: PlanResult) -> dict[str, Any]:
    """Everything in `plan`, as JSON-ready plain data (module docstring)."""
    limits = plan.limits
    winner = plan.winner
    return {
        "schema": SCHEMA,
        "name": plan.usecase.name,
        "model": plan.usecase.model,
        "usecase": plan.usecase.model_dump(mode="json"),
        "lengths": {
            "source": plan.lengths.source,
            "mean_input_tokens": plan.lengths.mean_prompt,
            "mean_output_tokens": plan.lengths.mean_output,
        },
        "limits": [_limit(limits, lim) for lim in limits.limits()],
        "load": {
            "planning_peak_rps": plan.planning_peak_rps,
            "headroom": plan.usecase.headroom,
            "load_rps": plan.load_rps,
            "served_rps": plan.served_rps,
            "average_rps": plan.usecase.load.average,
            "arrivals": plan.arrivals,
        },
        "ranked_by": plan.ranked_by,
        "winner": None if winner is None else winner.gpu,
        "candidates": [_candidate(c, limits) for c in plan.candidates],
        "configurations": [_config(r, limits) for r in plan.results],
        "band": _band(plan),
        "timeline": _timeline(plan),
        "closest": None if winner is not None else _closest(plan.closest()),
        "explanation": list(plan.explanation),
        "levers": [_lever(row, limits) for row in plan.levers],
        "notes": list(plan.notes),
    }


def _timeline(plan: PlanResult) -> dict[str, Any] | None:
    if plan.timeline is None:
        return None
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(plan.timeline).items()}


def _limit(limits: Limits, lim: Limit) -> dict[str, Any]:
    return {
        "metric": lim.metric.value,
        "key": limits.key(lim.metric),
        "percentile": lim.percentile,
        "limit_ms": lim.limit_s / MS,
        "label": lim.describe(),
    }


def _candidate(c: CandidatePlan, limits: Limits) -> dict[str, Any]:
    out: dict[str, Any] = {
        "gpu": c.gpu,
        "server": {
            "name": c.server.name,
            "num_gpus": c.server.num_gpus,
            "nvlink_domain_size": c.server.nvlink_domain_size,
        },
        "feasible": c.feasible,
        "closest": _closest(c.closest),
    }
    if c.best is None or c.sizing is None or c.best.rate is None:
        return out
    g = c.best.config.gpus_per_instance
    out |= {
        "configuration": _config(c.best, limits),
        "rate_per_instance_rps": c.best.rate,
        "rate_per_gpu_rps": c.best.rate / g,
        "rate_per_server_rps": c.best.rate * c.server.instances_per_server(g),
        "sizing": asdict(c.sizing),
        "cost": None if c.cost is None else asdict(c.cost),
        "price_models": [asdict(m) for m in c.price_models],
        "break_even_utilisation": c.break_even_utilisation,
        "business": None if c.business is None else asdict(c.business),
        "headroom": [{"headroom": h, **asdict(s)} for h, s in c.headroom],
        "curve": [_point(p, limits) for p in c.curve],
        "pareto": [_point(p, limits) for p in c.pareto],
    }
    return out


def _config(r: ConfigResult, limits: Limits) -> dict[str, Any]:
    c = r.config
    out: dict[str, Any] = {
        "label": c.label(),
        "gpu": c.gpu,
        "precision": c.precision,
        "sparsity": c.sparsity,
        "num_speculative_tokens": group(c)[3],
        "tensor_parallel_size": c.tensor_parallel_size,
        "pipeline_parallel_size": c.pipeline_parallel_size,
        "engine": c.preset,
        "max_num_seqs": c.batch_overrides().get("max_num_seqs"),
        "max_num_batched_tokens": c.batch_overrides().get("max_num_batched_tokens"),
        "num_gpus": c.gpus_per_instance,
        "status": r.status.name.lower(),
        "status_text": r.status.value,
        "reason": r.reason,
        "capacity_rps": r.capacity,
        "kv_batch": r.kv_batch,
        "kv_limited": r.kv_limited,
        "rate_per_instance_rps": r.rate,
        "rate_per_gpu_rps": r.rate_per_gpu,
        "binding": r.binding,
        "worst_ratio": r.worst_ratio,
    }
    if r.batch1 is not None:
        b = r.batch1
        out["batch1"] = {limits.key(m): b.latency_s(m) / MS for m in METRICS}
    if r.at_rate is not None:
        out["at_rate"] = {limits.key(m): r.at_rate.summary.get(limits.key(m)) for m in METRICS}
    return out


def _point(p: CurvePoint, limits: Limits) -> dict[str, Any]:
    return {
        "label": p.label,
        "rate_per_instance_rps": p.rate_per_instance,
        "rate_per_gpu_rps": p.rate_per_gpu,
        **{limits.key(m): p.latency_s(m) / MS for m in METRICS},
        "meets": p.meets,
    }


def _band(plan: PlanResult) -> dict[str, Any] | None:
    band = plan.band
    if band is None:
        return None
    return {
        "variants": [
            {
                "label": v.label,
                "rate_per_instance_rps": v.rate,
                **(asdict(v.sizing) if v.sizing is not None else {}),
            }
            for v in band.all
        ],
        **{f: list(band.range_of(f)) for f in ("num_instances", "num_gpus", "num_servers")},
        **({"notes": list(band.notes)} if band.notes else {}),  # variants not tried
    }


def _closest(r: ConfigResult | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "label": r.config.label(),
        "status": r.status.value,
        "reason": r.reason,
        "worst_ratio": r.worst_ratio,
    }


def _lever(row: LeverRow, limits: Limits) -> dict[str, Any]:
    """One row of what each lever buys (`sizing.levers`)."""
    return {
        "lever": row.lever,
        "accepted": row.accepted,
        "quality": row.quality,
        "configuration": None if row.best is None else _config(row.best, limits),
        "sizing": None if row.sizing is None else asdict(row.sizing),
    }
