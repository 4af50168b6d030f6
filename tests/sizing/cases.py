"""Use cases shared by the sizing tests."""

from __future__ import annotations

from typing import Any

# The course's Llama 3 8B on H100 at TP 1-2, small enough to plan in a test: 400 requests a
# probe, no curves, no uncertainty band.
SMALL_LLAMA_8B: dict[str, Any] = {
    "model": "llama-3-8b",
    "input": {"user": 2000},
    "output": 200,
    "load": {"peak_rps": 40},
    "limits": {"ttft_ms": 400},
    "candidates": {"gpus": ["h100-sxm"], "tensor_parallel_sizes": [1, 2]},
    "search": {"num_requests": 400, "curves": False, "uncertainty": 0.0},
}

# The same case over two GPUs at 50 req/s and TTFT 300 ms, 300 requests a probe: the plans
# and searches compared across workers, pools and Ray. Each test sets the rest of `search`.
TWO_GPUS_LLAMA_8B: dict[str, Any] = {
    "model": "llama-3-8b",
    "input": {"user": 2000},
    "output": 200,
    "load": {"peak_rps": 50},
    "limits": {"ttft_ms": 300},
    "candidates": {"gpus": ["h100-sxm", "l40s"], "tensor_parallel_sizes": [1, 2]},
}


def two_gpus(**search: Any) -> dict[str, Any]:
    """`TWO_GPUS_LLAMA_8B` at 300 requests a probe, with `search`'s other settings."""
    return {**TWO_GPUS_LLAMA_8B, "search": {"num_requests": 300, **search}}
