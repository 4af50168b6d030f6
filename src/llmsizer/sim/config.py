"""`EngineConfig`: how the simulated engine batches, with presets named after real engines.

Every field's description is its documentation and its CLI `--help`. Knob names are vLLM's.

Presets (`engine:`) fill the fields a user did not set:

- `vllm`: vLLM v1 `vllm serve` on an 80 GB-class GPU: continuous batching, decode-first
  with chunked prefill, `max_num_seqs` 1024, `max_num_batched_tokens` 8192 (vLLM's
  `EngineArgs` defaults for the OpenAI server on GPUs with >= 70 GiB; 256 / 2048 on
  smaller GPUs), KV blocks allocated as tokens are scheduled, recompute preemption, prefix
  caching on, `block_size` 16, async scheduling (`overlap_scheduler`): `async_scheduling`
  None resolved on by `VllmConfig.__post_init__` since 0.14.0 (vllm-project/vllm#27614;
  False in 0.13.0; read in the 0.13.0, 0.14.0, 0.17 and 0.19 wheels), off with a draft
  model (not EAGLE/MTP: until vllm#48341), with pipeline parallelism in 0.14 only
  (vllm#32359), on a Ray executor, and on the CPU (vllm#31525, `CpuPlatform`).
- `trtllm`: TensorRT-LLM's in-flight batching with the LLM API defaults: context and
  generation in one step, chunked context off, `max_batch_size` 2048, `max_num_tokens` 8192,
  and the GUARANTEED_NO_EVICT capacity policy (KV for prompt plus maximum output reserved at
  admission, so no preemption), `tokens_per_block` 32, the overlap scheduler (the PyTorch
  backend's default since 1.0: `TorchLlmArgs.disable_overlap_scheduler` False; the C++-runtime
  rows of `measurements.csv` ran without it, `calibrate.measurements.runtime_settings`).
- `sglang`: SGLang's scheduler: a step with new prompt work runs only prompt tokens
  (prefill-first, mixed chunks off), `chunked_prefill_size` 8192, radix prefix cache on,
  retraction (preemption) when KV runs out, page size 1 (`block_size` 1 here is exact but
  slower; 16 is used as an accounting granularity), `max_running_requests` left to memory
  (1024 here; 48 with speculation), the overlap schedule (`disable_overlap_schedule` False in
  `ServerArgs` 0.5.9), off with pipeline parallelism (`_handle_pipeline_parallelism`) and with
  speculative decoding unless `SGLANG_ENABLE_SPEC_V2` (False in `environ.py` 0.5.9).
A deployment's draft model, speculation and pipeline stages change these as the engines do
(`llmsizer.instance.deployment.feature_defaults`) unless the setting is given.

CUDA graphs (`cudagraph_*` fields, resolved per engine by `llmsizer.perf.cuda_graphs`, which
cites each engine's code): vLLM `FULL_AND_PIECEWISE` over its default sizes (up to
min(2 x max_num_seqs, 512)); SGLang and TensorRT-LLM graph decode-only batches, SGLang padded
up to `--cuda-graph-max-bs` (by GPU memory and TP), TensorRT-LLM unpadded up to 128
(`cuda_graph_config` defaults).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

EngineName = Literal["vllm", "trtllm", "sglang"]
CudaGraphMode = Literal["NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE"]

PRESETS: dict[str, dict[str, Any]] = {
    "vllm": {
        "batching": "continuous",
        "max_num_seqs": 1024,
        "max_num_batched_tokens": 8192,
        "enable_chunked_prefill": True,
        "schedule_policy": "decode_first",
        "kv_reservation": "incremental",
        "enable_prefix_caching": True,
        "block_size": 16,
        "overlap_scheduler": True,
    },
    "trtllm": {
        "batching": "continuous",
        "max_num_seqs": 2048,
        "max_num_batched_tokens": 8192,
        "enable_chunked_prefill": False,
        "schedule_policy": "decode_first",
        "kv_reservation": "full",
        "enable_prefix_caching": True,
        "block_size": 32,
        "overlap_scheduler": True,
    },
    "sglang": {
        "batching": "continuous",
        "max_num_seqs": 1024,
        "max_num_batched_tokens": 8192,
        "enable_chunked_prefill": True,
        "schedule_policy": "prefill_first",
        "kv_reservation": "incremental",
        "enable_prefix_caching": True,
        "block_size": 16,
        "overlap_scheduler": True,
    },
}


class EngineConfig(BaseModel):
    """The batching engine's knobs (vLLM names; TensorRT-LLM/SGLang equivalents in the docs)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    engine: EngineName | None = Field(
        None, description="Engine preset filling unset fields: vllm, trtllm or sglang."
    )
    batching: Literal["static", "dynamic", "continuous"] = Field(
        "continuous",
        description="static: full batches run to their longest member; dynamic: like static "
        "but a partial batch launches after batch_timeout_ms; continuous: in-flight batching.",
    )
    max_num_seqs: int = Field(
        256, ge=1, description="Most requests in a batch (TensorRT-LLM max_batch_size)."
    )
    max_num_batched_tokens: int = Field(
        8192, ge=1, description="Token budget of one step (TensorRT-LLM max_num_tokens)."
    )
    enable_chunked_prefill: bool = Field(
        True, description="Split long prompts across steps to fit the token budget."
    )
    schedule_policy: Literal["decode_first", "prefill_first"] = Field(
        "decode_first",
        description="decode_first: decodes every step, prompts fill the rest (vLLM); "
        "prefill_first: steps with prompt work pause decodes (SGLang).",
    )
    kv_reservation: Literal["incremental", "full", "projected"] = Field(
        "incremental",
        description="incremental: allocate KV as tokens are scheduled, preempt when full; "
        "full: reserve prompt + max output at admission, never preempt (TRT-LLM); "
        "projected: allocate as scheduled, admit only while the running requests, finishing "
        "in order, can all decode to their end (SGLang with ignore_eos and the radix cache "
        "off); a refused request waits until one finishes.",
    )
    block_size: int = Field(16, ge=1, le=1024, description="Tokens per KV-cache block.")
    num_gpu_blocks: int | None = Field(
        None,
        ge=1,
        description="KV-cache blocks available (unset: unlimited, or from the GPU model).",
    )
    enable_prefix_caching: bool = Field(
        True, description="Reuse KV blocks of shared prompt prefixes (hash_ids, system prompt)."
    )
    scheduler_recv_interval: int = Field(
        1,
        ge=1,
        description="Continuous batching: new requests are read only every N-th step while "
        "the engine is busy (SGLang --scheduler-recv-interval); 1: every step.",
    )
    batch_wait_timeout_iters: int = Field(
        0,
        ge=0,
        description="Continuous batching: while requests decode, hold new prompts for up to "
        "N steps until the step's tokens reach batch_wait_max_tokens_ratio x "
        "max_num_batched_tokens (TensorRT-LLM's delay batching); 0: off.",
    )
    batch_wait_max_tokens_ratio: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Delay batching's token threshold, as a fraction of "
        "max_num_batched_tokens (TensorRT-LLM batch_wait_max_tokens_ratio); 0: off.",
    )
    num_attention_dp_ranks: int = Field(
        1,
        ge=1,
        description="Attention data-parallel ranks this engine stands for: max_num_seqs, "
        "max_num_batched_tokens and the KV blocks are all ranks' together (a deployment's "
        "attention_dp_size sets it).",
    )
    attention_dp_enable_balance: bool = Field(
        False,
        description="With num_attention_dp_ranks > 1, hold new prompts until every rank has one "
        "or attention_dp_timeout_iters steps pass, so they share one step (TensorRT-LLM "
        "attention_dp_config.enable_balance).",
    )
    attention_dp_timeout_iters: int = Field(
        50,
        ge=0,
        description="Attention-DP balancing: most steps a prompt is held for the other "
        "ranks' (TensorRT-LLM attention_dp_config.timeout_iters, default 50).",
    )
    attention_dp_batching_wait_iters: int = Field(
        10,
        ge=0,
        description="Attention-DP balancing: steps every rank's prompts wait more while every "
        "rank decodes (TensorRT-LLM attention_dp_config.batching_wait_iters, default 10).",
    )
    overlap_scheduler: bool = Field(
        False,
        description="Continuous batching: step n+1 is scheduled while step n runs (TensorRT-LLM's "
        "overlap scheduler, vLLM's async_scheduling, SGLang's overlap schedule): while requests "
        "run, a new request joins the second step after the one it arrived in (the third when "
        "it arrives as a step ends), and a finished request holds its slot one step more.",
    )
    cudagraph_mode: CudaGraphMode | None = Field(
        None,
        description="Which steps replay CUDA graphs (vLLM CompilationConfig.cudagraph_mode): "
        "FULL_AND_PIECEWISE (vLLM's default), FULL_DECODE_ONLY (SGLang's and TensorRT-LLM's: "
        "decode-only batches), FULL, PIECEWISE, or NONE (eager); unset: the engine's.",
    )
    cudagraph_capture_sizes: tuple[int, ...] | None = Field(
        None,
        description="Batch sizes (tokens) captured as CUDA graphs (vLLM "
        "cudagraph_capture_sizes, SGLang --cuda-graph-bs, TensorRT-LLM "
        "cuda_graph_config.batch_sizes); unset: the engine's default list.",
    )
    max_cudagraph_capture_size: int | None = Field(
        None,
        ge=1,
        description="Largest captured size (vLLM max_cudagraph_capture_size, SGLang "
        "--cuda-graph-max-bs, TensorRT-LLM cuda_graph_config.max_batch_size); larger steps "
        "run eagerly; unset: the engine's default.",
    )
    cudagraph_padding: bool | None = Field(
        None,
        description="Pad a batch up to the next captured size (TensorRT-LLM "
        "cuda_graph_config.enable_padding; SGLang unless --disable-cuda-graph-padding; vLLM "
        "always); false: a size not captured runs eagerly; unset: the engine's.",
    )
    batch_timeout_ms: float = Field(
        50.0, gt=0, description="Dynamic batching: longest wait before a partial batch launches."
    )

    @model_validator(mode="before")
    @classmethod
    def _apply_preset(cls, data: Any) -> Any:
        preset = data.get("engine") if isinstance(data, dict) else None
        if isinstance(preset, str) and preset in PRESETS:
            return {**PRESETS[data["engine"]], **{k: v for k, v in data.items() if v is not None}}
        return data

    @field_validator("cudagraph_capture_sizes")
    @classmethod
    def _positive_sizes(cls, sizes: tuple[int, ...] | None) -> tuple[int, ...] | None:
        if sizes is not None and (not sizes or min(sizes) < 1):
            raise ValueError(f"cudagraph_capture_sizes {list(sizes)} must be positive sizes")
        return None if sizes is None else tuple(sorted(set(sizes)))

    @model_validator(mode="after")
    def _check_budget(self) -> EngineConfig:
        if self.batching == "continuous" and self.max_num_batched_tokens < self.max_num_seqs:
            raise ValueError(
                f"max_num_batched_tokens ({self.max_num_batched_tokens}) must be >= "
                f"max_num_seqs ({self.max_num_seqs}) so every running request can decode"
            )
        sizes, top = self.cudagraph_capture_sizes, self.max_cudagraph_capture_size
        if sizes and top is not None and max(sizes) != top:
            raise ValueError(
                f"max_cudagraph_capture_size ({top}) must equal the largest of "
                f"cudagraph_capture_sizes ({max(sizes)}) when both are set"
            )
        return self
