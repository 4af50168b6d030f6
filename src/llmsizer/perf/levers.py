"""The levers a deployment can pull on a GPU, what each costs in quality, and the fallbacks.

Which weight precisions run natively where (the GPU catalog's dense tensor-core peaks):
FP8 on Hopper, Ada and later (and MI300X), FP4 on Blackwell; INT4 weight-only (W4A16,
AWQ/GPTQ with Marlin-style kernels) runs anywhere, its math in 16 bits. A precision whose
math the GPU lacks still loads (vLLM dequantises the weights), but its matrix multiplies
fall back to 16-bit math, so only the weight bytes shrink: `fallback_note` says so instead
of letting it happen silently.

Quality notes, by format (what a planner must check before shipping):
- bf16 / fp16: the checkpoint's own precision, lossless.
- fp8 (E4M3, per-tensor or per-channel scales) and fp8_block: usually within noise of bf16
  on the usual benchmarks (NVIDIA TensorRT Model Optimizer and vLLM "FP8 W8A8" docs; Kurtic
  et al. 2024, "Give Me BF16 or Give Me Death", arXiv:2411.02355: FP8 W8A8 recovers > 99 %).
- int8 (W8A8 SmoothQuant): small loss, check accuracy (same paper: 1-3 % drops).
- int4 (W4A16 AWQ/GPTQ group 128): usually a small loss, needs an accuracy check (same
  paper: ~98-99 % recovery, larger drops on small models and long reasoning).
- fp4 (NVFP4) / mxfp4: needs an accuracy check, and often quantisation-aware or calibrated
  checkpoints (NVIDIA NVFP4 blog 2025: ~1 % loss on DeepSeek-R1 after calibration).
- 2:4 sparsity: needs pruning and retraining to recover accuracy (Mishra et al. 2021,
  "Accelerating Sparse Deep Neural Networks", arXiv:2104.08378; MLPerf v4.0's sparse Llama
  2 70B was fine-tuned after pruning): never a switch on an existing checkpoint.
- speculative decoding: lossless; verification keeps exactly the target's output
  distribution (Leviathan et al. 2023, "Fast Inference from Transformers via Speculative
  Decoding", theorem 3.5); it buys latency, never costs quality.
"""

from __future__ import annotations

from types import MappingProxyType

from llmsizer.perf.deployment import Deployment
from llmsizer.perf.sparsity import has_sparse_tensor_cores
from llmsizer.specs.dtypes import Precision
from llmsizer.specs.gpus import GpuSpec

LOSSLESS = "lossless"
CHECK = "needs an accuracy check"
QUALITY = MappingProxyType(
    {
        Precision.BF16: LOSSLESS,
        Precision.FP16: LOSSLESS,
        Precision.FP8: "usually lossless",
        Precision.FP8_BLOCK: "usually lossless",
        Precision.INT8: f"small loss, {CHECK}",
        Precision.INT4: f"small loss, {CHECK}",
        Precision.INT4_G32: f"small loss, {CHECK}",
        Precision.FP4: CHECK,
        Precision.MXFP4: CHECK,
    }
)
SPARSITY_QUALITY = "a pruned, retrained checkpoint"


def quality_note(precision: Precision | str) -> str:
    """The quality note of a weight precision (module docstring)."""
    return QUALITY[Precision.parse(precision)]


def search_precisions(gpu: GpuSpec) -> tuple[Precision, ...]:
    """The weight precisions worth searching on `gpu`: bf16, every format with native
    tensor-core math there (fp8, fp4), and int4 weight-only, which runs anywhere."""
    native = [p for p in (Precision.FP8, Precision.FP4) if gpu.supports(p)]
    return (Precision.BF16, *native, Precision.INT4)


def fallback_note(deployment: Deployment) -> str | None:
    """A sentence when the weights' format has no native math on the GPU (module docstring),
    naming the fallback; `None` when it runs as named or is weight-only by design."""
    p, gpu = deployment.precision, deployment.gpu
    if p.is_weight_only or gpu.supports(p):
        return None
    math = deployment.matmul_precision.value
    return (
        f"{gpu.key} has no {p.tensor_core_precision.value} tensor cores: {p.value} weights "
        f"run as weight-only ({math} math), only the weight bytes shrink"
    )


def sparsity_note(gpu: GpuSpec) -> str | None:
    """A sentence when `gpu` has no sparse tensor cores (`perf.sparsity`), so 2:4 sparse
    configurations on it are left out; `None` when it has them."""
    if has_sparse_tensor_cores(gpu):
        return None
    return (
        f"{gpu.display_name} has no sparse tensor cores: its 2:4 sparse configurations are "
        "left out (they would run as dense math)"
    )
