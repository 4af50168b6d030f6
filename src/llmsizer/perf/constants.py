"""Everything in a step's cost that does not depend on the batch, computed once.

All quantities are per GPU of a tensor-parallel group and summed over all layers unless the
name says `per_layer`, except the collectives' (per all-reduce and per send, with their
counts); rates are achievable rates (datasheet peak times efficiency). The formula they feed
is `llmsizer.perf.step.step_terms`.

Activation traffic counts each tensor a kernel reads or writes once, in the activation
dtype: GEMM inputs and outputs go with the GEMMs; norms (read + write h, twice per layer),
residual adds (two reads and a write of h, twice), the gated activation (read 2I, write I),
rotary embedding (read + write Q and K) and MoE token permutation (read + write h per routed
copy) are the memory-bound "elementwise" part.

Attention data parallelism (`Deployment.attention_dp_size` D > 1): the per-token numbers are
per token of one rank (its attention tensor-parallel group of tp GPUs), except the experts',
which are per token of the whole batch, gathered over the `moe_world_size` W = tp x D GPUs;
the MoE layers' elementwise work per rank token is D times their work per gathered token
(the ranks' loads balanced). Each layer's collectives are the MoE layer's all-gather of
every rank's tokens before it and reduce-scatter after it (an all-reduce's traffic over W:
2 (W - 1) / W of the D T_rank h activations per link, one all-reduce's hops), plus the
attention all-reduce over the rank's tp GPUs when tp > 1; they are priced as
`num_allreduces` collectives of their mean hops and bytes. Where the deployment runs an
all-to-all instead (`moe_a2a_backend`, `perf.moe_comm`), each MoE layer sends a rank's T_rank
x k routed copies, those bound for another GPU ((W - 1) / W) over the link, out in the
dispatch dtype and back in the activation dtype, plus the all-to-all's fixed latency, and
permutes only the copies it receives (k per rank token, the loads balanced).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llmsizer.perf.cuda_graphs import CudaGraphs
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.efficiency import EfficiencyFactors
from llmsizer.perf.launches import SHARED_EXPERT, eager_layer_units, layer_units
from llmsizer.perf.linear_kernels import linear_rate_scale
from llmsizer.perf.moe_comm import all_to_all, dispatch_bytes_per_element
from llmsizer.perf.moe_kernels import experts_rate_scale
from llmsizer.perf.roofline import expected_max_normal
from llmsizer.specs.dtypes import Precision

_LOGIT_BYTES = 4.0  # logits are FP32; the sampler reads what the output projection writes
_UNQUANTIZED_BYTES = Precision.BF16.bytes_per_element


@dataclass(frozen=True, slots=True)
class StepConstants:
    """Per-configuration numbers for the step cost (see the module docstring for units)."""

    window: int
    attention_dp_size: int
    full_layers: int
    window_layers: int
    linear_flops_per_s: float
    lm_head_flops_per_s: float
    attention_flops_per_s: float
    gemm_bytes_per_s: float
    attention_bytes_per_s: float
    experts_flops_per_s: float
    experts_bytes_per_s: float
    decode_attention_flops_per_s: float
    dense_weight_bytes: float
    dense_flops_per_token: float
    dense_act_bytes_per_token: float
    num_moe_layers: int
    num_experts: int
    expert_miss_per_token: float
    experts_per_rank: float
    expert_max_z: float
    expert_weight_bytes: float
    expert_flops_per_token: float
    expert_act_bytes_per_token: float
    expert_dequant_bytes: float
    expert_tile_rows: float
    expert_rows_per_token: float
    expert_flops_per_row: float
    experts_dequant_bytes_per_s: float
    lm_head_weight_bytes: float
    lm_head_flops_per_seq: float
    lm_head_bytes_per_seq: float
    prefill_flops_per_pair: float
    sparse_prefill_flops_per_pair: float
    decode_flops_per_pair: float
    kv_bytes_per_token_per_layer: float
    attention_act_bytes_per_token: float
    elementwise_bytes_per_token: float
    num_allreduces: int
    allreduce_latency_s: float
    allreduce_s_per_token: float
    num_pipeline_sends: int
    send_latency_s: float
    send_s_per_token: float
    step_overhead_s: float
    layers_overhead_s: float
    # a graph-replayed step of at most `shared_stream_max_tokens` experts' tokens: the shared
    # experts on a second stream (`cuda_graphs.SharedExpertsStream`)
    graphed_layers_overhead_s: float
    shared_stream_max_tokens: int
    prefill_layers_overhead_s: float
    compiled_layers_overhead_s: float
    indexer_overhead_s: float
    stage_fraction: float
    sequence_overhead_s: float
    verify_sequence_overhead_s: float  # a verify step's, per decoding sequence
    linear_state_bytes_per_seq: float


def build_constants(
    d: Deployment, eff: EfficiencyFactors, graphs: CudaGraphs | None = None
) -> StepConstants:
    """Precompute the batch-independent part of the step cost for `d` under `eff`, its
    graph-replayed steps as `graphs` runs them."""
    m = d.model
    tp = d.tensor_parallel_size
    pp = d.pipeline_parallel_size
    act = d.activation_precision.bytes_per_element
    w = d.weight_bytes_per_element
    h = m.hidden_size
    sparse_speedup = 1.0 if d.sparsity is None else d.sparsity.math_speedup
    moe = m.moe
    router_params = m.num_moe_layers * m.router_params  # replicated on every rank, 16-bit
    expert_width = 0 if moe is None else moe.expert_intermediate_size
    top_k = 0 if moe is None else moe.num_experts_per_tok
    ep = d.expert_parallel_size
    dp = d.attention_dp_size
    world = d.moe_world_size  # tp without attention data parallelism
    moe_tp = world // ep  # each expert's shards (TensorRT-LLM moe_tp_size)
    send_link = d.link_bytes_per_s(d.num_gpus) * eff.interconnect_efficiency
    num_allreduces, allreduce_hops, allreduce_s_per_token = _collectives(d, eff)
    units, graphed_units, stream_max_tokens = _graphed_layer_units(d, graphs)
    return StepConstants(
        # a DSA model has no sliding window: its window is the indexer's top-k, which caps
        # the keys a query of its sparse prefill reads (`_sparse_prefill_flops_per_pair`)
        window=m.sliding_window or _sparse_topk(d),
        attention_dp_size=dp,
        full_layers=m.num_layers - m.num_sliding_window_layers,
        window_layers=m.num_sliding_window_layers,
        # a linear kernel other than the engine's default (`linear_kernels`) scales FLOPs
        linear_flops_per_s=d.matmul_flops_per_s
        * (eff.gemm_compute_efficiency * sparse_speedup * linear_rate_scale(d.linear_kernel, tp)),
        lm_head_flops_per_s=d.attention_flops_per_s * eff.gemm_compute_efficiency,
        attention_flops_per_s=d.attention_flops_per_s * eff.attention_compute_efficiency,
        gemm_bytes_per_s=d.gpu.hbm_bytes_per_s * eff.gemm_bandwidth_efficiency,
        attention_bytes_per_s=d.gpu.hbm_bytes_per_s * eff.attention_bandwidth_efficiency,
        # kinds of work with kernels of their own (`EfficiencyFactors`, split factors)
        # a kernel other than the engine's default (`moe_kernels`) scales both
        experts_flops_per_s=d.matmul_flops_per_s
        * eff.value("experts_compute_efficiency")
        * sparse_speedup
        * experts_rate_scale(d.moe_backend),
        experts_bytes_per_s=d.gpu.hbm_bytes_per_s
        * eff.value("experts_bandwidth_efficiency")
        * experts_rate_scale(d.moe_backend),
        decode_attention_flops_per_s=d.attention_flops_per_s
        * eff.value("decode_attention_compute_efficiency"),
        dense_weight_bytes=m.dense_linear_params * w / tp
        + router_params * _UNQUANTIZED_BYTES
        + _replicated_indexer_params(d) * w,
        dense_flops_per_token=2.0 * (m.dense_linear_params / tp + router_params),
        dense_act_bytes_per_token=act * _dense_gemm_act_elements(d),
        num_moe_layers=m.num_moe_layers,
        num_experts=0 if moe is None else moe.num_experts,
        expert_miss_per_token=1.0 if moe is None else 1.0 - top_k / moe.num_experts,
        experts_per_rank=0.0 if ep == 1 else float(d.experts_on_busiest_rank),
        expert_max_z=expected_max_normal(ep),
        expert_weight_bytes=m.expert_params * w / moe_tp,
        # weight-only experts dequantise what they read (`EfficiencyFactors`)
        expert_dequant_bytes=m.expert_params * w / moe_tp if d.precision.is_weight_only else 0.0,
        experts_dequant_bytes_per_s=d.gpu.hbm_bytes_per_s * eff.experts_dequant_efficiency,
        expert_flops_per_token=2.0 * top_k * m.expert_params / world,
        # the grouped GEMM in whole tiles (`step_terms`): a rank's rows (routed copies) per
        # token, one row's FLOPs through one expert's shard
        expert_tile_rows=eff.experts_tile_rows,
        expert_rows_per_token=top_k / ep,
        expert_flops_per_row=2.0 * m.expert_params / moe_tp,
        # per routed copy: read h, write 2I/moe_tp (gate, up), read I/moe_tp, write h; under
        # expert parallelism a rank serves 1/ep of the copies
        expert_act_bytes_per_token=act * top_k * (2 * h + 3 * expert_width / moe_tp) / ep,
        lm_head_weight_bytes=m.vocab_size * h * _UNQUANTIZED_BYTES / tp,
        lm_head_flops_per_seq=2.0 * m.vocab_size * h / tp,
        lm_head_bytes_per_seq=act * h + 2 * _LOGIT_BYTES * m.vocab_size / tp,
        prefill_flops_per_pair=m.attention_flops_per_key / tp,
        sparse_prefill_flops_per_pair=_sparse_prefill_flops_per_pair(d),
        decode_flops_per_pair=_decode_flops_per_pair(d),
        kv_bytes_per_token_per_layer=d.kv_bytes_per_token_per_layer_per_gpu,
        # each layer reads Q and writes O for every token
        attention_act_bytes_per_token=act * m.num_layers * (m.q_dim + m.attention_output_dim) / tp,
        elementwise_bytes_per_token=act * _elementwise_elements(d),
        # all-reduces, two per layer when tp > 1, each `allreduce_hops` of latency (2 on the
        # scale-up fabric, a ring's 2 (tp - 1) over PCIe) and 2 (tp - 1) / tp of the T h
        # activations over each link; and one hop and one send of the T h activations
        # between consecutive pipeline stages
        num_allreduces=num_allreduces,
        allreduce_latency_s=allreduce_hops * eff.collective_hop_latency_s,
        allreduce_s_per_token=allreduce_s_per_token,
        num_pipeline_sends=pp - 1,
        send_latency_s=eff.collective_hop_latency_s,
        send_s_per_token=h * act / send_link,
        step_overhead_s=eff.step_overhead_s,
        # every kernel's fixed time, in dense layers' kernels (`perf.launches.layer_units`)
        layers_overhead_s=units * eff.layer_overhead_s,
        graphed_layers_overhead_s=graphed_units * eff.layer_overhead_s,
        shared_stream_max_tokens=stream_max_tokens,
        # the eager launch, in dense layers' launches; a compiled model's, its attention's
        # (one op a layer, every kind alike: `perf.launches`)
        prefill_layers_overhead_s=eager_layer_units(m, d.input_quant, d.separate_gdn_projections)
        * eff.prefill_layer_overhead_s,
        compiled_layers_overhead_s=m.num_layers * eff.prefill_layer_overhead_s,
        indexer_overhead_s=_indexer_layers(d) * eff.indexer_overhead_s,
        stage_fraction=math.ceil(m.num_layers / pp) / m.num_layers,
        sequence_overhead_s=eff.sequence_overhead_s,
        verify_sequence_overhead_s=eff.verify_sequence_overhead_s,
        linear_state_bytes_per_seq=_linear_state_io_bytes(d),
    )


def _graphed_layer_units(d: Deployment, graphs: CudaGraphs | None) -> tuple[float, float, int]:
    """(every step's `layer_units` as `d` runs its model, those of a graph-replayed step whose
    shared experts run on a second stream, the most experts' tokens such a step has): the
    kernels left on the first stream (`cuda_graphs.SharedExpertsStream`); every step's, and
    no such step, where the engine runs no second stream for this model."""
    m, quant, gdn = d.model, d.input_quant, d.separate_gdn_projections
    units = layer_units(m, SHARED_EXPERT, quant, gdn)
    stream = None if graphs is None else graphs.shared_experts
    if graphs is None or stream is None or (stream.mla_only and m.mla is None):
        return units, units, 0
    every_graph = graphs.max_capture_size * d.attention_dp_size
    top = every_graph if stream.max_tokens is None else stream.max_tokens
    return units, layer_units(m, stream.kernels_left, quant, gdn), top


def _collectives(d: Deployment, eff: EfficiencyFactors) -> tuple[int, float, float]:
    """(all-reduces a step runs, hops of one, seconds per token of one at the link) (module
    docstring); without attention data parallelism two all-reduces a layer over tp, and a
    third in each softmax layer whose q / k norms span every head (`_qk_norm_allreduces`)."""
    m, tp, dp = d.model, d.tensor_parallel_size, d.attention_dp_size
    act = d.activation_precision.bytes_per_element
    qk = _qk_norm_allreduces(d)

    def per_token_s(ranks: int, tokens_per_rank_token: int) -> float:
        link = d.link_bytes_per_s(ranks) * eff.interconnect_efficiency
        return 2 * (ranks - 1) / ranks * tokens_per_rank_token * m.hidden_size * act / link

    if dp == 1:
        count, tp_hops = (2 * m.num_layers if tp > 1 else 0), d.allreduce_hops(tp)
        return _with_qk_norms(count, tp_hops, per_token_s(tp, 1), qk, tp_hops)
    world = d.moe_world_size
    per_layer = 2 if tp > 1 else 1  # the MoE gather and scatter; the attention all-reduce
    moe_hops, moe_s = float(d.allreduce_hops(world)), per_token_s(world, dp)
    a2a = all_to_all(d.moe_a2a_backend)
    if a2a is not None and m.moe is not None:  # on the MoE layers only, per layer on average
        share = m.num_moe_layers / m.num_layers
        routed = m.moe.num_experts_per_tok * (world - 1) / world * m.hidden_size
        dispatch = dispatch_bytes_per_element(d.precision, act)
        link = d.link_bytes_per_s(world) * eff.interconnect_efficiency
        moe_hops = share * a2a.latency_hops
        moe_s = share * routed * (dispatch + act) / link
    hops = (moe_hops + d.allreduce_hops(tp)) / per_layer
    seconds = (moe_s + per_token_s(tp, 1)) / per_layer
    return _with_qk_norms(per_layer * m.num_layers, hops, seconds, qk, d.allreduce_hops(tp))


def _with_qk_norms(
    count: int, hops: float, seconds: float, qk: int, qk_hops: float
) -> tuple[int, float, float]:
    """`count` all-reduces of mean `hops` and `seconds` a token, and `qk` more of `qk_hops`
    that carry ~no bytes (`_qk_norm_allreduces`), as one mean collective; unchanged without."""
    if qk == 0:
        return count, hops, seconds
    total = count + qk
    return total, (hops * count + qk_hops * qk) / total, seconds * count / total


def _qk_norm_allreduces(d: Deployment) -> int:
    """All-reduces a step adds for query / key norms over every head
    (`ModelSpec.qk_norm_across_heads`): with the heads split over tp > 1 GPUs, each softmax
    layer sums the ranks' q and k variances before it scales them, one all-reduce of two
    floats a token (vLLM 0.17-0.19 `MiniMaxText01RMSNormTP.forward_qk`:
    `tensor_model_parallel_all_reduce(qk_var)`), its latency and almost none of the link."""
    if not d.model.qk_norm_across_heads or d.tensor_parallel_size == 1:
        return 0
    return d.model.num_kv_cache_layers


def _linear_state_io_bytes(d: Deployment) -> float:
    """Bytes one decoding sequence moves per step through the linear-attention layers of
    one GPU: its recurrent and convolution state read and written back (the Gated DeltaNet
    decode kernel loads each sequence's state, updates it and stores it: fla
    `fused_recurrent_gated_delta_rule` with the state updated in place, as SGLang's and
    vLLM's Qwen3-Next / Qwen3.5 layers run it), in the launch's state dtype, else the
    config's (Qwen3.5: `mamba_ssm_dtype` float32, 4.2 MB a layer; bfloat16 half that), the
    value heads split over tp."""
    return 2.0 * d.linear_state_bytes_per_gpu


def _indexer_layers(d: Deployment) -> int:
    """Layers with a sparse-attention indexer: every softmax layer of a DSA model."""
    return 0 if d.model.sparse_attention is None else d.model.num_kv_cache_layers


def _replicated_indexer_params(d: Deployment) -> float:
    """Indexer weights each GPU reads beyond its 1 / tp share: the indexer's projections are
    replicated on every tensor-parallel rank, not sharded (SGLang `nsa_indexer.py`,
    `Indexer`: `ReplicatedLinear` wq_b, wk, weights_proj), while `dense_linear_params`
    counts them with the attention, split over tp."""
    m = d.model
    if m.sparse_attention is None or m.mla is None:
        return 0.0
    per_layer = m.sparse_attention.projection_params(m.hidden_size, m.mla.q_lora_rank)
    tp = d.tensor_parallel_size
    return _indexer_layers(d) * per_layer * (1.0 - 1.0 / tp)


def _sparse_topk(d: Deployment) -> int:
    """The keys each query of a DSA model's sparse attention reads at most (0: not DSA)."""
    sparse = d.model.sparse_attention
    return 0 if sparse is None or d.model.mla is None else sparse.index_topk


def _sparse_prefill_flops_per_pair(d: Deployment) -> float:
    """FLOPs per (query, selected key) pair per layer of a DSA model's sparse prompt
    attention; 0 for any other model.

    SGLang runs a prompt batch dense (MHA, the keys decompressed through `kv_b_proj`) only
    while its longest sequence is within the indexer's top-k; past it, the absorbed sparse
    MLA kernel, each query over its own top-k keys (`NativeSparseAttnBackend.
    set_nsa_prefill_impl`, `use_mha` iff `max_kv_len <= nsa_index_topk`; `forward_extend`;
    sgl-project/sglang `python/sglang/srt/layers/attention/nsa_backend.py` @ 005e8bf8). In
    the absorbed form each head scores the latent plus rope key and sums over the latent,
    as a decode step does (`_decode_flops_per_pair`); the keys it reads are the selected
    latent rows, priced like a decode step's reads (`perf.step.prompt_attention`)."""
    if not _sparse_topk(d):
        return 0.0
    return _decode_flops_per_pair(d)


def _decode_flops_per_pair(d: Deployment) -> float:
    """Per (query, cached key) pair per layer. MLA decode absorbs the up-projections into
    the query and output (DeepSeek-V2 report, sec. 2.1.2; vLLM and SGLang do this), so each
    head scores against the latent plus rope key and sums over the latent."""
    m = d.model
    if m.mla is None:
        return m.attention_flops_per_key / d.tensor_parallel_size
    latent = m.mla.kv_lora_rank
    heads = m.num_attention_heads / d.tensor_parallel_size
    return 2.0 * heads * (latent + m.mla.qk_rope_head_dim) + 2.0 * heads * latent


def _mlp_gemm_elements(d: Deployment, width: int) -> float:
    """GEMM inputs and outputs per token of one MLP of `width`: h in, gate/up out,
    down in, h out."""
    h = d.model.hidden_size
    up_outputs = 2 if d.model.gated_mlp else 1
    return 2 * h + (up_outputs + 1) * width / d.tensor_parallel_size


def _dense_gemm_act_elements(d: Deployment) -> float:
    """Activation elements per token read or written by the always-on GEMMs, all layers."""
    m = d.model
    tp = d.tensor_parallel_size
    h = m.hidden_size
    attention = 2 * h + (m.q_dim + 2 * m.kv_dim + m.attention_output_dim) / tp
    shared_width = 0 if m.moe is None else m.moe.shared_expert_intermediate_size
    shared = _mlp_gemm_elements(d, shared_width) if shared_width else 0.0
    return (
        m.num_layers * attention
        + m.num_dense_layers * _mlp_gemm_elements(d, m.intermediate_size)
        + m.num_moe_layers * shared
    )


def _elementwise_elements(d: Deployment) -> float:
    """Activation elements per token moved by the memory-bound non-GEMM kernels."""
    m = d.model
    tp = d.tensor_parallel_size
    h = m.hidden_size
    norms_and_residuals = 4 * h + 6 * h
    rotary = 2 * (m.q_dim + m.kv_dim) / tp
    per_layer = norms_and_residuals + rotary
    activation = 3 * m.intermediate_size / tp if m.gated_mlp else 2 * m.intermediate_size / tp
    routed = 0.0
    if m.moe is not None:
        copies = m.moe.num_experts_per_tok
        width = copies * m.moe.expert_intermediate_size + m.moe.shared_expert_intermediate_size
        dp, world = d.attention_dp_size, d.moe_world_size
        routed = 3 * width / tp + 2 * copies * h
        if dp > 1:  # per rank token: the D ranks' tokens gathered over W (module docstring)
            shared = m.moe.shared_expert_intermediate_size
            routed = dp * (3 * (width - shared) / world + 2 * copies * h) + 3 * shared / tp
            if all_to_all(d.moe_a2a_backend) is not None:  # permuting only the copies it gets
                routed = dp * 3 * (width - shared) / world + 2 * copies * h + 3 * shared / tp
    embedding = h
    return (
        m.num_layers * per_layer
        + m.num_dense_layers * activation
        + m.num_moe_layers * routed
        + embedding
    )
