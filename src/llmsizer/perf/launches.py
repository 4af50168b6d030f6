"""Kernel launches of an eager step: how many each kind of decoder layer launches.

A step that is not replayed from a CUDA graph (`perf.cuda_graphs`) is launched op by op
from Python, and each launch costs the host microseconds: Python, the binding, the ATen
dispatcher, the backend's choice of kernel and `cudaLaunchKernel`, ~5-25 us an op before
the kernel runs (jiahuanglin.xyz, "From PyTorch op to kernel launch", its table of the
dispatch chain; PyTorch's blog "Accelerating PyTorch with CUDA Graphs", 2021-10, motivates
graphs by this cost). The general fits' `prefill_layer_overhead_s`, ~99 us for a dense
layer's 12 launches, is 8 us a launch, inside that range. So the eager cost of a
layer is its number of launches times a cost per launch, and a MoE or MLA layer launches
several times what a dense GQA layer does. `EfficiencyFactors.prefill_layer_overhead_s`
is the eager cost of one dense GQA layer (`DENSE_LAYER` launches); a model's eager step
costs `eager_layer_units(model)` of them: its launches over `DENSE_LAYER`, equal to its
number of layers for a dense GQA model, so a dense model is priced as before.

Launches per part of a layer, counted in the engines' prompt (extend) path with tensor
parallelism (BF16 kernels; quantising activations adds one per GEMM in every layer kind
alike and is left out):

- `NORMS` 2: the fused residual-add RMSNorms before attention and before the MLP.
- `GQA_ATTENTION` 6: QKV GEMM, rotary, KV-cache store, prefill attention, output GEMM,
  all-reduce (vLLM / SGLang `LlamaAttention.forward`); an output gate (Qwen3.5's gated
  attention, `attention_output_gate`) adds its sigmoid and product, `OUTPUT_GATE` 2.
  Query and key norms over every head at once (`ModelSpec.qk_norm_across_heads`,
  MiniMax-M2) add `QK_NORM_ACROSS_HEADS` 4: the two variance reductions, the all-reduce
  that sums them over the tensor-parallel ranks, and the rescale of q and k
  (vLLM 0.17-0.19 `MiniMaxText01RMSNormTP.forward_qk`, `layers/mamba/linear_attn.py`;
  fused into one kernel only by the `fuse_minimax_qk_norm` pass after 0.19).
- `DENSE_MLP` 4: gate-up GEMM, `SiluAndMul`, down GEMM, all-reduce (`LlamaMLP`).
- `MLA_ATTENTION` 12: the fused q-a / kv-a down projection, q-a and kv-a RMSNorms, q-b and
  kv-b up projections, rotary, the key concatenation of its nope and rope parts, the
  latent's cache store, prefill attention, output GEMM, all-reduce (SGLang
  `DeepseekV2AttentionMLA.forward_normal_prepare` / `forward_normal_core`; vLLM
  `MLACommonImpl._forward_prefill`).
- `INDEXER` 15: a sparse-attention indexer's projections, key norm, rotary, Hadamard
  rotations, FP8 quantisation of q and k, index-cache store, logits and top-k (SGLang
  `layers/attention/nsa/nsa_indexer.py`, `Indexer`; `EfficiencyFactors.indexer_overhead_s`).
- `LINEAR_ATTENTION` 17: Gated DeltaNet's qkvz and ba projections, the layout split,
  causal conv1d, gating, the chunked delta rule (FLA `chunk_gated_delta_rule`: L2 norms of q
  and k, local cumsum, scaled K K^T, triangular solve, W / U recompute, the state pass, the
  output: 8 Triton kernels), gated RMSNorm, output GEMM, all-reduce (SGLang
  `Qwen3GatedDeltaNet`, `qwen3_next.py`).
- `MOE_ROUTED` 9: router GEMM, top-k, the align / sort of tokens by expert, its buffer's
  zeroing, the two grouped GEMMs, the activation, the weighted top-k sum, all-reduce
  (vLLM / SGLang `FusedMoE`, `fused_experts`: `moe_align_block_size`, `invoke_fused_moe_
  kernel` twice, `moe_sum`); `SHARED_EXPERT` 4 more where the model has shared experts:
  their gate-up GEMM, activation, down GEMM and the add.

A compiled model (vLLM's default, `CudaGraphs.compiled`) runs everything but attention as
compiled pieces, replayed from piecewise graphs or launched by Inductor's generated code,
and launches only the attention from Python: one op a layer, whatever its kind, so its
eager step costs its number of layers (`StepConstants.compiled_layers_overhead_s`). The AIC
rows agree (`docs/aic_measurement.md` section 20): vLLM's Kimi-K2.5 (MLA + MoE) holds
about what Llama-3.1-70B does per layer, SGLang's and TensorRT-LLM's DeepSeek over twice.

So a dense GQA layer launches 12 (as `layer_overhead_s`'s prior counts a decode layer), a
DeepSeek-V3 MoE + MLA layer 27, a GLM-5 one (with its indexer) 42, Qwen3.5's linear-attention
MoE layer 32, a Qwen3 MoE layer without shared experts 17, MiniMax-M2's 21 (its norms).

A step replayed from a CUDA graph launches nothing from the host but runs the same kernels,
and each still costs the GPU time that no byte or FLOP count holds: the graph's launch of
the kernel (~1.3 us a kernel on an H100 under CUDA graphs), its setup and teardown, and the
next kernel's wait for the previous one's last thread blocks (Hazy Research, "Look Ma, No
Bubbles!", 2025-05-27: vLLM and SGLang reach at most half of an H100's bandwidth decoding
Llama-3.2-1B, ~100 kernels a forward pass, for these bubbles). `layer_overhead_s`, ~50 us for
a dense layer's 12 kernels, is ~4 us a kernel. So a graph-replayed layer's fixed cost is its
kernels too: `layer_units(model)` counts them in dense GQA layers, as `eager_layer_units`
does, less the sparse-attention indexer's (its fixed time is a factor of its own,
`indexer_overhead_s`). The prompt path's counts stand for the decode path's: the same
projections, norms, routing, grouped GEMMs and collectives; decode attention replaces
prompt attention one for one. The AIC rows agree (`docs/aic_measurement.md` section 25): the
fixed part of TPOT (what does not shrink with TP) is ~66 us a layer for Llama-3.1-70B on vLLM
B200, 95-124 us for MiniMax-M2.5, 105-108 us for Kimi-K2.5: 1.4-1.9x, where kernels say 1.42, 2.24.

An NVFP4 (W4A4) linear layer quantises its BF16 input to FP4 with per-16 block scales before
its GEMM, in a kernel of its own: vLLM's `ModelOptNvFp4LinearMethod.apply`
(`model_executor/layers/quantization/modelopt.py`, find_string id 205573878; the
compressed-tensors W4A4 scheme the same, id 21421825494) calls `scaled_fp4_quant`, a custom op
Inductor does not fuse, then the FP4 GEMM (`cutlass_scaled_fp4_mm` or FlashInfer's). So where
an engine runs it that way (`ENGINE_INPUT_QUANT`) an NVFP4 checkpoint's dense linear layers
add `INPUT_QUANT` 1 launch per GEMM input: qkv and output projections in each softmax
attention layer, gate-up and down in each dense MLP (`input_quant_launches`; Llama-3.1-70B
16 a layer, not 12). A MoE model's NVFP4 checkpoint quantises its experts only
(`nvidia/MiniMax-M2.5-NVFP4`: ModelOpt's `nvfp4_experts_only` recipe, attention projections,
router and lm_head in BF16, per its model card and the re-quantisations that copy its
`exclude_modules`), and its grouped GEMM quantises inside the MoE kernel: no launch added.
The AIC rows agree (`docs/aic_measurement.md` sections 22, 40): vLLM's Llama-3.1-70B NVFP4
decodes at TP 8 no faster than FP8 with half the weight bytes, its fixed part 9-11 us a
layer larger.

A decode step replayed from a graph runs a MoE layer's shared experts on a second CUDA stream,
beside the routed experts, and only the kernels left on the first stream add to the step's
fixed time: each engine's count of them is `cuda_graphs.SharedExpertsStream` (vLLM: the
input's copy and the add, 2 of `SHARED_EXPERT`'s 4; SGLang's and TensorRT-LLM's DeepSeek
blocks: the add, 1), and `layer_units(model, shared_expert=...)` counts with it
(`docs/aic_measurement.md` section 29).

SGLang runs an FP8 checkpoint's linear layers (block-quantised, 128 x 128: DeepSeek-R1/V3,
Qwen3.5-FP8, GLM-5-FP8) as W8A8: every FP8 GEMM first quantises its BF16 input per token
and 128-group in a kernel of its own, whichever GEMM backend runs it (`fp8_utils.py`
`flashinfer_gemm_w8a8_block_fp8_linear` and the DeepGEMM / CUTLASS / Triton paths all call
`sglang_per_token_group_quant_fp8` first, find_string ids 205329309, 21670645), and the
FlashInfer TRT-LLM block-scale MoE takes FP8 hidden states, quantised by the same kernel
before it (`FlashInferFP8MoE.forward`, id 2151776170). SGLang compiles nothing that would
fuse it into the norm before (TensorRT-LLM does; vLLM's compile passes do). So where an
engine runs it that way (`ENGINE_INPUT_QUANT`) an FP8 deployment counts
`INPUT_QUANT` 1 launch per FP8 GEMM input (`fp8_input_quant_launches`): qkv and output of
each softmax attention layer; the fused q-a / kv-a, q-b, kv-b and output projections of an
MLA one (4); the qkvz input and the output projection of a Gated DeltaNet layer (2: its
`in_proj_ba` stays BF16, "ba_proj doesn't support blockwise fp8 quantization", SGLang
`qwen3_next.py`, id 59658068707); gate-up and down of a dense MLP or of the shared experts
(2); the routed experts' input (1). Qwen3.5-397B: 5 a layer, 300 a step beside its ~1,800
kernels. A BF16 checkpoint launches none of them, nor an NVFP4 one (experts only, above).
The AIC rows agree (`docs/aic_measurement.md` section 53): SGLang's Qwen3.5 BF16 decodes
faster than FP8 at 4-8 clients on B300 and its NVFP4 experts-only checkpoint 2.5 ms a step
faster than FP8 at 4 clients, where bytes say 0.4 ms.

`LINEAR_ATTENTION` counts the input projections as SGLang runs them from 0.5.10 (and for
Qwen3-Next before): two GEMMs, `in_proj_qkvz` and `in_proj_ba`, and one Triton kernel that
splits them (`fused_qkvzba_split_reshape_cat_contiguous` for Qwen3.5, `qwen3_5.py`,
0.5.10.post1 l.150-173, l.427-450; sgl-project/sglang PR 21019, merged 2026-03-20). Up to
0.5.9 (wheel built 2026-02-23) SGLang ran Qwen3.5's checkpoint as it stores it, four GEMMs
(`in_proj_qkv`, `in_proj_z`, `in_proj_b`, `in_proj_a`, 0.5.9 l.130-165, l.268-305) and no
split: one launch more a layer (`SEPARATE_PROJECTIONS` 1), and on an FP8 checkpoint one input
quantisation more, as `in_proj_z` quantises the same input again (`SEPARATE_FP8_GEMMS` 1;
`in_proj_b` / `in_proj_a` stay BF16 in Qwen's FP8 checkpoints, `modules_to_not_convert`, and
could not be block-FP8 at 64 heads over TP: SGLang's `Fp8LinearMethod` wants each rank's rows
a multiple of 128). NVFP4 and BF16 checkpoints run the linear attention unquantised (both
versions: `linear_attn_quant_config` None for `modelopt_fp4`). Qwen3.5-397B: 45 launches a
step more, 90 on FP8 (`gdn_projection_launches`; docs/aic_measurement.md section 66).
"""

