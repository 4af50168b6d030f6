"""Probes put aside: in the lever table's branch and bound (`search._BranchAndBound`, searches
in instance counts), a probe whose watched run looks like failing (`WatchedRun.failing`, a
guess) waits after a slice while a rival of its group runs, one probe a group at a time.
A rival's pass may then make its next probe the floor of a better bound (`RateSearch.step`),
whose failure decides more than the probe put aside would have: NeMo 43B's INT4 TP2 waits
at 36 instances while TP4 fails at 19 and passes at 20, then fails its floor at 39 and is
dropped (its probes at 36 and 38 were 113 k steps).

Only the order changes: a verdict is only ever a whole run's or a certain miss, and the
run put aside is resumed where it stopped (`Probe.at_rate_or_pause`), so the optimum of
every group is the same, ties included, since the search breaks them by the configurations
(`search.rank`: more GPUs per instance, then position), not by which got there first.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from llmsizer.instance import DeploymentSpec
from llmsizer.sizing.probe import Pause

Entry = tuple[Any, DeploymentSpec, Any]  # the search's heap entries: (priority, config, bound)


class Aside:
    """The entries put aside. `group_of` is the search's incumbent key; `on` False puts
    nothing aside."""

    def __init__(self, group_of: Callable[[DeploymentSpec], Hashable], on: bool) -> None:
        self.group_of, self.on = group_of, on
        self.entries: list[Entry] = []

    def pause(self, config: DeploymentSpec, heap: Sequence[Entry]) -> Pause | None:
        """When `config`'s probe is to be put aside (module docstring): `None` when nothing
        of its group may be (one at a time)."""
        mine = self.group_of(config)
        if not self.on or any(self.group_of(e[1]) == mine for e in self.entries):
            return None
        return lambda run: run.failing and any(self.group_of(e[1]) == mine for e in heap)

    def put(self, entry: Entry) -> None:
        self.entries.append(entry)

    def back(self, heap: list[Entry]) -> None:
        """Entries go back to the heap once no rival of their group waits there."""
        waiting = {self.group_of(e[1]) for e in heap}
        for entry in [e for e in self.entries if self.group_of(e[1]) not in waiting]:
            self.entries.remove(entry)
            heapq.heappush(heap, entry)
