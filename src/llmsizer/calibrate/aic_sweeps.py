"""InferenceX sweeps as data, and the one lookup that names the sweep that ran an AIC row.

A `Sweep` is one launch of a disaggregated deployment: the client counts it ran and its two
pools (`Pool`: workers of `gpus` GPUs each, attention data parallel or tensor parallel, the
experts over `ep` of them). Tables of sweeps come from two sources, each citing its
revisions: `llmsizer.calibrate.aic_launch_gb200` (GB200 DeepSeek-R1 before the configs held
the layouts: the launch scripts, transcribed by hand) and `llmsizer.calibrate.aic_launches`
(every NVIDIA system's Dynamo configs, transcribed from each revision of
`nvidia-master.yaml` by `bench/inferencex_sweeps.py`). Both are `Versions`: the sweeps of a
config from each revision on, and `find_sweep` reads them the same way:

1. the sweeps in force at the row's `measured=` time (a date without a time: its end; the
   export's midnight copies, `T00:00:00.000Z`, are that midnight) that ran its client count
   on its GPUs (`fits`);
2. else those of the first later revision that did (InferenceX runs a pull request's sweeps
   before the change reaches `main`; the change is then the revision that holds them);
3. else the newest earlier one that did.

Several sweeps of one revision that fit are resolved by `pick` (the table's rule) or named in
the reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Pool:
    """`workers` workers of `gpus` GPUs each; `dep` attention data parallel over them (else
    tensor parallel); the experts split over `ep` of the `gpus` (all of them by default; an
    `ep` above `gpus`, as configs whose layout was hardcoded elsewhere wrote it, is all of
    them), each expert tensor parallel over the rest."""

    workers: int
    gpus: int
    dep: bool = True
    ep: int | None = None

    def columns(self, pool: str) -> dict[str, str]:
        """The AIC `{pool}_...` cells of this pool."""
        tp, dp = (1, self.gpus) if self.dep else (self.gpus, 1)
        ep = self.gpus if self.ep is None else min(max(self.ep, 1), self.gpus)
        cells = {"num_workers": self.workers, "tp_size": tp, "pp_size": 1, "attention_dp_size": dp,
                 "moe_tp_size": self.gpus // ep, "moe_ep_size": ep}  # fmt: skip
        return {f"{pool}_{k}": str(v) for k, v in cells.items()}

    @property
    def label(self) -> str:
        """`DEP8`, `TEP4`, `TP8` (tensor parallel, experts not split)."""
        if self.dep:
            return f"DEP{self.gpus}"
        return f"{'TP' if self.ep is not None and self.ep <= 1 else 'TEP'}{self.gpus}"


@dataclass(frozen=True, slots=True)
class Sweep:
    """One launch: its client counts, prefill and decode pools; `mtp` when it ran MTP
    speculative decoding, `mtp_tokens` its draft tokens per step where the launch says
    (`llmsizer.calibrate.aic_launch.mtp_speculation`); `source` names the config and
    revision."""

    concurrencies: tuple[int, ...]
    prefill: Pool
    decode: Pool
    mtp: bool = False
    source: str = ""
    mtp_tokens: int | None = None
    decode_batch: int | None = None  # its decode workers' max batch per rank, where named
    recipe: str = ""  # the srt-slurm recipe it names (`CONFIG_FILE=`), where it names one

    @property
    def num_gpus(self) -> int:
        return sum(p.workers * p.gpus for p in (self.prefill, self.decode))

    @property
    def label(self) -> str:
        """`2P DEP8 + 1D DEP48`: workers and layout of each pool."""
        return " + ".join(
            f"{pool.workers}{role} {pool.label}"
            for role, pool in (("P", self.prefill), ("D", self.decode))
        )


def mtp_columns(sweep: Sweep) -> dict[str, str]:
    """The `mtp` and `mtp_tokens` cells a row launched by `sweep` gets: empty when it
    ran no MTP, the tokens empty where the launch does not say them."""
    if not sweep.mtp:
        return {}
    tokens = "" if sweep.mtp_tokens is None else str(sweep.mtp_tokens)
    return {"mtp": "1", "mtp_tokens": tokens}


def decode_batch_columns(sweep: Sweep) -> dict[str, str]:
    """The `decode_batch_size` cell a row launched by `sweep` gets: its decode workers' most
    requests per attention-DP rank where the launch names it, else nothing."""
    return {} if sweep.decode_batch is None else {"decode_batch_size": str(sweep.decode_batch)}


# a config's sweeps from each revision on, oldest first: [(in force from, sweeps)]
Versions = Sequence[tuple[str, tuple[Sweep, ...]]]
_MEASURED = re.compile(r"measured=(\d{4}-\d{2}-\d{2})(T\d{2}:\d{2}:\d{2})?")
_CONCURRENCY = re.compile(r"silicon_concurrency=(\d+)")


def measured_at(row: Mapping[str, str]) -> str | None:
    """The row's `measured=` time as `YYYY-MM-DDTHH:MM:SSZ` (a date alone: its last second)."""
    found = _MEASURED.search(row["silicon_data_source"])
    if found is None:
        return None
    day, time = found.groups()
    return f"{day}{time or 'T23:59:59'}Z"


def clients(row: Mapping[str, str]) -> int | None:
    found = _CONCURRENCY.search(row["silicon_data_source"])
    return int(found.group(1)) if found else None


def _order(configs: Sequence[Versions], measured: str) -> list[tuple[Sweep, ...]]:
    """The sweeps in the order `find_sweep` tries them (module docstring): those in force
    (each config's newest revision by `measured`) together, then each later revision, oldest
    first, then each earlier one, newest first."""
    in_force: list[Sweep] = []
    later, earlier = [], []
    for versions in configs:
        before = [(since, sweeps) for since, sweeps in versions if since <= measured]
        in_force += before[-1][1] if before else ()
        later += [(since, sweeps) for since, sweeps in versions if since > measured]
        earlier += before[:-1]
    return [
        tuple(in_force),
        *(sweeps for _, sweeps in sorted(later, key=lambda v: v[0])),
        *(sweeps for _, sweeps in sorted(earlier, key=lambda v: v[0], reverse=True)),
    ]


def find_sweep(
    configs: Sequence[Versions],
    measured: str,
    concurrency: int,
    fits: Callable[[Sweep], bool],
    pick: Callable[[list[Sweep]], Sweep | None] = lambda found: None,
) -> Sweep | list[Sweep]:
    """The sweep of `configs` (each a config's `Versions`) that ran `concurrency` clients
    and `fits` the row (module docstring), or the sweeps of the revision that were too many
    to choose from (`pick` found none), or [] where no revision ran it."""
    for sweeps in _order(configs, measured):
        found = [s for s in sweeps if concurrency in s.concurrencies and fits(s)]
        if len(found) == 1:
            return found[0]
        if found:
            chosen = pick(found)
            return found if chosen is None else chosen
    return []