from __future__ import annotations

from llmsizer.specs.dtypes import Precision
from llmsizer.specs.models import ModelSpec

NORMS = 2
GQA_ATTENTION = 6
OUTPUT_GATE = 2
QK_NORM_ACROSS_HEADS = 4
DENSE_MLP = 4
MLA_ATTENTION = 12
INDEXER = 15
LINEAR_ATTENTION = 17
MOE_ROUTED = 9
SHARED_EXPERT = 4
DENSE_LAYER = NORMS + GQA_ATTENTION + DENSE_MLP  # the unit of `prefill_layer_overhead_s`
INPUT_QUANT = 1
FP8 = frozenset({Precision.FP8, Precision.FP8_BLOCK})
# the checkpoint formats whose linear layers' inputs each engine quantises in kernels of their
# own (module docstring): vLLM's NVFP4, SGLang's FP8; TensorRT-LLM's Llama is not read at the
# rows' version (docs section 40)
ENGINE_INPUT_QUANT: dict[str, frozenset[Precision]] = {
    "vllm": frozenset({Precision.FP4}),
    "sglang": FP8,
}
MLA_FP8_GEMMS = 4  # fused q-a / kv-a, q-b, kv-b, output (module docstring)
LINEAR_ATTENTION_FP8_GEMMS = 2  # qkvz input, output; in_proj_ba stays BF16 (docstring)
SEPARATE_PROJECTIONS = 1  # qkv, z, b, a GEMMs for qkvz, ba and their split (docstring)
SEPARATE_FP8_GEMMS = 1  # in_proj_z quantises the input in_proj_qkv did (docstring)


