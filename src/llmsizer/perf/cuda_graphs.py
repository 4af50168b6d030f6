"""CUDA graphs: which steps an engine replays from a captured graph, at what padded size.

Engines capture the forward pass as CUDA graphs for a list of batch sizes and replay them,
so a step launches one graph instead of a dozen kernels per layer. A step of n tokens runs
in the graph of the smallest captured size >= n (padding): the layers' GEMMs, MoE experts,
elementwise kernels and collectives then do the work of the padded count; attention reads
the real sequences' keys (the padding slots have no context), and the output projection and
sampler take the real rows. A step above the largest captured size, or (without padding) at a
size not captured, or of a kind the engine does not graph, runs eagerly: kernel by kernel,
paying a launch overhead per layer that a graphed step does not (`EfficiencyFactors.
prefill_layer_overhead_s`, the eager launch of a layer). The kinds, by vLLM's
`CUDAGraphMode` (`vllm/config/compilation.py`):

- `FULL`: whole steps graphed, decode-only and mixed; `FULL_DECODE_ONLY`: decode-only steps
  in full graphs, steps with prompt work eager;
- `PIECEWISE`: every step's token count padded for the graphed pieces (GEMMs, norms,
  collectives) while attention runs eagerly between them: padded, and eager launches;
- `FULL_AND_PIECEWISE` (vLLM's default since 0.11): decode-only steps full, mixed piecewise;
- `NONE`: everything eager (vLLM `--enforce-eager`).

Defaults per engine (`capture_plan`; `docs/aic_measurement.md` section 10 has the sources):

- vLLM V1 0.11-0.19 (`CompilationConfig`, `VllmConfig._set_cudagraph_sizes`, read in the
  0.17 and 0.19 wheels): `FULL_AND_PIECEWISE`; sizes 1, 2, 4, 8-248 in steps of 8, then
  256 up to `max_cudagraph_capture_size` in steps of 16, whose default is
  min(2 x max_num_seqs, 512); sizes above `max_num_batched_tokens` are dropped. Always
  padded.
- SGLang 0.5.x (`ServerArgs._generate_cuda_graph_batch_sizes`, `_handle_gpu_memory_settings`,
  0.5.9 wheel): decode batches only (prefill / extend eager); sizes 1, 2, 4, 8, 12, 16-256 in
  steps of 8, 272-496 in steps of 16, then 512 up to `--cuda-graph-max-bs` in steps of 32;
  padded unless `--disable-cuda-graph-padding`; `--cuda-graph-max-bs` by default 256 (tp < 4)
  or 512 on GPUs below 160 GB, 512 above.
- TensorRT-LLM PyTorch backend (`CudaGraphConfig` in `tensorrt_llm/llmapi/llm_args.py`, the
  1.x version stored as find_string id 1090804222): generation-only batches; `max_batch_size`
  128 when unset; `enable_padding` False by default; with padding sizes 1, 2, 4, 8-128 in
  steps of 8, without 1-31, 32, 64, 128; then powers of two from 256 below max_batch_size,
  and max_batch_size itself. Without padding a batch size not captured runs eagerly.

Inside a decode step's graph every engine runs a MoE layer's shared experts on a second CUDA
stream beside the routed experts (`SharedExpertsStream`, `ENGINE_SHARED_EXPERTS`), so their
GEMMs and activation leave the step's kernels in a row (`perf.launches.layer_units`):

- vLLM (`FusedMoE`'s shared-experts stream, any model with shared experts, find_string id
  53977374851, `vllm/model_executor/layers/fused_moe/layer.py`): steps of at most
  `VLLM_SHARED_EXPERTS_STREAM_TOKEN_THRESHOLD` tokens, 256 by default (`vllm/envs.py`, id
  6351456); the input is copied (`hidden_states.clone()`) before the fork, and the outputs
  added after the join: 2 kernels left of the shared expert's 4.
- SGLang (`DeepseekV2MoE.forward` -> `forward_normal_dual_stream` when
  `get_is_capture_mode()`, `python/sglang/srt/models/deepseek_v2.py`, id 56059489236): the
  routed experts on `alt_stream`, the shared ones on the first, the add after the join: 1 left.
  DeepSeek's block (MLA models); Qwen3.5's at 0.5.9 is not sourced here: all 4 stay.
- TensorRT-LLM (`Deepseekv3MoE.forward`, `maybe_execute_in_parallel(..., self.aux_stream)`,
  `tensorrt_llm/_torch/models/modeling_deepseekv3.py`, id 2891600299; multi-stream only
  under CUDA graphs, `tensorrt_llm/_torch/modules/multi_stream_utils.py`, id 681035315):
  the add left, 1; DeepSeek's block (MLA models).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from llmsizer.perf.efficiency import EnginePreset
from llmsizer.units import GB

CudaGraphMode = Literal["NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE"]
StepKind = Literal["full", "piecewise", "eager"]

# mode -> how (decode-only steps, steps with prompt work) run when their size is captured
_KINDS: dict[str, tuple[StepKind, StepKind]] = {
    "NONE": ("eager", "eager"),
    "PIECEWISE": ("piecewise", "piecewise"),
    "FULL": ("full", "full"),
    "FULL_DECODE_ONLY": ("full", "eager"),
    "FULL_AND_PIECEWISE": ("full", "piecewise"),
}
ENGINE_MODE: dict[EnginePreset, CudaGraphMode] = {
    EnginePreset.VLLM: "FULL_AND_PIECEWISE",
    EnginePreset.SGLANG: "FULL_DECODE_ONLY",  # decode batches only
    EnginePreset.TRTLLM: "FULL_DECODE_ONLY",  # generation-only batches
}


@dataclass(frozen=True, slots=True)
class SharedExpertsStream:
    """How an engine runs a MoE layer's shared experts inside a decode step's graph (module
    docstring): on a second stream in steps of at most `max_tokens` tokens (None: every
    graphed step), leaving `kernels_left` of their kernels (`perf.launches.SHARED_EXPERT`) on
    the first; in every MoE block with shared experts, or (`mla_only`) DeepSeek's only."""

    kernels_left: int
    mla_only: bool
    max_tokens: int | None = None


