"""Disaggregated deployments joined with the catalog: each pool's engines, and the KV link.

`kv_transfer` times the handoff from the catalog's fabrics: each GPU of the prefill
instance sends its own shard of a request's KV cache and each decode GPU receives its
shard, all in parallel, so a token costs the larger per-GPU KV share of the two instances
over one GPU's link. `nvlink`: both pools in one scale-up domain (an 8-GPU NVLink node, an
NVL72 rack), the GPU's `scale_up_bytes_per_s`. `network`: between systems, the system's
`scale_out_bytes_per_s_per_gpu` (InfiniBand / RoCE NICs, one per GPU). Only bandwidth is
modelled: a transfer's setup latency (NIXL / UCX, microseconds) is left at 0.

A decode pool that speculates (its spec's `speculative`: MTP, EAGLE, a draft model) runs
as an aggregated speculating engine does (`instance.speculation`): its steps priced as
verify steps plus the drafter's passes, its KV cache shared with the drafter's, and the
run counted in verify steps, each request's tokens mapped back from them. The prefill pool
computes the prompt and the first token as before (the drafter's pass over the prompt, one
layer of the target's, is not priced there). The decode pool's step that admits a handed-off
request prices its first token as a decode, as the engines run it (`instance.handoff`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

import numpy as np

from llmsizer.fleet import DisaggResult, KvTransfer, simulate_disaggregated
from llmsizer.instance.deployment import DeploymentSpec
from llmsizer.instance.handoff import HandoffAdmission
from llmsizer.instance.instance import Instance, make_instance
from llmsizer.instance.speculation import (
    SpeculativeSpec,
    in_steps,
    kv_share,
    record_in_tokens,
    speculative_cost,
)
from llmsizer.perf import EfficiencyFactors
from llmsizer.sim import Engine
from llmsizer.specs import SystemSpec, system_catalog
from llmsizer.workload import Workload

Link = Literal["nvlink", "network"]
_GB_S = 1e9  # bytes/s per GB/s, for messages


def slowest_catalog_link_bytes_per_s() -> float:
    """The slowest per-GPU link in the system catalog (scale-out NICs)."""
    links = [s.scale_out_bytes_per_s_per_gpu for s in system_catalog().values()]
    return min(b for b in links if b is not None)


def link_bytes_per_s(link: Link | float, prefill: Instance, system: SystemSpec | None) -> float:
    """Per-GPU bandwidth of `link`: a catalog fabric by name, or bytes/s given outright
    (refused when slower than every link in the catalog)."""
    if not isinstance(link, str):
        slowest = slowest_catalog_link_bytes_per_s()
        if not link >= slowest:
            raise ValueError(
                f"a KV link of {link / _GB_S:g} GB/s per GPU is slower than every link in the "
                f"system catalog (slowest {slowest / _GB_S:g} GB/s); give at least that"
            )
        return float(link)
    if link == "nvlink":
        gpu = prefill.deployment.gpu
        if gpu.scale_up_bytes_per_s is None:
            raise ValueError(f"{gpu.display_name} has no NVLink-class fabric: use link network")
        return gpu.scale_up_bytes_per_s
    if link == "network":
        if system is None or system.scale_out_bytes_per_s_per_gpu is None:
            name = "no system" if system is None else system.display_name
            raise ValueError(f"link network needs a system with a scale-out network, got {name}")
        return system.scale_out_bytes_per_s_per_gpu
    raise ValueError(f"unknown KV link {link!r}; choose nvlink, network or a bandwidth")


def kv_transfer(
    prefill: Instance, decode: Instance, link: Link | float, system: SystemSpec | None = None
) -> KvTransfer:
    """The handoff's cost (module docstring)."""
    per_gpu = max(prefill.memory.kv_bytes_per_token, decode.memory.kv_bytes_per_token)
    return KvTransfer(bytes_per_token=per_gpu, bytes_per_s=link_bytes_per_s(link, prefill, system))


@dataclass(frozen=True, slots=True)
class Disaggregated:
    """A prefill pool, a decode pool and the link between them, ready to simulate."""

    prefill: list[Engine]
    decode: list[Engine]
    transfer: KvTransfer
    prefill_instance: Instance
    decode_instance: Instance
    speculative: SpeculativeSpec | None = None  # the decode pool's (module docstring)
    decode_kv_fraction: float = 1.0  # of its KV cache left to the target when speculating

    def run(self, workload: Workload, router: str = "least_outstanding") -> DisaggResult:
        """Simulate `workload` on the two pools, `router` in each."""
        if self.speculative is None:
            return self._run(self.decode, workload, router)
        rng = np.random.default_rng(0)
        steps = in_steps(self.decode[0], workload, self.speculative, self.decode_kv_fraction, rng)
        result = self._run([steps.engine] * len(self.decode), steps.workload, router)
        records = [record_in_tokens(r, int(steps.num_output[r.request_id])) for r in result.records]
        return dataclasses.replace(result, records=records)

    def _run(self, decode: list[Engine], workload: Workload, router: str) -> DisaggResult:
        return simulate_disaggregated(
            self.prefill,
            decode,
            workload,
            self.transfer,
            prefill_router=router,
            decode_router=router,
        )

    @property
    def num_gpus(self) -> int:
        return (
            len(self.prefill) * self.prefill_instance.num_gpus
            + len(self.decode) * self.decode_instance.num_gpus
        )


def make_disaggregated(
    prefill: DeploymentSpec,
    decode: DeploymentSpec,
    *,
    num_prefill: int,
    num_decode: int,
    link: Link | float,
    system: SystemSpec | None = None,
    max_model_len: int | None = None,
    efficiency: tuple[EfficiencyFactors, EfficiencyFactors] | None = None,
) -> Disaggregated:
    """`num_prefill` instances of `prefill` and `num_decode` of `decode` (a P:D ratio of
    at least 1:1 worker each), priced by the GPU model, and their KV link. Each pool's
    engines are its instance's own simulator (`Instance.simulator`: the calibrated factors
    and the front end's first-token hold, as aggregated predictions have them);
    `efficiency` (prefill's, decode's) overrides the shipped factors."""
    if num_prefill < 1 or num_decode < 1:
        raise ValueError(
            f"a disaggregated deployment needs >= 1 prefill and >= 1 decode worker, got "
            f"P:D = {num_prefill}:{num_decode}"
        )
    for role, spec in (("prefill", prefill), ("decode", decode)):
        if spec.pipeline_parallel_size > 1:
            raise ValueError(
                f"the {role} pool has pipeline_parallel_size {spec.pipeline_parallel_size}; "
                "disaggregated pools are simulated with tensor parallelism only (pp 1)"
            )
    eff_p, eff_d = (None, None) if efficiency is None else efficiency
    p = make_instance(prefill, max_model_len=max_model_len, efficiency=eff_p)
    d = make_instance(decode, max_model_len=max_model_len, efficiency=eff_d)
    drafting, share = decode.speculative, 1.0
    engine = d.simulator(step_cost=HandoffAdmission(d.step))
    if drafting is not None:  # module docstring
        cost = speculative_cost(drafting, d.step, d.engine.overlap_scheduler)
        share = kv_share(drafting, cost, d.memory.kv_cache_bytes)
        engine = d.simulator(step_cost=HandoffAdmission(cost))
    return Disaggregated(
        prefill=[p.simulator()] * num_prefill,
        decode=[engine] * num_decode,
        transfer=kv_transfer(p, d, link, system),
        prefill_instance=p,
        decode_instance=d,
        speculative=drafting,
        decode_kv_fraction=share,
    )
