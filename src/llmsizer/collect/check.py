"""The end-to-end check: a real decode loop and prefill against the collected factors.

`DecodeModel` is the model's decoder in plain PyTorch at its shapes (random weights, a
static KV cache, `num_layers` of them): per layer RMS norm, the fused QKV projection,
rotary, the KV write, SDPA over the cache, the output projection, residual, RMS norm, the
gated MLP, residual; then the final norm and the output projection of every sequence. A
step decodes one token for each of `batch` sequences at KV length `context`. An MoE model's
MLP is its router (GEMM and top-k), the routed copies permuted to the experts they hit (as
many as perf's `expected_experts_touched`, each an equal share: uniform routing, as the step
model prices it), the experts' gated MLPs as batched matmuls, each token's copies summed
(a reduction, as vLLM's `moe_sum`: PyTorch's `index_add_` took 29 % of an MoE prefill on
the H100 in bf16 atomics), and the shared experts. `DecodeModel.prefill` runs whole prompts
from an empty cache through the same layers with causal attention (the KV write left out:
under 1 % of its bytes). On a GPU each step is replayed from a CUDA graph (`kernels.Timer`).

The prediction is `perf.StepModel` for the same model (with `num_layers` layers) on the
collected device with the collected factors, without the engine's host step overhead
(this loop has no scheduler or sampler): `check_steps` times decode steps at a few batch
sizes and lengths, then prefill steps of a few prompts and lengths; each point
has its error, and each check the median absolute value.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F

from llmsizer.collect.kernels import Timer, rotate_half
from llmsizer.collect.shapes import ExpertGemm
from llmsizer.perf import Deployment, EfficiencyFactors, StepModel
from llmsizer.perf.batch_shape import decode_batch, prefill_batch
from llmsizer.specs import GpuSpec, ModelSpec, Precision
from llmsizer.specs.model_parts import MoeSpec


@dataclass(frozen=True, slots=True)
class CheckPoint:
    """One (batch, context) point: measured and predicted step seconds."""

    batch: int
    context: int
    measured_s: float
    predicted_s: float
    prompt: bool = False  # a prefill step of `batch` prompts of `context` tokens

    @property
    def error_pct(self) -> float:
        return (self.predicted_s - self.measured_s) / self.measured_s * 100


def median_abs_error_pct(points: list[CheckPoint]) -> float:
    return statistics.median(abs(p.error_pct) for p in points)


def _weight(device: torch.device, *shape: int) -> torch.Tensor:
    """A random BF16 weight at an initialiser's scale."""
    return torch.randn(*shape, device=device, dtype=torch.bfloat16) * 0.02


