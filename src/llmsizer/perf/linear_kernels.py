"""The linear layers' kernel an engine runs for a weight format, and its rate beside the default.

The fitted `EfficiencyFactors.gemm_compute_efficiency` prices the dense GEMMs an engine runs
by default. One engine runs block-scaled FP8 weights (`fp8_block`: 128 x 128 weight scales,
DeepSeek-V3 / R1's checkpoints) through a kernel far slower at prompt sizes, so a deployment
that runs it (`Deployment.linear_kernel`) prices its linear layers' FLOPs at that kernel's
fraction of the default's rate (`RELATIVE_RATE`); their weight reads, which bind a decode
step's small batches, are unchanged.

- `fp8_swap_ab` (TensorRT-LLM 1.0-1.2 on SM100 / SM103: B200, B300, GB200, GB300).
  `FP8BlockScalesLinearMethod.apply` runs `torch.ops.trtllm.fp8_swap_ab_gemm` (DeepGEMM,
  the activations quantised to FP8 1 x 128 inside it) whenever `is_sm_100f()`, at every
  batch size, unless `use_cute_dsl_blockscaling_mm` or `disable_deep_gemm`
  (NVIDIA/TensorRT-LLM `tensorrt_llm/_torch/modules/linear.py` @ 00bbf71e; Hopper and
  SM120 run `fp8_block_scaling_gemm` instead). AIConfigurator timed that module's forward in
  TensorRT-LLM 1.2.0rc5 on a B200 (ai-dynamo/aiconfigurator @ 095f58a51,
  `aic-core/src/aiconfigurator_core/systems/data/b200_sxm/gemm/trtllm/1.2.0rc5/
  gemm_perf.parquet`, `gemm_dtype fp8_block`, `kernel_source deepgemm`; the collector
  `collector/trtllm/collect_gemm.py` times `Linear.forward`). Over DeepSeek's six linear
  shapes of a layer at TP 8 (fused q_a / kv_a, q_b, kv_b, o_proj, the shared expert's
  gate-up and down) it reaches 0.51 / 0.42 / 0.36 PFLOP/s at 2,048 / 4,096 / 8,192 tokens,
  0.114 / 0.093 / 0.080 of the B200's dense FP8 peak, where the same harness's BF16 GEMMs
  of the same shapes reach 1.33 / 1.31 / 1.27 PFLOP/s, 0.59 / 0.58 / 0.56 of the BF16 peak:
  a fraction of peak 0.19 / 0.16 / 0.14 of BF16's. 0.15, the 4k-8k tokens of the AIC rows'
  prompt steps (0.21 at 1,024 tokens, where DeepSeek's step is bound by its weight reads).
  The rate depends on the shapes, so on the rank's tensor-parallel shard: the same table's
  shapes at TP 4 / 2 / 1 (q_b, kv_b, o_proj and the shared expert sharded T ways, the fused
  q_a / kv_a whole) give 0.20 / 0.30 / 0.42 of BF16's fraction at 4k-8k tokens (0.19-0.20,
  0.28-0.31, 0.41-0.44); TP 1 is a TensorRT-LLM attention-DP rank (`enable_attention_dp`,
  every disaggregated DeepSeek FP8 prefill pool: docs/aic_measurement.md section 46), which
  runs o_proj at 7,168 x 16,384 where the kernel is faster than BF16. A shard not in the
  table takes the entry of the largest TP at or below it.
  TensorRT-LLM 1.3.0rc10's table (same path, `.../gemm/trtllm/1.3.0rc10/`) reaches
  1.25 PFLOP/s at 8,192 tokens: the kernel was fixed after the versions the rows ran. So a
  deployment runs it only where it says so (`DeploymentSpec.linear_kernel`, the AIC rows'
  TensorRT-LLM versions by `llmsizer.calibrate.engine_kernels.linear_kernel`); a plan for
  today's engine prices the default.

`None` (unset) is the engine's default: scale 1.0, every other deployment priced as before.
A kernel runs one weight format (`FORMAT`); naming it for another is an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from llmsizer.perf.moe_kernels import check_priced
from llmsizer.specs.dtypes import Precision

# kernel -> the rank's tensor-parallel size -> its linear layers' FLOP rate over the engine
# default kernel's (docstring: AIC's B200 1.2.0rc5 GEMM table at DeepSeek's shapes)
RELATIVE_RATE: Mapping[str, Mapping[int, float]] = MappingProxyType({
    "fp8_swap_ab": MappingProxyType({1: 0.42, 2: 0.30, 4: 0.20, 8: 0.15}),
})  # fmt: skip
# kernel -> the weight format it runs
FORMAT: Mapping[str, Precision] = MappingProxyType({"fp8_swap_ab": Precision.FP8_BLOCK})


def check_linear_kernel(name: str | None) -> str | None:
    """`name` if it is a kernel with a price here (`moe_kernels.check_priced`)."""
    return check_priced("linear_kernel", name, RELATIVE_RATE)


def linear_rate_scale(name: str | None, tensor_parallel_size: int) -> float:
    """The linear layers' FLOP rate under kernel `name` on a rank whose linear layers are
    sharded `tensor_parallel_size` ways, as a fraction of the default's (docstring)."""
    if name is None:
        return 1.0
    if tensor_parallel_size < 1:
        raise ValueError(f"tensor_parallel_size must be >= 1, got {tensor_parallel_size}")
    by_tp = RELATIVE_RATE[check_linear_kernel(name) or ""]
    return by_tp[max(t for t in by_tp if t <= tensor_parallel_size)]


def check_kernel_format(name: str | None, precision: Precision) -> None:
    """An error where kernel `name` does not run weights in `precision`."""
    if name is not None and FORMAT[name] is not precision:
        raise ValueError(
            f"linear_kernel {name!r} runs {FORMAT[name].value} weights; precision is "
            f"{precision.value} (leave linear_kernel unset, or use precision "
            f"{FORMAT[name].value})"
        )