ENGINE_SHARED_EXPERTS: dict[EnginePreset, SharedExpertsStream] = {
    EnginePreset.VLLM: SharedExpertsStream(kernels_left=2, mla_only=False, max_tokens=256),
    EnginePreset.SGLANG: SharedExpertsStream(kernels_left=1, mla_only=True),
    EnginePreset.TRTLLM: SharedExpertsStream(kernels_left=1, mla_only=True),
}
_SGLANG_LARGE_GPU_BYTES = 160 * GB  # server_args.py: below it cuda_graph_max_bs by tp
_TRTLLM_DEFAULT_MAX_BATCH_SIZE = 128  # llm_args.py: `max_batch_size or 128`


@dataclass(frozen=True, slots=True)
class CudaGraphs:
    """The captured sizes (tokens of one attention data-parallel rank, sorted) and how each
    kind of step runs (module docstring). `run(tokens, decode_only)` is a table lookup:
    the table of padded sizes is built once."""

    capture_sizes: tuple[int, ...]
    padding: bool = True
    decode: StepKind = "full"
    mixed: StepKind = "eager"
    shared_experts: SharedExpertsStream | None = None  # None: no second stream
    _padded: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        sizes = self.capture_sizes
        if any(s < 1 for s in sizes) or list(sizes) != sorted(set(sizes)):
            raise ValueError(
                f"cudagraph_capture_sizes {list(sizes)} must be distinct positive integers "
                "in ascending order"
            )
        table = [0] * (sizes[-1] + 1 if sizes else 1)  # 0: not captured
        for low, high in zip((0, *sizes), sizes, strict=False):
            for n in range(low + 1, high + 1) if self.padding else (high,):
                table[n] = high
        object.__setattr__(self, "_padded", tuple(table))

    def __reduce__(self) -> tuple[type[CudaGraphs], tuple[object, ...]]:
        """Pickled by its fields (the table rebuilt), as `StepModel` is."""
        fields = (self.capture_sizes, self.padding, self.decode, self.mixed)
        return (CudaGraphs, (*fields, self.shared_experts))

    @property
    def compiled(self) -> bool:
        """Whether the engine runs a compiled model whose steps with prompt work replay
        piecewise graphs (vLLM's `PIECEWISE`, `FULL_AND_PIECEWISE`): a step it does not replay
        from a full graph then launches from Python only the attention between the pieces
        (past the largest captured size, the compiled pieces' kernels without graphs), one
        op a layer (`perf.launches`); else every layer's kernels."""
        return self.mixed == "piecewise"

    @property
    def max_capture_size(self) -> int:
        return self.capture_sizes[-1] if self.capture_sizes else 0

    def run(self, tokens: int, decode_only: bool) -> tuple[int, bool]:
        """(tokens the graphed parts run at, whether the step launches eagerly) for a step of
        `tokens` (one rank's): padded in a full or piecewise graph of a captured size, else
        eager at its own size."""
        kind = self.decode if decode_only else self.mixed
        padded = self._padded[tokens] if tokens < len(self._padded) else 0
        if kind == "eager" or not padded:
            return tokens, True
        return padded, kind == "piecewise"


