"""The search: per configuration, the highest Poisson rate whose latency percentiles meet every
limit; across configurations of one GPU, the one that needs the fewest servers.

For each configuration (GPU x precision x TP x PP x engine preset x batch knobs):

1. placement and memory: TP must divide the attention heads and stay in the server's NVLink
   domain (`servers`), weights and one request's KV must fit (`plan_memory`); no simulation;
2. batch 1: a request alone must meet every limit (step model, no simulation); if it cannot,
   no load can;
3. capacity: the saturated throughput of an offline run (`Probe.capacity`), which bounds
   every rate the configuration can sustain;
4. rate search (`rate_search.RateSearch`): Poisson probes down a grid of fractions of the
   capacity until one meets every limit, then bisection;
5. branch and bound, best first per GPU (or per lever group, `group`: GPU, precision,
   sparsity, k, with `SearchSpace.per_group`, so that each group's best is exact and the
   lever table can set them side by side): a heap of lower bounds on the rank (`rank`: the
   objective, servers then GPUs needed at the load, then ties), first from one
   instance (or `capacity_bound`), then from the capacity, then from the lowest rate that
   failed; each pop runs one probe of the most promising configuration, and one whose bound
   cannot beat the best rank already found for its GPU (or group) is dropped. In instance
   counts (`settle_on_objective`, the lever table's) a configuration whose next probe tests
   a worse rank than its bound (a grid walk's step) waits at that priority while others
   test better ones, whose passes may then bound it. The optimum is exact (a test compares
   it with an exhaustive search; the order changes only the work), ties included: the rank
   breaks them by properties of the configurations (more GPUs per instance, then the order
   of `space.configs`), never by the search's progress, so neither a pause (`aside`) nor
   a part (`search_parts`) can change which configuration wins. Since each configuration's
   rate can only fall as limits tighten, and servers only grow with load, so does the
   optimum.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING

from llmsizer.instance import DeploymentSpec, make_instance
from llmsizer.perf import DoesNotFitError, EfficiencyFactors
from llmsizer.sizing.arrivals import POISSON, ArrivalPattern
from llmsizer.sizing.aside import Aside
from llmsizer.sizing.capacity_bound import highest_rate
from llmsizer.sizing.configuration import Sizing
from llmsizer.sizing.limits import Binding, Limits
from llmsizer.sizing.probe import Batch1, Lengths, Point, Probe
from llmsizer.sizing.rate_search import GRID, Counts, RateSearch
from llmsizer.sizing.servers import server_for
from llmsizer.specs import UnknownNameError

if TYPE_CHECKING:
    from llmsizer.sweep import Sweep

SpecEfficiency = Callable[[DeploymentSpec], EfficiencyFactors]
"""The efficiency factors to price a configuration with (`plan`'s `efficiency` argument as
the search uses it)."""


Progress = Callable[[int, int], None]  # (configurations done, configurations in total)
# builds (or fetches from a cache, `ProbeCache`) the probe of a configuration: `make_probe`
MakeProbe = Callable[["SearchSpace", DeploymentSpec, SpecEfficiency], "Probe"]


class Status(StrEnum):
    """What the search concluded about one configuration."""

    OK = "meets the limits"
    INVALID = "cannot be placed"
    NO_FIT = "does not fit in memory"
    TOO_SLOW = "misses a limit even at batch 1"
    NO_RATE = "misses a limit at every rate tried"
    BOUNDED = "cannot beat the best (bound)"


@dataclass(frozen=True, slots=True)
class SearchSpace:
    """Everything the search needs, as plain values (built from a `UseCase` by `plan`).

    `load_rps` is the planning peak times (1 + headroom), req/s over the whole deployment;
    `online` False means throughput only (the limits are ignored, rate = capacity).
    `cloud_priced` holds the GPUs billed per GPU hour: for those the fewest GPUs win, for
    the others the fewest servers. `curves`: simulate the winners' latency curves (`curve.CURVE`).
    `num_requests`: Poisson requests per probe at high load (`Probe`; `None`: its default).
    `settle_on_objective`: for searches that report counts only (the lever table's), rate
    searches in instance counts (`rate_search.Counts`) and a bound before each capacity run
    (`capacity_bound`); the count is exact, the rate is the lowest that needs it.
    `per_group`: keep an incumbent per lever group (`group`), so every group's best is
    exact; else one per GPU, which prunes harder (the plan's main search). `stop_early`:
    failing probes may stop once certain (`RateSearch`), for searches showing no points.
    """

    lengths: Lengths
    limits: Limits
    configs: tuple[DeploymentSpec, ...]
    load_rps: float
    online: bool = True
    num_requests: int | None = None
    seed: int = 0
    cloud_priced: frozenset[str] = frozenset()
    curves: bool = True
    arrivals: ArrivalPattern = POISSON
    settle_on_objective: bool = False
    per_group: bool = False
    stop_early: bool = False


@dataclass(frozen=True, slots=True)
class ConfigResult:
    """One configuration's verdict, with every point simulated for it.

    Rates are offered Poisson rates in req/s per instance. `binding` names what stopped the
    rate: a metric of `METRICS`, or `throughput` when 95 % of capacity met every limit.
    `worst_ratio` is the largest judged latency / limit where the configuration failed (at
    batch 1, or at the lowest rate tried): how far it is from meeting the limits.
    """

    config: DeploymentSpec
    status: Status
    reason: str = ""
    batch1: Batch1 | None = None
    capacity: float | None = None
    kv_batch: int | None = None
    kv_limited: bool | None = None
    rate: float | None = None
    at_rate: Point | None = None
    failed_at: Point | None = None
    binding: Binding | None = None
    worst_ratio: float | None = None
    points: tuple[Point, ...] = ()
    curve: tuple[Point, ...] = ()

    @property
    def rate_per_gpu(self) -> float | None:
        return None if self.rate is None else self.rate / self.config.gpus_per_instance


Group = tuple[str, str, bool, int]
Key = tuple[int, int]  # the objective: (GPUs, servers) or (servers, GPUs)
Rank = tuple[int, int, int, int]  # the objective, -GPUs per instance, position (`rank`)


def group(config: DeploymentSpec) -> Group:
    """The lever group a configuration belongs to: its GPU, weight precision, sparsity and
    draft tokens. The search finds the best of every group; the plan compares groups."""
    k = config.speculative.num_speculative_tokens if config.speculative else 0
    return (config.gpu, config.precision, config.sparsity, k)


def objective(space: SearchSpace, config: DeploymentSpec, rate: float) -> Key:
    """What the search minimises for one GPU type: (GPUs, servers) when billed per GPU hour,
    else (servers, GPUs)."""
    s = Sizing.of(space.load_rps, rate, config, server_for(config.gpu))
    if config.gpu in space.cloud_priced:
        return (s.num_gpus, s.num_servers)
    return (s.num_servers, s.num_gpus)


def rank(space: SearchSpace, config: DeploymentSpec, rate: float, position: int) -> Rank:
    """The search's order on (configuration, rate), lowest best: the objective; on a tie
    more GPUs per instance first (fewer, larger instances: lower per-request latency at the
    same spend); then the earlier in `space.configs` (`position`). Every tie is broken by
    this rule (the search's bounds and incumbents, `best_by_gpu`, the lever table's rows),
    which reads only the configuration, so no search order can change a result."""
    return (*objective(space, config, rate), -config.gpus_per_instance, position)


def search(
    space: SearchSpace,
    efficiency: SpecEfficiency,
    progress: Progress | None = None,
    starts: Mapping[DeploymentSpec, float] | None = None,
    probes: MakeProbe | None = None,
    sweep: Sweep | None = None,
) -> tuple[ConfigResult, ...]:
    """Every configuration's result, in `space.configs` order; the best per GPU has a curve
    (module docstring, step 5). `starts`: warm starts (fractions of capacity, `RateSearch`)
    for configurations a similar one has been searched for. `probes` builds each probe
    (default `make_probe`). `sweep` runs the search's independent parts (per GPU or lever
    group: `search_parts`) on a process pool or Ray, with the same results; `progress` then
    hears of whole parts."""
    if sweep is not None and sweep.workers > 1:
        from llmsizer.sizing.search_parts import on_sweep  # it imports this module

        found = on_sweep(sweep, space, efficiency, progress, starts, probes)
        if found is not None:
            return found
    make = make_probe if probes is None else probes
    bnb = _BranchAndBound(space, efficiency, starts or {}, make)
    done = len(space.configs) - len(bnb.heap)
    while bnb.heap:
        if bnb.pop():
            done += 1
            if progress is not None:
                progress(done, len(space.configs))
    from llmsizer.sizing.curve import draw_curve  # it imports this module

    settled = [bnb.results[c] for c in space.configs]
    for best in best_by_gpu(space, settled).values():
        config = best.config
        bnb.results[config] = draw_curve(space, bnb.results[config], bnb.probes[config])
    return tuple(bnb.results[c] for c in space.configs)


class _BranchAndBound:
    """The search's state: verdicts, a heap of (priority, config, bound), both ranks
    (`rank`), rate searches, and per group the best (rank, config) achieved."""

    def __init__(
        self,
        space: SearchSpace,
        efficiency: SpecEfficiency,
        starts: Mapping[DeploymentSpec, float],
        probes: MakeProbe,
    ):
        self.space = space
        self.starts = starts
        self.results: dict[DeploymentSpec, ConfigResult] = {}
        self.probes: dict[DeploymentSpec, Probe] = {}
        self.searches: dict[DeploymentSpec, RateSearch] = {}
        self.heap: list[tuple[Rank, DeploymentSpec, Rank]] = []
        self.best: dict[Group | str, tuple[Rank, DeploymentSpec]] = {}
        self.position = {config: i for i, config in enumerate(space.configs)}
        self.aside = Aside(self.incumbent_key, space.settle_on_objective)
        for config in space.configs:
            self.results[config], probe = _screen(space, config, efficiency, probes)
            if probe is not None:
                self.probes[config] = probe
                top = highest_rate(probe) if space.settle_on_objective else math.inf
                key = self.rank(config, top)
                heapq.heappush(self.heap, (key, config, key))

    def pop(self) -> bool:
        """One probe (or capacity run) of the most promising configuration, or drop it;
        True when that configuration is settled (probes put aside: `aside`)."""
        settled = self._pop()
        self.aside.back(self.heap)
        return settled

    def _pop(self) -> bool:
        priority, config, bound = heapq.heappop(self.heap)
        incumbent = self.best.get(self.incumbent_key(config))
        if incumbent is not None and incumbent[1] != config and bound >= incumbent[0]:
            self.results[config] = _bounded(self.results[config], incumbent, self.probes[config])
            return True
        search = self.searches.get(config)
        if search is None:
            space, probe, start = self.space, self.probes[config], self.starts.get(config)
            counts = Counts(space.load_rps) if space.settle_on_objective else None
            search = self.searches[config] = RateSearch(
                probe, space.limits, space.online, start, space.stop_early, counts
            )
            self.results[config] = replace(self.results[config], capacity=search.capacity)
        else:
            beats = None if incumbent is None else self._beats(config, incumbent[0])
            if self.space.settle_on_objective and self.heap:
                later = self.rank(config, search.next_rate(beats))
                if later > priority:  # it waits while others test better (module doc)
                    heapq.heappush(self.heap, (later, config, bound))
                    return False
            if not search.step(beats, self.aside.pause(config, self.heap)):
                self.aside.put((priority, config, bound))  # its rivals first
                return False
        if search.rate is not None:
            key = self.rank(config, search.rate)
            if incumbent is None or key < incumbent[0]:
                self.best[self.incumbent_key(config)] = (key, config)
        if search.done:
            self.results[config] = _settled(self.results[config], search)
            return True
        refined = self.rank(config, search.upper_rate())
        heapq.heappush(self.heap, (refined, config, refined))
        return False

    def rank(self, config: DeploymentSpec, rate: float) -> Rank:
        return rank(self.space, config, rate, self.position[config])

    def _beats(self, config: DeploymentSpec, key: Rank) -> Callable[[float], bool]:
        return lambda rate: self.rank(config, rate) < key

    def incumbent_key(self, config: DeploymentSpec) -> Group | str:
        return group(config) if self.space.per_group else config.gpu


def evaluate(
    space: SearchSpace,
    config: DeploymentSpec,
    efficiency: SpecEfficiency,
    start: float | None = None,
    probes: MakeProbe | None = None,
) -> ConfigResult:
    """One configuration searched on its own (no bound), optionally from a warm start (a
    fraction of capacity, `RateSearch`): used for the uncertainty band and by tests."""
    partial, probe = _screen(space, config, efficiency, make_probe if probes is None else probes)
    if probe is None:
        return partial
    search = RateSearch(probe, space.limits, space.online, start, space.stop_early).run()
    return _settled(replace(partial, capacity=search.capacity), search)


def _screen(
    space: SearchSpace, config: DeploymentSpec, efficiency: SpecEfficiency, probes: MakeProbe
) -> tuple[ConfigResult, Probe | None]:
    """Steps 1-3 of the module docstring: a final result, or a probe with its capacity."""
    server = server_for(config.gpu)
    problem = server.why_not(config.tensor_parallel_size, config.pipeline_parallel_size)
    if problem is not None:
        return ConfigResult(config, Status.INVALID, problem), None
    try:
        probe = probes(space, config, efficiency)
    except DoesNotFitError as e:
        return ConfigResult(config, Status.NO_FIT, str(e)), None
    except (ValueError, UnknownNameError) as e:
        return ConfigResult(config, Status.INVALID, str(e)), None
    b1 = probe.batch1()
    limits = space.limits.limits() if space.online else ()
    ratios = {lim.metric: b1.latency_s(lim.metric) / lim.limit_s for lim in limits}
    base = ConfigResult(
        config, Status.OK, batch1=b1, kv_batch=probe.kv_batch(), kv_limited=probe.kv_limited()
    )
    if ratios and max(ratios.values()) > 1.0:
        worst = max(ratios, key=lambda m: ratios[m])
        reason = f"alone on the instance, {space.limits.describe(worst)} is missed by " + (
            f"{ratios[worst]:.2f}x"
        )
        return replace(
            base, status=Status.TOO_SLOW, reason=reason, binding=worst, worst_ratio=ratios[worst]
        ), None
    return base, probe


def make_probe(space: SearchSpace, config: DeploymentSpec, efficiency: SpecEfficiency) -> Probe:
    """A probe of `config` on the space's lengths (raises `DoesNotFitError`, `ValueError`)."""
    factors = efficiency(config)
    instance = make_instance(config, max_model_len=space.lengths.max_context, efficiency=factors)
    return Probe(
        instance,
        space.lengths,
        space.limits,
        seed=space.seed,
        num_requests=space.num_requests,
        arrivals=space.arrivals,
    )


def _bounded(
    partial: ConfigResult, best: tuple[Rank, DeploymentSpec], probe: Probe
) -> ConfigResult:
    key, config = best
    reason = (
        f"cannot need less than {config.label()} ({key[0]} and {key[1]}: servers and GPUs, "
        "or GPUs and servers when priced per GPU), even at the highest rate still possible"
    )
    return replace(partial, status=Status.BOUNDED, reason=reason, points=tuple(probe.points))


def _settled(partial: ConfigResult, search: RateSearch) -> ConfigResult:
    """The verdict of a finished rate search."""
    points = tuple(search.probe.points)
    if search.exhausted:
        failed = search.failed
        assert failed is not None
        ratio = max(search.limits.ratios(failed.latencies).values())
        reason = f"even at {GRID[-1]:.0%} of capacity the limits are missed by {ratio:.2f}x"
        return replace(
            partial,
            status=Status.NO_RATE,
            reason=reason,
            worst_ratio=ratio,
            binding=search.binding(),
            points=points,
        )
    return replace(
        partial,
        rate=search.rate,
        at_rate=search.passed,
        failed_at=search.failed,
        binding=search.binding(),
        points=points,
    )


def best_by_gpu(space: SearchSpace, results: Sequence[ConfigResult]) -> dict[str, ConfigResult]:
    """Per GPU, the feasible configuration of the lowest rank (`rank`: the objective, then
    more GPUs per instance, then the first in `results`, which are in `space.configs` order)."""
    best: dict[str, tuple[Rank, ConfigResult]] = {}
    for i, r in enumerate(results):
        if r.rate is not None:
            key = rank(space, r.config, r.rate, i)
            if r.config.gpu not in best or key < best[r.config.gpu][0]:
                best[r.config.gpu] = (key, r)
    return {gpu: r for gpu, (_, r) in best.items()}
