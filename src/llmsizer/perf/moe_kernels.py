"""The routed experts' kernel a deployment runs, and what it costs beside the engine's default.

An engine picks the grouped-GEMM kernel of the routed experts by GPU, precision and version,
and a launch can override it (vLLM `--moe-backend` and the environment variables before it,
`VLLM_USE_FLASHINFER_MOE_FP8`, `VLLM_MOE_USE_DEEP_GEMM`; SGLang `--moe-runner-backend`). The
fitted factors (`EfficiencyFactors.experts_bandwidth_efficiency`) price the kernel the engine
picks by default, the one that ran nearly every calibration row. A deployment that names
another kernel (`moe_backend`, vLLM's names) runs the experts' grouped GEMMs at that
kernel's fraction of the default kernel's rate, in bytes read and in FLOPs:
`RELATIVE_RATE`, each with its source.

- `triton` on Blackwell (vLLM's `fused_moe` Triton kernel for block-FP8 experts, what vLLM
  falls back to when FlashInfer's and DeepGEMM's MoE are turned off): 0.86. SGLang measured
  MiniMax-M2.5 FP8 at TP4 on GB200 end to end 9.04 % faster with FlashInfer's TRT-LLM MoE
  than with its default Triton MoE (sgl-project/sglang PR 20394, 2026-03-12, "4xGB200
  Results - TP4: 9.04% speedup over default (triton) moe", an end-to-end serving
  throughput, prompts and decode). The experts are about 0.55 of a step of these rows (the
  step cost's parts of a decode step at c = 16, TP2: 8.1 of 14.3 ms, docs/tpot_residuals.md),
  so the kernel itself runs at 1 / (1 + 0.0904 / 0.55) = 0.86 of the default's rate.

`None` (unset) is the engine's default: scale 1.0, every shipped fit and every deployment
that names no kernel priced exactly as before.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from types import MappingProxyType

# kernel (vLLM --moe-backend name) -> its experts' rate over the engine default kernel's
RELATIVE_RATE: Mapping[str, float] = MappingProxyType({"triton": 0.86})


def check_priced(field: str, name: str | None, priced: Collection[str]) -> str | None:
    """`name` if it is a kernel in `priced` (or None: the engine's default), else an error
    naming `field` and the allowed ones (`moe_backend` here, `linear_kernels`' too)."""
    if name is None or name in priced:
        return name
    allowed = ", ".join(sorted(priced))
    raise ValueError(f"{field} {name!r} has no price; allowed: {allowed} (or unset)")


def check_moe_backend(name: str | None) -> str | None:
    """`name` if it is a kernel with a price here (`check_priced`)."""
    return check_priced("moe_backend", name, RELATIVE_RATE)


def experts_rate_scale(name: str | None) -> float:
    """The experts' bandwidth and FLOP rate under kernel `name`, as a fraction of the
    default kernel's."""
    return 1.0 if name is None else RELATIVE_RATE[check_moe_backend(name) or ""]
