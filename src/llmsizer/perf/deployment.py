"""One model instance on hardware: model, GPU, parallelism, precisions, sparsity.

Parallelism follows Megatron-LM as vLLM and TensorRT-LLM implement it (Shoeybi et al. 2019):
tensor parallelism shards every weight matrix and the attention heads over
`tensor_parallel_size` GPUs, which all-reduce activations twice per layer; pipeline
parallelism gives each of `pipeline_parallel_size` stages a contiguous slice of layers.

Which math runs where:
- weights in `precision` use the GPU's tensor cores for that format when it has them;
  otherwise (FP8 on A100, FP4 on Hopper, INT4 anywhere) weights are dequantised and the
  matrix multiply runs in 16 bits (weight-only kernels such as Marlin), so only the weight
  bytes shrink;
- activations are BF16, or FP16 when the weights are FP16;
- the KV cache is in `kv_cache_dtype`, or the activation dtype when it is `None` (vLLM's
  `auto`).

The tensor-parallel all-reduce runs on the scale-up fabric (NVLink) when the group fits in
the GPU's NVLink domain, else over PCIe.

Attention data parallelism (`attention_dp_size` D > 1, MoE models only): D ranks of
`tensor_parallel_size` GPUs each run attention, the dense layers and the output projection
on their own requests, with those weights replicated per rank, while the MoE layers run on
every rank's tokens gathered, over all tp x D GPUs (`moe_world_size`; experts split over
`expert_parallel_size` of them, each over the rest). As the engines lay it out:
- vLLM `-tp T --data-parallel-size D --enable-expert-parallel`: tp T, D, EP T x D;
- SGLang `--tp T --dp D --enable-dp-attention`: attention TP is T / D, so tp T / D and D;
- TensorRT-LLM `tensor_parallel_size T` with `enable_attention_dp`: attention TP 1, so tp 1
  and D = T (`moe_expert_parallel_size` and `moe_tensor_parallel_size` as given).

`moe_backend` names the routed experts' kernel where the launch chose one other than the
engine's default (`llmsizer.perf.moe_kernels`); `linear_kernel` the linear layers' kernel
where the engine runs one other than its default for the weight format
(`llmsizer.perf.linear_kernels`). `mamba_ssm_cache_dtype` (vLLM
`--mamba-ssm-cache-dtype`, SGLang `--mamba-ssm-dtype`: float32, bfloat16, float16) is the
linear-attention layers' recurrent state dtype where the launch overrode the config's
`mamba_ssm_dtype` (SGLang `configs/mamba_utils.py` `mamba2_state_dtype`: the flag, set as
`SGLANG_MAMBA_SSM_DTYPE` by `ServerArgs`, wins over the config, which wins over float32).
`moe_a2a_backend` is how attention DP's MoE layers exchange tokens, an all-to-all or (None)
the all-gather (`llmsizer.perf.moe_comm`). `separate_input_quant`: the checkpoint formats
whose linear layers' inputs the engine quantises in kernels of its own
(`perf.launches.ENGINE_INPUT_QUANT`: vLLM's NVFP4, SGLang's FP8), which a deployment of such
a format then counts in its step (`input_quant`). `separate_gdn_projections`: the engine
runs a Gated DeltaNet layer's input projections as the four GEMMs of Qwen3.5's checkpoint
(SGLang up to 0.5.9), not the merged two and their split (`perf.launches`).
"""

from __future__ import annotations

from dataclasses import dataclass

from llmsizer.perf.linear_kernels import check_kernel_format, check_linear_kernel
from llmsizer.perf.moe_comm import all_to_all, check_moe_a2a_backend
from llmsizer.perf.moe_kernels import check_moe_backend
from llmsizer.perf.roofline import allreduce_hops
from llmsizer.perf.sparsity import StructuredSparsity
from llmsizer.specs.dtypes import Precision
from llmsizer.specs.gpus import GpuSpec, get_gpu
from llmsizer.specs.model_catalog import get_model
from llmsizer.specs.model_parts import check_state_dtype
from llmsizer.specs.models import ModelSpec


