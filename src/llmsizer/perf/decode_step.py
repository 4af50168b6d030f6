"""A decode-only step's price in two parts, for the simulator's most common step
(`StepModel.decode_step_s`): everything but decode attention, kept per number of sequences
(`DecodeStep`, filled by `StepModel._decode_step`), and decode attention from the constants
it needs (`DecodeAttention`). Both are classes with typed fields: compiled (`setup.py`),
their fields are read natively once per simulated step, where a `StepConstants` or a
NamedTuple field is a Python attribute lookup.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llmsizer.perf.constants import StepConstants


@dataclass(frozen=True, slots=True)
class DecodeStep:
    """A decode-only step of n sequences but for its attention (`StepModel._decode_step`):
    seconds of the layers' parts before decode attention, elementwise, output projection,
    collectives and overheads; FLOPs and bytes of the roofline parts before decode
    attention, and the elementwise bytes. A class, not a NamedTuple: compiled
    (`setup.py`), its fields are read natively, once per simulated step."""

    layers_before_s: float
    elementwise_s: float
    lm_head_s: float
    communication_s: float
    overhead_s: float
    flops_before: float
    bytes_before: float
    elementwise_bytes: float


class DecodeAttention:
    """Decode attention's time: `aggregate` and `step_terms`' terms for decoding sequences
    only, with the same operations, from the `StepConstants` it needs copied into typed
    fields (read natively when compiled, where a `StepConstants` read is a Python lookup)."""

    __slots__ = (
        "act_bytes_per_token",
        "attention_dp_size",
        "bytes_per_s",
        "flops_per_pair",
        "flops_per_s",
        "full_layers",
        "kv_bytes_per_token_per_layer",
        "state_bytes_per_seq",
        "window",
        "window_layers",
    )

    def __init__(self, c: StepConstants) -> None:
        self.window: int = c.window
        self.full_layers: int = c.full_layers
        self.window_layers: int = c.window_layers
        self.flops_per_pair: float = c.decode_flops_per_pair
        self.flops_per_s: float = c.decode_attention_flops_per_s
        self.kv_bytes_per_token_per_layer: float = c.kv_bytes_per_token_per_layer
        self.act_bytes_per_token: float = c.attention_act_bytes_per_token
        self.state_bytes_per_seq: float = c.linear_state_bytes_per_seq
        self.bytes_per_s: float = c.attention_bytes_per_s
        self.attention_dp_size: int = c.attention_dp_size

    def time_s(self, n: int, context_tokens: int) -> tuple[float, float]:
        """(compute, memory) seconds of decode attention for `n` sequences reading
        `context_tokens` keys in all (with attention data parallelism, the busiest rank's)."""
        keys_full = float(context_tokens)
        keys_window = min(keys_full, float(n * self.window)) if self.window else 0.0
        dp = self.attention_dp_size
        if dp > 1:  # the busiest rank's share, as `batch_shape.busiest_rank` gives it
            rank = -(-n // dp)
            keys_full, keys_window, n = keys_full * rank / n, keys_window * rank / n, rank
        keys = self.full_layers * keys_full + self.window_layers * keys_window
        compute_s = keys * self.flops_per_pair / self.flops_per_s
        memory_s = (
            keys * self.kv_bytes_per_token_per_layer
            + n * self.act_bytes_per_token
            + n * self.state_bytes_per_seq
        ) / self.bytes_per_s
        return compute_s, memory_s

    def times_s(self, n: int, context_tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`time_s` for each of several context sizes (int64): the same operations in the
        same order, elementwise, so each pair is `time_s`'s to the bit (tested)."""
        keys_full = context_tokens.astype(np.float64)
        keys_window = np.minimum(keys_full, float(n * self.window)) if self.window else 0.0
        dp = self.attention_dp_size
        if dp > 1:
            rank = -(-n // dp)
            keys_full, keys_window, n = keys_full * rank / n, keys_window * rank / n, rank
        keys = self.full_layers * keys_full + self.window_layers * keys_window
        compute_s = keys * self.flops_per_pair / self.flops_per_s
        memory_s = (
            keys * self.kv_bytes_per_token_per_layer
            + n * self.act_bytes_per_token
            + n * self.state_bytes_per_seq
        ) / self.bytes_per_s
        return compute_s, memory_s


def decode_run(
    d: DecodeStep,
    attention: DecodeAttention,
    n: int,
    context_tokens: np.ndarray,
    rates: tuple[float, float],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(seconds, FLOPs, HBM bytes) of decode-only steps of `n` sequences reading each of
    `context_tokens` keys: `StepModel.measure_decode`'s sums, elementwise, in its order.
    `rates`: decode attention's (FLOPs, bytes) per second of roofline time."""
    dec_c, dec_m = attention.times_s(n, context_tokens)
    layer_work = d.layers_before_s + np.maximum(dec_c, dec_m) + d.elementwise_s
    time_s = layer_work + d.lm_head_s + d.communication_s + d.overhead_s
    flops_rate, bytes_rate = rates
    memory = (d.bytes_before + dec_m * bytes_rate) + d.elementwise_bytes
    return time_s, d.flops_before + dec_c * flops_rate, memory
