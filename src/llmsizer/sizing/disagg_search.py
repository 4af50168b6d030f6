"""`plan --disaggregated`: the fewest GPUs for disaggregated prefill and decode pools.

On the aggregated winner's GPU, precision and engine (pp 1, no speculation), for each
tensor-parallel size the use case allows:

1. **A prefill worker's rate**: the highest Poisson rate at which one worker, computing
   prompts only (one output token each), meets the TTFT limit less the KV handoff of the
   longest prompt (`RateSearch` on a `Probe` of the prompts alone).
2. **A decode worker's rate**: the highest rate at which one worker, handed each prompt's
   KV as the request arrives, meets the TPOT limit (`DecodeProbe`: the decode pool alone).
3. **The layout**: `P = ceil(load / prefill rate)` and `D = ceil(load / decode rate)` for
   every pair of sizes (or the fixed P:D ratio scaled up until both hold); fewest GPUs wins,
   then fewest workers.
4. **The check**: the whole P/D fleet simulated at the planning load behind the router
   (`instance.disagg.make_disaggregated`), judged on every limit (E2E included) after a
   warm-up; while a limit is missed, a worker is added to the pool behind it (TTFT:
   prefill, TPOT: decode), up to half again the planned workers, as `plan --router` does.

As the aggregated plan assumes each instance sees `load / N` of Poisson arrivals, the pools'
rates assume each worker sees its share; the check is what judges the answer.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from llmsizer.fleet import simulate_disaggregated
from llmsizer.instance import DeploymentSpec, Instance, make_instance
from llmsizer.instance.disagg import Disaggregated, Link, make_disaggregated
from llmsizer.metrics import summarize
from llmsizer.perf import DoesNotFitError
from llmsizer.sim import Engine, SimResult
from llmsizer.sizing.limits import Latencies, Limits, Metric
from llmsizer.sizing.probe import WARMUP_FRACTION, Lengths, Probe
from llmsizer.sizing.rate_search import RateSearch
from llmsizer.sizing.search import SearchSpace, SpecEfficiency
from llmsizer.sizing.servers import Server, server_for
from llmsizer.specs import SystemSpec, UnknownNameError, system_catalog
from llmsizer.workload import Workload, poisson_arrivals

Role = Literal["prefill", "decode"]
MAX_EXTRA = 0.5  # the check adds at most half again the planned workers
REQUESTS_PER_WORKER, MIN_REQUESTS, MAX_REQUESTS = 300, 3000, 30_000
_INSTANT_S = 1e-9  # a prefill step of the decode probe's stand-in prefill worker


@dataclass(frozen=True, slots=True)
class PoolRate:
    """One worker of `role` at `spec`: req/s it serves within its limit, or why none."""

    role: Role
    spec: DeploymentSpec
    rate: float | None
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Layout:
    """`num_prefill` workers of `prefill` and `num_decode` of `decode`."""

    prefill: DeploymentSpec
    decode: DeploymentSpec
    num_prefill: int
    num_decode: int

    @property
    def num_gpus(self) -> int:
        return (
            self.num_prefill * self.prefill.tensor_parallel_size
            + self.num_decode * self.decode.tensor_parallel_size
        )

    def label(self) -> str:
        p, d = self.prefill.tensor_parallel_size, self.decode.tensor_parallel_size
        return f"{self.num_prefill}x TP{p} prefill + {self.num_decode}x TP{d} decode"


@dataclass(frozen=True, slots=True)
class FleetRun:
    """The whole P/D fleet at the planning load: judged latencies (s), met or not."""

    layout: Layout
    latencies: Latencies
    meets: bool


@dataclass(frozen=True, slots=True)
class DisaggSearch:
    """Every pool rate found, the layout they give (`planned`), the whole-fleet runs, and
    the answer (`layout`: the first run that met every limit; `None`: none did)."""

    rates: tuple[PoolRate, ...]
    planned: Layout | None
    runs: tuple[FleetRun, ...]
    layout: Layout | None
    link: str
    reason: str


class DecodeProbe(Probe):
    """A decode worker alone: every request's prompt KV arrives with it (a stand-in prefill
    worker whose steps take 1 ns, a free link); its first token at the handoff, so its TPOT
    holds the decode pool's own latencies: each step and the wait for a decode slot."""

    def _simulate(self, arrival_s: np.ndarray) -> SimResult:
        idx = np.arange(arrival_s.shape[0]) % self.lengths.num_requests
        workload = Workload(self.lengths.prompt[idx], self.lengths.output[idx], arrival_s=arrival_s)
        instant = _instant(self.engine, self.lengths)
        res = simulate_disaggregated([instant], [self.engine], workload, first_token_at="handoff")
        return dataclasses.replace(res.decode[0], records=res.records)


