"""Aggregated against disaggregated: which needs fewer GPUs (and dollars), by how much, and
where the answer turns over.

    comparison = compare_disaggregated(plan(usecase), usecase.disaggregated)

The aggregated side is the plan's winner (instances x GPUs, its cost). The disaggregated
side is `disagg_search`'s checked layout on the same GPU, precision and engine, priced with
the same price models. The winner needs fewer GPUs (cheaper, when priced); `on` recommends
disaggregated pools whichever wins, `auto` the winner.

The crossover: the use case's prompts scaled by `ISL_FACTORS`, each worker's rate found
again at every tensor-parallel size (the aggregated winner's configuration, and the pools'
workers), and its load scaled by `LOAD_FACTORS` (the same rates, workers rounded up: small
loads pay for the two pools' granularity), the fewest GPUs of each kind per cell
(aggregated / disaggregated); `crossover_isl` is the shortest prompt at which
disaggregation needs fewer GPUs at the planning load. These use the pools' rates, not
whole-fleet checks.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from llmsizer.instance import DeploymentSpec, make_instance
from llmsizer.instance.disagg import link_bytes_per_s
from llmsizer.perf import DoesNotFitError
from llmsizer.sizing.configuration import Sizing
from llmsizer.sizing.cost import Cost
from llmsizer.sizing.disagg_search import (
    DisaggSearch,
    FleetRun,
    Layout,
    PoolRate,
    build,
    catalog_system,
    check_layout,
    layouts,
    pool_rate,
    pool_spec,
)
from llmsizer.sizing.disagg_spec import DisaggregatedSpec
from llmsizer.sizing.plan import Efficiency, _economics, _efficiency_function, search_space
from llmsizer.sizing.probe import Lengths
from llmsizer.sizing.rate_search import RateSearch
from llmsizer.sizing.result import PlanResult
from llmsizer.sizing.search import SearchSpace, SpecEfficiency, make_probe
from llmsizer.sizing.servers import server_for
from llmsizer.specs import UnknownNameError, get_model

ISL_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)
LOAD_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)
CROSSOVER_REQUESTS = 1000  # Poisson requests per probe of the crossover's rate searches


@dataclass(frozen=True, slots=True)
class CrossoverRow:
    """At prompts `isl_factor` x the use case's (mean `mean_prompt` tokens): the fewest
    GPUs (aggregated, disaggregated; `None`: nothing meets the limits) at each of
    `LOAD_FACTORS` x the planning load, and what gives them at the planning load."""

    isl_factor: float
    mean_prompt: float
    aggregated: str | None  # "5x TP4"
    disaggregated: str | None  # "5x TP2 prefill + 1x TP4 decode"
    gpus: tuple[tuple[int | None, int | None], ...]


@dataclass(frozen=True, slots=True)
class Comparison:
    """Both answers, the winner and the recommendation, the crossover, in words."""

    mode: str
    aggregated: tuple[DeploymentSpec, Sizing, Cost | None] | None
    disaggregated: DisaggSearch
    disaggregated_servers: int | None
    disaggregated_cost: Cost | None
    winner: str | None  # "aggregated", "disaggregated", or None: neither meets the limits
    recommended: str | None
    crossover: tuple[CrossoverRow, ...]
    crossover_isl: float | None
    summary: str


def search_disaggregated(
    result: PlanResult,
    spec: DisaggregatedSpec,
    efficiency: SpecEfficiency,
    router: str = "least_outstanding",
) -> DisaggSearch:
    """The disaggregated layout for `result`'s use case (`disagg_search` docstring)."""
    space = search_space(result.usecase)
    base = pool_spec(_base_config(result), 1)
    tps = _pool_sizes(space, base.gpu)
    if not tps:
        why = f"no tensor-parallel size of the use case fits one {server_for(base.gpu).name}"
        return DisaggSearch((), None, (), None, str(spec.kv_link), why)
    handoff = _worst_handoff(base, tps, space, spec)
    prefill = [pool_rate("prefill", pool_spec(base, tp), space, efficiency, handoff) for tp in tps]
    decode = [pool_rate("decode", pool_spec(base, tp), space, efficiency) for tp in tps]
    found = layouts(prefill, decode, space.load_rps, spec.fixed_ratio())
    link = spec.kv_link if isinstance(spec.kv_link, str) else f"{spec.kv_link:g} GB/s"
    if not found:
        why = "; ".join(
            f"{r.role} TP{r.spec.tensor_parallel_size}: {r.reason}"
            for r in (*prefill, *decode)
            if r.rate is None
        )
        return DisaggSearch((*prefill, *decode), None, (), None, link, f"no pool meets: {why}")
    planned = found[0]
    runs = check_layout(planned, spec.link(), space, efficiency, router, spec.fixed_ratio())
    layout = next((r.layout for r in runs if r.meets), None)
    link = _link_words(planned, spec, space, efficiency)
    return DisaggSearch(
        (*prefill, *decode),
        planned,
        tuple(runs),
        layout,
        link,
        _reason(planned, runs, router, space),
    )


