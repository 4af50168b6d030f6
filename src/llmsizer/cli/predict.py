"""`llmsizer predict`: latency and throughput of one configuration, or of a CSV of cases."""

from __future__ import annotations

import csv
import io
import os
import time
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.table import Table

from llmsizer.cli.common import (
    OVERWRITE_HELP,
    RayAddress,
    RayFlag,
    dashed,
    err,
    field_help,
    out,
    progress_bar,
    sweep_for,
    write_json,
)
from llmsizer.errors import format_validation_error, name_flags, read_csv_rows
from llmsizer.instance import Prediction, PredictSpec
from llmsizer.instance import predict as run_predict
from llmsizer.output import refuse_existing, write_atomic
from llmsizer.perf import Deployment, EfficiencyFactors
from llmsizer.perf.calibrated import load_calibration, read_calibration
from llmsizer.perf.levers import fallback_note

SHOWN = (
    ("mean_ttft_ms", "mean TTFT (ms)"),
    ("p99_ttft_ms", "P99 TTFT (ms)"),
    ("mean_tpot_ms", "mean TPOT (ms)"),
    ("p99_tpot_ms", "P99 TPOT (ms)"),
    ("mean_e2el_ms", "mean E2E latency (ms)"),
    ("request_throughput", "request throughput (req/s)"),
    ("output_throughput", "output throughput (tok/s)"),
    ("output_throughput_per_gpu", "output throughput per GPU (tok/s)"),
    ("request_throughput_per_gpu", "requests per GPU (req/s)"),
)


def _table(p: Prediction) -> Table:
    s = p.spec
    load = (
        f"concurrency {s.concurrency}"
        if s.concurrency
        else ("offline" if s.offline else f"{s.request_rate:g} req/s Poisson")
    )
    t = Table(
        title=f"{s.model} on {s.total_gpus}x {s.gpu} (TP{s.tensor_parallel_size} "
        f"PP{s.pipeline_parallel_size}, {s.precision}, {s.preset}): ISL {s.isl}, OSL {s.osl}, "
        f"{load}"
    )
    t.add_column("metric")
    t.add_column("value", justify="right")
    for key, label in SHOWN:
        if key in p.summary:
            t.add_row(label, f"{p.summary[key]:,.2f}")
    t.add_row("MBU (memory bandwidth utilisation)", f"{p.mbu:.1%}")
    t.add_row("MFU (FLOPs utilisation)", f"{p.mfu:.1%}")
    t.add_row("KV-cache capacity (tokens per instance)", f"{p.max_num_kv_tokens:,}")
    t.add_row("weights per GPU (GB)", f"{p.weight_bytes_per_gpu / 1e9:,.1f}")
    return t


def _predict_fitted(
    path: Path,
    isl: int | None,
    osl: int | None,
    concurrency: int | None,
    request_rate: float | None,
    json_out: Path | None,
    num_requests: int | None,
    seed: int,
) -> None:
    """`predict` with a step cost fitted to a server (`llmsizer calibrate`): no GPU model."""
    from llmsizer.calibrate.step_calibration import load_step_calibration, predict_calibrated
    from llmsizer.report import print_summary

    if isl is None or osl is None:
        raise ValueError("--isl and --osl are needed to predict with a fitted step cost")
    try:
        summary = predict_calibrated(
            load_step_calibration(path),
            isl=isl,
            osl=osl,
            concurrency=concurrency,
            request_rate=request_rate,
            num_requests=num_requests or 200,
            seed=seed,
        )
    except ValidationError as e:  # the workload's checks on the flags
        raise ValueError(format_validation_error(e, "flags", flags=FLAGS)) from e
    except ValueError as e:
        raise ValueError(name_flags(str(e), FLAGS)) from e
    print_summary(out, summary, title=f"predicted with the fitted step cost in {path}")
    if json_out:
        write_json(json_out, summary)


def _is_fitted_step_cost(path: Path) -> bool:
    # imported here: `calibrate` is needed only with a calibration file (startup)
    from llmsizer.calibrate.step_calibration import KIND, calibration_kind

    return calibration_kind(path) == KIND


def _blank(value: str | None) -> Any:
    return None if value is None or value.strip() == "" else value.strip()