def _instant(engine: Engine, lengths: Lengths) -> Engine:
    config = engine.config.model_copy(
        update={
            "max_num_seqs": 4096,
            "max_num_batched_tokens": max(
                engine.config.max_num_batched_tokens, lengths.max_context
            ),
            "num_gpu_blocks": None,
            "enable_chunked_prefill": True,
        }
    )
    return Engine(config, lambda batch: _INSTANT_S)


def pool_spec(base: DeploymentSpec, tp: int) -> DeploymentSpec:
    """A pool's worker: `base` at tensor-parallel size `tp`, pp 1, without speculation."""
    return base.model_copy(
        update={"tensor_parallel_size": tp, "pipeline_parallel_size": 1, "speculative": None}
    )


def pool_rate(
    role: Role,
    spec: DeploymentSpec,
    space: SearchSpace,
    efficiency: SpecEfficiency,
    handoff_s: float = 0.0,
) -> PoolRate:
    """The highest rate one `role` worker meets its limit at (module docstring)."""
    try:
        inst = make_instance(
            spec, max_model_len=space.lengths.max_context, efficiency=efficiency(spec)
        )
    except (ValueError, DoesNotFitError, UnknownNameError) as e:
        return PoolRate(role, spec, None, str(e).split(":")[0])
    limits = _pool_limits(role, space.limits, handoff_s)
    if limits is None:
        return PoolRate(
            role,
            spec,
            None,
            f"the KV handoff alone ({handoff_s * 1e3:.1f} ms) takes the whole TTFT limit",
        )
    probe = _probe(role, inst, space, limits)
    found = RateSearch(probe, limits, online=space.online).run()
    if found.rate is None:
        return PoolRate(role, spec, None, f"misses {_metric(role).label} at every rate tried")
    return PoolRate(role, spec, found.rate)


def _metric(role: Role) -> Metric:
    return Metric.TTFT if role == "prefill" else Metric.TPOT


def _pool_limits(role: Role, limits: Limits, handoff_s: float) -> Limits | None:
    """The limit a `role` worker is searched on: TTFT (less the handoff) or TPOT alone."""
    metric = _metric(role)
    lim = limits.limit(metric)
    if lim is None:
        return Limits()
    value = lim.limit_s - (handoff_s if role == "prefill" else 0.0)
    if value <= 0:
        return None
    return Limits(**{f"{metric.value}_s": value, f"{metric.value}_percentile": lim.percentile})


def _probe(role: Role, inst: Instance, space: SearchSpace, limits: Limits) -> Probe:
    lengths = space.lengths
    probe: type[Probe] = DecodeProbe
    if role == "prefill":  # the prompt and its first token only
        ones = np.ones_like(lengths.output)
        lengths, probe = Lengths(lengths.prompt, ones, lengths.source), Probe
    return probe(
        inst,
        lengths,
        limits,
        seed=space.seed,
        num_requests=space.num_requests,
        arrivals=space.arrivals,
    )


def layouts(
    prefill: list[PoolRate], decode: list[PoolRate], load_rps: float, ratio: tuple[int, int] | None
) -> list[Layout]:
    """Every pair of pool sizes with a rate, sized for `load_rps`, fewest GPUs first."""
    out: list[Layout] = []
    for p in prefill:
        for d in decode:
            if p.rate is None or d.rate is None:
                continue
            num_p = max(1, math.ceil(load_rps / p.rate - 1e-9))
            num_d = max(1, math.ceil(load_rps / d.rate - 1e-9))
            if ratio is not None:
                k = max(math.ceil(num_p / ratio[0]), math.ceil(num_d / ratio[1]))
                num_p, num_d = k * ratio[0], k * ratio[1]
            out.append(Layout(p.spec, d.spec, num_p, num_d))
    return sorted(out, key=lambda lay: (lay.num_gpus, lay.num_prefill + lay.num_decode))


