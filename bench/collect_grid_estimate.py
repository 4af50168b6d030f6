"""How long `collect`'s default grid keeps a GPU busy, from its op counts (no GPU needed).

    .venv/bin/python bench/collect_grid_estimate.py [--gpu h100-sxm] [MODEL ...]

Each kernel of the default grid (`collect.shapes.FULL`) runs warm-up + repeats times, each
call after a cache flush (a 256 MiB write); a call takes its roofline time at 70 % of the
GPU's dense BF16 peak and 80 % of its memory bandwidth (FP8 GEMMs at 60 % of the BF16 time)
plus 8 us of launch. The sum is the kernel time only: the rest of a run is host work
(allocating random inputs, Python), the decode check and, with several GPUs, NCCL's start.
`collect --budget-s` bounds the whole run whatever this says; this is what the budget has
to cover.
"""

from __future__ import annotations

import argparse
from itertools import product

from llmsizer.collect.shapes import (
    FULL,
    Gemm,
    decode_work,
    elementwise_bytes,
    expert_gemms,
    layer_gemms,
    prefill_work,
)
from llmsizer.specs import get_gpu, get_model

COMPUTE_EFFICIENCY = 0.7
BANDWIDTH_EFFICIENCY = 0.8
LAUNCH_S = 8e-6
FLUSH_BYTES = 256 << 20


def kernel_seconds(model_name: str, gpu_name: str) -> dict[str, tuple[int, float]]:
    """Stage -> (kernels, seconds of the grid's calls) for `model_name` on `gpu_name`."""
    gpu, m = get_gpu(gpu_name), get_model(model_name)
    flops_per_s = gpu.bf16_flops_per_s * COMPUTE_EFFICIENCY
    bytes_per_s = gpu.hbm_bytes_per_s * BANDWIDTH_EFFICIENCY

    def call(flops: float, bytes_: float) -> float:
        return max(flops / flops_per_s, bytes_ / bytes_per_s) + LAUNCH_S

    square = [call(Gemm("square", n, n, 1).flops(n), 0.0) for n in FULL.square_sizes]
    gemms = [call(g.flops(n), g.bytes(n, 2.0)) for n in FULL.gemm_tokens for g in layer_gemms(m)]
    decode = product(FULL.decode_batches, FULL.decode_lengths)
    stages = {
        "copy": [call(0.0, 2.0 * FULL.copy_bytes)],
        "square GEMMs (bf16, fp16, fp8)": square * 2 + [s * 0.6 for s in square],
        "model GEMMs (bf16, fp8)": gemms + [s * 0.6 for s in gemms],
        "expert GEMMs": [
            call(e.flops(n), e.bytes(n, 2.0)) for n in FULL.gemm_tokens for e in expert_gemms(m)
        ],
        "prefill attention": [call(*prefill_work(m, n)) for n in FULL.prefill_lengths],
        "decode attention": [call(*decode_work(m, b, n)) for b, n in decode],
        "elementwise": [
            10 * LAUNCH_S + elementwise_bytes(m, n) / bytes_per_s for n in FULL.gemm_tokens
        ],
    }
    per_call_flush = FLUSH_BYTES / bytes_per_s + LAUNCH_S
    calls = FULL.warmup + FULL.repeats
    return {
        name: (len(times), sum(calls * (t + per_call_flush) for t in times))
        for name, times in stages.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=["llama-3.1-8b", "llama-3.1-70b"])
    parser.add_argument("--gpu", default="h100-sxm")
    args = parser.parse_args()
    for name in args.models:
        stages = kernel_seconds(name, args.gpu)
        total = sum(s for _, s in stages.values())
        kernels = sum(n for n, _ in stages.values())
        print(f"{name} on {args.gpu}: {kernels} kernels, {total:.1f} s of kernel time")
        for stage, (n, seconds) in stages.items():
            print(f"  {stage:32} {n:4} kernels {seconds:7.2f} s")


if __name__ == "__main__":
    main()
