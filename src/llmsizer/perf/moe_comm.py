"""How the MoE layers of an attention data-parallel deployment move tokens to their experts.

With attention data parallelism over D ranks and the experts split over all W = tp x D GPUs,
each MoE layer either

- **gathers** every rank's tokens to every GPU before the experts and reduce-scatters the
  outputs after them (`allgather_reducescatter`, what `moe_a2a_backend` None prices: SGLang's
  `--moe-a2a-backend none`, vLLM's default `--all2all-backend allgather_reducescatter`,
  TensorRT-LLM's `AllGatherReduceScatter`): the traffic of one all-reduce over W GPUs of
  the D x T_rank tokens; or
- **dispatches** each token only to the GPUs of its top-k experts and **combines** the k
  expert outputs back (an all-to-all, `A2A_BACKENDS`): per rank T_rank x k copies of h go
  out, those of the (W - 1) / W routed to another GPU over the link, in the dispatch dtype
  (`dispatch_bytes_per_element`), and come back in the activation dtype, plus a fixed
  latency per dispatch and combine that does not depend on the tokens.

Each all-to-all's fixed latency is its kernels' time at one token per rank, measured on
GB200 by AIConfigurator's collectors (ai-dynamo/aiconfigurator @ 095f58a51,
`aic-core/src/aiconfigurator_core/systems/data/gb200/comm/`: hidden 7168, top-8 of 256
experts, DeepSeek-V3's shape), counted in hops of the shipped `collective_hop_latency_s`
of the engine that runs it (SGLang 4 us, TensorRT-LLM 2 us: `perf/data/calibrated_*`), so
that the shipped factors price it at the measured time and the step's features stay a
count of hops (`calibrate.features`). The bandwidth part runs at the link's rate times
`interconnect_efficiency`, as the all-gather's does: the same collectors measure 540-700
GB/s of DeepEP low-latency traffic per GB200 at 1,024 tokens a rank (`sglang/0.5.12/
wideep_deepep_ll_perf.parquet`, dispatch and combine), 0.6-0.78 of NVLink 5's 900 GB/s,
where NCCL's all-reduce bus bandwidth sits (`EfficiencyFactors.interconnect_efficiency`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from llmsizer.specs.dtypes import Precision

ALLGATHER = "allgather_reducescatter"  # the gather path, the same as None
_US = 1e-6
_NODE_NVLINK = 8  # GPUs of one HGX node's NVLink; a larger domain is a multi-node (NVL72) one


@dataclass(frozen=True, slots=True)
class AllToAll:
    """One all-to-all kernel pair: its fixed time per MoE layer (dispatch and combine, plus
    a prepare step where the kernel has one) and the hop latency it is counted in."""

    latency_s: float
    engine_hop_s: float  # the shipped `collective_hop_latency_s` of the engine running it
    source: str

    @property
    def latency_hops(self) -> float:
        return self.latency_s / self.engine_hop_s


A2A_BACKENDS: Mapping[str, AllToAll] = MappingProxyType(
    {
        # SGLang --moe-a2a-backend deepep --deepep-mode low_latency (vLLM
        # deepep_low_latency): dispatch 16.6 + combine 18.1 us at 1 token a rank
        "deepep_low_latency": AllToAll(
            (16.6 + 18.1) * _US, 4 * _US, "gb200/comm/sglang/0.5.12/wideep_deepep_ll_perf"
        ),
        # --deepep-mode normal (vLLM deepep_high_throughput), 24 SMs: 34.3 + 48.0 us
        "deepep_high_throughput": AllToAll(
            (34.3 + 48.0) * _US, 4 * _US, "gb200/comm/sglang/0.5.12/wideep_deepep_normal_perf"
        ),
        # TensorRT-LLM NVLinkTwoSided (MnnvlMoe), NVFP4, EP32: prepare 15 + dispatch 12 +
        # combine 14 us at 1 token a rank (TensorRT-LLM 1.2.0rc6)
        "nvlink_two_sided": AllToAll(
            (15.0 + 12.0 + 14.0) * _US, 2 * _US, "gb200/comm/trtllm/1.3.0rc10/trtllm_alltoall_perf"
        ),
    }
)


def check_moe_a2a_backend(name: str | None) -> str | None:
    """`name` if it is a known MoE token exchange (or None: the gather path), else an error
    naming the allowed ones."""
    if name is None or name == ALLGATHER or name in A2A_BACKENDS:
        return name
    allowed = ", ".join(sorted((*A2A_BACKENDS, ALLGATHER)))
    raise ValueError(f"moe_a2a_backend {name!r} is not known; allowed: {allowed} (or unset)")


def all_to_all(name: str | None) -> AllToAll | None:
    """The all-to-all `name` runs, or None for the gather path."""
    return A2A_BACKENDS.get(check_moe_a2a_backend(name) or ALLGATHER)


def dispatch_bytes_per_element(precision: Precision, activation_bytes: float) -> float:
    """Bytes per hidden element a dispatch sends: the experts' input quantised before the
    exchange where their GEMMs take quantised activations, with its scales. NVFP4: 4 bits
    and an FP8 scale per 16 (TensorRT-LLM's post-quant all-to-all, SGLang's
    `SGLANG_MOE_NVFP4_DISPATCH` in the srt-slurm recipes); FP8: a byte and an FP32 scale per
    128 (DeepEP's FP8 dispatch, DeepSeek-V3's block scales); else the activations."""
    if precision is Precision.FP4:
        return 0.5 + 1.0 / 16
    if precision in (Precision.FP8, Precision.FP8_BLOCK):
        return 1.0 + 4.0 / 128
    return activation_bytes


def engine_a2a_backend(
    engine: str, *, nvlink_domain: int, attention_dp_size: int, expert_parallel_size: int,
    moe_world_size: int, top_k: int,
) -> str | None:  # fmt: skip
    """The exchange an engine picks itself where the launch names none. TensorRT-LLM
    (1.1-1.2, `WideEPMoE` / `CutlassFusedMoE.select_alltoall_method_type`,
    `tensorrt_llm/_torch/modules/fused_moe/fused_moe_wide_ep.py`): with attention DP, the
    experts whole on each GPU and `moe_ep_size > top_k`, the NVLink all-to-all where
    `MnnvlMemory.supports_mnnvl()` (a multi-node NVLink domain: GB200 / GB300 NVL72), else
    the all-gather (DeepEP only with `TRTLLM_CAN_USE_DEEP_EP` and BF16). SGLang
    (`--moe-a2a-backend none`) and vLLM (`allgather_reducescatter`) gather by default."""
    ep = expert_parallel_size
    if engine != "trtllm" or attention_dp_size == 1 or ep != moe_world_size or ep <= top_k:
        return None
    return "nvlink_two_sided" if nvlink_domain > _NODE_NVLINK and ep <= nvlink_domain else None