def _base_config(result: PlanResult) -> DeploymentSpec:
    """The aggregated winner's configuration, else the closest the plan found."""
    winner = result.winner
    if winner is not None and winner.best is not None:
        return winner.best.config
    for c in result.candidates:
        if c.closest is not None:
            return c.closest.config
    raise ValueError("the plan placed no configuration: nothing to disaggregate")


def _worst_handoff(
    base: DeploymentSpec, tps: list[int], space: SearchSpace, spec: DisaggregatedSpec
) -> float:
    """Seconds to hand over the longest prompt at the smallest TP (the largest per-GPU KV
    share), over the link `spec` names (NVLink for auto: the check prices the real one)."""
    try:
        inst = make_instance(pool_spec(base, min(tps)), max_model_len=space.lengths.max_context)
    except (ValueError, DoesNotFitError, UnknownNameError):
        return 0.0
    link = spec.link()
    chosen = "nvlink" if link == "auto" else link
    bandwidth = link_bytes_per_s(chosen, inst, catalog_system(server_for(base.gpu)))
    per_gpu = inst.memory.kv_bytes_per_token
    return float(space.lengths.prompt.max()) * per_gpu / bandwidth


def _link_words(
    layout: Layout, spec: DisaggregatedSpec, space: SearchSpace, efficiency: SpecEfficiency
) -> str:
    fleet = build(layout, spec.link(), space, efficiency)
    t = fleet.transfer
    isl = int(space.lengths.prompt.max())
    return (
        f"{t.bytes_per_token / 1e3:.0f} kB per token per GPU at {t.bytes_per_s / 1e9:g} GB/s "
        f"({t.seconds(isl) * 1e3:.2f} ms for the longest prompt, {isl} tokens)"
    )


def _reason(planned: Layout, runs: list[FleetRun], router: str, space: SearchSpace) -> str:
    first, last = runs[0], runs[-1]

    def judged(run: FleetRun) -> str:
        return ", ".join(
            f"{lim.describe()}: {lim.value_s(run.latencies) * 1e3:,.0f} ms"
            for lim in space.limits.limits()
        )

    head = (
        f"{planned.label()} ({planned.num_gpus} GPUs) behind {router} at {space.load_rps:g} req/s"
    )
    if first.meets:
        return f"{head} meets the limits ({judged(first)})."
    if last.meets:
        return (
            f"{head} misses ({judged(first)}); {last.layout.label()} "
            f"({last.layout.num_gpus} GPUs) meets them ({judged(last)})."
        )
    return f"{head} misses the limits; even {last.layout.label()} does ({judged(last)})."


