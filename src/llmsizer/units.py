"""Units: SI inside the library, conversions only at the edges (parsing and rendering).

Everything inside llmsizer is seconds, bytes, FLOP and FLOP/s, bytes/s. The aliases below
document intent in signatures; the constants convert at the boundary.
"""

from typing import TypeAlias

Seconds: TypeAlias = float
Bytes: TypeAlias = float
FLOPs: TypeAlias = float
FLOPsPerSecond: TypeAlias = float
BytesPerSecond: TypeAlias = float

MS = 1e-3  # seconds per millisecond
US = 1e-6  # seconds per microsecond
KB = 1e3
MB = 1e6
GB = 1e9  # decimal gigabyte, as GPU datasheets use for HBM capacity and bandwidth
MiB = 2**20  # binary mebibyte, as nvidia-smi reports device memory
GiB = 2**30  # binary gibibyte, as vLLM reports KV-cache memory
TB = 1e12
TFLOPS = 1e12  # FLOP/s per teraFLOP/s
PFLOPS = 1e15
GB_S = 1e9  # bytes/s per GB/s
TB_S = 1e12  # bytes/s per TB/s
HOUR = 3600.0
DAY = 86400.0


def to_ms(seconds: Seconds) -> float:
    """Seconds to milliseconds, for rendering."""
    return seconds / MS


def from_ms(milliseconds: float) -> Seconds:
    """Milliseconds to seconds, for parsing."""
    return milliseconds * MS
