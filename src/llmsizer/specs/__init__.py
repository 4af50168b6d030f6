"""Plain data: GPUs, systems, models and number formats, each figure with its source.

Look-ups are lenient about case and separators and raise `UnknownNameError` with close
matches: `get_gpu("H100 SXM")`, `get_system("DGX H100")`, `get_model("llama-3.1-70b")` (or a
Hugging Face id, or a path to any `config.json`), `Precision.parse("FP8")`.
"""

from llmsizer.specs.dtypes import Precision
from llmsizer.specs.gpus import GpuSpec, get_gpu, gpu_catalog
from llmsizer.specs.model_catalog import CatalogEntry, get_model, model_catalog
from llmsizer.specs.models import (
    LinearAttentionSpec,
    MlaSpec,
    ModelSpec,
    MoeSpec,
    SparseAttentionSpec,
)
from llmsizer.specs.names import UnknownNameError
from llmsizer.specs.systems import SystemSpec, get_system, system_catalog

__all__ = [
    "CatalogEntry",
    "GpuSpec",
    "LinearAttentionSpec",
    "MlaSpec",
    "ModelSpec",
    "MoeSpec",
    "Precision",
    "SparseAttentionSpec",
    "SystemSpec",
    "UnknownNameError",
    "get_gpu",
    "get_model",
    "get_system",
    "gpu_catalog",
    "model_catalog",
    "system_catalog",
]
