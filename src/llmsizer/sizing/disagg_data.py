"""`Comparison` as plain data (JSON, reports): ms at the edge, as `plan_data` does."""

from __future__ import annotations

from typing import Any

from llmsizer.sizing.disagg_plan import LOAD_FACTORS, Comparison
from llmsizer.sizing.disagg_search import FleetRun, Layout
from llmsizer.sizing.limits import Limits


def layout_data(layout: Layout | None) -> dict[str, Any] | None:
    if layout is None:
        return None
    return {
        "prefill": layout.prefill.label(),
        "decode": layout.decode.label(),
        "num_prefill": layout.num_prefill,
        "num_decode": layout.num_decode,
        "prefill_tensor_parallel_size": layout.prefill.tensor_parallel_size,
        "decode_tensor_parallel_size": layout.decode.tensor_parallel_size,
        "num_gpus": layout.num_gpus,
    }


def _run(run: FleetRun, limits: Limits) -> dict[str, Any]:
    judged = {lim.describe(): lim.value_s(run.latencies) * 1e3 for lim in limits.limits()}
    return {"layout": layout_data(run.layout), "meets": run.meets, **judged}


def comparison_data(c: Comparison, limits: Limits) -> dict[str, Any]:
    """Both answers, the winner, the pools' rates, the whole-fleet runs and the crossover."""
    s = c.disaggregated
    agg = None
    if c.aggregated is not None:
        config, sizing, cost = c.aggregated
        agg = {
            "config": config.label(),
            "num_instances": sizing.num_instances,
            "num_gpus": sizing.num_gpus,
            "num_servers": sizing.num_servers,
            "usd_per_month": None if cost is None else cost.usd_per_month,
        }
    cost = c.disaggregated_cost
    return {
        "mode": c.mode,
        "winner": c.winner,
        "recommended": c.recommended,
        "summary": c.summary,
        "aggregated": agg,
        "disaggregated": {
            **(layout_data(s.layout) or {}),
            "num_servers": c.disaggregated_servers,
            "usd_per_month": None if cost is None else cost.usd_per_month,
            "planned": layout_data(s.planned),
            "kv_link": s.link,
            "reason": s.reason,
            "pool_rates": [
                {
                    "role": r.role,
                    "tensor_parallel_size": r.spec.tensor_parallel_size,
                    "request_rate": r.rate,
                    "reason": r.reason,
                }
                for r in s.rates
            ],
            "fleet_runs": [_run(r, limits) for r in s.runs],
        },
        "crossover": {
            "load_factors": list(LOAD_FACTORS),
            "crossover_mean_prompt_tokens": c.crossover_isl,
            "rows": [
                {
                    "isl_factor": r.isl_factor,
                    "mean_prompt_tokens": r.mean_prompt,
                    "aggregated": r.aggregated,
                    "disaggregated": r.disaggregated,
                    "gpus": [{"aggregated": a, "disaggregated": d} for a, d in r.gpus],
                }
                for r in c.crossover
            ],
        },
    }
