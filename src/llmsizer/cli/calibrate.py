"""`llmsizer calibrate` (fit a step cost to measured runs) and `llmsizer compare`."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.table import Table

from llmsizer.calibrate import compare as cmp
from llmsizer.calibrate.readers import ImportedRun, import_results
from llmsizer.calibrate.step_calibration import (
    calibration_from_fit,
    fitted_point,
    save_step_calibration,
)
from llmsizer.calibrate.step_fit import MeasuredPoint, fit_step_cost, point_from_records
from llmsizer.cli.common import OVERWRITE_HELP, dashed, err, field_help, out
from llmsizer.config import format_validation_error
from llmsizer.errors import parse_json, read_text
from llmsizer.output import refuse_existing, write_atomic
from llmsizer.sim import EngineConfig

E = EngineConfig
METRIC_NAMES = {
    **dict(cmp.COMPARED),
    "server_mean_ttft_ms": "server's mean TTFT (ms)",
    "server_mean_tpot_ms": "server's mean TPOT (ms)",
}


def _label(run: ImportedRun) -> str:
    if run.request_rate is None and run.max_concurrency is not None:
        return f"concurrency {run.max_concurrency}"
    if run.request_rate is not None:
        return f"rate {run.request_rate:g} req/s"
    return run.path.stem


def _points(paths: list[Path]) -> list[tuple[MeasuredPoint, str]]:
    """Every run of every file as a point to fit, with the file it came from."""
    points = []
    for path in paths:
        for run in import_results(path):
            closed = run.request_rate is None and run.max_concurrency is not None
            label = _label(run) if len(paths) == 1 else f"{path.name}: {_label(run)}"
            concurrency = run.max_concurrency if closed else None
            point = point_from_records(run.records, concurrency, label, run.raw_params)
            points.append((point, str(path)))
    return points


def _table(rows: list[cmp.Comparison], title: str) -> Table:
    t = Table(title=title)
    for name in ("point", "metric", "measured", "predicted", "error"):
        t.add_column(name, justify="left" if name in ("point", "metric") else "right")
    for r in rows:
        t.add_row(r.label, r.name, f"{r.measured:,.2f}", f"{r.predicted:,.2f}", f"{r.error:+.1%}")
    return t


def calibrate(
    results: Annotated[
        list[Path],
        typer.Argument(
            help="Measured runs: llmsizer bench --json (or its records JSONL), vLLM bench "
            "--save-result --save-detailed JSON, AIPerf profile_export.jsonl, guidellm JSON."
        ),
    ],
    out_path: Annotated[
        Path, typer.Option("--out", help="Calibration file to write (YAML).")
    ] = Path("calibration.yaml"),
    overwrite: Annotated[bool, typer.Option(help=OVERWRITE_HELP)] = False,
    engine: Annotated[str, typer.Option(help=field_help(E, "engine"))] = "vllm",
    max_num_seqs: Annotated[int | None, typer.Option(help=field_help(E, "max_num_seqs"))] = None,
    max_num_batched_tokens: Annotated[
        int | None, typer.Option(help=field_help(E, "max_num_batched_tokens"))
    ] = None,
    chunked_prefill: Annotated[
        bool | None,
        typer.Option(
            "--chunked-prefill/--no-chunked-prefill", help=field_help(E, "enable_chunked_prefill")
        ),
    ] = None,
    block_size: Annotated[int | None, typer.Option(help=field_help(E, "block_size"))] = None,
    num_gpu_blocks: Annotated[
        int | None, typer.Option(help=field_help(E, "num_gpu_blocks"))
    ] = None,
    overlap_scheduler: Annotated[
        bool | None,
        typer.Option(
            "--overlap-scheduler/--no-overlap-scheduler",
            help=field_help(E, "overlap_scheduler") + " Unset: the preset's (vLLM on a CPU: off).",
        ),
    ] = None,
    first_token_delay: Annotated[
        bool,
        typer.Option(
            "--first-token-delay/--no-first-token-delay",
            help="Fit the API server's first-chunk delay (time the client sees and the engine "
            "never spends); off: the server streams tokens as it makes them.",
        ),
    ] = True,
    context_term: Annotated[
        bool,
        typer.Option(
            "--context-term/--no-context-term",
            help="Fit a cost per KV token read; off when the runs' contexts barely vary.",
        ),
    ] = True,
    description: Annotated[
        str, typer.Option(help="The server and conditions, in words, kept in the file.")
    ] = "",
) -> None:
    """Fit a step cost to measured runs of a server (a concurrency sweep at fixed lengths is
    the recipe) by simulating each run with the server's batching settings, and write a
    calibration file that `simulate` and `predict` accept. Prints the fit's residuals.
    """
    refuse_existing((out_path,), overwrite=overwrite)
    settings: dict[str, Any] = {
        "engine": engine, "max_num_seqs": max_num_seqs,
        "max_num_batched_tokens": max_num_batched_tokens,
        "enable_chunked_prefill": chunked_prefill, "block_size": block_size,
        "num_gpu_blocks": num_gpu_blocks, "overlap_scheduler": overlap_scheduler,
    }  # fmt: skip
    try:
        config = EngineConfig.model_validate({k: v for k, v in settings.items() if v is not None})
    except ValidationError as e:
        flags = dashed(*settings, enable_chunked_prefill="--chunked-prefill")
        raise ValueError(format_validation_error(e, "flags", flags=flags)) from e
    points = _points(results)
    err.print(f"fitting on {len(points)} runs (simulating each, about a minute)...")
    fit = fit_step_cost(
        [p for p, _ in points], config, fit_first_token_delay=first_token_delay,
        fit_context=context_term,
    )  # fmt: skip
    cal = calibration_from_fit(
        fit, config, tuple(fitted_point(p, src) for p, src in points), description
    )
    c = cal.step_cost
    out.print(
        f"step = {c.base_ms:.3f} ms + {c.per_prefill_token_ms * 1e3:.2f} us x prompt tokens "
        f"+ {c.per_decode_seq_ms:.3f} ms x decoding seqs "
        f"+ {c.per_context_token_ms * 1e3:.4f} us x context tokens; "
        f"first-token delay {cal.first_token_delay_ms:.1f} ms",
        highlight=False,
    )
    rows = [
        cmp.Comparison(r.label, r.metric, METRIC_NAMES[r.metric], r.measured, r.predicted)
        for r in fit.residuals
    ]
    out.print(_table(rows, f"fit residuals (rms {fit.rms_error:.1%}, max {fit.max_abs_error:.1%})"))
    save_step_calibration(cal, out_path)
    err.print(f"wrote {out_path}", highlight=False)


def _summaries(path: Path) -> list[dict[str, Any]]:
    """The summaries in a JSON file: a list of points (bench) or one object (simulate)."""
    data = parse_json(read_text(path, "results file"), path, "results file")
    points = data if isinstance(data, list) else [data]
    if not points or not all(isinstance(p, dict) for p in points):
        raise ValueError(f"{path}: expected a JSON object or a list of objects")
    return points


def compare(
    measured: Annotated[Path, typer.Argument(help="Measured results: llmsizer bench --json.")],
    predicted: Annotated[
        list[Path],
        typer.Argument(
            help="Predictions: simulate --json or predict --json files, one per measured "
            "point, in the same order (or one file listing them all)."
        ),
    ],
    markdown: Annotated[
        Path | None, typer.Option(help="Also write the table as markdown to this file.")
    ] = None,
    overwrite: Annotated[bool, typer.Option(help=OVERWRITE_HELP)] = False,
    tolerance_pct: Annotated[
        float | None,
        typer.Option(
            "--tolerance",
            help="Exit with status 1 unless mean TTFT, mean TPOT and request throughput are "
            "all within this many percent.",
        ),
    ] = None,
) -> None:
    """Measured and predicted metrics side by side, per point, with the relative error.

    Points with the same load (repeats of a run, say on a machine whose speed drifts) are
    also shown as one: the mean over the runs, with the spread between them as its
    uncertainty; --tolerance then judges that mean.
    """
    if tolerance_pct is not None and not (math.isfinite(tolerance_pct) and tolerance_pct >= 0):
        raise ValueError(f"--tolerance must be a percentage >= 0, got {tolerance_pct}")
    refuse_existing((markdown,), overwrite=overwrite)
    meas = _summaries(measured)
    pred = [p for path in predicted for p in _summaries(path)]
    if len(meas) != len(pred):
        raise ValueError(
            f"{measured} has {len(meas)} points but the predictions hold {len(pred)}; "
            "give one prediction per measured point, in order"
        )
    rows = cmp.compare_points(meas, pred, str(measured))
    out.print(_table(rows, f"measured ({measured.name}) vs predicted"))
    pooled = cmp.pool_repeats(rows)
    repeated = len(pooled) < len(rows)
    if repeated:
        out.print(_table(pooled, "points measured more than once: mean over the runs"))
    tolerance = None if tolerance_pct is None else tolerance_pct / 100
    if markdown is not None:
        text = cmp.markdown_table(rows, None if repeated else tolerance)
        if repeated:
            text += "\nMean over the runs of each point:\n\n"
            text += cmp.markdown_table(pooled, tolerance)
        write_atomic(markdown, text)
        err.print(f"wrote {markdown}", highlight=False)
    if tolerance is not None and not cmp.within(pooled, tolerance, cmp.BAR_METRICS):
        err.print(f"some of {', '.join(cmp.BAR_METRICS)} are off by more than {tolerance_pct:g} %")
        raise typer.Exit(1)
