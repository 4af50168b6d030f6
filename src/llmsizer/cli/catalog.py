"""`llmsizer models`, `gpus`, `systems`: the catalogs, with their sources."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from llmsizer.cli.common import out
from llmsizer.specs import Precision, gpu_catalog, model_catalog, system_catalog

Verbose = Annotated[
    bool, typer.Option("--sources", "-s", help="Show where each figure comes from.")
]


def models(sources: Verbose = False) -> None:
    """The model catalog: parameters, KV bytes per token, context window (from config.json)."""
    t = Table(title="Models (architecture from each model's Hugging Face config.json)")
    for col in ("name", "params (B)", "active (B)", "layers", "KV KiB/token bf16", "context"):
        t.add_column(col, justify="left" if col == "name" else "right")
    if sources:
        t.add_column("source")
    for key, entry in sorted(model_catalog().items()):
        m = entry.model
        row = [
            key,
            f"{m.total_params / 1e9:.1f}",
            f"{m.active_params / 1e9:.1f}",
            str(m.num_layers),
            f"{m.kv_bytes_per_token(Precision.BF16) / 1024:.0f}",
            str(m.max_position_embeddings or "-"),
        ]
        src = f"{m.source}; counts: {entry.published_source}"
        t.add_row(*row, *([src] if sources else []))
    out.print(t)


def gpus(sources: Verbose = False) -> None:
    """The GPU catalog: memory, bandwidth, dense tensor peaks, interconnect."""
    t = Table(title="GPUs (dense tensor-core peaks; interconnect per direction)")
    cols = ("name", "memory GB", "HBM TB/s", "BF16 TFLOPS", "FP8 TFLOPS", "FP4 TFLOPS", "link GB/s")
    for col in cols:
        t.add_column(col, justify="left" if col == "name" else "right")
    if sources:
        t.add_column("sources")

    def tf(v: float | None) -> str:
        return "-" if v is None else f"{v / 1e12:.0f}"

    for key, g in sorted(gpu_catalog().items()):
        link = g.scale_up_bytes_per_s or g.pcie_bytes_per_s
        row = [
            key,
            f"{g.memory_bytes / 1e9:.0f}",
            f"{g.hbm_bytes_per_s / 1e12:.2f}",
            tf(g.bf16_flops_per_s),
            tf(g.fp8_flops_per_s),
            tf(g.fp4_flops_per_s),
            f"{link / 1e9:.0f}",
        ]
        src = "; ".join(f"{what}: {where}" for what, where in g.sources)
        t.add_row(*row, *([src] if sources else []))
    out.print(t)


def systems(sources: Verbose = False) -> None:
    """Servers: GPUs per server and their NVLink domain."""
    t = Table(title="Systems")
    for col in ("name", "GPU", "GPUs", "NVLink domain"):
        t.add_column(col)
    if sources:
        t.add_column("source")
    for key, s in sorted(system_catalog().items()):
        row = [key, s.gpu_key, str(s.num_gpus), str(s.nvlink_domain_size)]
        t.add_row(*row, *([s.source] if sources else []))
    out.print(t)
