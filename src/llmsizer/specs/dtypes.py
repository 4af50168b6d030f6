"""Number formats for weights and the KV cache: bytes per element and the math they use.

Storage sizes include the block scales where a format has them, because those bytes are read
from memory like the values (bits per element):

- bf16, fp16: 16.
- fp8: 8; per-tensor or per-channel scales add < 0.1 % (NVIDIA Transformer Engine, E4M3).
- fp8_block: 8 + 32/(128 x 128) = 8.002; E4M3 values with one FP32 scale per 128 x 128
  weight block (DeepSeek-V3 report, arXiv:2412.19437, sec. 3.3.2; `weight_block_size:
  [128, 128]` in the checkpoints' config.json; DeepSeek's inference `Linear` keeps a float32
  scale per block). Activations are scaled per 1 x 128 tile at run time, not stored.
- int8: 8; W8A8 with per-channel scales (Xiao et al. 2023, SmoothQuant).
- int4: 4 + 16/128 + 4/128 = 4.156; W4A16 with group size 128, one FP16 scale and one
  4-bit zero point per group (Lin et al. 2024, AWQ).
- int4_g32: 4 + 16/32 = 4.5; W4A16, symmetric (no zero point), one BF16 scale per 32 values:
  Kimi K2 / K2.5's native routed experts (config.json `quantization_config`:
  compressed-tensors, `num_bits: 4`, `group_size: 32`, `symmetric: true`).
- fp4 (NVFP4): 4 + 8/16 = 4.5; E2M1 values, one FP8 E4M3 scale per 16 values plus one FP32
  per tensor (NVIDIA blog "Introducing NVFP4 for Efficient and Accurate Low-Precision
  Inference", 2025).
- mxfp4: 4 + 8/32 = 4.25; E2M1 values, one E8M0 scale per 32 (OCP Microscaling Formats
  (MX) v1.0 specification).

`tensor_core_precision` is the math a GPU uses when it supports the format natively: int4 and
int4_g32 are weight-only (W4A16), dequantised to bf16 before the matrix multiply; fp8_block
runs on FP8 tensor cores; mxfp4 runs on FP4 tensor cores. Whether a GPU has that math is a
property of the GPU (`GpuSpec.supports`); what happens when it does not is the performance
model's business.

`quant_mode_precision` reads the exact quantization-mode strings of NVIDIA AIConfigurator
(`gemm_quant_mode`, `moe_quant_mode` in its silicon measurements).
"""

from __future__ import annotations

from enum import StrEnum
from types import MappingProxyType

from llmsizer.specs.names import normalize_name


class Precision(StrEnum):
    """A weight or KV-cache number format. Parse user text with `Precision.parse`."""

    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    FP8_BLOCK = "fp8_block"
    INT8 = "int8"
    INT4 = "int4"
    INT4_G32 = "int4_g32"
    FP4 = "fp4"
    MXFP4 = "mxfp4"

    @classmethod
    def parse(cls, text: str | Precision) -> Precision:
        """Lenient: `FP8`, `fp8_e4m3`, `bfloat16`, `nvfp4`, `W4A16`, `awq` ... Unknown -> error."""
        if isinstance(text, Precision):
            return text
        found = _ALIASES.get(normalize_name(text))
        if found is None:
            allowed = ", ".join(p.value for p in cls)
            raise ValueError(f"unknown precision {text!r}; allowed: {allowed} (and aliases)")
        return found

    @property
    def bits_per_element(self) -> float:
        """Stored bits per value, block scales included (table in the module docstring)."""
        return _BITS[self]

    @property
    def bytes_per_element(self) -> float:
        return _BITS[self] / 8

    @property
    def value_bits(self) -> int:
        """Bits of one value without scales: what 2:4 sparsity metadata is compared to."""
        return _VALUE_BITS[self]

    @property
    def tensor_core_precision(self) -> Precision:
        """The precision the matrix multiply runs in when the GPU supports it natively."""
        return _TENSOR_CORE[self]

    @property
    def is_weight_only(self) -> bool:
        """True when activations stay 16-bit and weights are dequantised (W4A16)."""
        return self in (Precision.INT4, Precision.INT4_G32)


