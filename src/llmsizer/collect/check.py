"""The end-to-end check: a real decode loop against the prediction from collected factors.

`DecodeModel` is the model's decoder in plain PyTorch at its shapes (random weights, a
static KV cache, `num_layers` of them): per layer RMS norm, the fused QKV projection,
rotary, the KV write, SDPA over the cache, the output projection, residual, RMS norm, the
gated MLP, residual; then the final norm and the output projection of every sequence. A
step decodes one token for each of `batch` sequences at KV length `context`.

The prediction is `perf.StepModel` for the same model (with `num_layers` layers) on the
collected device with the collected factors, without the engine's host step overhead
(this loop has no scheduler or sampler): `check_decode` times steps at a few batch sizes
and lengths and reports each error and their median absolute value.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

import torch
import torch.nn.functional as F

from llmsizer.collect.kernels import Timer, rotate_half
from llmsizer.perf import Deployment, EfficiencyFactors, StepModel
from llmsizer.perf.batch_shape import decode_batch
from llmsizer.specs import GpuSpec, ModelSpec, Precision


@dataclass(frozen=True, slots=True)
class CheckPoint:
    """One (batch, context) point: measured and predicted step seconds."""

    batch: int
    context: int
    measured_s: float
    predicted_s: float

    @property
    def error_pct(self) -> float:
        return (self.predicted_s - self.measured_s) / self.measured_s * 100


def median_abs_error_pct(points: list[CheckPoint]) -> float:
    return statistics.median(abs(p.error_pct) for p in points)


class DecodeModel:
    """The decoder's kernels at the model's shapes (module docstring); weights random."""

    def __init__(self, model: ModelSpec, num_layers: int, device: torch.device) -> None:
        self.m, self.device = model, device
        h, d = model.hidden_size, model.head_dim
        qkv = model.q_dim + 2 * model.kv_dim
        up = model.intermediate_size * (2 if model.gated_mlp else 1)

        def w(*shape: int) -> torch.Tensor:
            return torch.randn(*shape, device=device, dtype=torch.bfloat16) * 0.02

        self.layers = [
            (w(qkv, h), w(h, model.attention_output_dim), w(up, h), w(h, model.intermediate_size))
            for _ in range(num_layers)
        ]
        self.norm = torch.ones(h, device=device, dtype=torch.bfloat16)
        self.lm_head = w(model.vocab_size, h)
        self.inv_freq = 1.0 / (10000 ** (torch.arange(0, d, 2, device=device) / d))

    def cache(self, batch: int, length: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """A static K and V cache per layer, `length + 1` slots, filled with random keys."""
        m = self.m
        shape = (batch, m.num_key_value_heads, length + 1, m.head_dim)
        return [
            (
                torch.randn(shape, device=self.device, dtype=torch.bfloat16),
                torch.randn(shape, device=self.device, dtype=torch.bfloat16),
            )
            for _ in self.layers
        ]

    def rotary(self, pos: int) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin at `pos`: a table engines compute once (vLLM's cos_sin_cache)."""
        angles = pos * self.inv_freq
        cos = torch.cat((angles.cos(), angles.cos())).to(torch.bfloat16)
        sin = torch.cat((angles.sin(), angles.sin())).to(torch.bfloat16)
        return cos, sin

    def step(
        self,
        x: torch.Tensor,
        pos: int,
        cache: list[tuple[torch.Tensor, torch.Tensor]],
        rotary: tuple[torch.Tensor, torch.Tensor],
    ) -> torch.Tensor:
        """One decode step of `x` (batch, hidden) at position `pos` (`rotary(pos)`);
        returns the logits."""
        m = self.m
        b, h, d = x.shape[0], m.hidden_size, m.head_dim
        cos, sin = rotary
        for (w_qkv, w_o, w_up, w_down), (k_cache, v_cache) in zip(self.layers, cache, strict=True):
            qkv = F.linear(F.rms_norm(x, (h,), self.norm), w_qkv)
            q, k, v = qkv.split((m.q_dim, m.kv_dim, m.kv_dim), dim=-1)
            q = q.view(b, m.num_attention_heads, 1, d)
            k = k.view(b, m.num_key_value_heads, 1, d)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            k_cache[:, :, pos : pos + 1] = k
            v_cache[:, :, pos : pos + 1] = v.view(b, m.num_key_value_heads, 1, d)
            att = F.scaled_dot_product_attention(
                q, k_cache[:, :, : pos + 1], v_cache[:, :, : pos + 1], enable_gqa=True
            )
            x = x + F.linear(att.reshape(b, -1), w_o)
            gate_up = F.linear(F.rms_norm(x, (h,), self.norm), w_up)
            if m.gated_mlp:
                gate, up = gate_up.chunk(2, dim=-1)
                act = F.silu(gate) * up
            else:
                act = F.gelu(gate_up)
            x = x + F.linear(act, w_down)
        return F.linear(F.rms_norm(x, (h,), self.norm), self.lm_head)


def check_skipped(model: ModelSpec, precision: str) -> str | None:
    """Why the decode check cannot run for `model` at `precision`, or None when it can."""
    if precision != "bf16":
        return "the decode loop runs BF16; collect --precision bf16 checks"
    if model.moe is not None or model.mla is not None:
        return "the decode loop is built for dense models with MHA / GQA attention"
    return None


def check_decode(
    model: ModelSpec,
    gpu: GpuSpec,
    factors: EfficiencyFactors,
    *,
    num_layers: int,
    points: tuple[tuple[int, int], ...],
    timer: Timer,
) -> Iterator[CheckPoint]:
    """Measured against predicted decode step times at each (batch, context) of `points`."""
    small = dataclasses.replace(
        model, num_layers=num_layers, num_sliding_window_layers=0, sliding_window=None
    )
    deployment = Deployment(model=small, gpu=gpu, precision=Precision.BF16)
    predict = StepModel(deployment, factors.replace(step_overhead_s=0.0))
    decoder = DecodeModel(model, num_layers, timer.device)
    with torch.inference_mode():
        for batch, context in points:
            cache = decoder.cache(batch, context)
            x = torch.randn(batch, model.hidden_size, device=timer.device, dtype=torch.bfloat16)
            measured = timer(partial(decoder.step, x, context, cache, decoder.rotary(context)))
            predicted = predict(decode_batch(batch, context + 1))
            del cache
            yield CheckPoint(batch, context, measured, predicted)