def input_quant_launches(model: ModelSpec) -> int:
    """Kernels one forward pass of `model`'s NVFP4 checkpoint launches to quantise its dense
    linear layers' inputs (module docstring): one per GEMM input of each softmax attention
    layer (qkv, output) and dense MLP (gate-up, down); none for a MoE model (its checkpoint
    quantises the experts only, inside their kernel)."""
    if model.moe is not None:
        return 0
    return INPUT_QUANT * 2 * (model.num_kv_cache_layers + model.num_dense_layers)


def fp8_input_quant_launches(model: ModelSpec) -> int:
    """Kernels one forward pass of `model`'s FP8 checkpoint launches to quantise its linear
    layers' inputs where the engine runs them as W8A8 in separate kernels (module docstring):
    one per FP8 GEMM input of each attention layer (softmax 2, MLA 4, Gated DeltaNet 2), dense
    MLP or shared experts (2) and the routed experts (1)."""
    attention = MLA_FP8_GEMMS if model.mla is not None else 2
    moe = model.moe
    moe_layer = 0 if moe is None else 1 + (2 if moe.num_shared_experts else 0)
    return INPUT_QUANT * (
        model.num_kv_cache_layers * attention
        + model.num_linear_attention_layers * LINEAR_ATTENTION_FP8_GEMMS
        + model.num_moe_layers * moe_layer
        + model.num_dense_layers * 2
    )


