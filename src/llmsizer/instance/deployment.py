"""`DeploymentSpec`: one deployment of a model, the single type every path uses.

`predict` (one case or a CSV row), `plan` (each configuration it searches), `simulate
--model` (a scenario's GPU step cost), calibration and validation all describe a deployment
with this spec, and `llmsizer.instance.make_instance` is the one function that turns it into
something to simulate. Field names are vLLM's (`tensor_parallel_size`, `kv_cache_dtype`,
`gpu_memory_utilization`); the engine preset and its scheduler settings are an
`EngineConfig` (`max_num_seqs`, `max_num_batched_tokens`, ...).

At the boundary (flags, CSV rows, YAML) the spec also takes the short spellings users type:
`tp` / `pp` (vLLM's `-tp` / `-pp`), `kv_precision`, the engine as a preset name
(`engine: trtllm`), and scheduler settings beside it (`max_num_seqs: 64`), which fold into
`engine`.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

from llmsizer.instance.speculation import SpeculativeSpec
from llmsizer.perf.linear_kernels import check_linear_kernel
from llmsizer.perf.moe_comm import check_moe_a2a_backend
from llmsizer.perf.moe_kernels import check_moe_backend
from llmsizer.sim import PRESETS, EngineConfig
from llmsizer.specs.model_parts import check_state_dtype

_ENGINE_KEYS = frozenset(EngineConfig.model_fields) - {"engine"}


class HardwareSpec(BaseModel):
    """A deployment's model on its GPUs, without the engine: the fields a scenario's GPU
    step cost gives, its engine coming from the scenario (`llmsizer.config`)."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", populate_by_name=True, allow_inf_nan=False
    )

    model: str = Field(description="Catalog name, Hugging Face id, or path to a config.json.")
    gpu: str = Field(description="GPU name, e.g. h100-sxm, H200, l40s.")
    tensor_parallel_size: int = Field(
        1,
        ge=1,
        validation_alias=AliasChoices("tensor_parallel_size", "tp"),
        description="Tensor-parallel size: GPUs per pipeline stage (vLLM -tp).",
    )
    pipeline_parallel_size: int = Field(
        1,
        ge=1,
        validation_alias=AliasChoices("pipeline_parallel_size", "pp"),
        description="Pipeline-parallel size: stages (vLLM -pp).",
    )
    precision: str = Field(
        "bf16", description="Weights and math: bf16, fp16, fp8, int8, int4, fp4."
    )
    kv_cache_dtype: str | None = Field(
        None,
        validation_alias=AliasChoices("kv_cache_dtype", "kv_precision"),
        description="KV-cache precision (vLLM --kv-cache-dtype); unset or auto: as the "
        "activations.",
    )
    gpu_memory_utilization: float = Field(
        0.9,
        gt=0,
        le=1,
        description="The engine's memory fraction, in its own meaning: vLLM "
        "gpu_memory_utilization (of all memory: weights, activations, KV), SGLang "
        "mem_fraction_static (of all memory: weights and KV), TensorRT-LLM "
        "free_gpu_memory_fraction (of the memory left free after weights and activations: "
        "KV).",
    )
    sparsity: bool = Field(False, description="2:4 structured sparsity of the weights.")
    expert_parallel_size: int = Field(
        1,
        ge=1,
        validation_alias=AliasChoices("expert_parallel_size", "ep"),
        description="MoE experts split whole over this many of the tensor-parallel ranks, "
        "each expert over the rest (SGLang --ep-size, TensorRT-LLM moe_expert_parallel_size;"
        " vLLM's --enable-expert-parallel is expert_parallel_size = tensor_parallel_size).",
    )

    attention_dp_size: int = Field(
        1,
        ge=1,
        validation_alias=AliasChoices("attention_dp_size", "dp"),
        description="Attention data parallelism (MoE models): this many ranks of "
        "tensor_parallel_size GPUs each run attention and the dense layers on their own "
        "requests, the MoE layers run over all tp x dp GPUs (vLLM --data-parallel-size with "
        "--enable-expert-parallel; SGLang --enable-dp-attention --dp-size D --tp T is tp T/D;"
        " TensorRT-LLM enable_attention_dp with tp_size T is tp 1, dp T).",
    )

    moe_backend: str | None = Field(
        None,
        description="The routed experts' kernel where the launch picked one (vLLM "
        "--moe-backend: triton); unset: the engine's default on the GPU, the one the "
        "fitted factors price.",
    )

    linear_kernel: str | None = Field(
        None,
        description="The linear layers' kernel where the engine version ran one other than "
        "the one the fitted factors price: fp8_swap_ab (TensorRT-LLM 1.0-1.2's DeepGEMM "
        "block-FP8 GEMM on B200 / B300 / GB200 / GB300, far slower at prompt sizes; fixed by "
        "1.3); unset: the engine's default kernel.",
    )

    separate_gdn_projections: bool = Field(
        False,
        description="Gated DeltaNet (Qwen3.5) input projections run as the checkpoint's four "
        "GEMMs, in_proj_qkv, in_proj_z, in_proj_b, in_proj_a (SGLang up to 0.5.9); unset: "
        "merged into in_proj_qkvz and in_proj_ba and split by one kernel (SGLang 0.5.10 on).",
    )

    mamba_ssm_cache_dtype: str | None = Field(
        None,
        validation_alias=AliasChoices("mamba_ssm_cache_dtype", "mamba_ssm_dtype"),
        description="Linear-attention (Gated DeltaNet, Mamba) recurrent state dtype: "
        "float32, bfloat16, float16 (vLLM --mamba-ssm-cache-dtype, SGLang "
        "--mamba-ssm-dtype); unset or auto: the model config's mamba_ssm_dtype.",
    )

    moe_a2a_backend: str | None = Field(
        None,
        description="How attention-DP ranks send tokens to their experts: an all-to-all "
        "(SGLang --moe-a2a-backend deepep with --deepep-mode low_latency: "
        "deepep_low_latency, normal: deepep_high_throughput; TensorRT-LLM NVLinkTwoSided: "
        "nvlink_two_sided) or allgather_reducescatter; unset: the engine's own choice.",
    )

    @field_validator("moe_backend")
    @classmethod
    def _known_moe_backend(cls, name: str | None) -> str | None:
        return check_moe_backend(name)

    @field_validator("linear_kernel")
    @classmethod
    def _known_linear_kernel(cls, name: str | None) -> str | None:
        return check_linear_kernel(name)

    @field_validator("mamba_ssm_cache_dtype")
    @classmethod
    def _known_state_dtype(cls, name: str | None) -> str | None:
        if name is None or name == "auto":
            return None
        check_state_dtype(name)
        return name

    @field_validator("moe_a2a_backend")
    @classmethod
    def _known_moe_a2a_backend(cls, name: str | None) -> str | None:
        return check_moe_a2a_backend(name)

    @model_validator(mode="before")
    @classmethod
    def _vllm_expert_parallel(cls, data: Any) -> Any:
        """vLLM's `enable_expert_parallel: true`: EP size = TP x DP (its data-parallel ranks)."""
        if not isinstance(data, dict) or "enable_expert_parallel" not in data:
            return data
        data = dict(data)
        enabled = data.pop("enable_expert_parallel")
        if enabled not in (True, False, None):
            raise ValueError(f"enable_expert_parallel must be true or false, not {enabled!r}")
        if enabled and data.get("expert_parallel_size", data.get("ep")) is None:
            tp = data.get("tensor_parallel_size", data.get("tp", 1))
            dp = data.get("attention_dp_size", data.get("dp", 1))
            data["expert_parallel_size"] = tp * dp
        return data

    speculative: SpeculativeSpec | None = Field(
        None, description="Speculative decoding (draft head or model, k, acceptance)."
    )

    @property
    def gpus_per_instance(self) -> int:
        """GPUs of one instance: tensor x pipeline parallel x attention data parallel."""
        return self.tensor_parallel_size * self.pipeline_parallel_size * self.attention_dp_size


