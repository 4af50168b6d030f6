"""How long a new instance takes to serve: its weights read from storage.

`load_time_s` = the bytes of weights all its GPUs hold / the storage bandwidth the caller
states (no catalog figure: it depends on where the weights live, a local NVMe cache, a
network file system, an object store). Engine start-up beyond the read (CUDA graphs,
compilation) is left out, so this is a lower bound.
"""

from __future__ import annotations

from llmsizer.instance.instance import Instance


def load_time_s(instance: Instance, storage_bytes_per_s: float) -> float:
    """Seconds to read `instance`'s weights at `storage_bytes_per_s` (bytes/s, > 0)."""
    if not storage_bytes_per_s > 0:
        raise ValueError(f"storage bandwidth must be > 0 bytes/s, got {storage_bytes_per_s}")
    return instance.memory.weight_bytes * instance.num_gpus / storage_bytes_per_s
