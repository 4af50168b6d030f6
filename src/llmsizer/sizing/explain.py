"""The plan in plain words: the answer, what binds it, the alternatives, what would change it.

Each function returns sentences; `explain` joins them in reading order. Everything is read
from the `PlanResult`, nothing is simulated here.
"""

from __future__ import annotations

from llmsizer.sizing.configuration import Sizing
from llmsizer.sizing.limits import LABELS, Limits, Metric
from llmsizer.sizing.result import CandidatePlan, PlanResult
from llmsizer.sizing.search import GRID, ConfigResult, Status
from llmsizer.units import MS


def explain(plan: PlanResult) -> tuple[str, ...]:
    """Sentences explaining `plan`, the answer first."""
    winner = plan.winner
    if winner is None:
        return (*_infeasible(plan), *_assumptions(plan))
    return (
        _answer(plan, winner),
        *_binding(plan, winner),
        *_alternatives(plan, winner),
        *_changes(plan, winner),
        *_assumptions(plan),
    )


def _n(count: int, word: str) -> str:
    """`1 server`, `3 servers`."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _ms(seconds: float) -> str:
    """`2,870 ms`, `49.7 ms`, `12.5 s`."""
    if seconds >= 10:
        return f"{seconds:,.1f} s"
    ms = seconds / MS
    return f"{ms:,.0f} ms" if ms >= 100 else f"{ms:.3g} ms"


def _answer(plan: PlanResult, w: CandidatePlan) -> str:
    assert w.best is not None and w.sizing is not None and w.best.rate is not None
    s, c = w.sizing, w.best.config
    per_server = w.best.rate * w.server.instances_per_server(c.gpus_per_instance)
    load = f"{plan.load_rps:.3g} req/s"
    if plan.usecase.headroom:
        load += f" (peak {plan.planning_peak_rps:.3g} + {plan.usecase.headroom:.0%} headroom)"
    cost = "" if w.cost is None else f" at ${w.cost.usd_per_month:,.0f} a month"
    return (
        f"Buy {s.num_servers} x {w.server.name} ({_n(s.num_gpus, 'GPU')} in use){cost}: "
        f"{_n(s.num_instances, 'instance')} of {plan.usecase.model} as {c.label()}, each serving "
        f"{w.best.rate:.3g} req/s ({per_server:.3g} req/s per server), for a planning load of "
        f"{load}."
    )


def _binding(plan: PlanResult, w: CandidatePlan) -> list[str]:
    best = w.best
    assert best is not None and best.rate is not None
    limits = plan.limits
    out = []
    if plan.usecase.mode != "online":
        out.append("Offline use: sized on throughput alone (every request at once).")
    elif best.binding == "throughput":
        met = _values(limits, best)
        out.append(
            f"No latency limit binds: at {GRID[0]:.0%} of its saturated throughput (the most a "
            f"plan uses, as a queue near 100 % never settles) {met or 'every limit is met'}. "
            "Throughput sets the answer."
        )
    elif isinstance(best.binding, Metric) and best.failed_at is not None:
        over = limits.value_s(best.failed_at.latencies, best.binding)
        out.append(
            f"{limits.describe(best.binding)} binds: above {best.rate:.3g} req/s per instance it "
            f"is missed (at {best.failed_at.offered_rate:.3g} req/s it is {_ms(over)})."
        )
    if best.kv_batch is not None and best.capacity is not None:
        cap = "the KV cache (memory)" if best.kv_limited else "max_num_seqs"
        out.append(
            f"Batch: {cap} caps an engine at about {best.kv_batch} requests of the mean "
            f"length; saturated, an instance serves {best.capacity:.3g} req/s."
        )
    return out


def _values(limits: Limits, best: ConfigResult) -> str:
    if best.at_rate is None:
        return ""
    parts = [
        f"{lim.metric.label} is {_ms(lim.value_s(best.at_rate.latencies))} "
        f"(limit {_ms(lim.limit_s)})"
        for lim in limits.limits()
    ]
    return ", ".join(parts)


def _alternatives(plan: PlanResult, w: CandidatePlan) -> list[str]:
    out = []
    mine = [r for r in plan.results if r.config.gpu == w.gpu and r is not w.best]
    no_fit = [r.config.label() for r in mine if r.status is Status.NO_FIT]
    if no_fit:
        out.append(f"Does not fit in memory: {', '.join(no_fit)}.")
    slow = [r for r in mine if r.status in (Status.TOO_SLOW, Status.NO_RATE)]
    for r in slow:
        out.append(f"{r.config.label()} {r.status.value}: {r.reason}.")
    bounded = [r.config.label() for r in mine if r.status is Status.BOUNDED]
    if bounded:
        out.append(
            f"Cannot need fewer, even at the highest rate still open to them: {', '.join(bounded)}."
        )
    for c in plan.candidates[1:]:
        if c.sizing is not None and c.best is not None:
            cost = f", ${c.cost.usd_per_month:,.0f}/month" if c.cost is not None else ""
            out.append(
                f"Instead, {c.gpu} needs {c.sizing.num_servers} x {c.server.name} "
                f"({c.best.config.label()}, {_n(c.sizing.num_instances, 'instance')}{cost})."
            )
        else:
            out.append(f"{c.gpu}: no configuration meets the limits.")
    if len(plan.candidates) > 1:
        out.append(f"Candidates are ranked by {plan.ranked_by}.")
    return out


def _changes(plan: PlanResult, w: CandidatePlan) -> list[str]:
    out = [*_looser(plan, w), *_runner_up(plan, w)]
    rows = dict(w.headroom)
    if 0.0 in rows and 0.2 in rows:
        out.append(
            f"Headroom: 0 % needs {_n(rows[0.0].num_instances, 'instance')} "
            f"({_n(rows[0.0].num_servers, 'server')}), 20 % needs "
            f"{_n(rows[0.2].num_instances, 'instance')} ({_n(rows[0.2].num_servers, 'server')})."
        )
    if plan.band is not None:
        low, high = plan.band.range_of("num_servers")
        names = ", ".join(v.label for v in plan.band.variants)
        failing = [v.label for v in plan.band.variants if v.sizing is None]
        if high is None:
            span = (
                f"{_n(low, 'server')} or more: with {', '.join(failing)} no rate meets the limits"
            )
        elif low == high:
            span = f"still {_n(low, 'server')}"
        else:
            span = f"{low} to {high} servers"
        out.append(f"Uncertainty: with {names}, the answer is {span}.")
    return out


def _looser(plan: PlanResult, w: CandidatePlan) -> list[str]:
    """What the binding limit would have to be for the top of the curve (95 % of capacity)."""
    best = w.best
    if best is None or not isinstance(best.binding, Metric) or not best.curve:
        return []
    top = max(best.curve, key=lambda p: p.offered_rate)
    limits = plan.limits
    value = limits.value_s(top.latencies, best.binding)
    sizing = Sizing.of(plan.load_rps, top.offered_rate, best.config, w.server)
    return [
        f"A looser limit: with {LABELS[best.binding]} allowed up to {_ms(value)} at the "
        f"{limits.percentile(best.binding):g}th percentile, an instance could take "
        f"{top.offered_rate:.3g} req/s: {_n(sizing.num_instances, 'instance')}, "
        f"{_n(sizing.num_servers, 'server')}."
    ]


def _runner_up(plan: PlanResult, w: CandidatePlan) -> list[str]:
    """The next best configuration on the winner's GPU, among those fully searched."""
    searched = [
        r for r in plan.results if r.config.gpu == w.gpu and r.rate is not None and r is not w.best
    ]
    if not searched:
        return []
    sizes = [(Sizing.of(plan.load_rps, r.rate or 1.0, r.config, w.server), r) for r in searched]
    sizing, r = min(  # ties as the search breaks them (`search.rank`)
        sizes, key=lambda s: (s[0].num_servers, s[0].num_gpus, -s[1].config.gpus_per_instance)
    )
    return [
        f"Runner-up on {w.gpu}: {r.config.label()} at {r.rate:.3g} req/s per instance "
        f"needs {_n(sizing.num_servers, 'server')} ({_n(sizing.num_gpus, 'GPU')})."
    ]


def _infeasible(plan: PlanResult) -> list[str]:
    limits = ", ".join(plan.limits.describe(m) for m in plan.limits.active) or "the limits"
    near = plan.closest()
    out = [f"No configuration meets {limits} for {plan.usecase.model}."]
    if near is not None:
        out.append(
            f"Closest: {near.config.label()} ({near.status.value}: {near.reason}). A looser "
            "limit, a faster GPU, lower precision, more tensor parallelism or shorter prompts "
            "would be needed."
        )
    else:
        out.append("No configuration fits in memory: use more GPUs per instance or a larger GPU.")
    return out


def _assumptions(plan: PlanResult) -> list[str]:
    u = plan.usecase
    words = (
        f"; lengths given in words at {u.words_per_token} words per token"
        if u.unit == "words"
        else ""
    )
    use = "streaming (TTFT is what users wait for)" if u.streaming else "sequential (E2E)"
    return [
        f"Assumptions: lengths {plan.lengths.source}{words}; {plan.arrivals}; {use}; "
        f"latencies judged at their percentiles over simulated requests; GPU speeds from the "
        "performance model's efficiency factors (see llmsizer.perf.efficiency)."
    ]