def one_step_ahead(preset: object, data: dict[str, Any]) -> bool:
    """False where a deployment's features (raw input `data`) turn its preset's one-step-ahead
    scheduling off in the engine (sources: `llmsizer.sim.config`): vLLM with a draft model,
    SGLang with speculation or pipeline stages, TensorRT-LLM with pipeline stages
    (`PyExecutor.__init__`: `pp_size > 1` runs `_executor_loop_pp`); True otherwise."""
    spec, pp = data.get("speculative"), data.get("pipeline_parallel_size", data.get("pp"))
    method = spec.get("method", "head") if isinstance(spec, dict) else getattr(spec, "method", None)
    staged = isinstance(pp, int) and pp > 1
    if preset == "vllm":
        return method != "draft_model"
    return not (staged or (preset == "sglang" and spec is not None))


# SGLang 0.5.9 `ServerArgs._handle_speculative_decoding`: EAGLE, EAGLE3 and STANDALONE (an MTP
# head runs as EAGLE, NEXTN's alias; a draft model as STANDALONE) reset an unset
# `max_running_requests` to 48, "for speculative decoding"; a global cap, split over the
# attention data-parallel ranks (`ModelRunner.max_running_requests // dp_size`).
SGLANG_SPECULATIVE_MAX_RUNNING = 48