def compare_disaggregated(
    result: PlanResult,
    spec: DisaggregatedSpec,
    efficiency: Efficiency | None = None,
    router: str = "least_outstanding",
    crossover: bool = True,
) -> Comparison:
    """Plan `result`'s use case disaggregated and set it beside the aggregated answer."""
    if not spec.enabled:
        raise ValueError("disaggregated is off: nothing to compare (use auto or on)")
    usecase = result.usecase
    if usecase.mode == "offline":
        raise ValueError(
            "disaggregated: auto/on trades latency (TTFT on the prefill pool, TPOT on the "
            "decode pool) for GPUs; an offline use case has no latency limits: use off"
        )
    priced = _efficiency_function(efficiency)
    search = search_disaggregated(result, spec, priced, router)
    agg = _aggregated(result)
    servers, cost = _disagg_economics(result, search.layout)
    winner = _winner(agg, search.layout, cost)
    recommended = "disaggregated" if spec.mode == "on" and search.layout else winner
    rows: tuple[CrossoverRow, ...] = ()
    if crossover and search.layout is not None:
        rows = crossover_table(result, search.layout, priced)
    isl = next((r.mean_prompt for r in rows if _disagg_wins_at(r, LOAD_FACTORS.index(1.0))), None)
    comparison = Comparison(
        spec.mode, agg, search, servers, cost, winner, recommended, rows, isl, ""
    )
    return dataclasses.replace(comparison, summary=_summary(comparison))


def _aggregated(result: PlanResult) -> tuple[DeploymentSpec, Sizing, Cost | None] | None:
    w = result.winner
    if w is None or w.best is None or w.sizing is None:
        return None
    return w.best.config, w.sizing, w.cost


def _disagg_economics(result: PlanResult, layout: Layout | None) -> tuple[int | None, Cost | None]:
    """Servers (each worker's TP group whole in one server) and cost of the layout."""
    if layout is None:
        return None, None
    server = server_for(layout.prefill.gpu)
    servers = math.ceil(layout.num_gpus / server.num_gpus)
    workers = layout.num_prefill + layout.num_decode
    sizing = Sizing(workers, layout.num_gpus, servers)
    rate = result.load_rps / workers
    costs, _ = _economics(result.usecase, result.lengths, server.gpu_key, sizing, rate, server)
    return servers, (costs[0] if costs else None)


def _winner(
    agg: tuple[DeploymentSpec, Sizing, Cost | None] | None, layout: Layout | None, cost: Cost | None
) -> str | None:
    if agg is None or layout is None:
        return "disaggregated" if layout is not None else ("aggregated" if agg else None)
    agg_cost = agg[2]
    key_a: tuple[float, float] = (agg[1].num_gpus, 0.0)
    key_d: tuple[float, float] = (layout.num_gpus, 0.0)
    if agg_cost is not None and cost is not None:  # cheaper first, then fewer GPUs
        key_a = (agg_cost.usd_per_month, agg[1].num_gpus)
        key_d = (cost.usd_per_month, layout.num_gpus)
    return "disaggregated" if key_d < key_a else "aggregated"


def crossover_table(
    result: PlanResult, layout: Layout, efficiency: SpecEfficiency
) -> tuple[CrossoverRow, ...]:
    """GPUs aggregated / disaggregated over prompt lengths x loads (module docstring)."""
    space = dataclasses.replace(search_space(result.usecase), num_requests=CROSSOVER_REQUESTS)
    agg = _aggregated(result)
    window = get_model(result.usecase.model).max_position_embeddings
    tps = _pool_sizes(space, layout.prefill.gpu)
    rows = []
    for f in ISL_FACTORS:
        lengths = _scaled(space.lengths, f)
        if window is not None and lengths.max_context > window:
            continue
        at = dataclasses.replace(space, lengths=lengths)
        aggs: list[tuple[DeploymentSpec, float]] = []
        if agg is not None:
            for tp in tps:
                config = agg[0].model_copy(update={"tensor_parallel_size": tp})
                rate = _agg_rate(at, config, efficiency)
                if rate:
                    aggs.append((config, rate))
        p = [pool_rate("prefill", pool_spec(layout.prefill, tp), at, efficiency) for tp in tps]
        d = [pool_rate("decode", pool_spec(layout.decode, tp), at, efficiency) for tp in tps]
        rows.append(_row(f, lengths, aggs, p, d, space.load_rps))
    return tuple(rows)


