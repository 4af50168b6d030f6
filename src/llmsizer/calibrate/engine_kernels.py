"""What an AIC row's engine version ran that a later version's launch did not: kernels and
launch flags by version, so that each row is priced with what its version ran.

`llmsizer.calibrate.aic_launch` gives every row of a model the settings of the benchmark
script that ran most of its rows. Where a version was run by an older script, the row's
`backend_version` selects that script's launch here (`VERSION_LAUNCHES`); a version not in
the table keeps `aic_launch`'s settings unchanged. The version pairs with the largest
measured TPOT jumps in the AIC rows, one configuration (engine, model, GPU, precision, ISL,
TP, EP, DP, concurrency) under two versions, median ratio of measured TPOT (rows):
TensorRT-LLM DeepSeek-R1 B200 1.2.0rc6.post2 -> .post3 0.59 FP8 (15), 0.67 NVFP4 (11): MTP
(`aic_launch.agg_mtp_speculation`, already priced); SGLang Qwen3.5 B300 FP8 0.5.9 -> 0.5.10.post1
0.83 (12); vLLM MiniMax-M2.5 B200 FP8 0.17.0 -> 0.19.0 0.85 (10, up to 0.73 at 8k/1k);
vLLM Kimi-K2.5 B300 NVFP4 0.17.0 -> 0.19.0 0.94 (2); vLLM MiniMax-M2.5 B200 NVFP4 0.19.0 ->
nightly 1.06 (26). docs/tpot_residuals.md, "Kernels by engine version (tpotver11)", has the
sources of each and what is left unexplained.

- **vLLM 0.17.0, MiniMax-M2.5 FP8 on B200.** InferenceX ran `vllm/vllm-openai:v0.17.0-cu130`
  for `minimaxm2.5-fp8-b200-vllm` until PR 947 (bddbf4031, 2026-04-03) moved it to v0.19.0
  and rewrote `benchmarks/single_node/minimaxm2.5_fp8_b200.sh`; the 0.17.0 rows were
  measured on 2026-03-11 and 2026-03-28, by the script at f342df18e / 626932a11:
  - `VLLM_USE_FLASHINFER_MOE_FP8=0` and `VLLM_MOE_USE_DEEP_GEMM=0`: vLLM's FP8 MoE oracle
    (`model_executor/layers/fused_moe/oracle/fp8.py`, `select_fp8_moe_backend`) then drops
    FlashInfer's TRT-LLM and CUTLASS MoE and DeepGEMM, leaves vLLM's CUTLASS off, and runs
    the Triton `fused_moe` kernel (`moe_backend` `triton`, priced in
    `llmsizer.perf.moe_kernels`); the 0.19 script sets neither, so the default order
    (FlashInfer TRT-LLM first) holds, as for every other vLLM Blackwell row;
  - no `--kv-cache-dtype fp8` (added by PR 947): the KV cache in the activations' BF16;
  - `if [ "$EP_SIZE" -ge 1 ]` (PR 947: "fix typo in ep bash script", `-gt 1`): every run
    passed `--enable-expert-parallel`, the experts split whole over the TP ranks, which the
    rows' `moe_ep_size` 1 does not say;
  - `--gpu-memory-utilization 0.95`, and neither `--max-num-batched-tokens 2 x ISL` nor
    `--max-cudagraph-capture-size 2048` (both added by PR 947): vLLM's defaults.
- **TensorRT-LLM 1.0-1.2, block-FP8 linear layers on SM100 / SM103** (`linear_kernel`):
  DeepGEMM's `fp8_swap_ab` GEMM, priced in `llmsizer.perf.linear_kernels` (sources there);
  AIC's kernel table of 1.3.0rc10 shows it fixed, so a version from 1.3 on runs the default.
  Every TensorRT-LLM row of the file is older: the agg rows name TensorRT-LLM 1.0-1.2.0rc6
  (a row with no version was measured in 2025); the disaggregated ones name the Dynamo
  runtime image, 0.8.1.post*, which carries TensorRT-LLM 1.2.0rc6.post1-3 (Dynamo 0.9.0 the
  first with 1.3.0rc1: ai-dynamo/dynamo `fern/pages-v0.9.0/reference/release-artifacts.md` @
  79ec2ad8), so a version below 1.0 is read as Dynamo's (before 0.9: before 1.3).
- **SGLang up to 0.5.9, Qwen3.5's Gated DeltaNet input projections** (`separate_gdn_projections`):
  four GEMMs as the checkpoint stores them, where 0.5.10 merges them into two and splits
  them with one Triton kernel (`llmsizer.perf.launches`, sources there). Merged for Qwen3.5
  by sgl-project/sglang PR 21019 (2026-03-20; PR 19321, 2026-02-25, merged Qwen3-Next's
  only and says Qwen3.5 is to follow), so a nightly image dated before 2026-03-20 runs the
  four (`nightly-dev-20260216-d3bae71e`, the BF16 B200 rows), one from then on the merged
  two (`nightly-dev-20260402-d7256eb6`, NVFP4 B200), as every release from 0.5.10. AIC's
  own files name the BF16 B200 image `nightly-dev` alone; their rows say
  `image=lmsysorg/sglang:nightly-dev-20260216-d3bae71e` (or repeat its numbers), the only
  image InferenceX's `qwen3.5-bf16-b200-sglang` ran (`inferencex_agg_sweeps.csv`), so
  `NIGHTLY_IMAGES` reads it as that. An unknown version (a user's plan) is the current
  release's: merged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class VersionLaunch:
    """What rows of one engine, model, GPU, precision and version ran (module docstring):
    `settings` replace the row's spec fields, `dropped` are settings of the later script
    that this version's launch did not pass (the preset's defaults hold), and with
    `expert_parallel` the experts are split whole over all the tensor-parallel ranks."""

    engine: str
    model: str  # catalog name
    gpu: str  # catalog name
    precision: str
    version: str
    settings: Mapping[str, Any]
    dropped: tuple[str, ...] = ()
    expert_parallel: bool = False
    source: str = field(default="", compare=False)


VERSION_LAUNCHES: tuple[VersionLaunch, ...] = (
    VersionLaunch(
        engine="vllm",
        model="minimax-m2.5",
        gpu="b200",
        precision="fp8",
        version="0.17.0",
        settings={"moe_backend": "triton", "kv_cache_dtype": None, "gpu_memory_utilization": 0.95},
        dropped=("max_num_batched_tokens", "max_cudagraph_capture_size"),
        expert_parallel=True,
        source="SemiAnalysisAI/InferenceX benchmarks/single_node/minimaxm2.5_fp8_b200.sh "
        "@ 626932a11 (before PR 947, bddbf4031)",
    ),
)


def version_launch(
    engine: str, model: str, gpu: str, precision: str, version: str
) -> VersionLaunch | None:
    """The table's entry for a row, or None where its version ran the usual launch."""
    key = (engine, model, gpu, precision, version.strip())
    for launch in VERSION_LAUNCHES:
        if (launch.engine, launch.model, launch.gpu, launch.precision, launch.version) == key:
            return launch
    return None


