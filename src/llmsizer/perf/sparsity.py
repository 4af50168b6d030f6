"""2:4 structured sparsity: half the weights, index metadata, and faster sparse tensor cores.

In every group of four weights two are zero. The compressed matrix keeps the two non-zero
values and a 2-bit index for each (NVIDIA Ampere architecture whitepaper, "Fine-grained
structured sparsity"; cuSPARSELt docs), so per four weights of `b` bits:

    stored bits = 2 * b (values) + 2 * 2 (indices)  ->  bytes ratio = 1/2 + 1/b

FP8 (b = 8): 0.625, i.e. -37.5 % for the linear layers: the course's "model size -37 %" for
Llama 2 70B (MLPerf v4.0, FP8), where embeddings stay dense. Sparse tensor cores have twice the
dense peak; achieved speedups on real GEMMs are lower, so `math_speedup` is a parameter
(default 1.5: cuSPARSELt reports 1.3-1.8x on large FP16/FP8 GEMMs). Only weight matrices are
sparse: attention over the KV cache, embeddings and the output projection are not.

Sparse tensor cores exist from NVIDIA Ampere on (Ampere whitepaper, "Fine-grained structured
sparsity"; the Ada, Hopper and Blackwell datasheets list their peaks "with sparsity") and on
AMD CDNA 3 (MI300X data sheet: FP8/FP16 peaks "with sparsity"). Anything else, such as a CPU
or an older GPU measured by `llmsizer collect`, has none: 2:4 weights would run as dense
math there, so sparsity on such a device is refused rather than priced as a speed-up.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmsizer.specs.dtypes import Precision
from llmsizer.specs.gpus import GpuSpec

_INDEX_BITS_PER_VALUE = 2  # position of each kept value inside its group of four
SPARSE_ARCHITECTURES = frozenset({"ampere", "ada", "hopper", "blackwell", "cdna3"})


def has_sparse_tensor_cores(gpu: GpuSpec) -> bool:
    """True when `gpu`'s architecture has 2:4 sparse tensor cores (module docstring)."""
    return gpu.architecture.lower() in SPARSE_ARCHITECTURES


@dataclass(frozen=True, slots=True)
class StructuredSparsity:
    """2:4 sparse linear layers. `math_speedup`: achieved sparse over dense GEMM rate, in
    [1, 2] (2 is the datasheet ratio of sparse to dense tensor-core peak)."""

    math_speedup: float = 1.5

    def __post_init__(self) -> None:
        if not 1.0 <= self.math_speedup <= 2.0:
            raise ValueError(f"math_speedup must be in [1, 2], got {self.math_speedup}")

    @staticmethod
    def check_gpu(gpu: GpuSpec) -> None:
        """A ValueError naming `gpu` when it has no sparse tensor cores to run 2:4 weights."""
        if not has_sparse_tensor_cores(gpu):
            raise ValueError(
                f"2:4 sparsity needs sparse tensor cores (NVIDIA Ampere or later, AMD CDNA 3); "
                f"{gpu.display_name} (architecture {gpu.architecture}) has none, so sparse "
                "weights would run as dense math: turn sparsity off for this device"
            )

    @staticmethod
    def bytes_ratio(precision: Precision) -> float:
        """Compressed over dense bytes for weights in `precision`: 1/2 + 1/value_bits."""
        kept_fraction = 0.5
        index_bits_per_weight = kept_fraction * _INDEX_BITS_PER_VALUE
        return kept_fraction + index_bits_per_weight / precision.value_bits
