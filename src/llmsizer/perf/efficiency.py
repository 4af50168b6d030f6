"""The gap between datasheet peak and what an engine achieves, as numbers a user can see.

A roofline priced at datasheet peak is a lower bound on time; real kernels reach a fraction
of peak, and every step pays fixed costs (scheduler, kernel launches, collective latency).
`EfficiencyFactors` holds those fractions and costs, one factor per mechanism, so each can be
checked against a measurement and fitted (`bounds()` gives a fitter its search box).

The defaults are priors from public measurements, not fits; `calibrated_efficiency`
(`llmsizer.perf.calibrated`, data in `perf/data/`) holds the values fitted on the
calibration set by `bench/validate_perf.py --fit`. The priors:

- `gemm_compute_efficiency` 0.6: cuBLAS reaches ~0.7-0.75 of dense peak on large BF16 GEMMs
  on H100 at sustained clocks; tensor-parallel shards are skinnier (end-to-end prefill MFU
  of 40-60 % is typical).
- `gemm_bandwidth_efficiency` 0.75: weight-streaming GEMV/GEMM kernels reach 70-90 % of HBM
  peak (STREAM-like copies ~90 %); batched decode GEMMs re-read some tiles.
- `attention_compute_efficiency` 0.5: FlashAttention-2 forward reaches ~35-50 % of H100 BF16
  peak, FlashAttention-3 ~60-75 % (Shah et al. 2024).
- `attention_bandwidth_efficiency` 0.7: paged decode attention reads scattered KV blocks,
  below dense streaming.
- `interconnect_efficiency` 0.75: NCCL all-reduce bus bandwidth on NVLink reaches ~70-85 % of
  the per-direction link rate (nccl-tests).
- `collective_hop_latency_s` 4 us: one hop of a collective. A decode-sized all-reduce on an
  NVSwitch fabric is two hops whatever the group size (`roofline.allreduce_hops`), ~8 us,
  as vLLM's custom all-reduce takes on 4-8 H100s (NCCL: ~15 us); over PCIe a ring takes
  2 (n - 1) hops. (Under the ring model of every group the prior was 2 us a hop, and the
  fitted files that still say 2 us were fitted with it held.)
- `layer_overhead_s` 50 us: a decode layer runs ~12 kernels (4 GEMMs, attention, norms,
  rotary, activation, residuals, all-reduces), each with a few microseconds of launch gap,
  ramp-up and tail that no byte count captures. It is a dense GQA layer's: a layer of
  another kind pays its kernels' share (`perf.launches.layer_units`; a MoE + MLA layer 2.25).
- `prefill_layer_overhead_s` 0: the eager launch of a layer. Engines replay decode-only steps
  from captured CUDA graphs (TensorRT-LLM, vLLM, SGLang) but launch a step with prompt work
  kernel by kernel (vLLM: attention between graphed pieces), adding a few microseconds per
  kernel (~15 a layer) that `layer_overhead_s` does not hold; so does a decode step past the
  largest captured size, or of a size not captured without padding (`perf.cuda_graphs`).
  The prior leaves it out; the calibration fits it (it shows in TTFT at low load).
- `step_overhead_s`: vLLM 0.5 ms, TensorRT-LLM 0.3 ms, SGLang 0.4 ms: scheduling, input
  preparation and sampling on the host per step; TensorRT-LLM's C++ runtime is leanest.
- Kinds of work whose kernels differ from the dense GEMMs and prefill attention, each with
  its own achieved fraction of peak; unset (`None`) they take their parent's value
  (`SPLIT_FROM`), so a calibration file that does not name them prices as before:
  - `experts_compute_efficiency`, `experts_bandwidth_efficiency` (parents: the GEMM ones):
    the routed experts run as a grouped GEMM (vLLM `fused_moe` Triton or CUTLASS,
    TensorRT-LLM's CUTLASS MoE, SGLang's DeepGEMM / FlashInfer MoE), one small GEMM per
    expert with its own tile padding, scale loads and a permute / un-permute of the tokens;
    at decode each expert sees a few tokens, and the fraction of HBM bandwidth reached
    depends on the tile shapes it gets (DeepGEMM's README, deepseek-ai/DeepGEMM 2025-02:
    M = 64 FP8 GEMMs of DeepSeek-V3's shapes read 1.7-2.5 of H800's 3.35 TB/s, by N and K;
    it benchmarks the grouped MoE layouts as kernels of their own). The fit says which.
  - `decode_attention_compute_efficiency` (parent: `attention_compute_efficiency`): the
    decode kernels (FlashInfer / TensorRT-LLM XQA / FlashMLA) are not the prefill ones
    (FlashAttention): MLA's absorbed decode is compute-bound (FlashMLA README: up to 660
    TFLOPS of H800's 989 dense BF16, 0.67), and GQA decode at long context reaches its
    own fraction.
- `indexer_overhead_s` 100 us: the fixed time, per step, of one layer's DeepSeek Sparse
  Attention indexer (GLM-5, DeepSeek-V3.2), which runs in every such layer besides the MLA
  attention and which no byte or FLOP count of it explains at small batch: its own
  projections, key norm, rotary, Hadamard rotations and FP8 quantisation of q and k, the
  index-cache store, DeepGEMM's `fp8_paged_mqa_logits` over the whole context and a top-k
  over the logits, some 15 small kernels (SGLang `layers/attention/nsa/nsa_indexer.py`,
  `Indexer`). The prior is SGLang's own measurement of the logits and top-k alone: 0.098 ms
  at 1 sequence of 4k context, 0.117 ms at 8, 0.143 ms at 32 on H200 (DeepSeek-V3.2's 64
  index heads; sgl-project/sglang `layers/attention/nsa/hisa/benchmarks/_results/
  2026-04-20_h200.md`, "baseline"). The bytes it reads (the FP8 index keys) are priced with
  the KV cache, as decode attention reads it.
- `experts_dequant_efficiency` 0.5: routed experts stored weight-only in 4 bits (W4A16:
  `Precision.is_weight_only`, Kimi-K2.5's INT4 checkpoint) run a grouped GEMM that
  dequantises each weight to BF16 in its inner loop (vLLM: Marlin MoE, the Triton
  `fused_moe` int4 path, or FlashInfer's TRT-LLM MxInt4 MoE on Blackwell with
  `VLLM_USE_FLASHINFER_MOE_INT4`), and reaches a smaller fraction of HBM bandwidth than
  the 8- and 4-bit float kernels. Priced as an extra pass over the expert weight bytes read
  at this fraction of HBM peak, added to the experts' roofline time. The prior: vLLM's two
  Triton MoE kernels of a Kimi-K2 (W4A16) decode step at TP8 and 16 clients took 234 us
  on H200 against 109 us for DeepSeek-V3.1's FP8 ones (vllm-project/vllm issue 32832,
  2026-01-22), i.e. ~340 MB of INT4 expert weights per GPU at 1.46 TB/s, 0.30 of the
  H200's 4.8 TB/s; with the experts' bandwidth prior 0.75, 1 / 0.30 - 1 / 0.75 = 1 / 0.5.
- `sequence_overhead_s` 0: the time a step spends per sequence that samples a token beyond
  the roofline: on the host, the scheduler's and output processor's Python per request
  (vLLM v1 `Scheduler.schedule` and `update_from_output`, the latter 0.287 ms at a batch of
  256, ~1.1 us a request: vllm-project/vllm PR 46112, 2026-06; SGLang's
  `process_batch_result_decode`), which an engine scheduling one step ahead hides only up
  to the GPU's step time; on the GPU, the sampler over B x V logits. It grows with the
  batch and is what keeps TPOT rising past the point where the experts' weight reads stop
  growing. 0 here, so every fitted file without it prices as before; the AIC fit starts it
  at `aic_fit.SEQUENCE_PRIOR_S` (docs/tpot_residuals.md, "Per-sequence cost").
- `verify_sequence_overhead_s` 0: the time a speculative verify step spends per decoding
  sequence beyond its roofline and `sequence_overhead_s` (`perf.speculative`; plain steps
  never read it). SGLang's first speculative path (`EAGLEWorker`, the overlap scheduler off)
  runs, serial with the GPU, a host loop over every request and accepted token after the
  verify pass (`EagleVerifyInput.verify`: `.tolist()` of the accepted indices, then per
  request `output_ids.append`, `check_finished`, a slice of the GPU index tensor), the
  draft-extend inputs of each request and `process_batch_result_decode`; a hybrid model
  also rolls each request's recurrent state back to its accepted position
  (docs/aic_measurement.md section 34). 0 here, so nothing prices differently until a fit
  sets it; the AIC fit starts it at `aic_fit.VERIFY_PRIOR_S` where its rows speculate.
- `experts_tile_rows`: not fitted; the rows (M) of one tile of the routed experts' grouped
  GEMM in a step with prompt work. Each expert's rows are padded to whole tiles (vLLM
  `moe_align_block_size` pads every expert's tokens to `BLOCK_SIZE_M`; DeepGEMM's contiguous
  layout aligns each expert's rows to `get_m_alignment_for_contiguous_layout()`, 128; a
  CUTLASS grouped GEMM runs whole CTA tiles of 128 rows per problem), so an expert that gets
  a few rows computes a whole tile (`perf.step`, docs/aic_measurement.md section 18). vLLM
  64: `fused_moe.get_default_config`, `BLOCK_SIZE_M` 64 for M > E and for block-FP8
  (vllm-project/vllm `model_executor/layers/fused_moe/fused_moe.py` @ 000d1458); SGLang 128
  (DeepGEMM's alignment, its FP8-block MoE path on Hopper and Blackwell); TensorRT-LLM 128
  (its CUTLASS MoE GEMM's 128-row CTA tiles).
- `first_token_delay_s` 0: time the serving front end adds to each stream's first chunk and
  the engine never spends: HTTP and tokenisation before the request reaches the scheduler,
  detokenisation and a stream interval after (`llmsizer.sim.delivery`). Not a step cost;
  the prior leaves it out and the fit on measured TTFT under load sets it per engine.
- `moe_first_token_delay_s` 0: the extra hold of each stream's first chunk in a model with
  routed experts, on top of `first_token_delay_s` (`first_token_hold_s`). The holds measured
  per model differ by kind of model, not by load: TensorRT-LLM on B200 80-135 ms for
  DeepSeek-R1/V3 at 1-8 clients against 16 ms for Llama-3.1-70B (docs/aic_measurement.md
  sections 13, 17, 44, 48). Not a step cost; 0 in the general fits (their rows are dense),
  fitted by the AIC fit where its rows have MoE models and dense ones to tell them apart.
- `first_use_build_s` 0: a cold server's one-off build of a kernel module at its first use,
  which the timed requests of a run without a client warm-up wait for (FlashInfer's nvcc
  build of SGLang's chunked-prefix MLA prefill module on B200: docs/aic_measurement.md
  section 41). Not a step cost and never simulated (a sized deployment is warm): only the
  replay of such a measured run reads it (`calibrate.replay`); the AIC fit starts it at
  `aic_fit.FIRST_USE_PRIOR_S` where its engine's rows hold a build.

With these, Llama 2 70B FP16 on 4 H100 SXM at batch 8 (the course's example) predicts 2.2 s
for the 3500-token prefill and 21 ms per output token against the course's 2.6 s and
26.8 ms; tests/validation/test_perf_course.py states the assumptions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from llmsizer.specs.names import normalize_name
from llmsizer.units import US


class EnginePreset(StrEnum):
    """An engine preset (the `EngineConfig.engine` names) whose efficiency factors we keep;
    `EnginePreset.parse` is lenient."""

    VLLM = "vllm"
    TRTLLM = "trtllm"
    SGLANG = "sglang"

    @classmethod
    def parse(cls, text: str | EnginePreset) -> EnginePreset:
        """`vLLM`, `TensorRT-LLM`, `trt-llm`, `trtllm`, `SGLang` ... unknown -> error."""
        if isinstance(text, EnginePreset):
            return text
        found = _ENGINE_ALIASES.get(normalize_name(text))
        if found is None:
            allowed = ", ".join(e.value for e in cls)
            raise ValueError(f"unknown engine {text!r}; allowed: {allowed}")
        return found


_ENGINE_ALIASES = MappingProxyType(
    {
        "vllm": EnginePreset.VLLM,
        "trtllm": EnginePreset.TRTLLM,
        "tensorrtllm": EnginePreset.TRTLLM,
        "tensorrt": EnginePreset.TRTLLM,
        "trt": EnginePreset.TRTLLM,
        "sglang": EnginePreset.SGLANG,
    }
)


@dataclass(frozen=True, slots=True)
class EfficiencyFactors:
    """Achieved fractions of peak and fixed costs, one per mechanism (module docstring).

    Efficiencies are fractions in (0, 1]; times are seconds >= 0.
    """

    gemm_compute_efficiency: float = 0.6
    gemm_bandwidth_efficiency: float = 0.75
    attention_compute_efficiency: float = 0.5
    attention_bandwidth_efficiency: float = 0.7
    interconnect_efficiency: float = 0.75
    collective_hop_latency_s: float = 4 * US
    layer_overhead_s: float = 50 * US
    prefill_layer_overhead_s: float = 0.0
    step_overhead_s: float = 500 * US
    first_token_delay_s: float = 0.0
    experts_compute_efficiency: float | None = None  # None: gemm_compute_efficiency
    experts_bandwidth_efficiency: float | None = None  # None: gemm_bandwidth_efficiency
    decode_attention_compute_efficiency: float | None = None  # None: attention_compute_...
    indexer_overhead_s: float = 100 * US
    experts_dequant_efficiency: float = 0.5
    sequence_overhead_s: float = 0.0
    verify_sequence_overhead_s: float = 0.0
    experts_tile_rows: float = 64.0  # rows, not fitted: the engine's grouped-GEMM tile
    first_use_build_s: float = 0.0
    moe_first_token_delay_s: float = 0.0

    def __post_init__(self) -> None:
        for name, (low, high) in _BOUNDS.items():
            value = getattr(self, name)
            if value is None and name in SPLIT_FROM:
                continue
            if not low <= value <= high or (name.endswith("efficiency") and value == 0):
                raise ValueError(f"{name} = {value!r} is outside its range [{low}, {high}]")

    def value(self, name: str) -> float:
        """The factor `name` in effect: a split factor left unset is its parent's
        (`SPLIT_FROM`)."""
        value: float | None = getattr(self, name)
        return getattr(self, SPLIT_FROM[name]) if value is None else value

    def first_token_hold_s(self, moe: bool) -> float:
        """How long the front end holds each stream's first chunk for a model with routed
        experts (`moe`) or without: `first_token_delay_s`, plus `moe_first_token_delay_s`
        for MoE."""
        return self.first_token_delay_s + (self.moe_first_token_delay_s if moe else 0.0)

    def resolved(self) -> EfficiencyFactors:
        """A copy with every split factor set to the value in effect (for a fit's start)."""
        return dataclasses.replace(self, **{name: self.value(name) for name in SPLIT_FROM})

    @staticmethod
    def bounds() -> Mapping[str, tuple[float, float]]:
        """Allowed range of each factor: the search box for a fit."""
        return _BOUNDS

    def replace(self, **changes: float) -> EfficiencyFactors:
        """A copy with some factors changed (validated)."""
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, float]:
        """Every factor that is set (split factors left unset are left out)."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {k: v for k, v in values.items() if v is not None}

    @classmethod
    def from_dict(cls, values: Mapping[str, float]) -> EfficiencyFactors:
        """Strict: unknown names are an error naming the allowed ones."""
        unknown = set(values) - set(_BOUNDS)
        if unknown:
            raise ValueError(
                f"unknown efficiency factors {sorted(unknown)}; known: {list(_BOUNDS)}"
            )
        return cls(**{k: float(v) for k, v in values.items()})


_BOUNDS: Mapping[str, tuple[float, float]] = MappingProxyType(
    {
        "gemm_compute_efficiency": (0.0, 1.0),
        "gemm_bandwidth_efficiency": (0.0, 1.0),
        "attention_compute_efficiency": (0.0, 1.0),
        "attention_bandwidth_efficiency": (0.0, 1.0),
        "interconnect_efficiency": (0.0, 1.0),
        "collective_hop_latency_s": (0.0, 100 * US),
        "layer_overhead_s": (0.0, 500 * US),
        "prefill_layer_overhead_s": (0.0, 2_000 * US),
        "step_overhead_s": (0.0, 50_000 * US),
        "first_token_delay_s": (0.0, 2.0),
        "experts_compute_efficiency": (0.0, 1.0),
        "experts_bandwidth_efficiency": (0.0, 1.0),
        "decode_attention_compute_efficiency": (0.0, 1.0),
        "indexer_overhead_s": (0.0, 1_000 * US),
        "experts_dequant_efficiency": (0.0, 1.0),
        "sequence_overhead_s": (0.0, 200 * US),
        "verify_sequence_overhead_s": (0.0, 1_000 * US),
        "experts_tile_rows": (1.0, 512.0),
        "first_use_build_s": (0.0, 600.0),
        "moe_first_token_delay_s": (0.0, 2.0),
    }
)

# split factor -> the factor whose value it takes when unset (module docstring)
SPLIT_FROM: Mapping[str, str] = MappingProxyType(
    {
        "experts_compute_efficiency": "gemm_compute_efficiency",
        "experts_bandwidth_efficiency": "gemm_bandwidth_efficiency",
        "decode_attention_compute_efficiency": "attention_compute_efficiency",
    }
)

_STEP_OVERHEAD_S = MappingProxyType(
    {EnginePreset.VLLM: 500 * US, EnginePreset.TRTLLM: 300 * US, EnginePreset.SGLANG: 400 * US}
)


_EXPERTS_TILE_ROWS = MappingProxyType(
    {EnginePreset.VLLM: 64.0, EnginePreset.TRTLLM: 128.0, EnginePreset.SGLANG: 128.0}
)


def default_efficiency(engine: EnginePreset | str = EnginePreset.VLLM) -> EfficiencyFactors:
    """The unfitted priors for `engine` (module docstring); replaced by fitted values later."""
    preset = EnginePreset.parse(engine)
    return EfficiencyFactors(
        step_overhead_s=_STEP_OVERHEAD_S[preset], experts_tile_rows=_EXPERTS_TILE_ROWS[preset]
    )
