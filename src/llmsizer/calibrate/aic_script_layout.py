"""The layouts InferenceX's first TensorRT-LLM DeepSeek scripts chose for themselves.

Until the "candidate search space" change (SemiAnalysisAI/InferenceX 17d5e204f, #145,
2025-11-03 18:05 UTC) the B200 scripts `benchmarks/dsr1_fp{4,8}_b200_trt_slurm.sh` took only
TP, CONC, ISL and OSL from the sweep and decided expert parallelism and attention data
parallelism themselves (the same lines from ec90f3fe7, 2025-09-18, through 9596d23d7,
2025-10-29); from 17d5e204f they read `EP_SIZE` and `DP_ATTENTION` from the sweep's config.
The export writes such a run's layout as its config said (`tp_size` T, `moe_ep_size` 1,
`attention_dp_size` 1), which is not what ran (docs/aic_measurement.md section 55):

- NVFP4 (`dsr1_fp4_b200_trt_slurm.sh` @ 9596d23d7): expert parallel over the TP group
  (`EP_SIZE=$TP`) at 1k/1k from CONC > 8 (TP 8) or > 32 (TP 4), at 1k/8k from CONC > 16
  (TP 8) or > 32 (TP 4), at 8k/1k from CONC > 32; attention DP (`enable_attention_dp`, the
  MoE on CUTLASS) at 1k/1k and 1k/8k from CONC 256, at 8k/1k from CONC > 32;
  `cuda_graph_config.max_batch_size` 512;
- FP8 (`dsr1_fp8_b200_trt_slurm.sh` @ 9596d23d7): expert parallel over the TP group always
  (DeepGEMM MoE); attention DP at 1k/1k from CONC > 32, at 1k/8k and 8k/1k from CONC > 64;
  `cuda_graph_config.max_batch_size` 256.
Under attention DP both scripts set the balancing `launch_settings` gives any attention-DP
row, and `max_num_tokens` ceil64(CONC + ISL + 64) with no floor, as `launch_settings` gives a
row of image "" (the rows carry no version). The MoE backends are not modelled apart.
"""

from __future__ import annotations

from typing import Any

SCRIPTS_FROM_CONFIG = "2025-11-03T18:05:50Z"  # InferenceX 17d5e204f: EP_SIZE, DP_ATTENTION read
SCRIPT_GRAPH_BATCH = {"fp4": 512, "fp8": 256}  # cuda_graph_config.max_batch_size (docstring)


def script_layout(
    precision: str, tp: int, isl: int, osl: int, concurrency: int
) -> tuple[int, int, int]:
    """(tensor parallel, expert parallel, attention DP) that the early DeepSeek B200 script
    of `precision` ('fp4' or 'fp8') launched at TP `tp` (module docstring), in the layout
    `calibrate.aic` writes: attention DP over D GPUs is (1, EP, D)."""
    lengths = (isl, osl)
    if precision == "fp8":
        ep = tp
        dp = concurrency > (32 if lengths == (1024, 1024) else 64)
    else:
        if lengths == (8192, 1024):
            ep_above = dp_above = 32
        else:
            ep_above = 8 if tp == 8 and lengths == (1024, 1024) else 16 if tp == 8 else 32
            dp_above = 255
        ep = tp if concurrency > ep_above else 1
        dp = concurrency > dp_above
    return (1, ep, tp) if dp else (tp, ep, 1)


def early_trtllm_deepseek(
    engine: str, family: str, gpu: str, measured: str, gap: bool, precision: str
) -> str | None:
    """The script precision ('fp4', 'fp8') of an InferenceX TensorRT-LLM DeepSeek B200 row
    measured before `SCRIPTS_FROM_CONFIG` (`measured` ISO, '' when unknown), else None."""
    if engine != "trtllm" or family != "deepseek" or gpu != "b200" or gap or not measured:
        return None
    if measured >= SCRIPTS_FROM_CONFIG:
        return None
    return "fp8" if precision.startswith("fp8") else "fp4" if precision == "fp4" else None


def script_graph_settings(precision: str) -> dict[str, Any]:
    """The early scripts' CUDA graphs: padded, up to `SCRIPT_GRAPH_BATCH` a rank."""
    return {"cudagraph_padding": True, "max_cudagraph_capture_size": SCRIPT_GRAPH_BATCH[precision]}