def quant_launches(model: ModelSpec, input_quant: Precision | None) -> int:
    """The input quantisations of a deployment whose engine runs them separately for its
    checkpoint format `input_quant` (None: none): NVFP4's (`input_quant_launches`), FP8's
    (`fp8_input_quant_launches`); other formats launch none here."""
    if input_quant is Precision.FP4:
        return input_quant_launches(model)
    return fp8_input_quant_launches(model) if input_quant in FP8 else 0


def gdn_projection_launches(
    model: ModelSpec, separate: bool, input_quant: Precision | None = None
) -> int:
    """Launches one forward pass of `model` adds where its engine runs the Gated DeltaNet
    input projections as separate GEMMs (module docstring, `separate`), over the merged
    projections and split that `LINEAR_ATTENTION` counts; with an FP8 `input_quant`, one
    input quantisation more a layer; 0 without `separate` or linear-attention layers."""
    if not separate:
        return 0
    per_layer = SEPARATE_PROJECTIONS + (SEPARATE_FP8_GEMMS if input_quant in FP8 else 0)
    return model.num_linear_attention_layers * per_layer


def eager_launches(
    model: ModelSpec,
    shared_expert: int = SHARED_EXPERT,
    input_quant: Precision | None = None,
    separate_gdn_projections: bool = False,
) -> int:
    """Kernels one eager forward pass of `model`'s decoder layers launches (module
    docstring): every layer's norms, attention (softmax, MLA, linear; an indexer where
    the model has one) and MLP (dense, or routed experts plus shared ones, of whose kernels
    `shared_expert` are counted: all of them unless a second stream runs the rest); with
    `input_quant`, the input quantisations of that checkpoint format (`quant_launches`);
    with `separate_gdn_projections`, Gated DeltaNet's four GEMMs (`gdn_projection_launches`)."""
    if not 0 <= shared_expert <= SHARED_EXPERT:
        raise ValueError(f"shared_expert {shared_expert} must be 0-{SHARED_EXPERT} kernels")
    softmax = model.num_kv_cache_layers
    attention = MLA_ATTENTION if model.mla is not None else GQA_ATTENTION
    if model.attention_output_gate:
        attention += OUTPUT_GATE
    if model.qk_norm_across_heads:
        attention += QK_NORM_ACROSS_HEADS
    if model.sparse_attention is not None:
        attention += INDEXER
    moe = model.moe
    moe_layer = 0 if moe is None else MOE_ROUTED + (shared_expert if moe.num_shared_experts else 0)
    return (
        NORMS * model.num_layers
        + softmax * attention
        + model.num_linear_attention_layers * LINEAR_ATTENTION
        + model.num_moe_layers * moe_layer
        + model.num_dense_layers * DENSE_MLP
        + quant_launches(model, input_quant)
        + gdn_projection_launches(model, separate_gdn_projections, input_quant)
    )


def eager_layer_units(
    model: ModelSpec, input_quant: Precision | None = None, separate_gdn_projections: bool = False
) -> float:
    """`model`'s eager launches in dense GQA layers (`DENSE_LAYER`), the count that
    `prefill_layer_overhead_s` multiplies: its number of layers for a dense GQA model."""
    separate = separate_gdn_projections
    launches = eager_launches(model, input_quant=input_quant, separate_gdn_projections=separate)
    return launches / DENSE_LAYER


def layer_units(
    model: ModelSpec,
    shared_expert: int = SHARED_EXPERT,
    input_quant: Precision | None = None,
    separate_gdn_projections: bool = False,
) -> float:
    """`model`'s kernels of one forward pass in dense GQA layers' kernels (`DENSE_LAYER`),
    less the sparse-attention indexer's: the count that `layer_overhead_s` multiplies in
    every step (module docstring), its number of layers for a dense GQA model; with
    `shared_expert` of a shared expert's kernels on the step's path and, with
    `input_quant`, that format's input quantisations (`eager_launches`), and
    `separate_gdn_projections` as there."""
    indexer = 0 if model.sparse_attention is None else INDEXER * model.num_kv_cache_layers
    launches = eager_launches(model, shared_expert, input_quant, separate_gdn_projections)
    return (launches - indexer) / DENSE_LAYER
