"""`ProbeCache`: probes kept across plans, so a plan asked again with another limit, load or
price re-simulates only the rates it has not seen.

A `Probe` is a deterministic function of its configuration, the efficiency factors, the
lengths, the seed, the run length and the percentiles the limits are judged at (its summaries
report those); the limit values themselves only decide pass or fail in the rate search. So
that tuple is the key, and a cached probe gives the same points a fresh one would: a plan
with the cache equals a plan without it (`tests/sizing/test_probe_cache.py`).

    cache = ProbeCache()
    plan(usecase, probes=cache)                  # simulates
    plan(tighter_limits, probes=cache)           # capacity runs and shared rates reused

Each plan gets a `Probe.view` of the cached probe: it shares the simulated points but lists
only those its own search asked for, so a plan's result (every configuration's points
included) is the same with or without the cache. Threads may share a cache: the table is
guarded by a lock, and a probe's shared points only ever gain identical entries, or a whole
run's point in place of one stopped early (`early_stop`), which only searches watching its
limit are handed.

Across processes (a sweep's workers, `search_parts`) a cache travels as what its probes
simulated (`ProbeState`: capacity and points, plain data; no engines, no lock): a worker
starts with everything the plan has simulated so far, and sends back what it simulated,
which the plan's cache `absorb`s. So the timeline, the band and the lever table reuse the
simulations of a search run on a process pool as they do those of one run in process. A
state waits, keyed, until its probe is first built here.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

from llmsizer.instance import DeploymentSpec
from llmsizer.sizing.probe import Probe, ProbeState
from llmsizer.sizing.search import SearchSpace, SpecEfficiency, make_probe

DEFAULT_MAX_PROBES = 512  # a probe holds its points' summaries: a few kB each


class ProbeCache:
    """A `MakeProbe` (see `llmsizer.sizing.search`) that remembers up to `max_probes` probes,
    least recently used dropped first."""

    def __init__(self, max_probes: int = DEFAULT_MAX_PROBES) -> None:
        if max_probes < 1:
            raise ValueError(f"max_probes must be >= 1, got {max_probes}")
        self.max_probes = max_probes
        self._probes: OrderedDict[Hashable, Probe] = OrderedDict()
        self._waiting: OrderedDict[Hashable, ProbeState] = OrderedDict()  # not built here yet
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __getstate__(self) -> dict[str, Any]:
        # a copy in another process (a sweep's worker) takes what was simulated, as plain
        # data: the lock cannot travel, and engines are cheaper to rebuild than to send
        return {"max_probes": self.max_probes, "states": self.states()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["max_probes"])  # type: ignore[misc]
        self.absorb(state["states"])

    def states(self) -> dict[Hashable, ProbeState]:
        """What every probe kept here has simulated, by key (module docstring)."""
        with self._lock:
            out = dict(self._waiting)
            out.update((key, probe.state()) for key, probe in self._probes.items())
        return out

    def absorb(self, states: dict[Hashable, ProbeState]) -> None:
        """Take what another copy of this cache simulated (`states`): into the probe of its
        key, or kept until that probe is built."""
        with self._lock:
            for key, state in states.items():
                probe = self._probes.get(key)
                if probe is not None:
                    probe.absorb(state)
                    continue
                waiting = self._waiting.pop(key, None)
                self._waiting[key] = state if waiting is None else waiting.merged(state)
                while len(self._waiting) > self.max_probes:
                    self._waiting.popitem(last=False)

    def __len__(self) -> int:
        return len(self._probes)

    def __call__(
        self, space: SearchSpace, config: DeploymentSpec, efficiency: SpecEfficiency
    ) -> Probe:
        """The probe of `config` in `space` (built by `make_probe` on a miss; its errors,
        such as `DoesNotFitError`, are raised every time, never cached)."""
        key = _key(space, config, efficiency)
        with self._lock:
            probe = self._probes.get(key)
            if probe is not None:
                self._probes.move_to_end(key)
                self.hits += 1
                return probe.view()
            self.misses += 1
        probe = make_probe(space, config, efficiency)  # outside the lock: it can take a while
        with self._lock:
            probe = self._probes.setdefault(key, probe)
            waiting = self._waiting.pop(key, None)
            if waiting is not None:
                probe.absorb(waiting)
            while len(self._probes) > self.max_probes:
                self._probes.popitem(last=False)
        return probe.view()


def _key(space: SearchSpace, config: DeploymentSpec, efficiency: SpecEfficiency) -> Hashable:
    lengths = hashlib.sha256()
    lengths.update(space.lengths.prompt.tobytes())
    lengths.update(space.lengths.output.tobytes())
    limits = space.limits
    percentiles = (
        limits.ttft_percentile,
        limits.tpot_percentile,
        limits.e2el_percentile,
        limits.percentiles,
    )
    arrivals = space.arrivals
    gaps = hashlib.sha256(arrivals.trace_gaps.tobytes()).hexdigest()
    return (
        config,
        efficiency(config),
        lengths.hexdigest(),
        space.seed,
        space.num_requests,
        percentiles,
        (arrivals.kind, arrivals.burstiness, gaps),
    )
