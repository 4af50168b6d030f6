"""Timing the kernels of a step with PyTorch, at the model's shapes (random weights).

`Timer` runs a closure `warmup` times, then `repeats` times, and returns the median. On a
GPU the closure is captured once into a CUDA graph and each repeat is a replay bracketed by
CUDA events: the kernels' device time, as an engine's CUDA graphs run them (vLLM replays
its decode steps from full graphs, SGLang and TensorRT-LLM their decode batches). Timed
eagerly instead, a kernel of a few microseconds shows PyTorch's launch gaps from Python
(tens to hundreds of microseconds on an H100), which no graphed step pays (first seen on a
real H100: the elementwise intercept was 186 us, and the decode check measured the same
~5 ms from batch 1 to 256). A closure that cannot be captured is timed eagerly. On a CPU each
repeat is bracketed by `perf_counter` (CPU ops are synchronous), or with one thread by the
process's CPU time (steady on a shared machine). Each `time_*`
function returns `Timing` rows with the work the performance model counts for them
(`llmsizer.collect.shapes`).

FP8 GEMMs use `torch._scaled_mm` (per-tensor scales, BF16 out) where the GPU has FP8
tensor cores (compute capability 8.9 and later: Ada, Hopper, Blackwell); its rows and
features must be multiples of 16, so fewer tokens are padded to 16 and the row says how many
ran, and a layer with other widths (Mixtral's 8-expert router) is timed padded to 16 and
counted at the padded size (`fp8_gemm`).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import cached_property, partial
from typing import Any

import torch
import torch.nn.functional as F

from llmsizer.collect.budget import coarse_to_fine
from llmsizer.collect.shapes import ExpertGemm, Gemm, Grid, elementwise_bytes
from llmsizer.collect.timings import Kind, Timing
from llmsizer.specs import ModelSpec

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
_FP8_MIN_CAPABILITY = (8, 9)  # CUDA compute capability with FP8 tensor cores (Ada)
_FP8_ROWS = 16  # torch._scaled_mm needs row counts that are multiples of 16


# Caches are flushed before every repeat by writing a buffer larger than them (Triton's
# do_bench writes 256 MB; H100's L2 is 50 MB, B200's 126 MB): a model's weights stream from
# memory each step, so a kernel timed on cache-resident weights would be too fast. On a CPU
# 64 MiB covers the last-level cache a process sees on most servers.
GPU_FLUSH_BYTES = 256 << 20
CPU_FLUSH_BYTES = 64 << 20


@dataclass(frozen=True)
class Timer:
    """Median seconds of a closure on `device` (module docstring), caches flushed before
    each run (outside the timed span)."""

    device: torch.device
    warmup: int
    repeats: int
    flush_bytes: int = 0
    # the `perf_counter` time its calls should end by (the budget's stage deadline)
    until: Callable[[], float] | None = None

    @cached_property
    def _flush_buffer(self) -> torch.Tensor:
        return torch.empty(self.flush_bytes // 4, dtype=torch.int32, device=self.device)

    def _flush(self) -> None:
        if self.flush_bytes:
            self._flush_buffer.zero_()

    def __call__(self, fn: Callable[[], Any]) -> float:
        repeats = self._warm_up(fn)
        if self.device.type == "cuda":
            return self._cuda(fn, repeats)
        # one thread: the process's CPU time, which a busy machine's other processes do not
        # inflate (it is the thread's busy time); more threads: wall time
        clock = time.process_time if torch.get_num_threads() == 1 else time.perf_counter
        samples = []
        for _ in range(repeats):
            self._flush()
            start = clock()
            fn()
            samples.append(clock() - start)
        return statistics.median(samples)

    def _warm_up(self, fn: Callable[[], Any]) -> int:
        """Run the warm-ups; the repeats to time: all of them, or as many as fit before
        `until` at the first call's pace (one at least), so one large kernel cannot run
        far past a time budget."""
        start = time.perf_counter()
        for n in range(self.warmup):
            self._flush()
            fn()
            if n == 0 and self.until is not None:
                if self.device.type == "cuda":
                    torch.cuda.synchronize(self.device)
                call_s = time.perf_counter() - start
                left_s = self.until() - time.perf_counter()
                if call_s * (self.warmup - 1 + self.repeats) > left_s:
                    return max(1, min(self.repeats, int(left_s / call_s)))
        return self.repeats

    def _cuda(self, fn: Callable[[], Any], repeats: int) -> float:
        graph = _captured(fn)
        run = fn if graph is None else graph.replay
        pairs = []
        for _ in range(repeats):
            self._flush()  # queued before the start event: not timed
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            pairs.append((start, end))
        torch.cuda.synchronize(self.device)
        del graph  # its memory pool goes back before the next kernel's
        return statistics.median(s.elapsed_time(e) for s, e in pairs) / 1000.0  # ms -> s


def _captured(fn: Callable[[], Any]) -> torch.cuda.CUDAGraph | None:
    """`fn` captured into a CUDA graph (after the warm-ups, as PyTorch asks), or None when
    it cannot be captured (an op that synchronises with the host)."""
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            fn()
    except RuntimeError:
        torch.cuda.synchronize()
        return None
    return graph


def make_timer(
    device: torch.device, warmup: int, repeats: int, until: Callable[[], float] | None = None
) -> Timer:
    """A `Timer` flushing the device's caches (`GPU_FLUSH_BYTES`, `CPU_FLUSH_BYTES`),
    cutting its repeats short near `until`."""
    flush = GPU_FLUSH_BYTES if device.type == "cuda" else CPU_FLUSH_BYTES
    return Timer(device, warmup, repeats, flush, until)


def fp8_supported(device: torch.device) -> bool:
    """FP8 tensor-core GEMMs: a CUDA GPU of capability 8.9+ and a torch with `_scaled_mm`."""
    if device.type != "cuda" or not hasattr(torch, "_scaled_mm"):
        return False
    return torch.cuda.get_device_capability(device) >= _FP8_MIN_CAPABILITY


def precisions(device: torch.device) -> tuple[str, ...]:
    """The GEMM precisions `collect` times on `device`: BF16 and FP16 everywhere (a device
    entry needs both peaks), FP8 where the GPU has it natively."""
    return ("bf16", "fp16", "fp8") if fp8_supported(device) else ("bf16", "fp16")


def fp8_rows(tokens: int) -> int:
    """Rows an FP8 GEMM of `tokens` runs (padded up to a multiple of 16)."""
    return -(-tokens // _FP8_ROWS) * _FP8_ROWS


def _gemm_closure(
    rows: int, k: int, n: int, precision: str, device: torch.device
) -> Callable[[], Any]:
    if precision == "fp8":
        e4m3 = torch.float8_e4m3fn
        a = torch.randn(rows, k, device=device).to(e4m3)
        b = torch.randn(n, k, device=device).to(e4m3).t()  # column-major, as cuBLASLt wants
        one = torch.ones((), device=device)
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    dtype = DTYPES[precision]
    x = torch.randn(rows, k, device=device, dtype=dtype)
    w = torch.randn(n, k, device=device, dtype=dtype)
    return lambda: F.linear(x, w)


def fp8_gemm(gemm: Gemm) -> Gemm:
    """`gemm` with both widths padded up to a multiple of 16, as `torch._scaled_mm` runs it."""
    return replace(
        gemm, in_features=fp8_rows(gemm.in_features), out_features=fp8_rows(gemm.out_features)
    )


def time_gemms(
    gemms: tuple[Gemm, ...], grid: Grid, precision: str, timer: Timer
) -> Iterator[Timing]:
    """Each linear layer at each token count of the grid (coarse to fine)."""
    weight_bytes = 1.0 if precision == "fp8" else 2.0
    if precision == "fp8":
        gemms = tuple(fp8_gemm(g) for g in gemms)
    for tokens in coarse_to_fine(grid.gemm_tokens):
        rows = fp8_rows(tokens) if precision == "fp8" else tokens
        for gemm in gemms:
            fn = _gemm_closure(rows, gemm.in_features, gemm.out_features, precision, timer.device)
            seconds = timer(fn)
            flops, bytes_ = gemm.flops(rows), gemm.bytes(rows, weight_bytes)
            yield Timing(Kind.GEMM, gemm.name, precision, rows, 0, 0, flops, bytes_, seconds)


def time_expert_gemms(
    experts: tuple[ExpertGemm, ...], grid: Grid, precision: str, timer: Timer
) -> Iterator[Timing]:
    """The routed experts' grouped GEMMs at each token count: one batched matmul over the
    experts hit, each with its share of the routed copies (`ExpertGemm`); `batch` is the
    experts hit, `context` the rows each. 16-bit only (PyTorch has no batched FP8 GEMM)."""
    dtype = DTYPES[precision]
    for tokens in coarse_to_fine(grid.gemm_tokens):
        for e in experts:
            hit, rows = e.experts_hit(tokens), e.rows_per_expert(tokens)
            x = torch.randn(hit, rows, e.in_features, device=timer.device, dtype=dtype)
            w = torch.randn(hit, e.in_features, e.out_features, device=timer.device, dtype=dtype)
            seconds = timer(partial(torch.bmm, x, w))
            flops, bytes_ = e.flops(tokens), e.bytes(tokens, 2.0)
            yield Timing(
                Kind.EXPERT_GEMM, e.name, precision, tokens, hit, rows, flops, bytes_, seconds
            )
            del x, w


def time_square_gemms(grid: Grid, precision: str, timer: Timer) -> Iterator[Timing]:
    """n x n x n GEMMs: the best rate among these and the model's is the measured peak."""
    weight_bytes = 1.0 if precision == "fp8" else 2.0
    for n in coarse_to_fine(grid.square_sizes):
        gemm = Gemm("square", n, n, 1)
        seconds = timer(_gemm_closure(n, n, n, precision, timer.device))
        yield Timing(
            Kind.SQUARE_GEMM,
            f"square_{n}",
            precision,
            n,
            0,
            0,
            gemm.flops(n),
            gemm.bytes(n, weight_bytes),
            seconds,
        )


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def elementwise_layer(
    model: ModelSpec, tokens: int, device: torch.device, *, moe: bool = False
) -> Callable[[], Any]:
    """One layer's memory-bound kernels as eager ops: add + RMS norm twice, rotary on Q and
    K (MLA: on the query heads and the latent plus rope key), the KV-cache write (vLLM's
    reshape_and_cache), the MLP activation; an MoE layer (`moe`) activates every routed
    copy and the shared experts, after permuting the copies (shapes.elementwise_bytes
    counts their traffic)."""
    h = model.hidden_size
    q_heads = model.num_attention_heads
    k_heads = 1 if model.mla is not None else model.num_key_value_heads

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, device=device, dtype=torch.bfloat16)

    x, r, norm_w = rand(tokens, h), rand(tokens, h), rand(h)
    q = rand(tokens, q_heads, model.q_dim // q_heads)
    k = rand(tokens, k_heads, model.kv_dim // k_heads)
    rotary = [(t, rand(tokens, 1, t.shape[-1]), rand(tokens, 1, t.shape[-1])) for t in (q, k)]
    caches = [rand(2 * tokens, k_heads, k.shape[-1]) for _ in range(1 if model.mla else 2)]
    widths = _activation_widths(model, tokens, moe)
    gate_ups = [rand(rows, 2 * width if model.gated_mlp else width) for rows, width in widths]
    moe_spec = model.moe if moe else None
    route = (
        None
        if moe_spec is None
        else torch.randint(tokens, (tokens * moe_spec.num_experts_per_tok,), device=device)
    )

    def run() -> Any:
        for _ in range(2):
            F.rms_norm(x + r, (h,), norm_w)
        for t, cos, sin in rotary:
            _ = t * cos + rotate_half(t) * sin
        for cache in caches:
            cache[tokens:] = k
        if route is not None:
            x.index_select(0, route)  # the routed copies, permuted to their experts
        for gate_up, (_, width) in zip(gate_ups, widths, strict=True):
            if model.gated_mlp:
                F.silu(gate_up[:, :width]) * gate_up[:, width:]
            else:
                F.gelu(gate_up)

    return run


def _activation_widths(model: ModelSpec, tokens: int, moe: bool) -> list[tuple[int, int]]:
    """(rows, width) of each MLP activation in one layer: the dense MLP's, or an MoE
    layer's routed copies and shared experts."""
    if not moe or model.moe is None:
        return [(tokens, model.intermediate_size)]
    widths = [(tokens * model.moe.num_experts_per_tok, model.moe.expert_intermediate_size)]
    if model.moe.shared_expert_intermediate_size:
        widths.append((tokens, model.moe.shared_expert_intermediate_size))
    return widths


def time_elementwise(model: ModelSpec, grid: Grid, timer: Timer) -> Iterator[Timing]:
    """The elementwise work of the model's usual layer (an MoE layer where it has them) at
    each token count of the grid."""
    moe = model.num_moe_layers > model.num_dense_layers
    for tokens in coarse_to_fine(grid.gemm_tokens):
        seconds = timer(elementwise_layer(model, tokens, timer.device, moe=moe))
        bytes_ = elementwise_bytes(model, tokens, moe=moe)
        name = "moe_layer" if moe else "layer"
        yield Timing(Kind.ELEMENTWISE, name, "bf16", tokens, 0, 0, 0.0, bytes_, seconds)


def time_copy(grid: Grid, timer: Timer) -> Iterator[Timing]:
    """A device-memory copy of `grid.copy_bytes` (read and write: twice the bytes)."""
    src = torch.empty(grid.copy_bytes // 2, device=timer.device, dtype=torch.bfloat16)
    src.fill_(1.0)  # a copy takes as long whatever the values
    dst = torch.empty_like(src)
    seconds = timer(lambda: dst.copy_(src))
    yield Timing(Kind.COPY, "copy", "bf16", 0, 0, 0, 0.0, 2.0 * grid.copy_bytes, seconds)