def apply_version_launch(fields: Mapping[str, Any], version: str) -> dict[str, Any]:
    """A row's spec fields (`PredictSpec` keys, `aic_launch` settings merged) as its
    version launched it; unchanged where the table has no entry."""
    launch = version_launch(
        fields["engine"], fields["model"], fields["gpu"], fields["precision"], version
    )
    if launch is None:
        return dict(fields)
    out = {k: v for k, v in fields.items() if k not in launch.dropped}
    if launch.expert_parallel:
        out["expert_parallel_size"] = fields["tp"] * fields.get("attention_dp_size", 1)
    return out | dict(launch.settings)


SM100F_GPUS = frozenset({"b200", "b300", "gb200", "gb300"})  # `is_sm_100f()`; not SM 120
_MAJOR_MINOR = re.compile(r"(\d+)\.(\d+)")


def linear_kernel(engine: str, gpu: str, precision: str, version: str) -> str | None:
    """The linear layers' kernel a row's engine version ran where it is not the default
    (module docstring): TensorRT-LLM before 1.3 runs block FP8 on SM100 with `fp8_swap_ab`."""
    if engine != "trtllm" or precision != "fp8_block" or gpu not in SM100F_GPUS:
        return None
    found = _MAJOR_MINOR.match(version.strip())
    if found is None:
        return "fp8_swap_ab"
    major_minor = (int(found[1]), int(found[2]))
    fixed_in = (0, 9) if major_minor[0] == 0 else (1, 3)  # Dynamo's runtime tag, else TRT-LLM
    return "fp8_swap_ab" if major_minor < fixed_in else None


GDN_MERGED_NIGHTLY = "20260320"  # PR 21019's merge (module docstring)
NIGHTLY_IMAGES = {  # an AIC version that names no image: the image its rows ran (docstring)
    ("sglang", "qwen3.5-397b-a17b", "nightly-dev"): "nightly-dev-20260216-d3bae71e",
}
_RELEASE = re.compile(r"(\d+)\.(\d+)\.(\d+)")
_NIGHTLY_DATE = re.compile(r"nightly-dev-(?:cu\d+-)?(\d{8})-")


def separate_gdn_projections(engine: str, model: str, version: str) -> bool:
    """Whether a row's SGLang version ran Qwen3.5's Gated DeltaNet input projections as four
    GEMMs (module docstring): releases before 0.5.10, nightly images dated before PR 21019;
    a version it cannot read runs the current release's merged two."""
    if engine != "sglang" or not model.startswith("qwen3.5"):
        return False
    version = NIGHTLY_IMAGES.get((engine, model, version.strip()), version.strip())
    if (nightly := _NIGHTLY_DATE.match(version)) is not None:
        return nightly[1] < GDN_MERGED_NIGHTLY
    release = _RELEASE.match(version)
    return release is not None and tuple(map(int, release.groups())) < (0, 5, 10)
