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
"""

from __future__ import annotations

from dataclasses import dataclass

from llmsizer.specs.dtypes import Precision

_INDEX_BITS_PER_VALUE = 2  # position of each kept value inside its group of four


@dataclass(frozen=True, slots=True)
class StructuredSparsity:
    """2:4 sparse linear layers. `math_speedup`: achieved sparse over dense GEMM rate, in
    [1, 2] (2 is the datasheet ratio of sparse to dense tensor-core peak)."""

    math_speedup: float = 1.5

    def __post_init__(self) -> None:
        if not 1.0 <= self.math_speedup <= 2.0:
            raise ValueError(f"math_speedup must be in [1, 2], got {self.math_speedup}")

    @staticmethod
    def bytes_ratio(precision: Precision) -> float:
        """Compressed over dense bytes for weights in `precision`: 1/2 + 1/value_bits."""
        kept_fraction = 0.5
        index_bits_per_weight = kept_fraction * _INDEX_BITS_PER_VALUE
        return kept_fraction + index_bits_per_weight / precision.value_bits
