"""`llmsizer collect`: calibrate the performance model on this machine's GPU (or CPU)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
import yaml
from rich.table import Table

from llmsizer.cli.common import OVERWRITE_HELP, err, out
from llmsizer.output import refuse_existing, write_atomic
from llmsizer.perf.efficiency import EnginePreset
from llmsizer.specs import get_model


def timings_path(out_path: Path) -> Path:
    """The raw timings' CSV beside the calibration file: `my-gpu.yaml` -> `my-gpu.timings.csv`."""
    return out_path.with_name(out_path.stem + ".timings.csv")


def collect(
    model: Annotated[
        str, typer.Option(help="Catalog model or a path to a config.json (never downloaded).")
    ],
    out_path: Annotated[
        Path,
        typer.Option(
            "--out",
            help="Calibration file to write (YAML); the raw timings "
            "go beside it as NAME.timings.csv.",
        ),
    ] = Path("collected.yaml"),
    quick: Annotated[
        bool, typer.Option(help="A small grid (seconds on a CPU): for tests and a first look.")
    ] = False,
    device: Annotated[
        str, typer.Option(help="auto (a CUDA GPU when present), cuda or cpu.")
    ] = "auto",
    gpu: Annotated[
        str | None,
        typer.Option(
            help="Catalog GPU whose datasheet peaks the factors are fractions of "
            "(default: the catalog entry matching the GPU's name; an unknown GPU "
            "or a CPU is priced at its measured peaks)."
        ),
    ] = None,
    precision: Annotated[
        str, typer.Option(help="GEMM precision the factors describe: bf16, fp16 or fp8.")
    ] = "bf16",
    engine: Annotated[
        str, typer.Option(help="Engine whose priors fill the factors a kernel cannot show.")
    ] = "vllm",
    check: Annotated[
        bool, typer.Option(help="Run the end-to-end decode loop against the prediction.")
    ] = True,
    threads: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="CPU threads PyTorch uses (default: its own choice). On a busy machine 1 "
            "gives steadier timings.",
        ),
    ] = None,
    devices: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Devices the all-reduce runs over, one process each (NCCL on GPUs, gloo "
            "on the CPU); default: every GPU present (one CPU). One device: skipped.",
        ),
    ] = None,
    budget_s: Annotated[
        float,
        typer.Option(
            min=1.0,
            help="Seconds the timings may take: each kind of kernel is sampled coarse to "
            "fine until its share is spent (plus one size of each, at least).",
        ),
    ] = 300.0,
    overwrite: Annotated[bool, typer.Option(help=OVERWRITE_HELP)] = False,
) -> None:
    """Time this device's kernels at a model's shapes (PyTorch, random weights) and write a
    calibration file that predict, plan and simulate accept as --calibration.

    Needs PyTorch: pip install 'llmsizer[collect]'. The run keeps to --budget-s (5 minutes
    by default) plus one size of each kernel; --quick runs in seconds on a CPU.
    """
    refuse_existing((out_path, timings_path(out_path)), overwrite=overwrite)
    spec = get_model(model)
    preset = EnginePreset.parse(engine)
    try:
        import torch  # the collect extra
    except ImportError:
        raise ValueError("collect needs PyTorch: pip install 'llmsizer[collect]'") from None
    if threads is not None:
        torch.set_num_threads(threads)
    from llmsizer.collect import FULL, QUICK, find_device, timings_csv
    from llmsizer.collect import collect as run_collect

    found = find_device(device, gpu)
    err.print(f"collecting on {found.name} for {spec.name}", highlight=False)
    if found.is_cpu and not quick:
        err.print(
            f"the full grid (up to 16k tokens) is sampled within {budget_s:.0f} s: on a CPU "
            "few of its sizes fit; --quick covers a small grid in seconds"
        )
    result = run_collect(
        spec,
        found,
        QUICK if quick else FULL,
        precision=precision,
        engine=preset,
        check=check,
        num_devices=devices,
        budget_s=budget_s,
        say=lambda s: err.print(s, highlight=False),
    )
    data = result.calibration.model_dump(mode="json")
    data["fitted_on"]["timings_file"] = timings_path(out_path).name
    write_atomic(timings_path(out_path), timings_csv(result.timings))
    write_atomic(out_path, yaml.safe_dump(data, sort_keys=False, width=100))
    t = Table(title=f"efficiency factors collected on {found.name}")
    t.add_column("factor")
    t.add_column("value", justify="right")
    for name, value in result.calibration.factors.items():
        t.add_row(name, f"{value:.4g}")
    out.print(t)
    for key in ("decode_check", "prefill_check"):
        if "points" in (done := data["fitted_on"].get(key, {})):
            out.print(
                f"end-to-end {key.replace('_', ' ')}: median |error| "
                f"{done['median_abs_error_pct']:.1f} % over {len(done['points'])} points"
            )
    err.print(f"wrote {out_path} and {timings_path(out_path)}", highlight=False)