def feature_defaults(preset: object, data: dict[str, Any]) -> dict[str, Any]:
    """The scheduler settings a deployment's features (raw input `data`) change from its
    preset's where the engine changes them: one-step-ahead scheduling off (`one_step_ahead`),
    and SGLang's running cap under speculation (`SGLANG_SPECULATIVE_MAX_RUNNING`, per rank)."""
    changed: dict[str, Any] = {}
    if not one_step_ahead(preset, data):
        changed["overlap_scheduler"] = False
    if preset == "sglang" and data.get("speculative") is not None:
        dp = data.get("attention_dp_size", data.get("dp", 1))
        ranks = dp if isinstance(dp, int) and dp > 0 else 1
        changed["max_num_seqs"] = max(1, SGLANG_SPECULATIVE_MAX_RUNNING // ranks)
    return changed


class DeploymentSpec(HardwareSpec):
    """A model on GPUs: parallelism, precisions, memory share and the engine's scheduler."""

    engine: EngineConfig = Field(
        default_factory=lambda: EngineConfig(engine="vllm"),
        description="Engine preset (vllm, trtllm, sglang) and its scheduler settings.",
    )

    @model_validator(mode="before")
    @classmethod
    def _fold_engine(cls, data: Any) -> Any:
        """A preset name and flat scheduler keys become one `EngineConfig` (module docstring)."""
        if not isinstance(data, dict):
            return data
        flat = {k: data[k] for k in _ENGINE_KEYS if data.get(k) is not None}
        engine = data.get("engine")
        if isinstance(engine, EngineConfig) and not flat:
            return data
        if isinstance(engine, EngineConfig):
            engine = engine.model_dump(exclude_unset=True)
        elif engine is None or isinstance(engine, str):
            engine = {"engine": engine or "vllm"}
        if isinstance(engine, dict):
            engine = {**engine, **flat}
            engine = {**feature_defaults(engine.get("engine"), data), **engine}
        rest = {k: v for k, v in data.items() if k not in _ENGINE_KEYS}
        return {**rest, "engine": engine}

    @classmethod
    def input_keys(cls) -> frozenset[str]:
        """Every key a flat row may use: the fields, their short spellings, and the engine's
        scheduler settings (module docstring)."""
        keys = set(cls.model_fields) | _ENGINE_KEYS | {"enable_expert_parallel"}
        for field in cls.model_fields.values():
            if isinstance(field.validation_alias, AliasChoices):
                keys |= {a for a in field.validation_alias.choices if isinstance(a, str)}
        return frozenset(keys)

    @property
    def preset(self) -> str:
        """The engine preset's name (`vllm` when the engine config names none)."""
        return self.engine.engine or "vllm"

    def label(self) -> str:
        """`h100-sxm bf16 TP8 trtllm` (plus PP and scheduler settings the preset leaves)."""
        parts = [self.gpu, self.precision, f"TP{self.tensor_parallel_size}"]
        if self.attention_dp_size > 1:
            parts.append(f"DP{self.attention_dp_size}")
        if self.expert_parallel_size > 1:
            parts.append(f"EP{self.expert_parallel_size}")
        if self.sparsity:
            parts.insert(2, "2:4")
        if self.pipeline_parallel_size > 1:
            parts.append(f"PP{self.pipeline_parallel_size}")
        if self.speculative is not None:
            parts.append(self.speculative.label())
        parts.append(self.preset)
        parts += [f"{key}={value}" for key, value in self.batch_overrides().items()]
        return " ".join(parts)

    def batch_overrides(self) -> dict[str, int]:
        """`max_num_seqs` and `max_num_batched_tokens` where they differ from the preset's."""
        preset = PRESETS.get(self.preset, {})
        values = {k: getattr(self.engine, k) for k in ("max_num_seqs", "max_num_batched_tokens")}
        return {k: v for k, v in values.items() if v != preset.get(k)}

    def row(self) -> dict[str, Any]:
        """Flat fields for CSV/JSON: the engine as its preset and scheduler settings."""
        fields = self.model_dump(exclude={"engine"})
        return {
            **fields,
            "engine": self.preset,
            "max_num_seqs": self.engine.max_num_seqs,
            "max_num_batched_tokens": self.engine.max_num_batched_tokens,
        }
