"""Routers: which instance of a fleet gets the next request.

Each is a small class with `choose(request_id, view) -> instance index`, named after what
real routers call it (vLLM production-stack, llm-d's scorers, NVIDIA Dynamo's KV router).
A router sees each instance as it stands when the request could first be scheduled there
(the end of the engine step in flight at the arrival), never later.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from llmsizer.workload import Workload


class FleetView(Protocol):
    """What a router may read about the fleet at an arrival."""

    @property
    def num_instances(self) -> int: ...

    @property
    def outstanding(self) -> np.ndarray:
        """Requests routed to each instance and not finished (int array)."""
        ...

    def kv_usage(self) -> np.ndarray:
        """Each instance's KV blocks held by running requests, as a fraction of its blocks
        (vLLM's `kv_cache_usage_perc` / 100: cached blocks nobody references count free)."""
        ...


class RoundRobin:
    """Instance k mod N for the k-th request."""

    def __init__(self, workload: Workload, rng: np.random.Generator) -> None:
        self.next = 0

    def choose(self, request_id: int, view: FleetView) -> int:
        i = self.next
        self.next = (i + 1) % view.num_instances
        return i


class Random:
    """A uniformly random instance: N independent Poisson streams from one (thinning)."""

    def __init__(self, workload: Workload, rng: np.random.Generator) -> None:
        self.rng = rng

    def choose(self, request_id: int, view: FleetView) -> int:
        return int(self.rng.integers(view.num_instances))


class LeastOutstanding:
    """Fewest requests in flight (join the shortest queue); ties to the lowest index."""

    def __init__(self, workload: Workload, rng: np.random.Generator) -> None:
        pass

    def choose(self, request_id: int, view: FleetView) -> int:
        return int(np.argmin(view.outstanding))


class LeastKvUsage:
    """Lowest KV-cache usage; ties (an idle fleet) to the fewest requests in flight, so
    requests routed but not yet admitted still count."""

    def __init__(self, workload: Workload, rng: np.random.Generator) -> None:
        pass

    def choose(self, request_id: int, view: FleetView) -> int:
        usage = view.kv_usage()
        candidates = np.flatnonzero(usage == usage.min())
        return int(candidates[np.argmin(view.outstanding[candidates])])


class PowerOfTwo:
    """Two distinct instances drawn at random, the one with fewer requests in flight
    (Mitzenmacher's power of two choices)."""

    def __init__(self, workload: Workload, rng: np.random.Generator) -> None:
        self.rng = rng

    def choose(self, request_id: int, view: FleetView) -> int:
        n = view.num_instances
        if n == 1:
            return 0
        a = int(self.rng.integers(n))
        b = int(self.rng.integers(n - 1))
        b += b >= a  # uniform over the other n - 1
        return a if view.outstanding[a] <= view.outstanding[b] else b


class PrefixAffinity:
    """Prefix affinity with load balance: the instance with the lowest cost, prompt blocks
    it has not seen (leading prefix hashes) plus requests in flight; ties to the lowest index.

    NVIDIA Dynamo's KV router weighs the same two things (prefill blocks to compute, then
    load); scoring overlap alone would send every request to the first instance, which
    holds the shared system prompt. The router's table of what each instance has seen never
    evicts (an upper bound on the hits a real cache gives).
    """

    def __init__(self, workload: Workload, rng: np.random.Generator) -> None:
        if workload.prefix_hashes is None:
            raise ValueError(
                "router 'prefix' routes by shared prompt prefixes, and this workload has "
                "none (only traces with hash_ids, such as Mooncake's, carry them): choose "
                f"another router ({', '.join(sorted(set(ROUTERS) - {'prefix'}))})"
            )
        self.hashes = workload.prefix_hashes
        self.seen: list[set[int]] = []

    def choose(self, request_id: int, view: FleetView) -> int:
        n = view.num_instances
        if not self.seen:
            self.seen = [set() for _ in range(n)]
        hashes = self.hashes[request_id]
        unseen = np.empty(n, dtype=np.int64)
        for i, seen in enumerate(self.seen):
            k = 0
            while k < len(hashes) and hashes[k] in seen:
                k += 1
            unseen[i] = len(hashes) - k
        best = int(np.argmin(unseen + view.outstanding))
        self.seen[best].update(hashes)
        return best


class Router(Protocol):
    def choose(self, request_id: int, view: FleetView) -> int: ...


RouterFactory = Callable[[Workload, np.random.Generator], Router]

ROUTERS: dict[str, RouterFactory] = {
    "round_robin": RoundRobin,
    "random": Random,
    "least_outstanding": LeastOutstanding,
    "least_kv": LeastKvUsage,
    "power_of_two": PowerOfTwo,
    "prefix": PrefixAffinity,
}


def make_router(name: str, workload: Workload, rng: np.random.Generator) -> Router:
    """The router called `name` for `workload`; a clear error for an unknown name."""
    if name not in ROUTERS:
        raise ValueError(f"unknown router {name!r}; choose one of {', '.join(ROUTERS)}")
    return ROUTERS[name](workload, rng)
