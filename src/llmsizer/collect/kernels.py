"""Timing the kernels of a step with PyTorch, at the model's shapes (random weights).

`Timer` runs a closure `warmup` times, then `repeats` times, and returns the median: on a
GPU each repeat is bracketed by CUDA events (device time, launch gaps included, as an
engine's eager launches pay them); on a CPU by `perf_counter` (CPU ops are synchronous),
or with one thread by the process's CPU time (steady on a shared machine). Each `time_*`
function returns `Timing` rows with the work the performance model counts for them
(`llmsizer.collect.shapes`).

FP8 GEMMs use `torch._scaled_mm` (per-tensor scales, BF16 out) where the GPU has FP8
tensor cores (compute capability 8.9 and later: Ada, Hopper, Blackwell); its rows must be
multiples of 16, so fewer tokens are padded to 16 and the row says how many ran.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property, partial
from typing import Any

import torch
import torch.nn.functional as F

from llmsizer.collect.shapes import Gemm, Grid, decode_work, elementwise_bytes, prefill_work
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

    @cached_property
    def _flush_buffer(self) -> torch.Tensor:
        return torch.empty(self.flush_bytes // 4, dtype=torch.int32, device=self.device)

    def _flush(self) -> None:
        if self.flush_bytes:
            self._flush_buffer.zero_()

    def __call__(self, fn: Callable[[], Any]) -> float:
        for _ in range(self.warmup):
            self._flush()
            fn()
        if self.device.type == "cuda":
            return self._cuda(fn)
        # one thread: the process's CPU time, which a busy machine's other processes do not
        # inflate (it is the thread's busy time); more threads: wall time
        clock = time.process_time if torch.get_num_threads() == 1 else time.perf_counter
        samples = []
        for _ in range(self.repeats):
            self._flush()
            start = clock()
            fn()
            samples.append(clock() - start)
        return statistics.median(samples)

    def _cuda(self, fn: Callable[[], Any]) -> float:
        pairs = []
        for _ in range(self.repeats):
            self._flush()  # queued before the start event: not timed
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            pairs.append((start, end))
        torch.cuda.synchronize(self.device)
        return statistics.median(s.elapsed_time(e) for s, e in pairs) / 1000.0  # ms -> s


def make_timer(device: torch.device, warmup: int, repeats: int) -> Timer:
    """A `Timer` flushing the device's caches (`GPU_FLUSH_BYTES`, `CPU_FLUSH_BYTES`)."""
    flush = GPU_FLUSH_BYTES if device.type == "cuda" else CPU_FLUSH_BYTES
    return Timer(device, warmup, repeats, flush)


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


def time_gemms(
    gemms: tuple[Gemm, ...], grid: Grid, precision: str, timer: Timer
) -> Iterator[Timing]:
    """Each linear layer at each token count of the grid."""
    weight_bytes = 1.0 if precision == "fp8" else 2.0
    for gemm in gemms:
        for tokens in grid.gemm_tokens:
            rows = fp8_rows(tokens) if precision == "fp8" else tokens
            fn = _gemm_closure(rows, gemm.in_features, gemm.out_features, precision, timer.device)
            seconds = timer(fn)
            yield Timing(
                Kind.GEMM,
                gemm.name,
                precision,
                rows,
                0,
                0,
                gemm.flops(rows),
                gemm.bytes(rows, weight_bytes),
                seconds,
            )


def time_square_gemms(grid: Grid, precision: str, timer: Timer) -> Iterator[Timing]:
    """n x n x n GEMMs: the best rate among these and the model's is the measured peak."""
    weight_bytes = 1.0 if precision == "fp8" else 2.0
    for n in grid.square_sizes:
        gemm = Gemm("square", n, n)
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


def _sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)