class DecodeModel:
    """The decoder's kernels at the model's shapes (module docstring); weights random."""

    def __init__(self, model: ModelSpec, num_layers: int, device: torch.device) -> None:
        self.m, self.device = model, device
        h, d = model.hidden_size, model.head_dim
        qkv = model.q_dim + 2 * model.kv_dim

        w = partial(_weight, device)
        moe = model.moe
        mlp = model.intermediate_size if moe is None else moe.shared_expert_intermediate_size
        up = mlp * (2 if model.gated_mlp else 1)
        self.layers = [
            (w(qkv, h), w(h, model.attention_output_dim), w(up, h), w(h, mlp))
            for _ in range(num_layers)
        ]
        # an MoE layer's router (experts, hidden), gate/up (experts, hidden, 2 I), down
        self.experts = [] if moe is None else [self._expert_weights(moe) for _ in self.layers]
        self.norm = torch.ones(h, device=device, dtype=torch.bfloat16)
        self.lm_head = w(model.vocab_size, h)
        self.inv_freq = 1.0 / (10000 ** (torch.arange(0, d, 2, device=device) / d))

    def _expert_weights(self, moe: MoeSpec) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        n, h, i = moe.num_experts, self.m.hidden_size, moe.expert_intermediate_size
        w = partial(_weight, self.device)
        return w(n, h), w(n, h, 2 * i), w(n, i, h)

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
        for n, ((w_qkv, w_o, w_up, w_down), (k_cache, v_cache)) in enumerate(
            zip(self.layers, cache, strict=True)
        ):
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
            x = x + self._ffn(x, n, w_up, w_down)
        return F.linear(F.rms_norm(x, (h,), self.norm), self.lm_head)

    def prefill(self, x: torch.Tensor) -> torch.Tensor:
        """One prefill step of `x` (prompts, tokens, hidden) from position 0, causal
        attention over each prompt; returns the logits of each prompt's last token."""
        m = self.m
        p, n, h, d = x.shape[0], x.shape[1], m.hidden_size, m.head_dim
        angles = torch.arange(n, device=x.device)[:, None] * self.inv_freq
        cos = torch.cat((angles.cos(), angles.cos()), dim=-1).to(torch.bfloat16)
        sin = torch.cat((angles.sin(), angles.sin()), dim=-1).to(torch.bfloat16)
        x = x.reshape(p * n, h)
        for i, (w_qkv, w_o, w_up, w_down) in enumerate(self.layers):
            qkv = F.linear(F.rms_norm(x, (h,), self.norm), w_qkv)
            q, k, v = (
                t.view(p, n, -1, d).transpose(1, 2)
                for t in qkv.split((m.q_dim, m.kv_dim, m.kv_dim), dim=-1)
            )
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            att = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            x = x + F.linear(att.transpose(1, 2).reshape(p * n, -1), w_o)
            x = x + self._ffn(x, i, w_up, w_down)
        last = x.view(p, n, h)[:, -1]
        return F.linear(F.rms_norm(last, (h,), self.norm), self.lm_head)

    def _ffn(self, x: torch.Tensor, layer: int, w_up: torch.Tensor, w_down: torch.Tensor) -> Any:
        """The layer's MLP after its norm: dense, or shared plus routed experts."""
        y = F.rms_norm(x, (self.m.hidden_size,), self.norm)
        out = self._mlp(y, w_up, w_down) if w_down.shape[1] else 0
        return out + self._experts(y, *self.experts[layer]) if self.experts else out

    def _mlp(self, x: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
        gate_up = F.linear(x, w_up)
        if self.m.gated_mlp:
            gate, up = gate_up.chunk(2, dim=-1)
            return F.linear(F.silu(gate) * up, w_down)
        return F.linear(F.gelu(gate_up), w_down)

    def _experts(
        self, x: torch.Tensor, router: torch.Tensor, gate_up: torch.Tensor, down: torch.Tensor
    ) -> torch.Tensor:
        """The routed experts of one layer for `x` (module docstring)."""
        moe = self.m.moe
        assert moe is not None
        b, k = len(x), moe.num_experts_per_tok
        torch.topk(F.linear(x, router), k, dim=-1)  # the router's choice (its cost)
        share = ExpertGemm("experts", 0, 0, moe.num_experts, k)  # the timed GEMMs' routing
        hit, rows = share.experts_hit(b), share.rows_per_expert(b)
        route = torch.arange(hit * rows, device=x.device) % b  # copy j is token j mod b
        copies = x.index_select(0, route).view(hit, rows, -1)
        gate, up = torch.bmm(copies, gate_up[:hit]).chunk(2, dim=-1)
        out = torch.bmm(F.silu(gate) * up, down[:hit]).view(hit * rows, -1)
        # each token's k copies summed (vLLM's moe_sum; the copies past b x k pad the rows)
        return out[: b * k].view(k, b, -1).sum(dim=0)


def check_skipped(model: ModelSpec, precision: str) -> str | None:
    """Why the decode check cannot run for `model` at `precision`, or None when it can."""
    if precision != "bf16":
        return "the decode loop runs BF16; collect --precision bf16 checks"
    if model.mla is not None or model.num_linear_attention_layers:
        return "the decode loop is built for MHA / GQA attention (no MLA, no linear attention)"
    return None


def check_steps(
    model: ModelSpec,
    gpu: GpuSpec,
    factors: EfficiencyFactors,
    *,
    num_layers: int,
    decode_points: tuple[tuple[int, int], ...],
    prefill_points: tuple[tuple[int, int], ...],
    timer: Timer,
) -> Iterator[CheckPoint]:
    """Measured against predicted step times: decode steps at each (batch, context) of
    `decode_points`, then prefill steps of whole prompts from an empty cache, as a step
    without chunking runs them, at each (prompts, tokens) of `prefill_points`. One loop and
    one step model (`num_layers` of `model`, all MoE layers in an MoE model, no sliding
    window: as the loop runs them, without host overhead) serve both."""
    moe = None if model.moe is None else dataclasses.replace(model.moe, num_moe_layers=num_layers)
    small = dataclasses.replace(
        model, num_layers=num_layers, num_sliding_window_layers=0, sliding_window=None, moe=moe
    )
    deployment = Deployment(model=small, gpu=gpu, precision=Precision.BF16)
    predict = StepModel(deployment, factors.replace(step_overhead_s=0.0))
    decoder = DecodeModel(model, num_layers, timer.device)
    with torch.inference_mode():
        for batch, context in decode_points:
            cache = decoder.cache(batch, context)
            x = torch.randn(batch, model.hidden_size, device=timer.device, dtype=torch.bfloat16)
            measured = timer(partial(decoder.step, x, context, cache, decoder.rotary(context)))
            predicted = predict(decode_batch(batch, context + 1))
            del cache
            yield CheckPoint(batch, context, measured, predicted)
        for prompts, tokens in prefill_points:
            shape = (prompts, tokens, model.hidden_size)
            x = torch.randn(*shape, device=timer.device, dtype=torch.bfloat16)
            measured = timer(partial(decoder.prefill, x))
            predicted = predict(prefill_batch(prompts, tokens))
            yield CheckPoint(prompts, tokens, measured, predicted, prompt=True)
