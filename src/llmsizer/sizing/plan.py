"""`plan`: from a use case to GPUs, servers and cost, with the trade-offs behind the answer.

    result = plan(usecase)                       # or plan(usecase, efficiency=calibrated)
    result.winner.sizing.num_servers             # 11
    data = plan_data(result)                     # plain data for JSON and the reports

Steps: the planning load is the peak (given, or a Poisson percentile of an average) times
1 + headroom; `search` finds each GPU's best configuration; `Sizing` turns its rate per
instance into instances (`ceil(load / rate)`), GPUs and servers; prices give a cost per
month and per million tokens; candidates are ranked by monthly cost when every feasible one
has a price, else by servers, then GPUs; the winner gets an uncertainty band and a
timeline at its planned load; `explain` says why in plain words.

`efficiency` is `EfficiencyFactors`, or a function from engine name to them (default:
`llmsizer.instance.calibrated_for`, the factors fitted on the published measurements for
each configuration's engine and GPU architecture), so other factors can be passed in.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np

from llmsizer.instance import DeploymentSpec, calibrated_for, measured_uncertainty
from llmsizer.perf import EfficiencyFactors
from llmsizer.sizing.configuration import Sizing
from llmsizer.sizing.cost import (
    BusinessView,
    Cost,
    Price,
    break_even_utilisation,
    business_view,
    cost_of,
)
from llmsizer.sizing.curve import curve_points, gpu_pareto
from llmsizer.sizing.explain import explain
from llmsizer.sizing.lengths import build_lengths, length_variants
from llmsizer.sizing.levers import LeverRow, lever_table
from llmsizer.sizing.probe import Lengths
from llmsizer.sizing.probe_cache import ProbeCache
from llmsizer.sizing.result import CandidatePlan, PlanResult, Timeline, closest
from llmsizer.sizing.search import (
    ConfigResult,
    MakeProbe,
    Progress,
    SearchSpace,
    SpecEfficiency,
    best_by_gpu,
    search,
)
from llmsizer.sizing.search_parts import CurvesAlong
from llmsizer.sizing.servers import Server, server_for
from llmsizer.sizing.uncertainty import band
from llmsizer.sizing.usecase import UseCase
from llmsizer.specs import get_gpu
from llmsizer.sweep import Sweep

Efficiency = Callable[[str], EfficiencyFactors]
HEADROOMS = (0.0, 0.1, 0.2, 0.3, 0.5)  # rows of the headroom table
TIMELINE_POINTS = 600  # steps kept in the timeline (evenly spaced)


def plan(
    usecase: UseCase,
    *,
    efficiency: Efficiency | EfficiencyFactors | None = None,
    progress: Progress | None = None,
    probes: MakeProbe | None = None,
    quick: bool = False,
    sweep: Sweep | None = None,
) -> PlanResult:
    """Size `usecase` (module docstring). Deterministic for a use case and efficiency.

    `efficiency`: factors for every engine, a function from engine name to factors (such as
    the unfitted `default_efficiency`), or `None`: the shipped fit per engine and GPU
    architecture (`calibrated_for`).
    `progress(done, total)` is called as configurations are settled. `probes` builds each
    configuration's probe (default: a `ProbeCache` of this plan's own, so that the timeline
    and the lever table reuse the search's probes; a cache passed in keeps them across plans).
    `quick`: the answer only, without the uncertainty band and the timeline (both simulate
    the winner again): what the studio shows first.
    `sweep` runs the searches' independent parts (per GPU, `search_parts`), the band's
    variants and the curves on a process pool or Ray (`llmsizer.sweep`), with the same
    result.
    """
    priced = _efficiency_function(efficiency)
    space = search_space(usecase)
    probes = ProbeCache() if probes is None else probes
    on_pool = sweep is not None and sweep.workers > 1
    later = on_pool and not quick and space.online and space.curves
    searched = dataclasses.replace(space, curves=False) if later else space
    results = search(searched, priced, progress, probes=probes, sweep=sweep)
    if not later or sweep is None:
        return _finished(usecase, space, results, priced, progress, probes, quick, sweep)
    # on a process pool the curves (display only) are drawn beside the lever table's parts
    along = CurvesAlong(sweep, space, results, priced, probes)
    result = _finished(usecase, space, results, priced, progress, probes, quick, sweep, along)
    curved = along.results()
    swap = {id(a): b for a, b in zip(results, curved, strict=True)}
    levers = tuple(dataclasses.replace(r, best=swap.get(id(r.best), r.best)) for r in result.levers)
    candidates = _rank(usecase, space, curved)
    result = dataclasses.replace(result, results=curved, candidates=candidates, levers=levers)
    return dataclasses.replace(result, explanation=explain(result))


def _finished(
    usecase: UseCase,
    space: SearchSpace,
    results: tuple[ConfigResult, ...],
    priced: SpecEfficiency,
    progress: Progress | None,
    probes: MakeProbe,
    quick: bool,
    sweep: Sweep | None,
    levers_sweep: Sweep | None = None,
) -> PlanResult:
    """The plan from the main search's results: ranked, then (unless `quick`) the band,
    the timeline and the lever table (on `levers_sweep`, default `sweep`), and the
    explanation."""
    candidates = _rank(usecase, space, results)
    result = PlanResult(
        usecase=usecase,
        lengths=space.lengths,
        limits=space.limits,
        planning_peak_rps=usecase.load.planning_peak_rps(),
        load_rps=space.load_rps,
        served_rps=_served_rps(usecase),
        ranked_by=_ranking(candidates),
        candidates=candidates,
        results=results,
        arrivals=space.arrivals.source,
    )
    notes = tuple(usecase.candidates.fallback_notes(usecase.model))
    result = dataclasses.replace(result, notes=notes)
    if not quick:
        result = _with_band_and_timeline(result, space, priced, probes, sweep)
        if progress is not None:  # a checkpoint: a caller may stop here (the studio's cancel)
            progress(len(space.configs), len(space.configs))
        levers_sweep = sweep if levers_sweep is None else levers_sweep
        levers = _levers(
            usecase, space, results, candidates, priced, progress, probes, levers_sweep
        )
        result = dataclasses.replace(result, levers=levers)
    return dataclasses.replace(result, explanation=explain(result))


def _levers(
    usecase: UseCase,
    space: SearchSpace,
    results: tuple[ConfigResult, ...],
    candidates: tuple[CandidatePlan, ...],
    efficiency: SpecEfficiency,
    progress: Progress | None,
    probes: MakeProbe,
    sweep: Sweep | None = None,
) -> tuple[LeverRow, ...]:
    """What each lever buys on the winner's GPU (the first candidate's when none wins)."""
    if not usecase.search.levers:
        return ()
    return lever_table(
        usecase, space, results, candidates[0].gpu, efficiency, progress, probes, sweep
    )


def _with_band_and_timeline(
    result: PlanResult,
    space: SearchSpace,
    efficiency: SpecEfficiency,
    probes: MakeProbe,
    sweep: Sweep | None = None,
) -> PlanResult:
    """The winner re-searched under other assumptions, and its engine at the planned load."""
    winner = result.winner
    best = winner.best if winner is not None else None
    if winner is None or best is None or not best.rate or not best.capacity:
        return result
    variants = length_variants(result.usecase, space.lengths)
    uncertainty, source = result.usecase.search.uncertainty, "the use case"
    if uncertainty is None:
        uncertainty, source = measured_uncertainty(best.config)
    base = (best.rate, best.capacity)
    b = band(space, best.config, base, efficiency, uncertainty, variants, probes, sweep)
    why = f"efficiency varied by +-{uncertainty:.0%}: {source}"
    b = dataclasses.replace(b, notes=(why, *b.notes))
    return dataclasses.replace(
        result, band=b, timeline=_timeline(space, winner, efficiency, probes)
    )


def _efficiency_function(efficiency: Efficiency | EfficiencyFactors | None) -> SpecEfficiency:
    """What the search prices each configuration with: the shipped fit for its engine and
    GPU architecture (`calibrated_for`) unless told otherwise."""
    if efficiency is None:
        return calibrated_for
    if isinstance(efficiency, EfficiencyFactors):
        return _Fixed(efficiency)
    return _ByEngine(efficiency)


@dataclasses.dataclass(frozen=True, slots=True)
class _Fixed:
    """The same factors for every configuration (a class, not a closure: a process pool
    pickles it with the search's parts)."""

    factors: EfficiencyFactors

    def __call__(self, spec: DeploymentSpec) -> EfficiencyFactors:
        return self.factors


@dataclasses.dataclass(frozen=True, slots=True)
class _ByEngine:
    """Factors by the configuration's engine preset."""

    by_engine: Efficiency

    def __call__(self, spec: DeploymentSpec) -> EfficiencyFactors:
        return self.by_engine(spec.preset)


def search_space(usecase: UseCase) -> SearchSpace:
    """The search's plain inputs from a use case."""
    cloud = frozenset(k for k, p in _prices(usecase).items() if p[0].is_cloud)
    return SearchSpace(
        lengths=build_lengths(usecase),
        limits=usecase.limits.build(),
        configs=usecase.candidates.configs(usecase.model),
        load_rps=usecase.planning_load_rps(),
        online=usecase.mode == "online",
        num_requests=usecase.search.num_requests,
        seed=usecase.search.seed,
        cloud_priced=cloud,
        curves=usecase.search.curves,
        arrivals=usecase.load.arrival_pattern(),
    )


def _prices(usecase: UseCase) -> dict[str, list[Price]]:
    """Price models by catalog GPU key, in the order given: names of one GPU (`h100-sxm`,
    `dgx-h100`) add models, never replace one."""
    out: dict[str, list[Price]] = {}
    for name, specs in usecase.prices.items():
        models = specs if isinstance(specs, list) else [specs]
        out.setdefault(get_gpu(name).key, []).extend(m.build() for m in models)
    return out


def _served_rps(usecase: UseCase) -> float:
    """The rate a cost per token is computed at: the average when known, else the peak."""
    average = usecase.load.average
    return average if average is not None else usecase.load.planning_peak_rps()


def _candidate(
    usecase: UseCase, space: SearchSpace, gpu: str, results: tuple[ConfigResult, ...]
) -> CandidatePlan:
    mine = [r for r in results if r.config.gpu == gpu]
    server = server_for(gpu)
    feasible = [r for r in mine if r.rate is not None]
    if not feasible:
        return CandidatePlan(gpu, server, None, None, None, None, (), (), (), closest(mine))
    best = best_by_gpu(space, feasible)[gpu]  # the search's rule on ties (`search.rank`)
    assert best.rate is not None
    sizing = Sizing.of(space.load_rps, best.rate, best.config, server)
    peak = usecase.load.planning_peak_rps()
    headroom = tuple(
        (h, Sizing.of(peak * (1 + h), best.rate, best.config, server)) for h in HEADROOMS
    )
    costs, business = _economics(usecase, space.lengths, gpu, sizing, best.rate, server)
    cost = costs[0] if costs else None
    curve = tuple(curve_points(best, space.limits))
    pareto = tuple(gpu_pareto(mine, space.limits))
    return CandidatePlan(
        gpu,
        server,
        best,
        sizing,
        cost,
        business,
        headroom,
        curve,
        pareto,
        None,
        price_models=costs,
        break_even_utilisation=break_even_utilisation(costs),
    )


def _economics(
    usecase: UseCase, lengths: Lengths, gpu: str, sizing: Sizing, rate: float, server: Server
) -> tuple[tuple[Cost, ...], BusinessView]:
    """Costs under every price model of the GPU, and the business view of a candidate."""
    load = usecase.load
    tdp_w = get_gpu(gpu).tdp_w or 0.0  # default server power: its GPUs' TDP (catalog)
    costs = tuple(
        cost_of(
            price,
            sizing.num_gpus,
            sizing.num_servers,
            _served_rps(usecase),
            lengths.mean_prompt,
            lengths.mean_output,
            load.working_hours,
            server_power_kw=server.num_gpus * tdp_w / 1000.0,
        )
        for price in _prices(usecase).get(gpu, [])
    )
    business = business_view(
        sizing.num_instances * rate,
        sizing.num_servers,
        lengths.mean_prompt,
        lengths.mean_output,
        load.requests_per_user,
        load.working_hours,
    )
    return costs, business


def _rank(
    usecase: UseCase, space: SearchSpace, results: tuple[ConfigResult, ...]
) -> tuple[CandidatePlan, ...]:
    """Feasible candidates first, cheapest first when all have prices, else fewest servers."""
    candidates = [_candidate(usecase, space, g, results) for g in usecase.candidates.gpus]
    by_cost = _ranking(candidates) == "cost"  # else servers, then GPUs

    def key(c: CandidatePlan) -> tuple[float, ...]:
        if c.sizing is None:
            ratio = c.closest.worst_ratio if c.closest is not None else None
            return (1.0, math.inf, ratio or math.inf)
        if by_cost and c.cost is not None:
            return (0.0, c.cost.usd_per_month, c.sizing.num_servers)
        return (0.0, c.sizing.num_servers, c.sizing.num_gpus)

    return tuple(sorted(candidates, key=key))


def _ranking(candidates: list[CandidatePlan] | tuple[CandidatePlan, ...]) -> str:
    feasible = [c for c in candidates if c.feasible]
    if feasible and all(c.cost is not None for c in feasible):
        return "cost"
    return "servers, then GPUs"


def _timeline(
    space: SearchSpace, winner: CandidatePlan, efficiency: SpecEfficiency, probes: MakeProbe
) -> Timeline:
    """The winner at its planned load per instance (load / instances), sampled steps."""
    assert winner.best is not None and winner.sizing is not None
    rate = space.load_rps / winner.sizing.num_instances
    probe = probes(space, winner.best.config, efficiency)
    steps = probe.run(rate).steps
    idx = np.unique(np.linspace(0, max(0, steps.num_steps - 1), TIMELINE_POINTS).astype(int))
    blocks = probe.engine.config.num_gpu_blocks or 1

    def col(values: np.ndarray, scale: float = 1.0) -> tuple[float, ...]:
        return tuple(float(v) * scale for v in values[idx])

    return Timeline(
        rate=rate,
        time_s=col(steps.start_s),
        num_running=col(steps.num_running),
        num_waiting=col(steps.num_waiting),
        kv_used=col(steps.num_kv_blocks_used, 1.0 / blocks),
    )