def resolve_link(
    link: Literal["auto", "nvlink", "network"] | float, num_gpus: int, server: Server
) -> Link | float:
    """`auto`: NVLink when every GPU of both pools sits in one NVLink domain, else network."""
    if link != "auto":
        return link
    return "nvlink" if 1 < num_gpus <= server.nvlink_domain_size else "network"


def catalog_system(server: Server) -> SystemSpec | None:
    """The catalog system of the server's GPU (its NICs), `None` for a generic server."""
    systems = [s for s in system_catalog().values() if s.gpu_key == server.gpu_key]
    return min(systems, key=lambda s: s.key) if systems else None


def build(
    layout: Layout,
    link: Literal["auto", "nvlink", "network"] | float,
    space: SearchSpace,
    efficiency: SpecEfficiency,
) -> Disaggregated:
    """The layout's engines and KV link, priced as the search priced its pools."""
    server = server_for(layout.prefill.gpu)
    return make_disaggregated(
        layout.prefill,
        layout.decode,
        num_prefill=layout.num_prefill,
        num_decode=layout.num_decode,
        link=resolve_link(link, layout.num_gpus, server),
        system=catalog_system(server),
        max_model_len=space.lengths.max_context,
        efficiency=(efficiency(layout.prefill), efficiency(layout.decode)),
    )


def run_fleet(
    layout: Layout,
    link: Literal["auto", "nvlink", "network"] | float,
    space: SearchSpace,
    efficiency: SpecEfficiency,
    router: str,
) -> FleetRun:
    """The whole P/D fleet at the planning load, judged on every limit after warm-up."""
    fleet = build(layout, link, space, efficiency)
    workers = layout.num_prefill + layout.num_decode
    num = min(MAX_REQUESTS, max(MIN_REQUESTS, REQUESTS_PER_WORKER * workers))
    lengths = space.lengths
    idx = np.arange(num) % lengths.num_requests
    arrivals = poisson_arrivals(num, space.load_rps, np.random.default_rng(space.seed))
    workload = Workload(lengths.prompt[idx], lengths.output[idx], arrival_s=arrivals)
    records = fleet.run(workload, router).records[int(WARMUP_FRACTION * num) :]
    summary = summarize(records, percentiles=space.limits.percentiles)
    latencies = Latencies.from_summary(summary, space.limits.percentiles)
    return FleetRun(layout, latencies, space.limits.met_by(latencies))


def check_layout(
    planned: Layout,
    link: Literal["auto", "nvlink", "network"] | float,
    space: SearchSpace,
    efficiency: SpecEfficiency,
    router: str,
    ratio: tuple[int, int] | None,
) -> list[FleetRun]:
    """Simulate `planned`, adding workers to the pool behind the missed limit until every
    limit holds or half again the planned workers are spent (module docstring, step 4)."""
    runs = [run_fleet(planned, link, space, efficiency, router)]
    budget = math.floor((planned.num_prefill + planned.num_decode) * MAX_EXTRA)
    layout = planned
    while not runs[-1].meets and budget > 0:
        missed = _missed_pool(space.limits, runs[-1].latencies)
        if ratio is not None:
            k = layout.num_prefill // ratio[0] + 1
            grown = dataclasses.replace(layout, num_prefill=k * ratio[0], num_decode=k * ratio[1])
        elif missed == "prefill":
            grown = dataclasses.replace(layout, num_prefill=layout.num_prefill + 1)
        else:
            grown = dataclasses.replace(layout, num_decode=layout.num_decode + 1)
        budget -= (grown.num_prefill + grown.num_decode) - (layout.num_prefill + layout.num_decode)
        layout = grown
        runs.append(run_fleet(layout, link, space, efficiency, router))
    return runs


def _missed_pool(limits: Limits, latencies: Latencies) -> Role:
    """The pool behind the worst limit: TTFT is prefill's; TPOT decode's; E2E the one of
    the two further over its own limit (decode when neither has one)."""
    ratios = limits.ratios(latencies)
    worst = max(ratios, key=lambda m: ratios[m])
    if worst is Metric.E2EL:
        ttft, tpot = ratios.get(Metric.TTFT, 0.0), ratios.get(Metric.TPOT, 0.0)
        return "prefill" if ttft > tpot else "decode"
    return "prefill" if worst is Metric.TTFT else "decode"
