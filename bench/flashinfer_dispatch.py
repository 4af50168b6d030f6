"""The host time of FlashInfer's Python dispatch per eager call, on a CPU, without a GPU.

    .venv/bin/python bench/flashinfer_dispatch.py FLASHINFER_DIR [--tokens 1024] [--calls 2000]

FLASHINFER_DIR holds an unpacked `flashinfer-python` wheel (`pip download --no-deps
flashinfer-python==0.6.3`, then unzip: the directory that contains `flashinfer/`). Timed: the
two FlashInfer entry points SGLang 0.5.9 / 0.5.10 call in every eager prompt step of the AIC
Blackwell rows, from the caller to the compiled op: `gemm_fp8_nt_groupwise(...,
backend="trtllm")` (a block-FP8 dense linear, `flashinfer_gemm_w8a8_block_fp8_linear_with_
fallback`) and `fused_moe.trtllm_fp8_block_scale_moe` (the `flashinfer_trtllm` MoE runner), and
`mm_fp4(..., backend="cutlass")` (an NVFP4 dense linear under SGLang's default
`--fp4-gemm-backend flashinfer_cutlass`, `ModelOptFp4LinearMethod`).
The compiled modules (`tvm_ffi`, the cubins) are replaced by one `unittest.mock.Mock`,
whose call is timed alone and printed so that it can be taken off; tensors are on the CPU,
so allocations cost what a host allocation does, not the CUDA caching allocator's. What
remains is FlashInfer's Python: `backend_requirement`'s `sig.bind` and checks, the
autotuner's per-call runner and cache-key lookup (`AutoTuner.choose_one`, not tuning), and
the wrappers. docs/aic_measurement.md section 65 quotes it.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import sys
import time
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from unittest import mock

# imported by FlashInfer at import time but not needed by the Python paths timed here
STUBBED = frozenset(
    {"tvm_ffi", "nvidia", "cuda", "cuda_bindings", "pynvml", "einops", "ninja", "nvtx"}
    | {"click", "tabulate", "cuda_python", "requests", "filelock", "apache_tvm_ffi"}
)


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves the `STUBBED` packages to `MagicMock` modules."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.split(".")[0] not in STUBBED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = mock.MagicMock()
        module.__path__, module.__spec__, module.__name__ = [], spec, spec.name
        return module  # type: ignore[no-any-return]

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: the mock is the module."""


def per_call_us(call: Callable[[], object], calls: int) -> float:
    """Mean host time of `call` in microseconds over `calls` calls, after 50 warm-up calls."""
    for _ in range(50):
        call()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("flashinfer_dir", type=Path, help="directory holding flashinfer/")
    parser.add_argument("--tokens", type=int, default=1024, help="rows of the step's input")
    parser.add_argument("--calls", type=int, default=2000, help="calls timed per entry point")
    args = parser.parse_args()
    sys.meta_path.insert(0, _StubFinder())
    sys.path.insert(0, str(args.flashinfer_dir))
    import torch
    from flashinfer import utils
    from flashinfer.fused_moe import core
    from flashinfer.gemm import gemm_base

    op = mock.Mock()  # every compiled op: one object, so that its call costs the same each time
    sm100 = lambda device: (10, 0)  # noqa: E731 (a B200)
    utils.get_compute_capability = gemm_base.get_compute_capability = sm100
    core.device_support_pdl = lambda device: True
    core.gen_trtllm_gen_fused_moe_sm100_module = lambda: op
    core.setup_cubin_loader = lambda *paths: None
    gemm_base.get_trtllm_gemm_module = lambda: op
    fp4_module = gemm_base._create_cutlass_fp4_gemm_module(
        op, "flashinfer::cutlass_fp4_gemm", "cutlass_fp4_gemm"
    )
    gemm_base.get_cutlass_fp4_gemm_module = lambda major, minor: fp4_module
    workspace = torch.empty(1, dtype=torch.uint8)
    gemm_base._get_cache_buf = lambda *a, **k: workspace  # its workspace cache

    m, hidden, n, experts, top_k, inter = args.tokens, 4096, 8192, 512, 10, 1024  # Qwen3.5 TP8
    fp8 = torch.float8_e4m3fn
    a, b = torch.empty(m, hidden, dtype=fp8), torch.empty(n, hidden, dtype=fp8)
    a_scale, b_scale = torch.empty(hidden // 128, m), torch.empty(n // 128, hidden // 128)
    logits, w = torch.empty(m, experts), torch.empty(1)
    u8 = torch.uint8  # two FP4 values a byte, a scale per 16
    a4, b4 = torch.empty(m, hidden // 2, dtype=u8), torch.empty(hidden // 2, n, dtype=u8)
    a4_scale = torch.empty(m, hidden // 16, dtype=fp8)
    b4_scale = torch.empty(hidden // 16, n, dtype=fp8)
    alpha = torch.ones(1)

    def gemm() -> object:
        return gemm_base.gemm_fp8_nt_groupwise(
            a, b, a_scale, b_scale, out_dtype=torch.bfloat16, backend="trtllm"
        )

    def moe() -> object:
        return core.trtllm_fp8_block_scale_moe(
            logits, None, a, a_scale, w, w, w, w, experts, top_k, None, None, inter, 0,
            experts // 8, 1.0, routing_method_type=1, use_shuffled_weight=True,
        )  # fmt: skip

    def fp4() -> object:
        return gemm_base.mm_fp4(
            a4, b4, a4_scale, b4_scale, alpha, torch.bfloat16, backend="cutlass"
        )

    print(f"FlashInfer {getattr(sys.modules['flashinfer'], '__version__', '?')}, M = {m}")
    stub_us = per_call_us(lambda: op(1, 2), args.calls)
    print(f"  the stub's call (take it off each line): {stub_us:.1f} us")
    print(f"  gemm_fp8_nt_groupwise(backend='trtllm'): {per_call_us(gemm, args.calls):.1f} us")
    print(f"  trtllm_fp8_block_scale_moe:              {per_call_us(moe, args.calls):.1f} us")
    print(f"  mm_fp4(backend='cutlass'):               {per_call_us(fp4, args.calls):.1f} us")


if __name__ == "__main__":
    main()