def _pool_sizes(space: SearchSpace, gpu: str) -> list[int]:
    """The use case's tensor-parallel sizes that fit in `gpu`'s server."""
    server = server_for(gpu)
    tps = sorted({c.tensor_parallel_size for c in space.configs if c.gpu == gpu})
    return [tp for tp in tps if server.why_not(tp, 1) is None]


def _scaled(lengths: Lengths, factor: float) -> Lengths:
    prompt = np.maximum(1, np.round(lengths.prompt * factor)).astype(np.int64)
    return Lengths(prompt, lengths.output, f"{lengths.source}, prompts x {factor:g}")


def _agg_rate(
    space: SearchSpace, config: DeploymentSpec, efficiency: SpecEfficiency
) -> float | None:
    try:
        probe = make_probe(space, config, efficiency)
    except (ValueError, DoesNotFitError, UnknownNameError):
        return None
    return RateSearch(probe, space.limits, online=space.online).run().rate


def _row(
    factor: float,
    lengths: Lengths,
    aggs: list[tuple[DeploymentSpec, float]],
    p: list[PoolRate],
    d: list[PoolRate],
    load_rps: float,
) -> CrossoverRow:
    """Per load, the fewest GPUs of each kind, and (at the planning load) what gives them."""
    cells: list[tuple[int | None, int | None]] = []
    labels: tuple[str | None, str | None] = (None, None)
    for g in LOAD_FACTORS:
        load = load_rps * g
        sized = sorted(
            (Sizing.of(load, rate, c, server_for(c.gpu)).num_gpus, c.tensor_parallel_size)
            for c, rate in aggs
        )
        found = layouts(p, d, load, None)
        cells.append((sized[0][0] if sized else None, found[0].num_gpus if found else None))
        if g == 1.0:
            labels = (
                f"{sized[0][0] // sized[0][1]}x TP{sized[0][1]}" if sized else None,
                found[0].label() if found else None,
            )
    return CrossoverRow(factor, lengths.mean_prompt, labels[0], labels[1], tuple(cells))


def _disagg_wins_at(row: CrossoverRow, column: int) -> bool:
    a, d = row.gpus[column]
    return d is not None and (a is None or d < a)


def _summary(c: Comparison) -> str:
    s = c.disaggregated
    if c.winner is None:
        return f"Neither aggregated nor disaggregated serving meets the limits. {s.reason}"
    parts = [s.reason]
    if c.aggregated is not None and s.layout is not None:
        a_gpus, d_gpus = c.aggregated[1].num_gpus, s.layout.num_gpus
        money = ""
        a_cost, d_cost = c.aggregated[2], c.disaggregated_cost
        if a_cost is not None and d_cost is not None:
            money = f", ${a_cost.usd_per_month:,.0f} against ${d_cost.usd_per_month:,.0f} a month"
        lead = "Disaggregated" if c.winner == "disaggregated" else "Aggregated"
        diff = abs(a_gpus - d_gpus)
        parts.append(
            f"{lead} wins: {a_gpus} GPUs aggregated against {d_gpus} disaggregated "
            f"({diff} GPU{'s' if diff != 1 else ''} apart{money})."
        )
    elif s.layout is None:
        parts.append("Aggregated wins: no disaggregated layout meets the limits.")
    else:
        parts.append("Disaggregated wins: no aggregated configuration meets the limits.")
    if c.crossover:
        parts.append(
            f"By the pools' rates (before a whole-fleet check), disaggregation starts to "
            f"need fewer GPUs at prompts of {c.crossover_isl:,.0f} tokens (mean) at the "
            "planning load."
            if c.crossover_isl is not None
            else "By the pools' rates, disaggregation needs no fewer GPUs at any prompt "
            "length tried at the planning load."
        )
    if c.mode == "on" and c.winner == "aggregated" and s.layout is not None:
        parts.append("Recommended: disaggregated, as asked (disaggregated: on).")
    return " ".join(parts)
