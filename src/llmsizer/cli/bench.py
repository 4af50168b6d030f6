"""`llmsizer bench`: measure an OpenAI-compatible server with the simulator's metrics."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError

from llmsizer.bench import BenchSpec, run_benchmark
from llmsizer.cli.common import err, field_help, out
from llmsizer.config import format_validation_error

S = BenchSpec


def bench(
    base_url: Annotated[
        str, typer.Option(help=field_help(S, "base_url"))
    ] = "http://127.0.0.1:8000",
    model: Annotated[str | None, typer.Option(help=field_help(S, "model"))] = None,
    endpoint: Annotated[str | None, typer.Option(help=field_help(S, "endpoint"))] = None,
    isl: Annotated[int | None, typer.Option(help=field_help(S, "isl"))] = None,
    osl: Annotated[int | None, typer.Option(help=field_help(S, "osl"))] = None,
    num_prompts: Annotated[int | None, typer.Option(help=field_help(S, "num_prompts"))] = None,
    num_warmups: Annotated[int | None, typer.Option(help=field_help(S, "num_warmups"))] = None,
    concurrency: Annotated[str | None, typer.Option(help=field_help(S, "concurrency"))] = None,
    request_rate: Annotated[str | None, typer.Option(help=field_help(S, "request_rate"))] = None,
    burstiness: Annotated[float | None, typer.Option(help=field_help(S, "burstiness"))] = None,
    trace: Annotated[Path | None, typer.Option(help=field_help(S, "trace"))] = None,
    time_scale: Annotated[float | None, typer.Option(help=field_help(S, "time_scale"))] = None,
    system_prompt_tokens: Annotated[
        int | None, typer.Option(help=field_help(S, "system_prompt_tokens"))
    ] = None,
    seed: Annotated[int | None, typer.Option(help=field_help(S, "seed"))] = None,
    tokenizer: Annotated[Path | None, typer.Option(help=field_help(S, "tokenizer"))] = None,
    prompt_tokens_from: Annotated[
        str | None, typer.Option(help=field_help(S, "prompt_tokens_from"))
    ] = None,
    continuous_usage_stats: Annotated[
        bool | None, typer.Option(help=field_help(S, "continuous_usage_stats"))
    ] = None,
    timeout_s: Annotated[float | None, typer.Option(help=field_help(S, "timeout_s"))] = None,
    request_timeout_s: Annotated[
        float | None, typer.Option(help=field_help(S, "request_timeout_s"))
    ] = None,
    api_key: Annotated[str | None, typer.Option(help=field_help(S, "api_key"))] = None,
    server_metrics: Annotated[
        bool | None, typer.Option(help=field_help(S, "server_metrics"))
    ] = None,
    realtime: Annotated[bool | None, typer.Option(help=field_help(S, "realtime"))] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help=field_help(S, "result_path"))
    ] = None,
    records: Annotated[Path | None, typer.Option(help=field_help(S, "records_path"))] = None,
) -> None:
    """Benchmark an OpenAI-compatible endpoint (vLLM, SGLang, TensorRT-LLM, NIM, ...).

    Sweeps concurrency (closed loop) or request rate (Poisson, gamma with --burstiness) or
    replays a trace; every request is a record streamed to --records as it completes, so an
    interrupted run keeps what it measured. Metrics are the simulator's (vLLM's) definitions.
    """
    given: dict[str, Any] = {
        "base_url": base_url, "model": model, "endpoint": endpoint, "isl": isl, "osl": osl,
        "num_prompts": num_prompts, "num_warmups": num_warmups, "concurrency": concurrency,
        "request_rate": request_rate, "burstiness": burstiness, "trace": trace,
        "time_scale": time_scale, "system_prompt_tokens": system_prompt_tokens, "seed": seed,
        "tokenizer": tokenizer, "prompt_tokens_from": prompt_tokens_from,
        "continuous_usage_stats": continuous_usage_stats,
        "timeout_s": timeout_s, "request_timeout_s": request_timeout_s, "api_key": api_key,
        "server_metrics": server_metrics, "realtime": realtime, "result_path": json_out,
        "records_path": records,
    }  # fmt: skip
    try:
        spec = BenchSpec.model_validate({k: v for k, v in given.items() if v is not None})
    except ValidationError as e:
        raise ValueError(format_validation_error(e, "bench flags")) from e
    live = sys.stdout.isatty() and not os.environ.get("CI")
    results = run_benchmark(spec, console=out, live_progress=live)
    failed = sum(sum(r.failures.values()) for r in results)
    if any(r.aborted or r.interrupted for r in results) or failed:
        err.print(f"{failed} requests failed; see the failure summary above", highlight=False)
        raise typer.Exit(1)
