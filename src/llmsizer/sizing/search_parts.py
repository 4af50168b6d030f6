"""The search split into independent parts, each a job of a sweep (`llmsizer.sweep`: a local
process pool or Ray).

The branch and bound (`search`) keeps one incumbent per GPU, or per lever group with
`per_group`, and compares a configuration's bound with its own GPU's (group's) incumbent
only. So one GPU's configurations never read another's state: searching each GPU's
configurations on its own, anywhere, in any order, and putting the verdicts back in
`space.configs` order gives the serial search's results exactly
(`tests/sizing/test_search_parts.py`). Within a part the heap pops in the same order: it
compares ranks (`search.rank`: objective, GPUs per instance, position), and positions keep
their order. Each part's best
gets its curve in the part, as the whole search gives it per GPU, or, for a plan on a
process pool, later (`CurvesAlong`), each curve a job beside the lever table's.

With `per_group` and no curves (the lever table's searches, one GPU and many groups) the
parts are the groups: the best per GPU is then only chosen to copy its points, which every
configuration already holds.

The jobs carry the efficiency function and the probe maker: a process pool pickles them, so
they must be module-level functions or picklable objects (`plan` builds them so); Ray's
pickler takes closures too. A `ProbeCache` travels as what its probes simulated
(`probe_cache`): each part starts with the plan's simulations and sends its own back,
which the plan's cache absorbs, so what runs after the search (timeline, band, lever
table) re-simulates nothing a part simulated, as in process.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from llmsizer.instance import DeploymentSpec
from llmsizer.sizing.curve import draw_curve
from llmsizer.sizing.probe import ProbeState
from llmsizer.sizing.probe_cache import ProbeCache
from llmsizer.sizing.search import (
    ConfigResult,
    Group,
    MakeProbe,
    Progress,
    SearchSpace,
    SpecEfficiency,
    best_by_gpu,
    group,
    search,
)
from llmsizer.sweep import Sweep

T = TypeVar("T")
R = TypeVar("R")
_Job = tuple[SearchSpace, SpecEfficiency, dict[DeploymentSpec, float], MakeProbe | None]
_Found = tuple[tuple[ConfigResult, ...], dict[Hashable, ProbeState]]


def part_of(space: SearchSpace, config: DeploymentSpec) -> Group | str:
    """The part `config` is searched in (module docstring): its lever group when the space
    keeps an incumbent per group and draws no curves, else its GPU."""
    curves = space.online and space.curves
    return group(config) if space.per_group and not curves else config.gpu


def on_sweep(
    sweep: Sweep,
    space: SearchSpace,
    efficiency: SpecEfficiency,
    progress: Progress | None,
    starts: Mapping[DeploymentSpec, float] | None,
    probes: MakeProbe | None,
) -> tuple[ConfigResult, ...] | None:
    """`search(..., sweep=sweep)`: its parts run on `sweep`, the same results; `None` when
    there is one part only (`search` then runs in process). `progress` hears of whole
    parts, in configurations."""
    parts: dict[Group | str, list[DeploymentSpec]] = {}
    for config in space.configs:
        parts.setdefault(part_of(space, config), []).append(config)
    if len(parts) < 2:
        return None
    starts = starts or {}
    jobs: list[_Job] = [
        (
            replace(space, configs=tuple(configs)),
            efficiency,
            {c: starts[c] for c in configs if c in starts},
            probes,
        )
        for configs in parts.values()
    ]
    total = len(space.configs)

    def parts_done(done: int, num_parts: int) -> None:
        if progress is not None:
            progress(round(total * done / num_parts), total)

    found = sweep.map(_search_part, jobs, progress=parts_done)
    by_config = {r.config: r for results, _ in found for r in results}
    if isinstance(probes, ProbeCache):
        for _, simulated in found:
            probes.absorb(simulated)
    return tuple(by_config[c] for c in space.configs)


def _search_part(job: _Job) -> _Found:
    """One part's results, and what its probes simulated when they came from a cache."""
    space, efficiency, starts, probes = job
    results = search(space, efficiency, starts=starts, probes=probes)
    return results, probes.states() if isinstance(probes, ProbeCache) else {}


class CurvesAlong:
    """The winners' curves for `results` of a search without curves (`space.curves` off):
    the best per GPU gets the curve `search` would have drawn. Their jobs ride along with
    the first map made through this sweep (after that map's own jobs: they fill the
    workers its long parts leave idle, such as the lever table's speculating group), or
    run on `sweep` when `results()` is asked first. `probes` must be the search's
    `ProbeCache`, sent with each job: a curve re-asks its configuration's points (cached),
    then adds its own, as the search's own probe would."""

    def __init__(
        self,
        sweep: Sweep,
        space: SearchSpace,
        results: tuple[ConfigResult, ...],
        efficiency: SpecEfficiency,
        probes: MakeProbe,
    ) -> None:
        self.sweep, self._results = sweep, results
        self._jobs = [(space, r, efficiency, probes) for r in best_by_gpu(space, results).values()]
        self._curved: list[ConfigResult] | None = None

    @property
    def workers(self) -> int:
        return self.sweep.workers

    def map(
        self, fn: Callable[[T], R], items: Sequence[T], progress: Progress | None = None
    ) -> list[R]:
        if self._curved is not None:
            return self.sweep.map(fn, items, progress)
        n = len(items)
        told = None if progress is None else lambda done, _: progress(min(done, n), n)
        jobs: list[_Either] = [(fn, item) for item in items]
        jobs += [(_curve_job, job) for job in self._jobs]
        both = self.sweep.map(_either, jobs, progress=told)
        self._curved = both[n:]
        return both[:n]

    def results(self) -> tuple[ConfigResult, ...]:
        """The results with their curves."""
        if self._curved is None:
            self._curved = self.sweep.map(_curve_job, self._jobs)
        by_config = {r.config: r for r in self._curved}
        return tuple(by_config.get(r.config, r) for r in self._results)


_Either = tuple[Callable[[Any], Any], Any]


def _either(job: _Either) -> Any:
    fn, item = job
    return fn(item)


def _curve_job(job: tuple[SearchSpace, ConfigResult, SpecEfficiency, MakeProbe]) -> ConfigResult:
    space, result, efficiency, probes = job
    probe = probes(space, result.config, efficiency)
    for point in result.points:  # the search's points, from the cache: no simulation
        probe.at_rate(point.offered_rate)
    return draw_curve(space, result, probe)