_BITS = MappingProxyType(
    {
        Precision.BF16: 16.0,
        Precision.FP16: 16.0,
        Precision.FP8: 8.0,
        Precision.FP8_BLOCK: 8.0 + 32 / (128 * 128),
        Precision.INT8: 8.0,
        Precision.INT4: 4.0 + 16 / 128 + 4 / 128,
        Precision.INT4_G32: 4.0 + 16 / 32,
        Precision.FP4: 4.0 + 8 / 16,
        Precision.MXFP4: 4.0 + 8 / 32,
    }
)

_VALUE_BITS = MappingProxyType(
    {
        Precision.BF16: 16,
        Precision.FP16: 16,
        Precision.FP8: 8,
        Precision.FP8_BLOCK: 8,
        Precision.INT8: 8,
        Precision.INT4: 4,
        Precision.INT4_G32: 4,
        Precision.FP4: 4,
        Precision.MXFP4: 4,
    }
)

_TENSOR_CORE = MappingProxyType(
    {
        Precision.BF16: Precision.BF16,
        Precision.FP16: Precision.FP16,
        Precision.FP8: Precision.FP8,
        Precision.FP8_BLOCK: Precision.FP8,
        Precision.INT8: Precision.INT8,
        Precision.INT4: Precision.BF16,
        Precision.INT4_G32: Precision.BF16,
        Precision.FP4: Precision.FP4,
        Precision.MXFP4: Precision.FP4,
    }
)

_ALIASES = MappingProxyType(
    {
        normalize_name(alias): precision
        for precision, aliases in {
            Precision.BF16: ("bf16", "bfloat16", "brain float 16"),
            Precision.FP16: ("fp16", "float16", "half", "f16"),
            Precision.FP8: ("fp8", "float8", "fp8_e4m3", "e4m3", "fp8_e5m2", "e5m2", "w8a8_fp8"),
            Precision.FP8_BLOCK: ("fp8_block", "fp8-block", "fp8_blockwise", "fp8 128x128"),
            Precision.INT8: ("int8", "w8a8", "int8_sq", "smoothquant", "int8-sq"),
            Precision.INT4: ("int4", "w4a16", "awq", "gptq", "int4_awq", "int4-awq", "int4_wo"),
            Precision.INT4_G32: ("int4_g32", "w4a16_g32", "int4 group 32"),
            Precision.FP4: ("fp4", "nvfp4", "nv_fp4"),
            Precision.MXFP4: ("mxfp4", "mx_fp4"),
        }.items()
        for alias in aliases
    }
)


# AIConfigurator's `GEMMQuantMode` / `MoEQuantMode` names (ai-dynamo/aiconfigurator,
# sdk/common.py) that have a format here. Its `int4_wo` is W4A16 with group scales, the
# AWQ-style `int4`; a checkpoint with another group size (Kimi K2.5's native experts are
# `int4_g32`) names that precision itself.
_QUANT_MODES = MappingProxyType(
    {
        "bfloat16": Precision.BF16,
        "fp8": Precision.FP8,
        "fp8_static": Precision.FP8,
        "fp8_block": Precision.FP8_BLOCK,
        "sq": Precision.INT8,
        "int4_wo": Precision.INT4,
        "nvfp4": Precision.FP4,
    }
)


def quant_mode_precision(mode: str) -> Precision | None:
    """The format of an AIConfigurator quantization-mode string (`fp8_block`, `nvfp4` ...).

    Exact names only, any case. The empty string means the row records no quantization, so
    the checkpoint's own dtype applies: `None`. A name without a format here is an error.
    """
    text = mode.strip().lower()
    if not text:
        return None
    found = _QUANT_MODES.get(text)
    if found is None:
        allowed = ", ".join(sorted(_QUANT_MODES))
        raise ValueError(f"unknown quantization mode {mode!r}; allowed: {allowed} (or empty)")
    return found
