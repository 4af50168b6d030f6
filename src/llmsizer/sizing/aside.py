"""Probes put aside: in the lever table's branch and bound (`search._BranchAndBound`, searches
in instance counts), a probe whose watched run looks like failing (`WatchedRun.failing`, a
guess) waits after a slice while a rival of its group runs, one probe a group at a time.
A rival's pass may then make its next probe the floor of a better bound (`RateSearch.step`),
whose failure decides more than the probe put aside would have: NeMo 43B's INT4 TP2 waits
at 36 instances while TP4 fails at 19 and passes at 20, then fails its floor at 39 and is
dropped (its probes at 36 and 38 were 113 k steps).

Only the order changes: a verdict is only ever a whole run's or a certain miss, and the
run put aside is resumed where it stopped (`Probe.at_rate_or_pause`), so the optimum of
every group is the same. What an order can change is which of two configurations of equal
objective a row shows (rows keep the first to reach it): `unsafe` names the groups where a
configuration put aside could have got there first without the pause, and the search runs
them again without pauses, from what is simulated (`search.search`): on the first search's
probes (`Simulated`), so a verdict it has, a whole run's at a rate or a certain miss, is
taken, never simulated again, and a run it put aside is resumed where it stopped (a plan's
probe cache hands out views that share them too; `Simulated` does it without a cache). What
the search again simulates is only what an order without pauses asks and the first search
never decided: on session 16's factors, NeMo 43B's fp8 TP2 at 34 instances (68 GPUs, fp8
TP4's 17 x 4), after its failure at 33 bounded it (60 k steps), and the combination's TP2
at 18 (36 GPUs, TP4's 9 x 4), after 17 (51 k); had either passed, its row would show TP2,
so neither verdict can be skipped (DESIGN.md, the lever table's session 17).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from llmsizer.instance import DeploymentSpec
from llmsizer.sizing.probe import Pause, Probe

if TYPE_CHECKING:
    from llmsizer.sizing.search import MakeProbe, SearchSpace, SpecEfficiency

Entry = tuple[Any, float, int, DeploymentSpec, Any]  # the search's heap entries


class Aside:
    """The entries put aside, and every configuration ever put aside (`paused`). `group_of`
    is the search's incumbent key; `on` False puts nothing aside."""

    def __init__(self, group_of: Callable[[DeploymentSpec], Hashable], on: bool) -> None:
        self.group_of, self.on = group_of, on
        self.entries: list[Entry] = []
        self.paused: set[DeploymentSpec] = set()

    def pause(self, config: DeploymentSpec, heap: Sequence[Entry]) -> Pause | None:
        """When `config`'s probe is to be put aside (module docstring): `None` when nothing
        of its group may be (one at a time)."""
        mine = self.group_of(config)
        if not self.on or any(self.group_of(e[3]) == mine for e in self.entries):
            return None
        return lambda run: run.failing and any(self.group_of(e[3]) == mine for e in heap)

    def put(self, entry: Entry) -> None:
        self.entries.append(entry)
        self.paused.add(entry[3])

    def back(self, heap: list[Entry]) -> None:
        """Entries go back to the heap once no rival of their group waits there."""
        waiting = {self.group_of(e[3]) for e in heap}
        for entry in [e for e in self.entries if self.group_of(e[3]) not in waiting]:
            self.entries.remove(entry)
            heapq.heappush(heap, entry)

    def unsafe(self, tied: Callable[[DeploymentSpec], bool]) -> set[Hashable]:
        """The groups of configurations put aside that `tied` says might have reached their
        group's best objective first without the pause (`search._BranchAndBound.tied`)."""
        return {self.group_of(c) for c in self.paused if tied(c)}


class Simulated:
    """A `MakeProbe` for the search again without pauses (module docstring): a view
    (`Probe.view`) of the probe the first search built for a configuration, which shares
    its capacity, its points and its runs put aside but lists only the points asked of it,
    so the search again gives a fresh search's results; `make`'s probe for the others."""

    def __init__(self, probes: Mapping[DeploymentSpec, Probe], make: MakeProbe) -> None:
        self.probes, self.make = probes, make

    def __call__(
        self, space: SearchSpace, config: DeploymentSpec, efficiency: SpecEfficiency
    ) -> Probe:
        probe = self.probes.get(config)
        return self.make(space, config, efficiency) if probe is None else probe.view()
