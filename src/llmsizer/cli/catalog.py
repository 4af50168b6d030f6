"""`llmsizer models`, `gpus`, `systems`: the catalogs, with their sources."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from llmsizer.cli.common import out
from llmsizer.perf.calibrated import (
    CalibrationFile,
    carried_calibration,
    packaged_architectures,
    packaged_calibration,
    read_calibration,
)
from llmsizer.perf.efficiency import SPLIT_FROM, EfficiencyFactors, EnginePreset
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


def gpus(
    sources: Verbose = False,
    factors: Annotated[
        bool,
        typer.Option(
            "--factors",
            help="Show the efficiency factors instead, and where each came from: the shipped "
            "fit per engine (with its measurement counts), a prior, or --calibration's file.",
        ),
    ] = False,
    calibration: Annotated[
        Path | None,
        typer.Option(help="With --factors: a calibration file (e.g. from llmsizer collect)."),
    ] = None,
) -> None:
    """The GPU catalog: memory, bandwidth, dense tensor peaks, interconnect."""
    if factors or calibration is not None:
        _factors(calibration)
        return
    t = Table(title="GPUs (dense tensor-core peaks; interconnect per direction)")
    cols = ("name", "mem GiB", "HBM TB/s", "BF16 TFLOPS", "FP8 TFLOPS", "FP4 TFLOPS", "link GB/s")
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
            f"{g.memory_bytes / 2**30:.1f}",  # as the device reports it: an "80GB" H100 is 79.6
            f"{g.hbm_bytes_per_s / 1e12:.2f}",
            tf(g.bf16_flops_per_s),
            tf(g.fp8_flops_per_s),
            tf(g.fp4_flops_per_s),
            f"{link / 1e9:.0f}",
        ]
        src = "; ".join(f"{what}: {where}" for what, where in g.sources)
        t.add_row(*row, *([src] if sources else []))
    out.print(t)


def factor_source(cal: CalibrationFile, name: str) -> str:
    """Where a factor of `cal` came from: collected on a device, fitted (with the
    measurements of the fit), carried over from another file, or the engine's prior."""
    info = cal.fitted_on
    if name not in cal.factors:  # a split factor left unset takes its parent's value
        return f"as {SPLIT_FROM[name]}" if name in SPLIT_FROM else f"{cal.engine.value} prior"
    if info.get("produced_by") == "llmsizer collect":
        return f"collected on {info.get('device')} ({info.get('num_timings')} timings)"
    if name in info.get("carried_factors", ()):
        return "carried over (see the note)"
    rows = sum(r.num_rows for r in cal.residuals.values())
    return (
        f"fit ({rows} measurements)"
        if name in info.get("fitted_factors", ())
        else "in the file, not fitted"
    )


def _factors(calibration: Path | None) -> None:
    """The shipped fit per engine, and a calibration file beside it, factor by factor."""
    general = {e: carried_calibration(packaged_calibration(e)) for e in EnginePreset}
    files = {f"shipped {e.value}": cal for e, cal in general.items()}  # as other GPUs get it
    for e in EnginePreset:
        for arch in packaged_architectures(e):
            files[f"shipped {e.value} {arch}"] = packaged_calibration(e, arch)
    if calibration is not None:
        files[str(calibration)] = read_calibration(calibration)
    t = Table(title="Efficiency factors and where each came from")
    t.add_column("factor")
    for label in files:
        t.add_column(label, justify="right")
    for name in EfficiencyFactors.bounds():
        cells = [
            f"{cal.efficiency().value(name):.4g}\n{factor_source(cal, name)}"
            for cal in files.values()
        ]
        t.add_row(name, *cells)
    out.print(t)
    for label, cal in files.items():
        carried, prior = cal.fitted_on.get("carried_over"), cal.fitted_on.get("prior")
        for note in filter(None, (carried, prior and f"fitted under a {prior}")):  # aic_prior
            out.print(f"{label}: {note}", highlight=False)


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