def time_prefill_attention(model: ModelSpec, grid: Grid, timer: Timer) -> Iterator[Timing]:
    """Causal SDPA (PyTorch picks flash / memory-efficient / math) over whole prompts."""
    heads, kv_heads, d = model.num_attention_heads, model.num_key_value_heads, model.head_dim
    for length in grid.prefill_lengths:
        q = torch.randn(1, heads, length, d, device=timer.device, dtype=torch.bfloat16)
        k = torch.randn(1, kv_heads, length, d, device=timer.device, dtype=torch.bfloat16)
        v = torch.randn_like(k)
        seconds = timer(partial(_sdpa, q, k, v, True))
        flops, bytes_ = prefill_work(model, length)
        yield Timing(
            Kind.PREFILL_ATTENTION, "sdpa_causal", "bf16", length, 1, length, flops, bytes_, seconds
        )


def time_decode_attention(model: ModelSpec, grid: Grid, timer: Timer) -> Iterator[Timing]:
    """One query per sequence over a static KV cache of each length, for each batch."""
    heads, kv_heads, d = model.num_attention_heads, model.num_key_value_heads, model.head_dim
    for batch in grid.decode_batches:
        for length in grid.decode_lengths:
            q = torch.randn(batch, heads, 1, d, device=timer.device, dtype=torch.bfloat16)
            k = torch.randn(batch, kv_heads, length, d, device=timer.device, dtype=torch.bfloat16)
            v = torch.randn_like(k)
            seconds = timer(partial(_sdpa, q, k, v, False))
            flops, bytes_ = decode_work(model, batch, length)
            yield Timing(
                Kind.DECODE_ATTENTION,
                "sdpa_decode",
                "bf16",
                1,
                batch,
                length,
                flops,
                bytes_,
                seconds,
            )


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def elementwise_layer(model: ModelSpec, tokens: int, device: torch.device) -> Callable[[], Any]:
    """One layer's memory-bound kernels as eager ops: add + RMS norm twice, rotary on Q and
    K, the KV-cache write (vLLM's reshape_and_cache), the MLP activation
    (shapes.elementwise_bytes counts their traffic)."""
    h, inter, d = model.hidden_size, model.intermediate_size, model.head_dim
    bf16 = torch.bfloat16

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, device=device, dtype=bf16)

    x, r, norm_w = rand(tokens, h), rand(tokens, h), rand(h)
    q, k = rand(tokens, model.num_attention_heads, d), rand(tokens, model.num_key_value_heads, d)
    cos, sin = rand(tokens, 1, d), rand(tokens, 1, d)
    k_cache, v_cache = (
        rand(2 * tokens, model.num_key_value_heads, d),
        rand(2 * tokens, model.num_key_value_heads, d),
    )
    gate_up = rand(tokens, 2 * inter if model.gated_mlp else inter)

    def run() -> Any:
        for _ in range(2):
            F.rms_norm(x + r, (h,), norm_w)
        for t in (q, k):
            _ = t * cos + rotate_half(t) * sin
        k_cache[tokens:] = k
        v_cache[tokens:] = k
        if model.gated_mlp:
            return F.silu(gate_up[:, :inter]) * gate_up[:, inter:]
        return F.gelu(gate_up)

    return run


def time_elementwise(model: ModelSpec, grid: Grid, timer: Timer) -> Iterator[Timing]:
    """One layer's elementwise work at each token count of the grid."""
    for tokens in grid.gemm_tokens:
        seconds = timer(elementwise_layer(model, tokens, timer.device))
        yield Timing(
            Kind.ELEMENTWISE,
            "layer",
            "bf16",
            tokens,
            0,
            0,
            0.0,
            elementwise_bytes(model, tokens),
            seconds,
        )


def time_copy(grid: Grid, timer: Timer) -> Iterator[Timing]:
    """A device-memory copy of `grid.copy_bytes` (read and write: twice the bytes)."""
    src = torch.empty(grid.copy_bytes // 2, device=timer.device, dtype=torch.bfloat16)
    src.normal_()
    dst = torch.empty_like(src)
    seconds = timer(lambda: dst.copy_(src))
    yield Timing(Kind.COPY, "copy", "bf16", 0, 0, 0, 0.0, 2.0 * grid.copy_bytes, seconds)