CASE_COLUMNS = PredictSpec.input_keys()
FLAGS = {  # PredictSpec's input keys -> predict's flags, for errors
    **dashed("model", "gpu", "tp", "pp", "ep", "precision", "isl", "osl", "concurrency"),
    **dashed("request_rate", "offline", "engine", "sparsity", "num_requests", "seed"),
    **dashed("gpu_memory_utilization", kv_precision="--kv-cache-dtype"),
    **dashed(speculative="--num-speculative-tokens"),
}


def _spec_of(row: dict[str, str]) -> PredictSpec:
    fields = {k: _blank(v) for k, v in row.items() if k in CASE_COLUMNS and _blank(v) is not None}
    try:
        return PredictSpec.model_validate(fields)
    except ValidationError as e:
        raise ValueError(format_validation_error(e, "row").replace("\n", " ")) from e


def run_cases(
    cases: Path,
    out_path: Path,
    efficiency: EfficiencyFactors | None,
    ray: bool = False,
    ray_address: str | None = None,
) -> tuple[int, int]:
    """Predict every row; a bad row gets its message in `error`, the others still run.
    Unknown columns are copied through. Returns (rows, failed rows). Rows run in local
    processes, or on Ray (`ray`, `ray_address`: `llmsizer.sweep`), with the same results."""
    rows = read_csv_rows(cases, "cases file")
    workers = min(os.cpu_count() or 1, max(1, len(rows) // 4))  # forked: cheap
    with progress_bar("predicting") as progress, sweep_for(workers, ray, ray_address) as sweep:
        results = sweep.map(partial(_predict_row, efficiency=efficiency), rows, progress)
    failed = sum(1 for r in results if r["error"])
    columns: list[str] = []
    for r in results:
        columns += [k for k in r if k not in columns]
    table = io.StringIO()
    w = csv.DictWriter(table, fieldnames=columns)
    w.writeheader()
    w.writerows(results)
    write_atomic(out_path, table.getvalue())
    return len(rows), failed


def _predict_row(row: dict[str, str], efficiency: EfficiencyFactors | None) -> dict[str, Any]:
    """One case: the row's own columns, then the prediction, or the error that stopped it."""
    try:
        return {**row, **_prediction_columns(run_predict(_spec_of(row), efficiency))}
    except (ValueError, OSError) as e:  # OSError: a config.json path that is not there
        return {**row, "error": str(e)}


def _prediction_columns(p: Prediction) -> dict[str, Any]:
    row = p.row()
    for k in CASE_COLUMNS:
        row.pop(k, None)
    return {**row, "error": ""}


def predict(
    model: Annotated[str | None, typer.Option(help=field_help(PredictSpec, "model"))] = None,
    gpu: Annotated[str | None, typer.Option(help=field_help(PredictSpec, "gpu"))] = None,
    tp: Annotated[
        int,
        typer.Option(
            "--tp", "--tensor-parallel-size", help=field_help(PredictSpec, "tensor_parallel_size")
        ),
    ] = 1,
    pp: Annotated[
        int,
        typer.Option(
            "--pp",
            "--pipeline-parallel-size",
            help=field_help(PredictSpec, "pipeline_parallel_size"),
        ),
    ] = 1,
    ep: Annotated[
        int,
        typer.Option(
            "--ep", "--expert-parallel-size", help=field_help(PredictSpec, "expert_parallel_size")
        ),
    ] = 1,
    enable_expert_parallel: Annotated[
        bool, typer.Option(help="vLLM's flag: expert parallelism over all TP ranks (EP = TP).")
    ] = False,
    precision: Annotated[str, typer.Option(help=field_help(PredictSpec, "precision"))] = "bf16",
    kv_precision: Annotated[
        str | None,
        typer.Option(
            "--kv-precision", "--kv-cache-dtype", help=field_help(PredictSpec, "kv_cache_dtype")
        ),
    ] = None,
    isl: Annotated[int | None, typer.Option(help=field_help(PredictSpec, "isl"))] = None,
    osl: Annotated[int | None, typer.Option(help=field_help(PredictSpec, "osl"))] = None,
    concurrency: Annotated[
        int | None, typer.Option(help=field_help(PredictSpec, "concurrency"))
    ] = None,
    request_rate: Annotated[
        float | None, typer.Option(help=field_help(PredictSpec, "request_rate"))
    ] = None,
    offline: Annotated[bool, typer.Option(help=field_help(PredictSpec, "offline"))] = False,
    engine: Annotated[str, typer.Option(help="Engine preset: vllm, trtllm or sglang.")] = "vllm",
    sparsity: Annotated[bool, typer.Option(help=field_help(PredictSpec, "sparsity"))] = False,
    num_speculative_tokens: Annotated[
        int | None,
        typer.Option(help="Speculative decoding with an EAGLE/MTP-style head: draft tokens k."),
    ] = None,
    gpu_memory_utilization: Annotated[
        float, typer.Option(help=field_help(PredictSpec, "gpu_memory_utilization"))
    ] = 0.9,
    num_requests: Annotated[
        int | None, typer.Option(help=field_help(PredictSpec, "num_requests"))
    ] = None,
    seed: Annotated[
        int,
        typer.Option(
            help="Seed of the Poisson arrivals; a `llmsizer bench` run's --seed replays the "
            "arrivals it sent (with its --num-prompts as --num-requests)."
        ),
    ] = 0,
    calibration: Annotated[
        Path | None, typer.Option(help="Calibration file with fitted efficiency factors.")
    ] = None,
    cases: Annotated[
        Path | None, typer.Option(help="CSV of cases, one per row (columns as the flags).")
    ] = None,
    out_csv: Annotated[Path | None, typer.Option("--out", help="With --cases: output CSV.")] = None,
    overwrite: Annotated[bool, typer.Option(help=OVERWRITE_HELP)] = False,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write the prediction as JSON.")
    ] = None,
    ray: RayFlag = False,
    ray_address: RayAddress = None,
) -> None:
    """Predict TTFT, TPOT, E2E latency, throughput, MBU and MFU for one configuration.

    The engine is simulated with the GPU performance model: a closed loop at --concurrency,
    Poisson arrivals at --request-rate, or --offline (all requests at once).
    """
    refuse_existing((out_csv, json_out), overwrite=overwrite)
    if calibration is not None and _is_fitted_step_cost(calibration):
        _predict_fitted(
            calibration, isl, osl, concurrency, request_rate, json_out, num_requests, seed
        )
        return
    efficiency = None if calibration is None else load_calibration(calibration)
    if gpu is None and calibration is not None and read_calibration(calibration).device:
        gpu = str(calibration)  # a collected file prices the device it was measured on
    if cases is None and (ray or ray_address is not None):
        raise ValueError("--ray and --ray-address run the rows of --cases; give --cases FILE")
    if cases is not None:
        if out_csv is None:
            raise ValueError("--cases needs --out PATH for the predictions CSV")
        t0 = time.perf_counter()
        n, failed = run_cases(cases, out_csv, efficiency, ray, ray_address)
        err.print(
            f"wrote {out_csv}: {n} rows, {failed} with errors, {time.perf_counter() - t0:.1f} s",
            highlight=False,
        )
        if failed == n:
            raise ValueError(f"every case of {cases} failed: see the error column of {out_csv}")
        return
    given = {
        "model": model,
        "gpu": gpu,
        "tp": tp,
        "pp": pp,
        "ep": tp if enable_expert_parallel else ep,
        "precision": precision,
        "kv_precision": kv_precision,
        "isl": isl,
        "osl": osl,
        "concurrency": concurrency,
        "request_rate": request_rate,
        "offline": offline,
        "engine": engine,
        "sparsity": sparsity,
        "speculative": None
        if num_speculative_tokens is None
        else {"num_speculative_tokens": num_speculative_tokens},
        "gpu_memory_utilization": gpu_memory_utilization,
        "num_requests": num_requests,
        "seed": seed,
    }
    try:
        spec = PredictSpec.model_validate({k: v for k, v in given.items() if v is not None})
    except ValidationError as e:
        raise ValueError(format_validation_error(e, "flags", flags=FLAGS)) from e
    note = fallback_note(Deployment.from_names(spec.model, spec.gpu, spec.precision))
    if note is not None:
        err.print(f"warning: {note}", highlight=False)
    p = run_predict(spec, efficiency)
    out.print(_table(p))
    if json_out:
        write_json(json_out, p.row())
