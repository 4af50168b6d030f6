"""Timing attention with PyTorch's SDPA (flash / memory-efficient / math, as it picks), at
the model's head shapes, over the grid's prompt lengths and decode batches and KV lengths.

MHA / GQA run as the model has them. MLA runs as engines run it (vLLM, SGLang; DeepSeek-V2
report sec. 2.1.2) and as the performance model prices it: prefill expands the latent to
per-head keys of `qk_nope_head_dim + qk_rope_head_dim` and values of `v_head_dim`; decode
keeps the up-projections absorbed, so every head's query scores against the one cached
latent plus rope key and sums over the latent (one KV head of `kv_lora_rank +
qk_rope_head_dim`, values its first `kv_lora_rank`). As FlashMLA and FlashInfer run it, the
heads are the query rows of one attention over the latent: SDPA has no kernel for a
576-wide head shared by 128 query heads and would copy the cache once per head (576 GiB for
DeepSeek-V3 at batch 256 x 8k, seen on an H100). One latent head gives a GPU only `batch`
blocks of work, so on a GPU the cache is split along its length until the splits fill the
SMs, at least 256 keys each (FlashMLA's and FlashDecoding's split-KV: `num_splits` from the
SM count), and the splits' outputs are summed (the combine); unsplit, PyTorch's kernel read
a batch-1 8k cache at 13 GB/s on an H100. The work each row counts is
`shapes.prefill_work` / `shapes.decode_work`, the step model's.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from itertools import product

import torch
import torch.nn.functional as F

from llmsizer.collect.budget import coarse_to_fine
from llmsizer.collect.fit import LATENT_DECODE
from llmsizer.collect.kernels import Timer
from llmsizer.collect.shapes import Grid, decode_work, prefill_work
from llmsizer.collect.timings import Kind, Timing
from llmsizer.specs import ModelSpec


def _sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)


def _split_sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, splits: int) -> torch.Tensor:
    """MLA decode over `splits` pieces of the cache, then the combine (module docstring)."""
    out = F.scaled_dot_product_attention(q, k, v)
    return out.view(-1, splits, *out.shape[1:]).sum(dim=1)


def kv_splits(batch: int, length: int, device: torch.device) -> int:
    """Pieces of each sequence's cache a latent decode attention runs in (module docstring)."""
    if device.type != "cuda":
        return 1
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    return max(1, min(length // 256, -(-sms // batch)))


def head_dims(model: ModelSpec, *, decode: bool) -> tuple[int, int, int, int]:
    """(query heads, KV heads, query/key dim, value dim) of the attention kernel."""
    heads, mla = model.num_attention_heads, model.mla
    if mla is None:
        return heads, model.num_key_value_heads, model.head_dim, model.head_dim
    if decode:  # absorbed: one latent "head" shared by all
        return heads, 1, mla.kv_lora_rank + mla.qk_rope_head_dim, mla.kv_lora_rank
    return heads, heads, mla.qk_nope_head_dim + mla.qk_rope_head_dim, mla.v_head_dim


def time_prefill_attention(model: ModelSpec, grid: Grid, timer: Timer) -> Iterator[Timing]:
    """Causal SDPA over whole prompts of each length (coarse to fine)."""
    heads, kv_heads, d, dv = head_dims(model, decode=False)
    for length in coarse_to_fine(grid.prefill_lengths):
        q = torch.randn(1, heads, length, d, device=timer.device, dtype=torch.bfloat16)
        k = torch.randn(1, kv_heads, length, d, device=timer.device, dtype=torch.bfloat16)
        v = torch.randn(1, kv_heads, length, dv, device=timer.device, dtype=torch.bfloat16)
        seconds = timer(partial(_sdpa, q, k, v, True))
        flops, bytes_ = prefill_work(model, length)
        yield Timing(
            Kind.PREFILL_ATTENTION, "sdpa_causal", "bf16", length, 1, length, flops, bytes_, seconds
        )


def time_decode_attention(model: ModelSpec, grid: Grid, timer: Timer) -> Iterator[Timing]:
    """One query per sequence over a static KV cache of each length, for each batch."""
    heads, kv_heads, d, dv = head_dims(model, decode=True)
    name = LATENT_DECODE if model.mla is not None else "sdpa_decode"
    for batch, length in coarse_to_fine(list(product(grid.decode_batches, grid.decode_lengths))):
        if model.mla is None:
            q = torch.randn(batch, heads, 1, d, device=timer.device, dtype=torch.bfloat16)
            k = torch.randn(batch, kv_heads, length, d, device=timer.device, dtype=torch.bfloat16)
            seconds = timer(partial(_sdpa, q, k, torch.randn_like(k), False))
        else:  # the heads as one latent head's query rows, over split pieces of the cache
            n = kv_splits(batch, length, timer.device)
            q = torch.randn(batch * n, 1, heads, d, device=timer.device, dtype=torch.bfloat16)
            piece = -(-length // n)
            k = torch.randn(batch * n, 1, piece, d, device=timer.device, dtype=torch.bfloat16)
            # the values are the latent part of the cached keys
            seconds = timer(partial(_split_sdpa, q, k, k[..., :dv], n))
        flops, bytes_ = decode_work(model, batch, length)
        yield Timing(Kind.DECODE_ATTENTION, name, "bf16", 1, batch, length, flops, bytes_, seconds)