@dataclass(frozen=True, slots=True)
class Deployment:
    """A model replica: `tensor_parallel_size * pipeline_parallel_size` GPUs of one type."""

    model: ModelSpec
    gpu: GpuSpec
    precision: Precision = Precision.BF16
    kv_cache_dtype: Precision | None = None
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    sparsity: StructuredSparsity | None = None
    expert_parallel_size: int = 1
    attention_dp_size: int = 1
    moe_backend: str | None = None  # None: the engine's default kernel (module docstring)
    mamba_ssm_cache_dtype: str | None = None  # None: the config's (module docstring)

    moe_a2a_backend: str | None = None  # None: the all-gather (module docstring)
    linear_kernel: str | None = None  # None: the engine's default kernel (module docstring)
    separate_input_quant: frozenset[Precision] = frozenset()  # module docstring
    separate_gdn_projections: bool = False  # module docstring

    def __post_init__(self) -> None:
        check_moe_backend(self.moe_backend)
        check_linear_kernel(self.linear_kernel)
        check_kernel_format(self.linear_kernel, self.precision)
        check_moe_a2a_backend(self.moe_a2a_backend)
        if self.mamba_ssm_cache_dtype is not None:
            check_state_dtype(self.mamba_ssm_cache_dtype)
        tp, pp = self.tensor_parallel_size, self.pipeline_parallel_size
        if tp < 1 or pp < 1:
            raise ValueError(f"parallel sizes must be >= 1, got tp={tp}, pp={pp}")
        heads = self.model.num_attention_heads
        if heads % tp:
            raise ValueError(
                f"tensor_parallel_size {tp} does not divide the {heads} attention heads of "
                f"{self.model.name}"
            )
        if pp > self.model.num_layers:
            raise ValueError(f"pipeline_parallel_size {pp} > {self.model.num_layers} layers")
        self._check_attention_dp()
        self._check_expert_parallel()
        self._check_all_to_all()
        if self.sparsity is not None:
            self.sparsity.check_gpu(self.gpu)

    def _check_attention_dp(self) -> None:
        """Attention data parallelism needs MoE layers to gather the ranks' tokens."""
        dp = self.attention_dp_size
        if dp < 1:
            raise ValueError(f"attention_dp_size must be >= 1, got {dp}")
        if dp > 1 and self.model.moe is None:
            raise ValueError(
                f"attention_dp_size {dp}: {self.model.name} has no experts (attention data "
                "parallelism is for MoE models); serve a dense model's replicas as more "
                "instances (num_gpus) instead"
            )

    def _check_expert_parallel(self) -> None:
        """Experts split whole over `ep` of the `moe_world_size` ranks (tp x attention DP),
        each expert over `moe_world_size / ep`. `ep` need not divide the experts: the
        engines run such layouts with redundant expert slots (SGLang
        `--ep-num-redundant-experts`, TensorRT-LLM's EPLB `num_slots`), and the busiest
        GPU holds `experts_on_busiest_rank` of them."""
        ep, world, moe = self.expert_parallel_size, self.moe_world_size, self.model.moe
        if ep == 1:
            return
        if moe is None:
            raise ValueError(f"expert_parallel_size {ep}: {self.model.name} has no experts")
        if ep < 1 or world % ep:
            ranks = f"tensor_parallel_size {world}"
            if self.attention_dp_size > 1:
                ranks = f"tensor_parallel_size x attention_dp_size = {world}"
            raise ValueError(f"expert_parallel_size {ep} must divide {ranks} of {self.model.name}")

    def _check_all_to_all(self) -> None:
        """An all-to-all sends each token to the GPUs of its experts: attention DP ranks
        whose experts are whole on each GPU (TensorRT-LLM falls back to the all-gather under
        MoE TP: `CommunicationFactory.create_strategy`; SGLang's DeepEP needs ep = tp)."""
        if all_to_all(self.moe_a2a_backend) is None:
            return
        dp, ep, world = self.attention_dp_size, self.expert_parallel_size, self.moe_world_size
        if dp == 1 or ep != world:
            raise ValueError(
                f"moe_a2a_backend {self.moe_a2a_backend!r} needs attention_dp_size > 1 and "
                f"expert_parallel_size = tensor_parallel_size x attention_dp_size, got "
                f"attention_dp_size {dp}, expert_parallel_size {ep} of {world} GPUs"
            )

    @classmethod
    def from_names(
        cls,
        model: str,
        gpu: str,
        precision: str | Precision = Precision.BF16,
        kv_cache_dtype: str | Precision | None = None,
        tensor_parallel_size: int = 1,
        pipeline_parallel_size: int = 1,
        sparsity: StructuredSparsity | None = None,
        expert_parallel_size: int = 1,
        attention_dp_size: int = 1,
        moe_backend: str | None = None,
        mamba_ssm_cache_dtype: str | None = None,
        moe_a2a_backend: str | None = None,
        linear_kernel: str | None = None,
    ) -> Deployment:
        """Look names up leniently (`"llama-3.1-70b"`, `"H100 SXM"`, `"FP8"`, `"auto"`)."""
        kv = None
        if kv_cache_dtype is not None and str(kv_cache_dtype).lower() != "auto":
            kv = Precision.parse(kv_cache_dtype)
        return cls(
            model=get_model(model),
            gpu=get_gpu(gpu),
            precision=Precision.parse(precision),
            kv_cache_dtype=kv,
            tensor_parallel_size=tensor_parallel_size,
            pipeline_parallel_size=pipeline_parallel_size,
            sparsity=sparsity,
            expert_parallel_size=expert_parallel_size,
            attention_dp_size=attention_dp_size,
            moe_backend=moe_backend,
            mamba_ssm_cache_dtype=mamba_ssm_cache_dtype,
            moe_a2a_backend=moe_a2a_backend,
            linear_kernel=linear_kernel,
        )

    @property
    def input_quant(self) -> Precision | None:
        """The checkpoint format whose linear layers' input quantisations each step launches
        in kernels of their own (`perf.launches.quant_launches`), None when none."""
        return self.precision if self.precision in self.separate_input_quant else None

    @property
    def num_gpus(self) -> int:
        return self.tensor_parallel_size * self.pipeline_parallel_size * self.attention_dp_size

    @property
    def experts_on_busiest_rank(self) -> int:
        """Routed experts on the fullest expert-parallel rank: ceil(experts / ep) (all of
        them without expert parallelism). 256 experts over EP 48 put 6 on some GPUs, as
        SGLang's 32 redundant slots do (288 = 6 x 48, `--ep-num-redundant-experts 32` in
        Dynamo's GB200 DeepSeek launch scripts)."""
        moe = self.model.moe
        if moe is None:
            return 0
        return -(-moe.num_experts // self.expert_parallel_size)

    @property
    def moe_world_size(self) -> int:
        """GPUs the MoE layers of one pipeline stage run over: tp x attention DP."""
        return self.tensor_parallel_size * self.attention_dp_size

    @property
    def activation_precision(self) -> Precision:
        return Precision.FP16 if self.precision is Precision.FP16 else Precision.BF16

    @property
    def kv_precision(self) -> Precision:
        return self.kv_cache_dtype or self.activation_precision

    @property
    def matmul_precision(self) -> Precision:
        """The tensor-core math the linear layers run in (module docstring)."""
        if self.gpu.supports(self.precision) and not self.precision.is_weight_only:
            return self.precision.tensor_core_precision
        return self.activation_precision

    @property
    def matmul_flops_per_s(self) -> float:
        """Dense peak of `matmul_precision` on this GPU (sparsity not applied)."""
        peak = self.gpu.dense_flops_per_s(self.matmul_precision)
        assert peak is not None  # 16-bit math exists on every catalog GPU
        return peak

    @property
    def attention_flops_per_s(self) -> float:
        """Attention scores and weighted sums run in the activation precision."""
        peak = self.gpu.dense_flops_per_s(self.activation_precision)
        assert peak is not None
        return peak

    @property
    def weight_bytes_per_element(self) -> float:
        """Bytes per linear-layer weight, 2:4 compression included."""
        ratio = 1.0 if self.sparsity is None else StructuredSparsity.bytes_ratio(self.precision)
        return self.precision.bytes_per_element * ratio

    @property
    def kv_heads_per_gpu(self) -> int:
        """KV heads each tensor-parallel rank stores; heads are replicated when tp > heads,
        and MLA's single latent is replicated on every rank (vLLM)."""
        if self.model.mla is not None:
            return 1
        return -(-self.model.num_key_value_heads // self.tensor_parallel_size)

    @property
    def kv_bytes_per_token_per_layer_per_gpu(self) -> float:
        per_layer = self.model.kv_bytes_per_token_per_layer(self.kv_precision)
        if self.model.mla is not None:
            return per_layer
        return per_layer * self.kv_heads_per_gpu / self.model.num_key_value_heads

    @property
    def kv_bytes_per_token_per_gpu(self) -> float:
        """KV-cache bytes one token takes on a GPU of the stage with most layers, over the
        softmax layers only: linear-attention layers keep a state per sequence instead
        (SGLang `model_runner_kv_cache_mixin.py` `profile_max_num_token`: a hybrid model's
        token cell counts its `full_attention_layer_ids`)."""
        layers = -(-self.model.num_kv_cache_layers // self.pipeline_parallel_size)
        return self.kv_bytes_per_token_per_layer_per_gpu * layers

    @property
    def linear_state_bytes_per_gpu(self) -> float:
        """Linear-attention state one sequence holds on one GPU: its value heads split over
        tp (SGLang `Mamba2StateShape`: `divide(num_heads, tp)`), all its layers."""
        la = self.model.linear_attention
        if la is None:
            return 0.0
        share = -(-la.num_value_heads // self.tensor_parallel_size) / la.num_value_heads
        state = self.model.linear_state_bytes_per_sequence(
            self.activation_precision, self.mamba_ssm_cache_dtype
        )
        return state * share

    def allreduce_hops(self, group_size: int) -> int:
        """Latency hops of one all-reduce over `group_size` GPUs (`roofline.allreduce_hops`):
        inside the scale-up domain every GPU is one hop from every other (NVSwitch, or a full
        mesh), outside it the ring runs over PCIe."""
        gpu = self.gpu
        one_hop = gpu.scale_up_bytes_per_s is not None and group_size <= gpu.scale_up_domain_size
        return allreduce_hops(group_size, one_hop=one_hop)

    def link_bytes_per_s(self, group_size: int) -> float:
        """Per-direction bandwidth between `group_size` GPUs: the scale-up fabric when the
        group fits in the NVLink domain, PCIe otherwise."""
        gpu = self.gpu
        if gpu.scale_up_bytes_per_s is not None and group_size <= gpu.scale_up_domain_size:
            return gpu.scale_up_bytes_per_s
        return gpu.pcie_bytes_per_s