def vllm_capture_sizes(
    max_num_seqs: int, max_num_batched_tokens: int, max_capture_size: int | None = None
) -> tuple[int, ...]:
    """vLLM V1's default list (module docstring)."""
    top = min(2 * max_num_seqs, 512) if max_capture_size is None else max_capture_size
    sizes = [s for s in (1, 2, 4) if s <= top]
    sizes += range(8, min(top + 1, 256), 8)
    sizes += range(256, top + 1, 16)
    return tuple(s for s in sizes if s <= max_num_batched_tokens)


def sglang_capture_sizes(max_bs: int, padding: bool = True) -> tuple[int, ...]:
    """SGLang's list for `--cuda-graph-max-bs` (module docstring)."""
    if not padding:
        return tuple(range(1, max_bs + 1))
    sizes = [1, 2, 4, 8, 12, *range(16, 257, 8), *range(272, 512, 16), *range(512, max_bs + 1, 32)]
    return tuple(s for s in sizes if s <= max_bs)


def sglang_max_bs(gpu_memory_bytes: float, tensor_parallel_size: int) -> int:
    """SGLang 0.5.9's default `--cuda-graph-max-bs` (module docstring)."""
    if gpu_memory_bytes < _SGLANG_LARGE_GPU_BYTES and tensor_parallel_size < 4:
        return 256
    return 512


def trtllm_capture_sizes(max_batch_size: int, padding: bool) -> tuple[int, ...]:
    """TensorRT-LLM's `CudaGraphConfig._generate_cuda_graph_batch_sizes` (module docstring)."""
    sizes = [1, 2, 4, *range(8, 129, 8)] if padding else [*range(1, 32), 32, 64, 128]
    sizes += [2**i for i in range(8, math.ceil(math.log2(max_batch_size)))]
    sizes = sorted(s for s in set(sizes) if s <= max_batch_size)
    return tuple(sizes) if sizes and sizes[-1] == max_batch_size else (*sizes, max_batch_size)


def capture_plan(
    engine: EnginePreset | str,
    *,
    mode: CudaGraphMode | None = None,
    capture_sizes: Sequence[int] | None = None,
    max_capture_size: int | None = None,
    padding: bool | None = None,
    max_num_seqs: int,
    max_num_batched_tokens: int,
    gpu_memory_bytes: float,
    tensor_parallel_size: int,
) -> CudaGraphs:
    """The `CudaGraphs` an engine runs with: its defaults (module docstring) where the
    `EngineConfig` fields (`cudagraph_mode`, `cudagraph_capture_sizes`,
    `max_cudagraph_capture_size`, `cudagraph_padding`) are unset. The scheduler settings are
    one rank's."""
    engine = EnginePreset.parse(engine)
    decode, mixed = _KINDS[mode or ENGINE_MODE[engine]]
    if engine is EnginePreset.VLLM:
        padding = True if padding is None else padding
        sizes = capture_sizes or vllm_capture_sizes(
            max_num_seqs, max_num_batched_tokens, max_capture_size
        )
    elif engine is EnginePreset.SGLANG:
        padding = True if padding is None else padding
        top = max_capture_size or sglang_max_bs(gpu_memory_bytes, tensor_parallel_size)
        sizes = capture_sizes or sglang_capture_sizes(top, padding)
    else:
        padding = False if padding is None else padding
        top = max_capture_size or _TRTLLM_DEFAULT_MAX_BATCH_SIZE
        sizes = capture_sizes or trtllm_capture_sizes(top, padding)
    if capture_sizes and max_capture_size is not None and max(capture_sizes) != max_capture_size:
        raise ValueError(
            f"max_cudagraph_capture_size {max_capture_size} must equal the largest of "
            f"cudagraph_capture_sizes ({max(capture_sizes)}) when both are set"
        )
    sizes = tuple(sorted(set(sizes)))
    return CudaGraphs(sizes, padding, decode, mixed, ENGINE_SHARED_EXPERTS[engine])
